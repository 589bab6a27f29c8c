//! What a client asks of a server, and the pieces a session and the path MTU probe share:
//! connecting (from a given address), the nonce.

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use crate::proto::Mode;

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
