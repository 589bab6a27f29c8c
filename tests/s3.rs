//! Issue 18: `stormark s3` against a real MinIO started by the test (never a mock): a mixed
//! workload measured and cleaned up, preflight refusals, the server killed or paused mid-run,
//! and Ctrl-C. `.ci/run` builds MinIO, so none of these skip. One service made here
//! misbehaves on purpose (an endless listing), which MinIO cannot be made to do.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

use stormark_testkit::{read_json, temp_dir, text, Bin, Minio, TempDir};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

/// `stormark s3` against `m`'s bucket `bucket` with its keys, the results in `dir/r.json`.
pub(crate) fn s3_args(m: &Minio, bucket: &str, dir: &TempDir, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = [
        "s3",
        "--endpoint",
        &m.endpoint,
        "--bucket",
        bucket,
        "--access-key",
        &m.access_key,
        "--secret-key",
        &m.secret_key,
        "--json",
        dir.path().join("r.json").to_str().unwrap(),
        "-q",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn s3(m: &Minio, bucket: &str, dir: &TempDir, extra: &[&str]) -> (i32, serde_json::Value, String) {
    let args = s3_args(m, bucket, dir, extra);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = Bin(BIN).run(&args);
    let json = dir.path().join("r.json");
    let doc = if json.exists() {
        read_json(&json)
    } else {
        serde_json::Value::Null
    };
    (out.status.code().unwrap_or(-1), doc, text(&out))
}

/// Waits until the run in `dir` has finished its preparation (the results document is first
/// written, `running`, just before the measured phase starts).
/// A run that ends or stalls first fails the test with what it printed.
pub(crate) fn measuring(child: &mut std::process::Child, dir: &TempDir) {
    let json = dir.path().join("r.json");
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !std::fs::read_to_string(&json).is_ok_and(|t| t.contains("\"running\"")) {
        let ended = child.try_wait().expect("waiting for stormark");
        if ended.is_some() || std::time::Instant::now() > deadline {
            if ended.is_none() {
                let _ = child.kill();
            }
            let mut printed = String::new();
            if let Some(mut pipe) = child.stdout.take() {
                let _ = pipe.read_to_string(&mut printed);
            }
            if let Some(mut pipe) = child.stderr.take() {
                let _ = pipe.read_to_string(&mut printed);
            }
            panic!("the run never got past its preparation ({ended:?}):\n{printed}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Starts `stormark` with `args` in the background, its output captured.
pub(crate) fn spawn(args: &[String]) -> std::process::Child {
    Command::new(BIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting stormark")
}

pub(crate) fn measured(doc: &serde_json::Value) -> &serde_json::Value {
    doc["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == "run")
        .unwrap_or_else(|| panic!("no measured phase in {doc}"))
}

#[test]
fn a_mixed_workload_is_measured_by_operation_and_cleaned_up() {
    let m = Minio::start(TMP);
    let dir = temp_dir(TMP);
    let (code, doc, out) = s3(
        &m,
        "mixed",
        &dir,
        &[
            "--create-bucket",
            "--op-mix",
            "put=30,get=50,head=5,delete=10,list=5",
            "--obj-size",
            "4k",
            "--objects",
            "40",
            "--concurrency",
            "4",
            "--time",
            "2s",
        ],
    );
    assert_eq!(code, 0, "{out}");
    // The client's own CPU is sampled each second beside the host's.
    let own: Vec<f64> = doc["hosts"][0]["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["cpu"]["own_pct"].as_f64())
        .collect();
    assert!(!own.is_empty() && own.iter().any(|&p| p > 0.0), "{own:?}");
    let run = measured(&doc);
    for op in ["get", "put", "head", "delete", "list"] {
        let s = &run["by_op"][op];
        assert!(s["ops"].as_u64().unwrap_or(0) > 0, "{op}: {run}");
        assert_eq!(s["errors"].as_u64().unwrap_or(0), 0, "{op}: {run}");
    }
    // Whole 4 KiB objects: bytes of GETs and PUTs are whole multiples of the object size.
    for op in ["get", "put"] {
        let s = &run["by_op"][op];
        assert_eq!(s["bytes"].as_u64().unwrap() % 4096, 0, "{op}");
    }
    // GETs carry their time to first byte beside the time to the last.
    let get = &run["by_op"]["get"];
    let first = get["first_byte_latency_ns"]["p50"]
        .as_f64()
        .expect("first byte of GETs");
    let last = get["latency_ns"]["p50"].as_f64().unwrap();
    assert!(
        first > 0.0 && first <= last,
        "first byte {first} <= last byte {last}"
    );
    assert!(run["by_op"]["put"]["first_byte_latency_ns"].is_null());
    assert_eq!(doc["spec"]["jobs"][0]["kind"], "s3");
    assert!(
        !doc.to_string().contains(&m.secret_key),
        "the secret never reaches results"
    );
    // Every object this run wrote (the 40 read objects and every PUT) is gone.
    assert_eq!(m.objects("mixed", "stormark/"), Vec::<String>::new());
}

#[test]
fn keep_leaves_the_objects_and_nothing_else_is_touched() {
    let m = Minio::start(TMP);
    let dir = temp_dir(TMP);
    // Someone else's object under the same prefix must survive a run's cleanup.
    let (code, _, out) = s3(
        &m,
        "kept",
        &dir,
        &[
            "--create-bucket",
            "--op-mix",
            "put",
            "--obj-size",
            "1k",
            "--ops",
            "20",
            "--keep",
            "--prefix",
            "other",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let theirs = m.objects("kept", "other/");
    assert_eq!(theirs.len(), 20, "{theirs:?}");
    let (code, doc, out) = s3(
        &m,
        "kept",
        &dir,
        &[
            "--op-mix",
            "put=1,delete=1",
            "--obj-size",
            "1k",
            "--ops",
            "50",
            "--prefix",
            "other",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let run = measured(&doc);
    assert_eq!(
        run["total"]["ops"].as_u64(),
        Some(50),
        "--ops 50 stops at 50: {run}"
    );
    assert_eq!(
        m.objects("kept", "other/"),
        theirs,
        "only the run's own keys are removed"
    );
    // Issue 30: the kept run's objects are removed by its id, as its notes name it; a
    // second kept run under the same prefix is not touched.
    let (code, doc, out) = s3(
        &m,
        "kept",
        &dir,
        &[
            "--op-mix",
            "put",
            "--obj-size",
            "1k",
            "--ops",
            "5",
            "--keep",
            "--prefix",
            "other",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let notes = doc["notes"].to_string();
    // The run id: what follows `marker` up to the host's `-h`.
    let id = |text: &str, marker: &str| {
        let at = text.find(marker).expect("the run's prefix") + marker.len();
        text[at..at + text[at..].find("-h").unwrap()].to_string()
    };
    let second = id(&notes, "s3://kept/other/");
    let first = id(&theirs[0], "other/");
    assert_ne!(first, second);
    let remove = |run: &str| {
        Bin(BIN).run(&[
            "s3",
            "--endpoint",
            &m.endpoint,
            "--bucket",
            "kept",
            "--prefix",
            "other",
            "--access-key",
            &m.access_key,
            "--secret-key",
            &m.secret_key,
            "--remove-run",
            run,
        ])
    };
    let out = remove(&first);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains(&format!(
            "removed 20 objects under s3://kept/other/{first}-h*/"
        )),
        "{}",
        text(&out)
    );
    let left = m.objects("kept", "other/");
    assert_eq!(left.len(), 5, "only the second run's are left: {left:?}");
    assert!(left.iter().all(|k| k.contains(&second)), "{left:?}");
    // Anything but a run id is refused before a request is made.
    for bad in ["", "other", "../x", "20261126-001739-1-h0", "2026*"] {
        let out = remove(bad);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", text(&out));
        assert!(text(&out).contains("--remove-run"), "{}", text(&out));
    }
    assert_eq!(m.objects("kept", "other/").len(), 5);
}

/// Issue 53: `--remove-run ID` removes the keys of the run's hosts, `ID-h<N>/...` (N digits),
/// and none of the keys that only begin the same: `ID-h1x/`, `ID-hx/`, `ID-h/`,
/// `ID-hosts.csv`, or an object named `ID-h3` itself.
#[test]
fn remove_run_removes_its_hosts_prefixes_and_nothing_that_only_begins_the_same() {
    let m = Minio::start(TMP);
    m.make_bucket("neighbours");
    let id = "20261129-070000-4242";
    let ours = [
        format!("stormark/{id}-h0/job/w0/r0"),
        format!("stormark/{id}-h12/job/w1/r3"),
    ];
    let mut theirs = vec![
        format!("stormark/{id}-h1x/a"),
        format!("stormark/{id}-hx/b"),
        format!("stormark/{id}-h/c"),
        format!("stormark/{id}-hosts.csv"),
        format!("stormark/{id}-h3"),
    ];
    for key in ours.iter().chain(&theirs) {
        m.put("neighbours", key, b"x");
    }
    let out = Bin(BIN).run(&[
        "s3",
        "--endpoint",
        &m.endpoint,
        "--bucket",
        "neighbours",
        "--access-key",
        &m.access_key,
        "--secret-key",
        &m.secret_key,
        "--remove-run",
        id,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("removed 2 objects"), "{}", text(&out));
    theirs.sort();
    assert_eq!(m.objects("neighbours", "stormark/"), theirs);
}

#[test]
fn preflight_mistakes_are_one_line_and_exit_2() {
    let m = Minio::start(TMP);
    let dir = temp_dir(TMP);
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let cases: Vec<(Vec<String>, &str)> = vec![
        (s3_args(&m, "nope", &dir, &[]), "no such bucket"),
        (
            {
                let mut a = s3_args(&m, "bkt", &dir, &["--create-bucket"]);
                let i = a.iter().position(|x| x == "--secret-key").unwrap();
                a[i + 1] = "wrong-secret-key".into();
                a
            },
            "refused these keys",
        ),
        (
            {
                let mut a = s3_args(&m, "bkt", &dir, &[]);
                a[2] = closed.clone();
                a
            },
            "connection refused",
        ),
        (
            s3_args(&m, "bkt", &dir, &["--op-mix", "post"]),
            "--op-mix post",
        ),
        (
            s3_args(&m, "bkt", &dir, &["--obj-size", "0"]),
            "--obj-size 0",
        ),
        (s3_args(&m, "B_d", &dir, &[]), "--bucket B_d"),
        (
            {
                let mut a = s3_args(&m, "bkt", &dir, &[]);
                a[2] = "ftp://127.0.0.1:21".into();
                a
            },
            "--endpoint ftp://127.0.0.1:21",
        ),
        (s3_args(&m, "bkt", &dir, &["--buckets", "0"]), "--buckets 0"),
        (
            s3_args(&m, "bkt", &dir, &["--addressing", "dns"]),
            "--addressing dns",
        ),
        (
            s3_args(&m, "bkt", &dir, &["--sweep", "obj-size=0"]),
            "--sweep obj-size=0",
        ),
    ];
    for (args, expect) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
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
fn a_server_killed_mid_run_is_counted_by_kind_and_the_results_written() {
    let m = Minio::start(TMP);
    let dir = temp_dir(TMP);
    let args = s3_args(
        &m,
        "killed",
        &dir,
        &[
            "--create-bucket",
            "--op-mix",
            "get",
            "--obj-size",
            "1k",
            "--objects",
            "10",
            "--time",
            "4s",
        ],
    );
    let mut child = spawn(&args);
    measuring(&mut child, &dir);
    std::thread::sleep(Duration::from_millis(1000));
    m.signal("KILL");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let doc = read_json(&dir.path().join("r.json"));
    let errors = doc.to_string();
    assert!(
        errors.contains("refused") || errors.contains("reset"),
        "failures by kind: {errors}"
    );
}

#[test]
fn a_paused_server_shows_in_response_time_not_service_time() {
    let m = Minio::start(TMP);
    let dir = temp_dir(TMP);
    let args = s3_args(
        &m,
        "paused",
        &dir,
        &[
            "--create-bucket",
            "--op-mix",
            "get",
            "--obj-size",
            "1k",
            "--objects",
            "10",
            "--rate-ops",
            "200",
            "--time",
            "7s",
        ],
    );
    let mut child = spawn(&args);
    measuring(&mut child, &dir);
    std::thread::sleep(Duration::from_millis(1000));
    m.signal("STOP");
    std::thread::sleep(Duration::from_secs(3));
    m.signal("CONT");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc = read_json(&dir.path().join("r.json"));
    let get = &measured(&doc)["by_op"]["get"];
    let p99 = get["latency_ns"]["p99"].as_f64().unwrap();
    let service_p90 = get["service_latency_ns"]["p90"].as_f64().unwrap();
    assert!(
        p99 > 1e9,
        "response p99 {p99} ns shows the 3 s pause: {get}"
    );
    assert!(
        service_p90 < 1e9,
        "service p90 {service_p90} ns does not: {get}"
    );
}

/// Issue 30: a service that stops answering mid-run no longer stretches the phase to the
/// request timeout (it lasted 34 s of a 10 s run): a request still waiting past the stage's
/// end and its grace (2 s, or twice the longest answer seen) counts as a timeout of its age.
#[test]
fn a_stalled_server_ends_the_phase_at_its_time_and_counts_what_was_in_flight() {
    let m = Minio::start(TMP);
    let dir = temp_dir(TMP);
    let args = s3_args(
        &m,
        "stalled",
        &dir,
        &[
            "--create-bucket",
            "--op-mix",
            "get",
            "--obj-size",
            "1k",
            "--objects",
            "10",
            "--concurrency",
            "2",
            "--time",
            "4s",
        ],
    );
    let mut child = spawn(&args);
    measuring(&mut child, &dir);
    std::thread::sleep(Duration::from_millis(1000));
    m.signal("STOP");
    // Resumed well after the phase's end and grace (4 s + 2 s), so that cleanup can run.
    std::thread::sleep(Duration::from_secs(8));
    m.signal("CONT");
    let out = child.wait_with_output().unwrap();
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "timeouts are errors: {said}");
    let doc = read_json(&dir.path().join("r.json"));
    let run = measured(&doc);
    let secs = run["duration_ns"].as_f64().unwrap() / 1e9;
    assert!(
        (4.0..7.5).contains(&secs),
        "the phase lasted {secs:.1} s: its 4 s and the 2 s grace, not the 30 s request timeout"
    );
    // Each worker's one request outstanding when the service stopped: a timeout each, whose
    // latency is at least its age (about 5 s).
    let timeouts: u64 = run["errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "timeout")
        .map(|e| e["count"].as_u64().unwrap())
        .sum();
    assert_eq!(timeouts, 2, "{}", run["errors"]);
    let max = run["by_op"]["get"]["latency_ns"]["max"].as_f64().unwrap();
    assert!(max > 4e9, "the stalled requests' age counts: max {max} ns");
    assert!(
        m.objects("stalled", "stormark/").is_empty(),
        "objects left behind"
    );
}

/// Issue 30: after Ctrl-C, a stalled service held the run for a 30 s request and a 30 s
/// listing in silence. Now the first Ctrl-C abandons the requests in flight and says what
/// the cleanup waits for; a second leaves the objects, and the results say where.
#[test]
fn a_second_ctrl_c_leaves_a_stalled_servers_objects_and_says_where() {
    let m = Minio::start(TMP);
    let dir = temp_dir(TMP);
    let args = s3_args(
        &m,
        "abandoned",
        &dir,
        &[
            "--create-bucket",
            "--op-mix",
            "put",
            "--obj-size",
            "1k",
            "--concurrency",
            "2",
            "--time",
            "60s",
        ],
    );
    let mut child = spawn(&args);
    measuring(&mut child, &dir);
    std::thread::sleep(Duration::from_millis(1000));
    m.signal("STOP");
    std::thread::sleep(Duration::from_millis(500));
    let interrupt = || {
        let _ = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status();
    };
    interrupt();
    // The cleanup's listing now waits on the stopped service.
    std::thread::sleep(Duration::from_secs(2));
    interrupt();
    // Well inside one request timeout (30 s): the second Ctrl-C did not wait for it.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            m.signal("CONT");
            panic!("still running 20 s after the second Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    m.signal("CONT");
    let out = child.wait_with_output().unwrap();
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("Ctrl-C again to leave them in place"),
        "{said}"
    );
    let doc = read_json(&dir.path().join("r.json"));
    assert_eq!(doc["status"], "interrupted", "{}", doc["status"]);
    // Issue 53: the PUTs abandoned by the first Ctrl-C are counted as interrupted (not as
    // the service's failure), and their wait (the 0.5 s of stall before it) is in the
    // latency; they had vanished from the document.
    let run = measured(&doc);
    let interrupted: u64 = run["errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "interrupted" && e["op"] == "put")
        .map(|e| e["count"].as_u64().unwrap())
        .sum();
    assert_eq!(interrupted, 2, "{}", run["errors"]);
    let max = run["by_op"]["put"]["latency_ns"]["max"].as_f64().unwrap();
    assert!(max > 0.4e9, "the abandoned PUTs' wait counts: max {max} ns");
    let notes = doc["notes"].to_string();
    assert!(
        notes.contains("left the run's objects under s3://abandoned/stormark/")
            && notes.contains("stormark s3 --remove-run "),
        "{notes}"
    );
    // They are where the note says, and go with the command it gives, once the service has
    // stored what was in flight when it was stopped (the requests stormark abandoned still
    // land when it resumes: under load that came after the removal's listing, and two
    // objects stayed).
    let mut seen = m.objects("abandoned", "stormark/");
    for _ in 0..30 {
        std::thread::sleep(Duration::from_secs(1));
        let now = m.objects("abandoned", "stormark/");
        if now == seen {
            break;
        }
        seen = now;
    }
    assert!(!seen.is_empty());
    let at = notes.find("--remove-run ").unwrap() + 13;
    let run = &notes[at..at + notes[at..].find('`').unwrap()];
    let out = Bin(BIN).run(&[
        "s3",
        "--endpoint",
        &m.endpoint,
        "--bucket",
        "abandoned",
        "--access-key",
        &m.access_key,
        "--secret-key",
        &m.secret_key,
        "--remove-run",
        run,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(m.objects("abandoned", "stormark/"), Vec::<String>::new());
}

#[test]
fn ctrl_c_still_deletes_every_object_written() {
    let m = Minio::start(TMP);
    let dir = temp_dir(TMP);
    let args = s3_args(
        &m,
        "interrupted",
        &dir,
        &[
            "--create-bucket",
            "--op-mix",
            "put",
            "--obj-size",
            "1k",
            "--concurrency",
            "2",
            "--time",
            "30s",
        ],
    );
    let mut child = spawn(&args);
    measuring(&mut child, &dir);
    std::thread::sleep(Duration::from_millis(1000));
    assert!(
        !m.objects("interrupted", "stormark/").is_empty(),
        "the run was writing"
    );
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(m.objects("interrupted", "stormark/"), Vec::<String>::new());
    let doc = read_json(&dir.path().join("r.json"));
    assert_eq!(doc["status"], "interrupted", "{}", doc["status"]);
}

#[test]
fn two_agents_run_their_share_against_one_server_merged_exactly() {
    if !stormark_testkit::require_netns("two_agents_run_their_share_against_one_server") {
        return;
    }
    let mut net = stormark_testkit::NetCluster::new(2).expect("creating the namespaces");
    // MinIO listens on the bridge, where both agents (in their namespaces) reach it.
    let m = Minio::start_on(TMP, &net.gateway.clone());
    let dir = temp_dir(TMP);
    let token = dir.path().join("token");
    std::fs::write(&token, "s3-cluster-test-token-0123456789\n").unwrap();
    let mut agents = Vec::new();
    for i in 0..2 {
        let listen = format!("{}:7878", net.addresses[i]);
        let allowed = dir.path().join(format!("host{i}"));
        std::fs::create_dir(&allowed).unwrap();
        let log = dir.path().join(format!("agent{i}.log"));
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
                allowed.to_str().unwrap(),
                "--state-dir",
                dir.path().join(format!("state{i}")).to_str().unwrap(),
            ],
            &log,
        )
        .expect("starting an agent");
        stormark_testkit::wait_listening(&listen, &format!("agent {i}"));
        agents.push(listen);
    }
    let list = agents.join(",");
    let (code, doc, out) = s3(
        &m,
        "shared",
        &dir,
        &[
            "--create-bucket",
            "--op-mix",
            "get=3,put=1",
            "--obj-size",
            "2k",
            "--objects",
            "20",
            "--concurrency",
            "2",
            "--time",
            "2s",
            "--agents",
            &list,
            "--token-file",
            token.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{out}");
    let run = measured(&doc);
    let hosts = run["by_host"].as_object().unwrap();
    assert_eq!(hosts.len(), 2, "{run}");
    for op in ["get", "put"] {
        let total = run["by_op"][op]["ops"].as_u64().unwrap();
        let sum: u64 = hosts
            .values()
            .map(|h| h["by_op"][op]["ops"].as_u64().unwrap_or(0))
            .sum();
        assert!(total > 0, "{op}");
        assert_eq!(total, sum, "{op}: the total is the exact sum of the hosts");
    }
    // Each agent wrote under its own prefix, and removed all of it.
    assert_eq!(m.objects("shared", "stormark/"), Vec::<String>::new());
    assert!(!doc.to_string().contains(&m.secret_key));

    // Per-host endpoints replace the job's: with a job endpoint where nothing listens, the
    // run works when every host has its own, and is refused, naming it, when one has not.
    let per_host = |hosts: &[usize]| {
        let mut args = s3_args(&m, "shared", &dir, &[]);
        args[2] = "http://127.0.0.1:1".into();
        let mut extra: Vec<String> = [
            "--op-mix",
            "get",
            "--obj-size",
            "1k",
            "--objects",
            "4",
            "--ops",
            "20",
            "--agents",
            &list,
            "--token-file",
            token.to_str().unwrap(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for &h in hosts {
            extra.push("--host-endpoint".into());
            extra.push(format!("{}={}", net.addresses[h], m.endpoint));
        }
        args.extend(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Bin(BIN).run(&args)
    };
    let out = per_host(&[0, 1]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = per_host(&[0]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("--endpoint http://127.0.0.1:1"),
        "{}",
        text(&out)
    );
}

#[test]
fn sizes_from_a_range_and_ranged_gets() {
    let m = Minio::start(TMP);
    let dir = temp_dir(TMP);
    let (code, doc, out) = s3(
        &m,
        "sizes",
        &dir,
        &[
            "--create-bucket",
            "--op-mix",
            "put",
            "--obj-size",
            "1k-64k",
            "--size-dist",
            "log-uniform",
            "--ops",
            "200",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let put = &measured(&doc)["by_op"]["put"];
    let mean = put["bytes"].as_f64().unwrap() / put["ops"].as_f64().unwrap();
    // Log-uniform over 1k-64k: the mean size is (64k - 1k) / ln 64, about 15 KiB.
    assert!(
        (8_000.0..24_000.0).contains(&mean),
        "mean object {mean} bytes"
    );
    let (code, doc, out) = s3(
        &m,
        "sizes",
        &dir,
        &[
            "--op-mix",
            "get",
            "--obj-size",
            "64k",
            "--objects",
            "20",
            "--get-range",
            "4k",
            "--ops",
            "100",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let get = &measured(&doc)["by_op"]["get"];
    assert_eq!(get["ops"].as_u64(), Some(100), "{get}");
    assert_eq!(
        get["bytes"].as_u64(),
        Some(100 * 4096),
        "ranged GETs read 4 KiB each"
    );
    assert_eq!(m.objects("sizes", "stormark/"), Vec::<String>::new());
}

#[test]
fn https_endpoints_check_the_certificate_unless_insecure() {
    let (m, cert) = Minio::start_tls(TMP);
    let dir = temp_dir(TMP);
    assert!(m.endpoint.starts_with("https://"));
    let run = |extra: &[&str], env: Option<&std::path::Path>| {
        let args = s3_args(&m, "tls", &dir, extra);
        let mut cmd = Command::new(BIN);
        cmd.args(&args);
        if let Some(ca) = env {
            cmd.env("SSL_CERT_FILE", ca);
        }
        cmd.output().unwrap()
    };
    let base = [
        "--create-bucket",
        "--op-mix",
        "put=1,get=1",
        "--obj-size",
        "1k",
        "--objects",
        "5",
        "--ops",
        "40",
    ];
    // A self-signed certificate is refused before any load, naming the ways out.
    let out = run(&base, None);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--insecure"), "{}", text(&out));
    // Trusted through SSL_CERT_FILE, or accepted with --insecure.
    let out = run(&base, Some(&cert));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let mut insecure = base.to_vec();
    insecure.push("--insecure");
    let out = run(&insecure, None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc = read_json(&dir.path().join("r.json"));
    assert_eq!(measured(&doc)["total"]["ops"].as_u64(), Some(40));
    assert_eq!(m.objects("tls", "stormark/"), Vec::<String>::new());
}

#[test]
fn a_job_file_runs_a_put_job_and_a_get_job_side_by_side() {
    let m = Minio::start(TMP);
    let dir = temp_dir(TMP);
    let job = dir.path().join("s3.toml");
    std::fs::write(
        &job,
        format!(
            "endpoint = \"{}\"\nbucket = \"jobs\"\nobj_size = \"2k\"\ntime = \"2s\"\n\n\
             [[job]]\nname = \"writers\"\ngroup = \"mixed\"\nop_mix = \"put\"\njobs = 2\n\n\
             [[job]]\nname = \"readers\"\ngroup = \"mixed\"\nop_mix = \"get\"\nobjects = 20\njobs = 2\n",
            m.endpoint
        ),
    )
    .unwrap();
    let (code, doc, out) = s3(
        &m,
        "jobs",
        &dir,
        &["--create-bucket", "--job", job.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{out}");
    let run = measured(&doc);
    let ops = |job: &str, op: &str| run["by_job"][job]["by_op"][op]["ops"].as_u64().unwrap_or(0);
    assert!(
        ops("writers", "put") > 0 && ops("readers", "get") > 0,
        "{run}"
    );
    assert_eq!((ops("writers", "get"), ops("readers", "put")), (0, 0));
    assert_eq!(m.objects("jobs", "stormark/"), Vec::<String>::new());
}

#[test]
fn large_objects_go_up_in_parts() {
    let m = Minio::start(TMP);
    let dir = temp_dir(TMP);
    let (code, doc, out) = s3(
        &m,
        "parts",
        &dir,
        &[
            "--create-bucket",
            "--op-mix",
            "put=1,get=1",
            "--obj-size",
            "12m",
            "--objects",
            "2",
            "--multipart-threshold",
            "8m",
            "--part-size",
            "5m",
            "--ops",
            "6",
            "--keep",
        ],
    );
    assert_eq!(code, 0, "{out}");
    // MinIO keeps an object uploaded in three parts as part.1 to part.3 beside its xl.meta.
    let mut three_parts = 0;
    let mut stack = vec![m.data.path().join("parts")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else if e.file_name() == "part.3" {
                three_parts += 1;
            }
        }
    }
    assert!(
        three_parts >= 2,
        "objects stored in three parts: {three_parts}"
    );
    let run = measured(&doc);
    let (put, get) = (&run["by_op"]["put"], &run["by_op"]["get"]);
    let ops = put["ops"].as_u64().unwrap() + get["ops"].as_u64().unwrap();
    assert_eq!(ops, 6, "{run}");
    // Every object is whole: 12 MiB per PUT (three parts) and per GET.
    assert_eq!(
        put["bytes"].as_u64().unwrap(),
        put["ops"].as_u64().unwrap() * (12 << 20)
    );
    assert_eq!(
        get["bytes"].as_u64().unwrap(),
        get["ops"].as_u64().unwrap() * (12 << 20)
    );
}

#[test]
fn verify_counts_an_object_changed_behind_the_run_as_corrupt() {
    let m = Minio::start(TMP);
    let dir = temp_dir(TMP);
    // Unchanged objects verify clean.
    let (code, doc, out) = s3(
        &m,
        "verify",
        &dir,
        &[
            "--create-bucket",
            "--op-mix",
            "get",
            "--obj-size",
            "4k",
            "--objects",
            "4",
            "--verify",
            "--get-range",
            "1k",
            "--ops",
            "40",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(measured(&doc)["by_op"]["get"]["ops"].as_u64(), Some(40));
    // Issue 56: a clean verify says what it checked, every GET's 1 KiB range.
    assert_eq!(
        measured(&doc)["verify"],
        serde_json::json!({"blocks": 0, "objects": 40, "bytes": 40 << 10, "bad": 0}),
        "{out}"
    );
    // Mid-run, another client overwrites one of the objects the run reads (same size,
    // other bytes): the GETs of it are counted as corrupt, the others pass.
    let args = s3_args(
        &m,
        "verify",
        &dir,
        &[
            "--op-mix",
            "get",
            "--obj-size",
            "4k",
            "--objects",
            "4",
            "--verify",
            "--time",
            "4s",
        ],
    );
    let mut child = spawn(&args);
    measuring(&mut child, &dir);
    let key = m
        .objects("verify", "stormark/")
        .into_iter()
        .find(|k| k.ends_with("/r0"))
        .expect("the run's object r0");
    let garbage = dir.path().join("garbage");
    std::fs::write(&garbage, vec![0x5a; 4096]).unwrap();
    let put = Command::new("curl")
        .args(["-sf", "--aws-sigv4", "aws:amz:us-east-1:s3", "--user"])
        .arg(format!("{}:{}", m.access_key, m.secret_key))
        .arg("-T")
        .arg(&garbage)
        .arg(format!("{}/verify/{key}", m.endpoint))
        .status()
        .unwrap();
    assert!(put.success(), "curl could not overwrite {key}");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let doc = read_json(&dir.path().join("r.json"));
    let run = measured(&doc);
    let corrupt: u64 = run["errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "corrupt" && e["op"] == "get")
        .map(|e| e["count"].as_u64().unwrap())
        .sum();
    assert!(corrupt > 0, "{}", run["errors"]);
    assert!(
        run["by_op"]["get"]["ops"].as_u64().unwrap() > 0,
        "the other objects pass"
    );
}

#[test]
fn a_latency_target_search_climbs_connections() {
    let m = Minio::start(TMP);
    let dir = temp_dir(TMP);
    let (code, doc, out) = s3(
        &m,
        "search",
        &dir,
        &[
            "--create-bucket",
            "--op-mix",
            "get",
            "--obj-size",
            "4k",
            "--objects",
            "20",
            "--concurrency",
            "4",
            "--target-latency",
            "p99<=10s",
            "--step-time",
            "1s",
        ],
    );
    assert_eq!(code, 0, "{out}");
    // A target every step meets: the ladder climbs to the most connections allowed.
    let search = &doc["search"];
    assert!(search["best"].is_string(), "{search}");
    let steps = search["steps"].as_array().unwrap();
    assert_eq!(
        steps.last().unwrap()["load"]["jobs"].as_u64(),
        Some(4),
        "{search}"
    );
    assert!(
        out.contains("connections") && out.contains("ops/s"),
        "{out}"
    );
    assert_eq!(m.objects("search", "stormark/"), Vec::<String>::new());
}

/// The embedded server is built only with `--features embedded-s3` (./test.sh builds every
/// feature).
#[cfg(feature = "embedded-s3")]
#[test]
fn embedded_server_needs_nothing_installed_and_leaves_nothing_behind() {
    let dir = temp_dir(TMP);
    let tmpdir = dir.path().join("tmp");
    std::fs::create_dir(&tmpdir).unwrap();
    let json = dir.path().join("r.json");
    let out = Command::new(BIN)
        .args([
            "s3",
            "--embedded",
            "--op-mix",
            "put=30,get=50,delete=10,list=10",
            "--obj-size",
            "8k",
            "--concurrency",
            "4",
            "--time",
            "3s",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ])
        .env("TMPDIR", &tmpdir)
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .output()
        .unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    let doc = read_json(&json);
    assert_eq!(doc["status"], "ok", "{doc}");
    let run = measured(&doc);
    for op in ["put", "get", "delete", "list"] {
        let n = run["by_op"][op]["ops"].as_u64().unwrap_or(0);
        assert!(n > 0, "no {op} in {run}");
    }
    let notes = doc["notes"].to_string();
    assert!(notes.contains("embedded S3 server"), "{notes}");
    // The server's directory, with every object in it, is gone.
    assert_eq!(stormark_testkit::entries(&tmpdir), Vec::<String>::new());

    // Its endpoint and keys are its own: giving others is a mistake, said before anything runs.
    for (extra, expect) in [
        (
            &["--endpoint", "http://127.0.0.1:9000"][..],
            "--embedded serves its own endpoint",
        ),
        (
            &["--access-key", "k", "--secret-key", "s"][..],
            "--embedded makes its own keys",
        ),
        (
            &["--embedded-listen", "0.0.0.0:0"][..],
            "--embedded-listen 0.0.0.0:0",
        ),
    ] {
        let mut args = vec!["s3", "--embedded", "--time", "1s", "-q"];
        args.extend_from_slice(extra);
        let out = Bin(BIN).run(&args);
        let t = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {t}");
        assert!(t.contains(expect), "{expect}: {t}");
    }
}

#[test]
fn a_full_server_disk_is_counted_named_and_the_objects_still_deleted() {
    if !stormark_testkit::require_root(
        "a_full_server_disk_is_counted_named_and_the_objects_still_deleted",
    ) {
        return;
    }
    // 48 MiB of tmpfs under MinIO: 1 MiB PUTs fill it within the run.
    let m = Minio::start_small(TMP, 48);
    let dir = temp_dir(TMP);
    let (code, doc, out) = s3(
        &m,
        "full",
        &dir,
        &[
            "--create-bucket",
            "--op-mix",
            "put",
            "--obj-size",
            "1m",
            "--concurrency",
            "2",
            "--time",
            "10s",
        ],
    );
    assert_eq!(code, 1, "{out}");
    assert_eq!(doc["status"], "failed", "{doc}");
    let run = measured(&doc);
    let server_errors: u64 = run["errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"].as_str().is_some_and(|k| k.starts_with("http-5")))
        .map(|e| e["count"].as_u64().unwrap())
        .sum();
    assert!(server_errors > 0, "{run}");
    // Errors name their job even when every worker stopped on them.
    assert!(
        run["errors"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["job"] == "s3-put-1m"),
        "{run}"
    );
    let codes: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["code"].as_str())
        .collect();
    assert!(
        codes.contains(&"s3-server-full") || codes.contains(&"s3-server-errors"),
        "{codes:?}"
    );
    // What did go up is deleted, even from a full server.
    assert_eq!(m.objects("full", ""), Vec::<String>::new());
}

#[test]
fn a_sweep_over_object_sizes_reads_objects_of_each_size() {
    let m = Minio::start(TMP);
    let dir = temp_dir(TMP);
    let (code, doc, out) = s3(
        &m,
        "sweep",
        &dir,
        &[
            "--create-bucket",
            "--op-mix",
            "get=80,put=20",
            "--verify",
            "--objects",
            "20",
            "--sweep",
            "obj-size=4k,96k",
            "--sweep",
            "concurrency=1,2",
            "--time",
            "1s",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let points = doc["sweep"]["points"].as_array().unwrap();
    assert_eq!(points.len(), 4, "{doc}");
    let swept: Vec<&serde_json::Value> = doc["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "sweep-point")
        .collect();
    assert_eq!(swept.len(), 4, "{doc}");
    for p in swept {
        let size = if p["name"].as_str().unwrap().contains("obj-size=4k") {
            4096
        } else {
            96 * 1024
        };
        for op in ["get", "put"] {
            let s = &p["by_op"][op];
            // Every GET read a whole object of the phase's size (checked byte for byte), and
            // every PUT wrote one.
            assert_eq!(
                s["bytes"].as_u64().unwrap(),
                s["ops"].as_u64().unwrap() * size,
                "{op} {p}"
            );
            assert_eq!(s["errors"].as_u64().unwrap_or(0), 0, "{op} {p}");
        }
    }
    // Prepared at both sizes, and every object deleted at the end.
    assert_eq!(measured_prepare_puts(&doc), 40);
    assert_eq!(m.objects("sweep", ""), Vec::<String>::new());
    // A file-run sweep key on an S3 run is refused, naming the S3 one.
    let (code, _, out) = s3(&m, "sweep", &dir, &["--sweep", "bs=4k,8k"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("--sweep obj-size"), "{out}");
}

fn measured_prepare_puts(doc: &serde_json::Value) -> u64 {
    doc["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "prepare")
        .map_or(0, |p| p["by_op"]["put"]["ops"].as_u64().unwrap())
}

#[test]
fn a_service_without_keep_alive_is_named_and_costs_no_errors() {
    let m = Minio::start(TMP);
    let upstream: std::net::SocketAddr = m.endpoint.trim_start_matches("http://").parse().unwrap();
    let proxy = stormark_testkit::OneRequestProxy::start(upstream);
    let dir = temp_dir(TMP);
    // Through the proxy: every request on a connection of its own.
    let mut args = s3_args(
        &m,
        "oneshot",
        &dir,
        &[
            "--create-bucket",
            "--op-mix",
            "get=50,put=50",
            "--obj-size",
            "4k",
            "--objects",
            "20",
            "--concurrency",
            "2",
            "--time",
            "2s",
        ],
    );
    args[2] = format!("http://{}", proxy.addr);
    let out = Bin(BIN).run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    let doc = read_json(&dir.path().join("r.json"));
    let run = measured(&doc);
    let ops = run["total"]["ops"].as_u64().unwrap();
    let connects = run["by_op"]["connect"]["ops"].as_u64().unwrap();
    // A connection closed by the service is replaced before the next request is sent: no
    // request fails for it, and there is one connection per operation.
    assert_eq!(run["errors"].as_array().map_or(0, Vec::len), 0, "{run}");
    assert!(
        connects + 2 >= ops && connects <= ops + 2,
        "{connects} for {ops}"
    );
    let codes = doc["findings"].to_string();
    assert!(codes.contains("s3-reconnects"), "{codes}");
    assert!(t.contains("connections made"), "{t}");

    // Straight to MinIO, which keeps them alive: one per connection, no finding.
    let (code, doc, out) = s3(
        &m,
        "oneshot",
        &dir,
        &[
            "--op-mix",
            "get=50,put=50",
            "--obj-size",
            "4k",
            "--objects",
            "20",
            "--concurrency",
            "2",
            "--time",
            "2s",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let run = measured(&doc);
    assert!(
        run["by_op"]["connect"]["ops"].as_u64().unwrap_or(0) <= 2,
        "{run}"
    );
    assert!(!doc["findings"].to_string().contains("s3-reconnects"));
}

#[test]
fn virtual_hosted_requests_name_the_bucket_in_the_host() {
    // MinIO knows its domain (localhost), so it answers http://BUCKET.localhost:PORT/key.
    let m = Minio::start_virtual(TMP);
    let dir = temp_dir(TMP);
    let (code, doc, out) = s3(
        &m,
        "vhost",
        &dir,
        &[
            "--addressing",
            "virtual",
            "--create-bucket",
            "--op-mix",
            "put=40,get=40,head=10,list=10",
            "--obj-size",
            "4k",
            "--objects",
            "10",
            "--time",
            "1s",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let run = measured(&doc);
    for op in ["put", "get", "head", "list"] {
        assert!(
            run["by_op"][op]["ops"].as_u64().unwrap_or(0) > 0,
            "{op}: {run}"
        );
    }
    assert_eq!(run["errors"].as_array().map_or(0, Vec::len), 0, "{run}");
    assert!(
        doc["spec"].to_string().contains("virtual"),
        "{}",
        doc["spec"]
    );
    assert_eq!(m.objects("vhost", ""), Vec::<String>::new());
    // The same request path-style to a name MinIO does not serve as a domain works too:
    // --path-style.
    let (code, _, out) = s3(
        &m,
        "vhost",
        &dir,
        &[
            "--path-style",
            "--op-mix",
            "put",
            "--obj-size",
            "1k",
            "--time",
            "1s",
        ],
    );
    assert_eq!(code, 0, "{out}");
}

#[test]
fn virtual_hosted_requests_reach_a_plain_service_only_by_name() {
    // A MinIO that knows no domain reads the first path segment as the bucket: virtual-hosted
    // requests to it cannot reach bucket "vhost" (proof that the bucket left the path).
    let m = Minio::start(TMP);
    let dir = temp_dir(TMP);
    let (code, _, out) = s3(
        &m,
        "vhost",
        &dir,
        &[
            "--create-bucket",
            "--op-mix",
            "put",
            "--obj-size",
            "1k",
            "--prefix",
            "p",
            "--time",
            "1s",
            "--addressing",
            "virtual",
        ],
    );
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("put http-4"), "{out}");
    assert_eq!(m.objects("vhost", ""), Vec::<String>::new());
}

#[test]
fn buckets_spread_the_load_and_each_is_cleaned() {
    let m = Minio::start(TMP);
    let dir = temp_dir(TMP);
    let args = [
        "--create-bucket",
        "--buckets",
        "3",
        "--op-mix",
        "put=40,get=40,delete=10,list=10",
        "--obj-size",
        "2k",
        "--objects",
        "12",
        "--concurrency",
        "3",
        "--time",
        "1s",
    ];
    let (code, doc, out) = s3(&m, "multi", &dir, &args);
    assert_eq!(code, 0, "{out}");
    let run = measured(&doc);
    for op in ["put", "get", "delete", "list"] {
        assert!(
            run["by_op"][op]["ops"].as_u64().unwrap_or(0) > 0,
            "{op}: {run}"
        );
    }
    assert_eq!(run["errors"].as_array().map_or(0, Vec::len), 0, "{run}");
    for b in ["multi-0", "multi-1", "multi-2"] {
        assert_eq!(m.objects(b, ""), Vec::<String>::new(), "{b}");
    }
    // Kept: the objects read lie in every bucket, 4 each, and the writes of each connection
    // in its own.
    let mut kept = args.to_vec();
    kept[4] = "put=50,get=50";
    kept.push("--keep");
    let (code, _, out) = s3(&m, "multi", &dir, &kept);
    assert_eq!(code, 0, "{out}");
    for b in ["multi-0", "multi-1", "multi-2"] {
        let keys = m.objects(b, "");
        let read = keys.iter().filter(|k| k.contains("/r")).count();
        assert_eq!(read, 4, "{b}: {keys:?}");
        assert!(keys.iter().any(|k| k.contains("/w")), "{b}: {keys:?}");
    }
    assert!(out.contains("multi-0..multi-2"), "{out}");
}

#[test]
fn a_second_server_versitygw_gets_the_same_workload() {
    // Nothing in the client is MinIO's alone: the same mixed, verified workload against
    // versitygw's posix gateway, and every object deleted after.
    let v = stormark_testkit::Versitygw::start(TMP);
    let dir = temp_dir(TMP);
    let json = dir.path().join("r.json");
    let out = Bin(BIN).run(&[
        "s3",
        "--endpoint",
        &v.endpoint,
        "--bucket",
        "vgw",
        "--create-bucket",
        "--access-key",
        &v.access_key,
        "--secret-key",
        &v.secret_key,
        "--op-mix",
        "put=30,get=40,head=10,delete=10,list=10",
        "--obj-size",
        "1k-64k",
        "--objects",
        "20",
        "--verify",
        "--concurrency",
        "2",
        "--time",
        "2s",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    let doc = read_json(&json);
    let run = measured(&doc);
    for op in ["put", "get", "head", "delete", "list"] {
        assert!(
            run["by_op"][op]["ops"].as_u64().unwrap_or(0) > 0,
            "{op}: {run}"
        );
    }
    assert_eq!(run["errors"].as_array().map_or(0, Vec::len), 0, "{run}");
    assert_eq!(v.objects("vgw"), Vec::<std::path::PathBuf>::new());
    // versitygw (v1.8.0) answers every request with `Connection: close`: the run says so, and
    // no request failed for it.
    assert!(
        doc["findings"].to_string().contains("s3-reconnects"),
        "{}",
        doc["findings"]
    );
    // Its doing, not stormark's: keep-alive is off unless versitygw is started with
    // `--keep-alive`. So started, each worker keeps its one connection for the whole run.
    drop(v);
    let v = stormark_testkit::Versitygw::start_with(TMP, true);
    let out = Bin(BIN).run(&[
        "s3",
        "--endpoint",
        &v.endpoint,
        "--bucket",
        "vgwkept",
        "--create-bucket",
        "--access-key",
        &v.access_key,
        "--secret-key",
        &v.secret_key,
        "--op-mix",
        "put=50,get=50",
        "--obj-size",
        "4k",
        "--objects",
        "20",
        "--concurrency",
        "2",
        "--time",
        "2s",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc = read_json(&json);
    let run = measured(&doc);
    assert!(
        run["by_op"]["get"]["ops"].as_u64().unwrap_or(0) > 100,
        "{run}"
    );
    let made = run["by_op"]["connect"]["ops"].as_u64().unwrap_or(0);
    assert!(made <= 2, "{made} connections made by 2 workers: {run}");
    assert!(
        !doc["findings"].to_string().contains("s3-reconnects"),
        "{}",
        doc["findings"]
    );
}

/// Issue 30: kill -9 of one of three agents mid-run left its objects in the bucket. The
/// coordinator (which holds the keys) removes what a failed host left under its prefix, and
/// says so; the bucket is empty afterwards.
#[test]
fn a_killed_agents_objects_are_removed_by_the_coordinator() {
    if !stormark_testkit::require_netns("a_killed_agents_objects_are_removed_by_the_coordinator") {
        return;
    }
    let mut net = stormark_testkit::NetCluster::new(3).expect("creating the namespaces");
    let m = Minio::start_on(TMP, &net.gateway.clone());
    let dir = temp_dir(TMP);
    let token = dir.path().join("token");
    std::fs::write(&token, "s3-orphan-test-token-0123456789\n").unwrap();
    let list = net.start_agents(BIN, &token, dir.path(), &|_| dir.path().to_path_buf());
    let args = s3_args(
        &m,
        "orphans",
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
            "6s",
            "--on-agent-failure",
            "continue",
            "--agents",
            &list,
            "--token-file",
            token.to_str().unwrap(),
        ],
    );
    let mut child = Command::new(BIN)
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    measuring(&mut child, &dir);
    // The second agent writes for a moment, then dies without cleaning up.
    std::thread::sleep(Duration::from_secs(2));
    let victim = format!("{}:7878", net.addresses[1]);
    let pid = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .find(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                let args: Vec<&[u8]> = c.split(|b| *b == 0).collect();
                args.contains(&&b"agent"[..]) && args.contains(&victim.as_bytes())
            })
        })
        .unwrap_or_else(|| panic!("no agent process listens on {victim}"));
    // SAFETY: a pid just read from /proc; SIGKILL, as a crash would.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let out = child.wait_with_output().unwrap();
    let said = text(&out);
    let doc = read_json(&dir.path().join("r.json"));
    let notes = doc["notes"].to_string();
    assert!(notes.contains("removed the"), "{notes}\n{said}");
    assert!(doc["hosts"][1]["failure"].is_object(), "{}", doc["hosts"]);
    // The dead host's objects are gone at once, removed by the coordinator.
    let prefix = |h: u32| {
        doc["notes"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|n| n.as_str())
            .find_map(|n| {
                n.split("s3://orphans/")
                    .nth(1)
                    .filter(|p| p.trim_end_matches('/').ends_with(&format!("-h{h}")))
                    .map(|p| p.trim_end_matches('/').to_string())
            })
    };
    let dead = prefix(1).unwrap_or_else(|| panic!("no prefix of host 1 in {notes}"));
    assert!(
        m.objects("orphans", &dead).is_empty(),
        "host 1's objects left"
    );
    // The living hosts' by their own cleanup, which may outlast the coordinator's wait.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let left = m.objects("orphans", "").len();
        if left == 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{left} objects left after 120 s\n{said}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// A hostile S3 service on 127.0.0.1 (not a mock of MinIO: a service that misbehaves on
/// purpose): it takes every PUT, and answers every listing of more than one key with an
/// empty page and a continuation token never seen before. Returns its endpoint and its
/// counts of (PUTs, such listings).
fn endless_listing_service() -> (
    String,
    std::sync::Arc<(std::sync::atomic::AtomicU64, std::sync::atomic::AtomicU64)>,
) {
    use std::io::{BufRead, BufReader, Write};
    use std::sync::atomic::Ordering;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let counts = std::sync::Arc::new(Default::default());
    let c = std::sync::Arc::clone(&counts);
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            let counts: std::sync::Arc<(
                std::sync::atomic::AtomicU64,
                std::sync::atomic::AtomicU64,
            )> = std::sync::Arc::clone(&c);
            std::thread::spawn(move || {
                let mut r = BufReader::new(conn.try_clone().unwrap());
                let mut w = conn;
                loop {
                    let mut request = String::new();
                    if r.read_line(&mut request).unwrap_or(0) == 0 {
                        return;
                    }
                    let mut len = 0usize;
                    loop {
                        let mut h = String::new();
                        if r.read_line(&mut h).unwrap_or(0) == 0 {
                            return;
                        }
                        if h.trim().is_empty() {
                            break;
                        }
                        if let Some((k, v)) = h.split_once(':') {
                            if k.eq_ignore_ascii_case("content-length") {
                                len = v.trim().parse().unwrap_or(0);
                            }
                        }
                    }
                    let mut body = vec![0u8; len];
                    if std::io::Read::read_exact(&mut r, &mut body).is_err() {
                        return;
                    }
                    let mut words = request.split_whitespace();
                    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
                    let answer = if method == "PUT" {
                        counts.0.fetch_add(1, Ordering::Relaxed);
                        String::new()
                    } else if method == "GET" && target.contains("list-type=2") {
                        if target.contains("max-keys=1&") {
                            "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>"
                                .to_string()
                        } else {
                            let n = counts.1.fetch_add(1, Ordering::Relaxed);
                            format!("<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>t{n}</NextContinuationToken></ListBucketResult>")
                        }
                    } else {
                        String::new()
                    };
                    let status = if method == "DELETE" {
                        "204 No Content"
                    } else {
                        "200 OK"
                    };
                    let shown = if method == "HEAD" {
                        ""
                    } else {
                        answer.as_str()
                    };
                    let reply = format!(
                        "HTTP/1.1 {status}\r\nETag: \"0\"\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\r\n{shown}",
                        answer.len()
                    );
                    if w.write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (endpoint, counts)
}

/// Issue 54: a service that hands out a new continuation token for ever kept the cleanup's
/// listing going for 100,000 pages: it stops once its pages could hold every object the run
/// wrote (a tenth of a page each, and ten more), and the notes say what may be left, where,
/// and how to remove it.
#[test]
fn an_endless_listing_stops_at_what_the_run_can_have_written() {
    use std::sync::atomic::Ordering;
    let (endpoint, counts) = endless_listing_service();
    let dir = temp_dir(TMP);
    let json = dir.path().join("r.json");
    let out = Command::new("timeout")
        .args([
            "-k",
            "5",
            "120",
            BIN,
            "s3",
            "--endpoint",
            &endpoint,
            "--bucket",
            "endless",
        ])
        .args([
            "--access-key",
            "AKIAEXAMPLEEXAMPLE01",
            "--secret-key",
            "secret-example-key-0123456789",
        ])
        .args([
            "--op-mix",
            "put",
            "--obj-size",
            "1k",
            "--concurrency",
            "1",
            "--time",
            "1s",
        ])
        .args(["-q", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let said = text(&out);
    assert_ne!(
        out.status.code(),
        Some(124),
        "still listing after 120 s: {said}"
    );
    let (puts, lists) = (
        counts.0.load(Ordering::Relaxed),
        counts.1.load(Ordering::Relaxed),
    );
    assert!(puts > 0, "{said}");
    assert!(
        lists <= puts.div_ceil(100) + 10,
        "{lists} pages listed after {puts} PUTs: {said}"
    );
    let notes = read_json(&json)["notes"].to_string();
    assert!(
        notes.contains("listing stopped after")
            && notes.contains("s3://endless/stormark/")
            && notes.contains("stormark s3 --remove-run "),
        "{notes}"
    );
}
