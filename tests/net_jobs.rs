//! Issue 19: TCP paced at a bitrate, and a `kind = "net"` job beside a file job in one stage
//! of a job file, so that storage is measured while the network is loaded. Two hosts in
//! network namespaces, the link limited with tc's token bucket (ground truth), a `stormark net
//! server` on the other end. And an agent's data ports: open only while its mesh runs.

use std::process::{Command, Stdio};
use std::time::Duration;

use stormark_testkit::{read_json, require_netns, temp_dir, text, Bin, NetCluster, TempDir};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

/// Two hosts, a server on the first at port 7879, and a job file for the second: a disk job
/// on `dir/target` and a net job of `streams` streams to the server, together.
fn setup(streams: u32, time: &str) -> (NetCluster, TempDir, String) {
    let mut c = NetCluster::new(2).expect("namespaces");
    let dir = temp_dir(TMP);
    let server = format!("{}:7879", c.addresses[0]);
    c.spawn(
        0,
        BIN,
        &["net", "server", "--listen", &server],
        &dir.path().join("server.log"),
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("target")).unwrap();
    std::fs::write(
        dir.path().join("both.toml"),
        format!(
            "time = \"{time}\"\n\n\
             [[job]]\nname = \"disk\"\ngroup = \"together\"\nrw = \"randread\"\nbs = \"4k\"\nsize = \"8m\"\n\n\
             [[job]]\nname = \"wire\"\ngroup = \"together\"\nkind = \"net\"\nserver = \"{server}\"\njobs = {streams}\n"
        ),
    )
    .unwrap();
    (c, dir, server)
}

fn run_args(dir: &TempDir) -> Vec<String> {
    let p = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    vec![
        "run".into(),
        "--job".into(),
        p("both.toml"),
        p("target"),
        "-q".into(),
        "--json".into(),
        p("r.json"),
    ]
}

#[test]
fn a_net_job_loads_a_200_mbit_link_while_the_disk_job_is_measured() {
    if !require_netns("a_net_job_loads_a_200_mbit_link_while_the_disk_job_is_measured") {
        return;
    }
    let (c, dir, server) = setup(2, "6s");
    c.limit(1, "200mbit").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let mut args = run_args(&dir);
    // A second of ramp: the socket buffers fill first, then the sender's count is the link's.
    args.extend(["--ramp".into(), "1s".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = c.run_in(1, BIN, &args);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    let doc = read_json(&dir.path().join("r.json"));
    let phase = doc["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == "run")
        .unwrap();
    let job = |name: &str, op: &str| &phase["by_job"][name]["by_op"][op];
    assert!(job("disk", "read")["ops"].as_u64().unwrap() > 0, "{phase}");
    let bits = job("wire", "send")["bw_bytes_per_s"].as_f64().unwrap() * 8.0;
    // tc's rate counts whole frames: 1448 payload bytes of each 1514.
    let share = bits / (200e6 * 1448.0 / 1514.0);
    eprintln!(
        "net job: {:.1} Mbit/s, {share:.3} of the payload rate",
        bits / 1e6
    );
    assert!((0.93..=1.07).contains(&share), "{share:.3}\n{t}");
    let wire = phase["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["name"] == "wire")
        .unwrap();
    assert_eq!(
        (wire["engine"].as_str(), wire["workers"].as_u64()),
        (Some("net"), Some(2))
    );
    // What the server counted is noted beside what was sent.
    let notes = doc["notes"].to_string();
    assert!(notes.contains(&format!("{server} counted")), "{notes}");
    // Nothing left of the disk job's files.
    assert_eq!(
        std::fs::read_dir(dir.path().join("target"))
            .unwrap()
            .count(),
        0
    );
}

#[test]
fn a_net_job_without_its_server_is_one_line_and_exit_2_before_any_load() {
    if !require_netns("a_net_job_without_its_server_is_one_line_and_exit_2_before_any_load") {
        return;
    }
    let (c, dir, _server) = setup(1, "2s");
    // Nothing listens on port 7880.
    let job = dir.path().join("both.toml");
    let text_of = std::fs::read_to_string(&job).unwrap();
    std::fs::write(&job, text_of.replace(":7879", ":7880")).unwrap();
    let args = run_args(&dir);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = c.run_in(1, BIN, &args);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    assert!(
        said.contains(":7880") && said.contains("stormark net server"),
        "{said}"
    );
    // Refused before the preparation: no files were made.
    assert_eq!(
        std::fs::read_dir(dir.path().join("target"))
            .unwrap()
            .count(),
        0
    );
}

#[test]
fn a_server_cut_off_mid_stage_is_named_and_the_results_are_written() {
    if !require_netns("a_server_cut_off_mid_stage_is_named_and_the_results_are_written") {
        return;
    }
    // The disk job goes on to the stage's end (10 s); the net job fails once its writes
    // have waited 10 s for the vanished server, naming it.
    let (c, dir, server) = setup(1, "10s");
    std::thread::sleep(Duration::from_millis(300));
    let args = run_args(&dir);
    let run = Command::new("ip")
        .args(["netns", "exec", &c.namespaces[1], BIN])
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    let cut = std::time::Instant::now();
    c.cut(0).unwrap();
    let out = run.wait_with_output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains(&server), "{t}");
    assert!(
        cut.elapsed() < Duration::from_secs(30),
        "took {:?}",
        cut.elapsed()
    );
    let doc = read_json(&dir.path().join("r.json"));
    assert_eq!(doc["status"], "failed", "{doc}");
    assert_eq!(
        std::fs::read_dir(dir.path().join("target"))
            .unwrap()
            .count(),
        0
    );
}

#[test]
fn over_two_agents_each_host_streams_to_its_own_server_beside_its_disk_job() {
    if !require_netns("over_two_agents_each_host_streams_to_its_own_server_beside_its_disk_job") {
        return;
    }
    // Host 0 serves (two servers: one session each), hosts 1 and 2 are agents.
    let mut c = NetCluster::new(3).expect("namespaces");
    let dir = temp_dir(TMP);
    let servers: Vec<String> = [7879, 7880]
        .iter()
        .map(|p| format!("{}:{p}", c.addresses[0]))
        .collect();
    for (k, s) in servers.iter().enumerate() {
        c.spawn(
            0,
            BIN,
            &["net", "server", "--listen", s],
            &dir.path().join(format!("server{k}.log")),
        )
        .unwrap();
    }
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "net-jobs-test-token-0123456789\n").unwrap();
    let list = c.start_agents(BIN, &token, dir.path(), &|_| shared.clone());
    let agents: Vec<&str> = list.split(',').skip(1).collect();
    // Host 2 of the run (index 1) sends through 200 Mbit/s.
    c.limit(2, "200mbit").unwrap();
    let job = dir.path().join("both.toml");
    std::fs::write(
        &job,
        format!(
            "time = \"5s\"\nramp = \"1s\"\n\n\
             [[job]]\nname = \"disk\"\ngroup = \"together\"\nrw = \"randread\"\nbs = \"4k\"\nsize = \"8m\"\n\n\
             [[job]]\nname = \"wire\"\ngroup = \"together\"\nkind = \"net\"\nserver = \"{}\"\n",
            servers.join(",")
        ),
    )
    .unwrap();
    let json = dir.path().join("r.json");
    let out = stormark_testkit::Bin(BIN).run(&[
        "run",
        "--job",
        job.to_str().unwrap(),
        shared.to_str().unwrap(),
        "--agents",
        &agents.join(","),
        "--token-file",
        token.to_str().unwrap(),
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    let doc = read_json(&json);
    let phase = doc["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == "run")
        .unwrap();
    let by_host = phase["by_host"].as_object().unwrap();
    assert_eq!(by_host.len(), 2, "{by_host:?}");
    let mut rates = Vec::new();
    for (host, h) in by_host {
        assert!(
            h["by_op"]["read"]["ops"].as_u64().unwrap() > 0,
            "{host}: {h}"
        );
        rates.push(h["by_op"]["send"]["bw_bytes_per_s"].as_f64().unwrap() * 8.0);
    }
    // The limited host sends at its link's rate, the other far faster; both servers saw a
    // session (each host its own).
    rates.sort_by(f64::total_cmp);
    let share = rates[0] / (200e6 * 1448.0 / 1514.0);
    eprintln!("hosts: {rates:?} bit/s; the limited one {share:.3} of its link");
    assert!((0.9..=1.1).contains(&share), "{rates:?}");
    assert!(rates[1] > 2.0 * rates[0], "{rates:?}");
    for k in 0..2 {
        let log = std::fs::read_to_string(dir.path().join(format!("server{k}.log"))).unwrap();
        assert!(log.contains("session of 1 stream"), "server {k}: {log}");
    }
}

#[test]
fn tcp_at_a_bitrate_sends_that_rate_from_either_end() {
    if !require_netns("tcp_at_a_bitrate_sends_that_rate_from_either_end") {
        return;
    }
    let (c, dir, server) = setup(1, "1s");
    std::thread::sleep(Duration::from_millis(300));
    for reverse in [false, true] {
        let json = dir.path().join(format!("paced{reverse}.json"));
        let mut args = vec![
            "net",
            "client",
            &server,
            "--streams",
            "2",
            "--bitrate",
            "80m",
            "--time",
            "4s",
            "--msg-size",
            "64k",
            "-q",
            "--json",
        ];
        let j = json.to_str().unwrap().to_string();
        args.push(&j);
        if reverse {
            args.push("--reverse");
        }
        let out = c.run_in(1, BIN, &args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let doc = read_json(&json);
        let op = if reverse { "receive" } else { "send" };
        let bits = doc["phases"][0]["by_op"][op]["bw_bytes_per_s"]
            .as_f64()
            .unwrap()
            * 8.0;
        eprintln!("reverse {reverse}: {:.1} Mbit/s", bits / 1e6);
        // Paced at 80 Mbit/s of payload (the link would carry far more).
        assert!(
            (bits / 80e6 - 1.0).abs() < 0.05,
            "reverse {reverse}: {bits}"
        );
        assert_eq!(doc["spec"]["jobs"][0]["bitrate"], "80000000");
    }
}

/// The body of `GET /metrics` on `addr`, if it answers.
fn scrape(addr: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    s.write_all(format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

/// The TCP ports listening in host `i`'s namespace.
fn listening(c: &NetCluster, i: usize) -> Vec<u16> {
    let out = c.run_in(i, "ss", &["-Hltn"]);
    let mut ports: Vec<u16> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            l.split_whitespace()
                .nth(3)?
                .rsplit(':')
                .next()?
                .parse()
                .ok()
        })
        .collect();
    ports.sort_unstable();
    ports.dedup();
    ports
}

#[test]
fn a_mesh_opens_its_data_ports_only_while_it_runs() {
    if !require_netns("a_mesh_opens_its_data_ports_only_while_it_runs") {
        return;
    }
    let mut c = NetCluster::new(3).expect("namespaces");
    let dir = temp_dir(TMP);
    let token = dir.path().join("token");
    std::fs::write(&token, "net-mesh-test-token-0123456789\n").unwrap();
    let list = c.start_agents(BIN, &token, dir.path(), &|_| dir.path().to_path_buf());
    // Before: each agent listens on its own port only.
    for i in 0..3 {
        assert_eq!(listening(&c, i), [7878], "host {i} before");
    }
    let metrics = stormark_testkit::free_addr();
    let mut mesh = Command::new(BIN)
        .args([
            "net", "--agents", &list, "--mode", "mesh", "--time", "2s", "-q",
        ])
        .args(["--metrics-listen", &metrics])
        .arg("--token-file")
        .arg(&token)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // While it runs: one more port per other host on each agent; and the coordinator's
    // metrics fill the matrix pair by pair.
    let mut most = [0usize; 3];
    let mut pairs_seen = 0;
    while mesh.try_wait().unwrap().is_none() {
        for (i, m) in most.iter_mut().enumerate() {
            *m = (*m).max(listening(&c, i).len());
        }
        if let Some(text) = scrape(&metrics) {
            let alone = text
                .lines()
                .filter(|l| l.starts_with("stormark_mesh_pair_bits_per_second{matrix=\"alone\""))
                .filter(|l| l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()) > Some(1e6))
                .count();
            pairs_seen = pairs_seen.max(alone);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(
        pairs_seen, 6,
        "every ordered pair of three hosts, each above 1 Mbit/s"
    );
    assert!(mesh.wait().unwrap().success());
    assert_eq!(most, [3, 3, 3], "listeners seen during the mesh");
    // After: closed again (each agent closes its data ports at the run's cleanup, which may
    // finish a moment after the coordinator exits).
    for i in 0..3 {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while listening(&c, i) != [7878] && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(listening(&c, i), [7878], "host {i} after");
    }
}

/// `stormark net server` processes on free loopback ports (killed when dropped), and their
/// addresses.
struct Servers {
    /// Held for their lives: dropping them stops the servers.
    _running: Vec<crate::net::Server>,
    addrs: Vec<String>,
}

impl Servers {
    fn start(n: usize) -> Servers {
        let addrs: Vec<String> = (0..n).map(|_| stormark_testkit::free_addr()).collect();
        Servers {
            _running: addrs.iter().map(|a| crate::net::Server::start(a)).collect(),
            addrs,
        }
    }
}

/// Issue 29: what `stormark net client` does, as keys of job-file jobs on the one road: both
/// ways at once, UDP at a bitrate, round trips on a schedule, in one stage.
#[test]
fn bidir_udp_and_paced_round_trips_are_job_file_jobs() {
    let s = Servers::start(3);
    let dir = temp_dir(TMP);
    let job = dir.path().join("net.toml");
    std::fs::write(
        &job,
        format!(
            "time = \"3s\"\n\n\
             [[job]]\nname = \"both\"\ngroup = \"g\"\nkind = \"net\"\nserver = \"{}\"\nmode = \"bidir\"\njobs = 2\n\n\
             [[job]]\nname = \"dgrams\"\ngroup = \"g\"\nkind = \"net\"\nserver = \"{}\"\nprotocol = \"udp\"\nbitrate = \"20m\"\nmsg_size = 1000\n\n\
             [[job]]\nname = \"pings\"\ngroup = \"g\"\nkind = \"net\"\nserver = \"{}\"\nmode = \"rtt\"\nrate_iops = 100\n",
            s.addrs[0], s.addrs[1], s.addrs[2]
        ),
    )
    .unwrap();
    let json = dir.path().join("r.json");
    let out = stormark_testkit::Bin(BIN).run(&[
        "run",
        "--job",
        job.to_str().unwrap(),
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    let doc = read_json(&json);
    let phase = &doc["phases"][0];
    let job = |name: &str, op: &str| &phase["by_job"][name]["by_op"][op];
    // Both ways at once: one stream each way, each counted where it arrived.
    for op in ["send", "receive"] {
        assert!(
            job("both", op)["bytes"].as_u64().unwrap() > 1 << 20,
            "{op}: {phase}"
        );
    }
    // 20 Mbit/s of 1000-byte datagrams for 3 s: loopback drops none of them.
    let bytes = job("dgrams", "send")["bytes"].as_f64().unwrap();
    let expected = 20e6 / 8.0 * 3.0;
    assert!(
        (bytes / expected - 1.0).abs() < 0.1,
        "{bytes} of {expected}\n{t}"
    );
    // 100 round trips a second for 3 s, each timed from its schedule and from its sending.
    let pings = job("pings", "rtt");
    let n = pings["ops"].as_u64().unwrap();
    assert!((280..=310).contains(&n), "{n} round trips\n{pings}");
    assert!(
        pings["service_latency_ns"]["p50"].as_f64().unwrap() > 0.0,
        "{pings}"
    );
    // The run's network report: the first net job's session, each stream as its ends saw it.
    let streams = doc["net"]["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 2, "{}", doc["net"]);
    assert_eq!(doc["net"]["bidir"], true);
    // Mistakes in the new keys: one line, exit 2, before any load.
    for (key_line, expect) in [
        ("protocol = \"udp\"\nmode = \"rtt\"", "protocol"),
        ("mode = \"bidir\"\njobs = 3", "jobs"),
        // A server's 128 streams each way: both ways at once hold 256.
        ("jobs = 129", "at most 128"),
        ("mode = \"bidir\"\njobs = 258", "at most 256"),
        ("bitrate = \"fast\"", "bitrate"),
        ("mode = \"send\"\nrate_iops = 10", "rate_iops"),
    ] {
        let bad = dir.path().join("bad.toml");
        std::fs::write(
            &bad,
            format!(
                "time = \"1s\"\n[[job]]\nname = \"x\"\nkind = \"net\"\nserver = \"{}\"\n{key_line}\n",
                s.addrs[0]
            ),
        )
        .unwrap();
        let out = stormark_testkit::Bin(BIN).run(&["run", "--job", bad.to_str().unwrap()]);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{key_line}: {said}");
        let line = said
            .lines()
            .find(|l| l.starts_with("error:"))
            .unwrap_or_default();
        assert!(line.contains(expect), "{key_line}: {said}");
    }
}

/// Issue 29: the client is a run like any other: repetitions and expectations come with it.
#[test]
fn a_net_client_repeats_and_checks_its_expectation() {
    let s = Servers::start(1);
    let dir = temp_dir(TMP);
    let json = dir.path().join("r.json");
    let out = stormark_testkit::Bin(BIN).run(&[
        "net",
        "client",
        &s.addrs[0],
        "--time",
        "1s",
        "--repeat",
        "2",
        "--expect",
        "bw=1k",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    let doc = read_json(&json);
    let runs: Vec<(&str, u64)> = doc["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap(),
                p["repetition"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(runs, [("run", 1), ("run", 2)], "{t}");
    // Each figure over the two tests: mean, spread, confidence interval.
    assert!(
        doc["repetitions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["figure"] == "bw_bytes_per_s"),
        "{}",
        doc["repetitions"]
    );
    let expectations = doc["expectations"].as_array().unwrap();
    assert!(!expectations.is_empty(), "{t}");
    assert!(
        expectations.iter().all(|e| e["met"] == true),
        "{expectations:?}"
    );
}

#[test]
fn a_net_job_to_the_agents_needs_agents_and_says_so_before_any_load() {
    let dir = temp_dir(TMP);
    let job = dir.path().join("agents.toml");
    std::fs::write(
        &job,
        "[[job]]\nname = \"n\"\nkind = \"net\"\nserver = \"agents\"\npath_mtu = 1\ntime = \"1s\"\n",
    )
    .unwrap();
    let out = Bin(BIN).run(&["run", "--job", job.to_str().unwrap(), "-q"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    assert!(said.contains("--agents LIST with at least two"), "{said}");
    // path_mtu is a net job's key only.
    std::fs::write(&job, "[[job]]\nname = \"f\"\npath_mtu = 1\n").unwrap();
    let out = Bin(BIN).run(&[
        "run",
        "--job",
        job.to_str().unwrap(),
        "-q",
        dir.path().to_str().unwrap(),
    ]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("path_mtu"), "{said}");
}
