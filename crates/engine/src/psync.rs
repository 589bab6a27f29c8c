//! The psync backend: `pread`/`pwrite`, one I/O at a time per worker (fio's `psync`).

use std::os::fd::AsRawFd;
use std::time::Instant;

use stormark_stats::Op;

use crate::ctx::{wait_until, Ctx, MAX_CONSECUTIVE_ERRORS};
use crate::error::EngineError;

/// Runs the loop until the stop rule, the deadline or too many errors in a row.
pub(crate) fn run_psync(ctx: &mut Ctx<'_>) -> Result<(), EngineError> {
    let buf = ctx.buf.at(0);
    let fds: Vec<i32> = ctx.files.iter().map(|f| f.as_raw_fd()).collect();
    while let Some(req) = ctx.next_req() {
        let due = ctx.schedule.as_mut().map(|s| {
            let t = s.take();
            wait_until(t, ctx.stop);
            t
        });
        let fd = fds[req.file as usize];
        if req.op == Op::Write && !ctx.spec.zero_buffers {
            ctx.buf
                .scramble(0, req.len as usize, req.offset, ctx.tag ^ ctx.issued);
        }
        let start = Instant::now();
        // SAFETY: buf holds at least bs_max >= req.len bytes; fd is open for this op.
        let res = unsafe {
            match req.op {
                Op::Read => {
                    libc::pread(fd, buf.cast(), req.len as usize, req.offset as libc::off_t)
                }
                // The offset generator makes only reads and writes.
                _ => libc::pwrite(fd, buf.cast(), req.len as usize, req.offset as libc::off_t),
            }
        };
        let res = if res < 0 {
            -i64::from(
                std::io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EIO),
            )
        } else {
            res as i64
        };
        let now = Instant::now();
        ctx.pace.tick(now, &mut ctx.rec, ctx.tx);
        ctx.complete_at(&req, res, now, start, due);
        if req.op == Op::Write && ctx.write_done() {
            ctx.sync_file(fd, req.file, ctx.spec.datasync);
        }
        if ctx.pace.expired(now) || ctx.consecutive_errors >= MAX_CONSECUTIVE_ERRORS {
            break;
        }
    }
    Ok(())
}
