//! The suites: standard batteries of runs (each disk alone then all together, the file service
//! from every client, a database's pattern, single-I/O latency and the latency target, the
//! network mesh, the object store), each step a stormark command line that the binary runs as
//! a command of its own and the summary cites, so any step can be run again by hand.

/// The suites, with what each measures (`stormark suite --list`).
pub const SUITES: &[(&str, &str)] = &[
    ("disks", "each disk (TARGET) alone, then all together: 4 KiB random write and read, 1 MiB sequential write and read"),
    ("fileserver", "a shared path from every agent: random and sequential reads and writes and a 70/30 mix, 3 repetitions each"),
    ("database", "an OLTP database's I/O (8 KiB random 70/30 on data files beside a sequential, fdatasync'd log), then the most commits under a latency target"),
    ("latency", "ioping-style single-I/O read and write latency, then the most IOPS under a latency target (p99<=2ms)"),
    ("network", "every pair of agents alone, then all at once (needs --agents, two or more)"),
    ("s3", "PUT, GET and a mix of small and large objects (needs --endpoint and --bucket)"),
    ("interference", "one agent (the first) writes hard while the others read at 100 I/Os a second each: the victims' read p99 before, during and after (needs --agents, two or more)"),
    ("acceptance", "network, disks, fileserver, latency and s3 in that order; stops early when the network fails"),
    ("ssd", "an SSD's steady state (SNIA PTS): the device or file written twice over, then 4 KiB random-write rounds until five agree; fresh against steady"),
    ("spec", "a device against its spec sheet: sequential read and write of 1 MiB at depth 8, random read and write of 4 KiB at depth 32 (give its figures with --spec-read-mbs, --spec-write-mbs, --spec-read-iops, --spec-write-iops)"),
];

/// Why a suite stops before its remaining steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuiteStop {
    /// In a sentence, for the summary's notes.
    pub why: String,
    /// A refused step before any step measured anything: the suite as a whole was a mistake
    /// (exit 2).
    pub refused_first: bool,
    /// The suite has what it came for (an SSD's rounds are steady): the steps left are not
    /// run and not counted, and the suite ends as it would at its last step.
    pub done: bool,
}

/// Whether suite `suite` stops after step outcome `o` (`before`: the outcomes so far): a
/// refused step (the steps after it would be refused too), or the acceptance suite's network
/// failing (storage measured over a failing network would mislead).
pub fn suite_stops(
    suite: &str,
    o: &stormark_stats::StepOutcome,
    before: &[stormark_stats::StepOutcome],
) -> Option<SuiteStop> {
    use stormark_stats::StepResult;
    if o.result == StepResult::Refused {
        return Some(SuiteStop {
            why: format!(
                "stopped: step {} was refused (its message is above); the steps after it would be too",
                o.name
            ),
            refused_first: !before.iter().any(|s| {
                matches!(
                    s.result,
                    StepResult::Pass | StepResult::Missed | StepResult::Failed
                )
            }),
            done: false,
        });
    }
    if let Some(stop) = device::ssd_steady(suite, o, before) {
        return Some(stop);
    }
    (o.part == "network" && suite == "acceptance" && o.result == StepResult::Failed).then(|| {
        SuiteStop {
            why: "stopped early: the network failed; storage measured over a failing network would mislead".into(),
            refused_first: false,
            done: false,
        }
    })
}

/// What the command line gave a suite.
#[derive(Debug, Clone, Default)]
pub struct SuiteOptions {
    /// TARGETS as given: disks, or the directory for the other suites (the first).
    pub targets: Vec<String>,
    /// Seconds per step and small files: for trying a suite.
    pub smoke: bool,
    /// Each step's measured time instead of the suite's.
    pub time: Option<String>,
    /// The agents, one address each (`dns:` names already resolved); empty for this host.
    pub agents: Vec<String>,
    /// What every distributed step also takes (`--token-file F`, `--tls-ca F`).
    pub distributed: Vec<String>,
    /// The latency suite's (and the database's commit) target instead of the default.
    pub target_latency: Option<String>,
    /// What every S3 step takes (`--endpoint URL --bucket B ...`); `None`: no object store.
    pub s3: Option<Vec<String>>,
    /// Expectations: (a step name or the part of one, the `--expect` list).
    pub expect: Vec<(String, String)>,
    /// The spec suite's figures.
    pub spec: SpecSheet,
    /// The ssd suite's most measurement rounds ([`SSD_ROUNDS`] when `None`).
    pub rounds: Option<u32>,
}

/// One step of a suite: a stormark command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuiteStep {
    /// Unique within the suite, usable in a file name (`disks/sdb/randread-4k`).
    pub name: String,
    /// The suite it belongs to (`disks` within `acceptance`).
    pub part: &'static str,
    /// The workload, the same for every subject (`randread-4k`): what is compared.
    pub workload: String,
    /// What is compared with the others of the same workload: a disk, a host.
    pub subject: Option<String>,
    /// Steps sharing this run at the same time (every disk at once).
    pub together: Option<String>,
    /// The arguments after the program's name (`run /mnt/a --rw randread ...`); empty when
    /// skipped.
    pub args: Vec<String>,
    /// A file this step reads, written into the suite's directory first: (name, text).
    pub file: Option<(String, String)>,
    /// Why the step does not run here.
    pub skip: Option<String>,
}

/// The database's job file: data files and a log at once (`DATA_JOBS` workers on the data).
fn database_job(smoke: bool) -> String {
    let (size, log_size) = if smoke { ("16m", "8m") } else { ("1g", "256m") };
    format!(
        "# An OLTP database's I/O: 8 KiB random reads and writes (70/30) on its data files,\n\
         # beside the sequential log, each 8 KiB write made durable (fdatasync) before the next.\n\
         [[job]]\nname = \"data\"\ngroup = \"oltp\"\nrw = \"randrw\"\nrwmixread = 70\nbs = \"8k\"\n\
         direct = true\niodepth = 8\njobs = 4\nfiles = 4\nsize = \"{size}\"\n\n\
         [[job]]\nname = \"log\"\ngroup = \"oltp\"\nrw = \"write\"\nbs = \"8k\"\nengine = \"psync\"\n\
         fdatasync = 1\njobs = 1\nsize = \"{log_size}\"\n"
    )
}

/// The interference suite's job file: the victims' light reads on every agent but the first
/// (100 a second on each, as the rate is shared among them), with the aggressor's heavy writes
/// on the first when `aggressor`.
fn interference_job(victims: usize, aggressor: bool) -> String {
    let mut text = format!(
        "# The victims: 4 KiB reads at 100 a second on each host but the first, their latency\n\
         # measured from the schedule.\n\
         [[job]]\nname = \"victim\"\ngroup = \"interference\"\nrw = \"randread\"\nbs = \"4k\"\n\
         direct = true\niodepth = 1\nrate_iops = {}\nhosts = \"1-{victims}\"\n",
        victims * 100
    );
    if aggressor {
        text.push_str(
            "\n# The aggressor: 64 KiB random writes at depth 32 from 4 workers on the first host.\n\
             [[job]]\nname = \"aggressor\"\ngroup = \"interference\"\nrw = \"randwrite\"\n\
             bs = \"64k\"\ndirect = true\niodepth = 32\njobs = 4\nhosts = [0]\n",
        );
    }
    text
}

/// A short label for a target, usable in a file name: `/dev/sdb` is `sdb`, `/mnt/a/` is `a`.
fn label(target: &str) -> String {
    let base = std::path::Path::new(target)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| target.to_string());
    let clean: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    match clean.trim_matches('.') {
        "" => "target".into(),
        c => c.to_string(),
    }
}

/// Labels of many targets, made unique (`a`, `a-2`).
fn labels(targets: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in targets {
        let base = label(t);
        let mut l = base.clone();
        let mut n = 2;
        while out.contains(&l) {
            l = format!("{base}-{n}");
            n += 1;
        }
        out.push(l);
    }
    out
}

/// The steps of suite `name`, or why it cannot run (a user error).
pub fn suite_steps(name: &str, o: &SuiteOptions) -> Result<Vec<SuiteStep>, String> {
    let parts: &[&'static str] = match name {
        "disks" => &["disks"],
        "fileserver" => &["fileserver"],
        "database" => &["database"],
        "latency" => &["latency"],
        "network" => &["network"],
        "s3" => &["s3"],
        "interference" => &["interference"],
        "acceptance" => &["network", "disks", "fileserver", "latency", "s3"],
        "spec" => &["spec"],
        "ssd" => &["ssd"],
        _ => {
            let names: Vec<&str> = SUITES.iter().map(|s| s.0).collect();
            return Err(format!(
                "suite {name:?}: no such suite; the suites are {} (stormark suite --list)",
                names.join(", ")
            ));
        }
    };
    // Alone, a suite that cannot run here is a mistake; within acceptance, a skipped step.
    if name == "network" && o.agents.len() < 2 {
        return Err("the network suite measures between agents: give --agents with two or more, such as node1:7878,node2:7878".into());
    }
    if name == "interference" && o.agents.len() < 2 {
        return Err("the interference suite runs an aggressor beside its victims on other hosts: give --agents with two or more, such as node1:7878,node2:7878".into());
    }
    if name == "spec" && o.spec == SpecSheet::default() {
        return Err("the spec suite measures a device against its spec sheet: give one or more of its figures, such as --spec-read-mbs 550 --spec-write-mbs 520 --spec-read-iops 98k --spec-write-iops 90k".into());
    }
    if name == "s3" && o.s3.is_none() {
        return Err(
            "the s3 suite needs an object store: give --endpoint URL and --bucket NAME".into(),
        );
    }
    let mut steps = Vec::new();
    for part in parts {
        steps.extend(match *part {
            "disks" => disks(o),
            "fileserver" => fileserver(o),
            "database" => database(o),
            "latency" => latency(o),
            "network" => network(o),
            "interference" => interference(o),
            "spec" => device::spec(o),
            "ssd" => device::ssd(o),
            _ => s3(o),
        });
    }
    apply_expectations(&mut steps, &o.expect, name)?;
    Ok(steps)
}

/// `--expect STEP:LIST`: each list joins the `--expect` of the steps whose name contains STEP;
/// a STEP that names no step is a mistake.
pub(crate) fn apply_expectations(
    steps: &mut [SuiteStep],
    expect: &[(String, String)],
    suite: &str,
) -> Result<(), String> {
    for (pattern, _) in expect {
        if pattern.is_empty() {
            return Err("--expect: give STEP:LIST, such as randread-4k:iops=50k,p99=2ms".into());
        }
        if !steps.iter().any(|s| s.name.contains(pattern.as_str())) {
            return Err(format!(
                "--expect {pattern}: no step of suite {suite} is named so; its steps are {}",
                steps
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    for s in steps.iter_mut() {
        let lists: Vec<&str> = expect
            .iter()
            .filter(|(p, _)| s.name.contains(p.as_str()))
            .map(|(_, l)| l.as_str())
            .collect();
        if !lists.is_empty() && s.skip.is_none() {
            s.args.extend(["--expect".to_string(), lists.join(",")]);
        }
    }
    Ok(())
}

/// The four workloads of a disk: (name, flags).
const DISK_WORKLOADS: &[(&str, &[&str])] = &[
    ("randwrite-4k", &["--rw", "randwrite", "--bs", "4k"]),
    ("randread-4k", &["--rw", "randread", "--bs", "4k"]),
    ("write-1m", &["--rw", "write", "--bs", "1m"]),
    ("read-1m", &["--rw", "read", "--bs", "1m"]),
];

/// The file-service workloads.
const FILESERVER_WORKLOADS: &[(&str, &[&str])] = &[
    ("randread-4k", &["--rw", "randread", "--bs", "4k"]),
    ("randwrite-4k", &["--rw", "randwrite", "--bs", "4k"]),
    ("read-1m", &["--rw", "read", "--bs", "1m"]),
    ("write-1m", &["--rw", "write", "--bs", "1m"]),
    (
        "randrw-70-30",
        &["--rw", "randrw", "--rwmixread", "70", "--bs", "4k"],
    ),
];

/// The `--bs` of a workload's flags.
fn bs_of<'a>(flags: &[&'a str]) -> Option<&'a str> {
    flags.windows(2).find(|w| w[0] == "--bs").map(|w| w[1])
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

impl SuiteOptions {
    /// The directory the file suites use (the first target; the current directory if none).
    fn dir(&self) -> String {
        self.targets.first().cloned().unwrap_or_else(|| ".".into())
    }

    /// `--time` of a step: the suite's, the user's, or a second when smoking.
    fn time(&self, full: &str) -> Vec<String> {
        let t = match (&self.time, self.smoke) {
            (Some(t), _) => t.clone(),
            (None, true) => "1s".into(),
            (None, false) => full.into(),
        };
        vec!["--time".into(), t]
    }

    /// Sizing: `--auto` on this host, with small files when smoking (flags win over
    /// --auto). Agents are not sized from their own hosts yet (`--auto` is refused with
    /// `--agents`): there the suite gives fio's usual figures, workers and depth for the
    /// block size (`None`: the step gives its own) and 4 GiB files.
    fn sizing(&self, bs: Option<&str>) -> Vec<String> {
        let mut v = Vec::new();
        if self.agents.is_empty() {
            v.push("--auto".to_string());
        } else {
            match bs {
                Some("4k") => v.extend(strings(&["--jobs", "4", "--iodepth", "32"])),
                Some(_) => v.extend(strings(&["--jobs", "1", "--iodepth", "8"])),
                None => {}
            }
            if !self.smoke {
                v.extend(strings(&["--size", "4g"]));
            }
        }
        if self.smoke {
            v.extend(strings(&["--size", "16m", "--ramp", "0s"]));
        }
        v
    }

    /// The agents of a step: all of them, or the ones given.
    fn on(&self, agents: &[String]) -> Vec<String> {
        if agents.is_empty() {
            return Vec::new();
        }
        let mut v = vec!["--agents".to_string(), agents.join(",")];
        v.extend(self.distributed.iter().cloned());
        v
    }

    fn search(&self, default: &str) -> Vec<String> {
        let mut v = vec![
            "--target-latency".to_string(),
            self.target_latency
                .clone()
                .unwrap_or_else(|| default.into()),
        ];
        if self.smoke {
            v.extend(strings(&["--step-time", "1s", "--search-steps", "4"]));
        } else if let Some(t) = &self.time {
            v.extend(["--step-time".to_string(), t.clone()]);
        }
        v
    }
}

fn step(part: &'static str, name: String, workload: &str, args: Vec<String>) -> SuiteStep {
    SuiteStep {
        name,
        part,
        workload: workload.to_string(),
        subject: None,
        together: None,
        args,
        file: None,
        skip: None,
    }
}

fn skipped(part: &'static str, why: &str) -> SuiteStep {
    SuiteStep {
        skip: Some(why.to_string()),
        ..step(part, part.to_string(), part, Vec::new())
    }
}

/// Each disk alone, then all at once. Locally the disks are TARGETS; over agents each host's
/// target (the first TARGET) is its disk.
fn disks(o: &SuiteOptions) -> Vec<SuiteStep> {
    let mut out = Vec::new();
    let run = |target: &str, flags: &[&str]| -> Vec<String> {
        let mut a = vec!["run".to_string(), target.to_string()];
        a.extend(strings(flags));
        a.push("--direct".into());
        a.extend(o.sizing(bs_of(flags)));
        a.extend(o.time("30s"));
        a
    };
    if !o.agents.is_empty() {
        let target = o.dir();
        for host in &o.agents {
            for (w, flags) in DISK_WORKLOADS {
                let mut args = run(&target, flags);
                args.extend(o.on(std::slice::from_ref(host)));
                out.push(SuiteStep {
                    subject: Some(host.clone()),
                    ..step("disks", format!("disks/{}/{w}", label(host)), w, args)
                });
            }
        }
        if o.agents.len() > 1 {
            for (w, flags) in DISK_WORKLOADS {
                let mut args = run(&target, flags);
                args.extend(o.on(&o.agents));
                out.push(step("disks", format!("disks/all/{w}"), w, args));
            }
        }
        return out;
    }
    let targets = if o.targets.is_empty() {
        vec![".".to_string()]
    } else {
        o.targets.clone()
    };
    let names = labels(&targets);
    for (t, l) in targets.iter().zip(&names) {
        for (w, flags) in DISK_WORKLOADS {
            out.push(SuiteStep {
                subject: Some(l.clone()),
                ..step("disks", format!("disks/{l}/{w}"), w, run(t, flags))
            });
        }
    }
    // All at once: one run over every disk, one start, its figures per disk (by_target).
    if targets.len() > 1 {
        for (w, flags) in DISK_WORKLOADS {
            let mut args = run(&targets[0], flags);
            for (i, t) in targets[1..].iter().enumerate() {
                args.insert(2 + i, t.clone());
            }
            out.push(step("disks", format!("disks/all/{w}"), w, args));
        }
    }
    out
}

/// The file service from every client: each workload three times, compared between hosts.
fn fileserver(o: &SuiteOptions) -> Vec<SuiteStep> {
    FILESERVER_WORKLOADS
        .iter()
        .map(|(w, flags)| {
            let mut args = vec!["run".to_string(), o.dir()];
            args.extend(strings(flags));
            args.push("--direct".into());
            args.extend(o.sizing(bs_of(flags)));
            args.extend(o.time("60s"));
            args.extend(strings(&["--repeat", "3"]));
            args.extend(o.on(&o.agents));
            step("fileserver", format!("fileserver/{w}"), w, args)
        })
        .collect()
}

/// The database's pattern, then the most commits whose latency meets the target.
fn database(o: &SuiteOptions) -> Vec<SuiteStep> {
    let mut oltp = vec![
        "run".to_string(),
        o.dir(),
        "--job".into(),
        "database.toml".into(),
    ];
    oltp.extend(o.time("60s"));
    oltp.extend(o.on(&o.agents));
    let mut commit = vec!["run".to_string(), o.dir()];
    commit.extend(strings(&[
        "--rw",
        "write",
        "--bs",
        "8k",
        "--engine",
        "psync",
        "--fdatasync",
        "1",
        "--jobs",
        "16",
    ]));
    commit.extend(strings(&["--size", if o.smoke { "8m" } else { "256m" }]));
    commit.extend(o.search("sync:p99<=5ms"));
    commit.extend(o.on(&o.agents));
    vec![
        SuiteStep {
            file: Some(("database.toml".into(), database_job(o.smoke))),
            ..step("database", "database/oltp".into(), "oltp", oltp)
        },
        step(
            "database",
            "database/commit-target".into(),
            "commit-target",
            commit,
        ),
    ]
}

/// ioping's question (how long does one I/O take?), then the latency target.
fn latency(o: &SuiteOptions) -> Vec<SuiteStep> {
    let single = |rw: &str| {
        let mut a = vec!["run".to_string(), o.dir()];
        a.extend(strings(&[
            "--rw",
            rw,
            "--bs",
            "4k",
            "--iodepth",
            "1",
            "--jobs",
            "1",
            "--direct",
        ]));
        a.extend(o.sizing(None));
        a.extend(o.time("30s"));
        a.extend(o.on(&o.agents));
        a
    };
    let mut search = vec!["run".to_string(), o.dir()];
    search.extend(strings(&["--rw", "randread", "--bs", "4k", "--direct"]));
    search.extend(o.sizing(None));
    search.extend(o.search("p99<=2ms"));
    search.extend(o.on(&o.agents));
    vec![
        step(
            "latency",
            "latency/read-qd1".into(),
            "read-qd1",
            single("randread"),
        ),
        step(
            "latency",
            "latency/write-qd1".into(),
            "write-qd1",
            single("randwrite"),
        ),
        step("latency", "latency/target".into(), "target", search),
    ]
}

/// Every pair of agents alone, then all at once.
fn network(o: &SuiteOptions) -> Vec<SuiteStep> {
    if o.agents.len() < 2 {
        return vec![skipped(
            "network",
            "the network is measured between agents: give --agents with two or more",
        )];
    }
    let mut args = strings(&["net", "--mode", "mesh"]);
    args.extend(o.on(&o.agents));
    args.extend(o.time("10s"));
    vec![step("network", "network/mesh".into(), "mesh", args)]
}

/// One aggressor and its victims (seed 000's question: did the others slow down?): the
/// victims alone, then beside the first agent's heavy writes, then alone again.
fn interference(o: &SuiteOptions) -> Vec<SuiteStep> {
    let victims = o.agents.len().saturating_sub(1);
    if victims == 0 {
        return vec![skipped(
            "interference",
            "an aggressor and its victims are other hosts: give --agents with two or more",
        )];
    }
    let run = |phase: &str, file: &str, aggressor: bool| {
        let mut args = vec!["run".to_string(), o.dir(), "--job".into(), file.to_string()];
        args.extend(o.sizing(None));
        args.extend(o.time("60s"));
        args.extend(o.on(&o.agents));
        SuiteStep {
            subject: Some(phase.to_string()),
            file: Some((file.to_string(), interference_job(victims, aggressor))),
            ..step(
                "interference",
                format!("interference/{phase}"),
                "victims",
                args,
            )
        }
    };
    vec![
        run("before", "victims.toml", false),
        run("during", "interference.toml", true),
        run("after", "victims.toml", false),
    ]
}

/// Small and large objects: PUT, GET, and a mix.
fn s3(o: &SuiteOptions) -> Vec<SuiteStep> {
    let Some(flags) = &o.s3 else {
        return vec![skipped(
            "s3",
            "no object store: give --endpoint URL and --bucket NAME",
        )];
    };
    let large = if o.smoke { "1m" } else { "16m" };
    let mut out = Vec::new();
    for (size, mixes) in [
        ("4k", &["put", "get", "put=30,get=50,head=10,delete=10"][..]),
        (large, &["put", "get"][..]),
    ] {
        for mix in mixes {
            let w = match *mix {
                "put" | "get" => format!("{mix}-{size}"),
                _ => format!("mixed-{size}"),
            };
            let mut args = vec!["s3".to_string()];
            args.extend(flags.iter().cloned());
            args.extend(["--op-mix".to_string(), mix.to_string()]);
            args.extend(["--obj-size".to_string(), size.to_string()]);
            if o.smoke {
                args.extend(strings(&["--objects", "20"]));
            }
            args.extend(o.time("30s"));
            args.extend(o.on(&o.agents));
            out.push(step("s3", format!("s3/{w}"), &w, args));
        }
    }
    out
}

mod device;

pub use device::{SpecSheet, SSD_ROUNDS};

#[cfg(test)]
mod tests;
