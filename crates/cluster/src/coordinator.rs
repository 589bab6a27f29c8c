//! The coordinator: drives agents through the phases, all at once, and merges what they
//! measure.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use stormark_spec::Workload;
use stormark_stats::{
    Counts, Host, HostFailure, Interval, Op, Phase, PhaseAccumulator, PhaseJob, PhaseKind, Results,
    RunStatus, WorkerKey,
};

use crate::agent::{Agent, AgentError, AgentEvent};
use crate::agent::{Second, Stage};
use stormark_plan::{stage_steps, Step};

/// What the live display is told.
#[derive(Debug)]
pub enum Live<'a> {
    /// A phase begins.
    PhaseStarted {
        /// Its name.
        name: &'a str,
    },
    /// A second of the current phase closed on every agent.
    Second {
        /// The phase.
        phase: &'a str,
        /// The merged second.
        interval: &'a Interval,
        /// With several hosts: each host's counts in that second, by operation.
        hosts: &'a [(&'a str, &'a BTreeMap<Op, Counts>)],
    },
    /// A phase ended.
    PhaseDone {
        /// The phase as it goes into the results.
        phase: &'a Phase,
    },
    /// A host dropped out of the run.
    HostFailed {
        /// Its name.
        host: &'a str,
        /// Why.
        message: &'a str,
    },
}

/// How a run ended, for the exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every phase ran (I/O errors may still have been counted; see the results).
    Completed,
    /// Refused before any load: a user error (exit 2).
    Refused(String),
    /// Broke while running, or an agent failed (exit 1).
    Failed(String),
    /// Stopped by the user (exit 1); the results hold what was measured.
    Interrupted,
}

/// What to do when an agent fails, hangs or is cut off during a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnAgentFailure {
    /// Stop every agent and end the run (the default).
    #[default]
    Abort,
    /// Mark the agent failed and go on with the others.
    Continue,
}

impl std::str::FromStr for OnAgentFailure {
    type Err = AgentError;

    /// `--on-agent-failure`: abort or continue.
    fn from_str(s: &str) -> Result<Self, AgentError> {
        match s {
            "abort" => Ok(OnAgentFailure::Abort),
            "continue" => Ok(OnAgentFailure::Continue),
            other => Err(AgentError::option(
                format!("--on-agent-failure {other}"),
                "expected abort or continue",
            )),
        }
    }
}

/// A lead given to agents of a distributed stage, so that every one is ready when the named
/// start comes.
const START_LEAD: Duration = Duration::from_millis(1000);

/// Drives agents through validate, prepare, each stage, and cleanup.
pub struct Coordinator {
    agents: Vec<Box<dyn Agent>>,
    names: Vec<String>,
    alive: Vec<bool>,
    failures: Vec<Option<HostFailure>>,
    /// Each agent's clock as last measured (remote agents; before each phase).
    clocks: Vec<Option<crate::agent::Clock>>,
    stop: Arc<AtomicBool>,
    on_failure: OnAgentFailure,
    aborted: Option<String>,
}

/// An agent's event, owned, on its way from the agent's thread to the coordinator's.
enum Msg {
    Started(usize, SystemTime),
    Interval(usize, u16, u32, u32, Second),
    Done(usize, u16, u32, u64),
    Finished(usize, Result<Vec<PhaseJob>, AgentError>),
}

type PhaseCall<'c> = dyn Fn(
        &mut dyn Agent,
        Option<SystemTime>,
        &mut dyn FnMut(AgentEvent<'_>),
    ) -> Result<Vec<PhaseJob>, AgentError>
    + Sync
    + 'c;

impl Coordinator {
    /// A coordinator of `agents`; setting `stop` ends the run early.
    pub fn new(agents: Vec<Box<dyn Agent>>, stop: Arc<AtomicBool>) -> Coordinator {
        let names = host_names(&agents);
        let n = agents.len();
        Coordinator {
            agents,
            names,
            alive: vec![true; n],
            failures: vec![None; n],
            clocks: vec![None; n],
            stop,
            on_failure: OnAgentFailure::default(),
            aborted: None,
        }
    }

    /// What to do when an agent fails mid-run.
    pub fn on_agent_failure(mut self, policy: OnAgentFailure) -> Coordinator {
        self.on_failure = policy;
        self
    }

    /// Runs `workload`, filling `results` as it goes, so that whatever happens the document
    /// holds everything measured until then. Cleanup always runs.
    pub fn run(
        &mut self,
        workload: &Workload,
        results: &mut Results,
        live: &mut dyn FnMut(Live<'_>),
    ) -> Outcome {
        let mut steps = stage_steps(workload).into_iter();
        self.run_steps(workload, results, live, &mut |_| steps.next())
    }

    /// Runs `workload` one step at a time: after validation and preparation, `next` is asked
    /// for each phase, with the results so far (a search decides its next load from the last
    /// phase), until it says `None`. Everything else is as [`Coordinator::run`].
    pub fn run_steps(
        &mut self,
        workload: &Workload,
        results: &mut Results,
        live: &mut dyn FnMut(Live<'_>),
        next: &mut dyn FnMut(&Results) -> Option<Step>,
    ) -> Outcome {
        let start = Instant::now();
        let start_wall = SystemTime::now();
        // Every `*_ns` offset of the document counts from this instant: `started_at` says it.
        results.started_at = stormark_stats::format_rfc3339(start_wall);
        results.hosts = self
            .agents
            .iter()
            .zip(&self.names)
            .map(|(a, name)| Host {
                name: name.clone(),
                target: None,
                inventory: a.inventory(),
                samples: Vec::new(),
                sampler_cpu_ns: None,
                address: a.address(),
                failure: None,
                clock_offset_ns: None,
                clock_rtt_ns: None,
            })
            .collect();
        results.spec = serde_json::json!({
            "prepare": workload.prepare,
            "jobs": workload.jobs.iter().map(|j| j.to_pairs().into_iter().map(|(k, v)| (k.to_string(), serde_json::Value::String(v))).collect::<serde_json::Map<_, _>>()).collect::<Vec<_>>(),
        });
        let mut stages = Vec::new();
        let several = self.agents.len() > 1;
        for (i, agent) in self.agents.iter_mut().enumerate() {
            match agent.validate(workload) {
                Ok(v) => {
                    if several {
                        results.hosts[i].target = v.target.clone();
                    }
                    results.target = results.target.take().or(v.target);
                    results.notes.extend(v.notes);
                    results.findings.extend(v.findings);
                    if i == 0 {
                        stages = v.stages;
                    }
                }
                Err(e) => {
                    let msg = if self.agents_len() > 1 {
                        format!("{}: {e}", self.names[i])
                    } else {
                        e.to_string()
                    };
                    // Agents validated so far end their sessions; nothing was written.
                    for agent in &mut self.agents {
                        let _ = agent.cleanup();
                    }
                    return self.end(results, start, Outcome::Refused(msg));
                }
            }
        }
        // The samplers run from here to the end, beside every phase.
        let sampling_from = start.elapsed().as_nanos() as u64;
        for agent in &mut self.agents {
            agent.start_sampling();
        }
        let outcome = self.run_phases(&stages, results, start, start_wall, live, next);
        for (agent, host) in self.agents.iter_mut().zip(results.hosts.iter_mut()) {
            let (mut samples, cpu_ns) = agent.stop_sampling();
            for s in &mut samples {
                s.t_ns += sampling_from;
            }
            host.samples = samples;
            host.sampler_cpu_ns = cpu_ns;
        }
        for agent in &mut self.agents {
            results.notes.extend(agent.cleanup());
        }
        for ((host, failure), clock) in results
            .hosts
            .iter_mut()
            .zip(&self.failures)
            .zip(&self.clocks)
        {
            host.failure = failure.clone();
            host.clock_offset_ns = clock.map(|c| c.offset_ns);
            host.clock_rtt_ns = clock.map(|c| c.rtt_ns);
        }
        let outcome = match outcome {
            Outcome::Completed => match self.failures.iter().flatten().next() {
                Some(f) => Outcome::Failed(format!("an agent failed: {}", f.message)),
                None => Outcome::Completed,
            },
            other => other,
        };
        let outcome = self.end(results, start, outcome);
        // Diagnosis reads the finished document: phases, samples, inventories.
        let found = stormark_probe::diagnose(results);
        results.findings.extend(found);
        outcome
    }

    fn agents_len(&self) -> usize {
        self.agents.len()
    }

    /// Several agents, or a remote one: hosts are named in messages and failures recorded.
    fn is_distributed(&self) -> bool {
        self.agents.len() > 1 || self.agents.iter().any(|a| a.address().is_some())
    }

    fn run_phases(
        &mut self,
        stages: &[Vec<PhaseJob>],
        results: &mut Results,
        start: Instant,
        start_wall: SystemTime,
        live: &mut dyn FnMut(Live<'_>),
        next: &mut dyn FnMut(&Results) -> Option<Step>,
    ) -> Outcome {
        // Preparation: its own phase, excluded from the run's figures. No common start.
        let prepare: &PhaseCall<'_> = &|agent, _, sink| agent.prepare(sink);
        let (result, phase) = self.phase(
            "prepare",
            Stage::Prepare,
            (None, None, &[]),
            start,
            start_wall,
            live,
            prepare,
        );
        self.collect_notes(results);
        if let Some(mut p) = phase {
            p.kind = Some(PhaseKind::Prepare);
            results.phases.push(p);
        }
        if let Some(o) = self.outcome_of(result) {
            return o;
        }
        while let Some(step) = next(results) {
            let Step {
                name,
                kind,
                stage,
                load,
                hosts,
            } = step;
            live(Live::PhaseStarted { name: &name });
            let call: &PhaseCall<'_> = &|agent, at, sink| agent.run_stage(stage, &load, at, sink);
            let (result, phase) = self.phase(
                &name,
                Stage::Run(stage),
                (
                    load.jobs,
                    hosts,
                    stages.get(stage).map_or(&[][..], Vec::as_slice),
                ),
                start,
                start_wall,
                live,
                call,
            );
            if let Some(mut p) = phase {
                p.kind = Some(kind);
                if p.jobs.is_empty() {
                    p.jobs = stages.get(stage).cloned().unwrap_or_default();
                }
                live(Live::PhaseDone { phase: &p });
                results.phases.push(p);
            }
            self.collect_notes(results);
            if let Some(o) = self.outcome_of(result) {
                return o;
            }
        }
        Outcome::Completed
    }

    /// Runs one phase on every live agent at once, each on a thread of its own, and merges
    /// what they send as it arrives. The phase is `None` when no agent ran anything (a
    /// preparation with nothing to write).
    #[allow(clippy::too_many_arguments)]
    fn phase(
        &mut self,
        name: &str,
        stage: Stage,
        (jobs_cap, hosts_cap, known_jobs): (Option<u32>, Option<usize>, &[PhaseJob]),
        start: Instant,
        start_wall: SystemTime,
        live: &mut dyn FnMut(Live<'_>),
        call: &PhaseCall<'_>,
    ) -> (Result<(), AgentError>, Option<Phase>) {
        // The agents that run this phase: alive, and among the first `hosts_cap`.
        let alive: Vec<bool> = self
            .alive
            .iter()
            .enumerate()
            .map(|(h, a)| *a && hosts_cap.is_none_or(|n| h < n))
            .collect();
        let mut keys = Vec::new();
        for (h, agent) in self.agents.iter().enumerate() {
            if !alive[h] {
                continue;
            }
            for (j, n) in agent.workers(stage).iter().enumerate() {
                let n = jobs_cap.map_or(*n, |c| c.min(*n));
                keys.extend((0..n).map(|w| WorkerKey {
                    host: h as u16,
                    job: j as u16,
                    worker: w,
                }));
            }
        }
        let mut acc = PhaseAccumulator::new(name, self.names.clone(), Vec::new(), &keys);
        let running = alive.iter().filter(|a| **a).count();
        // Clocks re-measured before each stage, so that the named start means the same
        // instant on every host, and how well that is known goes on record.
        if stage != Stage::Prepare {
            for (h, agent) in self.agents.iter_mut().enumerate() {
                if alive[h] {
                    if let Some(c) = agent.measure_clock() {
                        self.clocks[h] = Some(c);
                    }
                }
            }
        }
        let uncertainty = (0..self.agents.len())
            .filter(|h| alive[*h])
            .filter_map(|h| self.clocks[h].map(|c| c.rtt_ns / 2))
            .max();
        // Hosts of a distributed stage start together, at a time named now.
        let start_at =
            (stage != Stage::Prepare && running > 1).then(|| SystemTime::now() + START_LEAD);
        let mut host_starts: Vec<Option<SystemTime>> = vec![None; self.agents.len()];
        let mut last_interval: Vec<Option<u32>> = vec![None; self.agents.len()];
        let mut jobs: Option<Vec<PhaseJob>> = None;
        let mut result = Ok(());
        let (tx, rx) = channel::<Msg>();
        let distributed = self.is_distributed();
        let mut newly_failed: Vec<(usize, String, u64)> = Vec::new();
        std::thread::scope(|scope| {
            for (h, agent) in self.agents.iter_mut().enumerate() {
                if !alive[h] {
                    continue;
                }
                let tx: Sender<Msg> = tx.clone();
                std::thread::Builder::new()
                    .name(format!("stormark-agent{h}"))
                    .spawn_scoped(scope, move || {
                        let mut sink = |e: AgentEvent<'_>| {
                            let msg = match e {
                                AgentEvent::Started { at } => Msg::Started(h, at),
                                AgentEvent::Interval {
                                    job,
                                    worker,
                                    interval,
                                    second,
                                } => Msg::Interval(h, job, worker, interval, second),
                                AgentEvent::Done {
                                    job,
                                    worker,
                                    end_ns,
                                    ..
                                } => Msg::Done(h, job, worker, end_ns),
                                AgentEvent::Tick => return,
                            };
                            let _ = tx.send(msg);
                        };
                        let r = call(agent.as_mut(), start_at, &mut sink);
                        let _ = tx.send(Msg::Finished(h, r));
                    })
                    .expect("spawning an agent thread");
            }
            drop(tx);
            let mut finished = 0;
            while finished < running {
                let msg = match rx.recv_timeout(Duration::from_millis(250)) {
                    Ok(m) => m,
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => break,
                };
                match msg {
                    Msg::Started(h, at) => host_starts[h] = Some(at),
                    Msg::Interval(h, job, worker, interval, snap) => {
                        let key = WorkerKey {
                            host: h as u16,
                            job,
                            worker,
                        };
                        match snap {
                            Second::Whole(snap) => acc.add(key, interval, &snap),
                            Second::Parts(ops, errors) => {
                                acc.add_parts(key, interval, &ops, &errors)
                            }
                        }
                        last_interval[h] =
                            Some(last_interval[h].map_or(interval, |l| l.max(interval)));
                        let closed = acc.close_ready().to_vec();
                        for interval in &closed {
                            live(Live::Second {
                                phase: name,
                                interval,
                                hosts: &acc.host_second(interval.t_s),
                            });
                        }
                    }
                    Msg::Done(h, job, worker, end_ns) => acc.worker_done(
                        WorkerKey {
                            host: h as u16,
                            job,
                            worker,
                        },
                        end_ns,
                    ),
                    Msg::Finished(h, r) => {
                        finished += 1;
                        match r {
                            Ok(j) => {
                                jobs.get_or_insert(j);
                            }
                            Err(e) if e.is_refusal() => {
                                self.stop.store(true, Ordering::Relaxed);
                                result = Err(e);
                            }
                            Err(e) if self.stop.load(Ordering::Relaxed) => {
                                // Stopping anyway (Ctrl-C, or another agent failed).
                                if result.is_ok() && self.aborted.is_none() {
                                    result = Err(e);
                                }
                            }
                            Err(e) => {
                                let m = e.to_string();
                                acc.host_failed(h as u16);
                                newly_failed.push((
                                    h,
                                    m.clone(),
                                    start.elapsed().as_nanos() as u64,
                                ));
                                if distributed {
                                    live(Live::HostFailed {
                                        host: &self.names[h],
                                        message: &m,
                                    });
                                }
                                // A host that cannot make its working set stops the run
                                // whatever the policy: nothing is measured on a half-made set.
                                if self.on_failure == OnAgentFailure::Abort
                                    || running == 1
                                    || stage == Stage::Prepare
                                {
                                    self.stop.store(true, Ordering::Relaxed);
                                    let msg = if distributed {
                                        format!("{}: {m}", self.names[h])
                                    } else {
                                        m
                                    };
                                    self.aborted = Some(msg);
                                    result = Err(e);
                                }
                            }
                        }
                    }
                }
            }
        });
        for (h, m, at_ns) in newly_failed {
            self.alive[h] = false;
            if distributed {
                self.failures[h] = Some(HostFailure {
                    message: m,
                    phase: name.to_string(),
                    at_ns,
                    last_interval: last_interval[h],
                });
            }
        }
        let since = |t: SystemTime| {
            t.duration_since(start_wall)
                .map_or(0, |d| d.as_nanos() as u64)
        };
        let measured_start = host_starts.iter().flatten().min().copied();
        let phase = measured_start.map(|first| {
            // The jobs as an agent ran them; as validated when none finished (every host
            // failed), so that errors still name their job.
            acc.set_jobs(jobs.unwrap_or_else(|| known_jobs.to_vec()));
            let duration = acc.end_ns();
            let mut p = acc.finish(since(first), duration);
            p.host_starts_ns = host_starts
                .iter()
                .enumerate()
                .filter_map(|(h, t)| t.map(|t| (self.names[h].clone(), since(t))))
                .collect();
            p.start_uncertainty_ns = uncertainty.filter(|_| p.host_starts_ns.len() > 1);
            p
        });
        (result, phase)
    }

    fn collect_notes(&mut self, results: &mut Results) {
        let mut taken = false;
        for agent in &mut self.agents {
            results.notes.extend(agent.take_notes());
            // The run's network report: of the last phase with net jobs, the first host's.
            if let Some(r) = agent.take_net().into_iter().next() {
                if !taken {
                    results.net = Some(r);
                    taken = true;
                }
            }
        }
    }

    /// `None` to go on; otherwise how the run ends.
    fn outcome_of(&self, result: Result<(), AgentError>) -> Option<Outcome> {
        if let Some(m) = &self.aborted {
            return Some(Outcome::Failed(m.clone()));
        }
        match result {
            Err(e) if e.is_refusal() => Some(Outcome::Refused(e.to_string())),
            _ if self.stop.load(Ordering::Relaxed) => Some(Outcome::Interrupted),
            Err(e) => Some(Outcome::Failed(e.to_string())),
            Ok(()) if !self.alive.iter().any(|a| *a) => {
                Some(Outcome::Failed("every agent failed".into()))
            }
            Ok(()) => None,
        }
    }

    fn end(&mut self, results: &mut Results, start: Instant, outcome: Outcome) -> Outcome {
        results.duration_ns = start.elapsed().as_nanos() as u64;
        match &outcome {
            Outcome::Completed if results.total_errors() > 0 => {
                results.status = RunStatus::Failed;
                results.failure = Some(format!("{} I/O errors", results.total_errors()));
            }
            Outcome::Completed => results.status = RunStatus::Ok,
            Outcome::Refused(m) | Outcome::Failed(m) => {
                results.status = RunStatus::Failed;
                results.failure = Some(m.clone());
            }
            Outcome::Interrupted => {
                results.status = RunStatus::Interrupted;
                results.failure = Some("interrupted".into());
            }
        }
        outcome
    }
}

/// Host names for results: each agent's host name, or `name@address` where two agents share
/// a name (containers and network namespaces often do).
fn host_names(agents: &[Box<dyn Agent>]) -> Vec<String> {
    let plain: Vec<String> = agents.iter().map(|a| a.host().to_string()).collect();
    plain
        .iter()
        .zip(agents)
        .enumerate()
        .map(|(i, (name, agent))| {
            let shared = plain.iter().filter(|n| *n == name).count() > 1;
            match (shared, agent.address()) {
                (true, Some(addr)) => format!("{name}@{addr}"),
                (true, None) => format!("{name}#{i}"),
                _ => name.clone(),
            }
        })
        .collect()
}
