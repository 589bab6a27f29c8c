//! Net jobs on this host: their servers checked before any load (or, for streams between
//! the run's agents, a port opened for each other host), a session opened per job (per peer)
//! for each stage, its streams handed to the job's workers, and what the servers counted
//! noted afterwards.

use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use stormark_engine::{NetConn, NetWork, StreamTally};
use stormark_net::{ClientOptions, Mode, NetError, ServerLine, Session, TcpInfo, UdpStats};
use stormark_spec::{NetJob, NetMode, Workload};
use stormark_stats::{NetReport, NetStream};

use super::peers::open_peer_ports;
use super::LocalAgent;
use crate::agent::{AgentError, NetPeer, Validated};

/// This host's interface toward `server` (the one a packet to it leaves by), its MTU and
/// rated speed, when known.
fn interface_toward(
    server: SocketAddr,
    bind: Option<IpAddr>,
    inventory: &stormark_probe::Inventory,
) -> (Option<String>, Option<u32>, Option<u64>) {
    let any: IpAddr = match (bind, server.is_ipv4()) {
        (Some(ip), _) => ip,
        (None, true) => std::net::Ipv4Addr::UNSPECIFIED.into(),
        (None, false) => std::net::Ipv6Addr::UNSPECIFIED.into(),
    };
    let local = std::net::UdpSocket::bind((any, 0))
        .and_then(|s| s.connect(server).and_then(|()| s.local_addr()))
        .ok();
    let interface = local.and_then(|a| stormark_net::interface_of(a.ip()));
    let link = interface
        .as_ref()
        .and_then(|name| inventory.net_interfaces.iter().find(|i| &i.name == name));
    (
        interface.clone(),
        link.and_then(|l| l.mtu),
        link.and_then(|l| l.speed_mbps),
    )
}

/// The largest IP packet that reaches `opts.server` and comes back (UDP with DF set), up to
/// this host's interface MTU toward it; `None` when not even 576 bytes do.
fn probe_path_mtu(opts: &ClientOptions, inventory: &stormark_probe::Inventory) -> Option<u32> {
    let (_, mtu, _) = interface_toward(opts.server, opts.bind, inventory);
    let probe = ClientOptions {
        mode: Mode::Pmtu,
        streams: 1,
        time: Duration::from_secs(5),
        msg_size: 1400,
        udp: true,
        bitrate: 0,
        bidir: false,
        reverse: false,
        rate: None,
        ..opts.clone()
    };
    stormark_net::probe_mtu(&probe, mtu.unwrap_or(1500))
        .ok()
        .flatten()
}

/// The address of `server` (`HOST:PORT`), looked up now.
fn resolve(job: &str, server: &str) -> Result<SocketAddr, AgentError> {
    server
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| {
            AgentError::job(
                job,
                format!(
                    "server {server}: no such host (give a name this host resolves, or an address)"
                ),
            )
        })
}

impl LocalAgent {
    /// The session a net job asks of its server from this host, for `workers` streams of a
    /// stage lasting `time` (`None`: only asked whether it would be served).
    fn client_options(
        &self,
        net: &NetJob,
        addr: SocketAddr,
        workers: usize,
        time: Option<Duration>,
    ) -> ClientOptions {
        session_options(
            net,
            addr,
            workers,
            time,
            self.stop.clone(),
            self.opts.net_token.clone(),
        )
    }

    /// The server each net job of `workload` streams to from this host (entry `index` of
    /// its list): it must accept such a session now (its token, its limits, not busy). For
    /// jobs between the run's agents, a port for each other host, open until the cleanup.
    pub(super) fn check_servers(
        &mut self,
        workload: &Workload,
        v: &mut Validated,
    ) -> Result<(), AgentError> {
        for job in &workload.jobs {
            let Some(net) = &job.net else { continue };
            let Some(server) = net.server_of(self.index) else {
                if self.peer_ports.is_some() {
                    continue;
                }
                let peers = self.opts.net_peers.clone().ok_or_else(|| {
                    AgentError::job(
                        &job.name,
                        "server = \"agents\" streams between the agents of a run: give --agents LIST (at least two)",
                    )
                })?;
                let (guard, ports) = open_peer_ports(&peers, self.index as usize)?;
                self.peer_ports = Some(guard);
                v.net_ports = ports;
                continue;
            };
            let addr = resolve(&job.name, server)?;
            let opts = self.client_options(net, addr, job.jobs as usize, None);
            stormark_net::check(&opts).map_err(|e| {
                let why = match e {
                    NetError::Unreachable { why, .. } => why,
                    e => e.to_string(),
                };
                AgentError::job(&job.name, format!("server {server}: {why}"))
            })?;
        }
        Ok(())
    }

    /// Opens a session for every net job `(k, job, name, workers)` of a stage that lasts
    /// `time` (its ramp included): the streams for the workers of job `k`, in order. A job to
    /// the run's agents opens one to each of `peers`; one that cannot open is the pair's
    /// failure, its workers each counting an error.
    pub(super) fn open_sessions(
        &self,
        jobs: &[(usize, &NetJob, String, usize)],
        time: Duration,
        peers: &[NetPeer],
    ) -> Result<Vec<NetSession>, AgentError> {
        let mut out = Vec::new();
        for (k, net, name, workers) in jobs {
            let Some(server) = net.server_of(self.index) else {
                for peer in peers {
                    let mut session = self.open_to_peer(net, name, *workers, time, peer);
                    session.job = *k;
                    out.push(session);
                }
                continue;
            };
            let addr = resolve(name, server)?;
            let opts = self.client_options(net, addr, *workers, Some(time));
            let mut session = NetSession::open(name, server.to_string(), net, &opts)?;
            session.job = *k;
            out.push(session);
        }
        Ok(out)
    }

    /// A net job's session to another agent of the run, from the address this host was
    /// named by; its path MTU probed first when asked.
    fn open_to_peer(
        &self,
        net: &NetJob,
        name: &str,
        workers: usize,
        time: Duration,
        peer: &NetPeer,
    ) -> NetSession {
        let peers = self.opts.net_peers.as_ref();
        let mut opts = self.client_options(net, peer.address, workers, Some(time));
        opts.token = peers.map(|p| p.token.clone());
        opts.bind = peers
            .and_then(|p| p.ips.get(self.index as usize).copied())
            .filter(|ip| std::net::UdpSocket::bind((*ip, 0)).is_ok());
        let path_mtu = if net.path_mtu {
            probe_path_mtu(&opts, &self.inventory)
        } else {
            None
        };
        let server = peer.address.to_string();
        let mut session = match NetSession::open(name, server.clone(), net, &opts) {
            Ok(s) => s,
            Err(e) => NetSession::failed(name, server, net, workers, e.to_string()),
        };
        session.to = Some(peer.host);
        session.path_mtu = path_mtu;
        session
    }
}

/// The session a net job asks of its server, for `workers` streams of a stage lasting `time`
/// (`None`: only asked whether it would be served).
pub(crate) fn session_options(
    net: &NetJob,
    addr: SocketAddr,
    workers: usize,
    time: Option<Duration>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    token: Option<String>,
) -> ClientOptions {
    let bidir = net.mode == NetMode::Bidir;
    ClientOptions {
        server: addr,
        mode: match net.mode {
            NetMode::Rtt => Mode::Rtt,
            _ => Mode::Throughput,
        },
        streams: (if bidir { workers / 2 } else { workers }).max(1) as u32,
        // The server's side outlasts the stage: the workers end the session. UDP's receiver
        // listens for exactly its time (and a second more).
        time: match time {
            Some(t) if net.udp => t,
            Some(t) => t + Duration::from_secs(10),
            None => Duration::from_secs(1),
        },
        reverse: net.mode == NetMode::Receive,
        msg_size: net.msg_size,
        stop,
        udp: net.udp,
        // The server paces what it sends (receive, the second half of bidir).
        bitrate: net.bitrate,
        bidir,
        token,
        rate: None,
        bind: None,
    }
}

/// The first 16 bytes of every datagram of stream `i`: the session's mark and the stream's
/// number (the server's `UDP_HEADER`, whose sequence and send time the worker writes).
fn udp_mark(token: u64, i: usize) -> [u8; 16] {
    let mut mark = [0u8; 16];
    mark[..8].copy_from_slice(&token.to_le_bytes());
    mark[8..12].copy_from_slice(&(i as u32).to_le_bytes());
    mark
}

/// A net job's session during a stage.
pub(crate) struct NetSession {
    /// The job's place in the stage.
    pub job: usize,
    name: String,
    server: String,
    net: NetJob,
    /// Streams that send from this host (all of send and UDP, the first half of bidir).
    sending: usize,
    conns: Vec<Arc<Mutex<Option<NetConn>>>>,
    handles: Vec<Option<TcpStream>>,
    tallies: Vec<Arc<StreamTally>>,
    local: Option<SocketAddr>,
    started: Instant,
    session: Option<Session>,
    /// Between the run's agents: the receiving host.
    to: Option<u32>,
    /// Why the session did not open.
    failure: Option<String>,
    /// The path MTU probed before it opened.
    path_mtu: Option<u32>,
}

impl NetSession {
    /// Opens the session `opts` asks of `server` for the job `name`: its streams (or UDP
    /// sockets), one per worker, in order.
    pub(crate) fn open(
        name: &str,
        server: String,
        net: &NetJob,
        opts: &ClientOptions,
    ) -> Result<NetSession, AgentError> {
        let mut session = Session::open(opts)
            .map_err(|e| AgentError::job(name, format!("server {server}: {e}")))?;
        let local = session
            .streams
            .first()
            .and_then(|s| s.local_addr().ok())
            .or_else(|| session.udp.first().and_then(|s| s.local_addr().ok()));
        // Kept to read each sending stream's TCP_INFO at the end.
        let handles = session.streams.iter().map(|s| s.try_clone().ok()).collect();
        let conns: Vec<_> = std::mem::take(&mut session.streams)
            .into_iter()
            .map(NetConn::Tcp)
            .chain(
                std::mem::take(&mut session.udp)
                    .into_iter()
                    .enumerate()
                    .map(|(i, s)| NetConn::Udp(s, udp_mark(session.udp_token, i))),
            )
            .map(|c| Arc::new(Mutex::new(Some(c))))
            .collect();
        let tallies = (0..conns.len())
            .map(|_| Arc::new(StreamTally::default()))
            .collect();
        Ok(NetSession {
            job: 0,
            name: name.to_string(),
            server,
            net: net.clone(),
            sending: opts.streams as usize,
            conns,
            handles,
            tallies,
            local,
            started: Instant::now(),
            session: Some(session),
            to: None,
            failure: None,
            path_mtu: None,
        })
    }

    /// A session that could not open (`why`): `workers` workers without a stream, each
    /// counting an error, and a report that says why.
    pub(crate) fn failed(
        name: &str,
        server: String,
        net: &NetJob,
        workers: usize,
        why: String,
    ) -> NetSession {
        NetSession {
            job: 0,
            name: name.to_string(),
            server,
            net: net.clone(),
            sending: workers,
            conns: (0..workers).map(|_| Arc::new(Mutex::new(None))).collect(),
            handles: Vec::new(),
            tallies: (0..workers)
                .map(|_| Arc::new(StreamTally::default()))
                .collect(),
            local: None,
            started: Instant::now(),
            session: None,
            to: None,
            failure: Some(why),
            path_mtu: None,
        }
    }

    /// Its workers: one per stream (both halves with bidir).
    pub fn workers(&self) -> usize {
        self.conns.len()
    }

    /// What this stream does from this host.
    fn mode_of(&self, w: usize) -> NetMode {
        match self.net.mode {
            NetMode::Bidir if w < self.sending => NetMode::Send,
            NetMode::Bidir => NetMode::Receive,
            m => m,
        }
    }

    /// The work of worker `w`: its stream.
    pub fn work(&self, w: usize) -> NetWork {
        let mode = self.mode_of(w);
        NetWork {
            conn: self.conns[w].clone(),
            mode,
            msg_size: self.net.msg_size,
            server: self.server.clone(),
            bitrate: if mode == NetMode::Send {
                self.net.bitrate as f64 / self.sending as f64
            } else {
                0.0
            },
            counted: self
                .session
                .as_ref()
                .filter(|_| mode == NetMode::Send)
                .map(|s| (s.counted.clone(), w, s.ended.clone())),
            tally: self.tallies[w].clone(),
            pair: self.to.is_some(),
        }
    }

    /// Ends the session (every stream closed): a note of what the server counted, the report
    /// of each stream as its ends saw it, and the session's time (the server's, from the start
    /// to the last byte) its rates and CPU shares are of.
    pub fn finish(
        mut self,
        inventory: &stormark_probe::Inventory,
    ) -> (Option<String>, NetReport, u64) {
        for c in &self.conns {
            if let Some(NetConn::Tcp(s)) = c.lock().ok().and_then(|mut s| s.take()) {
                let _ = s.shutdown(std::net::Shutdown::Both);
            }
        }
        let tcp: Vec<Option<TcpInfo>> = self
            .handles
            .iter()
            .map(|h| h.as_ref().and_then(stormark_net::tcp_info))
            .collect();
        let Some(session) = self.session.take() else {
            let report = NetReport {
                server: self.server.clone(),
                protocol: if self.net.udp { "udp" } else { "tcp" }.into(),
                mode: self.net.mode.name().into(),
                to: self.to,
                failure: self.failure.take(),
                ..NetReport::default()
            };
            return (None, report, 0);
        };
        // Read once the server's end report is in (or it is gone): before it, the counts are
        // its per-second lines', short of the last second (all of a 1 s test's).
        let counted = session.counted.clone();
        let end = session.finish();
        let counted: Vec<u64> = counted
            .iter()
            .map(|c| c.load(std::sync::atomic::Ordering::Acquire))
            .collect();
        let (duration_ns, server_tcp, udp, server_cpu) = match &end {
            Some(ServerLine::End {
                duration_ns,
                tcp,
                udp,
                cpu_ns,
                ..
            }) => (*duration_ns, tcp.clone(), udp.clone(), cpu_ns.clone()),
            _ => (0, Vec::new(), Vec::new(), Vec::new()),
        };
        // The server's time from the start to the last byte; without its report, this end's.
        let duration_ns = if duration_ns > 0 {
            duration_ns
        } else {
            self.started.elapsed().as_nanos() as u64
        };
        // A UDP receiver that counts more than a stream sent is not to be believed: none of
        // its counts are used.
        let false_claim = self.false_claim(&counted, &udp);
        let (counted, udp) = match false_claim {
            Some(_) => (vec![0; counted.len()], Vec::new()),
            None => (counted, udp),
        };
        let mut report = self.report(&counted, &tcp, &server_tcp, &udp, &server_cpu, duration_ns);
        report.to = self.to;
        report.duration_ns = duration_ns;
        report.path_mtu = self.path_mtu;
        // A stream's failure (a pair's, which went on without it), with the server named.
        report.failure = self
            .tallies
            .iter()
            .find_map(|t| t.failure.lock().ok().and_then(|f| f.clone()))
            .or_else(|| false_claim.clone());
        // The interface the test left by, with its rated speed and MTU.
        report.interface = self.local.and_then(|a| stormark_net::interface_of(a.ip()));
        if let Some(link) = report
            .interface
            .as_ref()
            .and_then(|name| inventory.net_interfaces.iter().find(|i| &i.name == name))
        {
            report.link_mbps = link.speed_mbps;
            report.mtu = link.mtu;
        }
        let total: u64 = counted.iter().take(self.sending).sum();
        if let Some(claim) = false_claim {
            let note = format!("net job {}: {claim}", self.name);
            return (Some(note), report, duration_ns);
        }
        // A mesh's pairs say theirs in its matrices.
        let note = (self.to.is_none() && self.net.mode == NetMode::Send && end.is_some() && duration_ns > 0).then(|| {
            format!(
                "net job {}: {} counted {} received over {:.1} s ({:.2} Gbit/s, ramp included), what this host sent as the receiver saw it",
                self.name,
                self.server,
                super::human(total),
                duration_ns as f64 / 1e9,
                total as f64 * 8.0 / duration_ns as f64
            )
        });
        (note, report, duration_ns)
    }

    /// UDP: the first stream whose receiver counted more datagrams or bytes than this host
    /// sent on it, in words (a protocol error: its counts are not to be believed).
    fn false_claim(&self, counted: &[u64], udp: &[UdpStats]) -> Option<String> {
        if !self.net.udp {
            return None;
        }
        let load = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
        self.tallies.iter().enumerate().find_map(|(w, tally)| {
            let datagrams = load(&tally.datagrams);
            let bytes = datagrams.saturating_mul(u64::from(self.net.msg_size));
            let claimed = udp.get(w).map_or(0, |u| u.datagrams);
            let claimed_bytes = counted.get(w).copied().unwrap_or(0);
            (claimed > datagrams || claimed_bytes > bytes).then(|| {
                format!(
                    "{} claims {claimed} datagrams ({claimed_bytes} bytes) received on stream {w}, of the {datagrams} ({bytes} bytes) this host sent: a peer whose counts are not to be believed (protocol error; its counts are not used)",
                    self.server
                )
            })
        })
    }

    /// Each stream as its ends saw it: TCP_INFO of whichever end sent, each end's thread CPU,
    /// UDP's loss, order and jitter.
    fn report(
        &self,
        counted: &[u64],
        tcp: &[Option<TcpInfo>],
        server_tcp: &[Option<TcpInfo>],
        udp: &[UdpStats],
        server_cpu: &[u64],
        duration_ns: u64,
    ) -> NetReport {
        let load = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
        let both_ways = self.net.mode == NetMode::Bidir;
        let streams = self
            .tallies
            .iter()
            .enumerate()
            .map(|(w, tally)| {
                let mode = self.mode_of(w);
                let mine = Some(load(&tally.cpu_ns));
                let theirs = server_cpu.get(w).copied();
                let (info, sender_cpu, receiver_cpu) = match mode {
                    NetMode::Send => (tcp.get(w).copied().flatten(), mine, theirs),
                    NetMode::Receive => (
                        server_tcp
                            .get(if both_ways { w - self.sending } else { w })
                            .copied()
                            .flatten(),
                        theirs,
                        mine,
                    ),
                    _ => (None, None, None),
                };
                let udp_stats = udp.get(w).filter(|_| self.net.udp);
                // The server does not say its threads' CPU per stream both ways at once.
                let cpu = |c: Option<u64>| {
                    if both_ways || self.net.udp {
                        None
                    } else {
                        stormark_stats::cpu_pct(c, duration_ns)
                    }
                };
                NetStream {
                    bytes: if mode == NetMode::Send {
                        counted.get(w).copied().unwrap_or(0)
                    } else {
                        load(&tally.bytes)
                    },
                    retransmits: info.map(|t| t.retransmits),
                    srtt_us: info.map(|t| t.rtt_us),
                    cwnd: info.map(|t| t.snd_cwnd),
                    pmtu: info.map(|t| t.pmtu),
                    mss: info.map(|t| t.snd_mss),
                    datagrams_sent: self.net.udp.then(|| load(&tally.datagrams)),
                    datagrams_received: udp_stats.map(|u| u.datagrams),
                    out_of_order: udp_stats.map(|u| u.out_of_order),
                    jitter_ns: udp_stats.map(|u| u.jitter_ns),
                    sender_cpu_pct: cpu(sender_cpu),
                    receiver_cpu_pct: cpu(receiver_cpu),
                }
            })
            .collect();
        NetReport {
            interface: None,
            link_mbps: None,
            mtu: None,
            path_mtu: None,
            server: self.server.clone(),
            protocol: if self.net.udp { "udp" } else { "tcp" }.into(),
            mode: if self.net.mode == NetMode::Rtt {
                "rtt"
            } else {
                "throughput"
            }
            .into(),
            reverse: self.net.mode == NetMode::Receive,
            bidir: both_ways,
            streams,
            ..NetReport::default()
        }
    }
}
