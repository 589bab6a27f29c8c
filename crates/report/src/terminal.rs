//! The summary printed at the end of a run.

use std::fmt::Write as _;

use comfy_table::{presets, Cell, CellAlignment, Table};
use stormark_stats::{
    mean_over, samples_within, Host, Phase, Results, RunStatus, Severity, Summary,
};

use crate::{format_bw, format_figure, format_iops, format_latency, Render};

/// What the host did during a phase, from its samples: CPU shares and the busiest disk, as
/// `iostat` would show them. `None` without samples.
fn host_line(p: &Phase, host: &Host, name_it: bool) -> Option<String> {
    let w = samples_within(&host.samples, p.start_offset_ns, p.duration_ns);
    let idle = mean_over(&w, |s| s.cpu.map(|c| c.idle_pct))?;
    let iowait = mean_over(&w, |s| s.cpu.map(|c| c.iowait_pct)).unwrap_or(0.0);
    let mut line = format!(
        "  host{}: cpu {:.0}% busy, iowait {:.0}%",
        if name_it {
            format!(" {}", host.name)
        } else {
            String::new()
        },
        100.0 - idle - iowait,
        iowait
    );
    let mut disks: Vec<(&String, f64)> = w
        .iter()
        .flat_map(|s| s.disks.keys())
        .map(|name| {
            let util = mean_over(&w, |s| s.disks.get(name).map(|d| d.util_pct)).unwrap_or(0.0);
            (name, util)
        })
        .collect();
    disks.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    disks.dedup_by(|a, b| a.0 == b.0);
    // The host's own target device first (hosts sharing a kernel see every disk: each names
    // its own), else the busiest.
    let own = host.target.as_ref().and_then(|t| t.device.as_deref());
    if let Some(i) = own.and_then(|d| disks.iter().position(|(n, _)| n.as_str() == d)) {
        let mine = disks.remove(i);
        disks.insert(0, mine);
    }
    if let Some((name, util)) = disks.first() {
        let d = |f: fn(&stormark_stats::DiskSample) -> Option<f64>| {
            mean_over(&w, |s| s.disks.get(name).and_then(f))
        };
        let iops = d(|x| Some(x.read_iops + x.write_iops)).unwrap_or(0.0);
        let bw = d(|x| Some(x.read_bytes_per_s + x.write_bytes_per_s)).unwrap_or(0.0);
        let _ = write!(
            line,
            "; {name}: util {util:.0}%, {} IOPS, {}, queue {:.1}",
            format_iops(iops),
            format_bw(bw),
            d(|x| Some(x.queue_size)).unwrap_or(0.0)
        );
        for (label, v) in [
            ("r_await", d(|x| x.r_await_ms)),
            ("w_await", d(|x| x.w_await_ms)),
        ] {
            if let Some(ms) = v {
                let _ = write!(line, ", {label} {}", format_figure("x_ns", ms * 1e6));
            }
        }
    }
    // Each NFS mount of the kernel's client the phase used, as nfsiostat shows it.
    let mut mounts: Vec<&String> = w.iter().flat_map(|s| s.nfs.keys()).collect();
    mounts.sort();
    mounts.dedup();
    for mount in mounts {
        let n = |f: fn(&stormark_stats::NfsSample) -> f64| {
            mean_over(&w, |s| s.nfs.get(mount).map(f)).unwrap_or(0.0)
        };
        let _ = write!(
            line,
            "; nfs {mount}: {} RPC/s, {:.1} retrans/s",
            format_iops(n(|x| x.ops_per_s)),
            n(|x| x.retrans_per_s)
        );
        for op in ["READ", "WRITE", "COMMIT", "GETATTR"] {
            let rtt = mean_over(&w, |s| {
                s.nfs
                    .get(mount)
                    .and_then(|x| x.by_op.get(op))
                    .map(|o| o.rtt_ms)
            });
            if let Some(ms) = rtt {
                let _ = write!(line, ", {op} rtt {}", format_figure("x_ns", ms * 1e6));
            }
        }
    }
    line.push('\n');
    Some(line)
}

/// Whether a phase is a search step or a curve or sweep point, shown in its own table.
fn shaped(r: &Results, p: &Phase) -> bool {
    let name = p.name.as_str();
    matches!(
        p.kind(),
        stormark_stats::PhaseKind::Pair
            | stormark_stats::PhaseKind::PairRtt
            | stormark_stats::PhaseKind::AllPairs
    ) && r.mesh.is_some()
        || r.search
            .as_ref()
            .is_some_and(|s| s.steps.iter().any(|x| x.phase == name))
        || r.curve
            .as_ref()
            .is_some_and(|c| c.points.iter().any(|x| x.phase == name))
        || r.sweep
            .as_ref()
            .is_some_and(|s| s.points.iter().any(|x| x.phase == name))
}

/// A table per phase (IOPS, bandwidth, latency percentiles, errors per operation), then notes,
/// findings and the status: the whole document at once (`stormark report`). A run prints the
/// same in parts as it goes: [`target_line`] before any load, [`phase_table`] as each phase
/// ends, [`summary_after_phases`] at the end.
pub struct Terminal;

impl Render for Terminal {
    fn render(&self, r: &Results) -> String {
        let mut out = String::new();
        out.push_str(&targets_line(r.target.as_ref(), &r.targets));
        for phase in r.phases.iter().filter(|p| !shaped(r, p)) {
            // Search steps, curve and sweep points: one row each in their own table below;
            // a mesh's pairs in its matrices.
            out.push_str(&phase_text(phase, &failed_in(r, phase)));
            for line in host_lines(r, phase) {
                out.push_str(&line);
            }
        }
        out.push_str(&after_phases(r));
        out
    }
}

/// The first line of a run's output: what it measures.
pub fn target_line(t: &stormark_stats::Target) -> String {
    format!("target: {} ({})\n", t.path, t.kind)
}

/// The line naming what a run measures: its target, or each of its targets when it has
/// several (empty without one).
pub fn targets_line(
    target: Option<&stormark_stats::Target>,
    targets: &[stormark_stats::Target],
) -> String {
    if targets.len() > 1 {
        let all: Vec<String> = targets
            .iter()
            .map(|t| format!("{} ({})", t.path, t.kind))
            .collect();
        format!("targets: {}\n", all.join(", "))
    } else {
        target.map(target_line).unwrap_or_default()
    }
}

/// One phase's table as it ends (`failed`: the hosts that failed in it), the same as
/// [`Terminal`] shows it; the hosts' counters come at the end, with the samples.
pub fn phase_table(p: &Phase, failed: &[&str]) -> String {
    phase_text(p, failed)
}

/// A search step, a curve or sweep point, a mesh's pair: one line as it ends (the shape's
/// table at the end has every row).
pub fn step_line(p: &Phase) -> String {
    let t = &p.total;
    let lat = |f: fn(&stormark_stats::Latency) -> u64| {
        t.latency_ns
            .as_ref()
            .map_or_else(|| "-".to_string(), |l| format_latency(f(l)))
    };
    format!(
        "{}  {:.1} s  {} {}  {}  p50 {}  p99 {}  {} errors\n",
        p.name,
        p.duration_ns as f64 / 1e9,
        format_iops(t.iops),
        if objects(p) { "ops/s" } else { "IOPS" },
        format_bw(t.bw_bytes_per_s),
        lat(|l| l.p50),
        lat(|l| l.p99),
        t.errors
    )
}

/// Whether a phase is said in one line as it ends ([`step_line`]: a search step, a curve or
/// sweep point, a mesh's pair), its shape's table coming at the end, rather than by a table of
/// its own ([`phase_table`]).
pub fn is_step(p: &Phase) -> bool {
    !matches!(
        p.kind(),
        stormark_stats::PhaseKind::Prepare | stormark_stats::PhaseKind::Run
    )
}

/// What the terminal prints at the end of a run whose target and phase tables were printed as
/// they came: what each host did during each phase (its counters are read once the run is
/// over), the search, curve, sweep or mesh tables, repetitions, expectations, notes, findings
/// and the status.
pub fn summary_after_phases(r: &Results) -> String {
    let mut hosts = String::new();
    for phase in r.phases.iter().filter(|p| !shaped(r, p)) {
        let rep = phase
            .repetition
            .map_or_else(String::new, |k| format!(" (repetition {k})"));
        for line in host_lines(r, phase) {
            let _ = writeln!(hosts, "  {}{rep}: {}", phase.name, line.trim());
        }
    }
    let mut out = String::new();
    if !hosts.is_empty() {
        out.push_str("\nhosts during each phase:\n");
        out.push_str(&hosts);
    }
    out.push_str(&after_phases(r));
    out
}

/// The hosts that failed in `phase`.
fn failed_in<'r>(r: &'r Results, phase: &Phase) -> Vec<&'r str> {
    r.hosts
        .iter()
        .filter(|h| h.failure.as_ref().is_some_and(|f| f.phase == phase.name))
        .map(|h| h.name.as_str())
        .collect()
}

/// Each host's line of `phase` (many hosts: the slowest and the failed alone).
fn host_lines(r: &Results, phase: &Phase) -> Vec<String> {
    let failed = failed_in(r, phase);
    let shown: Option<Vec<&str>> = (phase.by_host.len() > crate::fleet::MANY_HOSTS).then(|| {
        crate::fleet::by_rate(phase, false)
            .into_iter()
            .take(crate::fleet::SLOWEST)
            .map(|(h, _)| h)
            .chain(failed.iter().copied())
            .collect()
    });
    r.hosts
        .iter()
        .filter(|host| {
            shown
                .as_ref()
                .is_none_or(|s| s.contains(&host.name.as_str()))
        })
        .filter_map(|host| host_line(phase, host, r.hosts.len() > 1))
        .collect()
}

/// Everything [`Terminal`] says after the phases' tables.
fn after_phases(r: &Results) -> String {
    let mut out = String::new();
    if let Some(s) = &r.search {
        out.push_str(&crate::shapes::search_text(r, s));
    }
    if let Some(c) = &r.curve {
        out.push_str(&crate::shapes::curve_text(r, c));
    }
    if let Some(s) = &r.sweep {
        out.push_str(&crate::shapes::sweep_text(r, s));
    }
    out.push_str(&crate::net::net_text(r));
    out.push_str(&crate::net::mesh_text(r));
    if !r.repetitions.is_empty() {
        out.push_str(&repetitions_text(r));
    }
    out.push_str(&crate::alltests::text(r));
    out.push_str(&crate::alltests::ends_text(r));
    if !r.expectations.is_empty() {
        out.push_str("\nexpected vs measured:\n");
        for e in &r.expectations {
            let _ = writeln!(
                out,
                "  {:<10} {:<16} expected {:>10}  measured {:>10}  {:>5.2}×  {}",
                e.phase,
                e.figure,
                format_figure(&e.figure, e.expected),
                format_figure(&e.figure, e.measured),
                e.ratio,
                if e.met { "met" } else { "MISSED" }
            );
        }
    }
    if !r.notes.is_empty() {
        out.push_str("notes:\n");
        for n in &r.notes {
            let _ = writeln!(out, "  - {n}");
        }
    }
    if !r.findings.is_empty() {
        out.push_str("findings:\n");
        out.push_str(&findings_text(&r.findings));
    }
    let status = match r.status {
        RunStatus::Ok => "ok",
        RunStatus::Failed => "failed",
        RunStatus::Interrupted => "interrupted",
        RunStatus::Running => "running",
    };
    let _ = writeln!(out, "{}", verdict(r).line());
    match &r.failure {
        // A failure that only says the status again ("interrupted: interrupted").
        Some(why) if why.trim() != status => {
            let _ = writeln!(out, "status: {status}: {why}");
        }
        _ => {
            let _ = writeln!(out, "status: {status}");
        }
    }
    out
}

/// Each figure over the repetitions: mean, 95% confidence interval, CV, min and max.
fn repetitions_text(r: &Results) -> String {
    let n = r.repetitions.first().map_or(0, |x| x.stats.n);
    let mut table = Table::new();
    table.load_preset(presets::UTF8_HORIZONTAL_ONLY);
    table.set_header(["", "figure", "mean", "95% CI", "CV", "min", "max"]);
    for x in &r.repetitions {
        if !matches!(
            x.figure.as_str(),
            "iops" | "bw_bytes_per_s" | "mean_ns" | "p50_ns" | "p99_ns"
        ) {
            continue;
        }
        let f = |v: f64| format_figure(&x.figure, v);
        table.add_row(vec![
            Cell::new(format!("{} {}", x.phase, x.op)),
            Cell::new(
                x.figure
                    .trim_end_matches("_ns")
                    .trim_end_matches("_bytes_per_s"),
            ),
            Cell::new(f(x.stats.mean)),
            Cell::new(format!(
                "{} – {}",
                f(x.stats.ci95.0.max(0.0)),
                f(x.stats.ci95.1)
            )),
            Cell::new(format!("{:.1}%", 100.0 * x.stats.cv)),
            Cell::new(f(x.stats.min)),
            Cell::new(f(x.stats.max)),
        ]);
    }
    for (i, col) in table.column_iter_mut().enumerate() {
        if i > 1 {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    format!("\nover {n} repetitions:\n{table}\n")
}

/// Orders host names as people do: `node2` before `node10`.
fn natural(a: &str, b: &str) -> std::cmp::Ordering {
    fn parts(s: &str) -> Vec<(bool, &str)> {
        let mut out = Vec::new();
        let mut start = 0;
        let bytes = s.as_bytes();
        for i in 1..=bytes.len() {
            if i == bytes.len() || bytes[i].is_ascii_digit() != bytes[start].is_ascii_digit() {
                out.push((bytes[start].is_ascii_digit(), &s[start..i]));
                start = i;
            }
        }
        out
    }
    let (pa, pb) = (parts(a), parts(b));
    for (x, y) in pa.iter().zip(&pb) {
        let o = match (x, y) {
            ((true, n), (true, m)) => n
                .trim_start_matches('0')
                .len()
                .cmp(&m.trim_start_matches('0').len())
                .then_with(|| n.trim_start_matches('0').cmp(m.trim_start_matches('0'))),
            ((_, n), (_, m)) => n.cmp(m),
        };
        if o != std::cmp::Ordering::Equal {
            return o;
        }
    }
    pa.len().cmp(&pb.len()).then_with(|| a.cmp(b))
}

/// Findings as the terminal says them, one per line with its advice once per code, most
/// severe first (past three phases of one code, the rest counted): the one printer of
/// findings, for every command.
pub fn findings_text(findings: &[stormark_stats::Finding]) -> String {
    let mut out = String::new();
    let mut sorted: Vec<_> = findings.iter().collect();
    // Most severe first; one code's findings together, in the order codes first came.
    let first = |code: &str| findings.iter().position(|f| f.code == code);
    sorted.sort_by_key(|f| (std::cmp::Reverse(f.severity), first(&f.code)));
    // The same finding in several phases: the advice is said once, and past a few
    // phases (a search, a sweep) the rest are counted, not listed.
    const SHOWN_PER_CODE: usize = 3;
    let mut seen: std::collections::BTreeMap<&str, usize> = Default::default();
    for f in &sorted {
        *seen.entry(f.code.as_str()).or_default() += 1;
    }
    let mut said: std::collections::BTreeMap<&str, usize> = Default::default();
    for f in sorted {
        let n = said.entry(f.code.as_str()).or_default();
        *n += 1;
        let total = seen[f.code.as_str()];
        if *n > SHOWN_PER_CODE {
            continue;
        }
        let severity = match f.severity {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "CRITICAL",
        };
        let _ = writeln!(out, "  {severity} [{}] {}", f.code, f.message);
        if *n == 1 {
            let _ = writeln!(out, "    advice: {}", f.advice);
        }
        if *n == SHOWN_PER_CODE && total > SHOWN_PER_CODE {
            let more = total - SHOWN_PER_CODE;
            // What differs between them: the hosts of one phase (a fleet), the phases of one
            // host (a search), or both.
            let distinct = |key: &str| {
                findings
                    .iter()
                    .filter(|g| g.code == f.code)
                    .map(|g| g.evidence.get(key).and_then(|v| v.as_str()))
                    .collect::<std::collections::BTreeSet<_>>()
                    .len()
            };
            let more = match (distinct("host") > 1, distinct("phase") > 1) {
                (true, false) => format!("on {more} more hosts"),
                (true, true) => format!("{more} more, on other hosts and phases"),
                _ => format!("in {more} more phases"),
            };
            let _ = writeln!(out, "    (and {more}; every one is in --json)");
        }
    }
    out
}

/// Operations of objects (S3) or of metadata per second are not I/Os.
fn objects(p: &Phase) -> bool {
    p.jobs
        .iter()
        .any(|j| matches!(j.engine.as_str(), "s3" | "meta" | "net"))
        || p.by_op
            .keys()
            .any(|k| matches!(k.as_str(), "get" | "put" | "head" | "delete" | "list"))
}

fn phase_text(p: &Phase, failed: &[&str]) -> String {
    let mut out = String::new();
    let jobs: Vec<String> = p.jobs.iter().map(job_line).collect();
    let rep = p
        .repetition
        .map_or_else(String::new, |k| format!(" (repetition {k})"));
    let _ = writeln!(
        out,
        "\n{}{rep}  {:.1} s  {}",
        p.name,
        p.duration_ns as f64 / 1e9,
        jobs.join(", ")
    );
    let mut table = Table::new();
    table.load_preset(presets::UTF8_HORIZONTAL_ONLY);
    let objects = objects(p);
    table.set_header([
        "",
        if objects { "ops/s" } else { "IOPS" },
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
    let several_hosts = p.by_host.len() > 1;
    // Many hosts: their distribution and the slowest, after the table, not a row each.
    let many_hosts = p.by_host.len() > crate::fleet::MANY_HOSTS;
    if several_hosts && !many_hosts {
        // Per node (one client per node): each host's own figures, exact from its histograms.
        let mut hosts: Vec<_> = p.by_host.iter().collect();
        hosts.sort_by(|a, b| natural(a.0, b.0));
        for (host, b) in hosts {
            let mark = match (failed.contains(&host.as_str()), b.ran_ns) {
                // Its rates are over the time it ran, and the line says so.
                (true, Some(ran)) => format!(" (FAILED after {:.1} s)", ran as f64 / 1e9),
                (true, None) => " (FAILED)".to_string(),
                (false, _) => String::new(),
            };
            for (op, s) in b.by_op.iter().filter(|(op, _)| *op != "connect") {
                table.add_row(row(&format!("{host}{mark} {op}"), s));
            }
        }
    }
    // Several targets (issue 55): each target's own figures, then its jobs where it has more.
    for (target, b) in &p.by_target {
        for (op, s) in b.by_op.iter().filter(|(op, _)| *op != "connect") {
            table.add_row(row(&format!("{target} {op}"), s));
        }
    }
    if several_jobs && p.by_job.len() > p.by_target.len() {
        for (job, b) in &p.by_job {
            for (op, s) in b.by_op.iter().filter(|(op, _)| *op != "connect") {
                table.add_row(row(&format!("{job} {op}"), s));
            }
        }
    }
    // Connections made (S3) are not operations of the workload: after the total.
    let workload_ops = p.by_op.keys().filter(|op| *op != "connect").count();
    op_rows(&mut table, p, several_hosts, several_jobs);
    if workload_ops > 1 {
        table.add_row(row("total", &p.total));
    }
    if let Some(c) = p.by_op.get("connect") {
        // A count, not a rate of the workload: the latency columns are the connect times.
        let mut cells = row(&format!("connections made: {}", c.ops), c);
        cells[1] = Cell::new("-");
        cells[2] = Cell::new("-");
        table.add_row(cells);
    }
    for (i, col) in table.column_iter_mut().enumerate() {
        if i > 0 {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    let _ = writeln!(out, "{table}");
    if let Some(v) = &p.verify {
        let _ = writeln!(out, "  verify: {}", crate::verified_words(v));
    }
    if let Some(r) = &p.reached {
        let _ = writeln!(out, "  {}", crate::reached_words(r));
    }
    if many_hosts {
        let bytes = p.total.ops > 0 && p.total.bytes / p.total.ops >= 64 << 10;
        out.push_str(&crate::fleet::summary(p, bytes));
    }
    for e in &p.errors {
        // Requests over the network (S3) have no offset to name.
        let networked = e.kind.starts_with("http-")
            || [
                "throttled",
                "timeout",
                "reset",
                "refused",
                "network",
                "interrupted",
            ]
            .contains(&e.kind.as_str());
        let at = if networked {
            String::new()
        } else {
            format!(" (first at offset {})", e.first_offset)
        };
        let _ = writeln!(
            out,
            "  errors: {} {} {} x{}{at} on {}",
            e.job, e.op, e.kind, e.count, e.host
        );
    }
    out
}

/// A job as the phase's heading names it: its engine, workers and depth (connections,
/// streams or workers for S3, net and meta jobs).
fn job_line(j: &stormark_stats::PhaseJob) -> String {
    if matches!(j.engine.as_str(), "s3" | "net" | "meta") {
        let (what, n) = match j.engine.as_str() {
            "s3" => ("connection", j.workers),
            "net" => ("stream", j.workers),
            _ => ("worker", j.workers),
        };
        return format!(
            "{} ({}, {n} {what}{})",
            j.name,
            j.engine,
            if n == 1 { "" } else { "s" }
        );
    }
    format!(
        "{} ({}, {}, {} worker{} x iodepth {})",
        j.name,
        j.engine,
        if j.direct { "direct" } else { "buffered" },
        j.workers,
        if j.workers == 1 { "" } else { "s" },
        j.iodepth
    )
}

/// A row per operation of the whole phase (with its service time in an open loop and its
/// first byte for object reads), labelled beside the hosts' and jobs' rows.
fn op_rows(table: &mut Table, p: &Phase, several_hosts: bool, several_jobs: bool) {
    for (op, s) in p.by_op.iter().filter(|(op, _)| *op != "connect") {
        let label = match (several_hosts, several_jobs) {
            (true, _) => format!("system {op}"),
            (false, true) => format!("all {op}"),
            (false, false) => op.clone(),
        };
        table.add_row(row(&label, s));
        if s.service_latency_ns.is_some() {
            // Open loop: the latency above counts from each I/O's schedule; this is the time
            // from submission alone.
            let service = Summary {
                latency_ns: s.service_latency_ns,
                ..s.clone()
            };
            table.add_row(row(&format!("{label} (service time)"), &service));
        }
        if s.first_byte_latency_ns.is_some() {
            // Object reads: the time to the first byte (the service's own time), beside the
            // time to the last above (which adds the transfer).
            let first = Summary {
                latency_ns: s.first_byte_latency_ns,
                bw_bytes_per_s: 0.0,
                ..s.clone()
            };
            table.add_row(row(&format!("{label} (first byte)"), &first));
        }
    }
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

#[cfg(test)]
mod tests;

/// The document's verdict: as written, or (a document written before verdicts) from its
/// findings, settings and status.
pub fn verdict(r: &Results) -> stormark_stats::Validity {
    r.verdict
        .clone()
        .unwrap_or_else(|| stormark_stats::validity_of(r))
}
