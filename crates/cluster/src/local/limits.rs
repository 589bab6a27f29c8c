//! Limits checked before anything is allocated or opened: buffer memory against what the host
//! has available, open files against `RLIMIT_NOFILE` (raised as fio does), and the number of
//! files a run may plan at all.

use stormark_engine::{buffer_bytes, Backend, DataShape};
use stormark_spec::Job;

use crate::agent::AgentError;

/// The most files one run plans (a million: beyond, the plan itself costs real memory).
pub(super) const MAX_FILES: u64 = 1_000_000;

/// Share of the host's available memory that I/O buffers may take.
const BUFFER_SHARE: f64 = 0.5;

/// One job of a stage as it would run: its workers, files each, largest block and depth.
pub(super) struct Need {
    pub name: String,
    pub workers: u64,
    pub files: u64,
    pub bs_max: u64,
    pub iodepth: u64,
    pub backend: Backend,
    pub reads: bool,
    pub writes: bool,
    pub data: DataShape,
    /// Its workers open one file or device each (a target used in place), not their files.
    pub existing: bool,
}

impl Need {
    /// What `job` needs with `backend`.
    pub fn of(job: &Job, backend: Backend) -> Need {
        Need {
            name: job.name.clone(),
            workers: u64::from(job.jobs),
            // A meta worker holds each directory of its tree open.
            files: job
                .meta
                .as_ref()
                .map_or(u64::from(job.files), |m| m.tree.dirs()),
            bs_max: match (&job.s3, &job.net) {
                // A meta worker's write and read buffers.
                _ if job.meta.is_some() => job
                    .meta
                    .as_ref()
                    .map_or(0, |m| m.file_size)
                    .clamp(1, 1 << 20),
                (Some(s), _) => {
                    let swept = s.prepare_sizes.iter().copied().max().unwrap_or(0);
                    s.obj_size.max.max(swept)
                }
                (_, Some(n)) => u64::from(n.msg_size),
                _ => job.bs.max,
            },
            iodepth: u64::from(job.iodepth),
            backend,
            reads: job.read_pct() > 0,
            writes: job.read_pct() < 100,
            data: DataShape {
                zero: job.zero_buffers,
                compress_ratio: job.compress_ratio,
                dedup_ratio: job.dedup_ratio,
                dedup_block: job.dedup_block,
                pattern: job.buffer_pattern,
                // A working set's blocks are made as written: its size takes no memory.
                dedup_set: u64::from(job.dedup_working_set.is_some()),
                dedup_set_seed: 0,
            },
            existing: false,
        }
    }

    /// The same, on a target used in place (`existing`) or a run directory.
    pub fn on(mut self, existing: bool) -> Need {
        self.existing = existing;
        self
    }

    fn buffer_bytes(&self) -> u128 {
        let slots = match self.backend {
            Backend::IoUring | Backend::Iscsi | Backend::Nfs => self.iodepth.max(1),
            Backend::Psync => 1,
            Backend::S3 => {
                let one = stormark_engine::s3_body_bytes(self.bs_max, self.reads, &self.data);
                return u128::from(self.workers) * one;
            }
            Backend::Null => return 0,
            // A message buffer per stream.
            Backend::Net => return u128::from(self.workers) * u128::from(self.bs_max),
            Backend::Meta => return 2 * u128::from(self.workers) * u128::from(self.bs_max),
        };
        let one = buffer_bytes(slots, self.bs_max, self.reads, self.writes, &self.data);
        u128::from(self.workers) * one
    }

    fn open_files(&self) -> u64 {
        match self.backend {
            Backend::Null | Backend::S3 | Backend::Net => 0,
            _ if self.existing => self.workers,
            _ => self.workers.saturating_mul(self.files),
        }
    }
}

/// Checks one stage (jobs that run at the same time, on one target or several of this host).
pub(super) fn check_stage(jobs: &[Need]) -> Result<(), AgentError> {
    let buffers: u128 = jobs.iter().map(Need::buffer_bytes).sum();
    if let Some(avail) = mem_available() {
        let budget = (avail as f64 * BUFFER_SHARE) as u128;
        if buffers > budget {
            let worst = jobs
                .iter()
                .max_by_key(|n| n.buffer_bytes())
                .expect("a stage with buffers has a job");
            let need = super::human(buffers.min(u128::from(u64::MAX)) as u64);
            let have = super::human(avail);
            return Err(AgentError::job(&worst.name, match worst.backend {
                Backend::S3 => format!(
                    "object buffers need {need} (the largest object, {}, for each of {} connections), more than half of the {have} this host has available; lower --obj-size or --concurrency",
                    super::human(worst.bs_max),
                    worst.workers
                ),
                Backend::Net => format!(
                    "message buffers need {need} ({} per stream × {} streams), more than half of the {have} this host has available; lower msg_size or jobs",
                    super::human(worst.bs_max),
                    worst.workers
                ),
                _ => format!(
                    "I/O buffers need {need} (block size × iodepth × jobs, and a 4 MiB pool of write data per job), more than half of the {have} this host has available; lower --bs, --iodepth or --jobs"
                ),
            }));
        }
    }
    let files: u64 = jobs.iter().map(Need::open_files).sum();
    // Room for the process's own descriptors (rings, sockets, the sampler).
    let needed = files.saturating_add(64);
    let limit = raise_nofile(needed);
    if needed > limit {
        return Err(AgentError::Limit(format!(
            "{files} files open at once (jobs × files), more than this host allows (ulimit -n {limit}); lower --jobs or --files, or raise the limit"
        )));
    }
    Ok(())
}

/// Raises the soft limit of open files towards `needed` (up to the hard limit, as fio does);
/// returns the soft limit in force.
fn raise_nofile(needed: u64) -> u64 {
    // SAFETY: zeroed is a valid rlimit; getrlimit fills it.
    let mut r: libc::rlimit = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return u64::MAX;
    }
    if r.rlim_cur >= needed {
        return r.rlim_cur;
    }
    let want = libc::rlimit {
        rlim_cur: needed.min(r.rlim_max),
        rlim_max: r.rlim_max,
    };
    // SAFETY: want is a valid rlimit no larger than the hard limit.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) } == 0 {
        want.rlim_cur
    } else {
        r.rlim_cur
    }
}

/// `MemAvailable` from /proc/meminfo, bytes.
pub(super) fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn need(workers: u64, files: u64, bs: u64, depth: u64) -> Need {
        Need {
            name: "j".into(),
            workers,
            files,
            bs_max: bs,
            iodepth: depth,
            backend: Backend::IoUring,
            reads: true,
            writes: false,
            data: DataShape::default(),
            existing: false,
        }
    }

    #[test]
    fn huge_buffers_and_file_counts_are_refused() {
        let e = check_stage(&[need(4096, 1, 1 << 30, 4096)]).unwrap_err();
        assert!(e.to_string().contains("I/O buffers need"), "{e}");
        // An S3 job's refusal names its own options and readable sizes.
        let s3 = Need {
            backend: Backend::S3,
            ..need(4096, 1, 5 << 30, 1)
        };
        let e = check_stage(&[s3]).unwrap_err().to_string();
        assert!(
            e.contains("--obj-size or --concurrency")
                && e.contains("5.0 GiB")
                && !e.contains("--bs"),
            "{e}"
        );
        let e = check_stage(&[need(4096, 65536, 4096, 1)]).unwrap_err();
        assert!(e.to_string().contains("ulimit -n"), "{e}");
        assert!(check_stage(&[need(4, 2, 4096, 32)]).is_ok());
        // One file or device: one descriptor per worker, whatever --files says.
        assert!(check_stage(&[need(4, 65536, 4096, 1).on(true)]).is_ok());
        // Several targets at once (issue 55): each fits alone, together they do not.
        if let Some(avail) = mem_available() {
            // A read-only worker of depth 1 holds one block: 30 % of what is available each.
            let bs = (avail as f64 * 0.3) as u64 / 4096 * 4096;
            assert!(check_stage(&[need(1, 1, bs, 1)]).is_ok());
            let e = check_stage(&[need(1, 1, bs, 1), need(1, 1, bs, 1)]).unwrap_err();
            assert!(e.to_string().contains("I/O buffers need"), "{e}");
        }
        let files = |existing| need(4096, 32768, 4096, 1).on(existing);
        assert!(check_stage(&[files(true), files(true)]).is_ok());
        assert!(check_stage(&[files(true), files(false)]).is_err());
        // Writes cycle through a 4 MiB pool per worker: counted.
        let writer = Need {
            writes: true,
            ..need(1, 1, 4096, 1)
        };
        assert_eq!(
            writer.buffer_bytes(),
            4096 + stormark_engine::POOL_BYTES as u128
        );
    }
}
