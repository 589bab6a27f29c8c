//! One stage on this host: its limits checked, each job's workers made into the engine's
//! specs (their files, or an S3, net or meta job's work), and what the stage's end says.

use std::os::fd::AsRawFd;
use std::time::Duration;

use std::sync::Arc;

use stormark_engine::{Backend, FileTarget, Load, WorkerSpec, ZoneMap};
use stormark_spec::StageLoad;

use super::netjob::NetSession;
use super::specs::seed;
use super::{limits, LocalAgent, Where};
use crate::agent::AgentError;

/// A stage's worker specs, and each one's (job, worker) in the stage.
pub(super) type StageSpecs = (Vec<WorkerSpec>, Vec<(u16, u32)>);

impl LocalAgent {
    /// The stage's workers must fit this host's limits under `load` (open files, memory).
    pub(super) fn check_stage_limits(
        &self,
        index: usize,
        load: &StageLoad,
    ) -> Result<(), AgentError> {
        limits::check_stage(&self.stage_needs(index, load)?)
    }

    /// Stages of several agents of this host that run at once (a run of several targets,
    /// each agent's stage given): their memory and open files checked together, as one
    /// stage's are.
    pub(crate) fn check_limits_together(
        stages: &[(&LocalAgent, usize)],
        load: &StageLoad,
    ) -> Result<(), AgentError> {
        let mut needs = Vec::new();
        for (agent, index) in stages {
            needs.extend(agent.stage_needs(*index, load)?);
        }
        limits::check_stage(&needs)
    }

    /// What each job of stage `index` needs under `load`.
    fn stage_needs(&self, index: usize, load: &StageLoad) -> Result<Vec<limits::Need>, AgentError> {
        let existing = matches!(self.place, Some(Where::Existing { .. } | Where::Lun(_)));
        let mut needs = Vec::new();
        for r in &self.stages[index] {
            r.check_load(load)?;
            let mut n = limits::Need::of(&r.job, r.backend).on(existing);
            n.workers = r.workers(load) as u64;
            n.bs_max = load.bs.unwrap_or(n.bs_max);
            n.iodepth = load.iodepth.map_or(n.iodepth, u64::from);
            needs.push(n);
        }
        Ok(needs)
    }

    /// The worker specs of stage `index` under `load`, each with its files or its job's work
    /// (a net job's streams from `sessions`), and each spec's (job, worker) in the stage.
    pub(super) fn stage_specs(
        &self,
        index: usize,
        load: &StageLoad,
        sessions: &[NetSession],
        ramp: Duration,
    ) -> Result<StageSpecs, AgentError> {
        let mut specs = Vec::new();
        let mut map = Vec::new();
        for (k, run) in self.stages[index].iter().enumerate() {
            if run.backend == Backend::Net {
                // A stream per worker, over the job's sessions (one per peer between agents).
                let streams = sessions.iter().filter(|s| s.job == k);
                for (w, work) in streams
                    .flat_map(|s| (0..s.workers()).map(|w| s.work(w)))
                    .enumerate()
                {
                    let seed = seed(index, k, w) ^ self.seed_salt;
                    let mut spec =
                        run.worker_spec(load, Load::Net(work), Vec::new(), ramp, seed, self.hosts);
                    spec.cpus = stormark_engine::placement::worker_cpus(&run.job.placement, w)
                        .map_err(|e| AgentError::job(&run.job.name, e))?;
                    specs.push(spec);
                    map.push((k as u16, w as u32));
                }
                continue;
            }
            let workers = run.workers(load);
            let len = run.len_under(load);
            for (w, files) in run.worker_files[..workers].iter().enumerate() {
                let targets = match run.backend {
                    Backend::S3 | Backend::Net | Backend::Meta => Vec::new(),
                    // A job's own files in a run directory start at 0, or at its share of
                    // them (fio's offset=N%); one file or device the workers share, at each
                    // worker's region.
                    _ if !files.is_empty() && run.job.filename.is_none() => {
                        self.targets(files, run.own_start, len)
                    }
                    _ => self.targets(files, run.job.region_start(w as u64), len),
                };
                if !run.direct
                    && !run.job.pin_cache
                    && run.job.invalidate != stormark_spec::Invalidate::No
                    && run.backend.touches_files()
                {
                    // Like fio's default invalidate=1: start buffered jobs with a cold cache.
                    for t in &targets {
                        drop_cache(t);
                    }
                }
                let seed = seed(index, k, w) ^ self.seed_salt;
                // What the worker works on: its files, or an S3, net or meta job's work.
                let work = match run.backend {
                    Backend::S3 => {
                        let (Some(b), Some(s3)) = (&self.bucket, &run.job.s3) else {
                            return Err(AgentError::job(&run.job.name, "no bucket was opened"));
                        };
                        Load::S3(Box::new(b.work(&run.job, w, workers, load, s3.ops)))
                    }
                    Backend::Meta => {
                        let Some(tree) = self.meta.iter().find(|t| t.job == run.job.name) else {
                            return Err(AgentError::job(&run.job.name, "no tree was made"));
                        };
                        Load::Meta(tree.work(w, load))
                    }
                    Backend::Iscsi => {
                        let Some(Where::Lun(l)) = &self.place else {
                            return Err(AgentError::job(&run.job.name, "no LUN was planned"));
                        };
                        Load::Iscsi(stormark_engine::IscsiWork {
                            url: l.url.clone(),
                            chap: l.chap.clone(),
                        })
                    }
                    Backend::Nfs => {
                        let Some(Where::Share(sd)) = &self.place else {
                            return Err(AgentError::job(&run.job.name, "no share was planned"));
                        };
                        Load::Nfs(stormark_engine::NfsWork {
                            url: sd.url.clone(),
                        })
                    }
                    b => Load::of_files(b).expect("a backend of files or null"),
                };
                let mut spec = run.worker_spec(load, work, targets, ramp, seed, self.hosts);
                spec.zone_map = self.zone_map(&spec, &run.job.name);
                spec.cpus = stormark_engine::placement::worker_cpus(&run.job.placement, w)
                    .map_err(|e| AgentError::job(&run.job.name, e))?;
                specs.push(spec);
                map.push((k as u16, w as u32));
            }
        }
        Ok((specs, map))
    }
}

/// fio's zoned mode on one file: its zones, and the resets the notes have told.
pub(super) struct ZonedFile {
    shown: std::path::PathBuf,
    map: Arc<ZoneMap>,
    told: u64,
    /// Jobs that read only below the pointers of zones holding no data yet.
    empty_reads: Vec<String>,
}

impl LocalAgent {
    /// The zones of a zoned worker's file: the run's map of that file (of that zone size),
    /// made at its first use.
    fn zone_map(&self, spec: &WorkerSpec, job: &str) -> Option<Arc<ZoneMap>> {
        let (rules, file) = (spec.zoned?, spec.files.first()?);
        let shown = file.shown();
        let mut maps = self.zone_maps.lock().unwrap_or_else(|e| e.into_inner());
        let i = match maps
            .iter()
            .position(|z| z.shown == shown && z.map.zone_size() == rules.size)
        {
            Some(i) => i,
            None => {
                maps.push(ZonedFile {
                    shown,
                    map: Arc::new(ZoneMap::new(&rules)),
                    told: 0,
                    empty_reads: Vec::new(),
                });
                maps.len() - 1
            }
        };
        let z = &mut maps[i];
        let reads_only = spec.read_pct == 100 && spec.trim == 0;
        if reads_only
            && !rules.read_beyond_wp
            && z.map.bytes_held() == 0
            && !z.empty_reads.iter().any(|j| j == job)
        {
            z.empty_reads.push(job.to_string());
        }
        Some(z.map.clone())
    }

    /// A note of the zones reset in stage `stage` (just run), per file (fio's "zone
    /// resets"), and of the jobs that found nothing to read.
    pub(super) fn note_zone_resets(&mut self, stage: usize) {
        let maps = self.zone_maps.get_mut().unwrap_or_else(|e| e.into_inner());
        for z in maps.iter_mut() {
            for job in z.empty_reads.drain(..) {
                self.notes.push(format!(
                    "job {job}: it reads only below the zones' write pointers, and no job of this run had written them yet, so it read nothing: zones start empty, as fio's zonemode=zbd on a file or conventional drive (read_beyond_wp=1 reads whole zones)"
                ));
            }
            let now = z.map.resets();
            if now > z.told {
                self.notes.push(format!(
                    "zoned {}: {} zones reset in stage {} (a full zone before it was written again, fio's zone_reset_frequency, or a trim)",
                    z.shown.display(),
                    now - z.told,
                    stage + 1
                ));
                z.told = now;
            }
        }
    }
}

/// What a steady-state rule came to within a ramp of `ramp`: held after `steady_after`, or not.
pub(super) fn steady_note(
    name: &str,
    rule: &impl std::fmt::Display,
    steady_after: Option<Duration>,
    ramp: Duration,
) -> String {
    match steady_after {
        Some(d) => format!(
            "job {name}: steady state ({rule}) held after {} s of ramp; measured from there",
            d.as_secs()
        ),
        None => format!(
            "job {name}: NOT steady: {rule} did not hold within the {} s ramp; measured anyway, figures may still drift (raise --ramp or widen the band)",
            ramp.as_secs()
        ),
}
}

/// Drops the clean cached pages of a file, like fio's `invalidate=1`.
fn drop_cache(t: &FileTarget) {
    if let Ok(f) = t.open(false, false) {
        // SAFETY: fd is valid; POSIX_FADV_DONTNEED only drops clean cached pages.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    }
}
