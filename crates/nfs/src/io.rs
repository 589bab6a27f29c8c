//! READ, WRITE and COMMIT by file handle, at the worker's depth: libnfs's raw RPCs
//! (`rpc_nfs3_read_async`, `_write_async`, `_commit_async`) on the handle a file's CREATE gave,
//! never a path resolved again from the export's root. An I/O larger than the server takes in
//! one call (libnfs's `readmax` and `writemax`, at most 1 MiB) goes as several RPCs in flight
//! together, completed as one, as libnfs's own `nfs_pread_async` splits it; unlike that call,
//! nothing is allocated here per I/O (libnfs's RPC layer allocates its message, as it does for
//! every call).

use std::cell::Cell;
use std::ffi::{c_int, c_void};

use crate::ns::{errno_of, Fh3, PostOpAttr};
use crate::{Client, Completion, Dir, NfsError, DONE};

/// `READ3args` and `COMMIT3args` (the same fields).
#[repr(C)]
pub(crate) struct RangeArgs {
    file: Fh3,
    offset: u64,
    count: u32,
}

/// `WRITE3args`.
#[repr(C)]
pub(crate) struct WriteArgs {
    file: Fh3,
    offset: u64,
    count: u32,
    /// `stable_how`: 0, UNSTABLE (a kernel client's; COMMIT makes it durable).
    stable: u32,
    data_len: u32,
    data_val: *const u8,
}

/// `READ3res` when its status is NFS3_OK.
#[repr(C)]
struct ReadOk {
    status: u32,
    attrs: PostOpAttr,
    count: u32,
    eof: u32,
    data_len: u32,
    data_val: *const u8,
}

/// `pre_op_attr`.
#[repr(C)]
struct PreOpAttr {
    follows: u32,
    size: u64,
    mtime: [u32; 2],
    ctime: [u32; 2],
}

/// `WRITE3res` when its status is NFS3_OK.
#[repr(C)]
struct WriteOk {
    status: u32,
    before: PreOpAttr,
    after: PostOpAttr,
    count: u32,
    committed: u32,
    verf: [u8; 8],
}

/// The raw calls, from the library `ffi` loaded (one table with the namespace's).
pub(crate) fn raw() -> Result<&'static crate::ns::Raw, String> {
    crate::ns::raw_calls()
}

/// The largest READ and WRITE a mounted context sends in one RPC (what its server's FSINFO
/// allows, at most libnfs's 1 MiB), and its RPC context.
pub(crate) fn limits(ctx: *mut c_void) -> Result<(u32, u32, *mut c_void), String> {
    let r = raw()?;
    let clamp = |n: u64| u32::try_from(n).unwrap_or(u32::MAX).clamp(4096, 1 << 20);
    // SAFETY: a mounted context.
    unsafe {
        Ok((
            clamp((r.readmax)(ctx)),
            clamp((r.writemax)(ctx)),
            (r.rpc_context)(ctx),
        ))
    }
}

/// An I/O in flight: where a read lands, how many of its RPCs are still out, what they moved.
#[derive(Clone, Copy)]
pub(crate) struct Pending {
    tag: u64,
    buf: *mut u8,
    dir: Dir,
    left: u32,
    moved: u32,
    /// The first errno one of its RPCs failed with (0: none).
    errno: i32,
}

impl Pending {
    pub(crate) const NONE: Pending = Pending {
        tag: 0,
        buf: std::ptr::null_mut(),
        dir: Dir::Read,
        left: 0,
        moved: 0,
        errno: 0,
    };
}

/// One RPC of an I/O: its I/O, and where its bytes lie in the I/O's buffer.
#[derive(Clone, Copy)]
pub(crate) struct Part {
    io: *const Cell<Pending>,
    at: u32,
    len: u32,
}

impl Part {
    pub(crate) const NONE: Part = Part {
        io: std::ptr::null(),
        at: 0,
        len: 0,
    };
}

/// How many RPCs an I/O of `len` bytes takes, each at most `max`.
fn parts_of(len: u32, max: u32) -> u32 {
    len.div_ceil(max).max(1)
}

impl Client {
    /// Makes room for I/Os of up to `len` bytes in every slot (so that none is made during
    /// the load); larger ones still go, with room made when their slot is first used.
    pub fn reserve(&mut self, len: u32) {
        let n = parts_of(len, self.readmax.min(self.writemax)) as usize;
        for slot in 0..self.parts.len() {
            self.grow(slot, n);
        }
    }

    fn grow(&mut self, slot: usize, n: usize) {
        if self.parts[slot].len() < n {
            // The slot is free: none of its parts is referred to by an RPC in flight.
            self.parts[slot] = vec![Part::NONE; n].into_boxed_slice();
        }
    }

    /// The file to read and write by its handle (what its CREATE or LOOKUP gave), as the next
    /// file index: nothing is looked up, and whatever is put under its name later is never
    /// reached through it.
    pub fn hold(&mut self, file: crate::Handle) -> u32 {
        self.files.push(file);
        self.files.len() as u32 - 1
    }

    /// RPCs submitted and not yet completed.
    pub fn inflight(&self) -> usize {
        self.session.inflight
    }

    /// Queues a READ into, or a WRITE from, the `len` bytes at `buf`, at `offset` of held file
    /// `file`, or a COMMIT of the file (`buf` unused); its completion comes from
    /// [`Client::wait`] with `tag` (below the `slots` the client was made with).
    ///
    /// # Safety
    /// For a read or write, `buf` must hold `len` bytes that stay valid, and untouched by
    /// anything else, until the RPC's completion has been taken.
    pub unsafe fn submit(
        &mut self,
        dir: Dir,
        file: u32,
        offset: u64,
        buf: *mut u8,
        len: u32,
        tag: u64,
    ) -> Result<(), NfsError> {
        if self.session.broken {
            return Err(NfsError::Session("the connection failed earlier".into()));
        }
        if usize::try_from(tag).map_or(true, |s| s >= self.pending.len()) {
            return Err(NfsError::Session(format!(
                "tag {tag} past the client's slots"
            )));
        }
        let fh = self.held(file)?;
        // SAFETY: the caller's; `fh` points into `files`, which is not changed meanwhile.
        unsafe { self.send(dir, fh, offset, buf, len, tag) }
    }

    fn held(&self, file: u32) -> Result<Fh3, NfsError> {
        let Some(h) = self.files.get(file as usize) else {
            return Err(NfsError::Session(format!("no file {file} held")));
        };
        Ok(h.fh3())
    }

    /// [`Client::submit`] to the file `fh`, whose bytes stay valid until this returns.
    unsafe fn send(
        &mut self,
        dir: Dir,
        fh: Fh3,
        offset: u64,
        buf: *mut u8,
        len: u32,
        tag: u64,
    ) -> Result<(), NfsError> {
        let slot = tag as usize;
        let max = match dir {
            Dir::Read => self.readmax,
            Dir::Write => self.writemax,
            Dir::Commit => u32::MAX,
        };
        let n = parts_of(len, max);
        self.grow(slot, n as usize);
        self.pending[slot].set(Pending {
            tag,
            buf,
            dir,
            left: n,
            moved: 0,
            errno: 0,
        });
        let io: *const Cell<Pending> = &self.pending[slot];
        let raw = raw().map_err(NfsError::Library)?;
        for i in 0..n {
            // Past the first part only when `max` is below `len`.
            let at = i * max;
            let count = if dir == Dir::Commit {
                0
            } else {
                (len - at).min(max)
            };
            self.parts[slot][i as usize] = Part { io, at, len: count };
            let private = (&self.parts[slot][i as usize] as *const Part)
                .cast_mut()
                .cast::<c_void>();
            let offset = offset + u64::from(at);
            // SAFETY: a mounted context's RPC context; the arguments (and the held handle's
            // bytes they point to) are encoded before the call returns; `private` stays
            // valid (a slot's parts are replaced only while it is free) until the callback;
            // the caller keeps `buf` valid.
            let rc = unsafe {
                match dir {
                    Dir::Read => (raw.read)(
                        self.rpc,
                        io_done,
                        &mut RangeArgs {
                            file: fh,
                            offset,
                            count,
                        },
                        private,
                    ),
                    Dir::Write => (raw.write)(
                        self.rpc,
                        io_done,
                        &mut WriteArgs {
                            file: fh,
                            offset,
                            count,
                            stable: 0,
                            data_len: count,
                            data_val: buf.add(at as usize).cast_const(),
                        },
                        private,
                    ),
                    // COMMIT of the whole file (offset 0, count 0), as fsync's.
                    Dir::Commit => (raw.commit)(
                        self.rpc,
                        io_done,
                        &mut RangeArgs {
                            file: fh,
                            offset: 0,
                            count: 0,
                        },
                        private,
                    ),
                }
            };
            if rc != 0 {
                if i == 0 {
                    return Err(NfsError::Session(self.error()));
                }
                // The parts sent complete it; those not sent fail it.
                let mut p = self.pending[slot].get();
                p.left = i;
                p.errno = libc::ENOMEM;
                self.pending[slot].set(p);
                break;
            }
        }
        self.session.inflight += 1;
        Ok(())
    }

    stormark_dlclient::wait_method!("server", NfsError);

    /// Reads `buf.len()` bytes at `offset` of held file `file`, waiting for them: the bytes
    /// read, or `Ok(Err(errno))` when the server failed the READ. Only with nothing else in
    /// flight.
    pub fn read_at(
        &mut self,
        file: u32,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<Result<u32, i32>, NfsError> {
        let (ptr, len) = (buf.as_mut_ptr(), buf.len());
        let fh = self.held(file)?;
        self.one(Dir::Read, fh, offset, ptr, len)
    }

    /// Writes `buf` at `offset` of held file `file`, waiting for the server's answer. Only
    /// with nothing else in flight.
    pub fn write_at(
        &mut self,
        file: u32,
        offset: u64,
        buf: &[u8],
    ) -> Result<Result<u32, i32>, NfsError> {
        // A write's buffer is only read (encoded into the call).
        let fh = self.held(file)?;
        self.one(Dir::Write, fh, offset, buf.as_ptr().cast_mut(), buf.len())
    }

    /// Reads into `buf` at `offset` of the file `file` (not held: a file of a meta tree),
    /// waiting for the bytes: how many, or the errno. Only with nothing else in flight.
    pub fn read_handle(
        &mut self,
        file: &crate::Handle,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<Result<u32, i32>, NfsError> {
        let (ptr, len) = (buf.as_mut_ptr(), buf.len());
        self.one(Dir::Read, file.fh3(), offset, ptr, len)
    }

    /// Writes `buf` at `offset` of the file `file` (not held), waiting for the server's
    /// answer. Only with nothing else in flight.
    pub fn write_handle(
        &mut self,
        file: &crate::Handle,
        offset: u64,
        buf: &[u8],
    ) -> Result<Result<u32, i32>, NfsError> {
        // A write's buffer is only read (encoded into the call).
        self.one(
            Dir::Write,
            file.fh3(),
            offset,
            buf.as_ptr().cast_mut(),
            buf.len(),
        )
    }

    /// COMMITs held file `file`, waiting for the server's answer. Only with nothing else in
    /// flight.
    pub fn commit(&mut self, file: u32) -> Result<Result<u32, i32>, NfsError> {
        let fh = self.held(file)?;
        self.one(Dir::Commit, fh, 0, std::ptr::null_mut(), 0)
    }

    /// One I/O, waited for, in the slot past the caller's. A connection that failed meanwhile
    /// is never served again, so that nothing reaches `buf` after this returns.
    fn one(
        &mut self,
        dir: Dir,
        fh: Fh3,
        offset: u64,
        buf: *mut u8,
        len: usize,
    ) -> Result<Result<u32, i32>, NfsError> {
        if self.session.inflight > 0 {
            return Err(NfsError::Session("a waited RPC on a busy client".into()));
        }
        let len =
            u32::try_from(len).map_err(|_| NfsError::Session("an RPC of 4 GiB or more".into()))?;
        let tag = (self.pending.len() - 1) as u64;
        if self.session.broken {
            return Err(NfsError::Session("the connection failed earlier".into()));
        }
        // SAFETY: buf holds len bytes, borrowed by the caller until this returns, and the
        // loop below returns only once the I/O completed or the connection is given up;
        // `fh`'s bytes are the caller's, valid while this runs.
        unsafe { self.send(dir, fh, offset, buf, len, tag) }?;
        let mut done = Vec::with_capacity(1);
        while done.is_empty() {
            self.wait(100, &mut done)?;
        }
        Ok(done[0].status)
    }
}

/// The callback of each RPC of an I/O: a read's bytes copied where they belong, what it moved
/// or how it failed added to its I/O's, and the I/O's completion noted for [`Client::wait`]
/// once its last RPC is answered.
extern "C" fn io_done(_rpc: *mut c_void, status: c_int, data: *mut c_void, private: *mut c_void) {
    // SAFETY: `private` is the part this RPC was sent for, and its `io` the slot of its I/O,
    // both alive as long as the client (whose context alone calls this) and unchanged while
    // the I/O is in flight.
    let part = unsafe { *(private as *const Part) };
    let cell = unsafe { &*part.io };
    let mut p = cell.get();
    let outcome = if status != 0 || data.is_null() {
        // RPC_STATUS_ERROR, _CANCEL or _TIMEOUT (3).
        Err(if status == 3 {
            libc::ETIMEDOUT
        } else {
            libc::ENOTCONN
        })
    } else {
        // libnfs decodes replies into an arena aligned to 4 bytes only: read unaligned.
        // SAFETY: every NFSv3 result begins with its nfsstat3.
        match unsafe { std::ptr::read_unaligned(data as *const u32) } {
            0 => Ok(match p.dir {
                Dir::Read => {
                    // SAFETY: a READ3res whose status is NFS3_OK; its data lies in the reply.
                    let ok = unsafe { std::ptr::read_unaligned(data as *const ReadOk) };
                    let n = ok.data_len.min(ok.count).min(part.len);
                    if n > 0 && !ok.data_val.is_null() {
                        // SAFETY: the reply holds `n` bytes at `data_val`; the I/O's buffer
                        // holds `part.len` bytes at `part.at`.
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                ok.data_val,
                                p.buf.add(part.at as usize),
                                n as usize,
                            )
                        };
                    }
                    n
                }
                Dir::Write => {
                    // SAFETY: a WRITE3res whose status is NFS3_OK.
                    let ok = unsafe { std::ptr::read_unaligned(data as *const WriteOk) };
                    ok.count.min(part.len)
                }
                Dir::Commit => 0,
            }),
            nfs => Err(errno_of(nfs)),
        }
    };
    match outcome {
        Ok(n) => p.moved += n,
        Err(e) if p.errno == 0 => p.errno = e,
        Err(_) => {}
    }
    p.left = p.left.saturating_sub(1);
    cell.set(p);
    if p.left == 0 {
        let status = match p.errno {
            0 => Ok(p.moved),
            e => Err(e),
        };
        DONE.with(|d| d.borrow_mut().push(Completion { tag: p.tag, status }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_are_libnfs_s() {
        use std::mem::{offset_of, size_of};
        assert_eq!(size_of::<RangeArgs>(), 32);
        assert_eq!(offset_of!(RangeArgs, count), 24);
        assert_eq!(offset_of!(WriteArgs, stable), 28);
        assert_eq!(offset_of!(WriteArgs, data_len), 32);
        assert_eq!(offset_of!(WriteArgs, data_val), 40);
        assert_eq!(offset_of!(ReadOk, attrs), 8);
        assert_eq!(offset_of!(ReadOk, count), 104);
        assert_eq!(offset_of!(ReadOk, data_len), 112);
        assert_eq!(offset_of!(ReadOk, data_val), 120);
        assert_eq!(size_of::<PreOpAttr>(), 32);
        assert_eq!(offset_of!(WriteOk, after), 40);
        assert_eq!(offset_of!(WriteOk, count), 136);
    }

    #[test]
    fn an_io_goes_in_parts_of_the_servers_largest() {
        assert_eq!(parts_of(0, 1 << 20), 1);
        assert_eq!(parts_of(4096, 1 << 20), 1);
        assert_eq!(parts_of(1 << 20, 1 << 20), 1);
        assert_eq!(parts_of((1 << 20) + 1, 1 << 20), 2);
        assert_eq!(parts_of(4 << 20, 1 << 20), 4);
    }
}
