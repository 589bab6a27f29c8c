//! `stormark meta`: metadata load as mdtest makes it, its flags turned into a `kind = "meta"`
//! job and run by the same road as `stormark run` (agents, repetitions, expectations, live
//! metrics, results), each operation a phase.

use anyhow::Result;
use stormark_spec::{parse_meta_ops, MetaOp};

use crate::cli::{MetaArgs, RunArgs, WorkloadFlags};
use crate::{usage, Ending};

pub fn main(args: MetaArgs) -> Result<Ending> {
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
    ] {
        if let Some(v) = value {
            flags.push((key, v.clone()));
        }
    }
    if args.shared {
        flags.push(("shared", "true".into()));
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
