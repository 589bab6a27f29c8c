//! What this host is, how it behaves under load, and whether a target is safe to use.
//!
//! `probe` reads `/proc`, `/sys` and the filesystem to describe the host ([`Inventory`]),
//! size a workload from it ([`auto_size`]), sample the host's counters once a second while
//! load runs ([`Sampler`]), explain the result afterwards ([`diagnose`]: findings such as a
//! saturated device or a CPU-bound host), classify a benchmark target ([`classify`]:
//! directory, file or block device), and answer the
//! safety questions asked before any load: is this device mounted, held by LVM/md/dm or used
//! as swap ([`device_in_use`]); does it carry a filesystem or partition table
//! ([`fs_signature`]); is there room for the working set ([`space`]). Whether a run
//! directory's filesystem takes `O_DIRECT` is probed by the agent, inside the directory it
//! holds. Anything it cannot read degrades to "unknown", never a panic.
//!
//! ```
//! let inv = stormark_probe::collect_inventory();
//! assert!(inv.cpus >= 1);
//! let target = stormark_probe::classify(std::path::Path::new("/")).unwrap();
//! assert_eq!(target.kind_name(), "directory");
//! ```
#![warn(missing_docs)]

mod arcstats;
mod cache;
mod counters;
mod diagnose;
mod eviction;
mod inventory;
mod mountstats;
mod network;
mod objects;
mod requests;
mod safety;
mod sampler;
mod sizing;

pub use arcstats::{parse_arcstats, ArcCounters};
pub use counters::{
    parse_diskstats, parse_meminfo, parse_net_dev, parse_own_ticks, parse_stat, parse_tcp_retrans,
    parse_vmstat_swap, whole_disks, Counters, HostRoot,
};
pub use diagnose::{diagnose, first_look, phase_findings};
pub use eviction::cache_eviction;
pub use inventory::{
    collect_inventory, collect_inventory_from, read_serials, BlockDevice, Filesystem, Inventory,
    NetInterface, Partition, NETWORK_FS,
};
pub use mountstats::{parse_mountstats, NfsMount, NfsOpCounters};
pub use safety::{
    classify, device_in_use, file_in_use, fs_signature, space, ProbeError, Space, TargetKind,
};
pub use sampler::{Sampled, Sampler};
pub use sizing::{auto_size, target_media, Sizing, SizingInput, TargetMedia};
