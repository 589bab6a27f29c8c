//! Net jobs between a run's own agents (`server = "agents"`, a mesh's load): each host's
//! address, the port every host opened for each other at validation, and where each host's
//! streams go in a phase.

use std::net::{IpAddr, SocketAddr};

use stormark_spec::Workload;

use crate::agent::{Agent, NetPeer, NetPeers};

/// What the coordinator knows of a run whose net jobs stream between its agents.
pub(super) struct PeerMap {
    /// Each host's address the streams go between.
    ips: Vec<IpAddr>,
    /// `ports[j][i]`: host `j`'s port for host `i`.
    ports: Vec<Vec<u16>>,
    /// Per stage, per job: whether the job streams to the run's agents.
    to_agents: Vec<Vec<bool>>,
}

impl PeerMap {
    /// The run's hosts for `workload`'s net jobs to its agents, each resolved to the address
    /// it was named by; `None` when no job streams to the agents. Every host must be a remote
    /// agent at an address of its own: the one line the user reads otherwise.
    pub(super) fn new(
        workload: &Workload,
        agents: &[Box<dyn Agent>],
    ) -> Result<Option<(PeerMap, NetPeers)>, String> {
        let to_agents: Vec<Vec<bool>> = workload
            .stages()
            .iter()
            .map(|jobs| {
                jobs.iter()
                    .map(|j| j.net.as_ref().is_some_and(|n| n.to_agents()))
                    .collect()
            })
            .collect();
        let Some(job) = workload
            .jobs
            .iter()
            .find(|j| j.net.as_ref().is_some_and(|n| n.to_agents()))
        else {
            return Ok(None);
        };
        if agents.len() < 2 {
            return Err(format!(
                "job {}: server = \"agents\" streams between the agents of a run: give --agents LIST with at least two, such as node1:7878,node2:7878",
                job.name
            ));
        }
        if agents.len() > crate::local::MAX_PEERS + 1 {
            return Err(format!(
                "--agents: {} agents; net jobs between agents take at most {}",
                agents.len(),
                crate::local::MAX_PEERS + 1
            ));
        }
        let mut addresses = Vec::new();
        for agent in agents {
            addresses.push(agent.address().ok_or_else(|| {
                format!(
                    "job {}: server = \"agents\" needs every host to be an agent (--agents)",
                    job.name
                )
            })?);
        }
        let ips = peer_ips(addresses.iter().map(String::as_str))?;
        let peers = NetPeers {
            ips: ips.clone(),
            // 128 random bits, made the way session ids are.
            token: crate::auth::session_id(),
        };
        let n = ips.len();
        Ok(Some((
            PeerMap {
                ips,
                ports: vec![Vec::new(); n],
                to_agents,
            },
            peers,
        )))
    }

    /// Host `h`'s ports for every host, as its validation said.
    pub(super) fn set_ports(&mut self, h: usize, ports: Vec<u16>) {
        self.ports[h] = ports;
    }

    /// Where each host's streams go in a phase: host `i` alone to `j` (a pair), or every host
    /// to every other; only hosts still `alive`.
    pub(super) fn peers(&self, pair: Option<(usize, usize)>, alive: &[bool]) -> Vec<Vec<NetPeer>> {
        let n = self.ips.len();
        (0..n)
            .map(|h| {
                (0..n)
                    .filter(|&j| j != h && alive[h] && alive[j])
                    .filter(|&j| pair.is_none_or(|(from, to)| h == from && j == to))
                    .filter_map(|j| {
                        let port = *self.ports[j].get(h)?;
                        (port != 0).then(|| NetPeer {
                            host: j as u32,
                            address: SocketAddr::new(self.ips[j], port),
                        })
                    })
                    .collect()
            })
            .collect()
    }

    /// Whether job `job` of `stage` streams to the run's agents.
    pub(super) fn to_agents(&self, stage: usize, job: usize) -> bool {
        self.to_agents
            .get(stage)
            .and_then(|s| s.get(job))
            .copied()
            .unwrap_or(false)
    }

    /// Whether every job of `stage` streams to the run's agents (a host with no peer then
    /// has nothing to run).
    pub(super) fn only_to_agents(&self, stage: usize) -> bool {
        self.to_agents
            .get(stage)
            .is_some_and(|s| !s.is_empty() && s.iter().all(|b| *b))
    }
}

/// Each agent's address resolved to the IP address streams between agents go to (net jobs
/// with `server = "agents"`, a mesh): every one must resolve, and to an address of its own.
pub fn peer_ips<'a>(
    addresses: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<std::net::IpAddr>, String> {
    use std::net::ToSocketAddrs;
    let mut ips: Vec<std::net::IpAddr> = Vec::new();
    for address in addresses {
        let ip = address
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .map(|a| a.ip().to_canonical())
            .ok_or_else(|| {
                format!("--agents {address}: cannot resolve the host; expected host:port, such as node1:7878")
            })?;
        if ips.contains(&ip) {
            return Err(format!(
                "--agents: {address} is {ip}, as another agent is; streams between agents go between different hosts"
            ));
        }
        ips.push(ip);
    }
    Ok(ips)
}
