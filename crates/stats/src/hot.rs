//! Latencies as a worker's hot path counts them: at their index in stormark's histogram
//! configuration, worked out from its constants, and folded into the HDR histogram whenever
//! the histogram is read. hdrhistogram's own record works each index out from the
//! histogram's fields and keeps its minimum, maximum and total up to date: 60 instructions
//! an I/O, a third of the null engine's loop (callgrind). Here it is a handful, and a
//! completion's group of I/Os alike is one addition.

use hdrhistogram::Histogram;

use crate::recorder::HIGHEST_NS;
use crate::sparse::value_for;

/// Half a bucket's sub-buckets, as a power of two: 3 significant digits need 2,048
/// sub-buckets, and a bucket's upper half of them are its own (the index's way back to a
/// value, `sparse::value_for`, uses it too).
pub(crate) const HALF_MAGNITUDE: u32 = 10;
/// Values below this share bucket 0, one counter each.
const SUB_MASK: u64 = (1 << (HALF_MAGNITUDE + 1)) - 1;
/// `64 - sub-bucket magnitude` (the unit magnitude is 0: 1 ns is discernible).
const LEADING_ZERO_BASE: u32 = 64 - (HALF_MAGNITUDE + 1);

/// The counter `value` falls in: hdrhistogram's `index_for` with stormark's constants.
#[inline(always)]
pub(crate) fn index_of(value: u64) -> usize {
    let bucket = LEADING_ZERO_BASE - (value | SUB_MASK).leading_zeros();
    let sub = value >> bucket;
    ((u64::from(bucket) << HALF_MAGNITUDE) + sub) as usize
}

/// Counters added to since the last fold: at most this many records before one, so that no
/// counter of 32 bits can overflow.
const FOLD_AT: u64 = (u32::MAX / 2) as u64;

/// One histogram's counters as the hot path adds to them (32 bits each: half the memory of
/// the histogram's, and they are folded before they could overflow). Allocated zeroed, only
/// the pages of counters in use become resident.
pub(crate) struct HotCounts {
    counts: Box<[u32]>,
    /// Where a value past the last counter is counted: at the histogram's highest value, as
    /// hdrhistogram's `saturating_record` clamps it.
    clamped: usize,
    /// Records since the last fold.
    since: u64,
}

impl std::fmt::Debug for HotCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HotCounts")
            .field("since", &self.since)
            .finish_non_exhaustive()
    }
}

impl HotCounts {
    /// The counters of a histogram like `hist` (stormark's configuration).
    pub(crate) fn new(hist: &Histogram<u64>) -> HotCounts {
        HotCounts {
            counts: vec![0; hist.distinct_values()].into_boxed_slice(),
            clamped: index_of(HIGHEST_NS),
            since: 0,
        }
    }

    /// Counts `n` records of `value`; whether they should now be folded (before a counter
    /// could overflow). `n` is at most a ring's depth.
    #[inline(always)]
    pub(crate) fn add(&mut self, value: u64, n: u64) -> bool {
        let i = index_of(value);
        let i = if i < self.counts.len() {
            i
        } else {
            self.clamped
        };
        // In range: the index was checked, or is the clamped value's.
        self.counts[i] += n as u32;
        self.since += n;
        self.since >= FOLD_AT
    }

    /// Whether nothing was counted since the last fold.
    pub(crate) fn is_empty(&self) -> bool {
        self.since == 0
    }

    /// Adds the counts into `hist` and starts afresh.
    pub(crate) fn fold_into(&mut self, hist: &mut Histogram<u64>) {
        if self.since == 0 {
            return;
        }
        for (chunk_at, chunk) in self.counts.chunks_mut(16).enumerate() {
            if chunk.iter().all(|&c| c == 0) {
                continue;
            }
            for (i, c) in chunk.iter_mut().enumerate() {
                if *c != 0 {
                    let index = (chunk_at * 16 + i) as u32;
                    // Every counter's value lies within the histogram's range.
                    let _ = hist.record_n(value_for(index), u64::from(*c));
                    *c = 0;
                }
            }
        }
        self.since = 0;
    }

    /// Drops the counts. Only counters in use are written: the others stay untouched
    /// (allocated zeroed, never resident), as in [`HotCounts::fold_into`].
    pub(crate) fn clear(&mut self) {
        if self.since == 0 {
            return;
        }
        for chunk in self.counts.chunks_mut(16) {
            if chunk.iter().any(|&c| c != 0) {
                chunk.fill(0);
            }
        }
        self.since = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::new_histogram;
    use proptest::prelude::*;

    /// The index worked out from the constants is hdrhistogram's own: a value recorded at
    /// its counter's value lands where hdrhistogram put it.
    #[test]
    fn index_of_is_hdrhistograms_index() {
        let h = new_histogram();
        let mut v = 0u64;
        while v < HIGHEST_NS * 2 {
            let i = index_of(v);
            if i < h.distinct_values() {
                assert!(h.equivalent(v, value_for(i as u32)), "value {v} index {i}");
            }
            v = v + 1 + v / 997;
        }
    }

    proptest! {
        /// Counting values, then folding them into a histogram, makes the histogram that
        /// recording each with `saturating_record` makes: counts, total, minimum and maximum,
        /// for values anywhere in u64 (past the highest value too), folded at any point.
        #[test]
        fn counted_then_folded_equals_recorded(
            values in prop::collection::vec(
                prop_oneof![
                    0u64..4096,
                    1u64..10_000_000,
                    1u64..HIGHEST_NS,
                    HIGHEST_NS - 1000..HIGHEST_NS * 4,
                    any::<u64>(),
                ],
                0..200,
            ),
            runs in prop::collection::vec(1u64..40, 0..200),
            fold_every in 1usize..300,
        ) {
            let mut direct = new_histogram();
            let mut folded = new_histogram();
            let mut hot = HotCounts::new(&folded);
            for (k, &v) in values.iter().enumerate() {
                let n = runs.get(k).copied().unwrap_or(1);
                for _ in 0..n {
                    direct.saturating_record(v);
                }
                hot.add(v, n);
                if k % fold_every == fold_every - 1 {
                    hot.fold_into(&mut folded);
                }
            }
            hot.fold_into(&mut folded);
            prop_assert!(hot.is_empty());
            prop_assert_eq!(direct.len(), folded.len());
            prop_assert_eq!(direct.max(), folded.max());
            prop_assert_eq!(direct.min_nz(), folded.min_nz());
            prop_assert_eq!(direct.min(), folded.min());
            prop_assert!(direct == folded);
        }
    }
}
