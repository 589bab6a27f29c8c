//! `stormark agent`: the gRPC service that runs a coordinator's load on this host.
//!
//! Every call must carry the agent's token (compared in constant time). Targets must lie under
//! one of the agent's `--allow-path` directories or devices. One coordinator at a time: a
//! second is refused while a session is open. A session lives as long as the connection its
//! coordinator opened it on: a coordinator that crashes or is cut off (given up within
//! [`AgentConfig::heartbeat_timeout`]) or stops answering the connection's keep-alive pings
//! (within three times that) loses its session: the load stops, the run directory is removed, and the next coordinator is welcome.
//! The removal runs beside the service, never in front of it: a coordinator that comes while
//! the last run's files are still being removed (a fragmented working set on a device that
//! discards what is freed takes minutes) is answered at once, told how much is left, and waits
//! for it before any load starts.
//! The agent runs nothing but stormark's own engine: no command from the wire is ever executed.

use std::net::SocketAddr;

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use stormark_spec::{StageLoad, Workload};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::Stream;
use tonic::{Request, Response, Status};

use crate::agent::{Agent, AgentError, AgentEvent, Second};
use crate::auth::{check_token, session_id};
use crate::config::{AgentConfig, ConfigError};
use crate::local::{LocalAgent, Removal};
use crate::wire::pb::agent_server::{Agent as AgentRpc, AgentServer};
use crate::wire::pb::{self, event};
use crate::wire::{encode_parts, encode_snapshot, from_unix_ns, unix_ns};
use ending::FINISH_ANSWER;

mod ending;
mod request;

/// What a coordinator hears when the agent was stopped during its phase.
const TERMINATED: &str =
    "the agent was stopped (SIGTERM or Ctrl-C on its host) during the phase; its load ended early";

struct Session {
    id: String,
    coordinator: String,
    since: SystemTime,
    /// The coordinator's end of the connection the session was opened on.
    peer: SocketAddr,
    stop: Arc<AtomicBool>,
    agent: Option<Arc<Mutex<LocalAgent>>>,
    /// How far its cleanup's removal of the run directory's files has come.
    removal: Arc<Removal>,
    /// When its cleanup began (its coordinator asked to finish, or is gone): the cleanup runs
    /// on a thread of its own, and the session ends when it is done.
    removing_since: Option<Instant>,
}

/// The agent service.
#[derive(Clone)]
pub struct AgentService {
    cfg: Arc<AgentConfig>,
    session: Arc<Mutex<Option<Session>>>,
    /// Set on SIGTERM or Ctrl-C: a phase that ends now ends as this host's failure.
    terminating: Arc<AtomicBool>,
    /// The connections open: a session ends with its connection.
    connections: crate::listen::Connections,
}

/// A session's opening or end, as told to [`AgentConfig::on_session`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionChange {
    /// A coordinator's handshake opened a session.
    Opened,
    /// A session ended: its coordinator finished or is gone, and its cleanup is done.
    Closed,
}

/// What is told of each session's opening and end.
pub type SessionHook = Arc<dyn Fn(SessionChange) + Send + Sync>;

/// The session's agent, shared between calls and the blocking thread that runs a phase.
type SharedAgent = Arc<Mutex<LocalAgent>>;

type EventStream = Pin<Box<dyn Stream<Item = Result<pb::Event, Status>> + Send>>;

impl AgentService {
    /// A service configured by `cfg`, its sessions living by `connections`.
    pub fn new(cfg: AgentConfig, connections: crate::listen::Connections) -> AgentService {
        AgentService {
            cfg: Arc::new(cfg),
            session: Arc::new(Mutex::new(None)),
            terminating: Arc::new(AtomicBool::new(false)),
            connections,
        }
    }

    /// Whether session `s`'s coordinator is gone: its connection closed (it crashed or
    /// exited, was stopped and no longer answered pings, or was cut off).
    fn gone(&self, s: &Session) -> bool {
        !self.connections.is_open(s.peer)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Session>> {
        self.session.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The session's agent and stop flag, after checking the id.
    fn session(&self, id: &str) -> Result<(Arc<AtomicBool>, Option<SharedAgent>), Status> {
        match self.lock().as_ref() {
            Some(s) if s.id == id => Ok((s.stop.clone(), s.agent.clone())),
            _ => Err(Status::failed_precondition(
                "no such session: it ended (its connection closed?); start the run again",
            )),
        }
    }

    fn agent(&self, id: &str) -> Result<(Arc<AtomicBool>, SharedAgent), Status> {
        match self.session(id)? {
            (stop, Some(agent)) => Ok((stop, agent)),
            _ => Err(Status::failed_precondition("validate first")),
        }
    }

    /// The agent was told to stop (SIGTERM, Ctrl-C): stops the running load at once; the
    /// phase then ends as a failure the coordinator reports for this host.
    pub fn terminate(&self) {
        self.terminating.store(true, Ordering::Relaxed);
        if let Some(s) = self.lock().as_ref() {
            s.stop.store(true, Ordering::Relaxed);
        }
    }

    /// Runs a phase of the session's agent on a blocking thread, streaming its events.
    fn stream_phase(
        &self,
        session: &str,
        phase: impl FnOnce(
                &mut LocalAgent,
                &mut dyn FnMut(AgentEvent<'_>),
            ) -> Result<Vec<stormark_stats::PhaseJob>, AgentError>
            + Send
            + 'static,
    ) -> Result<Response<EventStream>, Status> {
        let (stop, agent) = self.agent(session)?;
        if self.terminating.load(Ordering::Relaxed) {
            return Err(Status::aborted(TERMINATED));
        }
        let terminating = self.terminating.clone();
        let observer = self.cfg.observer.clone();
        let (tx, rx) = mpsc::channel::<Result<pb::Event, Status>>(256);
        // A tick every second, whatever the engine is doing (creating large files, say), so
        // the coordinator can tell a busy agent from a dead one; a second in which the phase
        // sent an event of its own needs none (the coordinator hears from the agent at least
        // every 2 s either way).
        let done = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicBool::new(false));
        let (ticker_tx, ticker_done, ticker_sent) = (tx.clone(), done.clone(), sent.clone());
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(1));
            loop {
                every.tick().await;
                if ticker_done.load(Ordering::Relaxed) {
                    break;
                }
                if ticker_sent.swap(false, Ordering::Relaxed) {
                    if ticker_tx.is_closed() {
                        break;
                    }
                } else {
                    let tick = pb::Event {
                        kind: Some(event::Kind::Tick(pb::Empty {})),
                    };
                    if ticker_tx.send(Ok(tick)).await.is_err() {
                        break;
                    }
                }
            }
        });
        tokio::task::spawn_blocking(move || {
            let mut agent = agent.lock().unwrap_or_else(|e| e.into_inner());
            let send = |e: pb::Event| {
                sent.store(true, Ordering::Relaxed);
                if tx.blocking_send(Ok(e)).is_err() {
                    // The coordinator is gone: stop the load.
                    stop.store(true, Ordering::Relaxed);
                }
            };
            let result = phase(&mut agent, &mut |e| {
                if let (Some(observe), AgentEvent::Interval { second, .. }) = (&observer, &e) {
                    let counts: Vec<_> = match second {
                        Second::Whole(snap) => snap
                            .ops()
                            .map(|(op, r)| (op, r.ops, r.bytes, r.errors))
                            .collect(),
                        Second::Parts(ops, ..) => ops
                            .iter()
                            .map(|(op, r)| (*op, r.ops, r.bytes, r.errors))
                            .collect(),
                    };
                    observe(&counts);
                }
                let kind = match e {
                    AgentEvent::Started { at } => event::Kind::StartedUnixNs(unix_ns(at)),
                    AgentEvent::Interval {
                        job,
                        worker,
                        interval,
                        second,
                    } => event::Kind::Interval(pb::Interval {
                        job: job.into(),
                        worker,
                        interval,
                        snapshot: Some(match &second {
                            Second::Whole(snap) => encode_snapshot(snap),
                            Second::Parts(ops, errors, verified) => {
                                let full: Vec<(stormark_stats::Op, stormark_stats::OpRecord)> = ops
                                    .iter()
                                    .map(|(o, r)| {
                                        let mut full = stormark_stats::OpRecord::new();
                                        full += r;
                                        (*o, full)
                                    })
                                    .collect();
                                encode_parts(full.iter().map(|(o, r)| (*o, r)), (errors, *verified))
                            }
                        }),
                    }),
                    AgentEvent::Done {
                        job,
                        worker,
                        end_ns,
                        failure,
                    } => event::Kind::Done(pb::Done {
                        job: job.into(),
                        worker,
                        end_ns,
                        failure: failure.unwrap_or_default().to_string(),
                    }),
                    // The engine's quarter-second ticks stay here: the ticker above
                    // already proves liveness once a second.
                    AgentEvent::Tick => return,
                };
                send(pb::Event { kind: Some(kind) });
            });
            let last = match result {
                _ if terminating.load(Ordering::Relaxed) => Err(Status::aborted(TERMINATED)),
                Ok(jobs) => Ok(pb::Event {
                    kind: Some(event::Kind::Finished(pb::Finished {
                        jobs: jobs.iter().map(crate::wire::encode_job).collect(),
                        notes: agent.take_notes(),
                        net: agent
                            .take_net()
                            .iter()
                            .map(crate::wire::encode_net)
                            .collect(),
                    })),
                }),
                Err(e) => Err(status_of(&e)),
            };
            done.store(true, Ordering::Relaxed);
            let _ = tx.blocking_send(last);
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }
}

#[tonic::async_trait]
impl AgentRpc for AgentService {
    async fn handshake(
        &self,
        req: Request<pb::HandshakeRequest>,
    ) -> Result<Response<pb::HandshakeReply>, Status> {
        let received = SystemTime::now();
        // Served by `serve`, every connection has its peer's address.
        let peer = req
            .remote_addr()
            .ok_or_else(|| Status::internal("the connection's peer address is unknown"))?;
        let req = req.into_inner();
        let version = env!("CARGO_PKG_VERSION");
        if req.version != version {
            return Err(Status::failed_precondition(format!(
                "version mismatch: this agent is stormark {version}, the coordinator {}; run the same version on both",
                req.version
            )));
        }
        // A session whose coordinator went silent is ended first.
        self.watchdog_tick();
        let id = session_id();
        {
            let mut guard = self.lock();
            // The last run's files still being removed: no load may start before they are
            // gone, so the coordinator is told how much is left, and asks again.
            if let Some((s, since)) = guard
                .as_ref()
                .and_then(|s| s.removing_since.map(|t| (s, t)))
            {
                let (files_left, bytes_left) = s.removal.left();
                return Ok(Response::new(pb::HandshakeReply {
                    version: version.into(),
                    removing: Some(pb::Removing {
                        files_left,
                        bytes_left,
                        seconds: since.elapsed().as_secs() as u32,
                    }),
                    ..Default::default()
                }));
            }
            if let Some(s) = guard.as_ref() {
                let secs = s.since.elapsed().map_or(0, |d| d.as_secs());
                return Err(Status::unavailable(format!(
                    "busy: serving coordinator {} for {secs} s; try again when its run ends",
                    s.coordinator
                )));
            }
            *guard = Some(Session {
                id: id.clone(),
                coordinator: req.coordinator,
                since: SystemTime::now(),
                peer,
                stop: Arc::new(AtomicBool::new(false)),
                agent: None,
                removal: Arc::new(Removal::default()),
                removing_since: None,
            });
        }
        if let Some(hook) = &self.cfg.on_session {
            hook(SessionChange::Opened);
        }
        let inv = tokio::task::spawn_blocking(stormark_probe::collect_inventory)
            .await
            .map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(pb::HandshakeReply {
            version: version.into(),
            session: id,
            host: inv.hostname.clone(),
            inventory_json: serde_json::to_string(&inv).expect("an inventory serializes"),
            heartbeat_timeout_s: self.cfg.heartbeat_timeout.as_secs() as u32,
            received_unix_ns: unix_ns(received),
            unix_ns: unix_ns(SystemTime::now()),
            removing: None,
        }))
    }

    async fn clock(
        &self,
        req: Request<pb::SessionRequest>,
    ) -> Result<Response<pb::ClockReply>, Status> {
        self.session(&req.into_inner().session)?;
        Ok(Response::new(pb::ClockReply {
            unix_ns: unix_ns(SystemTime::now()),
        }))
    }

    async fn validate(
        &self,
        req: Request<pb::ValidateRequest>,
    ) -> Result<Response<pb::ValidateReply>, Status> {
        let req = req.into_inner();
        let (stop, _) = self.session(&req.session)?;
        let jobs = request::jobs(&req)?;
        let target = request::target(&self.cfg, &req, &jobs)?;
        let workload = Workload::new(jobs, req.prepare)
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        let mut opts = request::target_options(&self.cfg, &req, target);
        opts.net_peers = request::net_peers(&req)?;
        let index = u64::from(req.index);
        let hosts = req.hosts.max(1);
        let journal = self.cfg.journal.clone();
        let removal = self
            .lock()
            .as_ref()
            .filter(|s| s.id == req.session)
            .map(|s| s.removal.clone())
            .unwrap_or_default();
        let sample = req.start_sampling;
        let (validated, agent, sampling_since) = tokio::task::spawn_blocking(move || {
            let mut agent = LocalAgent::new(opts)
                .with_journal(journal)
                .with_removal(removal)
                .with_stop(stop)
                .with_seed_salt(index)
                .with_hosts(hosts);
            let v = agent.validate(&workload);
            let mut since = 0;
            if v.is_ok() && sample {
                since = unix_ns(SystemTime::now());
                agent.start_sampling();
            }
            (v, agent, since)
        })
        .await
        .map_err(|e| Status::internal(e.to_string()))?;
        let validated = validated.map_err(|e| status_of(&e))?;
        let stages = (0..validated.stages.len())
            .map(|i| pb::StageWorkers {
                workers: agent.workers(crate::agent::Stage::Run(i)),
            })
            .collect();
        let mut guard = self.lock();
        match guard.as_mut() {
            Some(s) if s.id == req.session => s.agent = Some(Arc::new(Mutex::new(agent))),
            _ => {
                return Err(Status::failed_precondition(
                    "the session ended during validation",
                ))
            }
        }
        let mut reply = crate::wire::encode_validated(&validated, stages);
        reply.sampling_since_unix_ns = sampling_since;
        Ok(Response::new(reply))
    }

    type PrepareStream = EventStream;

    async fn prepare(
        &self,
        req: Request<pb::SessionRequest>,
    ) -> Result<Response<Self::PrepareStream>, Status> {
        self.stream_phase(&req.into_inner().session, |agent, sink| agent.prepare(sink))
    }

    type RunStageStream = EventStream;

    async fn run_stage(
        &self,
        req: Request<pb::RunStageRequest>,
    ) -> Result<Response<Self::RunStageStream>, Status> {
        let req = req.into_inner();
        let stage = req.stage as usize;
        let start_at = (req.start_at_unix_ns > 0).then(|| from_unix_ns(req.start_at_unix_ns));
        let load = StageLoad {
            jobs: req.jobs,
            iodepth: req.iodepth,
            rate_iops: req.rate_iops,
            bs: req.bs,
            size: req.size,
            meta_op: req
                .meta_op
                .and_then(|i| stormark_spec::MetaOp::ALL.get(i as usize).copied()),
            meta_items: req.meta_items,
        };
        let peers = request::net_to(&req)?;
        self.stream_phase(&req.session, move |agent, sink| {
            agent.run_stage(stage, &load, &peers, start_at, sink)
        })
    }

    async fn stop(&self, req: Request<pb::SessionRequest>) -> Result<Response<pb::Empty>, Status> {
        let (stop, _) = self.session(&req.into_inner().session)?;
        stop.store(true, Ordering::Relaxed);
        Ok(Response::new(pb::Empty {}))
    }

    async fn start_sampling(
        &self,
        req: Request<pb::SessionRequest>,
    ) -> Result<Response<pb::Empty>, Status> {
        let (_, agent) = self.agent(&req.into_inner().session)?;
        agent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .start_sampling();
        Ok(Response::new(pb::Empty {}))
    }

    async fn finish(
        &self,
        req: Request<pb::SessionRequest>,
    ) -> Result<Response<pb::FinishReply>, Status> {
        let id = req.into_inner().session;
        self.session(&id)?;
        let asked = tokio::time::Instant::now();
        let Some(ending) = self.end(&id) else {
            return Ok(Response::new(pb::FinishReply {
                notes: vec![
                    "the run's cleanup had begun already (its coordinator was taken for gone)"
                        .into(),
                ],
                ..Default::default()
            }));
        };
        let mut reply = ending
            .head
            .await
            .map_err(|_| Status::internal("the cleanup ended without a word"))?;
        // The removal goes on beside the service when it takes longer: the coordinator is
        // told, and a run started here before it is done waits for it. The answer comes
        // within FINISH_ANSWER of the ask, or as soon as the load, the samples and an S3
        // run's objects (bounded per request) are done, whichever is later.
        match tokio::time::timeout_at(asked + FINISH_ANSWER, ending.notes).await {
            Ok(Ok(notes)) => reply.notes.extend(notes),
            Ok(Err(_)) => reply
                .notes
                .push("cleanup failed: it ended without a word".into()),
            Err(_) => reply.notes.push(format!(
                "the agent goes on removing the run's files after the run{}: a run started on it before they are gone waits for them",
                crate::wire::left_words(ending.removal.left())
            )),
        }
        Ok(Response::new(reply))
    }
}

/// An agent's error as a gRPC status: a refusal is a failed precondition (the coordinator
/// reports a user error), anything else an abort.
fn status_of(e: &AgentError) -> Status {
    if e.is_refusal() {
        Status::failed_precondition(e.to_string())
    } else {
        Status::aborted(e.to_string())
    }
}

/// How long connections may finish after SIGTERM before the agent exits anyway.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// Serves the agent on `addr` until `shutdown` resolves.
pub async fn serve(
    cfg: AgentConfig,
    addr: SocketAddr,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> Result<(), ConfigError> {
    let listener = std::net::TcpListener::bind(addr).map_err(|e| ConfigError::Serve {
        option: format!("--listen {addr}"),
        cause: e.to_string(),
    })?;
    serve_listener(cfg, listener, shutdown).await
}

/// Serves the agent on a socket bound already until `shutdown` resolves.
pub(crate) async fn serve_listener(
    cfg: AgentConfig,
    listener: std::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> Result<(), ConfigError> {
    let addr = listener.local_addr().map_err(|e| ConfigError::Serve {
        option: "--listen".into(),
        cause: e.to_string(),
    })?;
    let token = cfg.token.clone();
    // A session lives as long as its coordinator's connection. A coordinator whose host or
    // network is lost is given up by the kernel within the heartbeat timeout (keep-alive
    // probes and a limit on unacknowledged data, answered without waking the coordinator); a
    // coordinator process that is alive but answers nothing (Ctrl-Z) is found by an HTTP/2
    // ping after twice the timeout without a byte, and closed when the ping is not answered
    // in one more.
    let (ping, pong) = (cfg.heartbeat_timeout * 2, cfg.heartbeat_timeout);
    let liveness = crate::listen::Liveness {
        lost: cfg.heartbeat_timeout,
        quiet: ping + pong + Duration::from_secs(1),
    };
    let mut builder = tonic::transport::Server::builder()
        .http2_keepalive_interval(Some(ping))
        .http2_keepalive_timeout(Some(pong));
    if let Some((cert, key)) = &cfg.tls {
        let identity = tonic::transport::Identity::from_pem(cert, key);
        builder = builder
            .tls_config(tonic::transport::ServerTlsConfig::new().identity(identity))
            .map_err(|e| ConfigError::Serve {
                option: "--tls-cert/--tls-key".into(),
                cause: e.to_string(),
            })?;
    }
    let (incoming, connections) = crate::listen::guarded_incoming(listener, liveness)
        .await
        .map_err(|e| ConfigError::Serve {
            option: format!("--listen {addr}"),
            cause: e.to_string(),
        })?;
    let service = AgentService::new(cfg, connections.clone());
    let watchdog = service.clone();
    let on_shutdown = service.clone();
    let on_term = service.clone();
    let ticker = tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_secs(1));
        loop {
            every.tick().await;
            let w = watchdog.clone();
            let _ = tokio::task::spawn_blocking(move || w.watchdog_tick()).await;
        }
    });
    // A connection that carried the token is kept past the limit on unauthenticated ones,
    // and never evicted for another (`listen.rs`).
    let server = AgentServer::with_interceptor(service, move |req: Request<()>| {
        check_token(&token, &req)?;
        if let Some(peer) = req.remote_addr() {
            connections.authenticated(peer);
        }
        Ok(req)
    });
    // On SIGTERM or Ctrl-C: the running load stops at once and is reported to the coordinator
    // as this host's failure; then connections get a short grace, and idle ones no more.
    let (stopped_tx, stopped_rx) = tokio::sync::oneshot::channel::<()>();
    let on_signal = async move {
        shutdown.await;
        let s = on_term.clone();
        let _ = tokio::task::spawn_blocking(move || s.terminate()).await;
        let _ = stopped_tx.send(());
    };
    let serving = builder.add_service(server).serve_with_incoming_shutdown(
        tokio_stream::wrappers::ReceiverStream::new(incoming),
        on_signal,
    );
    let result = tokio::select! {
        r = serving => r.map_err(|e| ConfigError::Serve {
            option: format!("--listen {addr}"),
            cause: e.to_string(),
        }),
        _ = async {
            let _ = stopped_rx.await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => Ok(()),
    };
    ticker.abort();
    let _ = tokio::task::spawn_blocking(move || on_shutdown.end_session()).await;
    result
}
