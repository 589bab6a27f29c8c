//! `stormark run`: flags, job file or profile -> workload -> coordinator -> results.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use stormark_cluster::{Coordinator, Live, LocalAgent, Outcome, TargetOptions};
use stormark_report::{Json, LiveLine, Render, Terminal};
use stormark_spec::{profile, JobFile, JobOpts, Source, Workload, PROFILES};
use stormark_stats::Results;

use crate::cli::RunArgs;

/// A mistake in what the user asked for: exit 2, before any load.
#[derive(Debug)]
struct UserError(String);

impl std::fmt::Display for UserError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UserError {}

fn user(msg: impl Into<String>) -> anyhow::Error {
    UserError(msg.into()).into()
}

pub fn main(args: RunArgs) -> i32 {
    if args.list_profiles {
        for (name, about, _) in PROFILES {
            println!("{name:<12} {about}");
        }
        return 0;
    }
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            if e.downcast_ref::<UserError>().is_some() {
                2
            } else {
                1
            }
        }
    }
}

/// Builds the workload from a job file or profile plus flags.
fn workload(args: &RunArgs) -> Result<(Workload, Option<String>)> {
    let flags = args.workload_flags();
    let mut cli = JobOpts::default();
    for (key, value) in &flags {
        cli.set(key, value, Source::Flag)
            .map_err(|e| user(e.to_string()))?;
    }
    let file: JobFile = if let Some(path) = &args.job {
        let shown = path.display().to_string();
        if path.extension().is_some_and(|e| e == "fio") {
            return Err(user(format!(
                "--job {shown}: fio job files are not read yet; write the job as TOML (docs/job-files.md)"
            )));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| user(format!("--job {shown}: cannot read it: {e}")))?;
        stormark_spec::parse_job_file(&text, &shown).map_err(|e| user(e.to_string()))?
    } else if let Some(name) = &args.profile {
        profile(name).map_err(|e| user(e.to_string()))?
    } else if flags.is_empty() {
        profile("quick").expect("the quick profile ships with the binary")
    } else {
        JobFile::default()
    };
    let several = file.jobs.len() > 1;
    let sections = if file.jobs.is_empty() {
        vec![JobOpts::default()]
    } else {
        file.jobs.clone()
    };
    let mut jobs = Vec::new();
    for (i, section) in sections.iter().enumerate() {
        let opts = file.defaults.overlay(section).overlay(&cli);
        let default_name = if several {
            format!("job{}", i + 1)
        } else {
            format!(
                "{}-{}",
                opts.rw.map_or("read", |r| r.name()),
                opts.bs.map_or_else(|| "4k".to_string(), |b| b.to_string())
            )
        };
        let job = opts.resolve(&default_name).map_err(|e| {
            if several {
                user(format!(
                    "job {}: {e}",
                    opts.name.as_deref().unwrap_or(&default_name)
                ))
            } else {
                user(e.to_string())
            }
        })?;
        jobs.push(job);
    }
    let prepare = args.prepare || file.prepare.unwrap_or(false);
    let w = Workload::new(jobs, prepare).map_err(|e| user(e.to_string()))?;
    Ok((w, file.target))
}

fn check_json_path(path: &Path) -> Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !parent.is_dir() {
        return Err(user(format!(
            "--json {}: directory {} does not exist",
            path.display(),
            parent.display()
        )));
    }
    if path.is_dir() {
        return Err(user(format!(
            "--json {}: is a directory; give a file name such as results.json",
            path.display()
        )));
    }
    Ok(())
}

fn run(args: RunArgs) -> Result<i32> {
    let (workload, file_target) = workload(&args)?;
    if let Some(p) = &args.json {
        check_json_path(p)?;
    }
    let target = match args.target.clone().or(file_target.map(PathBuf::from)) {
        Some(t) => t,
        None => std::env::current_dir().context("cannot find the current directory")?,
    };
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        // A second Ctrl-C while stopping does nothing more: cleanup must finish.
        ctrlc::set_handler(move || stop.store(true, Ordering::Relaxed))
            .context("cannot install the Ctrl-C handler")?;
    }
    let opts = TargetOptions {
        path: target,
        keep: args.keep,
        reuse: args.reuse,
        allow_overwrite: args.allow_overwrite,
        allow_device_write: args.allow_device_write,
        force: args.force,
    };
    let agent = LocalAgent::new(opts).with_stop(stop.clone());
    let mut coordinator = Coordinator::new(vec![Box::new(agent)], stop.clone());
    let mut results = Results::new(std::env::args().collect());

    let show_live = !args.quiet && std::io::stderr().is_terminal();
    let mut line = LiveLine::new();
    let mut stderr = std::io::stderr();
    let outcome = coordinator.run(&workload, &mut results, &mut |event| {
        if !show_live {
            return;
        }
        let text = match event {
            Live::Second { phase, interval } => line.second(phase, interval),
            Live::PhaseDone { .. } => line.clear(),
            Live::PhaseStarted { .. } => return,
        };
        let _ = stderr.write_all(text.as_bytes());
        let _ = stderr.flush();
    });

    // The results file is written whatever happened.
    let mut write_failed = None;
    if let Some(path) = &args.json {
        if let Err(e) = std::fs::write(path, Json.render(&results)) {
            write_failed = Some(format!(
                "--json {}: cannot write results: {e}",
                path.display()
            ));
        }
    }
    if let Outcome::Refused(msg) = &outcome {
        bail!(UserError(msg.clone()));
    }
    print!("{}", Terminal.render(&results));
    if let Some(msg) = write_failed {
        eprintln!("error: {msg}");
        return Ok(1);
    }
    Ok(match outcome {
        Outcome::Completed if results.total_errors() == 0 => 0,
        _ => 1,
    })
}
