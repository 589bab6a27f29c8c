//! `stormark meta`: metadata load as mdtest makes it. Workers build a tree of directories and
//! files beneath a directory of their own inside the target, one operation at a time for all
//! of them together (mkdir, create, write, stat, open, read, rename, delete, rmdir), each call
//! timed; then everything the run made is removed, and nothing else.

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use stormark_stats::{ErrorKind, Op, Recorder, Snapshot};

use crate::files::Dir;

/// The operations, in the order they run.
pub const META_OPS: [Op; 9] = [
    Op::Mkdir,
    Op::Create,
    Op::Write,
    Op::Stat,
    Op::Open,
    Op::Read,
    Op::Rename,
    Op::Delete,
    Op::Rmdir,
];

/// What a metadata run does.
#[derive(Debug, Clone)]
pub struct MetaSpec {
    /// Workers, each a thread.
    pub workers: u32,
    /// Directories per worker (unique mode) or in all (shared mode).
    pub dirs: u32,
    /// Files per directory, per worker.
    pub files: u32,
    /// Bytes each file holds (written by `create`, or by `write`; read by `read`).
    pub file_size: u64,
    /// The operations asked for, a subset of [`META_OPS`].
    pub ops: Vec<Op>,
    /// Every worker in the same directories (the hard case of a distributed filesystem),
    /// instead of a directory of its own.
    pub shared: bool,
}

/// What one operation did: each worker's seconds, and how long it took them all.
pub struct MetaPhase {
    /// The operation.
    pub op: Op,
    /// Per worker, one snapshot per second.
    pub seconds: Vec<Vec<Snapshot>>,
    /// From the common start to the last worker's end, ns.
    pub duration_ns: u64,
    /// Per worker, the items it went through (all, unless stopped).
    pub done: Vec<u64>,
}

/// The tree's name inside the target: unique to this process and moment.
pub fn tree_name() -> String {
    let ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("stormark-meta-{}-{ns}", std::process::id())
}

fn dir_name(d: u32) -> String {
    format!("d{d}")
}

fn file_name(worker: u32, f: u32, renamed: bool) -> String {
    format!("{}{worker}.{f}", if renamed { "r" } else { "f" })
}

/// Runs `spec` in a new tree inside `target`, one phase per operation (with `on_phase` told
/// of each as it ends), and removes the tree. Errors are counted by kind per operation; a
/// stop (Ctrl-C) ends the current operation early and skips the rest.
pub fn run_meta(
    target: &Dir,
    spec: &MetaSpec,
    stop: &Arc<AtomicBool>,
    on_phase: &mut dyn FnMut(&MetaPhase),
) -> std::io::Result<(Vec<MetaPhase>, Vec<String>)> {
    let name = tree_name();
    let tree = Arc::new(target.create_dir(&name)?);
    let mut phases = Vec::new();
    // Worker directories: unique mode only.
    let tops: Vec<Arc<Dir>> = if spec.shared {
        vec![tree.clone(); spec.workers as usize]
    } else {
        let mut v = Vec::new();
        for w in 0..spec.workers {
            v.push(Arc::new(tree.create_dir(format!("w{w}"))?));
        }
        v
    };
    let mut renamed = false;
    let mut dirs_made = false;
    let mut files_made = false;
    // Per worker, the files its create went through (those are all that may exist).
    let mut created: Vec<u64> = vec![0; spec.workers as usize];
    for op in META_OPS {
        let asked = spec.ops.contains(&op);
        // What a later operation needs is made untimed when not asked for.
        let needed = match op {
            Op::Mkdir => spec.ops.iter().any(|o| *o != Op::Mkdir),
            Op::Create => spec.ops.iter().any(|o| {
                matches!(
                    o,
                    Op::Write | Op::Stat | Op::Open | Op::Read | Op::Rename | Op::Delete
                )
            }),
            _ => false,
        };
        if !(asked || needed) || stop.load(Ordering::Relaxed) {
            continue;
        }
        let phase = run_op(op, spec, &tops, renamed, stop);
        match op {
            Op::Mkdir => dirs_made = true,
            Op::Create => {
                files_made = true;
                created.clone_from(&phase.done);
            }
            Op::Rename => renamed = true,
            Op::Delete => files_made = false,
            Op::Rmdir => dirs_made = false,
            _ => {}
        }
        if asked {
            on_phase(&phase);
            phases.push(phase);
        }
    }
    let made = Made {
        renamed,
        files: files_made.then_some(created),
        dirs: dirs_made || files_made,
    };
    let notes = remove_tree(target, &name, &tree, &tops, spec, &made);
    Ok((phases, notes))
}

/// One operation over every worker's items, all workers started together.
fn run_op(
    op: Op,
    spec: &MetaSpec,
    tops: &[Arc<Dir>],
    renamed: bool,
    stop: &Arc<AtomicBool>,
) -> MetaPhase {
    let barrier = Arc::new(Barrier::new(spec.workers as usize + 1));
    let handles: Vec<_> = (0..spec.workers)
        .map(|w| {
            let top = tops[w as usize].clone();
            let barrier = barrier.clone();
            let stop = stop.clone();
            let spec = spec.clone();
            std::thread::spawn(move || worker(op, &spec, w, &top, renamed, &barrier, &stop))
        })
        .collect();
    barrier.wait();
    // From the first worker's start to the last one's end (this thread may not run at once
    // when the barrier opens).
    let mut seconds = Vec::new();
    let mut done = Vec::new();
    let (mut start, mut end): (Option<Instant>, Option<Instant>) = (None, None);
    for h in handles {
        let now = Instant::now();
        // A worker that panicked went through an unknown part: every item is cleaned.
        let (s, n, t0, t1) = h
            .join()
            .unwrap_or_else(|_| (Vec::new(), u64::MAX, now, now));
        seconds.push(s);
        done.push(n);
        start = Some(start.map_or(t0, |s| s.min(t0)));
        end = Some(end.map_or(t1, |e| e.max(t1)));
    }
    let duration = match (start, end) {
        (Some(s), Some(e)) => e.saturating_duration_since(s).as_nanos() as u64,
        _ => 0,
    };
    MetaPhase {
        op,
        seconds,
        duration_ns: duration.max(1),
        done,
    }
}

/// One worker's part of `op`: its snapshots by second, when it started and when it ended.
fn worker(
    op: Op,
    spec: &MetaSpec,
    w: u32,
    top: &Dir,
    renamed: bool,
    barrier: &Barrier,
    stop: &AtomicBool,
) -> (Vec<Snapshot>, u64, Instant, Instant) {
    let mut rec = Recorder::new();
    let mut seconds = Vec::new();
    let buf = vec![0x5a_u8; spec.file_size.min(1 << 20) as usize];
    let mut rbuf = vec![0_u8; spec.file_size.min(1 << 20) as usize];
    // Shared mode: worker w makes (and removes) its share of the directories.
    let my_dirs: Vec<u32> = (0..spec.dirs)
        .filter(|d| !spec.shared || d % spec.workers == w)
        .collect();
    // The directories to work in, opened before the start (untimed).
    let dirs: Vec<Option<Dir>> = if matches!(op, Op::Mkdir | Op::Rmdir) {
        Vec::new()
    } else {
        (0..spec.dirs)
            .map(|d| top.open_dir(dir_name(d)).ok())
            .collect()
    };
    barrier.wait();
    let t0 = Instant::now();
    let mut items = 0u64;
    let mut next = t0 + Duration::from_secs(1);
    let mut tick = |rec: &mut Recorder, now: Instant| {
        if now >= next {
            seconds.push(rec.take());
            next += Duration::from_secs(1);
        }
    };
    let timed = |rec: &mut Recorder, bytes: u64, f: &mut dyn FnMut() -> std::io::Result<()>| {
        let start = Instant::now();
        let r = f();
        let now = Instant::now();
        match r {
            Ok(()) => rec.record(
                op,
                bytes,
                now.saturating_duration_since(start).as_nanos() as u64,
            ),
            Err(e) => rec.record_error(
                op,
                ErrorKind::from_errno(e.raw_os_error().unwrap_or(libc::EIO)),
                0,
                0,
            ),
        }
        now
    };
    match op {
        Op::Mkdir | Op::Rmdir => {
            for &d in &my_dirs {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let name = dir_name(d);
                items += 1;
                let now = timed(&mut rec, 0, &mut || {
                    if op == Op::Mkdir {
                        top.mkdir(&name)
                    } else {
                        top.remove_dir(&name)
                    }
                });
                tick(&mut rec, now);
            }
        }
        _ => {
            let size = spec.file_size as usize;
            'all: for dir in dirs.iter().flatten() {
                for f in 0..spec.files {
                    if stop.load(Ordering::Relaxed) {
                        break 'all;
                    }
                    let name = file_name(w, f, renamed);
                    items += 1;
                    let bytes = match op {
                        Op::Create if spec.ops.contains(&Op::Write) => 0,
                        Op::Create | Op::Write | Op::Read => size as u64,
                        _ => 0,
                    };
                    let now = timed(&mut rec, bytes, &mut || match op {
                        Op::Create => {
                            let mut file = dir.create_file(&name, 0)?;
                            if size > 0 && !spec.ops.contains(&Op::Write) {
                                write_all(&mut file, &buf, size)?;
                            }
                            Ok(())
                        }
                        Op::Write => {
                            let mut file = dir.open_own(&name, libc::O_WRONLY)?;
                            write_all(&mut file, &buf, size)
                        }
                        Op::Stat => dir.stat(&name).map(|_| ()),
                        Op::Open => dir.open_own(&name, libc::O_RDONLY).map(|_| ()),
                        Op::Read => {
                            let mut file = dir.open_own(&name, libc::O_RDONLY)?;
                            let mut left = size;
                            while left > 0 {
                                let cap = left.min(rbuf.len());
                                let n = file.read(&mut rbuf[..cap])?;
                                if n == 0 {
                                    return Err(std::io::Error::from_raw_os_error(libc::EIO));
                                }
                                left -= n;
                            }
                            Ok(())
                        }
                        Op::Rename => dir.rename(&name, file_name(w, f, true)),
                        _ => dir.remove_file(&name),
                    });
                    tick(&mut rec, now);
                }
            }
        }
    }
    let end = Instant::now();
    seconds.push(rec.take());
    (seconds, items, t0, end)
}

fn write_all(file: &mut std::fs::File, buf: &[u8], mut left: usize) -> std::io::Result<()> {
    while left > 0 {
        let n = left.min(buf.len());
        file.write_all(&buf[..n])?;
        left -= n;
    }
    Ok(())
}

/// What is left to remove when the operations are over.
struct Made {
    /// Files were renamed.
    renamed: bool,
    /// Files may be left: per worker, how many its create went through.
    files: Option<Vec<u64>>,
    /// Directories may be left.
    dirs: bool,
}

/// Removes what the run made that its operations did not: only the names it made (each
/// worker's files up to where its create got), then the directories, then the tree. Returns
/// a note for each thing that could not be removed.
fn remove_tree(
    target: &Dir,
    name: &str,
    tree: &Dir,
    tops: &[Arc<Dir>],
    spec: &MetaSpec,
    made: &Made,
) -> Vec<String> {
    let mut notes = Vec::new();
    let mut gone = |r: std::io::Result<()>, what: String| {
        if let Err(e) = r {
            if e.kind() != std::io::ErrorKind::NotFound {
                notes.push(format!("could not remove {what}: {e}"));
            }
        }
    };
    // Files first: worker w's create went through directories in order, `files` in each.
    if let Some(created) = &made.files {
        for (w, top) in tops.iter().enumerate() {
            let mut left = created[w];
            for d in 0..spec.dirs {
                if left == 0 {
                    break;
                }
                let Ok(dir) = top.open_dir(dir_name(d)) else {
                    left = left.saturating_sub(u64::from(spec.files));
                    continue;
                };
                for f in 0..spec.files {
                    if left == 0 {
                        break;
                    }
                    left -= 1;
                    let n = file_name(w as u32, f, made.renamed);
                    if let Err(e) = dir.remove_file(&n) {
                        if e.kind() == std::io::ErrorKind::NotFound {
                            // Stopped in the middle of a rename: the other name.
                            let _ = dir.remove_file(file_name(w as u32, f, !made.renamed));
                        }
                    }
                }
            }
        }
    }
    for (w, top) in tops.iter().enumerate() {
        let w = w as u32;
        if made.dirs {
            for d in 0..spec.dirs {
                if !spec.shared || d % spec.workers == w {
                    let n = dir_name(d);
                    gone(top.remove_dir(&n), top.shown(&n).display().to_string());
                }
            }
        }
        if !spec.shared {
            let n = format!("w{w}");
            gone(tree.remove_dir(&n), tree.shown(&n).display().to_string());
        }
    }
    gone(
        target.remove_dir(name),
        target.shown(name).display().to_string(),
    );
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(shared: bool, ops: &[Op]) -> MetaSpec {
        MetaSpec {
            workers: 3,
            dirs: 4,
            files: 10,
            file_size: 4096,
            ops: ops.to_vec(),
            shared,
        }
    }

    #[test]
    fn every_operation_is_counted_and_nothing_is_left() {
        for shared in [false, true] {
            let tmp = tempfile::tempdir().unwrap();
            std::fs::write(tmp.path().join("theirs"), b"x").unwrap();
            let target = Dir::open(tmp.path()).unwrap();
            let stop = Arc::new(AtomicBool::new(false));
            let (phases, notes) =
                run_meta(&target, &spec(shared, &META_OPS), &stop, &mut |_| {}).unwrap();
            assert!(notes.is_empty(), "{notes:?}");
            assert_eq!(phases.len(), 9);
            for p in &phases {
                let mut total = Snapshot::new();
                for s in p.seconds.iter().flatten() {
                    total += s;
                }
                let r = total
                    .ops()
                    .find(|(op, _)| *op == p.op)
                    .map(|(_, r)| r.ops)
                    .unwrap_or(0);
                let want = if matches!(p.op, Op::Mkdir | Op::Rmdir) {
                    if shared {
                        4
                    } else {
                        12
                    }
                } else {
                    3 * 4 * 10
                };
                assert_eq!(r, want, "{} shared={shared}", p.op.name());
            }
            let left: Vec<_> = std::fs::read_dir(tmp.path())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert_eq!(left, vec![std::ffi::OsString::from("theirs")]);
        }
    }

    #[test]
    fn what_is_not_asked_is_made_untimed_and_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let target = Dir::open(tmp.path()).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let (phases, notes) =
            run_meta(&target, &spec(false, &[Op::Stat]), &stop, &mut |_| {}).unwrap();
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(phases.len(), 1);
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    }
}
