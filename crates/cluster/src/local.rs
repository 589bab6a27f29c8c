//! The in-process agent: plans and checks the target on this host, creates the run
//! directory and files, runs stages with the engine, and removes what it created.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use stormark_engine::{
    io_uring_available, run_stage, run_stage_at, Backend, FileTarget, StageEvent, Stop, WorkerSpec,
};
use stormark_probe::{
    classify, device_in_use, fs_signature, odirect_supported, space, target_media, HostRoot,
    Inventory, Sampler, TargetKind,
};
use stormark_spec::units::format_size;
use stormark_spec::{Direct, EngineChoice, Job, StageLoad, Workload, DEFAULT_FILE_SIZE};
use stormark_stats::{Finding, HostSample, PhaseJob, Severity, Target};

use crate::agent::{Agent, AgentError, AgentEvent, Validated};

/// Name of the manifest stormark writes in every run directory: the files it created, their
/// sizes and whether they hold data. `--reuse` reads it; nothing else is trusted.
pub const MANIFEST: &str = ".stormark-run.json";

/// The most a ramp waits for a steady state when `--ramp` is not given.
pub const STEADY_MAX_RAMP: Duration = Duration::from_secs(600);

/// Stage index that [`Agent::workers`] uses for the preparation pass.
pub(crate) const PREPARE: usize = usize::MAX;

/// Where to run and what the user allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetOptions {
    /// A directory (a run directory is created inside), an existing file, or a block device;
    /// with `reuse`, a run directory kept by an earlier `keep` run.
    pub path: PathBuf,
    /// Leave the run directory and its files in place.
    pub keep: bool,
    /// Use the files of a kept run directory (`path`).
    pub reuse: bool,
    /// Allow writing into an existing file stormark did not create.
    pub allow_overwrite: bool,
    /// Allow writing to a block device.
    pub allow_device_write: bool,
    /// Write to a device even though it carries a filesystem or partition signature.
    pub force: bool,
}

impl TargetOptions {
    /// Options for `path` with nothing allowed.
    pub fn new(path: PathBuf) -> TargetOptions {
        TargetOptions {
            path,
            keep: false,
            reuse: false,
            allow_overwrite: false,
            allow_device_write: false,
            force: false,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Manifest {
    tool: String,
    files: Vec<ManifestFile>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct ManifestFile {
    name: String,
    size: u64,
    prepared: bool,
}

#[derive(Debug, Clone)]
enum Place {
    /// A run directory with files stormark made (now or in a kept run).
    Dir { run_dir: PathBuf, reused: bool },
    /// An existing file or device, used in place.
    Existing { path: PathBuf },
}

#[derive(Debug, Clone)]
struct PlannedFile {
    name: String,
    size: u64,
    needs_data: bool,
    exists: bool,
    prepared: bool,
}

#[derive(Debug, Clone)]
struct JobRun {
    job: Job,
    backend: Backend,
    direct: bool,
    /// Per worker, indices into `files` (directory targets) or empty (existing target).
    worker_files: Vec<Vec<usize>>,
    len: u64,
}

impl JobRun {
    /// Workers that run under `load`: the first that many of those validated.
    fn workers(&self, load: &StageLoad) -> usize {
        load.jobs
            .map_or(self.worker_files.len(), |j| j as usize)
            .min(self.worker_files.len())
    }

    /// Bytes of each file used under `load`: at most what was validated, in whole blocks.
    fn len_under(&self, load: &StageLoad) -> u64 {
        match load.size {
            Some(size) => {
                let align = load.bs.unwrap_or(self.job.bs_align).max(512);
                (size.min(self.len) / align * align).max(align.min(self.len))
            }
            None => self.len,
        }
    }
}

/// The agent of a local run.
pub struct LocalAgent {
    opts: TargetOptions,
    host: String,
    inventory: Inventory,
    stop: Arc<AtomicBool>,
    place: Option<Place>,
    files: Vec<PlannedFile>,
    stages: Vec<Vec<JobRun>>,
    prepare_all: bool,
    run_dir_created: bool,
    created: Vec<String>,
    prepare_workers: u32,
    notes: Vec<String>,
    sampler: Option<Sampler>,
    seed_salt: u64,
    hosts: u32,
}

impl LocalAgent {
    /// An agent for `opts` on this host.
    pub fn new(opts: TargetOptions) -> LocalAgent {
        let inventory = Inventory::collect();
        LocalAgent {
            opts,
            host: inventory.hostname.clone(),
            inventory,
            stop: Arc::new(AtomicBool::new(false)),
            sampler: None,
            seed_salt: 0,
            hosts: 1,
            place: None,
            files: Vec::new(),
            stages: Vec::new(),
            prepare_all: false,
            run_dir_created: false,
            created: Vec::new(),
            prepare_workers: 0,
            notes: Vec::new(),
        }
    }

    /// Shares the stop flag that Ctrl-C sets.
    pub fn with_stop(mut self, stop: Arc<AtomicBool>) -> LocalAgent {
        self.stop = stop;
        self
    }

    /// The number of hosts running the workload together: an open-loop rate (`rate_iops`, a
    /// total) is shared among them.
    pub fn with_hosts(mut self, hosts: u32) -> LocalAgent {
        self.hosts = hosts.max(1);
        self
    }

    /// Mixes `salt` into every worker's random seed, so that hosts of one distributed run
    /// (salt = the host's index) do not all draw the same offsets on shared storage.
    pub fn with_seed_salt(mut self, salt: u64) -> LocalAgent {
        self.seed_salt = salt.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self
    }

    fn run_dir(&self) -> Option<&Path> {
        match &self.place {
            Some(Place::Dir { run_dir, .. }) => Some(run_dir),
            _ => None,
        }
    }

    fn file_path(&self, i: usize) -> PathBuf {
        match &self.place {
            Some(Place::Dir { run_dir, .. }) => run_dir.join(&self.files[i].name),
            Some(Place::Existing { path, .. }) => path.clone(),
            None => PathBuf::new(),
        }
    }

    fn write_manifest(&self) -> Result<(), String> {
        let Some(dir) = self.run_dir() else {
            return Ok(());
        };
        let manifest = Manifest {
            tool: format!("stormark {}", env!("CARGO_PKG_VERSION")),
            files: self
                .files
                .iter()
                .filter(|f| f.exists)
                .map(|f| ManifestFile {
                    name: f.name.clone(),
                    size: f.size,
                    prepared: f.prepared,
                })
                .collect(),
        };
        let text = serde_json::to_string_pretty(&manifest).expect("a manifest serializes");
        std::fs::write(dir.join(MANIFEST), text)
            .map_err(|e| format!("cannot write {}: {e}", dir.join(MANIFEST).display()))
    }

    fn resolve_backend(&self, job: &Job, notes: &mut Vec<String>) -> Result<Backend, AgentError> {
        let backend = match job.engine {
            EngineChoice::Null => Backend::Null,
            EngineChoice::Psync => Backend::Psync,
            EngineChoice::IoUring => match io_uring_available() {
                Ok(()) => Backend::IoUring,
                Err(e) => {
                    return Err(AgentError::Refused(format!(
                        "--engine io_uring: not available here ({e}); use --engine psync or auto"
                    )))
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
        if backend == Backend::Psync && job.iodepth > 1 {
            push_once(notes, format!("job {}: psync does one I/O at a time per job; iodepth {} is ignored (use --engine io_uring for queue depth)", job.name, job.iodepth));
        }
        Ok(backend)
    }

    fn plan_dir(
        &mut self,
        workload: &Workload,
        stages: &[Vec<(Job, Backend)>],
        validated: &mut Validated,
    ) -> Result<(), AgentError> {
        let target = self.opts.path.clone();
        let (run_dir, manifest) = if self.opts.reuse {
            let text = std::fs::read_to_string(target.join(MANIFEST)).map_err(|_| {
                AgentError::Refused(format!(
                    "--reuse {}: no stormark run here (no {MANIFEST}); give the run directory that a --keep run printed",
                    target.display()
                ))
            })?;
            let m: Manifest = serde_json::from_str(&text).map_err(|e| {
                AgentError::Refused(format!(
                    "--reuse {}: {MANIFEST} is damaged ({e})",
                    target.display()
                ))
            })?;
            (target.clone(), Some(m))
        } else {
            if !is_writable(&target) {
                return Err(AgentError::Refused(format!(
                    "{}: not writable by this user; give a directory you can write to",
                    target.display()
                )));
            }
            let name = format!("stormark-{}-{}", stamp(), std::process::id());
            (target.join(name), None)
        };

        let mut index: BTreeMap<String, usize> = BTreeMap::new();
        self.stages.clear();
        for stage in stages {
            let mut runs = Vec::new();
            for (k, (job, backend)) in stage.iter().enumerate() {
                let align = job.bs_align.max(4096);
                let size = job.size.unwrap_or(DEFAULT_FILE_SIZE);
                let len = size / align * align;
                if len < job.bs.max {
                    return Err(AgentError::Refused(format!(
                        "--size {}: too small for --bs {} once rounded down to whole {} blocks",
                        format_size(size),
                        job.bs,
                        format_size(align)
                    )));
                }
                let mut worker_files = Vec::new();
                for w in 0..job.jobs {
                    let mut list = Vec::new();
                    for f in 0..job.files {
                        let name = format!("j{k}.w{w}.f{f}");
                        let i = *index.entry(name.clone()).or_insert_with(|| {
                            self.files.push(PlannedFile {
                                name,
                                size: 0,
                                needs_data: false,
                                exists: false,
                                prepared: false,
                            });
                            self.files.len() - 1
                        });
                        let pf = &mut self.files[i];
                        if *backend != Backend::Null {
                            pf.size = pf.size.max(len);
                            pf.needs_data |= job.read_pct() > 0 || workload.prepare;
                        }
                        list.push(i);
                    }
                    worker_files.push(list);
                }
                runs.push(JobRun {
                    job: job.clone(),
                    backend: *backend,
                    direct: false,
                    worker_files,
                    len,
                });
            }
            self.stages.push(runs);
        }
        // Files only null jobs touch are never created.
        if let Some(m) = &manifest {
            for pf in self.files.iter_mut().filter(|f| f.size > 0) {
                let known = m.files.iter().find(|f| f.name == pf.name);
                let on_disk = std::fs::metadata(run_dir.join(&pf.name))
                    .map(|m| m.len())
                    .ok();
                match (known, on_disk) {
                    (Some(k), Some(len)) if k.size >= pf.size && len == k.size => {
                        pf.exists = true;
                        pf.prepared = k.prepared;
                        pf.size = k.size;
                    }
                    _ => {
                        return Err(AgentError::Refused(format!(
                            "--reuse {}: {} is missing or smaller than the {} this run needs; run without --reuse",
                            run_dir.display(), pf.name, format_size(pf.size)
                        )))
                    }
                }
            }
        }
        let needed: u64 = self
            .files
            .iter()
            .filter(|f| !f.exists)
            .map(|f| f.size)
            .sum();
        let room = space(&target).map_err(|e| AgentError::Refused(e.to_string()))?;
        if needed > room.avail {
            return Err(AgentError::Refused(format!(
                "{}: the working set needs {} but only {} is free; lower --size, --files or --jobs",
                target.display(),
                human(needed),
                human(room.avail)
            )));
        }
        let pct = room.used_pct_after(needed);
        if pct > 80.0 {
            validated.findings.push(Finding {
                severity: Severity::Warning,
                code: "filesystem-nearly-full".into(),
                message: format!("the working set brings {} to {pct:.0}% full", target.display()),
                evidence: serde_json::json!({ "needed_bytes": needed, "free_bytes": room.avail, "size_bytes": room.total, "used_pct_after": pct }),
                advice: "Filesystems slow down as they fill (fragmentation, allocator search); results may be lower than on an emptier filesystem. Lower --size or free space.".into(),
            });
        }
        let media = target_media(&target);
        validated.target = Some(Target {
            path: target.display().to_string(),
            kind: "directory".into(),
            run_dir: Some(run_dir.display().to_string()),
            kept: self.opts.keep || self.opts.reuse,
            device: media.device,
            fs_type: media.fs_type,
        });
        self.place = Some(Place::Dir {
            run_dir,
            reused: self.opts.reuse,
        });
        Ok(())
    }

    fn plan_existing(
        &mut self,
        workload: &Workload,
        stages: &[Vec<(Job, Backend)>],
        kind: &TargetKind,
        validated: &mut Validated,
    ) -> Result<(), AgentError> {
        let path = self.opts.path.clone();
        let shown = path.display().to_string();
        if self.opts.reuse {
            return Err(AgentError::Refused(format!(
                "--reuse {shown}: expected the run directory a --keep run printed"
            )));
        }
        let writes = stages
            .iter()
            .flatten()
            .any(|(j, b)| j.read_pct() < 100 && *b != Backend::Null);
        let (total, block, lbs) = match kind {
            TargetKind::File { len } => (*len, false, 512),
            TargetKind::BlockDevice {
                size,
                logical_block,
                ..
            } => (*size, true, *logical_block),
            TargetKind::Directory => unreachable!("directories are planned by plan_dir"),
        };
        if writes && !block && !self.opts.allow_overwrite {
            return Err(AgentError::Refused(format!(
                "{shown}: this workload writes, and stormark did not create this file; add --allow-overwrite to overwrite its data"
            )));
        }
        if writes && block {
            if !self.opts.allow_device_write {
                return Err(AgentError::Refused(format!(
                    "{shown}: this workload writes to a block device, destroying its data; add --allow-device-write if that is intended"
                )));
            }
            if let TargetKind::BlockDevice { rdev, .. } = kind {
                if let Some(why) = device_in_use(&path, *rdev) {
                    return Err(AgentError::Refused(format!(
                        "{shown}: {why}; stormark never writes to a device in use"
                    )));
                }
            }
            if let Some(sig) =
                fs_signature(&path).map_err(|e| AgentError::Refused(e.to_string()))?
            {
                if !self.opts.force {
                    return Err(AgentError::Refused(format!(
                        "{shown}: holds a {sig} signature; add --force to overwrite it anyway"
                    )));
                }
            }
        }
        if workload.prepare {
            validated
                .notes
                .push(format!("--prepare skipped: {shown} already holds data"));
        }
        self.stages.clear();
        for stage in stages {
            let mut runs = Vec::new();
            for (job, backend) in stage {
                let align = job.bs_align.max(if block { lbs } else { 512 });
                let len = job.size.unwrap_or(total).min(total) / align * align;
                if len < job.bs.max {
                    return Err(AgentError::Refused(format!(
                        "{shown}: holds {} bytes, less than one block of {} (--bs)",
                        total,
                        format_size(job.bs.max)
                    )));
                }
                if block
                    && job.direct != Direct::No
                    && (job.bs.min % lbs != 0 || job.bs_align % lbs != 0)
                {
                    return Err(AgentError::Refused(format!(
                        "--bs {}: {shown} has {lbs}-byte logical blocks; O_DIRECT needs multiples of {lbs} (or use --buffered)",
                        job.bs
                    )));
                }
                runs.push(JobRun {
                    job: job.clone(),
                    backend: *backend,
                    direct: false,
                    worker_files: vec![Vec::new(); job.jobs as usize],
                    len,
                });
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
        self.place = Some(Place::Existing { path });
        Ok(())
    }

    fn decide_direct(&mut self, notes: &mut Vec<String>) -> Result<(), AgentError> {
        let wants = self
            .stages
            .iter()
            .flatten()
            .any(|r| r.job.direct != Direct::No && r.backend != Backend::Null);
        if !wants {
            return Ok(());
        }
        let (supported, what) = match &self.place {
            Some(Place::Dir { run_dir, .. }) => (
                odirect_supported(run_dir).map_err(|e| AgentError::Refused(e.to_string()))?,
                format!("the filesystem of {}", self.opts.path.display()),
            ),
            Some(Place::Existing { path, .. }) => {
                let r = OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_DIRECT)
                    .open(path);
                (
                    !matches!(&r, Err(e) if e.raw_os_error() == Some(libc::EINVAL)),
                    path.display().to_string(),
                )
            }
            None => (false, String::new()),
        };
        for run in self.stages.iter_mut().flatten() {
            run.direct = match (run.job.direct, supported) {
                (Direct::No, _) => false,
                (_, true) => true,
                (Direct::Yes, false) => {
                    return Err(AgentError::Refused(format!("--direct: {what} does not support O_DIRECT (tmpfs?); use --buffered or another target")))
                }
                (Direct::Auto, false) => {
                    push_once(notes, format!("direct auto: {what} does not support O_DIRECT; using buffered I/O, so the page cache may answer reads"));
                    false
                }
            };
        }
        Ok(())
    }

    fn phase_jobs(&self, index: usize, load: &StageLoad) -> Vec<PhaseJob> {
        self.stages[index]
            .iter()
            .map(|r| {
                let workers = r.workers(load);
                let len = r.len_under(load);
                PhaseJob {
                    name: r.job.name.clone(),
                    engine: r.backend.name().into(),
                    direct: r.direct,
                    workers: workers as u32,
                    iodepth: if r.backend == Backend::Psync {
                        1
                    } else {
                        load.iodepth.unwrap_or(r.job.iodepth)
                    },
                    rate_iops: load.rate_iops.or(r.job.rate_iops.map(f64::from)),
                    working_set_bytes: match &self.place {
                        Some(Place::Existing { .. }) => len,
                        _ => {
                            r.worker_files[..workers]
                                .iter()
                                .map(|f| f.len() as u64)
                                .sum::<u64>()
                                * len
                        }
                    },
                }
            })
            .collect()
    }

    /// Refuses a load the validated stage cannot carry (more workers than files were made
    /// for, a block larger than the files).
    fn check_load(&self, index: usize, load: &StageLoad) -> Result<(), AgentError> {
        for r in &self.stages[index] {
            if let Some(j) = load.jobs {
                if j == 0 || j as usize > r.worker_files.len() {
                    return Err(AgentError::Refused(format!(
                        "job {}: {j} workers asked of a stage validated for {}",
                        r.job.name,
                        r.worker_files.len()
                    )));
                }
            }
            if let Some(bs) = load.bs {
                if bs == 0 || bs > r.len_under(load) {
                    return Err(AgentError::Refused(format!(
                        "job {}: --bs {} is larger than the {} of each file used",
                        r.job.name,
                        format_size(bs),
                        format_size(r.len_under(load))
                    )));
                }
            }
        }
        Ok(())
    }

    fn create_files(&mut self) -> Result<(), AgentError> {
        let Some(Place::Dir { run_dir, reused }) = self.place.clone() else {
            return Ok(());
        };
        if !reused {
            std::fs::create_dir(&run_dir).map_err(|e| {
                AgentError::Refused(format!("cannot create {}: {e}", run_dir.display()))
            })?;
            self.run_dir_created = true;
        }
        self.write_manifest().map_err(AgentError::Refused)?;
        for i in 0..self.files.len() {
            if self.files[i].exists || self.files[i].size == 0 {
                continue;
            }
            let path = run_dir.join(&self.files[i].name);
            let file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(|e| {
                    AgentError::Failed(format!("cannot create {}: {e}", path.display()))
                })?;
            self.created.push(self.files[i].name.clone());
            self.files[i].exists = true;
            allocate(&file, self.files[i].size).map_err(|e| {
                AgentError::Failed(format!("cannot allocate {}: {e}", path.display()))
            })?;
        }
        self.write_manifest().map_err(AgentError::Failed)
    }
}

impl Agent for LocalAgent {
    fn host(&self) -> &str {
        &self.host
    }

    fn inventory(&self) -> serde_json::Value {
        serde_json::to_value(&self.inventory).expect("an inventory serializes")
    }

    fn validate(&mut self, workload: &Workload) -> Result<Validated, AgentError> {
        let mut v = Validated::default();
        let kind = classify(&self.opts.path).map_err(|e| AgentError::Refused(e.to_string()))?;
        let mut stages = Vec::new();
        for stage in workload.stages() {
            let mut jobs = Vec::new();
            for job in stage {
                jobs.push((job.clone(), self.resolve_backend(job, &mut v.notes)?));
            }
            stages.push(jobs);
        }
        self.prepare_all = workload.prepare;
        match &kind {
            TargetKind::Directory => self.plan_dir(workload, &stages, &mut v)?,
            other => self.plan_existing(workload, &stages, other, &mut v)?,
        }
        v.stages = (0..self.stages.len())
            .map(|i| self.phase_jobs(i, &StageLoad::AS_GIVEN))
            .collect();
        Ok(v)
    }

    fn prepare(
        &mut self,
        on_event: &mut dyn FnMut(AgentEvent<'_>),
    ) -> Result<Vec<PhaseJob>, AgentError> {
        self.create_files()?;
        let mut notes = Vec::new();
        let decided = self.decide_direct(&mut notes);
        self.notes.extend(notes);
        decided?;
        let todo: Vec<usize> = (0..self.files.len())
            .filter(|&i| {
                self.files[i].needs_data && !self.files[i].prepared && self.files[i].size > 0
            })
            .collect();
        if todo.is_empty() {
            return Ok(Vec::new());
        }
        let direct = self
            .run_dir()
            .map(|d| odirect_supported(d).unwrap_or(false))
            .unwrap_or(false);
        let backend = if io_uring_available().is_ok() {
            Backend::IoUring
        } else {
            Backend::Psync
        };
        let workers = todo.len().min(4);
        let bs = self
            .files
            .iter()
            .filter(|f| f.size > 0)
            .map(|f| f.size)
            .min()
            .unwrap_or(1 << 20)
            .min(1 << 20);
        let specs: Vec<WorkerSpec> = (0..workers)
            .map(|w| WorkerSpec {
                write_once: true,
                bs_min: bs,
                bs_max: bs,
                bs_align: bs,
                read_pct: 0,
                iodepth: 4,
                direct,
                backend,
                seed: 0x5eed + w as u64,
                ..WorkerSpec::new(
                    todo.iter()
                        .skip(w)
                        .step_by(workers)
                        .map(|&i| FileTarget {
                            path: self.file_path(i),
                            len: self.files[i].size,
                        })
                        .collect(),
                )
            })
            .collect();
        self.prepare_workers = workers as u32;
        let out = run_stage(specs, self.stop.clone(), &mut |e| {
            forward(e, &[(0u16, 0u32)], on_event, 0)
        });
        if let Some((_, f)) = out.failures.first() {
            return Err(AgentError::Failed(format!(
                "preparing the working set failed: {f}"
            )));
        }
        if !self.stop.load(Ordering::Relaxed) {
            for &i in &todo {
                if let Ok(f) = File::open(self.file_path(i)) {
                    let _ = f.sync_all();
                }
                self.files[i].prepared = true;
            }
            self.write_manifest().map_err(AgentError::Failed)?;
        }
        Ok(vec![PhaseJob {
            name: "prepare".into(),
            engine: backend.name().into(),
            direct,
            workers: workers as u32,
            iodepth: 4,
            rate_iops: None,
            working_set_bytes: todo.iter().map(|&i| self.files[i].size).sum(),
        }])
    }

    fn run_stage(
        &mut self,
        index: usize,
        load: &StageLoad,
        start_at: Option<std::time::SystemTime>,
        on_event: &mut dyn FnMut(AgentEvent<'_>),
    ) -> Result<Vec<PhaseJob>, AgentError> {
        // The wall-clock start as an instant of this process (a start already past: at once).
        let start_at = start_at.map(|at| {
            let now = Instant::now();
            match at.duration_since(std::time::SystemTime::now()) {
                Ok(ahead) => now + ahead,
                Err(_) => now,
            }
        });
        self.check_load(index, load)?;
        let steady = self.stages[index]
            .iter()
            .find_map(|r| r.job.steady_state.map(|s| (r.job.name.clone(), s)));
        let ramp = self.stages[index]
            .iter()
            .map(|r| r.job.ramp)
            .max()
            .unwrap_or_default();
        // Waiting for a steady state: the ramp is the most to wait.
        let ramp = match &steady {
            Some(_) if ramp.is_zero() => STEADY_MAX_RAMP,
            _ => ramp,
        };
        let mut specs = Vec::new();
        let mut map = Vec::new();
        for (k, run) in self.stages[index].iter().enumerate() {
            let workers = run.workers(load);
            let len = run.len_under(load);
            let (bs_min, bs_max, bs_align) = match load.bs {
                Some(bs) => (bs, bs, bs),
                None => (run.job.bs.min, run.job.bs.max, run.job.bs_align),
            };
            let rate = load.rate_iops.or(run.job.rate_iops.map(f64::from));
            for (w, files) in run.worker_files[..workers].iter().enumerate() {
                let targets: Vec<FileTarget> = match &self.place {
                    Some(Place::Existing { path, .. }) => vec![FileTarget {
                        path: path.clone(),
                        len,
                    }],
                    _ => files
                        .iter()
                        .map(|&i| FileTarget {
                            path: self.file_path(i),
                            len,
                        })
                        .collect(),
                };
                if !run.direct && run.job.invalidate && run.backend != Backend::Null {
                    // Like fio's default invalidate=1: start buffered jobs with a cold cache.
                    for t in &targets {
                        drop_cache(&t.path);
                    }
                }
                let one_pass: u64 = targets.iter().map(|t| t.len).sum();
                let stop = match (run.job.time, run.job.io_total) {
                    (None, None) => Stop {
                        time: None,
                        io_total: Some(one_pass),
                    },
                    (time, io_total) => Stop { time, io_total },
                };
                specs.push(WorkerSpec {
                    files: targets,
                    read_pct: run.job.read_pct(),
                    random_pct: run.job.random_pct,
                    bs_min,
                    bs_max,
                    bs_align,
                    iodepth: load.iodepth.unwrap_or(run.job.iodepth),
                    iodepth_batch: run.job.iodepth_batch,
                    iodepth_batch_complete: run.job.iodepth_batch_complete,
                    direct: run.direct,
                    backend: run.backend,
                    stop,
                    ramp,
                    seed: seed(index, k, w) ^ self.seed_salt,
                    write_once: false,
                    // The job's total rate, shared by its workers on every host.
                    rate_iops: rate
                        .map_or(0.0, |r| r / workers.max(1) as f64 / f64::from(self.hosts)),
                    steady: run.job.steady_state,
                    stall: None,
                });
                map.push((k as u16, w as u32));
            }
        }
        let out = run_stage_at(specs, self.stop.clone(), start_at, &mut |e| {
            forward(e, &map, on_event, 1)
        });
        if let Some((name, rule)) = &steady {
            if !self.stop.load(Ordering::Relaxed) {
                self.notes.push(match out.steady_after {
                    Some(d) => format!(
                        "job {name}: steady state ({rule}) held after {} s of ramp; measured from there",
                        d.as_secs()
                    ),
                    None => format!(
                        "job {name}: NOT steady: {rule} did not hold within the {} s ramp; measured anyway, figures may still drift (raise --ramp or widen the band)",
                        ramp.as_secs()
                    ),
                });
            }
        }
        if let Some((w, f)) = out.failures.first() {
            let (k, wk) = map[*w];
            let name = &self.stages[index][k as usize].job.name;
            let others = out.failures.len() - 1;
            let more = if others > 0 {
                format!(" (and {others} more workers)")
            } else {
                String::new()
            };
            return Err(AgentError::Failed(format!(
                "job {name} worker {wk}: {f}{more}"
            )));
        }
        Ok(self.phase_jobs(index, load))
    }

    fn cleanup(&mut self) -> Vec<String> {
        let mut notes = Vec::new();
        let Some(Place::Dir { run_dir, reused }) = self.place.clone() else {
            return notes;
        };
        if self.opts.keep || reused {
            if self.run_dir_created || reused {
                let _ = self.write_manifest();
                notes.push(format!(
                    "kept run directory {} (run again on it with: stormark run {} --reuse)",
                    run_dir.display(),
                    run_dir.display()
                ));
            }
            return notes;
        }
        if !self.run_dir_created {
            return notes;
        }
        for name in self.created.iter().map(String::as_str).chain([MANIFEST]) {
            let path = run_dir.join(name);
            if let Err(e) = std::fs::remove_file(&path) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    notes.push(format!("could not remove {}: {e}", path.display()));
                }
            }
        }
        if let Err(e) = std::fs::remove_dir(&run_dir) {
            notes.push(format!(
                "could not remove {}: {e} (files not created by stormark are left in place)",
                run_dir.display()
            ));
        }
        notes
    }

    fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    fn workers(&self, stage: usize) -> Vec<u32> {
        if stage == PREPARE {
            return vec![self.prepare_workers];
        }
        // Validated counts; a load's `jobs` takes the first that many.
        self.stages
            .get(stage)
            .map(|s| s.iter().map(|r| r.job.jobs).collect())
            .unwrap_or_default()
    }

    fn start_sampling(&mut self) {
        match Sampler::start(HostRoot::live(), Duration::from_secs(1)) {
            Ok(s) => self.sampler = Some(s),
            Err(e) => push_once(
                &mut self.notes,
                format!("host sampler could not start ({e}); no host counters, no diagnosis"),
            ),
        }
    }

    fn stop_sampling(&mut self) -> (Vec<HostSample>, Option<u64>) {
        match self.sampler.take() {
            Some(s) => {
                let got = s.stop();
                (got.samples, got.cpu_ns)
            }
            None => (Vec::new(), None),
        }
    }
}

/// Forwards engine events as agent events. `map` gives (job, worker) by engine worker index;
/// with `per_worker == 0` every engine worker is one worker of job 0 (the preparation).
fn forward(
    e: StageEvent<'_>,
    map: &[(u16, u32)],
    on_event: &mut dyn FnMut(AgentEvent<'_>),
    per_worker: u8,
) {
    let key = |w: usize| {
        if per_worker == 0 {
            (0u16, w as u32)
        } else {
            map[w]
        }
    };
    match e {
        StageEvent::Started { t0 } => on_event(AgentEvent::Started {
            at: std::time::SystemTime::now() - t0.elapsed(),
        }),
        StageEvent::Interval {
            worker,
            interval,
            snap,
        } => {
            let (job, worker) = key(worker);
            on_event(AgentEvent::Interval {
                job,
                worker,
                interval,
                snap,
            })
        }
        StageEvent::Done {
            worker,
            end_ns,
            failure,
        } => {
            let (job, worker) = key(worker);
            on_event(AgentEvent::Done {
                job,
                worker,
                end_ns,
                failure,
            })
        }
        StageEvent::Tick => on_event(AgentEvent::Tick),
    }
}

fn seed(stage: usize, job: usize, worker: usize) -> u64 {
    let mut x = (stage as u64) << 40 ^ (job as u64) << 20 ^ worker as u64 ^ 0x243F_6A88_85A3_08D3;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^ (x >> 33)
}

fn push_once(notes: &mut Vec<String>, note: String) {
    if !notes.contains(&note) {
        notes.push(note);
    }
}

fn is_writable(dir: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: c is a valid C string.
    unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
}

/// Reserves the file's blocks (fio's default `fallocate=native`), or sets its length where the
/// filesystem cannot.
fn allocate(file: &File, size: u64) -> std::io::Result<()> {
    // SAFETY: fd is open for writing; mode 0 allocates and extends.
    let r = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, size as libc::off_t) };
    if r == 0 {
        return Ok(());
    }
    file.set_len(size)
}

fn drop_cache(path: &Path) {
    if let Ok(f) = File::open(path) {
        // SAFETY: fd is valid; POSIX_FADV_DONTNEED only drops clean cached pages.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    }
}

fn stamp() -> String {
    let t = stormark_stats::format_rfc3339(std::time::SystemTime::now());
    // 2026-11-23T07:15:02.123Z -> 20261123-071502
    let digits: String = t.chars().filter(|c| c.is_ascii_digit()).collect();
    format!("{}-{}", &digits[..8], &digits[8..14])
}

fn human(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes() {
        assert_eq!(human(512), "512 B");
        assert_eq!(human(1536), "1.5 KiB");
        assert_eq!(human(3 << 30), "3.0 GiB");
    }

    #[test]
    fn seeds_differ() {
        assert_ne!(seed(0, 0, 0), seed(0, 0, 1));
        assert_ne!(seed(0, 1, 0), seed(1, 0, 0));
    }
}
