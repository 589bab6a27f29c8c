//! What people paste into papers: IOR's "Summary of all tests" (per phase and operation over
//! `--repeat`'s repetitions or a sweep's points: max, min, mean and standard deviation of the
//! bandwidth and the operations a second, with the row's parameters), and elbencho's first
//! done / last done per phase with its CPU. One set of rows, rendered for the terminal,
//! Markdown and CSV.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use stormark_stats::{Done, Phase, Results};

use crate::format_bw;

/// Max, min, mean and standard deviation (over n−1; 0 for one value).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// The largest.
    pub max: f64,
    /// The smallest.
    pub min: f64,
    /// The mean.
    pub mean: f64,
    /// The sample standard deviation.
    pub sd: f64,
}

impl Spread {
    fn of(v: &[f64]) -> Spread {
        let n = v.len().max(1) as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = if v.len() > 1 {
            v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        Spread {
            max: v.iter().copied().fold(f64::MIN, f64::max),
            min: v.iter().copied().fold(f64::MAX, f64::min),
            mean,
            sd: var.sqrt(),
        }
    }
}

/// One row of the summary: a phase's operation over its repetitions.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The phase, as named without its repetition.
    pub phase: String,
    /// `read`, `write`, ... or `all`.
    pub op: String,
    /// The pattern (`rw`), as the job says it.
    pub rw: String,
    /// Block size, as the job (or the sweep point) says it.
    pub bs: String,
    /// I/Os in flight per worker.
    pub qd: u32,
    /// Workers, over every job of the phase.
    pub workers: u32,
    /// How many values: repetitions.
    pub n: usize,
    /// Bytes a second.
    pub bw: Spread,
    /// Operations a second.
    pub iops: Spread,
}

/// A phase's operation over the repetitions: bandwidths, rates, and the first phase of them.
type Values<'r> = (Vec<f64>, Vec<f64>, &'r Phase);

/// The rows of `r`: with `--repeat` or a sweep, one per measured phase and operation (every
/// operation, and `all` where a phase has several); none otherwise.
pub fn rows(r: &Results) -> Vec<Row> {
    let repeated = r.phases.iter().any(|p| p.repetition.is_some());
    if !repeated && r.sweep.is_none() {
        return Vec::new();
    }
    // Per phase and operation, in the order first seen: each repetition's figures.
    let mut order: Vec<(String, String)> = Vec::new();
    let mut got: BTreeMap<(String, String), Values<'_>> = BTreeMap::new();
    for p in r.phases.iter().filter(|p| p.measured()) {
        let mut ops: Vec<(&str, &stormark_stats::Summary)> =
            p.by_op.iter().map(|(o, s)| (o.as_str(), s)).collect();
        if ops.len() > 1 {
            ops.push(("all", &p.total));
        }
        for (op, s) in ops {
            let key = (p.name.clone(), op.to_string());
            let e = got.entry(key.clone()).or_insert_with(|| {
                order.push(key);
                (Vec::new(), Vec::new(), p)
            });
            e.0.push(s.bw_bytes_per_s);
            e.1.push(s.iops);
        }
    }
    order
        .into_iter()
        .filter_map(|key| {
            let (bw, iops, p) = got.remove(&key)?;
            let (rw, bs) = params(r, p);
            Some(Row {
                phase: key.0,
                op: key.1,
                rw,
                bs,
                qd: p.jobs.iter().map(|j| j.iodepth).max().unwrap_or(0),
                workers: p.jobs.iter().map(|j| j.workers).sum(),
                n: bw.len(),
                bw: Spread::of(&bw),
                iops: Spread::of(&iops),
            })
        })
        .collect()
}

/// The pattern and block size of phase `p`: its jobs' keys in the document's `spec`, a sweep
/// point's block size over them.
fn params(r: &Results, p: &Phase) -> (String, String) {
    let keys = |k: &str| -> String {
        let mut vals: Vec<String> = p
            .jobs
            .iter()
            .filter_map(|j| {
                r.spec
                    .jobs
                    .iter()
                    .find(|s| s.get("name") == Some(&j.name))
                    .or(r.spec.jobs.first().filter(|_| r.spec.jobs.len() == 1))
                    .and_then(|s| s.get(k).cloned())
            })
            .collect();
        vals.dedup();
        if vals.is_empty() {
            "-".into()
        } else {
            vals.join("+")
        }
    };
    let swept_bs = r
        .sweep
        .as_ref()
        .and_then(|s| s.points.iter().find(|pt| pt.phase == p.name))
        .and_then(|pt| pt.values.get("bs"))
        .map(|b| stormark_spec::units::format_size(*b));
    (keys("rw"), swept_bs.unwrap_or_else(|| keys("bs")))
}

const MIB: f64 = 1024.0 * 1024.0;

/// IOR's table for the terminal: MiB/s and operations a second, a row per phase and
/// operation; empty without rows.
pub fn text(r: &Results) -> String {
    let rows = rows(r);
    if rows.is_empty() {
        return String::new();
    }
    let mut out =
        String::from("\nsummary of all tests (per phase and operation, over the repetitions):\n");
    let _ = writeln!(
        out,
        "  {:<14} {:<6} {:<10} {:>6} {:>3} {:>7} {:>2} {:>9} {:>9} {:>9} {:>8} {:>10} {:>10} {:>10} {:>9}",
        "phase", "op", "rw", "bs", "qd", "workers", "n", "max MiB/s", "min MiB/s", "mean MiB/s", "sd", "max ops/s", "min ops/s", "mean ops/s", "sd"
    );
    for x in rows {
        let _ = writeln!(
            out,
            "  {:<14} {:<6} {:<10} {:>6} {:>3} {:>7} {:>2} {:>9.1} {:>9.1} {:>10.1} {:>8.1} {:>10.1} {:>10.1} {:>10.1} {:>9.1}",
            x.phase, x.op, x.rw, x.bs, x.qd, x.workers, x.n,
            x.bw.max / MIB, x.bw.min / MIB, x.bw.mean / MIB, x.bw.sd / MIB,
            x.iops.max, x.iops.min, x.iops.mean, x.iops.sd
        );
    }
    out
}

/// The same as a Markdown section; empty without rows.
pub fn markdown(r: &Results) -> String {
    let rows = rows(r);
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n## Summary of all tests\n\nPer phase and operation over the repetitions (standard deviation over n−1).\n\n| phase | op | rw | bs | qd | workers | n | max MiB/s | min MiB/s | mean MiB/s | sd MiB/s | max IOPS | min IOPS | mean IOPS | sd IOPS |\n|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for x in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
            crate::markdown::cell(&x.phase),
            crate::markdown::cell(&x.op),
            crate::markdown::cell(&x.rw),
            crate::markdown::cell(&x.bs),
            x.qd,
            x.workers,
            x.n,
            x.bw.max / MIB,
            x.bw.min / MIB,
            x.bw.mean / MIB,
            x.bw.sd / MIB,
            x.iops.max,
            x.iops.min,
            x.iops.mean,
            x.iops.sd
        );
    }
    out
}

/// The same as CSV, figures raw (bytes and operations a second); `None` without rows.
pub fn csv(r: &Results) -> Option<String> {
    let rows = rows(r);
    if rows.is_empty() {
        return None;
    }
    let mut out = String::from("phase,op,rw,bs,qd,workers,n,bw_max,bw_min,bw_mean,bw_sd,iops_max,iops_min,iops_mean,iops_sd\n");
    for x in rows {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            crate::csv::field(&x.phase),
            crate::csv::field(&x.op),
            crate::csv::field(&x.rw),
            crate::csv::field(&x.bs),
            x.qd,
            x.workers,
            x.n,
            x.bw.max,
            x.bw.min,
            x.bw.mean,
            x.bw.sd,
            x.iops.max,
            x.iops.min,
            x.iops.mean,
            x.iops.sd
        );
    }
    Some(out)
}

/// A first or last done as the terminal and Markdown say it: its time and rate.
fn end(d: &Done, first: bool) -> String {
    if d.time_bound {
        return "n/a (time-bound)".into();
    }
    let at = if first { d.first } else { d.last };
    format!(
        "{:.3} s, {}",
        at.ns as f64 / 1e9,
        format_bw(at.bw_bytes_per_s)
    )
}

/// Each phase's line of first done, last done and CPU (`phase (repetition k)`), with a line a
/// host where there are several; empty when no phase knows any.
fn ends_lines(r: &Results) -> Vec<(String, String, String, String)> {
    let mut lines = Vec::new();
    for p in r.phases.iter().filter(|p| p.measured()) {
        if p.done.is_none() && p.cpu.is_none() {
            continue;
        }
        let name = match p.repetition {
            Some(k) => format!("{} (repetition {k})", p.name),
            None => p.name.clone(),
        };
        let cpu = |c: Option<&stormark_stats::PhaseCpu>| {
            c.map_or_else(
                || "-".to_string(),
                |c| match c.own_pct {
                    Some(own) => format!("{:.0}% (stormark {:.0}%)", c.busy_pct, own),
                    None => format!("{:.0}%", c.busy_pct),
                },
            )
        };
        let (first, last) = p
            .done
            .as_ref()
            .map_or(("-".into(), "-".into()), |d| (end(d, true), end(d, false)));
        lines.push((name.clone(), first, last, cpu(p.cpu.as_ref())));
        if let Some(d) = &p.done {
            for (host, hd) in &d.by_host {
                let hc = p.cpu.as_ref().and_then(|c| c.by_host.get(host));
                lines.push((
                    format!("  {name} {host}"),
                    end(hd, true),
                    end(hd, false),
                    cpu(hc),
                ));
            }
        }
    }
    lines
}

/// First done, last done and CPU per phase, for the terminal; empty when nothing is known.
pub fn ends_text(r: &Results) -> String {
    let lines = ends_lines(r);
    if lines.is_empty() {
        return String::new();
    }
    let mut out = String::from("\nfirst done / last done (time after the start, rate of every worker until then) and CPU (host user+system):\n");
    for (name, first, last, cpu) in lines {
        let _ = writeln!(
            out,
            "  {name:<24} first {first:<24} last {last:<24} cpu {cpu}"
        );
    }
    out
}

/// The same as a Markdown section; empty when nothing is known.
pub fn ends_markdown(r: &Results) -> String {
    let lines = ends_lines(r);
    if lines.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n## First done, last done and CPU\n\nWhen the quickest and the slowest worker finished (the rate of every worker until then), and the hosts' CPU (user+system) over the phase.\n\n| phase | first done | last done | CPU |\n|---|--:|--:|--:|\n");
    for (name, first, last, cpu) in lines {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            crate::markdown::cell(name.trim()),
            crate::markdown::cell(&first),
            crate::markdown::cell(&last),
            crate::markdown::cell(&cpu)
        );
    }
    out
}
