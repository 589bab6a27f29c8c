//! Output as it happens (issue 56): the real binary's output read from a pipe, each line
//! stamped as it arrives, so that a table printed at the end of the run (as before) fails
//! here. The bounds are the runs' own measured seconds, less generous slack.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use stormark_testkit::{temp_dir, TempDir};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

/// What a run said: each line of standard output with when it arrived, standard error, when
/// the process exited and its status.
struct Said {
    lines: Vec<(Instant, String)>,
    stderr: String,
    exited: Instant,
    code: i32,
}

impl Said {
    /// When the first line for which `f` holds arrived.
    fn first(&self, f: impl Fn(&str) -> bool) -> Instant {
        self.lines
            .iter()
            .find(|(_, l)| f(l))
            .map(|(t, _)| *t)
            .unwrap_or_else(|| panic!("no such line in:\n{}", self.text()))
    }

    fn count(&self, f: impl Fn(&str) -> bool) -> usize {
        self.lines.iter().filter(|(_, l)| f(l)).count()
    }

    fn text(&self) -> String {
        let mut out: String = self.lines.iter().map(|(_, l)| format!("{l}\n")).collect();
        out.push_str("--- stderr:\n");
        out.push_str(&self.stderr);
        out
    }
}

/// Runs the binary with `args`, its standard output a pipe read line by line as it comes.
fn watch(args: &[&str]) -> Said {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let mut lines = Vec::new();
    for line in BufReader::new(stdout).lines() {
        lines.push((Instant::now(), line.expect("a line of text")));
    }
    let status = child.wait().unwrap();
    Said {
        lines,
        stderr: err.join().unwrap(),
        exited: Instant::now(),
        code: status.code().unwrap_or(-1),
    }
}

fn target(dir: &TempDir) -> String {
    let t = dir.path().join("target");
    std::fs::create_dir_all(&t).unwrap();
    t.to_str().unwrap().to_string()
}

fn apart(a: Instant, b: Instant) -> Duration {
    b.saturating_duration_since(a)
}

/// `stormark run DIR --profile quick | cat`: the target line before any load, the first
/// phase's table before the second phase ends, each table once, the summary after.
#[test]
fn a_piped_run_prints_each_phase_as_it_ends() {
    let dir = temp_dir(TMP);
    let t = target(&dir);
    let said = watch(&["run", &t, "--profile", "quick"]);
    assert_eq!(said.code, 0, "{}", said.text());
    let target = said.first(|l| l.starts_with("target: "));
    let first = said.first(|l| l.starts_with("run:randrw-4k  "));
    let second = said.first(|l| l.starts_with("run:seqwrite-1m  "));
    let third = said.first(|l| l.starts_with("run:seqread-1m  "));
    // The first phase measures 8 s after the target line; the second 5 s after the first
    // table, which was therefore printed before the second phase ended.
    assert!(
        apart(target, first) >= Duration::from_secs(6),
        "{}",
        said.text()
    );
    assert!(
        apart(first, second) >= Duration::from_secs(4),
        "{}",
        said.text()
    );
    assert!(
        apart(second, third) >= Duration::from_secs(4),
        "{}",
        said.text()
    );
    for name in ["run:randrw-4k  ", "run:seqwrite-1m  ", "run:seqread-1m  "] {
        assert_eq!(
            said.count(|l| l.starts_with(name)),
            1,
            "{name} twice: {}",
            said.text()
        );
    }
    // The summary at the end: what the hosts did in each phase, findings, the status.
    let summary = said.first(|l| l == "hosts during each phase:");
    assert!(summary >= third);
    assert_eq!(
        said.lines.last().unwrap().1,
        "status: ok",
        "{}",
        said.text()
    );
    // The phase's own findings under its table, and every finding again in the summary.
    let findings = said.first(|l| l == "findings:");
    assert!(findings >= summary);
}

/// A 3-step run with `--progress 1s` into a pipe: a progress line per second of load, as
/// it goes, in the documented form; none with `-q`.
#[test]
fn progress_lines_come_each_second_into_a_pipe() {
    let dir = temp_dir(TMP);
    let t = target(&dir);
    let said = watch(&[
        "run",
        &t,
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--size",
        "8m",
        "--time",
        "4s",
        "--ramp",
        "0",
        "--sweep",
        "iodepth=1,2,4",
        "--progress",
        "1s",
    ]);
    assert_eq!(said.code, 0, "{}", said.text());
    let progress: Vec<&(Instant, String)> = said
        .lines
        .iter()
        .filter(|(_, l)| l.starts_with("progress: "))
        .collect();
    // 3 steps of 4 measured seconds each: 12 seconds, a line each (2 spared).
    assert!(progress.len() >= 10, "{}", said.text());
    for (_, l) in &progress {
        assert!(
            l.starts_with("progress: phase 1/3 sweep:iodepth=1  ")
                || l.starts_with("progress: phase 2/3 sweep:iodepth=2  ")
                || l.starts_with("progress: phase 3/3 sweep:iodepth=4  "),
            "{l}"
        );
        assert!(l.contains(" IOPS  ") && l.contains("  p99 ") && l.ends_with(" errors"));
    }
    // Said as the seconds passed, not at the end: the first and the last lines are most of
    // the 12 s apart.
    let (a, b) = (progress[0].0, progress[progress.len() - 1].0);
    assert!(apart(a, b) >= Duration::from_secs(7), "{}", said.text());
    // Each step's line as it ends, before the sweep's table. (Its measured seconds are the
    // host's: a last read this host's DAMON sent to the disk ended a step at 4.2 s.)
    let step = said.first(|l| l.starts_with("sweep:iodepth=1  ") && l.contains(" s  "));
    assert!(apart(step, said.exited) >= Duration::from_secs(6));

    let quiet = watch(&[
        "run",
        &t,
        "--rw",
        "randread",
        "--size",
        "8m",
        "--time",
        "2s",
        "--progress",
        "1s",
        "-q",
    ]);
    assert_eq!(quiet.code, 0, "{}", quiet.text());
    assert!(!quiet.text().contains("progress: "), "{}", quiet.text());
}

/// `--json -`: the document alone on standard output; the progress lines and the tables on
/// standard error.
#[test]
fn progress_stays_out_of_a_document_on_stdout() {
    let dir = temp_dir(TMP);
    let t = target(&dir);
    let said = watch(&[
        "run",
        &t,
        "--rw",
        "randread",
        "--size",
        "8m",
        "--time",
        "3s",
        "--progress",
        "1s",
        "--json",
        "-",
    ]);
    assert_eq!(said.code, 0, "{}", said.text());
    let stdout: String = said.lines.iter().map(|(_, l)| format!("{l}\n")).collect();
    let doc: serde_json::Value = serde_json::from_str(&stdout).expect("stdout is the document");
    assert_eq!(doc["status"], "ok");
    assert!(
        said.stderr.contains("progress: phase 1/1 run  "),
        "{}",
        said.stderr
    );
    assert!(said.stderr.contains("target: "), "{}", said.stderr);
    assert!(said.stderr.ends_with("status: ok\n"), "{}", said.stderr);
}

/// `--target-latency`: each step's line, with its verdict, as it ends.
#[test]
fn a_search_says_each_step_as_it_ends() {
    let dir = temp_dir(TMP);
    let t = target(&dir);
    let said = watch(&[
        "run",
        &t,
        "--rw",
        "randread",
        "--size",
        "8m",
        "--target-latency",
        "p99<=1h",
        "--step-time",
        "2s",
        "--ramp",
        "0",
        "--search-steps",
        "3",
        "--progress",
        "0",
    ]);
    assert_eq!(said.code, 0, "{}", said.text());
    let first = said.first(|l| l.starts_with("search step 1 of at most 3: "));
    let second = said.first(|l| l.starts_with("search step 2 of at most 3: "));
    said.first(|l| l.starts_with("search step 3 of at most 3: ") && l.ends_with(": met"));
    // Two more steps of 2 measured seconds each came after the first step's line.
    assert!(
        apart(first, said.exited) >= Duration::from_millis(3500),
        "{}",
        said.text()
    );
    assert!(
        apart(first, second) >= Duration::from_millis(1500),
        "{}",
        said.text()
    );
    assert_eq!(said.count(|l| l.starts_with("progress: ")), 0);
}

/// `stormark suite`: each step's line (step i of n, its result and figures) as it ends.
#[test]
fn a_suite_says_each_step_as_it_ends() {
    let dir = temp_dir(TMP);
    let t = target(&dir);
    let file = dir.path().join("three.toml");
    let step = |name: &str| {
        format!("[[step]]\nname = \"{name}\"\ncommand = [\"run\", \"{t}\", \"--rw\", \"randread\", \"--size\", \"8m\", \"--time\", \"2s\"]\n\n")
    };
    std::fs::write(&file, step("a") + &step("b") + &step("c")).unwrap();
    let out = dir.path().join("out");
    let said = watch(&[
        "suite",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(said.code, 0, "{}", said.text());
    let first = said.first(|l| l.starts_with("== [1/3] a: pass in ") && l.contains(" ops/s, "));
    let second = said.first(|l| l.starts_with("== [2/3] b: pass in "));
    said.first(|l| l.starts_with("== [3/3] c: pass in "));
    // Two more steps of 2 measured seconds each came after the first step's line.
    assert!(
        apart(first, said.exited) >= Duration::from_millis(3500),
        "{}",
        said.text()
    );
    assert!(
        apart(first, second) >= Duration::from_millis(1500),
        "{}",
        said.text()
    );
}

/// Over agents: each progress line names the host that did the least in that second.
#[test]
fn a_fleets_progress_names_its_slowest_host() {
    let dir = temp_dir(TMP);
    let allowed = dir.path().join("allowed");
    std::fs::create_dir(&allowed).unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "live-test-token-0123456789abcdef\n").unwrap();
    let mut agents = Vec::new();
    let mut listens = Vec::new();
    for i in 0..2 {
        let listen = stormark_testkit::free_addr();
        agents.push(
            Command::new(BIN)
                .args(["agent", "--listen", &listen, "--token-file"])
                .arg(&token)
                .arg("--allow-path")
                .arg(&allowed)
                .arg("--state-dir")
                .arg(dir.path().join(format!("state{i}")))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        stormark_testkit::wait_listening(&listen, "an agent");
        listens.push(listen);
    }
    let json = dir.path().join("r.json");
    let said = watch(&[
        "run",
        allowed.to_str().unwrap(),
        "--agents",
        &listens.join(","),
        "--token-file",
        token.to_str().unwrap(),
        "--rw",
        "randread",
        "--size",
        "8m",
        "--time",
        "4s",
        "--progress",
        "1s",
        "--json",
        json.to_str().unwrap(),
    ]);
    for mut a in agents {
        let _ = a.kill();
        let _ = a.wait();
    }
    assert_eq!(said.code, 0, "{}", said.text());
    let doc = stormark_testkit::read_json(&json);
    let names: Vec<String> = doc["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["name"].as_str().unwrap().to_string())
        .collect();
    let progress: Vec<&String> = said
        .lines
        .iter()
        .map(|(_, l)| l)
        .filter(|l| l.starts_with("progress: phase 1/1 run  "))
        .collect();
    assert!(progress.len() >= 2, "{}", said.text());
    for l in progress {
        let slowest = l
            .split("  slowest ")
            .nth(1)
            .unwrap_or_else(|| panic!("no slowest host: {l}"));
        assert!(
            names.iter().any(|n| slowest.starts_with(&format!("{n} "))),
            "{l} names none of {names:?}"
        );
    }
}
