//! Preparation: whether O_DIRECT can be used, and the pass that writes the working set.

use std::sync::atomic::Ordering;

use stormark_engine::{io_uring_available, run_stage, Backend, FileTarget, Place, WorkerSpec};
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
            .any(|r| r.job.direct != Direct::No && r.backend != Backend::Null);
        if !wants {
            return Ok(());
        }
        let (supported, what) = match &self.place {
            Some(Where::Dir(ws)) => (
                ws.odirect_supported()?,
                format!("the filesystem of {}", self.opts.path.display()),
            ),
            Some(Where::Existing { path, id }) => {
                let r = FileTarget {
                    place: Place::Path(path.clone()),
                    expect: Some(*id),
                    len: 0,
                }
                .open(false, true);
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

    /// The preparation pass: writes every file that needs data and has none yet.
    pub(super) fn prepare_data(
        &mut self,
        on_event: &mut dyn FnMut(AgentEvent<'_>),
    ) -> Result<Vec<PhaseJob>, AgentError> {
        let Some(ws) = self.workspace() else {
            return Ok(Vec::new());
        };
        let todo: Vec<usize> = (0..ws.files.len())
            .filter(|&i| ws.files[i].needs_data && !ws.files[i].prepared && ws.files[i].size > 0)
            .collect();
        if todo.is_empty() {
            return Ok(Vec::new());
        }
        let direct = ws.odirect_supported().unwrap_or(false);
        let backend = if io_uring_available().is_ok() {
            Backend::IoUring
        } else {
            Backend::Psync
        };
        let workers = todo.len().min(4);
        let bs = ws
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
                        .map(|&i| ws.target(i, ws.files[i].size))
                        .collect(),
                )
            })
            .collect();
        let working_set_bytes = todo.iter().map(|&i| ws.files[i].size).sum();
        self.prepare_workers = workers as u32;
        let out = run_stage(specs, self.stop.clone(), &mut |e| {
            forward(e, &[(0u16, 0u32)], on_event, 0)
        });
        if let Some((_, f)) = out.failures.first() {
            return Err(AgentError::Preparation(f.to_string()));
        }
        if self.stop.load(Ordering::Relaxed) {
            return Err(AgentError::Interrupted("preparing the working set"));
        }
        if let Some(Where::Dir(ws)) = &mut self.place {
            ws.mark_prepared(&todo)?;
        }
        Ok(vec![PhaseJob {
            name: "prepare".into(),
            engine: backend.name().into(),
            direct,
            workers: workers as u32,
            iodepth: 4,
            rate_iops: None,
            working_set_bytes,
        }])
    }
}
