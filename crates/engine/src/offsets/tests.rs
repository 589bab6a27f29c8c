//! Tests of offsets.rs: patterns, sizes and distributions, some against fio's own tools.
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

/// Issue 31: fio's blockalign past the smallest block (JESD219: 512 B to 64 KiB at 4 KiB
/// offsets): every offset on the alignment, the sizes the split's, skewed or uniform.
#[test]
fn offsets_align_past_the_smallest_block_of_a_split() {
    let split = stormark_spec::BsSplit::parse("512/20:1536/20:4k/40:64k/20").unwrap();
    for dist in ["random", "zoned:50/5:30/15:20/80"] {
        let mut g = OffsetGen::new(
            vec![16 << 20],
            Pattern {
                bs_min: 512,
                bs_max: 65536,
                bs_align: 4096,
                split: Some(split),
                dist: stormark_spec::Distribution::parse(dist).unwrap(),
                ..Pattern::fixed(40, 100, 512)
            },
            5,
        );
        let mut sizes = std::collections::BTreeSet::new();
        for _ in 0..20_000 {
            let r = g.next_io().unwrap();
            assert_eq!(r.offset % 4096, 0, "{dist}: {r:?}");
            assert!(r.offset + u64::from(r.len) <= 16 << 20, "{dist}: {r:?}");
            sizes.insert(r.len);
        }
        assert_eq!(
            sizes.into_iter().collect::<Vec<_>>(),
            [512, 1536, 4096, 65536],
            "{dist}"
        );
    }
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

/// Issue 31: fio's `rw=randread:4`: a random offset every 4 I/Os, the 3 between going on
/// from it block by block (or, `rw_sequencer=identical`, repeating it).
#[test]
fn a_random_run_draws_every_n_ios() {
    let draw = |same: bool| {
        let mut g = OffsetGen::new(
            vec![1 << 30],
            Pattern {
                rand_run: 4,
                rand_run_same: same,
                ..Pattern::fixed(100, 100, 4096)
            },
            7,
        );
        (0..400)
            .map(|_| g.next_io().unwrap().offset)
            .collect::<Vec<u64>>()
    };
    let seq = draw(false);
    let mut starts = std::collections::HashSet::new();
    for run in seq.chunks(4) {
        starts.insert(run[0]);
        assert_eq!(run, [run[0], run[0] + 4096, run[0] + 8192, run[0] + 12288]);
    }
    // A new random offset each run: 100 runs over 262,144 blocks, all but by chance distinct.
    assert!(starts.len() >= 98, "{}", starts.len());
    for run in draw(true).chunks(4) {
        assert_eq!(run, [run[0]; 4]);
    }
}

/// Issue 31: fio's trim patterns: sequential trims block after block, wrapping; `trimwrite`
/// a write of each trimmed block right after its trim; random trims within the file.
#[test]
fn trims_go_block_by_block_and_trimwrite_writes_each_again() {
    let gen = |trim: u8, random: u8| {
        OffsetGen::new(
            vec![16384],
            Pattern {
                trim,
                ..Pattern::fixed(0, random, 4096)
            },
            3,
        )
    };
    let mut t = gen(1, 0);
    let got: Vec<(Op, u64)> = (0..5)
        .map(|_| t.next_io().map(|r| (r.op, r.offset)).unwrap())
        .collect();
    assert_eq!(
        got,
        [
            (Op::Trim, 0),
            (Op::Trim, 4096),
            (Op::Trim, 8192),
            (Op::Trim, 12288),
            (Op::Trim, 0)
        ]
    );
    let mut tw = gen(2, 0);
    let got: Vec<(Op, u64)> = (0..4)
        .map(|_| tw.next_io().map(|r| (r.op, r.offset)).unwrap())
        .collect();
    assert_eq!(
        got,
        [
            (Op::Trim, 0),
            (Op::Write, 0),
            (Op::Trim, 4096),
            (Op::Write, 4096)
        ]
    );
    let mut r = gen(1, 100);
    assert!((0..100).all(|_| {
        let io = r.next_io().unwrap();
        io.op == Op::Trim && io.offset % 4096 == 0 && io.offset + 4096 <= 16384
    }));
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

/// fio's `random_distribution=sequence:2,0,1`: the blocks in that order again and again; with
/// `random_sequence_stride=1` each round moved on by three blocks (2, 0, 1, 5, 3, 4, ...),
/// wrapping around the file, as fio's sequence-distribution example says.
#[test]
fn a_sequence_distribution_visits_its_blocks_in_order() {
    let blocks = |stride: bool, n: usize| {
        let dist = match Distribution::parse("sequence:2,0,1").unwrap() {
            Distribution::Sequence { blocks, count, .. } => Distribution::Sequence {
                blocks,
                count,
                stride,
            },
            d => panic!("{d:?}"),
        };
        let mut g = OffsetGen::new(
            vec![12 * 4096],
            Pattern {
                dist,
                ..Pattern::fixed(100, 100, 4096)
            },
            5,
        );
        (0..n)
            .map(|_| g.next_io().unwrap().offset / 4096)
            .collect::<Vec<_>>()
    };
    assert_eq!(blocks(false, 6), [2, 0, 1, 2, 0, 1]);
    assert_eq!(
        blocks(true, 15),
        [2, 0, 1, 5, 3, 4, 8, 6, 7, 11, 9, 10, 2, 0, 1]
    );
    assert!(Distribution::parse("sequence:1,x").is_none());
    assert_eq!(
        Distribution::parse("sequence:2,0,1").unwrap().name(),
        "sequence:2,0,1"
    );
}

/// fio's random map: each pass visits every block once, none twice, in a random order (not
/// in order); a file of a length not a multiple of 64 blocks too; the next pass starts anew.
#[test]
fn a_random_map_visits_each_block_once_a_pass() {
    for blocks in [1u64, 63, 64, 1000] {
        let mut g = OffsetGen::new(
            vec![blocks * 4096],
            Pattern {
                random_map: true,
                ..Pattern::fixed(100, 100, 4096)
            },
            7,
        );
        let mut seen = vec![0u32; blocks as usize];
        let mut order = Vec::new();
        for _ in 0..blocks * 2 {
            let b = g.next_io().unwrap().offset / 4096;
            seen[b as usize] += 1;
            order.push(b);
        }
        assert!(seen.iter().all(|&n| n == 2), "{blocks}: {seen:?}");
        if blocks > 1 {
            assert_ne!(
                order[..blocks as usize],
                (0..blocks).collect::<Vec<_>>()[..]
            );
        }
    }
    // Without it, draws repeat: 1000 draws over 1000 blocks leave about a third unread.
    let mut g = OffsetGen::new(vec![1000 * 4096], Pattern::fixed(100, 100, 4096), 7);
    let mut seen = [false; 1000];
    for _ in 0..1000 {
        seen[(g.next_io().unwrap().offset / 4096) as usize] = true;
    }
    let unread = seen.iter().filter(|s| !**s).count();
    assert!((300..440).contains(&unread), "{unread}");
}

/// Issue 31: fio's strided zones (`zonemode=strided`), as fio's `setup_strided_zone_mode`
/// walks them: a zone's bytes, then the next zone a skip past its end, wrapping to the start.
#[test]
fn strided_zones_move_on_after_their_bytes() {
    let zoned = |size, range, skip, random_pct, map| Pattern {
        zones: Some(stormark_spec::Zones { size, range, skip }),
        random_map: map,
        ..Pattern::fixed(100, random_pct, 16 << 10)
    };
    let offsets = |g: &mut OffsetGen, n| -> Vec<u64> {
        (0..n).map(|_| g.next_io().unwrap().offset >> 10).collect()
    };
    // A 1 MiB file, zones of 64 KiB read whole, 192 KiB skipped: 0, 256, 512 and 768 KiB,
    // then the start again.
    let mut g = OffsetGen::new(
        vec![1 << 20],
        zoned(64 << 10, 64 << 10, 192 << 10, 0, false),
        1,
    );
    let want: Vec<u64> = [0, 256, 512, 768, 0]
        .iter()
        .flat_map(|z| (0..4).map(move |b| z + b * 16))
        .collect();
    assert_eq!(offsets(&mut g, 20), want);
    // Twice a zone's range moved in it: each zone read round twice before the next.
    let mut g = OffsetGen::new(vec![1 << 20], zoned(128 << 10, 64 << 10, 0, 0, false), 1);
    assert_eq!(
        offsets(&mut g, 12),
        vec![0, 16, 32, 48, 0, 16, 32, 48, 64, 80, 96, 112]
    );
    // Random, with the map: each zone's four blocks once each, then the next zone's.
    let mut g = OffsetGen::new(
        vec![1 << 20],
        zoned(64 << 10, 64 << 10, 192 << 10, 100, true),
        9,
    );
    for zone in [0, 256, 512, 768, 0] {
        let mut got = offsets(&mut g, 4);
        got.sort_unstable();
        assert_eq!(got, vec![zone, zone + 16, zone + 32, zone + 48]);
    }
    // Random without the map, in a zone cut short by the file's end (960 KiB to 1 MiB):
    // every offset within its zone.
    let mut g = OffsetGen::new(
        vec![1 << 20],
        zoned(64 << 10, 128 << 10, 192 << 10, 100, false),
        5,
    );
    for _ in 0..1000 {
        let r = g.next_io().unwrap();
        let zone = [0u64, 320 << 10, 640 << 10, 960 << 10]
            .into_iter()
            .rev()
            .find(|z| r.offset >= *z)
            .unwrap();
        assert!(
            r.offset + r.len as u64 <= (zone + (128 << 10)).min(1 << 20),
            "{r:?}"
        );
    }
}

/// The fast path draws what the common path would: the same I/Os, in the same order, for
/// reads and for writes, one file or several of unlike lengths, alignments of a power of two
/// or not, and a file exactly one block long.
#[test]
fn the_fast_path_draws_what_the_common_path_would() {
    let cases: [(Vec<u64>, u8, u64, u64); 5] = [
        (vec![1 << 20], 100, 4096, 4096),
        (vec![1 << 20, 3 << 20, 5 * 4096 + 512], 0, 4096, 4096),
        (vec![10 * 12288 + 7], 100, 12288, 12288),
        (vec![4096, 1 << 16], 100, 4096, 512),
        (vec![8192], 0, 8192, 8192),
    ];
    for (lens, read_pct, bs, align) in cases {
        for seed in [1, 7, 0xdead_beef] {
            let pattern = Pattern {
                bs_align: align,
                ..Pattern::fixed(read_pct, 100, bs)
            };
            let mut fast = OffsetGen::new(lens.clone(), pattern, seed);
            let mut common = OffsetGen::new(lens.clone(), pattern, seed);
            assert!(fast.fast, "{lens:?} {read_pct} {bs} {align}");
            common.fast = false;
            for i in 0..20_000 {
                let (a, b) = (fast.next_io().unwrap(), common.next_io().unwrap());
                assert_eq!(
                    (a.op, a.file, a.offset, a.len),
                    (b.op, b.file, b.offset, b.len),
                    "{lens:?} {read_pct} {bs} {align} seed {seed}, I/O {i}"
                );
            }
        }
    }
    // Not taken where a draw decides more than the offset.
    for pattern in [
        Pattern::fixed(70, 100, 4096),
        Pattern::fixed(100, 50, 4096),
        Pattern {
            bs_max: 8192,
            ..Pattern::fixed(100, 100, 4096)
        },
        Pattern {
            random_map: true,
            ..Pattern::fixed(100, 100, 4096)
        },
    ] {
        assert!(!OffsetGen::new(vec![1 << 20], pattern, 1).fast);
    }
}
