//! What the network's tests say beyond a phase's figures: each stream of a net job's session as
//! its ends saw it (`net`), and the mesh between a run's hosts (`mesh`).

use serde::{Deserialize, Serialize};

/// A network test's streams: what the phase's figures cannot say (the sender's TCP view,
/// UDP loss, order and jitter).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NetReport {
    /// The server, `ADDR:PORT`.
    pub server: String,
    /// `tcp` or `udp`.
    pub protocol: String,
    /// `throughput` or `rtt`.
    pub mode: String,
    /// Bytes flowed from the server to the client.
    pub reverse: bool,
    /// Both ways at once: the first half of `streams` sent to the server, the second half
    /// received from it.
    #[serde(default)]
    pub bidir: bool,
    /// The client's interface the test went out of, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// Its rated speed, Mbit/s, when the driver says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_mbps: Option<u64>,
    /// Its MTU, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// `--mode pmtu`: the largest IP packet that reached the server and came back, probed
    /// with DF set, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_mtu: Option<u32>,
    /// One per stream.
    pub streams: Vec<NetStream>,
    /// Between a run's agents (`server = "agents"`): the sending host (an index into the
    /// run's hosts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<u32>,
    /// Between a run's agents: the receiving host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<u32>,
    /// The session's time from its start to the last byte, as its server counted it, ns.
    #[serde(default)]
    pub duration_ns: u64,
    /// Why the session did not run, or broke off, with the server named; absent when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

/// One stream of a network test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NetStream {
    /// Bytes the receiver got.
    pub bytes: u64,
    /// TCP: segments the sender retransmitted (its `TCP_INFO`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u32>,
    /// TCP: the sender's smoothed round-trip time, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub srtt_us: Option<u32>,
    /// TCP: the sender's congestion window, segments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwnd: Option<u32>,
    /// TCP: the path MTU the sender's kernel knows, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pmtu: Option<u32>,
    /// TCP: the sender's maximum segment size, bytes (capped by what the receiver announced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mss: Option<u32>,
    /// UDP: datagrams sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datagrams_sent: Option<u64>,
    /// UDP: datagrams received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datagrams_received: Option<u64>,
    /// UDP: datagrams that arrived after a later one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_of_order: Option<u64>,
    /// UDP: interarrival jitter (RFC 3550), ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_ns: Option<u64>,
    /// TCP throughput: the CPU time the sending end's thread of this stream used, percent of
    /// one CPU over the test (100: that thread's CPU was the limit on that end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_cpu_pct: Option<f64>,
    /// The same of the receiving end's thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_cpu_pct: Option<f64>,
}

/// `cpu_ns` of a thread over `duration_ns`, percent of one CPU; `None` when either is unknown.
pub fn cpu_pct(cpu_ns: Option<u64>, duration_ns: u64) -> Option<f64> {
    let cpu = cpu_ns.filter(|&c| c > 0)?;
    (duration_ns > 0).then(|| 100.0 * cpu as f64 / duration_ns as f64)
}

/// The network between every pair of a run's hosts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MeshReport {
    /// The hosts in matrix order.
    pub hosts: Vec<MeshHost>,
    /// TCP streams per pair.
    pub streams: u32,
    /// Each test's length, ms.
    pub time_ms: u64,
    /// Every ordered pair, one at a time: what the path between two hosts carries alone.
    pub alone: Vec<MeshPair>,
    /// Every ordered pair at once: the network under load (each host sends to and receives
    /// from all the others).
    pub loaded: Vec<MeshPair>,
}

/// One host of a mesh.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MeshHost {
    /// The agent's address as given (`host:port`).
    pub agent: String,
    /// The address the tests went between.
    pub ip: String,
    /// The host's name, as its agent says.
    pub host: String,
    /// The interface its tests left by, its MTU and rated speed, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// Bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// Mbit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_mbps: Option<u64>,
}

/// One direction between two hosts of a mesh.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MeshPair {
    /// The sending host (index into `hosts`).
    pub from: u32,
    /// The receiving host.
    pub to: u32,
    /// Bytes the receiver counted.
    pub bytes: u64,
    /// From the start to the last byte, ns.
    pub duration_ns: u64,
    /// `bytes` over `duration_ns`, bits per second.
    pub bits_per_s: f64,
    /// Bytes per second as the receiver counted them.
    pub seconds: Vec<u64>,
    /// Each stream as its ends saw it (the sender's TCP_INFO).
    pub streams: Vec<NetStream>,
    /// The largest IP packet that reaches the receiver and comes back (UDP with DF set, up
    /// to the sender's interface MTU), bytes; pairs alone only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_mtu: Option<u32>,
    /// Pairs alone: the median and 99th percentile of a second of 64-byte round trips, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_p50_ns: Option<u64>,
    /// See `rtt_p50_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_p99_ns: Option<u64>,
    /// Why the test failed, with the host named; absent when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

impl MeshPair {
    /// Whether the pair was not run at all (a host of it had failed, or the run ended first):
    /// its `failure` then begins `not run`, the reason after it.
    pub fn not_run(&self) -> bool {
        self.failure
            .as_deref()
            .is_some_and(|f| f.starts_with("not run"))
    }

    /// Segments the sender retransmitted, over all streams.
    pub fn retransmits(&self) -> u64 {
        self.streams
            .iter()
            .filter_map(|s| s.retransmits)
            .map(u64::from)
            .sum()
    }
}
