//! `--target-latency`, `--curve` and `--sweep` end to end: the real binary on temp
//! directories.

use std::process::Output;

use serde_json::Value;
use stormark_testkit::{entries, read_json, temp_dir, text, Bin, TempDir};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

fn stormark(args: &[&str]) -> Output {
    Bin(BIN).run(args)
}

/// Runs `stormark run <target> <args> --json` and returns the exit code, results and output.
fn run_json(dir: &TempDir, args: &[&str]) -> (i32, Value, String) {
    let t = dir.path().join("target");
    std::fs::create_dir_all(&t).unwrap();
    let json = dir.path().join("r.json");
    let mut all = vec!["run", t.to_str().unwrap()];
    all.extend_from_slice(args);
    all.extend(["--json", json.to_str().unwrap(), "--quiet"]);
    let out = stormark(&all);
    let text = text(&out);
    assert!(
        entries(&t).is_empty(),
        "the run directory is removed: {:?}",
        entries(&t)
    );
    (out.status.code().unwrap_or(-1), read_json(&json), text)
}

fn phases(r: &Value) -> Vec<&Value> {
    r["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] != "prepare")
        .collect()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn search_climbs_concurrency_and_reports_every_step() {
    let dir = temp_dir(TMP);
    // Null I/O: latency far below the target, so the search climbs until throughput stops
    // growing or the allowed concurrency (2 workers x depth 4) runs out.
    let (code, r, out) = run_json(
        &dir,
        &[
            "--engine",
            "null",
            "--jobs",
            "2",
            "--iodepth",
            "4",
            "--target-latency",
            "p99<=50ms,mean<=10ms",
            "--step-time",
            "1s",
            "--ramp",
            "0",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let s = &r["search"];
    let steps = s["steps"].as_array().unwrap();
    let ph = phases(&r);
    assert_eq!(steps.len(), ph.len(), "one phase per step");
    for (i, (step, p)) in steps.iter().zip(&ph).enumerate() {
        assert_eq!(p["name"], format!("search-step-{}", i + 1));
        assert_eq!(step["phase"], p["name"]);
        // The phase ran the load the step says.
        assert_eq!(p["jobs"][0]["workers"], step["load"]["jobs"], "{p}");
        assert_eq!(p["jobs"][0]["iodepth"], step["load"]["iodepth"], "{p}");
        assert_eq!(f(&step["iops"]), f(&p["total"]["iops"]));
        // A step met the targets exactly when its own figures are within them.
        let p99 = f(&p["total"]["latency_ns"]["p99"]);
        let mean = f(&p["total"]["latency_ns"]["mean"]);
        assert_eq!(
            step["met"].as_bool().unwrap(),
            p99 <= 50e6 && mean <= 10e6,
            "{step}"
        );
    }
    // Concurrency doubles: 1x1, 2x1, 2x2, 2x4 (or stops early when flat).
    let loads: Vec<(u64, u64)> = steps
        .iter()
        .map(|s| {
            (
                s["load"]["jobs"].as_u64().unwrap(),
                s["load"]["iodepth"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(loads, [(1, 1), (2, 1), (2, 2), (2, 4)][..loads.len()]);
    let ended = s["ended"].as_str().unwrap();
    assert!(
        ended == "saturated" || ended == "concurrency-limit",
        "{ended}"
    );
    let best = s["best"].as_str().unwrap();
    let best_iops = f(&s["best_iops"]);
    let top = steps.iter().map(|s| f(&s["iops"])).fold(0.0, f64::max);
    assert_eq!(
        best_iops, top,
        "the best is the highest throughput that met"
    );
    assert!(out.contains("best sustained: "), "{out}");
    assert!(out.contains(best.trim_start_matches("search-step-")));
    assert_eq!(s["targets"][0]["stat"], "p99");
    assert_eq!(s["targets"][0]["limit_ns"], 50_000_000);
    assert_eq!(s["first_broken"], Value::Null);
}

#[test]
fn search_that_nothing_meets_says_so() {
    let dir = temp_dir(TMP);
    // No I/O completes in under a nanosecond.
    let (code, r, out) = run_json(
        &dir,
        &[
            "--engine",
            "null",
            "--target-latency",
            "p50<=1ns",
            "--step-time",
            "1s",
            "--ramp",
            "0",
        ],
    );
    assert_eq!(code, 0, "the measurement itself succeeded: {out}");
    let s = &r["search"];
    assert_eq!(s["best"], Value::Null);
    assert_eq!(s["first_broken"], "search-step-1");
    assert_eq!(s["ended"], "unreachable", "{s}");
    // After the closed-loop step broke, open-loop rates were tried below it.
    let steps = s["steps"].as_array().unwrap();
    assert!(steps.len() >= 2 && steps.len() <= 20, "{}", steps.len());
    assert!(steps[1]["load"]["rate_iops"].as_f64().unwrap() < f(&steps[0]["iops"]));
    assert!(out.contains("no step met every target"), "{out}");
}

#[test]
fn curve_runs_open_loop_at_shares_of_the_maximum() {
    let dir = temp_dir(TMP);
    let (code, r, out) = run_json(
        &dir,
        &[
            "--engine",
            "null",
            "--iodepth",
            "4",
            "--curve",
            "50,10",
            "--time",
            "1s",
            "--ramp",
            "0",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let names: Vec<&str> = phases(&r)
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["curve-max", "curve-10", "curve-50"]);
    let c = &r["curve"];
    let max = f(&c["max_iops"]);
    assert_eq!(max, f(&phases(&r)[0]["total"]["iops"]));
    let points = c["points"].as_array().unwrap();
    assert_eq!(points.len(), 3);
    assert_eq!(points[0]["percent"], Value::Null);
    for (p, pct) in points[1..].iter().zip([10.0, 50.0]) {
        let rate = f(&p["rate_iops"]);
        assert!((rate - max * pct / 100.0).abs() < 1e-6 * max, "{p}");
        // The phase ran open loop at that rate: service time recorded beside response time.
        let phase = phases(&r)
            .into_iter()
            .find(|x| x["name"] == p["phase"])
            .unwrap();
        assert_eq!(f(&phase["jobs"][0]["rate_iops"]), rate);
        assert!(phase["total"]["service_latency_ns"].is_object(), "{phase}");
    }
    // 10% of the null engine's maximum is easily held.
    let ten = &points[1];
    assert!(
        f(&ten["iops"]) > 0.95 * f(&ten["rate_iops"]),
        "achieved {} of {}",
        ten["iops"],
        ten["rate_iops"]
    );
    assert!(out.contains("throughput-latency curve"), "{out}");
}

#[test]
fn sweep_runs_every_combination_with_efficiency_and_a_matrix() {
    let dir = temp_dir(TMP);
    let (code, r, out) = run_json(
        &dir,
        &[
            "--engine",
            "psync",
            "--rw",
            "randread",
            "--size",
            "64k",
            "--time",
            "1s",
            "--sweep",
            "bs=4k,128k",
            "--sweep",
            "jobs=1,2",
            "--sweep",
            "size=64k,256k",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let s = &r["sweep"];
    assert_eq!(s["keys"], serde_json::json!(["bs", "jobs", "size"]));
    let points = s["points"].as_array().unwrap();
    // 128k blocks do not fit in 64k files: those two combinations are skipped and said so.
    assert_eq!(points.len(), 6, "{s}");
    assert_eq!(s["skipped"].as_array().unwrap().len(), 2);
    assert!(r["notes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n.as_str().unwrap().contains("does not fit")));
    for p in points {
        let phase = phases(&r)
            .into_iter()
            .find(|x| x["name"] == p["phase"])
            .unwrap();
        let job = &phase["jobs"][0];
        assert_eq!(job["workers"], p["values"]["jobs"]);
        // Each worker uses `size` bytes of its file.
        assert_eq!(
            job["working_set_bytes"].as_u64().unwrap(),
            p["values"]["jobs"].as_u64().unwrap() * p["values"]["size"].as_u64().unwrap()
        );
        // Every I/O is one block of the point's size.
        let bs = p["values"]["bs"].as_u64().unwrap();
        let total = &phase["total"];
        assert_eq!(
            total["bytes"].as_u64().unwrap(),
            total["ops"].as_u64().unwrap() * bs
        );
        let e = f(&p["efficiency"]);
        if p["values"]["jobs"] == 1 {
            assert_eq!(e, 1.0);
        } else {
            assert!(e > 0.0, "{p}");
        }
    }
    assert_eq!(
        points[0]["phase"], "sweep:bs=4k,jobs=1,size=64k",
        "{}",
        points[0]
    );
    assert!(out.contains("sweep over bs, jobs, size"), "{out}");
    // Two keys: a matrix as well.
    let (code, _, out) = run_json(
        &dir,
        &[
            "--engine",
            "null",
            "--time",
            "1s",
            "--sweep",
            "iodepth=1,2",
            "--sweep",
            "jobs=1,2",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("IOPS by iodepth (rows) and jobs (columns)"),
        "{out}"
    );
}

#[test]
fn shaping_mistakes_are_one_line_and_exit_2() {
    let dir = temp_dir(TMP);
    let t = dir.path().join("t");
    std::fs::create_dir_all(&t).unwrap();
    let two_jobs = dir.path().join("two.toml");
    std::fs::write(
        &two_jobs,
        "[[job]]\nrw = \"read\"\n[[job]]\nrw = \"write\"\n",
    )
    .unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--target-latency", "p99"],
            "--target-latency p99: expected [OP:]STAT<=DURATION",
        ),
        (
            vec!["--target-latency", "p99<=2"],
            "expected a duration with its unit",
        ),
        (vec!["--target-latency", "p42<=2ms"], "a latency statistic"),
        (
            vec!["--curve", "0,50"],
            "--curve 0,50: expected percentages",
        ),
        (vec!["--curve", "50,50"], "each percentage once"),
        (vec!["--sweep", "rw=read,write"], "a sweepable key"),
        (vec!["--sweep", "bs=4k", "--sweep", "bs=8k"], "swept twice"),
        (vec!["--sweep", "jobs=0"], "whole numbers from 1"),
        (
            vec!["--sweep", "agents=1,2"],
            "--sweep agents needs --agents or --agents-file",
        ),
        (
            vec!["--curve", "50", "--sweep", "bs=4k"],
            "give one of them per run",
        ),
        (
            vec!["--step-time", "5s"],
            "only with --target-latency or --curve",
        ),
        (
            vec!["--target-latency", "p99<=2ms", "--step-time", "0.5s"],
            "at least 1s",
        ),
        (vec!["--search-steps", "5"], "only with --target-latency"),
        (
            vec!["--target-latency", "p99<=2ms", "--search-steps", "1"],
            "from 2 to 200",
        ),
        (
            vec!["--target-latency", "p99<=2ms", "--rate-iops", "100"],
            "the search chooses the rate",
        ),
        (
            vec!["--curve", "50", "--rate-iops", "100"],
            "the curve chooses the rates",
        ),
        (vec!["--sweep", "bs=4k", "--repeat", "3"], "--repeat with"),
        (
            vec!["--steady-state", "iops:2"],
            "--steady-state iops:2: expected FIGURE:BAND%:WINDOW",
        ),
        (
            vec!["--steady-state", "iops:2%:1s"],
            "WINDOW whole seconds from 2s",
        ),
        (
            vec![
                "--target-latency",
                "p99<=2ms",
                "--job",
                two_jobs.to_str().unwrap(),
            ],
            "run one job",
        ),
    ];
    for (args, expect) in cases {
        let mut all = vec!["run", t.to_str().unwrap(), "--engine", "null"];
        all.extend(&args);
        let out = stormark(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expect), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
    assert!(entries(&t).is_empty(), "refused runs write nothing");
}

#[test]
fn steady_state_ends_the_ramp_and_says_when() {
    let dir = temp_dir(TMP);
    // An open loop is steady from its first seconds: the ramp ends after the window.
    let (code, r, out) = run_json(
        &dir,
        &[
            "--engine",
            "null",
            "--rate-iops",
            "5000",
            "--steady-state",
            "iops:5%:2s",
            "--time",
            "1s",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let note = r["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .find(|n| n.contains("steady state (iops:5%:2s) held after"))
        .unwrap_or_else(|| panic!("no steady-state note in {}", r["notes"]));
    let secs: u64 = note
        .split("held after ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap();
    assert!((2..=5).contains(&secs), "{note}");
    let run = phases(&r)[0];
    // The measured time is --time, after however long the ramp took.
    let d = f(&run["duration_ns"]);
    assert!((0.9e9..1.5e9).contains(&d), "{d}");
    assert_eq!(r["spec"]["jobs"][0]["steady_state"], "iops:5%:2s");
    assert!(f(&run["total"]["iops"]) > 4500.0, "{}", run["total"]);
}
