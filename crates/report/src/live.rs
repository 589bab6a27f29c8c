//! What is happening now, in words: the live line a terminal redraws in place, and the
//! progress line written every few seconds where there is no terminal (a CI log, `kubectl
//! logs`). Both say the same text of the same merged second, the coordinator's, which
//! `--metrics-listen` is fed too: one source of "what is happening now".

use std::fmt::Write as _;

use stormark_stats::Interval;

use crate::{format_bw, format_iops, format_latency};

/// One merged second of the running phase and where the run stands.
#[derive(Debug, Clone, Copy)]
pub struct Now<'a> {
    /// The phase's name.
    pub phase: &'a str,
    /// Its place among the run's phases: (this one, counting from 1; how many there are, or
    /// at most, as `bounded` says). `None` for the preparation.
    pub place: Option<(usize, usize)>,
    /// The count of phases is a bound (a search's step budget), not exact.
    pub bounded: bool,
    /// Seconds of the phase measured so far (this one included; the ramp not counted).
    pub elapsed_s: u64,
    /// Seconds the phase is planned to measure, where it says (`--time`).
    pub planned_s: Option<u64>,
    /// The second, merged over every host.
    pub interval: &'a Interval,
    /// Several hosts: the one that did the fewest operations in the second, and its rate.
    pub slowest: Option<(&'a str, f64)>,
}

impl Now<'_> {
    /// The text both lines say, fields two spaces apart in a fixed order (docs/run.md):
    /// `phase 2/3 randrw-4k  5s (3s left)  45.2k IOPS  176 MiB/s  p99 1.23 ms  0 errors`,
    /// then `slowest HOST 40.1k IOPS` with several hosts.
    pub fn text(&self) -> String {
        let t = &self.interval.total;
        let phase = printable(self.phase);
        let mut out = match self.place {
            Some((i, n)) if self.bounded => format!("phase {i} of at most {n} {phase}"),
            Some((i, n)) => format!("phase {i}/{n} {phase}"),
            None => phase,
        };
        let _ = write!(out, "  {}s", self.elapsed_s);
        if let Some(planned) = self.planned_s {
            let _ = write!(out, " ({}s left)", planned.saturating_sub(self.elapsed_s));
        }
        // Operations of objects or of metadata are not I/Os.
        let unit = if self
            .interval
            .by_op
            .keys()
            .all(|op| matches!(op.as_str(), "read" | "write" | "trim" | "sync"))
        {
            "IOPS"
        } else {
            "ops/s"
        };
        let p99 = t
            .latency_ns
            .map_or_else(|| "-".to_string(), |l| format_latency(l.p99));
        let _ = write!(
            out,
            "  {} {unit}  {}  p99 {p99}  {} errors",
            format_iops(t.iops),
            format_bw(t.bw_bytes_per_s),
            t.errors
        );
        if let Some((host, rate)) = self.slowest {
            let host = printable(host);
            let _ = write!(out, "  slowest {host} {} {unit}", format_iops(rate));
        }
        out
    }
}

/// A name as one line of plain text: a host name an agent sent, or a job's, cannot move the
/// cursor, clear the screen or break the line.
fn printable(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// The live line of a terminal, redrawn in place: a carriage return and ANSI's erase to the
/// end of the line (`ESC [ K`), which every terminal emulator in use reads. Kept out of the
/// measuring threads: it runs on the coordinator's.
#[derive(Debug, Default)]
pub struct LiveLine {
    shown: bool,
}

impl LiveLine {
    /// A new live line.
    pub fn new() -> LiveLine {
        LiveLine::default()
    }

    /// What redraws the line as `text`.
    pub fn show(&mut self, text: &str) -> String {
        self.shown = true;
        format!("\r{text}\x1b[K")
    }

    /// What clears the line (before a table is printed); nothing when none is shown.
    pub fn clear(&mut self) -> &'static str {
        if std::mem::take(&mut self.shown) {
            "\r\x1b[K"
        } else {
            ""
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stormark_stats::Summary;

    fn second(iops: f64, errors: u64) -> Interval {
        let total = Summary {
            ops: iops as u64,
            iops,
            bw_bytes_per_s: iops * 4096.0,
            errors,
            ..Summary::default()
        };
        Interval {
            t_s: 4,
            duration_ns: 1_000_000_000,
            by_op: [("read".to_string(), total.clone())].into(),
            total,
        }
    }

    #[test]
    fn the_text_says_place_time_figures_and_the_slowest_host() {
        let i = second(45_200.0, 0);
        let now = Now {
            phase: "randrw-4k",
            place: Some((2, 3)),
            bounded: false,
            elapsed_s: 5,
            planned_s: Some(8),
            interval: &i,
            slowest: None,
        };
        assert_eq!(
            now.text(),
            "phase 2/3 randrw-4k  5s (3s left)  45.2k IOPS  177 MiB/s  p99 -  0 errors"
        );
        let search = Now {
            phase: "search-step-3",
            place: Some((3, 12)),
            bounded: true,
            planned_s: None,
            slowest: Some(("node2", 40_100.0)),
            ..now
        };
        assert_eq!(
            search.text(),
            "phase 3 of at most 12 search-step-3  5s  45.2k IOPS  177 MiB/s  p99 -  0 errors  slowest node2 40.1k IOPS"
        );
        let prepare = Now {
            phase: "prepare",
            place: None,
            planned_s: None,
            ..now
        };
        assert!(prepare.text().starts_with("prepare  5s  45.2k IOPS"));
        let hostile = Now {
            slowest: Some(("a\u{1b}[2J\nb", 1.0)),
            ..now
        };
        assert!(
            hostile.text().ends_with("slowest a?[2J?b 1 IOPS"),
            "{}",
            hostile.text()
        );
    }

    #[test]
    fn the_line_is_redrawn_and_cleared_once() {
        let mut line = LiveLine::new();
        assert_eq!(line.clear(), "");
        assert_eq!(line.show("a"), "\ra\x1b[K");
        assert_eq!(line.clear(), "\r\x1b[K");
        assert_eq!(line.clear(), "");
    }
}
