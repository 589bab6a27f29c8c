//! The offset generator: operation, file, offset and length of the next I/O, from a fast
//! per-worker random number generator (no shared state, no syscalls).

use stormark_stats::Op;

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

/// Draws I/Os for one worker. Random offsets are uniform over the aligned positions of a file
/// (like fio with `norandommap`); sequential ones continue per file and per operation (as
/// fio's `last_pos[ddir]`) and wrap at the end. Files are used round-robin (fio's
/// `file_service_type=roundrobin`).
#[derive(Debug, Clone)]
pub struct OffsetGen {
    rng: u64,
    read_pct: u8,
    random_pct: u8,
    bs_min: u64,
    bs_align: u64,
    bs_slots: u64,
    file_lens: Vec<u64>,
    seq_pos: Vec<[u64; 2]>,
    next_file: usize,
    once: bool,
}

impl OffsetGen {
    /// A generator over files of `file_lens` bytes. `bs_max - bs_min` must be a multiple of
    /// `bs_align`, and every file at least `bs_max` long.
    pub fn new(
        file_lens: Vec<u64>,
        read_pct: u8,
        random_pct: u8,
        bs_min: u64,
        bs_max: u64,
        bs_align: u64,
        seed: u64,
    ) -> OffsetGen {
        let bs_slots = (bs_max - bs_min) / bs_align + 1;
        let n = file_lens.len();
        OffsetGen {
            rng: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            read_pct,
            random_pct,
            bs_min,
            bs_align,
            bs_slots,
            file_lens,
            seq_pos: vec![[0; 2]; n],
            next_file: 0,
            once: false,
        }
    }

    /// A generator that writes every file once, front to back, file after file, then ends:
    /// the preparation pass. The last piece of a file may be shorter than `bs`.
    pub fn write_once(file_lens: Vec<u64>, bs: u64) -> OffsetGen {
        OffsetGen {
            once: true,
            ..OffsetGen::new(file_lens, 0, 0, bs, bs, bs, 1)
        }
    }

    #[inline]
    fn next_u64(&mut self) -> u64 {
        // wyrand (Wang Yi): one multiply per draw, passes BigCrush; plenty for offsets.
        self.rng = self.rng.wrapping_add(0xA076_1D64_78BD_642F);
        let t = u128::from(self.rng) * u128::from(self.rng ^ 0xE703_7ED1_A0B4_28DB);
        ((t >> 64) ^ t) as u64
    }

    /// A number in `0..n` without division (Lemire's multiply-shift).
    #[inline]
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// The next I/O, or `None` when a one-pass generator is done.
    #[inline]
    pub fn next_io(&mut self) -> Option<IoReq> {
        if self.once {
            return self.next_once();
        }
        let op = match self.read_pct {
            100 => Op::Read,
            0 => Op::Write,
            p => {
                if self.below(100) < u64::from(p) {
                    Op::Read
                } else {
                    Op::Write
                }
            }
        };
        let len = if self.bs_slots == 1 {
            self.bs_min
        } else {
            self.bs_min + self.below(self.bs_slots) * self.bs_align
        };
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
        let offset = if random {
            self.below((file_len - len) / self.bs_align + 1) * self.bs_align
        } else {
            let pos = &mut self.seq_pos[file][op.index()];
            if *pos + len > file_len {
                *pos = 0;
            }
            let at = *pos;
            *pos += len;
            at
        };
        Some(IoReq {
            op,
            file: file as u32,
            offset,
            len: len as u32,
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_offsets_are_aligned_in_range_and_spread() {
        let mut g = OffsetGen::new(vec![1 << 20], 100, 100, 4096, 4096, 4096, 7);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..10_000 {
            let r = g.next_io().unwrap();
            assert_eq!(r.offset % 4096, 0);
            assert!(r.offset + 4096 <= 1 << 20);
            assert_eq!(r.op, Op::Read);
            seen.insert(r.offset);
        }
        assert_eq!(seen.len(), 256, "every block of a 1 MiB file is reached");
    }

    #[test]
    fn sequential_wraps_and_round_robins() {
        let mut g = OffsetGen::new(vec![8192, 8192], 0, 0, 4096, 4096, 4096, 1);
        let got: Vec<(u32, u64)> = (0..6)
            .map(|_| g.next_io().unwrap())
            .map(|r| (r.file, r.offset))
            .collect();
        assert_eq!(
            got,
            vec![(0, 0), (1, 0), (0, 4096), (1, 4096), (0, 0), (1, 0)]
        );
    }

    #[test]
    fn mix_and_ranges_follow_the_percentages() {
        let mut g = OffsetGen::new(vec![64 << 20], 70, 80, 4096, 65536, 4096, 3);
        let n = 100_000;
        let (mut reads, mut sizes) = (0, std::collections::HashSet::new());
        for _ in 0..n {
            let r = g.next_io().unwrap();
            reads += usize::from(r.op == Op::Read);
            assert_eq!(r.len % 4096, 0);
            assert!((4096..=65536).contains(&r.len));
            assert!(r.offset + u64::from(r.len) <= 64 << 20);
            sizes.insert(r.len);
        }
        let share = reads as f64 / n as f64;
        assert!((share - 0.70).abs() < 0.01, "{share}");
        assert_eq!(sizes.len(), 16);
    }

    #[test]
    fn write_once_covers_each_file_exactly() {
        let mut g = OffsetGen::write_once(vec![10_000, 4096], 4096);
        let got: Vec<(u32, u64, u32)> = std::iter::from_fn(|| g.next_io())
            .map(|r| (r.file, r.offset, r.len))
            .collect();
        assert_eq!(
            got,
            vec![(0, 0, 4096), (0, 4096, 4096), (0, 8192, 1808), (1, 0, 4096)]
        );
    }
}
