//! Findings of network tests (`stormark net`): retransmits, MTUs that differ along the path,
//! and a test below its own link's rated speed.

use serde_json::json;
use stormark_stats::{Finding, NetReport, Phase, Results, Severity};

/// Retransmitted segments above this share of those sent: the path loses packets.
pub const RETRANSMIT_SHARE: f64 = 0.001;
/// Throughput below this share of the local link's rated speed is said.
pub const LINK_SHARE: f64 = 0.8;
/// IPv4 and TCP headers with timestamps: a full segment is this much less than the MTU.
const TCP_OVERHEAD: u32 = 52;

/// The network rules on a results document with a `net` section.
pub(crate) fn network_findings(r: &Results, out: &mut Vec<Finding>) {
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
