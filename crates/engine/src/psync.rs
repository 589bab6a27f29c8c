//! The psync backend: `pread`/`pwrite`, one I/O at a time per worker (fio's `psync`).

use stormark_stats::Op;

use crate::ctx::{wait_until, Ctx, MAX_CONSECUTIVE_ERRORS};
use crate::data::Payload;
use crate::error::EngineError;
use crate::syscall::{or_errno, syscall6};

/// Runs the loop until the stop rule, the deadline or too many errors in a row.
pub(crate) fn run_psync(ctx: &mut Ctx<'_>) -> Result<(), EngineError> {
    let fds = ctx.regions();
    // A trim releases a file's range by punching a hole, a device's by a discard.
    let devices: Vec<bool> = if ctx.spec.trim != 0 {
        use std::os::unix::fs::FileTypeExt;
        ctx.files
            .iter()
            .map(|f| f.metadata().is_ok_and(|m| m.file_type().is_block_device()))
            .collect()
    } else {
        Vec::new()
    };
    // fio's thinktime, checked only where it is asked for.
    let thinks = ctx.spec.think.is_some();
    // fio's flow, likewise.
    let flows = ctx.spec.flow_group.is_some();
    // fio's zoned mode: each I/O's zone let go once it completes.
    let zoned = ctx.zones.is_some();
    // fio's atomic: each write all or nothing (checked possible before the load).
    let atomic = ctx.spec.atomic;
    loop {
        if flows && !ctx.flow_wait() {
            break;
        }
        let Some(req) = ctx.next_req() else {
            break;
        };
        let due = ctx.schedule.as_mut().map(|s| {
            let t = s.take();
            wait_until(t, ctx.stop);
            t
        });
        let (fd, base) = fds[req.file as usize];
        let len = req.len as usize;
        let off = (base + req.offset) as libc::off_t;
        let payload = (req.op == Op::Write).then(|| ctx.bufs.write(0, &req, ctx.tag ^ ctx.issued));
        let start = ctx.clock.ticks();
        // The byte count, or -errno.
        // SAFETY: the read region and the payload hold at least req.len <= bs_max bytes and
        // stay untouched until the call returns; fd is open for this op.
        let res = unsafe {
            match payload {
                None if req.op == Op::Trim => {
                    or_errno(trim(fd, off, len, devices[req.file as usize]))
                }
                None => pread(fd, ctx.bufs.read_at(0).cast(), len, off),
                Some(Payload::Plain(p)) if atomic => {
                    let iov = libc::iovec {
                        iov_base: p.cast_mut().cast(),
                        iov_len: len,
                    };
                    pwritev2(fd, &iov, 1, off, libc::RWF_ATOMIC)
                }
                Some(Payload::Plain(p)) => pwrite(fd, p.cast(), len, off),
                Some(Payload::Vectored(iov, n)) => pwritev2(fd, iov, n as usize, off, 0),
            }
        } as i64;
        let end = ctx.clock.ticks();
        // The zone let go as soon as its I/O is done, as fio's is (zbd_queue_io), before the
        // I/O is counted.
        if zoned {
            ctx.zone_done(&req);
        }
        let service = ctx.clock.ns(end.saturating_sub(start));
        let over = ctx.pace_at(end);
        ctx.complete_timed(&req, res, service, end, due);
        ctx.bufs.done(0, res == len as i64);
        if req.op == Op::Write && ctx.write_done() {
            ctx.sync_file(fd, req.file, ctx.spec.datasync);
        }
        if over || ctx.consecutive_errors >= MAX_CONSECUTIVE_ERRORS {
            break;
        }
        if thinks && ctx.think_due() {
            ctx.think();
        }
    }
    ctx.pace_settle();
    Ok(())
}

/// Releases `len` bytes at `off`: a hole punched in a file (its size kept), a discard of a
/// block device's range (`BLKDISCARD`). The length on success, as a read or write returns.
#[cold]
pub(crate) fn trim(fd: i32, off: libc::off_t, len: usize, device: bool) -> isize {
    let r = if device {
        let range: [u64; 2] = [off as u64, len as u64];
        // SAFETY: BLKDISCARD reads two u64s (start, length) from the pointer, valid here.
        unsafe { libc::ioctl(fd, BLKDISCARD, range.as_ptr()) }
    } else {
        // SAFETY: fallocate on an open descriptor; no memory is passed.
        unsafe {
            libc::fallocate(
                fd,
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                off,
                len as libc::off_t,
            )
        }
    };
    if r < 0 {
        -1
    } else {
        len as isize
    }
}

/// `_IO(0x12, 119)`: discard a range of a block device.
const BLKDISCARD: libc::c_ulong = 0x1277;

/// pread(2) as the system call itself (inline, [`syscall6`]): the byte count, or -errno.
/// glibc's `pread` is a cancellation point: in a process with threads it marks the thread
/// cancellable around every call (two more calls, each an atomic update), about 4% of a
/// page-cached 4 KiB read; stormark never cancels a thread.
///
/// # Safety
/// As `pread`: `buf` holds `len` writable bytes until the call returns.
#[inline(always)]
#[cfg(target_pointer_width = "64")]
unsafe fn pread(fd: i32, buf: *mut libc::c_void, len: usize, off: libc::off_t) -> isize {
    let args = [fd as usize, buf as usize, len, off as usize, 0, 0];
    // SAFETY: the caller's promise, as pread's.
    unsafe { syscall6(libc::SYS_pread64, args) }
}

/// pwrite(2) as the system call itself, as [`pread`].
///
/// # Safety
/// As `pwrite`: `buf` holds `len` readable bytes until the call returns.
#[inline(always)]
#[cfg(target_pointer_width = "64")]
unsafe fn pwrite(fd: i32, buf: *const libc::c_void, len: usize, off: libc::off_t) -> isize {
    let args = [fd as usize, buf as usize, len, off as usize, 0, 0];
    // SAFETY: the caller's promise, as pwrite's.
    unsafe { syscall6(libc::SYS_pwrite64, args) }
}

/// pwritev2(2) as the system call itself, as [`pread`]: the writes made in pieces (dedupe,
/// compression) and fio's atomic writes (`flags` `RWF_ATOMIC`). glibc's `pwritev` and
/// `pwritev2` are cancellation points, each call paying what `pwrite`'s paid before it was
/// made this way (docs/performance.md).
///
/// # Safety
/// As `pwritev2`: `iov` holds `n` entries, each `iov_len` readable bytes, until the call
/// returns.
#[inline(always)]
#[cfg(target_pointer_width = "64")]
unsafe fn pwritev2(
    fd: i32,
    iov: *const libc::iovec,
    n: usize,
    off: libc::off_t,
    flags: libc::c_int,
) -> isize {
    // The offset's low and high halves (`pos_l`, `pos_h`): on a 64-bit kernel the low
    // register holds all of it and the high one is ignored.
    let args = [
        fd as usize,
        iov as usize,
        n,
        off as usize,
        0,
        flags as usize,
    ];
    // SAFETY: the caller's promise, as pwritev2's.
    unsafe { syscall6(libc::SYS_pwritev2, args) }
}

/// Where a 64-bit offset is split over two registers, glibc's own, its errno the result.
///
/// # Safety
/// As `pread`.
#[cfg(not(target_pointer_width = "64"))]
unsafe fn pread(fd: i32, buf: *mut libc::c_void, len: usize, off: libc::off_t) -> isize {
    // SAFETY: as the caller's.
    or_errno(unsafe { libc::pread(fd, buf, len, off) })
}

/// As [`pread`], for writes.
///
/// # Safety
/// As `pwrite`.
#[cfg(not(target_pointer_width = "64"))]
unsafe fn pwrite(fd: i32, buf: *const libc::c_void, len: usize, off: libc::off_t) -> isize {
    // SAFETY: as the caller's.
    or_errno(unsafe { libc::pwrite(fd, buf, len, off) })
}

/// As [`pwritev2`].
///
/// # Safety
/// As `pwritev2`.
#[cfg(not(target_pointer_width = "64"))]
unsafe fn pwritev2(
    fd: i32,
    iov: *const libc::iovec,
    n: usize,
    off: libc::off_t,
    flags: libc::c_int,
) -> isize {
    // SAFETY: as the caller's.
    or_errno(unsafe { libc::pwritev2(fd, iov, n as libc::c_int, off, flags) } as isize)
}
