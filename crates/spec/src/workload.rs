//! A job's options as typed ([`JobOpts`]), resolved and validated ([`Job`]), and a
//! [`Workload`] of jobs run one after another or, when they share a group, together.

use std::time::Duration;

pub use crate::choices::{
    BlockSize, BsSplit, Direct, Distribution, EngineChoice, Invalidate, LoadKind, Rw, SyncMode,
    MAX_ZONES,
};
pub use crate::options::{canonical_key, JobOpts, Source, JOB_KEYS};
use crate::s3::S3Job;
use crate::search::SteadyState;
use crate::units::{format_duration, format_size};
use crate::SpecError;

/// Per-file size used for a directory target when no `--size` is given.
pub const DEFAULT_FILE_SIZE: u64 = 1 << 30;

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
    /// How random offsets fall over a file.
    pub distribution: crate::Distribution,
    /// Block sizes by share (fio's `bssplit`), within `bs`'s range.
    pub bs_split: Option<crate::BsSplit>,
    /// Bytes a sequential pattern moves on (or back, negative) after each I/O beyond it.
    pub seq_add: i64,
    /// I/Os from each random offset before a new one is drawn (fio's `rw=randread:N`; 1:
    /// every I/O its own).
    pub rand_run: u32,
    /// Within such a run the same offset each time, not the next (fio's
    /// `rw_sequencer=identical`).
    pub rand_run_same: bool,
    /// Where the region used starts in a file or device the workers share (fio's `offset`).
    pub offset: u64,
    /// What each further worker adds to `offset` (fio's `offset_increment`).
    pub offset_increment: u64,
    /// `size` as a share of the file or device, percent (fio's `size=95%`): settled by
    /// [`Job::on_length`] where the target's length is known.
    pub size_pct: Option<u8>,
    /// `offset` as a share of the file or device, percent (fio's `offset=50%`).
    pub offset_pct: Option<u8>,
    /// An open loop's I/Os arrive as a Poisson process (exponential gaps of the same mean)
    /// rather than evenly (fio's `rate_process=poisson`).
    pub rate_poisson: bool,
    /// Passes over the size before the job stops, when its size is a share (fio's `loops`
    /// with `size=95%`): `io_total` once the size is known.
    pub loops: Option<u32>,
    /// A pause after every `thinktime_blocks` I/Os of a worker (fio's `thinktime`; zero:
    /// none), its first `thinktime_spin` spinning.
    pub thinktime: Duration,
    /// The busy part of each pause (fio's `thinktime_spin`).
    pub thinktime_spin: Duration,
    /// I/Os between pauses (fio's `thinktime_blocks`, default 1).
    pub thinktime_blocks: u32,
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
    /// The wait after the stage starts before the job's first I/O (fio's `startdelay`); its
    /// time is counted from then.
    pub start_delay: Duration,
    /// When a buffered job's files leave the page cache: before it starts (the default), never,
    /// or before each pass as fio does.
    pub invalidate: Invalidate,
    /// Write buffers hold zeros rather than random bytes (fio's `zero_buffers`): what a
    /// compressing or deduplicating target stores in almost no space.
    pub zero_buffers: bool,
    /// Write buffers repeat these bytes (fio's `buffer_pattern`), what a compressing target
    /// sees of a fill; the random share of `compress_ratio` still varies them.
    pub buffer_pattern: Option<crate::FillPattern>,
    /// Synchronous writes from the open flags (fio's `sync`).
    pub sync: SyncMode,
    /// `fsync` the file after every this many writes of a worker (fio's `fsync`); 0: never.
    pub fsync: u32,
    /// `fdatasync` instead, after every this many writes (fio's `fdatasync`); 0: never.
    pub fdatasync: u32,
    /// `fsync` every file written when the job ends, timed (fio's `end_fsync`).
    pub end_fsync: bool,
    /// Buffered files are advised as the pattern reads them, random (no readahead) or
    /// sequential, as fio does by default (its `fadvise_hint`).
    pub fadvise_hint: bool,
    /// What a compressor achieves on the written data (1: incompressible, the default).
    pub compress_ratio: f64,
    /// Written blocks over distinct blocks (1: every block unique, the default).
    pub dedup_ratio: f64,
    /// The unit of deduplication, bytes (the smallest block size unless given).
    pub dedup_block: u64,
    /// Written blocks carry headers, read back and checked after the load (file jobs).
    pub verify: bool,
    /// Only check what a `--keep` run with `--verify` left: nothing is written.
    pub verify_only: bool,
    /// New I/Os per submitting system call (fio's `iodepth_batch_submit`, default 1).
    pub iodepth_batch: u32,
    /// Most completions reaped before refilling (fio's `iodepth_batch_complete_max`, default 1).
    pub iodepth_batch_complete: u32,
    /// Open loop: total I/Os per second over all workers and hosts (`None`: closed loop).
    pub rate_iops: Option<u32>,
    /// The S3 part of a job of kind s3.
    pub s3: Option<S3Job>,
    /// The network part of a job of kind net.
    pub net: Option<crate::net::NetJob>,
    /// The metadata part of a job of kind meta.
    pub meta: Option<crate::meta::MetaJob>,
    /// The ramp ends once this figure is steady (the ramp then bounds how long to wait).
    pub steady_state: Option<SteadyState>,
}

impl Job {
    /// Share of reads, percent.
    pub fn read_pct(&self) -> u8 {
        self.rw.read_pct(self.rwmixread)
    }

    /// The job on a file or device of `total` bytes: its shares of it (fio's `size=95%`,
    /// `offset=50%`) as bytes, offsets a multiple of `align`.
    pub fn on_length(&self, total: u64, align: u64) -> Job {
        let share = |pct: u8| (u128::from(total) * u128::from(pct) / 100) as u64;
        let mut job = self.clone();
        if let Some(p) = self.offset_pct {
            job.offset = share(p) / align.max(1) * align.max(1);
        }
        if let Some(p) = self.size_pct {
            let size = share(p).max(self.bs.max);
            job.size = Some(size);
            if let (Some(n), None) = (self.loops, self.io_total) {
                job.io_total = Some(size.saturating_mul(u64::from(n)));
            }
        }
        job
    }

    /// Where worker `w`'s region starts in a file or device the workers share: fio's
    /// `offset + w * offset_increment`.
    pub fn region_start(&self, w: u64) -> u64 {
        self.offset
            .saturating_add(w.saturating_mul(self.offset_increment))
    }

    /// The pattern as fio writes it: `read`, or `read:-8k` with a sequential step.
    pub fn rw_text(&self) -> String {
        if self.rand_run > 1 {
            return format!("{}:{}", self.rw.name(), self.rand_run);
        }
        match self.seq_add {
            0 => self.rw.name().to_string(),
            n if n < 0 => format!("{}:-{}", self.rw.name(), format_size(n.unsigned_abs())),
            n => format!("{}:{}", self.rw.name(), format_size(n as u64)),
        }
    }

    /// The job as `key = value` pairs in job-file form, enough to run it again.
    pub fn to_pairs(&self) -> Vec<(&'static str, String)> {
        let mut pairs = vec![
            ("name", self.name.clone()),
            ("rw", self.rw_text()),
            ("rwmixread", self.rwmixread.to_string()),
            ("random_pct", self.random_pct.to_string()),
            ("random_distribution", self.distribution.name()),
            ("bs", self.bs.to_string()),
            ("bs_align", format_size(self.bs_align)),
            ("iodepth", self.iodepth.to_string()),
            ("jobs", self.jobs.to_string()),
            ("files", self.files.to_string()),
            ("direct", self.direct.name().to_string()),
            ("engine", self.engine.name().to_string()),
            ("ramp", format_duration(self.ramp)),
            ("invalidate", self.invalidate.name().to_string()),
            ("iodepth_batch", self.iodepth_batch.to_string()),
            (
                "iodepth_batch_complete",
                self.iodepth_batch_complete.to_string(),
            ),
        ];
        if self.kind == LoadKind::Meta {
            // A meta job refuses the options of data load: only its own travel.
            pairs.retain(|(k, _)| matches!(*k, "name" | "jobs" | "ramp"));
        }
        if self.kind != LoadKind::File {
            pairs.push(("kind", self.kind.name().to_string()));
        }
        if let Some(split) = &self.bs_split {
            pairs.push(("bssplit", split.name()));
        }
        if !self.start_delay.is_zero() {
            pairs.push(("startdelay", format_duration(self.start_delay)));
        }
        if self.rand_run_same {
            pairs.push(("rw_sequencer", "identical".into()));
        }
        if self.offset > 0 {
            pairs.push(("offset", self.offset.to_string()));
        }
        if let Some(p) = self.offset_pct {
            pairs.push(("offset", format!("{p}%")));
        }
        if let Some(p) = self.size_pct {
            pairs.push(("size", format!("{p}%")));
        }
        if let Some(n) = self.loops {
            pairs.push(("loops", n.to_string()));
        }
        if self.rate_poisson {
            pairs.push(("rate_process", "poisson".into()));
        }
        if !self.thinktime.is_zero() {
            pairs.push(("thinktime", self.thinktime.as_micros().to_string()));
            pairs.push((
                "thinktime_spin",
                self.thinktime_spin.as_micros().to_string(),
            ));
            pairs.push(("thinktime_blocks", self.thinktime_blocks.to_string()));
        }
        if self.offset_increment > 0 {
            pairs.push(("offset_increment", self.offset_increment.to_string()));
        }
        if let Some(g) = &self.group {
            pairs.push(("group", g.clone()));
        }
        if let Some(s3) = &self.s3 {
            pairs.extend(s3.pairs());
        }
        if let Some(net) = &self.net {
            pairs.push((
                "server",
                match &net.servers {
                    crate::net::NetServers::Listed(list) => list.join(","),
                    crate::net::NetServers::Agents => "agents".into(),
                },
            ));
            pairs.push(("mode", net.mode.name().into()));
            pairs.push(("msg_size", format_size(u64::from(net.msg_size))));
            if net.bitrate > 0 {
                pairs.push(("bitrate", net.bitrate.to_string()));
            }
            if net.udp {
                pairs.push(("protocol", "udp".into()));
            }
            if net.path_mtu {
                pairs.push(("path_mtu", "1".into()));
            }
        }
        if let Some(meta) = &self.meta {
            pairs.extend(meta.pairs());
        }
        if self.zero_buffers {
            pairs.push(("zero_buffers", "true".into()));
        }
        if self.sync != SyncMode::None {
            pairs.push(("sync", self.sync.name().into()));
        }
        if self.fsync > 0 {
            pairs.push(("fsync", self.fsync.to_string()));
        }
        if self.fdatasync > 0 {
            pairs.push(("fdatasync", self.fdatasync.to_string()));
        }
        if self.end_fsync {
            pairs.push(("end_fsync", "true".into()));
        }
        if let Some(p) = &self.buffer_pattern {
            pairs.push(("buffer_pattern", p.text()));
        }
        if !self.fadvise_hint {
            pairs.push(("fadvise_hint", "false".into()));
        }
        if self.compress_ratio > 1.0 {
            pairs.push(("compress_ratio", self.compress_ratio.to_string()));
        }
        if self.verify && self.kind == LoadKind::File {
            pairs.push(("verify", "true".into()));
        }
        if self.verify_only {
            pairs.push(("verify_only", "true".into()));
        }
        if self.dedup_ratio > 1.0 {
            pairs.push(("dedup_ratio", self.dedup_ratio.to_string()));
            pairs.push(("dedup_block", format_size(self.dedup_block)));
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
            ("zero_buffers", "1"),
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
        assert_eq!(job.invalidate, Invalidate::No);
        assert!(job.zero_buffers);
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
                "--rw randomread: expected one of read, write, randread, randwrite, rw, randrw, trim, randtrim, trimwrite, a sequential one with :SIZE after it (read:-8k)",
            ),
            (
                "iodepth",
                "0",
                "--iodepth 0: expected a whole number from 1 to 32768",
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
        // A range steps by the alignment: no larger than its smallest block. One size may be
        // aligned further, as fio's blockalign.
        let err = opts(&[("bs", "8k-64k"), ("bs_align", "16k")])
            .unwrap()
            .resolve("x")
            .unwrap_err();
        assert!(err.to_string().starts_with("--bs-align 16k:"), "{err}");
        let j = opts(&[("bs", "8k"), ("bs_align", "16k")])
            .unwrap()
            .resolve("x")
            .unwrap();
        assert_eq!((j.bs.min, j.bs_align), (8192, 16384));
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
