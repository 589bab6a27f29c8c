//! stormark's NFS client, made for load: a share measured as a service, from user space, with
//! no kernel client, no mount and no root (fio's `nfs` engine does the same). Each worker owns
//! one [`Client`] (its own TCP connection) and keeps its depth of READ and WRITE RPCs in
//! flight; each one's latency is the server's round trip, nothing of a page cache in between.
//! A run's files are made in its directory held by handle (`ns.rs`) and read and written by
//! the handles their CREATEs returned (`io.rs`): nothing of a run is reached by a path from the
//! export's root once its directory is made, whatever another user of the share renames.
//!
//! The protocol is libnfs's (Debian's `libnfs13`, NFSv3), loaded with `dlopen` when an
//! `nfs://` target is first used: stormark builds and runs without it, and a host without it is
//! told which package to install. Shares are named as libnfs names them,
//! `nfs://SERVER[:PORT]/EXPORT/DIR`: the longest leading part of the path the server mounts is
//! the export, the rest a directory in it.
#![warn(missing_docs)]

mod ffi;
mod io;
mod ns;

use std::cell::{Cell, RefCell};
use std::ffi::{c_int, c_void, CString};

pub use ffi::available;
pub use ns::{Found, Handle, Kind};
pub use stormark_spec::{ShareUrl as Url, UrlError, SHARE_FORM as FORM};

/// What went wrong with a share, as one line.
#[derive(Debug, thiserror::Error)]
pub enum NfsError {
    /// libnfs is not on this host.
    #[error("{0}")]
    Library(String),
    /// No export of the URL's path could be mounted.
    #[error("{url}: cannot mount it: {why}")]
    Mount {
        /// The share as given.
        url: String,
        /// libnfs's words.
        why: String,
    },
    /// An operation on a path failed.
    #[error("{url}{path}: {what}: {why}")]
    Op {
        /// The share.
        url: String,
        /// The path within the URL's directory (`/` first).
        path: String,
        /// The operation.
        what: &'static str,
        /// Why, in the system's words.
        why: String,
        /// The errno, when the server gave one.
        errno: Option<i32>,
    },
    /// The connection failed after the mount.
    #[error("NFS connection: {0}")]
    Session(String),
}

impl NfsError {
    /// Whether the server did not answer (the call timed out, or the connection is gone),
    /// rather than refusing: nothing more is to be asked of it now. libnfs ends a call
    /// waited for past its timeout with EINTR.
    pub fn is_unanswered(&self) -> bool {
        match self {
            NfsError::Op { errno, why, .. } => {
                matches!(
                    errno,
                    Some(
                        libc::EINTR
                            | libc::ETIMEDOUT
                            | libc::ECONNRESET
                            | libc::EPIPE
                            | libc::ENOTCONN
                    )
                ) || why.contains("timed out")
                    || why.contains("timeout")
            }
            NfsError::Session(_) => true,
            NfsError::Library(_) | NfsError::Mount { .. } => false,
        }
    }
}

/// The direction of an RPC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// READ.
    Read,
    /// WRITE (UNSTABLE, as a kernel client's).
    Write,
    /// COMMIT of the file's writes (what `fsync` is over NFS; offset and length unused).
    Commit,
}

/// An RPC that completed: its tag and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// The tag it was submitted with.
    pub tag: u64,
    /// The bytes moved, or the errno it failed with.
    pub status: Result<u32, i32>,
}

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// A directory.
    pub dir: bool,
    /// A symbolic link (only from [`Client::lstat`], which does not follow one).
    pub link: bool,
    /// Bytes.
    pub size: u64,
    /// Which object it is on the server, whatever its name: the file system's id and the
    /// file's (NFSv3's fsid and fileid).
    pub id: FileId,
}

/// An object on the server, whatever its name: what a run recorded when it made a file or
/// directory, checked again before it is written or removed by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileId {
    /// The file system (NFSv3's fsid).
    pub dev: u64,
    /// The file (NFSv3's fileid).
    pub ino: u64,
}

impl Stat {
    fn of(st: &ffi::Stat64) -> Stat {
        let kind = st.mode & u64::from(libc::S_IFMT);
        Stat {
            dir: kind == u64::from(libc::S_IFDIR),
            link: kind == u64::from(libc::S_IFLNK),
            size: st.size,
            id: FileId {
                dev: st.dev,
                ino: st.ino,
            },
        }
    }
}

thread_local! {
    /// The completions the RPCs' callbacks gave on this thread, taken by the client's owner
    /// after each service (a client is used by the one thread that made it).
    static DONE: RefCell<Vec<Completion>> = const { RefCell::new(Vec::new()) };
}

/// One mounted connection to a share.
pub struct Client {
    lib: &'static ffi::Lib,
    ctx: *mut c_void,
    url: String,
    /// The export mounted.
    export: String,
    /// The URL's directory within the export (`""` or `/a/b`).
    base: String,
    /// The RPC context beneath `ctx`, which the raw calls go through.
    rpc: *mut c_void,
    /// The largest READ and WRITE the server takes in one RPC.
    readmax: u32,
    writemax: u32,
    /// The files held, by handle.
    files: Vec<Handle>,
    /// Each slot's I/O in flight, and the RPCs it went as (a slot's parts are replaced only
    /// while it is free: the RPCs in flight point at them).
    pending: Box<[Cell<io::Pending>]>,
    parts: Box<[Box<[io::Part]>]>,
    session: stormark_dlclient::Session,
}

// SAFETY: a client is moved to its worker's thread before any RPC, and used only there
// (libnfs's context has no thread affinity, only no locking).
unsafe impl Send for Client {}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("url", &self.url)
            .field("export", &self.export)
            .finish()
    }
}

/// Seconds an RPC may take before it fails with a timeout.
const RPC_TIMEOUT_MS: c_int = 60_000;
/// Seconds a mount may take.
const MOUNT_TIMEOUT_MS: c_int = 10_000;

impl Client {
    /// Connects to `url`'s server and mounts its export (the longest leading part of the path
    /// the server mounts), with room for `slots` RPCs in flight (tags `0..slots`).
    pub fn connect(url: &Url, slots: usize) -> Result<Client, NfsError> {
        let lib = ffi::lib().map_err(NfsError::Library)?;
        let shown = url.to_string();
        // SAFETY: a fresh context, destroyed by Drop.
        let ctx = unsafe { (lib.init_context)() };
        if ctx.is_null() {
            return Err(NfsError::Mount {
                url: shown,
                why: "libnfs could not make a context".into(),
            });
        }
        let mut c = Client {
            lib,
            ctx,
            url: shown.clone(),
            export: String::new(),
            base: String::new(),
            rpc: std::ptr::null_mut(),
            readmax: 1 << 20,
            writemax: 1 << 20,
            files: Vec::new(),
            pending: (0..=slots).map(|_| Cell::new(io::Pending::NONE)).collect(),
            parts: (0..=slots).map(|_| Box::from([io::Part::NONE])).collect(),
            session: stormark_dlclient::Session::default(),
        };
        // The URL's ports become the context's (libnfs takes them from a URL only).
        let opts = CString::new(url.for_libnfs(&url.path)).expect("no NUL in a parsed URL");
        // SAFETY: a live context, a C string; the returned URL is freed at once.
        let parsed = unsafe { (lib.parse_url_dir)(ctx, opts.as_ptr()) };
        if parsed.is_null() {
            return Err(NfsError::Mount {
                url: shown,
                why: c.error(),
            });
        }
        // SAFETY: as returned by nfs_parse_url_dir.
        unsafe { (lib.destroy_url)(parsed) };
        // SAFETY: a live context.
        unsafe { (lib.set_timeout)(ctx, MOUNT_TIMEOUT_MS) };
        let host = CString::new(url.host.as_str()).expect("no NUL in a parsed host");
        let parts: Vec<&str> = url.path.split('/').filter(|p| !p.is_empty()).collect();
        let mut first_error = None;
        for n in (1..=parts.len()).rev() {
            let export = format!("/{}", parts[..n].join("/"));
            let e = CString::new(export.as_str()).expect("no NUL in a parsed path");
            // SAFETY: a live context, C strings libnfs copies.
            if unsafe { (lib.mount)(ctx, host.as_ptr(), e.as_ptr()) } == 0 {
                c.export = export;
                c.base = parts[n..].iter().map(|p| format!("/{p}")).collect();
                (c.readmax, c.writemax, c.rpc) = io::limits(ctx).map_err(NfsError::Library)?;
                // SAFETY: as above.
                unsafe { (lib.set_timeout)(ctx, RPC_TIMEOUT_MS) };
                return Ok(c);
            }
            let why = c.error();
            // A server that is not there is not there for the shorter paths either.
            let unreachable = why.contains("connect") || why.contains("timed out");
            first_error.get_or_insert(why);
            if unreachable {
                break;
            }
        }
        Err(NfsError::Mount {
            url: shown,
            why: first_error.unwrap_or_default(),
        })
    }

    /// The export mounted.
    pub fn export(&self) -> &str {
        &self.export
    }

    /// libnfs's path of `rel` (`""`: the URL's directory; else `name` or `a/b` within it).
    fn path(&self, rel: &str) -> CString {
        let p = match rel {
            "" if self.base.is_empty() => "/".to_string(),
            "" => self.base.clone(),
            r => format!("{}/{}", self.base, r.trim_start_matches('/')),
        };
        CString::new(p).expect("no NUL in a path stormark makes")
    }

    fn op_error(&self, what: &'static str, rel: &str, rc: c_int) -> NfsError {
        NfsError::Op {
            url: self.url.clone(),
            path: if rel.is_empty() {
                String::new()
            } else {
                format!("/{rel}")
            },
            what,
            why: if rc < 0 {
                std::io::Error::from_raw_os_error(-rc).to_string()
            } else {
                self.error()
            },
            errno: (rc < 0).then_some(-rc),
        }
    }

    /// What `rel` is.
    pub fn stat(&mut self, rel: &str) -> Result<Stat, NfsError> {
        let mut st = ffi::Stat64::default();
        // SAFETY: a live context, a C string, a struct of libnfs's layout.
        let rc = unsafe { (self.lib.stat64)(self.ctx, self.path(rel).as_ptr(), &mut st) };
        if rc != 0 {
            return Err(self.op_error("stat", rel, rc));
        }
        Ok(Stat::of(&st))
    }

    /// What `rel` is, a symbolic link itself rather than what it names.
    pub fn lstat(&mut self, rel: &str) -> Result<Stat, NfsError> {
        let mut st = ffi::Stat64::default();
        // SAFETY: a live context, a C string, a struct of libnfs's layout.
        let rc = unsafe { (self.lib.lstat64)(self.ctx, self.path(rel).as_ptr(), &mut st) };
        if rc != 0 {
            return Err(self.op_error("lstat", rel, rc));
        }
        Ok(Stat::of(&st))
    }

    /// What the open handle `fh` is.
    fn fstat(&self, fh: ffi::Fh, rel: &str) -> Result<Stat, NfsError> {
        let mut st = ffi::Stat64::default();
        // SAFETY: a live context, an open handle of it, a struct of libnfs's layout.
        let rc = unsafe { (self.lib.fstat64)(self.ctx, fh, &mut st) };
        if rc != 0 {
            return Err(self.op_error("fstat", rel, rc));
        }
        Ok(Stat::of(&st))
    }

    /// The file system's size and the bytes free to this user, as FSSTAT says.
    pub fn space(&mut self) -> Result<(u64, u64), NfsError> {
        let mut st = ffi::Statvfs64::default();
        // SAFETY: as above.
        let rc = unsafe { (self.lib.statvfs64)(self.ctx, self.path("").as_ptr(), &mut st) };
        if rc != 0 {
            return Err(self.op_error("statvfs", "", rc));
        }
        let unit = st.frsize.max(1);
        Ok((
            st.blocks.saturating_mul(unit),
            st.bavail.saturating_mul(unit),
        ))
    }

    /// Makes the directory `rel`.
    pub fn mkdir(&mut self, rel: &str) -> Result<(), NfsError> {
        // SAFETY: as above.
        let rc = unsafe { (self.lib.mkdir)(self.ctx, self.path(rel).as_ptr()) };
        (rc == 0)
            .then_some(())
            .ok_or_else(|| self.op_error("mkdir", rel, rc))
    }

    /// Removes the empty directory `rel`.
    pub fn rmdir(&mut self, rel: &str) -> Result<(), NfsError> {
        // SAFETY: as above.
        let rc = unsafe { (self.lib.rmdir)(self.ctx, self.path(rel).as_ptr()) };
        (rc == 0)
            .then_some(())
            .ok_or_else(|| self.op_error("rmdir", rel, rc))
    }

    /// Sets how long each call made and waited for here (a stat, a create, a removal) may
    /// wait for the server's answer before it fails with a timeout.
    pub fn set_timeout(&mut self, limit: std::time::Duration) {
        let ms = c_int::try_from(limit.as_millis()).unwrap_or(c_int::MAX);
        // SAFETY: a live context.
        unsafe { (self.lib.set_timeout)(self.ctx, ms) };
    }

    /// The user and group the server sees on this connection's calls from now on (AUTH_SYS
    /// carries them as the client says: a server believes any client it exports to). For a
    /// test acting as another user of a shared export.
    pub fn act_as(&mut self, uid: u32, gid: u32) {
        let id = |n: u32| c_int::try_from(n).unwrap_or(c_int::MAX);
        // SAFETY: a live context; libnfs makes the AUTH_SYS credential of the next calls.
        unsafe {
            (self.lib.set_uid)(self.ctx, id(uid));
            (self.lib.set_gid)(self.ctx, id(gid));
        }
    }

    /// Renames `from` to `to` (both within the URL's directory).
    pub fn rename(&mut self, from: &str, to: &str) -> Result<(), NfsError> {
        let (f, t) = (self.path(from), self.path(to));
        // SAFETY: as above.
        let rc = unsafe { (self.lib.rename)(self.ctx, f.as_ptr(), t.as_ptr()) };
        (rc == 0)
            .then_some(())
            .ok_or_else(|| self.op_error("rename", from, rc))
    }

    /// Makes `rel` a symbolic link to `target` (taken as written, not as a path of ours).
    pub fn symlink(&mut self, target: &str, rel: &str) -> Result<(), NfsError> {
        let t = CString::new(target).map_err(|_| self.op_error("symlink", rel, -libc::EINVAL))?;
        // SAFETY: as above.
        let rc = unsafe { (self.lib.symlink)(self.ctx, t.as_ptr(), self.path(rel).as_ptr()) };
        (rc == 0)
            .then_some(())
            .ok_or_else(|| self.op_error("symlink", rel, rc))
    }

    /// Removes the file `rel`.
    pub fn unlink(&mut self, rel: &str) -> Result<(), NfsError> {
        // SAFETY: as above.
        let rc = unsafe { (self.lib.unlink)(self.ctx, self.path(rel).as_ptr()) };
        (rc == 0)
            .then_some(())
            .ok_or_else(|| self.op_error("unlink", rel, rc))
    }

    /// Makes the file `rel`, which must not exist (an exclusive CREATE: nothing planted under
    /// its name is opened), `len` bytes long (sparse), and closes it: the object made. Its path
    /// is resolved again from the export's root: for a client that makes a file once (a
    /// test's neighbour); a run makes its files with [`Client::create_at`] in its directory
    /// held by handle.
    pub fn create(&mut self, rel: &str, len: u64) -> Result<FileId, NfsError> {
        let mut fh: ffi::Fh = std::ptr::null_mut();
        let flags = libc::O_RDWR | libc::O_CREAT | libc::O_EXCL;
        // SAFETY: as above; the handle is closed below.
        let rc =
            unsafe { (self.lib.create)(self.ctx, self.path(rel).as_ptr(), flags, 0o644, &mut fh) };
        if rc != 0 {
            return Err(self.op_error("create", rel, rc));
        }
        let made = self.fstat(fh, rel);
        // SAFETY: an open handle of this context.
        let rc = unsafe { (self.lib.ftruncate)(self.ctx, fh, len) };
        // SAFETY: as above, closed once.
        unsafe { (self.lib.close)(self.ctx, fh) };
        if rc != 0 {
            return Err(self.op_error("truncate", rel, rc));
        }
        made.map(|st| st.id)
    }

    /// libnfs's last error.
    fn error(&self) -> String {
        // SAFETY: a live context; the string is copied before any other call.
        unsafe { stormark_dlclient::message((self.lib.get_error)(self.ctx)) }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // SAFETY: the context is ours; RPCs still queued are cancelled by the
        // destroy (their callbacks may run, and are dropped with the thread's list).
        unsafe {
            if self.session.inflight == 0 && !self.session.broken && !self.export.is_empty() {
                (self.lib.umount)(self.ctx);
            }
            (self.lib.destroy_context)(self.ctx);
        }
        DONE.with(|d| d.borrow_mut().clear());
    }
}
