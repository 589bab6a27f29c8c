//! libnfs's functions, loaded from `libnfs.so.13` at first use (Debian's `libnfs13`, libnfs
//! 4.0's ABI): the few a load needs, by name, each checked present.

use std::ffi::{c_char, c_int, c_void, CStr};

type Ctx = *mut c_void;
pub(crate) type Fh = *mut c_void;

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
    pub set_uid: unsafe extern "C" fn(Ctx, c_int),
    pub set_gid: unsafe extern "C" fn(Ctx, c_int),
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
    pub close: unsafe extern "C" fn(Ctx, Fh) -> c_int,
    pub ftruncate: unsafe extern "C" fn(Ctx, Fh, u64) -> c_int,
}

/// Which version has every function used.
const TOO_OLD: &str = "libnfs 4.0 or newer is needed";

/// The library's file name.
const SONAME: &CStr = c"libnfs.so.13";

/// The loaded library, or why it could not be loaded (one line naming the package).
pub(crate) fn lib() -> Result<&'static Lib, String> {
    static LIB: stormark_dlclient::Loaded<Lib> = stormark_dlclient::Loaded::new();
    LIB.get(load)
}

/// Whether libnfs can be loaded here: `Err` says what to install.
pub fn available() -> Result<(), String> {
    lib().map(|_| ())
}

fn load() -> Result<Lib, String> {
    let lib = stormark_dlclient::Library::open(
        SONAME,
        "nfs:// targets need libnfs (libnfs.so.13: on Debian and Ubuntu, apt install libnfs13)",
    )?;
    // SAFETY: each symbol is libnfs's function of that name, whose C signature the field's
    // type restates (libnfs.h of libnfs 4.0).
    unsafe {
        Ok(Lib {
            init_context: lib.function(c"nfs_init_context", TOO_OLD)?,
            destroy_context: lib.function(c"nfs_destroy_context", TOO_OLD)?,
            parse_url_dir: lib.function(c"nfs_parse_url_dir", TOO_OLD)?,
            destroy_url: lib.function(c"nfs_destroy_url", TOO_OLD)?,
            mount: lib.function(c"nfs_mount", TOO_OLD)?,
            umount: lib.function(c"nfs_umount", TOO_OLD)?,
            get_error: lib.function(c"nfs_get_error", TOO_OLD)?,
            get_fd: lib.function(c"nfs_get_fd", TOO_OLD)?,
            which_events: lib.function(c"nfs_which_events", TOO_OLD)?,
            service: lib.function(c"nfs_service", TOO_OLD)?,
            set_timeout: lib.function(c"nfs_set_timeout", TOO_OLD)?,
            set_uid: lib.function(c"nfs_set_uid", TOO_OLD)?,
            set_gid: lib.function(c"nfs_set_gid", TOO_OLD)?,
            stat64: lib.function(c"nfs_stat64", TOO_OLD)?,
            lstat64: lib.function(c"nfs_lstat64", TOO_OLD)?,
            fstat64: lib.function(c"nfs_fstat64", TOO_OLD)?,
            statvfs64: lib.function(c"nfs_statvfs64", TOO_OLD)?,
            mkdir: lib.function(c"nfs_mkdir", TOO_OLD)?,
            rmdir: lib.function(c"nfs_rmdir", TOO_OLD)?,
            unlink: lib.function(c"nfs_unlink", TOO_OLD)?,
            rename: lib.function(c"nfs_rename", TOO_OLD)?,
            symlink: lib.function(c"nfs_symlink", TOO_OLD)?,
            create: lib.function(c"nfs_create", TOO_OLD)?,
            close: lib.function(c"nfs_close", TOO_OLD)?,
            ftruncate: lib.function(c"nfs_ftruncate", TOO_OLD)?,
        })
    }
}
