//! A suite's summary for people: the terminal table, Markdown, and one self-contained HTML
//! page that links each step's own report.

use std::fmt::Write as _;

use comfy_table::{presets, Table};
use stormark_stats::{RunStatus, Severity, StepFigures, StepOutcome, SuiteSummary};

use crate::html_parts::{esc, status_name, STYLE};
use crate::{format_bw, format_iops, format_latency};

/// The cells of a step's row: step, result, ops/s, bandwidth, p50, p99, note.
fn cells(s: &StepOutcome) -> [String; 7] {
    let f = s.figures.as_ref();
    let opt = |v: Option<u64>| v.map_or_else(|| "-".into(), format_latency);
    let note = match (f, &s.why) {
        (_, Some(why)) => why.clone(),
        (Some(f), None) => note(f),
        (None, None) => String::new(),
    };
    [
        s.name.clone(),
        s.result.name().to_string(),
        f.filter(|f| f.ops_per_s > 0.0)
            .map_or_else(|| "-".into(), |f| format_iops(f.ops_per_s)),
        f.filter(|f| f.bw_bytes_per_s > 0.0)
            .map_or_else(|| "-".into(), |f| format_bw(f.bw_bytes_per_s)),
        opt(f.and_then(|f| f.p50_ns)),
        opt(f.and_then(|f| f.p99_ns)),
        note,
    ]
}

/// What a row says beside its figures: the search's best load, the commit latency, the
/// repetitions, the weakest pair.
fn note(f: &StepFigures) -> String {
    let mut parts = Vec::new();
    if !f.suspect.is_empty() {
        parts.push(format!("suspect: {}", f.suspect.join(", ")));
    }
    if let Some(b) = &f.best {
        parts.push(format!("best: {b}"));
    }
    if let Some(p99) = f.p99_by_op_ns.get("sync") {
        parts.push(format!("sync p99 {}", format_latency(*p99)));
    }
    if f.phases > 1 {
        parts.push(format!("mean of {}", f.phases));
    }
    if let Some(p) = &f.weakest_pair {
        parts.push(format!(
            "median pair {:.2} Gbit/s; weakest {} -> {} {:.2} Gbit/s",
            p.median_bits_per_s / 1e9,
            p.from,
            p.to,
            p.bits_per_s / 1e9
        ));
    }
    parts.join("; ")
}

/// A step's line as it ends (`n` of `total`, after `seconds`): its result, figures and note,
/// as its row of the summary will say them.
pub fn suite_step_line(s: &StepOutcome, n: usize, total: usize, seconds: f64) -> String {
    let [name, result, ops, bw, p50, p99, note] = cells(s);
    let mut line = format!("== [{n}/{total}] {name}: {result} in {seconds:.0} s");
    if s.figures.is_some() {
        let _ = write!(line, ": {ops} ops/s, {bw}, p50 {p50}, p99 {p99}");
    }
    if !note.is_empty() {
        let _ = write!(line, "; {note}");
    }
    line
}

const HEADER: [&str; 7] = ["step", "result", "ops/s", "bandwidth", "p50", "p99", "note"];

fn status(s: &SuiteSummary) -> &'static str {
    status_name(s.status)
}

fn mark(sev: Severity) -> &'static str {
    match sev {
        Severity::Info => "-",
        Severity::Warning => "!",
        Severity::Critical => "!!",
    }
}

/// The summary as the terminal shows it.
pub fn suite_terminal(s: &SuiteSummary) -> String {
    let mut out = format!(
        "\nsuite {}: {}  ({:.0} s)\n",
        s.suite,
        status(s),
        s.duration_ns as f64 / 1e9
    );
    let mut table = Table::new();
    table.load_preset(presets::UTF8_HORIZONTAL_ONLY);
    // One line per step: a suite has many.
    table.remove_style(comfy_table::TableComponent::HorizontalLines);
    table.remove_style(comfy_table::TableComponent::MiddleIntersections);
    table.remove_style(comfy_table::TableComponent::LeftBorderIntersections);
    table.remove_style(comfy_table::TableComponent::RightBorderIntersections);
    table.set_header(HEADER);
    for step in &s.steps {
        table.add_row(cells(step));
    }
    let _ = writeln!(out, "{table}");
    for v in &s.verdicts {
        let _ = writeln!(out, "{} {}", mark(v.severity), v.message);
    }
    for n in &s.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// The summary as Markdown, for a pull request or a wiki page.
pub fn suite_markdown(s: &SuiteSummary) -> String {
    // As a results document's Markdown: every text shown, never run or formatted (a target
    // named with backticks once broke out of the command's code span, issue 54).
    let md = crate::markdown::cell;
    let mut out = format!(
        "## stormark suite {}: {}\n\n{}\n\n| {} |\n|{}|\n",
        crate::markdown::code(&s.suite),
        status(s),
        crate::markdown::code(&crate::shell_command(&s.command)),
        HEADER.join(" | "),
        "---|".repeat(HEADER.len())
    );
    for step in &s.steps {
        let c = cells(step);
        let _ = writeln!(
            out,
            "| {} |",
            c.iter().map(|c| md(c)).collect::<Vec<_>>().join(" | ")
        );
    }
    if !s.verdicts.is_empty() {
        out.push_str("\n### Verdicts\n\n");
        for v in &s.verdicts {
            let _ = writeln!(out, "- **{}**: {}", v.code, md(&v.message));
        }
    }
    for n in &s.notes {
        let _ = writeln!(out, "\n> {}", md(n));
    }
    out
}

/// The summary as one self-contained HTML page; each step links its own report.
pub fn suite_html(s: &SuiteSummary) -> String {
    let mut o = String::with_capacity(32 << 10);
    let state = match s.status {
        RunStatus::Ok => "ok",
        RunStatus::Failed => "failed",
        RunStatus::Interrupted => "interrupted",
        RunStatus::Running => "running",
    };
    let _ = write!(
        o,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>stormark suite {name}</title><style>{STYLE}\
         td.pass {{ color: #1b6e2a; font-weight: 600; }} td.failed, td.refused {{ color: #a4161a; font-weight: 600; }}\
         td.missed {{ color: #8a5a00; font-weight: 600; }}</style></head><body><main>\n\
         <header><h1>stormark suite {name}</h1><span class=\"status {state}\">{st}</span>\
         <p class=\"meta\">started {started}, {secs:.0} s, stormark {version}</p>\
         <pre>{cmd}</pre></header>\n",
        name = esc(&s.suite),
        st = status(s),
        started = esc(&s.started_at),
        secs = s.duration_ns as f64 / 1e9,
        version = esc(&s.version),
        cmd = esc(&crate::shell_command(&s.command)),
    );
    if !s.verdicts.is_empty() {
        o.push_str("<section id=\"verdicts\"><h2>Verdicts</h2>");
        for v in &s.verdicts {
            let class = match v.severity {
                Severity::Info => "info",
                Severity::Warning => "warning",
                Severity::Critical => "critical",
            };
            let _ = write!(
                o,
                "<div class=\"finding {class}\"><span class=\"code\">{}</span> {}</div>",
                esc(&v.code),
                esc(&v.message)
            );
        }
        o.push_str("</section>\n");
    }
    o.push_str("<section id=\"steps\"><h2>Steps</h2><table><thead><tr>");
    for (i, h) in HEADER.iter().enumerate() {
        let class = if (2..6).contains(&i) {
            " class=\"n\""
        } else {
            ""
        };
        let _ = write!(o, "<th{class}>{h}</th>");
    }
    o.push_str("</tr></thead><tbody>");
    for step in &s.steps {
        let c = cells(step);
        let name = match &step.report {
            Some(r) => format!("<a href=\"{}\">{}</a>", esc(r), esc(&c[0])),
            None => esc(&c[0]),
        };
        let _ = write!(
            o,
            "<tr><td>{name}</td><td class=\"{}\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            step.result.name().replace(' ', "-"),
            esc(&c[1]),
            esc(&c[2]),
            esc(&c[3]),
            esc(&c[4]),
            esc(&c[5]),
            esc(&c[6])
        );
    }
    o.push_str(
        "</tbody></table></section>\n<section id=\"commands\"><h2>Commands</h2>\
        <p class=\"meta\">each step is a stormark command of its own; run one again as written</p>",
    );
    for step in s.steps.iter().filter(|s| !s.command.is_empty()) {
        let _ = write!(
            o,
            "<h3>{}</h3><pre>{}</pre>",
            esc(&step.name),
            esc(&crate::shell_command(&step.command))
        );
    }
    o.push_str("</section>\n");
    for n in &s.notes {
        let _ = write!(o, "<p class=\"meta\">{}</p>", esc(n));
    }
    o.push_str("<footer>made by stormark; the figures are those of each step's results document</footer></main></body></html>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 54: a target named to break out of the command's code span, and a note with
    /// HTML, stay text in the suite's Markdown.
    #[test]
    fn a_suites_markdown_shows_its_names_never_runs_them() {
        let s = SuiteSummary {
            schema: String::new(),
            suite: "disks".into(),
            version: String::new(),
            command: vec![
                "stormark".into(),
                "suite".into(),
                "disks".into(),
                "/t``<img src=x onerror=alert(9)>``".into(),
            ],
            started_at: String::new(),
            duration_ns: 0,
            status: RunStatus::Ok,
            steps: Vec::new(),
            verdicts: Vec::new(),
            notes: vec!["<script>alert(1)</script>".into()],
        };
        let md = suite_markdown(&s);
        // The command as a shell reads it back (the target quoted), in a fence longer than
        // its backticks.
        assert!(md.contains("``` stormark suite disks '/t``<img"), "{md}");
        assert!(!md.contains("<script>"), "{md}");
    }
}
