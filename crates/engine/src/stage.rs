//! A stage: workers started together through one gate, their messages handed to the caller.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use stormark_spec::{SteadyFigure, SteadyState};
use stormark_stats::Snapshot;

use crate::ctx::WorkerMsg;
use crate::gate::Gate;
use crate::target::WorkerSpec;
use crate::worker::run_worker;

/// What a running stage reports to its caller, on the caller's thread.
#[derive(Debug)]
pub enum StageEvent<'a> {
    /// Every worker is ready and the load starts now.
    Started {
        /// The common start instant.
        t0: Instant,
    },
    /// A worker's second (or last part of one).
    Interval {
        /// Worker index.
        worker: usize,
        /// Interval number after the ramp.
        interval: u32,
        /// What it did.
        snap: Box<Snapshot>,
    },
    /// A worker stopped.
    Done {
        /// Worker index.
        worker: usize,
        /// Last completion, ns after the measured start.
        end_ns: u64,
        /// Why it failed, if it did.
        failure: Option<&'a str>,
    },
    /// Nothing arrived for a quarter second; a chance to refresh a live display.
    Tick,
}

/// How a stage ended.
#[derive(Debug, Clone)]
pub struct StageOutcome {
    /// The common start instant.
    pub t0: Instant,
    /// When the last worker stopped.
    pub ended: Instant,
    /// Failures, by worker index.
    pub failures: Vec<(usize, String)>,
    /// With a steady-state rule: the ramp it took to hold (`None`: it never held, and
    /// measuring began when the ramp ran out).
    pub steady_after: Option<Duration>,
    /// fio's `exitall`: the worker whose end stopped the others.
    pub ended_by: Option<usize>,
}

/// Judges the ramp's seconds, summed over workers, against a steady-state rule.
struct SteadyWatch {
    rule: SteadyState,
    /// Per second of the ramp: workers reported, ops, bytes, latency sum.
    seconds: Vec<(usize, u64, u64, f64)>,
    /// The figure of each complete second, in order.
    figures: Vec<f64>,
}

impl SteadyWatch {
    /// Adds one worker's second; returns the ramp's length when the rule now holds.
    fn add(&mut self, second: u32, ops: u64, bytes: u64, sum: f64, workers: usize) -> Option<u32> {
        let i = second as usize;
        if self.seconds.len() <= i {
            self.seconds.resize(i + 1, (0, 0, 0, 0.0));
        }
        let s = &mut self.seconds[i];
        *s = (s.0 + 1, s.1 + ops, s.2 + bytes, s.3 + sum);
        // A second counts once every worker reported it, in order.
        while let Some(&(n, ops, bytes, sum)) = self.seconds.get(self.figures.len()) {
            if n < workers {
                break;
            }
            self.figures.push(match self.rule.figure {
                SteadyFigure::Iops => ops as f64,
                SteadyFigure::Bw => bytes as f64,
                SteadyFigure::Lat if ops > 0 => sum / ops as f64,
                SteadyFigure::Lat => f64::INFINITY,
            });
            if steady(&self.figures, &self.rule) {
                return Some(self.figures.len() as u32);
            }
        }
        None
    }
}

/// Whether the last `window` seconds all lie within `band` of their mean (fio's steady state
/// for iops and bw: the largest deviation from the mean).
pub(crate) fn steady(figures: &[f64], rule: &SteadyState) -> bool {
    let w = rule.window.as_secs() as usize;
    if w == 0 || figures.len() < w {
        return false;
    }
    let last = &figures[figures.len() - w..];
    let mean = last.iter().sum::<f64>() / w as f64;
    if !(mean > 0.0 && mean.is_finite()) {
        return false;
    }
    if rule.slope {
        // fio's `_slope`: the least-squares line's slope, per second, within the band of
        // the mean.
        let xm = (w as f64 - 1.0) / 2.0;
        let (mut num, mut den) = (0.0, 0.0);
        for (i, v) in last.iter().enumerate() {
            num += (i as f64 - xm) * (v - mean);
            den += (i as f64 - xm).powi(2);
        }
        return (num / den).abs() <= rule.band * mean;
    }
    last.iter().all(|v| (v - mean).abs() <= rule.band * mean)
}

/// fio's flow: one shared count per `flow_id` among the stage's workers.
fn join_flows(specs: &mut [WorkerSpec]) {
    let mut flows: Vec<(u32, Arc<crate::target::FlowGroup>)> = Vec::new();
    for s in specs.iter_mut() {
        let Some(f) = s.flow else { continue };
        let g = match flows.iter().find(|(id, _)| *id == f.id) {
            Some((_, g)) => g.clone(),
            None => {
                let g = Arc::new(crate::target::FlowGroup::default());
                flows.push((f.id, g.clone()));
                g
            }
        };
        s.flow_group = Some(g);
    }
}

/// Runs workers on threads of their own until every one has stopped, calling `on_event` on
/// this thread for each message. Setting `stop` ends the stage early (Ctrl-C).
pub fn run_stage(
    specs: Vec<WorkerSpec>,
    stop: Arc<AtomicBool>,
    on_event: &mut dyn FnMut(StageEvent<'_>),
) -> StageOutcome {
    run_stage_at(specs, stop, None, on_event)
}

/// [`run_stage`], but the load starts at `start_at` (once every worker is ready, and at once if
/// that is already past): hosts of a distributed run start together this way. A start more
/// than a minute away is not waited for.
pub fn run_stage_at(
    specs: Vec<WorkerSpec>,
    stop: Arc<AtomicBool>,
    start_at: Option<Instant>,
    on_event: &mut dyn FnMut(StageEvent<'_>),
) -> StageOutcome {
    let mut specs = specs;
    join_flows(&mut specs);
    // The counter's rate is measured once per process (20 ms), here, not after the start.
    crate::clock::calibrate();
    let gate = Gate::new(specs.len() + 1);
    let mut watch = specs
        .iter()
        .find_map(|s| s.steady.filter(|_| !s.ramp.is_zero()))
        .map(|rule| SteadyWatch {
            rule,
            seconds: Vec::new(),
            figures: Vec::new(),
        });
    let mut steady_after = None;
    let (tx, rx) = channel::<WorkerMsg>();
    let mut failures = Vec::new();
    let mut t0 = Instant::now();
    // fio's exitall: the stage's own stop, set when such a worker ends (and by `stop`).
    let exit_stop = specs
        .iter()
        .any(|s| s.exit.is_some() || s.exit_on_error)
        .then(|| Arc::new(AtomicBool::new(false)));
    let workers_stop = exit_stop.clone().unwrap_or_else(|| stop.clone());
    let mut ended_by = None;
    std::thread::scope(|scope| {
        for (i, spec) in specs.iter().enumerate() {
            let (gate, stop, tx) = (&gate, &workers_stop, tx.clone());
            std::thread::Builder::new()
                .name(format!("stormark-w{i}"))
                .spawn_scoped(scope, move || run_worker(i, spec, gate, stop, &tx))
                .expect("spawning a worker thread");
        }
        drop(tx);
        gate.barrier.wait();
        if let Some(at) = start_at {
            let wait = at.saturating_duration_since(Instant::now());
            if wait < Duration::from_secs(60) {
                // Sleep in short steps so that a stop (Ctrl-C) is not held up.
                let until = Instant::now() + wait;
                while Instant::now() < until && !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::thread::sleep((until - Instant::now()).min(Duration::from_millis(20)));
                }
            }
        }
        t0 = Instant::now();
        gate.t0.set(t0).expect("t0 is set once");
        gate.barrier.wait();
        on_event(StageEvent::Started { t0 });
        let mut running = specs.len();
        while running > 0 {
            if let Some(own) = exit_stop.as_ref().filter(|_| stop.load(Ordering::Relaxed)) {
                own.store(true, Ordering::Relaxed);
            }
            match rx.recv_timeout(Duration::from_millis(250)) {
                Ok(WorkerMsg::Interval {
                    worker,
                    interval,
                    snap,
                }) => on_event(StageEvent::Interval {
                    worker,
                    interval,
                    snap,
                }),
                Ok(WorkerMsg::Ramp {
                    second,
                    ops,
                    bytes,
                    latency_sum_ns,
                    ..
                }) => {
                    if let Some(w) = watch.as_mut().filter(|_| steady_after.is_none()) {
                        if let Some(secs) = w.add(second, ops, bytes, latency_sum_ns, running) {
                            // Measuring starts at the next whole second of the ramp.
                            let at = Duration::from_secs(u64::from(secs));
                            gate.steady_start_ns
                                .store(at.as_nanos() as u64, Ordering::Release);
                            steady_after = Some(at);
                        }
                    }
                }
                Ok(WorkerMsg::Done {
                    worker,
                    end_ns,
                    failure,
                }) => {
                    running -= 1;
                    if let Some(own) = exit_stop.as_ref().filter(|_| specs[worker].exit.is_some()) {
                        // Said only of a worker that ended before its time ran out (its
                        // count of I/Os done, or a failure), with others still running.
                        let spec = &specs[worker];
                        let early = spec.stop.time.is_none_or(|t| {
                            Instant::now() + Duration::from_millis(20)
                                < t0 + spec.ramp + spec.start_delay + t
                        });
                        if !own.swap(true, Ordering::Relaxed) && running > 0 && early {
                            ended_by = Some(worker);
                        }
                    }
                    // fio's exitall_on_error: a worker that failed stops the others.
                    if let Some(own) = exit_stop
                        .as_ref()
                        .filter(|_| failure.is_some() && specs[worker].exit_on_error)
                    {
                        own.store(true, Ordering::Relaxed);
                    }
                    on_event(StageEvent::Done {
                        worker,
                        end_ns,
                        failure: failure.as_deref(),
                    });
                    if let Some(f) = failure {
                        failures.push((worker, f));
                    }
                }
                Err(RecvTimeoutError::Timeout) => on_event(StageEvent::Tick),
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
    });
    StageOutcome {
        t0,
        ended: Instant::now(),
        failures,
        steady_after,
        ended_by,
    }
}

#[cfg(test)]
mod fio_keys_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Backend, FileTarget, Stop};
    use std::io::Write;
    use stormark_stats::Op;

    fn collect(specs: Vec<WorkerSpec>) -> (Snapshot, Vec<(usize, String)>) {
        let mut total = Snapshot::new();
        let out = run_stage(specs, Arc::new(AtomicBool::new(false)), &mut |e| {
            if let StageEvent::Interval { snap, .. } = e {
                total += &*snap;
            }
        });
        (total, out.failures)
    }

    fn temp_file(len: usize) -> (tempfile::TempDir, FileTarget) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::File::create(&path)
            .unwrap()
            .write_all(&vec![7u8; len])
            .unwrap();
        (dir, FileTarget::path(path, len as u64))
    }

    #[test]
    fn io_total_bounds_every_backend() {
        let (_dir, file) = temp_file(1 << 20);
        let mut backends = vec![Backend::Psync, Backend::Null];
        if crate::io_uring_available().is_ok() {
            backends.push(Backend::IoUring);
        } else {
            eprintln!("skipping io_uring: not available on this kernel");
        }
        for backend in backends {
            let spec = WorkerSpec {
                load: crate::Load::of_files(backend).expect("a file backend"),
                iodepth: 8,
                read_pct: 50,
                stop: Stop {
                    time: None,
                    io_total: Some(1 << 20),
                },
                ..WorkerSpec::new(vec![file.clone()])
            };
            let (total, failures) = collect(vec![spec]);
            assert!(failures.is_empty(), "{backend:?}: {failures:?}");
            let t = total.total();
            assert_eq!(t.ops, 256, "{backend:?}");
            assert_eq!(t.bytes, 1 << 20, "{backend:?}");
            assert!(
                total.op(Op::Read).ops > 0 && total.op(Op::Write).ops > 0,
                "{backend:?}"
            );
        }
    }

    fn open_loop(
        backend: Backend,
        rate: f64,
        secs: u64,
        stall: Option<(Duration, Duration)>,
        file: FileTarget,
    ) -> Snapshot {
        let spec = WorkerSpec {
            load: crate::Load::of_files(backend).expect("a file backend"),
            rate_iops: rate,
            stall,
            iodepth: 4,
            stop: Stop {
                time: Some(Duration::from_secs(secs)),
                io_total: None,
            },
            ..WorkerSpec::new(vec![file])
        };
        collect(vec![spec]).0
    }

    /// Issue 7: the rate limiter holds the requested rate within 1% (sleep-only engine).
    #[test]
    fn open_loop_holds_the_rate() {
        let (_dir, file) = temp_file(1 << 20);
        let s = open_loop(Backend::Null, 2000.0, 3, None, file.clone());
        let ops = s.total().ops as f64;
        // Ops over the 3 s measured: 6000 due, give or take the last one in flight.
        assert!((ops - 6000.0).abs() <= 60.0, "{ops} I/Os in 3 s at 2000/s");
        // Every I/O has a response and a service time.
        let r = s.op(Op::Read);
        assert_eq!(r.service.as_ref().unwrap().len(), r.hist.len());
        if crate::io_uring_available().is_ok() {
            let s = open_loop(Backend::IoUring, 2000.0, 2, None, file);
            let ops = s.total().ops as f64;
            assert!(
                (ops - 4000.0).abs() <= 40.0,
                "io_uring: {ops} I/Os in 2 s at 2000/s"
            );
        }
    }

    /// Issue 7: coordinated omission is corrected: a 200 ms stall delays every I/O scheduled
    /// during it, and the response times show it while the service times do not.
    #[test]
    fn a_stall_shows_in_response_times() {
        let (_dir, file) = temp_file(1 << 20);
        let stall = Some((Duration::from_millis(500), Duration::from_millis(200)));
        let s = open_loop(Backend::Null, 1000.0, 2, stall, file.clone());
        let r = s.op(Op::Read);
        let service = r.service.as_ref().unwrap();
        // About 200 of the 2000 I/Os were due during the stall: p95 of the response time
        // is still tens of ms, their wait; the service time's p95 is a few µs.
        assert!(
            r.hist.value_at_quantile(0.95) > 20_000_000,
            "response p95 {}",
            r.hist.value_at_quantile(0.95)
        );
        assert!(r.hist.max() >= 150_000_000, "response max {}", r.hist.max());
        assert!(
            service.value_at_quantile(0.95) < 1_000_000,
            "service p95 {}",
            service.value_at_quantile(0.95)
        );
        // A closed loop measures only the one slow I/O: the omission the open loop corrects.
        let spec = WorkerSpec {
            load: crate::Load::Null,
            stall,
            stop: Stop {
                time: Some(Duration::from_secs(1)),
                io_total: None,
            },
            ..WorkerSpec::new(vec![file])
        };
        let closed = collect(vec![spec]).0;
        assert!(closed.op(Op::Read).hist.value_at_quantile(0.95) < 1_000_000);
    }

    #[test]
    fn a_named_start_is_kept() {
        let (_dir, file) = temp_file(1 << 16);
        let spec = WorkerSpec {
            load: crate::Load::Null,
            stop: Stop {
                time: None,
                io_total: Some(1 << 16),
            },
            ..WorkerSpec::new(vec![file])
        };
        let at = Instant::now() + Duration::from_millis(150);
        let out = run_stage_at(
            vec![spec],
            Arc::new(AtomicBool::new(false)),
            Some(at),
            &mut |_| {},
        );
        assert!(out.t0 >= at, "started {:?} early", at - out.t0);
    }

    #[test]
    fn write_once_fills_the_file() {
        let (_dir, file) = temp_file(10_000);
        std::fs::write(file.shown(), b"").unwrap();
        std::fs::File::options()
            .write(true)
            .open(file.shown())
            .unwrap()
            .set_len(10_000)
            .unwrap();
        let spec = WorkerSpec {
            write_once: true,
            bs_min: 4096,
            bs_max: 4096,
            ..WorkerSpec::new(vec![file.clone()])
        };
        let (total, failures) = collect(vec![spec]);
        assert!(failures.is_empty(), "{failures:?}");
        assert_eq!(total.op(Op::Write).bytes, 10_000);
        let data = std::fs::read(file.shown()).unwrap();
        assert!(
            data.iter().filter(|b| **b == 0).count() < 200,
            "the file holds written data"
        );
    }

    #[test]
    fn zero_buffers_write_zeros() {
        let (_dir, file) = temp_file(1 << 16);
        std::fs::write(file.shown(), vec![0xa5u8; 1 << 16]).unwrap();
        let spec = WorkerSpec {
            read_pct: 0,
            random_pct: 0,
            data: crate::DataShape {
                zero: true,
                ..crate::DataShape::default()
            },
            stop: Stop {
                time: None,
                io_total: Some(1 << 16),
            },
            ..WorkerSpec::new(vec![file.clone()])
        };
        let (total, failures) = collect(vec![spec]);
        assert!(failures.is_empty(), "{failures:?}");
        assert_eq!(total.op(Op::Write).bytes, 1 << 16);
        let data = std::fs::read(file.shown()).unwrap();
        assert!(data.iter().all(|b| *b == 0), "every written byte is zero");
    }

    #[test]
    fn missing_file_fails_cleanly_and_others_still_run() {
        let (_dir, file) = temp_file(1 << 16);
        let bad = FileTarget::path("/nonexistent/stormark", 1 << 16);
        let stop = Stop {
            time: None,
            io_total: Some(1 << 16),
        };
        let specs = vec![
            WorkerSpec {
                stop,
                ..WorkerSpec::new(vec![bad])
            },
            WorkerSpec {
                stop,
                ..WorkerSpec::new(vec![file])
            },
        ];
        let (total, failures) = collect(specs);
        assert_eq!(failures.len(), 1);
        assert!(
            failures[0].1.contains("cannot open /nonexistent/stormark"),
            "{failures:?}"
        );
        assert_eq!(total.total().ops, 16);
    }

    #[test]
    fn errors_are_counted_and_a_failing_worker_stops() {
        let (_dir, file) = temp_file(1 << 16);
        // Claim the file is longer than it is: reads past its end come back short.
        let long = FileTarget {
            len: 1 << 30,
            ..file
        };
        let spec = WorkerSpec {
            stop: Stop {
                time: Some(Duration::from_secs(30)),
                io_total: None,
            },
            random_pct: 0,
            ..WorkerSpec::new(vec![long])
        };
        let (total, failures) = collect(vec![spec]);
        assert_eq!(total.op(Op::Read).ops, 16);
        assert_eq!(total.op(Op::Read).errors, 100);
        let e = total.errors.entries().next().unwrap();
        assert_eq!((e.kind.name().as_str(), e.first_offset), ("short", 1 << 16));
        assert!(failures[0].1.contains("consecutive I/O errors"));
    }

    #[test]
    fn stop_flag_ends_a_stage() {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let spec = WorkerSpec {
            load: crate::Load::Null,
            ..WorkerSpec::new(vec![])
        };
        let mut intervals = 0;
        run_stage(vec![spec.clone(), spec], stop, &mut |e| match e {
            StageEvent::Started { .. } => flag.store(true, std::sync::atomic::Ordering::Relaxed),
            StageEvent::Interval { .. } => intervals += 1,
            _ => {}
        });
        assert_eq!(intervals, 2, "each worker sends its last interval");
    }

    #[test]
    fn ramp_is_discarded_and_intervals_follow() {
        let spec = WorkerSpec {
            load: crate::Load::Null,
            ramp: Duration::from_millis(300),
            stop: Stop {
                time: Some(Duration::from_millis(1200)),
                io_total: None,
            },
            ..WorkerSpec::new(vec![])
        };
        let mut seen = Vec::new();
        let mut end = 0;
        run_stage(
            vec![spec],
            Arc::new(AtomicBool::new(false)),
            &mut |e| match e {
                StageEvent::Interval { interval, .. } => seen.push(interval),
                StageEvent::Done { end_ns, .. } => end = end_ns,
                _ => {}
            },
        );
        assert_eq!(seen, vec![0, 1]);
        assert!((1_200_000_000..2_000_000_000).contains(&end), "{end}");
    }

    fn rule(band: f64, window: u64) -> SteadyState {
        SteadyState {
            figure: SteadyFigure::Iops,
            band,
            window: Duration::from_secs(window),
            slope: false,
        }
    }

    /// fio's `_slope`: a steady climb is not steady, however narrow each second's
    /// deviation; a flat noisy window is, where each second's deviation would say no.
    #[test]
    fn a_slope_rule_judges_the_windows_trend() {
        let slope = SteadyState {
            slope: true,
            ..rule(0.01, 4)
        };
        // 1% a second upward: a slope of 1.0 on a mean of 101.5.
        assert!(!steady(
            &[100.0, 101.0, 102.0, 103.0],
            &SteadyState {
                band: 0.005,
                ..slope
            }
        ));
        assert!(steady(&[100.0, 101.0, 102.0, 103.0], &slope));
        // Noisy but flat: the slope is 0, each second 10% off.
        assert!(steady(&[110.0, 90.0, 90.0, 110.0], &slope));
        assert!(!steady(&[110.0, 90.0, 90.0, 110.0], &rule(0.01, 4)));
    }

    #[test]
    fn steady_means_every_second_of_the_window_near_its_mean() {
        let r = rule(0.02, 3);
        assert!(!steady(&[100.0, 100.0], &r), "shorter than the window");
        assert!(steady(&[50.0, 100.0, 101.0, 99.0], &r));
        // 103 is 2.3% above the mean of 97, 100, 103 (100): outside 2%.
        assert!(!steady(&[97.0, 100.0, 103.0], &r));
        assert!(steady(&[98.5, 100.0, 101.5], &r));
        assert!(!steady(&[0.0, 0.0, 0.0], &r), "nothing done is not steady");
    }

    /// An open loop at 20k IOPS whose first second and a half stall: the ramp holds until the
    /// stalled seconds have left the window, then measuring starts on a whole second.
    #[test]
    fn a_steady_state_ends_the_ramp_once_the_figure_holds() {
        let spec = WorkerSpec {
            load: crate::Load::Null,
            rate_iops: 20_000.0,
            ramp: Duration::from_secs(30),
            steady: Some(rule(0.05, 2)),
            stall: Some((Duration::from_millis(300), Duration::from_millis(1500))),
            stop: Stop {
                time: Some(Duration::from_secs(1)),
                io_total: None,
            },
            ..WorkerSpec::new(vec![])
        };
        let mut ops = 0;
        let started = Instant::now();
        let out = run_stage(vec![spec], Arc::new(AtomicBool::new(false)), &mut |e| {
            if let StageEvent::Interval { snap, .. } = e {
                ops += snap.total().ops;
            }
        });
        let after = out.steady_after.expect("an even rate is steady");
        assert!(
            (3..=6).contains(&after.as_secs()),
            "steady after {after:?}: the stalled seconds must leave the window first"
        );
        assert_eq!(after.subsec_nanos(), 0);
        // One measured second at the rate, not the 30 s ramp.
        assert!(started.elapsed() < Duration::from_secs(15));
        assert!((19_000..=21_000).contains(&ops), "{ops}");
    }

    #[test]
    fn a_ramp_that_never_holds_ends_when_it_runs_out() {
        let spec = WorkerSpec {
            load: crate::Load::Null,
            rate_iops: 1000.0,
            ramp: Duration::from_millis(1500),
            // A window longer than the ramp cannot hold.
            steady: Some(rule(0.5, 5)),
            stop: Stop {
                time: Some(Duration::from_millis(500)),
                io_total: None,
            },
            ..WorkerSpec::new(vec![])
        };
        let mut intervals = Vec::new();
        let out = run_stage(vec![spec], Arc::new(AtomicBool::new(false)), &mut |e| {
            if let StageEvent::Interval { interval, .. } = e {
                intervals.push(interval);
            }
        });
        assert_eq!(out.steady_after, None);
        assert_eq!(intervals, vec![0]);
    }
}
