//! The workload options as the command line offers them: one row per flag, its job key, the
//! value it takes and its help. The binary builds its flags from [`FILE_FLAGS`], so a new
//! option of file load is a row here, its key in [`crate::JobOpts::set`], and the engine
//! backend that uses it.

/// What a flag takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagValue {
    /// A value, shown in help under this name (`--bs SIZE`).
    Text(&'static str),
    /// A switch: given, it sets the key to this text (`--direct` sets `direct = true`).
    Switch(&'static str),
}

/// One workload flag.
#[derive(Debug, Clone, Copy)]
pub struct Flag {
    /// The job key it sets (as in job files; `_` becomes `-` in the flag's name).
    pub key: &'static str,
    /// The flag's long name when it differs from the key's (`buffered` for `direct = false`).
    pub long: Option<&'static str>,
    /// What it takes.
    pub value: FlagValue,
    /// Its help: one sentence, defaults in brackets.
    pub help: &'static str,
}

impl Flag {
    /// The long name, without `--`.
    pub fn long(&self) -> String {
        self.long
            .map_or_else(|| self.key.replace('_', "-"), str::to_string)
    }
}

const fn text(key: &'static str, value: &'static str, help: &'static str) -> Flag {
    Flag {
        key,
        long: None,
        value: FlagValue::Text(value),
        help,
    }
}

/// The workload flags of `stormark run`, in the order help shows them. (fio's spellings,
/// such as `--numjobs` or `--ramp_time`, reach them through [`crate::canonical_key`].)
pub const FILE_FLAGS: &[Flag] = &[
    text("rw", "PATTERN", "I/O pattern: read, write, randread, randwrite, rw, randrw, or trim, randtrim, trimwrite (space released: a hole punched in a file, a discard on a device); read:-8k moves on (or back) by that much more after each I/O, randread:8 does 8 I/Os from each random offset (fio's forms)."),
    text("rw_sequencer", "HOW", "With randread:N, the I/Os after each random offset go on sequentially, or repeat it: sequential or identical (fio's rw_sequencer) [default: sequential]."),
    text("rwmixread", "PCT", "Share of reads in mixed patterns, percent [default: 50]."),
    text("random_pct", "PCT", "Share of random offsets in one stream, percent (IOmeter's \"80% random\")."),
    text("random_distribution", "DIST", "How random offsets fall, as fio's: random, zipf:1.2, pareto:0.2 or normal:10 [default: random]."),
    text("random_map", "BOOL", "Random offsets visit each block once a pass, none twice, as fio's default random map (false: drawn with repeats, as fio's norandommap) [default: false]."),
    Flag {
        key: "sprandom",
        long: None,
        value: FlagValue::Switch("true"),
        help: "fio's SPRandom preconditioning of an SSD for random writes (--rw randwrite, one --bs, the drive's indirection unit): one pass over the logical size and its over-provisioning that leaves each region of the drive with the stale data a long random-write load would, then the job ends: --rw randwrite --bs 4k --direct --sprandom.",
    },
    text("spr_op", "RATIO", "The drive's over-provisioning for --sprandom, between 0 and 1 (fio's spr_op) [default: 0.15]."),
    text("spr_num_regions", "N", "Regions --sprandom cuts the capacity into (fio's spr_num_regions) [default: 100]."),
    text("spr_cs", "SIZE", "The drive's cache for --sprandom: second writes wait one region more, so that a block's two writes are never in the cache together (fio's spr_cs) [default: 0, none]."),
    text("random_sequence_stride", "0|1", "With --random-distribution sequence:2,0,1: 1 moves each round on by the sequence's length (fio's random_sequence_stride) [default: 0]."),
    text("zone_size", "SIZE", "Strided zones, as fio's zonemode=strided: move this many bytes in a zone, then go on to the next (with --zone-range, --zone-skip), such as --zone-size 256m --zone-skip 2g to profile a disk's zones."),
    text("zone_range", "SIZE", "With --zone-size, each zone's length (fio's zonerange) [default: --zone-size]."),
    text("zone_skip", "SIZE", "With --zone-size, the bytes skipped between a zone's end and the next zone (fio's zoneskip) [default: 0]."),
    Flag {
        key: "zoned",
        long: None,
        value: FlagValue::Switch("true"),
        help: "Zones of --zone-size written only at their write pointers, as fio's zonemode=zbd on a file or a conventional drive: writes go to each zone's pointer (random writes to a random zone's), a full zone is reset before it is written again, reads stay below the pointers, a trim resets a zone: --rw randwrite --bs 512k --zoned --zone-size 256m --max-open-zones 32.",
    },
    text("max_open_zones", "N", "With --zoned, the most zones written at once over every job on the file (fio's max_open_zones) [default: 0, no limit]."),
    text("zone_reset_threshold", "RATIO", "With --zoned and --zone-reset-frequency, the share of the region holding data from which writes reset zones (fio's zone_reset_threshold) [default: 1]."),
    text("zone_reset_frequency", "RATIO", "With --zoned, the share of writes above the threshold that reset their zone first, as a drive's garbage collection would (fio's zone_reset_frequency) [default: 0, none]."),
    text("read_beyond_wp", "BOOL", "With --zoned, reads may pass a zone's write pointer (fio's read_beyond_wp) [default: false: only written data is read]."),
    text("bs", "SIZE", "Block size, or a range such as 4k-64k [default: 4k]."),
    text("startdelay", "DURATION", "Wait this long after the group starts before the job's first I/O, then run its whole --time (fio's startdelay)."),
    text("bssplit", "SPLIT", "Block sizes by share of the I/Os, as fio's bssplit: 4k/50:64k/50 (a last share left empty takes the rest)."),
    text("bs_align", "SIZE", "Alignment of offsets and of sizes drawn from a --bs range [default: smallest --bs]."),
    text("offset", "SIZE", "Start the region used this far into the file or device (fio's offset; with a directory each job has its own files, so bytes change nothing there unless they share a --filename, and a share starts each file's region at that share of it: --offset 20%)."),
    text("ignore_errors", "KINDS", "Errors of these kinds are counted and shown but do not fail the run, and a worker goes on past them, as fio's ignore_error: --ignore-errors ENOSPC,EIO (errno names or numbers, short, or an iSCSI LUN's sense key such as scsi-medium-error)."),
    text("rate_min", "RATE", "Each worker fails once a measured second of its reads (or writes) moves less than this, as fio's ratemin: 1m, or R,W for each direction."),
    text("rate_iops_min", "IOPS", "The same in I/Os a second, as fio's rate_iops_min: 100, or R,W."),
    text("exitall", "BOOL", "When a worker of the job ends, the jobs running with it stop (fio's exitall)."),
    text("exitall_on_error", "BOOL", "When a worker of the job fails, the jobs running with it stop (fio's exitall_on_error): --exitall-on-error true."),
    text("exit_what", "WHICH", "Which jobs --exitall stops: group or stonewall (those running now), or all (and nothing after runs) [default: group]."),
    text("nice", "N", "The workers' CPU priority, -20 to 19, as nice and fio's nice."),
    text("prio", "LEVEL", "The workers' I/O priority level, 0 (highest) to 7, as ionice -n and fio's prio (best effort unless --prioclass)."),
    text("cmdprio_percentage", "PCT", "With --engine io_uring, this share of the I/Os (or R,W: of reads and of writes) is submitted with a priority of its own, counted apart as read-prio and write-prio, as fio's cmdprio_percentage: --cmdprio-percentage 20 --cmdprio-class 1."),
    text("cmdprio_class", "CLASS", "The class of those I/Os: 1 real time (the default; root), 2 best effort, 3 idle (fio's cmdprio_class)."),
    text("cmdprio", "LEVEL", "The level of those I/Os, 0 (highest, the default) to 7 (fio's cmdprio)."),
    text("cmdprio_hint", "HINT", "The device hint of those I/Os, 0 (none, the default) to 7: a command duration limit's descriptor on a drive that has them (fio's cmdprio_hint)."),
    text("cmdprio_bssplit", "SPLIT", "With --engine io_uring, shares of each block size's I/Os submitted with a priority (of their own, or --cmdprio-class and --cmdprio), as fio's cmdprio_bssplit: --bssplit 64k/40:1m/60 --cmdprio-bssplit 64k/25/1/0:64k/75/3/2."),
    text("prioclass", "CLASS", "The workers' I/O priority class: 1 real time, 2 best effort, 3 idle, as ionice -c and fio's prioclass."),
    text("flow", "WEIGHT", "The job's share of the I/Os among the jobs of its --flow-id on a host, by weight: jobs of flow 1 and 8 do 1 I/O for every 8 (fio's flow)."),
    text("flow_id", "N", "Which flow the job's --flow weight counts in [default: 0]."),
    text("flow_sleep", "USEC", "How long a worker ahead of its flow's share pauses (fio's flow_sleep; 0 yields the CPU) [default: 0]."),
    text("cpus_allowed", "CPUS", "Run the job's workers on these CPUs only, as fio's cpus_allowed and taskset: 0-3,8."),
    text("cpus_allowed_policy", "POLICY", "shared: every worker on any of --cpus-allowed; split: each worker on one of them in turn [default: shared]."),
    text("numa_cpu_nodes", "NODES", "Run the job's workers on the CPUs of these NUMA nodes (fio's numa_cpu_nodes): 0 or 0-1."),
    text("numa_mem_policy", "POLICY", "Where the workers' buffers come from, as fio's numa_mem_policy: local, bind:0, interleave:0-1, prefer:1 or default."),
    text("filename", "NAME", "One file in the run directory that the job's workers share, and every job naming it (fio's filename= beside directory=), in place of a file per worker."),
    Flag {
        key: "fresh",
        long: None,
        value: FlagValue::Switch("true"),
        help: "Writes go into new files the file system allocates as they are written, as IOR's and fio's fallocate=none: each phase of the job starts from empty files, nothing reserved or written before, so O_DIRECT writes pay block allocation: --rw write --bs 1m --size 1g --direct --fresh.",
    },
    text("file_shift", "N", "Worker N works in worker N+SHIFT's files, as IOR's -C reads back what another task wrote: --rw read --jobs 4 --file-shift 1 after a write job in the same run [default: 0]."),
    text("offset_increment", "SIZE", "Each further job of --jobs starts this much further on, each its own region of one file or device (fio's offset_increment)."),
    text("thinktime", "USEC", "Pause after every --thinktime-blocks I/Os of a job: microseconds, or with a unit (2ms), as fio's thinktime; I/Os in flight complete first."),
    text("thinktime_spin", "USEC", "The first part of each pause spent spinning on the CPU, the rest asleep (fio's thinktime_spin)."),
    text("thinktime_blocks", "N", "I/Os between pauses (fio's thinktime_blocks) [default: 1]."),
    text("fadvise_hint", "BOOL", "Advise the kernel of how buffered files are read, random (no readahead) or sequential, as fio does by default [default: true]."),
    text("buffer_pattern", "BYTES", "Writes repeat these bytes, as fio's buffer_pattern: 0xdeadbeef or \"text\" (with --compress-ratio, the compressible part of each sector)."),
    text("rate_process", "HOW", "With --rate-iops, I/Os due evenly or as a Poisson process of the same mean rate: linear or poisson (fio's rate_process) [default: linear]."),
    text("iodepth", "N", "I/Os in flight per job (io_uring) [default: 1]."),
    text("iodepth_batch", "N", "New I/Os per submitting system call, as fio's iodepth_batch_submit [default: 1]."),
    text("iodepth_batch_complete", "N", "Fewest completions waited for before reaping (io_uring), as fio's iodepth_batch_complete (iodepth_batch_complete_min); with --iodepth-batch, t/io_uring's -s and -c: --iodepth-batch 8 --iodepth-batch-complete 8 [default: 1]."),
    text("iodepth_batch_complete_max", "N", "Most completions reaped before refilling the queue (io_uring), as fio's iodepth_batch_complete_max: --iodepth-batch-complete 4 --iodepth-batch-complete-max 16 [default: --iodepth-batch-complete]."),
    text("trim_percentage", "PCT", "With --verify: this share of the written blocks is trimmed once the load is over, and the check finds them zeros, as fio's trim_percentage: --verify --trim-percentage 10."),
    text("trim_verify_zero", "BOOL", "With --trim-percentage: whether trimmed blocks must read back as zeros (fio's trim_verify_zero): --trim-verify-zero false [default: true]."),
    text("serialize_overlap", "BOOL", "With --iodepth above 1, no I/O is issued while one of the worker's in flight overlaps it (it waits for that one), as fio's serialize_overlap: --serialize-overlap true."),
    text("iodepth_low", "N", "With the queue full, refill only once this few I/Os are in flight, as fio's iodepth_low: --iodepth 16 --iodepth-low 4 [default: refill as each completes]."),
    Flag {
        key: "fixedbufs",
        long: None,
        value: FlagValue::Switch("true"),
        help: "io_uring: register the workers' buffers once, reads and writes as READ_FIXED and WRITE_FIXED (fio's fixedbufs), and refuse the job before load where the kernel will not: stormark run /data --engine io_uring --iodepth 32 --fixedbufs --registerfiles.",
    },
    Flag {
        key: "fixedbufs",
        long: Some("no-fixedbufs"),
        value: FlagValue::Switch("false"),
        help: "io_uring: never register the workers' buffers (fio's fixedbufs=0); without either flag they are registered where the kernel lets it: stormark run /data --engine io_uring --iodepth 32 --no-fixedbufs.",
    },
    Flag {
        key: "registerfiles",
        long: None,
        value: FlagValue::Switch("true"),
        help: "io_uring: register the workers' files once, no file lookup per I/O (fio's registerfiles).",
    },
    Flag {
        key: "registerfiles",
        long: Some("no-registerfiles"),
        value: FlagValue::Switch("false"),
        help: "io_uring: never register the workers' files (fio's registerfiles=0); without either flag they are registered where the kernel lets it.",
    },
    Flag {
        key: "sqthread_poll",
        long: None,
        value: FlagValue::Switch("true"),
        help: "io_uring: a kernel thread polls each ring's submissions, no system call to submit, one more CPU busy per worker (fio's sqthread_poll).",
    },
    Flag {
        key: "hipri",
        long: None,
        value: FlagValue::Switch("true"),
        help: "io_uring: poll for completions on the device's poll queues instead of waiting for interrupts (fio's hipri), with --direct on a device that has poll queues (refused before the load where it has none).",
    },
    text("jobs", "N", "Parallel jobs, each with its own files (fio's numjobs) [default: 1]."),
    text("files", "N", "Files per job [default: 1]."),
    text("size", "SIZE", "Bytes per file, or the part of a file or device used [default: 1g, or the whole file]."),
    text("time", "DURATION", "Measured duration [default: one pass over the working set]."),
    text("io_total", "SIZE", "Stop each job after this many bytes (fio's io_size)."),
    text("loops", "N", "Passes over the size before each job stops (fio's loops), with --size as bytes or a share of the target: an SSD written twice over, stormark run /dev/sdb --allow-device-write --rw write --bs 1m --direct --size 100% --loops 2."),
    Flag {
        key: "direct",
        long: None,
        value: FlagValue::Switch("true"),
        help: "Bypass the page cache (O_DIRECT).",
    },
    Flag {
        key: "direct",
        long: Some("buffered"),
        value: FlagValue::Switch("false"),
        help: "Go through the page cache (the default unless a profile says otherwise).",
    },
    Flag {
        key: "pin_cache",
        long: None,
        value: FlagValue::Switch("true"),
        help: "Hold the run's files in the page cache (mmap + mlock) from before the load to its end, so that nothing evicts them (a DAMON pageout scheme, memory pressure): for buffered runs that mean to measure the cache; refused with --direct or files that do not fit in memory: stormark run /mnt/data/f --rw randread --buffered --pin-cache.",
    },
    Flag {
        key: "zero_buffers",
        long: None,
        value: FlagValue::Switch("true"),
        help: "Write zeros instead of random bytes (fio's zero_buffers): what compressing or deduplicating storage stores in almost no space.",
    },
    text("compress_ratio", "R", "Fill writes so that compressors (zstd, lz4, gzip) reach about R, from 1 (incompressible, the default) to 32; fio's buffer_compress_percentage=50 is 2."),
    text("dedup_ratio", "D", "Write that share of blocks as duplicates: written blocks over distinct blocks is about D (1, every block unique, is the default); fio's dedupe_percentage=50 is 2."),
    text("dedup_block", "SIZE", "The unit of --dedup-ratio, a multiple of 512 [default: the block size]."),
    Flag {
        key: "atomic",
        long: None,
        value: FlagValue::Switch("true"),
        help: "Each write all or nothing on a crash (RWF_ATOMIC, fio's atomic), with --direct and one block size the file system or device writes atomically (refused before the load where it does not): stormark run /data --rw randwrite --bs 16k --direct --atomic --verify.",
    },
    text("dedup_working_set", "PCT", "With --dedup-ratio, the duplicates are blocks drawn at random from a working set of this share of the job's bytes, as fio's dedupe_mode=working_set (--dedup-working-set 5); without it, copies of eight blocks."),
    text("dedup_global", "BOOL", "With --dedup-working-set, one set for every worker (fio's dedupe_global=1), or each worker its own [default: true]."),
    Flag {
        key: "verify",
        long: None,
        value: FlagValue::Switch("true"),
        help: "Every written block carries a header (run, offset, write, CRC-32C); after the load each is read back and a bad one named by offset and kind: corrupt, misplaced, stale (a lost write), hole. Exit 1 on any.",
    },
    Flag {
        key: "verify_only",
        long: None,
        value: FlagValue::Switch("true"),
        help: "Write nothing: check the blocks a --verify --keep run left in the run directory TARGET (with --reuse), after a crash, failover or resilver. Exit 1 on any bad block.",
    },
    text("verify_interval", "SIZE", "With --verify, a header every SIZE bytes (a multiple of 512 that divides every I/O's size and offset), as fio's verify_interval [default: the block size]."),
    text("verify_after", "BOOL", "With --verify, check the written blocks after the load; false writes the headers and keeps the expected state for --verify-only or a later job (fio's do_verify=0) [default: true]."),
    Flag {
        key: "fill_device",
        long: None,
        value: FlagValue::Switch("true"),
        help: "Write front to back until the file system or device is full, as fio's fill_device: without --size the free space (less a MiB, and --verify's state), ENOSPC the job's end, counted but not a failure: stormark run /scratch --rw write --bs 1m --fill-device --verify.",
    },
    text("sync", "MODE", "Synchronous writes from the open flags: none, dsync (O_DSYNC) or sync (O_SYNC), as fio's sync."),
    text("fsync", "N", "fsync the file after every N writes of a worker (fio's fsync); each fsync's latency is the operation sync."),
    text("fdatasync", "N", "fdatasync the file after every N writes of a worker (fio's fdatasync); timed as sync."),
    Flag {
        key: "end_fsync",
        long: None,
        value: FlagValue::Switch("true"),
        help: "fsync every file written when the job ends, timed as sync (fio's end_fsync).",
    },
    text("engine", "ENGINE", "I/O engine: auto (io_uring where allowed, else psync), io_uring, psync, null."),
    text("ramp", "DURATION", "Warm-up before measuring, excluded from results."),
    text("rate_iops", "N", "Open loop: I/Os per second in total (over every job's workers and every agent), on a fixed schedule; latency counts from each I/O's scheduled time."),
    text("steady_state", "FIGURE:BAND:WINDOW", "End the ramp once FIGURE (iops, bw or lat) has stayed within BAND of its mean for WINDOW, e.g. iops:2%:30s (fio's steady state); --ramp is then the most to wait [default: 10m]."),
    text("invalidate", "WHEN", "When a buffered job's files leave the page cache: 1 (before it starts, the default), 0 (never) or pass (before each pass over the files, as fio does and as fio job files run)."),
    text("name", "NAME", "Job name (in results and reports)."),
];

/// The workload flags of `stormark s3` (the job's kind is s3).
pub const S3_FLAGS: &[Flag] = &[
    text("endpoint", "URL", "The S3 service, http://host:port."),
    text("bucket", "NAME", "The bucket (see --create-bucket)."),
    text("buckets", "N", "Spread the load over N buckets, NAME-0 to NAME-(N-1): each connection writes to one, reads come from all [default: 1, NAME itself]."),
    text("region", "REGION", "The signing region [default: us-east-1]."),
    text("addressing", "STYLE", "How a request names the bucket: path (http://host/bucket/key), virtual (http://bucket.host/key) or auto (virtual for *.amazonaws.com, path otherwise) [default: auto]."),
    Flag {
        key: "addressing",
        long: Some("path-style"),
        value: FlagValue::Switch("path"),
        help: "Name the bucket in the path (http://host/bucket/key), as --addressing path.",
    },
    text("op_mix", "MIX", "One operation (get, put, head, delete, list) or weights such as put=30,get=60,delete=5,list=5 [default: get]."),
    text("obj_size", "SIZE", "Bytes per object, or a range such as 1k-100m [default: 1m]."),
    text("size_dist", "DIST", "How sizes of an --obj-size range are drawn: uniform or log-uniform (each decade as likely) [default: uniform]."),
    text("multipart_threshold", "SIZE", "Upload objects larger than this in parts (multipart upload) [default: never]."),
    text("part_size", "SIZE", "The size of each part of a multipart upload, 5m to 5g [default: 8m]."),
    Flag {
        key: "verify",
        long: None,
        value: FlagValue::Switch("true"),
        help: "GETs check every byte read against what was written (objects carry their index); a mismatch counts as a `corrupt` failure.",
    },
    text("compress_ratio", "R", "Fill PUT bodies so that compressors (zstd, lz4, gzip) reach about R, from 1 (incompressible, the default) to 32."),
    text("dedup_ratio", "D", "Write that share of 4 KiB blocks of PUT bodies as duplicates: written blocks over distinct blocks is about D (1, every block unique, is the default)."),
    text("dedup_block", "SIZE", "The unit of --dedup-ratio, a multiple of 512 [default: 4k]."),
    text("get_range", "SIZE", "GETs read a range of this many bytes at a random place in the object instead of the whole object."),
    text("objects", "N", "Objects written before the measured phase for GET and HEAD to read [default: 1000]."),
    Flag {
        key: "jobs",
        long: Some("concurrency"),
        value: FlagValue::Text("N"),
        help: "Requests in flight: workers, each with its own keep-alive connection [default: 1].",
    },
    text("time", "DURATION", "Measured duration [default: 30s unless --ops]."),
    text("ops", "N", "Stop after this many operations (over all workers)."),
    text("ramp", "DURATION", "Warm-up before measuring, excluded from results."),
    Flag {
        key: "rate_iops",
        long: Some("rate-ops"),
        value: FlagValue::Text("N"),
        help: "Open loop: operations per second in total, on a fixed schedule; latency counts from each operation's scheduled time.",
    },
    text("prefix", "PREFIX", "Keys of the run go under PREFIX/<run id>/ [default: stormark]."),
    text("name", "NAME", "Job name (in results and reports)."),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{canonical_key, JobOpts, Source};

    #[test]
    fn every_flag_is_a_job_key_and_takes_its_example() {
        for table in [FILE_FLAGS, S3_FLAGS] {
            let mut longs = std::collections::BTreeSet::new();
            for f in table {
                assert_eq!(canonical_key(f.key), Some(f.key), "{}", f.key);
                assert!(longs.insert(f.long()), "--{} twice", f.long());
                assert!(f.help.ends_with('.') || f.help.ends_with(']'));
                if let FlagValue::Switch(v) = f.value {
                    JobOpts::default().set(f.key, v, Source::Flag).unwrap();
                }
            }
        }
    }
}
