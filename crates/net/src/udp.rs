//! UDP at a bitrate against a `stormark net server` (`--udp --bitrate R`): each stream sends
//! numbered, timestamped datagrams on a schedule; the server counts loss, reordering and jitter.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use stormark_stats::{Op, Snapshot};

use crate::common::{last_part, server_seconds, ClientOptions, Next, Outcome};
use crate::proto::{token, ServerLine, UdpStats};
use crate::server::payload;
use crate::NetError;

/// UDP datagrams at the asked bitrate, paced per stream; the server counts what arrives.
pub(crate) fn udp_send(
    opts: &ClientOptions,
    nonce: &str,
    epoch: Instant,
    next: &mut Next<'_>,
    on_second: &mut dyn FnMut(u32, &[Snapshot]),
) -> Result<Outcome, NetError> {
    let addr = opts.server;
    let stop = &opts.stop;
    let size = opts.msg_size as usize;
    // Datagrams per second on each stream.
    let per_stream = opts.bitrate as f64 / 8.0 / size as f64 / f64::from(opts.streams);
    let tok = token(nonce);
    let mut sockets = Vec::new();
    for _ in 0..opts.streams {
        let local: SocketAddr = if addr.is_ipv4() {
            (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let s = std::net::UdpSocket::bind(local)
            .and_then(|s| s.connect(addr).map(|()| s))
            .map_err(|e| NetError::Unreachable {
                addr,
                why: e.to_string(),
            })?;
        sockets.push(s);
    }
    std::thread::scope(|scope| {
        let senders: Vec<_> = sockets
            .into_iter()
            .enumerate()
            .map(|(i, s)| {
                scope.spawn(move || {
                    let mut buf = payload(size, i as u64 + 1);
                    buf[..8].copy_from_slice(&tok.to_le_bytes());
                    buf[8..12].copy_from_slice(&(i as u32).to_le_bytes());
                    buf[12..16].fill(0);
                    let mut sent = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let elapsed = epoch.elapsed();
                        if elapsed >= opts.time {
                            break;
                        }
                        let due = (elapsed.as_secs_f64() * per_stream) as u64 + 1;
                        while sent < due {
                            buf[16..24].copy_from_slice(&sent.to_le_bytes());
                            let at = epoch.elapsed().as_nanos() as u64;
                            buf[24..32].copy_from_slice(&at.to_le_bytes());
                            // A datagram the kernel drops (a full queue) is lost like any
                            // other: the receiver's count says so.
                            let _ = s.send(&buf);
                            sent += 1;
                        }
                        let next_at = Duration::from_secs_f64((sent as f64) / per_stream);
                        let wait = next_at.saturating_sub(epoch.elapsed());
                        if wait > Duration::from_micros(50) {
                            std::thread::sleep(wait.min(Duration::from_millis(1)));
                        }
                    }
                    sent
                })
            })
            .collect();
        let (mut seconds, before, end) = server_seconds(next, on_second)?;
        let sent: Vec<u64> = senders.into_iter().map(|h| h.join().unwrap_or(0)).collect();
        let ServerLine::End {
            bytes,
            duration_ns,
            udp,
            ..
        } = end
        else {
            unreachable!()
        };
        last_part(Op::Send, &mut seconds, &bytes, &before);
        Ok(Outcome {
            op: Op::Send,
            seconds,
            duration_ns,
            bytes,
            tcp: Vec::new(),
            interrupted: stop.load(Ordering::Relaxed),
            udp: sent
                .into_iter()
                .zip(
                    udp.into_iter()
                        .chain(std::iter::repeat(UdpStats::default())),
                )
                .collect(),
            local: None,
            sender_cpu_ns: Vec::new(),
            receiver_cpu_ns: Vec::new(),
        })
    })
}
