//! One stage on this host: its limits checked, each job's workers made into the engine's
//! specs (their files, or an S3, net or meta job's work), and what the stage's end says.

use std::os::fd::AsRawFd;
use std::time::Duration;

use stormark_engine::{Backend, FileTarget, Load, WorkerSpec};
use stormark_spec::StageLoad;

use super::netjob::NetSession;
use super::specs::seed;
use super::{limits, LocalAgent, Where};
use crate::agent::AgentError;

/// A stage's worker specs, and each one's (job, worker) in the stage.
pub(super) type StageSpecs = (Vec<WorkerSpec>, Vec<(u16, u32)>);

impl LocalAgent {
    /// The stage's workers must fit this host's limits under `load` (open files, memory).
    pub(super) fn check_stage_limits(
        &self,
        index: usize,
        load: &StageLoad,
    ) -> Result<(), AgentError> {
        let mut needs = Vec::new();
        for r in &self.stages[index] {
            r.check_load(load)?;
            let mut n = limits::Need::of(&r.job, r.backend);
            n.workers = r.workers(load) as u64;
            n.bs_max = load.bs.unwrap_or(n.bs_max);
            n.iodepth = load.iodepth.map_or(n.iodepth, u64::from);
            needs.push(n);
        }
        limits::check_stage(&needs, matches!(self.place, Some(Where::Existing { .. })))?;
        Ok(())
    }

    /// The worker specs of stage `index` under `load`, each with its files or its job's work
    /// (a net job's streams from `sessions`), and each spec's (job, worker) in the stage.
    pub(super) fn stage_specs(
        &self,
        index: usize,
        load: &StageLoad,
        sessions: &[NetSession],
        ramp: Duration,
    ) -> Result<StageSpecs, AgentError> {
        let mut specs = Vec::new();
        let mut map = Vec::new();
        for (k, run) in self.stages[index].iter().enumerate() {
            if run.backend == Backend::Net {
                // A stream per worker, over the job's sessions (one per peer between agents).
                let streams = sessions.iter().filter(|s| s.job == k);
                for (w, work) in streams
                    .flat_map(|s| (0..s.workers()).map(|w| s.work(w)))
                    .enumerate()
                {
                    let seed = seed(index, k, w) ^ self.seed_salt;
                    let mut spec =
                        run.worker_spec(load, Load::Net(work), Vec::new(), ramp, seed, self.hosts);
                    spec.cpus = stormark_engine::placement::worker_cpus(&run.job.placement, w)
                        .map_err(|e| AgentError::job(&run.job.name, e))?;
                    specs.push(spec);
                    map.push((k as u16, w as u32));
                }
                continue;
            }
            let workers = run.workers(load);
            let len = run.len_under(load);
            for (w, files) in run.worker_files[..workers].iter().enumerate() {
                let targets = match run.backend {
                    Backend::S3 | Backend::Net | Backend::Meta => Vec::new(),
                    _ => self.targets(files, run.job.region_start(w as u64), len),
                };
                if !run.direct
                    && run.job.invalidate != stormark_spec::Invalidate::No
                    && run.backend.touches_files()
                {
                    // Like fio's default invalidate=1: start buffered jobs with a cold cache.
                    for t in &targets {
                        drop_cache(t);
                    }
                }
                let seed = seed(index, k, w) ^ self.seed_salt;
                // What the worker works on: its files, or an S3, net or meta job's work.
                let work = match run.backend {
                    Backend::S3 => {
                        let (Some(b), Some(s3)) = (&self.bucket, &run.job.s3) else {
                            return Err(AgentError::job(&run.job.name, "no bucket was opened"));
                        };
                        Load::S3(Box::new(b.work(&run.job, w, workers, load, s3.ops)))
                    }
                    Backend::Meta => {
                        let Some(tree) = self.meta.iter().find(|t| t.job == run.job.name) else {
                            return Err(AgentError::job(&run.job.name, "no tree was made"));
                        };
                        Load::Meta(tree.work(w, load))
                    }
                    b => Load::of_files(b).expect("a backend of files or null"),
                };
                let mut spec = run.worker_spec(load, work, targets, ramp, seed, self.hosts);
                spec.cpus = stormark_engine::placement::worker_cpus(&run.job.placement, w)
                    .map_err(|e| AgentError::job(&run.job.name, e))?;
                specs.push(spec);
                map.push((k as u16, w as u32));
            }
        }
        Ok((specs, map))
    }
}

/// What a steady-state rule came to within a ramp of `ramp`: held after `steady_after`, or not.
pub(super) fn steady_note(
    name: &str,
    rule: &impl std::fmt::Display,
    steady_after: Option<Duration>,
    ramp: Duration,
) -> String {
    match steady_after {
        Some(d) => format!(
            "job {name}: steady state ({rule}) held after {} s of ramp; measured from there",
            d.as_secs()
        ),
        None => format!(
            "job {name}: NOT steady: {rule} did not hold within the {} s ramp; measured anyway, figures may still drift (raise --ramp or widen the band)",
            ramp.as_secs()
        ),
}
}

/// Drops the clean cached pages of a file, like fio's `invalidate=1`.
fn drop_cache(t: &FileTarget) {
    if let Ok(f) = t.open(false, false) {
        // SAFETY: fd is valid; POSIX_FADV_DONTNEED only drops clean cached pages.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    }
}
