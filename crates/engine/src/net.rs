//! The net backend: one stream of a `kind = "net"` job's session per worker, as iperf3 and
//! sockperf load a path. Each write (send), read (receive), datagram (UDP) or message and its
//! echo (rtt) is one I/O, timed as file I/Os are. What a sending stream moved is counted
//! where it arrives: the server's running count, credited as it comes, final once the
//! server's end report is in.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream, UdpSocket};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use stormark_spec::NetMode;
use stormark_stats::{ErrorKind, Op};

use crate::ctx::{wait_until, Ctx};
use crate::error::EngineError;
use crate::work::{NetConn, NetWork};

/// The operation a net worker's I/Os count as.
pub fn net_op(mode: NetMode) -> Op {
    match mode {
        NetMode::Send | NetMode::Bidir => Op::Send,
        NetMode::Receive => Op::Receive,
        NetMode::Rtt => Op::Rtt,
    }
}

/// Streams until the stage's end, a stop, or the server going away (a failure naming it).
pub(crate) fn run_net(ctx: &mut Ctx<'_>, work: &NetWork) -> Result<(), EngineError> {
    let conn = work.conn.lock().ok().and_then(|mut s| s.take());
    let Some(conn) = conn else {
        if work.pair {
            // Its session did not open (the failure is the session's): one error, counted.
            ctx.rec
                .record_error(net_op(work.mode), ErrorKind::Network, 0, 0);
            return Ok(());
        }
        return Err(EngineError::Net(format!(
            "{}: no stream for this worker",
            work.server
        )));
    };
    let cpu0 = thread_cpu_ns();
    let mut credit = Credit {
        work,
        // What was acknowledged before the load (the line that opened the stream).
        credited: match &conn {
            NetConn::Tcp(s) => bytes_acked(s).unwrap_or(0),
            NetConn::Udp(..) => 0,
        },
        false_claim: None,
    };
    let result = match conn {
        NetConn::Tcp(stream) => tcp(ctx, work, stream, &mut credit),
        NetConn::Udp(socket, mark) => udp(ctx, work, &socket, mark, &mut credit),
    };
    work.tally
        .cpu_ns
        .store(thread_cpu_ns().saturating_sub(cpu0), Ordering::Relaxed);
    match result {
        // A pair's stream: its error is counted; the pair fails, the host goes on.
        Err(EngineError::Net(why)) if work.pair => {
            if let Ok(mut f) = work.tally.failure.lock() {
                f.get_or_insert(why);
            }
            Ok(())
        }
        r => r,
    }
}

/// What arrived of a sending stream, credited to its snapshots: for TCP what the receiver's
/// kernel acknowledged (`TCP_INFO`'s `bytes_acked`, read as each second closes, so that each
/// second and the ramp's end are exact), for UDP the server's running count (its lines come
/// once a second, so a second's bytes may land in the next).
struct Credit<'w> {
    work: &'w NetWork,
    credited: u64,
    /// UDP: the receiver's count when it claimed more than this stream had sent (a count
    /// no honest receiver makes), with what had been sent; nothing more is credited.
    false_claim: Option<(u64, u64)>,
}

impl Credit<'_> {
    /// Adds what the server counted since the last call to the current second (UDP), when it
    /// is at most the `sent` bytes this stream had sent before the count was read: a count
    /// above them is a protocol error, counted once, and no count of that server is credited
    /// again.
    #[inline]
    fn counted(&mut self, ctx: &mut Ctx<'_>, sent: u64) {
        if let Some((counts, i, _)) = &self.work.counted {
            let now = counts[*i].load(Ordering::Acquire);
            if now > sent && self.false_claim.is_none() {
                ctx.rec.record_error(Op::Send, ErrorKind::Protocol, 0, 0);
                self.false_claim = Some((now, sent));
            }
            if self.false_claim.is_none() {
                self.add(ctx, now);
            }
        }
    }

    /// Adds what `stream`'s receiver acknowledged since the last call (TCP).
    #[inline]
    fn acked(&mut self, ctx: &mut Ctx<'_>, stream: &TcpStream) {
        if let Some(now) = bytes_acked(stream) {
            self.add(ctx, now);
        }
    }

    fn add(&mut self, ctx: &mut Ctx<'_>, now: u64) {
        if now > self.credited {
            ctx.rec.add_bytes(Op::Send, now - self.credited);
            self.credited = now;
        }
    }

    /// After the last datagram: waits (at most `FINAL`) for the server's final count, which
    /// comes once the session has ended, and credits it.
    fn last_counted(&mut self, ctx: &mut Ctx<'_>, sent: u64) {
        if let Some((_, _, ended)) = &self.work.counted {
            let until = Instant::now() + FINAL;
            while !ended.load(Ordering::Acquire) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        self.counted(ctx, sent);
    }

    /// After the last write: waits (at most `FINAL`) until the receiver acknowledged
    /// everything up to `written`, and credits it.
    fn last_acked(&mut self, ctx: &mut Ctx<'_>, stream: &TcpStream, written: u64) {
        let until = Instant::now() + FINAL;
        while bytes_acked(stream).is_some_and(|a| a < written) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(2));
        }
        let before = self.credited;
        self.acked(ctx, stream);
        if self.credited > before {
            // The stream's end is its last byte's arrival: its rate is over that time.
            ctx.pace.completed_at(Instant::now());
        }
    }
}

/// Bytes of `stream` its receiver acknowledged (Linux 4.1's `tcpi_bytes_acked`).
fn bytes_acked(stream: &TcpStream) -> Option<u64> {
    use std::os::fd::AsRawFd;
    // SAFETY: a zeroed tcp_info is a valid value of a plain C struct.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: the pointer and length describe `info`, which outlives the call.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(info.tcpi_bytes_acked)
}

/// A stream's read or write failed: the error counted by kind, and the failure in words,
/// with the server named.
#[cold]
fn stream_failed(ctx: &mut Ctx<'_>, work: &NetWork, op: Op, e: &std::io::Error) -> String {
    let kind = match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => ErrorKind::Timeout,
        std::io::ErrorKind::ConnectionReset
        | std::io::ErrorKind::BrokenPipe
        | std::io::ErrorKind::UnexpectedEof => ErrorKind::Reset,
        std::io::ErrorKind::ConnectionRefused => ErrorKind::Refused,
        _ => ErrorKind::Network,
    };
    ctx.rec.record_error(op, kind, 0, 0);
    match kind {
        ErrorKind::Timeout => format!(
            "{}: silent for {} s (the server or the path to it went away)",
            work.server,
            MAX_STALLS * STALL.as_secs() as u32
        ),
        _ => format!("{}: {e}", work.server),
    }
}

/// Bytes that compress to nothing less (a link that compresses is not measured by zeros).
fn payload(seed: u64, len: usize) -> Vec<u8> {
    let mut rng = seed | 1;
    (0..len.div_ceil(8))
        .flat_map(|_| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng.to_le_bytes()
        })
        .take(len)
        .collect()
}

fn tcp(
    ctx: &mut Ctx<'_>,
    work: &NetWork,
    mut stream: TcpStream,
    credit: &mut Credit<'_>,
) -> Result<(), EngineError> {
    let mut buf = payload(ctx.spec.seed, work.msg_size as usize);
    let op = net_op(work.mode);
    // Streams wait at most a second at a time, so that a stalled stream still ends with the
    // stage (and its figures keep the stage's length); ten seconds without progress is a
    // server gone. Round trips keep the session's 10 s: a message cut short breaks them.
    if work.mode != NetMode::Rtt {
        let _ = stream.set_write_timeout(Some(STALL));
        let _ = stream.set_read_timeout(Some(STALL));
    }
    // `bitrate`: this stream's bytes are due at `sent × 8 / bitrate` after its start.
    let paced = (work.bitrate > 0.0).then(|| (Instant::now(), 8.0 / work.bitrate));
    let mut sent = 0u64;
    // Bytes handed to the stream since it opened (the line that opened it included).
    let mut written = credit.credited;
    let mut stalls = 0u32;
    let mut failure = None;
    while !ctx.stop.load(Ordering::Relaxed) {
        let due = match (work.mode, &mut ctx.schedule) {
            (NetMode::Rtt, Some(s)) => Some(s.take()),
            _ => paced.map(|(t0, secs_per_byte)| {
                t0 + Duration::from_secs_f64(sent as f64 * secs_per_byte)
            }),
        };
        if let Some(due) = due {
            if ctx.pace.deadline().is_some_and(|d| due >= d) {
                break;
            }
            wait_until(due, ctx.stop);
        }
        let start = Instant::now();
        let moved = match work.mode {
            NetMode::Send | NetMode::Bidir => stream.write_all(&buf).map(|()| buf.len()),
            NetMode::Receive => stream.read(&mut buf),
            NetMode::Rtt => stream
                .write_all(&buf)
                .and_then(|()| stream.read_exact(&mut buf))
                .map(|()| 2 * buf.len()),
        };
        let now = Instant::now();
        if op == Op::Send && ctx.pace.rolls(now) {
            credit.acked(ctx, &stream);
        }
        ctx.pace.tick(now, &mut ctx.rec, ctx.tx);
        match moved {
            // The server ended the stream: it went away (its own time outlasts the stage).
            Ok(0) => {
                if !ctx.pace.expired(now) {
                    ctx.rec.record_error(op, ErrorKind::Reset, 0, 0);
                    failure = Some(format!("{}: the server closed the stream", work.server));
                }
                break;
            }
            Ok(n) => {
                stalls = 0;
                sent += n as u64;
                written += n as u64;
                let took = now.saturating_duration_since(start).as_nanos() as u64;
                match (op, due) {
                    // Counted where it arrives.
                    (Op::Send, _) => ctx.rec.record(op, 0, took),
                    (Op::Rtt, Some(due)) => ctx.rec.record_scheduled(
                        op,
                        n as u64,
                        now.saturating_duration_since(due).as_nanos() as u64,
                        took,
                    ),
                    _ => ctx.rec.record(op, n as u64, took),
                }
            }
            Err(e)
                if work.mode != NetMode::Rtt
                    && matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    )
                    && (ctx.pace.expired(now) || stalls + 1 < MAX_STALLS) =>
            {
                stalls += 1;
                if ctx.pace.expired(now) {
                    // Silent for the last seconds of the stage: gone, not merely slow.
                    if stalls >= 3 {
                        ctx.rec.record_error(op, ErrorKind::Timeout, 0, 0);
                        failure = Some(format!(
                            "{}: silent for the last {stalls} s of the stage (the server or the path to it went away)",
                            work.server
                        ));
                    }
                    break;
                }
                continue;
            }
            Err(e) => {
                failure = Some(stream_failed(ctx, work, op, &e));
                break;
            }
        }
        if ctx.pace.expired(now) {
            break;
        }
    }
    // What this end received (receive) or moved both ways (rtt), for the session's report.
    if op != Op::Send {
        work.tally.bytes.store(sent, Ordering::Relaxed);
    }
    if failure.is_none() && op == Op::Send {
        // The end of what this stream sends; the server reports once every stream ended.
        let _ = stream.shutdown(Shutdown::Write);
        credit.last_acked(ctx, &stream, written);
    }
    let _ = stream.shutdown(Shutdown::Both);
    failure.map_or(Ok(()), |f| Err(EngineError::Net(f)))
}

/// Datagrams at the stream's bitrate, each numbered and stamped with its send time (the
/// server counts loss, reordering and jitter from them). A datagram the kernel drops (a full
/// queue) is lost like any other: the receiver's count says so.
fn udp(
    ctx: &mut Ctx<'_>,
    work: &NetWork,
    socket: &UdpSocket,
    mark: [u8; 16],
    credit: &mut Credit<'_>,
) -> Result<(), EngineError> {
    let mut buf = payload(ctx.spec.seed, work.msg_size as usize);
    buf[..16].copy_from_slice(&mark);
    let per_sec = work.bitrate / 8.0 / f64::from(work.msg_size);
    let epoch = Instant::now();
    let mut sent = 0u64;
    let size = u64::from(work.msg_size);
    while !ctx.stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        credit.counted(ctx, sent * size);
        ctx.pace.tick(now, &mut ctx.rec, ctx.tx);
        if ctx.pace.expired(now) {
            break;
        }
        let due = (now.duration_since(epoch).as_secs_f64() * per_sec) as u64 + 1;
        while sent < due {
            let start = Instant::now();
            buf[16..24].copy_from_slice(&sent.to_le_bytes());
            let at = start.duration_since(epoch).as_nanos() as u64;
            buf[24..32].copy_from_slice(&at.to_le_bytes());
            if socket.send(&buf).is_ok() {
                let took = start.elapsed().as_nanos() as u64;
                ctx.rec.record(Op::Send, 0, took);
            }
            sent += 1;
        }
        let next = epoch + Duration::from_secs_f64(sent as f64 / per_sec);
        let wait = next.saturating_duration_since(Instant::now());
        if wait > Duration::from_micros(50) {
            std::thread::sleep(wait.min(Duration::from_millis(1)));
        }
    }
    work.tally.datagrams.store(sent, Ordering::Relaxed);
    credit.last_counted(ctx, sent * size);
    match credit.false_claim {
        Some((claimed, sent)) => Err(EngineError::Net(format!(
            "{}: the receiver claims {claimed} bytes received of the {sent} this stream sent: a peer whose counts are not to be believed (protocol error; its counts are not used)",
            work.server
        ))),
        None => Ok(()),
    }
}

/// CPU time of the calling thread, ns.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec the call writes.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The longest a stream's write or read waits before the worker looks at the clock again.
const STALL: Duration = Duration::from_secs(1);
/// Waits without progress after which the server is taken for gone.
const MAX_STALLS: u32 = 10;
/// The longest a sending stream waits for the server's final count after its last write.
const FINAL: Duration = Duration::from_secs(10);
