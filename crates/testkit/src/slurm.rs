//! A real single-node Slurm for the tests: munge (`munged`), the controller (`slurmctld`) and
//! the node daemon (`slurmd`) from Debian's packages, each in the foreground with a
//! configuration, key, sockets, spool and logs of their own in a temporary directory, on ports
//! of their own; stopped when dropped. The node says it has 4 CPUs whatever the host has
//! (`SlurmdParameters=config_overrides`), so that `srun -n 4` runs four tasks on 2 cores.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{temp_dir, TempDir};

/// How long the node may take to be idle (ready for jobs) once the daemons start.
const READY_WITHIN: Duration = Duration::from_secs(60);

/// A running Slurm of one node.
pub struct Slurm {
    /// Its `slurm.conf`: give it to `srun` as `SLURM_CONF`.
    pub conf: PathBuf,
    daemons: Vec<Child>,
    dir: TempDir,
}

impl Slurm {
    /// For test `test`: a Slurm as [`Slurm::start`] makes it, or `None` (the skip recorded)
    /// where the tests are not root or Slurm's or munge's daemons are not installed.
    pub fn for_test(base: &str, test: &str) -> Option<Slurm> {
        if !crate::require_root(test) {
            return None;
        }
        for (tool, package) in [
            ("munged", "munge"),
            ("slurmctld", "slurmctld"),
            ("slurmd", "slurmd"),
            ("srun", "slurm-client"),
        ] {
            if Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .output()
                .map_or(true, |o| !o.status.success())
            {
                crate::skip(
                    test,
                    &format!("`{tool}` is not installed (Debian: {package})"),
                );
                return None;
            }
        }
        Some(Slurm::start(base).expect("Slurm starts"))
    }

    /// Starts munged, slurmctld and slurmd and waits until the node takes jobs. Says why not
    /// (with the daemons' last log lines) where it cannot.
    pub fn start(base: &str) -> Result<Slurm, String> {
        let dir = temp_dir(base);
        let d = dir.path().to_path_buf();
        for sub in ["munge", "spool", "state"] {
            std::fs::create_dir(d.join(sub)).map_err(|e| format!("{sub}: {e}"))?;
        }
        // munged wants its key readable by its user alone, and its directory not writable by
        // others.
        use std::os::unix::fs::PermissionsExt;
        let key = d.join("munge/munge.key");
        let mut bytes = vec![0u8; 1024];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
            .map_err(|e| format!("/dev/urandom: {e}"))?;
        std::fs::write(&key, &bytes).map_err(|e| format!("munge key: {e}"))?;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o400))
            .and_then(|_| {
                std::fs::set_permissions(d.join("munge"), std::fs::Permissions::from_mode(0o755))
            })
            .map_err(|e| format!("munge key: {e}"))?;
        let socket = d.join("munge/socket");
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .map_err(|e| format!("hostname: {e}"))?;
        let (ctld_port, slurmd_port) = (
            crate::minio::free_port("127.0.0.1"),
            crate::minio::free_port("127.0.0.1"),
        );
        let p = |sub: &str| d.join(sub).display().to_string();
        let conf = d.join("slurm.conf");
        std::fs::write(
            &conf,
            format!(
                "ClusterName=stormarktest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={socket}
StateSaveLocation={state}
SlurmdSpoolDir={spool}
SlurmctldPidFile={ctld_pid}
SlurmdPidFile={slurmd_pid}
SlurmctldLogFile={ctld_log}
SlurmdLogFile={slurmd_log}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/linear
SchedulerType=sched/builtin
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=5
NodeName={host} NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=bench Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
",
                socket = socket.display(),
                state = p("state"),
                spool = p("spool"),
                ctld_pid = p("slurmctld.pid"),
                slurmd_pid = p("slurmd.pid"),
                ctld_log = p("slurmctld.log"),
                slurmd_log = p("slurmd.log"),
            ),
        )
        .map_err(|e| format!("slurm.conf: {e}"))?;
        let mut slurm = Slurm {
            conf: conf.clone(),
            daemons: Vec::new(),
            dir,
        };
        let spawn = |cmd: &mut Command| {
            cmd.stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("{cmd:?}: {e}"))
        };
        slurm.daemons.push(spawn(
            Command::new("munged")
                .arg("--foreground")
                .arg("--force")
                .arg(format!("--key-file={}", key.display()))
                .arg(format!("--socket={}", socket.display()))
                .arg(format!("--pid-file={}", p("munge/pid")))
                .arg(format!("--log-file={}", p("munge/log")))
                .arg(format!("--seed-file={}", p("munge/seed"))),
        )?);
        let deadline = Instant::now() + READY_WITHIN;
        while !socket.exists() {
            if Instant::now() >= deadline {
                return Err(format!("munged made no socket: {}", slurm.logs()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let conf_arg = conf.display().to_string();
        slurm.daemons.push(spawn(
            Command::new("slurmctld").args(["-D", "-f", &conf_arg]),
        )?);
        slurm
            .daemons
            .push(spawn(Command::new("slurmd").args(["-D", "-f", &conf_arg]))?);
        loop {
            let state = Command::new("sinfo")
                .args(["-h", "-o", "%T"])
                .env("SLURM_CONF", &conf)
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .unwrap_or_default();
            if state == "idle" {
                return Ok(slurm);
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "the node is {state:?}, not idle, {} s after the daemons started: {}",
                    READY_WITHIN.as_secs(),
                    slurm.logs()
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The last lines of the daemons' logs.
    pub fn logs(&self) -> String {
        ["munge/log", "slurmctld.log", "slurmd.log"]
            .iter()
            .map(|f| {
                let text = std::fs::read_to_string(self.dir.path().join(f)).unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                format!(
                    "{f}: {}",
                    lines[lines.len().saturating_sub(5)..].join(" | ")
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        // The node daemon first (it ends its steps), then the controller, then munge.
        for child in self.daemons.iter_mut().rev() {
            // SAFETY: kill(2) on our own child's pid, with SIGTERM (15); no memory is touched.
            unsafe { kill(child.id() as i32, 15) };
            let until = Instant::now() + Duration::from_secs(10);
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
}
