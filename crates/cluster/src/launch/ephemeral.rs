//! A launched agent (`stormark agent --launched`): it serves the runs of the coordinator that
//! launched it, then exits. It listens on a port the kernel picks, on the address its host
//! reaches the coordinator from (or its address in `--launch-net`), says so in one line on its
//! standard output, and exits when its runs are over, on SIGTERM or Ctrl-C (the launcher's
//! end), when its standard input closes (srun's, and mpirun's rank 0's, is the coordinator's
//! pipe), when its parent goes (the launcher's task daemon), and when no coordinator came (or
//! came back for its next run) within `--contact-within`.

use std::io::Write;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use super::{host_name, rank_and_size, Announce};
use crate::config::{AgentConfig, ConfigError};
use crate::server::SessionChange;

/// A network, `10.0.0.0/16` (or one address): where a launched agent's address is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Net {
    addr: IpAddr,
    prefix: u8,
}

impl std::str::FromStr for Net {
    type Err = String;

    fn from_str(s: &str) -> Result<Net, String> {
        let bad = || {
            format!("--launch-net {s}: expected a network such as 10.0.0.0/16 or fd00::/64, or one address")
        };
        let (a, p) = s.trim().split_once('/').unwrap_or((s.trim(), ""));
        let addr: IpAddr = a.parse().map_err(|_| bad())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = if p.is_empty() {
            max
        } else {
            p.parse::<u8>().ok().filter(|&p| p <= max).ok_or_else(bad)?
        };
        Ok(Net { addr, prefix })
    }
}

impl std::fmt::Display for Net {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

impl Net {
    /// Whether `ip` lies in this network.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let bits = |a: IpAddr| match a {
            IpAddr::V4(v) => (u128::from(u32::from(v)) << 96, 32),
            IpAddr::V6(v) => (u128::from(v), 128),
        };
        let ((net, len), (host, hlen)) = (bits(self.addr), bits(ip));
        if len != hlen {
            return false;
        }
        let mask = if self.prefix == 0 {
            0
        } else {
            u128::MAX << (128 - u32::from(self.prefix))
        };
        net & mask == host & mask
    }
}

/// How a launched agent was told to serve.
#[derive(Debug, Clone)]
pub struct LaunchedAgent {
    /// The coordinator's address: the agent listens on the address its host reaches it from.
    pub coordinator: IpAddr,
    /// `--launch-net`: listen on this host's address in this network instead.
    pub net: Option<Net>,
    /// How many runs to serve (the coordinator's `--repeat`) before exiting.
    pub runs: u32,
    /// Exit when no coordinator has come within this.
    pub contact_within: Duration,
}

impl LaunchedAgent {
    /// The address to listen on and announce.
    pub fn address(&self) -> Result<IpAddr, String> {
        if let Some(net) = self.net {
            return local_addresses()
                .into_iter()
                .find(|a| net.contains(*a))
                .ok_or_else(|| {
                    format!(
                        "--launch-net {net}: no address of this host ({}) lies in it",
                        host_name()
                    )
                });
        }
        // The kernel's choice of source address toward the coordinator (no packet is sent).
        let unspecified: IpAddr = if self.coordinator.is_ipv4() {
            std::net::Ipv4Addr::UNSPECIFIED.into()
        } else {
            std::net::Ipv6Addr::UNSPECIFIED.into()
        };
        UdpSocket::bind((unspecified, 0))
            .and_then(|s| {
                s.connect((self.coordinator, 9))?;
                s.local_addr()
            })
            .map(|a| a.ip())
            .map_err(|e| {
                format!(
                    "no route from this host ({}) to the coordinator at {}: {e}; give --launch-net",
                    host_name(),
                    self.coordinator
                )
            })
    }
}

/// This host's interface addresses.
fn local_addresses() -> Vec<IpAddr> {
    let mut out = Vec::new();
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list` with a list freed below by freeifaddrs; each entry's
    // address, when not null, is a sockaddr of the family it says.
    unsafe {
        if libc::getifaddrs(&mut list) != 0 {
            return out;
        }
        let mut at = list;
        while !at.is_null() {
            let sa = (*at).ifa_addr;
            if !sa.is_null() {
                match i32::from((*sa).sa_family) {
                    libc::AF_INET => {
                        let v4 = &*(sa as *const libc::sockaddr_in);
                        out.push(IpAddr::from(u32::from_be(v4.sin_addr.s_addr).to_be_bytes()));
                    }
                    libc::AF_INET6 => {
                        let v6 = &*(sa as *const libc::sockaddr_in6);
                        out.push(IpAddr::from(v6.sin6_addr.s6_addr));
                    }
                    _ => {}
                }
            }
            at = (*at).ifa_next;
        }
        libc::freeifaddrs(list);
    }
    out
}

/// Serves as a launched agent: binds, announces itself on standard output, and serves until
/// its runs are over or it has another reason to end (module doc), or `shutdown` resolves.
pub async fn serve_launched(
    mut cfg: AgentConfig,
    launched: LaunchedAgent,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> Result<(), ConfigError> {
    let serve_err = |cause: String| ConfigError::Serve {
        option: "--launched".into(),
        cause,
    };
    let ip = launched.address().map_err(serve_err)?;
    let listener = std::net::TcpListener::bind((ip, 0))
        .map_err(|e| serve_err(format!("cannot listen on {ip}: {e}")))?;
    let address: SocketAddr = listener
        .local_addr()
        .map_err(|e| serve_err(e.to_string()))?;
    let (rank, size) = rank_and_size(|k| std::env::var(k).ok());
    let end = Arc::new(Notify::new());
    // Whether a session is open now, and when (ms from the start) the agent last was without
    // one: a coordinator that does not come, or does not come back for its next repetition,
    // within `contact_within` is taken for gone.
    let started = std::time::Instant::now();
    let open = Arc::new(AtomicBool::new(false));
    let idle_since_ms = Arc::new(AtomicU64::new(0));
    let closed = Arc::new(AtomicU32::new(0));
    {
        let (end, open, idle, closed) = (
            end.clone(),
            open.clone(),
            idle_since_ms.clone(),
            closed.clone(),
        );
        let runs = launched.runs.max(1);
        cfg.on_session = Some(Arc::new(move |change| match change {
            SessionChange::Opened => open.store(true, Ordering::Relaxed),
            SessionChange::Closed => {
                idle.store(started.elapsed().as_millis() as u64, Ordering::Relaxed);
                open.store(false, Ordering::Relaxed);
                if closed.fetch_add(1, Ordering::Relaxed) + 1 >= runs {
                    end.notify_one();
                }
            }
        }));
    }
    let line = Announce {
        rank,
        size,
        address,
        host: host_name(),
    }
    .line();
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")
        .and_then(|_| out.flush())
        .map_err(|e| serve_err(format!("cannot say its address on standard output: {e}")))?;
    drop(out);
    watch_stdin(end.clone());
    // The parent (slurmstepd, mpirun's daemon) gone: this agent was orphaned.
    // SAFETY: getppid(2) cannot fail and touches no memory.
    let parent = unsafe { libc::getppid() };
    let orphaned = end.clone();
    let watcher = tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_millis(500));
        loop {
            every.tick().await;
            // SAFETY: as above.
            let now = unsafe { libc::getppid() };
            let idle = started
                .elapsed()
                .saturating_sub(Duration::from_millis(idle_since_ms.load(Ordering::Relaxed)));
            let uncontacted = !open.load(Ordering::Relaxed) && idle >= launched.contact_within;
            if now != parent || uncontacted {
                orphaned.notify_one();
                break;
            }
        }
    });
    let result = crate::server::serve_listener(cfg, listener, async move {
        tokio::select! {
            _ = shutdown => {}
            _ = end.notified() => {}
        }
    })
    .await;
    watcher.abort();
    result
}

/// Ends the agent when its standard input, a pipe or socket from the launcher, closes (the
/// coordinator is gone). Input that is a file or `/dev/null` (mpirun's ranks but 0) is no
/// sign of anything.
fn watch_stdin(end: Arc<Notify>) {
    // SAFETY: fstat on descriptor 0 writes only into `st`.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(0, &mut st) } != 0 {
        return;
    }
    let kind = st.st_mode & libc::S_IFMT;
    if kind != libc::S_IFIFO && kind != libc::S_IFSOCK {
        return;
    }
    std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        loop {
            // SAFETY: reads into `buf`, at most its length.
            let n = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
            if n == 0
                || (n < 0
                    && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted)
            {
                end.notify_one();
                return;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_parse_and_hold_their_addresses() {
        let n: Net = "10.0.0.0/16".parse().unwrap();
        assert!(n.contains("10.0.200.3".parse().unwrap()));
        assert!(!n.contains("10.1.0.3".parse().unwrap()));
        assert!(!n.contains("fd00::1".parse().unwrap()));
        let one: Net = "127.0.0.1".parse().unwrap();
        assert_eq!(one.to_string(), "127.0.0.1/32");
        assert!(one.contains("127.0.0.1".parse().unwrap()));
        assert!(!one.contains("127.0.0.2".parse().unwrap()));
        let v6: Net = "fd00::/64".parse().unwrap();
        assert!(v6.contains("fd00::1:2".parse().unwrap()));
        assert!("0.0.0.0/0"
            .parse::<Net>()
            .unwrap()
            .contains("8.8.8.8".parse().unwrap()));
        for bad in ["10.0.0.0/33", "10.0.0/8", "eth0", "10.0.0.0/x", ""] {
            let e = bad.parse::<Net>().unwrap_err();
            assert!(
                e.starts_with("--launch-net") && e.contains("10.0.0.0/16"),
                "{e}"
            );
        }
    }

    #[test]
    fn the_address_is_the_route_to_the_coordinator_or_in_the_network() {
        let a = LaunchedAgent {
            coordinator: "127.0.0.1".parse().unwrap(),
            net: None,
            runs: 1,
            contact_within: Duration::from_secs(1),
        };
        assert_eq!(a.address().unwrap(), "127.0.0.1".parse::<IpAddr>().unwrap());
        let lo = LaunchedAgent {
            net: Some("127.0.0.0/8".parse().unwrap()),
            ..a.clone()
        };
        assert!(lo.address().unwrap().is_loopback());
        // A documentation address no interface here has (tests elsewhere may add some).
        let taken = local_addresses();
        let free = ["203.0.113.77", "198.51.100.77", "192.0.2.77"]
            .into_iter()
            .find(|a| !taken.contains(&a.parse().unwrap()))
            .expect("one of three documentation addresses is not this host's");
        let none = LaunchedAgent {
            net: Some(free.parse().unwrap()),
            ..a
        };
        let e = none.address().unwrap_err();
        assert!(
            e.contains(&format!("--launch-net {free}/32: no address")),
            "{e}"
        );
    }
}
