//! The metadata part of a job's options: what `kind = "meta"` needs, and meta options on
//! another kind refused.

use crate::choices::LoadKind;
use crate::meta::{MetaJob, MetaOp, Tree, MAX_META_ITEMS, MAX_TREE_DIRS};
use crate::SpecError;

use super::{refuse_given, JobOpts};

/// Files per directory of a meta job unless `files` is given (as `stormark meta --files`).
pub const META_DEFAULT_FILES: u32 = 1000;

impl JobOpts {
    /// The meta part of a job of kind meta; meta options on another kind, and options a meta
    /// job cannot honour, are mistakes.
    pub(super) fn meta(&self, kind: LoadKind) -> Result<Option<MetaJob>, SpecError> {
        if kind != LoadKind::Meta {
            let given = [
                ("--dirs", self.dirs.is_some()),
                ("--file-size", self.file_size.is_some()),
                ("--ops", self.meta_ops.is_some()),
                ("--shared", self.shared.is_some()),
                ("--stonewall-wear-out", self.wear_out.is_some()),
                ("--leaf-only", self.leaf_only.is_some()),
                ("--verify-read", self.verify_read.is_some()),
                ("--random-order", self.random_order.is_some()),
                ("--sync-phases", self.sync_phases.is_some()),
                ("--depth", self.depth.is_some()),
                ("--branch", self.branch.is_some()),
            ];
            refuse_given(
                &given,
                "an option of metadata jobs only: use `stormark meta`, or kind = \"meta\" in a job file",
            )?;
            return Ok(None);
        }
        let refused = [
            ("--bs", self.bs.is_some()),
            ("--iodepth", self.iodepth.is_some()),
            ("--size", self.size.is_some()),
            ("--io-total", self.io_total.is_some()),
            ("--rate-iops", self.rate_iops.is_some()),
            ("--verify", self.verify.is_some()),
            ("--steady-state", self.steady_state.is_some()),
        ];
        refuse_given(
            &refused,
            "not an option of metadata jobs: they go through every file of their tree (give --files, --dirs or --depth; --time stops each phase early)",
        )?;
        let tree = match (self.depth, self.branch, self.dirs) {
            (Some(_), _, Some(d)) => {
                return Err(SpecError::invalid(
                    "--dirs",
                    &d.to_string(),
                    "either --dirs (side by side) or --depth with --branch (mdtest's tree), not both",
                ))
            }
            (Some(depth), branch, None) => Tree::Deep {
                depth,
                branch: match (depth, branch) {
                    (_, Some(b)) => b,
                    (0, None) => 1,
                    (_, None) => {
                        return Err(SpecError::invalid(
                            "--depth",
                            &depth.to_string(),
                            "a tree with --branch N too (children of each directory), such as --depth 2 --branch 3",
                        ))
                    }
                },
            },
            (None, Some(b), _) => {
                return Err(SpecError::invalid(
                    "--branch",
                    &b.to_string(),
                    "a tree with --depth N too (levels below the root), such as --depth 2 --branch 3",
                ))
            }
            (None, None, dirs) => Tree::Flat {
                dirs: dirs.unwrap_or(1),
            },
        };
        if tree.dirs() > MAX_TREE_DIRS {
            return Err(SpecError::invalid(
                "--depth",
                &self.depth.unwrap_or(0).to_string(),
                format!(
                    "a tree of at most {MAX_TREE_DIRS} directories (this one has {}); lower --depth or --branch",
                    tree.dirs()
                ),
            ));
        }
        let file_size = self.file_size.unwrap_or(0);
        let ops = match &self.meta_ops {
            Some(ops) => ops.clone(),
            // mdtest's: all but write, and read only with data to read.
            None => MetaOp::ALL
                .into_iter()
                .filter(|o| *o != MetaOp::Write && (*o != MetaOp::Read || file_size > 0))
                .collect(),
        };
        // A read of empty files is mdtest's `-E` without `-e`: open and close, nothing read.
        if file_size == 0 && ops.contains(&MetaOp::Write) {
            return Err(SpecError::invalid(
                "--ops",
                &ops.iter().map(|o| o.name()).collect::<Vec<_>>().join(","),
                "write with --file-size above 0, such as --file-size 4k",
            ));
        }
        let meta = MetaJob {
            tree,
            files: self.files.unwrap_or(META_DEFAULT_FILES),
            file_size,
            ops,
            shared: self.shared.unwrap_or(false),
            wear_out: self.wear_out.unwrap_or(false),
            leaf_only: self.leaf_only.unwrap_or(false),
            verify_read: self.verify_read.unwrap_or(false),
            random_order: self.random_order.unwrap_or(false),
            sync_phases: self.sync_phases.unwrap_or(false),
            fsync: match self.fsync {
                None | Some(0) => false,
                Some(1) => true,
                Some(n) => {
                    return Err(SpecError::invalid(
                        "--fsync",
                        &n.to_string(),
                        "1 for a metadata job: each file fsynced after its write (mdtest's -y)",
                    ))
                }
            },
        };
        if meta.verify_read
            && (!meta.ops.contains(&MetaOp::Read) || !(1..=1 << 20).contains(&meta.file_size))
        {
            return Err(SpecError::invalid(
                "--verify-read",
                "true",
                "with the read operation and a --file-size from 1 to 1m, such as --file-size 4k --ops create,read",
            ));
        }
        if meta.wear_out && self.time.is_none() {
            return Err(SpecError::invalid(
                "--stonewall-wear-out",
                "true",
                "with --time (the stonewall it wears out after), such as --time 30s --stonewall-wear-out",
            ));
        }
        let items = meta
            .items()
            .saturating_mul(u64::from(self.jobs.unwrap_or(1)));
        if items > MAX_META_ITEMS {
            return Err(SpecError::invalid(
                "--files",
                &meta.files.to_string(),
                format!(
                    "at most {MAX_META_ITEMS} files per host (jobs x directories x files is {items}); lower --jobs, --dirs or --files"
                ),
            ));
        }
        Ok(Some(meta))
    }
}

#[cfg(test)]
mod tests {
    use crate::{JobOpts, MetaOp, Source, Tree};

    fn job(pairs: &[(&str, &str)]) -> Result<crate::Job, crate::SpecError> {
        let mut o = JobOpts::default();
        o.set("kind", "meta", Source::Flag)?;
        for (k, v) in pairs {
            o.set(k, v, Source::Flag)?;
        }
        o.resolve("m")
    }

    #[test]
    fn meta_jobs_take_mdtests_shapes() {
        let j = job(&[("depth", "2"), ("branch", "3"), ("files", "5")]).unwrap();
        let m = j.meta.unwrap();
        assert_eq!(
            m.tree,
            Tree::Deep {
                depth: 2,
                branch: 3
            }
        );
        assert_eq!(m.items(), 65);
        assert!(m.ops.contains(&MetaOp::Dirstat) && !m.ops.contains(&MetaOp::Read));
        let m = job(&[("file_size", "4k"), ("meta_ops", "read,create")])
            .unwrap()
            .meta
            .unwrap();
        assert_eq!(m.ops, [MetaOp::Create, MetaOp::Read]);
        assert_eq!(m.tree, Tree::Flat { dirs: 1 });
        assert_eq!(m.files, 1000);
        // The pairs read back to the same job.
        let j = job(&[("dirs", "3"), ("shared", "true"), ("files", "7")]).unwrap();
        let mut o = JobOpts::default();
        for (k, v) in j.to_pairs() {
            o.set(k, &v, Source::Flag).unwrap();
        }
        assert_eq!(o.resolve("m").unwrap().meta, j.meta);
    }

    #[test]
    fn meta_mistakes_name_the_option() {
        for (pairs, want) in [
            (vec![("meta_ops", "write")], "--file-size above 0"),
            (vec![("depth", "2")], "--branch"),
            (vec![("branch", "2")], "--depth"),
            (
                vec![("depth", "2"), ("branch", "2"), ("dirs", "2")],
                "not both",
            ),
            (vec![("depth", "20"), ("branch", "10")], "at most 1000000"),
            (vec![("bs", "4k")], "not an option of metadata jobs"),
            (
                vec![("jobs", "4096"), ("dirs", "1000"), ("files", "1000")],
                "at most 100000000 files",
            ),
            (vec![("meta_ops", "create,list")], "mkdir, dirstat"),
        ] {
            let e = job(&pairs).unwrap_err().to_string();
            assert!(e.contains(want), "{pairs:?}: {e}");
        }
        let mut o = JobOpts::default();
        o.set("dirs", "3", Source::Flag).unwrap();
        let e = o.resolve("f").unwrap_err().to_string();
        assert!(e.contains("metadata jobs only"), "{e}");
        let mut o = JobOpts::default();
        o.set("files", "70000", Source::Flag).unwrap();
        assert!(o.resolve("f").is_err());
    }
}
