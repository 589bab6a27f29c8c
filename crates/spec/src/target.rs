//! What a run measures, as the user named it, parsed once where the request is made: a path
//! (a directory, a file or a block device), an iSCSI LUN (`iscsi://`), an NFS share's
//! directory (`nfs://`). The schemes are told apart here and nowhere else; the clients that
//! speak to the services (`stormark-iscsi`, `stormark-nfs`) take these URLs.

use std::path::{Path, PathBuf};

mod lun;
mod share;

pub use lun::{LunUrl, LUN_FORM};
pub use share::{ShareUrl, SHARE_FORM};

/// A run's target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A directory, a file or a block device of this host.
    Path(PathBuf),
    /// An iSCSI LUN, measured from user space.
    Lun(LunUrl),
    /// A directory on an NFS share, measured from user space.
    Share(ShareUrl),
}

impl Target {
    /// The target `path` names: a URL of a scheme stormark speaks, parsed (its mistakes in
    /// one line), or a path.
    pub fn parse(path: &Path) -> Result<Target, UrlError> {
        let Some(text) = path.to_str() else {
            return Ok(Target::Path(path.to_path_buf()));
        };
        if has_scheme(text, "iscsi://") {
            return LunUrl::parse(text).map(Target::Lun);
        }
        if has_scheme(text, "nfs://") {
            return ShareUrl::parse(text).map(Target::Share);
        }
        Ok(Target::Path(path.to_path_buf()))
    }

    /// Whether `path` names a target of a service measured from user space (an iSCSI LUN or
    /// an NFS share), well formed or not: what no path check applies to.
    pub fn is_remote(path: &Path) -> bool {
        !matches!(Target::parse(path), Ok(Target::Path(_)))
    }
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
fn has_scheme(text: &str, scheme: &str) -> bool {
    text.get(..scheme.len())
        .is_some_and(|s| s.eq_ignore_ascii_case(scheme))
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

#[cfg(test)]
mod target_tests {
    use super::*;

    #[test]
    fn a_target_is_a_path_a_lun_or_a_share_told_once() {
        let t = |s: &str| Target::parse(Path::new(s));
        assert_eq!(t("/mnt/x"), Ok(Target::Path("/mnt/x".into())));
        assert_eq!(t("relative/dir"), Ok(Target::Path("relative/dir".into())));
        assert!(
            matches!(t("iscsi://10.0.0.1/iqn.2003-01.org.x:d/1"), Ok(Target::Lun(u)) if u.lun == 1)
        );
        assert!(matches!(
            t("ISCSI://10.0.0.1/iqn.2003-01.org.x:d/2"),
            Ok(Target::Lun(_))
        ));
        assert!(
            matches!(t("nfs://nas/export/bench"), Ok(Target::Share(u)) if u.path == "/export/bench")
        );
        // A malformed URL is a mistake of its scheme's, not a path.
        let e = t("nfs://nas").unwrap_err();
        assert!(e.to_string().contains("expected nfs://SERVER"), "{e}");
        assert!(Target::is_remote(Path::new("nfs://nas")));
        assert!(!Target::is_remote(Path::new("/dev/sdb")));
        // A path that is not UTF-8 is a path.
        use std::os::unix::ffi::OsStrExt;
        let odd = Path::new(std::ffi::OsStr::from_bytes(b"/tmp/\xff"));
        assert_eq!(Target::parse(odd), Ok(Target::Path(odd.to_path_buf())));
    }
}
