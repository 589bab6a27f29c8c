//! Failed I/Os: their kinds, and the tally a snapshot keeps of them (by operation and kind,
//! with the first offsets and files for the report).

use std::ops::AddAssign;

use crate::op::Op;

/// The kind of a failed I/O: `Copy`, so the hot path counts it without allocating.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// EIO: the device reported an error.
    Io,
    /// ENOSPC: no space left.
    NoSpace,
    /// EINVAL: the kernel refused the request (often O_DIRECT alignment).
    Invalid,
    /// The transfer moved fewer bytes than asked.
    Short,
    /// Any other errno.
    Other(i32),
    /// An HTTP error status (S3), other than throttling.
    Http(u16),
    /// The service asked to slow down (HTTP 503 SlowDown or 429).
    Throttled,
    /// No complete answer in time.
    Timeout,
    /// The connection was reset or closed mid-request.
    Reset,
    /// The connection was refused.
    Refused,
    /// Another network failure.
    Network,
    /// The data read is not what was written (`--verify`: a bad checksum, bytes changed).
    Corrupt,
    /// `--verify`: a block holds the data of another offset or file (a misplaced write).
    Misplaced,
    /// `--verify`: a block holds an older write than the last one (a lost write).
    Stale,
    /// `--verify`: a written block reads back as zeros (a hole).
    Hole,
    /// A SCSI command failed: its sense key or status ([`stormark_spec::scsi::code`]).
    Scsi(u16),
    /// The other end broke the protocol: a claim it cannot have made honestly (a UDP
    /// receiver counting more than was sent). Its figure is not used.
    Protocol,
    /// A request still waiting for its answer when Ctrl-C stopped the run: abandoned by the
    /// user, not failed by the service (its wait still counts in the latency).
    Interrupted,
}

impl ErrorKind {
    /// Classifies a positive errno value.
    pub fn from_errno(errno: i32) -> ErrorKind {
        match errno {
            5 => ErrorKind::Io,
            28 => ErrorKind::NoSpace,
            22 => ErrorKind::Invalid,
            e => ErrorKind::Other(e),
        }
    }

    /// The kind of an I/O error by its [`ErrorKind::name`] (`eio`, `enospc`, `einval`,
    /// `short`, `errno-N`); `None` for another name.
    pub fn named(name: &str) -> Option<ErrorKind> {
        Some(match name {
            "short" => ErrorKind::Short,
            n => ErrorKind::from_errno(match n {
                "eio" => 5,
                "enospc" => 28,
                "einval" => 22,
                n if n.starts_with("scsi-") => {
                    return stormark_spec::scsi::code_of(n).map(ErrorKind::Scsi)
                }
                n => n.strip_prefix("errno-")?.parse().ok()?,
            }),
        })
    }

    /// A stable name for results: `eio`, `enospc`, `einval`, `short`, `errno-N`.
    pub fn name(self) -> String {
        match self {
            ErrorKind::Io => "eio".into(),
            ErrorKind::NoSpace => "enospc".into(),
            ErrorKind::Invalid => "einval".into(),
            ErrorKind::Short => "short".into(),
            ErrorKind::Other(e) => format!("errno-{e}"),
            ErrorKind::Http(status) => format!("http-{status}"),
            ErrorKind::Throttled => "throttled".into(),
            ErrorKind::Timeout => "timeout".into(),
            ErrorKind::Reset => "reset".into(),
            ErrorKind::Refused => "refused".into(),
            ErrorKind::Network => "network".into(),
            ErrorKind::Corrupt => "corrupt".into(),
            ErrorKind::Misplaced => "misplaced".into(),
            ErrorKind::Stale => "stale".into(),
            ErrorKind::Hole => "hole".into(),
            ErrorKind::Protocol => "protocol".into(),
            ErrorKind::Interrupted => "interrupted".into(),
            ErrorKind::Scsi(code) => stormark_spec::scsi::name(code),
        }
    }

    /// A number for the wire: the errno, or a negative code for the other kinds.
    pub fn code(self) -> i32 {
        match self {
            ErrorKind::Io => 5,
            ErrorKind::NoSpace => 28,
            ErrorKind::Invalid => 22,
            ErrorKind::Other(n) => n,
            ErrorKind::Short => -1,
            ErrorKind::Timeout => -2,
            ErrorKind::Reset => -3,
            ErrorKind::Refused => -4,
            ErrorKind::Network => -5,
            ErrorKind::Throttled => -6,
            ErrorKind::Corrupt => -7,
            ErrorKind::Misplaced => -8,
            ErrorKind::Stale => -9,
            ErrorKind::Hole => -10,
            ErrorKind::Protocol => -11,
            ErrorKind::Interrupted => -12,
            ErrorKind::Http(status) => -1000 - i32::from(status),
            ErrorKind::Scsi(code) => -100_000 - i32::from(code),
        }
    }

    /// The kind of a [`ErrorKind::code`].
    pub fn from_code(code: i32) -> ErrorKind {
        match code {
            -1 => ErrorKind::Short,
            -2 => ErrorKind::Timeout,
            -3 => ErrorKind::Reset,
            -4 => ErrorKind::Refused,
            -5 => ErrorKind::Network,
            -6 => ErrorKind::Throttled,
            -7 => ErrorKind::Corrupt,
            -8 => ErrorKind::Misplaced,
            -9 => ErrorKind::Stale,
            -10 => ErrorKind::Hole,
            -11 => ErrorKind::Protocol,
            -12 => ErrorKind::Interrupted,
            c if c <= -100_000 => ErrorKind::Scsi(u16::try_from(-100_000 - c).unwrap_or(0)),
            c if c <= -1000 => ErrorKind::Http(u16::try_from(-1000 - c).unwrap_or(0)),
            c if c < 0 => ErrorKind::Other(c),
            n => ErrorKind::from_errno(n),
        }
    }
}

/// One kind of error seen by one operation: how often, and where first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorTallyEntry {
    /// Operation that failed.
    pub op: Op,
    /// What failed.
    pub kind: ErrorKind,
    /// How many times.
    pub count: u64,
    /// Offset of the first failure.
    pub first_offset: u64,
    /// Index of the file of the first failure, within the worker's files.
    pub first_file: u32,
}

/// Error counts by operation and kind, in a fixed array: recording never allocates. Kinds past
/// the eighth distinct one are counted under the last slot's kind `Other(0)`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorTally {
    entries: [Option<ErrorTallyEntry>; 8],
}

impl ErrorTally {
    /// Counts one failure.
    pub fn record(&mut self, op: Op, kind: ErrorKind, offset: u64, file: u32) {
        let last = self.entries.len() - 1;
        for (i, slot) in self.entries.iter_mut().enumerate() {
            match slot {
                Some(e) if e.op == op && e.kind == kind => {
                    e.count += 1;
                    return;
                }
                Some(e) if i == last => {
                    e.kind = ErrorKind::Other(0);
                    e.count += 1;
                    return;
                }
                Some(_) => {}
                None => {
                    *slot = Some(ErrorTallyEntry {
                        op,
                        kind,
                        count: 1,
                        first_offset: offset,
                        first_file: file,
                    });
                    return;
                }
            }
        }
    }

    /// The kinds seen, in order of first appearance.
    pub fn entries(&self) -> impl Iterator<Item = &ErrorTallyEntry> {
        self.entries.iter().flatten()
    }

    /// Whether nothing failed.
    pub fn is_empty(&self) -> bool {
        self.entries[0].is_none()
    }

    pub(crate) fn clear(&mut self) {
        self.entries = Default::default();
    }
}

impl AddAssign<&ErrorTally> for ErrorTally {
    fn add_assign(&mut self, other: &ErrorTally) {
        for e in other.entries() {
            self.add_entry(e);
        }
    }
}

impl ErrorTally {
    /// Adds one entry (from another tally, or decoded from an agent's message).
    pub fn add_entry(&mut self, e: &ErrorTallyEntry) {
        {
            let before = self
                .entries()
                .find(|x| x.op == e.op && x.kind == e.kind)
                .map(|x| x.count);
            match before {
                Some(_) => {
                    for x in self.entries.iter_mut().flatten() {
                        if x.op == e.op && x.kind == e.kind {
                            x.count += e.count;
                        }
                    }
                }
                None => {
                    self.record(e.op, e.kind, e.first_offset, e.first_file);
                    for x in self.entries.iter_mut().flatten() {
                        if x.op == e.op && x.kind == e.kind {
                            x.count += e.count - 1;
                        }
                    }
                }
            }
        }
    }
}
