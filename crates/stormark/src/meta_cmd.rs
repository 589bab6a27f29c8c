//! `stormark meta`: metadata load as mdtest makes it, its flags turned into a `kind = "meta"`
//! job and run by the same road as `stormark run` (agents, repetitions, expectations, live
//! metrics, results), each operation a phase.

use anyhow::Result;
use stormark_spec::{parse_meta_ops, JobOpts, MetaOp, Source};

use crate::cli::{MetaArgs, RunArgs, WorkloadFlags};
use crate::{usage, Ending};

pub fn main(mut args: MetaArgs) -> Result<Ending> {
    let mdtest = match args.mdtest.clone() {
        Some(text) => Some(from_mdtest(&mut args, &text)?),
        None => None,
    };
    let shape = &args.shape;
    if shape.target_latency.is_some() || shape.curve.is_some() || !shape.sweep.is_empty() {
        return Err(usage(
            "--target-latency, --curve and --sweep change a load's rate or depth; a metadata run goes through its tree once per operation (use --repeat, --expect)",
        ));
    }
    let mut flags = vec![("kind", "meta".to_string())];
    if let Some(list) = &args.ops {
        let ops = parse_meta_ops(list).ok_or_else(|| {
            let bad = list
                .split(',')
                .find(|n| MetaOp::parse(n).is_none())
                .unwrap_or(list);
            usage(format!(
                "--ops {list}: {bad:?} is not one of mkdir, dirstat, create, write, stat, open, read, rename, delete, rmdir"
            ))
        })?;
        let names: Vec<&str> = ops.iter().map(|o| o.name()).collect();
        flags.push(("meta_ops", names.join(",")));
    }
    for (key, value) in [
        ("jobs", &args.jobs),
        ("dirs", &args.dirs),
        ("depth", &args.depth),
        ("branch", &args.branch),
        ("files", &args.files),
        ("file_size", &args.file_size),
        ("time", &args.time),
    ] {
        if let Some(v) = value {
            flags.push((key, v.clone()));
        }
    }
    if args.shared {
        flags.push(("shared", "true".into()));
    }
    if args.stonewall_wear_out {
        flags.push(("wear_out", "true".into()));
    }
    if args.leaf_only {
        flags.push(("leaf_only", "true".into()));
    }
    if args.fsync {
        flags.push(("fsync", "1".into()));
    }
    if args.verify_read {
        flags.push(("verify_read", "true".into()));
    }
    if args.random_order {
        flags.push(("random_order", "true".into()));
    }
    if args.sync_phases {
        flags.push(("sync_phases", "true".into()));
    }
    flags.extend(mdtest.unwrap_or_default());
    if args.print_mdtest {
        return print_mdtest(&args, &flags);
    }
    crate::run::main(RunArgs {
        target: args.target,
        workload: WorkloadFlags::from_pairs(flags),
        job: args.job,
        keep: args.keep,
        shape: args.shape,
        output: args.output,
        distributed: args.distributed,
        target_map: args.target_map,
        ..RunArgs::default()
    })
}

/// `--mdtest ARGS`: mdtest's options as the job's keys; its `-d` the target and `-i` the
/// repetitions. The flags that say the same are refused beside it.
fn from_mdtest(args: &mut MetaArgs, text: &str) -> Result<Vec<(&'static str, String)>> {
    let given = [
        ("--dirs", args.dirs.is_some()),
        ("--depth", args.depth.is_some()),
        ("--branch", args.branch.is_some()),
        ("--files", args.files.is_some()),
        ("--file-size", args.file_size.is_some()),
        ("--ops", args.ops.is_some()),
        ("--shared", args.shared),
        ("--time", args.time.is_some()),
        ("--stonewall-wear-out", args.stonewall_wear_out),
        ("--leaf-only", args.leaf_only),
        ("--fsync", args.fsync),
        ("--verify-read", args.verify_read),
        ("--random-order", args.random_order),
        ("--sync-phases", args.sync_phases),
        ("--job", args.job.is_some()),
    ];
    if let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
        return Err(usage(format!(
            "--mdtest gives the tree, the files, the operations and the time: leave out {flag} (or --mdtest)"
        )));
    }
    let m = stormark_spec::parse_mdtest(text).map_err(usage)?;
    match (&m.dir, &args.target) {
        (Some(d), Some(t)) => {
            return Err(usage(format!(
                "--mdtest -d {d} and TARGET {}: give the directory once",
                t.display()
            )))
        }
        (Some(d), None) => args.target = Some(d.into()),
        _ => {}
    }
    if let Some(i) = m.iterations.filter(|i| *i > 1) {
        if args.shape.repeat.is_some() {
            return Err(usage("--mdtest -i and --repeat: give the iterations once"));
        }
        args.shape.repeat = Some(i.to_string());
    }
    Ok(m.pairs)
}

/// `--print-mdtest`: mdtest's command line for the job the flags make.
fn print_mdtest(args: &MetaArgs, flags: &[(&str, String)]) -> Result<Ending> {
    if args.job.is_some() || args.distributed.agents.is_some() {
        return Err(usage(
            "--print-mdtest prints a job given by flags on one host; leave out --job and --agents",
        ));
    }
    let mut opts = JobOpts::default();
    for (k, v) in flags {
        opts.set(k, v, Source::Flag)
            .map_err(|e| usage(e.to_string()))?;
    }
    let job = opts.resolve("meta").map_err(|e| usage(e.to_string()))?;
    let meta = job
        .meta
        .as_ref()
        .expect("a job of kind meta has its meta part");
    let repeat = match &args.shape.repeat {
        Some(r) => r
            .parse::<u32>()
            .map_err(|_| usage(format!("--repeat {r}: expected a whole number")))?,
        None => 1,
    };
    let dir = args
        .target
        .as_ref()
        .map_or_else(|| ".".to_string(), |t| t.display().to_string());
    let line = stormark_spec::to_mdtest(meta, job.time, repeat, &dir).map_err(usage)?;
    outln!("mpirun -np {} mdtest {line}", job.jobs);
    Ok(Ending::Success)
}
