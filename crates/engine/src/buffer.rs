//! I/O buffers: allocated once per worker, aligned for O_DIRECT, filled as `data` asks.

use std::alloc::{alloc_zeroed, dealloc, Layout};

/// Alignment of every buffer: a page, enough for any logical block size up to 4 KiB.
pub const ALIGN: usize = 4096;

/// A heap buffer aligned to [`ALIGN`].
pub struct AlignedBuf {
    ptr: *mut u8,
    layout: Layout,
}

// SAFETY: the buffer is plain memory owned by one worker; moving it between threads is fine.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// Allocates `len` bytes (at least one page) filled from `seed` so that a compressor
    /// achieves about `ratio` on them: every 512-byte sector starts with `512 / ratio` random
    /// bytes (at least 16, where the stamps go) and ends with zeros; 1 is all random. A failed
    /// allocation is an error, never an abort.
    pub fn filled(len: usize, seed: u64, ratio: f64) -> Result<AlignedBuf, crate::EngineError> {
        let mut buf = AlignedBuf::zeroed(len)?;
        fill(buf.as_mut_slice(), seed, ratio);
        Ok(buf)
    }

    /// Fills the `len` bytes at `at` (whole sectors) as [`AlignedBuf::filled`] fills a
    /// buffer, from `seed`.
    pub(crate) fn fill(&mut self, at: usize, len: usize, seed: u64, ratio: f64) {
        fill(&mut self.as_mut_slice()[at..at + len], seed, ratio);
    }

    /// Allocates `len` bytes of `pattern` repeated (fio's `buffer_pattern`); with a `ratio`
    /// above 1, each 512-byte sector's first bytes random as in [`AlignedBuf::filled`], the
    /// pattern the compressible rest (as fio fills it).
    pub fn patterned(
        len: usize,
        pattern: &[u8],
        seed: u64,
        ratio: f64,
    ) -> Result<AlignedBuf, crate::EngineError> {
        let mut buf = if ratio > 1.0 {
            AlignedBuf::filled(len, seed, ratio)?
        } else {
            AlignedBuf::zeroed(len)?
        };
        let random = if ratio > 1.0 {
            ((512.0 / ratio).round() as usize).clamp(16, 512) / 8 * 8
        } else {
            0
        };
        let mut at = 0usize;
        for sector in buf.as_mut_slice().chunks_mut(512) {
            for b in sector.iter_mut().skip(random) {
                *b = pattern[at % pattern.len()];
                at += 1;
            }
        }
        Ok(buf)
    }

    /// Allocates `len` bytes (at least one page) of zeros.
    pub fn zeroed(len: usize) -> Result<AlignedBuf, crate::EngineError> {
        let fail = || crate::EngineError::Alloc { bytes: len };
        let layout = len
            .max(ALIGN)
            .checked_next_multiple_of(ALIGN)
            .and_then(|l| Layout::from_size_align(l, ALIGN).ok())
            .ok_or_else(fail)?;
        // SAFETY: layout has non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(fail());
        }
        Ok(AlignedBuf { ptr, layout })
    }

    /// Makes the `len` bytes at `at` unique to this write (fio's `scramble_buffers`, its
    /// default): the first 16 bytes of every 512-byte sector get the sector's file offset and
    /// `tag` (the worker's seed and its write's sequence), so that no two blocks of a file, or
    /// of two writes, are alike and a deduplicating target stores each. The rest of the bytes
    /// stay the random fill: the data stays incompressible.
    #[inline]
    pub fn scramble(&self, at: usize, len: usize, offset: u64, tag: u64) {
        debug_assert!(at + len <= self.layout.size());
        let mut sector = 0;
        while sector + 16 <= len {
            let stamp = [offset.wrapping_add(sector as u64), tag];
            // SAFETY: at + sector + 16 <= at + len, within the allocation; the region belongs
            // to an I/O not in flight (its caller is about to submit it).
            unsafe {
                std::ptr::copy_nonoverlapping(
                    stamp.as_ptr().cast::<u8>(),
                    self.ptr.add(at + sector),
                    16,
                );
            }
            sector += 512;
        }
    }

    /// Pointer to byte `offset`.
    pub fn at(&self, offset: usize) -> *mut u8 {
        debug_assert!(offset < self.layout.size());
        // SAFETY: offset is within the allocation (checked by callers via slot * bs_max).
        unsafe { self.ptr.add(offset) }
    }

    /// The whole buffer, to read.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr points to layout.size() initialized bytes owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.layout.size()) }
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr is valid for layout.size() bytes and uniquely owned.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
}

/// Every 512-byte sector of `bytes`: `512 / ratio` random bytes from `seed` (at least 16,
/// where the stamps go), then zeros.
fn fill(bytes: &mut [u8], seed: u64, ratio: f64) {
    let random = ((512.0 / ratio.max(1.0)).round() as usize).clamp(16, 512) / 8 * 8;
    let mut s = seed | 1;
    for sector in bytes.chunks_exact_mut(512) {
        for chunk in sector[..random].chunks_exact_mut(8) {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            chunk.copy_from_slice(&s.to_le_bytes());
        }
        sector[random..].fill(0);
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout in `new`.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}
