//! Issue 34: an NFS share measured from user space (`stormark run nfs://SERVER/EXPORT/DIR`)
//! against a real server, nfs-ganesha started here in a namespace of its own: a run directory
//! made over NFS, its files prepared, read and written at depth, counted as the server counts
//! them, and removed at the end with nothing else of the export touched; mistakes one line,
//! exit 2, before any load.

use stormark_testkit::{temp_dir, text, Bin, Ganesha};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

fn ops(r: &serde_json::Value, phase: &str, op: &str) -> u64 {
    stormark_testkit::phase(r, phase)["by_op"][op]["ops"]
        .as_u64()
        .unwrap_or(0)
}

/// The export's files and directories, with their contents, beneath `dir`.
fn tree(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.path().display().to_string();
        if e.file_type().unwrap().is_dir() {
            out.push((name.clone(), Vec::new()));
            out.extend(tree(&e.path()));
        } else {
            out.push((name, std::fs::read(e.path()).unwrap()));
        }
    }
    out.sort();
    out
}

/// The files in the run directories (`stormark-*`) on the export.
fn run_files(export: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(export)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("stormark-"))
        .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
        .map(|e| e.path())
        .collect()
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

#[test]
fn randrw_at_depth_counted_as_the_server_counts_and_nothing_left() {
    let Some(g) = Ganesha::for_test(
        TMP,
        "randrw_at_depth_counted_as_the_server_counts_and_nothing_left",
    ) else {
        return;
    };
    // Someone else's files in the export and in the directory the run uses: left as they are.
    std::fs::create_dir(g.export.join("bench")).unwrap();
    std::fs::write(g.export.join("theirs"), b"not stormark's").unwrap();
    std::fs::write(g.export.join("bench/keep.txt"), vec![7u8; 5000]).unwrap();
    let before = tree(&g.export);
    let (r0, w0) = g.v3_io_ops().expect("ganesha's statistics");
    let dir = temp_dir(TMP);
    let (code, r, out) = Bin(BIN).run_json(
        &dir,
        &[
            &g.url("/bench"),
            "--rw",
            "randrw",
            "--bs",
            "4k",
            "--iodepth",
            "8",
            "--size",
            "4m",
            "--time",
            "3s",
        ],
    );
    assert_eq!(code, 0, "{out}\n{}", g.log());
    let (reads, writes) = (ops(&r, "run", "read"), ops(&r, "run", "write"));
    assert!(reads > 100 && writes > 100, "{out}");
    let job = &stormark_testkit::phase(&r, "run")["jobs"][0];
    assert_eq!(job["engine"], "nfs", "{job}");
    assert_eq!(r["target"]["kind"], "nfs-directory", "{}", r["target"]);
    // The server's own counts: the preparation's writes (4 MiB in its blocks), then the
    // run's reads and writes, one RPC each.
    let (r1, w1) = g.v3_io_ops().unwrap();
    let prepared = ops(&r, "prepare", "write");
    assert!(prepared > 0, "{out}");
    let (served_r, served_w) = (r1 - r0, w1 - w0);
    assert_eq!(
        served_r, reads,
        "ganesha served {served_r} READs, stormark counted {reads}"
    );
    assert_eq!(
        served_w,
        writes + prepared,
        "ganesha served {served_w} WRITEs, stormark counted {writes} + {prepared} prepared"
    );
    assert_eq!(tree(&g.export), before, "the export is as it was");
}

#[test]
fn mistakes_are_one_line_and_exit_2_before_any_load() {
    let Some(g) = Ganesha::for_test(TMP, "nfs_mistakes_are_one_line_and_exit_2_before_any_load")
    else {
        return;
    };
    std::fs::write(g.export.join("afile"), b"x").unwrap();
    let before = tree(&g.export);
    for (url, why) in [
        (format!("nfs://{}/", g.host), "no export"),
        (format!("nfs://user:pw@{}/export", g.host), "credentials"),
        (format!("nfs://{}/elsewhere", g.host), "cannot mount"),
        (g.url("/missing"), "existing directory"),
        (g.url("/afile"), "not a directory"),
        (format!("nfs://{}/export?version=4", g.host), "mountport"),
    ] {
        let out = Bin(BIN).run(&["run", &url, "--rw", "randread", "--time", "1s", "-q"]);
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{url}: {}", text(&out));
        assert!(said.contains(why), "{url}: {said}");
        assert_eq!(said.trim().lines().count(), 1, "{url}: {said}");
        assert!(!said.contains("pw@"), "{said}");
    }
    let out = Bin(BIN).run(&["run", &g.url(""), "--rw", "randtrim", "--time", "1s", "-q"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(tree(&g.export), before, "the export is as it was");
    // An engine of files asked for: said, and the share measured over NFS all the same.
    let out = Bin(BIN).run(&[
        "run",
        &g.url(""),
        "--engine",
        "io_uring",
        "--rw",
        "randread",
        "--size",
        "1m",
        "--time",
        "1s",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("--engine io_uring is for files and devices"),
        "{}",
        text(&out)
    );
    assert_eq!(tree(&g.export), before, "the export is as it was");
}

/// `--verify` over NFS: random writes at depth all check out, `--fsync 8 --end-fsync` is one
/// COMMIT per 8 writes and one at the end, each timed; then a block changed on the server
/// between its write and its check is found at its offset, counted as corrupt, exit 1.
#[test]
fn verify_and_commit_over_nfs() {
    let Some(g) = Ganesha::for_test(TMP, "verify_and_commit_over_nfs") else {
        return;
    };
    let dir = temp_dir(TMP);
    let url = g.url("");
    let (code, r, out) = Bin(BIN).run_json(
        &dir,
        &[
            &url,
            "--rw",
            "randwrite",
            "--bs",
            "4k",
            "--iodepth",
            "4",
            "--size",
            "2m",
            "--time",
            "2s",
            "--verify",
            "--fsync",
            "8",
            "--end-fsync",
            "-q",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let writes = ops(&r, "run", "write");
    assert!(writes > 100, "{out}");
    assert_eq!(ops(&r, "run", "sync"), writes / 8 + 1, "{out}");
    let run = stormark_testkit::phase(&r, "run");
    assert_eq!(run["errors"].as_array().map_or(0, Vec::len), 0, "{run}");

    // Sequential writes at 200 a second: the block at 64 KiB is written in the first tenth
    // of a second, its check comes after the last write, 2.5 s in.
    let json = dir.path().join("planted.json");
    let child = std::process::Command::new(BIN)
        .args([
            "run",
            &url,
            "--rw",
            "write",
            "--bs",
            "4k",
            "--size",
            "2m",
            "--rate-iops",
            "200",
            "--verify",
            "-q",
            "--json",
        ])
        .arg(&json)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    const AT: usize = 65536;
    let file = wait_for("the run never wrote 64 KiB", || {
        run_files(&g.export).into_iter().find(|p| {
            std::fs::read(p).is_ok_and(|d| d.len() > AT + 4096 && &d[AT..AT + 8] == b"STMKVRFY")
        })
    });
    // One byte changed in place (the run goes on writing the file's other blocks meanwhile).
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&file)
        .unwrap();
    let mut byte = [0u8; 1];
    f.read_exact_at(&mut byte, (AT + 1000) as u64).unwrap();
    f.write_all_at(&[byte[0] ^ 0x40], (AT + 1000) as u64)
        .unwrap();
    drop(f);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let said = text(&out);
    assert!(said.contains(&format!("offset {AT}: corrupt")), "{said}");
    assert!(said.contains("1 of 512 blocks bad"), "{said}");
    let r = stormark_testkit::read_json(&json);
    let errors = stormark_testkit::phase(&r, "run")["errors"].clone();
    assert_eq!(errors[0]["kind"], "corrupt", "{errors}");
    assert_eq!(
        errors[0]["first_offset"].as_u64(),
        Some(AT as u64),
        "{errors}"
    );
    // Both runs removed what they made.
    assert_eq!(std::fs::read_dir(&g.export).unwrap().count(), 0);
}

/// Two agents in network namespaces measure one share, ganesha in a third: each makes its own
/// run directory over its own connections, the totals are the exact sums of the hosts' and
/// what ganesha served, and nothing is left; a share they were not given is refused in one
/// line, exit 2.
#[test]
fn two_agents_share_an_export_merged_exactly() {
    let test = "two_agents_share_an_export_merged_exactly";
    if !Ganesha::available(test) {
        return;
    }
    let mut net = stormark_testkit::NetCluster::new(3).expect("creating the namespaces");
    let g = Ganesha::start_in(TMP, &net.namespaces[2].clone(), &net.addresses[2].clone())
        .expect("ganesha starts");
    std::fs::create_dir(g.export.join("bench")).unwrap();
    let before = tree(&g.export);
    let dir = temp_dir(TMP);
    let token = dir.path().join("token");
    std::fs::write(&token, "nfs-cluster-test-token-0123456789\n").unwrap();
    let url = g.url("/bench");
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
    let (r0, w0) = g.v3_io_ops().unwrap();
    let (code, r, out) = Bin(BIN).run_json(
        &dir,
        &[
            &url,
            "--agents",
            &list,
            "--token-file",
            token.to_str().unwrap(),
            "--rw",
            "randrw",
            "--bs",
            "4k",
            "--iodepth",
            "4",
            "--size",
            "2m",
            "--time",
            "2s",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let run = stormark_testkit::phase(&r, "run");
    let hosts = run["by_host"].as_object().unwrap();
    assert_eq!(hosts.len(), 2, "{run}");
    for op in ["read", "write"] {
        let total = run["by_op"][op]["ops"].as_u64().unwrap();
        let sum: u64 = hosts
            .values()
            .map(|h| h["by_op"][op]["ops"].as_u64().unwrap_or(0))
            .sum();
        assert!(total > 100, "{op}: {out}");
        assert_eq!(total, sum, "{op}: the total is the exact sum of the hosts'");
    }
    let (r1, w1) = g.v3_io_ops().unwrap();
    let prepared = ops(&r, "prepare", "write");
    assert_eq!(r1 - r0, ops(&r, "run", "read"), "READs ganesha served");
    assert_eq!(
        w1 - w0,
        ops(&r, "run", "write") + prepared,
        "WRITEs ganesha served"
    );
    assert_eq!(tree(&g.export), before, "nothing left on the export");

    let out = Bin(BIN).run(&[
        "run",
        &g.url(""),
        "--agents",
        &list,
        "--token-file",
        token.to_str().unwrap(),
        "--rw",
        "randread",
        "--time",
        "1s",
        "-q",
    ]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        said.contains("not a share directory this agent may use"),
        "{said}"
    );
    assert_eq!(said.trim().lines().count(), 1, "{said}");
}

/// An agent killed in the middle of a run on a share leaves its run directory there; its next
/// start (the same --state-dir) removes it over NFS, and says so.
#[test]
fn a_killed_agents_share_run_directory_is_removed_at_its_next_start() {
    let Some(g) = Ganesha::for_test(
        TMP,
        "a_killed_agents_share_run_directory_is_removed_at_its_next_start",
    ) else {
        return;
    };
    std::fs::write(g.export.join("theirs"), b"not stormark's").unwrap();
    let dir = temp_dir(TMP);
    let token = dir.path().join("token");
    std::fs::write(&token, "nfs-journal-test-token-0123456789\n").unwrap();
    let listen = stormark_testkit::free_addr();
    let agent = || {
        std::process::Command::new(BIN)
            .args(["agent", "--listen", &listen, "--token-file"])
            .arg(&token)
            .arg("--allow-path")
            .arg(dir.path())
            .arg("--state-dir")
            .arg(dir.path().join("state"))
            .args(["--allow-nfs", &g.url("")])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut first = agent();
    stormark_testkit::wait_listening(&listen, "the agent");
    let mut run = std::process::Command::new(BIN)
        .args(["run", &g.url(""), "--agents", &listen, "--token-file"])
        .arg(&token)
        .args(["--rw", "randread", "--size", "1m", "--time", "60s", "-q"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed once its run directory and file are there.
    let made = wait_for("no run directory was made", || {
        let file = run_files(&g.export).into_iter().next()?;
        file.parent().map(std::path::Path::to_path_buf)
    });
    std::thread::sleep(std::time::Duration::from_millis(500));
    first.kill().unwrap();
    first.wait().unwrap();
    assert!(made.exists());
    let _ = run.kill();
    let _ = run.wait();
    // The next start removes it, and says so.
    let mut second = agent();
    stormark_testkit::wait_listening(&listen, "the agent again");
    second.kill().unwrap();
    let out = second.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!made.exists(), "{said}");
    assert!(said.contains("removed nfs://"), "{said}");
    assert_eq!(
        std::fs::read_dir(&g.export).unwrap().count(),
        1,
        "only their file is left"
    );
}

/// fio's own example of its nfs engine, run as written (its `nfs_url=` put in for the
/// server's, its times shortened): ten workers writing, then ten reading at random, over NFS,
/// everything made removed.
#[test]
fn fios_nfs_example_runs_as_written() {
    let Some(g) = Ganesha::for_test(TMP, "fios_nfs_example_runs_as_written") else {
        return;
    };
    let example = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fio/examples/nfs.fio"),
    )
    .unwrap();
    let job = example.replace(
        "nfs_url=nfs://127.0.0.1/nfs",
        &format!("nfs_url={}", g.url("")),
    );
    assert_ne!(job, example, "the example names its share as it did");
    let dir = temp_dir(TMP);
    let file = dir.path().join("nfs.fio");
    std::fs::write(&file, job).unwrap();
    let json = dir.path().join("r.json");
    let out = Bin(BIN).run(&[
        "run",
        "--job",
        file.to_str().unwrap(),
        "--size",
        "2m",
        "--time",
        "1s",
        "--ramp",
        "0s",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = stormark_testkit::read_json(&json);
    assert_eq!(r["target"]["kind"], "nfs-directory", "{}", r["target"]);
    let write = stormark_testkit::phase(&r, "run:write");
    let read = stormark_testkit::phase(&r, "run:read");
    assert_eq!(write["jobs"][0]["engine"], "nfs", "{write}");
    assert_eq!(write["jobs"][0]["workers"], 10, "{write}");
    assert!(
        write["by_op"]["write"]["ops"].as_u64().unwrap_or(0) > 0,
        "{write}"
    );
    assert!(
        read["by_op"]["read"]["ops"].as_u64().unwrap_or(0) > 0,
        "{read}"
    );
    assert_eq!(
        std::fs::read_dir(&g.export).unwrap().count(),
        0,
        "nothing left"
    );
}

/// Ctrl-C in the middle of a run on a share: the run directory and its files are removed all
/// the same, and the results are written, interrupted, exit 1.
#[test]
fn ctrl_c_still_removes_the_shares_run_directory() {
    let Some(g) = Ganesha::for_test(TMP, "ctrl_c_still_removes_the_shares_run_directory") else {
        return;
    };
    std::fs::write(g.export.join("theirs"), b"not stormark's").unwrap();
    let before = tree(&g.export);
    let dir = temp_dir(TMP);
    let json = dir.path().join("r.json");
    let child = std::process::Command::new(BIN)
        .args([
            "run",
            &g.url(""),
            "--rw",
            "randrw",
            "--size",
            "1m",
            "--time",
            "60s",
            "-q",
        ])
        .arg("--json")
        .arg(&json)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupted once its files are there and the load has begun.
    wait_for("no run directory was made", || {
        (!run_files(&g.export).is_empty()).then_some(())
    });
    std::thread::sleep(std::time::Duration::from_millis(1000));
    let _ = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(tree(&g.export), before, "the export is as it was");
    let doc = stormark_testkit::read_json(&json);
    assert_eq!(doc["status"], "interrupted", "{}", doc["status"]);
}

/// Issue 52: a neighbour on the share swaps the run directory during a two-stage job, once for
/// a directory of links to a file of root's (`j0.w0.f0 -> ../important.db`), once for a plain
/// directory of its own files, both through the server (a libnfs client of the test's). The
/// run goes on in its own directory, moved away, by the file handles its CREATEs gave: the
/// second stage's writes (their own byte pattern) land in the run's file there, both stages
/// are counted as the server counts them, the root-owned file and the neighbour's files stay
/// byte for byte as they were, and the cleanup removes the run's file by its directory's handle
/// and nothing under the name the neighbour took, saying so. (With files opened by a path from
/// the export's root, the second stage found the neighbour's directory and was refused.)
#[test]
fn a_neighbour_swapping_the_run_directory_gets_nothing_written_or_removed() {
    let Some(g) = Ganesha::for_test(
        TMP,
        "a_neighbour_swapping_the_run_directory_gets_nothing_written_or_removed",
    ) else {
        return;
    };
    let important = g.export.join("important.db");
    std::fs::write(&important, b"root's data, not to be touched").unwrap();
    let url = stormark_nfs::Url::parse(&g.url("")).unwrap();
    for links in [true, false] {
        let dir = temp_dir(TMP);
        let job = dir.path().join("two.fio");
        std::fs::write(
            &job,
            "[global]\nrw=write\nbs=64k\nsize=1m\ntime_based\nruntime=4\n[a]\nbuffer_pattern=0xaa\n[b]\nstonewall\nbuffer_pattern=0xbb\n",
        )
        .unwrap();
        let json = dir.path().join("r.json");
        let (_, w0) = g.v3_io_ops().expect("ganesha's statistics");
        let run = std::process::Command::new(BIN)
            .args(["run", &g.url(""), "--job"])
            .arg(&job)
            .arg("--json")
            .arg(&json)
            .arg("-q")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The neighbour waits for the first stage's writes in the run directory, then swaps
        // its own directory in, through NFS, before the second stage starts.
        let made = wait_for("the first stage wrote nothing", || {
            use std::os::unix::fs::MetadataExt;
            let file = run_files(&g.export)
                .into_iter()
                .find(|f| std::fs::metadata(f).is_ok_and(|m| m.blocks() > 0))?;
            file.parent()
                .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        });
        let mut neighbour = stormark_nfs::Client::connect(&url, 1).unwrap();
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
        let theirs = tree(&g.export.join(&made));
        // The second stage writes its pattern into the run's own file, in its directory
        // moved away (the file is removed at the end: seen while the stage runs).
        let ours = g.export.join(".moved/j0.w0.f0");
        wait_for(
            "the second stage's writes never reached the run's own file",
            || {
                std::fs::read(&ours)
                    .ok()
                    .filter(|b| b.len() == 1 << 20 && b.contains(&0xbb))
            },
        );
        let out = run.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            std::fs::read(&important).unwrap(),
            b"root's data, not to be touched",
            "{said}"
        );
        assert_eq!(tree(&g.export.join(&made)), theirs, "links {links}: {said}");
        assert_eq!(out.status.code(), Some(0), "links {links}: {said}");
        let r = stormark_testkit::read_json(&json);
        let all = r.to_string();
        // Both stages ran, every WRITE counted as the server counted it.
        let (a, b) = (ops(&r, "run:a", "write"), ops(&r, "run:b", "write"));
        assert!(a > 0 && b > 0, "links {links}: {all}");
        // (Nothing is prepared: the job only writes.)
        let (_, w1) = g.v3_io_ops().unwrap();
        assert_eq!(w1 - w0, a + b, "links {links}: {all}");
        assert!(!all.contains("files not created by stormark"), "{all}");
        // The run's own file, moved away by the neighbour, is removed by its directory's
        // handle; the directory, whose new name the run cannot know, is left and said.
        let moved: Vec<_> = std::fs::read_dir(g.export.join(".moved"))
            .unwrap()
            .collect();
        assert!(moved.is_empty(), "links {links}: {moved:?}\n{all}");
        assert!(
            all.contains("no longer the directory this run made")
                && all.contains("had 1 of its 1 file(s) removed by its handle"),
            "links {links}: {all}"
        );
        std::fs::remove_dir(g.export.join(".moved")).unwrap();
        std::fs::remove_dir_all(g.export.join(&made)).unwrap();
    }
}
