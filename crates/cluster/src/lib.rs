//! The coordinator and its agents: one code path for one host and many.
//!
//! A [`Coordinator`] drives every [`Agent`] through validate (targets, safety, free space:
//! nothing written), prepare (run directory, files, the preparation pass), one stage after
//! another (jobs, or groups of jobs run together), and cleanup. Agents stream 1-second
//! snapshots back; the coordinator merges them exactly into [`stormark_stats::Phase`]s of a
//! [`stormark_stats::Results`] and hands each closed second to a live display. A local run is
//! the coordinator driving one in-process [`LocalAgent`]; remote agents over gRPC implement the
//! same trait.
//!
//! ```no_run
//! use std::sync::{atomic::AtomicBool, Arc};
//! use stormark_cluster::{Coordinator, LocalAgent, TargetOptions};
//! use stormark_stats::Results;
//!
//! let opts = stormark_spec::JobOpts::default();
//! let workload = stormark_spec::Workload::new(vec![opts.resolve("job").unwrap()], false).unwrap();
//! let agent = LocalAgent::new(TargetOptions::new("/tmp".into()));
//! let mut coordinator = Coordinator::new(vec![Box::new(agent)], Arc::new(AtomicBool::new(false)));
//! let mut results = Results::new(vec!["stormark".into()]);
//! let outcome = coordinator.run(&workload, &mut results, &mut |_| {});
//! ```
#![warn(missing_docs)]

mod agent;
mod auth;
mod cert;
mod config;
mod connect;
mod coordinator;
mod launch;
mod listen;
mod local;
mod remote;
mod server;
mod targets;
mod wire;

pub use agent::{
    new_run_id, Agent, AgentError, AgentEvent, Clock, NetPeer, NetPeers, S3Access, Second, Stage,
    TargetOptions, Validated,
};
pub use auth::{check_token, MIN_TOKEN_LEN};
pub use cert::{make_agent, make_ca, CertError, CA_CERT, CA_KEY};
pub use config::{read_regular, read_token, PEM_LIMIT, TOKEN_FILE_LIMIT};
pub use config::{AgentConfig, ConfigError, Observer};
pub use connect::Fleet;
pub use coordinator::{peer_ips, Coordinator, Live, OnAgentFailure, Outcome};
pub use launch::{
    coordinator_address, host_name, one_run_token, rank_and_size, serve_launched, Announce,
    LaunchError, LaunchOptions, Launched, LaunchedAgent, Net, TOKEN_ENV,
};
pub use local::{
    is_run_id, remove_host_objects, remove_run_objects, Journal, LocalAgent, MANIFEST,
};
pub use remote::{ClockProbe, RemoteAgent, SILENCE};
pub use server::{serve, AgentService, SessionChange, SessionHook};
pub use targets::SeveralTargets;
pub use wire::{decode_parts, decode_snapshot, encode_snapshot, pb};
