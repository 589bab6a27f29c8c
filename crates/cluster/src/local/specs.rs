//! Turning a validated job and a stage load into the engine's worker specs, and describing the
//! jobs as they ran.

use std::time::Duration;

use stormark_engine::{Backend, FileTarget, JobPlacement, WorkerSpec};
use stormark_spec::units::format_size;
use stormark_spec::{Job, StageLoad};
use stormark_stats::PhaseJob;

use crate::agent::AgentError;

/// One job of a validated stage, as this host runs it.
#[derive(Debug, Clone)]
pub(super) struct JobRun {
    pub job: Job,
    pub backend: Backend,
    pub direct: bool,
    /// Per worker, indices into the workspace's files (directory targets) or empty (an
    /// existing target).
    pub worker_files: Vec<Vec<usize>>,
    /// Bytes of each file used.
    pub len: u64,
    /// Where the region used starts in each of the job's own files in a run directory
    /// (fio's `offset=N%`, a share of each file's size); 0 elsewhere.
    pub own_start: u64,
}

impl JobRun {
    /// A job that touches no file (null load without a target, S3): workers without files.
    pub fn without_files(job: &Job, backend: Backend) -> JobRun {
        let align = job.bs_align.max(1);
        JobRun {
            job: job.clone(),
            backend,
            direct: false,
            worker_files: vec![Vec::new(); job.jobs as usize],
            len: (job.size.unwrap_or(stormark_spec::DEFAULT_FILE_SIZE) / align * align)
                .max(job.bs.max),
            own_start: 0,
        }
    }

    /// Workers that run under `load`: the first that many of those validated.
    pub fn workers(&self, load: &StageLoad) -> usize {
        load.jobs
            .map_or(self.worker_files.len(), |j| j as usize)
            .min(self.worker_files.len())
    }

    /// Bytes of each file used under `load`: at most what was validated, in whole blocks.
    pub fn len_under(&self, load: &StageLoad) -> u64 {
        match load.size {
            Some(size) => {
                let align = load.bs.unwrap_or(self.job.bs_align).max(512);
                (size.min(self.len) / align * align).max(align.min(self.len))
            }
            None => self.len,
        }
    }

    /// The job as it runs under `load`, for results. `existing`: the target is one file or
    /// device, not files of a run directory.
    pub fn phase_job(&self, load: &StageLoad, existing: bool) -> PhaseJob {
        let workers = self.workers(load);
        let len = self.len_under(load);
        PhaseJob {
            name: self.job.name.clone(),
            engine: self.backend.name().into(),
            // Before O_DIRECT is probed (the plan's jobs, what a phase whose every worker failed
            // shows): a job that asks for it runs with it or not at all.
            direct: self.direct
                || (self.job.direct == stormark_spec::Direct::Yes && self.backend.touches_files()),
            workers: workers as u32,
            iodepth: if self.backend == Backend::Psync {
                1
            } else {
                load.iodepth.unwrap_or(self.job.iodepth)
            },
            iodepth_batch: if self.backend == Backend::IoUring {
                self.job.iodepth_batch.max(1)
            } else {
                1
            },
            rate_iops: load.rate_iops.or(self.job.rate_iops.map(f64::from)),
            target: None,
            // One file or device, or a job's own file its workers share.
            working_set_bytes: if existing || self.job.filename.is_some() {
                len
            } else {
                self.worker_files[..workers]
                    .iter()
                    .map(|f| f.len() as u64)
                    .sum::<u64>()
                    * len
            },
        }
    }

    /// Refuses a load this job cannot carry (more workers than files were made for, a block
    /// larger than the files).
    pub fn check_load(&self, load: &StageLoad) -> Result<(), AgentError> {
        let refuse = |what: String| Err(AgentError::job(&self.job.name, what));
        if self.worker_files.is_empty() {
            // A job whose `hosts` leave this host out: nothing of it runs here.
            return Ok(());
        }
        if let Some(d) = load.iodepth.filter(|d| !(1..=32768).contains(d)) {
            return refuse(format!("iodepth {d}: expected 1 to 32768"));
        }
        if let Some(r) = load.rate_iops.filter(|r| !(r.is_finite() && *r > 0.0)) {
            return refuse(format!("rate {r}: expected I/Os per second above zero"));
        }
        if load.size == Some(0) {
            return refuse("size 0: expected a size above zero".into());
        }
        if let Some(j) = load.jobs {
            if j == 0 || j as usize > self.worker_files.len() {
                return refuse(format!(
                    "{j} workers asked of a stage validated for {}",
                    self.worker_files.len()
                ));
            }
        }
        if let Some(bs) = load.bs {
            if bs == 0 || bs > self.len_under(load) {
                return refuse(format!(
                    "--bs {} is larger than the {} of each file used",
                    format_size(bs),
                    format_size(self.len_under(load))
                ));
            }
        }
        Ok(())
    }

    /// The spec of one worker over `targets` under `load` (the engine turns the job's
    /// options into it; this says where and how the job runs here).
    pub fn worker_spec(
        &self,
        load: &StageLoad,
        work: stormark_engine::Load,
        targets: Vec<FileTarget>,
        ramp: Duration,
        seed: u64,
        hosts: u32,
    ) -> WorkerSpec {
        let at = JobPlacement {
            direct: self.direct,
            workers: self.workers(load),
            len: self.len_under(load),
            // An open-loop rate is shared among the hosts that run the job.
            hosts: self.job.hosts_running(hosts),
        };
        WorkerSpec::for_job(&self.job, load, &at, work, targets, ramp, seed)
    }
}

/// The random seed of one worker: differs by stage, job and worker.
pub(super) fn seed(stage: usize, job: usize, worker: usize) -> u64 {
    let mut x = (stage as u64) << 40 ^ (job as u64) << 20 ^ worker as u64 ^ 0x243F_6A88_85A3_08D3;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^ (x >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_differ() {
        assert_ne!(seed(0, 0, 0), seed(0, 0, 1));
        assert_ne!(seed(0, 1, 0), seed(1, 0, 0));
    }

    /// The plan's jobs (what a phase shows when every worker failed) say direct for a job
    /// that asks for O_DIRECT before it is probed, buffered for one that does not, and what
    /// was decided once it is.
    #[test]
    fn a_planned_job_shows_the_direct_it_asks_for() {
        let job = |direct: &str| {
            let mut o = stormark_spec::JobOpts::default();
            o.set("direct", direct, stormark_spec::Source::Flag)
                .unwrap();
            o.resolve("j").unwrap()
        };
        let load = StageLoad::default();
        let run = |j: Job, backend: Backend, direct: bool| JobRun {
            direct,
            ..JobRun::without_files(&j, backend)
        };
        assert!(
            run(job("true"), Backend::Psync, false)
                .phase_job(&load, false)
                .direct
        );
        assert!(
            !run(job("false"), Backend::Psync, false)
                .phase_job(&load, false)
                .direct
        );
        assert!(
            run(job("auto"), Backend::IoUring, true)
                .phase_job(&load, false)
                .direct
        );
        assert!(
            !run(job("true"), Backend::Null, false)
                .phase_job(&load, false)
                .direct
        );
    }
}
