//! The offset generator: operation, file, offset and length of the next I/O, from a fast
//! per-worker random number generator (no shared state, no syscalls).

use stormark_spec::Distribution;
use stormark_stats::Op;

pub use map::{RandomMap, RANDOM_MAP_MAX_BLOCKS};
use skew::Skew;
use sprandom::SpRandomGen;

/// One I/O to issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoReq {
    /// Read or write.
    pub op: Op,
    /// Index into the worker's files.
    pub file: u32,
    /// Byte offset.
    pub offset: u64,
    /// Byte length.
    pub len: u32,
}

impl IoReq {
    /// Copies this I/O into `to` field by field. A whole copy reads the fields back in wide
    /// loads, which wait for their narrower stores to land where the I/O was just written
    /// (a store-forwarding stall: 10 to 20% of the io_uring loop's own time).
    #[inline(always)]
    pub fn copy_to(&self, to: &mut IoReq) {
        to.op = self.op;
        to.file = self.file;
        to.offset = self.offset;
        to.len = self.len;
    }
}

/// What a worker's I/Os look like: the mix, the sizes and where random ones fall.
#[derive(Debug, Clone, Copy)]
pub struct Pattern {
    /// Share of reads, percent.
    pub read_pct: u8,
    /// Share of random offsets, percent.
    pub random_pct: u8,
    /// Smallest block.
    pub bs_min: u64,
    /// Largest block (`bs_max - bs_min` a multiple of `bs_align`).
    pub bs_max: u64,
    /// Alignment of offsets and of sizes drawn from the range.
    pub bs_align: u64,
    /// How random offsets fall.
    pub dist: Distribution,
    /// Block sizes by share (fio's `bssplit`) instead of drawn evenly from the range.
    pub split: Option<stormark_spec::BsSplit>,
    /// Bytes a sequential stream moves on (or back) after each I/O beyond it (fio's
    /// `rw=read:-8k`).
    pub seq_add: i64,
    /// I/Os from each random offset before a new one is drawn (fio's `rw=randread:N`; 1:
    /// each its own).
    pub rand_run: u32,
    /// Within such a run, the same offset again rather than the next (fio's
    /// `rw_sequencer=identical`).
    pub rand_run_same: bool,
    /// Random offsets visit each block once per pass, as fio's random map (when every I/O is
    /// one block of the alignment, uniform, one per offset; see [`RandomMap`]).
    pub random_map: bool,
    /// fio's strided zones: the I/Os fall in one zone of each file at a time (see
    /// [`stormark_spec::Zones`]).
    pub zones: Option<stormark_spec::Zones>,
    /// Trims instead of reads and writes: 1 trims only, 2 each trim followed by a write of
    /// the same range (fio's `trimwrite`).
    pub trim: u8,
    /// fio's SPRandom preconditioning: writes of one block at offsets of its own, and no more
    /// once it is done (see [`sprandom::SpRandomGen`]).
    pub sprandom: Option<stormark_spec::SpRandom>,
}

impl Pattern {
    /// Reads or writes (`read_pct`), random or not (`random_pct`), of one size, uniform.
    pub fn fixed(read_pct: u8, random_pct: u8, bs: u64) -> Pattern {
        Pattern {
            read_pct,
            random_pct,
            bs_min: bs,
            bs_max: bs,
            bs_align: bs,
            dist: Distribution::Random,
            split: None,
            seq_add: 0,
            rand_run: 1,
            rand_run_same: false,
            random_map: false,
            zones: None,
            trim: 0,
            sprandom: None,
        }
    }
}

/// Draws I/Os for one worker. Random offsets are uniform over the aligned positions of a file
/// (like fio with `norandommap`); sequential ones continue per file and per operation (as
/// fio's `last_pos[ddir]`) and wrap at the end. Files are used round-robin (fio's
/// `file_service_type=roundrobin`).
#[derive(Debug, Clone)]
pub struct OffsetGen {
    rng: u64,
    /// The last I/O of every path but the fast one ([`OffsetGen::next_other`]).
    special: IoReq,
    read_pct: u8,
    random_pct: u8,
    bs_min: u64,
    bs_align: u64,
    /// `bs_align`'s power of two, where it is one (as it nearly always is).
    align_shift: Option<u32>,
    bs_slots: u64,
    file_lens: Vec<u64>,
    seq_pos: Vec<[u64; 2]>,
    next_file: usize,
    once: bool,
    /// Neither a one-pass generator nor trims: the common path (one check per I/O).
    plain: bool,
    /// Random offsets uniform, one per I/O: the common random path (no skew, no run).
    uniform: bool,
    /// Only reads or only writes (`fast_op`), of one size, every offset one uniform draw:
    /// the benchmark's usual job, whose I/O is a draw and a multiply ([`OffsetGen::next_io`]).
    fast: bool,
    fast_op: Op,
    /// Per file, how many positions its random offsets are drawn from (`fast` only).
    positions: Vec<u64>,
    /// Per file, how its random offsets are skewed (empty: uniform, the common case).
    skew: Vec<Skew>,
    /// fio's `bssplit`, cumulative, for reads and for writes (empty: sizes drawn evenly from
    /// the range).
    split: [Box<[(u8, u64)]>; 2],
    /// What a sequential stream adds after each I/O beyond it.
    seq_add: i64,
    /// fio's `randread:N` (1: every random I/O its own offset), and what is left of the run
    /// under way.
    rand_run: u32,
    run_left: u32,
    rand_run_same: bool,
    /// Per file, the last random run's offset and where its next I/O goes.
    run_at: Vec<[u64; 2]>,
    /// Trims (see [`Pattern::trim`]), and the write due after a trim of `trimwrite`.
    trim: u8,
    then_write: Option<IoReq>,
    /// Per file, fio's random map (empty: offsets drawn with repeats).
    maps: Vec<RandomMap>,
    /// fio's strided zones, where asked.
    zone: Option<Box<ZoneWalk>>,
    /// fio's SPRandom preconditioning, where asked.
    spr: Option<Box<SpRandomGen>>,
}

/// Where fio's strided zones have got to: the bytes moved in the current zone, and each
/// file's current zone start.
#[derive(Debug, Clone)]
struct ZoneWalk {
    zones: stormark_spec::Zones,
    bytes: u64,
    start: Vec<u64>,
}

/// Where a sequential stream goes after an I/O of `len` at `at` with a step `add`; before the
/// start wraps as past the end does (to the last block).
#[inline(never)]
fn stepped(at: u64, len: u64, add: i64) -> u64 {
    u64::try_from(at as i64 + len as i64 + add).unwrap_or(u64::MAX / 2)
}

/// wyrand (Wang Yi): one multiply per draw, passes BigCrush; plenty for offsets.
#[inline]
pub(crate) fn wyrand(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0xA076_1D64_78BD_642F);
    let t = u128::from(*state) * u128::from(*state ^ 0xE703_7ED1_A0B4_28DB);
    ((t >> 64) ^ t) as u64
}

impl OffsetGen {
    /// A generator over files of `file_lens` bytes. `bs_max - bs_min` must be a multiple of
    /// `bs_align`, and every file at least `bs_max` long.
    pub fn new(file_lens: Vec<u64>, pattern: Pattern, seed: u64) -> OffsetGen {
        let Pattern {
            read_pct,
            random_pct,
            bs_min,
            bs_max,
            bs_align,
            dist,
            split,
            seq_add,
            rand_run,
            rand_run_same,
            random_map,
            zones,
            trim,
            sprandom,
        } = pattern;
        // In zones, random offsets fall over a zone's length, not the file's.
        let span = |len: u64| zones.map_or(len, |z| z.range.min(len));
        // fio's random map, where each I/O is one block of the alignment drawn uniformly.
        let mapped = random_map
            && random_pct > 0
            && bs_min == bs_max
            && bs_align == bs_min
            && split.is_none()
            && dist == Distribution::Random
            && rand_run <= 1
            && trim == 0
            && file_lens
                .iter()
                .all(|&l| span(l) / bs_align <= RANDOM_MAP_MAX_BLOCKS);
        let maps = if mapped {
            file_lens
                .iter()
                .map(|&l| RandomMap::new(span(l) / bs_align))
                .collect()
        } else {
            Vec::new()
        };
        // A bssplit as cumulative shares: (share up to here, size).
        let cumulative = |list: &[(u64, u8)]| -> Box<[(u8, u64)]> {
            let mut acc = 0u8;
            list.iter()
                .map(|&(size, pct)| {
                    acc += pct;
                    (acc, size)
                })
                .collect()
        };
        let split = split
            .map(|s| [cumulative(s.reads()), cumulative(s.writes())])
            .unwrap_or_default();
        let bs_slots = (bs_max - bs_min) / bs_align + 1;
        let n = file_lens.len();
        // A file's positions are where the largest block still fits; files of one length
        // share the work of setting up their skew.
        let mut skew: Vec<Skew> = Vec::new();
        if dist != Distribution::Random {
            let mut last: Option<(u64, Skew)> = None;
            for &len in &file_lens {
                let positions = span(len).saturating_sub(bs_max) / bs_align + 1;
                let s = match &last {
                    Some((p, s)) if *p == positions => s.clone(),
                    _ => Skew::new(dist, positions).expect("a skewed distribution"),
                };
                last = Some((positions, s.clone()));
                skew.push(s);
            }
        }
        let spr = sprandom.map(|s| {
            let len = file_lens.first().copied().unwrap_or(0);
            Box::new(SpRandomGen::new(s, len, bs_min, seed))
        });
        let plain = trim == 0 && zones.is_none() && sprandom.is_none();
        let uniform = dist == Distribution::Random && rand_run <= 1 && !mapped;
        let fast = plain
            && uniform
            && random_pct == 100
            && (read_pct == 100 || read_pct == 0)
            && bs_slots == 1
            && file_lens.iter().all(|&l| l >= bs_min);
        // As the common path counts them: the aligned places where a block still fits.
        let positions = if fast {
            file_lens
                .iter()
                .map(|&l| (l - bs_min) / bs_align + 1)
                .collect()
        } else {
            Vec::new()
        };
        OffsetGen {
            special: IoReq {
                op: Op::Read,
                file: 0,
                offset: 0,
                len: 0,
            },
            rng: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            read_pct,
            random_pct,
            bs_min,
            bs_align,
            align_shift: bs_align
                .is_power_of_two()
                .then(|| bs_align.trailing_zeros()),
            bs_slots,
            file_lens,
            seq_pos: vec![[0; 2]; n],
            next_file: 0,
            once: false,
            plain,
            uniform,
            fast,
            fast_op: if read_pct == 100 { Op::Read } else { Op::Write },
            positions,
            skew,
            split,
            seq_add,
            rand_run: rand_run.max(1),
            run_left: 0,
            rand_run_same,
            run_at: if rand_run > 1 {
                vec![[0; 2]; n]
            } else {
                Vec::new()
            },
            trim,
            then_write: None,
            maps,
            zone: zones.map(|zones| {
                Box::new(ZoneWalk {
                    zones,
                    bytes: 0,
                    start: vec![0; n],
                })
            }),
            spr,
        }
    }

    /// A generator that writes every file once, front to back, file after file, then ends:
    /// the preparation pass. The last piece of a file may be shorter than `bs`.
    pub fn write_once(file_lens: Vec<u64>, bs: u64) -> OffsetGen {
        OffsetGen {
            once: true,
            plain: false,
            fast: false,
            ..OffsetGen::new(file_lens, Pattern::fixed(0, 0, bs), 1)
        }
    }

    #[inline]
    fn next_u64(&mut self) -> u64 {
        wyrand(&mut self.rng)
    }

    /// How many whole alignments `n` bytes hold: by a shift where the alignment is a power of
    /// two (a division per I/O was 4% of the io_uring loop's time on page-cached reads).
    #[inline]
    fn blocks(&self, n: u64) -> u64 {
        match self.align_shift {
            Some(s) => n >> s,
            None => n / self.bs_align,
        }
    }

    /// A number in `0..n` without division (Lemire's multiply-shift).
    #[inline]
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// The next I/O, or `None` when a one-pass generator is done. Always inline, as
    /// [`crate::ctx::Ctx::next_req`]: the usual job's I/O is drawn here, in a few
    /// instructions; every other one by [`OffsetGen::next_other`], out of line, so that the
    /// loops that call this keep their code small (docs/performance.md).
    #[inline(always)]
    pub fn next_io(&mut self) -> Option<IoReq> {
        if self.fast {
            // The same draws as the common path's, with its sums worked out once.
            let file = self.next_file;
            self.next_file += 1;
            if self.next_file == self.positions.len() {
                self.next_file = 0;
            }
            let offset = self.below(self.positions[file]) * self.bs_align;
            return Some(IoReq {
                op: self.fast_op,
                file: file as u32,
                offset,
                len: self.bs_min as u32,
            });
        }
        // Handed over in `self.special`, not returned: returned, it was merged with the
        // fast path's I/O in memory, and every I/O paid a store-forwarding stall.
        if !self.next_other() {
            return None;
        }
        let r = &self.special;
        Some(IoReq {
            op: r.op,
            file: r.file,
            offset: r.offset,
            len: r.len,
        })
    }

    /// Any I/O but the fast path's, left in `self.special`; `false` when a one-pass generator
    /// is done.
    #[inline(never)]
    fn next_other(&mut self) -> bool {
        if !self.plain {
            return self.next_special();
        }
        let op = self.next_op();
        let len = self.next_len(op);
        let file = self.next_file;
        self.next_file += 1;
        if self.next_file == self.file_lens.len() {
            self.next_file = 0;
        }
        let file_len = self.file_lens[file];
        let random = match self.random_pct {
            100 => true,
            0 => false,
            p => self.below(100) < u64::from(p),
        };
        let offset = if random && self.uniform {
            self.below(self.blocks(file_len - len) + 1) * self.bs_align
        } else if random {
            self.other_random(file, len)
        } else {
            let pos = &mut self.seq_pos[file][op.index()];
            if *pos + len > file_len {
                // Past the end: from the start, or going backwards from the last block.
                *pos = if self.seq_add < 0 {
                    (file_len - len) / self.bs_align * self.bs_align
                } else {
                    0
                };
            }
            let at = *pos;
            *pos = if self.seq_add == 0 {
                at + len
            } else {
                stepped(at, len, self.seq_add)
            };
            at
        };
        self.special = IoReq {
            op,
            file: file as u32,
            offset,
            len: len as u32,
        };
        true
    }

    /// A sequential stream of `op` on `file` goes on from `at` (fio's zoned mode moved its
    /// last I/O).
    pub fn seq_resume(&mut self, file: u32, op: Op, at: u64) {
        if let Some(p) = self.seq_pos.get_mut(file as usize) {
            p[op.index()] = at;
        }
    }

    /// The next I/O's operation: a read or a write by the mix.
    #[inline(always)]
    fn next_op(&mut self) -> Op {
        match self.read_pct {
            100 => Op::Read,
            0 => Op::Write,
            p => {
                if self.below(100) < u64::from(p) {
                    Op::Read
                } else {
                    Op::Write
                }
            }
        }
    }

    /// The next I/O's length: the one block size, a bssplit's (the reads' or the writes' for
    /// `op`), or one drawn from the range.
    #[inline(always)]
    fn next_len(&mut self, op: Op) -> u64 {
        if self.bs_slots == 1 {
            self.bs_min
        } else if !self.split[0].is_empty() {
            self.split_len(op)
        } else {
            self.bs_min + self.below(self.bs_slots) * self.bs_align
        }
    }

    /// A block size of a bssplit (kept out of the common path's code).
    #[inline(never)]
    fn split_len(&mut self, op: Op) -> u64 {
        let pick = self.below(100) as u8;
        self.split[usize::from(op != Op::Read)]
            .iter()
            .find(|s| pick < s.0)
            .map_or(self.bs_min, |s| s.1)
    }

    /// A random offset of a skewed distribution (kept out of the common path's code).
    #[inline(never)]
    fn skewed_offset(&mut self, file: usize) -> u64 {
        self.skew[file].draw(&mut self.rng) * self.bs_align
    }

    /// The preparation pass's next write, or a trim, zoned or sprandom pattern's next I/O,
    /// left in `self.special` (kept out of the common path's code); `false` when a one-pass
    /// generator is done.
    #[cold]
    #[inline(never)]
    fn next_special(&mut self) -> bool {
        let req = if self.once {
            self.next_once()
        } else if let Some(spr) = &mut self.spr {
            spr.next().map(|offset| IoReq {
                op: Op::Write,
                file: 0,
                offset,
                len: self.bs_min as u32,
            })
        } else if self.zone.is_some() {
            Some(self.next_zoned())
        } else {
            Some(self.next_trim())
        };
        match req {
            Some(r) => {
                self.special = r;
                true
            }
            None => false,
        }
    }

    /// The next I/O of fio's strided zones (`setup_strided_zone_mode`): once the zone's
    /// bytes are moved, the file's zone moves on by its range and skip (to the start when
    /// that leaves no block before the end), sequential streams and the random map start
    /// over there; each I/O falls within the zone, a sequential stream going round it again.
    #[inline(never)]
    fn next_zoned(&mut self) -> IoReq {
        let op = self.next_op();
        let len = self.next_len(op);
        let file = self.next_file;
        self.next_file = (self.next_file + 1) % self.file_lens.len();
        let file_len = self.file_lens[file];
        let walk = self.zone.as_mut().expect("a zoned generator");
        let z = walk.zones;
        if walk.bytes >= z.size {
            walk.bytes = 0;
            let next = walk.start[file]
                .saturating_add(z.range)
                .saturating_add(z.skip);
            walk.start[file] = if next.saturating_add(len) > file_len {
                0
            } else {
                next
            };
            self.seq_pos[file] = [walk.start[file]; 2];
            if let Some(m) = self.maps.get_mut(file) {
                m.clear();
            }
        }
        walk.bytes += len;
        let start = walk.start[file];
        let end = start.saturating_add(z.range).min(file_len);
        let random = match self.random_pct {
            100 => true,
            0 => false,
            p => self.below(100) < u64::from(p),
        };
        let offset = if random {
            let within = if !self.maps.is_empty() {
                let blocks = self.maps[file].blocks;
                let drawn = self.below(blocks);
                self.maps[file].take(drawn) * self.bs_align
            } else if !self.skew.is_empty() {
                self.skewed_offset(file)
            } else {
                self.below(self.blocks(end - start - len) + 1) * self.bs_align
            };
            // A zone cut short by the file's end holds fewer blocks than the map or skew.
            if start + within + len <= end {
                start + within
            } else {
                start
            }
        } else {
            let pos = &mut self.seq_pos[file][op.index()];
            if *pos < start || *pos + len > end {
                *pos = start;
            }
            let at = *pos;
            *pos += len;
            at
        };
        IoReq {
            op,
            file: file as u32,
            offset,
            len: len as u32,
        }
    }

    /// A random offset that is not one uniform draw: a skewed distribution's, or one of
    /// fio's `randread:N` runs (kept out of the common path's code).
    #[inline(never)]
    fn other_random(&mut self, file: usize, len: u64) -> u64 {
        if !self.maps.is_empty() {
            let blocks = self.maps[file].blocks;
            let drawn = self.below(blocks);
            self.maps[file].take(drawn) * self.bs_align
        } else if self.rand_run > 1 {
            self.run_offset(file, len)
        } else {
            self.skewed_offset(file)
        }
    }

    /// A random offset of fio's `randread:N`: a new one drawn every N I/Os, the ones between
    /// going on from it (or, `rw_sequencer=identical`, repeating it), wrapping at the end
    /// (kept out of the common path's code).
    #[inline(never)]
    fn run_offset(&mut self, file: usize, len: u64) -> u64 {
        let file_len = self.file_lens[file];
        let at = if self.run_left == 0 {
            self.run_left = self.rand_run;
            if self.skew.is_empty() {
                self.below(self.blocks(file_len - len) + 1) * self.bs_align
            } else {
                self.skewed_offset(file)
            }
        } else if self.rand_run_same {
            self.run_at[file][0]
        } else {
            self.run_at[file][1]
        };
        let at = if at + len > file_len { 0 } else { at };
        self.run_left -= 1;
        self.run_at[file] = [at, at + len];
        at
    }

    /// The next I/O of a trim pattern: a trim of a block (random, or going on from the last
    /// sequentially and wrapping), and with `trimwrite` a write of the same block after it
    /// (kept out of the common path's code).
    #[inline(never)]
    fn next_trim(&mut self) -> IoReq {
        if let Some(w) = self.then_write.take() {
            return w;
        }
        let len = self.next_len(Op::Trim);
        let file = self.next_file;
        self.next_file = (self.next_file + 1) % self.file_lens.len();
        let file_len = self.file_lens[file];
        let offset = if self.random_pct > 0 && self.below(100) < u64::from(self.random_pct) {
            self.below(self.blocks(file_len - len) + 1) * self.bs_align
        } else {
            let pos = &mut self.seq_pos[file][1];
            if *pos + len > file_len {
                *pos = 0;
            }
            let at = *pos;
            *pos += len;
            at
        };
        let trim = IoReq {
            op: Op::Trim,
            file: file as u32,
            offset,
            len: len as u32,
        };
        if self.trim == 2 {
            self.then_write = Some(IoReq {
                op: Op::Write,
                ..trim
            });
        }
        trim
    }

    fn next_once(&mut self) -> Option<IoReq> {
        while self.next_file < self.file_lens.len() {
            let file = self.next_file;
            let pos = self.seq_pos[file][0];
            let remaining = self.file_lens[file] - pos;
            if remaining == 0 {
                self.next_file += 1;
                continue;
            }
            let len = remaining.min(self.bs_min);
            self.seq_pos[file][0] += len;
            return Some(IoReq {
                op: Op::Write,
                file: file as u32,
                offset: pos,
                len: len as u32,
            });
        }
        None
    }
}

mod map;
mod skew;
mod sprandom;
#[cfg(test)]
mod tests;
