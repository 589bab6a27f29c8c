//! What was measured: per-worker recorders, exact merging, and the results document.
//!
//! Each engine worker owns one [`Recorder`] and records every I/O into it (an HDR histogram of
//! latency per operation plus counters; no lock, no allocation). Once a second the worker swaps
//! out a [`Snapshot`] and hands it on; [`PhaseAccumulator`] merges snapshots exactly (histogram
//! counts are added, percentiles are never averaged) into per-interval, per-job and per-host
//! [`Summary`]s and the [`Results`] document that every renderer reads. `stats` depends only on
//! `spec`; it does no I/O.
//!
//! ```
//! use stormark_stats::{Op, Recorder};
//!
//! let mut a = Recorder::new();
//! let mut b = Recorder::new();
//! a.record(Op::Read, 4096, 100_000);
//! b.record(Op::Read, 4096, 300_000);
//! let mut merged = a.take();
//! merged += &b.take();
//! let read = merged.op(Op::Read);
//! assert_eq!(read.ops, 2);
//! assert_eq!(read.bytes, 8192);
//! assert_eq!(read.hist.max(), 300_031); // 3 significant digits: within 0.1%
//! ```
#![warn(missing_docs)]

mod accumulate;
mod check;
mod compare;
mod errors;
mod expect;
mod format;
mod hot;
mod inventory;
mod mesh;
mod names;
mod netreport;
mod op;
mod reached;
mod recorder;
mod repeat;
mod results;
mod samples;
mod search;
mod significance;
mod sparse;
mod steady;
mod suite;
mod summary;
mod sweep;
mod time;
mod verdict;

pub use accumulate::{mark_time_bound, PhaseAccumulator, WorkerKey};
pub use check::{check_document, redact_command};
pub use compare::{
    compare, differences, figure, gate, higher_is_better, regressions, CompareRow, GateCall,
    Verdict, ALPHA, FIGURES,
};
pub use expect::{check_expectations, expectation_findings, figure_of};
pub use format::{format_bw, format_figure, format_iops, format_latency};
pub use inventory::{
    BlockDevice, CacheEviction, DamonScheme, Filesystem, Inventory, NetInterface, Partition,
};
pub use mesh::mesh_of;
pub use names::Names;
pub use reached::Reached;
pub use recorder::{
    new_histogram, ErrorKind, ErrorTally, ErrorTallyEntry, Op, OpRecord, Recorder, Snapshot,
    HIGHEST_NS,
};
pub use repeat::{combine_repetitions, REPEAT_CV};
pub use results::{
    cpu_pct, decode_histogram, encode_histogram, Breakdown, Counts, Done, DoneAt, ErrorSummary,
    ExpectationResult, Finding, Host, HostFailure, HostSecond, Interval, IntervalOp, MeshHost,
    MeshPair, MeshReport, NetReport, NetStream, Phase, PhaseCpu, PhaseJob, PhaseKind,
    RepetitionStat, Results, RunStatus, Severity, Spec, Target, Tool, Verified, SCHEMA,
};
pub use samples::{
    fill_phase_cpu, mean_over, samples_within, ArcSample, CpuSample, DiskSample, HostSample,
    MemorySample, NetSample, NfsOpSample, NfsSample,
};
pub use search::{latency_stat, Load, SearchEnd, SearchReport, SearchStep, TargetDoc};
pub use significance::{
    describe, effective_n, lag1_autocorrelation, t_quantile_975, t_two_sided_p, welch_p, Describe,
};
pub use sparse::{SparseHist, SparseRecord};
pub use steady::{round_figures, steady_window, SteadyWindow};
pub use suite::{
    step_figures, suite_verdicts, StepFigures, StepOutcome, StepResult, SuiteSummary, SuiteVerdict,
    TargetFigures, WeakPair, SUITE_SCHEMA,
};
pub use summary::{Latency, Summary};
pub use sweep::{CurvePoint, CurveReport, SweepPoint, SweepReport};
pub use time::format_rfc3339;
pub use verdict::{validity_of, Reason, Validity, ValidityStatus, SUSPECT_FINDINGS};
