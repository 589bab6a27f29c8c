//! fio's INI job files, run as they are: `[global]` and job sections, fio's option names and
//! values mapped to stormark's, `$VAR`/`${VAR}` expansion, `include`, fio's units (`kb_base`),
//! its bare booleans, and its job ordering (jobs run together until a `stonewall`). An option
//! stormark does not run is an error naming every such option with its line, unless lenient.
//! [`to_fio`] writes the fio job file of a stormark workload: the translation both ways.

use crate::jobfile::JobFile;
use crate::workload::JobOpts;
use crate::SpecError;
use keys::apply;
use lines::{read_lines, shown_key, IncludeBudget};

/// What reading a fio job file gave: the jobs (as a [`JobFile`]), and the options ignored
/// (with `lenient`) as `line N: key`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FioJobFile {
    /// The jobs, each with the `[global]` options before it folded in.
    pub file: JobFile,
    /// Options left out (lenient only).
    pub ignored: Vec<String>,
    /// Jobs with `time_based` and no `runtime` (`[name] of FILE`): they need a time from the
    /// command line.
    pub untimed: Vec<String>,
    /// The target came from `filename=` (a file, perhaps still to be made), not
    /// `directory=`.
    pub target_is_file: bool,
    /// The jobs name files, directories or devices that are more than one target
    /// (`/dev/sdb` and `/dev/sdc`, files in different directories): each, and each job's,
    /// for a run that gives no TARGET of its own (one given replaces them).
    pub several: Option<FioTargets>,
    /// fio's `latency_target` (with `latency_percentile` and `latency_window`): the latency
    /// target of stormark's search (`p99.9<=500ms`) and its step time (`5s`).
    pub latency_search: Option<(String, Option<String>)>,
    /// Where a job runs otherwise than its options alone say, to do what fio does: for the
    /// run's notes.
    pub notes: Vec<String>,
}

/// The targets of a fio job file whose jobs name more than one: run as one stage, each job
/// on its own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FioTargets {
    /// Each file, directory or device the jobs name, in their order, and whether it is a
    /// file (perhaps still to be made, as fio makes it).
    pub targets: Vec<(String, bool)>,
    /// Each job's target, an index into `targets`; `None` for a job that names none.
    pub of_job: Vec<Option<usize>>,
}

/// One `key[=value]` line, after expansion.
pub(crate) struct Line {
    pub(crate) no: usize,
    pub(crate) key: String,
    pub(crate) value: Option<String>,
}

/// Whether `text` is written as fio writes job files, whatever its name: its first line
/// that is not blank or a comment (`;`, `#`) is a section (`[global]`, `[job1]`). A stormark
/// TOML job file starts with keys or a `[[job]]` array, never a single section.
pub fn looks_like_fio(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with(';') && !l.starts_with('#'))
        .is_some_and(|l| {
            l.starts_with('[') && !l.starts_with("[[") && l.ends_with(']') && l.len() > 2
        })
}

/// Reads a fio job file. `env` gives variables (`$VAR`, `${VAR}`, fio's `$ncpus`...);
/// `include` reads an included file by the name written. `lenient`: options stormark does not
/// run are listed in `ignored` instead of refused.
pub fn parse_fio_job_file(
    text: &str,
    path: &str,
    env: &dyn Fn(&str) -> Option<String>,
    include: &dyn Fn(&str) -> Result<String, String>,
    lenient: bool,
) -> Result<FioJobFile, SpecError> {
    let fail = |message: String| SpecError::JobFile {
        path: path.to_string(),
        message,
    };
    // Sections in order: (name, lines).
    let mut sections: Vec<(String, Vec<Line>)> = Vec::new();
    let mut budget = IncludeBudget::default();
    read_lines(text, path, env, include, 0, &mut budget, &mut sections).map_err(fail)?;
    let mut out = FioJobFile::default();
    let mut unsupported: Vec<String> = Vec::new();
    let mut global_lines: Vec<(usize, String, Option<String>)> = Vec::new();
    let mut kb_1000 = false;
    let mut group = 1;
    // Each job's file or directory, as fio joins `directory` and `filename`.
    let mut places: Vec<Option<(String, bool)>> = Vec::new();
    for (name, lines) in &sections {
        let is_global = name == "global";
        if is_global {
            for l in lines {
                global_lines.push((l.no, l.key.clone(), l.value.clone()));
            }
        }
        if is_global {
            // Applied to each job after it, below; kb_base first, as it changes sizes.
            for l in lines {
                if l.key == "kb_base" {
                    kb_1000 = l.value.as_deref() == Some("1000");
                }
            }
            continue;
        }
        let mut job = JobOpts {
            name: Some(name.clone()),
            ..JobOpts::default()
        };
        let mut fio = FioState::default();
        let all: Vec<(usize, String, Option<String>)> = global_lines
            .iter()
            .cloned()
            .chain(lines.iter().map(|l| (l.no, l.key.clone(), l.value.clone())))
            .collect();
        fio.has_bssplit = all.iter().any(|(_, k, _)| k == "bssplit");
        for (no, key, value) in &all {
            if key == "kb_base" {
                kb_1000 = value.as_deref() == Some("1000");
                continue;
            }
            let context = format!("line {no} of {path}");
            match apply(&mut job, &mut fio, key, value.as_deref(), kb_1000, &context) {
                Ok(true) => {}
                Ok(false) => {
                    let item = format!("line {no}: {}", shown_key(key));
                    if !unsupported.contains(&item) {
                        unsupported.push(item);
                    }
                }
                Err(e) => return Err(e),
            }
        }
        keys::apply_zone_units(&mut job, &mut fio)?;
        // fio's default engine is psync: a job that names none runs one I/O at a time,
        // whatever its iodepth (fio: "queue depth will be capped at 1").
        if job.engine.is_none() && job.kind.is_none() {
            job.engine = Some(crate::EngineChoice::Psync);
        }
        // fio's random map, its default: each block once a pass (norandommap says no, and
        // sprandom, whose offsets are its own).
        if job.random_map.is_none() && job.sprandom != Some(true) {
            job.random_map = Some(true);
        }
        // fio runs a file's jobs together, until a stonewall.
        let after = fio.wait_for.as_ref().and_then(|name| {
            let j = out
                .file
                .jobs
                .iter()
                .find(|j| j.name.as_ref() == Some(name))?;
            j.group
                .as_deref()?
                .strip_prefix("fio-")?
                .parse::<u32>()
                .ok()
        });
        if fio.stonewall && !out.file.jobs.is_empty() && after.is_none_or(|g| g >= group) {
            group += 1;
        }
        job.group = Some(format!("fio-{group}"));
        fio.finish(&mut job, &context_of(path, name), &mut out.untimed)?;
        if fio.libaio && job.direct != Some(crate::Direct::Yes) && job.kind.is_none() {
            // fio's libaio queues only O_DIRECT I/O: on buffered files each I/O completes
            // within its io_submit, one at a time (fio's HOWTO). So does psync; io_uring would
            // keep iodepth buffered I/Os in flight, which fio's job never had.
            job.engine = Some(crate::EngineChoice::Psync);
            out.notes.push(format!(
                "job [{name}]: fio's libaio on buffered files completes each I/O within its submission, one at a time (fio's HOWTO: queued only with direct=1), so it runs with psync as under fio; ioengine=io_uring keeps buffered I/Os in flight"
            ));
        }
        if fio.overwrite {
            out.file.prepare = Some(true);
        }
        if let Some((low, high, middle)) = fio.size_range {
            out.notes.push(format!(
                "job [{name}]: filesize={}-{}: fio draws each file's size in the range; stormark makes every file {} (the range's middle, the same bytes on average)",
                crate::units::format_size(low),
                crate::units::format_size(high),
                crate::units::format_size(middle)
            ));
        }
        places.push(fio.place());
        if let Some(search) = fio.latency_search() {
            match &out.latency_search {
                Some(prev) if *prev != search => {
                    return Err(fail(format!(
                        "job [{name}]: latency_target differs from an earlier job's; one latency search per run"
                    )))
                }
                _ => out.latency_search = Some(search),
            }
        }
        out.file.jobs.push(job);
    }
    if out.file.jobs.is_empty() {
        return Err(fail("no job section: add one, such as [randread]".into()));
    }
    unique_names(&mut out.file.jobs);
    // One job per group runs as a plain sequence.
    let groups: std::collections::BTreeSet<_> =
        out.file.jobs.iter().map(|j| j.group.clone()).collect();
    if groups.len() == out.file.jobs.len() {
        for j in &mut out.file.jobs {
            j.group = None;
        }
    }
    if !unsupported.is_empty() {
        if lenient {
            out.ignored = unsupported;
        } else {
            return Err(fail(format!(
                "options stormark does not run: {}; run without them with --lenient",
                unsupported.join(", ")
            )));
        }
    }
    match settle_places(&mut out.file.jobs, &places).map_err(fail)? {
        Ok((target, is_file)) => {
            out.file.target = target;
            out.target_is_file = is_file;
        }
        Err(several) => out.several = Some(several),
    }
    Ok(out)
}

/// The run's target from each job's file or directory: one file or directory they all use;
/// or files in one directory (fio's `directory=` with a `filename=` per job), each job then
/// naming its own file in the run directory made there. Files in different directories, or
/// devices, are more than one target: the inner `Err`, each job then on its own (which a
/// TARGET of the run's own makes moot).
#[allow(clippy::type_complexity)]
fn settle_places(
    jobs: &mut [JobOpts],
    places: &[Option<(String, bool)>],
) -> Result<Result<(Option<String>, bool), FioTargets>, String> {
    let mut distinct: Vec<&(String, bool)> = Vec::new();
    for p in places.iter().flatten() {
        if !distinct.contains(&p) {
            distinct.push(p);
        }
    }
    match distinct.as_slice() {
        [] => return Ok(Ok((None, false))),
        [(one, is_file)] => {
            // Jobs that name one file share it, as in fio, also where a directory given as
            // TARGET replaces it: their file of that name in the run directory (a write job
            // and a later job reading or checking what it wrote). Not where a job asks for
            // several files (fio's nrfiles beside one filename): a file per worker, as before.
            let naming = places.iter().filter(|p| p.is_some()).count();
            let several = jobs.iter().any(|j| j.files.is_some_and(|n| n > 1));
            // A zoned job's clones share its file's zones, as fio's do.
            let zoned = jobs
                .iter()
                .any(|j| j.zoned == Some(true) && j.jobs.is_some_and(|n| n > 1));
            if *is_file && (naming > 1 || zoned) && !several {
                name_files(jobs, places)?;
            }
            return Ok(Ok((Some(one.clone()), *is_file)));
        }
        _ => {}
    }
    let parent = |(p, is_file): &(String, bool)| -> String {
        if !is_file {
            return p.trim_end_matches('/').to_string();
        }
        match p.rsplit_once('/') {
            Some(("", _)) => "/".into(),
            Some((d, _)) => d.to_string(),
            None => ".".into(),
        }
    };
    let dir = parent(distinct[0]);
    // Files in different directories, or devices: each its own target, each job on its own.
    if distinct.iter().any(|p| parent(p) != dir) || dir == "/dev" || dir.starts_with("/dev/") {
        return Ok(Err(FioTargets {
            of_job: places
                .iter()
                .map(|p| {
                    p.as_ref()
                        .and_then(|p| distinct.iter().position(|d| *d == p))
                })
                .collect(),
            targets: distinct.into_iter().cloned().collect(),
        }));
    }
    name_files(jobs, places)?;
    Ok(Ok((Some(dir), false)))
}

/// Each job that names a file gets its name as `filename`: its file in the run directory.
fn name_files(jobs: &mut [JobOpts], places: &[Option<(String, bool)>]) -> Result<(), String> {
    for (job, place) in jobs.iter_mut().zip(places) {
        let Some((path, true)) = place else { continue };
        let name = path.rsplit('/').next().unwrap_or(path);
        job.set(
            "filename",
            name,
            crate::workload::Source::Key(&format!("[{}]", job.name.clone().unwrap_or_default())),
        )
        .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// fio lets jobs share a name (`name=` in [global]); stormark's results key by it, so the
/// second and later get -2, -3, ...
fn unique_names(jobs: &mut [JobOpts]) {
    let mut seen: Vec<String> = Vec::new();
    for j in jobs {
        let base = j.name.clone().unwrap_or_default();
        let mut name = base.clone();
        let mut n = 1;
        while seen.contains(&name) {
            n += 1;
            name = format!("{base}-{n}");
        }
        seen.push(name.clone());
        j.name = Some(name);
    }
}

fn context_of(path: &str, name: &str) -> String {
    format!("[{name}] of {path}")
}

/// What fio options say beyond stormark's keys, settled once a job's lines are read.
#[derive(Default)]
struct FioState {
    time_based: bool,
    stonewall: bool,
    /// fio's `wait_for`: the job this one starts after.
    wait_for: Option<String>,
    /// fio's nfs engine's `nfs_url=`: the share's directory the job's files are in.
    nfs_url: Option<String>,
    /// fio's `filename=`, and `directory=` it lies in when relative.
    filename: Option<String>,
    directory: Option<String>,
    /// A file per clone (`/data/f.$jobnum`): the directory they would be made in.
    clone_dir: Option<String>,
    /// fio's `latency_target`, `latency_window` and `latency_percentile` (as a statistic's
    /// name: `p99.9`, `max`).
    latency_target: Option<std::time::Duration>,
    latency_window: Option<std::time::Duration>,
    latency_stat: Option<&'static str>,
    /// fio's `size`: the job's bytes over all its files.
    size: Option<u64>,
    /// fio's `rate_iops=R,W`: each job's cap of reads and of writes, I/Os a second (`None`:
    /// that direction uncapped).
    rate: Option<(Option<u64>, Option<u64>)>,
    /// fio's `rate=R,W`: the same in bytes a second.
    rate_bytes: Option<(Option<u64>, Option<u64>)>,
    /// fio's `loops`: passes over the job's size.
    loops: Option<u64>,
    /// fio's `number_ios`: I/Os each job does at most.
    number_ios: Option<u64>,
    /// fio's `overwrite`: the file is laid out before it is written.
    overwrite: bool,
    /// fio's `fallocate=none` (or `truncate`): nothing reserved before the writes.
    no_fallocate: bool,
    /// fio's `file_append`: writes at the end of the file.
    append: bool,
    /// fio's `steadystate=iops:3%` and its `steadystate_duration` (its window; without one,
    /// fio judges nothing).
    steady: Option<String>,
    steady_window: Option<String>,
    /// fio's `zonemode=none`: the zone keys say nothing.
    zones_off: bool,
    /// fio's `zonemode=zbd`: stormark's zoned mode.
    zbd: bool,
    /// Keys given in zone units (`offset=524z`): key, zones, where.
    zone_units: Vec<(String, u64, String)>,
    /// fio's `dedupe_mode=working_set`.
    dedupe_working_set: bool,
    /// fio's `do_verify`.
    do_verify: Option<bool>,
    /// The engine named last is fio's `libaio`.
    libaio: bool,
    /// The job has a `bssplit`, which decides its block sizes over `bs` and `bsrange`.
    has_bssplit: bool,
    /// fio's range of file sizes (`filesize=10M-100M`): its bounds and the size stormark
    /// makes every file.
    size_range: Option<(u64, u64, u64)>,
}

impl FioState {
    /// fio's latency target as stormark's search: `STAT<=TARGET` and the step time.
    fn latency_search(&self) -> Option<(String, Option<String>)> {
        let target = self.latency_target?;
        let stat = self.latency_stat.unwrap_or("max");
        Some((
            format!("{stat}<={}", crate::units::format_duration(target)),
            self.latency_window
                .map(|w| format!("{}s", w.as_secs().max(1))),
        ))
    }

    /// The job's file (`true`) or directory, as fio joins `directory` and a relative
    /// `filename`.
    fn place(&self) -> Option<(String, bool)> {
        if let Some(url) = &self.nfs_url {
            return Some((url.clone(), false));
        }
        match (&self.filename, &self.directory, &self.clone_dir) {
            (Some(f), _, _) if f.starts_with('/') || f.contains("://") => Some((f.clone(), true)),
            (Some(f), Some(d), _) => Some((format!("{}/{f}", d.trim_end_matches('/')), true)),
            (Some(f), None, _) => Some((f.clone(), true)),
            (None, _, Some(c)) => Some((c.clone(), false)),
            (None, Some(d), None) => Some((d.clone(), false)),
            (None, None, None) => None,
        }
    }

    /// fio's stop rule: without `time_based`, a job ends after one pass (or its `io_size`)
    /// or its `runtime`, whichever comes first.
    fn finish(
        &self,
        job: &mut JobOpts,
        context: &str,
        untimed: &mut Vec<String>,
    ) -> Result<(), SpecError> {
        if let (Some(rule), Some(window)) = (&self.steady, &self.steady_window) {
            job.set(
                "steady_state",
                &format!("{rule}:{window}"),
                crate::workload::Source::Key(context),
            )?;
        }
        if self.zones_off {
            (job.zone_size, job.zone_range, job.zone_skip) = (None, None, None);
        }
        if self.zbd {
            job.zoned = Some(true);
        }
        // fio's verify on a job that only reads checks what an earlier job of the file wrote
        // (stormark's --verify-only on the state that job kept); do_verify=0 checks nothing
        // (a writing job's headers still written, and its state kept).
        if job.verify == Some(true) {
            let rw = job.rw.unwrap_or(crate::Rw::Read);
            if rw.read_pct(job.rwmixread.unwrap_or(50)) == 100 && !rw.trims() {
                job.verify = None;
                job.verify_only = Some(self.do_verify != Some(false));
            } else if self.do_verify == Some(false) {
                job.verify_after = Some(false);
            }
        }
        // fio's working set (5% of the file unless given) is each job's own unless
        // `dedupe_global`; without `dedupe_mode=working_set` its keys say nothing.
        if self.dedupe_working_set {
            job.dedup_working_set = job.dedup_working_set.or(Some(5));
            job.dedup_global = job.dedup_global.or(Some(false));
        } else {
            job.dedup_working_set = None;
        }
        // fio's write-only job on a new file it neither reserves nor lays out (fallocate=none,
        // or file_append): stormark's fresh writes, in the files stormark makes for it. Not a
        // time-based one: fio's file keeps its length and a later job reads all of it (its
        // holes as zeros), where a fresh file holds only what the time let be written; such a
        // job keeps stormark's reserved layout, fio's default.
        let rw = job.rw.unwrap_or(crate::Rw::Read);
        if (self.no_fallocate || self.append)
            && !self.time_based
            && !self.overwrite
            && self.filename.is_none()
            && rw.read_pct(job.rwmixread.unwrap_or(50)) == 0
            && !rw.trims()
            && job.kind.is_none_or(|k| k == crate::LoadKind::File)
        {
            job.fresh = Some(true);
        }
        // A runtime given on the command line (fio --runtime, stormark --time) is the usual
        // companion of such a file: the request checks that one was.
        if self.time_based && job.time.is_none() {
            untimed.push(context.to_string());
        }
        let files = u64::from(job.files.unwrap_or(1));
        // fio's size is the job's over its files (filesize, each file's, wins).
        if let (Some(total), None) = (self.size, job.size) {
            job.size = Some((total / files).max(1));
        }
        let pass = self.size.or(job.size.map(|s| s.saturating_mul(files)));
        if let (false, Some(n), None, Some(pass)) =
            (self.time_based, self.loops, job.io_total, pass)
        {
            job.io_total = Some(pass.saturating_mul(n.max(1)));
        }
        if !self.time_based && job.time.is_some() && job.io_total.is_none() {
            job.io_total = pass;
        }
        // A share of the file or device (size=95%): its passes, counted once its length is
        // known.
        if !self.time_based && job.size_pct.is_some() && job.io_total.is_none() {
            job.loops = Some(self.loops.unwrap_or(1).min(u64::from(u32::MAX)) as u32);
        }
        // number_ios counts I/Os: as bytes at the block size (the mean of a range).
        if let Some(n) = self.number_ios {
            let bs = job.bs.map_or(4096, |b| b.min.midpoint(b.max));
            let bytes = n.saturating_mul(bs);
            job.io_total = Some(job.io_total.map_or(bytes, |t| t.min(bytes)));
        }
        // fio drops a buffered job's files from the page cache before each pass (each loop of
        // a time_based or looping job), unless invalidate=0.
        if job.invalidate != Some(crate::Invalidate::No) {
            job.invalidate = Some(crate::Invalidate::EachPass);
        }
        if let Some(caps) = self.rate {
            job.rate_iops = rate_of_caps(job, caps, false);
        } else if let Some(caps) = self.rate_bytes {
            job.rate_iops = rate_of_caps(job, caps, true);
        }
        Ok(())
    }
}

/// fio's `rate_iops=R,W` or `rate=R,W` (`bytes`) as stormark's schedule of I/Os: each of a
/// job's clones caps its reads at R and its writes at W a second, so the most I/Os a second
/// that keep both caps at the job's read share (and mean block size), over its `numjobs`
/// clones. At least one a second.
fn rate_of_caps(
    job: &JobOpts,
    (read, write): (Option<u64>, Option<u64>),
    bytes: bool,
) -> Option<u32> {
    let rw = job.rw.unwrap_or(crate::Rw::Read);
    let reads = f64::from(rw.read_pct(job.rwmixread.unwrap_or(50))) / 100.0;
    let mean = |l: &[(u64, u8)]| {
        l.iter()
            .map(|&(size, pct)| size as f64 * f64::from(pct))
            .sum::<f64>()
            / 100.0
    };
    let bs = match (&job.bs_split, job.bs) {
        (Some(split), _) => [mean(split.reads()), mean(split.writes())],
        (None, Some(b)) => [b.min.midpoint(b.max) as f64; 2],
        (None, None) => [4096.0; 2],
    };
    let bs = if bytes { bs } else { [1.0; 2] };
    let cap = |bytes: Option<u64>, share: f64, bs: f64| {
        bytes
            .filter(|_| share > 0.0)
            .map(|b| b as f64 / (share * bs))
    };
    let per_job = match (cap(read, reads, bs[0]), cap(write, 1.0 - reads, bs[1])) {
        (Some(a), Some(b)) => a.min(b),
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => return None,
    };
    let total = per_job * f64::from(job.jobs.unwrap_or(1));
    Some(total.round().clamp(1.0, f64::from(u32::MAX)) as u32)
}

mod expr;
mod keys;
mod lines;
mod print;
pub use print::{fio_check, to_fio};

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_corpus;
#[cfg(test)]
mod tests_hostile;
#[cfg(test)]
mod tests_layout;
#[cfg(test)]
mod tests_run;

#[cfg(test)]
mod looks_tests {
    use super::looks_like_fio;

    #[test]
    fn a_fio_job_file_is_told_by_its_first_section() {
        assert!(looks_like_fio("[global]\nbs=4k\n[j]\nrw=read\n"));
        assert!(looks_like_fio(
            "; comment\n# another\n\n  [job1]\nrw=write\n"
        ));
        assert!(!looks_like_fio("size = \"1g\"\n[[job]]\nname = \"a\"\n"));
        assert!(!looks_like_fio("[[job]]\nrw = \"read\"\n"));
        assert!(!looks_like_fio("rw=read\n[j]\n"));
        assert!(!looks_like_fio("[]\n"));
        assert!(!looks_like_fio(""));
        assert!(!looks_like_fio("\u{0}\u{1}binary"));
    }
}
