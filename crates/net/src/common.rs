//! What a client is asked and what it measured, and the pieces of a session that the TCP
//! client, its UDP sender and the session of a net job share: connecting, the nonce, the
//! server's seconds.

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use stormark_stats::{Op, Snapshot};

use crate::proto::{Mode, ServerLine, UdpStats};
use crate::{NetError, TcpInfo};

/// What to measure, against which server.
#[derive(Clone)]
pub struct ClientOptions {
    /// The server.
    pub server: SocketAddr,
    /// Throughput or round trips.
    pub mode: Mode,
    /// Parallel connections.
    pub streams: u32,
    /// How long.
    pub time: Duration,
    /// Throughput from the server to the client.
    pub reverse: bool,
    /// Bytes per write (throughput) or per message each way (rtt).
    pub msg_size: u32,
    /// Set to stop early (Ctrl-C): what was measured is kept.
    pub stop: Arc<AtomicBool>,
    /// UDP datagrams of `msg_size` bytes instead of TCP streams.
    pub udp: bool,
    /// UDP: bits per second of payload over all streams.
    pub bitrate: u64,
    /// Throughput both ways at once: `streams` each way.
    pub bidir: bool,
    /// The server's token, when it asks for one.
    pub token: Option<String>,
    /// Round trips: an open loop of this many per second over all streams (latency counts
    /// from each one's schedule); closed loop when `None`.
    pub rate: Option<f64>,
    /// Connect from this address of this host (an agent of a mesh, from the address it was
    /// named by); any when `None`.
    pub bind: Option<std::net::IpAddr>,
}

/// A TCP connection to `addr` within `CONNECT`, from `bind` when given.
pub(crate) fn connect(
    addr: SocketAddr,
    bind: Option<std::net::IpAddr>,
) -> std::io::Result<TcpStream> {
    let Some(ip) = bind else {
        return TcpStream::connect_timeout(&addr, CONNECT);
    };
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )?;
    socket.bind(&SocketAddr::new(ip, 0).into())?;
    socket.connect_timeout(&addr.into(), CONNECT)?;
    Ok(socket.into())
}

/// What a test measured.
#[derive(Debug)]
pub struct Outcome {
    /// What the figures count: `send` (client to server), `receive` (server to client) or
    /// `rtt` (round trips).
    pub op: Op,
    /// Per second (the last may be shorter), per stream: the bytes the receiver counted, or
    /// the round trips with their latency.
    pub seconds: Vec<Vec<Snapshot>>,
    /// From the start to the last byte received (or the last round trip), ns.
    pub duration_ns: u64,
    /// Per stream, bytes the receiver got (throughput) or moved both ways (rtt).
    pub bytes: Vec<u64>,
    /// Per stream, the sending side's kernel's view at the end (`None` for rtt).
    pub tcp: Vec<Option<TcpInfo>>,
    /// Stopped early.
    pub interrupted: bool,
    /// UDP, per stream: datagrams sent, and what the receiver saw.
    pub udp: Vec<(u64, UdpStats)>,
    /// This end's address of the test (which interface it went out of).
    pub local: Option<SocketAddr>,
    /// TCP throughput, per stream: the CPU time the sending end's thread used, ns (empty
    /// when unknown).
    pub sender_cpu_ns: Vec<u64>,
    /// The same of the receiving end's thread.
    pub receiver_cpu_ns: Vec<u64>,
}

pub(crate) const CONNECT: Duration = Duration::from_secs(5);
/// The longest the server may stay silent on the control connection mid-test.
pub(crate) const SILENCE: Duration = Duration::from_secs(10);

/// 16 random bytes from the kernel, as hex.
pub(crate) fn nonce() -> String {
    let mut b = [0u8; 16];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .is_err()
    {
        // No /dev/urandom: the clock and the process, which still tell sessions apart.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        b = (t ^ (u128::from(std::process::id()) << 64)).to_le_bytes();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A second of bytes on each stream, from cumulative counts.
pub(crate) fn bytes_second(op: Op, now: &[u64], before: &[u64]) -> Vec<Snapshot> {
    now.iter()
        .zip(before.iter().chain(std::iter::repeat(&0)))
        .map(|(&n, &b)| {
            let mut s = Snapshot::new();
            s.op_mut(op).bytes = n.saturating_sub(b);
            s
        })
        .collect()
}

pub(crate) type Next<'a> = dyn FnMut(&str) -> Result<ServerLine, NetError> + 'a;

/// The server's counts of what it received, a line a second, until its end report: the
/// seconds as snapshots, the cumulative counts of the last, and the report.
#[allow(clippy::type_complexity)]
pub(crate) fn server_seconds(
    next: &mut Next<'_>,
    on_second: &mut dyn FnMut(u32, &[Snapshot]),
) -> Result<(Vec<Vec<Snapshot>>, Vec<u64>, ServerLine), NetError> {
    let mut seconds = Vec::new();
    let mut before: Vec<u64> = Vec::new();
    loop {
        match next("during the test")? {
            ServerLine::Second { t, bytes } => {
                let snaps = bytes_second(Op::Send, &bytes, &before);
                on_second(t, &snaps);
                seconds.push(snaps);
                before = bytes;
            }
            end @ ServerLine::End { .. } => return Ok((seconds, before, end)),
            other => return Err(NetError::Lost(format!("unexpected {other:?}"))),
        }
    }
}

/// What arrived after the last whole second, as a last, shorter one.
pub(crate) fn last_part(op: Op, seconds: &mut Vec<Vec<Snapshot>>, bytes: &[u64], before: &[u64]) {
    let rest = bytes_second(op, bytes, before);
    if rest.iter().any(|s| s.op(op).bytes > 0) {
        seconds.push(rest);
    }
}
