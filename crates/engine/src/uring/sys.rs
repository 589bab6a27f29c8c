//! The io_uring backend's own system-call side: how the ring is entered (by its registered
//! descriptor, one inline system call) and the entries of the plain reads and writes, built
//! whole.

use io_uring::squeue;

/// `IORING_ENTER_GETEVENTS` and `IORING_ENTER_SQ_WAKEUP` from linux/io_uring.h.
pub(super) const IORING_ENTER_GETEVENTS: u32 = 1;
pub(super) const IORING_ENTER_SQ_WAKEUP: u32 = 2;
/// How this thread names its ring to `io_uring_enter`: by the index of the ring's descriptor
/// registered with the thread, as t/io_uring's `-X1` (IORING_REGISTER_RING_FDS, 5.18; no
/// descriptor lookup per call), or by the descriptor where the kernel has it not. The index
/// is given back when dropped: a thread holds 16 at most, each keeping its ring's memory
/// until the thread exits.
pub(super) struct RingFd {
    fd: i32,
    registered: Option<u32>,
    /// Each call asks for completions, also one that does not wait (fio's one I/O a
    /// submission; see [`submit`]).
    pub(super) eager: bool,
}

/// `IORING_ENTER_REGISTERED_RING`, and `IORING_(UN)REGISTER_RING_FDS`, from linux/io_uring.h.
const IORING_ENTER_REGISTERED_RING: u32 = 16;
const IORING_REGISTER_RING_FDS: libc::c_long = 20;
const IORING_UNREGISTER_RING_FDS: libc::c_long = 21;

/// struct io_uring_rsrc_update of linux/io_uring.h.
#[repr(C)]
struct RsrcUpdate {
    offset: u32,
    resv: u32,
    data: u64,
}

impl RingFd {
    pub(super) fn new(fd: i32, eager: bool) -> RingFd {
        // Any free slot (-1): the kernel says which in `offset`.
        let mut up = RsrcUpdate {
            offset: u32::MAX,
            resv: 0,
            data: fd as u64,
        };
        // SAFETY: one io_uring_rsrc_update that outlives the call, on the ring's descriptor.
        let r = unsafe {
            libc::syscall(
                libc::SYS_io_uring_register,
                fd,
                IORING_REGISTER_RING_FDS,
                &mut up as *mut RsrcUpdate,
                1,
            )
        };
        RingFd {
            fd,
            registered: (r == 1).then_some(up.offset),
            eager,
        }
    }

    /// One `io_uring_enter` with no signal mask: `to_submit` entries, waiting for
    /// `min_complete` completions where `flags` has GETEVENTS.
    #[inline(always)]
    pub(super) fn enter(
        &self,
        to_submit: u32,
        min_complete: u32,
        flags: u32,
    ) -> std::io::Result<()> {
        let (fd, flags) = match self.registered {
            Some(i) => (i as i32, flags | IORING_ENTER_REGISTERED_RING),
            None => (self.fd, flags),
        };
        // SAFETY: no argument struct is passed (null, size 0); the counts refer to entries
        // already in the submission queue.
        let r = unsafe { enter_raw(fd, to_submit, min_complete, flags) };
        if r < 0 {
            return Err(std::io::Error::from_raw_os_error(-r as i32));
        }
        Ok(())
    }
}

impl Drop for RingFd {
    fn drop(&mut self) {
        if let Some(offset) = self.registered {
            let up = RsrcUpdate {
                offset,
                resv: 0,
                data: 0,
            };
            // SAFETY: as in `new`; the ring's descriptor is still open (the ring is dropped
            // after this).
            unsafe {
                libc::syscall(
                    libc::SYS_io_uring_register,
                    self.fd,
                    IORING_UNREGISTER_RING_FDS,
                    &up as *const RsrcUpdate,
                    1,
                );
            }
        }
    }
}

/// The system call itself, inline where it can be ([`crate::syscall::syscall6`]): the
/// result, or `-errno`.
///
/// # Safety
/// As `io_uring_enter(2)` with a null argument.
#[inline(always)]
unsafe fn enter_raw(fd: i32, to_submit: u32, min_complete: u32, flags: u32) -> isize {
    let args = [
        fd as usize,
        to_submit as usize,
        min_complete as usize,
        flags as usize,
        0,
        0,
    ];
    // SAFETY: as the caller's; no argument struct (null, size 0).
    unsafe { crate::syscall::syscall6(libc::SYS_io_uring_enter, args) }
}

/// `IOSQE_FIXED_FILE` of linux/io_uring.h: `fd` is an index into the registered files.
pub(super) const IOSQE_FIXED_FILE: u8 = 1;

/// struct io_uring_sqe of linux/io_uring.h as the plain reads and writes use it (the kernel's
/// ABI: 64 bytes, these offsets). Built whole in one literal, it is written into the queue
/// field by field; the crate's builders set fields of a zeroed entry, whose copy into the
/// queue read back bytes just stored and stalled on it (0.8% of a page-cached run).
#[repr(C)]
#[derive(Default, Clone, Copy)]
pub(super) struct Sqe {
    pub(super) opcode: u8,
    pub(super) flags: u8,
    pub(super) ioprio: u16,
    pub(super) fd: i32,
    pub(super) off: u64,
    pub(super) addr: u64,
    pub(super) len: u32,
    pub(super) rw_flags: i32,
    pub(super) user_data: u64,
    pub(super) buf_index: u16,
    pub(super) personality: u16,
    pub(super) file_index: u32,
    pub(super) addr3: u64,
    pub(super) pad: u64,
}

/// The crate's entry of `sqe`.
#[inline(always)]
pub(super) fn sqe(sqe: Sqe) -> squeue::Entry {
    // SAFETY: squeue::Entry is `#[repr(C)]` around the kernel's io_uring_sqe, of which `Sqe`
    // is the same 64 bytes (the sizes are checked by transmute; the fields by a test
    // against the crate's own builders).
    unsafe { std::mem::transmute::<Sqe, squeue::Entry>(sqe) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use io_uring::{opcode, types};

    /// The entries built whole (`Sqe`) are, byte for byte, those of the crate's builders: the
    /// layout the transmute relies on.
    #[test]
    fn sqe_literals_are_the_crates_entries() {
        let bytes = |e: squeue::Entry| unsafe { std::mem::transmute::<squeue::Entry, [u8; 64]>(e) };
        let buf = 0x7f00_1234_5000_u64 as *mut u8;
        let (off, len, prio, slot) = (0x1234_5678_9abc_u64, 4096u32, 0x6003u16, 29u32);
        let ours = |opcode: u8, flags: u8, fd: i32, rw_flags: i32, buf_index: u16| {
            bytes(sqe(Sqe {
                opcode,
                flags,
                ioprio: prio,
                fd,
                off,
                addr: buf as u64,
                len,
                rw_flags,
                user_data: u64::from(slot),
                buf_index,
                ..Sqe::default()
            }))
        };
        let theirs = [
            opcode::Read::new(types::Fd(7), buf, len)
                .offset(off)
                .ioprio(prio)
                .build(),
            opcode::Read::new(types::Fixed(3), buf, len)
                .offset(off)
                .ioprio(prio)
                .build(),
            opcode::ReadFixed::new(types::Fd(7), buf, len, 0)
                .offset(off)
                .ioprio(prio)
                .build(),
            opcode::ReadFixed::new(types::Fixed(3), buf, len, 0)
                .offset(off)
                .ioprio(prio)
                .build(),
            opcode::Write::new(types::Fd(7), buf, len)
                .offset(off)
                .ioprio(prio)
                .rw_flags(libc::RWF_ATOMIC)
                .build(),
            opcode::WriteFixed::new(types::Fixed(3), buf, len, 1)
                .offset(off)
                .ioprio(prio)
                .rw_flags(0)
                .build(),
        ]
        .map(|e| bytes(e.user_data(u64::from(slot))));
        let mine = [
            ours(opcode::Read::CODE, 0, 7, 0, 0),
            ours(opcode::Read::CODE, IOSQE_FIXED_FILE, 3, 0, 0),
            ours(opcode::ReadFixed::CODE, 0, 7, 0, 0),
            ours(opcode::ReadFixed::CODE, IOSQE_FIXED_FILE, 3, 0, 0),
            ours(opcode::Write::CODE, 0, 7, libc::RWF_ATOMIC, 0),
            ours(opcode::WriteFixed::CODE, IOSQE_FIXED_FILE, 3, 0, 1),
        ];
        for (i, (a, b)) in theirs.iter().zip(&mine).enumerate() {
            assert_eq!(a, b, "entry {i}");
        }
    }
}
