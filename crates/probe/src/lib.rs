//! What this host is, and whether a target is safe to use.
//!
//! `probe` reads `/proc`, `/sys` and the filesystem to describe the host ([`Inventory`]),
//! classify a benchmark target ([`classify`]: directory, file or block device), and answer the
//! safety questions asked before any load: is this device mounted, held by LVM/md/dm or used
//! as swap ([`device_in_use`]); does it carry a filesystem or partition table
//! ([`fs_signature`]); is there room for the working set ([`space`]); does the filesystem take
//! `O_DIRECT` ([`odirect_supported`]). Anything it cannot read degrades to "unknown", never a
//! panic.
//!
//! ```
//! let inv = stormark_probe::Inventory::collect();
//! assert!(inv.cpus >= 1);
//! let target = stormark_probe::classify(std::path::Path::new("/")).unwrap();
//! assert_eq!(target.kind_name(), "directory");
//! ```
#![warn(missing_docs)]

mod inventory;
mod safety;

pub use inventory::Inventory;
pub use safety::{
    classify, device_in_use, fs_signature, odirect_supported, space, ProbeError, Space, TargetKind,
};
