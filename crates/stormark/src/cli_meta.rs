//! The command line of `stormark meta`.

use std::path::PathBuf;

use clap::Args;

use crate::cli::{DistributedArgs, OutputArgs, ShapeArgs};

const META_EXAMPLES: &str = "\
Examples:
  stormark meta /mnt/nfs --jobs 8 --dirs 10 --files 1000
      8 workers, each in its own 10 directories of 1000 files: mkdir, dirstat, create, stat,
      open, rename, delete, rmdir, each a phase, each call timed (mdtest's unique-directory mode)
  stormark meta /mnt/cephfs --jobs 4 --depth 2 --branch 3 --files 100
      mdtest's tree (-z 2 -b 3 -I 100): 13 directories per worker, 100 files in each
  stormark meta /mnt/cephfs --jobs 4 --depth 3 --branch 4 --files 100 --leaf-only
      files only in the 64 directories of the last level (mdtest -z 3 -b 4 -I 100 -L)
  stormark meta /mnt/cephfs --jobs 16 --shared --files 5000 --ops create,stat,delete
      every worker creating, statting and deleting in one shared directory: the hard case of a
      distributed filesystem
  stormark meta /mnt/shared --agents client1:7878,client2:7878 --token-file token --jobs 8 --shared
      every client's workers in one tree of the shared filesystem, merged exactly
  stormark meta /scratch/shared --launch 'srun -N 8 --ntasks-per-node=1' --jobs 4 --shared
      as mdtest runs: the allocation's nodes as clients, their agents started by srun for this
      run and gone with it (docs/distributed.md)
  stormark meta nfs://nas1/export/bench --jobs 4 --files 1000
      an NFS share from user space, no mount: each create, stat, rename and delete one RPC
      relative to a directory's file handle, over each worker's own connection
  stormark meta /mnt/lustre --jobs 8 --files 1000000 --ops create,stat,delete --time 30s
      stonewall: each phase stops at 30 s and says so, with each worker's count (mdtest -W 30)
  stormark meta /mnt/lustre --jobs 8 --files 1000000 --time 30s --stonewall-wear-out
      as mdtest -W 30: after the cut create, every worker's files made up to the most any
      worker made, so that stat and delete go through equal counts
  stormark meta /mnt/data --jobs 2 --mdtest '-n 1000 -z 2 -b 3 -u -F'
      mdtest's command line as it is (2 ranks: 2 workers): 13 directories and 988 files each
  stormark meta /mnt/data --jobs 4 --depth 1 --branch 4 --files 500 \\
      --ops mkdir,create,stat,delete,rmdir --print-mdtest
      the mdtest command line that makes the same load: mpirun -np 4 mdtest -a POSIX -z 1
      -b 4 -I 500 -F -u -C -T -r -d /mnt/data
  stormark meta /mnt/data --file-size 4k --fsync --ops create,stat,delete
      each create writes 4 KiB and fsyncs them before its close (mdtest -w 4096 -y)
  stormark meta /mnt/cephfs --jobs 4 --files 10000 --ops create,stat --random-order
      the stats in a scattered order, each file once (mdtest -R)
  stormark meta /mnt/data --file-size 64k --ops create,delete --sync-phases
      each phase ends with sync(2) on every worker, timed with it (mdtest -w 65536 -Y)
  stormark meta /mnt/data --file-size 4k --ops create,read,delete --verify-read
      each read's 4 KiB checked against what was written (mdtest -w 4096 -e 4096 -X)
  stormark meta /mnt/data --file-size 4k --ops create,read --repeat 3 --json meta.json
      small files written and read back, three times, with the spread of each figure

Each operation is a phase of its own, every worker of every host starting it together;
whatever an operation needs and was not asked for (files to stat) is made untimed before it.
The tree is made inside a run directory (with --shared, in a directory named after the run
beside it) and removed at the end, and nothing else is touched.";

/// Options of `stormark meta`.
#[derive(Debug, Args)]
#[command(after_help = META_EXAMPLES)]
pub struct MetaArgs {
    /// The directory to work in (a tree of its own is made inside and removed at the end),
    /// or a directory of an NFS share, nfs://SERVER/EXPORT/DIR [default: the current
    /// directory].
    #[arg(value_name = "TARGET")]
    pub target: Option<PathBuf>,
    /// Parallel workers on each host (fio's numjobs, mdtest's tasks) [default: 1].
    #[arg(long, value_name = "N", alias = "numjobs")]
    pub jobs: Option<String>,
    /// Directories side by side in each worker's tree (in all, with --shared) [default: 1].
    #[arg(long, value_name = "N")]
    pub dirs: Option<String>,
    /// mdtest's tree instead (-z): levels below the root, each directory with --branch
    /// children.
    #[arg(long, value_name = "N")]
    pub depth: Option<String>,
    /// Children of each directory of the tree (mdtest's -b).
    #[arg(long, value_name = "N")]
    pub branch: Option<String>,
    /// Files in each directory, per worker (mdtest's -I) [default: 1000].
    #[arg(long, value_name = "N", alias = "nrfiles")]
    pub files: Option<String>,
    /// Bytes each file holds: written by create (or write), read by read [default: 0, empty].
    #[arg(long, value_name = "SIZE", alias = "filesize")]
    pub file_size: Option<String>,
    /// The operations, run in this order whatever the order given: mkdir, dirstat, create,
    /// write, stat, open, read, rename, delete, rmdir [default: all but write; read with a
    /// --file-size].
    #[arg(long, value_name = "LIST")]
    pub ops: Option<String>,
    /// Stonewall: each operation's phase stops after this time (mdtest's -W), saying it was
    /// cut and how many items each worker went through (min, max, mean; per worker in the
    /// JSON) [default: no limit, every item].
    #[arg(long, value_name = "DURATION", alias = "runtime")]
    pub time: Option<String>,
    /// With --time: after a create phase the time cut, every worker's files are made up to
    /// the most any worker made (untimed), so that later phases go through equal counts
    /// (mdtest's wear-out after -W).
    #[arg(long)]
    pub stonewall_wear_out: bool,
    /// mdtest's command line as the job, its arguments quoted as one: -n, -I, -z, -b, -u,
    /// -F, -C, -T, -E, -r, -w, -e, -W, -i, -d, -a POSIX (mdtest's ranks are the workers:
    /// --jobs on each host); the rest refused by name.
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    pub mdtest: Option<String>,
    /// Print mdtest's command line for this job (where mdtest has one) and exit.
    #[arg(long)]
    pub print_mdtest: bool,
    /// Files only in the tree's last level, its leaves (mdtest's -L); the directories above
    /// hold their children alone.
    #[arg(long)]
    pub leaf_only: bool,
    /// fsync each file after its write, timed with it (mdtest's -y).
    #[arg(long)]
    pub fsync: bool,
    /// Check each read's bytes against what every create and write puts in a file, a file
    /// that differs counted `corrupt` (mdtest's -X; with read and a --file-size up to 1m).
    #[arg(long)]
    pub verify_read: bool,
    /// stat the files in a scattered order, each once, instead of in the order made
    /// (mdtest's -R).
    #[arg(long)]
    pub random_order: bool,
    /// sync(2) at the end of each phase, by each worker, within the phase's time (mdtest's
    /// -Y); the syncs are in the phase's `sync` operation.
    #[arg(long)]
    pub sync_phases: bool,
    /// Every worker of every host in the same tree instead of its own.
    #[arg(long)]
    pub shared: bool,
    /// TOML job file of meta jobs (kind = "meta" is implied); flags given too override its
    /// values.
    #[arg(long, value_name = "FILE")]
    pub job: Option<PathBuf>,
    /// Leave the tree in place.
    #[arg(long)]
    pub keep: bool,

    /// Repetitions and expectations.
    #[command(flatten)]
    pub shape: ShapeArgs,

    /// Where the results go.
    #[command(flatten)]
    pub output: OutputArgs,

    /// The agents of a distributed run.
    #[command(flatten)]
    pub distributed: DistributedArgs,
    /// Per-agent directory, HOST=PATH (HOST as in --agents); repeat for each agent. TARGET,
    /// when given, is the default.
    #[arg(
        long = "target",
        id = "target_map",
        value_name = "HOST=PATH",
        help_heading = "Distributed"
    )]
    pub target_map: Vec<String>,
}
