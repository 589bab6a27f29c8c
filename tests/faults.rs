//! Issue 53: services that fail like services. An iSCSI target or an NFS server killed or
//! stopped mid-run against the real binary: the phase ends at its time plus the grace, what
//! was in flight is counted (a hang-up as `reset`, a stall as `timeout` at its age, in the
//! latency), and the run ends with exit 1. A dead target once hung a run for ever.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use stormark_testkit::{phase, read_json, temp_dir, Ganesha, Tgt};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

/// How long a test waits for a run that should end by itself before it calls it hung: far
/// beyond the run's time and grace, so that only a hang (which lasted 600 s and more) fails.
const HUNG: Duration = Duration::from_secs(120);

/// `stormark run <target> <args> --json <json>`, started.
fn start(target: &str, json: &std::path::Path, args: &[&str]) -> Child {
    Command::new(BIN)
        .arg("run")
        .arg(target)
        .args(args)
        .arg("--json")
        .arg(json)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running stormark")
}

/// Waits for `child` until [`HUNG`]: its exit code and stderr, or `None` when it was still
/// running (it is killed).
fn finish(mut child: Child) -> Option<(i32, String)> {
    let deadline = Instant::now() + HUNG;
    while child.try_wait().expect("waiting").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            eprintln!("hung; it said: {}", String::from_utf8_lossy(&out.stderr));
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("output");
    Some((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// Sends `sig` to process `pid`.
fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) of a server this test started.
    unsafe { libc::kill(pid as libc::pid_t, sig) };
}

/// The failures of the run phase's reads of kind `kind` (`reset`, `timeout`).
fn read_errors(r: &serde_json::Value, kind: &str) -> u64 {
    phase(r, "run")["errors"].as_array().map_or(0, |all| {
        all.iter()
            .filter(|e| e["op"] == "read" && e["kind"] == kind)
            .filter_map(|e| e["count"].as_u64())
            .sum()
    })
}

/// Waits until `json` says the run phase is under way (the load has started).
fn wait_for_load(json: &std::path::Path, child: &mut Child) {
    let deadline = Instant::now() + HUNG;
    while Instant::now() < deadline && child.try_wait().ok().flatten().is_none() {
        let started = std::fs::read_to_string(json)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .is_some_and(|r| r["status"] == "running");
        if started {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // Into the run's seconds.
    std::thread::sleep(Duration::from_millis(1500));
}

#[test]
fn an_iscsi_target_killed_mid_run_ends_the_run_with_its_requests_counted() {
    let test = "an_iscsi_target_killed_mid_run_ends_the_run_with_its_requests_counted";
    let Some(t) = Tgt::for_test(TMP, test, 64 << 20, None) else {
        return;
    };
    killed_service(&t.url(1), t.pid(), &[]);
}

#[test]
fn a_stopped_iscsi_target_stretches_no_phase_and_its_stall_is_counted() {
    let test = "a_stopped_iscsi_target_stretches_no_phase_and_its_stall_is_counted";
    let Some(t) = Tgt::for_test(TMP, test, 64 << 20, None) else {
        return;
    };
    stalled_service(&t.url(1), t.pid(), &[]);
}

#[test]
fn an_nfs_server_killed_mid_run_ends_the_run_with_its_requests_counted() {
    let test = "an_nfs_server_killed_mid_run_ends_the_run_with_its_requests_counted";
    let Some(g) = Ganesha::for_test(TMP, test) else {
        return;
    };
    killed_service(&g.url(""), g.pid(), &["--size", "8m"]);
}

#[test]
fn a_stopped_nfs_server_stretches_no_phase_and_its_stall_is_counted() {
    let test = "a_stopped_nfs_server_stretches_no_phase_and_its_stall_is_counted";
    let Some(g) = Ganesha::for_test(TMP, test) else {
        return;
    };
    stalled_service(&g.url(""), g.pid(), &["--size", "8m"]);
}

/// A service killed (SIGKILL) 1.5 s into an 8 s phase: the run ends by itself, what was in
/// flight counted (a hang-up as `reset`; a request whose answer never came, `timeout`), the
/// load before it measured, exit 1.
fn killed_service(target: &str, pid: u32, extra: &[&str]) {
    let dir = temp_dir(TMP);
    let json = dir.path().join("r.json");
    let mut args = vec![
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--iodepth",
        "8",
        "--time",
        "8s",
        "-q",
    ];
    args.extend_from_slice(extra);
    let mut child = start(target, &json, &args);
    wait_for_load(&json, &mut child);
    signal(pid, libc::SIGKILL);
    let (code, err) = finish(child).expect("the run ended by itself after its service died");
    assert_eq!(code, 1, "{err}");
    let r = read_json(&json);
    let run = phase(&r, "run");
    let failed = read_errors(&r, "reset") + read_errors(&r, "timeout");
    assert!(failed > 0, "{err}\n{}", run["errors"]);
    assert!(
        run["by_op"]["read"]["ops"].as_u64().unwrap_or(0) > 0,
        "{}",
        run["by_op"]
    );
}

/// A service stopped (SIGSTOP) 1.5 s into a 5 s phase and left stopped: the run ends by
/// itself while the service is still stopped, its unanswered requests counted as timeouts
/// of their age (the latency's maximum at least the grace), exit 1. Resumed afterwards.
fn stalled_service(target: &str, pid: u32, extra: &[&str]) {
    let dir = temp_dir(TMP);
    let json = dir.path().join("r.json");
    let mut args = vec![
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--iodepth",
        "4",
        "--time",
        "5s",
        "-q",
    ];
    args.extend_from_slice(extra);
    let mut child = start(target, &json, &args);
    wait_for_load(&json, &mut child);
    signal(pid, libc::SIGSTOP);
    let ended = finish(child);
    signal(pid, libc::SIGCONT);
    let (code, err) = ended.expect("the run ended by itself while its service was stopped");
    assert_eq!(code, 1, "{err}");
    let r = read_json(&json);
    let run = phase(&r, "run");
    assert!(read_errors(&r, "timeout") > 0, "{err}\n{}", run["errors"]);
    // The stalled requests' ages are in the latency: at least the grace (2 s).
    let max = run["by_op"]["read"]["latency_ns"]["max"]
        .as_u64()
        .unwrap_or(0);
    assert!(
        max >= 2_000_000_000,
        "max latency {max} ns: {}",
        run["by_op"]
    );
    // The failure says what happened; what could not be removed from a server that did not
    // answer is named as such, not blamed on files of others.
    assert!(
        r["failure"].to_string().contains("unanswered"),
        "{}",
        r["failure"]
    );
    let notes = r["notes"].to_string();
    assert!(!notes.contains("files not created by stormark"), "{notes}");
}
