//! Markdown for a pull-request comment or a wiki page: the command, the summary table (per
//! host too when there are several), a network mesh's matrices, the findings with their advice
//! and the notes. GitHub-flavoured tables; every figure as the terminal shows it.

use std::fmt::Write as _;

use stormark_stats::{MeshPair, Results, RunStatus, Severity, Summary};

use crate::{format_bw, format_iops, format_latency, Render};

/// The Markdown renderer.
#[derive(Debug, Clone, Copy, Default)]
pub struct Markdown;

/// Text of a results document in Markdown, a table cell or a line of prose: on one line,
/// control characters escaped, and everything a Markdown viewer would act on escaped (HTML
/// as entities, emphasis, links, `|`), so that a host name or a message from a document
/// (which anyone may have written) is shown, never run or formatted.
pub(crate) fn cell(text: &str) -> String {
    let one_line = stormark_spec::printable(&text.replace(['\n', '\r'], " "), 4096);
    let mut out = String::with_capacity(one_line.len());
    for c in one_line.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            // `_` is left: inside a word (O_DIRECT) it is no emphasis in CommonMark.
            '\\' | '`' | '*' | '[' | ']' | '|' | '#' | '!' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// Inline code that survives backticks inside it, on one line (a blank line would end the
/// code span and let what follows be read as HTML). CommonMark ends a code span at the first
/// run of backticks as long as the one that opened it: the fence is one longer than the
/// longest run inside (a directory named with ``` `` ``` once closed a fence of two and let
/// an `<img onerror>` after it be read as HTML), padded with a space when the text starts or
/// ends with a backtick.
pub(crate) fn code(text: &str) -> String {
    let text = stormark_spec::printable(&text.replace(['\n', '\r'], " "), 4096);
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if longest > 0 { " " } else { "" };
    format!("{fence}{pad}{text}{pad}{fence}")
}

const HEADER: &str = "| phase | host | op | IOPS | bandwidth | p50 | p99 | p99.9 | max | errors |\n|---|---|---|--:|--:|--:|--:|--:|--:|--:|\n";

fn row(out: &mut String, phase: &str, host: &str, op: &str, s: &Summary) {
    let lat = s.latency_ns.as_ref();
    let l = |f: fn(&stormark_stats::Latency) -> u64| {
        lat.map_or_else(|| "-".to_string(), |l| format_latency(f(l)))
    };
    let _ = writeln!(
        out,
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        cell(phase),
        cell(host),
        cell(op),
        format_iops(s.iops),
        format_bw(s.bw_bytes_per_s),
        l(|l| l.p50),
        l(|l| l.p99),
        l(|l| l.p999),
        l(|l| l.max),
        s.errors
    );
}

impl Render for Markdown {
    fn render(&self, r: &Results) -> String {
        let mut out = String::from("# stormark results\n\n");
        let _ = writeln!(out, "{}\n", code(&crate::shell_command(&r.command)));
        let status = match r.status {
            RunStatus::Ok => "ok",
            RunStatus::Failed => "failed",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Running => "running",
        };
        let _ = writeln!(
            out,
            "- status: **{status}**{}",
            r.failure
                .as_deref()
                .map(|f| format!(" ({})", cell(f)))
                .unwrap_or_default()
        );
        let _ = writeln!(out, "- {}", cell(&crate::terminal::verdict(r).line()));
        let _ = writeln!(
            out,
            "- started {}, {:.2} s, {} {}",
            cell(&r.started_at),
            r.duration_ns as f64 / 1e9,
            cell(&r.tool.name),
            cell(&r.tool.version)
        );
        // Several targets (issue 55): a line each.
        let targets: Vec<&stormark_stats::Target> = match r.targets.len() {
            0 | 1 => r.target.iter().collect(),
            _ => r.targets.iter().collect(),
        };
        for t in targets {
            let mut what = format!("{} ({}", code(&t.path), cell(&t.kind));
            if let Some(fs) = &t.fs_type {
                let _ = write!(what, ", {}", cell(fs));
            }
            if let Some(dev) = &t.device {
                let _ = write!(what, " on {}", cell(dev));
            }
            what.push(')');
            let _ = writeln!(out, "- target: {what}");
        }
        if !r.hosts.is_empty() {
            let names: Vec<String> = r.hosts.iter().map(|h| cell(&h.name)).collect();
            let _ = writeln!(out, "- hosts: {}", names.join(", "));
        }
        let measured: Vec<_> = r.phases.iter().filter(|p| p.measured()).collect();
        if !measured.is_empty() {
            out.push_str("\n## Summary\n\n");
            out.push_str(HEADER);
            for p in &measured {
                // Each repetition's phases labelled with it.
                let name = match p.repetition {
                    Some(k) => format!("{} (repetition {k})", p.name),
                    None => p.name.clone(),
                };
                row(&mut out, &name, "all", "all", &p.total);
                if p.by_op.len() > 1 {
                    for (op, s) in &p.by_op {
                        row(&mut out, &name, "all", op, s);
                    }
                }
                if p.by_host.len() > 1 {
                    // Many hosts: the slowest only (every host is in the results document).
                    let shown = crate::fleet::shown(p);
                    for (host, b) in p.by_host.iter().filter(|(h, _)| shown(h)) {
                        let label = crate::fleet::host_label(host, b);
                        row(&mut out, &name, &label, "all", &b.total);
                    }
                }
                // Several targets: a row each, its target where the host goes.
                for (target, b) in &p.by_target {
                    row(&mut out, &name, target, "all", &b.total);
                }
            }
            out.push_str(&crate::alltests::markdown(r));
            out.push_str(&crate::alltests::ends_markdown(r));
            let verified: Vec<_> = measured
                .iter()
                .filter_map(|p| Some((&p.name, p.verify.as_ref()?)))
                .collect();
            if !verified.is_empty() {
                out.push('\n');
            }
            for (name, v) in verified {
                let _ = writeln!(
                    out,
                    "- verify, phase {}: {}",
                    cell(name),
                    crate::verified_words(v)
                );
            }
        }
        if let Some(m) = &r.mesh {
            let names: Vec<String> = m.hosts.iter().map(|h| h.ip.clone()).collect();
            for (title, pairs) in [
                ("Each pair alone", &m.alone),
                ("All pairs at once", &m.loaded),
            ] {
                if pairs.is_empty() {
                    continue;
                }
                let _ = writeln!(
                    out,
                    "\n## {title}\n\nGbit/s (retransmits), from the row's host to the column's.\n"
                );
                let _ = writeln!(
                    out,
                    "| from \\ to | {} |",
                    names
                        .iter()
                        .map(|n| cell(n))
                        .collect::<Vec<_>>()
                        .join(" | ")
                );
                let _ = writeln!(out, "|---|{}", "--:|".repeat(names.len()));
                for (i, from) in names.iter().enumerate() {
                    let cells: Vec<String> =
                        (0..names.len()).map(|j| mesh_cell(pairs, i, j)).collect();
                    let _ = writeln!(out, "| {} | {} |", cell(from), cells.join(" | "));
                }
            }
        }
        out.push_str("\n## Findings\n\n");
        if r.findings.is_empty() {
            out.push_str("None.\n");
        }
        for f in &r.findings {
            let severity = match f.severity {
                Severity::Info => "info",
                Severity::Warning => "warning",
                Severity::Critical => "critical",
            };
            let _ = writeln!(
                out,
                "- **{severity}** {}: {}  \n  *Advice:* {}",
                code(&f.code),
                cell(&f.message),
                cell(&f.advice)
            );
        }
        if !r.notes.is_empty() {
            out.push_str("\n## Notes\n\n");
            for n in &r.notes {
                let _ = writeln!(out, "- {}", cell(n));
            }
        }
        out
    }
}

fn mesh_cell(pairs: &[MeshPair], i: usize, j: usize) -> String {
    if i == j {
        return "-".into();
    }
    match pairs
        .iter()
        .find(|p| p.from as usize == i && p.to as usize == j)
    {
        None => String::new(),
        Some(p) if p.not_run() => "not run".into(),
        Some(p) if p.failure.is_some() => "failed".into(),
        Some(p) => format!("{:.3} ({})", p.bits_per_s / 1e9, p.retransmits()),
    }
}

/// `stormark compare --markdown`: for each document against the baseline, its differences and
/// the table of figures with deltas and verdicts.
pub fn compare_markdown(base_label: &str, others: &[crate::Comparison<'_>]) -> String {
    use stormark_stats::Verdict;
    let mut out = format!(
        "# stormark comparison\n\nBaseline (A): {}\n",
        code(base_label)
    );
    for (i, c) in others.iter().enumerate() {
        let tag = (b'B' + i as u8) as char;
        let _ = writeln!(out, "\n## A against {tag}: {}\n", code(c.label));
        for d in c.differences {
            let _ = writeln!(out, "- **not alike**: {}", cell(d));
        }
        if !c.differences.is_empty() {
            out.push('\n');
        }
        let count = |v: Verdict| c.rows.iter().filter(|r| r.verdict == v).count();
        let _ = writeln!(
            out,
            "{} worse, {} better, {} within noise or inconclusive, {} the same.\n",
            count(Verdict::Worse),
            count(Verdict::Better),
            count(Verdict::Noise) + count(Verdict::Inconclusive),
            count(Verdict::Same)
        );
        out.push_str("| phase | op | figure | A | B | delta | p | verdict |\n|---|---|---|--:|--:|--:|--:|---|\n");
        for r in c.rows {
            let verdict = match r.verdict {
                Verdict::Same => "same",
                Verdict::Noise => "noise",
                Verdict::Inconclusive => "inconclusive",
                Verdict::Better => "**better**",
                Verdict::Worse => "**worse**",
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {:+.1}% | {} | {verdict} |",
                cell(&r.phase),
                cell(&r.op),
                crate::figure_label(&r.figure),
                crate::format_figure(&r.figure, r.a),
                crate::format_figure(&r.figure, r.b),
                r.delta_pct,
                r.p_value.map_or_else(|| "-".into(), |p| format!("{p:.3}"))
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_and_code_survive_what_they_hold() {
        assert_eq!(cell("a|b\nc"), "a\\|b c");
        // A host name from a crafted document: shown, never run.
        let evil = cell("h\n\n<script>alert(1)</script> [x](javascript:y) **b**");
        assert!(!evil.contains('<') && !evil.contains('\n'), "{evil}");
        assert!(
            evil.contains("&lt;script&gt;") && evil.contains("\\[x\\]"),
            "{evil}"
        );
        assert!(!code("a\n\n<b>").contains('\n'));
        assert_eq!(code("x"), "`x`");
        assert_eq!(code("a`b"), "`` a`b ``");
        // Issue 54: a run of two backticks closed a fence of two; the fence is now longer
        // than any run inside, so the span ends only at its own end.
        let breakout = code("/t``<img src=x onerror=alert(9)>``");
        assert_eq!(breakout, "``` /t``<img src=x onerror=alert(9)>`` ```");
        assert_eq!(code("````"), "````` ```` `````");
    }
}
