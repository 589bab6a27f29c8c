//! The coordinator in-process, driving scripted fake agents: exact merging across hosts, the
//! abort and continue policies, hosts failing in validation, preparation or mid-stage, and
//! cleanup that always runs. No I/O, no network: what is tested is the driver alone.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use stormark_cluster::{
    Agent, AgentError, AgentEvent, Coordinator, OnAgentFailure, Outcome, Second, Stage, Validated,
};
use stormark_spec::{JobOpts, StageLoad, Workload};
use stormark_stats::{Op, PhaseJob, Recorder, Results, RunStatus};

/// Where a scripted agent fails, if anywhere.
#[derive(Clone, Copy, PartialEq)]
enum FailAt {
    Nowhere,
    Validate,
    Prepare,
    /// After this many seconds of the stage.
    Stage(u32),
}

/// An agent that reports `seconds` seconds of `ops_per_second` reads of `latency_ns` each.
struct Scripted {
    name: String,
    /// How long the host takes before its load starts (a slow or late host).
    late: std::time::Duration,
    seconds: u32,
    ops_per_second: u64,
    latency_ns: u64,
    fail: FailAt,
    cleaned: Arc<AtomicUsize>,
    /// Set during the cleanup: a Ctrl-C while the run's objects are being removed.
    stop_in_cleanup: Option<Arc<AtomicBool>>,
}

impl Scripted {
    fn new(name: &str, ops_per_second: u64, latency_ns: u64, fail: FailAt) -> Scripted {
        Scripted {
            name: name.into(),
            late: std::time::Duration::ZERO,
            seconds: 3,
            ops_per_second,
            latency_ns,
            fail,
            cleaned: Arc::new(AtomicUsize::new(0)),
            stop_in_cleanup: None,
        }
    }
}

fn job() -> PhaseJob {
    PhaseJob {
        name: "job".into(),
        engine: "null".into(),
        direct: false,
        workers: 1,
        iodepth: 1,
        iodepth_batch: 1,
        rate_iops: None,
        target: None,
        working_set_bytes: 0,
    }
}

impl Agent for Scripted {
    fn host(&self) -> &str {
        &self.name
    }

    fn inventory(&self) -> stormark_stats::Inventory {
        stormark_stats::Inventory {
            hostname: self.name.clone(),
            ..Default::default()
        }
    }

    fn validate(&mut self, _: &Workload) -> Result<Validated, AgentError> {
        if self.fail == FailAt::Validate {
            return Err(AgentError::target(&self.name, "no such target"));
        }
        Ok(Validated {
            stages: vec![vec![job()]],
            ..Validated::default()
        })
    }

    fn prepare(&mut self, _: &mut dyn FnMut(AgentEvent<'_>)) -> Result<Vec<PhaseJob>, AgentError> {
        if self.fail == FailAt::Prepare {
            return Err(AgentError::io(
                "reserve 1 GiB for",
                &self.name,
                "no space left",
            ));
        }
        Ok(Vec::new())
    }

    fn run_stage(
        &mut self,
        _: usize,
        _: &StageLoad,
        _: &[stormark_cluster::NetPeer],
        _: Option<SystemTime>,
        on_event: &mut dyn FnMut(AgentEvent<'_>),
    ) -> Result<Vec<PhaseJob>, AgentError> {
        std::thread::sleep(self.late);
        on_event(AgentEvent::Started {
            at: SystemTime::now(),
        });
        for second in 0..self.seconds {
            if self.fail == FailAt::Stage(second) {
                return Err(AgentError::Worker {
                    job: self.name.clone(),
                    worker: 0,
                    cause: "device gone".into(),
                });
            }
            let mut r = Recorder::new();
            for _ in 0..self.ops_per_second {
                r.record(Op::Read, 4096, self.latency_ns);
            }
            on_event(AgentEvent::Interval {
                job: 0,
                worker: 0,
                interval: second,
                second: Second::Whole(Box::new(r.take())),
            });
        }
        on_event(AgentEvent::Done {
            job: 0,
            worker: 0,
            end_ns: u64::from(self.seconds) * 1_000_000_000,
            failure: None,
        });
        Ok(vec![job()])
    }

    fn cleanup(&mut self) -> Vec<String> {
        self.cleaned.fetch_add(1, Ordering::Relaxed);
        if let Some(stop) = &self.stop_in_cleanup {
            stop.store(true, Ordering::Relaxed);
        }
        Vec::new()
    }

    fn take_notes(&mut self) -> Vec<String> {
        Vec::new()
    }

    fn workers(&self, stage: Stage) -> Vec<u32> {
        match stage {
            Stage::Prepare => Vec::new(),
            Stage::Run(_) => vec![1],
        }
    }

    fn start_sampling(&mut self) {}

    fn stop_sampling(&mut self) -> (Vec<stormark_stats::HostSample>, Option<u64>) {
        (Vec::new(), None)
    }
}

fn workload() -> Workload {
    Workload::new(vec![JobOpts::default().resolve("job").unwrap()], false).unwrap()
}

fn run(agents: Vec<Scripted>, policy: OnAgentFailure) -> (Outcome, Results, Vec<usize>) {
    let cleaned: Vec<_> = agents.iter().map(|a| a.cleaned.clone()).collect();
    let boxed: Vec<Box<dyn Agent>> = agents
        .into_iter()
        .map(|a| Box::new(a) as Box<dyn Agent>)
        .collect();
    let mut c = Coordinator::new(boxed, Arc::new(AtomicBool::new(false))).on_agent_failure(policy);
    let mut results = Results::new(vec!["test".into()]);
    let outcome = c.run(&workload(), &mut results, &mut |_| {});
    let cleaned = cleaned.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    (outcome, results, cleaned)
}

fn run_phase(r: &Results) -> &stormark_stats::Phase {
    r.phases
        .iter()
        .find(|p| p.name == "run")
        .expect("a run phase")
}

#[test]
fn hosts_merge_exactly() {
    let (outcome, r, cleaned) = run(
        vec![
            Scripted::new("node2", 1000, 100_000, FailAt::Nowhere),
            Scripted::new("node10", 3000, 300_000, FailAt::Nowhere),
        ],
        OnAgentFailure::Abort,
    );
    assert_eq!(outcome, Outcome::Completed);
    assert_eq!(r.status, RunStatus::Ok);
    let p = run_phase(&r);
    assert_eq!(p.total.ops, 3 * 4000);
    assert_eq!(p.by_host["node2"].total.ops, 3000);
    assert_eq!(p.by_host["node10"].total.ops, 9000);
    // Exact merge: a quarter of the I/Os at 100 µs, three quarters at 300 µs.
    let lat = p.total.latency_ns.as_ref().unwrap();
    assert!((lat.p50 as f64 - 300_000.0).abs() < 1000.0, "{lat:?}");
    assert!((lat.mean - 250_000.0).abs() < 1000.0, "{lat:?}");
    assert_eq!(p.intervals.len(), 3);
    assert_eq!(cleaned, vec![1, 1]);
}

#[test]
fn a_host_refusing_in_validation_stops_before_load_and_everyone_cleans_up() {
    let (outcome, r, cleaned) = run(
        vec![
            Scripted::new("a", 1000, 1000, FailAt::Nowhere),
            Scripted::new("b", 1000, 1000, FailAt::Validate),
        ],
        OnAgentFailure::Continue { max_failed: None },
    );
    assert!(
        matches!(outcome, Outcome::Refused(ref m) if m.contains("no such target")),
        "{outcome:?}"
    );
    assert!(r.phases.iter().all(|p| p.name != "run"));
    assert_eq!(cleaned, vec![1, 1]);
}

#[test]
fn a_host_failing_in_preparation_stops_the_run_naming_it() {
    let (outcome, r, cleaned) = run(
        vec![
            Scripted::new("a", 1000, 1000, FailAt::Nowhere),
            Scripted::new("b", 1000, 1000, FailAt::Prepare),
        ],
        OnAgentFailure::Continue { max_failed: None },
    );
    assert!(
        matches!(outcome, Outcome::Failed(ref m) if m.contains("no space left")),
        "{outcome:?}"
    );
    assert_eq!(r.status, RunStatus::Failed);
    assert!(
        r.phases.iter().all(|p| p.name != "run"),
        "nothing measured on a half-made set"
    );
    assert_eq!(cleaned, vec![1, 1]);
}

#[test]
fn a_host_failing_mid_stage_aborts_or_is_left_behind() {
    // Abort: the run fails, naming the host.
    let (outcome, r, cleaned) = run(
        vec![
            Scripted::new("a", 1000, 1000, FailAt::Nowhere),
            Scripted::new("b", 1000, 1000, FailAt::Stage(1)),
        ],
        OnAgentFailure::Abort,
    );
    assert!(
        matches!(outcome, Outcome::Failed(ref m) if m.contains("device gone")),
        "{outcome:?}"
    );
    assert_eq!(r.status, RunStatus::Failed);
    assert_eq!(cleaned, vec![1, 1]);
    // Continue: the other host's figures are whole, the failed one is marked.
    let (outcome, r, _) = run(
        vec![
            Scripted::new("a", 1000, 1000, FailAt::Nowhere),
            Scripted::new("b", 1000, 1000, FailAt::Stage(1)),
        ],
        OnAgentFailure::Continue { max_failed: None },
    );
    assert_ne!(
        outcome,
        Outcome::Completed,
        "a lost host is never a clean run"
    );
    let p = run_phase(&r);
    assert_eq!(p.by_host["a"].total.ops, 3000);
    assert_eq!(
        p.by_host["b"].total.ops, 1000,
        "what b reported before failing"
    );
    let b = r.hosts.iter().find(|h| h.name == "b").unwrap();
    assert!(b.failure.as_ref().unwrap().message.contains("device gone"));
}

/// Issue 33: `--max-failed-agents N` with continue: a fleet goes on without up to N hosts,
/// and aborts, saying so, once more have failed.
#[test]
fn more_failed_hosts_than_allowed_abort_the_run() {
    let fleet = || {
        vec![
            Scripted::new("a", 1000, 1000, FailAt::Nowhere),
            Scripted::new("b", 1000, 1000, FailAt::Stage(1)),
            Scripted::new("c", 1000, 1000, FailAt::Stage(1)),
        ]
    };
    // Two may fail: the run goes on with a, both failures on record.
    let (outcome, r, _) = run(
        fleet(),
        OnAgentFailure::Continue {
            max_failed: Some(2),
        },
    );
    assert!(
        !matches!(outcome, Outcome::Failed(ref m) if m.contains("--max-failed-agents")),
        "{outcome:?}"
    );
    assert_eq!(run_phase(&r).by_host["a"].total.ops, 3000);
    assert_eq!(r.hosts.iter().filter(|h| h.failure.is_some()).count(), 2);
    // One may fail: the second failure aborts the run, naming the limit.
    let (outcome, r, cleaned) = run(
        fleet(),
        OnAgentFailure::Continue {
            max_failed: Some(1),
        },
    );
    assert!(
        matches!(outcome, Outcome::Failed(ref m)
            if m.contains("2 agents failed, more than --max-failed-agents 1") && m.contains("device gone")),
        "{outcome:?}"
    );
    assert_eq!(r.status, RunStatus::Failed);
    assert_eq!(cleaned, vec![1, 1, 1]);
}

#[test]
fn a_late_host_is_merged_whole_and_its_start_recorded() {
    let mut late = Scripted::new("late", 1000, 1000, FailAt::Nowhere);
    late.late = std::time::Duration::from_millis(600);
    let (outcome, r, _) = run(
        vec![Scripted::new("early", 1000, 1000, FailAt::Nowhere), late],
        OnAgentFailure::Abort,
    );
    assert_eq!(outcome, Outcome::Completed);
    let p = run_phase(&r);
    assert_eq!(p.by_host["early"].total.ops, 3000);
    assert_eq!(
        p.by_host["late"].total.ops, 3000,
        "every second of the late host counts"
    );
    let starts = &p.host_starts_ns;
    assert!(
        starts["late"] >= starts["early"] + 300_000_000,
        "the late start is on record: {starts:?}"
    );
}

/// Issue 54: Ctrl-C pressed during the cleanup (twice, to leave a stalled object store's
/// objects) after a load that ran its time ended `status: ok`, exit 0: the run is interrupted.
#[test]
fn a_ctrl_c_during_the_cleanup_ends_the_run_interrupted() {
    let stop = Arc::new(AtomicBool::new(false));
    let mut a = Scripted::new("a", 100, 1000, FailAt::Nowhere);
    a.stop_in_cleanup = Some(stop.clone());
    let mut c = Coordinator::new(vec![Box::new(a) as Box<dyn Agent>], stop);
    let mut results = Results::new(vec!["test".into()]);
    let outcome = c.run(&workload(), &mut results, &mut |_| {});
    assert_eq!(outcome, Outcome::Interrupted);
    assert_eq!(results.status, RunStatus::Interrupted);
    assert_eq!(results.failure.as_deref(), Some("interrupted"));
}
