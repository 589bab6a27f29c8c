//! Reaching an agent: what answers at its address (before any token travels), the gRPC
//! channel in clear or TLS, and its clock's offset.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tokio::runtime::Runtime;
use tonic::transport::{Channel, Endpoint};
use tonic::Status;

use super::{Client, SILENCE};
use crate::agent::AgentError;
use crate::wire::pb;
use crate::wire::unix_ns;

/// What answered the HTTP/2 preface at an agent's address.
#[derive(Debug, PartialEq)]
enum Answer {
    /// A SETTINGS frame: an agent in clear.
    PlainHttp2,
    /// A TLS record (an alert to what is not a ClientHello): a TLS server.
    Tls,
    /// An HTTP/2 GOAWAY before anything else: an agent with no room for another connection
    /// (every one it holds carries the token).
    Full,
    /// Closed or reset without a word.
    Closed,
    /// Something else, its first bytes as printable text: not a stormark agent.
    Other(String),
}

/// The gRPC channel to the agent at `address`, in clear or (with `tls_ca`, PEM) TLS whose
/// certificate must chain to that CA and name the host. What answers is checked first, before
/// the token travels, so that a wrong port or a TLS mismatch is said as such.
pub(super) fn channel(
    rt: &Runtime,
    address: &str,
    tls_ca: Option<&[u8]>,
) -> Result<Channel, AgentError> {
    let refused = |message: String| AgentError::RemoteRefused {
        agent: address.to_string(),
        message,
    };
    if tls_ca.is_none() {
        // In clear, the agent speaks first (its SETTINGS frame): the connection that heard
        // it becomes the channel's, so each agent costs one connection, not a probe and then
        // a second one.
        if let Some(channel) = first_word(rt, address)? {
            return Ok(channel);
        }
    }
    match (answer(address), tls_ca.is_some()) {
        (Ok(Answer::Full), _) => return Err(refused(FULL.into())),
        (Ok(Answer::Tls), false) => {
            return Err(refused(
                "it serves TLS; give --tls-ca with the CA of its certificate. Nothing was sent"
                    .into(),
            ))
        }
        (Ok(Answer::Closed), false) => {
            return Err(refused(
                "it closed the connection without a word: not a stormark agent, or one that serves TLS (then give --tls-ca). Nothing was sent".into(),
            ))
        }
        (Ok(Answer::Other(said)), _) => {
            return Err(refused(format!(
                "not a stormark agent: it answered {said:?}. Nothing was sent"
            )))
        }
        (Ok(Answer::PlainHttp2), true) => {
            return Err(refused(
                "it does not serve TLS, but --tls-ca was given; start the agent with --tls-cert and --tls-key, or drop --tls-ca".into(),
            ))
        }
        (Err(why), _) => return Err(refused(format!("cannot connect: {why}"))),
        _ => {}
    }
    let scheme = if tls_ca.is_some() { "https" } else { "http" };
    let mut endpoint = Endpoint::from_shared(format!("{scheme}://{address}"))
        .map_err(|e| refused(format!("not an address (expected host:port): {e}")))?;
    if let Some(ca) = tls_ca {
        let host = address.rsplit_once(':').map_or(address, |(h, _)| h);
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let tls = tonic::transport::ClientTlsConfig::new()
            .ca_certificate(tonic::transport::Certificate::from_pem(ca))
            .domain_name(host);
        endpoint = endpoint
            .tls_config(tls)
            .map_err(|e| refused(format!("TLS: {e}")))?;
    }
    let endpoint = endpoint
        .connect_timeout(SILENCE)
        .timeout(Duration::from_secs(30))
        .tcp_nodelay(true);
    rt.block_on(endpoint.connect()).map_err(|e| {
        let mut why = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            why = format!("{why}: {s}");
            source = s.source();
        }
        let why = one_cause(&why);
        let why = if why.contains("timed out") || why.contains("elapsed") {
            format!("no answer within {} s", SILENCE.as_secs())
        } else {
            why
        };
        refused(format!("cannot connect: {why}"))
    })
}

/// What a coordinator is told when the agent turned its connection away.
const FULL: &str = "the agent's connections are full: every connection it holds carries the token (another coordinator's, or stuck); try again when they close. Nothing was sent";

/// How long the agent has to say its first word (an HTTP/2 server's SETTINGS, sent as soon as
/// it accepts) before [`answer`] asks it with a preface of ours.
const FIRST_WORD: Duration = Duration::from_secs(1);

/// The channel over a connection to `address` on which a plain HTTP/2 server spoke first;
/// `None` when nothing was said in [`FIRST_WORD`] (a TLS server waits for its client) or
/// something else was, for [`answer`] to find out what listens. An error: nothing to connect
/// to. Nothing is sent before the server's first word.
fn first_word(rt: &Runtime, address: &str) -> Result<Option<Channel>, AgentError> {
    let refused = |message: String| AgentError::RemoteRefused {
        agent: address.to_string(),
        message,
    };
    let heard = rt
        .block_on(hear(address, FIRST_WORD))
        .map_err(|e| refused(format!("cannot connect: {e}")))?;
    let Some((io, head)) = heard else {
        return Ok(None);
    };
    match classify(&head) {
        Answer::PlainHttp2 => {}
        Answer::Full => return Err(refused(FULL.into())),
        // A server that closed without a word, or said something else: asked again by
        // [`answer`], which names it.
        _ => return Ok(None),
    }
    let endpoint = Endpoint::from_shared(format!("http://{address}"))
        .map_err(|e| refused(format!("not an address (expected host:port): {e}")))?
        .timeout(Duration::from_secs(30));
    // The first connection is the one that was heard; a reconnection (the channel's own,
    // after a broken connection) is heard again before it is used.
    let first = std::sync::Mutex::new(Some(Heard { io, head, at: 0 }));
    let target = address.to_string();
    let connector = tower_service_fn(move |_| {
        let ready = first.lock().unwrap_or_else(|e| e.into_inner()).take();
        let target = target.clone();
        async move {
            let heard = match ready {
                Some(h) => h,
                None => rehear(&target).await?,
            };
            Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(heard))
        }
    });
    rt.block_on(endpoint.connect_with_connector(connector))
        .map(Some)
        .map_err(|e| refused(format!("cannot connect: {}", one_cause(&e.to_string()))))
}

/// A new connection to `target` on which a plain HTTP/2 server spoke first.
async fn rehear(target: &str) -> std::io::Result<Heard> {
    match hear(target, SILENCE).await.map_err(std::io::Error::other)? {
        Some((io, head)) if classify(&head) == Answer::PlainHttp2 => Ok(Heard { io, head, at: 0 }),
        _ => Err(std::io::Error::other("not a stormark agent in clear")),
    }
}

/// A connection to `target` and the first bytes (up to a frame header's nine) its server sent
/// within `wait`, fewer when it closed or stopped; `None` when it said nothing in that time.
/// The error says why there is no connection, in one line.
async fn hear(
    target: &str,
    wait: Duration,
) -> Result<Option<(tokio::net::TcpStream, Vec<u8>)>, String> {
    use tokio::io::AsyncReadExt;
    let mut io = tokio::time::timeout(SILENCE, tokio::net::TcpStream::connect(target))
        .await
        .map_err(|_| format!("no answer within {} s", SILENCE.as_secs()))?
        .map_err(|e| one_cause(&e.to_string()))?;
    let _ = io.set_nodelay(true);
    let mut head = vec![0u8; 9];
    let mut got = 0;
    let deadline = tokio::time::Instant::now() + wait;
    while got < head.len() {
        match tokio::time::timeout_at(deadline, io.read(&mut head[got..])).await {
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => got += n,
            Err(_) if got == 0 => return Ok(None),
            Err(_) => break,
        }
    }
    head.truncate(got);
    Ok(Some((io, head)))
}

/// A connection whose first bytes were read to hear what answers; the HTTP/2 client reads
/// them again before the rest.
struct Heard {
    io: tokio::net::TcpStream,
    head: Vec<u8>,
    at: usize,
}

impl tokio::io::AsyncRead for Heard {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        if self.at < self.head.len() {
            let n = (self.head.len() - self.at).min(buf.remaining());
            let at = self.at;
            buf.put_slice(&self.head[at..at + n]);
            self.at += n;
            return std::task::Poll::Ready(Ok(()));
        }
        std::pin::Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for Heard {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// A connector (a `Service<Uri>`) made of a closure.
fn tower_service_fn<F, Fut>(f: F) -> ServiceFn<F>
where
    F: FnMut(tonic::codegen::http::Uri) -> Fut,
{
    ServiceFn(f)
}

struct ServiceFn<F>(F);

impl<F, Fut, T, E> tonic::codegen::Service<tonic::codegen::http::Uri> for ServiceFn<F>
where
    F: FnMut(tonic::codegen::http::Uri) -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    type Response = T;
    type Error = E;
    type Future = Fut;

    fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), E>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: tonic::codegen::http::Uri) -> Fut {
        (self.0)(uri)
    }
}

/// What the process at `address` answers to the HTTP/2 client preface. No token is sent.
fn answer(address: &str) -> std::io::Result<Answer> {
    use std::io::{Read, Write};
    use std::net::ToSocketAddrs;
    let addr = address
        .to_socket_addrs()
        .map_err(|e| std::io::Error::other(one_cause(&e.to_string())))?
        .next()
        .ok_or_else(|| std::io::Error::other("the name resolves to no address"))?;
    let mut s = std::net::TcpStream::connect_timeout(&addr, SILENCE).map_err(|e| {
        if e.kind() == std::io::ErrorKind::TimedOut {
            std::io::Error::other(format!("no answer within {} s", SILENCE.as_secs()))
        } else {
            e
        }
    })?;
    let _ = s.set_read_timeout(Some(SILENCE));
    let _ = s.set_write_timeout(Some(SILENCE));
    // The client connection preface (RFC 9113 §3.4) and an empty SETTINGS frame.
    let preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";
    s.write_all(preface)?;
    let mut head = [0u8; 9];
    let mut got = 0;
    while got < head.len() {
        match s.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                if got > 0 {
                    break;
                }
                return Err(std::io::Error::other(format!(
                    "no answer within {} s",
                    SILENCE.as_secs()
                )));
            }
            Err(_) => break,
        }
    }
    Ok(classify(&head[..got]))
}

/// What the first bytes of an answer say.
fn classify(head: &[u8]) -> Answer {
    match head {
        [] => Answer::Closed,
        // A frame header whose type is SETTINGS (4) on stream 0.
        [_, _, _, 4, _, 0, 0, 0, 0] => Answer::PlainHttp2,
        // A GOAWAY frame (7) on stream 0 in its place: no room (`listen::FULL_GOAWAY`).
        [_, _, _, 7, _, 0, 0, 0, 0] => Answer::Full,
        // A TLS record: alert (21) or handshake (22), version 3.x.
        [21 | 22, 3, ..] => Answer::Tls,
        other => Answer::Other(stormark_spec::printable(
            &String::from_utf8_lossy(other),
            40,
        )),
    }
}

/// The clock offset as NTP estimates it: the agent's clock against the midpoint of the call,
/// from the fastest of up to five round trips, the first of `enough` or less ending it; made
/// by the task that awaits this (a task of the connections' runtime: each answer reaches it on
/// the thread that read it). Returns (round trip, offset).
pub(super) async fn trips(
    mut client: Client,
    session: String,
    enough: Option<Duration>,
) -> Result<(Duration, i64), Status> {
    let mut best: Option<(Duration, i64)> = None;
    for _ in 0..5 {
        let sent = SystemTime::now();
        let t = Instant::now();
        let req = pb::SessionRequest {
            session: session.clone(),
        };
        // A host cut off answers nothing: waited for as long as any call's silence.
        let reply = tokio::time::timeout(SILENCE, client.clock(req))
            .await
            .map_err(|_| Status::deadline_exceeded("no answer to a clock reading"))??
            .into_inner();
        let (rtt, offset) = offset(sent, t.elapsed(), reply.unix_ns, reply.unix_ns);
        if best.is_none_or(|(b, _)| rtt < b) {
            best = Some((rtt, offset));
        }
        if enough.is_some_and(|e| rtt <= e) {
            break;
        }
    }
    Ok(best.expect("five round trips were made"))
}

/// NTP's estimate from one call sent at `sent` and answered `elapsed` later, which the agent
/// received at its `received_ns` and answered at its `answered_ns` (ns since the Unix epoch):
/// (the round trip less the agent's time on the call, the agent's clock minus ours).
pub(super) fn offset(
    sent: SystemTime,
    elapsed: Duration,
    received_ns: i64,
    answered_ns: i64,
) -> (Duration, i64) {
    let held = answered_ns.saturating_sub(received_ns).max(0) as u64;
    let rtt = elapsed.saturating_sub(Duration::from_nanos(held));
    // In i128: whatever times an agent sends, no overflow.
    let t1 = i128::from(unix_ns(sent));
    let t4 = t1 + elapsed.as_nanos() as i128;
    let offset = ((i128::from(received_ns) - t1) + (i128::from(answered_ns) - t4)) / 2;
    (rtt, offset.clamp(i64::MIN.into(), i64::MAX.into()) as i64)
}

/// A chain of causes said once each: `dns error: dns error: failed to lookup` becomes
/// `dns error: failed to lookup`, `status: interrupted: interrupted` becomes
/// `status: interrupted`.
pub(super) fn one_cause(chain: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for p in chain.split(": ").map(str::trim).filter(|p| !p.is_empty()) {
        if !parts
            .iter()
            .any(|q| *q == p || q.ends_with(p) || q.contains(&format!("{p}:")))
        {
            parts.push(p);
        }
    }
    parts.join(": ")
}

/// A remote agent's clock measurement, made by a task of its connection's runtime (see
/// [`crate::Agent::clock_probe`]).
pub struct ClockProbe {
    address: String,
    rt: Arc<Runtime>,
    client: Client,
    session: String,
}

impl ClockProbe {
    /// The probe of the agent at `address` reached by `client` in `session`, over runtime
    /// `rt`.
    pub(super) fn new(
        address: String,
        rt: Arc<Runtime>,
        client: Client,
        session: String,
    ) -> ClockProbe {
        ClockProbe {
            address,
            rt,
            client,
            session,
        }
    }

    /// The runtime of the agent's connection.
    pub(crate) fn runtime(&self) -> &Arc<Runtime> {
        &self.rt
    }

    /// The fastest of up to five round trips, ended early by one of `enough_ns` or less; why
    /// not when the measurement failed (an agent that no longer answers is gone, as a phase's
    /// call would find it).
    pub(crate) async fn measure(
        self,
        enough_ns: Option<u64>,
    ) -> Result<crate::agent::Clock, AgentError> {
        trips(
            self.client,
            self.session,
            enough_ns.map(Duration::from_nanos),
        )
        .await
        .map(clock_of)
        .map_err(|s| super::session_error(&self.address, s))
    }
}

/// A clock from a measurement's (round trip, offset).
fn clock_of((rtt, offset_ns): (Duration, i64)) -> crate::agent::Clock {
    crate::agent::Clock {
        offset_ns,
        rtt_ns: rtt.as_nanos() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offset_leaves_out_the_agents_time_on_the_call() {
        // The agent's clock 1 s ahead; 100 us each way; the agent held the call 2 ms.
        let sent = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let t1 = unix_ns(sent);
        let received = t1 + 100_000 + 1_000_000_000;
        let answered = received + 2_000_000;
        let (rtt, ahead) = offset(sent, Duration::from_micros(2_200), received, answered);
        assert_eq!(rtt, Duration::from_micros(200));
        assert_eq!(ahead, 1_000_000_000);
        // An answer the agent says it sent before it came (a clock step) holds the call 0 ns.
        let (rtt, _) = offset(sent, Duration::from_micros(300), t1 + 50_000, t1);
        assert_eq!(rtt, Duration::from_micros(300));
        // Times at the ends of the range: an offset, not an overflow.
        let (_, ahead) = offset(sent, Duration::from_micros(300), i64::MAX, i64::MAX);
        assert!(ahead > 0);
        let (_, behind) = offset(sent, Duration::from_micros(300), i64::MIN, i64::MIN);
        assert!(behind < 0);
    }

    #[test]
    fn first_bytes_say_what_answered() {
        assert_eq!(classify(&[0, 0, 0, 4, 0, 0, 0, 0, 0]), Answer::PlainHttp2);
        assert_eq!(classify(&[0, 0, 6, 4, 0, 0, 0, 0, 0]), Answer::PlainHttp2);
        assert_eq!(classify(&[21, 3, 3, 0, 2, 2, 70]), Answer::Tls);
        assert_eq!(classify(&[]), Answer::Closed);
        assert_eq!(classify(&crate::listen::FULL_GOAWAY[..9]), Answer::Full);
        assert_eq!(classify(b"SSH-2.0-O"), Answer::Other("SSH-2.0-O".into()));
        assert_eq!(classify(b"HTTP/1.1 "), Answer::Other("HTTP/1.1 ".into()));
    }
}
