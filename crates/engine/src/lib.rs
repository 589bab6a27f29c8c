//! How load is made on this host: workers, the offset generator and the I/O backends.
//!
//! A stage is a set of [`WorkerSpec`]s started together: every worker opens its files and
//! allocates its buffers, then all wait at one gate and start at the same instant. Each worker
//! picks its backend once ([`Backend`]: io_uring, psync or null) and runs a loop that submits,
//! reaps and records into its own [`stormark_stats::Recorder`], with no allocation, lock or
//! formatting per I/O. Once a second (and at the end) it sends a [`WorkerMsg`] with its
//! snapshot; [`run_stage`] hands those to the caller, which merges them. The engine never
//! creates or removes files: it is handed run-directory names, opened beneath the directory's
//! descriptor without following links, or paths the user named, and checks that each opened
//! file is the one validated ([`Identity`]).
//!
//! ```
//! use std::sync::{atomic::AtomicBool, Arc};
//! use std::time::Duration;
//! use stormark_engine::{run_stage, Load, StageEvent, Stop, WorkerSpec};
//!
//! let spec = WorkerSpec {
//!     load: Load::Null,
//!     stop: Stop { time: Some(Duration::from_millis(50)), io_total: None },
//!     ..WorkerSpec::new(vec![])
//! };
//! let mut ops = 0;
//! run_stage(vec![spec], Arc::new(AtomicBool::new(false)), &mut |e| {
//!     if let StageEvent::Interval { snap, .. } = e {
//!         ops += snap.total().ops;
//!     }
//! });
//! assert!(ops > 0);
//! ```
#![warn(missing_docs)]

mod buffer;
mod clock;
mod ctx;
mod data;
mod error;
mod files;
mod gate;
mod iscsi;
mod meta;
mod net;
mod nfs;
mod null;
mod offsets;
mod pace;
pub mod placement;
mod psync;
mod remote;
mod s3;
mod s3_body;
mod stage;
mod syscall;
mod target;
mod uring;
mod verify;
mod work;
mod worker;
mod zoned;

pub use ctx::WorkerMsg;
pub use data::{buffer_bytes, DataShape, POOL_BYTES};
pub use error::EngineError;
pub use files::{atomic_write_units, open_checked, Dir, Identity};
pub use meta::namespace::{EntryKind, Local, Namespace, NfsDir};
pub use meta::sweep::{sweep_meta_tree, MetaSweep};
pub use meta::tree::{meta_stat_op, MetaTree};
pub use meta::AnyMetaTree;
pub use net::net_op;
pub use offsets::{IoReq, OffsetGen};
pub use s3_body::s3_body_bytes;
pub use stage::{run_stage, run_stage_at, StageEvent, StageOutcome};
pub use target::{Backend, FileTarget, JobPlacement, Place, RateMin, Stop, Think, WorkerSpec};
pub use uring::{io_uring_available, io_uring_depth_ok, io_uring_features_ok};
pub use verify::{state_name, VerifySpec, HEADER as VERIFY_HEADER};
pub use work::{IscsiWork, Load, MetaWork, NetConn, NetWork, NfsWork, S3Work, StreamTally};
pub use zoned::ZoneMap;
