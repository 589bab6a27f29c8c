//! Issue 21: `stormark meta`, metadata load as mdtest makes it. It counts the operations it
//! claims, removes its tree and nothing else, stops cleanly on Ctrl-C, and refuses mistakes
//! before it makes anything. Issue 29: on the one road, so over agents (two hosts in network
//! namespaces on one shared directory), with mdtest's tree, a shared tree, and a meta job
//! beside a file job in one stage.

use std::process::{Command, Stdio};
use std::time::Duration;

use stormark_testkit::{read_json, require_netns, temp_dir, text, Bin, NetCluster};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn every_operation_is_counted_and_only_the_tree_is_removed() {
    for shared in [false, true] {
        let dir = temp_dir(TMP);
        let target = dir.path().join("t");
        std::fs::create_dir(&target).unwrap();
        // What was there before is left as it was, a link included.
        std::fs::write(target.join("theirs"), b"keep").unwrap();
        std::fs::create_dir(target.join("their-dir")).unwrap();
        std::os::unix::fs::symlink("/etc", target.join("their-link")).unwrap();
        let json = dir.path().join("m.json");
        let mut args = vec![
            "meta",
            target.to_str().unwrap(),
            "--jobs",
            "3",
            "--dirs",
            "4",
            "--files",
            "50",
            "--file-size",
            "4k",
            "--ops",
            "rmdir,mkdir,create,write,stat,open,read,rename,delete",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ];
        if shared {
            args.push("--shared");
        }
        let out = Bin(BIN).run(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let doc = read_json(&json);
        assert_eq!(doc["status"], "ok");
        let phases = doc["phases"].as_array().unwrap();
        // In mdtest's order, whatever the order given.
        let order: Vec<&str> = phases.iter().map(|p| p["name"].as_str().unwrap()).collect();
        assert_eq!(
            order,
            ["mkdir", "create", "write", "stat", "open", "read", "rename", "delete", "rmdir"]
        );
        for p in phases {
            let op = p["name"].as_str().unwrap();
            let want = match op {
                "mkdir" | "rmdir" if shared => 4,
                "mkdir" | "rmdir" => 12,
                _ => 3 * 4 * 50,
            };
            let s = &p["by_op"][op];
            assert_eq!(s["ops"].as_u64(), Some(want), "{op}: {s}");
            assert_eq!(s["errors"].as_u64(), Some(0), "{op}: {s}");
            assert!(s["iops"].as_f64().unwrap() > 0.0, "{op}");
            assert!(s["latency_ns"]["p50"].as_u64().unwrap() > 0, "{op}");
            let bytes = if matches!(op, "write" | "read") {
                want * 4096
            } else {
                0
            };
            assert_eq!(s["bytes"].as_u64(), Some(bytes), "{op}");
        }
        assert_eq!(names(&target), ["their-dir", "their-link", "theirs"]);
        assert_eq!(std::fs::read(target.join("theirs")).unwrap(), b"keep");
    }
}

#[test]
fn operations_not_asked_for_are_made_and_removed_untimed() {
    let dir = temp_dir(TMP);
    let json = dir.path().join("m.json");
    let t = dir.path().join("t");
    std::fs::create_dir(&t).unwrap();
    let out = Bin(BIN).run(&[
        "meta",
        t.to_str().unwrap(),
        "--files",
        "100",
        "--ops",
        "stat",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc = read_json(&json);
    let phases = doc["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 1);
    assert_eq!(phases[0]["by_op"]["stat"]["ops"].as_u64(), Some(100));
    assert!(names(&t).is_empty());
}

#[test]
fn ctrl_c_stops_the_operation_writes_the_results_and_removes_the_tree() {
    let dir = temp_dir(TMP);
    let t = dir.path().join("t");
    std::fs::create_dir(&t).unwrap();
    let json = dir.path().join("m.json");
    let child = Command::new(BIN)
        .args([
            "meta",
            t.to_str().unwrap(),
            "--jobs",
            "2",
            "--files",
            "2000000",
            "--ops",
            "create,stat,delete",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: the child's pid, still running (2 million creates take far longer).
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let doc = read_json(&json);
    assert_eq!(doc["status"], "interrupted");
    let created = doc["phases"][0]["by_op"]["create"]["ops"].as_u64().unwrap();
    assert!(created > 0 && created < 4_000_000, "{created}");
    assert!(names(&t).is_empty(), "{:?}", names(&t));
}

#[test]
fn meta_mistakes_are_one_line_and_exit_2() {
    let dir = temp_dir(TMP);
    let d = dir.path().to_str().unwrap();
    let missing = dir.path().join("missing");
    for (args, want) in [
        (vec![d, "--ops", "create,list"], "is not one of mkdir"),
        (vec![d, "--jobs", "0"], "from 1 to 4096"),
        (vec![d, "--files", "x"], "a whole number"),
        (vec![d, "--ops", "write"], "--file-size above 0"),
        (vec![d, "--file-size", "2g"], "from 0 to 1g"),
        (
            vec![d, "--jobs", "4096", "--dirs", "1000", "--files", "1000"],
            "at most",
        ),
        (vec![missing.to_str().unwrap()], "existing directory"),
        (
            vec![d, "--target-latency", "p99<=1ms"],
            "a metadata run goes through its tree",
        ),
        (vec![d, "--depth", "2"], "--branch"),
        (
            vec![d, "--depth", "2", "--branch", "2", "--dirs", "3"],
            "not both",
        ),
    ] {
        let mut all = vec!["meta"];
        all.extend(args.iter());
        let out = Bin(BIN).run(&all);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(said.contains(want), "{args:?}: {said}");
        assert_eq!(said.trim().lines().count(), 1, "{args:?}: {said}");
    }
    // Nothing was made.
    assert!(names(dir.path()).is_empty());
}

/// Operations of each phase of a document: (phase, op, ops, errors), and the hosts of each.
fn counts(doc: &serde_json::Value) -> Vec<(String, u64, u64, usize)> {
    doc["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let name = p["name"].as_str().unwrap().to_string();
            let op = &p["by_op"][name.as_str()];
            (
                name,
                op["ops"].as_u64().unwrap_or(0),
                op["errors"].as_u64().unwrap_or(0),
                p["by_host"].as_object().map_or(0, |h| h.len()),
            )
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

#[test]
fn meta_over_two_agents_on_a_shared_directory() {
    if !require_netns("meta_over_two_agents_on_a_shared_directory") {
        return;
    }
    let mut c = NetCluster::new(2).expect("namespaces");
    let dir = temp_dir(TMP);
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::write(shared.join("theirs"), b"keep").unwrap();
    std::fs::create_dir(shared.join("their-dir")).unwrap();
    let before = walk(&shared);
    let token = dir.path().join("token");
    std::fs::write(&token, "meta-test-token-0123456789\n").unwrap();
    let list = c.start_agents(BIN, &token, dir.path(), &|_| shared.clone());
    let json = dir.path().join("m.json");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "meta",
            shared.to_str().unwrap(),
            "--agents",
            &list,
            "--token-file",
            token.to_str().unwrap(),
            "-q",
            "--json",
            json.to_str().unwrap(),
        ];
        args.extend(extra);
        let out = Bin(BIN).run(&args);
        assert_eq!(out.status.code(), Some(0), "{extra:?}: {}", text(&out));
        read_json(&json)
    };

    // Each host's tree apart: 2 hosts x 2 workers x 200 files.
    let doc = run(&["--jobs", "2", "--files", "200"]);
    assert_eq!(doc["status"], "ok");
    assert_eq!(
        doc["hosts"].as_array().unwrap().len(),
        2,
        "{}",
        doc["hosts"]
    );
    let got = counts(&doc);
    for (phase, want) in [("create", 800), ("stat", 800), ("delete", 800)] {
        let (_, ops, errors, hosts) = got.iter().find(|(p, ..)| p == phase).unwrap();
        assert_eq!((*ops, *errors, *hosts), (want, 0, 2), "{phase}: {got:?}");
    }
    assert_eq!(walk(&shared), before);

    // mdtest's tree: 13 directories per worker (-z 2 -b 3), made and removed.
    let doc = run(&[
        "--jobs", "2", "--depth", "2", "--branch", "3", "--files", "4",
    ]);
    let got = counts(&doc);
    for (phase, want) in [
        ("mkdir", 4 * 13),
        ("dirstat", 4 * 13),
        ("create", 4 * 13 * 4),
        ("rmdir", 4 * 13),
    ] {
        let (_, ops, errors, _) = got.iter().find(|(p, ..)| p == phase).unwrap();
        assert_eq!((*ops, *errors), (want, 0), "{phase}: {got:?}");
    }
    assert_eq!(walk(&shared), before);

    // Kept, each worker's tree is its own, in its host's run directory: w0, w1 on one host,
    // w2, w3 on the other.
    run(&[
        "--jobs", "2", "--depth", "1", "--branch", "2", "--files", "3", "--ops", "create", "--keep",
    ]);
    let kept: Vec<String> = walk(&shared)
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    let tops: Vec<&String> = kept
        .iter()
        .filter(|p| p.ends_with("/meta-meta/w0") || p.ends_with("/meta-meta/w3"))
        .collect();
    assert_eq!(tops.len(), 2, "{kept:?}");
    assert!(
        kept.iter().any(|p| p.ends_with("/w3/d0/d2/f3.2")),
        "{kept:?}"
    );
    for p in std::fs::read_dir(&shared).unwrap() {
        let p = p.unwrap().path();
        if p.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("stormark-")
        {
            std::fs::remove_dir_all(p).unwrap();
        }
    }
    assert_eq!(walk(&shared), before);

    // --shared: every host's workers in one tree beside the run directories.
    run(&[
        "--jobs",
        "2",
        "--shared",
        "--dirs",
        "3",
        "--files",
        "5",
        "--ops",
        "create,stat",
        "--keep",
    ]);
    let kept: Vec<String> = walk(&shared)
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    let one: Vec<&String> = kept
        .iter()
        .filter(|p| p.starts_with("stormark-shared-") && p.contains("/d1/f"))
        .collect();
    // 4 workers of 2 hosts, 5 files each, in the same directory.
    assert_eq!(one.len(), 20, "{kept:?}");
    for w in 0..4 {
        assert!(
            one.iter().any(|p| p.ends_with(&format!("/d1/f{w}.4"))),
            "{one:?}"
        );
    }
    for p in std::fs::read_dir(&shared).unwrap() {
        let p = p.unwrap().path();
        if p.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("stormark-")
        {
            std::fs::remove_dir_all(p).unwrap();
        }
    }
    // And without --keep, removed whole whichever host cleans up last.
    let doc = run(&["--jobs", "2", "--shared", "--dirs", "3", "--files", "50"]);
    let got = counts(&doc);
    for (phase, want) in [
        ("mkdir", 3),
        ("create", 4 * 3 * 50),
        ("delete", 600),
        ("rmdir", 3),
    ] {
        let (_, ops, errors, _) = got.iter().find(|(p, ..)| p == phase).unwrap();
        assert_eq!((*ops, *errors), (want, 0), "{phase}: {got:?}");
    }
    assert_eq!(walk(&shared), before);

    // A meta job beside a file job in one stage: a metadata storm while data flows.
    let jobs = dir.path().join("both.toml");
    std::fs::write(
        &jobs,
        "time = \"3s\"\n\n\
         [[job]]\nname = \"disk\"\ngroup = \"together\"\nrw = \"randwrite\"\nbs = \"4k\"\nsize = \"8m\"\n\n\
         [[job]]\nname = \"storm\"\ngroup = \"together\"\nkind = \"meta\"\njobs = 2\nfiles = 100\nmeta_ops = \"create,stat,delete\"\n",
    )
    .unwrap();
    let out = Bin(BIN).run(&[
        "run",
        "--job",
        jobs.to_str().unwrap(),
        shared.to_str().unwrap(),
        "--agents",
        &list,
        "--token-file",
        token.to_str().unwrap(),
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc = read_json(&json);
    let phases = doc["phases"].as_array().unwrap();
    let run_phase = phases.iter().find(|p| p["name"] == "run").unwrap();
    let names: Vec<&str> = run_phase["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["disk", "storm"]);
    for op in ["write", "create", "stat", "delete"] {
        let s = &run_phase["by_op"][op];
        assert!(s["ops"].as_u64().unwrap() > 0, "{op}: {s}");
        assert_eq!(s["errors"].as_u64(), Some(0), "{op}: {s}");
    }
    // Again and again for the stage's time: more than one pass of 2 x 2 x 100 files.
    assert!(
        run_phase["by_op"]["create"]["ops"].as_u64().unwrap() >= 400,
        "{}",
        run_phase["by_op"]["create"]
    );
    assert_eq!(run_phase["by_host"].as_object().unwrap().len(), 2);
    assert_eq!(walk(&shared), before);
}
