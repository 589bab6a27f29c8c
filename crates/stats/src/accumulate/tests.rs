//! Tests of accumulate.rs.

use super::*;
use crate::{decode_histogram, Recorder, SparseHist};

fn job(name: &str) -> PhaseJob {
    PhaseJob {
        name: name.into(),
        engine: "null".into(),
        direct: false,
        workers: 1,
        iodepth: 1,
        iodepth_batch: 1,
        working_set_bytes: 0,
        rate_iops: None,
        target: None,
    }
}

fn snap(n: u64, lat: u64) -> Snapshot {
    let mut r = Recorder::new();
    for _ in 0..n {
        r.record(Op::Read, 4096, lat);
    }
    r.take()
}

#[test]
fn intervals_close_when_every_worker_moved_on() {
    let a = WorkerKey {
        host: 0,
        job: 0,
        worker: 0,
    };
    let b = WorkerKey {
        host: 0,
        job: 0,
        worker: 1,
    };
    let mut acc = PhaseAccumulator::new("run", vec!["h".into()], vec![job("j")], &[a, b]);
    acc.add(a, 0, &snap(10, 100));
    assert!(acc.close_ready().is_empty());
    acc.add(a, 1, &snap(10, 100));
    acc.add(b, 0, &snap(5, 100));
    assert!(acc.close_ready().is_empty(), "b has not moved past 0");
    acc.add(b, 2, &snap(5, 100)); // b stalled through second 1
    let closed = acc.close_ready();
    assert_eq!(closed.len(), 1);
    assert_eq!(closed[0].total.ops, 15);
    acc.add(a, 2, &snap(1, 100));
    acc.add(a, 3, &snap(1, 100));
    assert_eq!(
        acc.close_ready().len(),
        1,
        "second 1 closes: a is at 3, b at 2"
    );
    acc.worker_done(a, 3_500_000_000);
    acc.worker_done(b, 3_400_000_000);
    let phase = acc.finish(0, 3_500_000_000);
    let ops: Vec<u64> = phase.intervals.iter().map(|i| i.total.ops).collect();
    // The last half second is folded into the whole second before it.
    assert_eq!(ops, vec![15, 10, 7]);
    assert_eq!(phase.intervals[2].duration_ns, 1_500_000_000);
    assert_eq!(phase.intervals[2].total.iops, 7.0 / 1.5);
    assert_eq!(phase.total.ops, 32);
    assert_eq!(phase.total.iops, 32.0 / 3.5);
}

/// Issue 16: a phase ending 120 ns past a whole second has no 8-million-IOPS sliver.
#[test]
fn issue16_no_sliver_interval() {
    let a = WorkerKey {
        host: 0,
        job: 0,
        worker: 0,
    };
    let mut acc = PhaseAccumulator::new("run", vec!["h".into()], vec![job("j")], &[a]);
    for s in 0..5 {
        acc.add(a, s, &snap(1000, 100));
    }
    acc.add(a, 5, &snap(1, 100));
    acc.worker_done(a, 5_000_000_120);
    let phase = acc.finish(0, 5_000_000_120);
    assert_eq!(phase.intervals.len(), 5);
    let last = phase.intervals.last().unwrap();
    assert_eq!(last.total.ops, 1001);
    assert!(last.total.iops < 1002.0, "{}", last.total.iops);
    assert!(phase
        .intervals
        .iter()
        .all(|i| i.duration_ns >= 1_000_000_000));
}

/// A phase shorter than a second keeps its one partial interval.
#[test]
fn short_phase_keeps_its_partial_interval() {
    let a = WorkerKey {
        host: 0,
        job: 0,
        worker: 0,
    };
    let mut acc = PhaseAccumulator::new("run", vec!["h".into()], vec![job("j")], &[a]);
    acc.add(a, 0, &snap(10, 100));
    acc.worker_done(a, 300_000_000);
    let phase = acc.finish(0, 300_000_000);
    assert_eq!(phase.intervals.len(), 1);
    assert_eq!(phase.intervals[0].duration_ns, 300_000_000);
}

#[test]
fn empty_seconds_are_reported_as_zero() {
    let a = WorkerKey {
        host: 0,
        job: 0,
        worker: 0,
    };
    let mut acc = PhaseAccumulator::new("run", vec!["h".into()], vec![job("j")], &[a]);
    acc.add(a, 0, &snap(3, 100));
    acc.add(a, 2, &snap(3, 100));
    acc.worker_done(a, 3_000_000_000);
    let phase = acc.finish(0, 3_000_000_000);
    let ops: Vec<u64> = phase.intervals.iter().map(|i| i.total.ops).collect();
    assert_eq!(ops, vec![3, 0, 3]);
}

#[test]
fn hosts_and_jobs_sum_to_total_and_histograms_decode() {
    let keys = [
        WorkerKey {
            host: 0,
            job: 0,
            worker: 0,
        },
        WorkerKey {
            host: 1,
            job: 0,
            worker: 0,
        },
        WorkerKey {
            host: 1,
            job: 1,
            worker: 0,
        },
    ];
    let mut acc = PhaseAccumulator::new(
        "run:g",
        vec!["h0".into(), "h1".into()],
        vec![job("a"), job("b")],
        &keys,
    );
    for (i, k) in keys.iter().enumerate() {
        acc.add(*k, 0, &snap(10 * (i as u64 + 1), 1000 * (i as u64 + 1)));
        acc.worker_done(*k, 1_000_000_000);
    }
    let phase = acc.finish(5, 1_000_000_000);
    assert_eq!(phase.total.ops, 60);
    assert_eq!(
        phase.by_host["h0"].total.ops + phase.by_host["h1"].total.ops,
        60
    );
    assert_eq!(phase.by_job["a"].total.ops, 30);
    assert_eq!(phase.by_job["b"].total.ops, 30);
    let mut merged = crate::new_histogram();
    for text in phase.histograms.values() {
        merged.add(decode_histogram(text).unwrap()).unwrap();
    }
    assert_eq!(merged.len(), 60);
    assert_eq!(merged.max(), phase.total.latency_ns.unwrap().max);
}

#[test]
fn each_hosts_seconds_follow_the_phase_intervals_and_add_up_to_the_host() {
    let keys = [0u16, 1].map(|host| WorkerKey {
        host,
        job: 0,
        worker: 0,
    });
    let mut acc =
        PhaseAccumulator::new("run", vec!["h0".into(), "h1".into()], vec![job("a")], &keys);
    // Seconds 0, 1 and a remainder 2 (0.4 s), folded into second 1.
    for i in 0..3u32 {
        acc.add(keys[0], i, &snap(10 + u64::from(i), 1000));
        acc.add(keys[1], i, &snap(100, 1000));
    }
    for k in &keys {
        acc.worker_done(*k, 2_400_000_000);
    }
    let phase = acc.finish(0, 2_400_000_000);
    assert_eq!(phase.intervals.len(), 2);
    let h0 = &phase.by_host["h0"].seconds;
    let t: Vec<(u32, u64)> = h0.iter().map(|s| (s.t_s, s.duration_ns)).collect();
    let phase_t: Vec<(u32, u64)> = phase
        .intervals
        .iter()
        .map(|i| (i.t_s, i.duration_ns))
        .collect();
    assert_eq!(t, phase_t);
    let ops: Vec<u64> = h0
        .iter()
        .map(|s| s.by_op.values().map(|c| c.ops).sum())
        .collect();
    assert_eq!(ops, [10, 11 + 12]);
    let total: u64 = phase.by_host["h1"]
        .seconds
        .iter()
        .flat_map(|s| s.by_op.values())
        .map(|c| c.ops)
        .sum();
    assert_eq!(total, phase.by_host["h1"].total.ops);
    // One host: no per-host seconds (the phase's intervals are its).
    let mut one = PhaseAccumulator::new("run", vec!["h0".into()], vec![job("a")], &keys[..1]);
    one.add(keys[0], 0, &snap(5, 1000));
    one.worker_done(keys[0], 1_000_000_000);
    assert!(one.finish(0, 1_000_000_000).by_host["h0"]
        .seconds
        .is_empty());
}

#[test]
fn a_failed_hosts_rate_is_over_the_time_it_ran() {
    let a = WorkerKey {
        host: 0,
        job: 0,
        worker: 0,
    };
    let b = WorkerKey {
        host: 1,
        job: 0,
        worker: 0,
    };
    let mut acc =
        PhaseAccumulator::new("run", vec!["a".into(), "b".into()], vec![job("j")], &[a, b]);
    // Both do 1000 I/Os a second; b is cut off after 3 s of an 8 s phase.
    for t in 0..8 {
        acc.add(a, t, &snap(1000, 1000));
        if t < 3 {
            acc.add(b, t, &snap(1000, 1000));
        }
    }
    acc.host_failed(1);
    acc.worker_done(a, 8_000_000_000);
    let p = acc.finish(0, 8_000_000_000);
    let (ha, hb) = (&p.by_host["a"], &p.by_host["b"]);
    assert_eq!(ha.ran_ns, None);
    assert!((ha.total.iops - 1000.0).abs() < 1.0, "{}", ha.total.iops);
    assert_eq!(hb.ran_ns, Some(3_000_000_000));
    assert!((hb.total.iops - 1000.0).abs() < 1.0, "{}", hb.total.iops);
    // The phase's total stays over the phase: what was done in it, all hosts together.
    assert!(
        (p.total.iops - 11_000.0 / 8.0).abs() < 1.0,
        "{}",
        p.total.iops
    );
}

#[test]
fn a_phase_whose_every_host_failed_lasts_the_seconds_they_sent() {
    let keys = [0u16, 1].map(|host| WorkerKey {
        host,
        job: 0,
        worker: 0,
    });
    let mut acc = PhaseAccumulator::new("run", vec!["a".into(), "b".into()], vec![job("j")], &keys);
    // a sends 3 seconds, b 2, then both are cut off: no worker ever says it is done.
    for t in 0..3 {
        acc.add(keys[0], t, &snap(1000, 1000));
        if t < 2 {
            acc.add(keys[1], t, &snap(500, 1000));
        }
    }
    acc.host_failed(0);
    acc.host_failed(1);
    assert_eq!(acc.end_ns(), 3_000_000_000);
    let end = acc.end_ns();
    let p = acc.finish(0, end);
    assert_eq!(p.duration_ns, 3_000_000_000);
    assert!(
        (p.total.iops - 4000.0 / 3.0).abs() < 1.0,
        "{}",
        p.total.iops
    );
    let (ha, hb) = (&p.by_host["a"], &p.by_host["b"]);
    assert!((ha.total.iops - 1000.0).abs() < 1.0, "{}", ha.total.iops);
    assert_eq!(hb.ran_ns, Some(2_000_000_000));
    assert!((hb.total.iops - 500.0).abs() < 1.0, "{}", hb.total.iops);
}

/// Issue 53: a worker that ended its load at 5.12 s and then failed (its `--verify` pass
/// found a bad block) measured 5.12 s, not the 6 whole seconds its host's failure rounds to.
#[test]
fn a_host_that_failed_after_its_workers_ended_lasts_to_their_end() {
    let key = WorkerKey {
        host: 0,
        job: 0,
        worker: 0,
    };
    let mut acc = PhaseAccumulator::new("run", vec!["a".into()], vec![job("j")], &[key]);
    for t in 0..6 {
        acc.add(key, t, &snap(if t < 5 { 200 } else { 24 }, 1000));
    }
    acc.worker_done(key, 5_120_000_000);
    acc.host_failed(0);
    assert_eq!(acc.end_ns(), 5_120_000_000);
    let end = acc.end_ns();
    let p = acc.finish(0, end);
    assert!(
        (p.total.iops - 1024.0 / 5.12).abs() < 0.01,
        "{}",
        p.total.iops
    );
    assert!((p.by_host["a"].total.iops - 200.0).abs() < 0.01);
}

/// A snapshot as a remote agent's second arrives: each histogram as its non-zero counts.
fn parts(s: &Snapshot) -> Vec<(Op, SparseRecord)> {
    use hdrhistogram::serialization::{Serializer as _, V2Serializer};
    let sparse = |h: &hdrhistogram::Histogram<u64>| {
        let mut bytes = Vec::new();
        V2Serializer::new().serialize(h, &mut bytes).unwrap();
        SparseHist::decode(&bytes).unwrap()
    };
    s.ops()
        .map(|(op, r)| {
            let record = SparseRecord {
                hist: sparse(&r.hist),
                service: r.service.as_ref().map(sparse),
                first_byte: r.first_byte.as_ref().map(sparse),
                ops: r.ops,
                bytes: r.bytes,
                errors: r.errors,
            };
            (op, record)
        })
        .collect()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// A phase of remote hosts, their seconds gathered and merged as counts (a batch at a
    /// time, in seconds enough for several) and their figures made from them, is the phase of the same seconds merged as whole snapshots: every host's, job's
    /// and the total's figures, the encoded histograms byte for byte, the errors.
    #[test]
    fn remote_hosts_figures_are_those_of_their_whole_histograms(
        seconds in proptest::collection::vec(
            proptest::collection::vec((0usize..4, 1u64..50_000_000, 0u64..3), 0..80),
            1..10,
        ),
    ) {
        // Host 0 one job; host 1 two jobs; host 2 reads and writes under an open-loop rate.
        let keys = [(0u16, 0u16), (1, 0), (1, 1), (2, 0)].map(|(host, job)| WorkerKey { host, job, worker: 0 });
        let hosts = vec!["h0".to_string(), "h1".into(), "h2".into()];
        let mut whole = PhaseAccumulator::new("run:p", hosts.clone(), vec![job("a"), job("b")], &keys);
        let mut counts = PhaseAccumulator::new("run:p", hosts, vec![job("a"), job("b")], &keys);
        for (t, second) in seconds.iter().enumerate() {
            for (w, key) in keys.iter().enumerate() {
                let mut r = Recorder::new();
                for &(_, lat, kind) in second.iter().filter(|s| s.0 == w) {
                    let op = if kind == 1 { Op::Write } else { Op::Read };
                    match (w, kind) {
                        (3, _) => r.record_scheduled(op, 4096, lat + lat / 2, lat),
                        (_, 2) => r.record_error(op, crate::ErrorKind::Io, lat, 0),
                        _ => r.record(op, 4096, lat),
                    }
                }
                let s = r.take();
                whole.add(*key, t as u32, &s);
                counts.add_parts(*key, t as u32, &parts(&s), (&s.errors, s.verified));
            }
        }
        for key in keys {
            whole.worker_done(key, 3_000_000_000);
            counts.worker_done(key, 3_000_000_000);
        }
        let (a, b) = (whole.finish(0, 3_000_000_000), counts.finish(0, 3_000_000_000));
        proptest::prop_assert_eq!(&a.by_host, &b.by_host);
        proptest::prop_assert_eq!(&a.by_job, &b.by_job);
        proptest::prop_assert_eq!(&a.total, &b.total);
        proptest::prop_assert_eq!(&a.histograms, &b.histograms);
        proptest::prop_assert_eq!(&a.errors, &b.errors);
    }
}

/// A source that sends seconds both as counts and as snapshots (never so in a run, but
/// possible) is made whole once and loses nothing: its counts gathered but not yet merged
/// included.
#[test]
fn a_source_sent_as_counts_then_whole_keeps_every_count() {
    let key = WorkerKey {
        host: 0,
        job: 0,
        worker: 0,
    };
    let hosts = vec!["h0".to_string(), "h1".into()];
    let mut both = PhaseAccumulator::new("run:m", hosts.clone(), vec![job("a")], &[key]);
    let mut whole = PhaseAccumulator::new("run:m", hosts, vec![job("a")], &[key]);
    let seconds: Vec<Snapshot> = (0..5u64).map(|t| snap(3 + t, 1_000 * (t + 1))).collect();
    for (t, s) in seconds.iter().enumerate() {
        if t < 3 {
            both.add_parts(key, t as u32, &parts(s), (&s.errors, s.verified));
        } else {
            both.add(key, t as u32, s);
        }
        whole.add(key, t as u32, s);
    }
    both.worker_done(key, 5_000_000_000);
    whole.worker_done(key, 5_000_000_000);
    let (a, b) = (
        both.finish(0, 5_000_000_000),
        whole.finish(0, 5_000_000_000),
    );
    assert_eq!(a.by_host["h0"].total.ops, 3 + 4 + 5 + 6 + 7);
    assert_eq!(a.by_host, b.by_host);
    assert_eq!(a.histograms, b.histograms);
}

/// Issue 55: jobs on several targets give each target its figures from its own merged
/// histogram, the total their sum; a run of one target has none.
#[test]
fn by_target_sums_to_the_total_and_keeps_each_targets_latency() {
    let keys: Vec<WorkerKey> = (0..3)
        .map(|j| WorkerKey {
            host: 0,
            job: j,
            worker: 0,
        })
        .collect();
    let on = |name: &str, t: &str| PhaseJob {
        target: Some(t.into()),
        ..job(name)
    };
    let jobs = vec![on("a@1", "/d1"), on("b@1", "/d1"), on("a@2", "/d2")];
    let mut acc = PhaseAccumulator::new("run", vec!["h".into()], jobs, &keys);
    acc.add(keys[0], 0, &snap(10, 1_000));
    acc.add(keys[1], 0, &snap(20, 1_000));
    acc.add(keys[2], 0, &snap(5, 900_000));
    for k in &keys {
        acc.worker_done(*k, 1_000_000_000);
    }
    let p = acc.finish(0, 1_000_000_000);
    assert_eq!(p.by_target.len(), 2);
    assert_eq!(p.by_target["/d1"].total.ops, 30);
    assert_eq!(p.by_target["/d2"].total.ops, 5);
    let sum: u64 = p.by_target.values().map(|b| b.total.ops).sum();
    assert_eq!(sum, p.total.ops);
    let bytes: u64 = p.by_target.values().map(|b| b.total.bytes).sum();
    assert_eq!(bytes, p.total.bytes);
    // Each target's seconds on the phase's intervals, summing to each interval's total.
    for (t, ops) in [("/d1", 30), ("/d2", 5)] {
        let secs = &p.by_target[t].seconds;
        assert_eq!(secs.len(), p.intervals.len(), "{t}");
        assert_eq!(secs[0].t_s, p.intervals[0].t_s);
        assert_eq!(secs[0].by_op.get("read").map(|c| c.ops), Some(ops), "{t}");
    }
    let lat = |t: &str| p.by_target[t].total.latency_ns.as_ref().unwrap().p50;
    assert!(
        lat("/d2") > 100 * lat("/d1"),
        "each target its own histogram"
    );
    // One target: no by_target.
    let mut one = PhaseAccumulator::new("run", vec!["h".into()], vec![on("a", "/d1")], &keys[..1]);
    one.add(keys[0], 0, &snap(3, 1_000));
    one.worker_done(keys[0], 1_000_000_000);
    assert!(one.finish(0, 1_000_000_000).by_target.is_empty());
}
