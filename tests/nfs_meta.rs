//! Issue 52: metadata load over NFS (`stormark meta nfs://SERVER/EXPORT/DIR`) against a real
//! server, nfs-ganesha: each create, stat and delete one RPC relative to a directory's handle
//! (a file's bytes WRITE and READ by its own handle), counted as ganesha counts them, the tree made in the run's own directory and removed with
//! it, nothing else of the export touched.

use std::collections::BTreeMap;

use stormark_testkit::{read_json, temp_dir, text, Bin, Ganesha};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

/// Each phase's operations and errors, by phase name.
fn counts(doc: &serde_json::Value) -> BTreeMap<String, (u64, u64)> {
    doc["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let name = p["name"].as_str().unwrap().to_string();
            let op = &p["by_op"][name.as_str()];
            let n = (
                op["ops"].as_u64().unwrap_or(0),
                op["errors"].as_u64().unwrap_or(0),
            );
            (name, n)
        })
        .collect()
}

/// Every entry beneath `dir`, as relative paths, sorted.
fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            out.push(p.strip_prefix(dir).unwrap().to_string_lossy().into_owned());
            if e.file_type().unwrap().is_dir() {
                todo.push(p);
            }
        }
    }
    out.sort();
    out
}

/// What ganesha served of `op` between two readings.
fn served(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>, op: &str) -> u64 {
    after.get(op).copied().unwrap_or(0) - before.get(op).copied().unwrap_or(0)
}

#[test]
fn meta_over_nfs_counted_as_ganesha_counts_and_nothing_left() {
    let Some(g) = Ganesha::for_test(
        TMP,
        "meta_over_nfs_counted_as_ganesha_counts_and_nothing_left",
    ) else {
        return;
    };
    std::fs::create_dir(g.export.join("m")).unwrap();
    std::fs::write(g.export.join("m/theirs"), b"not stormark's").unwrap();
    std::fs::create_dir(g.export.join("m/their-dir")).unwrap();
    let before = walk(&g.export);
    let c0 = g.v3_op_counts().expect("ganesha's statistics");
    let dir = temp_dir(TMP);
    let json = dir.path().join("m.json");
    let out = Bin(BIN).run(&[
        "meta",
        &g.url("/m"),
        "--jobs",
        "2",
        "--files",
        "50",
        "--ops",
        "create,stat,delete",
        "--json",
        json.to_str().unwrap(),
    ]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}\n{}", g.log());
    let doc = read_json(&json);
    let got = counts(&doc);
    for phase in ["create", "stat", "delete"] {
        assert_eq!(got.get(phase), Some(&(100, 0)), "{phase}: {got:?}\n{said}");
    }
    let c1 = g.v3_op_counts().unwrap();
    // Each timed call one RPC: ganesha served exactly the creates and removes counted, and a
    // LOOKUP per stat (beside the few that hold the run's directories, untimed).
    assert_eq!(served(&c0, &c1, "CREATE"), 100, "{c0:?}\n{c1:?}");
    assert_eq!(served(&c0, &c1, "REMOVE"), 100, "{c0:?}\n{c1:?}");
    let lookups = served(&c0, &c1, "LOOKUP");
    assert!(
        (100..=120).contains(&lookups),
        "{lookups} LOOKUPs for 100 stats\n{c0:?}\n{c1:?}"
    );
    // Every directory made is removed: the run directory, the job's, the workers' and the
    // tree's.
    let (mkdirs, rmdirs) = (served(&c0, &c1, "MKDIR"), served(&c0, &c1, "RMDIR"));
    assert_eq!((mkdirs, rmdirs), (6, 6), "{c0:?}\n{c1:?}");
    assert_eq!(walk(&g.export), before, "the export is as it was\n{said}");
    assert_eq!(doc["target"]["kind"], "nfs-directory", "{}", doc["target"]);

    // Every operation a file of no bytes has (mdtest's defaults), in a deeper tree shared by
    // the workers: each counted whole, without an error, and nothing left.
    let out = Bin(BIN).run(&[
        "meta",
        &g.url("/m"),
        "--jobs",
        "2",
        "--depth",
        "1",
        "--branch",
        "2",
        "--files",
        "5",
        "--shared",
        "--json",
        json.to_str().unwrap(),
    ]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}\n{}", g.log());
    let got = counts(&read_json(&json));
    let dirs = [("mkdir", 3), ("dirstat", 3), ("rmdir", 3)];
    let files = ["create", "stat", "open", "rename", "delete"].map(|p| (p, 2 * 3 * 5));
    for (phase, n) in dirs.into_iter().chain(files) {
        assert_eq!(got.get(phase), Some(&(n, 0)), "{phase}: {got:?}\n{said}");
    }
    assert_eq!(walk(&g.export), before, "the export is as it was\n{said}");

    // Files with bytes (`--file-size`): each create one CREATE and one WRITE to the handle it
    // returned, timed as one operation with its bytes, each read a LOOKUP and one READ, as
    // ganesha counts them; mdtest's defaults beside them, and nothing left.
    let c0 = g.v3_op_counts().unwrap();
    let (r0, w0) = g.v3_io_ops().unwrap();
    let out = Bin(BIN).run(&[
        "meta",
        &g.url("/m"),
        "--jobs",
        "2",
        "--files",
        "50",
        "--file-size",
        "8k",
        "--json",
        json.to_str().unwrap(),
    ]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}\n{}", g.log());
    let doc = read_json(&json);
    let got = counts(&doc);
    for phase in ["create", "stat", "open", "read", "rename", "delete"] {
        assert_eq!(got.get(phase), Some(&(100, 0)), "{phase}: {got:?}\n{said}");
    }
    let bytes = |phase: &str| {
        stormark_testkit::phase(&doc, phase)["by_op"][phase]["bytes"]
            .as_u64()
            .unwrap_or(0)
    };
    assert_eq!(bytes("create"), 100 * 8192, "{said}");
    assert_eq!(bytes("read"), 100 * 8192, "{said}");
    let (c1, (r1, w1)) = (g.v3_op_counts().unwrap(), g.v3_io_ops().unwrap());
    assert_eq!(served(&c0, &c1, "CREATE"), 100, "{c0:?}\n{c1:?}");
    assert_eq!((r1 - r0, w1 - w0), (100, 100), "READs and WRITEs");
    assert_eq!(walk(&g.export), before, "the export is as it was\n{said}");
}

/// Two agents in network namespaces load one export, ganesha in a third: each host's tree in
/// its own run directory (or, with `--shared`, one tree for both), over its workers' own
/// connections; every phase is the exact sum of the hosts', ganesha served exactly the creates
/// and removes counted, and nothing is left.
#[test]
fn meta_over_nfs_from_two_agents_merged_exactly() {
    let test = "meta_over_nfs_from_two_agents_merged_exactly";
    if !Ganesha::available(test) {
        return;
    }
    let mut net = stormark_testkit::NetCluster::new(3).expect("creating the namespaces");
    let g = Ganesha::start_in(TMP, &net.namespaces[2].clone(), &net.addresses[2].clone())
        .expect("ganesha starts");
    std::fs::create_dir(g.export.join("m")).unwrap();
    std::fs::write(g.export.join("m/theirs"), b"keep").unwrap();
    let before = walk(&g.export);
    let dir = temp_dir(TMP);
    let token = dir.path().join("token");
    std::fs::write(&token, "nfs-meta-test-token-0123456789\n").unwrap();
    let url = g.url("/m");
    let own = |i: usize| {
        let d = dir.path().join(format!("host{i}"));
        std::fs::create_dir_all(&d).unwrap();
        d
    };
    let list = net.start_agents_on(
        2,
        BIN,
        &token,
        dir.path(),
        &own,
        &["--allow-nfs", &url],
        &[],
    );
    let json = dir.path().join("m.json");
    for shared in [false, true] {
        let c0 = g.v3_op_counts().unwrap();
        let mut args = vec![
            "meta",
            &url,
            "--agents",
            &list,
            "--token-file",
            token.to_str().unwrap(),
            "--jobs",
            "2",
            "--files",
            "50",
            "--ops",
            "create,stat,delete",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ];
        if shared {
            args.push("--shared");
        }
        let out = Bin(BIN).run(&args);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(0), "shared {shared}: {said}");
        let doc = read_json(&json);
        for p in doc["phases"].as_array().unwrap() {
            let name = p["name"].as_str().unwrap();
            let total = p["by_op"][name]["ops"].as_u64().unwrap();
            let hosts = p["by_host"].as_object().unwrap();
            assert_eq!(hosts.len(), 2, "{name}: {p}");
            let sum: u64 = hosts
                .values()
                .map(|h| h["by_op"][name]["ops"].as_u64().unwrap_or(0))
                .sum();
            assert_eq!((total, sum), (200, 200), "shared {shared}, {name}: {said}");
        }
        let c1 = g.v3_op_counts().unwrap();
        assert_eq!(served(&c0, &c1, "CREATE"), 200, "{c0:?}\n{c1:?}");
        assert_eq!(served(&c0, &c1, "REMOVE"), 200, "{c0:?}\n{c1:?}");
        if !shared {
            // Each host: its run directory, the job's, its 2 workers' and their trees'.
            let made = (served(&c0, &c1, "MKDIR"), served(&c0, &c1, "RMDIR"));
            assert_eq!(made, (12, 12), "{c0:?}\n{c1:?}");
        }
        assert_eq!(walk(&g.export), before, "shared {shared}: {said}");
    }
}

/// A neighbour on the export swaps the run directory mid-run for one of its own holding files
/// and a link under the tree's names: the run goes on in its own directory, held by handle
/// (moved away, it is still the run's), every call counted without an error; the neighbour's
/// directory and root's file stay byte for byte, and the run removes only what it made.
#[test]
fn a_neighbour_swapping_the_meta_run_directory_gets_nothing_used_or_removed() {
    let Some(g) = Ganesha::for_test(
        TMP,
        "a_neighbour_swapping_the_meta_run_directory_gets_nothing_used_or_removed",
    ) else {
        return;
    };
    let important = g.export.join("important.db");
    std::fs::write(&important, b"root's data, not to be touched").unwrap();
    std::fs::create_dir(g.export.join("m")).unwrap();
    let dir = temp_dir(TMP);
    let json = dir.path().join("m.json");
    let run = std::process::Command::new(BIN)
        .args(["meta", &g.url("/m"), "--jobs", "1", "--files", "5000"])
        .args(["--ops", "create,stat,delete", "-q", "--json"])
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Waits for the creates in the run's tree: `stormark-*/meta-JOB/w0/d0`.
    let started = std::time::Instant::now();
    let (run_name, job_dir) = loop {
        let found = std::fs::read_dir(g.export.join("m"))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("stormark-"))
            .find_map(|run| {
                let job = std::fs::read_dir(run.path()).ok()?.flatten().next()?;
                let d0 = job.path().join("w0/d0");
                (std::fs::read_dir(&d0).ok()?.count() >= 50).then(|| {
                    (
                        run.file_name().to_string_lossy().into_owned(),
                        job.file_name().to_string_lossy().into_owned(),
                    )
                })
            });
        if let Some(f) = found {
            break f;
        }
        assert!(started.elapsed().as_secs() < 60, "no creates seen");
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let url = stormark_nfs::Url::parse(&g.url("/m")).unwrap();
    let mut neighbour = stormark_nfs::Client::connect(&url, 1).unwrap();
    let planted = format!(".theirs/{job_dir}/w0/d0");
    for d in [
        ".theirs".to_string(),
        format!(".theirs/{job_dir}"),
        format!(".theirs/{job_dir}/w0"),
        planted.clone(),
    ] {
        neighbour.mkdir(&d).unwrap();
    }
    neighbour
        .create(&format!("{planted}/f0.4000"), 4096)
        .unwrap();
    neighbour
        .symlink("../../../../../important.db", &format!("{planted}/f0.4001"))
        .unwrap();
    neighbour.rename(&run_name, ".moved").unwrap();
    neighbour.rename(".theirs", &run_name).unwrap();
    let theirs = walk(&g.export.join("m").join(&run_name));
    let out = run.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        std::fs::read(&important).unwrap(),
        b"root's data, not to be touched",
        "{said}"
    );
    assert_eq!(walk(&g.export.join("m").join(&run_name)), theirs, "{said}");
    let doc = read_json(&json);
    let got = counts(&doc);
    for phase in ["create", "stat", "delete"] {
        assert_eq!(got.get(phase), Some(&(5000, 0)), "{phase}: {got:?}\n{said}");
    }
    // The run's own directory, moved away, is empty: its tree was removed by handle; the
    // name the neighbour took over is left, and the notes say so.
    assert_eq!(
        walk(&g.export.join("m/.moved")),
        Vec::<String>::new(),
        "{said}"
    );
    assert!(doc.to_string().contains("no longer the directory"), "{doc}");
}
