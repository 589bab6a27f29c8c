//! The net backend: one stream of a `kind = "net"` job's session per worker. Each write
//! (send), read (receive) or message and its echo (rtt) is one I/O, timed and counted as file
//! I/Os are, so that a job file measures storage while the network is loaded in one stage.

use std::io::{Read, Write};
use std::net::Shutdown;
use std::time::Instant;

use stormark_spec::NetMode;
use stormark_stats::{ErrorKind, Op};

use crate::ctx::Ctx;
use crate::error::EngineError;
use crate::work::NetWork;

/// The operation a net worker's I/Os count as.
pub fn net_op(mode: NetMode) -> Op {
    match mode {
        NetMode::Send => Op::Send,
        NetMode::Receive => Op::Receive,
        NetMode::Rtt => Op::Rtt,
    }
}

/// Streams until the stage's end, a stop, or the server going away (a failure naming it).
pub(crate) fn run_net(ctx: &mut Ctx<'_>, work: &NetWork) -> Result<(), EngineError> {
    let mut stream = work
        .stream
        .lock()
        .ok()
        .and_then(|mut s| s.take())
        .ok_or_else(|| EngineError::Net(format!("{}: no stream for this worker", work.server)))?;
    // Bytes that compress to nothing less, made once (a link that compresses is not measured
    // by zeros).
    let mut rng = ctx.spec.seed | 1;
    let mut buf: Vec<u8> = (0..work.msg_size.div_ceil(8))
        .flat_map(|_| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng.to_le_bytes()
        })
        .take(work.msg_size as usize)
        .collect();
    let op = net_op(work.mode);
    // Streams wait at most a second at a time, so that a stalled stream still ends with the
    // stage (and its figures keep the stage's length); ten seconds without progress is a
    // server gone. Round trips keep the session's 10 s: a message cut short breaks them.
    if work.mode != NetMode::Rtt {
        let _ = stream.set_write_timeout(Some(STALL));
        let _ = stream.set_read_timeout(Some(STALL));
    }
    let mut stalls = 0u32;
    let mut failure = None;
    while !ctx.stop.load(std::sync::atomic::Ordering::Relaxed) {
        let start = Instant::now();
        let moved = match work.mode {
            NetMode::Send => stream.write_all(&buf).map(|()| buf.len()),
            NetMode::Receive => stream.read(&mut buf),
            NetMode::Rtt => stream
                .write_all(&buf)
                .and_then(|()| stream.read_exact(&mut buf))
                .map(|()| 2 * buf.len()),
        };
        let now = Instant::now();
        ctx.pace.tick(now, &mut ctx.rec, ctx.tx);
        match moved {
            // The server ended the stream: it went away (its own time outlasts the stage).
            Ok(0) => {
                if !ctx.pace.expired(now) {
                    failure = Some(format!("{}: the server closed the stream", work.server));
                }
                break;
            }
            Ok(n) => {
                stalls = 0;
                let took = now.saturating_duration_since(start).as_nanos() as u64;
                ctx.rec.record(op, n as u64, took);
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
                            "{}: no progress for the last {stalls} s of the stage (the server or the path to it went away)",
                            work.server
                        ));
                    }
                    break;
                }
                continue;
            }
            Err(e) => {
                let kind = match e.kind() {
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                        ErrorKind::Timeout
                    }
                    std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::UnexpectedEof => ErrorKind::Reset,
                    std::io::ErrorKind::ConnectionRefused => ErrorKind::Refused,
                    _ => ErrorKind::Network,
                };
                ctx.rec.record_error(op, kind, 0, 0);
                failure = Some(match kind {
                    ErrorKind::Timeout => format!(
                        "{}: no progress for {} s (the server or the path to it went away)",
                        work.server,
                        MAX_STALLS * STALL.as_secs() as u32
                    ),
                    _ => format!("{}: {e}", work.server),
                });
                break;
            }
        }
        if ctx.pace.expired(now) {
            break;
        }
    }
    let _ = stream.shutdown(Shutdown::Both);
    failure.map_or(Ok(()), |f| Err(EngineError::Net(f)))
}

/// The longest a stream's write or read waits before the worker looks at the clock again.
const STALL: std::time::Duration = std::time::Duration::from_secs(1);
/// Waits without progress after which the server is taken for gone.
const MAX_STALLS: u32 = 10;
