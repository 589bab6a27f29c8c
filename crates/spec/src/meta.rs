//! The metadata part of a job (`kind = "meta"`): mdtest's tree and operations. Each worker
//! has a tree of directories (flat: `dirs` side by side; or mdtest's `-z`/`-b` tree of
//! `depth` levels below a root, `branch` children each) and `files` files in every directory
//! of it; the operations run one after another, each over every item.

/// A metadata operation, in the order a run makes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MetaOp {
    /// Make every directory of the tree (mdtest's tree and directory creation).
    Mkdir,
    /// Read the attributes of every directory (mdtest's directory stat).
    Dirstat,
    /// Create every file (written with `file_size` bytes unless `write` is asked too).
    Create,
    /// Open every file for writing and write `file_size` bytes.
    Write,
    /// Read the attributes of every file.
    Stat,
    /// Open and close every file.
    Open,
    /// Read every file whole.
    Read,
    /// Rename every file within its directory.
    Rename,
    /// Remove every file.
    Delete,
    /// Remove every directory, deepest first (mdtest's directory and tree removal).
    Rmdir,
}

/// The accepted form of a list of operations.
pub const META_OPS_FORM: &str =
    "a list of mkdir, dirstat, create, write, stat, open, read, rename, delete, rmdir, such as create,stat,delete";

impl MetaOp {
    /// Every operation, in the order a run makes them.
    pub const ALL: [MetaOp; 10] = [
        MetaOp::Mkdir,
        MetaOp::Dirstat,
        MetaOp::Create,
        MetaOp::Write,
        MetaOp::Stat,
        MetaOp::Open,
        MetaOp::Read,
        MetaOp::Rename,
        MetaOp::Delete,
        MetaOp::Rmdir,
    ];

    /// The name as typed and in results.
    pub fn name(self) -> &'static str {
        match self {
            MetaOp::Mkdir => "mkdir",
            MetaOp::Dirstat => "dirstat",
            MetaOp::Create => "create",
            MetaOp::Write => "write",
            MetaOp::Stat => "stat",
            MetaOp::Open => "open",
            MetaOp::Read => "read",
            MetaOp::Rename => "rename",
            MetaOp::Delete => "delete",
            MetaOp::Rmdir => "rmdir",
        }
    }

    /// The operation named `name`.
    pub fn parse(name: &str) -> Option<MetaOp> {
        let name = name.trim().to_ascii_lowercase();
        MetaOp::ALL.into_iter().find(|o| o.name() == name)
    }

    /// Whether it works on directories (else on files).
    pub fn on_dirs(self) -> bool {
        matches!(self, MetaOp::Mkdir | MetaOp::Dirstat | MetaOp::Rmdir)
    }

    /// Its position in [`MetaOp::ALL`] (for the wire).
    pub fn index(self) -> u32 {
        MetaOp::ALL.iter().position(|o| *o == self).unwrap_or(0) as u32
    }
}

/// Parses a list of operations: each once, in run order whatever the order given.
pub fn parse_meta_ops(text: &str) -> Option<Vec<MetaOp>> {
    let mut ops = Vec::new();
    for name in text.split(',') {
        let op = MetaOp::parse(name)?;
        if !ops.contains(&op) {
            ops.push(op);
        }
    }
    ops.sort();
    (!ops.is_empty()).then_some(ops)
}

/// The most directories in one worker's tree.
pub const MAX_TREE_DIRS: u64 = 1_000_000;
/// The most items (files over every directory and worker) one host makes for one job.
pub const MAX_META_ITEMS: u64 = 100_000_000;

/// The metadata part of a job of kind meta.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaJob {
    /// The tree's shape.
    pub tree: Tree,
    /// Files in each directory, per worker (mdtest's `-I`).
    pub files: u32,
    /// Bytes each file holds (written by create, or by write; read by read).
    pub file_size: u64,
    /// The operations, in run order.
    pub ops: Vec<MetaOp>,
    /// Every worker of every host in one tree (mdtest's shared directory), instead of a
    /// tree of its own.
    pub shared: bool,
    /// After a create phase its time cut, every worker's files are made up to the most any
    /// worker made, untimed, before the next phase (mdtest's wear-out after `-W`), so that
    /// later phases go through equal counts.
    pub wear_out: bool,
    /// Files only in the directories without children, the tree's leaves (mdtest's `-L`).
    pub leaf_only: bool,
    /// Each file written is `fsync`ed before its close, timed with its write (mdtest's `-y`;
    /// the job's `fsync = 1`, carried by the job's own pairs).
    pub fsync: bool,
    /// Each read checked against the bytes every create and write puts in a file (mdtest's
    /// `-X`), a file that differs counted `corrupt`.
    pub verify_read: bool,
    /// The stat phase goes through the files in a scattered order, each once (mdtest's `-R`).
    pub random_order: bool,
    /// Each worker calls sync(2) at the end of each phase, within the phase's time (mdtest's
    /// `-Y`).
    pub sync_phases: bool,
}

/// The directories of a tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tree {
    /// `dirs` directories side by side.
    Flat {
        /// How many.
        dirs: u32,
    },
    /// A root and `depth` levels below it, each directory with `branch` children (mdtest's
    /// `-z` and `-b`): the sum of branch^i directories for i = 0..=depth.
    Deep {
        /// Levels below the root.
        depth: u32,
        /// Children of each directory above the last level.
        branch: u32,
    },
}

impl Tree {
    /// Directories in one tree.
    pub fn dirs(self) -> u64 {
        match self {
            Tree::Flat { dirs } => u64::from(dirs),
            Tree::Deep { depth, branch } => {
                let mut level = 1u64;
                let mut total = 1u64;
                for _ in 0..depth {
                    level = level.saturating_mul(u64::from(branch));
                    total = total.saturating_add(level);
                }
                total
            }
        }
    }

    /// Directories without children: every one side by side, the last level of a deep tree
    /// (branch^depth).
    pub fn leaves(self) -> u64 {
        match self {
            Tree::Flat { dirs } => u64::from(dirs),
            Tree::Deep { depth, branch } => u64::from(branch).saturating_pow(depth),
        }
    }

    /// Each directory's parent (an earlier index), in creation order: parents before
    /// children, so that removing in reverse order removes children first.
    pub fn parents(self) -> Vec<Option<u32>> {
        match self {
            Tree::Flat { dirs } => vec![None; dirs as usize],
            Tree::Deep { depth, branch } => {
                let mut out = vec![None];
                let mut level = 0..1u32;
                for _ in 0..depth {
                    let start = out.len() as u32;
                    for parent in level.clone() {
                        for _ in 0..branch {
                            out.push(Some(parent));
                        }
                    }
                    level = start..out.len() as u32;
                }
                out
            }
        }
    }
}

impl MetaJob {
    /// Files of one worker.
    pub fn items(&self) -> u64 {
        let dirs = if self.leaf_only {
            self.tree.leaves()
        } else {
            self.tree.dirs()
        };
        dirs * u64::from(self.files)
    }

    /// The job-file pairs of its options.
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut pairs = vec![
            ("files", self.files.to_string()),
            (
                "file_size",
                crate::units::format_size(self.file_size).to_string(),
            ),
            (
                "meta_ops",
                self.ops
                    .iter()
                    .map(|o| o.name())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
        ];
        match self.tree {
            Tree::Flat { dirs } => pairs.push(("dirs", dirs.to_string())),
            Tree::Deep { depth, branch } => {
                pairs.push(("depth", depth.to_string()));
                pairs.push(("branch", branch.to_string()));
            }
        }
        if self.shared {
            pairs.push(("shared", "true".into()));
        }
        if self.wear_out {
            pairs.push(("wear_out", "true".into()));
        }
        if self.leaf_only {
            pairs.push(("leaf_only", "true".into()));
        }
        if self.verify_read {
            pairs.push(("verify_read", "true".into()));
        }
        if self.random_order {
            pairs.push(("random_order", "true".into()));
        }
        if self.sync_phases {
            pairs.push(("sync_phases", "true".into()));
        }
        pairs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trees_count_as_mdtest_does() {
        assert_eq!(
            Tree::Deep {
                depth: 2,
                branch: 3
            }
            .dirs(),
            13
        );
        let parents = Tree::Deep {
            depth: 2,
            branch: 3,
        }
        .parents();
        assert_eq!(parents.len(), 13);
        assert_eq!(parents[0], None);
        assert_eq!(&parents[1..4], &[Some(0); 3]);
        assert_eq!(&parents[4..7], &[Some(1); 3]);
        assert_eq!(parents[12], Some(3));
        assert_eq!(
            Tree::Deep {
                depth: 0,
                branch: 5
            }
            .dirs(),
            1
        );
        assert_eq!(Tree::Flat { dirs: 4 }.parents(), vec![None; 4]);
        let leaves = Tree::Deep {
            depth: 2,
            branch: 3,
        };
        assert_eq!(leaves.leaves(), 9);
        assert_eq!(
            leaves.leaves(),
            (0..13u32).filter(|d| !parents.contains(&Some(*d))).count() as u64
        );
        // Every parent comes before its children.
        for (i, p) in parents.iter().enumerate() {
            assert!(p.is_none_or(|p| (p as usize) < i));
        }
    }

    #[test]
    fn op_lists_are_in_run_order_once_each() {
        assert_eq!(
            parse_meta_ops("delete, create,stat,create"),
            Some(vec![MetaOp::Create, MetaOp::Stat, MetaOp::Delete])
        );
        assert_eq!(parse_meta_ops("create,list"), None);
        assert_eq!(parse_meta_ops(""), None);
        for op in MetaOp::ALL {
            assert_eq!(MetaOp::parse(op.name()), Some(op));
            assert_eq!(MetaOp::ALL[op.index() as usize], op);
        }
    }
}
