//! Validation's planning: which backend each job gets, and where each job's workers do their
//! I/O (files of a run directory, an existing file or device, or nothing for null load).

use std::collections::BTreeMap;

use stormark_engine::{io_uring_available, io_uring_depth_ok, Backend};
use stormark_probe::{target_media, TargetKind};
use stormark_spec::units::format_size;
use stormark_spec::{Direct, EngineChoice, Job, LoadKind, StageLoad, Workload, DEFAULT_FILE_SIZE};
use stormark_stats::{Finding, Severity, Target};

use super::specs::JobRun;
use super::workspace::{PlannedFile, Workspace};
use super::{human, limits, push_once, rules, LocalAgent, Where};
use crate::agent::{AgentError, Validated};

impl LocalAgent {
    pub(super) fn resolve_backend(
        &self,
        job: &Job,
        notes: &mut Vec<String>,
    ) -> Result<Backend, AgentError> {
        check_job_here(job, notes)?;
        match job.kind {
            LoadKind::S3 => return Ok(Backend::S3),
            LoadKind::Net => return Ok(Backend::Net),
            LoadKind::Meta => return Ok(Backend::Meta),
            LoadKind::File | LoadKind::Null => {}
        }
        let backend = match job.engine {
            EngineChoice::Null => Backend::Null,
            EngineChoice::Psync => Backend::Psync,
            EngineChoice::IoUring => match io_uring_available() {
                Ok(()) => Backend::IoUring,
                Err(e) => {
                    return Err(AgentError::option(
                        "--engine io_uring",
                        format!("not available here ({e}); use --engine psync or auto"),
                    ))
                }
            },
            EngineChoice::Auto => match io_uring_available() {
                Ok(()) => Backend::IoUring,
                Err(e) => {
                    push_once(
                        notes,
                        format!("engine auto: io_uring is not available ({e}); using psync"),
                    );
                    Backend::Psync
                }
            },
        };
        // A trim is a synchronous call (fallocate to punch a hole, BLKDISCARD), as fio's
        // engines make it too.
        let trims = backend == Backend::IoUring && job.rw.trims();
        let backend = if trims {
            push_once(notes, format!("job {}: trims are synchronous calls (a hole punched, a discard), one at a time: run by psync", job.name));
            Backend::Psync
        } else {
            backend
        };
        rules::check_ring(job, backend, &self.opts.path)?;
        if trims {
            return Ok(backend);
        }
        if backend == Backend::IoUring && job.iodepth > 4 {
            io_uring_depth_ok(job.iodepth).map_err(|e| {
                AgentError::job(&job.name, format!(
                    "--iodepth {}: this kernel refuses an io_uring of that depth ({e}); lower --iodepth",
                    job.iodepth
                ))
            })?;
        }
        if backend == Backend::Psync && job.iodepth > 1 {
            push_once(notes, format!("job {}: psync does one I/O at a time per job; iodepth {} is ignored (use --engine io_uring for queue depth)", job.name, job.iodepth));
        }
        Ok(backend)
    }

    pub(super) fn plan_dir(
        &mut self,
        workload: &Workload,
        stages: &[Vec<(Job, Backend)>],
        validated: &mut Validated,
    ) -> Result<(), AgentError> {
        let target = self.opts.path.clone();
        // A check of a file that an earlier stage of this run writes with --verify (fio's
        // read job verifying a write job's blocks) finds its state in this run directory.
        let written_before = |s: usize, j: &Job| {
            j.filename.is_some()
                && stages[..s]
                    .iter()
                    .flatten()
                    .any(|(w, _)| w.verify && !w.verify_only && w.filename == j.filename)
        };
        let unkept = stages
            .iter()
            .enumerate()
            .flat_map(|(s, stage)| stage.iter().map(move |(j, _)| (s, j)))
            .any(|(s, j)| j.verify_only && !written_before(s, j));
        if !self.opts.reuse && unkept {
            return Err(AgentError::option(
                "--verify-only",
                "the run directory a --verify --keep run printed, with --reuse: the expected state of its blocks is kept there",
            ));
        }
        let mut ws = if self.opts.reuse {
            Workspace::reuse(&target)?
        } else {
            Workspace::new_in(&target)?
        };
        ws.journal = self.journal.clone().map(|j| (j, self.opts.keep));
        for dir in ws.stale() {
            validated.notes.push(format!(
                "{dir}: a run directory of an earlier run whose process is gone (kept, or left by a crash); run on it with --reuse, or remove it"
            ));
        }
        if self.opts.reuse && stages.iter().flatten().any(|(j, _)| j.meta.is_some()) {
            return Err(AgentError::option(
                "--reuse",
                "metadata jobs make their tree afresh each run; run them without --reuse",
            ));
        }
        for (job, _) in stages.iter().flatten() {
            // A share of the job's own files' size is where each one's region starts; a share
            // of a file the jobs name is not run here.
            let pct = job.size_pct.map(|p| ("--size", p)).or(job
                .offset_pct
                .filter(|_| job.filename.is_some())
                .map(|p| ("--offset", p)));
            if let Some((key, p)) = pct {
                return Err(AgentError::option(
                    format!("{key} {p}%"),
                    format!(
                        "a size such as 1g: a share is of one file or device, and {} is a directory where stormark makes the files",
                        target.display()
                    ),
                ));
            }
            // A share (fio's offset=20%) starts each own file's region at that share of it.
            if job.filename.is_none() && (job.offset > 0 || job.offset_increment > 0) {
                push_once(
                    &mut validated.notes,
                    format!(
                        "job {}: --offset applies to one file or device the jobs share; in a run directory each job has its own files, used from their start",
                        job.name
                    ),
                );
            }
        }
        check_named_files(stages)?;
        let mut index: BTreeMap<String, usize> = BTreeMap::new();
        self.stages.clear();
        for (s, stage) in stages.iter().enumerate() {
            let mut runs = Vec::new();
            for (k, (job, backend)) in stage.iter().enumerate() {
                if matches!(backend, Backend::S3 | Backend::Net | Backend::Meta) {
                    // Objects or streams, not files: the bucket and the network's servers
                    // are checked after planning.
                    runs.push(JobRun::without_files(job, *backend));
                    continue;
                }
                let avail = if job.fill_device { ws.space()?.1 } else { 0 };
                runs.push(plan_job_files(
                    &mut ws.files,
                    avail,
                    &mut index,
                    (s, k),
                    job,
                    *backend,
                    workload,
                )?);
            }
            self.stages.push(runs);
        }
        // Files only null jobs touch are never created.
        if ws.reused() {
            ws.check_reuse()?;
        }
        check_space(&ws, &target, validated)?;
        let media = target_media(&target);
        validated.target = Some(Target {
            path: target.display().to_string(),
            kind: "directory".into(),
            run_dir: Some(ws.path().display().to_string()),
            kept: self.opts.keep || self.opts.reuse,
            device: media.device,
            fs_type: media.fs_type,
        });
        self.place = Some(Where::Dir(ws));
        Ok(())
    }

    pub(super) fn plan_existing(
        &mut self,
        workload: &Workload,
        stages: &[Vec<(Job, Backend)>],
        kind: &TargetKind,
        validated: &mut Validated,
    ) -> Result<(), AgentError> {
        let path = self.opts.path.clone();
        let shown = path.display().to_string();
        if self.opts.reuse {
            return Err(AgentError::option(
                format!("--reuse {shown}"),
                "expected the run directory a --keep run printed",
            ));
        }
        for (job, _) in stages.iter().flatten() {
            if job.fresh {
                return Err(AgentError::option(
                    "--fresh",
                    format!("{shown} is written in place: fresh writes go into new files; give a directory as TARGET"),
                ));
            }
            // A job file's jobs sharing this very file name it: nothing to say.
            let own = path.file_name().and_then(|n| n.to_str());
            if let Some(name) = job.filename.as_ref().filter(|n| Some(n.as_str()) != own) {
                push_once(
                    &mut validated.notes,
                    format!(
                        "job {}: its file {name} is one in a run directory; on {shown} the jobs share {shown} itself",
                        job.name
                    ),
                );
            }
            if job.verify_only {
                // fio's read job checking an earlier job's writes: its state needs a run
                // directory.
                let chained = stages.iter().flatten().any(|(w, _)| {
                    w.verify && !w.verify_only && w.filename.is_some() && w.filename == job.filename
                });
                if chained {
                    return Err(AgentError::job(
                        &job.name,
                        format!(
                            "checks the blocks an earlier job writes to {shown}: give a directory as TARGET (stormark run DIR --job FILE), where the run keeps their expected state between the jobs"
                        ),
                    ));
                }
                return Err(AgentError::option(
                    "--verify-only",
                    "the run directory a --verify --keep run printed, with --reuse: the expected state of its blocks is kept there, not beside a file or device",
                ));
            }
        }
        let writes = stages
            .iter()
            .flatten()
            .any(|(j, b)| j.read_pct() < 100 && b.touches_files());
        let (total, block, lbs) = match kind {
            TargetKind::File { len } => (*len, false, 512),
            TargetKind::BlockDevice {
                size,
                logical_block,
                ..
            } => (*size, true, *logical_block),
            TargetKind::Directory => unreachable!("directories are planned by plan_dir"),
        };
        let id = rules::check_existing(&self.opts, &path, kind, writes)?;
        if workload.prepare {
            validated
                .notes
                .push(format!("--prepare skipped: {shown} already holds data"));
        }
        self.stages.clear();
        for stage in stages {
            let mut runs = Vec::new();
            for (job, backend) in stage {
                if *backend == Backend::Meta {
                    return Err(AgentError::target(
                        path,
                        format!(
                            "job {}: metadata jobs make a tree of files: give a directory",
                            job.name
                        ),
                    ));
                }
                if matches!(backend, Backend::S3 | Backend::Net) {
                    runs.push(JobRun::without_files(job, *backend));
                    continue;
                }
                let on = Existing {
                    path: &path,
                    shown: &shown,
                    total,
                    block,
                    lbs,
                };
                runs.push(on.job_run(job, *backend, &mut validated.notes)?);
            }
            self.stages.push(runs);
        }
        let media = target_media(&path);
        validated.target = Some(Target {
            path: shown,
            kind: kind.kind_name().into(),
            run_dir: None,
            kept: false,
            device: media.device,
            fs_type: media.fs_type,
        });
        self.place = Some(Where::Existing { path, id });
        Ok(())
    }

    /// A workload whose jobs need no target (null load): workers without files.
    pub(super) fn plan_without_target(
        &mut self,
        workload: &Workload,
        v: &mut Validated,
    ) -> Result<(), AgentError> {
        self.stages.clear();
        for stage in workload.stages() {
            let mut runs = Vec::new();
            let mut needs = Vec::new();
            for job in stage {
                let backend = self.resolve_backend(job, &mut v.notes)?;
                needs.push(limits::Need::of(job, backend).on(true));
                runs.push(JobRun::without_files(job, backend));
            }
            limits::check_stage(&needs)?;
            self.stages.push(runs);
        }
        self.place = None;
        v.stages = (0..self.stages.len())
            .map(|i| self.phase_jobs(i, &StageLoad::AS_GIVEN))
            .collect();
        Ok(())
    }
}

/// What a job asks of this host whatever its backend: its CPUs and nodes exist here (fio's
/// `cpus_allowed`, `numa_*`), and a note where fio's random map is not kept.
pub(super) fn check_job_here(job: &Job, notes: &mut Vec<String>) -> Result<(), AgentError> {
    if job.placement.any() {
        stormark_engine::placement::allowed(&job.placement)
            .map_err(|e| AgentError::job(&job.name, e))?;
    }
    let mapped = job.bs.min == job.bs.max
        && job.bs_align == job.bs.min
        && job.bs_split.is_none()
        && job.distribution == stormark_spec::Distribution::Random
        && job.rand_run <= 1
        && !job.rw.trims();
    if job.random_map && job.random_pct > 0 && !mapped {
        push_once(
            notes,
            format!("job {}: fio's random map (each block once a pass) is kept for one block size aligned to itself, drawn uniformly; here offsets are drawn with repeats, as fio's norandommap", job.name),
        );
    }
    Ok(())
}

/// One file or device as a target: where, as shown, its length and whether it is a block
/// device of `lbs`-byte logical blocks.
pub(super) struct Existing<'a> {
    pub path: &'a std::path::Path,
    pub shown: &'a str,
    pub total: u64,
    pub block: bool,
    pub lbs: u64,
}

impl Existing<'_> {
    /// How `job` runs on it: its shares of the target settled, each worker's region placed
    /// (fio's offsets) and its length checked against the target.
    pub(super) fn job_run(
        &self,
        job: &Job,
        backend: Backend,
        notes: &mut Vec<String>,
    ) -> Result<JobRun, AgentError> {
        let (total, block, lbs) = (self.total, self.block, self.lbs);
        let align = job.bs_align.max(if block { lbs } else { 512 });
        // fio's shares of the file or device (size=95%, offset=50%) as bytes.
        let job = &job.on_length(total, align);
        // fio's offset: the last worker's region starts furthest in; what is left
        // after it is the most each worker's region may hold.
        let last_start = job.region_start(u64::from(job.jobs.max(1)) - 1);
        let offsets = job.offset > 0 || job.offset_increment > 0;
        // Regions start at any sector (a logical block of a device), as fio's.
        let sector = if block { lbs } else { 512 };
        let misplaced =
            !last_start.is_multiple_of(sector) || last_start.saturating_add(job.bs.max) > total;
        if offsets && misplaced {
            return Err(AgentError::job(
                    &job.name,
                    format!(
                        "--offset {} (+ {} per job, {} jobs) starts a region at {}, {} (a multiple of {} below the {} of {}, one block before its end)",
                        format_size(job.offset),
                        format_size(job.offset_increment),
                        job.jobs,
                        format_size(last_start),
                        if !last_start.is_multiple_of(sector) { "not aligned: expected offsets" } else { "past the end: expected offsets" },
                        format_size(sector),
                        format_size(total),
                        self.shown
                    ),
                ));
        }
        let room = total - last_start;
        if let Some(size) = job.size.filter(|&s| s > room) {
            push_once(
                notes,
                format!(
                    "job {}: --size {} is larger than {} ({}{}); capped to that",
                    job.name,
                    format_size(size),
                    self.shown,
                    format_size(room),
                    if last_start > 0 {
                        format!(" from {}", format_size(last_start))
                    } else {
                        String::new()
                    }
                ),
            );
        }
        let len = job.size.unwrap_or(room).min(room) / align * align;
        // Workers checking what they write need blocks of their own: regions apart (fio's
        // cross-stripe-verify: each clone its stripe, offset_increment past the last).
        if job.verify && job.jobs > 1 && job.offset_increment < len {
            return Err(AgentError::job(
                &job.name,
                format!(
                    "--verify on one file or device with {} workers needs their regions apart: --offset-increment of at least the size each writes ({}), or --jobs 1; or give a directory, where each worker has its own files",
                    job.jobs,
                    format_size(len)
                ),
            ));
        }
        if len < job.bs.max {
            return Err(AgentError::target(
                self.path,
                format!(
                    "holds {} bytes, less than one block of {} (--bs)",
                    total,
                    format_size(job.bs.max)
                ),
            ));
        }
        if block
            && job.direct != Direct::No
            && (!job.bs.min.is_multiple_of(lbs) || !job.bs_align.is_multiple_of(lbs))
        {
            return Err(AgentError::option(
                format!("--bs {}", job.bs),
                format!("{} has {lbs}-byte logical blocks; O_DIRECT needs multiples of {lbs} (or use --buffered)", self.shown),
            ));
        }
        Ok(JobRun {
            job: job.clone(),
            backend,
            direct: false,
            worker_files: vec![Vec::new(); job.jobs as usize],
            len,
            own_start: 0,
        })
    }
}

/// A job's own file (fio's `filename=`) is shared: by its workers, and by every job naming it.
/// `--verify` needs it to itself, one worker writing (another's writes cannot be told apart),
/// in each stage it runs in.
fn check_named_files(stages: &[Vec<(Job, Backend)>]) -> Result<(), AgentError> {
    for stage in stages {
        for (job, _) in stage {
            let Some(name) = job.filename.as_ref().filter(|_| job.verify) else {
                continue;
            };
            let others = stage
                .iter()
                .filter(|(j, _)| j.name != job.name && j.filename.as_ref() == Some(name))
                .map(|(j, _)| j.name.as_str())
                .collect::<Vec<_>>();
            if job.jobs > 1 || !others.is_empty() {
                return Err(AgentError::job(
                    &job.name,
                    format!(
                        "--verify on its file {name}, which {} too: --verify needs the file to one writer (--jobs 1, no other job of the stage naming it); or leave out the filename, for a file per worker",
                        if others.is_empty() { "its other workers write".to_string() } else { format!("job {} uses", others.join(", ")) }
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Job `k`'s workers' files in the run directory (`index` finds a file another job already
/// planned): their names, their sizes (the most any job uses), whether they need data.
/// `avail`: the free bytes where they go (used by fio's `fill_device` only).
pub(super) fn plan_job_files(
    files: &mut Vec<PlannedFile>,
    avail: u64,
    index: &mut BTreeMap<String, usize>,
    (stage, k): (usize, usize),
    job: &Job,
    backend: Backend,
    workload: &Workload,
) -> Result<JobRun, AgentError> {
    let align = job.bs_align.max(4096);
    let size = if job.fill_device {
        // fio's fill_device: the free space, shared by the job's files, written until full
        // (at most the size given); less a room kept for the run directory's own writes (a
        // MiB, and with --verify the expected state saved beside each file: 4 bytes a
        // verified block).
        let count = u64::from(job.jobs.max(1)) * u64::from(job.files.max(1));
        let state = if job.verify {
            let block = job
                .verify_interval
                .unwrap_or_else(|| stormark_spec::units::gcd(job.bs.min, job.bs_align));
            avail / block.max(512) * 4 + 4096 * count
        } else {
            0
        };
        let room = avail.saturating_sub((1 << 20) + state) / count;
        job.size.map_or(room, |s| s.min(room))
    } else {
        // A file an earlier job of the run names (fio's jobs sharing a file): its size, as
        // fio sizes a job by the file it finds.
        job.size.unwrap_or_else(|| {
            job.filename
                .as_ref()
                .and_then(|n| index.get(n))
                .map(|&i| files[i].size)
                .filter(|s| *s > 0)
                .unwrap_or(DEFAULT_FILE_SIZE)
        })
    };
    let len = size / align * align;
    if len < job.bs.max {
        return Err(AgentError::option(
            format!("--size {}", format_size(size)),
            format!(
                "too small for --bs {} once rounded down to whole {} blocks",
                job.bs,
                format_size(align)
            ),
        ));
    }
    // fio's offset=N% on the job's own files: each file's region starts at that share of its
    // size and runs to its end, as fio takes the share of each file it lays out.
    let own_start = match job.offset_pct.filter(|_| job.filename.is_none()) {
        Some(p) => (u128::from(len) * u128::from(p) / 100) as u64 / align * align,
        None => 0,
    };
    if len - own_start < job.bs.max {
        return Err(AgentError::option(
            format!("--offset {}%", job.offset_pct.unwrap_or(0)),
            format!(
                "leaves {} of each {} file, less than one block of {}: a smaller share",
                format_size(len - own_start),
                format_size(len),
                job.bs
            ),
        ));
    }
    // A shared file is written in full when the regions of the job's workers follow one
    // another from its start; the job's own files when their regions start at it.
    let in_full = job.writes_in_full()
        && ((job.filename.is_none() && own_start == 0)
            || (job.offset == 0 && (job.jobs <= 1 || job.offset_increment == len)));
    let reads = job.read_pct() > 0 || job.rw.trims();
    let mut worker_files = Vec::new();
    for w in 0..job.jobs {
        let mut list = Vec::new();
        for f in 0..job.files {
            // The job's own file (fio's filename=), which its workers share, each in its
            // region (fio's offset_increment); or each worker's own: the files of the worker
            // `file_shift` further on (IOR's -C), named by the job's place in its stage, so a
            // job after another in the same place works in the files that one used.
            let (name, end) = match &job.filename {
                Some(n) => (
                    n.clone(),
                    job.region_start(u64::from(w)).saturating_add(len),
                ),
                None => {
                    let owner = (u64::from(w) + u64::from(job.file_shift)) % u64::from(job.jobs);
                    (format!("j{k}.w{owner}.f{f}"), len)
                }
            };
            let mut new = false;
            let i = *index.entry(name.clone()).or_insert_with(|| {
                new = true;
                files.push(PlannedFile {
                    name,
                    size: 0,
                    needs_data: false,
                    exists: false,
                    prepared: false,
                    fill: false,
                    fresh: false,
                    written: None,
                    fresh_partly: None,
                    read_by: None,
                    id: None,
                });
                files.len() - 1
            });
            let pf = &mut files[i];
            if backend != Backend::Null {
                pf.size = pf.size.max(end);
                pf.fill |= job.fill_device;
                // What a job of an earlier stage wrote in full is there to read: no layout.
                let written_before = pf.written.is_some_and(|(s, n)| s < stage && end <= n);
                // --verify-only reads what a kept run left, as it is: never prepared.
                // What is read, or trimmed (a hole in a hole releases nothing), is written
                // first; with --prepare every file, but one a job empties first (--fresh).
                pf.needs_data |= ((reads && !written_before) || (workload.prepare && !job.fresh))
                    && !job.verify_only;
                if new {
                    pf.fresh = job.fresh;
                    if in_full {
                        let to = if job.filename.is_some() {
                            job.region_start(u64::from(job.jobs.max(1) - 1))
                                .saturating_add(len)
                        } else {
                            len
                        };
                        pf.written = Some((stage, to));
                    }
                }
                if job.fresh && !in_full {
                    pf.fresh_partly = Some(job.name.clone());
                }
                if reads {
                    pf.read_by = Some(job.name.clone());
                }
                if let (Some(writer), Some(reader)) = (&pf.fresh_partly, &pf.read_by) {
                    return Err(AgentError::job(
                        reader,
                        format!("reads the files job {writer} writes fresh for a time (--fresh with --time): a fresh file holds only what was written; give job {writer} a --size to write in full without --time, or leave out --fresh"),
                    ));
                }
            }
            list.push(i);
        }
        worker_files.push(list);
    }
    Ok(JobRun {
        job: job.clone(),
        backend,
        direct: false,
        worker_files,
        len: len - own_start,
        own_start,
    })
}

/// The working set must fit the free space; a filesystem it brings past 80% full is a finding.
fn check_space(
    ws: &Workspace,
    target: &std::path::Path,
    validated: &mut Validated,
) -> Result<(), AgentError> {
    let made = || ws.files.iter().filter(|f| !f.exists);
    // A file a job fills takes what room there is (ENOSPC is its end), the rest must fit.
    let needed: u64 = made().filter(|f| !f.fill).map(|f| f.size).sum();
    let filled: u64 = made().filter(|f| f.fill).map(|f| f.size).sum();
    let (total, avail, used) = ws.space()?;
    if needed > avail {
        return Err(AgentError::target(
            target,
            format!(
                "the working set needs {} but only {} is free; lower --size, --files or --jobs",
                human(needed),
                human(avail)
            ),
        ));
    }
    let pct = if total == 0 {
        0.0
    } else {
        (used + needed + filled.min(avail - needed)) as f64 * 100.0 / total as f64
    };
    if pct > 80.0 {
        validated.findings.push(Finding {
            severity: Severity::Warning,
            code: "filesystem-nearly-full".into(),
            message: format!("the working set brings {} to {pct:.0}% full", target.display()),
            evidence: serde_json::json!({ "needed_bytes": needed, "free_bytes": avail, "size_bytes": total, "used_pct_after": pct }),
            advice: "Filesystems slow down as they fill (fragmentation, allocator search); results may be lower than on an emptier filesystem. Lower --size or free space.".into(),
        });
    }
    Ok(())
}
