//! The views of a run's page that draw: throughput and latency over time, the latency
//! distribution, per-host bars, a search's or curve's throughput against latency, a sweep, and
//! a network mesh as heat maps.

use std::fmt::Write as _;

use stormark_stats::{Phase, Results, Summary};

use crate::charts::{bar_chart, line_chart, size_label, LineChart, Scale, Series};
use crate::html_parts::{esc, figure, main_phase, rate, rate_fmt};
use crate::{format_iops, format_latency};

/// Throughput and latency percentiles over the run: each measured phase at its place in time.
pub(crate) fn over_time(o: &mut String, r: &Results, bytes: bool) {
    let measured: Vec<&Phase> = r.phases.iter().filter(|p| p.measured()).collect();
    let ops: std::collections::BTreeSet<&String> =
        measured.iter().flat_map(|p| p.by_op.keys()).collect();
    if measured.iter().all(|p| p.intervals.is_empty()) {
        return;
    }
    let start = second_start;
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
    let mut thr: Vec<Series> = ops
        .iter()
        .map(|op| series(&|s| Some(rate(s, bytes)), op))
        .collect();
    // Several operations (a mix, reads beside writes): their sum too.
    if ops.len() > 1 {
        thr.push(Series {
            name: "total".into(),
            segments: measured
                .iter()
                .map(|p| {
                    p.intervals
                        .iter()
                        .flat_map(|i| {
                            let (t0, v) = (start(p, i.t_s), rate(&i.total, bytes));
                            [(t0, v), (t0 + i.duration_ns as f64 / 1e9, v)]
                        })
                        .collect::<Vec<_>>()
                })
                .filter(|s| !s.is_empty())
                .collect(),
        });
    }
    figure(
        o,
        "throughput",
        time_chart(
            if bytes { "Bandwidth per second" } else { "IOPS per second" },
            if bytes { "bandwidth" } else { "IOPS" },
            thr,
            rate_fmt(bytes),
            (Scale::Linear, bytes),
        ),
        "Each second of every measured phase at its place in the run, drawn as a step; gaps are between phases.",
    );
    per_host_over_time(o, &measured, bytes);
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
        time_chart(
            "Latency percentiles per second",
            "latency",
            lat,
            &|v| format_latency(v as u64),
            (Scale::Auto, false),
        ),
        "The median and 99th percentile of each second's operations (on a logarithmic axis \
         when they span more than a decade).",
    );
    o.push_str("</section>\n");
}

/// Where second `t_s` of phase `p` starts, in seconds since the run's start: each second is
/// drawn as a step from its start to its end, so that a phase of one second shows.
fn second_start(p: &Phase, t_s: u32) -> f64 {
    p.start_offset_ns as f64 / 1e9 + f64::from(t_s)
}

/// A chart of seconds since the start; `(y_scale, y_bytes)` its y axis.
fn time_chart(
    title: &str,
    y_desc: &str,
    series: Vec<Series>,
    y_fmt: &dyn Fn(f64) -> String,
    (y_scale, y_bytes): (Scale, bool),
) -> Option<String> {
    line_chart(&LineChart {
        title,
        x_desc: "seconds since the start",
        y_desc,
        series,
        y_fmt,
        x_fmt: &crate::charts::tick_label,
        log_x: false,
        x_ticks: None,
        y_scale,
        y_bytes,
        hline: None,
        dots: false,
        marks: Vec::new(),
        whiskers: Vec::new(),
    })
}

/// Each host of a run with several: its throughput per second, all operations together.
fn per_host_over_time(o: &mut String, measured: &[&Phase], bytes: bool) {
    let hosts: std::collections::BTreeSet<&String> = measured
        .iter()
        .flat_map(|p| p.by_host.iter().filter(|(_, b)| !b.seconds.is_empty()))
        .map(|(h, _)| h)
        .collect();
    // Many hosts: the main phase's failed and slowest only, each a line.
    let slowest: Option<Vec<&str>> = measured
        .iter()
        .max_by_key(|p| p.by_host.len())
        .filter(|p| p.by_host.len() > crate::fleet::MANY_HOSTS)
        .map(|p| {
            crate::fleet::named(p, bytes)
                .into_iter()
                .map(|n| n.host)
                .collect()
        });
    let hosts: std::collections::BTreeSet<&String> = hosts
        .into_iter()
        .filter(|h| slowest.as_ref().is_none_or(|s| s.contains(&h.as_str())))
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
                                let t0 = second_start(p, s.t_s);
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
            time_chart(
                if bytes {
                    "Bandwidth per second, per host"
                } else {
                    "IOPS per second, per host"
                },
                if bytes { "bandwidth" } else { "IOPS" },
                per_host,
                rate_fmt(bytes),
                (Scale::Linear, bytes),
            ),
            if slowest.is_some() {
                "The slowest hosts' seconds, every operation together (of many hosts, the slowest ten of the main phase)."
            } else {
                "Each host's seconds, every operation together: a host that falls behind the others shows here."
            },
        );
    }
}

/// The latency distribution of the main phase as HdrHistogram plots it: latency against
/// percentile on a log axis (1/(1-q), ticks at 50%, 90%, 99%, ... 99.9999%), latency on a log
/// axis too, one line per operation over every host and job, each to its maximum.
pub(crate) fn distribution(o: &mut String, r: &Results) {
    let Some(p) = main_phase(r) else { return };
    let series = percentile_series(p, "");
    o.push_str("<section id=\"distribution\"><h2>Latency distribution</h2>");
    figure(
        o,
        "distribution",
        percentile_chart(&format!("Latency by percentile, phase {}", p.name), series),
        "Every operation's latency, exact (HDR histograms merged over hosts and jobs), up to \
         the slowest: read across to see what share of operations finished within a time.",
    );
    o.push_str("</section>\n");
}

/// A latency-by-percentile chart of `series` (from [`percentile_series`]): both axes
/// logarithmic, the x axis' ticks at 0%, 50%, 90%, 99%, 99.9%, ... as far as the data goes
/// (HdrHistogram's plotter's).
pub(crate) fn percentile_chart(title: &str, series: Vec<Series>) -> Option<String> {
    let last = series
        .iter()
        .flat_map(|s| s.segments.iter().flatten())
        .map(|p| p.0)
        .fold(1f64, f64::max);
    let mut ticks = vec![1.0, 2.0];
    let mut x = 10.0;
    while x <= last * 1.001 && x <= 1e6 {
        ticks.push(x);
        x *= 10.0;
    }
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
        x_ticks: Some(ticks),
        y_scale: Scale::Log,
        y_bytes: false,
        hline: None,
        dots: false,
        marks: Vec::new(),
        whiskers: Vec::new(),
    })
}

/// One line per operation of `p`: latency against 1/(1-q), from its histograms merged over
/// hosts and jobs; each named `prefix` and the operation.
pub(crate) fn percentile_series(p: &Phase, prefix: &str) -> Vec<Series> {
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
            // Past the last recorded operation a percentile says nothing new; the line ends
            // at the slowest operation (the maximum), at 1/(1-q) of its rank.
            let top = 1.0 - 1.0 / h.len() as f64;
            let mut points: Vec<(f64, f64)> = qs
                .iter()
                .filter(|&&q| q < top.max(0.5))
                .map(|&q| (1.0 / (1.0 - q), h.value_at_quantile(q) as f64))
                .collect();
            let end = (h.len() as f64).max(points.last().map_or(2.0, |p| p.0));
            points.push((end, h.max() as f64));
            Series {
                name: format!("{prefix}{op}"),
                segments: vec![points],
            }
        })
        .collect()
}

pub(crate) fn trim(pct: f64) -> String {
    let s = format!("{pct:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

pub(crate) fn per_host(o: &mut String, r: &Results, bytes: bool) {
    let Some(p) = main_phase(r) else { return };
    if p.by_host.len() < 2 {
        return;
    }
    o.push_str("<section id=\"per-host\"><h2>Per host</h2>");
    if p.by_host.len() > crate::fleet::MANY_HOSTS {
        many_hosts(o, p, bytes);
        return;
    }
    // The slowest host first: the one the chart is there to find.
    let mut bars: Vec<(String, f64)> = p
        .by_host
        .iter()
        .map(|(h, b)| (h.clone(), rate(&b.total, bytes)))
        .collect();
    bars.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
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
            bytes,
        ),
        "What each host did in the same phase, the slowest at the top: the host to look at.",
    );
    o.push_str("</section>\n");
}

/// The hosts of a phase of many: how many hosts ran at each rate, and the slowest named (every
/// host's figures are in the results document).
fn many_hosts(o: &mut String, p: &Phase, bytes: bool) {
    let what = if bytes { "Bandwidth" } else { "IOPS" };
    figure(
        o,
        "hosts",
        bar_chart(
            &format!(
                "Hosts by {} per host, phase {}",
                what.to_lowercase(),
                p.name
            ),
            "hosts",
            &crate::fleet::histogram(p, bytes, 12),
            &|v| format!("{v:.0}"),
            false,
        ),
        &format!(
            "How many of the {} hosts ran at each rate; the slowest are named below.",
            p.by_host.len()
        ),
    );
    let named = crate::fleet::named(p, bytes);
    let _ = write!(
        o,
        "<table><thead><tr><th>slowest hosts</th><th class=\"n\">{what}</th><th class=\"n\">of the median</th></tr></thead><tbody>"
    );
    if named.is_empty() {
        o.push_str("<tr><td colspan=\"3\">none below the median</td></tr>");
    }
    for n in &named {
        let failed = n.failed_after.map_or_else(String::new, |ns| {
            format!(" <strong>FAILED after {:.1} s</strong>", ns as f64 / 1e9)
        });
        let _ = write!(
            o,
            "<tr><td>{}{failed}</td><td class=\"n\">{}</td><td class=\"n\">{:.0}%</td></tr>",
            esc(n.host),
            crate::fleet::show(n.rate, bytes),
            n.share
        );
    }
    o.push_str("</tbody></table></section>\n");
}

pub(crate) fn search_and_curve(o: &mut String, r: &Results) {
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
                x_ticks: None,
                y_scale: Scale::Auto,
                y_bytes: false,
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
            "Each dot a step; the red line the target (latency on a logarithmic axis when the \
             steps and the target span more than a decade).",
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
                x_ticks: None,
                y_scale: Scale::Auto,
                y_bytes: false,
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

/// A sweep: the rate at each value of the first key, a line per value of the second. Sizes
/// read as sizes (`4 KiB`, `256 MiB`); values are placed by their value, on a logarithmic
/// axis when they span more than a factor of 8 (4k, 16k, 64k equally apart), lines in the
/// order of their values.
pub(crate) fn sweep(o: &mut String, r: &Results, bytes: bool) {
    let Some(s) = &r.sweep else { return };
    let Some(key) = s.keys.first() else { return };
    let shown = |k: &str, v: u64| match k {
        "bs" | "size" | "obj-size" => size_label(v),
        _ => v.to_string(),
    };
    // One line per value of the second key, if any, in the order of its values.
    let mut lines: std::collections::BTreeMap<Option<u64>, Vec<(f64, f64)>> = Default::default();
    for p in &s.points {
        let Some(&x) = p.values.get(key) else {
            continue;
        };
        let line = s.keys.get(1).and_then(|k| p.values.get(k).copied());
        let y = if bytes { p.bw_bytes_per_s } else { p.iops };
        lines.entry(line).or_default().push((x as f64, y));
    }
    let series = lines
        .into_iter()
        .map(|(line, mut pts)| {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series {
                name: match (line, s.keys.get(1)) {
                    (Some(v), Some(k)) => format!("{k} {}", shown(k, v)),
                    _ => if bytes { "bandwidth" } else { "IOPS" }.to_string(),
                },
                segments: vec![pts],
            }
        })
        .collect();
    let mut xs: Vec<u64> = s
        .points
        .iter()
        .filter_map(|p| p.values.get(key).copied())
        .collect();
    xs.sort_unstable();
    xs.dedup();
    let log_x = xs
        .first()
        .is_some_and(|&a| a > 0 && xs.last().is_some_and(|&z| z >= 8 * a));
    let x_desc = match key.as_str() {
        "bs" | "size" | "obj-size" => format!("{key} (bytes, by value)"),
        _ => key.clone(),
    };
    o.push_str("<section id=\"sweep\"><h2>Sweep</h2>");
    figure(
        o,
        "sweep",
        line_chart(&LineChart {
            title: &format!("{} by {key}", if bytes { "Bandwidth" } else { "IOPS" }),
            x_desc: &x_desc,
            y_desc: if bytes { "bandwidth" } else { "IOPS" },
            series,
            y_fmt: rate_fmt(bytes),
            x_fmt: &|v| shown(key, v.round() as u64),
            log_x,
            x_ticks: Some(xs.iter().map(|&v| v as f64).collect()),
            y_scale: Scale::Linear,
            y_bytes: bytes,
            hline: None,
            dots: true,
            marks: Vec::new(),
            whiskers: Vec::new(),
        }),
        "Each mark a point of the sweep, placed by its value.",
    );
    o.push_str("</section>\n");
}

/// A mesh's matrices as heat maps: the darker, the faster.
pub(crate) fn mesh(o: &mut String, r: &Results) {
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
                            "<td class=\"n\" style=\"background:#a4161a\" title=\"{}\">{}</td>",
                            esc(p.failure.as_deref().unwrap_or_default()),
                            if p.not_run() { "not run" } else { "failed" }
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
