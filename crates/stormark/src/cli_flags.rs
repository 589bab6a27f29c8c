//! The workload flags of `run` and `s3`, built from spec's tables (`FILE_FLAGS`,
//! `S3_FLAGS`): one clap argument per row, the common ones first in help.

use std::marker::PhantomData;

use clap::{Arg, ArgAction, ArgMatches, Args, FromArgMatches};
use stormark_spec::{Flag, FlagValue, FILE_FLAGS, S3_FLAGS};

/// A table of workload flags (in spec): the file flags of `run`, the S3 flags of `s3`.
pub trait FlagTable {
    /// The flags.
    const FLAGS: &'static [Flag];
}

/// The flags of file load.
#[derive(Debug, Clone, Default)]
pub struct FileLoad;

impl FlagTable for FileLoad {
    const FLAGS: &'static [Flag] = FILE_FLAGS;
}

/// The flags of S3 load.
#[derive(Debug, Clone, Default)]
pub struct S3Load;

impl FlagTable for S3Load {
    const FLAGS: &'static [Flag] = S3_FLAGS;
}

/// Workload flags built from a spec table: what was given, as (job key, text) pairs in the
/// table's order. A new option needs a row in the table, no change here.
#[derive(Debug, Clone, Default)]
pub struct WorkloadFlags<T = FileLoad>(pub Vec<(&'static str, String)>, PhantomData<T>);

impl<T> WorkloadFlags<T> {
    /// Flags given as pairs (what a command other than `run` hands to the plan).
    pub fn from_pairs(pairs: Vec<(&'static str, String)>) -> WorkloadFlags<T> {
        WorkloadFlags(pairs, PhantomData)
    }
}

impl<T: FlagTable> FromArgMatches for WorkloadFlags<T> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut given = Vec::new();
        for flag in T::FLAGS {
            let id = flag.long();
            match flag.value {
                FlagValue::Text(_) => {
                    if let Some(text) = matches.get_one::<String>(&id) {
                        given.push((flag.key, text.clone()));
                    }
                }
                FlagValue::Switch(set) => {
                    if matches.get_flag(&id) {
                        given.push((flag.key, set.to_string()));
                    }
                }
            }
        }
        Ok(WorkloadFlags(given, PhantomData))
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

/// The workload options most runs use, shown first in help in this order; every other one
/// after them, under its own heading.
const COMMON_KEYS: &[&str] = &[
    "rw",
    "bs",
    "iodepth",
    "jobs",
    "size",
    "time",
    "direct",
    "rwmixread",
    "engine",
    "files",
    "endpoint",
    "bucket",
    "op_mix",
    "obj_size",
    "objects",
    "rate_iops",
    "verify",
    "ramp",
];

impl<T: FlagTable> Args for WorkloadFlags<T> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        let rank = |f: &&Flag| COMMON_KEYS.iter().position(|k| *k == f.key);
        let mut flags: Vec<&Flag> = T::FLAGS.iter().collect();
        // Common ones first, in COMMON_KEYS' order; the rest in the table's (a stable sort).
        flags.sort_by_key(|f| rank(f).unwrap_or(COMMON_KEYS.len()));
        flags.into_iter().fold(cmd, |cmd, flag| {
            let long = flag.long();
            let heading = if rank(&flag).is_some() {
                "Workload"
            } else {
                "Advanced workload"
            };
            let mut arg = Arg::new(long.clone())
                .long(long.clone())
                .help(flag.help.strip_suffix('.').unwrap_or(flag.help))
                .help_heading(heading);
            arg = match flag.value {
                FlagValue::Text(name) => arg
                    .value_name(name)
                    .allow_hyphen_values(true)
                    .action(ArgAction::Set),
                FlagValue::Switch(_) => arg.action(ArgAction::SetTrue),
            };
            // Two flags of one key exclude each other (--direct and --buffered).
            for other in T::FLAGS {
                if other.key == flag.key && other.long() != long {
                    arg = arg.conflicts_with(other.long());
                }
            }
            cmd.arg(arg)
        })
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}
