//! stormark's iSCSI initiator, made for load: a LUN measured as a service, from user space,
//! with no kernel initiator, no login of the host and no block device (fio's `libiscsi`
//! engine does the same). Each worker owns one session (its own TCP connection) and keeps its
//! depth of READ(16) and WRITE(16) commands in flight; each command's latency is the target's
//! round trip, nothing of a page cache or a block layer in between.
//!
//! The protocol is libiscsi's (Debian's `libiscsi7`), loaded with `dlopen` when an `iscsi://`
//! target is first used: stormark builds and runs without it, and a host without it is told
//! which package to install. Targets are named as libiscsi and fio name them,
//! `iscsi://HOST[:PORT]/IQN/LUN`; CHAP credentials never come on the command line (a URL with
//! `user@` is refused), only from the environment or a file ([`Chap`]).
#![warn(missing_docs)]

mod ffi;

use std::cell::RefCell;
use std::ffi::{c_int, c_void, CString};

pub use ffi::available;
pub use stormark_spec::{LunUrl as Url, UrlError, LUN_FORM as FORM};

/// What went wrong with a target, as one line.
#[derive(Debug, thiserror::Error)]
pub enum IscsiError {
    /// libiscsi is not on this host.
    #[error("{0}")]
    Library(String),
    /// The login failed: no portal there, no such target or LUN, CHAP refused.
    #[error("iscsi://{portal}/{target}/{lun}: {why}")]
    Connect {
        /// HOST:PORT.
        portal: String,
        /// The target's IQN.
        target: String,
        /// The LUN.
        lun: u16,
        /// libiscsi's words.
        why: String,
    },
    /// The session failed after its login (the connection lost).
    #[error("iSCSI session: {0}")]
    Session(String),
}

/// CHAP credentials (the initiator's user name and secret).
#[derive(Clone, PartialEq, Eq)]
pub struct Chap {
    /// The user name.
    pub user: String,
    /// The secret (never shown, never recorded).
    pub secret: String,
}

impl std::fmt::Debug for Chap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chap")
            .field("user", &self.user)
            .field("secret", &"<hidden>")
            .finish()
    }
}

impl Chap {
    /// The credentials of the environment (`STORMARK_ISCSI_USER` and
    /// `STORMARK_ISCSI_SECRET`), or of the file `STORMARK_ISCSI_CHAP_FILE` names (its first
    /// line `USER:SECRET`, read as [`Chap::from_file`] reads it); `None` when neither is set.
    /// What is worth a warning (a file others may read) is added to `warnings`.
    pub fn from_env(warnings: &mut Vec<String>) -> Result<Option<Chap>, String> {
        if let Ok(path) = std::env::var("STORMARK_ISCSI_CHAP_FILE") {
            return Chap::from_file(std::path::Path::new(&path), warnings).map(Some);
        }
        match (
            std::env::var("STORMARK_ISCSI_USER"),
            std::env::var("STORMARK_ISCSI_SECRET"),
        ) {
            (Ok(user), Ok(secret)) if !user.is_empty() && !secret.is_empty() => {
                Ok(Some(Chap { user, secret }))
            }
            (Err(_), Err(_)) => Ok(None),
            _ => Err(
                "STORMARK_ISCSI_USER and STORMARK_ISCSI_SECRET: expected both, not empty".into(),
            ),
        }
    }

    /// The credentials in the file `path` (`STORMARK_ISCSI_CHAP_FILE`): its first line
    /// `USER:SECRET`. Only a regular file is read, at most [`CHAP_FILE_LIMIT`] bytes of it:
    /// it is opened without waiting (`O_NONBLOCK`: a FIFO's open would wait for a writer for
    /// ever) and checked by its descriptor (`fstat`) before any read, so that a FIFO, a
    /// device (`/dev/zero` would be read for ever) or a directory is refused at once. A file
    /// that group or others may read is read, with a warning added to `warnings`.
    pub fn from_file(path: &std::path::Path, warnings: &mut Vec<String>) -> Result<Chap, String> {
        use std::io::Read;
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        let shown = path.display();
        let fail = |why: String| format!("STORMARK_ISCSI_CHAP_FILE {shown}: {why}");
        // std opens with O_CLOEXEC.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)
            .map_err(|e| fail(format!("cannot read it: {e}")))?;
        let meta = file
            .metadata()
            .map_err(|e| fail(format!("cannot read it: {e}")))?;
        if !meta.file_type().is_file() {
            return Err(fail(
                "not a regular file (a FIFO, device or directory is refused); give a file whose first line is USER:SECRET".into(),
            ));
        }
        if meta.mode() & 0o077 != 0 {
            warnings.push(fail(format!(
                "readable by group or others (mode {:o}); chmod 600 it",
                meta.mode() & 0o777
            )));
        }
        let mut bytes = Vec::new();
        file.take(CHAP_FILE_LIMIT + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| fail(format!("cannot read it: {e}")))?;
        if bytes.len() as u64 > CHAP_FILE_LIMIT {
            return Err(fail(format!(
                "larger than {} KiB; expected one line USER:SECRET",
                CHAP_FILE_LIMIT >> 10
            )));
        }
        let text = String::from_utf8(bytes)
            .map_err(|_| fail("not text; expected one line USER:SECRET".into()))?;
        let line = text.lines().next().unwrap_or("").trim();
        match line.split_once(':') {
            Some((u, s)) if !u.is_empty() && !s.is_empty() => Ok(Chap {
                user: u.to_string(),
                secret: s.to_string(),
            }),
            _ => Err(fail("expected its first line as USER:SECRET".into())),
        }
    }
}

/// The most of a CHAP file read: its first line is one `USER:SECRET`.
pub const CHAP_FILE_LIMIT: u64 = 4 << 10;

/// The direction of a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// READ(16).
    Read,
    /// WRITE(16).
    Write,
    /// UNMAP of the blocks (a trim; no data).
    Unmap,
    /// SYNCHRONIZE CACHE(16) of the whole LUN (no data; offset and length unused).
    Sync,
}

/// A command that completed: its tag and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// The tag it was submitted with.
    pub tag: u64,
    /// `Ok(())`, or why it failed.
    pub status: Result<(), Failure>,
}

/// How a command failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The target answered CHECK CONDITION with this sense key (SPC's, 0–15).
    Sense(u8),
    /// Another SCSI status (BUSY, RESERVATION CONFLICT, TASK SET FULL, ...).
    Status(u8),
    /// The command never completed at the target (the connection was lost, or it timed out).
    Transport,
}

thread_local! {
    /// The completions libiscsi's callbacks gave on this thread, taken by the session's
    /// owner after each service (a session is used by the one thread that made it).
    static DONE: RefCell<Vec<Completion>> = const { RefCell::new(Vec::new()) };
}

/// One logged-in session to a LUN.
pub struct Session {
    lib: &'static ffi::Lib,
    ctx: *mut c_void,
    lun: c_int,
    block: u32,
    blocks: u64,
    /// What is in flight, and whether a service failed: never served again (buffers of
    /// commands in flight may be gone).
    session: stormark_dlclient::Session,
    /// Writes are forced to the medium before they complete (FUA).
    fua: bool,
}

// SAFETY: a session is moved to its worker's thread before any command, and used only there
// (libiscsi's context has no thread affinity, only no locking).
unsafe impl Send for Session {}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("lun", &self.lun)
            .field("block", &self.block)
            .field("blocks", &self.blocks)
            .finish()
    }
}

impl Session {
    /// Logs in to `url`'s target (with `chap`, if given) and asks the LUN's size (READ
    /// CAPACITY(16)).
    pub fn connect(url: &Url, chap: Option<&Chap>) -> Result<Session, IscsiError> {
        let lib = ffi::lib().map_err(IscsiError::Library)?;
        let fail = |why: String| IscsiError::Connect {
            portal: url.portal(),
            target: url.target.clone(),
            lun: url.lun,
            why,
        };
        let name = CString::new(format!(
            "iqn.2026-11.org.stormark:{}-{}",
            std::process::id(),
            unique()
        ))
        .expect("no NUL in a name of digits");
        // SAFETY: a valid C string; the context is destroyed by Drop (or below on failure).
        let ctx = unsafe { (lib.create_context)(name.as_ptr()) };
        if ctx.is_null() {
            return Err(fail("libiscsi could not make a context".into()));
        }
        let mut s = Session {
            lib,
            ctx,
            lun: c_int::from(url.lun),
            block: 0,
            blocks: 0,
            session: stormark_dlclient::Session::default(),
            fua: false,
        };
        let target = CString::new(url.target.as_str()).map_err(|_| fail("NUL in IQN".into()))?;
        let portal = CString::new(url.portal()).map_err(|_| fail("NUL in portal".into()))?;
        // SAFETY: ctx is live; the strings outlive the calls (libiscsi copies them).
        unsafe {
            (lib.set_targetname)(ctx, target.as_ptr());
            (lib.set_session_type)(ctx, ffi::ISCSI_SESSION_NORMAL);
            (lib.set_header_digest)(ctx, ffi::ISCSI_HEADER_DIGEST_NONE);
            // Sync calls (login, capacity) give up after this many seconds.
            (lib.set_timeout)(ctx, 10);
        }
        if let Some(c) = chap {
            let user = CString::new(c.user.as_str()).map_err(|_| fail("NUL in CHAP".into()))?;
            let secret = CString::new(c.secret.as_str()).map_err(|_| fail("NUL in CHAP".into()))?;
            // SAFETY: as above.
            if unsafe { (lib.set_initiator_username_pwd)(ctx, user.as_ptr(), secret.as_ptr()) } != 0
            {
                return Err(fail(s.error()));
            }
        }
        // SAFETY: as above.
        if unsafe { (lib.full_connect_sync)(ctx, portal.as_ptr(), s.lun) } != 0 {
            return Err(fail(s.error()));
        }
        // SAFETY: a logged-in context; the task is freed below.
        let task = unsafe { (lib.readcapacity16_sync)(ctx, s.lun) };
        if task.is_null() {
            return Err(fail(format!("READ CAPACITY(16): {}", s.error())));
        }
        // SAFETY: a completed task; libiscsi's own struct scsi_readcapacity16, whose first
        // fields are the last LBA (u64) and the block length (u32).
        let (status, rc) = unsafe {
            (
                *(task as *const c_int),
                (lib.datain_unmarshall)(task) as *const ffi::ReadCapacity16,
            )
        };
        let got = (status == 0 && !rc.is_null()).then(|| {
            // SAFETY: checked non-null; valid until the task is freed.
            unsafe { ((*rc).returned_lba, (*rc).block_length) }
        });
        // SAFETY: the task is ours to free, once.
        unsafe { (lib.free_scsi_task)(task) };
        let Some((last, block)) = got.filter(|(_, b)| b.is_power_of_two() && *b >= 512) else {
            return Err(fail("READ CAPACITY(16) failed".into()));
        };
        s.block = block;
        s.blocks = last.saturating_add(1);
        // Commands wait as long as the run's own rules say, not libiscsi's timer.
        // SAFETY: as above.
        unsafe { (lib.set_timeout)(ctx, 0) };
        Ok(s)
    }

    /// The LUN's logical block, bytes.
    pub fn block_size(&self) -> u32 {
        self.block
    }

    /// The LUN's size, bytes.
    pub fn capacity(&self) -> u64 {
        self.blocks.saturating_mul(u64::from(self.block))
    }

    /// Every write from now on forced to the medium before it completes (Force Unit Access:
    /// what O_SYNC and O_DSYNC ask of a file).
    pub fn set_fua(&mut self, fua: bool) {
        self.fua = fua;
    }

    /// Commands submitted and not yet completed.
    pub fn inflight(&self) -> usize {
        self.session.inflight
    }

    /// Queues a READ(16) into, or a WRITE(16) from, the `len` bytes at `buf`, at byte `offset`
    /// (both multiples of the block), or an UNMAP of those bytes or a SYNCHRONIZE CACHE (`buf`
    /// unused); its completion comes from [`Session::wait`] with `tag`.
    ///
    /// # Safety
    /// For a read or write, `buf` must hold `len` bytes that stay valid, and untouched by
    /// anything else, until the command's completion has been taken.
    pub unsafe fn submit(
        &mut self,
        dir: Dir,
        offset: u64,
        buf: *mut u8,
        len: u32,
        tag: u64,
    ) -> Result<(), IscsiError> {
        if self.session.broken {
            return Err(IscsiError::Session("the session failed earlier".into()));
        }
        let lba = offset / u64::from(self.block);
        let block = self.block as c_int;
        let private = tag as usize as *mut c_void;
        let lib = self.lib;
        // SAFETY: a logged-in context; the caller keeps `buf` valid until completion.
        let task = unsafe {
            match dir {
                Dir::Read => {
                    let t = (lib.read16_task)(
                        self.ctx, self.lun, lba, len, block, 0, 0, 0, 0, 0, done, private,
                    );
                    // The data lands in the worker's buffer, not in one libiscsi allocates.
                    if !t.is_null() && (lib.add_data_in_buffer)(t, len as c_int, buf) != 0 {
                        return Err(IscsiError::Session(self.error()));
                    }
                    t
                }
                Dir::Write => (lib.write16_task)(
                    self.ctx,
                    self.lun,
                    lba,
                    buf,
                    len,
                    block,
                    0,
                    0,
                    c_int::from(self.fua),
                    0,
                    0,
                    done,
                    private,
                ),
                Dir::Unmap => {
                    // Copied into the command's parameter list as it is made.
                    let mut range = ffi::UnmapList {
                        lba,
                        num: len / self.block,
                    };
                    (lib.unmap_task)(self.ctx, self.lun, 0, 0, &mut range, 1, done, private)
                }
                Dir::Sync => {
                    (lib.synchronizecache16_task)(self.ctx, self.lun, 0, 0, 0, 0, done, private)
                }
            }
        };
        if task.is_null() {
            return Err(IscsiError::Session(self.error()));
        }
        self.session.inflight += 1;
        Ok(())
    }

    stormark_dlclient::wait_method!("target", IscsiError);

    /// Reads `buf.len()` bytes at byte `offset` (multiples of the block), waiting for them;
    /// `Ok(Err(_))`: the target failed the command. Only with nothing else in flight.
    pub fn read_at(
        &mut self,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<Result<(), Failure>, IscsiError> {
        let (ptr, len) = (buf.as_mut_ptr(), buf.len());
        self.one(Dir::Read, offset, ptr, len)
    }

    /// Writes `buf` at byte `offset` (multiples of the block), waiting for the target's
    /// answer; `Ok(Err(_))`: the target failed the command. Only with nothing else in flight.
    pub fn write_at(&mut self, offset: u64, buf: &[u8]) -> Result<Result<(), Failure>, IscsiError> {
        // libiscsi only reads a write's buffer.
        self.one(Dir::Write, offset, buf.as_ptr().cast_mut(), buf.len())
    }

    /// Asks the LUN to make every write it acknowledged durable (SYNCHRONIZE CACHE(16) of
    /// all its blocks), waiting for its answer. Only with nothing else in flight.
    pub fn sync_cache(&mut self) -> Result<Result<(), Failure>, IscsiError> {
        self.one(Dir::Sync, 0, std::ptr::null_mut(), 0)
    }

    /// One command, waited for. A session that failed meanwhile is never served again, so
    /// that nothing reaches `buf` after this returns.
    fn one(
        &mut self,
        dir: Dir,
        offset: u64,
        buf: *mut u8,
        len: usize,
    ) -> Result<Result<(), Failure>, IscsiError> {
        if self.session.inflight > 0 || self.session.broken {
            return Err(IscsiError::Session(
                "a waited command on a busy or failed session".into(),
            ));
        }
        let len = u32::try_from(len)
            .map_err(|_| IscsiError::Session("a command of 4 GiB or more".into()))?;
        // SAFETY: buf holds len bytes, borrowed by the caller until this returns, and the
        // loop below returns only once the command completed or the session is given up.
        unsafe { self.submit(dir, offset, buf, len, u64::MAX) }?;
        let mut done = Vec::with_capacity(1);
        while done.is_empty() {
            self.wait(100, &mut done)?;
        }
        Ok(done[0].status)
    }

    /// libiscsi's last error.
    fn error(&self) -> String {
        // SAFETY: a live context; the string is copied before any other call.
        unsafe { stormark_dlclient::message((self.lib.get_error)(self.ctx)) }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // SAFETY: the context is ours; commands still queued are cancelled by the destroy
        // (their callbacks run, with CANCELLED, and are dropped with the thread's list).
        unsafe {
            if self.session.inflight == 0 {
                (self.lib.logout_sync)(self.ctx);
            }
            (self.lib.destroy_context)(self.ctx);
        }
        DONE.with(|d| d.borrow_mut().clear());
    }
}

/// libiscsi's completion callback: the command's outcome noted for [`Session::wait`].
extern "C" fn done(_ctx: *mut c_void, status: c_int, task: *mut c_void, private: *mut c_void) {
    let status = match status {
        ffi::SCSI_STATUS_GOOD => Ok(()),
        ffi::SCSI_STATUS_CHECK_CONDITION if !task.is_null() => {
            // SAFETY: a task of libiscsi's struct scsi_task; its sense key lies at a fixed
            // place (ffi::SENSE_KEY_AT, checked against the library's own decoding in the
            // tests).
            Err(Failure::Sense(unsafe {
                *(task as *const u8).add(ffi::SENSE_KEY_AT) & 0x0f
            }))
        }
        s if (0..=0xff).contains(&s) => Err(Failure::Status(s as u8)),
        _ => Err(Failure::Transport),
    };
    if !task.is_null() {
        if let Ok(lib) = ffi::lib() {
            // SAFETY: the task is ours to free, once, here.
            unsafe { (lib.free_scsi_task)(task) };
        }
    }
    DONE.with(|d| {
        d.borrow_mut().push(Completion {
            tag: private as usize as u64,
            status,
        })
    });
}

/// A number no other session of this process has.
fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// `from_file` on `path` in a thread of its own: its answer within a second, or a
    /// failure (never a test that hangs).
    fn within_a_second(path: &std::path::Path) -> (Result<Chap, String>, Vec<String>) {
        let path = path.to_path_buf();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut warnings = Vec::new();
            let got = Chap::from_file(&path, &mut warnings);
            let _ = tx.send((got, warnings));
        });
        rx.recv_timeout(Duration::from_secs(1))
            .expect("an answer within a second")
    }

    /// Issue 54: a FIFO blocked in `open` for ever, `/dev/zero` was read until memory ran out.
    #[test]
    fn a_chap_file_that_is_no_regular_file_is_refused_at_once() {
        let dir = stormark_testkit::temp_dir(&std::env::temp_dir().to_string_lossy());
        let fifo = dir.path().join("chap.fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for path in [fifo.as_path(), "/dev/zero".as_ref(), dir.path()] {
            let (got, _) = within_a_second(path);
            let e = got.expect_err("refused");
            assert!(e.contains("not a regular file"), "{e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }

    #[test]
    fn a_chap_file_is_read_up_to_its_limit_and_warned_of_when_others_may_read_it() {
        use std::os::unix::fs::PermissionsExt;
        let dir = stormark_testkit::temp_dir(&std::env::temp_dir().to_string_lossy());
        let file = dir.path().join("chap");
        std::fs::write(&file, "bench:s3cret\nmore\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let (got, warnings) = within_a_second(&file);
        assert_eq!(
            got,
            Ok(Chap {
                user: "bench".into(),
                secret: "s3cret".into()
            })
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let (got, warnings) = within_a_second(&file);
        assert!(got.is_ok());
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("chmod 600"), "{warnings:?}");
        assert!(!warnings[0].contains("s3cret"), "{warnings:?}");
        let big = format!("bench:s3cret\n{}", "x".repeat(CHAP_FILE_LIMIT as usize));
        std::fs::write(&file, big).unwrap();
        let e = within_a_second(&file).0.expect_err("too large");
        assert!(
            e.contains("larger than 4 KiB") && !e.contains("s3cret"),
            "{e}"
        );
        std::fs::write(&file, "no colon\n").unwrap();
        assert!(within_a_second(&file).0.is_err());
    }
}
