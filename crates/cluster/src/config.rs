//! How an agent is set up: its token, the paths and devices coordinators may use, TLS, the
//! journal of its run directories, and the warnings a risky set-up deserves.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::auth::MIN_TOKEN_LEN;

mod files;
pub use files::{read_regular, read_token, PEM_LIMIT, TOKEN_FILE_LIMIT};

/// A mistake in how the agent was started: one line for the user (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A file given by an option cannot be read.
    #[error("{option} {}: cannot read it: {source}", path.display())]
    Unreadable {
        /// The option (`--token-file`, `--tls-cert`, ...).
        option: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file given by an option that is not a regular file (a FIFO, a device, a directory):
    /// refused before anything is read from it, never waited on.
    #[error("{option} {}: {found}, not a regular file; give {expected}", path.display())]
    NotAFile {
        /// The option (`--token-file`, `--tls-cert`, ...).
        option: &'static str,
        /// The file.
        path: PathBuf,
        /// What it is instead (`a FIFO`, `a character device`, ...).
        found: &'static str,
        /// What the option expects.
        expected: &'static str,
    },
    /// A file given by an option larger than such a file can be.
    #[error("{option} {}: larger than {limit} bytes; give {expected}", path.display())]
    TooLarge {
        /// The option.
        option: &'static str,
        /// The file.
        path: PathBuf,
        /// The most it may hold, in bytes.
        limit: u64,
        /// What the option expects.
        expected: &'static str,
    },
    /// The token file holds no usable token.
    #[error("--token-file {}: expected one line of at least {MIN_TOKEN_LEN} characters without spaces or control characters, such as the output of `head -c 32 /dev/urandom | base64`", path.display())]
    BadToken {
        /// The file.
        path: PathBuf,
    },
    /// An `--allow-iscsi` value that is not a target's URL.
    #[error("--allow-iscsi {value}: {why}; expected iscsi://HOST[:PORT]/IQN (every LUN of the target) or iscsi://HOST[:PORT]/IQN/LUN")]
    BadIscsi {
        /// The value as given (never with credentials: those are refused).
        value: String,
        /// What is wrong.
        why: String,
    },
    /// A LUN the agent was not told it may use.
    #[error("{url} is not a LUN this agent may use: {allowed}")]
    IscsiOutside {
        /// The target as asked.
        url: String,
        /// What the agent allows.
        allowed: String,
    },
    /// An `--allow-nfs` value that is not a share's URL.
    #[error("--allow-nfs {value}: {why}; expected nfs://SERVER[:PORT]/EXPORT[/DIR] (that directory and what lies beneath it)")]
    BadNfs {
        /// The value as given (never with credentials: those are refused).
        value: String,
        /// What is wrong.
        why: String,
    },
    /// A share directory the agent was not told it may use.
    #[error("{url} is not a share directory this agent may use: {allowed}")]
    NfsOutside {
        /// The target as asked.
        url: String,
        /// What the agent allows.
        allowed: String,
    },
    /// No `--allow-path`.
    #[error("--allow-path: give at least one directory or device coordinators may use, such as --allow-path /mnt/bench")]
    NoAllowedPath,
    /// A path given by an option does not exist or cannot be resolved.
    #[error("{option} {}: {source}", path.display())]
    Missing {
        /// The option.
        option: &'static str,
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A coordinator's target that does not exist on this host.
    #[error("target {} on this agent: {source}", path.display())]
    TargetMissing {
        /// The target as asked.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `--allow-device` names something else.
    #[error("--allow-device {}: not a block device; give a device such as /dev/nvme1n1 (directories go to --allow-path)", path.display())]
    NotADevice {
        /// The path.
        path: PathBuf,
    },
    /// A coordinator's target outside the allowed paths.
    #[error("target {} is outside this agent's --allow-path list ({allowed})", path.display())]
    Outside {
        /// The target as asked.
        path: PathBuf,
        /// The allowed paths, comma separated.
        allowed: String,
    },
    /// The agent cannot serve as set up (TLS material refused, the address in use).
    #[error("{option}: {cause}")]
    Serve {
        /// The option and its value, such as `--listen 0.0.0.0:7878`.
        option: String,
        /// The system's or the TLS library's error.
        cause: String,
    },
}

/// How an agent is set up. Its `Debug` output never shows the token.
#[derive(Clone)]
pub struct AgentConfig {
    /// The shared secret every call must carry.
    pub token: String,
    /// Directories and devices coordinators may use (canonical paths).
    pub allow: Vec<PathBuf>,
    /// Block devices coordinators may use (`st_rdev`): those named by `--allow-device`, and
    /// by `--allow-path` when it names a device. A device node found under an allowed
    /// directory is refused unless it names one of these.
    pub devices: Vec<u64>,
    /// iSCSI targets coordinators may use (`--allow-iscsi`): portal, IQN, and a LUN or
    /// every LUN (`None`).
    pub iscsi: Vec<(stormark_iscsi::Url, Option<u16>)>,
    /// NFS share directories coordinators may use (`--allow-nfs`), each with what lies
    /// beneath it.
    pub nfs: Vec<stormark_nfs::Url>,
    /// How soon a lost coordinator's session ends: its host or network lost, within this
    /// (the kernel's keep-alive probes and `TCP_USER_TIMEOUT`); its process frozen, within
    /// three times this (an HTTP/2 ping after twice this without a byte, answered within the
    /// rest).
    pub heartbeat_timeout: Duration,
    /// Certificate chain and private key (PEM) to serve TLS with; plain HTTP/2 without.
    pub tls: Option<(Vec<u8>, Vec<u8>)>,
    /// The journal of run directories created and not yet removed (`--state-dir`).
    pub journal: Option<crate::Journal>,
    /// Told what this host's load did, each worker's second as it is sent (`--metrics-listen`):
    /// per operation, completed, bytes and failed.
    pub observer: Option<Observer>,
    /// Told when a session opens and when it ends (a launched agent counts its runs).
    pub on_session: Option<crate::server::SessionHook>,
}

/// What an agent tells its observer: one worker's second, per operation (completed, bytes,
/// failed).
pub type Observer = std::sync::Arc<dyn Fn(&[(stormark_stats::Op, u64, u64, u64)]) + Send + Sync>;

impl std::fmt::Debug for AgentConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentConfig")
            .field("token", &"<redacted>")
            .field("allow", &self.allow)
            .field("devices", &self.devices)
            .field("iscsi", &self.iscsi)
            .field("nfs", &self.nfs)
            .field("heartbeat_timeout", &self.heartbeat_timeout)
            .field("tls", &self.tls.as_ref().map(|_| "<certificate and key>"))
            .field("journal", &self.journal)
            .field("observer", &self.observer.as_ref().map(|_| "<set>"))
            .field("on_session", &self.on_session.as_ref().map(|_| "<set>"))
            .finish()
    }
}

impl AgentConfig {
    /// Reads the token file and resolves the allowed paths. Errors are one line for the user.
    pub fn new(token_file: &Path, allow: &[PathBuf]) -> Result<AgentConfig, ConfigError> {
        AgentConfig::with_token(read_token(token_file)?, allow)
    }

    /// [`AgentConfig::new`] with the token given (checked by the caller).
    pub fn with_token(token: String, allow: &[PathBuf]) -> Result<AgentConfig, ConfigError> {
        if allow.is_empty() {
            return Err(ConfigError::NoAllowedPath);
        }
        let allow = allow
            .iter()
            .map(|p| {
                std::fs::canonicalize(p).map_err(|source| ConfigError::Missing {
                    option: "--allow-path",
                    path: p.clone(),
                    source,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let devices = allow
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .filter(|m| m.file_type().is_block_device())
            .map(|m| m.rdev())
            .collect();
        Ok(AgentConfig {
            token,
            allow,
            devices,
            iscsi: Vec::new(),
            nfs: Vec::new(),
            heartbeat_timeout: Duration::from_secs(5),
            tls: None,
            journal: None,
            observer: None,
            on_session: None,
        })
    }

    /// Also allows the block devices `devices` (`--allow-device`), checked by device number.
    pub fn with_devices(mut self, devices: &[PathBuf]) -> Result<AgentConfig, ConfigError> {
        for d in devices {
            let meta = std::fs::metadata(d).map_err(|source| ConfigError::Missing {
                option: "--allow-device",
                path: d.clone(),
                source,
            })?;
            if !meta.file_type().is_block_device() {
                return Err(ConfigError::NotADevice { path: d.clone() });
            }
            self.devices.push(meta.rdev());
            if let Ok(real) = std::fs::canonicalize(d) {
                self.allow.push(real);
            }
        }
        Ok(self)
    }

    /// Also allows the iSCSI targets `urls` (`--allow-iscsi`): `iscsi://HOST[:PORT]/IQN` for
    /// every LUN of a target, with `/LUN` for one.
    pub fn with_iscsi(mut self, urls: &[String]) -> Result<AgentConfig, ConfigError> {
        use stormark_iscsi::Url;
        for value in urls {
            let bad = |why: String| ConfigError::BadIscsi {
                value: Url::parse(value).map_or_else(|e| e.url, |u| u.to_string()),
                why,
            };
            let entry = match Url::parse(value) {
                Ok(u) => {
                    let lun = u.lun;
                    (u, Some(lun))
                }
                // No LUN: every LUN of the target.
                Err(e) => match Url::parse(&format!("{}/0", value.trim_end_matches('/'))) {
                    Ok(u) if !value.contains('@') => (u, None),
                    _ => return Err(bad(e.why.to_string())),
                },
            };
            self.iscsi.push(entry);
        }
        Ok(self)
    }

    /// The LUN `url` names, if this agent allows it (its portal as written, its IQN in any
    /// case, its LUN or every LUN).
    pub fn allowed_lun(&self, url: &str) -> Result<stormark_iscsi::Url, ConfigError> {
        let outside = |allowed: String| ConfigError::IscsiOutside {
            url: stormark_iscsi::Url::parse(url).map_or_else(|e| e.url, |u| u.to_string()),
            allowed,
        };
        let asked = stormark_iscsi::Url::parse(url).map_err(|e| outside(e.to_string()))?;
        let fits = |(a, lun): &(stormark_iscsi::Url, Option<u16>)| {
            a.host.eq_ignore_ascii_case(&asked.host)
                && a.port == asked.port
                && a.target.eq_ignore_ascii_case(&asked.target)
                && lun.is_none_or(|l| l == asked.lun)
        };
        if self.iscsi.iter().any(fits) {
            return Ok(asked);
        }
        Err(outside(if self.iscsi.is_empty() {
            "it allows no iSCSI target (start it with --allow-iscsi iscsi://HOST/IQN)".into()
        } else {
            let list: Vec<String> = self
                .iscsi
                .iter()
                .map(|(u, lun)| match lun {
                    Some(_) => u.to_string(),
                    None => format!("iscsi://{}/{} (every LUN)", u.portal(), u.target),
                })
                .collect();
            format!("it allows {}", list.join(", "))
        }))
    }

    /// Also allows the NFS share directories `urls` (`--allow-nfs`), each with what lies
    /// beneath it.
    pub fn with_nfs(mut self, urls: &[String]) -> Result<AgentConfig, ConfigError> {
        for value in urls {
            let u = stormark_nfs::Url::parse(value).map_err(|e| ConfigError::BadNfs {
                value: e.url.clone(),
                why: e.why.to_string(),
            })?;
            self.nfs.push(u);
        }
        Ok(self)
    }

    /// The share directory `url` names, if this agent allows it: its server as written, its
    /// path one of the allowed ones or beneath one.
    pub fn allowed_share(&self, url: &str) -> Result<stormark_nfs::Url, ConfigError> {
        let outside = |allowed: String| ConfigError::NfsOutside {
            url: stormark_nfs::Url::parse(url).map_or_else(|e| e.url, |u| u.to_string()),
            allowed,
        };
        let asked = stormark_nfs::Url::parse(url).map_err(|e| outside(e.to_string()))?;
        let fits = |a: &stormark_nfs::Url| {
            a.host.eq_ignore_ascii_case(&asked.host)
                && a.port == asked.port
                && (asked.path == a.path || asked.path.starts_with(&format!("{}/", a.path)))
        };
        if self.nfs.iter().any(fits) {
            return Ok(asked);
        }
        Err(outside(if self.nfs.is_empty() {
            "it allows no share (start it with --allow-nfs nfs://SERVER/EXPORT/DIR)".into()
        } else {
            let list: Vec<String> = self.nfs.iter().map(|u| u.to_string()).collect();
            format!("it allows {}", list.join(", "))
        }))
    }

    /// Warnings about a set-up that works but exposes more than it should: printed at start.
    /// `tls_key` is the file given with `--tls-key`, if any.
    pub fn warnings(
        &self,
        listen: &std::net::SocketAddr,
        token_file: &Path,
        tls_key: Option<&Path>,
    ) -> Vec<String> {
        let mut out = Vec::new();
        if self.tls.is_none() && !listen.ip().is_loopback() {
            out.push(format!("listening on {listen} without TLS: the token and every request travel in clear; give --tls-cert and --tls-key (docs/security.md)"));
        }
        let secrets = [("--token-file", Some(token_file)), ("--tls-key", tls_key)];
        for (option, file) in secrets {
            let Some(file) = file else { continue };
            if let Ok(m) = std::fs::metadata(file) {
                if m.mode() & 0o077 != 0 {
                    out.push(format!(
                        "{option} {}: readable by group or others (mode {:o}); chmod 600 it",
                        file.display(),
                        m.mode() & 0o777
                    ));
                }
            }
        }
        if self.allow.iter().any(|p| p == Path::new("/")) {
            out.push("--allow-path /: coordinators may use any directory of this host".into());
        }
        out
    }

    /// Serves TLS with this certificate chain and key (PEM files).
    pub fn with_tls(mut self, cert: &Path, key: &Path) -> Result<AgentConfig, ConfigError> {
        let read = |option: &'static str, p: &Path, expected: &'static str| {
            read_regular(p, option, PEM_LIMIT, expected)
        };
        self.tls = Some((
            read("--tls-cert", cert, "a PEM file of the certificate chain")?,
            read("--tls-key", key, "a PEM file of the private key")?,
        ));
        Ok(self)
    }

    /// Whether `target` lies under an allowed path; returns its canonical form.
    ///
    /// A target outside the allowed paths gets one answer whether it exists or not, so that
    /// a coordinator cannot probe the host's other paths: a target that cannot be resolved is
    /// said to be missing only when the deepest of its ancestors that resolves lies under an
    /// allowed path (after links and `..`), and is outside otherwise.
    pub fn allowed(&self, target: &Path) -> Result<PathBuf, ConfigError> {
        let inside = |real: &Path| self.allow.iter().any(|root| real.starts_with(root));
        let outside = || ConfigError::Outside {
            path: target.to_path_buf(),
            allowed: self
                .allow
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        };
        match std::fs::canonicalize(target) {
            Ok(real) if inside(&real) => Ok(real),
            Ok(_) => Err(outside()),
            Err(source) => {
                let resolved = target
                    .ancestors()
                    .skip(1)
                    .map(|a| {
                        if a.as_os_str().is_empty() {
                            Path::new(".")
                        } else {
                            a
                        }
                    })
                    .find_map(|a| std::fs::canonicalize(a).ok());
                match resolved {
                    Some(real) if inside(&real) => Err(ConfigError::TargetMissing {
                        path: target.to_path_buf(),
                        source,
                    }),
                    _ => Err(outside()),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::check_token;
    use tonic::Request;

    #[test]
    fn debug_never_shows_the_token() {
        let cfg = AgentConfig {
            token: "s3cret-s3cret-s3cret".into(),
            allow: vec![],
            devices: vec![],
            iscsi: vec![],
            nfs: vec![],
            heartbeat_timeout: Duration::from_secs(5),
            tls: None,
            journal: None,
            observer: None,
            on_session: None,
        };
        assert!(!format!("{cfg:?}").contains("s3cret"));
    }

    #[test]
    fn tokens_are_checked() {
        let mut req = Request::new(());
        assert_eq!(
            check_token("s3cret-s3cret-s3cret", &req)
                .unwrap_err()
                .code(),
            tonic::Code::Unauthenticated
        );
        req.metadata_mut()
            .insert("authorization", "Bearer nope".parse().unwrap());
        let e = check_token("s3cret-s3cret-s3cret", &req).unwrap_err();
        assert_eq!(e.message(), "wrong token");
        req.metadata_mut().insert(
            "authorization",
            "Bearer s3cret-s3cret-s3cret".parse().unwrap(),
        );
        assert!(check_token("s3cret-s3cret-s3cret", &req).is_ok());
    }

    #[test]
    fn token_files_and_allowed_paths() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("token");
        std::fs::write(&f, "short\n").unwrap();
        assert!(read_token(&f)
            .unwrap_err()
            .to_string()
            .contains("at least 16"));
        std::fs::write(&f, "0123456789abcdef\x070123\n").unwrap();
        assert!(read_token(&f).is_err(), "control characters are refused");
        std::fs::write(&f, "0123456789abcdef0123\n").unwrap();
        assert_eq!(read_token(&f).unwrap(), "0123456789abcdef0123");
        assert!(AgentConfig::new(&f, &[])
            .unwrap_err()
            .to_string()
            .contains("--allow-path"));
        let inside = dir.path().join("bench");
        std::fs::create_dir(&inside).unwrap();
        let cfg = AgentConfig::new(&f, std::slice::from_ref(&inside)).unwrap();
        assert!(cfg.allowed(&inside).is_ok());
        // `..` and symbolic links are resolved before the check.
        assert!(cfg.allowed(&inside.join("..")).is_err());
        std::os::unix::fs::symlink(dir.path(), inside.join("escape")).unwrap();
        let err = cfg.allowed(&inside.join("escape")).unwrap_err().to_string();
        assert!(
            err.contains("outside this agent's --allow-path list"),
            "{err}"
        );
        assert!(cfg.allowed(Path::new("/does/not/exist")).is_err());
    }

    /// Issue 54: a token file that is a FIFO or a device is refused at once, in one line,
    /// never waited on or read to exhaustion; a file over the limit is refused.
    #[test]
    fn token_files_are_regular_files_of_a_few_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: c is a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // No writer ever comes: a blocking open would hang here.
        let e = read_token(&fifo).unwrap_err().to_string();
        assert!(e.contains("a FIFO, not a regular file"), "{e}");
        assert!(
            e.starts_with(&format!("--token-file {}", fifo.display())),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
        let e = read_token(Path::new("/dev/zero")).unwrap_err().to_string();
        assert_eq!(
            e,
            "--token-file /dev/zero: a character device, not a regular file; give a file holding the token, one line"
        );
        let e = read_token(dir.path()).unwrap_err().to_string();
        assert!(e.contains("a directory, not a regular file"), "{e}");
        let big = dir.path().join("big");
        std::fs::write(&big, "a".repeat(TOKEN_FILE_LIMIT as usize + 1)).unwrap();
        let e = read_token(&big).unwrap_err().to_string();
        assert!(e.contains("larger than 4096 bytes"), "{e}");
        let e = read_token(&dir.path().join("none"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot read it"), "{e}");
        let ok = dir.path().join("ok");
        std::fs::write(&ok, "0123456789abcdef0123\n").unwrap();
        assert_eq!(read_token(&ok).unwrap(), "0123456789abcdef0123");
        // TLS files go through the same reader.
        let cfg = AgentConfig::new(&ok, &[dir.path().to_path_buf()]).unwrap();
        let e = cfg.with_tls(&fifo, &ok).unwrap_err().to_string();
        assert!(e.starts_with("--tls-cert") && e.contains("a FIFO"), "{e}");
    }

    /// Issue 54: a key file readable by others is warned about, as the token file is.
    #[test]
    fn a_tls_key_readable_by_others_is_warned_about() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("token");
        std::fs::write(&token, "0123456789abcdef0123\n").unwrap();
        std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
        let key = dir.path().join("key.pem");
        std::fs::write(&key, "key").unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o640)).unwrap();
        let cfg = AgentConfig::new(&token, &[dir.path().to_path_buf()]).unwrap();
        let lo = "127.0.0.1:7878".parse().unwrap();
        let w = cfg.warnings(&lo, &token, Some(&key));
        assert_eq!(
            w,
            [format!(
                "--tls-key {}: readable by group or others (mode 640); chmod 600 it",
                key.display()
            )]
        );
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(cfg.warnings(&lo, &token, Some(&key)).is_empty());
    }

    /// Issue 54: whether a path outside the allowed ones exists cannot be told from the
    /// answer: the same words, apart from the path.
    #[test]
    fn a_target_outside_is_refused_alike_whether_it_exists_or_not() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("token");
        std::fs::write(&f, "0123456789abcdef0123\n").unwrap();
        let inside = dir.path().join("bench");
        std::fs::create_dir(&inside).unwrap();
        let cfg = AgentConfig::new(&f, std::slice::from_ref(&inside)).unwrap();
        let said = |p: &Path| {
            let e = cfg.allowed(p).unwrap_err().to_string();
            e.replace(&p.display().to_string(), "PATH")
        };
        let outside = format!(
            "target PATH is outside this agent's --allow-path list ({})",
            inside.display()
        );
        for p in [
            Path::new("/etc/passwd"),
            Path::new("/etc/stormark-no-such-file"),
            Path::new("/etc/passwd/below-a-file"),
            Path::new("/no-such-dir/x/y"),
            &dir.path().join("token"),
            &dir.path().join("no-such-file"),
            &inside.join("../no-such-file"),
        ] {
            assert_eq!(said(p), outside, "{}", p.display());
        }
        // Beneath an allowed path, a missing target is said to be missing.
        let e = cfg
            .allowed(&inside.join("missing"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("No such file"), "{e}");
        // Also through a link planted inside that leads outside.
        std::os::unix::fs::symlink("/etc", inside.join("etc")).unwrap();
        for p in ["etc/passwd", "etc/stormark-no-such-file"] {
            assert_eq!(said(&inside.join(p)), outside, "{p}");
        }
    }

    #[test]
    fn luns_are_allowed_by_portal_iqn_and_lun() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("token");
        std::fs::write(&f, "0123456789abcdef0123\n").unwrap();
        let cfg = AgentConfig::new(&f, &[dir.path().to_path_buf()]).unwrap();
        let none = cfg.allowed_lun("iscsi://10.0.0.5/iqn.2003-01.org.example:d1/1");
        assert!(none.unwrap_err().to_string().contains("--allow-iscsi"));
        let cfg = cfg
            .with_iscsi(&[
                "iscsi://10.0.0.5/iqn.2003-01.org.example:d1".into(),
                "iscsi://10.0.0.6:3261/iqn.2003-01.org.example:d2/3".into(),
            ])
            .unwrap();
        for ok in [
            "iscsi://10.0.0.5/iqn.2003-01.org.example:d1/1",
            "iscsi://10.0.0.5:3260/IQN.2003-01.org.example:D1/7",
            "iscsi://10.0.0.6:3261/iqn.2003-01.org.example:d2/3",
        ] {
            assert!(cfg.allowed_lun(ok).is_ok(), "{ok}");
        }
        for refused in [
            "iscsi://10.0.0.5:3261/iqn.2003-01.org.example:d1/1",
            "iscsi://10.0.0.7/iqn.2003-01.org.example:d1/1",
            "iscsi://10.0.0.5/iqn.2003-01.org.example:d9/1",
            "iscsi://10.0.0.6:3261/iqn.2003-01.org.example:d2/4",
            "iscsi://10.0.0.5/disk/1",
        ] {
            let e = cfg.allowed_lun(refused).unwrap_err().to_string();
            assert!(e.contains("not a LUN this agent may use"), "{refused}: {e}");
        }
        for bad in [
            "nfs://x/y",
            "iscsi://10.0.0.5",
            "iscsi://u%p@10.0.0.5/iqn.x:y",
        ] {
            let e = AgentConfig::new(&f, &[dir.path().to_path_buf()])
                .unwrap()
                .with_iscsi(&[bad.to_string()])
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("--allow-iscsi"), "{bad}: {e}");
            assert!(!e.contains("u%p"), "{bad}: {e}");
        }
    }

    #[test]
    fn shares_are_allowed_by_server_and_path() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("token");
        std::fs::write(&f, "0123456789abcdef0123\n").unwrap();
        let cfg = AgentConfig::new(&f, &[dir.path().to_path_buf()]).unwrap();
        let none = cfg.allowed_share("nfs://nas/export/bench");
        assert!(none.unwrap_err().to_string().contains("--allow-nfs"));
        let cfg = cfg.with_nfs(&["nfs://nas/export/bench".into()]).unwrap();
        for ok in ["nfs://nas/export/bench", "nfs://NAS/export/bench/a/b"] {
            assert!(cfg.allowed_share(ok).is_ok(), "{ok}");
        }
        for refused in [
            "nfs://nas/export",
            "nfs://nas/export/benchmark",
            "nfs://nas:2050/export/bench",
            "nfs://other/export/bench",
            "nfs://nas/export/bench/../x",
        ] {
            let e = cfg.allowed_share(refused).unwrap_err().to_string();
            assert!(e.contains("not a share directory"), "{refused}: {e}");
        }
        let e = AgentConfig::new(&f, &[dir.path().to_path_buf()])
            .unwrap()
            .with_nfs(&["nfs://u:pw@nas/e".into()])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--allow-nfs") && !e.contains("pw"), "{e}");
    }
}
