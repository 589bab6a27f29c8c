//! The agent's listening socket, guarded before any request is read, so that whoever reaches
//! the port without the token can neither exhaust the agent, lock a coordinator out, nor keep
//! the agent from exiting: a connection must present the token (a call carrying it) within
//! [`AUTH_LIMIT`] of its accept; at most [`PER_SOURCE`] connections of one source wait to do
//! so (a new one evicts that source's oldest); at most [`MAX_CONNECTIONS`] are held at once,
//! where a new connection evicts one not yet authenticated (the oldest of the source with the
//! most), never an authenticated one, and is turned away (told so by an HTTP/2 GOAWAY) only
//! when every one holds the token.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::{Instant, Sleep};
use tonic::transport::server::{Connected, TcpConnectInfo};

/// Connections served at once. A coordinator needs one; a connection that holds the token is
/// never evicted to make room.
pub const MAX_CONNECTIONS: usize = 64;

/// A connection that has not sent a call carrying the token this long after its accept is
/// closed: a coordinator sends its first call (the handshake) as soon as it has connected,
/// TLS included, so this only ends connections that will never authenticate.
pub const AUTH_LIMIT: Duration = Duration::from_secs(2);

/// Connections from one source (an address) waiting to authenticate; a new one from that
/// source evicts the oldest, so that one source cannot take the room meant for coordinators
/// elsewhere.
pub const PER_SOURCE: usize = 4;

/// What a connection turned away is sent before it is closed: an HTTP/2 GOAWAY frame (RFC
/// 9113 §6.8) on stream 0, error ENHANCE_YOUR_CALM (0xb), its debug data saying why; the
/// coordinator recognizes it by its frame type (7) in place of the SETTINGS it waits for.
pub const FULL_GOAWAY: &[u8] = b"\x00\x00\x28\x07\x00\x00\x00\x00\x00\
\x00\x00\x00\x00\x00\x00\x00\x0bstormark agent: connections full";

/// How the agent tells a live coordinator from a lost one, on each connection it accepts.
#[derive(Clone, Copy, Debug)]
pub struct Liveness {
    /// A dead or unreachable peer host is given up within this: the kernel probes a connection
    /// idle for two fifths of it (TCP keep-alive, answered by the peer's kernel, not its
    /// process) and closes it when sent data or a probe goes unanswered this long
    /// (`TCP_USER_TIMEOUT`).
    pub lost: Duration,
    /// A connection that carried the token and then sent nothing for this long is closed:
    /// longer than the HTTP/2 pings that find a peer process that is alive but frozen (Ctrl-Z).
    pub quiet: Duration,
}

/// A connection held under the cap, closed after [`AUTH_LIMIT`] unless a call with the token
/// came on it, and after [`Liveness::quiet`] without a byte from the peer once one did.
pub struct Guarded {
    io: TcpStream,
    deadline: Pin<Box<Sleep>>,
    quiet: Duration,
    /// When the peer last sent a byte (or the connection was accepted).
    last: Instant,
    entry: Arc<Entry>,
    id: u64,
    table: Arc<Table>,
}

/// What the accept loop knows of a live connection.
struct Entry {
    fd: RawFd,
    /// A call carrying the token came on it.
    authenticated: AtomicBool,
    peer: SocketAddr,
    accepted: Instant,
}

/// Live connections by accept order.
type Table = Mutex<BTreeMap<u64, Arc<Entry>>>;

/// The connections the agent holds open, as the service asks about them: a session lives as
/// long as the connection its coordinator opened it on (closed by the coordinator, by its
/// crash, or by the server when the connection's keep-alive pings go unanswered).
#[derive(Clone)]
pub struct Connections(Arc<Table>);

impl Connections {
    /// Whether a connection from `peer` (address and port) is open.
    pub fn is_open(&self, peer: SocketAddr) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .any(|e| e.peer == peer)
    }

    /// The connection from `peer` (address and port) carried a call with the token: it is
    /// kept past [`AUTH_LIMIT`] and never evicted for another.
    pub fn authenticated(&self, peer: SocketAddr) {
        let live = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = live.values().find(|e| e.peer == peer) {
            e.authenticated.store(true, Ordering::Relaxed);
        }
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        // Out of the table before the socket closes, so that an eviction never shuts down a
        // descriptor number reused by another file.
        self.table
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
    }
}

impl Connected for Guarded {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.io.connect_info()
    }
}

impl AsyncRead for Guarded {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    self.last = Instant::now();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => loop {
                if self.deadline.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                // The deadline passed: the one that holds now may be later (the token came,
                // or bytes since the deadline was set).
                let due = if self.entry.authenticated.load(Ordering::Relaxed) {
                    self.last + self.quiet
                } else {
                    self.entry.accepted + AUTH_LIMIT
                };
                if Instant::now() >= due {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "no token, or no bytes, from the peer in time",
                    )));
                }
                self.deadline.as_mut().reset(due);
            },
        }
    }
}

impl AsyncWrite for Guarded {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// Binds `addr` and hands guarded connections to the server through the returned channel.
pub async fn guarded_incoming(
    listener: std::net::TcpListener,
    liveness: Liveness,
) -> io::Result<(mpsc::Receiver<Result<Guarded, io::Error>>, Connections)> {
    listener.set_nonblocking(true)?;
    let listener = TcpListener::from_std(listener)?;
    let table: Arc<Table> = Arc::new(Mutex::new(BTreeMap::new()));
    let connections = Connections(table.clone());
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(async move {
        let mut next_id = 0u64;
        loop {
            let (io, peer) = match listener.accept().await {
                Ok(c) => c,
                // Out of descriptors and the like: wait a little rather than spin.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let entry = Arc::new(Entry {
                fd: io.as_raw_fd(),
                authenticated: AtomicBool::new(false),
                peer,
                accepted: Instant::now(),
            });
            {
                let mut live = table.lock().unwrap_or_else(|e| e.into_inner());
                if !make_room(&mut live, peer) {
                    // Every connection holds the token: this one is told so and closed.
                    tokio::spawn(turn_away(io));
                    continue;
                }
                next_id += 1;
                live.insert(next_id, entry.clone());
            }
            let _ = io.set_nodelay(true);
            watch_peer(io.as_raw_fd(), liveness.lost);
            let conn = Guarded {
                io,
                deadline: Box::pin(tokio::time::sleep(AUTH_LIMIT)),
                quiet: liveness.quiet,
                last: Instant::now(),
                entry,
                id: next_id,
                table: table.clone(),
            };
            if tx.send(Ok(conn)).await.is_err() {
                break;
            }
        }
    });
    Ok((rx, connections))
}

/// The source a connection from `peer` counts against: its address, an IPv4-mapped IPv6 one
/// as IPv4. Not an IPv6 /64: the hosts of one LAN commonly share one, and a coordinator would
/// count against a neighbour's flood.
fn source(peer: SocketAddr) -> IpAddr {
    peer.ip().to_canonical()
}

/// Makes room in `live` for a new connection from `peer`: evicts the oldest connection of its
/// source not yet authenticated when that source has [`PER_SOURCE`] of them; then, when
/// [`MAX_CONNECTIONS`] are held, the oldest not yet authenticated of the source with the most
/// of them (a coordinator waits with one, a flood from many addresses with up to
/// [`PER_SOURCE`] each). False when there is no room: every connection held is authenticated.
fn make_room(live: &mut BTreeMap<u64, Arc<Entry>>, peer: SocketAddr) -> bool {
    let waiting = |e: &Entry| !e.authenticated.load(Ordering::Relaxed);
    let from = source(peer);
    let mut same: Vec<u64> = live
        .iter()
        .filter(|(_, e)| waiting(e) && source(e.peer) == from)
        .map(|(id, _)| *id)
        .collect();
    // Oldest first (the map is in accept order).
    while same.len() >= PER_SOURCE {
        evict(live, same.remove(0));
    }
    if live.len() < MAX_CONNECTIONS {
        return true;
    }
    let mut counts: HashMap<IpAddr, usize> = HashMap::new();
    for e in live.values().filter(|e| waiting(e)) {
        *counts.entry(source(e.peer)).or_default() += 1;
    }
    let victim = live
        .iter()
        .filter(|(_, e)| waiting(e))
        .max_by_key(|(id, e)| (counts[&source(e.peer)], std::cmp::Reverse(**id)))
        .map(|(id, _)| *id);
    match victim {
        Some(id) => {
            evict(live, id);
            true
        }
        None => false,
    }
}

/// Ends connection `id`'s traffic and forgets it.
fn evict(live: &mut BTreeMap<u64, Arc<Entry>>, id: u64) {
    if let Some(e) = live.remove(&id) {
        // SAFETY: fd belongs to a connection that was still in the table, so still open (its
        // owner takes it out of the table before closing it); shutdown only ends its traffic,
        // and its owner closes it.
        unsafe { libc::shutdown(e.fd, libc::SHUT_RDWR) };
    }
}

/// Tells a connection there is no room for it ([`FULL_GOAWAY`]), then closes it, once its
/// peer has read that or after a second.
async fn turn_away(io: TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut io = io;
    let said = async {
        io.write_all(FULL_GOAWAY).await?;
        io.shutdown().await?;
        // Read what the peer sent (its preface) until it closes, so that the close is a FIN
        // and not a reset that could discard the GOAWAY before it is read.
        let mut sink = [0u8; 1024];
        while io.read(&mut sink).await? > 0 {}
        Ok::<_, io::Error>(())
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), said).await;
}

/// Asks the kernel to give up on the peer of `fd` within `lost` (see [`Liveness::lost`]): a
/// thousand coordinators' connections cost their processes nothing to keep this way, where an
/// HTTP/2 ping every 2 s woke the coordinator's connection task for each of them.
fn watch_peer(fd: RawFd, lost: Duration) {
    let idle = (lost * 2 / 5).as_secs().max(1) as libc::c_int;
    let user_timeout = lost.as_millis().min(u32::MAX as u128) as libc::c_uint;
    let set = |level, name, value: libc::c_int| {
        // SAFETY: fd is an open socket, and value lives for the call.
        unsafe {
            libc::setsockopt(
                fd,
                level,
                name,
                (&value as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
    };
    set(libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1);
    set(libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, idle);
    set(libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, 1);
    set(
        libc::IPPROTO_TCP,
        libc::TCP_USER_TIMEOUT,
        user_timeout as libc::c_int,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(peer: &str, authenticated: bool) -> Arc<Entry> {
        Arc::new(Entry {
            // No descriptor: an eviction's shutdown fails harmlessly.
            fd: -1,
            authenticated: AtomicBool::new(authenticated),
            peer: peer.parse().unwrap(),
            accepted: Instant::now(),
        })
    }

    fn fill(live: &mut BTreeMap<u64, Arc<Entry>>, peers: impl IntoIterator<Item = String>) {
        for p in peers {
            let id = live.keys().last().map_or(1, |k| k + 1);
            live.insert(id, entry(&p, false));
        }
    }

    /// Issue 54: one source holds at most a few connections waiting to authenticate; a new
    /// one evicts its oldest, not another source's.
    #[test]
    fn a_source_waits_with_a_few_connections_at_most() {
        let mut live = BTreeMap::new();
        fill(&mut live, (0..2).map(|i| format!("10.0.0.9:{}", 100 + i)));
        fill(&mut live, (0..4).map(|i| format!("10.0.0.1:{}", 100 + i)));
        assert!(make_room(&mut live, "10.0.0.1:200".parse().unwrap()));
        let left: Vec<String> = live.values().map(|e| e.peer.to_string()).collect();
        assert_eq!(
            left,
            [
                "10.0.0.9:100",
                "10.0.0.9:101",
                "10.0.0.1:101",
                "10.0.0.1:102",
                "10.0.0.1:103"
            ]
        );
        // An IPv4-mapped address is its IPv4 source; IPv6 addresses are each their own.
        assert_ne!(
            source("[2001:db8:1:2:aa::1]:5".parse().unwrap()),
            source("[2001:db8:1:2:bb::2]:6".parse().unwrap())
        );
        assert_eq!(
            source("[::ffff:10.0.0.1]:5".parse().unwrap()),
            source("10.0.0.1:6".parse().unwrap())
        );
    }

    /// Issue 54: at the cap, the oldest connection not yet authenticated makes room; an
    /// authenticated one never does, and with every one authenticated the new one is refused.
    #[test]
    fn authenticated_connections_are_never_evicted() {
        let mut live = BTreeMap::new();
        live.insert(1, entry("10.0.1.1:1", true));
        fill(
            &mut live,
            (0..MAX_CONNECTIONS - 1).map(|i| format!("10.0.2.{}:1", i)),
        );
        assert!(make_room(&mut live, "10.0.3.1:1".parse().unwrap()));
        assert_eq!(live.len(), MAX_CONNECTIONS - 1);
        assert!(live[&1].authenticated.load(Ordering::Relaxed));
        assert!(!live.values().any(|e| e.peer.to_string() == "10.0.2.0:1"));
        let mut all = BTreeMap::new();
        for i in 0..MAX_CONNECTIONS {
            all.insert(i as u64, entry(&format!("10.0.4.{i}:1"), true));
        }
        assert!(!make_room(&mut all, "10.0.5.1:1".parse().unwrap()));
        assert_eq!(all.len(), MAX_CONNECTIONS);
    }

    /// Issue 54: at the cap, a flood from many addresses gives up its connections before a
    /// coordinator's, even one that has waited longer, as long as some of its addresses wait
    /// with more than one (a flood from as many addresses as there are slots, one each, ties
    /// with the coordinator, and the oldest goes).
    #[test]
    fn the_source_with_the_most_waiting_makes_room() {
        let mut live = BTreeMap::new();
        fill(&mut live, ["10.0.9.9:1".to_string()]);
        fill(
            &mut live,
            (0..MAX_CONNECTIONS - 1).map(|i| format!("10.0.8.{}:{}", i / PER_SOURCE, i)),
        );
        assert_eq!(live.len(), MAX_CONNECTIONS);
        // 15 addresses wait with 4 each, one with 3: 47 of them go before any ties.
        for i in 0..47 {
            let peer: SocketAddr = format!("10.0.7.{i}:1").parse().unwrap();
            assert!(make_room(&mut live, peer));
            let id = live.keys().last().unwrap() + 1;
            live.insert(id, entry(&peer.to_string(), false));
            assert!(
                live.values().any(|e| e.peer.to_string() == "10.0.9.9:1"),
                "the coordinator's connection evicted at {i}"
            );
        }
    }

    #[test]
    fn the_goaway_frame_is_well_formed() {
        let len = u32::from_be_bytes([0, FULL_GOAWAY[0], FULL_GOAWAY[1], FULL_GOAWAY[2]]);
        assert_eq!(len as usize, FULL_GOAWAY.len() - 9);
        assert_eq!(FULL_GOAWAY[3], 7, "GOAWAY");
        assert_eq!(&FULL_GOAWAY[13..17], &[0, 0, 0, 0xb], "ENHANCE_YOUR_CALM");
    }
}
