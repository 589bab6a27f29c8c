//! `--repeat N`: N independent runs of one workload folded into one document, with each
//! figure's mean, spread and confidence interval over the repetitions.

use crate::compare::{figure, FIGURES};
use crate::{describe, Finding, RepetitionStat, Results, RunStatus, Severity};

/// Repetitions whose coefficient of variation exceeds this (3%, the usual noise floor of runs
/// on one machine) make their figure untrustworthy to compare.
pub const REPEAT_CV: f64 = 0.03;

/// Folds repetitions into one document: every repetition's phases in turn (numbered in
/// `repetition`, placed one after another on the document's clock), per figure the statistics
/// over repetitions, and findings said once with how many repetitions showed them.
pub fn combine_repetitions(reps: Vec<Results>) -> Results {
    let n = reps.len();
    if n <= 1 {
        // One repetition is its own document: moved, not copied (a thousand hosts' samples
        // are hundreds of MiB).
        return reps
            .into_iter()
            .next()
            .unwrap_or_else(|| Results::new(vec![]));
    }
    let mut out = reps[0].clone();
    out.phases.clear();
    out.findings.clear();
    out.notes.clear();
    out.expectations.clear();
    for h in &mut out.hosts {
        h.samples.clear();
    }
    let mut offset = 0u64;
    let mut seen: Vec<(String, usize)> = Vec::new();
    for (k, r) in reps.iter().enumerate() {
        for p in &r.phases {
            let mut p = p.clone();
            p.repetition = Some(k as u32 + 1);
            p.start_offset_ns += offset;
            out.phases.push(p);
        }
        for (h, rh) in out.hosts.iter_mut().zip(&r.hosts) {
            h.samples.extend(rh.samples.iter().cloned().map(|mut s| {
                s.t_ns += offset;
                s
            }));
        }
        for f in &r.findings {
            let key = format!(
                "{}\u{0}{}",
                f.code,
                f.evidence
                    .get("phase")
                    .map_or(String::new(), |p| p.to_string())
            );
            match seen.iter_mut().find(|(k, _)| *k == key) {
                Some((_, count)) => *count += 1,
                None => {
                    seen.push((key, 1));
                    out.findings.push(f.clone());
                }
            }
        }
        for note in &r.notes {
            if !out.notes.contains(note) {
                out.notes.push(note.clone());
            }
        }
        out.expectations.extend(r.expectations.iter().cloned());
        if r.status != RunStatus::Ok && out.status == RunStatus::Ok {
            out.status = r.status;
            out.failure = r.failure.clone();
        }
        offset += r.duration_ns;
    }
    out.duration_ns = offset;
    // Only repetitions that ran to their end count in the statistics: one cut short by Ctrl-C
    // or a failure measured a different (shorter) thing.
    let complete: Vec<u32> = reps
        .iter()
        .enumerate()
        .filter(|(_, r)| r.status == RunStatus::Ok)
        .map(|(k, _)| k as u32 + 1)
        .collect();
    for k in (1..=n as u32).filter(|k| !complete.contains(k)) {
        out.notes.push(format!(
            "repetition {k} did not finish; its figures are left out of the repetition statistics"
        ));
    }
    for (f, (_, count)) in out.findings.iter_mut().zip(&seen) {
        f.message = format!("{} (in {count} of {n} repetitions)", f.message);
    }
    let stats = statistics(&out.phases, &complete);
    out.repetitions.extend(stats);
    let found = noisy(&out.repetitions, n);
    out.findings.extend(found);
    out
}

/// Per phase, operation and figure, the statistics over the `complete` repetitions (two or
/// more values).
fn statistics(phases: &[crate::Phase], complete: &[u32]) -> Vec<RepetitionStat> {
    let mut out = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for p in phases.iter().filter(|p| p.measured()) {
        if !names.contains(&p.name) {
            names.push(p.name.clone());
        }
    }
    for name in &names {
        let ran: Vec<_> = phases
            .iter()
            .filter(|p| &p.name == name && p.repetition.is_some_and(|r| complete.contains(&r)))
            .collect();
        if ran.is_empty() {
            continue;
        }
        // With one operation, its rows say everything the total would.
        let mut ops: Vec<String> = ran[0].by_op.keys().cloned().collect();
        if ops.len() != 1 {
            ops.insert(0, "total".to_string());
        }
        for op in &ops {
            for fig in FIGURES {
                let values: Vec<f64> = ran
                    .iter()
                    .filter_map(|p| {
                        let s = if op == "total" {
                            Some(&p.total)
                        } else {
                            p.by_op.get(op)
                        };
                        s.and_then(|s| figure(s, fig))
                    })
                    .collect();
                if values.len() < 2 {
                    continue;
                }
                out.push(RepetitionStat {
                    phase: name.clone(),
                    op: op.clone(),
                    figure: fig.to_string(),
                    stats: describe(&values),
                });
            }
        }
    }
    out
}

/// A finding for each headline figure that varied more than [`REPEAT_CV`] over `n`
/// repetitions.
fn noisy(repetitions: &[RepetitionStat], n: usize) -> Vec<Finding> {
    let noisy: Vec<&RepetitionStat> = repetitions
        .iter()
        .filter(|r| {
            // The phase's first operation row: the total, or its only operation.
            let first = repetitions.iter().find(|x| x.phase == r.phase);
            first.is_some_and(|f| f.op == r.op)
                && matches!(r.figure.as_str(), "iops" | "bw_bytes_per_s" | "p99_ns")
        })
        .filter(|r| r.stats.cv > REPEAT_CV)
        .collect();
    noisy
        .iter()
        .map(|r| Finding {
            severity: Severity::Warning,
            code: "repetitions-vary".into(),
            message: format!(
                "phase {}: {} varied {:.1}% (coefficient of variation) over {n} repetitions",
                r.phase,
                r.figure,
                100.0 * r.stats.cv
            ),
            evidence: serde_json::json!({"phase": r.phase, "figure": r.figure, "cv": r.stats.cv,
                "mean": r.stats.mean, "min": r.stats.min, "max": r.stats.max, "threshold_cv": REPEAT_CV}),
            advice: "Differences under this spread are noise: run longer per repetition, add repetitions, or quiet the host and storage before comparing.".into(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Phase, Summary};
    use std::collections::BTreeMap;

    fn rep(iops: f64) -> Results {
        let mut r = Results::new(vec![]);
        let s = Summary {
            ops: iops as u64,
            bytes: 0,
            iops,
            bw_bytes_per_s: iops * 4096.0,
            errors: 0,
            latency_ns: None,
            service_latency_ns: None,
            first_byte_latency_ns: None,
        };
        r.duration_ns = 10_000_000_000;
        r.phases.push(Phase {
            name: "run".into(),
            kind: None,
            jobs: vec![],
            start_offset_ns: 1_000,
            duration_ns: 9_000_000_000,
            total: s.clone(),
            by_op: BTreeMap::from([("read".to_string(), s)]),
            by_host: BTreeMap::new(),
            by_job: BTreeMap::new(),
            by_target: BTreeMap::new(),
            errors: vec![],
            intervals: vec![],
            histograms: BTreeMap::new(),
            host_starts_ns: BTreeMap::new(),
            start_uncertainty_ns: None,
            done: None,
            cpu: None,
            repetition: None,
            net: Vec::new(),
            verify: None,
            reached: None,
        });
        r.findings.push(Finding {
            severity: Severity::Warning,
            code: "run-too-short".into(),
            message: "short".into(),
            evidence: serde_json::json!({}),
            advice: String::new(),
        });
        r
    }

    /// Issue 16: a repetition cut short is in the document but not in the statistics.
    #[test]
    fn issue16_an_interrupted_repetition_is_not_counted() {
        let mut cut = rep(10.0);
        cut.status = RunStatus::Interrupted;
        let out = combine_repetitions(vec![rep(100.0), rep(110.0), cut]);
        assert_eq!(out.phases.len(), 3, "its phase is still reported");
        assert_eq!(out.status, RunStatus::Interrupted);
        let iops = out
            .repetitions
            .iter()
            .find(|r| r.op == "read" && r.figure == "iops")
            .unwrap();
        assert_eq!((iops.stats.n, iops.stats.mean), (2, 105.0));
        assert!(out
            .notes
            .iter()
            .any(|n| n.contains("repetition 3 did not finish")));
    }

    #[test]
    fn statistics_over_repetitions() {
        let out = combine_repetitions(vec![rep(100.0), rep(110.0), rep(90.0)]);
        assert_eq!(out.phases.len(), 3);
        assert_eq!(out.phases[2].repetition, Some(3));
        assert_eq!(out.phases[2].start_offset_ns, 20_000_001_000);
        assert_eq!(out.duration_ns, 30_000_000_000);
        let iops = out
            .repetitions
            .iter()
            .find(|r| r.op == "read" && r.figure == "iops")
            .unwrap();
        assert_eq!(
            (
                iops.stats.n,
                iops.stats.mean,
                iops.stats.min,
                iops.stats.max
            ),
            (3, 100.0, 90.0, 110.0)
        );
        assert!((iops.stats.sd - 10.0).abs() < 1e-9);
        // 95% CI: t(0.975, 2) = 4.303 -> ±24.84.
        assert!(
            (iops.stats.ci95.1 - 124.84).abs() < 0.01,
            "{:?}",
            iops.stats.ci95
        );
        // CV 10% > 3%: said; the repeated finding is said once, with its count.
        let codes: Vec<&str> = out.findings.iter().map(|f| f.code.as_str()).collect();
        assert_eq!(
            codes,
            ["run-too-short", "repetitions-vary", "repetitions-vary"]
        );
        assert!(out.findings[0].message.ends_with("(in 3 of 3 repetitions)"));
        // Steady repetitions: no variation finding.
        let out = combine_repetitions(vec![rep(100.0), rep(101.0), rep(100.5)]);
        assert!(!out.findings.iter().any(|f| f.code == "repetitions-vary"));
        // One repetition is the document itself.
        let one = rep(5.0);
        assert_eq!(combine_repetitions(vec![one.clone()]), one);
    }
}
