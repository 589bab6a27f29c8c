//! What a worker of each kind of load works on, beside the common parts of its
//! [`crate::WorkerSpec`]: one [`Load`], so that a spec for a backend without its work cannot be
//! made. Data only: the loops that use it are in `uring.rs`, `psync.rs`, `null.rs`, `s3.rs`,
//! `net.rs` and `meta.rs`.

use std::net::{TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};

use stormark_s3::Config;
use stormark_spec::{MetaOp, NetMode};
use stormark_stats::Op;

use crate::meta::AnyMetaTree;

/// What a worker loads, and with what.
#[derive(Debug, Clone)]
pub enum Load {
    /// Files or a device, io_uring with `iodepth` I/Os in flight.
    IoUring,
    /// Files or a device, `pread`/`pwrite` one at a time.
    Psync,
    /// No I/O: each request completes at once.
    Null,
    /// S3 requests over HTTP.
    S3(Box<S3Work>),
    /// One stream (TCP) or socket (UDP) of a net session.
    Net(NetWork),
    /// Metadata calls on a tree of small files.
    Meta(MetaWork),
    /// READ(16) and WRITE(16) to a LUN over the worker's own iSCSI session.
    Iscsi(IscsiWork),
    /// READ and WRITE RPCs to files of an NFS share over the worker's own connection.
    Nfs(NfsWork),
}

impl Load {
    /// The load of a backend that needs no work of its own (files, or null).
    pub fn of_files(backend: Backend) -> Option<Load> {
        match backend {
            Backend::IoUring => Some(Load::IoUring),
            Backend::Psync => Some(Load::Psync),
            Backend::Null => Some(Load::Null),
            Backend::S3 | Backend::Net | Backend::Meta | Backend::Iscsi | Backend::Nfs => None,
        }
    }

    /// Its backend.
    pub fn backend(&self) -> Backend {
        match self {
            Load::IoUring => Backend::IoUring,
            Load::Psync => Backend::Psync,
            Load::Null => Backend::Null,
            Load::S3(_) => Backend::S3,
            Load::Net(_) => Backend::Net,
            Load::Meta(_) => Backend::Meta,
            Load::Iscsi(_) => Backend::Iscsi,
            Load::Nfs(_) => Backend::Nfs,
        }
    }
}

/// What an S3 worker does, beside the common parts of its [`crate::WorkerSpec`].
#[derive(Debug, Clone)]
pub struct S3Work {
    /// The service and the keys to sign with.
    pub config: Arc<Config>,
    /// The bucket this worker writes, deletes and lists in.
    pub bucket: String,
    /// Every bucket of the run: prepared object `i` lives in `buckets[i % len]`.
    pub buckets: Vec<String>,
    /// Objects GET and HEAD read: `<read_prefix><i>` for `i` in `0..objects`.
    pub read_prefix: String,
    /// How many objects there are to read.
    pub objects: u32,
    /// Keys this worker writes: `<write_prefix><n>`.
    pub write_prefix: String,
    /// What LIST lists.
    pub list_prefix: String,
    /// The operations with their cumulative weights (the last is the total).
    pub mix: Vec<(Op, u32)>,
    /// Sizes of the objects written (and of the prepared ones, by index).
    pub obj_size: stormark_spec::ObjSize,
    /// GETs read a range of this many bytes at a random place (whole objects when `None`).
    pub range: Option<u64>,
    /// Objects larger than `.0` are uploaded in parts of `.1` bytes.
    pub multipart: Option<(u64, u64)>,
    /// The seed of the job's object contents (the same for every worker of this host and
    /// run, so that a reader knows what any object must hold).
    pub content_seed: u64,
    /// How the bodies are made: compressible, dedupable or zeros, as file writes.
    pub data: DataShape,
    /// GETs check what they read (`--verify`).
    pub verify: bool,
    /// The preparation: PUT the objects to read with these indexes, then stop.
    pub prepare: Option<std::ops::Range<u32>>,
    /// The preparation goes on with the same indexes under each of these prefixes, at each
    /// size (the sizes of a sweep over object sizes).
    pub prepare_next: Vec<(String, stormark_spec::ObjSize)>,
    /// Operations after which the worker stops (its share of `--ops`).
    pub ops: Option<u64>,
    /// PUTs sent under the run's prefix by every worker of this host, counted as each is sent:
    /// the most keys its cleanup can find there (a longer listing is the service's).
    pub puts: Arc<AtomicU64>,
    /// PUTs of this host that got no answer (timed out, cut off, abandoned when the run
    /// stopped): a service that stalled may still store them once it resumes, after the
    /// run's cleanup listed its prefix, so a cleanup that counts any lists it again later.
    pub unanswered: Arc<AtomicU64>,
}

impl S3Work {
    /// Cumulative weights from `(op, weight)` pairs.
    pub fn cumulative(mix: &[(Op, u32)]) -> Vec<(Op, u32)> {
        let mut sum = 0;
        mix.iter()
            .map(|&(op, w)| {
                sum += w;
                (op, sum)
            })
            .collect()
    }
}

/// What a net worker does, beside the common parts of its [`crate::WorkerSpec`].
#[derive(Debug, Clone)]
pub struct NetWork {
    /// Its connection of the job's session, taken when the worker starts.
    pub conn: Arc<Mutex<Option<NetConn>>>,
    /// Send, receive or round trips (each worker of a `bidir` job one of the first two).
    pub mode: NetMode,
    /// Bytes per write, per datagram, or per message each way.
    pub msg_size: u32,
    /// The server, as the user named it (for errors).
    pub server: String,
    /// This stream's payload bits per second when it sends (0: as fast as it goes).
    pub bitrate: f64,
    /// A sending stream: the server's running count of what arrived from it (entry `.1` of
    /// the session's counts), and whether that count is final. What a sending stream moved
    /// is counted where it arrives, as iperf3 counts it; its writes are timed here.
    pub counted: Option<(Arc<Vec<AtomicU64>>, usize, Arc<AtomicBool>)>,
    /// What the stream did, for the session's report.
    pub tally: Arc<StreamTally>,
    /// A stream between two agents of a run (a mesh's pair): its failure is the pair's,
    /// recorded as an error and in the tally while the stage goes on, not the host's.
    pub pair: bool,
}

/// A net worker's connection.
#[derive(Debug)]
pub enum NetConn {
    /// A TCP data connection of the session.
    Tcp(TcpStream),
    /// A UDP socket connected to the server, with the first 16 bytes of every datagram (the
    /// session's mark, the stream's number; the server's `UDP_HEADER` layout: sequence at
    /// 16..24 and send time at 24..32 follow, written by the worker).
    Udp(UdpSocket, [u8; 16]),
}

/// What one stream of a net job did, beside its snapshots: for the session's report.
#[derive(Debug, Default)]
pub struct StreamTally {
    /// Bytes this end received (receive) or moved both ways (rtt).
    pub bytes: AtomicU64,
    /// UDP datagrams sent.
    pub datagrams: AtomicU64,
    /// CPU time of the worker's thread, ns.
    pub cpu_ns: AtomicU64,
    /// Why the stream failed (a pair's stream, which goes on without it).
    pub failure: std::sync::Mutex<Option<String>>,
}

/// What a meta worker does, beside the common parts of its [`crate::WorkerSpec`].
#[derive(Debug, Clone)]
pub struct MetaWork {
    /// The job's tree on this host.
    pub tree: AnyMetaTree,
    /// This worker's index among the job's workers on this host.
    pub worker: usize,
    /// The one operation of this phase; `None`: every operation of the job in turn, again
    /// until the stage ends (once, without a time).
    pub op: Option<MetaOp>,
    /// Before the phase, its files made up to this many, untimed (the wear-out after a
    /// create phase its time cut).
    pub top_up: Option<u64>,
}

/// What an iSCSI worker works on: the LUN, and the credentials of its login.
#[derive(Debug, Clone)]
pub struct IscsiWork {
    /// `iscsi://HOST[:PORT]/IQN/LUN`.
    pub url: Arc<stormark_iscsi::Url>,
    /// CHAP credentials, when the target asks them.
    pub chap: Option<Arc<stormark_iscsi::Chap>>,
}

/// What an NFS worker works on: the share (its files are the worker's targets, each held by
/// its handle: [`crate::Place::Share`]).
#[derive(Debug, Clone)]
pub struct NfsWork {
    /// `nfs://SERVER/EXPORT/DIR`.
    pub url: Arc<stormark_nfs::Url>,
}

/// How the bytes of writes are made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DataShape {
    /// Zeros, unstamped (fio's `zero_buffers`).
    pub zero: bool,
    /// What a compressor achieves on the written data (1: incompressible).
    pub compress_ratio: f64,
    /// Written blocks over distinct blocks (1: every block unique).
    pub dedup_ratio: f64,
    /// The unit of deduplication, bytes (a multiple of 512).
    pub dedup_block: u64,
    /// Duplicates drawn at random from a working set of this many blocks, each made when
    /// written (fio's `dedupe_mode=working_set`); 0: copies of a few shared blocks in turn.
    pub dedup_set: u64,
    /// The working set's own seed (a worker's, fio's `dedupe_global=0`); 0: one set for
    /// every worker and host.
    pub dedup_set_seed: u64,
    /// Bytes every write repeats (fio's `buffer_pattern`), unstamped; with a compression
    /// ratio, the compressible part of each sector.
    pub pattern: Option<stormark_spec::FillPattern>,
}

impl Default for DataShape {
    fn default() -> DataShape {
        DataShape {
            zero: false,
            compress_ratio: 1.0,
            dedup_ratio: 1.0,
            dedup_block: 4096,
            dedup_set: 0,
            dedup_set_seed: 0,
            pattern: None,
        }
    }
}

/// The I/O backend of a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// io_uring with `iodepth` I/Os in flight.
    IoUring,
    /// `pread`/`pwrite`, one at a time.
    Psync,
    /// No I/O: each request completes at once (measures the tool itself).
    Null,
    /// S3 requests over HTTP, one at a time (the work in [`crate::Load::S3`]).
    S3,
    /// One TCP stream of a net session (the work in [`crate::Load::Net`]).
    Net,
    /// Metadata calls on a tree of small files (the work in [`crate::Load::Meta`]).
    Meta,
    /// SCSI commands to a LUN over iSCSI, `iodepth` in flight (the work in
    /// [`crate::Load::Iscsi`]).
    Iscsi,
    /// RPCs to files of an NFS share, `iodepth` in flight (the work in [`crate::Load::Nfs`]).
    Nfs,
}

impl Backend {
    /// The name used in results.
    pub fn name(self) -> &'static str {
        match self {
            Backend::IoUring => "io_uring",
            Backend::Psync => "psync",
            Backend::Null => "null",
            Backend::S3 => "s3",
            Backend::Net => "net",
            Backend::Meta => "meta",
            Backend::Iscsi => "iscsi",
            Backend::Nfs => "nfs",
        }
    }

    /// Whether its workers do I/O on files (or devices).
    pub fn touches_files(self) -> bool {
        matches!(self, Backend::IoUring | Backend::Psync)
    }
}
