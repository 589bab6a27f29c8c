//! A second of a remote agent, as it arrives: each histogram only as the counts it holds,
//! decoded straight from its HDR V2 encoding and added into the coordinator's histograms at
//! their indexes, so that merging a thousand hosts' seconds neither allocates nor walks a
//! full histogram (32,768 counters, 256 KiB) per host and second.

use hdrhistogram::Histogram;

use crate::recorder::{OpRecord, HIGHEST_NS};

/// `V2` encoding's cookie (uncompressed).
const V2_COOKIE: u32 = 0x1c84_9313;

/// Counters of a histogram of stormark's configuration (1 ns to [`HIGHEST_NS`], 3 significant
/// digits): indexes past this are not its.
const MAX_INDEX: usize = 1 << 16;

/// A histogram of stormark's configuration, as its non-zero counts: `(index, count)` in
/// index order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SparseHist {
    /// The non-zero counters, by index.
    pub counts: Vec<(u32, u64)>,
}

impl SparseHist {
    /// Decodes an HDR V2 encoding (uncompressed) of a histogram of stormark's configuration;
    /// `None` for anything else (another configuration merges inexactly).
    pub fn decode(bytes: &[u8]) -> Option<SparseHist> {
        let u32_at = |i: usize| Some(u32::from_be_bytes(bytes.get(i..i + 4)?.try_into().ok()?));
        let u64_at = |i: usize| Some(u64::from_be_bytes(bytes.get(i..i + 8)?.try_into().ok()?));
        if u32_at(0)? != V2_COOKIE {
            return None;
        }
        let len = u32_at(4)? as usize;
        // No normalizing offset, 3 digits, 1 to HIGHEST_NS, an integer-to-double ratio of 1.
        let config = (
            u32_at(8)?,
            u32_at(12)?,
            u64_at(16)?,
            u64_at(24)?,
            u64_at(32)?,
        );
        if config != (0, 3, 1, HIGHEST_NS, 1f64.to_bits()) {
            return None;
        }
        let payload = bytes.get(40..40usize.checked_add(len)?)?;
        let mut counts = Vec::new();
        let (mut at, mut index) = (0usize, 0usize);
        while at < payload.len() {
            // A ZigZag LEB128 number: a count, or (negative) a run of zero counters.
            let (mut v, mut shift) = (0u64, 0u32);
            loop {
                let b = *payload.get(at)?;
                at += 1;
                v |= u64::from(b & 0x7f) << shift;
                if b < 0x80 {
                    break;
                }
                shift += 7;
                if shift > 63 {
                    return None;
                }
            }
            let n = ((v >> 1) as i64) ^ -((v & 1) as i64);
            if n < 0 {
                index = index.checked_add(n.unsigned_abs() as usize)?;
            } else {
                if n > 0 {
                    counts.push((u32::try_from(index).ok()?, n as u64));
                }
                index += 1;
            }
            if index > MAX_INDEX {
                return None;
            }
        }
        Some(SparseHist { counts })
    }

    /// Samples in it.
    pub fn len(&self) -> u64 {
        self.counts.iter().map(|c| c.1).sum()
    }

    /// Whether it holds no sample.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// Adds `other`'s counts into these, in place.
    ///
    /// A host's second (a few counters) goes into its phase so far (hundreds), a thousand
    /// hosts' a second: each of its counters is looked for from where the one before it was
    /// found, by steps that double (a search from the start touched a far cache line at each
    /// halving, and those lines are rarely cached when a thousand hosts' counts lie between
    /// one second of a host and its next); what is already there is added to, and the new
    /// counters are placed in one pass from the end, the tail moved once.
    pub fn merge(&mut self, other: &SparseHist) {
        if other.counts.is_empty() {
            return;
        }
        if self.counts.is_empty() {
            self.counts.clone_from(&other.counts);
            return;
        }
        let mine = &mut self.counts;
        let mut new = 0usize;
        let mut from = 0usize;
        for &(i, n) in &other.counts {
            from = gallop(&mine[from..], i) + from;
            match mine.get_mut(from) {
                Some(c) if c.0 == i => c.1 += n,
                _ => new += 1,
            }
        }
        if new == 0 {
            return;
        }
        // From the end: each slot filled by the larger of this' last unplaced counter and
        // `other`'s last not yet added; `other`'s counters found above were added already.
        let old = mine.len();
        mine.resize(old + new, (0, 0));
        let (mut a, mut k) = (old, old + new);
        for &(i, n) in other.counts.iter().rev() {
            while a > 0 && mine[a - 1].0 > i {
                a -= 1;
                k -= 1;
                mine[k] = mine[a];
            }
            if a > 0 && mine[a - 1].0 == i {
                continue;
            }
            k -= 1;
            mine[k] = (i, n);
            if k == a {
                break;
            }
        }
    }

    /// Adds its counts into `h` (a histogram of stormark's configuration), each at its index.
    pub fn add_to(&self, h: &mut Histogram<u64>) {
        for &(index, count) in &self.counts {
            // Every index of a decoded histogram lies within `h`'s range.
            let _ = h.record_n(value_for(index), count);
        }
    }
}

impl SparseHist {
    /// The figures of a histogram: its minimum, mean, the values at `quantiles` (ascending)
    /// and maximum, each exactly what hdrhistogram gives for the full histogram
    /// these counts stand for (the same sums in the same order), without making it.
    /// `None` when it holds no sample.
    pub(crate) fn figures<const N: usize>(
        &self,
        quantiles: [f64; N],
    ) -> Option<(u64, f64, [u64; N], u64)> {
        let (&(first, _), &(last, _)) = (self.counts.first()?, self.counts.last()?);
        let h = shape();
        let total = self.len();
        let min = if first == 0 { 0 } else { value_for(first) };
        let max = h.highest_equivalent(value_for(last));
        let mean = self.counts.iter().fold(0.0_f64, |sum, &(i, n)| {
            let v = h.highest_equivalent(value_for(i));
            sum + h.median_equivalent(v) as f64 * n as f64 / total as f64
        });
        let mut at = [0u64; N];
        let (mut seen, mut entries, mut index) = (0u64, self.counts.iter(), first);
        for (q, out) in quantiles.into_iter().zip(&mut at) {
            let target = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
            while seen < target {
                let Some(&(i, n)) = entries.next() else { break };
                (index, seen) = (i, seen + n);
            }
            let v = value_for(index);
            *out = if q == 0.0 {
                h.lowest_equivalent(v)
            } else {
                h.highest_equivalent(v)
            };
        }
        Some((min, mean, at, max))
    }

    /// Its HDR V2 encoding (uncompressed), byte for byte what hdrhistogram's `V2Serializer`
    /// writes for the full histogram: its counters up to the last non-zero one, a run of
    /// zeros as one negative number, each ZigZag LEB128.
    pub fn encode_v2(&self) -> Vec<u8> {
        let mut counts = Vec::with_capacity(self.counts.len() * 4 + 2);
        let mut next = 0u32;
        for &(i, n) in &self.counts {
            match i - next {
                0 => {}
                1 => varint(0, &mut counts),
                run => varint(zigzag(-i64::from(run)), &mut counts),
            }
            varint(zigzag(n.min(i64::MAX as u64) as i64), &mut counts);
            next = i + 1;
        }
        if self.counts.is_empty() {
            varint(0, &mut counts);
        }
        let mut out = Vec::with_capacity(40 + counts.len());
        out.extend_from_slice(&V2_COOKIE.to_be_bytes());
        out.extend_from_slice(&(counts.len() as u32).to_be_bytes());
        out.extend_from_slice(&0u32.to_be_bytes());
        out.extend_from_slice(&3u32.to_be_bytes());
        out.extend_from_slice(&1u64.to_be_bytes());
        out.extend_from_slice(&HIGHEST_NS.to_be_bytes());
        out.extend_from_slice(&1f64.to_bits().to_be_bytes());
        out.extend_from_slice(&counts);
        out
    }
}

/// An empty histogram of stormark's configuration, for its mapping of values to counters
/// (made once; its counters, never written, stay untouched zero pages).
fn shape() -> &'static Histogram<u64> {
    static SHAPE: std::sync::OnceLock<Histogram<u64>> = std::sync::OnceLock::new();
    SHAPE.get_or_init(crate::new_histogram)
}

fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

/// hdrhistogram's LEB128 of at most 9 bytes (the ninth holds a whole byte).
fn varint(mut v: u64, out: &mut Vec<u8>) {
    for _ in 0..8 {
        if v < 0x80 {
            out.push(v as u8);
            return;
        }
        out.push(0x80 | (v & 0x7f) as u8);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The lowest value counted at `index` of a histogram of stormark's configuration (unit 1 ns,
/// 2,048 sub-buckets): hdrhistogram's own mapping.
pub(crate) fn value_for(index: u32) -> u64 {
    use crate::hot::HALF_MAGNITUDE;
    const HALF: u32 = 1 << HALF_MAGNITUDE;
    let bucket = (index >> HALF_MAGNITUDE) as i64 - 1;
    let sub = (index & (HALF - 1)) + HALF;
    if bucket < 0 {
        u64::from(sub - HALF)
    } else {
        u64::from(sub) << bucket
    }
}

/// One operation's second as it arrives from a remote agent: its counters, and its histograms
/// as their non-zero counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SparseRecord {
    /// Latency (or response time), ns.
    pub hist: SparseHist,
    /// Open loop: service time.
    pub service: Option<SparseHist>,
    /// Object reads: time to first byte.
    pub first_byte: Option<SparseHist>,
    /// Completed operations.
    pub ops: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Failed operations.
    pub errors: u64,
}

impl std::ops::AddAssign<&SparseRecord> for SparseRecord {
    fn add_assign(&mut self, r: &SparseRecord) {
        self.hist.merge(&r.hist);
        for (mine, theirs) in [
            (&mut self.service, &r.service),
            (&mut self.first_byte, &r.first_byte),
        ] {
            if let Some(t) = theirs {
                mine.get_or_insert_with(SparseHist::default).merge(t);
            }
        }
        self.ops += r.ops;
        self.bytes += r.bytes;
        self.errors += r.errors;
    }
}

impl std::ops::AddAssign<&SparseRecord> for OpRecord {
    fn add_assign(&mut self, r: &SparseRecord) {
        r.hist.add_to(&mut self.hist);
        if let Some(s) = &r.service {
            s.add_to(self.service.get_or_insert_with(crate::new_histogram));
        }
        if let Some(f) = &r.first_byte {
            f.add_to(self.first_byte.get_or_insert_with(crate::new_histogram));
        }
        self.ops += r.ops;
        self.bytes += r.bytes;
        self.errors += r.errors;
    }
}

/// The first place in `counts` (in index order) whose index is at least `i`: looked at 1, 2,
/// 4, ... counters on, then halved between the last two looked at.
fn gallop(counts: &[(u32, u64)], i: u32) -> usize {
    let mut hi = 1usize;
    while hi < counts.len() && counts[hi - 1].0 < i {
        hi *= 2;
    }
    let lo = hi / 2;
    let hi = hi.min(counts.len());
    lo + counts[lo..hi].partition_point(|c| c.0 < i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::{Serializer as _, V2Serializer};

    #[test]
    fn a_decoded_second_adds_exactly_what_the_full_histogram_does() {
        let mut h = crate::new_histogram();
        let mut x = 1u64;
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // Latencies from 1 ns to about 17 minutes, every bucket.
            h.record(1 + (x >> 24) % (1 << (x % 40))).unwrap();
        }
        h.record_n(0, 3).unwrap();
        h.record_n(HIGHEST_NS, 2).unwrap();
        let mut bytes = Vec::new();
        V2Serializer::new().serialize(&h, &mut bytes).unwrap();
        let sparse = SparseHist::decode(&bytes).expect("stormark's configuration");
        assert_eq!(sparse.len(), h.len());
        let mut mine = crate::new_histogram();
        sparse.add_to(&mut mine);
        assert_eq!(mine, h);
        for q in [0.0, 0.5, 0.99, 0.9999, 1.0] {
            assert_eq!(mine.value_at_quantile(q), h.value_at_quantile(q), "{q}");
        }
        // Another configuration, a cut encoding, another cookie: refused.
        let mut other = Histogram::<u64>::new_with_bounds(1, 1000, 2).unwrap();
        other.record(5).unwrap();
        let mut ob = Vec::new();
        V2Serializer::new().serialize(&other, &mut ob).unwrap();
        assert!(SparseHist::decode(&ob).is_none());
        assert!(SparseHist::decode(&bytes[..bytes.len() - 1]).is_none());
        assert!(SparseHist::decode(&[0u8; 40]).is_none());
    }

    proptest::proptest! {
        /// A merge, of a few counters into many, of many into a few or of as many, holds
        /// every count of both, in index order.
        #[test]
        fn a_merge_holds_both(
            a in proptest::collection::btree_map(0u32..4_000, 1u64..1_000, 0..600),
            b in proptest::collection::btree_map(0u32..4_000, 1u64..1_000, 0..60),
            c in proptest::collection::btree_map(0u32..400, 1u64..1_000, 0..300),
        ) {
            let mut want = a.clone();
            for (i, n) in &b {
                *want.entry(*i).or_default() += n;
            }
            let (a, b) = (
                SparseHist { counts: a.into_iter().collect() },
                SparseHist { counts: b.into_iter().collect() },
            );
            let (mut ab, mut ba) = (a.clone(), b.clone());
            ab.merge(&b);
            ba.merge(&a);
            let want: Vec<(u32, u64)> = want.into_iter().collect();
            proptest::prop_assert_eq!(&ab.counts, &want);
            proptest::prop_assert_eq!(&ba.counts, &want);
            // Dense against dense: most counters shared.
            let c = SparseHist { counts: c.into_iter().collect() };
            let mut want = ab.counts.iter().copied().collect::<std::collections::BTreeMap<_, _>>();
            for (i, n) in &c.counts {
                *want.entry(*i).or_default() += n;
            }
            ab.merge(&c);
            proptest::prop_assert_eq!(ab.counts, want.into_iter().collect::<Vec<_>>());
        }
    }

    proptest::proptest! {
        /// A histogram's figures and V2 encoding from its non-zero counts are exactly those
        /// of the full histogram: minimum, mean (the same sum in the same order), quantiles,
        /// maximum, and the encoding byte for byte.
        #[test]
        fn figures_and_encoding_are_the_full_histograms(
            values in proptest::collection::vec((0u64..4_000_000_000_000, 1u64..5_000), 0..300),
            small in proptest::collection::vec(0u64..3_000, 0..50),
            huge in proptest::option::of(1u64 << 57..1 << 62),
        ) {
            let mut h = crate::new_histogram();
            for (v, n) in &values {
                h.record_n(*v, *n).unwrap();
            }
            for v in &small {
                h.record(*v).unwrap();
            }
            if let Some(n) = huge {
                h.record_n(123_456, n).unwrap();
            }
            let mut bytes = Vec::new();
            V2Serializer::new().serialize(&h, &mut bytes).unwrap();
            let sparse = SparseHist::decode(&bytes).unwrap_or_else(|| {
                // The decoder reads counts below 2^56 (a count of eight bytes is not a second's).
                let mut s = SparseHist::default();
                for (i, n) in h.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())) {
                    s.counts.push((index_of(&h, i), n));
                }
                s
            });
            proptest::prop_assert_eq!(sparse.encode_v2(), bytes);
            proptest::prop_assert_eq!(
                crate::Latency::of_sparse(&sparse),
                crate::Latency::of_histogram(&h)
            );
        }
    }

    /// The counter of `value` in a histogram of stormark's configuration.
    fn index_of(h: &Histogram<u64>, value: u64) -> u32 {
        (0..1u32 << 16)
            .find(|&i| h.highest_equivalent(value_for(i)) >= value)
            .unwrap()
    }

    /// Seconds merged as their non-zero counts hold what the full histograms merged hold.
    #[test]
    fn merged_sparse_seconds_equal_merged_histograms() {
        let second = |seed: u64| {
            let mut h = crate::new_histogram();
            let mut x = seed;
            for _ in 0..3_000 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                h.record(1 + (x >> 30) % (1 << (x % 30))).unwrap();
            }
            let mut bytes = Vec::new();
            V2Serializer::new().serialize(&h, &mut bytes).unwrap();
            (h, SparseHist::decode(&bytes).unwrap())
        };
        let mut full = crate::new_histogram();
        let mut sparse = SparseHist::default();
        for seed in 1..20 {
            let (h, s) = second(seed);
            full.add(&h).unwrap();
            sparse.merge(&s);
        }
        sparse.merge(&SparseHist::default());
        assert!(
            sparse.counts.windows(2).all(|w| w[0].0 < w[1].0),
            "in index order"
        );
        let mut back = crate::new_histogram();
        sparse.add_to(&mut back);
        assert_eq!(back, full);
    }
}
