//! The enumerated choices of a job: I/O pattern, block size, direct I/O, load kind, engine.

use std::fmt;

use crate::units::{format_size, parse_size};

/// The I/O pattern, with fio's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rw {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Random reads.
    RandRead,
    /// Random writes.
    RandWrite,
    /// Sequential mixed reads and writes (`rw`, `readwrite`).
    ReadWrite,
    /// Random mixed reads and writes.
    RandRw,
    /// Sequential trims: the blocks' space released (a hole punched in a file, a discard of a
    /// device's blocks).
    Trim,
    /// Random trims.
    RandTrim,
    /// Sequential trims, each block written again after its trim (fio's `trimwrite`).
    TrimWrite,
}

impl Rw {
    /// The name fio uses.
    pub fn name(self) -> &'static str {
        match self {
            Rw::Read => "read",
            Rw::Write => "write",
            Rw::RandRead => "randread",
            Rw::RandWrite => "randwrite",
            Rw::ReadWrite => "rw",
            Rw::RandRw => "randrw",
            Rw::Trim => "trim",
            Rw::RandTrim => "randtrim",
            Rw::TrimWrite => "trimwrite",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Rw> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "read" => Rw::Read,
            "write" => Rw::Write,
            "randread" => Rw::RandRead,
            "randwrite" => Rw::RandWrite,
            "rw" | "readwrite" => Rw::ReadWrite,
            "randrw" => Rw::RandRw,
            "trim" => Rw::Trim,
            "randtrim" => Rw::RandTrim,
            "trimwrite" => Rw::TrimWrite,
            _ => return None,
        })
    }

    /// Whether the pattern is random by default.
    pub fn is_random(self) -> bool {
        matches!(
            self,
            Rw::RandRead | Rw::RandWrite | Rw::RandRw | Rw::RandTrim
        )
    }

    /// Whether the pattern trims: its I/Os release space (it destroys data as a write does).
    pub fn trims(self) -> bool {
        matches!(self, Rw::Trim | Rw::RandTrim | Rw::TrimWrite)
    }

    /// The share of reads, in percent, given the `rwmixread` of mixed patterns.
    pub fn read_pct(self, rwmixread: u8) -> u8 {
        match self {
            Rw::Read | Rw::RandRead => 100,
            // A trim destroys data as a write does: the safety rules of writes hold.
            Rw::Write | Rw::RandWrite | Rw::Trim | Rw::RandTrim | Rw::TrimWrite => 0,
            Rw::ReadWrite | Rw::RandRw => rwmixread,
        }
    }
}

impl fmt::Display for Rw {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How random offsets fall over a file: uniformly, or skewed as real data is accessed
/// (fio's `random_distribution`, with fio's forms and algorithms, so that its
/// `fio-genzipf` describes stormark's too).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Distribution {
    /// Every block alike.
    #[default]
    Random,
    /// Zipf with exponent theta (`zipf:1.2`): a few blocks take most accesses.
    Zipf(f64),
    /// Pareto with power h in (0, 1) (`pareto:0.2`).
    Pareto(f64),
    /// A normal distribution around the file's middle, its standard deviation this share of
    /// the file, percent (`normal:10`), fio's sum of twelve uniform draws.
    Normal(f64),
    /// Zones of the file, each taking a share of the accesses, uniform within it
    /// (`zoned:50/5:30/15:20/`: half the accesses to the first 5%, 30% to the next 15%, the
    /// rest to the rest): `(access %, range %)` in order, `count` of them.
    Zoned {
        /// The zones; those past `count` are unused.
        zones: [(u8, u8); MAX_ZONES],
        /// How many.
        count: u8,
    },
    /// Blocks in this order, again and again (`sequence:2,0,1`); with `stride`, each round
    /// moved on by the sequence's length (2, 0, 1, then 5, 3, 4, ...), as fio's
    /// `random_sequence_stride=1`. Block numbers past the file wrap around it.
    Sequence {
        /// The block numbers; those past `count` are unused.
        blocks: [u32; MAX_SEQUENCE],
        /// How many.
        count: u8,
        /// Each round moved on by `count` blocks.
        stride: bool,
    },
}

/// The most block numbers a `sequence:` distribution has.
pub const MAX_SEQUENCE: usize = 32;

/// The most zones a `zoned:` distribution has.
pub const MAX_ZONES: usize = 16;

impl Distribution {
    /// The accepted forms, for messages.
    pub const FORM: &'static str =
        "random, zipf:THETA (not 1, such as zipf:1.2), pareto:H (0 < H < 1, such as pareto:0.2), normal:PCT (such as normal:10), zoned:ACCESS/RANGE:... in percent, adding up to 100 (such as zoned:50/5:30/15:20/) or sequence:BLOCK,BLOCK,... (at most 32, such as sequence:2,0,1)";

    /// Parses fio's form: `random`, `zipf:1.2`, `pareto:0.2`, `normal:10` (`gauss:10`).
    pub fn parse(text: &str) -> Option<Distribution> {
        let t = text.trim().to_ascii_lowercase();
        if t == "random" {
            return Some(Distribution::Random);
        }
        let (kind, arg) = t.split_once(':')?;
        if kind == "zoned" {
            return Distribution::zoned(arg);
        }
        if kind == "sequence" {
            let mut blocks = [0u32; MAX_SEQUENCE];
            let parts: Vec<&str> = arg.split(',').collect();
            if parts.len() > MAX_SEQUENCE {
                return None;
            }
            for (b, p) in blocks.iter_mut().zip(&parts) {
                *b = p.trim().parse().ok()?;
            }
            return Some(Distribution::Sequence {
                blocks,
                count: parts.len() as u8,
                stride: false,
            });
        }
        let v: f64 = arg.trim().trim_end_matches('%').parse().ok()?;
        if !v.is_finite() {
            return None;
        }
        Some(match kind {
            "zipf" if v > 0.0 && (v - 1.0).abs() > 1e-9 && v <= 100.0 => Distribution::Zipf(v),
            "pareto" if v > 0.0 && v < 1.0 => Distribution::Pareto(v),
            "normal" | "gauss" if v > 0.0 && v <= 100.0 => Distribution::Normal(v),
            _ => return None,
        })
    }

    /// fio's `zoned:A/R:A/R:...` (one set for reads and writes; a last range left empty is
    /// the rest): the accesses add up to 100, the ranges to at most 100.
    fn zoned(arg: &str) -> Option<Distribution> {
        let mut zones = [(0u8, 0u8); MAX_ZONES];
        let parts: Vec<&str> = arg.split(':').collect();
        if parts.is_empty() || parts.len() > MAX_ZONES {
            return None;
        }
        let (mut access, mut range) = (0u32, 0u32);
        for (i, p) in parts.iter().enumerate() {
            let (a, r) = p.split_once('/')?;
            let a: u8 = a.trim().parse().ok().filter(|a| (1..=100).contains(a))?;
            let r: u8 = match r.trim() {
                "" if i + 1 == parts.len() => u8::try_from(100u32.checked_sub(range)?).ok()?,
                r => r.parse().ok().filter(|r| (1..=100).contains(r))?,
            };
            access += u32::from(a);
            range += u32::from(r);
            zones[i] = (a, r);
        }
        (access == 100 && range <= 100 && range > 0).then_some(Distribution::Zoned {
            zones,
            count: parts.len() as u8,
        })
    }

    /// fio's form.
    pub fn name(self) -> String {
        match self {
            Distribution::Random => "random".into(),
            Distribution::Zipf(t) => format!("zipf:{t}"),
            Distribution::Pareto(h) => format!("pareto:{h}"),
            Distribution::Normal(p) => format!("normal:{p}"),
            Distribution::Zoned { zones, count } => format!(
                "zoned:{}",
                zones[..usize::from(count)]
                    .iter()
                    .map(|(a, r)| format!("{a}/{r}"))
                    .collect::<Vec<_>>()
                    .join(":")
            ),
            Distribution::Sequence { blocks, count, .. } => format!(
                "sequence:{}",
                blocks[..usize::from(count)]
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        }
    }
}

/// fio's strided zones (`zonemode=strided`): a worker moves `size` bytes in a zone of `range`
/// bytes (going round it again when `size` is larger), then goes on to the next zone, `skip`
/// bytes past its end, from the start of the file when that is past the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Zones {
    /// Bytes moved in a zone before the next.
    pub size: u64,
    /// A zone's length.
    pub range: u64,
    /// Bytes between a zone's end and the next zone's start.
    pub skip: u64,
}

/// fio's zoned block device mode (`zonemode=zbd`) as fio runs it on a regular file or a
/// conventional device: the region cut into zones of `size` bytes, each written only at its
/// write pointer (shared by every job on the file), a full zone reset before it is written
/// again, reads only below the pointer, and a trim of a zone its reset.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Zoned {
    /// A zone's bytes (fio's `zonesize`).
    pub size: u64,
    /// Zones open for writing at once, over every job on the file (fio's `max_open_zones`;
    /// 0: no limit).
    pub max_open: u32,
    /// Share of the region holding data from which writes reset zones (fio's
    /// `zone_reset_threshold`).
    pub reset_threshold: f64,
    /// Share of those writes that reset their zone first (fio's `zone_reset_frequency`; 0:
    /// none).
    pub reset_frequency: f64,
    /// Reads may go past a zone's write pointer (fio's `read_beyond_wp`).
    pub read_beyond_wp: bool,
}

/// fio's SPRandom preconditioning (`sprandom`): one pass of random writes over every block
/// and then some, choosing which blocks to write again so that an SSD's erase blocks end up
/// with the distribution of stale data a long random-write load leaves (Desnoyers' model).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpRandom {
    /// The drive's over-provisioning, a ratio in (0, 1) (fio's `spr_op`).
    pub op: f64,
    /// Regions the physical capacity is cut into (fio's `spr_num_regions`).
    pub regions: u32,
    /// The drive's cache, bytes (fio's `spr_cs`; 0: none): rewrites wait a region more.
    pub cache: u64,
}

/// fio's `bssplit`: block sizes each drawn for a share of the I/Os (`4k/50:64k/50`), one list
/// for reads and writes or fio's `READS,WRITES` (`64k/40:1m/60,1m/100`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BsSplit {
    /// `(bytes, percent)` in the order given, the reads' list and then the writes' where they
    /// differ; those past `count` unused.
    sizes: [(u64, u8); 2 * MAX_SPLIT],
    /// How many, of both lists.
    count: u8,
    /// How many are the reads' (`count`: writes draw from the same list).
    reads: u8,
}

/// The most sizes a `bssplit`'s list has.
pub const MAX_SPLIT: usize = 16;

/// fio's `READS,WRITES,TRIMS` lists of a split: the reads' and, where given, the writes'
/// (trims' ignored with `any_trims`, else the same as the writes' or empty).
pub(crate) fn direction_lists(text: &str, any_trims: bool) -> Option<(&str, Option<&str>)> {
    let lists: Vec<&str> = text.split(',').map(str::trim).collect();
    match lists.as_slice() {
        [one] => Some((*one, None)),
        [r, w] => Some((*r, Some(*w).filter(|w| !w.is_empty()))),
        [r, w, t] if any_trims || t.is_empty() || w == t => {
            Some((*r, Some(*w).filter(|w| !w.is_empty())))
        }
        _ => None,
    }
}

impl BsSplit {
    /// The accepted form, for messages.
    pub const FORM: &'static str = "SIZE/PCT:SIZE/PCT:..., the shares adding up to 100 (a last share left empty takes the rest), such as 4k/50:64k/50, or READS,WRITES such as 64k/40:1m/60,1m/100";

    /// Parses fio's form: one list, or one for reads and one for writes (a third, fio's
    /// trims', the same as the writes' or left empty). One list: `SIZE/PCT:...`.
    pub fn parse(text: &str) -> Option<BsSplit> {
        let (reads, writes) = direction_lists(text, false)?;
        let mut split = BsSplit {
            sizes: [(0, 0); 2 * MAX_SPLIT],
            count: 0,
            reads: 0,
        };
        split.push_list(reads)?;
        split.reads = split.count;
        if let Some(w) = writes {
            split.push_list(w)?;
            if split.writes_own() == split.reads() {
                // The same list twice is one list: the copy goes, so that equal splits compare
                // equal however they were written.
                split.sizes[usize::from(split.reads)..usize::from(split.count)].fill((0, 0));
                split.count = split.reads;
            }
        }
        Some(split)
    }

    /// Appends one list, its shares adding up to 100.
    fn push_list(&mut self, list: &str) -> Option<()> {
        let parts: Vec<&str> = list.split(':').collect();
        if parts.len() > MAX_SPLIT {
            return None;
        }
        let mut total = 0u32;
        for (i, p) in parts.iter().enumerate() {
            let (size, pct) = p.split_once('/')?;
            let size = crate::units::parse_size(size.trim()).filter(|s| *s > 0)?;
            let pct: u8 = match pct.trim() {
                "" if i + 1 == parts.len() => u8::try_from(100u32.checked_sub(total)?).ok()?,
                p => p.parse().ok().filter(|p| *p <= 100)?,
            };
            total += u32::from(pct);
            self.sizes[usize::from(self.count)] = (size, pct);
            self.count += 1;
        }
        (total == 100).then_some(())
    }

    /// The sizes and shares given, of both lists.
    pub fn entries(&self) -> &[(u64, u8)] {
        &self.sizes[..usize::from(self.count)]
    }

    /// The reads' sizes and shares.
    pub fn reads(&self) -> &[(u64, u8)] {
        &self.sizes[..usize::from(self.reads)]
    }

    /// The writes' (and trims') sizes and shares.
    pub fn writes(&self) -> &[(u64, u8)] {
        if self.reads == self.count {
            self.reads()
        } else {
            self.writes_own()
        }
    }

    /// The writes' list where it is its own.
    fn writes_own(&self) -> &[(u64, u8)] {
        &self.sizes[usize::from(self.reads)..usize::from(self.count)]
    }

    /// fio's form.
    pub fn name(&self) -> String {
        let list = |l: &[(u64, u8)]| {
            l.iter()
                .map(|(s, p)| format!("{}/{p}", crate::units::format_size(*s)))
                .collect::<Vec<_>>()
                .join(":")
        };
        if self.reads == self.count {
            list(self.reads())
        } else {
            format!("{},{}", list(self.reads()), list(self.writes()))
        }
    }
}

/// Block size: fixed (`min == max`) or a range from which each I/O draws, aligned to `bs_align`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockSize {
    /// Smallest I/O size in bytes.
    pub min: u64,
    /// Largest I/O size in bytes.
    pub max: u64,
}

impl BlockSize {
    pub(crate) fn parse(s: &str) -> Option<BlockSize> {
        match s.split_once('-') {
            Some((a, b)) => Some(BlockSize {
                min: parse_size(a)?,
                max: parse_size(b)?,
            }),
            None => parse_size(s).map(|n| BlockSize { min: n, max: n }),
        }
    }
}

impl fmt::Display for BlockSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.min == self.max {
            write!(f, "{}", format_size(self.min))
        } else {
            write!(f, "{}-{}", format_size(self.min), format_size(self.max))
        }
    }
}

/// Which jobs stop when a job with fio's `exitall` finishes (fio's `exit_what`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExitWhat {
    /// The jobs running with it (fio's default, `group`).
    #[default]
    Group,
    /// Every job running now; the next stonewalled group still runs (fio's `stonewall`).
    Stonewall,
    /// Every job: nothing after it runs either (fio's `all`).
    All,
}

impl ExitWhat {
    /// The accepted form.
    pub const FORM: &'static str = "group, stonewall or all";

    /// fio's names.
    pub fn parse(text: &str) -> Option<ExitWhat> {
        match text.trim().to_ascii_lowercase().as_str() {
            "group" => Some(ExitWhat::Group),
            "stonewall" => Some(ExitWhat::Stonewall),
            "all" => Some(ExitWhat::All),
            _ => None,
        }
    }

    /// The value as the job's key writes it.
    pub fn name(self) -> &'static str {
        match self {
            ExitWhat::Group => "group",
            ExitWhat::Stonewall => "stonewall",
            ExitWhat::All => "all",
        }
    }
}

/// When a buffered job's files leave the page cache (fio's `invalidate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Invalidate {
    /// Never: what the cache holds is read from it.
    No,
    /// Once, before the job starts (stormark's default).
    #[default]
    Start,
    /// Before each pass over the job's files, as fio does (`invalidate=1` of a fio job file:
    /// a time_based or looping job drops its files' pages each time round).
    EachPass,
}

impl Invalidate {
    /// The accepted form.
    pub const FORM: &'static str =
        "1 (before the job starts), 0 (never) or pass (before each pass over the files, as fio)";

    /// `0`/`false`/`no`, `1`/`true`/`yes`/`start`, or `pass`/`each_pass`.
    pub fn parse(text: &str) -> Option<Invalidate> {
        match text.trim().to_ascii_lowercase().as_str() {
            "pass" | "each_pass" | "each-pass" => Some(Invalidate::EachPass),
            "start" => Some(Invalidate::Start),
            other => crate::units::parse_bool(other).map(|on| {
                if on {
                    Invalidate::Start
                } else {
                    Invalidate::No
                }
            }),
        }
    }

    /// The value as the job's key writes it.
    pub fn name(self) -> &'static str {
        match self {
            Invalidate::No => "0",
            Invalidate::Start => "1",
            Invalidate::EachPass => "pass",
        }
    }
}

/// Whether I/O bypasses the page cache (`O_DIRECT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direct {
    /// Always `O_DIRECT`; a filesystem that refuses it is an error.
    Yes,
    /// Buffered I/O through the page cache (fio's default).
    No,
    /// `O_DIRECT` where the filesystem allows it, else buffered, and the run says so.
    Auto,
}

impl Direct {
    pub(crate) fn parse(s: &str) -> Option<Direct> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Direct::Yes,
            "0" | "false" | "no" | "off" => Direct::No,
            "auto" => Direct::Auto,
            _ => return None,
        })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Direct::Yes => "true",
            Direct::No => "false",
            Direct::Auto => "auto",
        }
    }
}

/// What a job loads: the kind decides what its target is and which engine backends can run
/// it. File and block load now; object (S3), network and metadata load take their place here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LoadKind {
    /// Files in a run directory, an existing file or a block device.
    #[default]
    File,
    /// No target at all: every request completes at once (the tool's own cost, and the proof
    /// that the coordinator and agents carry any kind of load).
    Null,
    /// Objects in an S3 bucket, over HTTP.
    S3,
    /// TCP streams to a `stormark net server`.
    Net,
    /// Metadata operations (mkdir, create, stat, ...) on a tree of small files, as mdtest.
    Meta,
}

impl LoadKind {
    /// The name as typed (`kind = "file"`).
    pub fn name(self) -> &'static str {
        match self {
            LoadKind::File => "file",
            LoadKind::Null => "null",
            LoadKind::S3 => "s3",
            LoadKind::Net => "net",
            LoadKind::Meta => "meta",
        }
    }

    /// Parses `file` or `null`.
    pub fn parse(s: &str) -> Option<LoadKind> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "file" | "block" => LoadKind::File,
            "null" => LoadKind::Null,
            "s3" => LoadKind::S3,
            "net" => LoadKind::Net,
            "meta" => LoadKind::Meta,
            _ => return None,
        })
    }

    /// Whether jobs of this kind need a target (a path) on each host.
    pub fn needs_target(self) -> bool {
        matches!(self, LoadKind::File | LoadKind::Meta)
    }
}

/// Synchronous writes from the open flags (fio's `sync`): every write returns once it is
/// on stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncMode {
    /// Writes may sit in caches (the default).
    #[default]
    None,
    /// `O_DSYNC`: the data and what is needed to read it back.
    Dsync,
    /// `O_SYNC`: the data and all its metadata.
    Sync,
}

impl SyncMode {
    /// The name as typed.
    pub fn name(self) -> &'static str {
        match self {
            SyncMode::None => "none",
            SyncMode::Dsync => "dsync",
            SyncMode::Sync => "sync",
        }
    }

    /// Parses `none`, `dsync` or `sync` (fio's `sync=1` is `sync`, `sync=0` none).
    pub fn parse(text: &str) -> Option<SyncMode> {
        Some(match text.trim().to_ascii_lowercase().as_str() {
            "none" | "0" | "false" | "off" => SyncMode::None,
            "dsync" | "o_dsync" => SyncMode::Dsync,
            "sync" | "1" | "true" | "on" | "o_sync" => SyncMode::Sync,
            _ => return None,
        })
    }
}

/// Which I/O engine to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineChoice {
    /// io_uring where the kernel allows it, else psync.
    Auto,
    /// Linux io_uring, `iodepth` I/Os in flight per job.
    IoUring,
    /// `pread`/`pwrite`, one I/O at a time per job (fio's psync).
    Psync,
    /// No I/O at all: measures stormark's own overhead (fio's `null`).
    Null,
}

impl EngineChoice {
    /// The name as typed.
    pub fn name(self) -> &'static str {
        match self {
            EngineChoice::Auto => "auto",
            EngineChoice::IoUring => "io_uring",
            EngineChoice::Psync => "psync",
            EngineChoice::Null => "null",
        }
    }

    /// Whether the engine keeps several I/Os in flight per worker (`iodepth`): only psync
    /// does one at a time. The one place that rule lives.
    pub fn queues(self) -> bool {
        self != EngineChoice::Psync
    }

    /// The engine named `s` (fio's spellings too), or `None`.
    pub fn parse(s: &str) -> Option<EngineChoice> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "auto" => EngineChoice::Auto,
            "io_uring" | "io-uring" | "uring" => EngineChoice::IoUring,
            "psync" | "sync" | "pvsync" => EngineChoice::Psync,
            "null" => EngineChoice::Null,
            _ => return None,
        })
    }
}
