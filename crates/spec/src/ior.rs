//! IOR's command line and script format read into stormark jobs (`stormark run --ior`), and
//! a workload written back as IOR's command line (`--print-ior`) where it has one.
//!
//! IOR (github.com/hpc/ior) runs a test as: each task writes its block (`-b`) in transfers
//! (`-t`) of each segment (`-s`), to its own file (`-F`) or its region of one shared file,
//! then reads it back (`-w -r`), each task another's with `-C`. Its POSIX API is one
//! synchronous call at a time: stormark's `psync` engine at depth 1. IOR writes new files
//! (removed after the test unless `-k`): the write job is `fresh`, its blocks allocated by
//! the writes.

use crate::jobfile::JobFile;
use crate::units::{format_size, parse_size};
use crate::{Job, JobOpts, Rw, SpecError, Workload};

#[cfg(test)]
mod tests;

/// One IOR test's parameters, as its options give them (IOR's defaults otherwise).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ior {
    /// `-t`: bytes per transfer (IOR: 256 KiB).
    pub xfer: u64,
    /// `-b`: bytes each task writes in each segment (IOR: 1 MiB).
    pub block: u64,
    /// `-s`: segments (IOR: 1).
    pub segments: u32,
    /// `-F`: a file per task.
    pub file_per_proc: bool,
    /// `-w`.
    pub write: bool,
    /// `-r`.
    pub read: bool,
    /// `-C`: each task reads another's data.
    pub reorder: bool,
    /// `-e`: fsync after the write.
    pub fsync: bool,
    /// `-Y`: fsync after each write.
    pub fsync_each: bool,
    /// `-k`: keep the files.
    pub keep: bool,
    /// `-z`: random offsets, each transfer once.
    pub random: bool,
    /// `-i`: repetitions.
    pub iterations: u32,
    /// `-o`: the test file's path.
    pub test_file: Option<String>,
    /// `-D`: stonewall after this many seconds.
    pub deadline_s: Option<u32>,
    /// `--posix.odirect` (IOR 3: `-B`): O_DIRECT.
    pub direct: bool,
    /// `-N`: tasks.
    pub tasks: u32,
}

impl Default for Ior {
    fn default() -> Self {
        Ior {
            xfer: 256 << 10,
            block: 1 << 20,
            segments: 1,
            file_per_proc: false,
            write: false,
            read: false,
            reorder: false,
            fsync: false,
            fsync_each: false,
            keep: false,
            random: false,
            iterations: 1,
            test_file: None,
            deadline_s: None,
            direct: false,
            tasks: 1,
        }
    }
}

/// What `--ior` gives a run: its jobs, and the run's own options IOR's name.
#[derive(Debug, Clone, PartialEq)]
pub struct IorRun {
    /// The jobs (a write and a read job per test, as its `-w`/`-r` ask).
    pub file: JobFile,
    /// `-k`: keep the run directory (`--keep`).
    pub keep: bool,
    /// `-i`: repetitions (`--repeat`).
    pub repeat: u32,
    /// `-o`'s directory: the target where none is typed.
    pub dir: Option<String>,
    /// What was approximated, for the results' notes.
    pub notes: Vec<String>,
}

/// The accepted form, for errors.
pub const IOR_FORM: &str = "IOR's options -a POSIX -t -b -s -F -w -r -C -e -Y -k -z -i -o -D -N --posix.odirect (-B), and -f SCRIPT (docs/ior-mdtest.md)";

/// The options IOR takes a value for (its getopt string), those stormark runs or not.
const WITH_VALUE: &str = "abdDfGiJjlMNoOQsTtUX";

/// The words of `args` as a shell splits them, or why not.
fn words(args: &str) -> Result<Vec<String>, SpecError> {
    shlex::split(args).ok_or_else(|| SpecError::JobFile {
        path: "--ior".into(),
        message: "unbalanced quotes; give IOR's options as on its command line, such as '-a POSIX -t 1m -b 64m -F -w -r'".into(),
    })
}

/// The script path `-f FILE` names in `args`, if any (read by the caller).
pub fn ior_script(args: &str) -> Result<Option<String>, SpecError> {
    let w = words(args)?;
    Ok(options(&w)?
        .into_iter()
        .find(|(k, _)| k == "f")
        .and_then(|(_, v)| v))
}

/// IOR's options as (name, value) pairs: `-t 1m`, `-t1m`, clustered switches `-wrF`, and
/// IOR 4's long forms `--posix.odirect`.
fn options(words: &[String]) -> Result<Vec<(String, Option<String>)>, SpecError> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        i += 1;
        if let Some(long) = w.strip_prefix("--") {
            let (k, v) = match long.split_once('=') {
                Some((k, v)) => (k.to_string(), Some(v.to_string())),
                None => (long.to_string(), None),
            };
            out.push((format!("-{k}"), v));
            continue;
        }
        let Some(flags) = w.strip_prefix('-').filter(|f| !f.is_empty()) else {
            return Err(SpecError::JobFile {
                path: "--ior".into(),
                message: format!("{}: not an option; expected {IOR_FORM}", crate::shown(w)),
            });
        };
        for (at, c) in flags.char_indices() {
            if WITH_VALUE.contains(c) {
                let rest = &flags[at + c.len_utf8()..];
                let value = if rest.is_empty() {
                    let v = words.get(i).cloned();
                    i += 1;
                    v
                } else {
                    Some(rest.to_string())
                };
                let Some(value) = value else {
                    return Err(SpecError::JobFile {
                        path: "--ior".into(),
                        message: format!("-{c}: needs a value; expected {IOR_FORM}"),
                    });
                };
                out.push((c.to_string(), Some(value)));
                break;
            }
            out.push((c.to_string(), None));
        }
    }
    Ok(out)
}

/// An option's name as [`Ior::set`] takes it: a short letter as it is (`F`, `C`), a long
/// option (`-posix.odirect`, from `--posix.odirect`) without its dash, in lower case.
fn key_of(k: &str) -> String {
    match k.strip_prefix('-') {
        Some(long) => long.to_ascii_lowercase(),
        None => k.to_string(),
    }
}

fn bad(option: &str, value: &str, expected: &str) -> SpecError {
    SpecError::invalid(&format!("--ior -{option}"), value, expected)
}

fn size(option: &str, value: &str) -> Result<u64, SpecError> {
    parse_size(value)
        .filter(|n| *n > 0 && *n <= 1 << 50)
        .ok_or_else(|| bad(option, value, "a size such as 1m or 64k (1024-based)"))
}

fn number(option: &str, value: &str) -> Result<u32, SpecError> {
    value
        .trim()
        .parse::<u32>()
        .ok()
        .filter(|n| (1..=1 << 20).contains(n))
        .ok_or_else(|| bad(option, value, "a whole number from 1, such as 4"))
}

impl Ior {
    /// Sets one option (IOR's short letter, or a script's long name); `Ok(false)` for an
    /// option stormark does not run.
    fn set(&mut self, key: &str, value: Option<&str>) -> Result<bool, SpecError> {
        let v = value.unwrap_or("");
        let on = |v: &str| !matches!(v.trim(), "0" | "false" | "no");
        match key {
            "a" | "api" => {
                if !v.eq_ignore_ascii_case("posix") {
                    return Err(bad(
                        "a",
                        v,
                        "POSIX: stormark runs IOR's POSIX API (MPI-IO, HDF5 and the others are MPI's libraries)",
                    ));
                }
            }
            "t" | "transfersize" => self.xfer = size("t", v)?,
            "b" | "blocksize" => self.block = size("b", v)?,
            "s" | "segmentcount" => self.segments = number("s", v)?,
            "F" | "fileperproc" => self.file_per_proc = value.is_none_or(on),
            "w" | "writefile" => self.write = value.is_none_or(on),
            "r" | "readfile" => self.read = value.is_none_or(on),
            "C" | "reordertasks" => self.reorder = value.is_none_or(on),
            "e" | "fsync" => self.fsync = value.is_none_or(on),
            "Y" | "fsyncperwrite" => self.fsync_each = value.is_none_or(on),
            "k" | "keepfile" => self.keep = value.is_none_or(on),
            "z" | "randomoffset" => self.random = value.is_none_or(on),
            "B" | "useo_direct" | "posix.odirect" => self.direct = value.is_none_or(on),
            "i" | "repetitions" => self.iterations = number("i", v)?,
            "N" | "numtasks" => self.tasks = number("N", v)?,
            "D" | "deadlineforstonewalling" => {
                let n = v
                    .trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|n| *n <= 86_400)
                    .ok_or_else(|| bad("D", v, "seconds, such as 30 (0: none)"))?;
                self.deadline_s = (n > 0).then_some(n);
            }
            "o" | "testfile" => {
                if v.is_empty() || v.chars().any(char::is_control) {
                    return Err(bad("o", v, "a path such as /mnt/pfs/testFile"));
                }
                self.test_file = Some(v.to_string());
            }
            "c" | "collective" if value.is_none_or(on) => {
                return Err(bad(
                    "c",
                    v,
                    "no -c: collective I/O is MPI-IO's, not POSIX's (leave out -c)",
                ))
            }
            "c" | "collective" => {}
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// IOR's command line for these parameters (what [`parse_ior`] reads back as them).
    pub fn to_args(&self) -> String {
        let mut out = format!(
            "-a POSIX -t {} -b {} -s {}",
            format_size(self.xfer),
            format_size(self.block),
            self.segments
        );
        for (on, flag) in [
            (self.file_per_proc, "-F"),
            (self.write, "-w"),
            (self.read, "-r"),
            (self.reorder, "-C"),
            (self.fsync, "-e"),
            (self.fsync_each, "-Y"),
            (self.keep, "-k"),
            (self.random, "-z"),
            // IOR 4's spelling (IOR 3's -B reads the same here).
            (self.direct, "--posix.odirect"),
        ] {
            if on {
                out.push(' ');
                out.push_str(flag);
            }
        }
        if self.iterations != 1 {
            out.push_str(&format!(" -i {}", self.iterations));
        }
        if self.tasks != 1 {
            out.push_str(&format!(" -N {}", self.tasks));
        }
        if let Some(d) = self.deadline_s {
            out.push_str(&format!(" -D {d}"));
        }
        if let Some(o) = &self.test_file {
            out.push_str(&format!(" -o {}", shlex::try_quote(o).unwrap_or_default()));
        }
        out
    }

    /// The stormark jobs of this test, named `PREFIXwrite` and `PREFIXread`.
    fn jobs(&self, prefix: &str, notes: &mut Vec<String>) -> Result<Vec<JobOpts>, SpecError> {
        let (write, read) = if self.write || self.read {
            (self.write, self.read)
        } else {
            // IOR without -w or -r writes and reads.
            (true, true)
        };
        if !self.file_per_proc && self.segments > 1 {
            return Err(bad(
                "s",
                &self.segments.to_string(),
                "1 on a shared file (its segments interleave the tasks' blocks; not yet): add -F for a file per task, or give the bytes in -b",
            ));
        }
        if !self.file_per_proc && self.reorder && read {
            return Err(bad(
                "C",
                "",
                "-F with -C: a task reading another's region of a shared file is not yet; add -F",
            ));
        }
        if self.block < self.xfer || !self.block.is_multiple_of(self.xfer) {
            return Err(bad(
                "b",
                &format_size(self.block),
                "a multiple of -t, as IOR asks",
            ));
        }
        let mut common: Vec<(&str, String)> = vec![
            ("engine", "psync".into()),
            ("iodepth", "1".into()),
            ("bs", self.xfer.to_string()),
            ("jobs", self.tasks.to_string()),
            ("direct", self.direct.to_string()),
            // IOR leaves the page cache as the write left it: a buffered read after the
            // write reads what is cached, as IOR's does (stormark drops it otherwise).
            ("invalidate", "0".into()),
        ];
        if self.file_per_proc {
            common.push((
                "size",
                (self.block.saturating_mul(u64::from(self.segments))).to_string(),
            ));
        } else {
            let name = self
                .test_file
                .as_deref()
                .and_then(|p| p.rsplit('/').next())
                .and_then(crate::options::ior_file_name)
                .unwrap_or("testFile");
            common.push(("filename", name.to_string()));
            common.push(("size", self.block.to_string()));
            common.push(("offset_increment", self.block.to_string()));
        }
        if let Some(d) = self.deadline_s {
            common.push(("time", format!("{d}s")));
        }
        let mut jobs = Vec::new();
        let job = |name: String, rw: &str, extra: &[(&str, String)]| {
            let mut o = JobOpts {
                name: Some(name),
                ..JobOpts::default()
            };
            let mut pairs = common.clone();
            pairs.push(("rw", rw.into()));
            if self.random {
                pairs.push(("random_map", "true".into()));
            }
            pairs.extend(extra.iter().cloned());
            for (k, v) in pairs {
                o.set(k, &v, crate::Source::Key("--ior"))?;
            }
            Ok::<_, SpecError>(o)
        };
        if write {
            let mut extra = Vec::new();
            // IOR's new files, unless cut by -D before a read: a file written partly would
            // read short, so the read finds it laid out instead.
            if self.deadline_s.is_none() || !read {
                extra.push(("fresh", "true".to_string()));
            } else {
                notes.push(format!("{prefix}write: -D with -r: the files are laid out before the write (not IOR's new files), so the read finds data past where the deadline cut the write"));
            }
            if self.fsync {
                extra.push(("end_fsync", "true".into()));
            }
            if self.fsync_each {
                extra.push(("fsync", "1".into()));
            }
            let rw = if self.random { "randwrite" } else { "write" };
            jobs.push(job(format!("{prefix}write"), rw, &extra)?);
        }
        if read {
            let mut extra = Vec::new();
            if self.reorder && self.tasks > 1 {
                extra.push(("file_shift", "1".to_string()));
            }
            let rw = if self.random { "randread" } else { "read" };
            jobs.push(job(format!("{prefix}read"), rw, &extra)?);
        }
        Ok(jobs)
    }
}

/// Reads IOR's command line `args`, and the script `-f` names (its text given as `script`,
/// `IOR START` ... `RUN` ... `IOR STOP`, each `RUN` a test with the settings so far, the
/// command line's below them), into stormark's jobs. Options stormark does not run are
/// refused by name, all in one line.
pub fn parse_ior(args: &str, script: Option<&str>) -> Result<IorRun, SpecError> {
    let mut base = Ior::default();
    let mut unknown = Vec::new();
    for (k, v) in options(&words(args)?)? {
        if k == "f" {
            continue;
        }
        if !base.set(&key_of(&k), v.as_deref())? {
            unknown.push(format!("-{k}"));
        }
    }
    let tests = match script {
        None => vec![base],
        Some(text) => script_tests(text, base, &mut unknown)?,
    };
    if !unknown.is_empty() {
        return Err(SpecError::JobFile {
            path: "--ior".into(),
            message: format!(
                "IOR options stormark does not run: {}; expected {IOR_FORM}",
                unknown.join(", ")
            ),
        });
    }
    let first = tests.first().cloned().unwrap_or_default();
    if tests.iter().any(|t| t.iterations != first.iterations) {
        return Err(bad(
            "i",
            "",
            "the same repetitions in every test of a script (stormark repeats the whole run)",
        ));
    }
    let mut notes = Vec::new();
    let mut jobs = Vec::new();
    for (n, t) in tests.iter().enumerate() {
        let prefix = if tests.len() > 1 {
            format!("t{}-", n + 1)
        } else {
            String::new()
        };
        jobs.extend(t.jobs(&prefix, &mut notes)?);
    }
    let dir = first
        .test_file
        .as_deref()
        .and_then(|p| p.rsplit_once('/'))
        .map(|(d, _)| if d.is_empty() { "/" } else { d }.to_string());
    Ok(IorRun {
        file: JobFile {
            defaults: JobOpts::default(),
            target: None,
            prepare: None,
            jobs,
        },
        keep: tests.iter().any(|t| t.keep),
        repeat: first.iterations,
        dir,
        notes,
    })
}

/// The tests of an IOR script: `key=value` lines between `IOR START` and `IOR STOP`, a test
/// at each `RUN` with the settings so far (over `base`, the command line's).
fn script_tests(text: &str, base: Ior, unknown: &mut Vec<String>) -> Result<Vec<Ior>, SpecError> {
    let fail = |line: usize, what: String| SpecError::JobFile {
        path: "--ior -f".into(),
        message: format!("line {line}: {what}"),
    };
    let mut tests = Vec::new();
    let mut current = base;
    let mut started = false;
    let mut stopped = false;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let upper = line.to_ascii_uppercase();
        match upper.split_whitespace().collect::<Vec<_>>().as_slice() {
            ["IOR", "START"] => {
                started = true;
                continue;
            }
            ["IOR", "STOP"] => {
                stopped = true;
                break;
            }
            ["RUN"] if started => {
                tests.push(current.clone());
                continue;
            }
            _ => {}
        }
        if !started {
            return Err(fail(n + 1, "expected IOR START before the settings".into()));
        }
        let Some((k, v)) = line.split_once('=') else {
            return Err(fail(
                n + 1,
                format!(
                    "{}: expected key=value, RUN or IOR STOP",
                    crate::shown(line)
                ),
            ));
        };
        let key = k.trim().to_ascii_lowercase();
        if !current.set(&key, Some(v.trim()))? {
            unknown.push(format!("{} (line {})", k.trim(), n + 1));
        }
    }
    if !started || !stopped {
        return Err(fail(
            text.lines().count(),
            "expected IOR START ... RUN ... IOR STOP".into(),
        ));
    }
    if tests.is_empty() {
        return Err(fail(
            text.lines().count(),
            "no RUN: a test runs at each RUN line".into(),
        ));
    }
    Ok(tests)
}

/// IOR's command line for `workload` (`--print-ior`), where it has one: one test of
/// per-worker files (`-F`), a write job, a read job or a write then a read of the same
/// size, at depth 1; anything else is refused, naming what IOR lacks.
pub fn to_ior(workload: &Workload, repeat: u32) -> Result<String, String> {
    let jobs = &workload.jobs;
    let refuse = |why: String| Err(format!("--print-ior: {why}"));
    let first = match jobs.first() {
        Some(j) => j,
        None => return refuse("no job".into()),
    };
    if jobs.len() > 2 {
        return refuse(format!(
            "{} jobs: IOR's one test is a write, a read, or a write then a read",
            jobs.len()
        ));
    }
    let check = |j: &Job| -> Result<(), String> {
        let one_pass = j.io_total.is_none() && j.loops.is_none();
        if j.kind != crate::LoadKind::File
            || !matches!(j.rw, Rw::Read | Rw::Write | Rw::RandRead | Rw::RandWrite)
            || j.iodepth != 1
            || j.group.is_some()
            || j.filename.is_some()
            || j.files != 1
            || j.bs.min != j.bs.max
            || j.size.is_none()
            || !one_pass
            || (j.random_pct > 0 && (j.random_pct < 100 || !j.random_map))
            || j.rate_iops.is_some()
            || j.verify
        {
            return Err(format!("job {}: no IOR equivalent (IOR's POSIX API writes or reads, sequentially or each transfer once at random, one call at a time: --iodepth 1, one --bs, a --size, a file per worker)", j.name));
        }
        Ok(())
    };
    for j in jobs {
        check(j).map_err(|why| format!("--print-ior: {why}"))?;
    }
    let (w, r) = match jobs.as_slice() {
        [a] if a.read_pct() == 0 => (Some(a), None),
        [a] => (None, Some(a)),
        [a, b] if a.read_pct() == 0 && b.read_pct() == 100 => (Some(a), Some(b)),
        _ => return refuse("two jobs that are not a write then a read".into()),
    };
    if let (Some(a), Some(b)) = (w, r) {
        let same = a.jobs == b.jobs
            && a.size == b.size
            && a.bs == b.bs
            && a.direct == b.direct
            && a.time == b.time
            && a.random_pct == b.random_pct;
        if !same {
            return refuse(format!("jobs {} and {}: IOR reads with the write's tasks, sizes and transfers; give both the same", a.name, b.name));
        }
    }
    let j = w.or(r).unwrap_or(first);
    let ior = Ior {
        xfer: j.bs.max,
        block: j.size.unwrap_or(0),
        segments: 1,
        file_per_proc: true,
        write: w.is_some(),
        read: r.is_some(),
        reorder: r.is_some_and(|r| r.file_shift > 0),
        fsync: w.is_some_and(|w| w.end_fsync),
        fsync_each: w.is_some_and(|w| w.fsync == 1),
        keep: false,
        random: j.random_pct == 100,
        iterations: repeat.max(1),
        test_file: None,
        deadline_s: j.time.map(|t| t.as_secs().max(1) as u32),
        direct: j.direct == crate::Direct::Yes,
        tasks: j.jobs,
    };
    Ok(ior.to_args())
}
