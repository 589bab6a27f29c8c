//! Issue 21: `stormark meta`, metadata load as mdtest makes it. It counts the operations it
//! claims, removes its tree and nothing else, stops cleanly on Ctrl-C, and refuses mistakes
//! before it makes anything.

use std::process::{Command, Stdio};
use std::time::Duration;

use stormark_testkit::{read_json, temp_dir, text, Bin};

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
        (vec![d, "--ops", "read"], "--file-size above 0"),
        (vec![d, "--file-size", "2g"], "from 0 to 1g"),
        (
            vec![d, "--jobs", "4096", "--dirs", "1000", "--files", "1000"],
            "at most",
        ),
        (vec![missing.to_str().unwrap()], "existing directory"),
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
