//! An agent removing the last run's files is never deaf (issue 53): the removal runs beside
//! its service, a coordinator that comes meanwhile is told how much is left, says so on one
//! line and waits for it before any load, and Ctrl-C during that wait ends the run as
//! interrupted, its results written. On a real agent over loopback, with a working set whose
//! removal takes seconds: random 4 KiB writes fragment preallocated files into many extents,
//! and a disk that discards what is freed (this machine's, mounted `discard`) takes seconds
//! to free them. A suite over three loopback agents runs such a step and the next one at once.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use stormark_testkit::{entries, free_addr, read_json, temp_dir, text};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

/// What a run's coordinator says while it waits for the agent.
const WAITING: &str = "removing the last run's files";

/// What the first run's results say when the agent went on removing after it.
const WENT_ON: &str = "the agent goes on removing the run's files after the run";

/// An agent on a loopback port, killed when dropped.
struct Agent(Child);

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts an agent on `addr`, allowed `target`, its journal in `dir/state` and its log in
/// `dir/NAME.log`, and waits until it listens.
fn start_agent(dir: &Path, name: &str, addr: &str, token: &Path, target: &Path) -> Agent {
    let log = std::fs::File::create(dir.join(format!("{name}.log"))).unwrap();
    let agent = Agent(
        Command::new(BIN)
            .args(["agent", "--listen", addr, "--token-file"])
            .arg(token)
            .arg("--allow-path")
            .arg(target)
            .arg("--state-dir")
            .arg(dir.join("state"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("starting an agent"),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect_timeout(&addr.parse().unwrap(), Duration::from_millis(200)).is_err() {
        assert!(
            Instant::now() < deadline,
            "the agent on {addr} did not listen"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    agent
}

/// Waits (generously: a removal on a loaded disk) until nothing is left in `target`.
fn wait_empty(target: &Path) {
    let deadline = Instant::now() + Duration::from_secs(600);
    while !entries(target).is_empty() {
        assert!(
            Instant::now() < deadline,
            "left behind: {:?}",
            entries(target)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The flags of a run whose files take seconds to remove, with `--rate-iops` of 6,000 a host:
/// 18,000 random 4 KiB writes in 3 s into two preallocated 256 MiB files leave them in
/// thousands of pieces, about 5 s to remove on this machine's disk, which discards what is
/// freed.
const FRAGMENTING: &[&str] = &[
    "--rw",
    "randwrite",
    "--bs",
    "4k",
    "--direct",
    "--iodepth",
    "16",
    "--jobs",
    "2",
    "--size",
    "256m",
];

/// A `stormark run` over `agent` on `target`, [`FRAGMENTING`] for 3 s.
fn run_cmd(agent: &str, token: &Path, target: &Path, json: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.arg("run")
        .arg(target)
        .args(FRAGMENTING)
        .args([
            "--rate-iops",
            "6000",
            "--time",
            "3s",
            "-q",
            "--agents",
            agent,
            "--token-file",
        ])
        .arg(token)
        .arg("--json")
        .arg(json);
    c
}

fn notes(doc: &Value) -> String {
    doc["notes"].to_string()
}

/// The run's results are complete: status ok, a measured run phase with I/O in it.
fn complete(doc: &Value, said: &str) {
    assert_eq!(doc["status"], "ok", "{said}");
    let run = doc["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "run")
        .unwrap_or_else(|| panic!("no run phase: {said}"));
    assert!(
        run["total"]["ops"].as_u64().unwrap_or(0) > 0,
        "nothing measured: {said}"
    );
}

fn finished(out: &Output, what: &str) -> String {
    let said = text(out);
    eprintln!("--- {what}:\n{said}");
    said
}

#[test]
fn a_run_right_after_a_slow_cleanup_waits_for_it_then_runs() {
    let dir = temp_dir(TMP);
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "cleanup-test-token-0123456789\n").unwrap();
    let addr = free_addr();
    let _agent = start_agent(dir.path(), "agent", &addr, &token, &target);

    // The first run: its files outlive it, removed by the agent after it ended.
    let first = dir.path().join("first.json");
    let out = run_cmd(&addr, &token, &target, &first).output().unwrap();
    let said = finished(&out, "first run");
    assert_eq!(out.status.code(), Some(0), "{said}");
    let doc = read_json(&first);
    complete(&doc, &said);
    if !notes(&doc).contains(WENT_ON) {
        eprintln!(
            "skipped: this disk removed the first run's files before the run ended ({}), so no run has to wait; it needs a disk that takes seconds to free fragmented files (one mounted with discard)",
            notes(&doc)
        );
        return;
    }

    // The second, at once: it waits for the removal, says so, then runs in full.
    let second = dir.path().join("second.json");
    let out = run_cmd(&addr, &token, &target, &second).output().unwrap();
    let said = finished(&out, "second run");
    assert_eq!(out.status.code(), Some(0), "{said}");
    let line = said
        .lines()
        .find(|l| l.contains(WAITING))
        .unwrap_or_else(|| panic!("no waiting line: {said}"));
    assert!(
        line.starts_with(&format!("agent {addr}: ")) && line.ends_with("; waiting"),
        "{line}"
    );
    complete(&read_json(&second), &said);
    let doc = read_json(&second);
    if !notes(&doc).contains(WENT_ON) {
        eprintln!("skipped the interrupted wait: the second run's files were gone before it ended");
        return;
    }

    // The third, at once, Ctrl-C while it waits: interrupted, its results written, and the
    // agent still serves the next run.
    let third = dir.path().join("third.json");
    let mut child = run_cmd(&addr, &token, &target, &third)
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut heard = String::new();
    loop {
        let mut l = String::new();
        if stderr.read_line(&mut l).unwrap() == 0 {
            break;
        }
        heard.push_str(&l);
        if l.contains(WAITING) {
            break;
        }
    }
    if !heard.contains(WAITING) {
        let _ = child.wait();
        eprintln!(
            "skipped the interrupted wait: the removal ended before the third run asked ({heard})"
        );
        return;
    }
    let asked = Instant::now();
    // SAFETY: the child's pid, still running (it waits for the agent).
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let status = child.wait().unwrap();
    let took = asked.elapsed();
    assert_eq!(status.code(), Some(1), "{heard}");
    // Generous: it checks for Ctrl-C every 50 ms.
    assert!(took < Duration::from_secs(20), "{took:?}");
    let doc = read_json(&third);
    assert_eq!(doc["status"], "interrupted", "{doc}");
    assert!(
        doc["failure"]
            .as_str()
            .unwrap_or("")
            .contains("waiting for an agent to remove its last run's files"),
        "{doc}"
    );

    // The removal ends, and nothing of the runs is left.
    wait_empty(&target);
}

/// Issue 53: a suite over three loopback agents whose first step leaves seconds of removal on
/// each completes every step: the next step waits for the agents, saying so, then runs. The
/// quickest honest form of `suite acceptance --time 3s` over three loopback agents, whose
/// `--size 4g --jobs 4` steps need 48 GiB at once on one disk.
#[test]
fn a_suite_step_after_a_slow_cleanup_waits_for_the_agents_then_runs() {
    let dir = temp_dir(TMP);
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "cleanup-test-token-0123456789\n").unwrap();
    // Three hosts' addresses on loopback, each its own (a port free on one is free on all).
    let port = free_addr().rsplit_once(':').unwrap().1.to_string();
    let addrs: Vec<String> = (1..=3).map(|i| format!("127.0.0.{i}:{port}")).collect();
    let _agents: Vec<Agent> = addrs
        .iter()
        .enumerate()
        .map(|(i, a)| start_agent(dir.path(), &format!("agent{i}"), a, &token, &target))
        .collect();
    let quoted = |args: &[&str]| {
        args.iter()
            .map(|a| format!("{a:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let t = target.to_str().unwrap();
    let file = dir.path().join("steps.toml");
    std::fs::write(
        &file,
        format!(
            "[[step]]\nname = \"fragment\"\ncommand = [\"run\", {t:?}, {}]\n\n\
             [[step]]\nname = \"randread-4k\"\ncommand = [\"run\", {t:?}, {}]\n",
            // The rate is the three hosts' total.
            quoted(&[FRAGMENTING, &["--rate-iops", "18000"]].concat()),
            quoted(&[
                "--rw",
                "randread",
                "--bs",
                "4k",
                "--direct",
                "--jobs",
                "4",
                "--iodepth",
                "32",
                "--size",
                "16m"
            ]),
        ),
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let out = Command::new(BIN)
        .arg("suite")
        .arg(&file)
        .args([
            "--time",
            "3s",
            "-q",
            "--agents",
            &addrs.join(","),
            "--token-file",
        ])
        .arg(&token)
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    let said = finished(&out, "suite");
    assert_eq!(out.status.code(), Some(0), "{said}");
    let summary = read_json(&out_dir.join("summary.json"));
    let steps = summary["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{summary}");
    for step in steps {
        assert_eq!(step["result"], "pass", "{step}");
        let doc = read_json(&out_dir.join(step["document"].as_str().unwrap()));
        assert_eq!(doc["hosts"].as_array().unwrap().len(), 3, "{step}");
        complete(&doc, &said);
    }
    let first = read_json(&out_dir.join(steps[0]["document"].as_str().unwrap()));
    if notes(&first).contains(WENT_ON) {
        assert!(said.contains(WAITING), "no waiting line: {said}");
    } else {
        eprintln!(
            "the waiting not exercised: the agents removed the first step's files before it ended ({})",
            notes(&first)
        );
    }
    wait_empty(&target);
}

/// Issue 53: an agent killed while it removes a run's files keeps that run in its journal
/// until they are gone, so its next start removes the rest (the journal entry was dropped
/// before the removal, and 8 GiB stayed on disk, named nowhere).
#[test]
fn an_agent_killed_while_removing_removes_the_rest_at_its_next_start() {
    let dir = temp_dir(TMP);
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "cleanup-test-token-0123456789\n").unwrap();
    let addr = free_addr();
    let mut agent = start_agent(dir.path(), "agent", &addr, &token, &target);
    let json = dir.path().join("run.json");
    let out = run_cmd(&addr, &token, &target, &json).output().unwrap();
    let said = finished(&out, "run");
    assert_eq!(out.status.code(), Some(0), "{said}");
    let doc = read_json(&json);
    if !notes(&doc).contains(WENT_ON) {
        eprintln!(
            "skipped: this disk removed the run's files before the run ended ({})",
            notes(&doc)
        );
        return;
    }
    agent.0.kill().unwrap();
    agent.0.wait().unwrap();
    let left = entries(&target);
    if left.is_empty() {
        eprintln!("skipped: the removal ended before the agent was killed");
        return;
    }
    // The same state directory: the journal of the killed agent is recovered at the start,
    // before it listens.
    let again = start_agent(dir.path(), "again", &addr, &token, &target);
    assert!(
        entries(&target).is_empty(),
        "left after the restart: {:?}",
        entries(&target)
    );
    let log = std::fs::read_to_string(dir.path().join("again.log")).unwrap();
    assert!(
        log.contains(&format!("removed {}", target.join(&left[0]).display()))
            && log.contains("left by an earlier run that did not finish"),
        "{log}"
    );
    drop(again);
}
