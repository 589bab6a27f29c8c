//! Issue 52: metadata load over NFS (`stormark meta nfs://SERVER/EXPORT/DIR`) against a real
//! server, nfs-ganesha: each create, stat and delete one RPC relative to a directory's handle,
//! counted as ganesha counts them, the tree made in the run's own directory and removed with
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

    // What is not run over NFS yet is refused in one line, before any load.
    let out = Bin(BIN).run(&["meta", &g.url("/m"), "--files", "5", "--file-size", "4k"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("not run over NFS yet"), "{said}");
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
