//! `--print-fio`: the fio job file of a stormark workload, which fio reads back as the same
//! jobs (tests/fiofile.rs checks it with fio itself).

use crate::units::{format_duration, format_size};
use crate::workload::Job;
use crate::LoadKind;

/// Why `value` (of the option `what`) cannot be written into a fio job file as it is: a
/// control character (a newline would start a line of fio's options of its own:
/// `exec_prerun=`), or a `;` or `#` after a blank, where fio's line ends in a comment.
fn fio_unwritable(what: &str, value: &str) -> Option<String> {
    let why = if value.chars().any(char::is_control) {
        "holds a control character"
    } else if [" ;", " #", "\t;", "\t#"].iter().any(|c| value.contains(c)) {
        "holds a ';' or '#' after a blank, where fio reads a comment"
    } else {
        return None;
    };
    Some(format!(
        "{what} {}: {why}; a fio job file cannot carry it (rename it to print the job file)",
        crate::shown(value)
    ))
}

/// The first value of `jobs` on `target` that a fio job file cannot carry as it is (a
/// control character, or a `;` or `#` after a blank), said in one line: checked before
/// [`to_fio`] prints anything.
pub fn fio_check(jobs: &[Job], target: &str) -> Result<(), String> {
    if let Some(e) = fio_unwritable("TARGET", target) {
        return Err(e);
    }
    for job in jobs {
        let name = fio_unwritable("job name", &job.name);
        let file = job
            .filename
            .as_deref()
            .and_then(|f| fio_unwritable("filename", f));
        if let Some(e) = name.or(file) {
            return Err(e);
        }
        if job.file_shift > 0 {
            return Err(format!(
                "job {}: file_shift {}: fio's jobs have no form for a worker working in another's files (IOR's -C); leave out file_shift",
                job.name, job.file_shift
            ));
        }
        if let Some(h) = &job.hosts {
            return Err(format!(
                "job {}: hosts {}: a fio job file runs on every client it is given (fio --client=HOST FILE per host); leave out hosts",
                job.name,
                h.name()
            ));
        }
    }
    Ok(())
}

/// A value as it goes into a line of the job file: its control characters as `?`, so that
/// nothing given to [`to_fio`] unchecked can start a line (callers check first, with
/// [`fio_check`], and refuse).
fn one_line(value: &str) -> String {
    value
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// The fio job file of `jobs` on `target`: what fio would run for the same workload (jobs of
/// one group together, a `stonewall` between groups). Values that [`fio_check`] refuses are
/// never written as they are.
pub fn to_fio(jobs: &[Job], target: &str, is_dir: bool) -> String {
    let mut out = String::from("; written by stormark run --print-fio\n[global]\n");
    out.push_str(&format!(
        "{}={}\ngroup_reporting=1\n",
        if is_dir { "directory" } else { "filename" },
        one_line(target)
    ));
    let mut last_group: Option<&Option<String>> = None;
    for job in jobs {
        if matches!(job.kind, LoadKind::S3 | LoadKind::Net) {
            out.push_str(&format!(
                "\n; job {}: a {} job, which fio does not run (left out)\n",
                one_line(&job.name),
                job.kind.name()
            ));
            continue;
        }
        out.push_str(&format!("\n[{}]\n", one_line(&job.name)));
        let new_group = last_group.is_some_and(|g| job.group.is_none() || *g != job.group);
        if new_group {
            out.push_str("stonewall\n");
        }
        last_group = Some(&job.group);
        let engine = match (job.kind, job.engine.name()) {
            (LoadKind::Null, _) => "null",
            (_, "psync") => "psync",
            _ => "io_uring",
        };
        out.push_str(&format!("ioengine={engine}\nrw={}\n", job.rw_text()));
        // The job's own file in the directory (on one file or device, that target).
        if let Some(f) = job.filename.as_ref().filter(|_| is_dir) {
            out.push_str(&format!("filename={}\n", one_line(f)));
        }
        pattern(&mut out, job);
        out.push_str(&format!(
            "iodepth={}\nnumjobs={}\nnrfiles={}\n",
            job.iodepth, job.jobs, job.files
        ));
        if job.iodepth_batch > 1 {
            out.push_str(&format!("iodepth_batch_submit={}\n", job.iodepth_batch));
        }
        if let Some(low) = job.iodepth_low {
            out.push_str(&format!("iodepth_low={low}\n"));
        }
        if job.trim_percentage > 0 {
            out.push_str(&format!(
                "trim_percentage={}\ntrim_verify_zero={}\n",
                job.trim_percentage,
                u8::from(job.trim_verify_zero)
            ));
        }
        if job.serialize_overlap {
            out.push_str("serialize_overlap=1\n");
        }
        if job.iodepth_batch_complete > 1 {
            out.push_str(&format!(
                "iodepth_batch_complete_min={}\n",
                job.iodepth_batch_complete
            ));
        }
        // fio's maximum is the minimum unless given.
        if job.iodepth_batch_complete_max != job.iodepth_batch_complete {
            out.push_str(&format!(
                "iodepth_batch_complete_max={}\n",
                job.iodepth_batch_complete_max
            ));
        }
        for (key, on) in job.ring.keys() {
            if on {
                out.push_str(&format!("{key}=1\n"));
            }
        }
        for (key, off) in job.ring.keys_off() {
            if off {
                out.push_str(&format!("{key}=0\n"));
            }
        }
        // The size stormark uses: the job's, or for files it makes its default (fio needs
        // one); a whole file or device (`filename=`) is fio's default too.
        match job.size {
            _ if job.size_pct.is_some() => {
                out.push_str(&format!("size={}%\n", job.size_pct.unwrap_or(100)));
                if let Some(n) = job.loops.filter(|n| *n > 1) {
                    out.push_str(&format!("loops={n}\n"));
                }
            }
            Some(s) => out.push_str(&format!("size={}\n", format_size(s))),
            None if is_dir => out.push_str(&format!(
                "size={}\n",
                format_size(crate::workload::DEFAULT_FILE_SIZE)
            )),
            None => {}
        }
        if let Some(t) = job.time {
            out.push_str(&format!("runtime={}\ntime_based=1\n", format_duration(t)));
        }
        if let Some(t) = job.io_total {
            out.push_str(&format!("io_size={}\n", format_size(t)));
        }
        if !job.ramp.is_zero() {
            out.push_str(&format!("ramp_time={}\n", format_duration(job.ramp)));
        }
        if !job.start_delay.is_zero() {
            out.push_str(&format!(
                "startdelay={}\n",
                format_duration(job.start_delay)
            ));
        }
        if let Some(ss) = &job.steady_state {
            // fio judges iops and bw; a latency rule has no fio form.
            match ss.to_string().rsplit_once(':') {
                Some((rule, window)) if !rule.starts_with("lat") => out.push_str(&format!(
                    "steadystate={rule}\nsteadystate_duration={window}\n"
                )),
                _ => out.push_str(&format!("; steady state {ss}: no fio form (left out)\n")),
            }
        }
        writes_and_cache(&mut out, job);
    }
    out
}

/// A job's access pattern in fio's keys: block sizes and alignment, the mix, the
/// distribution, the share of random offsets.
fn pattern(out: &mut String, job: &Job) {
    if let Some(split) = &job.bs_split {
        out.push_str(&format!("bssplit={}\n", split.name()));
    } else if job.bs.min == job.bs.max {
        out.push_str(&format!("bs={}\n", format_size(job.bs.min)));
    } else {
        out.push_str(&format!(
            "bsrange={}-{}\n",
            format_size(job.bs.min),
            format_size(job.bs.max)
        ));
    }
    // fio's blockalign (its name `ba`) defaults to the smallest block, as stormark's does.
    if job.bs_align != job.bs.min {
        out.push_str(&format!("ba={}\n", format_size(job.bs_align)));
    }
    // A mixed pattern always says its share: fio's default is 50, stormark's 70.
    if matches!(job.rw, crate::Rw::ReadWrite | crate::Rw::RandRw) {
        out.push_str(&format!("rwmixread={}\n", job.rwmixread));
    }
    if job.distribution != crate::Distribution::Random {
        out.push_str(&format!(
            "random_distribution={}\n",
            job.distribution.name()
        ));
        if let crate::Distribution::Sequence { stride: true, .. } = job.distribution {
            out.push_str("random_sequence_stride=1\n");
        }
    }
    // fio keeps a random map by default; stormark draws with repeats unless asked.
    if !job.random_map {
        out.push_str("norandommap=1\n");
    }
    if job.rand_run_same {
        out.push_str("rw_sequencer=identical\n");
    }
    if let Some(z) = job.zones {
        out.push_str(&format!(
            "zonemode=strided\nzonesize={}\nzonerange={}\nzoneskip={}\n",
            z.size, z.range, z.skip
        ));
    }
    if let Some(z) = job.zoned {
        out.push_str(&format!("zonemode=zbd\nzonesize={}\n", z.size));
        if z.max_open > 0 {
            out.push_str(&format!("max_open_zones={}\n", z.max_open));
        }
        if z.reset_frequency > 0.0 {
            out.push_str(&format!(
                "zone_reset_threshold={}\nzone_reset_frequency={}\n",
                z.reset_threshold, z.reset_frequency
            ));
        }
        if z.read_beyond_wp {
            out.push_str("read_beyond_wp=1\n");
        }
    }
    if let Some(spr) = job.sprandom {
        out.push_str(&format!(
            "sprandom=1\nspr_op={}\nspr_num_regions={}\n",
            spr.op, spr.regions
        ));
        if spr.cache > 0 {
            out.push_str(&format!("spr_cs={}\n", spr.cache));
        }
    }
    if job.offset > 0 {
        out.push_str(&format!("offset={}\n", job.offset));
    }
    if let Some(p) = job.offset_pct {
        out.push_str(&format!("offset={p}%\n"));
    }
    if !job.thinktime.is_zero() {
        out.push_str(&format!(
            "thinktime={}\nthinktime_blocks={}\n",
            job.thinktime.as_micros(),
            job.thinktime_blocks
        ));
        if !job.thinktime_spin.is_zero() {
            out.push_str(&format!(
                "thinktime_spin={}\n",
                job.thinktime_spin.as_micros()
            ));
        }
    }
    if job.offset_increment > 0 {
        out.push_str(&format!("offset_increment={}\n", job.offset_increment));
    }
    for (key, min) in [
        ("rate_min", job.rate_min),
        ("rate_iops_min", job.rate_iops_min),
    ] {
        if let Some([r, w]) = min {
            out.push_str(&format!("{key}={r},{w}\n"));
        }
    }
    if let Some(e) = job.exit {
        out.push_str(&format!("exitall=1\nexit_what={}\n", e.name()));
    }
    if job.exit_on_error {
        out.push_str("exitall_on_error=1\n");
    }
    // fio's lists (reads, writes, verifies) of errno names or numbers: stormark's kinds that
    // are errnos, in each.
    let errnos: Vec<String> = job
        .ignore_errors
        .iter()
        .filter_map(|k| match k.as_str() {
            "eio" | "enospc" | "einval" => Some(k.to_ascii_uppercase()),
            k => k.strip_prefix("errno-").map(str::to_string),
        })
        .collect();
    if !errnos.is_empty() {
        let list = errnos.join(":");
        out.push_str(&format!("ignore_error={list},{list},{list}\n"));
    }
    if let Some(f) = job.flow {
        out.push_str(&format!(
            "flow={}\nflow_id={}\nflow_sleep={}\n",
            f.weight,
            f.id,
            f.sleep.as_micros()
        ));
    }
    let p = &job.placement;
    if let Some(c) = &p.cpus {
        out.push_str(&format!("cpus_allowed={}\n", c.text()));
    }
    if p.split {
        out.push_str("cpus_allowed_policy=split\n");
    }
    if let Some(n) = &p.nodes {
        out.push_str(&format!("numa_cpu_nodes={}\n", n.text()));
    }
    if let Some(m) = &p.mem {
        out.push_str(&format!("numa_mem_policy={}\n", m.text()));
    }
    if let Some(n) = p.nice {
        out.push_str(&format!("nice={n}\n"));
    }
    if let Some((class, level)) = p.ioprio {
        out.push_str(&format!("prioclass={class}\nprio={level}\n"));
    }
    if let Some(c) = p.cmdprio {
        match &c.split {
            Some(split) => out.push_str(&format!("cmdprio_bssplit={}\n", split.name())),
            None => out.push_str(&format!(
                "cmdprio_percentage={},{}\n",
                c.share[0], c.share[1]
            )),
        }
        out.push_str(&format!("cmdprio_class={}\ncmdprio={}\n", c.class, c.level));
        if c.hint > 0 {
            out.push_str(&format!("cmdprio_hint={}\n", c.hint));
        }
    }
    let random_default = if job.rw.is_random() { 100 } else { 0 };
    if job.random_pct != random_default {
        out.push_str(&format!("percentage_random={}\n", job.random_pct));
    }
}

/// How a job's writes are made and made durable, its cache, rate and data, in fio's keys.
fn writes_and_cache(out: &mut String, job: &Job) {
    match job.direct.name() {
        "true" => out.push_str("direct=1\n"),
        "false" => out.push_str("direct=0\n"),
        // `direct = "auto"` (the quick and oltp-4k profiles): O_DIRECT wherever the target
        // takes it, which is where anyone runs fio beside it; without a line fio would run
        // buffered what stormark ran direct (issue 56). fio has no "auto": on tmpfs it
        // refuses direct=1 (EINVAL) where stormark fell back to buffered I/O, hence the note.
        _ => out.push_str(
            "; stormark's direct=auto: O_DIRECT where the file system takes it (tmpfs: direct=0)\ndirect=1\n",
        ),
    }
    // fio invalidates before each pass (its default); it has no "once at the start".
    if job.invalidate == crate::choices::Invalidate::No {
        out.push_str("invalidate=0\n");
    }
    if job.fsync > 0 {
        out.push_str(&format!("fsync={}\n", job.fsync));
    }
    if job.fdatasync > 0 {
        out.push_str(&format!("fdatasync={}\n", job.fdatasync));
    }
    match job.sync.name() {
        "dsync" => out.push_str("sync=dsync\n"),
        "sync" => out.push_str("sync=sync\n"),
        _ => {}
    }
    if job.end_fsync {
        out.push_str("end_fsync=1\n");
    }
    if job.fresh {
        // A write-only job's new file, nothing reserved: its writes allocate (--fresh).
        out.push_str("fallocate=none\n");
    }
    if !job.fadvise_hint {
        out.push_str("fadvise_hint=0\n");
    }
    if let Some(r) = job.rate_iops {
        // fio's rate_iops is each job's (each of numjobs) and caps reads and writes each;
        // stormark's is the total: a mix is its two shares.
        let each = f64::from(r) / f64::from(job.jobs.max(1));
        let reads = f64::from(job.rw.read_pct(job.rwmixread)) / 100.0;
        let of = |share: f64| ((each * share).round() as u64).max(1);
        match reads {
            r if r >= 1.0 || r <= 0.0 => {
                out.push_str(&format!("rate_iops={}\n", of(1.0)));
            }
            r => out.push_str(&format!("rate_iops={},{}\n", of(r), of(1.0 - r))),
        }
        if job.rate_poisson {
            out.push_str("rate_process=poisson\n");
        }
    }
    if job.zero_buffers {
        out.push_str("zero_buffers=1\n");
    }
    if job.pin_cache {
        // fio's nearest: the files read into the page cache before the load, not locked there.
        out.push_str("pre_read=1\n");
    }
    if let Some(p) = &job.buffer_pattern {
        out.push_str(&format!("buffer_pattern={}\n", p.text()));
    }
    if job.compress_ratio > 1.0 {
        let p = (100.0 - 100.0 / job.compress_ratio).round();
        out.push_str(&format!("buffer_compress_percentage={p}\n"));
    }
    if job.dedup_ratio > 1.0 {
        let p = (100.0 - 100.0 / job.dedup_ratio).round();
        out.push_str(&format!("dedupe_percentage={p}\n"));
        if let Some(w) = job.dedup_working_set {
            out.push_str(&format!(
                "dedupe_mode=working_set\ndedupe_working_set_percentage={w}\ndedupe_global={}\n",
                u8::from(job.dedup_global)
            ));
        }
    }
    if job.atomic {
        out.push_str("atomic=1\n");
    }
    if job.verify {
        out.push_str("verify=crc32c\n");
        if let Some(n) = job.verify_interval {
            out.push_str(&format!("verify_interval={n}\n"));
        }
        if !job.verify_after && !job.verify_only {
            out.push_str("do_verify=0\n");
        }
    }
    if job.verify_only {
        out.push_str("verify_only=1\n");
    }
    if job.fill_device {
        out.push_str("fill_device=1\n");
    }
}
