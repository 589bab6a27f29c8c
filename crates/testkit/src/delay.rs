//! A TCP relay that holds every chunk of data a fixed time in each direction: a link with a
//! known delay, where the kernel has no netem. A ping-pong through it takes twice the delay
//! more than without it.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A running relay; it lives as long as the test process.
pub struct DelayRelay {
    /// Where clients connect.
    pub addr: SocketAddr,
}

impl DelayRelay {
    /// Listens on 127.0.0.1 and relays every connection to `upstream`, holding each chunk
    /// `delay` each way.
    pub fn start(upstream: SocketAddr, delay: Duration) -> DelayRelay {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding the relay");
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(upstream) else {
                    continue;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                pipe(client, server, delay);
                pipe(s2, c2, delay);
            }
        });
        DelayRelay { addr }
    }
}

/// Copies `from` to `to`, each chunk `delay` after it was read, in order.
fn pipe(mut from: TcpStream, mut to: TcpStream, delay: Duration) {
    let (tx, rx) = mpsc::channel::<(Instant, Option<Vec<u8>>)>();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 << 10];
        loop {
            match from.read(&mut buf) {
                Ok(n @ 1..) => {
                    if tx
                        .send((Instant::now() + delay, Some(buf[..n].to_vec())))
                        .is_err()
                    {
                        break;
                    }
                }
                _ => {
                    let _ = tx.send((Instant::now() + delay, None));
                    break;
                }
            }
        }
    });
    std::thread::spawn(move || {
        for (due, chunk) in rx {
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
            match chunk {
                Some(c) if to.write_all(&c).is_ok() => {}
                _ => {
                    let _ = to.shutdown(Shutdown::Write);
                    break;
                }
            }
        }
    });
}
