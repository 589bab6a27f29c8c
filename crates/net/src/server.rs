//! `stormark net server`: one session at a time, on one port.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::proto::{parse_data_line, token, Hello, Mode, ServerLine, UdpStats, UDP_HEADER};
use crate::{tcp_info, thread_cpu_ns, NetError};

/// How a server runs.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Stop after one session (as `iperf3 -1`).
    pub once: bool,
    /// Set to stop (Ctrl-C); checked several times a second.
    pub stop: Arc<AtomicBool>,
    /// A token every client must give (`--token-file`); anyone may run a test without one.
    pub token: Option<String>,
    /// Only connections from these addresses are served (an agent's port for the hosts of
    /// its run); any address when empty.
    pub allow: Vec<std::net::IpAddr>,
}

/// How long a new connection may take to say what it is, and the streams of a session to
/// join.
const HANDSHAKE: Duration = Duration::from_secs(5);
/// A data connection silent this long is taken for gone.
const SILENCE: Duration = Duration::from_secs(30);
/// Connections still saying what they are, at most; more wait in the listen backlog until
/// one ends (a flood of idle connections cannot take the server's threads).
const MAX_HANDSHAKES: usize = 64;
/// Bytes per read on a receiving stream.
const READ_SIZE: usize = 256 << 10;

#[derive(Default)]
struct Shared {
    /// The session waiting for its streams: its nonce and a slot per stream.
    pending: Mutex<Option<(String, Vec<Option<TcpStream>>)>>,
    joined: Condvar,
    busy: AtomicBool,
    handshakes: AtomicUsize,
}

/// Serves sessions on `listener` until `opts.stop` (or after one session with `once`).
/// `log` gets a line per session.
pub fn serve(
    listener: TcpListener,
    opts: &ServerOptions,
    log: &(dyn Fn(&str) + Sync),
) -> Result<(), NetError> {
    let addr = listener
        .local_addr()
        .map_err(|e| NetError::Lost(e.to_string()))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| NetError::Listen {
            addr,
            why: e.to_string(),
        })?;
    let shared = Arc::new(Shared::default());
    std::thread::scope(|scope| {
        while !opts.stop.load(Ordering::Relaxed) {
            // At the cap, new connections wait in the kernel's backlog until a handshake ends
            // (each within HANDSHAKE), rather than being closed: a client's 128 streams come
            // faster than 64 handshake threads start, and none of them may be lost.
            if shared.handshakes.load(Ordering::Relaxed) >= MAX_HANDSHAKES {
                std::thread::sleep(Duration::from_millis(2));
                continue;
            }
            let (conn, peer) = match listener.accept() {
                Ok(c) => c,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                }
                Err(_) => continue,
            };
            if !opts.allow.is_empty() && !opts.allow.contains(&peer.ip().to_canonical()) {
                log(&format!("{peer}: refused: not a host of this run"));
                continue;
            }
            shared.handshakes.fetch_add(1, Ordering::Relaxed);
            let shared = shared.clone();
            scope.spawn(move || {
                let _ = conn.set_nonblocking(false);
                let _ = conn.set_read_timeout(Some(HANDSHAKE));
                let mut conn = conn;
                let first = first_line(&mut conn);
                shared.handshakes.fetch_sub(1, Ordering::Relaxed);
                let Ok(Some(line)) = first else { return };
                if line.starts_with('{') {
                    let done = control(&shared, conn, &line, addr, opts.token.as_deref());
                    log(&format!("{peer}: {done}"));
                    if opts.once && done.starts_with("session") {
                        opts.stop.store(true, Ordering::Relaxed);
                    }
                } else if let Some((nonce, stream)) = parse_data_line(&line) {
                    let mut pending = shared.pending.lock().unwrap_or_else(|p| p.into_inner());
                    if let Some((n, slots)) = pending.as_mut() {
                        if n == nonce {
                            if let Some(slot @ None) = slots.get_mut(stream as usize) {
                                *slot = Some(conn);
                                shared.joined.notify_all();
                            }
                        }
                    }
                    // Any other connection is dropped here: a wrong nonce joins nothing.
                }
            });
        }
    });
    Ok(())
}

/// The first line of a new connection, read byte by byte so that nothing after it is taken
/// from the stream; at most 4 KiB.
fn first_line(conn: &mut TcpStream) -> std::io::Result<Option<String>> {
    let mut line = Vec::with_capacity(128);
    let mut byte = [0u8; 1];
    loop {
        if conn.read(&mut byte)? == 0 {
            return Ok(None);
        }
        if byte[0] == b'\n' {
            return Ok(String::from_utf8(line).ok());
        }
        line.push(byte[0]);
        if line.len() > 4096 {
            return Ok(None);
        }
    }
}

/// Tells the client why there is no test; returns the line for the log.
fn refuse(conn: &mut TcpStream, reason: &str) -> std::io::Result<String> {
    say(
        conn,
        &ServerLine::Refused {
            reason: reason.to_string(),
        },
    )?;
    Ok(format!("refused: {reason}"))
}

fn say(conn: &mut TcpStream, line: &ServerLine) -> std::io::Result<()> {
    let mut text = serde_json::to_string(line).expect("serializing a server line");
    text.push('\n');
    conn.write_all(text.as_bytes())
}

/// Runs one control connection; returns a line for the log.
fn control(
    shared: &Shared,
    mut conn: TcpStream,
    line: &str,
    addr: SocketAddr,
    token: Option<&str>,
) -> String {
    let hello: Hello = match serde_json::from_str(line) {
        Ok(h) => h,
        Err(e) => return format!("refused: not a hello ({e})"),
    };
    if let Some(want) = token {
        use subtle::ConstantTimeEq;
        let given = hello.token.as_deref().unwrap_or("");
        if !bool::from(given.as_bytes().ct_eq(want.as_bytes())) {
            let reason = if hello.token.is_none() {
                "this server asks for a token: give the client --token-file with the server's token"
            } else {
                "wrong token (--token-file)"
            };
            return refuse(&mut conn, reason).unwrap_or_else(|e| format!("failed: {e}"));
        }
    }
    if let Err(why) = hello.check() {
        return refuse(&mut conn, &why).unwrap_or_else(|e| format!("failed: {e}"));
    }
    if hello.check_only {
        let answer = if shared.busy.load(Ordering::Acquire) {
            refuse(
                &mut conn,
                "busy with another client's test; try again when it ends",
            )
        } else {
            say(&mut conn, &ServerLine::Accepted).map(|()| "checked".to_string())
        };
        return answer.unwrap_or_else(|e| format!("failed: {e}"));
    }
    if shared.busy.swap(true, Ordering::AcqRel) {
        return refuse(
            &mut conn,
            "busy with another client's test; try again when it ends",
        )
        .unwrap_or_else(|e| format!("failed: {e}"));
    }
    let result = session(shared, &mut conn, &hello, addr);
    *shared.pending.lock().unwrap_or_else(|p| p.into_inner()) = None;
    shared.busy.store(false, Ordering::Release);
    match result {
        Ok(s) => s,
        Err(e) => format!("failed: {e}"),
    }
}

fn session(
    shared: &Shared,
    conn: &mut TcpStream,
    hello: &Hello,
    addr: SocketAddr,
) -> std::io::Result<String> {
    if hello.udp {
        return udp_session(conn, hello, addr);
    }
    if hello.mode == Mode::Pmtu {
        return pmtu_echo(conn, hello, addr);
    }
    let n = hello.streams as usize * if hello.bidir { 2 } else { 1 };
    {
        let mut pending = shared.pending.lock().unwrap_or_else(|p| p.into_inner());
        *pending = Some((hello.nonce.clone(), (0..n).map(|_| None).collect()));
    }
    say(conn, &ServerLine::Accepted)?;
    let deadline = Instant::now() + HANDSHAKE * 2;
    let streams: Vec<TcpStream> = {
        let mut pending = shared.pending.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            let all = pending
                .as_ref()
                .is_some_and(|(_, slots)| slots.iter().all(Option::is_some));
            if all {
                break;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let joined = pending
                    .as_ref()
                    .map_or(0, |(_, s)| s.iter().filter(|x| x.is_some()).count());
                let reason = format!(
                    "{joined} of {n} streams joined within {} s",
                    (HANDSHAKE * 2).as_secs()
                );
                drop(pending);
                return refuse(conn, &reason);
            }
            pending = shared
                .joined
                .wait_timeout(pending, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        let (_, slots) = pending.take().expect("checked above");
        slots.into_iter().flatten().collect()
    };
    for s in &streams {
        let _ = s.set_read_timeout(Some(SILENCE));
        let _ = s.set_write_timeout(Some(SILENCE));
        let _ = s.set_nodelay(hello.mode == Mode::Rtt);
    }
    say(conn, &ServerLine::Started)?;
    let epoch = Instant::now();
    let time = Duration::from_millis(hello.time_ms);
    let end = match (hello.mode, hello.reverse) {
        (Mode::Throughput, false) if hello.bidir => {
            // The first half comes to this end, the second half goes from it.
            let mut streams = streams;
            let back = streams.split_off(hello.streams as usize);
            let size = hello.msg_size as usize;
            std::thread::scope(|scope| {
                let sending = scope.spawn(move || send(back, epoch, time, size, hello.bitrate));
                let received = receive(conn, streams, epoch);
                let sent = sending.join().ok();
                received.map(|r| match (r, sent) {
                    (
                        ServerLine::End {
                            bytes, duration_ns, ..
                        },
                        Some(ServerLine::End {
                            tcp,
                            duration_ns: d2,
                            ..
                        }),
                    ) => ServerLine::End {
                        bytes,
                        duration_ns: duration_ns.max(d2),
                        tcp,
                        udp: Vec::new(),
                        cpu_ns: Vec::new(),
                    },
                    (r, _) => r,
                })
            })?
        }
        (Mode::Throughput, false) => receive(conn, streams, epoch)?,
        (Mode::Throughput, true) => {
            send(streams, epoch, time, hello.msg_size as usize, hello.bitrate)
        }
        (Mode::Rtt, _) => echo(streams, epoch, hello.msg_size as usize),
        (Mode::Pmtu, _) => unreachable!("answered before any stream joins"),
    };
    let total: u64 = match &end {
        ServerLine::End { bytes, .. } => bytes.iter().sum(),
        _ => 0,
    };
    say(conn, &end)?;
    Ok(format!(
        "session of {n} stream{} ({:?}{}), {total} bytes",
        if n == 1 { "" } else { "s" },
        hello.mode,
        if hello.reverse { ", reverse" } else { "" }
    ))
}

/// Receives on every stream until each ends, telling the client the counts every second.
fn receive(
    conn: &mut TcpStream,
    streams: Vec<TcpStream>,
    epoch: Instant,
) -> std::io::Result<ServerLine> {
    let n = streams.len();
    let counts: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(0)).collect();
    let cpu: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(0)).collect();
    let last_ns = AtomicU64::new(0);
    let finished = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for (i, mut s) in streams.into_iter().enumerate() {
            let (counts, cpu, last_ns, finished) = (&counts, &cpu, &last_ns, &finished);
            scope.spawn(move || {
                let cpu0 = thread_cpu_ns();
                let mut buf = vec![0u8; READ_SIZE];
                while let Ok(got @ 1..) = s.read(&mut buf) {
                    counts[i].fetch_add(got as u64, Ordering::Relaxed);
                    last_ns.fetch_max(epoch.elapsed().as_nanos() as u64, Ordering::Relaxed);
                }
                cpu[i].store(thread_cpu_ns().saturating_sub(cpu0), Ordering::Relaxed);
                let _ = s.shutdown(Shutdown::Both);
                finished.fetch_add(1, Ordering::Release);
            });
        }
        let mut t = 0u32;
        while finished.load(Ordering::Acquire) < n {
            let next = epoch + Duration::from_secs(u64::from(t) + 1);
            while Instant::now() < next && finished.load(Ordering::Acquire) < n {
                std::thread::sleep(
                    Duration::from_millis(5).min(next.saturating_duration_since(Instant::now())),
                );
            }
            if Instant::now() >= next {
                let bytes = counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
                // A client gone from the control connection ends nothing here: the streams
                // end on their own (EOF, or silence).
                let _ = say(conn, &ServerLine::Second { t, bytes });
                t += 1;
            }
        }
    });
    Ok(ServerLine::End {
        bytes: counts.iter().map(|c| c.load(Ordering::Relaxed)).collect(),
        duration_ns: last_ns.load(Ordering::Relaxed),
        tcp: Vec::new(),
        udp: Vec::new(),
        cpu_ns: cpu.iter().map(|c| c.load(Ordering::Relaxed)).collect(),
    })
}

/// Sends on every stream for `time`, then reports what each sent and its kernel's view.
fn send(
    streams: Vec<TcpStream>,
    epoch: Instant,
    time: Duration,
    size: usize,
    bitrate: u64,
) -> ServerLine {
    // --bitrate on TCP (0: unpaced): each stream's share.
    let per_stream_bits = bitrate as f64 / streams.len().max(1) as f64;
    let results: Vec<(u64, u64, Option<crate::TcpInfo>, u64)> = std::thread::scope(|scope| {
        let handles: Vec<_> = streams
            .into_iter()
            .enumerate()
            .map(|(i, mut s)| {
                scope.spawn(move || {
                    let cpu0 = thread_cpu_ns();
                    let buf = payload(size, i as u64);
                    let mut sent = 0u64;
                    let mut pace = crate::tcpinfo::Pacer::new(epoch, per_stream_bits);
                    while epoch.elapsed() < time && {
                        pace.wait(buf.len());
                        s.write_all(&buf).is_ok()
                    } {
                        sent += buf.len() as u64;
                    }
                    let done = epoch.elapsed().as_nanos() as u64;
                    let cpu = thread_cpu_ns().saturating_sub(cpu0);
                    let info = tcp_info(&s);
                    let _ = s.shutdown(Shutdown::Write);
                    // Wait for the client to close, so that what was sent has arrived.
                    let _ = s.read(&mut [0u8; 1]);
                    (sent, done, info, cpu)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or((0, 0, None, 0)))
            .collect()
    });
    ServerLine::End {
        bytes: results.iter().map(|r| r.0).collect(),
        duration_ns: results.iter().map(|r| r.1).max().unwrap_or(0),
        tcp: results.iter().map(|r| r.2).collect(),
        udp: Vec::new(),
        cpu_ns: results.iter().map(|r| r.3).collect(),
    }
}

/// Answers every message with one of the same size until each stream ends.
fn echo(streams: Vec<TcpStream>, epoch: Instant, size: usize) -> ServerLine {
    let results: Vec<u64> = std::thread::scope(|scope| {
        let handles: Vec<_> = streams
            .into_iter()
            .map(|mut s| {
                scope.spawn(move || {
                    let mut buf = vec![0u8; size];
                    let mut bytes = 0u64;
                    while s.read_exact(&mut buf).is_ok() && s.write_all(&buf).is_ok() {
                        bytes += size as u64;
                    }
                    bytes
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or(0)).collect()
    });
    ServerLine::End {
        bytes: results,
        duration_ns: epoch.elapsed().as_nanos() as u64,
        tcp: Vec::new(),
        udp: Vec::new(),
        cpu_ns: Vec::new(),
    }
}

/// `size` bytes that compress to nothing less (a link that compresses is not measured by
/// zeros), different per stream.
pub(crate) fn payload(size: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..size)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// A UDP test: datagrams on the server's port, counted per stream until the client's time is
/// up (and a second more for the last in flight), the counts said every second.
fn udp_session(conn: &mut TcpStream, hello: &Hello, addr: SocketAddr) -> std::io::Result<String> {
    let socket = match UdpSocket::bind(addr) {
        Ok(s) => s,
        Err(e) => {
            return refuse(conn, &format!("cannot receive UDP on {addr}: {e}"));
        }
    };
    socket.set_read_timeout(Some(Duration::from_millis(20)))?;
    // A deep receive queue, so that the receiver's own pauses do not count as the network's
    // loss (the kernel caps it at net.core.rmem_max).
    let size: libc::c_int = 8 << 20;
    // SAFETY: the pointer and length describe `size`, which outlives the call.
    unsafe {
        libc::setsockopt(
            std::os::fd::AsRawFd::as_raw_fd(&socket),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&size as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
    say(conn, &ServerLine::Accepted)?;
    say(conn, &ServerLine::Started)?;
    let epoch = Instant::now();
    let n = hello.streams as usize;
    let want = token(&hello.nonce);
    let mut stats = vec![UdpStats::default(); n];
    let mut next_seq = vec![0u64; n];
    let mut transit: Vec<Option<i128>> = vec![None; n];
    let mut jitter = vec![0f64; n];
    let mut last_ns = 0u64;
    let until = Duration::from_millis(hello.time_ms) + Duration::from_secs(1);
    let mut t = 0u32;
    let mut buf = vec![0u8; 65_536];
    while epoch.elapsed() < until {
        if epoch.elapsed() >= Duration::from_secs(u64::from(t) + 1) {
            let bytes = stats.iter().map(|s| s.bytes).collect();
            let _ = say(conn, &ServerLine::Second { t, bytes });
            t += 1;
        }
        let Ok(len) = socket.recv(&mut buf) else {
            continue;
        };
        let at = epoch.elapsed().as_nanos() as u64;
        if len < UDP_HEADER {
            continue;
        }
        let word = |i: usize| u64::from_le_bytes(buf[i..i + 8].try_into().expect("8 bytes"));
        let stream = u32::from_le_bytes(buf[8..12].try_into().expect("4 bytes")) as usize;
        if word(0) != want || stream >= n {
            continue; // not this session's
        }
        let (seq, sent_ns) = (word(16), word(24));
        let s = &mut stats[stream];
        s.datagrams += 1;
        s.bytes += len as u64;
        if seq < next_seq[stream] {
            s.out_of_order += 1;
        } else {
            next_seq[stream] = seq + 1;
        }
        // RFC 3550: the change in transit time between consecutive arrivals; the clocks'
        // offset cancels.
        let now_transit = i128::from(at) - i128::from(sent_ns);
        if let Some(prev) = transit[stream] {
            let d = (now_transit - prev).unsigned_abs() as f64;
            jitter[stream] += (d - jitter[stream]) / 16.0;
        }
        transit[stream] = Some(now_transit);
        last_ns = at;
    }
    for (s, j) in stats.iter_mut().zip(&jitter) {
        s.jitter_ns = j.round() as u64;
    }
    let total: u64 = stats.iter().map(|s| s.datagrams).sum();
    say(
        conn,
        &ServerLine::End {
            bytes: stats.iter().map(|s| s.bytes).collect(),
            duration_ns: last_ns,
            tcp: Vec::new(),
            udp: stats,
            cpu_ns: Vec::new(),
        },
    )?;
    Ok(format!(
        "session of {n} UDP stream{}, {total} datagrams",
        if n == 1 { "" } else { "s" }
    ))
}

/// A path-MTU probe: echoes the first 16 bytes of each of the session's datagrams (token and
/// size) to their sender, until the client's closing datagram (size 0) or the session's time.
fn pmtu_echo(conn: &mut TcpStream, hello: &Hello, addr: SocketAddr) -> std::io::Result<String> {
    let socket = match UdpSocket::bind(addr) {
        Ok(s) => s,
        Err(e) => return refuse(conn, &format!("cannot receive UDP on {addr}: {e}")),
    };
    socket.set_read_timeout(Some(Duration::from_millis(20)))?;
    say(conn, &ServerLine::Accepted)?;
    say(conn, &ServerLine::Started)?;
    let epoch = Instant::now();
    let want = token(&hello.nonce);
    let until = Duration::from_millis(hello.time_ms.min(30_000));
    let mut buf = vec![0u8; 65_536];
    let mut echoed = 0u64;
    while epoch.elapsed() < until {
        let Ok((len, from)) = socket.recv_from(&mut buf) else {
            continue;
        };
        if len < 16 || u64::from_le_bytes(buf[..8].try_into().expect("8 bytes")) != want {
            continue; // not this session's
        }
        if u32::from_le_bytes(buf[8..12].try_into().expect("4 bytes")) == 0 {
            break; // the client is done
        }
        let _ = socket.send_to(&buf[..16], from);
        echoed += 1;
    }
    say(
        conn,
        &ServerLine::End {
            bytes: vec![echoed],
            duration_ns: epoch.elapsed().as_nanos() as u64,
            tcp: Vec::new(),
            udp: Vec::new(),
            cpu_ns: Vec::new(),
        },
    )?;
    Ok(format!("path MTU probe, {echoed} datagrams echoed"))
}

#[cfg(test)]
mod tests;
