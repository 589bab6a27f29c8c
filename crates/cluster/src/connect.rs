//! Connecting to the agents of a distributed run, all before any load.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::agent::{Agent, AgentError, TargetOptions};
use crate::remote::RemoteAgent;

/// The agents of a distributed run and how to reach them.
pub struct Fleet {
    /// The shared token.
    pub token: String,
    /// `--tls-ca`: the CA (PEM) that signed the agents' certificates.
    pub tls_ca: Option<Vec<u8>>,
    /// Each agent: its address (`host:port`), target and S3 endpoint, if its own.
    pub hosts: Vec<stormark_plan::Host>,
}

impl Fleet {
    /// Connects to every agent (handshake, clock offset), in order; `opts` is every target's
    /// options but its path. The first refusal (busy, wrong token, version) ends it.
    pub fn connect(
        &self,
        opts: &TargetOptions,
        stop: &Arc<AtomicBool>,
    ) -> Result<Vec<Box<dyn Agent>>, AgentError> {
        Ok(self
            .connect_remote(opts, stop)?
            .into_iter()
            .map(|a| Box::new(a) as Box<dyn Agent>)
            .collect())
    }

    /// [`Fleet::connect`], as the agents themselves (for calls beside the phases: the
    /// network mesh).
    pub fn connect_remote(
        &self,
        opts: &TargetOptions,
        stop: &Arc<AtomicBool>,
    ) -> Result<Vec<RemoteAgent>, AgentError> {
        // One thread per agent decodes that agent's snapshots (each histogram is about
        // 270 KiB); with glibc's default of up to 8 arenas per core, each thread keeps its own
        // freed blocks and the coordinator's memory grows with the agent count. A few shared
        // arenas keep it flat (glibc mallopt(3), M_ARENA_MAX).
        #[cfg(target_env = "gnu")]
        // SAFETY: mallopt only tunes the allocator; called before the agent threads exist.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 4);
        }
        let rt = Arc::new(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .map_err(|e| AgentError::Runtime(e.to_string()))?,
        );
        let mut agents = Vec::new();
        for (i, host) in self.hosts.iter().enumerate() {
            let mut target = TargetOptions {
                path: host.target.clone(),
                ..opts.clone()
            };
            if let (Some(s3), Some(url)) = (&mut target.s3, &host.endpoint) {
                s3.endpoint = Some(url.clone());
            }
            let addr = &host.address;
            let agent = RemoteAgent::connect(
                rt.clone(),
                addr,
                &self.token,
                self.tls_ca.as_deref(),
                target,
                i as u32,
                stop.clone(),
            )?
            .with_hosts(self.hosts.len() as u32);
            agents.push(agent);
        }
        Ok(agents)
    }
}
