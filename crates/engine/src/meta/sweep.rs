//! A meta tree's entries removed by their names alone, when what each worker made is not
//! known: an agent restarted after a crash (from its journal), and the last host out of a
//! shared tree whose other hosts died. Only the names the tree makes go (its directories `dN`,
//! and the files `fG.N` and `rG.N` of the workers asked, regular files only), each removed
//! beneath its parent's descriptor, never through a link; anything else stays, and so does
//! every directory that holds it.

use std::ops::Range;

use stormark_spec::MetaJob;

use super::namespace::{EntryKind, Namespace};
use super::tree::{dir_name, file_owner};

/// What a sweep removed and what it left.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct MetaSweep {
    /// Files removed.
    pub removed: u64,
    /// Files of other workers (another host's, in a shared tree) found and left.
    pub others: u64,
    /// Directories of the tree removed.
    pub dirs: u64,
    /// What could not be removed, said (a directory holding entries the run did not make).
    pub left: Vec<String>,
}

/// Removes the files of workers `workers` (their indices over every host) in the tree of
/// `job` beneath `top` (the directory holding its top-level `dN`), then, unless another
/// worker's file is still there, the tree's directories, deepest first, each only if empty.
/// `top` itself stays: its caller removes it.
pub fn sweep_meta_tree<N: Namespace>(
    ns: &mut N,
    top: &N::Dir,
    job: &MetaJob,
    workers: Range<u32>,
) -> MetaSweep {
    let parents = job.tree.parents();
    let mut name = String::new();
    let mut dirs: Vec<Option<N::Dir>> = Vec::with_capacity(parents.len());
    for (d, p) in parents.iter().enumerate() {
        let parent = match p {
            Some(p) => dirs[*p as usize].as_ref(),
            None => Some(top),
        };
        dirs.push(parent.and_then(|at| ns.open_dir(at, dir_name(&mut name, d)).ok()));
    }
    let mut out = MetaSweep::default();
    for dir in dirs.iter().flatten() {
        let names = match ns.names(dir) {
            Ok(n) => n,
            Err(e) => {
                out.left.push(format!(
                    "could not read {}: {e}",
                    N::shown(dir, "").trim_end_matches('/')
                ));
                continue;
            }
        };
        for n in names {
            let Some(owner) = file_owner(n.as_bytes(), job.files) else {
                continue;
            };
            if !workers.contains(&owner) {
                out.others += 1;
                continue;
            }
            // A regular file, as the tree makes them: anything else under its name stays.
            match ns.stat(dir, &n) {
                Ok(EntryKind::File) => {}
                _ => continue,
            }
            match ns.remove_file(dir, &n) {
                Ok(()) => out.removed += 1,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => out
                    .left
                    .push(format!("could not remove {}: {e}", N::shown(dir, &n))),
            }
        }
    }
    if out.others > 0 {
        // Another host's files: its own cleanup (or recovery), the last out, removes the tree.
        return out;
    }
    for d in (0..parents.len()).rev() {
        dirs[d] = None;
        let parent = match parents[d] {
            Some(p) => dirs[p as usize].as_ref(),
            None => Some(top),
        };
        let Some(at) = parent else { continue };
        let n = dir_name(&mut name, d);
        match ns.remove_dir(at, n) {
            Ok(()) => out.dirs += 1,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOTEMPTY) => out.left.push(format!(
                "left {}: it holds entries the run did not make",
                N::shown(at, n)
            )),
            Err(e) => out
                .left
                .push(format!("could not remove {}: {e}", N::shown(at, n))),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::Dir;
    use crate::meta::namespace::Local;
    use crate::meta::tree::MetaTree;
    use std::sync::Arc;
    use stormark_spec::{MetaOp, Tree};

    #[test]
    fn only_the_trees_names_of_the_workers_asked_are_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let top = Arc::new(Dir::open(tmp.path()).unwrap());
        let job = MetaJob {
            tree: Tree::Deep {
                depth: 1,
                branch: 2,
            },
            files: 5,
            file_size: 0,
            ops: vec![MetaOp::Create],
            shared: true,
            wear_out: false,
            leaf_only: false,
            fsync: false,
            verify_read: false,
            random_order: false,
            sync_phases: false,
        };
        // Two hosts of two workers each in one tree; this one holds workers 2 and 3.
        let other = MetaTree::new(&job, vec![(top.clone(), Local); 2], 0, 4);
        let mine = MetaTree::new(&job, vec![(top.clone(), Local); 2], 2, 4);
        for t in [&other, &mine] {
            t.make_dirs().unwrap();
        }
        for w in 0..2 {
            other.ready(w, MetaOp::Stat);
            mine.ready(w, MetaOp::Stat);
        }
        // Planted: names the tree does not make (an item past --files, a leading zero, a
        // directory), and a link under one of its own names.
        let d1 = tmp.path().join("d0/d1");
        for planted in ["f2.5", "f02.1", "g2.1", "theirs"] {
            std::fs::write(d1.join(planted), b"x").unwrap();
        }
        std::fs::remove_file(d1.join("f3.4")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", d1.join("f3.4")).unwrap();
        std::fs::create_dir(tmp.path().join("d0/f2.0.d")).unwrap();

        let s = sweep_meta_tree(&mut Local, &*top, &job, 2..4);
        // 3 directories x 2 workers x 5 files, less the one that is a link now.
        assert_eq!((s.removed, s.others, s.dirs), (29, 30, 0), "{s:?}");
        assert!(d1.join("f3.4").is_symlink());
        assert!(d1.join("f0.0").exists() && !d1.join("f2.0").exists());

        // The last host out: the other workers' files, then every directory it can.
        std::fs::remove_file(d1.join("f3.4")).unwrap();
        let s = sweep_meta_tree(&mut Local, &*top, &job, 0..4);
        assert_eq!((s.removed, s.others, s.dirs), (30, 0, 1), "{s:?}");
        assert_eq!(s.left.len(), 2, "{s:?}");
        let mut left: Vec<String> = walk(tmp.path());
        left.sort();
        assert_eq!(
            left,
            [
                "d0",
                "d0/d1",
                "d0/d1/f02.1",
                "d0/d1/f2.5",
                "d0/d1/g2.1",
                "d0/d1/theirs",
                "d0/f2.0.d"
            ]
        );
    }

    fn walk(dir: &std::path::Path) -> Vec<String> {
        let mut out = Vec::new();
        let mut todo = vec![dir.to_path_buf()];
        while let Some(d) = todo.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                out.push(p.strip_prefix(dir).unwrap().to_string_lossy().into_owned());
                if p.is_dir() && !p.is_symlink() {
                    todo.push(p);
                }
            }
        }
        out
    }
}
