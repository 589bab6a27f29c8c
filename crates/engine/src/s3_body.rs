//! The bodies of S3 PUTs, made from the job's data shape as file writes are: a pool filled
//! so that compressors reach the asked ratio, taken from a different place for each object,
//! every 512-byte sector stamped with its offset and the object (so no two objects, and no two
//! blocks, are alike), and with a dedup ratio an exact share of blocks copied from the same few
//! source blocks that file writes use. An object's bytes are a function of the job's seed,
//! the object's tag and its size alone, so a reader makes them again to check a GET.
//!
//! Without dedup, a body is the pool's own region, stamped in place and sent by reference (no
//! copy, as fio scrambles its buffers in place): the pool holds its first `reach` bytes again
//! after its end, so every region of up to `reach` bytes is contiguous. With dedup (whose
//! source blocks would overwrite the pool), or while an earlier request still holds the
//! pool, the body is a copy.

use bytes::{Bytes, BytesMut};

use crate::buffer::AlignedBuf;
use crate::data::{dedup_sources, DataShape, SOURCES};
use crate::EngineError;

/// The pool a worker's objects are taken from: the file path's, larger than compressors'
/// windows, so that neither one object nor a run of objects stored together repeats bytes a
/// compressor could find.
const POOL: usize = crate::data::POOL_BYTES;

/// The bytes an S3 worker's bodies take: the pool with its reach, a copied body, with
/// `verify` a checker's pool and a copy to check GETs against, and the dedup source blocks.
/// Checked before anything is allocated.
pub fn s3_body_bytes(max: u64, verify: bool, shape: &DataShape) -> u128 {
    let max = u128::from(max.max(1));
    let sources = if shape.dedup_ratio > 1.0 {
        SOURCES as u128 * u128::from(shape.dedup_block.max(512))
    } else {
        0
    };
    let checking = if verify { POOL as u128 + max } else { 0 };
    POOL as u128 + 2 * max + checking + sources
}

/// Stamps every 512-byte sector of `out` (an object's bytes from its start) with its offset
/// and `tag`: the first 16 bytes of each, fewer in a last sector shorter than that.
fn stamp(out: &mut [u8], tag: u64) {
    let mut stamp = [0u8; 16];
    stamp[8..].copy_from_slice(&tag.to_le_bytes());
    for (k, sector) in out.chunks_mut(512).enumerate() {
        stamp[..8].copy_from_slice(&((k * 512) as u64).to_le_bytes());
        let n = sector.len().min(16);
        sector[..n].copy_from_slice(&stamp[..n]);
    }
}

/// A worker's maker of object bodies. Its pool is filled at the first body made or checked:
/// a worker that only reads and does not verify allocates nothing.
pub(crate) struct Bodies {
    /// [`POOL`] bytes filled for the shape, then its first `reach` bytes again; regions are
    /// stamped in place for each object sent from it (stamps only ever sit where every
    /// object's own stamps go, so what is read past them is the fill).
    pool: Option<Bytes>,
    /// The largest body sent from the pool in place.
    reach: usize,
    shape: DataShape,
    seed: u64,
    dedup: Option<(AlignedBuf, usize, f64)>,
    /// The buffer of the last body, back from its finished PUT.
    spare: Option<BytesMut>,
    /// Bytes a GET is checked against.
    check: Vec<u8>,
}

impl Bodies {
    /// A maker of bodies shaped by `shape`, sending bodies of up to `reach` bytes from its pool
    /// in place (0: a checker, which only copies); `seed` makes the contents this job's (and
    /// this run's and host's).
    pub fn new(shape: &DataShape, seed: u64, reach: u64) -> Bodies {
        Bodies {
            pool: None,
            // Dedup copies every body (its source blocks would overwrite the pool): no reach.
            reach: if shape.dedup_ratio > 1.0 || shape.zero {
                0
            } else {
                reach.min(usize::MAX as u64) as usize
            },
            shape: *shape,
            seed,
            dedup: None,
            spare: None,
            check: Vec::new(),
        }
    }

    /// Fills the pool and the dedup sources, once.
    fn ready(&mut self) -> Result<(), EngineError> {
        if self.pool.is_some() || self.shape.zero {
            return Ok(());
        }
        let shape = self.shape;
        let fill = AlignedBuf::filled(POOL, self.seed, shape.compress_ratio)?;
        let fill = &fill.as_slice()[..POOL];
        let len = POOL.saturating_add(self.reach);
        let mut pool = Vec::new();
        pool.try_reserve_exact(len)
            .map_err(|_| EngineError::Alloc { bytes: len })?;
        pool.extend_from_slice(fill);
        while pool.len() < len {
            let n = (len - pool.len()).min(POOL);
            pool.extend_from_slice(&fill[..n]);
        }
        self.pool = Some(Bytes::from(pool));
        self.dedup = if shape.dedup_ratio <= 1.0 {
            None
        } else {
            // The same source blocks as file writes: duplicates of each other anywhere.
            let block = shape.dedup_block.max(512).next_multiple_of(512) as usize;
            let sources = dedup_sources(block, shape.compress_ratio)?;
            Some((sources, block, 1.0 - 1.0 / shape.dedup_ratio))
        };
        Ok(())
    }

    /// The body of object `tag`, `size` bytes from byte `start` of the pool on (wrapping
    /// around; callers take regions in turn, as file writes do), reusing the last body's
    /// buffer when its PUT let go of it.
    pub fn make(&mut self, tag: u64, start: u64, size: usize) -> Result<Bytes, EngineError> {
        self.ready()?;
        if self.dedup.is_none() && !self.shape.zero && size <= self.reach {
            if let Some(body) = self.in_place(tag, start, size) {
                return Ok(body);
            }
        }
        let mut out = self.spare.take().unwrap_or_default();
        out.clear();
        out.reserve(size);
        // SAFETY: `fill` writes every one of the `size` bytes before they are read.
        unsafe { out.set_len(size) };
        self.fill(&mut out, tag, start);
        Ok(out.freeze())
    }

    /// Object `tag`'s body as the pool's own region, stamped in place; `None` while an earlier
    /// body still holds the pool.
    fn in_place(&mut self, tag: u64, start: u64, size: usize) -> Option<Bytes> {
        let mut pool = match self.pool.take()?.try_into_mut() {
            Ok(p) => p,
            Err(held) => {
                self.pool = Some(held);
                return None;
            }
        };
        let at = (start % POOL as u64) as usize / 512 * 512;
        stamp(&mut pool[at..at + size], tag ^ self.seed);
        let pool = pool.freeze();
        let body = pool.slice(at..at + size);
        self.pool = Some(pool);
        Some(body)
    }

    /// Takes back the body of a finished PUT, for the next one.
    pub fn recycle(&mut self, body: Bytes) {
        if let Ok(b) = body.try_into_mut() {
            self.spare = Some(b);
        }
    }

    /// Whether `got`, read from `offset` of object `tag` of `size` bytes made from `start`,
    /// is what was written.
    pub fn matches(
        &mut self,
        tag: u64,
        start: u64,
        size: u64,
        offset: u64,
        got: &[u8],
    ) -> Result<bool, EngineError> {
        self.ready()?;
        let Some(end) = offset.checked_add(got.len() as u64).filter(|&e| e <= size) else {
            return Ok(false);
        };
        let mut check = std::mem::take(&mut self.check);
        check.resize(size as usize, 0);
        self.fill(&mut check, tag, start);
        let same = check[offset as usize..end as usize] == *got;
        self.check = check;
        Ok(same)
    }

    /// Writes object `tag`'s bytes over all of `out`.
    fn fill(&self, out: &mut [u8], tag: u64, start: u64) {
        let Some(pool) = &self.pool else {
            out.fill(0);
            return;
        };
        let pool = &pool[..POOL];
        let mut at = (start % POOL as u64) as usize / 512 * 512;
        let mut done = 0;
        while done < out.len() {
            let n = (out.len() - done).min(POOL - at);
            out[done..done + n].copy_from_slice(&pool[at..at + n]);
            done += n;
            at = 0;
        }
        stamp(out, tag ^ self.seed);
        if let Some((sources, block, share)) = &self.dedup {
            // An exact share of whole blocks. The phase steps evenly with the tag (a Weyl
            // sequence), so that over objects of one block each the share is exact too.
            let phase =
                (tag.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 11) as f64 / (1u64 << 53) as f64;
            for (b, chunk) in out.chunks_exact_mut(*block).enumerate() {
                let before = (b as f64 * share + phase).floor();
                if ((b + 1) as f64 * share + phase).floor() > before {
                    let j = (before as usize) % SOURCES;
                    chunk.copy_from_slice(&sources.as_slice()[j * block..(j + 1) * block]);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    fn shape(compress_ratio: f64, dedup_ratio: f64) -> DataShape {
        DataShape {
            compress_ratio,
            dedup_ratio,
            ..DataShape::default()
        }
    }

    #[test]
    fn objects_differ_and_are_made_again_the_same() {
        let mut b = Bodies::new(&DataShape::default(), 7, 1 << 20);
        let one = b.make(1, 0, 10_000).unwrap();
        let two = b.make(2, 16384, 10_000).unwrap();
        assert_ne!(one, two);
        assert!(b.matches(1, 0, 10_000, 0, &one).unwrap());
        assert!(b.matches(1, 0, 10_000, 300, &one[300..5000]).unwrap());
        assert!(
            !b.matches(2, 16384, 10_000, 0, &one).unwrap(),
            "another object"
        );
        let mut flipped = one.to_vec();
        flipped[7777] ^= 1;
        assert!(!b.matches(1, 0, 10_000, 0, &flipped).unwrap(), "one bit");
        assert!(
            !b.matches(1, 0, 10_000, 9_990, &one[..20]).unwrap(),
            "past the end"
        );
        // Another seed (run) makes other objects.
        let mut c = Bodies::new(&DataShape::default(), 8, 1 << 20);
        assert_ne!(c.make(1, 0, 10_000).unwrap(), one);
    }

    #[test]
    fn bodies_sent_in_place_are_what_a_reader_makes_again() {
        let shape = shape(2.0, 1.0);
        let mut sender = Bodies::new(&shape, 11, 300_000);
        let mut checker = Bodies::new(&shape, 11, 0);
        let mut base = None;
        // Regions in turn, past the pool's end (wrapping into its reach), of odd sizes.
        let mut start = POOL as u64 - 700_000;
        for tag in 0..12u64 {
            let size = 100_000 + 37 * tag as usize;
            let body = sender.make(tag, start, size).unwrap();
            let at = (start % POOL as u64) as usize / 512 * 512;
            // The pool's own bytes, not a copy.
            let pool = *base.get_or_insert(body.as_ptr() as usize - at);
            assert_eq!(body.as_ptr() as usize, pool + at, "object {tag} copied");
            assert!(
                checker.matches(tag, start, size as u64, 0, &body).unwrap(),
                "{tag}"
            );
            sender.recycle(body);
            start += (size as u64).next_multiple_of(512);
        }
        // A body still held elsewhere while the next is made: that one is a copy, still right.
        let held = sender.make(100, 0, 5000).unwrap();
        let next = sender.make(101, 8192, 5000).unwrap();
        assert!(checker.matches(101, 8192, 5000, 0, &next).unwrap());
        assert!(checker.matches(100, 0, 5000, 0, &held).unwrap());
    }

    #[test]
    fn buffers_come_back_when_the_put_let_go() {
        let mut b = Bodies::new(&DataShape::default(), 1, 0);
        let body = b.make(1, 0, 4096).unwrap();
        let ptr = body.as_ptr();
        b.recycle(body);
        let again = b.make(2, 4096, 4096).unwrap();
        assert_eq!(again.as_ptr(), ptr, "the same buffer, no new allocation");
        let held = again.clone();
        b.recycle(again);
        assert!(b.spare.is_none(), "still held elsewhere: not reused");
        drop(held);
    }

    #[test]
    fn no_block_repeats_across_objects_without_dedup() {
        let mut b = Bodies::new(&shape(4.0, 1.0), 3, 1 << 20);
        let mut seen = HashSet::new();
        for tag in 0..64 {
            for block in b
                .make(tag, tag * (16 << 10), 16 << 10)
                .unwrap()
                .chunks(4096)
            {
                assert!(
                    seen.insert(block.to_vec()),
                    "object {tag}: a block seen before"
                );
            }
        }
    }

    #[test]
    fn dedup_share_is_exact_over_small_and_large_objects() {
        for (ratio, size) in [(2.0, 4096usize), (2.0, 256 << 10), (4.0, 64 << 10)] {
            let mut b = Bodies::new(&shape(1.0, ratio), 5, 1 << 20);
            let (mut blocks, mut unique) = (0usize, HashSet::new());
            for tag in 0..(8 << 20) / size as u64 {
                for block in b.make(tag, tag * size as u64, size).unwrap().chunks(4096) {
                    blocks += 1;
                    unique.insert(block.to_vec());
                }
            }
            let got = blocks as f64 / unique.len() as f64;
            assert!(
                (got / ratio - 1.0).abs() < 0.05,
                "dedup {ratio} on {size}-byte objects: {got}"
            );
        }
    }

    #[test]
    fn zero_buffers_are_zeros() {
        let mut b = Bodies::new(
            &DataShape {
                zero: true,
                ..DataShape::default()
            },
            1,
            4096,
        );
        assert!(b.make(9, 0, 3000).unwrap().iter().all(|&x| x == 0));
    }
}
