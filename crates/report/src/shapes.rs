//! Terminal tables of a search, a curve and a sweep: one row per phase.

use std::fmt::Write as _;

use comfy_table::{presets, Cell, CellAlignment, Table};
use stormark_spec::units::format_size;
use stormark_stats::{CurveReport, Latency, Results, SearchReport, SweepReport};

use crate::{format_bw, format_iops, format_latency};

fn table(header: Vec<String>) -> Table {
    let mut t = Table::new();
    t.load_preset(presets::UTF8_HORIZONTAL_ONLY);
    t.set_header(header);
    t
}

fn right_align(t: &mut Table, from: usize) {
    for (i, col) in t.column_iter_mut().enumerate() {
        if i >= from {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
}

fn lat(l: Option<&Latency>, f: fn(&Latency) -> u64) -> String {
    l.map_or_else(|| "-".to_string(), |l| format_latency(f(l)))
}

/// Every step, then the answer: the best sustained point and the step that first broke a
/// target.
pub(crate) fn search_text(r: &Results, s: &SearchReport) -> String {
    let targets: Vec<String> = s
        .targets
        .iter()
        .map(|t| format!("{} <= {}", t.stat, format_latency(t.limit_ns)))
        .collect();
    // An S3 search climbs connections and counts operations, not I/Os.
    let objects = objects(r);
    let (load_head, rate_head) = if objects {
        ("connections", "ops/s")
    } else {
        ("workers x depth", "IOPS")
    };
    let shown = |jobs: u32, depth: u32| {
        if objects {
            format!("{jobs} connection{}", if jobs == 1 { "" } else { "s" })
        } else {
            format!("{jobs} workers x depth {depth}")
        }
    };
    let mut header: Vec<String> = ["step", load_head, "rate asked", rate_head, "bandwidth"]
        .iter()
        .map(|h| h.to_string())
        .collect();
    header.extend(s.targets.iter().map(|t| t.stat.clone()));
    header.push("".into());
    let mut t = table(header);
    for step in &s.steps {
        let mut row = vec![
            Cell::new(step.phase.trim_start_matches("search-step-")),
            Cell::new(if objects {
                step.load.jobs.to_string()
            } else {
                format!("{} x {}", step.load.jobs, step.load.iodepth)
            }),
            Cell::new(
                step.load
                    .rate_iops
                    .map_or_else(|| "closed loop".to_string(), format_iops),
            ),
            Cell::new(format_iops(step.iops)),
            Cell::new(format_bw(step.bw_bytes_per_s)),
        ];
        row.extend(step.latency_ns.iter().map(|v| {
            Cell::new(v.map_or_else(|| "-".to_string(), |v| format_latency(v.round() as u64)))
        }));
        row.push(Cell::new(match &step.missed {
            None => "met".to_string(),
            Some(why) => format!("missed: {why}"),
        }));
        t.add_row(row);
    }
    right_align(&mut t, 2);
    if let Some(col) = t.column_mut(5 + s.targets.len()) {
        col.set_cell_alignment(CellAlignment::Left);
    }
    let mut out = format!(
        "\nsearch for the most load with {}:\n{t}\n",
        targets.join(", ")
    );
    let hosts = if r.hosts.len() > 1 {
        format!(" on each of {} hosts", r.hosts.len())
    } else {
        String::new()
    };
    match s
        .best
        .as_ref()
        .and_then(|b| s.steps.iter().find(|x| &x.phase == b))
    {
        Some(best) => {
            let figures: Vec<String> = s
                .targets
                .iter()
                .zip(&best.latency_ns)
                .map(|(t, v)| {
                    format!(
                        "{} {}",
                        t.stat,
                        v.map_or_else(|| "-".to_string(), |v| format_latency(v.round() as u64))
                    )
                })
                .collect();
            let load = match best.load.rate_iops {
                Some(rate) => format!(
                    "open loop at {} {rate_head}, {}{hosts}",
                    format_iops(rate),
                    shown(best.load.jobs, best.load.iodepth)
                ),
                None => format!("{}{hosts}", shown(best.load.jobs, best.load.iodepth)),
            };
            let _ = writeln!(
                out,
                "  best sustained: {} {rate_head} ({}) with {} ({load}; {})",
                format_iops(best.iops),
                format_bw(best.bw_bytes_per_s),
                figures.join(", "),
                best.phase
            );
        }
        None => out.push_str("  no step met every target\n"),
    }
    if let Some(b) = s
        .first_broken
        .as_ref()
        .and_then(|b| s.steps.iter().find(|x| &x.phase == b))
    {
        let _ = writeln!(
            out,
            "  first broken: {} ({})",
            b.phase,
            b.missed.as_deref().unwrap_or("")
        );
    }
    let _ = writeln!(
        out,
        "  ended after {} steps: {}",
        s.steps.len(),
        s.ended.describe()
    );
    out
}

/// One search step as it ends: its place (of at most `max_steps`), its load, figures, each
/// target's statistic and whether every target held. `objects`: an S3 search (connections and
/// ops/s). The search's table at the end has every step.
pub fn search_step_line(s: &SearchReport, step: usize, max_steps: usize, objects: bool) -> String {
    let Some(x) = s.steps.get(step) else {
        return String::new();
    };
    let load = if objects {
        format!(
            "{} connection{}",
            x.load.jobs,
            if x.load.jobs == 1 { "" } else { "s" }
        )
    } else {
        format!("{} workers x depth {}", x.load.jobs, x.load.iodepth)
    };
    let rate = x.load.rate_iops.map_or_else(
        || "closed loop".to_string(),
        |r| format!("open loop at {}", format_iops(r)),
    );
    let mut line = format!(
        "search step {} of at most {max_steps}: {load}, {rate}: {} {}, {}",
        step + 1,
        format_iops(x.iops),
        if objects { "ops/s" } else { "IOPS" },
        format_bw(x.bw_bytes_per_s)
    );
    for (t, v) in s.targets.iter().zip(&x.latency_ns) {
        let v = v.map_or_else(|| "-".to_string(), |v| format_latency(v.round() as u64));
        let _ = write!(line, ", {} {v} (<= {})", t.stat, format_latency(t.limit_ns));
    }
    match &x.missed {
        None => line.push_str(": met\n"),
        Some(why) => {
            let _ = writeln!(line, ": missed: {why}");
        }
    }
    line
}

/// Whether the run's phases are operations on objects (S3), counted as ops/s, not IOPS.
fn objects(r: &Results) -> bool {
    r.phases
        .iter()
        .any(|p| p.jobs.iter().any(|j| j.engine == "s3"))
}

/// The maximum, then each point of the curve: asked rate, achieved, latency.
pub(crate) fn curve_text(r: &Results, c: &CurveReport) -> String {
    let rate = if objects(r) { "ops/s" } else { "IOPS" };
    let mut t = table(
        [
            "point",
            "rate asked",
            rate,
            "bandwidth",
            "mean",
            "p50",
            "p99",
            "p99.9",
            "service p99",
        ]
        .iter()
        .map(|h| h.to_string())
        .collect(),
    );
    for p in &c.points {
        t.add_row(vec![
            Cell::new(
                p.percent
                    .map_or_else(|| "max".to_string(), |x| format!("{x}%")),
            ),
            Cell::new(
                p.rate_iops
                    .map_or_else(|| "closed loop".to_string(), format_iops),
            ),
            Cell::new(format_iops(p.iops)),
            Cell::new(format_bw(p.bw_bytes_per_s)),
            Cell::new(lat(p.latency_ns.as_ref(), |l| l.mean.round() as u64)),
            Cell::new(lat(p.latency_ns.as_ref(), |l| l.p50)),
            Cell::new(lat(p.latency_ns.as_ref(), |l| l.p99)),
            Cell::new(lat(p.latency_ns.as_ref(), |l| l.p999)),
            Cell::new(lat(p.service_latency_ns.as_ref(), |l| l.p99)),
        ]);
    }
    right_align(&mut t, 1);
    format!(
        "\nthroughput-latency curve (open loop at shares of the {} {rate} maximum; latency from each request's schedule):\n{t}\n",
        format_iops(c.max_iops)
    )
}

fn show(key: &str, v: u64) -> String {
    match key {
        "bs" | "size" | "obj-size" => format_size(v),
        _ => v.to_string(),
    }
}

/// Every point, with efficiency when workers were swept; with two keys, a matrix too.
pub(crate) fn sweep_text(r: &Results, s: &SweepReport) -> String {
    let rate = if objects(r) { "ops/s" } else { "IOPS" };
    let has_eff = s.points.iter().any(|p| p.efficiency.is_some());
    let mut header: Vec<String> = s.keys.clone();
    header.extend(
        [rate, "bandwidth", "mean", "p50", "p99"]
            .iter()
            .map(|h| h.to_string()),
    );
    if has_eff {
        header.push("efficiency".into());
    }
    let mut t = table(header);
    for p in &s.points {
        let mut row: Vec<Cell> = s
            .keys
            .iter()
            .map(|k| Cell::new(p.values.get(k).map_or("-".into(), |v| show(k, *v))))
            .collect();
        row.extend([
            Cell::new(format_iops(p.iops)),
            Cell::new(format_bw(p.bw_bytes_per_s)),
            Cell::new(lat(p.latency_ns.as_ref(), |l| l.mean.round() as u64)),
            Cell::new(lat(p.latency_ns.as_ref(), |l| l.p50)),
            Cell::new(lat(p.latency_ns.as_ref(), |l| l.p99)),
        ]);
        if has_eff {
            row.push(Cell::new(p.efficiency.map_or_else(
                || "-".to_string(),
                |e| format!("{:.0}%", e * 100.0),
            )));
        }
        t.add_row(row);
    }
    right_align(&mut t, 0);
    let mut out = format!("\nsweep over {}:\n{t}\n", s.keys.join(", "));
    if let [rows, cols] = s.keys.as_slice() {
        // Bandwidth when block or object sizes vary (rates of unequal sizes do not compare),
        // else the rate.
        let bw = s.keys.iter().any(|k| k == "bs" || k == "obj-size");
        let values = |key: &str| {
            let mut v: Vec<u64> = s
                .points
                .iter()
                .filter_map(|p| p.values.get(key).copied())
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let (rv, cv) = (values(rows), values(cols));
        let mut header = vec![format!("{rows} \\ {cols}")];
        header.extend(cv.iter().map(|v| show(cols, *v)));
        let mut m = table(header);
        for r in &rv {
            let mut row = vec![Cell::new(show(rows, *r))];
            for c in &cv {
                let p = s
                    .points
                    .iter()
                    .find(|p| p.values.get(rows) == Some(r) && p.values.get(cols) == Some(c));
                row.push(Cell::new(p.map_or_else(
                    || "-".to_string(),
                    |p| {
                        if bw {
                            format_bw(p.bw_bytes_per_s)
                        } else {
                            format_iops(p.iops)
                        }
                    },
                )));
            }
            m.add_row(row);
        }
        right_align(&mut m, 0);
        let _ = writeln!(
            out,
            "{} by {rows} (rows) and {cols} (columns):\n{m}",
            if bw { "bandwidth" } else { rate }
        );
    }
    out
}
