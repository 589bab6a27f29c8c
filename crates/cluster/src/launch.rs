//! Agents started for one run by a launcher the site already has (`srun`, `mpirun`): the
//! coordinator runs the launcher's command line with an agent's command line appended, reads
//! back each agent's address from the launcher's standard output, and tears the launcher and
//! its agents down when the run is over, however it ended.
//!
//! The one-run token travels in the launcher's environment ([`TOKEN_ENV`]), never on a command
//! line: srun hands its environment to every task, mpirun to its local ranks (and, with `-x`,
//! to other hosts' ranks). The launcher runs in a process group of its own, so that its end
//! (SIGTERM, then SIGKILL) reaches whatever it started here.

use std::collections::{BTreeMap, VecDeque};
use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::net::IpAddr;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod announce;
mod ephemeral;

pub use announce::{rank_and_size, Announce};
pub use ephemeral::{serve_launched, LaunchedAgent, Net};

/// The environment variable that carries the one-run token to launched agents.
pub const TOKEN_ENV: &str = "STORMARK_LAUNCH_TOKEN";

/// How long the launcher may take to exit by itself once the run is over (its agents exit
/// when their run ends), before it is told to stop (SIGTERM), and again before it is killed.
const LAUNCHER_GRACE: Duration = Duration::from_secs(10);

/// What went wrong before the agents were all there: one line for the user each.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The launcher's command line does not split into words.
    #[error("--launch {shown}: expected a launcher's command line, such as 'srun -n 4' or 'mpirun -np 4' (the agent's command is appended to it)")]
    BadCommand {
        /// The command line, quoted as given.
        shown: String,
    },
    /// The launcher could not be started.
    #[error("--launch {shown}: cannot start {program}: {source}")]
    Spawn {
        /// The command line, quoted as given.
        shown: String,
        /// Its first word.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// The launcher ended, or the wait did, before every agent reported.
    #[error("--launch {shown}: {what} after {reported} of {expected} agents reported their address{words}")]
    Short {
        /// The command line, quoted as given.
        shown: String,
        /// What happened (`the launcher exited (exit status: 1)`, `no more within 60 s`).
        what: String,
        /// How many reported.
        reported: usize,
        /// How many the launcher started (as its agents say), or `?` when none reported.
        expected: String,
        /// The launcher's last line on standard error, if any (`; it said: ...`).
        words: String,
    },
    /// The agents disagree on how many they are, or two claim one rank.
    #[error("--launch {shown}: {why}")]
    Inconsistent {
        /// The command line, quoted as given.
        shown: String,
        /// What.
        why: String,
    },
    /// Ctrl-C while waiting for the agents.
    #[error("interrupted while waiting for the launched agents")]
    Interrupted,
}

/// How to launch the agents of a run.
#[derive(Debug, Clone)]
pub struct LaunchOptions {
    /// The launcher's command line as typed (`srun -n 4`).
    pub command: String,
    /// The agent's command line appended to it (the program first).
    pub agent: Vec<OsString>,
    /// The one-run token, put in the launcher's environment as [`TOKEN_ENV`].
    pub token: String,
    /// How long the agents may take to report, all of them.
    pub wait: Duration,
}

/// A launcher running, and its agents' addresses in rank order. Dropped without
/// [`Launched::finish`], it tells the launcher and what it started to stop at once.
pub struct Launched {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Each agent as it reported, in rank order.
    pub agents: Vec<Announce>,
    finished: bool,
}

impl Launched {
    /// Starts the launcher and waits until every agent it started has reported its address,
    /// at most `opts.wait`; Ctrl-C (`stop`) ends the wait. On any error the launcher and what
    /// it started are ended before the error is returned.
    pub fn start(opts: &LaunchOptions, stop: &AtomicBool) -> Result<Launched, LaunchError> {
        let shown = quoted(&opts.command);
        let words = shlex::split(&opts.command)
            .filter(|w| !w.is_empty())
            .ok_or_else(|| LaunchError::BadCommand {
                shown: shown.clone(),
            })?;
        let mut child = Command::new(&words[0])
            .args(&words[1..])
            .args(&opts.agent)
            .env(TOKEN_ENV, &opts.token)
            // A pipe the launcher forwards to its tasks (srun: to all, mpirun: to rank 0),
            // never written: its end tells the agents the coordinator is gone.
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group: ended as one, and a terminal's Ctrl-C reaches the coordinator
            // only, which then ends the run in order.
            .process_group(0)
            .spawn()
            .map_err(|source| LaunchError::Spawn {
                shown: shown.clone(),
                program: words[0].clone(),
                source,
            })?;
        let stdin = child.stdin.take();
        let (tx, rx) = mpsc::channel::<Announce>();
        let stdout = child.stdout.take().expect("stdout is piped");
        // Read to the end, whatever comes: a launcher blocked on a full pipe would stall its
        // tasks.
        std::thread::spawn(move || {
            each_line(stdout, |line| {
                if let Some(a) = Announce::parse(line) {
                    let _ = tx.send(a);
                }
            })
        });
        let last_words = Arc::new(Mutex::new(VecDeque::new()));
        let stderr = child.stderr.take().expect("stderr is piped");
        let said = last_words.clone();
        std::thread::spawn(move || {
            each_line(stderr, |line| {
                let mut said = said.lock().unwrap_or_else(|e| e.into_inner());
                if said.len() == 64 {
                    said.pop_front();
                }
                said.push_back(line.to_string());
            })
        });
        let mut launched = Launched {
            child,
            stdin,
            agents: Vec::new(),
            finished: false,
        };
        match launched.gather(&rx, opts, stop) {
            Ok(agents) => {
                launched.agents = agents;
                Ok(launched)
            }
            Err(e) => {
                // Nothing to wait for: the run will not start.
                launched.end(false);
                Err(match e {
                    Gather::Short {
                        what,
                        reported,
                        expected,
                    } => LaunchError::Short {
                        shown,
                        what,
                        reported,
                        expected: expected.map_or("?".into(), |n| n.to_string()),
                        words: last_line(&last_words),
                    },
                    Gather::Inconsistent(why) => LaunchError::Inconsistent { shown, why },
                    Gather::Interrupted => LaunchError::Interrupted,
                })
            }
        }
    }

    /// Reads announcements until every rank has reported.
    fn gather(
        &mut self,
        rx: &mpsc::Receiver<Announce>,
        opts: &LaunchOptions,
        stop: &AtomicBool,
    ) -> Result<Vec<Announce>, Gather> {
        let deadline = Instant::now() + opts.wait;
        let mut got: BTreeMap<u32, Announce> = BTreeMap::new();
        let mut size: Option<u32> = None;
        let mut exited: Option<(ExitStatus, Instant)> = None;
        loop {
            if size.is_some_and(|n| got.len() == n as usize) {
                return Ok(got.into_values().collect());
            }
            if stop.load(Ordering::Relaxed) {
                return Err(Gather::Interrupted);
            }
            let short = |what: String| Gather::Short {
                what,
                reported: got.len(),
                expected: size,
            };
            let now = Instant::now();
            if now >= deadline {
                return Err(short(format!(
                    "no more within {} s (--launch-wait)",
                    opts.wait.as_secs()
                )));
            }
            // Lines the launcher forwarded just before it exited are still read.
            if let Some((status, at)) = exited {
                if now >= at + Duration::from_millis(500) {
                    return Err(short(format!("the launcher exited ({status})")));
                }
            } else if let Ok(Some(status)) = self.child.try_wait() {
                exited = Some((status, now));
            }
            let Ok(a) = rx.recv_timeout(Duration::from_millis(100)) else {
                continue;
            };
            match size {
                Some(n) if n != a.size => {
                    return Err(Gather::Inconsistent(format!(
                        "the agents disagree on how many they are ({n} and {}): one launcher's tasks only",
                        a.size
                    )))
                }
                _ => size = Some(a.size),
            }
            if let Some(first) = got.get(&a.rank) {
                return Err(Gather::Inconsistent(format!(
                    "two agents say they are rank {} ({} and {}): does the launcher set its ranks' environment (SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK)?",
                    a.rank, first.address, a.address
                )));
            }
            got.insert(a.rank, a);
        }
    }

    /// Ends the launcher and what it started: its standard input closed (its agents take that
    /// as the coordinator's end), then 10 s to exit, then SIGTERM to its process group (srun
    /// and mpirun pass it on to their tasks), then SIGKILL 10 s later; the launcher reaped.
    /// Whatever is left in its group is told to stop too.
    pub fn finish(&mut self) {
        self.end(true);
    }

    /// [`Launched::finish`]; without `graceful`, the launcher is told to stop at once.
    fn end(&mut self, graceful: bool) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        drop(self.stdin.take());
        let group = self.child.id() as libc::pid_t;
        // SAFETY: kill(2) with a negative pid signals that process group (0: only whether
        // any of it is left); no memory is touched.
        let signal = |sig: libc::c_int| unsafe { libc::kill(-group, sig) == 0 };
        if !graceful || !self.exited_within(LAUNCHER_GRACE) {
            signal(libc::SIGTERM);
            if !self.exited_within(LAUNCHER_GRACE) {
                signal(libc::SIGKILL);
                let _ = self.child.wait();
            }
        }
        // What the launcher left behind in its group (a shell's background tasks).
        if signal(libc::SIGTERM) {
            let until = Instant::now() + LAUNCHER_GRACE;
            while signal(0) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(50));
            }
            signal(libc::SIGKILL);
        }
    }

    fn exited_within(&mut self, limit: Duration) -> bool {
        let until = Instant::now() + limit;
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => return true,
                Ok(None) if Instant::now() >= until => return false,
                Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }
}

impl Drop for Launched {
    /// Not finished first: the run ended early (a mistake found after the launch), and there
    /// is nothing to wait for.
    fn drop(&mut self) {
        self.end(false);
    }
}

enum Gather {
    Short {
        what: String,
        reported: usize,
        expected: Option<u32>,
    },
    Inconsistent(String),
    Interrupted,
}

/// Hands each line read from `from` to `each` until its end, bytes that are not UTF-8
/// replaced (read on whatever comes, so that the launcher never blocks on a full pipe).
fn each_line(from: impl std::io::Read, mut each: impl FnMut(&str)) {
    let mut reader = BufReader::new(from);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) => return,
            Ok(_) => each(String::from_utf8_lossy(&buf).trim_end_matches(['\n', '\r'])),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// What the launcher (or an agent through it) said last on standard error, as the end of an
/// error's line: its last error (`srun: error: ...`, an agent's `error: ...`), else its last
/// line of words (mpirun frames its messages in lines of dashes).
fn last_line(said: &Mutex<VecDeque<String>>) -> String {
    // Its reader may still be at work on what the launcher wrote as it ended.
    std::thread::sleep(Duration::from_millis(100));
    let said = said.lock().unwrap_or_else(|e| e.into_inner());
    let lines = || said.iter().rev().map(|l| l.trim());
    lines()
        .find(|l| l.contains("error:"))
        .or_else(|| lines().find(|l| l.chars().any(char::is_alphanumeric)))
        .map(|l| format!("; it said: {l}"))
        .unwrap_or_default()
}

/// A command line as the user would type it back: in single quotes.
fn quoted(command: &str) -> String {
    shlex::try_quote(command).map_or_else(|_| format!("'{command}'"), |q| q.into_owned())
}

/// An address of this host that agents on other hosts can route to: the first IPv4 address
/// its name resolves to (as Slurm and MPI find a node), else its first address, else IPv4's
/// loopback (a single host).
pub fn coordinator_address() -> IpAddr {
    use std::net::ToSocketAddrs;
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let addrs: Vec<IpAddr> = (name.trim(), 0)
        .to_socket_addrs()
        .map(|a| a.map(|s| s.ip()).collect())
        .unwrap_or_default();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .unwrap_or(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST))
}

/// This host's name, as launched agents report theirs.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|n| n.trim().to_string())
        .unwrap_or_default()
}

/// A token for one run's launched agents: 256 random bits from the kernel, as hex.
pub fn one_run_token() -> String {
    format!("{}{}", crate::auth::session_id(), crate::auth::session_id())
}
