//! One phase to run, and the phases of a workload run as given.

use stormark_spec::{StageLoad, Workload};
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

/// The phase names of a workload run as given: `run`, or `run:<group>` per stage.
pub fn stage_steps(workload: &Workload) -> Vec<Step> {
    let n = workload.stages().len();
    workload
        .stages()
        .iter()
        .enumerate()
        .map(|(i, jobs)| Step {
            name: match (n, jobs[0].group.as_deref()) {
                (1, _) => "run".to_string(),
                (_, Some(g)) => format!("run:{g}"),
                (_, None) => format!("run:{}", jobs[0].name),
            },
            kind: PhaseKind::Run,
            stage: i,
            load: StageLoad::AS_GIVEN,
            hosts: None,
        })
        .collect()
}
