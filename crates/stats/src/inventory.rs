//! What a host is (`hosts[].inventory` of a results document, and `stormark probe`): CPU,
//! memory, kernel, block devices, filesystems and network interfaces. The probe reads them
//! (`stormark_probe::collect_inventory`); this is the data, read back from any document.

use serde::{Deserialize, Serialize};

/// What this host is. Fields that cannot be read are `None` ("unknown"), with a note saying
/// what was missing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Inventory {
    /// Host name.
    pub hostname: String,
    /// Kernel release (`uname -r`).
    pub kernel: Option<String>,
    /// Distribution (`PRETTY_NAME` of /etc/os-release).
    pub os: Option<String>,
    /// CPU model name.
    pub cpu_model: Option<String>,
    /// Logical CPUs available to this process (its affinity mask).
    pub cpus: usize,
    /// Online logical CPUs (hardware threads) of the host.
    pub cpu_threads: Option<usize>,
    /// Physical cores of the host.
    pub cpu_cores: Option<usize>,
    /// CPU packages.
    pub cpu_sockets: Option<usize>,
    /// Physical memory, bytes.
    pub memory_bytes: Option<u64>,
    /// Swap space, bytes.
    pub swap_bytes: Option<u64>,
    /// Whether io_uring can be set up here.
    pub io_uring: bool,
    /// Why not, when it cannot.
    pub io_uring_error: Option<String>,
    /// Every whole block device (/sys/block), RAM disks and empty loop devices left out.
    pub block_devices: Vec<BlockDevice>,
    /// Every mounted filesystem that holds data (pseudo filesystems such as proc left out).
    pub filesystems: Vec<Filesystem>,
    /// Every network interface (/sys/class/net).
    pub net_interfaces: Vec<NetInterface>,
    /// What takes pages from this host's page cache besides memory pressure: a DAMON scheme
    /// paging cold memory out, a virtio balloon the hypervisor reclaims memory through.
    #[serde(default, skip_serializing_if = "CacheEviction::is_none")]
    pub cache_eviction: CacheEviction,
    /// What could not be read, and so is unknown.
    pub notes: Vec<String>,
}

/// What evicts this host's page cache besides memory pressure (`inventory.cache_eviction`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CacheEviction {
    /// DAMON schemes whose action is `pageout`, of a kdamond whose state is `on`
    /// (/sys/kernel/mm/damon/admin/kdamonds/*/contexts/*/schemes/*): they write out or drop
    /// pages not accessed for a while, the page cache's included, whatever memory is free.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub damon_pageout: Vec<DamonScheme>,
    /// A virtio balloon is bound (/sys/bus/virtio/drivers/virtio_balloon/virtio*): the
    /// hypervisor may take this guest's memory back, the page cache first.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub virtio_balloon: bool,
}

impl CacheEviction {
    /// Nothing known to evict the cache.
    pub fn is_none(&self) -> bool {
        self.damon_pageout.is_empty() && !self.virtio_balloon
    }
}

/// One DAMON scheme that pages memory out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DamonScheme {
    /// Where sysfs shows it, under /sys/kernel/mm/damon/admin (`kdamonds/0/contexts/0/schemes/0`).
    pub path: String,
    /// What the context monitors (`paddr`: physical memory, the page cache included; `vaddr`
    /// a process's own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operations: Option<String>,
    /// How long a region must go unaccessed before it is paged out, µs (the scheme's least
    /// age, counted in aggregation intervals, times the interval).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_age_us: Option<u64>,
}

/// A whole block device.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BlockDevice {
    /// Kernel name (`sda`, `nvme0n1`, `vda`, `loop0`).
    pub name: String,
    /// Capacity, bytes.
    pub size_bytes: Option<u64>,
    /// Model as the device reports it.
    pub model: Option<String>,
    /// Spinning disk (`queue/rotational`); virtual disks often say yes whatever backs them.
    pub rotational: Option<bool>,
    /// Active I/O scheduler (`mq-deadline`, `none`, ...).
    pub scheduler: Option<String>,
    /// Requests the block layer queues for it (`queue/nr_requests`).
    pub queue_depth: Option<u32>,
    /// Logical block size, bytes.
    pub logical_block_bytes: Option<u32>,
    /// The largest request the block layer sends it, KiB (`queue/max_sectors_kb`): larger
    /// I/Os are split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_sectors_kb: Option<u32>,
    /// The most `max_sectors_kb` may be raised to: the device's own limit
    /// (`queue/max_hw_sectors_kb`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_hw_sectors_kb: Option<u32>,
    /// How the host reaches it: `nvme`, `sata`, `sas`, `scsi`, `virtio`, `usb`, `iscsi`,
    /// `loop`, `device-mapper`, `md` (from where sysfs places it); absent where unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// Vendor as the device or its bus reports it (`ATA`, a PCI vendor id `0x1af4`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    /// Firmware revision (`device/firmware_rev` of NVMe, `device/rev` of SCSI and SATA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware: Option<String>,
    /// Serial number: read only when asked (`stormark probe --show-serial`), so that results
    /// and inventories shared with others never carry it; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
    /// Hardware queues the block layer drives it with (`mq/*`), and the requests each takes
    /// at once (`mq/0/nr_tags`: 32 for SATA's NCQ): the transport's queue limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hw_queues: Option<u32>,
    /// See `hw_queues`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hw_queue_depth: Option<u32>,
    /// The most memory segments one request carries (`queue/max_segments`): with buffers of
    /// pages not next to each other, a request holds at most this many pages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_segments: Option<u32>,
    /// Where the device itself is mounted.
    pub mount_points: Vec<String>,
    /// Filesystem on the device itself, when mounted.
    pub fs_type: Option<String>,
    /// Its partitions.
    pub partitions: Vec<Partition>,
}

/// A partition of a block device.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Partition {
    /// Kernel name (`sda1`, `nvme0n1p2`).
    pub name: String,
    /// Size, bytes.
    pub size_bytes: Option<u64>,
    /// Where it is mounted.
    pub mount_points: Vec<String>,
    /// Filesystem, when mounted.
    pub fs_type: Option<String>,
}

/// A mounted filesystem.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Filesystem {
    /// Mount point.
    pub mount_point: String,
    /// What is mounted (`/dev/vda1`, `server:/export`).
    pub source: Option<String>,
    /// Type (`ext4`, `xfs`, `nfs4`, `tmpfs`).
    pub fs_type: String,
    /// Capacity, bytes (statvfs; unknown in fixtures).
    pub size_bytes: Option<u64>,
    /// Used, percent of what non-root users can have (as `df`).
    pub used_pct: Option<f64>,
}

/// A network interface.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NetInterface {
    /// Name (`eth0`).
    pub name: String,
    /// Link speed, Mbit/s; `None` when the driver does not say (virtual links, link down).
    pub speed_mbps: Option<u64>,
    /// MTU, bytes.
    pub mtu: Option<u32>,
    /// `operstate`: `up`, `down`, `unknown`.
    pub state: Option<String>,
}

impl Inventory {
    /// The block device named `name`, whole or a partition (then its parent disk).
    pub fn device(&self, name: &str) -> Option<&BlockDevice> {
        self.block_devices
            .iter()
            .find(|d| d.name == name || d.partitions.iter().any(|p| p.name == name))
    }
}
