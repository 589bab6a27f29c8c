//! What the HTML pages share: escaping, the style sheet, which figure a run is told in, the
//! phase its charts describe, and a chart's frame.

use std::fmt::Write as _;

use stormark_stats::{Phase, PhaseKind, Results, RunStatus, Summary};

use crate::{format_bw, format_iops};

/// Text for HTML: `&`, `<`, `>`, `"` and `'` escaped.
pub(crate) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

pub(crate) const STYLE: &str = r#"
:root { --ink: #1d2329; --muted: #5f6b76; --line: #e3e7eb; --accent: #1f77b4; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #f6f7f9;
  font: 15px/1.5 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1000px; margin: 0 auto; padding: 28px 24px 48px; background: #fff; min-height: 100vh; }
h1 { font-size: 26px; margin: 0 8px 4px 0; display: inline-block; }
h2 { font-size: 19px; margin: 34px 0 10px; padding-bottom: 4px; border-bottom: 2px solid var(--line); }
h3 { font-size: 15px; margin: 18px 0 6px; }
.meta { color: var(--muted); margin: 2px 0 10px; }
.status { display: inline-block; padding: 2px 10px; border-radius: 12px; font-weight: 600;
  font-size: 13px; vertical-align: 5px; }
.status.ok { background: #e3f4e5; color: #1b6e2a; }
.status.failed { background: #fde4e2; color: #a4161a; }
.status.interrupted, .status.running { background: #fff2d6; color: #8a5a00; }
pre { background: #f3f5f7; border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px;
  overflow-x: auto; font: 13px/1.45 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace;
  white-space: pre-wrap; word-break: break-all; }
table { border-collapse: collapse; width: 100%; margin: 6px 0 12px; font-size: 14px; }
th, td { padding: 5px 9px; border-bottom: 1px solid var(--line); text-align: left; }
th { font-weight: 600; color: var(--muted); background: #fafbfc; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.sub td { color: var(--muted); }
figure.chart { margin: 10px 0 18px; }
figure.chart svg { width: 100%; height: auto; border: 1px solid var(--line); border-radius: 6px; }
figcaption { color: var(--muted); font-size: 13px; margin-top: 4px; }
.finding { border-left: 4px solid #c8ced4; padding: 6px 12px; margin: 10px 0; background: #fafbfc; }
.finding.warning { border-color: #e5a50a; }
.finding.critical { border-color: #c01c28; }
.finding .code { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 13px; }
.finding .advice { color: var(--muted); }
details summary { cursor: pointer; color: var(--muted); font-size: 13px; }
table.heat td.n { color: #fff; font-weight: 600; }
footer { color: var(--muted); font-size: 12px; margin-top: 40px; }
@media print { body { background: #fff; } main { padding: 0; }
  figure, table, .finding { break-inside: avoid; } h2 { break-after: avoid; } }
"#;

/// Whether the run is better told in bytes than in operations (large I/O, objects, network).
pub(crate) fn by_bytes(r: &Results) -> bool {
    if r.net.is_some() || r.mesh.is_some() {
        return true;
    }
    let (ops, bytes) = r
        .phases
        .iter()
        .filter(|p| p.measured())
        .fold((0u64, 0u64), |(o, b), p| {
            (o + p.total.ops, b + p.total.bytes)
        });
    ops > 0 && bytes / ops >= 64 << 10
}

pub(crate) fn rate(s: &Summary, bytes: bool) -> f64 {
    if bytes {
        s.bw_bytes_per_s
    } else {
        s.iops
    }
}

pub(crate) fn rate_fmt(bytes: bool) -> &'static dyn Fn(f64) -> String {
    if bytes {
        &|v| format_bw(v)
    } else {
        &|v| format_iops(v)
    }
}

pub(crate) fn status_name(s: RunStatus) -> &'static str {
    match s {
        RunStatus::Ok => "ok",
        RunStatus::Failed => "failed",
        RunStatus::Interrupted => "interrupted",
        RunStatus::Running => "running",
    }
}

/// The phase the distribution and per-host charts describe: a search's best step, else the
/// last measured phase of the workload as given, else the last measured one.
pub(crate) fn main_phase(r: &Results) -> Option<&Phase> {
    let measured = || r.phases.iter().filter(|p| p.measured());
    // A search's: the most load that met the target, not the step that broke it.
    let best = r.search.as_ref().and_then(|s| s.best.as_deref());
    if let Some(p) = best.and_then(|b| measured().find(|p| p.name == b)) {
        return Some(p);
    }
    measured()
        .rfind(|p| p.kind() == PhaseKind::Run)
        .or_else(|| measured().next_back())
}

pub(crate) fn figure(o: &mut String, name: &str, svg: Option<String>, caption: &str) {
    if let Some(svg) = svg {
        let _ = writeln!(
            o,
            "<figure class=\"chart\" data-chart=\"{name}\">{svg}<figcaption>{}</figcaption></figure>",
            esc(caption)
        );
    }
}
