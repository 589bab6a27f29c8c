//! The interface every agent implements, in-process or remote.

use std::path::PathBuf;

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
    /// The run's id, the same on every host of a run (a shared metadata tree is named after
    /// it); made by the coordinator.
    pub run: String,
    /// S3 jobs: the keys to sign with and whether a missing bucket may be made. Never sent
    /// to a remote agent.
    pub s3: Option<S3Access>,
    /// A file target that does not exist yet is made (a fio job file's `filename=`, as fio
    /// makes it), laid out before the load, and removed at the end unless kept.
    pub create_file: bool,
    /// Net jobs: the token their servers ask for (`--token-file`; never in the results).
    pub net_token: Option<String>,
    /// Net jobs to the run's agents (`server = "agents"`): every host's address, in the
    /// run's order, and the token made for this run; set by the coordinator.
    pub net_peers: Option<NetPeers>,
}

/// The hosts of a run whose net jobs stream between its agents: each agent serves every
/// other on a port of its own, open from validation to cleanup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetPeers {
    /// Each host's address the streams go between, in the run's order (this host's too).
    pub ips: Vec<std::net::IpAddr>,
    /// Made for this run; a port serves only a session that gives it.
    pub token: String,
}

/// Where one host's streams to the run's agents go in a phase: the receiving host and its
/// port for this sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetPeer {
    /// The receiving host, an index into the run's hosts.
    pub host: u32,
    /// Its port for this sender.
    pub address: std::net::SocketAddr,
}

/// What an S3 run needs beside its jobs: kept out of the workload, so it never reaches a
/// results document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Access {
    /// The access key and secret (`Debug` hides the secret).
    pub credentials: stormark_s3::Credentials,
    /// `--create-bucket`: make the bucket when it does not exist.
    pub create_bucket: bool,
    /// `--insecure`: accept any certificate of an https endpoint.
    pub insecure: bool,
    /// This host's own endpoint, in place of the job's (`--host-endpoint`).
    pub endpoint: Option<String>,
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
            run: new_run_id(),
            s3: None,
            create_file: false,
            net_token: None,
            net_peers: None,
        }
    }
}

/// A run id: this moment and this process, unique enough among runs that meet in one
/// directory (`20261125-211502-4242`).
pub fn new_run_id() -> String {
    let t = stormark_stats::format_rfc3339(std::time::SystemTime::now());
    let digits: String = t.chars().filter(|c| c.is_ascii_digit()).collect();
    // 48 random bits, not the PID (which a PID namespace makes predictable): nobody can
    // plant a directory or objects under a name a run will use.
    format!(
        "{}-{}-{}",
        &digits[..8],
        &digits[8..14.min(digits.len())],
        &crate::auth::session_id()[..12]
    )
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

/// Why an agent cannot go on. The first five are refusals: the request cannot run as given,
/// found before any load (exit 2); the rest are failures while running (exit 1).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    /// An option's value cannot run here (`option` as the user gave it, with its value).
    #[error("{option}: {reason}")]
    Option {
        /// The option, such as `--engine io_uring`.
        option: String,
        /// Why, and what to do instead.
        reason: String,
    },
    /// A job of the workload cannot run here.
    #[error("job {job}: {reason}")]
    Job {
        /// The job's name.
        job: String,
        /// Why, and what to do instead.
        reason: String,
    },
    /// The target (or a path beneath it) may not or cannot be used as asked.
    #[error("{}: {reason}", path.display())]
    Target {
        /// The path as shown to the user.
        path: PathBuf,
        /// Why, and what to do instead.
        reason: String,
    },
    /// The run would pass a limit of this host (memory, open files, files per run).
    #[error("{0}")]
    Limit(String),
    /// A remote agent refused the request, in its words.
    #[error("agent {agent}: {message}")]
    RemoteRefused {
        /// The agent's address.
        agent: String,
        /// What it said.
        message: String,
    },
    /// A file or directory of the run could not be made, examined or recorded.
    #[error("cannot {action} {}: {cause}", path.display())]
    Io {
        /// What was being done (`create`, `reserve 1 GiB for`, ...).
        action: String,
        /// The path as shown to the user.
        path: PathBuf,
        /// The system's error.
        cause: String,
    },
    /// A worker's load failed.
    #[error("job {job} worker {worker}: {cause}")]
    Worker {
        /// The job's name.
        job: String,
        /// The worker within the job.
        worker: u32,
        /// The first failure, and how many more workers failed.
        cause: String,
    },
    /// Writing the working set before the measured phases failed.
    #[error("preparing the working set failed: {0}")]
    Preparation(String),
    /// Stopped (Ctrl-C, the coordinator's stop) during a step that cannot be cut short.
    #[error("interrupted while {0}")]
    Interrupted(&'static str),
    /// The coordinator's network runtime could not start.
    #[error("cannot start the network runtime: {0}")]
    Runtime(String),
    /// A remote agent failed, went silent, or broke the protocol.
    #[error("agent {agent}: {message}")]
    RemoteFailed {
        /// The agent's address.
        agent: String,
        /// What happened.
        message: String,
    },
}

impl AgentError {
    /// Whether the request cannot run as given (a user error, exit 2) rather than something
    /// having failed while running (exit 1).
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            AgentError::Option { .. }
                | AgentError::Job { .. }
                | AgentError::Target { .. }
                | AgentError::Limit(_)
                | AgentError::RemoteRefused { .. }
        )
    }

    /// A refusal about `path`.
    pub fn target(path: impl Into<PathBuf>, reason: impl Into<String>) -> AgentError {
        AgentError::Target {
            path: path.into(),
            reason: reason.into(),
        }
    }

    /// A refusal of an option's value (`option` with its value, as typed).
    pub fn option(option: impl Into<String>, reason: impl Into<String>) -> AgentError {
        AgentError::Option {
            option: option.into(),
            reason: reason.into(),
        }
    }

    /// A refusal of one job.
    pub fn job(job: impl Into<String>, reason: impl Into<String>) -> AgentError {
        AgentError::Job {
            job: job.into(),
            reason: reason.into(),
        }
    }

    /// A file operation that failed.
    pub fn io(
        action: impl Into<String>,
        path: impl Into<PathBuf>,
        cause: impl ToString,
    ) -> AgentError {
        AgentError::Io {
            action: action.into(),
            path: path.into(),
            cause: cause.to_string(),
        }
    }
}

impl From<stormark_probe::ProbeError> for AgentError {
    /// A target the probe could not examine or use: a refusal naming its path.
    fn from(e: stormark_probe::ProbeError) -> AgentError {
        use stormark_probe::ProbeError;
        let path = match &e {
            ProbeError::Missing { path, .. }
            | ProbeError::Unsupported { path }
            | ProbeError::Io { path, .. } => path.clone(),
        };
        let text = e.to_string();
        let reason = text
            .strip_prefix(&format!("{}: ", path.display()))
            .unwrap_or(&text)
            .to_string();
        AgentError::Target { path, reason }
    }
}

/// What validation found: how each stage will run, and what the user should know.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Validated {
    /// The target as it will appear in results.
    pub target: Option<Target>,
    /// A run of several targets on this host: each (`target` is the first).
    #[serde(default)]
    pub targets: Vec<Target>,
    /// Per stage, the jobs as they will run (engine chosen, O_DIRECT decided later if auto).
    pub stages: Vec<Vec<PhaseJob>>,
    /// Decisions the agent made on its own.
    pub notes: Vec<String>,
    /// Problems worth reporting that do not stop the run.
    pub findings: Vec<Finding>,
    /// With `TargetOptions::net_peers`: this host's port for each host of the run (0 for
    /// itself), serving only that host.
    #[serde(default)]
    pub net_ports: Vec<u16>,
}

/// One worker's second as an agent hands it over.
#[derive(Debug)]
pub enum Second {
    /// A snapshot, as the engine's worker made it (in-process).
    Whole(Box<Snapshot>),
    /// The records of the operations that did something, their histograms as the counts they
    /// hold, the failures and what `--verify` checked (a remote agent's, decoded from the
    /// wire).
    Parts(
        Vec<(stormark_stats::Op, stormark_stats::SparseRecord)>,
        Box<stormark_stats::ErrorTally>,
        stormark_stats::Verified,
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

/// Where a phase's events go, from any thread: owned by whoever reads the phase.
pub type Sink = Box<dyn FnMut(AgentEvent<'_>) + Send>;

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
    /// What measures the agent's clock again (before each phase): the fastest of up to five
    /// round trips, ended early by one of a given round trip or less, made by a task of its
    /// connection's runtime so that a fleet's are measured one after another by one task.
    /// `None` in-process, where the clock is the coordinator's own.
    fn clock_probe(&self) -> Option<crate::ClockProbe> {
        None
    }
    /// Keeps what its [`Agent::clock_probe`] measured (`None`: the measurement failed and the
    /// last one stands); the clock now known.
    fn keep_clock(&mut self, _measured: Option<Clock>) -> Option<Clock> {
        None
    }
    /// The host's inventory, for `hosts[].inventory`.
    fn inventory(&self) -> stormark_stats::Inventory;
    /// The run's hosts, for net jobs that stream between its agents (before `validate`); an
    /// agent that runs no net jobs has no use for them.
    fn set_net_peers(&mut self, _peers: NetPeers) {}
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
    /// load at `start_at` (the coordinator's clock; `None`: as soon as ready). Net jobs to the
    /// run's agents stream to `peers`, each with the job's streams. Returns the jobs as they
    /// ran.
    fn run_stage(
        &mut self,
        index: usize,
        load: &StageLoad,
        peers: &[NetPeer],
        start_at: Option<std::time::SystemTime>,
        on_event: &mut dyn FnMut(AgentEvent<'_>),
    ) -> Result<Vec<PhaseJob>, AgentError>;
    /// [`Agent::prepare`], its events handed to `sink` from wherever the agent reads them
    /// (a remote agent's from its connection's task, without waking the calling thread).
    fn prepare_into(&mut self, mut sink: Sink) -> Result<Vec<PhaseJob>, AgentError> {
        self.prepare(&mut *sink)
    }
    /// [`Agent::run_stage`], its events handed to `sink` as [`Agent::prepare_into`]'s are.
    fn run_stage_into(
        &mut self,
        index: usize,
        load: &StageLoad,
        peers: &[NetPeer],
        start_at: Option<std::time::SystemTime>,
        mut sink: Sink,
    ) -> Result<Vec<PhaseJob>, AgentError> {
        self.run_stage(index, load, peers, start_at, &mut *sink)
    }
    /// Removes what this run created (unless kept). Returns notes for the results.
    fn cleanup(&mut self) -> Vec<String>;
    /// The part of [`Agent::cleanup`] whose notes the results need even when the rest goes
    /// on after the run (an agent's removal of large files): the objects of an S3 run,
    /// bounded per request, handed to the agent's sweep when the service stalls. Done by
    /// `cleanup` when not called first.
    fn cleanup_objects(&mut self) -> Vec<String> {
        Vec::new()
    }
    /// Decisions made since the last call (O_DIRECT fallback, ...), for `notes`.
    fn take_notes(&mut self) -> Vec<String>;
    /// The reports of the net jobs' sessions since the last call (each stream as its ends
    /// saw it), in the order they ran.
    fn take_net(&mut self) -> Vec<stormark_stats::NetReport> {
        Vec::new()
    }
    /// The workers of each job in `stage`, for merging.
    fn workers(&self, stage: Stage) -> Vec<u32>;
    /// Starts sampling the host's counters once a second (after validation, before load); an
    /// agent whose sampler started with its validation does nothing.
    fn start_sampling(&mut self);
    /// When the host sampler started, on the coordinator's clock, where the agent started it
    /// on its own (with its validation); `None`: when [`Agent::start_sampling`] was called.
    fn sampling_since(&self) -> Option<std::time::SystemTime> {
        None
    }
    /// Stops sampling. Returns the samples (`t_ns` counted from the sampler's start) and the
    /// CPU time the sampler used.
    fn stop_sampling(&mut self) -> (Vec<HostSample>, Option<u64>);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_and_failures_name_what_they_are_about() {
        let e = AgentError::option("--engine io_uring", "not available here");
        assert!(e.is_refusal());
        assert_eq!(e.to_string(), "--engine io_uring: not available here");
        let e = AgentError::target("/mnt/x", "not writable");
        assert!(e.is_refusal());
        assert_eq!(e.to_string(), "/mnt/x: not writable");
        let e = AgentError::io("create", "/mnt/x/f", "No space left on device");
        assert!(!e.is_refusal());
        assert_eq!(
            e.to_string(),
            "cannot create /mnt/x/f: No space left on device"
        );
        assert!(!AgentError::Interrupted("creating files").is_refusal());
        let missing = stormark_probe::classify(std::path::Path::new("/nonexistent/stormark"))
            .map(|_| ())
            .unwrap_err();
        match AgentError::from(missing) {
            AgentError::Target { path, reason } => {
                assert_eq!(path, PathBuf::from("/nonexistent/stormark"));
                assert!(!reason.starts_with('/'), "{reason}");
            }
            other => panic!("{other:?}"),
        }
    }
}
