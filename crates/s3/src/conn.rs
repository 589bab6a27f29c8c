//! A worker's connection: made to the endpoint (TCP, then TLS for https), the failures of a
//! request classified by kind, and the wait on the stop flag that abandons one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;

use crate::{Config, S3Error};

/// A connection to the endpoint's address; over https the certificate must be that of
/// `authority` (the bucket's host name when virtual-hosted).
pub(crate) async fn connect(
    cfg: &Config,
    rt: &tokio::runtime::Runtime,
    authority: &str,
    timeout: Duration,
) -> Result<SendRequest<Full<Bytes>>, S3Error> {
    let stream = tokio::time::timeout(timeout, tokio::net::TcpStream::connect(cfg.endpoint.addr))
        .await
        .map_err(|_| S3Error::Timeout)?
        .map_err(|e| classify_io(&e))?;
    let _ = stream.set_nodelay(true);
    let Some(tls) = &cfg.tls else {
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(classify_hyper)?;
        rt.spawn(async move {
            let _ = conn.await;
        });
        return Ok(sender);
    };
    let name = crate::tls::server_name(authority)?;
    let stream = tokio::time::timeout(
        timeout,
        tokio_rustls::TlsConnector::from(tls.clone()).connect(name, stream),
    )
    .await
    .map_err(|_| S3Error::Timeout)?
    .map_err(
        |e| match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
            Some(tls) => S3Error::Tls(tls.to_string()),
            None => classify_io(&e),
        },
    )?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(classify_hyper)?;
    rt.spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

/// Resolves once `stop` is set (checked every 20 ms); never without one.
pub(crate) async fn stopped(stop: Option<Arc<AtomicBool>>) {
    let Some(stop) = stop else {
        return std::future::pending().await;
    };
    while !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn classify_io(e: &std::io::Error) -> S3Error {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::ConnectionRefused => S3Error::Refused,
        K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof => {
            S3Error::Reset
        }
        K::TimedOut => S3Error::Timeout,
        _ => S3Error::Network(e.to_string()),
    }
}

pub(crate) fn classify_hyper(e: hyper::Error) -> S3Error {
    if e.is_closed() || e.is_incomplete_message() || e.is_canceled() {
        return S3Error::Reset;
    }
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return classify_io(io);
        }
        source = s.source();
    }
    S3Error::Network(e.to_string())
}
