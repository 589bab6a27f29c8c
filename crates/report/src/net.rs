//! The network section of the terminal report: each stream of the run's net session as its
//! ends saw it (the receiver's count, the sender's `TCP_INFO`, each end's thread CPU, UDP's
//! loss, order and jitter).

use std::fmt::Write;

use stormark_stats::{NetReport, Results};

use crate::format_latency;

/// Gbit/s of `bytes` over `ns`.
fn gbits(bytes: u64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        bytes as f64 * 8.0 / ns as f64
    }
}

/// The section, or nothing for a run without a net session (or only a path MTU probe, which
/// says its own line).
pub(crate) fn net_text(r: &Results) -> String {
    let Some(net) = &r.net else {
        return String::new();
    };
    if net.mode != "throughput" || net.streams.is_empty() {
        return String::new();
    }
    // The measured time of the last phase, the session's.
    let ns = r.phases.last().map_or(0, |p| p.duration_ns);
    let mut out = format!(
        "\nnet: {} {} {}, {} stream{} (counted by the receiver):\n",
        net.protocol,
        if net.bidir {
            "to and from"
        } else if net.reverse {
            "from"
        } else {
            "to"
        },
        net.server,
        net.streams.len(),
        if net.streams.len() == 1 { "" } else { "s" }
    );
    if net.protocol == "udp" {
        udp(&mut out, net, ns);
        return out;
    }
    let half = net.streams.len() / 2;
    for (i, s) in net.streams.iter().enumerate() {
        let way = match (net.bidir, i < half) {
            (false, _) => "",
            (true, true) => " (to)",
            (true, false) => " (from)",
        };
        let cpu = match (s.sender_cpu_pct, s.receiver_cpu_pct) {
            (Some(a), Some(b)) => format!("; cpu sender {a:.0}%, receiver {b:.0}% of a core"),
            _ => String::new(),
        };
        let tcp = match (s.retransmits, s.cwnd, s.srtt_us) {
            (Some(re), Some(cwnd), Some(srtt)) => format!(
                ", retransmits {re}, cwnd {cwnd} segments, srtt {} (sender's TCP_INFO)",
                format_latency(u64::from(srtt) * 1000)
            ),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "  stream {i}{way}: {:.3} Gbit/s{tcp}{cpu}",
            gbits(s.bytes, ns)
        );
    }
    out
}

fn udp(out: &mut String, net: &NetReport, ns: u64) {
    let sent: u64 = net.streams.iter().filter_map(|s| s.datagrams_sent).sum();
    if net.streams.iter().any(|s| s.datagrams_received.is_none()) {
        // No count from the receiver (it sent none, or one not to be believed): no loss.
        let why = net
            .failure
            .as_deref()
            .unwrap_or("the receiver said nothing");
        let _ = writeln!(
            out,
            "  {sent} datagrams sent, received not known: {}",
            stormark_spec::printable(why, 400)
        );
        return;
    }
    let got: u64 = net
        .streams
        .iter()
        .filter_map(|s| s.datagrams_received)
        .sum();
    let bytes: u64 = net.streams.iter().map(|s| s.bytes).sum();
    let lost = sent.saturating_sub(got);
    let _ = writeln!(
        out,
        "  {:.3} Gbit/s received ({got} of {sent} datagrams; lost {lost}, {:.2}%)",
        gbits(bytes, ns),
        if sent > 0 {
            100.0 * lost as f64 / sent as f64
        } else {
            0.0
        }
    );
    for (i, s) in net.streams.iter().enumerate() {
        let _ = writeln!(
            out,
            "  stream {i}: sent {}, received {}, out of order {}, jitter {}",
            s.datagrams_sent.unwrap_or(0),
            s.datagrams_received.unwrap_or(0),
            s.out_of_order.unwrap_or(0),
            format_latency(s.jitter_ns.unwrap_or(0))
        );
    }
}

/// What `stormark net client --mode pmtu` says: the path MTU found, against the interface's.
pub fn path_mtu_line(net: &NetReport) -> String {
    let name = net.interface.as_deref().unwrap_or("?");
    match (net.path_mtu, net.mtu) {
        (None, _) => format!(
            "path MTU to {}: not even 576-byte UDP datagrams came back (UDP blocked on the way?)",
            net.server
        ),
        (Some(p), Some(m)) if p < m => format!(
            "path MTU to {}: {p} bytes, less than {name}'s MTU of {m}: larger packets are dropped on the way (probed with DF set)",
            net.server
        ),
        (Some(p), m) => format!(
            "path MTU to {}: {p} bytes ({name}'s MTU {}; probed with DF set)",
            net.server,
            m.map_or("unknown".to_string(), |m| m.to_string())
        ),
    }
}

/// Both matrices (rows send, columns receive), then each host's interface.
pub(crate) fn mesh_text(r: &Results) -> String {
    let Some(mesh) = &r.mesh else {
        return String::new();
    };
    let names: Vec<String> = mesh.hosts.iter().map(|h| h.ip.clone()).collect();
    let names = &names[..];
    let mut out = String::new();
    let width = names.iter().map(String::len).max().unwrap_or(4).max(18);
    for (title, pairs) in [
        ("each pair alone", &mesh.alone),
        ("all pairs at once", &mesh.loaded),
    ] {
        if pairs.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "{title}: Gbit/s (retransmits), from the row's host to the column's"
        );
        matrix(&mut out, names, width, &|i, j| match pairs
            .iter()
            .find(|p| p.from as usize == i && p.to as usize == j)
        {
            _ if i == j => "-".to_string(),
            None => "".to_string(),
            Some(p) if p.not_run() => "not run".to_string(),
            Some(p) if p.failure.is_some() => "failed".to_string(),
            Some(p) => format!("{:.3} ({})", p.bits_per_s / 1e9, p.retransmits()),
        });
        if pairs.iter().all(|p| p.failure.is_none()) {
            let total: f64 = pairs.iter().map(|p| p.bits_per_s).sum();
            if title.starts_with("all") {
                let _ = writeln!(out, "  in total {:.3} Gbit/s", total / 1e9);
            }
        }
    }
    if mesh.alone.iter().any(|p| p.rtt_p50_ns.is_some()) {
        let _ = writeln!(
            out,
            "round trips of 64 bytes, each pair alone: p50 / p99, from the row's host to the column's"
        );
        matrix(&mut out, names, width, &|i, j| match mesh
            .alone
            .iter()
            .find(|p| p.from as usize == i && p.to as usize == j)
        {
            _ if i == j => "-".to_string(),
            Some(p) => match (p.rtt_p50_ns, p.rtt_p99_ns) {
                (Some(a), Some(b)) => {
                    format!("{} / {}", format_latency(a), format_latency(b))
                }
                _ => String::new(),
            },
            None => String::new(),
        });
    }
    // Why pairs were not run: each host that failed, where and how.
    for (h, host) in mesh.hosts.iter().zip(&r.hosts) {
        if let Some(f) = &host.failure {
            let _ = writeln!(
                out,
                "{} ({}) failed at {}: {}; its pairs from then on not run",
                h.ip, h.host, f.phase, f.message
            );
        }
    }
    for h in &mesh.hosts {
        let _ = writeln!(
            out,
            "{} ({}): {}{}{}",
            h.ip,
            h.host,
            h.interface.as_deref().unwrap_or("interface unknown"),
            h.mtu.map(|m| format!(", MTU {m}")).unwrap_or_default(),
            h.link_mbps
                .map(|s| format!(", rated {s} Mbit/s"))
                .unwrap_or_default()
        );
    }
    out
}

/// One matrix: a header of the columns' hosts, then a row per host, `cell(i, j)` from row `i`
/// to column `j`.
fn matrix(out: &mut String, names: &[String], width: usize, cell: &dyn Fn(usize, usize) -> String) {
    let _ = write!(out, "{:>width$}", "from \\ to");
    for n in names {
        let _ = write!(out, "  {n:>width$}");
    }
    out.push('\n');
    for (i, from) in names.iter().enumerate() {
        let _ = write!(out, "{from:>width$}");
        for j in 0..names.len() {
            let _ = write!(out, "  {:>width$}", cell(i, j));
        }
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use stormark_stats::{Host, HostFailure, MeshHost, MeshPair, MeshReport, Results};

    use super::mesh_text;

    /// Issue 53: a host killed between its tests: its later pairs say "not run" (not
    /// "failed", which a pair that ran and broke says), and the host's failure is named.
    #[test]
    fn a_mesh_says_which_pairs_were_not_run_and_why() {
        let mut r = Results::new(vec!["stormark".into()]);
        r.hosts = ["a", "b"]
            .iter()
            .map(|name| Host {
                name: (*name).into(),
                target: None,
                inventory: Default::default(),
                samples: Vec::new(),
                sampler_cpu_ns: None,
                address: Some(format!("{name}:7878")),
                failure: None,
                clock_offset_ns: None,
                clock_rtt_ns: None,
            })
            .collect();
        r.hosts[1].failure = Some(HostFailure {
            message: "agent b:7878: no longer answers".into(),
            phase: "pair:0->1".into(),
            at_ns: 0,
            last_interval: None,
        });
        let pair = |from, to, failure: Option<&str>| MeshPair {
            from,
            to,
            bits_per_s: 1e9,
            failure: failure.map(str::to_string),
            ..MeshPair::default()
        };
        r.mesh = Some(MeshReport {
            hosts: ["a", "b"]
                .iter()
                .map(|name| MeshHost {
                    agent: format!("{name}:7878"),
                    ip: format!("ip-{name}"),
                    host: (*name).into(),
                    ..MeshHost::default()
                })
                .collect(),
            streams: 1,
            time_ms: 1000,
            alone: vec![
                pair(0, 1, Some("not run: b:7878 (b) failed: gone")),
                pair(1, 0, Some("connection reset")),
            ],
            loaded: Vec::new(),
        });
        let text = mesh_text(&r);
        let row = |from: &str| {
            text.lines()
                .find(|l| l.trim_start().starts_with(from))
                .unwrap_or_else(|| panic!("no row {from}: {text}"))
                .to_string()
        };
        assert!(row("ip-a").ends_with("not run"), "{text}");
        assert!(row("ip-b").contains("failed"), "{text}");
        assert!(
            text.contains(
                "ip-b (b) failed at pair:0->1: agent b:7878: no longer answers; its pairs from then on not run"
            ),
            "{text}"
        );
    }
}
