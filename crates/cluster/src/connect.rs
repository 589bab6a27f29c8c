//! Connecting to the agents of a distributed run, all before any load.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::agent::{Agent, AgentError, TargetOptions};
use crate::remote::RemoteAgent;

/// Agents connected at once, at most: a thousand handshakes overlap without a thousand threads.
const CONNECT_FAN_OUT: usize = 32;

/// The agents of a distributed run and how to reach them.
pub struct Fleet {
    /// The shared token.
    pub token: String,
    /// `--tls-ca`: the CA (PEM) that signed the agents' certificates.
    pub tls_ca: Option<Vec<u8>>,
    /// Each agent: its address (`host:port`), target and S3 endpoint, if its own.
    pub hosts: Vec<stormark_spec::Host>,
}

impl Fleet {
    /// Connects to every agent (handshake, clock offset), up to [`CONNECT_FAN_OUT`] at once;
    /// `opts` is every target's options but its path. A refusal (busy, wrong token, version)
    /// ends it: the first in the list's order is the one said. An agent still removing its
    /// last run's files is waited for, the wait said through `say` (a line for the user), and
    /// Ctrl-C (`stop`) ends the wait as [`AgentError::Interrupted`].
    pub fn connect(
        &self,
        opts: &TargetOptions,
        stop: &Arc<AtomicBool>,
        say: &(dyn Fn(&str) + Sync),
    ) -> Result<Vec<Box<dyn Agent>>, AgentError> {
        Ok(self
            .connect_remote(opts, stop, say)?
            .into_iter()
            .map(|a| Box::new(a) as Box<dyn Agent>)
            .collect())
    }

    /// [`Fleet::connect`], as the agents themselves.
    fn connect_remote(
        &self,
        opts: &TargetOptions,
        stop: &Arc<AtomicBool>,
        say: &(dyn Fn(&str) + Sync),
    ) -> Result<Vec<RemoteAgent>, AgentError> {
        // Each phase drives every agent from a thread of its own, and the calls to all agents
        // fan out over threads; with glibc's default of up to 8 arenas per core, each thread
        // keeps its own freed blocks and the coordinator's memory grows with the agent count.
        // A few shared arenas keep it flat (glibc mallopt(3), M_ARENA_MAX).
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
        // The handshakes of a large fleet overlap, at most CONNECT_FAN_OUT at a time.
        let n = self.hosts.len();
        let next = AtomicUsize::new(0);
        let failed = AtomicBool::new(false);
        let slots: Vec<Mutex<Option<Result<RemoteAgent, AgentError>>>> =
            (0..n).map(|_| Mutex::new(None)).collect();
        std::thread::scope(|scope| {
            for _ in 0..CONNECT_FAN_OUT.min(n) {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n || failed.load(Ordering::Relaxed) {
                        break;
                    }
                    let r = self.connect_one(&rt, i, opts, stop, say);
                    failed.fetch_or(r.is_err(), Ordering::Relaxed);
                    *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                });
            }
        });
        // The first failure in the list's order, else every agent in it.
        let mut agents = Vec::with_capacity(n);
        for slot in slots {
            match slot.into_inner().unwrap_or_else(|e| e.into_inner()) {
                Some(Ok(agent)) => agents.push(agent),
                Some(Err(e)) => return Err(e),
                // Not tried: a failure came first, and is found further on.
                None => {}
            }
        }
        if agents.len() < n {
            return Err(AgentError::Runtime(
                "an agent was neither connected nor failed".into(),
            ));
        }
        Ok(agents)
    }

    /// Connects to agent `i` of the list (handshake, clock offset).
    fn connect_one(
        &self,
        rt: &Arc<tokio::runtime::Runtime>,
        i: usize,
        opts: &TargetOptions,
        stop: &Arc<AtomicBool>,
        say: &(dyn Fn(&str) + Sync),
    ) -> Result<RemoteAgent, AgentError> {
        let host = &self.hosts[i];
        let mut target = TargetOptions {
            path: host.target.clone(),
            ..opts.clone()
        };
        if let (Some(s3), Some(url)) = (&mut target.s3, &host.endpoint) {
            s3.endpoint = Some(url.clone());
        }
        Ok(RemoteAgent::connect(
            rt.clone(),
            &host.address,
            &self.token,
            self.tls_ca.as_deref(),
            target,
            i as u32,
            stop.clone(),
            say,
        )?
        .with_hosts(self.hosts.len() as u32))
    }
}
