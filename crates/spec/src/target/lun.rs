//! `iscsi://HOST[:PORT]/IQN/LUN`, as libiscsi and fio write a target.

/// The accepted form, for messages.
pub const LUN_FORM: &str =
    "iscsi://HOST[:PORT]/IQN/LUN (iscsi://192.0.2.10/iqn.2003-01.org.example:disk1/1)";

/// A LUN of a target at a portal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LunUrl {
    /// The portal's host: a name, an IPv4 address, or an IPv6 address (without brackets).
    pub host: String,
    /// The portal's TCP port (3260 unless given).
    pub port: u16,
    /// The target's name (`iqn.`, `eui.` or `naa.`).
    pub target: String,
    /// The logical unit.
    pub lun: u16,
}

use super::UrlError;

impl LunUrl {
    /// Parses `iscsi://HOST[:PORT]/IQN/LUN`. Credentials in it (`user%secret@`) are refused:
    /// a command line is seen by every user of the host and kept in shells' histories.
    pub fn parse(text: &str) -> Result<LunUrl, UrlError> {
        // Credentials (`user%secret@`) and a query (`?secret=`) are not repeated, and control
        // characters are escaped: the error is printed.
        let shown = |t: &str| {
            let t = match t.rfind('@') {
                Some(at) => format!("iscsi://<credentials>{}", &t[at..]),
                None => t.to_string(),
            };
            let t = match t.find(['?', '#']) {
                Some(q) => format!("{}?<query hidden>", &t[..q]),
                None => t,
            };
            t.chars().flat_map(char::escape_default).collect::<String>()
        };
        let bad = |why| UrlError {
            url: shown(text),
            why,
            form: LUN_FORM,
        };
        if !super::has_scheme(text, "iscsi://") {
            return Err(bad("not an iscsi:// URL"));
        }
        let rest = &text[8..];
        if rest.contains('@') {
            return Err(bad("credentials never go in the URL: set STORMARK_ISCSI_USER and STORMARK_ISCSI_SECRET, or STORMARK_ISCSI_CHAP_FILE"));
        }
        let (portal, path) = rest.split_once('/').ok_or_else(|| bad("no target"))?;
        let (host, port) = super::host_port(portal).map_err(|e| bad(e.why()))?;
        let port = port.unwrap_or(3260);
        let (target, lun) = path.rsplit_once('/').ok_or_else(|| bad("no LUN"))?;
        let lower = target.to_ascii_lowercase();
        if !(lower.starts_with("iqn.") || lower.starts_with("eui.") || lower.starts_with("naa.")) {
            return Err(bad("a target name starting iqn., eui. or naa."));
        }
        if target.len() > 223
            || !target
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':'))
        {
            return Err(bad(
                "a target name of at most 223 letters, digits, dots, dashes and colons",
            ));
        }
        let lun = match lun.parse::<u16>() {
            Ok(l) if l < 16384 => l,
            _ => return Err(bad("a LUN from 0 to 16383")),
        };
        Ok(LunUrl {
            host: host.to_string(),
            port,
            target: target.to_string(),
            lun,
        })
    }

    /// `HOST:PORT` (`[V6]:PORT`), as libiscsi takes a portal.
    pub fn portal(&self) -> String {
        format!("{}:{}", super::bracketed(&self.host), self.port)
    }
}

impl std::fmt::Display for LunUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "iscsi://{}/{}/{}", self.portal(), self.target, self.lun)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn targets_as_libiscsi_writes_them() {
        let u = LunUrl::parse("iscsi://127.0.0.1:3261/iqn.2026-11.org.stormark:t1/1").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.target.as_str(), u.lun),
            ("127.0.0.1", 3261, "iqn.2026-11.org.stormark:t1", 1)
        );
        assert_eq!(
            u.to_string(),
            "iscsi://127.0.0.1:3261/iqn.2026-11.org.stormark:t1/1"
        );
        let u = LunUrl::parse("iscsi://[fd00::1]/iqn.2003-01.org.x:d/0").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.portal()),
            ("fd00::1", 3260, "[fd00::1]:3260".into())
        );
        assert_eq!(LunUrl::parse("ISCSI://san/naa.600a0b80/3").unwrap().lun, 3);
    }

    #[test]
    fn mistakes_say_what_and_never_show_a_secret() {
        for (url, why) in [
            ("iscsi://host", "no target"),
            ("iscsi:///iqn.a:b/1", "no host"),
            ("iscsi://h:0/iqn.a:b/1", "port"),
            ("iscsi://h:x/iqn.a:b/1", "port"),
            ("iscsi://h/disk1/1", "iqn."),
            ("iscsi://h/iqn.a:b", "iqn."),
            ("iscsi://h/iqn.a:b/", "LUN"),
            ("iscsi://h/iqn.a:b/x", "LUN"),
            ("iscsi://h/iqn.a b/1", "target name"),
            ("http://h/iqn.a:b/1", "not an iscsi"),
        ] {
            let e = LunUrl::parse(url).unwrap_err().to_string();
            assert!(e.contains(why), "{url}: {e}");
            assert!(e.contains("expected iscsi://HOST[:PORT]/IQN/LUN"), "{e}");
        }
        let e = LunUrl::parse("iscsi://admin%hunter2@h/iqn.a:b/1")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("hunter2") && !e.contains("admin"), "{e}");
        assert!(e.contains("STORMARK_ISCSI_SECRET"), "{e}");
        // Issue 54: a query and a user:secret pair, and control characters.
        for url in [
            "iscsi://h/iqn.a:b/1?secret=hunter2",
            "iscsi://user:hunter2@h/iqn.a:b/1",
            "iscsi://h/iqn.a:b/x#hunter2",
        ] {
            let e = LunUrl::parse(url).unwrap_err().to_string();
            assert!(!e.contains("hunter2"), "{e}");
        }
        let e = LunUrl::parse("iscsi://h\x1b[2J/iqn.a:b/1")
            .unwrap_err()
            .to_string();
        assert!(!e.contains('\x1b'), "{e}");
    }

    proptest! {
        /// Any text: parsed or refused in one line, never a panic, never its secret shown.
        #[test]
        fn any_text_is_parsed_or_refused(s in "(iscsi://)?[ -~]{0,60}") {
            match LunUrl::parse(&s) {
                Ok(u) => {
                    prop_assert!(LunUrl::parse(&u.to_string()).is_ok());
                }
                Err(e) => {
                    let m = e.to_string();
                    prop_assert_eq!(m.lines().count(), 1);
                    if let Some(at) = s.find('@') {
                        let secret = &s[8.min(at)..at];
                        prop_assume!(secret.len() > 3 && !LUN_FORM.contains(secret));
                        prop_assert!(!m.contains(secret), "{}", m);
                    }
                }
            }
        }
    }
}
