//! The host's inventory: CPU, memory, kernel, block devices, filesystems and network
//! interfaces, for `stormark probe` and every results document (`hosts[].inventory`).

use std::collections::BTreeSet;
use std::path::Path;

use procfs_core::process::MountInfos;
use procfs_core::FromBufRead;
pub use stormark_stats::{BlockDevice, Filesystem, Inventory, NetInterface, Partition};

use crate::counters::HostRoot;

/// Filesystem types that hold no user data.
const PSEUDO_FS: &[&str] = &[
    "proc",
    "sysfs",
    "devtmpfs",
    "devpts",
    "cgroup",
    "cgroup2",
    "securityfs",
    "debugfs",
    "tracefs",
    "pstore",
    "bpf",
    "mqueue",
    "hugetlbfs",
    "configfs",
    "fusectl",
    "binfmt_misc",
    "autofs",
    "efivarfs",
    "nsfs",
    "rpc_pipefs",
    "selinuxfs",
];

/// Filesystem types served over the network: file-server targets for `--auto`.
pub const NETWORK_FS: &[&str] = &[
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "ceph",
    "fuse.cephfs",
    "glusterfs",
    "fuse.glusterfs",
    "lustre",
    "gpfs",
    "beegfs",
    "9p",
    "fuse.sshfs",
];

/// Reads the inventory of this host.
pub fn collect_inventory() -> Inventory {
    collect_inventory_from(&HostRoot::live())
}

/// Reads the inventory of the host whose /proc and /sys are under `root` (a fixture in
/// tests). Syscalls (io_uring, statvfs, CPU affinity) are made only for the live host.
pub fn collect_inventory_from(root: &HostRoot) -> Inventory {
    let mut notes = Vec::new();
    let mut need = |rel: &str, what: &str| {
        let text = root.read(rel);
        if text.is_none() {
            notes.push(format!("/{rel} unreadable: {what} unknown"));
        }
        text.unwrap_or_default()
    };
    let meminfo = need("proc/meminfo", "memory and swap");
    let cpuinfo = need("proc/cpuinfo", "CPU model, cores and threads");
    let mountinfo = need("proc/self/mountinfo", "mounts and filesystems");
    let cpu = parse_cpuinfo(&cpuinfo);
    let mounts = parse_mountinfo(&mountinfo);
    let live = root.is_live();
    let (io_uring, io_uring_error) = if live {
        match io_uring_probe() {
            Ok(()) => (true, None),
            Err(e) => (false, Some(e)),
        }
    } else {
        (false, Some("not probed (not the live host)".to_string()))
    };
    let cpus = if live {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        cpu.threads.unwrap_or(1)
    };
    let mut inv = Inventory {
        hostname: root
            .read_value("proc/sys/kernel/hostname")
            .unwrap_or_else(|| "localhost".to_string()),
        kernel: root.read_value("proc/sys/kernel/osrelease"),
        os: root.read("etc/os-release").and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                .map(|v| v.trim().trim_matches('"').to_string())
        }),
        cpu_model: cpu.model,
        cpus,
        cpu_threads: cpu.threads,
        cpu_cores: cpu.cores,
        cpu_sockets: cpu.sockets,
        memory_bytes: meminfo_kib(&meminfo, "MemTotal:").map(|k| k * 1024),
        swap_bytes: meminfo_kib(&meminfo, "SwapTotal:").map(|k| k * 1024),
        io_uring,
        io_uring_error,
        block_devices: block_devices(root, &mounts),
        filesystems: filesystems(&mounts, live),
        net_interfaces: net_interfaces(root),
        cache_eviction: crate::eviction::cache_eviction(root),
        notes,
    };
    if inv.block_devices.is_empty() {
        inv.notes
            .push("/sys/block lists nothing: block devices unknown".to_string());
    }
    inv
}

/// A mount, as /proc/self/mountinfo gives it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Mount {
    pub majmin: String,
    pub mount_point: String,
    pub fs_type: String,
    pub source: Option<String>,
}

/// Parses /proc/self/mountinfo; lines that do not parse are skipped.
pub(crate) fn parse_mountinfo(text: &str) -> Vec<Mount> {
    let parsed = MountInfos::from_buf_read(text.as_bytes()).map(|m| m.0);
    let infos = match parsed {
        Ok(v) => v,
        // One odd line must not lose the others.
        Err(_) => text
            .lines()
            .filter_map(|l| procfs_core::process::MountInfo::from_line(l).ok())
            .collect(),
    };
    infos
        .into_iter()
        .map(|m| Mount {
            majmin: m.majmin,
            mount_point: m.mount_point.to_string_lossy().into_owned(),
            fs_type: m.fs_type,
            source: m.mount_source,
        })
        .collect()
}

#[derive(Debug, Default, PartialEq)]
struct CpuInfo {
    model: Option<String>,
    threads: Option<usize>,
    cores: Option<usize>,
    sockets: Option<usize>,
}

/// Model, threads (one `processor` block each), sockets (distinct `physical id`) and cores
/// (distinct `physical id`/`core id` pairs; ARM kernels print neither, so cores are unknown
/// there unless `cpu cores` is given).
fn parse_cpuinfo(text: &str) -> CpuInfo {
    let mut threads = 0usize;
    let mut model = None;
    let mut sockets = BTreeSet::new();
    let mut cores = BTreeSet::new();
    let mut socket: Option<String> = None;
    let mut cores_per_socket: Option<usize> = None;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        match key {
            "processor" => {
                threads += 1;
                socket = None;
            }
            "model name" | "Model" | "cpu model" if model.is_none() && !value.is_empty() => {
                model = Some(value.to_string());
            }
            "physical id" => {
                sockets.insert(value.to_string());
                socket = Some(value.to_string());
            }
            "core id" => {
                cores.insert((socket.clone().unwrap_or_default(), value.to_string()));
            }
            "cpu cores" => cores_per_socket = value.parse().ok(),
            _ => {}
        }
    }
    let sockets_n = (!sockets.is_empty()).then_some(sockets.len());
    let cores_n = if !cores.is_empty() {
        Some(cores.len())
    } else {
        cores_per_socket.map(|c| c * sockets_n.unwrap_or(1))
    };
    CpuInfo {
        model,
        threads: (threads > 0).then_some(threads),
        cores: cores_n,
        sockets: sockets_n,
    }
}

fn block_devices(root: &HostRoot, mounts: &[Mount]) -> Vec<BlockDevice> {
    let mounted = |dev: &str| -> (Vec<String>, Option<String>) {
        let Some(majmin) = root.read_value(&format!("{dev}/dev")) else {
            return (Vec::new(), None);
        };
        let here: Vec<&Mount> = mounts.iter().filter(|m| m.majmin == majmin).collect();
        (
            here.iter().map(|m| m.mount_point.clone()).collect(),
            here.first().map(|m| m.fs_type.clone()),
        )
    };
    let sectors = |rel: &str| {
        root.read_value(rel)
            .and_then(|s| s.parse::<u64>().ok())
            .map(|s| s * 512)
    };
    crate::counters::whole_disks(root)
        .into_iter()
        .map(|name| {
            let base = format!("sys/block/{name}");
            let (mount_points, fs_type) = mounted(&base);
            let partitions = root
                .list(&base)
                .into_iter()
                .filter(|p| {
                    p.starts_with(&name) && root.path(&format!("{base}/{p}/partition")).exists()
                })
                .map(|p| {
                    let (mount_points, fs_type) = mounted(&format!("{base}/{p}"));
                    Partition {
                        size_bytes: sectors(&format!("{base}/{p}/size")),
                        name: p,
                        mount_points,
                        fs_type,
                    }
                })
                .collect();
            BlockDevice {
                size_bytes: sectors(&format!("{base}/size")),
                model: root
                    .read_value(&format!("{base}/device/model"))
                    .or_else(|| root.read_value(&format!("{base}/device/name"))),
                rotational: root
                    .read_value(&format!("{base}/queue/rotational"))
                    .map(|v| v == "1"),
                scheduler: root
                    .read_value(&format!("{base}/queue/scheduler"))
                    .and_then(|s| active_scheduler(&s)),
                queue_depth: root
                    .read_value(&format!("{base}/queue/nr_requests"))
                    .and_then(|v| v.parse().ok()),
                logical_block_bytes: root
                    .read_value(&format!("{base}/queue/logical_block_size"))
                    .and_then(|v| v.parse().ok()),
                max_sectors_kb: root
                    .read_value(&format!("{base}/queue/max_sectors_kb"))
                    .and_then(|v| v.parse().ok()),
                max_hw_sectors_kb: root
                    .read_value(&format!("{base}/queue/max_hw_sectors_kb"))
                    .and_then(|v| v.parse().ok()),
                max_segments: root
                    .read_value(&format!("{base}/queue/max_segments"))
                    .and_then(|v| v.parse().ok()),
                transport: transport(root, &name),
                vendor: root.read_value(&format!("{base}/device/vendor")),
                firmware: root
                    .read_value(&format!("{base}/device/firmware_rev"))
                    .or_else(|| root.read_value(&format!("{base}/device/rev"))),
                // Left out unless asked (read_serials): a shared report should not carry it.
                serial: None,
                hw_queues: Some(root.list(&format!("{base}/mq")).len() as u32).filter(|n| *n > 0),
                hw_queue_depth: root
                    .read_value(&format!("{base}/mq/0/nr_tags"))
                    .and_then(|v| v.parse().ok()),
                mount_points,
                fs_type,
                partitions,
                name,
            }
        })
        .collect()
}

/// Fills in each block device's serial number, where sysfs has one: `device/serial` (NVMe,
/// and SCSI/SATA where the driver shows it), `serial` (virtio), or the unit serial number page
/// of a SCSI or SATA device (`device/vpd_pg80`: a 4-byte header, then the ASCII serial).
/// Never called for a run's inventory: only `stormark probe --show-serial` asks.
pub fn read_serials(inv: &mut Inventory, root: &HostRoot) {
    for d in &mut inv.block_devices {
        let base = format!("sys/block/{}", d.name);
        d.serial = root
            .read_value(&format!("{base}/device/serial"))
            .or_else(|| root.read_value(&format!("{base}/serial")))
            .or_else(|| {
                let page = std::fs::read(root.path(&format!("{base}/device/vpd_pg80"))).ok()?;
                let len = usize::from(*page.get(3)?);
                let text = String::from_utf8_lossy(page.get(4..4 + len)?)
                    .trim()
                    .to_string();
                (!text.is_empty()).then_some(text)
            });
    }
}

/// How the host reaches block device `name`: read from where sysfs places it (its path under
/// /sys/devices), `None` where that says nothing known.
fn transport(root: &HostRoot, name: &str) -> Option<String> {
    if name.starts_with("dm-") {
        return Some("device-mapper".into());
    }
    if name.starts_with("md") {
        return Some("md".into());
    }
    let real = std::fs::canonicalize(root.path(&format!("sys/block/{name}"))).ok()?;
    let path = real.to_string_lossy();
    let has = |part: &str| path.contains(part);
    let kind = if has("/nvme") {
        "nvme"
    } else if has("/virtual/block/loop") {
        "loop"
    } else if has("/virtio") {
        "virtio"
    } else if has("/usb") {
        "usb"
    } else if has("/session") && has("/target") {
        "iscsi"
    } else if has("/ata") {
        "sata"
    } else if has("/end_device-") || has("/sas_") || has("/expander-") {
        "sas"
    } else if has("/target") && has("/host") {
        "scsi"
    } else {
        return None;
    };
    Some(kind.into())
}

/// The bracketed entry of `queue/scheduler` (`none [mq-deadline] kyber`); a lone name is the
/// active one.
fn active_scheduler(text: &str) -> Option<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    words
        .iter()
        .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        .or(if words.len() == 1 {
            words.first().copied()
        } else {
            None
        })
        .map(str::to_string)
}

fn filesystems(mounts: &[Mount], live: bool) -> Vec<Filesystem> {
    let mut seen = BTreeSet::new();
    mounts
        .iter()
        .filter(|m| !PSEUDO_FS.contains(&m.fs_type.as_str()))
        .filter(|m| seen.insert(m.mount_point.clone()))
        .map(|m| {
            let space = if live {
                crate::space(Path::new(&m.mount_point)).ok()
            } else {
                None
            };
            Filesystem {
                mount_point: m.mount_point.clone(),
                source: m.source.clone(),
                fs_type: m.fs_type.clone(),
                size_bytes: space.map(|s| s.total),
                used_pct: space.filter(|s| s.total > 0).map(|s| s.used_pct_after(0)),
            }
        })
        .collect()
}

fn net_interfaces(root: &HostRoot) -> Vec<NetInterface> {
    root.list("sys/class/net")
        .into_iter()
        .filter(|n| root.path(&format!("sys/class/net/{n}/mtu")).exists())
        .map(|name| {
            let base = format!("sys/class/net/{name}");
            NetInterface {
                // -1 (or EINVAL on read) when the driver does not know.
                speed_mbps: root
                    .read_value(&format!("{base}/speed"))
                    .and_then(|v| v.parse::<i64>().ok())
                    .filter(|v| *v > 0)
                    .map(|v| v as u64),
                mtu: root
                    .read_value(&format!("{base}/mtu"))
                    .and_then(|v| v.parse().ok()),
                state: root.read_value(&format!("{base}/operstate")),
                name,
            }
        })
        .collect()
}

fn io_uring_probe() -> Result<(), String> {
    // io_uring_setup(2) with a tiny ring; SYS_io_uring_setup is 425 on every architecture
    // that has it. A refusal (ENOSYS, EPERM under kernel.io_uring_disabled) is the answer.
    let mut params = [0u8; 120];
    // SAFETY: params is a zeroed io_uring_params (120 bytes); the fd is closed right away.
    let fd = unsafe { libc::syscall(425, 2u32, params.as_mut_ptr()) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error().to_string());
    }
    // SAFETY: fd was just returned by the kernel and is ours.
    unsafe { libc::close(fd as i32) };
    Ok(())
}

/// A `Key:   123 kB` line of /proc/meminfo, in KiB.
pub(crate) fn meminfo_kib(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_lines() {
        let text =
            "MemTotal:       24608060 kB\nMemFree:        1 kB\nSwapTotal:             0 kB\n";
        assert_eq!(meminfo_kib(text, "MemTotal:"), Some(24_608_060));
        assert_eq!(meminfo_kib(text, "SwapTotal:"), Some(0));
        assert_eq!(meminfo_kib(text, "Nope:"), None);
        assert_eq!(meminfo_kib("MemTotal: x kB", "MemTotal:"), None);
    }

    #[test]
    fn schedulers() {
        assert_eq!(
            active_scheduler("none [mq-deadline] kyber bfq"),
            Some("mq-deadline".into())
        );
        assert_eq!(active_scheduler("[none] mq-deadline"), Some("none".into()));
        assert_eq!(active_scheduler("none"), Some("none".into()));
        assert_eq!(active_scheduler("none kyber"), None);
        assert_eq!(active_scheduler(""), None);
    }

    #[test]
    fn cpuinfo_counts_threads_cores_and_sockets() {
        // Two sockets, two cores each, two threads per core.
        let mut text = String::new();
        let mut n = 0;
        for socket in 0..2 {
            for core in 0..2 {
                for _ in 0..2 {
                    text += &format!(
                        "processor\t: {n}\nmodel name\t: Xeon\nphysical id\t: {socket}\ncore id\t\t: {core}\ncpu cores\t: 2\n\n"
                    );
                    n += 1;
                }
            }
        }
        let c = parse_cpuinfo(&text);
        assert_eq!(c.threads, Some(8));
        assert_eq!(c.cores, Some(4));
        assert_eq!(c.sockets, Some(2));
        assert_eq!(c.model.as_deref(), Some("Xeon"));
        assert_eq!(parse_cpuinfo(""), CpuInfo::default());
    }

    #[test]
    fn live_inventory_matches_the_host() {
        let inv = collect_inventory();
        assert!(inv.cpus >= 1);
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
        assert_eq!(
            inv.memory_bytes,
            meminfo_kib(&meminfo, "MemTotal:").map(|k| k * 1024)
        );
        assert!(!inv.hostname.is_empty());
        // nproc counts the CPUs this process may use, as `cpus` does.
        let nproc = std::process::Command::new("nproc").output().unwrap();
        let nproc: usize = String::from_utf8_lossy(&nproc.stdout)
            .trim()
            .parse()
            .unwrap();
        assert_eq!(inv.cpus, nproc);
        assert!(inv.cpu_threads.unwrap() >= nproc);
        assert!(inv.filesystems.iter().any(|f| f.mount_point == "/"));
        let root = inv
            .filesystems
            .iter()
            .find(|f| f.mount_point == "/")
            .unwrap();
        assert!(root.size_bytes.unwrap() > 0);
    }
}
