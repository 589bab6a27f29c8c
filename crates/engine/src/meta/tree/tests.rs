//! The tree's operations counted, and nothing left behind.

use super::*;
use crate::files::Dir;
use crate::meta::namespace::read_all;
use std::io::Write;
use stormark_spec::Tree;

fn job(shared: bool, tree: Tree, ops: &[MetaOp]) -> MetaJob {
    MetaJob {
        tree,
        files: 10,
        file_size: 4096,
        ops: ops.to_vec(),
        shared,
        wear_out: false,
        leaf_only: false,
        fsync: false,
        verify_read: false,
        random_order: false,
        sync_phases: false,
    }
}

fn count(rec: &mut Recorder, op: MetaOp) -> (u64, u64) {
    let snap = rec.take();
    let ok = snap
        .ops()
        .find(|(o, _)| *o == meta_stat_op(op))
        .map_or(0, |(_, r)| r.ops);
    let errors = snap.errors.entries().map(|e| e.count).sum();
    (ok, errors)
}

#[test]
fn every_operation_is_counted_and_nothing_is_left() {
    for (shared, tree, dirs) in [
        (false, Tree::Flat { dirs: 4 }, 4 * 3),
        (true, Tree::Flat { dirs: 4 }, 4),
        (
            false,
            Tree::Deep {
                depth: 2,
                branch: 3,
            },
            13 * 3,
        ),
        (
            true,
            Tree::Deep {
                depth: 2,
                branch: 3,
            },
            13,
        ),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("theirs"), b"x").unwrap();
        let top = Dir::open(tmp.path()).unwrap();
        let tops: Vec<Arc<Dir>> = if shared {
            let t = Arc::new(top.create_dir("shared").unwrap());
            vec![t; 3]
        } else {
            (0..3)
                .map(|w| Arc::new(top.create_dir(format!("w{w}")).unwrap()))
                .collect()
        };
        let j = job(shared, tree, &MetaOp::ALL);
        let t = MetaTree::new(&j, tops.into_iter().map(|t| (t, Local)).collect(), 0, 3);
        t.make_dirs().unwrap();
        for op in MetaOp::ALL {
            let mut rec = Recorder::new();
            let mut got = (0, 0);
            for w in 0..3 {
                t.ready(w, op);
                t.timed(w, op, &mut rec, &mut |_, _, _| true);
                let (ok, bad) = count(&mut rec, op);
                got = (got.0 + ok, got.1 + bad);
            }
            let want = if op.on_dirs() {
                dirs
            } else {
                3 * tree.dirs() * 10
            };
            assert_eq!(got, (want, 0), "{} shared={shared} {tree:?}", op.name());
        }
        assert!(t.cleanup().is_empty());
        if shared {
            top.remove_dir("shared").unwrap();
        } else {
            for w in 0..3 {
                top.remove_dir(format!("w{w}")).unwrap();
            }
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
    let top = Arc::new(Dir::open(tmp.path()).unwrap().create_dir("w0").unwrap());
    let t = MetaTree::new(
        &job(false, Tree::Flat { dirs: 2 }, &[MetaOp::Stat]),
        vec![(top, Local)],
        0,
        1,
    );
    t.make_dirs().unwrap();
    for _ in 0..2 {
        let mut rec = Recorder::new();
        t.ready(0, MetaOp::Stat);
        t.timed(0, MetaOp::Stat, &mut rec, &mut |_, _, _| true);
        assert_eq!(count(&mut rec, MetaOp::Stat), (20, 0));
    }
    assert!(t.cleanup().is_empty());
    assert_eq!(std::fs::read_dir(tmp.path().join("w0")).unwrap().count(), 0);
}

#[test]
fn a_delete_stopped_halfway_leaves_nothing_after_cleanup() {
    // The stage's end falls in the middle of a delete pass (a meta job beside other load):
    // the files it had not reached yet are still removed at the end.
    let tmp = tempfile::tempdir().unwrap();
    let top = Arc::new(Dir::open(tmp.path()).unwrap().create_dir("w0").unwrap());
    let t = MetaTree::new(
        &job(
            false,
            Tree::Flat { dirs: 2 },
            &[MetaOp::Create, MetaOp::Delete],
        ),
        vec![(top, Local)],
        0,
        1,
    );
    t.make_dirs().unwrap();
    let mut rec = Recorder::new();
    t.ready(0, MetaOp::Create);
    assert!(t.timed(0, MetaOp::Create, &mut rec, &mut |_, _, _| true));
    let mut calls = 0;
    t.ready(0, MetaOp::Delete);
    let whole = t.timed(0, MetaOp::Delete, &mut rec, &mut |_, _, _| {
        calls += 1;
        calls < 7
    });
    assert!(!whole);
    let left = |d: &str| {
        std::fs::read_dir(tmp.path().join("w0").join(d))
            .unwrap()
            .count()
    };
    assert_eq!(left("d0") + left("d1"), 20 - 7);
    // The next cycle's create first removes what is left (untimed), then makes them all.
    t.ready(0, MetaOp::Create);
    assert_eq!(left("d0") + left("d1"), 0);
    assert!(t.timed(0, MetaOp::Create, &mut rec, &mut |_, _, _| true));
    t.ready(0, MetaOp::Delete);
    let mut calls = 0;
    t.timed(0, MetaOp::Delete, &mut rec, &mut |_, _, _| {
        calls += 1;
        calls < 12
    });
    assert!(t.cleanup().is_empty());
    assert_eq!(std::fs::read_dir(tmp.path().join("w0")).unwrap().count(), 0);
}

#[test]
fn a_file_shorter_than_its_size_reads_as_short_not_as_a_device_error() {
    let tmp = tempfile::tempdir().unwrap();
    let mut f = std::fs::File::create(tmp.path().join("f")).unwrap();
    f.write_all(&[1u8; 100]).unwrap();
    let mut f = std::fs::File::open(tmp.path().join("f")).unwrap();
    let e = read_all(&mut f, &mut [0u8; 64], 4096).unwrap_err();
    assert_eq!(kind_of(&e), ErrorKind::Short);
    // An errno is what it says.
    assert_eq!(
        kind_of(&std::io::Error::from_raw_os_error(libc::ENOSPC)),
        ErrorKind::NoSpace
    );
}

/// Issue 60: mdtest's wear-out. A create cut short after 7 of 40 files, then topped up to 25
/// (the most another worker made): the next phase goes through exactly 25, each file made
/// once (no `eexist`), and the cleanup leaves nothing.
#[test]
fn a_cut_create_is_worn_out_to_the_count_asked() {
    let tmp = tempfile::tempdir().unwrap();
    let top = Dir::open(tmp.path()).unwrap();
    let tops = vec![(Arc::new(top.create_dir("w0").unwrap()), Local)];
    let j = job(
        false,
        Tree::Flat { dirs: 4 },
        &[MetaOp::Create, MetaOp::Stat],
    );
    let t = MetaTree::new(&j, tops, 0, 1);
    let mut rec = Recorder::new();
    t.ready(0, MetaOp::Create);
    let mut left = 7;
    t.timed(0, MetaOp::Create, &mut rec, &mut |_, _, _| {
        left -= 1;
        left > 0
    });
    assert_eq!(count(&mut rec, MetaOp::Create), (7, 0));
    t.ready(0, MetaOp::Stat);
    t.top_up(0, 25);
    // Asked again, or for fewer, it makes nothing more.
    t.top_up(0, 25);
    t.top_up(0, 3);
    t.timed(0, MetaOp::Stat, &mut rec, &mut |_, _, _| true);
    assert_eq!(count(&mut rec, MetaOp::Stat), (25, 0));
    assert!(t.cleanup().is_empty());
    assert_eq!(std::fs::read_dir(tmp.path().join("w0")).unwrap().count(), 0);
}

/// Issue 60: mdtest's `-L`: files in the leaves alone (9 of a depth 2, branch 3 tree's 13).
#[test]
fn leaf_only_files_are_in_the_leaves_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let top = Dir::open(tmp.path()).unwrap();
    let tops = vec![(Arc::new(top.create_dir("w0").unwrap()), Local)];
    let tree = Tree::Deep {
        depth: 2,
        branch: 3,
    };
    let mut j = job(false, tree, &[MetaOp::Create, MetaOp::Stat]);
    j.leaf_only = true;
    let t = MetaTree::new(&j, tops, 0, 1);
    let mut rec = Recorder::new();
    t.ready(0, MetaOp::Create);
    t.timed(0, MetaOp::Create, &mut rec, &mut |_, _, _| true);
    assert_eq!(count(&mut rec, MetaOp::Create), (90, 0));
    // d0 (the root) and d1..d3 hold their children alone; d4..d12 their 10 files each.
    let root = tmp.path().join("w0").join("d0");
    assert_eq!(std::fs::read_dir(&root).unwrap().count(), 3);
    assert_eq!(std::fs::read_dir(root.join("d1")).unwrap().count(), 3);
    assert_eq!(
        std::fs::read_dir(root.join("d1").join("d4"))
            .unwrap()
            .count(),
        10
    );
    t.ready(0, MetaOp::Stat);
    t.timed(0, MetaOp::Stat, &mut rec, &mut |_, _, _| true);
    assert_eq!(count(&mut rec, MetaOp::Stat), (90, 0));
    assert!(t.cleanup().is_empty());
    assert_eq!(std::fs::read_dir(tmp.path().join("w0")).unwrap().count(), 0);
}

/// Issue 60: mdtest's `-X`: each read checked; a file changed behind the run's back is
/// `corrupt`, the others checked clean.
#[test]
fn verified_reads_find_a_changed_file() {
    let tmp = tempfile::tempdir().unwrap();
    let top = Dir::open(tmp.path()).unwrap();
    let tops = vec![(Arc::new(top.create_dir("w0").unwrap()), Local)];
    let mut j = job(
        false,
        Tree::Flat { dirs: 1 },
        &[MetaOp::Create, MetaOp::Read],
    );
    j.verify_read = true;
    let t = MetaTree::new(&j, tops, 0, 1);
    let mut rec = Recorder::new();
    t.ready(0, MetaOp::Create);
    t.timed(0, MetaOp::Create, &mut rec, &mut |_, _, _| true);
    rec.take();
    // One byte of f0.3 changed in place.
    let f = tmp.path().join("w0").join("d0").join("f0.3");
    let mut bytes = std::fs::read(&f).unwrap();
    bytes[100] ^= 1;
    std::fs::write(&f, bytes).unwrap();
    t.ready(0, MetaOp::Read);
    t.timed(0, MetaOp::Read, &mut rec, &mut |_, _, _| true);
    let snap = rec.take();
    assert_eq!(snap.op(Op::Read).ops, 9);
    let e: Vec<_> = snap.errors.entries().map(|e| (e.kind, e.count)).collect();
    assert_eq!(e, [(ErrorKind::Corrupt, 1)]);
    assert_eq!((snap.verified.objects, snap.verified.bad), (10, 1));
    assert_eq!(snap.verified.bytes, 10 * 4096);
    assert!(t.cleanup().is_empty());
}

/// Issue 60: mdtest's `-R`: every file statted once, in a scattered order.
#[test]
fn random_order_stats_each_file_once() {
    for count in [0u64, 1, 2, 10, 12, 1000, 1001] {
        let (a, c) = scatter(count);
        let mut seen: Vec<u64> = (0..count).map(|k| (k * a + c) % count.max(1)).collect();
        if count > 3 {
            assert_ne!(seen[..3], [0, 1, 2], "{count}: not in order");
        }
        seen.sort();
        assert_eq!(seen, (0..count).collect::<Vec<_>>(), "{count}");
    }
    let tmp = tempfile::tempdir().unwrap();
    let top = Dir::open(tmp.path()).unwrap();
    let tops = vec![(Arc::new(top.create_dir("w0").unwrap()), Local)];
    let mut j = job(
        false,
        Tree::Flat { dirs: 3 },
        &[MetaOp::Create, MetaOp::Stat],
    );
    j.random_order = true;
    let t = MetaTree::new(&j, tops, 0, 1);
    let mut rec = Recorder::new();
    t.ready(0, MetaOp::Stat);
    t.timed(0, MetaOp::Stat, &mut rec, &mut |_, _, _| true);
    assert_eq!(count(&mut rec, MetaOp::Stat), (30, 0));
    assert!(t.cleanup().is_empty());
}
