//! One worker's connection to the service, and the requests it makes.

use std::future::Future;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use aws_sigv4::http_request::{
    sign, PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
    UriPathNormalizationMode,
};
use bytes::Bytes;
use http::{header, Method, Request};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;

use crate::conn::{classify_hyper, connect, stopped};
use crate::list::{element, parse_list, Listing};
use crate::{encode, Config, S3Error};

/// What a request brought back.
#[derive(Debug)]
pub struct Fetched {
    /// The HTTP status (always a success: errors are [`S3Error`]).
    pub status: u16,
    /// When the answer's head arrived (the time to first byte).
    pub first_byte: Instant,
    /// Body bytes received.
    pub bytes: u64,
    /// The body, when it was asked for (listings, multipart steps); else dropped as it
    /// arrives.
    pub body: Option<Vec<u8>>,
    /// The `ETag` header, read only when the body was asked for.
    pub etag: Option<String>,
}

/// A worker's client: its own runtime (driven only while a request is made), its own
/// keep-alive connection, re-made only after a failure or when the service closed it.
pub struct Client {
    cfg: Arc<Config>,
    rt: tokio::runtime::Runtime,
    sender: Option<SendRequest<Full<Bytes>>>,
    identity: aws_smithy_runtime_api::client::identity::Identity,
    connections: u64,
    /// How long the last connection took to make, until taken.
    connect_time: Option<std::time::Duration>,
    /// No request runs past this instant (the stage's end and its grace): one outstanding
    /// then is a timeout of its age, and the phase is not stretched to the request timeout.
    deadline: Option<Instant>,
    /// Set (Ctrl-C): a request waiting for its answer is abandoned at once.
    stop: Option<Arc<AtomicBool>>,
}

impl Client {
    /// A client for `cfg`; connects on the first request.
    pub fn new(cfg: Arc<Config>) -> Result<Client, S3Error> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| S3Error::Network(format!("cannot start a runtime: {e}")))?;
        let identity = aws_credential_types::Credentials::new(
            &cfg.credentials.access_key,
            &cfg.credentials.secret_key,
            None,
            None,
            "stormark",
        )
        .into();
        Ok(Client {
            cfg,
            rt,
            sender: None,
            identity,
            connections: 0,
            connect_time: None,
            deadline: None,
            stop: None,
        })
    }

    /// No request runs past `at` (`None`: only the configured timeout bounds them).
    pub fn set_deadline(&mut self, at: Option<Instant>) {
        self.deadline = at;
    }

    /// A request waiting when `stop` is set is abandoned at once ([`S3Error::Stopped`]).
    pub fn stop_on(&mut self, stop: Arc<AtomicBool>) {
        self.stop = Some(stop);
    }

    /// How long the next request may take: the configured timeout, or less to the deadline.
    fn timeout(&self) -> Duration {
        match self.deadline {
            None => self.cfg.timeout,
            Some(d) => self
                .cfg
                .timeout
                .min(d.saturating_duration_since(Instant::now()))
                .max(Duration::from_millis(1)),
        }
    }

    /// Runs `fut` on this client's runtime, ended early by the stop flag.
    fn block<T>(&self, fut: impl Future<Output = Result<T, S3Error>>) -> Result<T, S3Error> {
        let stop = self.stop.clone();
        self.rt.block_on(async move {
            tokio::select! {
                r = fut => r,
                () = stopped(stop) => Err(S3Error::Stopped),
            }
        })
    }

    /// Connections made so far (1 for a run whose connection was kept alive throughout).
    pub fn connections(&self) -> u64 {
        self.connections
    }

    /// How long the connection made by the last request took (TCP connect, and the TLS
    /// handshake for https), once; `None` when the last request reused one.
    pub fn take_connect_time(&mut self) -> Option<std::time::Duration> {
        self.connect_time.take()
    }

    /// Sends one signed request and reads the whole answer. `path` and `query` are encoded
    /// already. Never retried; a failed request drops the connection.
    pub fn send(
        &mut self,
        method: Method,
        path: &str,
        query: &str,
        body: Bytes,
        keep_body: bool,
    ) -> Result<Fetched, S3Error> {
        self.send_range(method, path, query, body, keep_body, None)
    }

    /// [`Client::send`] with a `Range: bytes=FIRST-LAST` header when `range` is given.
    pub fn send_range(
        &mut self,
        method: Method,
        path: &str,
        query: &str,
        body: Bytes,
        keep_body: bool,
        range: Option<(u64, u64)>,
    ) -> Result<Fetched, S3Error> {
        // Virtual-hosted: the bucket, the first segment of `path`, moves into the host name.
        let (host, path) = match path.strip_prefix('/').filter(|_| self.cfg.virtual_hosted) {
            Some(rest) => {
                let bucket = rest.split('/').next().unwrap_or(rest);
                (
                    std::borrow::Cow::Owned(format!("{bucket}.{}", self.cfg.endpoint.authority)),
                    &path[bucket.len() + 1..],
                )
            }
            None => (
                std::borrow::Cow::Borrowed(self.cfg.endpoint.authority.as_str()),
                path,
            ),
        };
        let path = if path.is_empty() { "/" } else { path };
        let target = if query.is_empty() {
            path.to_string()
        } else {
            format!("{path}?{query}")
        };
        let mut builder = Request::builder()
            .method(method.clone())
            .uri(&target)
            .header(header::HOST, host.as_ref())
            .header(header::CONTENT_LENGTH, body.len());
        if let Some((first, last)) = range {
            builder = builder.header(header::RANGE, format!("bytes={first}-{last}"));
        }
        let mut req = builder
            .body(Full::new(body))
            .map_err(|e| S3Error::Config(format!("{target}: {e}")))?;
        self.sign(&mut req, &host, &target)?;
        let timeout = self.timeout();
        let head_only = method == Method::HEAD;
        // A kept connection the service has closed since (an answer with `Connection:
        // close`, an idle timeout) is replaced before the request is sent: nothing is sent
        // twice.
        let kept = self
            .sender
            .take()
            .filter(|s| !s.is_closed())
            .and_then(|mut s| self.rt.block_on(s.ready()).ok().map(|()| s));
        let mut sender = match kept {
            Some(s) => s,
            None => {
                self.connections += 1;
                let started = Instant::now();
                let s = self.block(connect(&self.cfg, &self.rt, &host, timeout))?;
                self.connect_time = Some(started.elapsed());
                s
            }
        };
        let result = self.block(async {
            tokio::time::timeout(timeout, async {
                sender.ready().await.map_err(classify_hyper)?;
                let resp = sender.send_request(req).await.map_err(classify_hyper)?;
                let first_byte = Instant::now();
                let status = resp.status().as_u16();
                let etag = keep_body
                    .then(|| resp.headers().get(header::ETAG))
                    .flatten()
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string);
                let mut body = resp.into_body();
                let mut bytes = 0u64;
                let mut kept = (keep_body || status >= 300).then(Vec::new);
                while let Some(frame) = body.frame().await {
                    let frame = frame.map_err(classify_hyper)?;
                    if let Some(data) = frame.data_ref() {
                        bytes += data.len() as u64;
                        if let Some(k) = &mut kept {
                            // Listings and errors are small; a verified object is kept
                            // up to 64 MiB.
                            if k.len() < KEPT_LIMIT {
                                k.extend_from_slice(data);
                            }
                        }
                    }
                }
                Ok::<_, S3Error>(Fetched {
                    status,
                    first_byte,
                    bytes,
                    body: kept,
                    etag,
                })
            })
            .await
            .unwrap_or(Err(S3Error::Timeout))
        });
        let fetched = result?;
        // The connection is kept only after a complete answer.
        self.sender = Some(sender);
        if fetched.status >= 300 {
            let code = fetched
                .body
                .as_deref()
                .and_then(|b| std::str::from_utf8(b).ok())
                .and_then(crate::list::error_code)
                .or_else(|| (head_only && fetched.status == 404).then(|| "NotFound".into()));
            return Err(S3Error::Status {
                status: fetched.status,
                code,
            });
        }
        Ok(fetched)
    }

    fn sign(
        &self,
        req: &mut Request<Full<Bytes>>,
        host: &str,
        target: &str,
    ) -> Result<(), S3Error> {
        let mut settings = SigningSettings::default();
        settings.percent_encoding_mode = PercentEncodingMode::Single;
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&self.identity)
            .region(&self.cfg.region)
            .name("s3")
            .time(SystemTime::now())
            .settings(settings)
            .build()
            .map_err(|e| S3Error::Config(format!("cannot sign: {e}")))?
            .into();
        let scheme = if self.cfg.endpoint.https {
            "https"
        } else {
            "http"
        };
        let url = format!("{scheme}://{host}{target}");
        let headers = req
            .headers()
            .iter()
            .filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?)));
        let signable = SignableRequest::new(
            req.method().as_str(),
            url,
            headers,
            SignableBody::UnsignedPayload,
        )
        .map_err(|e| S3Error::Config(format!("cannot sign: {e}")))?;
        let (instructions, _) = sign(signable, &params)
            .map_err(|e| S3Error::Config(format!("cannot sign: {e}")))?
            .into_parts();
        instructions.apply_to_request_http1x(req);
        Ok(())
    }

    /// PUT an object.
    pub fn put(&mut self, bucket: &str, key: &str, body: Bytes) -> Result<Fetched, S3Error> {
        self.send(Method::PUT, &object_path(bucket, key), "", body, false)
    }

    /// PUT an object in parts of `part` bytes (CreateMultipartUpload, UploadPart each,
    /// CompleteMultipartUpload; AbortMultipartUpload when a step fails). The parts are slices
    /// of `body`. Returns when the object exists, with the first step's answer time.
    pub fn put_multipart(
        &mut self,
        bucket: &str,
        key: &str,
        body: Bytes,
        part: u64,
    ) -> Result<Fetched, S3Error> {
        let path = object_path(bucket, key);
        let created = self.send(Method::POST, &path, "uploads=", Bytes::new(), true)?;
        let upload = created
            .body
            .as_deref()
            .and_then(|b| std::str::from_utf8(b).ok())
            .and_then(|t| element(t, "UploadId"))
            .ok_or_else(|| S3Error::Network("CreateMultipartUpload answered no UploadId".into()))?;
        let id = encode(&upload, false);
        let mut done = String::from("<CompleteMultipartUpload>");
        let parts = body.len().div_ceil(part.max(1) as usize).max(1);
        for n in 0..parts {
            let from = n * part as usize;
            let to = (from + part as usize).min(body.len());
            let query = format!("partNumber={}&uploadId={id}", n + 1);
            match self.send(Method::PUT, &path, &query, body.slice(from..to), true) {
                Ok(f) => {
                    let etag = f.etag.unwrap_or_default();
                    done.push_str(&format!(
                        "<Part><PartNumber>{}</PartNumber><ETag>{etag}</ETag></Part>",
                        n + 1
                    ));
                }
                Err(e) => {
                    let _ = self.send(
                        Method::DELETE,
                        &path,
                        &format!("uploadId={id}"),
                        Bytes::new(),
                        false,
                    );
                    return Err(e);
                }
            }
        }
        done.push_str("</CompleteMultipartUpload>");
        let query = format!("uploadId={id}");
        match self.send(Method::POST, &path, &query, Bytes::from(done), true) {
            // S3 may answer 200 with an <Error> document when completing fails late.
            Ok(f)
                if f.body
                    .as_deref()
                    .and_then(|b| std::str::from_utf8(b).ok())
                    .is_some_and(|t| t.contains("<Error>")) =>
            {
                let _ = self.send(Method::DELETE, &path, &query, Bytes::new(), false);
                Err(S3Error::Status {
                    status: 500,
                    code: f
                        .body
                        .as_deref()
                        .and_then(|b| std::str::from_utf8(b).ok())
                        .and_then(crate::list::error_code),
                })
            }
            Ok(f) => Ok(f),
            Err(e) => {
                let _ = self.send(Method::DELETE, &path, &query, Bytes::new(), false);
                Err(e)
            }
        }
    }

    /// GET a whole object; its body is counted and dropped.
    pub fn get(&mut self, bucket: &str, key: &str) -> Result<Fetched, S3Error> {
        self.send(
            Method::GET,
            &object_path(bucket, key),
            "",
            Bytes::new(),
            false,
        )
    }

    /// GET `len` bytes of an object from `offset` (a ranged GET; the service answers 206).
    pub fn get_range(
        &mut self,
        bucket: &str,
        key: &str,
        offset: u64,
        len: u64,
    ) -> Result<Fetched, S3Error> {
        let last = offset + len.max(1) - 1;
        self.send_range(
            Method::GET,
            &object_path(bucket, key),
            "",
            Bytes::new(),
            false,
            Some((offset, last)),
        )
    }

    /// GET an object (or `range` of it) and keep its body (up to 64 MiB), to check it.
    pub fn get_kept(
        &mut self,
        bucket: &str,
        key: &str,
        range: Option<(u64, u64)>,
    ) -> Result<Fetched, S3Error> {
        let range = range.map(|(offset, len)| (offset, offset + len.max(1) - 1));
        self.send_range(
            Method::GET,
            &object_path(bucket, key),
            "",
            Bytes::new(),
            true,
            range,
        )
    }

    /// HEAD an object.
    pub fn head(&mut self, bucket: &str, key: &str) -> Result<Fetched, S3Error> {
        self.send(
            Method::HEAD,
            &object_path(bucket, key),
            "",
            Bytes::new(),
            false,
        )
    }

    /// DELETE an object.
    pub fn delete(&mut self, bucket: &str, key: &str) -> Result<Fetched, S3Error> {
        self.send(
            Method::DELETE,
            &object_path(bucket, key),
            "",
            Bytes::new(),
            false,
        )
    }

    /// One page (at most `max` keys) of the keys under `prefix` (ListObjectsV2).
    pub fn list(
        &mut self,
        bucket: &str,
        prefix: &str,
        token: Option<&str>,
        max: u32,
    ) -> Result<(Fetched, Listing), S3Error> {
        // Query parameters in the order SigV4's canonical form sorts them.
        let mut query = String::new();
        if let Some(t) = token {
            query.push_str(&format!("continuation-token={}&", encode(t, false)));
        }
        query.push_str(&format!(
            "list-type=2&max-keys={max}&prefix={}",
            encode(prefix, false)
        ));
        let fetched = self.send(
            Method::GET,
            &format!("/{}", encode(bucket, false)),
            &query,
            Bytes::new(),
            true,
        )?;
        let listing = fetched
            .body
            .as_deref()
            .and_then(|b| std::str::from_utf8(b).ok())
            .map(parse_list)
            .unwrap_or_default();
        Ok((fetched, listing))
    }

    /// Whether the bucket exists and these keys may use it (HEAD bucket): `Ok(false)` for
    /// 404, an error for anything else that is not a success.
    pub fn bucket_exists(&mut self, bucket: &str) -> Result<bool, S3Error> {
        let path = format!("/{}", encode(bucket, false));
        match self.send(Method::HEAD, &path, "", Bytes::new(), false) {
            Ok(_) => Ok(true),
            Err(S3Error::Status { status: 404, .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Makes the bucket.
    pub fn create_bucket(&mut self, bucket: &str) -> Result<(), S3Error> {
        let path = format!("/{}", encode(bucket, false));
        self.send(Method::PUT, &path, "", Bytes::new(), false)
            .map(|_| ())
    }

    /// The service's clock, from the `Date` header of an unsigned request's answer (a signed
    /// request fails outright when the clocks differ by more than 15 minutes).
    pub fn server_date(&mut self) -> Result<Option<SystemTime>, S3Error> {
        let timeout = self.timeout();
        let authority = self.cfg.endpoint.authority.clone();
        self.connections += 1;
        let mut sender = self.block(connect(&self.cfg, &self.rt, &authority, timeout))?;
        self.block(async {
            tokio::time::timeout(timeout, async {
                let req = Request::builder()
                    .method(Method::HEAD)
                    .uri("/")
                    .header(header::HOST, authority)
                    .body(Full::new(Bytes::new()))
                    .map_err(|e| S3Error::Config(e.to_string()))?;
                sender.ready().await.map_err(classify_hyper)?;
                let resp = sender.send_request(req).await.map_err(classify_hyper)?;
                let date = resp
                    .headers()
                    .get(header::DATE)
                    .and_then(|d| d.to_str().ok())
                    .and_then(httpdate_parse);
                Ok(date)
            })
            .await
            .unwrap_or(Err(S3Error::Timeout))
        })
    }
}

/// The most of an answer's body kept for the caller.
const KEPT_LIMIT: usize = 64 << 20;

/// `/bucket/key`, encoded.
fn object_path(bucket: &str, key: &str) -> String {
    format!("/{}/{}", encode(bucket, false), encode(key, true))
}

/// An HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`, the only form services send now).
fn httpdate_parse(text: &str) -> Option<SystemTime> {
    let parts: Vec<&str> = text.split_whitespace().collect();
    let [_, day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| m == month)? as i64
        + 1;
    let (day, year): (i64, i64) = (day.parse().ok()?, year.parse().ok()?);
    let hms: Vec<i64> = time.split(':').filter_map(|x| x.parse().ok()).collect();
    let [h, m, s] = hms.as_slice() else {
        return None;
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + m * 60 + s;
    u64::try_from(secs)
        .ok()
        .map(|s| SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_dates() {
        let t = httpdate_parse("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(
            t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs(),
            784_111_777
        );
        assert!(httpdate_parse("yesterday").is_none());
    }
}
