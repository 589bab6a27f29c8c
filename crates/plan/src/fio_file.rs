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

/// Parses the fio job file `shown` (its text given); includes are read relative to it.
pub(crate) fn read(text: &str, shown: &str, lenient: bool) -> Result<FioJobFile, String> {
    let base = Path::new(shown)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let include = |name: &str| -> Result<String, String> {
        use std::io::Read;
        let path = base.join(name);
        let file = std::fs::File::open(&path).map_err(|e| e.to_string())?;
        let mut text = String::new();
        file.take(INCLUDE_LIMIT + 1)
            .read_to_string(&mut text)
            .map_err(|e| e.to_string())?;
        if text.len() as u64 > INCLUDE_LIMIT {
            return Err(format!("larger than {INCLUDE_LIMIT} bytes"));
        }
        Ok(text)
    };
    parse_fio_job_file(text, shown, &var, &include, lenient).map_err(|e| e.to_string())
}
