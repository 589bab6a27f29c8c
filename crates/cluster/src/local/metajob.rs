//! Metadata jobs on this host: each job's tree, made inside the run directory before the
//! first stage (or, shared by every host, in a directory beside the run directories named
//! after the run), handed to the job's workers stage after stage, and removed at the end.

use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use stormark_engine::{sweep_meta_tree, Dir, MetaSweep, MetaTree, MetaWork};
use stormark_spec::{Job, MetaJob, StageLoad, Tree};

use super::madefile::FileId;
use super::LocalAgent;
use crate::agent::AgentError;

/// What an agent's journal holds of a meta tree, so that a restart after a crash removes it:
/// where it is (a directory the user named, then single names beneath it), the workers whose
/// files it holds (this host's, over every host), the tree's shape and, once made or opened,
/// the identity of its directory.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct TreeRecord {
    /// One tree shared by every host (`stormark-shared-RUN-JOB`), not `RUN/meta-JOB/wN`.
    pub shared: bool,
    pub workers: Range<u32>,
    pub tree: Tree,
    pub files: u32,
    pub anchor: PathBuf,
    pub names: Vec<String>,
    pub id: Option<FileId>,
}

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
    /// Workers of the job over every host.
    total: u32,
    /// Its line in the agent's journal (none kept on purpose or without a journal).
    record: Option<TreeRecord>,
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
            // Journaled before it is made, with its identity once made: a crash from here on
            // leaves it to the agent's next start.
            let journal = self.journal.clone().filter(|_| !self.opts.keep);
            let mut record = TreeRecord {
                shared: meta.shared,
                workers: first..first + job.jobs,
                tree: meta.tree,
                files: meta.files,
                anchor: parent.path().to_path_buf(),
                names: if meta.shared {
                    vec![shared_name(&self.opts.run, &job)]
                } else {
                    let run_name = run
                        .path()
                        .file_name()
                        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
                    vec![run_name, format!("meta-{}", job.name)]
                },
                id: None,
            };
            if let Some(j) = &journal {
                j.add_meta(&record);
            }
            let name = match meta.shared {
                true => shared_name(&self.opts.run, &job),
                false => format!("meta-{}", job.name),
            };
            let made = if meta.shared {
                // Made by whichever host comes first; the others open it, never through a
                // link. Its name carries the run's random id, so nothing is there before the
                // run; a run of one host that finds it there refuses it.
                match parent.create_dir(&name) {
                    Ok(d) => Ok(d),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && self.hosts > 1 => {
                        parent
                            .open_dir(&name)
                            .map_err(|e| io("open", &parent, &name, e))
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(AgentError::target(
                        parent.shown(&name),
                        "exists already, made by someone else before the run: nothing in it is used or removed; remove it, or run again",
                    )),
                    Err(e) => Err(io("create", &parent, &name, e)),
                }
            } else {
                run.create_dir(&name)
                    .map_err(|e| io("create", &run, &name, e))
            };
            let forget = |record: &TreeRecord| {
                if let Some(j) = &journal {
                    j.remove_meta(record);
                }
            };
            let home = match made {
                Ok(d) => Arc::new(d),
                Err(e) => {
                    forget(&record);
                    return Err(e);
                }
            };
            if let (Some(j), Ok(m)) = (&journal, home.metadata()) {
                record.id = Some(FileId::of(&m));
                j.add_meta(&record);
            }
            let (home_parent, tops, top_names) = if meta.shared {
                (
                    parent.clone(),
                    vec![home.clone(); job.jobs as usize],
                    Vec::new(),
                )
            } else {
                let mut tops = Vec::new();
                let mut names: Vec<String> = Vec::new();
                for w in 0..job.jobs {
                    let top = format!("w{}", first + w);
                    match home.create_dir(&top) {
                        Ok(d) => tops.push(Arc::new(d)),
                        Err(e) => {
                            let e = io("create", &home, &top, e);
                            for n in &names {
                                let _ = home.remove_dir(n);
                            }
                            if run.remove_dir(&name).is_ok() {
                                forget(&record);
                            }
                            return Err(e);
                        }
                    }
                    names.push(top);
                }
                (run.clone(), tops, names)
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
                total,
                record: journal.map(|_| record),
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
            let mut these = t.tree.cleanup();
            for top in &t.tops {
                if let Err(e) = t.home.remove_dir(top) {
                    if e.kind() != std::io::ErrorKind::NotFound {
                        these.push(format!(
                            "could not remove {}: {e}",
                            t.home.shown(top).display()
                        ));
                    }
                }
            }
            let not_empty = |e: &std::io::Error| e.raw_os_error() == Some(libc::ENOTEMPTY);
            match t.parent.remove_dir(&t.name) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                // A shared tree others still fill: the hosts still removing their own files,
                // or a host that died (its cleanup never runs). Every worker's files by the
                // tree's names, then its directories: whoever is out last removes the tree.
                Err(e) if t.tree.job().shared && not_empty(&e) => {
                    let swept = sweep_meta_tree(&t.home, t.tree.job(), 0..t.total);
                    these.extend(swept.left);
                    match t.parent.remove_dir(&t.name) {
                        Err(e) if not_empty(&e) && swept.others == 0 => these.push(format!(
                            "left {}: it holds entries the run did not make",
                            t.parent.shown(&t.name).display()
                        )),
                        _ => {}
                    }
                }
                Err(e) => these.push(format!(
                    "could not remove {}: {e}",
                    t.parent.shown(&t.name).display()
                )),
            }
            // The journal forgets the tree once this host's part of it is gone.
            if let (Some(j), Some(r), true) = (&self.journal, &t.record, these.is_empty()) {
                j.remove_meta(r);
            }
            notes.extend(these);
        }
        notes
    }
}

/// Removes a meta tree a crashed agent's run left, from its journal line: its directory opened
/// name by name beneath the one the user named, never through a link, and only while it is
/// the directory the run made (or opened: a shared tree); then the files the tree's naming
/// gives this host's workers, the directories once no other host's file is left, and the
/// directory itself if empty. Returns the note saying what was done or left.
pub(super) fn remove_left_tree(r: &TreeRecord) -> String {
    let mut shown = r.anchor.clone();
    shown.extend(&r.names);
    let shown = shown.display();
    let earlier = "left by an earlier run that did not finish";
    let gone = || match r.id {
        Some(_) => format!("{shown}, {earlier}, is gone already"),
        None => format!(
            "{shown}, which an earlier run that did not finish was about to make, is not there"
        ),
    };
    let mut chain = match Dir::open(&r.anchor) {
        Ok(d) => vec![d],
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return gone(),
        Err(e) => return format!("could not remove {shown}, {earlier}: {e}"),
    };
    for name in &r.names {
        let last = chain.last().expect("the directory the user named");
        match last.open_dir(name) {
            Ok(d) => chain.push(d),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return gone(),
            Err(e) => {
                return format!(
                    "left {shown}, {earlier}: it cannot be opened as the directory it made without following a link ({e}); nothing in it was removed"
                )
            }
        }
    }
    let Some(id) = r.id else {
        return format!(
            "left {shown}, made by an earlier run that did not finish before it recorded what it made: stormark removes only what it can tell is its own; remove it by hand if it is"
        );
    };
    let home = chain.pop().expect("a tree's directory has a name");
    let parent = chain.pop().expect("the directory it is in");
    if home.metadata().map(|m| FileId::of(&m)).ok() != Some(id) {
        return format!(
            "left {shown}: no longer the directory an earlier run made there (replaced by someone else); nothing in it was removed"
        );
    }
    let job = MetaJob {
        tree: r.tree,
        files: r.files,
        file_size: 0,
        ops: Vec::new(),
        shared: r.shared,
    };
    let mut swept = MetaSweep::default();
    if r.shared {
        swept = sweep_meta_tree(&home, &job, r.workers.clone());
    } else {
        // A tree of its own per worker, `wN`, N its index over every host.
        for w in r.workers.clone() {
            let top = format!("w{w}");
            let Ok(dir) = home.open_dir(&top) else {
                continue;
            };
            let s = sweep_meta_tree(&dir, &job, w..w + 1);
            swept.removed += s.removed;
            swept.others += s.others;
            swept.left.extend(s.left);
            if let Err(e) = home.remove_dir(&top) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    swept.left.push(format!(
                        "could not remove {}: {e}",
                        home.shown(&top).display()
                    ));
                }
            }
        }
    }
    let files = swept.removed;
    if !swept.left.is_empty() {
        return format!(
            "removed {files} files of {shown}, {earlier}; {}",
            swept.left.join("; ")
        );
    }
    if swept.others > 0 {
        return format!(
            "removed this host's {files} files from the shared tree {shown}, {earlier}; {} files of other hosts are in it still: the last of them to clean up or restart removes it",
            swept.others
        );
    }
    let name = r.names.last().expect("a tree's directory has a name");
    match parent.remove_dir(name) {
        Ok(()) => format!("removed {shown} ({files} files), {earlier}"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            format!("removed {files} files of {shown}, {earlier}")
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOTEMPTY) => format!(
            "removed {files} files of {shown}, {earlier}; left it: it holds entries the run did not make"
        ),
        Err(e) => format!("removed {files} files of {shown}, {earlier}; could not remove it: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local::journal::Journal;

    fn record(anchor: &std::path::Path, name: &str, id: Option<FileId>) -> TreeRecord {
        TreeRecord {
            shared: true,
            workers: 0..1,
            tree: Tree::Flat { dirs: 1 },
            files: 2,
            anchor: anchor.to_path_buf(),
            names: vec![name.to_string()],
            id,
        }
    }

    fn id_of(p: &std::path::Path) -> Option<FileId> {
        Some(FileId::of(&std::fs::metadata(p).unwrap()))
    }

    /// A dead agent's journal recovered: only this host's names, only in the directory the run
    /// made, never through a link.
    #[test]
    fn a_left_tree_is_removed_only_where_it_is_still_the_runs() {
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path().join("target");
        std::fs::create_dir(&t).unwrap();
        let (j, _) = Journal::open(&tmp.path().join("state")).unwrap();
        // Its own files go; another host's and a planted one stay, and so does the tree.
        let ours = t.join("stormark-shared-a-meta");
        std::fs::create_dir_all(ours.join("d0")).unwrap();
        for f in ["f0.0", "r0.1", "f1.0", "theirs"] {
            std::fs::write(ours.join("d0").join(f), b"x").unwrap();
        }
        j.add_meta(&record(&t, "stormark-shared-a-meta", id_of(&ours)));
        // Swapped for a link to a directory of the same names: nothing there is touched.
        let moved = t.join("moved");
        std::fs::create_dir_all(moved.join("d0")).unwrap();
        std::fs::write(moved.join("d0/f0.0"), b"x").unwrap();
        let linked = t.join("stormark-shared-b-meta");
        j.add_meta(&record(&t, "stormark-shared-b-meta", id_of(&moved)));
        std::os::unix::fs::symlink(&moved, &linked).unwrap();
        // Replaced by another directory under its name: left whole.
        let replaced = t.join("stormark-shared-c-meta");
        std::fs::create_dir(&replaced).unwrap();
        let old = id_of(&replaced);
        std::fs::remove_dir(&replaced).unwrap();
        std::fs::create_dir(t.join("spacer")).unwrap();
        std::fs::create_dir_all(replaced.join("d0")).unwrap();
        std::fs::write(replaced.join("d0/f0.0"), b"x").unwrap();
        j.add_meta(&record(&t, "stormark-shared-c-meta", old));
        // Killed before its identity was recorded: named, not removed.
        let early = t.join("stormark-shared-d-meta");
        std::fs::create_dir(&early).unwrap();
        j.add_meta(&record(&t, "stormark-shared-d-meta", None));
        // Recorded, then killed before it was made: nothing to say but that.
        j.add_meta(&record(&t, "stormark-shared-f-meta", None));
        // Gone already (removed by the last host out).
        j.add_meta(&record(&t, "stormark-shared-e-meta", id_of(&t)));

        std::fs::copy(j.path(), j.path().with_file_name("runs-0.journal")).unwrap();
        let (_again, notes) = Journal::open(&tmp.path().join("state")).unwrap();
        let said = notes.join("\n");
        let mut left: Vec<String> = std::fs::read_dir(ours.join("d0"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["f1.0", "theirs"], "{said}");
        assert!(said.contains("removed this host's 2 files"), "{said}");
        assert!(said.contains("1 files of other hosts"), "{said}");
        assert!(
            moved.join("d0/f0.0").exists() && linked.is_symlink(),
            "{said}"
        );
        assert!(said.contains("without following a link"), "{said}");
        assert!(replaced.join("d0/f0.0").exists(), "{said}");
        assert!(said.contains("no longer the directory"), "{said}");
        assert!(
            early.exists() && said.contains("before it recorded"),
            "{said}"
        );
        assert!(said.contains("stormark-shared-e-meta, left by an earlier run that did not finish, is gone already"), "{said}");
        assert!(said.contains("stormark-shared-f-meta, which an earlier run that did not finish was about to make, is not there"), "{said}");
        assert_eq!(notes.len(), 6, "{said}");
    }
}
