//! `stormark agent`: serve coordinators until Ctrl-C or SIGTERM.

use std::net::{SocketAddr, ToSocketAddrs};

use stormark_cluster::{serve, AgentConfig, Journal};

use anyhow::{Context, Result};

use crate::cli::AgentArgs;
use crate::{usage, Ending};

pub fn main(args: AgentArgs) -> Result<Ending> {
    let cfg = AgentConfig::new(&args.token_file, &args.allow_path)
        .and_then(|c| c.with_devices(&args.allow_device))
        .and_then(|c| c.with_iscsi(&args.allow_iscsi))
        .and_then(|c| c.with_nfs(&args.allow_nfs))
        .and_then(|c| match (&args.tls_cert, &args.tls_key) {
            (Some(cert), Some(key)) => c.with_tls(cert, key),
            _ => Ok(c),
        });
    let mut cfg = cfg.map_err(|e| usage(e.to_string()))?;
    if let Some(addr) = args.metrics_listen {
        let metrics = stormark_report::LiveMetrics::serve(addr).map_err(usage)?;
        cfg.observer = Some(std::sync::Arc::new(move |counts| metrics.counts(counts)));
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
    // The port is tried before "listening" is said (the server binds it again at once): an
    // address in use is one line, exit 2, never a claim followed by an error.
    drop(std::net::TcpListener::bind(addr).map_err(|e| {
        usage(format!(
            "--listen {addr}: cannot listen there ({e}); give a free ADDR:PORT of this host, such as 0.0.0.0:7878"
        ))
    })?);
    for w in cfg.warnings(&addr, &args.token_file, args.tls_key.as_deref()) {
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
