//! Metadata jobs on this host: each job's tree, made inside the run directory before the
//! first stage (or, shared by every host, in a directory beside the run directories named
//! after the run), handed to the job's workers stage after stage, and removed at the end.

use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use stormark_engine::{sweep_meta_tree, AnyMetaTree, Local, MetaTree, MetaWork, Namespace};
use stormark_nfs::Client;
use stormark_spec::{Job, StageLoad, Tree};

use super::madefile::FileId;
use super::{LocalAgent, Where};
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
    pub anchor: Anchor,
    pub names: Vec<String>,
    pub id: Option<FileId>,
}

/// Where a journaled tree's names begin: a directory the user named on this host, or the
/// directory of a share's URL (its names then looked up over NFS by handle).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Anchor {
    Dir(PathBuf),
    Share(String),
}

impl Anchor {
    /// `names` beneath it, as the user would name them.
    pub fn shown(&self, names: &[String]) -> String {
        match self {
            Anchor::Dir(d) => {
                let mut p = d.clone();
                p.extend(names);
                p.display().to_string()
            }
            Anchor::Share(url) => std::iter::once(url.as_str())
                .chain(names.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join("/"),
        }
    }
}

/// A tree in one namespace: the agent's own way into it, the tree, the directory holding the
/// tree's tops (`meta-JOB` in the run directory, or the shared directory) and the directory
/// that one is in.
struct Placed<N: Namespace> {
    ns: N,
    tree: Arc<MetaTree<N>>,
    home: Arc<N::Dir>,
    parent: Arc<N::Dir>,
}

/// Where a tree is made: a local directory, or a share's run directory over NFS.
enum Placement {
    Local(Placed<Local>),
    Nfs(Placed<Client>),
}

/// One meta job's tree on this host and where its tops are.
pub(super) struct MetaJobTree {
    /// The job's name.
    pub job: String,
    on: Placement,
    /// The name of its directory (`home`) in `parent`.
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
            tree: match &self.on {
                Placement::Local(p) => AnyMetaTree::Local(p.tree.clone()),
                Placement::Nfs(p) => AnyMetaTree::Nfs(p.tree.clone()),
            },
            worker: w,
            op: load.meta_op,
            top_up: load.meta_items,
        }
    }
}

/// The name of a shared tree's directory in the target: the run's and the job's.
fn shared_name(run: &str, job: &Job) -> String {
    format!("stormark-shared-{run}-{}", job.name)
}

/// Where one tree goes: the agent's way into the namespace, the run directory and the
/// directory it is in, and a way to connect each worker.
struct Site<N: Namespace> {
    ns: N,
    run: Arc<N::Dir>,
    parent: Arc<N::Dir>,
    /// The run directory's name in `parent`.
    run_name: String,
    /// The directory the user named, for the journal.
    anchor: Anchor,
    /// A directory's identity, for the journal.
    id: fn(&N::Dir) -> Option<FileId>,
    connect: Box<dyn FnMut() -> std::io::Result<N>>,
    wrap: fn(Placed<N>) -> Placement,
}

fn io_error<N: Namespace>(what: &str, dir: &N::Dir, name: &str, e: std::io::Error) -> AgentError {
    AgentError::io(what.to_string(), PathBuf::from(N::shown(dir, name)), e)
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
        for job in jobs {
            if let Some(Where::Share(sd)) = &mut self.place {
                if job.meta.as_ref().is_some_and(|m| m.fsync) {
                    return Err(AgentError::option(
                        "--fsync",
                        "not on an NFS share yet (its writes are not committed by handle); leave it out, or run on a mounted directory",
                    ));
                }
                if job.meta.as_ref().is_some_and(|m| m.sync_phases) {
                    return Err(AgentError::option(
                        "--sync-phases",
                        "not on an NFS share: its calls go to the server directly, with no client cache for sync(2) to flush",
                    ));
                }
                let (ns, run, parent) = sd.meta_dirs()?;
                let url = sd.url.clone();
                let site = Site {
                    ns,
                    run: Arc::new(run),
                    parent: Arc::new(parent),
                    run_name: sd.name().to_string(),
                    anchor: Anchor::Share(url.to_string()),
                    id: |d| {
                        d.id.map(|i| FileId {
                            dev: i.dev,
                            ino: i.ino,
                            born_ns: None,
                            handle: Some(d.handle),
                        })
                    },
                    connect: Box::new(move || {
                        Client::connect(&url, 1).map_err(std::io::Error::other)
                    }),
                    wrap: Placement::Nfs,
                };
                self.make_tree(site, &job)?;
                continue;
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
            let site = Site {
                ns: Local,
                run_name: run
                    .path()
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
                anchor: Anchor::Dir(parent.path().to_path_buf()),
                id: |d| d.metadata().ok().map(|m| FileId::of(&m)),
                run,
                parent,
                connect: Box::new(|| Ok(Local)),
                wrap: Placement::Local,
            };
            self.make_tree(site, &job)?;
        }
        Ok(())
    }

    /// Makes the tree of `job` at `site`.
    fn make_tree<N: Namespace>(&mut self, site: Site<N>, job: &Job) -> Result<(), AgentError> {
        let Site {
            mut ns,
            run,
            parent,
            run_name,
            anchor,
            id,
            mut connect,
            wrap,
        } = site;
        let meta = job.meta.as_ref().expect("a meta job has its meta part");
        let first = self.index as u32 * job.jobs;
        let total = self.hosts * job.jobs;
        // Journaled before it is made, with its identity once made: a crash from here on
        // leaves it to the agent's next start (over NFS too: by the share's URL).
        let journal = self.journal.clone().filter(|_| !self.opts.keep);
        let name = match meta.shared {
            true => shared_name(&self.opts.run, job),
            false => format!("meta-{}", job.name),
        };
        let mut record = TreeRecord {
            shared: meta.shared,
            workers: first..first + job.jobs,
            tree: meta.tree,
            files: meta.files,
            anchor,
            names: if meta.shared {
                vec![name.clone()]
            } else {
                vec![run_name, name.clone()]
            },
            id: None,
        };
        if let Some(j) = &journal {
            j.add_meta(&record);
        }
        let made = if meta.shared {
            // Made by whichever host comes first; the others open it, never through a
            // link. Its name carries the run's random id, so nothing is there before the
            // run; a run of one host that finds it there refuses it.
            match ns.create_dir(&parent, &name) {
                Ok(d) => Ok(d),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && self.hosts > 1 => ns
                    .open_dir(&parent, &name)
                    .map_err(|e| io_error::<N>("open", &parent, &name, e)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(AgentError::target(
                    N::shown(&parent, &name),
                    "exists already, made by someone else before the run: nothing in it is used or removed; remove it, or run again",
                )),
                Err(e) => Err(io_error::<N>("create", &parent, &name, e)),
            }
        } else {
            ns.create_dir(&run, &name)
                .map_err(|e| io_error::<N>("create", &run, &name, e))
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
        if let (Some(j), Some(made)) = (&journal, id(&home)) {
            record.id = Some(made);
            j.add_meta(&record);
        }
        let mut conns = Vec::new();
        for _ in 0..job.jobs {
            conns
                .push(connect().map_err(|e| AgentError::io("connect to", N::shown(&home, ""), e))?);
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
                match ns.create_dir(&home, &top) {
                    Ok(d) => tops.push(Arc::new(d)),
                    Err(e) => {
                        let e = io_error::<N>("create", &home, &top, e);
                        for n in &names {
                            let _ = ns.remove_dir(&home, n);
                        }
                        if ns.remove_dir(&run, &name).is_ok() {
                            forget(&record);
                        }
                        return Err(e);
                    }
                }
                names.push(top);
            }
            (run.clone(), tops, names)
        };
        let tops = tops.into_iter().zip(conns).collect();
        let tree = Arc::new(MetaTree::new(meta, tops, first, total));
        // Pushed before its directories are made, so that cleanup removes what a
        // failure left.
        self.meta.push(MetaJobTree {
            job: job.name.clone(),
            on: wrap(Placed {
                ns,
                tree: tree.clone(),
                home,
                parent: home_parent,
            }),
            name,
            tops: top_names,
            total,
            record: journal.map(|_| record),
        });
        tree.make_dirs().map_err(|e| {
            AgentError::io(
                format!("make the tree of job {} in", job.name),
                N::shown(&run, ""),
                e,
            )
        })
    }

    /// Removes every meta job's tree (unless kept). Returns notes for the results.
    pub(super) fn remove_meta_trees(&mut self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.opts.keep {
            return notes;
        }
        for mut t in self.meta.drain(..) {
            let these = match &mut t.on {
                Placement::Local(p) => remove_tree(p, &t.name, &t.tops, t.total),
                Placement::Nfs(p) => remove_tree(p, &t.name, &t.tops, t.total),
            };
            // The journal forgets the tree once this host's part of it is gone.
            if let (Some(j), Some(r), true) = (&self.journal, &t.record, these.is_empty()) {
                j.remove_meta(r);
            }
            notes.extend(these);
        }
        notes
    }
}

/// Removes this host's part of a tree: its workers' files and directories, their tops, and
/// the tree's directory once empty.
fn remove_tree<N: Namespace>(
    p: &mut Placed<N>,
    name: &str,
    tops: &[String],
    total: u32,
) -> Vec<String> {
    let mut these = p.tree.cleanup();
    let ns = &mut p.ns;
    for top in tops {
        if let Err(e) = ns.remove_dir(&p.home, top) {
            if e.kind() != std::io::ErrorKind::NotFound {
                these.push(format!("could not remove {}: {e}", N::shown(&p.home, top)));
            }
        }
    }
    let not_empty = |e: &std::io::Error| e.raw_os_error() == Some(libc::ENOTEMPTY);
    match ns.remove_dir(&p.parent, name) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        // A shared tree others still fill: the hosts still removing their own files,
        // or a host that died (its cleanup never runs). Every worker's files by the
        // tree's names, then its directories: whoever is out last removes the tree.
        Err(e) if p.tree.job().shared && not_empty(&e) => {
            let swept = sweep_meta_tree(ns, &*p.home, p.tree.job(), 0..total);
            these.extend(swept.left);
            match ns.remove_dir(&p.parent, name) {
                Err(e) if not_empty(&e) && swept.others == 0 => these.push(format!(
                    "left {}: it holds entries the run did not make",
                    N::shown(&p.parent, name)
                )),
                _ => {}
            }
        }
        Err(e) => these.push(format!(
            "could not remove {}: {e}",
            N::shown(&p.parent, name)
        )),
    }
    these
}
