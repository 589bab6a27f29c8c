//! A worker's time keeping: the ramp (and the wait for a steady state), its 1-second
//! intervals sent to the stage, the deadline, fio's `ratemin`, and its last completion.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use stormark_stats::{Op, Recorder, Snapshot};

use crate::ctx::WorkerMsg;
use crate::target::WorkerSpec;

/// Time keeping of a worker: ramp, 1-second intervals, deadline.
pub(crate) struct Pace<'a> {
    pub measured_start: Instant,
    in_ramp: bool,
    interval: u32,
    next_boundary: Instant,
    deadline: Option<Instant>,
    worker: usize,
    last_completion: Option<Instant>,
    /// fio's `ratemin`: the least a second, the directions seen so far, and why it failed.
    rate_min: crate::target::RateMin,
    seen_dirs: [bool; 2],
    below_min: Option<String>,
    /// Waiting for a steady state: the stage's named start (ns after `t0`; `u64::MAX` until
    /// named), the start, and the second of the ramp.
    steady: Option<(&'a AtomicU64, Instant, u32)>,
    time: Option<Duration>,
}

impl<'a> Pace<'a> {
    pub(crate) fn new(
        t0: Instant,
        spec: &WorkerSpec,
        worker: usize,
        steady: &'a AtomicU64,
    ) -> Pace<'a> {
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
            // A job that starts late (fio's startdelay) runs its whole time from then.
            deadline: spec
                .stop
                .time
                .map(|t| measured_start + spec.start_delay + t),
            worker,
            last_completion: None,
            steady,
            time: spec.stop.time,
            rate_min: spec.rate_min,
            seen_dirs: [false; 2],
            below_min: None,
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
                // Named while this worker waited for its next boundary: what it did since was
                // recorded as ramp and discarded above, so its measured time starts now (a
                // start in the past would shorten it, to nothing under a loaded CPU).
                self.start_measuring(s.max(now).min(self.measured_start));
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

    /// fio's `ratemin`: a whole measured second below the least ends the worker, failed.
    #[cold]
    fn judge_rate(&mut self, snap: &Snapshot, now: Instant) {
        let mut done = [(0u64, 0u64); 2];
        for (op, r) in snap.ops() {
            let d = match op {
                Op::Read | Op::ReadPrio => 0,
                Op::Write | Op::WritePrio => 1,
                _ => continue,
            };
            done[d] = (done[d].0 + r.ops, done[d].1 + r.bytes);
        }
        // A second the worker spent whole: after its first I/O of that direction.
        let whole = self.seen_dirs;
        for (seen, (ops, _)) in self.seen_dirs.iter_mut().zip(done) {
            *seen |= ops > 0;
        }
        if self.below_min.is_none() {
            if let Some(why) = self.rate_min.short(done, whole) {
                self.below_min = Some(format!("second {}: {why}", self.interval + 1));
                self.deadline = Some(now);
            }
        }
    }

    /// Why the worker fell below its least rate, if it did.
    pub fn below_min(&self) -> Option<&str> {
        self.below_min.as_deref()
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
            if self.rate_min.any() {
                self.judge_rate(&snap, now);
            }
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

    /// The last of the load completed at `now` without an I/O of its own (a stream's last
    /// bytes acknowledged after its last write): the worker's end, in its current second.
    pub fn completed_at(&mut self, now: Instant) {
        if self.last_completion.is_some() {
            self.last_completion = Some(now);
        }
    }

    /// Whether a completion at `now` closes the current second (or the ramp): the moment to
    /// bring a count kept elsewhere up to date before [`Pace::tick`].
    #[inline]
    pub fn rolls(&self, now: Instant) -> bool {
        now >= self.next_boundary
    }

    /// The earlier of the current second's end and the measured time's: before it, a
    /// completion changes nothing but the last completion's time.
    pub fn next_turn(&self) -> Instant {
        self.deadline
            .map_or(self.next_boundary, |d| d.min(self.next_boundary))
    }

    /// When the measured time ends, if it is timed.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Whether the measured time is over.
    #[inline]
    pub fn expired(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|d| now >= d)
    }

    pub(crate) fn finish(
        &self,
        rec: &mut Recorder,
        tx: &Sender<WorkerMsg>,
        failure: Option<String>,
    ) {
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
