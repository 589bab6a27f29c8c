//! What `stormark net client` prints: a line a second, the summary with each stream as its
//! ends saw it, and the table of a streams sweep.

use stormark_net::{ClientOptions, Outcome};
use stormark_report::format_latency;
use stormark_stats::{Op, Snapshot};

/// Throughput against stream count, with each point's gain over the one before.
pub(crate) fn sweep_table(points: &[stormark_stats::SweepPoint]) -> String {
    use std::fmt::Write;
    let mut out = String::from("throughput by stream count:\n  streams      Gbit/s   gain\n");
    let mut before: Option<f64> = None;
    for p in points {
        let g = p.bw_bytes_per_s * 8.0 / 1e9;
        let gain = before.map_or_else(
            || "-".to_string(),
            |b| format!("{:+.0}%", 100.0 * (g / b - 1.0)),
        );
        let _ = writeln!(out, "  {:>7} {:>11.3} {:>6}", p.values["streams"], g, gain);
        before = Some(g);
    }
    out
}

pub(crate) fn gbits(bytes: u64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        bytes as f64 * 8.0 / ns as f64
    }
}

/// One line per second: the total and each stream (throughput), or round trips and their
/// percentiles (rtt).
pub(crate) fn second_line(t: u32, snaps: &[Snapshot]) -> String {
    let mut total = Snapshot::new();
    for s in snaps {
        total += s;
    }
    let rtt = total.op(Op::Rtt);
    if rtt.ops > 0 {
        return format!(
            "{:>4}-{:<4} s  {:>8} round trips   p50 {:>9}   p99 {:>9}",
            t,
            t + 1,
            rtt.ops,
            format_latency(rtt.hist.value_at_quantile(0.5)),
            format_latency(rtt.hist.value_at_quantile(0.99))
        );
    }
    let t_bytes = total.total().bytes;
    let per: Vec<String> = if snaps.len() > 1 {
        snaps
            .iter()
            .map(|s| format!("{:.2}", gbits(s.total().bytes, 1_000_000_000)))
            .collect()
    } else {
        Vec::new()
    };
    format!(
        "{:>4}-{:<4} s  {:>9.3} Gbit/s{}",
        t,
        t + 1,
        gbits(t_bytes, 1_000_000_000),
        if per.is_empty() {
            String::new()
        } else {
            format!("   streams {}", per.join(" "))
        }
    )
}

/// The summary: the receiver's total and rate, the sender's kernel's view per stream.
pub(crate) fn summary(opts: &ClientOptions, o: &Outcome) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let secs = o.duration_ns as f64 / 1e9;
    if o.op == Op::Rtt {
        let mut all = Snapshot::new();
        for sec in &o.seconds {
            for s in sec {
                all += s;
            }
        }
        let r = all.op(Op::Rtt);
        let q = |p: f64| format_latency(r.hist.value_at_quantile(p));
        let _ = writeln!(
            out,
            "rtt {} bytes each way, {} stream{}: {} round trips in {secs:.1} s ({:.0}/s)",
            opts.msg_size,
            opts.streams,
            if opts.streams == 1 { "" } else { "s" },
            r.ops,
            if secs > 0.0 { r.ops as f64 / secs } else { 0.0 }
        );
        let _ = writeln!(
            out,
            "  min {}  p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
            format_latency(r.hist.min()),
            q(0.5),
            q(0.9),
            q(0.99),
            q(0.999),
            format_latency(r.hist.max())
        );
        if let Some(service) = &r.service {
            // Open loop: the line above counts from each round trip's schedule.
            let _ = writeln!(
                out,
                "  at {:.0}/s asked, the above counts from each round trip's schedule; from its sending: p50 {}  p99 {}",
                opts.rate.unwrap_or(0.0),
                format_latency(service.value_at_quantile(0.5)),
                format_latency(service.value_at_quantile(0.99))
            );
        }
        if r.errors > 0 {
            let _ = writeln!(
                out,
                "  {} round trips failed (the connection broke)",
                r.errors
            );
        }
        return out;
    }
    let total: u64 = o.bytes.iter().sum();
    if opts.udp {
        let sent: u64 = o.udp.iter().map(|u| u.0).sum();
        let got: u64 = o.udp.iter().map(|u| u.1.datagrams).sum();
        let lost = sent.saturating_sub(got);
        let _ = writeln!(
            out,
            "UDP to {}: {:.3} Gbit/s received ({got} of {sent} datagrams; lost {lost}, {:.2}%)",
            opts.server,
            gbits(total, o.duration_ns),
            if sent > 0 {
                100.0 * lost as f64 / sent as f64
            } else {
                0.0
            }
        );
        for (i, (s, u)) in o.udp.iter().enumerate() {
            let _ = writeln!(
                out,
                "  stream {i}: sent {s}, received {}, out of order {}, jitter {}",
                u.datagrams,
                u.out_of_order,
                format_latency(u.jitter_ns)
            );
        }
        return out;
    }
    if opts.bidir {
        let n = opts.streams as usize;
        for (what, range) in [("sent to", 0..n), ("received from", n..2 * n)] {
            let b: u64 = o.bytes[range.clone()].iter().sum();
            let _ = writeln!(
                out,
                "{what} {}: {:.3} Gbit/s, both ways at once ({b} bytes in {secs:.2} s, counted by the receiver)",
                opts.server,
                gbits(b, o.duration_ns)
            );
        }
    } else {
        let _ = writeln!(
            out,
            "{} {}: {:.3} Gbit/s ({} bytes in {secs:.2} s, counted by the receiver)",
            if o.op == Op::Send {
                "sent to"
            } else {
                "received from"
            },
            opts.server,
            gbits(total, o.duration_ns),
            total
        );
    }
    for (i, b) in o.bytes.iter().enumerate() {
        let tcp = o.tcp.get(i).copied().flatten();
        // Each end's thread for this stream, in percent of one core over the test.
        let pct = |ns: Option<&u64>| {
            ns.filter(|_| o.duration_ns > 0)
                .map(|n| format!("{:.0}%", *n as f64 * 100.0 / o.duration_ns as f64))
        };
        let cpu = match (pct(o.sender_cpu_ns.get(i)), pct(o.receiver_cpu_ns.get(i))) {
            (Some(s), Some(r)) => format!("; cpu sender {s}, receiver {r} of a core"),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "  stream {i}{}: {:.3} Gbit/s{}{cpu}",
            if opts.bidir {
                if i < opts.streams as usize {
                    " (to)"
                } else {
                    " (from)"
                }
            } else {
                ""
            },
            gbits(*b, o.duration_ns),
            tcp.map(|t| format!(
                ", retransmits {}, cwnd {} segments, srtt {} (sender's TCP_INFO)",
                t.retransmits,
                t.snd_cwnd,
                format_latency(u64::from(t.rtt_us) * 1000)
            ))
            .unwrap_or_default()
        );
    }
    out
}
