//! What a worker is told: its backend, files, block sizes, depth, stop rule and the rest,
//! decided before it starts.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use stormark_spec::{Job, StageLoad, SteadyState};

use crate::files::{open_checked, Dir, Identity};
pub use crate::work::Backend;

/// A file or device a worker does I/O on, from offset 0 to `len`.
#[derive(Debug, Clone)]
pub struct FileTarget {
    /// Where it is: a name beneath a run directory held open, or a path the user named.
    pub place: Place,
    /// What it must be when opened (`None`: anything regular, for tests and probes).
    pub expect: Option<Identity>,
    /// Where the region used begins (fio's `offset`; 0 for stormark's own files).
    pub start: u64,
    /// Bytes used, from `start`.
    pub len: u64,
}

/// Where a [`FileTarget`] is opened from.
#[derive(Debug, Clone)]
pub enum Place {
    /// A path, followed as given (a target the user named).
    Path(PathBuf),
    /// A single name inside a run directory, opened beneath its descriptor, never through a link.
    Beneath {
        /// The run directory.
        dir: Arc<Dir>,
        /// The file's name in it.
        name: String,
    },
    /// A file of an NFS share, read and written by the handle its GUARDED CREATE gave in the
    /// run directory held by handle: never looked up by name again, so that whatever is put
    /// under its name, or its directory's, later is never reached.
    Share {
        /// The file's NFSv3 handle.
        handle: stormark_nfs::Handle,
        /// Where it was made, for messages (`nfs://SERVER/EXPORT/DIR/RUN/NAME`).
        shown: PathBuf,
    },
}

impl FileTarget {
    /// A target at `path`, any regular file or block device.
    pub fn path(path: impl Into<PathBuf>, len: u64) -> FileTarget {
        FileTarget {
            place: Place::Path(path.into()),
            expect: None,
            start: 0,
            len,
        }
    }

    /// The path, for messages.
    pub fn shown(&self) -> PathBuf {
        match &self.place {
            Place::Path(p) => p.clone(),
            Place::Beneath { dir, name } => dir.shown(name),
            Place::Share { shown, .. } => shown.clone(),
        }
    }

    /// Opens it for reading (and writing) and checks it is what was validated.
    pub fn open(&self, write: bool, direct: bool) -> std::io::Result<File> {
        self.open_with(write, direct, 0)
    }

    /// [`FileTarget::open`] with extra open flags for writing (`O_DSYNC`, `O_SYNC`). Opened
    /// without access-time updates (`O_NOATIME`, as fio's `t/io_uring` opens): the run leaves
    /// a file's times as it found them, and no read pays the check (about 1.5% of a
    /// page-cached 4 KiB read); where the file is another user's (`EPERM`), as usual.
    pub fn open_with(&self, write: bool, direct: bool, sync_flags: i32) -> std::io::Result<File> {
        match self.open_flags(write, direct, sync_flags | libc::O_NOATIME) {
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                self.open_flags(write, direct, sync_flags)
            }
            opened => opened,
        }
    }

    fn open_flags(&self, write: bool, direct: bool, extra: i32) -> std::io::Result<File> {
        let mut flags = if write {
            libc::O_RDWR | extra
        } else {
            libc::O_RDONLY | (extra & libc::O_NOATIME)
        };
        if direct {
            flags |= libc::O_DIRECT;
        }
        let file = match &self.place {
            Place::Beneath { dir, name } => dir.open_file(name, flags)?,
            Place::Share { .. } => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::Unsupported,
                    "a share's file, read and written over NFS by its handle, not opened here",
                ))
            }
            Place::Path(p) => match self.expect {
                Some(id) => return open_checked(p, flags, id),
                None => {
                    let mut o = OpenOptions::new();
                    o.read(true).write(write).custom_flags(
                        flags & (libc::O_DIRECT | libc::O_DSYNC | libc::O_SYNC | libc::O_NOATIME),
                    );
                    o.open(p)?
                }
            },
        };
        if let Some(id) = self.expect {
            if Identity::of(&file)? != id {
                return Err(std::io::Error::other(
                    "no longer the file stormark created or validated (replaced since?)",
                ));
            }
        }
        Ok(file)
    }
}

/// When a worker stops: whichever comes first. With neither, it runs until told to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stop {
    /// Measured time, after the ramp.
    pub time: Option<Duration>,
    /// Bytes issued by this worker, ramp included (fio's `io_size`).
    pub io_total: Option<u64>,
}

/// Whether a job's load comes to the end of a pass over its files, where fio drops them from
/// the page cache: a forward stream wrapping at the end, a random map used up, a loop (an
/// `io_total` of whole passes). A stream going backwards wraps at its start and a time-based
/// random load without the map (fio's `norandommap`) never ends a pass: fio's cache then
/// holds what it read, and so does stormark's.
fn ends_passes(job: &stormark_spec::Job) -> bool {
    let backwards = job.seq_add < 0 && job.random_pct < 100;
    let unmapped = job.random_pct == 100 && !job.random_map && job.io_total.is_none();
    !(backwards || unmapped)
}

/// Everything one worker needs, decided before it starts.
#[derive(Debug, Clone)]
pub struct WorkerSpec {
    /// Files, used round-robin.
    pub files: Vec<FileTarget>,
    /// Share of reads, percent.
    pub read_pct: u8,
    /// Share of random offsets, percent.
    pub random_pct: u8,
    /// How random offsets fall over a file.
    pub distribution: stormark_spec::Distribution,
    /// Block sizes by share (fio's `bssplit`).
    pub bs_split: Option<stormark_spec::BsSplit>,
    /// What a sequential stream moves on (or back) after each I/O beyond it.
    pub seq_add: i64,
    /// I/Os from each random offset (fio's `rw=randread:N`; 1: each its own).
    pub rand_run: u32,
    /// Within such a run, the same offset each time (fio's `rw_sequencer=identical`).
    pub rand_run_same: bool,
    /// Random offsets visit each block once per pass (fio's random map).
    pub random_map: bool,
    /// fio's strided zones: the I/Os move on zone by zone.
    pub zones: Option<stormark_spec::Zones>,
    /// fio's SPRandom preconditioning: the writes' offsets its own, the worker done when it is.
    pub sprandom: Option<stormark_spec::SpRandom>,
    /// fio's zoned mode: writes at the zones' write pointers (see [`crate::zoned`]).
    pub zoned: Option<stormark_spec::Zoned>,
    /// The zones of the worker's file, shared with every worker on it for the run (set by
    /// the agent; `None` with `zoned` set: the worker's own).
    pub zone_map: Option<Arc<crate::zoned::ZoneMap>>,
    /// fio's `fill_device`: the first write that finds the space full (ENOSPC) ends the
    /// worker's load.
    pub fill: bool,
    /// fio's per-I/O priorities (io_uring): a share of the I/Os submitted with their own.
    pub cmdprio: Option<stormark_spec::CmdPrio>,
    /// Writes with torn-write protection (`RWF_ATOMIC`).
    pub atomic: bool,
    /// Errors of these kinds do not count toward giving up on a failing target (fio's
    /// `ignore_error`: the job goes on).
    pub ignore_errors: Vec<stormark_stats::ErrorKind>,
    /// Trims (1), or each trim followed by a write of its range (2, fio's `trimwrite`); 0:
    /// reads and writes.
    pub trim: u8,
    /// Smallest I/O.
    pub bs_min: u64,
    /// Largest I/O.
    pub bs_max: u64,
    /// Alignment of offsets and sizes.
    pub bs_align: u64,
    /// I/Os in flight (io_uring; psync always has one).
    pub iodepth: u32,
    /// New I/Os submitted per system call (fio's `iodepth_batch_submit`; 1 = each at once).
    pub iodepth_batch: u32,
    /// Fewest completions waited for before reaping, or all in flight where fewer are (fio's
    /// `iodepth_batch_complete_min`; 1 = the first).
    pub iodepth_batch_complete: u32,
    /// Most completions reaped before refilling (fio's `iodepth_batch_complete_max`; 1 = each).
    pub iodepth_batch_complete_max: u32,
    /// With the queue full, refill only once this few I/Os are in flight (fio's
    /// `iodepth_low`); `None`: as each completes.
    pub iodepth_low: Option<u32>,
    /// No I/O is issued while one in flight overlaps it (fio's `serialize_overlap`).
    pub serialize_overlap: bool,
    /// io_uring's registrations and setup (fio's `fixedbufs`, `registerfiles`,
    /// `sqthread_poll`, `hipri`).
    pub ring: stormark_spec::Ring,
    /// Open with `O_DIRECT`.
    pub direct: bool,
    /// What it loads (its backend), with the work of a backend that needs one.
    pub load: crate::work::Load,
    /// Stop rule.
    pub stop: Stop,
    /// Warm-up, discarded.
    pub ramp: Duration,
    /// Buffered: drop the files' cached pages before each pass over them, as fio does (the
    /// first pass's drop is the agent's, before the stage).
    pub invalidate_each_pass: bool,
    /// The wait after the stage's start before the first I/O (fio's `startdelay`).
    pub start_delay: Duration,
    /// fio's thinktime: a pause after every so many I/Os (`None`: none).
    pub think: Option<Think>,
    /// Seed of the offset generator and buffer contents.
    pub seed: u64,
    /// What writes carry: zeros, or bytes drawn from `seed` that compress and deduplicate as
    /// asked.
    pub data: crate::DataShape,
    /// `--verify`: headers in written blocks, checked after the load (or `--verify-only`).
    pub verify: Option<crate::VerifySpec>,
    /// Extra open flags of written files: `O_DSYNC` or `O_SYNC` (fio's `sync`), or 0.
    pub sync_flags: i32,
    /// Sync the file after every this many writes (0: never); `datasync` picks `fdatasync`.
    pub sync_every: u32,
    /// With `sync_every`: `fdatasync` rather than `fsync`.
    pub datasync: bool,
    /// `fsync` every file written when the loop ends (fio's `end_fsync`).
    pub end_fsync: bool,
    /// Advise the kernel how the files are read: random (no readahead) or sequential (fio's
    /// `fadvise_hint`, on by default in fio).
    pub fadvise_hint: bool,
    /// Write each file once, front to back, then stop (the preparation pass).
    pub write_once: bool,
    /// Empty each file before the gate, so that the writes allocate it afresh (`--fresh`).
    pub fresh: bool,
    /// Open loop: I/Os per second this worker issues on a fixed schedule (0: closed loop,
    /// each I/O as soon as a slot is free). Latency is then measured from each I/O's
    /// scheduled time, so that a stall shows in the numbers (coordinated omission corrected);
    /// the service time from submission is recorded beside it.
    pub rate_iops: f64,
    /// The open loop's I/Os due as a Poisson process of that mean rate (fio's
    /// `rate_process=poisson`), not evenly.
    pub rate_poisson: bool,
    /// End the ramp once this figure is steady (fio's `ss`): the ramp is then the most to
    /// wait. The stage watches every worker's ramp seconds and names the measured start.
    pub steady: Option<SteadyState>,
    /// The least each measured second must do, per direction (reads, writes): the worker
    /// fails on the first second below it (fio's `ratemin`, `rate_iops_min`).
    pub rate_min: RateMin,
    /// When this worker ends, the stage's other workers stop (fio's `exitall`), and with
    /// `All` nothing after the stage runs.
    pub exit: Option<stormark_spec::ExitWhat>,
    /// When this worker fails, the stage's other workers stop (fio's `exitall_on_error`).
    pub exit_on_error: bool,
    /// fio's `flow`: the worker's weight among its flow's workers on this host, and the
    /// flow's shared count (made by the stage for each `flow_id`).
    pub flow: Option<stormark_spec::Flow>,
    #[doc(hidden)]
    pub flow_group: Option<Arc<FlowGroup>>,
    /// The CPUs the worker's thread runs on (empty: any), set where the worker's index is
    /// known ([`crate::placement::worker_cpus`]).
    pub cpus: Vec<u16>,
    /// Where its memory comes from (fio's `numa_mem_policy`).
    pub mem_policy: Option<stormark_spec::MemPolicy>,
    /// Its thread's CPU priority (fio's `nice`).
    pub nice: Option<i8>,
    /// Its thread's I/O priority, class and level (fio's `prioclass`, `prio`).
    pub ioprio: Option<(u8, u8)>,
    /// Test hook: the null backend stalls for `.1` once, `.0` after the start.
    #[doc(hidden)]
    pub stall: Option<(Duration, Duration)>,
}

impl WorkerSpec {
    /// 4 KiB random reads at depth 1 over `files`, psync, until stopped: a base to fill in.
    pub fn new(files: Vec<FileTarget>) -> WorkerSpec {
        WorkerSpec {
            files,
            read_pct: 100,
            random_pct: 100,
            distribution: stormark_spec::Distribution::Random,
            bs_split: None,
            seq_add: 0,
            rand_run: 1,
            rand_run_same: false,
            random_map: false,
            zones: None,
            sprandom: None,
            zoned: None,
            zone_map: None,
            fill: false,
            cmdprio: None,
            atomic: false,
            ignore_errors: Vec::new(),
            trim: 0,
            bs_min: 4096,
            bs_max: 4096,
            bs_align: 4096,
            iodepth: 1,
            iodepth_batch: 1,
            iodepth_batch_complete: 1,
            iodepth_batch_complete_max: 1,
            iodepth_low: None,
            serialize_overlap: false,
            ring: stormark_spec::Ring::default(),
            direct: false,
            load: crate::work::Load::Psync,
            stop: Stop::default(),
            ramp: Duration::ZERO,
            invalidate_each_pass: false,
            start_delay: Duration::ZERO,
            think: None,
            seed: 1,
            data: crate::DataShape::default(),
            verify: None,
            sync_flags: 0,
            sync_every: 0,
            datasync: false,
            end_fsync: false,
            fadvise_hint: false,
            write_once: false,
            fresh: false,
            rate_iops: 0.0,
            rate_poisson: false,
            steady: None,
            rate_min: RateMin::default(),
            exit: None,
            exit_on_error: false,
            flow: None,
            flow_group: None,
            cpus: Vec::new(),
            mem_policy: None,
            nice: None,
            ioprio: None,
            stall: None,
        }
    }
}

/// The I/Os of one flow's workers on this host, and their weights: a worker issues only while
/// its own count is within its weight's share of the flow's (fio's `flow`).
#[derive(Debug)]
pub struct FlowGroup {
    /// I/Os issued by the flow's workers still running, and one: fio's count starts at 1
    /// (flow.c), which lets a light worker issue two I/Os a turn where it would issue one
    /// (and a heavy one twice its share), so each pause is shared by twice the I/Os.
    pub done: AtomicU64,
    /// The weights of its workers still running.
    pub weight: AtomicU64,
}

impl FlowGroup {
    /// Whether a worker of `weight` that has issued `own` of the flow's I/Os may issue the
    /// next (it is not ahead of its share), counting it if so: fio's flow_threshold_exceeded.
    #[inline]
    pub fn take(&self, own: &mut u64, weight: u32) -> bool {
        let done = self.done.load(Ordering::Relaxed);
        let total = self.weight.load(Ordering::Relaxed);
        if u128::from(*own) * u128::from(total) > u128::from(weight) * u128::from(done) {
            return false;
        }
        self.done.fetch_add(1, Ordering::Relaxed);
        *own += 1;
        true
    }
}

impl Default for FlowGroup {
    /// A flow no worker has joined yet.
    fn default() -> FlowGroup {
        FlowGroup {
            done: AtomicU64::new(1),
            weight: AtomicU64::new(0),
        }
    }
}

/// fio's `ratemin` and `rate_iops_min`: the least bytes and I/Os a second of reads and of
/// writes (0: no least).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RateMin {
    /// Bytes a second: reads, writes.
    pub bytes: [u64; 2],
    /// I/Os a second: reads, writes.
    pub ops: [u64; 2],
}

impl RateMin {
    /// Whether any least is set.
    pub fn any(&self) -> bool {
        self.bytes.iter().chain(&self.ops).any(|n| *n > 0)
    }

    /// Why a second of `done` (per direction: I/Os, bytes) falls short, for a direction the
    /// worker has done before (`seen`; fio judges only those), or `None`.
    pub fn short(&self, done: [(u64, u64); 2], seen: [bool; 2]) -> Option<String> {
        for (d, name) in ["reads", "writes"].iter().enumerate() {
            let (ops, bytes) = done[d];
            if !seen[d] {
                continue;
            }
            if self.bytes[d] > 0 && bytes < self.bytes[d] {
                return Some(format!(
                    "{name} moved {bytes} bytes in a second, below the least of {} (ratemin)",
                    self.bytes[d]
                ));
            }
            if self.ops[d] > 0 && ops < self.ops[d] {
                return Some(format!(
                    "{name} did {ops} I/Os in a second, below the least of {} (rate_iops_min)",
                    self.ops[d]
                ));
            }
        }
        None
    }
}

/// fio's thinktime: after every `every` I/Os the worker pauses for `time`, the first `spin` of
/// it busy on the CPU, the rest asleep; I/Os in flight complete first.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Think {
    /// I/Os between pauses (fio's `thinktime_blocks`).
    pub every: u32,
    /// The whole pause (fio's `thinktime`).
    pub time: Duration,
    /// Its busy part (fio's `thinktime_spin`).
    pub spin: Duration,
}

/// Where and how the workers of one job run on this host, decided by the agent from the
/// target and the kernel: what [`WorkerSpec::for_job`] needs beside the job itself.
#[derive(Debug, Clone, Copy)]
pub struct JobPlacement {
    /// Whether O_DIRECT is used.
    pub direct: bool,
    /// Workers of the job running under the load, on this host.
    pub workers: usize,
    /// Bytes of each file used (the job's size without files).
    pub len: u64,
    /// Hosts running the job together: an open-loop rate (a total) is shared among them.
    pub hosts: u32,
}

impl WorkerSpec {
    /// The spec of one worker of `job` under `load` over `files`, doing `work` (its backend,
    /// with what an S3, net or meta worker works on): the one place where a job's options
    /// become what a worker does. A new option of file load is read here.
    pub fn for_job(
        job: &Job,
        load: &StageLoad,
        at: &JobPlacement,
        work: crate::work::Load,
        files: Vec<FileTarget>,
        ramp: Duration,
        seed: u64,
    ) -> WorkerSpec {
        let (bs_min, bs_max, bs_align) = match (load.bs, work.backend()) {
            // S3, net and meta workers make their own bodies: the worker's buffer stays small.
            (_, Backend::S3 | Backend::Net | Backend::Meta) => (4096, 4096, 4096),
            (Some(bs), _) => (bs, bs, bs),
            (None, _) => (job.bs.min, job.bs.max, job.bs_align),
        };
        let rate = load.rate_iops.or(job.rate_iops.map(f64::from));
        // Without files (null load), one pass is the job's size.
        let one_pass: u64 = if files.is_empty() {
            at.len
        } else {
            files.iter().map(|t| t.len).sum()
        };
        let stop = match (job.time, job.io_total) {
            (None, None) => Stop {
                time: None,
                io_total: Some(one_pass),
            },
            (time, io_total) => Stop { time, io_total },
        };
        // fio's SPRandom ends by itself once every block is written and the stale share
        // again (about the physical capacity: the file's bytes and their over-provisioning),
        // unless told how much. fio also stops at the physical capacity, which leaves a few
        // blocks unwritten when the second writes draw high.
        let stop = match (job.sprandom, job.io_total) {
            (Some(_), None) => Stop {
                io_total: Some(u64::MAX),
                ..stop
            },
            _ => stop,
        };
        // fio's trimwrite trims each byte and then writes it: twice the bytes, as fio allows.
        let stop = match job.rw {
            stormark_spec::Rw::TrimWrite => Stop {
                io_total: stop.io_total.map(|b| b.saturating_mul(2)),
                ..stop
            },
            _ => stop,
        };
        let files_touched = work.backend().touches_files();
        WorkerSpec {
            files,
            read_pct: job.read_pct(),
            random_pct: job.random_pct,
            distribution: job.distribution,
            bs_split: job.bs_split,
            seq_add: job.seq_add,
            rand_run: job.rand_run,
            rand_run_same: job.rand_run_same,
            random_map: job.random_map,
            zones: job.zones,
            sprandom: job.sprandom,
            zoned: job.zoned,
            zone_map: None,
            cmdprio: job.placement.cmdprio,
            atomic: job.atomic,
            ignore_errors: ["enospc", "short"]
                .into_iter()
                .chain(job.ignore_errors.iter().map(String::as_str))
                .filter(|n| job.ignores(n))
                .filter_map(stormark_stats::ErrorKind::named)
                .collect(),
            fill: job.fill_device,
            trim: match job.rw {
                stormark_spec::Rw::Trim | stormark_spec::Rw::RandTrim => 1,
                stormark_spec::Rw::TrimWrite => 2,
                _ => 0,
            },
            bs_min,
            bs_max,
            bs_align,
            iodepth: load.iodepth.unwrap_or(job.iodepth),
            iodepth_batch: job.iodepth_batch,
            iodepth_batch_complete: job.iodepth_batch_complete,
            iodepth_batch_complete_max: job.iodepth_batch_complete_max,
            iodepth_low: job.iodepth_low,
            serialize_overlap: job.serialize_overlap,
            ring: job.ring,
            direct: at.direct,
            load: work,
            stop,
            ramp,
            invalidate_each_pass: !at.direct
                && job.invalidate == stormark_spec::Invalidate::EachPass
                && files_touched
                && ends_passes(job),
            start_delay: job.start_delay,
            think: (!job.thinktime.is_zero()).then_some(Think {
                every: job.thinktime_blocks.max(1),
                time: job.thinktime,
                spin: job.thinktime_spin,
            }),
            seed,
            data: crate::DataShape {
                zero: job.zero_buffers,
                pattern: job.buffer_pattern,
                compress_ratio: job.compress_ratio,
                dedup_ratio: job.dedup_ratio,
                dedup_block: job.dedup_block,
                // fio's working set: that share of the job's bytes on this host, in blocks.
                dedup_set: job.dedup_working_set.map_or(0, |p| {
                    let bytes = u128::from(one_pass) * at.workers.max(1) as u128;
                    let blocks = bytes * u128::from(p) / 100 / u128::from(job.dedup_block.max(1));
                    blocks.clamp(1, u128::from(u64::MAX)) as u64
                }),
                dedup_set_seed: if job.dedup_global { 0 } else { seed | 1 },
            },
            verify: job.verify.then(|| crate::VerifySpec {
                block: job
                    .verify_interval
                    .unwrap_or_else(|| verify_block(bs_min, bs_align)),
                only: job.verify_only,
                after: job.verify_after,
                trim_pct: job.trim_percentage,
                trim_zero: job.trim_verify_zero,
            }),
            sync_flags: match job.sync {
                stormark_spec::SyncMode::None => 0,
                stormark_spec::SyncMode::Dsync => libc::O_DSYNC,
                stormark_spec::SyncMode::Sync => libc::O_SYNC,
            },
            sync_every: job.fsync.max(job.fdatasync),
            datasync: job.fdatasync > 0,
            end_fsync: job.end_fsync,
            fadvise_hint: job.fadvise_hint && files_touched,
            write_once: false,
            fresh: job.fresh && files_touched,
            // The job's total rate, shared by its workers on every host.
            rate_iops: rate.map_or(0.0, |r| {
                r / at.workers.max(1) as f64 / f64::from(at.hosts.max(1))
            }),
            rate_poisson: job.rate_poisson,
            steady: job.steady_state,
            rate_min: RateMin {
                bytes: job.rate_min.unwrap_or_default(),
                ops: job.rate_iops_min.unwrap_or_default(),
            },
            exit: job.exit,
            exit_on_error: job.exit_on_error,
            flow: job.flow,
            flow_group: None,
            cpus: Vec::new(),
            mem_policy: job.placement.mem.clone(),
            nice: job.placement.nice,
            ioprio: job.placement.ioprio,
            stall: None,
        }
    }
}

/// The unit `--verify` checks: every I/O's offset and length are multiples of it.
pub fn verify_block(bs_min: u64, bs_align: u64) -> u64 {
    stormark_spec::units::gcd(bs_min, bs_align)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fio's flow.c, turn by turn: weights 1 and 8, each worker issuing until the flow stops
    /// it. fio's count starts at 1, so the light worker issues 2 a turn and the heavy one 16
    /// (fio 3.33's own pattern under `strace`), not 1 and 8.
    #[test]
    fn a_flow_turn_is_two_light_ios_to_sixteen_heavy() {
        let g = FlowGroup::default();
        g.weight.store(9, Ordering::Relaxed);
        let (mut light, mut heavy) = (0, 0);
        let mut turns = Vec::new();
        for _ in 0..6 {
            let mut n = (0, 0);
            while g.take(&mut heavy, 8) {
                n.1 += 1;
            }
            while g.take(&mut light, 1) {
                n.0 += 1;
            }
            turns.push(n);
        }
        assert_eq!(turns[0], (2, 9), "{turns:?}");
        assert!(turns[1..].iter().all(|&t| t == (2, 16)), "{turns:?}");
        assert_eq!(heavy, 8 * light + 9 - 16);
    }
}
