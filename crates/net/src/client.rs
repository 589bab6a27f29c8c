//! `stormark net client`: one session against a `stormark net server`.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use stormark_stats::{Op, Recorder, Snapshot};

use crate::common::{bytes_second, last_part, server_seconds, Next};
pub use crate::common::{ClientOptions, Outcome};
use crate::proto::{Mode, ServerLine};
use crate::server::payload;
use crate::{tcp_info, thread_cpu_ns, NetError, TcpInfo};

const READ_SIZE: usize = 256 << 10;
/// The last stretch before a scheduled round trip, waited awake.
const SPIN: Duration = Duration::from_micros(200);

/// Runs one test; `on_second` sees each second's per-stream snapshots as they arrive.
pub fn run(
    opts: &ClientOptions,
    on_second: &mut dyn FnMut(u32, &[Snapshot]),
) -> Result<Outcome, NetError> {
    let mut c = crate::session::start(opts)?;
    let local = c.control.local_addr().ok();
    if opts.udp {
        let nonce = c.nonce.clone();
        let mut next = |what: &str| c.next(what);
        match next("waiting for the start")? {
            ServerLine::Started => {}
            ServerLine::Refused { reason } => {
                return Err(NetError::Refused(crate::session::refusal(&reason)))
            }
            other => {
                return Err(NetError::Lost(format!(
                    "{}: unexpected {other:?}",
                    opts.server
                )))
            }
        }
        return crate::udp::udp_send(opts, &nonce, Instant::now(), &mut next, on_second)
            .map(|o| Outcome { local, ..o });
    }
    let streams = crate::session::join(opts, &mut c)?;
    let mut next = |what: &str| c.next(what);
    let epoch = Instant::now();
    let outcome = match (opts.mode, opts.reverse) {
        (Mode::Throughput, false) if opts.bidir => {
            bidir(opts, streams, epoch, &mut next, on_second)
        }
        (Mode::Throughput, false) => send(opts, streams, epoch, &mut next, on_second).map(|o| o.0),
        (Mode::Throughput, true) => receive(opts, streams, epoch, &mut next, on_second),
        (Mode::Rtt, _) => round_trips(opts, streams, epoch, &mut next, on_second),
        (Mode::Pmtu, _) => Err(NetError::Refused(
            "a path MTU probe is run by probe_mtu".into(),
        )),
    };
    outcome.map(|o| Outcome { local, ..o })
}

/// Client to server: the client writes, the server counts and says so every second. With
/// the outcome, what the server's end report says of the streams it sent on (`--bidir`).
#[allow(clippy::type_complexity)]
fn send(
    opts: &ClientOptions,
    streams: Vec<TcpStream>,
    epoch: Instant,
    next: &mut Next<'_>,
    on_second: &mut dyn FnMut(u32, &[Snapshot]),
) -> Result<(Outcome, Vec<Option<TcpInfo>>), NetError> {
    let stop = &opts.stop;
    // Handles to break off blocked writes when the server is lost.
    let handles: Vec<TcpStream> = streams.iter().filter_map(|s| s.try_clone().ok()).collect();
    std::thread::scope(|scope| {
        let writers: Vec<_> = streams
            .into_iter()
            .enumerate()
            .map(|(i, mut s)| {
                scope.spawn(move || {
                    let cpu0 = thread_cpu_ns();
                    let buf = payload(opts.msg_size as usize, i as u64 + 1);
                    // --bitrate on TCP: this stream's share, as iperf3's -b.
                    let mut pace = crate::tcpinfo::Pacer::new(
                        epoch,
                        opts.bitrate as f64 / f64::from(opts.streams),
                    );
                    while epoch.elapsed() < opts.time && !stop.load(Ordering::Relaxed) && {
                        pace.wait(buf.len());
                        s.write_all(&buf).is_ok()
                    } {}
                    let cpu = thread_cpu_ns().saturating_sub(cpu0);
                    let info = tcp_info(&s);
                    let _ = s.shutdown(Shutdown::Write);
                    (info, cpu)
                })
            })
            .collect();
        let (mut seconds, before, end) = match server_seconds(next, on_second) {
            Ok(r) => r,
            Err(e) => {
                // The server is gone: the writers stop now, not at their own timeouts.
                for h in &handles {
                    let _ = h.shutdown(Shutdown::Both);
                }
                return Err(e);
            }
        };
        let (tcp, sender_cpu_ns): (Vec<Option<TcpInfo>>, Vec<u64>) = writers
            .into_iter()
            .map(|w| w.join().unwrap_or((None, 0)))
            .unzip();
        let ServerLine::End {
            bytes,
            duration_ns,
            tcp: server_tcp,
            cpu_ns: receiver_cpu_ns,
            ..
        } = end
        else {
            unreachable!()
        };
        last_part(Op::Send, &mut seconds, &bytes, &before);
        Ok((
            Outcome {
                op: Op::Send,
                seconds,
                duration_ns,
                bytes,
                tcp,
                interrupted: stop.load(Ordering::Relaxed),
                udp: Vec::new(),
                local: None,
                sender_cpu_ns,
                receiver_cpu_ns,
            },
            server_tcp,
        ))
    })
}

/// Server to client: the server writes, the client counts every second.
fn receive(
    opts: &ClientOptions,
    streams: Vec<TcpStream>,
    epoch: Instant,
    next: &mut Next<'_>,
    on_second: &mut dyn FnMut(u32, &[Snapshot]),
) -> Result<Outcome, NetError> {
    let (seconds, bytes, last_ns, receiver_cpu_ns) =
        receive_streams(opts, streams, epoch, on_second);
    let (tcp, sender_cpu_ns) = match next("at the end")? {
        ServerLine::End { tcp, cpu_ns, .. } => (tcp, cpu_ns),
        other => return Err(NetError::Lost(format!("unexpected {other:?}"))),
    };
    Ok(Outcome {
        op: Op::Receive,
        seconds,
        duration_ns: last_ns,
        bytes,
        tcp,
        interrupted: opts.stop.load(Ordering::Relaxed),
        udp: Vec::new(),
        local: None,
        sender_cpu_ns,
        receiver_cpu_ns,
    })
}

/// Counts what arrives on `streams` every second until each ends: the seconds, the bytes per
/// stream, the time of the last byte, and the CPU time of each stream's thread.
fn receive_streams(
    opts: &ClientOptions,
    streams: Vec<TcpStream>,
    epoch: Instant,
    on_second: &mut dyn FnMut(u32, &[Snapshot]),
) -> (Vec<Vec<Snapshot>>, Vec<u64>, u64, Vec<u64>) {
    let n = streams.len();
    let counts: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(0)).collect();
    let cpu: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(0)).collect();
    let last_ns = AtomicU64::new(0);
    let finished = AtomicUsize::new(0);
    let stop = &opts.stop;
    let seconds = std::thread::scope(|scope| {
        for (i, mut s) in streams.into_iter().enumerate() {
            let (counts, cpu, last_ns, finished) = (&counts, &cpu, &last_ns, &finished);
            scope.spawn(move || {
                let cpu0 = thread_cpu_ns();
                let mut buf = vec![0u8; READ_SIZE];
                while !stop.load(Ordering::Relaxed) {
                    match s.read(&mut buf) {
                        Ok(got @ 1..) => {
                            counts[i].fetch_add(got as u64, Ordering::Relaxed);
                            last_ns.fetch_max(epoch.elapsed().as_nanos() as u64, Ordering::Relaxed);
                        }
                        _ => break,
                    }
                }
                cpu[i].store(thread_cpu_ns().saturating_sub(cpu0), Ordering::Relaxed);
                let _ = s.shutdown(Shutdown::Both);
                finished.fetch_add(1, Ordering::Release);
            });
        }
        let mut seconds = Vec::new();
        let mut before: Vec<u64> = Vec::new();
        let mut t = 0u32;
        while finished.load(Ordering::Acquire) < n {
            let at = epoch + Duration::from_secs(u64::from(t) + 1);
            while Instant::now() < at && finished.load(Ordering::Acquire) < n {
                std::thread::sleep(
                    Duration::from_millis(5).min(at.saturating_duration_since(Instant::now())),
                );
            }
            if Instant::now() >= at {
                let now: Vec<u64> = counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
                let snaps = bytes_second(Op::Receive, &now, &before);
                on_second(t, &snaps);
                seconds.push(snaps);
                before = now;
                t += 1;
            }
        }
        let now: Vec<u64> = counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
        last_part(Op::Receive, &mut seconds, &now, &before);
        seconds
    });
    let bytes = counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    let cpu = cpu.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    (seconds, bytes, last_ns.load(Ordering::Relaxed), cpu)
}

/// Both ways at once: the first half of `streams` sends (the server counts), the second
/// receives (this end counts). Streams of the result: the sending ones, then the receiving.
fn bidir(
    opts: &ClientOptions,
    mut streams: Vec<TcpStream>,
    epoch: Instant,
    next: &mut Next<'_>,
    on_second: &mut dyn FnMut(u32, &[Snapshot]),
) -> Result<Outcome, NetError> {
    let back = streams.split_off(opts.streams as usize);
    std::thread::scope(|scope| {
        let reverse = scope.spawn(|| receive_streams(opts, back, epoch, &mut |_, _| {}));
        let forward = send(opts, streams, epoch, next, on_second);
        let (rev_seconds, rev_bytes, rev_last, _) = reverse
            .join()
            .map_err(|_| NetError::Lost("a receiving stream failed".into()))?;
        let (mut out, server_tcp) = forward?;
        let n = rev_bytes.len();
        let len = out.seconds.len().max(rev_seconds.len());
        let width = out.bytes.len();
        let mut fwd = std::mem::take(&mut out.seconds).into_iter();
        let mut rev = rev_seconds.into_iter();
        out.seconds = (0..len)
            .map(|_| {
                let mut sec = fwd
                    .next()
                    .unwrap_or_else(|| (0..width).map(|_| Snapshot::new()).collect());
                sec.extend(
                    rev.next()
                        .unwrap_or_else(|| (0..n).map(|_| Snapshot::new()).collect()),
                );
                sec
            })
            .collect();
        out.bytes.extend(rev_bytes);
        out.tcp.extend(server_tcp);
        out.duration_ns = out.duration_ns.max(rev_last);
        // Per stream both ways: the server does not say its threads' CPU here.
        out.sender_cpu_ns.clear();
        out.receiver_cpu_ns.clear();
        Ok(out)
    })
}

/// Request and response of `msg_size` bytes each, one at a time on each stream.
fn round_trips(
    opts: &ClientOptions,
    streams: Vec<TcpStream>,
    epoch: Instant,
    next: &mut Next<'_>,
    on_second: &mut dyn FnMut(u32, &[Snapshot]),
) -> Result<Outcome, NetError> {
    let n = streams.len();
    let (tx, rx) = mpsc::channel::<(u32, usize, Snapshot)>();
    let stop = &opts.stop;
    let size = opts.msg_size as usize;
    let (seconds, last_ns) = std::thread::scope(|scope| {
        let workers: Vec<_> = streams
            .into_iter()
            .enumerate()
            .map(|(i, mut s)| {
                let tx = tx.clone();
                scope.spawn(move || {
                    let request = payload(size, i as u64 + 1);
                    let mut response = vec![0u8; size];
                    let mut rec = Recorder::new();
                    let mut second = 0u32;
                    let mut boundary = epoch + Duration::from_secs(1);
                    let mut last = Instant::now();
                    // Open loop: round trip k of this stream is due at k / rate; one sent late
                    // (the one before took too long) counts its time from when it was due.
                    let gap = opts
                        .rate
                        .map(|r| Duration::from_secs_f64(f64::from(opts.streams) / r));
                    let mut k = 0u32;
                    while !stop.load(Ordering::Relaxed) && epoch.elapsed() < opts.time {
                        let due = gap.map(|g| epoch + g * k);
                        if let Some(due) = due {
                            if due >= epoch + opts.time {
                                break;
                            }
                            // Sleep to just short of it, then wait out the rest awake: a
                            // sleeping thread wakes up to 100 µs late, which would count.
                            let left = due.saturating_duration_since(Instant::now());
                            if left > SPIN {
                                std::thread::sleep(left - SPIN);
                            }
                            while Instant::now() < due {
                                std::hint::spin_loop();
                            }
                        }
                        k += 1;
                        let start = Instant::now();
                        if s.write_all(&request).is_err() || s.read_exact(&mut response).is_err() {
                            rec.record_error(Op::Rtt, stormark_stats::ErrorKind::Network, 0, 0);
                            break;
                        }
                        last = Instant::now();
                        let service = last.duration_since(start).as_nanos() as u64;
                        match due {
                            None => rec.record(Op::Rtt, 2 * size as u64, service),
                            Some(due) => rec.record_scheduled(
                                Op::Rtt,
                                2 * size as u64,
                                last.duration_since(due).as_nanos() as u64,
                                service,
                            ),
                        }
                        while last >= boundary {
                            let _ = tx.send((second, i, rec.take()));
                            second += 1;
                            boundary += Duration::from_secs(1);
                        }
                    }
                    let rest = rec.take();
                    if rest != Snapshot::new() {
                        let _ = tx.send((second, i, rest));
                    }
                    let _ = s.shutdown(Shutdown::Write);
                    last.saturating_duration_since(epoch).as_nanos() as u64
                })
            })
            .collect();
        drop(tx);
        let mut seconds: Vec<Vec<Snapshot>> = Vec::new();
        let mut reported = 0usize;
        for (t, i, snap) in rx {
            let t = t as usize;
            while seconds.len() <= t {
                seconds.push((0..n).map(|_| Snapshot::new()).collect());
            }
            seconds[t][i] = snap;
            // A second is whole once every stream has moved past it.
            while reported + 1 < seconds.len()
                && (0..n).all(|s| {
                    seconds[reported + 1..]
                        .iter()
                        .any(|sec| sec[s] != Snapshot::new())
                })
            {
                on_second(reported as u32, &seconds[reported]);
                reported += 1;
            }
        }
        let last = workers
            .into_iter()
            .map(|w| w.join().unwrap_or(0))
            .max()
            .unwrap_or(0);
        for (t, s) in seconds.iter().enumerate().skip(reported) {
            on_second(t as u32, s);
        }
        (seconds, last)
    });
    let _ = next("at the end")?;
    let bytes = (0..n)
        .map(|i| seconds.iter().map(|sec| sec[i].op(Op::Rtt).bytes).sum())
        .collect();
    Ok(Outcome {
        op: Op::Rtt,
        seconds,
        duration_ns: last_ns,
        bytes,
        tcp: Vec::new(),
        interrupted: stop.load(Ordering::Relaxed),
        udp: Vec::new(),
        local: None,
        sender_cpu_ns: Vec::new(),
        receiver_cpu_ns: Vec::new(),
    })
}
