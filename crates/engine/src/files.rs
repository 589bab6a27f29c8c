//! Opening files without being led elsewhere: a directory held by its descriptor, names opened
//! beneath it without following links, and the identity of what was opened checked.
//!
//! A run directory is opened once and kept open from validation to cleanup; every file inside
//! is created, opened and removed relative to that descriptor, with `openat2(2)`'s
//! `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` (Linux 5.6), or `O_NOFOLLOW` on a single name where
//! `openat2` is missing. A planted symbolic link, a directory swapped for a link, or a file
//! replaced by another between validation and load is refused, never written through.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// What a file or device is, whatever its name: checked again on every open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity {
    /// A regular file: its filesystem and inode.
    File {
        /// `st_dev`.
        dev: u64,
        /// `st_ino`.
        ino: u64,
    },
    /// A block device node: the device it names (`st_rdev`).
    Device {
        /// `st_rdev`.
        rdev: u64,
    },
}

impl Identity {
    /// The identity of an open file, or why it is neither a regular file nor a block device.
    pub fn of(file: &File) -> io::Result<Identity> {
        let meta = file.metadata()?;
        let mode = meta.mode() & libc::S_IFMT;
        if mode == libc::S_IFREG {
            Ok(Identity::File {
                dev: meta.dev(),
                ino: meta.ino(),
            })
        } else if mode == libc::S_IFBLK {
            Ok(Identity::Device { rdev: meta.rdev() })
        } else {
            Err(io::Error::other(
                "not a regular file or block device (a directory, device node, FIFO or socket)",
            ))
        }
    }
}

/// A directory held open by its descriptor.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

/// Whether `openat2` was refused by this kernel (then `O_NOFOLLOW` on single names is used).
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

fn cstr(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// A single name inside a directory: no `/`, not `.` or `..`, not empty.
fn check_name(name: &OsStr) -> io::Result<()> {
    let b = name.as_bytes();
    if b.is_empty() || b == b"." || b == b".." || b.contains(&b'/') || b.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{:?} is not a single file name", name),
        ));
    }
    Ok(())
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

impl Dir {
    /// Opens the directory the user named (following links in that path: the user chose it).
    pub fn open(path: &Path) -> io::Result<Dir> {
        let c = cstr(path.as_os_str())?;
        // SAFETY: c is a valid C string; the returned descriptor is owned below.
        let fd = cvt(unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        })?;
        Ok(Dir {
            // SAFETY: fd was just opened and is owned by nobody else.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            path: path.to_path_buf(),
        })
    }

    /// The path this directory was opened by, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of `name` inside, for messages.
    pub fn shown(&self, name: impl AsRef<OsStr>) -> PathBuf {
        self.path.join(name.as_ref())
    }

    /// Opens `name` beneath this directory with `flags`, never through a link.
    fn open_beneath(&self, name: &OsStr, flags: libc::c_int, mode: u32) -> io::Result<OwnedFd> {
        check_name(name)?;
        let c = cstr(name)?;
        let flags = flags | libc::O_CLOEXEC | libc::O_NOFOLLOW;
        if !NO_OPENAT2.load(Ordering::Relaxed) {
            // SAFETY: open_how is plain integers; all-zero is its "nothing asked" value.
            let mut how: libc::open_how = unsafe { std::mem::zeroed() };
            how.flags = flags as u64;
            how.mode = if flags & libc::O_CREAT != 0 {
                u64::from(mode)
            } else {
                0
            };
            how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS;
            // SAFETY: the directory descriptor is open, c is a valid C string and `how` is a
            // valid open_how of the size passed.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_openat2,
                    self.fd.as_raw_fd(),
                    c.as_ptr(),
                    &how as *const libc::open_how,
                    std::mem::size_of::<libc::open_how>(),
                )
            };
            if r >= 0 {
                // SAFETY: r is a descriptor just opened, owned by nobody else.
                return Ok(unsafe { OwnedFd::from_raw_fd(r as libc::c_int) });
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::ENOSYS) | Some(libc::EPERM) => NO_OPENAT2.store(true, Ordering::Relaxed),
                _ => return Err(e),
            }
        }
        // A single checked name with O_NOFOLLOW cannot leave the directory or follow a link.
        // SAFETY: as above.
        let r = cvt(unsafe { libc::openat(self.fd.as_raw_fd(), c.as_ptr(), flags, mode) })?;
        // SAFETY: r is a descriptor just opened, owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(r) })
    }

    /// Opens the directory `name` inside, never through a link.
    pub fn open_dir(&self, name: impl AsRef<OsStr>) -> io::Result<Dir> {
        let name = name.as_ref();
        let fd = self.open_beneath(name, libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
        Ok(Dir {
            fd,
            path: self.shown(name),
        })
    }

    /// Creates the directory `name` inside (it must not exist) and opens it.
    pub fn create_dir(&self, name: impl AsRef<OsStr>) -> io::Result<Dir> {
        let name = name.as_ref();
        check_name(name)?;
        let c = cstr(name)?;
        // SAFETY: the descriptor is open and c is a valid C string.
        cvt(unsafe { libc::mkdirat(self.fd.as_raw_fd(), c.as_ptr(), 0o755) })?;
        self.open_dir(name)
    }

    /// Creates the regular file `name` (it must not exist), opened for reading and writing
    /// with `extra` flags (`O_DIRECT`, ...).
    pub fn create_file(&self, name: impl AsRef<OsStr>, extra: libc::c_int) -> io::Result<File> {
        let fd = self.open_beneath(
            name.as_ref(),
            libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | extra,
            0o644,
        )?;
        Ok(File::from(fd))
    }

    /// Opens the existing regular file `name` inside with `flags` (`O_RDONLY`, `O_RDWR`, plus
    /// `O_DIRECT`, ...), never through a link; anything but a regular file is refused.
    pub fn open_file(&self, name: impl AsRef<OsStr>, flags: libc::c_int) -> io::Result<File> {
        let name = name.as_ref();
        // O_NONBLOCK: a FIFO planted under the name must not hang the open.
        let fd = self.open_beneath(name, flags | libc::O_NONBLOCK, 0)?;
        let file = File::from(fd);
        if !file.metadata()?.file_type().is_file() {
            return Err(io::Error::other("not a regular file"));
        }
        // SAFETY: the descriptor is open; clearing O_NONBLOCK keeps the other flags.
        unsafe {
            let fl = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
            libc::fcntl(file.as_raw_fd(), libc::F_SETFL, fl & !libc::O_NONBLOCK);
        }
        Ok(file)
    }

    /// Creates the directory `name` inside (it must not exist), without opening it.
    pub fn mkdir(&self, name: impl AsRef<OsStr>) -> io::Result<()> {
        let name = name.as_ref();
        check_name(name)?;
        let c = cstr(name)?;
        // SAFETY: the descriptor is open and c is a valid C string.
        cvt(unsafe { libc::mkdirat(self.fd.as_raw_fd(), c.as_ptr(), 0o755) }).map(|_| ())
    }

    /// Opens `name` inside with `flags`, never through a link and never blocking on a FIFO,
    /// with no further check: for files of a tree this process made (`stormark meta`).
    pub fn open_own(&self, name: impl AsRef<OsStr>, flags: libc::c_int) -> io::Result<File> {
        Ok(File::from(self.open_beneath(
            name.as_ref(),
            flags | libc::O_NONBLOCK,
            0o644,
        )?))
    }

    /// `fstatat` of `name` inside, a link itself rather than what it points to.
    pub fn stat(&self, name: impl AsRef<OsStr>) -> io::Result<libc::stat> {
        let name = name.as_ref();
        check_name(name)?;
        let c = cstr(name)?;
        // SAFETY: zeroed is a valid stat; the descriptor is open; c is a valid C string.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        cvt(unsafe {
            libc::fstatat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        })?;
        Ok(st)
    }

    /// Removes the file `name` inside (a link is removed, never followed).
    pub fn remove_file(&self, name: impl AsRef<OsStr>) -> io::Result<()> {
        self.unlink(name.as_ref(), 0)
    }

    /// Removes the empty directory `name` inside.
    pub fn remove_dir(&self, name: impl AsRef<OsStr>) -> io::Result<()> {
        self.unlink(name.as_ref(), libc::AT_REMOVEDIR)
    }

    fn unlink(&self, name: &OsStr, flags: libc::c_int) -> io::Result<()> {
        check_name(name)?;
        let c = cstr(name)?;
        // SAFETY: the descriptor is open and c is a valid C string.
        cvt(unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), flags) }).map(|_| ())
    }

    /// Renames `from` to `to`, both inside (atomic replacement of `to`).
    pub fn rename(&self, from: impl AsRef<OsStr>, to: impl AsRef<OsStr>) -> io::Result<()> {
        let (from, to) = (from.as_ref(), to.as_ref());
        check_name(from)?;
        check_name(to)?;
        let (f, t) = (cstr(from)?, cstr(to)?);
        let fd = self.fd.as_raw_fd();
        // SAFETY: the descriptor is open and both are valid C strings.
        cvt(unsafe { libc::renameat(fd, f.as_ptr(), fd, t.as_ptr()) }).map(|_| ())
    }

    /// Reads `name` (beneath the descriptor, never through a link), refusing one longer than
    /// `limit` bytes before reading it all.
    pub fn read_limited(&self, name: &str, limit: u64) -> io::Result<Vec<u8>> {
        use std::io::Read;
        let f = self.open_file(name, libc::O_RDONLY)?;
        let mut out = Vec::new();
        f.take(limit + 1).read_to_end(&mut out)?;
        if out.len() as u64 > limit {
            return Err(io::Error::other(format!("longer than {limit} bytes")));
        }
        Ok(out)
    }

    /// Writes `name` atomically: a temporary file inside, synced, then renamed over `name`.
    pub fn write_atomic(&self, name: &str, data: &[u8]) -> io::Result<()> {
        use std::io::Write;
        let tmp = format!(".{name}.tmp-{}", std::process::id());
        let _ = self.remove_file(&tmp);
        let mut f = self.create_file(&tmp, 0)?;
        let done = f.write_all(data).and_then(|_| f.sync_all());
        if let Err(e) = done.and_then(|_| self.rename(&tmp, name)) {
            let _ = self.remove_file(&tmp);
            return Err(e);
        }
        Ok(())
    }

    /// Room on this directory's filesystem: (total, available to this user, used), bytes.
    pub fn space(&self) -> io::Result<(u64, u64, u64)> {
        // SAFETY: zeroed is a valid statvfs; the descriptor is open.
        let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
        cvt(unsafe { libc::fstatvfs(self.fd.as_raw_fd(), &mut s) })?;
        let frsize = s.f_frsize as u64;
        Ok((
            s.f_blocks as u64 * frsize,
            s.f_bavail as u64 * frsize,
            (s.f_blocks as u64).saturating_sub(s.f_bfree as u64) * frsize,
        ))
    }

    /// Whether this user may create files here.
    pub fn writable(&self) -> bool {
        let dot = c".";
        // SAFETY: the descriptor is open; "." is a valid C string.
        unsafe {
            libc::faccessat(
                self.fd.as_raw_fd(),
                dot.as_ptr(),
                libc::W_OK | libc::X_OK,
                libc::AT_EACCESS,
            ) == 0
        }
    }

    /// The directory's own identity (`st_dev`, `st_ino`).
    pub fn id(&self) -> io::Result<(u64, u64)> {
        let m = self.metadata()?;
        Ok((m.dev(), m.ino()))
    }

    /// The directory's own metadata (`fstat` of its descriptor).
    pub fn metadata(&self) -> io::Result<std::fs::Metadata> {
        File::from(self.fd.as_fd().try_clone_to_owned()?).metadata()
    }

    /// The names of its entries (not `.` and `..`), read from a descriptor of its own opened
    /// beneath this one, never by a path.
    pub fn names(&self) -> io::Result<Vec<std::ffi::OsString>> {
        // SAFETY: the descriptor is open; "." is a valid C string.
        let fd = cvt(unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                c".".as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        })?;
        // SAFETY: fd is a directory descriptor just opened; the stream owns it from here.
        let stream = unsafe { libc::fdopendir(fd) };
        if stream.is_null() {
            let e = io::Error::last_os_error();
            // SAFETY: fdopendir failed, so fd is still ours to close.
            unsafe { libc::close(fd) };
            return Err(e);
        }
        let mut out = Vec::new();
        let result = loop {
            // SAFETY: errno is this thread's; readdir sets it only on an error.
            unsafe { *libc::__errno_location() = 0 };
            // SAFETY: stream is an open directory stream.
            let entry = unsafe { libc::readdir(stream) };
            if entry.is_null() {
                let e = io::Error::last_os_error();
                break if e.raw_os_error() == Some(0) {
                    Ok(())
                } else {
                    Err(e)
                };
            }
            // SAFETY: d_name of an entry readdir returned is a NUL-terminated name.
            let name = unsafe { std::ffi::CStr::from_ptr((*entry).d_name.as_ptr()) }.to_bytes();
            if name != b"." && name != b".." {
                out.push(OsStr::from_bytes(name).to_os_string());
            }
        };
        // SAFETY: stream is open and closed once, with its descriptor.
        unsafe { libc::closedir(stream) };
        result.map(|()| out)
    }
}

/// Opens the file or device the user named as a target (links in that path followed: the
/// user chose it) and checks that it is still what was validated.
pub fn open_checked(path: &Path, flags: libc::c_int, expect: Identity) -> io::Result<File> {
    let c = cstr(path.as_os_str())?;
    // SAFETY: c is a valid C string; the descriptor is owned below.
    let fd = cvt(unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC | libc::O_NONBLOCK) })?;
    // SAFETY: fd was just opened and is owned by nobody else.
    let file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    let found = Identity::of(&file)?;
    if found != expect {
        return Err(io::Error::other(
            "no longer the file or device that was validated (replaced since?)",
        ));
    }
    // SAFETY: the descriptor is open; clearing O_NONBLOCK keeps the other flags.
    unsafe {
        let fl = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(file.as_raw_fd(), libc::F_SETFL, fl & !libc::O_NONBLOCK);
    }
    Ok(file)
}

/// The sizes an open file or device takes atomic writes of (`RWF_ATOMIC`), least and most,
/// as the kernel says through `statx` (`STATX_WRITE_ATOMIC`); `None` where it takes none
/// (or a kernel before 6.11 says nothing of them).
pub fn atomic_write_units(file: &File) -> io::Result<Option<(u32, u32)>> {
    use std::os::fd::AsRawFd;
    const STATX_WRITE_ATOMIC: u32 = 0x10000;
    // struct statx: stx_mask at 0, stx_atomic_write_unit_min and _max at 0xa8 and 0xac.
    let mut buf = [0u64; 32];
    // SAFETY: statx writes at most 256 bytes into buf, which holds 256; the empty path with
    // AT_EMPTY_PATH names the descriptor itself.
    let r = unsafe {
        libc::syscall(
            libc::SYS_statx,
            file.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            STATX_WRITE_ATOMIC,
            buf.as_mut_ptr(),
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    let bytes: Vec<u8> = buf.iter().flat_map(|w| w.to_ne_bytes()).collect();
    let u32_at = |i: usize| u32::from_ne_bytes(bytes[i..i + 4].try_into().expect("4 bytes"));
    let (min, max) = (u32_at(0xa8), u32_at(0xac));
    Ok((u32_at(0) & STATX_WRITE_ATOMIC != 0 && max > 0).then_some((min, max)))
}
#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn links_and_escapes_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        std::fs::write(&outside, b"precious").unwrap();
        let root = Dir::open(tmp.path()).unwrap();
        let run = root.create_dir("run").unwrap();
        symlink(&outside, tmp.path().join("run/link")).unwrap();
        for flags in [libc::O_RDONLY, libc::O_RDWR] {
            assert!(
                run.open_file("link", flags).is_err(),
                "a link is not followed"
            );
        }
        assert!(run.open_file("../outside", libc::O_RDWR).is_err());
        assert!(run.open_file("/etc/passwd", libc::O_RDONLY).is_err());
        assert!(run.create_file("link", 0).is_err(), "create never follows");
        symlink(tmp.path(), tmp.path().join("dirlink")).unwrap();
        assert!(root.open_dir("dirlink").is_err());
        run.remove_file("link").unwrap();
        assert_eq!(std::fs::read(&outside).unwrap(), b"precious");
    }

    #[test]
    fn fifo_and_directory_are_not_files() {
        let tmp = tempfile::tempdir().unwrap();
        let root = Dir::open(tmp.path()).unwrap();
        let c = CString::new(tmp.path().join("fifo").as_os_str().as_bytes()).unwrap();
        // SAFETY: c is a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(root.open_file("fifo", libc::O_RDONLY).is_err());
        root.create_dir("d").unwrap();
        assert!(root.open_file("d", libc::O_RDONLY).is_err());
    }

    #[test]
    fn identity_is_checked() {
        let tmp = tempfile::tempdir().unwrap();
        let root = Dir::open(tmp.path()).unwrap();
        let f = root.create_file("a", 0).unwrap();
        let id = Identity::of(&f).unwrap();
        drop(f);
        assert!(open_checked(&tmp.path().join("a"), libc::O_RDONLY, id).is_ok());
        root.remove_file("a").unwrap();
        root.create_file("a", 0).unwrap();
        // A new file under the old name is another inode (the first is still held open
        // nowhere, but the check is on identity, not name).
        let again = open_checked(&tmp.path().join("a"), libc::O_RDONLY, id);
        if let Ok(f) = &again {
            assert_eq!(
                Identity::of(f).unwrap(),
                id,
                "inode number reused by the fs"
            );
        }
    }

    #[test]
    fn atomic_write_replaces_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let root = Dir::open(tmp.path()).unwrap();
        root.write_atomic("m.json", b"one").unwrap();
        root.write_atomic("m.json", b"two").unwrap();
        assert_eq!(std::fs::read(tmp.path().join("m.json")).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
    }
}
