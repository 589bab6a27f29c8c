//! A share's namespace by file handle: LOOKUP, CREATE (GUARDED), MKDIR, REMOVE, RMDIR, RENAME
//! and READDIR, each one NFSv3 RPC relative to a directory held by its handle, never a path
//! resolved from the export's root again. The calls are libnfs's raw RPCs (`rpc_nfs3_*_async`,
//! exported by libnfs 4.0 though its headers are not installed), made and waited for one at a
//! time, so that each is timed as exactly one round trip. The structures below restate
//! libnfs's XDR types (`nfs/libnfs-raw-nfs.h`, generated from RFC 1813's `nfs3.x`) field for
//! field.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::io;

use crate::{Client, FileId, NfsError};

/// An object's NFSv3 file handle (at most 64 bytes, RFC 1813's NFS3_FHSIZE): what a directory
/// is held by.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Handle {
    len: u8,
    data: [u8; 64],
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Handle(")?;
        for b in &self.data[..self.len as usize] {
            write!(f, "{b:02x}")?;
        }
        write!(f, ")")
    }
}

impl Handle {
    /// The handle's bytes, as the server gave them (what a journal keeps: a server's handle
    /// outlives the connection it was given on).
    pub fn bytes(&self) -> &[u8] {
        &self.data[..self.len as usize]
    }

    /// A handle of [`Handle::bytes`] (none when empty or longer than 64 bytes).
    pub fn from_bytes(b: &[u8]) -> Option<Handle> {
        if b.is_empty() || b.len() > 64 {
            return None;
        }
        let mut data = [0u8; 64];
        data[..b.len()].copy_from_slice(b);
        Some(Handle {
            len: b.len() as u8,
            data,
        })
    }

    fn of(fh: &Fh3) -> Option<Handle> {
        let len = fh.len as usize;
        if len == 0 || len > 64 || fh.val.is_null() {
            return None;
        }
        let mut data = [0u8; 64];
        // SAFETY: libnfs gives `len` bytes at `val`, valid during the callback.
        unsafe { std::ptr::copy_nonoverlapping(fh.val.cast_const(), data.as_mut_ptr(), len) };
        Some(Handle {
            len: len as u8,
            data,
        })
    }

    pub(crate) fn fh3(&self) -> Fh3 {
        Fh3 {
            len: u32::from(self.len),
            // libnfs only reads an argument's handle.
            val: self.data.as_ptr().cast_mut(),
        }
    }
}

/// What an entry is, as the server said (a link is never followed: LOOKUP does not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Link,
    /// Anything else (a device node, a socket, a FIFO).
    Other,
}

/// An entry found by LOOKUP: its handle, what it is and which object.
#[derive(Debug, Clone, Copy)]
pub struct Found {
    /// Its handle.
    pub handle: Handle,
    /// What it is.
    pub kind: Kind,
    /// Which object it is (fsid, fileid), when the server said.
    pub id: Option<FileId>,
}

// libnfs's XDR structures (repr(C) as the generated C; offsets in the comments, x86-64).

#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct Fh3 {
    len: u32,
    val: *mut u8,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct Fattr3 {
    kind: u32,
    mode: u32,
    nlink: u32,
    uid: u32,
    gid: u32,
    size: u64,
    used: u64,
    rdev: [u32; 2],
    fsid: u64,
    fileid: u64,
    atime: [u32; 2],
    mtime: [u32; 2],
    ctime: [u32; 2],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct PostOpAttr {
    follows: u32,
    attr: Fattr3,
}

#[repr(C)]
struct DirOpArgs {
    dir: Fh3,
    name: *const c_char,
}

/// `sattr3`: what to set on an object made.
#[repr(C)]
#[derive(Default)]
struct Sattr3 {
    set_mode: u32,
    mode: u32,
    set_uid: u32,
    uid: u32,
    set_gid: u32,
    gid: u32,
    set_size: u32,
    _pad: u32,
    size: u64,
    set_atime: u32,
    atime: [u32; 2],
    set_mtime: u32,
    mtime: [u32; 2],
}

#[repr(C)]
struct CreateArgs {
    at: DirOpArgs,
    /// `createmode3`: 1, GUARDED (fails on a name that exists; nothing planted is opened).
    mode: u32,
    attrs: Sattr3,
}

#[repr(C)]
struct MkdirArgs {
    at: DirOpArgs,
    attrs: Sattr3,
}

#[repr(C)]
struct RenameArgs {
    from: DirOpArgs,
    to: DirOpArgs,
}

#[repr(C)]
struct ReaddirArgs {
    dir: Fh3,
    cookie: u64,
    verf: [u8; 8],
    count: u32,
}

/// `LOOKUP3res` when its status is NFS3_OK.
#[repr(C)]
struct LookupOk {
    status: u32,
    object: Fh3,
    attrs: PostOpAttr,
}

/// `CREATE3res` and `MKDIR3res` when their status is NFS3_OK (`post_op_fh3` first).
#[repr(C)]
struct MadeOk {
    status: u32,
    _union_at_8: u32,
    follows: u32,
    handle: Fh3,
    attrs: PostOpAttr,
}

#[repr(C)]
struct Entry3 {
    fileid: u64,
    name: *const c_char,
    cookie: u64,
    next: *const Entry3,
}

/// `READDIR3res` when its status is NFS3_OK.
#[repr(C)]
struct ReaddirOk {
    status: u32,
    dir_attrs: PostOpAttr,
    verf: [u8; 8],
    entries: *const Entry3,
    eof: u32,
}

pub(crate) type RpcCb = extern "C" fn(*mut c_void, c_int, *mut c_void, *mut c_void);
pub(crate) type Call<A> = unsafe extern "C" fn(*mut c_void, RpcCb, *mut A, *mut c_void) -> c_int;

/// The raw calls, from the library `ffi` loaded: the namespace's and the file I/O's
/// (`io.rs`), one table.
pub(crate) struct Raw {
    pub(crate) rpc_context: unsafe extern "C" fn(*mut c_void) -> *mut c_void,
    rootfh: unsafe extern "C" fn(*mut c_void) -> *const Fh3,
    lookup: Call<DirOpArgs>,
    create: Call<CreateArgs>,
    mkdir: Call<MkdirArgs>,
    remove: Call<DirOpArgs>,
    rmdir: Call<DirOpArgs>,
    rename: Call<RenameArgs>,
    readdir: Call<ReaddirArgs>,
    pub(crate) readmax: unsafe extern "C" fn(*mut c_void) -> u64,
    pub(crate) writemax: unsafe extern "C" fn(*mut c_void) -> u64,
    pub(crate) read: Call<crate::io::RangeArgs>,
    pub(crate) write: Call<crate::io::WriteArgs>,
    pub(crate) commit: Call<crate::io::RangeArgs>,
}

fn raw() -> io::Result<&'static Raw> {
    raw_calls().map_err(io::Error::other)
}

pub(crate) fn raw_calls() -> Result<&'static Raw, String> {
    fn load() -> Result<Raw, String> {
        crate::ffi::lib()?;
        // Another reference to the library loaded above.
        let lib = stormark_dlclient::Library::open(
            c"libnfs.so.13",
            "libnfs.so.13 could not be opened again",
        )?;
        const TOO_OLD: &str = "libnfs 4.0 or newer is needed";
        // SAFETY: each symbol is libnfs 4.0's function of that name, whose signature the
        // field's type restates (`int rpc_nfs3_X_async(struct rpc_context *, rpc_cb,
        // struct X3args *, void *)`; `nfs_get_rootfh` returns the mount's `struct nfs_fh`,
        // laid out as `nfs_fh3`; `uint64_t nfs_get_readmax(struct nfs_context *)`).
        unsafe {
            Ok(Raw {
                rpc_context: lib.function(c"nfs_get_rpc_context", TOO_OLD)?,
                rootfh: lib.function(c"nfs_get_rootfh", TOO_OLD)?,
                lookup: lib.function(c"rpc_nfs3_lookup_async", TOO_OLD)?,
                create: lib.function(c"rpc_nfs3_create_async", TOO_OLD)?,
                mkdir: lib.function(c"rpc_nfs3_mkdir_async", TOO_OLD)?,
                remove: lib.function(c"rpc_nfs3_remove_async", TOO_OLD)?,
                rmdir: lib.function(c"rpc_nfs3_rmdir_async", TOO_OLD)?,
                rename: lib.function(c"rpc_nfs3_rename_async", TOO_OLD)?,
                readdir: lib.function(c"rpc_nfs3_readdir_async", TOO_OLD)?,
                readmax: lib.function(c"nfs_get_readmax", TOO_OLD)?,
                writemax: lib.function(c"nfs_get_writemax", TOO_OLD)?,
                read: lib.function(c"rpc_nfs3_read_async", TOO_OLD)?,
                write: lib.function(c"rpc_nfs3_write_async", TOO_OLD)?,
                commit: lib.function(c"rpc_nfs3_commit_async", TOO_OLD)?,
            })
        }
    }
    static RAW: stormark_dlclient::Loaded<Raw> = stormark_dlclient::Loaded::new();
    RAW.get(load)
}

/// What a reply is read for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Want {
    Status,
    Lookup,
    Made,
    Names,
}

/// One call's outcome, filled in by its callback.
struct Reply<'a> {
    want: Want,
    done: bool,
    /// The errno it failed with (0: none).
    errno: i32,
    found: Option<Found>,
    names: Option<&'a mut Vec<String>>,
    cookie: u64,
    verf: [u8; 8],
    eof: bool,
}

/// RFC 1813's status codes as errnos (those that differ from Linux's numbers mapped).
pub(crate) fn errno_of(status: u32) -> i32 {
    match status {
        63 => libc::ENAMETOOLONG,
        66 => libc::ENOTEMPTY,
        69 => libc::EDQUOT,
        70 | 10001 => libc::ESTALE,
        10004 => libc::EOPNOTSUPP,
        10008 => libc::EAGAIN,
        s if s < 100 => s as i32,
        _ => libc::EIO,
    }
}

fn found_of(handle: &Fh3, attrs: &PostOpAttr) -> Option<Found> {
    let handle = Handle::of(handle)?;
    let (kind, id) = if attrs.follows != 0 {
        let kind = match attrs.attr.kind {
            1 => Kind::File,
            2 => Kind::Dir,
            5 => Kind::Link,
            _ => Kind::Other,
        };
        let id = FileId {
            dev: attrs.attr.fsid,
            ino: attrs.attr.fileid,
        };
        (kind, Some(id))
    } else {
        (Kind::Other, None)
    };
    Some(Found { handle, kind, id })
}

extern "C" fn replied(_rpc: *mut c_void, status: c_int, data: *mut c_void, private: *mut c_void) {
    // SAFETY: `private` is the `Reply` its call waits on, alive until `done` is seen.
    let r = unsafe { &mut *(private as *mut Reply<'_>) };
    r.done = true;
    if status != 0 || data.is_null() {
        // RPC_STATUS_ERROR, _CANCEL or _TIMEOUT (3).
        r.errno = if status == 3 {
            libc::ETIMEDOUT
        } else {
            libc::ENOTCONN
        };
        return;
    }
    // libnfs decodes replies into an arena of its own, aligned to 4 bytes only: every
    // structure is read unaligned.
    // SAFETY: every NFSv3 result begins with its nfsstat3.
    let nfs = unsafe { std::ptr::read_unaligned(data as *const u32) };
    if nfs != 0 {
        r.errno = errno_of(nfs);
        return;
    }
    match r.want {
        Want::Status => {}
        Want::Lookup => {
            // SAFETY: a LOOKUP3res whose status is NFS3_OK.
            let ok = unsafe { std::ptr::read_unaligned(data as *const LookupOk) };
            r.found = found_of(&ok.object, &ok.attrs);
        }
        Want::Made => {
            // SAFETY: a CREATE3res or MKDIR3res whose status is NFS3_OK.
            let ok = unsafe { std::ptr::read_unaligned(data as *const MadeOk) };
            if ok.follows != 0 {
                r.found = found_of(&ok.handle, &ok.attrs);
            }
        }
        Want::Names => {
            // SAFETY: a READDIR3res whose status is NFS3_OK; its list lives until we return.
            let ok = unsafe { std::ptr::read_unaligned(data as *const ReaddirOk) };
            r.verf = ok.verf;
            r.eof = ok.eof != 0;
            let mut e = ok.entries;
            while !e.is_null() {
                // SAFETY: an entry of the list, its name a C string.
                let entry = unsafe { std::ptr::read_unaligned(e) };
                let name = unsafe { CStr::from_ptr(entry.name) }.to_string_lossy();
                if name != "." && name != ".." {
                    if let Some(out) = r.names.as_mut() {
                        out.push(name.into_owned());
                    }
                }
                r.cookie = entry.cookie;
                e = entry.next;
            }
        }
    }
}

/// A name as a C string on the stack (no allocation per call): a single name, not `.` or
/// `..`, no `/` or NUL, at most 255 bytes.
struct Name([u8; 256]);

impl Name {
    fn of(name: &str) -> io::Result<Name> {
        let b = name.as_bytes();
        if b.is_empty()
            || b == b"."
            || b == b".."
            || b.len() > 255
            || b.contains(&b'/')
            || b.contains(&0)
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name:?} is not a single file name"),
            ));
        }
        let mut out = [0u8; 256];
        out[..b.len()].copy_from_slice(b);
        Ok(Name(out))
    }

    fn ptr(&self) -> *const c_char {
        self.0.as_ptr().cast()
    }
}

fn at(dir: &Handle, name: &Name) -> DirOpArgs {
    DirOpArgs {
        dir: dir.fh3(),
        name: name.ptr(),
    }
}

impl Client {
    /// Sends one raw call made by `issue` and waits for its reply.
    fn call<A>(&mut self, f: Call<A>, args: &mut A, reply: &mut Reply<'_>) -> io::Result<()> {
        if self.session.broken {
            return Err(io::Error::from_raw_os_error(libc::ENOTCONN));
        }
        let lib = self.lib;
        let r = raw()?;
        // SAFETY: a mounted context; its RPC context lives as long as it.
        let rpc = unsafe { (r.rpc_context)(self.ctx) };
        // The callback writes the reply through this pointer, from within `service` below:
        // it is read through the same pointer (volatile: written behind the compiler's back).
        let ptr = reply as *mut Reply<'_>;
        let private = ptr.cast::<c_void>();
        // SAFETY: `ptr` is `reply`, alive for this whole call.
        let done = || unsafe { std::ptr::read_volatile(&(*ptr).done) };
        // SAFETY: the arguments are encoded before this returns; `reply` outlives the wait
        // below, which returns only once the callback ran or the connection is given up.
        if unsafe { f(rpc, replied, args, private) } != 0 {
            self.session.broken = true;
            return Err(io::Error::from_raw_os_error(libc::ENOTCONN));
        }
        while !done() {
            let ctx = self.ctx;
            // SAFETY: a live context; the callback runs in service, here, on this thread.
            let step = unsafe {
                stormark_dlclient::step(
                    (lib.get_fd)(ctx),
                    (lib.which_events)(ctx),
                    100,
                    |revents| (lib.service)(ctx, revents),
                )
            };
            let failed = match step {
                stormark_dlclient::Step::Served => None,
                stormark_dlclient::Step::PollFailed(e) => Some(e),
                stormark_dlclient::Step::ServiceFailed => {
                    Some(io::Error::from_raw_os_error(libc::ENOTCONN))
                }
                // Hung up before this call's answer came.
                stormark_dlclient::Step::HungUp if !done() => {
                    Some(io::Error::from_raw_os_error(libc::ECONNRESET))
                }
                stormark_dlclient::Step::HungUp => None,
            };
            if let Some(e) = failed {
                self.session.broken = true;
                return Err(e);
            }
        }
        // SAFETY: as above; the callback has run.
        let errno = unsafe { std::ptr::read_volatile(&(*ptr).errno) };
        if errno == libc::ETIMEDOUT || errno == libc::ENOTCONN {
            // A server that did not answer is asked nothing more on this connection: the
            // calls after this one fail at once (counted), rather than each waiting out the
            // timeout.
            self.session.broken = true;
        }
        match errno {
            0 => Ok(()),
            e => Err(io::Error::from_raw_os_error(e)),
        }
    }

    fn reply(want: Want) -> Reply<'static> {
        Reply {
            want,
            done: false,
            errno: 0,
            found: None,
            names: None,
            cookie: 0,
            verf: [0; 8],
            eof: false,
        }
    }

    /// The URL's directory by its handle: LOOKUP of each part of its path beneath the export
    /// mounted, none of them a symbolic link.
    pub fn dir_handle(&mut self) -> Result<Handle, NfsError> {
        let r = raw().map_err(|e| NfsError::Library(e.to_string()))?;
        // SAFETY: a mounted context; its root handle lives as long as it.
        let root = unsafe { (r.rootfh)(self.ctx) };
        // SAFETY: as above, read at once.
        let mut dir = (!root.is_null())
            .then(|| Handle::of(unsafe { &*root }))
            .flatten()
            .ok_or_else(|| NfsError::Session("no handle of the export mounted".into()))?;
        let base = self.base.clone();
        for part in base.split('/').filter(|p| !p.is_empty()) {
            let found = self.lookup_at(&dir, part).map_err(|e| NfsError::Op {
                url: self.url.clone(),
                path: String::new(),
                what: "lookup",
                why: format!("{part}: {e}"),
                errno: e.raw_os_error(),
            })?;
            if found.kind != Kind::Dir {
                return Err(NfsError::Op {
                    url: self.url.clone(),
                    path: String::new(),
                    what: "lookup",
                    why: format!("{part} is not a directory (a symbolic link is not followed)"),
                    errno: Some(libc::ENOTDIR),
                });
            }
            dir = found.handle;
        }
        Ok(dir)
    }

    /// LOOKUP of `name` in the directory `dir`: one RPC, a link not followed.
    pub fn lookup_at(&mut self, dir: &Handle, name: &str) -> io::Result<Found> {
        let n = Name::of(name)?;
        let mut args = at(dir, &n);
        let mut reply = Self::reply(Want::Lookup);
        let f = raw()?.lookup;
        self.call(f, &mut args, &mut reply)?;
        reply
            .found
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EIO))
    }

    /// CREATE of the regular file `name` in `dir`, GUARDED (it must not exist), mode 0644,
    /// `len` bytes long (sparse; 0: empty, no size set): one RPC. Its handle and identity
    /// when the server gave them (ganesha does).
    pub fn create_at(&mut self, dir: &Handle, name: &str, len: u64) -> io::Result<Option<Found>> {
        let n = Name::of(name)?;
        let mut args = CreateArgs {
            at: at(dir, &n),
            mode: 1,
            attrs: Sattr3 {
                set_mode: 1,
                mode: 0o644,
                set_size: u32::from(len > 0),
                size: len,
                ..Sattr3::default()
            },
        };
        let mut reply = Self::reply(Want::Made);
        let f = raw()?.create;
        self.call(f, &mut args, &mut reply)?;
        Ok(reply.found)
    }

    /// MKDIR of `name` in `dir` (it must not exist), mode 0755: one RPC; its handle when the
    /// server gave it.
    pub fn mkdir_at(&mut self, dir: &Handle, name: &str) -> io::Result<Option<Found>> {
        let n = Name::of(name)?;
        let mut args = MkdirArgs {
            at: at(dir, &n),
            attrs: Sattr3 {
                set_mode: 1,
                mode: 0o755,
                ..Sattr3::default()
            },
        };
        let mut reply = Self::reply(Want::Made);
        let f = raw()?.mkdir;
        self.call(f, &mut args, &mut reply)?;
        Ok(reply.found)
    }

    /// REMOVE of the file `name` in `dir` (a link is removed, never followed): one RPC.
    pub fn remove_at(&mut self, dir: &Handle, name: &str) -> io::Result<()> {
        let n = Name::of(name)?;
        let mut args = at(dir, &n);
        let mut reply = Self::reply(Want::Status);
        let f = raw()?.remove;
        self.call(f, &mut args, &mut reply)
    }

    /// RMDIR of the empty directory `name` in `dir`: one RPC.
    pub fn rmdir_at(&mut self, dir: &Handle, name: &str) -> io::Result<()> {
        let n = Name::of(name)?;
        let mut args = at(dir, &n);
        let mut reply = Self::reply(Want::Status);
        let f = raw()?.rmdir;
        self.call(f, &mut args, &mut reply)
    }

    /// RENAME of `from` to `to`, both in `dir`: one RPC.
    pub fn rename_at(&mut self, dir: &Handle, from: &str, to: &str) -> io::Result<()> {
        let (f, t) = (Name::of(from)?, Name::of(to)?);
        let mut args = RenameArgs {
            from: at(dir, &f),
            to: at(dir, &t),
        };
        let mut reply = Self::reply(Want::Status);
        let call = raw()?.rename;
        self.call(call, &mut args, &mut reply)
    }

    /// The names in `dir` (not `.` and `..`), by READDIR until its end.
    pub fn names_at(&mut self, dir: &Handle) -> io::Result<Vec<String>> {
        let mut out = Vec::new();
        let (mut cookie, mut verf) = (0u64, [0u8; 8]);
        loop {
            let mut args = ReaddirArgs {
                dir: dir.fh3(),
                cookie,
                verf,
                count: 32 * 1024,
            };
            let mut reply = Reply {
                names: Some(&mut out),
                ..Self::reply(Want::Names)
            };
            let f = raw()?.readdir;
            self.call(f, &mut args, &mut reply)?;
            if reply.eof || reply.cookie == cookie {
                break;
            }
            (cookie, verf) = (reply.cookie, reply.verf);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_are_libnfs_s() {
        use std::mem::{offset_of, size_of};
        assert_eq!(size_of::<Fattr3>(), 88);
        assert_eq!(size_of::<PostOpAttr>(), 96);
        assert_eq!(size_of::<Sattr3>(), 64);
        assert_eq!(offset_of!(Sattr3, size), 32);
        assert_eq!(offset_of!(Sattr3, set_mtime), 52);
        assert_eq!(offset_of!(CreateArgs, mode), 24);
        assert_eq!(offset_of!(CreateArgs, attrs), 32);
        assert_eq!(offset_of!(MkdirArgs, attrs), 24);
        assert_eq!(offset_of!(LookupOk, object), 8);
        assert_eq!(offset_of!(LookupOk, attrs), 24);
        assert_eq!(offset_of!(MadeOk, follows), 8);
        assert_eq!(offset_of!(MadeOk, handle), 16);
        assert_eq!(offset_of!(MadeOk, attrs), 32);
        assert_eq!(offset_of!(ReaddirOk, verf), 104);
        assert_eq!(offset_of!(ReaddirOk, entries), 112);
        assert_eq!(offset_of!(ReaddirArgs, count), 32);
    }

    #[test]
    fn names_are_single() {
        for bad in ["", ".", "..", "a/b", "a\0b"] {
            assert!(Name::of(bad).is_err(), "{bad:?}");
        }
        assert!(Name::of(&"x".repeat(256)).is_err());
        let n = Name::of("f0.1").unwrap();
        assert_eq!(&n.0[..5], b"f0.1\0");
    }
}
