//! A meta tree a crashed agent's run left, removed at the agent's next start from its journal
//! line: one road for a local directory (beneath directory descriptors) and a share (over
//! NFS, by file handle), through the namespace the tree was made in.

use stormark_engine::{sweep_meta_tree, Dir, Local, MetaSweep, Namespace, NfsDir};
use stormark_nfs::{Client, Url};
use stormark_spec::MetaJob;

use super::madefile::FileId;
use super::metajob::{Anchor, TreeRecord};

const EARLIER: &str = "left by an earlier run that did not finish";

/// Removes a meta tree a crashed agent's run left, from its journal line: its directory opened
/// name by name beneath the one the user named (a local directory, or a share's directory
/// held by its handle), never through a link, and only while it is the directory the run made
/// (or opened: a shared tree); then the files the tree's naming gives this host's workers, the
/// directories once no other host's file is left, and the directory itself if empty. Returns
/// the note saying what was done or left.
pub(super) fn remove_left_tree(r: &TreeRecord) -> String {
    let shown = r.anchor.shown(&r.names);
    match &r.anchor {
        Anchor::Dir(path) => match Dir::open(path) {
            Ok(root) => remove_in(Local, root, r, &shown, |d| {
                d.metadata().ok().map(|m| FileId::of(&m))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => gone(r, &shown),
            Err(e) => format!("could not remove {shown}, {EARLIER}: {e}"),
        },
        Anchor::Share(url) => {
            let connected = Url::parse(url)
                .map_err(|e| e.to_string())
                .and_then(|u| Client::connect(&u, 1).map_err(|e| e.to_string()))
                .and_then(|mut c| {
                    let handle = c.dir_handle().map_err(|e| e.to_string())?;
                    Ok((c, handle))
                });
            match connected {
                Ok((mut client, handle)) => {
                    client.set_timeout(super::share::CLEANUP_TIMEOUT);
                    let root = NfsDir {
                        handle,
                        id: None,
                        shown: url.clone(),
                    };
                    remove_in(client, root, r, &shown, |d| {
                        d.id.map(|i| FileId {
                            dev: i.dev,
                            ino: i.ino,
                            born_ns: None,
                            handle: Some(d.handle),
                        })
                    })
                }
                Err(e) => format!("could not remove {shown}, {EARLIER}: {e}"),
            }
        }
    }
}

/// What is said of a tree not there.
fn gone(r: &TreeRecord, shown: &str) -> String {
    match r.id {
        Some(_) => format!("{shown}, {EARLIER}, is gone already"),
        None => format!(
            "{shown}, which an earlier run that did not finish was about to make, is not there"
        ),
    }
}

/// [`remove_left_tree`] in the namespace `ns`, from the directory the user named, held
/// (`root`); `id` says which object a directory held is.
fn remove_in<N: Namespace>(
    mut ns: N,
    root: N::Dir,
    r: &TreeRecord,
    shown: &str,
    id: fn(&N::Dir) -> Option<FileId>,
) -> String {
    let mut chain = vec![root];
    for name in &r.names {
        let last = chain.last().expect("the directory the user named");
        match ns.open_dir(last, name) {
            Ok(d) => chain.push(d),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return gone(r, shown),
            Err(e) => {
                return format!(
                    "left {shown}, {EARLIER}: it cannot be opened as the directory it made without following a link ({e}); nothing in it was removed"
                )
            }
        }
    }
    let Some(made) = r.id else {
        return format!(
            "left {shown}, made by an earlier run that did not finish before it recorded what it made: stormark removes only what it can tell is its own; remove it by hand if it is"
        );
    };
    let home = chain.pop().expect("a tree's directory has a name");
    let parent = chain.pop().expect("the directory it is in");
    if !id(&home).is_some_and(|now| now.is(&made)) {
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
        wear_out: false,
        leaf_only: false,
        fsync: false,
        verify_read: false,
        random_order: false,
        sync_phases: false,
    };
    let mut swept = MetaSweep::default();
    if r.shared {
        swept = sweep_meta_tree(&mut ns, &home, &job, r.workers.clone());
    } else {
        // A tree of its own per worker, `wN`, N its index over every host.
        for w in r.workers.clone() {
            let top = format!("w{w}");
            let Ok(dir) = ns.open_dir(&home, &top) else {
                continue;
            };
            let s = sweep_meta_tree(&mut ns, &dir, &job, w..w + 1);
            swept.removed += s.removed;
            swept.others += s.others;
            swept.left.extend(s.left);
            if let Err(e) = ns.remove_dir(&home, &top) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    swept
                        .left
                        .push(format!("could not remove {}: {e}", N::shown(&home, &top)));
                }
            }
        }
    }
    let files = swept.removed;
    if !swept.left.is_empty() {
        return format!(
            "removed {files} files of {shown}, {EARLIER}; {}",
            swept.left.join("; ")
        );
    }
    if swept.others > 0 {
        return format!(
            "removed this host's {files} files from the shared tree {shown}, {EARLIER}; {} files of other hosts are in it still: the last of them to clean up or restart removes it",
            swept.others
        );
    }
    let name = r.names.last().expect("a tree's directory has a name");
    match ns.remove_dir(&parent, name) {
        Ok(()) => format!("removed {shown} ({files} files), {EARLIER}"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            format!("removed {files} files of {shown}, {EARLIER}")
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOTEMPTY) => format!(
            "removed {files} files of {shown}, {EARLIER}; left it: it holds entries the run did not make"
        ),
        Err(e) => format!("removed {files} files of {shown}, {EARLIER}; could not remove it: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local::journal::Journal;
    use crate::local::metajob::{Anchor, TreeRecord};
    use stormark_spec::Tree;

    fn record(anchor: &std::path::Path, name: &str, id: Option<FileId>) -> TreeRecord {
        TreeRecord {
            shared: true,
            workers: 0..1,
            tree: Tree::Flat { dirs: 1 },
            files: 2,
            anchor: Anchor::Dir(anchor.to_path_buf()),
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
