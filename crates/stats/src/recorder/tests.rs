use super::*;
use proptest::prelude::*;

#[test]
fn errors_are_tallied_by_kind() {
    let mut r = Recorder::new();
    r.record_error(Op::Write, ErrorKind::NoSpace, 8192, 0);
    r.record_error(Op::Write, ErrorKind::NoSpace, 4096, 1);
    r.record_error(Op::Read, ErrorKind::from_errno(5), 0, 0);
    let s = r.take();
    let e: Vec<_> = s.errors.entries().copied().collect();
    assert_eq!(e.len(), 2);
    assert_eq!(
        (e[0].kind, e[0].count, e[0].first_offset),
        (ErrorKind::NoSpace, 2, 8192)
    );
    assert_eq!(e[1].kind, ErrorKind::Io);
    assert_eq!(s.op(Op::Write).errors, 2);
}

#[test]
fn error_kinds_survive_their_code() {
    for k in [
        ErrorKind::Io,
        ErrorKind::NoSpace,
        ErrorKind::Invalid,
        ErrorKind::Short,
        ErrorKind::Other(95),
        ErrorKind::Http(404),
        ErrorKind::Http(500),
        ErrorKind::Throttled,
        ErrorKind::Timeout,
        ErrorKind::Reset,
        ErrorKind::Refused,
        ErrorKind::Network,
        ErrorKind::Corrupt,
        ErrorKind::Misplaced,
        ErrorKind::Stale,
        ErrorKind::Hole,
        ErrorKind::Protocol,
        ErrorKind::Interrupted,
        ErrorKind::Http(65535),
        ErrorKind::Scsi(3),
        ErrorKind::Scsi(0x108),
        ErrorKind::Scsi(0x1ff),
    ] {
        assert_eq!(ErrorKind::from_code(k.code()), k, "{}", k.name());
        assert_eq!(ErrorKind::named(&k.name()).unwrap_or(k), k, "{}", k.name());
    }
    assert_eq!(ErrorKind::Scsi(3).name(), "scsi-medium-error");
    assert_eq!(ErrorKind::named("scsi-busy"), Some(ErrorKind::Scsi(0x108)));
}

#[test]
fn tally_overflow_is_counted() {
    let mut t = ErrorTally::default();
    for errno in 100..120 {
        t.record(Op::Read, ErrorKind::Other(errno), 0, 0);
    }
    assert_eq!(t.entries().map(|e| e.count).sum::<u64>(), 20);
}

#[test]
fn swap_reuses_memory_and_clears() {
    let mut r = Recorder::new();
    r.record(Op::Read, 10, 5);
    let first = r.swap(Snapshot::new());
    assert_eq!(first.op(Op::Read).ops, 1);
    let second = r.swap(first);
    assert_eq!(second.op(Op::Read).ops, 0);
    r.record(Op::Write, 10, 5);
    assert_eq!(r.take().op(Op::Write).ops, 1);
}

fn recorder_of(samples: &[(bool, u64, u64)]) -> Snapshot {
    let mut r = Recorder::new();
    for &(read, bytes, lat) in samples {
        if lat % 7 == 0 {
            r.record_error(
                if read { Op::Read } else { Op::Write },
                ErrorKind::Other((lat % 3) as i32),
                bytes,
                0,
            );
        } else {
            r.record(if read { Op::Read } else { Op::Write }, bytes, lat);
        }
    }
    r.take()
}

proptest! {
    /// Merged recorders equal one recorder of everything, in any order.
    #[test]
    fn merge_is_exact_in_any_order(
        samples in proptest::collection::vec((any::<bool>(), 0u64..1 << 20, 1u64..HIGHEST_NS), 0..200),
        cuts in proptest::collection::vec(0usize..200, 0..6),
        seed in any::<u64>(),
    ) {
        let whole = recorder_of(&samples);
        let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (samples.len() + 1)).collect();
        bounds.push(0);
        bounds.push(samples.len());
        bounds.sort_unstable();
        let mut parts: Vec<Snapshot> = bounds.windows(2).map(|w| recorder_of(&samples[w[0]..w[1]])).collect();
        // A deterministic shuffle driven by the seed.
        let mut s = seed | 1;
        for i in (1..parts.len()).rev() {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            parts.swap(i, (s % (i as u64 + 1)) as usize);
        }
        let mut merged = Snapshot::new();
        for p in &parts {
            merged += p;
        }
        for op in Op::ALL {
            prop_assert_eq!(merged.op(op), whole.op(op));
        }
        let count = |s: &Snapshot| {
            let mut v: Vec<_> = s.errors.entries().map(|e| (e.op, e.kind, e.count)).collect();
            v.sort_by_key(|x| (x.0, x.1.name()));
            v
        };
        prop_assert_eq!(count(&merged), count(&whole));
    }
}

#[test]
fn a_timed_out_request_counts_in_latency_not_in_operations() {
    let mut r = Recorder::new();
    r.record(Op::Put, 4096, 15_000_000);
    r.record_timeout(Op::Put, 30_000_000_000);
    let s = r.take();
    let put = s.op(Op::Put);
    assert_eq!((put.ops, put.errors, put.bytes), (1, 1, 4096));
    // The 30 s wait is the maximum latency, not left out.
    assert!(put.hist.max() >= 29_000_000_000, "{}", put.hist.max());
    let e = s.errors.entries().next().unwrap();
    assert_eq!((e.kind, e.count), (ErrorKind::Timeout, 1));
}

proptest! {
    /// `record_n` of a run is `n` calls of `record`: the histogram, operations and bytes.
    #[test]
    fn a_run_recorded_at_once_equals_its_ios_one_by_one(
        runs in proptest::collection::vec((any::<bool>(), 0u64..1 << 20, 0u64..HIGHEST_NS, 1u64..40), 0..30),
    ) {
        let (mut once, mut each) = (Recorder::new(), Recorder::new());
        for &(read, bytes, lat, n) in &runs {
            let op = if read { Op::Read } else { Op::Write };
            once.record_n(op, bytes, lat, n);
            for _ in 0..n {
                each.record(op, bytes, lat);
            }
        }
        let (once, each) = (once.take(), each.take());
        for op in Op::ALL {
            prop_assert_eq!(once.op(op), each.op(op));
        }
    }
}

/// What the recorder counts reaches every reader of its snapshot: a swap, a take, a look at
/// the current one, each the histogram recording each latency directly would hold; a
/// discarded ramp leaves nothing behind.
#[test]
fn counted_latencies_reach_every_reader_and_a_discard_drops_them() {
    let lats = [
        1u64,
        900,
        2047,
        2048,
        31_337,
        1 << 30,
        HIGHEST_NS,
        HIGHEST_NS * 3,
    ];
    let direct = || {
        let mut h = crate::recorder::new_histogram();
        for &l in &lats {
            h.saturating_record(l);
        }
        h
    };
    let mut r = Recorder::new();
    let fill = |r: &mut Recorder| {
        for &l in &lats {
            r.record(Op::Read, 4096, l);
        }
    };
    fill(&mut r);
    assert_eq!(r.current().op(Op::Read).hist, direct());
    // Looked at, then recorded again: folded once, counted twice.
    fill(&mut r);
    let mut twice = direct();
    twice.add(direct()).unwrap();
    let swapped = r.swap(Snapshot::new());
    assert_eq!(swapped.op(Op::Read).hist, twice);
    assert_eq!(swapped.op(Op::Read).ops, 2 * lats.len() as u64);
    fill(&mut r);
    r.discard();
    fill(&mut r);
    let taken = r.take();
    assert_eq!(taken.op(Op::Read).hist, direct());
    assert_eq!(taken.op(Op::Read).ops, lats.len() as u64);
}
