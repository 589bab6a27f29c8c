//! Network load in a job file (`kind = "net"`): streams to a `stormark net server`, beside
//! file and S3 jobs, so that storage is measured while the network is loaded.

use std::fmt;

/// What a net job's streams do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NetMode {
    /// This host sends, the server counts (iperf3's default direction).
    #[default]
    Send,
    /// The server sends, this host receives (iperf3's `-R`).
    Receive,
    /// Both ways at once (iperf3's `--bidir`): the first half of the job's streams send, the
    /// second half receive.
    Bidir,
    /// Request/response round trips of one message size each way.
    Rtt,
}

impl NetMode {
    /// The name as typed.
    pub fn name(self) -> &'static str {
        match self {
            NetMode::Send => "send",
            NetMode::Receive => "receive",
            NetMode::Bidir => "bidir",
            NetMode::Rtt => "rtt",
        }
    }

    /// Parses `send` (or `throughput`), `receive` (or `reverse`), `bidir` and `rtt`.
    pub fn parse(s: &str) -> Option<NetMode> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "send" | "throughput" => NetMode::Send,
            "receive" | "reverse" => NetMode::Receive,
            "bidir" => NetMode::Bidir,
            "rtt" => NetMode::Rtt,
            _ => return None,
        })
    }
}

impl fmt::Display for NetMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The most streams one net job opens (what a `stormark net server` accepts in a session).
pub const MAX_STREAMS: u32 = 128;

/// The accepted form of `mode`.
pub const NET_MODE_FORM: &str = "send (or throughput), receive (or reverse), bidir or rtt";

/// The accepted form of `bitrate`.
pub const BITRATE_FORM: &str =
    "bits per second from 1k to 400g, such as 100m or 1g (1000-based, as iperf3)";

/// The accepted form of `protocol`.
pub const PROTOCOL_FORM: &str = "tcp or udp";

/// The accepted form of `server`.
pub const SERVER_FORM: &str =
    "HOST[:PORT] of a `stormark net server`, a list HOST1:PORT,HOST2:PORT (host i of the run uses entry i), or agents (every other agent of the run)";

/// Where a net job's streams go.
#[derive(Debug, Clone, PartialEq)]
pub enum NetServers {
    /// `stormark net server`s, `HOST:PORT`; host `i` of a run streams to entry `i % len`.
    Listed(Vec<String>),
    /// Every other agent of the run (`server = "agents"`), each serving the others on ports it
    /// opens for the run alone: the network between a run's hosts (a mesh's load).
    Agents,
}

/// The network part of a job of kind net.
#[derive(Debug, Clone, PartialEq)]
pub struct NetJob {
    /// Where the streams go.
    pub servers: NetServers,
    /// Send, receive or round trips.
    pub mode: NetMode,
    /// Bytes per write (send, receive), per datagram (udp) or per message each way (rtt).
    pub msg_size: u32,
    /// Payload bits per second over all the job's streams on each host (0: as fast as they
    /// go; UDP is always paced).
    pub bitrate: u64,
    /// UDP datagrams instead of TCP streams (mode send only).
    pub udp: bool,
    /// Probe the path MTU toward each server (UDP with DF set) before the load.
    pub path_mtu: bool,
}

impl NetJob {
    /// The job's net keys as `key = value` pairs in job-file form.
    pub(crate) fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut pairs = vec![
            (
                "server",
                match &self.servers {
                    NetServers::Listed(list) => list.join(","),
                    NetServers::Agents => "agents".into(),
                },
            ),
            ("mode", self.mode.name().into()),
            (
                "msg_size",
                crate::units::format_size(u64::from(self.msg_size)),
            ),
        ];
        if self.bitrate > 0 {
            pairs.push(("bitrate", self.bitrate.to_string()));
        }
        if self.udp {
            pairs.push(("protocol", "udp".into()));
        }
        if self.path_mtu {
            pairs.push(("path_mtu", "1".into()));
        }
        pairs
    }

    /// The server host `index` of a run streams to; `None` for the run's other agents.
    pub fn server_of(&self, index: u64) -> Option<&str> {
        match &self.servers {
            NetServers::Listed(list) => Some(&list[(index % list.len() as u64) as usize]),
            NetServers::Agents => None,
        }
    }

    /// Streams between the run's own agents.
    pub fn to_agents(&self) -> bool {
        self.servers == NetServers::Agents
    }
}

/// Bits per second: a number with k, m or g (1000-based, as iperf3 and link speeds), from 1k
/// to 400g.
pub fn parse_bitrate(text: &str) -> Option<u64> {
    let t = text.trim().to_ascii_lowercase();
    let t = t
        .strip_suffix("bit")
        .or_else(|| t.strip_suffix("bps"))
        .unwrap_or(&t);
    let (num, mult) = match t.as_bytes().last()? {
        b'k' => (&t[..t.len() - 1], 1e3),
        b'm' => (&t[..t.len() - 1], 1e6),
        b'g' => (&t[..t.len() - 1], 1e9),
        _ => (t, 1.0),
    };
    let v = num.parse::<f64>().ok()? * mult;
    (v.is_finite() && (1e3..=4e11).contains(&v)).then_some(v as u64)
}

/// Parses a `server` value: one or more `HOST[:PORT]`, comma-separated; the port defaults to
/// `default_port`. Each host is a name or an address (IPv6 in brackets).
pub fn parse_servers(value: &str, default_port: u16) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for part in value.split(',') {
        let part = part.trim();
        if part.is_empty() || part.len() > 260 || part.chars().any(char::is_whitespace) {
            return None;
        }
        let (host, port) = match part.strip_prefix('[') {
            Some(rest) => {
                let (host, after) = rest.split_once(']')?;
                host.parse::<std::net::Ipv6Addr>().ok()?;
                match after.strip_prefix(':') {
                    Some(p) => (format!("[{host}]"), p.parse::<u16>().ok()?),
                    None if after.is_empty() => (format!("[{host}]"), default_port),
                    None => return None,
                }
            }
            None => match part.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), p.parse::<u16>().ok()?),
                None => (part.to_string(), default_port),
            },
        };
        let name_ok = host.starts_with('[')
            || host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_');
        if host.is_empty() || port == 0 || !name_ok {
            return None;
        }
        out.push(format!("{host}:{port}"));
    }
    (!out.is_empty() && out.len() <= 1024).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitrates_are_1000_based() {
        assert_eq!(parse_bitrate("100m"), Some(100_000_000));
        assert_eq!(parse_bitrate("1.5G"), Some(1_500_000_000));
        assert_eq!(parse_bitrate("300mbit"), Some(300_000_000));
        assert_eq!(parse_bitrate("2000"), Some(2000));
        for bad in ["", "fast", "1", "999", "500g", "-1m", "nanm"] {
            assert_eq!(parse_bitrate(bad), None, "{bad}");
        }
    }

    #[test]
    fn servers_parse_with_default_ports() {
        assert_eq!(
            parse_servers("10.0.0.2", 7879),
            Some(vec!["10.0.0.2:7879".into()])
        );
        assert_eq!(
            parse_servers("a.example:5000, [fe80::1]:6000,[::1]", 7879),
            Some(vec![
                "a.example:5000".into(),
                "[fe80::1]:6000".into(),
                "[::1]:7879".into()
            ])
        );
        for bad in [
            "",
            ",",
            "host:0",
            "host:99999",
            "ho st",
            "[nope]:1",
            "a;b",
            "h:1:2",
        ] {
            assert_eq!(parse_servers(bad, 7879), None, "{bad}");
        }
    }

    #[test]
    fn hosts_take_servers_in_turn() {
        let j = NetJob {
            servers: NetServers::Listed(vec!["a:1".into(), "b:1".into()]),
            mode: NetMode::Send,
            msg_size: 1,
            bitrate: 0,
            udp: false,
            path_mtu: false,
        };
        assert_eq!(
            (
                j.server_of(0).unwrap(),
                j.server_of(1).unwrap(),
                j.server_of(2).unwrap()
            ),
            ("a:1", "b:1", "a:1")
        );
    }

    proptest::proptest! {
        #[test]
        fn server_parsing_never_panics(s in "\\PC{0,80}") {
            let _ = parse_servers(&s, 7879);
            let _ = NetMode::parse(&s);
        }
    }
}
