//! The versioned results document (`"schema": "stormark/results/1"`), field by field in
//! docs/results-schema.md. Every renderer reads this and nothing else.

use std::collections::BTreeMap;

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2Serializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

pub use crate::netreport::{cpu_pct, MeshHost, MeshPair, MeshReport, NetReport, NetStream};
use crate::{HostSample, Summary};

/// The schema identifier written into every document.
pub const SCHEMA: &str = "stormark/results/1";

/// A whole run: what was asked, where, what every phase measured, and what it means.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The program that wrote the document.
    pub tool: Tool,
    /// The command line, one argument per element.
    pub command: Vec<String>,
    /// Wall-clock start, RFC 3339 UTC.
    pub started_at: String,
    /// Wall time from start to the end of the last phase, ns.
    pub duration_ns: u64,
    /// How the run ended.
    pub status: RunStatus,
    /// Why it failed, when it did.
    pub failure: Option<String>,
    /// What was benchmarked (the first target, in a run of several).
    pub target: Option<Target>,
    /// A run of several targets on one host (`stormark run T1 T2`): each; absent for one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<Target>,
    /// The normalized workload: `prepare` plus the jobs as job-file keys; enough to re-run.
    #[serde(default, deserialize_with = "lenient")]
    pub spec: Spec,
    /// Measured phases in order (`prepare`, `run`, `run:<job>`, ...).
    pub phases: Vec<Phase>,
    /// Every host that ran load, with its inventory.
    pub hosts: Vec<Host>,
    /// What the numbers mean: problems found and advice.
    pub findings: Vec<Finding>,
    /// Whether the figures can be published as the storage's: `valid`, or `suspect` and why
    /// (from the findings above and the run's settings), settled when the document is written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<crate::Validity>,
    /// Measured against what the user expected (`--expect`).
    #[serde(default)]
    pub expectations: Vec<ExpectationResult>,
    /// With `--repeat`, each figure over the repetitions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repetitions: Vec<RepetitionStat>,
    /// With `--target-latency`, the search: every step and the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<crate::SearchReport>,
    /// With `--curve`, throughput against latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curve: Option<crate::CurveReport>,
    /// With `--sweep`, one point per combination.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<crate::SweepReport>,
    /// A network test (`stormark net`): each stream as its ends saw it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net: Option<NetReport>,
    /// A network mesh over agents (`stormark net mesh`): every ordered pair alone, then all
    /// at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mesh: Option<MeshReport>,
    /// Things the run decided on its own and says so (engine chosen, O_DIRECT fallback).
    pub notes: Vec<String>,
}

impl Results {
    /// An empty document for a run started now with this command line.
    pub fn new(command: Vec<String>) -> Results {
        Results {
            schema: SCHEMA.to_string(),
            tool: Tool {
                name: "stormark".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            command,
            started_at: crate::format_rfc3339(std::time::SystemTime::now()),
            duration_ns: 0,
            status: RunStatus::Ok,
            failure: None,
            target: None,
            targets: Vec::new(),
            spec: Spec::default(),
            phases: Vec::new(),
            hosts: Vec::new(),
            findings: Vec::new(),
            verdict: None,
            expectations: Vec::new(),
            repetitions: Vec::new(),
            search: None,
            curve: None,
            sweep: None,
            net: None,
            mesh: None,
            notes: Vec::new(),
        }
    }

    /// Errors counted over every phase.
    pub fn total_errors(&self) -> u64 {
        self.phases.iter().map(|p| p.total.errors).sum()
    }

    /// Errors that fail the run: all but those of a kind their job ignores, and requests the
    /// run itself abandoned (`interrupted`: Ctrl-C, or fio's `exitall` stopping a worker
    /// mid-request), which are no failure of what was measured.
    pub fn failing_errors(&self) -> u64 {
        let ignored: u64 = self
            .phases
            .iter()
            .flat_map(|p| &p.errors)
            .filter(|e| e.ignored || e.kind == crate::ErrorKind::Interrupted.name())
            .map(|e| e.count)
            .sum();
        self.total_errors().saturating_sub(ignored)
    }
}

/// The program that wrote a document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// `stormark`.
    pub name: String,
    /// Its version.
    pub version: String,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Every phase ran to its end without I/O errors.
    Ok,
    /// A phase could not run, or I/O errors were counted.
    Failed,
    /// Stopped by Ctrl-C or a signal; the phases hold what was measured until then.
    Interrupted,
    /// Still running: a document rewritten after each phase; the phases are those finished.
    Running,
}

/// What was benchmarked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Target {
    /// The path as given (or the directory chosen for a run without TARGET).
    pub path: String,
    /// `directory`, `file` or `block-device`.
    pub kind: String,
    /// The run directory stormark created inside a directory target.
    pub run_dir: Option<String>,
    /// Whether the run directory was kept (`--keep`).
    pub kept: bool,
    /// The whole block device under the target (`vda`, `nvme0n1`), when there is one.
    #[serde(default)]
    pub device: Option<String>,
    /// Filesystem type of a file or directory target (`ext4`, `nfs4`, `tmpfs`).
    #[serde(default)]
    pub fs_type: Option<String>,
}

/// The normalized workload of a run: enough to run it again.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Spec {
    /// Whether the working set is written before the first phase.
    pub prepare: bool,
    /// Each job as the job-file keys and values that make it (`bs = "4k"`).
    pub jobs: Vec<BTreeMap<String, String>>,
    /// The profile it came from when that says something of the run (`quick`: a first look).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

/// A part of a document as written, or empty when it is not one: a `spec` that a run ended
/// before its workload was known wrote as `null`, an inventory another tool or version wrote
/// otherwise, read as unknown, never as a document that cannot be read.
fn lenient<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned + Default,
{
    let v = serde_json::Value::deserialize(d)?;
    Ok(serde_json::from_value(v).unwrap_or_default())
}

/// What a phase was (the planner's and the coordinator's word for it, in the results).
pub use stormark_spec::PhaseKind;

impl Phase {
    /// What the phase was. Documents of earlier versions carry no kind: it is read from the
    /// name they gave, here and nowhere else.
    pub fn kind(&self) -> PhaseKind {
        self.kind.unwrap_or_else(|| {
            let n = self.name.as_str();
            if n == "prepare" {
                PhaseKind::Prepare
            } else if n.starts_with("search-step-") {
                PhaseKind::SearchStep
            } else if n == "curve-max" {
                PhaseKind::CurveMax
            } else if n.starts_with("curve-") {
                PhaseKind::CurvePoint
            } else if n.starts_with("sweep:") {
                PhaseKind::SweepPoint
            } else {
                PhaseKind::Run
            }
        })
    }

    /// Whether the phase measured the workload (anything but the preparation).
    pub fn measured(&self) -> bool {
        self.kind() != PhaseKind::Prepare
    }
}

/// One host that ran load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Host {
    /// Host name.
    pub name: String,
    /// This host's own target (its path, run directory, device and filesystem), with several
    /// hosts; the document's `target` is the first host's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
    /// What the host is (see `stormark probe`).
    #[serde(default, deserialize_with = "lenient")]
    pub inventory: crate::Inventory,
    /// The host's own counters, one sample a second for the whole run.
    #[serde(default)]
    pub samples: Vec<HostSample>,
    /// CPU time the sampler itself used, ns (its cost, for the record).
    #[serde(default)]
    pub sampler_cpu_ns: Option<u64>,
    /// Where the host is reached (`10.0.0.5:7878`); `None` for the in-process agent.
    #[serde(default)]
    pub address: Option<String>,
    /// Why the host dropped out of the run, when it did.
    #[serde(default)]
    pub failure: Option<HostFailure>,
    /// Its clock minus the coordinator's, ns, as last measured (before the last phase);
    /// `None` in-process.
    #[serde(default)]
    pub clock_offset_ns: Option<i64>,
    /// The round trip that offset was measured over, ns: the offset is known to half of it.
    #[serde(default)]
    pub clock_rtt_ns: Option<u64>,
}

/// A host that failed, hung or was cut off during a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostFailure {
    /// What happened.
    pub message: String,
    /// The phase it was in.
    pub phase: String,
    /// When it was noticed, ns after the run's start.
    pub at_ns: u64,
    /// The last second it reported (`intervals[].t_s`), if any; its figures up to then are in
    /// the phase's `by_host`.
    pub last_interval: Option<u32>,
}

/// Figures of one phase: one job, or every job of one group running together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    /// `prepare`, `run` (a workload of one job), or `run:<job or group>`.
    pub name: String,
    /// What the phase was; absent in documents of earlier versions (see [`Phase::kind`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<PhaseKind>,
    /// The jobs that ran in this phase.
    pub jobs: Vec<PhaseJob>,
    /// Start of the measured span, ns after the run's start.
    pub start_offset_ns: u64,
    /// Length of the measured span (ramp excluded), ns.
    pub duration_ns: u64,
    /// Every operation together.
    pub total: Summary,
    /// Per operation: `read`, `write`.
    pub by_op: BTreeMap<String, Summary>,
    /// Per host, the same shape.
    pub by_host: BTreeMap<String, Breakdown>,
    /// Per job, the same shape.
    pub by_job: BTreeMap<String, Breakdown>,
    /// Per target of a run of several (each job's `target`), the same shape, each from its
    /// own merged histogram; absent in a run of one target.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_target: BTreeMap<String, Breakdown>,
    /// Failed I/Os by kind.
    pub errors: Vec<ErrorSummary>,
    /// One entry per second of the measured span; the last may be shorter.
    pub intervals: Vec<Interval>,
    /// Latency histograms, HDR V2 encoded then base64, keyed `<host>/<job>/<op>`, so that
    /// documents can be merged exactly at any level.
    pub histograms: BTreeMap<String, String>,
    /// When each host's load started, ns after the run's start on the coordinator's clock
    /// (agents' clock offsets removed): how well the start was synchronized.
    #[serde(default)]
    pub host_starts_ns: BTreeMap<String, u64>,
    /// How well those starts are known: half the largest round trip over which a host's clock
    /// offset was measured before this phase, ns. Absent for one host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_uncertainty_ns: Option<u64>,
    /// With `--repeat`, which repetition (1, 2, ...) this phase belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetition: Option<u32>,
    /// Each net job's session of this phase on each host (its streams as their ends saw
    /// them), in host order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub net: Vec<crate::NetReport>,
    /// What `--verify` checked in this phase, over every host; absent when nothing was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<Verified>,
    /// When the quickest worker finished and when the slowest did (elbencho's first done
    /// and last done), over the phase and per host; absent where no worker said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done: Option<Done>,
    /// CPU over the phase, from the hosts' samples that overlap it; absent without any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<PhaseCpu>,
    /// A metadata phase: how many items each worker went through, and whether its time cut
    /// it short (mdtest's stonewall figures); absent for other phases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reached: Option<crate::Reached>,
}

/// First done and last done: the phase's (or a host's) quickest and slowest worker's end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Done {
    /// When the first worker finished its work.
    pub first: DoneAt,
    /// When the last did: the phase's real time.
    pub last: DoneAt,
    /// The phase ran for a time, not to an amount: every worker ends at that time, and the
    /// two say nothing of stragglers (shown as n/a).
    #[serde(default)]
    pub time_bound: bool,
    /// Per host of a run with several, the same (their own `by_host` empty).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_host: BTreeMap<String, Done>,
}

/// One end: when, and the rate of every worker (of the phase, or of the host) until then.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DoneAt {
    /// ns after the phase's measured start.
    pub ns: u64,
    /// Bytes every worker moved until then, over that time.
    pub bw_bytes_per_s: f64,
}

/// CPU over a phase: the hosts' user and system time, and stormark's own process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseCpu {
    /// User and system time, percent of all CPUs (the mean over hosts).
    pub busy_pct: f64,
    /// stormark's own process (the agent and its workers), percent of all CPUs; absent where
    /// it could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_pct: Option<f64>,
    /// Per host of a run with several, the same (their own `by_host` empty).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_host: BTreeMap<String, PhaseCpu>,
}

/// What `--verify` checked: blocks read back and judged (files, devices, iSCSI LUNs, NFS
/// shares), objects read and compared (S3), their bytes, and how many of them held the wrong
/// data. A worker counts into its recorder; a phase holds the sum.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verified {
    /// Blocks checked.
    pub blocks: u64,
    /// Objects checked.
    pub objects: u64,
    /// Bytes checked.
    pub bytes: u64,
    /// Of the blocks or objects checked, those that were not what was written.
    pub bad: u64,
}

impl Verified {
    /// Whether nothing was checked.
    pub fn is_empty(&self) -> bool {
        self.blocks + self.objects == 0
    }
}

impl std::ops::AddAssign for Verified {
    fn add_assign(&mut self, o: Verified) {
        self.blocks += o.blocks;
        self.objects += o.objects;
        self.bytes += o.bytes;
        self.bad += o.bad;
    }
}

/// How one job of a phase ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseJob {
    /// Job name.
    pub name: String,
    /// Engine used (`io_uring`, `psync`, `null`).
    pub engine: String,
    /// Whether I/O bypassed the page cache.
    pub direct: bool,
    /// Workers (fio's numjobs).
    pub workers: u32,
    /// I/Os in flight per worker.
    pub iodepth: u32,
    /// New I/Os per submitting system call (io_uring; fio's `iodepth_batch_submit`): written
    /// where above 1, the default.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub iodepth_batch: u32,
    /// Bytes the job's workers address together (files × size × workers).
    #[serde(default)]
    pub working_set_bytes: u64,
    /// Open loop: the requested total I/Os per second (all workers and hosts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_iops: Option<f64>,
    /// The target the job ran on, in a run of several targets (`stormark run T1 T2`, a fio
    /// job file whose jobs name different devices); absent in a run of one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// Total and per-operation figures of one host or job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    /// How long this host ran, ns, when less than the phase (it failed or was cut off): its
    /// rates are over this time, not the phase's. Absent when it ran the whole phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ran_ns: Option<u64>,
    /// Every operation together.
    pub total: Summary,
    /// Per operation.
    pub by_op: BTreeMap<String, Summary>,
    /// Per host of a run with several: each second's counts, on the phase's intervals (same
    /// `t_s` and `duration_ns`). Counts only: latency per host is in the histograms.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seconds: Vec<HostSecond>,
}

/// One second of one host: what each operation did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostSecond {
    /// Start, in whole seconds after the phase's measured start (as the phase's interval).
    pub t_s: u32,
    /// Length, ns (as the phase's interval).
    pub duration_ns: u64,
    /// Per operation: completed, bytes, failed.
    pub by_op: crate::Names<Counts>,
}

/// What one operation did in a span.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Completed operations.
    pub ops: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Failed operations.
    pub errors: u64,
}

/// One kind of failure of one operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorSummary {
    /// Host.
    pub host: String,
    /// Job.
    pub job: String,
    /// Operation.
    pub op: String,
    /// `eio`, `enospc`, `einval`, `short`, `errno-N`.
    pub kind: String,
    /// How many.
    pub count: u64,
    /// Offset of the first failure of this kind.
    pub first_offset: u64,
    /// The job asked for errors of this kind to be counted without failing the run (fio's
    /// `ignore_error`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignored: bool,
}

/// One second of a phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Start, in whole seconds after the phase's measured start.
    pub t_s: u32,
    /// Length, ns (one second but for the last).
    pub duration_ns: u64,
    /// Every operation together.
    pub total: Summary,
    /// Per operation.
    pub by_op: BTreeMap<String, Summary>,
}

/// Alias kept for renderers that read an interval's per-operation figure.
pub type IntervalOp = Summary;

/// Something the run noticed: what, the evidence, and what to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// How much it matters.
    pub severity: Severity,
    /// Stable identifier, e.g. `odirect-unsupported`.
    pub code: String,
    /// One sentence.
    pub message: String,
    /// The numbers behind it.
    pub evidence: serde_json::Value,
    /// What to do about it.
    pub advice: String,
}

/// One figure over `--repeat` repetitions: mean, spread and 95% confidence interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepetitionStat {
    /// Phase name.
    pub phase: String,
    /// `total`, `read`, `write`.
    pub op: String,
    /// `iops`, `bw_bytes_per_s`, `mean_ns`, `p50_ns`, ...
    pub figure: String,
    /// Its statistics over the repetitions.
    pub stats: crate::Describe,
}

/// One figure the user expected (`--expect iops=90k`), and what was measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExpectationResult {
    /// The phase measured.
    pub phase: String,
    /// `iops`, `bw_bytes_per_s`, or a latency: `mean_ns`, `p50_ns`, ... `max_ns`.
    pub figure: String,
    /// What was expected.
    pub expected: f64,
    /// What was measured.
    pub measured: f64,
    /// measured / expected.
    pub ratio: f64,
    /// Whether the figure was met: at least the throughput, at most the latency.
    pub met: bool,
}

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing.
    Info,
    /// The numbers may not mean what they seem.
    Warning,
    /// The numbers are wrong or the system is in trouble.
    Critical,
}

/// Encodes a histogram as HDR V2 (uncompressed, per the HdrHistogram spec), base64.
pub fn encode_histogram(h: &Histogram<u64>) -> String {
    let mut buf = Vec::new();
    V2Serializer::new()
        .serialize(h, &mut buf)
        .expect("serializing into a Vec cannot fail");
    base64::engine::general_purpose::STANDARD.encode(buf)
}

/// Decodes a histogram written by [`encode_histogram`] (or any HDR V2/V2+deflate encoder).
pub fn decode_histogram(text: &str) -> Option<Histogram<u64>> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .ok()?;
    Deserializer::new().deserialize(&mut bytes.as_slice()).ok()
}

/// [`PhaseJob::iodepth_batch`]'s default, one I/O a call.
fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::new_histogram;

    #[test]
    fn histogram_round_trip() {
        let mut h = new_histogram();
        for v in [1u64, 10, 1000, 123_456, 9_999_999_999] {
            h.record(v).unwrap();
        }
        let back = decode_histogram(&encode_histogram(&h)).unwrap();
        assert_eq!(back, h);
        assert!(decode_histogram("not base64!").is_none());
        assert!(decode_histogram("AAAA").is_none());
    }
}
