//! How a request becomes phases: the workload's stages as given, a search for the most load
//! under a latency target, a throughput-latency curve, or a sweep over parameters, one phase
//! at a time, each chosen after seeing what the last one measured.
//!
//! `plan` sits between what the user asked ([`request`]: flags, job file or profile, `--auto`
//! from this host's inventory) and the coordinator, which runs each [`Step`] on every agent.
//! It makes no load and knows no agent: the search controller ([`Search`]) is a policy checked
//! against a queue model in its tests. Results are read from [`stormark_stats::Results`].
//!
//! ```
//! use stormark_plan::{shape, Plan, ShapeOptions};
//!
//! let opts = stormark_spec::JobOpts::default();
//! let workload = stormark_spec::Workload::new(vec![opts.resolve("job").unwrap()], false).unwrap();
//! let shape = shape(&ShapeOptions::default()).unwrap();
//! let mut plan = Plan::new(&shape, &workload, 1);
//! let results = stormark_stats::Results::new(vec![]);
//! assert_eq!(plan.next(&results).unwrap().name, "run");
//! ```
#![warn(missing_docs)]

mod fio_file;
mod hosts;
mod request;
mod search;
mod shape;
mod suite;
mod suite_file;

pub use hosts::{hosts, place_jobs, HostsOptions};
pub use request::{request, Request, RequestOptions};
pub use search::{Search, SearchLimits, FLAT_GAIN, RATE_ACHIEVED, TOLERANCE};
pub use shape::{check_agents, shape, Plan, Shape, ShapeOptions, DEFAULT_STEP_TIME};
pub use stormark_spec::Host;
pub use stormark_spec::{mesh_steps, stage_steps, Step};
pub use suite::{
    suite_steps, suite_stops, SpecSheet, SuiteOptions, SuiteStep, SuiteStop, SSD_ROUNDS, SUITES,
};
pub use suite_file::{suite_file_steps, SUITE_FILE_STEPS};
