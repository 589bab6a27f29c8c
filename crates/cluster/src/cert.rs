//! `stormark cert`: the TLS material of a cluster in one command each, a CA and every agent's
//! certificate signed by it, so that `--tls-cert`/`--tls-key` on the agents and `--tls-ca` on
//! the coordinator need no openssl.
//!
//! TLS here authenticates the agent to the coordinator only: the coordinator checks that the
//! agent's certificate chains to `--tls-ca` and names the host as written in `--agents` (an IP
//! address needs an IP subject alternative name, which is why each agent's addresses are
//! given). The agent knows its coordinator by the token, so a coordinator needs no certificate.
//!
//! Keys are ECDSA P-256 (rustls and ring sign and verify it; the same ring rustls uses through
//! tonic). Each file is written to a temporary name, mode 0600 for keys, then linked to its
//! name, which fails rather than replace a file that is there: nothing is ever overwritten,
//! and a file is either whole or absent. Each agent certificate is verified by webpki, the
//! verifier rustls itself uses, against the CA it was signed with, for each of its names,
//! before it is written.

use std::io::Write;
use std::net::IpAddr;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType, SerialNumber,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

/// The CA's certificate in its directory: what coordinators get as `--tls-ca`.
pub const CA_CERT: &str = "ca.pem";
/// The CA's key in its directory: whoever holds it can make certificates agents are trusted by.
pub const CA_KEY: &str = "ca.key";

/// How long a CA is valid: ten years.
const CA_DAYS: i64 = 3650;
/// How long an agent's certificate is valid: 825 days (the longest a browser accepts of a
/// server certificate, a common ceiling).
const AGENT_DAYS: i64 = 825;

/// What went wrong making certificates.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// A file that would be written is there already.
    #[error("{}: exists; stormark cert never overwrites a file: remove it, or give another directory", .0.display())]
    Exists(PathBuf),
    /// `--name` or `--dns` that is not a host name.
    #[error("{option} {value}: expected a host name such as node1 or node1.example.com (letters, digits, '-' and '.'), or an IP address")]
    BadName {
        /// The option.
        option: &'static str,
        /// The value as given.
        value: String,
    },
    /// The CA of the directory cannot be read or used.
    #[error("{why}; make the CA first with `stormark cert ca {}`", dir.display())]
    NoCa {
        /// The directory given.
        dir: PathBuf,
        /// Why.
        why: String,
    },
    /// The directory's certificate and key are not a CA stormark made, or do not belong together.
    #[error("{}: a certificate signed with {CA_KEY} does not verify against {CA_CERT} ({why}): not a CA made by `stormark cert ca`, or its key and certificate do not belong together", .dir.display())]
    NotOurCa {
        /// The directory.
        dir: PathBuf,
        /// webpki's words.
        why: String,
    },
    /// Writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The certificate library refused (not the user's doing).
    #[error("making the certificate: {0}")]
    Tls(String),
}

impl CertError {
    /// What the user must change (exit 2), not a failure of the machine.
    pub fn is_refusal(&self) -> bool {
        !matches!(self, CertError::Io { .. } | CertError::Tls(_))
    }
}

fn tls(e: impl std::fmt::Display) -> CertError {
    CertError::Tls(e.to_string())
}

/// The CA's name: fixed, so that the issuer of every certificate signed with its key is
/// written exactly as the CA's subject (each made certificate is verified against the CA).
fn ca_params() -> CertificateParams {
    let mut p = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "stormark");
    dn.push(DnType::CommonName, "stormark CA");
    p.distinguished_name = dn;
    p.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    p
}

/// Valid from an hour ago (a host whose clock is a little behind accepts it) for `days`, with
/// a random serial.
fn validity(p: &mut CertificateParams, days: i64) {
    let now = time::OffsetDateTime::now_utc();
    p.not_before = now - time::Duration::hours(1);
    p.not_after = now + time::Duration::days(days);
    let mut serial = hex_bytes(&crate::auth::session_id());
    serial[0] &= 0x7f;
    p.serial_number = Some(SerialNumber::from_slice(&serial));
}

fn hex_bytes(hex: &str) -> Vec<u8> {
    (0..hex.len() / 2)
        .filter_map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok())
        .collect()
}

/// Makes a CA in `dir` (made, mode 0700, when missing): [`CA_CERT`] and [`CA_KEY`] (mode
/// 0600). Returns the files written.
pub fn make_ca(dir: &Path) -> Result<Vec<PathBuf>, CertError> {
    let files = [dir.join(CA_CERT), dir.join(CA_KEY)];
    refuse_existing(&files)?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|source| CertError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
    let key = KeyPair::generate().map_err(tls)?;
    let mut params = ca_params();
    validity(&mut params, CA_DAYS);
    let cert = params.self_signed(&key).map_err(tls)?;
    write_all(&[
        (&files[0], cert.pem().as_bytes(), 0o644),
        (&files[1], key.serialize_pem().as_bytes(), 0o600),
    ])?;
    Ok(files.to_vec())
}

/// Makes the certificate of agent `name` signed by the CA in `dir`: `NAME.pem` and `NAME.key`
/// (mode 0600) there. Its names: `name` (a DNS name, or an IP address), every address of
/// `ips` and every name of `dns`. Returns the files written.
pub fn make_agent(
    dir: &Path,
    name: &str,
    ips: &[IpAddr],
    dns: &[String],
) -> Result<Vec<PathBuf>, CertError> {
    let as_ip = name.parse::<IpAddr>().ok();
    if as_ip.is_none() && !is_host_name(name) {
        return Err(CertError::BadName {
            option: "--name",
            value: name.to_string(),
        });
    }
    if let Some(bad) = dns.iter().find(|d| !is_host_name(d)) {
        return Err(CertError::BadName {
            option: "--dns",
            value: bad.clone(),
        });
    }
    let files = [
        dir.join(format!("{name}.pem")),
        dir.join(format!("{name}.key")),
    ];
    refuse_existing(&files)?;
    let (ca_der, issuer) = read_ca(dir)?;
    let mut names: Vec<SanType> = Vec::new();
    let mut checks: Vec<ServerName<'static>> = Vec::new();
    let mut add_dns = |n: &str, names: &mut Vec<SanType>| -> Result<(), CertError> {
        names.push(SanType::DnsName(n.try_into().map_err(tls)?));
        checks.push(ServerName::try_from(n.to_string()).map_err(tls)?);
        Ok(())
    };
    if as_ip.is_none() {
        add_dns(name, &mut names)?;
    }
    for d in dns {
        add_dns(d, &mut names)?;
    }
    let mut all_ips: Vec<IpAddr> = as_ip.into_iter().chain(ips.iter().copied()).collect();
    all_ips.dedup();
    for ip in &all_ips {
        names.push(SanType::IpAddress(*ip));
        checks.push(ServerName::IpAddress((*ip).into()));
    }
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "stormark");
    dn.push(DnType::CommonName, name);
    params.distinguished_name = dn;
    params.subject_alt_names = names;
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    validity(&mut params, AGENT_DAYS);
    let key = KeyPair::generate().map_err(tls)?;
    let cert = params.signed_by(&key, &issuer).map_err(tls)?;
    verify(&ca_der, cert.der(), &checks).map_err(|why| CertError::NotOurCa {
        dir: dir.to_path_buf(),
        why,
    })?;
    write_all(&[
        (&files[0], cert.pem().as_bytes(), 0o644),
        (&files[1], key.serialize_pem().as_bytes(), 0o600),
    ])?;
    Ok(files.to_vec())
}

/// The CA of `dir`: its certificate (DER) and the issuer its key signs as.
fn read_ca(dir: &Path) -> Result<(CertificateDer<'static>, Issuer<'static, KeyPair>), CertError> {
    let no_ca = |why: String| CertError::NoCa {
        dir: dir.to_path_buf(),
        why,
    };
    let read = |file: &str, what: &'static str| {
        crate::config::read_regular(&dir.join(file), "CA", crate::config::PEM_LIMIT, what)
            .map_err(|e| no_ca(e.to_string()))
    };
    let cert_pem = read(CA_CERT, "the CA's certificate (PEM)")?;
    let key_pem = read(CA_KEY, "the CA's key (PEM)")?;
    let ca_der = CertificateDer::from_pem_slice(&cert_pem).map_err(|e| {
        no_ca(format!(
            "CA {}: not a PEM certificate ({e})",
            dir.join(CA_CERT).display()
        ))
    })?;
    let key = std::str::from_utf8(&key_pem)
        .ok()
        .and_then(|k| KeyPair::from_pem(k).ok())
        .ok_or_else(|| {
            no_ca(format!(
                "CA {}: not a PEM private key",
                dir.join(CA_KEY).display()
            ))
        })?;
    Ok((ca_der, Issuer::new(ca_params(), key)))
}

/// Whether `cert` chains to the CA `ca` for a server, and is valid for each of `names`, as
/// rustls checks it when a coordinator connects.
fn verify(
    ca: &CertificateDer<'_>,
    cert: &CertificateDer<'_>,
    names: &[ServerName<'_>],
) -> Result<(), String> {
    let anchor = webpki::anchor_from_trusted_cert(ca).map_err(|e| e.to_string())?;
    let ee = webpki::EndEntityCert::try_from(cert).map_err(|e| e.to_string())?;
    ee.verify_for_usage(
        webpki::ALL_VERIFICATION_ALGS,
        &[anchor],
        &[],
        UnixTime::now(),
        webpki::KeyUsage::server_auth(),
        None,
        None,
    )
    .map_err(|e| e.to_string())?;
    for n in names {
        ee.verify_is_valid_for_subject_name(n)
            .map_err(|e| format!("{n:?}: {e}"))?;
    }
    Ok(())
}

/// A DNS name as a certificate may carry it: labels of letters, digits and '-', not starting
/// or ending with '-', up to 63 characters each and 253 in all.
fn is_host_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

fn refuse_existing(files: &[PathBuf]) -> Result<(), CertError> {
    match files.iter().find(|f| f.symlink_metadata().is_ok()) {
        Some(f) => Err(CertError::Exists(f.clone())),
        None => Ok(()),
    }
}

/// Writes each file whole under its name, never over one that is there; on a failure, what
/// this call wrote is removed again, so that a pair is written whole or not at all.
fn write_all(files: &[(&PathBuf, &[u8], u32)]) -> Result<(), CertError> {
    let mut written: Vec<&PathBuf> = Vec::new();
    for (path, data, mode) in files {
        if let Err(e) = write_new(path, data, *mode) {
            for w in written {
                let _ = std::fs::remove_file(w);
            }
            return Err(e);
        }
        written.push(path);
    }
    Ok(())
}

/// `data` written to a temporary file beside `path` (made with `mode`, never following a link),
/// synced, then linked to `path`, which fails when `path` exists: the file appears whole or
/// not at all, and nothing is replaced.
fn write_new(path: &Path, data: &[u8], mode: u32) -> Result<(), CertError> {
    let io = |source| CertError::Io {
        path: path.to_path_buf(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let leaf = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{leaf}.{}.tmp", &crate::auth::session_id()[..12]));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&tmp)
        .map_err(io)?;
    let wrote = f.write_all(data).and_then(|()| f.sync_all());
    drop(f);
    let linked = wrote.and_then(|()| std::fs::hard_link(&tmp, path));
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            Err(CertError::Exists(path.to_path_buf()))
        }
        Err(e) => Err(io(e)),
        Ok(()) => {
            // The directory's entry made durable too.
            if let Ok(d) = std::fs::File::open(dir) {
                let _ = d.sync_all();
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_ca_signs_agents_that_verify_for_their_names_and_nothing_is_overwritten() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("tls");
        let made = make_ca(&dir).unwrap();
        assert_eq!(made, vec![dir.join("ca.pem"), dir.join("ca.key")]);
        assert_eq!(mode(&dir.join("ca.key")), 0o600);
        assert_eq!(mode(&dir), 0o700);
        let ip: IpAddr = "10.0.0.11".parse().unwrap();
        let made = make_agent(&dir, "node1", &[ip], &["node1.example.com".into()]).unwrap();
        assert_eq!(made, vec![dir.join("node1.pem"), dir.join("node1.key")]);
        assert_eq!(mode(&dir.join("node1.key")), 0o600);
        let ca = CertificateDer::from_pem_file(dir.join("ca.pem")).unwrap();
        let cert = CertificateDer::from_pem_file(dir.join("node1.pem")).unwrap();
        let name = |n: &str| ServerName::try_from(n.to_string()).unwrap();
        verify(
            &ca,
            &cert,
            &[name("node1"), name("node1.example.com"), name("10.0.0.11")],
        )
        .unwrap();
        // Not for a name or address it was not made for.
        assert!(verify(&ca, &cert, &[name("node2")]).is_err());
        assert!(verify(&ca, &cert, &[name("10.0.0.12")]).is_err());
        // Not against another CA.
        let other = tmp.path().join("other");
        make_ca(&other).unwrap();
        let other_ca = CertificateDer::from_pem_file(other.join("ca.pem")).unwrap();
        assert!(verify(&other_ca, &cert, &[name("node1")]).is_err());
        // Nothing overwritten: the files stay as they were, no temporary left.
        let before = std::fs::read(dir.join("node1.key")).unwrap();
        let e = make_agent(&dir, "node1", &[ip], &[]).unwrap_err();
        assert!(
            e.is_refusal() && e.to_string().contains("node1.pem: exists"),
            "{e}"
        );
        let e = make_ca(&dir).unwrap_err();
        assert!(
            e.is_refusal() && e.to_string().contains("ca.pem: exists"),
            "{e}"
        );
        assert_eq!(std::fs::read(dir.join("node1.key")).unwrap(), before);
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["ca.key", "ca.pem", "node1.key", "node1.pem"]);
    }

    #[test]
    fn an_address_as_the_name_is_an_ip_name_and_bad_names_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        make_ca(tmp.path()).unwrap();
        make_agent(tmp.path(), "10.1.2.3", &[], &[]).unwrap();
        let ca = CertificateDer::from_pem_file(tmp.path().join("ca.pem")).unwrap();
        let cert = CertificateDer::from_pem_file(tmp.path().join("10.1.2.3.pem")).unwrap();
        verify(&ca, &cert, &[ServerName::try_from("10.1.2.3").unwrap()]).unwrap();
        for bad in ["", "node_1", "-node", "a/b", "node..x"] {
            let e = make_agent(tmp.path(), bad, &[], &[]).unwrap_err();
            assert!(
                e.is_refusal() && e.to_string().starts_with("--name"),
                "{bad}: {e}"
            );
        }
        let e = make_agent(tmp.path(), "n2", &[], &["x y".into()]).unwrap_err();
        assert!(e.to_string().starts_with("--dns x y"), "{e}");
        // No CA: said, with the command that makes one.
        let none = tempfile::tempdir().unwrap();
        let e = make_agent(none.path(), "n1", &[], &[]).unwrap_err();
        assert!(
            e.is_refusal() && e.to_string().contains("stormark cert ca"),
            "{e}"
        );
    }

    #[test]
    fn host_names() {
        for ok in ["node1", "node-1.example.com", "a", "A9"] {
            assert!(is_host_name(ok), "{ok}");
        }
        for bad in ["", "a_b", "a-", ".a", "a.", "a b", &"x".repeat(64)] {
            assert!(!is_host_name(bad), "{bad}");
        }
    }
}
