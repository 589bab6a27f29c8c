//! A session's handshake, and sessions whose streams the caller drives: the engine's workers
//! of a `kind = "net"` job write, read or ping-pong on them as I/Os, timed one by one, while
//! the server counts and this module drains its per-second lines.

use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::common::{connect, nonce, ClientOptions, CONNECT, SILENCE};
use crate::proto::{data_line, read_line, token, Hello, Mode, ServerLine};
use crate::NetError;

/// A session's control connection, accepted by the server.
pub(crate) struct Control {
    /// Kept open for the session's life: closing it ends the session on the server.
    _control: TcpStream,
    replies: BufReader<TcpStream>,
    pub nonce: String,
    addr: SocketAddr,
}

impl Control {
    /// The server's next line; `what` says what was awaited, for the error.
    pub fn next(&mut self, what: &str) -> Result<ServerLine, NetError> {
        let addr = self.addr;
        let line = read_line(&mut self.replies)
            .map_err(|e| lost(addr, what, e))?
            .ok_or_else(|| {
                NetError::Lost(format!("{addr}: the server closed the connection ({what})"))
            })?;
        serde_json::from_str(&line)
            .map_err(|e| NetError::Lost(format!("{addr}: not a stormark net server ({e})")))
    }
}

fn unreachable(addr: SocketAddr, e: std::io::Error) -> NetError {
    NetError::Unreachable {
        addr,
        why: match e.kind() {
            std::io::ErrorKind::ConnectionRefused => {
                "connection refused: is `stormark net server` running there, on this port?".into()
            }
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => {
                format!(
                    "no answer within {} s (a firewall, or the wrong address?)",
                    CONNECT.as_secs()
                )
            }
            _ => e.to_string(),
        },
    }
}

fn lost(addr: SocketAddr, what: &str, e: std::io::Error) -> NetError {
    let e = match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
            format!(
                "silent for {} s (the host or the path to it went away)",
                SILENCE.as_secs()
            )
        }
        _ => e.to_string(),
    };
    NetError::Lost(format!("{addr}: {what}: {e}"))
}

/// Connects the control connection, asks for the session and waits for the answer.
pub(crate) fn start(opts: &ClientOptions) -> Result<Control, NetError> {
    ask(opts, false)
}

/// Asks the server whether it would run a session of `opts` now (its token, its limits, not
/// busy), starting nothing: before any load, so that a refusal is said at once.
pub fn check(opts: &ClientOptions) -> Result<(), NetError> {
    ask(opts, true).map(drop)
}

fn ask(opts: &ClientOptions, check_only: bool) -> Result<Control, NetError> {
    let addr = opts.server;
    let mut control = connect(addr, opts.bind).map_err(|e| unreachable(addr, e))?;
    let _ = control.set_read_timeout(Some(SILENCE));
    let nonce = nonce();
    let hello = Hello {
        version: 1,
        mode: opts.mode,
        streams: opts.streams,
        time_ms: opts.time.as_millis().max(1) as u64,
        reverse: opts.reverse,
        msg_size: opts.msg_size,
        nonce: nonce.clone(),
        udp: opts.udp,
        bitrate: opts.bitrate,
        bidir: opts.bidir,
        token: opts.token.clone(),
        check_only,
    };
    let mut line = serde_json::to_string(&hello).expect("serializing a hello");
    line.push('\n');
    control
        .write_all(line.as_bytes())
        .map_err(|e| lost(addr, "sending the request", e))?;
    let replies = BufReader::new(control.try_clone().map_err(|e| lost(addr, "control", e))?);
    let mut c = Control {
        _control: control,
        replies,
        nonce,
        addr,
    };
    match c.next("waiting for the answer")? {
        ServerLine::Accepted => Ok(c),
        ServerLine::Refused { reason } => Err(NetError::Refused(refusal(&reason))),
        other => Err(NetError::Lost(format!("{addr}: unexpected {other:?}"))),
    }
}

/// Opens the session's data connections (twice `streams` with `bidir`) and waits until the
/// server says the test has started.
pub(crate) fn join(opts: &ClientOptions, c: &mut Control) -> Result<Vec<TcpStream>, NetError> {
    let addr = opts.server;
    let connections = if opts.bidir {
        2 * opts.streams
    } else {
        opts.streams
    };
    let mut streams = Vec::with_capacity(connections as usize);
    for i in 0..connections {
        let mut s = connect(addr, opts.bind).map_err(|e| unreachable(addr, e))?;
        s.write_all(data_line(&c.nonce, i).as_bytes())
            .map_err(|e| lost(addr, "opening a stream", e))?;
        let _ = s.set_read_timeout(Some(SILENCE));
        let _ = s.set_write_timeout(Some(SILENCE));
        let _ = s.set_nodelay(opts.mode == Mode::Rtt);
        streams.push(s);
    }
    match c.next("waiting for the streams to join")? {
        ServerLine::Started => Ok(streams),
        ServerLine::Refused { reason } => Err(NetError::Refused(refusal(&reason))),
        other => Err(NetError::Lost(format!("{addr}: unexpected {other:?}"))),
    }
}

/// A started session whose streams the caller drives.
pub struct Session {
    /// The data connections, one per stream (both halves with `bidir`: the first sends, the
    /// second receives): write to them, read from them, or send a message and read its echo
    /// (rtt). Closing them ends the session. Empty for UDP.
    pub streams: Vec<TcpStream>,
    /// UDP: a socket per stream, connected to the server.
    pub udp: Vec<UdpSocket>,
    /// UDP: the session's mark, the first 8 bytes of every datagram.
    pub udp_token: u64,
    /// Per stream, what the server counted so far where it receives (its per-second lines,
    /// then its end report): the receiver's count of what this end sent.
    pub counted: Arc<Vec<AtomicU64>>,
    /// Set once the server's end report is in (`counted` final) or the server is gone.
    pub ended: Arc<AtomicBool>,
    drain: JoinHandle<Option<ServerLine>>,
}

impl Session {
    /// Opens a session of `opts.streams` streams (each way with `bidir`; UDP sockets with
    /// `udp`) for at most `opts.time`; the server's lines are read as they come into
    /// [`Session::counted`].
    pub fn open(opts: &ClientOptions) -> Result<Session, NetError> {
        if opts.mode == Mode::Pmtu {
            return Err(NetError::Refused(
                "a path MTU probe is run by probe_mtu".into(),
            ));
        }
        let mut c = start(opts)?;
        let (streams, udp) = if opts.udp {
            match c.next("waiting for the start")? {
                ServerLine::Started => {}
                ServerLine::Refused { reason } => return Err(NetError::Refused(refusal(&reason))),
                other => {
                    return Err(NetError::Lost(format!(
                        "{}: unexpected {other:?}",
                        opts.server
                    )))
                }
            }
            (Vec::new(), udp_sockets(opts)?)
        } else {
            (join(opts, &mut c)?, Vec::new())
        };
        let n = streams.len().max(udp.len());
        let counted: Arc<Vec<AtomicU64>> = Arc::new((0..n).map(|_| AtomicU64::new(0)).collect());
        let ended = Arc::new(AtomicBool::new(false));
        let udp_token = token(&c.nonce);
        let (counts, done) = (counted.clone(), ended.clone());
        let drain = std::thread::Builder::new()
            .name("net-session".into())
            .spawn(move || {
                let store = |bytes: &[u64]| {
                    for (c, &b) in counts.iter().zip(bytes) {
                        c.fetch_max(b, Ordering::Release);
                    }
                };
                let end = loop {
                    match c.next("during the test") {
                        Ok(ServerLine::Second { bytes, .. }) => store(&bytes),
                        Ok(end @ ServerLine::End { .. }) => {
                            if let ServerLine::End { bytes, .. } = &end {
                                store(bytes);
                            }
                            break Some(end);
                        }
                        Ok(_) => {}
                        Err(_) => break None,
                    }
                };
                done.store(true, Ordering::Release);
                end
            })
            .map_err(|e| NetError::Lost(format!("{}: {e}", opts.server)))?;
        Ok(Session {
            streams,
            udp,
            udp_token,
            counted,
            ended,
            drain,
        })
    }

    /// Waits for the server's end report once the streams are closed (at most the server's
    /// silence limit): what it counted, or `None` when it said nothing more.
    pub fn finish(self) -> Option<ServerLine> {
        drop(self.streams);
        drop(self.udp);
        self.drain.join().ok().flatten()
    }
}

/// A UDP socket per stream, connected to the server.
fn udp_sockets(opts: &ClientOptions) -> Result<Vec<UdpSocket>, NetError> {
    let addr = opts.server;
    let local: SocketAddr = match (opts.bind, addr.is_ipv4()) {
        (Some(ip), _) => (ip, 0).into(),
        (None, true) => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
        (None, false) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    (0..opts.streams)
        .map(|_| {
            UdpSocket::bind(local)
                .and_then(|s| s.connect(addr).map(|()| s))
                .map_err(|e| NetError::Unreachable {
                    addr,
                    why: e.to_string(),
                })
        })
        .collect()
}

/// A server's reason for refusing, as stormark prints it: the other end's words, on one line
/// with its control characters escaped (no escape sequence reaches the terminal, no forged
/// line), at most 300 characters.
pub(crate) fn refusal(reason: &str) -> String {
    stormark_spec::printable(reason, 300)
}
