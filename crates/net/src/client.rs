//! The mesh's client: one session against an agent's `stormark net` port, TCP one way or
//! closed-loop round trips, a thread per stream. Every other test (`stormark net client`, net
//! jobs) is the engine's net workers on a [`crate::Session`]; this one goes when the mesh is
//! a plan shape over net jobs.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use stormark_stats::{Op, Recorder, Snapshot};

use crate::common::{last_part, server_seconds, Next};
pub use crate::common::{ClientOptions, Outcome};
use crate::proto::{Mode, ServerLine};
use crate::server::payload;
use crate::{tcp_info, thread_cpu_ns, NetError, TcpInfo};

/// The last stretch before a scheduled round trip, waited awake.
const SPIN: Duration = Duration::from_micros(200);

/// Runs one test; `on_second` sees each second's per-stream snapshots as they arrive.
pub fn run(
    opts: &ClientOptions,
    on_second: &mut dyn FnMut(u32, &[Snapshot]),
) -> Result<Outcome, NetError> {
    let mut c = crate::session::start(opts)?;
    let local = c.control.local_addr().ok();
    if opts.udp || opts.bidir || opts.reverse || opts.rate.is_some() || opts.bitrate > 0 {
        return Err(NetError::Refused(
            "the mesh's client runs TCP one way and closed-loop round trips; every other test is a net job's".into(),
        ));
    }
    let streams = crate::session::join(opts, &mut c)?;
    let mut next = |what: &str| c.next(what);
    let epoch = Instant::now();
    let outcome = match opts.mode {
        Mode::Throughput => send(opts, streams, epoch, &mut next, on_second),
        Mode::Rtt => round_trips(opts, streams, epoch, &mut next, on_second),
        Mode::Pmtu => Err(NetError::Refused(
            "a path MTU probe is run by probe_mtu".into(),
        )),
    };
    outcome.map(|o| Outcome { local, ..o })
}

/// Client to server: the client writes, the server counts and says so every second.
fn send(
    opts: &ClientOptions,
    streams: Vec<TcpStream>,
    epoch: Instant,
    next: &mut Next<'_>,
    on_second: &mut dyn FnMut(u32, &[Snapshot]),
) -> Result<Outcome, NetError> {
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
                    while epoch.elapsed() < opts.time
                        && !stop.load(Ordering::Relaxed)
                        && s.write_all(&buf).is_ok()
                    {}
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
            cpu_ns: receiver_cpu_ns,
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
            tcp,
            interrupted: stop.load(Ordering::Relaxed),
            udp: Vec::new(),
            local: None,
            sender_cpu_ns,
            receiver_cpu_ns,
        })
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
