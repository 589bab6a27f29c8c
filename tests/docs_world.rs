//! The stand-ins the docs' commands run against (tests/docs.rs has the rules): a scratch
//! directory, agents in network namespaces, MinIO, tgtd, ganesha, a loop device and a
//! `stormark net server`, each started only for a page that needs it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use stormark_testkit::{
    certificates, free_addr, require_netns, require_root, temp_dir, wait_listening, Ganesha,
    LoopDevice, Minio, NetCluster, TempDir, Tgt,
};

use crate::docs::{scratch_path, DocCommand};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");
const REPO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// How long one command of a page may take before it is killed as hung.
const HUNG: Duration = Duration::from_secs(300);

/// Path prefixes that stand for the scratch directory's.
const PLACES: &[&str] = &[
    "/mnt/",
    "/tank/",
    "/tmp/",
    "/srv/",
    "/xfs/",
    "/etc/stormark/",
    "/data/",
    "/scratch/",
];

/// Whether a page's word is a path that stands for the scratch directory's (`/data` too).
fn is_place(w: &str) -> bool {
    PLACES
        .iter()
        .any(|p| w.starts_with(p) || w == p.trim_end_matches('/'))
}

/// What a page's commands run against.
pub(crate) struct World {
    scratch: TempDir,
    token: PathBuf,
    agents: Vec<String>,
    agent_names: BTreeMap<String, usize>,
    minio: Option<Minio>,
    tgt: Option<Tgt>,
    ganesha: Option<Ganesha>,
    loopdev: Option<LoopDevice>,
    /// Each device path the page names, by the order it first appears: the first is
    /// `loopdev`, each other one a loop device of its own (`/dev/sdb /dev/sdc`: two).
    devices: Vec<String>,
    more_devices: Vec<LoopDevice>,
    xfs: Option<(LoopDevice, PathBuf)>,
    /// An ext4 of 256 MiB for the paths of `--auto` commands, and whether this command is one.
    auto_fs: Option<(LoopDevice, PathBuf)>,
    small: bool,
    net_server: Option<(Child, String)>,
    /// A page's `net server` being started: kept running for the page's clients.
    pending_server: Option<String>,
    // Dropped last: the agents and ganesha live in its namespaces.
    cluster: Option<NetCluster>,
}

impl Drop for World {
    fn drop(&mut self) {
        if let Some((c, _)) = &mut self.net_server {
            let _ = c.kill();
            let _ = c.wait();
        }
        // ganesha and the agents before their namespaces.
        self.ganesha.take();
        self.cluster.take();
    }
}

fn has(c: &DocCommand, flag: &str) -> bool {
    let eq = format!("{flag}=");
    c.argv.iter().any(|a| a == flag || a.starts_with(&eq))
}

/// The value of `flag` in `argv` (`--flag V` or `--flag=V`).
fn value<'a>(argv: &'a [String], flag: &str) -> Option<&'a str> {
    let eq = format!("{flag}=");
    argv.iter().enumerate().find_map(|(i, a)| {
        if a == flag {
            argv.get(i + 1).map(String::as_str)
        } else {
            a.strip_prefix(&eq)
        }
    })
}

/// Sizes of a GiB or more become as many MiB (`4g` is `4m`); others stay.
pub(crate) fn shrink_size(v: &str) -> String {
    let lower = v.to_ascii_lowercase();
    let digits: String = lower.chars().take_while(|c| c.is_ascii_digit()).collect();
    let unit = &lower[digits.len()..];
    if !digits.is_empty() && matches!(unit, "g" | "gb" | "gib" | "t" | "tb" | "tib") {
        let n: u64 = digits.parse().unwrap_or(1);
        let n = if unit.starts_with('t') { n * 1024 } else { n };
        return format!("{n}m");
    }
    v.to_string()
}

impl World {
    /// Starts what `commands` need (and the files they name, from `files`), or `None` where a
    /// prerequisite is missing (the skip recorded by testkit).
    pub(crate) fn new(
        test: &str,
        page: &str,
        commands: &[DocCommand],
        files: &[(String, String, String)],
    ) -> Option<World> {
        let scratch = temp_dir(TMP);
        let token = scratch.path().join("token");
        std::fs::write(&token, "doc-test-token-0123456789abcdef\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
        // The files the commands name (a job file, a suite file), this page's before
        // another's of the same name, and what those ask for too.
        // (or a word of one: `--ior '-f tests.ior -N 2'` names IOR's script).
        let named = |n: &str| {
            commands.iter().any(|c| {
                c.argv
                    .iter()
                    .any(|a| a == n || a.split_whitespace().any(|w| w == n))
            })
        };
        let mut chosen: BTreeMap<&str, &str> = BTreeMap::new();
        let (mine, others): (Vec<_>, Vec<_>) = files.iter().partition(|f| f.0 == page);
        for (_, name, text) in others.into_iter().chain(mine) {
            if named(name) {
                chosen.insert(name, text);
            }
        }
        let file_text: String = chosen.values().copied().collect();
        let words: Vec<&str> = commands
            .iter()
            .flat_map(|c| c.argv.iter().map(String::as_str))
            .collect();
        let any = |p: &dyn Fn(&str) -> bool| words.iter().any(|w| p(w));
        let mut agents = 0;
        for c in commands {
            if let Some(list) = value(&c.argv, "--agents") {
                agents = agents.max(list.split(',').count());
            }
            if has(c, "--agents-file") {
                let most = value(&c.argv, "--sweep")
                    .and_then(|s| s.strip_prefix("agents="))
                    .and_then(|l| l.split(',').filter_map(|n| n.parse().ok()).max())
                    .unwrap_or(2);
                agents = agents.max(most);
            }
        }
        let tls = any(&|w| w == "--tls-ca" || w.starts_with("--tls-ca="));
        let s3 = any(&|w| w.starts_with("http://") || w.starts_with("https://"))
            || file_text.contains("endpoint =");
        let iscsi = any(&|w| w.starts_with("iscsi://"));
        let nfs = any(&|w| w.starts_with("nfs://"));
        let device = any(&|w| w.starts_with("/dev/"));
        let xfs = any(&|w| w.starts_with("/xfs/"));
        let auto = any(&|w| w == "--auto");
        let script = commands.iter().any(|c| c.program != "stormark");
        if script && !stormark_testkit::require_tool(test, "dpkg-deb") {
            return None;
        }
        if (agents > 0 || nfs) && !require_netns(test) {
            return None;
        }
        if (iscsi || device || xfs || auto) && !require_root(test) {
            return None;
        }
        let mut cluster = (agents > 0).then(|| NetCluster::new(agents).expect("namespaces"));
        let ip = cluster
            .as_ref()
            .map_or("127.0.0.1".to_string(), |c| c.gateway.clone());
        let minio = s3.then(|| {
            let m = Minio::start_on(TMP, &ip);
            m.make_bucket("bench");
            m
        });
        let tgt = if iscsi {
            if !stormark_testkit::require_tool(test, "tgtd")
                || !stormark_testkit::require_tool(test, "iscsi-inq")
            {
                return None;
            }
            Some(Tgt::start_on(TMP, 64 << 20, None, &ip).expect("tgtd starts"))
        } else {
            None
        };
        let ganesha = if nfs {
            if !Ganesha::available(test) {
                return None;
            }
            let g = match &cluster {
                Some(c) => Ganesha::start_in(TMP, &c.namespaces[0], &c.addresses[0]),
                None => Ganesha::start(TMP),
            }
            .expect("ganesha starts");
            Some(g)
        } else {
            None
        };
        let loopdev = device.then(|| LoopDevice::new(TMP, 256 << 20).expect("a loop device"));
        let auto_fs = auto.then(|| {
            let mut l = LoopDevice::new(TMP, 256 << 20).expect("a loop device");
            l.mkfs_ext4().expect("mkfs.ext4");
            let at = l.mount().expect("mounting the ext4");
            (l, at)
        });
        // /xfs/...: an XFS of 512 MiB (atomic writes since Linux 6.16), mounted.
        let xfs = xfs.then(|| {
            let mut l = LoopDevice::new(TMP, 512 << 20).expect("a loop device");
            l.mkfs_xfs().expect("mkfs.xfs");
            let at = l.mount().expect("mounting the XFS");
            (l, at)
        });
        // A page's own `stormark agent --tls-cert /etc/stormark/agent.pem ...` line.
        if any(&|w| w == "--tls-cert") {
            let dir = scratch.path().join("etc/stormark");
            std::fs::create_dir_all(&dir).unwrap();
            certificates(&dir, "127.0.0.1");
        }
        let mut list = Vec::new();
        if let Some(c) = &mut cluster {
            let mut cas = String::new();
            for i in 0..agents {
                let addr = format!("{}:7878", c.addresses[i]);
                let state = scratch.path().join(format!("agent{i}.state"));
                let mut args: Vec<String> = [
                    "agent",
                    "--listen",
                    &addr,
                    "--token-file",
                    token.to_str().unwrap(),
                    "--allow-path",
                    scratch.path().to_str().unwrap(),
                    "--state-dir",
                    state.to_str().unwrap(),
                ]
                .iter()
                .map(|s| s.to_string())
                .collect();
                if let Some(l) = &loopdev {
                    args.extend(["--allow-device".into(), l.path.display().to_string()]);
                }
                if let Some(t) = &tgt {
                    let url = t.url(1);
                    let target = url.rsplit_once('/').expect("a LUN").0.to_string();
                    args.extend(["--allow-iscsi".into(), target]);
                }
                if let Some(g) = &ganesha {
                    args.extend(["--allow-nfs".into(), g.url("")]);
                }
                if tls {
                    let dir = scratch.path().join(format!("tls{i}"));
                    std::fs::create_dir_all(&dir).unwrap();
                    let (ca, cert, key) = certificates(&dir, &c.addresses[i]);
                    cas.push_str(&std::fs::read_to_string(ca).unwrap());
                    args.extend([
                        "--tls-cert".into(),
                        cert.display().to_string(),
                        "--tls-key".into(),
                        key.display().to_string(),
                    ]);
                }
                let log = scratch.path().join(format!("agent{i}.log"));
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                c.spawn(i, BIN, &args, &log).expect("an agent starts");
                wait_listening(&addr, &format!("agent {i}"));
                list.push(addr);
            }
            if tls {
                std::fs::write(scratch.path().join("ca.pem"), cas).unwrap();
            }
        }
        let w = World {
            scratch,
            token,
            agents: list,
            agent_names: BTreeMap::new(),
            minio,
            tgt,
            ganesha,
            loopdev,
            devices: Vec::new(),
            more_devices: Vec::new(),
            xfs,
            auto_fs,
            small: false,
            net_server: None,
            pending_server: None,
            cluster,
        };
        for (name, text) in chosen {
            let text = w.rewrite_file(text);
            std::fs::write(w.scratch.path().join(name), text).unwrap();
        }
        Some(w)
    }

    /// A scratch path for the page's `doc_path`, made as a directory unless it names a file.
    fn place(&self, doc_path: &str) -> String {
        let p = match (&self.xfs, doc_path.strip_prefix("/xfs/"), &self.auto_fs) {
            (Some((_, at)), Some(rest), _) => at.join(rest),
            (_, _, Some((_, at))) if self.small => scratch_path(at, doc_path),
            _ => scratch_path(self.scratch.path(), doc_path),
        };
        let file = p.extension().is_some() || doc_path.ends_with(".deb");
        let dir = if file { p.parent().unwrap() } else { &p };
        std::fs::create_dir_all(dir).unwrap();
        p.display().to_string()
    }

    fn agent_for(&mut self, name: &str) -> String {
        let n = self.agent_names.len();
        let i = *self.agent_names.entry(name.to_string()).or_insert(n);
        self.agents
            .get(i)
            .cloned()
            .unwrap_or_else(|| panic!("agent {name}: more agents named than started"))
    }

    fn net_addr(&mut self) -> String {
        if self.net_server.is_none() {
            self.start_net_server(&free_addr());
        }
        self.net_server.as_ref().unwrap().1.clone()
    }

    fn start_net_server(&mut self, addr: &str) {
        if let Some((mut c, _)) = self.net_server.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let child = Command::new(BIN)
            .args(["net", "server", "--listen", addr])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.net_server = Some((child, addr.to_string()));
        wait_listening(addr, "stormark net server");
    }

    fn endpoint(&self) -> String {
        self.minio.as_ref().expect("MinIO for S3").endpoint.clone()
    }

    fn iscsi(&self, doc_url: &str) -> String {
        let t = self.tgt.as_ref().expect("tgtd for iscsi://");
        let lun_given = doc_url.trim_start_matches("iscsi://").split('/').count() >= 3;
        let url = t.url(1);
        if lun_given {
            url
        } else {
            url.rsplit_once('/').unwrap().0.to_string()
        }
    }

    fn nfs(&self, doc_url: &str) -> String {
        let g = self.ganesha.as_ref().expect("ganesha for nfs://");
        let (url, query) = doc_url.split_once('?').unwrap_or((doc_url, ""));
        let last = url.rsplit('/').next().unwrap_or("");
        std::fs::create_dir_all(g.export.join(last)).unwrap();
        let q = if query.is_empty() {
            String::new()
        } else {
            format!("?{query}")
        };
        format!("{}{q}", g.url(&format!("/{last}")))
    }

    /// A word that names a place: a path, a device, a URL.
    fn rewrite_word(&mut self, w: &str) -> String {
        if is_place(w) {
            return self.place(w);
        }
        if w.starts_with("/dev/") {
            let i = match self.devices.iter().position(|d| d == w) {
                Some(i) => i,
                None => {
                    self.devices.push(w.to_string());
                    self.devices.len() - 1
                }
            };
            if i == 0 {
                return self
                    .loopdev
                    .as_ref()
                    .expect("a loop device")
                    .path
                    .display()
                    .to_string();
            }
            while self.more_devices.len() < i {
                self.more_devices
                    .push(LoopDevice::new(TMP, 256 << 20).expect("a loop device"));
            }
            return self.more_devices[i - 1].path.display().to_string();
        }
        if w.starts_with("iscsi://") {
            return self.iscsi(w);
        }
        if w.starts_with("nfs://") {
            return self.nfs(w);
        }
        shrink_size(w)
    }

    /// A TOML file of a page with the same rules: sizes, times, endpoints, servers, paths.
    fn rewrite_file(&self, text: &str) -> String {
        text.lines()
            .map(|line| {
                let line = &self.rewrite_quoted_paths(line);
                let Some((key, rest)) = line.split_once(" = ") else {
                    return line.to_string();
                };
                let k = key.trim();
                let Some(v) = rest
                    .trim()
                    .strip_prefix('"')
                    .and_then(|r| r.split('"').next())
                else {
                    return line.to_string();
                };
                let new = match k {
                    "size" => shrink_size(v),
                    "time" | "ramp" => "1s".to_string(),
                    "endpoint" => self.endpoint(),
                    "server" => {
                        // Filled in when a command names the file (the server starts then).
                        "NET_SERVER".to_string()
                    }
                    _ => return line.to_string(),
                };
                line.replacen(&format!("\"{v}\""), &format!("\"{new}\""), 1)
            })
            .collect::<Vec<_>>()
            .join("\n")
            + "\n"
    }

    /// `"/mnt/bench"` in a line of a file: the scratch directory's.
    fn rewrite_quoted_paths(&self, line: &str) -> String {
        let mut out = String::new();
        for (i, part) in line.split('"').enumerate() {
            if i > 0 {
                out.push('"');
            }
            if i % 2 == 1 && is_place(part) {
                out.push_str(&self.place(part));
            } else {
                out.push_str(part);
            }
        }
        out
    }

    /// A transcript's line as this scratch directory would print it (its paths the
    /// scratch directory's).
    fn rewrite_shown(&self, line: &str) -> String {
        line.split(' ')
            .map(|w| {
                let (head, path) = match w.split_once('=') {
                    Some((h, p)) => (format!("{h}="), p),
                    None => (String::new(), w),
                };
                if is_place(path) {
                    let p = scratch_path(self.scratch.path(), path);
                    format!("{head}{}", p.display())
                } else {
                    w.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The command as it runs here: (program, argv, environment).
    fn rewrite(&mut self, c: &DocCommand) -> (String, Vec<String>, Vec<(String, String)>) {
        let mut env = Vec::new();
        if let Some(m) = &self.minio {
            env.push(("AWS_ACCESS_KEY_ID".to_string(), m.access_key.clone()));
            env.push(("AWS_SECRET_ACCESS_KEY".to_string(), m.secret_key.clone()));
        }
        if c.program != "stormark" {
            // deploy/deb/build.sh: the debug binary stands for the release build, in a
            // CARGO_TARGET_DIR of the scratch directory's (where its default looks), and is
            // packaged uncompressed (xz would take most of the test's time).
            let target = self.scratch.path().join("cargo-target");
            let release = target.join("release");
            if !release.exists() {
                std::fs::create_dir_all(&release).unwrap();
                std::os::unix::fs::symlink(BIN, release.join("stormark")).unwrap();
            }
            env.push(("CARGO_TARGET_DIR".into(), target.display().to_string()));
            env.push(("DEB_COMPRESSION".into(), "none".into()));
            let argv = c
                .argv
                .iter()
                .map(|a| match a.as_str() {
                    "target/release/stormark" => BIN.to_string(),
                    "target/deb" => self.scratch.path().join("deb").display().to_string(),
                    a => a.to_string(),
                })
                .collect();
            return (format!("{REPO}/{}", c.program), argv, env);
        }
        // Each command's --agents list names the agents from the first.
        self.agent_names.clear();
        // --auto sizes by the free space: its paths are on a small file system of their own.
        self.small = has(c, "--auto");
        let sub: Vec<&str> = c.argv.iter().take(2).map(String::as_str).collect();
        let cmd = sub.first().copied().unwrap_or("");
        let net_client = sub == ["net", "client"];
        let server = sub == ["net", "server"] || cmd == "agent";
        let mut out: Vec<String> = Vec::new();
        let mut i = 0;
        while i < c.argv.len() {
            let a = c.argv[i].clone();
            let (flag, inline) = match a.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
                _ => (a.clone(), None),
            };
            let takes = |f: &str| {
                matches!(
                    f,
                    "--time"
                        | "--step-time"
                        | "--size"
                        | "--sweep"
                        | "--agents"
                        | "--agents-file"
                        | "--endpoint"
                        | "--listen"
                        | "--token-file"
                        | "--tls-ca"
                )
            };
            if !flag.starts_with("--") || !takes(&flag) {
                let positional_host = net_client && i == 2;
                out.push(if positional_host {
                    self.net_addr()
                } else {
                    self.rewrite_word(&a)
                });
                i += 1;
                continue;
            }
            let v = match inline {
                Some(v) => v,
                None => {
                    i += 1;
                    c.argv.get(i).cloned().unwrap_or_default()
                }
            };
            let new = match flag.as_str() {
                "--time" | "--step-time" => "1s".to_string(),
                "--size" => shrink_size(&v),
                "--sweep" => match v.split_once('=') {
                    Some(("size", l)) => format!(
                        "size={}",
                        l.split(',').map(shrink_size).collect::<Vec<_>>().join(",")
                    ),
                    _ => v,
                },
                "--agents" => v
                    .split(',')
                    .map(|n| self.agent_for(n))
                    .collect::<Vec<_>>()
                    .join(","),
                "--agents-file" => {
                    let path = self.scratch.path().join(&v);
                    if !path.exists() {
                        let text: String = self
                            .agents
                            .iter()
                            .map(|a| format!("[[agent]]\naddress = \"{a}\"\n\n"))
                            .collect();
                        std::fs::write(&path, text).unwrap();
                    }
                    v
                }
                "--endpoint" => self.endpoint(),
                "--listen" => {
                    let addr = free_addr();
                    if cmd == "net" {
                        self.start_net_server_later(&addr);
                    }
                    addr
                }
                "--token-file" => self.token.display().to_string(),
                "--tls-ca" => self.scratch.path().join("ca.pem").display().to_string(),
                _ => unreachable!(),
            };
            out.extend([flag, new]);
            i += 1;
        }
        // A server of the page listens on a free loopback port.
        if server && !has(c, "--listen") {
            let addr = free_addr();
            out.extend(["--listen".to_string(), addr.clone()]);
            if cmd == "net" {
                self.start_net_server_later(&addr);
            }
        }
        // A run's files are 1 GiB each unless it says otherwise: more, times its jobs (a
        // sweep of jobs=1..16), than a CI disk has free while the other tests run.
        let sized = [
            "--size",
            "--profile",
            "--job",
            "--auto",
            "--verify-only",
            "--print-fio",
            // IOR's command line sizes its files (-b) and ends with the amount written.
            "--ior",
        ]
        .iter()
        .any(|f| has(c, f));
        // (A device keeps its own size: a region of it would cut its zones.)
        let on_dir = c.argv.get(1).is_some_and(|t| is_place(t));
        if cmd == "run" && !sized && on_dir {
            out.extend(["--size".into(), "64m".into()]);
        }
        // (A run of IOR's command line ends when its amount is moved, as IOR's: a time would
        // cut its fresh writes short of the read after them.)
        let timed = (matches!(cmd, "run" | "s3") && !has(c, "--ior"))
            || net_client
            || (cmd == "net" && has(c, "--agents"));
        if timed && !has(c, "--time") {
            out.extend(["--time".into(), "1s".into()]);
        }
        if has(c, "--target-latency") {
            if !has(c, "--step-time") {
                out.extend(["--step-time".into(), "1s".into()]);
            }
            if !has(c, "--search-steps") {
                out.extend(["--search-steps".into(), "4".into()]);
            }
        }
        if cmd == "suite" && !has(c, "--list") && !has(c, "--smoke") {
            out.push("--smoke".into());
        }
        if sub == ["suite", "disks"] {
            for w in c.argv.iter().skip(2).take_while(|w| !w.starts_with('-')) {
                if !w.starts_with('/') {
                    std::fs::create_dir_all(self.scratch.path().join(w)).unwrap();
                }
            }
        }
        // A job file naming a network server: the page's, or one started now.
        if let Some(job) = value(&out, "--job") {
            let path = self.scratch.path().join(job);
            if let Ok(text) = std::fs::read_to_string(&path) {
                if text.contains("NET_SERVER") {
                    let addr = self.net_addr();
                    std::fs::write(&path, text.replace("NET_SERVER", &addr)).unwrap();
                }
            }
        }
        (BIN.to_string(), out, env)
    }

    /// Remembers that a page's `net server` listens at `addr` (started by [`World::run`]).
    fn start_net_server_later(&mut self, addr: &str) {
        if let Some((mut c, _)) = self.net_server.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        self.pending_server = Some(addr.to_string());
    }

    /// Runs one command of a page; `Err` names the page, line, command and what it printed.
    pub(crate) fn run(&mut self, c: &DocCommand) -> Result<(), String> {
        self.pending_server = None;
        let (program, argv, env) = self.rewrite(c);
        let shown = format!("{} {}", c.program, c.argv.join(" "));
        let ran = format!("{program} {}", argv.join(" "));
        let at = format!("{}:{}: {shown}\n  ran: {ran}", c.page, c.line);
        let mut cmd = Command::new(&program);
        cmd.args(&argv)
            .envs(env)
            .current_dir(self.scratch.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let server = argv.first().is_some_and(|a| a == "agent")
            || argv.iter().take(2).eq(["net", "server"].iter());
        if server {
            return self.serve(cmd, &argv, &at);
        }
        let began = Instant::now();
        let (code, printed) = run_bounded(cmd).map_err(|e| format!("{at}\n  {e}"))?;
        eprintln!(
            "DOC-RUN {}:{}: exit {code} in {:.1} s: {ran}",
            c.page,
            c.line,
            began.elapsed().as_secs_f64()
        );
        // `s3 --embedded` in a build without the server (the default): refused, saying how to
        // build it, as the page says.
        if argv.iter().any(|a| a == "--embedded") && !cfg!(feature = "embedded-s3") {
            return match (code, printed.contains("--features embedded-s3")) {
                (2, true) => Ok(()),
                _ => Err(format!("{at}\n  a build without embedded-s3: exit {code}, expected 2 naming the feature:\n{printed}")),
            };
        }
        if !c.exit.contains(&code) {
            return Err(format!(
                "{at}\n  exit {code}, the page says {:?}; it printed:\n{printed}",
                c.exit
            ));
        }
        if c.check_output {
            let shown: Vec<String> = c.shown.iter().map(|l| self.rewrite_shown(l)).collect();
            let missing = crate::docs::missing_lines(&shown, &printed);
            if !missing.is_empty() {
                return Err(format!(
                    "{at}\n  the page shows lines it did not print: {missing:?}; it printed:\n{printed}"
                ));
            }
        }
        Ok(())
    }

    /// A page's server (`stormark agent`, `stormark net server`): started, seen listening and
    /// left running (a net server, for the page's clients) or stopped (an agent).
    fn serve(&mut self, mut cmd: Command, argv: &[String], at: &str) -> Result<(), String> {
        let listen = value(argv, "--listen")
            .expect("a --listen given")
            .to_string();
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| format!("{at}\n  {e}"))?;
        let target: std::net::SocketAddr = listen.parse().expect("an IP:PORT");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                let out = child.wait_with_output().unwrap();
                return Err(format!(
                    "{at}\n  ended ({status}) instead of listening on {listen}:\n{}",
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            if std::net::TcpStream::connect_timeout(&target, Duration::from_millis(200)).is_ok() {
                break;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                return Err(format!("{at}\n  not listening on {listen} within 20 s"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        eprintln!("DOC-RUN {at}: listening, as a server does");
        if self.pending_server.take().is_some() {
            self.net_server = Some((child, listen));
        } else {
            let _ = child.kill();
            let _ = child.wait();
        }
        Ok(())
    }
}

/// Runs `cmd` to its end, at most [`HUNG`]: its status and everything it printed (stdout, then
/// stderr).
fn run_bounded(mut cmd: Command) -> Result<(i32, String), String> {
    let mut child = cmd.spawn().map_err(|e| e.to_string())?;
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    let deadline = Instant::now() + HUNG;
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let printed = format!("{}{}", out.join().unwrap(), err.join().unwrap());
    match status {
        Some(s) => Ok((s.code().unwrap_or(-1), printed)),
        None => Err(format!(
            "still running after {HUNG:?}: killed; it printed:\n{printed}"
        )),
    }
}

#[test]
fn sizes_of_a_gib_or_more_become_mib() {
    assert_eq!(shrink_size("4g"), "4m");
    assert_eq!(shrink_size("16G"), "16m");
    assert_eq!(shrink_size("256m"), "256m");
    assert_eq!(shrink_size("1t"), "1024m");
}

/// A command that fails fails its page's test, naming the page, the line, the command as
/// written and as run, and what it printed; a transcript line it does not print fails too.
#[test]
fn a_failing_command_names_its_page_line_and_output() {
    let c = |argv: &[&str], shown: &[&str]| DocCommand {
        program: "stormark".into(),
        page: "docs/x.md".into(),
        line: 7,
        argv: argv.iter().map(|s| s.to_string()).collect(),
        shown: shown.iter().map(|s| s.to_string()).collect(),
        exit: vec![0],
        check_output: true,
    };
    let bad = c(&["run", "/mnt/data", "--bs", "4kk"], &[]);
    let mut w = World::new(
        "a_failing_command",
        "docs/x.md",
        std::slice::from_ref(&bad),
        &[],
    )
    .expect("nothing to start");
    let e = w.run(&bad).unwrap_err();
    assert!(
        e.starts_with("docs/x.md:7: stormark run /mnt/data --bs 4kk"),
        "{e}"
    );
    assert!(e.contains("exit 2") && e.contains("--bs 4kk"), "{e}");
    let good = c(
        &["run", "/mnt/data", "--size", "1m", "--time", "60s"],
        &["status: ok"],
    );
    w.run(&good).unwrap();
    let lying = c(&["run", "/mnt/data", "--size", "1m"], &["status: splendid"]);
    let e = w.run(&lying).unwrap_err();
    assert!(e.contains("status: splendid"), "{e}");
}
