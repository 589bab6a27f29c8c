//! fio's random map (`norandommap` off): each block of a file once a pass.

/// The most blocks of a file a random map covers (a map of 64 MiB, a 2 TiB file of 4 KiB
/// blocks); a larger file's offsets are drawn with repeats.
pub const RANDOM_MAP_MAX_BLOCKS: u64 = 1 << 29;

/// fio's random map: which blocks of a file this pass has used. A draw lands on a free block
/// as drawn or, when taken, on the next free one after it (fio's axmap does the same); a full
/// map starts the next pass empty.
#[derive(Debug, Clone)]
pub struct RandomMap {
    words: Box<[u64]>,
    pub(super) blocks: u64,
    used: u64,
}

impl RandomMap {
    /// A map of `blocks` blocks, none used.
    pub fn new(blocks: u64) -> RandomMap {
        RandomMap {
            words: vec![0; blocks.div_ceil(64) as usize].into_boxed_slice(),
            blocks,
            used: 0,
        }
    }

    /// Starts the pass over: no block used.
    pub(super) fn clear(&mut self) {
        self.words.fill(0);
        self.used = 0;
    }

    /// Marks and returns block `drawn` if free, else the next free block after it (wrapping).
    pub fn take(&mut self, drawn: u64) -> u64 {
        if self.used == self.blocks {
            self.clear();
        }
        let n = self.words.len();
        let mut w = (drawn / 64) as usize;
        // The free bits of the drawn word at or after the drawn bit, then whole words.
        let mut free = !self.words[w] & (u64::MAX << (drawn % 64));
        let mut steps = 0;
        loop {
            // Bits past the last block are never free.
            if w == n - 1 && !self.blocks.is_multiple_of(64) {
                free &= (1u64 << (self.blocks % 64)) - 1;
            }
            if free != 0 {
                let bit = free.trailing_zeros();
                self.words[w] |= 1 << bit;
                self.used += 1;
                return w as u64 * 64 + u64::from(bit);
            }
            steps += 1;
            w = if w + 1 == n { 0 } else { w + 1 };
            free = !self.words[w];
            debug_assert!(steps <= n + 1, "a map with a free block finds it");
        }
    }
}
