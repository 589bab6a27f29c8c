//! What stormark's user-space protocol clients share (`stormark-iscsi` over libiscsi,
//! `stormark-nfs` over libnfs): the C library loaded when a target of its kind is used (so
//! that stormark runs where it is not installed), one step of the library's event loop (poll
//! its socket, then let it service what came). Their URLs are `spec`'s (`LunUrl`,
//! `ShareUrl`): parsing a target needs no client.

use std::ffi::{c_int, c_void, CStr};

/// A C library opened by its file name for the life of the process (never closed: the
/// function pointers taken from it stay valid).
pub struct Library {
    handle: *mut c_void,
    soname: &'static CStr,
}

// SAFETY: the handle is only read (dlsym), which is thread-safe.
unsafe impl Send for Library {}
// SAFETY: as above.
unsafe impl Sync for Library {}

impl Library {
    /// Opens `soname`; `missing` is the one line said when it is not installed (naming the
    /// package that has it).
    pub fn open(soname: &'static CStr, missing: &str) -> Result<Library, String> {
        // SAFETY: dlopen of a library by name; its initializers are the library's own.
        let handle = unsafe { libc::dlopen(soname.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            return Err(missing.to_string());
        }
        Ok(Library { handle, soname })
    }

    /// The function `name` as the function pointer type `F`; `too_old` says which version
    /// has it when this one does not.
    ///
    /// # Safety
    /// `F` must be a C function pointer type restating the C signature of `name`.
    pub unsafe fn function<F: Copy>(&self, name: &CStr, too_old: &str) -> Result<F, String> {
        assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
        // SAFETY: a handle dlopen gave; a NUL-terminated name.
        let p = unsafe { libc::dlsym(self.handle, name.as_ptr()) };
        if p.is_null() {
            return Err(format!(
                "{} has no {}: {too_old}",
                self.soname.to_string_lossy(),
                name.to_string_lossy()
            ));
        }
        // SAFETY: the caller's (F is the symbol's signature); the sizes are equal.
        Ok(unsafe { std::mem::transmute_copy(&p) })
    }
}

/// A library's functions, loaded at first use and kept for the process (or why they could
/// not be: the line is said each time one is asked for).
pub struct Loaded<T>(std::sync::OnceLock<Result<T, String>>);

impl<T> Loaded<T> {
    /// Not loaded yet.
    pub const fn new() -> Loaded<T> {
        Loaded(std::sync::OnceLock::new())
    }

    /// The functions, loaded by `load` the first time.
    pub fn get(&self, load: fn() -> Result<T, String>) -> Result<&T, String> {
        self.0.get_or_init(load).as_ref().map_err(Clone::clone)
    }
}

impl<T> Default for Loaded<T> {
    fn default() -> Self {
        Loaded::new()
    }
}

/// How one step of a library's event loop went.
#[derive(Debug)]
pub enum Step {
    /// Polled and serviced: what came back is in the library's callbacks' hands.
    Served,
    /// The server closed or reset the connection (what it answered before was serviced).
    /// The library would reconnect and poll again at once (a dead target spun at 78,000
    /// polls a second for ever): the caller fails its session and counts what was in flight.
    HungUp,
    /// poll itself failed.
    PollFailed(std::io::Error),
    /// The library's service call failed: its own error message says why.
    ServiceFailed,
}

impl Step {
    /// Why the session must fail after this step (`None`: it goes on): the server (`who`)
    /// hung up with `inflight` requests unanswered, poll failed, or the library says why
    /// (`error`, its last message).
    pub fn failure(
        self,
        who: &str,
        inflight: usize,
        error: impl FnOnce() -> String,
    ) -> Option<String> {
        match self {
            Step::Served => None,
            Step::PollFailed(e) => Some(format!("poll: {e}")),
            Step::ServiceFailed => Some(error()),
            Step::HungUp => Some(format!(
                "the {who} closed the connection ({inflight} request(s) in flight)"
            )),
        }
    }
}

/// One step of a library's event loop and what it answered: polls `fd` for `events` up to
/// `timeout_ms` (0: not at all), lets `service` (the library's, given the returned events)
/// run its callbacks on this thread, which push their completions into `done`; those are
/// moved into `out`, each taken off `inflight`.
///
/// # Safety
/// `service` must be the library's service call on the live context whose socket is `fd`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn wait<C>(
    done: &'static std::thread::LocalKey<std::cell::RefCell<Vec<C>>>,
    out: &mut Vec<C>,
    inflight: &mut usize,
    fd: c_int,
    events: c_int,
    timeout_ms: i32,
    service: impl FnOnce(c_int) -> c_int,
) -> Step {
    let s = step(fd, events, timeout_ms, service);
    // What was answered, whatever came after it.
    done.with(|d| {
        let mut d = d.borrow_mut();
        *inflight = inflight.saturating_sub(d.len());
        out.append(&mut d);
    });
    s
}

/// One step of a library's event loop: polls `fd` for `events` up to `timeout_ms` (0: not at
/// all), then lets `service` (the library's, given the returned events) run its callbacks on
/// this thread.
pub fn step(
    fd: c_int,
    events: c_int,
    timeout_ms: i32,
    service: impl FnOnce(c_int) -> c_int,
) -> Step {
    let mut pfd = libc::pollfd {
        fd,
        events: events as i16,
        revents: 0,
    };
    // SAFETY: one pollfd, ours.
    let n = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
    if n < 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Step::PollFailed(e);
        }
    }
    if service(c_int::from(pfd.revents)) < 0 {
        return Step::ServiceFailed;
    }
    if n > 0 && pfd.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
        return Step::HungUp;
    }
    Step::Served
}

/// A client's session over one connection, as both protocol clients keep it: the requests
/// it has in flight, and whether it has failed (a failed session is never polled again).
#[derive(Debug, Default)]
pub struct Session {
    /// Requests submitted and not yet answered.
    pub inflight: usize,
    /// The connection failed: every later step fails at once.
    pub broken: bool,
}

impl Session {
    /// One step of the library's event loop ([`wait`]), the answers moved into `out`; `Err`
    /// with why the session failed, now (the `who` at the other end hung up, poll failed,
    /// or the library's own `error`) or earlier.
    ///
    /// # Safety
    /// As [`wait`]: `service` is the library's service call on the live context of `fd`.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn wait<C>(
        &mut self,
        done: &'static std::thread::LocalKey<std::cell::RefCell<Vec<C>>>,
        out: &mut Vec<C>,
        (fd, events): (c_int, c_int),
        timeout_ms: i32,
        who: &str,
        service: impl FnOnce(c_int) -> c_int,
        error: impl FnOnce() -> String,
    ) -> Result<(), String> {
        if self.broken {
            return Err(format!("the connection to the {who} failed earlier"));
        }
        // SAFETY: as the caller promises.
        let step = unsafe {
            wait(
                done,
                out,
                &mut self.inflight,
                fd,
                events,
                timeout_ms,
                service,
            )
        };
        // Hung up: what is still in flight is lost; the worker counts it.
        match step.failure(who, self.inflight, error) {
            None => Ok(()),
            Some(why) => {
                self.broken = true;
                Err(why)
            }
        }
    }
}

/// A library's last error message (its `get_error`'s answer), copied: "unknown error" when
/// it has none.
///
/// # Safety
/// `p` is null or a NUL-terminated string that stays valid until this returns.
pub unsafe fn message(p: *const std::ffi::c_char) -> String {
    if p.is_null() {
        return "unknown error".into();
    }
    // SAFETY: as the caller promises.
    let s = unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy();
    match s.trim() {
        "" => "unknown error".into(),
        s => s.to_string(),
    }
}

/// A client's `wait` method, written once for both protocol clients: one step of its
/// library's event loop through its [`Session`], the `who` at the other end named in a
/// failure, which becomes `$err::Session`. The client has `lib` (with `get_fd`,
/// `which_events`, `service`, `get_error`), `ctx`, `session`, and a thread-local `DONE` of
/// its `Completion`s.
#[macro_export]
macro_rules! wait_method {
    ($who:literal, $err:ident) => {
        /// Sends what is queued and waits up to `timeout_ms` (0: not at all) for
        /// completions, then moves every completion there is into `out`.
        pub fn wait(&mut self, timeout_ms: i32, out: &mut Vec<Completion>) -> Result<(), $err> {
            let (lib, ctx) = (self.lib, self.ctx);
            // SAFETY: a live context; the callbacks run in service, here, on this thread.
            unsafe {
                self.session.wait(
                    &DONE,
                    out,
                    ((lib.get_fd)(ctx), (lib.which_events)(ctx)),
                    timeout_ms,
                    $who,
                    |revents| (lib.service)(ctx, revents),
                    || $crate::message((lib.get_error)(ctx)),
                )
            }
            .map_err($err::Session)
        }
    };
}
