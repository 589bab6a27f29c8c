//! fio's SPRandom preconditioning (`sprandom`, after SanDisk's method): one pass of random
//! writes over a file or device's physical capacity (its logical size and the
//! over-provisioning) that leaves each region of the drive with the share of stale blocks a
//! long random-write load would (Desnoyers' steady-state model), so that a drive reaches its
//! steady state after one such pass instead of several full overwrites.
//!
//! The capacity is cut into regions written one after another. Every block is written once,
//! in a random order without repeats; while a region is written, each block written is kept
//! for a second write with the region's share of invalid blocks, and those second writes are
//! issued at the start of the next region (a region later with a drive cache, fio's
//! `spr_cs`), each kept again with the share of the region it lands in. The same sequence of
//! decisions as fio's `sprandom.c`; fio's LFSR order of fresh blocks is an LCG here, and
//! blocks left after the last region are written too (fio stops there).

use std::collections::VecDeque;

use stormark_spec::SpRandom;

/// The shares are drawn in ten-thousandths, as fio's.
const PRECISION: u64 = 10_000;

/// Where SPRandom has got to.
#[derive(Debug, Clone)]
pub(crate) struct SpRandomGen {
    /// Fresh blocks: a full-period LCG over the next power of two, values past the last block
    /// skipped, so that every block comes once.
    lcg: u64,
    lcg_mask: u64,
    lcg_mul: u64,
    lcg_add: u64,
    fresh_left: u64,
    blocks: u64,
    bs: u64,
    /// Per region, its share of invalid blocks in ten-thousandths.
    invalid: Vec<u64>,
    region_writes: u64,
    writes_left: u64,
    region: usize,
    phase: usize,
    /// Blocks kept for a second write, counted by the phase that kept them.
    kept: [u64; 2],
    /// Second writes due now, and those kept for the next region.
    due: VecDeque<u64>,
    staged: Vec<u64>,
    cache: bool,
    rng: u64,
}

impl SpRandomGen {
    /// The generator for a file or device of `len` bytes written in blocks of `bs`.
    pub(crate) fn new(s: SpRandom, len: u64, bs: u64, seed: u64) -> SpRandomGen {
        let blocks = len / bs.max(1);
        let physical = physical_size(s.op, blocks * bs, bs);
        let regions = s.regions.max(1) as usize;
        let region_writes = physical / regions as u64 / bs.max(1);
        let validity = validity_by_region(regions, s.op);
        let invalid = validity
            .iter()
            .map(|v| ((1.0 - v) * PRECISION as f64).round() as u64)
            .collect();
        let bits = 64 - blocks.saturating_sub(1).leading_zeros();
        let mut rng = seed ^ 0x5350_5241_4e44_4f4d;
        let lcg = super::wyrand(&mut rng);
        SpRandomGen {
            lcg_mask: if bits >= 64 {
                u64::MAX
            } else {
                (1u64 << bits) - 1
            },
            lcg,
            // a = 1 mod 4 and c odd: the period is the whole power of two (Hull-Dobell).
            lcg_mul: (super::wyrand(&mut rng) & !3) | 1 | 4,
            lcg_add: super::wyrand(&mut rng) | 1,
            fresh_left: blocks,
            blocks,
            bs,
            invalid,
            region_writes,
            writes_left: region_writes,
            region: 0,
            phase: 0,
            kept: [0; 2],
            due: VecDeque::new(),
            staged: Vec::new(),
            cache: s.cache > 0,
            rng,
        }
    }

    /// The next write's offset, or `None` when preconditioning is done.
    pub(crate) fn next(&mut self) -> Option<u64> {
        if !self.cache {
            // The last region's second writes first.
            if let Some(at) = self.due.pop_front() {
                self.keep(at, self.phase ^ 1);
                return Some(at);
            }
        }
        if self.writes_left == 0 {
            if self.cache {
                // With a cache, the second writes of the region before last, at the end of
                // the last one: never in the drive's cache beside the first.
                if let Some(at) = self.due.pop_front() {
                    self.keep(at, self.phase ^ 1);
                    return Some(at);
                }
            }
            if self.region >= self.invalid.len() {
                // Past the last region, the blocks not yet written (fio ends here; its
                // regions' whole writes can fall a few blocks short when the second writes
                // draw high): every block written at least once.
                return self.fresh().map(|b| b * self.bs);
            }
            self.kept[self.phase] = 0;
            self.region += 1;
            self.phase ^= 1;
            self.writes_left = self.region_writes.saturating_sub(self.kept[self.phase]);
            self.due.extend(self.staged.drain(..));
        }
        let Some(block) = self.fresh() else {
            return if self.cache {
                self.due.pop_front()
            } else {
                None
            };
        };
        self.writes_left = self.writes_left.saturating_sub(1);
        let at = block * self.bs;
        self.keep(at, self.phase ^ 1);
        Some(at)
    }

    /// Keeps `at` for a second write with the current region's share (fio's
    /// `sprandom_add_with_probability`).
    fn keep(&mut self, at: u64, phase: usize) {
        let share = self.invalid.get(self.region).copied().unwrap_or(0);
        // A draw from 0 to PRECISION inclusive, as fio's rand_between.
        let v =
            ((u128::from(super::wyrand(&mut self.rng)) * u128::from(PRECISION + 1)) >> 64) as u64;
        if v <= share && share > 0 {
            self.staged.push(at);
            self.kept[phase] += 1;
        }
    }

    /// The next block not yet written fresh, in the LCG's order.
    fn fresh(&mut self) -> Option<u64> {
        if self.fresh_left == 0 {
            return None;
        }
        loop {
            self.lcg = self
                .lcg
                .wrapping_mul(self.lcg_mul)
                .wrapping_add(self.lcg_add)
                & self.lcg_mask;
            if self.lcg < self.blocks {
                self.fresh_left -= 1;
                return Some(self.lcg);
            }
        }
    }
}

/// The physical capacity behind `logical` bytes at an over-provisioning ratio, in whole
/// blocks (fio's `sprandom_physical_size`).
pub(crate) fn physical_size(op: f64, logical: u64, bs: u64) -> u64 {
    let size = logical + (logical as f64 * op).ceil() as u64;
    size - size % bs.max(1)
}

/// Each region's share of valid blocks in the steady state, the first region the most stale
/// (fio's `compute_validity_dist`): validities spaced evenly from 1 down to the one greedy
/// garbage collection picks at the write amplification the over-provisioning gives
/// (WA = 0.5 / OP + 0.7, the GC block's validity 1 - 1/WA); a region of validity v takes
/// space in proportion to 1/v; the curve resampled at regions of equal size, reversed.
pub(crate) fn validity_by_region(n: usize, op: f64) -> Vec<f64> {
    let wa = 0.5 / op + 0.7;
    let gc = 1.0 - 1.0 / wa;
    let lin = |a: f64, b: f64| -> Vec<f64> {
        if n == 1 {
            return vec![a];
        }
        let step = (b - a) / (n as f64 - 1.0);
        (0..n).map(|i| a + i as f64 * step).collect()
    };
    let valid = lin(1.0, gc);
    let mut acc = 0.0;
    let x: Vec<f64> = valid
        .iter()
        .map(|v| {
            acc += 1.0 / v;
            acc
        })
        .collect();
    let mut out: Vec<f64> = lin(x[0], x[n - 1])
        .into_iter()
        .map(|at| interpolate(at, &x, &valid))
        .collect();
    out.reverse();
    out
}

/// The curve through `(x, y)` at `at`, its end values past its ends (fio's `linear_interp`).
fn interpolate(at: f64, x: &[f64], y: &[f64]) -> f64 {
    let n = x.len();
    if n == 1 || at <= x[0] {
        return y[0];
    }
    if at >= x[n - 1] {
        return y[n - 1];
    }
    let i = x.partition_point(|v| *v <= at).clamp(1, n - 1) - 1;
    let (x1, x2, y1, y2) = (x[i], x[i + 1], y[i], y[i + 1]);
    if (x2 - x1).abs() < 1e-9 {
        return y1;
    }
    y1 + (y2 - y1) * ((at - x1) / (x2 - x1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The model's curve: the first region the most stale, at the validity greedy garbage
    /// collection reclaims (1 - 1/WA, WA = 0.5/0.15 + 0.7 = 4.03: 0.752), rising to all
    /// valid in the last.
    #[test]
    fn validity_rises_from_the_gc_blocks_to_all_valid() {
        let v = validity_by_region(100, 0.15);
        assert_eq!(v.len(), 100);
        assert!(
            (v[0] - (1.0 - 1.0 / (0.5 / 0.15 + 0.7))).abs() < 1e-9,
            "{}",
            v[0]
        );
        assert!((v[99] - 1.0).abs() < 1e-9);
        assert!(v.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(validity_by_region(1, 0.15), [1.0]);
        assert_eq!(physical_size(0.15, 64 << 20, 4096), 77_172_736);
    }

    /// One pass: every block written, none of the fresh writes twice; the writes add up to
    /// the physical capacity (the logical size and its over-provisioning) within a region;
    /// the second writes are the blocks the model makes stale; then it ends.
    #[test]
    fn one_pass_writes_every_block_then_the_stale_share_again() {
        for cache in [0, 1 << 20] {
            let s = SpRandom {
                op: 0.15,
                regions: 100,
                cache,
            };
            let (len, bs) = (256u64 << 20, 4096);
            let mut g = SpRandomGen::new(s, len, bs, 7);
            let blocks = (len / bs) as usize;
            let mut times = vec![0u32; blocks];
            let mut total = 0u64;
            while let Some(at) = g.next() {
                assert_eq!(at % bs, 0);
                times[(at / bs) as usize] += 1;
                total += 1;
                assert!(total < 10 * blocks as u64, "it ends");
            }
            assert!(times.iter().all(|t| *t >= 1), "every block once");
            assert_eq!(g.next(), None, "and no more");
            let physical = physical_size(0.15, len, bs) / bs;
            let region = physical / 100;
            assert!(
                total.abs_diff(physical) <= region,
                "{total} writes, physical {physical}"
            );
            // Each region's writes made stale by a second write at its share of invalid
            // blocks: the second writes are the model's stale blocks of every region (a
            // binomial draw of some 9,800: 5% is five standard deviations).
            let stale: f64 = validity_by_region(100, 0.15)
                .iter()
                .map(|v| (1.0 - v) * region as f64)
                .sum();
            let again = (total - blocks as u64) as f64;
            assert!(
                (again / stale - 1.0).abs() < 0.05,
                "{again} against {stale}"
            );
        }
    }
}
