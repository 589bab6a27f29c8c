//! `stormark net --agents LIST --mode mesh`: the network between every pair of the agents'
//! hosts, as vendor guides ask for before a storage cluster is accepted: each ordered pair
//! alone (the connectivity matrix), then all pairs at once (the network under load).

use std::net::{IpAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::Ordering;

use anyhow::{Context, Result};
use stormark_cluster::{Agent, Fleet, MeshEvent, MeshOptions, TargetOptions};
use stormark_plan::{hosts, HostsOptions};
use stormark_report::{format_latency, Json, Output, Render};
use stormark_stats::{MeshPair, MeshReport, Results, RunStatus};

use crate::cli::NetMeshArgs;
use crate::{usage, Ending};

/// The largest agents file read.
const AGENTS_FILE_LIMIT: u64 = 1 << 20;

/// The tests' options, checked before anything connects.
fn options(args: &NetMeshArgs) -> Result<MeshOptions> {
    if args.mode != "mesh" {
        return Err(usage(format!(
            "--mode {}: over agents the mode is mesh (pair tests run with stormark net client)",
            args.mode
        )));
    }
    let streams = crate::cli_net::parse_streams(&args.streams)?;
    let time = crate::cli_net::parse_time(&args.time)?;
    let msg_size = match &args.msg_size {
        None => 1 << 20,
        Some(text) => crate::cli_net::parse_msg_size(text)?,
    };
    Ok(MeshOptions {
        streams,
        time,
        msg_size,
    })
}

/// The agents, their token and CA, and the address each one's tests go between.
fn fleet(args: &NetMeshArgs) -> Result<(Fleet, Vec<IpAddr>)> {
    let agents_file = match &args.agents_file {
        Some(path) => Some((
            path.display().to_string(),
            crate::read_limited(path, AGENTS_FILE_LIMIT, "an agents file").map_err(|e| {
                usage(format!(
                    "--agents-file {}: cannot read it: {e}",
                    path.display()
                ))
            })?,
        )),
        None => None,
    };
    let list = hosts(&HostsOptions {
        agents: args.agents.clone(),
        agents_file,
        // A mesh has no target: nothing on the agents' disks is touched.
        default_target: Some(PathBuf::new()),
        ..Default::default()
    })
    .map_err(usage)?
    .ok_or_else(|| usage("--mode mesh needs --agents LIST or --agents-file FILE"))?;
    if list.len() < 2 {
        return Err(usage(
            "--agents: a mesh needs at least two agents, such as node1:7878,node2:7878",
        ));
    }
    let mut ips: Vec<IpAddr> = Vec::new();
    for h in &list {
        let ip = h
            .address
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .map(|a| a.ip().to_canonical())
            .ok_or_else(|| {
                usage(format!(
                    "--agents {}: cannot resolve the host; expected host:port, such as node1:7878",
                    h.address
                ))
            })?;
        if ips.contains(&ip) {
            return Err(usage(format!(
                "--agents: {} is {ip}, as another agent is; a mesh tests between different hosts",
                h.address
            )));
        }
        ips.push(ip);
    }
    let token_file = args.token_file.as_ref().ok_or_else(|| {
        usage("--agents needs --token-file FILE holding the agents' shared token")
    })?;
    let token = stormark_cluster::read_token(token_file).map_err(|e| usage(e.to_string()))?;
    let tls_ca = match &args.tls_ca {
        Some(p) => Some(
            std::fs::read(p)
                .map_err(|e| usage(format!("--tls-ca {}: cannot read it: {e}", p.display())))?,
        ),
        None => None,
    };
    Ok((
        Fleet {
            token,
            tls_ca,
            hosts: list,
        },
        ips,
    ))
}

pub fn main(args: &NetMeshArgs) -> Result<Ending> {
    let opts = options(args)?;
    let (fleet, ips) = fleet(args)?;
    let json = crate::output("--json", args.json.as_deref(), &[], true)?;
    let html = crate::output("--html", args.html.as_deref(), &[], false)?;
    let to_stdout = matches!(json, Some(Output::Stdout));
    let say = |text: &str| {
        if to_stdout {
            eprintln!("{text}");
        } else {
            outln!("{text}");
        }
    };
    let metrics = args
        .metrics_listen
        .map(|a| stormark_report::LiveMetrics::serve(a).map_err(crate::usage))
        .transpose()?;
    let stop = crate::ctrl_c()?;
    let mut agents = fleet
        .connect_remote(&TargetOptions::new(PathBuf::new()), &stop)
        .map_err(|e| {
            if e.is_refusal() {
                usage(e.to_string())
            } else {
                anyhow::Error::from(e)
            }
        })?;
    let mut results = Results::new(crate::command_line());
    let started = std::time::Instant::now();
    let n = agents.len();
    if !args.quiet {
        eprintln!(
            "mesh of {n} hosts: {} pairs alone, then all at once; {} stream{} for {} each",
            n * (n - 1),
            opts.streams,
            if opts.streams == 1 { "" } else { "s" },
            args.time
        );
    }
    let names: Vec<String> = ips.iter().map(IpAddr::to_string).collect();
    let outcome = stormark_cluster::mesh(&agents, &ips, opts, &stop, &mut |event| {
        if let Some(m) = &metrics {
            match &event {
                MeshEvent::Matrix(a) => m.phase(if *a { "alone" } else { "loaded" }),
                MeshEvent::Pair(a, p) if p.failure.is_none() => m.mesh_pair(
                    *a,
                    &names[p.from as usize],
                    &names[p.to as usize],
                    p.bits_per_s,
                    p.retransmits(),
                ),
                MeshEvent::Pair(..) => {}
            }
        }
        if args.quiet {
            return;
        }
        match event {
            MeshEvent::Matrix(true) => eprintln!("each pair alone:"),
            MeshEvent::Matrix(false) => eprintln!("all pairs at once:"),
            MeshEvent::Pair(_, p) => eprintln!("  {}", pair_line(&names, p)),
        }
    });
    results.hosts = agents
        .iter()
        .map(|a| stormark_stats::Host {
            target: None,
            name: a.host().to_string(),
            inventory: a.inventory(),
            samples: Vec::new(),
            sampler_cpu_ns: None,
            address: Some(a.address_str().to_string()),
            failure: None,
            clock_offset_ns: Some(a.clock_offset_ns()),
            clock_rtt_ns: None,
        })
        .collect();
    for a in &mut agents {
        results.notes.extend(a.cleanup());
    }
    results.duration_ns = started.elapsed().as_nanos() as u64;
    results.spec = serde_json::json!({
        "kind": "net",
        "mode": "mesh",
        "agents": fleet.hosts.iter().map(|h| h.address.clone()).collect::<Vec<_>>(),
        "streams": opts.streams,
        "time": args.time,
        "msg_size": opts.msg_size,
    });
    let mesh = match outcome {
        Ok(m) => m,
        Err(e) => {
            results.status = RunStatus::Failed;
            results.failure = Some(e.to_string());
            if let Some(out) = &json {
                let _ = out.write(Json.render(&results).as_bytes());
            }
            if let Some(out) = &html {
                let _ = out.write(stormark_report::Html.render(&results).as_bytes());
            }
            return Err(e.into());
        }
    };
    let failures: Vec<String> = mesh
        .alone
        .iter()
        .chain(&mesh.loaded)
        .filter_map(|p| p.failure.clone())
        .collect();
    results.status = if stop.load(Ordering::Relaxed) {
        RunStatus::Interrupted
    } else if failures.is_empty() {
        RunStatus::Ok
    } else {
        RunStatus::Failed
    };
    results.failure = failures.first().cloned();
    say(&matrices(&names, &mesh));
    results.mesh = Some(mesh);
    results.findings = stormark_probe::diagnose(&results)
        .into_iter()
        .filter(|f| f.code.starts_with("net-"))
        .collect();
    if !results.findings.is_empty() {
        say(stormark_report::findings_text(&results.findings).trim_end());
    }
    for why in &failures {
        say(&format!("failed: {why}"));
    }
    if let Some(out) = &json {
        out.write(Json.render(&results).as_bytes())
            .with_context(|| "writing the results document")?;
    }
    if let Some(out) = &html {
        out.write(stormark_report::Html.render(&results).as_bytes())
            .with_context(|| "writing the HTML report")?;
    }
    Ok(if results.status == RunStatus::Ok {
        Ending::Success
    } else {
        Ending::Failed
    })
}

/// One pair's test in a line.
fn pair_line(names: &[String], p: &MeshPair) -> String {
    let (from, to) = (&names[p.from as usize], &names[p.to as usize]);
    match &p.failure {
        Some(why) => format!("{from} -> {to}: failed: {why}"),
        None => format!(
            "{from} -> {to}: {:.3} Gbit/s, {} retransmits{}{}",
            p.bits_per_s / 1e9,
            p.retransmits(),
            p.path_mtu
                .map(|m| format!(", path MTU {m}"))
                .unwrap_or_default(),
            p.rtt_p50_ns
                .map(|n| format!(", round trip p50 {}", format_latency(n)))
                .unwrap_or_default()
        ),
    }
}

/// Both matrices (rows send, columns receive), then each host's interface.
fn matrices(names: &[String], mesh: &MeshReport) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let width = names.iter().map(String::len).max().unwrap_or(4).max(18);
    for (title, pairs) in [
        ("each pair alone", &mesh.alone),
        ("all pairs at once", &mesh.loaded),
    ] {
        if pairs.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "{title}: Gbit/s (retransmits), from the row's host to the column's"
        );
        let _ = write!(out, "{:>width$}", "from \\ to");
        for n in names {
            let _ = write!(out, "  {n:>width$}");
        }
        out.push('\n');
        for (i, from) in names.iter().enumerate() {
            let _ = write!(out, "{from:>width$}");
            for j in 0..names.len() {
                let cell = match pairs
                    .iter()
                    .find(|p| p.from as usize == i && p.to as usize == j)
                {
                    _ if i == j => "-".to_string(),
                    None => "".to_string(),
                    Some(p) if p.failure.is_some() => "failed".to_string(),
                    Some(p) => format!("{:.3} ({})", p.bits_per_s / 1e9, p.retransmits()),
                };
                let _ = write!(out, "  {cell:>width$}");
            }
            out.push('\n');
        }
        if pairs.iter().all(|p| p.failure.is_none()) {
            let total: f64 = pairs.iter().map(|p| p.bits_per_s).sum();
            if title.starts_with("all") {
                let _ = writeln!(out, "  in total {:.3} Gbit/s", total / 1e9);
            }
        }
    }
    if mesh.alone.iter().any(|p| p.rtt_p50_ns.is_some()) {
        let _ = writeln!(
            out,
            "round trips of 64 bytes, each pair alone: p50 / p99, from the row's host to the column's"
        );
        let _ = write!(out, "{:>width$}", "from \\ to");
        for n in names {
            let _ = write!(out, "  {n:>width$}");
        }
        out.push('\n');
        for (i, from) in names.iter().enumerate() {
            let _ = write!(out, "{from:>width$}");
            for j in 0..names.len() {
                let cell = match mesh
                    .alone
                    .iter()
                    .find(|p| p.from as usize == i && p.to as usize == j)
                {
                    _ if i == j => "-".to_string(),
                    Some(p) => match (p.rtt_p50_ns, p.rtt_p99_ns) {
                        (Some(a), Some(b)) => {
                            format!("{} / {}", format_latency(a), format_latency(b))
                        }
                        _ => String::new(),
                    },
                    None => String::new(),
                };
                let _ = write!(out, "  {cell:>width$}");
            }
            out.push('\n');
        }
    }
    for h in &mesh.hosts {
        let _ = writeln!(
            out,
            "{} ({}): {}{}{}",
            h.ip,
            h.host,
            h.interface.as_deref().unwrap_or("interface unknown"),
            h.mtu.map(|m| format!(", MTU {m}")).unwrap_or_default(),
            h.link_mbps
                .map(|s| format!(", rated {s} Mbit/s"))
                .unwrap_or_default()
        );
    }
    out
}
