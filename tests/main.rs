//! stormark's integration tests: each module is one concern, run against the real binary
//! (`CARGO_BIN_EXE_stormark`) and real components (MinIO, network namespaces, loop devices,
//! a browser). `cargo test --test integration net::` runs one module.

mod agent_cleanup;
mod atomic;
mod charts;
mod cluster;
mod data;
mod device;
mod docs;
mod docs_world;
mod faults;
mod fio_corpus;
mod fio_errors;
mod fio_prio;
mod fio_run;
mod fiofile;
mod fuzz;
mod hostile;
mod iscsi;
mod layering;
mod live;
mod meta;
mod meta_crash;
mod meta_mdtest;
mod net;
mod net_jobs;
mod nfs;
mod nfs_crash;
mod nfs_meta;
mod package;
mod precondition;
mod report;
mod ring;
mod run;
mod s3;
mod s3_data;
mod s3_stall;
mod safety;
mod shapes;
mod suite;
mod targets;
mod verdict;
mod zoned;
