//! A test CA and certificates, made with the openssl command.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::text;

/// A test CA and a certificate it signed for `ip` (with its key), made with the `openssl`
/// command in `dir`: (CA, certificate, key).
pub fn certificates(dir: &Path, ip: &str) -> (PathBuf, PathBuf, PathBuf) {
    let ca = dir.join("ca.pem");
    let ca_key = dir.join("ca.key");
    let cert = dir.join("agent.pem");
    let key = dir.join("agent.key");
    let csr = dir.join("agent.csr");
    let ext = dir.join("ext.cnf");
    std::fs::write(
        &ext,
        format!("subjectAltName=IP:{ip}\nbasicConstraints=CA:FALSE\n"),
    )
    .unwrap();
    let p = |x: &PathBuf| x.to_str().unwrap().to_string();
    for args in [
        vec![
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            &p(&ca_key),
            "-out",
            &p(&ca),
            "-days",
            "2",
            "-subj",
            "/CN=stormark test CA",
        ],
        vec![
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            &p(&key),
            "-out",
            &p(&csr),
            "-subj",
            "/CN=agent",
        ],
        vec![
            "x509",
            "-req",
            "-in",
            &p(&csr),
            "-CA",
            &p(&ca),
            "-CAkey",
            &p(&ca_key),
            "-CAcreateserial",
            "-out",
            &p(&cert),
            "-days",
            "2",
            "-extfile",
            &p(&ext),
        ],
    ] {
        let out = Command::new("openssl").args(&args).output().unwrap();
        assert!(out.status.success(), "openssl {args:?}: {}", text(&out));
    }
    (ca, cert, key)
}
