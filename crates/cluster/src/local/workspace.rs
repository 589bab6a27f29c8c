//! The run directory's life: made (or reopened with `--reuse`) once, held by its descriptor
//! from validation to cleanup, its manifest, the files made inside it, and their removal.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use stormark_engine::{Dir, FileTarget, Identity, Place};
use stormark_spec::units::format_size;

use super::manifest::{
    read_manifest, Manifest, ManifestError, ManifestFile, MANIFEST, MANIFEST_LIMIT,
};
use crate::agent::AgentError;

/// A file the run uses inside its run directory.
#[derive(Debug, Clone)]
pub(super) struct PlannedFile {
    pub name: String,
    pub size: u64,
    pub needs_data: bool,
    pub exists: bool,
    pub prepared: bool,
    /// A job fills it until the space is full (fio's `fill_device`): its length set, its
    /// blocks not reserved.
    pub fill: bool,
    /// Its first job writes it fresh (`--fresh`): made empty, nothing reserved, its blocks
    /// allocated by that job's writes.
    pub fresh: bool,
    /// An earlier job of the run writes it in full, without reading: the stage that job runs
    /// in and how far from the start it writes; a job of a later stage reads what it wrote.
    pub written: Option<(usize, u64)>,
    /// A job writes it fresh for a time (not in full): the job's name.
    pub fresh_partly: Option<String>,
    /// A job reads it: the job's name.
    pub read_by: Option<String>,
    /// What it is, once created or found in a reused run.
    pub id: Option<Identity>,
}

/// How far the removal of a run directory's files has come: read by the agent's service while
/// the removal goes on beside it, so that a new coordinator is told how much is left.
#[derive(Debug, Default)]
pub struct Removal {
    files: AtomicU64,
    bytes: AtomicU64,
}

impl Removal {
    /// The files not removed yet, and their bytes.
    pub fn left(&self) -> (u64, u64) {
        (
            self.files.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
        )
    }

    fn start(&self, files: u64, bytes: u64) {
        self.files.store(files, Ordering::Relaxed);
        self.bytes.store(bytes, Ordering::Relaxed);
    }

    fn removed(&self, bytes: u64) {
        let less = |a: &AtomicU64, by: u64| {
            let _ = a.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(v.saturating_sub(by))
            });
        };
        less(&self.files, 1);
        less(&self.bytes, bytes);
    }
}

/// A run directory: where it is, what is in it, and what this run made.
#[derive(Debug)]
pub(super) struct Workspace {
    /// The directory the run directory is made in (`None` when reusing one).
    parent: Option<Arc<Dir>>,
    /// The run directory's name in `parent`.
    name: String,
    /// The run directory, once made or reopened.
    run: Option<Arc<Dir>>,
    reused: bool,
    created_dir: bool,
    /// Files of the run, in plan order.
    pub files: Vec<PlannedFile>,
    /// Names of the files this run created, in order.
    created: Vec<String>,
    /// An agent's journal of run directories, and whether this one is to be kept.
    pub journal: Option<(super::journal::Journal, bool)>,
}

impl Workspace {
    /// A new run directory to be made inside `target` (opened now and held).
    pub fn new_in(target: &Path) -> Result<Workspace, AgentError> {
        let parent = Dir::open(target)
            .map_err(|e| AgentError::target(target, format!("cannot open it: {e}")))?;
        if !parent.writable() {
            return Err(AgentError::target(
                target,
                "not writable by this user; give a directory you can write to",
            ));
        }
        Ok(Workspace {
            parent: Some(Arc::new(parent)),
            // Random, not the PID: nobody can plant a directory under its name beforehand.
            name: format!("stormark-{}-{}", stamp(), &crate::auth::session_id()[..12]),
            run: None,
            reused: false,
            created_dir: false,
            files: Vec::new(),
            created: Vec::new(),
            journal: None,
        })
    }

    /// The kept run directory at `path`, reopened (held from now on).
    pub fn reuse(path: &Path) -> Result<Workspace, AgentError> {
        let run = Dir::open(path).map_err(|e| {
            AgentError::option(
                format!("--reuse {}", path.display()),
                format!("cannot open it: {e}"),
            )
        })?;
        Ok(Workspace {
            parent: None,
            name: String::new(),
            run: Some(Arc::new(run)),
            reused: true,
            created_dir: false,
            files: Vec::new(),
            created: Vec::new(),
            journal: None,
        })
    }

    /// Run directories of earlier runs left in the target by a run that never cleaned up (its
    /// process is gone and it was not kept on purpose... or was: they are reported, never
    /// removed, since `--keep` leaves the same).
    pub fn stale(&self) -> Vec<String> {
        let Some(parent) = &self.parent else {
            return Vec::new();
        };
        let Ok(entries) = std::fs::read_dir(parent.path()) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(pid) = name
                .strip_prefix("stormark-")
                .and_then(|rest| rest.rsplit('-').next())
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            let alive = Path::new(&format!("/proc/{pid}")).exists();
            if !alive && e.path().join(MANIFEST).exists() {
                out.push(e.path().display().to_string());
            }
        }
        out.sort();
        out
    }

    /// The run directory, once made.
    pub fn run_dir(&self) -> Option<Arc<Dir>> {
        self.run.clone()
    }

    /// The directory the run directory is made in (`None` when reusing one).
    pub fn parent_dir(&self) -> Option<Arc<Dir>> {
        self.parent.clone()
    }

    /// Whether this run reuses a kept run directory.
    pub fn reused(&self) -> bool {
        self.reused
    }

    /// The run directory's path, for messages and results.
    pub fn path(&self) -> PathBuf {
        match (&self.run, &self.parent) {
            (Some(run), _) => run.path().to_path_buf(),
            (None, Some(parent)) => parent.shown(&self.name),
            (None, None) => PathBuf::new(),
        }
    }

    /// The held directory whose filesystem holds the files.
    fn holder(&self) -> &Dir {
        match (&self.run, &self.parent) {
            (Some(run), _) => run,
            (None, Some(parent)) => parent,
            (None, None) => unreachable!("a workspace holds a directory from its creation"),
        }
    }

    /// Room on the filesystem: (total, available, used), bytes.
    pub fn space(&self) -> Result<(u64, u64, u64), AgentError> {
        self.holder()
            .space()
            .map_err(|e| AgentError::target(self.path(), e.to_string()))
    }

    /// Reads and checks the manifest of a reused run directory: every planned file with data
    /// must be there, be the very file it recorded (same device and inode, one link, a regular
    /// file, never a link) and be large enough.
    pub fn check_reuse(&mut self) -> Result<(), AgentError> {
        let shown = self.path();
        let run = self
            .run
            .clone()
            .expect("a reused workspace holds its directory");
        let option = format!("--reuse {}", shown.display());
        let refused = |reason: String| AgentError::option(&option, reason);
        let no_run = || {
            refused(format!(
                "no stormark run here (no {MANIFEST}); give the run directory that a --keep run printed"
            ))
        };
        let m = read_manifest(&run).map_err(|e| match e {
            ManifestError::Missing => no_run(),
            ManifestError::TooLarge => refused(format!(
                "{MANIFEST} is larger than {}; not a manifest stormark wrote",
                format_size(MANIFEST_LIMIT)
            )),
            ManifestError::Unreadable(e) => refused(format!("{MANIFEST}: {e}")),
            ManifestError::Damaged(e) => refused(format!("{MANIFEST} is damaged ({e})")),
        })?;
        for pf in self.files.iter_mut().filter(|f| f.size > 0) {
            let fail = |why: &str| refused(format!("{} {why}; run without --reuse", pf.name));
            let Some(k) = m.files.iter().find(|f| f.name == pf.name) else {
                return Err(fail("is not in the manifest"));
            };
            let (Some(dev), Some(ino)) = (k.dev, k.ino) else {
                return Err(fail(
                    "was recorded by an older stormark without its identity",
                ));
            };
            let file = run.open_file(&pf.name, libc::O_RDONLY).map_err(|e| {
                fail(&format!(
                    "cannot be opened as a regular file without following links ({e})"
                ))
            })?;
            let meta = file
                .metadata()
                .map_err(|e| fail(&format!("cannot be examined ({e})")))?;
            if (meta.dev(), meta.ino()) != (dev, ino) || meta.nlink() != 1 {
                return Err(fail(
                    "is not the file stormark created there (replaced or linked since)",
                ));
            }
            if k.size < pf.size || meta.len() != k.size {
                return Err(fail(&format!(
                    "is missing or smaller than the {} this run needs",
                    format_size(pf.size)
                )));
            }
            pf.exists = true;
            pf.prepared = k.prepared;
            pf.size = k.size;
            pf.id = Some(Identity::File { dev, ino });
        }
        Ok(())
    }

    /// Writes the manifest atomically (temporary file, sync, rename) inside the run directory.
    pub fn write_manifest(&self) -> Result<(), AgentError> {
        let Some(run) = &self.run else {
            return Ok(());
        };
        let manifest = Manifest {
            tool: format!("stormark {}", env!("CARGO_PKG_VERSION")),
            files: self
                .files
                .iter()
                .filter(|f| f.exists)
                .map(|f| {
                    let (dev, ino) = match f.id {
                        Some(Identity::File { dev, ino }) => (Some(dev), Some(ino)),
                        _ => (None, None),
                    };
                    ManifestFile {
                        name: f.name.clone(),
                        size: f.size,
                        prepared: f.prepared,
                        dev,
                        ino,
                    }
                })
                .collect(),
        };
        let text = serde_json::to_string_pretty(&manifest).expect("a manifest serializes");
        run.write_atomic(MANIFEST, text.as_bytes())
            .map_err(|e| AgentError::io("write", run.shown(MANIFEST), e))
    }

    /// Makes the run directory (unless reused) and every planned file not there yet, reserving
    /// its blocks. Checks `stop` between files.
    pub fn create(&mut self, stop: &AtomicBool) -> Result<(), AgentError> {
        if self.run.is_none() {
            let parent = self
                .parent
                .as_ref()
                .expect("a new workspace holds its parent");
            let run = parent.create_dir(&self.name).map_err(|e| {
                AgentError::target(parent.shown(&self.name), format!("cannot create it: {e}"))
            })?;
            self.created_dir = true;
            if let Some((j, keep)) = &self.journal {
                j.add(run.path(), *keep);
            }
            self.run = Some(Arc::new(run));
        }
        // The first manifest is written before any file: a target where it cannot be written
        // is refused, not a failure.
        self.write_manifest().map_err(|e| match e {
            AgentError::Io { path, cause, .. } => {
                AgentError::target(path, format!("cannot write it: {cause}"))
            }
            e => e,
        })?;
        let run = self.run.clone().expect("the run directory is held");
        for i in 0..self.files.len() {
            if self.files[i].exists || self.files[i].size == 0 {
                continue;
            }
            if stop.load(Ordering::Relaxed) {
                return Err(AgentError::Interrupted("creating files"));
            }
            let name = self.files[i].name.clone();
            let shown = run.shown(&name);
            let file = run
                .create_file(&name, 0)
                .map_err(|e| AgentError::io("create", &shown, e))?;
            self.created.push(name);
            self.files[i].exists = true;
            self.files[i].id =
                Some(Identity::of(&file).map_err(|e| AgentError::io("examine", &shown, e))?);
            let size = self.files[i].size;
            let made = if self.files[i].fresh {
                // The writes allocate it, as IOR's and fio's fallocate=none: nothing reserved.
                Ok(())
            } else if self.files[i].fill {
                file.set_len(size)
            } else {
                allocate(&file, size)
            };
            made.map_err(|e| {
                AgentError::io(format!("reserve {} for", format_size(size)), &shown, e)
            })?;
        }
        self.write_manifest()
    }

    /// Whether files in the run directory can be opened with `O_DIRECT` (tmpfs refuses it):
    /// creates and removes one probe file there.
    pub fn odirect_supported(&self) -> Result<bool, AgentError> {
        let run = self
            .run
            .as_ref()
            .expect("probed after the run directory is made");
        const PROBE: &str = ".stormark-odirect-probe";
        let supported = match run.create_file(PROBE, libc::O_DIRECT) {
            Ok(_) => true,
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => false,
            Err(e) => return Err(AgentError::target(run.shown(PROBE), e.to_string())),
        };
        // O_CREAT may have made the file even when O_DIRECT was refused.
        let _ = run.remove_file(PROBE);
        Ok(supported)
    }

    /// The sizes the file system of the run directory takes atomic writes of (least, most),
    /// from a probe file made and removed there; `None` where it takes none.
    pub fn atomic_units(&self) -> Result<Option<(u32, u32)>, AgentError> {
        let run = self
            .run
            .as_ref()
            .expect("probed after the run directory is made");
        const PROBE: &str = ".stormark-atomic-probe";
        let units = run
            .create_file(PROBE, libc::O_DIRECT)
            .and_then(|f| stormark_engine::atomic_write_units(&f));
        let _ = run.remove_file(PROBE);
        units.map_err(|e| AgentError::target(run.shown(PROBE), e.to_string()))
    }

    /// The engine's handle on planned file `i`: its name beneath the held run directory and
    /// the identity it must still have.
    pub fn target(&self, i: usize, start: u64, len: u64) -> FileTarget {
        FileTarget {
            place: Place::Beneath {
                dir: self
                    .run
                    .clone()
                    .expect("files are used after the run directory is made"),
                name: self.files[i].name.clone(),
            },
            expect: self.files[i].id,
            // A worker's own file starts at 0, or at its job's share of it (fio's
            // offset=N%, which the caller passes); a shared one at the worker's region.
            start,
            len,
        }
    }

    /// Marks files `done` as holding data, syncing them first.
    pub fn mark_prepared(&mut self, done: &[usize]) -> Result<(), AgentError> {
        for &i in done {
            if let Ok(f) = self.target(i, 0, 0).open(false, false) {
                let _ = f.sync_all();
            }
            self.files[i].prepared = true;
        }
        self.write_manifest()
    }

    /// Marks files `done` as holding data once a job wrote them in full (no sync: the
    /// manifest says what the run wrote; the files' pages reach the disk as any write's do).
    pub fn mark_written(&mut self, done: &[usize]) -> Result<(), AgentError> {
        if done.iter().all(|&i| self.files[i].prepared) {
            return Ok(());
        }
        for &i in done {
            self.files[i].prepared = true;
        }
        self.write_manifest()
    }

    /// Removes what this run made (unless `keep`), counting down `removal` file by file, or
    /// records the kept directory. The journal's entry goes once the removal is done, so that
    /// an agent killed halfway removes the rest at its next start. Returns notes for the
    /// results.
    pub fn cleanup(&mut self, keep: bool, removal: &Removal) -> Vec<String> {
        let mut notes = Vec::new();
        let Some(run) = self.run.clone() else {
            return notes;
        };
        let shown = run.path().display().to_string();
        let unjournal = |ws: &Workspace| {
            if let Some((j, _)) = &ws.journal {
                j.remove(run.path());
            }
        };
        if keep || self.reused {
            unjournal(self);
            let _ = self.write_manifest();
            notes.push(format!(
                "kept run directory {shown} (run again on it with: stormark run {shown} --reuse)"
            ));
            return notes;
        }
        if !self.created_dir {
            unjournal(self);
            return notes;
        }
        // Each file made, the --verify state beside it (made only by this run), the manifest.
        let verify_states: Vec<String> = self
            .created
            .iter()
            .map(|n| stormark_engine::state_name(n))
            .collect();
        let size = |name: &str| {
            self.files
                .iter()
                .find(|f| f.name == name)
                .map_or(0, |f| f.size)
        };
        removal.start(
            self.created.len() as u64,
            self.created.iter().map(|n| size(n)).sum(),
        );
        let mut remove = |name: &str| {
            if let Err(e) = run.remove_file(name) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    notes.push(format!(
                        "could not remove {}: {e}",
                        run.shown(name).display()
                    ));
                }
            }
        };
        for name in &self.created {
            // A fragmented file on a device that discards what is freed can take seconds.
            remove(name);
            removal.removed(size(name));
        }
        for name in &verify_states {
            let _ = run.remove_file(name);
        }
        // The manifest last: it names what an agent killed halfway removes at its next start.
        remove(MANIFEST);
        let parent = self
            .parent
            .as_ref()
            .expect("a created run directory has a parent");
        if let Err(e) = parent.remove_dir(&self.name) {
            notes.push(format!(
                "could not remove {shown}: {e} (files not created by stormark are left in place)"
            ));
        }
        unjournal(self);
        notes
    }
}

/// Reserves the file's blocks (fio's default `fallocate=native`). Only a filesystem that
/// cannot reserve (EOPNOTSUPP) gets a length set instead: a full filesystem is an error, never
/// a sparse file that fails halfway through the run.
fn allocate(file: &File, size: u64) -> std::io::Result<()> {
    // SAFETY: fd is open for writing; mode 0 allocates and extends.
    let r = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, size as libc::off_t) };
    if r == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EOPNOTSUPP) => file.set_len(size),
        _ => Err(e),
    }
}

pub(super) fn stamp() -> String {
    let t = stormark_stats::format_rfc3339(std::time::SystemTime::now());
    // 2026-11-23T07:15:02.123Z -> 20261123-071502
    let digits: String = t.chars().filter(|c| c.is_ascii_digit()).collect();
    format!("{}-{}", &digits[..8], &digits[8..14])
}
