//! Figures computed from a merged record: throughput and latency percentiles.

use serde::{Deserialize, Serialize};

use crate::{OpRecord, SparseHist, SparseRecord};

/// Latency distribution of completed I/Os, in nanoseconds. Percentiles are read from the
/// merged HDR histogram, so they are exact to its 0.1% resolution.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Fastest I/O.
    pub min: u64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// 99.99th percentile.
    pub p9999: u64,
    /// Slowest I/O.
    pub max: u64,
}

impl Latency {
    /// The distribution of a record, or `None` when nothing completed.
    pub fn of(r: &OpRecord) -> Option<Latency> {
        Latency::of_histogram(&r.hist)
    }

    /// The distribution of a histogram, or `None` when it is empty.
    pub fn of_histogram(h: &hdrhistogram::Histogram<u64>) -> Option<Latency> {
        if h.is_empty() {
            return None;
        }
        // One pass over the counts for the five quantiles (each exactly what
        // `value_at_quantile` gives), not five.
        let mut q = h.value_at_quantiles([0.50, 0.90, 0.99, 0.999, 0.9999]);
        let mut next = || q.next().unwrap_or(0);
        Some(Latency {
            min: h.min(),
            mean: h.mean(),
            p50: next(),
            p90: next(),
            p99: next(),
            p999: next(),
            p9999: next(),
            max: h.max(),
        })
    }

    /// The distribution of a histogram held as its non-zero counts, exactly what
    /// [`Latency::of_histogram`] gives for the full histogram, or `None` when it is empty.
    pub fn of_sparse(h: &SparseHist) -> Option<Latency> {
        let (min, mean, [p50, p90, p99, p999, p9999], max) =
            h.figures([0.50, 0.90, 0.99, 0.999, 0.9999])?;
        Some(Latency {
            min,
            mean,
            p50,
            p90,
            p99,
            p999,
            p9999,
            max,
        })
    }
}

/// Throughput and latency of one operation (or all) over a span of time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Completed I/Os.
    pub ops: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Completed I/Os per second.
    pub iops: f64,
    /// Bytes per second.
    pub bw_bytes_per_s: f64,
    /// Failed I/Os.
    pub errors: u64,
    /// Latency of completed I/Os; `null` when none completed. Under an open-loop rate, the
    /// response time from each I/O's scheduled start.
    pub latency_ns: Option<Latency>,
    /// Under an open-loop rate, the service time from each I/O's submission.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_latency_ns: Option<Latency>,
    /// For object reads (S3 GET), the time to the first byte of the answer, from submission.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_byte_latency_ns: Option<Latency>,
}

impl Summary {
    /// Summarises a record that covers `duration_ns`.
    pub fn of(r: &OpRecord, duration_ns: u64) -> Summary {
        Summary {
            latency_ns: Latency::of(r),
            service_latency_ns: r.service.as_ref().and_then(Latency::of_histogram),
            first_byte_latency_ns: r.first_byte.as_ref().and_then(Latency::of_histogram),
            ..Summary::counted(r.ops, r.bytes, r.errors, duration_ns)
        }
    }

    /// [`Summary::of`] a record held as its histograms' non-zero counts (a remote host's),
    /// the same figures without making its histograms whole.
    pub fn of_sparse(r: &SparseRecord, duration_ns: u64) -> Summary {
        Summary {
            latency_ns: Latency::of_sparse(&r.hist),
            service_latency_ns: r.service.as_ref().and_then(Latency::of_sparse),
            first_byte_latency_ns: r.first_byte.as_ref().and_then(Latency::of_sparse),
            ..Summary::counted(r.ops, r.bytes, r.errors, duration_ns)
        }
    }

    /// The counters and rates over `duration_ns`, no latency.
    fn counted(ops: u64, bytes: u64, errors: u64, duration_ns: u64) -> Summary {
        let secs = duration_ns as f64 / 1e9;
        let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        Summary {
            ops,
            bytes,
            iops: per_s(ops),
            bw_bytes_per_s: per_s(bytes),
            errors,
            latency_ns: None,
            service_latency_ns: None,
            first_byte_latency_ns: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Op, Recorder};

    #[test]
    fn known_values() {
        let mut r = Recorder::new();
        for v in 1..=1000u64 {
            r.record(Op::Read, 4096, v * 1000); // 1 us .. 1 ms
        }
        let s = Summary::of(r.take().op(Op::Read), 2_000_000_000);
        assert_eq!(s.ops, 1000);
        assert_eq!(s.iops, 500.0);
        assert_eq!(s.bw_bytes_per_s, 4096.0 * 500.0);
        let l = s.latency_ns.unwrap();
        let close = |got: u64, want: u64| (got as f64 - want as f64).abs() / want as f64 <= 0.001;
        assert!(close(l.p50, 500_000), "{l:?}");
        assert!(close(l.p90, 900_000), "{l:?}");
        assert!(close(l.p99, 990_000), "{l:?}");
        assert!(close(l.max, 1_000_000), "{l:?}");
        assert!(close(l.min, 1_000), "{l:?}");
        assert!((l.mean - 500_500.0).abs() / 500_500.0 < 0.001, "{l:?}");
    }

    proptest::proptest! {
        /// The one-pass quantiles are each exactly what `value_at_quantile` gives.
        #[test]
        fn one_pass_quantiles_are_the_histograms_own(
            values in proptest::collection::vec((1u64..10_000_000_000, 1u64..1000), 1..200),
        ) {
            let mut r = Recorder::new();
            for (v, n) in values {
                for _ in 0..n.min(20) {
                    r.record(Op::Read, 4096, v);
                }
            }
            let snap = r.take();
            let h = &snap.op(Op::Read).hist;
            let l = Latency::of_histogram(h).unwrap();
            let want = [0.50, 0.90, 0.99, 0.999, 0.9999].map(|q| h.value_at_quantile(q));
            proptest::prop_assert_eq!([l.p50, l.p90, l.p99, l.p999, l.p9999], want);
        }
    }

    #[test]
    fn empty_has_no_latency() {
        let s = Summary::of(&OpRecord::new(), 1_000_000_000);
        assert_eq!(s.latency_ns, None);
        assert_eq!(s.iops, 0.0);
    }
}
