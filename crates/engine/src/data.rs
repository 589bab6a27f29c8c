//! What writes carry, prepared before the load and varied cheaply per write: a pool of
//! regions filled so that compressors reach the asked ratio (random bytes by default, so
//! incompressible), a region per write taken in turn (so no compressor's window sees one fill
//! twice), every sector stamped with its offset and the write (so no two blocks are alike), and
//! with a dedup ratio a share of blocks written from a few shared source blocks instead.

use crate::buffer::{AlignedBuf, ALIGN};
use crate::offsets::IoReq;
use crate::verify::Verifier;
pub use crate::work::DataShape;
use crate::EngineError;

/// Bytes of write regions a worker cycles through: more than the window of the compressors a
/// target or a user runs (gzip 32 KiB, lz4 64 KiB, zstd's default levels 2 MiB), so that no
/// region's fill is seen twice by one of them.
pub const POOL_BYTES: usize = 4 << 20;

/// Distinct source blocks the duplicates are copies of: few enough that they add nothing
/// measurable to the unique blocks, the same on every worker and host of a run.
pub(crate) const SOURCES: usize = 8;

/// Seed of the source blocks: one for every worker, host and run, so that duplicates written
/// anywhere are duplicates of each other.
const SOURCE_SEED: u64 = 0x5354_4f52_4d41_524b;

/// The bytes a worker's buffers take: `slots` I/Os in flight of up to `bs_max` bytes, reads
/// and writes as given. Checked against the host's memory before anything is allocated.
pub fn buffer_bytes(slots: u64, bs_max: u64, reads: bool, writes: bool, shape: &DataShape) -> u128 {
    let region = u128::from(bs_max.max(1).next_multiple_of(ALIGN as u64));
    let slots = u128::from(slots.max(1));
    let read = if reads { slots * region } else { 0 };
    let write = if !writes {
        0
    } else if shape.zero {
        slots * region
    } else {
        let lanes = lanes(slots as usize, region as usize) as u128;
        let block = u128::from(shape.dedup_block);
        let sources = match (shape.dedup_ratio > 1.0, shape.dedup_set) {
            (false, _) => 0,
            (true, 0) => SOURCES as u128 * block,
            // A working set's blocks are made in room of each slot's own.
            (true, _) => slots * (region / block.max(1) + 2) * block,
        };
        slots * region * lanes + sources
    };
    (read + write).max(ALIGN as u128)
}

/// The [`SOURCES`] blocks of `block` bytes that duplicates are copies of: the same on every
/// worker, host and run (file writes and S3 bodies alike), each stamped apart from the others.
pub(crate) fn dedup_sources(block: usize, compress_ratio: f64) -> Result<AlignedBuf, EngineError> {
    let sources = AlignedBuf::filled(SOURCES * block, SOURCE_SEED, compress_ratio)?;
    for j in 0..SOURCES {
        sources.scramble(
            j * block,
            block,
            (1 << 63) + (j * block) as u64,
            SOURCE_SEED,
        );
    }
    Ok(sources)
}

/// Regions per slot: enough for [`POOL_BYTES`] in all.
fn lanes(slots: usize, region: usize) -> usize {
    POOL_BYTES
        .div_ceil(slots.saturating_mul(region).max(1))
        .max(1)
}

/// Where the bytes of one write are.
pub(crate) enum Payload {
    /// One contiguous run.
    Plain(*const u8),
    /// Runs of regions and source blocks (`iovec`s that stay put until the write completes).
    Vectored(*const libc::iovec, u32),
}

/// A worker's buffers: a read region per slot, and the write pool.
pub(crate) struct Buffers {
    read: Option<AlignedBuf>,
    pool: AlignedBuf,
    region: usize,
    slots: usize,
    lanes: usize,
    /// The lane the next write takes (each lane `slots` writes in turn, the lanes in turn),
    /// and the writes it has had: counted, not divided out per write.
    lane: usize,
    lane_writes: usize,
    stamped: bool,
    dedup: Option<Dedup>,
    verifier: Option<Verifier>,
}

/// Duplicate blocks, chosen in an exact share.
struct Dedup {
    /// The [`SOURCES`] blocks duplicates are copies of, in turn.
    sources: AlignedBuf,
    /// Or a working set, duplicates made from it as written.
    set: Option<WorkingSet>,
    compress_ratio: f64,
    block: usize,
    /// Share of blocks written as duplicates, and how much of one is owed.
    share: f64,
    owed: f64,
    next: usize,
    /// `per_slot` iovecs for each slot.
    iov: Vec<libc::iovec>,
    per_slot: usize,
}

/// fio's dedupe working set: each duplicate block one of `blocks` blocks drawn at random,
/// made (its random bytes from its number and the set's seed) in room of its slot's own.
struct WorkingSet {
    blocks: u64,
    seed: u64,
    rng: u64,
    made: AlignedBuf,
}

impl Dedup {
    /// Whether the next block is a duplicate (an exact share, spread evenly), and where its
    /// bytes are: the `nth` duplicate of a write from `slot`.
    #[inline]
    fn take(&mut self, slot: usize, nth: usize) -> Option<*const u8> {
        self.owed += self.share;
        if self.owed < 1.0 {
            return None;
        }
        self.owed -= 1.0;
        let Some(set) = &mut self.set else {
            self.next = (self.next + 1) % SOURCES;
            return Some(self.sources.at(self.next * self.block).cast_const());
        };
        let drawn = crate::offsets::wyrand(&mut set.rng) % set.blocks;
        let at = (slot * self.per_slot + nth) * self.block;
        let seed = (drawn ^ set.seed).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        set.made.fill(at, self.block, seed, self.compress_ratio);
        set.made.scramble(
            at,
            self.block,
            (1 << 63) + drawn * self.block as u64,
            set.seed,
        );
        Some(set.made.at(at).cast_const())
    }
}

impl Buffers {
    /// Allocates and fills the buffers of a worker with `slots` I/Os in flight of up to
    /// `bs_max` bytes; `seed` makes its fill its own.
    pub(crate) fn new(
        slots: usize,
        bs_max: u64,
        reads: bool,
        writes: bool,
        shape: &DataShape,
        seed: u64,
        verifier: Option<Verifier>,
    ) -> Result<Buffers, EngineError> {
        let region = (bs_max.max(1) as usize).next_multiple_of(ALIGN);
        let slots = slots.max(1);
        let bytes = |n: usize| {
            n.checked_mul(region)
                .ok_or(EngineError::Alloc { bytes: usize::MAX })
        };
        let read = if reads {
            Some(AlignedBuf::zeroed(bytes(slots)?)?)
        } else {
            None
        };
        let lanes = if writes && !shape.zero {
            lanes(slots, region)
        } else {
            1
        };
        let pool_len = bytes(slots.saturating_mul(lanes))?;
        let pool = match shape.pattern {
            _ if shape.zero || !writes => AlignedBuf::zeroed(pool_len)?,
            Some(p) => AlignedBuf::patterned(pool_len, p.bytes(), seed, shape.compress_ratio)?,
            None => AlignedBuf::filled(pool_len, seed, shape.compress_ratio)?,
        };
        let dedup = if writes && !shape.zero && shape.dedup_ratio > 1.0 {
            let block = shape.dedup_block.max(512) as usize;
            let per_slot = region / block + 2;
            let (sources, set) = if shape.dedup_set == 0 {
                (dedup_sources(block, shape.compress_ratio)?, None)
            } else {
                let set_seed = if shape.dedup_set_seed == 0 {
                    SOURCE_SEED
                } else {
                    shape.dedup_set_seed
                };
                let set = WorkingSet {
                    blocks: shape.dedup_set,
                    seed: set_seed,
                    // The worker's own draws from the set.
                    rng: seed,
                    made: AlignedBuf::zeroed(slots.saturating_mul(per_slot).saturating_mul(block))?,
                };
                (AlignedBuf::zeroed(ALIGN)?, Some(set))
            };
            Some(Dedup {
                sources,
                set,
                compress_ratio: shape.compress_ratio,
                block,
                share: 1.0 - 1.0 / shape.dedup_ratio,
                owed: 0.0,
                next: 0,
                iov: vec![
                    libc::iovec {
                        iov_base: std::ptr::null_mut(),
                        iov_len: 0,
                    };
                    slots * per_slot
                ],
                per_slot,
            })
        } else {
            None
        };
        Ok(Buffers {
            read,
            pool,
            region,
            slots,
            lanes,
            lane: 0,
            lane_writes: 0,
            stamped: !shape.zero && shape.pattern.is_none(),
            dedup,
            verifier,
        })
    }

    /// The I/O of `slot` has completed, `ok` or failed (what `--verify` needs to know of
    /// writes racing, and of writes that did not land).
    #[inline]
    pub(crate) fn done(&mut self, slot: usize, ok: bool) {
        if let Some(v) = &mut self.verifier {
            v.done(slot, ok);
        }
    }

    /// The expected state of `--verify`, for the pass after the load.
    pub(crate) fn take_verifier(&mut self) -> Option<Verifier> {
        self.verifier.take()
    }

    /// The worker's buffer areas (the read regions, then the write pool), for a ring to
    /// register once (fio's `fixedbufs`): a read lands in area 0 when there are reads.
    pub(crate) fn areas(&self) -> Vec<libc::iovec> {
        self.read
            .iter()
            .chain(std::iter::once(&self.pool))
            .map(|b| libc::iovec {
                iov_base: b.at(0).cast(),
                iov_len: b.as_slice().len(),
            })
            .collect()
    }

    /// Which of [`Buffers::areas`] the write bytes at `p` lie in: the pool's, or `None` for a
    /// duplicate block's source (not registered).
    #[inline]
    pub(crate) fn pool_area(&self, p: *const u8) -> Option<u16> {
        let start = self.pool.at(0).cast_const();
        let inside = p >= start && (p as usize) < start as usize + self.pool.as_slice().len();
        inside.then_some(u16::from(self.read.is_some()))
    }

    /// Where the read of each of the first `slots` slots lands; none for a worker that does
    /// not read.
    pub(crate) fn read_addrs(&self, slots: usize) -> Vec<*mut u8> {
        match &self.read {
            Some(_) => (0..slots).map(|s| self.read_at(s)).collect(),
            None => Vec::new(),
        }
    }

    /// Where the read of `slot` lands.
    #[inline]
    pub(crate) fn read_at(&self, slot: usize) -> *mut u8 {
        self.read
            .as_ref()
            .expect("a worker that reads has read buffers")
            .at(slot * self.region)
    }

    /// The bytes of a write from `slot` (which has nothing in flight): the next region of
    /// the slot, stamped with the write's offset and `tag`, with a share of its blocks taken
    /// from the duplicate sources. What is returned stays valid and untouched until `slot`
    /// is used again.
    #[inline]
    pub(crate) fn write(&mut self, slot: usize, req: &IoReq, tag: u64) -> Payload {
        let lane = self.lane;
        self.lane_writes += 1;
        if self.lane_writes >= self.slots {
            self.lane_writes = 0;
            self.lane += 1;
            if self.lane >= self.lanes {
                self.lane = 0;
            }
        }
        let at = (lane * self.slots + slot) * self.region;
        let len = req.len as usize;
        if self.stamped {
            self.pool.scramble(at, len, req.offset, tag);
        }
        if let Some(v) = &mut self.verifier {
            v.stamp(&self.pool, at, len, slot, req.file, req.offset);
        }
        let base = self.pool.at(at).cast_const();
        match &mut self.dedup {
            None => Payload::Plain(base),
            Some(d) if len == d.block => Payload::Plain(d.take(slot, 0).unwrap_or(base)),
            Some(d) => d.vectored(slot, base, len),
        }
    }
}

impl Dedup {
    /// A write of several blocks: runs of the region between duplicate blocks.
    #[cold]
    fn vectored(&mut self, slot: usize, base: *const u8, len: usize) -> Payload {
        let first = slot * self.per_slot;
        let mut n = 0;
        let mut run_start = 0;
        let mut pos = 0;
        while pos + self.block <= len {
            if let Some(src) = self.take(slot, pos / self.block) {
                if pos > run_start {
                    // SAFETY: run_start < pos <= len, within the region.
                    self.iov[first + n] = iovec(unsafe { base.add(run_start) }, pos - run_start);
                    n += 1;
                }
                self.iov[first + n] = iovec(src, self.block);
                n += 1;
                run_start = pos + self.block;
            }
            pos += self.block;
        }
        if run_start == 0 {
            return Payload::Plain(base);
        }
        if len > run_start {
            // SAFETY: as above.
            self.iov[first + n] = iovec(unsafe { base.add(run_start) }, len - run_start);
            n += 1;
        }
        Payload::Vectored(self.iov[first..].as_ptr(), n as u32)
    }
}

fn iovec(base: *const u8, len: usize) -> libc::iovec {
    libc::iovec {
        iov_base: base.cast_mut().cast(),
        iov_len: len,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use stormark_stats::Op;

    fn bytes_of(p: &Payload, len: usize) -> Vec<u8> {
        match *p {
            // SAFETY: the payload points at `len` bytes of live buffers.
            Payload::Plain(ptr) => unsafe { std::slice::from_raw_parts(ptr, len) }.to_vec(),
            Payload::Vectored(iov, n) => {
                // SAFETY: n iovecs, each over live buffers.
                let iov = unsafe { std::slice::from_raw_parts(iov, n as usize) };
                iov.iter()
                    .flat_map(|v| unsafe {
                        std::slice::from_raw_parts(v.iov_base as *const u8, v.iov_len)
                    })
                    .copied()
                    .collect()
            }
        }
    }

    fn written(shape: DataShape, bs: u32, writes: u64) -> Vec<u8> {
        let mut b = Buffers::new(1, u64::from(bs), false, true, &shape, 7, None).unwrap();
        let mut out = Vec::new();
        for i in 0..writes {
            let req = IoReq {
                op: Op::Write,
                file: 0,
                offset: i * u64::from(bs),
                len: bs,
            };
            let p = b.write(0, &req, 99 ^ i);
            out.extend(bytes_of(&p, bs as usize));
        }
        out
    }

    #[test]
    fn dedup_writes_the_share_of_duplicate_blocks_asked_for() {
        for (bs, ratio) in [(4096, 2.0), (65536, 1.5), (4096, 3.0), (1 << 20, 1.25)] {
            let shape = DataShape {
                dedup_ratio: ratio,
                ..DataShape::default()
            };
            let data = written(shape, bs, (16u64 << 20) / u64::from(bs));
            let blocks: Vec<&[u8]> = data.chunks(4096).collect();
            let unique: HashSet<&[u8]> = blocks.iter().copied().collect();
            let got = blocks.len() as f64 / unique.len() as f64;
            // The 8 source blocks are distinct too: 0.6% of the unique blocks at 3.0 here.
            assert!(
                (got / ratio - 1.0).abs() < 0.02,
                "bs {bs}: {got} for {ratio}"
            );
        }
    }

    /// Issue 31: fio's dedupe working set: the duplicates are the blocks of a set of the
    /// size asked, drawn at random, the same set for every worker unless each has its own
    /// (fio's `dedupe_global=0`); in single-block writes and in writes of several blocks.
    #[test]
    fn working_set_duplicates_come_from_a_set_of_its_size() {
        let set = |seed, bs| -> (usize, HashSet<Vec<u8>>) {
            let shape = DataShape {
                dedup_ratio: 2.0,
                dedup_set: 64,
                dedup_set_seed: seed,
                ..DataShape::default()
            };
            let data = written(shape, bs, (8u64 << 20) / u64::from(bs));
            let mut seen = std::collections::HashMap::new();
            for b in data.chunks(4096) {
                *seen.entry(b.to_vec()).or_insert(0usize) += 1;
            }
            let dups: HashSet<Vec<u8>> = seen
                .iter()
                .filter(|(_, n)| **n > 1)
                .map(|(b, _)| b.clone())
                .collect();
            (seen.len(), dups)
        };
        for bs in [4096, 65536] {
            let (distinct, shared) = set(0, bs);
            // 2048 blocks, half of them duplicates of 64: 1024 unique and the 64.
            assert_eq!((distinct, shared.len()), (1024 + 64, 64), "bs {bs}");
            let (_, again) = set(0, bs);
            assert_eq!(again, shared, "one set for every worker");
            let (_, own) = set(5, bs);
            assert_eq!(own.len(), 64);
            assert!(own.is_disjoint(&shared), "a worker's own set");
        }
    }

    #[test]
    fn by_default_every_block_is_unique() {
        let data = written(DataShape::default(), 4096, 4096);
        let unique: HashSet<&[u8]> = data.chunks(512).collect();
        assert_eq!(unique.len(), data.len() / 512);
    }

    #[test]
    fn pool_and_sources_are_counted_in_the_memory_asked_for() {
        let shape = DataShape {
            dedup_ratio: 2.0,
            ..DataShape::default()
        };
        let need = buffer_bytes(8, 4096, true, true, &shape);
        assert_eq!(need, (8 * 4096 + POOL_BYTES + SOURCES * 4096) as u128);
        assert_eq!(buffer_bytes(8, 4096, true, false, &shape), 8 * 4096);
    }
}
