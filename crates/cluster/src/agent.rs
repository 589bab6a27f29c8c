//! The interface every agent implements, in-process or remote.

use stormark_spec::{StageLoad, Workload};
use stormark_stats::{Finding, HostSample, PhaseJob, Snapshot, Target};

/// Which pass of a run: the preparation, or stage `n` of the workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Making the run's files and writing the working set.
    Prepare,
    /// Stage `n` of the workload (jobs, or groups of jobs run together).
    Run(usize),
}

/// Where to run and what the user allowed: the same for every kind of agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetOptions {
    /// A directory (a run directory is created inside), an existing file, or a block device;
    /// with `reuse`, a run directory kept by an earlier `keep` run.
    pub path: std::path::PathBuf,
    /// Leave the run directory and its files in place.
    pub keep: bool,
    /// Use the files of a kept run directory (`path`).
    pub reuse: bool,
    /// Allow writing into an existing file stormark did not create.
    pub allow_overwrite: bool,
    /// Allow writing to a block device.
    pub allow_device_write: bool,
    /// Write to a device even though it carries a filesystem or partition signature.
    pub force: bool,
    /// The block devices (`st_rdev`) that may be used at all; `None` for any (a local run,
    /// where the user names the device). An agent sets its `--allow-device` list.
    pub allowed_devices: Option<Vec<u64>>,
}

impl TargetOptions {
    /// Options for `path` with nothing allowed.
    pub fn new(path: std::path::PathBuf) -> TargetOptions {
        TargetOptions {
            path,
            keep: false,
            reuse: false,
            allow_overwrite: false,
            allow_device_write: false,
            force: false,
            allowed_devices: None,
        }
    }
}

/// An agent's clock against the coordinator's, as measured over the fastest of a few round
/// trips (NTP's estimate: the offset is known to within half the round trip).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    /// The agent's clock minus the coordinator's, ns.
    pub offset_ns: i64,
    /// The round trip it was measured over, ns.
    pub rtt_ns: u64,
}

/// Why an agent cannot go on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    /// The request cannot be run as given (a user error, found before any load): exit 2.
    #[error("{0}")]
    Refused(String),
    /// Something broke while running: exit 1.
    #[error("{0}")]
    Failed(String),
}

/// What validation found: how each stage will run, and what the user should know.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Validated {
    /// The target as it will appear in results.
    pub target: Option<Target>,
    /// Per stage, the jobs as they will run (engine chosen, O_DIRECT decided later if auto).
    pub stages: Vec<Vec<PhaseJob>>,
    /// Decisions the agent made on its own.
    pub notes: Vec<String>,
    /// Problems worth reporting that do not stop the run.
    pub findings: Vec<Finding>,
}

/// One worker's second as an agent hands it over.
#[derive(Debug)]
pub enum Second {
    /// A snapshot, as the engine's worker made it (in-process).
    Whole(Box<Snapshot>),
    /// The records of the operations that did something, and the failures (a remote agent's,
    /// decoded from the wire).
    Parts(
        Vec<(stormark_stats::Op, stormark_stats::OpRecord)>,
        Box<stormark_stats::ErrorTally>,
    ),
}

/// What an agent streams while a stage (or the preparation) runs.
#[derive(Debug)]
pub enum AgentEvent<'a> {
    /// Load started on this agent, at this instant of the coordinator's clock.
    Started {
        /// The start, on the coordinator's wall clock (a remote agent removes its offset).
        at: std::time::SystemTime,
    },
    /// One worker's second, handed over (moved, never copied) for the coordinator to merge.
    Interval {
        /// Job index within the stage.
        job: u16,
        /// Worker index within the job.
        worker: u32,
        /// Interval number after the ramp.
        interval: u32,
        /// What it did.
        second: Second,
    },
    /// A worker stopped.
    Done {
        /// Job index within the stage.
        job: u16,
        /// Worker index within the job.
        worker: u32,
        /// Last completion, ns after the measured start.
        end_ns: u64,
        /// Why it failed, if it did.
        failure: Option<&'a str>,
    },
    /// Nothing new; a chance to refresh a display.
    Tick,
}

/// One host's share of a run. Calls come in order: `validate`, `start_sampling`, `prepare`,
/// `run_stage` for each stage, `stop_sampling`, `cleanup` (always, even after a failure). The
/// coordinator drives each agent from a thread of its own, so that all run at once.
pub trait Agent: Send {
    /// Host name for results.
    fn host(&self) -> &str;
    /// Where the agent is reached, for results; `None` in-process.
    fn address(&self) -> Option<String> {
        None
    }
    /// Measures the agent's clock again (before each phase); `None` in-process, where it is
    /// the coordinator's own.
    fn measure_clock(&mut self) -> Option<Clock> {
        None
    }
    /// The host's inventory, for `hosts[].inventory`.
    fn inventory(&self) -> serde_json::Value;
    /// Checks everything that can be checked without writing: target kind, safety, space,
    /// engines. Errors are [`AgentError::Refused`].
    fn validate(&mut self, workload: &Workload) -> Result<Validated, AgentError>;
    /// Creates what the run needs and writes the working set when asked or needed. Returns the
    /// jobs of the preparation pass (empty when none ran) after streaming its events.
    fn prepare(
        &mut self,
        on_event: &mut dyn FnMut(AgentEvent<'_>),
    ) -> Result<Vec<PhaseJob>, AgentError>;
    /// Runs stage `index` to its end with `load`'s changes, streaming events, starting the
    /// load at `start_at` (the coordinator's clock; `None`: as soon as ready). Returns the
    /// jobs as they ran.
    fn run_stage(
        &mut self,
        index: usize,
        load: &StageLoad,
        start_at: Option<std::time::SystemTime>,
        on_event: &mut dyn FnMut(AgentEvent<'_>),
    ) -> Result<Vec<PhaseJob>, AgentError>;
    /// Removes what this run created (unless kept). Returns notes for the results.
    fn cleanup(&mut self) -> Vec<String>;
    /// Decisions made since the last call (O_DIRECT fallback, ...), for `notes`.
    fn take_notes(&mut self) -> Vec<String>;
    /// The workers of each job in `stage`, for merging.
    fn workers(&self, stage: Stage) -> Vec<u32>;
    /// Starts sampling the host's counters once a second (after validation, before load).
    fn start_sampling(&mut self);
    /// Stops sampling. Returns the samples (`t_ns` counted from the sampler's start) and the
    /// CPU time the sampler used.
    fn stop_sampling(&mut self) -> (Vec<HostSample>, Option<u64>);
}
