//! An agent's journal of the run directories it created and has not yet removed, so that
//! after a crash or SIGKILL its next start removes them (or reports those kept on purpose),
//! and of the S3 prefixes its runs wrote under, which it sweeps again with keys of its own when
//! it has some, and names otherwise (the run's keys went with the run; none is written here).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use stormark_engine::Dir;

use stormark_spec::Tree;

use super::manifest::{listed_files, MANIFEST};
use super::metajob::{Anchor, TreeRecord};
use super::metaleft::remove_left_tree;
use super::shareclean::remove_share_run;

/// A journal of one live agent's run directories in its state directory. Each agent keeps its
/// own file (`runs-PID.journal`) locked while it runs; an agent starting recovers only the
/// journals no live agent holds, so agents sharing a state directory never touch each other's
/// runs.
#[derive(Debug, Clone)]
pub struct Journal {
    file: Arc<Mutex<File>>,
    path: PathBuf,
}

fn lock(f: &File) -> bool {
    // SAFETY: the descriptor is open; flock only takes an advisory lock.
    unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

fn read_entries(f: &mut File) -> Vec<String> {
    let mut text = String::new();
    let _ = f.seek(SeekFrom::Start(0));
    let _ = f.take(16 << 20).read_to_string(&mut text);
    text.lines()
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

impl Journal {
    /// This agent's journal in `state_dir` (created, mode 700, when missing), after recovering
    /// the journals of agents that are gone. Returns it with notes of what was recovered.
    pub fn open(state_dir: &Path) -> Result<(Journal, Vec<String>), String> {
        use std::os::unix::fs::DirBuilderExt;
        let fail = |e: std::io::Error| format!("--state-dir {}: {e}", state_dir.display());
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(state_dir)
            .map_err(fail)?;
        let (mut notes, mut objects) = (Vec::new(), Vec::new());
        for e in std::fs::read_dir(state_dir).map_err(fail)?.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !(name.starts_with("runs-") && name.ends_with(".journal")) {
                continue;
            }
            let Ok(mut f) = File::options().read(true).write(true).open(e.path()) else {
                continue;
            };
            if !lock(&f) {
                continue; // a live agent's
            }
            let (said, prefixes) = recover(&read_entries(&mut f));
            notes.extend(said);
            objects.extend(prefixes);
            let _ = std::fs::remove_file(e.path());
        }
        let path = state_dir.join(format!("runs-{}.journal", std::process::id()));
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(fail)?;
        lock(&file);
        let journal = Journal {
            file: Arc::new(Mutex::new(file)),
            path,
        };
        // A dead agent's S3 prefixes: swept again beside this agent's service (journaled in
        // its own journal until then), or named.
        for entry in objects {
            notes.push(super::bucket::sweep_journaled(&entry, &journal));
        }
        Ok((journal, notes))
    }

    fn update(&self, change: impl FnOnce(&mut Vec<String>)) {
        let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let mut entries = read_entries(&mut f);
        change(&mut entries);
        let mut text = entries.join("\n");
        text.push('\n');
        let _ = f.set_len(0);
        let _ = f.seek(SeekFrom::Start(0));
        let _ = f.write_all(text.as_bytes());
        let _ = f.sync_data();
    }

    /// Records a run directory just created (`keep`: the coordinator asked to keep it).
    pub fn add(&self, run_dir: &Path, keep: bool) {
        let how = if keep { "keep" } else { "remove" };
        let line = format!("{how} {}", run_dir.display());
        self.update(|e| e.push(line));
    }

    /// Forgets a run directory or made file removed (or kept on purpose).
    pub fn remove(&self, path: &Path) {
        let shown = path.display().to_string();
        self.update(|e| {
            e.retain(|l| {
                let p = l.split_once(' ').map(|(_, p)| p);
                // A made file's line names it after its identity.
                let file = p.and_then(|p| p.splitn(4, ':').nth(3));
                p != Some(shown.as_str()) && file != Some(shown.as_str())
            })
        });
    }

    /// Records a file target the run made (`keep`: the coordinator asked to keep it), by its
    /// identity, so that only that file is ever removed for it.
    pub(super) fn add_file(&self, path: &Path, id: super::madefile::FileId, keep: bool) {
        let line = if keep {
            format!("keep {}", path.display())
        } else {
            format!("file {}:{}", id.shown(), path.display())
        };
        self.update(|e| e.push(line));
    }

    /// Records that run `run` writes objects under `shown` (`s3://B/PREFIX/RUN-hN/`), and
    /// `detail`, where they are (endpoint, region, addressing, buckets and prefix, never a
    /// key: `Bucket::journaled`), or nothing.
    pub fn add_objects(&self, run: &str, shown: &str, detail: &str) {
        let mut line = format!("s3 {run} {shown}");
        if !detail.is_empty() {
            line.push(' ');
            line.push_str(detail);
        }
        self.update(|e| e.push(line));
    }

    /// Forgets the objects of [`Journal::add_objects`], removed.
    pub fn remove_objects(&self, run: &str, shown: &str) {
        let line = format!("s3 {run} {shown}");
        let with = format!("{line} ");
        self.update(|e| e.retain(|l| *l != line && !l.starts_with(&with)));
    }

    /// Records a run directory about to be made on an NFS share (`run_dir`, its URL) with
    /// the names of the files it will hold (`keep`: the coordinator asked to keep it).
    pub fn add_share(&self, run_dir: &str, files: &[String], keep: bool) {
        let line = if keep {
            format!("keep {run_dir}")
        } else {
            let names: Vec<String> = files.iter().map(|n| escape(n)).collect();
            format!("nfs {} {}", escape(run_dir), names.join("/"))
        };
        self.update(|e| e.push(line));
    }

    /// Records what a share's run directory of [`Journal::add_share`] is on the server (its
    /// object and its file handle) and the files made in it so far, each by its object and
    /// handle: all that a restarted agent removes (`nfs URL/NAME NAME@DEV.INO.HANDLE/...
    /// DEV.INO HANDLE`, handles in hex; a line written before handles were kept for files,
    /// `NAME@DEV.INO`, still reads).
    pub(super) fn share_made(
        &self,
        run_dir: &str,
        dir: stormark_nfs::FileId,
        handle: &stormark_nfs::Handle,
        files: &[(String, super::share::Made)],
    ) {
        let prefix = format!("nfs {} ", escape(run_dir));
        let names: Vec<String> = files
            .iter()
            .map(|(n, m)| {
                let h = hex(&m.handle);
                format!("{}@{}.{}.{h}", escape(n), m.id.dev, m.id.ino)
            })
            .collect();
        let line = format!(
            "{prefix}{} {}.{} {}",
            names.join("/"),
            dir.dev,
            dir.ino,
            hex(handle)
        );
        self.update(|e| {
            e.retain(|l| !l.starts_with(&prefix));
            e.push(line);
        });
    }

    /// Forgets a share's run directory of [`Journal::add_share`], removed (or kept).
    pub fn remove_share(&self, run_dir: &str) {
        let (nfs, keep) = (
            format!("nfs {} ", escape(run_dir)),
            format!("keep {run_dir}"),
        );
        self.update(|e| e.retain(|l| !l.starts_with(&nfs) && *l != keep));
    }

    /// Records a meta tree about to be made or opened (its identity not yet known), or, once
    /// it is, with its identity: what a restarted agent removes of it. Replaces the tree's
    /// earlier line.
    pub(super) fn add_meta(&self, tree: &TreeRecord) {
        let (prefix, line) = (meta_prefix(tree), meta_line(tree));
        self.update(|e| {
            e.retain(|l| !l.starts_with(&prefix));
            e.push(line);
        });
    }

    /// Forgets a meta tree of [`Journal::add_meta`]: this host's part of it is removed.
    pub(super) fn remove_meta(&self, tree: &TreeRecord) {
        let prefix = meta_prefix(tree);
        self.update(|e| e.retain(|l| !l.starts_with(&prefix)));
    }

    /// The journal's file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Removes the run directories a crashed agent left (the files their manifests name, the
/// manifest, then the directory if empty) and reports those kept with `--keep`. Returns the
/// notes, and the S3 prefixes recorded with where they are (what follows `s3 `), for a sweep.
fn recover(entries: &[String]) -> (Vec<String>, Vec<String>) {
    let (mut notes, mut objects) = (Vec::new(), Vec::new());
    // Meta trees first: a tree of its own lies inside the run directory removed after it.
    let (trees, rest): (Vec<&String>, Vec<&String>) = entries
        .iter()
        .partition(|l| l.starts_with("meta ") || l.starts_with("meta-nfs "));
    for line in trees {
        notes.push(match parse_meta(line) {
            Some(tree) => remove_left_tree(&tree),
            None => "a damaged journal line was skipped".into(),
        });
    }
    for line in rest {
        let Some((how, path)) = line.split_once(' ') else {
            continue;
        };
        if how == "keep" {
            notes.push(format!(
                "{path}: kept (--keep) by a run that did not finish; reuse it with --reuse or remove it"
            ));
            continue;
        }
        if how == "file" {
            notes.push(remove_made_file(path));
            continue;
        }
        if how == "nfs" {
            notes.push(remove_share_run(path));
            continue;
        }
        if how == "s3" && path.split(' ').count() > 2 {
            objects.push(path.to_string());
            continue;
        }
        if how == "s3" {
            let (run, shown) = path.split_once(' ').unwrap_or((path, "?"));
            notes.push(format!(
                "run {run}, which did not finish here, wrote objects under {shown}: its coordinator removes a failed host's objects when it can; if they are still there, `stormark s3 --remove-run {run}` with the run's --endpoint, --bucket and --prefix removes them"
            ));
            continue;
        }
        match remove_run(Path::new(path)) {
            Ok(()) => notes.push(format!(
                "removed {path}, left by an earlier run that did not finish"
            )),
            Err(e) => notes.push(format!(
                "could not remove {path}, left by an earlier run: {e} (files stormark did not create are left in place)"
            )),
        }
    }
    (notes, objects)
}

/// A meta tree's line up to its identity: `meta KIND FIRST-END TREE FILES ANCHOR NAME/NAME `,
/// KIND `own` or `shared`, TREE `flat.N` or `deep.D.B`; `meta-nfs` where ANCHOR is a share's
/// URL.
fn meta_prefix(t: &TreeRecord) -> String {
    let tree = match t.tree {
        Tree::Flat { dirs } => format!("flat.{dirs}"),
        Tree::Deep { depth, branch } => format!("deep.{depth}.{branch}"),
    };
    let names: Vec<String> = t.names.iter().map(|n| escape(n)).collect();
    let (word, anchor) = match &t.anchor {
        Anchor::Dir(d) => ("meta", d.to_string_lossy().into_owned()),
        Anchor::Share(url) => ("meta-nfs", url.clone()),
    };
    format!(
        "{word} {} {}-{} {tree} {} {} {} ",
        if t.shared { "shared" } else { "own" },
        t.workers.start,
        t.workers.end,
        t.files,
        escape(&anchor),
        names.join("/"),
    )
}

/// A meta tree's whole line: its prefix, then its identity (`DEV:INO:BORN`, `-` not yet).
fn meta_line(t: &TreeRecord) -> String {
    let id = t.id.map_or("-".to_string(), |id| id.shown());
    format!("{}{id}", meta_prefix(t))
}

/// What [`meta_line`] wrote.
fn parse_meta(line: &str) -> Option<TreeRecord> {
    let w: Vec<&str> = line.split(' ').collect();
    let [word, kind, workers, tree, files, anchor, names, id] = w.as_slice() else {
        return None;
    };
    let (start, end) = workers.split_once('-')?;
    let n = |t: &str| t.parse::<u32>().ok();
    let tree = match tree.split('.').collect::<Vec<_>>().as_slice() {
        ["flat", dirs] => Tree::Flat { dirs: n(dirs)? },
        ["deep", depth, branch] => Tree::Deep {
            depth: n(depth)?,
            branch: n(branch)?,
        },
        _ => return None,
    };
    Some(TreeRecord {
        shared: match *kind {
            "shared" => true,
            "own" => false,
            _ => return None,
        },
        workers: n(start)?..n(end)?,
        tree,
        files: n(files)?,
        anchor: match *word {
            "meta" => Anchor::Dir(PathBuf::from(unescape(anchor))),
            _ => Anchor::Share(unescape(anchor)),
        },
        names: names.split('/').map(unescape).collect(),
        id: match *id {
            "-" => None,
            id => Some(super::madefile::FileId::parse(id)?),
        },
    })
}

/// A journal line's word: `%`, `/`, spaces and control characters as `%XX`.
pub(super) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b == b'%' || b == b'/' || b <= b' ' || b == 0x7f {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push(b as char);
        }
    }
    out
}

/// A word of [`escape`] as it was.
pub(super) fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (b[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// An object as [`Journal::share_made`] writes it (`DEV.INO`, then `.HANDLE` for a file: none
/// in a line an older stormark wrote).
pub(super) fn file_id(text: &str) -> Option<(stormark_nfs::FileId, Option<stormark_nfs::Handle>)> {
    let mut parts = text.splitn(3, '.');
    let (dev, ino) = (parts.next()?, parts.next()?);
    let id = stormark_nfs::FileId {
        dev: dev.parse().ok()?,
        ino: ino.parse().ok()?,
    };
    match parts.next() {
        None => Some((id, None)),
        Some(h) => Some((id, Some(handle_of(h)?))),
    }
}

/// A file handle's bytes in hex, as a journal keeps them.
pub(super) fn hex(h: &stormark_nfs::Handle) -> String {
    h.bytes().iter().map(|b| format!("{b:02x}")).collect()
}

/// A handle of [`hex`].
pub(super) fn handle_of(hex: &str) -> Option<stormark_nfs::Handle> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok())
        .collect();
    stormark_nfs::Handle::from_bytes(&bytes?)
}

/// Removes a file a run made (`DEV:INO:BORN:PATH`) if what is at its path is still that file.
fn remove_made_file(entry: &str) -> String {
    let Some((at, _)) = entry.match_indices(':').nth(2) else {
        return "a damaged journal line was skipped".into();
    };
    let (id, path) = (&entry[..at], Path::new(&entry[at + 1..]));
    let (Some(name), Some(parent)) = (path.file_name(), path.parent()) else {
        return format!("{}: not a file's path; left", path.display());
    };
    let removed = Dir::open(parent)
        .and_then(|d| super::madefile::remove_if(&d, name, |now| now.shown() == id));
    match removed {
        Ok(()) => format!(
            "removed {}, made by an earlier run that did not finish",
            path.display()
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => format!(
            "{}, made by an earlier run that did not finish, is gone already",
            path.display()
        ),
        Err(e) => format!(
            "left {}, made by an earlier run that did not finish: {e}",
            path.display()
        ),
    }
}

/// Removes what a run directory's manifest names, beneath the directory's descriptor.
fn remove_run(path: &Path) -> std::io::Result<()> {
    let dir = match Dir::open(path) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    // Only the names the run's manifest lists; a damaged manifest removes nothing more.
    for name in listed_files(&dir).unwrap_or_default() {
        let _ = dir.remove_file(&name);
        let _ = dir.remove_file(stormark_engine::state_name(&name));
    }
    let _ = dir.remove_file(MANIFEST);
    std::fs::remove_dir(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crashed_run_is_removed_at_the_next_start_and_a_kept_one_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let state = tmp.path().join("state");
        // A journal left by an agent that is gone: written, then its lock released.
        let (j, _) = Journal::open(&state).unwrap();
        let run = tmp.path().join("stormark-run");
        std::fs::create_dir(&run).unwrap();
        std::fs::write(run.join("j0.w0.f0"), b"data").unwrap();
        std::fs::write(
            run.join(MANIFEST),
            r#"{"tool":"stormark","files":[{"name":"j0.w0.f0","size":4,"prepared":true}]}"#,
        )
        .unwrap();
        std::fs::write(tmp.path().join("not-ours"), b"x").unwrap();
        let kept = tmp.path().join("kept");
        std::fs::create_dir(&kept).unwrap();
        j.add(&run, false);
        j.add(&kept, true);
        // A file a run made, and one made then replaced by someone else's.
        let made = tmp.path().join("made");
        std::fs::write(&made, b"x").unwrap();
        let id = |p: &Path| super::super::madefile::FileId::of(&std::fs::metadata(p).unwrap());
        j.add_file(&made, id(&made), false);
        let replaced = tmp.path().join("replaced");
        std::fs::write(&replaced, b"x").unwrap();
        j.add_file(&replaced, id(&replaced), false);
        std::fs::remove_file(&replaced).unwrap();
        std::fs::write(tmp.path().join("other"), b"yyyy").unwrap();
        std::fs::rename(tmp.path().join("other"), &replaced).unwrap();
        j.add_objects(
            "20261126-001739-1",
            "s3://b/stormark/20261126-001739-1-h2/",
            "",
        );
        j.add_objects(
            "20261126-001739-2",
            "s3://b/stormark/20261126-001739-2-h0/",
            "http:%2F%2F127.0.0.1:1 us-east-1 p k b stormark%2F20261126-001739-2-h0%2F",
        );
        j.remove_objects("20261126-001739-2", "s3://b/stormark/20261126-001739-2-h0/");
        let dead = j.path().with_file_name("runs-0.journal");
        std::fs::copy(j.path(), &dead).unwrap();
        // The dead agent's journal is recovered; this live one's (locked) is skipped.
        let (_live, notes) = Journal::open(&state).unwrap();
        assert!(!run.exists(), "{notes:?}");
        assert!(kept.exists());
        assert!(tmp.path().join("not-ours").exists());
        assert!(notes.iter().any(|n| n.contains("kept")), "{notes:?}");
        // The objects still journaled are named, with the command that removes them.
        let s3: Vec<&String> = notes.iter().filter(|n| n.contains("s3://")).collect();
        assert_eq!(s3.len(), 1, "{notes:?}");
        assert!(
            s3[0].contains("s3://b/stormark/20261126-001739-1-h2/")
                && s3[0].contains("--remove-run 20261126-001739-1"),
            "{s3:?}"
        );
        assert!(!made.exists(), "{notes:?}");
        assert_eq!(std::fs::read(&replaced).unwrap(), b"yyyy", "{notes:?}");
        assert!(!dead.exists());
    }

    /// A tree's line reads back as written, locally and on a share (whose URL is kept whole,
    /// not taken for a path).
    #[test]
    fn a_meta_line_reads_back_as_written() {
        for anchor in [
            Anchor::Dir(PathBuf::from("/srv/a dir%")),
            Anchor::Share("nfs://[fd00::1]:2049/export/m".into()),
        ] {
            let t = TreeRecord {
                shared: false,
                workers: 2..4,
                tree: Tree::Deep {
                    depth: 2,
                    branch: 3,
                },
                files: 7,
                names: vec!["stormark-x".into(), "meta-j 1".into()],
                id: Some(super::super::madefile::FileId {
                    dev: 5,
                    ino: 9,
                    born_ns: None,
                    handle: match anchor {
                        Anchor::Share(_) => stormark_nfs::Handle::from_bytes(&[1, 0xab, 7]),
                        Anchor::Dir(_) => None,
                    },
                }),
                anchor,
            };
            assert_eq!(parse_meta(&meta_line(&t)), Some(t.clone()));
            let unknown = TreeRecord { id: None, ..t };
            assert_eq!(parse_meta(&meta_line(&unknown)), Some(unknown));
        }
    }

    /// Issue 52: a share's objects are journaled with their whole handles, and a line an
    /// older stormark wrote (numbers only) still reads, matched by its numbers.
    #[test]
    fn handles_are_journaled_and_older_lines_still_read() {
        use super::super::madefile::FileId;
        let h = stormark_nfs::Handle::from_bytes(&[0, 1, 0xfe, 0xff]).unwrap();
        assert_eq!(hex(&h), "0001feff");
        assert_eq!(handle_of("0001feff"), Some(h));
        assert_eq!(handle_of("0001f"), None);
        let id = stormark_nfs::FileId { dev: 5, ino: 9 };
        assert_eq!(file_id("5.9"), Some((id, None)));
        assert_eq!(file_id("5.9.0001feff"), Some((id, Some(h))));
        assert_eq!(file_id("5.9.zz"), None);
        let made = FileId {
            dev: 5,
            ino: 9,
            born_ns: None,
            handle: Some(h),
        };
        assert_eq!(FileId::parse(&made.shown()), Some(made));
        let older = FileId::parse("5:9:-").unwrap();
        assert_eq!(older.handle, None);
        // Found now with a handle: the recorded one's, or any where none was recorded.
        assert!(made.is(&made) && made.is(&older));
        let reused = FileId {
            handle: stormark_nfs::Handle::from_bytes(&[0, 1, 0xfe, 0xfe]),
            ..made
        };
        assert!(!reused.is(&made), "a number reused, a generation later");
        assert!(!FileId { ino: 10, ..made }.is(&older));
    }
}
