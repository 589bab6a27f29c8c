//! The coordinator's side of a remote agent: [`RemoteAgent`] implements [`Agent`] over gRPC,
//! so the coordinator drives hosts across the network exactly as it drives the local one.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use stormark_spec::{LoadKind, StageLoad, Workload};
use stormark_stats::{HostSample, PhaseJob};
use tokio::runtime::Runtime;
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;
use tonic::Status;

use crate::agent::TargetOptions;
use crate::agent::{Agent, AgentError, AgentEvent, NetPeer, NetPeers, Sink, Validated};
use crate::auth::Bearer;
use crate::wire::pb::agent_client::AgentClient;
use crate::wire::pb::{self, event};
use crate::wire::{decode_parts, from_unix_ns, unix_ns};

mod errors;
mod hello;
mod link;
mod measured;
pub(crate) use errors::{agent_error, session_error};
pub use link::ClockProbe;
use measured::unmeasurable;

/// Silence after which an agent is taken for hung or cut off. Agents send something at least
/// every second, so 4 s of silence is not a slow agent; a failure is known within 5 s.
pub const SILENCE: Duration = Duration::from_secs(4);

type Client = AgentClient<InterceptedService<Channel, Bearer>>;

/// An agent on another host, reached over gRPC.
pub struct RemoteAgent {
    address: String,
    rt: Arc<Runtime>,
    client: Client,
    session: String,
    host: String,
    inventory: stormark_stats::Inventory,
    /// Agent clock minus coordinator clock, ns.
    offset_ns: i64,
    /// The round trip `offset_ns` was measured over.
    rtt: Duration,
    target: TargetOptions,
    index: u32,
    hosts: u32,
    stop: Arc<AtomicBool>,
    workers: Vec<Vec<u32>>,
    notes: Vec<String>,
    /// The net jobs' session reports of the stages since they were last taken.
    net_reports: Vec<stormark_stats::NetReport>,
    finished: Option<pb::FinishReply>,
    /// When the host sampler started at validation, on the agent's clock (ns since the Unix
    /// epoch).
    sampling_since: Option<i64>,
}

/// This coordinator as an agent busy with it names it to others, `host:pid`: read once for a
/// fleet, not once an agent.
fn coordinator_name() -> &'static str {
    static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NAME.get_or_init(|| {
        format!(
            "{}:{}",
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_string())
                .unwrap_or_else(|_| "?".into()),
            std::process::id()
        )
    })
}

impl RemoteAgent {
    /// Connects to the agent at `address` (`host:port`), opens a session and estimates its
    /// clock offset. `index` is the host's place in the run; `stop` is the coordinator's.
    /// With `tls_ca` (PEM), the connection is TLS and the agent's certificate must chain to
    /// that CA and name the host. An agent still removing its last run's files is waited for
    /// (up to 10 minutes, or until `stop`), the wait said once through `say`.
    #[allow(clippy::too_many_arguments)]
    pub fn connect(
        rt: Arc<Runtime>,
        address: &str,
        token: &str,
        tls_ca: Option<&[u8]>,
        target: TargetOptions,
        index: u32,
        stop: Arc<AtomicBool>,
        say: &(dyn Fn(&str) + Sync),
    ) -> Result<RemoteAgent, AgentError> {
        let refused = |message: String| AgentError::RemoteRefused {
            agent: address.to_string(),
            message,
        };
        let channel = link::channel(&rt, address, tls_ca)?;
        let bearer: MetadataValue<_> = format!("Bearer {token}")
            .parse()
            .map_err(|_| refused("the token holds characters a header cannot carry".into()))?;
        let mut client = AgentClient::with_interceptor(channel, Bearer(bearer))
            .max_decoding_message_size(64 << 20);
        let (hello, sent, elapsed) =
            hello::handshake(&rt, &mut client, address, tls_ca, &stop, say)?;
        // The first offset, from the handshake itself: exact enough for the host's samples;
        // a stage's start is named by the clocks measured before it.
        let (rtt, offset_ns) = link::offset(sent, elapsed, hello.received_unix_ns, hello.unix_ns);
        let session = hello.session.clone();
        let inventory = serde_json::from_str(&hello.inventory_json).unwrap_or_default();
        Ok(RemoteAgent {
            address: address.to_string(),
            rt,
            client,
            session,
            host: hello.host,
            inventory,
            offset_ns,
            rtt,
            target,
            index,
            hosts: 1,
            stop,
            workers: Vec::new(),
            notes: Vec::new(),
            net_reports: Vec::new(),
            finished: None,
            sampling_since: None,
        })
    }

    /// The number of hosts in the run (shares an open-loop rate among them).
    pub fn with_hosts(mut self, hosts: u32) -> RemoteAgent {
        self.hosts = hosts.max(1);
        self
    }

    /// The agent's clock minus ours, ns (as measured at connection).
    pub fn clock_offset_ns(&self) -> i64 {
        self.offset_ns
    }

    /// The address the agent was reached at, as given (`host:port`).
    pub fn address_str(&self) -> &str {
        &self.address
    }

    fn session_req(&self) -> pb::SessionRequest {
        pb::SessionRequest {
            session: self.session.clone(),
        }
    }

    /// The request that runs stage `index` with `load`, starting at `start_at`.
    fn stage_req(
        &self,
        index: usize,
        load: &StageLoad,
        peers: &[NetPeer],
        start_at: Option<SystemTime>,
    ) -> pb::RunStageRequest {
        pb::RunStageRequest {
            session: self.session.clone(),
            stage: index as u32,
            // The named start, on the agent's clock.
            start_at_unix_ns: start_at.map_or(0, |t| unix_ns(t).saturating_add(self.offset_ns)),
            jobs: load.jobs,
            iodepth: load.iodepth,
            rate_iops: load.rate_iops,
            bs: load.bs,
            size: load.size,
            meta_op: load.meta_op.map(|o| o.index()),
            meta_items: load.meta_items,
            net_to: peers
                .iter()
                .map(|p| pb::NetPeer {
                    host: p.host,
                    address: p.address.to_string(),
                })
                .collect(),
        }
    }

    /// What reading a phase's stream needs of this agent, owned.
    fn reader(&self) -> Reader {
        Reader {
            address: self.address.clone(),
            offset: self.offset_ns,
            stop: self.stop.clone(),
            stopper: self.client.clone(),
            session: self.session_req(),
        }
    }

    /// Reads a phase's event stream to its end on this thread, handing events to `on_event`.
    fn pump(
        &mut self,
        stream: impl Future<Output = Result<tonic::Response<tonic::Streaming<pb::Event>>, Status>>,
        on_event: &mut dyn FnMut(AgentEvent<'_>),
    ) -> Result<Vec<PhaseJob>, AgentError> {
        let read = self.rt.block_on(self.reader().read(stream, on_event));
        self.ended(read)
    }

    /// [`RemoteAgent::pump`], the stream read by a task of the connections' runtime that hands
    /// each event to `sink` itself: the calling thread sleeps until the phase ends instead of
    /// being woken for every event (a thousand agents' seconds were a thousand thread wake-ups
    /// a second).
    fn pump_into(
        &mut self,
        stream: impl Future<Output = Result<tonic::Response<tonic::Streaming<pb::Event>>, Status>>
            + Send
            + 'static,
        mut sink: Sink,
    ) -> Result<Vec<PhaseJob>, AgentError> {
        let reader = self.reader();
        let task = self
            .rt
            .spawn(async move { reader.read(stream, &mut *sink).await });
        let read = self.rt.block_on(task).unwrap_or_else(|e| Read {
            jobs: Err(AgentError::RemoteFailed {
                agent: self.address.clone(),
                message: format!("reading its events failed: {e}"),
            }),
            notes: Vec::new(),
            net: Vec::new(),
        });
        self.ended(read)
    }

    /// A phase's stream read to its end: its notes and net reports kept, its jobs returned.
    fn ended(&mut self, read: Read) -> Result<Vec<PhaseJob>, AgentError> {
        self.notes.extend(
            read.notes
                .into_iter()
                .map(|n| format!("{}: {n}", self.address)),
        );
        self.net_reports.extend(read.net);
        read.jobs
    }

    /// The session ended (once; the agent then cleans up) and its reply, kept for the
    /// samples and notes that are asked for after.
    fn finish(&mut self) -> &mut pb::FinishReply {
        if self.finished.is_none() {
            let reply = self.end_session();
            self.finished = Some(reply);
        }
        self.finished.get_or_insert_with(Default::default)
    }

    /// The Finish call; its failure said as a note.
    fn end_session(&self) -> pb::FinishReply {
        let mut client = self.client.clone();
        let req = self.session_req();
        let reply = self
            .rt
            .block_on(async { tokio::time::timeout(SILENCE, client.finish(req)).await });
        match reply {
            Ok(Ok(r)) => r.into_inner(),
            Ok(Err(s)) => pb::FinishReply {
                notes: vec![format!("cleanup failed: {}", s.message())],
                ..Default::default()
            },
            Err(_) => pb::FinishReply {
                notes: vec![format!(
                    "cleanup: no answer in {} s; the agent cleans up on its own once it hears nothing",
                    SILENCE.as_secs()
                )],
                ..Default::default()
            },
        }
    }
}

/// Reads one phase's event stream of an agent.
struct Reader {
    address: String,
    offset: i64,
    stop: Arc<AtomicBool>,
    stopper: Client,
    session: pb::SessionRequest,
}

/// A phase's stream read to its end.
struct Read {
    jobs: Result<Vec<PhaseJob>, AgentError>,
    notes: Vec<String>,
    net: Vec<stormark_stats::NetReport>,
}

impl Reader {
    /// Reads the stream to its end, turning events into [`AgentEvent`]s. Silence for
    /// [`SILENCE`] (the agent sends an event at least every 2 s, a tick when it has nothing
    /// else) means the agent hung or the link is cut.
    async fn read<F: FnMut(AgentEvent<'_>) + ?Sized>(
        self,
        stream: impl Future<Output = Result<tonic::Response<tonic::Streaming<pb::Event>>, Status>>,
        on_event: &mut F,
    ) -> Read {
        let mut read = Read {
            jobs: Ok(Vec::new()),
            notes: Vec::new(),
            net: Vec::new(),
        };
        read.jobs = self
            .events(stream, on_event, &mut read.notes, &mut read.net)
            .await;
        read
    }

    async fn events<F: FnMut(AgentEvent<'_>) + ?Sized>(
        &self,
        stream: impl Future<Output = Result<tonic::Response<tonic::Streaming<pb::Event>>, Status>>,
        on_event: &mut F,
        notes: &mut Vec<String>,
        net: &mut Vec<stormark_stats::NetReport>,
    ) -> Result<Vec<PhaseJob>, AgentError> {
        let Reader {
            address,
            offset,
            stop,
            stopper,
            session,
        } = self;
        let offset = *offset;
        // Before the call is sent: the stage starts after it, and its seconds after that.
        let opened = tokio::time::Instant::now();
        let mut stream = stream
            .await
            .map_err(|s| session_error(address, s))?
            .into_inner();
        let mut stop_sent = false;
        // One timer for the stream, moved on only when it fires: a timer made and dropped
        // for each event cost more than reading the event (a thousand agents a second).
        let silence = tokio::time::sleep(SILENCE);
        tokio::pin!(silence);
        let mut heard = tokio::time::Instant::now();
        loop {
            if !stop_sent && stop.load(Ordering::Relaxed) {
                stop_sent = true;
                let mut c = stopper.clone();
                let s = session.clone();
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(SILENCE, c.stop(s)).await;
                });
            }
            let next = tokio::select! {
                biased;
                m = stream.message() => Ok(m),
                () = &mut silence => Err(heard.elapsed()),
            };
            let event = match next {
                Err(quiet) if quiet < SILENCE => {
                    silence.as_mut().reset(heard + SILENCE);
                    continue;
                }
                Err(_) => {
                    return Err(AgentError::RemoteFailed {
                        agent: address.to_string(),
                        message: format!(
                            "no word for {} s: hung, or the network is cut",
                            SILENCE.as_secs()
                        ),
                    })
                }
                Ok(Err(s)) => return Err(session_error(address, s)),
                Ok(Ok(None)) => {
                    return Err(AgentError::RemoteFailed {
                        agent: address.to_string(),
                        message: "the stream ended before the phase did".into(),
                    })
                }
                Ok(Ok(Some(e))) => {
                    heard = tokio::time::Instant::now();
                    e
                }
            };
            match event.kind {
                Some(event::Kind::StartedUnixNs(ns)) => on_event(AgentEvent::Started {
                    at: from_unix_ns(ns.saturating_sub(offset)),
                }),
                Some(event::Kind::Interval(i)) => {
                    let (ops, errors, verified) =
                        i.snapshot.as_ref().and_then(decode_parts).ok_or_else(|| {
                            AgentError::RemoteFailed {
                                agent: address.to_string(),
                                message: "a malformed snapshot".into(),
                            }
                        })?;
                    let at_ns = u64::from(i.interval).saturating_mul(1_000_000_000);
                    unmeasurable(address, "a second", at_ns, opened.elapsed())?;
                    on_event(AgentEvent::Interval {
                        job: i.job as u16,
                        worker: i.worker,
                        interval: i.interval,
                        second: crate::agent::Second::Parts(ops, Box::new(errors), verified),
                    });
                }
                Some(event::Kind::Done(d)) => {
                    unmeasurable(address, "an end", d.end_ns, opened.elapsed())?;
                    on_event(AgentEvent::Done {
                        job: d.job as u16,
                        worker: d.worker,
                        end_ns: d.end_ns,
                        failure: (!d.failure.is_empty()).then_some(d.failure.as_str()),
                    })
                }
                Some(event::Kind::Tick(_)) | None => on_event(AgentEvent::Tick),
                Some(event::Kind::Finished(f)) => {
                    *notes = f.notes;
                    *net = f.net.into_iter().map(crate::wire::decode_net).collect();
                    return Ok(f.jobs.into_iter().map(crate::wire::decode_job).collect());
                }
            }
        }
    }
}

impl Drop for RemoteAgent {
    /// A session never finished (another agent refused at connect, the run stopped early) is
    /// released at once, so that a corrected re-run is not refused as busy.
    fn drop(&mut self) {
        if self.finished.is_none() && tokio::runtime::Handle::try_current().is_err() {
            let mut client = self.client.clone();
            let req = self.session_req();
            let _ = self.rt.block_on(async {
                tokio::time::timeout(Duration::from_secs(1), client.finish(req)).await
            });
        }
    }
}

impl Agent for RemoteAgent {
    fn host(&self) -> &str {
        &self.host
    }

    fn clock_probe(&self) -> Option<ClockProbe> {
        Some(ClockProbe::new(
            self.address.clone(),
            self.rt.clone(),
            self.client.clone(),
            self.session.clone(),
        ))
    }

    fn keep_clock(&mut self, measured: Option<crate::agent::Clock>) -> Option<crate::agent::Clock> {
        // A failed measurement keeps the last offset: the phase call itself reports a host
        // that is gone.
        if let Some(c) = measured {
            self.rtt = Duration::from_nanos(c.rtt_ns);
            self.offset_ns = c.offset_ns;
        }
        Some(crate::agent::Clock {
            offset_ns: self.offset_ns,
            rtt_ns: self.rtt.as_nanos() as u64,
        })
    }

    fn address(&self) -> Option<String> {
        Some(self.address.clone())
    }

    fn inventory(&self) -> stormark_stats::Inventory {
        self.inventory.clone()
    }

    fn set_net_peers(&mut self, peers: NetPeers) {
        self.target.net_peers = Some(peers);
    }

    fn validate(&mut self, workload: &Workload) -> Result<Validated, AgentError> {
        let jobs = workload
            .jobs
            .iter()
            .map(|j| pb::JobSpec {
                options: j
                    .to_pairs()
                    .into_iter()
                    .filter(|(k, _)| *k != "kind")
                    .map(|(k, v)| pb::KeyValue {
                        key: k.to_string(),
                        value: v,
                    })
                    .collect(),
                kind: match j.kind {
                    LoadKind::File => pb::LoadKind::File,
                    LoadKind::Null => pb::LoadKind::Null,
                    LoadKind::S3 => pb::LoadKind::S3,
                    LoadKind::Net => pb::LoadKind::Net,
                    LoadKind::Meta => pb::LoadKind::Meta,
                } as i32,
            })
            .collect();
        let t = &self.target;
        let req = pb::ValidateRequest {
            session: self.session.clone(),
            target: t.path.to_string_lossy().into_owned(),
            keep: t.keep,
            reuse: t.reuse,
            allow_overwrite: t.allow_overwrite,
            allow_device_write: t.allow_device_write,
            force: t.force,
            prepare: workload.prepare,
            jobs,
            index: self.index,
            hosts: self.hosts,
            run: t.run.clone(),
            create_file: t.create_file,
            net_token: t.net_token.clone(),
            net_peers: t.net_peers.as_ref().map(|p| pb::NetPeers {
                ips: p.ips.iter().map(ToString::to_string).collect(),
                token: p.token.clone(),
            }),
            s3: t.s3.as_ref().map(|a| pb::S3Access {
                access_key: a.credentials.access_key.clone(),
                secret_key: a.credentials.secret_key.clone(),
                create_bucket: a.create_bucket,
                insecure: a.insecure,
                endpoint: a.endpoint.clone().unwrap_or_default(),
            }),
            // The sampler starts with validation: the StartSampling round trip saved.
            start_sampling: true,
        };
        let mut client = self.client.clone();
        let reply = self
            .rt
            .block_on(client.validate(req))
            .map_err(|s| agent_error(&self.address, s))?
            .into_inner();
        self.workers = reply.stages.iter().map(|s| s.workers.clone()).collect();
        self.sampling_since =
            (reply.sampling_since_unix_ns != 0).then_some(reply.sampling_since_unix_ns);
        let mut v: Validated = crate::wire::decode_validated(reply);
        for n in &mut v.notes {
            *n = format!("{}: {n}", self.address);
        }
        Ok(v)
    }

    fn prepare(
        &mut self,
        on_event: &mut dyn FnMut(AgentEvent<'_>),
    ) -> Result<Vec<PhaseJob>, AgentError> {
        let mut client = self.client.clone();
        let req = self.session_req();
        self.pump(async move { client.prepare(req).await }, on_event)
    }

    fn prepare_into(&mut self, sink: Sink) -> Result<Vec<PhaseJob>, AgentError> {
        let mut client = self.client.clone();
        let req = self.session_req();
        self.pump_into(async move { client.prepare(req).await }, sink)
    }

    fn run_stage(
        &mut self,
        index: usize,
        load: &StageLoad,
        peers: &[NetPeer],
        start_at: Option<SystemTime>,
        on_event: &mut dyn FnMut(AgentEvent<'_>),
    ) -> Result<Vec<PhaseJob>, AgentError> {
        let mut client = self.client.clone();
        let req = self.stage_req(index, load, peers, start_at);
        self.pump(async move { client.run_stage(req).await }, on_event)
    }

    fn run_stage_into(
        &mut self,
        index: usize,
        load: &StageLoad,
        peers: &[NetPeer],
        start_at: Option<SystemTime>,
        sink: Sink,
    ) -> Result<Vec<PhaseJob>, AgentError> {
        let mut client = self.client.clone();
        let req = self.stage_req(index, load, peers, start_at);
        self.pump_into(async move { client.run_stage(req).await }, sink)
    }

    fn cleanup(&mut self) -> Vec<String> {
        let said = self.finish().notes.clone();
        let mut notes = std::mem::take(&mut self.notes);
        notes.extend(said.into_iter().map(|n| format!("{}: {n}", self.address)));
        notes
    }

    fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    fn take_net(&mut self) -> Vec<stormark_stats::NetReport> {
        std::mem::take(&mut self.net_reports)
    }

    fn workers(&self, stage: crate::agent::Stage) -> Vec<u32> {
        let stage = match stage {
            // The preparation's workers are known only as they report.
            crate::agent::Stage::Prepare => return Vec::new(),
            crate::agent::Stage::Run(n) => n,
        };
        self.workers.get(stage).cloned().unwrap_or_default()
    }

    fn start_sampling(&mut self) {
        if self.sampling_since.is_some() {
            return;
        }
        let mut client = self.client.clone();
        let req = self.session_req();
        if let Err(s) = self.rt.block_on(client.start_sampling(req)) {
            self.notes.push(format!(
                "{}: host sampler could not start: {}",
                self.address,
                s.message()
            ));
        }
    }

    fn sampling_since(&self) -> Option<SystemTime> {
        self.sampling_since
            .map(|ns| crate::wire::from_unix_ns(ns.saturating_sub(self.offset_ns)))
    }

    fn stop_sampling(&mut self) -> (Vec<HostSample>, Option<u64>) {
        // Taken, not copied: a thousand hosts' samples are the largest part of a run's end.
        let reply = self.finish();
        let samples = std::mem::take(&mut reply.samples);
        (crate::wire::decode_samples(samples), reply.sampler_cpu_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::link::one_cause;

    #[test]
    fn causes_are_said_once() {
        assert_eq!(
            one_cause("dns error: dns error: failed to lookup address information"),
            "dns error: failed to lookup address information"
        );
        assert_eq!(
            one_cause("tcp connect error: tcp connect error: Connection refused (os error 111)"),
            "tcp connect error: Connection refused (os error 111)"
        );
        assert_eq!(
            one_cause("status: interrupted: interrupted"),
            "status: interrupted"
        );
    }
}
