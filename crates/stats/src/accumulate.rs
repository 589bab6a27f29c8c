//! Merging worker snapshots into a phase: exact, incremental, one second at a time.

use std::collections::{BTreeMap, HashMap};

use crate::results::{Breakdown, Counts, ErrorSummary, HostSecond, Interval, Phase, PhaseJob};
use crate::{ErrorTally, Op, OpRecord, Snapshot, SparseRecord, Summary};
use source::{source_histograms, Figures, Source};

mod done;
pub use done::mark_time_bound;

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
    /// When it said it finished (its last I/O, after the measured start): known even for a
    /// host that then failed (a `--verify` pass that found bad blocks after its load).
    end_ns: Option<u64>,
    /// Its calls, failed ones included (a metadata phase's items).
    items: u64,
}

/// Builds one [`Phase`] from the snapshots its workers send, closing each 1-second interval
/// as soon as every worker has moved past it (for the live line) and the rest at the end.
#[derive(Debug)]
pub struct PhaseAccumulator {
    name: String,
    hosts: Vec<String>,
    jobs: Vec<PhaseJob>,
    /// Each host and job's whole phase: a local worker's as snapshots, a remote agent's as
    /// the non-zero counts of its histograms (a few KiB a host, not 256 KiB a histogram).
    per_source: BTreeMap<(u16, u16), Source>,
    workers: HashMap<WorkerKey, WorkerState>,
    open: BTreeMap<u32, Snapshot>,
    closed: Vec<Interval>,
    /// What the last closed interval held, so that a remainder can be folded into it.
    last_closed: Option<Snapshot>,
    next_to_close: u32,
    end_ns: u64,
    /// With several hosts: each host's counts per second, by interval and host, then by
    /// operation in its order (a short vector: a map's node per host and second was most of
    /// a thousand hosts' growth over a phase).
    host_seconds: BTreeMap<(u32, u16), Vec<(Op, Counts)>>,
    /// In a run of several targets: each second's counts per job, by operation, made each
    /// target's seconds at the end.
    job_seconds: BTreeMap<(u32, u16), Vec<(Op, Counts)>>,
    /// Hosts that failed or were cut off during the phase.
    failed: std::collections::BTreeSet<u16>,
    /// What `--verify` checked, over every worker.
    verified: crate::Verified,
    /// A metadata phase: each worker's items counted into [`Phase::reached`], the phase cut
    /// short at this time if any.
    meta: Option<Option<std::time::Duration>>,
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
            job_seconds: BTreeMap::new(),
            failed: Default::default(),
            verified: Default::default(),
            meta: None,
        }
    }

    /// Makes it a metadata phase: [`Phase::reached`] will say how many items each worker
    /// went through, and whether `time` (if any) cut the phase short.
    pub fn count_items(&mut self, time: Option<std::time::Duration>) {
        self.meta = Some(time);
    }

    /// Counts `r` as host `host`'s in interval `interval` (runs of several hosts only).
    fn count(&mut self, host: u16, interval: u32, op: Op, r: &OpRecord) {
        self.count_of(host, interval, op, (r.ops, r.bytes, r.errors));
    }

    /// Counts `(ops, bytes, errors)` as host `host`'s in interval `interval`.
    fn count_of(
        &mut self,
        host: u16,
        interval: u32,
        op: Op,
        (ops, bytes, errors): (u64, u64, u64),
    ) {
        if self.hosts.len() < 2 || ops + errors == 0 && bytes == 0 {
            return;
        }
        tally(
            &mut self.host_seconds,
            (interval, host),
            op,
            (ops, bytes, errors),
        );
    }

    /// Whether the phase's jobs ran on more than one target.
    fn several_targets(&self) -> bool {
        let mut targets = self.jobs.iter().filter_map(|j| j.target.as_deref());
        targets
            .next()
            .is_some_and(|first| targets.any(|t| t != first))
    }

    /// Counts what job `job` did in interval `interval`, in a run of several targets.
    fn count_job(&mut self, job: u16, interval: u32, op: Op, counts: (u64, u64, u64)) {
        if counts.0 + counts.2 == 0 && counts.1 == 0 {
            return;
        }
        tally(&mut self.job_seconds, (interval, job), op, counts);
    }

    /// Each target's seconds on the phase's intervals, from its jobs' (several targets only).
    fn target_seconds_list(&self) -> BTreeMap<String, Vec<HostSecond>> {
        let mut seconds: BTreeMap<String, Vec<HostSecond>> = BTreeMap::new();
        if !self.several_targets() {
            return seconds;
        }
        for t in self.jobs.iter().filter_map(|j| j.target.clone()) {
            seconds.entry(t).or_insert_with(|| {
                self.closed
                    .iter()
                    .map(|c| HostSecond {
                        t_s: c.t_s,
                        duration_ns: c.duration_ns,
                        by_op: Default::default(),
                    })
                    .collect()
            });
        }
        for ((i, job), ops) in &self.job_seconds {
            let target = self.jobs.get(*job as usize).and_then(|j| j.target.as_ref());
            let Some(list) = target.and_then(|t| seconds.get_mut(t)) else {
                continue;
            };
            let Some(s) = list.iter_mut().rev().find(|s| s.t_s <= *i) else {
                continue;
            };
            for (op, c) in ops {
                let t = s.by_op.entry_or_default(op.name());
                t.ops += c.ops;
                t.bytes += c.bytes;
                t.errors += c.errors;
            }
        }
        seconds
    }
}

/// Adds `(ops, bytes, errors)` of `op` to the second `key` of `map`.
fn tally(
    map: &mut BTreeMap<(u32, u16), Vec<(Op, Counts)>>,
    key: (u32, u16),
    op: Op,
    (ops, bytes, errors): (u64, u64, u64),
) {
    let second = map.entry(key).or_default();
    let at = match second.binary_search_by_key(&op, |(o, _)| *o) {
        Ok(at) => at,
        Err(at) => {
            // Room for one operation more, not the four a vector's first growth makes:
            // most seconds hold one or two, and a thousand hosts keep one a second each.
            second.reserve_exact(1);
            second.insert(at, (op, Counts::default()));
            at
        }
    };
    let c = &mut second[at].1;
    c.ops += ops;
    c.bytes += bytes;
    c.errors += errors;
}

impl PhaseAccumulator {
    /// Adds what worker `key` did in 1-second interval `interval` (0 = the first second after
    /// the ramp). Snapshots of one worker arrive in interval order.
    pub fn add(&mut self, key: WorkerKey, interval: u32, snap: &Snapshot) {
        if self.hosts.len() > 1 {
            for (op, r) in snap.ops() {
                self.count(key.host, interval, op, r);
            }
        }
        if self.several_targets() {
            for (op, r) in snap.ops() {
                self.count_job(key.job, interval, op, (r.ops, r.bytes, r.errors));
            }
        }
        let source = self
            .per_source
            .entry((key.host, key.job))
            .or_insert_with(|| Source::Full(Box::default()));
        // A source is local or remote; were it both, its parts are made whole first.
        if let Source::Remote(..) = source {
            let parts = std::mem::replace(source, Source::Full(Box::default()));
            *source = Source::Full(Box::new(parts.settled().into_snapshot()));
        }
        if let Source::Full(s) = source {
            **s += snap;
        }
        *self.open.entry(interval).or_default() += snap;
        self.verified += snap.verified;
        let state = self.workers.entry(key).or_default();
        state.items += snap
            .ops()
            .filter(|(op, _)| *op != Op::Sync)
            .map(|(_, r)| r.ops + r.errors)
            .sum::<u64>();
        state.last_interval = Some(state.last_interval.map_or(interval, |l| l.max(interval)));
    }

    /// [`PhaseAccumulator::add`] for a second that arrives as separate operation records (a
    /// remote agent's, decoded): only the operations that did something are carried, with
    /// the failures and what `--verify` checked.
    pub fn add_parts(
        &mut self,
        key: WorkerKey,
        interval: u32,
        ops: &[(Op, SparseRecord)],
        (errors, verified): (&ErrorTally, crate::Verified),
    ) {
        self.verified += verified;
        let several_targets = self.several_targets();
        for (op, r) in ops {
            self.count_of(key.host, interval, *op, (r.ops, r.bytes, r.errors));
            if several_targets {
                self.count_job(key.job, interval, *op, (r.ops, r.bytes, r.errors));
            }
        }
        let source = self
            .per_source
            .entry((key.host, key.job))
            .or_insert_with(|| Source::Remote(Box::default()));
        match source {
            Source::Remote(mine) => mine.add(ops, errors),
            Source::Full(s) => {
                for (op, r) in ops {
                    *s.op_mut(*op) += r;
                }
                s.errors += errors;
            }
        }
        let open = self.open.entry(interval).or_default();
        for (op, r) in ops {
            *open.op_mut(*op) += r;
        }
        open.errors += errors;
        let state = self.workers.entry(key).or_default();
        // A metadata phase's items, not the sync(2) at its end (`--sync-phases`).
        state.items += ops
            .iter()
            .filter(|(op, _)| *op != Op::Sync)
            .map(|(_, r)| r.ops + r.errors)
            .sum::<u64>();
        state.last_interval = Some(state.last_interval.map_or(interval, |l| l.max(interval)));
    }

    /// Marks worker `key` finished, its last I/O at `end_ns` after the measured start.
    pub fn worker_done(&mut self, key: WorkerKey, end_ns: u64) {
        let w = self.workers.entry(key).or_default();
        w.done = true;
        w.end_ns = Some(end_ns);
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
    pub fn host_second(&self, t: u32) -> Vec<(&str, &[(Op, Counts)])> {
        self.host_seconds
            .range((t, 0)..=(t, u16::MAX))
            .map(|((_, h), ops)| (self.hosts[*h as usize].as_str(), ops.as_slice()))
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
        // A host that failed sent whole seconds only, and no end: what it sent was measured
        // even when no worker of the phase finished (every host failed, or the only one).
        // A worker that said when it ended before its host failed is measured to that end.
        let failed_seconds = self
            .workers
            .iter()
            .filter(|(k, w)| self.failed.contains(&k.host) && w.end_ns.is_none())
            .filter_map(|(_, w)| w.last_interval)
            .max()
            .map_or(0, |l| (u64::from(l) + 1) * 1_000_000_000);
        self.end_ns.max(failed_seconds)
    }

    /// Closes the remaining intervals and returns the phase. `duration_ns` is the measured
    /// span; `start_offset_ns` places it in the run.
    pub fn finish(mut self, start_offset_ns: u64, duration_ns: u64) -> Phase {
        self.close_remaining(duration_ns);
        let reached = self.meta.and_then(|time| {
            let counts = self
                .workers
                .iter()
                .map(|(k, w)| {
                    let host = self.hosts.get(k.host as usize).map_or("?", |h| h.as_str());
                    let job = self
                        .jobs
                        .get(k.job as usize)
                        .map_or_else(|| format!("job{}", k.job), |j| j.name.clone());
                    (format!("{host}/{job}/{}", k.worker), w.items)
                })
                .collect();
            // A worker still going at the time was stopped by it (each stops at its own
            // start plus the time, none before the phase's start).
            let cut = time.is_some_and(|t| u128::from(duration_ns) >= t.as_nanos());
            crate::Reached::of(counts, cut)
        });
        let mut total = Snapshot::new();
        let mut by_job: BTreeMap<u16, Snapshot> = BTreeMap::new();
        // Each target's jobs merged, in a run of several targets: one histogram a target.
        let target_of = |job: u16| self.jobs.get(job as usize).and_then(|j| j.target.clone());
        let several_targets = self
            .jobs
            .iter()
            .filter_map(|j| j.target.as_deref())
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            > 1;
        let mut by_target: BTreeMap<String, Snapshot> = BTreeMap::new();
        let mut histograms = BTreeMap::new();
        let mut errors = Vec::new();
        let mut seconds = self.host_seconds_list();
        let mut target_seconds = self.target_seconds_list();
        // Each host's figures as soon as its sources are merged, its sources then dropped:
        // a thousand hosts' histograms are never all held twice, and a remote host's are
        // never made whole.
        let sources = std::mem::take(&mut self.per_source);
        let mut by_host: BTreeMap<String, Breakdown> = BTreeMap::new();
        let mut current: Option<(u16, Figures)> = None;
        let mut host_done =
            |(h, s): (u16, Figures), seconds: &mut BTreeMap<u16, Vec<HostSecond>>| {
                let mine = seconds.remove(&h).unwrap_or_default();
                by_host.insert(
                    self.hosts[h as usize].clone(),
                    s.breakdown(mine, self.ran_ns(h, duration_ns), duration_ns),
                );
            };
        for ((host, job), source) in sources {
            let source = source.settled();
            source.add_into(&mut total);
            source.add_into(by_job.entry(job).or_default());
            if let Some(t) = target_of(job).filter(|_| several_targets) {
                source.add_into(by_target.entry(t).or_default());
            }
            let host_name = self.hosts.get(host as usize).cloned().unwrap_or_default();
            let job_name = self
                .jobs
                .get(job as usize)
                .map_or_else(|| format!("job{job}"), |j| j.name.clone());
            source_histograms(&mut histograms, &format!("{host_name}/{job_name}"), &source);
            for e in source.errors().entries() {
                errors.push(ErrorSummary {
                    host: host_name.clone(),
                    job: job_name.clone(),
                    op: e.op.name().to_string(),
                    kind: e.kind.name(),
                    count: e.count,
                    first_offset: e.first_offset,
                    ignored: false,
                });
            }
            match &mut current {
                Some((h, s)) if *h == host => s.absorb(source),
                _ => {
                    if let Some(done) = current.take() {
                        host_done(done, &mut seconds);
                    }
                    current = Some((host, source));
                }
            }
        }
        if let Some(done) = current.take() {
            host_done(done, &mut seconds);
        }
        let ends: Vec<(u16, u64)> = self
            .workers
            .iter()
            .filter_map(|(k, w)| w.end_ns.map(|e| (k.host, e)))
            .collect();
        let done = done::of(&ends, &self.hosts, &self.closed, &by_host);
        Phase {
            done,
            cpu: None,
            name: self.name,
            kind: None,
            start_offset_ns,
            duration_ns,
            total: Summary::of(&total.total(), duration_ns),
            by_op: by_op(&total, duration_ns),
            by_host,
            by_job: by_job
                .iter()
                .map(|(j, s)| {
                    (
                        self.jobs
                            .get(*j as usize)
                            .map_or_else(|| format!("job{j}"), |x| x.name.clone()),
                        breakdown(s, Vec::new(), duration_ns, duration_ns),
                    )
                })
                .collect(),
            by_target: by_target
                .iter()
                .map(|(t, s)| {
                    let mine = target_seconds.remove(t).unwrap_or_default();
                    (t.clone(), breakdown(s, mine, duration_ns, duration_ns))
                })
                .collect(),
            jobs: self.jobs,
            errors,
            intervals: self.closed,
            histograms,
            host_starts_ns: BTreeMap::new(),
            start_uncertainty_ns: None,
            repetition: None,
            net: Vec::new(),
            verify: (!self.verified.is_empty()).then_some(self.verified),
            reached,
        }
    }

    /// Closes every interval still open at the end of a `duration_ns` span; a last, shorter
    /// remainder after a whole second folds into it.
    fn close_remaining(&mut self, duration_ns: u64) {
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
    }

    /// Each host's seconds on the phase's intervals (several hosts): a second folded into
    /// the one before (the last, shorter remainder) counts there.
    fn host_seconds_list(&self) -> BTreeMap<u16, Vec<HostSecond>> {
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
                    by_op: Default::default(),
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
                let t = s.by_op.entry_or_default(op.name());
                t.ops += c.ops;
                t.bytes += c.bytes;
                t.errors += c.errors;
            }
        }
        seconds
    }

    /// How long host `h` ran in a `duration_ns` phase: all of it, or for a failed host to
    /// the end of the last second it sent (what it did after that never arrived).
    fn ran_ns(&self, h: u16, duration_ns: u64) -> u64 {
        if !self.failed.contains(&h) {
            return duration_ns;
        }
        let mine = || self.workers.iter().filter(move |(k, _)| k.host == h);
        // Every worker said when it ended: the host ran to the last of those ends.
        if let Some(end) = mine()
            .map(|(_, w)| w.end_ns)
            .collect::<Option<Vec<u64>>>()
            .and_then(|ends| ends.into_iter().max())
        {
            return end.clamp(1, duration_ns.max(1));
        }
        let last = mine().filter_map(|(_, w)| w.last_interval).max();
        last.map_or(duration_ns, |l| {
            ((u64::from(l) + 1) * 1_000_000_000).clamp(1, duration_ns.max(1))
        })
    }
}

/// A host's or job's figures: over `ran` ns of a `duration_ns` phase (less for a host that
/// failed), with its seconds.
fn breakdown(s: &Snapshot, seconds: Vec<HostSecond>, ran: u64, duration_ns: u64) -> Breakdown {
    let ops: Vec<(Op, &OpRecord)> = s.ops().collect();
    breakdown_of(
        &ops,
        || Summary::of(&s.total(), ran),
        seconds,
        ran,
        duration_ns,
    )
}

/// A record figured into a [`Summary`]: a whole one, or one held as its histograms' counts.
trait Figured {
    /// Whether it did anything (completed, failed or moved bytes).
    fn active(&self) -> bool;
    /// Its figures over `duration_ns`.
    fn summary(&self, duration_ns: u64) -> Summary;
}

impl Figured for OpRecord {
    fn active(&self) -> bool {
        self.ops + self.errors > 0 || self.bytes > 0
    }
    fn summary(&self, duration_ns: u64) -> Summary {
        Summary::of(self, duration_ns)
    }
}

impl Figured for SparseRecord {
    fn active(&self) -> bool {
        self.ops + self.errors > 0 || self.bytes > 0
    }
    fn summary(&self, duration_ns: u64) -> Summary {
        Summary::of_sparse(self, duration_ns)
    }
}

/// [`breakdown`] of the records of `ops`, whichever their form; `all` figures the workload's
/// operations together, asked for only when there are several.
fn breakdown_of<R: Figured>(
    ops: &[(Op, &R)],
    all: impl FnOnce() -> Summary,
    seconds: Vec<HostSecond>,
    ran: u64,
    duration_ns: u64,
) -> Breakdown {
    let by_op: BTreeMap<String, Summary> = ops
        .iter()
        .filter(|(_, r)| r.active())
        .map(|(op, r)| (op.name().to_string(), r.summary(ran)))
        .collect();
    // The total of a single operation is that operation's record: figured as it is, not
    // copied into a new one (two whole histograms a host, allocated and filled, at a
    // thousand hosts' phase end), and its figures are that operation's, not figured twice.
    let mut workload = ops.iter().filter(|(op, _)| op.of_workload());
    let total = match (workload.next(), workload.next()) {
        (Some((op, only)), None) => by_op
            .get(op.name())
            .cloned()
            .unwrap_or_else(|| only.summary(ran)),
        _ => all(),
    };
    Breakdown {
        ran_ns: (ran < duration_ns).then_some(ran),
        total,
        by_op,
        seconds,
    }
}

/// Per-operation summaries of the operations that did anything.
fn by_op(s: &Snapshot, duration_ns: u64) -> BTreeMap<String, Summary> {
    s.ops()
        .filter(|(_, r)| r.active())
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

mod source;
#[cfg(test)]
mod tests;
