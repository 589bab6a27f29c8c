//! A real NFS server for the tests: nfs-ganesha (Debian's `nfs-ganesha` with its VFS backend)
//! exporting a directory of the test's, in a network namespace of its own with its own
//! rpcbind and /run (so that several run side by side, each on the standard ports), and a
//! private D-Bus through which its statistics are read. Stopped when dropped.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use crate::{temp_dir, NetCluster, TempDir};

/// How long a ganesha may take to serve its export once started.
const SERVING_WITHIN: std::time::Duration = std::time::Duration::from_secs(120);

/// The last lines of a log, for a message.
fn log_tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// One ganesha serving one export, `/export`, of a directory of the test's.
pub struct Ganesha {
    /// The server's address (on a bridge the test's namespace is on too).
    pub host: String,
    /// The exported directory, on this machine.
    pub export: PathBuf,
    bus: String,
    child: Child,
    dir: TempDir,
    _net: Option<NetCluster>,
}

impl Ganesha {
    /// For test `test`: a server as [`Ganesha::start`] makes it, or `None` (the skip recorded)
    /// where the tests are not root or cannot make namespaces, or ganesha, rpcbind, D-Bus or
    /// libnfs (`libnfs-utils` brings it) is missing.
    pub fn for_test(base: &str, test: &str) -> Option<Ganesha> {
        Ganesha::available(test).then(|| Ganesha::start(base).expect("ganesha starts"))
    }

    /// Whether a server can be started here; records why a test skips when not.
    pub fn available(test: &str) -> bool {
        if !crate::require_netns(test)
            || !crate::require_tool(test, "dbus-daemon")
            || !crate::require_tool(test, "nfs-ls")
        {
            return false;
        }
        for tool in ["ganesha.nfsd", "rpcbind"] {
            let found = Command::new("which")
                .arg(tool)
                .output()
                .is_ok_and(|o| o.status.success());
            if !found {
                crate::skip(test, &format!("`{tool}` is not installed"));
                return false;
            }
        }
        true
    }

    /// Starts ganesha in a namespace of its own on a fresh bridge.
    pub fn start(base: &str) -> Result<Ganesha, String> {
        let net = NetCluster::new(1)?;
        let (ns, host) = (net.namespaces[0].clone(), net.addresses[0].clone());
        let mut g = Ganesha::start_in(base, &ns, &host)?;
        g._net = Some(net);
        Ok(g)
    }

    /// Starts ganesha in the existing namespace `ns`, whose address is `host`.
    pub fn start_in(base: &str, ns: &str, host: &str) -> Result<Ganesha, String> {
        let dir = temp_dir(base);
        let d = dir.path();
        let export = d.join("export");
        std::fs::create_dir(&export).map_err(|e| format!("export: {e}"))?;
        std::fs::create_dir(d.join("recovery")).map_err(|e| format!("recovery: {e}"))?;
        let conf = d.join("ganesha.conf");
        std::fs::write(
            &conf,
            format!(
                "NFS_CORE_PARAM {{ Protocols = 3, 4; MNT_Port = 20048; Enable_NLM = false; \
                 Enable_RQUOTA = false; mount_path_pseudo = true; \
                 Enable_FULLV3_Stats = true; }}\n\
                 NFSV4 {{ Graceless = true; RecoveryRoot = {rec}; }}\n\
                 EXPORT {{ Export_Id = 1; Path = {exp}; Pseudo = /export; Access_Type = RW; \
                 Squash = No_Root_Squash; Protocols = 3, 4; Transports = TCP; SecType = sys; \
                 FSAL {{ Name = VFS; }} }}\n",
                rec = d.join("recovery").display(),
                exp = export.display()
            ),
        )
        .map_err(|e| format!("ganesha.conf: {e}"))?;
        // A bus of its own, as the system bus (ganesha serves its statistics there).
        let bus = format!("unix:path={}", d.join("bus").display());
        std::fs::write(
            d.join("bus.conf"),
            format!(
                "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN\" \
                 \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n\
                 <busconfig><type>system</type><listen>{bus}</listen><auth>EXTERNAL</auth>\
                 <policy context=\"default\"><allow user=\"*\"/><allow own=\"*\"/>\
                 <allow send_destination=\"*\"/><allow receive_sender=\"*\"/></policy></busconfig>\n"
            ),
        )
        .map_err(|e| format!("bus.conf: {e}"))?;
        let out = Command::new("dbus-daemon")
            .arg(format!("--config-file={}", d.join("bus.conf").display()))
            .args(["--fork", "--print-pid"])
            .output()
            .map_err(|e| format!("dbus-daemon: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "dbus-daemon: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        std::fs::write(d.join("dbus.pid"), &out.stdout).map_err(|e| e.to_string())?;
        // Its own /run in its namespace: an rpcbind of its own (ganesha registers there), on
        // the namespace's port 111.
        let script = format!(
            "mount -t tmpfs tmpfs /run && mkdir -p /run/rpcbind && chown _rpc /run/rpcbind 2>/dev/null; \
             rpcbind -f & echo $! > {rp}; \
             for i in 1 2 3 4 5 6 7 8 9 10; do [ -S /run/rpcbind.sock ] && break; sleep 0.2; done; \
             exec env DBUS_SYSTEM_BUS_ADDRESS={bus} ganesha.nfsd -F -f {conf} -L {log} -p {pid} -N NIV_EVENT",
            rp = d.join("rpcbind.pid").display(),
            conf = conf.display(),
            log = d.join("ganesha.log").display(),
            pid = d.join("ganesha.pid").display(),
        );
        let child = Command::new("ip")
            .args(["netns", "exec", ns, "sh", "-c", &script])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("ganesha: {e}"))?;
        let mut g = Ganesha {
            host: host.to_string(),
            export,
            bus,
            child,
            dir,
            _net: None,
        };
        g.wait_serving()?;
        Ok(g)
    }

    /// Waits (at most [`SERVING_WITHIN`]) until the export is served as the tests use it:
    /// `nfs-ls` (libnfs, NFSv3) mounts it through rpcbind and lists it. Its port listening says
    /// less: rpcbind, the MOUNT service and the export come up beside it, later on a loaded
    /// machine. Says why not when it gives up, with the end of ganesha's log.
    fn wait_serving(&mut self) -> Result<(), String> {
        let url = self.url("");
        let started = std::time::Instant::now();
        loop {
            // Each try bounded: a server half up may leave the client waiting on its reply.
            let out = Command::new("timeout")
                .args(["10", "nfs-ls"])
                .arg(&url)
                .stdout(Stdio::null())
                .output()
                .map_err(|e| format!("nfs-ls: {e}"))?;
            if out.status.success() {
                return Ok(());
            }
            let why = match String::from_utf8_lossy(&out.stderr).trim() {
                "" => format!("nfs-ls {url}: {}", out.status),
                said => format!("nfs-ls {url}: {said}"),
            };
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "ganesha exited ({status}) before it served {url}; the last try: {why}\n{}",
                    log_tail(&self.log())
                ));
            }
            if started.elapsed() > SERVING_WITHIN {
                return Err(format!(
                    "ganesha did not serve {url} within {} s; the last try: {why}\n{}",
                    SERVING_WITHIN.as_secs(),
                    log_tail(&self.log())
                ));
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }

    /// `nfs://HOST/export<path>` (`path` empty, or `/bench`).
    pub fn url(&self, path: &str) -> String {
        format!("nfs://{}/export{path}", self.host)
    }

    /// ganesha's own counts of the export's NFSv3 READ and WRITE operations so far (its
    /// `exportstats` over D-Bus, as `ganesha_stats` reads them).
    pub fn v3_io_ops(&self) -> Result<(u64, u64), String> {
        let out = Command::new("dbus-send")
            .env("DBUS_SYSTEM_BUS_ADDRESS", &self.bus)
            .args([
                "--system",
                "--print-reply",
                "--dest=org.ganesha.nfsd",
                "/org/ganesha/nfsd/ExportMgr",
                "org.ganesha.nfsd.exportstats.GetNFSv3IO",
                "uint16:1",
            ])
            .output()
            .map_err(|e| format!("dbus-send: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        if text.contains("does not have any NFSv3 activity") {
            return Ok((0, 0));
        }
        if !out.status.success() || !text.contains("\"OK\"") {
            return Err(format!(
                "GetNFSv3IO: {}{}",
                text.trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        // The reply: a timestamp struct, then the read and the write structs, each of
        // requested bytes, transferred bytes, operations, errors, latency, queue wait.
        let numbers: Vec<u64> = text
            .lines()
            .filter_map(|l| l.trim().strip_prefix("uint64 "))
            .filter_map(|n| n.parse().ok())
            .collect();
        match numbers.as_slice() {
            [_, _, _, _, r_ops, _, _, _, _, _, w_ops, ..] => Ok((*r_ops, *w_ops)),
            _ => Err(format!("GetNFSv3IO: an answer of another form: {text}")),
        }
    }

    /// ganesha's own counts of every NFSv3 operation it served so far, by name (`CREATE`,
    /// `LOOKUP`, `REMOVE`, ...: its `GetFULLV3Stats` over D-Bus, as `ganesha_stats fullv3`
    /// reads them; the configuration enables them).
    pub fn v3_op_counts(&self) -> Result<std::collections::BTreeMap<String, u64>, String> {
        let out = Command::new("dbus-send")
            .env("DBUS_SYSTEM_BUS_ADDRESS", &self.bus)
            .args([
                "--system",
                "--print-reply",
                "--dest=org.ganesha.nfsd",
                "/org/ganesha/nfsd/ExportMgr",
                "org.ganesha.nfsd.exportstats.GetFULLV3Stats",
            ])
            .output()
            .map_err(|e| format!("dbus-send: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            return Err(format!(
                "GetFULLV3Stats: {}{}",
                text.trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        // Each operation: its name as a string, then its counts, the first the total.
        let mut counts = std::collections::BTreeMap::new();
        let mut name: Option<String> = None;
        for line in text.lines().map(str::trim) {
            if let Some(s) = line.strip_prefix("string \"") {
                let s = s.trim_end_matches('"');
                name = (!s.is_empty() && s != "OK" && s.chars().all(|c| c.is_ascii_uppercase()))
                    .then(|| s.to_string());
            } else if let (Some(n), Some(v)) = (&name, line.strip_prefix("uint64 ")) {
                if let Ok(v) = v.parse() {
                    counts.insert(n.clone(), v);
                }
                name = None;
            }
        }
        Ok(counts)
    }

    /// The process id of ganesha (to stop, resume or kill it as a failing server would).
    pub fn pid(&self) -> u32 {
        std::fs::read_to_string(self.dir.path().join("ganesha.pid"))
            .ok()
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or(self.child.id())
    }

    /// ganesha's log so far (for a failing test's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("ganesha.log")).unwrap_or_default()
    }
}

impl Drop for Ganesha {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        for pid in ["ganesha.pid", "rpcbind.pid", "dbus.pid"] {
            let p = std::fs::read_to_string(self.dir.path().join(pid)).unwrap_or_default();
            if let Ok(p) = p.trim().parse::<u32>() {
                let _ = Command::new("kill")
                    .args(["-9", &p.to_string()])
                    .stderr(Stdio::null())
                    .status();
            }
        }
    }
}
