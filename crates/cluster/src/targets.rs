//! A run of several targets on this host (`stormark run T1 T2`, a fio job file whose jobs
//! name different devices or directories): one [`LocalAgent`] per target, each checking,
//! preparing and cleaning up its target by the rules of a run of one (safety checks, free
//! space, its own run directory, device checks), driven as one host. Each stage runs on every
//! target at once, from one start named for all of them, as the hosts of a distributed run
//! start; each job's figures name its target (`PhaseJob::target`), from which the phase's
//! `by_target` is merged.

use std::sync::mpsc::{channel, Sender};
use std::time::{Duration, SystemTime};

use stormark_spec::{StageLoad, Workload};
use stormark_stats::{HostSample, PhaseJob};

use crate::agent::{Agent, AgentError, AgentEvent, NetPeer, NetPeers, Second, Stage, Validated};
use crate::LocalAgent;

/// How far ahead the targets' common start is named: every target's workers set up (files
/// opened, buffers made) before it, as a distributed stage's hosts are given a lead.
const START_LEAD: Duration = Duration::from_millis(500);

/// Starts further apart than this (a target whose workers were not ready by the named start)
/// are said in a note.
const START_SPREAD_NOTED: Duration = Duration::from_millis(20);

/// One target of the run and its agent.
struct Part {
    /// The target as the jobs name it (`Job::target`).
    target: String,
    agent: LocalAgent,
    /// Validated: it has jobs, and its cleanup is owed.
    active: bool,
}

/// Where a job of a stage runs: its part, the part's own stage, and its index there.
#[derive(Debug, Clone, Copy)]
struct Place {
    part: usize,
    stage: usize,
    job: usize,
}

/// The agent of a run of several targets on this host.
pub struct SeveralTargets {
    parts: Vec<Part>,
    /// Per stage of the workload, each job's place, in the order the coordinator sees them.
    stages: Vec<Vec<Place>>,
    notes: Vec<String>,
}

/// A part's event, owned, on its way to the thread that hands it on.
enum Event {
    Started(SystemTime),
    Interval {
        job: u16,
        worker: u32,
        interval: u32,
        second: Second,
    },
    Done {
        job: u16,
        worker: u32,
        end_ns: u64,
        failure: Option<String>,
    },
    Tick,
}

impl SeveralTargets {
    /// The agent of `parts`: each target as its jobs name it, and its own agent (made with
    /// that target's options).
    pub fn new(parts: Vec<(String, LocalAgent)>) -> SeveralTargets {
        SeveralTargets {
            parts: parts
                .into_iter()
                .map(|(target, agent)| Part {
                    target,
                    agent,
                    active: false,
                })
                .collect(),
            stages: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Runs `call` on every active part at once, each on a thread of its own, their events
    /// handed to `on_event` on this thread as `remap` places them (`None`: dropped). The
    /// parts' answers, in order (`None` for an inactive part).
    #[allow(clippy::type_complexity)]
    fn on_every_part(
        &mut self,
        call: &(dyn Fn(
            usize,
            &mut LocalAgent,
            &mut dyn FnMut(AgentEvent<'_>),
        ) -> Result<Vec<PhaseJob>, AgentError>
              + Sync),
        remap: &dyn Fn(usize, u16, u32) -> Option<(u16, u32)>,
        on_event: &mut dyn FnMut(AgentEvent<'_>),
    ) -> (
        Vec<Option<Result<Vec<PhaseJob>, AgentError>>>,
        Vec<SystemTime>,
    ) {
        let (tx, rx) = channel::<(usize, Event)>();
        let mut starts = Vec::new();
        let mut first_start = true;
        let answers = std::thread::scope(|scope| {
            let mut handles = Vec::new();
            for (p, part) in self.parts.iter_mut().enumerate() {
                if !part.active {
                    handles.push(None);
                    continue;
                }
                let tx: Sender<(usize, Event)> = tx.clone();
                let agent = &mut part.agent;
                handles.push(Some(
                    std::thread::Builder::new()
                        .name(format!("stormark-target{p}"))
                        .spawn_scoped(scope, move || {
                            call(p, agent, &mut |e| {
                                let owned = match e {
                                    AgentEvent::Started { at } => Event::Started(at),
                                    AgentEvent::Interval {
                                        job,
                                        worker,
                                        interval,
                                        second,
                                    } => Event::Interval {
                                        job,
                                        worker,
                                        interval,
                                        second,
                                    },
                                    AgentEvent::Done {
                                        job,
                                        worker,
                                        end_ns,
                                        failure,
                                    } => Event::Done {
                                        job,
                                        worker,
                                        end_ns,
                                        failure: failure.map(str::to_string),
                                    },
                                    AgentEvent::Tick => Event::Tick,
                                };
                                let _ = tx.send((p, owned));
                            })
                        })
                        .expect("spawning a target's thread"),
                ));
            }
            drop(tx);
            // Every event, until every part's sender is gone (its call returned).
            for (p, e) in rx {
                match e {
                    Event::Started(at) => {
                        starts.push(at);
                        // One start for the host: the first; the others are within the lead.
                        if std::mem::take(&mut first_start) {
                            on_event(AgentEvent::Started { at });
                        }
                    }
                    Event::Interval {
                        job,
                        worker,
                        interval,
                        second,
                    } => {
                        if let Some((job, worker)) = remap(p, job, worker) {
                            on_event(AgentEvent::Interval {
                                job,
                                worker,
                                interval,
                                second,
                            });
                        }
                    }
                    Event::Done {
                        job,
                        worker,
                        end_ns,
                        failure,
                    } => {
                        if let Some((job, worker)) = remap(p, job, worker) {
                            on_event(AgentEvent::Done {
                                job,
                                worker,
                                end_ns,
                                failure: failure.as_deref(),
                            });
                        }
                    }
                    Event::Tick => on_event(AgentEvent::Tick),
                }
            }
            handles
                .into_iter()
                .map(|h| {
                    h.map(|h| {
                        h.join().unwrap_or_else(|_| {
                            Err(AgentError::Runtime("a target's thread panicked".into()))
                        })
                    })
                })
                .collect()
        });
        (answers, starts)
    }

    /// Notes of the parts, each naming its target where it does not already.
    fn gather_notes(&mut self) {
        for part in &mut self.parts {
            for note in part.agent.take_notes() {
                self.notes.push(if note.contains(&part.target) {
                    note
                } else {
                    format!("{}: {note}", part.target)
                });
            }
        }
    }

    /// Stage `index` of every target at once under `load` must fit this host's limits.
    fn check_limits(&self, index: usize, load: &StageLoad) -> Result<(), AgentError> {
        let mut together: Vec<(&LocalAgent, usize)> = Vec::new();
        for pl in &self.stages[index] {
            let part = &self.parts[pl.part].agent;
            if !together.iter().any(|(a, _)| std::ptr::eq(*a, part)) {
                together.push((part, pl.stage));
            }
        }
        LocalAgent::check_limits_together(&together, load)
    }

    /// The first part's agent, which speaks for the host (its name, inventory, sampler).
    fn first(&self) -> &LocalAgent {
        &self.parts[0].agent
    }
}

impl Agent for SeveralTargets {
    fn host(&self) -> &str {
        self.first().host()
    }

    fn inventory(&self) -> stormark_stats::Inventory {
        self.first().inventory()
    }

    fn set_net_peers(&mut self, peers: NetPeers) {
        for part in &mut self.parts {
            part.agent.set_net_peers(peers.clone());
        }
    }

    fn validate(&mut self, workload: &Workload) -> Result<Validated, AgentError> {
        if let Some(job) = workload.jobs.iter().find(|j| {
            j.target
                .as_ref()
                .is_none_or(|t| !self.parts.iter().any(|p| p.target == *t))
        }) {
            return Err(AgentError::job(
                job.name.clone(),
                "runs on none of the run's targets; give each job its target",
            ));
        }
        let mut v = Validated::default();
        // Each part validated with its own jobs, in the workload's order; where each of its
        // jobs lands in its own stages.
        let mut own: Vec<Vec<Vec<String>>> = Vec::new();
        let mut validated = Vec::new();
        for part in &mut self.parts {
            let jobs: Vec<_> = workload
                .jobs
                .iter()
                .filter(|j| j.target.as_deref() == Some(part.target.as_str()))
                .cloned()
                .collect();
            if jobs.is_empty() {
                own.push(Vec::new());
                validated.push(Validated::default());
                continue;
            }
            let sub = Workload::new(jobs, workload.prepare)
                .map_err(|e| AgentError::option(part.target.clone(), e.to_string()))?;
            own.push(
                sub.stages()
                    .iter()
                    .map(|s| s.iter().map(|j| j.name.clone()).collect())
                    .collect(),
            );
            part.active = true;
            validated.push(part.agent.validate(&sub)?);
        }
        self.stages = workload
            .stages()
            .iter()
            .map(|stage| {
                stage
                    .iter()
                    .map(|job| {
                        let part = self
                            .parts
                            .iter()
                            .position(|p| job.target.as_deref() == Some(p.target.as_str()))
                            .expect("every job's target is a part's, checked above");
                        let (stage, k) = own[part]
                            .iter()
                            .enumerate()
                            .find_map(|(s, names)| {
                                names.iter().position(|n| *n == job.name).map(|k| (s, k))
                            })
                            .expect("a part's jobs are in its stages");
                        Place {
                            part,
                            stage,
                            job: k,
                        }
                    })
                    .collect()
            })
            .collect();
        // Every target's share of a stage runs on this host at once: its memory and open files
        // are checked together, as one target's stage is.
        for s in 0..self.stages.len() {
            self.check_limits(s, &StageLoad::AS_GIVEN)?;
        }
        v.stages = self
            .stages
            .iter()
            .map(|places| {
                places
                    .iter()
                    .map(|pl| PhaseJob {
                        target: Some(self.parts[pl.part].target.clone()),
                        ..validated[pl.part].stages[pl.stage][pl.job].clone()
                    })
                    .collect()
            })
            .collect();
        for (part, got) in self.parts.iter().zip(validated) {
            if !part.active {
                continue;
            }
            v.notes.extend(got.notes.into_iter().map(|n| {
                if n.contains(&part.target) {
                    n
                } else {
                    format!("{}: {n}", part.target)
                }
            }));
            v.findings.extend(got.findings);
            v.targets.extend(got.target.clone());
            v.target = v.target.or(got.target);
        }
        Ok(v)
    }

    fn prepare(
        &mut self,
        on_event: &mut dyn FnMut(AgentEvent<'_>),
    ) -> Result<Vec<PhaseJob>, AgentError> {
        let n = self.parts.len() as u32;
        // Every part's preparation at once: its workers told apart by part.
        let (answers, _) = self.on_every_part(
            &|_, agent, on| agent.prepare(on),
            &|p, job, worker| Some((job, worker * n + p as u32)),
            on_event,
        );
        self.gather_notes();
        let mut jobs: Vec<PhaseJob> = Vec::new();
        for answer in answers.into_iter().flatten() {
            for j in answer? {
                match jobs.iter_mut().find(|k| k.name == j.name) {
                    Some(k) => {
                        k.workers += j.workers;
                        k.working_set_bytes += j.working_set_bytes;
                    }
                    None => jobs.push(j),
                }
            }
        }
        Ok(jobs)
    }

    fn run_stage(
        &mut self,
        index: usize,
        load: &StageLoad,
        peers: &[NetPeer],
        start_at: Option<SystemTime>,
        on_event: &mut dyn FnMut(AgentEvent<'_>),
    ) -> Result<Vec<PhaseJob>, AgentError> {
        self.check_limits(index, load)?;
        let places = self.stages[index].clone();
        // Each part's own stage (a stage's jobs on one target are one stage of its own).
        let own_stage: Vec<Option<usize>> = (0..self.parts.len())
            .map(|p| places.iter().find(|pl| pl.part == p).map(|pl| pl.stage))
            .collect();
        let active: Vec<bool> = self.parts.iter().map(|p| p.active).collect();
        for (part, own) in self.parts.iter_mut().zip(&own_stage) {
            part.active = part.active && own.is_some();
        }
        // One start for every target's workers.
        let start = start_at.unwrap_or_else(|| SystemTime::now() + START_LEAD);
        let remap = |p: usize, job: u16, worker: u32| {
            places
                .iter()
                .position(|pl| pl.part == p && pl.job == job as usize)
                .map(|j| (j as u16, worker))
        };
        let (answers, starts) = self.on_every_part(
            &|p, agent, on| {
                let stage = own_stage[p].expect("only parts with jobs in the stage run");
                agent.run_stage(stage, load, peers, Some(start), on)
            },
            &remap,
            on_event,
        );
        for (part, was) in self.parts.iter_mut().zip(active) {
            part.active = was;
        }
        self.gather_notes();
        if let (Some(first), Some(last)) = (starts.iter().min(), starts.iter().max()) {
            let spread = last.duration_since(*first).unwrap_or_default();
            if spread > START_SPREAD_NOTED {
                self.notes.push(format!(
                    "the targets' load started {:.0} ms apart (a target's workers were not ready by the common start)",
                    spread.as_secs_f64() * 1e3
                ));
            }
        }
        let mut ran: Vec<Option<Vec<PhaseJob>>> = Vec::new();
        for answer in answers {
            ran.push(answer.transpose()?);
        }
        Ok(places
            .iter()
            .map(|pl| {
                let jobs = ran[pl.part]
                    .as_ref()
                    .expect("a part with jobs in the stage answered");
                PhaseJob {
                    target: Some(self.parts[pl.part].target.clone()),
                    ..jobs[pl.job].clone()
                }
            })
            .collect())
    }

    fn cleanup(&mut self) -> Vec<String> {
        self.parts
            .iter_mut()
            .filter(|p| p.active)
            .flat_map(|p| p.agent.cleanup())
            .collect()
    }

    fn cleanup_objects(&mut self) -> Vec<String> {
        self.parts
            .iter_mut()
            .filter(|p| p.active)
            .flat_map(|p| p.agent.cleanup_objects())
            .collect()
    }

    fn take_notes(&mut self) -> Vec<String> {
        self.gather_notes();
        std::mem::take(&mut self.notes)
    }

    fn take_net(&mut self) -> Vec<stormark_stats::NetReport> {
        self.parts
            .iter_mut()
            .flat_map(|p| p.agent.take_net())
            .collect()
    }

    fn workers(&self, stage: Stage) -> Vec<u32> {
        match stage {
            Stage::Prepare => vec![self
                .parts
                .iter()
                .map(|p| p.agent.workers(Stage::Prepare).iter().sum::<u32>())
                .sum()],
            Stage::Run(s) => self
                .stages
                .get(s)
                .map(|places| {
                    places
                        .iter()
                        .map(|pl| {
                            self.parts[pl.part]
                                .agent
                                .workers(Stage::Run(pl.stage))
                                .get(pl.job)
                                .copied()
                                .unwrap_or(0)
                        })
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    // The host's counters: sampled once, by the first part's agent.
    fn start_sampling(&mut self) {
        self.parts[0].agent.start_sampling();
    }

    fn stop_sampling(&mut self) -> (Vec<HostSample>, Option<u64>) {
        self.parts[0].agent.stop_sampling()
    }
}
