//! An S3 run's place in its bucket: checked before any load (the service answers, the clocks
//! agree, the keys are accepted, the bucket exists), a key prefix of its own that no other run
//! uses, the objects GET and HEAD read, and at the end the removal of every key under that
//! prefix, which are exactly the keys this run wrote (`cleanup.rs`; on an agent, what the
//! run's end could not settle is swept beside its service, `sweep.rs`).

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use stormark_engine::S3Work;
use stormark_s3::{Client, Config, Endpoint, S3Error};
use stormark_spec::{Job, S3Job, S3Op, StageLoad};
use stormark_stats::Op;

use crate::agent::{AgentError, S3Access};

mod cleanup;
mod sweep;

pub use cleanup::{remove_host_objects, remove_run_objects};
pub(super) use sweep::sweep_journaled;

/// The longest one request may take before it counts as a timeout.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Clocks further apart than this make every signature fail (S3 allows 15 minutes).
const MAX_SKEW: Duration = Duration::from_secs(5 * 60);

/// The run's prefix in the bucket, and how to reach it.
#[derive(Debug)]
pub(super) struct Bucket {
    config: Arc<Config>,
    /// The buckets the load spreads over (one, usually).
    buckets: Vec<String>,
    /// `<prefix>/<run id>/`: every key of this run starts with it.
    base: String,
    keep: bool,
    /// The run's id, common to its hosts (what `--remove-run` takes).
    run: String,
    /// This host's PUTs under `base` so far (its workers count them as they send them), when
    /// this is the host's own bucket of the run: its cleanup lists no more pages than they
    /// can fill. `None` where what was written is not known (a failed host's, `--remove-run`).
    puts: Option<Arc<AtomicU64>>,
    /// This host's PUTs that got no answer (its workers count them), when this is the host's
    /// own bucket of the run: the service may store them after the cleanup's listing.
    unanswered: Option<Arc<AtomicU64>>,
    /// `base` is `<prefix>/<run id>-h`, every host's: only keys under `<base><N>/` (N its
    /// digits) are the run's.
    every_host: bool,
    /// The endpoint's URL as given, and whether any certificate is accepted (`--insecure`):
    /// with the region and addressing, what the journal keeps for a sweep after a restart.
    url: String,
    insecure: bool,
}

fn map_err(option: String, e: S3Error) -> AgentError {
    let reason = match &e {
        S3Error::Refused => "nothing answers there (connection refused); is the service running, and is this its address?".to_string(),
        S3Error::Timeout => format!("no answer within {} s", REQUEST_TIMEOUT.as_secs()),
        S3Error::Tls(why) => format!(
            "TLS: {why}; for a certificate this host does not trust, trust its CA (SSL_CERT_FILE) or add --insecure"
        ),
        S3Error::Status { status: 403, code } => format!(
            "the service refused these keys ({}); check --access-key and --secret-key, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
            code.as_deref().unwrap_or("HTTP 403")
        ),
        other => other.to_string(),
    };
    AgentError::option(option, reason)
}

impl Bucket {
    /// Checks the service, the clocks, the keys and the bucket of `job`, before any load.
    /// `host` distinguishes the hosts of one run.
    pub fn open(
        job: &S3Job,
        access: &S3Access,
        keep: bool,
        run: &str,
        host: u32,
    ) -> Result<Bucket, AgentError> {
        let url = access.endpoint.as_deref().unwrap_or(&job.endpoint);
        let endpoint_opt = format!("--endpoint {url}");
        let endpoint = Endpoint::parse(url).map_err(|e| {
            AgentError::option(
                endpoint_opt.clone(),
                e.to_string()
                    .trim_start_matches(&format!("{endpoint_opt}: "))
                    .to_string(),
            )
        })?;
        let tls = if endpoint.https {
            Some(
                stormark_s3::tls_config(access.insecure)
                    .map_err(|e| map_err(endpoint_opt.clone(), e))?,
            )
        } else {
            None
        };
        // Decided on the endpoint in effect (a host's own, or the job's).
        let virtual_hosted = job
            .addressing
            .virtual_hosted(&endpoint.authority, &job.bucket);
        let config = Arc::new(Config {
            endpoint,
            region: job.region.clone(),
            virtual_hosted,
            credentials: access.credentials.clone(),
            timeout: REQUEST_TIMEOUT,
            tls,
        });
        let mut client =
            Client::new(config.clone()).map_err(|e| map_err(endpoint_opt.clone(), e))?;
        if let Some(theirs) = client
            .server_date()
            .map_err(|e| map_err(endpoint_opt.clone(), e))?
        {
            let now = SystemTime::now();
            let skew = now.duration_since(theirs).unwrap_or_else(|e| e.duration());
            if skew > MAX_SKEW {
                return Err(AgentError::option(
                    endpoint_opt,
                    format!(
                        "this host's clock differs from the service's by {} s, and S3 refuses signatures made more than 15 minutes off; set the time (NTP) on one of them",
                        skew.as_secs()
                    ),
                ));
            }
        }
        let buckets = job.bucket_names();
        for name in &buckets {
            let bucket_opt = format!("--bucket {name}");
            match client.list(name, &job.prefix, None, 1) {
                Ok(_) => {}
                Err(S3Error::Status { status: 404, .. }) if access.create_bucket => {
                    match client.create_bucket(name) {
                        Ok(()) => {}
                        // Made by another host of this run (or earlier) with these keys.
                        Err(S3Error::Status { status: 409, code })
                            if code.as_deref() == Some("BucketAlreadyOwnedByYou") => {}
                        Err(e) => return Err(map_err(bucket_opt, e)),
                    }
                }
                Err(S3Error::Status { status: 404, .. }) => {
                    return Err(AgentError::option(
                        bucket_opt,
                        "no such bucket at this endpoint; create it, or add --create-bucket",
                    ))
                }
                Err(e) => return Err(map_err(bucket_opt, e)),
            }
        }
        // The run's id (the same on every host, made by the coordinator) and the host's
        // place: the coordinator can name, and empty, a failed host's prefix.
        Ok(Bucket {
            config,
            buckets,
            base: format!("{}/{run}-h{host}/", job.prefix),
            keep,
            run: run.to_string(),
            puts: None,
            unanswered: None,
            every_host: false,
            url: url.to_string(),
            insecure: access.insecure,
        })
    }

    /// Where the run writes, as `s3://bucket/prefix/run/`.
    pub fn shown(&self) -> String {
        match self.buckets.as_slice() {
            [one] => format!("s3://{one}/{}", self.base),
            many => format!(
                "s3://{{{}..{}}}/{}",
                many[0],
                many[many.len() - 1],
                self.base
            ),
        }
    }

    /// Where the prefix is, for the journal: endpoint URL, region, addressing (`v`irtual or
    /// `p`ath), certificates (`i`nsecure or `k`checked), the buckets and the prefix, each a
    /// word; never a key. An agent started again sweeps it from this with keys of its own.
    pub(super) fn journaled(&self) -> String {
        use super::journal::escape;
        let buckets: Vec<String> = self.buckets.iter().map(|b| escape(b)).collect();
        format!(
            "{} {} {} {} {} {}",
            escape(&self.url),
            escape(&self.config.region),
            if self.config.virtual_hosted { "v" } else { "p" },
            if self.insecure { "i" } else { "k" },
            buckets.join(","),
            escape(&self.base)
        )
    }

    fn job_prefix(&self, job: &Job) -> String {
        format!("{}{}/", self.base, job.name)
    }

    /// The work of worker `w` of `job` under `load`.
    pub fn work(
        &self,
        job: &Job,
        w: usize,
        workers: usize,
        load: &StageLoad,
        ops: Option<u64>,
    ) -> S3Work {
        let s3 = job.s3.as_ref().expect("an S3 job");
        let mix: Vec<(Op, u32)> = s3
            .mix
            .0
            .iter()
            .map(|&(op, weight)| (op_of(op), weight))
            .collect();
        let prefix = self.job_prefix(job);
        S3Work {
            config: self.config.clone(),
            // Each connection writes and lists in one bucket; reads come from all.
            bucket: self.buckets[w % self.buckets.len()].clone(),
            buckets: self.buckets.clone(),
            // With object sizes swept, each size's objects for reads under a prefix of their
            // own (`r4096-`), prepared for each.
            read_prefix: match load.bs {
                Some(size) if !s3.prepare_sizes.is_empty() => format!("{prefix}r{size}-"),
                _ => format!("{prefix}r"),
            },
            objects: s3.objects,
            write_prefix: format!("{prefix}w{w}-"),
            list_prefix: prefix,
            mix: S3Work::cumulative(&mix),
            obj_size: load.bs.map_or(s3.obj_size, stormark_spec::ObjSize::fixed),
            range: s3.range,
            multipart: s3.multipart,
            // This run's, host's and job's: objects of other hosts or runs are never alike.
            content_seed: self
                .base
                .bytes()
                .chain(job.name.bytes())
                .fold(0x5eed_u64, |h, b| {
                    (h.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15)
                }),
            data: stormark_engine::DataShape {
                zero: job.zero_buffers,
                compress_ratio: job.compress_ratio,
                dedup_ratio: job.dedup_ratio,
                dedup_block: job.dedup_block,
                pattern: job.buffer_pattern,
                ..stormark_engine::DataShape::default()
            },
            verify: s3.verify,
            prepare: None,
            prepare_next: Vec::new(),
            ops: ops.map(|n| share(n, w, workers)),
            puts: self.puts.clone().unwrap_or_default(),
            unanswered: self.unanswered.clone().unwrap_or_default(),
        }
    }

    /// The preparation's work for worker `w` of `workers`: PUT its share of the objects
    /// `job` reads.
    pub fn prepare_work(&self, job: &Job, w: usize, workers: usize) -> S3Work {
        let s3 = job.s3.as_ref().expect("an S3 job");
        let per = s3.objects.div_ceil(workers as u32);
        let from = (w as u32 * per).min(s3.objects);
        let to = (from + per).min(s3.objects);
        let sizes: Vec<Option<u64>> = if s3.prepare_sizes.is_empty() {
            vec![None]
        } else {
            s3.prepare_sizes.iter().copied().map(Some).collect()
        };
        let mut works = sizes.into_iter().map(|bs| {
            let load = StageLoad {
                bs,
                ..StageLoad::AS_GIVEN
            };
            S3Work {
                prepare: Some(from..to),
                ops: None,
                ..self.work(job, w, workers, &load, None)
            }
        });
        let mut first = works.next().expect("at least one size");
        first.prepare_next = works.map(|w| (w.read_prefix, w.obj_size)).collect();
        first
    }
}

/// Whether `key` is under `base` (`every_host`: under `<base><N>/`, N digits), as
/// [`Bucket::owns`] says.
fn owned(base: &str, every_host: bool, key: &str) -> bool {
    let Some(rest) = key.strip_prefix(base) else {
        return false;
    };
    !every_host
        || rest
            .split_once('/')
            .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether `run` has the form of a run id ([`crate::new_run_id`]: `YYYYMMDD-HHMMSS-RANDOM`,
/// 12 lowercase hex digits, or an earlier run's `YYYYMMDD-HHMMSS-PID`), so that removing its
/// objects can never name a prefix wider than one run's.
pub fn is_run_id(run: &str) -> bool {
    let digits = |x: &str| x.bytes().all(|b| b.is_ascii_digit());
    let parts: Vec<&str> = run.split('-').collect();
    matches!(parts.as_slice(), [d, t, p]
        if d.len() == 8 && t.len() == 6 && digits(d) && digits(t)
            && (((1..=10).contains(&p.len()) && digits(p))
                || (p.len() == 12 && p.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))))
}

/// Worker `w`'s share of `n` operations over `workers`.
fn share(n: u64, w: usize, workers: usize) -> u64 {
    let workers = workers.max(1) as u64;
    n / workers + u64::from((w as u64) < n % workers)
}

/// The results' operation of an S3 operation.
pub(super) fn op_of(op: S3Op) -> Op {
    match op {
        S3Op::Get => Op::Get,
        S3Op::Put => Op::Put,
        S3Op::Head => Op::Head,
        S3Op::Delete => Op::Delete,
        S3Op::List => Op::List,
    }
}

impl super::LocalAgent {
    /// An S3 workload's preflight: every S3 job shares one endpoint, bucket and region, and
    /// the service accepts this host's keys for that bucket.
    pub(super) fn open_bucket(
        &mut self,
        workload: &stormark_spec::Workload,
    ) -> Result<(), AgentError> {
        let mut s3_jobs = workload.jobs.iter().filter_map(|j| j.s3.as_ref());
        let Some(first) = s3_jobs.next() else {
            return Ok(());
        };
        if let Some(other) = s3_jobs.find(|s| {
            (&s.endpoint, &s.bucket, s.buckets, &s.region, &s.prefix)
                != (
                    &first.endpoint,
                    &first.bucket,
                    first.buckets,
                    &first.region,
                    &first.prefix,
                )
        }) {
            return Err(AgentError::option(
                format!("--endpoint {} --bucket {}", other.endpoint, other.bucket),
                "every S3 job of one run uses the same endpoint, bucket (and --buckets), region and prefix",
            ));
        }
        let access = self.opts.s3.clone().ok_or_else(|| {
            AgentError::option(
                "--access-key",
                "S3 jobs need keys: --access-key and --secret-key, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile in ~/.aws/credentials",
            )
        })?;
        let host = u32::try_from(self.index).unwrap_or(u32::MAX);
        let mut bucket = Bucket::open(first, &access, self.opts.keep, &self.opts.run, host)?;
        // Its workers count what they write, so that the cleanup's listing is bounded by it,
        // and what got no answer, so that the cleanup knows whether it can be final.
        bucket.puts = Some(Arc::default());
        bucket.unanswered = Some(Arc::default());
        self.notes
            .push(format!("objects of this run go under {}", bucket.shown()));
        // Journaled until removed (by the cleanup, or on an agent by its sweep): an agent
        // killed before names them when it starts again (it holds no keys to remove them).
        if let (Some(j), false) = (&self.journal, self.opts.keep) {
            j.add_objects(&self.opts.run, &bucket.shown(), &bucket.journaled());
        }
        self.bucket = Some(bucket);
        Ok(())
    }

    /// The workers that write the objects GET and HEAD read, up to 16 per job, before the
    /// measured phases (in the preparation phase, beside a file run's).
    /// Bytes of the objects the preparation writes (each at every swept size, counted at
    /// the job's own sizes).
    pub(super) fn object_bytes(&self) -> u64 {
        self.stages
            .iter()
            .flatten()
            .filter_map(|r| r.job.s3.as_ref())
            .filter(|s| s.mix.reads())
            .map(|s| {
                let sizes = s.prepare_sizes.len().max(1) as u64;
                (0..u64::from(s.objects))
                    .map(|i| s.obj_size.of_object(i))
                    .sum::<u64>()
                    .saturating_mul(sizes)
            })
            .sum()
    }

    pub(super) fn object_preparation(&self) -> Vec<stormark_engine::WorkerSpec> {
        let Some(bucket) = self.bucket.as_ref() else {
            return Vec::new();
        };
        let mut specs = Vec::new();
        // A job with no workers here (its `hosts` name other hosts) reads nothing here.
        for job in self
            .stages
            .iter()
            .flatten()
            .map(|r| &r.job)
            .filter(|j| j.jobs > 0)
        {
            let Some(s3) = job.s3.as_ref().filter(|s| s.mix.reads() && s.objects > 0) else {
                continue;
            };
            let workers = (job.jobs as usize).clamp(1, 16).min(s3.objects as usize);
            for w in 0..workers {
                specs.push(stormark_engine::WorkerSpec {
                    load: stormark_engine::Load::S3(Box::new(bucket.prepare_work(job, w, workers))),
                    bs_min: 4096,
                    bs_max: 4096,
                    bs_align: 1,
                    read_pct: 0,
                    write_once: true,
                    seed: 0x5eed ^ w as u64,
                    ..stormark_engine::WorkerSpec::new(Vec::new())
                });
            }
        }
        specs
    }
}

#[cfg(test)]
mod tests;
