//! One phase to run and what it is, the phases of a workload run as given and of a network
//! mesh: what the planner chooses and the coordinator runs, below both.

use serde::{Deserialize, Serialize};

use crate::{MetaOp, StageLoad, Workload};

/// What a phase was: told apart by this, not by parsing its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PhaseKind {
    /// Making the run's files and writing the working set.
    Prepare,
    /// A stage of the workload as given.
    Run,
    /// A step of a latency-target search.
    SearchStep,
    /// The closed-loop maximum of a curve.
    CurveMax,
    /// An open-loop point of a curve.
    CurvePoint,
    /// A point of a sweep.
    SweepPoint,
    /// A network mesh: one ordered pair of hosts alone, its throughput.
    Pair,
    /// A network mesh: one ordered pair alone, its round trips and path MTU.
    PairRtt,
    /// A network mesh: every pair at once.
    AllPairs,
}

/// An agent of a distributed run: where it listens, what it benchmarks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// `host:port` as given.
    pub address: String,
    /// What it benchmarks.
    pub target: std::path::PathBuf,
    /// The S3 endpoint this host uses instead of the job's (`endpoint` in the agents file,
    /// or `--host-endpoint`).
    pub endpoint: Option<String>,
}

/// One phase to run: a stage of the workload under a load (a search step, a curve or sweep
/// point, or simply the stage as given).
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The phase's name in the results.
    pub name: String,
    /// What the phase is.
    pub kind: PhaseKind,
    /// Which stage of the workload.
    pub stage: usize,
    /// Changes to its load.
    pub load: StageLoad,
    /// Only the first this many agents run it (a sweep over agents); `None`: all.
    pub hosts: Option<usize>,
    /// A mesh's pair alone: only host `.0` runs, its streams to the run's agents going to
    /// host `.1` alone; `None`: every host to every other (`server = "agents"` jobs).
    pub pair: Option<(usize, usize)>,
}

/// The phase names of a workload run as given: `run`, or `run:<group>` per stage. A stage of
/// metadata jobs alone is a phase per operation, as mdtest reports them (`create`, `stat`,
/// ..., or `<stage>:create` among several stages), every host's workers starting each
/// operation together.
pub fn stage_steps(workload: &Workload) -> Vec<Step> {
    let n = workload.stages().len();
    let mut steps = Vec::new();
    for (i, jobs) in workload.stages().iter().enumerate() {
        let name = match (n, jobs[0].group.as_deref()) {
            (1, _) => "run".to_string(),
            (_, Some(g)) => format!("run:{g}"),
            (_, None) => format!("run:{}", jobs[0].name),
        };
        let step = |name: String, meta_op| Step {
            name,
            kind: PhaseKind::Run,
            stage: i,
            load: StageLoad {
                meta_op,
                ..StageLoad::AS_GIVEN
            },
            hosts: None,
            pair: None,
        };
        if jobs.iter().all(|j| j.meta.is_some()) {
            let mut ops: Vec<MetaOp> = jobs
                .iter()
                .flat_map(|j| j.meta.iter().flat_map(|m| m.ops.iter().copied()))
                .collect();
            ops.sort();
            ops.dedup();
            for op in ops {
                let name = match n {
                    1 => op.name().to_string(),
                    _ => format!("{}:{}", name.trim_start_matches("run:"), op.name()),
                };
                steps.push(step(name, Some(op)));
            }
        } else {
            steps.push(step(name, None));
        }
    }
    steps
}

/// A network mesh over `hosts` hosts (stage 0 throughput, stage 1 round trips, both to the
/// run's agents): each ordered pair alone, its throughput then its round trips, then every
/// pair at once.
pub fn mesh_steps(hosts: usize) -> Vec<Step> {
    let mut steps = Vec::new();
    let step = |name: String, kind, stage, pair| Step {
        name,
        kind,
        stage,
        load: StageLoad::AS_GIVEN,
        hosts: None,
        pair,
    };
    for i in 0..hosts {
        for j in (0..hosts).filter(|&j| j != i) {
            steps.push(step(
                format!("pair:{i}->{j}"),
                PhaseKind::Pair,
                0,
                Some((i, j)),
            ));
            steps.push(step(
                format!("rtt:{i}->{j}"),
                PhaseKind::PairRtt,
                1,
                Some((i, j)),
            ));
        }
    }
    steps.push(step("all-pairs".into(), PhaseKind::AllPairs, 0, None));
    steps
}

/// A mesh's second stage, beside its throughput job: a second of 64-byte round trips on one
/// connection to the same agents, the path MTU probed first (the pair's latency alone).
pub fn mesh_round_trips(throughput: &crate::Job) -> crate::Job {
    let mut job = throughput.clone();
    job.name = format!("{}-rtt", throughput.name);
    job.jobs = 1;
    job.time = Some(std::time::Duration::from_secs(1));
    job.ramp = std::time::Duration::ZERO;
    job.rate_iops = None;
    if let Some(net) = &mut job.net {
        net.mode = crate::NetMode::Rtt;
        net.msg_size = 64;
        net.bitrate = 0;
        net.udp = false;
        net.path_mtu = true;
    }
    job
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mesh_is_each_ordered_pair_alone_then_all_at_once() {
        let steps = mesh_steps(3);
        // 6 ordered pairs, each its throughput then its round trips, then all at once.
        assert_eq!(steps.len(), 13);
        assert_eq!(steps[0].name, "pair:0->1");
        assert_eq!((steps[0].kind, steps[0].stage), (PhaseKind::Pair, 0));
        assert_eq!(steps[1].name, "rtt:0->1");
        assert_eq!((steps[1].kind, steps[1].stage), (PhaseKind::PairRtt, 1));
        let pairs: Vec<_> = steps.iter().filter_map(|s| s.pair).collect();
        assert_eq!(pairs.len(), 12);
        assert!(pairs.iter().all(|(i, j)| i != j && *i < 3 && *j < 3));
        let last = steps.last().unwrap();
        assert_eq!(
            (last.kind, last.pair, last.stage),
            (PhaseKind::AllPairs, None, 0)
        );
    }
}
