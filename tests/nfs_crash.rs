//! Issue 52: an agent killed mid-run on an NFS share, and started again with the same state
//! directory, against a real server (nfs-ganesha) and a neighbour on the export (a second
//! libnfs client acting as an unprivileged user): what the run made and can still identify is
//! removed, by its file handle and identity; nothing it did not make is touched.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use stormark_testkit::{temp_dir, Ganesha, TempDir};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

/// The neighbour's user and group: `nobody`, as an NFS server squashes unknown users to.
const NOBODY: u32 = 65534;

/// Every entry beneath `dir`: a file's bytes, a link's target (never followed), a directory
/// as `dir/`; with owners.
fn snapshot(dir: &Path) -> BTreeMap<String, (u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let name = p.strip_prefix(dir).unwrap().display().to_string();
            let what = if m.file_type().is_symlink() {
                let to = std::fs::read_link(&p).unwrap();
                format!("-> {}", to.display()).into_bytes()
            } else if m.is_dir() {
                todo.push(p);
                b"dir/".to_vec()
            } else {
                std::fs::read(&p).unwrap()
            };
            out.insert(name, (m.uid(), what));
        }
    }
    out
}

/// What `found` finds, asked every 10 ms for at most a minute (`what` when it never does).
fn wait_for<T>(what: &str, mut found: impl FnMut() -> Option<T>) -> T {
    let started = std::time::Instant::now();
    loop {
        if let Some(t) = found() {
            return t;
        }
        assert!(started.elapsed().as_secs() < 60, "{what}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// One agent on this host allowed `share`, its state in `dir/state`, restarted as it was.
struct Agent {
    dir: TempDir,
    token: PathBuf,
    listen: String,
    share: String,
}

impl Agent {
    fn new(share: &str) -> Agent {
        let dir = temp_dir(TMP);
        let token = dir.path().join("token");
        std::fs::write(&token, "nfs-crash-test-token-0123456789\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
        Agent {
            token,
            listen: stormark_testkit::free_addr(),
            share: share.to_string(),
            dir,
        }
    }

    /// Started, listening.
    fn start(&self) -> Child {
        let child = Command::new(BIN)
            .args(["agent", "--listen", &self.listen, "--token-file"])
            .arg(&self.token)
            .arg("--allow-path")
            .arg(self.dir.path())
            .arg("--state-dir")
            .arg(self.dir.path().join("state"))
            .args(["--allow-nfs", &self.share])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        stormark_testkit::wait_listening(&self.listen, "the agent");
        child
    }

    /// `stormark ARGS --agents THIS`, in the background.
    fn run(&self, args: &[&str]) -> Child {
        Command::new(BIN)
            .args(args)
            .args(["--agents", &self.listen, "--token-file"])
            .arg(&self.token)
            .arg("-q")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }

    /// Started again with the same state directory, which it recovers before it listens;
    /// then stopped. What it said.
    fn recover(&self) -> String {
        let mut again = self.start();
        again.kill().unwrap();
        let out = again.wait_with_output().unwrap();
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

/// SIGKILLed, as a crash: nothing of it runs after.
fn crash(mut child: Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

/// A neighbour on the export (uid 65534, the export mode 777 as group shares often are) swaps
/// the run directory of a two-stage job, during its first stage, for a directory of links to a
/// file of root's (`j0.w0.f0 -> ../important.db`), then for a plain directory of its own files;
/// the agent is killed right after, and started again with its state directory. Root's file
/// and the neighbour's stay byte for byte as they were, nothing under the run directory's name
/// is touched, and the run's own files, in its directory moved away, are removed by its handle
/// (the directory, whose new name stormark cannot know, is left and said).
#[test]
fn a_killed_agent_after_a_neighbours_swap_removes_only_what_the_run_made() {
    let Some(g) = Ganesha::for_test(
        TMP,
        "a_killed_agent_after_a_neighbours_swap_removes_only_what_the_run_made",
    ) else {
        return;
    };
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&g.export, std::fs::Permissions::from_mode(0o777)).unwrap();
    let important = g.export.join("important.db");
    std::fs::write(&important, b"root's data, not to be touched").unwrap();
    std::fs::set_permissions(&important, std::fs::Permissions::from_mode(0o644)).unwrap();
    let url = stormark_nfs::Url::parse(&g.url("")).unwrap();
    for links in [true, false] {
        let agent = Agent::new(&g.url(""));
        let first = agent.start();
        let job = agent.dir.path().join("two.fio");
        std::fs::write(
            &job,
            "[global]\nrw=write\nbs=64k\nsize=1m\ntime_based\nruntime=60\n[a]\n[b]\nstonewall\n",
        )
        .unwrap();
        let run = agent.run(&["run", &g.url(""), "--job", job.to_str().unwrap()]);
        // The first stage's writes in the run directory, then the swap, through NFS.
        let made = wait_for("the first stage wrote nothing", || {
            std::fs::read_dir(&g.export)
                .unwrap()
                .flatten()
                .filter(|d| d.file_name().to_string_lossy().starts_with("stormark-"))
                .find(|d| {
                    let f = d.path().join("j0.w0.f0");
                    std::fs::metadata(f).is_ok_and(|m| m.blocks() > 0)
                })
                .map(|d| d.file_name().to_string_lossy().into_owned())
        });
        let mut neighbour = stormark_nfs::Client::connect(&url, 1).unwrap();
        neighbour.act_as(NOBODY, NOBODY);
        neighbour.mkdir(".theirs").unwrap();
        for name in ["j0.w0.f0", "j1.w0.f0"] {
            let rel = format!(".theirs/{name}");
            if links {
                neighbour.symlink("../important.db", &rel).unwrap();
            } else {
                neighbour.create(&rel, 4096).unwrap();
            }
        }
        neighbour.rename(&made, ".moved").unwrap();
        neighbour.rename(".theirs", &made).unwrap();
        crash(first);
        crash(run);
        // The neighbour is who the server took it for: it owns what it made.
        let theirs = g.export.join(&made);
        assert_eq!(std::fs::metadata(&theirs).unwrap().uid(), NOBODY);
        let moved = g.export.join(".moved");
        let mut before = snapshot(&g.export);
        let ours: Vec<String> = before
            .keys()
            .filter(|k| k.starts_with(".moved/"))
            .cloned()
            .collect();
        // The run's files (both stages use the first one's), moved away with its directory.
        assert_eq!(ours, [".moved/j0.w0.f0"]);
        for k in &ours {
            before.remove(k);
        }

        let said = agent.recover();
        assert_eq!(
            std::fs::read(&important).unwrap(),
            b"root's data, not to be touched",
            "links {links}: {said}"
        );
        // Everything but the run's own files is as it was: the neighbour's directory under
        // the run's name, root's file, the run's directory moved away (left, empty).
        assert_eq!(snapshot(&g.export), before, "links {links}: {said}");
        assert_eq!(std::fs::read_dir(&moved).unwrap().count(), 0, "{said}");
        assert!(
            said.contains(&format!(
                "left {}/{made}: no longer the directory",
                g.url("")
            )),
            "links {links}: {said}"
        );
        assert!(
            said.contains("had 1 of its files removed by its handle"),
            "links {links}: {said}"
        );
        std::fs::remove_dir_all(&theirs).unwrap();
        std::fs::remove_dir(&moved).unwrap();
    }
}

/// Every entry beneath `dir`, as relative paths, sorted.
fn walk(dir: &Path) -> Vec<String> {
    snapshot(dir).into_keys().collect()
}

/// An agent running a metadata job on a share is killed in the middle of its creates and
/// started again with its state directory: the share's tree and run directory, journaled by
/// identity before they were made, are removed over NFS by handle; the export lists exactly
/// what it listed before, a planted file and directory among it.
#[test]
fn a_killed_agents_meta_tree_on_a_share_is_removed_at_its_next_start() {
    let Some(g) = Ganesha::for_test(
        TMP,
        "a_killed_agents_meta_tree_on_a_share_is_removed_at_its_next_start",
    ) else {
        return;
    };
    std::fs::create_dir_all(g.export.join("m/their-dir")).unwrap();
    std::fs::write(g.export.join("m/theirs"), b"not stormark's").unwrap();
    let before = snapshot(&g.export);
    let share = g.url("/m");
    let agent = Agent::new(&share);
    let first = agent.start();
    let run = agent.run(&[
        "meta",
        &share,
        "--jobs",
        "2",
        "--files",
        "20000",
        "--ops",
        "create,stat,delete",
    ]);
    // Killed once each worker's tree holds creates: `stormark-*/meta-JOB/wN/d0`.
    let run_dir = wait_for("no creates seen", || {
        std::fs::read_dir(g.export.join("m"))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("stormark-"))
            .find(|run| {
                let job = std::fs::read_dir(run.path())
                    .ok()
                    .and_then(|mut d| d.next());
                job.and_then(|j| j.ok()).is_some_and(|j| {
                    (0..2).all(|w| {
                        let d0 = j.path().join(format!("w{w}/d0"));
                        std::fs::read_dir(d0).is_ok_and(|d| d.count() >= 50)
                    })
                })
            })
            .map(|e| e.path())
    });
    crash(first);
    crash(run);
    assert!(walk(&run_dir).len() > 100, "the tree is there");

    let said = agent.recover();
    assert_eq!(snapshot(&g.export), before, "{said}");
    let shown = format!("{share}/{}", run_dir.file_name().unwrap().to_string_lossy());
    assert!(
        said.contains(&format!("removed {shown}/meta-")),
        "the tree: {said}"
    );
    assert!(
        said.contains(&format!("removed {shown} (0 file(s))")),
        "the run directory: {said}"
    );
}
