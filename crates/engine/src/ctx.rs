//! What every backend's loop shares: the worker's context (files, buffers, generator,
//! recorder, its time keeping from `pace`), the open-loop schedule and the messages a worker
//! sends to its stage.

use std::fs::File;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use stormark_stats::{ErrorKind, Op, Recorder, Snapshot};

use crate::data::Buffers;
use crate::offsets::{IoReq, OffsetGen};
use crate::target::WorkerSpec;

pub(crate) use crate::pace::Pace;

/// The open-loop schedule: the k-th I/O is due at `start + k / rate`, or (Poisson) after
/// exponential gaps of that mean.
pub(crate) struct Schedule {
    start: Instant,
    period_ns: f64,
    k: u64,
    /// Poisson arrivals: the generator's state, and the next due time from `start`.
    poisson: Option<u64>,
    at_ns: f64,
}

impl Schedule {
    /// A schedule from `start` at `rate` I/Os per second; `None` for a closed loop. With
    /// `poisson` (seeded by `seed`), the gaps between due times are drawn from an exponential
    /// distribution of the same mean (fio's `rate_process=poisson`).
    pub(crate) fn new(start: Instant, rate: f64, poisson: bool, seed: u64) -> Option<Schedule> {
        (rate > 0.0 && rate.is_finite()).then(|| Schedule {
            start,
            period_ns: 1e9 / rate,
            k: 0,
            poisson: poisson.then_some(seed | 1),
            at_ns: 0.0,
        })
    }

    /// When the next I/O is due.
    #[inline]
    pub(crate) fn peek(&self) -> Instant {
        let at = match self.poisson {
            None => self.k as f64 * self.period_ns,
            Some(_) => self.at_ns,
        };
        self.start + Duration::from_nanos(at as u64)
    }

    /// Takes the next due time.
    #[inline]
    pub(crate) fn take(&mut self) -> Instant {
        let t = self.peek();
        self.k += 1;
        if let Some(s) = &mut self.poisson {
            // An exponential gap: -ln(U) periods, U uniform in (0, 1].
            *s ^= *s << 13;
            *s ^= *s >> 7;
            *s ^= *s << 17;
            let u = ((*s >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
            self.at_ns += -u.ln() * self.period_ns;
        }
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
pub(crate) const MAX_CONSECUTIVE_ERRORS: u32 = 100;

/// The least a request to a remote service (S3, an iSCSI LUN, an NFS share) still in flight
/// at the phase's end may take before it counts as a timeout of its age: twice the longest
/// answer the worker has seen, and at least this ([`give_up_at`]).
pub(crate) const END_GRACE: Duration = Duration::from_secs(2);

/// The longest a request to a remote service may go unanswered in a phase with no deadline
/// (a run bounded by size), and S3's limit on one request: then it counts as a timeout.
pub(crate) const STALL_LIMIT: Duration = Duration::from_secs(30);

/// When a request in flight, sent at `sent`, is given up and counted as a timeout of its age:
/// the phase's `deadline` plus the grace (twice the `longest` answer seen, at least
/// [`END_GRACE`]), and never later than [`STALL_LIMIT`] (or twice the longest answer) after
/// it was sent. One rule for every remote service: a stalled server neither stretches the
/// phase past its time and the grace nor hides its unanswered requests.
pub(crate) fn give_up_at(sent: Instant, deadline: Option<Instant>, longest: Duration) -> Instant {
    let stalled = sent + (2 * longest).max(STALL_LIMIT);
    deadline.map_or(stalled, |d| (d + end_grace(longest)).min(stalled))
}

/// How long past the phase's end a request in flight may still take: twice the `longest`
/// answer seen, at least [`END_GRACE`] (S3's client deadline and [`give_up_at`] alike).
pub(crate) fn end_grace(longest: Duration) -> Duration {
    (2 * longest).max(END_GRACE)
}

/// State shared by the loops of every backend.
pub(crate) struct Ctx<'a> {
    pub spec: &'a WorkerSpec,
    pub files: Vec<File>,
    pub bufs: Buffers,
    pub gen: OffsetGen,
    pub rec: Recorder,
    pub pace: Pace<'a>,
    /// Set when the run stops. The flag itself, not its `Arc`: read before every I/O, one load.
    pub stop: &'a AtomicBool,
    /// The same flag shared, for what keeps it beyond the worker (an S3 client).
    pub stop_shared: &'a Arc<AtomicBool>,
    pub tx: &'a Sender<WorkerMsg>,
    pub issued: u64,
    pub io_total: u64,
    pub consecutive_errors: u32,
    /// The open-loop schedule, when there is one.
    pub schedule: Option<Schedule>,
    /// Writes since the last sync (`--fsync N`, `--fdatasync N`).
    pub writes_since_sync: u32,
    /// This worker's mark in every written sector (with the bytes issued so far): no two
    /// workers' or writes' sectors are alike.
    pub tag: u64,
    /// Bytes issued at which the next pass over the files begins, and its files leave the
    /// page cache (`invalidate = pass`); `u64::MAX` when they never do; 0 in fio's zoned
    /// mode (each I/O placed in the zones, see `next_req`).
    pub next_pass: u64,
    /// I/Os left before fio's thinktime pauses the worker (0: no pauses).
    pub think_left: u32,
    /// I/Os this worker issued within its flow (fio's `flow`).
    pub flow_own: u64,
    /// What each I/O is timed by.
    pub clock: crate::clock::Clock,
    /// The clock's tick from which a completion may close a second or end the measured time
    /// (0: the next one does): before it, [`Ctx::pace_at`] compares two numbers.
    pub pace_check: u64,
    /// The tick of the last completion [`Ctx::pace_at`] counted (0: none yet).
    pub last_end: u64,
    /// fio's zoned mode: the file's zones and this worker's use of them.
    pub zones: Option<Box<crate::zoned::Zoning>>,
}

impl Ctx<'_> {
    /// The next I/O to issue, or `None` when the stop rule says no more. Always inline: a
    /// call returns the I/O through memory, stored field by field, and the loop's copy of it
    /// read the fields back together before the stores had landed (a store-forwarding stall,
    /// 30% of the io_uring loop's own time; docs/performance.md).
    #[inline(always)]
    pub fn next_req(&mut self) -> Option<IoReq> {
        if self.issued >= self.io_total || self.stop.load(Ordering::Relaxed) {
            return None;
        }
        // One comparison on the common path: a new pass over the files, or fio's zoned mode
        // (whose `next_pass` is 0: its writes go to the zones' pointers, in no passes).
        if self.issued >= self.next_pass {
            if self.zones.is_some() {
                return self.next_in_zones();
            }
            self.new_pass();
        }
        let req = self.gen.next_io()?;
        self.issued += u64::from(req.len);
        Some(req)
    }

    /// Each file's descriptor and where its region starts (fio's offset), by file index.
    pub fn regions(&self) -> Vec<(i32, u64)> {
        use std::os::fd::AsRawFd;
        self.files
            .iter()
            .zip(&self.spec.files)
            .map(|(f, t)| (f.as_raw_fd(), t.start))
            .collect()
    }

    /// Counts an I/O toward fio's thinktime: `true` when the worker should now pause (after
    /// what it has in flight completes).
    #[inline]
    pub fn think_due(&mut self) -> bool {
        if self.think_left == 0 {
            return false;
        }
        self.think_left -= 1;
        self.think_left == 0
    }

    /// fio's `flow`: whether this worker may issue its next I/O (it is not ahead of its
    /// weight's share of the flow's I/Os), counting it if so.
    #[inline]
    pub fn flow_take(&mut self) -> bool {
        let (Some(g), Some(f)) = (&self.spec.flow_group, &self.spec.flow) else {
            return true;
        };
        g.take(&mut self.flow_own, f.weight)
    }

    /// fio's `flow_sleep`: the pause of a worker ahead of its share (a yield of the CPU when
    /// none); `false` once the worker should stop instead.
    #[cold]
    pub fn flow_pause(&self) -> bool {
        let sleep = self.spec.flow.map(|f| f.sleep).unwrap_or_default();
        if sleep.is_zero() {
            std::thread::yield_now();
        } else {
            // Asleep throughout, as fio's usleep: a spin would take the CPU the other jobs
            // of the flow need to catch up.
            let until = std::time::Instant::now() + sleep;
            while !self.stop.load(Ordering::Relaxed) {
                let left = until.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    break;
                }
                std::thread::sleep(left.min(Duration::from_millis(50)));
            }
        }
        !(self.stop.load(Ordering::Relaxed) || self.pace.expired(std::time::Instant::now()))
    }

    /// Waits until the flow lets this worker issue; `false` once it should stop instead.
    #[cold]
    pub fn flow_wait(&mut self) -> bool {
        while !self.flow_take() {
            if !self.flow_pause() {
                return false;
            }
        }
        true
    }

    /// fio's thinktime: the pause, its first part spinning, the rest asleep (cut short by a
    /// stop); then the count starts again.
    #[cold]
    pub fn think(&mut self) {
        let Some(t) = self.spec.think else {
            return;
        };
        let start = std::time::Instant::now();
        while start.elapsed() < t.spin && !self.stop.load(Ordering::Relaxed) {
            std::hint::spin_loop();
        }
        wait_until(start + t.time, self.stop);
        self.think_left = t.every;
    }

    /// A new pass over the files: their clean cached pages dropped, as fio does before each
    /// loop of a buffered job.
    #[cold]
    fn new_pass(&mut self) {
        use std::os::fd::AsRawFd;
        for f in &self.files {
            // SAFETY: an open descriptor of this worker's; advice, no memory is touched.
            unsafe {
                libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
            }
        }
        let pass: u64 = self.spec.files.iter().map(|f| f.len).sum();
        self.next_pass = self.next_pass.saturating_add(pass.max(1));
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

    /// Records `n` I/Os like `req`, each whole and of `latency_ns` (completions reaped
    /// together whose submissions were stamped together).
    #[inline]
    pub fn complete_n(&mut self, req: &IoReq, latency_ns: u64, n: u64) {
        self.rec.record_n(req.op, u64::from(req.len), latency_ns, n);
        self.consecutive_errors = 0;
    }

    #[cold]
    fn fail(&mut self, req: &IoReq, res: i64) {
        let kind = if res < 0 {
            ErrorKind::from_errno(-res as i32)
        } else {
            ErrorKind::Short
        };
        self.fail_as(req, kind);
    }

    /// Records `req` as failed with `kind` (a failure that is no errno: a SCSI sense key).
    #[cold]
    pub(crate) fn fail_as(&mut self, req: &IoReq, kind: ErrorKind) {
        // Where in the file or device, not in the worker's region of it.
        let base = self
            .spec
            .files
            .get(req.file as usize)
            .map_or(0, |f| f.start);
        self.rec
            .record_error(req.op, kind, base + req.offset, req.file);
        // fio's fill_device: the space is full (ENOSPC, or a write that found room for part
        // of its bytes only), the job's writing is done.
        if self.spec.fill && matches!(kind, ErrorKind::NoSpace | ErrorKind::Short) {
            self.io_total = self.issued;
        }
        // An error the job ignores is counted, and the worker goes on as fio's would.
        if !self.spec.ignore_errors.contains(&kind) {
            self.consecutive_errors += 1;
        }
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

    /// Counts a completion at tick `end` in the pace: the second closed and the measured time
    /// ended as [`Pace::tick`] and [`Pace::expired`] do, both looked at only from the tick at
    /// which the earlier of them falls (one comparison per I/O until then, not an instant
    /// made and compared). Whether the measured time is over. A loop that counts with it
    /// calls [`Ctx::pace_settle`] once it ends.
    #[inline]
    pub fn pace_at(&mut self, end: u64) -> bool {
        self.last_end = end;
        end >= self.pace_check && self.pace_turn(end)
    }

    /// [`Ctx::pace_at`] at or past the tick it watches for.
    #[inline(never)]
    fn pace_turn(&mut self, end: u64) -> bool {
        let now = self.clock.instant(end);
        self.pace.tick(now, &mut self.rec, self.tx);
        let next = self.pace.next_turn();
        // Rounded down: a check a few ticks early only looks again.
        let ahead = next.saturating_duration_since(now).as_nanos() as u64;
        self.pace_check = end.saturating_add(self.clock.ticks_in(ahead));
        self.pace.expired(now)
    }

    /// The last completion [`Ctx::pace_at`] counted, as the worker's end (the pace saw only
    /// those at its turns).
    pub fn pace_settle(&mut self) {
        if self.last_end != 0 {
            let now = self.clock.instant(self.last_end);
            self.pace.completed_at(now);
        }
    }

    /// Records an I/O timed by the worker's clock: `service_ns` from its start to its end at
    /// tick `end`; in an open loop (`due` set) its latency counts from `due` to the end's
    /// instant (made only then), with the service time beside it.
    /// Always inline, the open loop's work out of line: inlined whole, or called, it cost the
    /// null engine 1.5% of its I/Os (bench/ab.sh).
    #[inline(always)]
    pub fn complete_timed(
        &mut self,
        req: &IoReq,
        res: i64,
        service_ns: u64,
        end: u64,
        due: Option<Instant>,
    ) {
        match due {
            None => self.complete(req, res, service_ns),
            Some(t) => self.complete_due(req, res, service_ns, end, t),
        }
    }

    /// [`Ctx::complete_timed`] for an I/O of an open loop, due at `due`.
    #[inline(never)]
    fn complete_due(&mut self, req: &IoReq, res: i64, service_ns: u64, end: u64, due: Instant) {
        let now = self.clock.instant(end);
        let response = now.saturating_duration_since(due).as_nanos() as u64;
        self.complete_scheduled(req, res, response.max(service_ns), service_ns)
    }

    /// Counts a write; whether a sync is now due (every `sync_every` writes).
    #[inline]
    pub fn write_done(&mut self) -> bool {
        if self.spec.sync_every == 0 {
            return false;
        }
        self.writes_since_sync += 1;
        if self.writes_since_sync < self.spec.sync_every {
            return false;
        }
        self.writes_since_sync = 0;
        true
    }

    /// `fsync` (or `fdatasync`) file `file`, open as `fd`, timed as [`Op::Sync`].
    #[cold]
    pub fn sync_file(&mut self, fd: i32, file: u32, datasync: bool) {
        let start = Instant::now();
        // SAFETY: fd is one of the worker's open files.
        let r = unsafe {
            if datasync {
                libc::fdatasync(fd)
            } else {
                libc::fsync(fd)
            }
        };
        let errno = (r != 0).then(|| {
            std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO)
        });
        let now = Instant::now();
        self.pace.tick(now, &mut self.rec, self.tx);
        match errno {
            None => self.rec.record(
                Op::Sync,
                0,
                now.saturating_duration_since(start).as_nanos() as u64,
            ),
            Some(e) => self
                .rec
                .record_error(Op::Sync, ErrorKind::from_errno(e), 0, file),
        }
    }

    /// Whether the worker should give up on a target that only fails.
    pub fn failing(&self) -> Option<crate::EngineError> {
        (self.consecutive_errors >= MAX_CONSECUTIVE_ERRORS)
            .then_some(crate::EngineError::Failing(MAX_CONSECUTIVE_ERRORS))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fio's `rate_process=poisson`: the gaps between due times have the rate's mean and an
    /// exponential's spread (standard deviation equal to the mean); linear ones are all equal.
    #[test]
    fn a_poisson_schedule_keeps_the_mean_rate_with_exponential_gaps() {
        let t0 = Instant::now();
        let gaps = |poisson: bool| {
            let mut s = Schedule::new(t0, 1000.0, poisson, 42).unwrap();
            let mut last = s.take();
            (0..100_000)
                .map(|_| {
                    let t = s.take();
                    let g = (t - last).as_nanos() as f64;
                    last = t;
                    g
                })
                .collect::<Vec<f64>>()
        };
        let stats = |g: &[f64]| {
            let mean = g.iter().sum::<f64>() / g.len() as f64;
            let var = g.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / g.len() as f64;
            (mean, var.sqrt())
        };
        let (mean, sd) = stats(&gaps(true));
        assert!((mean / 1e6 - 1.0).abs() < 0.02, "mean gap {mean} ns");
        assert!((sd / mean - 1.0).abs() < 0.03, "sd {sd}, mean {mean}");
        let (mean, sd) = stats(&gaps(false));
        assert!((mean / 1e6 - 1.0).abs() < 1e-3 && sd < 1e3, "{mean} {sd}");
    }
}
