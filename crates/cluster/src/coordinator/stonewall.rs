//! mdtest's stonewall across a run's metadata phases: which phases count each worker's items
//! and the time that cuts them, and the wear-out after a create that time cut (the next
//! phases of its stage start with every worker's files made up to the most any made).

use std::time::Duration;

use stormark_spec::{MetaOp, StageLoad, Workload};
use stormark_stats::Phase;

/// What the coordinator keeps of the stonewall from phase to phase.
#[derive(Debug, Default)]
pub(super) struct Stonewall {
    /// Each stage of metadata jobs alone: the time that cuts each of its phases short, if
    /// any; `None` for other stages.
    time: Vec<Option<Option<Duration>>>,
    /// Each stage whose meta jobs wear out after a cut create (mdtest's `-W`).
    wear_out: Vec<bool>,
    /// The stage whose create phase its time cut, and the most files a worker made then.
    worn: Option<(usize, u64)>,
}

impl Stonewall {
    /// The stonewall of `workload`'s stages.
    pub fn new(workload: &Workload) -> Stonewall {
        let stages = workload.stages();
        Stonewall {
            time: stages
                .iter()
                .map(|jobs| {
                    jobs.iter()
                        .all(|j| j.meta.is_some())
                        .then(|| jobs.iter().filter_map(|j| j.time).min())
                })
                .collect(),
            wear_out: stages
                .iter()
                .map(|jobs| {
                    jobs.iter()
                        .any(|j| j.meta.as_ref().is_some_and(|m| m.wear_out))
                })
                .collect(),
            worn: None,
        }
    }

    /// Before a step of `stage`: the wear-out it starts with, in `load`; and whether its phase
    /// counts each worker's items (a metadata phase), cut at the time it gives if any.
    pub fn before(&mut self, stage: usize, load: &mut StageLoad) -> Option<Option<Duration>> {
        match load.meta_op {
            Some(MetaOp::Create) => self.worn = None,
            Some(_) => load.meta_items = self.worn.filter(|(s, _)| *s == stage).map(|(_, m)| m),
            None => {}
        }
        load.meta_op
            .and_then(|_| self.time.get(stage).copied().flatten())
    }

    /// After the step's phase `p`: a create its time cut is worn out from.
    pub fn after(&mut self, stage: usize, load: &StageLoad, p: &Phase) {
        if load.meta_op == Some(MetaOp::Create) && self.wear_out.get(stage) == Some(&true) {
            self.worn = p.reached.as_ref().filter(|r| r.cut).map(|r| (stage, r.max));
        }
    }
}
