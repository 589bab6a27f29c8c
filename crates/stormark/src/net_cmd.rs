//! `stormark net`: the network between two hosts, as iperf3 (throughput) and sockperf
//! (ping-pong latency) measure it, into the same results document as storage runs.

use std::net::SocketAddr;

use anyhow::{Context, Result};
use stormark_net::{ClientOptions, Mode, NetError, ServerOptions, DEFAULT_PORT};
use stormark_report::Json;
use stormark_spec::parse_size;
use stormark_stats::{NetReport, Results, RunStatus};

use crate::cli::{NetArgs, NetClientArgs, NetSide, OutputArgs, RunArgs, WorkloadFlags};
use crate::cli_net::{parse_counts, parse_msg_size, parse_streams, parse_time, resolve, token};
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

fn server(listen: SocketAddr, once: bool, token_file: Option<&std::path::Path>) -> Result<Ending> {
    let token = token(token_file)?;
    let listener = std::net::TcpListener::bind(listen).map_err(|e| {
        usage(format!(
            "--listen {listen}: cannot listen there ({e}); give a free ADDR:PORT of this host, such as 0.0.0.0:{DEFAULT_PORT}"
        ))
    })?;
    let stop = crate::ctrl_c()?;
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

/// The job keys of `stormark net client`, checked before anything connects: a `kind = "net"`
/// job handed to the same road as `stormark run` and `stormark s3`.
fn job_keys(args: &NetClientArgs, server: SocketAddr) -> Result<Vec<(&'static str, String)>> {
    let rtt = match args.mode.as_str() {
        "throughput" | "bw" => false,
        "rtt" | "latency" | "pingpong" => true,
        other => {
            return Err(usage(format!(
                "--mode {other}: expected throughput, rtt or pmtu"
            )))
        }
    };
    let streams = parse_streams(&args.streams)?;
    parse_time(&args.time)?;
    // Combinations that cannot be, each said with what to do instead.
    let refused = [
        (args.udp && rtt, "--udp measures throughput; round trips (--mode rtt) run over TCP"),
        (args.bidir && (args.udp || rtt), "--bidir is for TCP throughput (not --udp, not --mode rtt)"),
        (args.bidir && args.streams_sweep.is_some(), "--streams-sweep runs one way: leave out --bidir (or run each count with --streams N --bidir)"),
        (args.udp && args.reverse, "--udp sends from this host only; run the client on the other host for the other direction"),
        (args.bitrate.is_some() && rtt, "--bitrate paces throughput; round trips are paced by --rate-ops"),
        (args.reverse && rtt, "--reverse is for throughput; a round trip goes both ways already"),
    ];
    if let Some((_, why)) = refused.iter().find(|(bad, _)| *bad) {
        return Err(usage(*why));
    }
    let mut keys = vec![
        ("kind", "net".to_string()),
        ("server", server.to_string()),
        (
            "mode",
            match (rtt, args.reverse, args.bidir) {
                (true, ..) => "rtt",
                (_, true, _) => "receive",
                (_, _, true) => "bidir",
                _ => "send",
            }
            .to_string(),
        ),
        // Both ways at once: as many connections each way.
        (
            "jobs",
            (streams * if args.bidir { 2 } else { 1 }).to_string(),
        ),
        ("time", args.time.clone()),
        ("name", "net".to_string()),
    ];
    if let Some(text) = &args.bitrate {
        let bits = stormark_spec::parse_bitrate(text).ok_or_else(|| {
            usage(format!(
                "--bitrate {text}: expected bits per second from 1k to 400g, such as 100m or 1g"
            ))
        })?;
        keys.push(("bitrate", bits.to_string()));
    }
    let msg_size = match &args.msg_size {
        None if rtt => 64,
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
    keys.push(("msg_size", msg_size.to_string()));
    if args.udp {
        keys.push(("protocol", "udp".into()));
    }
    match &args.rate_ops {
        None => {}
        Some(_) if !rtt => {
            return Err(usage(
                "--rate-ops paces round trips: give it with --mode rtt",
            ))
        }
        Some(text) => {
            let rate = text
                .parse::<f64>()
                .ok()
                .filter(|r| r.is_finite() && (1.0..=10_000_000.0).contains(r) && *r >= f64::from(streams))
                .ok_or_else(|| usage(format!("--rate-ops {text}: expected round trips per second from the stream count ({streams}) to 10000000")))?;
            keys.push(("rate_iops", (rate.round() as u64).to_string()));
        }
    }
    Ok(keys)
}

/// `stormark net client`: a net job through the coordinator, as `stormark run` runs any
/// other (live figures, `--json`, `--html`, `--metrics-listen`, findings), or a path MTU
/// probe.
fn client(args: &NetClientArgs) -> Result<Ending> {
    let server = resolve(&args.server)?;
    if args.mode == "pmtu" {
        return path_mtu(args, server);
    }
    let keys = job_keys(args, server)?;
    let mut shape = args.shape.clone();
    if let Some(list) = &args.streams_sweep {
        shape.sweep = vec![format!("streams={}", parse_counts(list)?.join(","))];
    }
    crate::run::main(RunArgs {
        workload: WorkloadFlags::from_pairs(keys),
        shape,
        output: OutputArgs {
            json: args.json.clone(),
            html: args.html.clone(),
            metrics_listen: args.metrics_listen,
            quiet: args.quiet,
            progress: None,
        },
        net_token: token(args.token_file.as_deref())?,
        ..RunArgs::default()
    })
}

/// `--mode pmtu`: the largest packet the path to the server carries, probed with DF set up to
/// this host's interface MTU toward it.
fn path_mtu(args: &NetClientArgs, server: SocketAddr) -> Result<Ending> {
    let json = crate::output("--json", args.json.as_deref(), &[], true)?;
    let opts = ClientOptions {
        server,
        mode: Mode::Pmtu,
        streams: 1,
        time: parse_time(&args.time)?,
        reverse: false,
        msg_size: 1400,
        stop: crate::ctrl_c()?,
        udp: true,
        bitrate: 0,
        bidir: false,
        token: token(args.token_file.as_deref())?,
        rate: None,
        bind: None,
    };
    // The interface toward the server, and its MTU: the most to probe.
    let any = if server.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    };
    let local = std::net::UdpSocket::bind(any)
        .and_then(|s| s.connect(server).and_then(|()| s.local_addr()))
        .ok();
    let interface = local.and_then(|a| stormark_net::interface_of(a.ip()));
    let mtu = interface.as_ref().and_then(|name| {
        stormark_probe::collect_inventory()
            .net_interfaces
            .into_iter()
            .find(|i| &i.name == name)
            .and_then(|i| i.mtu)
    });
    let found = stormark_net::probe_mtu(&opts, mtu.unwrap_or(1500)).map_err(|e| match e {
        NetError::Unreachable { .. } | NetError::Refused(_) => usage(e.to_string()),
        e => e.into(),
    })?;
    let mut results = Results::new(crate::command_line());
    results.status = RunStatus::Ok;
    let net = results.net.insert(NetReport {
        interface,
        mtu,
        server: server.to_string(),
        protocol: "udp".into(),
        mode: "pmtu".into(),
        path_mtu: found,
        ..Default::default()
    });
    outln!("{}", stormark_report::path_mtu_line(net));
    if let Some(out) = json {
        out.write_with(|w| Json.write_to(&results, w))
            .with_context(|| "writing the results document")?;
    }
    Ok(if found.is_some() {
        Ending::Success
    } else {
        Ending::Failed
    })
}
