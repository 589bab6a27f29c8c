//! Findings of network tests (`stormark net`): retransmits, MTUs that differ along the path,
//! a test below its own link's rated speed, and in a mesh the pairs slower than the others.

use serde_json::json;
use stormark_stats::{
    Finding, MeshPair, MeshReport, NetReport, NetStream, Phase, Results, Severity,
};

/// Retransmitted segments above this share of those sent: the path loses packets.
pub const RETRANSMIT_SHARE: f64 = 0.001;
/// Throughput below this share of the local link's rated speed is said.
pub const LINK_SHARE: f64 = 0.8;
/// A stream's thread using at least this share of one CPU: that end's CPU is its limit.
pub const CPU_SHARE: f64 = 0.9;
/// A mesh pair whose round trips take more than this many times the median pair's (and
/// [`RTT_MARGIN_NS`] more) is said.
pub const RTT_FACTOR: f64 = 2.0;
/// Round trips a few microseconds apart say nothing about a storage network.
pub const RTT_MARGIN_NS: u64 = 100_000;
/// A mesh pair below this share of the median pair of its matrix is said.
pub const PAIR_SHARE: f64 = 0.8;
/// IPv4 and TCP headers with timestamps: a full segment is this much less than the MTU.
const TCP_OVERHEAD: u32 = 52;

/// The network rules on a results document with a `net` section.
pub(crate) fn network_findings(r: &Results, out: &mut Vec<Finding>) {
    if let Some(mesh) = &r.mesh {
        mesh_findings(mesh, out);
    }
    // The document's last phase is the test the `net` section describes (the last point of
    // a sweep).
    let (Some(net), Some(phase)) = (&r.net, r.phases.last()) else {
        return;
    };
    if net.protocol != "tcp" || net.mode != "throughput" {
        return;
    }
    retransmits(net, out);
    mtu(net, out);
    below_link(net, phase, out);
    let (client, server) = ("this host".to_string(), net.server.clone());
    let (sender, receiver) = if net.reverse {
        (server, client)
    } else {
        (client, server)
    };
    let streams: Vec<CpuStream<'_>> = net
        .streams
        .iter()
        .enumerate()
        .map(|(i, s)| (format!("stream {i}"), sender.clone(), receiver.clone(), s))
        .collect();
    cpu_bound(&streams, out);
}

/// A stream to judge by its threads' CPU: what it is, its sender, its receiver.
type CpuStream<'a> = (String, String, String, &'a NetStream);

/// Streams whose sending or receiving thread used at least [`CPU_SHARE`] of a CPU.
fn cpu_bound(streams: &[CpuStream<'_>], out: &mut Vec<Finding>) {
    let mut bound = Vec::new();
    for (what, sender, receiver, s) in streams {
        for (end, host, pct) in [
            ("sending", sender, s.sender_cpu_pct),
            ("receiving", receiver, s.receiver_cpu_pct),
        ] {
            if let Some(pct) = pct.filter(|&p| p >= 100.0 * CPU_SHARE) {
                bound.push((
                    format!("{what}: the {end} thread on {host} at {pct:.0}%"),
                    host,
                ));
            }
        }
    }
    if bound.is_empty() {
        return;
    }
    let listed: Vec<&str> = bound.iter().map(|(l, _)| l.as_str()).collect();
    out.push(Finding {
        severity: Severity::Warning,
        code: "net-cpu-bound".into(),
        message: format!(
            "a CPU limits the throughput: {} of one CPU",
            listed.join(", ")
        ),
        evidence: json!({"threshold": CPU_SHARE, "streams": listed}),
        advice: "Each stream is one thread on each end, so one stream moves what one CPU can copy. Run more streams (--streams 4) to spread the work over CPUs; if the total does not grow, the host's CPUs are the limit (interrupt coalescing, TSO/GRO offloads and the NIC's queue count are where to look), not the network.".into(),
    });
}

fn retransmits(net: &NetReport, out: &mut Vec<Finding>) {
    let retrans: u64 = net
        .streams
        .iter()
        .filter_map(|s| s.retransmits)
        .map(u64::from)
        .sum();
    let segments: u64 = net
        .streams
        .iter()
        .filter_map(|s| Some(s.bytes / u64::from(s.mss?.max(1))))
        .sum();
    if segments == 0 || (retrans as f64) < RETRANSMIT_SHARE * segments as f64 {
        return;
    }
    out.push(Finding {
        severity: Severity::Warning,
        code: "net-retransmits".into(),
        message: format!(
            "the sender retransmitted {retrans} segments of about {segments} ({:.2}%)",
            100.0 * retrans as f64 / segments as f64
        ),
        evidence: json!({"retransmits": retrans, "segments": segments, "threshold": RETRANSMIT_SHARE}),
        advice: if net.interface.as_deref() == Some("lo") {
            "Over loopback nothing is lost on a wire: the receiving end did not keep up (its CPU, or its socket's receive queue). Between hosts this would point at loss on the path.".into()
        } else {
            "Packets are lost on the way: a bad cable or optic (look at the interfaces' error counters on both ends and on the switch), a switch buffer overflowing under bursts, or a duplex or MTU mismatch. On a LAN the count should be near zero.".into()
        },
    });
}

fn mtu(net: &NetReport, out: &mut Vec<Finding>) {
    // Loopback has no wire and no second MTU: its segments are whatever the kernel chose.
    if net.interface.as_deref() == Some("lo") {
        return;
    }
    // The sender's route allows `pmtu`; its segments are capped by the MSS the receiver
    // announced. Far apart: the receiver's MTU (or a hop's, clamping MSS) is smaller.
    let Some((pmtu, frame)) = net
        .streams
        .iter()
        .filter_map(|s| Some((s.pmtu?, s.mss? + TCP_OVERHEAD)))
        .find(|&(pmtu, frame)| pmtu >= frame + 100)
    else {
        return;
    };
    out.push(Finding {
        severity: Severity::Warning,
        code: "net-mtu-mismatch".into(),
        message: format!(
            "the sending end's MTU is {pmtu} bytes but its segments fit a {frame}-byte MTU: the MTUs differ between the hosts (jumbo frames on one end only?)"
        ),
        evidence: json!({"sender_pmtu": pmtu, "segment_mtu": frame}),
        advice: "Set the same MTU on every host and switch port of the storage network (all 9000, or all 1500). TCP adapts by announcing a smaller segment size, but UDP, RDMA and storage protocols that send large frames stall or fragment on the smaller side.".into(),
    });
}

fn below_link(net: &NetReport, phase: &Phase, out: &mut Vec<Finding>) {
    let (Some(speed), Some(name)) = (net.link_mbps, &net.interface) else {
        return;
    };
    let op = if net.reverse { "receive" } else { "send" };
    let Some(bw) = phase.by_op.get(op).map(|s| s.bw_bytes_per_s) else {
        return;
    };
    let mbit = bw * 8.0 / 1e6;
    if speed == 0 || mbit >= LINK_SHARE * speed as f64 {
        return;
    }
    out.push(Finding {
        severity: Severity::Warning,
        code: "net-below-link".into(),
        message: format!(
            "{mbit:.0} Mbit/s is {:.0}% of {name}'s rated {speed} Mbit/s",
            100.0 * mbit / speed as f64
        ),
        evidence: json!({"mbit_per_s": mbit, "interface": name, "link_mbps": speed, "threshold": LINK_SHARE}),
        advice: "Try more streams (--streams 4 or 8: one stream is limited by its window and by one CPU per end); if that does not help, look at the other end's link, the switch path between them, retransmits and the CPUs of both hosts.".into(),
    });
}

/// The rules of a mesh: slow pairs in each matrix, retransmits, MTUs that differ.
fn mesh_findings(m: &MeshReport, out: &mut Vec<Finding>) {
    let name = |i: u32| {
        m.hosts
            .get(i as usize)
            .map_or_else(|| format!("host {i}"), |h| h.ip.clone())
    };
    for (pairs, when) in [(&m.alone, "alone"), (&m.loaded, "all at once")] {
        slow_pairs(pairs, when, &name, out);
        mesh_retransmits(pairs, when, &name, out);
    }
    // Alone only: at once, every host's CPUs serve every pair.
    let streams: Vec<CpuStream<'_>> = m
        .alone
        .iter()
        .flat_map(|p| {
            let pair = format!("{} -> {}", name(p.from), name(p.to));
            p.streams
                .iter()
                .map(move |s| (pair.clone(), name(p.from), name(p.to), s))
        })
        .collect();
    cpu_bound(&streams, out);
    mesh_mtu(m, &name, out);
    pairs_below_link(m, &name, out);
    path_mtu(m, &name, out);
    slow_round_trips(m, &name, out);
}

/// Pairs (alone) below [`LINK_SHARE`] of the slower end's rated interface speed: what the
/// median rule misses when every pair is slow alike (a switch, an MTU, a bond).
fn pairs_below_link(m: &MeshReport, name: &dyn Fn(u32) -> String, out: &mut Vec<Finding>) {
    let rated = |i: u32| {
        m.hosts
            .get(i as usize)
            .and_then(|h| h.link_mbps)
            .filter(|s| *s > 0)
    };
    let below: Vec<(String, f64, u64)> = m
        .alone
        .iter()
        .filter(|p| p.failure.is_none())
        .filter_map(|p| {
            let speed = match (rated(p.from), rated(p.to)) {
                (Some(a), Some(b)) => a.min(b),
                (Some(a), None) | (None, Some(a)) => a,
                (None, None) => return None,
            };
            let mbit = p.bits_per_s / 1e6;
            (mbit < LINK_SHARE * speed as f64)
                .then(|| (format!("{} -> {}", name(p.from), name(p.to)), mbit, speed))
        })
        .collect();
    if below.is_empty() {
        return;
    }
    let listed: Vec<String> = below
        .iter()
        .map(|(pair, mbit, speed)| {
            format!(
                "{pair} {mbit:.0} of {speed} Mbit/s ({:.0}%)",
                100.0 * mbit / *speed as f64
            )
        })
        .collect();
    out.push(Finding {
        severity: Severity::Warning,
        code: "net-pair-below-link".into(),
        message: format!(
            "{} of {} pairs (alone) carry less than {:.0}% of their interfaces' rated speed: {}",
            below.len(),
            m.alone.len(),
            100.0 * LINK_SHARE,
            listed.join(", ")
        ),
        evidence: json!({"threshold": LINK_SHARE, "pairs": below.iter().map(|(pair, mbit, speed)| json!({"pair": pair, "mbit_per_s": mbit, "link_mbps": speed})).collect::<Vec<_>>()}),
        advice: "Try more streams (--streams 4 or 8: one stream is limited by its window and by one CPU per end); if every pair stays low, look at what they share (the switch, its uplinks, a bond's hashing, flow control); if some do, at those hosts' links and ports.".into(),
    });
}

/// Pairs whose round trips (p50, alone) take more than [`RTT_FACTOR`] times the median
/// pair's, and at least [`RTT_MARGIN_NS`] more.
fn slow_round_trips(m: &MeshReport, name: &dyn Fn(u32) -> String, out: &mut Vec<Finding>) {
    let mut p50s: Vec<u64> = m.alone.iter().filter_map(|p| p.rtt_p50_ns).collect();
    if p50s.len() < 2 {
        return;
    }
    p50s.sort_unstable();
    let median = p50s[p50s.len() / 2];
    let slow: Vec<(String, u64)> = m
        .alone
        .iter()
        .filter_map(|p| {
            let v = p.rtt_p50_ns?;
            (v as f64 > RTT_FACTOR * median as f64 && v >= median + RTT_MARGIN_NS)
                .then(|| (format!("{} -> {}", name(p.from), name(p.to)), v))
        })
        .collect();
    if slow.is_empty() {
        return;
    }
    let listed: Vec<String> = slow
        .iter()
        .map(|(pair, v)| format!("{pair} {:.0} µs", *v as f64 / 1e3))
        .collect();
    out.push(Finding {
        severity: Severity::Warning,
        code: "net-pair-latency".into(),
        message: format!(
            "round trips slower than the median pair's {:.0} µs (p50 of 64-byte round trips, each pair alone): {}",
            median as f64 / 1e3,
            listed.join(", ")
        ),
        evidence: json!({"median_p50_ns": median, "factor": RTT_FACTOR, "margin_ns": RTT_MARGIN_NS, "pairs": slow.iter().map(|(pair, v)| json!({"pair": pair, "p50_ns": v})).collect::<Vec<_>>()}),
        advice: "Every synchronous write and every metadata operation pays this round trip: look for an extra hop (a route through another switch or a router), interrupt moderation or power saving on one host's NIC, or a busy CPU on one end.".into(),
    });
}

/// Pairs whose path carries smaller packets than the sender's interface sends: a hop (or the
/// receiver) drops larger frames without a word, which TCP hides and UDP does not.
fn path_mtu(m: &MeshReport, name: &dyn Fn(u32) -> String, out: &mut Vec<Finding>) {
    let small: Vec<(String, u32, u32)> = m
        .alone
        .iter()
        .filter_map(|p| {
            let sender = m.hosts.get(p.from as usize)?.mtu?;
            let path = p.path_mtu?;
            (path < sender).then(|| (format!("{} -> {}", name(p.from), name(p.to)), path, sender))
        })
        .collect();
    if small.is_empty() {
        return;
    }
    let listed: Vec<String> = small
        .iter()
        .map(|(pair, path, mtu)| format!("{pair} carries {path} of {mtu} bytes"))
        .collect();
    out.push(Finding {
        severity: Severity::Warning,
        code: "net-path-mtu".into(),
        message: format!(
            "packets larger than the path carries are dropped on the way: {} (probed with DF set)",
            listed.join(", ")
        ),
        evidence: json!({"pairs": small.iter().map(|(pair, path, mtu)| json!({"pair": pair, "path_mtu": path, "sender_mtu": mtu})).collect::<Vec<_>>()}),
        advice: "A hop between these hosts (a switch port, a router, a tunnel, or the receiver itself) has a smaller MTU than the sender: its larger frames vanish without an error. TCP copes by announcing smaller segments; UDP, NFS over UDP, iSCSI/RDMA and VXLAN do not. Make the MTU the same end to end (and the switches' at least as large).".into(),
    });
}

/// Pairs of one matrix below [`PAIR_SHARE`] of its median pair.
fn slow_pairs(
    pairs: &[MeshPair],
    when: &str,
    name: &dyn Fn(u32) -> String,
    out: &mut Vec<Finding>,
) {
    let mut rates: Vec<f64> = pairs
        .iter()
        .filter(|p| p.failure.is_none())
        .map(|p| p.bits_per_s)
        .collect();
    if rates.len() < 2 {
        return;
    }
    rates.sort_by(f64::total_cmp);
    let mid = rates.len() / 2;
    let median = if rates.len().is_multiple_of(2) {
        (rates[mid - 1] + rates[mid]) / 2.0
    } else {
        rates[mid]
    };
    let slow: Vec<&MeshPair> = pairs
        .iter()
        .filter(|p| p.failure.is_none() && p.bits_per_s < PAIR_SHARE * median)
        .collect();
    if slow.is_empty() {
        return;
    }
    let listed: Vec<String> = slow
        .iter()
        .map(|p| {
            format!(
                "{} -> {} {:.3} Gbit/s ({:.0}%)",
                name(p.from),
                name(p.to),
                p.bits_per_s / 1e9,
                100.0 * p.bits_per_s / median
            )
        })
        .collect();
    // A slow row is the sender's side; a slow column the receiver's.
    let senders: std::collections::BTreeSet<u32> = slow.iter().map(|p| p.from).collect();
    let receivers: std::collections::BTreeSet<u32> = slow.iter().map(|p| p.to).collect();
    let pattern = match (senders.len(), receivers.len()) {
        (1, r) if r > 1 => format!(
            "; everything {} sends is slow: its outgoing side",
            name(*senders.first().expect("one"))
        ),
        (s, 1) if s > 1 => format!(
            "; everything {} receives is slow: its incoming side",
            name(*receivers.first().expect("one"))
        ),
        _ => String::new(),
    };
    out.push(Finding {
        severity: Severity::Warning,
        code: "net-pair-slow".into(),
        message: format!(
            "{} of {} pairs ({when}) below {:.0}% of the median pair ({:.3} Gbit/s): {}{pattern}",
            slow.len(),
            pairs.len(),
            100.0 * PAIR_SHARE,
            median / 1e9,
            listed.join(", ")
        ),
        evidence: json!({
            "matrix": when,
            "median_bits_per_s": median,
            "threshold": PAIR_SHARE,
            "pairs": slow.iter().map(|p| json!({"from": name(p.from), "to": name(p.to), "bits_per_s": p.bits_per_s})).collect::<Vec<_>>(),
        }),
        advice: "A path slower than its peers: the link speed one NIC negotiated (ethtool), a rate limit or QoS policy, a bad cable or optic, an overloaded switch uplink, or the host's CPU. A slow row points at the sender's side, a slow column at the receiver's; test the pair alone with stormark net client --streams 4 to see whether more streams help.".into(),
    });
}

fn mesh_retransmits(
    pairs: &[MeshPair],
    when: &str,
    name: &dyn Fn(u32) -> String,
    out: &mut Vec<Finding>,
) {
    let lossy: Vec<(String, u64, u64)> = pairs
        .iter()
        .filter_map(|p| {
            let segments: u64 = p
                .streams
                .iter()
                .filter_map(|s| Some(s.bytes / u64::from(s.mss?.max(1))))
                .sum();
            let retrans = p.retransmits();
            (segments > 0 && retrans as f64 >= RETRANSMIT_SHARE * segments as f64).then(|| {
                (
                    format!("{} -> {}", name(p.from), name(p.to)),
                    retrans,
                    segments,
                )
            })
        })
        .collect();
    if lossy.is_empty() {
        return;
    }
    let listed: Vec<String> = lossy
        .iter()
        .map(|(pair, r, s)| format!("{pair} {r} of {s} ({:.2}%)", 100.0 * *r as f64 / *s as f64))
        .collect();
    out.push(Finding {
        severity: Severity::Warning,
        code: "net-retransmits".into(),
        message: format!(
            "retransmitted segments ({when}) above {:.1}% of those sent: {}",
            100.0 * RETRANSMIT_SHARE,
            listed.join(", ")
        ),
        evidence: json!({
            "matrix": when,
            "threshold": RETRANSMIT_SHARE,
            "pairs": lossy.iter().map(|(pair, r, s)| json!({"pair": pair, "retransmits": r, "segments": s})).collect::<Vec<_>>(),
        }),
        advice: "Packets are lost between these hosts: look at the interfaces' error and drop counters on both ends and on the switch ports between them; under all pairs at once, a switch buffer overflowing (incast) or flow control off. On a LAN the count should be near zero.".into(),
    });
}

/// Hosts whose MTUs differ, and pairs whose segments fit a smaller MTU than the sender's.
fn mesh_mtu(m: &MeshReport, name: &dyn Fn(u32) -> String, out: &mut Vec<Finding>) {
    let mut by_mtu: std::collections::BTreeMap<u32, Vec<String>> = Default::default();
    for h in &m.hosts {
        if let Some(mtu) = h.mtu {
            by_mtu.entry(mtu).or_default().push(h.ip.clone());
        }
    }
    let clamped: Vec<String> = m
        .alone
        .iter()
        .filter_map(|p| {
            let (pmtu, frame) = p
                .streams
                .iter()
                .filter_map(|s| Some((s.pmtu?, s.mss? + TCP_OVERHEAD)))
                .find(|&(pmtu, frame)| pmtu >= frame + 100)?;
            Some(format!(
                "{} -> {} (MTU {pmtu}, segments for {frame})",
                name(p.from),
                name(p.to)
            ))
        })
        .collect();
    if by_mtu.len() < 2 && clamped.is_empty() {
        return;
    }
    let hosts: Vec<String> = by_mtu
        .iter()
        .map(|(mtu, ips)| format!("MTU {mtu} on {}", ips.join(", ")))
        .collect();
    let message = if by_mtu.len() >= 2 {
        format!(
            "the hosts' MTUs differ: {} (jumbo frames on some hosts only?)",
            hosts.join("; ")
        )
    } else {
        format!(
            "segments fit a smaller MTU than the sender's on {}: a host or hop on the path has a smaller MTU",
            clamped.join(", ")
        )
    };
    out.push(Finding {
        severity: Severity::Warning,
        code: "net-mtu-mismatch".into(),
        message,
        evidence: json!({"hosts": by_mtu, "clamped_pairs": clamped}),
        advice: "Set the same MTU on every host and switch port of the storage network (all 9000, or all 1500). TCP adapts by announcing a smaller segment size, but UDP, RDMA and storage protocols that send large frames stall or fragment on the smaller side.".into(),
    });
}
