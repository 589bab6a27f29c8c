//! The request: what the command line (or a job file or profile) asks for, resolved into a
//! workload, its target, the shape of the run, `--expect`, and what `--auto` chose from the
//! host's inventory.

use std::path::PathBuf;

use stormark_probe::{auto_size, Sizing, SizingInput};
use stormark_spec::units::format_size;
use stormark_spec::{parse_expect, profile, Expectation, Job, JobFile, JobOpts, Source, Workload};

use crate::shape::{shape, Shape, ShapeOptions};

/// What the command line asks for, resolved: the workload, where, and what `--auto` chose.
pub struct Request {
    /// The workload.
    pub workload: Workload,
    /// Where to run.
    pub target: PathBuf,
    /// Whether TARGET (or the job file's target) was given, rather than the current directory.
    pub target_given: bool,
    /// What `--auto` chose and why.
    pub auto: Vec<String>,
    /// `--expect`.
    pub expect: Vec<Expectation>,
    /// The shape of the run.
    pub shape: Shape,
    /// Notes for the results (a fio job file's options left out with `--lenient`).
    pub notes: Vec<String>,
    /// The quick profile runs (no flags, or `--profile quick`): a first look, not a
    /// measurement to quote.
    pub first_look: bool,
    /// The target is a file, perhaps still to be made: a fio job file's `filename=`.
    pub target_is_file: bool,
    /// A run of several targets (`stormark run T1 T2`, a fio job file whose jobs name
    /// different devices): each, in order, and whether it is a file to make when missing
    /// (a fio job file's `filename=`); each job's `target` names its own. Empty for a run of
    /// one (`target`); else `target` is the first.
    pub targets: Vec<(PathBuf, bool)>,
}

/// What the command line gave, as typed: the input of [`request`].
#[derive(Debug, Clone, Default)]
pub struct RequestOptions {
    /// Workload flags as job keys and their text (`bs`, `4k`).
    pub flags: Vec<(&'static str, String)>,
    /// `--on HOSTS FLAGS...`: a job per section, on those hosts, its flags over `flags`.
    pub on: Vec<(String, Vec<(&'static str, String)>)>,
    /// `--expect`.
    pub expect: Option<String>,
    /// The shaping options.
    pub shape: ShapeOptions,
    /// `--job`: its path as shown and its text (read by the caller).
    pub job_file: Option<(String, String)>,
    /// `--lenient`: a fio job file's options stormark does not run are left out, not refused.
    pub lenient: bool,
    /// Jobs read from another tool's command line (`--ior`): what it was, and the jobs, with
    /// notes on what was approximated.
    pub imported: Option<(String, JobFile, Vec<String>)>,
    /// `--profile`.
    pub profile: Option<String>,
    /// TARGET.
    pub target: Option<PathBuf>,
    /// TARGETs after the first: run at once with it, each job on each target.
    pub more_targets: Vec<PathBuf>,
    /// Where a run without TARGET goes: the current directory.
    pub current_dir: PathBuf,
    /// `--auto`.
    pub auto: bool,
    /// `--agents` or `--agents-file` given.
    pub distributed: bool,
    /// `--reuse`.
    pub reuse: bool,
    /// `--prepare`.
    pub prepare: bool,
}

/// Builds the workload from a job file or profile plus flags (and `--auto` between them).
/// Every mistake is one line for the user (exit 2).
pub fn request(args: &RequestOptions) -> Result<Request, String> {
    let flags = &args.flags;
    let mut cli = JobOpts::default();
    for (key, value) in flags {
        cli.set(key, value, Source::Flag)
            .map_err(|e| e.to_string())?;
    }
    let expect = match &args.expect {
        Some(text) => parse_expect(text).map_err(|e| e.to_string())?,
        None => Vec::new(),
    };
    let mut notes = Vec::new();
    let mut search = None;
    let plain = args.shape.target_latency.is_none()
        && args.shape.curve.is_none()
        && args.shape.sweep.is_empty()
        && !args.shape.mesh;
    let (file, first_look, target_is_file, fio_targets) = if args.on.is_empty() {
        job_file(args, &cli, plain, &mut notes, &mut search)?
    } else {
        // The flags before the first --on are every section's defaults, not over them.
        let file = on_sections(args, std::mem::take(&mut cli))?;
        (file, false, false, None)
    };
    // fio's latency_target: its search for the most load within the latency, as stormark's
    // (unless the command line shapes the run itself).
    let shape = match (search, &args.shape.target_latency) {
        (Some((target, window)), None) => {
            let shape = shape(&ShapeOptions {
                target_latency: Some(target.clone()),
                step_time: args.shape.step_time.clone().or(window),
                ..args.shape.clone()
            })
            .map_err(|e| format!("latency_target of the job file: {e}"))?;
            notes.push(format!(
            "latency_target: searched as --target-latency {target}, the most load (workers and depth) whose {} stays within it, as fio searches the depth",
            target.split("<=").next().unwrap_or("latency")
            ));
            shape
        }
        _ => shape(&args.shape)?,
    };
    let given = args
        .target
        .clone()
        .or(file.target.clone().map(PathBuf::from));
    // Several targets: TARGETs typed (each job on each), else a fio job file's (each job on
    // the one it names).
    let targets: Vec<(PathBuf, bool)> = match (&args.target, &fio_targets) {
        (Some(first), _) if !args.more_targets.is_empty() => std::iter::once(first)
            .chain(&args.more_targets)
            .map(|t| (t.clone(), false))
            .collect(),
        (None, Some(s)) => s
            .targets
            .iter()
            .map(|(t, is_file)| (PathBuf::from(t), *is_file))
            .collect(),
        _ => Vec::new(),
    };
    let target_given = given.is_some() || !targets.is_empty();
    let target = given
        .or(targets.first().map(|t| t.0.clone()))
        .unwrap_or_else(|| args.current_dir.clone());
    for t in std::iter::once(&target).chain(targets.iter().map(|t| &t.0)) {
        check_target(t)?;
    }
    if targets.len() > 1 {
        several_targets_fit(args, &shape, &targets)?;
    }
    if args.auto && args.distributed {
        return Err(
            "--auto with --agents: sizing from each agent's host is not done yet; give --jobs, --iodepth and --size".into(),
        );
    }
    if !matches!(shape, Shape::Plain) && file.jobs.len() > 1 {
        return Err(format!(
            "--target-latency, --curve and --sweep run one job; {} has {} (keep one, or give the job as flags)",
            args.job_file.as_ref().map_or(
                if args.on.is_empty() { "the profile" } else { "--on" },
                |(shown, _)| shown.as_str()
            ),
            file.jobs.len()
        ));
    }
    let several = file.jobs.len() > 1;
    let sections = if file.jobs.is_empty() {
        vec![JobOpts::default()]
    } else {
        file.jobs.clone()
    };
    let auto_input = args.auto.then(|| {
        (
            stormark_probe::collect_inventory(),
            SizingInput::for_target(&target, args.reuse),
        )
    });
    let mut auto_reasons = Vec::new();
    let mut jobs = Vec::new();
    for (i, section) in sections.iter().enumerate() {
        let asked = file.defaults.overlay(section).overlay(&cli);
        let mut auto = JobOpts::default();
        if let Some((inv, input)) = &auto_input {
            let input = SizingInput {
                files_per_job: asked.files.unwrap_or(1),
                ..input.clone()
            };
            let sizing = auto_size(inv, &input);
            auto.jobs = Some(sizing.jobs);
            auto.iodepth = Some(sizing.iodepth);
            auto.size = sizing.size;
            if i == 0 {
                auto_reasons = explain_auto(&sizing, &cli);
            }
        }
        let opts = file.defaults.overlay(section).overlay(&auto).overlay(&cli);
        let default_name = default_name(&opts, several, i);
        let mut job = opts.resolve(&default_name).map_err(|e| {
            if several {
                format!("job {}: {e}", opts.name.as_deref().unwrap_or(&default_name))
            } else {
                e.to_string()
            }
        })?;
        shape.fit(&opts, &mut job)?;
        match (&fio_targets, targets.len() > 1, args.target.is_some()) {
            // A fio job file's jobs, each on the target it names.
            (Some(s), true, false) => {
                let Some(k) = s.of_job.get(i).copied().flatten() else {
                    return Err(format!(
                        "job {} names no file, directory or device, while the others name {}: give it filename= or directory= (or give TARGET)",
                        job.name,
                        shown_targets(&targets)
                    ));
                };
                job.target = Some(targets[k].0.display().to_string());
                jobs.push(job);
            }
            // TARGETs typed: the job on each, all at once.
            (_, true, _) => jobs.extend(on_each_target(&job, &targets)),
            _ => jobs.push(job),
        }
    }
    if matches!(shape, Shape::Mesh) {
        jobs.push(stormark_spec::mesh_round_trips(&jobs[0]));
    }
    let prepare = args.prepare || file.prepare.unwrap_or(false);
    let jobs = cut_after_exit_all(jobs, &mut notes);
    let workload = Workload::new(jobs, prepare).map_err(|e| e.to_string())?;
    Ok(Request {
        workload,
        target,
        target_given,
        first_look,
        target_is_file: target_is_file && targets.is_empty(),
        targets,
        auto: auto_reasons,
        expect,
        shape,
        notes,
    })
}

/// fio's `exit_what=all`: when a worker of such a job ends, every job stops and none after it
/// starts; its stage always ends so (a stage ends when its workers do), so the jobs of later
/// stages never run: left out, said in a note.
fn cut_after_exit_all(jobs: Vec<Job>, notes: &mut Vec<String>) -> Vec<Job> {
    let mut stage_of: Vec<Option<&str>> = Vec::new();
    let mut stages = Vec::new();
    for job in &jobs {
        let g = job.group.as_deref();
        let k = match stage_of.iter().position(|s| g.is_some() && *s == g) {
            Some(k) => k,
            None => {
                stage_of.push(g);
                stage_of.len() - 1
            }
        };
        stages.push(k);
    }
    let Some(last) = jobs
        .iter()
        .zip(&stages)
        .filter(|(j, _)| j.exit == Some(stormark_spec::ExitWhat::All))
        .map(|(_, k)| *k)
        .min()
    else {
        return jobs;
    };
    let (kept, cut): (Vec<_>, Vec<_>) = jobs.into_iter().zip(stages).partition(|(_, k)| *k <= last);
    if !cut.is_empty() {
        let names: Vec<&str> = cut.iter().map(|(j, _)| j.name.as_str()).collect();
        notes.push(format!(
            "not run: {} (a job before them has exit_what=all, fio's exitall: once it ends, nothing after it starts)",
            names.join(", ")
        ));
    }
    kept.into_iter().map(|(j, _)| j).collect()
}

/// The job file, profile or default job the flags go over: the file as read (a fio job file
/// translated), whether it is the first look (`quick` alone), and whether its target is a
/// file to make.
/// `--on` sections as a job file's jobs, run at once: each section's flags and its hosts
/// over the flags given before the first `--on` (`common`).
fn on_sections(args: &RequestOptions, common: JobOpts) -> Result<JobFile, String> {
    if let Some(given) = [
        (args.job_file.is_some(), "--job"),
        (args.imported.is_some(), "--ior"),
        (args.profile.is_some(), "--profile"),
    ]
    .iter()
    .find_map(|(given, name)| given.then_some(name))
    {
        return Err(format!(
            "--on with {given}: give the hosts of each job in the job file (hosts = [0]), or the jobs as flags after each --on"
        ));
    }
    let mut jobs = Vec::new();
    for (i, (hosts, flags)) in args.on.iter().enumerate() {
        let mut opts = JobOpts::default();
        opts.set("hosts", hosts, Source::Flag)
            .map_err(|e| format!("--on {hosts}: {e}"))?;
        for (key, value) in flags {
            opts.set(key, value, Source::Flag)
                .map_err(|e| format!("--on {hosts}: {e}"))?;
        }
        // Named after its hosts (`on-1-3`), unless another section is.
        let mut name: String = format!("on-{hosts}")
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-.".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .take(60)
            .collect();
        if args.on[..i].iter().any(|(h, _)| h == hosts) {
            name = format!("{name}.{i}");
        }
        opts.name = Some(name);
        opts.group = Some("on".into());
        jobs.push(opts);
    }
    Ok(JobFile {
        defaults: common,
        target: None,
        prepare: None,
        jobs,
    })
}

fn job_file(
    args: &RequestOptions,
    cli: &JobOpts,
    plain: bool,
    notes: &mut Vec<String>,
    search: &mut Option<(String, Option<String>)>,
) -> Result<(JobFile, bool, bool, Option<stormark_spec::FioTargets>), String> {
    let flags = &args.flags;
    let mut first_look = false;
    let mut target_is_file = false;
    let mut several = None;
    let file: JobFile = if let Some((shown, file, said)) = &args.imported {
        notes.extend(said.iter().map(|n| format!("{shown}: {n}")));
        file.clone()
    } else if let Some((shown, text)) = &args.job_file {
        // fio's job files by their content, whatever their name (`job.ini`, `fio.cfg`), as
        // fio takes them; `.toml` is always stormark's.
        let fio = shown.ends_with(".fio")
            || (!shown.ends_with(".toml") && stormark_spec::looks_like_fio(text));
        if fio {
            let f = crate::fio_file::read(text, shown, args.lenient)?;
            // time_based without runtime: fio runs until its --runtime; so does stormark,
            // given --time.
            if let (Some(job), None) = (f.untimed.first(), cli.time) {
                return Err(format!(
                    "time_based in {job} has no runtime: give one with --time, such as --time 60s (as fio's --runtime)"
                ));
            }
            // Only the file's own target is made when missing, never a TARGET typed.
            target_is_file = f.target_is_file && args.target.is_none();
            *search = f.latency_search.clone();
            // Jobs on two devices: each on its own, unless a TARGET replaces them.
            several = f.several.clone().filter(|_| args.target.is_none());
            if !f.ignored.is_empty() {
                notes.push(format!(
                    "{shown}: left out (--lenient): {}",
                    f.ignored.join(", ")
                ));
            }
            notes.extend(f.notes.iter().map(|n| format!("{shown}: {n}")));
            f.file
        } else {
            stormark_spec::parse_job_file(text, shown).map_err(|e| e.to_string())?
        }
    } else if let Some(name) = &args.profile {
        // With flags it is the user's own measurement, no longer the first look.
        first_look = name == "quick" && flags.is_empty();
        profile(name).map_err(|e| e.to_string())?
    } else if flags.is_empty() && plain {
        // (A search, curve or sweep with no workload flags shapes the default job instead:
        // they run one job.)
        first_look = true;
        profile("quick").expect("the quick profile ships with the binary")
    } else {
        JobFile::default()
    };
    Ok((file, first_look, target_is_file, several))
}

/// A target as typed or named by a job file: without control characters, and a URL of a
/// scheme stormark speaks well formed.
fn check_target(target: &std::path::Path) -> Result<(), String> {
    // A control character in a target would reach the terminal, the results and a printed
    // fio job file (a newline there starts a line of fio's options): no target has one.
    if target
        .as_os_str()
        .to_string_lossy()
        .chars()
        .any(char::is_control)
    {
        return Err(format!(
            "TARGET {}: holds a control character; name a path or URL without one",
            stormark_spec::shown(&target.as_os_str().to_string_lossy())
        ));
    }
    // An iSCSI LUN's or an NFS share's URL is checked here, before any agent is asked.
    stormark_spec::Target::parse(target).map_err(|e| format!("TARGET: {e}"))?;
    Ok(())
}

/// What a run of several targets cannot be: one job shaped into steps (a search, curve or
/// sweep), over agents (each host's own target is `--target HOST=PATH`), two targets the same.
fn several_targets_fit(
    args: &RequestOptions,
    shape: &Shape,
    targets: &[(PathBuf, bool)],
) -> Result<(), String> {
    if args.distributed {
        return Err(format!(
            "several TARGETs with --agents: each host runs one; give a host its own with --target HOST=PATH (targets given: {})",
            shown_targets(targets)
        ));
    }
    if !matches!(shape, Shape::Plain) {
        return Err(format!(
            "--target-latency, --curve and --sweep run one job on one target; {} are several (give one TARGET)",
            shown_targets(targets)
        ));
    }
    for (i, (t, _)) in targets.iter().enumerate() {
        if targets[..i].iter().any(|(u, _)| u == t) {
            return Err(format!(
                "TARGET {} is given twice; name each target once",
                t.display()
            ));
        }
    }
    Ok(())
}

/// The targets as a list for a message: `/dev/sdb and /dev/sdc`.
fn shown_targets(targets: &[(PathBuf, bool)]) -> String {
    let names: Vec<String> = targets
        .iter()
        .map(|(t, _)| t.display().to_string())
        .collect();
    names.join(" and ")
}

/// `job` on each of `targets`, all in one stage (its group, else its name as a group), each
/// named after its target (`randread-4k.sdb`; by number where two would share a name).
fn on_each_target(job: &Job, targets: &[(PathBuf, bool)]) -> Vec<Job> {
    let labels: Vec<String> = targets
        .iter()
        .map(|(t, _)| {
            t.file_name()
                .map(|n| {
                    n.to_string_lossy()
                        .chars()
                        .map(|c| {
                            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                                c
                            } else {
                                '_'
                            }
                        })
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect();
    let unique = labels
        .iter()
        .enumerate()
        .all(|(i, l)| !l.is_empty() && !labels[..i].contains(l));
    targets
        .iter()
        .enumerate()
        .map(|(i, (t, _))| {
            let label = if unique {
                labels[i].clone()
            } else {
                (i + 1).to_string()
            };
            let mut name = format!("{}.{label}", job.name);
            // Within a name's 64 characters, as a job file's.
            if name.len() > 64 {
                name = format!("{}.{}", &job.name[..job.name.len().min(60)], i + 1);
            }
            Job {
                name,
                group: Some(job.group.clone().unwrap_or_else(|| job.name.clone())),
                target: Some(t.display().to_string()),
                ..job.clone()
            }
        })
        .collect()
}

/// The name of job `i` when it gives none: `jobN` among several, else one that says what it
/// does (`randread-4k`, `s3-get-1m`, `meta`).
fn default_name(opts: &JobOpts, several: bool, i: usize) -> String {
    if several {
        format!("job{}", i + 1)
    } else if opts.kind == Some(stormark_spec::LoadKind::Meta) {
        "meta".to_string()
    } else if opts.kind == Some(stormark_spec::LoadKind::S3) {
        // s3-get-1m, s3-mixed-64k.
        let mix = opts
            .op_mix
            .as_ref()
            .map_or("get", |m| match m.0.as_slice() {
                [(op, _)] => op.name(),
                _ => "mixed",
            });
        let (lo, hi) = opts.obj_size.unwrap_or((1 << 20, 1 << 20));
        let size = if lo == hi {
            stormark_spec::units::format_size(lo)
        } else {
            format!(
                "{}-{}",
                stormark_spec::units::format_size(lo),
                stormark_spec::units::format_size(hi)
            )
        };
        format!("s3-{mix}-{size}")
    } else {
        // A bssplit's sizes, smallest to largest (`read-64k-1m`), not the block size it
        // leaves unused.
        let size = match &opts.bs_split {
            Some(split) => {
                let mut sizes: Vec<u64> = split.reads().iter().map(|(b, _)| *b).collect();
                sizes.sort_unstable();
                sizes.dedup();
                match (sizes.first(), sizes.last()) {
                    (Some(lo), Some(hi)) if lo != hi => format!(
                        "{}-{}",
                        stormark_spec::units::format_size(*lo),
                        stormark_spec::units::format_size(*hi)
                    ),
                    (Some(one), _) => stormark_spec::units::format_size(*one),
                    _ => "4k".to_string(),
                }
            }
            None => opts.bs.map_or_else(|| "4k".to_string(), |b| b.to_string()),
        };
        format!("{}-{size}", opts.rw.map_or("read", |r| r.name()))
    }
}

/// `--auto`'s reasons, with the choices that flags overrode said as such.
fn explain_auto(sizing: &Sizing, cli: &JobOpts) -> Vec<String> {
    sizing
        .reasons
        .iter()
        .map(|r| {
            let overridden = [
                ("jobs ", cli.jobs.map(|v| format!("--jobs {v}"))),
                ("iodepth ", cli.iodepth.map(|v| format!("--iodepth {v}"))),
                (
                    "size",
                    cli.size.map(|v| format!("--size {}", format_size(v))),
                ),
            ]
            .into_iter()
            .find_map(|(prefix, flag)| r.starts_with(prefix).then_some(flag).flatten());
            match overridden {
                Some(flag) => format!("{flag} given (auto would say: {r})"),
                None => r.clone(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
