//! First done and last done (elbencho's FIRST DONE / LAST DONE): when the quickest worker
//! of a phase finished its work and when the slowest did, over the phase and per host, with
//! the rate of every worker together up to each. The slowest worker or host sets the real
//! time of a size-bound phase; a time-bound one ends for all at once (`time_bound`).

use std::collections::BTreeMap;

use crate::results::{Breakdown, Done, DoneAt, Interval};

/// Bytes moved from the start to `t_ns`, from spans of (start ns, length ns, bytes): the span
/// holding `t_ns` counted in proportion.
fn bytes_until(spans: impl Iterator<Item = (u64, u64, u64)>, t_ns: u64) -> f64 {
    let mut sum = 0.0;
    for (start, len, bytes) in spans {
        if t_ns >= start + len {
            sum += bytes as f64;
        } else if t_ns > start {
            sum += bytes as f64 * (t_ns - start) as f64 / len.max(1) as f64;
        }
    }
    sum
}

fn at(t_ns: u64, bytes: f64) -> DoneAt {
    DoneAt {
        ns: t_ns,
        bw_bytes_per_s: if t_ns == 0 {
            0.0
        } else {
            bytes / (t_ns as f64 / 1e9)
        },
    }
}

/// The phase's first and last done from each worker's end (`(host, end_ns)`), the phase's
/// intervals and, with several hosts, each host's figures (its seconds); `None` when no worker said when
/// it ended.
pub(super) fn of(
    ends: &[(u16, u64)],
    hosts: &[String],
    intervals: &[Interval],
    by_host_figures: &BTreeMap<String, Breakdown>,
) -> Option<Done> {
    let first = ends.iter().map(|(_, e)| *e).min()?;
    let last = ends.iter().map(|(_, e)| *e).max()?;
    let spans = || {
        intervals.iter().map(|i| {
            (
                u64::from(i.t_s) * 1_000_000_000,
                i.duration_ns,
                i.total.bytes,
            )
        })
    };
    let mut by_host = BTreeMap::new();
    if hosts.len() > 1 {
        for (h, name) in hosts.iter().enumerate() {
            let mine: Vec<u64> = ends
                .iter()
                .filter(|(k, _)| usize::from(*k) == h)
                .map(|(_, e)| *e)
                .collect();
            let (Some(f), Some(l)) = (mine.iter().min(), mine.iter().max()) else {
                continue;
            };
            let seconds = by_host_figures
                .get(name)
                .map_or(&[][..], |b| b.seconds.as_slice());
            let spans = || {
                seconds.iter().map(|s| {
                    (
                        u64::from(s.t_s) * 1_000_000_000,
                        s.duration_ns,
                        s.by_op.values().map(|c| c.bytes).sum(),
                    )
                })
            };
            by_host.insert(
                name.clone(),
                Done {
                    first: at(*f, bytes_until(spans(), *f)),
                    last: at(*l, bytes_until(spans(), *l)),
                    time_bound: false,
                    by_host: BTreeMap::new(),
                },
            );
        }
    }
    Some(Done {
        first: at(first, bytes_until(spans(), first)),
        last: at(last, bytes_until(spans(), last)),
        time_bound: false,
        by_host,
    })
}

/// Marks the first and last done of each phase whose jobs all run for a time
/// (`timed(job name)`): every worker ends at that time, so the two say nothing (n/a).
pub fn mark_time_bound(phases: &mut [crate::Phase], timed: impl Fn(&str) -> bool) {
    for p in phases {
        let all_timed = !p.jobs.is_empty() && p.jobs.iter().all(|j| timed(&j.name));
        if let Some(d) = p.done.as_mut().filter(|_| all_timed) {
            d.time_bound = true;
            for h in d.by_host.values_mut() {
                h.time_bound = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_at_each_end_counts_the_second_it_falls_in_in_proportion() {
        // 100 bytes in each of two seconds; one worker ends at 0.5 s, the last at 2 s.
        let interval = |t_s, bytes| Interval {
            t_s,
            duration_ns: 1_000_000_000,
            total: crate::Summary {
                bytes,
                ..Default::default()
            },
            by_op: BTreeMap::new(),
        };
        let d = of(
            &[(0, 500_000_000), (0, 2_000_000_000)],
            &["h".to_string()],
            &[interval(0, 100), interval(1, 100)],
            &BTreeMap::new(),
        )
        .unwrap();
        assert_eq!(d.first.ns, 500_000_000);
        assert!((d.first.bw_bytes_per_s - 100.0).abs() < 1e-9, "{d:?}");
        assert_eq!(d.last.ns, 2_000_000_000);
        assert!((d.last.bw_bytes_per_s - 100.0).abs() < 1e-9);
        assert!(d.by_host.is_empty(), "one host: the phase is the host");
        assert!(of(&[], &[], &[], &BTreeMap::new()).is_none());
    }
}
