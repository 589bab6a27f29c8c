//! The path MTU to a `stormark net server`: UDP datagrams with DF set, echoed by the server,
//! at sizes halved between the smallest every path carries and this host's MTU.

use std::io::{BufReader, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::common::{connect, nonce, ClientOptions, SILENCE};
use crate::proto::{read_line, token, Hello, Mode, ServerLine};
use crate::NetError;

/// How long a probe datagram's echo is waited for, and how often a size is tried.
const PROBE_WAIT: Duration = Duration::from_millis(150);
const PROBE_TRIES: u32 = 2;

/// The largest IP packet, at most `max` bytes, that reaches the server and whose echo comes
/// back: UDP datagrams with DF set (`IP_PMTUDISC_PROBE`: the kernel's path-MTU cache is not
/// consulted, so a frame a hop drops silently is found), sizes searched by halving. `None`
/// when not even the smallest size every IPv4 path carries (576) comes back: UDP is blocked.
pub fn probe_mtu(opts: &ClientOptions, max: u32) -> Result<Option<u32>, NetError> {
    let addr = opts.server;
    let lost = |what: &str, e: std::io::Error| NetError::Lost(format!("{addr}: {what}: {e}"));
    let mut control = connect(addr, opts.bind).map_err(|e| NetError::Unreachable {
        addr,
        why: e.to_string(),
    })?;
    let _ = control.set_read_timeout(Some(SILENCE));
    let nonce = nonce();
    let hello = Hello {
        version: 1,
        mode: Mode::Pmtu,
        streams: 1,
        time_ms: 20_000,
        reverse: false,
        msg_size: max.clamp(1, 65_000),
        nonce: nonce.clone(),
        udp: false,
        bitrate: 0,
        bidir: false,
        token: opts.token.clone(),
        check_only: false,
    };
    let mut line = serde_json::to_string(&hello).expect("serializing a hello");
    line.push('\n');
    control
        .write_all(line.as_bytes())
        .map_err(|e| lost("sending the request", e))?;
    let mut replies = BufReader::new(control.try_clone().map_err(|e| lost("control", e))?);
    let mut next = |what: &str| -> Result<ServerLine, NetError> {
        let line = read_line(&mut replies)
            .map_err(|e| lost(what, e))?
            .ok_or_else(|| NetError::Lost(format!("{addr}: the server closed ({what})")))?;
        serde_json::from_str(&line)
            .map_err(|e| NetError::Lost(format!("{addr}: not a stormark net server ({e})")))
    };
    for what in ["waiting for the answer", "waiting for the start"] {
        match next(what)? {
            ServerLine::Accepted | ServerLine::Started => {}
            ServerLine::Refused { reason } => {
                return Err(NetError::Refused(crate::session::refusal(&reason)))
            }
            other => return Err(NetError::Lost(format!("{addr}: unexpected {other:?}"))),
        }
    }
    let socket = df_socket(addr, opts.bind).map_err(|e| lost("a UDP socket", e))?;
    let _ = socket.set_read_timeout(Some(PROBE_WAIT));
    // IP and UDP headers.
    let overhead: u32 = if addr.is_ipv4() { 28 } else { 48 };
    let tok = token(&nonce).to_le_bytes();
    let mut datagram = vec![0u8; max.max(overhead + 16) as usize];
    let mut reply = [0u8; 64];
    let mut passes = |packet: u32| -> bool {
        let len = (packet - overhead) as usize;
        datagram[..8].copy_from_slice(&tok);
        datagram[8..12].copy_from_slice(&packet.to_le_bytes());
        for _ in 0..PROBE_TRIES {
            if socket.send(&datagram[..len]).is_err() {
                return false; // larger than this host's own interface allows
            }
            let until = Instant::now() + PROBE_WAIT;
            while Instant::now() < until {
                match socket.recv(&mut reply) {
                    Ok(16..) if reply[..8] == tok && reply[8..12] == packet.to_le_bytes() => {
                        return true
                    }
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
        }
        false
    };
    let floor = if addr.is_ipv4() { 576 } else { 1280 };
    let found = if max <= floor || passes(max) {
        Some(max)
    } else if !passes(floor) {
        None
    } else {
        // floor passes, max does not.
        let (mut lo, mut hi) = (floor, max);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if passes(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Some(lo)
    };
    // Done: a datagram of size 0 ends the server's echo.
    let mut done = [0u8; 16];
    done[..8].copy_from_slice(&tok);
    let _ = socket.send(&done);
    match next("at the end")? {
        ServerLine::End { .. } => Ok(found),
        other => Err(NetError::Lost(format!("{addr}: unexpected {other:?}"))),
    }
}

/// A UDP socket connected to `addr` (from `bind` when given) that sends with DF set and does
/// not consult the kernel's path-MTU cache (`IP_PMTUDISC_PROBE`): a datagram too large for a
/// hop is dropped there, as the probe needs.
fn df_socket(
    addr: SocketAddr,
    bind: Option<std::net::IpAddr>,
) -> std::io::Result<std::net::UdpSocket> {
    let local: SocketAddr = match bind {
        Some(ip) => SocketAddr::new(ip, 0),
        None if addr.is_ipv4() => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
        None => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let socket = std::net::UdpSocket::bind(local).and_then(|s| s.connect(addr).map(|()| s))?;
    let (level, option, probe) = if addr.is_ipv4() {
        (
            libc::IPPROTO_IP,
            libc::IP_MTU_DISCOVER,
            libc::IP_PMTUDISC_PROBE,
        )
    } else {
        (
            libc::IPPROTO_IPV6,
            libc::IPV6_MTU_DISCOVER,
            libc::IPV6_PMTUDISC_PROBE,
        )
    };
    // SAFETY: the pointer and length describe `probe`, which outlives the call.
    unsafe {
        libc::setsockopt(
            std::os::fd::AsRawFd::as_raw_fd(&socket),
            level,
            option,
            (&probe as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
    Ok(socket)
}
