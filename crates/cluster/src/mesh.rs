//! The network between a run's hosts, measured by their agents (`stormark net mesh`): every
//! ordered pair alone, then every pair at once.
//!
//! Each agent opens one `stormark net` port per other host, serving only that host's address
//! and a token made for this run, until its session ends; the coordinator then asks the
//! sending agent of each pair to run a throughput test against the receiving agent's port.
//! Agents connect only where the coordinator points them, and a test moves data only once the
//! other end has accepted the run's token: an agent cannot be turned on a host that is not a
//! stormark agent of the run.

use std::net::{IpAddr, SocketAddr, TcpListener};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use stormark_engine::{run_stage, Load, StageEvent, WorkerSpec};
use stormark_net::{ClientOptions, Mode, ServerOptions, LIMITS};
use stormark_spec::{NetJob, NetMode};
use stormark_stats::{MeshHost, MeshPair, MeshReport, NetStream, Op, Snapshot};
use tonic::Status;

use crate::agent::AgentError;
use crate::local::NetSession;
use crate::remote::RemoteAgent;
use crate::wire::pb::{self, net_event};

/// Peers one agent opens ports for, at most.
const MAX_PEERS: usize = 256;

/// Silence on a test's event stream after which the sending agent is taken for gone: longer
/// than the test's own limits (5 s to connect, 10 s of a silent server).
const TEST_SILENCE: Duration = Duration::from_secs(20);

// --- On the agent ---

/// Opens one port per peer, each serving only that peer and `token`, until `stop`.
pub(crate) fn listen(
    peers: &[String],
    token: &str,
    stop: &Arc<AtomicBool>,
) -> Result<Vec<u32>, Status> {
    if peers.len() > MAX_PEERS {
        return Err(Status::invalid_argument(format!(
            "{} peers (at most {MAX_PEERS})",
            peers.len()
        )));
    }
    if token.len() < crate::MIN_TOKEN_LEN {
        return Err(Status::invalid_argument("a mesh token is too short"));
    }
    let mut ports = Vec::with_capacity(peers.len());
    for peer in peers {
        let ip: IpAddr = peer
            .parse()
            .map_err(|_| Status::invalid_argument(format!("peer {peer}: not an IP address")))?;
        let any: IpAddr = if ip.is_ipv4() {
            std::net::Ipv4Addr::UNSPECIFIED.into()
        } else {
            std::net::Ipv6Addr::UNSPECIFIED.into()
        };
        let listener = TcpListener::bind((any, 0))
            .map_err(|e| Status::unavailable(format!("opening a port for {peer}: {e}")))?;
        let port = listener
            .local_addr()
            .map_err(|e| Status::internal(e.to_string()))?
            .port();
        let opts = ServerOptions {
            once: false,
            stop: stop.clone(),
            token: Some(token.to_string()),
            allow: vec![ip.to_canonical()],
        };
        std::thread::Builder::new()
            .name("net-listen".into())
            .spawn(move || {
                let _ = stormark_net::serve(listener, &opts, &|line| {
                    if line.contains("refused") {
                        eprintln!("stormark agent: net port {port}: {line}");
                    }
                });
            })
            .map_err(|e| Status::internal(e.to_string()))?;
        ports.push(u32::from(port));
    }
    Ok(ports)
}

/// A test request as the client's options, checked against the protocol's limits.
pub(crate) fn test_options(
    req: &pb::NetTestRequest,
    stop: Arc<AtomicBool>,
) -> Result<ClientOptions, Status> {
    let (max_streams, max_msg, max_secs) = LIMITS;
    let bad = |what: String| Err(Status::invalid_argument(what));
    let Ok(server) = req.peer.parse::<SocketAddr>() else {
        return bad(format!("peer {}: expected IP:PORT", req.peer));
    };
    if !(1..=max_streams).contains(&req.streams)
        || !(1..=max_msg).contains(&req.msg_size)
        || req.time_ms == 0
        || req.time_ms > max_secs * 1000
    {
        return bad("streams, message size or time past the limits".into());
    }
    // Connect from the address this host was named by, when it is one of its own.
    let bind = req
        .bind
        .parse::<IpAddr>()
        .ok()
        .filter(|ip| std::net::UdpSocket::bind((*ip, 0)).is_ok());
    Ok(ClientOptions {
        server,
        mode: if req.mode == i32::from(pb::NetTestMode::NetTestRtt) {
            Mode::Rtt
        } else {
            Mode::Throughput
        },
        streams: req.streams,
        time: Duration::from_millis(req.time_ms),
        reverse: false,
        msg_size: req.msg_size,
        stop,
        udp: false,
        bitrate: 0,
        bidir: false,
        token: Some(req.token.clone()),
        rate: None,
        bind,
    })
}

/// This host's interface toward `server` (the one a packet to it leaves by), its MTU and
/// rated speed, when known.
fn interface_toward(
    server: SocketAddr,
    bind: Option<IpAddr>,
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
    let link = interface.as_ref().and_then(|name| {
        stormark_probe::Inventory::collect()
            .net_interfaces
            .into_iter()
            .find(|i| &i.name == name)
    });
    (
        interface,
        link.as_ref().and_then(|l| l.mtu),
        link.as_ref().and_then(|l| l.speed_mbps),
    )
}

/// Probes the path MTU to `opts.server`, up to this host's interface MTU toward it.
pub(crate) fn probe(opts: &ClientOptions) -> pb::NetResult {
    let (interface, mtu, link_mbps) = interface_toward(opts.server, opts.bind);
    let (path_mtu, failure) = match stormark_net::probe_mtu(opts, mtu.unwrap_or(1500)) {
        Ok(found) => (found, String::new()),
        Err(e) => (None, e.to_string()),
    };
    pb::NetResult {
        interface,
        mtu,
        link_mbps,
        path_mtu,
        failure,
        ..Default::default()
    }
}

/// Runs one test with the engine's net workers, as every net job runs: `second` hears of each
/// worker's second as it ends (the coordinator's proof that the test is alive).
pub(crate) fn test(opts: &ClientOptions, second: &mut dyn FnMut(u64)) -> pb::NetResult {
    let failed = |failure: String| pb::NetResult {
        failure,
        ..Default::default()
    };
    let net = NetJob {
        servers: vec![opts.server.to_string()],
        mode: if opts.mode == Mode::Rtt {
            NetMode::Rtt
        } else {
            NetMode::Send
        },
        msg_size: opts.msg_size,
        bitrate: 0,
        udp: false,
    };
    // The server's side outlasts the test: the workers end the session.
    let session_opts = ClientOptions {
        time: opts.time + Duration::from_secs(10),
        ..opts.clone()
    };
    let session = match NetSession::open("mesh", opts.server.to_string(), &net, &session_opts) {
        Ok(s) => s,
        Err(e) => return failed(e.to_string()),
    };
    let specs: Vec<WorkerSpec> = (0..session.workers())
        .map(|w| {
            let mut spec = WorkerSpec::new(Vec::new());
            spec.load = Load::Net(session.work(w));
            spec.stop.time = Some(opts.time);
            spec.seed = w as u64 + 1;
            spec
        })
        .collect();
    let mut seconds: Vec<u64> = Vec::new();
    let mut per_worker = vec![0u64; specs.len()];
    let mut all = Snapshot::new();
    let out = run_stage(specs, opts.stop.clone(), &mut |e| {
        if let StageEvent::Interval {
            worker,
            interval,
            snap,
        } = e
        {
            let t = interval as usize;
            if seconds.len() <= t {
                seconds.resize(t + 1, 0);
            }
            let bytes = snap.total().bytes;
            seconds[t] += bytes;
            per_worker[worker] += bytes;
            all += &snap;
            second(bytes);
        }
    });
    let (_, report, session_ns) = session.finish(&stormark_probe::Inventory::collect());
    // The rate is of the workers' own time, from their common start to the last byte
    // acknowledged, as a phase's is: the server's clock also counts the workers' setting up.
    let duration_ns = out.ended.saturating_duration_since(out.t0).as_nanos() as u64;
    let rtt = all.op(Op::Rtt);
    let (round_trips, rtt_p50_ns, rtt_p99_ns) = if rtt.ops > 0 {
        (
            rtt.ops,
            Some(rtt.hist.value_at_quantile(0.5)),
            Some(rtt.hist.value_at_quantile(0.99)),
        )
    } else {
        (0, None, None)
    };
    // Each end's CPU, back from its share of the session's time, as a share of the workers'.
    let ns = |pct: Option<f64>| pct.map(|p| (p / 100.0 * session_ns as f64) as u64);

    pb::NetResult {
        seconds,
        duration_ns,
        streams: report
            .streams
            .iter()
            .zip(&per_worker)
            .map(|(s, &bytes)| pb::NetStreamResult {
                // What the stream delivered in the workers' time: the receiver's
                // acknowledgements, credited second by second.
                bytes,
                retransmits: s.retransmits,
                srtt_us: s.srtt_us,
                cwnd: s.cwnd,
                pmtu: s.pmtu,
                mss: s.mss,
                sender_cpu_ns: ns(s.sender_cpu_pct),
                receiver_cpu_ns: ns(s.receiver_cpu_pct),
            })
            .collect(),
        interface: report.interface,
        mtu: report.mtu,
        link_mbps: report.link_mbps,
        failure: out
            .failures
            .first()
            .map(|(_, f)| f.clone())
            .unwrap_or_default(),
        interrupted: opts.stop.load(std::sync::atomic::Ordering::Relaxed),
        path_mtu: None,
        round_trips,
        rtt_p50_ns,
        rtt_p99_ns,
    }
}

// --- On the coordinator ---

/// What each test of a mesh runs.
#[derive(Debug, Clone, Copy)]
pub struct MeshOptions {
    /// TCP streams per pair.
    pub streams: u32,
    /// Each test's length.
    pub time: Duration,
    /// Bytes per write.
    pub msg_size: u32,
}

/// Where a mesh is, for a live display.
pub enum MeshEvent<'a> {
    /// The tests of one matrix are about to start (`true`: one pair at a time).
    Matrix(bool),
    /// A pair's test ended.
    Pair(bool, &'a MeshPair),
}

/// Measures every ordered pair of `agents` alone, then all at once (unless `stop`). `ips` is
/// each agent's address the tests go between. A failed test is a pair with its failure; an
/// agent that cannot open its ports ends the mesh before any test.
pub fn mesh(
    agents: &[RemoteAgent],
    ips: &[IpAddr],
    opts: MeshOptions,
    stop: &AtomicBool,
    on: &mut dyn FnMut(MeshEvent<'_>),
) -> Result<MeshReport, AgentError> {
    // 128 random bits, made the way session ids are.
    let token = crate::auth::session_id();
    let n = agents.len();
    // ports[j][i]: agent j's port for agent i.
    let mut ports = vec![vec![0u16; n]; n];
    for (j, agent) in agents.iter().enumerate() {
        let peers: Vec<usize> = (0..n).filter(|&i| i != j).collect();
        let reply = agent.net_listen(pb::NetListenRequest {
            session: String::new(),
            peers: peers.iter().map(|&i| ips[i].to_string()).collect(),
            token: token.clone(),
        })?;
        if reply.ports.len() != peers.len() {
            return Err(AgentError::RemoteFailed {
                agent: agent.address_str().into(),
                message: "answered with the wrong number of ports".into(),
            });
        }
        for (&i, &port) in peers.iter().zip(&reply.ports) {
            ports[j][i] = u16::try_from(port).unwrap_or(0);
        }
    }
    let pairs: Vec<(usize, usize)> = (0..n)
        .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
        .collect();
    let request = |i: usize, j: usize| pb::NetTestRequest {
        session: String::new(),
        peer: SocketAddr::new(ips[j], ports[j][i]).to_string(),
        token: token.clone(),
        streams: opts.streams,
        time_ms: opts.time.as_millis() as u64,
        msg_size: opts.msg_size,
        bind: ips[i].to_string(),
        mode: pb::NetTestMode::NetTestThroughput.into(),
    };
    let mut hosts: Vec<MeshHost> = agents
        .iter()
        .zip(ips)
        .map(|(a, ip)| MeshHost {
            agent: a.address_str().into(),
            ip: ip.to_string(),
            host: crate::Agent::host(a).into(),
            ..Default::default()
        })
        .collect();
    // Agents that stopped answering: their remaining pairs are not run (each would wait
    // out the silence again).
    let mut gone: Vec<usize> = Vec::new();
    let not_run = |gone: &[usize], i: usize, j: usize| {
        gone.iter().find(|&&g| g == i || g == j).map(|&g| {
            Err(AgentError::RemoteFailed {
                agent: agents[g].address_str().into(),
                message: format!(
                    "stopped answering; the test {} to {} was not run",
                    agents[i].address_str(),
                    agents[j].address_str()
                ),
            })
        })
    };
    let mut alone = Vec::new();
    on(MeshEvent::Matrix(true));
    for &(i, j) in &pairs {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        // The path MTU first: a second or two, before the pair's throughput.
        let path_mtu = match not_run(&gone, i, j) {
            Some(_) => None,
            None => agents[i]
                .net_test(pb::NetTestRequest {
                    mode: pb::NetTestMode::NetTestPmtu.into(),
                    ..request(i, j)
                })
                .ok()
                .and_then(|r| r.path_mtu),
        };
        let result = not_run(&gone, i, j).unwrap_or_else(|| {
            let r = agents[i].net_test(request(i, j));
            if r.is_err() {
                gone.push(i);
            }
            r
        });
        // Then a second of 64-byte round trips on one connection: the pair's latency alone.
        let rtt = match not_run(&gone, i, j) {
            Some(_) => None,
            None => agents[i]
                .net_test(pb::NetTestRequest {
                    mode: pb::NetTestMode::NetTestRtt.into(),
                    streams: 1,
                    msg_size: 64,
                    time_ms: 1000,
                    ..request(i, j)
                })
                .ok()
                .filter(|r| r.failure.is_empty()),
        };
        let mut pair = pair_of(i, j, &agents[j], result, &mut hosts[i]);
        pair.path_mtu = path_mtu;
        pair.rtt_p50_ns = rtt.as_ref().and_then(|r| r.rtt_p50_ns);
        pair.rtt_p99_ns = rtt.as_ref().and_then(|r| r.rtt_p99_ns);
        on(MeshEvent::Pair(true, &pair));
        alone.push(pair);
    }
    let mut loaded = Vec::new();
    if !stop.load(std::sync::atomic::Ordering::Relaxed) {
        on(MeshEvent::Matrix(false));
        let results: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = pairs
                .iter()
                .map(|&(i, j)| {
                    let req = request(i, j);
                    let agent = &agents[i];
                    let skip = not_run(&gone, i, j);
                    scope.spawn(move || skip.unwrap_or_else(|| agent.net_test(req)))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(AgentError::Runtime("a test thread panicked".into()))
                    })
                })
                .collect()
        });
        for (&(i, j), result) in pairs.iter().zip(results) {
            let pair = pair_of(i, j, &agents[j], result, &mut hosts[i]);
            on(MeshEvent::Pair(false, &pair));
            loaded.push(pair);
        }
    }
    Ok(MeshReport {
        hosts,
        streams: opts.streams,
        time_ms: opts.time.as_millis() as u64,
        alone,
        loaded,
    })
}

/// A test's result as a pair of the report; the sender's interface goes to its host.
fn pair_of(
    i: usize,
    j: usize,
    receiver: &RemoteAgent,
    result: Result<pb::NetResult, AgentError>,
    sender: &mut MeshHost,
) -> MeshPair {
    let mut pair = MeshPair {
        from: i as u32,
        to: j as u32,
        ..Default::default()
    };
    let r = match result {
        Ok(r) => r,
        Err(e) => {
            pair.failure = Some(e.to_string());
            return pair;
        }
    };
    if !r.failure.is_empty() {
        pair.failure = Some(format!(
            "{} to {} ({}): {}",
            sender.agent,
            receiver.address_str(),
            crate::Agent::host(receiver),
            r.failure
        ));
    }
    if sender.interface.is_none() {
        sender.interface = r.interface.clone();
        sender.mtu = r.mtu;
        sender.link_mbps = r.link_mbps;
    }
    pair.bytes = r.streams.iter().map(|s| s.bytes).sum();
    pair.duration_ns = r.duration_ns;
    pair.bits_per_s = if r.duration_ns == 0 {
        0.0
    } else {
        pair.bytes as f64 * 8e9 / r.duration_ns as f64
    };
    pair.seconds = r.seconds;
    pair.streams = r
        .streams
        .iter()
        .map(|s| NetStream {
            bytes: s.bytes,
            retransmits: s.retransmits,
            srtt_us: s.srtt_us,
            cwnd: s.cwnd,
            pmtu: s.pmtu,
            mss: s.mss,
            sender_cpu_pct: stormark_stats::cpu_pct(s.sender_cpu_ns, r.duration_ns),
            receiver_cpu_pct: stormark_stats::cpu_pct(s.receiver_cpu_ns, r.duration_ns),
            ..Default::default()
        })
        .collect();
    pair
}

impl RemoteAgent {
    /// Opens the agent's ports for its peers (`NetListen`).
    fn net_listen(&self, mut req: pb::NetListenRequest) -> Result<pb::NetListenReply, AgentError> {
        let (rt, mut client, session) = self.rpc();
        req.session = session;
        rt.block_on(client.net_listen(req))
            .map(tonic::Response::into_inner)
            .map_err(|s| crate::remote::agent_error(self.address_str(), s))
    }

    /// Runs one test from this agent (`NetTest`), to its result; an agent silent for
    /// [`TEST_SILENCE`] is taken for gone. The coordinator's stop (Ctrl-C) is passed on.
    fn net_test(&self, mut req: pb::NetTestRequest) -> Result<pb::NetResult, AgentError> {
        let (rt, mut client, session) = self.rpc();
        req.session = session.clone();
        let failed = |message: String| AgentError::RemoteFailed {
            agent: self.address_str().into(),
            message,
        };
        let stop = self.stop_flag();
        rt.block_on(async {
            let mut stream = client
                .net_test(req)
                .await
                .map_err(|s| crate::remote::agent_error(self.address_str(), s))?
                .into_inner();
            let mut silent = Duration::ZERO;
            let mut stop_sent = false;
            loop {
                if !stop_sent && stop.load(std::sync::atomic::Ordering::Relaxed) {
                    stop_sent = true;
                    let mut c = client.clone();
                    let s = pb::SessionRequest {
                        session: session.clone(),
                    };
                    tokio::spawn(async move {
                        let _ = tokio::time::timeout(crate::SILENCE, c.stop(s)).await;
                    });
                }
                let tick = Duration::from_millis(250);
                let Ok(event) = tokio::time::timeout(tick, stream.message()).await else {
                    silent += tick;
                    if silent >= TEST_SILENCE {
                        return Err(failed(format!(
                            "no word for {} s during a network test: hung, or the network is cut",
                            TEST_SILENCE.as_secs()
                        )));
                    }
                    continue;
                };
                silent = Duration::ZERO;
                let event = event.map_err(|s| crate::remote::agent_error(self.address_str(), s))?;
                match event.and_then(|e| e.kind) {
                    Some(net_event::Kind::Result(r)) => return Ok(r),
                    Some(net_event::Kind::Second(_)) => {}
                    None => return Err(failed("the test ended without a result".into())),
                }
            }
        })
    }
}
