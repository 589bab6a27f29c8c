//! Target classification and the checks made before any load.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// A check that could not be made or a target that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The path does not exist or cannot be examined.
    #[error("{path}: {source}; give an existing directory, file or block device")]
    Missing {
        /// The target.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A socket, fifo or character device.
    #[error("{path}: not a directory, regular file or block device")]
    Unsupported {
        /// The target.
        path: PathBuf,
    },
    /// Reading the device or filesystem failed.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// What a target is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetKind {
    /// A directory: stormark creates its run directory inside.
    Directory,
    /// An existing regular file, used in place.
    File {
        /// Its length, bytes.
        len: u64,
    },
    /// A block device.
    BlockDevice {
        /// Its size, bytes.
        size: u64,
        /// Logical block size, bytes (the O_DIRECT unit).
        logical_block: u64,
        /// Device number (`st_rdev`).
        rdev: u64,
    },
}

impl TargetKind {
    /// `directory`, `file` or `block-device`, as in results.
    pub fn kind_name(&self) -> &'static str {
        match self {
            TargetKind::Directory => "directory",
            TargetKind::File { .. } => "file",
            TargetKind::BlockDevice { .. } => "block-device",
        }
    }
}

/// Classifies a target path.
pub fn classify(path: &Path) -> Result<TargetKind, ProbeError> {
    let meta = std::fs::metadata(path).map_err(|source| ProbeError::Missing {
        path: path.into(),
        source,
    })?;
    let ft = meta.file_type();
    if ft.is_dir() {
        Ok(TargetKind::Directory)
    } else if ft.is_file() {
        Ok(TargetKind::File { len: meta.len() })
    } else if ft.is_block_device() {
        let io = |source| ProbeError::Io {
            path: path.into(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        let mut size: u64 = 0;
        let mut lbs: libc::c_int = 0;
        // SAFETY: BLKGETSIZE64 writes a u64, BLKSSZGET an int, into the pointers given.
        let ok = unsafe {
            libc::ioctl(
                std::os::fd::AsRawFd::as_raw_fd(&file),
                BLKGETSIZE64,
                &mut size,
            ) == 0
                && libc::ioctl(std::os::fd::AsRawFd::as_raw_fd(&file), BLKSSZGET, &mut lbs) == 0
        };
        if !ok {
            return Err(io(std::io::Error::last_os_error()));
        }
        Ok(TargetKind::BlockDevice {
            size,
            logical_block: lbs.max(512) as u64,
            rdev: meta.rdev(),
        })
    } else {
        Err(ProbeError::Unsupported { path: path.into() })
    }
}

// From linux/fs.h: _IOR(0x12, 114, size_t) and _IO(0x12, 104).
const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
const BLKSSZGET: libc::c_ulong = 0x1268;

fn major_minor(rdev: u64) -> (u64, u64) {
    (libc::major(rdev) as u64, libc::minor(rdev) as u64)
}

/// Why a block device must not be written, if it is in use: mounted (itself or a partition),
/// held by another block device (LVM, md, dm-crypt), or active swap; for a loop device, also
/// when its backing file backs another loop device that is in use, or is active swap (two
/// loop devices on one image write the same blocks). `None` when it is free.
pub fn device_in_use(path: &Path, rdev: u64) -> Option<String> {
    if let Some(why) = device_itself_in_use(path, rdev) {
        return Some(why);
    }
    let (maj, min) = major_minor(rdev);
    let backing = loop_backing(&format!("/sys/dev/block/{maj}:{min}"))?;
    if let Some(why) = swap_file_in_use(backing.1) {
        return Some(format!("its backing file {}: {why}", backing.0));
    }
    for (other, other_rdev, id) in attached_loops() {
        if id == backing.1 && other_rdev != rdev {
            if let Some(why) = device_itself_in_use(Path::new(&other), other_rdev) {
                return Some(format!(
                    "its backing file {} also backs {other}, and {why}",
                    backing.0
                ));
            }
        }
    }
    None
}

/// Why a regular file (by `st_dev`, `st_ino`) must not be written, if it is in use: it backs
/// an attached loop device (whose filesystem would be corrupted under it), or is active swap.
pub fn file_in_use(dev: u64, ino: u64) -> Option<String> {
    if let Some(why) = swap_file_in_use((dev, ino)) {
        return Some(why);
    }
    attached_loops()
        .into_iter()
        .find(|(_, _, id)| *id == (dev, ino))
        .map(|(other, _, _)| format!("it backs the loop device {other}"))
}

/// `(path, (st_dev, st_ino))` of the file behind the loop device whose sysfs directory is
/// `sys`, when it is an attached loop device whose file can be found.
fn loop_backing(sys: &str) -> Option<(String, (u64, u64))> {
    let name = std::fs::read_to_string(format!("{sys}/loop/backing_file")).ok()?;
    let name = name.trim_end_matches('\n');
    let meta = std::fs::metadata(name).ok()?;
    Some((name.to_string(), (meta.dev(), meta.ino())))
}

/// Every attached loop device: its `/dev` path, device number and backing file's identity.
fn attached_loops() -> Vec<(String, u64, (u64, u64))> {
    let Ok(entries) = std::fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("loop") {
            continue;
        }
        let sys = format!("/sys/block/{name}");
        let Some((_, id)) = loop_backing(&sys) else {
            continue;
        };
        let dev = std::fs::read_to_string(format!("{sys}/dev")).unwrap_or_default();
        let Some((maj, min)) = dev.trim().split_once(':') else {
            continue;
        };
        let (Ok(maj), Ok(min)) = (maj.parse::<u32>(), min.parse::<u32>()) else {
            continue;
        };
        out.push((format!("/dev/{name}"), libc::makedev(maj, min), id));
    }
    out
}

/// Whether the file `id` is active swap.
fn swap_file_in_use(id: (u64, u64)) -> Option<String> {
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    swaps.lines().skip(1).find_map(|line| {
        let swap = line.split_whitespace().next()?;
        let meta = std::fs::metadata(swap).ok()?;
        (meta.file_type().is_file() && (meta.dev(), meta.ino()) == id)
            .then(|| format!("{swap} is in use as swap"))
    })
}

fn device_itself_in_use(path: &Path, rdev: u64) -> Option<String> {
    let (maj, min) = major_minor(rdev);
    let sys = PathBuf::from(format!("/sys/dev/block/{maj}:{min}"));
    let mut devs = vec![(format!("{maj}:{min}"), path.display().to_string())];
    if let Ok(entries) = std::fs::read_dir(&sys) {
        for e in entries.flatten() {
            if e.path().join("partition").exists() {
                if let Ok(dev) = std::fs::read_to_string(e.path().join("dev")) {
                    devs.push((
                        dev.trim().to_string(),
                        format!("partition {}", e.file_name().to_string_lossy()),
                    ));
                }
            }
        }
    }
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for line in mountinfo.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        if fields.len() > 4 {
            if let Some((_, what)) = devs.iter().find(|(d, _)| d == fields[2]) {
                return Some(format!("{what} is mounted at {}", fields[4]));
            }
        }
    }
    for (dev, what) in &devs {
        let holders = PathBuf::from(format!("/sys/dev/block/{dev}/holders"));
        if let Some(h) = std::fs::read_dir(holders)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
        {
            return Some(format!(
                "{what} is held by {} (LVM, RAID or device mapper)",
                h.file_name().to_string_lossy()
            ));
        }
    }
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    for line in swaps.lines().skip(1) {
        if let Some(swap) = line.split_whitespace().next() {
            if let Ok(meta) = std::fs::metadata(swap) {
                let (smaj, smin) = major_minor(meta.rdev());
                if meta.file_type().is_block_device()
                    && devs.iter().any(|(d, _)| *d == format!("{smaj}:{smin}"))
                {
                    return Some(format!("{swap} is in use as swap"));
                }
            }
        }
    }
    None
}

/// The filesystem, volume or partition-table signature at the start of a device or image,
/// if any: what `wipefs` would report for the common kinds.
pub fn fs_signature(path: &Path) -> Result<Option<&'static str>, ProbeError> {
    let io = |source| ProbeError::Io {
        path: path.into(),
        source,
    };
    let mut head = vec![0u8; 0x10040 + 64];
    let mut f = File::open(path).map_err(io)?;
    let mut filled = 0;
    while filled < head.len() {
        match f.read(&mut head[filled..]).map_err(io)? {
            0 => break,
            n => filled += n,
        }
    }
    head.truncate(filled);
    Ok(signature_of(&head))
}

/// Matches magic numbers (offsets from each format's on-disk specification, as libblkid has).
pub(crate) fn signature_of(head: &[u8]) -> Option<&'static str> {
    let at = |off: usize, magic: &[u8]| head.get(off..off + magic.len()) == Some(magic);
    let checks: &[(usize, &[u8], &'static str)] = &[
        (0x438, &[0x53, 0xEF], "ext2/3/4"),
        (0, b"XFSB", "xfs"),
        (0x10040, b"_BHRfS_M", "btrfs"),
        (512, b"EFI PART", "GPT partition table"),
        (512, b"LABELONE", "LVM physical volume"),
        (0x1018, b"LVM2 001", "LVM physical volume"),
        (4086, b"SWAPSPACE2", "swap"),
        (4086, b"SWAP-SPACE", "swap"),
        (0, b"LUKS\xba\xbe", "LUKS"),
        (3, b"NTFS    ", "ntfs"),
        (0x52, b"FAT32   ", "vfat"),
        (0x36, b"FAT16   ", "vfat"),
        (0x36, b"FAT12   ", "vfat"),
        (0x1000, &[0xfc, 0x4e, 0x2b, 0xa9], "linux raid member"),
        (0, b"ZFS", "zfs"),
        (0x10000, b"ReIsEr", "reiserfs"),
        (0x8001, b"CD001", "iso9660"),
    ];
    if let Some((_, _, name)) = checks.iter().find(|(off, magic, _)| at(*off, magic)) {
        return Some(name);
    }
    // An MBR: the boot signature plus at least one non-empty partition entry.
    if at(510, &[0x55, 0xAA]) && (0..4).any(|i| head.get(446 + 16 * i + 4).is_some_and(|t| *t != 0))
    {
        return Some("MBR partition table");
    }
    None
}

/// Room on the filesystem holding `path`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Space {
    /// Size of the filesystem, bytes.
    pub total: u64,
    /// Available to this user, bytes.
    pub avail: u64,
    /// In use, bytes.
    pub used: u64,
}

impl Space {
    /// Percent full after writing `extra` more bytes.
    pub fn used_pct_after(&self, extra: u64) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        (self.used + extra) as f64 * 100.0 / self.total as f64
    }
}

/// Room on the filesystem holding `path` (statvfs).
pub fn space(path: &Path) -> Result<Space, ProbeError> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| ProbeError::Unsupported { path: path.into() })?;
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a valid C string; s is a valid statvfs to fill.
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return Err(ProbeError::Io {
            path: path.into(),
            source: std::io::Error::last_os_error(),
        });
    }
    let frsize = s.f_frsize as u64;
    Ok(Space {
        total: s.f_blocks as u64 * frsize,
        avail: s.f_bavail as u64 * frsize,
        used: (s.f_blocks as u64).saturating_sub(s.f_bfree as u64) * frsize,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(off: usize, magic: &[u8]) -> Vec<u8> {
        let mut v = vec![0u8; 0x10040 + 64];
        v[off..off + magic.len()].copy_from_slice(magic);
        v
    }

    #[test]
    fn signatures() {
        assert_eq!(signature_of(&with(0x438, &[0x53, 0xEF])), Some("ext2/3/4"));
        assert_eq!(signature_of(&with(0, b"XFSB")), Some("xfs"));
        assert_eq!(signature_of(&with(0x10040, b"_BHRfS_M")), Some("btrfs"));
        assert_eq!(
            signature_of(&with(512, b"EFI PART")),
            Some("GPT partition table")
        );
        assert_eq!(signature_of(&with(4086, b"SWAPSPACE2")), Some("swap"));
        let mut mbr = with(510, &[0x55, 0xAA]);
        assert_eq!(
            signature_of(&mbr),
            None,
            "a boot signature without partitions is not a table"
        );
        mbr[446 + 4] = 0x83;
        assert_eq!(signature_of(&mbr), Some("MBR partition table"));
        assert_eq!(signature_of(&vec![0u8; 1 << 17]), None);
        assert_eq!(signature_of(&[]), None);
    }

    #[test]
    fn classify_kinds() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(classify(dir.path()).unwrap(), TargetKind::Directory);
        let f = dir.path().join("f");
        std::fs::write(&f, vec![1u8; 1000]).unwrap();
        assert_eq!(classify(&f).unwrap(), TargetKind::File { len: 1000 });
        let err = classify(&dir.path().join("missing"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("give an existing directory, file or block device"),
            "{err}"
        );
        assert!(matches!(
            classify(Path::new("/dev/null")),
            Err(ProbeError::Unsupported { .. })
        ));
    }

    #[test]
    fn space_of_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let s = space(dir.path()).unwrap();
        assert!(s.total > 0 && s.avail <= s.total);
        assert!(s.used_pct_after(0) <= 100.0);
    }
}
