//! The offset generator: operation, file, offset and length of the next I/O, from a fast
//! per-worker random number generator (no shared state, no syscalls).

use stormark_spec::Distribution;
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
    read_pct: u8,
    random_pct: u8,
    bs_min: u64,
    bs_align: u64,
    bs_slots: u64,
    file_lens: Vec<u64>,
    seq_pos: Vec<[u64; 2]>,
    next_file: usize,
    once: bool,
    /// Per file, how its random offsets are skewed (empty: uniform, the common case).
    skew: Vec<Skew>,
    /// fio's `bssplit`, cumulative (empty: sizes drawn evenly from the range).
    split: Box<[(u8, u64)]>,
    /// What a sequential stream adds after each I/O beyond it.
    seq_add: i64,
}

/// Where a sequential stream goes after an I/O of `len` at `at` with a step `add`; before the
/// start wraps as past the end does (to the last block).
#[inline(never)]
fn stepped(at: u64, len: u64, add: i64) -> u64 {
    u64::try_from(at as i64 + len as i64 + add).unwrap_or(u64::MAX / 2)
}

/// wyrand (Wang Yi): one multiply per draw, passes BigCrush; plenty for offsets.
#[inline]
fn wyrand(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0xA076_1D64_78BD_642F);
    let t = u128::from(*state) * u128::from(*state ^ 0xE703_7ED1_A0B4_28DB);
    ((t >> 64) ^ t) as u64
}

/// fio's multiplier that scatters a skewed draw's hot ranks over the whole file
/// (`__hash_u64`), so that the hot blocks are not all at its start.
const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;

/// Terms of Zipf's normalizing sum added one by one; the rest is its integral (fio adds up
/// to ten million terms and drops the rest).
const ZETA_TERMS: u64 = 100_000;

/// How the random offsets of one file are drawn over its `n` positions, with fio's
/// algorithms (lib/zipf.c, lib/gauss.c), so that fio's `fio-genzipf` describes them.
#[derive(Debug, Clone)]
enum Skew {
    Zipf {
        n: u64,
        theta: f64,
        zetan: f64,
        alpha: f64,
        eta: f64,
    },
    Pareto {
        n: u64,
        pow: f64,
    },
    Normal {
        n: u64,
        stddev: u64,
    },
    /// fio's `zoned`: a zone drawn by its share of the accesses (cumulative, percent), then
    /// a position uniform within it (`start`, `len` positions).
    Zoned(Box<[(u8, u64, u64)]>),
}

impl Skew {
    fn new(dist: Distribution, n: u64) -> Option<Skew> {
        let n = n.max(1);
        Some(match dist {
            Distribution::Random => return None,
            Distribution::Zipf(theta) => {
                let exact = n.min(ZETA_TERMS);
                let mut zetan: f64 = (1..=exact).map(|i| (i as f64).powf(-theta)).sum();
                if n > exact {
                    // The tail's integral by the midpoint rule: exact to a few parts in 10^9.
                    let (a, b) = (exact as f64 + 0.5, n as f64 + 0.5);
                    zetan += (b.powf(1.0 - theta) - a.powf(1.0 - theta)) / (1.0 - theta);
                }
                let zeta2 = 1.0 + 0.5f64.powf(theta);
                Skew::Zipf {
                    n,
                    theta,
                    zetan,
                    alpha: 1.0 / (1.0 - theta),
                    eta: (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan),
                }
            }
            Distribution::Pareto(h) => Skew::Pareto {
                n,
                pow: h.ln() / (1.0 - h).ln(),
            },
            Distribution::Normal(pct) => Skew::Normal {
                n,
                stddev: ((n as f64 * pct / 100.0).ceil() as u64).min(n / 2),
            },
            Distribution::Zoned { zones, count } => {
                let (mut access, mut from) = (0u8, 0u64);
                let mut out = Vec::with_capacity(usize::from(count));
                for &(a, r) in &zones[..usize::from(count)] {
                    access += a;
                    let len = (n * u64::from(r) / 100).max(1).min(n - from.min(n - 1));
                    out.push((access, from.min(n - 1), len));
                    from += len;
                }
                Skew::Zoned(out.into_boxed_slice())
            }
        })
    }

    /// A position in `0..n`, from the worker's generator state `rng`.
    fn draw(&self, rng: &mut u64) -> u64 {
        let mut next = || wyrand(rng);
        let uniform = |x: u64| (x >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
        if let Skew::Zoned(zones) = self {
            let pick = (next() % 100) as u8;
            let &(_, start, len) = zones
                .iter()
                .find(|z| pick < z.0)
                .unwrap_or(&zones[zones.len() - 1]);
            return start + next() % len;
        }
        let (rank, n) = match *self {
            Skew::Zoned(_) => unreachable!("drawn above"),
            Skew::Zipf {
                n,
                theta,
                zetan,
                alpha,
                eta,
            } => {
                let u = uniform(next());
                let z = u * zetan;
                let v = if z < 1.0 {
                    1
                } else if z < 1.0 + 0.5f64.powf(theta) {
                    2
                } else {
                    1 + (n as f64 * (eta * u - eta + 1.0).powf(alpha)) as u64
                };
                (v.saturating_sub(1).min(n - 1), n)
            }
            Skew::Pareto { n, pow } => (((n - 1) as f64 * uniform(next()).powf(pow)) as u64, n),
            Skew::Normal { n, stddev } => {
                // fio's: twelve uniform deviations of width stddev, around the middle.
                let mut sum = (n / 2) as i64;
                for _ in 0..12 {
                    let r = (next() >> 32) as f64 / 4_294_967_296.0;
                    sum += (stddev as f64 * r) as i64 - (stddev / 2) as i64;
                }
                (sum.max(0) as u64, n)
            }
        };
        rank.wrapping_mul(GOLDEN_RATIO_64) % n
    }
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
        } = pattern;
        // A bssplit as cumulative shares: (share up to here, size).
        let split: Box<[(u8, u64)]> = split
            .map(|s| {
                let mut acc = 0u8;
                s.entries()
                    .iter()
                    .map(|&(size, pct)| {
                        acc += pct;
                        (acc, size)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let bs_slots = (bs_max - bs_min) / bs_align + 1;
        let n = file_lens.len();
        // A file's positions are where the largest block still fits; files of one length
        // share the work of setting up their skew.
        let mut skew: Vec<Skew> = Vec::new();
        if dist != Distribution::Random {
            let mut last: Option<(u64, Skew)> = None;
            for &len in &file_lens {
                let positions = len.saturating_sub(bs_max) / bs_align + 1;
                let s = match &last {
                    Some((p, s)) if *p == positions => s.clone(),
                    _ => Skew::new(dist, positions).expect("a skewed distribution"),
                };
                last = Some((positions, s.clone()));
                skew.push(s);
            }
        }
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
            skew,
            split,
            seq_add,
        }
    }

    /// A generator that writes every file once, front to back, file after file, then ends:
    /// the preparation pass. The last piece of a file may be shorter than `bs`.
    pub fn write_once(file_lens: Vec<u64>, bs: u64) -> OffsetGen {
        OffsetGen {
            once: true,
            ..OffsetGen::new(file_lens, Pattern::fixed(0, 0, bs), 1)
        }
    }

    #[inline]
    fn next_u64(&mut self) -> u64 {
        wyrand(&mut self.rng)
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
        } else if !self.split.is_empty() {
            self.split_len()
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
        let offset = if random && !self.skew.is_empty() {
            self.skewed_offset(file)
        } else if random {
            self.below((file_len - len) / self.bs_align + 1) * self.bs_align
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
        Some(IoReq {
            op,
            file: file as u32,
            offset,
            len: len as u32,
        })
    }

    /// A block size of a bssplit (kept out of the common path's code).
    #[inline(never)]
    fn split_len(&mut self) -> u64 {
        let pick = self.below(100) as u8;
        self.split
            .iter()
            .find(|s| pick < s.0)
            .map_or(self.bs_min, |s| s.1)
    }

    /// A random offset of a skewed distribution (kept out of the common path's code).
    #[inline(never)]
    fn skewed_offset(&mut self, file: usize) -> u64 {
        self.skew[file].draw(&mut self.rng) * self.bs_align
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
        let mut g = OffsetGen::new(vec![1 << 20], Pattern::fixed(100, 100, 4096), 7);
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
        let mut g = OffsetGen::new(vec![8192, 8192], Pattern::fixed(0, 0, 4096), 1);
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
        let mut g = OffsetGen::new(
            vec![64 << 20],
            Pattern {
                bs_max: 65536,
                ..Pattern::fixed(70, 80, 4096)
            },
            3,
        );
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

    /// The share of `draws` that the most-hit tenth of the positions hit took, percent (as
    /// fio-genzipf's first row: the hit blocks sorted by hits, in ten rows).
    fn top_tenth(dist: Distribution, n: u64, draws: usize) -> f64 {
        let mut g = OffsetGen::new(
            vec![n * 4096],
            Pattern {
                dist,
                ..Pattern::fixed(100, 100, 4096)
            },
            11,
        );
        let mut hits = vec![0u32; n as usize];
        for _ in 0..draws {
            let r = g.next_io().unwrap();
            assert_eq!(r.offset % 4096, 0);
            hits[(r.offset / 4096) as usize] += 1;
        }
        hits.retain(|&h| h > 0);
        hits.sort_unstable_by(|a, b| b.cmp(a));
        let step = (hits.len() - 1) / 10 + 1;
        let top: u64 = hits[..step].iter().map(|&h| u64::from(h)).sum();
        top as f64 * 100.0 / draws as f64
    }

    /// Issue 31: fio's `random_distribution`, against fio's own `fio-genzipf` over the same
    /// 1 GiB of 4 KiB blocks (as many draws as blocks, as it makes): the share of accesses
    /// the hottest tenth of the blocks takes.
    #[test]
    fn skewed_offsets_match_fios_genzipf() {
        let test = "skewed_offsets_match_fios_genzipf";
        if !stormark_testkit::require_tool(test, "fio-genzipf") {
            return;
        }
        let n: u64 = 262_144;
        for (kind, arg, dist) in [
            ("zipf", "1.2", Distribution::Zipf(1.2)),
            ("zipf", "0.8", Distribution::Zipf(0.8)),
            ("pareto", "0.2", Distribution::Pareto(0.2)),
            ("normal", "10", Distribution::Normal(10.0)),
        ] {
            let out = std::process::Command::new("fio-genzipf")
                .args(["-t", kind, "-i", arg, "-b", "4096", "-g", "1", "-o", "10"])
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            let fio: f64 = text
                .lines()
                .find(|l| l.starts_with("Top"))
                .and_then(|l| l.split_whitespace().nth(2))
                .and_then(|p| p.trim_end_matches('%').parse().ok())
                .unwrap_or_else(|| panic!("fio-genzipf said: {text}"));
            let ours = top_tenth(dist, n, n as usize);
            eprintln!("{kind}:{arg}: the hottest tenth takes {ours:.2}% here, {fio:.2}% in fio");
            assert!(
                (ours - fio).abs() < 1.5,
                "{kind}:{arg}: {ours:.2}% against fio's {fio:.2}%"
            );
        }
        // Uniform: the hottest tenth of the blocks hit takes little more than a tenth.
        let flat = top_tenth(Distribution::Random, n, n as usize);
        assert!(flat < 25.0, "{flat}");
    }

    #[test]
    fn zoned_offsets_fall_in_their_zones_in_their_shares() {
        // Zoned, fio's rand-zones.fio: half the accesses to the first 5%, 30% to the next 15%,
        // the rest to the rest; each zone within its range.
        let dist = Distribution::parse("zoned:50/5:30/15:20/").unwrap();
        let mut g = OffsetGen::new(
            vec![1000 * 4096],
            Pattern {
                dist,
                ..Pattern::fixed(100, 100, 4096)
            },
            5,
        );
        let mut per = [0u32; 3];
        for _ in 0..100_000 {
            let b = g.next_io().unwrap().offset / 4096;
            assert!(b < 1000);
            per[match b {
                0..50 => 0,
                50..200 => 1,
                _ => 2,
            }] += 1;
        }
        for (got, want) in per.iter().zip([50_000.0, 30_000.0, 20_000.0]) {
            assert!((f64::from(*got) - want).abs() < 1000.0, "{per:?}");
        }
    }

    /// Issue 31: fio's `bssplit`, each size for its share of the I/Os, offsets aligned.
    #[test]
    fn a_bssplit_draws_each_size_for_its_share() {
        let split = stormark_spec::BsSplit::parse("4k/50:64k/30:16k/").unwrap();
        let mut g = OffsetGen::new(
            vec![64 << 20],
            Pattern {
                bs_max: 65536,
                split: Some(split),
                ..Pattern::fixed(100, 100, 4096)
            },
            9,
        );
        let n = 100_000;
        let mut by = std::collections::BTreeMap::new();
        for _ in 0..n {
            let r = g.next_io().unwrap();
            assert_eq!(r.offset % 4096, 0);
            assert!(r.offset + u64::from(r.len) <= 64 << 20);
            *by.entry(r.len).or_insert(0u32) += 1;
        }
        for (len, want) in [(4096, 0.5), (65536, 0.3), (16384, 0.2)] {
            let got = f64::from(by[&len]) / f64::from(n);
            assert!((got - want).abs() < 0.01, "{len}: {got} of {by:?}");
        }
        assert_eq!(by.len(), 3, "{by:?}");
    }

    /// Issue 31: fio's `rw=read:-8k` (fio's backwards-read.fio): 4 KiB reads going back a
    /// block each time, from the last block, wrapping; `write:4k` leaves a hole after each.
    #[test]
    fn a_sequential_step_moves_on_or_back() {
        let mut back = OffsetGen::new(
            vec![16384],
            Pattern {
                seq_add: -8192,
                ..Pattern::fixed(100, 0, 4096)
            },
            1,
        );
        let got: Vec<u64> = (0..6).map(|_| back.next_io().unwrap().offset).collect();
        assert_eq!(got, [0, 12288, 8192, 4096, 0, 12288]);
        let mut holes = OffsetGen::new(
            vec![16384],
            Pattern {
                seq_add: 4096,
                ..Pattern::fixed(0, 0, 4096)
            },
            1,
        );
        let got: Vec<u64> = (0..4).map(|_| holes.next_io().unwrap().offset).collect();
        assert_eq!(got, [0, 8192, 0, 8192]);
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
