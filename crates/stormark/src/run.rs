//! `stormark run`: flags, job file or profile -> workload -> coordinator -> results.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use stormark_cluster::{
    Agent, AgentError, Coordinator, Fleet, LocalAgent, OnAgentFailure, Outcome, SeveralTargets,
    TargetOptions,
};
use stormark_report::{Html, Json, Output, Render, Terminal};
use stormark_spec::PROFILES;
use stormark_stats::{combine_repetitions, Results, RunStatus};

use stormark_plan::{
    check_agents, place_jobs, request, Plan, Request, RequestOptions, ShapeOptions,
};

use crate::cli::RunArgs;
use crate::watch::{Pace, Watch};
use crate::{usage, Ending, Usage};

pub fn main(args: RunArgs) -> Result<Ending> {
    if args.list_profiles {
        for (name, about, _) in PROFILES {
            outln!("{name:<12} {about}");
        }
        return Ok(Ending::Success);
    }
    run(args)
}

/// The command line as the plan reads it; the job file is read here.
fn request_options(
    args: &RunArgs,
    imported: Option<(String, stormark_spec::JobFile, Vec<String>)>,
) -> Result<RequestOptions> {
    // `stormark run FILE.fio`: a fio job file given as TARGET is the job file; so is a file of
    // another name written as fio writes job files (`job.ini`), when no flag or profile says
    // what to run on it: with them it is a file to measure. Flags that only bound a run (how
    // long, how much: `--time 1s`, `--size 16m`) say nothing of what to run: a fio user gives
    // them to a job file (`fio job.ini --runtime=1`), and a file to measure needs the others.
    let fio_target = args.target.as_ref().filter(|t| {
        args.job.is_none()
            && t.is_file()
            && (t.extension().is_some_and(|e| e == "fio")
                || (args.workload.0.iter().all(|(key, _)| BOUNDS.contains(key))
                    && args.profile.is_none()
                    && t.extension().is_none_or(|e| e != "toml")
                    && starts_as_fio(t)))
    });
    let job_file = match args.job.as_ref().or(fio_target) {
        Some(path) => {
            let shown = path.display().to_string();
            let text = crate::read_limited(path, JOB_FILE_LIMIT, "a job file")
                .map_err(|e| usage(format!("--job {shown}: cannot read it: {e}")))?;
            Some((shown, text))
        }
        None => None,
    };
    Ok(RequestOptions {
        flags: args.workload.0.clone(),
        on: args
            .on_sections
            .iter()
            .map(|s| (s.hosts.clone(), s.flags.clone()))
            .collect(),
        expect: args.shape.expect.clone(),
        shape: ShapeOptions {
            target_latency: args.shape.target_latency.clone(),
            curve: args.shape.curve.clone(),
            sweep: args.shape.sweep.clone(),
            step_time: args.shape.step_time.clone(),
            search_steps: args.shape.search_steps.clone(),
            repeat: args.shape.repeat.is_some(),
            mesh: args.shape.mesh,
        },
        job_file,
        profile: args.profile.clone(),
        // `stormark run job.fio D1 D2`: the job file, then its TARGETs.
        target: if fio_target.is_some() {
            args.more_targets.first().cloned()
        } else {
            args.target.clone()
        },
        more_targets: if fio_target.is_some() {
            args.more_targets.iter().skip(1).cloned().collect()
        } else {
            args.more_targets.clone()
        },
        lenient: args.lenient,
        imported,
        current_dir: std::env::current_dir().context("cannot find the current directory")?,
        auto: args.auto,
        distributed: args.distributed.agents.is_some()
            || args.distributed.agents_file.is_some()
            || args.distributed.launch.is_some(),
        reuse: args.reuse,
        prepare: args.prepare,
    })
}

/// The workload flags that only bound a run (its time, warm-up, start, bytes), which leave a
/// TARGET written as a fio job file a job file.
const BOUNDS: [&str; 5] = ["time", "ramp", "startdelay", "size", "io_total"];

/// The largest job file read (a job file is a few kilobytes; this bounds a mistaken path).
const JOB_FILE_LIMIT: u64 = 16 << 20;

/// Whether the regular file at `path` begins as a fio job file: its first 4 KiB alone are
/// read (a target of gigabytes is not read through), and nothing of it is shown.
fn starts_as_fio(path: &Path) -> bool {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(file) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
    else {
        return false;
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut head = Vec::with_capacity(4096);
    if file.take(4096).read_to_end(&mut head).is_err() {
        return false;
    }
    let text = String::from_utf8_lossy(&head);
    // A line cut at 4 KiB is not judged.
    let whole = match (head.len() == 4096, text.rsplit_once('\n')) {
        (true, Some((whole, _))) => whole,
        (true, None) => "",
        (false, _) => &text,
    };
    stormark_spec::looks_like_fio(whole)
}

/// The results document's output, checked before any load: never the target, a run
/// directory or the job file.
fn json_output(
    args: &RunArgs,
    target: &Path,
    targets: &[(PathBuf, bool)],
) -> Result<Option<Output>> {
    output("--json", args.output.json.as_deref(), args, target, targets)
}

/// An output of the run (`--json`, `--html`), checked as the results document is.
fn output(
    flag: &str,
    path: Option<&Path>,
    args: &RunArgs,
    target: &Path,
    targets: &[(PathBuf, bool)],
) -> Result<Option<Output>> {
    let Some(path) = path else {
        return Ok(None);
    };
    let mut avoid: Vec<&Path> = vec![target];
    avoid.extend(targets.iter().map(|(t, _)| t.as_path()));
    if let Some(job) = &args.job {
        avoid.push(job);
    }
    if let Some(json) = &args.output.json {
        if flag != "--json" && json.as_path() == path {
            return Err(usage(format!(
                "{flag} {}: the same file as --json; give another",
                path.display()
            )));
        }
    }
    crate::output(flag, Some(path), &avoid, flag == "--json")
}

/// Writes the document so far (after a phase), so that a crash loses at most the phase that
/// was running. Failures are left to the final write, which reports them.
fn write_partial(out: Option<&Output>, done: &[Results], current: &mut Results) {
    let Some(out) = out.filter(|o| !o.is_stdout()) else {
        return;
    };
    if done.is_empty() {
        // Written as it stands, said to be running: a thousand hosts' document not copied.
        let status = std::mem::replace(&mut current.status, RunStatus::Running);
        let _ = out.write_with(|w| Json.write_to(current, w));
        current.status = status;
        return;
    }
    let mut all = done.to_vec();
    all.push(current.clone());
    let mut doc = combine_repetitions(all);
    doc.status = RunStatus::Running;
    let _ = out.write_with(|w| Json.write_to(&doc, w));
}

/// `--print-fio` of a target fio reaches by an engine of its own (an iSCSI LUN, an NFS
/// share), not by a path: refused, naming fio's form for it, until it is printed so.
fn check_print_fio(args: &RunArgs, target: &Path) -> Result<()> {
    let shown = target.display().to_string();
    let kind = stormark_spec::Target::parse(target);
    let remote = [
        (
            matches!(kind, Ok(stormark_spec::Target::Lun(_))),
            "an iSCSI LUN",
            "ioengine=libiscsi and filename=iscsi\\://HOST[\\:PORT]/IQN/LUN, its colons escaped",
        ),
        (
            matches!(kind, Ok(stormark_spec::Target::Share(_))),
            "an NFS share",
            "ioengine=nfs and nfs_url=nfs://SERVER/EXPORT",
        ),
    ];
    match remote.iter().find(|r| args.print_fio && r.0) {
        Some((_, what, form)) => Err(usage(format!("--print-fio: {shown} is {what}, which --print-fio does not write as a fio job yet (fio runs one with {form}); leave out --print-fio"))),
        None => Ok(()),
    }
}

fn run(mut args: RunArgs) -> Result<Ending> {
    let imported = crate::ior::import(&mut args)?;
    let Request {
        mut workload,
        target,
        target_given,
        auto,
        expect,
        shape,
        notes,
        first_look,
        target_is_file,
        targets,
    } = request(&request_options(&args, imported)?).map_err(usage)?;
    if args.print_ior {
        outln!("{}", crate::ior::print(&args, &workload)?);
        return Ok(Ending::Success);
    }
    check_print_fio(&args, &target)?;
    if args.print_fio && targets.len() > 1 {
        return Err(usage(
            "--print-fio of a run of several targets is not written yet; give one TARGET",
        ));
    }
    if args.print_fio {
        stormark_spec::fio_check(&workload.jobs, &target.display().to_string())
            .map_err(|e| usage(format!("--print-fio: {e}")))?;
        outln!(
            "{}",
            stormark_spec::to_fio(
                &workload.jobs,
                &target.display().to_string(),
                target.is_dir() || (!target.exists() && !target_is_file)
            )
        );
        return Ok(Ending::Success);
    }
    let s3 = s3_access(&args, &workload)?;
    // A workload that touches no path (S3, null) sends each agent a target it ignores.
    let needs_target = workload.jobs.iter().any(|j| j.kind.needs_target());
    let json = json_output(&args, &target, &targets)?;
    let html = output(
        "--html",
        args.output.html.as_deref(),
        &args,
        &target,
        &targets,
    )?;
    let (repeat, policy) = repeat_and_policy(&args)?;
    // Before any agent is launched: Ctrl-C while they start ends the run in order.
    let (stop, abandon) = ctrl_c(workload.jobs.iter().any(|j| j.s3.is_some()))?;
    let mut agents = crate::fleet::agents(
        &args,
        &target,
        (target_given || !needs_target).then_some(&target),
        repeat,
        &stop,
    )?;
    let mut launched = agents.as_mut().and_then(|a| a.launched.take());
    let fleet = agents.as_ref().map(|a| &a.fleet);
    check_agents(&shape, fleet.map_or(1, |p| p.hosts.len()), fleet.is_some()).map_err(usage)?;
    place_jobs(&mut workload, fleet.map(|f| f.hosts.as_slice())).map_err(usage)?;
    // Streams between the agents: each at an address of its own, said before connecting.
    if let Some(f) = fleet.filter(|_| {
        workload
            .jobs
            .iter()
            .any(|j| j.net.as_ref().is_some_and(|n| n.to_agents()))
    }) {
        stormark_cluster::peer_ips(f.hosts.iter().map(|h| h.address.as_str())).map_err(usage)?;
    }
    let metrics = args
        .output
        .metrics_listen
        .map(|a| stormark_report::LiveMetrics::serve(a).map_err(crate::usage))
        .transpose()?;
    if !auto.is_empty() {
        let mut text = String::from("auto sizing:\n");
        for r in &auto {
            text.push_str(&format!("  {r}\n"));
        }
        if json.as_ref().is_some_and(Output::is_stdout) {
            eprint!("{text}");
        } else {
            out!("{text}");
        }
    }
    let to_stderr = json.as_ref().is_some_and(Output::is_stdout);
    let pace = Pace::choose(
        args.output.progress.as_deref(),
        args.output.quiet,
        std::io::stderr().is_terminal(),
    )
    .map_err(usage)?;
    let watch = std::cell::RefCell::new(Watch::new(metrics.as_deref(), to_stderr, pace));
    let opts = TargetOptions {
        path: target,
        keep: args.keep,
        reuse: args.reuse,
        allow_overwrite: args.allow_overwrite,
        allow_device_write: args.allow_device_write,
        force: args.force,
        allowed_devices: None,
        run: stormark_cluster::new_run_id(),
        s3,
        create_file: target_is_file,
        net_token: args.net_token.clone(),
        net_peers: None,
    };
    let mut notes: Vec<String> = args.notes.iter().chain(&notes).cloned().collect();
    notes.extend(auto.iter().map(|r| format!("auto: {r}")));
    let runner = Runner {
        workload: &workload,
        targets: &targets,
        shape: &shape,
        fleet,
        opts: &opts,
        stop: &stop,
        abandon: &abandon,
        policy,
        notes: &notes,
        json: json.as_ref(),
        quiet: args.output.quiet,
        watch: &watch,
    };
    let (reps, outcome) = runner.repetitions(repeat)?;
    let mut results = combine_repetitions(reps);
    if first_look {
        stormark_probe::first_look(&mut results);
    }
    if !expect.is_empty() {
        stormark_stats::expectation_findings(&mut results, &expect);
    }
    results.verdict = Some(stormark_stats::validity_of(&results));
    // The results file is written whatever happened.
    let write_failed = write_outputs(&args, json.as_ref(), html.as_ref(), &results);
    // The launched agents have served their runs: they and their launcher end now.
    if let Some(l) = launched.as_mut() {
        l.finish();
    }
    if let Outcome::Refused(msg) = &outcome {
        bail!(Usage(msg.clone()));
    }
    // The target and each phase's table were said as they came (the document owning
    // standard output, on standard error): the summary follows them.
    let mut watch = watch.borrow_mut();
    watch.finish();
    let summary = if watch.target_said || watch.phases_said > 0 {
        let mut text = match (&results.target, watch.target_said) {
            (Some(t), false) => stormark_report::target_line(t),
            _ => String::new(),
        };
        text.push_str(&stormark_report::summary_after_phases(&results));
        text
    } else {
        Terminal.render(&results)
    };
    watch.say(&summary);
    if !write_failed.is_empty() {
        for msg in &write_failed {
            eprintln!("error: {msg}");
        }
        return Ok(Ending::Failed);
    }
    Ok(match outcome {
        Outcome::Completed if results.failing_errors() == 0 && results.status == RunStatus::Ok => {
            Ending::Success
        }
        _ => Ending::Failed,
    })
}

/// S3 jobs in a job file given to `stormark run`: the keys from the environment or a
/// profile, as `stormark s3` finds them without flags.
fn s3_access(
    args: &RunArgs,
    workload: &stormark_spec::Workload,
) -> Result<Option<stormark_cluster::S3Access>> {
    Ok(match &args.s3 {
        Some(access) => Some(access.clone()),
        None if workload.jobs.iter().any(|j| j.s3.is_some()) => Some(stormark_cluster::S3Access {
            credentials: stormark_s3::find_credentials(None, None, None).map_err(usage)?,
            create_bucket: false,
            insecure: false,
            endpoint: None,
        }),
        None => None,
    })
}

/// The stop flags Ctrl-C sets. The first Ctrl-C ends the load and keeps its figures; what the
/// run made is removed next. Files go at once; objects wait on the service, so a second
/// Ctrl-C (`abandon`) leaves them and the results say where (a file run's cleanup always
/// finishes).
fn ctrl_c(objects: bool) -> Result<(Arc<AtomicBool>, Arc<AtomicBool>)> {
    let stop = Arc::new(AtomicBool::new(false));
    let abandon = Arc::new(AtomicBool::new(false));
    let (s, a) = (stop.clone(), abandon.clone());
    ctrlc::set_handler(move || {
        if !s.swap(true, Ordering::Relaxed) {
            if objects {
                eprintln!("\nstopping: the figures so far are kept; then the run's objects are removed, waiting on the object store (up to 10 s a request): Ctrl-C again to leave them in place");
            }
        } else if objects && !a.swap(true, Ordering::Relaxed) {
            eprintln!("\nleaving the run's objects in place: the results' notes say where");
        }
    })
    .context("cannot install the Ctrl-C handler")?;
    Ok((stop, abandon))
}

/// `--repeat` and `--on-agent-failure`, checked.
fn repeat_and_policy(args: &RunArgs) -> Result<(u32, OnAgentFailure)> {
    let repeat: u32 = match args.shape.repeat.as_deref() {
        None => 1,
        Some(t) => t
            .trim()
            .parse()
            .ok()
            .filter(|n| (1..=1000).contains(n))
            .ok_or_else(|| {
                usage(format!(
                    "--repeat {t}: expected a whole number from 1 to 1000"
                ))
            })?,
    };
    let policy: OnAgentFailure = match args.distributed.on_agent_failure.as_deref() {
        None => OnAgentFailure::Abort,
        Some(text) => text
            .parse()
            .map_err(|e: stormark_cluster::AgentError| usage(e.to_string()))?,
    };
    let policy = match (&args.distributed.max_failed_agents, policy) {
        (None, p) => p,
        (Some(text), OnAgentFailure::Continue { .. }) => OnAgentFailure::Continue {
            max_failed: Some(text.trim().parse().map_err(|_| {
                usage(format!(
                    "--max-failed-agents {text}: expected a whole number of agents, such as 3"
                ))
            })?),
        },
        (Some(_), OnAgentFailure::Abort) => return Err(usage(
            "--max-failed-agents goes with --on-agent-failure continue (abort stops at the first)",
        )),
    };
    Ok((repeat, policy))
}

/// Writes `--json` and `--html`; each one that could not be written, said (both, when the
/// file system under them is full).
fn write_outputs(
    args: &RunArgs,
    json: Option<&Output>,
    html: Option<&Output>,
    results: &Results,
) -> Vec<String> {
    let mut failed = Vec::new();
    if let (Some(out), Some(path)) = (json, &args.output.json) {
        if let Err(e) = out.write_with(|w| Json.write_to(results, w)) {
            failed.push(format!(
                "--json {}: cannot write results: {e}",
                path.display()
            ));
        }
    }
    if let (Some(out), Some(path)) = (html, &args.output.html) {
        if let Err(e) = out.write(Html.render(results).as_bytes()) {
            failed.push(format!(
                "--html {}: cannot write the report: {e}",
                path.display()
            ));
        }
    }
    failed
}

/// What every repetition of a run shares.
struct Runner<'a> {
    workload: &'a stormark_spec::Workload,
    /// A run of several targets: each, and whether it is a file to make.
    targets: &'a [(PathBuf, bool)],
    shape: &'a stormark_plan::Shape,
    fleet: Option<&'a Fleet>,
    opts: &'a TargetOptions,
    stop: &'a Arc<AtomicBool>,
    abandon: &'a Arc<AtomicBool>,
    policy: OnAgentFailure,
    notes: &'a [String],
    json: Option<&'a Output>,
    quiet: bool,
    watch: &'a std::cell::RefCell<Watch<'a>>,
}

impl Runner<'_> {
    /// Runs the workload `repeat` times (stopping at the first that does not complete): each
    /// repetition's results, and how the last ended. A fleet that cannot be reached is the
    /// user's to fix (exit 2), with the results file still saying why.
    fn repetitions(&self, repeat: u32) -> Result<(Vec<Results>, Outcome)> {
        // Each agent's own S3 endpoint (--host-endpoint), for removing what a failed host left.
        let host_endpoints: Vec<Option<String>> = self
            .fleet
            .map(|f| f.hosts.iter().map(|h| h.endpoint.clone()).collect())
            .unwrap_or_default();
        let mut reps = Vec::new();
        let mut outcome = Outcome::Completed;
        for rep in 1..=repeat {
            let mut results = Results::new(crate::command_line());
            let agents: Vec<Box<dyn Agent>> = match self.fleet {
                // Several targets: an agent each, driven as one host.
                None if self.targets.len() > 1 => vec![Box::new(SeveralTargets::new(
                    self.targets
                        .iter()
                        .map(|(path, is_file)| {
                            let opts = TargetOptions {
                                path: path.clone(),
                                create_file: *is_file,
                                ..self.opts.clone()
                            };
                            (
                                path.display().to_string(),
                                LocalAgent::new(opts)
                                    .with_stop(self.stop.clone())
                                    .with_abandon(self.abandon.clone()),
                            )
                        })
                        .collect(),
                ))],
                None => vec![Box::new(
                    LocalAgent::new(self.opts.clone())
                        .with_stop(self.stop.clone())
                        .with_abandon(self.abandon.clone()),
                )],
                // Said even with --quiet: the run waits for an agent still removing the
                // last run's files.
                Some(fleet) => {
                    match fleet.connect(self.opts, self.stop, &|line| eprintln!("{line}")) {
                        Ok(a) => a,
                        // Ctrl-C before any load (waiting for an agent): interrupted, not refused.
                        Err(e @ AgentError::Interrupted(_)) => {
                            results.status = RunStatus::Interrupted;
                            results.failure = Some(e.to_string());
                            reps.push(results);
                            return Ok((reps, Outcome::Interrupted));
                        }
                        Err(e) => {
                            let e = usage(e.to_string());
                            results.status = RunStatus::Failed;
                            results.failure = Some(e.to_string());
                            reps.push(results);
                            if let Some(out) = self.json {
                                let _ = out
                                    .write_with(|w| Json.write_to(&combine_repetitions(reps), w));
                            }
                            return Err(e);
                        }
                    }
                }
            };
            if repeat > 1 && !self.quiet {
                eprintln!("repetition {rep} of {repeat}");
            }
            results.notes.extend(self.notes.iter().cloned());
            outcome = self.once(agents, &host_endpoints, &reps, &mut results, rep == repeat);
            reps.push(results);
            if outcome != Outcome::Completed {
                break;
            }
        }
        Ok((reps, outcome))
    }

    /// One repetition through the coordinator, the live line and metrics fed as it goes.
    /// The document is written after each step but the last repetition's last, which the
    /// final document follows at once (a thousand hosts' document took a tenth of a second of
    /// CPU to write).
    fn once(
        &self,
        agents: Vec<Box<dyn Agent>>,
        host_endpoints: &[Option<String>],
        reps: &[Results],
        results: &mut Results,
        last: bool,
    ) -> Outcome {
        let hosts = agents.len();
        let mut coordinator = Coordinator::new(agents, self.stop.clone())
            .on_agent_failure(self.policy)
            .remove_failed_hosts_objects(self.opts, host_endpoints.to_vec());
        let watch = self.watch;
        watch.borrow_mut().repetition();
        let mut plan = Plan::new(self.shape, self.workload, hosts);
        let mut next = |r: &mut Results| {
            let step = plan.next(r);
            watch.borrow_mut().planned(
                self.workload,
                step.as_ref(),
                plan.steps_left(),
                plan.search_so_far().as_ref(),
            );
            if step.is_some() || !last {
                write_partial(self.json, reps, r);
            }
            step
        };
        let outcome = coordinator.run_steps(
            self.workload,
            results,
            &mut |event| watch.borrow_mut().event(&event),
            &mut next,
        );
        plan.finish(results, outcome == Outcome::Completed);
        outcome
    }
}
