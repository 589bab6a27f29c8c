//! The suites of one device: `spec` (its spec sheet's four workloads against the sheet's
//! figures) and `ssd` (SNIA PTS's steady state: written twice over, then rounds until five
//! agree).

use super::{step, strings, SuiteOptions, SuiteStep, SuiteStop};

/// A spec sheet's four figures, as given (`--spec-read-mbs 550`, `--spec-read-iops 98k`):
/// sequential MB/s (decimal, as datasheets write them) and random 4 KiB IOPS.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpecSheet {
    /// Sequential 1 MiB reads, MB/s.
    pub read_mbs: Option<String>,
    /// Sequential 1 MiB writes, MB/s.
    pub write_mbs: Option<String>,
    /// Random 4 KiB reads, IOPS.
    pub read_iops: Option<String>,
    /// Random 4 KiB writes, IOPS.
    pub write_iops: Option<String>,
}

impl SpecSheet {
    /// Each workload's `--expect` list (read-1m, write-1m, randread-4k, randwrite-4k), where
    /// its figure is given: a bare number of MB/s is decimal, as datasheets write it.
    pub fn expectations(&self) -> [Option<String>; 4] {
        let bw = |f: &Option<String>| {
            f.as_ref().map(|f| {
                if f.ends_with("/s") {
                    format!("bw={f}")
                } else {
                    format!("bw={f}MB/s")
                }
            })
        };
        let iops = |f: &Option<String>| f.as_ref().map(|f| format!("iops={f}"));
        [
            bw(&self.read_mbs),
            bw(&self.write_mbs),
            iops(&self.read_iops),
            iops(&self.write_iops),
        ]
    }
}

/// The most measurement rounds of the `ssd` suite when `--rounds` is not given (SNIA PTS's).
pub const SSD_ROUNDS: u32 = 25;

/// A spec sheet's four workloads (seed 003's): (name, flags, depth), in the order of
/// [`SpecSheet::expectations`].
const SPEC_WORKLOADS: &[(&str, &[&str], &str)] = &[
    ("read-1m", &["--rw", "read", "--bs", "1m"], "8"),
    ("write-1m", &["--rw", "write", "--bs", "1m"], "8"),
    ("randread-4k", &["--rw", "randread", "--bs", "4k"], "32"),
    ("randwrite-4k", &["--rw", "randwrite", "--bs", "4k"], "32"),
];

/// The spec suite: each of a spec sheet's workloads on the device (the first TARGET), one
/// worker at the sheet's depth, direct, each with the sheet's figure as its `--expect`; a
/// workload whose figure is not given runs for its measurement alone.
pub(super) fn spec(o: &SuiteOptions) -> Vec<SuiteStep> {
    SPEC_WORKLOADS
        .iter()
        .zip(o.spec.expectations())
        .map(|((w, flags, depth), expect)| {
            let mut args = vec!["run".to_string(), o.dir()];
            args.extend(strings(flags));
            args.extend(strings(&["--direct", "--jobs", "1", "--iodepth", depth]));
            args.extend(o.sizing(None));
            args.extend(o.time("60s"));
            args.extend(o.on(&o.agents));
            if let Some(e) = expect {
                args.extend(["--expect".to_string(), e]);
            }
            step("spec", format!("spec/{w}"), w, args)
        })
        .collect()
}

/// The ssd suite (SNIA PTS's steady state): the device or file (the first TARGET) written
/// twice over, 1 MiB at a time, then rounds of 4 KiB random writes at depth 32 until the last
/// five agree ([`suite_stops`] ends it there) or the rounds run out.
pub(super) fn ssd(o: &SuiteOptions) -> Vec<SuiteStep> {
    let target = o.dir();
    let size: Vec<String> = if o.smoke {
        strings(&["--size", "16m"])
    } else {
        strings(&["--size", "100%"])
    };
    let mut pre = vec!["run".to_string(), target.clone()];
    pre.extend(strings(&[
        "--rw",
        "write",
        "--bs",
        "1m",
        "--direct",
        "--jobs",
        "1",
        "--iodepth",
        "8",
        "--loops",
        "2",
    ]));
    pre.extend(size.iter().cloned());
    let mut out = vec![step("ssd", "ssd/precondition".into(), "precondition", pre)];
    for k in 1..=o.rounds.unwrap_or(SSD_ROUNDS) {
        let mut a = vec!["run".to_string(), target.clone()];
        a.extend(strings(&[
            "--rw",
            "randwrite",
            "--bs",
            "4k",
            "--direct",
            "--jobs",
            "1",
            "--iodepth",
            "32",
        ]));
        a.extend(size.iter().cloned());
        a.extend(o.time("60s"));
        out.push(step("ssd", format!("ssd/round-{k}"), "round", a));
    }
    out
}

/// The ssd suite's end: after the round whose last five are steady
/// ([`stormark_stats::steady_window`]); the rounds left are not needed.
pub(super) fn ssd_steady(
    suite: &str,
    o: &stormark_stats::StepOutcome,
    before: &[stormark_stats::StepOutcome],
) -> Option<SuiteStop> {
    if suite != "ssd" || o.part != "ssd" || o.workload != "round" {
        return None;
    }
    let mut all = before.to_vec();
    all.push(o.clone());
    let w = stormark_stats::steady_window(&stormark_stats::round_figures(&all))?;
    Some(SuiteStop {
        why: format!(
            "steady state after round {}: rounds {}-{} within {:.0}% of their mean ({:.0} IOPS), the fitted line {:.0}%; the rounds left were not needed",
            w.last_round,
            w.first_round,
            w.last_round,
            100.0 * w.range_share,
            w.mean,
            100.0 * w.slope_share
        ),
        refused_first: false,
        done: true,
    })
}
