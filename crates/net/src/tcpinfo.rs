//! The kernel's view of a TCP connection (`getsockopt(TCP_INFO)`).

use std::os::fd::AsRawFd;

/// What the sender's kernel says of one connection at the end of a test.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TcpInfo {
    /// Segments retransmitted over the connection's life (`tcpi_total_retrans`).
    pub retransmits: u32,
    /// Smoothed round-trip time, µs (`tcpi_rtt`).
    pub rtt_us: u32,
    /// Its variation, µs.
    pub rttvar_us: u32,
    /// Congestion window, segments.
    pub snd_cwnd: u32,
    /// Sender's maximum segment size, bytes.
    pub snd_mss: u32,
    /// Path MTU the kernel knows, bytes.
    pub pmtu: u32,
}

/// `TCP_INFO` of `socket`; `None` where the kernel does not say.
pub fn tcp_info(socket: &impl AsRawFd) -> Option<TcpInfo> {
    // SAFETY: a zeroed tcp_info is a valid value of a plain C struct.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: the pointer and length describe `info`, which outlives the call.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(TcpInfo {
        retransmits: info.tcpi_total_retrans,
        rtt_us: info.tcpi_rtt,
        rttvar_us: info.tcpi_rttvar,
        snd_cwnd: info.tcpi_snd_cwnd,
        snd_mss: info.tcpi_snd_mss,
        pmtu: info.tcpi_pmtu,
    })
}
