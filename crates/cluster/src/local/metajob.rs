//! Metadata jobs on this host: each job's tree, made inside the run directory before the
//! first stage (or, shared by every host, in a directory beside the run directories named
//! after the run), handed to the job's workers stage after stage, and removed at the end.

use std::sync::Arc;

use stormark_engine::{Dir, MetaTree, MetaWork};
use stormark_spec::{Job, StageLoad};

use super::LocalAgent;
use crate::agent::AgentError;

/// One meta job's tree on this host and where its tops are.
pub(super) struct MetaJobTree {
    /// The job's name.
    pub job: String,
    pub tree: Arc<MetaTree>,
    /// The directory holding the tree's tops (`meta-JOB` in the run directory, or the shared
    /// directory), and its name in `parent`.
    home: Arc<Dir>,
    parent: Arc<Dir>,
    name: String,
    /// Worker tops made in `home` (trees of their own).
    tops: Vec<String>,
}

impl MetaJobTree {
    /// The work of worker `w` under `load`.
    pub fn work(&self, w: usize, load: &StageLoad) -> MetaWork {
        MetaWork {
            tree: self.tree.clone(),
            worker: w,
            op: load.meta_op,
        }
    }
}

/// The name of a shared tree's directory in the target: the run's and the job's.
fn shared_name(run: &str, job: &Job) -> String {
    format!("stormark-shared-{run}-{}", job.name)
}

impl LocalAgent {
    /// Makes every meta job's tree (and its directories, when `mkdir` is not timed), after
    /// the run directory is made.
    pub(super) fn make_meta_trees(&mut self) -> Result<(), AgentError> {
        let jobs: Vec<Job> = self
            .stages
            .iter()
            .flatten()
            .filter(|r| r.job.meta.is_some())
            .map(|r| r.job.clone())
            .collect();
        if jobs.is_empty() {
            return Ok(());
        }
        let (run, parent) = match self.workspace() {
            Some(ws) => (ws.run_dir(), ws.parent_dir()),
            None => (None, None),
        };
        let (Some(run), Some(parent)) = (run, parent) else {
            return Err(AgentError::option(
                "kind = \"meta\"",
                "a directory to make the tree in (not a file, a device or --reuse)",
            ));
        };
        for job in jobs {
            let meta = job.meta.as_ref().expect("a meta job has its meta part");
            let io = |what: &str, dir: &Dir, name: &str, e: std::io::Error| {
                AgentError::io(what.to_string(), dir.shown(name), e)
            };
            let first = self.index as u32 * job.jobs;
            let total = self.hosts * job.jobs;
            let (home, home_parent, name, tops, top_names) = if meta.shared {
                let name = shared_name(&self.opts.run, &job);
                // Made by whichever host comes first; the others open it, never through a link.
                // Its name carries the run's random id, so nothing is there before the run;
                // a run of one host that finds it there refuses it.
                let home = match parent.create_dir(&name) {
                    Ok(d) => d,
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && self.hosts > 1 => {
                        parent
                            .open_dir(&name)
                            .map_err(|e| io("open", &parent, &name, e))?
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        return Err(AgentError::target(
                            parent.shown(&name),
                            "exists already, made by someone else before the run: nothing in it is used or removed; remove it, or run again",
                        ))
                    }
                    Err(e) => return Err(io("create", &parent, &name, e)),
                };
                let home = Arc::new(home);
                let tops = vec![home.clone(); job.jobs as usize];
                (home, parent.clone(), name, tops, Vec::new())
            } else {
                let name = format!("meta-{}", job.name);
                let home = Arc::new(
                    run.create_dir(&name)
                        .map_err(|e| io("create", &run, &name, e))?,
                );
                let mut tops = Vec::new();
                let mut names = Vec::new();
                for w in 0..job.jobs {
                    let top = format!("w{}", first + w);
                    tops.push(Arc::new(
                        home.create_dir(&top)
                            .map_err(|e| io("create", &home, &top, e))?,
                    ));
                    names.push(top);
                }
                (home, run.clone(), name, tops, names)
            };
            let tree = Arc::new(MetaTree::new(meta, tops, first, total));
            // Pushed before its directories are made, so that cleanup removes what a
            // failure left.
            self.meta.push(MetaJobTree {
                job: job.name.clone(),
                tree: tree.clone(),
                home,
                parent: home_parent,
                name,
                tops: top_names,
            });
            tree.make_dirs().map_err(|e| {
                AgentError::io(
                    format!("make the tree of job {} in", job.name),
                    run.path(),
                    e,
                )
            })?;
        }
        Ok(())
    }

    /// Removes every meta job's tree (unless kept). Returns notes for the results.
    pub(super) fn remove_meta_trees(&mut self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.opts.keep {
            return notes;
        }
        for t in self.meta.drain(..) {
            notes.extend(t.tree.cleanup());
            for top in &t.tops {
                if let Err(e) = t.home.remove_dir(top) {
                    if e.kind() != std::io::ErrorKind::NotFound {
                        notes.push(format!(
                            "could not remove {}: {e}",
                            t.home.shown(top).display()
                        ));
                    }
                }
            }
            match t.parent.remove_dir(&t.name) {
                Ok(()) => {}
                // A shared tree another host still fills: the last host removes it.
                Err(e)
                    if e.kind() == std::io::ErrorKind::NotFound
                        || (t.tree.job().shared && e.raw_os_error() == Some(libc::ENOTEMPTY)) => {}
                Err(e) => notes.push(format!(
                    "could not remove {}: {e}",
                    t.parent.shown(&t.name).display()
                )),
            }
        }
        notes
    }
}
