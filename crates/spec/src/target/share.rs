//! `nfs://SERVER[:PORT]/EXPORT/DIR[?mountport=N]`, as libnfs and fio write a share.

/// The accepted form, for messages.
pub const SHARE_FORM: &str =
    "nfs://SERVER[:PORT]/EXPORT[/DIR][?mountport=N] (nfs://192.0.2.10/export/bench)";

/// A directory on an NFS server, as the user named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareUrl {
    /// The server: a name, an IPv4 address, or an IPv6 address (without brackets).
    pub host: String,
    /// The NFS service's TCP port (`None`: the server's portmapper says).
    pub port: Option<u16>,
    /// The MOUNT service's TCP port (`None`: the server's portmapper says).
    pub mount_port: Option<u16>,
    /// The export and the directory within it, `/`-separated, absolute, no `.` or `..`.
    pub path: String,
}

use super::UrlError;

impl ShareUrl {
    /// Parses `nfs://SERVER[:PORT]/EXPORT[/DIR][?mountport=N]`. Credentials (`user@`) are
    /// refused: NFS's AUTH_SYS carries none, and a command line is seen by every user.
    pub fn parse(text: &str) -> Result<ShareUrl, UrlError> {
        let shown = |t: &str| match t.find('@') {
            Some(at) => format!("nfs://<credentials>{}", &t[at..]),
            None => t.to_string(),
        };
        let bad = |why| UrlError {
            url: shown(text),
            why,
            form: SHARE_FORM,
        };
        if !super::has_scheme(text, "nfs://") {
            return Err(bad("not an nfs:// URL"));
        }
        let rest = &text[6..];
        if rest.contains('@') {
            return Err(bad(
                "no credentials go in the URL (NFS's AUTH_SYS has none)",
            ));
        }
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, Some(q)),
            None => (rest, None),
        };
        let (server, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => return Err(bad("no export")),
        };
        let (host, nfs_port) = super::host_port(server).map_err(|e| bad(e.why()))?;
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        if parts.is_empty() {
            return Err(bad("no export"));
        }
        if parts.iter().any(|p| *p == "." || *p == "..") {
            return Err(bad(". or .. in the path"));
        }
        if path
            .chars()
            .any(|c| c.is_control() || c == '\\' || c == '%')
        {
            return Err(bad("a control character, \\ or % in the path"));
        }
        let mut mount_port = None;
        for kv in query.into_iter().flat_map(|q| q.split('&')) {
            match kv.split_once('=') {
                Some(("mountport", p)) => {
                    let p = p.parse::<u16>().ok().filter(|&p| p > 0);
                    mount_port = Some(p.ok_or_else(|| bad("a mountport from 1 to 65535"))?);
                }
                _ => return Err(bad("an option other than mountport=N")),
            }
        }
        Ok(ShareUrl {
            host: host.to_string(),
            port: nfs_port,
            mount_port,
            path: format!("/{}", parts.join("/")),
        })
    }

    /// The server as `HOST` or `[V6]`, with `:PORT` when given.
    pub fn server(&self) -> String {
        let h = super::bracketed(&self.host);
        match self.port {
            Some(p) => format!("{h}:{p}"),
            None => h,
        }
    }

    /// The URL libnfs is given for the directory `path` (its ports as libnfs's options).
    pub fn for_libnfs(&self, path: &str) -> String {
        let host = super::bracketed(&self.host);
        let mut opts = Vec::new();
        if let Some(p) = self.port {
            opts.push(format!("nfsport={p}"));
        }
        if let Some(p) = self.mount_port {
            opts.push(format!("mountport={p}"));
        }
        let q = if opts.is_empty() {
            String::new()
        } else {
            format!("?{}", opts.join("&"))
        };
        format!("nfs://{host}{path}{q}")
    }
}

impl std::fmt::Display for ShareUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "nfs://{}{}", self.server(), self.path)?;
        if let Some(p) = self.mount_port {
            write!(f, "?mountport={p}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn shares_as_libnfs_writes_them() {
        let u = ShareUrl::parse("nfs://127.0.0.1/export/bench").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.mount_port, u.path.as_str()),
            ("127.0.0.1", None, None, "/export/bench")
        );
        assert_eq!(u.to_string(), "nfs://127.0.0.1/export/bench");
        let u = ShareUrl::parse("NFS://nas-1:2050//export//a/?mountport=20491").unwrap();
        assert_eq!((u.port, u.mount_port), (Some(2050), Some(20491)));
        assert_eq!(u.to_string(), "nfs://nas-1:2050/export/a?mountport=20491");
        assert_eq!(
            u.for_libnfs("/export"),
            "nfs://nas-1/export?nfsport=2050&mountport=20491"
        );
        let u = ShareUrl::parse("nfs://[fd00::1]:2049/e").unwrap();
        assert_eq!(
            (u.host.as_str(), u.server()),
            ("fd00::1", "[fd00::1]:2049".into())
        );
    }

    #[test]
    fn mistakes_say_what_and_never_show_a_secret() {
        for (url, why) in [
            ("nfs://host", "no export"),
            ("nfs://host/", "no export"),
            ("nfs:///export", "no host"),
            ("nfs://fd00::1/e", "in brackets"),
            ("nfs://h:0/e", "port"),
            ("nfs://h:x/e", "port"),
            ("nfs://h/e/../etc", ".."),
            ("nfs://h/e?version=4", "mountport"),
            ("nfs://h/e?mountport=x", "mountport"),
            ("nfs://h/e%2f", "%"),
            ("http://h/e", "not an nfs"),
        ] {
            let e = ShareUrl::parse(url).unwrap_err().to_string();
            assert!(e.contains(why), "{url}: {e}");
            assert!(e.contains("expected nfs://SERVER"), "{e}");
        }
        let e = ShareUrl::parse("nfs://admin:hunter2@h/e")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("hunter2") && !e.contains("admin"), "{e}");
    }

    proptest! {
        /// Any text: parsed (and its own form parses to the same) or refused in one line,
        /// never a panic.
        #[test]
        fn any_text_is_parsed_or_refused(s in "(nfs://)?[ -~]{0,60}") {
            match ShareUrl::parse(&s) {
                Ok(u) => prop_assert_eq!(ShareUrl::parse(&u.to_string()), Ok(u)),
                Err(e) => prop_assert_eq!(e.to_string().lines().count(), 1),
            }
        }
    }
}
