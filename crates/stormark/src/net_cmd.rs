//! `stormark net`: the network between two hosts, as iperf3 (throughput) and sockperf
//! (ping-pong latency) measure it, into the same results document as storage runs.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};
use stormark_net::{ClientOptions, Mode, NetError, Outcome, ServerOptions, DEFAULT_PORT, LIMITS};
use stormark_report::{Json, Output, Render};
use stormark_spec::{parse_duration, parse_size};
use stormark_stats::{
    NetReport, NetStream, PhaseAccumulator, PhaseJob, PhaseKind, Results, RunStatus, WorkerKey,
};

use crate::cli::{NetArgs, NetClientArgs, NetSide};
use crate::net_show::{second_line, summary, sweep_table};
use crate::{usage, Ending};

pub fn main(args: NetArgs) -> Result<Ending> {
    match args.side {
        Some(NetSide::Server {
            listen,
            once,
            token_file,
        }) => server(listen, once, token_file.as_deref()),
        Some(NetSide::Client(c)) => client(&c),
        Some(NetSide::Mesh(m)) => crate::net_mesh::main(&m),
        None if args.mesh.agents.is_some() || args.mesh.agents_file.is_some() => {
            crate::net_mesh::main(&args.mesh)
        }
        None => Err(usage(
            "stormark net: expected server, client HOST, or --agents LIST --mode mesh (see stormark net --help)",
        )),
    }
}

pub(crate) fn ctrl_c() -> Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    ctrlc::set_handler(move || s.store(true, Ordering::Relaxed))
        .context("cannot install the Ctrl-C handler")?;
    Ok(stop)
}

fn token(file: Option<&std::path::Path>) -> Result<Option<String>> {
    file.map(|f| stormark_cluster::read_token(f).map_err(|e| usage(e.to_string())))
        .transpose()
}

fn server(listen: SocketAddr, once: bool, token_file: Option<&std::path::Path>) -> Result<Ending> {
    let token = token(token_file)?;
    let listener = std::net::TcpListener::bind(listen).map_err(|e| {
        usage(format!(
            "--listen {listen}: cannot listen there ({e}); give a free ADDR:PORT of this host, such as 0.0.0.0:{DEFAULT_PORT}"
        ))
    })?;
    let stop = ctrl_c()?;
    eprintln!(
        "stormark net server listening on {} (one test at a time; Ctrl-C stops)",
        listener.local_addr().map_or(listen, |a| a)
    );
    let opts = ServerOptions {
        once,
        stop,
        token,
        allow: Vec::new(),
    };
    stormark_net::serve(listener, &opts, &|line| eprintln!("{line}"))?;
    Ok(Ending::Success)
}

/// `--streams`: 1 to the protocol's limit.
pub(crate) fn parse_streams(text: &str) -> Result<u32> {
    let (max, _, _) = LIMITS;
    text.parse::<u32>()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| {
            usage(format!(
                "--streams {text}: expected a whole number from 1 to {max}"
            ))
        })
}

/// `--time`: 1 ms to the protocol's limit.
pub(crate) fn parse_time(text: &str) -> Result<std::time::Duration> {
    let (_, _, max_secs) = LIMITS;
    parse_duration(text)
        .filter(|t| !t.is_zero() && t.as_secs() <= max_secs)
        .ok_or_else(|| {
            usage(format!(
                "--time {text}: expected a duration from 1ms to 24h, such as 10s or 2m"
            ))
        })
}

/// `--msg-size` of TCP: 1 byte to the protocol's limit.
pub(crate) fn parse_msg_size(text: &str) -> Result<u32> {
    let (_, max, _) = LIMITS;
    parse_size(text)
        .filter(|s| (1..=u64::from(max)).contains(s))
        .map(|s| s as u32)
        .ok_or_else(|| {
            usage(format!(
                "--msg-size {text}: expected a size from 1 byte to 16m, such as 64 or 128k"
            ))
        })
}

/// The options, checked before anything connects.
fn options(args: &NetClientArgs) -> Result<ClientOptions> {
    let mode = match args.mode.as_str() {
        "throughput" | "bw" => Mode::Throughput,
        "rtt" | "latency" | "pingpong" => Mode::Rtt,
        "pmtu" => Mode::Pmtu,
        other => {
            return Err(usage(format!(
                "--mode {other}: expected throughput, rtt or pmtu"
            )))
        }
    };
    let streams = parse_streams(&args.streams)?;
    let time = parse_time(&args.time)?;
    if args.udp && mode == Mode::Rtt {
        return Err(usage(
            "--udp measures throughput; round trips (--mode rtt) run over TCP",
        ));
    }
    if args.bidir && (args.udp || mode == Mode::Rtt) {
        return Err(usage(
            "--bidir is for TCP throughput (not --udp, not --mode rtt)",
        ));
    }
    if args.udp && args.reverse {
        return Err(usage("--udp sends from this host only; run the client on the other host for the other direction"));
    }
    if args.bitrate.is_some() && mode == Mode::Rtt {
        return Err(usage(
            "--bitrate paces throughput; round trips are paced by --rate-ops",
        ));
    }
    let bitrate = match &args.bitrate {
        None if args.udp => 1_000_000,
        None => 0,
        Some(text) => parse_bitrate(text).ok_or_else(|| {
            usage(format!(
                "--bitrate {text}: expected bits per second from 1k to 400g, such as 100m or 1g"
            ))
        })?,
    };
    let msg_size = match &args.msg_size {
        None if mode == Mode::Rtt => 64,
        None if args.udp => 1400,
        Some(text) if args.udp => parse_size(text)
            .filter(|s| (32..=65_000).contains(s))
            .ok_or_else(|| {
                usage(format!(
                    "--msg-size {text}: a datagram from 32 to 65000 bytes, such as 1400"
                ))
            })? as u32,
        // Large writes: fewer system calls per byte (on loopback 1 MiB moves ~1.5x what
        // 128 KiB does; docs/performance.md).
        None => 1 << 20,
        Some(text) => parse_msg_size(text)?,
    };
    if args.reverse && mode == Mode::Rtt {
        return Err(usage(
            "--reverse is for throughput; a round trip goes both ways already",
        ));
    }
    let rate = match &args.rate_ops {
        None => None,
        Some(_) if mode != Mode::Rtt => {
            return Err(usage("--rate-ops paces round trips: give it with --mode rtt"))
        }
        Some(text) => Some(
            text.parse::<f64>()
                .ok()
                .filter(|r| r.is_finite() && (1.0..=10_000_000.0).contains(r) && *r >= f64::from(streams))
                .ok_or_else(|| usage(format!("--rate-ops {text}: expected round trips per second from the stream count ({streams}) to 10000000")))?,
        ),
    };
    let server = resolve(&args.server)?;
    Ok(ClientOptions {
        server,
        mode,
        streams,
        time,
        reverse: args.reverse,
        msg_size,
        stop: Arc::new(AtomicBool::new(false)),
        udp: args.udp,
        bitrate,
        rate,
        bidir: args.bidir,
        token: token(args.token_file.as_deref())?,
        bind: None,
    })
}

/// Bits per second: a number with k, m or g (1000-based, as iperf3 and link speeds).
fn parse_bitrate(text: &str) -> Option<u64> {
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

/// `HOST`, `HOST:PORT`, `[V6]:PORT` or a bare IPv6 address.
fn resolve(text: &str) -> Result<SocketAddr> {
    let bad = |why: String| {
        usage(format!(
            "{text}: {why}; expected HOST or HOST:PORT, such as 10.0.0.2 or server1:{DEFAULT_PORT}"
        ))
    };
    let with_port = if let Ok(ip) = text.parse::<std::net::IpAddr>() {
        SocketAddr::new(ip, DEFAULT_PORT).to_string()
    } else if text
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        text.to_string()
    } else {
        format!("{text}:{DEFAULT_PORT}")
    };
    with_port
        .to_socket_addrs()
        .map_err(|e| bad(format!("cannot resolve it ({e})")))?
        .next()
        .ok_or_else(|| bad("the name resolves to no address".into()))
}

fn client(args: &NetClientArgs) -> Result<Ending> {
    let mut opts = options(args)?;
    let json = crate::output("--json", args.json.as_deref(), &[], true)?;
    let html = crate::output("--html", args.html.as_deref(), &[], false)?;
    if opts.mode == Mode::Pmtu {
        return path_mtu(&opts, json.as_ref());
    }
    opts.stop = ctrl_c()?;
    let metrics = args
        .metrics_listen
        .map(|a| stormark_report::LiveMetrics::serve(a).map_err(crate::usage))
        .transpose()?;
    // With `--json -` the document alone goes to standard output; what people read, to
    // standard error.
    let to_stdout = matches!(json, Some(Output::Stdout));
    let say = |text: &str| {
        if to_stdout {
            eprintln!("{text}");
        } else {
            outln!("{text}");
        }
    };
    let mut results = Results::new(crate::command_line());
    let started = std::time::Instant::now();
    let quiet = args.quiet;
    let what = match (opts.mode, opts.reverse) {
        _ if opts.udp => format!(
            "UDP to {} at {:.3} Gbit/s, {}-byte datagrams",
            opts.server,
            opts.bitrate as f64 / 1e9,
            opts.msg_size
        ),
        (Mode::Rtt, _) => format!("round trips of {} bytes", opts.msg_size),
        (Mode::Throughput, false) if opts.bidir => {
            format!("throughput to and from {}", opts.server)
        }
        (Mode::Throughput, false) if opts.bitrate > 0 => format!(
            "throughput to {}, paced at {:.3} Gbit/s",
            opts.server,
            opts.bitrate as f64 / 1e9
        ),
        (Mode::Throughput, false) => format!("throughput to {}", opts.server),
        (Mode::Throughput, true) => format!("throughput from {}", opts.server),
        (Mode::Pmtu, _) => format!("the path MTU to {}", opts.server),
    };
    if !quiet {
        eprintln!(
            "{what}, {} stream{}, {}",
            opts.streams,
            if opts.streams == 1 { "" } else { "s" },
            args.time
        );
    }
    // One test, or one per stream count of --streams-sweep.
    let counts = match &args.streams_sweep {
        None => vec![opts.streams],
        Some(list) => parse_counts(list)?,
    };
    let sweeping = args.streams_sweep.is_some();
    let mut points = Vec::new();
    let mut last: Option<Outcome> = None;
    for (i, &n) in counts.iter().enumerate() {
        opts.streams = n;
        if sweeping && !quiet {
            eprintln!("{n} stream{}:", if n == 1 { "" } else { "s" });
        }
        if let Some(m) = &metrics {
            m.phase(&if sweeping {
                format!("sweep:streams={n}")
            } else {
                "run".to_string()
            });
        }
        let outcome = stormark_net::run(&opts, &mut |t, snaps| {
            if let Some(m) = &metrics {
                m.snapshots(t, snaps);
            }
            if !quiet {
                eprintln!("{}", second_line(t, snaps));
            }
        });
        let outcome = match outcome {
            Ok(o) => o,
            // Nothing ran: the address or the server is wrong, said in one line.
            Err(e @ (NetError::Unreachable { .. } | NetError::Refused(_))) if i == 0 => {
                return Err(usage(e.to_string()))
            }
            Err(e) => {
                results.status = RunStatus::Failed;
                results.failure = Some(e.to_string());
                results.duration_ns = started.elapsed().as_nanos() as u64;
                if let Some(out) = &json {
                    let _ = out.write(Json.render(&results).as_bytes());
                }
                if let Some(out) = &html {
                    let _ = out.write(stormark_report::Html.render(&results).as_bytes());
                }
                return Err(e.into());
            }
        };
        let mut p = phase(&opts, &outcome);
        if sweeping {
            p.name = format!("sweep:streams={n}");
            p.kind = Some(PhaseKind::SweepPoint);
            points.push(stormark_stats::SweepPoint::of(
                &p,
                std::collections::BTreeMap::from([("streams".to_string(), u64::from(n))]),
            ));
            say(&summary(&opts, &outcome));
        }
        results.phases.push(p);
        let stop = outcome.interrupted;
        last = Some(outcome);
        if stop {
            break;
        }
    }
    let outcome = last.expect("at least one stream count");
    results.duration_ns = started.elapsed().as_nanos() as u64;
    results.net = Some(report(&opts, &outcome));
    if sweeping {
        say(&sweep_table(&points));
        results.sweep = Some(stormark_stats::SweepReport {
            keys: vec!["streams".into()],
            points,
            skipped: Vec::new(),
        });
    }
    results.spec = serde_json::json!({
        "kind": "net",
        "server": opts.server.to_string(),
        "mode": if opts.mode == Mode::Rtt { "rtt" } else { "throughput" },
        "streams": if sweeping { serde_json::json!(counts) } else { serde_json::json!(opts.streams) },
        "time": args.time,
        "reverse": opts.reverse,
        "bidir": opts.bidir,
        "msg_size": opts.msg_size,
        "protocol": if opts.udp { "udp" } else { "tcp" },
        "bitrate": (opts.bitrate > 0).then_some(opts.bitrate),
        "rate_ops": opts.rate,
    });
    results.status = if outcome.interrupted {
        RunStatus::Interrupted
    } else {
        RunStatus::Ok
    };
    // The host's counters say nothing of a network test yet; its findings are its own (a
    // network test is not too short at 10 s, as a storage run would be).
    results.findings = stormark_probe::diagnose(&results)
        .into_iter()
        .filter(|f| f.code.starts_with("net-"))
        .collect();
    if !sweeping {
        say(&summary(&opts, &outcome));
    }
    if !results.findings.is_empty() {
        say(stormark_report::findings_text(&results.findings).trim_end());
    }
    if let Some(out) = &json {
        out.write(Json.render(&results).as_bytes())
            .with_context(|| "writing the results document")?;
    }
    if let Some(out) = &html {
        out.write(stormark_report::Html.render(&results).as_bytes())
            .with_context(|| "writing the HTML report")?;
    }
    Ok(if outcome.interrupted {
        Ending::Failed
    } else {
        Ending::Success
    })
}

/// `--mode pmtu`: the largest packet the path to the server carries, probed with DF set up to
/// this host's interface MTU toward it.
fn path_mtu(opts: &ClientOptions, json: Option<&Output>) -> Result<Ending> {
    let local = std::net::UdpSocket::bind(if opts.server.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    })
    .and_then(|s| s.connect(opts.server).and_then(|()| s.local_addr()))
    .ok();
    let interface = local.and_then(|a| stormark_net::interface_of(a.ip()));
    let mtu = interface.as_ref().and_then(|name| {
        stormark_probe::Inventory::collect()
            .net_interfaces
            .into_iter()
            .find(|i| &i.name == name)
            .and_then(|i| i.mtu)
    });
    let found = stormark_net::probe_mtu(opts, mtu.unwrap_or(1500)).map_err(|e| match e {
        NetError::Unreachable { .. } | NetError::Refused(_) => usage(e.to_string()),
        e => e.into(),
    })?;
    let name = interface.as_deref().unwrap_or("?");
    let line = match (found, mtu) {
        (None, _) => format!(
            "path MTU to {}: not even 576-byte UDP datagrams came back (UDP blocked on the way?)",
            opts.server
        ),
        (Some(p), Some(m)) if p < m => format!(
            "path MTU to {}: {p} bytes, less than {name}'s MTU of {m}: larger packets are dropped on the way (probed with DF set)",
            opts.server
        ),
        (Some(p), m) => format!(
            "path MTU to {}: {p} bytes ({name}'s MTU {}; probed with DF set)",
            opts.server,
            m.map_or("unknown".to_string(), |m| m.to_string())
        ),
    };
    outln!("{line}");
    if let Some(out) = json {
        let mut results = Results::new(crate::command_line());
        results.status = RunStatus::Ok;
        results.net = Some(NetReport {
            interface,
            mtu,
            server: opts.server.to_string(),
            protocol: "udp".into(),
            mode: "pmtu".into(),
            path_mtu: found,
            ..Default::default()
        });
        out.write(Json.render(&results).as_bytes())
            .with_context(|| "writing the results document")?;
    }
    Ok(if found.is_some() {
        Ending::Success
    } else {
        Ending::Failed
    })
}

/// `1,2,4,8`: stream counts, each once, at most 16 of them.
fn parse_counts(text: &str) -> Result<Vec<u32>> {
    let (max, _, _) = LIMITS;
    let bad = || {
        usage(format!(
            "--streams-sweep {text}: expected up to 16 different stream counts from 1 to {max}, such as 1,2,4,8"
        ))
    };
    let mut counts = Vec::new();
    for v in text.split(',') {
        let n = v
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=max).contains(n))
            .ok_or_else(bad)?;
        if counts.contains(&n) {
            return Err(bad());
        }
        counts.push(n);
    }
    if counts.is_empty() || counts.len() > 16 {
        return Err(bad());
    }
    Ok(counts)
}

/// Each stream as its ends saw it.
fn report(opts: &ClientOptions, o: &Outcome) -> NetReport {
    let streams = o
        .bytes
        .iter()
        .enumerate()
        .map(|(i, &bytes)| {
            let tcp = o.tcp.get(i).copied().flatten();
            let udp = o.udp.get(i);
            NetStream {
                bytes,
                retransmits: tcp.map(|t| t.retransmits),
                srtt_us: tcp.map(|t| t.rtt_us),
                cwnd: tcp.map(|t| t.snd_cwnd),
                pmtu: tcp.map(|t| t.pmtu),
                mss: tcp.map(|t| t.snd_mss),
                datagrams_sent: udp.map(|u| u.0),
                datagrams_received: udp.map(|u| u.1.datagrams),
                out_of_order: udp.map(|u| u.1.out_of_order),
                jitter_ns: udp.map(|u| u.1.jitter_ns),
                sender_cpu_pct: stormark_stats::cpu_pct(
                    o.sender_cpu_ns.get(i).copied(),
                    o.duration_ns,
                ),
                receiver_cpu_pct: stormark_stats::cpu_pct(
                    o.receiver_cpu_ns.get(i).copied(),
                    o.duration_ns,
                ),
            }
        })
        .collect();
    // The interface the test left by, with its rated speed and MTU.
    let interface = o.local.and_then(|a| stormark_net::interface_of(a.ip()));
    let link = interface.as_ref().and_then(|name| {
        stormark_probe::Inventory::collect()
            .net_interfaces
            .into_iter()
            .find(|i| &i.name == name)
    });
    NetReport {
        interface,
        link_mbps: link.as_ref().and_then(|l| l.speed_mbps),
        mtu: link.as_ref().and_then(|l| l.mtu),
        path_mtu: None,
        server: opts.server.to_string(),
        protocol: if opts.udp { "udp" } else { "tcp" }.into(),
        mode: if opts.mode == Mode::Rtt {
            "rtt"
        } else {
            "throughput"
        }
        .into(),
        reverse: opts.reverse,
        bidir: opts.bidir,
        streams,
    }
}

/// The results' phase: one worker per stream, the receiver's seconds.
fn phase(opts: &ClientOptions, o: &Outcome) -> stormark_stats::Phase {
    // One worker per connection: both ways with --bidir.
    let connections = o.bytes.len() as u32;
    let keys: Vec<WorkerKey> = (0..connections)
        .map(|w| WorkerKey {
            host: 0,
            job: 0,
            worker: w,
        })
        .collect();
    let job = PhaseJob {
        name: format!("net-{}", o.op.name()),
        engine: if opts.udp { "udp" } else { "tcp" }.into(),
        direct: false,
        workers: connections,
        iodepth: 1,
        working_set_bytes: 0,
        rate_iops: None,
    };
    let mut acc = PhaseAccumulator::new("run", vec![opts.server.to_string()], vec![job], &keys);
    for (t, snaps) in o.seconds.iter().enumerate() {
        for (k, s) in keys.iter().zip(snaps) {
            acc.add(*k, t as u32, s);
        }
    }
    for k in &keys {
        acc.worker_done(*k, o.duration_ns);
    }
    let mut p = acc.finish(0, o.duration_ns);
    p.kind = Some(PhaseKind::Run);
    p
}
