//! `--target-latency p99<=2ms`: the highest sustained throughput that meets every latency
//! target, found in a bounded number of steps.
//!
//! The search first climbs a ladder of concurrency (jobs × iodepth doubling from 1, closed
//! loop) until a step breaks a target, the throughput stops growing, or the allowed
//! concurrency runs out. When a step broke a target, the knee lies between the best step that
//! met them and the broken one: open-loop steps at fixed rates (response time measured from
//! the schedule) bisect that interval until it is narrower than [`TOLERANCE`]. The search
//! itself does no I/O: it is told what each step measured and says what to run next, so it
//! can be checked against a model of a device.

use std::collections::BTreeMap;

use stormark_spec::LatencyTarget;
use stormark_stats::{latency_stat, Load, SearchEnd, SearchReport, SearchStep, Summary, TargetDoc};

/// Bisection stops when the interval between the highest rate that met the targets and the
/// lowest that did not is narrower than this share of the latter.
pub const TOLERANCE: f64 = 0.05;

/// Throughput that grows by less than this share from one concurrency to the next counts as
/// flat; two flat steps in a row mean the target is saturated.
pub const FLAT_GAIN: f64 = 0.05;

/// An open-loop step meets its rate when it achieves at least this share of it.
pub const RATE_ACHIEVED: f64 = 0.97;

/// What the search may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchLimits {
    /// Most workers per host.
    pub max_jobs: u32,
    /// Most I/Os in flight per worker (1 for engines without a queue).
    pub max_iodepth: u32,
    /// Most steps in all.
    pub max_steps: u32,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Ladder,
    Bisect { lo: f64, hi: f64, top: f64 },
    Done(SearchEnd),
}

/// The search, one step at a time: [`Search::next`] says what to run, [`Search::observe`]
/// takes what it measured.
#[derive(Debug, Clone)]
pub struct Search {
    targets: Vec<LatencyTarget>,
    limits: SearchLimits,
    ladder: Vec<(u32, u32)>,
    rung: usize,
    mode: Mode,
    steps: Vec<SearchStep>,
    flat: u32,
    /// The concurrency of the broken rung, used for the open-loop steps.
    cap: (u32, u32),
}

/// Concurrency levels 1, 2, 4, ... up to `max_jobs × max_iodepth` (that too), each as
/// (jobs, iodepth): workers first, up to `max_jobs`, then depth.
fn ladder(limits: &SearchLimits) -> Vec<(u32, u32)> {
    let jobs_max = limits.max_jobs.max(1);
    let depth_max = limits.max_iodepth.max(1);
    let top = u64::from(jobs_max) * u64::from(depth_max);
    let mut out = Vec::new();
    let mut c: u64 = 1;
    loop {
        let c_now = c.min(top);
        let jobs = c_now.min(u64::from(jobs_max)) as u32;
        let depth = c_now.div_ceil(u64::from(jobs)).min(u64::from(depth_max)) as u32;
        if out.last() != Some(&(jobs, depth)) {
            out.push((jobs, depth));
        }
        if c_now >= top {
            break;
        }
        c *= 2;
    }
    out
}

impl Search {
    /// A search for `targets` (at least one) within `limits`.
    pub fn new(targets: Vec<LatencyTarget>, limits: SearchLimits) -> Search {
        let ladder = ladder(&limits);
        Search {
            targets,
            limits,
            cap: ladder[0],
            ladder,
            rung: 0,
            mode: Mode::Ladder,
            steps: Vec::new(),
            flat: 0,
        }
    }

    /// The next step's load, or `None` when the search is over.
    pub fn next(&self) -> Option<Load> {
        match self.mode {
            Mode::Done(_) => None,
            Mode::Ladder => {
                let (jobs, iodepth) = self.ladder[self.rung];
                Some(Load {
                    jobs,
                    iodepth,
                    rate_iops: None,
                })
            }
            Mode::Bisect { lo, hi, .. } => Some(Load {
                jobs: self.cap.0,
                iodepth: self.cap.1,
                rate_iops: Some(((lo + hi) / 2.0).max(1.0)),
            }),
        }
    }

    /// Takes what the step [`Search::next`] asked for measured, as `phase`.
    /// A target that names an operation (`sync:p99<=5ms`) reads that operation's latency
    /// from `by_op`.
    pub fn observe(&mut self, phase: &str, total: &Summary, by_op: &BTreeMap<String, Summary>) {
        let Some(load) = self.next() else {
            return;
        };
        let latency_ns: Vec<Option<f64>> = self
            .targets
            .iter()
            .map(|t| {
                let of = match t.op {
                    Some(op) => by_op.get(op).and_then(|s| s.latency_ns),
                    None => total.latency_ns,
                };
                of.map(|l| latency_stat(&l, t.stat))
            })
            .collect();
        let missed = self.missed(&load, total, &latency_ns);
        let met = missed.is_none();
        self.steps.push(SearchStep {
            phase: phase.to_string(),
            load,
            iops: total.iops,
            bw_bytes_per_s: total.bw_bytes_per_s,
            latency_ns,
            met,
            missed,
        });
        let best_before = self.best_iops_before_last();
        self.mode = match self.mode {
            Mode::Done(e) => Mode::Done(e),
            Mode::Ladder if met => {
                let grew = best_before.is_none_or(|b| total.iops > b * (1.0 + FLAT_GAIN));
                self.flat = if grew { 0 } else { self.flat + 1 };
                self.rung += 1;
                if self.flat >= 2 {
                    Mode::Done(SearchEnd::Saturated)
                } else if self.rung == self.ladder.len() {
                    Mode::Done(SearchEnd::ConcurrencyLimit)
                } else {
                    Mode::Ladder
                }
            }
            Mode::Ladder => {
                self.cap = self.ladder[self.rung];
                let lo = best_before.unwrap_or(0.0);
                let hi = total.iops;
                Self::narrow(lo, hi, hi)
            }
            Mode::Bisect { lo, hi, top } => {
                let rate = load.rate_iops.unwrap_or(hi);
                if met {
                    Self::narrow(rate.max(lo), hi, top)
                } else {
                    Self::narrow(lo, rate.min(hi), top)
                }
            }
        };
        if !matches!(self.mode, Mode::Done(_)) && self.steps.len() as u32 >= self.limits.max_steps {
            self.mode = Mode::Done(SearchEnd::StepLimit);
        }
    }

    /// The bisection interval, or the end when it is narrow enough (or hopeless).
    fn narrow(lo: f64, hi: f64, top: f64) -> Mode {
        if lo <= 0.0 && hi < top * 0.02 {
            Mode::Done(SearchEnd::Unreachable)
        } else if hi <= 0.0 || hi - lo <= TOLERANCE * hi {
            Mode::Done(SearchEnd::Converged)
        } else {
            Mode::Bisect { lo, hi, top }
        }
    }

    fn best_iops_before_last(&self) -> Option<f64> {
        let n = self.steps.len().saturating_sub(1);
        self.steps[..n]
            .iter()
            .filter(|s| s.met)
            .map(|s| s.iops)
            .reduce(f64::max)
    }

    fn missed(&self, load: &Load, total: &Summary, latency: &[Option<f64>]) -> Option<String> {
        if total.errors > 0 {
            return Some(format!("{} I/O errors", total.errors));
        }
        if total.ops == 0 {
            return Some("nothing completed".into());
        }
        let mut why = Vec::new();
        if let Some(rate) = load.rate_iops {
            if total.iops < rate * RATE_ACHIEVED {
                why.push(format!(
                    "achieved {:.0} of {:.0} IOPS asked ({:.0}%)",
                    total.iops,
                    rate,
                    100.0 * total.iops / rate
                ));
            }
        }
        for (t, v) in self.targets.iter().zip(latency) {
            if let (Some(op), None) = (t.op, v) {
                why.push(format!("no {op} operations were measured"));
            }
            if let Some(v) = v {
                if *v > t.limit_ns as f64 {
                    why.push(format!(
                        "{} {} > {}",
                        t.stat.name(),
                        fmt_ns(*v),
                        fmt_ns(t.limit_ns as f64)
                    ));
                }
            }
        }
        (!why.is_empty()).then(|| why.join(", "))
    }

    /// Ends the search early: the run stopped.
    pub fn interrupt(&mut self) {
        if !matches!(self.mode, Mode::Done(_)) {
            self.mode = Mode::Done(SearchEnd::Interrupted);
        }
    }

    /// What the search found so far.
    pub fn report(&self) -> SearchReport {
        let best = self
            .steps
            .iter()
            .filter(|s| s.met)
            .max_by(|a, b| a.iops.total_cmp(&b.iops));
        SearchReport {
            targets: self
                .targets
                .iter()
                .map(|t| TargetDoc {
                    stat: match t.op {
                        Some(op) => format!("{op}:{}", t.stat.name()),
                        None => t.stat.name().to_string(),
                    },
                    limit_ns: t.limit_ns,
                })
                .collect(),
            steps: self.steps.clone(),
            best: best.map(|s| s.phase.clone()),
            best_iops: best.map(|s| s.iops),
            first_broken: self.steps.iter().find(|s| !s.met).map(|s| s.phase.clone()),
            ended: match self.mode {
                Mode::Done(e) => e,
                _ => SearchEnd::Interrupted,
            },
        }
    }
}

/// `1.25 ms`, `830 us`: for messages.
fn fmt_ns(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.0} us", ns / 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use stormark_spec::LatencyStat;
    use stormark_stats::Latency;

    /// A device as a single queue (M/M/1): `cap` I/Os per second at most, `base_ns` of service
    /// with nothing queued; the 99th percentile of an exponential response time is ln(100) ≈
    /// 4.6 times its mean. Closed loop at concurrency c: mean = base + c / cap (Little's law).
    /// Open loop at rate r: mean = base / (1 - r / cap), unbounded at and above the rate the
    /// concurrency can carry.
    struct Model {
        cap: f64,
        base_ns: f64,
    }

    const P99_PER_MEAN: f64 = 4.605;

    impl Model {
        fn run(&self, load: &Load) -> Summary {
            let c = f64::from(load.jobs) * f64::from(load.iodepth);
            let base_s = self.base_ns / 1e9;
            let closed_iops = c / (base_s + c / self.cap);
            let (iops, mean_s) = match load.rate_iops {
                None => (closed_iops, base_s + c / self.cap),
                Some(r) if r < closed_iops => (r, base_s / (1.0 - r / self.cap)),
                // Overloaded: the queue grows without end; latency is the whole step.
                Some(_) => (closed_iops, 20.0),
            };
            let mean_ns = mean_s * 1e9;
            let p99 = (mean_ns * P99_PER_MEAN) as u64;
            Summary {
                ops: (iops * 20.0) as u64,
                bytes: (iops * 20.0) as u64 * 4096,
                iops,
                bw_bytes_per_s: iops * 4096.0,
                errors: 0,
                latency_ns: Some(Latency {
                    min: self.base_ns as u64,
                    mean: mean_ns,
                    p50: (mean_ns * 0.69) as u64,
                    p90: (mean_ns * 2.3) as u64,
                    p99,
                    p999: (mean_ns * 6.9) as u64,
                    p9999: (mean_ns * 9.2) as u64,
                    max: (mean_ns * 12.0) as u64,
                }),
                service_latency_ns: None,
                first_byte_latency_ns: None,
            }
        }

        /// The highest open-loop rate whose p99 meets `limit_ns`.
        fn knee(&self, limit_ns: f64) -> f64 {
            self.cap * (1.0 - P99_PER_MEAN * self.base_ns / limit_ns)
        }
    }

    const LIMITS: SearchLimits = SearchLimits {
        max_jobs: 8,
        max_iodepth: 256,
        max_steps: 20,
    };

    fn p99(limit_ns: u64) -> Vec<LatencyTarget> {
        vec![LatencyTarget {
            op: None,
            stat: LatencyStat::P99,
            limit_ns,
        }]
    }

    fn drive(model: &Model, targets: Vec<LatencyTarget>, limits: SearchLimits) -> SearchReport {
        let mut s = Search::new(targets, limits);
        let mut n = 0;
        while let Some(load) = s.next() {
            n += 1;
            assert!(
                n <= limits.max_steps,
                "the search must end within its budget"
            );
            s.observe(
                &format!("search-step-{n}"),
                &model.run(&load),
                &BTreeMap::new(),
            );
        }
        s.report()
    }

    #[test]
    fn finds_the_knee_of_a_queue() {
        let m = Model {
            cap: 100_000.0,
            base_ns: 100_000.0,
        };
        let r = drive(&m, p99(2_000_000), LIMITS);
        let knee = m.knee(2e6);
        let best = r.best_iops.unwrap();
        assert!(best <= knee * 1.001, "{best} above the knee {knee}");
        assert!(best >= knee * 0.90, "{best} not within 10% of {knee}");
        assert_eq!(r.ended, SearchEnd::Converged);
        assert!(r.steps.len() <= 12, "{} steps", r.steps.len());
        // The first broken step is a closed-loop rung; later ones bisect at fixed rates.
        let broken = r.first_broken.as_deref().unwrap();
        let i = r.steps.iter().position(|s| s.phase == broken).unwrap();
        assert!(r.steps[i].load.rate_iops.is_none());
        assert!(r.steps[i + 1..].iter().all(|s| s.load.rate_iops.is_some()));
        // Every step that met the targets really met them.
        for s in &r.steps {
            assert_eq!(s.met, s.latency_ns[0].unwrap() <= 2e6, "{s:?}");
        }
    }

    #[test]
    fn a_target_nothing_meets_is_said_so() {
        let m = Model {
            cap: 10_000.0,
            base_ns: 1_000_000.0,
        };
        let r = drive(&m, p99(1_000_000), LIMITS);
        assert_eq!(r.ended, SearchEnd::Unreachable);
        assert_eq!(r.best, None);
        assert_eq!(r.first_broken.as_deref(), Some("search-step-1"));
    }

    #[test]
    fn a_target_met_everywhere_stops_at_saturation() {
        let m = Model {
            cap: 50_000.0,
            base_ns: 50_000.0,
        };
        let r = drive(&m, p99(10_000_000_000), LIMITS);
        assert_eq!(r.ended, SearchEnd::Saturated);
        assert!(r.best_iops.unwrap() > 0.9 * m.cap);
        assert_eq!(r.first_broken, None);
    }

    #[test]
    fn little_concurrency_allowed_ends_at_the_limit() {
        let m = Model {
            cap: 1_000_000.0,
            base_ns: 100_000.0,
        };
        let limits = SearchLimits {
            max_jobs: 2,
            max_iodepth: 2,
            max_steps: 20,
        };
        let r = drive(&m, p99(2_000_000), limits);
        assert_eq!(r.ended, SearchEnd::ConcurrencyLimit);
        let last = r.steps.last().unwrap();
        assert_eq!((last.load.jobs, last.load.iodepth), (2, 2));
    }

    #[test]
    fn the_step_budget_holds() {
        let m = Model {
            cap: 100_000.0,
            base_ns: 100_000.0,
        };
        let limits = SearchLimits {
            max_steps: 3,
            ..LIMITS
        };
        let r = drive(&m, p99(2_000_000), limits);
        assert_eq!(r.steps.len(), 3);
        assert_eq!(r.ended, SearchEnd::StepLimit);
    }

    #[test]
    fn ladder_fills_workers_then_depth() {
        let l = ladder(&SearchLimits {
            max_jobs: 4,
            max_iodepth: 6,
            max_steps: 20,
        });
        assert_eq!(l, vec![(1, 1), (2, 1), (4, 1), (4, 2), (4, 4), (4, 6)]);
        let psync = ladder(&SearchLimits {
            max_jobs: 3,
            max_iodepth: 1,
            max_steps: 20,
        });
        assert_eq!(psync, vec![(1, 1), (2, 1), (3, 1)]);
    }

    #[test]
    fn a_target_on_one_operation_reads_that_operation() {
        let m = Model {
            cap: 100_000.0,
            base_ns: 100_000.0,
        };
        let sync = vec![LatencyTarget {
            op: Some("sync"),
            stat: LatencyStat::P99,
            limit_ns: 2_000_000,
        }];
        // No sync operation measured: the target is missed, never met by default.
        let mut s = Search::new(sync.clone(), LIMITS);
        let load = s.next().unwrap();
        s.observe("search-step-1", &m.run(&load), &BTreeMap::new());
        let r = s.report();
        assert!(!r.steps[0].met, "{r:?}");
        assert!(r.steps[0].missed.as_deref().unwrap().contains("no sync"));
        assert_eq!(r.targets[0].stat, "sync:p99");
        // The sync operation's own latency decides, whatever the total says.
        let mut s = Search::new(sync, LIMITS);
        let load = s.next().unwrap();
        let total = m.run(&load);
        let mut slow = total.clone();
        slow.latency_ns.as_mut().unwrap().p99 = 3_000_000;
        let by_op = BTreeMap::from([("sync".to_string(), slow)]);
        s.observe("search-step-1", &total, &by_op);
        assert!(!s.report().steps[0].met);
    }

    #[test]
    fn several_targets_must_all_hold() {
        let m = Model {
            cap: 100_000.0,
            base_ns: 100_000.0,
        };
        // Mean <= 300 us is the stricter: mean = base / (1 - r/cap) -> r <= cap * (1 - 1/3).
        let targets = vec![
            LatencyTarget {
                op: None,
                stat: LatencyStat::P99,
                limit_ns: 2_000_000,
            },
            LatencyTarget {
                op: None,
                stat: LatencyStat::Mean,
                limit_ns: 300_000,
            },
        ];
        let r = drive(&m, targets, LIMITS);
        let knee = m.cap * (1.0 - 1.0 / 3.0);
        let best = r.best_iops.unwrap();
        assert!(
            best <= knee * 1.001 && best >= knee * 0.9,
            "{best} vs {knee}"
        );
    }

    proptest! {
        /// Any queue whose knee lies within the allowed concurrency: found within 10%, in a
        /// bounded number of steps.
        #[test]
        fn knee_within_ten_percent(
            cap in 1_000.0f64..2_000_000.0,
            base_us in 20.0f64..2_000.0,
            c_knee in 0.5f64..1000.0,
        ) {
            let base_ns = base_us * 1e3;
            // The limit the closed loop reaches at concurrency c_knee (within the ladder).
            let limit = P99_PER_MEAN * (base_ns + c_knee / cap * 1e9);
            let m = Model { cap, base_ns };
            let r = drive(&m, p99(limit as u64), LIMITS);
            let knee = m.knee(limit);
            let best = r.best_iops.unwrap_or(0.0);
            prop_assert!(best <= knee * 1.001, "{} above {}", best, knee);
            prop_assert!(best >= knee * 0.90, "{} not within 10% of {} ({:?})", best, knee, r.ended);
            prop_assert!(r.steps.len() <= 20);
        }
    }
}
