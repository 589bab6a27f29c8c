//! The command line of `stormark meta`.

use std::path::PathBuf;

use clap::Args;

const META_EXAMPLES: &str = "\
Examples:
  stormark meta /mnt/nfs --jobs 8 --dirs 10 --files 1000
      8 workers, each in its own 10 directories of 1000 files: mkdir, create, stat, open, read,
      rename, delete, rmdir, each timed per call (mdtest's unique-directory mode)
  stormark meta /mnt/cephfs --jobs 16 --shared --dirs 1 --files 5000 --ops create,stat,delete
      every worker creating, statting and deleting in one shared directory: the hard case of a
      distributed filesystem
  stormark meta /mnt/data --file-size 4k --ops create,read --json meta.json
      small files written and read back; the results document beside";

/// Options of `stormark meta`.
#[derive(Debug, Args)]
#[command(after_help = META_EXAMPLES)]
pub struct MetaArgs {
    /// The directory to work in (a tree of its own is made inside and removed at the end)
    /// [default: the current directory].
    #[arg(value_name = "TARGET")]
    pub target: Option<PathBuf>,
    /// Parallel workers (fio's numjobs, mdtest's tasks).
    #[arg(long, default_value = "1", value_name = "N", alias = "numjobs")]
    pub jobs: String,
    /// Directories per worker (in all, with --shared).
    #[arg(long, default_value = "1", value_name = "N")]
    pub dirs: String,
    /// Files per directory, per worker.
    #[arg(long, default_value = "1000", value_name = "N", alias = "nrfiles")]
    pub files: String,
    /// Bytes each file holds: written by create (or write), read by read [default: 0, empty].
    #[arg(long, default_value = "0", value_name = "SIZE", alias = "filesize")]
    pub file_size: String,
    /// The operations, run in this order whatever the order given: mkdir, create, write,
    /// stat, open, read, rename, delete, rmdir [default: all but write; read with a --file-size].
    #[arg(long, value_name = "LIST")]
    pub ops: Option<String>,
    /// Every worker in the same directories instead of its own.
    #[arg(long)]
    pub shared: bool,
    /// Write the results document here (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write the report as one self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Print only the summary.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}
