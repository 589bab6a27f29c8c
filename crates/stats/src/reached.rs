//! How far each worker of a metadata phase got: mdtest's stonewall figures ("Continue
//! stonewall hit min/max/avg"), so that a phase its time cut short says so and a slow worker
//! is seen.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What each worker of a metadata phase went through (its calls, failed ones included).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reached {
    /// The phase's time (`--time`, mdtest's `-W` stonewall) stopped a worker before its last
    /// item.
    pub cut: bool,
    /// The fewest items a worker went through.
    pub min: u64,
    /// The most.
    pub max: u64,
    /// Their mean.
    pub mean: f64,
    /// Each worker's count, keyed `HOST/JOB/N` (N the worker's number in the job on that
    /// host).
    pub by_worker: BTreeMap<String, u64>,
}

impl Reached {
    /// The figures of `counts` (each worker's name and items); `None` without a worker.
    pub fn of(counts: BTreeMap<String, u64>, cut: bool) -> Option<Reached> {
        let min = counts.values().copied().min()?;
        let max = counts.values().copied().max()?;
        let mean = counts.values().sum::<u64>() as f64 / counts.len() as f64;
        Some(Reached {
            cut,
            min,
            max,
            mean,
            by_worker: counts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_over_the_workers() {
        let counts: BTreeMap<String, u64> = [("h/m/0".into(), 10), ("h/m/1".into(), 30)].into();
        let r = Reached::of(counts, true).unwrap();
        assert!(r.cut);
        assert_eq!((r.min, r.max, r.mean), (10, 30, 20.0));
        assert_eq!(r.by_worker["h/m/1"], 30);
        assert_eq!(Reached::of(BTreeMap::new(), false), None);
    }
}
