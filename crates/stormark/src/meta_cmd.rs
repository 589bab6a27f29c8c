//! `stormark meta`: metadata load (mdtest's operations) into the same results document as
//! storage runs: one phase per operation, its rate and the latency of every call.

use std::sync::atomic::Ordering;

use anyhow::{Context, Result};
use stormark_engine::{run_meta, Dir, MetaPhase, MetaSpec, META_OPS};
use stormark_report::{Html, Json, Output, Render, Terminal};
use stormark_spec::parse_size;
use stormark_stats::{Op, PhaseAccumulator, PhaseJob, PhaseKind, Results, RunStatus, WorkerKey};

use crate::cli::MetaArgs;
use crate::{usage, Ending};

/// The most items (directories and files over every worker) one run makes.
const MAX_ITEMS: u64 = 100_000_000;

fn count(flag: &str, text: &str, max: u32) -> Result<u32> {
    text.trim()
        .parse::<u32>()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| {
            usage(format!(
                "{flag} {text}: expected a whole number from 1 to {max}"
            ))
        })
}

/// The options, checked before anything is made.
fn spec(args: &MetaArgs) -> Result<MetaSpec> {
    let workers = count("--jobs", &args.jobs, 4096)?;
    let dirs = count("--dirs", &args.dirs, 1_000_000)?;
    let files = count("--files", &args.files, 100_000_000)?;
    let file_size = parse_size(&args.file_size)
        .filter(|s| *s <= 1 << 30)
        .ok_or_else(|| {
            usage(format!(
                "--file-size {}: expected a size from 0 to 1g, such as 0 or 4k",
                args.file_size
            ))
        })?;
    let ops = match &args.ops {
        // mdtest's: all but write, and read only with data to read.
        None => META_OPS
            .iter()
            .copied()
            .filter(|o| *o != Op::Write && (*o != Op::Read || file_size > 0))
            .collect(),
        Some(list) => {
            let mut ops = Vec::new();
            for name in list.split(',').map(str::trim) {
                let op = META_OPS
                    .iter()
                    .copied()
                    .find(|o| o.name() == name)
                    .ok_or_else(|| {
                        usage(format!(
                            "--ops {list}: {name:?} is not one of mkdir, create, write, stat, open, read, rename, delete, rmdir"
                        ))
                    })?;
                if !ops.contains(&op) {
                    ops.push(op);
                }
            }
            ops
        }
    };
    if file_size == 0 && ops.iter().any(|o| matches!(o, Op::Write | Op::Read)) {
        return Err(usage(
            "--ops write or read needs --file-size above 0, such as --file-size 4k",
        ));
    }
    let items = u64::from(workers) * u64::from(dirs) * u64::from(files);
    if items > MAX_ITEMS {
        return Err(usage(format!(
            "--jobs x --dirs x --files is {items}: at most {MAX_ITEMS} files in one run"
        )));
    }
    Ok(MetaSpec {
        workers,
        dirs,
        files,
        file_size,
        ops,
        shared: args.shared,
    })
}

/// A phase of the results from one operation.
fn phase(p: &MetaPhase, spec: &MetaSpec, host: &str) -> stormark_stats::Phase {
    let keys: Vec<WorkerKey> = (0..spec.workers)
        .map(|w| WorkerKey {
            host: 0,
            job: 0,
            worker: w,
        })
        .collect();
    let job = PhaseJob {
        name: format!("meta-{}", p.op.name()),
        engine: "meta".into(),
        direct: false,
        workers: spec.workers,
        iodepth: 1,
        working_set_bytes: u64::from(spec.workers)
            * u64::from(spec.dirs)
            * u64::from(spec.files)
            * spec.file_size,
        rate_iops: None,
    };
    let mut acc = PhaseAccumulator::new(p.op.name(), vec![host.to_string()], vec![job], &keys);
    for (k, seconds) in keys.iter().zip(&p.seconds) {
        for (t, s) in seconds.iter().enumerate() {
            acc.add(*k, t as u32, s);
        }
        acc.worker_done(*k, p.duration_ns);
    }
    let mut out = acc.finish(0, p.duration_ns);
    out.kind = Some(PhaseKind::Run);
    out
}

pub fn main(args: &MetaArgs) -> Result<Ending> {
    let spec = spec(args)?;
    let target = match &args.target {
        Some(t) => t.clone(),
        None => std::env::current_dir().context("cannot find the current directory")?,
    };
    let dir = Dir::open(&target).map_err(|e| {
        usage(format!(
            "{}: {e}; give an existing directory to work in",
            target.display()
        ))
    })?;
    if !dir.writable() {
        return Err(usage(format!(
            "{}: not writable by this user; give a directory stormark may create a tree in",
            target.display()
        )));
    }
    let json = match &args.json {
        Some(p) if p.as_os_str() == "-" => Some(Output::Stdout),
        Some(p) => Some(Output::check("--json", p, &[]).map_err(|e| usage(e.to_string()))?),
        None => None,
    };
    let html = crate::net_cmd::html_output(args.html.as_deref())?;
    let stop = crate::net_cmd::ctrl_c()?;
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into());
    let mut results = Results::new(crate::command_line());
    results.spec = serde_json::json!({
        "kind": "meta",
        "target": target.display().to_string(),
        "jobs": spec.workers,
        "dirs": spec.dirs,
        "files": spec.files,
        "file_size": spec.file_size,
        "ops": spec.ops.iter().map(|o| o.name()).collect::<Vec<_>>(),
        "shared": spec.shared,
    });
    let quiet = args.quiet;
    if !quiet {
        eprintln!(
            "meta: {} worker{} x {} director{} x {} files{}, {} mode, in {}",
            spec.workers,
            if spec.workers == 1 { "" } else { "s" },
            spec.dirs,
            if spec.dirs == 1 { "y" } else { "ies" },
            spec.files,
            if spec.file_size > 0 {
                format!(" of {}", stormark_spec::units::format_size(spec.file_size))
            } else {
                String::new()
            },
            if spec.shared {
                "shared-directory"
            } else {
                "unique-directory"
            },
            target.display()
        );
    }
    let started = std::time::Instant::now();
    let outcome = run_meta(&dir, &spec, &stop, &mut |p| {
        if !quiet {
            let secs = p.duration_ns as f64 / 1e9;
            let n: u64 = p
                .seconds
                .iter()
                .flatten()
                .filter_map(|s| s.ops().find(|(o, _)| *o == p.op).map(|(_, r)| r.ops))
                .sum();
            eprintln!(
                "  {:<7} {n} in {secs:.2} s: {:.0}/s",
                p.op.name(),
                n as f64 / secs.max(1e-9)
            );
        }
    });
    results.duration_ns = started.elapsed().as_nanos() as u64;
    let (phases, notes) = match outcome {
        Ok(o) => o,
        Err(e) => {
            results.status = RunStatus::Failed;
            results.failure = Some(format!("cannot make the tree in {}: {e}", target.display()));
            if let Some(out) = &json {
                let _ = out.write(Json.render(&results).as_bytes());
            }
            anyhow::bail!("cannot make the tree in {}: {e}", target.display());
        }
    };
    results.phases = phases.iter().map(|p| phase(p, &spec, &host)).collect();
    results.notes = notes;
    results.status = if stop.load(Ordering::Relaxed) {
        RunStatus::Interrupted
    } else if results.total_errors() > 0 || !results.notes.is_empty() {
        RunStatus::Failed
    } else {
        RunStatus::Ok
    };
    if !quiet || json.as_ref().is_none_or(|j| !matches!(j, Output::Stdout)) {
        eprint!("{}", Terminal.render(&results));
    }
    if let Some(out) = &json {
        out.write(Json.render(&results).as_bytes())
            .with_context(|| "writing the results document")?;
    }
    if let Some(out) = &html {
        out.write(Html.render(&results).as_bytes())
            .with_context(|| "writing the HTML report")?;
    }
    Ok(if results.status == RunStatus::Ok {
        Ending::Success
    } else {
        Ending::Failed
    })
}
