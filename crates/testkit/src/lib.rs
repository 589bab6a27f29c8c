//! Test-only helpers: temp dirs, the real binary and prerequisites that skip with a printed
//! reason, here; loop devices (`loopdev`), network namespaces (`netns`), certificates (`certs`),
//! MinIO and versitygw, podman with stormark's image (`podman`), relays and a fixed results
//! document, each in a module of its own. Not published.
#![warn(missing_docs)]

use std::path::Path;
use std::process::Command;

pub use tempfile::TempDir;

mod certs;
mod delay;
mod ganesha;
mod loopdev;
mod minio;
mod netns;
mod oneshot;
mod podman;
mod sample;
mod slurm;
mod tgt;
mod versitygw;
pub use certs::certificates;
pub use delay::DelayRelay;
pub use ganesha::Ganesha;
pub use loopdev::LoopDevice;
pub use minio::{minio_binary, Minio};
pub use netns::{require_netns, NetCluster};
pub use podman::{Container, Podman};
pub use sample::sample_results;
pub use slurm::Slurm;
pub use tgt::Tgt;

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

/// Records that `test` cannot run here and why: printed, appended to the file named by
/// `STORMARK_TEST_SKIPS` (where `./test.sh` counts skips for its closing line), and with
/// `CI=true` a failure, so that a skipped test never passes unseen in CI.
pub fn skip(test: &str, why: &str) {
    let line = format!("SKIP {test}: {why}");
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{line} (with CI=true a test that cannot run fails: CI must run every test)");
    }
    eprintln!("{line}");
    if let Some(path) = std::env::var_os("STORMARK_TEST_SKIPS") {
        use std::io::Write;
        // One short write per line with O_APPEND: lines of tests running at once stay whole.
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = f.write_all(format!("{line}\n").as_bytes());
        }
    }
}

/// Whether the tests run as root; records why a test skips when not.
pub fn require_root(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc_geteuid() } == 0;
    if !root {
        skip(
            test,
            "needs root (loop devices, mounts, network namespaces)",
        );
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

/// Whether `tool` runs; records why a test skips when not.
pub fn require_tool(test: &str, tool: &str) -> bool {
    let ok = Command::new(tool).arg("--version").output().is_ok()
        || Command::new(tool).arg("-V").output().is_ok();
    if !ok {
        skip(test, &format!("`{tool}` is not installed"));
    }
    ok
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

/// Reads a results document.
pub fn read_json(path: &Path) -> serde_json::Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

pub(crate) fn run(cmd: &mut Command) -> Result<(), String> {
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

/// A measurement against ground truth that a loaded machine can spoil (a cache the host
/// evicts, an end starved of CPU): `measure` returns `Err(why)` when its check fails; it is
/// measured again, up to `tries` times, each miss printed with the load average. Panics with
/// every miss when none passed.
pub fn measured_again<T>(
    what: &str,
    tries: u32,
    mut measure: impl FnMut() -> Result<T, String>,
) -> T {
    let mut misses = Vec::new();
    for n in 1..=tries.max(1) {
        match measure() {
            Ok(v) => return v,
            Err(why) => {
                let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
                eprintln!(
                    "RETRY {what} ({n} of {tries}): {why}; load average {}",
                    load.trim()
                );
                misses.push(why);
            }
        }
    }
    panic!("{what}: every try missed:\n{}", misses.join("\n"));
}
