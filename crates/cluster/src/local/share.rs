//! An NFS share as the target (`nfs://SERVER/EXPORT/DIR`): measured from user space over the
//! workers' own connections, no kernel client, no mount. The run directory, its files and
//! their preparation are made over NFS as in a local directory (the same plan of files), and
//! exactly what the run made is removed at its end.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use stormark_engine::{Backend, FileTarget, NfsDir, Place};
use stormark_nfs::{Client, FileId, Handle, Url};
use stormark_spec::units::format_size;
use stormark_spec::Workload;

use super::planning::{check_job_here, plan_job_files};
use super::service::Service;
use super::specs::JobRun;
use super::workspace::{stamp, PlannedFile};
use super::{human, push_once, LocalAgent, Where};
use crate::agent::{AgentError, Validated};

/// A file or directory this run made: which object it is, and its file handle (which also
/// tells a later object of the same number apart: a server's handle carries the generation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Made {
    pub id: FileId,
    pub handle: Handle,
}

/// How long each removal at the end may wait for the server.
pub(super) const CLEANUP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A run directory on a share: where, its files, and what this run made.
#[derive(Debug)]
pub(crate) struct ShareDir {
    pub url: Arc<Url>,
    /// The agent's own connection: makes and removes the run's files (boxed: a client is most
    /// of the size of a share, beside the other places a run can have).
    client: Box<Client>,
    /// The run directory's name in the URL's directory.
    name: String,
    pub files: Vec<PlannedFile>,
    /// The run directory as the server knows it, once made: what is removed at the end
    /// only while its name still leads to it.
    dir_id: Option<FileId>,
    /// The run directory's NFS file handle, once made (boxed: 65 bytes most runs never use).
    dir_handle: Option<Box<Handle>>,
    /// Each planned file's object, once made: what its workers read and write by its handle
    /// (and nothing else put under its name) and what is removed.
    ids: Vec<Option<Made>>,
    /// Names of the files this run created, in order, with their objects.
    created: Vec<(String, Made)>,
    /// An agent's journal, and whether the run directory is to be kept: a crash leaves it to
    /// the agent's next start.
    pub journal: Option<(super::journal::Journal, bool)>,
}

impl ShareDir {
    /// The worker's handle on file `i`: the file handle its CREATE gave, read and written by
    /// that handle alone (a file, or a directory, swapped in under its name since, such as a
    /// neighbour's link to a file of root's, is never reached). A file not made yet has only
    /// its path, which no worker opens.
    pub fn target(&self, i: usize, start: u64, len: u64) -> FileTarget {
        let shown = PathBuf::from(format!("{}/{}", self.shown(), self.files[i].name));
        let place = match self.ids.get(i).copied().flatten() {
            Some(made) => Place::Share {
                handle: made.handle,
                shown,
            },
            None => Place::Path(shown),
        };
        FileTarget {
            place,
            expect: None,
            start,
            len,
        }
    }

    /// The run directory as the user would name it.
    pub(super) fn shown(&self) -> String {
        format!("{}/{}", self.url, self.name)
    }

    /// Makes the run directory and its files (each its length, sparse: what is read is
    /// written by the preparation).
    pub fn create(&mut self, stop: &std::sync::atomic::AtomicBool) -> Result<(), AgentError> {
        if self.dir_id.is_none() {
            if let Some((j, keep)) = &self.journal {
                let names: Vec<String> = self.files.iter().map(|f| f.name.clone()).collect();
                j.add_share(&self.shown(), &names, *keep);
            }
            // MKDIR in the URL's directory held by its handle (looked up from the export's
            // root, never through a link); it fails on a name that exists: nothing planted is
            // used. Its handle, and identity, find it (for a restarted agent too) wherever it
            // is moved; nothing of the run is reached by a path after this.
            let name = self.name.clone();
            let shown = self.shown();
            let cannot = |e: &dyn std::fmt::Display| {
                AgentError::target(&shown, format!("cannot create it: {e}"))
            };
            let parent = self.client.dir_handle().map_err(|e| cannot(&e))?;
            let made = match self
                .client
                .mkdir_at(&parent, &name)
                .map_err(|e| cannot(&e))?
            {
                Some(f) if f.id.is_some() => Some(f),
                // The server did not say: looked up by the parent's handle, never followed.
                _ => self.client.lookup_at(&parent, &name).ok(),
            }
            .filter(|f| f.kind == stormark_nfs::Kind::Dir);
            let (id, handle) = made
                .and_then(|f| Some((f.id?, f.handle)))
                .ok_or_else(|| {
                    AgentError::target(
                        self.shown(),
                        "replaced right after it was made (by another user of the share?); nothing was written",
                    )
                })?;
            self.dir_id = Some(id);
            self.dir_handle = Some(Box::new(handle));
            // Recorded before anything is made in it: a crash from here on leaves it to the
            // agent's next start, which removes it only while it is this object.
            self.journal_ids();
            self.ids = vec![None; self.files.len()];
        }
        let mut made = false;
        for i in 0..self.files.len() {
            if self.files[i].exists || self.files[i].size == 0 {
                continue;
            }
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                self.journal_ids();
                return Err(AgentError::Interrupted("creating files"));
            }
            let file = self.create_file(i)?;
            self.created.push((self.files[i].name.clone(), file));
            self.ids[i] = Some(file);
            self.files[i].exists = true;
            made = true;
        }
        if made {
            self.journal_ids();
        }
        Ok(())
    }

    /// GUARDED CREATE of file `i` in the run directory held by its handle, its length set
    /// (sparse): the object made and its handle.
    fn create_file(&mut self, i: usize) -> Result<Made, AgentError> {
        let dir = *self
            .dir_handle
            .as_deref()
            .expect("the run directory is made first");
        let (name, size) = (self.files[i].name.clone(), self.files[i].size);
        let shown = format!("{}/{name}", self.shown());
        let fail = |e: &dyn std::fmt::Display| {
            AgentError::target(&shown, format!("cannot create it: {e}"))
        };
        let found = match self
            .client
            .create_at(&dir, &name, size)
            .map_err(|e| fail(&e))?
        {
            Some(f) if f.id.is_some() => f,
            // The server did not say what it made: looked up in the directory held.
            _ => self.client.lookup_at(&dir, &name).map_err(|e| fail(&e))?,
        };
        match (found.kind, found.id) {
            (stormark_nfs::Kind::File, Some(id)) => Ok(Made {
                id,
                handle: found.handle,
            }),
            _ => Err(fail(&"not the regular file just made")),
        }
    }

    /// The objects made so far, into the agent's journal: what a restarted agent removes.
    fn journal_ids(&self) {
        if let (Some((j, false)), Some(dir), Some(handle)) =
            (&self.journal, self.dir_id, &self.dir_handle)
        {
            j.share_made(&self.shown(), dir, handle, &self.created);
        }
    }

    /// Marks the files the preparation wrote.
    pub fn mark_prepared(&mut self, done: &[usize]) {
        for &i in done {
            self.files[i].prepared = true;
        }
    }

    /// Removes what this run made (unless kept); problems as notes. A server that does not
    /// answer is asked nothing more: what is left is named, and stays in the agent's journal
    /// for its next start.
    pub fn cleanup(&mut self, keep: bool) -> Vec<String> {
        let mut notes = Vec::new();
        let Some(dir_id) = self.dir_id else {
            return notes;
        };
        if keep {
            if let Some((j, _)) = &self.journal {
                j.remove_share(&self.shown());
            }
            notes.push(format!("kept run directory {}", self.shown()));
            return notes;
        }
        // A fresh connection: the one held since planning may have been dropped by the
        // server during a long run.
        if let Ok(fresh) = Client::connect(&self.url, 1) {
            *self.client = fresh;
        }
        // Removals are quick on a server that answers; one that stalled is not waited on
        // for the RPC's minute per file.
        self.client.set_timeout(CLEANUP_TIMEOUT);
        let names = std::mem::take(&mut self.created);
        // What is at each name is removed only while it is the object this run made: a
        // directory swapped in under the run's name, or a file under a file's, stays.
        let held = self.dir_handle.take();
        let (said, forget) = self.remove_made(dir_id, held.as_deref(), &names);
        notes.extend(said);
        if let (true, Some((j, _))) = (forget, &self.journal) {
            j.remove_share(&self.shown());
        }
        self.dir_id = None;
        notes
    }
}

impl ShareDir {
    /// The run directory's name in the URL's directory.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The agent's own connection.
    pub(super) fn client(&mut self) -> &mut Client {
        &mut self.client
    }

    /// For a meta tree: a connection of its own, the run directory and the URL's directory
    /// held by their handles, the run directory only while it is the one this run made.
    pub fn meta_dirs(&mut self) -> Result<(Client, NfsDir, NfsDir), AgentError> {
        let shown = self.shown();
        let fail = |e: &dyn std::fmt::Display| AgentError::target(&shown, e.to_string());
        let mut client = Client::connect(&self.url, 1).map_err(|e| fail(&e))?;
        let parent = NfsDir {
            handle: client.dir_handle().map_err(|e| fail(&e))?,
            id: None,
            shown: self.url.to_string(),
        };
        let found = client
            .lookup_at(&parent.handle, &self.name)
            .map_err(|e| fail(&e))?;
        // The object made, by its number and its whole handle (the generation too).
        let held = self.dir_handle.as_deref().copied();
        if found.kind != stormark_nfs::Kind::Dir
            || found.id.is_none()
            || found.id != self.dir_id
            || Some(found.handle) != held
        {
            return Err(AgentError::target(
                &shown,
                "no longer the directory this run made (replaced by another user of the share?); nothing was made in it",
            ));
        }
        let run = NfsDir {
            handle: found.handle,
            id: found.id,
            shown: shown.clone(),
        };
        Ok((client, run, parent))
    }
}

impl LocalAgent {
    /// Plans every job of `workload` in a run directory to be made on the share `target`
    /// names: a mount to check the directory and its free space, each job's files planned as
    /// in a local directory.
    pub(super) fn plan_share(
        &mut self,
        workload: &Workload,
        target: &str,
        v: &mut Validated,
    ) -> Result<(), AgentError> {
        let url = Url::parse(target).map_err(|e| AgentError::option("TARGET", e.to_string()))?;
        stormark_nfs::available().map_err(|e| AgentError::option("TARGET", e))?;
        let shown = url.to_string();
        let mut client = Client::connect(&url, 1).map_err(|e| {
            AgentError::target(
                &shown,
                format!(
                    "{}; check the server and its exports (showmount -e SERVER lists them)",
                    e.to_string().trim_start_matches(&format!("{shown}: "))
                ),
            )
        })?;
        match client.stat("") {
            Ok(st) if st.dir => {}
            Ok(_) => {
                return Err(AgentError::target(
                    &shown,
                    "not a directory; give the directory the run directory is made in",
                ))
            }
            Err(e) => {
                return Err(AgentError::target(
                    &shown,
                    format!("{e}; give an existing directory of the export"),
                ))
            }
        }
        if self.opts.reuse {
            return Err(AgentError::option("--reuse", format!("{shown}: a kept run directory on a share is not reused yet; run without --reuse")));
        }
        let mut files = Vec::new();
        let mut index: BTreeMap<String, usize> = BTreeMap::new();
        self.stages.clear();
        for (s, stage) in workload.stages().iter().enumerate() {
            let mut runs = Vec::new();
            for (k, job) in stage.iter().enumerate() {
                let service = Service {
                    name: "NFS",
                    takes: "file I/O",
                    shown: &shown,
                };
                if job.meta.is_some() {
                    // Metadata load: a tree made in the run directory, each operation one
                    // RPC relative to a directory's handle (a file's bytes by its own
                    // handle), over each worker's connection.
                    check_job_here(job, &mut v.notes)?;
                    runs.push(JobRun::without_files(job, Backend::Meta));
                    continue;
                }
                service.check(job, &mut v.notes)?;
                if job.rw.trims() {
                    return Err(service.not_yet(job, "a trim"));
                }
                if job.fill_device {
                    return Err(service.not_yet(job, "--fill-device"));
                }
                let mut run = plan_job_files(
                    &mut files,
                    0,
                    &mut index,
                    (s, k),
                    job,
                    Backend::Nfs,
                    workload,
                )?;
                // Nothing caches between the worker and the server: every operation is an RPC.
                run.direct = true;
                runs.push(run);
            }
            self.stages.push(runs);
        }
        let needed: u64 = files.iter().map(|f| f.size).sum();
        let (size, avail) = client
            .space()
            .map_err(|e| AgentError::target(&shown, e.to_string()))?;
        if needed > avail {
            return Err(AgentError::target(
                &shown,
                format!(
                    "the working set needs {} but only {} is free; lower --size, --files or --jobs",
                    human(needed),
                    human(avail)
                ),
            ));
        }
        // Hosts of one run on one share: each its own run directory, named so that nobody
        // can plant one in its place beforehand (a PID is predictable).
        let name = format!(
            "stormark-{}-{}-{}",
            stamp(),
            &crate::auth::session_id()[..12],
            self.index
        );
        push_once(
            &mut v.notes,
            format!(
                "{shown}: export {} ({} free of {}), each worker its own NFS connection",
                client.export(),
                format_size(avail),
                format_size(size)
            ),
        );
        v.target = Some(stormark_stats::Target {
            path: shown.clone(),
            kind: "nfs-directory".into(),
            run_dir: Some(format!("{shown}/{name}")),
            kept: self.opts.keep,
            device: None,
            fs_type: Some("nfs".into()),
        });
        self.place = Some(Where::Share(ShareDir {
            url: Arc::new(url),
            client: Box::new(client),
            name,
            files,
            dir_id: None,
            dir_handle: None,
            ids: Vec::new(),
            created: Vec::new(),
            journal: self.journal.clone().map(|j| (j, self.opts.keep)),
        }));
        Ok(())
    }
}
