//! Distributed runs (issue 4): a coordinator and agents, one per network namespace, joined by
//! a bridge. Needs root and `ip netns`; skipped with a printed reason elsewhere. `.ci/run`
//! runs as root, so CI runs these.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use stormark_testkit::{entries, read_json, require_netns, temp_dir, text, NetCluster, TempDir};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");
const PORT: u16 = 7878;

/// A cluster with one agent per host, each allowed its own directory.
struct Setup {
    net: NetCluster,
    dir: TempDir,
    token: PathBuf,
    targets: Vec<PathBuf>,
}

impl Setup {
    fn new(test: &str, hosts: usize) -> Option<Setup> {
        Setup::build(test, hosts, false)
    }

    /// Every agent allowed the same directory, each making its own run directory there.
    fn shared(test: &str, hosts: usize) -> Option<Setup> {
        Setup::build(test, hosts, true)
    }

    fn build(test: &str, hosts: usize, shared: bool) -> Option<Setup> {
        if !require_netns(test) {
            return None;
        }
        let net = NetCluster::new(hosts).expect("creating the namespaces");
        let dir = temp_dir(TMP);
        let token = dir.path().join("token");
        std::fs::write(&token, "cluster-test-token-0123456789\n").unwrap();
        let mut s = Setup {
            net,
            dir,
            token,
            targets: Vec::new(),
        };
        for i in 0..hosts {
            let t = match shared {
                true => s.dir.path().join("shared"),
                false => s.dir.path().join(format!("host{i}")),
            };
            if !t.exists() {
                std::fs::create_dir(&t).unwrap();
            }
            s.targets.push(t);
        }
        for i in 0..hosts {
            s.start_agent(i);
        }
        Some(s)
    }

    fn start_agent(&mut self, i: usize) -> u32 {
        let listen = format!("{}:{PORT}", self.net.addresses[i]);
        let log = self.dir.path().join(format!("agent{i}.log"));
        let pid = self
            .net
            .spawn(
                i,
                BIN,
                &[
                    "agent",
                    "--listen",
                    &listen,
                    "--token-file",
                    self.token.to_str().unwrap(),
                    "--allow-path",
                    self.targets[i].to_str().unwrap(),
                ],
                &log,
            )
            .expect("starting an agent");
        // Ready when it accepts connections.
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect_timeout(&listen.parse().unwrap(), Duration::from_millis(200))
            .is_err()
        {
            assert!(Instant::now() < deadline, "agent {i} did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        pid
    }

    fn agents(&self) -> String {
        self.net
            .addresses
            .iter()
            .map(|a| format!("{a}:{PORT}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// `stormark run` arguments for every agent, each on its own directory.
    fn args(&self, json: &Path, extra: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = vec![
            "run".into(),
            "--agents".into(),
            self.agents(),
            "--token-file".into(),
            self.token.to_str().unwrap().into(),
            "--quiet".into(),
            "--json".into(),
            json.to_str().unwrap().into(),
        ];
        for (a, t) in self.net.addresses.iter().zip(&self.targets) {
            v.push("--target".into());
            v.push(format!("{a}={}", t.display()));
        }
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    }

    fn run(&self, json: &Path, extra: &[&str]) -> Output {
        Command::new(BIN)
            .args(self.args(json, extra))
            .output()
            .expect("running the coordinator")
    }

    fn spawn(&self, json: &Path, extra: &[&str]) -> Child {
        Command::new(BIN)
            .args(self.args(json, extra))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting the coordinator")
    }
}

fn run_phase(r: &Value) -> &Value {
    r["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "run")
        .unwrap_or_else(|| panic!("no run phase in {r}"))
}

fn wait_until(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The wall-clock instant, ns after the Unix epoch, at which the run noticed a host's failure.
fn failure_unix_ns(r: &Value, host: usize) -> u128 {
    let started = r["started_at"].as_str().unwrap();
    // RFC 3339 UTC with milliseconds, as stats::format_rfc3339 writes it.
    let out = Command::new("date")
        .args(["-u", "-d", started, "+%s%N"])
        .output()
        .unwrap();
    let start: u128 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    start + u128::from(r["hosts"][host]["failure"]["at_ns"].as_u64().unwrap())
}

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

#[test]
fn three_hosts_sum_exactly_and_start_together() {
    let Some(s) = Setup::new("three_hosts_sum_exactly_and_start_together", 3) else {
        return;
    };
    let json = s.dir.path().join("r.json");
    let out = s.run(
        &json,
        &[
            "--rw",
            "randrw",
            "--bs",
            "4k",
            "--size",
            "8m",
            "--time",
            "3s",
            "--direct",
            "--iodepth",
            "4",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = read_json(&json);
    let p = run_phase(&r);
    let by_host = p["by_host"].as_object().unwrap();
    assert_eq!(by_host.len(), 3, "{by_host:?}");
    for op in ["read", "write"] {
        let sum: u64 = by_host
            .values()
            .map(|h| h["by_op"][op]["ops"].as_u64().unwrap())
            .sum();
        assert_eq!(p["by_op"][op]["ops"].as_u64().unwrap(), sum, "{op}");
        assert!(sum > 0);
    }
    let bytes: u64 = by_host
        .values()
        .map(|h| h["total"]["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(p["total"]["bytes"].as_u64().unwrap(), bytes);
    // Every host's histograms are there, so the total can be re-merged exactly.
    let hist = p["histograms"].as_object().unwrap();
    assert_eq!(
        hist.keys().filter(|k| k.ends_with("/read")).count(),
        3,
        "{:?}",
        hist.keys()
    );
    // The synchronized start: every host's first interval within 50 ms of the others.
    let starts: Vec<u64> = p["host_starts_ns"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(starts.len(), 3);
    let spread = starts.iter().max().unwrap() - starts.iter().min().unwrap();
    assert!(spread < 50_000_000, "hosts started {spread} ns apart");
    // Issue 16: how well the start is known, from the clocks measured before the phase.
    let uncertainty = p["start_uncertainty_ns"]
        .as_u64()
        .expect("start uncertainty");
    assert!(
        uncertainty > 0 && uncertainty < 1_000_000_000,
        "{uncertainty}"
    );
    // Per host: inventory, samples, address, clock; the terminal shows one row per host.
    for h in r["hosts"].as_array().unwrap() {
        assert!(h["address"].as_str().unwrap().ends_with(":7878"));
        assert!(h["clock_offset_ns"].as_i64().is_some(), "{h}");
        let rtt = h["clock_rtt_ns"].as_u64().expect("clock round trip");
        assert!(rtt / 2 <= uncertainty, "{rtt} {uncertainty}");
        assert!(h["inventory"]["cpus"].as_u64().is_some());
        assert!(!h["samples"].as_array().unwrap().is_empty());
        // On the run's time line: the sampler started with the host's validation, before
        // the phase, and its first sample ends about a second later.
        let first = h["samples"][0]["t_ns"].as_u64().unwrap();
        let phase_start = p["start_offset_ns"].as_u64().unwrap();
        assert!(
            first >= 900_000_000 && first < phase_start + 1_200_000_000,
            "first sample at {first} ns, the phase at {phase_start} ns"
        );
    }
    let shown = text(&out);
    assert!(shown.contains("system"), "{shown}");
    for a in &s.net.addresses {
        assert!(shown.contains(a.as_str()), "{a} missing from\n{shown}");
    }
    // Nothing left behind on any agent.
    for t in &s.targets {
        assert!(entries(t).is_empty(), "{}: {:?}", t.display(), entries(t));
    }
}

#[test]
fn refusals_are_clear_and_exit_2() {
    let Some(s) = Setup::new("refusals_are_clear_and_exit_2", 1) else {
        return;
    };
    let json = s.dir.path().join("r.json");
    let agents = s.agents();
    let base = [
        "--rw", "randread", "--size", "4m", "--time", "1s", "--quiet",
    ];

    // A wrong token.
    let wrong = s.dir.path().join("wrong");
    std::fs::write(&wrong, "not-the-right-token-at-all\n").unwrap();
    let t = s.targets[0].to_str().unwrap();
    let mut args = vec![
        "run",
        t,
        "--agents",
        &agents,
        "--token-file",
        wrong.to_str().unwrap(),
    ];
    args.extend(base);
    let out = Command::new(BIN).args(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("wrong token"), "{}", text(&out));

    // No token at all.
    let mut args = vec!["run", t, "--agents", &agents];
    args.extend(base);
    let out = Command::new(BIN).args(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("--token-file"), "{}", text(&out));

    // A call with no token at all, straight to the agent's gRPC port.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let status = rt.block_on(async {
        let mut c =
            stormark_cluster::pb::agent_client::AgentClient::connect(format!("http://{agents}"))
                .await
                .unwrap();
        c.handshake(stormark_cluster::pb::HandshakeRequest {
            version: "0.1.0".into(),
            coordinator: "test".into(),
        })
        .await
        .unwrap_err()
    });
    assert_eq!(status.code(), tonic::Code::Unauthenticated);
    assert!(
        status.message().starts_with("no token"),
        "{}",
        status.message()
    );

    // A target outside the agent's --allow-path list.
    let outside = s.dir.path().join("elsewhere");
    std::fs::create_dir(&outside).unwrap();
    let tok = s.token.to_str().unwrap();
    let mut args = vec![
        "run",
        outside.to_str().unwrap(),
        "--agents",
        &agents,
        "--token-file",
        tok,
    ];
    args.extend(base);
    let out = Command::new(BIN).args(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("outside this agent's --allow-path list"),
        "{}",
        text(&out)
    );
    assert!(entries(&outside).is_empty());

    // A busy agent: a second coordinator while the first runs.
    let first = s.spawn(&json, &["--rw", "randread", "--size", "4m", "--time", "8s"]);
    wait_until("the first run to start", Duration::from_secs(10), || {
        !entries(&s.targets[0]).is_empty()
    });
    let second = s.dir.path().join("second.json");
    let out = s.run(
        &second,
        &["--rw", "randread", "--size", "4m", "--time", "1s"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("busy: serving coordinator"),
        "{}",
        text(&out)
    );
    // The refusal is in the second results file too.
    assert!(read_json(&second)["failure"]
        .as_str()
        .unwrap()
        .contains("busy"));
    let first = first.wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
}

#[test]
fn a_killed_agent_is_detected_and_results_are_written() {
    let Some(mut s) = Setup::new("a_killed_agent_is_detected_and_results_are_written", 2) else {
        return;
    };
    let json = s.dir.path().join("r.json");
    let coordinator = s.spawn(
        &json,
        &["--rw", "randread", "--size", "4m", "--time", "30s"],
    );
    wait_until("both agents to run", Duration::from_secs(15), || {
        s.targets.iter().all(|t| !entries(t).is_empty())
    });
    std::thread::sleep(Duration::from_secs(2));
    // kill -9 the second agent (its namespace's process).
    let pid = s.net.namespaces[1].clone();
    let out = Command::new("ip")
        .args(["netns", "pids", &pid])
        .output()
        .unwrap();
    let killed_at = now_ns();
    for p in String::from_utf8_lossy(&out.stdout).split_whitespace() {
        let _ = Command::new("kill").args(["-9", p]).status();
    }
    let out = coordinator.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let r = read_json(&json);
    assert_eq!(r["status"], "failed");
    let failure = &r["hosts"][1]["failure"];
    assert!(
        failure["message"]
            .as_str()
            .is_some_and(|m| m.contains("connection closed")),
        "{}",
        r["hosts"]
    );
    assert_eq!(failure["phase"], "run");
    let noticed = failure_unix_ns(&r, 1).saturating_sub(killed_at);
    assert!(
        noticed < 5_000_000_000,
        "noticed {noticed} ns after the kill"
    );
    // The first agent was stopped and cleaned up (abort is the default).
    assert!(r["hosts"][0]["failure"].is_null());
    wait_until("agent 0 to clean up", Duration::from_secs(10), || {
        entries(&s.targets[0]).is_empty()
    });
    // The measured figures up to the failure are kept.
    assert!(run_phase(&r)["total"]["ops"].as_u64().unwrap() > 0);
    let _ = &mut s;
}

#[test]
fn a_cut_link_is_detected_and_others_continue() {
    let Some(s) = Setup::new("a_cut_link_is_detected_and_others_continue", 2) else {
        return;
    };
    let json = s.dir.path().join("r.json");
    let coordinator = s.spawn(
        &json,
        &[
            "--rw",
            "randread",
            "--size",
            "4m",
            "--time",
            "12s",
            "--on-agent-failure",
            "continue",
        ],
    );
    wait_until("both agents to run", Duration::from_secs(15), || {
        s.targets.iter().all(|t| !entries(t).is_empty())
    });
    // Past the preparation, the clock measurement and the first whole second of the stage,
    // with room for a loaded machine, so that host 1 has figures of its own before the cut.
    std::thread::sleep(Duration::from_secs(3));
    let cut_at = now_ns();
    s.net.cut(1).unwrap();
    let out = coordinator.wait_with_output().unwrap();
    // The run went on with host 0, but a host failed: exit 1.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let r = read_json(&json);
    let failure = &r["hosts"][1]["failure"];
    assert!(
        failure["message"].as_str().unwrap().contains("no word for"),
        "{failure}"
    );
    let noticed = failure_unix_ns(&r, 1).saturating_sub(cut_at);
    // Silence is declared after 4 s without a message; agents send one at least every second.
    assert!(
        noticed < 5_000_000_000,
        "noticed {noticed} ns after the cut"
    );
    let p = run_phase(&r);
    // Host 0 ran its full 12 s.
    assert!(
        p["duration_ns"].as_u64().unwrap() >= 11_000_000_000,
        "{}",
        p["duration_ns"]
    );
    assert!(p["by_host"].as_object().unwrap().len() == 2);
    assert!(text(&out).contains("failed"), "{}", text(&out));
    // The cut-off agent stops its load and removes its run directory on its own.
    wait_until(
        "agent 1 to clean up on its own",
        Duration::from_secs(15),
        || entries(&s.targets[1]).is_empty(),
    );
}

/// A coordinator lost mid-run (`lose` does it to the process): its agent stops its load,
/// removes its run directory on its own, and takes the next coordinator.
fn an_agent_outlives(test: &str, lose: impl FnOnce(&mut std::process::Child)) {
    let Some(s) = Setup::new(test, 1) else {
        return;
    };
    let json = s.dir.path().join("r.json");
    let mut coordinator = s.spawn(
        &json,
        &["--rw", "randread", "--size", "4m", "--time", "60s"],
    );
    wait_until("the run to start", Duration::from_secs(15), || {
        !entries(&s.targets[0]).is_empty()
    });
    lose(&mut coordinator);
    // A closed connection at once; a frozen coordinator within 15 s (the agent's ping after
    // 10 s without a byte, unanswered for 5 s), with room for a loaded machine.
    wait_until("the agent to clean up", Duration::from_secs(25), || {
        entries(&s.targets[0]).is_empty()
    });
    let _ = coordinator.kill();
    let _ = Command::new("kill")
        .args(["-CONT", &coordinator.id().to_string()])
        .status();
    coordinator.wait().unwrap();
    let out = s.run(
        &s.dir.path().join("next.json"),
        &["--rw", "randread", "--size", "4m", "--time", "1s"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn an_agent_survives_a_vanished_coordinator() {
    // Its connection closes: the session ends with it.
    an_agent_outlives("an_agent_survives_a_vanished_coordinator", |c| {
        c.kill().unwrap();
    });
}

#[test]
fn an_agent_stops_for_a_coordinator_stopped_mid_phase() {
    // Its connection stays open but answers nothing (Ctrl-Z): found by the agent's pings.
    an_agent_outlives("an_agent_stops_for_a_coordinator_stopped_mid_phase", |c| {
        let _ = Command::new("kill")
            .args(["-STOP", &c.id().to_string()])
            .status();
    });
}

#[test]
fn ctrl_c_on_the_coordinator_cleans_up_every_agent() {
    let Some(s) = Setup::new("ctrl_c_on_the_coordinator_cleans_up_every_agent", 2) else {
        return;
    };
    let json = s.dir.path().join("r.json");
    let coordinator = s.spawn(
        &json,
        &["--rw", "randread", "--size", "4m", "--time", "60s"],
    );
    wait_until("both agents to run", Duration::from_secs(15), || {
        s.targets.iter().all(|t| !entries(t).is_empty())
    });
    std::thread::sleep(Duration::from_secs(1));
    let _ = Command::new("kill")
        .args(["-INT", &coordinator.id().to_string()])
        .status();
    let out = coordinator.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let r = read_json(&json);
    assert_eq!(r["status"], "interrupted");
    for t in &s.targets {
        assert!(entries(t).is_empty(), "{}: {:?}", t.display(), entries(t));
    }
}

/// Issue 57: `stormark cert` makes a CA and each agent's certificate (its name and address);
/// two TLS agents serve a coordinator that trusts that CA, and refuse one that trusts another
/// or talks in clear. Nothing is overwritten, and keys are mode 600.
#[test]
fn stormark_cert_makes_what_two_tls_agents_and_a_coordinator_use() {
    use std::os::unix::fs::PermissionsExt;
    let test = "stormark_cert_makes_what_two_tls_agents_and_a_coordinator_use";
    if !require_netns(test) {
        return;
    }
    let mut net = NetCluster::new(2).unwrap();
    let dir = temp_dir(TMP);
    let token = dir.path().join("token");
    std::fs::write(&token, "cluster-test-token-0123456789\n").unwrap();
    let tls = dir.path().join("tls");
    let cert = |args: &[&str]| Command::new(BIN).arg("cert").args(args).output().unwrap();
    let out = cert(&["ca", tls.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let mut listens = Vec::new();
    let mut targets = Vec::new();
    for (i, ip) in net.addresses.clone().iter().enumerate() {
        let name = format!("node{i}");
        let out = cert(&["agent", tls.to_str().unwrap(), "--name", &name, "--ip", ip]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let key = tls.join(format!("{name}.key"));
        let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", key.display());
        let target = dir.path().join(format!("host{i}"));
        std::fs::create_dir(&target).unwrap();
        let listen = format!("{ip}:{PORT}");
        net.spawn(
            i,
            BIN,
            &[
                "agent",
                "--listen",
                &listen,
                "--token-file",
                token.to_str().unwrap(),
                "--allow-path",
                target.to_str().unwrap(),
                "--tls-cert",
                tls.join(format!("{name}.pem")).to_str().unwrap(),
                "--tls-key",
                key.to_str().unwrap(),
            ],
            &dir.path().join(format!("agent{i}.log")),
        )
        .unwrap();
        listens.push(listen);
        targets.push(target);
    }
    // Made again: refused in one line, exit 2, the files as they were.
    let before = std::fs::read(tls.join("node0.key")).unwrap();
    let out = cert(&[
        "agent",
        tls.to_str().unwrap(),
        "--name",
        "node0",
        "--ip",
        "10.9.9.9",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("node0.pem: exists"), "{}", text(&out));
    assert_eq!(text(&out).trim().lines().count(), 1, "{}", text(&out));
    assert_eq!(std::fs::read(tls.join("node0.key")).unwrap(), before);
    for listen in &listens {
        wait_until("the agent to listen", Duration::from_secs(20), || {
            TcpStream::connect_timeout(&listen.parse().unwrap(), Duration::from_millis(200)).is_ok()
        });
    }
    let json = dir.path().join("r.json");
    let run = |extra: &[&str]| {
        let agents = listens.join(",");
        let mut args = vec![
            "run",
            "--agents",
            &agents,
            "--token-file",
            token.to_str().unwrap(),
            "--rw",
            "randread",
            "--size",
            "4m",
            "--time",
            "1s",
            "--quiet",
            "--json",
            json.to_str().unwrap(),
        ];
        let maps: Vec<String> = listens
            .iter()
            .zip(&targets)
            .map(|(l, t)| format!("--target={l}={}", t.display()))
            .collect();
        args.extend(maps.iter().map(String::as_str));
        args.extend_from_slice(extra);
        Command::new(BIN).args(&args).output().unwrap()
    };
    let ca = tls.join("ca.pem");
    let out = run(&["--tls-ca", ca.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = read_json(&json);
    let by_host = run_phase(&r)["by_host"].as_object().unwrap();
    assert_eq!(by_host.len(), 2, "{by_host:?}");
    for (host, b) in by_host {
        assert!(b["total"]["ops"].as_u64().unwrap() > 0, "{host}: {b}");
    }
    // Plain HTTP/2 to a TLS agent is refused, and says what to do.
    std::fs::remove_file(&json).unwrap();
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--tls-ca"), "{}", text(&out));
    // A CA that did not sign the agents' certificates is refused.
    let other = dir.path().join("other");
    let out = cert(&["ca", other.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = run(&["--tls-ca", other.join("ca.pem").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    for t in &targets {
        assert!(entries(t).is_empty(), "{}: {:?}", t.display(), entries(t));
    }
}

/// Issue 57: different jobs on different hosts in one stage, as fio's client mode gives each
/// host its own job file: a heavy write on host 0 (the aggressor) and a 200 IOPS read shared by
/// hosts 1 and 2 (the victims, 100 each), all in one shared directory. Each host's figures are
/// its own: host 0 only writes, hosts 1 and 2 only read, each at about its share of the rate.
/// A host index the run does not have is refused in one line before anything connects.
#[test]
fn each_host_runs_the_jobs_naming_it_and_reports_its_own_figures() {
    let Some(s) = Setup::shared(
        "each_host_runs_the_jobs_naming_it_and_reports_its_own_figures",
        3,
    ) else {
        return;
    };
    let job = s.dir.path().join("interference.toml");
    let write_job = |hosts: &str| {
        std::fs::write(
            &job,
            format!(
                r#"size = "16m"
time = "3s"

[[job]]
name = "aggressor"
group = "interference"
rw = "randwrite"
bs = "64k"
iodepth = 8
hosts = [0]

[[job]]
name = "victim"
group = "interference"
rw = "randread"
bs = "4k"
rate_iops = 200
hosts = {hosts}
"#
            ),
        )
        .unwrap()
    };
    write_job("\"1-2\"");
    let json = s.dir.path().join("r.json");
    let out = s.run(&json, &["--job", job.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = read_json(&json);
    let p = run_phase(&r);
    let names: Vec<&str> = r["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["name"].as_str().unwrap())
        .collect();
    let by_host = &p["by_host"];
    let ops = |h: usize, op: &str| by_host[names[h]]["by_op"][op]["ops"].as_u64().unwrap_or(0);
    assert!(ops(0, "write") > 0, "host 0 wrote: {}", by_host[names[0]]);
    assert_eq!(
        ops(0, "read"),
        0,
        "host 0 only wrote: {}",
        by_host[names[0]]
    );
    for h in 1..=2 {
        let b = &by_host[names[h]];
        assert_eq!(ops(h, "write"), 0, "host {h} only read: {b}");
        // Its share of the open-loop rate, 100 a second: a generous band for a loaded machine.
        let iops = b["by_op"]["read"]["iops"].as_f64().unwrap();
        assert!((60.0..=140.0).contains(&iops), "host {h}: {iops} IOPS: {b}");
        eprintln!(
            "host {h}: {iops:.1} read IOPS, p99 {} ns",
            b["by_op"]["read"]["latency_ns"]["p99"]
        );
    }
    eprintln!(
        "host 0: {} write IOPS",
        by_host[names[0]]["by_op"]["write"]["iops"]
    );
    // The whole system's figures are the hosts' sum.
    assert_eq!(
        p["by_op"]["write"]["ops"].as_u64().unwrap(),
        ops(0, "write")
    );
    assert_eq!(
        p["by_op"]["read"]["ops"].as_u64().unwrap(),
        ops(1, "read") + ops(2, "read")
    );
    // The jobs travel in the results as indexes.
    assert_eq!(r["spec"]["jobs"][1]["hosts"], "1-2", "{}", r["spec"]);
    for t in &s.targets {
        assert!(entries(t).is_empty(), "{}: {:?}", t.display(), entries(t));
    }
    // A host the run does not have: one line, exit 2, nothing made.
    write_job("[3]");
    let out = s.run(&json, &["--job", job.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let said = text(&out);
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    assert!(
        said.contains("job victim: hosts 3: out of range; this run has 3 hosts, 0 to 2"),
        "{said}"
    );
    // A name as in --agents stands for its host.
    write_job(&format!("[\"{}\", 2]", s.net.addresses[1]));
    let out = s.run(&json, &["--job", job.to_str().unwrap(), "--time", "1s"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(read_json(&json)["spec"]["jobs"][1]["hosts"], "1-2");
    assert!(entries(&s.targets[0]).is_empty());
    // The command line's form: a job per --on section, the flags before the first --on
    // shared by both.
    let out = s.run(
        &json,
        &[
            "--size",
            "16m",
            "--time",
            "2s",
            "--on",
            "0",
            "--rw",
            "randwrite",
            "--bs",
            "64k",
            "--on",
            "1-2",
            "--rw",
            "randread",
            "--rate-iops",
            "200",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = read_json(&json);
    let p = run_phase(&r);
    let by_host = &p["by_host"];
    let ops = |h: usize, op: &str| by_host[names[h]]["by_op"][op]["ops"].as_u64().unwrap_or(0);
    assert!(ops(0, "write") > 0 && ops(0, "read") == 0, "{by_host}");
    for h in 1..=2 {
        assert!(ops(h, "read") > 0 && ops(h, "write") == 0, "{by_host}");
    }
    let jobs = &r["spec"]["jobs"];
    assert_eq!(
        (&jobs[0]["name"], &jobs[0]["hosts"]),
        (&"on-0".into(), &"0".into())
    );
    assert_eq!(
        (&jobs[1]["name"], &jobs[1]["hosts"]),
        (&"on-1-2".into(), &"1-2".into())
    );
    assert_eq!(
        jobs[1]["size"], "16m",
        "the shared flags reach every section"
    );
    // Hosts 1 and 2 sit a stage of host 0's job out: still sampled, and no finding of that
    // phase is about them (the phase's figures are not theirs).
    let out = s.run(
        &json,
        &[
            "--size", "16m", "--time", "1s", "--on", "0", "--rw", "randread",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = read_json(&json);
    let p = run_phase(&r);
    assert_eq!(
        p["by_host"].as_object().unwrap().len(),
        1,
        "{}",
        p["by_host"]
    );
    for h in 1..=2 {
        assert!(
            !r["hosts"][h]["samples"].as_array().unwrap().is_empty(),
            "host {h} sampled"
        );
        for f in r["findings"].as_array().unwrap() {
            assert!(!f["message"].as_str().unwrap().contains(names[h]), "{f}");
        }
    }
}

#[test]
fn sweeps_and_curves_carry_their_loads_to_every_agent() {
    let Some(s) = Setup::new("sweeps_and_curves_carry_their_loads_to_every_agent", 2) else {
        return;
    };
    // A sweep over workers, depth and block size: each point's load reaches both agents.
    let json = s.dir.path().join("sweep.json");
    let out = s.run(
        &json,
        &[
            "--rw",
            "randread",
            "--size",
            "1m",
            "--time",
            "1s",
            "--engine",
            "io_uring",
            "--sweep",
            "jobs=1,2",
            "--sweep",
            "bs=4k,8k",
            "--iodepth",
            "3",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = read_json(&json);
    let points = r["sweep"]["points"].as_array().unwrap();
    assert_eq!(points.len(), 4);
    for p in points {
        let phase = r["phases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == p["phase"])
            .unwrap();
        assert_eq!(phase["jobs"][0]["workers"], p["values"]["jobs"], "{phase}");
        assert_eq!(phase["jobs"][0]["iodepth"], 3);
        let bs = p["values"]["bs"].as_u64().unwrap();
        let by_host = phase["by_host"].as_object().unwrap();
        assert_eq!(by_host.len(), 2);
        for h in by_host.values() {
            let t = &h["total"];
            assert!(t["ops"].as_u64().unwrap() > 0, "{h}");
            assert_eq!(
                t["bytes"].as_u64().unwrap(),
                t["ops"].as_u64().unwrap() * bs
            );
        }
    }
    // A sweep over agents: each point on the first N, with scaling efficiency.
    let json = s.dir.path().join("agents.json");
    let out = s.run(
        &json,
        &["--engine", "null", "--time", "1s", "--sweep", "agents=1,2"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = read_json(&json);
    let points = r["sweep"]["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    for (p, n) in points.iter().zip([1usize, 2]) {
        assert_eq!(p["phase"], format!("sweep:agents={n}"));
        let phase = r["phases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == p["phase"])
            .unwrap();
        let ran: Vec<&String> = phase["by_host"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(_, h)| h["total"]["ops"].as_u64().unwrap_or(0) > 0)
            .map(|(k, _)| k)
            .collect();
        assert_eq!(ran.len(), n, "{}", phase["by_host"]);
        assert!(p["efficiency"].as_f64().unwrap() > 0.0);
    }
    let out = s.run(&json, &["--engine", "null", "--sweep", "agents=1,3"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("only 2 agents are given"),
        "{}",
        text(&out)
    );
    // A curve: the open-loop rate is a total, shared by the agents.
    let json = s.dir.path().join("curve.json");
    let out = s.run(
        &json,
        &[
            "--engine",
            "null",
            "--iodepth",
            "2",
            "--time",
            "2s",
            "--ramp",
            "0",
            "--curve",
            "5",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = read_json(&json);
    let c = &r["curve"];
    let rate = c["points"][1]["rate_iops"].as_f64().unwrap();
    let got = c["points"][1]["iops"].as_f64().unwrap();
    assert!(
        (got - rate).abs() < 0.02 * rate,
        "asked {rate}, the hosts together achieved {got}"
    );
    for t in &s.targets {
        assert!(entries(t).is_empty(), "{}: {:?}", t.display(), entries(t));
    }
}

/// Issue 17: the agent protocol carries a load kind, and a null-kind stage (no target at all)
/// runs through remote agents like any other: the coordinator and agents are kind-agnostic.
#[test]
fn a_null_kind_stage_runs_through_remote_agents() {
    let Some(s) = Setup::new("a_null_kind_stage_runs_through_remote_agents", 2) else {
        return;
    };
    let job = s.dir.path().join("null.toml");
    std::fs::write(
        &job,
        "kind = \"null\"\ntime = \"1s\"\n[[job]]\nname = \"nothing\"\njobs = 2\n",
    )
    .unwrap();
    let json = s.dir.path().join("r.json");
    let out = s.run(&json, &["--job", job.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = read_json(&json);
    let p = run_phase(&r);
    assert_eq!(p["by_host"].as_object().unwrap().len(), 2, "{p}");
    for (host, b) in p["by_host"].as_object().unwrap() {
        assert!(b["total"]["ops"].as_u64().unwrap() > 0, "{host}: {b}");
    }
    assert_eq!(r["spec"]["jobs"][0]["kind"], "null");
    for t in &s.targets {
        assert!(entries(t).is_empty(), "nothing made in {}", t.display());
    }
}

/// Issue 16: docs/distributed.md's quick start, run as written: its three parts (once on the
/// coordinator; on every host; on the coordinator) with only the host names and addresses,
/// the root of the paths (`/etc/stormark`, `/mnt/bench` under a temp dir) and a shorter run
/// (`--time 2m` → `2s`, `--size 16m`) put in. Issue 57: the certificates are the ones its
/// first part makes with `stormark cert`, each host starting with its own.
#[test]
fn the_distributed_quick_start_works_as_written() {
    let test = "the_distributed_quick_start_works_as_written";
    if !require_netns(test) {
        return;
    }
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/distributed.md"
    ))
    .unwrap();
    let block = doc
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a sh block in docs/distributed.md")
        .replace("\\\n", " ");
    let parts: Vec<&str> = block.trim().split("\n\n").collect();
    assert_eq!(parts.len(), 3, "three parts in the quick start: {block}");
    let mut net = NetCluster::new(3).unwrap();
    let dir = temp_dir(TMP);
    let root = dir.path().to_str().unwrap().to_string();
    let agents = net
        .addresses
        .iter()
        .map(|a| format!("{a}:7878"))
        .collect::<Vec<_>>()
        .join(",");
    let addresses = net.addresses.clone();
    let adapt = |text: &str| {
        let mut text = text
            .replace("/etc/stormark", &format!("{root}/etc/stormark"))
            .replace("/mnt/bench", &format!("{root}/mnt/bench"))
            .replace("node1:7878,node2:7878,node3:7878", &agents)
            .replace("--time 2m", "--time 2s --size 16m");
        // The hosts' addresses as the certificates name them: the namespaces' own.
        for (i, a) in addresses.iter().enumerate() {
            text = text.replace(&format!("--ip 10.0.0.1{}", i + 1), &format!("--ip {a}"));
        }
        text.lines()
            .map(|l| match l.trim_start().strip_prefix("stormark ") {
                Some(rest) if rest.starts_with("agent ") => format!("exec {BIN} {rest}"),
                Some(rest) => format!("{BIN} {rest}"),
                None => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let bash = |script: &str| {
        let out = Command::new("bash")
            .args(["-euc", &format!("cd {root}\n{script}")])
            .output()
            .unwrap();
        assert!(out.status.success(), "{script}\n{}", text(&out));
    };
    // Once, on the coordinator: the token, the CA, each host's certificate.
    bash(&adapt(parts[0]));
    // On every host: copy them in, make the directories, start the agent.
    for i in 0..3 {
        // Each host its own /etc/stormark (they share this machine's filesystem, and three
        // `install`s into one path at once race), holding that host's own key pair.
        let host_etc = dir.path().join(format!("host{i}/etc/stormark"));
        let script = format!(
            "cd {root}\n{}",
            adapt(parts[1])
                .replace(&format!("{root}/etc/stormark"), host_etc.to_str().unwrap())
                .replace("tls/node1.", &format!("tls/node{}.", i + 1))
        );
        let log = dir.path().join(format!("agent{i}.log"));
        net.spawn(i, "bash", &["-euc", &script], &log).unwrap();
    }
    for (i, a) in net.addresses.iter().enumerate() {
        // A readiness wait, not a timing check: generous, for a loaded 2-core machine running
        // the other cluster tests at once; on failure the agent's own words are shown.
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect_timeout(
            &format!("{a}:7878").parse().unwrap(),
            Duration::from_millis(200),
        )
        .is_err()
        {
            let log = std::fs::read_to_string(dir.path().join(format!("agent{i}.log")))
                .unwrap_or_default();
            assert!(Instant::now() < deadline, "agent {i} never listened: {log}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    // On the coordinator: the run.
    bash(&adapt(parts[2]));
    let r = read_json(&dir.path().join("cluster.json"));
    assert_eq!(r["status"], "ok", "{}", r["failure"]);
    assert_eq!(run_phase(&r)["by_host"].as_object().unwrap().len(), 3);
}

/// Issue 21: `--verify` over agents: each host writes headers into its own files and checks
/// them after the load; the pass's failures would come back counted per host.
#[test]
fn verify_runs_on_every_agent_against_its_own_files() {
    let Some(s) = Setup::new("verify_runs_on_every_agent_against_its_own_files", 2) else {
        return;
    };
    let json = s.dir.path().join("r.json");
    let out = s.run(
        &json,
        &[
            "--rw",
            "randwrite",
            "--bs",
            "4k",
            "--size",
            "8m",
            "--io-total",
            "16m",
            "--iodepth",
            "8",
            "--verify",
            "--compress-ratio",
            "2",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = read_json(&json);
    let p = run_phase(&r);
    assert_eq!(p["by_host"].as_object().unwrap().len(), 2, "{p}");
    for (host, b) in p["by_host"].as_object().unwrap() {
        assert_eq!(b["total"]["ops"].as_u64(), Some(4096), "{host}: {b}");
        assert_eq!(b["total"]["errors"].as_u64(), Some(0), "{host}: {b}");
    }
    // Issue 56: what both hosts checked, summed over the wire: more blocks than one host's
    // 8 MiB file holds (2048), at most both files', none bad.
    let v = &p["verify"];
    let blocks = v["blocks"].as_u64().unwrap_or(0);
    assert!((2049..=4096).contains(&blocks), "{v}");
    assert_eq!(v["bytes"].as_u64(), Some(blocks * 4096), "{v}");
    assert_eq!(v["bad"].as_u64(), Some(0), "{v}");
    // The options reached the agents as the job's keys.
    assert_eq!(r["spec"]["jobs"][0]["verify"], "true");
    assert_eq!(r["spec"]["jobs"][0]["compress_ratio"], "2");
    for t in &s.targets {
        assert!(entries(t).is_empty(), "nothing left in {}", t.display());
    }
}

/// Issue 30: an agent whose port is taken says so in one line (exit 2), never "listening on"
/// first.
#[test]
fn an_agent_on_a_taken_port_says_so_before_claiming_it_listens() {
    let dir = temp_dir(TMP);
    let token = dir.path().join("token");
    std::fs::write(&token, "taken-port-test-token-0123456789\n").unwrap();
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap().to_string();
    let out = Command::new(BIN)
        .args([
            "agent",
            "--listen",
            &addr,
            "--token-file",
            token.to_str().unwrap(),
            "--allow-path",
            dir.path().to_str().unwrap(),
            "--state-dir",
            dir.path().join("state").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("cannot listen there"), "{said}");
    assert!(!said.contains("listening on"), "{said}");
}

/// Issue 31: a fio job file's `filename=` that does not exist is made by the agent too,
/// beneath a directory it is allowed (never outside one), and removed at the end.
#[test]
fn an_agent_makes_a_fio_files_missing_filename_only_where_it_is_allowed() {
    let Some(s) = Setup::new("an_agent_makes_a_fio_files_missing_filename", 1) else {
        return;
    };
    let file = s.targets[0].join("made-by-fio-file");
    let fio = s.dir.path().join("f.fio");
    let json = s.dir.path().join("r.json");
    let run = |target: &Path| {
        std::fs::write(
            &fio,
            format!(
                "[w]\nfilename={}\nrw=randwrite\nbs=4k\nsize=4m\nruntime=1\ntime_based\n",
                target.display()
            ),
        )
        .unwrap();
        Command::new(BIN)
            .args([
                "run",
                fio.to_str().unwrap(),
                "--agents",
                &s.agents(),
                "--token-file",
                s.token.to_str().unwrap(),
                "-q",
                "--json",
                json.to_str().unwrap(),
            ])
            .output()
            .unwrap()
    };
    let out = run(&file);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = read_json(&json);
    assert!(run_phase(&r)["by_op"]["write"]["ops"].as_u64().unwrap() > 0);
    assert!(r["notes"].to_string().contains("made "), "{}", r["notes"]);
    assert!(!file.exists(), "removed at the end");
    // Outside the agent's allowed directory: refused, nothing made.
    let outside = s.dir.path().join("outside-file");
    let out = run(&outside);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(!outside.exists());
}

/// Agents started on loopback ports of this host (killed when dropped).
struct LoopbackAgents(Vec<Child>);

impl Drop for LoopbackAgents {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Issue 33: a phase of many hosts is summarized in the terminal, the HTML and Markdown (their
/// distribution, the slowest ten named), while the document keeps every host; the handshakes
/// of the fleet overlap.
#[test]
fn thirty_agents_are_a_distribution_and_the_slowest_ten_not_thirty_rows() {
    let dir = temp_dir(TMP);
    let token = dir.path().join("token");
    std::fs::write(&token, "cluster-test-token-0123456789\n").unwrap();
    let mut agents = LoopbackAgents(Vec::new());
    let mut list = Vec::new();
    for _ in 0..30 {
        let addr = stormark_testkit::free_addr();
        let child = Command::new(BIN)
            .args(["agent", "--listen", &addr, "--token-file"])
            .arg(&token)
            .arg("--allow-path")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting an agent");
        agents.0.push(child);
        list.push(addr);
    }
    for addr in &list {
        wait_until("an agent listening", Duration::from_secs(30), || {
            TcpStream::connect_timeout(&addr.parse().unwrap(), Duration::from_millis(200)).is_ok()
        });
    }
    let job = dir.path().join("null.toml");
    std::fs::write(
        &job,
        "kind = \"null\"\ntime = \"1s\"\n[[job]]\nname = \"n\"\n",
    )
    .unwrap();
    let json = dir.path().join("r.json");
    let html = dir.path().join("r.html");
    // The agents as a fleet's hostfile lists them: one a line, with comments.
    let hosts = dir.path().join("hosts");
    std::fs::write(
        &hosts,
        format!("# the fleet\n{}\n", list.join("  # loopback\n")),
    )
    .unwrap();
    let out = Command::new(BIN)
        .arg("run")
        .arg("--agents-file")
        .arg(&hosts)
        .arg("--token-file")
        .arg(&token)
        .arg("--job")
        .arg(&job)
        .arg("--json")
        .arg(&json)
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    let said = text(&out);
    eprintln!("{said}");
    assert_eq!(out.status.code(), Some(0), "{said}");
    let r = read_json(&json);
    assert_eq!(run_phase(&r)["by_host"].as_object().unwrap().len(), 30);
    assert!(said.contains("30 hosts: min "), "{said}");
    assert!(said.contains("slowest 10: "), "{said}");
    // No row per host in the phase's table.
    let rows = said
        .lines()
        .filter(|l| l.contains("@127.0.0.1:") && l.contains(" null "))
        .count();
    assert_eq!(rows, 0, "{said}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("slowest hosts"),
        "a table of the slowest hosts"
    );
    assert!(
        page.matches("<tr><td>").count() >= 10,
        "ten slowest hosts named"
    );
}

/// Issue 33: what listens at an agent's address, when it is not an agent, is named, and the
/// token never travels: a server that speaks first (an SSH banner), one that answers only when
/// asked, and one that says nothing at all.
#[test]
fn something_other_than_an_agent_is_named_and_gets_no_token() {
    use std::io::{Read, Write};
    let dir = temp_dir(TMP);
    let token = dir.path().join("token");
    std::fs::write(&token, "not-for-strangers-0123456789\n").unwrap();
    // Each server records what it was sent.
    let serve = |greet: Option<&'static [u8]>, reply: Option<&'static [u8]>| {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let heard = std::thread::spawn(move || {
            let mut all = Vec::new();
            for _ in 0..2 {
                let Ok((mut c, _)) = l.accept() else { break };
                c.set_read_timeout(Some(Duration::from_secs(8))).unwrap();
                if let Some(g) = greet {
                    let _ = c.write_all(g);
                }
                let mut buf = [0u8; 4096];
                if let Ok(n) = c.read(&mut buf) {
                    all.extend_from_slice(&buf[..n]);
                    if let Some(r) = reply {
                        let _ = c.write_all(r);
                    }
                }
                let _ = c.read(&mut buf).map(|n| all.extend_from_slice(&buf[..n]));
            }
            all
        });
        (addr, heard)
    };
    // What the server says first, what it answers to what it hears, what stormark says.
    type Case = (Option<&'static [u8]>, Option<&'static [u8]>, &'static str);
    let cases: [Case; 3] = [
        (
            Some(b"SSH-2.0-OpenSSH_9.2\r\n"),
            None,
            "not a stormark agent",
        ),
        (
            None,
            Some(b"HTTP/1.1 400 Bad Request\r\n\r\n"),
            "not a stormark agent",
        ),
        (None, None, "no answer"),
    ];
    for (greet, reply, says) in cases {
        let (addr, heard) = serve(greet, reply);
        let out = Command::new(BIN)
            .args([
                "run",
                dir.path().to_str().unwrap(),
                "--agents",
                &addr,
                "--token-file",
                token.to_str().unwrap(),
                "--rw",
                "randread",
                "--size",
                "4m",
                "--time",
                "1s",
                "--quiet",
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(text(&out).contains(says), "{says}: {}", text(&out));
        assert!(text(&out).contains(&addr), "{}", text(&out));
        let sent = heard.join().unwrap();
        assert!(
            !String::from_utf8_lossy(&sent).contains("not-for-strangers"),
            "the token was sent to {addr}"
        );
    }
}

/// A child that must end within `limit`: killed and failed otherwise, so that a regression
/// that waits forever fails rather than hangs.
fn output_within(mut cmd: Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting stormark");
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("still running after {limit:?}: {}", text(&out));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Issue 54: a token file that is a FIFO (no writer ever comes) or a device (`/dev/zero`,
/// endless) is refused at once in one line, exit 2, by the agent, the coordinator and the net
/// server alike; never waited on, never read to exhaustion.
#[test]
fn a_token_file_that_is_a_fifo_or_a_device_is_refused_at_once() {
    let dir = temp_dir(TMP);
    let fifo = dir.path().join("token-fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let addr = stormark_testkit::free_addr();
    for file in [fifo.as_path(), Path::new("/dev/zero")] {
        let f = file.to_str().unwrap();
        let dir = dir.path().to_str().unwrap();
        let commands: [&[&str]; 3] = [
            &[
                "agent",
                "--listen",
                &addr,
                "--token-file",
                f,
                "--allow-path",
                dir,
            ],
            &[
                "run",
                dir,
                "--agents",
                &addr,
                "--token-file",
                f,
                "--time",
                "1s",
            ],
            &["net", "server", "--listen", &addr, "--token-file", f],
        ];
        for args in commands {
            let mut cmd = Command::new(BIN);
            cmd.args(args);
            let out = output_within(cmd, Duration::from_secs(5));
            let said = text(&out);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
            assert!(
                said.contains(&format!("--token-file {f}: ")),
                "{args:?}: {said}"
            );
            assert!(said.contains("not a regular file"), "{args:?}: {said}");
            assert_eq!(said.trim().lines().count(), 1, "{args:?}: {said}");
        }
    }
}

/// The HTTP/2 client preface (RFC 9113 §3.4) and an empty SETTINGS frame.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";
/// A PING frame (type 6) on stream 0 with eight bytes of data.
const PING: &[u8] = b"\x00\x00\x08\x06\x00\x00\x00\x00\x00stormark";

/// Issue 54: whoever reaches an agent's port without the token cannot lock coordinators out.
/// 64 connections from another address (127.0.0.2: another host, as far as the agent can
/// tell) speak HTTP/2 as a client would (the preface, SETTINGS, then a PING every 2 s) and
/// are opened again as soon as the agent closes them; a coordinator's run still gets through.
/// Before issue 54 they held all of the agent's 64 connections, and every coordinator was
/// turned away ("closed the connection without a word").
#[test]
fn connections_without_the_token_cannot_lock_coordinators_out() {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    let dir = temp_dir(TMP);
    let token = dir.path().join("token");
    std::fs::write(&token, "hostile-test-token-0123456789\n").unwrap();
    let addr = stormark_testkit::free_addr();
    let _agent = LoopbackAgents(vec![Command::new(BIN)
        .args(["agent", "--listen", &addr, "--token-file"])
        .arg(&token)
        .arg("--allow-path")
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting an agent")]);
    let target: std::net::SocketAddr = addr.parse().unwrap();
    wait_until("the agent listening", Duration::from_secs(30), || {
        TcpStream::connect_timeout(&target, Duration::from_millis(200)).is_ok()
    });
    // Connections from 127.0.0.2 need a socket bound before it connects: tokio's.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let opened = Arc::new(AtomicUsize::new(0));
    let connect = {
        let handle = rt.handle().clone();
        move || -> std::io::Result<TcpStream> {
            let s = tokio::net::TcpSocket::new_v4()?;
            s.bind("127.0.0.2:0".parse().unwrap())?;
            let io = handle.block_on(s.connect(target))?.into_std()?;
            io.set_nonblocking(false)?;
            Ok(io)
        }
    };
    let hostile: Vec<_> = (0..64)
        .map(|_| {
            let (stop, opened, connect) = (stop.clone(), opened.clone(), connect.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let Ok(mut io) = connect() else {
                        std::thread::sleep(Duration::from_millis(10));
                        continue;
                    };
                    opened.fetch_add(1, Ordering::Relaxed);
                    if io.write_all(PREFACE).is_err() {
                        continue;
                    }
                    io.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
                    let mut buf = [0u8; 4096];
                    // Read what the agent says; a PING every 2 s; closed: open another.
                    while !stop.load(Ordering::Relaxed) {
                        match io.read(&mut buf) {
                            Ok(0) => break,
                            Ok(_) => {}
                            Err(e)
                                if e.kind() == std::io::ErrorKind::WouldBlock
                                    || e.kind() == std::io::ErrorKind::TimedOut =>
                            {
                                if io.write_all(PING).is_err() {
                                    break;
                                }
                            }
                            Err(_) => break,
                        }
                    }
                }
            })
        })
        .collect();
    wait_until("64 hostile connections", Duration::from_secs(30), || {
        opened.load(Ordering::Relaxed) >= 64
    });
    // Let them settle into whatever the agent does with them.
    std::thread::sleep(Duration::from_secs(3));
    let job = dir.path().join("null.toml");
    std::fs::write(
        &job,
        "kind = \"null\"\ntime = \"1s\"\n[[job]]\nname = \"n\"\n",
    )
    .unwrap();
    let json = dir.path().join("r.json");
    let mut run = Command::new(BIN);
    run.arg("run")
        .args(["--agents", &addr, "--token-file"])
        .arg(&token)
        .arg("--job")
        .arg(&job)
        .arg("--quiet")
        .arg("--json")
        .arg(&json);
    // 5 s to get through, 1 s of load, and the rest of a run.
    let out = output_within(run, Duration::from_secs(10));
    stop.store(true, Ordering::Relaxed);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    let r = read_json(&json);
    assert!(run_phase(&r)["total"]["ops"].as_u64().unwrap() > 0, "{r}");
    for h in hostile {
        h.join().unwrap();
    }
}

/// Issue 54: an agent whose every connection holds the token turns a new one away, and the
/// coordinator says so rather than "not a stormark agent".
#[test]
fn an_agent_full_of_authenticated_connections_is_said_to_be_full() {
    let dir = temp_dir(TMP);
    let token = dir.path().join("token");
    let secret = "full-agent-test-token-0123456789";
    std::fs::write(&token, format!("{secret}\n")).unwrap();
    let addr = stormark_testkit::free_addr();
    let _agent = LoopbackAgents(vec![Command::new(BIN)
        .args(["agent", "--listen", &addr, "--token-file"])
        .arg(&token)
        .arg("--allow-path")
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting an agent")]);
    wait_until("the agent listening", Duration::from_secs(30), || {
        TcpStream::connect_timeout(&addr.parse().unwrap(), Duration::from_millis(200)).is_ok()
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    // 64 connections, each authenticated by a handshake that carries the token (the first
    // opens a session, the others are told the agent is busy).
    let bearer: tonic::metadata::MetadataValue<_> = format!("Bearer {secret}").parse().unwrap();
    let held: Vec<_> = (0..64)
        .map(|_| {
            rt.block_on(async {
                let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
                    .unwrap()
                    .connect()
                    .await
                    .expect("connecting to the agent");
                let bearer = bearer.clone();
                let mut c = stormark_cluster::pb::agent_client::AgentClient::with_interceptor(
                    channel,
                    move |mut req: tonic::Request<()>| {
                        req.metadata_mut().insert("authorization", bearer.clone());
                        Ok(req)
                    },
                );
                let said = c
                    .handshake(stormark_cluster::pb::HandshakeRequest {
                        version: env!("CARGO_PKG_VERSION").into(),
                        coordinator: "holder".into(),
                    })
                    .await;
                if let Err(s) = &said {
                    assert!(s.message().starts_with("busy"), "{s:?}");
                }
                c
            })
        })
        .collect();
    let out = Command::new(BIN)
        .args(["run", "--agents", &addr, "--token-file"])
        .arg(&token)
        .args([
            "--rw", "randread", "--size", "4m", "--time", "1s", "--quiet",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("the agent's connections are full"), "{said}");
    drop(held);
}
