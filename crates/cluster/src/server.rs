//! `stormark agent`: the gRPC service that runs a coordinator's load on this host.
//!
//! Every call must carry the agent's token (compared in constant time). Targets must lie under
//! one of the agent's `--allow-path` directories or devices. One coordinator at a time: a
//! second is refused while a session is open. A coordinator that goes silent (no heartbeat for
//! [`AgentConfig::heartbeat_timeout`]) loses its session: the load stops, the run directory is
//! removed, and the next coordinator is welcome. The agent runs nothing but stormark's own
//! engine: no command from the wire is ever executed.

use std::net::SocketAddr;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use stormark_probe::Inventory;
use stormark_spec::{JobOpts, LoadKind, Source, StageLoad, Workload};
use subtle::ConstantTimeEq;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::Stream;
use tonic::{Request, Response, Status};

use crate::agent::{Agent, AgentError, AgentEvent, TargetOptions};
use crate::local::LocalAgent;
use crate::wire::pb::agent_server::{Agent as AgentRpc, AgentServer};
use crate::wire::pb::{self, event};
use crate::wire::{encode_parts, encode_snapshot, from_unix_ns, unix_ns};

/// How an agent is set up. Its `Debug` output never shows the token.
#[derive(Clone)]
pub struct AgentConfig {
    /// The shared secret every call must carry.
    pub token: String,
    /// Directories and devices coordinators may use (canonical paths).
    pub allow: Vec<PathBuf>,
    /// Block devices coordinators may use (`st_rdev`): those named by `--allow-device`, and
    /// by `--allow-path` when it names a device. A device node found under an allowed
    /// directory is refused unless it names one of these.
    pub devices: Vec<u64>,
    /// Coordinator silence after which its session ends.
    pub heartbeat_timeout: Duration,
    /// Certificate chain and private key (PEM) to serve TLS with; plain HTTP/2 without.
    pub tls: Option<(Vec<u8>, Vec<u8>)>,
    /// The journal of run directories created and not yet removed (`--state-dir`).
    pub journal: Option<crate::Journal>,
}

/// What a coordinator hears when the agent was stopped during its phase.
const TERMINATED: &str =
    "the agent was stopped (SIGTERM or Ctrl-C on its host) during the phase; its load ended early";

impl std::fmt::Debug for AgentConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentConfig")
            .field("token", &"<redacted>")
            .field("allow", &self.allow)
            .field("devices", &self.devices)
            .field("heartbeat_timeout", &self.heartbeat_timeout)
            .field("tls", &self.tls.as_ref().map(|_| "<certificate and key>"))
            .field("journal", &self.journal)
            .finish()
    }
}

/// Shortest token accepted: 16 bytes, so that guessing is hopeless.
pub const MIN_TOKEN_LEN: usize = 16;

impl AgentConfig {
    /// Reads the token file and resolves the allowed paths. Errors are one line for the user.
    pub fn new(token_file: &Path, allow: &[PathBuf]) -> Result<AgentConfig, String> {
        let token = read_token(token_file)?;
        if allow.is_empty() {
            return Err(
                "--allow-path: give at least one directory or device coordinators may use, such as --allow-path /mnt/bench"
                    .into(),
            );
        }
        let allow = allow
            .iter()
            .map(|p| {
                std::fs::canonicalize(p).map_err(|e| format!("--allow-path {}: {e}", p.display()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let devices = allow
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .filter(|m| m.file_type().is_block_device())
            .map(|m| m.rdev())
            .collect();
        Ok(AgentConfig {
            token,
            allow,
            devices,
            heartbeat_timeout: Duration::from_secs(5),
            tls: None,
            journal: None,
        })
    }

    /// Also allows the block devices `devices` (`--allow-device`), checked by device number.
    pub fn with_devices(mut self, devices: &[PathBuf]) -> Result<AgentConfig, String> {
        for d in devices {
            let meta =
                std::fs::metadata(d).map_err(|e| format!("--allow-device {}: {e}", d.display()))?;
            if !meta.file_type().is_block_device() {
                return Err(format!(
                    "--allow-device {}: not a block device; give a device such as /dev/nvme1n1 (directories go to --allow-path)",
                    d.display()
                ));
            }
            self.devices.push(meta.rdev());
            if let Ok(real) = std::fs::canonicalize(d) {
                self.allow.push(real);
            }
        }
        Ok(self)
    }

    /// Warnings about a set-up that works but exposes more than it should: printed at start.
    pub fn warnings(&self, listen: &std::net::SocketAddr, token_file: &Path) -> Vec<String> {
        let mut out = Vec::new();
        if self.tls.is_none() && !listen.ip().is_loopback() {
            out.push(format!("listening on {listen} without TLS: the token and every request travel in clear; give --tls-cert and --tls-key (docs/security.md)"));
        }
        if let Ok(m) = std::fs::metadata(token_file) {
            if m.mode() & 0o077 != 0 {
                out.push(format!(
                    "--token-file {}: readable by group or others (mode {:o}); chmod 600 it",
                    token_file.display(),
                    m.mode() & 0o777
                ));
            }
        }
        if self.allow.iter().any(|p| p == Path::new("/")) {
            out.push("--allow-path /: coordinators may use any directory of this host".into());
        }
        out
    }

    /// Serves TLS with this certificate chain and key (PEM files).
    pub fn with_tls(mut self, cert: &Path, key: &Path) -> Result<AgentConfig, String> {
        let read = |flag: &str, p: &Path| {
            std::fs::read(p).map_err(|e| format!("{flag} {}: cannot read it: {e}", p.display()))
        };
        self.tls = Some((read("--tls-cert", cert)?, read("--tls-key", key)?));
        Ok(self)
    }

    /// Whether `target` lies under an allowed path; returns its canonical form.
    pub fn allowed(&self, target: &Path) -> Result<PathBuf, String> {
        let real = std::fs::canonicalize(target)
            .map_err(|e| format!("target {} on this agent: {e}", target.display()))?;
        if self.allow.iter().any(|root| real.starts_with(root)) {
            Ok(real)
        } else {
            Err(format!(
                "target {} is outside this agent's --allow-path list ({})",
                target.display(),
                self.allow
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        }
    }
}

/// Reads a token file: one line, at least [`MIN_TOKEN_LEN`] bytes.
pub fn read_token(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("--token-file {}: cannot read it: {e}", path.display()))?;
    let token = text.trim().to_string();
    if token.len() < MIN_TOKEN_LEN
        || token.contains(char::is_whitespace)
        || token.contains(char::is_control)
    {
        return Err(format!(
            "--token-file {}: expected one line of at least {MIN_TOKEN_LEN} characters without spaces, such as the output of `head -c 32 /dev/urandom | base64`",
            path.display()
        ));
    }
    Ok(token)
}

/// Whether a call carries `authorization: Bearer <token>`; constant time in the token.
pub fn check_token(token: &str, req: &Request<()>) -> Result<(), Status> {
    let Some(value) = req.metadata().get("authorization") else {
        return Err(Status::unauthenticated(
            "no token: the coordinator must send this agent's token (--token-file)",
        ));
    };
    let given = value.as_bytes().strip_prefix(b"Bearer ").unwrap_or(b"");
    if bool::from(given.ct_eq(token.as_bytes())) {
        Ok(())
    } else {
        Err(Status::unauthenticated("wrong token"))
    }
}

struct Session {
    id: String,
    coordinator: String,
    since: SystemTime,
    last_heard: Instant,
    stop: Arc<AtomicBool>,
    agent: Option<Arc<Mutex<LocalAgent>>>,
}

/// The agent service.
#[derive(Clone)]
pub struct AgentService {
    cfg: Arc<AgentConfig>,
    session: Arc<Mutex<Option<Session>>>,
    /// Set on SIGTERM or Ctrl-C: a phase that ends now ends as this host's failure.
    terminating: Arc<AtomicBool>,
}

/// The session's agent, shared between calls and the blocking thread that runs a phase.
type SharedAgent = Arc<Mutex<LocalAgent>>;

type EventStream = Pin<Box<dyn Stream<Item = Result<pb::Event, Status>> + Send>>;

impl AgentService {
    /// A service configured by `cfg`.
    pub fn new(cfg: AgentConfig) -> AgentService {
        AgentService {
            cfg: Arc::new(cfg),
            session: Arc::new(Mutex::new(None)),
            terminating: Arc::new(AtomicBool::new(false)),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Session>> {
        self.session.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The session's agent and stop flag, after checking the id; hearing from the coordinator.
    fn session(&self, id: &str) -> Result<(Arc<AtomicBool>, Option<SharedAgent>), Status> {
        let mut guard = self.lock();
        match guard.as_mut() {
            Some(s) if s.id == id => {
                s.last_heard = Instant::now();
                Ok((s.stop.clone(), s.agent.clone()))
            }
            _ => Err(Status::failed_precondition(
                "no such session: it ended (coordinator silent too long?); start the run again",
            )),
        }
    }

    fn agent(&self, id: &str) -> Result<(Arc<AtomicBool>, SharedAgent), Status> {
        match self.session(id)? {
            (stop, Some(agent)) => Ok((stop, agent)),
            _ => Err(Status::failed_precondition("validate first")),
        }
    }

    /// Ends a session whose coordinator went silent: stops the load, and once it has stopped
    /// removes what the run created. Called once a second.
    pub fn watchdog_tick(&self) {
        let ended = {
            let mut guard = self.lock();
            let stale = guard
                .as_ref()
                .is_some_and(|s| s.last_heard.elapsed() > self.cfg.heartbeat_timeout);
            if !stale {
                return;
            }
            let s = guard.as_ref().expect("checked above");
            s.stop.store(true, Ordering::Relaxed);
            // Wait for a running phase to notice the stop before cleaning up.
            let idle = s.agent.as_ref().is_none_or(|a| a.try_lock().is_ok());
            if !idle {
                return;
            }
            guard.take()
        };
        if let Some(s) = ended {
            eprintln!(
                "stormark agent: coordinator {} silent for over {} s: load stopped, cleaning up",
                s.coordinator,
                self.cfg.heartbeat_timeout.as_secs()
            );
            finish(s.agent);
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

    /// Ends the session, if any, on the agent's shutdown: stops the load, waits for it, and
    /// removes what the run created.
    pub fn end_session(&self) {
        let s = self.lock().take();
        if let Some(s) = s {
            s.stop.store(true, Ordering::Relaxed);
            finish(s.agent);
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
        let (tx, rx) = mpsc::channel::<Result<pb::Event, Status>>(256);
        // A tick every second, whatever the engine is doing (creating large files, say), so
        // the coordinator can tell a busy agent from a dead one.
        let done = Arc::new(AtomicBool::new(false));
        let (ticker_tx, ticker_done) = (tx.clone(), done.clone());
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(1));
            loop {
                every.tick().await;
                if ticker_done.load(Ordering::Relaxed) {
                    break;
                }
                let tick = pb::Event {
                    kind: Some(event::Kind::Tick(pb::Empty {})),
                };
                if ticker_tx.send(Ok(tick)).await.is_err() {
                    break;
                }
            }
        });
        tokio::task::spawn_blocking(move || {
            let mut agent = agent.lock().unwrap_or_else(|e| e.into_inner());
            let send = |e: pb::Event| {
                if tx.blocking_send(Ok(e)).is_err() {
                    // The coordinator is gone: stop the load.
                    stop.store(true, Ordering::Relaxed);
                }
            };
            let result = phase(&mut agent, &mut |e| {
                let kind = match e {
                    AgentEvent::Started { at } => event::Kind::StartedUnixNs(unix_ns(at)),
                    AgentEvent::Interval {
                        job,
                        worker,
                        interval,
                        snap,
                    } => event::Kind::Interval(pb::Interval {
                        job: job.into(),
                        worker,
                        interval,
                        snapshot: Some(encode_snapshot(snap)),
                    }),
                    AgentEvent::IntervalOwned {
                        job,
                        worker,
                        interval,
                        ops,
                        errors,
                    } => event::Kind::Interval(pb::Interval {
                        job: job.into(),
                        worker,
                        interval,
                        snapshot: Some(encode_parts(ops.iter().map(|(o, r)| (*o, r)), &errors)),
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
                        jobs_json: serde_json::to_string(&jobs).expect("jobs serialize"),
                        notes: agent.take_notes(),
                    })),
                }),
                Err(AgentError::Refused(m)) => Err(Status::failed_precondition(m)),
                Err(AgentError::Failed(m)) => Err(Status::aborted(m)),
            };
            done.store(true, Ordering::Relaxed);
            let _ = tx.blocking_send(last);
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }
}

/// Stops sampling and removes what the run created; returns the samples and notes.
fn finish(agent: Option<Arc<Mutex<LocalAgent>>>) -> pb::FinishReply {
    let Some(agent) = agent else {
        return pb::FinishReply::default();
    };
    let mut agent = agent.lock().unwrap_or_else(|e| e.into_inner());
    let (samples, cpu) = agent.stop_sampling();
    let mut notes = agent.take_notes();
    notes.extend(agent.cleanup());
    pb::FinishReply {
        samples_json: serde_json::to_string(&samples).expect("samples serialize"),
        sampler_cpu_ns: cpu.unwrap_or(0),
        sampler_cpu_known: cpu.is_some(),
        notes,
    }
}

fn session_id() -> String {
    let mut bytes = [0u8; 16];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        use std::io::Read;
        let _ = f.read_exact(&mut bytes);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tonic::async_trait]
impl AgentRpc for AgentService {
    async fn handshake(
        &self,
        req: Request<pb::HandshakeRequest>,
    ) -> Result<Response<pb::HandshakeReply>, Status> {
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
                last_heard: Instant::now(),
                stop: Arc::new(AtomicBool::new(false)),
                agent: None,
            });
        }
        let inv = tokio::task::spawn_blocking(Inventory::collect)
            .await
            .map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(pb::HandshakeReply {
            version: version.into(),
            session: id,
            host: inv.hostname.clone(),
            inventory_json: serde_json::to_string(&inv).expect("an inventory serializes"),
            heartbeat_timeout_s: self.cfg.heartbeat_timeout.as_secs() as u32,
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

    async fn heartbeat(
        &self,
        req: Request<pb::SessionRequest>,
    ) -> Result<Response<pb::Empty>, Status> {
        self.session(&req.into_inner().session)?;
        Ok(Response::new(pb::Empty {}))
    }

    async fn validate(
        &self,
        req: Request<pb::ValidateRequest>,
    ) -> Result<Response<pb::ValidateReply>, Status> {
        let req = req.into_inner();
        let (stop, _) = self.session(&req.session)?;
        let mut jobs = Vec::new();
        for (i, spec) in req.jobs.iter().enumerate() {
            let mut opts = JobOpts::default();
            let context = format!("job {} from the coordinator", i + 1);
            let kind = match pb::LoadKind::try_from(spec.kind) {
                Ok(pb::LoadKind::File) => LoadKind::File,
                Ok(pb::LoadKind::Null) => LoadKind::Null,
                Err(_) => {
                    return Err(Status::invalid_argument(format!(
                        "{context}: a kind of load this agent does not know ({}); run the same stormark version on both",
                        spec.kind
                    )))
                }
            };
            opts.kind = Some(kind);
            for kv in &spec.options {
                opts.set(&kv.key, &kv.value, Source::Key(&context))
                    .map_err(|e| Status::invalid_argument(e.to_string()))?;
            }
            jobs.push(
                opts.resolve(&format!("job{}", i + 1))
                    .map_err(|e| Status::invalid_argument(e.to_string()))?,
            );
        }
        // Only file load touches a path: then it must lie under an --allow-path.
        let target = if jobs.iter().any(|j| j.kind.needs_target()) {
            self.cfg
                .allowed(Path::new(&req.target))
                .map_err(Status::permission_denied)?
        } else {
            PathBuf::new()
        };
        let workload = Workload::new(jobs, req.prepare)
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        let opts = TargetOptions {
            path: target,
            keep: req.keep,
            reuse: req.reuse,
            allow_overwrite: req.allow_overwrite,
            allow_device_write: req.allow_device_write,
            force: req.force,
            allowed_devices: Some(self.cfg.devices.clone()),
        };
        let index = u64::from(req.index);
        let hosts = req.hosts.max(1);
        let journal = self.cfg.journal.clone();
        let (validated, agent) = tokio::task::spawn_blocking(move || {
            let mut agent = LocalAgent::new(opts)
                .with_journal(journal)
                .with_stop(stop)
                .with_seed_salt(index)
                .with_hosts(hosts);
            let v = agent.validate(&workload);
            (v, agent)
        })
        .await
        .map_err(|e| Status::internal(e.to_string()))?;
        let validated = validated.map_err(|e| match e {
            AgentError::Refused(m) => Status::failed_precondition(m),
            AgentError::Failed(m) => Status::aborted(m),
        })?;
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
        Ok(Response::new(pb::ValidateReply {
            validated_json: serde_json::to_string(&validated).expect("validation serializes"),
            stages,
        }))
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
            jobs: (req.jobs > 0).then_some(req.jobs),
            iodepth: (req.iodepth > 0).then_some(req.iodepth),
            rate_iops: (req.rate_iops > 0.0 && req.rate_iops.is_finite()).then_some(req.rate_iops),
            bs: (req.bs > 0).then_some(req.bs),
            size: (req.size > 0).then_some(req.size),
        };
        self.stream_phase(&req.session, move |agent, sink| {
            agent.run_stage(stage, &load, start_at, sink)
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
        let (stop, agent) = self.session(&id)?;
        stop.store(true, Ordering::Relaxed);
        let reply = tokio::task::spawn_blocking(move || finish(agent))
            .await
            .map_err(|e| Status::internal(e.to_string()))?;
        let mut guard = self.lock();
        if guard.as_ref().is_some_and(|s| s.id == id) {
            *guard = None;
        }
        Ok(Response::new(reply))
    }
}

/// How long connections may finish after SIGTERM before the agent exits anyway.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// Serves the agent on `addr` until `shutdown` resolves.
pub async fn serve(
    cfg: AgentConfig,
    addr: SocketAddr,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> Result<(), String> {
    let token = cfg.token.clone();
    let mut builder = tonic::transport::Server::builder();
    if let Some((cert, key)) = &cfg.tls {
        let identity = tonic::transport::Identity::from_pem(cert, key);
        builder = builder
            .tls_config(tonic::transport::ServerTlsConfig::new().identity(identity))
            .map_err(|e| format!("--tls-cert/--tls-key: {e}"))?;
    }
    let service = AgentService::new(cfg);
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
    let server = AgentServer::with_interceptor(service, move |req: Request<()>| {
        check_token(&token, &req).map(|()| req)
    });
    let incoming = crate::listen::guarded_incoming(addr)
        .await
        .map_err(|e| format!("--listen {addr}: {e}"))?;
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
        r = serving => r.map_err(|e| format!("--listen {addr}: {e}")),
        _ = async {
            let _ = stopped_rx.await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => Ok(()),
    };
    ticker.abort();
    let _ = tokio::task::spawn_blocking(move || on_shutdown.end_session()).await;
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_token() {
        let cfg = AgentConfig {
            token: "s3cret-s3cret-s3cret".into(),
            allow: vec![],
            devices: vec![],
            heartbeat_timeout: Duration::from_secs(5),
            tls: None,
            journal: None,
        };
        assert!(!format!("{cfg:?}").contains("s3cret"));
    }

    #[test]
    fn tokens_are_checked() {
        let mut req = Request::new(());
        assert_eq!(
            check_token("s3cret-s3cret-s3cret", &req)
                .unwrap_err()
                .code(),
            tonic::Code::Unauthenticated
        );
        req.metadata_mut()
            .insert("authorization", "Bearer nope".parse().unwrap());
        let e = check_token("s3cret-s3cret-s3cret", &req).unwrap_err();
        assert_eq!(e.message(), "wrong token");
        req.metadata_mut().insert(
            "authorization",
            "Bearer s3cret-s3cret-s3cret".parse().unwrap(),
        );
        assert!(check_token("s3cret-s3cret-s3cret", &req).is_ok());
    }

    #[test]
    fn token_files_and_allowed_paths() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("token");
        std::fs::write(&f, "short\n").unwrap();
        assert!(read_token(&f).unwrap_err().contains("at least 16"));
        std::fs::write(&f, "0123456789abcdef\x070123\n").unwrap();
        assert!(read_token(&f).is_err(), "control characters are refused");
        std::fs::write(&f, "0123456789abcdef0123\n").unwrap();
        assert_eq!(read_token(&f).unwrap(), "0123456789abcdef0123");
        assert!(AgentConfig::new(&f, &[])
            .unwrap_err()
            .contains("--allow-path"));
        let inside = dir.path().join("bench");
        std::fs::create_dir(&inside).unwrap();
        let cfg = AgentConfig::new(&f, std::slice::from_ref(&inside)).unwrap();
        assert!(cfg.allowed(&inside).is_ok());
        // `..` and symbolic links are resolved before the check.
        assert!(cfg.allowed(&inside.join("..")).is_err());
        std::os::unix::fs::symlink(dir.path(), inside.join("escape")).unwrap();
        let err = cfg.allowed(&inside.join("escape")).unwrap_err();
        assert!(
            err.contains("outside this agent's --allow-path list"),
            "{err}"
        );
        assert!(cfg.allowed(Path::new("/does/not/exist")).is_err());
    }
}
