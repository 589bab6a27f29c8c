//! The in-process agent: checks the target on this host, makes and holds the run directory,
//! runs stages with the engine, and removes what it created. Split by concern: `rules` (may
//! this file or device be used), `workspace` (the run directory's life), `specs` (jobs and
//! stage loads into worker specs); this module is the [`Agent`] that ties them together.

mod bucket;
mod journal;
mod limits;
mod lun;
mod madefile;
mod manifest;
mod metajob;
mod metaleft;
mod netjob;
mod peers;
mod pin;
mod planning;
mod prepare;
mod rules;
mod service;
mod share;
mod shareclean;
mod specs;
mod stage;
mod workspace;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use stormark_engine::{run_stage_at, FileTarget, Identity, Place, StageEvent};
use stormark_probe::{classify, HostRoot, Inventory, Sampler, TargetKind};
use stormark_spec::{StageLoad, Workload};
use stormark_stats::{HostSample, PhaseJob};

use crate::agent::{
    Agent, AgentError, AgentEvent, NetPeer, NetPeers, Second, Stage, TargetOptions, Validated,
};
pub use bucket::{is_run_id, remove_host_objects, remove_run_objects};
pub use journal::Journal;
pub use manifest::MANIFEST;
pub(crate) use peers::MAX_PEERS;
use specs::JobRun;
use stage::steady_note;
pub(crate) use workspace::Removal;
use workspace::Workspace;

/// The most a ramp waits for a steady state when `--ramp` is not given.
pub const STEADY_MAX_RAMP: Duration = Duration::from_secs(600);

/// Where this host runs.
#[derive(Debug)]
enum Where {
    /// A run directory with files stormark made (now or in a kept run).
    Dir(Workspace),
    /// An existing file or device the user named, used in place; it must still be `id`.
    Existing { path: PathBuf, id: Identity },
    /// An iSCSI LUN, over each worker's own session.
    Lun(lun::Lun),
    /// A run directory made on an NFS share, over each worker's own connection.
    Share(share::ShareDir),
}

/// The agent of a local run.
pub struct LocalAgent {
    opts: TargetOptions,
    host: String,
    inventory: Inventory,
    stop: Arc<AtomicBool>,
    place: Option<Where>,
    stages: Vec<Vec<JobRun>>,
    prepare_workers: u32,
    notes: Vec<String>,
    sampler: Option<Sampler>,
    seed_salt: u64,
    hosts: u32,
    journal: Option<Journal>,
    /// An agent's (a process that outlives the run, [`LocalAgent::with_journal`]): what the
    /// run's end cannot remove of its objects is swept beside its service.
    agent: bool,
    /// An S3 run's place in its bucket.
    bucket: Option<bucket::Bucket>,
    /// This host's place in a distributed run (0 alone).
    index: u64,
    /// The trees of meta jobs, once made.
    meta: Vec<metajob::MetaJobTree>,
    /// Set by a second Ctrl-C: the cleanup of S3 objects stops waiting on the service and
    /// says what it left.
    abandon: Option<Arc<AtomicBool>>,
    /// The file target this run made (`create_file`), removed at the end unless kept.
    made: Option<madefile::MadeFile>,
    /// The net jobs' session reports since the coordinator last took them.
    net_reports: Vec<stormark_stats::NetReport>,
    /// Ports serving the run's other agents (net jobs between them), until the cleanup.
    peer_ports: Option<peers::PeerPorts>,
    /// fio's zoned mode: each file's zones, kept for the whole run as fio keeps them, and the
    /// resets already told.
    zone_maps: std::sync::Mutex<Vec<stage::ZonedFile>>,
    /// How far the cleanup's removal of the run directory's files has come.
    removal: Arc<Removal>,
    /// The files `pin_cache` holds in the page cache, until the cleanup.
    pinned: Option<pin::Pinned>,
}

impl LocalAgent {
    /// After stage `index` ran to its end: the files a job of it wrote in full hold data, as
    /// if prepared, so a `--keep` run's files are read as they are by a `--reuse` run. A
    /// manifest that cannot be written then (the file system a job filled) leaves them
    /// unprepared, the safe side, and says so.
    fn mark_written(&mut self, index: usize) {
        let done: Vec<usize> = self.stages[index]
            .iter()
            .filter(|r| r.job.writes_in_full())
            .flat_map(|r| r.worker_files.iter().flatten().copied())
            .collect();
        let Some(Where::Dir(ws)) = &mut self.place else {
            return;
        };
        let full: Vec<usize> = done
            .into_iter()
            .filter(|&i| {
                ws.files[i]
                    .written
                    .is_some_and(|(_, n)| n >= ws.files[i].size)
            })
            .collect();
        if full.is_empty() {
            return;
        }
        if let Err(e) = ws.mark_written(&full) {
            for i in full {
                ws.files[i].prepared = false;
            }
            push_once(
                &mut self.notes,
                format!("the files written in full are not recorded as holding data ({e}): a --reuse run lays them out again"),
            );
        }
    }

    /// An agent for `opts` on this host.
    pub fn new(opts: TargetOptions) -> LocalAgent {
        let inventory = stormark_probe::collect_inventory();
        LocalAgent {
            opts,
            host: inventory.hostname.clone(),
            inventory,
            stop: Arc::new(AtomicBool::new(false)),
            sampler: None,
            seed_salt: 0,
            hosts: 1,
            place: None,
            stages: Vec::new(),
            prepare_workers: 0,
            notes: Vec::new(),
            journal: None,
            agent: false,
            bucket: None,
            index: 0,
            meta: Vec::new(),
            abandon: None,
            made: None,
            net_reports: Vec::new(),
            peer_ports: None,
            zone_maps: std::sync::Mutex::new(Vec::new()),
            removal: Arc::new(Removal::default()),
            pinned: None,
        }
    }

    /// Counts the cleanup's removal of the run directory's files down in `removal`, which
    /// the agent's service reads while the removal goes on.
    pub(crate) fn with_removal(mut self, removal: Arc<Removal>) -> LocalAgent {
        self.removal = removal;
        self
    }

    /// The session of an agent (`stormark agent`, a process that outlives its runs): the
    /// run directories this agent creates are recorded in `journal` (when it has one), so
    /// that a crash leaves nothing behind once the agent starts again, and the S3 objects a
    /// run's end could not remove (a stalled service, PUTs left unanswered that it may still
    /// store) are swept beside the agent's service after the run, not left to a command.
    pub fn with_journal(mut self, journal: Option<Journal>) -> LocalAgent {
        self.journal = journal;
        self.agent = true;
        self
    }

    /// Makes the missing file target (a fio job file's `filename=`), laid out in full, and
    /// lets the run write it: it is this run's.
    fn make_file(
        &mut self,
        workload: &Workload,
        notes: &mut Vec<String>,
    ) -> Result<(), AgentError> {
        // fio makes a missing /dev/X as a regular file, in RAM (devtmpfs), and its "disk"
        // figures are memory's: a device path the host lacks is the user's mistake.
        let parent = self.opts.path.parent().and_then(|p| p.canonicalize().ok());
        if parent.is_some_and(|p| p.starts_with("/dev")) {
            return Err(AgentError::target(
                self.opts.path.clone(),
                "no such device on this host: a file made there would be in RAM (/dev is devtmpfs), not on a disk; name a device this host has (lsblk lists them)",
            ));
        }
        let size = madefile::size_for(workload);
        let made = madefile::MadeFile::make(&self.opts.path, size, &self.stop)?;
        if let Some(j) = &self.journal {
            j.add_file(made.path(), made.id(), self.opts.keep);
        }
        let how = match size {
            Some(size) => format!(
                "{} written before the load, as fio lays out a file it creates",
                human(size)
            ),
            None => "the free space less a MiB, for a job to fill".into(),
        };
        notes.push(format!(
            "made {} ({how}); {}",
            made.path().display(),
            if self.opts.keep {
                "kept (--keep)"
            } else {
                "removed at the end"
            }
        ));
        self.opts.allow_overwrite = true;
        self.made = Some(made);
        Ok(())
    }

    /// Removes the file this run made, unless kept.
    fn remove_made_file(&mut self) -> Vec<String> {
        let Some(made) = self.made.take() else {
            return Vec::new();
        };
        if self.opts.keep {
            return Vec::new();
        }
        let note = made.remove();
        if let (Some(j), None) = (&self.journal, &note) {
            j.remove(made.path());
        }
        note.into_iter().collect()
    }

    /// Shares the stop flag that Ctrl-C sets.
    pub fn with_stop(mut self, stop: Arc<AtomicBool>) -> LocalAgent {
        self.stop = stop;
        self
    }

    /// Shares the flag a second Ctrl-C sets: the removal of the run's S3 objects stops
    /// waiting on the service, and the results say what is left and where.
    pub fn with_abandon(mut self, abandon: Arc<AtomicBool>) -> LocalAgent {
        self.abandon = Some(abandon);
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
        self.index = salt;
        self.seed_salt = salt.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self
    }

    fn workspace(&self) -> Option<&Workspace> {
        match &self.place {
            Some(Where::Dir(ws)) => Some(ws),
            _ => None,
        }
    }

    /// The engine's handle on the files of one worker of job run `r`, each `len` long from
    /// `start`: on one file or device the worker's region (fio's offset); a worker's own files
    /// in a run directory start at 0, or at their job's share of them (fio's offset=N%).
    fn targets(&self, files: &[usize], start: u64, len: u64) -> Vec<FileTarget> {
        match &self.place {
            Some(Where::Dir(ws)) => files.iter().map(|&i| ws.target(i, start, len)).collect(),
            Some(Where::Existing { path, id }) => vec![FileTarget {
                place: Place::Path(path.clone()),
                expect: Some(*id),
                start,
                len,
            }],
            // Never opened: the worker's region of the LUN, for its offsets.
            Some(Where::Share(sd)) => files.iter().map(|&i| sd.target(i, start, len)).collect(),
            Some(Where::Lun(l)) => vec![FileTarget {
                place: Place::Path(PathBuf::from(l.url.to_string())),
                expect: None,
                start: l.base + start,
                len,
            }],
            None => Vec::new(),
        }
    }

    fn phase_jobs(&self, index: usize, load: &StageLoad) -> Vec<PhaseJob> {
        let existing = matches!(self.place, Some(Where::Existing { .. } | Where::Lun(_)));
        self.stages[index]
            .iter()
            .map(|r| r.phase_job(load, existing))
            .collect()
    }
}

impl Agent for LocalAgent {
    fn host(&self) -> &str {
        &self.host
    }

    fn inventory(&self) -> stormark_stats::Inventory {
        self.inventory.clone()
    }

    fn set_net_peers(&mut self, peers: NetPeers) {
        self.opts.net_peers = Some(peers);
    }

    fn validate(&mut self, workload: &Workload) -> Result<Validated, AgentError> {
        // A job whose `hosts` leave this host out runs here with no workers.
        let workload = &workload.on_host(self.index as usize);
        let mut v = Validated::default();
        if !workload.jobs.iter().any(|j| j.kind.needs_target()) {
            // No job touches a path: nothing to classify, make or remove.
            self.plan_without_target(workload, &mut v)?;
            self.open_bucket(workload)?;
            self.check_servers(workload, &mut v)?;
            return Ok(v);
        }
        let parsed = stormark_spec::Target::parse(&self.opts.path)
            .map_err(|e| AgentError::target(self.opts.path.clone(), e.why))?;
        if !matches!(parsed, stormark_spec::Target::Path(_)) {
            let target = self.opts.path.to_string_lossy().into_owned();
            match parsed {
                stormark_spec::Target::Lun(_) => self.plan_lun(workload, &target, &mut v)?,
                _ => self.plan_share(workload, &target, &mut v)?,
            }
            self.check_pin()?;
            v.stages = (0..self.stages.len())
                .map(|i| self.phase_jobs(i, &StageLoad::AS_GIVEN))
                .collect();
            return Ok(v);
        }
        if self.opts.create_file
            && self.made.is_none()
            && std::fs::symlink_metadata(&self.opts.path).is_err()
        {
            self.make_file(workload, &mut v.notes)?;
        }
        let kind = classify(&self.opts.path)?;
        let mut stages = Vec::new();
        for stage in workload.stages() {
            let mut jobs = Vec::new();
            for job in stage {
                jobs.push((job.clone(), self.resolve_backend(job, &mut v.notes)?));
            }
            stages.push(jobs);
        }
        let existing = kind != TargetKind::Directory;
        let mut planned: u64 = 0;
        for stage in &stages {
            let needs: Vec<limits::Need> = stage
                .iter()
                .map(|(j, b)| limits::Need::of(j, *b).on(existing))
                .collect();
            limits::check_stage(&needs)?;
            planned = planned.saturating_add(
                stage
                    .iter()
                    .filter(|(_, b)| b.touches_files())
                    .map(|(j, _)| u64::from(j.jobs) * u64::from(j.files))
                    .sum(),
            );
        }
        if !existing && planned > limits::MAX_FILES {
            return Err(AgentError::Limit(format!(
                "{planned} files in all (jobs × files over every job), more than the {} one run may make; lower --jobs or --files",
                limits::MAX_FILES
            )));
        }
        match &kind {
            TargetKind::Directory => self.plan_dir(workload, &stages, &mut v)?,
            other => self.plan_existing(workload, &stages, other, &mut v)?,
        }
        self.check_pin()?;
        // S3 and net jobs beside file jobs: the bucket's preflight and the network's servers
        // once the files are planned.
        self.open_bucket(workload)?;
        self.check_servers(workload, &mut v)?;
        v.stages = (0..self.stages.len())
            .map(|i| self.phase_jobs(i, &StageLoad::AS_GIVEN))
            .collect();
        Ok(v)
    }

    fn prepare(
        &mut self,
        on_event: &mut dyn FnMut(AgentEvent<'_>),
    ) -> Result<Vec<PhaseJob>, AgentError> {
        match &mut self.place {
            Some(Where::Dir(ws)) => ws.create(&self.stop)?,
            Some(Where::Share(sd)) => sd.create(&self.stop)?,
            _ => {}
        }
        self.make_meta_trees()?;
        let mut notes = Vec::new();
        let decided = self.decide_direct(&mut notes);
        self.notes.extend(notes);
        decided?;
        self.decide_atomic()?;
        let jobs = self.run_preparation(on_event)?;
        self.pin_files()?;
        Ok(jobs)
    }

    fn run_stage(
        &mut self,
        index: usize,
        load: &StageLoad,
        peers: &[NetPeer],
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
        self.check_stage_limits(index, load)?;
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
        // Net jobs: a session each, its streams for the workers, opened just before the load.
        let net_jobs: Vec<_> = self.stages[index]
            .iter()
            .enumerate()
            .filter_map(|(k, r)| {
                let net = r.job.net.as_ref()?;
                Some((k, net, r.job.name.clone(), r.workers(load)))
            })
            .collect();
        let stage_time = self.stages[index]
            .iter()
            .filter_map(|r| r.job.time)
            .max()
            .unwrap_or(Duration::from_secs(30));
        let sessions = self.open_sessions(&net_jobs, ramp + stage_time, peers)?;
        let (specs, map) = self.stage_specs(index, load, &sessions, ramp)?;
        let out = run_stage_at(specs, self.stop.clone(), start_at, &mut |e| {
            forward(e, &map, on_event, 1)
        });
        self.note_zone_resets(index);
        for session in sessions {
            let (note, report, _) = session.finish(&self.inventory);
            self.notes.extend(note);
            self.net_reports.push(report);
        }
        if let Some((name, rule)) = &steady {
            if !self.stop.load(Ordering::Relaxed) {
                self.notes
                    .push(steady_note(name, rule, out.steady_after, ramp));
            }
        }
        if let Some(w) = out.ended_by {
            let name = &self.stages[index][map[w].0 as usize].job.name;
            push_once(
                &mut self.notes,
                format!("job {name}: a worker ended ({:.1} s after the start) and stopped the jobs running with it (exitall)", out.ended.saturating_duration_since(out.t0).as_secs_f64()),
            );
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
            return Err(AgentError::Worker {
                job: name.clone(),
                worker: wk,
                cause: format!("{f}{more}"),
            });
        }
        if !self.stop.load(Ordering::Relaxed) {
            self.mark_written(index);
        }
        Ok(self.phase_jobs(index, load))
    }

    fn cleanup(&mut self) -> Vec<String> {
        // Unlocked before the files go.
        self.pinned = None;
        let mut problems = self.cleanup_objects();
        problems.extend(self.remove_meta_trees());
        self.peer_ports = None;
        match &mut self.place {
            Some(Where::Dir(ws)) => problems.extend(ws.cleanup(self.opts.keep, &self.removal)),
            Some(Where::Share(sd)) => problems.extend(sd.cleanup(self.opts.keep)),
            _ => {}
        }
        problems.extend(self.remove_made_file());
        problems
    }

    fn cleanup_objects(&mut self) -> Vec<String> {
        match self.bucket.take() {
            Some(b) => b.finish(self.abandon.as_ref(), self.journal.as_ref(), self.agent),
            None => Vec::new(),
        }
    }

    fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    fn take_net(&mut self) -> Vec<stormark_stats::NetReport> {
        std::mem::take(&mut self.net_reports)
    }

    fn workers(&self, stage: Stage) -> Vec<u32> {
        let stage = match stage {
            Stage::Prepare => return vec![self.prepare_workers],
            Stage::Run(n) => n,
        };
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
                second: Second::Whole(snap),
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

fn push_once(notes: &mut Vec<String>, note: String) {
    if !notes.contains(&note) {
        notes.push(note);
    }
}

/// A byte count for people: `512 B`, `1.5 KiB`, `3.0 GiB`.
pub(crate) fn human(bytes: u64) -> String {
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
}
