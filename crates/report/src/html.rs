//! One self-contained HTML file: no script, font, style sheet or image is fetched; every chart
//! is inline SVG. The command, the summary table, throughput and latency over the run, the
//! latency distribution, per-host bars, a search's or curve's throughput against latency, a
//! sweep, a network mesh as a heat map, the findings with their evidence, and each host.

use std::fmt::Write as _;

use stormark_stats::{Phase, Results, Severity, Summary};

use crate::html_parts::{by_bytes, esc, status_name, STYLE};
use crate::html_views::{distribution, mesh, over_time, per_host, search_and_curve, sweep};
use crate::{format_bw, format_iops, format_latency, Render};

/// The HTML renderer.
#[derive(Debug, Clone, Copy, Default)]
pub struct Html;

impl Render for Html {
    fn render(&self, r: &Results) -> String {
        let mut o = String::with_capacity(256 << 10);
        let bytes = by_bytes(r);
        let _ = write!(
            o,
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>stormark: {}</title><style>{STYLE}</style></head><body><main>\n",
            esc(&r
                .command
                .iter()
                .skip(1)
                .take(3)
                .cloned()
                .collect::<Vec<_>>()
                .join(" "))
        );
        header(&mut o, r);
        summary(&mut o, r, bytes);
        over_time(&mut o, r, bytes);
        distribution(&mut o, r);
        per_host(&mut o, r, bytes);
        search_and_curve(&mut o, r);
        sweep(&mut o, r, bytes);
        mesh(&mut o, r);
        findings(&mut o, r);
        hosts(&mut o, r);
        if !r.notes.is_empty() {
            o.push_str("<section id=\"notes\"><h2>Notes</h2><ul>");
            for n in &r.notes {
                let _ = write!(o, "<li>{}</li>", esc(n));
            }
            o.push_str("</ul></section>\n");
        }
        let _ = write!(
            o,
            "<footer>Written by {} {} from the results document ({}). This page fetches nothing: \
             its charts are inline SVG.</footer>\n</main></body></html>\n",
            esc(&r.tool.name),
            esc(&r.tool.version),
            esc(&r.schema)
        );
        o
    }
}

fn header(o: &mut String, r: &Results) {
    let status = status_name(r.status);
    let _ = write!(
        o,
        "<header id=\"top\"><h1>stormark results</h1><span class=\"status {status}\">{status}</span>\
         <p class=\"meta\">started {} · {:.2} s · {} {}</p>",
        esc(&r.started_at),
        r.duration_ns as f64 / 1e9,
        esc(&r.tool.name),
        esc(&r.tool.version)
    );
    if let Some(f) = &r.failure {
        let _ = write!(o, "<p><strong>Failed:</strong> {}</p>", esc(f));
    }
    let v = crate::terminal::verdict(r);
    let _ = write!(
        o,
        "<p class=\"verdict {}\">{}</p>",
        if v.suspect() { "suspect" } else { "valid" },
        esc(&v.line())
    );
    let _ = write!(
        o,
        "<pre class=\"command\">{}</pre>",
        esc(&crate::shell_command(&r.command))
    );
    // Several targets (issue 55): a line each.
    let targets: Vec<&stormark_stats::Target> = match r.targets.len() {
        0 | 1 => r.target.iter().collect(),
        _ => r.targets.iter().collect(),
    };
    for t in targets {
        let _ = write!(
            o,
            "<p class=\"meta\">target <code>{}</code> ({}{}{})</p>",
            esc(&t.path),
            esc(&t.kind),
            t.fs_type
                .as_ref()
                .map(|f| format!(", {}", esc(f)))
                .unwrap_or_default(),
            t.device
                .as_ref()
                .map(|d| format!(" on {}", esc(d)))
                .unwrap_or_default()
        );
    }
    o.push_str("</header>\n");
}

fn summary(o: &mut String, r: &Results, bytes: bool) {
    let measured: Vec<&Phase> = r.phases.iter().filter(|p| p.measured()).collect();
    if measured.is_empty() {
        return;
    }
    o.push_str(
        "<section id=\"summary\"><h2>Summary</h2><table><thead><tr><th>phase</th><th>host</th>\
         <th>op</th><th class=\"n\">IOPS</th><th class=\"n\">bandwidth</th><th class=\"n\">p50</th>\
         <th class=\"n\">p99</th><th class=\"n\">p99.9</th><th class=\"n\">max</th>\
         <th class=\"n\">errors</th></tr></thead><tbody>",
    );
    let row = |o: &mut String, phase: &str, host: &str, op: &str, s: &Summary, sub: bool| {
        let l = |f: fn(&stormark_stats::Latency) -> u64| {
            s.latency_ns
                .as_ref()
                .map_or_else(|| "-".to_string(), |l| format_latency(f(l)))
        };
        let _ = write!(
            o,
            "<tr{}><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td></tr>",
            if sub { " class=\"sub\"" } else { "" },
            esc(phase),
            esc(host),
            esc(op),
            format_iops(s.iops),
            format_bw(s.bw_bytes_per_s),
            l(|l| l.p50),
            l(|l| l.p99),
            l(|l| l.p999),
            l(|l| l.max),
            s.errors
        );
    };
    for p in &measured {
        row(o, &p.name, "all", "all", &p.total, false);
        if p.by_op.len() > 1 {
            for (op, s) in &p.by_op {
                row(o, &p.name, "all", op, s, true);
            }
        }
        if p.by_host.len() > 1 {
            // Many hosts: the slowest only (every host is in the results document).
            let shown = crate::fleet::shown(p);
            for (host, b) in p.by_host.iter().filter(|(h, _)| shown(h)) {
                let label = crate::fleet::host_label(host, b);
                row(o, &p.name, &label, "all", &b.total, true);
            }
        }
        // Several targets: a row each, its target where the host goes.
        for (target, b) in &p.by_target {
            row(o, &p.name, target, "all", &b.total, true);
        }
    }
    let _ = bytes;
    o.push_str("</tbody></table>");
    for p in measured.iter().filter(|p| p.verify.is_some()) {
        if let Some(v) = &p.verify {
            let _ = write!(
                o,
                "<p class=\"verify\">verify, phase {}: {}</p>",
                esc(&p.name),
                esc(&crate::verified_words(v))
            );
        }
    }
    o.push_str("</section>\n");
}

fn findings(o: &mut String, r: &Results) {
    o.push_str("<section id=\"findings\"><h2>Findings</h2>");
    if r.findings.is_empty() {
        o.push_str("<p>None.</p>");
    }
    for f in &r.findings {
        let sev = match f.severity {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        };
        let evidence = serde_json::to_string_pretty(&f.evidence).unwrap_or_default();
        let _ = write!(
            o,
            "<div class=\"finding {sev}\"><p><strong>{sev}</strong> <span class=\"code\">{}</span>: {}</p>\
             <p class=\"advice\">{}</p><details><summary>evidence</summary><pre>{}</pre></details></div>",
            esc(&f.code),
            esc(&f.message),
            esc(&f.advice),
            esc(&evidence)
        );
    }
    o.push_str("</section>\n");
}

fn hosts(o: &mut String, r: &Results) {
    if r.hosts.is_empty() {
        return;
    }
    o.push_str(
        "<section id=\"hosts\"><h2>Hosts</h2><table><thead><tr><th>host</th><th>address</th>\
         <th>CPU</th><th class=\"n\">CPUs</th><th class=\"n\">memory</th><th>kernel</th></tr></thead><tbody>",
    );
    for h in &r.hosts {
        let inv = &h.inventory;
        let mem = inv
            .memory_bytes
            .map(|b| format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64))
            .unwrap_or_default();
        // An inventory the document did not hold says nothing, not "0 CPUs".
        let cpus = if inv.cpus > 0 {
            inv.cpus.to_string()
        } else {
            String::new()
        };
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{cpus}</td><td class=\"n\">{mem}</td><td>{}</td></tr>",
            esc(&h.name),
            h.address.as_deref().map(esc).unwrap_or_default(),
            inv.cpu_model.as_deref().map(esc).unwrap_or_default(),
            inv.kernel.as_deref().map(esc).unwrap_or_default()
        );
    }
    o.push_str("</tbody></table></section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
