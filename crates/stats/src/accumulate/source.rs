//! A host and job's whole phase in the accumulator: a local worker's snapshots, or a remote
//! agent's seconds as the non-zero counts of their histograms, gathered as they arrive and
//! merged into the whole a batch at a time.

use std::collections::BTreeMap;

use base64::Engine as _;

use crate::results::{encode_histogram, Breakdown, HostSecond};
use crate::{ErrorTally, Op, Snapshot, SparseHist, SparseRecord, Summary};

/// What one host and job did so far.
#[derive(Debug)]
pub(super) enum Source {
    Full(Box<Snapshot>),
    Remote(Box<Remote>),
}

impl Source {
    /// What it amounts to once the phase ended.
    pub(super) fn settled(self) -> Figures {
        match self {
            Source::Full(s) => Figures::Full(s),
            Source::Remote(r) => r.settled(),
        }
    }
}

/// Counts gathered before a merge, at least: a few seconds of a narrow distribution's.
const GATHERED_LEAST: usize = 64;

/// Counts gathered before a merge, at most (16 KiB a source): a wide distribution (an object
/// store's tens of thousands of counters) is merged a pass at a time, not held a quarter over.
const GATHERED_MOST: usize = 1024;

/// A remote host and job's seconds so far: their counters added as each arrives, their
/// histograms' counts gathered and merged into the whole when as many have gathered as a
/// quarter of the whole holds ([`GATHERED_LEAST`] to [`GATHERED_MOST`]).
///
/// A thousand hosts' seconds a second: merged one at a time, each of a second's counters
/// touched a far cache line of its host's whole, rarely cached when a thousand hosts' counts
/// lie between one second of a host and its next. Gathered, a second is one short copy to the
/// end of its host's list, and the whole is merged in one pass over each, in order.
#[derive(Debug, Default)]
pub(super) struct Remote {
    ops: [Option<SparseRecord>; Op::COUNT],
    errors: ErrorTally,
    /// Counts not yet merged: (histogram, index, count); the histogram is the operation's
    /// index times three, plus 0 for its latency, 1 its service time, 2 its first byte.
    recent: Vec<(u32, u32, u64)>,
    /// Counters the whole held at its last merge.
    whole: usize,
}

impl Remote {
    /// Adds a second of the source (its operations' records, its errors).
    pub(super) fn add(&mut self, ops: &[(Op, SparseRecord)], errors: &ErrorTally) {
        for (op, r) in ops {
            let mine = self.ops[op.index()].get_or_insert_with(SparseRecord::default);
            mine.ops += r.ops;
            mine.bytes += r.bytes;
            mine.errors += r.errors;
            // A histogram sent, even empty, is there in the whole.
            if r.service.is_some() {
                mine.service.get_or_insert_with(SparseHist::default);
            }
            if r.first_byte.is_some() {
                mine.first_byte.get_or_insert_with(SparseHist::default);
            }
            let which = [Some(&r.hist), r.service.as_ref(), r.first_byte.as_ref()];
            for (k, h) in which.into_iter().enumerate() {
                let slot = (op.index() * 3 + k) as u32;
                for &(i, n) in h.map_or(&[][..], |h| &h.counts) {
                    self.recent.push((slot, i, n));
                }
            }
        }
        self.errors += errors;
        if self.recent.len() >= (self.whole / 4).clamp(GATHERED_LEAST, GATHERED_MOST) {
            self.merge_recent();
        }
    }

    /// Merges the gathered counts into the whole: sorted by histogram and index, each
    /// histogram's run (its counters summed) merged in one pass.
    fn merge_recent(&mut self) {
        self.recent.sort_unstable_by_key(|&(slot, i, _)| (slot, i));
        let mut run = SparseHist::default();
        for chunk in self.recent.chunk_by(|a, b| a.0 == b.0) {
            run.counts.clear();
            for &(_, i, n) in chunk {
                match run.counts.last_mut() {
                    Some(last) if last.0 == i => last.1 += n,
                    _ => run.counts.push((i, n)),
                }
            }
            let slot = chunk[0].0 as usize;
            let r = self.ops[slot / 3].get_or_insert_with(SparseRecord::default);
            let h = match slot % 3 {
                0 => &mut r.hist,
                1 => r.service.get_or_insert_with(SparseHist::default),
                _ => r.first_byte.get_or_insert_with(SparseHist::default),
            };
            h.merge(&run);
        }
        self.recent.clear();
        self.whole = self
            .ops
            .iter()
            .flatten()
            .map(|r| {
                r.hist.counts.len()
                    + r.service.as_ref().map_or(0, |h| h.counts.len())
                    + r.first_byte.as_ref().map_or(0, |h| h.counts.len())
            })
            .sum();
    }

    /// The whole, every gathered count merged.
    fn settled(mut self: Box<Self>) -> Figures {
        self.merge_recent();
        let Remote { ops, errors, .. } = *self;
        Figures::Counts(Box::new(ops), Box::new(errors))
    }
}

/// What one host and job did over the phase, once it ended: a local worker's snapshots, or a
/// remote agent's histograms as their non-zero counts.
#[derive(Debug)]
pub(super) enum Figures {
    Full(Box<Snapshot>),
    Counts(Box<[Option<SparseRecord>; Op::COUNT]>, Box<ErrorTally>),
}

impl Figures {
    /// The snapshot it amounts to (a remote source's histograms made whole, one at a time).
    pub(super) fn into_snapshot(self) -> Snapshot {
        match self {
            Figures::Full(s) => *s,
            Figures::Counts(ops, errors) => {
                let mut s = Snapshot::new();
                for (i, r) in ops.iter().enumerate() {
                    if let Some(r) = r {
                        *s.op_mut(Op::ALL[i]) += r;
                    }
                }
                s.errors = *errors;
                s
            }
        }
    }

    /// Takes in another source of the same host (its next job): kept as counts when both
    /// are.
    pub(super) fn absorb(&mut self, other: Figures) {
        match (self, other) {
            (Figures::Counts(mine, tally), Figures::Counts(theirs, t)) => {
                for (m, r) in mine.iter_mut().zip(theirs.iter()) {
                    if let Some(r) = r {
                        *m.get_or_insert_with(SparseRecord::default) += r;
                    }
                }
                **tally += &t;
            }
            (me, other) => {
                let mine = std::mem::replace(me, Figures::Full(Box::default()));
                let mut s = mine.into_snapshot();
                other.add_into(&mut s);
                *me = Figures::Full(Box::new(s));
            }
        }
    }

    /// Its errors.
    pub(super) fn errors(&self) -> &ErrorTally {
        match self {
            Figures::Full(s) => &s.errors,
            Figures::Counts(_, errors) => errors,
        }
    }

    /// Its figures over `ran` ns of a `duration_ns` phase, with its seconds: a remote
    /// source's from its counts, its histograms never made whole (a thousand hosts' at a
    /// phase's end).
    pub(super) fn breakdown(
        &self,
        seconds: Vec<HostSecond>,
        ran: u64,
        duration_ns: u64,
    ) -> Breakdown {
        match self {
            Figures::Full(s) => super::breakdown(s, seconds, ran, duration_ns),
            Figures::Counts(ops, _) => {
                let present: Vec<(Op, &SparseRecord)> = Op::ALL
                    .iter()
                    .zip(ops.iter())
                    .filter_map(|(op, r)| r.as_ref().map(|r| (*op, r)))
                    .collect();
                let all = || {
                    let mut t = SparseRecord::default();
                    for (_, r) in present.iter().filter(|(op, _)| op.of_workload()) {
                        t += r;
                    }
                    Summary::of_sparse(&t, ran)
                };
                super::breakdown_of(&present, all, seconds, ran, duration_ns)
            }
        }
    }

    /// Adds what it holds into `s`: a remote source by its non-zero counts only.
    pub(super) fn add_into(&self, s: &mut Snapshot) {
        match self {
            Figures::Full(snap) => *s += snap,
            Figures::Counts(ops, errors) => {
                for (i, r) in ops.iter().enumerate() {
                    if let Some(r) = r {
                        *s.op_mut(Op::ALL[i]) += r;
                    }
                }
                s.errors += errors;
            }
        }
    }
}

/// The histograms of one source (`<host>/<job>`), encoded, keyed `<host>/<job>/<op>`: a
/// remote source's encoded from its counts.
pub(super) fn source_histograms(
    out: &mut BTreeMap<String, String>,
    source_name: &str,
    source: &Figures,
) {
    let mut put = |op: Op, what: &str, encoded: String| {
        out.insert(format!("{source_name}/{}{what}", op.name()), encoded);
    };
    match source {
        Figures::Full(snap) => {
            for (op, r) in snap.ops().filter(|(_, r)| r.ops > 0) {
                put(op, "", encode_histogram(&r.hist));
                if let Some(service) = &r.service {
                    put(op, "/service", encode_histogram(service));
                }
                if let Some(first) = &r.first_byte {
                    put(op, "/first-byte", encode_histogram(first));
                }
            }
        }
        Figures::Counts(ops, _) => {
            let encode =
                |h: &SparseHist| base64::engine::general_purpose::STANDARD.encode(h.encode_v2());
            for (op, r) in Op::ALL.iter().zip(ops.iter()) {
                let Some(r) = r.as_ref().filter(|r| r.ops > 0) else {
                    continue;
                };
                put(*op, "", encode(&r.hist));
                if let Some(service) = &r.service {
                    put(*op, "/service", encode(service));
                }
                if let Some(first) = &r.first_byte {
                    put(*op, "/first-byte", encode(first));
                }
            }
        }
    }
}
