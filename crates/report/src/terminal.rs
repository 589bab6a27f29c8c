//! The summary printed at the end of a run.

use std::fmt::Write as _;

use comfy_table::{presets, Cell, CellAlignment, Table};
use stormark_stats::{Phase, Results, RunStatus, Summary};

use crate::{format_bw, format_iops, format_latency, Render};

/// A table per phase (IOPS, bandwidth, latency percentiles, errors per operation), then notes,
/// findings and the status.
pub struct Terminal;

impl Render for Terminal {
    fn render(&self, r: &Results) -> String {
        let mut out = String::new();
        if let Some(t) = &r.target {
            let _ = writeln!(out, "target: {} ({})", t.path, t.kind);
        }
        for phase in &r.phases {
            out.push_str(&phase_text(phase));
        }
        if !r.notes.is_empty() {
            out.push_str("notes:\n");
            for n in &r.notes {
                let _ = writeln!(out, "  - {n}");
            }
        }
        if !r.findings.is_empty() {
            out.push_str("findings:\n");
            for f in &r.findings {
                let _ = writeln!(
                    out,
                    "  {:?} [{}] {}\n    advice: {}",
                    f.severity, f.code, f.message, f.advice
                );
            }
        }
        let status = match r.status {
            RunStatus::Ok => "ok",
            RunStatus::Failed => "failed",
            RunStatus::Interrupted => "interrupted",
        };
        match &r.failure {
            Some(why) => {
                let _ = writeln!(out, "status: {status}: {why}");
            }
            None => {
                let _ = writeln!(out, "status: {status}");
            }
        }
        out
    }
}

fn phase_text(p: &Phase) -> String {
    let mut out = String::new();
    let jobs: Vec<String> = p
        .jobs
        .iter()
        .map(|j| {
            format!(
                "{} ({}, {}, {} worker{} x iodepth {})",
                j.name,
                j.engine,
                if j.direct { "direct" } else { "buffered" },
                j.workers,
                if j.workers == 1 { "" } else { "s" },
                j.iodepth
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "\n{}  {:.1} s  {}",
        p.name,
        p.duration_ns as f64 / 1e9,
        jobs.join(", ")
    );
    let mut table = Table::new();
    table.load_preset(presets::UTF8_HORIZONTAL_ONLY);
    table.set_header([
        "",
        "IOPS",
        "bandwidth",
        "min",
        "mean",
        "p50",
        "p90",
        "p99",
        "p99.9",
        "p99.99",
        "max",
        "errors",
    ]);
    let several_jobs = p.by_job.len() > 1;
    if several_jobs {
        for (job, b) in &p.by_job {
            for (op, s) in &b.by_op {
                table.add_row(row(&format!("{job} {op}"), s));
            }
        }
    }
    for (op, s) in &p.by_op {
        let label = if several_jobs {
            format!("all {op}")
        } else {
            op.clone()
        };
        table.add_row(row(&label, s));
    }
    if p.by_op.len() > 1 {
        table.add_row(row("total", &p.total));
    }
    for (i, col) in table.column_iter_mut().enumerate() {
        if i > 0 {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    let _ = writeln!(out, "{table}");
    for e in &p.errors {
        let _ = writeln!(
            out,
            "  errors: {} {} {} x{} (first at offset {}) on {}",
            e.job, e.op, e.kind, e.count, e.first_offset, e.host
        );
    }
    out
}

fn row(label: &str, s: &Summary) -> Vec<Cell> {
    let lat = |f: fn(&stormark_stats::Latency) -> u64| {
        s.latency_ns
            .as_ref()
            .map_or_else(|| "-".to_string(), |l| format_latency(f(l)))
    };
    vec![
        Cell::new(label),
        Cell::new(format_iops(s.iops)),
        Cell::new(format_bw(s.bw_bytes_per_s)),
        Cell::new(lat(|l| l.min)),
        Cell::new(s.latency_ns.as_ref().map_or_else(
            || "-".to_string(),
            |l| format_latency(l.mean.round() as u64),
        )),
        Cell::new(lat(|l| l.p50)),
        Cell::new(lat(|l| l.p90)),
        Cell::new(lat(|l| l.p99)),
        Cell::new(lat(|l| l.p999)),
        Cell::new(lat(|l| l.p9999)),
        Cell::new(lat(|l| l.max)),
        Cell::new(s.errors),
    ]
}
