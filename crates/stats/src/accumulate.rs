//! Merging worker snapshots into a phase: exact, incremental, one second at a time.

use std::collections::{BTreeMap, HashMap};

use crate::results::{
    encode_histogram, Breakdown, Counts, ErrorSummary, HostSecond, Interval, Phase, PhaseJob,
};
use crate::{ErrorTally, Op, OpRecord, Snapshot, Summary};

/// Names the source of a snapshot: which host, which job of the phase, which worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkerKey {
    /// Index into the phase's host names.
    pub host: u16,
    /// Index into the phase's jobs.
    pub job: u16,
    /// Worker number within the job on that host.
    pub worker: u32,
}

#[derive(Debug, Default, Clone, Copy)]
struct WorkerState {
    last_interval: Option<u32>,
    done: bool,
}

/// Builds one [`Phase`] from the snapshots its workers send, closing each 1-second interval
/// as soon as every worker has moved past it (for the live line) and the rest at the end.
#[derive(Debug)]
pub struct PhaseAccumulator {
    name: String,
    hosts: Vec<String>,
    jobs: Vec<PhaseJob>,
    per_source: BTreeMap<(u16, u16), Snapshot>,
    workers: HashMap<WorkerKey, WorkerState>,
    open: BTreeMap<u32, Snapshot>,
    closed: Vec<Interval>,
    /// What the last closed interval held, so that a remainder can be folded into it.
    last_closed: Option<Snapshot>,
    next_to_close: u32,
    end_ns: u64,
    /// With several hosts: each host's counts per second, by interval, host and operation.
    host_seconds: BTreeMap<(u32, u16), BTreeMap<Op, Counts>>,
    /// Hosts that failed or were cut off during the phase.
    failed: std::collections::BTreeSet<u16>,
}

impl PhaseAccumulator {
    /// A phase run by `workers` on `hosts`, with `jobs` described for the results.
    pub fn new(name: &str, hosts: Vec<String>, jobs: Vec<PhaseJob>, workers: &[WorkerKey]) -> Self {
        PhaseAccumulator {
            name: name.to_string(),
            hosts,
            jobs,
            per_source: BTreeMap::new(),
            workers: workers
                .iter()
                .map(|k| (*k, WorkerState::default()))
                .collect(),
            open: BTreeMap::new(),
            closed: Vec::new(),
            last_closed: None,
            next_to_close: 0,
            end_ns: 0,
            host_seconds: BTreeMap::new(),
            failed: Default::default(),
        }
    }

    /// Counts `r` as host `host`'s in interval `interval` (runs of several hosts only).
    fn count(&mut self, host: u16, interval: u32, op: Op, r: &OpRecord) {
        if self.hosts.len() < 2 || r.ops + r.errors == 0 && r.bytes == 0 {
            return;
        }
        let c = self
            .host_seconds
            .entry((interval, host))
            .or_default()
            .entry(op)
            .or_default();
        c.ops += r.ops;
        c.bytes += r.bytes;
        c.errors += r.errors;
    }

    /// Adds what worker `key` did in 1-second interval `interval` (0 = the first second after
    /// the ramp). Snapshots of one worker arrive in interval order.
    pub fn add(&mut self, key: WorkerKey, interval: u32, snap: &Snapshot) {
        if self.hosts.len() > 1 {
            for (op, r) in snap.ops() {
                self.count(key.host, interval, op, r);
            }
        }
        *self.per_source.entry((key.host, key.job)).or_default() += snap;
        *self.open.entry(interval).or_default() += snap;
        let state = self.workers.entry(key).or_default();
        state.last_interval = Some(state.last_interval.map_or(interval, |l| l.max(interval)));
    }

    /// [`PhaseAccumulator::add`] for a second that arrives as separate operation records (a
    /// remote agent's, decoded): only the operations that did something are carried.
    pub fn add_parts(
        &mut self,
        key: WorkerKey,
        interval: u32,
        ops: &[(Op, OpRecord)],
        errors: &ErrorTally,
    ) {
        for (op, r) in ops {
            self.count(key.host, interval, *op, r);
        }
        let source = self.per_source.entry((key.host, key.job)).or_default();
        for (op, r) in ops {
            *source.op_mut(*op) += r;
        }
        source.errors += errors;
        let open = self.open.entry(interval).or_default();
        for (op, r) in ops {
            *open.op_mut(*op) += r;
        }
        open.errors += errors;
        let state = self.workers.entry(key).or_default();
        state.last_interval = Some(state.last_interval.map_or(interval, |l| l.max(interval)));
    }

    /// Marks worker `key` finished, its last I/O at `end_ns` after the measured start.
    pub fn worker_done(&mut self, key: WorkerKey, end_ns: u64) {
        self.workers.entry(key).or_default().done = true;
        self.end_ns = self.end_ns.max(end_ns);
    }

    /// Marks every worker of `host` finished: the host failed or was cut off, so the phase
    /// must not wait for its seconds.
    pub fn host_failed(&mut self, host: u16) {
        self.failed.insert(host);
        for (k, w) in self.workers.iter_mut() {
            if k.host == host {
                w.done = true;
            }
        }
    }

    /// Closes every interval all workers have moved past, and returns the newly closed ones.
    pub fn close_ready(&mut self) -> &[Interval] {
        let before = self.closed.len();
        loop {
            let i = self.next_to_close;
            let ready = self
                .workers
                .values()
                .all(|w| w.done || w.last_interval.is_some_and(|l| l > i));
            if !ready || self.workers.values().all(|w| w.done) {
                break;
            }
            self.close(i, 1_000_000_000);
        }
        &self.closed[before..]
    }

    /// With several hosts: what each host did in closed second `t`, by operation (hosts that
    /// did nothing in it are left out).
    pub fn host_second(&self, t: u32) -> Vec<(&str, &BTreeMap<Op, Counts>)> {
        self.host_seconds
            .range((t, 0)..=(t, u16::MAX))
            .map(|((_, h), ops)| (self.hosts[*h as usize].as_str(), ops))
            .collect()
    }

    fn close(&mut self, i: u32, duration_ns: u64) {
        let snap = self.open.remove(&i).unwrap_or_default();
        self.closed.push(interval_of(i, duration_ns, &snap));
        self.last_closed = Some(snap);
        self.next_to_close = i + 1;
    }

    /// Folds the remainder `i` (shorter than a second) into the whole second before it, so
    /// that no interval is a sliver whose rate means nothing (one I/O in 120 ns is not 8
    /// million IOPS). The folded interval says its real length in `duration_ns`.
    fn fold_remainder(&mut self, i: u32, len: u64) {
        let rest = self.open.remove(&i).unwrap_or_default();
        let mut prev = self.last_closed.take().unwrap_or_default();
        let before = self.closed.pop().expect("a whole second was closed before");
        prev += &rest;
        self.closed
            .push(interval_of(before.t_s, before.duration_ns + len, &prev));
        self.last_closed = Some(prev);
        self.next_to_close = i + 1;
    }

    /// Describes the phase's jobs (known once they ran).
    pub fn set_jobs(&mut self, jobs: Vec<PhaseJob>) {
        self.jobs = jobs;
    }

    /// The phase's measured length so far (the latest worker end), ns.
    pub fn end_ns(&self) -> u64 {
        self.end_ns
    }

    /// Closes the remaining intervals and returns the phase. `duration_ns` is the measured
    /// span; `start_offset_ns` places it in the run.
    pub fn finish(mut self, start_offset_ns: u64, duration_ns: u64) -> Phase {
        let full_seconds = duration_ns / 1_000_000_000;
        let last = self
            .open
            .keys()
            .next_back()
            .copied()
            .unwrap_or(0)
            .max(full_seconds.saturating_sub(1) as u32);
        while self.next_to_close <= last {
            let i = self.next_to_close;
            let start = u64::from(i) * 1_000_000_000;
            let len = duration_ns.saturating_sub(start).min(1_000_000_000);
            if len == 0 && !self.open.contains_key(&i) {
                break;
            }
            let whole_before = self
                .closed
                .last()
                .is_some_and(|c| c.t_s + 1 == i && c.duration_ns >= 1_000_000_000);
            if len < 1_000_000_000 && whole_before {
                self.fold_remainder(i, len);
            } else {
                self.close(i, len.max(1));
            }
        }

        let mut total = Snapshot::new();
        let mut by_host: BTreeMap<u16, Snapshot> = BTreeMap::new();
        let mut by_job: BTreeMap<u16, Snapshot> = BTreeMap::new();
        let mut histograms = BTreeMap::new();
        let mut errors = Vec::new();
        for ((host, job), snap) in &self.per_source {
            total += snap;
            *by_host.entry(*host).or_default() += snap;
            *by_job.entry(*job).or_default() += snap;
            let host_name = self.hosts.get(*host as usize).cloned().unwrap_or_default();
            let job_name = self
                .jobs
                .get(*job as usize)
                .map_or_else(|| format!("job{job}"), |j| j.name.clone());
            for (op, r) in snap.ops() {
                if r.ops > 0 {
                    histograms.insert(
                        format!("{host_name}/{job_name}/{}", op.name()),
                        encode_histogram(&r.hist),
                    );
                    if let Some(service) = &r.service {
                        histograms.insert(
                            format!("{host_name}/{job_name}/{}/service", op.name()),
                            encode_histogram(service),
                        );
                    }
                    if let Some(first) = &r.first_byte {
                        histograms.insert(
                            format!("{host_name}/{job_name}/{}/first-byte", op.name()),
                            encode_histogram(first),
                        );
                    }
                }
            }
            for e in snap.errors.entries() {
                errors.push(ErrorSummary {
                    host: host_name.clone(),
                    job: job_name.clone(),
                    op: e.op.name().to_string(),
                    kind: e.kind.name(),
                    count: e.count,
                    first_offset: e.first_offset,
                });
            }
        }
        // Each host's seconds on the phase's intervals: a second folded into the one before
        // (the last, shorter remainder) counts there.
        let mut seconds: BTreeMap<u16, Vec<HostSecond>> = BTreeMap::new();
        for (h, _) in self
            .hosts
            .iter()
            .enumerate()
            .filter(|_| self.hosts.len() > 1)
        {
            let list: Vec<HostSecond> = self
                .closed
                .iter()
                .map(|c| HostSecond {
                    t_s: c.t_s,
                    duration_ns: c.duration_ns,
                    by_op: BTreeMap::new(),
                })
                .collect();
            seconds.insert(h as u16, list);
        }
        for ((i, h), ops) in &self.host_seconds {
            let Some(list) = seconds.get_mut(h) else {
                continue;
            };
            let Some(s) = list.iter_mut().rev().find(|s| s.t_s <= *i) else {
                continue;
            };
            for (op, c) in ops {
                let t = s.by_op.entry(op.name().to_string()).or_default();
                t.ops += c.ops;
                t.bytes += c.bytes;
                t.errors += c.errors;
            }
        }
        let breakdown = |s: &Snapshot, seconds: Vec<HostSecond>, ran: u64| Breakdown {
            ran_ns: (ran < duration_ns).then_some(ran),
            total: Summary::of(&s.total(), ran),
            by_op: by_op(s, ran),
            seconds,
        };
        // A failed host's rates are over the time it ran: to the end of the last second it
        // sent (what it did after that never arrived), not the whole phase.
        let ran = |h: u16| -> u64 {
            if !self.failed.contains(&h) {
                return duration_ns;
            }
            let last = self
                .workers
                .iter()
                .filter(|(k, _)| k.host == h)
                .filter_map(|(_, w)| w.last_interval)
                .max();
            last.map_or(duration_ns, |l| {
                ((u64::from(l) + 1) * 1_000_000_000).clamp(1, duration_ns.max(1))
            })
        };
        Phase {
            name: self.name,
            kind: None,
            start_offset_ns,
            duration_ns,
            total: Summary::of(&total.total(), duration_ns),
            by_op: by_op(&total, duration_ns),
            by_host: by_host
                .iter()
                .map(|(h, s)| {
                    let mine = seconds.remove(h).unwrap_or_default();
                    (self.hosts[*h as usize].clone(), breakdown(s, mine, ran(*h)))
                })
                .collect(),
            by_job: by_job
                .iter()
                .map(|(j, s)| {
                    (
                        self.jobs
                            .get(*j as usize)
                            .map_or_else(|| format!("job{j}"), |x| x.name.clone()),
                        breakdown(s, Vec::new(), duration_ns),
                    )
                })
                .collect(),
            jobs: self.jobs,
            errors,
            intervals: self.closed,
            histograms,
            host_starts_ns: BTreeMap::new(),
            start_uncertainty_ns: None,
            repetition: None,
        }
    }
}

/// Per-operation summaries of the operations that did anything.
fn by_op(s: &Snapshot, duration_ns: u64) -> BTreeMap<String, Summary> {
    s.ops()
        .filter(|(_, r)| r.ops + r.errors > 0 || r.bytes > 0)
        .map(|(op, r): (Op, _)| (op.name().to_string(), Summary::of(r, duration_ns)))
        .collect()
}

fn interval_of(i: u32, duration_ns: u64, s: &Snapshot) -> Interval {
    Interval {
        t_s: i,
        duration_ns,
        total: Summary::of(&s.total(), duration_ns),
        by_op: by_op(s, duration_ns),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{decode_histogram, Recorder};

    fn job(name: &str) -> PhaseJob {
        PhaseJob {
            name: name.into(),
            engine: "null".into(),
            direct: false,
            workers: 1,
            iodepth: 1,
            working_set_bytes: 0,
            rate_iops: None,
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
        let job = PhaseJob {
            name: "j".into(),
            engine: "null".into(),
            direct: false,
            workers: 1,
            iodepth: 1,
            working_set_bytes: 0,
            rate_iops: None,
        };
        let mut acc =
            PhaseAccumulator::new("run", vec!["a".into(), "b".into()], vec![job], &[a, b]);
        let second = |n: u64| {
            let mut r = Recorder::new();
            for _ in 0..n {
                r.record(Op::Read, 4096, 1000);
            }
            r.take()
        };
        // Both do 1000 I/Os a second; b is cut off after 3 s of an 8 s phase.
        for t in 0..8 {
            acc.add(a, t, &second(1000));
            if t < 3 {
                acc.add(b, t, &second(1000));
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
}
