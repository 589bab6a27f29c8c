//! `stormark agent`: serve coordinators until Ctrl-C or SIGTERM.

use std::net::{SocketAddr, ToSocketAddrs};

use stormark_cluster::{
    serve, serve_launched, AgentConfig, Journal, LaunchedAgent, Net, TOKEN_ENV,
};

use anyhow::{Context, Result};

use crate::cli::AgentArgs;
use crate::{usage, Ending};

pub fn main(args: AgentArgs) -> Result<Ending> {
    let cfg = match &args.token_file {
        Some(file) => AgentConfig::new(file, &args.allow_path),
        None => AgentConfig::with_token(launched_token()?, &args.allow_path),
    };
    let cfg = cfg
        .and_then(|c| c.with_devices(&args.allow_device))
        .and_then(|c| c.with_iscsi(&args.allow_iscsi))
        .and_then(|c| c.with_nfs(&args.allow_nfs))
        .and_then(|c| match (&args.tls_cert, &args.tls_key, &args.tls_dir) {
            (Some(cert), Some(key), _) => c.with_tls(cert, key),
            // A launched agent's own files, named for its host as `stormark cert agent` names
            // them.
            (_, _, Some(dir)) => {
                let host = stormark_cluster::host_name();
                c.with_tls(
                    &dir.join(format!("{host}.pem")),
                    &dir.join(format!("{host}.key")),
                )
            }
            _ => Ok(c),
        });
    let mut cfg = cfg.map_err(|e| usage(e.to_string()))?;
    if let Some(addr) = args.metrics_listen {
        let metrics = stormark_report::LiveMetrics::serve(addr).map_err(usage)?;
        cfg.observer = Some(std::sync::Arc::new(move |counts| metrics.counts(counts)));
    }
    if args.launched {
        return launched(cfg, &args);
    }
    match Journal::open(&args.state_dir) {
        Ok((j, recovered)) => {
            for note in recovered {
                eprintln!("note: {note}");
            }
            cfg.journal = Some(j);
        }
        Err(e) => eprintln!(
            "warning: {e}; run directories left by a crash will not be removed at the next start"
        ),
    }
    let addr: SocketAddr = args
        .listen
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| {
            usage(format!(
                "--listen {}: expected an address and port such as 0.0.0.0:7878",
                args.listen
            ))
        })?;
    let (rt, rx) = runtime()?;
    // The port is tried before "listening" is said (the server binds it again at once): an
    // address in use is one line, exit 2, never a claim followed by an error.
    drop(std::net::TcpListener::bind(addr).map_err(|e| {
        usage(format!(
            "--listen {addr}: cannot listen there ({e}); give a free ADDR:PORT of this host, such as 0.0.0.0:7878"
        ))
    })?);
    let token_file = args
        .token_file
        .as_deref()
        .expect("clap requires it without --launched");
    for w in cfg.warnings(&addr, token_file, args.tls_key.as_deref()) {
        eprintln!("warning: {w}");
    }
    eprintln!(
        "stormark agent {} listening on {addr}{}; allowed: {}",
        env!("CARGO_PKG_VERSION"),
        if cfg.tls.is_some() { " (TLS)" } else { "" },
        cfg.allow
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    rt.block_on(serve(cfg, addr, async {
        let _ = rx.await;
    }))?;
    Ok(Ending::Success)
}

/// The runtime the agent serves on, and what Ctrl-C or SIGTERM resolves.
fn runtime() -> Result<(tokio::runtime::Runtime, tokio::sync::oneshot::Receiver<()>)> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let tx = std::sync::Mutex::new(Some(tx));
    ctrlc::set_handler(move || {
        if let Some(tx) = tx.lock().ok().and_then(|mut t| t.take()) {
            let _ = tx.send(());
        }
    })
    .context("cannot install the signal handler")?;
    Ok((rt, rx))
}

/// The one-run token of a launched agent, from its environment (never its command line).
fn launched_token() -> Result<String> {
    let token = std::env::var(TOKEN_ENV).map_err(|_| {
        usage(format!(
            "--launched: {TOKEN_ENV} is not in this agent's environment: the launcher did not pass it on (mpirun needs -x {TOKEN_ENV} for other hosts' ranks)"
        ))
    })?;
    if token.len() < stormark_cluster::MIN_TOKEN_LEN || token.contains(char::is_whitespace) {
        return Err(usage(format!(
            "--launched: {TOKEN_ENV} holds no usable token (at least {} characters, no spaces)",
            stormark_cluster::MIN_TOKEN_LEN
        )));
    }
    Ok(token)
}

/// `stormark agent --launched`: serves the runs of the coordinator that launched it, on a
/// port of its own said on standard output, then exits. No journal: several launched agents
/// share a host, and each removes its run directory as its run ends.
fn launched(cfg: AgentConfig, args: &AgentArgs) -> Result<Ending> {
    let net = args
        .launch_net
        .as_deref()
        .map(str::parse::<Net>)
        .transpose()
        .map_err(usage)?;
    let launched = LaunchedAgent {
        coordinator: args.coordinator.expect("clap requires it with --launched"),
        net,
        runs: args.runs,
        contact_within: std::time::Duration::from_secs(args.contact_within),
    };
    let (rt, rx) = runtime()?;
    rt.block_on(serve_launched(cfg, launched, async {
        let _ = rx.await;
    }))
    .map_err(|e| usage(e.to_string()))?;
    Ok(Ending::Success)
}
