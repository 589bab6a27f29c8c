//! An SSD's steady state as SNIA's Solid State Storage Performance Test Specification
//! (PTS-E 1.1, §3.4) decides it: after the device is written twice over, measurement rounds
//! repeat until the last five (the window) agree: their range is within 20% of their mean,
//! and the best-fit line through them moves less than 10% of the mean across the window. A
//! fresh drive (its first round) is often far faster than its steady state: figures quoted
//! from it are not what the drive sustains.

use serde::{Deserialize, Serialize};

use crate::suite::{StepOutcome, StepResult, SuiteVerdict};
use crate::Severity;

/// Rounds in the window.
pub const WINDOW: usize = 5;
/// The window's range (max − min) within this share of its mean.
pub const RANGE_SHARE: f64 = 0.20;
/// The best-fit line's excursion across the window (slope × (rounds − 1)) within this share
/// of the mean.
pub const SLOPE_SHARE: f64 = 0.10;

/// A window that met both rules.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SteadyWindow {
    /// The first round of the window, from 1.
    pub first_round: usize,
    /// Its last round.
    pub last_round: usize,
    /// The window's mean.
    pub mean: f64,
    /// Its range over its mean.
    pub range_share: f64,
    /// Its best-fit line's excursion over its mean.
    pub slope_share: f64,
}

/// Whether the last [`WINDOW`] of `rounds` (one figure each, in order) are steady.
pub fn steady_window(rounds: &[f64]) -> Option<SteadyWindow> {
    if rounds.len() < WINDOW {
        return None;
    }
    let w = &rounds[rounds.len() - WINDOW..];
    let n = w.len() as f64;
    let mean = w.iter().sum::<f64>() / n;
    if mean <= 0.0 {
        return None;
    }
    let (lo, hi) = w
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
    // Least squares over x = 0..n-1.
    let mx = (n - 1.0) / 2.0;
    let (sxy, sxx) = w.iter().enumerate().fold((0.0, 0.0), |(sxy, sxx), (i, y)| {
        let dx = i as f64 - mx;
        (sxy + dx * (y - mean), sxx + dx * dx)
    });
    let slope = sxy / sxx;
    let range_share = (hi - lo) / mean;
    let slope_share = (slope * (n - 1.0)).abs() / mean;
    (range_share <= RANGE_SHARE && slope_share <= SLOPE_SHARE).then(|| SteadyWindow {
        first_round: rounds.len() - WINDOW + 1,
        last_round: rounds.len(),
        mean,
        range_share,
        slope_share,
    })
}

/// The rounds of a steady-state suite (`ssd`), in order: their operations per second.
pub fn round_figures(steps: &[StepOutcome]) -> Vec<f64> {
    steps
        .iter()
        .filter(|s| s.part == "ssd" && s.workload == "round" && s.result == StepResult::Pass)
        .filter_map(|s| s.figures.as_ref().map(|f| f.ops_per_s))
        .collect()
}

/// The `ssd` suite's verdict: fresh (the first round) against steady state and the rounds that
/// decided it, or that it never came within the rounds run.
pub(crate) fn ssd_verdict(steps: &[StepOutcome]) -> Option<SuiteVerdict> {
    let rounds = round_figures(steps);
    let fresh = *rounds.first()?;
    let mut decided = None;
    for k in WINDOW..=rounds.len() {
        if let Some(w) = steady_window(&rounds[..k]) {
            decided = Some(w);
            break;
        }
    }
    let window = |w: &SteadyWindow| rounds[w.first_round - 1..w.last_round].to_vec();
    Some(match decided {
        Some(w) => SuiteVerdict {
            severity: Severity::Info,
            code: "ssd-steady-state".into(),
            message: format!(
                "steady state after round {}: {:.0} IOPS (rounds {}-{}, within {:.0}% of their mean, the fitted line {:.0}%), fresh {:.0} IOPS (round 1): steady is {:.2}× fresh",
                w.last_round,
                w.mean,
                w.first_round,
                w.last_round,
                100.0 * w.range_share,
                100.0 * w.slope_share,
                fresh,
                w.mean / fresh
            ),
            evidence: serde_json::json!({"fresh_iops": fresh, "steady_iops": w.mean,
                "window": window(&w), "first_round": w.first_round, "last_round": w.last_round,
                "range_share": w.range_share, "slope_share": w.slope_share, "rounds": rounds}),
        },
        None => SuiteVerdict {
            severity: Severity::Warning,
            code: "ssd-never-steady".into(),
            message: format!(
                "not steady after {} rounds (fresh {fresh:.0} IOPS, last {:.0}): the last five were not within 20% of their mean with a flat fitted line; the figures are not the drive's steady state",
                rounds.len(),
                rounds.last().copied().unwrap_or(0.0)
            ),
            evidence: serde_json::json!({"fresh_iops": fresh, "rounds": rounds}),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rounds that fall from a fresh drive's speed and settle: steady once five agree, and not
    /// while the fitted line still falls or one round strays.
    #[test]
    fn the_window_of_snias_pts() {
        assert_eq!(steady_window(&[100.0; 4]), None, "fewer than five");
        let w = steady_window(&[100.0, 101.0, 99.0, 100.0, 100.0]).unwrap();
        assert_eq!((w.first_round, w.last_round), (1, 5));
        assert!((w.mean - 100.0).abs() < 1e-9);
        // Falling 4% a round: the range (16%) passes, the line (16%) does not.
        assert_eq!(steady_window(&[108.0, 104.0, 100.0, 96.0, 92.0]), None);
        // One round 25% off the rest: the range fails.
        assert_eq!(steady_window(&[100.0, 100.0, 125.0, 100.0, 100.0]), None);
        // Only the last five count.
        let w = steady_window(&[900.0, 400.0, 100.0, 101.0, 99.0, 100.0, 100.0]).unwrap();
        assert_eq!((w.first_round, w.last_round), (3, 7));
        assert_eq!(steady_window(&[0.0; 5]), None);
    }
}
