//! fio's zoned block device mode (`zonemode=zbd`) as fio runs it on a regular file or a
//! conventional device (fio's `init_zone_info`): zones that start empty, each written only at
//! its write pointer, shared by every worker of every job on the file for the whole run. A
//! write goes to the pointer of the zone its offset falls in (or, when `max_open_zones` are
//! already open, of an open one), a full zone is reset before it is written again, reads stay
//! below the pointers, and a trim of a zone is its reset. Decisions follow fio's
//! `zbd_adjust_block` (zbd.c). As fio's zone locks, a zone serves one worker's I/Os at a
//! time: another worker's I/O to it waits until they are done (a zone's writes stay in the
//! order of its pointer, as a zoned drive needs).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use stormark_spec::Zoned;
use stormark_stats::Op;

use crate::offsets::IoReq;

/// The zones of one file (or device), shared by the workers using it.
#[derive(Debug)]
pub struct ZoneMap {
    /// A zone's bytes.
    zone: u64,
    /// The zones open for writing at once (0: no limit).
    max_open: u32,
    state: Mutex<ZoneState>,
    /// Signalled, one waiter at a time, when a zone is let go: zone `z` on `freed[z %
    /// FREED]` (a zone's waiters wake in turn, as on fio's zone mutex, not all at once).
    freed: Box<[Condvar]>,
    /// Workers that joined, for their marks.
    workers: AtomicU32,
}

/// A worker's part in fio's zoned mode, beside its other state (boxed: nothing of it on the
/// common path).
#[derive(Debug)]
pub(crate) struct Zoning {
    /// The file's zones.
    pub map: Arc<ZoneMap>,
    /// The worker's use of them.
    pub used: ZoneUse,
    /// Its I/Os in flight, each holding its zone.
    pub held: u32,
    /// An I/O drawn for a zone another worker held, issued next.
    pub parked: Option<IoReq>,
    /// Set when the last I/O asked for found its zone held by another worker.
    pub busy: bool,
    /// Whether the worker has written (a mixed job's reads are writes until then).
    pub wrote: bool,
}

/// The wake-up signals of a map's zones.
const FREED: usize = 1024;

/// Where [`ZoneMap::adjust`] put an I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placed {
    /// In a zone, now held by the worker until the I/O completes ([`ZoneMap::release`]).
    Go,
    /// In no zone: nothing to read or trim, or every open zone outside the region.
    Done,
    /// In a zone another worker holds, and this worker holds zones of its own: it should
    /// complete what it has in flight, then ask again (waiting then).
    Busy,
}

#[derive(Debug, Default)]
struct ZoneState {
    /// Bytes written in each zone (its write pointer less its start), by absolute zone index;
    /// grown as workers with regions further on join.
    wp: Vec<u64>,
    /// The zones open for writing, in the order opened.
    open: Vec<u32>,
    /// Bytes below every write pointer (fio's `wp_valid_data_bytes`).
    valid: u64,
    /// Writes left before the next reset fio's `zone_reset_frequency` makes.
    write_cnt: u64,
    /// Zones reset so far (full, by the reset rule, or by a trim).
    resets: u64,
    /// Each zone's holder (a worker's mark, 0: none) and its I/Os in flight there.
    held: Vec<(u32, u32)>,
}

impl ZoneState {
    /// Zone `i` empty again; a reset counted where it held data (fio's __zbd_reset_zone).
    fn reset(&mut self, i: usize) {
        if self.wp[i] > 0 {
            self.valid -= self.wp[i];
            self.wp[i] = 0;
            self.resets += 1;
        }
    }
}

/// Writes between two resets of fio's `zone_reset_frequency` (its `write_cnt`).
fn reset_every(rules: &Zoned) -> u64 {
    if rules.reset_frequency > 0.0 {
        (1.0 / rules.reset_frequency).min(f64::from(u32::MAX)) as u64
    } else {
        u64::MAX
    }
}

/// What one worker brings to the zones: its region of the file and the rules of its job.
#[derive(Debug, Clone, Copy)]
pub struct ZoneUse {
    /// The first whole zone of the worker's region.
    pub first: u64,
    /// The zone after its last.
    pub end: u64,
    /// Where the region starts in the file (requests' offsets are from there).
    pub start: u64,
    /// The worker's mark among the file's.
    pub me: u32,
    /// The smallest block: writes and reads are cut to whole ones.
    pub min_bs: u64,
    /// Random offsets (fio's `td_random`).
    pub random: bool,
    /// The job's zoned settings.
    pub rules: Zoned,
    /// The job checks what it writes (`--verify`): a full zone is never reset, writes go to
    /// zones with room, and none left ends them (fio's zbd_write_zone_get with verify).
    pub keep: bool,
}

impl ZoneMap {
    /// The zones of `rules.size` bytes of one file, all empty.
    pub fn new(rules: &Zoned) -> ZoneMap {
        ZoneMap {
            zone: rules.size,
            max_open: rules.max_open,
            state: Mutex::new(ZoneState {
                write_cnt: reset_every(rules),
                ..ZoneState::default()
            }),
            freed: (0..FREED).map(|_| Condvar::new()).collect(),
            workers: AtomicU32::new(0),
        }
    }

    /// A zone's bytes.
    pub fn zone_size(&self) -> u64 {
        self.zone
    }

    /// Bytes below every write pointer.
    pub fn bytes_held(&self) -> u64 {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).valid
    }

    /// Zones reset so far.
    pub fn resets(&self) -> u64 {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).resets
    }

    /// The use of a worker whose region is `len` bytes from `start`: the whole zones in it
    /// (fio rounds the region in to zone boundaries), `None` when it holds none.
    pub fn region(
        &self,
        start: u64,
        len: u64,
        min_bs: u64,
        random: bool,
        rules: Zoned,
    ) -> Option<ZoneUse> {
        let first = start.div_ceil(self.zone);
        let end = start.saturating_add(len) / self.zone;
        (end > first).then_some(ZoneUse {
            first,
            end,
            start,
            me: self.workers.fetch_add(1, Ordering::Relaxed) + 1,
            min_bs: min_bs.max(1),
            random,
            rules,
            keep: false,
        })
    }

    /// The zones' state, locked, holding every zone of `u`'s region.
    fn state_for(&self, u: &ZoneUse) -> std::sync::MutexGuard<'_, ZoneState> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.wp.len() < u.end as usize {
            st.wp.resize(u.end as usize, 0);
            st.held.resize(u.end as usize, (0, 0));
        }
        st
    }

    /// Whether zone `z` has no room for a block of `u`'s.
    fn full(&self, st: &ZoneState, z: u64, u: &ZoneUse) -> bool {
        st.wp[z as usize] + u.min_bs > self.zone
    }

    /// A checking job's region starts empty, as fio resets its zones before writing what it
    /// will verify (zbd_file_reset): what an earlier job of the run left there is let go.
    pub fn empty_region(&self, u: &ZoneUse) {
        let mut st = self.state_for(u);
        for z in u.first..u.end {
            st.reset(z as usize);
            st.open.retain(|&o| u64::from(o) != z);
        }
    }

    /// Moves `req` where the zones let it go, and holds its zone for the worker until it
    /// completes. A zone another worker holds is waited for when `holding` is false (the
    /// worker holds none, so the wait ends once that worker's I/Os there complete), else
    /// [`Placed::Busy`]. [`Placed::Done`] when no zone of the region can take it (nothing
    /// written to read or trim, every open zone outside it): the worker is done, as fio's job
    /// is at its `io_u_eof`.
    pub fn adjust(&self, req: &mut IoReq, u: &ZoneUse, holding: bool) -> Placed {
        let mut st = self.state_for(u);
        let at = u.start + req.offset;
        let z0 = (at / self.zone).clamp(u.first, u.end - 1);
        // The zone waited for last, whose turn this worker was woken for.
        let mut waited: Option<u64> = None;
        let z = loop {
            // The zone it goes to.
            let z = match req.op {
                Op::Write => self.write_zone(&mut st, u, at, z0),
                Op::Trim => self.trim_zone(&st, u, z0),
                _ if u.rules.read_beyond_wp => Some(z0),
                _ => self.read_zone(&st, u, at, z0),
            };
            let Some(z) = z else {
                return Placed::Done;
            };
            // Woken for a zone now free that this worker no longer wants: the turn goes on.
            if let Some(w) = waited
                .take()
                .filter(|&w| w != z && st.held[w as usize].0 == 0)
            {
                self.freed[w as usize % FREED].notify_one();
            }
            let (who, n) = st.held[z as usize];
            if who == 0 || who == u.me {
                st.held[z as usize] = (u.me, n + 1);
                break z;
            }
            if holding {
                return Placed::Busy;
            }
            // Bounded, so that a wait never outlives a stop by much.
            waited = Some(z);
            st = self.freed[z as usize % FREED]
                .wait_timeout(st, Duration::from_millis(50))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        };
        let (abs, len) = match req.op {
            Op::Write => self.write_at(&mut st, req, u, z),
            Op::Trim => self.trim_at(&mut st, z),
            _ if u.rules.read_beyond_wp => return Placed::Go,
            _ => self.read_at(&st, req, u, at, z0, z),
        };
        req.offset = abs - u.start;
        req.len = len as u32;
        Placed::Go
    }

    /// The I/O `req` (as [`ZoneMap::adjust`] placed it) completed: its zone is no longer
    /// held for it.
    pub fn release(&self, req: &IoReq, u: &ZoneUse) {
        let z = ((u.start + req.offset) / self.zone) as usize;
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(h) = st.held.get_mut(z) {
            h.1 = h.1.saturating_sub(1);
            if h.1 == 0 {
                *h = (0, 0);
                drop(st);
                self.freed[z % FREED].notify_one();
            }
        }
    }

    /// The zone of a write: the offset's, open or opened now, or, when `max_open_zones` are
    /// open, one of those.
    fn write_zone(&self, st: &mut ZoneState, u: &ZoneUse, at: u64, z0: u64) -> Option<u64> {
        // A checking job never resets a full zone: the next zone with room instead.
        let full = |st: &ZoneState, z: u64| self.full(st, z, u);
        let z0 = if u.keep && full(st, z0) {
            let n = u.end - u.first;
            (1..n)
                .map(|d| u.first + (z0 - u.first + d) % n)
                .find(|&z| !full(st, z))?
        } else {
            z0
        };
        if st.open.contains(&(z0 as u32)) {
            return Some(z0);
        }
        if self.max_open == 0 || (st.open.len() as u32) < self.max_open {
            st.open.push(z0 as u32);
            return Some(z0);
        }
        // fio's pick_random_zone_idx: an open zone by where the offset fell, the next one of
        // this region's from there.
        let region = (u.end - u.first) * self.zone;
        let n = st.open.len();
        let from = ((at - u.first * self.zone).min(region - 1) * n as u64 / region) as usize;
        (0..n)
            .map(|i| u64::from(st.open[(from + i) % n]))
            .find(|z| (u.first..u.end).contains(z) && !(u.keep && full(st, *z)))
    }

    /// A write at zone `z`'s pointer, the zone reset first when full or due a reset by fio's
    /// `zone_reset_frequency`; a zone filled leaves the open ones (fio's zbd_end_zone_io).
    fn write_at(&self, st: &mut ZoneState, req: &IoReq, u: &ZoneUse, z: u64) -> (u64, u64) {
        let rules = &u.rules;
        let mut reset = false;
        if rules.reset_frequency > 0.0 {
            let region = ((u.end - u.first) * self.zone) as f64;
            if st.valid as f64 >= region * rules.reset_threshold {
                st.write_cnt = st.write_cnt.saturating_sub(1);
                if st.write_cnt == 0 {
                    st.write_cnt = reset_every(rules);
                    reset = true;
                }
            }
        }
        let i = z as usize;
        if (reset || self.full(st, z, u)) && !u.keep {
            st.reset(i);
        }
        let left = self.zone - st.wp[i];
        let len = u64::from(req.len).min(left) / u.min_bs * u.min_bs;
        let abs = z * self.zone + st.wp[i];
        st.wp[i] += len;
        st.valid += len;
        if self.full(st, z, u) {
            st.open.retain(|&o| o != z as u32);
        }
        (abs, len)
    }

    /// The zone of a read below the pointers: the offset's if it holds a block there (a
    /// sequential read: at its offset), else the nearest that does (fio's zbd_find_zone).
    fn read_zone(&self, st: &ZoneState, u: &ZoneUse, at: u64, z0: u64) -> Option<u64> {
        let wp = st.wp[z0 as usize];
        let behind = !u.random && at + u.min_bs > z0 * self.zone + wp;
        if wp < u.min_bs || behind {
            self.find(st, z0, u, u.min_bs)
        } else {
            Some(z0)
        }
    }

    /// Where a read in zone `z` goes: at its offset when that is in the written part of
    /// `z0`; else at the start of `z` (sequential) or as far into its written part as the
    /// offset was into `z0`'s, modulo its length (random, fio's); cut at the pointer.
    fn read_at(
        &self,
        st: &ZoneState,
        req: &IoReq,
        u: &ZoneUse,
        at: u64,
        z0: u64,
        z: u64,
    ) -> (u64, u64) {
        let len = u64::from(req.len);
        let start = z * self.zone;
        let range = st.wp[z as usize];
        let mut abs = if z == z0 || u.random { at } else { start };
        if range <= len {
            abs = start;
        } else if u.random {
            abs = start + ((at - z0 * self.zone) % (range - len)) / u.min_bs * u.min_bs;
        }
        (abs, len.min(start + range - abs) / u.min_bs * u.min_bs)
    }

    /// The zone nearest `z0` holding at least `least` bytes: after it, and for random I/O
    /// also before it, alternately.
    fn find(&self, st: &ZoneState, z0: u64, u: &ZoneUse, least: u64) -> Option<u64> {
        let holds = |z: u64| st.wp[z as usize] >= least;
        for d in 1..(u.end - u.first) {
            if z0 + d < u.end && holds(z0 + d) {
                return Some(z0 + d);
            }
            if u.random && z0 >= u.first + d && holds(z0 - d) {
                return Some(z0 - d);
            }
        }
        None
    }

    /// The zone a trim resets: the offset's, or for a random trim of an empty zone the
    /// nearest with data.
    fn trim_zone(&self, st: &ZoneState, u: &ZoneUse, z0: u64) -> Option<u64> {
        if u.random && st.wp[z0 as usize] == 0 {
            self.find(st, z0, u, 1)
        } else {
            Some(z0)
        }
    }

    /// A trim is its zone's reset (fio's zbd_do_io_u_trim), over the whole zone.
    fn trim_at(&self, st: &mut ZoneState, z: u64) -> (u64, u64) {
        st.reset(z as usize);
        st.open.retain(|&o| o != z as u32);
        (z * self.zone, self.zone)
    }
}

/// fio's zoned mode in a worker's loop: its next I/O placed in the zones, and each one's zone
/// let go once it completes.
impl crate::ctx::Ctx<'_> {
    /// fio's zoned mode: the next I/O moved to a write pointer, below one, or to a zone's
    /// start (a trim), its zone held until it completes; a sequential read's stream goes on
    /// from where it was moved. `None` with `busy` set when the zone is another
    /// worker's and this one has I/Os in flight (it completes them, then asks again); `None`
    /// alone when no zone can take it: the worker is done, as fio's job is.
    #[cold]
    #[inline(never)]
    pub(crate) fn next_in_zones(&mut self) -> Option<IoReq> {
        let parked = self.zones.as_mut()?.parked.take();
        let mut req = match parked {
            Some(r) => r,
            None => self.gen.next_io()?,
        };
        let z = self.zones.as_mut()?;
        // fio's zbd_adjust_ddir: a mixed job's reads are writes until it has written, so
        // that its first reads find data.
        if req.op == Op::Read
            && !z.wrote
            && self.spec.read_pct < 100
            && !z.used.rules.read_beyond_wp
        {
            req.op = Op::Write;
        }
        z.wrote |= req.op == Op::Write;
        let was = req.offset;
        match z.map.adjust(&mut req, &z.used, z.held > 0) {
            crate::zoned::Placed::Go => {}
            crate::zoned::Placed::Busy => {
                z.parked = Some(req);
                z.busy = true;
                return None;
            }
            crate::zoned::Placed::Done => {
                self.io_total = self.issued;
                return None;
            }
        }
        z.held += 1;
        if req.op == Op::Read && !z.used.random && req.offset != was {
            self.gen
                .seq_resume(req.file, req.op, req.offset + u64::from(req.len));
        }
        self.issued += u64::from(req.len);
        Some(req)
    }

    /// fio's zoned mode: an I/O completed, its zone let go (each backend's loop calls it
    /// after the I/O's completion, where the job is zoned).
    #[cold]
    #[inline(never)]
    pub fn zone_done(&mut self, req: &IoReq) {
        if let Some(z) = &mut self.zones {
            z.map.release(req, &z.used);
            z.held -= 1;
        }
    }

    /// fio's zoned mode: whether the last `next_req` found its zone held by another worker
    /// (the flag cleared).
    pub fn zone_was_busy(&mut self) -> bool {
        self.zones
            .as_mut()
            .is_some_and(|z| std::mem::take(&mut z.busy))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(max_open: u32) -> Zoned {
        Zoned {
            size: 1 << 20,
            max_open,
            reset_threshold: 1.0,
            reset_frequency: 0.0,
            read_beyond_wp: false,
        }
    }

    fn req(op: Op, offset: u64, len: u32) -> IoReq {
        IoReq {
            op,
            file: 0,
            offset,
            len,
        }
    }

    /// Writes land at the write pointers in order, a full zone is reset before the next
    /// write to it, and reads stay below the pointers.
    #[test]
    fn writes_go_to_the_write_pointer_and_reads_stay_below_it() {
        let r = rules(0);
        let map = ZoneMap::new(&r);
        let u = map.region(0, 4 << 20, 64 << 10, true, r).unwrap();
        let mut at = Vec::new();
        for _ in 0..17 {
            let mut q = req(Op::Write, (2 << 20) + 12345, 64 << 10);
            assert_eq!(map.adjust(&mut q, &u, false), Placed::Go);
            at.push(q.offset);
        }
        // 16 blocks fill zone 2, the 17th resets it and starts again at its start.
        let want: Vec<u64> = (0..16)
            .map(|i| (2 << 20) + i * (64 << 10))
            .chain([2 << 20])
            .collect();
        assert_eq!(at, want);
        assert_eq!(map.resets(), 1);
        // Zone 2 holds one block now: a read anywhere lands in it.
        let mut q = req(Op::Read, 0, 64 << 10);
        assert_eq!(map.adjust(&mut q, &u, false), Placed::Go);
        assert_eq!((q.offset, q.len), (2 << 20, 64 << 10));
        // An empty map has nothing to read.
        let empty = ZoneMap::new(&r);
        assert_eq!(
            empty.adjust(&mut req(Op::Read, 0, 4096), &u, false),
            Placed::Done
        );
    }

    /// With max_open_zones, writes beyond the open zones go to an open one; a zone filled
    /// leaves them, and the next write opens another.
    #[test]
    fn open_zones_are_limited() {
        let r = rules(2);
        let map = ZoneMap::new(&r);
        let u = map.region(0, 8 << 20, 512 << 10, true, r).unwrap();
        let zone_of = |map: &ZoneMap, off: u64| {
            let mut q = req(Op::Write, off, 512 << 10);
            assert_eq!(map.adjust(&mut q, &u, false), Placed::Go);
            q.offset >> 20
        };
        assert_eq!(zone_of(&map, 1 << 20), 1);
        assert_eq!(zone_of(&map, 5 << 20), 5);
        // A third zone may not open: the write goes to zone 1 or 5.
        let z = zone_of(&map, 7 << 20);
        assert!(z == 1 || z == 5, "{z}");
        // That zone is full now (two blocks of half a zone): it leaves, zone 7 may open.
        assert_eq!(zone_of(&map, 7 << 20), 7);
    }

    /// fio's zone_reset_frequency: above the threshold, every 1/frequency-th write resets
    /// its zone first; and a trim resets the zone it falls in.
    #[test]
    fn resets_by_the_rule_and_by_trims() {
        let r = Zoned {
            reset_threshold: 0.5,
            reset_frequency: 0.25,
            ..rules(0)
        };
        let map = ZoneMap::new(&r);
        let u = map.region(0, 2 << 20, 256 << 10, false, r).unwrap();
        for i in 0..4 {
            let mut q = req(Op::Write, i * (256 << 10), 256 << 10);
            assert_eq!(map.adjust(&mut q, &u, false), Placed::Go);
        }
        assert_eq!(map.resets(), 0, "below half the region, no reset");
        // Zone 0 full: the next write to it resets it anyway; from then on every fourth.
        let mut writes = 0;
        while map.resets() < 3 {
            let mut q = req(Op::Write, 1 << 20, 256 << 10);
            assert_eq!(map.adjust(&mut q, &u, false), Placed::Go);
            writes += 1;
        }
        assert!(writes <= 16, "{writes}");
        let mut t = req(Op::Trim, 0, 1 << 20);
        let before = map.resets();
        assert_eq!(map.adjust(&mut t, &u, false), Placed::Go);
        assert_eq!((t.offset, t.len), (0, 1 << 20));
        assert_eq!(map.resets(), before + 1);
    }

    /// A zone serves one worker's I/Os at a time: another worker holding zones of its own
    /// is told it is busy, one holding none waits until the zone is let go.
    #[test]
    fn a_zone_serves_one_worker_at_a_time() {
        let r = rules(0);
        let map = std::sync::Arc::new(ZoneMap::new(&r));
        let a = map.region(0, 2 << 20, 4096, false, r).unwrap();
        let b = map.region(0, 2 << 20, 4096, false, r).unwrap();
        let mut qa = req(Op::Write, 0, 4096);
        assert_eq!(map.adjust(&mut qa, &a, false), Placed::Go);
        // The same worker again: its zone.
        let mut qa2 = req(Op::Write, 0, 4096);
        assert_eq!(map.adjust(&mut qa2, &a, true), Placed::Go);
        assert_eq!(qa2.offset, 4096);
        assert_eq!(
            map.adjust(&mut req(Op::Write, 0, 4096), &b, true),
            Placed::Busy
        );
        let waiter = {
            let map = map.clone();
            std::thread::spawn(move || {
                let mut q = req(Op::Write, 0, 4096);
                (map.adjust(&mut q, &b, false), q.offset)
            })
        };
        std::thread::sleep(Duration::from_millis(120));
        assert!(!waiter.is_finished(), "it waits while the zone is held");
        map.release(&qa, &a);
        map.release(&qa2, &a);
        assert_eq!(waiter.join().unwrap(), (Placed::Go, 8192));
    }

    /// A region rounds in to whole zones; one holding none is refused.
    #[test]
    fn regions_round_in_to_whole_zones() {
        let r = rules(0);
        let map = ZoneMap::new(&r);
        let u = map.region(1000, 3 << 20, 4096, false, r).unwrap();
        assert_eq!((u.first, u.end), (1, 3));
        assert!(map.region(1000, 1 << 20, 4096, false, r).is_none());
    }
}
