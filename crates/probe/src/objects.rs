//! Findings of object-storage (S3) runs: the service throttles; GET latency is the service's
//! own time (first byte) or the transfer's; the transfer runs at the network's rated speed.

use serde_json::json;
use stormark_stats::{Finding, Phase, Severity};

use crate::Inventory;

/// First byte at or above this share of the whole GET: the service's own time dominates.
pub const FIRST_BYTE_DOMINATES: f64 = 0.8;
/// First byte at or below this share of the whole GET: the transfer dominates.
pub const TRANSFER_DOMINATES: f64 = 0.3;
/// GETs moving at least this share of the fastest interface's rated speed are network-bound.
pub const LINK_SHARE: f64 = 0.8;

/// The S3 rules on one measured phase; `inventory` is the client host's (the first host).
pub(crate) fn object_findings(p: &Phase, inventory: Option<&Inventory>, out: &mut Vec<Finding>) {
    throttled(p, out);
    server_errors(p, out);
    reconnects(p, out);
    get_time(p, inventory, out);
}

/// New connections beyond one per connection of the run (and beyond those that failures
/// dropped) at or above this share of the operations: the service closes connections.
pub const RECONNECT_SHARE: f64 = 0.01;

/// Connections are made again and again: the service (or a proxy in between) does not keep
/// them alive.
fn reconnects(p: &Phase, out: &mut Vec<Finding>) {
    let Some(connects) = p.by_op.get("connect") else {
        return;
    };
    let hosts = p.by_host.len().max(1) as u64;
    let workers: u64 = p.jobs.iter().map(|j| u64::from(j.workers)).sum::<u64>() * hosts;
    let errors: u64 = p.errors.iter().map(|e| e.count).sum();
    let again = connects.ops.saturating_sub(workers + errors);
    let ops = p.total.ops;
    if again < 10 || (again as f64) < RECONNECT_SHARE * ops as f64 {
        return;
    }
    let p50 = connects.latency_ns.as_ref().map(|l| l.p50);
    out.push(Finding {
        severity: Severity::Warning,
        code: "s3-reconnects".into(),
        message: format!(
            "phase {}: {} connections made for {ops} operations by {workers} worker{}: the service does not keep connections alive{}",
            p.name,
            connects.ops,
            if workers == 1 { "" } else { "s" },
            p50.map(|ns| format!(" (each new one took {:.2} ms, median)", ns as f64 / 1e6))
                .unwrap_or_default()
        ),
        evidence: json!({
            "phase": p.name,
            "connections_made": connects.ops,
            "connections": workers,
            "errors": errors,
            "operations": ops,
            "connect_p50_ns": p50,
        }),
        advice: "Turn on HTTP keep-alive on the service and on any load balancer or proxy in front of it, with an idle timeout longer than the time between requests: every new connection adds a TCP handshake (and a TLS handshake over https) to a request, and costs both ends CPU.".into(),
    });
}

/// The service failed requests itself (HTTP 5xx other than throttling): 507 says its storage
/// is full, 500 is its own failure (a full or failing disk behind it, among others).
fn server_errors(p: &Phase, out: &mut Vec<Finding>) {
    let mut by_status: Vec<(u16, u64)> = Vec::new();
    for e in &p.errors {
        let Some(status) = e
            .kind
            .strip_prefix("http-")
            .and_then(|s| s.parse::<u16>().ok())
            .filter(|s| (500..600).contains(s))
        else {
            continue;
        };
        match by_status.iter_mut().find(|(s, _)| *s == status) {
            Some((_, n)) => *n += e.count,
            None => by_status.push((status, e.count)),
        }
    }
    if by_status.is_empty() {
        return;
    }
    by_status.sort_unstable();
    let count: u64 = by_status.iter().map(|(_, n)| n).sum();
    let full = by_status.iter().any(|(s, _)| *s == 507);
    let list = by_status
        .iter()
        .map(|(s, n)| format!("HTTP {s} x{n}"))
        .collect::<Vec<_>>()
        .join(", ");
    out.push(Finding {
        severity: Severity::Critical,
        code: if full { "s3-server-full" } else { "s3-server-errors" }.into(),
        message: if full {
            format!(
                "phase {}: the service says its storage is full (507 Insufficient Storage): {list}",
                p.name
            )
        } else {
            format!("phase {}: the service failed {count} requests itself: {list}", p.name)
        },
        evidence: json!({
            "phase": p.name,
            "by_status": by_status.iter().map(|(s, n)| json!({"status": s, "count": n})).collect::<Vec<_>>(),
            "completed": p.total.ops,
        }),
        advice: if full {
            "Free space on the service's drives (or raise its free-space threshold), or run with smaller objects or fewer of them (--objects, --obj-size, --time); the figures after the first failure are not the service's throughput.".into()
        } else {
            "These are the service's failures, not the client's: read its logs for the time of the run. A full or failing drive behind the service answers this way; check its free space and health.".into()
        },
    });
}

fn throttled(p: &Phase, out: &mut Vec<Finding>) {
    let count: u64 = p
        .errors
        .iter()
        .filter(|e| e.kind == "throttled")
        .map(|e| e.count)
        .sum();
    if count == 0 {
        return;
    }
    let done = p.total.ops.max(1);
    out.push(Finding {
        severity: Severity::Warning,
        code: "s3-throttled".into(),
        message: format!(
            "phase {}: the service asked to slow down {count} times (503 SlowDown or 429), {:.1}% of the operations that completed",
            p.name,
            100.0 * count as f64 / done as f64
        ),
        evidence: json!({"phase": p.name, "throttled": count, "completed": p.total.ops}),
        advice: "The service is past the load it admits: this run's figures are its ceiling under throttling. Lower --concurrency or --rate-ops, or spread the load over more buckets or prefixes; a client that retried would have hidden this.".into(),
    });
}

fn get_time(p: &Phase, inventory: Option<&Inventory>, out: &mut Vec<Finding>) {
    let Some(get) = p.by_op.get("get").filter(|g| g.ops > 0) else {
        return;
    };
    let (Some(first), Some(whole)) = (get.first_byte_latency_ns, get.latency_ns) else {
        return;
    };
    let share = first.p50 as f64 / whole.p50.max(1) as f64;
    let ms = |ns: u64| (ns as f64 / 1e4).round() / 100.0;
    if share >= FIRST_BYTE_DOMINATES {
        out.push(Finding {
            severity: Severity::Info,
            code: "s3-server-time".into(),
            message: format!(
                "phase {}: GETs wait for the service: first byte after {} ms of {} ms (median, {:.0}%)",
                p.name,
                ms(first.p50),
                ms(whole.p50),
                100.0 * share
            ),
            evidence: json!({"phase": p.name, "first_byte_p50_ns": first.p50, "get_p50_ns": whole.p50}),
            advice: "The time is spent before the answer starts: in the service (its disks, erasure coding, metadata, queueing), not on the network. Look at the servers' load; more client concurrency will not shorten it.".into(),
        });
    } else if share <= TRANSFER_DOMINATES {
        let link_mbps = inventory.and_then(|inv| {
            inv.net_interfaces
                .iter()
                .filter(|n| n.state.as_deref() == Some("up") && n.name != "lo")
                .filter_map(|n| n.speed_mbps)
                .max()
        });
        let gbps = get.bw_bytes_per_s * 8.0 / 1e9;
        let at_link = link_mbps.is_some_and(|l| gbps * 1000.0 >= LINK_SHARE * l as f64);
        out.push(Finding {
            severity: if at_link { Severity::Warning } else { Severity::Info },
            code: if at_link { "s3-network-bound" } else { "s3-transfer-time" }.into(),
            message: match link_mbps {
                Some(l) if at_link => format!(
                    "phase {}: GETs move {gbps:.2} Gbit/s, {:.0}% of the {l} Mbit/s link: the network limits the run",
                    p.name,
                    100.0 * gbps * 1000.0 / l as f64
                ),
                _ => format!(
                    "phase {}: GETs spend most of their time in transfer: first byte after {} ms of {} ms (median), {gbps:.2} Gbit/s",
                    p.name,
                    ms(first.p50),
                    ms(whole.p50)
                ),
            },
            evidence: json!({"phase": p.name, "first_byte_p50_ns": first.p50, "get_p50_ns": whole.p50, "gbit_per_s": gbps, "link_mbps": link_mbps}),
            advice: "The service answers quickly and the bytes take the time: the network path (link speed, MTU, congestion) or the client's receive side sets the pace. Run from more clients (--agents), or check the links (iperf3).".into(),
        });
    }
}
