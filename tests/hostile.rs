//! Issue 54: what a job file, a target name, a number or a signal can make stormark write,
//! run, leak or believe, tried as an attacker would, against the real binary.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use stormark_testkit::{read_json, temp_dir, text, Bin};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

/// `stormark <args>` with `env`, killed after `limit`: its output, and whether it ended by
/// itself.
fn run_bounded(
    args: &[&str],
    env: &[(&str, &str)],
    limit: Duration,
) -> (std::process::Output, bool) {
    let mut child = Command::new(BIN)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running stormark");
    let deadline = Instant::now() + limit;
    let ended = loop {
        match child.try_wait().expect("waiting on stormark") {
            Some(_) => break true,
            None if Instant::now() > deadline => {
                let _ = child.kill();
                break false;
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    (child.wait_with_output().expect("stormark's output"), ended)
}

/// The value names of `stormark <command> --help` whose values are numbers, and the flags
/// that take them.
fn numeric_flags(command: &[&str]) -> Vec<String> {
    const NUMERIC: [&str; 14] = [
        "N", "SIZE", "DURATION", "PCT", "RATIO", "IOPS", "RATE", "USEC", "LEVEL", "HINT", "WEIGHT",
        "R", "D", "PCTS",
    ];
    let mut args = command.to_vec();
    args.push("--help");
    let help = text(&Bin(BIN).run(&args));
    let mut flags: Vec<String> = help
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = l
                .split_once(", ")
                .filter(|(s, _)| s.len() == 2)
                .map_or(l, |(_, r)| r);
            let (flag, rest) = l.strip_prefix("--")?.split_once(" <")?;
            let value = rest.split_once('>')?.0;
            NUMERIC.contains(&value).then(|| format!("--{flag}"))
        })
        .collect();
    flags.dedup();
    flags
}

/// Issue 54: every numeric flag of every load command given u64::MAX, 2^32, 0 and -1: never
/// a panic or a hang; a refusal is exit 2 with one `error:` line; a duration past a year is
/// refused. `--time 18446744073709551615` once panicked (exit 101) and left the run
/// directory behind.
#[test]
fn every_numeric_flag_of_every_command_takes_any_number_without_a_panic() {
    let dir = temp_dir(TMP);
    let target = dir.path().join("t");
    std::fs::create_dir(&target).unwrap();
    let t = target.to_str().unwrap();
    // Each command in a context where a value that is accepted ends quickly, with no
    // service reachable where one is needed (refused before load, exit 2).
    let contexts: Vec<Vec<&str>> = vec![
        vec![
            "run", t, "--engine", "null", "--time", "300ms", "--size", "64k", "-q",
        ],
        vec!["meta", t, "--files", "4", "--dirs", "1", "-q"],
        vec![
            "s3",
            "--endpoint",
            "http://127.0.0.1:9",
            "--bucket",
            "bkt",
            "--time",
            "300ms",
        ],
        vec!["net", "client", "127.0.0.1:9", "--time", "300ms"],
        vec!["compare", "/nonexistent/a.json", "/nonexistent/b.json"],
        // A suite refuses a missing disk before it makes its directory or starts a step.
        vec!["suite", "disks", "/nonexistent/disk"],
    ];
    let values = ["18446744073709551615", "4294967296", "0", "-1"];
    let mut cases = Vec::new();
    for ctx in &contexts {
        let command: Vec<&str> = ctx
            .iter()
            .copied()
            .take_while(|a| !a.starts_with('/') && !a.starts_with("127.") && *a != t)
            .collect();
        let flags = numeric_flags(&command);
        assert!(
            !flags.is_empty(),
            "no numeric flags found in {command:?} --help"
        );
        for flag in flags {
            for v in values {
                cases.push((ctx.clone(), flag.clone(), v));
            }
        }
    }
    let failures = std::sync::Mutex::new(Vec::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((ctx, flag, v)) = cases.get(i) else {
                    break;
                };
                // The context's own value of the flag gives way (clap refuses a flag twice).
                let mut args = ctx.clone();
                if let Some(at) = args.iter().position(|a| a == flag) {
                    args.drain(at..at + 2);
                }
                let joined = format!("{flag}={v}");
                args.push(&joined);
                let (out, ended) = run_bounded(&args, &[], Duration::from_secs(120));
                let err = String::from_utf8_lossy(&out.stderr);
                let code = out.status.code();
                let errors = err.lines().filter(|l| l.starts_with("error:")).count();
                let why = if !ended {
                    Some("still running after 120 s".to_string())
                } else if err.contains("panicked") || !matches!(code, Some(0..=2)) {
                    Some(format!("exit {code:?}"))
                } else if err.contains("cannot be used multiple times") {
                    Some("the flag given twice: the test's context is wrong".to_string())
                } else if code == Some(2) && errors != 1 {
                    Some(format!("{errors} error lines"))
                } else if flag.ends_with("time") && v.len() > 5 && code != Some(2) {
                    Some("a duration past a year accepted".to_string())
                } else {
                    None
                };
                if let Some(why) = why {
                    failures
                        .lock()
                        .unwrap()
                        .push(format!("{} {joined}: {why}: {err}", ctx[0]));
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} cases:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    // Nothing left in the target: no run directory of a run that panicked.
    assert_eq!(stormark_testkit::entries(&target), Vec::<String>::new());
}

/// Issue 54: `--print-fio` of a target or a job file's variable holding a newline: refused in
/// one line, and nothing printed that fio would run (`exec_prerun`).
#[test]
fn print_fio_writes_no_option_taken_from_a_name() {
    let dir = temp_dir(TMP);
    let evil = "/d/x\nexec_prerun=touch /tmp/PWNED\n[evil]";
    let out = Bin(BIN).run(&["run", evil, "--print-fio"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("exec_prerun"),
        "{}",
        text(&out)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).lines().count(),
        1,
        "{}",
        text(&out)
    );
    let job = dir.path().join("j.fio");
    std::fs::write(&job, "[global]\nfilename=$EVIL\n[a]\nrw=read\nsize=1m\n").unwrap();
    let (out, _) = run_bounded(
        &["run", "--job", job.to_str().unwrap(), "--print-fio"],
        &[("EVIL", evil)],
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(!text(&out).contains("exec_prerun"), "{}", text(&out));
    // What is printed for a plain target, fio reads back naming no command to run.
    let out = Bin(BIN).run(&["run", dir.path().to_str().unwrap(), "--print-fio"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let printed = dir.path().join("printed.fio");
    std::fs::write(&printed, &out.stdout).unwrap();
    if stormark_testkit::require_tool("print_fio_writes_no_option_taken_from_a_name", "fio") {
        let parsed = Command::new("fio")
            .arg("--parse-only")
            .arg(&printed)
            .output()
            .unwrap();
        assert!(parsed.status.success(), "{}", text(&parsed));
        assert!(!text(&parsed).contains("exec_prerun"));
    }
}

/// Issue 54: a job file's variable named like a secret never reaches the terminal or the
/// results document; a section name with an escape sequence is refused, not printed raw.
#[test]
fn a_job_files_secret_and_escapes_never_reach_the_output() {
    let dir = temp_dir(TMP);
    let target = dir.path().join("t");
    std::fs::create_dir(&target).unwrap();
    let json = dir.path().join("r.json");
    let job = dir.path().join("s.fio");
    std::fs::write(
        &job,
        "[a]\nname=x${AWS_SECRET_ACCESS_KEY}\nrw=read\nsize=1m\nruntime=1\n",
    )
    .unwrap();
    let secret = "SeCrEtVaLuE54";
    let (out, ended) = run_bounded(
        &[
            "run",
            target.to_str().unwrap(),
            "--job",
            job.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--engine",
            "null",
        ],
        &[("AWS_SECRET_ACCESS_KEY", secret)],
        Duration::from_secs(120),
    );
    assert!(ended);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(!text(&out).contains(secret), "{}", text(&out));
    if json.exists() {
        assert!(!std::fs::read_to_string(&json).unwrap().contains(secret));
    }
    std::fs::write(&job, "[a\x1b]0;owned\x07]\nrw=read\nsize=1m\nruntime=1\n").unwrap();
    let out = Bin(BIN).run(&[
        "run",
        target.to_str().unwrap(),
        "--job",
        job.to_str().unwrap(),
        "--engine",
        "null",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(!text(&out).contains('\x1b'), "{}", text(&out));
}

/// Issue 54: a results document whose run directory is named to break out of a Markdown code
/// span, and whose command carries a secret: `report --markdown` and `--html` show neither
/// raw HTML nor the secret.
#[test]
fn a_documents_names_and_secrets_stay_inert_in_reports() {
    let dir = temp_dir(TMP);
    let mut doc = serde_json::to_value(stormark_testkit::sample_results()).unwrap();
    doc["command"] = serde_json::json!([
        "stormark",
        "s3",
        "--secret-key",
        "SeCrEt54",
        "--bucket",
        "b"
    ]);
    let evil = "/t``<img src=x onerror=alert(9)>``";
    if let Some(t) = doc.get_mut("target").filter(|t| t.is_object()) {
        t["path"] = serde_json::json!(evil);
        t["run_dir"] = serde_json::json!(evil);
    } else {
        doc["target"] =
            serde_json::json!({"path": evil, "kind": "directory", "run_dir": evil, "kept": false});
    }
    doc["command"][5] = serde_json::json!(evil);
    let path = dir.path().join("d.json");
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    let md = dir.path().join("r.md");
    let html = dir.path().join("r.html");
    let out = Bin(BIN).run(&[
        "report",
        path.to_str().unwrap(),
        "--markdown",
        md.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let md = std::fs::read_to_string(&md).unwrap();
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(!md.contains("SeCrEt54") && !html.contains("SeCrEt54"));
    assert!(!html.contains("<img"), "raw HTML in the page");
    // In Markdown the name stands only inside code spans whose fence is longer than any run
    // of backticks it holds: every `<img` follows an opening fence of three or more.
    for (at, _) in md.match_indices("<img") {
        let before = &md[..at];
        let line = before.rsplit('\n').next().unwrap_or("");
        assert!(
            line.contains("``` ") || line.contains("&lt;"),
            "a code span broken out of: {line}"
        );
    }
}

/// Issue 54: SIGQUIT, SIGUSR1 and SIGALRM during a run are Ctrl-C: the results written (said
/// `interrupted`), the run directory removed, exit 1.
#[test]
fn stray_signals_end_a_run_as_ctrl_c_does() {
    for (sig, name) in [
        (libc::SIGQUIT, "SIGQUIT"),
        (libc::SIGUSR1, "SIGUSR1"),
        (libc::SIGALRM, "SIGALRM"),
    ] {
        let dir = temp_dir(TMP);
        let target = dir.path().join("t");
        std::fs::create_dir(&target).unwrap();
        let json = dir.path().join("r.json");
        let mut child = Command::new(BIN)
            .args([
                "run",
                target.to_str().unwrap(),
                "--size",
                "1m",
                "--time",
                "60s",
                "--json",
                json.to_str().unwrap(),
                "-q",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Once the run directory exists, the load is under way.
        let deadline = Instant::now() + Duration::from_secs(120);
        while stormark_testkit::entries(&target).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(500));
        // SAFETY: kill(2) of the child this test started.
        unsafe { libc::kill(child.id() as libc::pid_t, sig) };
        let ended = loop {
            match child.try_wait().unwrap() {
                Some(s) => break Some(s),
                None if Instant::now() > deadline => {
                    let _ = child.kill();
                    break None;
                }
                None => std::thread::sleep(Duration::from_millis(50)),
            }
        };
        let status = ended.unwrap_or_else(|| panic!("{name}: still running"));
        assert_eq!(status.code(), Some(1), "{name}: {status:?}");
        let doc = read_json(&json);
        assert_eq!(doc["status"], "interrupted", "{name}");
        assert_eq!(
            stormark_testkit::entries(&target),
            Vec::<String>::new(),
            "{name}: left behind"
        );
    }
}

/// Issue 54: `--json` and `--html` on a full file system: both failures said, exit 1.
#[test]
fn every_output_that_cannot_be_written_is_said() {
    if !stormark_testkit::require_root("every_output_that_cannot_be_written_is_said") {
        return;
    }
    let dir = temp_dir(TMP);
    let full = dir.path().join("full");
    std::fs::create_dir(&full).unwrap();
    let mounted = Command::new("mount")
        .args([
            "-t",
            "tmpfs",
            "-o",
            "size=64k",
            "tmpfs",
            full.to_str().unwrap(),
        ])
        .status()
        .unwrap();
    assert!(mounted.success());
    // Filled to the last block.
    let _ = std::fs::write(full.join("filler"), vec![1u8; 1 << 20]);
    let target = dir.path().join("t");
    std::fs::create_dir(&target).unwrap();
    let out = Bin(BIN).run(&[
        "run",
        target.to_str().unwrap(),
        "--engine",
        "null",
        "--size",
        "64k",
        "--time",
        "300ms",
        "-q",
        "--json",
        full.join("r.json").to_str().unwrap(),
        "--html",
        full.join("r.html").to_str().unwrap(),
    ]);
    let _ = Command::new("umount").arg(&full).status();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(err.contains("--json") && err.contains("--html"), "{err}");
}

/// Issue 54: a FIFO or `/dev/zero` given where the binary reads a file (a job file, an agents
/// file, a results document, a suite file) is refused at once, never waited on or read whole.
#[test]
fn a_fifo_or_a_device_given_as_a_file_is_refused_at_once() {
    let dir = temp_dir(TMP);
    // Named as a suite file is (a `.toml`), so that `suite` reads it too.
    let fifo = dir.path().join("f.toml");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let target = dir.path().join("t");
    std::fs::create_dir(&target).unwrap();
    let md = dir.path().join("r.md");
    let (f, t, md) = (
        fifo.to_str().unwrap(),
        target.to_str().unwrap(),
        md.to_str().unwrap(),
    );
    for file in [f, "/dev/zero"] {
        for args in [
            vec!["run", t, "--job", file],
            vec!["run", t, "--agents-file", file, "--token-file", file],
            vec!["report", file, "--markdown", md],
            vec!["compare", file, file],
            vec!["suite", file, t],
        ] {
            if args[0] == "suite" && !file.ends_with(".toml") {
                continue;
            }
            // Bounded so that a regression fails here instead of hanging the suite.
            let (out, ended) = run_bounded(&args, &[], Duration::from_secs(60));
            assert!(ended, "{args:?}: still waiting");
            assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("not a regular file"),
                "{args:?}: {}",
                text(&out)
            );
        }
    }
}
