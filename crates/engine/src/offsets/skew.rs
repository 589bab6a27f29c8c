//! The skewed distributions of random offsets (fio's `random_distribution`): zipf, pareto,
//! normal, zoned and sequence, with fio's own algorithms.

use stormark_spec::Distribution;

use super::wyrand;

/// fio's multiplier that scatters a skewed draw's hot ranks over the whole file
/// (`__hash_u64`), so that the hot blocks are not all at its start.
const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;

/// Terms of Zipf's normalizing sum added one by one; the rest is its integral (fio adds up
/// to ten million terms and drops the rest).
const ZETA_TERMS: u64 = 100_000;

/// How the random offsets of one file are drawn over its `n` positions, with fio's
/// algorithms (lib/zipf.c, lib/gauss.c), so that fio's `fio-genzipf` describes them.
#[derive(Debug, Clone)]
pub(super) enum Skew {
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
    /// fio's `sequence`: these positions in turn, each round from `base` (moved on by their
    /// count with `stride`), wrapping around the file's `n`.
    Sequence {
        order: Box<[u64]>,
        next: usize,
        base: u64,
        stride: bool,
        n: u64,
    },
}

impl Skew {
    pub(super) fn new(dist: Distribution, n: u64) -> Option<Skew> {
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
            Distribution::Sequence {
                blocks,
                count,
                stride,
            } => Skew::Sequence {
                order: blocks[..usize::from(count).max(1)]
                    .iter()
                    .map(|&b| u64::from(b))
                    .collect(),
                next: 0,
                base: 0,
                stride,
                n,
            },
        })
    }

    /// A position in `0..n`, from the worker's generator state `rng`.
    pub(super) fn draw(&mut self, rng: &mut u64) -> u64 {
        if let Skew::Sequence {
            order,
            next,
            base,
            stride,
            n,
        } = self
        {
            let at = (*base + order[*next]) % *n;
            *next += 1;
            if *next == order.len() {
                *next = 0;
                if *stride {
                    *base = (*base + order.len() as u64) % *n;
                }
            }
            return at;
        }
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
            Skew::Zoned(_) | Skew::Sequence { .. } => unreachable!("drawn above"),
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
