//! Every parser of user input, fed arbitrary bytes and near-valid text (issue 16): sizes,
//! durations, percentages, every job option, TOML and fio job files (their includes and
//! variables too), expectations and search options, results documents (and what every
//! renderer makes of a crafted one), the agent protocol's messages and snapshots, the net
//! server's handshake. None may panic, abort or hang. `cargo test` runs a few hundred cases per parser; `bench/fuzz.sh` runs millions
//! (`STORMARK_FUZZ_CASES`) and docs/fuzzing.md records the count.

use proptest::prelude::*;
use prost::Message;
use stormark_cluster::{decode_snapshot, pb};
use stormark_plan::{suite_file_steps, SuiteOptions};
use stormark_spec::{
    parse_curve, parse_duration, parse_expect, parse_fio_job_file, parse_job_file, parse_percent,
    parse_size, parse_steady_state, parse_sweep, parse_target_latency, to_fio, JobOpts, Source,
    Workload, JOB_KEYS,
};

fn config() -> ProptestConfig {
    let cases = std::env::var("STORMARK_FUZZ_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(256);
    ProptestConfig {
        cases,
        // Failures are found, not shrunk forever, and nothing is written beside the sources.
        max_shrink_iters: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Arbitrary bytes as the text a user could type (lossy: invalid UTF-8 becomes U+FFFD).
fn bytes_text() -> impl Strategy<Value = String> {
    proptest::collection::vec(any::<u8>(), 0..96)
        .prop_map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// Text made of the characters option values are made of, to reach deep into the parsers.
fn near_valid() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9kKmMgGtTiIbBsSuUnµhd.%:,=<>_ +-]{0,40}",
        "(p[0-9]{1,3}(\\.[0-9]{1,3})?|mean|max|iops|bw|lat)(<=|>=|<|>|=)[0-9.]{1,12}(ns|us|ms|s|k|m|g|%)?(,.{0,12})?",
        "(bs|size|jobs|iodepth|agents|obj-size)=[0-9a-z,.]{0,30}",
        "[0-9]{1,25}(\\.[0-9]{0,20})?(e[0-9]{1,4})?[a-z]{0,4}",
        bytes_text(),
    ]
}

/// A results document with a few bytes changed, inserted or removed.
fn mutated_document() -> impl Strategy<Value = Vec<u8>> {
    let doc = serde_json::to_vec(&stormark_stats::Results::new(vec![
        "stormark".into(),
        "run".into(),
    ]))
    .expect("a document serializes");
    (
        Just(doc),
        proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..8),
    )
        .prop_map(|(mut doc, edits)| {
            for (at, byte, how) in edits {
                let i = at.index(doc.len().max(1));
                match how {
                    0 if i < doc.len() => doc[i] = byte,
                    1 => doc.insert(i.min(doc.len()), byte),
                    _ if i < doc.len() => {
                        doc.remove(i);
                    }
                    _ => {}
                }
            }
            doc
        })
}

/// The sample document (two hosts, intervals, findings) with some of its numbers replaced by
/// figures no run measures, and some of its text by text from elsewhere.
fn crafted_document() -> impl Strategy<Value = String> {
    let doc =
        serde_json::to_string(&stormark_testkit::sample_results()).expect("a document serializes");
    let numbers: Vec<(usize, usize)> = {
        let b = doc.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if b[i].is_ascii_digit() && i > 0 && matches!(b[i - 1], b':' | b'[' | b',') {
                let start = i;
                while i < b.len() && (b[i].is_ascii_digit() || b".eE+-".contains(&b[i])) {
                    i += 1;
                }
                out.push((start, i));
            }
            i += 1;
        }
        out
    };
    let values = prop_oneof![
        Just("1.7e308".to_string()),
        Just("-1.7e308".to_string()),
        Just("-5".to_string()),
        Just("0".to_string()),
        Just("1e18".to_string()),
        Just("18446744073709551615".to_string()),
        Just("4.9e-324".to_string()),
        "[0-9]{1,25}".prop_map(|s| s),
    ];
    (
        Just((doc, numbers)),
        proptest::collection::vec((any::<prop::sample::Index>(), values), 1..6),
        proptest::option::of("[a-z<>\\[\\]()|*_`#=+@\n\r\t\u{1b}\u{202e}-]{0,24}"),
    )
        .prop_map(|((doc, numbers), edits, name)| {
            let mut picks: Vec<(usize, usize, String)> = edits
                .into_iter()
                .map(|(at, v)| {
                    let (a, b) = numbers[at.index(numbers.len())];
                    (a, b, v)
                })
                .collect();
            picks.sort_by_key(|p| std::cmp::Reverse(p.0));
            picks.dedup_by_key(|p| p.0);
            let mut doc = doc;
            for (a, b, v) in picks {
                doc.replace_range(a..b, &v);
            }
            // Text from elsewhere in a host's name.
            match (name, serde_json::from_str::<serde_json::Value>(&doc)) {
                (Some(n), Ok(mut v)) => {
                    v["hosts"][0]["name"] = serde_json::json!(n);
                    v.to_string()
                }
                _ => doc,
            }
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn units_never_panic(text in near_valid()) {
        let _ = parse_size(&text);
        let _ = parse_duration(&text);
        let _ = parse_percent(&text);
    }

    #[test]
    fn every_job_option_never_panics(key in 0..JOB_KEYS.len(), value in near_valid(), other in bytes_text()) {
        let mut opts = JobOpts::default();
        let _ = opts.set(JOB_KEYS[key], &value, Source::Key("fuzz"));
        let _ = opts.set(&other, &value, Source::Flag);
        if let Ok(job) = opts.resolve("fuzz") {
            let _ = Workload::new(vec![job], false);
        }
    }

    #[test]
    fn job_files_never_panic(text in prop_oneof![
        bytes_text(),
        "(\\[\\[job\\]\\]\n)?([a-z_]{1,12} = (\"[0-9a-z:%.,]{0,10}\"|[0-9]{1,20}|true|false)\n){0,8}(\\[\\[job\\]\\]\n[a-z_]{1,12} = \"[0-9a-z]{0,8}\"\n){0,3}",
        // Suite files: [[step]] sections with names, commands and expectations.
        "(name = \"[a-z./]{0,6}\"\n)?(\\[\\[step\\]\\]\n(name = \"[a-z0-9./-]{0,8}\"\n)?(command = \\[(\"(run|s3|net|meta|--time|--json|1s|[a-z/]{0,6})\", ?){0,5}\\]\n)?(expect = \"[a-z0-9=,]{0,10}\"\n)?(together = \"g\"\n)?){0,4}",
    ]) {
        let _ = parse_job_file(&text, "fuzz.toml");
        let smoke = SuiteOptions { smoke: true, agents: vec!["a:1".into()], ..SuiteOptions::default() };
        for o in [SuiteOptions::default(), smoke] {
            let _ = suite_file_steps(&text, "fuzz.toml", &o);
        }
    }

    #[test]
    fn fio_job_files_never_panic(text in prop_oneof![
        bytes_text(),
        "(include [a-z]{0,4}\n|\\[[a-z]{0,6}\\]\n|[a-z_]{1,14}(=[0-9a-z:,.%${}_-]{0,12})?\n|; c\n){0,16}",
    ], lenient in any::<bool>()) {
        // Short names are values; a one-letter one is 70 kB (the expansion cap).
        let env = |name: &str| match name.len() {
            1 => Some("4".repeat(70_000)),
            2..=3 => Some("4k".to_string()),
            _ => None,
        };
        let include = |name: &str| -> Result<String, String> {
            if name.is_empty() { Err("none".into()) } else { Ok(format!("include {name}\n[g]\nbs={name}\n")) }
        };
        if let Ok(f) = parse_fio_job_file(&text, "fuzz.fio", &env, &include, lenient) {
            let jobs: Vec<_> = f.file.jobs.iter().filter_map(|j| j.resolve("fuzz").ok()).collect();
            let _ = to_fio(&jobs, "/fuzz", true);
        }
    }

    #[test]
    fn ior_command_lines_and_scripts_never_panic(args in prop_oneof![
        bytes_text(),
        "((-[a-zA-Z]{1,3}|--[a-z.]{1,12}(=[0-9a-z]{0,4})?)( [0-9a-z/'\"]{0,6})? ?){0,10}",
    ], script in prop_oneof![
        bytes_text(),
        "(IOR START\n)?([a-zA-Z_]{1,14} ?= ?[0-9a-zA-Z]{0,6}\n|RUN\n|# c\n){0,12}(IOR STOP\n)?",
    ]) {
        // What parses resolves and prints back as IOR's command line, or is refused, whole.
        for run in [stormark_spec::parse_ior(&args, None), stormark_spec::parse_ior(&args, Some(&script))]
            .into_iter()
            .flatten()
        {
            let jobs: Vec<_> = run.file.jobs.iter().filter_map(|j| j.resolve("fuzz").ok()).collect();
            if let Ok(w) = stormark_spec::Workload::new(jobs, false) {
                let _ = stormark_spec::to_ior(&w, run.repeat);
            }
        }
        let _ = stormark_spec::ior_script(&args);
    }

    #[test]
    fn search_and_expectation_options_never_panic(text in near_valid()) {
        let _ = parse_expect(&text);
        let _ = parse_target_latency(&text);
        let _ = parse_curve(&text);
        let _ = parse_sweep(&text);
        let _ = parse_steady_state(&text);
    }

    #[test]
    fn results_documents_never_panic(doc in prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..256),
        mutated_document(),
    ]) {
        if let Ok(r) = serde_json::from_slice::<stormark_stats::Results>(&doc) {
            let _ = stormark_stats::compare(&r, &r, 3.0);
            let _ = stormark_stats::differences(&r, &r);
        }
    }

    #[test]
    fn crafted_documents_into_every_renderer_never_panic_or_hang(doc in crafted_document()) {
        use stormark_report::Render;
        let Ok(mut v) = serde_json::from_str::<serde_json::Value>(&doc) else { return Ok(()); };
        if stormark_stats::check_document(&mut v).is_err() {
            return Ok(());
        }
        let Ok(r) = serde_json::from_value::<stormark_stats::Results>(v) else { return Ok(()); };
        let started = std::time::Instant::now();
        let _ = stormark_report::Terminal.render(&r);
        let md = stormark_report::Markdown.render(&r);
        prop_assert!(!md.contains('\u{1b}'), "an escape sequence in Markdown");
        let _ = stormark_report::csv_files(&r);
        let _ = stormark_report::Html.render(&r);
        // A figure that once hung the chart's axis: every renderer ends promptly.
        prop_assert!(started.elapsed() < std::time::Duration::from_secs(20), "rendering hung");
    }

    #[test]
    fn net_handshake_lines_never_panic(line in prop_oneof![
        bytes_text(),
        "\\{\"(version|mode|streams|time_ms|msg_size|nonce|reverse|udp|bidir|token|bitrate|rate)\":(\"[a-z0-9]{0,40}\"|[0-9]{1,20}|true|null)(,\"[a-z_]{1,10}\":[0-9]{1,12}){0,4}\\}",
    ]) {
        if let Ok(h) = serde_json::from_str::<stormark_net::Hello>(&line) {
            let _ = h.check();
        }
        let _ = serde_json::from_str::<stormark_net::ServerLine>(&line);
    }

    #[test]
    fn agent_messages_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        if let Ok(req) = pb::ValidateRequest::decode(bytes.as_slice()) {
            for kv in &req.jobs {
                let mut opts = JobOpts::default();
                for o in &kv.options {
                    let _ = opts.set(&o.key, &o.value, Source::Key("fuzz"));
                }
                let _ = opts.resolve("fuzz");
            }
        }
        if let Ok(s) = pb::Snapshot::decode(bytes.as_slice()) {
            let _ = decode_snapshot(&s);
        }
        if let Ok(e) = pb::Event::decode(bytes.as_slice()) {
            if let Some(pb::event::Kind::Interval(i)) = e.kind {
                if let Some(s) = &i.snapshot {
                    let _ = decode_snapshot(s);
                }
            }
        }
        let _ = stormark_stats::decode_histogram(&String::from_utf8_lossy(&bytes));
    }
}

/// Issue 30: the net server's handshake fuzzed through a real socket: arbitrary bytes and
/// near-valid lines (a hello, a stream's join line), each on a connection of its own, cut
/// off at any point. The server stays up and serves a real session afterwards. (A few
/// hundred connections per run: each costs a connection, so `bench/fuzz.sh`'s millions go
/// to the line parser above.)
#[test]
fn the_net_server_survives_any_handshake_through_a_socket() {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let opts = stormark_net::ServerOptions {
        once: false,
        stop: stop.clone(),
        token: None,
        allow: Vec::new(),
    };
    let server = std::thread::spawn(move || stormark_net::serve(listener, &opts, &|_| {}));
    let line = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..600),
        "\\{\"(version|mode|streams|time_ms|msg_size|nonce|reverse|udp|bidir|token)\":(\"[a-z0-9]{0,40}\"|[0-9]{1,20}|true|null)(,\"[a-z_]{1,10}\":[0-9]{1,12}){0,4}\\}\n?"
            .prop_map(String::into_bytes),
        "DATA [0-9a-f]{0,40} [0-9]{0,12}\n?".prop_map(String::into_bytes),
    ];
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 200,
        ..config()
    });
    runner
        .run(&line, |bytes| {
            let mut s = std::net::TcpStream::connect(addr).expect("the server accepts");
            let _ = s.write_all(&bytes);
            let _ = s.set_read_timeout(Some(Duration::from_millis(50)));
            let _ = s.read(&mut [0u8; 4096]);
            Ok(())
        })
        .unwrap();
    // Still serving: a real session (once any hello the fuzz made valid has timed out).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let client = stormark_net::ClientOptions {
            server: addr,
            mode: stormark_net::Mode::Throughput,
            streams: 2,
            time: Duration::from_millis(500),
            reverse: false,
            msg_size: 64 << 10,
            stop: Arc::new(AtomicBool::new(false)),
            udp: false,
            bitrate: 0,
            bidir: false,
            token: None,
            rate: None,
            bind: None,
        };
        match stormark_net::Session::open(&client) {
            Ok(mut session) => {
                for s in &mut session.streams {
                    s.write_all(&[7u8; 64 << 10]).unwrap();
                }
                let end = session.finish();
                let Some(stormark_net::ServerLine::End { bytes, .. }) = end else {
                    panic!("no end report: {end:?}");
                };
                assert_eq!(bytes, [64 << 10, 64 << 10]);
                break;
            }
            Err(e) => assert!(Instant::now() < deadline, "no session after the fuzz: {e}"),
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    stop.store(true, Ordering::Relaxed);
    server.join().unwrap().unwrap();
}
