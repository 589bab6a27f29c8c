//! One phase on every live agent at once: each agent driven from a thread of its own, what
//! they send merged as it arrives, a host that fails marked by the run's policy.

use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::time::{Duration, Instant, SystemTime};

use stormark_stats::{HostFailure, Phase, PhaseAccumulator, PhaseJob, WorkerKey};

use super::{Coordinator, Live, OnAgentFailure, START_LEAD};
use crate::agent::{Agent, AgentError, AgentEvent, NetPeer, Second, Sink, Stage};

/// The least time between two wake-ups of the coordinator's thread for its agents' events.
const BATCH: Duration = Duration::from_millis(10);

/// An agent's event, owned, on its way from the agent's thread to the coordinator's.
enum Msg {
    Started(usize, SystemTime),
    Interval(usize, u16, u32, u32, Second),
    Done(usize, u16, u32, u64),
    Finished(usize, Result<Vec<PhaseJob>, AgentError>),
}

/// What a phase asks of host `h`'s agent: prepare, or run a stage starting at the named
/// instant.
pub(super) type PhaseCall<'c> = dyn Fn(usize, &mut dyn Agent, Option<SystemTime>, Sink) -> Result<Vec<PhaseJob>, AgentError>
    + Sync
    + 'c;

/// Who runs a phase and with what: the step's cap on each job's workers, the hosts it selects,
/// where each host's streams to the run's agents go, and the stage's jobs as validated.
pub(super) struct Scope<'a> {
    pub jobs_cap: Option<u32>,
    pub selected: &'a [bool],
    pub peers: &'a [Vec<NetPeer>],
    pub known_jobs: &'a [PhaseJob],
    /// A metadata phase (each worker's items counted), cut short at this time if any.
    pub meta: Option<Option<std::time::Duration>>,
}

/// What a phase gathers while its agents run, beside the accumulator.
struct Gathered {
    host_starts: Vec<Option<SystemTime>>,
    last_interval: Vec<Option<u32>>,
    jobs: Option<Vec<PhaseJob>>,
    result: Result<(), AgentError>,
    /// Hosts that failed in this phase: (host, message, ns since the run's start).
    newly_failed: Vec<(usize, String, u64)>,
}

/// What decides how a phase ends when an agent's call returns: the run's policy and where it
/// stands, borrowed beside the agents (which the agents' threads hold).
struct Ends<'a> {
    /// Hosts failed so far in the run, this phase's included.
    failed: usize,
    names: &'a [String],
    stop: &'a std::sync::atomic::AtomicBool,
    aborted: &'a mut Option<String>,
    on_failure: OnAgentFailure,
    distributed: bool,
    stage: Stage,
    start: Instant,
}

impl Ends<'_> {
    /// An agent's end of the phase: its jobs, or its failure, which stops the run when it is
    /// a refusal, when the policy aborts, or when nothing else runs.
    fn agent_finished(
        &mut self,
        h: usize,
        r: Result<Vec<PhaseJob>, AgentError>,
        acc: &mut PhaseAccumulator,
        got: &mut Gathered,
        live: &mut dyn FnMut(Live<'_>),
    ) {
        let (distributed, stage, start) = (self.distributed, self.stage, self.start);
        match r {
            Ok(j) => match &mut got.jobs {
                None => got.jobs = Some(j),
                // A job that runs on some hosts only (its `hosts`) is shown as a host that
                // runs it ran it, not as one with no workers for it.
                Some(jobs) => {
                    for (have, new) in jobs.iter_mut().zip(j) {
                        if have.workers == 0 && new.workers > 0 {
                            *have = new;
                        }
                    }
                }
            },
            Err(e) if e.is_refusal() => {
                self.stop.store(true, Ordering::Relaxed);
                got.result = Err(e);
            }
            Err(e) if self.stop.load(Ordering::Relaxed) => {
                // Stopping anyway (Ctrl-C, or another agent failed).
                if got.result.is_ok() && self.aborted.is_none() {
                    got.result = Err(e);
                }
            }
            Err(e) => {
                let m = e.to_string();
                acc.host_failed(h as u16);
                got.newly_failed
                    .push((h, m.clone(), start.elapsed().as_nanos() as u64));
                if distributed {
                    live(Live::HostFailed {
                        host: &self.names[h],
                        message: &m,
                    });
                }
                self.failed += 1;
                let m = if distributed {
                    format!("{}: {m}", self.names[h])
                } else {
                    m
                };
                // A host that cannot make its working set stops the run whatever the policy:
                // nothing is measured on a half-made set.
                let always = stage == Stage::Prepare;
                if let Some(end) =
                    run_ends(self.on_failure, self.failed, self.names.len(), m, always)
                {
                    self.stop.store(true, Ordering::Relaxed);
                    *self.aborted = Some(end);
                    got.result = Err(e);
                }
            }
        }
    }
}

/// How the run ends once `failed` of its `hosts` hosts have failed, the last as `m` says
/// (`always`: whatever the policy); `None` while it goes on without them. It ends when the
/// policy aborts, past `--max-failed-agents`, or with its last host (one that ran a phase
/// alone, such as a mesh's pair, leaves the others on).
pub(super) fn run_ends(
    policy: OnAgentFailure,
    failed: usize,
    hosts: usize,
    m: String,
    always: bool,
) -> Option<String> {
    // --max-failed-agents: the most that may fail, once passed.
    let too_many = match policy {
        OnAgentFailure::Continue {
            max_failed: Some(most),
        } if failed > most => Some(most),
        _ => None,
    };
    if !(always || policy == OnAgentFailure::Abort || too_many.is_some() || failed >= hosts) {
        return None;
    }
    Some(match too_many {
        Some(most) => {
            format!("{failed} agents failed, more than --max-failed-agents {most}; the last: {m}")
        }
        None => m,
    })
}

/// Merges a worker's second, and hands every second it closes to the live display.
fn merge_second(
    acc: &mut PhaseAccumulator,
    key: WorkerKey,
    interval: u32,
    snap: Second,
    live: &mut dyn FnMut(Live<'_>),
    name: &str,
) {
    match snap {
        Second::Whole(snap) => acc.add(key, interval, &snap),
        Second::Parts(ops, errors, verified) => {
            acc.add_parts(key, interval, &ops, (&errors, verified))
        }
    }
    for interval in &acc.close_ready().to_vec() {
        live(Live::Second {
            phase: name,
            interval,
            hosts: &acc.host_second(interval.t_s),
        });
    }
}

/// Forwards host `h`'s events to the coordinator's thread, owned.
fn sink(h: usize, tx: Sender<Msg>) -> Sink {
    Box::new(move |e| {
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
    })
}

impl Coordinator {
    /// Runs one phase on every live agent at once, each on a thread of its own, and merges
    /// what they send as it arrives. The phase is `None` when no agent ran anything (a
    /// preparation with nothing to write).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn phase(
        &mut self,
        name: &str,
        stage: Stage,
        scope: Scope<'_>,
        start: Instant,
        start_wall: SystemTime,
        live: &mut dyn FnMut(Live<'_>),
        call: &PhaseCall<'_>,
    ) -> (Result<(), AgentError>, Option<Phase>) {
        let Scope {
            jobs_cap,
            selected,
            peers,
            known_jobs,
            meta,
        } = scope;
        // The agents that run this phase: alive, and selected by the step.
        let alive: Vec<bool> = self
            .alive
            .iter()
            .zip(selected)
            .map(|(a, s)| *a && *s)
            .collect();
        let keys = self.worker_keys(&alive, stage, jobs_cap, peers);
        let mut acc = PhaseAccumulator::new(name, self.names.clone(), Vec::new(), &keys);
        if let Some(time) = meta {
            acc.count_items(time);
        }
        let running = alive.iter().filter(|a| **a).count();
        let uncertainty = self.measure_clocks(&alive, stage);
        // Hosts of a distributed stage start together, at a time named now.
        let start_at =
            (stage != Stage::Prepare && running > 1).then(|| SystemTime::now() + START_LEAD);
        let n = self.agents.len();
        let mut got = Gathered {
            host_starts: vec![None; n],
            last_interval: vec![None; n],
            jobs: None,
            result: Ok(()),
            newly_failed: Vec::new(),
        };
        let (tx, rx) = channel::<Msg>();
        let distributed = self.is_distributed();
        let mut ends = Ends {
            failed: self.alive.iter().filter(|a| !**a).count(),
            names: &self.names,
            stop: &self.stop,
            aborted: &mut self.aborted,
            on_failure: self.on_failure,
            distributed,
            stage,
            start,
        };
        std::thread::scope(|scope| {
            for (h, agent) in self.agents.iter_mut().enumerate() {
                if !alive[h] {
                    continue;
                }
                let tx: Sender<Msg> = tx.clone();
                std::thread::Builder::new()
                    .name(format!("stormark-agent{h}"))
                    .spawn_scoped(scope, move || {
                        let r = call(h, agent.as_mut(), start_at, sink(h, tx.clone()));
                        let _ = tx.send(Msg::Finished(h, r));
                    })
                    .expect("spawning an agent thread");
            }
            drop(tx);
            let mut finished = 0;
            let mut batch_from = Instant::now();
            while finished < running {
                let msg = match rx.try_recv() {
                    Ok(m) => m,
                    Err(_) => {
                        // What arrived is merged; the thread then rests a moment, so that a
                        // thousand agents' seconds are taken a batch at a time, not each
                        // with a wake-up of its own.
                        if let Some(rest) = BATCH.checked_sub(batch_from.elapsed()) {
                            std::thread::sleep(rest);
                        }
                        let m = rx.recv_timeout(Duration::from_millis(250));
                        batch_from = Instant::now();
                        match m {
                            Ok(m) => m,
                            Err(RecvTimeoutError::Timeout) => continue,
                            Err(RecvTimeoutError::Disconnected) => break,
                        }
                    }
                };
                match msg {
                    Msg::Started(h, at) => got.host_starts[h] = Some(at),
                    Msg::Interval(h, job, worker, interval, snap) => {
                        let key = WorkerKey {
                            host: h as u16,
                            job,
                            worker,
                        };
                        merge_second(&mut acc, key, interval, snap, live, name);
                        let last = &mut got.last_interval[h];
                        *last = Some(last.map_or(interval, |l| l.max(interval)));
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
                        ends.agent_finished(h, r, &mut acc, &mut got, live);
                    }
                }
            }
        });
        self.mark_failed(name, &got);
        let phase = self.built_phase(acc, &mut got, known_jobs, uncertainty, start_wall);
        (got.result, phase)
    }

    /// Every worker of the phase: per live host, per job, up to `jobs_cap` each.
    fn worker_keys(
        &self,
        alive: &[bool],
        stage: Stage,
        jobs_cap: Option<u32>,
        peers: &[Vec<NetPeer>],
    ) -> Vec<WorkerKey> {
        let mut keys = Vec::new();
        for (h, agent) in self.agents.iter().enumerate() {
            if !alive[h] {
                continue;
            }
            for (j, n) in agent.workers(stage).iter().enumerate() {
                let n = jobs_cap.map_or(*n, |c| c.min(*n));
                // A job to the run's agents: its streams to each peer.
                let n = match (stage, &self.peers) {
                    (Stage::Run(s), Some(map)) if map.to_agents(s, j) => n * peers[h].len() as u32,
                    _ => n,
                };
                keys.extend((0..n).map(|w| WorkerKey {
                    host: h as u16,
                    job: j as u16,
                    worker: w,
                }));
            }
        }
        keys
    }

    /// Clocks re-measured before each stage, so that the named start means the same instant
    /// on every host: the largest uncertainty (half a round trip), which goes on record.
    fn measure_clocks(&mut self, alive: &[bool], stage: Stage) -> Option<u64> {
        if stage != Stage::Prepare {
            // A host whose measurement failed is left to the phase's call, which says why.
            let hosts: Vec<usize> = (0..self.agents.len()).filter(|h| alive[*h]).collect();
            self.measure(&hosts);
        }
        (0..self.agents.len())
            .filter(|h| alive[*h])
            .filter_map(|h| self.clocks[h].map(|c| c.rtt_ns / 2))
            .max()
    }

    /// The clocks of `hosts` measured again and kept (remote agents; in-process ones have the
    /// coordinator's): the hosts whose agent did not answer, and why.
    pub(super) fn measure(&mut self, hosts: &[usize]) -> Vec<(usize, AgentError)> {
        // One agent at a time: round trips measured side by side queue behind each other
        // in the coordinator and widen the clocks' uncertainty (1.5 ms against 0.3 ms
        // with a thousand agents). An agent's measurement ends at a round trip as fast as
        // the usual agent's fastest: its offset is then known about as well as most, the
        // slowest agents (whose round trips bound the uncertainty) still get their five,
        // and a fleet's clocks cost two round trips or so per agent, not five.
        //
        // Remote agents are measured by one task of their connections' runtime, one after
        // another: this thread waits once, and no task is started and no thread woken
        // between one agent and the next.
        let probes: Vec<(usize, crate::ClockProbe)> = hosts
            .iter()
            .filter_map(|&h| self.agents[h].clock_probe().map(|p| (h, p)))
            .collect();
        let Some(rt) = probes.first().map(|(_, p)| p.runtime().clone()) else {
            return Vec::new();
        };
        let measuring = rt.spawn(async move {
            let mut fastest: Vec<u64> = Vec::new();
            let mut measured = Vec::with_capacity(probes.len());
            for (h, probe) in probes {
                let c = probe.measure(enough(&fastest)).await;
                if let Ok(c) = &c {
                    let at = fastest.partition_point(|&f| f < c.rtt_ns);
                    fastest.insert(at, c.rtt_ns);
                }
                measured.push((h, c));
            }
            measured
        });
        // A runtime that failed the task leaves every offset as it was.
        let Ok(measured) = rt.block_on(measuring) else {
            return Vec::new();
        };
        let mut failed = Vec::new();
        for (h, c) in measured {
            let c = match c {
                Ok(c) => Some(c),
                Err(e) => {
                    failed.push((h, e));
                    None
                }
            };
            self.clocks[h] = self.agents[h].keep_clock(c);
        }
        failed
    }

    /// The phase as it goes into the results, once its agents are done: `None` when no host
    /// started (every one failed before its load).
    fn built_phase(
        &self,
        mut acc: PhaseAccumulator,
        got: &mut Gathered,
        known_jobs: &[PhaseJob],
        uncertainty: Option<u64>,
        start_wall: SystemTime,
    ) -> Option<Phase> {
        let since = |t: SystemTime| {
            t.duration_since(start_wall)
                .map_or(0, |d| d.as_nanos() as u64)
        };
        let measured_start = got.host_starts.iter().flatten().min().copied();
        let phase = measured_start.map(|first| {
            // The jobs as an agent ran them; as validated when none finished (every host
            // failed), so that errors still name their job.
            acc.set_jobs(got.jobs.take().unwrap_or_else(|| known_jobs.to_vec()));
            let duration = acc.end_ns();
            let mut p = acc.finish(since(first), duration);
            p.host_starts_ns = got
                .host_starts
                .iter()
                .enumerate()
                .filter_map(|(h, t)| t.map(|t| (self.names[h].clone(), since(t))))
                .collect();
            p.start_uncertainty_ns = uncertainty.filter(|_| p.host_starts_ns.len() > 1);
            p
        });
        phase
    }

    /// Hosts that failed in this phase are out of the run from here on, their failure on
    /// record.
    fn mark_failed(&mut self, name: &str, got: &Gathered) {
        let distributed = self.is_distributed();
        for (h, m, at_ns) in &got.newly_failed {
            self.alive[*h] = false;
            if distributed {
                self.failures[*h] = Some(HostFailure {
                    message: m.clone(),
                    phase: name.to_string(),
                    at_ns: *at_ns,
                    last_interval: got.last_interval[*h],
                });
            }
        }
    }
}

/// A round trip fast enough to end a clock measurement, from the fastest round trips of the
/// agents measured so far (in order): within half again of their median, once there are
/// eight of them.
fn enough(fastest: &[u64]) -> Option<u64> {
    (fastest.len() >= 8).then(|| {
        let median = fastest[fastest.len() / 2];
        median + median / 2
    })
}

#[cfg(test)]
mod tests {
    use super::enough;

    #[test]
    fn a_clock_measurement_ends_early_only_against_eight_agents_or_more() {
        let fastest: Vec<u64> = (1..=7).map(|i| i * 100_000).collect();
        assert_eq!(enough(&fastest), None, "fewer than eight: five round trips");
        let fastest: Vec<u64> = (1..=9).map(|i| i * 100_000).collect();
        // The median (500 µs) and half of it again.
        assert_eq!(enough(&fastest), Some(750_000));
    }
}
