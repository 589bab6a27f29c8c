//! `pin_cache`: a buffered job's files held in the page cache from before the load to the
//! run's end, for runs that mean to measure the cache. Each file's region is mapped shared
//! and read-only and locked (`mlock(2)`: the pages are read in, and no reclaim, DAMON pageout
//! scheme or balloon takes them while locked); unmapping at the cleanup releases them.
//! Refused before the load where it cannot hold: direct I/O (which the page cache never
//! sees), a share or LUN reached by stormark's own client, more than the host has available,
//! or more than `RLIMIT_MEMLOCK` lets an unprivileged process lock.

use std::collections::BTreeSet;
use std::os::fd::AsRawFd;

use stormark_engine::{Backend, FileTarget};
use stormark_spec::Direct;

use super::{human, limits, LocalAgent, Where};
use crate::agent::AgentError;

/// Share of the host's available memory that pinned files may take: the rest is left to the
/// host, the run's buffers and the kernel.
const PIN_SHARE: f64 = 0.8;

/// The regions locked in memory, unlocked and unmapped when dropped.
#[derive(Debug, Default)]
pub(super) struct Pinned {
    maps: Vec<Map>,
}

#[derive(Debug)]
struct Map {
    addr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is only unmapped, once, by its owner; nothing reads through it.
unsafe impl Send for Map {}
// SAFETY: as above: no access through a shared reference.
unsafe impl Sync for Map {}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: addr/len are a mapping this Map made and alone owns; munmap unlocks it.
        unsafe {
            libc::munlock(self.addr, self.len);
            libc::munmap(self.addr, self.len);
        }
    }
}

impl Pinned {
    /// Bytes locked.
    pub fn bytes(&self) -> u64 {
        self.maps.iter().map(|m| m.len as u64).sum()
    }
}

impl LocalAgent {
    /// Each region of the jobs that pin, once: (file index or region start, length).
    fn pin_regions(&self) -> Vec<FileTarget> {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for run in self.stages.iter().flatten() {
            if !run.job.pin_cache || !run.backend.touches_files() {
                continue;
            }
            for (w, files) in run.worker_files.iter().enumerate() {
                let start = run.job.region_start(w as u64);
                for t in self.targets(files, start, run.len) {
                    let key = (format!("{:?}", t.place), t.start, t.len);
                    if seen.insert(key) {
                        out.push(t);
                    }
                }
            }
        }
        out
    }

    /// Bytes [`Self::pin_regions`] will lock, known before the run directory is made: each
    /// file of a run directory once, each region of a file or device once.
    fn pin_bytes(&self) -> u64 {
        let mut seen = BTreeSet::new();
        let existing = matches!(self.place, Some(Where::Existing { .. }));
        let mut bytes = 0;
        for run in self.stages.iter().flatten() {
            if !run.job.pin_cache || !run.backend.touches_files() {
                continue;
            }
            for (w, files) in run.worker_files.iter().enumerate() {
                let start = run.job.region_start(w as u64);
                let keys: Vec<(usize, u64)> = if existing {
                    vec![(usize::MAX, start)]
                } else {
                    files.iter().map(|&i| (i, 0)).collect()
                };
                for (file, at) in keys {
                    if seen.insert((file, at, run.len)) {
                        bytes += run.len;
                    }
                }
            }
        }
        bytes
    }

    /// Refuses, before the load, a pin that cannot hold (see the module's words).
    pub(super) fn check_pin(&self) -> Result<(), AgentError> {
        let runs: Vec<_> = self
            .stages
            .iter()
            .flatten()
            .filter(|r| r.job.pin_cache && r.backend.touches_files())
            .collect();
        let Some(first) = runs.first() else {
            return Ok(());
        };
        if let Some(r) = runs.iter().find(|r| r.job.direct != Direct::No) {
            return Err(AgentError::option(
                "--pin-cache",
                format!("job {}: direct I/O never reads the page cache, so nothing pinned there is measured; use --buffered, or leave out --pin-cache", r.job.name),
            ));
        }
        if !matches!(self.place, Some(Where::Dir(_) | Where::Existing { .. }))
            || matches!(first.backend, Backend::Iscsi | Backend::Nfs)
        {
            return Err(AgentError::option(
                "--pin-cache",
                "only a directory, file or device of this host has its pages in this host's page cache (not a share or LUN reached by stormark's own client); leave out --pin-cache",
            ));
        }
        let bytes = self.pin_bytes();
        if let Some(avail) = limits::mem_available() {
            if bytes as f64 > avail as f64 * PIN_SHARE {
                return Err(AgentError::option(
                    "--pin-cache",
                    format!("the files to pin ({}) do not fit in memory: this host has {} available; pin at most {} (--size, --files or --jobs), or leave out --pin-cache", human(bytes), human(avail), human((avail as f64 * PIN_SHARE) as u64)),
                ));
            }
        }
        // SAFETY: geteuid has no preconditions. Root (CAP_IPC_LOCK) is not held to the limit.
        if unsafe { libc::geteuid() } != 0 {
            if let Some(limit) = memlock_limit().filter(|l| bytes > *l) {
                return Err(AgentError::option(
                    "--pin-cache",
                    format!("the files to pin ({}) are more than this process may lock (ulimit -l: {}); raise RLIMIT_MEMLOCK (ulimit -l, or LimitMEMLOCK= of a systemd unit), run as root, or leave out --pin-cache", human(bytes), human(limit)),
                ));
            }
        }
        Ok(())
    }

    /// Maps and locks every region to pin (after the preparation wrote them); a note says
    /// how much.
    pub(super) fn pin_files(&mut self) -> Result<(), AgentError> {
        let regions = self.pin_regions();
        if regions.is_empty() {
            return Ok(());
        }
        let mut pinned = Pinned::default();
        for t in &regions {
            let map = pin_one(t).map_err(|e| AgentError::io("pin (mmap + mlock)", t.shown(), e))?;
            pinned.maps.extend(map);
        }
        self.notes.push(format!(
            "pinned {} of the run's files in the page cache (mmap + mlock, --pin-cache) until the run's end",
            human(pinned.bytes())
        ));
        self.pinned = Some(pinned);
        Ok(())
    }
}

/// Maps `t`'s region shared and read-only and locks it; `None` for an empty region.
fn pin_one(t: &FileTarget) -> std::io::Result<Option<Map>> {
    if t.len == 0 {
        return Ok(None);
    }
    let file = t.open(false, false)?;
    // SAFETY: sysconf has no preconditions.
    let page = match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        p if p > 0 => p as u64,
        _ => 4096,
    };
    let offset = t.start / page * page;
    let len = usize::try_from(t.start + t.len - offset)
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EFBIG))?;
    // SAFETY: a fresh shared read-only mapping of an open file; the kernel checks the range.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            offset as libc::off_t,
        )
    };
    if addr == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    let map = Map { addr, len };
    // SAFETY: addr/len are the mapping just made. mlock reads the pages in and locks them.
    if unsafe { libc::mlock(map.addr, map.len) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(Some(map))
}

/// The soft `RLIMIT_MEMLOCK`, bytes; `None` when unlimited or unknown.
fn memlock_limit() -> Option<u64> {
    // SAFETY: zeroed is a valid rlimit; getrlimit fills it.
    let mut r: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: r is a valid rlimit to write into.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r) } != 0 {
        return None;
    }
    (r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur)
}
