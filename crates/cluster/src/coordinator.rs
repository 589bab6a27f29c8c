//! The coordinator: drives agents through the phases and merges what they measure.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use stormark_spec::Workload;
use stormark_stats::{Host, Interval, Phase, PhaseAccumulator, Results, RunStatus, WorkerKey};

use crate::agent::{Agent, AgentError, AgentEvent};
use crate::local::PREPARE;

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
    },
    /// A phase ended.
    PhaseDone {
        /// The phase as it goes into the results.
        phase: &'a Phase,
    },
}

/// How a run ended, for the exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every phase ran (I/O errors may still have been counted; see the results).
    Completed,
    /// Refused before any load: a user error (exit 2).
    Refused(String),
    /// Broke while running (exit 1).
    Failed(String),
    /// Stopped by the user (exit 1); the results hold what was measured.
    Interrupted,
}

/// Drives agents through validate, prepare, each stage, and cleanup.
pub struct Coordinator {
    agents: Vec<Box<dyn Agent>>,
    stop: Arc<AtomicBool>,
}

impl Coordinator {
    /// A coordinator of `agents`; setting `stop` ends the run early.
    pub fn new(agents: Vec<Box<dyn Agent>>, stop: Arc<AtomicBool>) -> Coordinator {
        Coordinator { agents, stop }
    }

    /// Runs `workload`, filling `results` as it goes, so that whatever happens the document
    /// holds everything measured until then. Cleanup always runs.
    pub fn run(
        &mut self,
        workload: &Workload,
        results: &mut Results,
        live: &mut dyn FnMut(Live<'_>),
    ) -> Outcome {
        let start = Instant::now();
        results.hosts = self
            .agents
            .iter()
            .map(|a| Host {
                name: a.host().to_string(),
                inventory: a.inventory(),
                samples: Vec::new(),
                sampler_cpu_ns: None,
            })
            .collect();
        results.spec = serde_json::json!({
            "prepare": workload.prepare,
            "jobs": workload.jobs.iter().map(|j| j.to_pairs().into_iter().map(|(k, v)| (k.to_string(), serde_json::Value::String(v))).collect::<serde_json::Map<_, _>>()).collect::<Vec<_>>(),
        });
        let mut stages = Vec::new();
        for agent in &mut self.agents {
            match agent.validate(workload) {
                Ok(v) => {
                    results.target = results.target.take().or(v.target);
                    results.notes.extend(v.notes);
                    results.findings.extend(v.findings);
                    stages = v.stages;
                }
                Err(e) => return self.end(results, start, Outcome::Refused(e.to_string()), false),
            }
        }
        // The samplers run from here to the end, beside every phase.
        let sampling_from = start.elapsed().as_nanos() as u64;
        for agent in &mut self.agents {
            agent.start_sampling();
        }
        let outcome = self.run_phases(workload, &stages, results, start, live);
        for (agent, host) in self.agents.iter_mut().zip(results.hosts.iter_mut()) {
            let (mut samples, cpu_ns) = agent.stop_sampling();
            for s in &mut samples {
                s.t_ns += sampling_from;
            }
            host.samples = samples;
            host.sampler_cpu_ns = cpu_ns;
        }
        let outcome = self.end(results, start, outcome, true);
        // Diagnosis reads the finished document: phases, samples, inventories.
        let found = stormark_probe::diagnose(results);
        results.findings.extend(found);
        outcome
    }

    fn run_phases(
        &mut self,
        workload: &Workload,
        stages: &[Vec<stormark_stats::PhaseJob>],
        results: &mut Results,
        start: Instant,
        live: &mut dyn FnMut(Live<'_>),
    ) -> Outcome {
        let names: Vec<String> = workload
            .stages()
            .iter()
            .map(
                |jobs| match (workload.stages().len(), jobs[0].group.as_deref()) {
                    (1, _) => "run".to_string(),
                    (_, Some(g)) => format!("run:{g}"),
                    (_, None) => format!("run:{}", jobs[0].name),
                },
            )
            .collect();
        // Preparation: its own phase, excluded from the run's figures.
        let (result, phase) = self.phase("prepare", PREPARE, start, live, |agent, sink| {
            agent.prepare(sink)
        });
        self.collect_notes(results);
        if let Err(e) = result {
            return self.outcome_of(e);
        }
        if let Some(p) = phase {
            results.phases.push(p);
        }
        if self.stop.load(Ordering::Relaxed) {
            return Outcome::Interrupted;
        }
        for (i, name) in names.iter().enumerate() {
            live(Live::PhaseStarted { name });
            let (result, phase) =
                self.phase(name, i, start, live, |agent, sink| agent.run_stage(i, sink));
            if let Some(mut p) = phase {
                if p.jobs.is_empty() {
                    p.jobs = stages.get(i).cloned().unwrap_or_default();
                }
                live(Live::PhaseDone { phase: &p });
                results.phases.push(p);
            }
            self.collect_notes(results);
            if let Err(e) = result {
                return self.outcome_of(e);
            }
            if self.stop.load(Ordering::Relaxed) {
                return Outcome::Interrupted;
            }
        }
        Outcome::Completed
    }

    /// Runs one phase on every agent and merges it. The phase is `None` when no agent ran
    /// anything (a preparation with nothing to write).
    fn phase(
        &mut self,
        name: &str,
        stage: usize,
        start: Instant,
        live: &mut dyn FnMut(Live<'_>),
        mut call: impl FnMut(
            &mut dyn Agent,
            &mut dyn FnMut(AgentEvent<'_>),
        ) -> Result<Vec<stormark_stats::PhaseJob>, AgentError>,
    ) -> (Result<(), AgentError>, Option<Phase>) {
        let hosts: Vec<String> = self.agents.iter().map(|a| a.host().to_string()).collect();
        let mut keys = Vec::new();
        for (h, agent) in self.agents.iter().enumerate() {
            for (j, n) in agent.workers(stage).iter().enumerate() {
                keys.extend((0..*n).map(|w| WorkerKey {
                    host: h as u16,
                    job: j as u16,
                    worker: w,
                }));
            }
        }
        let mut acc = PhaseAccumulator::new(name, hosts, Vec::new(), &keys);
        let mut measured_start: Option<Instant> = None;
        let mut jobs = Vec::new();
        let mut result = Ok(());
        for (h, agent) in self.agents.iter_mut().enumerate() {
            let a = &mut acc;
            let mut sink = |e: AgentEvent<'_>| match e {
                AgentEvent::Started => {
                    measured_start.get_or_insert_with(Instant::now);
                }
                AgentEvent::Interval {
                    job,
                    worker,
                    interval,
                    snap,
                } => {
                    a.add(
                        WorkerKey {
                            host: h as u16,
                            job,
                            worker,
                        },
                        interval,
                        snap,
                    );
                    for closed in a.close_ready() {
                        live(Live::Second {
                            phase: name,
                            interval: closed,
                        });
                    }
                }
                AgentEvent::Done {
                    job,
                    worker,
                    end_ns,
                    ..
                } => a.worker_done(
                    WorkerKey {
                        host: h as u16,
                        job,
                        worker,
                    },
                    end_ns,
                ),
                AgentEvent::Tick => {}
            };
            match call(agent.as_mut(), &mut sink) {
                Ok(j) => jobs.extend(j),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        let ran = measured_start.is_some();
        let phase = ran.then(|| {
            acc.set_jobs(jobs);
            let offset =
                measured_start.map_or(0, |t| t.saturating_duration_since(start).as_nanos() as u64);
            let duration = acc.end_ns();
            acc.finish(offset, duration)
        });
        (result, phase)
    }

    fn collect_notes(&mut self, results: &mut Results) {
        for agent in &mut self.agents {
            results.notes.extend(agent.take_notes());
        }
    }

    fn outcome_of(&self, e: AgentError) -> Outcome {
        match e {
            AgentError::Refused(m) => Outcome::Refused(m),
            AgentError::Failed(m) if self.stop.load(Ordering::Relaxed) => {
                let _ = m;
                Outcome::Interrupted
            }
            AgentError::Failed(m) => Outcome::Failed(m),
        }
    }

    fn end(
        &mut self,
        results: &mut Results,
        start: Instant,
        outcome: Outcome,
        cleanup: bool,
    ) -> Outcome {
        if cleanup {
            for agent in &mut self.agents {
                results.notes.extend(agent.cleanup());
            }
        }
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
