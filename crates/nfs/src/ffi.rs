//! libnfs's functions, loaded from `libnfs.so.13` at first use (Debian's `libnfs13`, libnfs
//! 4.0's ABI): the few a load needs, by name, each checked present.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

type Ctx = *mut c_void;
pub(crate) type Fh = *mut c_void;
/// libnfs's `nfs_cb`: status (bytes, 0 or -errno), context, data, private data.
pub(crate) type Cb = extern "C" fn(c_int, Ctx, *mut c_void, *mut c_void);

/// libnfs's `struct nfs_url`.
#[repr(C)]
pub(crate) struct NfsUrl {
    pub server: *mut c_char,
    pub path: *mut c_char,
    pub file: *mut c_char,
}

/// libnfs's `struct nfs_stat_64`.
#[repr(C)]
#[derive(Default)]
pub(crate) struct Stat64 {
    pub dev: u64,
    pub ino: u64,
    pub mode: u64,
    pub nlink: u64,
    pub uid: u64,
    pub gid: u64,
    pub rdev: u64,
    pub size: u64,
    pub blksize: u64,
    pub blocks: u64,
    pub atime: u64,
    pub mtime: u64,
    pub ctime: u64,
    pub atime_nsec: u64,
    pub mtime_nsec: u64,
    pub ctime_nsec: u64,
    pub used: u64,
}

/// libnfs's `struct nfs_statvfs_64`.
#[repr(C)]
#[derive(Default)]
pub(crate) struct Statvfs64 {
    pub bsize: u64,
    pub frsize: u64,
    pub blocks: u64,
    pub bfree: u64,
    pub bavail: u64,
    pub files: u64,
    pub ffree: u64,
    pub favail: u64,
    pub fsid: u64,
    pub flag: u64,
    pub namemax: u64,
}

/// The functions used, from the loaded library.
pub(crate) struct Lib {
    pub init_context: unsafe extern "C" fn() -> Ctx,
    pub destroy_context: unsafe extern "C" fn(Ctx),
    pub parse_url_dir: unsafe extern "C" fn(Ctx, *const c_char) -> *mut NfsUrl,
    pub destroy_url: unsafe extern "C" fn(*mut NfsUrl),
    pub mount: unsafe extern "C" fn(Ctx, *const c_char, *const c_char) -> c_int,
    pub umount: unsafe extern "C" fn(Ctx) -> c_int,
    pub get_error: unsafe extern "C" fn(Ctx) -> *const c_char,
    pub get_fd: unsafe extern "C" fn(Ctx) -> c_int,
    pub which_events: unsafe extern "C" fn(Ctx) -> c_int,
    pub service: unsafe extern "C" fn(Ctx, c_int) -> c_int,
    pub set_timeout: unsafe extern "C" fn(Ctx, c_int),
    pub stat64: unsafe extern "C" fn(Ctx, *const c_char, *mut Stat64) -> c_int,
    pub lstat64: unsafe extern "C" fn(Ctx, *const c_char, *mut Stat64) -> c_int,
    pub fstat64: unsafe extern "C" fn(Ctx, Fh, *mut Stat64) -> c_int,
    pub statvfs64: unsafe extern "C" fn(Ctx, *const c_char, *mut Statvfs64) -> c_int,
    pub mkdir: unsafe extern "C" fn(Ctx, *const c_char) -> c_int,
    pub rmdir: unsafe extern "C" fn(Ctx, *const c_char) -> c_int,
    pub unlink: unsafe extern "C" fn(Ctx, *const c_char) -> c_int,
    pub rename: unsafe extern "C" fn(Ctx, *const c_char, *const c_char) -> c_int,
    pub symlink: unsafe extern "C" fn(Ctx, *const c_char, *const c_char) -> c_int,
    pub create: unsafe extern "C" fn(Ctx, *const c_char, c_int, c_int, *mut Fh) -> c_int,
    pub open: unsafe extern "C" fn(Ctx, *const c_char, c_int, *mut Fh) -> c_int,
    pub close: unsafe extern "C" fn(Ctx, Fh) -> c_int,
    pub ftruncate: unsafe extern "C" fn(Ctx, Fh, u64) -> c_int,
    pub pread_async: unsafe extern "C" fn(Ctx, Fh, u64, u64, Cb, *mut c_void) -> c_int,
    pub pwrite_async:
        unsafe extern "C" fn(Ctx, Fh, u64, u64, *const c_void, Cb, *mut c_void) -> c_int,
    pub fsync_async: unsafe extern "C" fn(Ctx, Fh, Cb, *mut c_void) -> c_int,
}

/// The library's file name.
const SONAME: &CStr = c"libnfs.so.13";

/// The loaded library, or why it could not be loaded (one line naming the package).
pub(crate) fn lib() -> Result<&'static Lib, String> {
    static LIB: OnceLock<Result<Lib, String>> = OnceLock::new();
    LIB.get_or_init(load).as_ref().map_err(Clone::clone)
}

/// Whether libnfs can be loaded here: `Err` says what to install.
pub fn available() -> Result<(), String> {
    lib().map(|_| ())
}

/// A symbol's address as the function pointer type `F`.
///
/// # Safety
/// `p` must be the address of a function of `F`'s signature.
unsafe fn cast<F: Copy>(p: *mut c_void) -> F {
    assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
    // SAFETY: the caller's; the sizes are equal.
    unsafe { std::mem::transmute_copy(&p) }
}

fn load() -> Result<Lib, String> {
    // SAFETY: dlopen of a library by name; its initializers are libnfs's own.
    let h = unsafe { libc::dlopen(SONAME.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if h.is_null() {
        return Err(
            "nfs:// targets need libnfs (libnfs.so.13: on Debian and Ubuntu, apt install libnfs13)"
                .into(),
        );
    }
    let sym = |name: &CStr| -> Result<*mut c_void, String> {
        // SAFETY: a handle dlopen gave; a NUL-terminated name.
        let p = unsafe { libc::dlsym(h, name.as_ptr()) };
        if p.is_null() {
            Err(format!(
                "libnfs.so.13 has no {}: libnfs 4.0 or newer is needed",
                name.to_string_lossy()
            ))
        } else {
            Ok(p)
        }
    };
    // SAFETY: each symbol is libnfs's function of that name, whose C signature the field's
    // type restates (libnfs.h of libnfs 4.0).
    unsafe {
        Ok(Lib {
            init_context: cast(sym(c"nfs_init_context")?),
            destroy_context: cast(sym(c"nfs_destroy_context")?),
            parse_url_dir: cast(sym(c"nfs_parse_url_dir")?),
            destroy_url: cast(sym(c"nfs_destroy_url")?),
            mount: cast(sym(c"nfs_mount")?),
            umount: cast(sym(c"nfs_umount")?),
            get_error: cast(sym(c"nfs_get_error")?),
            get_fd: cast(sym(c"nfs_get_fd")?),
            which_events: cast(sym(c"nfs_which_events")?),
            service: cast(sym(c"nfs_service")?),
            set_timeout: cast(sym(c"nfs_set_timeout")?),
            stat64: cast(sym(c"nfs_stat64")?),
            lstat64: cast(sym(c"nfs_lstat64")?),
            fstat64: cast(sym(c"nfs_fstat64")?),
            statvfs64: cast(sym(c"nfs_statvfs64")?),
            mkdir: cast(sym(c"nfs_mkdir")?),
            rmdir: cast(sym(c"nfs_rmdir")?),
            unlink: cast(sym(c"nfs_unlink")?),
            rename: cast(sym(c"nfs_rename")?),
            symlink: cast(sym(c"nfs_symlink")?),
            create: cast(sym(c"nfs_create")?),
            open: cast(sym(c"nfs_open")?),
            close: cast(sym(c"nfs_close")?),
            ftruncate: cast(sym(c"nfs_ftruncate")?),
            pread_async: cast(sym(c"nfs_pread_async")?),
            pwrite_async: cast(sym(c"nfs_pwrite_async")?),
            fsync_async: cast(sym(c"nfs_fsync_async")?),
        })
    }
}
