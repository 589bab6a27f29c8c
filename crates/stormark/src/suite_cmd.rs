//! `stormark suite NAME [TARGETS...]`: a standard battery of steps, each a stormark command of
//! its own (this binary, run as a child: its own results document, Ctrl-C handling and
//! cleanup), then one summary with the suite's table and verdicts.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context, Result};
use stormark_plan::{
    hosts, suite_file_steps, suite_steps, suite_stops, HostsOptions, SuiteOptions, SuiteStep,
    SUITES,
};
use stormark_report::{suite_html, suite_markdown, suite_step_line, suite_terminal, Output};
use stormark_stats::{
    format_rfc3339, step_figures, suite_verdicts, Results, RunStatus, StepOutcome, StepResult,
    SuiteSummary, SUITE_SCHEMA,
};

use crate::cli_suite::SuiteArgs;
use crate::{usage, Ending};

/// The largest suite file read.
const SUITE_FILE_LIMIT: u64 = 1 << 20;

/// The largest step results document read back.
const DOCUMENT_LIMIT: u64 = 1 << 30;

pub fn main(args: SuiteArgs) -> Result<Ending> {
    if args.list {
        for (name, about) in SUITES {
            outln!("{name:<11} {about}");
        }
        return Ok(Ending::Success);
    }
    let given = args.name.clone().unwrap_or_default();
    let opts = options(&args)?;
    let (name, steps) = if given.ends_with(".toml") {
        // A suite file of one's own steps.
        let text = crate::read_limited(Path::new(&given), SUITE_FILE_LIMIT, "a suite file")
            .map_err(|e| usage(format!("{given}: cannot read it: {e}")))?;
        suite_file_steps(&text, &given, &opts).map_err(usage)?
    } else {
        let steps = suite_steps(&given, &opts).map_err(usage)?;
        (given, steps)
    };
    let dir = suite_dir(&args, &name)?;
    let keys = keys(&args);
    let running: Arc<Mutex<Vec<u32>>> = Arc::default();
    let stop = stop_on_ctrl_c(&running)?;
    let mut summary = SuiteSummary {
        schema: SUITE_SCHEMA.into(),
        suite: name.clone(),
        version: env!("CARGO_PKG_VERSION").into(),
        command: crate::command_line(),
        started_at: format_rfc3339(std::time::SystemTime::now()),
        duration_ns: 0,
        status: RunStatus::Running,
        steps: Vec::new(),
        verdicts: Vec::new(),
        notes: Vec::new(),
    };
    let started = Instant::now();
    let runner = Runner {
        dir: &dir,
        quiet: args.quiet,
        allow_device_write: args.allow_device_write,
        allow_overwrite: args.allow_overwrite,
        keys: &keys,
        running: &running,
    };
    let mut stopped: Option<String> = None;
    let mut refused_first = false;
    let mut done = false;
    let mut i = 0;
    while i < steps.len() {
        // A batch: one step, or the steps that run together.
        let mut end = i + 1;
        while end < steps.len()
            && steps[i].together.is_some()
            && steps[end].together == steps[i].together
        {
            end += 1;
        }
        let batch = &steps[i..end];
        if stop.load(Ordering::Relaxed) && stopped.is_none() {
            stopped = Some("interrupted".into());
        }
        let outcomes = match &stopped {
            Some(_) => batch.iter().map(not_run).collect(),
            None => runner.run(batch, i, steps.len()),
        };
        for o in &outcomes {
            if stopped.is_none() {
                if let Some(stop) = suite_stops(&name, o, &summary.steps) {
                    if stop.done {
                        // What the suite came for is in: the rest is neither run nor counted.
                        summary.notes.push(stop.why);
                        done = true;
                        continue;
                    }
                    refused_first = stop.refused_first;
                    stopped = Some(stop.why);
                }
            }
        }
        summary.steps.extend(outcomes);
        summary.duration_ns = started.elapsed().as_nanos() as u64;
        write(&dir, "summary.json", &json(&summary));
        i = end;
        if done {
            break;
        }
    }
    let interrupted = stop.load(Ordering::Relaxed);
    if let Some(why) = stopped.filter(|w| w != "interrupted") {
        summary.notes.push(why);
    }
    summary.verdicts = suite_verdicts(&summary.steps);
    summary.duration_ns = started.elapsed().as_nanos() as u64;
    let passed = summary
        .steps
        .iter()
        .all(|s| matches!(s.result, StepResult::Pass | StepResult::Skipped));
    summary.status = match (interrupted, passed) {
        (true, _) => RunStatus::Interrupted,
        (false, true) => RunStatus::Ok,
        (false, false) => RunStatus::Failed,
    };
    let failed_write = !write_summaries(&dir, &summary);
    out!("{}", suite_terminal(&summary));
    outln!("summary: {}", dir.join("summary.html").display());
    if refused_first {
        return Err(usage(
            "the suite's first step was refused: see its message above",
        ));
    }
    Ok(if passed && !interrupted && !failed_write {
        Ending::Success
    } else {
        Ending::Failed
    })
}

/// A Ctrl-C handler for the suite: the steps see Ctrl-C themselves (one process group); a
/// signal sent to the suite alone is passed on to the `running` steps, and the suite stops
/// after the step, whose cleanup runs.
fn stop_on_ctrl_c(running: &Arc<Mutex<Vec<u32>>>) -> Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    let (flag, running) = (stop.clone(), running.clone());
    ctrlc::set_handler(move || {
        flag.store(true, Ordering::Relaxed);
        for pid in running.lock().map(|p| p.clone()).unwrap_or_default() {
            // SAFETY: kill(2) with a pid this process started.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) };
        }
    })
    .context("cannot install the Ctrl-C handler")?;
    Ok(stop)
}

/// The summary as JSON, Markdown and HTML in the suite's directory; `false` when one could
/// not be written (said on stderr).
fn write_summaries(dir: &Path, summary: &SuiteSummary) -> bool {
    let mut all = true;
    for (file, text) in [
        ("summary.json", json(summary)),
        ("summary.md", suite_markdown(summary)),
        ("summary.html", suite_html(summary)),
    ] {
        all &= write(dir, file, &text);
    }
    all
}

fn json(s: &SuiteSummary) -> String {
    serde_json::to_string_pretty(s).expect("a summary serializes") + "\n"
}

/// Writes a file of the suite's directory atomically; says why when it cannot.
fn write(dir: &Path, file: &str, text: &str) -> bool {
    let path = dir.join(file);
    let done = Output::check("--out", &path, &[])
        .map_err(|e| e.to_string())
        .and_then(|o| o.write(text.as_bytes()).map_err(|e| e.to_string()));
    if let Err(e) = &done {
        eprintln!("error: {}: cannot write it: {e}", path.display());
    }
    done.is_ok()
}

/// The suite's options from the command line; every mistake is exit 2 before any load.
fn options(args: &SuiteArgs) -> Result<SuiteOptions> {
    if args.name.as_deref() == Some("ssd") {
        // Its rounds must write what the preconditioning wrote: one device or file, not a
        // directory, where each step would make files of its own.
        let kind = args.targets.first().map(|t| stormark_probe::classify(t));
        if !matches!(kind, Some(Ok(k)) if k.kind_name() != "directory") {
            return Err(usage(
                "the ssd suite writes one device or file twice over, then measures it: name it (stormark suite ssd /dev/nvme1n1 --allow-device-write, or an existing file with --allow-overwrite)",
            ));
        }
    }
    let agents: Vec<String> = match &args.agents {
        Some(list) => hosts(&HostsOptions {
            agents: Some(list.clone()),
            // Only the addresses are wanted here; each step names its own target.
            default_target: Some(PathBuf::from("/")),
            ..HostsOptions::default()
        })
        .map_err(usage)?
        .unwrap_or_default()
        .into_iter()
        .map(|h| h.address)
        .collect(),
        None => Vec::new(),
    };
    let mut distributed = Vec::new();
    if !agents.is_empty() {
        let token = args.token_file.as_ref().ok_or_else(|| {
            usage("--agents needs --token-file FILE holding the agents' shared token")
        })?;
        distributed.extend(["--token-file".to_string(), absolute(token)?]);
        if let Some(ca) = &args.tls_ca {
            distributed.extend(["--tls-ca".to_string(), absolute(ca)?]);
        }
    } else if args.token_file.is_some() || args.tls_ca.is_some() {
        return Err(usage(
            "--token-file and --tls-ca are for agents: give --agents LIST too",
        ));
    } else {
        for t in &args.targets {
            if std::fs::symlink_metadata(t).is_err() {
                return Err(usage(format!(
                    "{}: no such file, directory or device; give the disks, or the directory, to measure",
                    t.display()
                )));
            }
        }
    }
    let s3 = match (&args.endpoint, &args.bucket) {
        (None, None) => None,
        (Some(_), None) => return Err(usage("--endpoint needs --bucket NAME")),
        (None, Some(_)) => return Err(usage("--bucket needs --endpoint URL")),
        (Some(e), Some(b)) => {
            let mut v = vec![
                "--endpoint".to_string(),
                e.clone(),
                "--bucket".into(),
                b.clone(),
            ];
            if let Some(r) = &args.region {
                v.extend(["--region".to_string(), r.clone()]);
            }
            if let Some(p) = &args.aws_profile {
                v.extend(["--aws-profile".to_string(), p.clone()]);
            }
            if args.create_bucket {
                v.push("--create-bucket".into());
            }
            if args.insecure {
                v.push("--insecure".into());
            }
            Some(v)
        }
    };
    let expect = args
        .expect
        .iter()
        .map(|e| {
            e.split_once(':')
                .filter(|(s, l)| !s.trim().is_empty() && !l.trim().is_empty())
                .map(|(s, l)| (s.trim().to_string(), l.trim().to_string()))
                .ok_or_else(|| {
                    usage(format!(
                        "--expect {e}: expected STEP:LIST, such as randread-4k:iops=50k,p99=2ms"
                    ))
                })
        })
        .collect::<Result<Vec<(String, String)>>>()?;
    if let Some(t) = &args.target_latency {
        stormark_spec::parse_target_latency(t).map_err(|e| usage(e.to_string()))?;
    }
    for (_, list) in &expect {
        stormark_spec::parse_expect(list).map_err(|e| usage(format!("--expect: {e}")))?;
    }
    let spec = stormark_plan::SpecSheet {
        read_mbs: args.spec_read_mbs.clone(),
        write_mbs: args.spec_write_mbs.clone(),
        read_iops: args.spec_read_iops.clone(),
        write_iops: args.spec_write_iops.clone(),
    };
    let flags = [
        "--spec-read-mbs",
        "--spec-write-mbs",
        "--spec-read-iops",
        "--spec-write-iops",
    ];
    for (flag, e) in flags.iter().zip(spec.expectations()) {
        if let Some(e) = e {
            stormark_spec::parse_expect(&e).map_err(|err| {
                usage(format!(
                    "{flag}: {err}; give a figure such as 550 (MB/s) or 98k (IOPS)"
                ))
            })?;
        }
    }
    if let Some(t) = &args.time {
        stormark_spec::parse_duration(t)
            .filter(|d| !d.is_zero())
            .ok_or_else(|| usage(format!("--time {t}: expected a duration such as 30s or 2m")))?;
    }
    Ok(SuiteOptions {
        // Absolute, so that a step's command runs as written from anywhere and `.` has a name.
        targets: args
            .targets
            .iter()
            .map(|t| absolute(t))
            .collect::<Result<_>>()?,
        smoke: args.smoke,
        time: args.time.clone(),
        agents,
        distributed,
        target_latency: args.target_latency.clone(),
        s3,
        expect,
        spec,
        rounds: args.rounds,
    })
}

fn absolute(p: &Path) -> Result<String> {
    std::path::absolute(p)
        .map(|p| p.to_string_lossy().into_owned())
        .map_err(|e| usage(format!("{}: {e}", p.display())))
}

/// The S3 keys given as flags, for the steps' environment (never their command lines).
fn keys(args: &SuiteArgs) -> Vec<(&'static str, String)> {
    let mut v = Vec::new();
    if let Some(k) = &args.access_key {
        v.push(("AWS_ACCESS_KEY_ID", k.clone()));
    }
    if let Some(k) = &args.secret_key {
        v.push(("AWS_SECRET_ACCESS_KEY", k.clone()));
    }
    v
}

/// Makes the suite's directory: new, never one that exists (whose files it could replace).
fn suite_dir(args: &SuiteArgs, name: &str) -> Result<PathBuf> {
    let dir = match &args.out {
        Some(d) => d.clone(),
        None => {
            let stamp: String = format_rfc3339(std::time::SystemTime::now())
                .chars()
                .filter(char::is_ascii_digit)
                .take(14)
                .collect();
            PathBuf::from(format!(
                "stormark-suite-{name}-{}-{}",
                &stamp[..8.min(stamp.len())],
                &stamp[8.min(stamp.len())..]
            ))
        }
    };
    std::fs::create_dir(&dir).map_err(|e| {
        usage(format!(
            "--out {}: cannot make the suite's directory: {e}; give a new directory",
            dir.display()
        ))
    })?;
    std::path::absolute(&dir).map_err(|e| usage(format!("--out {}: {e}", dir.display())))
}

fn not_run(s: &SuiteStep) -> StepOutcome {
    StepOutcome {
        result: StepResult::NotRun,
        ..outcome(s, Vec::new())
    }
}

fn outcome(s: &SuiteStep, command: Vec<String>) -> StepOutcome {
    StepOutcome {
        name: s.name.clone(),
        part: s.part.to_string(),
        workload: s.workload.clone(),
        subject: s.subject.clone(),
        together: s.together.clone(),
        command,
        document: None,
        report: None,
        result: StepResult::Skipped,
        exit_code: None,
        why: s.skip.clone(),
        figures: None,
    }
}

/// Runs steps as children of this binary.
struct Runner<'a> {
    dir: &'a Path,
    quiet: bool,
    allow_device_write: bool,
    allow_overwrite: bool,
    keys: &'a [(&'static str, String)],
    running: &'a Mutex<Vec<u32>>,
}

impl Runner<'_> {
    /// Runs a batch (steps that run together) and waits for every one.
    fn run(&self, batch: &[SuiteStep], first: usize, total: usize) -> Vec<StepOutcome> {
        let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("stormark"));
        let began = Instant::now();
        let mut started: Vec<(StepOutcome, Option<Child>)> = Vec::new();
        for (k, s) in batch.iter().enumerate() {
            let n = first + k + 1;
            if s.skip.is_some() {
                outln!(
                    "\n== [{n}/{total}] {}: skipped: {}",
                    s.name,
                    s.skip.as_deref().unwrap_or("")
                );
                started.push((outcome(s, Vec::new()), None));
                continue;
            }
            let slug = format!("{n:02}-{}", s.name.replace('/', "-"));
            let mut args = s.args.clone();
            if let Some((file, text)) = &s.file {
                let path = self.dir.join(file);
                if !write(self.dir, file, text) {
                    let mut o = outcome(s, Vec::new());
                    o.result = StepResult::Failed;
                    o.why = Some(format!("cannot write {}", path.display()));
                    started.push((o, None));
                    continue;
                }
                for a in &mut args {
                    if a == file {
                        *a = path.to_string_lossy().into_owned();
                    }
                }
            }
            if self.allow_device_write && args.first().is_some_and(|a| a == "run") {
                args.push("--allow-device-write".into());
            }
            if self.allow_overwrite && args.first().is_some_and(|a| a == "run") {
                args.push("--allow-overwrite".into());
            }
            let (doc, report) = (format!("{slug}.json"), format!("{slug}.html"));
            args.extend([
                "--json".to_string(),
                self.dir.join(&doc).to_string_lossy().into_owned(),
                "--html".to_string(),
                self.dir.join(&report).to_string_lossy().into_owned(),
            ]);
            let together = batch.len() > 1;
            if self.quiet || together {
                args.push("--quiet".into());
            }
            // Printed and recorded without secrets (a suite file's step may carry a key).
            let command = stormark_stats::redact_command(
                std::iter::once("stormark".to_string()).chain(args.iter().cloned()),
            );
            outln!(
                "\n== [{n}/{total}] {}\n   {}",
                s.name,
                stormark_report::shell_command(&command)
            );
            let mut o = outcome(s, command);
            o.document = Some(doc);
            o.report = Some(report);
            // A secret given in a step goes to the child by its environment, not its command
            // line (which any user of the host sees in ps).
            let (args, secret) = secret_to_env(args);
            let mut cmd = Command::new(&exe);
            cmd.args(&args)
                .envs(self.keys.iter().map(|(k, v)| (*k, v)))
                .envs(secret.iter().map(|v| ("AWS_SECRET_ACCESS_KEY", v)));
            if self.quiet {
                cmd.stdout(Stdio::null());
            } else if together {
                cmd.stdout(Stdio::piped());
            }
            match cmd.spawn() {
                Ok(child) => {
                    if let Ok(mut r) = self.running.lock() {
                        r.push(child.id());
                    }
                    started.push((o, Some(child)));
                }
                Err(e) => {
                    o.result = StepResult::Failed;
                    o.why = Some(format!("cannot start {}: {e}", exe.display()));
                    started.push((o, None));
                }
            }
        }
        started
            .into_iter()
            .enumerate()
            .map(|(k, (mut o, child))| {
                let Some(child) = child else { return o };
                let pid = child.id();
                let done = child.wait_with_output();
                if let Ok(mut r) = self.running.lock() {
                    r.retain(|p| *p != pid);
                }
                match done {
                    Ok(out) => {
                        if !out.stdout.is_empty() {
                            out!("{}", String::from_utf8_lossy(&out.stdout));
                        }
                        o.exit_code = out.status.code();
                    }
                    Err(e) => o.why = Some(format!("lost the step: {e}")),
                }
                self.read_back(&mut o);
                // Said as the step ends, so that a long suite shows its life.
                outln!(
                    "{}",
                    suite_step_line(&o, first + k + 1, total, began.elapsed().as_secs_f64())
                );
                o
            })
            .collect()
    }

    /// The step's result from its exit status and its document.
    fn read_back(&self, o: &mut StepOutcome) {
        let doc: Option<Results> = o.document.as_ref().and_then(|d| {
            let text = crate::read_limited(&self.dir.join(d), DOCUMENT_LIMIT, "a results document")
                .ok()?;
            serde_json::from_str(&text).ok()
        });
        if doc.is_none() {
            o.document = None;
        }
        if !o.report.as_ref().is_some_and(|r| self.dir.join(r).exists()) {
            o.report = None;
        }
        o.figures = doc.as_ref().and_then(step_figures);
        let missed = doc
            .as_ref()
            .is_some_and(|d| d.findings.iter().any(|f| f.code == "expectation-missed"));
        o.result = match o.exit_code {
            Some(0) if missed => StepResult::Missed,
            Some(0) => StepResult::Pass,
            Some(2) => StepResult::Refused,
            _ => StepResult::Failed,
        };
        if o.result == StepResult::Refused {
            o.why =
                Some("refused before any load (exit 2): its message is printed above it".into());
        }
        if o.why.is_none() && o.result != StepResult::Pass {
            o.why = doc
                .as_ref()
                .and_then(|d| d.failure.clone())
                .or_else(|| {
                    let errors = doc.as_ref().map_or(0, Results::total_errors);
                    (errors > 0).then(|| format!("{errors} errors"))
                })
                .or_else(|| {
                    (o.result == StepResult::Missed).then(|| "an expectation was missed".into())
                })
                .or_else(|| {
                    Some(format!(
                        "exit status {}",
                        o.exit_code.map_or("by a signal".into(), |c| c.to_string())
                    ))
                });
        }
    }
}

/// A step's arguments without `--secret-key X` (or `--secret-key=X`), and that secret.
fn secret_to_env(args: Vec<String>) -> (Vec<String>, Option<String>) {
    let mut out = Vec::with_capacity(args.len());
    let mut secret = None;
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        match a.split_once('=') {
            _ if a == "--secret-key" || a == "--secret_key" => secret = it.next(),
            Some((k, v)) if k == "--secret-key" || k == "--secret_key" => {
                secret = Some(v.to_string())
            }
            _ => out.push(a),
        }
    }
    (out, secret)
}

#[cfg(test)]
mod tests {
    use super::secret_to_env;

    #[test]
    fn a_steps_secret_leaves_its_command_line() {
        let args = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert_eq!(
            secret_to_env(args("s3 --secret-key abc --bucket b")),
            (args("s3 --bucket b"), Some("abc".to_string()))
        );
        assert_eq!(
            secret_to_env(args("s3 --secret-key=abc")),
            (args("s3"), Some("abc".to_string()))
        );
        assert_eq!(secret_to_env(args("run /x")), (args("run /x"), None));
    }
}
