//! `--curve` (throughput against latency, open loop at shares of the maximum) and `--sweep`
//! (one phase per combination of parameters, with scaling efficiency over workers).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{Latency, Phase};

/// One point of a curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// The phase that measured it (`curve-max`, `curve-50`).
    pub phase: String,
    /// Share of the maximum asked, percent; `null` for the closed-loop maximum itself.
    pub percent: Option<u8>,
    /// Open-loop rate asked, I/Os per second.
    pub rate_iops: Option<f64>,
    /// Achieved I/Os per second.
    pub iops: f64,
    /// Achieved bytes per second.
    pub bw_bytes_per_s: f64,
    /// Latency (under a rate, the response time from the schedule).
    pub latency_ns: Option<Latency>,
    /// Under a rate, the service time from submission.
    pub service_latency_ns: Option<Latency>,
}

/// What `--curve` measured: `curve` in the results document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurveReport {
    /// The closed-loop maximum the percentages are of, I/Os per second.
    pub max_iops: f64,
    /// The maximum, then each percentage in rising order.
    pub points: Vec<CurvePoint>,
}

impl CurvePoint {
    /// The point a phase measured.
    pub fn of(phase: &Phase, percent: Option<u8>, rate_iops: Option<f64>) -> CurvePoint {
        CurvePoint {
            phase: phase.name.clone(),
            percent,
            rate_iops,
            iops: phase.total.iops,
            bw_bytes_per_s: phase.total.bw_bytes_per_s,
            latency_ns: phase.total.latency_ns,
            service_latency_ns: phase.total.service_latency_ns,
        }
    }
}

/// One point of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// The phase that measured it (`sweep:bs=4k,jobs=2`).
    pub phase: String,
    /// Each swept key's value: bytes for `bs` and `size`, counts for the others.
    pub values: BTreeMap<String, u64>,
    /// Achieved I/Os per second.
    pub iops: f64,
    /// Achieved bytes per second.
    pub bw_bytes_per_s: f64,
    /// Latency.
    pub latency_ns: Option<Latency>,
    /// With `agents` (or else `jobs`) swept: iops(N) / (N / N0 × iops(N0)), N0 the fewest
    /// among points that share every other value (1.0 is perfect scaling).
    pub efficiency: Option<f64>,
}

impl SweepPoint {
    /// The point a phase measured with these values.
    pub fn of(phase: &Phase, values: BTreeMap<String, u64>) -> SweepPoint {
        SweepPoint {
            phase: phase.name.clone(),
            values,
            iops: phase.total.iops,
            bw_bytes_per_s: phase.total.bw_bytes_per_s,
            latency_ns: phase.total.latency_ns,
            efficiency: None,
        }
    }
}

/// What `--sweep` measured: `sweep` in the results document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepReport {
    /// The swept keys, in the order given.
    pub keys: Vec<String>,
    /// Every point measured, in order.
    pub points: Vec<SweepPoint>,
    /// Combinations not run, and why (a block larger than the file).
    pub skipped: Vec<String>,
}

impl SweepReport {
    /// Fills in scaling efficiency over `agents` or else `jobs`, when swept: each point
    /// against the point with the fewest and every other value the same.
    pub fn compute_efficiency(&mut self) {
        let Some(key) = ["agents", "jobs", "streams"]
            .into_iter()
            .find(|k| self.keys.iter().any(|x| x == k))
        else {
            return;
        };
        let others = |p: &SweepPoint| {
            p.values
                .iter()
                .filter(|(k, _)| *k != key)
                .map(|(k, v)| (k.clone(), *v))
                .collect::<Vec<_>>()
        };
        let base: Vec<Option<(u64, f64)>> = self
            .points
            .iter()
            .map(|p| {
                let same = others(p);
                self.points
                    .iter()
                    .filter(|q| others(q) == same)
                    .filter_map(|q| Some((*q.values.get(key)?, q.iops)))
                    .min_by_key(|(n, _)| *n)
            })
            .collect();
        for (p, b) in self.points.iter_mut().zip(base) {
            p.efficiency = match (p.values.get(key), b) {
                (Some(&n), Some((n0, iops0))) if iops0 > 0.0 && n > 0 => {
                    Some(p.iops / (n as f64 / n0 as f64 * iops0))
                }
                _ => None,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(jobs: u64, bs: u64, iops: f64) -> SweepPoint {
        SweepPoint {
            phase: format!("sweep:jobs={jobs},bs={bs}"),
            values: [("jobs".to_string(), jobs), ("bs".to_string(), bs)]
                .into_iter()
                .collect(),
            iops,
            bw_bytes_per_s: iops * bs as f64,
            latency_ns: None,
            efficiency: None,
        }
    }

    #[test]
    fn efficiency_against_the_fewest_workers_of_each_group() {
        let mut r = SweepReport {
            keys: vec!["bs".into(), "jobs".into()],
            points: vec![
                point(1, 4096, 1000.0),
                point(2, 4096, 2000.0),
                point(4, 4096, 3000.0),
                point(2, 65536, 500.0),
                point(4, 65536, 500.0),
            ],
            skipped: vec![],
        };
        r.compute_efficiency();
        let e: Vec<f64> = r.points.iter().map(|p| p.efficiency.unwrap()).collect();
        assert_eq!(e, vec![1.0, 1.0, 0.75, 1.0, 0.5]);
    }

    #[test]
    fn no_efficiency_without_jobs() {
        let mut r = SweepReport {
            keys: vec!["bs".into()],
            points: vec![point(1, 4096, 1000.0)],
            skipped: vec![],
        };
        r.compute_efficiency();
        assert_eq!(r.points[0].efficiency, None);
    }
}
