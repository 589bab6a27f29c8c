//! Issue 60: mdtest's command line and stonewall in `stormark meta`. `--mdtest` makes exactly
//! the directories and files mdtest makes with the same arguments (hpc/ior's src/mdtest.c:
//! `-z`/`-b` tree of (b^(z+1)-1)/(b-1) directories per rank with `-u`, `-n` items per rank
//! spread as `n / directories` in each), mdtest's ranks being the workers; `--time` stops
//! each phase, says so, and gives each worker's count.

use std::path::Path;
use std::time::{Duration, Instant};

use stormark_testkit::{read_json, temp_dir, text, Bin};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

/// (directories, regular files) beneath `dir`, `dir` itself left out.
fn count(dir: &Path) -> (u64, u64) {
    let (mut dirs, mut files) = (0, 0);
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let t = e.file_type().unwrap();
        if t.is_dir() {
            dirs += 1;
            let (d, f) = count(&e.path());
            dirs += d;
            files += f;
        } else if t.is_file() {
            files += 1;
        }
    }
    (dirs, files)
}

/// The one directory in `dir` (a run directory, a job's tree; the run's manifest beside).
fn only(dir: &Path) -> std::path::PathBuf {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(v.len(), 1, "{v:?}");
    v.pop().unwrap()
}

#[test]
fn mdtest_command_line_makes_what_mdtest_makes() {
    let dir = temp_dir(TMP);
    let target = dir.path().join("t");
    std::fs::create_dir(&target).unwrap();
    let json = dir.path().join("m.json");
    // -C: mdtest's create phase alone, which leaves the tree and its files (kept here).
    let out = Bin(BIN).run(&[
        "meta",
        target.to_str().unwrap(),
        "--jobs",
        "2",
        "--mdtest",
        "-n 1000 -z 2 -b 3 -u -F -C",
        "--keep",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // stormark-RUN/meta-JOB/w0 and w1, each holding one rank's tree.
    let job = only(&only(&target));
    let mut workers: Vec<_> = std::fs::read_dir(&job)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    workers.sort();
    assert_eq!(workers.len(), 2, "{workers:?}");
    for w in &workers {
        // mdtest_tree.R.0 and its 12 below (13 directories), 76 files in each: 988.
        assert_eq!(count(w), (13, 988), "{}", w.display());
    }
    let doc = read_json(&json);
    let phases = doc["phases"].as_array().unwrap();
    let names: Vec<&str> = phases.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["mkdir", "create"]);
    assert_eq!(phases[0]["by_op"]["mkdir"]["ops"], 26);
    assert_eq!(phases[1]["by_op"]["create"]["ops"], 1976);
    // Not cut: each worker went through all its items.
    let reached = &phases[1]["reached"];
    assert_eq!(reached["cut"], false, "{reached}");
    assert_eq!(
        (reached["min"].as_u64(), reached["max"].as_u64()),
        (Some(988), Some(988))
    );
    assert_eq!(reached["by_worker"].as_object().unwrap().len(), 2);

    // The other way: the job's mdtest command line.
    let out = Bin(BIN).run(&[
        "meta",
        "/mnt/x",
        "--jobs",
        "2",
        "--depth",
        "2",
        "--branch",
        "3",
        "--files",
        "76",
        "--ops",
        "mkdir,create",
        "--print-mdtest",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        text(&out).trim(),
        "mpirun -np 2 mdtest -a POSIX -z 2 -b 3 -I 76 -F -u -C -d /mnt/x"
    );
    // What stormark does not make is refused by name, one line, before anything is made.
    let before = count(&target);
    for (args, want) in [
        ("-n 1000 -z 2 -b 3 -u", "directory items"),
        ("-n 100 -F -N 1", "-N"),
        ("-n 100 -F -S", "-S"),
    ] {
        let out = Bin(BIN).run(&["meta", target.to_str().unwrap(), "--mdtest", args]);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args}: {said}");
        assert!(
            said.contains(want) && said.trim().lines().count() == 1,
            "{args}: {said}"
        );
    }
    let out = Bin(BIN).run(&[
        "meta",
        target.to_str().unwrap(),
        "--mdtest",
        "-n 10 -F",
        "--files",
        "3",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("leave out --files"), "{}", text(&out));
    assert_eq!(count(&target), before);
}

#[test]
fn time_stops_each_phase_says_so_and_counts_each_worker() {
    let dir = temp_dir(TMP);
    let json = dir.path().join("m.json");
    let started = Instant::now();
    let out = Bin(BIN).run(&[
        "meta",
        dir.path().to_str().unwrap(),
        "--jobs",
        "2",
        "--files",
        "1000000",
        "--ops",
        "create",
        "--time",
        "2s",
        "--json",
        json.to_str().unwrap(),
    ]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    // 2 million creates take far longer than this bound, even on a fast machine.
    assert!(started.elapsed() < Duration::from_secs(120));
    assert!(
        said.contains("cut by the time: items per worker: min"),
        "{said}"
    );
    let doc = read_json(&json);
    let p = &doc["phases"][0];
    assert_eq!(p["name"], "create");
    let duration = p["duration_ns"].as_u64().unwrap();
    assert!(
        (2_000_000_000..60_000_000_000).contains(&duration),
        "{duration}"
    );
    let reached = &p["reached"];
    assert_eq!(reached["cut"], true, "{reached}");
    let by_worker = reached["by_worker"].as_object().unwrap();
    assert_eq!(by_worker.len(), 2, "{reached}");
    let sum: u64 = by_worker.values().map(|v| v.as_u64().unwrap()).sum();
    let calls = p["by_op"]["create"]["ops"].as_u64().unwrap()
        + p["by_op"]["create"]["errors"].as_u64().unwrap_or(0);
    assert_eq!(sum, calls);
    assert!(reached["max"].as_u64().unwrap() < 1_000_000);
    assert!(reached["min"].as_u64().unwrap() > 0);
    // Its files removed afterwards.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

/// mdtest's wear-out: after the create its time cut, the workers' files are made up to the
/// most any made, so the stat after it goes through equal counts.
#[test]
fn wear_out_gives_every_worker_the_furthest_count() {
    let dir = temp_dir(TMP);
    let json = dir.path().join("m.json");
    let out = Bin(BIN).run(&[
        "meta",
        dir.path().to_str().unwrap(),
        "--jobs",
        "2",
        "--files",
        "1000000",
        "--ops",
        "create,stat",
        "--time",
        "1s",
        "--stonewall-wear-out",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc = read_json(&json);
    let create = &doc["phases"][0]["reached"];
    let stat = &doc["phases"][1]["reached"];
    assert_eq!(create["cut"], true, "{create}");
    let max = create["max"].as_u64().unwrap();
    if stat["cut"] == false {
        assert_eq!(
            (stat["min"].as_u64(), stat["max"].as_u64()),
            (Some(max), Some(max)),
            "{stat}"
        );
    }
    assert_eq!(
        doc["phases"][1]["by_op"]["stat"]["errors"]
            .as_u64()
            .unwrap_or(0),
        0
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    // Without --time it is a mistake, one line.
    let out = Bin(BIN).run(&["meta", dir.path().to_str().unwrap(), "--stonewall-wear-out"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("with --time"), "{}", text(&out));
}

/// mdtest's -y, -X, -R and -Y: each file fsynced after its write, within the create's time,
/// each read checked against what was written, the stats in a scattered order (each file
/// once), a sync(2) by each worker at each phase's end.
#[test]
fn fsync_after_each_write_and_verified_reads() {
    let dir = temp_dir(TMP);
    let json = dir.path().join("m.json");
    let out = Bin(BIN).run(&[
        "meta",
        dir.path().to_str().unwrap(),
        "--jobs",
        "2",
        "--mdtest",
        "-n 30 -F -w 4096 -e 4096 -y -X -R -Y",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc = read_json(&json);
    let create = &doc["phases"][1]["by_op"]["create"];
    assert_eq!(
        (create["ops"].as_u64(), create["bytes"].as_u64()),
        (Some(60), Some(60 * 4096))
    );
    assert_eq!(doc["spec"]["jobs"][0]["fsync"], "1", "{}", doc["spec"]);
    assert_eq!(doc["phases"][2]["by_op"]["stat"]["ops"], 60);
    // -Y: each worker's sync(2) at the end of each of the 6 phases, in its time.
    for p in doc["phases"].as_array().unwrap() {
        assert_eq!(p["by_op"]["sync"]["ops"], 2, "{}", p["name"]);
        assert_eq!(
            p["reached"]["max"],
            if p["name"] == "mkdir" || p["name"] == "rmdir" {
                1
            } else {
                30
            },
            "{}",
            p["name"]
        );
    }
    let read = &doc["phases"][3];
    assert_eq!(read["name"], "read");
    assert_eq!(read["by_op"]["read"]["ops"], 60);
    assert_eq!(
        (
            read["verify"]["objects"].as_u64(),
            read["verify"]["bad"].as_u64()
        ),
        (Some(60), Some(0))
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}
