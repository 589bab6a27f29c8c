//! What a target sits on (device, media, filesystem) and `--auto`: sizing a workload from the
//! host, the way storage vendors' benchmarking guides say to.

use std::path::{Path, PathBuf};

use crate::counters::HostRoot;
use crate::inventory::{parse_mountinfo, Inventory, NETWORK_FS};
use crate::Space;

/// What a benchmark target is stored on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TargetMedia {
    /// The whole block device (`vda`, `nvme0n1`, `dm-0`), when there is one.
    pub device: Option<String>,
    /// Whether the kernel says that device spins.
    pub rotational: Option<bool>,
    /// Filesystem type for a file or directory (`ext4`, `nfs4`, `tmpfs`).
    pub fs_type: Option<String>,
}

impl TargetMedia {
    /// Whether the target is a filesystem served over the network (NFS, SMB, CephFS, ...).
    pub fn is_file_server(&self) -> bool {
        self.fs_type
            .as_deref()
            .is_some_and(|t| NETWORK_FS.contains(&t))
    }
}

/// Finds the device and filesystem under `path` (a directory, file or block device; for a
/// path not yet created, its nearest existing parent). Unknown parts stay `None`.
pub fn target_media(path: &Path) -> TargetMedia {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let root = HostRoot::live();
    let mut p = path.to_path_buf();
    let meta = loop {
        match std::fs::metadata(&p) {
            Ok(m) => break Some(m),
            Err(_) => match p.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => p = parent.to_path_buf(),
                _ => break None,
            },
        }
    };
    let Some(meta) = meta else {
        return TargetMedia::default();
    };
    let canonical = std::fs::canonicalize(&p).unwrap_or(p);
    let is_device = meta.file_type().is_block_device();
    let dev = if is_device { meta.rdev() } else { meta.dev() };
    let mounts = root
        .read("proc/self/mountinfo")
        .map(|t| parse_mountinfo(&t))
        .unwrap_or_default();
    // The mount holding the path: the longest mount point that is a prefix of it.
    let mount = (!is_device)
        .then(|| {
            mounts
                .iter()
                .filter(|m| canonical.starts_with(&m.mount_point))
                .max_by_key(|m| m.mount_point.len())
        })
        .flatten();
    let mut device = whole_disk_of(&root, libc::major(dev), libc::minor(dev));
    if device.is_none() {
        // btrfs and some others report an anonymous st_dev; the mount source names the device.
        device = mount
            .and_then(|m| m.source.as_deref())
            .filter(|s| s.starts_with("/dev/"))
            .and_then(|s| std::fs::metadata(s).ok())
            .and_then(|m| whole_disk_of(&root, libc::major(m.rdev()), libc::minor(m.rdev())));
    }
    let rotational = device.as_ref().and_then(|d| {
        root.read_value(&format!("sys/block/{d}/queue/rotational"))
            .map(|v| v == "1")
    });
    TargetMedia {
        device,
        rotational,
        fs_type: mount.map(|m| m.fs_type.clone()),
    }
}

/// The whole disk holding device `major:minor` (a partition's parent), from /sys/dev/block.
fn whole_disk_of(root: &HostRoot, major: u32, minor: u32) -> Option<String> {
    let link = root.path(&format!("sys/dev/block/{major}:{minor}"));
    let real: PathBuf = std::fs::canonicalize(link).ok()?;
    let real = if real.join("partition").exists() {
        real.parent()?.to_path_buf()
    } else {
        real
    };
    real.file_name().map(|n| n.to_string_lossy().into_owned())
}

/// What `--auto` chose, and why, in words the user sees.
#[derive(Debug, Clone, PartialEq)]
pub struct Sizing {
    /// Parallel jobs.
    pub jobs: u32,
    /// I/Os in flight per job.
    pub iodepth: u32,
    /// Bytes per file (`None`: the target's own size, for devices and existing files).
    pub size: Option<u64>,
    /// One line per choice: what and why.
    pub reasons: Vec<String>,
}

/// What `--auto` sizes against: the target and the room on its filesystem.
#[derive(Debug, Clone, Default)]
pub struct SizingInput {
    /// The target's media.
    pub media: TargetMedia,
    /// Whether files are created (a directory target); devices and existing files keep their
    /// own size.
    pub creates_files: bool,
    /// Files per job (`--files`).
    pub files_per_job: u32,
    /// Room on the target's filesystem, when known.
    pub space: Option<Space>,
}

impl SizingInput {
    /// The facts `--auto` sizes from for `target`: its media, whether files are created there
    /// (a directory, unless `reuse` runs on kept files), and the room on its filesystem.
    pub fn for_target(target: &Path, reuse: bool) -> SizingInput {
        let creates_files =
            !reuse && matches!(crate::classify(target), Ok(crate::TargetKind::Directory));
        SizingInput {
            media: target_media(target),
            creates_files,
            files_per_job: 1,
            space: creates_files.then(|| crate::space(target).ok()).flatten(),
        }
    }
}

const MIB: u64 = 1 << 20;
const GIB: f64 = (1u64 << 30) as f64;

/// Sizes a workload from the host, the rules of storage vendors' guides: jobs = CPU threads
/// for SSD/NVMe and threads / 2 for rotational disks; iodepth 32 for SSD/NVMe, 4 for
/// rotational; per-job size 2 × RAM / cores, so the page cache cannot hold the working set;
/// on a file server (NFS, SMB, ...) a working set of at least 3 × RAM. The size is capped so
/// the filesystem stays below 80% full, and says so.
pub fn auto_size(inv: &Inventory, input: &SizingInput) -> Sizing {
    let mut reasons = Vec::new();
    let threads = inv.cpus.max(1) as u32;
    let media = match input.media.rotational {
        Some(true) => "rotational",
        Some(false) => "SSD/NVMe",
        None => "unknown media (sized as SSD)",
    };
    let dev = input
        .media
        .device
        .as_deref()
        .map_or_else(String::new, |d| format!(" {d}"));
    let rotational = input.media.rotational == Some(true);
    let jobs = if rotational {
        (threads / 2).max(1)
    } else {
        threads
    };
    reasons.push(format!(
        "jobs {jobs}: {threads} CPU threads, {}target{dev} is {media}",
        if rotational { "halved since the " } else { "" }
    ));
    let iodepth = if rotational { 4 } else { 32 };
    reasons.push(format!("iodepth {iodepth}: {media}"));
    let size = input.creates_files.then(|| {
        let files = input.files_per_job.max(1) as u64;
        let cores = inv.cpu_cores.unwrap_or(inv.cpus).max(1) as u64;
        let Some(ram) = inv.memory_bytes else {
            reasons.push("size 1 GiB per job: memory size unknown".to_string());
            return (1u64 << 30) / files;
        };
        let mut per_job = 2 * ram / cores;
        let mut why = format!(
            "2 × {:.1} GiB RAM / {cores} cores, larger than the page cache can hold",
            ram as f64 / GIB
        );
        if input.media.is_file_server() && per_job * jobs as u64 <= 3 * ram {
            per_job = (3 * ram).div_ceil(jobs as u64);
            why = format!(
                "a file server ({}): working set ≥ 3 × {:.1} GiB RAM across {jobs} jobs",
                input.media.fs_type.as_deref().unwrap_or("?"),
                ram as f64 / GIB
            );
        }
        if let Some(space) = input.space {
            // Keep the filesystem below 80% full: used + working set <= 80% of its size.
            let room = (space.total / 5 * 4).saturating_sub(space.used).min(space.avail);
            if per_job * jobs as u64 > room {
                per_job = room / jobs as u64;
                why = format!(
                    "capped to keep the filesystem below 80% full ({:.1} GiB usable); smaller than 2 × RAM / cores, so prefer --direct",
                    room as f64 / GIB
                );
            }
        }
        let per_file = (per_job / files / MIB * MIB).max(MIB);
        reasons.push(format!(
            "size {:.2} GiB per file, {files} file(s) per job: {why}",
            per_file as f64 / GIB
        ));
        per_file
    });
    if !input.creates_files {
        reasons.push("size: the target's own size (a device or an existing file)".to_string());
    }
    Sizing {
        jobs,
        iodepth,
        size,
        reasons,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(cpus: usize, cores: usize, ram_gib: u64) -> Inventory {
        Inventory {
            cpus,
            cpu_cores: Some(cores),
            memory_bytes: Some(ram_gib << 30),
            ..Inventory::default()
        }
    }

    fn media(rotational: Option<bool>, fs: &str) -> TargetMedia {
        TargetMedia {
            device: Some("sdb".into()),
            rotational,
            fs_type: Some(fs.into()),
        }
    }

    fn input(m: TargetMedia) -> SizingInput {
        SizingInput {
            media: m,
            creates_files: true,
            files_per_job: 1,
            space: None,
        }
    }

    #[test]
    fn ssd_uses_every_thread_and_a_deep_queue() {
        let s = auto_size(&host(16, 8, 64), &input(media(Some(false), "xfs")));
        assert_eq!((s.jobs, s.iodepth), (16, 32));
        // 2 × 64 GiB / 8 cores = 16 GiB per job.
        assert_eq!(s.size, Some(16 << 30));
        assert!(s.reasons[0].contains("16 CPU threads"), "{:?}", s.reasons);
    }

    #[test]
    fn rotational_halves_jobs_and_queue_is_shallow() {
        let s = auto_size(&host(16, 8, 64), &input(media(Some(true), "ext4")));
        assert_eq!((s.jobs, s.iodepth), (8, 4));
        let s = auto_size(&host(1, 1, 4), &input(media(Some(true), "ext4")));
        assert_eq!(s.jobs, 1);
    }

    #[test]
    fn file_servers_get_three_times_ram() {
        // 2 × 64 / 8 = 16 GiB × 16 jobs = 256 GiB ≥ 3 × 64: unchanged.
        let s = auto_size(&host(16, 8, 64), &input(media(None, "nfs4")));
        assert_eq!(s.size, Some(16 << 30));
        // 2 × 64 / 64 cores = 2 GiB × 4 jobs = 8 GiB < 192 GiB: raised to 48 GiB per job.
        let mut inv = host(4, 64, 64);
        inv.cpus = 4;
        let s = auto_size(&inv, &input(media(Some(false), "nfs4")));
        assert_eq!(s.size, Some(48 << 30));
        assert!(s.reasons.last().unwrap().contains("file server"));
    }

    #[test]
    fn capped_by_free_space_and_per_file() {
        let mut i = input(media(Some(false), "ext4"));
        i.files_per_job = 4;
        i.space = Some(Space {
            total: 100 << 30,
            avail: 60 << 30,
            used: 40 << 30,
        });
        // Wanted 2 × 64 / 8 × 16 jobs = 256 GiB; room to 80% full is 40 GiB: 2.5 GiB per job.
        let s = auto_size(&host(16, 8, 64), &i);
        assert_eq!(s.size, Some((40u64 << 30) / 16 / 4 / MIB * MIB));
        assert!(s.reasons.last().unwrap().contains("80% full"));
    }

    #[test]
    fn devices_keep_their_size_and_unknowns_are_said() {
        let mut i = input(TargetMedia::default());
        i.creates_files = false;
        let s = auto_size(&Inventory::default(), &i);
        assert_eq!((s.jobs, s.iodepth, s.size), (1, 32, None));
        assert!(s.reasons.iter().any(|r| r.contains("unknown media")));
        let s = auto_size(
            &Inventory {
                cpus: 2,
                ..Inventory::default()
            },
            &input(TargetMedia::default()),
        );
        assert_eq!(s.size, Some(1 << 30));
    }

    #[test]
    fn live_target_media_of_root() {
        let m = target_media(Path::new("/"));
        assert!(m.fs_type.is_some());
        // A path not yet created resolves through its parent.
        let m2 = target_media(Path::new("/tmp/does/not/exist/yet"));
        assert_eq!(m2.fs_type, target_media(Path::new("/tmp")).fs_type);
    }
}
