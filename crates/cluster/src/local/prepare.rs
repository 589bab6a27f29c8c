//! Preparation: whether O_DIRECT can be used, and the pass that writes the working set.

use std::sync::atomic::Ordering;

use stormark_engine::{
    io_uring_available, run_stage, Backend, FileTarget, Load, Place, WorkerSpec,
};
use stormark_spec::units::format_size;
use stormark_spec::Direct;
use stormark_stats::PhaseJob;

use super::{forward, push_once, LocalAgent, Where};
use crate::agent::{AgentError, AgentEvent};

impl LocalAgent {
    pub(super) fn decide_direct(&mut self, notes: &mut Vec<String>) -> Result<(), AgentError> {
        let wants = self
            .stages
            .iter()
            .flatten()
            .any(|r| r.job.direct != Direct::No && r.backend.touches_files());
        if !wants {
            return Ok(());
        }
        let (supported, what) = match &self.place {
            Some(Where::Dir(ws)) => (
                ws.odirect_supported()?,
                format!("the filesystem of {}", self.opts.path.display()),
            ),
            Some(Where::Existing { path, id }) => {
                let r = open_direct(path, *id);
                (
                    !matches!(&r, Err(e) if e.raw_os_error() == Some(libc::EINVAL)),
                    path.display().to_string(),
                )
            }
            Some(Where::Lun(_) | Where::Share(_)) | None => (false, String::new()),
        };
        for run in self.stages.iter_mut().flatten() {
            if !run.backend.touches_files() {
                continue;
            }
            run.direct = match (run.job.direct, supported) {
                (Direct::No, _) => false,
                (_, true) => true,
                (Direct::Yes, false) => {
                    return Err(AgentError::option("--direct", format!("{what} does not support O_DIRECT (tmpfs?); use --buffered or another target")))
                }
                (Direct::Auto, false) => {
                    push_once(notes, format!("direct auto: {what} does not support O_DIRECT; using buffered I/O, so the page cache may answer reads"));
                    false
                }
            };
        }
        Ok(())
    }

    /// fio's `atomic`: refused before any load where the target takes no atomic writes of the
    /// jobs' block sizes (as `statx` says of the run directory's file system, or of the file
    /// or device).
    pub(super) fn decide_atomic(&mut self) -> Result<(), AgentError> {
        let sizes: Vec<u64> = self
            .stages
            .iter()
            .flatten()
            .filter(|r| r.job.atomic && r.backend.touches_files())
            .map(|r| r.job.bs.min)
            .collect();
        if sizes.is_empty() {
            return Ok(());
        }
        let (units, what) = match &self.place {
            Some(Where::Dir(ws)) => (
                ws.atomic_units()?,
                format!("the file system of {}", self.opts.path.display()),
            ),
            Some(Where::Existing { path, id }) => {
                let units = open_direct(path, *id)
                    .and_then(|f| stormark_engine::atomic_write_units(&f))
                    .map_err(|e| AgentError::target(path.display().to_string(), e.to_string()))?;
                (units, path.display().to_string())
            }
            Some(Where::Lun(_) | Where::Share(_)) | None => return Ok(()),
        };
        for bs in sizes {
            let fits =
                units.is_some_and(|(min, max)| (u64::from(min)..=u64::from(max)).contains(&bs));
            if !fits {
                let takes = units.map_or("none".to_string(), |(min, max)| {
                    format!(
                        "{} to {}",
                        format_size(u64::from(min)),
                        format_size(u64::from(max))
                    )
                });
                return Err(AgentError::option(
                    "--atomic",
                    format!(
                        "{what} takes no atomic writes of {} (statx: {takes}); give a --bs it takes, or a target that takes atomic writes (an NVMe device, XFS), or leave out --atomic",
                        format_size(bs)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The preparation pass, one phase: writes every file that needs data and has none yet,
    /// and the objects that S3 jobs read, side by side when a workload has both.
    pub(super) fn run_preparation(
        &mut self,
        on_event: &mut dyn FnMut(AgentEvent<'_>),
    ) -> Result<Vec<PhaseJob>, AgentError> {
        let files = self.file_preparation()?;
        let objects = self.object_preparation();
        let what = match (&files, objects.is_empty()) {
            (None, _) => "writing the objects to read",
            (Some(_), true) => "preparing the working set",
            (Some(_), false) => "preparing the working set and the objects to read",
        };
        let (mut specs, todo, mut jobs) = match files {
            Some(f) => (f.specs, f.todo, vec![f.job]),
            None => (Vec::new(), Vec::new(), Vec::new()),
        };
        if !objects.is_empty() {
            jobs.push(PhaseJob {
                name: "prepare objects".into(),
                engine: Backend::S3.name().into(),
                direct: false,
                workers: objects.len() as u32,
                iodepth: 1,
                iodepth_batch: 1,
                rate_iops: None,
                target: None,
                working_set_bytes: self.object_bytes(),
            });
        }
        specs.extend(objects);
        if specs.is_empty() {
            return Ok(Vec::new());
        }
        self.prepare_workers = specs.len() as u32;
        let out = run_stage(specs, self.stop.clone(), &mut |e| {
            forward(e, &[(0u16, 0u32)], on_event, 0)
        });
        if let Some((_, f)) = out.failures.first() {
            return Err(AgentError::Preparation(f.to_string()));
        }
        if self.stop.load(Ordering::Relaxed) {
            return Err(AgentError::Interrupted(what));
        }
        match (&mut self.place, todo.is_empty()) {
            (Some(Where::Dir(ws)), false) => ws.mark_prepared(&todo)?,
            (Some(Where::Share(sd)), false) => sd.mark_prepared(&todo),
            _ => {}
        }
        Ok(jobs)
    }

    /// The workers that write every file that needs data and has none yet, if any.
    fn file_preparation(&self) -> Result<Option<FilePreparation>, AgentError> {
        // A local run directory's files, or a share's (written over NFS, as the load is).
        let (files, target, direct, load): (_, &dyn Fn(usize, u64) -> FileTarget, _, _) =
            match &self.place {
                Some(Where::Dir(ws)) => (
                    &ws.files,
                    &|i, len| ws.target(i, 0, len),
                    ws.odirect_supported().unwrap_or(false),
                    Load::of_files(if io_uring_available().is_ok() {
                        Backend::IoUring
                    } else {
                        Backend::Psync
                    })
                    .expect("a file backend prepares"),
                ),
                Some(Where::Share(sd)) => (
                    &sd.files,
                    &|i, len| sd.target(i, 0, len),
                    true,
                    Load::Nfs(stormark_engine::NfsWork {
                        url: sd.url.clone(),
                    }),
                ),
                _ => return Ok(None),
            };
        let todo: Vec<usize> = (0..files.len())
            .filter(|&i| files[i].needs_data && !files[i].prepared && files[i].size > 0)
            .collect();
        if todo.is_empty() {
            return Ok(None);
        }
        let backend = load.backend();
        let workers = todo.len().min(4);
        let bs = files
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
                load: load.clone(),
                seed: 0x5eed + w as u64,
                ..WorkerSpec::new(
                    todo.iter()
                        .skip(w)
                        .step_by(workers)
                        .map(|&i| target(i, files[i].size))
                        .collect(),
                )
            })
            .collect();
        let working_set_bytes = todo.iter().map(|&i| files[i].size).sum();
        Ok(Some(FilePreparation {
            specs,
            todo,
            job: PhaseJob {
                name: "prepare".into(),
                engine: backend.name().into(),
                direct,
                workers: workers as u32,
                iodepth: 4,
                iodepth_batch: 1,
                rate_iops: None,
                target: None,
                working_set_bytes,
            },
        }))
    }
}

/// The file half of the preparation pass.
struct FilePreparation {
    specs: Vec<WorkerSpec>,
    /// The workspace's files it writes.
    todo: Vec<usize>,
    job: PhaseJob,
}

/// The existing file or device `path` (still identity `id`), opened for reading with
/// O_DIRECT: what the run's workers will open.
fn open_direct(
    path: &std::path::Path,
    id: stormark_engine::Identity,
) -> std::io::Result<std::fs::File> {
    FileTarget {
        place: Place::Path(path.to_path_buf()),
        expect: Some(id),
        start: 0,
        len: 0,
    }
    .open(false, true)
}
