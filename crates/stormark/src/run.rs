//! `stormark run`: flags, job file or profile -> workload -> coordinator -> results.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use stormark_cluster::{
    read_token, Agent, Coordinator, Live, LocalAgent, OnAgentFailure, Outcome, RemoteAgent,
    TargetOptions,
};
use stormark_report::{format_figure, Json, LiveLine, Output, Render, Terminal};
use stormark_spec::{Expectation, PROFILES};
use stormark_stats::{
    check_expectations, combine_repetitions, Finding, Results, RunStatus, Severity,
};

use stormark_plan::{check_agents, request, Plan, Request, RequestOptions, ShapeOptions};

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
            outln!("{name:<12} {about}");
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

/// The command line as the plan reads it; the job file is read here.
fn request_options(args: &RunArgs) -> Result<RequestOptions> {
    let job_file = match &args.job {
        Some(path) => {
            let shown = path.display().to_string();
            if path.extension().is_some_and(|e| e == "fio") {
                return Err(user(format!(
                    "--job {shown}: fio job files are not read yet; write the job as TOML (docs/job-files.md)"
                )));
            }
            let text = crate::read_limited(path, JOB_FILE_LIMIT, "a job file")
                .map_err(|e| user(format!("--job {shown}: cannot read it: {e}")))?;
            Some((shown, text))
        }
        None => None,
    };
    Ok(RequestOptions {
        flags: args.workload_flags(),
        expect: args.expect.clone(),
        shape: ShapeOptions {
            target_latency: args.target_latency.clone(),
            curve: args.curve.clone(),
            sweep: args.sweep.clone(),
            step_time: args.step_time.clone(),
            search_steps: args.search_steps.clone(),
            repeat: args.repeat.is_some(),
        },
        job_file,
        profile: args.profile.clone(),
        target: args.target.clone(),
        current_dir: std::env::current_dir().context("cannot find the current directory")?,
        auto: args.auto,
        distributed: args.agents.is_some() || args.agents_file.is_some(),
        reuse: args.reuse,
        prepare: args.prepare,
    })
}

/// The largest job file read (a job file is a few kilobytes; this bounds a mistaken path).
const JOB_FILE_LIMIT: u64 = 16 << 20;

/// The agents of a distributed run: address and target of each.
struct AgentsPlan {
    token: String,
    tls_ca: Option<Vec<u8>>,
    agents: Vec<(String, PathBuf)>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentsFile {
    agent: Vec<AgentEntry>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentEntry {
    address: String,
    target: Option<PathBuf>,
}

/// Reads `--agents`/`--agents-file`, `--token-file` and `--target HOST=PATH`; `None` for a
/// local run. Every mistake is a user error, before anything connects.
fn agents_plan(args: &RunArgs, default_target: Option<&PathBuf>) -> Result<Option<AgentsPlan>> {
    let mut entries: Vec<(String, Option<PathBuf>)> = match (&args.agents, &args.agents_file) {
        (Some(list), _) => list
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(|a| (a.to_string(), None))
            .collect(),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                user(format!(
                    "--agents-file {}: cannot read it: {e}",
                    path.display()
                ))
            })?;
            let file: AgentsFile = toml::from_str(&text).map_err(|e| {
                user(format!(
                    "--agents-file {}: {}; expected [[agent]] sections with address = \"host:port\" and optional target = \"/path\"",
                    path.display(),
                    e.message()
                ))
            })?;
            file.agent
                .into_iter()
                .map(|a| (a.address, a.target))
                .collect()
        }
        (None, None) => {
            if args.token_file.is_some()
                || !args.target_map.is_empty()
                || args.on_agent_failure.is_some()
            {
                return Err(user(
                    "--token-file, --target and --on-agent-failure need --agents or --agents-file",
                ));
            }
            return Ok(None);
        }
    };
    if entries.is_empty() {
        return Err(user("--agents: expected host:port[,host:port...]"));
    }
    for (addr, _) in &entries {
        let port_ok = addr
            .rsplit_once(':')
            .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
        if !port_ok {
            return Err(user(format!(
                "--agents {addr}: expected host:port, such as node1:7878"
            )));
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    if let Some((dup, _)) = entries.iter().find(|(a, _)| !seen.insert(a.clone())) {
        return Err(user(format!("--agents: {dup} is listed twice")));
    }
    for pair in &args.target_map {
        let (host, path) = pair
            .split_once('=')
            .filter(|(h, p)| !h.is_empty() && !p.is_empty())
            .ok_or_else(|| {
                user(format!(
                    "--target {pair}: expected HOST=PATH, such as node2=/dev/sdb"
                ))
            })?;
        let matching: Vec<usize> = entries
            .iter()
            .enumerate()
            .filter(|(_, (a, _))| a == host || a.rsplit_once(':').is_some_and(|(h, _)| h == host))
            .map(|(i, _)| i)
            .collect();
        match matching.as_slice() {
            [i] => entries[*i].1 = Some(PathBuf::from(path)),
            [] => {
                return Err(user(format!(
                    "--target {pair}: {host} is not one of the agents"
                )))
            }
            _ => {
                return Err(user(format!(
                    "--target {pair}: {host} names several agents; use host:port"
                )))
            }
        }
    }
    let mut agents = Vec::new();
    for (addr, t) in entries {
        let t = t.or_else(|| default_target.cloned()).ok_or_else(|| {
            user(format!(
                "agent {addr}: no target; give TARGET (the same path on every agent) or --target {addr}=PATH"
            ))
        })?;
        agents.push((addr, t));
    }
    let token_file = args
        .token_file
        .as_ref()
        .ok_or_else(|| user("--agents needs --token-file FILE holding the agents' shared token"))?;
    let token = read_token(token_file).map_err(|e| user(e.to_string()))?;
    let tls_ca = match &args.tls_ca {
        Some(p) => Some(
            std::fs::read(p)
                .map_err(|e| user(format!("--tls-ca {}: cannot read it: {e}", p.display())))?,
        ),
        None => None,
    };
    Ok(Some(AgentsPlan {
        token,
        tls_ca,
        agents,
    }))
}

/// Connects to every agent (handshake, clock offset). Refusals (busy, wrong token, version)
/// are user errors.
fn connect_agents(
    plan: &AgentsPlan,
    opts: &TargetOptions,
    stop: &Arc<AtomicBool>,
) -> Result<Vec<Box<dyn Agent>>> {
    // One thread per agent decodes that agent's snapshots (each histogram is about 270 KiB);
    // with glibc's default of up to 8 arenas per core, each thread keeps its own freed blocks
    // and the coordinator's memory grows with the agent count. A few shared arenas keep it
    // flat (glibc mallopt(3), M_ARENA_MAX).
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only tunes the allocator; called before the agent threads exist.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 4);
    }
    let rt = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .context("cannot start the network runtime")?,
    );
    let mut agents: Vec<Box<dyn Agent>> = Vec::new();
    for (i, (addr, target)) in plan.agents.iter().enumerate() {
        let target = TargetOptions {
            path: target.clone(),
            ..opts.clone()
        };
        let agent = RemoteAgent::connect(
            rt.clone(),
            addr,
            &plan.token,
            plan.tls_ca.as_deref(),
            target,
            i as u32,
            stop.clone(),
        )
        .map_err(|e| user(e.to_string()))?
        .with_hosts(plan.agents.len() as u32);
        agents.push(Box::new(agent));
    }
    Ok(agents)
}

/// `--expect`: every measured phase against the expected figures; a miss is a finding.
fn compare_expected(results: &mut Results, expect: &[Expectation]) {
    for phase in results.phases.iter().filter(|p| p.measured()) {
        for e in check_expectations(phase, expect) {
            if !e.met {
                results.findings.push(Finding {
                    severity: Severity::Warning,
                    code: "expectation-missed".into(),
                    message: format!(
                        "phase {}: {} measured {} against {} expected ({:.2}×)",
                        e.phase,
                        e.figure,
                        format_figure(&e.figure, e.measured),
                        format_figure(&e.figure, e.expected),
                        e.ratio
                    ),
                    evidence: serde_json::to_value(&e).expect("an expectation serializes"),
                    advice: "Check the findings above for what held the run back; compare like with like (block size, queue depth, read/write mix, direct I/O) with where the expected figure came from.".into(),
                });
            }
            results.expectations.push(e);
        }
    }
}

/// The results document's output, checked before any load: never the target, a run
/// directory or the job file.
fn json_output(args: &RunArgs, target: &Path) -> Result<Option<Output>> {
    let Some(path) = &args.json else {
        return Ok(None);
    };
    let mut avoid: Vec<&Path> = vec![target];
    if let Some(job) = &args.job {
        avoid.push(job);
    }
    Output::check("--json", path, &avoid)
        .map(Some)
        .map_err(|e| user(e.to_string()))
}

/// Writes the document so far (after a phase), so that a crash loses at most the phase that
/// was running. Failures are left to the final write, which reports them.
fn write_partial(out: Option<&Output>, done: &[Results], current: &Results) {
    let Some(out) = out.filter(|o| !o.is_stdout()) else {
        return;
    };
    let mut all = done.to_vec();
    all.push(current.clone());
    let mut doc = combine_repetitions(all);
    doc.status = RunStatus::Running;
    let _ = out.write(Json.render(&doc).as_bytes());
}

fn run(args: RunArgs) -> Result<i32> {
    let Request {
        workload,
        target,
        target_given,
        auto,
        expect,
        shape,
    } = request(&request_options(&args)?).map_err(user)?;
    let plan = agents_plan(&args, target_given.then_some(&target))?;
    check_agents(
        &shape,
        plan.as_ref().map_or(1, |p| p.agents.len()),
        plan.is_some(),
    )
    .map_err(user)?;
    let json = json_output(&args, &target)?;
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
        allowed_devices: None,
    };
    let repeat: u32 = match args.repeat.as_deref() {
        None => 1,
        Some(t) => t
            .trim()
            .parse()
            .ok()
            .filter(|n| (1..=1000).contains(n))
            .ok_or_else(|| {
                user(format!(
                    "--repeat {t}: expected a whole number from 1 to 1000"
                ))
            })?,
    };
    let policy = match args.on_agent_failure.as_deref() {
        None | Some("abort") => OnAgentFailure::Abort,
        Some("continue") => OnAgentFailure::Continue,
        Some(other) => {
            return Err(user(format!(
                "--on-agent-failure {other}: expected abort or continue"
            )))
        }
    };
    let show_live = !args.quiet && std::io::stderr().is_terminal();
    let mut reps = Vec::new();
    let mut outcome = Outcome::Completed;
    for rep in 1..=repeat {
        let mut results = Results::new(
            std::env::args_os()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
        );
        let agents: Vec<Box<dyn Agent>> = match &plan {
            None => vec![Box::new(
                LocalAgent::new(opts.clone()).with_stop(stop.clone()),
            )],
            Some(plan) => match connect_agents(plan, &opts, &stop) {
                Ok(a) => a,
                Err(e) => {
                    // Refused before any load; the results file still says why.
                    results.status = RunStatus::Failed;
                    results.failure = Some(e.to_string());
                    reps.push(results);
                    let results = combine_repetitions(reps);
                    if let Some(out) = &json {
                        let _ = out.write(Json.render(&results).as_bytes());
                    }
                    return Err(e);
                }
            },
        };
        if repeat > 1 && !args.quiet {
            eprintln!("repetition {rep} of {repeat}");
        }
        let mut coordinator = Coordinator::new(agents, stop.clone()).on_agent_failure(policy);
        results
            .notes
            .extend(auto.iter().map(|r| format!("auto: {r}")));
        let mut line = LiveLine::new();
        let mut stderr = std::io::stderr();
        let mut plan = Plan::new(&shape, &workload);
        let mut next = |r: &Results| {
            write_partial(json.as_ref(), &reps, r);
            plan.next(r)
        };
        outcome = coordinator.run_steps(
            &workload,
            &mut results,
            &mut |event| {
                if let Live::HostFailed { host, message } = &event {
                    // Said even with --quiet: the run goes on without this host, or stops.
                    let _ = writeln!(stderr, "{}agent {host} failed: {message}", line.clear());
                    return;
                }
                if !show_live {
                    return;
                }
                let text = match event {
                    Live::Second { phase, interval } => line.second(phase, interval),
                    Live::PhaseDone { .. } => line.clear(),
                    Live::PhaseStarted { .. } | Live::HostFailed { .. } => return,
                };
                let _ = stderr.write_all(text.as_bytes());
                let _ = stderr.flush();
            },
            &mut next,
        );
        plan.finish(&mut results, outcome == Outcome::Completed);
        reps.push(results);
        if outcome != Outcome::Completed {
            break;
        }
    }
    let mut results = combine_repetitions(reps);

    if !expect.is_empty() {
        compare_expected(&mut results, &expect);
    }
    // The results file is written whatever happened.
    let mut write_failed = None;
    if let (Some(out), Some(path)) = (&json, &args.json) {
        if let Err(e) = out.write(Json.render(&results).as_bytes()) {
            write_failed = Some(format!(
                "--json {}: cannot write results: {e}",
                path.display()
            ));
        }
    }
    if let Outcome::Refused(msg) = &outcome {
        bail!(UserError(msg.clone()));
    }
    if json.as_ref().is_some_and(Output::is_stdout) {
        // The document owns standard output; the table goes to standard error.
        eprint!("{}", Terminal.render(&results));
    } else {
        out!("{}", Terminal.render(&results));
    }
    if let Some(msg) = write_failed {
        eprintln!("error: {msg}");
        return Ok(1);
    }
    Ok(match outcome {
        Outcome::Completed if results.total_errors() == 0 && results.status == RunStatus::Ok => 0,
        _ => 1,
    })
}
