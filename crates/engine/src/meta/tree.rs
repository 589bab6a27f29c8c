//! A meta job's tree on this host: its layout, each worker's items and what exists of them,
//! the calls of each operation (timed into a recorder), the untimed readying of what an
//! operation needs, and the removal of what is left.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use stormark_spec::{MetaJob, MetaOp};
use stormark_stats::{ErrorKind, Op, Recorder};

use super::namespace::{Local, Namespace};

/// Every byte a create or write puts in a file.
const FILL: u8 = 0x5a;

/// The operation a meta operation is recorded as.
pub fn meta_stat_op(op: MetaOp) -> Op {
    match op {
        MetaOp::Mkdir => Op::Mkdir,
        MetaOp::Dirstat => Op::Dirstat,
        MetaOp::Create => Op::Create,
        MetaOp::Write => Op::Write,
        MetaOp::Stat => Op::Stat,
        MetaOp::Open => Op::Open,
        MetaOp::Read => Op::Read,
        MetaOp::Rename => Op::Rename,
        MetaOp::Delete => Op::Delete,
        MetaOp::Rmdir => Op::Rmdir,
    }
}

/// What exists of one worker's items.
#[derive(Debug, Default, Clone, Copy)]
struct State {
    /// Its directories were made (a tree of its own only; a shared tree's are the agent's).
    dirs: bool,
    /// Items before this one are gone (a delete went through them): files that may exist
    /// are the items `first..files`.
    first: u64,
    /// Items its create went through.
    files: u64,
    /// The files carry their second name.
    renamed: bool,
}

impl State {
    /// Whether some of its files may exist.
    fn has_files(&self) -> bool {
        self.files > self.first
    }

    /// None of its files exists any more.
    fn no_files(&mut self) {
        self.first = 0;
        self.files = 0;
        self.renamed = false;
    }
}

/// One worker's part of a tree.
#[derive(Debug)]
struct Part<N: Namespace> {
    /// Its top: a directory of its own, or the shared tree's.
    top: Arc<N::Dir>,
    /// How it reaches the namespace (an NFS worker's own connection).
    ns: Mutex<N>,
    /// Its index among every worker of the job on every host (in file names).
    global: u32,
    state: Mutex<State>,
    /// The directories it works in, opened before its start.
    dirs: Mutex<Vec<Option<N::Dir>>>,
}

/// One meta job's tree on this host: made by the agent before the first stage, used by the
/// job's workers stage after stage, and removed by [`MetaTree::cleanup`].
#[derive(Debug)]
pub struct MetaTree<N: Namespace = Local> {
    pub(crate) job: MetaJob,
    parents: Vec<Option<u32>>,
    has_children: Vec<bool>,
    /// Shared tree: the worker (of all) that makes, stats and removes each directory.
    owner: Vec<u32>,
    total: u32,
    parts: Vec<Part<N>>,
}

pub(super) fn dir_name(out: &mut String, d: usize) -> &str {
    out.clear();
    let _ = write!(out, "d{d}");
    out
}

fn file_name(out: &mut String, global: u32, n: u64, renamed: bool) -> &str {
    out.clear();
    let _ = write!(out, "{}{global}.{n}", if renamed { 'r' } else { 'f' });
    out
}

/// The worker (its index over every host) whose file `name` is, when `name` is one that
/// [`file_name`] makes for an item of a job of `files` files a directory (`f7.12`, `r7.12`),
/// written exactly so (no sign, no leading zero).
pub(super) fn file_owner(name: &[u8], files: u32) -> Option<u32> {
    let (kind, rest) = name.split_first()?;
    if *kind != b'f' && *kind != b'r' {
        return None;
    }
    let rest = std::str::from_utf8(rest).ok()?;
    let (global, n) = rest.split_once('.')?;
    let canonical = |t: &str| {
        !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) && (t == "0" || !t.starts_with('0'))
    };
    if !canonical(global) || !canonical(n) {
        return None;
    }
    let n: u64 = n.parse().ok()?;
    (n < u64::from(files)).then_some(())?;
    global.parse().ok()
}

impl<N: Namespace> MetaTree<N> {
    /// The tree of `job` for workers whose tops are `tops` (one per worker of this host, in
    /// order, each with the worker's way into the namespace), the first of them worker
    /// `first` of `total` over every host. With a tree of its own per worker (not shared),
    /// each top is empty; shared, every top is the same directory. Nothing is made yet.
    pub fn new(job: &MetaJob, tops: Vec<(Arc<N::Dir>, N)>, first: u32, total: u32) -> Self {
        let parents = job.tree.parents();
        let mut has_children = vec![false; parents.len()];
        let mut root = vec![0u32; parents.len()];
        let mut roots = 0u32;
        for (d, p) in parents.iter().enumerate() {
            match p {
                Some(p) => {
                    has_children[*p as usize] = true;
                    root[d] = root[*p as usize];
                }
                None => {
                    root[d] = roots;
                    roots += 1;
                }
            }
        }
        let total = total.max(1);
        MetaTree {
            owner: root.iter().map(|r| r % total).collect(),
            job: job.clone(),
            parents,
            has_children,
            total,
            parts: tops
                .into_iter()
                .enumerate()
                .map(|(w, (top, ns))| Part {
                    top,
                    ns: Mutex::new(ns),
                    global: first + w as u32,
                    state: Mutex::new(State::default()),
                    dirs: Mutex::new(Vec::new()),
                })
                .collect(),
        }
    }

    /// The job.
    pub fn job(&self) -> &MetaJob {
        &self.job
    }

    /// Whether worker `w` makes, stats and removes directory `d`.
    fn owns(&self, w: usize, d: usize) -> bool {
        !self.job.shared || self.owner[d] == self.parts[w].global % self.total
    }

    /// Makes the directories, untimed, when the job does not time `mkdir` itself (before the
    /// first stage, on every host, so that a shared tree is whole before anyone uses it).
    pub fn make_dirs(&self) -> std::io::Result<()> {
        if self.job.ops.contains(&MetaOp::Mkdir) {
            return Ok(());
        }
        for w in 0..self.parts.len() {
            let mut rec = Recorder::new();
            let mut left = 0;
            self.dir_pass(w, MetaOp::Mkdir, &mut rec, &mut left, &mut |_, _, _| true);
            if let Some(e) = rec.take().errors.entries().next() {
                return Err(std::io::Error::other(format!(
                    "{} directories could not be made ({})",
                    e.count,
                    e.kind.name()
                )));
            }
            let mut st = self.parts[w].state.lock().expect("a worker's state");
            st.dirs = true;
        }
        Ok(())
    }

    /// Brings worker `w`'s items to what `op` needs (untimed) and opens its directories.
    pub(crate) fn ready(&self, w: usize, op: MetaOp) {
        let part = &self.parts[w];
        let mut st = *part.state.lock().expect("a worker's state");
        let mut scratch = Recorder::new();
        let mut left = 0;
        let mut always = |_: &mut Recorder, _: Instant, _: u64| true;
        // A tree of its own: its directories as the operation needs them.
        if !self.job.shared {
            if op == MetaOp::Mkdir && st.dirs {
                if st.has_files() {
                    self.file_pass(w, MetaOp::Delete, st, u64::MAX, &mut scratch, &mut always);
                    st.no_files();
                }
                self.dir_pass(w, MetaOp::Rmdir, &mut scratch, &mut left, &mut always);
                st.dirs = false;
            } else if op != MetaOp::Mkdir && !st.dirs {
                self.dir_pass(w, MetaOp::Mkdir, &mut scratch, &mut left, &mut always);
                st.dirs = true;
            }
        }
        self.open_dirs(w);
        match op {
            MetaOp::Create | MetaOp::Rmdir | MetaOp::Mkdir if st.has_files() => {
                self.file_pass(w, MetaOp::Delete, st, u64::MAX, &mut scratch, &mut always);
                st.no_files();
            }
            MetaOp::Write
            | MetaOp::Stat
            | MetaOp::Open
            | MetaOp::Read
            | MetaOp::Rename
            | MetaOp::Delete
                if !st.has_files() =>
            {
                st.no_files();
                st.files =
                    self.file_pass(w, MetaOp::Create, st, u64::MAX, &mut scratch, &mut always);
            }
            _ => {}
        }
        *part.state.lock().expect("a worker's state") = st;
    }

    /// The directories that hold files, in order: every one, or the leaves alone.
    fn item_dirs<'a, D>(&'a self, dirs: &'a [Option<D>]) -> impl Iterator<Item = &'a Option<D>> {
        dirs.iter()
            .enumerate()
            .filter(|(d, _)| !self.job.leaf_only || !self.has_children[*d])
            .map(|(_, dir)| dir)
    }

    /// The wear-out after a create phase its time cut: worker `w`'s files made up to `upto`
    /// (of the tree's), untimed, when its create stopped short of that and none was removed
    /// since.
    pub(crate) fn top_up(&self, w: usize, upto: u64) {
        let part = &self.parts[w];
        let mut st = *part.state.lock().expect("a worker's state");
        if st.first > 0 || st.files == 0 || st.files >= upto {
            return;
        }
        let mut scratch = Recorder::new();
        let mut always = |_: &mut Recorder, _: Instant, _: u64| true;
        st.files = self.file_pass(w, MetaOp::Create, st, upto, &mut scratch, &mut always);
        *part.state.lock().expect("a worker's state") = st;
    }

    fn open_dirs(&self, w: usize) {
        let part = &self.parts[w];
        let mut name = String::new();
        let mut dirs: Vec<Option<N::Dir>> = Vec::with_capacity(self.parents.len());
        {
            let mut ns = part.ns.lock().expect("a worker's namespace");
            for (d, p) in self.parents.iter().enumerate() {
                let parent = match p {
                    Some(p) => dirs[*p as usize].as_ref(),
                    None => Some(&*part.top),
                };
                let opened = parent.and_then(|at| ns.open_dir(at, dir_name(&mut name, d)).ok());
                dirs.push(opened);
            }
        }
        *part.dirs.lock().expect("a worker's directories") = dirs;
    }

    /// Goes through worker `w`'s directories with `op` (mkdir in order, rmdir in reverse),
    /// recording each call; `each` is told of each (and says whether to go on).
    fn dir_pass(
        &self,
        w: usize,
        op: MetaOp,
        rec: &mut Recorder,
        items: &mut u64,
        each: &mut dyn FnMut(&mut Recorder, Instant, u64) -> bool,
    ) {
        let part = &self.parts[w];
        let mut dirs = part.dirs.lock().expect("a worker's directories");
        let mut ns = part.ns.lock().expect("a worker's namespace");
        let ns = &mut *ns;
        if dirs.len() != self.parents.len() {
            dirs.clear();
            dirs.resize_with(self.parents.len(), || None);
        }
        let stat_op = meta_stat_op(op);
        let mut name = String::new();
        let order: Box<dyn Iterator<Item = usize>> = if op == MetaOp::Rmdir {
            Box::new((0..self.parents.len()).rev())
        } else {
            Box::new(0..self.parents.len())
        };
        for d in order {
            if !self.owns(w, d) {
                continue;
            }
            let n = dir_name(&mut name, d);
            let start = Instant::now();
            let r = {
                let parent = match self.parents[d] {
                    Some(p) => dirs[p as usize].as_ref(),
                    None => Some(&*part.top),
                };
                match parent {
                    None => Err(std::io::Error::from_raw_os_error(libc::ENOENT)),
                    Some(at) => match op {
                        MetaOp::Mkdir => ns.mkdir(at, n),
                        MetaOp::Dirstat => ns.stat(at, n).map(|_| ()),
                        _ => ns.remove_dir(at, n),
                    },
                }
            };
            let now = Instant::now();
            record(rec, stat_op, 0, start, now, &r);
            *items += 1;
            // A directory made with children to come is opened for them (after its timing).
            if op == MetaOp::Mkdir && r.is_ok() && self.has_children[d] {
                let parent = match self.parents[d] {
                    Some(p) => dirs[p as usize].as_ref(),
                    None => Some(&*part.top),
                };
                dirs[d] = parent.and_then(|at| ns.open_dir(at, n).ok());
            }
            if op == MetaOp::Rmdir && r.is_ok() {
                dirs[d] = None;
            }
            if !each(rec, now, 0) {
                break;
            }
        }
    }

    /// Goes through worker `w`'s files with `op`, recording each call; returns the items gone
    /// through. `st` says which name the files carry.
    #[allow(clippy::too_many_arguments)]
    fn file_pass(
        &self,
        w: usize,
        op: MetaOp,
        st: State,
        upto: u64,
        rec: &mut Recorder,
        each: &mut dyn FnMut(&mut Recorder, Instant, u64) -> bool,
    ) -> u64 {
        let part = &self.parts[w];
        let dirs = part.dirs.lock().expect("a worker's directories");
        let mut ns = part.ns.lock().expect("a worker's namespace");
        let ns = &mut *ns;
        let size = self.job.file_size as usize;
        // Written by create unless write is a phase of its own (then create leaves it empty);
        // what is made untimed for other operations always holds its bytes.
        let create_bytes = if self.job.ops.contains(&MetaOp::Write) && !st.has_files() {
            0
        } else {
            size
        };
        let sync = self.job.fsync;
        let verify = self.job.verify_read;
        let buf = vec![FILL; size.min(1 << 20)];
        let mut rbuf = vec![0_u8; size.min(1 << 20)];
        let stat_op = meta_stat_op(op);
        let (mut name, mut other) = (String::new(), String::new());
        let files = u64::from(self.job.files);
        // The items it goes through: every one for create, those that may exist for the rest.
        let (first, limit) = match op {
            // From the first item not made yet (none made: from 0), up to `upto`.
            MetaOp::Create => (st.files, upto),
            _ => (st.first, st.files),
        };
        if op == MetaOp::Stat && self.job.random_order {
            // mdtest's -R: the items that exist, each once, in a scattered order (an affine
            // bijection of 0..count: no table, nothing allocated per call).
            let holders: Vec<&Option<N::Dir>> = self.item_dirs(&dirs).collect();
            let end = limit.min(holders.len() as u64 * files);
            let count = end.saturating_sub(first);
            let (a, c) = scatter(count);
            for k in 0..count {
                let i = first
                    + ((u128::from(k) * u128::from(a) + u128::from(c)) % u128::from(count)) as u64;
                let fname = file_name(&mut name, part.global, i % files, st.renamed);
                let start = Instant::now();
                let r = match holders[(i / files) as usize] {
                    None => Err(std::io::Error::from_raw_os_error(libc::ENOENT)),
                    Some(dir) => ns.stat(dir, fname).map(|_| ()),
                };
                let now = Instant::now();
                record(rec, stat_op, 0, start, now, &r);
                if !each(rec, now, 0) {
                    break;
                }
            }
            return end;
        }
        let mut n = 0u64;
        'all: for dir in self.item_dirs(&dirs) {
            for f in 0..files {
                if n >= limit {
                    break 'all;
                }
                n += 1;
                if n <= first {
                    continue;
                }
                let fname = file_name(&mut name, part.global, f, st.renamed);
                let start = Instant::now();
                let (r, bytes) = match dir {
                    None => (Err(std::io::Error::from_raw_os_error(libc::ENOENT)), 0),
                    Some(dir) => match op {
                        MetaOp::Create => (
                            ns.create(dir, fname, &buf, create_bytes, sync && create_bytes > 0),
                            create_bytes,
                        ),
                        MetaOp::Write => (ns.write(dir, fname, &buf, size, sync), size),
                        MetaOp::Stat => (ns.stat(dir, fname).map(|_| ()), 0),
                        MetaOp::Open => (ns.open(dir, fname), 0),
                        MetaOp::Read => {
                            let r = ns.read(dir, fname, &mut rbuf, size);
                            (
                                if verify {
                                    r.and_then(|()| check(&rbuf, size, rec))
                                } else {
                                    r
                                },
                                size,
                            )
                        }
                        MetaOp::Rename => {
                            let to = file_name(&mut other, part.global, f, true);
                            (ns.rename(dir, fname, to), 0)
                        }
                        _ => (ns.remove_file(dir, fname), 0),
                    },
                };
                let now = Instant::now();
                record(rec, stat_op, bytes as u64, start, now, &r);
                if !each(rec, now, bytes as u64) {
                    break 'all;
                }
            }
        }
        n
    }

    /// Runs `op` over worker `w`'s items, timed; `each` is told after every call and says
    /// whether to go on. Returns whether it went through them all.
    pub(crate) fn timed(
        &self,
        w: usize,
        op: MetaOp,
        rec: &mut Recorder,
        each: &mut dyn FnMut(&mut Recorder, Instant, u64) -> bool,
    ) -> bool {
        let mut st = *self.parts[w].state.lock().expect("a worker's state");
        let mut whole = true;
        let mut go = |rec: &mut Recorder, now: Instant, b: u64| {
            let on = each(rec, now, b);
            whole &= on;
            on
        };
        if op.on_dirs() {
            let mut items = 0;
            self.dir_pass(w, op, rec, &mut items, &mut go);
            match op {
                MetaOp::Mkdir => st.dirs = true,
                MetaOp::Rmdir => st.dirs = false,
                _ => {}
            }
        } else {
            let n = self.file_pass(w, op, st, u64::MAX, rec, &mut go);
            match op {
                MetaOp::Create => {
                    st.first = 0;
                    st.files = n;
                    st.renamed = false;
                }
                MetaOp::Rename => st.renamed = true,
                // Stopped halfway (the stage's end, a stop), the items from where it got to
                // are still there.
                MetaOp::Delete if n < st.files => st.first = n,
                MetaOp::Delete => st.no_files(),
                _ => {}
            }
        }
        *self.parts[w].state.lock().expect("a worker's state") = st;
        whole
    }

    /// Removes what this host's workers left (their files by the names they made, then, for
    /// trees of their own, their directories, deepest first; a shared tree's directories are
    /// tried by every host, the last to finish removing them). Returns a note for each thing
    /// that could not be removed; a shared directory another host still fills is not one.
    pub fn cleanup(&self) -> Vec<String> {
        let mut notes = Vec::new();
        let mut name = String::new();
        for (w, part) in self.parts.iter().enumerate() {
            let st = *part.state.lock().expect("a worker's state");
            self.open_dirs(w);
            let mut dirs = part.dirs.lock().expect("a worker's directories");
            let mut ns = part.ns.lock().expect("a worker's namespace");
            let ns = &mut *ns;
            if st.has_files() {
                let mut other = String::new();
                let mut n = 0u64;
                'all: for dir in self.item_dirs(&dirs) {
                    for f in 0..u64::from(self.job.files) {
                        if n >= st.files {
                            break 'all;
                        }
                        n += 1;
                        if n <= st.first {
                            continue;
                        }
                        let Some(dir) = dir else { continue };
                        let n = file_name(&mut name, part.global, f, st.renamed);
                        if let Err(e) = ns.remove_file(dir, n) {
                            // Stopped halfway through a rename: the other name.
                            let o = file_name(&mut other, part.global, f, !st.renamed);
                            if ns.remove_file(dir, o).is_err()
                                && e.kind() != std::io::ErrorKind::NotFound
                            {
                                notes.push(format!(
                                    "could not remove {}: {e}",
                                    N::shown(dir, &name)
                                ));
                            }
                        }
                    }
                }
            }
            if self.job.shared && w > 0 {
                continue;
            }
            for d in (0..self.parents.len()).rev() {
                let parent = match self.parents[d] {
                    Some(p) => dirs[p as usize].as_ref(),
                    None => Some(&*part.top),
                };
                let Some(at) = parent else { continue };
                let n = dir_name(&mut name, d);
                match ns.remove_dir(at, n) {
                    Ok(()) => {}
                    Err(e)
                        if e.kind() == std::io::ErrorKind::NotFound
                            || (self.job.shared && e.raw_os_error() == Some(libc::ENOTEMPTY)) => {}
                    Err(e) => notes.push(format!("could not remove {}: {e}", N::shown(at, n))),
                }
                dirs[d] = None;
            }
        }
        notes
    }
}

/// A multiplier coprime with `count` near its golden section, and an offset: `k -> (a*k + c)
/// mod count` visits each of `0..count` once, neighbours far apart.
fn scatter(count: u64) -> (u64, u64) {
    if count < 2 {
        return (1, 0);
    }
    let gcd = |mut x: u64, mut y: u64| {
        while y != 0 {
            (x, y) = (y, x % y);
        }
        x
    };
    let mut a = (count as f64 * 0.618_033_988_7) as u64 | 1;
    while gcd(a, count) != 1 {
        a += 1;
    }
    (a, count / 2)
}

/// mdtest's `-X`: the `size` bytes a read brought (at most the buffer, as `verify_read`
/// allows) are the ones every create and write puts in each file; counted as checked, and
/// a file that is not is `corrupt`.
fn check(rbuf: &[u8], size: usize, rec: &mut Recorder) -> std::io::Result<()> {
    let bad = rbuf[..size.min(rbuf.len())].iter().any(|b| *b != FILL);
    rec.record_verified(stormark_stats::Verified {
        objects: 1,
        bytes: size as u64,
        bad: u64::from(bad),
        ..Default::default()
    });
    if bad {
        Err(std::io::ErrorKind::InvalidData.into())
    } else {
        Ok(())
    }
}

fn record(
    rec: &mut Recorder,
    op: Op,
    bytes: u64,
    start: Instant,
    now: Instant,
    r: &std::io::Result<()>,
) {
    match r {
        Ok(()) => rec.record(
            op,
            bytes,
            now.saturating_duration_since(start).as_nanos() as u64,
        ),
        Err(e) => rec.record_error(op, kind_of(e), 0, 0),
    }
}

/// A failed call's kind: its errno, or `short` for a file that ended before its size (a
/// create that ran out of space left it so; the device reported no error).
fn kind_of(e: &std::io::Error) -> ErrorKind {
    match e.raw_os_error() {
        Some(errno) => ErrorKind::from_errno(errno),
        None if e.kind() == std::io::ErrorKind::UnexpectedEof => ErrorKind::Short,
        None if e.kind() == std::io::ErrorKind::InvalidData => ErrorKind::Corrupt,
        None => ErrorKind::Io,
    }
}

#[cfg(test)]
mod tests;
