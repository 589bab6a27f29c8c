//! One self-contained HTML file: no script, font, style sheet or image is fetched; every chart
//! is inline SVG. The command, the summary table, throughput and latency over the run, the
//! latency distribution, per-host bars, a search's or curve's throughput against latency, a
//! sweep, a network mesh as a heat map, the findings with their evidence, and each host.

use std::fmt::Write as _;

use stormark_stats::{Phase, PhaseKind, Results, RunStatus, Severity, Summary};

use crate::charts::{bar_chart, line_chart, LineChart, Series};
use crate::{format_bw, format_iops, format_latency, Render};

/// The HTML renderer.
#[derive(Debug, Clone, Copy, Default)]
pub struct Html;

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

const STYLE: &str = r#"
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
fn by_bytes(r: &Results) -> bool {
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

fn rate(s: &Summary, bytes: bool) -> f64 {
    if bytes {
        s.bw_bytes_per_s
    } else {
        s.iops
    }
}

fn rate_fmt(bytes: bool) -> &'static dyn Fn(f64) -> String {
    if bytes {
        &|v| format_bw(v)
    } else {
        &|v| format_iops(v)
    }
}

fn status_name(s: RunStatus) -> &'static str {
    match s {
        RunStatus::Ok => "ok",
        RunStatus::Failed => "failed",
        RunStatus::Interrupted => "interrupted",
        RunStatus::Running => "running",
    }
}

/// The phase the distribution and per-host charts describe: the last measured phase of the
/// workload as given, else the last measured one.
fn main_phase(r: &Results) -> Option<&Phase> {
    let measured = || r.phases.iter().filter(|p| p.measured());
    measured()
        .rfind(|p| p.kind() == PhaseKind::Run)
        .or_else(|| measured().next_back())
}

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
    let _ = write!(
        o,
        "<pre class=\"command\">{}</pre>",
        esc(&r.command.join(" "))
    );
    if let Some(t) = &r.target {
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
            for (host, b) in &p.by_host {
                row(o, &p.name, host, "all", &b.total, true);
            }
        }
    }
    let _ = bytes;
    o.push_str("</tbody></table></section>\n");
}

fn figure(o: &mut String, name: &str, svg: Option<String>, caption: &str) {
    if let Some(svg) = svg {
        let _ = writeln!(
            o,
            "<figure class=\"chart\" data-chart=\"{name}\">{svg}<figcaption>{}</figcaption></figure>",
            esc(caption)
        );
    }
}

/// Throughput and latency percentiles over the run: each measured phase at its place in time.
fn over_time(o: &mut String, r: &Results, bytes: bool) {
    let measured: Vec<&Phase> = r.phases.iter().filter(|p| p.measured()).collect();
    let ops: std::collections::BTreeSet<&String> =
        measured.iter().flat_map(|p| p.by_op.keys()).collect();
    if measured.iter().all(|p| p.intervals.is_empty()) {
        return;
    }
    // Each second as a step from its start to its end, so that a phase of one second shows.
    let start = |p: &Phase, t_s: u32| p.start_offset_ns as f64 / 1e9 + f64::from(t_s);
    let series = |f: &dyn Fn(&Summary) -> Option<f64>, op: &str| Series {
        name: op.to_string(),
        segments: measured
            .iter()
            .map(|p| {
                p.intervals
                    .iter()
                    .filter_map(|i| {
                        let v = f(i.by_op.get(op)?)?;
                        let t0 = start(p, i.t_s);
                        Some([(t0, v), (t0 + i.duration_ns as f64 / 1e9, v)])
                    })
                    .flatten()
                    .collect::<Vec<_>>()
            })
            .filter(|s| !s.is_empty())
            .collect(),
    };
    o.push_str("<section id=\"over-time\"><h2>Over time</h2>");
    let thr: Vec<Series> = ops
        .iter()
        .map(|op| series(&|s| Some(rate(s, bytes)), op))
        .collect();
    figure(
        o,
        "throughput",
        line_chart(&LineChart {
            title: if bytes { "Bandwidth per second" } else { "IOPS per second" },
            x_desc: "seconds since the start",
            y_desc: if bytes { "bandwidth" } else { "IOPS" },
            series: thr,
            y_fmt: rate_fmt(bytes),
            x_fmt: &|v| format!("{v:.0}"),
            log_x: false,
            hline: None,
            dots: false,
            marks: Vec::new(),
            whiskers: Vec::new(),
        }),
        "Each second of every measured phase at its place in the run, drawn as a step; gaps are between phases.",
    );
    // Each host of a run with several: its throughput, all operations together.
    let hosts: std::collections::BTreeSet<&String> = measured
        .iter()
        .flat_map(|p| p.by_host.iter().filter(|(_, b)| !b.seconds.is_empty()))
        .map(|(h, _)| h)
        .collect();
    if hosts.len() > 1 {
        let per_host: Vec<Series> = hosts
            .iter()
            .map(|h| Series {
                name: (*h).clone(),
                segments: measured
                    .iter()
                    .filter_map(|p| Some((p.by_host.get(*h)?, *p)))
                    .map(|(b, p)| {
                        b.seconds
                            .iter()
                            .flat_map(|s| {
                                let secs = s.duration_ns as f64 / 1e9;
                                let sum = |f: fn(&stormark_stats::Counts) -> u64| {
                                    s.by_op.values().map(f).sum::<u64>() as f64 / secs
                                };
                                let v = if bytes {
                                    sum(|c| c.bytes)
                                } else {
                                    sum(|c| c.ops)
                                };
                                let t0 = start(p, s.t_s);
                                [(t0, v), (t0 + secs, v)]
                            })
                            .collect::<Vec<_>>()
                    })
                    .filter(|s| !s.is_empty())
                    .collect(),
            })
            .collect();
        figure(
            o,
            "throughput-per-host",
            line_chart(&LineChart {
                title: if bytes {
                    "Bandwidth per second, per host"
                } else {
                    "IOPS per second, per host"
                },
                x_desc: "seconds since the start",
                y_desc: if bytes { "bandwidth" } else { "IOPS" },
                series: per_host,
                y_fmt: rate_fmt(bytes),
                x_fmt: &|v| format!("{v:.0}"),
                log_x: false,
                hline: None,
                dots: false,
                marks: Vec::new(),
                whiskers: Vec::new(),
            }),
            "Each host's seconds, every operation together: a host that falls behind the others shows here.",
        );
    }
    let mut lat = Vec::new();
    for op in &ops {
        for (q, f) in [
            (
                "p50",
                (|l: &stormark_stats::Latency| l.p50) as fn(&stormark_stats::Latency) -> u64,
            ),
            ("p99", |l| l.p99),
        ] {
            let mut s = series(&|s| s.latency_ns.as_ref().map(|l| f(l) as f64), op);
            s.name = format!("{op} {q}");
            lat.push(s);
        }
    }
    figure(
        o,
        "latency",
        line_chart(&LineChart {
            title: "Latency percentiles per second",
            x_desc: "seconds since the start",
            y_desc: "latency",
            series: lat,
            y_fmt: &|v| format_latency(v as u64),
            x_fmt: &|v| format!("{v:.0}"),
            log_x: false,
            hline: None,
            dots: false,
            marks: Vec::new(),
            whiskers: Vec::new(),
        }),
        "The median and 99th percentile of each second's operations.",
    );
    o.push_str("</section>\n");
}

/// The latency distribution of the main phase as HdrHistogram plots it: latency against
/// percentile on a log axis (1/(1-q)), one line per operation over every host and job.
fn distribution(o: &mut String, r: &Results) {
    let Some(p) = main_phase(r) else { return };
    let series = percentile_series(p, "");
    o.push_str("<section id=\"distribution\"><h2>Latency distribution</h2>");
    figure(
        o,
        "distribution",
        percentile_chart(&format!("Latency by percentile, phase {}", p.name), series),
        "Every operation's latency, exact (HDR histograms merged over hosts and jobs): read \
         across to see what share of operations finished within a time.",
    );
    o.push_str("</section>\n");
}

/// A latency-by-percentile chart of `series` (from [`percentile_series`]).
fn percentile_chart(title: &str, series: Vec<Series>) -> Option<String> {
    line_chart(&LineChart {
        title,
        x_desc: "percentile",
        y_desc: "latency",
        series,
        y_fmt: &|v| format_latency(v as u64),
        x_fmt: &|x| {
            let pct = 100.0 * (1.0 - 1.0 / x);
            if pct < 99.0 {
                format!("{pct:.0}%")
            } else {
                format!("{}%", trim(pct))
            }
        },
        log_x: true,
        hline: None,
        dots: false,
        marks: Vec::new(),
        whiskers: Vec::new(),
    })
}

/// One line per operation of `p`: latency against 1/(1-q), from its histograms merged over
/// hosts and jobs; each named `prefix` and the operation.
fn percentile_series(p: &Phase, prefix: &str) -> Vec<Series> {
    let mut per_op: std::collections::BTreeMap<String, hdrhistogram::Histogram<u64>> =
        Default::default();
    for (key, enc) in &p.histograms {
        let parts: Vec<&str> = key.split('/').collect();
        let [_, _, op] = parts[..] else { continue };
        let Some(h) = stormark_stats::decode_histogram(enc) else {
            continue;
        };
        match per_op.get_mut(op) {
            Some(m) => {
                let _ = m.add(&h);
            }
            None => {
                per_op.insert(op.to_string(), h);
            }
        }
    }
    let qs: Vec<f64> = {
        let mut v = Vec::new();
        let mut x = 1.0f64;
        while x <= 1e6 {
            v.push(1.0 - 1.0 / x);
            x *= 1.25;
        }
        v
    };
    per_op
        .iter()
        .filter(|(_, h)| !h.is_empty())
        .map(|(op, h)| {
            // Past the last recorded operation a percentile says nothing new.
            let top = 1.0 - 1.0 / h.len() as f64;
            Series {
                name: format!("{prefix}{op}"),
                segments: vec![qs
                    .iter()
                    .filter(|&&q| q <= top.max(0.5))
                    .map(|&q| (1.0 / (1.0 - q), h.value_at_quantile(q) as f64))
                    .collect()],
            }
        })
        .collect()
}

fn trim(pct: f64) -> String {
    let s = format!("{pct:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn per_host(o: &mut String, r: &Results, bytes: bool) {
    let Some(p) = main_phase(r) else { return };
    if p.by_host.len() < 2 {
        return;
    }
    let bars: Vec<(String, f64)> = p
        .by_host
        .iter()
        .map(|(h, b)| (h.clone(), rate(&b.total, bytes)))
        .collect();
    o.push_str("<section id=\"per-host\"><h2>Per host</h2>");
    figure(
        o,
        "hosts",
        bar_chart(
            &format!(
                "{} per host, phase {}",
                if bytes { "Bandwidth" } else { "IOPS" },
                p.name
            ),
            if bytes { "bandwidth" } else { "IOPS" },
            &bars,
            rate_fmt(bytes),
        ),
        "What each host did in the same phase; a short bar is the host to look at.",
    );
    o.push_str("</section>\n");
}

fn search_and_curve(o: &mut String, r: &Results) {
    if let Some(s) = &r.search {
        let stat = s.targets.first();
        let pts: Vec<(f64, f64)> = s
            .steps
            .iter()
            .filter_map(|st| Some((st.iops, (*st.latency_ns.first()?)?)))
            .collect();
        let mut sorted = pts.clone();
        sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
        o.push_str("<section id=\"search\"><h2>Latency-target search</h2>");
        let _ = write!(
            o,
            "<p>{}</p>",
            match (&s.best, s.best_iops) {
                (Some(best), Some(iops)) => format!(
                    "The most load that met every target: <strong>{} IOPS</strong> ({}).",
                    format_iops(iops),
                    esc(best)
                ),
                _ => "No step met every target.".to_string(),
            }
        );
        figure(
            o,
            "search",
            line_chart(&LineChart {
                title: "Throughput against latency, each step of the search",
                x_desc: "IOPS achieved",
                y_desc: stat.map_or("latency", |t| t.stat.as_str()),
                series: vec![Series {
                    name: stat.map_or("latency".into(), |t| t.stat.clone()),
                    segments: vec![sorted],
                }],
                y_fmt: &|v| format_latency(v as u64),
                x_fmt: &|v| format_iops(v),
                log_x: false,
                hline: stat.map(|t| {
                    (
                        t.limit_ns as f64,
                        format!("target {} ≤ {}", t.stat, format_latency(t.limit_ns)),
                    )
                }),
                dots: true,
                marks: Vec::new(),
                whiskers: Vec::new(),
            }),
            "Each dot a step; the red line the target.",
        );
        o.push_str("</section>\n");
    }
    if let Some(c) = &r.curve {
        let pts = |f: fn(&stormark_stats::Latency) -> u64| -> Vec<(f64, f64)> {
            let mut v: Vec<(f64, f64)> = c
                .points
                .iter()
                .filter_map(|p| Some((p.iops, f(p.latency_ns.as_ref()?) as f64)))
                .collect();
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            v
        };
        o.push_str("<section id=\"curve\"><h2>Throughput against latency</h2>");
        figure(
            o,
            "curve",
            line_chart(&LineChart {
                title: "Latency at each share of the maximum",
                x_desc: "IOPS achieved",
                y_desc: "latency",
                series: vec![
                    Series {
                        name: "p50".into(),
                        segments: vec![pts(|l| l.p50)],
                    },
                    Series {
                        name: "p99".into(),
                        segments: vec![pts(|l| l.p99)],
                    },
                ],
                y_fmt: &|v| format_latency(v as u64),
                x_fmt: &|v| format_iops(v),
                log_x: false,
                hline: None,
                dots: true,
                marks: Vec::new(),
                whiskers: Vec::new(),
            }),
            &format!(
                "Open-loop points up to the closed-loop maximum of {} IOPS.",
                format_iops(c.max_iops)
            ),
        );
        o.push_str("</section>\n");
    }
}

fn sweep(o: &mut String, r: &Results, bytes: bool) {
    let Some(s) = &r.sweep else { return };
    let Some(key) = s.keys.first() else { return };
    // One line per value of the second key, if any.
    let mut lines: std::collections::BTreeMap<String, Vec<(f64, f64)>> = Default::default();
    for p in &s.points {
        let Some(&x) = p.values.get(key) else {
            continue;
        };
        let name = s
            .keys
            .get(1)
            .and_then(|k| p.values.get(k).map(|v| format!("{k}={v}")))
            .unwrap_or_else(|| if bytes { "bandwidth" } else { "IOPS" }.to_string());
        let y = if bytes { p.bw_bytes_per_s } else { p.iops };
        lines.entry(name).or_default().push((x as f64, y));
    }
    let series = lines
        .into_iter()
        .map(|(name, mut pts)| {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series {
                name,
                segments: vec![pts],
            }
        })
        .collect();
    o.push_str("<section id=\"sweep\"><h2>Sweep</h2>");
    figure(
        o,
        "sweep",
        line_chart(&LineChart {
            title: &format!("{} by {key}", if bytes { "Bandwidth" } else { "IOPS" }),
            x_desc: key,
            y_desc: if bytes { "bandwidth" } else { "IOPS" },
            series,
            y_fmt: rate_fmt(bytes),
            x_fmt: &|v| format!("{v:.0}"),
            log_x: false,
            hline: None,
            dots: true,
            marks: Vec::new(),
            whiskers: Vec::new(),
        }),
        "Each dot a point of the sweep.",
    );
    o.push_str("</section>\n");
}

/// A mesh's matrices as heat maps: the darker, the faster.
fn mesh(o: &mut String, r: &Results) {
    let Some(m) = &r.mesh else { return };
    o.push_str("<section id=\"mesh\"><h2>Network mesh</h2>");
    for (title, pairs) in [
        ("Each pair alone", &m.alone),
        ("All pairs at once", &m.loaded),
    ] {
        if pairs.is_empty() {
            continue;
        }
        let max = pairs.iter().map(|p| p.bits_per_s).fold(0f64, f64::max);
        let _ = write!(
            o,
            "<h3>{title}: Gbit/s (retransmits), from the row's host to the column's</h3>\
             <table class=\"heat\"><thead><tr><th>from \\ to</th>"
        );
        for h in &m.hosts {
            let _ = write!(o, "<th class=\"n\">{}</th>", esc(&h.ip));
        }
        o.push_str("</tr></thead><tbody>");
        for (i, from) in m.hosts.iter().enumerate() {
            let _ = write!(o, "<tr><th>{}</th>", esc(&from.ip));
            for j in 0..m.hosts.len() {
                let p = pairs
                    .iter()
                    .find(|p| p.from as usize == i && p.to as usize == j);
                match p {
                    _ if i == j => o.push_str("<td class=\"n\" style=\"background:#eee\"></td>"),
                    None => o.push_str("<td></td>"),
                    Some(p) if p.failure.is_some() => {
                        let _ = write!(
                            o,
                            "<td class=\"n\" style=\"background:#a4161a\" title=\"{}\">failed</td>",
                            esc(p.failure.as_deref().unwrap_or_default())
                        );
                    }
                    Some(p) => {
                        let share = if max > 0.0 { p.bits_per_s / max } else { 0.0 };
                        // From a light to a dark blue: the darker, the faster.
                        let light = (215.0 - 150.0 * share) as u8;
                        let _ = write!(
                            o,
                            "<td class=\"n\" style=\"background:rgb({},{},{})\">{:.3} ({})</td>",
                            light / 3,
                            light / 2 + 20,
                            200,
                            p.bits_per_s / 1e9,
                            p.retransmits()
                        );
                    }
                }
            }
            o.push_str("</tr>");
        }
        o.push_str("</tbody></table>");
    }
    if m.alone.iter().any(|p| p.rtt_p50_ns.is_some()) {
        o.push_str(
            "<h3>Round trips of 64 bytes, each pair alone: p50 / p99</h3><table><thead><tr><th>from \\ to</th>",
        );
        for h in &m.hosts {
            let _ = write!(o, "<th class=\"n\">{}</th>", esc(&h.ip));
        }
        o.push_str("</tr></thead><tbody>");
        for (i, from) in m.hosts.iter().enumerate() {
            let _ = write!(o, "<tr><th>{}</th>", esc(&from.ip));
            for j in 0..m.hosts.len() {
                let cell = m
                    .alone
                    .iter()
                    .find(|p| i != j && p.from as usize == i && p.to as usize == j)
                    .and_then(|p| Some((p.rtt_p50_ns?, p.rtt_p99_ns?)))
                    .map(|(a, b)| format!("{} / {}", format_latency(a), format_latency(b)))
                    .unwrap_or_default();
                let _ = write!(o, "<td class=\"n\">{cell}</td>");
            }
            o.push_str("</tr>");
        }
        o.push_str("</tbody></table>");
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
        let text = |k: &str| inv[k].as_str().map(esc).unwrap_or_default();
        let mem = inv["memory_bytes"]
            .as_u64()
            .map(|b| format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64))
            .unwrap_or_default();
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{mem}</td><td>{}</td></tr>",
            esc(&h.name),
            h.address.as_deref().map(esc).unwrap_or_default(),
            text("cpu_model"),
            inv["cpus"].as_u64().map(|n| n.to_string()).unwrap_or_default(),
            text("kernel")
        );
    }
    o.push_str("</tbody></table></section>\n");
}

/// One comparison of `stormark compare`: the baseline against one document.
pub struct Comparison<'a> {
    /// The compared document's label (its path as given).
    pub label: &'a str,
    /// The compared document.
    pub doc: &'a Results,
    /// Each figure against the baseline's.
    pub rows: &'a [stormark_stats::CompareRow],
    /// Why the two may not measure the same thing.
    pub differences: &'a [String],
}

/// The page of `stormark compare --html`: the documents, then for each one compared with the
/// baseline its differences, the table of figures with deltas and verdicts, and the latency
/// distributions of the phase they share, drawn over each other.
pub fn compare_page(base_label: &str, base: &Results, others: &[Comparison<'_>]) -> String {
    use stormark_stats::Verdict;
    let mut o = String::with_capacity(128 << 10);
    let _ = write!(
        o,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>stormark comparison</title><style>{STYLE}\
         td.worse {{ color: #a4161a; font-weight: 600; }} td.better {{ color: #1b6e2a; font-weight: 600; }}\
         </style></head><body><main>\n<header id=\"top\"><h1>stormark comparison</h1>\
         <p class=\"meta\">each document against the baseline (A): a figure is better or worse only \
         when the difference is beyond the noise threshold and significant</p></header>\n"
    );
    o.push_str(
        "<section id=\"documents\"><h2>Documents</h2><table><thead><tr><th></th><th>file</th>\
                <th>started</th><th>status</th><th>command</th></tr></thead><tbody>",
    );
    let doc_row = |o: &mut String, tag: &str, label: &str, r: &Results| {
        let _ = write!(
            o,
            "<tr><td>{tag}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            esc(label),
            esc(&r.started_at),
            status_name(r.status),
            esc(&r.command.join(" "))
        );
    };
    doc_row(&mut o, "A", base_label, base);
    for (i, c) in others.iter().enumerate() {
        doc_row(
            &mut o,
            &((b'B' + i as u8) as char).to_string(),
            c.label,
            c.doc,
        );
    }
    o.push_str("</tbody></table></section>\n");
    for (i, c) in others.iter().enumerate() {
        let tag = (b'B' + i as u8) as char;
        let _ = write!(
            o,
            "<section id=\"compare-{}\"><h2>A against {tag} ({})</h2>",
            i + 1,
            esc(c.label)
        );
        for d in c.differences {
            let _ = write!(
                o,
                "<div class=\"finding warning\"><p><strong>not alike</strong>: {}</p></div>",
                esc(d)
            );
        }
        let count = |v: Verdict| c.rows.iter().filter(|r| r.verdict == v).count();
        let _ = write!(
            o,
            "<p>{} worse, {} better, {} within noise or not significant, {} the same.</p>",
            count(Verdict::Worse),
            count(Verdict::Better),
            count(Verdict::Noise) + count(Verdict::NotSignificant),
            count(Verdict::Same)
        );
        o.push_str(
            "<table><thead><tr><th>phase</th><th>op</th><th>figure</th><th class=\"n\">A</th>\
             <th class=\"n\">B</th><th class=\"n\">delta</th><th class=\"n\">p</th><th>verdict</th>\
             </tr></thead><tbody>",
        );
        for r in c.rows {
            let (class, word) = match r.verdict {
                Verdict::Same => ("", "same"),
                Verdict::Noise => ("", "noise"),
                Verdict::NotSignificant => ("", "not significant"),
                Verdict::Better => ("better", "better"),
                Verdict::Worse => ("worse", "worse"),
            };
            let _ = write!(
                o,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
                 <td class=\"n {class}\">{:+.1}%</td><td class=\"n\">{}</td><td class=\"{class}\">{word}</td></tr>",
                esc(&r.phase),
                esc(&r.op),
                esc(&crate::figure_label(&r.figure)),
                esc(&crate::format_figure(&r.figure, r.a)),
                esc(&crate::format_figure(&r.figure, r.b)),
                r.delta_pct,
                r.p_value.map_or_else(|| "-".into(), |p| format!("{p:.3}"))
            );
        }
        o.push_str("</tbody></table>");
        // The distributions of the first phase both measured, over each other.
        let shared = base.phases.iter().filter(|p| p.measured()).find_map(|pa| {
            Some((
                pa,
                c.doc
                    .phases
                    .iter()
                    .find(|pb| pb.measured() && pb.name == pa.name)?,
            ))
        });
        if let Some((pa, pb)) = shared {
            let mut series = percentile_series(pa, "A ");
            series.extend(percentile_series(pb, &format!("{tag} ")));
            figure(
                &mut o,
                "compare-distribution",
                percentile_chart(&format!("Latency by percentile, phase {}", pa.name), series),
                "Each operation's latency distribution in both documents: a line above the \
                 other is slower at that percentile.",
            );
        }
        o.push_str("</section>\n");
    }
    let _ = write!(
        o,
        "<footer>Written by stormark {}. This page fetches nothing: its charts are inline SVG.\
         </footer>\n</main></body></html>\n",
        esc(&base.tool.version)
    );
    o
}

/// The page of `stormark report A.json B.json ... --html`: each figure over the documents in
/// the order given (a CI history), with the spread of repetitions where a document has them,
/// and the changes `stormark compare` calls significant (against the document before) ringed:
/// red worse, green better.
pub fn trend_page(docs: &[(String, Results)], noise_pct: f64) -> String {
    use stormark_stats::{compare, higher_is_better, Verdict};
    let mut o = String::with_capacity(128 << 10);
    let _ = write!(
        o,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>stormark trend</title><style>{STYLE}</style></head><body><main>\n\
         <header id=\"top\"><h1>stormark trend</h1><p class=\"meta\">{} documents in the order \
         given; a ring marks a change that is beyond {noise_pct}% and significant against the \
         document before it (red worse, green better); a vertical line spans a document's \
         repetitions</p></header>\n",
        docs.len()
    );
    o.push_str(
        "<section id=\"documents\"><h2>Documents</h2><table><thead><tr><th class=\"n\">#</th>\
         <th>file</th><th>started</th><th>version</th><th>status</th></tr></thead><tbody>",
    );
    for (i, (label, r)) in docs.iter().enumerate() {
        let _ = write!(
            o,
            "<tr><td class=\"n\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            i + 1,
            esc(label),
            esc(&r.started_at),
            esc(&r.tool.version),
            status_name(r.status)
        );
    }
    o.push_str("</tbody></table></section>\n");
    // Significant changes against the document before: (doc index, phase, op, figure) -> worse.
    let mut changes: std::collections::BTreeMap<(usize, String, String, String), bool> =
        Default::default();
    for i in 1..docs.len() {
        for row in compare(&docs[i - 1].1, &docs[i].1, noise_pct) {
            let worse = match row.verdict {
                Verdict::Worse => true,
                Verdict::Better => false,
                _ => continue,
            };
            changes.insert((i, row.phase, row.op, row.figure), worse);
        }
    }
    // The phases, in the order the documents first measured them.
    let mut phases: Vec<String> = Vec::new();
    for (_, r) in docs {
        for p in r.phases.iter().filter(|p| p.measured()) {
            if !phases.contains(&p.name) {
                phases.push(p.name.clone());
            }
        }
    }
    let bytes = docs.iter().any(|(_, r)| by_bytes(r));
    let throughput = if bytes { "bw_bytes_per_s" } else { "iops" };
    o.push_str("<section id=\"trend\"><h2>Figures over the documents</h2>");
    for phase in &phases {
        // Each operation, and their total when there are several.
        let mut ops: std::collections::BTreeSet<String> = docs
            .iter()
            .flat_map(|(_, r)| r.phases.iter().filter(|p| &p.name == phase))
            .flat_map(|p| p.by_op.keys().cloned())
            .collect();
        if ops.len() > 1 {
            ops.insert("total".to_string());
        }
        for figure_name in [throughput, "p99_ns"] {
            let mut series = Vec::new();
            let mut marks = Vec::new();
            let mut whiskers = Vec::new();
            for op in &ops {
                let mut pts = Vec::new();
                for (i, (_, r)) in docs.iter().enumerate() {
                    let Some(p) = r.phases.iter().find(|p| &p.name == phase && p.measured()) else {
                        continue;
                    };
                    let s = if op == "total" {
                        Some(&p.total)
                    } else {
                        p.by_op.get(op)
                    };
                    // Over repetitions: their mean, and their range.
                    let rep = r
                        .repetitions
                        .iter()
                        .find(|s| &s.phase == phase && &s.op == op && s.figure == figure_name);
                    let y = match (rep, s.and_then(|s| stormark_stats::figure(s, figure_name))) {
                        (Some(rep), _) => {
                            whiskers.push(((i + 1) as f64, rep.stats.min, rep.stats.max));
                            rep.stats.mean
                        }
                        (None, Some(v)) => v,
                        (None, None) => continue,
                    };
                    let x = (i + 1) as f64;
                    pts.push((x, y));
                    let key = (i, phase.clone(), op.clone(), figure_name.to_string());
                    if let Some(&worse) = changes.get(&key) {
                        marks.push((x, y, worse));
                    }
                }
                if !pts.is_empty() {
                    series.push(Series {
                        name: op.clone(),
                        segments: vec![pts],
                    });
                }
            }
            let latency = !higher_is_better(figure_name);
            let title = format!(
                "phase {phase}: {}",
                if latency {
                    "p99 latency"
                } else if bytes {
                    "bandwidth"
                } else {
                    "IOPS"
                }
            );
            figure(
                &mut o,
                &format!("trend-{}", if latency { "p99" } else { "throughput" }),
                line_chart(&LineChart {
                    title: &title,
                    x_desc: "document",
                    y_desc: if latency {
                        "p99"
                    } else if bytes {
                        "bandwidth"
                    } else {
                        "IOPS"
                    },
                    series,
                    y_fmt: if latency {
                        &|v| format_latency(v as u64)
                    } else {
                        rate_fmt(bytes)
                    },
                    x_fmt: &|v| {
                        if (v - v.round()).abs() < 1e-9 {
                            format!("{v:.0}")
                        } else {
                            String::new()
                        }
                    },
                    log_x: false,
                    hline: None,
                    dots: true,
                    marks,
                    whiskers,
                }),
                &format!("{title}, document by document."),
            );
        }
    }
    o.push_str("</section>\n");
    let _ = write!(
        o,
        "<footer>Written by stormark. This page fetches nothing: its charts are inline SVG.\
         </footer>\n</main></body></html>\n"
    );
    o
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
