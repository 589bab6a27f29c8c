//! One phase to run, and the phases of a workload run as given.

use stormark_spec::{MetaOp, StageLoad, Workload};
use stormark_stats::PhaseKind;

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
