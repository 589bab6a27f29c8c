//! stormark's network load, as iperf3 and sockperf measure it: a `stormark net server` on one
//! host, a client on another. Throughput runs parallel TCP streams for a time and is counted
//! where the bytes arrive (the receiver), every second; the sender's kernel says how it went
//! (`TCP_INFO`: retransmits, congestion window, smoothed RTT). Latency runs a request/response
//! ping-pong of a given message size on each stream, every round trip in an HDR histogram.
//!
//! One TCP port carries everything: a control connection (JSON lines: the client's [`Hello`],
//! the server's answer, its per-second counts and its end report), then one data connection
//! per stream, each opened with the session's nonce so that only the client that asked joins.
//! The server runs one session at a time, never executes anything, bounds every line it reads
//! and drops a connection that says nothing within seconds.
#![warn(missing_docs)]

mod common;
mod pmtu;
mod proto;
mod server;
mod session;
mod tcpinfo;

pub use common::ClientOptions;
pub use pmtu::probe_mtu;
pub use proto::{Hello, Mode, ServerLine, UdpStats, DEFAULT_PORT, LIMITS, UDP_HEADER};
pub use server::{serve, ServerOptions};
pub use session::{check, Session};
pub use tcpinfo::{interface_of, tcp_info, thread_cpu_ns, TcpInfo};

/// Why a network test could not run or stopped.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// Nothing could be reached at the address (refused, unreachable, timed out): before any
    /// load, a user's mistake or a down host.
    #[error("{addr}: {why}")]
    Unreachable {
        /// The server's address.
        addr: std::net::SocketAddr,
        /// What the system said, in words.
        why: String,
    },
    /// The server refused the session (busy, or an option past its limits).
    #[error("the server refused: {0}")]
    Refused(String),
    /// The listening address could not be bound.
    #[error("--listen {addr}: {why}")]
    Listen {
        /// The address.
        addr: std::net::SocketAddr,
        /// What the system said.
        why: String,
    },
    /// The peer went away or broke the protocol mid-test.
    #[error("{0}")]
    Lost(String),
}
