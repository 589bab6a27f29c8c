//! A suite's summary document (`"schema": "stormark/suite/1"`): each step with its command,
//! its own results document, its outcome and headline figures, and the suite's verdicts (the
//! slowest disk, the weakest network pair, the host furthest from the median, the latency
//! target met, what failed). Figures are read from the steps' results documents, never
//! re-measured or rounded.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{PhaseKind, Results, RunStatus, Severity};

/// The schema of a suite's summary.
pub const SUITE_SCHEMA: &str = "stormark/suite/1";

/// A suite's summary document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteSummary {
    /// [`SUITE_SCHEMA`].
    pub schema: String,
    /// The suite's name (`acceptance`).
    pub suite: String,
    /// stormark's version.
    pub version: String,
    /// The suite's command line.
    pub command: Vec<String>,
    /// When the suite started, RFC 3339.
    pub started_at: String,
    /// From the start to the end of the last step, ns.
    pub duration_ns: u64,
    /// `ok` when every step that ran passed; `failed`, `interrupted`, or `running` while it
    /// runs (the summary is rewritten after every step).
    pub status: RunStatus,
    /// Every step, in order, those not run included.
    pub steps: Vec<StepOutcome>,
    /// What the suite concludes.
    pub verdicts: Vec<SuiteVerdict>,
    /// Remarks (why the suite stopped early, what was skipped).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepResult {
    /// Ran to its end without errors and met its expectations.
    Pass,
    /// Ran, but missed an expectation (`--expect`).
    Missed,
    /// Failed, counted errors, or was interrupted (exit 1).
    Failed,
    /// Refused before any load (exit 2): a mistake in what was asked.
    Refused,
    /// Cannot run here (no agents for the network, no endpoint for S3).
    Skipped,
    /// Not reached: the suite stopped before it.
    NotRun,
}

impl StepResult {
    /// The name in tables.
    pub fn name(self) -> &'static str {
        match self {
            StepResult::Pass => "pass",
            StepResult::Missed => "missed",
            StepResult::Failed => "failed",
            StepResult::Refused => "refused",
            StepResult::Skipped => "skipped",
            StepResult::NotRun => "not run",
        }
    }
}

/// One step of a suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepOutcome {
    /// Unique within the suite (`disks/sdb/randread-4k`).
    pub name: String,
    /// The suite it belongs to (`disks`).
    pub part: String,
    /// The workload, the same for every subject compared (`randread-4k`).
    pub workload: String,
    /// What is compared with the others of its workload: a disk or a host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// Steps with the same value ran at the same time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub together: Option<String>,
    /// The command that ran it (to run it again by hand).
    pub command: Vec<String>,
    /// Its results document, relative to the summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document: Option<String>,
    /// Its HTML report, relative to the summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<String>,
    /// How it ended.
    pub result: StepResult,
    /// Its exit status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Why it was skipped, refused or failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Its headline figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub figures: Option<StepFigures>,
}

/// A step's headline figures, from its results document.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepFigures {
    /// Operations per second (IOPS, objects/s; 0 for a network mesh).
    pub ops_per_s: f64,
    /// Bytes per second (for a mesh: the median pair alone).
    pub bw_bytes_per_s: f64,
    /// Median latency, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_ns: Option<u64>,
    /// 99th percentile latency, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ns: Option<u64>,
    /// The 99th percentile of each operation, ns (`sync`: a database's commits).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub p99_by_op_ns: BTreeMap<String, u64>,
    /// Operations per second of each host, when more than one ran.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_host: BTreeMap<String, f64>,
    /// The relative standard error of the step's throughput (ops/s and bytes/s alike), from
    /// its repetitions or its seconds (autocorrelation discounted); `None` when one value is
    /// all there is (a one-second step): how far apart two steps must be to differ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<f64>,
    /// The same of each host's operations per second, when more than one ran.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub host_spread: BTreeMap<String, f64>,
    /// The measured phases the figures are the mean of (repetitions).
    pub phases: u32,
    /// A latency-target search: the load that met the target with the most throughput, or
    /// `none met`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best: Option<String>,
    /// A mesh: the slowest pair alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weakest_pair: Option<WeakPair>,
}

/// The slowest pair of a mesh.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WeakPair {
    /// The sending host.
    pub from: String,
    /// The receiving host.
    pub to: String,
    /// Bits per second, alone.
    pub bits_per_s: f64,
    /// The median pair's bits per second.
    pub median_bits_per_s: f64,
}

/// One conclusion of a suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteVerdict {
    /// How much it matters.
    pub severity: Severity,
    /// Stable name (`slowest-disk`, `weakest-pair`, `furthest-host`, ...).
    pub code: String,
    /// One sentence with the figures.
    pub message: String,
    /// The figures behind it.
    pub evidence: serde_json::Value,
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = v.fold((0.0, 0u32), |(s, n), x| (s + x, n + 1));
    if n == 0 {
        0.0
    } else {
        sum / f64::from(n)
    }
}

/// The headline figures of a results document: a search's best step; a mesh's pairs; else
/// the mean over the measured phases (one per repetition).
pub fn step_figures(r: &Results) -> Option<StepFigures> {
    if let Some(mesh) = &r.mesh {
        let name = |i: u32| {
            mesh.hosts
                .get(i as usize)
                .map_or_else(|| i.to_string(), |h| h.agent.clone())
        };
        let ran: Vec<_> = mesh.alone.iter().filter(|p| p.failure.is_none()).collect();
        let mid = median(ran.iter().map(|p| p.bits_per_s).collect());
        let weakest = ran
            .iter()
            .min_by(|a, b| a.bits_per_s.total_cmp(&b.bits_per_s))
            .map(|p| WeakPair {
                from: name(p.from),
                to: name(p.to),
                bits_per_s: p.bits_per_s,
                median_bits_per_s: mid,
            });
        return Some(StepFigures {
            bw_bytes_per_s: mid / 8.0,
            phases: u32::from(!ran.is_empty()),
            weakest_pair: weakest,
            ..StepFigures::default()
        });
    }
    let phases: Vec<_> = match &r.search {
        Some(s) => {
            let best = s.best.as_deref();
            r.phases
                .iter()
                .filter(|p| Some(p.name.as_str()) == best)
                .collect()
        }
        None => r
            .phases
            .iter()
            .filter(|p| p.kind() != PhaseKind::Prepare)
            .collect(),
    };
    let best = r.search.as_ref().map(|s| {
        s.best
            .as_deref()
            .and_then(|b| s.steps.iter().find(|st| st.phase == b))
            .map_or("none met".to_string(), |st| {
                let workers = match st.load.jobs {
                    1 => "1 worker".to_string(),
                    n => format!("{n} workers"),
                };
                let rate = st
                    .load
                    .rate_iops
                    .map_or_else(String::new, |r| format!(" at {r:.0}/s"));
                // What the target limits, as measured at the best step (`sync:p99 579 µs`).
                let measured: Vec<String> = s
                    .targets
                    .iter()
                    .zip(&st.latency_ns)
                    .filter_map(|(t, v)| Some(format!("{} {}", t.stat, short_ns((*v)?))))
                    .collect();
                format!(
                    "{workers} x depth {}{rate}; {}",
                    st.load.iodepth,
                    measured.join(", ")
                )
            })
    });
    if phases.is_empty() {
        return best.map(|best| StepFigures {
            best: Some(best),
            ..StepFigures::default()
        });
    }
    let lat = |f: fn(&crate::Latency) -> u64| -> Option<u64> {
        let v: Vec<f64> = phases
            .iter()
            .filter_map(|p| p.total.latency_ns.as_ref().map(|l| f(l) as f64))
            .collect();
        (!v.is_empty()).then(|| mean(v.into_iter()).round() as u64)
    };
    let mut p99_by_op_ns = BTreeMap::new();
    let ops: std::collections::BTreeSet<&String> =
        phases.iter().flat_map(|p| p.by_op.keys()).collect();
    for op in ops {
        let v: Vec<f64> = phases
            .iter()
            .filter_map(|p| p.by_op.get(op)?.latency_ns.map(|l| l.p99 as f64))
            .collect();
        if !v.is_empty() {
            p99_by_op_ns.insert(op.clone(), mean(v.into_iter()).round() as u64);
        }
    }
    let hosts: std::collections::BTreeSet<&String> =
        phases.iter().flat_map(|p| p.by_host.keys()).collect();
    let by_host = if hosts.len() > 1 {
        hosts
            .into_iter()
            .map(|h| {
                let v = phases
                    .iter()
                    .map(|p| p.by_host.get(h).map_or(0.0, |b| b.total.iops));
                (h.clone(), mean(v))
            })
            .collect()
    } else {
        BTreeMap::new()
    };
    // The spread: over repetitions when there are several, else over the seconds.
    let spread = if phases.len() > 1 {
        relative_se(
            &phases.iter().map(|p| p.total.iops).collect::<Vec<_>>(),
            phases.len() as f64,
        )
    } else {
        let v: Vec<f64> = phases[0]
            .intervals
            .iter()
            .filter(|i| i.duration_ns >= 500_000_000)
            .map(|i| i.total.iops)
            .collect();
        relative_se(&v, crate::significance::effective_n(&v))
    };
    let host_spread = if by_host.len() > 1 && phases.len() == 1 {
        phases[0]
            .by_host
            .iter()
            .filter_map(|(h, b)| {
                let v: Vec<f64> = b
                    .seconds
                    .iter()
                    .filter(|s| s.duration_ns >= 500_000_000)
                    .map(|s| {
                        let ops: u64 = s.by_op.values().map(|c| c.ops).sum();
                        ops as f64 * 1e9 / s.duration_ns as f64
                    })
                    .collect();
                Some((
                    h.clone(),
                    relative_se(&v, crate::significance::effective_n(&v))?,
                ))
            })
            .collect()
    } else {
        BTreeMap::new()
    };
    Some(StepFigures {
        spread,
        host_spread,
        ops_per_s: mean(phases.iter().map(|p| p.total.iops)),
        bw_bytes_per_s: mean(phases.iter().map(|p| p.total.bw_bytes_per_s)),
        p50_ns: lat(|l| l.p50),
        p99_ns: lat(|l| l.p99),
        p99_by_op_ns,
        by_host,
        phases: phases.len() as u32,
        best,
        weakest_pair: None,
    })
}

/// The standard error of the mean of `v` over `n` (effective) values, relative to the mean;
/// `None` with fewer than two values or a mean of zero.
fn relative_se(v: &[f64], n: f64) -> Option<f64> {
    if v.len() < 2 || n < 2.0 {
        return None;
    }
    let d = crate::describe(v);
    (d.mean > 0.0).then(|| d.sd / d.mean / n.sqrt())
}

/// Whether ratio `r` of one figure to another lies beyond what their relative standard
/// errors `a` and `b` allow (about two standard errors of the log-ratio, 95%); `None` when a
/// spread is unknown.
fn beyond_spread(r: f64, a: Option<f64>, b: Option<f64>) -> Option<bool> {
    let se = (a?.powi(2) + b?.powi(2)).sqrt();
    Some(r > 0.0 && r.ln().abs() > 2.0 * se.max(1e-9))
}

/// The median of some known spreads, `None` when none is.
fn median_spread(v: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let known: Vec<f64> = v.flatten().collect();
    (!known.is_empty()).then(|| median(known))
}

/// A latency in µs or ms, for a sentence.
fn short_ns(ns: f64) -> String {
    if ns < 1e6 {
        format!("{:.0} µs", ns / 1e3)
    } else {
        format!("{:.2} ms", ns / 1e6)
    }
}

/// The throughput a step is compared by: bytes for large blocks, operations otherwise.
fn figure(s: &StepOutcome) -> Option<f64> {
    let f = s.figures.as_ref()?;
    let large = s.workload.ends_with("-1m") || s.workload.ends_with("-16m");
    Some(if large { f.bw_bytes_per_s } else { f.ops_per_s }).filter(|v| *v > 0.0)
}

fn verdict(
    severity: Severity,
    code: &str,
    message: String,
    evidence: serde_json::Value,
) -> SuiteVerdict {
    SuiteVerdict {
        severity,
        code: code.into(),
        message,
        evidence,
    }
}

/// What a suite concludes from its steps.
pub fn suite_verdicts(steps: &[StepOutcome]) -> Vec<SuiteVerdict> {
    let mut out = Vec::new();
    let failed: Vec<&str> = steps
        .iter()
        .filter(|s| matches!(s.result, StepResult::Failed | StepResult::Refused))
        .map(|s| s.name.as_str())
        .collect();
    if !failed.is_empty() {
        out.push(verdict(
            Severity::Critical,
            "steps-failed",
            format!("{} step(s) failed: {}", failed.len(), failed.join(", ")),
            serde_json::json!(failed),
        ));
    }
    let missed: Vec<&str> = steps
        .iter()
        .filter(|s| s.result == StepResult::Missed)
        .map(|s| s.name.as_str())
        .collect();
    if !missed.is_empty() {
        out.push(verdict(
            Severity::Warning,
            "expectations-missed",
            format!("missed expectations: {}", missed.join(", ")),
            serde_json::json!(missed),
        ));
    }
    if let Some(v) = slowest_disk(steps) {
        out.push(v);
    }
    out.extend(disks_together(steps));
    for s in steps {
        if let Some(p) = s.figures.as_ref().and_then(|f| f.weakest_pair.as_ref()) {
            let ratio = if p.median_bits_per_s > 0.0 {
                p.bits_per_s / p.median_bits_per_s
            } else {
                0.0
            };
            out.push(verdict(
                if ratio < 0.8 { Severity::Warning } else { Severity::Info },
                "weakest-pair",
                format!(
                    "weakest network pair: {} -> {} at {:.2} Gbit/s, {ratio:.2}x the median pair ({:.2} Gbit/s)",
                    p.from,
                    p.to,
                    p.bits_per_s / 1e9,
                    p.median_bits_per_s / 1e9
                ),
                serde_json::to_value(p).unwrap_or_default(),
            ));
        }
    }
    if let Some(v) = furthest_host(steps) {
        out.push(v);
    }
    for s in steps {
        if let Some(best) = s.figures.as_ref().and_then(|f| f.best.as_ref()) {
            let f = s.figures.as_ref().expect("figures hold best");
            out.push(verdict(
                if best == "none met" {
                    Severity::Warning
                } else {
                    Severity::Info
                },
                "latency-target",
                if best == "none met" {
                    format!("{}: no load met the latency target", s.name)
                } else {
                    format!(
                        "{}: the most that met the latency target: {:.0} ops/s ({best})",
                        s.name, f.ops_per_s
                    )
                },
                serde_json::json!({"step": s.name, "best": best, "ops_per_s": f.ops_per_s}),
            ));
        }
    }
    out
}

/// The disk (or host) whose figures fall furthest below the median of its workload, over
/// the steps that measured each alone.
fn slowest_disk(steps: &[StepOutcome]) -> Option<SuiteVerdict> {
    let alone: Vec<&StepOutcome> = steps
        .iter()
        .filter(|s| s.part == "disks" && s.subject.is_some() && s.together.is_none())
        .filter(|s| figure(s).is_some())
        .collect();
    let mut medians = BTreeMap::new();
    for s in &alone {
        medians
            .entry(s.workload.as_str())
            .or_insert_with(Vec::new)
            .push(figure(s)?);
    }
    let medians: BTreeMap<&str, f64> = medians.into_iter().map(|(w, v)| (w, median(v))).collect();
    // Per workload, the typical spread of its steps.
    let spreads: BTreeMap<&str, Option<f64>> = medians
        .keys()
        .map(|w| {
            let of_w = alone
                .iter()
                .filter(|s| s.workload == *w)
                .map(|s| s.figures.as_ref().and_then(|f| f.spread));
            (*w, median_spread(of_w))
        })
        .collect();
    // Per disk: the geometric mean of its ratios to the median, and its worst workload.
    let mut per: BTreeMap<&str, (f64, u32, f64, &str)> = BTreeMap::new();
    for s in &alone {
        let ratio = figure(s)? / medians[s.workload.as_str()];
        let e = per
            .entry(s.subject.as_deref()?)
            .or_insert((0.0, 0, f64::MAX, ""));
        e.0 += ratio.ln();
        e.1 += 1;
        if ratio < e.2 {
            e.2 = ratio;
            e.3 = s.workload.as_str();
        }
    }
    let (disk, (ln_sum, n, worst, workload)) = per
        .iter()
        .min_by(|a, b| (a.1 .0 / f64::from(a.1 .1)).total_cmp(&(b.1 .0 / f64::from(b.1 .1))))?;
    let overall = (ln_sum / f64::from(*n)).exp();
    // Beyond the spread? Each workload's log-ratio in standard errors (the disk's step and
    // the workload's typical one), combined over the workloads (Stouffer); unknown when a
    // step has one value only (a one-second step).
    let z: Option<Vec<f64>> = alone
        .iter()
        .filter(|s| s.subject.as_deref() == Some(*disk))
        .map(|s| {
            let own = s.figures.as_ref()?.spread?;
            let typical = spreads.get(s.workload.as_str()).copied().flatten()?;
            let se = (own * own + typical * typical).sqrt().max(1e-9);
            Some((figure(s)? / medians[s.workload.as_str()]).ln() / se)
        })
        .collect();
    let beyond = z.map(|z| z.iter().sum::<f64>() / (z.len() as f64).sqrt() < -2.0);
    let message = match (per.len(), beyond) {
        (1, _) => format!("slowest disk: {disk}, the only one measured (nothing to compare it with)"),
        (_, Some(false)) => format!(
            "slowest disk: none beyond the measured spread: the {} disks agree within it ({disk} lowest, {overall:.2}x the median)",
            per.len()
        ),
        (_, None) => format!(
            "slowest disk: {disk} lowest, {overall:.2}x the median of {} disks, but the steps are too short to tell a difference from noise (one value each; run without --smoke or with --repeat)",
            per.len()
        ),
        (_, Some(true)) => format!(
            "slowest disk: {disk}, {overall:.2}x the median of {} disks over {n} workloads (worst: {workload} at {worst:.2}x), beyond the measured spread",
            per.len()
        ),
    };
    Some(verdict(
        if per.len() > 1 && overall < 0.8 && beyond == Some(true) {
            Severity::Warning
        } else {
            Severity::Info
        },
        "slowest-disk",
        message,
        serde_json::json!({"disk": disk, "ratio_to_median": overall, "worst_workload": workload, "worst_ratio": worst, "disks": per.len(), "beyond_spread": beyond}),
    ))
}

/// Every disk at once against the sum of each alone, per workload.
fn disks_together(steps: &[StepOutcome]) -> Vec<SuiteVerdict> {
    let mut out = Vec::new();
    let disks: Vec<&StepOutcome> = steps.iter().filter(|s| s.part == "disks").collect();
    let workloads: std::collections::BTreeSet<&str> =
        disks.iter().map(|s| s.workload.as_str()).collect();
    for w in workloads {
        let of = |pick: &dyn Fn(&StepOutcome) -> bool| -> Option<f64> {
            let v: Vec<f64> = disks
                .iter()
                .filter(|s| s.workload == w && pick(s))
                .map(|s| figure(s))
                .collect::<Option<Vec<f64>>>()?;
            (!v.is_empty()).then(|| v.iter().sum())
        };
        let alone = of(&|s| s.subject.is_some() && s.together.is_none());
        let together = of(&|s| s.together.is_some() || s.subject.is_none());
        if let (Some(alone), Some(together)) = (alone, together) {
            let ratio = together / alone;
            out.push(verdict(
                if ratio < 0.8 { Severity::Warning } else { Severity::Info },
                "disks-together",
                format!("{w}: every disk at once gave {ratio:.2}x the sum of each alone"),
                serde_json::json!({"workload": w, "together": together, "sum_alone": alone, "ratio": ratio}),
            ));
        }
    }
    out
}

/// The host whose throughput is furthest from the median of the hosts, over every step that
/// ran on more than one.
fn furthest_host(steps: &[StepOutcome]) -> Option<SuiteVerdict> {
    // The furthest in standard errors where the spreads are known (a host beyond the noise
    // of its seconds), else in ratio.
    /// (rank, host, step, its ops/s, the median's, beyond the spread).
    type Far<'a> = (f64, &'a str, &'a str, f64, f64, Option<bool>);
    let mut worst: Option<Far<'_>> = None;
    for s in steps {
        let Some(f) = &s.figures else { continue };
        if f.by_host.len() < 2 {
            continue;
        }
        let mid = median(f.by_host.values().copied().collect());
        if mid <= 0.0 {
            continue;
        }
        let typical = median_spread(f.by_host.keys().map(|h| f.host_spread.get(h).copied()));
        for (h, v) in &f.by_host {
            let ratio = v.max(1e-9) / mid;
            let beyond = beyond_spread(ratio, f.host_spread.get(h).copied(), typical);
            let off = ratio.ln().abs();
            // A host beyond the spread outranks any within it.
            let rank = off + if beyond == Some(true) { 1e6 } else { 0.0 };
            if worst.is_none_or(|w| rank > w.0) {
                worst = Some((rank, h, &s.name, *v, mid, beyond));
            }
        }
    }
    let Some((_, host, step, v, mid, beyond)) = worst else {
        let ran = steps.iter().any(|s| s.figures.is_some());
        return ran.then(|| {
            verdict(
                Severity::Info,
                "furthest-host",
                "every step ran on one host: no host to compare with the others".into(),
                serde_json::Value::Null,
            )
        });
    };
    let ratio = v / mid;
    let message = match beyond {
        Some(true) => format!("host furthest from the median: {host}, {ratio:.2}x the median host in {step} ({v:.0} against {mid:.0} ops/s), beyond the measured spread"),
        Some(false) => format!("host furthest from the median: none beyond the measured spread: the hosts agree within it ({host} furthest, {ratio:.2}x the median in {step})"),
        None => format!("host furthest from the median: {host}, {ratio:.2}x the median host in {step} ({v:.0} against {mid:.0} ops/s), but the steps are too short to tell a difference from noise"),
    };
    Some(verdict(
        if !(0.8..=1.25).contains(&ratio) && beyond == Some(true) {
            Severity::Warning
        } else {
            Severity::Info
        },
        "furthest-host",
        message,
        serde_json::json!({"host": host, "step": step, "ops_per_s": v, "median_ops_per_s": mid, "ratio": ratio, "beyond_spread": beyond}),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(
        name: &str,
        workload: &str,
        subject: Option<&str>,
        together: bool,
        ops: f64,
    ) -> StepOutcome {
        StepOutcome {
            name: name.into(),
            part: "disks".into(),
            workload: workload.into(),
            subject: subject.map(String::from),
            together: together.then(|| format!("all/{workload}")),
            command: vec![],
            document: None,
            report: None,
            result: StepResult::Pass,
            exit_code: Some(0),
            why: None,
            figures: Some(StepFigures {
                ops_per_s: ops,
                bw_bytes_per_s: ops * 4096.0,
                phases: 1,
                ..StepFigures::default()
            }),
        }
    }

    fn with_spread(mut o: StepOutcome, spread: Option<f64>) -> StepOutcome {
        o.figures.as_mut().unwrap().spread = spread;
        o
    }

    #[test]
    fn the_slowest_disk_is_named_and_together_is_against_the_sum() {
        let steps = |spread: Option<f64>| {
            vec![
                with_spread(
                    outcome("a/r", "randread-4k", Some("a"), false, 1000.0),
                    spread,
                ),
                with_spread(
                    outcome("b/r", "randread-4k", Some("b"), false, 1100.0),
                    spread,
                ),
                with_spread(
                    outcome("c/r", "randread-4k", Some("c"), false, 500.0),
                    spread,
                ),
                outcome("all/r/a", "randread-4k", Some("a"), true, 800.0),
                outcome("all/r/b", "randread-4k", Some("b"), true, 800.0),
                outcome("all/r/c", "randread-4k", Some("c"), true, 400.0),
            ]
        };
        // Steady steps (2% standard error): half the median is far beyond the noise.
        let v = suite_verdicts(&steps(Some(0.02)));
        let slow = v.iter().find(|v| v.code == "slowest-disk").unwrap();
        assert!(
            slow.message.contains("slowest disk: c, 0.50x") && slow.message.contains("beyond"),
            "{}",
            slow.message
        );
        assert_eq!(slow.severity, Severity::Warning);
        let together = v.iter().find(|v| v.code == "disks-together").unwrap();
        assert!((together.evidence["ratio"].as_f64().unwrap() - 2000.0 / 2600.0).abs() < 1e-9);
        // Steps this noisy (40%): the disks agree within it, nobody is named.
        let v = suite_verdicts(&steps(Some(0.4)));
        let slow = v.iter().find(|v| v.code == "slowest-disk").unwrap();
        assert!(
            slow.message.contains("none beyond the measured spread"),
            "{}",
            slow.message
        );
        assert_eq!(slow.severity, Severity::Info);
        assert_eq!(slow.evidence["beyond_spread"], false);
        // One value per step (--smoke): said as too short to tell, not a verdict.
        let v = suite_verdicts(&steps(None));
        let slow = v.iter().find(|v| v.code == "slowest-disk").unwrap();
        assert!(
            slow.message.contains("too short to tell"),
            "{}",
            slow.message
        );
        assert_eq!(slow.severity, Severity::Info);
    }

    #[test]
    fn the_host_furthest_from_the_median_is_named() {
        let mut s = outcome("fileserver/randread-4k", "randread-4k", None, false, 3000.0);
        s.part = "fileserver".into();
        s.figures.as_mut().unwrap().by_host = [
            ("h1".to_string(), 1000.0),
            ("h2".into(), 1100.0),
            ("h3".into(), 400.0),
        ]
        .into();
        let spread = |v: f64| -> BTreeMap<String, f64> {
            [("h1".to_string(), v), ("h2".into(), v), ("h3".into(), v)].into()
        };
        s.figures.as_mut().unwrap().host_spread = spread(0.03);
        let v = suite_verdicts(&[s.clone()]);
        let far = v.iter().find(|v| v.code == "furthest-host").unwrap();
        assert!(far.message.contains("h3, 0.40x"), "{}", far.message);
        assert_eq!(far.severity, Severity::Warning);
        // Three identical hosts whose seconds vary ±60%: within the spread, nobody named.
        s.figures.as_mut().unwrap().host_spread = spread(0.6);
        let v = suite_verdicts(&[s]);
        let far = v.iter().find(|v| v.code == "furthest-host").unwrap();
        assert!(far.message.contains("none beyond"), "{}", far.message);
        assert_eq!(far.severity, Severity::Info);
    }

    #[test]
    fn failures_and_misses_are_verdicts() {
        let mut a = outcome("x", "w", None, false, 1.0);
        a.result = StepResult::Failed;
        let mut b = outcome("y", "w", None, false, 1.0);
        b.result = StepResult::Missed;
        let v = suite_verdicts(&[a, b]);
        assert_eq!(v[0].code, "steps-failed");
        assert_eq!(v[1].code, "expectations-missed");
    }
}
