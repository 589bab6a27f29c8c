//! One fio option applied to a job: fio's names and values mapped to stormark's options, or
//! to what the job file reader keeps for the job (its target, time_based, loops, rates).

use super::FioState;
use crate::workload::{JobOpts, Source};
use crate::SpecError;

/// Options that change only what fio reports: stormark records every latency exactly, per
/// job and in total, whatever they say.
const REPORTING: &[&str] = &[
    "group_reporting",
    "lat_percentiles",
    "clat_percentiles",
    "slat_percentiles",
    "percentile_list",
    "disable_lat",
    "disable_clat",
    "disable_slat",
    "gtod_reduce",
    "write_bw_log",
    "write_lat_log",
    "write_iops_log",
    "write_hist_log",
    "log_offset",
    "log_prio",
    "log_avg_msec",
    "log_hist_msec",
    "per_job_logs",
    "description",
    "thread",
    "unified_rw_reporting",
    "randrepeat",
    "significant_figures",
    // Where fio writes a bad block's data on a verify failure: stormark names each bad
    // block's file, offset and kind in the run's failure instead.
    "verify_dump",
    // fio stops a job at its first verify failure with it; stormark checks every block after
    // the load and reports them all (the run fails either way).
    "verify_fatal",
    // fio lays files out one at a time with it; stormark's preparation is its own.
    "create_serialize",
    // How fio draws random numbers (tausworthe, lfsr) and from which seed: stormark's
    // generator is its own, its seeds its own; with the random map (or lfsr's full period)
    // each block comes once a pass either way.
    "random_generator",
    "randseed",
    // How fio compresses in chunks: stormark's data reaches the compression ratio asked
    // (buffer_compress_percentage) over each block.
    "buffer_compress_chunk",
    // fio reads back what it wrote after every N writes, during the load; stormark reads back
    // every block written once the load is over (the same blocks, checked later).
    "verify_backlog",
    // fio verifies in threads of its own with it; stormark checks every block after the load.
    "verify_async",
    // fio's check of each block's write sequence (off when jobs overwrite each other's
    // blocks): stormark's workers write blocks of their own, and it checks the sequence.
    "verify_write_sequence",
    // Where fio prints an error's details: stormark counts each error by kind, with the first
    // offset of each.
    "error_dump",
    // fio makes the file when it opens it, not before the job: stormark lays its files out
    // before the load (the first writes' cost may differ).
    "create_on_open",
    // What fio logs and measures for its own reports: stormark records every latency and
    // rate exactly whatever they say.
    "log_max_value",
    "log_compression",
    "log_store_compressed",
    "log_unix_epoch",
    "log_alternate_epoch",
    "disable_bw_measurement",
    "disable_bw",
    "disk_util",
    // fio saves its verify state at exit with it; stormark always saves its own beside the
    // run's files for a later --verify-only.
    "verify_state_save",
    // Which clock fio reads its times from (gettimeofday, clock_gettime, cpu): stormark
    // times each I/O with its own clock (the CPU's counter where the kernel keeps time with
    // it, CLOCK_MONOTONIC elsewhere; engine/src/clock.rs).
    "clocksource",
    // When fio trims its trim_percentage of the verified blocks (every N written, so many at
    // a time): stormark trims them once the load is over, before the check.
    "trim_backlog",
    "trim_backlog_batch",
];

/// The keys fio takes in zone units (`size=8z`).
const ZONE_UNIT_KEYS: &[&str] = &[
    "offset",
    "offset_increment",
    "size",
    "filesize",
    "io_size",
    "io_limit",
    "zoneskip",
];

/// fio's zone units made bytes once the section's zonesize is known: each such key applied
/// again with its bytes.
pub(super) fn apply_zone_units(job: &mut JobOpts, fio: &mut FioState) -> Result<(), SpecError> {
    for (key, n, context) in std::mem::take(&mut fio.zone_units) {
        let Some(zone) = job.zone_size else {
            return Err(SpecError::invalid(
                &format!("{key} in {context}"),
                &format!("{n}z"),
                "zones of zonesize: give zonesize in the job",
            ));
        };
        let bytes = n.checked_mul(zone).ok_or_else(|| {
            SpecError::invalid(
                &format!("{key} in {context}"),
                &format!("{n}z"),
                "fewer zones",
            )
        })?;
        apply(job, fio, &key, Some(&bytes.to_string()), false, &context)?;
    }
    Ok(())
}

/// Applies one fio option to `job`; `Ok(false)` when stormark does not run it.
pub(super) fn apply(
    job: &mut JobOpts,
    fio: &mut FioState,
    key: &str,
    value: Option<&str>,
    kb_1000: bool,
    context: &str,
) -> Result<bool, SpecError> {
    let v = value.unwrap_or("1");
    // fio's escaped percent (`size=100%%`, as job files that pass through printf-style
    // templates write it) is a percent.
    let unescaped;
    let v = if ZONE_UNIT_KEYS.contains(&key) && v.trim_end().ends_with("%%") {
        unescaped = v.trim_end().trim_end_matches('%').to_string() + "%";
        unescaped.as_str()
    } else {
        v
    };
    let set = |job: &mut JobOpts, k: &str, v: &str| job.set(k, v, Source::Key(context));
    let yes = crate::units::parse_bool(v) == Some(true);
    if let Some(done) = fio_forms(job, fio, key, v, context)? {
        return Ok(done);
    }
    // fio's zone units (`offset=524z`): a number of zones, counted once zonesize is known.
    if ZONE_UNIT_KEYS.contains(&key) {
        fio.zone_units.retain(|(k, _, _)| k != key);
        let t = v.trim();
        if let Some(n) = t
            .strip_suffix(['z', 'Z'])
            .and_then(|n| n.parse::<u64>().ok())
        {
            fio.zone_units
                .push((key.to_string(), n, context.to_string()));
            return Ok(true);
        }
    }
    match key {
        "name" => job.name = Some(v.to_string()),
        // stormark names the files it makes itself.
        "filename_format" => {}
        "time_based" => fio.time_based = yes,
        "stonewall" | "wait_for_previous" => fio.stonewall = true,
        // After the job named: a new group, unless the jobs before this one already run
        // after it (fio starts the job once that one is done).
        "wait_for" => {
            fio.stonewall = true;
            fio.wait_for = Some(v.trim().to_string());
        }
        // A new reporting group, not a stonewall: the job still runs with those before it
        // (stormark reports each job on its own anyway).
        "new_group" => {}
        // fio's random range form (`startdelay=1-5`): not run.
        "startdelay" if v.contains('-') => return Ok(false),
        // fio's times ignore case (ramp_time=2M is two minutes).
        "runtime" | "ramp_time" | "startdelay" | "thinktime" | "thinktime_spin" => {
            set(job, key, &v.to_ascii_lowercase())?
        }
        "buffered" => set(job, "direct", if yes { "false" } else { "true" })?,
        "rwmixwrite" => {
            let w: u8 = crate::units::parse_percent(v).ok_or_else(|| {
                SpecError::invalid(&format!("rwmixwrite in {context}"), v, "a percentage")
            })?;
            set(job, "rwmixread", &(100 - w).to_string())?;
        }
        // fio's randtrimwrite (newer than trimwrite): not run.
        "rw" | "readwrite" if v.contains("randtrimwrite") => return Ok(false),
        "rw" | "readwrite" => set(job, "rw", v)?,
        // fio's forced hints (sequential, random): not run; 0 and 1 are stormark's too.
        "fadvise_hint" if crate::units::parse_bool(v).is_none() => return Ok(false),
        // fio's offset as a share of the file or device (an increment's is not run).
        "offset_increment" if v.trim_end().ends_with('%') => return Ok(false),
        "offset" if v.trim_end().ends_with('%') => set(job, key, v)?,
        "offset" | "offset_increment" => set(job, key, &sizes(v, kb_1000))?,
        "ioengine" => {
            fio.libaio = v == "libaio";
            // fio's engines of a service measured from user space: stormark's own, chosen by
            // the target (`filename=iscsi\://...`, `nfs_url=`).
            if matches!(v, "libiscsi" | "nfs") {
                return Ok(true);
            }
            return engine(job, v, context);
        }
        // fio's nfs engine's share: the run's target, a directory made there.
        "nfs_url" => fio.nfs_url = Some(v.trim().to_string()),
        "verify" => match verify_on(v) {
            Some(on) => set(job, "verify", if on { "true" } else { "false" })?,
            None => return Ok(false),
        },
        // Whether a job checks its blocks (or, one that only reads, an earlier job's): settled
        // with the job (FioState::finish).
        "do_verify" => fio.do_verify = crate::units::parse_bool(v),
        // fio fills each block with the pattern, and checks it: stormark's header and CRC-32C
        // cover the pattern written after it (verify on unless the job says otherwise).
        "verify_pattern" => {
            set(job, "buffer_pattern", v)?;
            if job.verify.is_none() {
                set(job, "verify", "true")?;
            }
        }
        "bs" | "blocksize" | "bsrange" | "blocksize_range" if v.contains(',') => {
            // fio's bs=R,W: one size (or range) for both is all stormark runs, unless the
            // job's bssplit decides the sizes (fio: it wins over bs and bsrange).
            let mut parts = v.split(',').filter(|p| !p.is_empty());
            let first = parts.next().unwrap_or(v);
            if parts.any(|p| p != first) {
                return Ok(fio.has_bssplit);
            }
            set(job, key, &sizes(first, kb_1000))?;
        }
        "bs" | "blocksize" => set(job, "bs", &sizes(v, kb_1000))?,
        "size" if v.trim_end().ends_with('%') => set(job, "size", v)?,
        "size" => {
            fio.size = Some(crate::units::parse_size(&sizes(v, kb_1000)).ok_or_else(|| {
                SpecError::invalid(&format!("size in {context}"), v, crate::units::SIZE_FORM)
            })?)
        }
        "rate" | "rate_iops" => {
            let caps = rate_caps(key, v, kb_1000, context)?;
            if key == "rate" {
                fio.rate_bytes = Some(caps);
            } else {
                fio.rate = Some(caps);
            }
        }
        "loops" | "number_ios" => {
            let n: u64 = v.trim().parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                SpecError::invalid(&format!("{key} in {context}"), v, "a whole number above 0")
            })?;
            if key == "loops" {
                fio.loops = Some(n);
            } else {
                fio.number_ios = Some(n);
            }
        }
        // How fio allocates a file it lays out. Read files are written in full whatever the
        // method; a write-only job's new file is reserved (native, posix: stormark's default,
        // fallocate) or, with none (or truncate), only its length set: its writes allocate
        // the blocks, stormark's --fresh.
        "fallocate" => fio.no_fallocate = matches!(v.trim(), "none" | "0" | "truncate"),
        // Writes appended to the file's end: into a new file, its blocks allocated by the
        // writes (stormark's --fresh).
        "file_append" => fio.append |= yes,
        // Lay the file out before writing it: stormark's --prepare.
        "overwrite" => fio.overwrite |= yes,
        // fio's range of file sizes (`filesize=10M-100M`), each file's drawn in it: stormark
        // makes every file the range's middle (the same bytes on average), said in a note.
        "filesize" if v.contains('-') => {
            let bounds: Vec<u64> = sizes(v, kb_1000)
                .split('-')
                .filter_map(crate::units::parse_size)
                .collect();
            let &[low, high] = bounds.as_slice() else {
                return Err(SpecError::invalid(
                    &format!("filesize in {context}"),
                    v,
                    "a size such as 64m, or a range such as 10m-100m",
                ));
            };
            let (low, high) = (low.min(high), low.max(high));
            let middle = low.midpoint(high);
            set(job, "filesize", &middle.to_string())?;
            fio.size_range = Some((low, high, middle));
        }
        "filesize" | "io_size" | "io_limit" | "bsrange" | "blocksize_range" | "ba"
        | "blockalign" | "zonesize" | "zonerange" | "zoneskip" | "verify_interval" => {
            set(job, key, &sizes(v, kb_1000))?
        }
        k if REPORTING.contains(&k) => {}
        _ => match crate::options::canonical_key(key) {
            // Keys fio and stormark share (numjobs, iodepth, runtime, fsync, ...).
            Some(_) if !matches!(key, "kind" | "group" | "time" | "engine" | "jobs" | "files") => {
                set(job, key, v)?
            }
            _ => return Ok(false),
        },
    }
    Ok(true)
}

/// The options of fio's own forms, beside stormark's keys: where the job's files are
/// (`filename`, `directory`), fio's steady state, and the options stormark runs its own way
/// (`fsync_on_close`, `unlink`, `nowait=0`, `io_submit_mode`, `thinktime_blocks_type`).
/// `Some(false)` for a form not run, `None` for another key.
fn fio_forms(
    job: &mut JobOpts,
    fio: &mut FioState,
    key: &str,
    v: &str,
    context: &str,
) -> Result<Option<bool>, SpecError> {
    let set = |job: &mut JobOpts, k: &str, v: &str| job.set(k, v, Source::Key(context));
    match key {
        "filename" => {
            // Several files in one job (fio's `:` between them): one target per run. A colon
            // of a name is written `\:`, as in a libiscsi URL (`iscsi\://host/iqn...\:x/1`).
            let unescaped_colon = v
                .char_indices()
                .any(|(i, c)| c == ':' && !v[..i].ends_with('\\'));
            if unescaped_colon {
                return Ok(Some(false));
            }
            let v = &v.replace("\\:", ":");
            // A file per job clone or file number (`/data/f.$jobnum`): each worker its own
            // files, which is what stormark does in the directory they would be made in.
            if v.contains("$jobnum") || v.contains("$filenum") || v.contains("$jobname") {
                let dir = std::path::Path::new(v).parent().and_then(|d| d.to_str());
                match dir {
                    // A device per clone (`/dev/sd$jobnum`) is more than one target.
                    Some(d) if !d.is_empty() && !d.contains('$') && !d.starts_with("/dev") => {
                        fio.clone_dir = Some(d.to_string());
                        fio.filename = None;
                    }
                    // Relative to where fio runs: the run's own target decides.
                    Some("") => {}
                    _ => return Ok(Some(false)),
                }
                return Ok(Some(true));
            }
            fio.filename = Some(v.to_string());
            fio.clone_dir = None;
        }
        "directory" => fio.directory = Some(v.to_string()),
        // fio keeps a random map unless told not to: each block once a pass.
        // Which errors end a job: stormark's workers go on after any error, counting each by
        // kind (a worker stops after 100 in a row), and the run exits 1 unless its kinds are
        // ignored (`ignore_error`); fio's default ends the job at its first.
        "continue_on_error"
            if matches!(
                v.trim(),
                "none" | "0" | "false" | "write" | "read" | "io" | "verify" | "all" | "1" | "true"
            ) => {}
        // fio's lists of errors to go on after, for reads, writes and verifies: one list of
        // kinds in stormark (an error of a listed kind is ignored whatever it did).
        "ignore_error" => {
            let words: Vec<&str> = v
                .split([',', ':'])
                .map(str::trim)
                .filter(|w| !w.is_empty())
                .collect();
            if !words.is_empty() {
                set(job, "ignore_errors", &words.join(","))?;
            }
        }
        // How fio makes a duplicate block: a copy of an earlier write's (`repeat`), which is
        // what stormark's copies of a few shared blocks give a deduplicating target; or a
        // block drawn from a working set, a share of the file's size.
        "dedupe_mode" => match v.trim() {
            "repeat" => fio.dedupe_working_set = false,
            "working_set" => fio.dedupe_working_set = true,
            _ => return Ok(Some(false)),
        },
        // fio's strided zones (also what zonesize alone means); `none` leaves the zone keys
        // out; `zbd` is stormark's zoned mode, zones of zonesize.
        "zonemode" => match v.trim() {
            "strided" => (fio.zones_off, fio.zbd) = (false, false),
            "none" => (fio.zones_off, fio.zbd) = (true, false),
            "zbd" => (fio.zones_off, fio.zbd) = (false, true),
            _ => return Ok(Some(false)),
        },
        "norandommap" => job.random_map = Some(crate::units::parse_bool(v) == Some(false)),
        // fio's search for the most load within a latency: stormark's --target-latency.
        "latency_target" | "latency_window" => {
            let d = match v.trim().parse::<u64>() {
                Ok(us) => Some(std::time::Duration::from_micros(us)),
                Err(_) => crate::units::parse_duration(v),
            };
            let Some(d) = d.filter(|d| !d.is_zero()) else {
                return Ok(Some(false));
            };
            if key == "latency_target" {
                fio.latency_target = Some(d);
            } else {
                fio.latency_window = Some(d);
            }
        }
        "latency_percentile" => {
            fio.latency_stat = Some(match v.trim().trim_end_matches('%') {
                "50" => "p50",
                "90" => "p90",
                "99" => "p99",
                "99.9" => "p99.9",
                "99.99" => "p99.99",
                "100" => "max",
                _ => return Ok(Some(false)),
            })
        }
        // Keep adjusting after the search: not run (the search reports where it settled).
        "latency_run" if crate::units::parse_bool(v) == Some(false) => {}
        // fio's CPU mask: the same CPUs as a list.
        "cpumask" => match crate::placement::CpuList::from_mask(v) {
            Some(l) => set(job, "cpus_allowed", &l.text())?,
            None => return Ok(Some(false)),
        },
        // fio fsyncs each file as it closes it, at the job's end: stormark's end_fsync.
        "fsync_on_close" => set(job, "end_fsync", v)?,
        // fio removes the files it made after the job; stormark always removes what it made
        // (never a file it did not make).
        "unlink" => {}
        // RWF_NOWAIT: off is every engine's way; on (EAGAIN instead of waiting) is not run.
        "nowait" if crate::units::parse_bool(v) == Some(false) => {}
        // fio submits from a thread of its own to keep a rate's schedule (`offload`);
        // stormark's open loop keeps its schedule itself, latency counted from each I/O's due
        // time, either way.
        "io_submit_mode" if matches!(v, "inline" | "offload") => {}
        // fio counts I/Os to a pause as they complete (its default) or as they are issued;
        // stormark's psync is the same either way, its io_uring waits for those in flight.
        "thinktime_blocks_type" if matches!(v, "complete" | "issue") => {}
        // fio's steady state: `iops:3%`, `bw:3%` or `lat:5%` (every second within that much of
        // the window's mean), or a slope (`iops_slope:0.1%`, the window's trend), over
        // `ss_dur`. stormark's form (`iops:2%:30s`) is taken too.
        "ss" | "steadystate" if v.matches(':').count() == 2 => set(job, "steady_state", v)?,
        "ss" | "steadystate" => {
            let Some((figure, band)) = v.split_once(':') else {
                return Ok(Some(false));
            };
            let figure = figure.trim();
            let plain = figure.strip_suffix("_slope").unwrap_or(figure);
            if !matches!(plain, "iops" | "bw" | "lat") || !band.trim().ends_with('%') {
                return Ok(Some(false));
            }
            fio.steady = Some(format!("{figure}:{}", band.trim()));
        }
        "ss_dur" | "steadystate_duration" => {
            fio.steady_window = Some(v.to_ascii_lowercase());
        }
        // When fio starts judging, and how often: stormark judges each second of the ramp.
        "ss_ramp" | "steadystate_ramp_time" | "ss_interval" | "steadystate_check_interval" => {}
        _ => return Ok(None),
    }
    Ok(Some(true))
}

/// fio's `ioengine`: the engines of I/O on files or devices map to stormark's; `false` for one
/// left out with --lenient; an engine whose load is something else is refused outright.
fn engine(job: &mut JobOpts, v: &str, context: &str) -> Result<bool, SpecError> {
    let set = |job: &mut JobOpts, k: &str, v: &str| job.set(k, v, Source::Key(context));
    match v {
        "io_uring" | "libaio" | "posixaio" => set(job, "engine", "io_uring")?,
        "psync" | "sync" | "pvsync" | "pvsync2" | "vsync" => set(job, "engine", "psync")?,
        "null" => set(job, "kind", "null")?,
        // Other ways to read and write the same files or devices: left out with
        // --lenient, the load stays I/O on them.
        "mmap" | "splice" | "sg" | "solarisaio" | "windowsaio" | "dev-dax" | "libpmem"
        | "pmemblk" | "io_uring_cmd" | "falloc" | "ftruncate" => return Ok(false),
        // Engines whose load is not I/O on the job's files: leaving them out would measure
        // something else, so not even --lenient runs the job.
        other => {
            let instead = match other {
                "filecreate" | "filestat" | "filedelete" | "dircreate" | "dirstat"
                | "dirdelete" => "stormark meta runs metadata operations",
                "net" | "netsplice" => "stormark net measures the network",
                "http" => "stormark s3 measures object stores",
                _ => "stormark does not run it",
            };
            return Err(SpecError::invalid(
                &format!("ioengine in {context}"),
                &crate::printable(other, 40),
                format!("an engine of I/O on files or devices (psync, sync, libaio, io_uring, ...): this one's load is something else, so not even --lenient runs the job; {instead}"),
            ));
        }
    }
    Ok(true)
}

/// fio's `verify`: on with a checksum stormark can stand in for, off with 0 or none; `None`
/// for a kind it does not run.
fn verify_on(v: &str) -> Option<bool> {
    let on = !matches!(v, "0" | "none" | "false");
    let known = matches!(
        v,
        "1" | "crc32c"
            | "crc32c-intel"
            | "crc32"
            | "md5"
            | "sha1"
            | "sha256"
            | "xxhash"
            | "meta"
            | "crc64"
            | "crc16"
            | "crc7"
            | "sha512"
            | "sha3-256"
            | "true"
    );
    (!on || known).then_some(on)
}

/// fio's `rate` (bytes) or `rate_iops` caps: `X` for each direction, `R,W` for each its own.
fn rate_caps(
    key: &str,
    v: &str,
    kb_1000: bool,
    context: &str,
) -> Result<(Option<u64>, Option<u64>), SpecError> {
    let bytes = key == "rate";
    let mut parts = v.split(',');
    let mut cap = |what: &str| -> Result<Option<u64>, SpecError> {
        match parts.next().map(str::trim) {
            None | Some("") => Ok(None),
            Some(p) => if bytes {
                crate::units::parse_size(&sizes(p, kb_1000))
            } else {
                count(p)
            }
            .filter(|n| *n > 0)
            .map(Some)
            .ok_or_else(|| {
                SpecError::invalid(
                    &format!("{key} in {context}"),
                    v,
                    format!(
                        "{} a second for {what}{}, or R,W for reads and writes",
                        if bytes { "bytes" } else { "I/Os" },
                        if bytes {
                            " such as 10m"
                        } else {
                            " such as 500"
                        }
                    ),
                )
            }),
        }
    };
    let read = cap("reads")?;
    // `rate=X` caps each direction at X; `rate=R,W` each its own.
    let write = if v.contains(',') {
        cap("writes")?
    } else {
        read
    };
    Ok((read, write))
}

/// A count as fio reads one (`rate_iops=3k`): digits with an optional k, m or g, powers of
/// 1000.
fn count(p: &str) -> Option<u64> {
    let (digits, scale) = match p.to_ascii_lowercase().chars().last() {
        Some('k') => (&p[..p.len() - 1], 1_000),
        Some('m') => (&p[..p.len() - 1], 1_000_000),
        Some('g') => (&p[..p.len() - 1], 1_000_000_000),
        _ => (p, 1),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(scale)
}

/// A size or range in fio's units: with `kb_base=1000`, k, m, g are powers of 1000 (KiB, MiB,
/// GiB stay powers of 1024). Returned as bytes, or unchanged.
fn sizes(text: &str, kb_1000: bool) -> String {
    if !kb_1000 {
        return text.to_string();
    }
    text.split('-')
        .map(|part| {
            let p = part.trim();
            let lower = p.to_ascii_lowercase();
            if lower.ends_with("ib") {
                return p.to_string();
            }
            let digits = p.trim_end_matches(|c: char| c.is_ascii_alphabetic());
            let unit = &lower[digits.len()..];
            let mult: u64 = match unit {
                "k" | "kb" => 1000,
                "m" | "mb" => 1_000_000,
                "g" | "gb" => 1_000_000_000,
                "t" | "tb" => 1_000_000_000_000,
                _ => return p.to_string(),
            };
            digits
                .parse::<u64>()
                .ok()
                .and_then(|n| n.checked_mul(mult))
                .map_or_else(|| p.to_string(), |n| n.to_string())
        })
        .collect::<Vec<_>>()
        .join("-")
}
