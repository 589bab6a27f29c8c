//! The control protocol: JSON lines on the first connection, and the line that opens each
//! data connection.

use std::io::{BufRead, Read};

use serde::{Deserialize, Serialize};

use crate::TcpInfo;

/// The port a server listens on unless told otherwise.
pub const DEFAULT_PORT: u16 = 7879;

/// What a server accepts: (streams, message size in bytes, seconds).
pub const LIMITS: (u32, u32, u64) = (128, 16 << 20, 86_400);

/// The longest control line read (a hello or a report of 128 streams is far shorter).
pub(crate) const LINE_LIMIT: u64 = 64 << 10;

/// What a test measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Bytes per second over parallel streams.
    Throughput,
    /// Request/response round trips of one message size.
    Rtt,
    /// The path MTU: the server echoes the head of the session's UDP datagrams, which the
    /// client sends with DF set at decreasing sizes, until the client says it is done.
    Pmtu,
}

/// The client's request, the first line of the control connection. `Debug` never shows the
/// token.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// Protocol version (1).
    pub version: u32,
    /// What to measure.
    pub mode: Mode,
    /// Data connections.
    pub streams: u32,
    /// How long the sender sends (throughput) or the client asks (rtt), ms.
    pub time_ms: u64,
    /// Throughput from the server to the client instead.
    pub reverse: bool,
    /// Bytes per write (throughput) or per message each way (rtt).
    pub msg_size: u32,
    /// Opens each data connection of this session (hex, made by the client); its first 16
    /// digits mark each UDP datagram.
    pub nonce: String,
    /// UDP datagrams instead of TCP streams (throughput only).
    #[serde(default)]
    pub udp: bool,
    /// UDP: bits per second of payload the client sends, over all streams.
    #[serde(default)]
    pub bitrate: u64,
    /// Throughput both ways at once: `streams` connections each way (the first half sends
    /// to the server).
    #[serde(default)]
    pub bidir: bool,
    /// The server's token, when it asks for one (`--token-file` on both ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Only ask whether the server would run this session now (the token, the limits, not
    /// busy): `accepted` or `refused`, then the connection closes and nothing starts. An
    /// agent asks before any load, so that a wrong token is the user's mistake, said at once.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub check_only: bool,
}

impl std::fmt::Debug for Hello {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hello")
            .field("mode", &self.mode)
            .field("streams", &self.streams)
            .field("time_ms", &self.time_ms)
            .field("reverse", &self.reverse)
            .field("bidir", &self.bidir)
            .field("udp", &self.udp)
            .field("msg_size", &self.msg_size)
            .field("token", &self.token.as_ref().map(|_| "<hidden>"))
            .field("check_only", &self.check_only)
            .finish()
    }
}

/// What the receiver of UDP datagrams saw on one stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UdpStats {
    /// Datagrams received.
    pub datagrams: u64,
    /// Bytes received.
    pub bytes: u64,
    /// Datagrams that came after a later one.
    pub out_of_order: u64,
    /// Interarrival jitter (RFC 3550, smoothed over 16), ns.
    pub jitter_ns: u64,
}

/// Bytes at the start of each UDP datagram: token, stream, sequence, send time.
pub const UDP_HEADER: usize = 32;

/// The session token of a nonce, which every datagram carries.
pub(crate) fn token(nonce: &str) -> u64 {
    u64::from_str_radix(nonce.get(..16).unwrap_or("0"), 16).unwrap_or(0)
}

impl Hello {
    /// Why the server refuses it, if it does.
    pub fn check(&self) -> Result<(), String> {
        let (streams, msg, secs) = LIMITS;
        if self.version != 1 {
            return Err(format!(
                "protocol version {} (this server speaks 1)",
                self.version
            ));
        }
        if !(1..=streams).contains(&self.streams) {
            return Err(format!("{} streams (1 to {streams})", self.streams));
        }
        if !(1..=msg).contains(&self.msg_size) {
            return Err(format!("message size {} (1 byte to 16 MiB)", self.msg_size));
        }
        if self.time_ms == 0 || self.time_ms > secs * 1000 {
            return Err(format!("time {} ms (up to {secs} s)", self.time_ms));
        }
        if self.nonce.len() != 32 || !self.nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err("a malformed nonce".into());
        }
        if self.bidir && (self.mode != Mode::Throughput || self.reverse || self.udp) {
            return Err("both ways at once is TCP throughput only".into());
        }
        if self.udp && (self.mode != Mode::Throughput || self.reverse) {
            return Err("UDP runs throughput from the client only".into());
        }
        if self.udp && !(UDP_HEADER as u32..=65_000).contains(&self.msg_size) {
            return Err(format!(
                "a datagram of {} bytes (32 to 65000)",
                self.msg_size
            ));
        }
        Ok(())
    }
}

/// What the server says on the control connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ServerLine {
    /// The session is on: open the data connections.
    Accepted,
    /// No session: why.
    Refused {
        /// In words.
        reason: String,
    },
    /// Every stream has joined: the test's clock starts.
    Started,
    /// Bytes received on each stream since the start, at the end of second `t` (the
    /// receiver's counts, when the server receives).
    Second {
        /// Seconds since the start, from 0.
        t: u32,
        /// Per stream, cumulative.
        bytes: Vec<u64>,
    },
    /// The test is over on the server's side.
    End {
        /// Per stream, bytes the server received (or sent, in reverse).
        bytes: Vec<u64>,
        /// From the start to the last byte, ns.
        duration_ns: u64,
        /// When the server sent (reverse): its kernel's view of each stream.
        tcp: Vec<Option<TcpInfo>>,
        /// UDP: what arrived on each stream.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        udp: Vec<UdpStats>,
        /// TCP throughput: the CPU time each stream's thread on the server used, ns.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        cpu_ns: Vec<u64>,
    },
}

/// Reads one line of at most [`LINE_LIMIT`] bytes; `None` at the end of the stream.
pub(crate) fn read_line(r: &mut impl BufRead) -> std::io::Result<Option<String>> {
    let mut line = String::new();
    let n = r.by_ref().take(LINE_LIMIT).read_line(&mut line)?;
    if n == 0 {
        return Ok(None);
    }
    if !line.ends_with('\n') {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "a control line too long or cut short",
        ));
    }
    line.pop();
    Ok(Some(line))
}

/// The first line of a data connection.
pub(crate) fn data_line(nonce: &str, stream: u32) -> String {
    format!("DATA {nonce} {stream}\n")
}

/// Parses a data connection's first line into (nonce, stream).
pub(crate) fn parse_data_line(line: &str) -> Option<(&str, u32)> {
    let mut parts = line.split(' ');
    (parts.next()? == "DATA").then_some(())?;
    let nonce = parts.next()?;
    let stream = parts.next()?.parse().ok()?;
    parts.next().is_none().then_some((nonce, stream))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello() -> Hello {
        Hello {
            version: 1,
            mode: Mode::Throughput,
            streams: 4,
            time_ms: 10_000,
            reverse: false,
            msg_size: 128 << 10,
            nonce: "0123456789abcdef0123456789abcdef".into(),
            udp: false,
            bitrate: 0,
            bidir: false,
            token: None,
            check_only: false,
        }
    }

    #[test]
    fn hellos_within_limits_only() {
        assert_eq!(hello().check(), Ok(()));
        let bad = [
            Hello {
                streams: 0,
                ..hello()
            },
            Hello {
                streams: 129,
                ..hello()
            },
            Hello {
                msg_size: 0,
                ..hello()
            },
            Hello {
                msg_size: (16 << 20) + 1,
                ..hello()
            },
            Hello {
                time_ms: 0,
                ..hello()
            },
            Hello {
                version: 2,
                ..hello()
            },
            Hello {
                nonce: "xyz".into(),
                ..hello()
            },
        ];
        for h in bad {
            assert!(h.check().is_err(), "{h:?}");
        }
    }

    #[test]
    fn any_first_line_is_taken_or_refused_without_a_panic() {
        // What a stranger may send the server: anything, as a data line or as a hello.
        let mut x = 0x1234_5678_9abc_def0_u64;
        let alphabet: &[u8] = b" {}\":,DATA0123456789abcdefnoprstuvwxyz-[]";
        for len in 0..2000usize {
            let bytes: Vec<u8> = (0..len % 200)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    alphabet[(x % alphabet.len() as u64) as usize]
                })
                .collect();
            let text = String::from_utf8_lossy(&bytes);
            let _ = parse_data_line(&text);
            if let Ok(h) = serde_json::from_str::<Hello>(&text) {
                let _ = h.check();
            }
            let _ = serde_json::from_str::<ServerLine>(&text);
        }
    }

    #[test]
    fn lines_round_trip_and_are_bounded() {
        let line = data_line("ab", 3);
        assert_eq!(parse_data_line(line.trim_end()), Some(("ab", 3)));
        for bad in [
            "",
            "DATA",
            "DATA ab",
            "DATA ab x",
            "DATA ab 1 2",
            "GET / HTTP/1.1",
        ] {
            assert_eq!(parse_data_line(bad), None, "{bad}");
        }
        let long = vec![b'x'; (LINE_LIMIT + 10) as usize];
        let mut r = std::io::BufReader::new(&long[..]);
        assert!(read_line(&mut r).is_err());
        let s = serde_json::to_string(&ServerLine::Second {
            t: 1,
            bytes: vec![5, 6],
        })
        .unwrap();
        assert_eq!(
            serde_json::from_str::<ServerLine>(&s).unwrap(),
            ServerLine::Second {
                t: 1,
                bytes: vec![5, 6]
            }
        );
    }
}
