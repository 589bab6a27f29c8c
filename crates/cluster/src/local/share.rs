//! An NFS share as the target (`nfs://SERVER/EXPORT/DIR`): measured from user space over the
//! workers' own connections, no kernel client, no mount. The run directory, its files and
//! their preparation are made over NFS as in a local directory (the same plan of files), and
//! exactly what the run made is removed at its end.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use stormark_engine::{Backend, FileTarget, Place};
use stormark_nfs::{Client, Url};
use stormark_spec::units::format_size;
use stormark_spec::Workload;

use super::planning::plan_job_files;
use super::service::Service;
use super::workspace::{stamp, PlannedFile};
use super::{human, push_once, LocalAgent, Where};
use crate::agent::{AgentError, Validated};

/// How long each removal at the end may wait for the server.
const CLEANUP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A run directory on a share: where, its files, and what this run made.
#[derive(Debug)]
pub(crate) struct ShareDir {
    pub url: Arc<Url>,
    /// The agent's own connection: makes and removes the run's files.
    client: Client,
    /// The run directory's name in the URL's directory.
    name: String,
    pub files: Vec<PlannedFile>,
    made_dir: bool,
    /// Names of the files this run created, in order.
    created: Vec<String>,
    /// An agent's journal, and whether the run directory is to be kept: a crash leaves it to
    /// the agent's next start.
    pub journal: Option<(super::journal::Journal, bool)>,
}

impl ShareDir {
    /// The worker's handle on file `i`: its path within the URL's directory.
    pub fn target(&self, i: usize, start: u64, len: u64) -> FileTarget {
        FileTarget {
            place: Place::Path(PathBuf::from(format!(
                "{}/{}",
                self.name, self.files[i].name
            ))),
            expect: None,
            start,
            len,
        }
    }

    /// The run directory as the user would name it.
    fn shown(&self) -> String {
        format!("{}/{}", self.url, self.name)
    }

    /// Makes the run directory and its files (each its length, sparse: what is read is
    /// written by the preparation).
    pub fn create(&mut self, stop: &std::sync::atomic::AtomicBool) -> Result<(), AgentError> {
        if !self.made_dir {
            if let Some((j, keep)) = &self.journal {
                let names: Vec<String> = self.files.iter().map(|f| f.name.clone()).collect();
                j.add_share(&self.shown(), &names, *keep);
            }
            self.client
                .mkdir(&self.name)
                .map_err(|e| AgentError::target(self.shown(), format!("cannot create it: {e}")))?;
            self.made_dir = true;
        }
        for i in 0..self.files.len() {
            if self.files[i].exists || self.files[i].size == 0 {
                continue;
            }
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                return Err(AgentError::Interrupted("creating files"));
            }
            let rel = format!("{}/{}", self.name, self.files[i].name);
            self.client
                .create(&rel, self.files[i].size)
                .map_err(|e| AgentError::target(self.shown(), e.to_string()))?;
            self.created.push(self.files[i].name.clone());
            self.files[i].exists = true;
        }
        Ok(())
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
        if !self.made_dir {
            return notes;
        }
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
            self.client = fresh;
        }
        // Removals are quick on a server that answers; one that stalled is not waited on
        // for the RPC's minute per file.
        self.client.set_timeout(CLEANUP_TIMEOUT);
        let names = std::mem::take(&mut self.created);
        let mut left = 0;
        for (i, name) in names.iter().enumerate() {
            match self.client.unlink(&format!("{}/{name}", self.name)) {
                Ok(()) => {}
                Err(e) if e.is_unanswered() => {
                    left = names.len() - i;
                    notes.push(format!(
                        "could not remove {}: the server did not answer ({e}); {left} file(s) of the run and its directory are left: remove {} when the server is back",
                        self.shown(),
                        self.shown()
                    ));
                    break;
                }
                Err(e) => notes.push(format!("could not remove {}/{name}: {e}", self.shown())),
            }
        }
        let removed = left == 0
            && match self.client.rmdir(&self.name) {
                Ok(()) => true,
                Err(e) => {
                    notes.push(format!(
                        "could not remove {}: {e} (files not created by stormark are left in place)",
                        self.shown()
                    ));
                    false
                }
            };
        // The journal forgets the directory only once it is gone.
        if let (true, Some((j, _))) = (removed, &self.journal) {
            j.remove_share(&self.shown());
        }
        self.made_dir = false;
        notes
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
        for stage in workload.stages() {
            let mut runs = Vec::new();
            for (k, job) in stage.iter().enumerate() {
                let service = Service {
                    name: "NFS",
                    takes: "file I/O",
                    shown: &shown,
                };
                service.check(job, &mut v.notes)?;
                if job.rw.trims() {
                    return Err(service.not_yet(job, "a trim"));
                }
                if job.fill_device {
                    return Err(service.not_yet(job, "--fill-device"));
                }
                let mut run =
                    plan_job_files(&mut files, 0, &mut index, k, job, Backend::Nfs, workload)?;
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
        // Hosts of one run on one share: each its own run directory.
        let name = format!("stormark-{}-{}-{}", stamp(), std::process::id(), self.index);
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
            client,
            name,
            files,
            made_dir: false,
            created: Vec::new(),
            journal: self.journal.clone().map(|j| (j, self.opts.keep)),
        }));
        Ok(())
    }
}
