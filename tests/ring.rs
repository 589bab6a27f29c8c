//! fio's io_uring options (`fixedbufs`, `registerfiles`, `sqthread_poll`, `hipri`), issue 55:
//! that each really reaches the kernel is read from strace's record of the ring's setup and
//! registrations (not assumed), that the bytes written through registered buffers are the
//! ones asked is checked by `--verify`, and each is refused in one line where it cannot run.

use std::process::Command;

use stormark_testkit::{phase, read_json, require_tool, temp_dir, text};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

/// `stormark run DIR ARGS` under strace (io_uring's setup and registration calls): the
/// output, the document and the record.
fn traced(args: &[&str]) -> (std::process::Output, serde_json::Value, String) {
    traced_calls("trace=io_uring_setup,io_uring_register", args)
}

/// As [`traced`], recording the system calls strace's `-e` names (`calls`).
fn traced_calls(calls: &str, args: &[&str]) -> (std::process::Output, serde_json::Value, String) {
    let dir = temp_dir(TMP);
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let json = dir.path().join("r.json");
    let trace = dir.path().join("strace.txt");
    let out = Command::new("strace")
        .args(["-f", "-e", calls, "-o"])
        .arg(&trace)
        .arg(BIN)
        .arg("run")
        .arg(&target)
        .args(["-q", "--json"])
        .arg(&json)
        .args(args)
        .output()
        .expect("running strace");
    let doc = if json.exists() {
        read_json(&json)
    } else {
        serde_json::Value::Null
    };
    (
        out,
        doc,
        std::fs::read_to_string(&trace).unwrap_or_default(),
    )
}

fn ops(doc: &serde_json::Value, op: &str) -> u64 {
    doc["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] == "run")
        .map(|p| p["by_op"][op]["ops"].as_u64().unwrap_or(0))
        .sum()
}

/// Registrations of `what` (`IORING_REGISTER_BUFFERS`, `IORING_REGISTER_FILES`) made, whole
/// or interrupted by another thread's call (strace then writes `<unfinished ...>`; a failed
/// one fails the run, which the callers check exits 0).
fn registered(trace: &str, what: &str) -> usize {
    trace
        .lines()
        .filter(|l| l.contains("io_uring_register(") && l.contains(what))
        .filter(|l| l.trim_end().ends_with("= 0") || l.contains("<unfinished"))
        .count()
}

#[test]
fn registered_buffers_and_files_reach_the_kernel_and_write_what_is_verified() {
    if !require_tool("registered_buffers_and_files", "strace") {
        return;
    }
    let common = [
        "--engine",
        "io_uring",
        "--rw",
        "randrw",
        "--bs",
        "4k",
        "--size",
        "4m",
        "--iodepth",
        "8",
        "--jobs",
        "2",
        "--files",
        "2",
        "--verify",
    ];
    let (out, doc, trace) = traced(&[&common[..], &["--fixedbufs", "--registerfiles"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // Each of the two workers registers its buffers and its two files once, on top of the
    // check made before load.
    assert!(
        registered(&trace, "IORING_REGISTER_BUFFERS") >= 2,
        "{trace}"
    );
    assert!(registered(&trace, "IORING_REGISTER_FILES") >= 2, "{trace}");
    assert!(ops(&doc, "read") > 0 && ops(&doc, "write") > 0, "{doc}");
    assert_eq!(doc["status"], "ok", "{doc}");
    // Without the options they are registered all the same, where the kernel lets it (as
    // t/io_uring does), and what is read and written is as right.
    let (out, doc, default) = traced(&common);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(doc["status"], "ok", "{doc}");
    // Each worker's ring is entered by its registered descriptor (t/io_uring's -X1), taken
    // (one slot, `= 1`, or a call another thread's interrupted in strace's record) and given
    // back as the worker ends: a thread has 16 such slots.
    let ring_fds = |what: &str| {
        default
            .lines()
            .filter(|l| l.contains("io_uring_register(") && l.contains(what))
            .filter(|l| l.trim_end().ends_with("= 1") || l.contains("<unfinished"))
            .count()
    };
    assert!(ring_fds("IORING_REGISTER_RING_FDS") >= 2, "{default}");
    assert_eq!(
        ring_fds("IORING_REGISTER_RING_FDS"),
        ring_fds("IORING_UNREGISTER_RING_FDS"),
        "{default}"
    );
    // Turned off by name, the two workers register nothing (the preparation's writers, not
    // the job's, still do): two fewer of each than by default.
    let (out, doc, off) =
        traced(&[&common[..], &["--no-fixedbufs", "--no-registerfiles"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(doc["status"], "ok", "{doc}");
    for what in ["IORING_REGISTER_BUFFERS", "IORING_REGISTER_FILES"] {
        assert_eq!(
            registered(&off, what) + 2,
            registered(&default, what),
            "{what}: by default\n{default}\nturned off\n{off}"
        );
    }
}

#[test]
fn a_polling_submission_thread_is_set_up_and_the_run_completes() {
    if !require_tool("a_polling_submission_thread", "strace") {
        return;
    }
    let (out, doc, trace) = traced(&[
        "--engine",
        "io_uring",
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--size",
        "4m",
        "--iodepth",
        "4",
        "--io-total",
        "8m",
        "--sqthread-poll",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        trace
            .lines()
            .any(|l| l.contains("io_uring_setup(") && l.contains("IORING_SETUP_SQPOLL")),
        "{trace}"
    );
    // Every byte asked was read: the thread's submissions all completed.
    assert_eq!(ops(&doc, "read"), 2048, "{doc}");
}

/// `t/io_uring`'s batches (eight I/Os a submission, eight completions a reap): every I/O is
/// counted once, in the operations and in the latency histogram (completions alike are
/// recorded together), and what is read is verified.
#[test]
fn batched_submissions_and_reaps_count_and_time_every_io_once() {
    if !require_tool("batched_submissions_and_reaps", "strace") {
        return;
    }
    let (out, doc, _) = traced(&[
        "--engine",
        "io_uring",
        "--rw",
        "randrw",
        "--bs",
        "4k",
        "--size",
        "4m",
        "--iodepth",
        "32",
        "--iodepth-batch",
        "8",
        "--iodepth-batch-complete",
        "8",
        "--io-total",
        "16m",
        "--verify",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(doc["status"], "ok", "{doc}");
    let (reads, writes) = (ops(&doc, "read"), ops(&doc, "write"));
    assert_eq!(reads + writes, 4096, "{doc}");
    let run = phase(&doc, "run");
    for (op, n) in [("read", reads), ("write", writes)] {
        let (_, text) = run["histograms"]
            .as_object()
            .unwrap()
            .iter()
            .find(|(k, _)| k.ends_with(&format!("/{op}")))
            .unwrap_or_else(|| panic!("no {op} histogram: {doc}"));
        let h = stormark_stats::decode_histogram(text.as_str().unwrap()).unwrap();
        assert_eq!(h.len(), n, "{op}");
    }
}

/// fio's `iodepth_batch_complete` (t/io_uring's `-c`): a wait is for that many completions,
/// and the batch made last before it is submitted in the same call, as t/io_uring's (one
/// call a batch, not a submission and then a wait). Read from strace's record of every
/// `io_uring_enter`, on O_DIRECT reads: they complete after the call that submits them, so
/// each batch is waited for.
#[test]
fn a_wait_is_for_the_batch_completions_in_the_call_that_submits() {
    if !require_tool("batch_complete_waits", "strace") {
        return;
    }
    let (out, doc, trace) = traced_calls(
        "trace=io_uring_enter",
        &[
            "--engine",
            "io_uring",
            "--direct",
            "--rw",
            "randread",
            "--bs",
            "4k",
            "--size",
            "4m",
            "--iodepth",
            "16",
            "--iodepth-batch",
            "8",
            "--iodepth-batch-complete",
            "8",
            "--io-total",
            "8m",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(ops(&doc, "read"), 2048, "{doc}");
    // io_uring_enter(fd, to_submit, min_complete, flags, ...): the first three arguments of
    // the calls of the thread that made the most, the worker's (the file is laid out before
    // the load, by another thread on a ring of its own). A call another thread interrupted is
    // written `<unfinished ...>` with its arguments.
    let mut by_thread: std::collections::BTreeMap<&str, Vec<Vec<u64>>> = Default::default();
    for line in trace.lines() {
        let Some((thread, args)) = line.split_once(" io_uring_enter(") else {
            continue;
        };
        let first: Vec<u64> = args
            .split(", ")
            .take(3)
            .map(|n| n.trim().parse().unwrap_or_else(|_| panic!("{line}")))
            .collect();
        by_thread.entry(thread).or_default().push(first);
    }
    let calls = by_thread
        .into_values()
        .max_by_key(|c| c.len())
        .expect("io_uring_enter calls");
    let waits: Vec<u64> = calls.iter().map(|c| c[2]).filter(|&w| w > 0).collect();
    assert!(waits.iter().all(|&w| w == 8), "waits {waits:?}");
    // 2048 reads in batches of 8: one call each, and the first batch's own.
    assert!(
        calls.len() <= 2048 / 8 + 2,
        "{} calls for 2048 reads: {calls:?}",
        calls.len()
    );
    assert!(calls.iter().all(|c| c[1] <= 8), "{calls:?}");
}

/// Each refusal: one line, exit 2, before any load.
fn refused(args: &[&str]) -> String {
    let dir = temp_dir(TMP);
    let out = Command::new(BIN)
        .arg("run")
        .arg(dir.path())
        .args(["--size", "1m", "--io-total", "1m"])
        .args(args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

#[test]
fn io_uring_options_are_refused_in_one_line_where_they_cannot_run() {
    let err = refused(&["--engine", "psync", "--fixedbufs"]);
    assert!(
        err.contains("fixedbufs") && err.contains("--engine io_uring"),
        "{err}"
    );
    let err = refused(&["--engine", "io_uring", "--hipri"]);
    assert!(err.contains("hipri") && err.contains("--direct"), "{err}");
    // Atomic writes take one-segment buffers only: with registered ones asked for, refused
    // (here, or before it where this file system takes no atomic writes at all).
    let err = refused(&[
        "--engine",
        "io_uring",
        "--direct",
        "--rw",
        "randwrite",
        "--bs",
        "16k",
        "--atomic",
        "--fixedbufs",
    ]);
    assert!(err.contains("atomic"), "{err}");
    // This machine's disks have no poll queues (a loop device never has): refused, not run
    // with every I/O failing. Where the test directory's device does poll, hipri runs.
    let dir = temp_dir(TMP);
    let media = std::process::Command::new("findmnt")
        .args(["-n", "-o", "SOURCE", "-T"])
        .arg(dir.path())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let device = media.trim_start_matches("/dev/").to_string();
    let polls = std::fs::read_to_string(format!("/sys/block/{device}/queue/io_poll"))
        .is_ok_and(|v| v.trim() == "1");
    if !polls {
        let err = refused(&["--engine", "io_uring", "--direct", "--hipri"]);
        assert!(err.contains("poll queues"), "{err}");
    }
}

#[test]
fn a_fio_job_file_with_the_io_uring_options_runs_them() {
    if !require_tool("a_fio_job_file_with_the_io_uring_options", "strace") {
        return;
    }
    let dir = temp_dir(TMP);
    let job = dir.path().join("uring.fio");
    std::fs::write(
        &job,
        "[global]\nioengine=io_uring\nfixedbufs=1\nregisterfiles=1\nsqthread_poll=0\nhipri=0\n\n[r]\nrw=randread\nbs=4k\nsize=4m\niodepth=8\nio_size=4m\n",
    )
    .unwrap();
    let (out, doc, trace) = traced(&["--job", job.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        registered(&trace, "IORING_REGISTER_BUFFERS") >= 1,
        "{trace}"
    );
    assert!(registered(&trace, "IORING_REGISTER_FILES") >= 1, "{trace}");
    assert_eq!(ops(&doc, "read"), 1024, "{doc}");
}
