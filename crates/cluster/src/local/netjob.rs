//! Net jobs on this host: their servers checked before any load, a session opened per job
//! for each stage, its streams handed to the job's workers, and what the servers counted
//! noted afterwards.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use stormark_engine::NetWork;
use stormark_net::{ClientOptions, Mode, ServerLine, Session};
use stormark_spec::{NetJob, NetMode, Workload};

use super::LocalAgent;
use crate::agent::AgentError;

/// How long a server has to answer a connection before the load.
const CONNECT: Duration = Duration::from_secs(5);

/// The address of `server` (`HOST:PORT`), looked up now.
fn resolve(job: &str, server: &str) -> Result<SocketAddr, AgentError> {
    server
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| {
            AgentError::job(
                job,
                format!(
                    "server {server}: no such host (give a name this host resolves, or an address)"
                ),
            )
        })
}

impl LocalAgent {
    /// The server each net job of `workload` streams to from this host (entry `index` of
    /// its list): it must answer a connection now.
    pub(super) fn check_servers(&self, workload: &Workload) -> Result<(), AgentError> {
        for job in &workload.jobs {
            let Some(net) = &job.net else { continue };
            let server = net.server_of(self.index);
            let addr = resolve(&job.name, server)?;
            TcpStream::connect_timeout(&addr, CONNECT).map_err(|e| {
                let why = match e.kind() {
                    std::io::ErrorKind::ConnectionRefused => "connection refused".to_string(),
                    std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => {
                        format!("no answer within {} s", CONNECT.as_secs())
                    }
                    _ => e.to_string(),
                };
                AgentError::job(
                    &job.name,
                    format!("server {server}: {why}; start `stormark net server` there (or name the right port)"),
                )
            })?;
        }
        Ok(())
    }

    /// Opens a session for every net job `(k, job, name, workers)` of a stage that lasts
    /// `time` (its ramp included): the streams for the workers of job `k`, in order.
    pub(super) fn open_sessions(
        &self,
        jobs: &[(usize, &NetJob, String, usize)],
        time: Duration,
    ) -> Result<Vec<NetSession>, AgentError> {
        let mut out = Vec::new();
        for (k, net, name, workers) in jobs {
            let server = net.server_of(self.index).to_string();
            let addr = resolve(name, &server)?;
            let opts = ClientOptions {
                server: addr,
                mode: match net.mode {
                    NetMode::Rtt => Mode::Rtt,
                    _ => Mode::Throughput,
                },
                streams: *workers as u32,
                // The server's side outlasts the stage: the workers end the session.
                time: time + Duration::from_secs(10),
                reverse: net.mode == NetMode::Receive,
                msg_size: net.msg_size,
                stop: self.stop.clone(),
                udp: false,
                bitrate: 0,
                bidir: false,
                token: None,
                rate: None,
                bind: None,
            };
            let mut session = Session::open(&opts)
                .map_err(|e| AgentError::job(name, format!("server {server}: {e}")))?;
            let streams = std::mem::take(&mut session.streams)
                .into_iter()
                .map(|s| Arc::new(Mutex::new(Some(s))))
                .collect();
            out.push(NetSession {
                job: *k,
                name: name.clone(),
                server,
                mode: net.mode,
                msg_size: net.msg_size,
                streams,
                session: Some(session),
            });
        }
        Ok(out)
    }
}

/// A net job's session during a stage.
pub(super) struct NetSession {
    /// The job's place in the stage.
    pub job: usize,
    name: String,
    server: String,
    mode: NetMode,
    msg_size: u32,
    streams: Vec<Arc<Mutex<Option<TcpStream>>>>,
    session: Option<Session>,
}

impl NetSession {
    /// The work of worker `w`: its stream.
    pub fn work(&self, w: usize) -> NetWork {
        NetWork {
            stream: self.streams[w].clone(),
            mode: self.mode,
            msg_size: self.msg_size,
            server: self.server.clone(),
        }
    }

    /// Ends the session (every stream closed) and says what the server counted.
    pub fn finish(self) -> Option<String> {
        for s in &self.streams {
            if let Some(s) = s.lock().ok().and_then(|mut s| s.take()) {
                let _ = s.shutdown(std::net::Shutdown::Both);
            }
        }
        let end = self.session?.finish()?;
        let ServerLine::End {
            bytes, duration_ns, ..
        } = end
        else {
            return None;
        };
        let total: u64 = bytes.iter().sum();
        (self.mode == NetMode::Send && duration_ns > 0).then(|| {
            format!(
                "net job {}: {} counted {} received over {:.1} s ({:.2} Gbit/s, ramp included), what this host sent as the receiver saw it",
                self.name,
                self.server,
                super::human(total),
                duration_ns as f64 / 1e9,
                total as f64 * 8.0 / duration_ns as f64
            )
        })
    }
}
