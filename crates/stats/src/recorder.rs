//! The per-worker recorder: what the hot path touches.

use std::ops::AddAssign;

use hdrhistogram::Histogram;

use crate::hot::HotCounts;

pub use crate::errors::{ErrorKind, ErrorTally, ErrorTallyEntry};
pub use crate::op::Op;

/// Highest latency a histogram holds: one hour, in nanoseconds. Longer values are clamped.
pub const HIGHEST_NS: u64 = 3_600_000_000_000;

/// A new latency histogram: 1 ns to 1 h at 3 significant digits (0.1% resolution), the range
/// and precision fio reports in.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIGHEST_NS, 3).expect("constant bounds are valid")
}

/// What one operation did: completed I/Os, bytes, failures, and the latency of every
/// successful I/O.
#[derive(Debug, Clone)]
pub struct OpRecord {
    /// Latency of each completed I/O, ns. Under an open-loop rate (`rate_iops`) this is the
    /// response time, from the moment the I/O was scheduled, so that a stall shows.
    pub hist: Histogram<u64>,
    /// Under an open-loop rate, the service time (from submission) of each I/O; `None` in a
    /// closed loop, where it equals `hist`.
    pub service: Option<Histogram<u64>>,
    /// For reads of objects (S3 GET), the time to the first byte of the answer, beside the
    /// time to the last in `hist`; `None` for every other operation.
    pub first_byte: Option<Histogram<u64>>,
    /// Completed I/Os.
    pub ops: u64,
    /// Bytes moved by completed I/Os.
    pub bytes: u64,
    /// Failed I/Os.
    pub errors: u64,
}

impl OpRecord {
    /// An empty record.
    pub fn new() -> OpRecord {
        OpRecord {
            hist: new_histogram(),
            service: None,
            first_byte: None,
            ops: 0,
            bytes: 0,
            errors: 0,
        }
    }

    fn clear(&mut self) {
        self.hist.reset();
        if let Some(s) = &mut self.service {
            s.reset();
        }
        if let Some(s) = &mut self.first_byte {
            s.reset();
        }
        self.ops = 0;
        self.bytes = 0;
        self.errors = 0;
    }
}

impl Default for OpRecord {
    fn default() -> Self {
        OpRecord::new()
    }
}

impl PartialEq for OpRecord {
    fn eq(&self, other: &Self) -> bool {
        self.ops == other.ops
            && self.bytes == other.bytes
            && self.errors == other.errors
            && self.hist == other.hist
            && self.service == other.service
            && self.first_byte == other.first_byte
    }
}

impl AddAssign<&OpRecord> for OpRecord {
    fn add_assign(&mut self, other: &OpRecord) {
        self.hist
            .add(&other.hist)
            .expect("all histograms share one configuration");
        match (&mut self.service, &other.service) {
            (Some(a), Some(b)) => a.add(b).expect("all histograms share one configuration"),
            (None, Some(b)) => self.service = Some(b.clone()),
            _ => {}
        }
        match (&mut self.first_byte, &other.first_byte) {
            (Some(a), Some(b)) => a.add(b).expect("all histograms share one configuration"),
            (None, Some(b)) => self.first_byte = Some(b.clone()),
            _ => {}
        }
        self.ops += other.ops;
        self.bytes += other.bytes;
        self.errors += other.errors;
    }
}

/// What one worker (or a merge of several) did in one interval. A record exists only for the
/// operations the load makes (a file run never holds S3 histograms): made the first time an
/// operation is recorded, then kept (emptied, never freed) by [`Snapshot::clear`].
#[derive(Debug, Clone)]
pub struct Snapshot {
    ops: [Option<Box<OpRecord>>; Op::COUNT],
    /// Failures by kind.
    pub errors: ErrorTally,
    /// What `--verify` checked.
    pub verified: crate::Verified,
}

/// The record of an operation a snapshot never saw.
static EMPTY: std::sync::OnceLock<OpRecord> = std::sync::OnceLock::new();

impl Snapshot {
    /// An empty snapshot.
    pub fn new() -> Snapshot {
        Snapshot {
            ops: Default::default(),
            errors: ErrorTally::default(),
            verified: crate::Verified::default(),
        }
    }

    /// The record of one operation (empty if it never happened).
    pub fn op(&self, op: Op) -> &OpRecord {
        self.ops[op.index()]
            .as_deref()
            .unwrap_or_else(|| EMPTY.get_or_init(OpRecord::new))
    }

    /// The record of one operation, to fill (made on first use).
    #[inline]
    pub fn op_mut(&mut self, op: Op) -> &mut OpRecord {
        match &mut self.ops[op.index()] {
            Some(r) => r,
            none => new_record(none),
        }
    }

    /// The record of every operation this snapshot (or the one whose memory it reuses) has
    /// held, in [`Op::ALL`] order.
    pub fn ops(&self) -> impl Iterator<Item = (Op, &OpRecord)> {
        Op::ALL
            .iter()
            .copied()
            .zip(self.ops.iter())
            .filter_map(|(op, r)| r.as_deref().map(|r| (op, r)))
    }

    /// All operations of the workload together (connections left out): the merged histogram
    /// and summed counters.
    pub fn total(&self) -> OpRecord {
        let mut t = OpRecord::new();
        for (_, r) in self.ops().filter(|(op, _)| op.of_workload()) {
            t += r;
        }
        t
    }

    /// Empties the snapshot, keeping its memory.
    pub fn clear(&mut self) {
        for r in self.ops.iter_mut().flatten() {
            r.clear();
        }
        self.errors.clear();
        self.verified = crate::Verified::default();
    }
}

impl PartialEq for Snapshot {
    /// Equal when every operation's record is (an absent record equals an empty one).
    fn eq(&self, other: &Self) -> bool {
        self.errors == other.errors
            && self.verified == other.verified
            && Op::ALL.iter().all(|&op| self.op(op) == other.op(op))
    }
}

impl Default for Snapshot {
    fn default() -> Self {
        Snapshot::new()
    }
}

impl AddAssign<&Snapshot> for Snapshot {
    fn add_assign(&mut self, other: &Snapshot) {
        for (op, b) in other.ops() {
            *self.op_mut(op) += b;
        }
        self.errors += &other.errors;
        self.verified += other.verified;
    }
}

/// A worker's recorder: `record` is all the hot path calls. The latencies of completed I/Os
/// are counted by [`HotCounts`] and folded into the snapshot's histograms whenever the
/// snapshot is read or handed over.
#[derive(Debug, Default)]
pub struct Recorder {
    current: Snapshot,
    hot: [Option<Box<HotCounts>>; Op::COUNT],
}

impl Recorder {
    /// An empty recorder.
    pub fn new() -> Recorder {
        Recorder::default()
    }

    /// Records one completed I/O.
    #[inline]
    pub fn record(&mut self, op: Op, bytes: u64, latency_ns: u64) {
        self.record_n(op, bytes, latency_ns, 1);
    }

    /// Records `n` completed I/Os of `bytes` each that took the same `latency_ns` (a batch
    /// submitted at one tick and reaped at another): the same as `n` calls of
    /// [`Recorder::record`], counted in one step. `n` is at most a ring's depth.
    #[inline]
    pub fn record_n(&mut self, op: Op, bytes: u64, latency_ns: u64, n: u64) {
        let r = self.current.op_mut(op);
        r.ops += n;
        r.bytes += bytes * n;
        let hot = match &mut self.hot[op.index()] {
            Some(h) => h,
            none => hot_counts(none, &r.hist),
        };
        if hot.add(latency_ns.max(1), n) {
            hot.fold_into(&mut r.hist);
        }
    }

    /// Folds the counted latencies into the current snapshot's histograms.
    fn fold(&mut self) {
        for (op, hot) in Op::ALL.iter().zip(&mut self.hot) {
            if let Some(h) = hot.as_deref_mut().filter(|h| !h.is_empty()) {
                h.fold_into(&mut self.current.op_mut(*op).hist);
            }
        }
    }

    /// Counts what `--verify` checked (its pass over written blocks, a checked object), bad
    /// ones among them; each bad one is also recorded as a failure of its kind.
    pub fn record_verified(&mut self, v: crate::Verified) {
        self.current.verified += v;
    }

    /// Adds bytes to `op` without an I/O: what a receiver counted of a sending stream whose
    /// writes were recorded with no bytes (counted where they arrive, as iperf3 counts).
    pub fn add_bytes(&mut self, op: Op, bytes: u64) {
        self.current.op_mut(op).bytes += bytes;
    }

    /// Records one completed I/O of an open-loop run: its response time (from the moment it
    /// was scheduled) and its service time (from its submission).
    #[inline]
    pub fn record_scheduled(&mut self, op: Op, bytes: u64, response_ns: u64, service_ns: u64) {
        let r = self.current.op_mut(op);
        r.hist.saturating_record(response_ns.max(1));
        r.service
            .get_or_insert_with(new_histogram)
            .saturating_record(service_ns.max(1));
        r.ops += 1;
        r.bytes += bytes;
    }

    /// Records the time to the first byte of one completed object read (S3 GET), recorded
    /// with [`Recorder::record`] or [`Recorder::record_scheduled`] as well.
    #[inline]
    pub fn record_first_byte(&mut self, op: Op, first_byte_ns: u64) {
        self.current
            .op_mut(op)
            .first_byte
            .get_or_insert_with(new_histogram)
            .saturating_record(first_byte_ns.max(1));
    }

    /// Counts one failed I/O.
    #[cold]
    pub fn record_error(&mut self, op: Op, kind: ErrorKind, offset: u64, file: u32) {
        self.current.op_mut(op).errors += 1;
        self.current.errors.record(op, kind, offset, file);
    }

    /// Counts one request that got no answer in time, and records how long it waited in the
    /// latency histogram: leaving it out would hide the worst latencies of a stalled service
    /// (coordinated omission by another name). It adds no completed operation.
    #[cold]
    pub fn record_timeout(&mut self, op: Op, waited_ns: u64) {
        self.current
            .op_mut(op)
            .hist
            .saturating_record(waited_ns.max(1));
        self.record_error(op, ErrorKind::Timeout, 0, 0);
    }

    /// Counts one request abandoned by Ctrl-C while it waited for its answer, as
    /// [`ErrorKind::Interrupted`], its wait in the latency histogram as a timeout's is: a
    /// stall cut short by the user is still a stall measured, and not the service's failure.
    #[cold]
    pub fn record_interrupted(&mut self, op: Op, waited_ns: u64) {
        self.current
            .op_mut(op)
            .hist
            .saturating_record(waited_ns.max(1));
        self.record_error(op, ErrorKind::Interrupted, 0, 0);
    }

    /// Swaps the current snapshot for `spare` (which is cleared first) and returns what was
    /// recorded since the last swap. No allocation when a spare is handed back.
    pub fn swap(&mut self, mut spare: Snapshot) -> Snapshot {
        self.fold();
        spare.clear();
        std::mem::replace(&mut self.current, spare)
    }

    /// Returns what was recorded and starts afresh (allocates a new snapshot).
    pub fn take(&mut self) -> Snapshot {
        self.fold();
        std::mem::take(&mut self.current)
    }

    /// What was recorded since the last swap, left in place.
    pub fn current(&mut self) -> &Snapshot {
        self.fold();
        &self.current
    }

    /// Drops what was recorded (the end of a ramp).
    pub fn discard(&mut self) {
        for h in self.hot.iter_mut().flatten() {
            h.clear();
        }
        self.current.clear();
    }

    /// Completed I/Os of every operation since the last swap.
    pub fn ops(&self) -> u64 {
        self.current.ops().map(|(_, r)| r.ops + r.errors).sum()
    }
}

/// An operation's first record, made once (out of the hot path, whose callers then keep
/// no room for it on their stacks).
#[cold]
#[inline(never)]
fn new_record(slot: &mut Option<Box<OpRecord>>) -> &mut OpRecord {
    slot.insert(Box::new(OpRecord::new()))
}

/// The counters of an operation's first record, made once.
#[cold]
#[inline(never)]
fn hot_counts<'a>(
    slot: &'a mut Option<Box<HotCounts>>,
    hist: &Histogram<u64>,
) -> &'a mut HotCounts {
    slot.insert(Box::new(HotCounts::new(hist)))
}

#[cfg(test)]
mod tests;
