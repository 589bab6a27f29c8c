//! Test-only helpers: temp dirs, loop devices, the real binary, and prerequisites that skip
//! with a printed reason. Not published.
#![warn(missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub use tempfile::TempDir;

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
        let out = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&backing)
            .output()
            .map_err(|e| format!("losetup: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "losetup failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        Ok(LoopDevice {
            path,
            _dir: dir,
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

/// Reads a results document.
pub fn read_json(path: &Path) -> serde_json::Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}
