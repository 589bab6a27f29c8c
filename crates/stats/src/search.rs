//! What `--target-latency` found, as the results document holds it: each step's load and
//! figures, the best, and why the search ended. The search controller itself is a policy and
//! lives in the plan crate.

use serde::{Deserialize, Serialize};
use stormark_spec::LatencyStat;

use crate::Latency;

/// The load of one step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Load {
    /// Workers per host.
    pub jobs: u32,
    /// I/Os in flight per worker.
    pub iodepth: u32,
    /// Open loop: total I/Os per second; `None`: closed loop.
    pub rate_iops: Option<f64>,
}

/// One step as it went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchStep {
    /// The phase that measured it (`search-step-N`).
    pub phase: String,
    /// Its load.
    pub load: Load,
    /// Achieved I/Os per second.
    pub iops: f64,
    /// Achieved bytes per second.
    pub bw_bytes_per_s: f64,
    /// Each targeted statistic as measured, ns, in the order of the targets (`null` when
    /// nothing completed).
    pub latency_ns: Vec<Option<f64>>,
    /// Whether every target was met (and the rate achieved, without errors).
    pub met: bool,
    /// Why not, in words.
    pub missed: Option<String>,
}

/// Why the search stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SearchEnd {
    /// The knee is known within the plan's tolerance (5%).
    Converged,
    /// Throughput stopped growing with concurrency while every target still held.
    Saturated,
    /// Every target held up to the most concurrency allowed.
    ConcurrencyLimit,
    /// The step budget ran out first.
    StepLimit,
    /// Even the lightest load broke a target.
    Unreachable,
    /// The run stopped (Ctrl-C, a failure) before the search ended.
    Interrupted,
}

impl SearchEnd {
    /// In words, for the terminal.
    pub fn describe(&self) -> &'static str {
        match self {
            SearchEnd::Converged => "converged",
            SearchEnd::Saturated => "throughput stopped growing while the targets held",
            SearchEnd::ConcurrencyLimit => {
                "the targets held up to the most concurrency allowed (raise --jobs or --iodepth to search further)"
            }
            SearchEnd::StepLimit => "the step budget ran out",
            SearchEnd::Unreachable => "even the lightest load broke a target",
            SearchEnd::Interrupted => "the run stopped before the search ended",
        }
    }
}

/// A target as written in the results document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetDoc {
    /// `p99`, `mean`, ...
    pub stat: String,
    /// At most this, ns.
    pub limit_ns: u64,
}

/// What `--target-latency` found: `search` in the results document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchReport {
    /// The targets, all to be met.
    pub targets: Vec<TargetDoc>,
    /// Every step in order.
    pub steps: Vec<SearchStep>,
    /// The phase of the highest throughput that met every target; `null` when none did.
    pub best: Option<String>,
    /// That throughput, I/Os per second.
    pub best_iops: Option<f64>,
    /// The first step that broke a target.
    pub first_broken: Option<String>,
    /// Why the search stopped.
    pub ended: SearchEnd,
}

/// The statistic of a latency distribution.
pub fn latency_stat(l: &Latency, stat: LatencyStat) -> f64 {
    match stat {
        LatencyStat::Min => l.min as f64,
        LatencyStat::Mean => l.mean,
        LatencyStat::P50 => l.p50 as f64,
        LatencyStat::P90 => l.p90 as f64,
        LatencyStat::P99 => l.p99 as f64,
        LatencyStat::P999 => l.p999 as f64,
        LatencyStat::P9999 => l.p9999 as f64,
        LatencyStat::Max => l.max as f64,
    }
}
