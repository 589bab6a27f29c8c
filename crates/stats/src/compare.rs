//! Run comparison: is B faster than A, or is it noise? Per phase, operation and figure: both
//! values, the difference, and whether it is significant: over repetitions when both runs
//! have them, else over their 1-second intervals with their autocorrelation taken into
//! account.

use serde::{Deserialize, Serialize};

use crate::significance::{effective_n, t_quantile_95, welch_p, welch_se_df};
use crate::{describe, Phase, Results, Summary};

/// The figures compared, as named in the results document.
pub const FIGURES: &[&str] = &[
    "iops",
    "bw_bytes_per_s",
    "mean_ns",
    "p50_ns",
    "p90_ns",
    "p99_ns",
    "p999_ns",
    "p9999_ns",
];

/// Below this p-value a difference is significant.
pub const ALPHA: f64 = 0.05;

/// What a difference amounts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Exactly equal.
    Same,
    /// Smaller than the noise threshold.
    Noise,
    /// Larger than the noise threshold, but the data cannot tell (p ≥ 0.05): inconclusive,
    /// not "no difference".
    #[serde(alias = "not-significant")]
    Inconclusive,
    /// Significantly better.
    Better,
    /// Significantly worse.
    Worse,
}

/// One figure of A against B.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareRow {
    /// Phase name.
    pub phase: String,
    /// `total`, `read`, `write`, ...
    pub op: String,
    /// One of [`FIGURES`].
    pub figure: String,
    /// A's value.
    pub a: f64,
    /// B's value.
    pub b: f64,
    /// (b - a) / a, percent.
    pub delta_pct: f64,
    /// Welch's two-sided p-value, when it could be computed.
    pub p_value: Option<f64>,
    /// `repetitions` or `intervals`: what the p-value was computed over.
    pub basis: String,
    /// The standard error of `delta_pct`, in percentage points, and its degrees of freedom:
    /// what a regression gate bounds the difference with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub se_pct: Option<f64>,
    /// The degrees of freedom of `se_pct` (Welch–Satterthwaite).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub df: Option<f64>,
    /// How many values (repetitions, or effective intervals) each side had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<f64>,
    /// The call.
    pub verdict: Verdict,
}

/// A figure of a summary by name; `None` for latency when nothing completed.
pub fn figure(s: &Summary, name: &str) -> Option<f64> {
    let l = s.latency_ns;
    match name {
        "iops" => Some(s.iops),
        "bw_bytes_per_s" => Some(s.bw_bytes_per_s),
        "mean_ns" => l.map(|l| l.mean),
        "p50_ns" => l.map(|l| l.p50 as f64),
        "p90_ns" => l.map(|l| l.p90 as f64),
        "p99_ns" => l.map(|l| l.p99 as f64),
        "p999_ns" => l.map(|l| l.p999 as f64),
        "p9999_ns" => l.map(|l| l.p9999 as f64),
        "min_ns" => l.map(|l| l.min as f64),
        "max_ns" => l.map(|l| l.max as f64),
        _ => None,
    }
}

/// Whether more of a figure is better (throughput) or less (latency).
pub fn higher_is_better(figure: &str) -> bool {
    matches!(figure, "iops" | "bw_bytes_per_s")
}

fn op_summary<'a>(
    s: &'a Summary,
    by_op: &'a std::collections::BTreeMap<String, Summary>,
    op: &str,
) -> Option<&'a Summary> {
    if op == "total" {
        Some(s)
    } else {
        by_op.get(op)
    }
}

/// The per-second values of a figure over a phase's full intervals.
fn interval_values(p: &Phase, op: &str, fig: &str) -> Vec<f64> {
    p.intervals
        .iter()
        .filter(|i| i.duration_ns >= 900_000_000)
        .filter_map(|i| op_summary(&i.total, &i.by_op, op).and_then(|s| figure(s, fig)))
        .collect()
}

/// The phases of a document that measured a run (repetitions grouped under their name).
fn measured(r: &Results) -> Vec<&Phase> {
    r.phases.iter().filter(|p| p.measured()).collect()
}

/// Compares every phase, operation and figure present in both `a` and `b`. Differences
/// smaller than `noise_pct` percent are noise whatever their significance.
pub fn compare(a: &Results, b: &Results, noise_pct: f64) -> Vec<CompareRow> {
    let mut rows = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    for p in measured(a) {
        if !names.contains(&p.name.as_str()) {
            names.push(&p.name);
        }
    }
    for name in names {
        let pa: Vec<&Phase> = measured(a).into_iter().filter(|p| p.name == name).collect();
        let pb: Vec<&Phase> = measured(b).into_iter().filter(|p| p.name == name).collect();
        let (Some(first_a), Some(first_b)) = (pa.first(), pb.first()) else {
            continue;
        };
        let mut ops: Vec<String> = vec!["total".into()];
        ops.extend(
            first_a
                .by_op
                .keys()
                .filter(|k| first_b.by_op.contains_key(*k))
                .cloned(),
        );
        if ops.len() == 2 {
            // One operation: its row says everything the total would.
            ops.remove(0);
        }
        for op in &ops {
            for fig in FIGURES {
                let values = |phases: &[&Phase]| -> Vec<f64> {
                    phases
                        .iter()
                        .filter_map(|p| {
                            op_summary(&p.total, &p.by_op, op).and_then(|s| figure(s, fig))
                        })
                        .collect()
                };
                let (va, vb) = (values(&pa), values(&pb));
                if va.is_empty() || vb.is_empty() {
                    continue;
                }
                let (da, db) = (describe(&va), describe(&vb));
                let repetitions = va.len() > 1 && vb.len() > 1;
                // Each side as (mean, sd, n): the repetitions, else the 1-second intervals
                // with their autocorrelation counted (an effective n).
                let (sides, basis) = if repetitions {
                    (
                        ((da.mean, da.sd, da.n as f64), (db.mean, db.sd, db.n as f64)),
                        "repetitions",
                    )
                } else {
                    let (ia, ib) = (
                        interval_values(first_a, op, fig),
                        interval_values(first_b, op, fig),
                    );
                    let (sa, sb) = (describe(&ia), describe(&ib));
                    (
                        (
                            (sa.mean, sa.sd, effective_n(&ia)),
                            (sb.mean, sb.sd, effective_n(&ib)),
                        ),
                        "intervals",
                    )
                };
                let p_value = welch_p(sides.0, sides.1);
                let spread = welch_se_df(sides.0, sides.1);
                let (a_val, b_val) = (da.mean, db.mean);
                let delta_pct = if a_val != 0.0 {
                    100.0 * (b_val - a_val) / a_val
                } else if b_val == 0.0 {
                    0.0
                } else {
                    f64::INFINITY
                };
                let better = (b_val > a_val) == higher_is_better(fig);
                let verdict = if a_val == b_val {
                    Verdict::Same
                } else if delta_pct.abs() < noise_pct {
                    Verdict::Noise
                } else if p_value.is_nan() || p_value >= ALPHA {
                    Verdict::Inconclusive
                } else if better {
                    Verdict::Better
                } else {
                    Verdict::Worse
                };
                rows.push(CompareRow {
                    phase: name.to_string(),
                    op: op.clone(),
                    figure: fig.to_string(),
                    a: a_val,
                    b: b_val,
                    delta_pct,
                    p_value: p_value.is_finite().then_some(p_value),
                    basis: basis.into(),
                    se_pct: spread
                        .filter(|_| a_val != 0.0)
                        .map(|(se, _)| 100.0 * se / a_val.abs()),
                    df: spread.map(|(_, df)| df),
                    n: Some(sides.0 .2.min(sides.1 .2)),
                    verdict,
                });
            }
        }
    }
    rows
}

/// The rows that fail a regression gate: significantly worse by more than `limit_pct`.
pub fn regressions(rows: &[CompareRow], limit_pct: f64) -> Vec<&CompareRow> {
    gate(rows, limit_pct)
        .into_iter()
        .filter(|(_, call)| *call == GateCall::Regression)
        .map(|(r, _)| r)
        .collect()
}

/// What a regression gate says of one figure: "is B worse than A by more than the limit?"
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GateCall {
    /// The data rule it out: B is not worse by more than the limit (at 95%).
    Pass,
    /// B is worse by more than the limit (at 95%).
    Regression,
    /// The data can rule out neither: the gate fails, since it cannot vouch for B. `runs` is
    /// about how many values each side would need (repetitions, or seconds of a run) to
    /// decide at the difference seen, when that can be said.
    Inconclusive {
        /// Values per side that would decide it.
        runs: Option<u32>,
    },
}

/// A regression gate over `rows` as a non-inferiority test: each figure's difference, with a
/// one-sided 95% bound from its standard error, against `limit_pct` in the worse direction.
/// A figure passes only when its bound rules out being worse by more than the limit; one
/// whose whole interval lies beyond the limit is a regression; the rest are inconclusive
/// (and fail the gate, saying how much more data would decide them). Figures that did not
/// change pass. Returns the rows that do not pass, with their call.
pub fn gate(rows: &[CompareRow], limit_pct: f64) -> Vec<(&CompareRow, GateCall)> {
    let mut out = Vec::new();
    for r in rows {
        if r.verdict == Verdict::Same {
            continue;
        }
        // How much worse B is, percent (negative: better).
        let worse = if higher_is_better(&r.figure) {
            -r.delta_pct
        } else {
            r.delta_pct
        };
        let call = match (r.se_pct, r.df) {
            (Some(se), Some(df)) if se.is_finite() => {
                let t = t_quantile_95(df);
                if worse + t * se <= limit_pct {
                    GateCall::Pass
                } else if worse - t * se > limit_pct {
                    GateCall::Regression
                } else {
                    // The standard error shrinks as 1/sqrt(n): the n whose bound would clear
                    // the limit on the side the difference lies.
                    let margin = (worse - limit_pct).abs();
                    let runs =
                        r.n.filter(|_| margin > 0.0 && se > 0.0)
                            .map(|n| (n * (t * se / margin).powi(2)).ceil().min(1e6) as u32);
                    GateCall::Inconclusive { runs }
                }
            }
            // Nothing to bound the difference with: only a better or equal figure passes.
            _ if worse <= 0.0 => GateCall::Pass,
            _ => GateCall::Inconclusive { runs: None },
        };
        if call != GateCall::Pass {
            out.push((r, call));
        }
    }
    out
}

/// Why two documents may not measure the same thing: a different workload, stormark version
/// or host inventory, or a run that did not finish. Empty when they are comparable. A gate
/// fails on any of these unless told they are intended.
pub fn differences(a: &Results, b: &Results) -> Vec<String> {
    let mut out = Vec::new();
    for (which, r) in [("baseline", a), ("compared", b)] {
        if r.status != crate::RunStatus::Ok {
            out.push(format!(
                "the {which} run did not finish cleanly (status {})",
                serde_json::to_value(r.status)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default()
            ));
        }
    }
    if a.tool.version != b.tool.version {
        out.push(format!(
            "stormark versions differ ({} against {})",
            a.tool.version, b.tool.version
        ));
    }
    if a.spec != b.spec {
        out.push("the workloads differ (spec)".into());
    }
    // The host's make-up, not its momentary state (free memory, counters).
    type MakeUp<'a> = (
        &'a str,
        &'a Option<String>,
        &'a Option<String>,
        usize,
        Option<u64>,
    );
    /// Each host's name and make-up, by name.
    fn hosts(r: &Results) -> Vec<(String, MakeUp<'_>)> {
        let mut h: Vec<_> = r
            .hosts
            .iter()
            .map(|h| {
                let i = &h.inventory;
                let made = (
                    i.hostname.as_str(),
                    &i.kernel,
                    &i.cpu_model,
                    i.cpus,
                    i.memory_bytes,
                );
                (h.name.clone(), made)
            })
            .collect();
        h.sort_by(|x, y| x.0.cmp(&y.0));
        h
    }
    if hosts(a) != hosts(b) {
        out.push("the hosts differ (names, kernel, CPU or memory in hosts[].inventory)".into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Interval, Latency};
    use std::collections::BTreeMap;

    fn summary(iops: f64, p99: u64) -> Summary {
        Summary {
            ops: iops as u64,
            bytes: iops as u64 * 4096,
            iops,
            bw_bytes_per_s: iops * 4096.0,
            errors: 0,
            latency_ns: Some(Latency {
                min: 10_000,
                mean: 100_000.0,
                p50: 90_000,
                p90: 150_000,
                p99,
                p999: 2 * p99,
                p9999: 3 * p99,
                max: 4 * p99,
            }),
            service_latency_ns: None,
            first_byte_latency_ns: None,
        }
    }

    /// A 60 s run around 50k IOPS with a little deterministic noise, scaled by `scale`.
    fn doc(scale: f64) -> Results {
        let mut r = Results::new(vec![]);
        let mut x = 12345u64;
        let intervals: Vec<Interval> = (0..60)
            .map(|t| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let noise = ((x >> 33) % 2001) as f64 - 1000.0;
                let s = summary((50_000.0 + noise) * scale, 400_000 + (x >> 40) % 20_000);
                Interval {
                    t_s: t,
                    duration_ns: 1_000_000_000,
                    total: s.clone(),
                    by_op: BTreeMap::from([("read".to_string(), s)]),
                }
            })
            .collect();
        let total = summary(50_000.0 * scale, 410_000);
        r.phases.push(Phase {
            name: "run".into(),
            kind: None,
            jobs: vec![],
            start_offset_ns: 0,
            duration_ns: 60_000_000_000,
            total: total.clone(),
            by_op: BTreeMap::from([("read".to_string(), total)]),
            by_host: BTreeMap::new(),
            by_job: BTreeMap::new(),
            by_target: BTreeMap::new(),
            errors: vec![],
            intervals,
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
        r
    }

    #[test]
    fn identical_documents_do_not_differ() {
        let rows = compare(&doc(1.0), &doc(1.0), 3.0);
        assert_eq!(rows.len(), FIGURES.len());
        assert!(rows.iter().all(|r| r.verdict == Verdict::Same), "{rows:?}");
        assert!(regressions(&rows, 5.0).is_empty());
    }

    #[test]
    fn twenty_percent_fewer_iops_is_significantly_worse() {
        let rows = compare(&doc(1.0), &doc(0.8), 3.0);
        let iops = rows.iter().find(|r| r.figure == "iops").unwrap();
        assert_eq!(iops.verdict, Verdict::Worse);
        assert!((iops.delta_pct + 20.0).abs() < 1e-9, "{}", iops.delta_pct);
        assert!(iops.p_value.unwrap() < 1e-6);
        assert_eq!(iops.basis, "intervals");
        // Latency did not change.
        assert_eq!(
            rows.iter().find(|r| r.figure == "p99_ns").unwrap().verdict,
            Verdict::Same
        );
        assert_eq!(regressions(&rows, 5.0).len(), 2, "iops and bandwidth");
        // 20% worse cannot be ruled out against 25%, nor shown: whatever it is, no pass.
        assert!(regressions(&rows, 25.0).is_empty());
        // The other way round it is better.
        let rows = compare(&doc(0.8), &doc(1.0), 3.0);
        assert_eq!(
            rows.iter().find(|r| r.figure == "iops").unwrap().verdict,
            Verdict::Better
        );
    }

    #[test]
    fn small_or_unsupported_differences_are_called_so() {
        // 1% more: under the 3% noise threshold.
        let rows = compare(&doc(1.0), &doc(1.01), 3.0);
        assert_eq!(
            rows.iter().find(|r| r.figure == "iops").unwrap().verdict,
            Verdict::Noise
        );
        // 4% over a run of 3 noisy seconds: above the threshold but not significant.
        let mut a = doc(1.0);
        let mut b = doc(1.04);
        for (r, wiggle) in [
            (&mut a, [40_000.0, 60_000.0, 50_000.0]),
            (&mut b, [62_000.0, 41_000.0, 53_000.0]),
        ] {
            r.phases[0].intervals.truncate(3);
            for (i, v) in r.phases[0].intervals.iter_mut().zip(wiggle) {
                i.total.iops = v;
                i.by_op.get_mut("read").unwrap().iops = v;
            }
        }
        let rows = compare(&a, &b, 3.0);
        let iops = rows.iter().find(|r| r.figure == "iops").unwrap();
        assert_eq!(iops.verdict, Verdict::Inconclusive, "{iops:?}");
        // A gate at 5% cannot rule out that B is 5% worse over three seconds this noisy,
        // whichever way it moved: inconclusive, never a pass, saying how much more data
        // would decide it.
        for rows in [rows.clone(), compare(&b, &a, 3.0)] {
            let calls = gate(&rows, 5.0);
            let call = calls
                .iter()
                .find(|(r, _)| r.figure == "iops")
                .map(|(_, c)| *c);
            assert!(
                matches!(call, Some(GateCall::Inconclusive { runs: Some(n) }) if n > 3),
                "{calls:?}"
            );
        }
        // Precise seconds: 1% worse is ruled out against 5%, and passes.
        let steady = compare(&doc(1.0), &doc(0.99), 0.5);
        let calls = gate(&steady, 5.0);
        assert!(calls.iter().all(|(r, _)| r.figure != "iops"), "{calls:?}");
    }

    #[test]
    fn repetitions_are_the_basis_when_both_have_them() {
        let rep = |scale: f64| {
            let mut r = doc(scale);
            let mut second = r.phases[0].clone();
            second.total.iops *= 1.01;
            r.phases.push(second);
            r
        };
        let rows = compare(&rep(1.0), &rep(0.8), 3.0);
        let iops = rows.iter().find(|r| r.figure == "iops").unwrap();
        assert_eq!(iops.basis, "repetitions");
        assert_eq!(iops.verdict, Verdict::Worse);
    }
}
