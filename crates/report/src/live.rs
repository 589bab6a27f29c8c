//! The live progress line: the last second of the running phase, rewritten in place.

use stormark_stats::Interval;

use crate::{format_bw, format_iops, format_latency};

/// Formats the live line. Kept out of the measuring threads: it runs on the coordinator.
#[derive(Debug, Default)]
pub struct LiveLine {
    width: usize,
}

impl LiveLine {
    /// A new live line.
    pub fn new() -> LiveLine {
        LiveLine::default()
    }

    /// The line for one merged second of `phase`, starting with `\r` and padded to cover the
    /// previous line.
    pub fn second(&mut self, phase: &str, interval: &Interval) -> String {
        let t = &interval.total;
        let p99 = t
            .latency_ns
            .map_or_else(|| "-".to_string(), |l| format_latency(l.p99));
        let text = format!(
            "{phase} {:>4}s  {:>7} IOPS  {:>11}  p99 {:>9}{}",
            interval.t_s + 1,
            format_iops(t.iops),
            format_bw(t.bw_bytes_per_s),
            p99,
            if t.errors > 0 {
                format!("  errors {}", t.errors)
            } else {
                String::new()
            }
        );
        let pad = self.width.saturating_sub(text.chars().count());
        self.width = text.chars().count();
        format!("\r{text}{}", " ".repeat(pad))
    }

    /// Clears the line (before the summary is printed).
    pub fn clear(&mut self) -> String {
        let s = format!("\r{}\r", " ".repeat(self.width));
        self.width = 0;
        s
    }
}
