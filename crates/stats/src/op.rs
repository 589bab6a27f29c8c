//! The operations a worker times, each a record of every snapshot.

/// An operation kind. Indexes the per-operation records of a [`crate::Snapshot`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Op {
    /// A read (file and block load).
    Read,
    /// A write (file and block load).
    Write,
    /// An object GET (S3).
    Get,
    /// An object PUT (S3).
    Put,
    /// An object HEAD (S3).
    Head,
    /// An object DELETE (S3).
    Delete,
    /// A bucket LIST (S3).
    List,
    /// A connection made (S3): TCP connect, and the TLS handshake for https. Not an
    /// operation of the workload: left out of totals, counted to show how often the client
    /// had to connect again and what that cost.
    Connect,
    /// Bytes from the client to the server of a network test, counted where they arrive.
    Send,
    /// Bytes from the server to the client of a network test (`--reverse`).
    Receive,
    /// A request/response round trip of a network latency test.
    Rtt,
    /// An `fsync` or `fdatasync` of a file (`--fsync`, `--fdatasync`, `--end-fsync`): timed,
    /// but left out of totals, as fio counts its syncs apart from its writes.
    Sync,
    /// A read of `--verify`'s pass over what was written (or of `--verify-only`), every block
    /// checked: timed, left out of the workload's totals.
    Verify,
    /// `stormark meta`: a directory made (`mkdir`).
    Mkdir,
    /// `stormark meta`: a file created (and written, with a file size) and closed.
    Create,
    /// `stormark meta`: a file's attributes read (`stat`).
    Stat,
    /// `stormark meta`: a file opened and closed.
    Open,
    /// `stormark meta`: a file renamed within its directory.
    Rename,
    /// `stormark meta`: an empty directory removed (`rmdir`).
    Rmdir,
    /// `stormark meta`: a directory's attributes read (`stat` of a directory).
    Dirstat,
    /// A trim: a range's space released (a hole punched in a file, a discard of a device's
    /// blocks; fio's `trim`).
    Trim,
    /// A read submitted with a priority of its own (fio's `cmdprio_percentage`): counted
    /// apart from the other reads, so that each priority's latency shows.
    ReadPrio,
    /// A write submitted with a priority of its own.
    WritePrio,
}

impl Op {
    /// Every operation, in index order.
    pub const ALL: [Op; 23] = [
        Op::Read,
        Op::Write,
        Op::Get,
        Op::Put,
        Op::Head,
        Op::Delete,
        Op::List,
        Op::Connect,
        Op::Send,
        Op::Receive,
        Op::Rtt,
        Op::Sync,
        Op::Verify,
        Op::Mkdir,
        Op::Create,
        Op::Stat,
        Op::Open,
        Op::Rename,
        Op::Rmdir,
        Op::Dirstat,
        Op::Trim,
        Op::ReadPrio,
        Op::WritePrio,
    ];
    /// How many operation kinds there are.
    pub const COUNT: usize = Op::ALL.len();

    /// The name used in results (`by_op.read`, `by_op.get`).
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Get => "get",
            Op::Put => "put",
            Op::Head => "head",
            Op::Delete => "delete",
            Op::List => "list",
            Op::Connect => "connect",
            Op::Send => "send",
            Op::Receive => "receive",
            Op::Rtt => "rtt",
            Op::Sync => "sync",
            Op::Verify => "verify",
            Op::Mkdir => "mkdir",
            Op::Create => "create",
            Op::Stat => "stat",
            Op::Open => "open",
            Op::Rename => "rename",
            Op::Rmdir => "rmdir",
            Op::Dirstat => "dirstat",
            Op::Trim => "trim",
            Op::ReadPrio => "read-prio",
            Op::WritePrio => "write-prio",
        }
    }

    /// Whether it is an operation of the workload (every one but [`Op::Connect`],
    /// [`Op::Sync`] and [`Op::Verify`]): what totals add up.
    pub fn of_workload(self) -> bool {
        !matches!(self, Op::Connect | Op::Sync | Op::Verify)
    }

    /// The operation named `name` in results, or `None`.
    pub fn from_name(name: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.name() == name)
    }

    /// Position in [`Op::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}
