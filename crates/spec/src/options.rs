//! A job's options as typed ([`JobOpts`]): every key's parser, fio's spellings, layering, and
//! resolution into a validated [`Job`].

use std::time::Duration;

use crate::choices::{BlockSize, Direct, EngineChoice, LoadKind, Rw, SyncMode};
use crate::data;
use crate::meta::MetaOp;
use crate::net::NetMode;
use crate::s3::{Addressing, OpMix, SizeDist};
use crate::search::{parse_steady_state, SteadyState, STEADY_FORM};
use crate::units::{format_size, parse_duration, parse_size, DURATION_FORM, SIZE_FORM};
use crate::workload::Job;
use crate::SpecError;

mod data_keys;
mod job_keys;
mod kind_keys;
mod meta_job;
mod names;
mod net_job;
mod pattern_keys;
pub(crate) use pattern_keys::file_name as ior_file_name;
mod resolve;
mod ring_keys;
mod run_keys;
mod s3_job;
mod zoned;

pub use job_keys::JOB_KEYS;
use names::label;
pub(crate) use names::unknown_key;
pub use names::{canonical_key, nearest_key};

/// The first of `options` (name, given) that was given, refused as `why`.
fn refuse_given(options: &[(&str, bool)], why: &str) -> Result<(), SpecError> {
    match options.iter().find(|(_, given)| *given) {
        Some((name, _)) => Err(SpecError::invalid(name, "(given)", why)),
        None => Ok(()),
    }
}

/// The port of a `stormark net server` unless a job names one.
pub const NET_DEFAULT_PORT: u16 = 7879;

/// Where a value came from, so that an error names it as the user wrote it.
#[derive(Debug, Clone, Copy)]
pub enum Source<'a> {
    /// A command-line flag: errors say `--bs 4kk: ...`.
    Flag,
    /// A key in a job file or profile: errors say `bs in <context> = 4kk: ...`.
    Key(&'a str),
}

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
    /// The hosts of a distributed run it runs on (all when not given).
    pub hosts: Option<crate::OnHosts>,
    /// I/O pattern.
    pub rw: Option<Rw>,
    /// Share of reads in mixed patterns, percent.
    pub rwmixread: Option<u8>,
    /// Share of random I/O in one stream, percent (fio's `percentage_random`).
    pub random_pct: Option<u8>,
    /// How random offsets fall (fio's `random_distribution`).
    pub distribution: Option<crate::Distribution>,
    /// A `sequence` distribution moves on each round (fio's `random_sequence_stride=1`).
    pub sequence_stride: Option<bool>,
    /// Random offsets visit each block once per pass (fio's random map, its default; fio's
    /// `norandommap` is `false`).
    pub random_map: Option<bool>,
    /// fio's strided zones: bytes moved in a zone (`zonesize`).
    pub zone_size: Option<u64>,
    /// A zone's length (`zonerange`; `zone_size` when not given).
    pub zone_range: Option<u64>,
    /// Bytes skipped after a zone (`zoneskip`).
    pub zone_skip: Option<u64>,
    /// fio's zoned block device mode (`zonemode=zbd`), zones of `zone_size`.
    pub zoned: Option<bool>,
    /// Zones open for writing at once (fio's `max_open_zones`).
    pub max_open_zones: Option<u32>,
    /// Share of data from which writes reset zones (fio's `zone_reset_threshold`).
    pub zone_reset_threshold: Option<f64>,
    /// Share of those writes resetting their zone (fio's `zone_reset_frequency`).
    pub zone_reset_frequency: Option<f64>,
    /// Reads past a zone's write pointer (fio's `read_beyond_wp`).
    pub read_beyond_wp: Option<bool>,
    /// fio's SPRandom preconditioning (`sprandom`).
    pub sprandom: Option<bool>,
    /// Its over-provisioning ratio (fio's `spr_op`).
    pub spr_op: Option<f64>,
    /// Its regions (fio's `spr_num_regions`).
    pub spr_num_regions: Option<u32>,
    /// Its drive cache, bytes (fio's `spr_cs`).
    pub spr_cs: Option<u64>,
    /// Block size or range.
    pub bs: Option<BlockSize>,
    /// Alignment of offsets and of sizes drawn from a range.
    pub bs_align: Option<u64>,
    /// Block sizes by share (fio's `bssplit`); it sets the block size's range.
    pub bs_split: Option<crate::BsSplit>,
    /// Bytes a sequential pattern moves on (or back, negative) after each I/O beyond the
    /// I/O itself (fio's `rw=read:-8k`).
    pub seq_add: Option<i64>,
    /// I/Os at each random offset before a new one is drawn (fio's `rw=randread:N`).
    pub rand_run: Option<u32>,
    /// Within such a run, the same offset again rather than the next (fio's
    /// `rw_sequencer=identical`).
    pub rand_run_same: Option<bool>,
    /// Where in a file or device the job's region starts (fio's `offset`).
    pub offset: Option<u64>,
    /// What each further worker of the job adds to `offset` (fio's `offset_increment`).
    pub offset_increment: Option<u64>,
    /// One file in the run directory that the job's workers share, and every job naming it
    /// (fio's `filename=NAME` beside `directory=`).
    pub filename: Option<String>,
    /// Writes go into new files that the file system allocates as they are written: nothing
    /// reserved or written before (IOR's default, fio's `fallocate=none` with `file_append`).
    pub fresh: Option<bool>,
    /// Worker N works in the files worker N + this of the job (of the job before it in its
    /// place) has: IOR's `-C`, reading back what another task wrote.
    pub file_shift: Option<u32>,
    /// `size` as a share of the file or device, percent (fio's `size=95%`).
    pub size_pct: Option<u8>,
    /// `offset` as a share of the file or device, percent (fio's `offset=50%`).
    pub offset_pct: Option<u8>,
    /// Passes over the job's size before it stops (fio's `loops`; with a time, whichever
    /// comes first).
    pub loops: Option<u32>,
    /// An open loop's I/Os arrive as a Poisson process rather than evenly (fio's
    /// `rate_process=poisson`).
    pub rate_poisson: Option<bool>,
    /// A pause after every `thinktime_blocks` I/Os (fio's `thinktime`).
    pub thinktime: Option<Duration>,
    /// The first part of that pause busy, the CPU spinning (fio's `thinktime_spin`).
    pub thinktime_spin: Option<Duration>,
    /// I/Os between pauses (fio's `thinktime_blocks`).
    pub thinktime_blocks: Option<u32>,
    /// Tell the kernel how the files are read (fio's `fadvise_hint`).
    pub fadvise_hint: Option<bool>,
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
    /// How long the job waits after the stage starts before its first I/O (fio's
    /// `startdelay`).
    pub start_delay: Option<Duration>,
    /// When a buffered job's files leave the page cache (fio's `invalidate`).
    pub invalidate: Option<crate::choices::Invalidate>,
    /// Hold a buffered job's files in the page cache (mmap + mlock) from before the load to
    /// the run's end, for runs that mean to measure the cache.
    pub pin_cache: Option<bool>,
    /// Fill write buffers with zeros instead of random bytes (fio's `zero_buffers`).
    pub zero_buffers: Option<bool>,
    /// Fill write buffers with these bytes repeated (fio's `buffer_pattern`).
    pub buffer_pattern: Option<crate::FillPattern>,
    /// Synchronous writes from the open flags (fio's `sync`).
    pub sync: Option<SyncMode>,
    /// `fsync` after every N writes (fio's `fsync`).
    pub fsync: Option<u32>,
    /// `fdatasync` after every N writes (fio's `fdatasync`).
    pub fdatasync: Option<u32>,
    /// `fsync` the files at the end (fio's `end_fsync`).
    pub end_fsync: Option<bool>,
    /// What a compressor achieves on written data (fio's `buffer_compress_percentage`).
    pub compress_ratio: Option<f64>,
    /// Written blocks over distinct blocks (fio's `dedupe_percentage`).
    pub dedup_ratio: Option<f64>,
    /// The unit of deduplication.
    pub dedup_block: Option<u64>,
    /// Duplicates drawn from a working set of this share of the job's bytes, percent (fio's
    /// `dedupe_mode=working_set` with `dedupe_working_set_percentage`).
    pub dedup_working_set: Option<u8>,
    /// One working set for every worker (fio's `dedupe_global`), or each its own.
    pub dedup_global: Option<bool>,
    /// Writes with torn-write protection (`RWF_ATOMIC`, fio's `atomic`).
    pub atomic: Option<bool>,
    /// New I/Os per submitting system call (fio's `iodepth_batch_submit`).
    pub iodepth_batch: Option<u32>,
    /// Fewest completions waited for before reaping (fio's `iodepth_batch_complete`, or
    /// `iodepth_batch_complete_min`).
    pub iodepth_batch_complete: Option<u32>,
    /// Most completions reaped before refilling (fio's `iodepth_batch_complete_max`).
    pub iodepth_batch_complete_max: Option<u32>,
    /// With the queue full, refill only once this few are in flight (fio's `iodepth_low`).
    pub iodepth_low: Option<u32>,
    /// No two I/Os in flight overlap (fio's `serialize_overlap`).
    pub serialize_overlap: Option<bool>,
    /// io_uring: registered buffers (fio's `fixedbufs`).
    pub fixedbufs: Option<bool>,
    /// io_uring: registered files (fio's `registerfiles`).
    pub registerfiles: Option<bool>,
    /// io_uring: a kernel thread polling submissions (fio's `sqthread_poll`).
    pub sqthread_poll: Option<bool>,
    /// io_uring: polled completions (fio's `hipri`).
    pub hipri: Option<bool>,
    /// Open loop: total I/Os per second of the job, over all its workers and hosts.
    pub rate_iops: Option<u32>,
    /// `steady_state`.
    pub steady_state: Option<SteadyState>,
    /// The least bytes a second each worker must move, reads and writes (fio's `ratemin`).
    pub rate_min: Option<[u64; 2]>,
    /// The least I/Os a second each worker must do, reads and writes (fio's `rate_iops_min`).
    pub rate_iops_min: Option<[u64; 2]>,
    /// When the job ends, the jobs running with it stop (fio's `exitall`).
    pub exitall: Option<bool>,
    /// When a worker of the job fails, the jobs running with it stop (fio's
    /// `exitall_on_error`).
    pub exitall_on_error: Option<bool>,
    /// Errors of these kinds are counted but do not fail the run (fio's `ignore_error`).
    pub ignore_errors: Option<Vec<String>>,
    /// Which jobs `exitall` stops (fio's `exit_what`).
    pub exit_what: Option<crate::choices::ExitWhat>,
    /// The job's weight among the jobs of its flow (fio's `flow`).
    pub flow: Option<u32>,
    /// Which flow (fio's `flow_id`).
    pub flow_id: Option<u32>,
    /// The pause of a worker ahead of its share (fio's `flow_sleep`).
    pub flow_sleep: Option<Duration>,
    /// The CPUs the job's workers may run on (fio's `cpus_allowed`, `cpumask`).
    pub cpus_allowed: Option<crate::placement::CpuList>,
    /// Each worker on one CPU of them in turn, not all on all (fio's
    /// `cpus_allowed_policy=split`).
    pub cpus_split: Option<bool>,
    /// The CPUs of these NUMA nodes (fio's `numa_cpu_nodes`).
    pub numa_cpu_nodes: Option<crate::placement::CpuList>,
    /// Where the workers' memory comes from (fio's `numa_mem_policy`).
    pub numa_mem_policy: Option<crate::placement::MemPolicy>,
    /// The workers' CPU priority (fio's `nice`).
    pub nice: Option<i8>,
    /// The workers' I/O priority level (fio's `prio`).
    pub prio: Option<u8>,
    /// The workers' I/O priority class (fio's `prioclass`).
    pub prioclass: Option<u8>,
    /// Shares of reads and of writes submitted with their own priority (fio's
    /// `cmdprio_percentage`), percent.
    pub cmdprio_percentage: Option<[u8; 2]>,
    /// Those I/Os' priority class (fio's `cmdprio_class`).
    pub cmdprio_class: Option<u8>,
    /// Those I/Os' priority level (fio's `cmdprio`).
    pub cmdprio: Option<u8>,
    /// Those I/Os' device hint (fio's `cmdprio_hint`).
    pub cmdprio_hint: Option<u8>,
    /// Shares by block size with priorities of their own (fio's `cmdprio_bssplit`).
    pub cmdprio_bssplit: Option<crate::PrioSplit>,
    /// S3: `http://host:port` of the service.
    pub endpoint: Option<String>,
    /// S3: the bucket.
    pub bucket: Option<String>,
    /// S3: buckets the load spreads over (`BUCKET-0` ... when more than one).
    pub buckets: Option<u32>,
    /// S3: the signing region.
    pub region: Option<String>,
    /// S3: how requests name the bucket.
    pub addressing: Option<Addressing>,
    /// S3: the key prefix under which the run writes.
    pub prefix: Option<String>,
    /// S3: the operations and their weights.
    pub op_mix: Option<OpMix>,
    /// S3: bytes per object, or a range (low, high).
    pub obj_size: Option<(u64, u64)>,
    /// S3: how sizes of a range are drawn.
    pub size_dist: Option<SizeDist>,
    /// S3: GETs read ranges of this size.
    pub get_range: Option<u64>,
    /// S3: objects above this size are uploaded in parts.
    pub multipart_threshold: Option<u64>,
    /// S3: the size of each part of a multipart upload.
    pub part_size: Option<u64>,
    /// S3: GETs check what they read; files: written blocks carry headers, checked after.
    pub verify: Option<bool>,
    /// Files: only check what a `--keep` run with `--verify` left.
    pub verify_only: Option<bool>,
    /// Write until the file system or device is full (fio's `fill_device`, `fill_fs`).
    pub fill_device: Option<bool>,
    /// With `verify`: check the written blocks after the load (fio's `do_verify`).
    pub verify_after: Option<bool>,
    /// With `verify`: bytes per verified block (fio's `verify_interval`).
    pub verify_interval: Option<u64>,
    /// With `verify`: the share of written blocks trimmed before the check (fio's).
    pub trim_percentage: Option<u8>,
    /// Trimmed blocks must read back as zeros (fio's `trim_verify_zero`).
    pub trim_verify_zero: Option<bool>,
    /// S3: objects written for reads before the measured phase.
    pub objects: Option<u32>,
    /// S3: sizes at which the objects for reads are prepared too (`--sweep obj-size`).
    pub prepare_sizes: Option<Vec<u64>>,
    /// S3: operations after which the job stops.
    pub ops: Option<u64>,
    /// Net: the `stormark net server`s, one `HOST:PORT` per host in turn, or the run's agents.
    pub server: Option<crate::net::NetServers>,
    /// Net: send, receive or round trips.
    pub mode: Option<NetMode>,
    /// Net: bytes per write, or per message each way.
    pub msg_size: Option<u32>,
    /// Net: payload bits per second over the job's streams.
    pub bitrate: Option<u64>,
    /// Net: UDP instead of TCP.
    pub udp: Option<bool>,
    /// Net: probe the path MTU toward each server before the load.
    pub path_mtu: Option<bool>,
    /// Meta: directories side by side in each worker's tree.
    pub dirs: Option<u32>,
    /// Meta: bytes each file holds.
    pub file_size: Option<u64>,
    /// Meta: the operations.
    pub meta_ops: Option<Vec<MetaOp>>,
    /// Meta: every worker of every host in one tree.
    pub shared: Option<bool>,
    /// Meta: after a create phase its time cut, every worker's files made up to the most any
    /// worker made, untimed (mdtest's wear-out after `-W`).
    pub wear_out: Option<bool>,
    /// Meta: files only in the directories without children (mdtest's `-L`).
    pub leaf_only: Option<bool>,
    /// Meta: each read checked against the bytes written (mdtest's `-X`).
    pub verify_read: Option<bool>,
    /// Meta: stat in a scattered order (mdtest's `-R`).
    pub random_order: Option<bool>,
    /// Meta: sync(2) at the end of each phase, timed with it (mdtest's `-Y`).
    pub sync_phases: Option<bool>,
    /// Meta: levels of the tree below its root (mdtest's `-z`).
    pub depth: Option<u32>,
    /// Meta: children of each directory of the tree (mdtest's `-b`).
    pub branch: Option<u32>,
}

impl JobOpts {
    /// Sets one option from its text form. `key` is a job key or a fio alias; the error names
    /// the option as the user wrote it (`source`) and the accepted form.
    pub fn set(&mut self, key: &str, value: &str, source: Source<'_>) -> Result<(), SpecError> {
        let canonical = canonical_key(key)
            .ok_or_else(|| SpecError::invalid(&label(key, source), value, unknown_key(key)))?;
        let bad = |expected: &str| SpecError::invalid(&label(key, source), value, expected);
        let count = |max: u32| -> Result<u32, SpecError> {
            match value.trim().parse::<u32>() {
                Ok(n) if (1..=max).contains(&n) => Ok(n),
                _ => Err(bad(&format!("a whole number from 1 to {max}"))),
            }
        };
        if self.set_kind_key(canonical, value, &bad, &count)?
            || self.set_pattern_key(canonical, value, &bad)?
            || self.set_zoned_key(canonical, value, &bad)?
            || self.set_region_key(canonical, value, &bad, &count)?
            || self.set_data_key(canonical, value, &bad)?
            || self.set_run_key(canonical, value, &bad, &count)?
            || self.set_ring_key(canonical, value, &bad)?
        {
            return Ok(());
        }
        match canonical {
            "kind" => {
                self.kind =
                    Some(LoadKind::parse(value).ok_or_else(|| bad("file, s3, net, meta or null"))?)
            }
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
            // io_uring's largest ring.
            "iodepth" => self.iodepth = Some(count(32768)?),
            "iodepth_batch" => self.iodepth_batch = Some(count(4096)?),
            "iodepth_batch_complete" => self.iodepth_batch_complete = Some(count(4096)?),
            "iodepth_batch_complete_max" => self.iodepth_batch_complete_max = Some(count(4096)?),
            "iodepth_low" => {
                let n = value.trim().parse::<u32>().ok().filter(|n| *n <= 32768);
                self.iodepth_low = Some(n.ok_or_else(|| bad("a whole number from 0 to 32768"))?)
            }
            "rate_iops" => self.rate_iops = Some(count(100_000_000)?),
            "steady_state" => {
                self.steady_state = Some(parse_steady_state(value).map_err(|_| bad(STEADY_FORM))?)
            }
            "exit_what" => {
                self.exit_what = Some(
                    crate::choices::ExitWhat::parse(value)
                        .ok_or_else(|| bad(crate::choices::ExitWhat::FORM))?,
                )
            }
            "jobs" => self.jobs = Some(count(4096)?),
            // Up to 65536 files per worker of a file job (checked in `resolve`); a meta job's
            // files per directory may be many more.
            "files" => self.files = Some(count(100_000_000)?),
            // fio's share of the file or device (size=95%), settled where its size is known.
            "size" if value.trim_end().ends_with('%') => {
                self.size_pct =
                    Some(pattern_keys::share(value).ok_or_else(|| bad(pattern_keys::SHARE_FORM))?)
            }
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
            "startdelay" => {
                self.start_delay = Some(
                    parse_duration(value)
                        .filter(|d| d.as_secs() <= 86_400)
                        .ok_or_else(|| bad("a duration of at most 24h, such as 5s"))?,
                )
            }
            "invalidate" => {
                self.invalidate = Some(
                    crate::choices::Invalidate::parse(value)
                        .ok_or_else(|| bad(crate::choices::Invalidate::FORM))?,
                )
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
            hosts,
            rw,
            rwmixread,
            random_pct,
            distribution,
            sequence_stride,
            random_map,
            zone_size,
            zone_range,
            zone_skip,
            zoned,
            max_open_zones,
            zone_reset_threshold,
            zone_reset_frequency,
            read_beyond_wp,
            sprandom,
            spr_op,
            spr_num_regions,
            spr_cs,
            bs,
            bs_align,
            bs_split,
            seq_add,
            rand_run,
            rand_run_same,
            offset,
            offset_increment,
            filename,
            fresh,
            file_shift,
            size_pct,
            offset_pct,
            loops,
            rate_poisson,
            thinktime,
            thinktime_spin,
            thinktime_blocks,
            fadvise_hint,
            iodepth,
            jobs,
            files,
            size,
            time,
            io_total,
            direct,
            engine,
            ramp,
            start_delay,
            invalidate,
            pin_cache,
            zero_buffers,
            buffer_pattern,
            sync,
            fsync,
            fdatasync,
            end_fsync,
            compress_ratio,
            dedup_ratio,
            dedup_block,
            dedup_working_set,
            dedup_global,
            atomic,
            iodepth_batch,
            iodepth_batch_complete,
            iodepth_batch_complete_max,
            iodepth_low,
            serialize_overlap,
            fixedbufs,
            registerfiles,
            sqthread_poll,
            hipri,
            rate_iops,
            steady_state,
            rate_min,
            rate_iops_min,
            exitall,
            exitall_on_error,
            ignore_errors,
            exit_what,
            flow,
            flow_id,
            flow_sleep,
            cpus_allowed,
            cpus_split,
            numa_cpu_nodes,
            numa_mem_policy,
            nice,
            prio,
            prioclass,
            cmdprio_percentage,
            cmdprio_class,
            cmdprio,
            cmdprio_hint,
            cmdprio_bssplit,
            endpoint,
            bucket,
            buckets,
            region,
            addressing,
            prefix,
            op_mix,
            obj_size,
            objects,
            prepare_sizes,
            ops,
            size_dist,
            get_range,
            multipart_threshold,
            part_size,
            verify,
            verify_only,
            fill_device,
            verify_after,
            verify_interval,
            trim_percentage,
            trim_verify_zero,
            server,
            mode,
            msg_size,
            bitrate,
            udp,
            path_mtu,
            dirs,
            file_size,
            meta_ops,
            shared,
            wear_out,
            leaf_only,
            verify_read,
            random_order,
            sync_phases,
            depth,
            branch
        )
    }
}
