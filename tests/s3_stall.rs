//! Issue 53: S3 after a stall. MinIO stopped (SIGSTOP) during a PUT run stores the PUTs it had
//! read when it resumes, after the run's cleanup listed (or gave up on) the prefix: one object
//! per host stayed for ever. Over agents, what the run's end could not settle is swept by the
//! agents beside their service until the prefix lists empty after the service has answered a
//! while; alone, the run names the prefix and the command that removes it. Against a real
//! MinIO started by the test.

use std::time::{Duration, Instant};

use stormark_testkit::{read_json, temp_dir, text, Bin, Minio};

use crate::s3::{measured, measuring, s3_args, spawn};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

/// Waits for `child` until `by`; `None` if it is still running then.
fn exited_by(child: &mut std::process::Child, by: Instant) -> Option<std::process::ExitStatus> {
    loop {
        if let Some(status) = child.try_wait().expect("waiting for stormark") {
            return Some(status);
        }
        if Instant::now() >= by {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The run id a note gives in its `--remove-run ID`.
fn run_id(notes: &str) -> String {
    let at = notes
        .find("--remove-run ")
        .unwrap_or_else(|| panic!("no --remove-run in {notes}"))
        + 13;
    let len = notes[at..]
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .unwrap();
    notes[at..at + len].to_string()
}

/// The "Done when" of issue 53: MinIO stopped 20 s, from 2 s into an 8 s PUT run over two
/// agents. The run ends on its own while the service is stopped (its phase bounded, the stall
/// counted as timeouts, exit 1), its notes name each host's prefix and say its agent removes
/// it; once MinIO is back, the agents sweep the prefixes until nothing is left (the PUTs the
/// service stores late among them), drop them from their journals and say so, and nothing
/// outside the run's prefixes is touched.
#[test]
fn a_stalled_servers_late_puts_are_swept_by_the_agents() {
    if !stormark_testkit::require_netns("a_stalled_servers_late_puts_are_swept_by_the_agents") {
        return;
    }
    let mut net = stormark_testkit::NetCluster::new(2).expect("creating the namespaces");
    let m = Minio::start_on(TMP, &net.gateway.clone());
    let dir = temp_dir(TMP);
    let token = dir.path().join("token");
    std::fs::write(&token, "s3-stall-sweep-token-0123456789\n").unwrap();
    let list = net.start_agents(BIN, &token, dir.path(), &|_| dir.path().to_path_buf());
    // Objects the run must not touch: another run's host prefix, and one outside stormark's.
    m.make_bucket("stall");
    let planted = ["stormark/20260101-000000-1-h0/job/w0-0", "elsewhere/kept"];
    for key in planted {
        m.put("stall", key, b"not the run's");
    }
    let args = s3_args(
        &m,
        "stall",
        &dir,
        &[
            "--op-mix",
            "put",
            "--obj-size",
            "4k",
            "--concurrency",
            "4",
            "--time",
            "8s",
            "--agents",
            &list,
            "--token-file",
            token.to_str().unwrap(),
        ],
    );
    let mut child = spawn(&args);
    measuring(&mut child, &dir);
    std::thread::sleep(Duration::from_secs(2));
    m.signal("STOP");
    let stopped = Instant::now();
    // The run ends while the service is still stopped (6 s of its phase, the grace of twice
    // its longest answer, an agent's cleanup that waits 2 s for one: about 10 s; 60 s is a
    // bound for a loaded host), which stays stopped 20 s, and longer if the run has not ended.
    let ended = exited_by(&mut child, stopped + Duration::from_secs(60));
    std::thread::sleep(
        (stopped + Duration::from_secs(20)).saturating_duration_since(Instant::now()),
    );
    m.signal("CONT");
    let resumed = Instant::now();
    let out = child.wait_with_output().unwrap();
    let said = text(&out);
    assert!(
        ended.is_some(),
        "the run was still going 60 s into the stall: {said}"
    );
    assert_eq!(out.status.code(), Some(1), "timeouts are errors: {said}");
    let doc = read_json(&dir.path().join("r.json"));
    let run = measured(&doc);
    let timeouts: u64 = run["errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "timeout" && e["op"] == "put")
        .map(|e| e["count"].as_u64().unwrap())
        .sum();
    assert!(timeouts >= 2, "each host's stalled PUTs: {}", run["errors"]);
    // Each host's note names its prefix and says its agent goes on removing it.
    let notes: Vec<String> = doc["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str().map(str::to_string))
        .collect();
    let sweeping: Vec<&String> = notes
        .iter()
        .filter(|n| n.contains("this agent goes on removing them"))
        .collect();
    assert_eq!(sweeping.len(), 2, "{notes:#?}");
    let id = run_id(sweeping[0]);
    for h in 0..2 {
        let prefix = format!("s3://stall/stormark/{id}-h{h}/");
        assert!(
            sweeping.iter().any(|n| n.contains(&prefix)),
            "{prefix} not named: {notes:#?}"
        );
    }
    // Once MinIO is back, the agents remove what is left, the PUTs it stores late among
    // them (generous bounds: a pass waits up to 10 s, the settle 10 s more).
    let mine = format!("stormark/{id}-h");
    let deadline = resumed + Duration::from_secs(180);
    let logs = || {
        (0..2)
            .map(|i| std::fs::read_to_string(dir.path().join(format!("agent{i}.log"))).unwrap())
            .collect::<Vec<_>>()
    };
    let swept = format!("objects run {id} left under");
    let done = |log: &str| {
        log.lines()
            .any(|l| l.contains("stormark agent: removed the ") && l.contains(&swept))
    };
    while !logs().iter().all(|l| done(l)) {
        assert!(
            Instant::now() < deadline,
            "the agents did not finish their sweep in 180 s; left: {:?}\n{:#?}",
            m.objects("stall", &mine),
            logs()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_eq!(
        m.objects("stall", &mine),
        Vec::<String>::new(),
        "{:#?}",
        logs()
    );
    // Each agent forgot the prefix once it was empty.
    for i in 0..2 {
        for e in std::fs::read_dir(dir.path().join(format!("state{i}"))).unwrap() {
            let journal = std::fs::read_to_string(e.unwrap().path()).unwrap();
            assert!(!journal.contains(&id), "{journal}");
        }
    }
    for key in planted {
        assert_eq!(m.get("stall", key), b"not the run's", "{key}");
    }
}

/// Alone (no agent outlives the run), a stall at the end leaves what the run could not remove
/// named: its prefix and the `--remove-run` command, which removes it once MinIO is back and
/// has stored what it had read.
#[test]
fn a_run_alone_names_what_a_stall_may_leave_and_the_command_removes_it() {
    let m = Minio::start(TMP);
    let dir = temp_dir(TMP);
    let args = s3_args(
        &m,
        "alone",
        &dir,
        &[
            "--create-bucket",
            "--op-mix",
            "put",
            "--obj-size",
            "4k",
            "--concurrency",
            "2",
            "--time",
            "4s",
        ],
    );
    let mut child = spawn(&args);
    measuring(&mut child, &dir);
    std::thread::sleep(Duration::from_secs(1));
    m.signal("STOP");
    // 3 s of phase, the grace, a listing that waits 10 s: well within 60 s.
    let ended = exited_by(&mut child, Instant::now() + Duration::from_secs(60));
    m.signal("CONT");
    let out = child.wait_with_output().unwrap();
    let said = text(&out);
    assert!(ended.is_some(), "still running 60 s into the stall: {said}");
    assert_eq!(out.status.code(), Some(1), "{said}");
    let doc = read_json(&dir.path().join("r.json"));
    let notes = doc["notes"].to_string();
    assert!(
        notes.contains("may be left under s3://alone/stormark/")
            && notes.contains("got no answer")
            && notes.contains("stormark s3 --remove-run "),
        "{notes}"
    );
    let id = run_id(&notes);
    assert!(
        notes.contains(&format!("s3://alone/stormark/{id}-h0/")),
        "{notes}"
    );
    // Once the service has settled (what it had read stored), the command removes it all.
    let mut seen = m.objects("alone", "stormark/");
    for _ in 0..30 {
        std::thread::sleep(Duration::from_secs(1));
        let now = m.objects("alone", "stormark/");
        if now == seen {
            break;
        }
        seen = now;
    }
    let out = Bin(BIN).run(&[
        "s3",
        "--endpoint",
        &m.endpoint,
        "--bucket",
        "alone",
        "--access-key",
        &m.access_key,
        "--secret-key",
        &m.secret_key,
        "--remove-run",
        &id,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(m.objects("alone", "stormark/"), Vec::<String>::new());
}

/// An agent killed while it sweeps (SIGKILL during the stall) and started again sweeps the
/// prefix its journal kept, with keys of its own (its environment: an agent writes no key to
/// disk), once MinIO is back; nothing else of the bucket is touched.
#[test]
fn an_agent_killed_during_its_sweep_sweeps_again_when_started_with_keys_of_its_own() {
    let m = Minio::start(TMP);
    let dir = temp_dir(TMP);
    let token = dir.path().join("token");
    std::fs::write(&token, "s3-stall-restart-token-0123456789\n").unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let listen = format!("127.0.0.1:{port}");
    let state = dir.path().join("state");
    let log = |n: u32| dir.path().join(format!("agent{n}.log"));
    let agent = |n: u32| {
        let child = std::process::Command::new(BIN)
            .args(["agent", "--listen", &listen, "--token-file"])
            .arg(&token)
            .arg("--allow-path")
            .arg(dir.path())
            .arg("--state-dir")
            .arg(&state)
            .env("AWS_ACCESS_KEY_ID", &m.access_key)
            .env("AWS_SECRET_ACCESS_KEY", &m.secret_key)
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(log(n)).unwrap())
            .spawn()
            .expect("starting an agent");
        stormark_testkit::wait_listening(&listen, "the agent");
        child
    };
    let mut first = agent(0);
    m.make_bucket("restart");
    m.put("restart", "elsewhere/kept", b"not the run's");
    let args = s3_args(
        &m,
        "restart",
        &dir,
        &[
            "--op-mix",
            "put",
            "--obj-size",
            "4k",
            "--concurrency",
            "2",
            "--time",
            "4s",
            "--agents",
            &listen,
            "--token-file",
            token.to_str().unwrap(),
        ],
    );
    let mut child = spawn(&args);
    measuring(&mut child, &dir);
    std::thread::sleep(Duration::from_secs(1));
    m.signal("STOP");
    let ended = exited_by(&mut child, Instant::now() + Duration::from_secs(60));
    let out = child.wait_with_output().unwrap();
    let said = text(&out);
    assert!(ended.is_some(), "still running 60 s into the stall: {said}");
    let notes = read_json(&dir.path().join("r.json"))["notes"].to_string();
    assert!(
        notes.contains("this agent goes on removing them"),
        "{notes}"
    );
    let id = run_id(&notes);
    // Killed while its sweep waits on the stopped service: the journal keeps the prefix.
    first.kill().unwrap();
    first.wait().unwrap();
    let journaled = || {
        std::fs::read_dir(&state)
            .unwrap()
            .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
            .collect::<String>()
    };
    assert!(journaled().contains(&id), "{}", journaled());
    let mut second = agent(1);
    let started = std::fs::read_to_string(log(1)).unwrap();
    assert!(
        started.contains("this agent removes them beside its service with its own S3 keys"),
        "{started}"
    );
    let mine = format!("stormark/{id}-h0/");
    assert!(
        !m.objects("restart", &mine).is_empty(),
        "nothing for the sweep to remove"
    );
    m.signal("CONT");
    let deadline = Instant::now() + Duration::from_secs(180);
    while !std::fs::read_to_string(log(1))
        .unwrap()
        .contains("stormark agent: removed the ")
    {
        assert!(
            Instant::now() < deadline,
            "no sweep in 180 s; left {:?}: {}",
            m.objects("restart", &mine),
            std::fs::read_to_string(log(1)).unwrap()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_eq!(m.objects("restart", &mine), Vec::<String>::new());
    assert!(!journaled().contains(&id), "{}", journaled());
    assert_eq!(m.get("restart", "elsewhere/kept"), b"not the run's");
    second.kill().unwrap();
    second.wait().unwrap();
}
