//! stormark's NFS client, made for load: a share measured as a service, from user space, with
//! no kernel client, no mount and no root (fio's `nfs` engine does the same). Each worker owns
//! one [`Client`] (its own TCP connection) and keeps its depth of READ and WRITE RPCs in
//! flight; each one's latency is the server's round trip, nothing of a page cache in between.
//!
//! The protocol is libnfs's (Debian's `libnfs13`, NFSv3), loaded with `dlopen` when an
//! `nfs://` target is first used: stormark builds and runs without it, and a host without it is
//! told which package to install. Shares are named as libnfs names them,
//! `nfs://SERVER[:PORT]/EXPORT/DIR`: the longest leading part of the path the server mounts is
//! the export, the rest a directory in it.
#![warn(missing_docs)]

mod ffi;
mod ns;

use std::cell::RefCell;
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

/// Where a read in flight lands, so that its callback can copy the reply there.
#[derive(Clone, Copy)]
struct Pending {
    tag: u64,
    buf: *mut u8,
    len: usize,
    read: bool,
}

thread_local! {
    /// The completions libnfs's callbacks gave on this thread, taken by the client's owner
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
    files: Vec<ffi::Fh>,
    pending: Box<[Pending]>,
    inflight: usize,
    broken: bool,
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
        let none = Pending {
            tag: 0,
            buf: std::ptr::null_mut(),
            len: 0,
            read: false,
        };
        let mut c = Client {
            lib,
            ctx,
            url: shown.clone(),
            export: String::new(),
            base: String::new(),
            files: Vec::new(),
            pending: vec![none; slots + 1].into_boxed_slice(),
            inflight: 0,
            broken: false,
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
    /// its name is opened), `len` bytes long (sparse), and closes it: the object made, by its
    /// handle, before anything else can be put under its name.
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

    /// Opens the file `rel` (for writing too with `write`) as the next file index, never
    /// through a symbolic link at its name; with `expect`, only when the object opened is
    /// the one recorded (a file swapped in under the name, or through a swapped directory, is
    /// refused before a byte is read or written: the RPCs then go to the handle checked).
    pub fn open(
        &mut self,
        rel: &str,
        write: bool,
        expect: Option<FileId>,
    ) -> Result<u32, NfsError> {
        let mut fh: ffi::Fh = std::ptr::null_mut();
        let flags = libc::O_NOFOLLOW | if write { libc::O_RDWR } else { libc::O_RDONLY };
        // SAFETY: as above; the handle is closed by Drop, or below.
        let rc = unsafe { (self.lib.open)(self.ctx, self.path(rel).as_ptr(), flags, &mut fh) };
        if rc == -libc::ELOOP {
            return Err(NfsError::Op {
                url: self.url.clone(),
                path: format!("/{rel}"),
                what: "open",
                why: "a symbolic link stands at its name (replaced since?); never opened through"
                    .into(),
                errno: Some(libc::ELOOP),
            });
        }
        if rc != 0 {
            return Err(self.op_error("open", rel, rc));
        }
        if let Some(id) = expect {
            let found = self.fstat(fh, rel).map(|st| st.id);
            if found.as_ref().ok() != Some(&id) {
                // SAFETY: the handle just opened, closed once.
                unsafe { (self.lib.close)(self.ctx, fh) };
                return Err(found.err().unwrap_or_else(|| NfsError::Op {
                    url: self.url.clone(),
                    path: format!("/{rel}"),
                    what: "open",
                    why: "no longer the file stormark created (replaced since, or its directory)"
                        .into(),
                    errno: None,
                }));
            }
        }
        self.files.push(fh);
        Ok(self.files.len() as u32 - 1)
    }

    /// RPCs submitted and not yet completed.
    pub fn inflight(&self) -> usize {
        self.inflight
    }

    /// Queues a READ into, or a WRITE from, the `len` bytes at `buf`, at `offset` of open file
    /// `file`, or a COMMIT of the file (`buf` unused); its completion comes from
    /// [`Client::wait`] with `tag` (below the `slots` the client was made with).
    ///
    /// # Safety
    /// For a read or write, `buf` must hold `len` bytes that stay valid, and untouched by
    /// anything else, until the RPC's completion has been taken.
    pub unsafe fn submit(
        &mut self,
        dir: Dir,
        file: u32,
        offset: u64,
        buf: *mut u8,
        len: u32,
        tag: u64,
    ) -> Result<(), NfsError> {
        if self.broken {
            return Err(NfsError::Session("the connection failed earlier".into()));
        }
        let slot = usize::try_from(tag)
            .ok()
            .filter(|&s| s < self.pending.len())
            .ok_or_else(|| NfsError::Session(format!("tag {tag} past the client's slots")))?;
        let fh = *self
            .files
            .get(file as usize)
            .ok_or_else(|| NfsError::Session(format!("no open file {file}")))?;
        self.pending[slot] = Pending {
            tag,
            buf,
            len: len as usize,
            read: dir == Dir::Read,
        };
        let private = (&mut self.pending[slot] as *mut Pending).cast::<c_void>();
        let lib = self.lib;
        // SAFETY: a mounted context, an open handle; `private` stays valid (the slots are
        // never moved or freed while the client lives); the caller keeps `buf` valid.
        let rc = unsafe {
            match dir {
                Dir::Read => (lib.pread_async)(self.ctx, fh, offset, u64::from(len), done, private),
                Dir::Write => (lib.pwrite_async)(
                    self.ctx,
                    fh,
                    offset,
                    u64::from(len),
                    buf.cast_const().cast(),
                    done,
                    private,
                ),
                Dir::Commit => (lib.fsync_async)(self.ctx, fh, done, private),
            }
        };
        if rc != 0 {
            return Err(NfsError::Session(self.error()));
        }
        self.inflight += 1;
        Ok(())
    }

    /// Sends what is queued and waits up to `timeout_ms` (0: not at all) for completions,
    /// then moves every completion there is into `out`.
    pub fn wait(&mut self, timeout_ms: i32, out: &mut Vec<Completion>) -> Result<(), NfsError> {
        if self.broken {
            return Err(NfsError::Session("the connection failed earlier".into()));
        }
        let (lib, ctx) = (self.lib, self.ctx);
        // SAFETY: a live context; the callbacks run in service, here, on this thread.
        let step = unsafe {
            stormark_dlclient::wait(
                &DONE,
                out,
                &mut self.inflight,
                (lib.get_fd)(ctx),
                (lib.which_events)(ctx),
                timeout_ms,
                |revents| (lib.service)(ctx, revents),
            )
        };
        // Hung up: what is still in flight is lost; the worker counts it.
        match step.failure("server", self.inflight, || self.error()) {
            None => Ok(()),
            Some(why) => {
                self.broken = true;
                Err(NfsError::Session(why))
            }
        }
    }

    /// Reads `buf.len()` bytes at `offset` of open file `file`, waiting for them: the bytes
    /// read, or `Ok(Err(errno))` when the server failed the READ. Only with nothing else in
    /// flight.
    pub fn read_at(
        &mut self,
        file: u32,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<Result<u32, i32>, NfsError> {
        let (ptr, len) = (buf.as_mut_ptr(), buf.len());
        self.one(Dir::Read, file, offset, ptr, len)
    }

    /// Writes `buf` at `offset` of open file `file`, waiting for the server's answer. Only
    /// with nothing else in flight.
    pub fn write_at(
        &mut self,
        file: u32,
        offset: u64,
        buf: &[u8],
    ) -> Result<Result<u32, i32>, NfsError> {
        // libnfs only reads a write's buffer.
        self.one(Dir::Write, file, offset, buf.as_ptr().cast_mut(), buf.len())
    }

    /// COMMITs open file `file`, waiting for the server's answer. Only with nothing else in
    /// flight.
    pub fn commit(&mut self, file: u32) -> Result<Result<u32, i32>, NfsError> {
        self.one(Dir::Commit, file, 0, std::ptr::null_mut(), 0)
    }

    /// One RPC, waited for, in the slot past the caller's. A connection that failed meanwhile
    /// is never served again, so that nothing reaches `buf` after this returns.
    fn one(
        &mut self,
        dir: Dir,
        file: u32,
        offset: u64,
        buf: *mut u8,
        len: usize,
    ) -> Result<Result<u32, i32>, NfsError> {
        if self.inflight > 0 {
            return Err(NfsError::Session("a waited RPC on a busy client".into()));
        }
        let len =
            u32::try_from(len).map_err(|_| NfsError::Session("an RPC of 4 GiB or more".into()))?;
        let tag = (self.pending.len() - 1) as u64;
        // SAFETY: buf holds len bytes, borrowed by the caller until this returns, and the
        // loop below returns only once the RPC completed or the connection is given up.
        unsafe { self.submit(dir, file, offset, buf, len, tag) }?;
        let mut done = Vec::with_capacity(1);
        while done.is_empty() {
            self.wait(100, &mut done)?;
        }
        Ok(done[0].status)
    }

    /// libnfs's last error.
    fn error(&self) -> String {
        // SAFETY: a live context; the string is copied before any other call.
        let p = unsafe { (self.lib.get_error)(self.ctx) };
        if p.is_null() {
            return "unknown error".into();
        }
        // SAFETY: libnfs returns a NUL-terminated string.
        let s = unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy();
        let s = s.trim();
        if s.is_empty() {
            "unknown error".into()
        } else {
            s.to_string()
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // SAFETY: the context and handles are ours; RPCs still queued are cancelled by the
        // destroy (their callbacks may run, and are dropped with the thread's list).
        unsafe {
            if self.inflight == 0 && !self.broken {
                for &fh in &self.files {
                    (self.lib.close)(self.ctx, fh);
                }
                if !self.export.is_empty() {
                    (self.lib.umount)(self.ctx);
                }
            }
            (self.lib.destroy_context)(self.ctx);
        }
        DONE.with(|d| d.borrow_mut().clear());
    }
}

/// libnfs's completion callback: a read's bytes copied where they belong, the RPC's outcome
/// noted for [`Client::wait`].
extern "C" fn done(status: c_int, _ctx: *mut c_void, data: *mut c_void, private: *mut c_void) {
    // SAFETY: `private` is the client's slot this RPC was submitted with, alive as long as
    // the client (whose context alone calls this).
    let p = unsafe { *(private as *const Pending) };
    let status = if status < 0 {
        Err(-status)
    } else {
        let n = (status as usize).min(p.len);
        if p.read && n > 0 && !data.is_null() {
            // SAFETY: libnfs gives `status` bytes at `data`; the slot's buffer holds `len`.
            unsafe { std::ptr::copy_nonoverlapping(data.cast::<u8>(), p.buf, n) };
        }
        Ok(n as u32)
    };
    DONE.with(|d| d.borrow_mut().push(Completion { tag: p.tag, status }));
}
