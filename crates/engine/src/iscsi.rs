//! The iSCSI backend: READ(16), WRITE(16) and UNMAP to a LUN over the worker's own session
//! (fio's `libiscsi` engine), driven by the loop of `remote.rs`.

use stormark_iscsi::{Completion, Dir, Failure, Session};
use stormark_stats::{ErrorKind, Op};

use crate::error::EngineError;
use crate::remote::{Done, Remote, ALL};

/// A worker's session, with room for its completions.
pub(crate) struct Lun {
    session: Session,
    done: Vec<Completion>,
}

/// Logs in to the worker's LUN (before the stage's start, so that no login is measured).
pub(crate) fn connect(work: &crate::IscsiWork) -> Result<Lun, EngineError> {
    let session = Session::connect(&work.url, work.chap.as_deref())
        .map_err(|e| EngineError::Iscsi(e.to_string()))?;
    Ok(Lun {
        session,
        done: Vec::new(),
    })
}

impl Remote for Lun {
    fn inflight(&self) -> usize {
        self.session.inflight()
    }

    unsafe fn submit(
        &mut self,
        op: Op,
        _file: u32,
        at: u64,
        buf: *mut u8,
        len: u32,
        tag: u64,
    ) -> Result<(), String> {
        let dir = match op {
            Op::Write => Dir::Write,
            Op::Trim => Dir::Unmap,
            _ => Dir::Read,
        };
        // SAFETY: the caller's.
        unsafe { self.session.submit(dir, at, buf, len, tag) }.map_err(|e| e.to_string())
    }

    fn wait(&mut self, ms: i32, out: &mut Vec<Done>) -> Result<(), String> {
        self.session
            .wait(ms, &mut self.done)
            .map_err(|e| e.to_string())?;
        out.extend(self.done.drain(..).map(|c| {
            // A command moves all of its bytes or fails.
            (c.tag, c.status.map(|()| ALL).map_err(kind_of))
        }));
        Ok(())
    }

    fn sync(&mut self, _file: u32) -> Result<Result<(), ErrorKind>, String> {
        let r = self.session.sync_cache().map_err(|e| e.to_string())?;
        Ok(r.map_err(kind_of))
    }

    fn read_at(
        &mut self,
        _file: u32,
        at: u64,
        buf: &mut [u8],
    ) -> Result<Result<u32, ErrorKind>, String> {
        let len = buf.len() as u32;
        let r = self.session.read_at(at, buf).map_err(|e| e.to_string())?;
        Ok(r.map(|()| len).map_err(kind_of))
    }

    fn set_sync_writes(&mut self, on: bool) {
        self.session.set_fua(on);
    }
}

/// The kind a failed command is counted as: its sense key or status (`scsi-medium-error`,
/// `scsi-busy`), or a lost session as a reset.
pub(crate) fn kind_of(f: Failure) -> ErrorKind {
    match f {
        Failure::Sense(key) => ErrorKind::Scsi(stormark_spec::scsi::code(Some(key), 0x02)),
        Failure::Status(s) => ErrorKind::Scsi(stormark_spec::scsi::code(None, s)),
        Failure::Transport => ErrorKind::Reset,
    }
}
