//! `stormark run --ior 'ARGS'`: IOR's command line (and the script its `-f` names) as the
//! run's jobs and its own options (`-k` is `--keep`, `-i` is `--repeat`, `-o`'s directory the
//! target when none is typed); `--print-ior` the other way.

use anyhow::Result;
use stormark_spec::{JobFile, Workload};

use crate::cli::RunArgs;
use crate::usage;

/// The largest IOR script read.
const SCRIPT_LIMIT: u64 = 1 << 20;

/// The jobs `--ior` gives, if given, with the run's options it names set on `args`.
pub fn import(args: &mut RunArgs) -> Result<Option<(String, JobFile, Vec<String>)>> {
    let Some(text) = args.ior.clone() else {
        return Ok(None);
    };
    let script = match stormark_spec::ior_script(&text).map_err(|e| usage(e.to_string()))? {
        Some(path) => Some(
            crate::read_limited(std::path::Path::new(&path), SCRIPT_LIMIT, "an IOR script")
                .map_err(|e| usage(format!("--ior -f {path}: cannot read it: {e}")))?,
        ),
        None => None,
    };
    let run =
        stormark_spec::parse_ior(&text, script.as_deref()).map_err(|e| usage(e.to_string()))?;
    args.keep |= run.keep;
    if args.shape.repeat.is_none() && run.repeat > 1 {
        args.shape.repeat = Some(run.repeat.to_string());
    }
    if args.target.is_none() {
        args.target = run.dir.map(Into::into);
    }
    Ok(Some(("--ior".into(), run.file, run.notes)))
}

/// `--print-ior`: IOR's command line of `workload`, or why it has none (exit 2).
pub fn print(args: &RunArgs, workload: &Workload) -> Result<String> {
    let repeat = args
        .shape
        .repeat
        .as_deref()
        .and_then(|r| r.trim().parse().ok())
        .unwrap_or(1);
    stormark_spec::to_ior(workload, repeat).map_err(usage)
}
