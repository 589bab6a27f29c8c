//! Issue 53: a meta agent SIGKILLed in the middle of a phase leaves thousands of files; its
//! next start (the same `--state-dir`) removes them from its journal, and with `--shared` the
//! host still alive, or the last of the dead ones to restart, removes the shared tree. The
//! target directory afterwards holds exactly what it held before: names, types and sizes.
//! What the run did not make (a planted file in the tree, a directory named as a shared tree
//! of another run) stays.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use stormark_testkit::{require_netns, temp_dir, NetCluster};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

/// Every entry beneath `dir`: its relative path, its type and, for a file, its size (a
/// directory's own size is the filesystem's business), for a link, where it points.
fn snapshot(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.is_symlink() {
                out.push(format!(
                    "{rel} -> {}",
                    std::fs::read_link(&p).unwrap().display()
                ));
            } else if m.is_dir() {
                out.push(format!("{rel}/"));
                todo.push(p);
            } else {
                out.push(format!("{rel} {}", m.len()));
            }
        }
    }
    out.sort();
    out
}

/// What the target holds before any run: a file, a directory, a link, and a directory named
/// as another run's shared tree, holding a file named as a tree's.
fn plant(target: &Path) {
    std::fs::write(target.join("theirs"), b"keep").unwrap();
    std::fs::create_dir(target.join("their-dir")).unwrap();
    std::os::unix::fs::symlink("/etc", target.join("their-link")).unwrap();
    let other = target.join("stormark-shared-20260101-000000-0123456789ab-meta");
    std::fs::create_dir_all(other.join("d0")).unwrap();
    std::fs::write(other.join("d0/f0.0"), b"not this run's").unwrap();
}

/// `stormark meta TARGET` over `agents`, running until killed: 2 workers a host, 100,000
/// files each in the first directory, so that a kill finds it creating.
fn start_meta(target: &Path, agents: &str, token: &Path, shared: bool) -> Child {
    let mut args = vec![
        "meta",
        target.to_str().unwrap(),
        "--agents",
        agents,
        "--token-file",
        token.to_str().unwrap(),
        "--jobs",
        "2",
        "--dirs",
        "2",
        "--files",
        "100000",
        "--ops",
        "create,stat",
        "-q",
    ];
    if shared {
        args.push("--shared");
    }
    Command::new(BIN)
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits (at most 60 s, a loaded machine) until `count` says enough is made.
fn wait_for(what: &str, count: impl Fn() -> usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while count() < 2000 {
        assert!(Instant::now() < deadline, "{what}: {} made", count());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Entries of `dir` whose name starts with `prefix` (0 while it is not there).
fn count(dir: &Path, prefix: &str) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| {
        d.filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().starts_with(prefix))
        })
        .count()
    })
}

/// The one entry of `dir` whose name starts with `prefix` and is not `not`.
fn find(dir: &Path, prefix: &str, not: &str) -> Option<PathBuf> {
    std::fs::read_dir(dir).unwrap().find_map(|e| {
        let e = e.ok()?;
        let n = e.file_name().to_string_lossy().into_owned();
        (n.starts_with(prefix) && n != not).then(|| e.path())
    })
}

fn log(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_default()
}

const OTHER_RUN: &str = "stormark-shared-20260101-000000-0123456789ab-meta";

#[test]
fn a_killed_meta_agents_tree_is_removed_at_its_next_start() {
    let test = "a_killed_meta_agents_tree_is_removed_at_its_next_start";
    if !require_netns(test) {
        return;
    }
    let mut c = NetCluster::new(1).expect("namespaces");
    let dir = temp_dir(TMP);
    let target = dir.path().join("t");
    std::fs::create_dir(&target).unwrap();
    plant(&target);
    let before = snapshot(&target);
    let token = dir.path().join("token");
    std::fs::write(&token, "meta-crash-test-token-0123456789\n").unwrap();
    let list = c.start_agents(BIN, &token, dir.path(), &|_| target.clone());
    let mut run = start_meta(&target, &list, &token, false);
    wait_for("worker 0's files", || {
        find(&target, "stormark-", OTHER_RUN)
            .map_or(0, |r| count(&r.join("meta-meta/w0/d0"), "f0."))
    });
    // SIGKILL in the middle of the create phase: no cleanup runs.
    c.kill_agent(0).unwrap();
    let _ = run.wait();
    let left = snapshot(&target);
    assert!(left.len() > before.len() + 2000, "{} entries", left.len());
    c.restart_agent(0, &dir.path().join("again.log")).unwrap();
    let said = log(dir.path(), "again.log");
    assert_eq!(snapshot(&target), before, "{said}");
    assert!(
        said.contains("meta-meta") && said.contains("files)"),
        "{said}"
    );
    assert!(!said.contains("could not"), "{said}");
}

#[test]
fn a_killed_meta_agents_shared_files_are_removed_and_the_last_out_removes_the_tree() {
    let test = "a_killed_meta_agents_shared_files_are_removed_and_the_last_out_removes_the_tree";
    if !require_netns(test) {
        return;
    }
    let mut c = NetCluster::new(2).expect("namespaces");
    let dir = temp_dir(TMP);
    let target = dir.path().join("t");
    std::fs::create_dir(&target).unwrap();
    plant(&target);
    let before = snapshot(&target);
    let token = dir.path().join("token");
    std::fs::write(&token, "meta-crash-test-token-0123456789\n").unwrap();
    let list = c.start_agents(BIN, &token, dir.path(), &|_| target.clone());
    // Host 0 holds workers 0 and 1, host 1 workers 2 and 3: each host's files by their names.
    let both_creating = || {
        let Some(t) = find(&target, "stormark-shared-", OTHER_RUN) else {
            return 0;
        };
        count(&t.join("d0"), "f0.").min(count(&t.join("d0"), "f2."))
    };

    // One host killed: the other, stopped by the coordinator, removes its own files and the
    // dead host's, then the tree; the dead host's next start removes its run directory.
    let mut run = start_meta(&target, &list, &token, true);
    wait_for("both hosts' files", both_creating);
    c.kill_agent(1).unwrap();
    let _ = run.wait();
    assert_eq!(
        find(&target, "stormark-shared-", OTHER_RUN),
        None,
        "removed by the host still alive"
    );
    c.restart_agent(1, &dir.path().join("again1.log")).unwrap();
    let said = log(dir.path(), "again1.log");
    assert_eq!(snapshot(&target), before, "{said}");

    // Both killed (the coordinator stopped first, so that neither is told to clean up): each
    // restart removes its own files; the last removes the directories, all but one holding
    // a file planted there, which stays with the tree's directory.
    let mut run = start_meta(&target, &list, &token, true);
    wait_for("both hosts' files", both_creating);
    // SAFETY: the coordinator's pid, a child of this test not yet waited for.
    unsafe { libc::kill(run.id() as i32, libc::SIGSTOP) };
    c.kill_agent(0).unwrap();
    c.kill_agent(1).unwrap();
    let _ = run.kill();
    let _ = run.wait();
    let tree = find(&target, "stormark-shared-", OTHER_RUN).expect("the shared tree is left");
    let name = tree.file_name().unwrap().to_string_lossy().into_owned();
    std::fs::write(tree.join("d0/planted"), b"someone's").unwrap();
    c.restart_agent(0, &dir.path().join("again0.log")).unwrap();
    let said = log(dir.path(), "again0.log");
    assert_eq!(count(&tree.join("d0"), "f0."), 0, "{said}");
    assert_eq!(count(&tree.join("d0"), "f1."), 0, "{said}");
    assert!(count(&tree.join("d0"), "f2.") > 0, "{said}");
    assert!(
        said.contains("files of other hosts are in it still"),
        "{said}"
    );
    c.restart_agent(1, &dir.path().join("again1.log")).unwrap();
    let said = log(dir.path(), "again1.log");
    let mut want = before.clone();
    want.extend([
        format!("{name}/"),
        format!("{name}/d0/"),
        format!("{name}/d0/planted 9"),
    ]);
    want.sort();
    assert_eq!(snapshot(&target), want, "{said}");
    assert!(
        said.contains("holds entries the run did not make"),
        "{said}"
    );
}
