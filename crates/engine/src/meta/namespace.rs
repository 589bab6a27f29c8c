//! What a meta tree does to a namespace, one trait for a local directory and an NFS share:
//! make a directory exclusively, create a file exclusively, open, stat, rename, remove and
//! list, each relative to a directory held (a descriptor opened beneath the target locally,
//! an NFSv3 file handle over NFS), never by a path resolved again.
//!
//! A worker owns its namespace (`&mut self`: a local one is nothing, an NFS one is the
//! worker's own connection, since libnfs's contexts are not thread-safe); the tree code is
//! generic over it, so the local road pays nothing for the trait (no allocation or call more
//! per operation: each method is the `Dir` call it was before).

use std::io;
use std::io::{Read, Write};

use stormark_nfs::{Client, FileId, Handle, Kind as NfsKind};

use crate::files::Dir;

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// Anything else: a link (never followed), a device node, a FIFO, a socket.
    Other,
}

/// A namespace a meta tree is made in, as one worker reaches it.
pub trait Namespace: Send + std::fmt::Debug + 'static {
    /// A directory held.
    type Dir: Send + Sync + std::fmt::Debug;

    /// Makes the directory `name` in `at` (it must not exist).
    fn mkdir(&mut self, at: &Self::Dir, name: &str) -> io::Result<()>;
    /// Makes the directory `name` in `at` (it must not exist) and holds it.
    fn create_dir(&mut self, at: &Self::Dir, name: &str) -> io::Result<Self::Dir>;
    /// Holds the directory `name` in `at`, never through a link.
    fn open_dir(&mut self, at: &Self::Dir, name: &str) -> io::Result<Self::Dir>;
    /// What `name` in `at` is (a link itself, not what it names).
    fn stat(&mut self, at: &Self::Dir, name: &str) -> io::Result<EntryKind>;
    /// Creates the regular file `name` in `at` (it must not exist), writing `len` bytes of
    /// `data` (repeated), then with `sync` its `fsync`.
    fn create(
        &mut self,
        at: &Self::Dir,
        name: &str,
        data: &[u8],
        len: usize,
        sync: bool,
    ) -> io::Result<()>;
    /// Writes `len` bytes of `data` (repeated) into the existing file `name`, then with
    /// `sync` its `fsync`.
    fn write(
        &mut self,
        at: &Self::Dir,
        name: &str,
        data: &[u8],
        len: usize,
        sync: bool,
    ) -> io::Result<()>;
    /// Opens the existing file `name` (and closes it).
    fn open(&mut self, at: &Self::Dir, name: &str) -> io::Result<()>;
    /// Reads `len` bytes of the existing file `name` through `buf`.
    fn read(&mut self, at: &Self::Dir, name: &str, buf: &mut [u8], len: usize) -> io::Result<()>;
    /// Renames `from` to `to`, both in `at`.
    fn rename(&mut self, at: &Self::Dir, from: &str, to: &str) -> io::Result<()>;
    /// Removes the file `name` (a link is removed, never followed).
    fn remove_file(&mut self, at: &Self::Dir, name: &str) -> io::Result<()>;
    /// Removes the empty directory `name`.
    fn remove_dir(&mut self, at: &Self::Dir, name: &str) -> io::Result<()>;
    /// The names in `at` (not `.` and `..`; names that are not UTF-8 are left out: a tree
    /// makes none).
    fn names(&mut self, at: &Self::Dir) -> io::Result<Vec<String>>;
    /// `name` in `at` as the user would name it, for messages.
    fn shown(at: &Self::Dir, name: &str) -> String;
}

/// This host's file systems, through directory descriptors (`files::Dir`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Local;

impl Namespace for Local {
    type Dir = Dir;

    fn mkdir(&mut self, at: &Dir, name: &str) -> io::Result<()> {
        at.mkdir(name)
    }
    fn create_dir(&mut self, at: &Dir, name: &str) -> io::Result<Dir> {
        at.create_dir(name)
    }
    fn open_dir(&mut self, at: &Dir, name: &str) -> io::Result<Dir> {
        at.open_dir(name)
    }
    fn stat(&mut self, at: &Dir, name: &str) -> io::Result<EntryKind> {
        let st = at.stat(name)?;
        Ok(match st.st_mode & libc::S_IFMT {
            libc::S_IFREG => EntryKind::File,
            libc::S_IFDIR => EntryKind::Dir,
            _ => EntryKind::Other,
        })
    }
    fn create(
        &mut self,
        at: &Dir,
        name: &str,
        data: &[u8],
        len: usize,
        sync: bool,
    ) -> io::Result<()> {
        at.create_file(name, 0).and_then(|mut file| {
            write_all(&mut file, data, len)?;
            if sync {
                file.sync_all()?;
            }
            Ok(())
        })
    }
    fn write(
        &mut self,
        at: &Dir,
        name: &str,
        data: &[u8],
        len: usize,
        sync: bool,
    ) -> io::Result<()> {
        at.open_own(name, libc::O_WRONLY).and_then(|mut file| {
            write_all(&mut file, data, len)?;
            if sync {
                file.sync_all()?;
            }
            Ok(())
        })
    }
    fn open(&mut self, at: &Dir, name: &str) -> io::Result<()> {
        at.open_own(name, libc::O_RDONLY).map(|_| ())
    }
    fn read(&mut self, at: &Dir, name: &str, buf: &mut [u8], len: usize) -> io::Result<()> {
        at.open_own(name, libc::O_RDONLY)
            .and_then(|mut file| read_all(&mut file, buf, len))
    }
    fn rename(&mut self, at: &Dir, from: &str, to: &str) -> io::Result<()> {
        at.rename(from, to)
    }
    fn remove_file(&mut self, at: &Dir, name: &str) -> io::Result<()> {
        at.remove_file(name)
    }
    fn remove_dir(&mut self, at: &Dir, name: &str) -> io::Result<()> {
        at.remove_dir(name)
    }
    fn names(&mut self, at: &Dir) -> io::Result<Vec<String>> {
        Ok(at
            .names()?
            .into_iter()
            .filter_map(|n| n.into_string().ok())
            .collect())
    }
    fn shown(at: &Dir, name: &str) -> String {
        at.shown(name).display().to_string()
    }
}

/// A directory on an NFS share held by its file handle, with its path for messages.
#[derive(Debug, Clone)]
pub struct NfsDir {
    /// Its handle.
    pub handle: Handle,
    /// Which object it is (fsid, fileid), when the server said: what a journal records.
    pub id: Option<FileId>,
    /// `nfs://SERVER/EXPORT/...`, for messages.
    pub shown: String,
}

/// The regular file `name` in `at`, by its handle (LOOKUP: one RPC, a link never followed).
fn nfs_file(c: &mut Client, at: &NfsDir, name: &str) -> io::Result<Handle> {
    let f = c.lookup_at(&at.handle, name)?;
    match f.kind {
        NfsKind::File => Ok(f.handle),
        NfsKind::Link => Err(io::Error::from_raw_os_error(libc::ELOOP)),
        NfsKind::Dir => Err(io::Error::from_raw_os_error(libc::EISDIR)),
        NfsKind::Other => Err(io::Error::from_raw_os_error(libc::ENXIO)),
    }
}

/// A waited READ's or WRITE's bytes, or its failure as an `io::Error` (the server's errno, or
/// the connection's).
fn nfs_io(r: Result<Result<u32, i32>, stormark_nfs::NfsError>) -> io::Result<u32> {
    match r {
        Ok(Ok(n)) => Ok(n),
        Ok(Err(errno)) => Err(io::Error::from_raw_os_error(errno)),
        Err(e) if e.is_unanswered() => Err(io::Error::from_raw_os_error(libc::ETIMEDOUT)),
        Err(e) => Err(io::Error::other(e.to_string())),
    }
}

/// Writes `len` bytes of `data` (repeated) from the start of the file `file`, each WRITE
/// waited for (UNSTABLE, as a kernel client's write-back sends them).
fn write_handle_all(c: &mut Client, file: &Handle, data: &[u8], len: usize) -> io::Result<()> {
    let mut done = 0usize;
    while done < len {
        let n = (len - done).min(data.len());
        let wrote = nfs_io(c.write_handle(file, done as u64, &data[..n]))?;
        if wrote == 0 {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        done += wrote as usize;
    }
    Ok(())
}

/// An NFS share through one worker's own connection: each call one RPC relative to a held
/// directory handle (LOOKUP, CREATE GUARDED, MKDIR, REMOVE, RMDIR, RENAME, READDIR).
impl Namespace for Client {
    type Dir = NfsDir;

    fn mkdir(&mut self, at: &NfsDir, name: &str) -> io::Result<()> {
        self.mkdir_at(&at.handle, name).map(|_| ())
    }
    fn create_dir(&mut self, at: &NfsDir, name: &str) -> io::Result<NfsDir> {
        let made = self.mkdir_at(&at.handle, name)?;
        let f = match made {
            Some(f) => f,
            // The server gave no handle: the name looked up, and it must be a directory.
            None => return self.open_dir(at, name),
        };
        Ok(NfsDir {
            handle: f.handle,
            id: f.id,
            shown: Self::shown(at, name),
        })
    }
    fn open_dir(&mut self, at: &NfsDir, name: &str) -> io::Result<NfsDir> {
        let f = self.lookup_at(&at.handle, name)?;
        match f.kind {
            NfsKind::Dir => Ok(NfsDir {
                handle: f.handle,
                id: f.id,
                shown: Self::shown(at, name),
            }),
            NfsKind::Link => Err(io::Error::from_raw_os_error(libc::ELOOP)),
            _ => Err(io::Error::from_raw_os_error(libc::ENOTDIR)),
        }
    }
    fn stat(&mut self, at: &NfsDir, name: &str) -> io::Result<EntryKind> {
        Ok(match self.lookup_at(&at.handle, name)?.kind {
            NfsKind::File => EntryKind::File,
            NfsKind::Dir => EntryKind::Dir,
            _ => EntryKind::Other,
        })
    }
    // `sync`: refused before the load for a share (no COMMIT by handle yet).
    fn create(
        &mut self,
        at: &NfsDir,
        name: &str,
        data: &[u8],
        len: usize,
        _sync: bool,
    ) -> io::Result<()> {
        // The CREATE, then (with bytes to write) its WRITEs to the handle it returned: the
        // create timed whole, as a local create with its write(2)s is.
        let made = self.create_at(&at.handle, name, 0)?;
        if len == 0 {
            return Ok(());
        }
        let file = match made {
            Some(f) => f.handle,
            None => nfs_file(self, at, name)?,
        };
        write_handle_all(self, &file, data, len)
    }
    fn write(
        &mut self,
        at: &NfsDir,
        name: &str,
        data: &[u8],
        len: usize,
        _sync: bool,
    ) -> io::Result<()> {
        let file = nfs_file(self, at, name)?;
        write_handle_all(self, &file, data, len)
    }
    fn open(&mut self, at: &NfsDir, name: &str) -> io::Result<()> {
        // NFSv3 has no OPEN: a client's open is the LOOKUP of the name, a regular file.
        nfs_file(self, at, name).map(|_| ())
    }
    fn read(&mut self, at: &NfsDir, name: &str, buf: &mut [u8], len: usize) -> io::Result<()> {
        let file = nfs_file(self, at, name)?;
        let mut done = 0usize;
        while done < len {
            let cap = (len - done).min(buf.len());
            let n = nfs_io(self.read_handle(&file, done as u64, &mut buf[..cap]))?;
            if n == 0 {
                // Shorter than written: what was created is not all there.
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            done += n as usize;
        }
        Ok(())
    }
    fn rename(&mut self, at: &NfsDir, from: &str, to: &str) -> io::Result<()> {
        self.rename_at(&at.handle, from, to)
    }
    fn remove_file(&mut self, at: &NfsDir, name: &str) -> io::Result<()> {
        self.remove_at(&at.handle, name)
    }
    fn remove_dir(&mut self, at: &NfsDir, name: &str) -> io::Result<()> {
        self.rmdir_at(&at.handle, name)
    }
    fn names(&mut self, at: &NfsDir) -> io::Result<Vec<String>> {
        self.names_at(&at.handle)
    }
    fn shown(at: &NfsDir, name: &str) -> String {
        format!("{}/{name}", at.shown)
    }
}

pub(crate) fn write_all(file: &mut std::fs::File, buf: &[u8], mut left: usize) -> io::Result<()> {
    while left > 0 {
        let n = left.min(buf.len());
        file.write_all(&buf[..n])?;
        left -= n;
    }
    Ok(())
}

pub(crate) fn read_all(
    file: &mut std::fs::File,
    buf: &mut [u8],
    mut left: usize,
) -> io::Result<()> {
    while left > 0 {
        let cap = left.min(buf.len());
        let n = file.read(&mut buf[..cap])?;
        if n == 0 {
            // Shorter than written: what was created is not all there.
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        left -= n;
    }
    Ok(())
}
