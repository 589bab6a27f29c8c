//! Test-only helpers: temp dirs, loop devices, the real binary, and prerequisites that skip
//! with a printed reason. Not published.
#![warn(missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub use tempfile::TempDir;

mod delay;
mod minio;
mod oneshot;
mod versitygw;
pub use delay::DelayRelay;
pub use minio::{minio_binary, Minio};

/// A free `127.0.0.1:PORT`, never handed out twice in one test process (tests run in parallel
/// threads; a port just released may be given again by the kernel).
pub fn free_addr() -> String {
    format!("127.0.0.1:{}", minio::free_port("127.0.0.1"))
}
pub use oneshot::OneRequestProxy;
pub use versitygw::Versitygw;

/// A fresh temporary directory under `base` (pass `env!("CARGO_TARGET_TMPDIR")`: the build
/// directory's filesystem, where /tmp may be tmpfs without O_DIRECT), removed when dropped.
pub fn temp_dir(base: &str) -> TempDir {
    std::fs::create_dir_all(base).expect("creating the test temp base");
    tempfile::Builder::new()
        .prefix("stormark-test-")
        .tempdir_in(base)
        .expect("creating a temp dir")
}

/// Whether the tests run as root; prints why a test skips when not.
pub fn require_root(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc_geteuid() } == 0;
    if !root {
        eprintln!("SKIP {test}: needs root (loop devices, mounts)");
    }
    root
}

extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
}

/// Waits until something accepts TCP connections at `addr` (`IP:PORT`), at most 20 s; fails
/// the test naming `what` otherwise.
pub fn wait_listening(addr: &str, what: &str) {
    let target: std::net::SocketAddr = addr.parse().expect("an IP:PORT");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect_timeout(&target, std::time::Duration::from_millis(200))
        .is_err()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "{what} did not listen on {addr} within 20 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Distinct 4 KiB blocks of `data`: what a deduplicating store keeps.
pub fn unique_blocks(data: &[u8]) -> usize {
    data.chunks(4096)
        .collect::<std::collections::HashSet<_>>()
        .len()
}

/// `compressor -c`'s compressed size over the original: a real compressor (zstd, lz4, gzip),
/// as a target or a user's archive would use.
pub fn compression_ratio(compressor: &str, data: &[u8]) -> f64 {
    use std::io::Write;
    let mut child = Command::new(compressor)
        .arg("-c")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{compressor}: {e}"));
    // Fed from another thread: the compressor writes while it reads, and its output pipe is
    // finite.
    let mut stdin = child.stdin.take().expect("a piped stdin");
    let input = data.to_vec();
    let feeder = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("the compressor ends");
    feeder
        .join()
        .expect("the feeder thread")
        .expect("feeding the compressor");
    assert!(out.status.success(), "{compressor} failed");
    data.len() as f64 / out.stdout.len() as f64
}

/// Whether `tool` runs; prints why a test skips when not.
pub fn require_tool(test: &str, tool: &str) -> bool {
    let ok = Command::new(tool).arg("--version").output().is_ok()
        || Command::new(tool).arg("-V").output().is_ok();
    if !ok {
        eprintln!("SKIP {test}: `{tool}` is not installed");
    }
    ok
}

/// A loop device over a sparse backing file, detached and removed when dropped.
pub struct LoopDevice {
    /// The device, e.g. /dev/loop3.
    pub path: PathBuf,
    /// The file behind it.
    pub backing: PathBuf,
    _dir: TempDir,
    mount: Option<PathBuf>,
}

impl LoopDevice {
    /// Attaches a new loop device of `size` bytes, or says why it cannot.
    pub fn new(base: &str, size: u64) -> Result<LoopDevice, String> {
        let dir = temp_dir(base);
        let backing = dir.path().join("backing.img");
        std::fs::File::create(&backing)
            .and_then(|f| f.set_len(size))
            .map_err(|e| format!("backing file: {e}"))?;
        Ok(LoopDevice {
            path: attach(&backing)?,
            backing,
            _dir: dir,
            mount: None,
        })
    }

    /// Attaches a second loop device to this one's backing file (detached when dropped;
    /// drop it before this one).
    pub fn attach_again(&self, base: &str) -> Result<LoopDevice, String> {
        Ok(LoopDevice {
            path: attach(&self.backing)?,
            backing: self.backing.clone(),
            _dir: temp_dir(base),
            mount: None,
        })
    }

    /// Puts an ext4 filesystem on the device.
    pub fn mkfs_ext4(&self) -> Result<(), String> {
        run(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&self.path))
    }

    /// Mounts the device on a fresh directory and returns it; unmounted on drop.
    pub fn mount(&mut self) -> Result<PathBuf, String> {
        let at = self._dir.path().join("mnt");
        std::fs::create_dir_all(&at).map_err(|e| e.to_string())?;
        run(Command::new("mount").arg(&self.path).arg(&at))?;
        self.mount = Some(at.clone());
        Ok(at)
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        if let Some(m) = &self.mount {
            let _ = Command::new("umount").arg(m).status();
        }
        let _ = Command::new("losetup").arg("-d").arg(&self.path).status();
    }
}

/// Attaches a loop device to `backing`; returns the device.
fn attach(backing: &Path) -> Result<PathBuf, String> {
    let out = Command::new("losetup")
        .args(["--find", "--show"])
        .arg(backing)
        .output()
        .map_err(|e| format!("losetup: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "losetup failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Lists a directory's entries, sorted (for "nothing left behind" checks).
pub fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The real binary, run with arguments as a user would: the helpers every end-to-end test
/// uses. `bin` is `env!("CARGO_BIN_EXE_stormark")` of the test.
#[derive(Debug, Clone, Copy)]
pub struct Bin(pub &'static str);

impl Bin {
    /// Runs `stormark <args>` to its end.
    pub fn run(&self, args: &[&str]) -> std::process::Output {
        Command::new(self.0)
            .args(args)
            .output()
            .expect("running stormark")
    }

    /// Runs `stormark run <args> --json <dir>/r.json`: the exit code, the document and
    /// everything printed (stdout then stderr).
    pub fn run_json(&self, dir: &TempDir, args: &[&str]) -> (i32, serde_json::Value, String) {
        let json = dir.path().join("r.json");
        let mut all = vec!["run"];
        all.extend_from_slice(args);
        all.push("--json");
        all.push(json.to_str().expect("temp paths are UTF-8"));
        let out = self.run(&all);
        (
            out.status.code().unwrap_or(-1),
            read_json(&json),
            text(&out),
        )
    }
}

/// Everything a command printed: stdout, then stderr.
pub fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The phase named `name` of a results document (panics, naming the phases, when absent).
pub fn phase<'a>(r: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    r["phases"]
        .as_array()
        .expect("phases")
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no phase {name} in {r}"))
}

/// A fixed results document, the same on every call: two hosts, a 3-second random 70/30 run
/// with reads at 100 µs and writes at 300 µs, a finding and a note. For renderer snapshots.
pub fn sample_results() -> stormark_stats::Results {
    use stormark_stats::{
        Finding, Host, Op, PhaseAccumulator, PhaseJob, Recorder, Results, Severity, Target,
        WorkerKey,
    };
    let mut r = Results::new(
        [
            "stormark",
            "run",
            "/mnt/data",
            "--rw",
            "randrw",
            "--rwmixread",
            "70",
            "--time",
            "3s",
        ]
        .map(String::from)
        .to_vec(),
    );
    r.started_at = "2026-11-23T10:00:00.000Z".into();
    r.duration_ns = 3_250_000_000;
    r.tool.version = "0.0.0-sample".into();
    r.target = Some(Target {
        path: "/mnt/data".into(),
        kind: "directory".into(),
        run_dir: Some("/mnt/data/stormark-20261123-100000-1".into()),
        kept: false,
        device: Some("nvme0n1".into()),
        fs_type: Some("xfs".into()),
    });
    let hosts = ["node1", "node2"];
    let job = PhaseJob {
        name: "randrw-4k".into(),
        engine: "io_uring".into(),
        direct: true,
        workers: 1,
        iodepth: 8,
        rate_iops: None,
        working_set_bytes: 1 << 30,
    };
    let keys: Vec<WorkerKey> = (0..2)
        .map(|h| WorkerKey {
            host: h,
            job: 0,
            worker: 0,
        })
        .collect();
    let mut acc = PhaseAccumulator::new(
        "run",
        hosts.iter().map(|h| h.to_string()).collect(),
        vec![job.clone()],
        &keys,
    );
    for (h, key) in keys.iter().enumerate() {
        for second in 0..3u32 {
            let mut rec = Recorder::new();
            let n = 700 + 100 * h as u64 + u64::from(second);
            for i in 0..n {
                rec.record(Op::Read, 4096, 100_000 + i * 10);
            }
            for i in 0..300 {
                rec.record(Op::Write, 4096, 300_000 + i * 20);
            }
            acc.add(*key, second, &rec.take());
        }
        acc.worker_done(*key, 3_000_000_000);
    }
    acc.set_jobs(vec![job]);
    r.phases.push(acc.finish(0, 3_000_000_000));
    r.hosts = hosts
        .iter()
        .map(|h| Host {
            name: h.to_string(),
            inventory: serde_json::json!({ "hostname": h, "cpus": 16 }),
            samples: Vec::new(),
            sampler_cpu_ns: None,
            address: Some(format!("{h}:7878")),
            failure: None,
            clock_offset_ns: Some(1_000),
            clock_rtt_ns: Some(200_000),
        })
        .collect();
    r.findings.push(Finding {
        severity: Severity::Warning,
        code: "run-too-short".into(),
        message: "phase run measured for 3 s: too short for trustworthy numbers".into(),
        evidence: serde_json::json!({ "phase": "run", "measured_s": 3 }),
        advice: "Measure 60–300 s per point (--time 2m).".into(),
    });
    r.notes.push("direct auto: O_DIRECT is supported".into());
    r
}

/// Reads a results document.
pub fn read_json(path: &Path) -> serde_json::Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// A small cluster of hosts for distributed tests: network namespaces joined by veth pairs to
/// one bridge in the test's own namespace, which has the address `.1` of the subnet. Host `i`
/// is `10.<a>.<b>.<i + 2>`. Everything is removed when dropped (agents first).
pub struct NetCluster {
    /// Namespace names, one per host.
    pub namespaces: Vec<String>,
    /// Host addresses, one per host.
    pub addresses: Vec<String>,
    /// The test's own address on the bridge (`.1`): where a server the hosts use listens.
    pub gateway: String,
    bridge: String,
    veths: Vec<String>,
    /// Each host's own end of its veth pair, inside its namespace.
    insides: Vec<String>,
    children: Vec<std::process::Child>,
}

static CLUSTER_SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

impl NetCluster {
    /// Creates `hosts` namespaces on a fresh bridge, or says why it cannot (not root, no
    /// `ip`, no netns support).
    pub fn new(hosts: usize) -> Result<NetCluster, String> {
        let seq = CLUSTER_SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Short, unique names: interface names are limited to 15 characters. Another test
        // process (or one that died and left its bridge) may hold the first choice: the next
        // is tried then.
        let mut id = (std::process::id() % 10_000) * 10 + seq % 10;
        for _ in 0..8 {
            let taken = Command::new("ip")
                .args(["link", "show", &format!("smb{id}")])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !taken {
                break;
            }
            id = (id + 37_501) % 100_000;
        }
        let bridge = format!("smb{id}");
        let subnet = format!("10.{}.{}", 100 + (id / 250) % 150, id % 250);
        let mut c = NetCluster {
            namespaces: Vec::new(),
            addresses: Vec::new(),
            gateway: format!("{subnet}.1"),
            bridge: bridge.clone(),
            veths: Vec::new(),
            insides: Vec::new(),
            children: Vec::new(),
        };
        run(Command::new("ip").args(["link", "add", &bridge, "type", "bridge"]))?;
        run(Command::new("ip").args(["addr", "add", &format!("{subnet}.1/24"), "dev", &bridge]))?;
        run(Command::new("ip").args(["link", "set", &bridge, "up"]))?;
        for i in 0..hosts {
            let ns = format!("smn{id}h{i}");
            let outside = format!("smv{id}h{i}");
            let inside = format!("smi{id}h{i}");
            let addr = format!("{subnet}.{}", i + 2);
            run(Command::new("ip").args(["netns", "add", &ns]))?;
            c.namespaces.push(ns.clone());
            run(Command::new("ip").args([
                "link", "add", &outside, "type", "veth", "peer", "name", &inside,
            ]))?;
            c.veths.push(outside.clone());
            run(Command::new("ip").args(["link", "set", &outside, "master", &bridge, "up"]))?;
            run(Command::new("ip").args(["link", "set", &inside, "netns", &ns]))?;
            let in_ns = |args: &[&str]| {
                let mut cmd = Command::new("ip");
                cmd.args(["netns", "exec", &ns, "ip"]).args(args);
                run(&mut cmd)
            };
            in_ns(&["addr", "add", &format!("{addr}/24"), "dev", &inside])?;
            in_ns(&["link", "set", &inside, "up"])?;
            in_ns(&["link", "set", "lo", "up"])?;
            c.addresses.push(addr);
            c.insides.push(inside);
        }
        Ok(c)
    }

    /// Runs `program args...` inside host `i`'s namespace and waits for it.
    pub fn run_in(&self, i: usize, program: &str, args: &[&str]) -> std::process::Output {
        Command::new("ip")
            .args(["netns", "exec", &self.namespaces[i], program])
            .args(args)
            .output()
            .expect("ip netns exec")
    }

    /// Sets the MTU of host `i`'s interface (jumbo frames on one host only, say).
    pub fn set_mtu(&self, i: usize, mtu: u32) -> Result<(), String> {
        run(Command::new("ip").args([
            "netns",
            "exec",
            &self.namespaces[i],
            "ip",
            "link",
            "set",
            "dev",
            &self.insides[i],
            "mtu",
            &mtu.to_string(),
        ]))
    }

    /// Limits what reaches host `i` to `rate` with a token bucket on the bridge's side of its
    /// link: past the senders' own queues, so that what does not fit is dropped on the way
    /// (as a slower link in the path does) instead of holding the sender back.
    pub fn limit_to(&self, i: usize, rate: &str) -> Result<(), String> {
        run(Command::new("tc").args(tbf(&self.veths[i], rate)))
    }

    /// Limits what host `i` sends to `rate` (tc's form, such as `200mbit`) with a token
    /// bucket on its own interface, as a slower link would.
    pub fn limit(&self, i: usize, rate: &str) -> Result<(), String> {
        run(Command::new("ip")
            .args(["netns", "exec", &self.namespaces[i], "tc"])
            .args(tbf(&self.insides[i], rate)))
    }

    /// Starts `program args...` inside host `i`'s namespace; it is killed when the cluster is
    /// dropped. Its stderr goes to `log`.
    pub fn spawn(
        &mut self,
        i: usize,
        program: &str,
        args: &[&str],
        log: &Path,
    ) -> Result<u32, String> {
        let log = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
        let child = Command::new("ip")
            .args(["netns", "exec", &self.namespaces[i], program])
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("ip netns exec: {e}"))?;
        let pid = child.id();
        self.children.push(child);
        Ok(pid)
    }

    /// Starts `bin agent` in every host's namespace on port 7878 of its address, with the
    /// token file `token`, each allowed the path `allowed(i)`, its state and log under `dir`
    /// (`state{i}`, `agent{i}.log`); waits until each listens. Returns the agents' list
    /// (`addr:7878,...`).
    pub fn start_agents(
        &mut self,
        bin: &str,
        token: &Path,
        dir: &Path,
        allowed: &dyn Fn(usize) -> PathBuf,
    ) -> String {
        let mut list = Vec::new();
        for i in 0..self.addresses.len() {
            let listen = format!("{}:7878", self.addresses[i]);
            let allowed = allowed(i);
            let state = dir.join(format!("state{i}"));
            self.spawn(
                i,
                bin,
                &[
                    "agent",
                    "--listen",
                    &listen,
                    "--token-file",
                    token.to_str().expect("a UTF-8 path"),
                    "--allow-path",
                    allowed.to_str().expect("a UTF-8 path"),
                    "--state-dir",
                    state.to_str().expect("a UTF-8 path"),
                ],
                &dir.join(format!("agent{i}.log")),
            )
            .expect("starting an agent");
            wait_listening(&listen, &format!("agent {i}"));
            list.push(listen);
        }
        list.join(",")
    }

    /// Cuts host `i` off the network (its link on the bridge goes down): packets are dropped
    /// silently, as when a cable is pulled.
    pub fn cut(&self, i: usize) -> Result<(), String> {
        run(Command::new("ip").args(["link", "set", &self.veths[i], "down"]))
    }
}

impl Drop for NetCluster {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for ns in &self.namespaces {
            let _ = Command::new("ip").args(["netns", "delete", ns]).status();
        }
        for v in &self.veths {
            let _ = Command::new("ip")
                .args(["link", "delete", v])
                .stderr(std::process::Stdio::null())
                .status();
        }
        let _ = Command::new("ip")
            .args(["link", "delete", &self.bridge])
            .status();
    }
}

/// tc's arguments for a token bucket of `rate` at the root of `dev`
/// (`tc qdisc add dev X root tbf rate R burst 32kbit latency 50ms`).
fn tbf<'a>(dev: &'a str, rate: &'a str) -> [&'a str; 12] {
    [
        "qdisc", "add", "dev", dev, "root", "tbf", "rate", rate, "burst", "32kbit", "latency",
        "50ms",
    ]
}

/// Whether a small cluster of namespaces can be made here; prints why a test skips when not.
pub fn require_netns(test: &str) -> bool {
    if !require_root(test) {
        return false;
    }
    match NetCluster::new(1) {
        Ok(_) => true,
        Err(e) => {
            eprintln!("SKIP {test}: cannot create network namespaces: {e}");
            false
        }
    }
}

/// A test CA and a certificate it signed for `ip` (with its key), made with the `openssl`
/// command in `dir`: (CA, certificate, key).
pub fn certificates(dir: &Path, ip: &str) -> (PathBuf, PathBuf, PathBuf) {
    let ca = dir.join("ca.pem");
    let ca_key = dir.join("ca.key");
    let cert = dir.join("agent.pem");
    let key = dir.join("agent.key");
    let csr = dir.join("agent.csr");
    let ext = dir.join("ext.cnf");
    std::fs::write(
        &ext,
        format!("subjectAltName=IP:{ip}\nbasicConstraints=CA:FALSE\n"),
    )
    .unwrap();
    let p = |x: &PathBuf| x.to_str().unwrap().to_string();
    for args in [
        vec![
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            &p(&ca_key),
            "-out",
            &p(&ca),
            "-days",
            "2",
            "-subj",
            "/CN=stormark test CA",
        ],
        vec![
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            &p(&key),
            "-out",
            &p(&csr),
            "-subj",
            "/CN=agent",
        ],
        vec![
            "x509",
            "-req",
            "-in",
            &p(&csr),
            "-CA",
            &p(&ca),
            "-CAkey",
            &p(&ca_key),
            "-CAcreateserial",
            "-out",
            &p(&cert),
            "-days",
            "2",
            "-extfile",
            &p(&ext),
        ],
    ] {
        let out = Command::new("openssl").args(&args).output().unwrap();
        assert!(out.status.success(), "openssl {args:?}: {}", text(&out));
    }
    (ca, cert, key)
}
