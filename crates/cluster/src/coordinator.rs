//! The coordinator: drives agents through the phases, all at once, and merges what they
//! measure.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use stormark_spec::Workload;
use stormark_stats::{
    Counts, Host, HostFailure, Interval, Op, Phase, PhaseJob, PhaseKind, Results, RunStatus,
};

use crate::agent::{Agent, AgentError, Stage};
use stormark_spec::{stage_steps, Step};

mod fan;
mod peers;
pub use peers::peer_ips;
mod phase;
mod stonewall;

/// What the live display is told: one stream of events for everything that shows a run as it
/// happens (the terminal's live line, progress lines, `--metrics-listen`).
#[derive(Debug)]
pub enum Live<'a> {
    /// Every agent accepted the workload; nothing has been written yet.
    Validated {
        /// What the run measures (the first host's target), when it has one.
        target: Option<&'a stormark_stats::Target>,
        /// Each target of a run of several.
        targets: &'a [stormark_stats::Target],
    },
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
        hosts: &'a [(&'a str, &'a [(Op, Counts)])],
    },
    /// A phase ended.
    PhaseDone {
        /// The phase as it goes into the results.
        phase: &'a Phase,
        /// Every host's name, in the run's order (what its net sessions' hosts index).
        hosts: &'a [String],
        /// What the phase's own figures show at once (`stormark_probe::phase_findings`); the
        /// rules that read host samples run at the end, on the whole document.
        findings: &'a [stormark_stats::Finding],
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
    /// Mark the agent failed and go on with the others, unless more than `max_failed` have
    /// failed (`None`: however many).
    Continue {
        /// The most agents that may fail before the run aborts.
        max_failed: Option<usize>,
    },
}

impl std::str::FromStr for OnAgentFailure {
    type Err = AgentError;

    /// `--on-agent-failure`: abort or continue.
    fn from_str(s: &str) -> Result<Self, AgentError> {
        match s {
            "abort" => Ok(OnAgentFailure::Abort),
            "continue" => Ok(OnAgentFailure::Continue { max_failed: None }),
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
    /// Net jobs between the run's agents: their addresses and ports.
    peers: Option<peers::PeerMap>,
    /// An S3 run's objects a failed host left: removed with these keys (and each host's
    /// own endpoint), since that host's cleanup never ran.
    objects: Option<FailedObjects>,
    /// By stage, by host: whether a job of the stage runs there (jobs' `hosts`). A host that
    /// runs none sits the stage out; its samplers go on.
    stage_hosts: Vec<Vec<bool>>,
    /// mdtest's stonewall over the metadata phases: the time that cuts them, the wear-out.
    stonewall: stonewall::Stonewall,
}

/// What the coordinator needs to remove the objects a failed host left.
struct FailedObjects {
    access: crate::agent::S3Access,
    run: String,
    endpoints: Vec<Option<String>>,
}

use phase::{PhaseCall, Scope};

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
            peers: None,
            objects: None,
            stage_hosts: Vec::new(),
            stonewall: stonewall::Stonewall::default(),
        }
    }

    /// An S3 run (`opts.s3`): the objects a failed host left under its prefix are removed
    /// at the end, with these keys, at each host's own endpoint where it has one
    /// (`endpoints`, by host), and said in the notes; not with `--keep`.
    pub fn remove_failed_hosts_objects(
        mut self,
        opts: &crate::agent::TargetOptions,
        endpoints: Vec<Option<String>>,
    ) -> Coordinator {
        self.objects = opts
            .s3
            .clone()
            .filter(|_| !opts.keep)
            .map(|access| FailedObjects {
                access,
                run: opts.run.clone(),
                endpoints,
            });
        self
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
        next: &mut dyn FnMut(&mut Results) -> Option<Step>,
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
        results.spec = stormark_stats::Spec {
            prepare: workload.prepare,
            jobs: workload
                .jobs
                .iter()
                .map(|j| {
                    j.to_pairs()
                        .into_iter()
                        .map(|(k, v)| (k.to_string(), v))
                        .collect()
                })
                .collect(),
            profile: None,
        };
        let mut stages = Vec::new();
        let several = self.agents.len() > 1;
        match peers::PeerMap::new(workload, &self.agents) {
            Ok(None) => {}
            Ok(Some((map, ips))) => {
                for agent in &mut self.agents {
                    agent.set_net_peers(ips.clone());
                }
                self.peers = Some(map);
            }
            Err(msg) => {
                self.cleanup_all();
                return self.end(results, start, Outcome::Refused(msg));
            }
        }
        let all = vec![true; self.agents.len()];
        let validated = fan::each(&mut self.agents, &all, |_, a| a.validate(workload));
        for (i, validated) in validated.into_iter().enumerate() {
            let Some(validated) = validated else { continue };
            match validated {
                Ok(v) => {
                    if let Some(map) = &mut self.peers {
                        map.set_ports(i, v.net_ports.clone());
                    }
                    if several {
                        results.hosts[i].target = v.target.clone();
                    }
                    results.target = results.target.take().or(v.target);
                    results.targets.extend(v.targets);
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
                    // Every agent ends its session; nothing was written.
                    self.cleanup_all();
                    return self.end(results, start, Outcome::Refused(msg));
                }
            }
        }
        live(Live::Validated {
            target: results.target.as_ref(),
            targets: &results.targets,
        });
        // The samplers run from here to the end, beside every phase.
        let sampling_from = start.elapsed().as_nanos() as u64;
        fan::each(&mut self.agents, &all, |_, a| a.start_sampling());
        let n = self.agents.len();
        self.stage_hosts = workload
            .stages()
            .iter()
            .map(|jobs| (0..n).map(|h| jobs.iter().any(|j| j.runs_on(h))).collect())
            .collect();
        self.stonewall = stonewall::Stonewall::new(workload);
        let outcome = self.run_phases(&stages, results, start, start_wall, live, next);
        // Each host's samples counted from its sampler's start: an agent that started it
        // with its validation says when.
        let since: Vec<u64> = self
            .agents
            .iter()
            .map(|a| {
                a.sampling_since().map_or(sampling_from, |t| {
                    t.duration_since(start_wall)
                        .map_or(0, |d| d.as_nanos() as u64)
                })
            })
            .collect();
        let sampled = fan::each(&mut self.agents, &all, |_, a| a.stop_sampling());
        for ((sampled, host), from) in sampled.into_iter().zip(results.hosts.iter_mut()).zip(since)
        {
            let (mut samples, cpu_ns) = sampled.unwrap_or_default();
            for s in &mut samples {
                s.t_ns += from;
            }
            host.samples = samples;
            host.sampler_cpu_ns = cpu_ns;
        }
        stormark_stats::fill_phase_cpu(results);
        let timed = |name: &str| {
            workload
                .jobs
                .iter()
                .any(|j| j.name == name && j.time.is_some())
        };
        stormark_stats::mark_time_bound(&mut results.phases, timed);
        for notes in fan::each(&mut self.agents, &all, |_, a| a.cleanup()) {
            results.notes.extend(notes.unwrap_or_default());
        }
        self.remove_objects_left(workload, results);
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
                // A Ctrl-C during the cleanup (a second one leaves a stalled object store's
                // objects in place): the run did not end as it was asked to.
                None if self.stop.load(Ordering::Relaxed) => Outcome::Interrupted,
                None => Outcome::Completed,
            },
            other => other,
        };
        for p in &mut results.phases {
            mark_ignored(p, workload);
        }
        let outcome = self.end(results, start, outcome);
        // A mesh's matrices, of its pairs' phases.
        results.mesh = stormark_stats::mesh_of(results);
        // Diagnosis reads the finished document: phases, samples, inventories.
        let found = stormark_probe::diagnose(results);
        results.findings.extend(found);
        outcome
    }

    /// The objects of an S3 run that each failed host left (its own cleanup never ran):
    /// removed under that host's prefix, and said in the notes.
    fn remove_objects_left(&self, workload: &Workload, results: &mut Results) {
        let Some(o) = &self.objects else {
            return;
        };
        for (i, failure) in self.failures.iter().enumerate() {
            if failure.is_none() {
                continue;
            }
            let mut access = o.access.clone();
            access.create_bucket = false;
            if let Some(Some(url)) = o.endpoints.get(i) {
                access.endpoint = Some(url.clone());
            }
            let notes = crate::remove_host_objects(workload, &access, &o.run, i as u32);
            results.notes.extend(notes);
        }
    }

    /// Every agent removes what the run made and ends its session (a refusal before load).
    fn cleanup_all(&mut self) {
        let all = vec![true; self.agents.len()];
        fan::each(&mut self.agents, &all, |_, a| a.cleanup());
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
        next: &mut dyn FnMut(&mut Results) -> Option<Step>,
    ) -> Outcome {
        // Preparation: its own phase, excluded from the run's figures. No common start.
        let prepare: &PhaseCall<'_> = &|_, agent, _, sink| agent.prepare_into(sink);
        let n = self.agents.len();
        let (result, phase) = self.phase(
            "prepare",
            Stage::Prepare,
            Scope {
                jobs_cap: None,
                selected: &vec![true; n],
                peers: &vec![Vec::new(); n],
                known_jobs: &[],
                meta: None,
            },
            start,
            start_wall,
            live,
            prepare,
        );
        self.collect_notes(results);
        if let Some(mut p) = phase {
            p.kind = Some(PhaseKind::Prepare);
            live(Live::PhaseDone {
                phase: &p,
                hosts: &self.names,
                findings: &[],
            });
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
                mut load,
                hosts,
                pair,
            } = step;
            let meta = self.stonewall.before(stage, &mut load);
            // Where each host's streams to the run's agents go; the hosts that run the step
            // (the first `hosts`, a pair's sender, one with somewhere to stream). Streams
            // between agents reach a host that does not run the step (a pair's receiver): every
            // host the step involves must still answer, and one that does not (killed between
            // its tests) is out of the run before the step, which is planned again without it.
            let (peers, selected) = loop {
                let peers = match &self.peers {
                    Some(map) => map.peers(pair, &self.alive),
                    None => vec![Vec::new(); n],
                };
                let only_to_agents = self.peers.as_ref().is_some_and(|m| m.only_to_agents(stage));
                let selected: Vec<bool> = (0..n)
                    .map(|h| {
                        hosts.is_none_or(|c| h < c)
                            && self.stage_hosts.get(stage).is_none_or(|on| on[h])
                            && pair.is_none_or(|(from, _)| h == from)
                            && !(only_to_agents && peers[h].is_empty())
                    })
                    .collect();
                if self.peers.is_none() {
                    break (peers, selected);
                }
                let involved: Vec<usize> = (0..n)
                    .filter(|&h| {
                        self.alive[h]
                            && (selected[h]
                                || (0..n).any(|s| {
                                    selected[s] && peers[s].iter().any(|p| p.host as usize == h)
                                }))
                    })
                    .collect();
                let gone = self.measure(&involved);
                if gone.is_empty() {
                    break (peers, selected);
                }
                for (h, e) in gone {
                    if let Some(o) = self.fail_before(h, &name, &e, start, live) {
                        return o;
                    }
                }
            };
            if !selected.iter().zip(&self.alive).any(|(s, a)| *s && *a) {
                // Nothing to run it (a pair with a host gone): not run, said by its absence.
                continue;
            }
            live(Live::PhaseStarted { name: &name });
            let call: &PhaseCall<'_> =
                &|h, agent, at, sink| agent.run_stage_into(stage, &load, &peers[h], at, sink);
            let (result, phase) = self.phase(
                &name,
                Stage::Run(stage),
                Scope {
                    jobs_cap: load.jobs,
                    selected: &selected,
                    peers: &peers,
                    known_jobs: stages.get(stage).map_or(&[][..], Vec::as_slice),
                    meta,
                },
                start,
                start_wall,
                live,
                call,
            );
            let net = self.take_net();
            if let Some(mut p) = phase {
                p.kind = Some(kind);
                self.stonewall.after(stage, &load, &p);
                if p.jobs.is_empty() {
                    p.jobs = stages.get(stage).cloned().unwrap_or_default();
                }
                // The run's network report: of the last phase with net jobs to servers, the
                // first host's.
                if let Some(r) = net.iter().find(|r| r.to.is_none()) {
                    results.net = Some(r.clone());
                }
                p.net = net;
                let client = results
                    .hosts
                    .first()
                    .map(|h| &h.inventory)
                    .filter(|i| **i != stormark_stats::Inventory::default());
                live(Live::PhaseDone {
                    phase: &p,
                    hosts: &self.names,
                    findings: &stormark_probe::phase_findings(&p, client),
                });
                results.phases.push(p);
            }
            self.collect_notes(results);
            if let Some(o) = self.outcome_of(result) {
                return o;
            }
        }
        Outcome::Completed
    }

    /// Host `h`, found gone before phase `name` (its agent no longer answers `e`), is out of
    /// the run from here on, its failure on record as a phase's would be; how the run ends
    /// when the policy says so.
    fn fail_before(
        &mut self,
        h: usize,
        name: &str,
        e: &AgentError,
        start: Instant,
        live: &mut dyn FnMut(Live<'_>),
    ) -> Option<Outcome> {
        let m = e.to_string();
        self.alive[h] = false;
        self.failures[h] = Some(HostFailure {
            message: m.clone(),
            phase: name.to_string(),
            at_ns: start.elapsed().as_nanos() as u64,
            last_interval: None,
        });
        live(Live::HostFailed {
            host: &self.names[h],
            message: &m,
        });
        let failed = self.alive.iter().filter(|a| !**a).count();
        let m = format!("{}: {m}", self.names[h]);
        let end = phase::run_ends(self.on_failure, failed, self.names.len(), m, false)?;
        self.aborted = Some(end.clone());
        Some(Outcome::Failed(end))
    }

    fn collect_notes(&mut self, results: &mut Results) {
        for agent in &mut self.agents {
            results.notes.extend(agent.take_notes());
        }
    }

    /// Every host's net sessions of the phase just run, each with its sender, in host order.
    fn take_net(&mut self) -> Vec<stormark_stats::NetReport> {
        let mut out = Vec::new();
        for (h, agent) in self.agents.iter_mut().enumerate() {
            for mut r in agent.take_net() {
                r.from = Some(h as u32);
                out.push(r);
            }
        }
        out
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
        if let Some(note) = ignored_note(results) {
            results.notes.push(note);
        }
        match &outcome {
            Outcome::Completed if results.failing_errors() > 0 => {
                results.status = RunStatus::Failed;
                results.failure = Some(format!("{} I/O errors", results.failing_errors()));
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

/// Marks the errors of `phase` of a kind their job ignores (fio's `ignore_error`), and says
/// so in a note: they are counted and shown, and do not fail the run.
fn mark_ignored(phase: &mut stormark_stats::Phase, workload: &Workload) {
    for e in &mut phase.errors {
        e.ignored = workload
            .jobs
            .iter()
            .any(|j| j.name == e.job && j.ignores(&e.kind));
    }
}

/// The note of the errors a run's jobs ignored, if any.
fn ignored_note(results: &Results) -> Option<String> {
    let mut by: std::collections::BTreeMap<(&str, &str), u64> = Default::default();
    for e in results
        .phases
        .iter()
        .flat_map(|p| &p.errors)
        .filter(|e| e.ignored)
    {
        *by.entry((e.job.as_str(), e.kind.as_str())).or_default() += e.count;
    }
    (!by.is_empty()).then(|| {
        let each: Vec<String> = by
            .iter()
            .map(|((job, kind), n)| format!("{n} {kind} of job {job}"))
            .collect();
        format!(
            "errors counted but not failing the run, as their jobs ask (ignore_errors, fio's ignore_error; a full file system where a job fills it, fill_device): {}",
            each.join(", ")
        )
    })
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
