//! A real MinIO server for S3 tests: started on 127.0.0.1 with a temporary data directory,
//! killed when dropped. The binary is `$MINIO`, else `minio` in Go's bin directory (where
//! `.ci/build-s3-servers.sh` and `.ci/run` put it), else on PATH.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{temp_dir, TempDir};

/// A running MinIO.
pub struct Minio {
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    /// Its root access key.
    pub access_key: String,
    /// Its root secret key.
    pub secret_key: String,
    /// Where it keeps objects.
    pub data: TempDir,
    child: Child,
    _certs: Option<TempDir>,
    /// Its data directory is a tmpfs mounted by [`Minio::start_small`], unmounted on drop.
    mounted: bool,
}

/// How long a MinIO may take to be ready: a fresh one on a loaded machine took seconds
/// between listening and serving.
const READY_WITHIN: Duration = Duration::from_secs(120);

/// Whether the MinIO on `port` serves S3 now: `Ok`, or what it answered instead. Its
/// `/minio/health/cluster` answers 200 only once its object layer, bucket metadata and IAM
/// are up; `/minio/health/ready` answers 200 from the moment it listens, while S3 calls still
/// get `503 XMinioServerNotInitialized` (its header `x-minio-server-status: offline` says so).
fn ready(ip: &str, port: u16, tls: bool) -> Result<(), String> {
    const PATH: &str = "/minio/health/cluster";
    if tls {
        // With curl, the certificate unchecked.
        let out = Command::new("curl")
            .args([
                "-sk",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "--max-time",
                "2",
            ])
            .arg(format!("https://{ip}:{port}{PATH}"))
            .output()
            .map_err(|e| format!("curl: {e}"))?;
        let code = String::from_utf8_lossy(&out.stdout).trim().to_string();
        return match code.as_str() {
            "200" => Ok(()),
            "000" | "" => Err("no https answer".into()),
            c => Err(format!("GET {PATH}: HTTP {c}")),
        };
    }
    let mut s = TcpStream::connect((ip, port)).map_err(|e| format!("connect: {e}"))?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let req = format!("GET {PATH} HTTP/1.1\r\nHost: {ip}:{port}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes())
        .map_err(|e| format!("GET {PATH}: {e}"))?;
    let mut head = Vec::new();
    let _ = s.take(4096).read_to_end(&mut head);
    let head = String::from_utf8_lossy(&head);
    let status = head.lines().next().unwrap_or("").trim();
    if status.starts_with("HTTP/1.1 200") {
        return Ok(());
    }
    let why = head
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("x-minio-server-status:"))
        .map(|l| format!(" ({})", l.trim()))
        .unwrap_or_default();
    Err(format!(
        "GET {PATH}: {}{why}",
        if status.is_empty() {
            "no answer"
        } else {
            status
        }
    ))
}

/// Where the MinIO binary is, if anywhere.
pub fn minio_binary() -> Option<PathBuf> {
    go_binary("MINIO", "minio")
}

/// A Go-built server: `$ENV`, else `name` in Go's bin directory (where
/// `.ci/build-s3-servers.sh` and `.ci/run` put it), else on PATH.
pub(crate) fn go_binary(env: &str, name: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env) {
        return Some(PathBuf::from(p));
    }
    let gopath = std::env::var_os("GOPATH").map(PathBuf::from).or_else(|| {
        let out = Command::new("go").args(["env", "GOPATH"]).output().ok()?;
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (!text.is_empty()).then(|| PathBuf::from(text))
    });
    let candidates = gopath
        .map(|g| g.join("bin").join(name))
        .into_iter()
        .chain(std::env::var_os("HOME").map(|h| PathBuf::from(h).join("go/bin").join(name)));
    for c in candidates {
        if c.is_file() {
            return Some(c);
        }
    }
    Command::new(name)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| PathBuf::from(name))
}

/// A free port on `ip`, handed out once per process: tests run in parallel threads, and the kernel may give
/// the port just released to the next `bind(0)`, so two servers of one test binary would be told
/// the same port, one would fail to bind, and its readiness check would find the other.
pub(crate) fn free_port(ip: &str) -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let port = TcpListener::bind((ip, 0))
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port on 127.0.0.1");
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

impl Minio {
    /// Starts MinIO with a data directory under `base`. Panics, naming how to build it, when
    /// the binary is missing: S3 tests never skip.
    pub fn start(base: &str) -> Minio {
        Minio::start_on(base, "127.0.0.1")
    }

    /// Starts MinIO serving https with a certificate for 127.0.0.1 signed by a test CA (made
    /// with the `openssl` command); returns it and the CA's PEM file (to trust, or not).
    pub fn start_tls(base: &str) -> (Minio, PathBuf) {
        let certs = temp_dir(base);
        let (ca, cert, key) = crate::certificates(certs.path(), "127.0.0.1");
        std::fs::rename(&cert, certs.path().join("public.crt")).expect("placing the certificate");
        std::fs::rename(&key, certs.path().join("private.key")).expect("placing the key");
        let m = Minio::launch(base, "127.0.0.1", Some(certs), None, None);
        (m, ca)
    }

    /// Starts MinIO listening on `ip` (the bridge of a [`crate::NetCluster`], for agents in
    /// its namespaces).
    pub fn start_on(base: &str, ip: &str) -> Minio {
        Minio::launch(base, ip, None, None, None)
    }

    /// Starts MinIO answering virtual-hosted requests under `localhost`
    /// (`http://BUCKET.localhost:PORT/key`, `MINIO_DOMAIN`); its endpoint is
    /// `http://localhost:PORT`.
    pub fn start_virtual(base: &str) -> Minio {
        let mut m = Minio::launch(base, "127.0.0.1", None, None, Some("localhost"));
        m.endpoint = m.endpoint.replace("127.0.0.1", "localhost");
        m
    }

    /// Starts MinIO on a tmpfs of `mib` MiB of its own (root only: it mounts), so that a test
    /// can fill its disk.
    pub fn start_small(base: &str, mib: u64) -> Minio {
        Minio::launch(base, "127.0.0.1", None, Some(mib), None)
    }

    fn launch(
        base: &str,
        ip: &str,
        certs: Option<TempDir>,
        tmpfs_mib: Option<u64>,
        domain: Option<&str>,
    ) -> Minio {
        let bin = minio_binary().expect(
            "MinIO is not built: run .ci/build-s3-servers.sh minio (as .ci/run does), or set MINIO to its binary",
        );
        let data = temp_dir(base);
        if let Some(mib) = tmpfs_mib {
            let ok = Command::new("mount")
                .args(["-t", "tmpfs", "-o"])
                .arg(format!("size={mib}m"))
                .arg("tmpfs")
                .arg(data.path())
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "mounting a tmpfs on {}", data.path().display());
        }
        let (port, console) = (free_port(ip), free_port(ip));
        let (access_key, secret_key) = (
            "stormark-test".to_string(),
            "stormark-test-secret".to_string(),
        );
        let mut cmd = Command::new(&bin);
        if let Some(c) = &certs {
            cmd.arg("--certs-dir").arg(c.path());
        }
        if let Some(d) = domain {
            cmd.env("MINIO_DOMAIN", d);
        }
        let child = cmd
            .arg("server")
            .arg(data.path())
            .args(["--quiet", "--address"])
            .arg(format!("{ip}:{port}"))
            .arg("--console-address")
            .arg(format!("{ip}:{console}"))
            .env("MINIO_ROOT_USER", &access_key)
            .env("MINIO_ROOT_PASSWORD", &secret_key)
            .env("MINIO_BROWSER", "off")
            .env("MINIO_UPDATE", "off")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()));
        let mut m = Minio {
            endpoint: format!(
                "{}://{ip}:{port}",
                if certs.is_some() { "https" } else { "http" }
            ),
            access_key,
            secret_key,
            data,
            child,
            _certs: certs,
            mounted: tmpfs_mib.is_some(),
        };
        let started = Instant::now();
        let tls = m._certs.is_some();
        while let Err(why) = ready(ip, port, tls) {
            if let Ok(Some(status)) = m.child.try_wait() {
                panic!(
                    "MinIO at {} exited ({status}) before it was ready; its last answer: {why}",
                    m.endpoint
                );
            }
            if started.elapsed() > READY_WITHIN {
                panic!(
                    "MinIO at {} not ready after {} s; its last answer: {why}",
                    m.endpoint,
                    READY_WITHIN.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // A server that could not bind its port exits at once; what answered was another one.
        std::thread::sleep(Duration::from_millis(200));
        if let Ok(Some(status)) = m.child.try_wait() {
            panic!(
                "MinIO at {} exited ({status}): its port was taken",
                m.endpoint
            );
        }
        m
    }

    /// The server's process id (to pause, resume or kill it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` (`STOP`, `CONT`, `KILL`) to the server.
    pub fn signal(&self, signal: &str) {
        let _ = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status();
    }

    /// The bytes of object `key` of `bucket`, read with curl's SigV4 (not stormark's client).
    pub fn get(&self, bucket: &str, key: &str) -> Vec<u8> {
        let out = Command::new("curl")
            .args(["-sf", "--aws-sigv4", "aws:amz:us-east-1:s3", "--user"])
            .arg(format!("{}:{}", self.access_key, self.secret_key))
            .arg(format!("{}/{bucket}/{key}", self.endpoint))
            .output()
            .expect("running curl");
        assert!(out.status.success(), "curl could not GET {bucket}/{key}");
        out.stdout
    }

    /// Makes `bucket`, with curl's SigV4 (not stormark's client).
    pub fn make_bucket(&self, bucket: &str) {
        let ok = Command::new("curl")
            .args([
                "-sf",
                "-X",
                "PUT",
                "--aws-sigv4",
                "aws:amz:us-east-1:s3",
                "--user",
            ])
            .arg(format!("{}:{}", self.access_key, self.secret_key))
            .arg(format!("{}/{bucket}", self.endpoint))
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "curl could not make bucket {bucket}");
    }

    /// Stores `data` as object `key` of `bucket`, with curl's SigV4 (not stormark's client).
    pub fn put(&self, bucket: &str, key: &str, data: &[u8]) {
        // From a file: curl 7.88 signs a body from stdin wrongly (SignatureDoesNotMatch).
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let file = std::env::temp_dir().join(format!("stormark-put-{}-{n}", std::process::id()));
        std::fs::write(&file, data).expect("writing the object's file");
        let ok = Command::new("curl")
            .args(["-sf", "--aws-sigv4", "aws:amz:us-east-1:s3", "--user"])
            .arg(format!("{}:{}", self.access_key, self.secret_key))
            .arg("-T")
            .arg(&file)
            .arg(format!("{}/{bucket}/{key}", self.endpoint))
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        let _ = std::fs::remove_file(&file);
        assert!(ok, "curl could not PUT {bucket}/{key}");
    }

    /// The objects stored in `bucket` whose key starts with `prefix`, as MinIO's data
    /// directory holds them (one directory per object holding `xl.meta`).
    pub fn objects(&self, bucket: &str, prefix: &str) -> Vec<String> {
        let root = self.data.path().join(bucket);
        let mut out = Vec::new();
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                if p.join("xl.meta").is_file() {
                    let key = p
                        .strip_prefix(&root)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned();
                    if key.starts_with(prefix) {
                        out.push(key);
                    }
                } else if p.is_dir() {
                    stack.push(p);
                }
            }
        }
        out.sort();
        out
    }
}

impl Drop for Minio {
    fn drop(&mut self) {
        self.signal("CONT");
        let _ = self.child.kill();
        let _ = self.child.wait();
        if self.mounted {
            let _ = Command::new("umount").arg(self.data.path()).status();
        }
    }
}
