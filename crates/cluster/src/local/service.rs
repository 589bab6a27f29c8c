//! What a job asks of a service measured from user space (an iSCSI LUN, an NFS share) that
//! stormark does not run over it yet: the checks `lun.rs` and `share.rs` share, each refusal
//! one line before any load.

use stormark_spec::{EngineChoice, Job, LoadKind};

use super::planning::check_job_here;
use crate::agent::AgentError;

/// A service's name in messages (`iSCSI`, `NFS`), what it takes (`block I/O`, `file I/O`),
/// and the target as the user wrote it.
pub(super) struct Service<'a> {
    pub name: &'static str,
    pub takes: &'static str,
    pub shown: &'a str,
}

impl Service<'_> {
    /// Refuses `why` of `job`, naming the service.
    pub fn not_yet(&self, job: &Job, what: &str) -> AgentError {
        AgentError::job(
            &job.name,
            format!(
                "{what} is not run over {} yet; leave it out for {}",
                self.name, self.shown
            ),
        )
    }

    /// The checks every service's jobs pass: what the job asks of this host, reads and writes
    /// only, none of what its loop does not run (`--verify-only`, fio's zoned mode, flow and
    /// thinktime, `--atomic`, deduplicated writes).
    pub fn check(&self, job: &Job, notes: &mut Vec<String>) -> Result<(), AgentError> {
        check_job_here(job, notes)?;
        if job.kind != LoadKind::File {
            return Err(AgentError::job(
                &job.name,
                format!(
                    "{} takes {} (reads and writes); this job's load is {}",
                    self.shown,
                    self.takes,
                    job.kind.name()
                ),
            ));
        }
        if job.verify_only {
            return Err(AgentError::option(
                "--verify-only",
                format!("checks what a kept run left in its run directory; {} keeps none: run --verify, which checks every block it wrote once the load ends", self.shown),
            ));
        }
        if job.zoned.is_some() || job.flow.is_some() || !job.thinktime.is_zero() {
            return Err(self.not_yet(job, "fio's zoned mode, flow or thinktime"));
        }
        if job.atomic {
            return Err(self.not_yet(job, "--atomic"));
        }
        if job.fresh {
            return Err(self.not_yet(job, "--fresh"));
        }
        if job.dedup_ratio > 1.0 {
            return Err(self.not_yet(job, "--dedup-ratio"));
        }
        if job.engine != EngineChoice::Auto {
            super::push_once(
                notes,
                format!(
                    "job {}: --engine {} is for files and devices; {} is reached over stormark's own {} client",
                    job.name,
                    job.engine.name(),
                    self.shown,
                    self.name
                ),
            );
        }
        Ok(())
    }
}
