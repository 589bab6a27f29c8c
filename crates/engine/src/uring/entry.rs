//! The ring's submission entries: what every entry of a job has in common, worked out once
//! ([`Parts`]), and the entries of reads and writes made straight in the ring.

use io_uring::{opcode, squeue, types};
use stormark_spec::Ring;

use super::sys::{sqe, Sqe, IOSQE_FIXED_FILE};
use crate::ctx::Ctx;
use crate::data::Payload;
use crate::offsets::IoReq;

/// What every entry of a job has in common, worked out once: each file as entries name it
/// (its registered index, or its descriptor) with its region's start, the flags that say
/// which, the reads' opcode (fixed buffers or not) and each slot's read buffer. No I/O then
/// tests the job's features again (docs/performance.md).
pub(super) struct Parts {
    /// Per file: as entries name it, and its region's start.
    files: Vec<(i32, u64)>,
    flags: u8,
    read_code: u8,
    /// Which of fio's `registerfiles` and `fixedbufs` the ring has (for writes).
    features: Ring,
    /// Per slot, where its read lands (empty for a worker that does not read).
    reads: Vec<*mut u8>,
}

impl Parts {
    pub(super) fn new(
        ctx: &Ctx<'_>,
        fds: &[(types::Fd, u64)],
        features: Ring,
        depth: usize,
    ) -> Parts {
        Parts {
            files: fds
                .iter()
                .enumerate()
                .map(|(i, &(fd, base))| {
                    let named = if features.registered_files {
                        i as i32
                    } else {
                        fd.0
                    };
                    (named, base)
                })
                .collect(),
            flags: if features.registered_files {
                IOSQE_FIXED_FILE
            } else {
                0
            },
            read_code: if features.fixed_bufs {
                opcode::ReadFixed::CODE
            } else {
                opcode::Read::CODE
            },
            features,
            reads: ctx.bufs.read_addrs(depth),
        }
    }
}

/// Pushes `entry` into a queue with room for it.
#[inline(always)]
pub(super) fn push(sq: &mut io_uring::SubmissionQueue<'_>, entry: &squeue::Entry) {
    // SAFETY: the buffer region of the entry's slot stays valid and untouched until its
    // completion is reaped; the ring has one entry per slot.
    let pushed = unsafe { sq.push(entry) };
    debug_assert!(pushed.is_ok(), "room is made before");
}

/// The submission of a read, `req` in `slot`'s buffer: by the file's registered index and
/// the buffer's registered area where the job asks (fio's `registerfiles`, `fixedbufs`).
#[inline(always)]
pub(super) fn read_entry(parts: &Parts, slot: u32, req: &IoReq, ioprio: u16) -> squeue::Entry {
    let (file, base) = parts.files[req.file as usize];
    // A system call's worth of fields in one literal. Reads land in area 0 (the first
    // registered).
    sqe(Sqe {
        opcode: parts.read_code,
        flags: parts.flags,
        ioprio,
        fd: file,
        off: base + req.offset,
        addr: parts.reads[slot as usize] as u64,
        len: req.len,
        user_data: u64::from(slot),
        ..Sqe::default()
    })
}

/// Pushes the submission of a write, `req` from `slot`'s payload (plain, or vectored when
/// the data is made in pieces), made as [`read_entry`]'s. It pushes the entry itself: returned
/// from a call, the entry was copied from memory its fields had just been stored in.
#[inline]
pub(super) fn push_write(
    ctx: &mut Ctx<'_>,
    parts: &Parts,
    sq: &mut io_uring::SubmissionQueue<'_>,
    slot: u32,
    req: &IoReq,
    ioprio: u16,
) {
    let (file, base) = parts.files[req.file as usize];
    let offset = base + req.offset;
    let atomic = if ctx.spec.atomic { libc::RWF_ATOMIC } else { 0 };
    let plain = |opcode: u8, addr: *const u8, buf_index: u16| {
        sqe(Sqe {
            opcode,
            flags: parts.flags,
            ioprio,
            fd: file,
            off: offset,
            addr: addr as u64,
            len: req.len,
            rw_flags: atomic,
            user_data: u64::from(slot),
            buf_index,
            ..Sqe::default()
        })
    };
    let entry = match ctx.bufs.write(slot as usize, req, ctx.tag ^ ctx.issued) {
        Payload::Plain(p) => match ctx.bufs.pool_area(p).filter(|_| parts.features.fixed_bufs) {
            Some(area) => plain(opcode::WriteFixed::CODE, p, area),
            None => plain(opcode::Write::CODE, p, 0),
        },
        Payload::Vectored(iov, n) if parts.features.registered_files => {
            opcode::Writev::new(types::Fixed(req.file), iov, n)
                .offset(offset)
                .ioprio(ioprio)
                .build()
                .user_data(u64::from(slot))
        }
        Payload::Vectored(iov, n) => opcode::Writev::new(types::Fd(file), iov, n)
            .offset(offset)
            .ioprio(ioprio)
            .build()
            .user_data(u64::from(slot)),
    };
    push(sq, &entry);
}
