//! The command line (clap derive). Workload options keep fio's names.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub use crate::cli_cert::CertArgs;
pub use crate::cli_flags::{S3Load, WorkloadFlags};
pub use crate::cli_meta::MetaArgs;
pub use crate::cli_net::{NetArgs, NetClientArgs, NetMeshArgs, NetSide};
pub use crate::cli_suite::SuiteArgs;

/// Storage benchmark: file and block load with exact latency, from one host.
#[derive(Debug, Parser)]
#[command(name = "stormark", version, about, long_about = None, after_help = "Examples:\n  stormark run                       # quick 20 s look at the current filesystem\n  stormark run /mnt/data --rw randread --bs 4k --iodepth 32 --direct --time 60s\n  stormark suite acceptance /mnt/bench --smoke\n  stormark probe")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Benchmark a directory, file or block device.
    Run(Box<RunArgs>),
    /// Describe this host (CPU, memory, devices, filesystems, network) and what --auto
    /// would choose for a target.
    Probe(ProbeArgs),
    /// Serve coordinators: run their load on this host (a long-lived service).
    Agent(AgentArgs),
    /// Compare results documents: differences per figure, and whether they are significant.
    Compare(CompareArgs),
    /// Render a results document: the terminal summary, HTML with charts, Markdown, or CSV.
    Report(ReportArgs),
    /// Benchmark an S3 object store: PUT, GET, HEAD, DELETE and LIST in a weighted mix.
    S3(Box<S3Args>),
    /// Measure the network between two hosts (TCP throughput over parallel streams, or
    /// request/response latency, against a `stormark net server`), or between every pair of
    /// agents (`--agents LIST --mode mesh`).
    Net(Box<NetArgs>),
    /// Metadata load as mdtest makes it: mkdir, create, stat, open, read, rename, delete and
    /// rmdir over a tree of many small files, from many workers, each call timed.
    Meta(Box<MetaArgs>),
    /// A standard battery (disks, fileserver, database, latency, network, s3, acceptance):
    /// each step a stormark command of its own, then one summary with verdicts.
    Suite(Box<SuiteArgs>),
    /// TLS between coordinator and agents in one command each: a CA, then each agent's
    /// certificate signed by it with the agent's names and addresses.
    Cert(CertArgs),
}

/// `s3 --help`'s examples: `--embedded` first where this build has the server (a build with
/// `--features embedded-s3`); the default build, which refuses it, does not offer it (issue 56).
fn s3_examples() -> String {
    let embedded = if cfg!(feature = "embedded-s3") {
        "  stormark s3 --embedded --op-mix put=50,get=50 --obj-size 64k --time 10s
      a first try with no S3 service: a server inside this build of stormark, on a temporary
      directory\n"
    } else {
        ""
    };
    format!("Examples:\n{embedded}{S3_EXAMPLES}")
}

const S3_EXAMPLES: &str = "\
  stormark s3 --endpoint http://127.0.0.1:9000 --bucket bench --op-mix get --obj-size 4k --concurrency 16
      GETs of 4 KiB objects (1000 written first) from 16 connections for 30 s
  stormark s3 --endpoint http://minio:9000 --bucket bench --create-bucket \\
      --op-mix put=30,get=60,delete=5,list=5 --obj-size 1m --concurrency 32 --time 2m --json s3.json
      a warp-style mixed workload; the bucket is made if missing
  stormark s3 --endpoint http://minio:9000 --bucket bench --op-mix put \\
      --compress-ratio 2 --dedup-ratio 1.5
      PUTs of data that compresses 2:1, a third of its 4 KiB blocks duplicates
  stormark s3 --endpoint http://minio:9000 --bucket bench --op-mix get --target-latency 'p99<=20ms'
      the most GETs per second whose 99th percentile stays within 20 ms
  stormark s3 --endpoint http://minio:9000 --bucket bench --op-mix get --rate-ops 2000 --time 60s
      open loop: 2000 GETs per second on a schedule; latency counts from the schedule
  stormark s3 --endpoint http://minio:9000 --bucket bench --op-mix get --concurrency 16 \\
      --agents client1:7878,client2:7878 --token-file token --tls-ca ca.pem
      every agent runs 16 connections at once; per-host rows and the exact merge
  stormark s3 --endpoint http://minio:9000 --bucket bench --op-mix get --launch 'srun -N 4'
      the clients started on the allocation's nodes by srun for this run, gone with it
  stormark s3 --endpoint http://minio:9000 --bucket bench --remove-run 20261126-001739-11450
      removes what that run left (kept with --keep, or its cleanup cut short), every host's

Keys come from --access-key/--secret-key, else AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, else
the profile --aws-profile (or AWS_PROFILE, or default) of ~/.aws/credentials. They are never
written to results. Nothing is retried. Every object the run writes goes under
PREFIX/<run id>/ and is deleted at the end (unless --keep); no other object is touched.";

/// Options of `stormark s3`.
#[derive(Debug, Args)]
#[command(after_help = s3_examples())]
pub struct S3Args {
    /// The workload flags (`--endpoint`, `--op-mix`, `--obj-size`, ...), from the spec's table.
    #[command(flatten)]
    pub workload: WorkloadFlags<S3Load>,

    /// The access key id [default: AWS_ACCESS_KEY_ID, or the profile's].
    #[arg(long, value_name = "KEY", help_heading = "Keys")]
    pub access_key: Option<String>,
    /// The secret access key [default: AWS_SECRET_ACCESS_KEY, or the profile's].
    #[arg(long, value_name = "SECRET", help_heading = "Keys")]
    pub secret_key: Option<String>,
    /// The profile of ~/.aws/credentials (or AWS_SHARED_CREDENTIALS_FILE) [default: AWS_PROFILE, or default].
    #[arg(long, value_name = "NAME", help_heading = "Keys")]
    pub aws_profile: Option<String>,
    /// Make the bucket when it does not exist.
    #[arg(long, help_heading = "Keys")]
    pub create_bucket: bool,
    /// TOML job file of S3 jobs (kind = "s3" is implied); flags given too override its values.
    #[arg(long, value_name = "FILE", help_heading = "Keys")]
    pub job: Option<PathBuf>,
    /// https: accept any certificate (self-signed test services); the system's roots, and
    /// SSL_CERT_FILE, are trusted otherwise.
    #[arg(long, help_heading = "Keys")]
    pub insecure: bool,
    /// Leave the objects the run wrote in the bucket.
    #[arg(long, help_heading = "Keys")]
    pub keep: bool,
    /// Run no load: remove the objects run ID left under PREFIX/ID-h*/ (every host's), as the
    /// results' notes name it, and nothing else.
    #[arg(long, value_name = "ID", help_heading = "Keys", conflicts_with_all = ["keep", "embedded", "job"])]
    pub remove_run: Option<String>,
    /// Start an S3 server inside stormark (s3s with its filesystem backend) on a fresh
    /// directory under TMPDIR, and measure it: for learning the command without an S3
    /// service. Its endpoint, bucket and keys are made for the run; the directory is removed
    /// at the end.
    // Hidden from --help in a build without the server (the default): there it is refused in
    // one line saying how to build it (issue 56).
    #[arg(long, help_heading = "Embedded server", hide = !cfg!(feature = "embedded-s3"))]
    pub embedded: bool,
    /// Where the embedded server listens (agents must reach it there) [default: 127.0.0.1:0,
    /// a free port on loopback].
    #[arg(
        long,
        value_name = "ADDR:PORT",
        requires = "embedded",
        help_heading = "Embedded server",
        hide = !cfg!(feature = "embedded-s3")
    )]
    pub embedded_listen: Option<std::net::SocketAddr>,

    /// Repetitions, expectations, searches, curves and sweeps.
    #[command(flatten)]
    pub shape: ShapeArgs,

    /// Where the results go.
    #[command(flatten)]
    pub output: OutputArgs,

    /// The agents of a distributed run.
    #[command(flatten)]
    pub distributed: DistributedArgs,
    /// An agent's own endpoint, HOST=URL (HOST as in --agents), so that clients spread over
    /// the gateways of a cluster; repeat for each. The others use --endpoint.
    #[arg(long, value_name = "HOST=URL", help_heading = "Distributed")]
    pub host_endpoint: Vec<String>,
}

const RUN_EXAMPLES: &str = "\
Examples:
  stormark run
      20 s quick profile on a fresh directory under the current directory
  stormark run /mnt/data --rw randread --bs 4k --iodepth 32 --direct --time 60s --json out.json
      4 KiB random reads, queue depth 32, bypassing the page cache, for 60 s
  stormark run /mnt/data --profile oltp-4k --jobs 4 --size 4g
      a shipped profile, with flags overriding it
  stormark run /mnt/data --job mixed.toml
      jobs from a TOML job file (jobs sharing a group run at the same time); kind = \"s3\"
      and kind = \"net\" jobs load an object store (keys from AWS_*) or the network beside
      the disks
  stormark run vendor-checklist.fio
      a fio job file run as written (--lenient leaves out what stormark does not run), its
      buffered jobs' files leaving the page cache before each pass as fio's do (--invalidate);
      --print-fio writes the fio job file of any run
  stormark run /mnt/pfs --ior '-a POSIX -t 1m -b 64m -F -w -r -N 4'
      IOR's command line: 4 workers each write a new 64 MiB file, then read it back, in one
      run (docs/ior-mdtest.md); --print-ior writes IOR's command line of a run
  stormark run /mnt/data --rw write --bs 1m --size 4g --direct --fresh
      writes into new files the file system allocates as they are written (IOR's default)
  stormark run /dev/nvme1n1 --rw randwrite --direct --allow-device-write
      writes to a raw device (destroys its data; refused while mounted)
  stormark run /dev/nvme0n1 /dev/nvme1n1 --rw randread --bs 4k --direct --time 1m
      several targets at once, one start for all: each job on each, figures per target
      (by_target) and in total; so do a fio job file's jobs on different devices
  stormark run iscsi://192.0.2.10/iqn.2003-01.org.example:disk1/1 --rw randread --iodepth 16
      an iSCSI LUN from user space (libiscsi): no kernel initiator, no login of the host;
      each worker its own session; CHAP from STORMARK_ISCSI_USER and STORMARK_ISCSI_SECRET
  stormark run nfs://192.0.2.20/export/bench --rw randrw --bs 4k --iodepth 8 --time 2m
      an NFS share from user space (libnfs, NFSv3): no mount, no kernel client; its run
      directory made there and removed after, each worker its own connection
  stormark run /mnt/data --auto --rw randread --direct --time 2m --expect iops=90k,p99=2ms
      jobs, iodepth and size chosen from this host; measured compared with a datasheet
  stormark run /mnt/data --rw randrw --direct --bssplit 4k/60:64k/40 --random-distribution zipf:1.2
      fio's skew: a few blocks take most accesses, in two block sizes (as real data is read)
  stormark run /mnt/data --rw randread --direct --iodepth 32 --rate-iops 20000 --time 2m
      open loop: 20000 I/Os per second on a schedule; latency counts from the schedule
  stormark run /mnt/data --rw randread --bs 4k --direct --target-latency 'p99<=2ms'
      the most IOPS whose 99th percentile stays within 2 ms (each step 20 s; --step-time)
  stormark run /mnt/data --rw randread --direct --iodepth 32 --curve 10,30,50,70,90,100 --time 30s
      the maximum, then open loop at those percentages of it: the throughput-latency curve
  stormark run /mnt/data --rw read --direct --time 20s --sweep bs=4k,64k,1m --sweep jobs=1,2,4
      every combination as its own phase, a matrix, and scaling efficiency over jobs
  stormark run /mnt/data --rw randwrite --direct --iodepth 16 --steady-state iops:2%:30s --time 2m
      the ramp lasts until IOPS hold within 2% for 30 s (at most --ramp, default 10m)
  stormark run /mnt/data --profile oltp-4k --time 60s --repeat 5 --json new.json
      five repetitions with mean and 95% confidence interval; then: stormark compare old.json new.json
  stormark run /mnt/bench --agents node1:7878,node2:7878 --token-file token --rw randread
      the same load on every agent at once (see `stormark agent --help`); --target node2=/dev/sdb
      gives a host its own target
  stormark run /mnt/shared --agents n1:7878,n2:7878,n3:7878 --token-file token --time 2m \\
      --on 0 --rw randwrite --bs 64k --iodepth 32 --on 1-2 --rw randread --rate-iops 200
      different jobs on different hosts, at once: host 0 loads, hosts 1 and 2 measure their
      latency at 100 reads a second each (job files: the hosts key)
  stormark run /scratch/bench --launch 'srun -N 4 --ntasks-per-node=1' --rw read --bs 1m
      agents started for this run by a launcher ('mpirun --oversubscribe -np 4' too), their
      addresses read back from it, gone with the run (--launch-wait 2m, --launch-net 10.0.0.0/16;
      --tls-ca tls/ca.pem: each agent serves TLS with tls/HOST.pem and tls/HOST.key)
  stormark run /mnt/bench --agents-file fleet.toml --token-file token --on-agent-failure continue --max-failed-agents 10
      a large fleet goes on without up to 10 hosts that fail, and stops if more do
  stormark run /mnt/db --rw write --bs 8k --engine psync --fdatasync 1 --time 60s
      a database's commits: each 8 KiB write made durable; the sync row is the commit latency
  stormark run /mnt/data --time 10m --html r.html --metrics-listen 127.0.0.1:9464
      the report as one HTML page, and live figures for Prometheus meanwhile
  stormark run /mnt/data --profile quick --progress 1s | tee run.log
      a progress line each second into the log; each phase's table as the phase ends

TARGET is a directory (stormark creates and later removes a run directory inside it), an
existing file (read in place; writing needs --allow-overwrite), or a block device (reading
needs no flag; writing needs --allow-device-write, and --force if it holds a filesystem),
or an iSCSI LUN, iscsi://HOST[:PORT]/IQN/LUN (writing needs --allow-device-write), or a
directory of an NFS share, nfs://SERVER[:PORT]/EXPORT[/DIR] (a run directory made there).
Sizes take k/m/g/t (1024-based, as fio), durations s/ms/m/h.";

/// Options of `stormark run`.
#[derive(Debug, Default, Args)]
#[command(after_help = RUN_EXAMPLES)]
pub struct RunArgs {
    /// Directory, file, block device, iscsi://HOST[:PORT]/IQN/LUN or
    /// nfs://SERVER/EXPORT[/DIR] to benchmark [default: the current directory].
    pub target: Option<PathBuf>,

    /// More targets, run at once with the first in one stage: each job on each target, the
    /// figures per target and in total.
    #[arg(value_name = "TARGET")]
    pub more_targets: Vec<PathBuf>,

    /// The workload flags (`--rw`, `--bs`, `--iodepth`, ...), from the spec's table.
    #[command(flatten)]
    pub workload: WorkloadFlags,

    /// Job file: TOML, or fio's INI (FILE.fio, run as written; also as TARGET); flags given
    /// too override its values.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "profile",
        help_heading = "Jobs"
    )]
    pub job: Option<PathBuf>,
    /// A fio job file's options stormark does not run are left out (listed in the notes)
    /// instead of refused.
    #[arg(long, help_heading = "Jobs")]
    pub lenient: bool,
    /// Print the fio job file of this run (what fio would run for the same workload) and exit.
    #[arg(long, help_heading = "Jobs")]
    pub print_fio: bool,
    /// IOR's command line as jobs, such as '-a POSIX -t 1m -b 64m -F -w -r' (each task
    /// writes its file, then reads it back, in one run); -f SCRIPT runs IOR's script format.
    #[arg(
        long,
        value_name = "ARGS",
        allow_hyphen_values = true,
        conflicts_with_all = ["job", "profile"],
        help_heading = "Jobs"
    )]
    pub ior: Option<String>,
    /// Print IOR's command line for this run (where IOR has one) and exit:
    /// stormark run /mnt/pfs --rw write --bs 1m --size 64m --jobs 4 --print-ior.
    #[arg(long, help_heading = "Jobs")]
    pub print_ior: bool,
    /// Shipped profile (see --list-profiles); flags given too override it.
    #[arg(long, value_name = "NAME", help_heading = "Jobs")]
    pub profile: Option<String>,
    /// List the shipped profiles and exit.
    #[arg(long, help_heading = "Jobs")]
    pub list_profiles: bool,

    /// Write every file fully before measuring (its own phase), so reads never hit holes.
    #[arg(long, help_heading = "Working set")]
    pub prepare: bool,
    /// Keep the run directory and its files (for --reuse).
    #[arg(long, help_heading = "Working set")]
    pub keep: bool,
    /// TARGET is a run directory a --keep run left: use its files after checking their sizes.
    #[arg(long, help_heading = "Working set")]
    pub reuse: bool,

    /// Allow writing into an existing file TARGET that stormark did not create.
    #[arg(long, help_heading = "Safety")]
    pub allow_overwrite: bool,
    /// Allow writing to a block device TARGET (destroys its data).
    #[arg(long, help_heading = "Safety")]
    pub allow_device_write: bool,
    /// Write to a device even if it holds a filesystem or partition-table signature.
    #[arg(long, help_heading = "Safety")]
    pub force: bool,

    /// Size jobs, iodepth and file size from this host and the target's media (flags given
    /// too win); prints what it chose and why.
    #[arg(long, help_heading = "Sizing and diagnosis")]
    pub auto: bool,
    /// Repetitions, expectations, searches, curves and sweeps.
    #[command(flatten)]
    pub shape: ShapeArgs,

    /// Where the results go.
    #[command(flatten)]
    pub output: OutputArgs,

    /// The agents of a distributed run.
    #[command(flatten)]
    pub distributed: DistributedArgs,
    /// Per-agent target, HOST=PATH (HOST as in --agents, with or without the port); repeat
    /// for each agent. TARGET, when given, is the default.
    #[arg(
        long = "target",
        id = "target_map",
        value_name = "HOST=PATH",
        help_heading = "Distributed"
    )]
    pub target_map: Vec<String>,
    /// A job on these hosts only (indexes from 0 in the order of --agents, ranges, names as in
    /// --agents): the workload flags after it, up to the next --on, are its own, over those
    /// given before the first --on; the jobs of all --on run at once. The run's own options
    /// go before the first --on.
    #[arg(long = "on", value_name = "HOSTS", help_heading = "Distributed")]
    pub on: Vec<String>,
    /// The `--on` sections, taken out before clap reads the command line (`cli_on.rs`).
    #[arg(skip)]
    pub on_sections: Vec<crate::cli_on::OnSection>,
    /// The keys of an S3 run (set by `stormark s3`, never a flag of `run`).
    #[arg(skip)]
    pub s3: Option<stormark_cluster::S3Access>,
    /// Per-agent S3 endpoints, HOST=URL (set by `stormark s3`).
    #[arg(skip)]
    pub host_endpoints: Vec<String>,
    /// Notes for the results, from the command that made this run (`s3 --embedded`).
    #[arg(skip)]
    pub notes: Vec<String>,
    /// The token of the net jobs' servers (set by `stormark net client --token-file`).
    #[arg(skip)]
    pub net_token: Option<String>,
}

/// Repetitions, expectations and the shapes of a run (`run`, `s3`, `meta`, `net client`).
#[derive(Debug, Default, Clone, Args)]
pub struct ShapeArgs {
    /// Run the whole workload N times; per figure the mean, spread and 95% confidence
    /// interval over the repetitions.
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        help_heading = "Sizing and diagnosis"
    )]
    pub repeat: Option<String>,
    /// Expected figures, to compare with what is measured: iops, bw, mean, p50 ... p99.99, max
    /// (e.g. iops=90k,bw=520MB/s,p99=2ms). A miss is reported as a finding.
    #[arg(
        long,
        value_name = "LIST",
        allow_hyphen_values = true,
        help_heading = "Sizing and diagnosis"
    )]
    pub expect: Option<String>,

    /// Search for the highest sustained throughput meeting every limit (p99<=2ms; several
    /// joined by commas): concurrency doubles (workers, then depth; --jobs and --iodepth are
    /// the most it tries), then open-loop rates narrow the knee. Each step is a phase
    /// search-step-N.
    #[arg(
        long,
        value_name = "LIMITS",
        allow_hyphen_values = true,
        help_heading = "Search, curves and sweeps"
    )]
    pub target_latency: Option<String>,
    /// Measured time of each search step, and of each curve point without --time
    /// [default: 20s].
    #[arg(
        long,
        value_name = "DURATION",
        allow_hyphen_values = true,
        help_heading = "Search, curves and sweeps"
    )]
    pub step_time: Option<String>,
    /// Most steps the search may take [default: 20].
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        help_heading = "Search, curves and sweeps"
    )]
    pub search_steps: Option<String>,
    /// Throughput-latency curve: the closed-loop maximum first, then open loop at these
    /// percentages of it (e.g. 10,30,50,70,90,100).
    #[arg(
        long,
        value_name = "PCTS",
        allow_hyphen_values = true,
        help_heading = "Search, curves and sweeps"
    )]
    pub curve: Option<String>,
    /// Run the workload once per value (bs, size, jobs, iodepth, or agents: the first N; e.g.
    /// bs=4k,64k,1m; for S3, concurrency=8,32); give two to run every combination as a matrix.
    /// With jobs or agents, scaling efficiency is reported.
    #[arg(
        long,
        value_name = "KEY=LIST",
        allow_hyphen_values = true,
        help_heading = "Search, curves and sweeps"
    )]
    pub sweep: Vec<String>,
    /// A mesh of the agents' hosts (`stormark net --agents`), not a flag.
    #[arg(skip)]
    pub mesh: bool,
}

/// Where the results go (`run` and `s3`).
#[derive(Debug, Default, Args)]
pub struct OutputArgs {
    /// Write the results document (JSON) here, even if the run fails.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub json: Option<PathBuf>,
    /// Also write the report as one self-contained HTML page (charts as inline SVG), even if
    /// the run fails (`stormark report` makes it again from the JSON).
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub html: Option<PathBuf>,
    /// Serve the live figures for Prometheus at http://ADDR/metrics while the run lasts
    /// (throughput, latency quantiles and errors of each second, per operation; the phase).
    #[arg(long, value_name = "ADDR:PORT", help_heading = "Output")]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// No live line and no progress lines (the tables and the summary remain).
    #[arg(long, short, help_heading = "Output")]
    pub quiet: bool,
    /// A progress line every DURATION (`progress: phase 2/3 ...`, one line each, beside the
    /// tables), instead of the live line a terminal redraws; the default without a terminal
    /// is 10s (a CI log, kubectl logs); 0: none.
    #[arg(long, value_name = "DURATION", help_heading = "Output")]
    pub progress: Option<String>,
}

/// The agents of a distributed run (`run` and `s3`).
#[derive(Debug, Default, Args)]
pub struct DistributedArgs {
    /// Run on these agents at once (host:port, comma-separated) instead of this host.
    #[arg(long, value_name = "LIST", help_heading = "Distributed")]
    pub agents: Option<String>,
    /// Agents from a TOML file: [[agent]] sections with address and, optionally, target (or,
    /// for S3, endpoint).
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "agents",
        help_heading = "Distributed"
    )]
    pub agents_file: Option<PathBuf>,
    /// The agents' shared token (one line), required with --agents.
    #[arg(long, value_name = "FILE", help_heading = "Distributed")]
    pub token_file: Option<PathBuf>,
    /// When an agent fails, hangs or is cut off mid-run: abort (default) or continue.
    #[arg(long, value_name = "POLICY", help_heading = "Distributed")]
    pub on_agent_failure: Option<String>,
    /// With --on-agent-failure continue: abort once more than N agents have failed (a large
    /// fleet goes on without a few hosts, not without half of them).
    #[arg(long, value_name = "N", help_heading = "Distributed")]
    pub max_failed_agents: Option<String>,
    /// Talk TLS to the agents, trusting this CA (PEM); their certificates must name the
    /// hosts as given in --agents.
    #[arg(long, value_name = "FILE", help_heading = "Distributed")]
    pub tls_ca: Option<PathBuf>,
    /// Start this run's agents with a launcher, its command line given whole ('srun -n 4',
    /// 'mpirun -np 4'): the agent's command is appended, each agent reports its address
    /// through the launcher's output, serves this run, and exits with it.
    #[arg(long, value_name = "COMMAND", conflicts_with_all = ["agents", "agents_file", "token_file"], help_heading = "Distributed")]
    pub launch: Option<String>,
    /// With --launch: how long the agents may take to report, all of them [default: 60s].
    #[arg(
        long,
        value_name = "DURATION",
        requires = "launch",
        help_heading = "Distributed"
    )]
    pub launch_wait: Option<String>,
    /// With --launch: each agent listens on its host's address in this network (10.0.0.0/16)
    /// instead of the one its host reaches the coordinator from.
    #[arg(
        long,
        value_name = "NET",
        requires = "launch",
        help_heading = "Distributed"
    )]
    pub launch_net: Option<String>,
}

/// Options of `stormark compare`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  stormark compare before.json after.json\n      each figure of after.json against before.json: delta and significance\n  stormark compare base.json new.json --noise 2% --fail-if-worse 5%\n      a regression gate: exit 1 when new.json is significantly worse by more than 5%,\n      or when the two differ in workload, version or hosts, or one did not finish\n  stormark compare old-kernel.json new-kernel.json --fail-if-worse 5% --allow-different --json -\n      the same gate across an intended change of host, the rows as JSON on stdout\n\nA gate refuses a document whose verdict is suspect (its reasons are printed) unless\n--allow-suspect is given.\n\nSignificance is Welch's t-test over repetitions (--repeat) when both documents have them,\nelse over their 1-second intervals, whose number is discounted for autocorrelation."
)]
pub struct CompareArgs {
    /// The baseline, then one or more documents to compare with it.
    #[arg(value_name = "RESULTS.json", num_args = 2.., required = true)]
    pub files: Vec<PathBuf>,
    /// Differences smaller than this are noise, significant or not.
    #[arg(
        long,
        value_name = "PCT",
        default_value = "3%",
        allow_hyphen_values = true
    )]
    pub noise: String,
    /// Exit 1 when a figure is significantly worse than the baseline by more than this.
    #[arg(long, value_name = "PCT", allow_hyphen_values = true)]
    pub fail_if_worse: Option<String>,
    /// With --fail-if-worse: compare documents of different workloads, versions or hosts, or
    /// runs that did not finish, without failing on that alone.
    #[arg(long)]
    pub allow_different: bool,
    /// With --fail-if-worse: gate on documents whose verdict is suspect (reads from a cache,
    /// a client limit, a run too short, ...) without failing on that alone.
    #[arg(long)]
    pub allow_suspect: bool,
    /// Also write the comparison as JSON (- for standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write the comparison as one self-contained HTML page: the documents, each table
    /// with deltas and verdicts, and the latency distributions drawn over each other.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Also write the comparison as Markdown (for a pull-request comment; - for standard
    /// output).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
}

/// Options of `stormark report`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  stormark report results.json\n      the tables and summary the run printed, as one text (each host's counters under its phase)\n  stormark report results.json --html report.html\n      one self-contained page (opens offline): tables, charts over time, the latency\n      distribution, per-host bars, findings\n  stormark report ci/*.json --html trend.html\n      a trend over many documents of one workload: each figure run by run, significant\n      changes ringed\n  stormark report results.json --markdown results.md\n      the command, summary table, findings and notes as Markdown (for a pull request or a wiki)\n  stormark report results.json --csv out/\n      out/summary.csv (a row per phase, host and operation) and out/intervals.csv (a row per\n      second of each phase and operation), out/summary_table.csv with --repeat or a sweep\n      (max, min, mean, sd per phase and operation), and out/mesh.csv for a network mesh\n\nFigures in CSV are raw (ns, bytes, per second); Markdown shows them as the terminal does."
)]
pub struct ReportArgs {
    /// The results document (`--json` of run, s3 or net); several, in order, for a trend
    /// (with --html).
    #[arg(value_name = "RESULTS.json", num_args = 1.., required = true)]
    pub files: Vec<PathBuf>,
    /// Write one self-contained HTML page here: tables, charts as inline SVG, findings
    /// (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write Markdown here (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Write CSV files into this directory (made if missing; its parent must exist).
    #[arg(long, value_name = "DIR")]
    pub csv: Option<PathBuf>,
}

/// Options of `stormark agent`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  head -c 32 /dev/urandom | base64 > /etc/stormark/token && chmod 600 /etc/stormark/token\n  stormark agent --listen 0.0.0.0:7878 --token-file /etc/stormark/token --allow-path /mnt/bench\n      then, on the coordinator: stormark run /mnt/bench --agents host1:7878,host2:7878 --token-file token\n  stormark agent --token-file token --allow-path /mnt/bench --allow-device /dev/nvme1n1\n      also a raw device (coordinators add --allow-device-write to write it)\n  stormark agent --token-file token --allow-path /mnt/bench --allow-iscsi iscsi://10.0.0.5/iqn.2003-01.org.example:disk1\n      also the LUNs of an iSCSI target, over this host's own sessions (CHAP from its environment)\n  stormark agent --token-file token --allow-path /mnt/bench --allow-nfs nfs://10.0.0.6/export/bench\n      also a directory of an NFS share, over this host's own connections (no mount)\n  stormark agent --token-file token --allow-path /mnt/bench --tls-cert a.pem --tls-key a.key\n      over TLS (coordinators give --tls-ca); --state-dir journals run directories for crashes\n  STORMARK_LAUNCH_TOKEN=... stormark agent --launched --coordinator 10.0.0.1 --allow-path /mnt/bench --launch-net 10.0.0.0/16 --runs 1\n      what `stormark run --launch` appends to its launcher: serves that run on a port of its\n      own, said on standard output, then exits (or after --contact-within 90 s without one);\n      --tls-dir tls serves TLS with tls/HOST.pem and tls/HOST.key\n\nThe agent runs only stormark's own load, only on paths under --allow-path, for one\ncoordinator at a time; a coordinator silent for 5 s loses its run (load stopped, files removed)."
)]
pub struct AgentArgs {
    /// Address and port to listen on.
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:7878")]
    pub listen: String,
    /// The shared token coordinators must present (one line, at least 16 characters).
    #[arg(long, value_name = "FILE", required_unless_present = "launched")]
    pub token_file: Option<PathBuf>,
    /// A directory or device coordinators may use; repeat for more. Nothing else is touched.
    #[arg(long, value_name = "PATH", required = true)]
    pub allow_path: Vec<PathBuf>,
    /// A block device coordinators may write with --allow-device-write; repeat for more.
    /// Checked by device number: a device node made under an allowed directory is refused.
    #[arg(long, value_name = "DEVICE")]
    pub allow_device: Vec<PathBuf>,
    /// An iSCSI target coordinators may use, iscsi://HOST[:PORT]/IQN (every LUN) or
    /// iscsi://HOST[:PORT]/IQN/LUN; repeat for more. Writes also need the coordinator's
    /// --allow-device-write. CHAP comes from this host's STORMARK_ISCSI_USER and
    /// STORMARK_ISCSI_SECRET (or STORMARK_ISCSI_CHAP_FILE), never from the coordinator.
    #[arg(long, value_name = "URL")]
    pub allow_iscsi: Vec<String>,
    /// An NFS share directory coordinators may use, with what lies beneath it,
    /// nfs://SERVER[:PORT]/EXPORT[/DIR]; repeat for more. Runs make their run directory there
    /// and remove it at their end.
    #[arg(long, value_name = "URL")]
    pub allow_nfs: Vec<String>,
    /// Where the agent journals the run directories it creates, so that after a crash its
    /// next start removes them (or reports those kept with --keep).
    #[arg(long, value_name = "DIR", default_value = "/var/lib/stormark")]
    pub state_dir: PathBuf,
    /// Serve TLS with this certificate (PEM; with --tls-key). Coordinators then need --tls-ca.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Serve this host's load for Prometheus at http://ADDR/metrics (counters of operations,
    /// bytes and failures per operation, for as long as the agent runs).
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Serve the runs of the coordinator that launched this agent (`stormark run --launch`
    /// appends this), then exit: a port of its own, said on standard output; the token
    /// from STORMARK_LAUNCH_TOKEN.
    #[arg(
        long,
        requires = "coordinator",
        conflicts_with = "token_file",
        help_heading = "Launched"
    )]
    pub launched: bool,
    /// With --launched: the coordinator's address; the agent listens on the address its
    /// host reaches it from.
    #[arg(
        long,
        value_name = "ADDR",
        requires = "launched",
        help_heading = "Launched"
    )]
    pub coordinator: Option<std::net::IpAddr>,
    /// With --launched: listen on this host's address in this network instead.
    #[arg(
        long,
        value_name = "NET",
        requires = "launched",
        help_heading = "Launched"
    )]
    pub launch_net: Option<String>,
    /// With --launched: serve TLS with DIR/HOST.pem and DIR/HOST.key, HOST this host's name
    /// (`stormark cert agent DIR --name HOST` makes them).
    #[arg(
        long,
        value_name = "DIR",
        requires = "launched",
        conflicts_with = "tls_cert",
        help_heading = "Launched"
    )]
    pub tls_dir: Option<PathBuf>,
    /// With --launched: the runs to serve before exiting (the coordinator's --repeat).
    #[arg(long, value_name = "N", default_value_t = 1, help_heading = "Launched")]
    pub runs: u32,
    /// With --launched: exit when no coordinator has come within this many seconds.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 90,
        help_heading = "Launched"
    )]
    pub contact_within: u64,
}

/// Options of `stormark probe`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  stormark probe\n      this host, and what --auto would choose for the current directory\n  stormark probe /mnt/data --json host.json\n      the same for /mnt/data, and the inventory as JSON\n  stormark probe --show-serial\n      also each block device's serial number (left out unless asked, here and in results)"
)]
pub struct ProbeArgs {
    /// Directory, file or block device to size --auto for [default: the current directory].
    pub target: Option<PathBuf>,
    /// Also write the inventory as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also read and show each block device's serial number (and write it with --json); left
    /// out otherwise, and never in a results document, so that what is shared does not carry it.
    #[arg(long)]
    pub show_serial: bool,
}
