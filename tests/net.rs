//! Issue 19: `stormark net` against ground truth. Throughput through a link limited with tc's
//! token bucket (network namespaces joined by veth pairs), round trips through a relay that
//! holds each message a known time each way, and the mistakes a user makes.

use std::process::{Command, Stdio};
use std::time::Duration;

use stormark_testkit::{
    measured_again, read_json, require_netns, temp_dir, text, Bin, DelayRelay, NetCluster,
};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

fn measured(doc: &serde_json::Value) -> &serde_json::Value {
    &doc["phases"][0]
}

/// A server on `addr` in the test's own namespace (killed when the guard drops).
pub(crate) struct Server(std::process::Child);

impl Server {
    pub(crate) fn start(addr: &str) -> Server {
        let child = Command::new(BIN)
            .args(["net", "server", "--listen", addr])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        for _ in 0..100 {
            if std::net::TcpStream::connect(addr).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Server(child)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Two hosts in network namespaces, a server on the first (port 7879): the cluster, a
/// directory for files, and the server's address.
fn pair() -> (NetCluster, stormark_testkit::TempDir, String) {
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
    (c, dir, server)
}

fn free_addr() -> String {
    stormark_testkit::free_addr()
}

#[test]
fn throughput_through_a_200_mbit_link_is_the_link() {
    if !require_netns("throughput_through_a_200_mbit_link_is_the_link") {
        return;
    }
    let (c, dir, server) = pair();
    // What host 1 sends, and what host 0 sends back (--reverse), each through 200 Mbit/s
    // (`tc qdisc add dev X root tbf rate 200mbit burst 32kbit latency 50ms`).
    c.limit(1, "200mbit").unwrap();
    c.limit(0, "200mbit").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    for (streams, reverse) in [("1", false), ("4", false), ("1", true)] {
        let json = dir.path().join(format!("n{streams}{reverse}.json"));
        let mut args = vec![
            "net",
            "client",
            &server,
            "--streams",
            streams,
            "--time",
            "5s",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ];
        if reverse {
            args.push("--reverse");
        }
        let op = if reverse { "receive" } else { "send" };
        let measure = || {
            let out = c.run_in(1, BIN, &args);
            let t = text(&out);
            assert_eq!(out.status.code(), Some(0), "{t}");
            let doc = read_json(&json);
            let bits = measured(&doc)["by_op"][op]["bw_bytes_per_s"]
                .as_f64()
                .unwrap_or_else(|| panic!("{doc}"))
                * 8.0;
            // tc's rate counts whole Ethernet frames: of a full 1514-byte frame, 1448 bytes
            // are payload (the rest: Ethernet, IP and TCP headers with timestamps). What the
            // receiver can count is that share of 200 Mbit/s.
            let share = bits / (200e6 * 1448.0 / 1514.0);
            eprintln!(
                "{streams} streams, reverse {reverse}: {:.1} Mbit/s, {share:.3} of the payload rate",
                bits / 1e6
            );
            (t, doc, bits, share)
        };
        // Short of the bucket can be an end starved of CPU on a loaded 2-core machine (0.869
        // was seen once with the whole suite and a build running); over it never is.
        let (t, doc, bits, share) =
            measured_again(&format!("{streams} streams, reverse {reverse}"), 3, || {
                let (t, doc, bits, share) = measure();
                if share < 0.95 {
                    return Err(format!("{share:.3} of the payload rate, under 0.95"));
                }
                Ok((t, doc, bits, share))
            });
        let run = measured(&doc);
        assert!(
            (0.95..=1.05).contains(&share),
            "{streams} streams, reverse {reverse}: {bits} bit/s = {share:.3} of the limit\n{t}"
        );
        // Each end's thread CPU, per stream: known, and far from a whole CPU at 200 Mbit/s.
        for stream in doc["net"]["streams"].as_array().unwrap() {
            for end in ["sender_cpu_pct", "receiver_cpu_pct"] {
                let pct = stream[end]
                    .as_f64()
                    .unwrap_or_else(|| panic!("no {end}: {stream}"));
                assert!(pct > 0.0 && pct < 50.0, "{end} {pct}");
            }
        }
        // A second per interval, each stream a worker.
        assert!(run["intervals"].as_array().unwrap().len() >= 4, "{run}");
        assert_eq!(
            run["jobs"][0]["workers"].as_u64(),
            Some(streams.parse().unwrap())
        );
    }
    // Both ways at once: each direction through its own bucket.
    let json = dir.path().join("bidir.json");
    let bidir = || {
        let out = c.run_in(
            1,
            BIN,
            &[
                "net",
                "client",
                &server,
                "--bidir",
                "--streams",
                "2",
                "--time",
                "5s",
                "-q",
                "--json",
                json.to_str().unwrap(),
            ],
        );
        let t = text(&out);
        assert_eq!(out.status.code(), Some(0), "{t}");
        (t, read_json(&json))
    };
    // Each link now also carries the other direction's ACKs: one 66-byte ACK per one or two
    // 1514-byte data frames (quick or delayed ACKs), so the payload it can carry is 0.958 to
    // 0.979 of the one-way payload rate; within 5% of that range.
    let share = |doc: &serde_json::Value, op: &str| {
        measured(doc)["by_op"][op]["bw_bytes_per_s"]
            .as_f64()
            .unwrap()
            * 8.0
            / (200e6 * 1448.0 / 1514.0)
    };
    let (mut t, mut doc) = bidir();
    if ["send", "receive"]
        .iter()
        .any(|op| share(&doc, op) < 0.958 * 0.95)
    {
        eprintln!("RETRY bidir: a direction under its bound (an end short of CPU on a loaded machine?); measuring once more");
        (t, doc) = bidir();
    }
    let run = measured(&doc);
    for op in ["send", "receive"] {
        let share = share(&doc, op);
        eprintln!("bidir {op}: {share:.3} of the one-way payload rate");
        assert!(
            (0.958 * 0.95..=0.979 * 1.05).contains(&share),
            "bidir {op}: {share:.3}\n{t}"
        );
    }
    assert_eq!(run["jobs"][0]["workers"].as_u64(), Some(4));
}

#[test]
fn round_trips_through_a_20_ms_path_take_20_ms() {
    let server = free_addr();
    let _s = Server::start(&server);
    // 10 ms each way.
    let relay = DelayRelay::start(server.parse().unwrap(), Duration::from_millis(10));
    let dir = temp_dir(TMP);
    let json = dir.path().join("rtt.json");
    let out = Bin(BIN).run(&[
        "net",
        "client",
        &relay.addr.to_string(),
        "--mode",
        "rtt",
        "--msg-size",
        "64",
        "--streams",
        "2",
        "--time",
        "3s",
        "--json",
        json.to_str().unwrap(),
    ]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    let doc = read_json(&json);
    let rtt = &measured(&doc)["by_op"]["rtt"];
    let p50 = rtt["latency_ns"]["p50"].as_f64().unwrap();
    // The path's 20 ms, plus what two loaded processes on 2 cores add (22.5 ms seen in CI).
    assert!((18e6..=25e6).contains(&p50), "p50 {p50} ns\n{t}");
    // About 50 round trips a second on each of 2 streams for 3 s.
    let n = rtt["ops"].as_u64().unwrap();
    assert!((200..=320).contains(&n), "{n} round trips\n{t}");
    assert!(t.contains("p99"), "{t}");
}

#[test]
fn mistakes_are_one_line_and_exit_2() {
    let closed = free_addr();
    let server = free_addr();
    let _s = Server::start(&server);
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["net", "client", &closed, "--time", "1s"],
            "connection refused",
        ),
        (
            vec!["net", "client", &server, "--streams", "0"],
            "--streams 0",
        ),
        (
            vec!["net", "client", &server, "--time", "soon"],
            "--time soon",
        ),
        (
            vec!["net", "client", &server, "--msg-size", "0"],
            "--msg-size 0",
        ),
        (
            vec!["net", "client", &server, "--mode", "udp"],
            "--mode udp",
        ),
        (
            vec!["net", "client", &server, "--mode", "rtt", "--reverse"],
            "--reverse",
        ),
        (
            vec!["net", "client", "no.such.host.invalid"],
            "no.such.host.invalid",
        ),
        (
            vec!["net", "client", &server, "--udp", "--bitrate", "fast"],
            "--bitrate fast",
        ),
        (
            vec!["net", "client", &server, "--udp", "--mode", "rtt"],
            "--udp",
        ),
        (
            vec!["net", "client", &server, "--udp", "--msg-size", "8"],
            "--msg-size 8",
        ),
        (
            vec!["net", "server", "--listen", &server],
            "cannot listen there",
        ),
    ];
    for (args, expect) in cases {
        let out = Bin(BIN).run(&args);
        let t = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {t}");
        let line = t
            .lines()
            .find(|l| l.starts_with("error:"))
            .unwrap_or_default();
        assert!(line.contains(expect), "{expect}: {t}");
    }
}

#[test]
fn a_stranger_without_the_nonce_joins_nothing_and_idle_connections_do_not_block() {
    let server = free_addr();
    let _s = Server::start(&server);
    // Idle connections, and a data connection with a made-up nonce.
    let idle: Vec<_> = (0..100)
        .map(|_| std::net::TcpStream::connect(&server).unwrap())
        .collect();
    {
        use std::io::Write;
        let mut s = std::net::TcpStream::connect(&server).unwrap();
        s.write_all(b"DATA 00000000000000000000000000000000 0\n")
            .unwrap();
    }
    std::thread::sleep(Duration::from_millis(5500));
    let out = Bin(BIN).run(&["net", "client", &server, "--time", "1s", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    drop(idle);
}

/// Issue 30: 128 streams arrive faster than the server's 64 handshake threads start; they
/// used to be closed beyond that ("112 of 128 streams joined", 2 tries in 14). They wait in
/// the listen backlog now.
#[test]
fn the_most_streams_all_join_however_fast_they_come() {
    let server = free_addr();
    let _s = Server::start(&server);
    for _ in 0..5 {
        let out = Bin(BIN).run(&[
            "net",
            "client",
            &server,
            "--streams",
            "128",
            "--time",
            "1s",
            "-q",
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
}

#[test]
fn a_server_cut_off_mid_test_is_named_never_a_hang() {
    if !require_netns("a_server_cut_off_mid_test_is_named_never_a_hang") {
        return;
    }
    let (c, dir, server) = pair();
    std::thread::sleep(Duration::from_millis(300));
    let json = dir.path().join("cut.json");
    let client = Command::new("ip")
        .args([
            "netns",
            "exec",
            &c.namespaces[1],
            BIN,
            "net",
            "client",
            &server,
            "--time",
            "60s",
            "-q",
            "--json",
        ])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let cut = std::time::Instant::now();
    c.cut(0).unwrap();
    let out = client.wait_with_output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains(&server) && t.contains("silent"), "{t}");
    assert!(
        cut.elapsed() < Duration::from_secs(30),
        "took {:?}",
        cut.elapsed()
    );
    let doc = read_json(&json);
    assert_eq!(doc["status"], "failed", "{doc}");
}

#[test]
fn udp_above_a_200_mbit_link_loses_what_the_link_cannot_carry() {
    if !require_netns("udp_above_a_200_mbit_link_loses_what_the_link_cannot_carry") {
        return;
    }
    let (c, dir, server) = pair();
    // On the way to the server: a UDP sender's own queue would hold it back instead.
    c.limit_to(0, "200mbit").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let json = dir.path().join("udp.json");
    // One measurement: what differs from the link's ground truth, said. A receiver starved of
    // CPU on a loaded machine drops datagrams of its own (issue 53): up to three tries, each
    // failed one's reason printed.
    let measure = || -> Result<(), String> {
        let out = c.run_in(
            1,
            BIN,
            &[
                "net",
                "client",
                &server,
                "--udp",
                "--bitrate",
                "300m",
                "--time",
                "4s",
                "-q",
                "--json",
                json.to_str().unwrap(),
            ],
        );
        let t = text(&out);
        assert_eq!(out.status.code(), Some(0), "{t}");
        let doc = read_json(&json);
        let s = &doc["net"]["streams"][0];
        let sent = s["datagrams_sent"].as_f64().unwrap();
        let got = s["datagrams_received"].as_f64().unwrap();
        // 300 Mbit/s of 1400-byte datagrams are 1442-byte frames on the wire; the bucket
        // passes 200 Mbit/s of frames: 200/300 x 1400/1442 of the datagrams arrive.
        let expected = 1.0 - 200.0 / 300.0 * 1400.0 / 1442.0;
        let loss = 1.0 - got / sent;
        eprintln!("udp loss {loss:.4}, expected {expected:.4}");
        if (loss - expected).abs() >= 0.03 {
            return Err(format!("loss {loss:.4}, expected {expected:.4}"));
        }
        // The sender kept to its rate: 4 s at 300 Mbit/s.
        let rate = sent * 1400.0 * 8.0 / 4.0;
        if (rate / 300e6 - 1.0).abs() >= 0.03 {
            return Err(format!("sent at {rate} bit/s"));
        }
        // Over the bridge a datagram may overtake another when the sender moves between CPUs
        // (each CPU's backlog is drained on its own): now and then on a busy machine, never
        // many.
        if s["out_of_order"].as_f64().unwrap() >= 0.01 * got {
            return Err(format!("out of order: {s}"));
        }
        Ok(())
    };
    let mut failures = Vec::new();
    for attempt in 1..=3 {
        match measure() {
            Ok(()) => return,
            Err(why) => {
                eprintln!("attempt {attempt}: {why} (load average {})", load_average());
                failures.push(why);
            }
        }
    }
    panic!("three attempts off the link's ground truth: {failures:?}");
}

/// The host's one-minute load average, for a retried measurement's message.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .next()
        .unwrap_or("?")
        .to_string()
}

#[test]
fn mtus_that_differ_between_two_hosts_are_flagged() {
    if !require_netns("mtus_that_differ_between_two_hosts_are_flagged") {
        return;
    }
    let (c, dir, server) = pair();
    std::thread::sleep(Duration::from_millis(300));
    let run = |name: &str| {
        let json = dir.path().join(name);
        let out = c.run_in(
            1,
            BIN,
            &[
                "net",
                "client",
                &server,
                "--time",
                "1s",
                "-q",
                "--json",
                json.to_str().unwrap(),
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        (read_json(&json), text(&out))
    };
    // The same MTU on both: nothing to say.
    let (doc, _) = run("same.json");
    assert!(
        !doc["findings"].to_string().contains("net-mtu-mismatch"),
        "{}",
        doc["findings"]
    );
    assert_eq!(doc["net"]["mtu"].as_u64(), Some(1500), "{}", doc["net"]);
    // Jumbo frames on the client only.
    c.set_mtu(1, 9000).unwrap();
    let (doc, out) = run("jumbo.json");
    assert!(
        doc["findings"].to_string().contains("net-mtu-mismatch"),
        "{}",
        doc["findings"]
    );
    assert!(out.contains("MTUs differ"), "{out}");
    assert_eq!(
        doc["net"]["streams"][0]["pmtu"].as_u64(),
        Some(9000),
        "{}",
        doc["net"]
    );
    // The path MTU, probed with DF set: the client's 9000-byte frames do not arrive, 1500 do.
    let json = dir.path().join("pmtu.json");
    let out = c.run_in(
        1,
        BIN,
        &[
            "net",
            "client",
            &server,
            "--mode",
            "pmtu",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    let doc = read_json(&json);
    assert_eq!(doc["net"]["path_mtu"].as_u64(), Some(1500), "{said}");
    assert_eq!(doc["net"]["mtu"].as_u64(), Some(9000), "{said}");
    assert!(said.contains("less than"), "{said}");
}

#[test]
fn a_streams_sweep_is_a_phase_per_count_and_a_table() {
    let server = free_addr();
    let _s = Server::start(&server);
    let dir = temp_dir(TMP);
    let json = dir.path().join("sweep.json");
    let out = Bin(BIN).run(&[
        "net",
        "client",
        &server,
        "--streams-sweep",
        "1,3",
        "--time",
        "1s",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    let doc = read_json(&json);
    let names: Vec<&str> = doc["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["sweep:streams=1", "sweep:streams=3"]);
    assert_eq!(doc["phases"][1]["jobs"][0]["workers"].as_u64(), Some(3));
    let points = doc["sweep"]["points"].as_array().unwrap();
    assert!(
        points
            .iter()
            .all(|p| p["bw_bytes_per_s"].as_f64().unwrap() > 0.0),
        "{points:?}"
    );
    assert!(t.contains("sweep over streams"), "{t}");
    assert_eq!(doc["net"]["streams"].as_array().unwrap().len(), 3);
}

#[test]
fn an_open_loop_past_what_the_path_carries_shows_in_response_time_not_service_time() {
    let server = free_addr();
    let _s = Server::start(&server);
    let relay = DelayRelay::start(server.parse().unwrap(), Duration::from_millis(10));
    let dir = temp_dir(TMP);
    let run = |rate: &str, name: &str| {
        let json = dir.path().join(name);
        let out = Bin(BIN).run(&[
            "net",
            "client",
            &relay.addr.to_string(),
            "--mode",
            "rtt",
            "--rate-ops",
            rate,
            "--time",
            "3s",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let doc = read_json(&json);
        let rtt = &measured(&doc)["by_op"]["rtt"];
        (
            rtt["latency_ns"]["p50"].as_f64().unwrap(),
            rtt["service_latency_ns"]["p50"].as_f64().unwrap(),
            rtt["ops"].as_u64().unwrap(),
        )
    };
    // 20 a second fit in one stream of 20 ms round trips: response = service = 20 ms.
    let (response, service, n) = run("20", "slow.json");
    assert!(
        (18e6..=23e6).contains(&response) && (18e6..=23e6).contains(&service),
        "{response} {service}"
    );
    assert!((55..=62).contains(&n), "{n}");
    // 100 a second do not (at most 50): each waits for the ones before; the response time from
    // the schedule grows while each round trip still takes 20 ms.
    let (response, service, _) = run("100", "fast.json");
    assert!((18e6..=23e6).contains(&service), "{service}");
    assert!(
        response > 3.0 * service,
        "response {response} vs service {service}"
    );
}

/// Each stream's bytes in `net` are the receiver's final count (its end report), not its last
/// per-second line: a test of a second and a half counted whole, not as its first second.
#[test]
fn a_streams_bytes_are_the_receivers_final_count() {
    let dir = temp_dir(TMP);
    let server = free_addr();
    let _s = Server::start(&server);
    let json = dir.path().join("n.json");
    let out = Bin(BIN).run(&[
        "net",
        "client",
        &server,
        "--time",
        "1500ms",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc = read_json(&json);
    // What the sender's kernel saw acknowledged, over the whole test.
    let acked = measured(&doc)["by_op"]["send"]["bytes"].as_u64().unwrap();
    let counted: u64 = doc["net"]["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["bytes"].as_u64().unwrap())
        .sum();
    assert!(acked > 0, "{doc}");
    assert!(
        counted as f64 >= 0.99 * acked as f64,
        "the receiver counted {counted} of {acked} bytes acknowledged"
    );
}

#[test]
fn a_server_with_a_token_serves_only_clients_that_give_it() {
    let dir = temp_dir(TMP);
    let token = dir.path().join("token");
    std::fs::write(&token, "net-test-token-0123456789\n").unwrap();
    let wrong = dir.path().join("wrong");
    std::fs::write(&wrong, "another-token-9876543210\n").unwrap();
    let server = free_addr();
    let child = Command::new(BIN)
        .args(["net", "server", "--listen", &server, "--token-file"])
        .arg(&token)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _s = Server(child);
    for _ in 0..100 {
        if std::net::TcpStream::connect(&server).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let client = |extra: &[&str]| {
        let mut args = vec!["net", "client", &server, "--time", "1s", "-q"];
        args.extend_from_slice(extra);
        let out = Bin(BIN).run(&args);
        (out.status.code(), text(&out))
    };
    let (code, t) = client(&[]);
    assert_eq!(code, Some(2), "{t}");
    assert!(t.contains("asks for a token"), "{t}");
    let (code, t) = client(&["--token-file", wrong.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{t}");
    assert!(t.contains("wrong token"), "{t}");
    let (code, t) = client(&["--token-file", token.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{t}");
    // A token file that is no token is the user's mistake, before anything connects.
    let short = dir.path().join("short");
    std::fs::write(&short, "abc\n").unwrap();
    let (code, t) = client(&["--token-file", short.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{t}");
}

/// An agent in each of `c`'s namespaces (port 7878, the token in `dir/token`): their list.
fn agents(c: &mut NetCluster, dir: &stormark_testkit::TempDir) -> String {
    let token = dir.path().join("token");
    std::fs::write(&token, "net-mesh-test-token-0123456789\n").unwrap();
    for i in 0..c.addresses.len() {
        std::fs::create_dir(dir.path().join(format!("host{i}"))).unwrap();
    }
    c.start_agents(BIN, &token, dir.path(), &|i| {
        dir.path().join(format!("host{i}"))
    })
}

/// The pair `from -> to` of a mesh matrix.
fn mesh_pair(matrix: &serde_json::Value, from: u64, to: u64) -> &serde_json::Value {
    matrix
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["from"] == from && p["to"] == to)
        .unwrap_or_else(|| panic!("no pair {from} -> {to} in {matrix}"))
}

#[test]
fn a_mesh_of_three_hosts_is_two_3x3_matrices_that_flag_the_limited_host_and_the_mtu_mismatch() {
    if !require_netns("a_mesh_of_three_hosts") {
        return;
    }
    let mut c = NetCluster::new(3).expect("namespaces");
    let dir = temp_dir(TMP);
    let list = agents(&mut c, &dir);
    // What host 0 sends goes through 200 Mbit/s; host 2 has jumbo frames, the others not.
    c.limit(0, "200mbit").unwrap();
    c.set_mtu(2, 9000).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let json = dir.path().join("mesh.json");
    let token = dir.path().join("token");
    let payload = 200e6 * 1448.0 / 1514.0;
    let mesh_run = || {
        let out = Bin(BIN).run(&[
            "net",
            "--agents",
            &list,
            "--mode",
            "mesh",
            "--token-file",
            token.to_str().unwrap(),
            "--time",
            "2s",
            "--json",
            json.to_str().unwrap(),
            "--html",
            dir.path().join("mesh.html").to_str().unwrap(),
        ]);
        let said = text(&out);
        eprintln!("{said}");
        assert_eq!(out.status.code(), Some(0), "{said}");
        said
    };
    let mut said = mesh_run();
    // Short of the bucket's rate can be a sender starved of CPU on a loaded machine (0.83
    // was seen once with the whole suite running); over it never is. Run once more then,
    // saying why, so that the bound below still holds the figure to the link.
    // Likewise an unlimited pair (12-25 Gbit/s of CPU-bound copying on two vCPUs) that a
    // test running beside it slowed under 80% of the median: flagged slow for that, once
    // (17.7 of a 24.9 Gbit/s median was seen with the suite running).
    let short = |doc: &serde_json::Value| {
        let host0 = [1, 2].iter().any(|&to| {
            mesh_pair(&doc["mesh"]["alone"], 0, to)["bits_per_s"]
                .as_f64()
                .is_some_and(|b| b / payload < 0.95)
        });
        let others_slow = doc["findings"].as_array().is_some_and(|fs| {
            fs.iter().any(|f| {
                f["code"] == "net-pair-slow"
                    && f["evidence"]["matrix"] == "alone"
                    && f["evidence"]["pairs"]
                        .as_array()
                        .is_some_and(|p| p.len() > 2)
            })
        });
        host0 || others_slow
    };
    if short(&read_json(&json)) {
        eprintln!("RETRY a_mesh_of_three_hosts: a pair of host 0 under 0.95 of its bucket's payload rate, or an unlimited pair flagged slow (a sender short of CPU on a loaded machine?); measuring once more");
        said = mesh_run();
    }
    // The report shows both matrices as heat maps.
    let page = std::fs::read_to_string(dir.path().join("mesh.html")).unwrap();
    assert_eq!(page.matches("<table class=\"heat\">").count(), 2, "{page}");
    let doc = read_json(&json);
    let mesh = &doc["mesh"];
    assert_eq!(mesh["hosts"].as_array().unwrap().len(), 3, "{mesh}");
    for matrix in ["alone", "loaded"] {
        assert_eq!(
            mesh[matrix].as_array().unwrap().len(),
            6,
            "{matrix}: {mesh}"
        );
    }
    // Ground truth: host 0's pairs alone carry the token bucket's payload rate (tc counts
    // whole 1514-byte frames, 1448 bytes of them payload), within 5%.
    for to in [1, 2] {
        let bits = mesh_pair(&mesh["alone"], 0, to)["bits_per_s"]
            .as_f64()
            .unwrap();
        eprintln!("0 -> {to} alone: {:.3} of the payload rate", bits / payload);
        assert!(
            (0.95..=1.05).contains(&(bits / payload)),
            "0 -> {to} alone: {bits} bit/s through a 200 Mbit/s bucket\n{said}"
        );
    }
    // All at once, host 0's two pairs share its bucket, with the ACKs of what it receives
    // from both others at the same time.
    let shared: f64 = [1, 2]
        .iter()
        .map(|&to| {
            mesh_pair(&mesh["loaded"], 0, to)["bits_per_s"]
                .as_f64()
                .unwrap()
        })
        .sum();
    eprintln!(
        "host 0 at once: {:.3} of the payload rate",
        shared / payload
    );
    assert!(
        (0.5..=1.05).contains(&(shared / payload)),
        "host 0's pairs at once: {shared} bit/s in total through 200 Mbit/s\n{said}"
    );
    // The others are not limited: far faster.
    for (from, to) in [(1, 0), (1, 2), (2, 0), (2, 1)] {
        let bits = mesh_pair(&mesh["alone"], from, to)["bits_per_s"]
            .as_f64()
            .unwrap();
        assert!(bits > 500e6, "{from} -> {to} alone: {bits} bit/s");
    }
    let findings = doc["findings"].to_string();
    let slow = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "net-pair-slow" && f["evidence"]["matrix"] == "alone")
        .unwrap_or_else(|| panic!("no slow pair flagged: {findings}"));
    let flagged: Vec<(String, String)> = slow["evidence"]["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["from"].as_str().unwrap().into(),
                p["to"].as_str().unwrap().into(),
            )
        })
        .collect();
    let a = &c.addresses;
    assert_eq!(
        flagged,
        vec![(a[0].clone(), a[1].clone()), (a[0].clone(), a[2].clone())],
        "{slow}"
    );
    assert!(
        slow["message"]
            .as_str()
            .unwrap()
            .contains(&format!("everything {} sends", a[0])),
        "{slow}"
    );
    let mtu = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "net-mtu-mismatch")
        .unwrap_or_else(|| panic!("the MTU mismatch not flagged: {findings}"));
    assert_eq!(mtu["evidence"]["hosts"]["9000"][0], a[2].as_str(), "{mtu}");
    // A second of 64-byte round trips per pair alone: known, and short on veth links.
    for p in mesh["alone"].as_array().unwrap() {
        let (p50, p99) = (p["rtt_p50_ns"].as_u64(), p["rtt_p99_ns"].as_u64());
        assert!(
            p50.is_some_and(|v| v > 0 && v < 10_000_000) && p99 >= p50,
            "round trips of {p}"
        );
    }
    assert!(said.contains("round trips of 64 bytes"), "{said}");
    // The path MTU, probed with DF set: what host 2 sends at 9000 bytes is dropped on the way
    // to the 1500-byte hosts; every other path carries its sender's 1500.
    for (from, to, want) in [
        (2, 0, 1500),
        (2, 1, 1500),
        (0, 1, 1500),
        (0, 2, 1500),
        (1, 2, 1500),
    ] {
        let p = mesh_pair(&mesh["alone"], from, to);
        assert_eq!(p["path_mtu"].as_u64(), Some(want), "{from} -> {to}: {p}");
    }
    let path = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "net-path-mtu")
        .unwrap_or_else(|| panic!("the path MTU not flagged: {findings}"));
    let pairs: Vec<&str> = path["evidence"]["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["pair"].as_str().unwrap())
        .collect();
    assert_eq!(
        pairs,
        [
            format!("{} -> {}", a[2], a[0]),
            format!("{} -> {}", a[2], a[1])
        ],
        "{path}"
    );
    // At 200 Mbit/s neither end's thread is near a whole CPU; each stream's CPU is known.
    for to in [1, 2] {
        let s = &mesh_pair(&mesh["alone"], 0, to)["streams"][0];
        for end in ["sender_cpu_pct", "receiver_cpu_pct"] {
            let pct = s[end]
                .as_f64()
                .unwrap_or_else(|| panic!("0 -> {to}: no {end}: {s}"));
            assert!(pct > 0.0 && pct < 50.0, "0 -> {to}: {end} {pct}");
        }
    }
    if let Some(cpu) = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "net-cpu-bound")
    {
        let said = cpu["message"].as_str().unwrap();
        assert!(!said.contains(&format!("{} ->", a[0])), "{said}");
    }
    // The matrices are in the output, rows sending to columns.
    assert!(said.contains("each pair alone: Gbit/s"), "{said}");
    assert!(said.contains("all pairs at once: Gbit/s"), "{said}");
}

#[test]
fn a_mesh_host_cut_off_mid_run_is_named_and_the_rest_is_measured() {
    if !require_netns("a_mesh_host_cut_off_mid_run") {
        return;
    }
    let mut c = NetCluster::new(3).expect("namespaces");
    let dir = temp_dir(TMP);
    let list = agents(&mut c, &dir);
    let json = dir.path().join("mesh.json");
    let token = dir.path().join("token");
    let child = Command::new(BIN)
        .args(["net", "--agents", &list, "--token-file"])
        .arg(&token)
        .args(["--time", "2s", "-q", "--json"])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // During the first pair (0 -> 1), host 2 goes: its cable pulled.
    std::thread::sleep(Duration::from_millis(1500));
    c.cut(2).unwrap();
    let started = std::time::Instant::now();
    let out = child.wait_with_output().unwrap();
    let said = text(&out);
    eprintln!("{said}");
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        started.elapsed() < Duration::from_secs(90),
        "the mesh took {:?} after the cut",
        started.elapsed()
    );
    let doc = read_json(&json);
    assert_eq!(doc["status"], "failed", "{}", doc["status"]);
    let mesh = &doc["mesh"];
    // The pairs between the two hosts left were measured, alone and at once.
    for matrix in ["alone", "loaded"] {
        for (from, to) in [(0, 1), (1, 0)] {
            let p = mesh_pair(&mesh[matrix], from, to);
            assert!(p["failure"].is_null(), "{matrix} {from} -> {to}: {p}");
            assert!(p["bits_per_s"].as_f64().unwrap() > 1e8, "{p}");
        }
        // Every pair with host 2 failed, with host 2 named.
        for (from, to) in [(0, 2), (1, 2), (2, 0), (2, 1)] {
            let p = mesh_pair(&mesh[matrix], from, to);
            let why = p["failure"]
                .as_str()
                .unwrap_or_else(|| panic!("{matrix} {p}"));
            assert!(
                why.contains(&c.addresses[2]),
                "{matrix} {from} -> {to}: {why}"
            );
        }
    }
    assert!(said.contains("failed:"), "{said}");
}

/// Issue 53: an agent killed between its tests (after its own pairs, before the others' pairs
/// to it) is a host failure, not the user's mistake: its remaining pairs are not run, with the
/// reason, and every pair of the hosts left is measured.
#[test]
fn a_mesh_agent_killed_between_its_tests_is_a_host_failure_and_the_rest_is_measured() {
    if !require_netns("a_mesh_agent_killed_between_its_tests") {
        return;
    }
    let mut c = NetCluster::new(3).expect("namespaces");
    let dir = temp_dir(TMP);
    let list = agents(&mut c, &dir);
    let json = dir.path().join("mesh.json");
    let token = dir.path().join("token");
    let mut child = Command::new(BIN)
        .args(["net", "--agents", &list, "--token-file"])
        .arg(&token)
        .args(["--time", "1s", "-q", "--json"])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The document is written before each phase: once it holds host 1's last test of its own
    // (rtt:1->2), host 1's agent is killed. Host 2's pairs to host 0 run meanwhile; its pair
    // to host 1 and the pairs at once come after.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let ran = std::fs::read(&json)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .is_some_and(|d| {
                d["phases"]
                    .as_array()
                    .is_some_and(|ps| ps.iter().any(|p| p["name"] == "rtt:1->2"))
            });
        if ran {
            break;
        }
        if std::time::Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("rtt:1->2 never done:\n{}", text(&out));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    c.kill_agent(1).unwrap();
    let out = child.wait_with_output().unwrap();
    let said = text(&out);
    eprintln!("{said}");
    assert_eq!(out.status.code(), Some(1), "{said}");
    let doc = read_json(&json);
    assert_eq!(doc["status"], "failed", "{}", doc["status"]);
    let a1 = &c.addresses[1];
    let failure = &doc["hosts"][1]["failure"];
    assert!(
        failure["message"].is_string(),
        "hosts[1]: {}",
        doc["hosts"][1]
    );
    assert_ne!(failure["phase"], "all-pairs", "{failure}");
    for h in [0, 2] {
        assert!(doc["hosts"][h]["failure"].is_null(), "{}", doc["hosts"][h]);
    }
    assert!(said.contains(&format!("agent {a1}")), "{said}");
    let mesh = &doc["mesh"];
    let measured = |matrix: &str, from, to| {
        let p = mesh_pair(&mesh[matrix], from, to);
        assert!(p["failure"].is_null(), "{matrix} {from} -> {to}: {p}");
        assert!(p["bits_per_s"].as_f64().unwrap() > 1e8, "{p}");
    };
    let not_run = |matrix: &str, from, to| {
        let p = mesh_pair(&mesh[matrix], from, to);
        let why = p["failure"]
            .as_str()
            .unwrap_or_else(|| panic!("{matrix} {from} -> {to}: {p}"));
        assert!(
            why.starts_with("not run") && why.contains(a1.as_str()),
            "{matrix} {from} -> {to}: {why}"
        );
        assert_eq!(p["bytes"], 0, "{p}");
    };
    // Alone: every pair before the kill, and host 2's to host 0 after it; host 2's to the
    // dead host not run.
    for (from, to) in [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0)] {
        measured("alone", from, to);
    }
    not_run("alone", 2, 1);
    // At once: the two hosts left, between themselves; nothing to or from host 1.
    for (from, to) in [(0, 2), (2, 0)] {
        measured("loaded", from, to);
    }
    for (from, to) in [(0, 1), (1, 0), (1, 2), (2, 1)] {
        not_run("loaded", from, to);
    }
    // The matrices are in the terminal output too.
    assert!(said.contains("each pair alone: Gbit/s"), "{said}");
    assert!(said.contains("all pairs at once: Gbit/s"), "{said}");
}

#[test]
fn mesh_mistakes_are_one_line_and_exit_2() {
    let dir = temp_dir(TMP);
    let token = dir.path().join("token");
    std::fs::write(&token, "net-mesh-test-token-0123456789\n").unwrap();
    let t = token.to_str().unwrap();
    let closed = free_addr();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["net"], "expected server, client HOST, or --agents"),
        (
            vec!["net", "--agents", "127.0.0.1:7878", "--token-file", t],
            "at least two agents",
        ),
        (
            vec![
                "net",
                "--agents",
                "127.0.0.1:1,127.0.0.1:2",
                "--token-file",
                t,
            ],
            "as another agent is",
        ),
        (
            vec![
                "net",
                "--agents",
                "127.0.0.1:1,127.0.0.2:2",
                "--mode",
                "rtt",
                "--token-file",
                t,
            ],
            "--mode rtt: over agents the mode is mesh",
        ),
        (
            vec!["net", "--agents", "127.0.0.1:1,127.0.0.2:2"],
            "--token-file",
        ),
        (
            vec![
                "net",
                "--agents",
                "127.0.0.1:1,127.0.0.2:2",
                "--streams",
                "0",
                "--token-file",
                t,
            ],
            "--streams 0",
        ),
        (
            vec![
                "net",
                "mesh",
                "--agents",
                "nohost,127.0.0.2:2",
                "--token-file",
                t,
            ],
            "expected host:port",
        ),
        (
            vec![
                "net",
                "--agents",
                &closed,
                "--token-file",
                t,
                "--agents",
                "x",
            ],
            "",
        ),
    ];
    for (args, want) in cases {
        let out = Bin(BIN).run(&args);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(said.contains(want), "{args:?}: {said}");
        assert!(!said.contains("panicked"), "{args:?}: {said}");
    }
    // An agent that is not there: nothing runs, one line.
    let other = free_addr().replace("127.0.0.1", "127.0.0.2");
    let list = format!("{closed},{other}");
    let out = Bin(BIN).run(&["net", "--agents", &list, "--token-file", t]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains(&closed) && said.contains("cannot connect"),
        "{said}"
    );
}

#[test]
fn a_clients_metrics_show_the_bytes_moving() {
    use std::io::{Read, Write};
    let server = free_addr();
    let _s = Server::start(&server);
    let metrics = free_addr();
    let mut child = Command::new(BIN)
        .args(["net", "client", &server, "--time", "4s", "-q"])
        .args(["--metrics-listen", &metrics])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut seen = Vec::new();
    while child.try_wait().unwrap().is_none() {
        if let Ok(mut s) = std::net::TcpStream::connect(&metrics) {
            let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
            let mut text = String::new();
            let _ = s.read_to_string(&mut text);
            if let Some(v) = text.lines().find_map(|l| {
                l.strip_prefix("stormark_bytes_total{op=\"send\"}")?
                    .trim()
                    .parse::<u64>()
                    .ok()
            }) {
                seen.push(v);
            }
        }
        std::thread::sleep(Duration::from_millis(600));
    }
    // What the client said, if it failed (it says little with -q).
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    seen.dedup();
    assert!(
        seen.len() >= 2 && seen.windows(2).all(|w| w[0] < w[1]),
        "{seen:?}"
    );
}

/// Issue 30: a server's refusal is the other end's text: escape sequences (clear the screen,
/// retitle the window) and a forged `status: ok` line reach the terminal escaped, on one line.
#[test]
fn a_refusal_with_escape_sequences_is_printed_escaped() {
    use std::io::{BufRead, BufReader, Write};
    let addr = free_addr();
    let listener = std::net::TcpListener::bind(&addr).unwrap();
    let fake = std::thread::spawn(move || {
        let (conn, _) = listener.accept().unwrap();
        let mut r = BufReader::new(conn.try_clone().unwrap());
        let mut hello = String::new();
        let _ = r.read_line(&mut hello);
        let reason = "busy\u{1b}[2J\u{1b}]0;owned\u{7}\nstatus: ok";
        let line = serde_json::json!({"kind": "refused", "reason": reason});
        let mut w = conn;
        let _ = writeln!(w, "{line}");
    });
    let out = Bin(BIN).run(&["net", "client", &addr, "--time", "1s"]);
    fake.join().unwrap();
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        !said.contains('\u{1b}') && !said.contains('\u{7}'),
        "{said:?}"
    );
    assert!(said.contains("busy"), "{said}");
    assert!(!said.lines().any(|l| l.trim() == "status: ok"), "{said}");
}

/// Issue 54: a UDP receiver that claims more than was sent (10^12 of a few hundred datagrams)
/// is a protocol error: counted as one of its own kind, its counts not used (no rate above
/// what was sent), the peer named as not to be believed, exit 1.
#[test]
fn a_udp_receiver_claiming_more_than_was_sent_is_not_believed() {
    use std::io::{BufRead, BufReader, Write};
    let addr = free_addr();
    let listener = std::net::TcpListener::bind(&addr).unwrap();
    // The datagrams land somewhere (no port-unreachable errors), unread.
    let _udp = std::net::UdpSocket::bind(&addr).unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            let mut r = BufReader::new(conn.try_clone().unwrap());
            let mut line = String::new();
            let _ = r.read_line(&mut line);
            let hello: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
            let mut w = conn;
            let _ = writeln!(w, "{}", serde_json::json!({"kind": "accepted"}));
            if hello["check_only"] == true {
                continue;
            }
            let _ = writeln!(w, "{}", serde_json::json!({"kind": "started"}));
            let claim = 1_000_000_000_000u64;
            let _ = writeln!(
                w,
                "{}",
                serde_json::json!({"kind": "second", "t": 0, "bytes": [claim * 1400]})
            );
            let ms = hello["time_ms"].as_u64().unwrap_or(1000);
            std::thread::sleep(Duration::from_millis(ms));
            let end = serde_json::json!({"kind": "end", "bytes": [claim * 1400],
                "duration_ns": ms * 1_000_000, "tcp": [],
                "udp": [{"datagrams": claim, "bytes": claim * 1400, "out_of_order": 0, "jitter_ns": 0}]});
            let _ = writeln!(w, "{end}");
            // The client closes the session.
            let _ = r.read_line(&mut line);
            return;
        }
    });
    let dir = temp_dir(TMP);
    let json = dir.path().join("udp.json");
    let out = Command::new("timeout")
        .args([
            "-k",
            "5",
            "60",
            BIN,
            "net",
            "client",
            &addr,
            "--udp",
            "--bitrate",
            "1m",
        ])
        .args(["--time", "2s", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("not to be believed"), "{t}");
    assert!(!t.contains("status: ok"), "{t}");
    let doc = read_json(&json);
    assert_eq!(doc["status"], "failed", "{doc}");
    let run = measured(&doc);
    let errors = run["errors"].as_array().cloned().unwrap_or_default();
    assert!(
        errors.iter().any(|e| e["kind"] == "protocol"),
        "{:#}",
        run["errors"]
    );
    // Never above what was sent: 1 Mbit/s for 2 s.
    let sent = doc["net"]["streams"][0]["datagrams_sent"].as_u64().unwrap();
    let bytes = run["total"]["bytes"].as_u64().unwrap_or(0);
    assert!(
        bytes <= sent * 1400,
        "{bytes} bytes credited of {sent} datagrams sent"
    );
    assert!(
        run["total"]["bw_bytes_per_s"].as_f64().unwrap_or(0.0) < 1e6,
        "{run}"
    );
    assert!(
        doc["net"]["streams"][0]["datagrams_received"].is_null(),
        "{}",
        doc["net"]
    );
}
