//! The command line of `stormark net`: the pair test's two ends and the mesh over agents.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};
use stormark_net::{DEFAULT_PORT, LIMITS};
use stormark_spec::{parse_duration, parse_size};

use crate::usage;

const NET_EXAMPLES: &str = "\
Examples:
  stormark net server
      on one host: serve tests on port 7879 (one at a time) until Ctrl-C
  stormark net client 10.0.0.2 --time 10s
      on another: TCP throughput to it for 10 s, counted where it arrives, live each second
  stormark net client 10.0.0.2 --streams 4 --reverse --json net.json
      4 parallel streams, from the server to this host; the results document
  stormark net client 10.0.0.2 --mode rtt --msg-size 64 --time 30s
      ping-pong of 64-byte messages: round-trip latency percentiles, as sockperf measures
  stormark net client 10.0.0.2 --streams-sweep 1,2,4,8 --time 10s
      throughput with 1, 2, 4 and 8 streams: the count that fills the link
  stormark net client 10.0.0.2 --streams 2 --bitrate 500m
      TCP paced at 500 Mbit/s in all (as iperf3's -b): what the path does below its limit
  stormark net client 10.0.0.2 --udp --bitrate 1g
      UDP at 1 Gbit/s: what arrived, the loss, datagrams out of order, jitter
  stormark net client 10.0.0.2 --bidir --streams 2
      both ways at once, 2 connections each way
  stormark net client 10.0.0.2 --mode rtt --rate-ops 1000
      1000 round trips a second on a schedule: latency from each one's due time
  stormark net client 10.0.0.2 --streams 4 --repeat 3 --expect bw=1GB/s --json net.json
      three tests with mean and confidence interval, and a finding if the link falls short
      (net client is a run like any other: --sweep, --html, --metrics-listen too)
  stormark net --agents 10.0.0.1:7878,10.0.0.2:7878,10.0.0.3:7878 --mode mesh --token-file token
      every ordered pair of the agents' hosts alone, then all at once: two matrices of Gbit/s
      (--metrics-listen ADDR:PORT serves each pair to Prometheus as its test ends)

Throughput is counted where the bytes arrive; retransmits, congestion window and smoothed RTT
come from the sender's kernel (TCP_INFO). Sizes take k/m (1024-based).";

/// Options of `stormark net`.
#[derive(Debug, Args)]
#[command(after_help = NET_EXAMPLES, args_conflicts_with_subcommands = true)]
pub struct NetArgs {
    /// Which end; none with `--agents` (the mesh).
    #[command(subcommand)]
    pub side: Option<NetSide>,
    /// The mesh over agents.
    #[command(flatten)]
    pub mesh: NetMeshArgs,
}

/// Options of `stormark net --agents LIST --mode mesh` (also `stormark net mesh`).
#[derive(Debug, Args)]
pub struct NetMeshArgs {
    /// The agents whose hosts to test between (host:port, comma-separated; at least two).
    /// Tests go between the addresses given here.
    #[arg(long, value_name = "LIST")]
    pub agents: Option<String>,
    /// Agents from a TOML file: [[agent]] sections with address.
    #[arg(long, value_name = "FILE", conflicts_with = "agents")]
    pub agents_file: Option<PathBuf>,
    /// The agents' shared token (one line).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Talk TLS to the agents, trusting this CA (PEM).
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// mesh: every ordered pair alone, then all pairs at once.
    #[arg(long, default_value = "mesh", value_name = "MODE")]
    pub mode: String,
    /// TCP streams per pair.
    #[arg(long, short = 'P', default_value = "1", value_name = "N")]
    pub streams: String,
    /// Each test's length, such as 10s (a mesh of N hosts takes N×(N−1)+1 times this).
    #[arg(long, short = 't', default_value = "10s", value_name = "DURATION")]
    pub time: String,
    /// Bytes per write [default: 1m].
    #[arg(long, short = 'l', value_name = "SIZE")]
    pub msg_size: Option<String>,
    /// Write the results document here (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write the report as one self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Only the matrices: no line per test.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Serve the matrices as they fill at http://ADDR/metrics (Prometheus): each pair's
    /// Gbit/s and retransmits once its test ends, and the matrix running now.
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics_listen: Option<std::net::SocketAddr>,
}

/// The two ends of `stormark net`.
#[derive(Debug, Subcommand)]
pub enum NetSide {
    /// Serve tests from clients on one port (one test at a time).
    #[command(after_help = NET_EXAMPLES)]
    Server {
        /// Address and port to listen on.
        #[arg(long, value_name = "ADDR:PORT", default_value = "0.0.0.0:7879")]
        listen: std::net::SocketAddr,
        /// Exit after one test.
        #[arg(long)]
        once: bool,
        /// Serve only clients that give this token (one line of at least 16 characters, as
        /// agents' tokens); without it anyone who reaches the port may run a test.
        #[arg(long, value_name = "FILE")]
        token_file: Option<PathBuf>,
    },
    /// Run a test against a server.
    Client(NetClientArgs),
    /// Every ordered pair of the agents' hosts alone, then all at once (the same as
    /// `stormark net --agents LIST --mode mesh`).
    #[command(after_help = NET_EXAMPLES)]
    Mesh(NetMeshArgs),
}

/// Options of `stormark net client`.
#[derive(Debug, Args)]
#[command(after_help = NET_EXAMPLES)]
pub struct NetClientArgs {
    /// The server, HOST or HOST:PORT (port 7879 by default).
    #[arg(value_name = "HOST[:PORT]")]
    pub server: String,
    /// What to measure: throughput, rtt (request/response round trips), or pmtu (the path
    /// MTU, probed with DF set).
    #[arg(long, default_value = "throughput", value_name = "MODE")]
    pub mode: String,
    /// Parallel TCP connections.
    #[arg(long, short = 'P', default_value = "1", value_name = "N")]
    pub streams: String,
    /// How long, such as 10s or 2m.
    #[arg(long, short = 't', default_value = "10s", value_name = "DURATION")]
    pub time: String,
    /// From the server to this host instead.
    #[arg(long, short = 'R')]
    pub reverse: bool,
    /// Both ways at once: --streams connections each way.
    #[arg(long, conflicts_with = "reverse")]
    pub bidir: bool,
    /// UDP datagrams at --bitrate instead of TCP: loss, out-of-order and jitter as the server
    /// saw them.
    #[arg(long, short = 'u')]
    pub udp: bool,
    /// Payload bits per second over all streams, such as 100m or 1g (1000-based, as iperf3):
    /// UDP is always paced [default: 1m]; TCP streams are paced when given, as iperf3's -b,
    /// from whichever end sends [default: as fast as they go].
    #[arg(long, short = 'b', value_name = "RATE")]
    pub bitrate: Option<String>,
    /// Round trips (--mode rtt): an open loop of N per second over all streams; latency counts
    /// from each one's schedule, so a stall shows [default: closed loop].
    #[arg(long, value_name = "N")]
    pub rate_ops: Option<String>,
    /// Bytes per write (throughput) [default: 1m], per datagram (udp) [default: 1400] or per
    /// message each way (rtt) [default: 64].
    #[arg(long, short = 'l', value_name = "SIZE")]
    pub msg_size: Option<String>,
    /// Write the results document here (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write the report as one self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Only the summary: no line per second.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// The server's token, when it was started with --token-file.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Serve the live figures for Prometheus at http://ADDR/metrics while the test lasts.
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// One test per stream count, such as 1,2,4,8: throughput against streams, to find the
    /// count that fills the link (each a phase of the results; the same as --sweep
    /// streams=LIST).
    #[arg(long, value_name = "LIST", conflicts_with_all = ["streams", "sweep"])]
    pub streams_sweep: Option<String>,
    /// Repetitions, expectations, sweeps and the search, as for storage runs.
    #[command(flatten)]
    pub shape: crate::cli::ShapeArgs,
}

// What the flags accept, checked before anything connects.

pub(crate) fn token(file: Option<&std::path::Path>) -> Result<Option<String>> {
    file.map(|f| stormark_cluster::read_token(f).map_err(|e| usage(e.to_string())))
        .transpose()
}

/// `--streams`: 1 to the protocol's limit.
pub(crate) fn parse_streams(text: &str) -> Result<u32> {
    let (max, _, _) = LIMITS;
    text.parse::<u32>()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| {
            usage(format!(
                "--streams {text}: expected a whole number from 1 to {max}"
            ))
        })
}

/// `--time`: 1 ms to the protocol's limit.
pub(crate) fn parse_time(text: &str) -> Result<std::time::Duration> {
    let (_, _, max_secs) = LIMITS;
    parse_duration(text)
        .filter(|t| !t.is_zero() && t.as_secs() <= max_secs)
        .ok_or_else(|| {
            usage(format!(
                "--time {text}: expected a duration from 1ms to 24h, such as 10s or 2m"
            ))
        })
}

/// `--msg-size` of TCP: 1 byte to the protocol's limit.
pub(crate) fn parse_msg_size(text: &str) -> Result<u32> {
    let (_, max, _) = LIMITS;
    parse_size(text)
        .filter(|s| (1..=u64::from(max)).contains(s))
        .map(|s| s as u32)
        .ok_or_else(|| {
            usage(format!(
                "--msg-size {text}: expected a size from 1 byte to 16m, such as 64 or 128k"
            ))
        })
}

/// `HOST`, `HOST:PORT`, `[V6]:PORT` or a bare IPv6 address.
pub(crate) fn resolve(text: &str) -> Result<SocketAddr> {
    let bad = |why: String| {
        usage(format!(
            "{text}: {why}; expected HOST or HOST:PORT, such as 10.0.0.2 or server1:{DEFAULT_PORT}"
        ))
    };
    let with_port = if let Ok(ip) = text.parse::<std::net::IpAddr>() {
        SocketAddr::new(ip, DEFAULT_PORT).to_string()
    } else if text
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        text.to_string()
    } else {
        format!("{text}:{DEFAULT_PORT}")
    };
    with_port
        .to_socket_addrs()
        .map_err(|e| bad(format!("cannot resolve it ({e})")))?
        .next()
        .ok_or_else(|| bad("the name resolves to no address".into()))
}

/// `1,2,4,8`: stream counts, each once, at most 16 of them.
pub(crate) fn parse_counts(text: &str) -> Result<Vec<String>> {
    let (max, _, _) = LIMITS;
    let bad = || {
        usage(format!(
            "--streams-sweep {text}: expected up to 16 different stream counts from 1 to {max}, such as 1,2,4,8"
        ))
    };
    let mut counts = Vec::new();
    for v in text.split(',') {
        let n = v
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=max).contains(n))
            .ok_or_else(bad)?;
        if counts.contains(&n) {
            return Err(bad());
        }
        counts.push(n);
    }
    let counts: Vec<String> = counts.iter().map(u32::to_string).collect();
    if counts.is_empty() || counts.len() > 16 {
        return Err(bad());
    }
    Ok(counts)
}
