//! A phase of many hosts, readable: above [`MANY_HOSTS`], the reports show the distribution of
//! the hosts' rates and name the slowest ones instead of a row, a bar or a line per host (the
//! results document keeps every host's figures).

use stormark_stats::{format_bw, format_iops, Phase};

/// Hosts above which a phase's hosts are summarized.
pub(crate) const MANY_HOSTS: usize = 24;

/// The hosts named as the slowest.
pub(crate) const SLOWEST: usize = 10;

/// Each host's rate in `p` (bytes or operations per second), slowest first, ties by name.
pub(crate) fn by_rate(p: &Phase, bytes: bool) -> Vec<(&str, f64)> {
    let mut v: Vec<(&str, f64)> = p
        .by_host
        .iter()
        .map(|(h, b)| {
            let r = if bytes {
                b.total.bw_bytes_per_s
            } else {
                b.total.iops
            };
            (h.as_str(), r)
        })
        .collect();
    v.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(b.0)));
    v
}

/// One of the hosts a report names: the failed ones, then the slowest below the median.
pub(crate) struct Named<'a> {
    pub host: &'a str,
    /// Its rate (over the time it ran, for a failed host).
    pub rate: f64,
    /// Its rate against the median host's, percent.
    pub share: f64,
    /// A host that failed or was cut off: how long it ran, ns.
    pub failed_after: Option<u64>,
}

impl Named<'_> {
    /// `h0042 100 IOPS (10%)`, `h0007 FAILED after 3.0 s, 900 IOPS (90%)`.
    pub(crate) fn text(&self, bytes: bool) -> String {
        let failed = self.failed_after.map_or_else(String::new, |ns| {
            format!(" FAILED after {:.1} s,", ns as f64 / 1e9)
        });
        format!(
            "{}{failed} {} ({:.0}%)",
            self.host,
            show(self.rate, bytes),
            self.share
        )
    }
}

/// The hosts of `p` a report names: every host that failed or was cut off, then the slowest
/// below the median, [`SLOWEST`] in all at most (hosts tied at the median are not "slowest").
pub(crate) fn named(p: &Phase, bytes: bool) -> Vec<Named<'_>> {
    let v = by_rate(p, bytes);
    if v.is_empty() {
        return Vec::new();
    }
    let median = at(&v, 0.5);
    let share = |r: f64| {
        if median > 0.0 {
            r / median * 100.0
        } else {
            0.0
        }
    };
    let ran = |h: &str| p.by_host.get(h).and_then(|b| b.ran_ns);
    let failed = v.iter().filter(|(h, _)| ran(h).is_some());
    let below = v.iter().filter(|(h, r)| ran(h).is_none() && *r < median);
    failed
        .chain(below)
        .take(SLOWEST)
        .map(|&(host, rate)| Named {
            host,
            rate,
            share: share(rate),
            failed_after: ran(host),
        })
        .collect()
}

/// Whether host `h` of `p` gets a row of its own: every host of a few, the named ones of many.
pub(crate) fn shown(p: &Phase) -> impl Fn(&str) -> bool + '_ {
    let many = p.by_host.len() > MANY_HOSTS;
    let named: Vec<&str> = if many {
        named(p, false).into_iter().map(|n| n.host).collect()
    } else {
        Vec::new()
    };
    move |h| !many || named.contains(&h)
}

/// A host as a row of the reports names it: with `(FAILED after S s)` when it failed or was
/// cut off (its rates are over the time it ran).
pub(crate) fn host_label(host: &str, b: &stormark_stats::Breakdown) -> String {
    b.ran_ns.map_or_else(
        || host.to_string(),
        |ns| format!("{host} (FAILED after {:.1} s)", ns as f64 / 1e9),
    )
}

/// A rate as the reports write it.
pub(crate) fn show(v: f64, bytes: bool) -> String {
    if bytes {
        format_bw(v)
    } else {
        format!("{} IOPS", format_iops(v))
    }
}

/// The value at quantile `q` of `sorted` (nearest rank).
fn at(sorted: &[(&str, f64)], q: f64) -> f64 {
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].1
}

/// The hosts of `p` in two lines: the distribution of their rates (min, p10, median, p90, max)
/// with the failed hosts counted, and the hosts named (see [`named`]) with their share of the
/// median.
pub(crate) fn summary(p: &Phase, bytes: bool) -> String {
    let v = by_rate(p, bytes);
    if v.is_empty() {
        return String::new();
    }
    let median = at(&v, 0.5);
    let named = named(p, bytes);
    let failed = named.iter().filter(|n| n.failed_after.is_some()).count();
    let failed = match failed {
        0 => String::new(),
        n => format!(" ({n} FAILED)"),
    };
    let slowest = if named.is_empty() {
        format!("slowest: none below the median ({})", show(median, bytes))
    } else {
        format!(
            "slowest {}: {}",
            named.len(),
            named
                .iter()
                .map(|n| n.text(bytes))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    format!(
        "{} hosts{failed}: min {}, p10 {}, median {}, p90 {}, max {} per host\n{slowest}\n",
        v.len(),
        show(v[0].1, bytes),
        show(at(&v, 0.1), bytes),
        show(median, bytes),
        show(at(&v, 0.9), bytes),
        show(v[v.len() - 1].1, bytes),
    )
}

/// The hosts' rates as a histogram: about `bins` equal ranges between the least and the most,
/// each with how many hosts fall in it, labelled by its range.
pub(crate) fn histogram(p: &Phase, bytes: bool, bins: usize) -> Vec<(String, f64)> {
    let v = by_rate(p, bytes);
    let (Some(lo), Some(hi)) = (v.first().map(|x| x.1), v.last().map(|x| x.1)) else {
        return Vec::new();
    };
    let bins = bins.max(1);
    let width = ((hi - lo) / bins as f64).max(f64::MIN_POSITIVE);
    let mut counts = vec![0u32; bins];
    for (_, r) in &v {
        let i = (((r - lo) / width) as usize).min(bins - 1);
        counts[i] += 1;
    }
    counts
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let from = lo + width * i as f64;
            (
                format!("{}–{}", show(from, bytes), show(from + width, bytes)),
                f64::from(*n),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use stormark_stats::{Breakdown, Summary};

    fn phase(rates: &[f64]) -> Phase {
        let mut p: Phase = serde_json::from_value(serde_json::json!({
            "name": "run", "jobs": [], "start_offset_ns": 0, "duration_ns": 1_000_000_000u64,
            "total": Summary::default(), "by_op": {}, "by_host": {}, "by_job": {},
            "errors": [], "intervals": [], "histograms": {}
        }))
        .unwrap();
        for (i, r) in rates.iter().enumerate() {
            p.by_host.insert(
                format!("h{i:04}"),
                Breakdown {
                    ran_ns: None,
                    total: Summary {
                        iops: *r,
                        ..Summary::default()
                    },
                    by_op: Default::default(),
                    seconds: Vec::new(),
                },
            );
        }
        p
    }

    #[test]
    fn a_thousand_hosts_are_a_distribution_and_the_slowest() {
        // 1,000 hosts at 1,000 IOPS but three slow ones.
        let mut rates = vec![1000.0; 1000];
        rates[17] = 100.0;
        rates[500] = 200.0;
        rates[999] = 300.0;
        let p = phase(&rates);
        let s = summary(&p, false);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines.len(), 2, "{s}");
        assert!(lines[0].starts_with("1000 hosts: min 100 IOPS"), "{s}");
        assert!(lines[0].contains("median 1.00k IOPS"), "{s}");
        // The three below the median, not seven more tied at it.
        assert_eq!(
            lines[1], "slowest 3: h0017 100 IOPS (10%), h0500 200 IOPS (20%), h0999 300 IOPS (30%)",
            "{s}"
        );
        let bins = histogram(&p, false, 9);
        assert_eq!(bins.len(), 9);
        assert_eq!(bins.iter().map(|b| b.1).sum::<f64>(), 1000.0);
        assert_eq!(bins[8].1, 997.0);
    }

    /// Issue 53: a failed host is marked and named first; hosts tied at the median are not
    /// "the slowest".
    #[test]
    fn a_failed_host_is_marked_and_ties_are_not_the_slowest() {
        let mut p = phase(&[1000.0; 100]);
        let s = summary(&p, false);
        assert!(s.starts_with("100 hosts: min 1.00k IOPS"), "{s}");
        assert!(
            s.contains("slowest: none below the median (1.00k IOPS)"),
            "{s}"
        );
        assert!(!shown(&p)("h0001"));
        p.by_host.get_mut("h0042").unwrap().ran_ns = Some(3_000_000_000);
        p.by_host.get_mut("h0007").unwrap().total.iops = 500.0;
        let s = summary(&p, false);
        assert!(s.starts_with("100 hosts (1 FAILED): min 500 IOPS"), "{s}");
        assert!(
            s.contains(
                "slowest 2: h0042 FAILED after 3.0 s, 1.00k IOPS (100%), h0007 500 IOPS (50%)"
            ),
            "{s}"
        );
        assert!(shown(&p)("h0042") && shown(&p)("h0007") && !shown(&p)("h0001"));
    }
}
