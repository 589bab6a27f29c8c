//! Output files, checked before any load and written atomically: a temporary file in the same
//! directory, synced, then renamed over the name, so that a full disk or a crash leaves the
//! previous file whole and a link at the name is replaced, never written through.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Why an output path cannot be used: a user error (exit 2), said in one line.
#[derive(Debug, thiserror::Error)]
#[error("{flag} {path}: {why}")]
pub struct OutputError {
    /// The option, such as `--json`.
    pub flag: String,
    /// The path as given.
    pub path: String,
    /// What was wrong and what to give instead.
    pub why: String,
}

/// Where a document goes: standard output (`-`) or a file, replaced atomically.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// `-`: written to standard output once, at the end.
    Stdout,
    /// A file: `dir/name`.
    File {
        /// The path as given, for messages.
        path: PathBuf,
        /// The directory it lies in.
        dir: PathBuf,
        /// Its name there.
        name: OsString,
    },
}

impl Output {
    /// Checks `path` for `flag` before any load: its directory exists and takes a new file
    /// (one is made and removed), and the path is not a directory, device, FIFO or socket, nor
    /// any of `avoid` (targets, run directories, input documents; a path inside one of them
    /// that is a directory is refused too).
    pub fn check(flag: &str, path: &Path, avoid: &[&Path]) -> Result<Output, OutputError> {
        let err = |why: String| OutputError {
            flag: flag.to_string(),
            path: path.display().to_string(),
            why,
        };
        if path.as_os_str() == "-" {
            return Ok(Output::Stdout);
        }
        let Some(name) = path.file_name().map(|n| n.to_os_string()) else {
            return Err(err("not a file name; give one such as results.json".into()));
        };
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        match std::fs::metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(err(format!("{} is not a directory", dir.display()))),
            Err(_) => return Err(err(format!("directory {} does not exist", dir.display()))),
        }
        // What is at the name now (a link is replaced, not followed, so look at the link).
        if let Ok(m) = std::fs::symlink_metadata(path) {
            let ft = m.file_type();
            let what = if ft.is_dir() {
                Some("is a directory; give a file name such as results.json")
            } else if ft.is_block_device() || ft.is_char_device() {
                Some("is a device; give a regular file")
            } else if ft.is_fifo() || ft.is_socket() {
                Some("is a FIFO or socket; give a regular file, or - for standard output")
            } else {
                None
            };
            if let Some(what) = what {
                return Err(err(what.into()));
            }
        }
        // The same file as something the run reads or writes: by identity where it exists, by
        // canonical path otherwise (the output may not exist yet).
        let real_dir = std::fs::canonicalize(&dir).unwrap_or(dir.clone());
        let real = real_dir.join(&name);
        let followed = std::fs::metadata(path).ok();
        for a in avoid {
            let am = std::fs::metadata(a).ok();
            let same_file = match (&followed, &am) {
                (Some(o), Some(t)) => o.dev() == t.dev() && o.ino() == t.ino(),
                _ => false,
            };
            let real_a = std::fs::canonicalize(a).unwrap_or(a.to_path_buf());
            let inside_run = am.as_ref().is_some_and(|m| m.is_dir()) && real.starts_with(&real_a);
            if same_file || real == real_a || (inside_run && is_run_dir(&real_a)) {
                return Err(err(format!(
                    "is {} of this command; write results elsewhere",
                    if inside_run {
                        "inside the run directory"
                    } else {
                        "an input or the target"
                    }
                )));
            }
        }
        let out = Output::File {
            path: path.to_path_buf(),
            dir,
            name,
        };
        // Make (and remove) the temporary file now, so that a run never ends unable to write.
        let tmp = out.temp_path();
        File::options()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| err(format!("cannot create a file there ({e})")))?;
        let _ = std::fs::remove_file(&tmp);
        Ok(out)
    }

    fn temp_path(&self) -> PathBuf {
        match self {
            Output::Stdout => PathBuf::new(),
            Output::File { dir, name, .. } => {
                let mut t = OsString::from(".");
                t.push(name);
                t.push(format!(".tmp-{}", std::process::id()));
                dir.join(t)
            }
        }
    }

    /// Whether this is standard output.
    pub fn is_stdout(&self) -> bool {
        matches!(self, Output::Stdout)
    }

    /// Writes `data` whole: to standard output, or to a temporary file that is synced and
    /// renamed over the name. On failure the previous file is left as it was.
    pub fn write(&self, data: &[u8]) -> io::Result<()> {
        self.write_with(|w| w.write_all(data))
    }

    /// [`Output::write`], the data written by `fill` as it is made (buffered), never held
    /// whole in memory.
    pub fn write_with(
        &self,
        fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> io::Result<()> {
        match self {
            Output::Stdout => {
                let mut out = io::BufWriter::new(io::stdout().lock());
                fill(&mut out)?;
                out.flush()
            }
            Output::File { path, .. } => {
                let tmp = self.temp_path();
                let result = (|| {
                    let _ = std::fs::remove_file(&tmp);
                    let f = File::options().write(true).create_new(true).open(&tmp)?;
                    let mut w = io::BufWriter::with_capacity(1 << 16, f);
                    fill(&mut w)?;
                    let f = w.into_inner().map_err(|e| e.into_error())?;
                    f.sync_all()?;
                    std::fs::rename(&tmp, path)
                })();
                if result.is_err() {
                    let _ = std::fs::remove_file(&tmp);
                }
                result
            }
        }
    }
}

/// Whether `dir` is a run directory stormark made (it holds a manifest).
fn is_run_dir(dir: &Path) -> bool {
    dir.join(".stormark-run.json").exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_is_not_a_new_or_regular_file() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let e = |p: &Path, avoid: &[&Path]| Output::check("--json", p, avoid).unwrap_err().why;
        assert!(e(d, &[]).contains("directory"));
        assert!(e(&d.join("no/such.json"), &[]).contains("does not exist"));
        assert!(e(Path::new("/dev/null"), &[]).contains("device"));
        let input = d.join("a.json");
        std::fs::write(&input, "{}").unwrap();
        assert!(e(&input, &[&input]).contains("input or the target"));
        // The same file by another name.
        let link = d.join("b.json");
        std::os::unix::fs::symlink(&input, &link).unwrap();
        assert!(e(&link, &[&input]).contains("input or the target"));
        assert_eq!(
            Output::check("--json", Path::new("-"), &[]).unwrap(),
            Output::Stdout
        );
        assert!(Output::check("--json", &d.join("ok.json"), &[&input]).is_ok());
        assert_eq!(
            std::fs::read_dir(d).unwrap().count(),
            2,
            "the probe file is removed"
        );
    }

    #[test]
    fn writes_replace_whole_and_never_follow_a_link() {
        let tmp = tempfile::tempdir().unwrap();
        let precious = tmp.path().join("precious");
        std::fs::write(&precious, "keep").unwrap();
        let out_path = tmp.path().join("out.json");
        std::os::unix::fs::symlink(&precious, &out_path).unwrap();
        let out = Output::check("--json", &out_path, &[]).unwrap();
        out.write(b"one").unwrap();
        out.write(b"two").unwrap();
        assert_eq!(std::fs::read(&out_path).unwrap(), b"two");
        assert_eq!(std::fs::read(&precious).unwrap(), b"keep");
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 2);
    }
}
