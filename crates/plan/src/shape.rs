//! The phases of a run: the workload's stages as given, or a search for the most load under a
//! latency target (`--target-latency`), a throughput-latency curve (`--curve`), or a sweep
//! over parameters (`--sweep`). Each asks for one phase at a time, seeing what the last
//! measured.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::search::{Search, SearchLimits};
use stormark_spec::units::format_size;
use stormark_spec::{mesh_steps, stage_steps, Step};
use stormark_spec::{
    parse_curve, parse_duration, parse_sweep, parse_target_latency, EngineChoice, Job, JobOpts,
    LatencyTarget, StageLoad, Sweep, SweepKey, Workload,
};
use stormark_stats::{CurvePoint, CurveReport, Load, PhaseKind, Results, SweepPoint, SweepReport};

/// The options that shape a run, as typed (`None`: not given).
#[derive(Debug, Clone, Default)]
pub struct ShapeOptions {
    /// `--target-latency`.
    pub target_latency: Option<String>,
    /// `--curve`.
    pub curve: Option<String>,
    /// `--sweep`, each.
    pub sweep: Vec<String>,
    /// `--step-time`.
    pub step_time: Option<String>,
    /// `--search-steps`.
    pub search_steps: Option<String>,
    /// Whether `--repeat` was given.
    pub repeat: bool,
    /// `stormark net --agents LIST`: a mesh of the agents' hosts.
    pub mesh: bool,
}

/// Measured time of a search step or curve point when none is given.
pub const DEFAULT_STEP_TIME: Duration = Duration::from_secs(20);
/// Warm-up of each search step or curve point when the workload gives none.
const DEFAULT_STEP_RAMP: Duration = Duration::from_secs(2);
/// Steps a search may take when `--search-steps` is not given.
const DEFAULT_SEARCH_STEPS: u32 = 20;
/// Most workers a search tries when neither `--jobs` nor the job gives a number.
const DEFAULT_SEARCH_JOBS: u32 = 8;
/// Most I/Os in flight per worker a search tries when the job gives no depth.
const DEFAULT_SEARCH_IODEPTH: u32 = 128;

/// Checks a sweep over agents against the agents given: at most that many.
pub fn check_agents(shape: &Shape, agents: usize, distributed: bool) -> Result<(), String> {
    if matches!(shape, Shape::Mesh) && (!distributed || agents < 2) {
        return Err(
            "--agents: a mesh needs at least two agents, such as node1:7878,node2:7878".into(),
        );
    }
    let Shape::Sweep(sweeps) = shape else {
        return Ok(());
    };
    let Some(s) = sweeps.iter().find(|s| s.key == SweepKey::Agents) else {
        return Ok(());
    };
    if !distributed {
        return Err("--sweep agents needs --agents or --agents-file".into());
    }
    let most = s.values.iter().max().copied().unwrap_or(0);
    if most as usize > agents {
        return Err(format!(
            "--sweep agents={most}: only {agents} agents are given; each point runs on the first N of them"
        ));
    }
    Ok(())
}

/// What shape of run the command line asks for.
#[derive(Debug, Clone)]
pub enum Shape {
    /// The workload's stages, each once.
    Plain,
    /// `--target-latency`.
    Search {
        /// Every target to meet.
        targets: Vec<LatencyTarget>,
        /// Measured time of each step.
        step_time: Duration,
        /// Most steps.
        max_steps: u32,
    },
    /// `--curve`.
    Curve {
        /// Percentages of the maximum, each an open-loop point.
        percents: Vec<u8>,
        /// Measured time of each point.
        step_time: Duration,
    },
    /// `--sweep`, one or more.
    Sweep(Vec<Sweep>),
    /// `stormark net --agents LIST`: the network between every pair of the run's hosts,
    /// each ordered pair alone (its throughput, then its round trips and path MTU), then all
    /// at once, over one `server = "agents"` net job.
    Mesh,
}

/// Reads the shaping options; every mistake is one line for the user.
pub fn shape(args: &ShapeOptions) -> Result<Shape, String> {
    let given = [
        args.target_latency.is_some(),
        args.curve.is_some(),
        !args.sweep.is_empty(),
    ];
    if given.iter().filter(|g| **g).count() > 1 {
        return Err("--target-latency, --curve and --sweep: give one of them per run".to_string());
    }
    let step_time = match &args.step_time {
        Some(t) => parse_duration(t)
            .filter(|d| *d >= Duration::from_secs(1))
            .ok_or_else(|| {
                format!("--step-time {t}: expected a duration of at least 1s, such as 20s or 1m")
            })?,
        None => DEFAULT_STEP_TIME,
    };
    if args.step_time.is_some() && !given[0] && !given[1] {
        return Err("--step-time: only with --target-latency or --curve".into());
    }
    if args.search_steps.is_some() && !given[0] {
        return Err("--search-steps: only with --target-latency".into());
    }
    if args.mesh {
        if given.iter().any(|g| *g) || args.repeat {
            return Err("a mesh runs its pairs once: leave out --target-latency, --curve, --sweep and --repeat".into());
        }
        return Ok(Shape::Mesh);
    }
    if args.repeat && given.iter().any(|g| *g) {
        return Err("--repeat with --target-latency, --curve or --sweep is not supported yet; run again and compare the documents with stormark compare".into());
    }
    if let Some(text) = &args.target_latency {
        let targets = parse_target_latency(text).map_err(|e| e.to_string())?;
        let max_steps = match &args.search_steps {
            Some(t) => t
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|n| (2..=200).contains(n))
                .ok_or_else(|| {
                    format!("--search-steps {t}: expected a whole number from 2 to 200")
                })?,
            None => DEFAULT_SEARCH_STEPS,
        };
        return Ok(Shape::Search {
            targets,
            step_time,
            max_steps,
        });
    }
    if let Some(text) = &args.curve {
        return Ok(Shape::Curve {
            percents: parse_curve(text).map_err(|e| e.to_string())?,
            step_time,
        });
    }
    if !args.sweep.is_empty() {
        let mut sweeps: Vec<Sweep> = Vec::new();
        for text in &args.sweep {
            let s = parse_sweep(text).map_err(|e| e.to_string())?;
            if sweeps.iter().any(|o| o.key == s.key) {
                return Err(format!(
                    "--sweep {text}: {} is swept twice; give its values in one --sweep",
                    s.key.name()
                ));
            }
            sweeps.push(s);
        }
        return Ok(Shape::Sweep(sweeps));
    }
    Ok(Shape::Plain)
}

impl Shape {
    fn flag(&self) -> &'static str {
        match self {
            Shape::Plain | Shape::Mesh => "",
            Shape::Search { .. } => "--target-latency",
            Shape::Curve { .. } => "--curve",
            Shape::Sweep(_) => "--sweep",
        }
    }

    /// Fits the one job of a shaped run to what its phases will ask: a search's most workers
    /// and depth and its step time, a sweep's largest block, size and worker count (files are
    /// made for the most any phase uses; each phase uses its share). `opts` is what the job
    /// file, profile and flags said, before defaults.
    pub fn fit(&self, opts: &JobOpts, job: &mut Job) -> Result<(), String> {
        let flag = self.flag();
        // Timed steps: `step_time` unless `keep_time` and the job gives a time; a short ramp
        // unless the job gives one.
        let timed = |job: &mut Job, step_time: Duration, keep_time: bool| {
            if !(keep_time && opts.time.is_some()) {
                job.time = Some(step_time);
                job.io_total = None;
            }
            if opts.ramp.is_none() {
                job.ramp = DEFAULT_STEP_RAMP;
            }
        };
        match self {
            Shape::Plain => {}
            Shape::Mesh => {
                if !job
                    .net
                    .as_ref()
                    .is_some_and(stormark_spec::NetJob::to_agents)
                {
                    return Err(
                        "a mesh runs a net job to the run's agents (server = \"agents\")".into(),
                    );
                }
            }
            Shape::Search { step_time, .. } => {
                if job.rate_iops.is_some() {
                    return Err(format!(
                        "{flag} with --rate-iops: the search chooses the rate; drop --rate-iops"
                    ));
                }
                if opts.jobs.is_none() {
                    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
                    job.jobs = (threads as u32).clamp(1, DEFAULT_SEARCH_JOBS);
                }
                if opts.iodepth.is_none() {
                    job.iodepth = DEFAULT_SEARCH_IODEPTH;
                }
                // A step's time is the step time, whatever the job said.
                timed(job, *step_time, false);
            }
            Shape::Curve { step_time, .. } => {
                if job.rate_iops.is_some() {
                    return Err(format!(
                        "{flag} with --rate-iops: the curve chooses the rates; drop --rate-iops"
                    ));
                }
                // A curve point runs --time when given.
                timed(job, *step_time, true);
            }
            Shape::Sweep(sweeps) => {
                for s in sweeps {
                    let most = *s.values.iter().max().expect("a sweep has values");
                    match s.key {
                        SweepKey::Bs if job.s3.is_some() => {
                            return Err("--sweep bs: an S3 run sweeps obj-size (--sweep obj-size=4k,64k,1m)".into());
                        }
                        SweepKey::Size | SweepKey::Iodepth if job.s3.is_some() => {
                            return Err(format!(
                                "--sweep {}: an S3 run sweeps obj-size, concurrency or agents",
                                s.key.name()
                            ));
                        }
                        SweepKey::ObjSize => {
                            let Some(s3) = job.s3.as_mut() else {
                                return Err(
                                    "--sweep obj-size is for S3 runs; a file run sweeps bs".into(),
                                );
                            };
                            // The objects for reads exist at every swept size.
                            let mut sizes = s.values.clone();
                            sizes.sort_unstable();
                            s3.prepare_sizes = sizes;
                        }
                        SweepKey::Bs => {
                            job.bs.min = most;
                            job.bs.max = most;
                            job.bs_align = most;
                        }
                        SweepKey::Size => job.size = Some(most),
                        SweepKey::Streams if job.net.is_none() => {
                            return Err(
                                "--sweep streams is for net runs; a file or S3 run sweeps jobs"
                                    .into(),
                            );
                        }
                        SweepKey::Jobs | SweepKey::Streams => job.jobs = most as u32,
                        SweepKey::Iodepth => job.iodepth = most as u32,
                        SweepKey::Agents => {
                            if job.rate_iops.is_some() {
                                return Err("--sweep agents with --rate-iops: the rate is shared by every agent of the run; sweep without a rate".into());
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// The phases a run asks for, one at a time.
pub enum Plan {
    /// The stages as given.
    Stages(std::vec::IntoIter<Step>),
    /// A mesh: each pair alone, then all at once; a pair whose streams did not connect has
    /// no round trips measured (they would wait on the same dead end).
    Mesh(std::vec::IntoIter<Step>),
    /// A search, once told each step's outcome.
    Search {
        /// Every target to meet.
        targets: Vec<LatencyTarget>,
        /// What the search may use.
        limits: SearchLimits,
        /// The controller.
        search: Search,
        /// Steps asked for so far.
        n: u32,
    },
    /// A curve: the maximum, then each percentage.
    Curve {
        /// Percentages of the maximum.
        percents: Vec<u8>,
        /// The next point (0: the maximum).
        next: usize,
        /// The maximum, once measured.
        max_iops: Option<f64>,
    },
    /// A sweep: every combination in turn.
    Sweep {
        /// The swept keys.
        keys: Vec<String>,
        /// Every point: its step and values.
        points: Vec<(Step, BTreeMap<String, u64>)>,
        /// The next point.
        next: usize,
        /// Points left out (a block larger than the size), in words.
        skipped: Vec<String>,
    },
}

/// How a sweep value is written in a phase name: sizes as typed (`4k`), counts as numbers.
fn show(key: SweepKey, v: u64) -> String {
    match key {
        SweepKey::Bs | SweepKey::Size | SweepKey::ObjSize => format_size(v),
        SweepKey::Jobs | SweepKey::Streams | SweepKey::Iodepth | SweepKey::Agents => v.to_string(),
    }
}

impl Plan {
    /// The plan of `shape` over `workload` (one job, fitted, when shaped) on `hosts` hosts.
    pub fn new(shape: &Shape, workload: &Workload, hosts: usize) -> Plan {
        match shape {
            Shape::Plain => Plan::Stages(stage_steps(workload).into_iter()),
            Shape::Mesh => Plan::Mesh(mesh_steps(hosts).into_iter()),
            Shape::Search {
                targets, max_steps, ..
            } => {
                let job = &workload.jobs[0];
                let limits = SearchLimits {
                    max_jobs: job.jobs,
                    max_iodepth: job.iodepth,
                    max_steps: *max_steps,
                };
                Plan::Search {
                    targets: targets.clone(),
                    limits,
                    search: Search::new(targets.clone(), limits),
                    n: 0,
                }
            }
            Shape::Curve { percents, .. } => Plan::Curve {
                percents: percents.clone(),
                next: 0,
                max_iops: None,
            },
            Shape::Sweep(sweeps) => {
                let job = &workload.jobs[0];
                let mut combos: Vec<Vec<(SweepKey, u64)>> = vec![Vec::new()];
                for s in sweeps {
                    combos = combos
                        .into_iter()
                        .flat_map(|c| {
                            s.values.iter().map(move |v| {
                                let mut c = c.clone();
                                c.push((s.key, *v));
                                c
                            })
                        })
                        .collect();
                }
                let mut points = Vec::new();
                let mut skipped = Vec::new();
                for combo in combos {
                    let name = format!(
                        "sweep:{}",
                        combo
                            .iter()
                            .map(|(k, v)| format!("{}={}", k.name(), show(*k, *v)))
                            .collect::<Vec<_>>()
                            .join(",")
                    );
                    let mut load = StageLoad::AS_GIVEN;
                    let mut hosts = None;
                    for (k, v) in &combo {
                        match k {
                            SweepKey::Agents => hosts = Some(*v as usize),
                            SweepKey::Bs | SweepKey::ObjSize => load.bs = Some(*v),
                            SweepKey::Size => load.size = Some(*v),
                            SweepKey::Jobs | SweepKey::Streams => load.jobs = Some(*v as u32),
                            SweepKey::Iodepth => load.iodepth = Some(*v as u32),
                        }
                    }
                    let bs = load.bs.unwrap_or(job.bs.max);
                    if let Some(size) = load.size.or(job.size) {
                        if bs > size {
                            skipped.push(format!(
                                "{name}: a {} block does not fit in {}",
                                format_size(bs),
                                format_size(size)
                            ));
                            continue;
                        }
                    }
                    let values = combo
                        .iter()
                        .map(|(k, v)| (k.name().to_string(), *v))
                        .collect();
                    let step = Step {
                        name,
                        kind: PhaseKind::SweepPoint,
                        stage: 0,
                        load,
                        hosts,
                        pair: None,
                    };
                    points.push((step, values));
                }
                Plan::Sweep {
                    keys: sweeps.iter().map(|s| s.key.name().to_string()).collect(),
                    points,
                    next: 0,
                    skipped,
                }
            }
        }
    }

    /// The next phase to run, given the results so far; `None` when done.
    pub fn next(&mut self, results: &Results) -> Option<Step> {
        let last = results.phases.last().filter(|p| p.measured());
        match self {
            Plan::Stages(steps) => steps.next(),
            Plan::Mesh(steps) => steps.find(|step| {
                let (Some((i, j)), PhaseKind::PairRtt) = (step.pair, step.kind) else {
                    return true;
                };
                let (i, j) = (i as u32, j as u32);
                results
                    .phases
                    .iter()
                    .filter(|p| p.kind() == PhaseKind::Pair)
                    .flat_map(|p| &p.net)
                    .any(|s| s.from == Some(i) && s.to == Some(j) && s.failure.is_none())
            }),
            Plan::Search {
                targets,
                limits,
                search,
                n,
            } => {
                if *n > 0 {
                    let phase = last?;
                    if *n == 1
                        && phase.jobs.first().is_some_and(|j| {
                            EngineChoice::parse(&j.engine).is_some_and(|e| !e.queues())
                        })
                    {
                        // One I/O at a time per worker: concurrency is workers alone. The
                        // first step (one worker, depth 1) is the same either way.
                        limits.max_iodepth = 1;
                        *search = Search::new(targets.clone(), *limits);
                    }
                    search.observe(&phase.name, &phase.total, &phase.by_op);
                }
                let Load {
                    jobs,
                    iodepth,
                    rate_iops,
                } = search.next()?;
                *n += 1;
                Some(Step {
                    name: format!("search-step-{n}"),
                    kind: PhaseKind::SearchStep,
                    stage: 0,
                    hosts: None,
                    pair: None,
                    load: StageLoad {
                        jobs: Some(jobs),
                        iodepth: Some(iodepth),
                        rate_iops,
                        ..StageLoad::AS_GIVEN
                    },
                })
            }
            Plan::Curve {
                percents,
                next,
                max_iops,
            } => {
                if *next == 0 {
                    *next = 1;
                    return Some(Step {
                        name: "curve-max".into(),
                        kind: PhaseKind::CurveMax,
                        stage: 0,
                        load: StageLoad::AS_GIVEN,
                        hosts: None,
                        pair: None,
                    });
                }
                let max = *max_iops.get_or_insert_with(|| last.map_or(0.0, |p| p.total.iops));
                let p = *percents.get(*next - 1)?;
                if max <= 0.0 {
                    return None;
                }
                *next += 1;
                Some(Step {
                    name: format!("curve-{p}"),
                    kind: PhaseKind::CurvePoint,
                    stage: 0,
                    hosts: None,
                    pair: None,
                    load: StageLoad {
                        rate_iops: Some(max * f64::from(p) / 100.0),
                        ..StageLoad::AS_GIVEN
                    },
                })
            }
            Plan::Sweep { points, next, .. } => {
                let (step, _) = points.get(*next)?;
                *next += 1;
                Some(step.clone())
            }
        }
    }

    /// At most how many more phases this plan hands out: exact for stages, curves and sweeps,
    /// a bound for a search (its step budget) and a mesh (a pair that did not connect has no
    /// round trips measured). What "phase 2 of 6" says while a run goes.
    pub fn steps_left(&self) -> usize {
        match self {
            Plan::Stages(steps) | Plan::Mesh(steps) => steps.len(),
            Plan::Search { limits, n, .. } => limits.max_steps.saturating_sub(*n) as usize,
            Plan::Curve { percents, next, .. } => (percents.len() + 1).saturating_sub(*next),
            Plan::Sweep { points, next, .. } => points.len().saturating_sub(*next),
        }
    }

    /// A search's steps so far, each as its row in the results will read (its load, figures
    /// and whether it met every target), so that each can be said as it ends; `None` for the
    /// other shapes.
    pub fn search_so_far(&self) -> Option<stormark_stats::SearchReport> {
        match self {
            Plan::Search { search, .. } => Some(search.report()),
            _ => None,
        }
    }

    /// Writes what the phases found into the results: `search`, `curve` or `sweep`.
    /// `completed`: every phase ran (else the search ended early).
    pub fn finish(self, results: &mut Results, completed: bool) {
        match self {
            Plan::Stages(_) | Plan::Mesh(_) => {}
            Plan::Search { mut search, .. } => {
                if !completed {
                    search.interrupt();
                }
                results.search = Some(search.report());
            }
            Plan::Curve { percents, .. } => {
                let Some(max) = results
                    .phases
                    .iter()
                    .find(|p| p.kind() == PhaseKind::CurveMax)
                else {
                    return;
                };
                let max_iops = max.total.iops;
                let mut points = vec![CurvePoint::of(max, None, None)];
                // The points ran in the order of the percentages (fewer if interrupted).
                let ran = results
                    .phases
                    .iter()
                    .filter(|x| x.kind() == PhaseKind::CurvePoint);
                for (p, phase) in percents.iter().copied().zip(ran) {
                    let rate = max_iops * f64::from(p) / 100.0;
                    points.push(CurvePoint::of(phase, Some(p), Some(rate)));
                }
                if max_iops <= 0.0 {
                    results
                        .notes
                        .push("--curve: the maximum measured 0 IOPS; no curve points".into());
                }
                results.curve = Some(CurveReport { max_iops, points });
            }
            Plan::Sweep {
                keys,
                points,
                skipped,
                ..
            } => {
                let mut report = SweepReport {
                    keys,
                    points: points
                        .into_iter()
                        .filter_map(|(step, values)| {
                            let phase = results.phases.iter().find(|p| p.name == step.name)?;
                            Some(SweepPoint::of(phase, values))
                        })
                        .collect(),
                    skipped,
                };
                report.compute_efficiency();
                for s in &report.skipped {
                    results.notes.push(format!("--sweep skipped {s}"));
                }
                results.sweep = Some(report);
            }
        }
    }
}
