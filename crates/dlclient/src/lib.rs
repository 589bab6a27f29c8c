//! What stormark's user-space protocol clients share (`stormark-iscsi` over libiscsi,
//! `stormark-nfs` over libnfs): the C library loaded when a target of its kind is used (so
//! that stormark runs where it is not installed), one step of the library's event loop (poll
//! its socket, then let it service what came), and a server's `HOST[:PORT]` as their URLs
//! write it.

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

/// Why a target's URL is not one: the URL as given (less any credentials and query), what is
/// wrong, and the accepted form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlError {
    /// The URL as given, less any credentials.
    pub url: String,
    /// What is wrong.
    pub why: &'static str,
    /// The accepted form, with an example.
    pub form: &'static str,
}

impl std::fmt::Display for UrlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}; expected {}", self.url, self.why, self.form)
    }
}

impl std::error::Error for UrlError {}

/// Whether `text` starts with `scheme` (`iscsi://`), in any case.
pub fn has_scheme(text: &str, scheme: &str) -> bool {
    text.get(..scheme.len())
        .is_some_and(|s| s.eq_ignore_ascii_case(scheme))
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

/// Why a server's `HOST[:PORT]` is not one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostError {
    /// `[` without its `]`.
    Unclosed,
    /// Something other than `:PORT` after `]`.
    AfterBracket,
    /// No host before the port.
    NoHost,
    /// A host of other characters than letters, digits, dots, dashes, underscores (and
    /// colons in brackets).
    BadHost,
    /// An IPv6 address without its brackets (its colons cannot be told from a port's).
    BareV6,
    /// A port not from 1 to 65535.
    BadPort,
}

impl HostError {
    /// The mistake in words, for a URL's one-line error.
    pub fn why(self) -> &'static str {
        match self {
            HostError::Unclosed => "an unclosed [ in the host",
            HostError::AfterBracket => "junk after ] (only :PORT)",
            HostError::NoHost => "no host",
            HostError::BadHost => "a host of letters, digits, dots and dashes",
            HostError::BareV6 => "an IPv6 address in brackets ([2001:db8::1]:PORT)",
            HostError::BadPort => "a port from 1 to 65535",
        }
    }
}

/// Parses a server as URLs write it: `HOST`, `HOST:PORT`, `[V6]` or `[V6]:PORT`. Returns the
/// host (without brackets) and the port when given.
pub fn host_port(s: &str) -> Result<(&str, Option<u16>), HostError> {
    let (host, port) = if let Some(v6) = s.strip_prefix('[') {
        let (h, after) = v6.split_once(']').ok_or(HostError::Unclosed)?;
        match after {
            "" => (h, None),
            a => (h, Some(a.strip_prefix(':').ok_or(HostError::AfterBracket)?)),
        }
    } else {
        match s.split_once(':') {
            Some((_, p)) if p.contains(':') => return Err(HostError::BareV6),
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    if host.is_empty() {
        return Err(HostError::NoHost);
    }
    let bracketed = s.starts_with('[');
    if !host.chars().all(|c| {
        c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') || (bracketed && c == ':')
    }) {
        return Err(HostError::BadHost);
    }
    let port = match port {
        None => None,
        // Digits only: Rust's parse would take a sign.
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
            match p.parse::<u16>() {
                Ok(p) if p > 0 => Some(p),
                _ => return Err(HostError::BadPort),
            }
        }
        Some(_) => return Err(HostError::BadPort),
    };
    Ok((host, port))
}

/// A host as URLs write it: in brackets when it is an IPv6 address.
pub fn bracketed(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn servers_as_urls_write_them() {
        assert_eq!(host_port("a.example"), Ok(("a.example", None)));
        assert_eq!(host_port("10.0.0.1:3260"), Ok(("10.0.0.1", Some(3260))));
        assert_eq!(host_port("[::1]"), Ok(("::1", None)));
        assert_eq!(host_port("[fe80::1]:2049"), Ok(("fe80::1", Some(2049))));
        assert_eq!(host_port("[::1"), Err(HostError::Unclosed));
        assert_eq!(host_port("[::1]x"), Err(HostError::AfterBracket));
        assert_eq!(host_port(":80"), Err(HostError::NoHost));
        assert_eq!(host_port(""), Err(HostError::NoHost));
        assert_eq!(host_port("fe80::1"), Err(HostError::BareV6));
        assert_eq!(host_port("a b"), Err(HostError::BadHost));
        assert_eq!(host_port("h:0"), Err(HostError::BadPort));
        assert_eq!(host_port("h:65536"), Err(HostError::BadPort));
        assert_eq!(host_port("h:+80"), Err(HostError::BadPort));
        assert_eq!(host_port("h:"), Err(HostError::BadPort));
        assert_eq!(bracketed("::1"), "[::1]");
        assert_eq!(bracketed("h"), "h");
    }

    proptest! {
        /// Anything at all: an answer, never a panic; a host given back is one of the
        /// accepted characters, and what it says round-trips.
        #[test]
        fn any_text_is_a_server_or_a_mistake(s in "\\PC{0,40}") {
            if let Ok((h, p)) = host_port(&s) {
                prop_assert!(!h.is_empty());
                let again = match p {
                    Some(p) => format!("{}:{p}", bracketed(h)),
                    None => bracketed(h),
                };
                prop_assert_eq!(host_port(&again), Ok((h, p)));
            }
        }
    }
}
