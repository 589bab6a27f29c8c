//! The io_uring backend: `iodepth` I/Os in flight, new submissions batched into the same
//! `io_uring_enter` that waits for the next completion.

use std::os::fd::AsRawFd;
use std::time::Instant;

use io_uring::{opcode, types, IoUring};
use stormark_stats::Op;

use crate::offsets::IoReq;
use crate::worker::Ctx;

/// Whether this kernel lets this process set up an io_uring (it may be missing, or disabled
/// by `kernel.io_uring_disabled` or a seccomp policy).
pub fn io_uring_available() -> Result<(), String> {
    IoUring::new(4).map(|_| ()).map_err(|e| e.to_string())
}

pub(crate) fn run(ctx: &mut Ctx<'_>) -> Result<(), String> {
    let depth = ctx.spec.iodepth.max(1) as usize;
    let mut ring = IoUring::new((depth as u32).next_power_of_two())
        .map_err(|e| format!("io_uring setup failed: {e}; use --engine psync"))?;
    let fds: Vec<types::Fd> = ctx.files.iter().map(|f| types::Fd(f.as_raw_fd())).collect();
    let bs_max = ctx.spec.bs_max as usize;
    // user_data indexes this slab of in-flight I/Os (see io-uring's examples/tcp_echo.rs).
    let placeholder = IoReq {
        op: Op::Read,
        file: 0,
        offset: 0,
        len: 0,
    };
    let mut slots: Vec<(IoReq, Instant)> = vec![(placeholder, Instant::now()); depth];
    let mut free: Vec<u32> = (0..depth as u32).rev().collect();
    let mut inflight = 0usize;
    let mut draining = false;
    loop {
        if !draining && !free.is_empty() {
            let submit_at = Instant::now();
            let mut sq = ring.submission();
            while let Some(&slot) = free.last() {
                let Some(req) = ctx.next_req() else {
                    draining = true;
                    break;
                };
                free.pop();
                let ptr = ctx.buf.at(slot as usize * bs_max);
                let fd = fds[req.file as usize];
                let entry = match req.op {
                    Op::Read => opcode::Read::new(fd, ptr, req.len)
                        .offset(req.offset)
                        .build(),
                    Op::Write => opcode::Write::new(fd, ptr, req.len)
                        .offset(req.offset)
                        .build(),
                }
                .user_data(u64::from(slot));
                // SAFETY: the buffer region of this slot stays valid and untouched until its
                // completion is reaped below; the ring has one entry per slot.
                unsafe { sq.push(&entry) }.expect("the ring has an entry for every free slot");
                slots[slot as usize] = (req, submit_at);
                inflight += 1;
            }
        }
        if inflight == 0 {
            return Ok(());
        }
        match ring.submit_and_wait(1) {
            Ok(_) => {}
            Err(e)
                if e.raw_os_error() == Some(libc::EINTR)
                    || e.raw_os_error() == Some(libc::EBUSY) =>
            {
                continue
            }
            Err(e) => return Err(format!("io_uring_enter failed: {e}")),
        }
        // One timestamp per completion batch, as fio does (fio_gettime in init_icd).
        let now = Instant::now();
        ctx.pace.tick(now, &mut ctx.rec, ctx.tx);
        for cqe in ring.completion() {
            let slot = cqe.user_data() as u32;
            let (req, started) = slots[slot as usize];
            ctx.complete(
                &req,
                i64::from(cqe.result()),
                now.saturating_duration_since(started).as_nanos() as u64,
            );
            free.push(slot);
            inflight -= 1;
        }
        if ctx.pace.expired(now) || ctx.failing().is_some() {
            draining = true;
        }
    }
}
