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
    /// `data` (repeated).
    fn create(&mut self, at: &Self::Dir, name: &str, data: &[u8], len: usize) -> io::Result<()>;
    /// Writes `len` bytes of `data` (repeated) into the existing file `name`.
    fn write(&mut self, at: &Self::Dir, name: &str, data: &[u8], len: usize) -> io::Result<()>;
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
    fn create(&mut self, at: &Dir, name: &str, data: &[u8], len: usize) -> io::Result<()> {
        at.create_file(name, 0)
            .and_then(|mut file| write_all(&mut file, data, len))
    }
    fn write(&mut self, at: &Dir, name: &str, data: &[u8], len: usize) -> io::Result<()> {
        at.open_own(name, libc::O_WRONLY)
            .and_then(|mut file| write_all(&mut file, data, len))
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

fn unsupported(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("{what} is not run over NFS yet"),
    )
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
    fn create(&mut self, at: &NfsDir, name: &str, _data: &[u8], len: usize) -> io::Result<()> {
        if len > 0 {
            return Err(unsupported("a create that writes"));
        }
        self.create_at(&at.handle, name, 0).map(|_| ())
    }
    fn write(&mut self, _: &NfsDir, _: &str, _: &[u8], _: usize) -> io::Result<()> {
        Err(unsupported("write"))
    }
    fn open(&mut self, at: &NfsDir, name: &str) -> io::Result<()> {
        // NFSv3 has no OPEN: a client's open is the LOOKUP of the name, a regular file.
        match self.lookup_at(&at.handle, name)?.kind {
            NfsKind::File => Ok(()),
            NfsKind::Link => Err(io::Error::from_raw_os_error(libc::ELOOP)),
            NfsKind::Dir => Err(io::Error::from_raw_os_error(libc::EISDIR)),
            NfsKind::Other => Err(io::Error::from_raw_os_error(libc::ENXIO)),
        }
    }
    fn read(&mut self, _: &NfsDir, _: &str, _: &mut [u8], _: usize) -> io::Result<()> {
        Err(unsupported("read"))
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
