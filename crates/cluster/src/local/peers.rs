//! The ports an agent opens for the other agents of a run whose net jobs stream between them
//! (`server = "agents"`, a mesh's load): one per other host, serving only that host's address
//! and the run's token, open from validation to the run's cleanup.

use std::net::{IpAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use stormark_net::ServerOptions;

use crate::agent::{AgentError, NetPeers};

/// Hosts one agent serves in a run whose net jobs stream between its agents, at most.
pub(crate) const MAX_PEERS: usize = 256;

/// The ports this host opened for the run's other agents: served until dropped (the run's
/// cleanup, or the agent's end).
pub(crate) struct PeerPorts {
    stop: Arc<AtomicBool>,
}

impl Drop for PeerPorts {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Opens a port for each host of `peers` but `me`, each serving only that host's address
/// and the run's token: the ports in host order (0 for `me`).
pub(super) fn open_peer_ports(
    peers: &NetPeers,
    me: usize,
) -> Result<(PeerPorts, Vec<u16>), AgentError> {
    let guard = PeerPorts {
        stop: Arc::new(AtomicBool::new(false)),
    };
    let mut ports = vec![0u16; peers.ips.len()];
    for (i, ip) in peers.ips.iter().enumerate() {
        if i == me {
            continue;
        }
        let any: IpAddr = if ip.is_ipv4() {
            std::net::Ipv4Addr::UNSPECIFIED.into()
        } else {
            std::net::Ipv6Addr::UNSPECIFIED.into()
        };
        let listener = TcpListener::bind((any, 0))
            .map_err(|e| AgentError::Runtime(format!("opening a port for {ip}: {e}")))?;
        let port = listener
            .local_addr()
            .map_err(|e| AgentError::Runtime(e.to_string()))?
            .port();
        let opts = ServerOptions {
            once: false,
            stop: guard.stop.clone(),
            token: Some(peers.token.clone()),
            allow: vec![ip.to_canonical()],
        };
        std::thread::Builder::new()
            .name("net-peer".into())
            .spawn(move || {
                let _ = stormark_net::serve(listener, &opts, &|line| {
                    if line.contains("refused") {
                        eprintln!("stormark agent: net port {port}: {line}");
                    }
                });
            })
            .map_err(|e| AgentError::Runtime(e.to_string()))?;
        ports[i] = port;
    }
    Ok((guard, ports))
}
