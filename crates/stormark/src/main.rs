//! stormark: what does this storage really sustain, at what latency, and what is holding it
//! back? The binary is thin: it parses the command line, builds a workload, hands it to the
//! coordinator and writes the results. Exit status: 0 ok, 1 the run failed or counted I/O
//! errors or was interrupted, 2 a user error found before any load.

/// `print!` that ends quietly when standard output is closed (`stormark ... | head`): the
/// write error is ignored instead of panicking.
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($t)*);
    }};
}

/// `println!` that ends quietly when standard output is closed.
macro_rules! outln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}

/// The command line as results record it, with the value of `--secret-key` hidden: a
/// results document is shared, a secret never is.
fn command_line() -> Vec<String> {
    stormark_stats::redact_command(std::env::args_os().map(|a| a.to_string_lossy().into_owned()))
}

/// An output of a command (`--json`, `--html`, `--markdown`), checked before any load: never
/// one of `inputs`, written atomically later; `-` is standard output where `stdout` allows
/// it (a results document), else a mistake (a page goes to a file).
fn output(
    flag: &str,
    path: Option<&std::path::Path>,
    inputs: &[&std::path::Path],
    stdout: bool,
) -> anyhow::Result<Option<stormark_report::Output>> {
    let Some(path) = path else {
        return Ok(None);
    };
    if !stdout && path.as_os_str() == "-" {
        let example = match flag {
            "--markdown" => "report.md",
            _ => "report.html",
        };
        return Err(usage(format!("{flag} -: give a file, such as {example}")));
    }
    stormark_report::Output::check(flag, path, inputs)
        .map(Some)
        .map_err(|e| usage(e.to_string()))
}

/// Reads a text file of at most `limit` bytes (a job file, a results document): a path
/// given by mistake (a device, a huge log) is refused, never read whole into memory.
fn read_limited(path: &std::path::Path, limit: u64, what: &str) -> std::io::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK: a FIFO given as the file must not hang the open until a writer comes
    // (nothing reads a FIFO here: it is refused below, and a regular file ignores the flag).
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    // A device, a FIFO or a directory is not a file of ours (`/dev/zero` would be read to
    // the limit), and a file over the limit is refused before it is read.
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other(format!(
            "not a regular file; not {what}"
        )));
    }
    if meta.len() > limit {
        return Err(std::io::Error::other(format!(
            "larger than {}; not {what}",
            stormark_spec::units::format_size(limit)
        )));
    }
    let mut text = String::new();
    let n = file.take(limit + 1).read_to_string(&mut text)?;
    if n as u64 > limit {
        return Err(std::io::Error::other(format!(
            "larger than {}; not {what}",
            stormark_spec::units::format_size(limit)
        )));
    }
    Ok(text)
}

/// A mistake in what the user asked for, found before any load: exit 2.
#[derive(Debug)]
struct Usage(String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// A user error (exit 2), as every command returns it.
fn usage(msg: impl Into<String>) -> anyhow::Error {
    Usage(msg.into()).into()
}

/// How a command that ran to its end ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// Exit 0.
    Success,
    /// Exit 1: the run failed, counted errors or was interrupted, or a gate failed; what
    /// happened has been reported.
    Failed,
}

/// The one place where how a command ended becomes the exit status: 0 success, 1 a failure
/// (reported), 2 a user error found before any load.
fn exit_status(result: anyhow::Result<Ending>) -> i32 {
    match result {
        Ok(Ending::Success) => 0,
        Ok(Ending::Failed) => 1,
        Err(e) => {
            eprintln!("error: {e:#}");
            if e.downcast_ref::<Usage>().is_some() {
                2
            } else {
                1
            }
        }
    }
}

mod agent_cmd;
mod cert_cmd;
mod cli;
mod cli_cert;
mod cli_flags;
mod cli_meta;
mod cli_net;
mod cli_on;
mod cli_suite;
mod compare_cmd;
mod fleet;
mod ior;
mod meta_cmd;
mod net_cmd;
mod net_mesh;
mod probe_cmd;
mod report_cmd;
mod run;
mod s3_cmd;
mod suite_cmd;
mod watch;

use clap::Parser;

/// Rewrites fio's spellings of options (`--blocksize`, `--ramp_time`, `--io_size`,
/// `--iodepth_batch_submit`, ...) to stormark's, as job files accept them. A name clap knows
/// is left alone; after `--` nothing is touched.
fn fio_spellings(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    use clap::CommandFactory;
    let cmd = cli::Cli::command();
    let known: std::collections::BTreeSet<String> = cmd
        .get_subcommands()
        .flat_map(|s| s.get_arguments())
        .filter_map(|a| a.get_long().map(String::from))
        .collect();
    let mut out = Vec::with_capacity(args.len());
    let mut rest = false;
    for a in args {
        let Some(text) = a
            .to_str()
            .filter(|t| !rest && t.starts_with("--") && t.len() > 2)
        else {
            rest |= a == "--";
            out.push(a);
            continue;
        };
        let (name, value) = match text[2..].split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (&text[2..], None),
        };
        let hyphens = name.replace('_', "-");
        let long = if known.contains(name) {
            name.to_string()
        } else if known.contains(&hyphens) {
            hyphens
        } else {
            match stormark_spec::canonical_key(name).map(|k| k.replace('_', "-")) {
                Some(k) if known.contains(&k) => k,
                _ => name.to_string(),
            }
        };
        out.push(match value {
            Some(v) => format!("--{long}={v}").into(),
            None => format!("--{long}").into(),
        });
    }
    out
}

/// Signals whose default action ends the process at once, leaving a run directory and a
/// results document that says `running` (SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM), each taken as
/// Ctrl-C: the command's own SIGINT handler (or SIGINT's default where it has none) decides.
/// SIGTERM and SIGHUP are Ctrl-C's already (ctrlc's `termination`).
fn signals_as_ctrl_c() {
    extern "C" fn forward(_: libc::c_int) {
        // SAFETY: getpid(2) and kill(2) are async-signal-safe.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGINT);
        }
    }
    for sig in [libc::SIGQUIT, libc::SIGUSR1, libc::SIGUSR2, libc::SIGALRM] {
        // SAFETY: the handler calls async-signal-safe functions only.
        unsafe {
            libc::signal(
                sig,
                forward as extern "C" fn(libc::c_int) as libc::sighandler_t,
            );
        }
    }
}

fn main() {
    signals_as_ctrl_c();
    let (args, on) = match cli_on::split(fio_spellings(std::env::args_os().collect())) {
        Ok(split) => split,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let mut cli = cli::Cli::parse_from(args);
    if let cli::Command::Run(run) = &mut cli.command {
        run.on_sections = on
            .into_iter()
            .map(|(hosts, words)| cli_on::section(hosts, words))
            .collect();
    }
    let result = match cli.command {
        cli::Command::Run(args) => run::main(*args),
        cli::Command::Probe(args) => probe_cmd::main(args),
        cli::Command::Agent(args) => agent_cmd::main(args),
        cli::Command::Compare(args) => compare_cmd::main(args),
        cli::Command::Report(args) => report_cmd::main(&args),
        cli::Command::S3(args) => s3_cmd::main(*args),
        cli::Command::Net(args) => net_cmd::main(*args),
        cli::Command::Meta(args) => meta_cmd::main(*args),
        cli::Command::Suite(args) => suite_cmd::main(*args),
        cli::Command::Cert(args) => cert_cmd::main(args),
    };
    std::process::exit(exit_status(result));
}

/// A stop flag that Ctrl-C sets (the commands outside `run`: a net server, a mesh).
pub(crate) fn ctrl_c() -> anyhow::Result<std::sync::Arc<std::sync::atomic::AtomicBool>> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s = stop.clone();
    ctrlc::set_handler(move || s.store(true, std::sync::atomic::Ordering::Relaxed))
        .map_err(|e| anyhow::anyhow!("cannot install the Ctrl-C handler: {e}"))?;
    Ok(stop)
}
