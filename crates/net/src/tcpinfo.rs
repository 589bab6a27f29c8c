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

/// CPU time the calling thread has used, ns (`CLOCK_THREAD_CPUTIME_ID`): what one stream's
/// thread cost, user and system (softirq work the kernel does for it on other CPUs is not in it).
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The name of the local interface that holds `ip` (`getifaddrs`), if any.
pub fn interface_of(ip: std::net::IpAddr) -> Option<String> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list` with a list freed below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return None;
    }
    let mut found = None;
    let mut cur = list;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned, alive until freeifaddrs.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        if ifa.ifa_addr.is_null() {
            continue;
        }
        // SAFETY: ifa_addr points to a sockaddr of the family it says.
        let addr = unsafe {
            match i32::from((*ifa.ifa_addr).sa_family) {
                libc::AF_INET => {
                    let a = &*(ifa.ifa_addr as *const libc::sockaddr_in);
                    Some(std::net::IpAddr::from(
                        u32::from_be(a.sin_addr.s_addr).to_be_bytes(),
                    ))
                }
                libc::AF_INET6 => {
                    let a = &*(ifa.ifa_addr as *const libc::sockaddr_in6);
                    Some(std::net::IpAddr::from(a.sin6_addr.s6_addr))
                }
                _ => None,
            }
        };
        if addr == Some(ip) {
            // SAFETY: ifa_name is a NUL-terminated string owned by the list.
            found = Some(
                unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) }
                    .to_string_lossy()
                    .into_owned(),
            );
            break;
        }
    }
    // SAFETY: `list` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(list) };
    found
}

/// Paces one stream's writes to `bits_per_s` (0: unpaced), as iperf3's `-b` on TCP: each write
/// waits until the bytes before it are due.
pub(crate) struct Pacer {
    epoch: std::time::Instant,
    bytes_per_s: f64,
    sent: u64,
}

impl Pacer {
    pub(crate) fn new(epoch: std::time::Instant, bits_per_s: f64) -> Pacer {
        Pacer {
            epoch,
            bytes_per_s: bits_per_s / 8.0,
            sent: 0,
        }
    }

    /// Waits until `n` more bytes may go, and counts them.
    pub(crate) fn wait(&mut self, n: usize) {
        if self.bytes_per_s > 0.0 {
            let due = self.epoch
                + std::time::Duration::from_secs_f64(self.sent as f64 / self.bytes_per_s);
            let now = std::time::Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
        }
        self.sent += n as u64;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn loopback_is_lo() {
        assert_eq!(
            super::interface_of("127.0.0.1".parse().unwrap()).as_deref(),
            Some("lo")
        );
        assert_eq!(super::interface_of("192.0.2.77".parse().unwrap()), None);
    }
}
