//! A file target the run makes: a fio job file's `filename=` that does not exist yet. fio
//! creates and lays out such a file before its job; stormark does the same, in the directory
//! the user named, and, having made it, removes it at the end (unless kept).

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use stormark_engine::Dir;
use stormark_spec::{Workload, DEFAULT_FILE_SIZE};

use crate::agent::AgentError;

/// A file this run made, known by its directory's descriptor and its identity, so that the
/// removal takes that file and no other put in its place since.
pub(super) struct MadeFile {
    dir: Dir,
    name: std::ffi::OsString,
    path: PathBuf,
    id: FileId,
}

/// Who a file is: its device and inode, and when it was born (an inode number is reused at
/// once for the next file made; its birth time is not), where the filesystem says; on an NFS
/// share, its whole file handle, which carries the generation the server tells reused
/// numbers apart by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileId {
    pub dev: u64,
    pub ino: u64,
    pub born_ns: Option<u128>,
    pub handle: Option<stormark_nfs::Handle>,
}

impl FileId {
    pub fn of(meta: &std::fs::Metadata) -> FileId {
        FileId {
            dev: meta.dev(),
            ino: meta.ino(),
            born_ns: meta
                .created()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_nanos()),
            handle: None,
        }
    }

    /// Whether this, found now, is `recorded`: the same numbers, and the same handle where
    /// both are known (a journal line written before handles were kept has none).
    pub fn is(&self, recorded: &FileId) -> bool {
        (self.dev, self.ino, self.born_ns) == (recorded.dev, recorded.ino, recorded.born_ns)
            && (self.handle.is_none()
                || recorded.handle.is_none()
                || self.handle == recorded.handle)
    }

    /// As a journal writes it: `DEV:INO:BORN` (`-` unknown), then `:HANDLE` in hex where
    /// there is one.
    pub fn shown(&self) -> String {
        let mut s = format!(
            "{}:{}:{}",
            self.dev,
            self.ino,
            self.born_ns.map_or("-".into(), |b| b.to_string())
        );
        if let Some(h) = &self.handle {
            s.push(':');
            s.push_str(&super::journal::hex(h));
        }
        s
    }

    /// What [`FileId::shown`] wrote.
    pub fn parse(text: &str) -> Option<FileId> {
        let mut parts = text.splitn(4, ':');
        let (dev, ino, born) = (parts.next()?, parts.next()?, parts.next()?);
        Some(FileId {
            dev: dev.parse().ok()?,
            ino: ino.parse().ok()?,
            born_ns: match born {
                "-" => None,
                b => Some(b.parse().ok()?),
            },
            handle: match parts.next() {
                None => None,
                Some(h) => Some(super::journal::handle_of(h)?),
            },
        })
    }

    /// The identity of what is named `name` in `dir` now (never through a link).
    pub fn now(dir: &Dir, name: &std::ffi::OsStr) -> std::io::Result<FileId> {
        Ok(FileId::of(
            &dir.open_file(name, libc::O_RDONLY)?.metadata()?,
        ))
    }
}

/// The size a made file gets: the largest job's size, else what stormark makes files of;
/// `None` where a job fills it (fio's `fill_device` without a size): the free space.
pub(super) fn size_for(workload: &Workload) -> Option<u64> {
    if workload
        .jobs
        .iter()
        .any(|j| j.fill_device && j.size.is_none())
    {
        return None;
    }
    let size = workload
        .jobs
        .iter()
        .filter(|j| j.kind.needs_target())
        .filter_map(|j| {
            // Past the last worker's region (fio's offset) when offsets are given.
            let start = j.region_start(u64::from(j.jobs.max(1)) - 1);
            Some(start.saturating_add(j.size?))
        })
        .max()
        .unwrap_or(DEFAULT_FILE_SIZE);
    Some(size)
}

impl MadeFile {
    /// Makes `path` (it must not exist; its directory must), `size` bytes written in full, as
    /// fio lays out a file before its job, until `stop`. Without a size, a job fills it: its
    /// length is the free space less a MiB (the run's own room), nothing written before.
    pub fn make(path: &Path, size: Option<u64>, stop: &AtomicBool) -> Result<MadeFile, AgentError> {
        let fail = |why: String| AgentError::target(path.to_path_buf(), why);
        let name = path
            .file_name()
            .ok_or_else(|| fail("a file name is needed to make it (filename=)".into()))?
            .to_os_string();
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let dir = Dir::open(parent).map_err(|e| {
            fail(format!(
                "cannot make it: its directory {} cannot be opened ({e}); give an existing directory",
                parent.display()
            ))
        })?;
        let mut file = dir
            .create_file(&name, 0)
            .map_err(|e| fail(format!("cannot make it: {e}")))?;
        let meta = file
            .metadata()
            .map_err(|e| fail(format!("cannot make it: {e}")))?;
        let made = MadeFile {
            dir,
            name,
            path: path.to_path_buf(),
            id: FileId::of(&meta),
        };
        let Some(size) = size else {
            let room = made
                .dir
                .space()
                .map(|(_, avail, _)| avail.saturating_sub(1 << 20) / 4096 * 4096);
            if let Err(e) = room.and_then(|room| file.set_len(room)) {
                let _ = made.remove();
                return Err(fail(format!("cannot make it: {e}; removed")));
            }
            return Ok(made);
        };
        // Bytes that do not compress or deduplicate within a MiB, written a MiB at a time.
        let mut rng = 0x9e37_79b9_7f4a_7c15_u64 ^ size;
        let chunk: Vec<u8> = (0..(1usize << 20) / 8)
            .flat_map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng.to_le_bytes()
            })
            .collect();
        let mut left = size;
        while left > 0 {
            if stop.load(Ordering::Relaxed) {
                let _ = made.remove();
                return Err(fail("stopped while making it (removed)".into()));
            }
            let n = left.min(chunk.len() as u64) as usize;
            if let Err(e) = file.write_all(&chunk[..n]) {
                let _ = made.remove();
                return Err(fail(format!(
                    "cannot make it: writing its {size} bytes failed ({e}); removed"
                )));
            }
            left -= n as u64;
        }
        Ok(made)
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its identity, for the journal.
    pub fn id(&self) -> FileId {
        self.id
    }

    /// Removes it, if what is under its name is still the file made; a note otherwise.
    pub fn remove(&self) -> Option<String> {
        match remove_if(&self.dir, &self.name, |id| *id == self.id) {
            Ok(()) => None,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => Some(format!(
                "could not remove {} (made by this run): {e}",
                self.path.display()
            )),
        }
    }
}

/// Removes `name` in `dir` if what carries the name now is the file `same` says it is;
/// otherwise an error saying it is no longer that file (and it stays).
pub(super) fn remove_if(
    dir: &Dir,
    name: &std::ffi::OsStr,
    same: impl FnOnce(&FileId) -> bool,
) -> std::io::Result<()> {
    if !same(&FileId::now(dir, name)?) {
        return Err(std::io::Error::other(
            "it is no longer the file that run made: left in place",
        ));
    }
    dir.remove_file(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_written_in_full_and_removed_only_if_still_itself() {
        let tmp = tempfile::tempdir().unwrap();
        let stop = AtomicBool::new(false);
        let path = tmp.path().join("new");
        let m = MadeFile::make(&path, Some((3 << 20) + 5), &stop).unwrap();
        let data = std::fs::read(&path).unwrap();
        assert_eq!(data.len(), (3 << 20) + 5);
        assert!(data.iter().any(|&b| b != 0), "laid out, not a hole");
        assert_eq!(m.remove(), None);
        assert!(!path.exists());
        // An existing file is never made (nor overwritten).
        std::fs::write(&path, b"theirs").unwrap();
        assert!(MadeFile::make(&path, Some(4096), &stop).is_err());
        assert_eq!(std::fs::read(&path).unwrap(), b"theirs");
        std::fs::remove_file(&path).unwrap();
        // Replaced since it was made: the other file stays.
        let m = MadeFile::make(&path, Some(4096), &stop).unwrap();
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, b"someone else's").unwrap();
        assert!(m.remove().is_some_and(|n| n.contains("no longer")));
        assert_eq!(std::fs::read(&path).unwrap(), b"someone else's");
        // A directory that is not there.
        assert!(MadeFile::make(&tmp.path().join("no/such"), Some(4096), &stop).is_err());
    }
}
