//! The command line of `stormark suite`.

use std::path::PathBuf;

use clap::Args;

const SUITE_EXAMPLES: &str = "\
Examples:
  stormark suite --list
      the suites and what each measures
  stormark suite disks /mnt/disk1 /mnt/disk2 /mnt/disk3 --smoke
      a try of a few seconds per step: each disk's filesystem alone, then all at once
  stormark suite disks /dev/sdb /dev/sdc --allow-device-write
      raw devices (their data is destroyed; each step refuses a mounted one)
  stormark suite fileserver /mnt/nfs --agents dns:stormark-agent.bench.svc:7878 --token-file token
      the file service from every agent at once, 3 repetitions of 60 s per workload
  stormark suite database /mnt/db --target-latency 'sync:p99<=2ms'
      an OLTP database's I/O, then the most commits per second whose p99 stays within 2 ms
  stormark suite interference /mnt/shared --agents n1:7878,n2:7878,n3:7878 --token-file token
      n1 writes hard while n2 and n3 read at 100 I/Os a second each: their read p99 before,
      during and after
  stormark suite nightly.toml --expect 'randread:p99=2ms'
      a suite of your own: each [[step]] a stormark command, with its name and expectations
  stormark suite spec /dev/sdb --allow-device-write --spec-read-mbs 550 --spec-write-mbs 520 \\
      --spec-read-iops 98k --spec-write-iops 90k
      a device against its spec sheet: 1 MiB sequential at depth 8, 4 KiB random at depth 32,
      each measured against the sheet's figure (below it: missed; far above it: a cache)
  stormark suite ssd /dev/nvme1n1 --allow-device-write --time 1m
      an SSD's steady state (SNIA PTS): written twice over, then 4 KiB random-write rounds of
      a minute until five agree (at most --rounds, 25); fresh against steady
  stormark suite acceptance /mnt/bench --agents n1:7878,n2:7878,n3:7878 --token-file token \\
      --endpoint http://rgw:8080 --bucket bench --expect 'randread-4k:iops=50k'
      a cluster's acceptance: network, disks, file service, latency and object store

Each step is a stormark command of its own (printed before it runs); its results document and
HTML report go into the suite's directory (--out, default stormark-suite-NAME-DATE under the
current directory) beside summary.json, summary.md and summary.html. Exit status: 0 when every
step that ran passed, 1 when one failed or missed an expectation, 2 for a mistake found before
any load.";

/// Options of `stormark suite`.
#[derive(Debug, Args)]
#[command(after_help = SUITE_EXAMPLES)]
pub struct SuiteArgs {
    /// The suite (see --list), or a suite file of one's own steps (FILE.toml: [[step]]
    /// sections with name, command = ["run", ...] and optional expect; see docs/suites.md).
    #[arg(value_name = "NAME", required_unless_present = "list")]
    pub name: Option<String>,
    /// The disks (disks), or the directory every step works in (the first; default the
    /// current directory).
    #[arg(value_name = "TARGETS")]
    pub targets: Vec<PathBuf>,
    /// List the suites and exit.
    #[arg(long)]
    pub list: bool,
    /// A few seconds per step and small files: for trying a suite, not for its figures.
    #[arg(long)]
    pub smoke: bool,
    /// Each step's measured time (and each search step's) instead of the suite's.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub time: Option<String>,
    /// The suite's directory: made new, it must not exist [default:
    /// stormark-suite-NAME-DATE in the current directory].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Expected figures of the steps whose name contains STEP (STEP:LIST, such as
    /// randread-4k:iops=50k,p99=2ms); repeat for others. A miss fails the step.
    #[arg(long, value_name = "STEP:LIST", allow_hyphen_values = true)]
    pub expect: Vec<String>,
    /// The latency target of the latency suite [default: p99<=2ms] and the database's commit
    /// target [default: sync:p99<=5ms].
    #[arg(long, value_name = "LIMITS", allow_hyphen_values = true)]
    pub target_latency: Option<String>,
    /// The spec suite: the device's sequential 1 MiB read figure from its spec sheet, MB/s
    /// (decimal, as datasheets write it: 550, or 3.5GB/s).
    #[arg(long, value_name = "MB/S", help_heading = "Spec sheet (suite spec)")]
    pub spec_read_mbs: Option<String>,
    /// The spec sheet's sequential 1 MiB write figure, MB/s.
    #[arg(long, value_name = "MB/S", help_heading = "Spec sheet (suite spec)")]
    pub spec_write_mbs: Option<String>,
    /// The spec sheet's random 4 KiB read figure, IOPS (98k).
    #[arg(long, value_name = "IOPS", help_heading = "Spec sheet (suite spec)")]
    pub spec_read_iops: Option<String>,
    /// The spec sheet's random 4 KiB write figure, IOPS.
    #[arg(long, value_name = "IOPS", help_heading = "Spec sheet (suite spec)")]
    pub spec_write_iops: Option<String>,
    /// The ssd suite's most measurement rounds before it says the device never reached a
    /// steady state [default: 25, as SNIA's PTS].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(5..=1000))]
    pub rounds: Option<u32>,
    /// Let the steps write files given as TARGETS (overwrites their data; the ssd suite on a
    /// file).
    #[arg(long)]
    pub allow_overwrite: bool,
    /// Let the steps write to block devices given as TARGETS (destroys their data).
    #[arg(long)]
    pub allow_device_write: bool,
    /// No live progress and no step tables: only the summary.
    #[arg(long, short)]
    pub quiet: bool,

    /// Run every step on these agents (host:port, comma-separated; dns:NAME:PORT for every
    /// address of a name).
    #[arg(long, value_name = "LIST", help_heading = "Distributed")]
    pub agents: Option<String>,
    /// The agents' shared token (one line), required with --agents.
    #[arg(long, value_name = "FILE", help_heading = "Distributed")]
    pub token_file: Option<PathBuf>,
    /// Talk TLS to the agents, trusting this CA (PEM).
    #[arg(long, value_name = "FILE", help_heading = "Distributed")]
    pub tls_ca: Option<PathBuf>,

    /// The object store of the s3 steps.
    #[arg(long, value_name = "URL", help_heading = "Object store")]
    pub endpoint: Option<String>,
    /// The bucket of the s3 steps.
    #[arg(long, value_name = "NAME", help_heading = "Object store")]
    pub bucket: Option<String>,
    /// The region signed for.
    #[arg(long, value_name = "REGION", help_heading = "Object store")]
    pub region: Option<String>,
    /// Make the bucket when it does not exist.
    #[arg(long, help_heading = "Object store")]
    pub create_bucket: bool,
    /// https: accept any certificate.
    #[arg(long, help_heading = "Object store")]
    pub insecure: bool,
    /// The access key id [default: AWS_ACCESS_KEY_ID, or the profile's].
    #[arg(long, value_name = "KEY", help_heading = "Object store")]
    pub access_key: Option<String>,
    /// The secret access key [default: AWS_SECRET_ACCESS_KEY, or the profile's]; handed to
    /// the steps in their environment, never on a command line.
    #[arg(long, value_name = "SECRET", help_heading = "Object store")]
    pub secret_key: Option<String>,
    /// The profile of ~/.aws/credentials.
    #[arg(long, value_name = "NAME", help_heading = "Object store")]
    pub aws_profile: Option<String>,
}
