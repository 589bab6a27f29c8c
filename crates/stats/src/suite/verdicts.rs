//! The verdicts that compare steps with each other: the slowest disk, every disk at once
//! against the sum of each alone, the host furthest from the median, each named only beyond
//! the spread the steps measured.

use std::collections::BTreeMap;

use super::*;

/// The standard error of the mean of `v` over `n` (effective) values, relative to the mean;
/// `None` with fewer than two values or a mean of zero.
pub(super) fn relative_se(v: &[f64], n: f64) -> Option<f64> {
    if v.len() < 2 || n < 2.0 {
        return None;
    }
    let d = crate::describe(v);
    (d.mean > 0.0).then(|| d.sd / d.mean / n.sqrt())
}

/// Whether ratio `r` of one figure to another lies beyond what their relative standard
/// errors `a` and `b` allow (about two standard errors of the log-ratio, 95%); `None` when a
/// spread is unknown.
pub(super) fn beyond_spread(r: f64, a: Option<f64>, b: Option<f64>) -> Option<bool> {
    let se = (a?.powi(2) + b?.powi(2)).sqrt();
    Some(r > 0.0 && r.ln().abs() > 2.0 * se.max(1e-9))
}

/// Steps too short for a spread (`--smoke`: one value each) name a disk, host or pair only
/// this many times off the median: a host or disk ten times slower is named, what one-second
/// steps of identical ones differ by (down to 0.60x, issue 53) never.
pub(super) const SHORT_NAMED_BEYOND: f64 = 4.0;

/// Whether `ratio` to the median is far enough off to be named without a spread.
pub(super) fn far_beyond_noise(ratio: f64) -> bool {
    ratio > 0.0 && !(1.0 / SHORT_NAMED_BEYOND..=SHORT_NAMED_BEYOND).contains(&ratio)
}

/// The median of some known spreads, `None` when none is.
fn median_spread(v: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let known: Vec<f64> = v.flatten().collect();
    (!known.is_empty()).then(|| median(known))
}

/// The disk (or host) whose figures fall furthest below the median of its workload, over
/// the steps that measured each alone.
pub(super) fn slowest_disk(steps: &[StepOutcome]) -> Option<SuiteVerdict> {
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
        (_, None) if far_beyond_noise(overall) => format!(
            "slowest disk: {disk}, {overall:.2}x the median of {} disks (worst: {workload} at {worst:.2}x): steps too short for a spread, but more than {SHORT_NAMED_BEYOND}x off",
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
        if per.len() > 1
            && ((overall < 0.8 && beyond == Some(true))
                || (beyond.is_none() && far_beyond_noise(overall)))
        {
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
pub(super) fn disks_together(steps: &[StepOutcome]) -> Vec<SuiteVerdict> {
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
            // The slowest disk while all ran at once, from the run's by_target.
            let slowest = disks
                .iter()
                .find(|s| s.workload == w && s.subject.is_none())
                .and_then(|s| slowest_target(s, w))
                .map(|(path, r)| {
                    // Named as the steps of each disk alone name it (`stormark run PATH ...`).
                    let label = disks
                        .iter()
                        .find(|s| s.together.is_none() && s.command.get(2) == Some(&path))
                        .and_then(|s| s.subject.clone());
                    (label.unwrap_or(path), r)
                });
            let mut message =
                format!("{w}: every disk at once gave {ratio:.2}x the sum of each alone");
            let mut evidence = serde_json::json!({"workload": w, "together": together, "sum_alone": alone, "ratio": ratio});
            if let Some((disk, of_median)) = &slowest {
                message.push_str(&format!(
                    "; slowest at once: {disk}, {of_median:.2}x the median disk"
                ));
                evidence["slowest_at_once"] = serde_json::json!(disk);
                evidence["slowest_at_once_ratio"] = serde_json::json!(of_median);
            }
            out.push(verdict(
                if ratio < 0.8 {
                    Severity::Warning
                } else {
                    Severity::Info
                },
                "disks-together",
                message,
                evidence,
            ));
        }
    }
    out
}

/// The slowest target of a step that ran every disk at once (its figures' `by_target`), and
/// its share of the median target: IOPS for small blocks, bytes a second for large ones, as
/// [`figure`] picks.
fn slowest_target(s: &StepOutcome, w: &str) -> Option<(String, f64)> {
    let by = &s.figures.as_ref()?.by_target;
    if by.len() < 2 {
        return None;
    }
    let large = w.ends_with("-1m") || w.ends_with("-16m");
    let of = |f: &crate::suite::TargetFigures| {
        if large {
            f.bw_bytes_per_s
        } else {
            f.ops_per_s
        }
    };
    let mid = median(by.values().map(of).collect());
    let (disk, f) = by.iter().min_by(|a, b| of(a.1).total_cmp(&of(b.1)))?;
    (mid > 0.0).then(|| (disk.clone(), of(f) / mid))
}

/// The host whose throughput is furthest from the median of the hosts, over every step that
/// ran on more than one.
pub(super) fn furthest_host(steps: &[StepOutcome]) -> Option<SuiteVerdict> {
    // The furthest in standard errors where the spreads are known (a host beyond the noise
    // of its seconds), else in ratio.
    /// (rank, host, step, its ops/s, the median's, beyond the spread).
    type Far<'a> = (f64, &'a str, &'a str, f64, f64, Option<bool>);
    let mut worst: Option<Far<'_>> = None;
    for s in steps {
        let Some(f) = &s.figures else { continue };
        // An interference step's hosts differ by design (an aggressor among victims).
        if f.by_host.len() < 2 || s.part == "interference" {
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
        None if far_beyond_noise(ratio) => format!("host furthest from the median: {host}, {ratio:.2}x the median host in {step} ({v:.0} against {mid:.0} ops/s): steps too short for a spread, but more than {SHORT_NAMED_BEYOND}x off"),
        None => format!("host furthest from the median: {host}, {ratio:.2}x the median host in {step} ({v:.0} against {mid:.0} ops/s), but the steps are too short to tell a difference from noise"),
    };
    Some(verdict(
        if (!(0.8..=1.25).contains(&ratio) && beyond == Some(true))
            || (beyond.is_none() && far_beyond_noise(ratio))
        {
            Severity::Warning
        } else {
            Severity::Info
        },
        "furthest-host",
        message,
        serde_json::json!({"host": host, "step": step, "ops_per_s": v, "median_ops_per_s": mid, "ratio": ratio, "beyond_spread": beyond}),
    ))
}
