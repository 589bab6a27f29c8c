//! One worker: its files, buffers, generator and recorder, and the loops of the psync and
//! null backends (io_uring's is in `uring.rs`). Everything is chosen before the loop starts.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;

use std::time::{Duration, Instant};
use stormark_spec::SteadyState;

use stormark_stats::{ErrorKind, Op, Recorder, Snapshot};

use crate::buffer::AlignedBuf;
use crate::files::{open_checked, Dir, Identity};
use crate::offsets::{IoReq, OffsetGen};

/// The I/O backend of a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// io_uring with `iodepth` I/Os in flight.
    IoUring,
    /// `pread`/`pwrite`, one at a time.
    Psync,
    /// No I/O: each request completes at once (measures the tool itself).
    Null,
}

impl Backend {
    /// The name used in results.
    pub fn name(self) -> &'static str {
        match self {
            Backend::IoUring => "io_uring",
            Backend::Psync => "psync",
            Backend::Null => "null",
        }
    }
}

/// A file or device a worker does I/O on, from offset 0 to `len`.
#[derive(Debug, Clone)]
pub struct FileTarget {
    /// Where it is: a name beneath a run directory held open, or a path the user named.
    pub place: Place,
    /// What it must be when opened (`None`: anything regular, for tests and probes).
    pub expect: Option<Identity>,
    /// Bytes used, from the start.
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
}

impl FileTarget {
    /// A target at `path`, any regular file or block device.
    pub fn path(path: impl Into<PathBuf>, len: u64) -> FileTarget {
        FileTarget {
            place: Place::Path(path.into()),
            expect: None,
            len,
        }
    }

    /// The path, for messages.
    pub fn shown(&self) -> PathBuf {
        match &self.place {
            Place::Path(p) => p.clone(),
            Place::Beneath { dir, name } => dir.shown(name),
        }
    }

    /// Opens it for reading (and writing) and checks it is what was validated.
    pub fn open(&self, write: bool, direct: bool) -> std::io::Result<File> {
        let mut flags = if write { libc::O_RDWR } else { libc::O_RDONLY };
        if direct {
            flags |= libc::O_DIRECT;
        }
        let file = match &self.place {
            Place::Beneath { dir, name } => dir.open_file(name, flags)?,
            Place::Path(p) => match self.expect {
                Some(id) => return open_checked(p, flags, id),
                None => {
                    let mut o = OpenOptions::new();
                    o.read(true)
                        .write(write)
                        .custom_flags(flags & libc::O_DIRECT);
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

/// Everything one worker needs, decided before it starts.
#[derive(Debug, Clone)]
pub struct WorkerSpec {
    /// Files, used round-robin.
    pub files: Vec<FileTarget>,
    /// Share of reads, percent.
    pub read_pct: u8,
    /// Share of random offsets, percent.
    pub random_pct: u8,
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
    /// Most completions reaped before refilling (fio's `iodepth_batch_complete_max`; 1 = each).
    pub iodepth_batch_complete: u32,
    /// Open with `O_DIRECT`.
    pub direct: bool,
    /// Backend.
    pub backend: Backend,
    /// Stop rule.
    pub stop: Stop,
    /// Warm-up, discarded.
    pub ramp: Duration,
    /// Seed of the offset generator and buffer contents.
    pub seed: u64,
    /// Write each file once, front to back, then stop (the preparation pass).
    pub write_once: bool,
    /// Open loop: I/Os per second this worker issues on a fixed schedule (0: closed loop,
    /// each I/O as soon as a slot is free). Latency is then measured from each I/O's
    /// scheduled time, so that a stall shows in the numbers (coordinated omission corrected);
    /// the service time from submission is recorded beside it.
    pub rate_iops: f64,
    /// End the ramp once this figure is steady (fio's `ss`): the ramp is then the most to
    /// wait. The stage watches every worker's ramp seconds and names the measured start.
    pub steady: Option<SteadyState>,
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
            bs_min: 4096,
            bs_max: 4096,
            bs_align: 4096,
            iodepth: 1,
            iodepth_batch: 1,
            iodepth_batch_complete: 1,
            direct: false,
            backend: Backend::Psync,
            stop: Stop::default(),
            ramp: Duration::ZERO,
            seed: 1,
            write_once: false,
            rate_iops: 0.0,
            steady: None,
            stall: None,
        }
    }
}

/// The open-loop schedule: the k-th I/O is due at `start + k / rate`.
pub(crate) struct Schedule {
    start: Instant,
    period_ns: f64,
    k: u64,
}

impl Schedule {
    /// A schedule from `start` at `rate` I/Os per second; `None` for a closed loop.
    pub(crate) fn new(start: Instant, rate: f64) -> Option<Schedule> {
        (rate > 0.0 && rate.is_finite()).then(|| Schedule {
            start,
            period_ns: 1e9 / rate,
            k: 0,
        })
    }

    /// When the next I/O is due.
    #[inline]
    pub(crate) fn peek(&self) -> Instant {
        self.start + Duration::from_nanos((self.k as f64 * self.period_ns) as u64)
    }

    /// Takes the next due time.
    #[inline]
    pub(crate) fn take(&mut self) -> Instant {
        let t = self.peek();
        self.k += 1;
        t
    }
}

/// Sleeps until `t` (the last stretch spinning, so the schedule holds to a few µs), or until
/// `stop` is set.
pub(crate) fn wait_until(t: Instant, stop: &AtomicBool) {
    loop {
        let now = Instant::now();
        if now >= t || stop.load(Ordering::Relaxed) {
            return;
        }
        let left = t - now;
        if left > Duration::from_micros(200) {
            std::thread::sleep((left - Duration::from_micros(100)).min(Duration::from_millis(50)));
        } else {
            std::hint::spin_loop();
        }
    }
}

/// What a worker sends to its stage.
#[derive(Debug)]
pub enum WorkerMsg {
    /// What the worker did in one second (`interval` 0 is the first after the ramp).
    Interval {
        /// Worker index in the stage.
        worker: usize,
        /// Interval number.
        interval: u32,
        /// What it did (boxed: the message stays small while in the channel).
        snap: Box<Snapshot>,
    },
    /// A second of a ramp that waits for a steady state: enough for the stage to judge it.
    Ramp {
        /// Worker index in the stage.
        worker: usize,
        /// Second of the ramp, from 0.
        second: u32,
        /// I/Os completed.
        ops: u64,
        /// Bytes moved.
        bytes: u64,
        /// Latencies summed, ns.
        latency_sum_ns: f64,
    },
    /// The worker has stopped; nothing follows.
    Done {
        /// Worker index in the stage.
        worker: usize,
        /// Its last completion, ns after the measured start (0 if it never got there).
        end_ns: u64,
        /// Why it could not run or stopped early.
        failure: Option<String>,
    },
}

/// A worker stops after this many failed I/Os in a row: the device or file is not usable, and
/// spinning on errors measures nothing (fio stops at the first error by default).
const MAX_CONSECUTIVE_ERRORS: u32 = 100;

/// Time keeping of a worker: ramp, 1-second intervals, deadline.
pub(crate) struct Pace<'a> {
    pub measured_start: Instant,
    in_ramp: bool,
    interval: u32,
    next_boundary: Instant,
    deadline: Option<Instant>,
    worker: usize,
    last_completion: Option<Instant>,
    /// Waiting for a steady state: the stage's named start (ns after `t0`; `u64::MAX` until
    /// named), the start, and the second of the ramp.
    steady: Option<(&'a AtomicU64, Instant, u32)>,
    time: Option<Duration>,
}

impl<'a> Pace<'a> {
    fn new(t0: Instant, spec: &WorkerSpec, worker: usize, steady: &'a AtomicU64) -> Pace<'a> {
        let measured_start = t0 + spec.ramp;
        let in_ramp = !spec.ramp.is_zero();
        let steady = (in_ramp && spec.steady.is_some()).then_some((steady, t0, 0));
        Pace {
            measured_start,
            in_ramp,
            interval: 0,
            next_boundary: if steady.is_some() {
                (t0 + Duration::from_secs(1)).min(measured_start)
            } else if in_ramp {
                measured_start
            } else {
                measured_start + Duration::from_secs(1)
            },
            deadline: spec.stop.time.map(|t| measured_start + t),
            worker,
            last_completion: None,
            steady,
            time: spec.stop.time,
        }
    }

    /// A second of a ramp waiting for a steady state: reports it, and ends the ramp at the
    /// start the stage named (or at the ramp's end). Returns whether the ramp goes on.
    fn ramp_second(&mut self, now: Instant, rec: &mut Recorder, tx: &Sender<WorkerMsg>) -> bool {
        let Some((named, t0, second)) = self.steady else {
            return false;
        };
        let (mut ops, mut bytes, mut sum) = (0u64, 0u64, 0.0f64);
        for (_, r) in rec.current().ops() {
            ops += r.ops;
            bytes += r.bytes;
            sum += r.hist.mean() * r.hist.len() as f64;
        }
        let _ = tx.send(WorkerMsg::Ramp {
            worker: self.worker,
            second,
            ops,
            bytes,
            latency_sum_ns: sum,
        });
        rec.discard();
        let at = named.load(Ordering::Acquire);
        let start = (at != u64::MAX).then(|| t0 + Duration::from_nanos(at));
        match start {
            Some(s) if now >= s || s >= self.measured_start => {
                self.start_measuring(s.min(self.measured_start));
                false
            }
            Some(s) => {
                self.next_boundary = s;
                self.steady = Some((named, t0, second + 1));
                true
            }
            None if now >= self.measured_start => {
                self.start_measuring(self.measured_start);
                false
            }
            None => {
                self.next_boundary =
                    (t0 + Duration::from_secs(u64::from(second) + 2)).min(self.measured_start);
                self.steady = Some((named, t0, second + 1));
                true
            }
        }
    }

    fn start_measuring(&mut self, at: Instant) {
        self.measured_start = at;
        self.deadline = self.time.map(|t| at + t);
        self.steady = None;
    }

    /// Called with the time of each completion batch, before recording it.
    #[inline]
    pub fn tick(&mut self, now: Instant, rec: &mut Recorder, tx: &Sender<WorkerMsg>) {
        if now >= self.next_boundary {
            self.roll(now, rec, tx);
        }
        self.last_completion = Some(now);
    }

    #[cold]
    fn roll(&mut self, now: Instant, rec: &mut Recorder, tx: &Sender<WorkerMsg>) {
        if self.in_ramp && self.steady.is_some() && self.ramp_second(now, rec, tx) {
            return;
        }
        if self.in_ramp {
            rec.discard();
            self.in_ramp = false;
        } else {
            let snap = rec.take();
            // A closed receiver means the stage is gone; the stop flag ends the loop.
            let _ = tx.send(WorkerMsg::Interval {
                worker: self.worker,
                interval: self.interval,
                snap: Box::new(snap),
            });
        }
        let since = now.saturating_duration_since(self.measured_start);
        self.interval = since.as_secs() as u32;
        self.next_boundary =
            self.measured_start + Duration::from_secs(u64::from(self.interval) + 1);
    }

    /// Whether the measured time is over.
    #[inline]
    pub fn expired(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|d| now >= d)
    }

    fn finish(&self, rec: &mut Recorder, tx: &Sender<WorkerMsg>, failure: Option<String>) {
        let end_ns = match self.last_completion {
            Some(t) if !self.in_ramp => {
                t.saturating_duration_since(self.measured_start).as_nanos() as u64
            }
            _ => 0,
        };
        if !self.in_ramp {
            let _ = tx.send(WorkerMsg::Interval {
                worker: self.worker,
                interval: self.interval,
                snap: Box::new(rec.take()),
            });
        }
        let _ = tx.send(WorkerMsg::Done {
            worker: self.worker,
            end_ns,
            failure,
        });
    }
}

/// State shared by the loops of every backend.
pub(crate) struct Ctx<'a> {
    pub spec: &'a WorkerSpec,
    pub files: Vec<File>,
    pub buf: AlignedBuf,
    pub gen: OffsetGen,
    pub rec: Recorder,
    pub pace: Pace<'a>,
    pub stop: &'a AtomicBool,
    pub tx: &'a Sender<WorkerMsg>,
    pub issued: u64,
    pub io_total: u64,
    pub consecutive_errors: u32,
    /// The open-loop schedule, when there is one.
    pub schedule: Option<Schedule>,
}

impl Ctx<'_> {
    /// The next I/O to issue, or `None` when the stop rule says no more.
    #[inline]
    pub fn next_req(&mut self) -> Option<IoReq> {
        if self.issued >= self.io_total || self.stop.load(Ordering::Relaxed) {
            return None;
        }
        let req = self.gen.next_io()?;
        self.issued += u64::from(req.len);
        Some(req)
    }

    /// Records the outcome of one I/O: `res` is the byte count or a negative errno.
    #[inline]
    pub fn complete(&mut self, req: &IoReq, res: i64, latency_ns: u64) {
        if res == i64::from(req.len) {
            self.rec.record(req.op, u64::from(req.len), latency_ns);
            self.consecutive_errors = 0;
        } else {
            self.fail(req, res);
        }
    }

    #[cold]
    fn fail(&mut self, req: &IoReq, res: i64) {
        let kind = if res < 0 {
            ErrorKind::from_errno(-res as i32)
        } else {
            ErrorKind::Short
        };
        self.rec.record_error(req.op, kind, req.offset, req.file);
        self.consecutive_errors += 1;
    }

    /// Records the outcome of one I/O of an open loop: response time from its schedule,
    /// service time from its submission.
    #[inline]
    pub fn complete_scheduled(&mut self, req: &IoReq, res: i64, response_ns: u64, service_ns: u64) {
        if res == i64::from(req.len) {
            self.rec
                .record_scheduled(req.op, u64::from(req.len), response_ns, service_ns);
            self.consecutive_errors = 0;
        } else {
            self.fail(req, res);
        }
    }

    /// Records an I/O that started at `start` and completed at `now`; in an open loop (`due`
    /// set) its latency counts from `due`, with the service time beside it.
    #[inline]
    pub fn complete_at(
        &mut self,
        req: &IoReq,
        res: i64,
        now: Instant,
        start: Instant,
        due: Option<Instant>,
    ) {
        let service = now.saturating_duration_since(start).as_nanos() as u64;
        match due {
            None => self.complete(req, res, service),
            Some(t) => {
                let response = now.saturating_duration_since(t).as_nanos() as u64;
                self.complete_scheduled(req, res, response, service)
            }
        }
    }

    /// Whether the worker should give up on a target that only fails.
    pub fn failing(&self) -> Option<String> {
        (self.consecutive_errors >= MAX_CONSECUTIVE_ERRORS)
            .then(|| format!("stopped after {MAX_CONSECUTIVE_ERRORS} consecutive I/O errors"))
    }
}

/// Runs one worker: open, wait at the gate, loop, report. Never panics on I/O errors.
pub(crate) fn run_worker(
    worker: usize,
    spec: &WorkerSpec,
    gate: &crate::stage::Gate,
    stop: &AtomicBool,
    tx: &Sender<WorkerMsg>,
) {
    let setup = setup(spec);
    // Everyone waits at the gate, even a worker that failed to set up, so that the others
    // are not left waiting.
    let t0 = gate.wait();
    let (files, buf, gen) = match setup {
        Ok(s) => s,
        Err(e) => {
            let _ = tx.send(WorkerMsg::Done {
                worker,
                end_ns: 0,
                failure: Some(e),
            });
            return;
        }
    };
    let io_total = spec.stop.io_total.unwrap_or(u64::MAX);
    let mut ctx = Ctx {
        spec,
        files,
        buf,
        gen,
        rec: Recorder::new(),
        pace: Pace::new(t0, spec, worker, &gate.steady_start_ns),
        stop,
        tx,
        issued: 0,
        io_total,
        consecutive_errors: 0,
        schedule: Schedule::new(t0, spec.rate_iops),
    };
    let failure = match spec.backend {
        Backend::Psync => run_psync(&mut ctx),
        Backend::Null => run_null(&mut ctx),
        Backend::IoUring => crate::uring::run(&mut ctx),
    };
    let failure = failure.err().or_else(|| ctx.failing());
    ctx.pace.finish(&mut ctx.rec, tx, failure);
}

type Setup = (Vec<File>, AlignedBuf, OffsetGen);

fn setup(spec: &WorkerSpec) -> Result<Setup, String> {
    let writes = spec.read_pct < 100 || spec.write_once;
    let mut files = Vec::with_capacity(spec.files.len());
    if spec.backend != Backend::Null {
        for f in &spec.files {
            let file = f
                .open(writes, spec.direct)
                .map_err(|e| format!("cannot open {}: {e}", f.shown().display()))?;
            files.push(file);
        }
    }
    let lens: Vec<u64> = if spec.files.is_empty() {
        vec![spec.bs_max.max(1) * 1024]
    } else {
        spec.files.iter().map(|f| f.len).collect()
    };
    if let Some(f) = spec.files.iter().find(|f| f.len < spec.bs_max) {
        return Err(format!(
            "{} holds {} bytes, less than one block of {}",
            f.shown().display(),
            f.len,
            spec.bs_max
        ));
    }
    let slots = if spec.backend == Backend::IoUring {
        spec.iodepth as usize
    } else {
        1
    };
    let len = slots.checked_mul(spec.bs_max as usize).ok_or_else(|| {
        format!(
            "{slots} × {} bytes of buffers do not fit in memory",
            spec.bs_max
        )
    })?;
    let buf = AlignedBuf::new(len, spec.seed)?;
    let gen = if spec.write_once {
        OffsetGen::write_once(lens, spec.bs_max)
    } else {
        OffsetGen::new(
            lens,
            spec.read_pct,
            spec.random_pct,
            spec.bs_min,
            spec.bs_max,
            spec.bs_align,
            spec.seed,
        )
    };
    Ok((files, buf, gen))
}

fn run_psync(ctx: &mut Ctx<'_>) -> Result<(), String> {
    let buf = ctx.buf.at(0);
    let fds: Vec<i32> = ctx.files.iter().map(|f| f.as_raw_fd()).collect();
    while let Some(req) = ctx.next_req() {
        let due = ctx.schedule.as_mut().map(|s| {
            let t = s.take();
            wait_until(t, ctx.stop);
            t
        });
        let fd = fds[req.file as usize];
        let start = Instant::now();
        // SAFETY: buf holds at least bs_max >= req.len bytes; fd is open for this op.
        let res = unsafe {
            match req.op {
                Op::Read => {
                    libc::pread(fd, buf.cast(), req.len as usize, req.offset as libc::off_t)
                }
                Op::Write => {
                    libc::pwrite(fd, buf.cast(), req.len as usize, req.offset as libc::off_t)
                }
            }
        };
        let res = if res < 0 {
            -i64::from(
                std::io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EIO),
            )
        } else {
            res as i64
        };
        let now = Instant::now();
        ctx.pace.tick(now, &mut ctx.rec, ctx.tx);
        ctx.complete_at(&req, res, now, start, due);
        if ctx.pace.expired(now) || ctx.consecutive_errors >= MAX_CONSECUTIVE_ERRORS {
            break;
        }
    }
    Ok(())
}

fn run_null(ctx: &mut Ctx<'_>) -> Result<(), String> {
    let mut stall = ctx
        .spec
        .stall
        .map(|(at, len)| (ctx.pace.measured_start - ctx.spec.ramp + at, len));
    while let Some(req) = ctx.next_req() {
        let due = ctx.schedule.as_mut().map(|s| {
            let t = s.take();
            wait_until(t, ctx.stop);
            t
        });
        let start = Instant::now();
        if let Some((at, len)) = stall {
            if start >= at {
                // The injected stall (tests): this one I/O takes `len`.
                std::thread::sleep(len);
                stall = None;
            }
        }
        let now = Instant::now();
        ctx.pace.tick(now, &mut ctx.rec, ctx.tx);
        ctx.complete_at(&req, i64::from(req.len), now, start, due);
        if ctx.pace.expired(now) {
            break;
        }
    }
    Ok(())
}
