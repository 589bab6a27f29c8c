//! Why a worker could not run, or stopped early: said to the user as one line.

use std::path::PathBuf;

/// A worker's failure. Counted I/O errors are not failures: they are recorded by kind; a
/// worker fails when it cannot start, or when its target only fails.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The worker could not be placed on its CPUs or memory nodes.
    #[error("{0}")]
    Placement(String),
    /// A file or device could not be opened (or is no longer what was validated).
    #[error("cannot open {path}: {source}")]
    Open {
        /// The file, as shown to the user.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file holds less than one block.
    #[error("{path} holds {len} bytes, less than one block of {bs}")]
    TooSmall {
        /// The file.
        path: PathBuf,
        /// Its length used, bytes.
        len: u64,
        /// The largest block, bytes.
        bs: u64,
    },
    /// A zoned job's region holds no whole zone.
    #[error(
        "{path}: the region of {len} bytes from byte {start} holds no whole zone of {zone} bytes"
    )]
    NoZone {
        /// The file.
        path: PathBuf,
        /// Where the region starts.
        start: u64,
        /// The region's length.
        len: u64,
        /// The zone's size.
        zone: u64,
    },
    /// The I/O buffers could not be allocated.
    #[error("cannot allocate {bytes} bytes of I/O buffers")]
    Alloc {
        /// Bytes asked for.
        bytes: usize,
    },
    /// The kernel refused an io_uring.
    #[error("io_uring setup failed: {0}; use --engine psync")]
    RingSetup(std::io::Error),
    /// Submitting to or waiting on the ring failed.
    #[error("io_uring_enter failed: {0}")]
    RingEnter(std::io::Error),
    /// An S3 worker could not start, or its preparation could not write an object.
    #[error("{0}")]
    S3(String),
    /// A net worker lost its server, or had no stream.
    #[error("{0}")]
    Net(String),
    /// An iSCSI worker could not log in, or its session failed.
    #[error("{0}")]
    Iscsi(String),
    /// An NFS worker could not connect or open its files, or its connection failed.
    #[error("{0}")]
    Nfs(String),
    /// `--verify` could not save or load the expected state.
    #[error("{0}")]
    Verify(String),
    /// Every I/O of the last run failed: the target is not usable.
    #[error("stopped after {0} consecutive I/O errors")]
    Failing(u32),
}
