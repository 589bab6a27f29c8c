//! A real versitygw (Versity's S3 gateway, its posix backend) for S3 tests: a second S3
//! server, so that nothing in stormark's client is MinIO's alone. Started on 127.0.0.1 with a
//! temporary directory, killed when dropped. The binary is `$VERSITYGW`, else `versitygw` in
//! Go's bin directory (`.ci/run` builds it), else on PATH.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::minio::{free_port, go_binary};
use crate::{temp_dir, TempDir};

/// A running versitygw.
pub struct Versitygw {
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    /// Its access key.
    pub access_key: String,
    /// Its secret key.
    pub secret_key: String,
    /// Where it keeps buckets (a directory each) and objects (a file each).
    pub data: TempDir,
    child: Child,
}

impl Versitygw {
    /// Starts versitygw over a directory under `base`, as it runs by default: without
    /// keep-alive (it answers every request with `Connection: close`). Panics, naming how to
    /// build it, when the binary is missing: S3 tests never skip.
    pub fn start(base: &str) -> Versitygw {
        Versitygw::start_with(base, false)
    }

    /// [`Versitygw::start`], with its `--keep-alive` on or off.
    pub fn start_with(base: &str, keep_alive: bool) -> Versitygw {
        let bin = go_binary("VERSITYGW", "versitygw").expect(
            "versitygw is not built: run .ci/build-s3-servers.sh versitygw (as .ci/run does), or set VERSITYGW to its binary",
        );
        let data = temp_dir(base);
        let port = free_port("127.0.0.1");
        let (access_key, secret_key) = (
            "stormark-vgw".to_string(),
            "stormark-vgw-secret".to_string(),
        );
        let child = Command::new(&bin)
            .args(["--access", &access_key, "--secret", &secret_key, "--port"])
            .arg(format!("127.0.0.1:{port}"))
            .args(keep_alive.then_some("--keep-alive"))
            .arg("posix")
            .arg(data.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()));
        let mut v = Versitygw {
            endpoint: format!("http://127.0.0.1:{port}"),
            access_key,
            secret_key,
            data,
            child,
        };
        let until = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > until || v.child.try_wait().ok().flatten().is_some() {
                panic!("versitygw at {} did not start", v.endpoint);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        v
    }

    /// The objects stored in `bucket` (files under its directory, metadata aside).
    pub fn objects(&self, bucket: &str) -> Vec<PathBuf> {
        let mut found = Vec::new();
        let mut stack = vec![self.data.path().join(bucket)];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = e.path();
                let hidden = e.file_name().to_string_lossy().starts_with('.');
                if path.is_dir() && !hidden {
                    stack.push(path);
                } else if path.is_file() && !hidden {
                    found.push(
                        path.strip_prefix(self.data.path())
                            .unwrap_or(Path::new(""))
                            .to_path_buf(),
                    );
                }
            }
        }
        found.sort();
        found
    }
}

impl Drop for Versitygw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
