//! `stormark run --launch`: agents started for one run by a real launcher (srun of a real
//! single-node Slurm, Open MPI's mpirun), their results merged exactly, and nothing of them
//! left after the run, also when the launcher starts fewer agents than it says or exits early.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use stormark_testkit::{read_json, require_tool, temp_dir, text, Slurm, TempDir};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

/// The pids of launched agents serving `dir` (their `--allow-path`), with their command
/// lines: the agents themselves, or with `launchers` also any process whose command line
/// holds an agent's (the launcher).
fn launched_of(dir: &Path, launchers: bool) -> Vec<(u32, String)> {
    let dir = dir.display().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let words: Vec<String> = raw
            .split(|b| *b == 0)
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .collect();
        let agent = words.get(1).is_some_and(|w| w == "agent") || launchers;
        if agent && words.iter().any(|w| w == "--launched") && words.contains(&dir) {
            found.push((pid, words.join(" ")));
        }
    }
    found
}

/// Waits (a generous bound for a loaded machine) until no launched agent of `dir` (nor its
/// launcher) is left, and fails naming those that are.
fn assert_none_left(dir: &Path) {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let left = launched_of(dir, true);
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < until,
            "launched agents left 30 s after the run: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `stormark run DIR --launch LAUNCHER --engine null --size 1m --time 3s --json out.json`,
/// with `env` added to its environment.
fn launch_run(dir: &TempDir, launcher: &str, env: &[(&str, &str)]) -> (Output, Value) {
    let out_json = dir.path().join("out.json");
    let target = dir.path().join("bench");
    std::fs::create_dir_all(&target).unwrap();
    let out = Command::new(BIN)
        .args(["run"])
        .arg(&target)
        .args([
            "--launch", launcher, "--engine", "null", "--size", "1m", "--time", "3s", "--json",
        ])
        .arg(&out_json)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let doc = if out_json.exists() {
        read_json(&out_json)
    } else {
        Value::Null
    };
    (out, doc)
}

/// Four hosts, each with its own figures, and the system's total their exact sum.
fn assert_four_hosts_merged(out: &Output, doc: &Value) {
    assert_eq!(out.status.code(), Some(0), "{}", text(out));
    let hosts = doc["hosts"].as_array().expect("hosts");
    assert_eq!(hosts.len(), 4, "{}", text(out));
    let phase = doc["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "run")
        .expect("the run phase");
    let by_host = phase["by_host"].as_object().expect("by_host");
    assert_eq!(by_host.len(), 4, "{by_host:?}");
    let each: Vec<u64> = by_host
        .values()
        .map(|h| h["total"]["ops"].as_u64().unwrap())
        .collect();
    assert!(each.iter().all(|&n| n > 0), "{each:?}");
    assert_eq!(
        phase["total"]["ops"].as_u64().unwrap(),
        each.iter().sum::<u64>(),
        "the total is the hosts' sum"
    );
    // Four agents, four ports.
    let mut ports: Vec<&str> = hosts
        .iter()
        .map(|h| h["address"].as_str().unwrap())
        .collect();
    ports.sort();
    ports.dedup();
    assert_eq!(ports.len(), 4, "{ports:?}");
}

/// Issue 57: `srun -n 4` of a real single-node Slurm starts four agents, the run merges
/// them exactly, and none is left after it.
#[test]
fn srun_launches_four_agents_that_are_merged_exactly_and_gone_after() {
    let test = "launch::srun_launches_four_agents_that_are_merged_exactly_and_gone_after";
    let Some(slurm) = Slurm::for_test(TMP, test) else {
        return;
    };
    let dir = temp_dir(TMP);
    let conf = slurm.conf.display().to_string();
    let (out, doc) = launch_run(&dir, "srun -n 4", &[("SLURM_CONF", &conf)]);
    assert_four_hosts_merged(&out, &doc);
    assert_none_left(&dir.path().join("bench"));
}

/// Issue 57: the same with Open MPI's `mpirun --oversubscribe -np 4`.
#[test]
fn mpirun_launches_four_agents_that_are_merged_exactly_and_gone_after() {
    let test = "launch::mpirun_launches_four_agents_that_are_merged_exactly_and_gone_after";
    if !require_tool(test, "mpirun") {
        return;
    }
    let dir = temp_dir(TMP);
    // mpirun refuses root unless told (the tests run as root); stormark adds nothing.
    let (out, doc) = launch_run(
        &dir,
        "mpirun --oversubscribe -np 4",
        &[
            ("OMPI_ALLOW_RUN_AS_ROOT", "1"),
            ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
        ],
    );
    assert_four_hosts_merged(&out, &doc);
    assert_none_left(&dir.path().join("bench"));
}

/// Issue 57: a launcher that starts two agents of the three it says (and then waits for
/// them) fails after --launch-wait in one line naming it and the count, and leaves nothing;
/// while they run, the one-run token is in the agents' environment and on no command line.
#[test]
fn a_launcher_that_starts_fewer_agents_than_it_says_fails_in_one_line_and_leaves_none() {
    let dir = temp_dir(TMP);
    let bench = dir.path().join("bench");
    std::fs::create_dir_all(&bench).unwrap();
    let launcher = r#"sh -c 'SLURM_NTASKS=3 SLURM_PROCID=0 "$@" & SLURM_NTASKS=3 SLURM_PROCID=2 "$@" & wait' sh"#;
    let started = Instant::now();
    let child = Command::new(BIN)
        .arg("run")
        .arg(&bench)
        .args(["--launch", launcher, "--launch-wait", "20s"])
        .args(["--engine", "null", "--time", "3s"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Both agents up: the token is in their environment, on no process's command line.
    let until = Instant::now() + Duration::from_secs(15);
    let agents = loop {
        let a = launched_of(&bench, false);
        if a.len() == 2 || Instant::now() >= until {
            break a;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(agents.len(), 2, "{agents:?}");
    let environ = std::fs::read(format!("/proc/{}/environ", agents[0].0)).unwrap();
    let token = environ
        .split(|b| *b == 0)
        .find_map(|v| v.strip_prefix(b"STORMARK_LAUNCH_TOKEN="))
        .map(|t| String::from_utf8_lossy(t).into_owned())
        .expect("the token in the agent's environment");
    assert!(token.len() >= 32, "{token}");
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            assert!(
                !String::from_utf8_lossy(&cmdline).contains(&token),
                "the token on the command line of {:?}",
                entry.file_name()
            );
        }
    }
    let out = child.wait_with_output().unwrap();
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: --launch \"sh -c 'SLURM_NTASKS=3")
            && err.contains("no more within 20 s (--launch-wait) after 2 of 3 agents reported"),
        "{err}"
    );
    assert!(took < Duration::from_secs(90), "took {took:?}");
    assert_none_left(&bench);
}

/// Issue 57: a launcher that exits after one of the two agents it says reported fails at
/// once (not after --launch-wait), in one line with the launcher's own last words, and the
/// agent it left behind is ended.
#[test]
fn a_launcher_that_exits_early_fails_in_one_line_and_leaves_none() {
    let dir = temp_dir(TMP);
    let bench = dir.path().join("bench");
    std::fs::create_dir_all(&bench).unwrap();
    let launcher = r#"sh -c 'SLURM_NTASKS=2 SLURM_PROCID=0 "$@" & sleep 2; echo "launcher: node2 is down" >&2; exit 3' sh"#;
    let started = Instant::now();
    let out = Command::new(BIN)
        .arg("run")
        .arg(&bench)
        .args(["--launch", launcher, "--launch-wait", "5m"])
        .args(["--engine", "null", "--time", "3s"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("the launcher exited (exit status: 3) after 1 of 2 agents reported")
            && err.ends_with("; it said: launcher: node2 is down\n"),
        "{err}"
    );
    // Well under --launch-wait 5m: the launcher's end is seen at once.
    assert!(took < Duration::from_secs(120), "took {took:?}");
    assert_none_left(&bench);
}

/// Issue 57: a launcher that cannot be started, and a command line that is not one, are one
/// line each (exit 2), before anything runs.
#[test]
fn a_launcher_that_cannot_start_is_one_line() {
    let dir = temp_dir(TMP);
    for (launcher, says) in [
        (
            "no-such-launcher -n 4",
            "--launch 'no-such-launcher -n 4': cannot start no-such-launcher: No such file",
        ),
        ("srun 'unclosed", "expected a launcher's command line"),
    ] {
        let out = Command::new(BIN)
            .arg("run")
            .arg(dir.path())
            .args(["--launch", launcher, "--engine", "null", "--time", "1s"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says), "{err}");
    }
}

/// Issue 57: with `--tls-ca DIR/ca.pem`, launched agents serve TLS with the certificates
/// `stormark cert agent DIR --name HOST --ip ADDR` made beside it; a host without one says so
/// in the run's one line, and agents whose certificates another CA signed are refused (exit 2),
/// leaving nothing.
#[test]
fn launched_agents_serve_tls_with_the_certificates_stormark_cert_made() {
    let test = "launch::launched_agents_serve_tls_with_the_certificates_stormark_cert_made";
    if !require_tool(test, "mpirun") {
        return;
    }
    let dir = temp_dir(TMP);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let host = host.trim();
    let cert = |args: &[&str]| {
        let out = Command::new(BIN).arg("cert").args(args).output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
    };
    let (tls, other) = (dir.path().join("tls"), dir.path().join("other"));
    let (tls_s, other_s) = (tls.display().to_string(), other.display().to_string());
    cert(&["ca", &tls_s]);
    cert(&["ca", &other_s]);
    let root = [
        ("OMPI_ALLOW_RUN_AS_ROOT", "1"),
        ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
    ];
    let bench = dir.path().join("bench");
    std::fs::create_dir_all(&bench).unwrap();
    let run = |ca: &Path| {
        Command::new(BIN)
            .arg("run")
            .arg(&bench)
            .args(["--launch", "mpirun --oversubscribe -np 2", "--tls-ca"])
            .arg(ca)
            .args(["--engine", "null", "--time", "2s", "--json"])
            .arg(dir.path().join("tls.json"))
            .envs(root)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    // No certificate for this host yet: the agent's own words end the run's line.
    let out = run(&tls.join("ca.pem"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!(
            "it said: error: --tls-cert {tls_s}/{host}.pem: cannot read it"
        )),
        "{err}"
    );
    assert_none_left(&bench);
    cert(&["agent", &tls_s, "--name", host, "--ip", "127.0.0.1"]);
    let out = run(&tls.join("ca.pem"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc = read_json(&dir.path().join("tls.json"));
    assert_eq!(doc["hosts"].as_array().unwrap().len(), 2);
    assert_none_left(&bench);
    // The same agents' certificates, trusted through another CA: refused.
    std::fs::copy(
        tls.join(format!("{host}.pem")),
        other.join(format!("{host}.pem")),
    )
    .unwrap();
    std::fs::copy(
        tls.join(format!("{host}.key")),
        other.join(format!("{host}.key")),
    )
    .unwrap();
    let out = run(&other.join("ca.pem"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(err.contains("invalid peer certificate"), "{err}");
    assert_none_left(&bench);
}

/// Issue 57: a launched agent says its address in one line and exits by itself when no
/// coordinator comes within --contact-within, and when its standard input from the launcher
/// closes; without the token in its environment it refuses in one line (exit 2).
#[test]
fn a_launched_agent_exits_when_no_coordinator_comes_or_its_input_closes() {
    let dir = temp_dir(TMP);
    let agent = |contact: &str, stdin: Stdio, token: bool| {
        let mut cmd = Command::new(BIN);
        cmd.args(["agent", "--launched", "--coordinator", "127.0.0.1"])
            .arg("--allow-path")
            .arg(dir.path())
            .args(["--contact-within", contact])
            .env_remove("STORMARK_LAUNCH_TOKEN")
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if token {
            cmd.env("STORMARK_LAUNCH_TOKEN", "0123456789abcdef0123456789abcdef");
        }
        cmd.spawn().unwrap()
    };
    let out = agent("600", Stdio::null(), false)
        .wait_with_output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("STORMARK_LAUNCH_TOKEN is not in this agent's environment"),
        "{err}"
    );
    // Its line, then its end, with no coordinator.
    let started = Instant::now();
    let out = agent("2", Stdio::null(), true).wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.starts_with("stormark-agent rank=0 size=1 address=127.0.0.1:"),
        "{said}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    // Its input closed: it ends well before --contact-within 600.
    let mut child = agent("600", Stdio::piped(), true);
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert!(line.starts_with("stormark-agent "), "{line}");
    let closed = Instant::now();
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        closed.elapsed() < Duration::from_secs(60),
        "{:?}",
        closed.elapsed()
    );
}
