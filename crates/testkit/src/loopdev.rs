//! Loop devices over sparse backing files, for the tests of block devices and filesystems.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{run, temp_dir, TempDir};

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

    /// Puts an XFS filesystem on the device (which takes atomic writes, since Linux 6.16, on
    /// any device).
    pub fn mkfs_xfs(&self) -> Result<(), String> {
        run(Command::new("mkfs.xfs").args(["-q", "-f"]).arg(&self.path))
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
