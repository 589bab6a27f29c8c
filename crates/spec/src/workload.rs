//! A job's options as typed ([`JobOpts`]), resolved and validated ([`Job`]), and a
//! [`Workload`] of jobs run one after another or, when they share a group, together.

use std::time::Duration;

pub use crate::choices::{
    BlockSize, BsSplit, Direct, Distribution, EngineChoice, ExitWhat, Invalidate, LoadKind, Rw,
    SpRandom, SyncMode, Zoned, Zones, MAX_ZONES,
};
pub use crate::options::{canonical_key, JobOpts, Source, JOB_KEYS};
pub use crate::placement::{CmdPrio, CpuList, MemPolicy, PrioEntry, PrioSplit};
use crate::s3::S3Job;
use crate::search::SteadyState;
use crate::units::format_size;
use crate::SpecError;

/// Per-file size used for a directory target when no `--size` is given.
pub const DEFAULT_FILE_SIZE: u64 = 1 << 30;

/// A job resolved and validated: every option has its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// What it loads.
    pub kind: LoadKind,
    /// Name, unique within a workload.
    pub name: String,
    /// Jobs with the same group run at the same time.
    pub group: Option<String>,
    /// The hosts of a distributed run it runs on, as indexes once the run's agents are known
    /// (`None`: every host). The others run it with no workers ([`Workload::on_host`]).
    pub hosts: Option<crate::OnHosts>,
    /// I/O pattern.
    pub rw: Rw,
    /// Share of reads in mixed patterns, percent.
    pub rwmixread: u8,
    /// Share of random offsets, percent.
    pub random_pct: u8,
    /// How random offsets fall over a file.
    pub distribution: crate::Distribution,
    /// Block sizes by share (fio's `bssplit`), within `bs`'s range.
    pub bs_split: Option<crate::BsSplit>,
    /// Bytes a sequential pattern moves on (or back, negative) after each I/O beyond it.
    pub seq_add: i64,
    /// I/Os from each random offset before a new one is drawn (fio's `rw=randread:N`; 1:
    /// every I/O its own).
    pub rand_run: u32,
    /// Within such a run the same offset each time, not the next (fio's
    /// `rw_sequencer=identical`).
    pub rand_run_same: bool,
    /// Random offsets visit each block once per pass, none twice, as fio's random map (its
    /// default); `false`: drawn with repeats (fio's `norandommap`, stormark's default).
    pub random_map: bool,
    /// fio's strided zones: where a worker's I/Os fall moves on zone by zone.
    pub zones: Option<Zones>,
    /// fio's SPRandom preconditioning: the random writes' offsets, and where they end.
    pub sprandom: Option<SpRandom>,
    /// fio's zoned block device mode: writes at each zone's write pointer (see [`Zoned`]).
    pub zoned: Option<Zoned>,
    /// Where the region used starts in a file or device the workers share (fio's `offset`).
    pub offset: u64,
    /// What each further worker adds to `offset` (fio's `offset_increment`).
    pub offset_increment: u64,
    /// One file in the run directory its workers share, as every job naming it does (fio's
    /// `filename=NAME` in a `directory=`); `None`: each worker its own files.
    pub filename: Option<String>,
    /// Its writes go into new files the file system allocates as they are written (IOR's
    /// default; fio's `fallocate=none`, `file_append`): each of its phases starts from empty
    /// files, nothing reserved or written before.
    pub fresh: bool,
    /// Worker N works in the files of worker N + `file_shift` (modulo the workers): IOR's
    /// `-C`, a task reading back what another wrote.
    pub file_shift: u32,
    /// `size` as a share of the file or device, percent (fio's `size=95%`): settled by
    /// [`Job::on_length`] where the target's length is known.
    pub size_pct: Option<u8>,
    /// `offset` as a share of the file or device, percent (fio's `offset=50%`).
    pub offset_pct: Option<u8>,
    /// An open loop's I/Os arrive as a Poisson process (exponential gaps of the same mean)
    /// rather than evenly (fio's `rate_process=poisson`).
    pub rate_poisson: bool,
    /// The target this job runs on, in a run of several (`stormark run T1 T2`, a fio job
    /// file whose jobs name different devices); `None`: the run's one target. Set by the
    /// request, never a job file's key.
    pub target: Option<String>,
    /// Passes over the size before the job stops, when its size is a share (fio's `loops`
    /// with `size=95%`): `io_total` once the size is known.
    pub loops: Option<u32>,
    /// A pause after every `thinktime_blocks` I/Os of a worker (fio's `thinktime`; zero:
    /// none), its first `thinktime_spin` spinning.
    pub thinktime: Duration,
    /// The busy part of each pause (fio's `thinktime_spin`).
    pub thinktime_spin: Duration,
    /// I/Os between pauses (fio's `thinktime_blocks`, default 1).
    pub thinktime_blocks: u32,
    /// Block size or range.
    pub bs: BlockSize,
    /// Offset and size alignment, bytes.
    pub bs_align: u64,
    /// I/Os in flight per worker.
    pub iodepth: u32,
    /// Parallel workers.
    pub jobs: u32,
    /// Files per worker.
    pub files: u32,
    /// Bytes per file; `None` takes the whole file or device, or [`DEFAULT_FILE_SIZE`].
    pub size: Option<u64>,
    /// Measured duration; with neither this nor `io_total`, one pass over the working set.
    pub time: Option<Duration>,
    /// Bytes per worker after which it stops.
    pub io_total: Option<u64>,
    /// `O_DIRECT` choice.
    pub direct: Direct,
    /// Engine choice.
    pub engine: EngineChoice,
    /// Warm-up before measuring.
    pub ramp: Duration,
    /// The wait after the stage starts before the job's first I/O (fio's `startdelay`); its
    /// time is counted from then.
    pub start_delay: Duration,
    /// When a buffered job's files leave the page cache: before it starts (the default), never,
    /// or before each pass as fio does.
    pub invalidate: Invalidate,
    /// The job's files are held in the page cache (mmap + mlock) from before the load to the
    /// run's end, so that nothing evicts them (a DAMON pageout scheme, memory pressure): for
    /// runs that mean to measure the cache. Buffered I/O only.
    pub pin_cache: bool,
    /// Write buffers hold zeros rather than random bytes (fio's `zero_buffers`): what a
    /// compressing or deduplicating target stores in almost no space.
    pub zero_buffers: bool,
    /// Write buffers repeat these bytes (fio's `buffer_pattern`), what a compressing target
    /// sees of a fill; the random share of `compress_ratio` still varies them.
    pub buffer_pattern: Option<crate::FillPattern>,
    /// Synchronous writes from the open flags (fio's `sync`).
    pub sync: SyncMode,
    /// `fsync` the file after every this many writes of a worker (fio's `fsync`); 0: never.
    pub fsync: u32,
    /// `fdatasync` instead, after every this many writes (fio's `fdatasync`); 0: never.
    pub fdatasync: u32,
    /// `fsync` every file written when the job ends, timed (fio's `end_fsync`).
    pub end_fsync: bool,
    /// Buffered files are advised as the pattern reads them, random (no readahead) or
    /// sequential, as fio does by default (its `fadvise_hint`).
    pub fadvise_hint: bool,
    /// What a compressor achieves on the written data (1: incompressible, the default).
    pub compress_ratio: f64,
    /// Written blocks over distinct blocks (1: every block unique, the default).
    pub dedup_ratio: f64,
    /// The unit of deduplication, bytes (the smallest block size unless given).
    pub dedup_block: u64,
    /// Duplicates copies of blocks drawn from a working set of this share of the job's
    /// bytes, percent (fio's `dedupe_mode=working_set`); `None`: of eight blocks.
    pub dedup_working_set: Option<u8>,
    /// Every worker draws from one working set (fio's `dedupe_global`), or each from its own.
    pub dedup_global: bool,
    /// Each write all or nothing on a crash (`RWF_ATOMIC`, fio's `atomic`): direct, one block
    /// size, where the file system or device takes atomic writes of that size.
    pub atomic: bool,
    /// Written blocks carry headers, read back and checked after the load (file jobs).
    pub verify: bool,
    /// Only check what a `--keep` run with `--verify` left: nothing is written.
    pub verify_only: bool,
    /// With `verify`: the written blocks checked after the load (fio's `do_verify`); `false`:
    /// headers written and the expected state kept for a later job or `--verify-only`.
    pub verify_after: bool,
    /// With `verify`: bytes per verified block, each with its header (fio's
    /// `verify_interval`); `None`: the largest unit every I/O's offset and size are made of.
    pub verify_interval: Option<u64>,
    /// With `verify`: the share of the written blocks trimmed once the load is over, before
    /// the check (fio's `trim_percentage`; 0: none).
    pub trim_percentage: u8,
    /// Those blocks must read back as zeros; `false`: they are not checked (fio's
    /// `trim_verify_zero`, default 1).
    pub trim_verify_zero: bool,
    /// Write until the file system or device is full (fio's `fill_device`): the size the free
    /// space unless given, and ENOSPC the job's end, not its failure.
    pub fill_device: bool,
    /// New I/Os per submitting system call (fio's `iodepth_batch_submit`, default 1).
    pub iodepth_batch: u32,
    /// Fewest completions waited for before reaping, or all in flight where fewer are (fio's
    /// `iodepth_batch_complete`, or `iodepth_batch_complete_min`; default 1).
    pub iodepth_batch_complete: u32,
    /// Most completions reaped before refilling (fio's `iodepth_batch_complete_max`): at
    /// least `iodepth_batch_complete`, which it is unless given.
    pub iodepth_batch_complete_max: u32,
    /// With the queue full, no refill until this few I/Os are in flight (fio's
    /// `iodepth_low`; `None`: refill as each completes).
    pub iodepth_low: Option<u32>,
    /// No I/O is issued while one of the worker's in flight overlaps it (fio's
    /// `serialize_overlap`).
    pub serialize_overlap: bool,
    /// The io_uring features asked for (fio's `fixedbufs`, `registerfiles`, `sqthread_poll`,
    /// `hipri`).
    pub ring: Ring,
    /// Open loop: total I/Os per second over all workers and hosts (`None`: closed loop).
    pub rate_iops: Option<u32>,
    /// The S3 part of a job of kind s3.
    pub s3: Option<S3Job>,
    /// The network part of a job of kind net.
    pub net: Option<crate::net::NetJob>,
    /// The metadata part of a job of kind meta.
    pub meta: Option<crate::meta::MetaJob>,
    /// The ramp ends once this figure is steady (the ramp then bounds how long to wait).
    pub steady_state: Option<SteadyState>,
    /// Each worker fails when a measured second of its reads (or writes) moves fewer bytes
    /// than this (fio's `ratemin`; 0: none for that direction).
    pub rate_min: Option<[u64; 2]>,
    /// The same in I/Os a second (fio's `rate_iops_min`).
    pub rate_iops_min: Option<[u64; 2]>,
    /// When a worker of the job ends, these jobs stop (fio's `exitall` and `exit_what`).
    pub exit: Option<crate::choices::ExitWhat>,
    /// When a worker of the job fails, the workers running with it stop (fio's
    /// `exitall_on_error`).
    pub exit_on_error: bool,
    /// Errors of these kinds (as results name them: `enospc`, `errno-61`) are counted but do
    /// not fail the run (fio's `ignore_error`).
    pub ignore_errors: Vec<String>,
    /// Where the workers run and take their memory (fio's `cpus_allowed`, `numa_*`).
    pub placement: Placement,
    /// fio's `flow`: the job's share of the I/Os among the jobs of its flow on a host.
    pub flow: Option<Flow>,
}

impl Job {
    /// Share of reads, percent.
    pub fn read_pct(&self) -> u8 {
        self.rw.read_pct(self.rwmixread)
    }

    /// The job on a file or device of `total` bytes: its shares of it (fio's `size=95%`,
    /// `offset=50%`) as bytes, offsets a multiple of `align`.
    pub fn on_length(&self, total: u64, align: u64) -> Job {
        let share = |pct: u8| (u128::from(total) * u128::from(pct) / 100) as u64;
        let mut job = self.clone();
        if let Some(p) = self.offset_pct {
            job.offset = share(p) / align.max(1) * align.max(1);
        }
        if let Some(p) = self.size_pct {
            let size = share(p).max(self.bs.max);
            job.size = Some(size);
            if let (Some(n), None) = (self.loops, self.io_total) {
                job.io_total = Some(size.saturating_mul(u64::from(n)));
            }
        }
        job
    }

    /// Whether errors of `kind` (stormark's name, `enospc`) are counted without failing the
    /// run: those `ignore_errors` names, and a full file system where the job fills it (ENOSPC,
    /// or the short write that found room for part of its bytes).
    pub fn ignores(&self, kind: &str) -> bool {
        self.ignore_errors.iter().any(|k| k == kind)
            || (self.fill_device && matches!(kind, "enospc" | "short"))
    }

    /// Where worker `w`'s region starts in a file or device the workers share: fio's
    /// `offset + w * offset_increment`.
    pub fn region_start(&self, w: u64) -> u64 {
        self.offset
            .saturating_add(w.saturating_mul(self.offset_increment))
    }

    /// The pattern as fio writes it: `read`, or `read:-8k` with a sequential step.
    pub fn rw_text(&self) -> String {
        if self.rand_run > 1 {
            return format!("{}:{}", self.rw.name(), self.rand_run);
        }
        match self.seq_add {
            0 => self.rw.name().to_string(),
            n if n < 0 => format!("{}:-{}", self.rw.name(), format_size(n.unsigned_abs())),
            n => format!("{}:{}", self.rw.name(), format_size(n as u64)),
        }
    }

    /// Whether one run of the job writes every byte of each of its files once and nothing
    /// else, ending by itself: what is read after it needs no preparation, and a kept file
    /// it wrote is as good as prepared.
    pub fn writes_in_full(&self) -> bool {
        let once = self.time.is_none()
            && self.io_total.is_none_or(|t| {
                t >= self
                    .size
                    .unwrap_or(u64::MAX)
                    .saturating_mul(u64::from(self.files))
            })
            && self.loops.is_none_or(|l| l >= 1);
        let every_block = self.random_pct == 0 || self.random_map;
        self.kind == LoadKind::File
            && self.read_pct() == 0
            && !self.rw.trims()
            && once
            && every_block
            && self.seq_add == 0
            && self.rand_run <= 1
            && self.zones.is_none()
            && self.sprandom.is_none()
            && self.zoned.is_none()
            && self.size.is_some()
            && self.size_pct.is_none()
            && !self.verify_only
            && !self.fill_device
            && self.exit.is_none()
            && self.rate_min.is_none()
            && self.rate_iops_min.is_none()
    }
}

/// fio's `flow`: the jobs of one flow (`flow_id`) on a host share their I/Os by weight, each
/// worker with `weight` of the flow's total; one ahead of its share pauses `sleep` (or
/// yields the CPU) before its next I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flow {
    /// The weight of each worker of the job.
    pub weight: u32,
    /// Which flow.
    pub id: u32,
    /// The pause of a worker ahead of its share.
    pub sleep: Duration,
}

/// Where a job's workers run and where their memory comes from: fio's `cpus_allowed` (and
/// `cpumask`), `cpus_allowed_policy`, `numa_cpu_nodes` and `numa_mem_policy`. Settled on the
/// host that runs them (which CPUs its nodes hold).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Placement {
    /// The CPUs allowed (`None`: any).
    pub cpus: Option<CpuList>,
    /// Each worker on one of them in turn.
    pub split: bool,
    /// The CPUs of these nodes (with `cpus`, those of both).
    pub nodes: Option<CpuList>,
    /// Where memory comes from (`None`: as the process's).
    pub mem: Option<MemPolicy>,
    /// The threads' CPU priority (fio's `nice`).
    pub nice: Option<i8>,
    /// The threads' I/O priority: class (1 real time, 2 best effort, 3 idle) and level 0-7
    /// (fio's `prioclass` and `prio`).
    pub ioprio: Option<(u8, u8)>,
    /// A share of the I/Os submitted with a priority of their own (fio's `cmdprio_*`).
    pub cmdprio: Option<CmdPrio>,
}

impl Placement {
    /// Whether it asks for anything.
    pub fn any(&self) -> bool {
        self.cpus.is_some()
            || self.nodes.is_some()
            || self.mem.is_some()
            || self.nice.is_some()
            || self.ioprio.is_some()
            || self.cmdprio.is_some()
    }
}

/// What to run: jobs in order, plus the options of the whole run.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// The jobs, in the order given.
    pub jobs: Vec<Job>,
    /// Write every file fully before the measured phases.
    pub prepare: bool,
}

impl Job {
    /// Whether host `host` of the run runs this job (its `hosts`, or every host).
    pub fn runs_on(&self, host: usize) -> bool {
        self.hosts.as_ref().is_none_or(|h| h.contains(host))
    }

    /// How many of a run's `total` hosts run it: an open-loop rate is shared among them.
    pub fn hosts_running(&self, total: u32) -> u32 {
        self.hosts
            .as_ref()
            .map_or(total, |h| h.count(total as usize) as u32)
    }
}

impl Workload {
    /// Builds a workload and checks that job names are unique.
    pub fn new(jobs: Vec<Job>, prepare: bool) -> Result<Workload, SpecError> {
        for (i, job) in jobs.iter().enumerate() {
            if jobs[..i].iter().any(|j| j.name == job.name) {
                return Err(SpecError::invalid(
                    "name",
                    &job.name,
                    "a name used by one job only; rename one of the jobs",
                ));
            }
        }
        if jobs.is_empty() {
            return Err(SpecError::invalid("job", "(none)", "at least one job"));
        }
        Ok(Workload { jobs, prepare })
    }

    /// The workload as host `host` of a run runs it: a job whose `hosts` leave this host out
    /// keeps its place (stages and jobs are numbered alike on every host) with no workers, so
    /// it makes no files, prepares nothing and loads nothing here.
    pub fn on_host(&self, host: usize) -> Workload {
        let mut w = self.clone();
        for job in &mut w.jobs {
            if !job.runs_on(host) {
                job.jobs = 0;
            }
        }
        w
    }

    /// The stages of the run, in order: each is one job, or every job of one group (placed
    /// where the group first appears), run at the same time.
    pub fn stages(&self) -> Vec<Vec<&Job>> {
        let mut stages: Vec<(Option<&str>, Vec<&Job>)> = Vec::new();
        for job in &self.jobs {
            match job.group.as_deref() {
                Some(g) => match stages.iter_mut().find(|(name, _)| *name == Some(g)) {
                    Some((_, jobs)) => jobs.push(job),
                    None => stages.push((Some(g), vec![job])),
                },
                None => stages.push((None, vec![job])),
            }
        }
        stages.into_iter().map(|(_, jobs)| jobs).collect()
    }
}

mod pairs;
mod ring;
pub use ring::Ring;

#[cfg(test)]
mod tests;
