//! Issue 55: several targets in one run. `stormark run D1 D2` and a fio job file whose jobs
//! name different devices run as one stage: one start for all, each job on its own target,
//! the phase's figures per target (`by_target`) and in total. Real directories and loop
//! devices (as root; skipped with a printed reason where loop devices cannot be made).

use std::process::Output;

use serde_json::Value;
use stormark_testkit::{read_json, require_root, temp_dir, Bin, LoopDevice};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

fn stormark(args: &[&str]) -> Output {
    Bin(BIN).run(args)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The measured phase's figures per target sum to its total, each target did I/O, and every
/// job names one of `targets`.
fn check_by_target(r: &Value, targets: &[&str]) {
    let runs: Vec<&Value> = r["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] != "prepare")
        .collect();
    assert_eq!(runs.len(), 1, "one stage for every target: {}", r["phases"]);
    let p = runs[0];
    let by = p["by_target"].as_object().expect("by_target");
    let mut keys: Vec<&str> = by.keys().map(String::as_str).collect();
    keys.sort();
    let mut want = targets.to_vec();
    want.sort();
    assert_eq!(keys, want, "{}", p["by_target"]);
    for field in ["ops", "bytes"] {
        let sum: u64 = by
            .values()
            .map(|b| b["total"][field].as_u64().unwrap())
            .sum();
        assert_eq!(sum, p["total"][field].as_u64().unwrap(), "{field}");
    }
    for (t, b) in by {
        assert!(b["total"]["ops"].as_u64().unwrap() > 0, "{t}: {b}");
        assert!(b["total"]["latency_ns"]["p99"].as_u64().unwrap() > 0, "{t}");
    }
    let jobs = p["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), targets.len());
    for j in jobs {
        assert!(targets.contains(&j["target"].as_str().unwrap()), "{j}");
    }
    assert_eq!(r["targets"].as_array().unwrap().len(), targets.len());
}

#[test]
fn several_directories_run_as_one_stage_with_figures_per_target() {
    let dir = temp_dir(TMP);
    let (a, b) = (dir.path().join("d1"), dir.path().join("d2"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let json = dir.path().join("r.json");
    let out = stormark(&[
        "run",
        a,
        b,
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--size",
        "4m",
        "--time",
        "2s",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = read_json(&json);
    check_by_target(&r, &[a, b]);
    // One start: one phase, one clock, both targets' jobs in it.
    let p = r["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] != "prepare")
        .unwrap();
    assert_eq!(p["name"], "run");
    let names: Vec<&str> = p["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"randread-4k.d1") && names.contains(&"randread-4k.d2"),
        "{names:?}"
    );
    // The terminal has a row per target.
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains(&format!("{a} read")) && table.contains(&format!("{b} read")),
        "{table}"
    );
    // The Markdown report has a row per target, and names each.
    let md = stormark(&["report", json.to_str().unwrap(), "--markdown", "-"]);
    let md = String::from_utf8_lossy(&md.stdout);
    for t in [a, b] {
        assert!(md.contains(&format!("| run | {t} | all |")), "{md}");
        assert!(md.contains(&format!("- target: `{t}`")), "{md}");
    }
    let html = dir.path().join("r.html");
    let out = stormark(&[
        "report",
        json.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let page = std::fs::read_to_string(&html).unwrap();
    for t in [a, b] {
        assert!(page.contains(&format!("target <code>{t}</code>")), "{t}");
    }
    // Each target's run directory made and removed, as for one target.
    assert_eq!(r["targets"][1]["path"], b);
    assert!(r["targets"][1]["run_dir"]
        .as_str()
        .is_some_and(|d| d.starts_with(b)));
    for d in [a, b] {
        assert!(
            std::fs::read_dir(d).unwrap().next().is_none(),
            "{d} left files"
        );
    }
    // A fio job file given first, then its TARGETs: its job on each.
    let job = dir.path().join("one.fio");
    std::fs::write(
        &job,
        "[r]\nrw=randread\nbs=4k\nsize=1m\nruntime=1\ntime_based\n",
    )
    .unwrap();
    let out = stormark(&[
        "run",
        job.to_str().unwrap(),
        a,
        b,
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    check_by_target(&read_json(&json), &[a, b]);
}

#[test]
fn a_missing_second_target_is_refused_before_load() {
    let dir = temp_dir(TMP);
    let a = dir.path().join("d1");
    std::fs::create_dir(&a).unwrap();
    let missing = dir.path().join("no-such-dir");
    let out = stormark(&[
        "run",
        a.to_str().unwrap(),
        missing.to_str().unwrap(),
        "--rw",
        "randread",
        "--time",
        "1s",
        "--quiet",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let e = stderr(&out);
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    assert!(e.contains("no-such-dir"), "{e}");
    // Nothing was made on the first target either.
    assert!(std::fs::read_dir(&a).unwrap().next().is_none());
}

#[test]
fn a_fio_job_file_on_two_loop_devices_runs_as_one_stage() {
    let test = "a_fio_job_file_on_two_loop_devices_runs_as_one_stage";
    if !require_root(test) {
        return;
    }
    let devs = match (
        LoopDevice::new(TMP, 32 << 20),
        LoopDevice::new(TMP, 32 << 20),
    ) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            stormark_testkit::skip(test, &format!("cannot create a loop device: {e}"));
            return;
        }
    };
    let (a, b) = (devs.0.path.to_str().unwrap(), devs.1.path.to_str().unwrap());
    let dir = temp_dir(TMP);
    let job = dir.path().join("disks.fio");
    std::fs::write(
        &job,
        format!(
            "[global]\nrw=randread\nbs=4k\ndirect=1\niodepth=4\nruntime=2\ntime_based\n\n\
             [sdb]\nfilename={a}\n\n[sdc]\nfilename={b}\n"
        ),
    )
    .unwrap();
    let json = dir.path().join("r.json");
    let out = stormark(&[
        "run",
        job.to_str().unwrap(),
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = read_json(&json);
    check_by_target(&r, &[a, b]);
    assert_eq!(r["targets"][0]["kind"], "block-device");
}
