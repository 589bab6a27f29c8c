//! Issue 16: nothing outside the run is touched, tried as a hostile user would: planted links
//! and hard links in a kept run, a run directory swapped between validation and preparation,
//! device nodes under an agent's allowed path, loop devices and images in use. Tests that need
//! root (loop devices, mknod) skip with a printed reason elsewhere; `.ci/run` runs as root.

use std::net::TcpStream;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use stormark_cluster::{Agent, LocalAgent, TargetOptions};
use stormark_spec::{JobOpts, Source, Workload};
use stormark_testkit::{
    read_json, require_root, require_tool, temp_dir, text, Bin, LoopDevice, TempDir,
};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

fn stormark(args: &[&str]) -> Output {
    Bin(BIN).run(args)
}

/// A kept run of 1 MiB files under `dir/target`; returns the run directory.
fn kept_run(dir: &TempDir) -> PathBuf {
    let t = dir.path().join("target");
    std::fs::create_dir_all(&t).unwrap();
    let json = dir.path().join("keep.json");
    let out = stormark(&[
        "run",
        t.to_str().unwrap(),
        "--rw",
        "randread",
        "--size",
        "1m",
        "--time",
        "200ms",
        "--keep",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    PathBuf::from(read_json(&json)["target"]["run_dir"].as_str().unwrap())
}

fn reuse_randwrite(run_dir: &Path) -> Output {
    stormark(&[
        "run",
        run_dir.to_str().unwrap(),
        "--reuse",
        "--rw",
        "randwrite",
        "--size",
        "1m",
        "--time",
        "300ms",
        "--quiet",
    ])
}

#[test]
fn issue16_planted_symlink_in_a_kept_run_is_never_written_through() {
    let dir = temp_dir(TMP);
    let run_dir = kept_run(&dir);
    let precious = dir.path().join("precious");
    let data = vec![0x5au8; 1 << 20];
    std::fs::write(&precious, &data).unwrap();
    let file = run_dir.join("j0.w0.f0");
    std::fs::remove_file(&file).unwrap();
    symlink(&precious, &file).unwrap();
    let out = reuse_randwrite(&run_dir);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("j0.w0.f0"), "{}", text(&out));
    assert_eq!(
        std::fs::read(&precious).unwrap(),
        data,
        "the link's target is untouched"
    );
}

#[test]
fn issue16_hard_link_or_swapped_file_in_a_kept_run_is_refused() {
    let dir = temp_dir(TMP);
    let run_dir = kept_run(&dir);
    let precious = dir.path().join("precious");
    let data = vec![0xa5u8; 1 << 20];
    std::fs::write(&precious, &data).unwrap();
    let file = run_dir.join("j0.w0.f0");
    // A hard link to another file under the recorded name. The original is kept aside, not
    // removed, for the whole test: a file made later could otherwise get its freed inode
    // number back and pass for it (the filesystem reuses inode numbers).
    std::fs::rename(&file, dir.path().join("original")).unwrap();
    std::fs::hard_link(&precious, &file).unwrap();
    let out = reuse_randwrite(&run_dir);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("not the file stormark created"),
        "{}",
        text(&out)
    );
    // Another file of the same size renamed in (one link, but another inode: the original
    // still exists, so the new file cannot have its inode number).
    std::fs::remove_file(&file).unwrap();
    let run2 = kept_run(&dir);
    std::fs::rename(run2.join("j0.w0.f0"), &file).unwrap();
    let out = reuse_randwrite(&run_dir);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("not the file stormark created"),
        "{}",
        text(&out)
    );
    assert_eq!(std::fs::read(&precious).unwrap(), data);
}

fn workload(rw: &str) -> Workload {
    let mut o = JobOpts::default();
    for (k, v) in [
        ("rw", rw),
        ("size", "1m"),
        ("time", "200ms"),
        ("engine", "psync"),
    ] {
        o.set(k, v, Source::Key("test")).unwrap();
    }
    Workload::new(vec![o.resolve("job").unwrap()], false).unwrap()
}

#[test]
fn issue16_target_swapped_for_a_link_between_validation_and_preparation() {
    let dir = temp_dir(TMP);
    let target = dir.path().join("target");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&target).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    let mut agent = LocalAgent::new(TargetOptions::new(target.clone()))
        .with_stop(Arc::new(AtomicBool::new(false)));
    agent.validate(&workload("randwrite")).unwrap();
    // Swap: the validated directory moves away and a link to another takes its name.
    let moved = dir.path().join("moved");
    std::fs::rename(&target, &moved).unwrap();
    symlink(&elsewhere, &target).unwrap();
    agent.prepare(&mut |_| {}).unwrap();
    agent
        .run_stage(
            0,
            &stormark_spec::StageLoad::AS_GIVEN,
            &[],
            None,
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(
        std::fs::read_dir(&elsewhere).unwrap().count(),
        0,
        "nothing is made through the link"
    );
    assert_eq!(
        std::fs::read_dir(&moved).unwrap().count(),
        1,
        "the run is in the held one"
    );
    agent.cleanup();
    assert_eq!(
        std::fs::read_dir(&moved).unwrap().count(),
        0,
        "and removed from it"
    );
}

#[test]
fn issue16_reused_run_swapped_for_a_link_after_validation() {
    let dir = temp_dir(TMP);
    let run_dir = kept_run(&dir);
    // A copy of the run elsewhere, whose files must stay as they are.
    let copy = dir.path().join("copy");
    std::fs::create_dir(&copy).unwrap();
    for e in std::fs::read_dir(&run_dir).unwrap().flatten() {
        std::fs::copy(e.path(), copy.join(e.file_name())).unwrap();
    }
    let before = std::fs::read(copy.join("j0.w0.f0")).unwrap();
    let mut opts = TargetOptions::new(run_dir.clone());
    opts.reuse = true;
    let mut agent = LocalAgent::new(opts).with_stop(Arc::new(AtomicBool::new(false)));
    agent.validate(&workload("randwrite")).unwrap();
    let moved = dir.path().join("moved");
    std::fs::rename(&run_dir, &moved).unwrap();
    symlink(&copy, &run_dir).unwrap();
    agent.prepare(&mut |_| {}).unwrap();
    agent
        .run_stage(
            0,
            &stormark_spec::StageLoad::AS_GIVEN,
            &[],
            None,
            &mut |_| {},
        )
        .unwrap();
    agent.cleanup();
    assert_eq!(std::fs::read(copy.join("j0.w0.f0")).unwrap(), before);
}

/// An agent on 127.0.0.1 allowed `allow`, with extra arguments; killed when dropped.
struct LocalAgentProcess {
    child: Child,
    addr: String,
}

impl LocalAgentProcess {
    fn start(dir: &TempDir, allow: &Path, extra: &[&str]) -> LocalAgentProcess {
        // The test's token, unless the test wrote another before.
        let token = dir.path().join("token");
        if !token.exists() {
            std::fs::write(&token, "safety-test-token-0123456789\n").unwrap();
        }
        // A free port: bound by the system, released, then given to the agent; never the same
        // one twice in this process, whose tests run at once.
        static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
        let port = loop {
            let p = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let mut given = GIVEN.lock().unwrap();
            if !given.contains(&p) {
                given.push(p);
                break p;
            }
        };
        let addr = format!("127.0.0.1:{port}");
        let state = dir.path().join("agent-state");
        let mut args = vec![
            "agent",
            "--listen",
            &addr,
            "--token-file",
            token.to_str().unwrap(),
            "--allow-path",
            allow.to_str().unwrap(),
            "--state-dir",
            state.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let mut child = Command::new(BIN)
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect_timeout(&addr.parse().unwrap(), Duration::from_millis(200))
            .is_err()
        {
            assert!(Instant::now() < deadline, "the agent did not listen");
            assert!(child.try_wait().unwrap().is_none(), "the agent exited");
            std::thread::sleep(Duration::from_millis(50));
        }
        // Listening is this agent, not another one on a port taken in between.
        assert!(child.try_wait().unwrap().is_none(), "the agent exited");
        LocalAgentProcess { child, addr }
    }
}

impl Drop for LocalAgentProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn issue16_device_node_under_an_allowed_path_is_refused_by_the_agent() {
    let test = "issue16_device_node_under_an_allowed_path_is_refused_by_the_agent";
    if !require_root(test) || !require_tool(test, "losetup") {
        return;
    }
    let dev = match LoopDevice::new(TMP, 8 << 20) {
        Ok(d) => d,
        Err(e) => {
            stormark_testkit::skip(test, &format!("cannot create a loop device: {e}"));
            return;
        }
    };
    let marker = vec![0x77u8; 8 << 20];
    std::fs::write(&dev.backing, &marker).unwrap();
    let dir = temp_dir(TMP);
    let allowed = dir.path().join("allowed");
    std::fs::create_dir(&allowed).unwrap();
    // mknod allowed/x b MAJOR MINOR: a node naming the real device.
    let rdev = std::os::unix::fs::MetadataExt::rdev(&std::fs::metadata(&dev.path).unwrap());
    let node = allowed.join("x");
    let c = std::ffi::CString::new(node.to_str().unwrap()).unwrap();
    // SAFETY: c is a valid C string.
    assert_eq!(
        unsafe { libc::mknod(c.as_ptr(), libc::S_IFBLK | 0o600, rdev) },
        0
    );
    let agent = LocalAgentProcess::start(&dir, &allowed, &[]);
    let token = dir.path().join("token");
    let out = stormark(&[
        "run",
        node.to_str().unwrap(),
        "--agents",
        &agent.addr,
        "--token-file",
        token.to_str().unwrap(),
        "--rw",
        "randwrite",
        "--time",
        "300ms",
        "--allow-device-write",
        "--force",
        "--quiet",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--allow-device"), "{}", text(&out));
    drop(agent);
    assert_eq!(
        std::fs::read(&dev.backing).unwrap(),
        marker,
        "the device is untouched"
    );
    // Allowed by --allow-device, the same node is used.
    let agent = LocalAgentProcess::start(
        &dir,
        &allowed,
        &["--allow-device", dev.path.to_str().unwrap()],
    );
    let out = stormark(&[
        "run",
        node.to_str().unwrap(),
        "--agents",
        &agent.addr,
        "--token-file",
        token.to_str().unwrap(),
        "--rw",
        "randread",
        "--time",
        "300ms",
        "--quiet",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn issue16_devices_and_images_in_use_through_loop_devices_are_refused() {
    let test = "issue16_devices_and_images_in_use_through_loop_devices_are_refused";
    if !require_root(test) || !require_tool(test, "losetup") || !require_tool(test, "mkfs.ext4") {
        return;
    }
    let mut dev = match LoopDevice::new(TMP, 32 << 20) {
        Ok(d) => d,
        Err(e) => {
            stormark_testkit::skip(test, &format!("cannot create a loop device: {e}"));
            return;
        }
    };
    dev.mkfs_ext4().unwrap();
    let mnt = dev.mount().unwrap();
    std::fs::write(mnt.join("keep.txt"), b"data of a mounted filesystem").unwrap();
    let second = dev.attach_again(TMP).unwrap();
    // A second loop device on the image of the mounted filesystem.
    let out = stormark(&[
        "run",
        second.path.to_str().unwrap(),
        "--rw",
        "randwrite",
        "--time",
        "300ms",
        "--allow-device-write",
        "--force",
        "--quiet",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("in use"), "{}", text(&out));
    assert!(text(&out).contains("mounted"), "{}", text(&out));
    // The image file itself, with --allow-overwrite.
    let out = stormark(&[
        "run",
        dev.backing.to_str().unwrap(),
        "--rw",
        "randwrite",
        "--time",
        "300ms",
        "--allow-overwrite",
        "--quiet",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("backs the loop device"),
        "{}",
        text(&out)
    );
    // Reading either is fine.
    let out = stormark(&[
        "run",
        second.path.to_str().unwrap(),
        "--rw",
        "randread",
        "--time",
        "300ms",
        "--quiet",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    drop(second);
    assert_eq!(
        std::fs::read(mnt.join("keep.txt")).unwrap(),
        b"data of a mounted filesystem"
    );
}

#[test]
fn issue16_results_never_land_on_the_target_an_input_or_a_non_file() {
    let dir = temp_dir(TMP);
    let file = dir.path().join("image.bin");
    std::fs::write(&file, vec![1u8; 1 << 20]).unwrap();
    let f = file.to_str().unwrap();
    for json in [f, "/dev/null", dir.path().to_str().unwrap()] {
        let out = stormark(&[
            "run", f, "--rw", "randread", "--time", "200ms", "--quiet", "--json", json,
        ]);
        assert_eq!(out.status.code(), Some(2), "--json {json}: {}", text(&out));
        let t = text(&out);
        assert_eq!(t.lines().count(), 1, "one line: {t}");
        assert!(t.contains("--json"), "{t}");
    }
    assert_eq!(std::fs::read(&file).unwrap(), vec![1u8; 1 << 20]);
    // A FIFO is refused before any load, never opened (which would block).
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: c is a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let out = stormark(&[
        "run",
        f,
        "--rw",
        "randread",
        "--time",
        "200ms",
        "--quiet",
        "--json",
        fifo.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    // Inside a kept run directory, when reusing it.
    let run_dir = kept_run(&dir);
    let inside = run_dir.join("r.json");
    let out = stormark(&[
        "run",
        run_dir.to_str().unwrap(),
        "--reuse",
        "--rw",
        "randread",
        "--size",
        "1m",
        "--time",
        "200ms",
        "--quiet",
        "--json",
        inside.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("run directory"), "{}", text(&out));
    // compare: the output is not one of its inputs.
    let a = dir.path().join("keep.json");
    let before = std::fs::read(&a).unwrap();
    let a = a.to_str().unwrap();
    let out = stormark(&["compare", a, a, "--json", a]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(std::fs::read(a).unwrap(), before);
}

#[test]
fn issue16_json_to_standard_output() {
    let dir = temp_dir(TMP);
    let t = dir.path().join("target");
    std::fs::create_dir(&t).unwrap();
    let out = stormark(&[
        "run",
        t.to_str().unwrap(),
        "--engine",
        "null",
        "--time",
        "300ms",
        "--json",
        "-",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("stdout is the document");
    assert_eq!(doc["status"], "ok");
    assert!(String::from_utf8_lossy(&out.stderr).contains("status: ok"));
}

#[test]
fn issue16_full_disk_keeps_the_previous_results_whole() {
    let test = "issue16_full_disk_keeps_the_previous_results_whole";
    if !require_root(test) || !require_tool(test, "mount") {
        return;
    }
    let dir = temp_dir(TMP);
    let mnt = dir.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
        .arg(&mnt)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        stormark_testkit::skip(test, "cannot mount a tmpfs");
        return;
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _guard = Unmount(mnt.clone());
    let json = mnt.join("r.json");
    let good = b"{\"previous\": \"good results\"}\n";
    std::fs::write(&json, good).unwrap();
    // Fill the filesystem to the last block.
    let mut filler = std::fs::File::create(mnt.join("filler")).unwrap();
    let chunk = vec![0u8; 4096];
    while std::io::Write::write_all(&mut filler, &chunk).is_ok() {}
    drop(filler);
    let t = dir.path().join("target");
    std::fs::create_dir(&t).unwrap();
    let out = stormark(&[
        "run",
        t.to_str().unwrap(),
        "--engine",
        "null",
        "--time",
        "300ms",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("cannot write results"),
        "{}",
        text(&out)
    );
    assert_eq!(
        std::fs::read(&json).unwrap(),
        good,
        "the previous file is whole"
    );
    let names: Vec<String> = std::fs::read_dir(&mnt)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "no temporary file left: {names:?}");
}

#[test]
fn issue16_results_are_rewritten_after_every_phase() {
    let dir = temp_dir(TMP);
    let t = dir.path().join("target");
    std::fs::create_dir(&t).unwrap();
    let job = dir.path().join("two.toml");
    std::fs::write(
        &job,
        "engine = \"null\"\n[[job]]\nname = \"first\"\ntime = \"1s\"\n[[job]]\nname = \"second\"\ntime = \"60s\"\n",
    )
    .unwrap();
    let json = dir.path().join("r.json");
    let mut child = Command::new(BIN)
        .args([
            "run",
            t.to_str().unwrap(),
            "--job",
            job.to_str().unwrap(),
            "--quiet",
            "--json",
            json.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait for the first phase's document, then kill without warning.
    let deadline = Instant::now() + Duration::from_secs(30);
    let has_phase = || {
        std::fs::read(&json)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .is_some_and(|r| r["phases"].as_array().is_some_and(|p| !p.is_empty()))
    };
    while !has_phase() {
        assert!(
            Instant::now() < deadline,
            "no document after the first phase"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let r = read_json(&json);
    assert_eq!(r["status"], "running");
    assert_eq!(r["phases"][0]["name"], "run:first", "{r}");
    assert!(r["phases"][0]["total"]["ops"].as_u64().unwrap() > 0);
}

#[test]
fn issue16_limits_are_checked_before_anything_is_allocated() {
    let dir = temp_dir(TMP);
    let t = dir.path().join("target");
    std::fs::create_dir(&t).unwrap();
    let t = t.to_str().unwrap();
    for (args, said) in [
        (
            vec![
                "--engine",
                "io_uring",
                "--bs",
                "1g",
                "--iodepth",
                "4096",
                "--jobs",
                "4096",
            ],
            "I/O buffers need",
        ),
        (
            vec!["--jobs", "4096", "--files", "65536", "--size", "4k"],
            "files",
        ),
    ] {
        let mut all = vec!["run", t, "--time", "1s", "--quiet"];
        all.extend(args.iter().copied());
        let out = stormark(&all);
        let msg = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {msg}");
        assert_eq!(msg.lines().count(), 1, "one line: {msg}");
        assert!(msg.contains(said), "{msg}");
    }
    assert_eq!(std::fs::read_dir(t).unwrap().count(), 0, "nothing was made");
}

#[test]
fn issue16_fio_spellings_non_utf8_paths_and_a_closed_stdout() {
    use std::os::unix::ffi::OsStrExt;
    let dir = temp_dir(TMP);
    let t = dir.path().join(std::ffi::OsStr::from_bytes(b"target-\xff"));
    std::fs::create_dir(&t).unwrap();
    let json = dir.path().join("r.json");
    let out = Command::new(BIN)
        .arg("run")
        .arg(&t)
        .args([
            "--engine",
            "null",
            "--readwrite",
            "randread",
            "--blocksize",
            "8k",
            "--ramp_time",
            "0",
            "--time",
            "1.5",
            "--iodepth_batch_submit",
            "1",
            "--quiet",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = read_json(&json);
    assert_eq!(r["spec"]["jobs"][0]["bs"], "8k");
    assert_eq!(r["spec"]["jobs"][0]["time"], "1500ms");
    // A closed standard output ends quietly: no panic message.
    let mut child = Command::new(BIN)
        .args(["run", "--list-profiles"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("panicked"),
        "{}",
        text(&out)
    );
}

fn agent_run(agent: &LocalAgentProcess, dir: &TempDir, target: &Path, time: &str) -> Command {
    let mut c = Command::new(BIN);
    c.args([
        "run",
        target.to_str().unwrap(),
        "--agents",
        &agent.addr,
        "--token-file",
        dir.path().join("token").to_str().unwrap(),
        "--engine",
        "null",
        "--time",
        time,
        "--quiet",
        "--json",
        dir.path().join("r.json").to_str().unwrap(),
    ]);
    c
}

#[test]
fn issue16_idle_connection_flood_neither_locks_out_nor_keeps_the_agent_alive() {
    let dir = temp_dir(TMP);
    let allowed = dir.path().join("allowed");
    std::fs::create_dir(&allowed).unwrap();
    let mut agent = LocalAgentProcess::start(&dir, &allowed, &[]);
    // Far more idle connections than the agent serves at once; none says a word.
    let flood: Vec<TcpStream> = (0..400)
        .filter_map(|_| TcpStream::connect(&agent.addr).ok())
        .collect();
    assert!(flood.len() > 100);
    let out = agent_run(&agent, &dir, &allowed, "500ms").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // SIGTERM with the idle connections still open: the agent exits promptly.
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(agent.child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if agent.child.try_wait().unwrap().is_some() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the agent did not exit on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(flood);
}

#[test]
fn issue16_agent_stopped_mid_run_is_that_hosts_failure() {
    let dir = temp_dir(TMP);
    let allowed = dir.path().join("allowed");
    std::fs::create_dir(&allowed).unwrap();
    let agent = LocalAgentProcess::start(&dir, &allowed, &[]);
    let child = agent_run(&agent, &dir, &allowed, "30s")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once the agent made its run directory, the load is about to start: give it a second.
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::read_dir(&allowed).unwrap().count() == 0 {
        assert!(Instant::now() < deadline, "no run directory appeared");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(agent.child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let r = read_json(&dir.path().join("r.json"));
    assert_eq!(r["status"], "failed", "{}", r["failure"]);
    assert!(
        r["failure"].as_str().unwrap_or("").contains("stopped")
            || r["hosts"][0]["failure"].to_string().contains("stopped"),
        "{r}"
    );
}

#[test]
fn issue16_leftovers_of_a_killed_agent_are_removed_at_its_next_start() {
    let dir = temp_dir(TMP);
    let allowed = dir.path().join("allowed");
    std::fs::create_dir(&allowed).unwrap();
    let mut agent = LocalAgentProcess::start(&dir, &allowed, &[]);
    let mut child = Command::new(BIN)
        .args([
            "run",
            allowed.to_str().unwrap(),
            "--agents",
            &agent.addr,
            "--token-file",
            dir.path().join("token").to_str().unwrap(),
            "--rw",
            "randread",
            "--size",
            "1m",
            "--time",
            "30s",
            "--quiet",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::read_dir(&allowed).unwrap().count() == 0 {
        assert!(Instant::now() < deadline, "no run directory appeared");
        std::thread::sleep(Duration::from_millis(100));
    }
    // SIGKILL: the agent has no chance to clean up.
    agent.child.kill().unwrap();
    agent.child.wait().unwrap();
    let _ = child.wait();
    assert_eq!(
        std::fs::read_dir(&allowed).unwrap().count(),
        1,
        "left behind"
    );
    std::fs::write(allowed.join("not-ours"), b"x").unwrap();
    let _again = LocalAgentProcess::start(&dir, &allowed, &[]);
    let names: Vec<String> = std::fs::read_dir(&allowed)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        vec!["not-ours"],
        "the run directory is removed, nothing else"
    );
}

#[test]
fn issue16_stale_run_directories_are_reported() {
    let dir = temp_dir(TMP);
    let t = dir.path().join("target");
    std::fs::create_dir(&t).unwrap();
    // A run directory of a process that no longer exists (pid 0 never names a process).
    let stale = t.join("stormark-20260101-000000-0");
    std::fs::create_dir(&stale).unwrap();
    std::fs::write(stale.join(".stormark-run.json"), "{}").unwrap();
    let out = stormark(&[
        "run",
        t.to_str().unwrap(),
        "--engine",
        "null",
        "--time",
        "200ms",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("stormark-20260101-000000-0"),
        "{}",
        text(&out)
    );
    assert!(stale.exists(), "reported, never removed");
}

#[test]
fn issue16_compare_gate_refuses_what_cannot_be_compared() {
    let dir = temp_dir(TMP);
    let t = dir.path().join("target");
    std::fs::create_dir(&t).unwrap();
    let json = dir.path().join("a.json");
    let out = stormark(&[
        "run",
        t.to_str().unwrap(),
        "--engine",
        "null",
        "--time",
        "2s",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let a = read_json(&json);
    let a_path = json.to_str().unwrap();
    let write = |name: &str, v: &serde_json::Value| {
        let p = dir.path().join(name);
        std::fs::write(&p, v.to_string()).unwrap();
        p.to_str().unwrap().to_string()
    };
    let gate = |b: &str, extra: &[&str]| {
        // A 2 s run is suspect (too short): told, so that the differences alone decide.
        let mut args = vec![
            "compare",
            a_path,
            b,
            "--fail-if-worse",
            "5%",
            "--allow-suspect",
        ];
        args.extend_from_slice(extra);
        stormark(&args)
    };
    // Another workload, another version, an interrupted run, nothing in common: each fails
    // the gate, saying why; --allow-different lets the figures alone decide.
    let mut other_spec = a.clone();
    other_spec["spec"]["jobs"][0]["bs"] = "8k".into();
    let mut other_version = a.clone();
    other_version["tool"]["version"] = "9.9.9".into();
    let mut interrupted = a.clone();
    interrupted["status"] = "interrupted".into();
    let mut nothing = a.clone();
    nothing["phases"] = serde_json::json!([]);
    for (name, doc, said) in [
        ("spec.json", &other_spec, "workloads differ"),
        ("version.json", &other_version, "versions differ"),
        ("interrupted.json", &interrupted, "did not finish"),
        ("nothing.json", &nothing, "nothing compared"),
    ] {
        let b = write(name, doc);
        let out = gate(&b, &[]);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", text(&out));
        assert!(text(&out).contains(said), "{name}: {}", text(&out));
        if name != "nothing.json" {
            let out = gate(&b, &["--allow-different"]);
            assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out));
            // Without a gate, a difference is a warning.
            let out = stormark(&["compare", a_path, &b]);
            assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out));
            assert!(text(&out).contains("warning"), "{name}: {}", text(&out));
        }
    }
}

#[test]
fn issue16_sessions_are_released_when_another_agent_refuses() {
    let dir = temp_dir(TMP);
    let allowed = dir.path().join("allowed");
    std::fs::create_dir(&allowed).unwrap();
    let good = LocalAgentProcess::start(&dir, &allowed, &[]);
    // A second agent with another token: it refuses the coordinator at connect.
    let other = temp_dir(TMP);
    std::fs::write(
        other.path().join("token"),
        "another-token-entirely-0123456789\n",
    )
    .unwrap();
    let bad = LocalAgentProcess::start(&other, &allowed, &[]);
    let token = dir.path().join("token");
    let both = format!("{},{}", good.addr, bad.addr);
    let run = |agents: &str| {
        stormark(&[
            "run",
            allowed.to_str().unwrap(),
            "--agents",
            agents,
            "--token-file",
            token.to_str().unwrap(),
            "--engine",
            "null",
            "--time",
            "300ms",
            "--quiet",
        ])
    };
    let out = run(&both);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    // At once, the corrected run is not refused as busy by the agent that accepted.
    let out = run(&good.addr);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(!text(&out).contains("busy"), "{}", text(&out));
}

/// A file given to read keeps its access time: stormark opens it with `O_NOATIME` (as fio's
/// `t/io_uring`), so a run does not change what backup and tiering tools read of it. Under
/// `relatime` an access time older than the file's change would otherwise be moved to now on
/// the first read; with a psync and an io_uring run it stays where it was set.
#[test]
fn a_file_read_keeps_its_access_time() {
    let dir = temp_dir(TMP);
    let file = dir.path().join("data");
    std::fs::write(&file, vec![7u8; 1 << 20]).unwrap();
    // An access time a day before the change: the case relatime updates on a read.
    let old = std::time::SystemTime::now() - Duration::from_secs(86_400 * 2);
    let f = std::fs::File::options().write(true).open(&file).unwrap();
    f.set_times(std::fs::FileTimes::new().set_accessed(old))
        .unwrap();
    drop(f);
    let before = std::fs::metadata(&file).unwrap().accessed().unwrap();
    for engine in ["psync", "io_uring"] {
        let out = stormark(&[
            "run",
            file.to_str().unwrap(),
            "--engine",
            engine,
            "--rw",
            "randread",
            "--bs",
            "4k",
            "--buffered",
            "--time",
            "300ms",
            "-q",
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let after = std::fs::metadata(&file).unwrap().accessed().unwrap();
        assert_eq!(after, before, "{engine} moved the access time");
    }
    // The same read with cat does move it: the check above can fail.
    let out = Command::new("cat")
        .arg(&file)
        .stdout(Stdio::null())
        .status();
    assert!(out.unwrap().success());
    let after = std::fs::metadata(&file).unwrap().accessed().unwrap();
    assert!(
        after > before,
        "relatime did not update on a plain read here"
    );
}
