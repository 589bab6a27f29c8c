//! What to run: the workload a user asked for, parsed and validated, with no I/O.
//!
//! `spec` owns units (`4k`, `30s`, `70%`), the option set of a job ([`JobOpts`], every field
//! optional, as typed on a command line or in a TOML job file), named profiles shipped inside
//! the binary, and the validated, fully resolved [`Job`] and [`Workload`] the rest of stormark
//! runs. It knows nothing of hosts, files or devices: `probe` and the binary turn a `Workload`
//! into a plan. Every parser here returns a [`SpecError`] whose text is the one-line message a
//! user sees (`--bs 4kk: expected a size such as 4k, 64KiB or 1m`).
//!
//! ```
//! use stormark_spec::{JobOpts, Source, Rw};
//!
//! let mut opts = JobOpts::default();
//! opts.set("rw", "randread", Source::Flag).unwrap();
//! opts.set("bs", "4k", Source::Flag).unwrap();
//! opts.set("iodepth", "32", Source::Flag).unwrap();
//! let job = opts.resolve("job").unwrap();
//! assert_eq!(job.rw, Rw::RandRead);
//! assert_eq!(job.bs.min, 4096);
//! assert!(opts.set("bs", "4kk", Source::Flag).is_err());
//! ```
#![warn(missing_docs)]

mod choices;
mod data;
mod error;
mod expect;
mod fio;
mod flags;
mod ior;
mod jobfile;
mod mdtest;
mod meta;
mod net;
mod on_hosts;
mod options;
mod placement;
mod profiles;
mod s3;
pub mod scsi;
mod search;
mod step;
mod target;
pub mod units;
mod workload;

pub use data::FillPattern;
pub use error::{printable, shown, shown_url, SpecError};
pub use expect::{parse_expect, Expectation, Figure, LatencyStat, EXPECT_FORM};
pub use fio::{fio_check, looks_like_fio, parse_fio_job_file, to_fio, FioJobFile, FioTargets};
pub use flags::{Flag, FlagValue, FILE_FLAGS, S3_FLAGS};
pub use ior::{ior_script, parse_ior, to_ior, Ior, IorRun, IOR_FORM};
pub use jobfile::{parse_job_file, JobFile};
pub use mdtest::{parse_mdtest, to_mdtest, Mdtest, MDTEST_FORM};
pub use meta::{
    parse_meta_ops, MetaJob, MetaOp, Tree, MAX_META_ITEMS, MAX_TREE_DIRS, META_OPS_FORM,
};
pub use net::{parse_bitrate, parse_servers, NetJob, NetMode, NetServers};
pub use on_hosts::{HostRef, OnHosts};
pub use options::NET_DEFAULT_PORT;
pub use profiles::{profile, profile_names, PROFILES};
pub use s3::{
    valid_bucket, valid_prefix, Addressing, ObjSize, OpMix, S3Job, S3Op, SizeDist, OP_MIX_FORM,
};
pub use search::{
    parse_curve, parse_steady_state, parse_sweep, parse_target_latency, LatencyTarget, StageLoad,
    SteadyFigure, SteadyState, Sweep, SweepKey, CURVE_FORM, STEADY_FORM, SWEEP_FORM,
    TARGET_LATENCY_FORM,
};
pub use step::{mesh_round_trips, mesh_steps, stage_steps, Host, PhaseKind, Step};
pub use target::{
    bracketed, host_port, HostError, LunUrl, ShareUrl, Target, UrlError, LUN_FORM, SHARE_FORM,
};
pub use units::{parse_duration, parse_percent, parse_size};
pub use workload::{
    canonical_key, BlockSize, BsSplit, CmdPrio, CpuList, Direct, Distribution, EngineChoice,
    ExitWhat, Flow, Invalidate, Job, JobOpts, LoadKind, MemPolicy, Placement, PrioEntry, PrioSplit,
    Ring, Rw, Source, SpRandom, SyncMode, Workload, Zoned, Zones, DEFAULT_FILE_SIZE, JOB_KEYS,
    MAX_ZONES,
};
