//! A job's options as typed ([`JobOpts`]), resolved and validated ([`Job`]), and a
//! [`Workload`] of jobs run one after another or, when they share a group, together.

use std::fmt;
use std::time::Duration;

use crate::search::{parse_steady_state, SteadyState, STEADY_FORM};
use crate::units::{
    format_duration, format_size, parse_duration, parse_percent, parse_size, DURATION_FORM,
    PERCENT_FORM, SIZE_FORM,
};
use crate::SpecError;

/// Per-file size used for a directory target when no `--size` is given.
pub const DEFAULT_FILE_SIZE: u64 = 1 << 30;

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
        }
    }

    fn parse(s: &str) -> Option<Rw> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "read" => Rw::Read,
            "write" => Rw::Write,
            "randread" => Rw::RandRead,
            "randwrite" => Rw::RandWrite,
            "rw" | "readwrite" => Rw::ReadWrite,
            "randrw" => Rw::RandRw,
            _ => return None,
        })
    }

    /// Whether the pattern is random by default.
    pub fn is_random(self) -> bool {
        matches!(self, Rw::RandRead | Rw::RandWrite | Rw::RandRw)
    }

    /// The share of reads, in percent, given the `rwmixread` of mixed patterns.
    pub fn read_pct(self, rwmixread: u8) -> u8 {
        match self {
            Rw::Read | Rw::RandRead => 100,
            Rw::Write | Rw::RandWrite => 0,
            Rw::ReadWrite | Rw::RandRw => rwmixread,
        }
    }
}

impl fmt::Display for Rw {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
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
    fn parse(s: &str) -> Option<BlockSize> {
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
    fn parse(s: &str) -> Option<Direct> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Direct::Yes,
            "0" | "false" | "no" | "off" => Direct::No,
            "auto" => Direct::Auto,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
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
}

impl LoadKind {
    /// The name as typed (`kind = "file"`).
    pub fn name(self) -> &'static str {
        match self {
            LoadKind::File => "file",
            LoadKind::Null => "null",
        }
    }

    /// Parses `file` or `null`.
    pub fn parse(s: &str) -> Option<LoadKind> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "file" | "block" => LoadKind::File,
            "null" => LoadKind::Null,
            _ => return None,
        })
    }

    /// Whether jobs of this kind need a target (a path) on each host.
    pub fn needs_target(self) -> bool {
        self == LoadKind::File
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

    fn parse(s: &str) -> Option<EngineChoice> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "auto" => EngineChoice::Auto,
            "io_uring" | "io-uring" | "uring" => EngineChoice::IoUring,
            "psync" | "sync" | "pvsync" => EngineChoice::Psync,
            "null" => EngineChoice::Null,
            _ => return None,
        })
    }
}

/// Where a value came from, so that an error names it as the user wrote it.
#[derive(Debug, Clone, Copy)]
pub enum Source<'a> {
    /// A command-line flag: errors say `--bs 4kk: ...`.
    Flag,
    /// A key in a job file or profile: errors say `bs in <context> = 4kk: ...`.
    Key(&'a str),
}

/// The keys a job accepts, in job files and as `set` keys; fio's spellings are accepted as
/// aliases (`numjobs`, `runtime`, `blocksize`, `readwrite`, `ioengine`, ...).
pub const JOB_KEYS: &[&str] = &[
    "kind",
    "name",
    "group",
    "rw",
    "rwmixread",
    "random_pct",
    "bs",
    "bs_align",
    "iodepth",
    "jobs",
    "files",
    "size",
    "time",
    "io_total",
    "direct",
    "engine",
    "ramp",
    "invalidate",
    "iodepth_batch",
    "iodepth_batch_complete",
    "rate_iops",
    "steady_state",
];

/// One job's options as given: every field optional, so that a profile, a job file's defaults,
/// a `[[job]]` section and command-line flags can be layered with [`JobOpts::overlay`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobOpts {
    /// What the job loads.
    pub kind: Option<LoadKind>,
    /// Job name, used in reports and file names.
    pub name: Option<String>,
    /// Jobs sharing a group run at the same time.
    pub group: Option<String>,
    /// I/O pattern.
    pub rw: Option<Rw>,
    /// Share of reads in mixed patterns, percent.
    pub rwmixread: Option<u8>,
    /// Share of random I/O in one stream, percent (fio's `percentage_random`).
    pub random_pct: Option<u8>,
    /// Block size or range.
    pub bs: Option<BlockSize>,
    /// Alignment of offsets and of sizes drawn from a range.
    pub bs_align: Option<u64>,
    /// I/Os in flight per job.
    pub iodepth: Option<u32>,
    /// Parallel workers (fio's `numjobs`).
    pub jobs: Option<u32>,
    /// Files per worker.
    pub files: Option<u32>,
    /// Bytes per file (or the part of a file or device used).
    pub size: Option<u64>,
    /// Measured duration.
    pub time: Option<Duration>,
    /// Stop each worker after this many bytes (fio's `io_size`).
    pub io_total: Option<u64>,
    /// `O_DIRECT`.
    pub direct: Option<Direct>,
    /// I/O engine.
    pub engine: Option<EngineChoice>,
    /// Warm-up excluded from results.
    pub ramp: Option<Duration>,
    /// Drop the files' cached pages before a buffered job starts (fio's `invalidate`).
    pub invalidate: Option<bool>,
    /// New I/Os per submitting system call (fio's `iodepth_batch_submit`).
    pub iodepth_batch: Option<u32>,
    /// Most completions reaped before refilling (fio's `iodepth_batch_complete_max`).
    pub iodepth_batch_complete: Option<u32>,
    /// Open loop: total I/Os per second of the job, over all its workers and hosts.
    pub rate_iops: Option<u32>,
    /// `steady_state`.
    pub steady_state: Option<SteadyState>,
}

impl JobOpts {
    /// Sets one option from its text form. `key` is a job key or a fio alias; the error names
    /// the option as the user wrote it (`source`) and the accepted form.
    pub fn set(&mut self, key: &str, value: &str, source: Source<'_>) -> Result<(), SpecError> {
        let canonical = canonical_key(key).ok_or_else(|| SpecError::Invalid {
            option: label(key, source),
            value: value.to_string(),
            expected: format!("a known key, one of {}", JOB_KEYS.join(", ")),
        })?;
        let bad = |expected: &str| SpecError::invalid(&label(key, source), value, expected);
        let count = |max: u32| -> Result<u32, SpecError> {
            match value.trim().parse::<u32>() {
                Ok(n) if (1..=max).contains(&n) => Ok(n),
                _ => Err(bad(&format!("a whole number from 1 to {max}"))),
            }
        };
        match canonical {
            "kind" => self.kind = Some(LoadKind::parse(value).ok_or_else(|| bad("file or null"))?),
            "name" | "group" => {
                let ok = !value.is_empty()
                    && value.len() <= 64
                    && value
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
                if !ok {
                    return Err(bad(
                        "a name of letters, digits, '-', '_' and '.', at most 64",
                    ));
                }
                if canonical == "name" {
                    self.name = Some(value.to_string());
                } else {
                    self.group = Some(value.to_string());
                }
            }
            "rw" => {
                self.rw =
                    Some(Rw::parse(value).ok_or_else(|| {
                        bad("one of read, write, randread, randwrite, rw, randrw")
                    })?)
            }
            "rwmixread" => {
                self.rwmixread = Some(parse_percent(value).ok_or_else(|| bad(PERCENT_FORM))?)
            }
            "random_pct" => {
                self.random_pct = Some(parse_percent(value).ok_or_else(|| bad(PERCENT_FORM))?)
            }
            "bs" => {
                self.bs = Some(BlockSize::parse(value).ok_or_else(|| {
                    bad("a size such as 4k, 64KiB or 1m, or a range such as 4k-64k")
                })?)
            }
            "bs_align" => self.bs_align = Some(parse_size(value).ok_or_else(|| bad(SIZE_FORM))?),
            "iodepth" => self.iodepth = Some(count(4096)?),
            "iodepth_batch" => self.iodepth_batch = Some(count(4096)?),
            "iodepth_batch_complete" => self.iodepth_batch_complete = Some(count(4096)?),
            "rate_iops" => self.rate_iops = Some(count(100_000_000)?),
            "steady_state" => {
                self.steady_state = Some(parse_steady_state(value).map_err(|_| bad(STEADY_FORM))?)
            }
            "jobs" => self.jobs = Some(count(4096)?),
            "files" => self.files = Some(count(65536)?),
            "size" => self.size = Some(parse_size(value).ok_or_else(|| bad(SIZE_FORM))?),
            "time" => self.time = Some(parse_duration(value).ok_or_else(|| bad(DURATION_FORM))?),
            "io_total" => self.io_total = Some(parse_size(value).ok_or_else(|| bad(SIZE_FORM))?),
            "direct" => {
                self.direct = Some(Direct::parse(value).ok_or_else(|| bad("true, false or auto"))?)
            }
            "engine" => {
                self.engine = Some(
                    EngineChoice::parse(value)
                        .ok_or_else(|| bad("one of auto, io_uring, psync, null"))?,
                )
            }
            "ramp" => self.ramp = Some(parse_duration(value).ok_or_else(|| bad(DURATION_FORM))?),
            "invalidate" => {
                self.invalidate = Some(match value.trim().to_ascii_lowercase().as_str() {
                    "1" | "true" | "yes" | "on" => true,
                    "0" | "false" | "no" | "off" => false,
                    _ => return Err(bad("true or false (1 or 0)")),
                })
            }
            _ => unreachable!("canonical_key returns only JOB_KEYS"),
        }
        Ok(())
    }

    /// Layers `top` over `self`: every option set in `top` wins.
    pub fn overlay(&self, top: &JobOpts) -> JobOpts {
        macro_rules! pick {
            ($($f:ident),*) => { JobOpts { $($f: top.$f.clone().or_else(|| self.$f.clone()),)* } };
        }
        pick!(
            kind,
            name,
            group,
            rw,
            rwmixread,
            random_pct,
            bs,
            bs_align,
            iodepth,
            jobs,
            files,
            size,
            time,
            io_total,
            direct,
            engine,
            ramp,
            invalidate,
            iodepth_batch,
            iodepth_batch_complete,
            rate_iops,
            steady_state
        )
    }

    /// Fills defaults and checks the options against each other. `default_name` names a job
    /// that has no `name`.
    pub fn resolve(&self, default_name: &str) -> Result<Job, SpecError> {
        let rw = self.rw.unwrap_or(Rw::Read);
        let bs = self.bs.unwrap_or(BlockSize {
            min: 4096,
            max: 4096,
        });
        let shown_bs = bs.to_string();
        if bs.min == 0 || bs.min > bs.max {
            return Err(SpecError::invalid(
                "--bs",
                &shown_bs,
                "a size above zero, or a range low-high with low <= high",
            ));
        }
        if bs.max > 1 << 30 {
            return Err(SpecError::invalid(
                "--bs",
                &shown_bs,
                "a block size of at most 1g",
            ));
        }
        let bs_align = self.bs_align.unwrap_or(bs.min);
        if bs_align == 0 || bs_align > bs.min {
            return Err(SpecError::invalid(
                "--bs-align",
                &format_size(bs_align),
                format!(
                    "a size above zero and at most the smallest block size ({})",
                    format_size(bs.min)
                ),
            ));
        }
        let direct = self.direct.unwrap_or(Direct::No);
        if direct != Direct::No
            && (bs.min % 512 != 0 || bs_align % 512 != 0 || (bs.max - bs.min) % 512 != 0)
        {
            return Err(SpecError::invalid(
                "--bs",
                &shown_bs,
                "multiples of 512 bytes (and --bs-align a multiple of 512) with --direct; or use --buffered",
            ));
        }
        if let Some(size) = self.size {
            if size < bs.max {
                return Err(SpecError::invalid(
                    "--size",
                    &format_size(size),
                    format!(
                        "a size of at least the block size ({})",
                        format_size(bs.max)
                    ),
                ));
            }
        }
        if self.time == Some(Duration::ZERO) {
            return Err(SpecError::invalid(
                "--time",
                "0",
                "a duration above zero, such as 30s",
            ));
        }
        if self.io_total == Some(0) {
            return Err(SpecError::invalid(
                "--io-total",
                "0",
                "a size above zero, such as 1g",
            ));
        }
        let kind = self.kind.unwrap_or_default();
        let engine = match kind {
            LoadKind::Null => EngineChoice::Null,
            LoadKind::File => self.engine.unwrap_or(EngineChoice::Auto),
        };
        Ok(Job {
            kind,
            name: self
                .name
                .clone()
                .unwrap_or_else(|| default_name.to_string()),
            group: self.group.clone(),
            rw,
            rwmixread: self.rwmixread.unwrap_or(50),
            random_pct: self
                .random_pct
                .unwrap_or(if rw.is_random() { 100 } else { 0 }),
            bs,
            bs_align,
            iodepth: self.iodepth.unwrap_or(1),
            jobs: self.jobs.unwrap_or(1),
            files: self.files.unwrap_or(1),
            size: self.size,
            time: self.time,
            io_total: self.io_total,
            direct,
            engine,
            ramp: self.ramp.unwrap_or(Duration::ZERO),
            invalidate: self.invalidate.unwrap_or(true),
            iodepth_batch: self.iodepth_batch.unwrap_or(1),
            iodepth_batch_complete: self.iodepth_batch_complete.unwrap_or(1),
            rate_iops: self.rate_iops,
            steady_state: self.steady_state,
        })
    }
}

/// The job key an option name stands for, in any of the spellings fio or stormark accept
/// (`blocksize`, `ramp_time`, `--io-size`, ...); `None` for an unknown name.
pub fn canonical_key(key: &str) -> Option<&'static str> {
    let k = key
        .trim()
        .trim_start_matches("--")
        .replace('-', "_")
        .to_ascii_lowercase();
    let alias = match k.as_str() {
        "readwrite" => "rw",
        "blocksize" | "bsrange" | "blocksize_range" => "bs",
        "blockalign" | "ba" => "bs_align",
        "numjobs" => "jobs",
        "nrfiles" => "files",
        "filesize" => "size",
        "runtime" => "time",
        "io_size" | "io_limit" => "io_total",
        "ioengine" => "engine",
        "ramp_time" => "ramp",
        "iodepth_batch_submit" => "iodepth_batch",
        "iodepth_batch_complete_max" => "iodepth_batch_complete",
        "percentage_random" => "random_pct",
        "steadystate" | "ss" => "steady_state",
        other => other,
    };
    JOB_KEYS.iter().copied().find(|k| *k == alias)
}

fn label(key: &str, source: Source<'_>) -> String {
    match source {
        Source::Flag => format!("--{}", key.trim_start_matches("--").replace('_', "-")),
        Source::Key(context) => format!("{key} in {context} ="),
    }
}

/// A job resolved and validated: every option has its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// What it loads.
    pub kind: LoadKind,
    /// Name, unique within a workload.
    pub name: String,
    /// Jobs with the same group run at the same time.
    pub group: Option<String>,
    /// I/O pattern.
    pub rw: Rw,
    /// Share of reads in mixed patterns, percent.
    pub rwmixread: u8,
    /// Share of random offsets, percent.
    pub random_pct: u8,
    /// Block size or range.
    pub bs: BlockSize,
    /// Offset and size alignment, bytes.
    pub bs_align: u64,
    /// I/Os in flight per worker.
    pub iodepth: u32,
    /// Parallel workers.
    pub jobs: u32,
    /// Files per worker.
    pub files: u32,
    /// Bytes per file; `None` takes the whole file or device, or [`DEFAULT_FILE_SIZE`].
    pub size: Option<u64>,
    /// Measured duration; with neither this nor `io_total`, one pass over the working set.
    pub time: Option<Duration>,
    /// Bytes per worker after which it stops.
    pub io_total: Option<u64>,
    /// `O_DIRECT` choice.
    pub direct: Direct,
    /// Engine choice.
    pub engine: EngineChoice,
    /// Warm-up before measuring.
    pub ramp: Duration,
    /// Drop cached pages of the files before a buffered job (fio's `invalidate=1`, the default).
    pub invalidate: bool,
    /// New I/Os per submitting system call (fio's `iodepth_batch_submit`, default 1).
    pub iodepth_batch: u32,
    /// Most completions reaped before refilling (fio's `iodepth_batch_complete_max`, default 1).
    pub iodepth_batch_complete: u32,
    /// Open loop: total I/Os per second over all workers and hosts (`None`: closed loop).
    pub rate_iops: Option<u32>,
    /// The ramp ends once this figure is steady (the ramp then bounds how long to wait).
    pub steady_state: Option<SteadyState>,
}

impl Job {
    /// Share of reads, percent.
    pub fn read_pct(&self) -> u8 {
        self.rw.read_pct(self.rwmixread)
    }

    /// The job as `key = value` pairs in job-file form, enough to run it again.
    pub fn to_pairs(&self) -> Vec<(&'static str, String)> {
        let mut pairs = vec![
            ("name", self.name.clone()),
            ("rw", self.rw.name().to_string()),
            ("rwmixread", self.rwmixread.to_string()),
            ("random_pct", self.random_pct.to_string()),
            ("bs", self.bs.to_string()),
            ("bs_align", format_size(self.bs_align)),
            ("iodepth", self.iodepth.to_string()),
            ("jobs", self.jobs.to_string()),
            ("files", self.files.to_string()),
            ("direct", self.direct.name().to_string()),
            ("engine", self.engine.name().to_string()),
            ("ramp", format_duration(self.ramp)),
            ("invalidate", self.invalidate.to_string()),
            ("iodepth_batch", self.iodepth_batch.to_string()),
            (
                "iodepth_batch_complete",
                self.iodepth_batch_complete.to_string(),
            ),
        ];
        if self.kind != LoadKind::File {
            pairs.push(("kind", self.kind.name().to_string()));
        }
        if let Some(g) = &self.group {
            pairs.push(("group", g.clone()));
        }
        if let Some(s) = self.size {
            pairs.push(("size", format_size(s)));
        }
        if let Some(t) = self.time {
            pairs.push(("time", format_duration(t)));
        }
        if let Some(t) = self.io_total {
            pairs.push(("io_total", format_size(t)));
        }
        if let Some(s) = &self.steady_state {
            pairs.push(("steady_state", s.to_string()));
        }
        if let Some(r) = self.rate_iops {
            pairs.push(("rate_iops", r.to_string()));
        }
        pairs
    }
}

/// What to run: jobs in order, plus the options of the whole run.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// The jobs, in the order given.
    pub jobs: Vec<Job>,
    /// Write every file fully before the measured phases.
    pub prepare: bool,
}

impl Workload {
    /// Builds a workload and checks that job names are unique.
    pub fn new(jobs: Vec<Job>, prepare: bool) -> Result<Workload, SpecError> {
        for (i, job) in jobs.iter().enumerate() {
            if jobs[..i].iter().any(|j| j.name == job.name) {
                return Err(SpecError::invalid(
                    "name",
                    &job.name,
                    "a name used by one job only; rename one of the jobs",
                ));
            }
        }
        if jobs.is_empty() {
            return Err(SpecError::invalid("job", "(none)", "at least one job"));
        }
        Ok(Workload { jobs, prepare })
    }

    /// The stages of the run, in order: each is one job, or every job of one group (placed
    /// where the group first appears), run at the same time.
    pub fn stages(&self) -> Vec<Vec<&Job>> {
        let mut stages: Vec<(Option<&str>, Vec<&Job>)> = Vec::new();
        for job in &self.jobs {
            match job.group.as_deref() {
                Some(g) => match stages.iter_mut().find(|(name, _)| *name == Some(g)) {
                    Some((_, jobs)) => jobs.push(job),
                    None => stages.push((Some(g), vec![job])),
                },
                None => stages.push((None, vec![job])),
            }
        }
        stages.into_iter().map(|(_, jobs)| jobs).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(pairs: &[(&str, &str)]) -> Result<JobOpts, SpecError> {
        let mut o = JobOpts::default();
        for (k, v) in pairs {
            o.set(k, v, Source::Flag)?;
        }
        Ok(o)
    }

    #[test]
    fn every_key_accepts_its_forms() {
        let o = opts(&[
            ("rw", "randrw"),
            ("rwmixread", "70%"),
            ("random_pct", "80"),
            ("bs", "4k-64k"),
            ("bs_align", "4k"),
            ("iodepth", "32"),
            ("jobs", "2"),
            ("files", "3"),
            ("size", "1g"),
            ("time", "30s"),
            ("io_total", "2g"),
            ("direct", "true"),
            ("engine", "io_uring"),
            ("ramp", "5s"),
            ("name", "a-1"),
            ("group", "g"),
            ("invalidate", "0"),
            ("iodepth_batch", "8"),
        ])
        .unwrap();
        let job = o.resolve("x").unwrap();
        assert_eq!(job.rw, Rw::RandRw);
        assert_eq!(job.rwmixread, 70);
        assert_eq!(job.random_pct, 80);
        assert_eq!(
            job.bs,
            BlockSize {
                min: 4096,
                max: 65536
            }
        );
        assert_eq!((job.iodepth, job.jobs, job.files), (32, 2, 3));
        assert_eq!(job.size, Some(1 << 30));
        assert_eq!(job.time, Some(Duration::from_secs(30)));
        assert_eq!(job.io_total, Some(2 << 30));
        assert_eq!(job.direct, Direct::Yes);
        assert_eq!(job.engine, EngineChoice::IoUring);
        assert_eq!(job.ramp, Duration::from_secs(5));
        assert_eq!(job.name, "a-1");
        assert!(!job.invalidate);
        assert_eq!(job.iodepth_batch, 8);
    }

    #[test]
    fn fio_aliases() {
        let o = opts(&[
            ("numjobs", "4"),
            ("runtime", "10"),
            ("blocksize", "8k"),
            ("readwrite", "randwrite"),
            ("ioengine", "psync"),
        ])
        .unwrap();
        let job = o.resolve("x").unwrap();
        assert_eq!(
            (job.jobs, job.time, job.bs.min, job.rw, job.engine),
            (
                4,
                Some(Duration::from_secs(10)),
                8192,
                Rw::RandWrite,
                EngineChoice::Psync
            )
        );
    }

    #[test]
    fn defaults_follow_fio() {
        let job = JobOpts::default().resolve("x").unwrap();
        assert_eq!(job.rw, Rw::Read);
        assert_eq!(job.bs.min, 4096);
        assert_eq!(job.iodepth, 1);
        assert_eq!(job.direct, Direct::No);
        assert_eq!(job.random_pct, 0);
        let job = opts(&[("rw", "randread")]).unwrap().resolve("x").unwrap();
        assert_eq!(job.random_pct, 100);
    }

    #[test]
    fn rejected_values_name_option_and_form() {
        let cases = [
            (
                "bs",
                "4kk",
                "--bs 4kk: expected a size such as 4k, 64KiB or 1m, or a range such as 4k-64k",
            ),
            (
                "rw",
                "randomread",
                "--rw randomread: expected one of read, write, randread, randwrite, rw, randrw",
            ),
            (
                "iodepth",
                "0",
                "--iodepth 0: expected a whole number from 1 to 4096",
            ),
            (
                "jobs",
                "-1",
                "--jobs -1: expected a whole number from 1 to 4096",
            ),
            (
                "rwmixread",
                "101",
                "--rwmixread 101: expected a percentage from 0 to 100, such as 70 or 70%",
            ),
            (
                "time",
                "10x",
                "--time 10x: expected a duration such as 30s, 500ms, 5m or 1h",
            ),
            (
                "direct",
                "maybe",
                "--direct maybe: expected true, false or auto",
            ),
            (
                "engine",
                "libaio",
                "--engine libaio: expected one of auto, io_uring, psync, null",
            ),
            (
                "name",
                "a b",
                "--name a b: expected a name of letters, digits, '-', '_' and '.', at most 64",
            ),
        ];
        for (key, value, message) in cases {
            let err = opts(&[(key, value)]).unwrap_err();
            assert_eq!(err.to_string(), message);
        }
    }

    #[test]
    fn unknown_key_in_file_names_context() {
        let err = JobOpts::default()
            .set("blocksiz", "4k", Source::Key("job 1 of a.toml"))
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("blocksiz in job 1 of a.toml = 4k: expected a known key"),
            "{err}"
        );
    }

    #[test]
    fn cross_checks() {
        let err = opts(&[("bs", "64k-4k")]).unwrap().resolve("x").unwrap_err();
        assert!(err.to_string().starts_with("--bs 64k-4k:"), "{err}");
        let err = opts(&[("bs", "4k"), ("size", "1k")])
            .unwrap()
            .resolve("x")
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "--size 1k: expected a size of at least the block size (4k)"
        );
        let err = opts(&[("bs", "1000"), ("direct", "1")])
            .unwrap()
            .resolve("x")
            .unwrap_err();
        assert!(err.to_string().contains("multiples of 512"), "{err}");
        let err = opts(&[("time", "0s")]).unwrap().resolve("x").unwrap_err();
        assert!(err.to_string().starts_with("--time 0:"), "{err}");
        let err = opts(&[("bs", "8k"), ("bs_align", "16k")])
            .unwrap()
            .resolve("x")
            .unwrap_err();
        assert!(err.to_string().starts_with("--bs-align 16k:"), "{err}");
    }

    #[test]
    fn overlay_prefers_top() {
        let base = opts(&[("bs", "4k"), ("iodepth", "8")]).unwrap();
        let top = opts(&[("iodepth", "16")]).unwrap();
        let both = base.overlay(&top);
        assert_eq!(both.iodepth, Some(16));
        assert_eq!(
            both.bs,
            Some(BlockSize {
                min: 4096,
                max: 4096
            })
        );
    }

    #[test]
    fn stages_group_jobs() {
        let mk = |name: &str, group: Option<&str>| {
            let mut o = opts(&[("name", name)]).unwrap();
            if let Some(g) = group {
                o.set("group", g, Source::Flag).unwrap();
            }
            o.resolve(name).unwrap()
        };
        let w = Workload::new(
            vec![
                mk("a", None),
                mk("b", Some("g")),
                mk("c", None),
                mk("d", Some("g")),
            ],
            false,
        )
        .unwrap();
        let names: Vec<Vec<&str>> = w
            .stages()
            .iter()
            .map(|s| s.iter().map(|j| j.name.as_str()).collect())
            .collect();
        assert_eq!(names, vec![vec!["a"], vec!["b", "d"], vec!["c"]]);
        assert!(Workload::new(vec![mk("a", None), mk("a", None)], false).is_err());
    }

    #[test]
    fn pairs_round_trip() {
        let job = opts(&[
            ("rw", "randrw"),
            ("bs", "4k-16k"),
            ("time", "90s"),
            ("size", "64m"),
        ])
        .unwrap()
        .resolve("j")
        .unwrap();
        let mut again = JobOpts::default();
        for (k, v) in job.to_pairs() {
            again.set(k, &v, Source::Flag).unwrap();
        }
        assert_eq!(again.resolve("other").unwrap(), job);
    }
}
