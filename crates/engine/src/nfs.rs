//! The NFS backend: READ, WRITE and COMMIT RPCs to the files of a share, by their file handles,
//! over the worker's own connection (fio's `nfs` engine), driven by the loop of `remote.rs`.

use stormark_nfs::{Client, Completion, Dir};
use stormark_stats::{ErrorKind, Op};

use crate::error::EngineError;
use crate::remote::{Done, Remote};
use crate::target::{Place, WorkerSpec};

/// A worker's connection, its files held, with room for its completions.
pub(crate) struct Share {
    client: Client,
    done: Vec<Completion>,
}

/// Connects to the worker's share and holds its files by their handles (before the stage's
/// start, so that no mount is measured). Nothing is looked up by name: each file is the
/// object its CREATE made in the run directory held by handle, wherever that directory is
/// moved and whatever is put under its name since.
pub(crate) fn connect(work: &crate::NfsWork, spec: &WorkerSpec) -> Result<Share, EngineError> {
    let fail = |e: stormark_nfs::NfsError| EngineError::Nfs(e.to_string());
    let slots = spec.iodepth.max(1) as usize;
    let mut client = Client::connect(&work.url, slots).map_err(fail)?;
    client.reserve(u32::try_from(spec.bs_max).unwrap_or(u32::MAX));
    for f in &spec.files {
        let Place::Share { handle, .. } = &f.place else {
            return Err(EngineError::Nfs(format!(
                "{}: not a file of the share's run directory, held by its handle",
                f.shown().display()
            )));
        };
        client.hold(*handle);
    }
    Ok(Share {
        client,
        done: Vec::new(),
    })
}

impl Remote for Share {
    fn inflight(&self) -> usize {
        self.client.inflight()
    }

    unsafe fn submit(
        &mut self,
        op: Op,
        file: u32,
        at: u64,
        buf: *mut u8,
        len: u32,
        tag: u64,
    ) -> Result<(), String> {
        let dir = if op == Op::Write {
            Dir::Write
        } else {
            Dir::Read
        };
        // SAFETY: the caller's.
        unsafe { self.client.submit(dir, file, at, buf, len, tag) }.map_err(|e| e.to_string())
    }

    fn wait(&mut self, ms: i32, out: &mut Vec<Done>) -> Result<(), String> {
        self.client
            .wait(ms, &mut self.done)
            .map_err(|e| e.to_string())?;
        out.extend(
            self.done
                .drain(..)
                .map(|c| (c.tag, c.status.map_err(ErrorKind::from_errno))),
        );
        Ok(())
    }

    fn sync(&mut self, file: u32) -> Result<Result<(), ErrorKind>, String> {
        let r = self.client.commit(file).map_err(|e| e.to_string())?;
        Ok(r.map(|_| ()).map_err(ErrorKind::from_errno))
    }

    fn read_at(
        &mut self,
        file: u32,
        at: u64,
        buf: &mut [u8],
    ) -> Result<Result<u32, ErrorKind>, String> {
        let r = self
            .client
            .read_at(file, at, buf)
            .map_err(|e| e.to_string())?;
        Ok(r.map_err(ErrorKind::from_errno))
    }
}
