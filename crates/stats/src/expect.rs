//! Measured against expected (`--expect`): one [`ExpectationResult`] per phase and figure.

use stormark_spec::{Expectation, Figure};

use crate::{format_figure, ExpectationResult, Finding, Phase, Results, Severity, Summary};

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
/// A throughput this far above what was expected is not the figure's workload: a spec sheet's
/// figure is the device's most, so a measurement well above it came from a cache, data that
/// compresses, or a different workload (`above-expectation`).
pub const ABOVE_EXPECTED: f64 = 1.25;

/// `--expect`: every measured phase of `results` against the expected figures, each result
/// recorded, a miss a finding (`expectation-missed`), and a throughput well above what was
/// expected another (`above-expectation`).
pub fn expectation_findings(results: &mut Results, expect: &[Expectation]) {
    let mut checked = Vec::new();
    for phase in results.phases.iter().filter(|p| p.measured()) {
        checked.extend(check_expectations(phase, expect));
    }
    for e in checked {
        let throughput = e.figure == Figure::Iops.key() || e.figure == Figure::Bw.key();
        if throughput && e.ratio >= ABOVE_EXPECTED {
            results.findings.push(Finding {
                severity: Severity::Info,
                code: "above-expectation".into(),
                message: format!(
                    "phase {}: {} measured {} against {} expected ({:.2}×): more than the expected figure allows",
                    e.phase,
                    e.figure,
                    format_figure(&e.figure, e.measured),
                    format_figure(&e.figure, e.expected),
                    e.ratio
                ),
                evidence: serde_json::to_value(&e).expect("an expectation serializes"),
                advice: "Where the expected figure is the device's most (a spec sheet's), more than it came from something else: a cache (the page cache, the array's or the drive's own: use --direct and a working set above every cache), data that compresses or repeats, or a different workload than the figure's (block size, queue depth, read/write mix).".into(),
            });
        }
        if !e.met {
            results.findings.push(Finding {
                severity: Severity::Warning,
                code: "expectation-missed".into(),
                message: format!(
                    "phase {}: {} measured {} against {} expected ({:.2}×)",
                    e.phase,
                    e.figure,
                    format_figure(&e.figure, e.measured),
                    format_figure(&e.figure, e.expected),
                    e.ratio
                ),
                evidence: serde_json::to_value(&e).expect("an expectation serializes"),
                advice: "Check the findings above for what held the run back; compare like with like (block size, queue depth, read/write mix, direct I/O) with where the expected figure came from.".into(),
            });
        }
        results.expectations.push(e);
    }
}
