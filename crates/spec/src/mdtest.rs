//! mdtest's command line (hpc/ior's `src/mdtest.c`) as a meta job, and a meta job as mdtest's
//! command line where it has one: `stormark meta --mdtest '-n 1000 -z 2 -b 3 -u -F'` and
//! `--print-mdtest`.
//!
//! mdtest's ranks are stormark's workers (`--jobs` on each host, over every agent): rank R is
//! worker `wR`, and each option that mdtest gives "every process" is per worker. mdtest's tree
//! (`-z` depth, `-b` branching, one tree per rank with `-u`, one shared tree without) is
//! stormark's `--depth`/`--branch` tree (a tree per worker, or `--shared`). Its items: `-I` per
//! directory, or `-n` per rank spread over the tree as mdtest spreads them
//! (`items_per_dir = n / directories`, `n / leaves` with `-L`, the remainder not made).

use std::fmt::Write as _;

use crate::meta::{MetaJob, MetaOp, Tree};
use crate::units::format_duration;

/// What an mdtest command line asks, as a meta job's keys and the run's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mdtest {
    /// The job's keys (`depth`, `branch`, `files`, `file_size`, `meta_ops`, `shared`, `time`).
    pub pairs: Vec<(&'static str, String)>,
    /// `-d`: the directory to work in.
    pub dir: Option<String>,
    /// `-i`: iterations (`--repeat`).
    pub iterations: Option<u32>,
}

/// Options of mdtest that stormark takes, for messages.
pub const MDTEST_FORM: &str =
    "mdtest's -n, -I, -z, -b, -u, -F, -L, -y, -X, -R, -Y, -C, -T, -E, -r, -w, -e, -W, -i, -d, -a POSIX, -v";

/// Why each option of mdtest that stormark does not take is refused.
fn refused(opt: char) -> Option<&'static str> {
    Some(match opt {
        'D' => "mdtest's directory items are not made (stormark's mkdir, dirstat and rmdir time the tree's own directories): give -F for the file phases",
        'N' => "a stride (each rank on another rank's items) is not made yet: each worker goes through its own items",
        'S' => "a shared file is not made: each item is a file of its own",
        'c' => "collective creates (rank 0 makes every item) are not made",
        'k' => "mknod is not made: files are created with openat",
        'U' => "directory renames are not made (stormark's rename renames files)",
        'B' => "phases always start together on every worker (no -B)",
        'x' => "a stonewall status file is not made: use --time (or -W) in one run",
        'f' | 'l' | 's' => "rank sweeps are not made: give --jobs (and --sweep is refused for meta)",
        'p' | 't' | 'G' | 'P' | 'Z' | 'V' | 'g' => "not an option stormark takes",
        _ => return None,
    })
}

/// Parses an mdtest command line (its arguments, without `mdtest` or `mpirun`).
pub fn parse_mdtest(text: &str) -> Result<Mdtest, String> {
    let words =
        shlex::split(text).ok_or_else(|| format!("--mdtest {text:?}: unbalanced quotes"))?;
    let mut items_n: Option<u64> = None;
    let mut items_i: Option<u64> = None;
    let (mut depth, mut branch) = (0u32, 1u32);
    let (mut unique, mut files_only, mut leaf, mut fsync) = (false, false, false, false);
    let (mut verify, mut random, mut sync_phases) = (false, false, false);
    let (mut create, mut stat, mut read, mut remove) = (false, false, false, false);
    let (mut write_bytes, mut read_bytes) = (0u64, 0u64);
    let mut stonewall: Option<u32> = None;
    let mut out = Mdtest {
        pairs: Vec::new(),
        dir: None,
        iterations: None,
    };
    let mut words = split_flags(words).into_iter();
    while let Some(word) = words.next() {
        let opt = match word
            .strip_prefix('-')
            .map(|r| r.chars().collect::<Vec<_>>())
        {
            Some(c) if c.len() == 1 => c[0],
            _ => {
                return Err(format!(
                    "--mdtest: {word:?} is not taken; expected {MDTEST_FORM}"
                ))
            }
        };
        {
            let value = if takes_value(opt) {
                words
                    .next()
                    .ok_or_else(|| format!("--mdtest: -{opt} needs a value"))?
            } else {
                String::new()
            };
            let number = |v: &str| -> Result<u64, String> {
                v.parse::<u64>()
                    .map_err(|_| format!("--mdtest: -{opt} {v}: expected a whole number"))
            };
            let small = |v: &str| -> Result<u32, String> {
                u32::try_from(number(v)?).map_err(|_| {
                    format!("--mdtest: -{opt} {v}: expected a whole number below 2^32")
                })
            };
            match opt {
                'n' => items_n = Some(number(&value)?),
                'I' => items_i = Some(number(&value)?),
                'z' => depth = small(&value)?,
                'b' => branch = small(&value)?,
                'u' => unique = true,
                'F' => files_only = true,
                'L' => leaf = true,
                'y' => fsync = true,
                'X' => verify = true,
                'R' => random = true,
                'Y' => sync_phases = true,
                'C' => create = true,
                'T' => stat = true,
                'E' => read = true,
                'r' => remove = true,
                'w' => write_bytes = number(&value)?,
                'e' => read_bytes = number(&value)?,
                'W' => stonewall = Some(small(&value)?),
                'i' => out.iterations = Some(small(&value)?),
                'd' => {
                    if value.contains('@') {
                        return Err(format!("--mdtest: -d {value}: several directories (dir1@dir2) are not taken; give one (or agents with --target)"));
                    }
                    out.dir = Some(value)
                }
                'a' if value.eq_ignore_ascii_case("posix") => {}
                'a' => {
                    return Err(format!(
                        "--mdtest: -a {value}: stormark meta makes POSIX calls (or NFS RPCs with an nfs:// target); give -a POSIX"
                    ))
                }
                'v' => {}
                _ => {
                    return Err(match refused(opt) {
                        Some(why) => format!("--mdtest: -{opt}: {why}"),
                        None => format!("--mdtest: -{opt} is not an option of mdtest; expected {MDTEST_FORM}"),
                    })
                }
            }
        }
    }
    if !files_only {
        return Err(format!(
            "--mdtest: {}",
            refused('D')
                .unwrap_or_default()
                .replace("give -F", "without -F mdtest makes them too; give -F")
        ));
    }
    // mdtest's tree: b < 1 makes the root alone.
    if branch == 0 {
        depth = 0;
    }
    let tree = Tree::Deep {
        depth,
        branch: if depth == 0 { 1 } else { branch },
    };
    if tree.dirs() > crate::MAX_TREE_DIRS {
        return Err(format!(
            "--mdtest: -z {depth} -b {branch}: a tree of at most {} directories; lower -z or -b",
            crate::MAX_TREE_DIRS
        ));
    }
    let files =
        match (items_n, items_i) {
            (Some(_), Some(_)) => return Err(
                "--mdtest: -n and -I together (mdtest's directory loops) are not taken; give one"
                    .into(),
            ),
            (None, None) | (Some(0), None) | (None, Some(0)) => {
                return Err(
                    "--mdtest: give -n (items per rank) or -I (items per directory) above 0".into(),
                )
            }
            (None, Some(i)) => i,
            // As mdtest: items_per_dir = n / directories (the leaves with -L), the remainder
            // not made.
            (Some(n), None) if leaf => n / tree.leaves(),
            (Some(n), None) => n / tree.dirs(),
        };
    if files == 0 {
        return Err(format!(
            "--mdtest: -n {}: fewer items than the tree's {} directories, so mdtest makes none; give a larger -n",
            items_n.unwrap_or(0),
            if leaf { tree.leaves() } else { tree.dirs() }
        ));
    }
    if !(create || stat || read || remove) {
        (create, stat, read, remove) = (true, true, true, true);
    }
    if read && read_bytes > 0 && read_bytes != write_bytes {
        return Err(format!(
            "--mdtest: -e {read_bytes}: stormark's read reads each file whole; give -e equal to -w ({write_bytes}), or -e 0 to open and close"
        ));
    }
    let mut ops = Vec::new();
    if create {
        ops.extend([MetaOp::Mkdir, MetaOp::Create]);
    }
    if stat {
        ops.push(MetaOp::Stat);
    }
    if read {
        // mdtest's read of 0 bytes opens and closes each file.
        ops.push(if read_bytes > 0 {
            MetaOp::Read
        } else {
            MetaOp::Open
        });
    }
    if remove {
        ops.extend([MetaOp::Delete, MetaOp::Rmdir]);
    }
    let branch = if depth == 0 { 1 } else { branch };
    out.pairs = vec![
        ("depth", depth.to_string()),
        ("branch", branch.to_string()),
        ("files", files.to_string()),
        ("file_size", write_bytes.to_string()),
        (
            "meta_ops",
            ops.iter().map(|o| o.name()).collect::<Vec<_>>().join(","),
        ),
    ];
    if !unique {
        out.pairs.push(("shared", "true".into()));
    }
    if leaf {
        out.pairs.push(("leaf_only", "true".into()));
    }
    if fsync {
        out.pairs.push(("fsync", "1".into()));
    }
    if random {
        out.pairs.push(("random_order", "true".into()));
    }
    if sync_phases {
        out.pairs.push(("sync_phases", "true".into()));
    }
    if verify {
        // As mdtest: only with its read phase, reading bytes.
        if !read || read_bytes == 0 {
            return Err("--mdtest: -X verifies the read phase's bytes: give -E (or no phase option) with -e equal to -w".into());
        }
        out.pairs.push(("verify_read", "true".into()));
    }
    if let Some(s) = stonewall.filter(|s| *s > 0) {
        out.pairs.push(("time", format!("{s}s")));
        // mdtest's ranks then create on to the furthest one's count.
        out.pairs.push(("wear_out", "true".into()));
    }
    Ok(out)
}

fn takes_value(opt: char) -> bool {
    matches!(
        opt,
        'n' | 'I'
            | 'z'
            | 'b'
            | 'w'
            | 'e'
            | 'W'
            | 'i'
            | 'd'
            | 'a'
            | 'N'
            | 'V'
            | 'f'
            | 'l'
            | 's'
            | 'p'
            | 'x'
            | 'G'
    )
}

/// Words with grouped flags split (`-uF` is `-u -F`) and attached values apart (`-n1000` is
/// `-n 1000`), as mdtest's own option parser reads them.
fn split_flags(words: Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    for word in words {
        let Some(rest) = word
            .strip_prefix('-')
            .filter(|r| r.chars().count() > 1 && !r.starts_with('-'))
        else {
            out.push(word);
            continue;
        };
        for (i, c) in rest.char_indices() {
            out.push(format!("-{c}"));
            if takes_value(c) {
                let value = &rest[i + c.len_utf8()..];
                if !value.is_empty() {
                    out.push(value.to_string());
                }
                break;
            }
        }
    }
    out
}

/// mdtest's arguments for `meta` run by `time` and `iterations` (`--repeat`) in `dir`, or why
/// it has none.
pub fn to_mdtest(
    meta: &MetaJob,
    time: Option<std::time::Duration>,
    iterations: u32,
    dir: &str,
) -> Result<String, String> {
    let (depth, branch) = match meta.tree {
        Tree::Deep { depth, branch } => (depth, branch),
        Tree::Flat { dirs: 1 } => (0, 1),
        Tree::Flat { dirs } => {
            return Err(format!(
                "--print-mdtest: --dirs {dirs} (directories side by side) has no mdtest form; give --depth and --branch"
            ))
        }
    };
    let has = |op| meta.ops.contains(&op);
    for op in [MetaOp::Dirstat, MetaOp::Write, MetaOp::Rename] {
        if has(op) {
            return Err(format!(
                "--print-mdtest: the {} operation has no mdtest phase (the default --ops has it); give --ops from mkdir, create, stat, read or open, delete, rmdir",
                op.name()
            ));
        }
    }
    if has(MetaOp::Read) && has(MetaOp::Open) {
        return Err(
            "--print-mdtest: read and open are both mdtest's read phase (-e bytes or 0); give one"
                .into(),
        );
    }
    if has(MetaOp::Mkdir) != has(MetaOp::Create) || has(MetaOp::Delete) != has(MetaOp::Rmdir) {
        return Err("--print-mdtest: mdtest's create phase makes the tree and its files (mkdir with create), its remove phase removes both (delete with rmdir)".into());
    }
    let mut out = String::new();
    let _ = write!(out, "-a POSIX -z {depth} -b {branch} -I {} -F", meta.files);
    if !meta.shared {
        out.push_str(" -u");
    }
    if meta.leaf_only {
        out.push_str(" -L");
    }
    if meta.fsync {
        out.push_str(" -y");
    }
    if meta.verify_read {
        out.push_str(" -X");
    }
    if meta.random_order {
        out.push_str(" -R");
    }
    if meta.sync_phases {
        out.push_str(" -Y");
    }
    let all = has(MetaOp::Create)
        && has(MetaOp::Stat)
        && (has(MetaOp::Read) || has(MetaOp::Open))
        && has(MetaOp::Delete);
    if !all {
        for (op, flag) in [
            (MetaOp::Create, " -C"),
            (MetaOp::Stat, " -T"),
            (MetaOp::Read, " -E"),
            (MetaOp::Open, " -E"),
            (MetaOp::Delete, " -r"),
        ] {
            if has(op) {
                out.push_str(flag);
            }
        }
    }
    if meta.file_size > 0 {
        let _ = write!(out, " -w {}", meta.file_size);
    }
    if has(MetaOp::Read) {
        let _ = write!(out, " -e {}", meta.file_size);
    }
    if let Some(t) = time {
        if !meta.wear_out {
            return Err("--print-mdtest: mdtest's -W always wears out (its ranks create on to the furthest one's count); add --stonewall-wear-out".into());
        }
        if t.subsec_nanos() != 0 || t.as_secs() == 0 {
            return Err(format!(
                "--print-mdtest: --time {}: mdtest's -W takes whole seconds",
                format_duration(t)
            ));
        }
        let _ = write!(out, " -W {}", t.as_secs());
    }
    if iterations > 1 {
        let _ = write!(out, " -i {iterations}");
    }
    let dir = shlex::try_quote(dir)
        .map_err(|_| format!("--print-mdtest: {dir:?} cannot be quoted for a shell"))?;
    let _ = write!(out, " -d {dir}");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{JobOpts, Source};
    use proptest::prelude::*;

    fn pairs(text: &str) -> Vec<(&'static str, String)> {
        parse_mdtest(text).unwrap().pairs
    }

    fn meta_of(m: &Mdtest) -> MetaJob {
        let mut o = JobOpts::default();
        o.set("kind", "meta", Source::Flag).unwrap();
        for (k, v) in &m.pairs {
            o.set(k, v, Source::Flag).unwrap();
        }
        o.resolve("m").unwrap().meta.unwrap()
    }

    #[test]
    fn n_is_spread_over_the_tree_as_mdtest_spreads_it() {
        // 13 directories: 1000 / 13 = 76 a directory, 988 a rank (mdtest.c: items_per_dir).
        let m = parse_mdtest("-n 1000 -z 2 -b 3 -u -F").unwrap();
        let meta = meta_of(&m);
        assert_eq!(
            meta.tree,
            Tree::Deep {
                depth: 2,
                branch: 3
            }
        );
        assert_eq!((meta.files, meta.items()), (76, 988));
        assert!(!meta.shared);
        assert_eq!(
            meta.ops,
            [
                MetaOp::Mkdir,
                MetaOp::Create,
                MetaOp::Stat,
                MetaOp::Open,
                MetaOp::Delete,
                MetaOp::Rmdir
            ]
        );
        // -I per directory; grouped flags and attached values read the same.
        assert_eq!(pairs("-I 77 -z 2 -b 3 -u -F"), pairs("-I77 -z2 -b3 -uF"));
        let meta = meta_of(&parse_mdtest("-I 77 -z 2 -b 3 -u -F").unwrap());
        assert_eq!(meta.items(), 1001);
        // Without -u one shared tree; without -z the root alone.
        let m =
            parse_mdtest("-a POSIX -n 10 -F -C -T -w 4096 -e 4096 -W 5 -i 3 -d /mnt/x -v").unwrap();
        let meta = meta_of(&m);
        assert!(meta.shared);
        assert_eq!(meta.tree.dirs(), 1);
        assert_eq!((meta.files, meta.file_size), (10, 4096));
        assert_eq!(meta.ops, [MetaOp::Mkdir, MetaOp::Create, MetaOp::Stat]);
        assert_eq!(m.iterations, Some(3));
        assert_eq!(m.dir.as_deref(), Some("/mnt/x"));
        assert!(m.pairs.contains(&("time", "5s".into())));
        assert!(meta_of(&m).wear_out);
        assert!(meta_of(&parse_mdtest("-n 10 -F -y -w 8").unwrap()).fsync);
        // -L: n over the 9 leaves alone.
        let meta = meta_of(&parse_mdtest("-n 1000 -z 2 -b 3 -L -F").unwrap());
        assert_eq!((meta.files, meta.items(), meta.leaf_only), (111, 999, true));
        let meta = meta_of(&parse_mdtest("-n 10 -F -E -w 8 -e 8").unwrap());
        assert_eq!(meta.ops, [MetaOp::Read]);
    }

    #[test]
    fn the_rest_is_refused_by_name() {
        for (text, want) in [
            ("-n 1000 -z 2 -b 3 -u", "directory items"),
            ("-n 10 -F -D", "-D"),
            ("-n 10 -F -N 1", "-N: a stride"),
            ("-n 10 -F -X", "-X verifies"),
            ("-n 10 -F -a S3", "-a POSIX"),
            ("-n 10 -F -q", "-q is not an option of mdtest"),
            ("-F", "give -n"),
            ("-n 10 -I 3 -F", "together"),
            ("-n 5 -z 2 -b 3 -F", "fewer items"),
            ("-n x -F", "whole number"),
            ("-n 10 -F -w 8 -e 4", "-e equal to -w"),
            ("-n 10 -F -z", "needs a value"),
            ("-n 10 -F --stonewall", "not taken"),
            ("-n 10 'unbalanced", "unbalanced"),
            ("-n 10 -F -z 20 -b 10", "at most"),
        ] {
            let e = parse_mdtest(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
            assert!(!e.contains('\n'), "{text}: {e}");
        }
    }

    #[test]
    fn a_job_prints_as_the_command_that_makes_it() {
        let m = parse_mdtest("-n 1000 -z 2 -b 3 -u -F -w 4096 -e 4096 -W 2").unwrap();
        let printed = to_mdtest(
            &meta_of(&m),
            Some(std::time::Duration::from_secs(2)),
            3,
            "/mnt/a b",
        )
        .unwrap();
        assert_eq!(
            printed,
            "-a POSIX -z 2 -b 3 -I 76 -F -u -w 4096 -e 4096 -W 2 -i 3 -d '/mnt/a b'"
        );
        let mut meta = meta_of(&m);
        meta.ops.push(MetaOp::Rename);
        assert!(to_mdtest(&meta, None, 1, ".")
            .unwrap_err()
            .contains("rename"));
        meta.tree = Tree::Flat { dirs: 4 };
        assert!(to_mdtest(&meta, None, 1, ".")
            .unwrap_err()
            .contains("--dirs 4"));
    }

    fn accepted() -> impl Strategy<Value = String> {
        let opt = prop_oneof![
            (1u64..5000).prop_map(|n| format!("-n {n}")),
            (0u32..4).prop_map(|z| format!("-z {z}")),
            (1u32..5).prop_map(|b| format!("-b{b}")),
            Just("-u".to_string()),
            Just("-L".to_string()),
            Just("-y".to_string()),
            Just("-R".to_string()),
            Just("-Y".to_string()),
            Just("-C".to_string()),
            Just("-T".to_string()),
            Just("-E".to_string()),
            Just("-r".to_string()),
            Just("-w 64 -e 64".to_string()),
            Just("-w 64 -e 64 -E -X".to_string()),
            (1u32..100).prop_map(|w| format!("-W {w}")),
            (1u32..5).prop_map(|i| format!("-i {i}")),
        ];
        proptest::collection::vec(opt, 0..8).prop_map(|v| format!("-F -n 4000 {}", v.join(" ")))
    }

    proptest! {
        #[test]
        fn never_panics(text in ".{0,60}") {
            let _ = parse_mdtest(&text);
        }

        #[test]
        fn never_panics_on_flags(words in proptest::collection::vec("-[a-zA-Z]{1,3}|[0-9]{1,4}|-", 0..10)) {
            let _ = parse_mdtest(&words.join(" "));
        }

        /// What --print-mdtest writes reads back to the same job.
        #[test]
        fn round_trip(text in accepted()) {
            if let Ok(m) = parse_mdtest(&text) {
                let meta = meta_of(&m);
                let time = m.pairs.iter().find(|(k, _)| *k == "time").map(|(_, v)| crate::parse_duration(v).unwrap());
                let printed = to_mdtest(&meta, time, m.iterations.unwrap_or(1), "/tmp/x").unwrap();
                let again = parse_mdtest(&printed).unwrap();
                prop_assert_eq!(meta_of(&again), meta);
                prop_assert_eq!(again.iterations.unwrap_or(1), m.iterations.unwrap_or(1));
                prop_assert_eq!(
                    again.pairs.iter().find(|(k, _)| *k == "time"),
                    m.pairs.iter().find(|(k, _)| *k == "time")
                );
            }
        }
    }
}
