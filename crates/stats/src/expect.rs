//! Measured against expected (`--expect`): one [`ExpectationResult`] per phase and figure.

use stormark_spec::{Expectation, Figure};

use crate::{ExpectationResult, Phase, Summary};

/// The figure of a summary; latency figures are `None` when nothing completed.
pub fn figure_of(s: &Summary, figure: Figure) -> Option<f64> {
    match figure {
        Figure::Iops => Some(s.iops),
        Figure::Bw => Some(s.bw_bytes_per_s),
        Figure::Latency(stat) => s.latency_ns.map(|l| crate::latency_stat(&l, stat)),
    }
}

/// Compares a phase's total with each expectation. Throughput is met when at least the
/// expected value, latency when at most.
pub fn check_expectations(phase: &Phase, expected: &[Expectation]) -> Vec<ExpectationResult> {
    expected
        .iter()
        .filter_map(|e| {
            let measured = figure_of(&phase.total, e.figure)?;
            let met = if e.figure.higher_is_better() {
                measured >= e.value
            } else {
                measured <= e.value
            };
            Some(ExpectationResult {
                phase: phase.name.clone(),
                figure: e.figure.key().to_string(),
                expected: e.value,
                measured,
                ratio: measured / e.value,
                met,
            })
        })
        .collect()
}
