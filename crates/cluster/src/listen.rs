//! The agent's listening socket, guarded before any request is read: a cap on connections at
//! once, where a new connection evicts the oldest one that never sent a byte, and a deadline
//! on silence, so that a flood of idle TCP connections (which never authenticate) can neither
//! exhaust the agent, lock a coordinator out, nor keep the agent from exiting.

use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
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

/// Connections served at once; more are closed as soon as they are accepted. A coordinator
/// needs one.
pub const MAX_CONNECTIONS: usize = 64;

/// A connection that sends nothing for this long from its start is closed: its first bytes
/// (the TLS or HTTP/2 handshake) must come within it.
pub const SILENCE_LIMIT: Duration = Duration::from_secs(10);

/// How the agent tells a live coordinator from a lost one, on each connection it accepts.
#[derive(Clone, Copy, Debug)]
pub struct Liveness {
    /// A dead or unreachable peer host is given up within this: the kernel probes a connection
    /// idle for two fifths of it (TCP keep-alive, answered by the peer's kernel, not its
    /// process) and closes it when sent data or a probe goes unanswered this long
    /// (`TCP_USER_TIMEOUT`).
    pub lost: Duration,
    /// A connection that has talked and then sent nothing for this long is closed: longer than
    /// the HTTP/2 pings that find a peer process that is alive but frozen (Ctrl-Z).
    pub quiet: Duration,
}

/// A connection held under the cap, closed after [`SILENCE_LIMIT`] without a first byte from
/// the peer, and after [`Liveness::quiet`] without a later one.
pub struct Guarded {
    io: TcpStream,
    deadline: Pin<Box<Sleep>>,
    quiet: Duration,
    entry: Arc<Entry>,
    id: u64,
    table: Arc<Table>,
}

/// What the accept loop knows of a live connection.
struct Entry {
    fd: RawFd,
    talked: AtomicBool,
    peer: SocketAddr,
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
                    self.entry.talked.store(true, Ordering::Relaxed);
                    let quiet = self.quiet;
                    self.deadline.as_mut().reset(Instant::now() + quiet);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => match self.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no bytes from the peer in time",
                ))),
                Poll::Pending => Poll::Pending,
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
    addr: SocketAddr,
    liveness: Liveness,
) -> io::Result<(mpsc::Receiver<Result<Guarded, io::Error>>, Connections)> {
    let listener = TcpListener::bind(addr).await?;
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
                talked: AtomicBool::new(false),
                peer,
            });
            {
                let mut live = table.lock().unwrap_or_else(|e| e.into_inner());
                if live.len() >= MAX_CONNECTIONS {
                    // Evict the oldest connection that never said anything; with none, the
                    // new one is closed (dropped) at once.
                    let silent = live
                        .iter()
                        .find(|(_, e)| !e.talked.load(Ordering::Relaxed))
                        .map(|(id, e)| (*id, e.fd));
                    let Some((id, fd)) = silent else {
                        continue;
                    };
                    // SAFETY: fd belongs to a connection still in the table, so still open;
                    // shutdown only ends its traffic, and its owner closes it.
                    unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
                    live.remove(&id);
                }
                next_id += 1;
                live.insert(next_id, entry.clone());
            }
            let _ = io.set_nodelay(true);
            watch_peer(io.as_raw_fd(), liveness.lost);
            let conn = Guarded {
                io,
                deadline: Box::pin(tokio::time::sleep(SILENCE_LIMIT)),
                quiet: liveness.quiet,
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
