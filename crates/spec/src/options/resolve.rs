//! A job's options resolved: defaults filled and the options checked against each other.

use std::time::Duration;

use super::*;

impl JobOpts {
    /// Fills defaults and checks the options against each other. `default_name` names a job
    /// that has no `name`.
    pub fn resolve(&self, default_name: &str) -> Result<Job, SpecError> {
        let rw = self.rw.unwrap_or(Rw::Read);
        let (bs, bs_align, direct) = self.block_sizes()?;
        self.check_cmdprio(bs)?;
        self.check_atomic(bs, bs_align, direct)?;
        self.check_amounts(bs)?;
        let (compress_ratio, dedup_ratio, dedup_block) = data::resolve(self, bs)?;
        let (verify, verify_only) = data::resolve_verify(self, rw, bs, bs_align)?;
        let kind = self.kind.unwrap_or_default();
        let engine = match kind {
            LoadKind::Null => EngineChoice::Null,
            LoadKind::File => self.engine.unwrap_or(EngineChoice::Auto),
            LoadKind::S3 | LoadKind::Net | LoadKind::Meta => EngineChoice::Auto,
        };
        if kind != LoadKind::Meta && self.files.is_some_and(|f| f > 65536) {
            return Err(SpecError::invalid(
                "--files",
                &self.files.unwrap_or(0).to_string(),
                "a whole number from 1 to 65536",
            ));
        }
        for (key, n) in [
            ("--offset", self.offset),
            ("--offset-increment", self.offset_increment),
        ] {
            // As fio: any sector, not only a multiple of the block size.
            if let Some(n) = n.filter(|n| !n.is_multiple_of(512)) {
                return Err(SpecError::invalid(
                    key,
                    &format_size(n),
                    "a multiple of 512 bytes (a sector), such as 1g",
                ));
            }
        }
        if self.filename.is_some() && kind != LoadKind::File {
            return Err(SpecError::invalid(
                "filename",
                self.filename.as_deref().unwrap_or_default(),
                "a file job's key (kind = \"file\"): S3, net, meta and null jobs have no files",
            ));
        }
        if self.filename.is_some() && self.files.is_some_and(|f| f > 1) {
            return Err(SpecError::invalid(
                "--files",
                &self.files.unwrap_or(0).to_string(),
                "1 with a filename: the job's workers share that one file (leave out --files, or the filename for a file per worker)",
            ));
        }
        let fresh = self.fresh(kind, rw)?;
        if let (Some(n), true) = (
            self.file_shift.filter(|n| *n > 0),
            self.filename.is_some() || kind != LoadKind::File,
        ) {
            return Err(SpecError::invalid(
                "file_shift",
                &n.to_string(),
                "a file job's key with a file per worker (no filename): worker N works in worker N+SHIFT's files",
            ));
        }
        let s3 = self.s3(kind)?;
        let net = self.net(kind)?;
        if let (LoadKind::Net, Some(h)) = (kind, &self.hosts) {
            // A net job's streams are planned between every pair of its hosts' agents.
            return Err(SpecError::invalid(
                "hosts",
                &h.name(),
                "no hosts key on a net job yet: every agent runs a net job (leave out hosts)",
            ));
        }
        let meta = self.meta(kind)?;
        Ok(Job {
            kind,
            name: self
                .name
                .clone()
                .unwrap_or_else(|| default_name.to_string()),
            group: self.group.clone(),
            hosts: self.hosts.clone(),
            rw,
            rwmixread: self.rwmixread.unwrap_or(50),
            random_pct: self
                .random_pct
                .unwrap_or(if rw.is_random() { 100 } else { 0 }),
            distribution: self.distribution_with_stride()?,
            bs,
            bs_align,
            bs_split: self.bs_split,
            seq_add: self.seq_add.unwrap_or(0),
            rand_run: self.rand_run.unwrap_or(1),
            rand_run_same: self.rand_run_same.unwrap_or(false),
            random_map: self.random_map.unwrap_or(false),
            zones: self.zones(bs.max)?,
            sprandom: self.sprandom(rw, bs)?,
            zoned: self.zoned(rw, bs.max)?,
            offset: self.offset.unwrap_or(0),
            offset_increment: self.offset_increment.unwrap_or(0),
            filename: self.filename.clone(),
            fresh,
            file_shift: self.file_shift.unwrap_or(0),
            size_pct: self.size_pct.filter(|_| self.size.is_none()),
            offset_pct: self.offset_pct.filter(|_| self.offset.is_none()),
            loops: self.loops,
            rate_poisson: self.rate_poisson.unwrap_or(false),
            target: None,
            thinktime: self.thinktime.unwrap_or_default(),
            thinktime_spin: self
                .thinktime_spin
                .unwrap_or_default()
                .min(self.thinktime.unwrap_or_default()),
            thinktime_blocks: self.thinktime_blocks.unwrap_or(1),
            iodepth: self.iodepth.unwrap_or(1),
            jobs: self.jobs.unwrap_or(1),
            files: self.files.unwrap_or(1),
            size: self.size,
            // Passes over a size known here; over a share, once the target's length is.
            io_total: self.io_total.or_else(|| {
                let passes = u64::from(self.loops?);
                let files = u64::from(self.files.unwrap_or(1));
                Some(self.size?.saturating_mul(files).saturating_mul(passes))
            }),
            direct,
            engine,
            ramp: self.ramp.unwrap_or(Duration::ZERO),
            start_delay: self.start_delay.unwrap_or(Duration::ZERO),
            invalidate: self.invalidate.unwrap_or_default(),
            pin_cache: self.pin_cache.unwrap_or(false),
            zero_buffers: self.zero_buffers.unwrap_or(false),
            buffer_pattern: self.buffer_pattern,
            sync: self.sync.unwrap_or_default(),
            fsync: self.fsync.unwrap_or(0),
            fdatasync: self.fdatasync.unwrap_or(0),
            end_fsync: self.end_fsync.unwrap_or(false),
            fadvise_hint: self.fadvise_hint.unwrap_or(true),
            compress_ratio,
            dedup_ratio,
            dedup_block,
            dedup_working_set: self.dedup_working_set.filter(|_| dedup_ratio > 1.0),
            dedup_global: self.dedup_global.unwrap_or(true),
            atomic: self.atomic.unwrap_or(false),
            verify,
            verify_only,
            fill_device: self.fill_device(rw)?,
            verify_after: self.verify_after.unwrap_or(true),
            verify_interval: self.verify_interval.filter(|_| verify),
            trim_percentage: self.trim_percentage.filter(|_| verify).unwrap_or(0),
            trim_verify_zero: self.trim_verify_zero.unwrap_or(true),
            iodepth_batch: self.iodepth_batch.unwrap_or(1),
            iodepth_batch_complete: self.iodepth_batch_complete.unwrap_or(1),
            // fio: never fewer than the completions waited for.
            iodepth_batch_complete_max: self
                .iodepth_batch_complete_max
                .unwrap_or(1)
                .max(self.iodepth_batch_complete.unwrap_or(1)),
            iodepth_low: self.iodepth_low,
            serialize_overlap: self.serialize_overlap.unwrap_or(false),
            ring: self.ring(),
            rate_iops: self.rate_iops,
            steady_state: self.steady_state,
            flow: self.flow(),
            placement: self.placement(),
            rate_min: self.rate_min,
            rate_iops_min: self.rate_iops_min,
            ignore_errors: self.ignore_errors.clone().unwrap_or_default(),
            exit: self
                .exitall
                .unwrap_or(false)
                .then(|| self.exit_what.unwrap_or_default()),
            exit_on_error: self.exitall_on_error.unwrap_or(false),
            // An S3 job stops by time or by operations, a net job by time: 30 s when not given.
            time: match (&s3, &net) {
                (Some(s), _) if self.time.is_none() && s.ops.is_none() => {
                    Some(Duration::from_secs(30))
                }
                (_, Some(_)) if self.time.is_none() => Some(Duration::from_secs(30)),
                _ => self.time,
            },
            s3,
            net,
            meta,
        })
    }

    /// fio's `flow`: the job's weight in its flow, if it has one.
    fn flow(&self) -> Option<crate::workload::Flow> {
        self.flow.map(|weight| crate::workload::Flow {
            weight,
            id: self.flow_id.unwrap_or(0),
            sleep: self.flow_sleep.unwrap_or_default(),
        })
    }

    /// fio's CPU and NUMA placement of the job's workers.
    fn placement(&self) -> crate::workload::Placement {
        crate::workload::Placement {
            cpus: self.cpus_allowed.clone(),
            split: self.cpus_split.unwrap_or(false),
            nodes: self.numa_cpu_nodes.clone(),
            mem: self.numa_mem_policy.clone(),
            nice: self.nice,
            // fio: a level alone is of the best-effort class; a class alone at level 4 (the
            // kernel's default within a class).
            ioprio: match (self.prioclass, self.prio) {
                (None, None) => None,
                (class, level) => Some((class.unwrap_or(2), level.unwrap_or(4))),
            },
            // fio: the highest class and level unless given.
            cmdprio: (self.cmdprio_percentage.is_some() || self.cmdprio_bssplit.is_some()).then(
                || crate::CmdPrio {
                    share: self.cmdprio_percentage.unwrap_or_default(),
                    class: self.cmdprio_class.unwrap_or(1),
                    level: self.cmdprio.unwrap_or(0),
                    hint: self.cmdprio_hint.unwrap_or(0),
                    split: self.cmdprio_bssplit,
                },
            ),
        }
    }

    /// fio's `atomic`: `RWF_ATOMIC` asks O_DIRECT, one block size (a power of two) at offsets
    /// aligned to it, each write one piece (no dedup's vectored writes).
    fn check_atomic(&self, bs: BlockSize, bs_align: u64, direct: Direct) -> Result<(), SpecError> {
        if self.atomic != Some(true) {
            return Ok(());
        }
        let why = if direct != Direct::Yes {
            Some("with --direct: the kernel takes atomic writes with O_DIRECT only")
        } else if bs.min != bs.max || self.bs_split.is_some() || !bs.min.is_power_of_two() {
            Some("with one block size, a power of two such as 4k or 16k (--bs), as the device's atomic write unit")
        } else if !bs_align.is_multiple_of(bs.min) {
            Some("with offsets aligned to the block size (--bs-align a multiple of --bs)")
        } else if self.dedup_ratio.unwrap_or(1.0) > 1.0 {
            Some("without --dedup-ratio: an atomic write is one piece")
        } else {
            None
        };
        match why {
            Some(why) => Err(SpecError::invalid("--atomic", "true", why)),
            None => Ok(()),
        }
    }

    /// fio's per-I/O priorities ride on io_uring's submissions: only with that engine, the
    /// class, level and hint only with a share (`cmdprio_percentage` or `cmdprio_bssplit`, not
    /// both), and each size of `cmdprio_bssplit` given a share one the job's I/Os have.
    fn check_cmdprio(&self, bs: BlockSize) -> Result<(), SpecError> {
        let (key, shown) = match (self.cmdprio_percentage, &self.cmdprio_bssplit) {
            (Some(_), Some(split)) => {
                return Err(SpecError::invalid(
                    "cmdprio_bssplit",
                    &split.name(),
                    "without cmdprio_percentage: shares by block size or one share, not both",
                ))
            }
            (Some(p), None) => ("cmdprio_percentage", format!("{},{}", p[0], p[1])),
            (None, Some(split)) => ("cmdprio_bssplit", split.name()),
            (None, None) => {
                let given = [
                    ("cmdprio_class", self.cmdprio_class),
                    ("cmdprio", self.cmdprio),
                    ("cmdprio_hint", self.cmdprio_hint),
                ];
                return match given.iter().find(|(_, v)| v.is_some()) {
                    None => Ok(()),
                    Some((key, v)) => Err(SpecError::invalid(
                        key,
                        &v.unwrap_or(0).to_string(),
                        "with cmdprio_percentage or cmdprio_bssplit, the share of I/Os given that priority",
                    )),
                };
            }
        };
        if self.engine != Some(crate::EngineChoice::IoUring) {
            return Err(SpecError::invalid(
                key,
                &shown,
                "with --engine io_uring (each submission carries its priority; fio's libaio maps to it)",
            ));
        }
        if let Some(split) = &self.cmdprio_bssplit {
            let sizes: Vec<u64> = match &self.bs_split {
                Some(s) => s.entries().iter().map(|e| e.0).collect(),
                None if bs.min == bs.max => vec![bs.min],
                None => Vec::new(),
            };
            let unused = split
                .reads()
                .iter()
                .chain(split.writes())
                .find(|e| e.share > 0 && !sizes.contains(&e.bs));
            if let Some(e) = unused {
                return Err(SpecError::invalid(
                    "cmdprio_bssplit",
                    &shown,
                    format!(
                        "sizes the job's I/Os have (--bs or --bssplit); none is {}",
                        format_size(e.bs)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// fio's `fill_device`: sequential writes of a file job until the space is full.
    fn fill_device(&self, rw: Rw) -> Result<bool, SpecError> {
        if self.fill_device != Some(true) {
            return Ok(false);
        }
        if rw != Rw::Write || self.kind.unwrap_or_default() != LoadKind::File {
            return Err(SpecError::invalid(
                "fill_device",
                "true",
                "with --rw write: it writes front to back until the file system or device is full (fio's fill_device)",
            ));
        }
        Ok(true)
    }

    /// Fresh, allocating writes: a file job that only writes (reads of a file it has just
    /// emptied would read nothing; trims release what it never held).
    fn fresh(&self, kind: LoadKind, rw: Rw) -> Result<bool, SpecError> {
        if self.fresh != Some(true) {
            return Ok(false);
        }
        if kind != LoadKind::File || rw.read_pct(self.rwmixread.unwrap_or(50)) > 0 || rw.trims() {
            return Err(SpecError::invalid(
                "fresh",
                "true",
                "with --rw write or randwrite on files: each phase of the job starts from empty files its writes allocate (read them back with a job after it)",
            ));
        }
        if self.fill_device == Some(true) || self.verify_only == Some(true) {
            return Err(SpecError::invalid(
                "fresh",
                "true",
                "without --fill-device and --verify-only: a fresh job empties its files first",
            ));
        }
        Ok(true)
    }

    /// fio's SPRandom preconditioning: random writes of one block size over one file a
    /// worker, offsets its own (not a skew, a run, zones or the random map); its settings
    /// only with it.
    fn sprandom(&self, rw: Rw, bs: BlockSize) -> Result<Option<crate::SpRandom>, SpecError> {
        if self.sprandom != Some(true) {
            let given = [
                ("spr_op", self.spr_op.map(|r| r.to_string())),
                (
                    "spr_num_regions",
                    self.spr_num_regions.map(|n| n.to_string()),
                ),
                ("spr_cs", self.spr_cs.map(format_size)),
            ];
            return match given.into_iter().find(|(_, v)| v.is_some()) {
                None => Ok(None),
                Some((key, v)) => Err(SpecError::invalid(
                    key,
                    &v.unwrap_or_default(),
                    "with sprandom=1 (fio's SPRandom preconditioning), which it tunes",
                )),
            };
        }
        let why = if rw != Rw::RandWrite {
            Some("with --rw randwrite: SPRandom writes every block at random, then some again")
        } else if bs.min != bs.max || self.bs_split.is_some() {
            Some("with one block size (--bs, the drive's indirection unit such as 4k)")
        } else if self.files.unwrap_or(1) > 1 {
            Some("with one file a worker (--files 1), as fio's")
        } else if self
            .distribution
            .as_ref()
            .is_some_and(|d| *d != crate::Distribution::Random)
            || self.rand_run.unwrap_or(1) > 1
            || self.zone_size.is_some()
            || self.random_map == Some(true)
        {
            Some("without random_distribution, zones, randwrite:N or the random map (fio's norandommap): its offsets are its own")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(SpecError::invalid("sprandom", "1", why));
        }
        Ok(Some(crate::SpRandom {
            op: self.spr_op.unwrap_or(0.15),
            regions: self.spr_num_regions.unwrap_or(100),
            cache: self.spr_cs.unwrap_or(0),
        }))
    }

    /// fio's strided zones: `zone_size` needed with the others, the range (`zone_size` unless
    /// given) holding a block.
    fn zones(&self, bs_max: u64) -> Result<Option<crate::Zones>, SpecError> {
        // In fio's zoned mode, zone_size is the drive's zone (see `zoned`).
        if self.zoned == Some(true) {
            return Ok(None);
        }
        let Some(size) = self.zone_size else {
            return match (self.zone_range, self.zone_skip) {
                (None, None) => Ok(None),
                (r, _) => Err(SpecError::invalid(
                    if r.is_some() {
                        "zone_range"
                    } else {
                        "zone_skip"
                    },
                    &format_size(r.or(self.zone_skip).unwrap_or(0)),
                    "with zone_size, the bytes moved in each zone (fio's zonesize)",
                )),
            };
        };
        if self.rand_run.unwrap_or(1) > 1
            || self.seq_add.unwrap_or(0) != 0
            || self.rw.is_some_and(|rw| rw.trims())
        {
            return Err(SpecError::invalid(
                "zone_size",
                &format_size(size),
                "with reads and writes (read, randwrite, rw, ...), not trims or fio's read:-8k and randread:8 forms",
            ));
        }
        let range = self.zone_range.unwrap_or(size);
        if range < bs_max {
            return Err(SpecError::invalid(
                "zone_range",
                &format_size(range),
                format!("at least the largest block ({})", format_size(bs_max)),
            ));
        }
        Ok(Some(crate::Zones {
            size,
            range,
            skip: self.zone_skip.unwrap_or(0),
        }))
    }

    /// The distribution, a sequence's stride set on it.
    fn distribution_with_stride(&self) -> Result<crate::Distribution, SpecError> {
        match (self.distribution.unwrap_or_default(), self.sequence_stride) {
            (crate::Distribution::Sequence { blocks, count, .. }, Some(stride)) => {
                Ok(crate::Distribution::Sequence {
                    blocks,
                    count,
                    stride,
                })
            }
            (_, Some(true)) => Err(SpecError::invalid(
                "random_sequence_stride",
                "1",
                "with random_distribution=sequence:...",
            )),
            (d, _) => Ok(d),
        }
    }

    /// The block sizes (a bssplit's range), their alignment and O_DIRECT, checked together.
    fn block_sizes(&self) -> Result<(BlockSize, u64, Direct), SpecError> {
        // A bssplit's sizes make the block size's range.
        let bs = match self.bs_split {
            Some(split) => BlockSize {
                min: split.entries().iter().map(|e| e.0).min().unwrap_or(4096),
                max: split.entries().iter().map(|e| e.0).max().unwrap_or(4096),
            },
            None => self.bs.unwrap_or(BlockSize {
                min: 4096,
                max: 4096,
            }),
        };
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
        // fio's blockalign aligns random offsets only: past the smallest block it is fine with
        // one block size or a bssplit (JESD219: 512-byte to 64 KiB blocks at 4 KiB offsets),
        // not with a range, whose sizes step by it.
        let ranged = bs.min < bs.max && self.bs_split.is_none();
        if bs_align == 0 || (ranged && bs_align > bs.min) {
            return Err(SpecError::invalid(
                "--bs-align",
                &format_size(bs_align),
                format!(
                    "a size above zero and at most the smallest block size ({}) with a range of block sizes",
                    format_size(bs.min)
                ),
            ));
        }
        if let Some(split) = self.bs_split {
            // Every size a whole number of the unit that offsets and the smallest block share
            // (what --verify stamps).
            let unit = crate::units::gcd(bs_align, bs.min);
            if split.entries().iter().any(|(s, _)| !s.is_multiple_of(unit)) {
                return Err(SpecError::invalid(
                    "--bssplit",
                    &split.name(),
                    format!(
                        "sizes that are multiples of {} (the smallest size and --bs-align share it)",
                        format_size(unit)
                    ),
                ));
            }
        }
        let direct = self.direct.unwrap_or(Direct::No);
        if direct != Direct::No
            && (!bs.min.is_multiple_of(512)
                || !bs_align.is_multiple_of(512)
                || !(bs.max - bs.min).is_multiple_of(512))
        {
            return Err(SpecError::invalid(
                "--bs",
                &shown_bs,
                "multiples of 512 bytes (and --bs-align a multiple of 512) with --direct; or use --buffered",
            ));
        }
        Ok((bs, bs_align, direct))
    }

    /// Sizes, times and sync counts that cannot be as given.
    fn check_amounts(&self, bs: BlockSize) -> Result<(), SpecError> {
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
        if self.fsync.unwrap_or(0) > 0 && self.fdatasync.unwrap_or(0) > 0 {
            return Err(SpecError::invalid(
                "--fdatasync",
                &self.fdatasync.unwrap_or(0).to_string(),
                "one of --fsync N and --fdatasync N, not both",
            ));
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
        Ok(())
    }
}
