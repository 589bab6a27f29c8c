//! A proxy in front of an HTTP service that serves one request per connection, as a service
//! with keep-alive turned off does: it asks the service to close (`Connection: close`), relays
//! the answer and closes the client's connection.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};

/// A running proxy; it lives as long as the test process.
pub struct OneRequestProxy {
    /// Where clients connect.
    pub addr: SocketAddr,
}

impl OneRequestProxy {
    /// Listens on 127.0.0.1 and relays to `upstream`.
    pub fn start(upstream: SocketAddr) -> OneRequestProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding the proxy");
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                std::thread::spawn(move || {
                    let _ = relay(client, upstream);
                });
            }
        });
        OneRequestProxy { addr }
    }
}

/// One request from `client` to `upstream` and its answer back; then both are closed.
fn relay(mut client: TcpStream, upstream: SocketAddr) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if client.read(&mut byte)? == 0 {
            return Ok(());
        }
        head.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let mut length = 0usize;
    let mut rewritten = String::new();
    for line in text.split("\r\n").filter(|l| !l.is_empty()) {
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if !lower.starts_with("connection:") {
            rewritten.push_str(line);
            rewritten.push_str("\r\n");
        }
    }
    rewritten.push_str("Connection: close\r\n\r\n");
    let mut body = vec![0u8; length];
    client.read_exact(&mut body)?;
    let mut service = TcpStream::connect(upstream)?;
    service.write_all(rewritten.as_bytes())?;
    service.write_all(&body)?;
    // The service closes after its answer (it was asked to): relay until then.
    std::io::copy(&mut service, &mut client)?;
    client.shutdown(Shutdown::Both)
}
