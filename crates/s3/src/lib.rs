//! stormark's S3 client, made for load: each worker owns one keep-alive HTTP/1.1 connection
//! (hyper, on a current-thread runtime the worker drives itself), every request is signed with
//! SigV4 (aws-sigv4, `UNSIGNED-PAYLOAD`), nothing is ever retried (a retry hides the failure a
//! benchmark is there to measure), and every failure has a kind: the HTTP status (503 SlowDown
//! is `throttled`), a timeout, a reset connection, a refused one.
//!
//! Only the S3 API as AWS documents it: path-style (`http://host:port/bucket/key`) or
//! virtual-hosted (`http://bucket.host:port/key`) addressing, `ListObjectsV2`, no vendor
//! extensions.
#![warn(missing_docs)]

mod client;
mod conn;
mod credentials;
#[cfg(feature = "embedded")]
mod embedded;
mod list;
mod tls;

use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

pub use client::{Client, Fetched};
pub use credentials::{find_credentials, profile_credentials};
#[cfg(feature = "embedded")]
pub use embedded::{EmbeddedError, EmbeddedServer};
pub use list::{parse_list, Listing};
pub use tls::tls_config;

/// Where the S3 service is: `http://host:port` or `https://host:port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `host:port` as given (the Host header).
    pub authority: String,
    /// The address connected to.
    pub addr: SocketAddr,
    /// Whether the service speaks https.
    pub https: bool,
}

impl Endpoint {
    /// Parses `http://host[:port]` (port 80 by default) or `https://host[:port]` (443) and
    /// resolves it. Every mistake is one line naming the accepted form.
    pub fn parse(url: &str) -> Result<Endpoint, S3Error> {
        // A URL pasted with credentials (`user:secret@`) or a signed query is not repeated.
        let shown = if url.contains(['@', '?', '#']) || url.chars().any(char::is_control) {
            "(the URL given: it holds credentials, a query or a control character, not shown)"
        } else {
            url
        };
        let bad = |why: &str| S3Error::Config(format!("--endpoint {shown}: {why}"));
        let (rest, https) =
            match (url.strip_prefix("http://"), url.strip_prefix("https://")) {
                (Some(rest), _) => (rest, false),
                (_, Some(rest)) => (rest, true),
                _ => return Err(bad(
                    "expected http://host:port or https://host:port, such as http://127.0.0.1:9000",
                )),
            };
        let authority = rest.trim_end_matches('/');
        if authority.is_empty() || authority.contains('/') || authority.contains('@') {
            return Err(bad(
                "expected http://host:port with no path, such as http://127.0.0.1:9000",
            ));
        }
        let with_port = if authority
            .rsplit_once(':')
            .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
        {
            authority.to_string()
        } else {
            format!("{authority}:{}", if https { 443 } else { 80 })
        };
        let addr = with_port
            .to_socket_addrs()
            .map_err(|e| bad(&format!("cannot resolve it ({e})")))?
            .next()
            .ok_or_else(|| bad("the name resolves to no address"))?;
        Ok(Endpoint {
            authority: authority.to_string(),
            addr,
            https,
        })
    }
}

/// An access key and its secret. `Debug` never shows the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The access key id.
    pub access_key: String,
    /// The secret access key.
    pub secret_key: String,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key", &self.access_key)
            .field("secret_key", &"<hidden>")
            .finish()
    }
}

/// How to reach and sign for the service.
#[derive(Debug, Clone)]
pub struct Config {
    /// The service.
    pub endpoint: Endpoint,
    /// The signing region (`us-east-1` unless the service says otherwise).
    pub region: String,
    /// Requests name the bucket in the host (`bucket.host`), not in the path.
    pub virtual_hosted: bool,
    /// The keys.
    pub credentials: Credentials,
    /// The longest a request may take, from sending to the last byte of the answer.
    pub timeout: Duration,
    /// For an https endpoint: how to check the service's certificate ([`tls_config`]).
    pub tls: Option<std::sync::Arc<rustls::ClientConfig>>,
}

/// Why a request failed, by kind: what a run counts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum S3Error {
    /// The service answered with an error status (and S3's error code, when it gave one).
    #[error("HTTP {status}{}", code.as_deref().map(|c| format!(" {c}")).unwrap_or_default())]
    Status {
        /// The HTTP status.
        status: u16,
        /// S3's `<Code>` (`NoSuchBucket`, `SlowDown`, `SignatureDoesNotMatch`, ...).
        code: Option<String>,
    },
    /// No complete answer within the timeout.
    #[error("timed out")]
    Timeout,
    /// The connection was reset or closed mid-request.
    #[error("connection reset")]
    Reset,
    /// Nothing listens at the endpoint.
    #[error("connection refused")]
    Refused,
    /// The TLS handshake failed (an untrusted or mismatched certificate, no common version).
    #[error("TLS: {0}")]
    Tls(String),
    /// Another network failure.
    #[error("{0}")]
    Network(String),
    /// The set-up is wrong (an endpoint or a key that cannot be used).
    #[error("{0}")]
    Config(String),
    /// Abandoned before its answer: the run was stopped (Ctrl-C).
    #[error("stopped before the answer came")]
    Stopped,
}

impl S3Error {
    /// The kind as results count it: `http-404`, `throttled` (503 SlowDown, or 429),
    /// `timeout`, `reset`, `refused`, `network`, `config`.
    pub fn kind(&self) -> String {
        match self {
            S3Error::Status { status: 503, .. } | S3Error::Status { status: 429, .. } => {
                "throttled".into()
            }
            S3Error::Status { status, .. } => format!("http-{status}"),
            S3Error::Timeout => "timeout".into(),
            S3Error::Reset => "reset".into(),
            S3Error::Refused => "refused".into(),
            S3Error::Tls(_) => "tls".into(),
            S3Error::Network(_) => "network".into(),
            S3Error::Config(_) => "config".into(),
            S3Error::Stopped => "stopped".into(),
        }
    }
}

/// Encodes a key or query value for a URI: unreserved characters stay, `/` stays in keys.
pub fn encode(text: &str, keep_slash: bool) -> String {
    use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
    const VALUE: &AsciiSet = &NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~');
    const KEY: &AsciiSet = &VALUE.remove(b'/');
    utf8_percent_encode(text, if keep_slash { KEY } else { VALUE }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        let e = Endpoint::parse("http://127.0.0.1:9000/").unwrap();
        assert_eq!(e.authority, "127.0.0.1:9000");
        assert_eq!(e.addr.port(), 9000);
        assert_eq!(Endpoint::parse("http://127.0.0.1").unwrap().addr.port(), 80);
        assert!(Endpoint::parse("https://127.0.0.1").unwrap().https);
        assert_eq!(
            Endpoint::parse("https://127.0.0.1").unwrap().addr.port(),
            443
        );
        for bad in ["127.0.0.1:9000", "http://", "http://h:1/x", "ftp://h"] {
            let e = Endpoint::parse(bad).unwrap_err().to_string();
            assert!(e.starts_with("--endpoint ") && !e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn kinds_and_secrets() {
        let slow = S3Error::Status {
            status: 503,
            code: Some("SlowDown".into()),
        };
        assert_eq!(slow.kind(), "throttled");
        assert_eq!(slow.to_string(), "HTTP 503 SlowDown");
        assert_eq!(
            S3Error::Status {
                status: 404,
                code: None
            }
            .kind(),
            "http-404"
        );
        let c = Credentials {
            access_key: "AK".into(),
            secret_key: "very-secret".into(),
        };
        assert!(!format!("{c:?}").contains("very-secret"));
        assert_eq!(encode("a b/c+d", true), "a%20b/c%2Bd");
        assert_eq!(encode("a/b", false), "a%2Fb");
    }
}
