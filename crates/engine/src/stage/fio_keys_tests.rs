//! A stage's workers under fio's queue and exit keys of issue 55: `serialize_overlap`,
//! `iodepth_low` and `exitall_on_error`.

use super::*;
use crate::{Backend, FileTarget, Stop};
use std::io::Write;
use stormark_stats::Op;

fn temp_file(len: usize) -> (tempfile::TempDir, FileTarget) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    std::fs::File::create(&path)
        .unwrap()
        .write_all(&vec![7u8; len])
        .unwrap();
    (dir, FileTarget::path(path, len as u64))
}

fn run(specs: Vec<WorkerSpec>) -> (Snapshot, StageOutcome) {
    let mut total = Snapshot::new();
    let out = run_stage(specs, Arc::new(AtomicBool::new(false)), &mut |e| {
        if let StageEvent::Interval { snap, .. } = e {
            total += &*snap;
        }
    });
    (total, out)
}

fn uring() -> bool {
    let ok = crate::io_uring_available().is_ok();
    if !ok {
        eprintln!("skipping: io_uring is not available on this kernel");
    }
    ok
}

/// Random writes at depth 8 over two blocks, every I/O overlapping another in flight unless
/// it waits: with `serialize_overlap` each waits for the one it overlaps, and every I/O asked
/// for is done (none lost while it waited); with `iodepth_low` a full queue drains to it and
/// every I/O is done too.
#[test]
fn serialized_and_low_water_queues_do_every_io() {
    if !uring() {
        return;
    }
    let (_dir, file) = temp_file(8192);
    for (serialize, low) in [(true, None), (false, Some(2)), (true, Some(0))] {
        let spec = WorkerSpec {
            load: crate::Load::of_files(Backend::IoUring).expect("a file backend"),
            iodepth: 8,
            read_pct: 0,
            random_pct: 100,
            serialize_overlap: serialize,
            iodepth_low: low,
            stop: Stop {
                time: None,
                io_total: Some(256 << 12),
            },
            ..WorkerSpec::new(vec![file.clone()])
        };
        let (total, out) = run(vec![spec]);
        assert!(out.failures.is_empty(), "{:?}", out.failures);
        assert_eq!(
            total.op(Op::Write).ops,
            256,
            "serialize {serialize}, low {low:?}"
        );
    }
}

/// fio's `exitall_on_error`: a worker that fails stops the stage's others at once (one that
/// would run 60 s ends within a generous bound); without it they run on (checked on a short
/// time, not waited for).
#[test]
fn a_failing_worker_stops_the_others_with_exitall_on_error() {
    let (_dir, file) = temp_file(1 << 16);
    let bad = FileTarget::path("/nonexistent/stormark", 1 << 16);
    let long = |time: u64, files: Vec<FileTarget>| WorkerSpec {
        stop: Stop {
            time: Some(Duration::from_secs(time)),
            io_total: None,
        },
        exit_on_error: true,
        ..WorkerSpec::new(files)
    };
    let started = Instant::now();
    let (_, out) = run(vec![
        long(60, vec![bad.clone()]),
        long(60, vec![file.clone()]),
    ]);
    assert_eq!(out.failures.len(), 1, "{:?}", out.failures);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the other worker ran on: {:?}",
        started.elapsed()
    );
    // Without it, the other worker runs its time.
    let mut quiet = long(2, vec![bad]);
    quiet.exit_on_error = false;
    let mut other = long(2, vec![file]);
    other.exit_on_error = false;
    let (total, out) = run(vec![quiet, other]);
    assert_eq!(out.failures.len(), 1);
    assert!(
        out.ended - out.t0 >= Duration::from_millis(1900),
        "{:?}",
        out.ended - out.t0
    );
    assert!(total.op(Op::Read).ops > 0);
}
