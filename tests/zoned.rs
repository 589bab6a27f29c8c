//! Issue 31: fio's zoned mode (`zonemode=zbd`) end to end on a file of the run directory: the
//! write pointers shared by a file's jobs across stages, full zones reset before they are
//! written again, a trim as a zone's reset, and a read of empty zones saying why it read
//! nothing.

use stormark_testkit::{read_json, temp_dir, text, Bin};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

/// Three passes of sequential writes over 8 zones of 1 MiB reset each zone twice (16 resets,
/// exactly); a later stage's trims of 3 zones reset those 3; random reads after them find
/// the 5 zones still written and read without an error.
#[test]
fn zones_are_reset_when_full_and_by_trims_across_stages() {
    let dir = temp_dir(TMP);
    let target = dir.path().join("t");
    std::fs::create_dir(&target).unwrap();
    let job = dir.path().join("zoned.fio");
    let json = dir.path().join("r.json");
    std::fs::write(
        &job,
        "[global]\nfilename=data\nzonemode=zbd\nzonesize=1m\nsize=8m\nbs=64k\n\
         [w]\nrw=write\nio_size=24m\n\
         [t]\nstonewall\nrw=trim\nbs=1m\nio_size=3m\n\
         [r]\nstonewall\nrw=randread\nio_size=1m\n",
    )
    .unwrap();
    let out = Bin(BIN).run(&[
        "run",
        target.to_str().unwrap(),
        "--job",
        job.to_str().unwrap(),
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = read_json(&json);
    let notes: Vec<String> = r["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect();
    let resets = |stage: u32| {
        notes
            .iter()
            .find(|n| n.starts_with("zoned ") && n.contains(&format!(" in stage {stage} ")))
            .and_then(|n| n.split(": ").nth(1)?.split(' ').next()?.parse::<u64>().ok())
    };
    assert_eq!(resets(1), Some(16), "{notes:#?}");
    assert_eq!(resets(2), Some(3), "{notes:#?}");
    let phases = r["phases"].as_array().unwrap();
    let ops = |job: &str, op: &str| {
        phases
            .iter()
            .find_map(|p| p["by_job"].get(job))
            .map(|j| j["by_op"][op]["ops"].as_u64().unwrap_or(0))
    };
    assert_eq!(ops("w", "write"), Some(384), "{}", r["phases"]);
    assert_eq!(ops("t", "trim"), Some(3));
    assert_eq!(ops("r", "read"), Some(16));
    assert_eq!(
        std::fs::read_dir(&target).unwrap().count(),
        0,
        "files left behind"
    );
}

/// A read of zones nothing has written reads nothing (they start empty, as fio's on a file),
/// and says so; with `--read-beyond-wp true` it reads the whole zones.
#[test]
fn a_read_of_empty_zones_says_why_it_read_nothing() {
    let dir = temp_dir(TMP);
    let json = dir.path().join("r.json");
    let run = |extra: &[&str]| {
        let mut a = vec![
            "run",
            dir.path().to_str().unwrap(),
            "--rw",
            "randread",
            "--zoned",
            "--zone-size",
            "1m",
            "--size",
            "4m",
            "--time",
            "1s",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ];
        a.extend_from_slice(extra);
        let out = Bin(BIN).run(&a);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        read_json(&json)
    };
    // The run's phase (after the file's preparation).
    let ops = |r: &serde_json::Value| {
        r["phases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["kind"] != "prepare")
            .map(|p| p["total"]["ops"].as_u64().unwrap())
    };
    let r = run(&[]);
    assert_eq!(ops(&r), Some(0), "{}", r["phases"]);
    assert!(
        r["notes"].to_string().contains("read nothing"),
        "{}",
        r["notes"]
    );
    let r = run(&["--read-beyond-wp", "true"]);
    assert!(ops(&r) > Some(0), "{}", r["phases"]);
    // The zoned settings without --zoned, and a size under a zone: one line, exit 2.
    for (args, says) in [
        (vec!["--max-open-zones", "4"], "with zoned=true"),
        (vec!["--zoned", "--zone-size", "8m"], "at least one zone"),
    ] {
        let mut a = vec!["run", dir.path().to_str().unwrap(), "--size", "4m"];
        a.extend_from_slice(&args);
        let out = Bin(BIN).run(&a);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{said}");
        assert!(
            said.contains(says) && said.trim().lines().count() == 1,
            "{said}"
        );
    }
}

/// With `--verify` a zoned job fills its zones once, a full zone never reset: random writes
/// over 4 zones write each of their 64 blocks exactly once and end, and a later
/// `--verify-only` reads all 4 MiB back as written.
#[test]
fn a_checking_zoned_job_fills_its_zones_once() {
    let dir = temp_dir(TMP);
    let json = dir.path().join("r.json");
    let out = Bin(BIN).run(&[
        "run",
        dir.path().to_str().unwrap(),
        "--rw",
        "randwrite",
        "--bs",
        "64k",
        "--zoned",
        "--zone-size",
        "1m",
        "--size",
        "4m",
        "--verify",
        "--time",
        "10s",
        "--keep",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = read_json(&json);
    let run = r["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == "run")
        .unwrap()
        .clone();
    assert_eq!(run["by_op"]["write"]["ops"], 64, "{run}");
    let run_dir = r["target"]["run_dir"].as_str().unwrap().to_string();
    let out = Bin(BIN).run(&[
        "run",
        &run_dir,
        "--reuse",
        "--verify-only",
        "--size",
        "4m",
        "--bs",
        "64k",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = read_json(&json);
    assert_eq!(
        r["phases"][0]["by_op"]["verify"]["bytes"].as_u64(),
        Some(4 << 20),
        "{}",
        r["phases"][0]
    );
    std::fs::remove_dir_all(&run_dir).unwrap();
}
