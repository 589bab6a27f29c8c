//! Reading a fio job file from disk: its variables from the environment (and fio's own
//! `$ncpus`, `$mb_memory`, `$pagesize`), its includes beside it.

use std::path::Path;

use stormark_spec::{parse_fio_job_file, FioJobFile};

/// The largest included file read.
const INCLUDE_LIMIT: u64 = 16 << 20;

/// A variable as fio expands it: the environment first, then fio's built-ins.
fn var(name: &str) -> Option<String> {
    if let Ok(v) = std::env::var(name) {
        return Some(v);
    }
    match name {
        "ncpus" => std::thread::available_parallelism()
            .ok()
            .map(|n| n.to_string()),
        "pagesize" => Some("4096".into()),
        "mb_memory" => {
            let text = std::fs::read_to_string("/proc/meminfo").ok()?;
            let kib: u64 = text
                .lines()
                .find(|l| l.starts_with("MemTotal:"))?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            Some((kib / 1024).to_string())
        }
        _ => None,
    }
}

/// Parses the fio job file `shown` (its text given); includes are read beneath its directory.
pub(crate) fn read(text: &str, shown: &str, lenient: bool) -> Result<FioJobFile, String> {
    let base = Path::new(shown)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let include = |name: &str| read_include(&base, name);
    parse_fio_job_file(text, shown, &var, &include, lenient).map_err(|e| e.to_string())
}

/// An included file, read only when it lies beneath `base` (the job file's directory, links
/// resolved), is a regular file (a FIFO or `/dev/stdin` would block or read what is not a job
/// file) and is at most [`INCLUDE_LIMIT`] bytes. The errors never repeat the name written.
fn read_include(base: &Path, name: &str) -> Result<String, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let beneath =
        "a file beside the job file or in a directory below it, such as include common.fio";
    let written = Path::new(name);
    if name.is_empty()
        || written.is_absolute()
        || written
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return Err(format!("expected {beneath}"));
    }
    let root = std::fs::canonicalize(if base.as_os_str().is_empty() {
        Path::new(".")
    } else {
        base
    })
    .map_err(|e| format!("cannot resolve the job file's directory ({e})"))?;
    let path = std::fs::canonicalize(root.join(written))
        .map_err(|e| format!("cannot open it ({})", e.kind()))?;
    if !path.starts_with(&root) {
        return Err(format!(
            "it leads outside the job file's directory; expected {beneath}"
        ));
    }
    // O_NONBLOCK: a FIFO must not hang the open; what is opened must be a regular file.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|e| format!("cannot open it ({})", e.kind()))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot examine it ({})", e.kind()))?;
    if !meta.is_file() {
        return Err(format!("not a regular file; expected {beneath}"));
    }
    if meta.len() > INCLUDE_LIMIT {
        return Err(format!("larger than {INCLUDE_LIMIT} bytes"));
    }
    let mut text = String::new();
    file.take(INCLUDE_LIMIT + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read it as text ({})", e.kind()))?;
    if text.len() as u64 > INCLUDE_LIMIT {
        return Err(format!("larger than {INCLUDE_LIMIT} bytes"));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_stay_beneath_the_job_files_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let jobs = tmp.path().join("jobs");
        std::fs::create_dir_all(jobs.join("sub")).unwrap();
        std::fs::write(jobs.join("common.fio"), "[global]\nbs=4k\n").unwrap();
        std::fs::write(jobs.join("sub/more.fio"), "[global]\nbs=8k\n").unwrap();
        std::fs::write(tmp.path().join("secret"), "root:$6$salt$hash:19000::::::\n").unwrap();
        std::os::unix::fs::symlink(tmp.path().join("secret"), jobs.join("link.fio")).unwrap();
        std::os::unix::fs::symlink("common.fio", jobs.join("inside.fio")).unwrap();
        let fifo = jobs.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string; mkfifo only makes the node.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(read_include(&jobs, "common.fio").unwrap().contains("4k"));
        assert!(read_include(&jobs, "sub/more.fio").unwrap().contains("8k"));
        assert!(read_include(&jobs, "inside.fio").unwrap().contains("4k"));
        for name in [
            "/etc/passwd",
            "../secret",
            "../../../../etc/passwd",
            "link.fio",
            "fifo",
            "/dev/stdin",
            "sub/../common.fio",
            "",
        ] {
            let e = read_include(&jobs, name).unwrap_err();
            assert!(
                !e.contains("secret") && !e.contains("passwd"),
                "{name}: {e}"
            );
        }
        // The whole job file: refused by line, the included text never echoed.
        let shown = jobs.join("j.fio");
        for include in ["../secret", "link.fio", "fifo"] {
            let text = format!("include {include}\n[j]\nrw=read\n");
            let e = read(&text, shown.to_str().unwrap(), true).unwrap_err();
            assert!(e.contains("line 1: include"), "{e}");
            assert!(!e.contains("root") && !e.contains("salt"), "{e}");
        }
    }

    #[test]
    fn an_included_secret_is_never_echoed() {
        let tmp = tempfile::tempdir().unwrap();
        // A file beneath the directory that is not a job file: its lines are refused by
        // number, never shown, with --lenient too.
        std::fs::write(
            tmp.path().join("notes.txt"),
            "root:x:0:0:root:/root:/bin/bash\nhunter2 is the password\n",
        )
        .unwrap();
        let shown = tmp.path().join("j.fio");
        for lenient in [false, true] {
            let said = match read(
                "[j]\nrw=read\ninclude notes.txt\n",
                shown.to_str().unwrap(),
                lenient,
            ) {
                Ok(f) => f.ignored.join(", "),
                Err(e) => e,
            };
            assert!(
                !said.contains("root") && !said.contains("hunter2"),
                "{said}"
            );
            assert!(said.contains("line 1"), "{said}");
        }
    }
}
