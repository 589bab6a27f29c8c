//! ZFS's ARC, read as `arcstat` reads it: /proc/spl/kstat/zfs/arcstats (OpenZFS on Linux) is a
//! kstat header line, a `name type data` line, then one `name type value` line per counter.
//! On ZFS the ARC, not the page cache, holds what was read; a read it answers never reaches
//! the pool's disks. Only the counters a diagnosis needs are kept.

use stormark_stats::ArcSample;

/// The ARC's cumulative counters and its size at one read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ArcCounters {
    /// Every access the ARC answered (`hits`): demand and prefetch, data and metadata.
    pub hits: u64,
    /// Every access it could not (`misses`).
    pub misses: u64,
    /// Reads of file data asked by a caller, answered from the ARC (`demand_data_hits`).
    pub demand_data_hits: Option<u64>,
    /// Reads of file data asked by a caller that went to the disks (`demand_data_misses`).
    pub demand_data_misses: Option<u64>,
    /// What the ARC holds now, bytes (`size`).
    pub size_bytes: u64,
    /// What it aims to hold (`c`, the target the ARC adapts between `c_min` and `c_max`).
    pub target_bytes: Option<u64>,
    /// The most it may hold (`c_max`).
    pub max_bytes: Option<u64>,
}

/// Parses arcstats; `None` when it holds no `hits`, `misses` and `size` (not arcstats).
pub fn parse_arcstats(text: &str) -> Option<ArcCounters> {
    let mut hits = None;
    let mut misses = None;
    let mut size = None;
    let mut a = ArcCounters::default();
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let (Some(name), Some(_type), Some(value), None) = (f.next(), f.next(), f.next(), f.next())
        else {
            continue;
        };
        // The header lines ("13 1 0x01 ..." has seven fields; "name type data" no number).
        let Ok(v) = value.parse::<u64>() else {
            continue;
        };
        match name {
            "hits" => hits = Some(v),
            "misses" => misses = Some(v),
            "size" => size = Some(v),
            "demand_data_hits" => a.demand_data_hits = Some(v),
            "demand_data_misses" => a.demand_data_misses = Some(v),
            "c" => a.target_bytes = Some(v),
            "c_max" => a.max_bytes = Some(v),
            _ => {}
        }
    }
    a.hits = hits?;
    a.misses = misses?;
    a.size_bytes = size?;
    Some(a)
}

impl ArcCounters {
    /// What the ARC did between `prev` and now, over `secs`.
    pub fn since(&self, prev: &ArcCounters, secs: f64) -> ArcSample {
        let secs = secs.max(1e-3);
        let per_s = |now: u64, then: u64| now.saturating_sub(then) as f64 / secs;
        let opt = |now: Option<u64>, then: Option<u64>| Some(per_s(now?, then?));
        ArcSample {
            hits_per_s: per_s(self.hits, prev.hits),
            misses_per_s: per_s(self.misses, prev.misses),
            demand_data_hits_per_s: opt(self.demand_data_hits, prev.demand_data_hits),
            demand_data_misses_per_s: opt(self.demand_data_misses, prev.demand_data_misses),
            size_bytes: self.size_bytes,
            target_bytes: self.target_bytes,
            max_bytes: self.max_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_header_lines_are_not_counters() {
        let text = "13 1 0x01 123 33456 7402060102 66478716886640\nname                            type data\nhits                            4    10\nmisses                          4    5\nsize                            4    4096\n";
        let a = parse_arcstats(text).unwrap();
        assert_eq!((a.hits, a.misses, a.size_bytes), (10, 5, 4096));
        assert_eq!(a.demand_data_hits, None, "an older ZFS without it: unknown");
        assert!(parse_arcstats("name type data\n").is_none());
        let later = ArcCounters {
            hits: 110,
            misses: 25,
            ..a
        };
        let s = later.since(&a, 2.0);
        assert_eq!((s.hits_per_s, s.misses_per_s), (50.0, 10.0));
        assert_eq!(s.demand_data_hits_per_s, None);
    }

    proptest! {
        #[test]
        fn any_text_parses_without_a_panic(lines in proptest::collection::vec("[ -~\\t]{0,60}", 0..20)) {
            let _ = parse_arcstats(&lines.join("\n"));
        }
    }
}
