//! An S3 run's place in its bucket: checked before any load (the service answers, the clocks
//! agree, the keys are accepted, the bucket exists), a key prefix of its own that no other run
//! uses, the objects GET and HEAD read, and at the end the removal of every key under that
//! prefix, which are exactly the keys this run wrote.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use stormark_engine::S3Work;
use stormark_s3::{Client, Config, Endpoint, S3Error};
use stormark_spec::{Job, S3Job, S3Op, StageLoad};
use stormark_stats::Op;

use crate::agent::{AgentError, S3Access};

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
    /// `base` is `<prefix>/<run id>-h`, every host's: only keys under `<base><N>/` (N its
    /// digits) are the run's.
    every_host: bool,
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
            every_host: false,
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
            // Not yet read by the cleanup.
            unanswered: Default::default(),
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

    /// Deletes every key under the run's prefix (unless kept), until `abandon` is set.
    /// Returns notes for results.
    pub fn cleanup(&self, abandon: Option<&Arc<AtomicBool>>) -> Vec<String> {
        self.cleanup_counted(abandon).1
    }

    /// [`Bucket::cleanup`], with the number of objects it removed.
    /// Whether `key` is the run's: under `base`; of every host's, under `<base><N>/` with N
    /// a host's number (digits, then a slash), never a neighbour that only begins the same
    /// (`<run>-hosts.csv`, `<run>-h1x/`, `<run>-h/`, an object named `<run>-h3`).
    fn owns(&self, key: &str) -> bool {
        owned(&self.base, self.every_host, key)
    }

    fn cleanup_counted(&self, abandon: Option<&Arc<AtomicBool>>) -> (u64, Vec<String>) {
        if self.keep {
            return (
                0,
                vec![format!("kept the objects under {} (--keep)", self.shown())],
            );
        }
        let mut client = match Client::new(self.config.clone()) {
            Ok(c) => c,
            Err(e) => {
                return (
                    0,
                    vec![format!(
                        "could not remove the objects under {}: {e}",
                        self.shown()
                    )],
                )
            }
        };
        if let Some(flag) = abandon {
            client.stop_on(flag.clone());
        }
        let abandoned = || abandon.is_some_and(|f| f.load(Ordering::Relaxed));
        let (mut removed, mut failed) = (0u64, 0u64);
        let mut first_error = None;
        // A listing of this host's own prefix holds at most the keys it wrote.
        let most = self.puts.as_ref().map(|p| p.load(Ordering::Relaxed));
        let pages = most.map_or(MAX_LIST_PAGES, list_pages);
        for bucket in &self.buckets {
            // Each page listed, then its keys removed; the next page's token back.
            let stopped = each_page(pages, most, |token| {
                if abandoned() {
                    return Err(ABANDONED.into());
                }
                let (_, page) = client
                    .list(bucket, &self.base, token, 1000)
                    .map_err(|e| e.to_string())?;
                for key in &page.keys {
                    // Only keys under the run's own prefix, whatever the service listed.
                    if !self.owns(key) {
                        continue;
                    }
                    if abandoned() {
                        return Err(ABANDONED.into());
                    }
                    match client.delete(bucket, key) {
                        Ok(_) => removed += 1,
                        Err(e) => {
                            failed += 1;
                            first_error.get_or_insert(e.to_string());
                        }
                    }
                }
                Ok(page.next)
            });
            if let Some(why) = stopped {
                first_error.get_or_insert(why);
            }
        }
        let notes = match first_error {
            None => Vec::new(),
            Some(e) if abandoned() => vec![format!(
                "left the run's objects under {} in place ({e}, after removing {removed}); remove them with `stormark s3 --remove-run {}` and the run's --endpoint, --bucket and --prefix",
                self.shown(),
                self.run
            )],
            // The listing stopped (a page failed, or the service would not end it).
            Some(e) if failed == 0 => vec![format!(
                "removed {removed} objects under {}, then stopped: {e}; remove what is left with `stormark s3 --remove-run {}` and the run's --endpoint, --bucket and --prefix",
                self.shown(),
                self.run
            )],
            Some(e) => vec![format!(
                "removed {removed} objects under {}, {failed} could not be removed: {e}",
                self.shown()
            )],
        };
        (removed, notes)
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

/// Why a cleanup ended early when a second Ctrl-C asked it to.
const ABANDONED: &str = "a second Ctrl-C stopped their removal";

/// Removes the objects host `host` of run `run` left under its prefix: what the coordinator
/// (which holds the keys) does for a host that failed or was cut off, whose own cleanup
/// never ran. Only keys under `<prefix>/<run>-h<host>/` are listed and deleted. Returns notes
/// for the results: how many were removed, or why some are left (with their prefix).
pub fn remove_host_objects(
    workload: &stormark_spec::Workload,
    access: &S3Access,
    run: &str,
    host: u32,
) -> Vec<String> {
    let Some(job) = workload.jobs.iter().find_map(|j| j.s3.as_ref()) else {
        return Vec::new();
    };
    match Bucket::open(job, access, false, run, host) {
        Ok(b) => {
            let (removed, mut notes) = b.cleanup_counted(None);
            if notes.is_empty() {
                notes.push(format!(
                    "host {host} failed: removed the {removed} objects it left under {}",
                    b.shown()
                ));
            }
            notes
        }
        Err(e) => vec![format!(
            "host {host} failed, and the objects it left under {}/{run}-h{host}/ could not be removed: {e}; remove them with `stormark s3 --remove-run {run}` and the run's --endpoint, --bucket and --prefix",
            job.prefix
        )],
    }
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

/// Removes every object run `run` left under the job's prefix, of every host
/// (`<prefix>/<run>-h<N>/`): a run kept with `--keep`, or one whose cleanup could not finish
/// (an agent killed, a second Ctrl-C). Returns how many were removed, where, and notes for
/// what could not be.
pub fn remove_run_objects(
    workload: &stormark_spec::Workload,
    access: &S3Access,
    run: &str,
) -> Result<(u64, String, Vec<String>), AgentError> {
    let Some(job) = workload.jobs.iter().find_map(|j| j.s3.as_ref()) else {
        return Err(AgentError::option(
            "--remove-run",
            "needs the S3 job's --endpoint and --bucket",
        ));
    };
    if !is_run_id(run) {
        return Err(AgentError::option(
            format!("--remove-run {}", stormark_spec::printable(run, 40)),
            "expected a run id as the results' notes show it, such as 20261126-001739-11450",
        ));
    }
    let mut b = Bucket::open(job, access, false, run, 0)?;
    // Every host's prefix: the keys under `<prefix>/<run>-h<N>/` are this run's alone (the id
    // ends in its digits, then `-h`, a host's number and a slash); the listing is of
    // `<prefix>/<run>-h`, each key then checked.
    b.base = format!("{}/{run}-h", job.prefix);
    b.every_host = true;
    let (removed, notes) = b.cleanup_counted(None);
    let shown = format!("{}*/", b.shown());
    Ok((removed, shown, notes))
}

/// The most pages one listing of the run's objects reads where what it wrote is not known (a
/// thousand keys each: far more objects than a run writes).
const MAX_LIST_PAGES: u32 = 100_000;

/// The most pages a listing of a prefix holding at most `keys` keys takes: a page for each
/// hundred (a tenth of the thousand asked, for a service that answers in smaller pages) and
/// ten more, within [`MAX_LIST_PAGES`]. A service handing out continuation tokens beyond it
/// is stopped there, not after a hundred thousand pages.
fn list_pages(keys: u64) -> u32 {
    u32::try_from(keys.div_ceil(100) + 10).map_or(MAX_LIST_PAGES, |p| p.min(MAX_LIST_PAGES))
}

/// Goes through a listing page by page: `page` reads the page at a continuation token (and
/// deals with its keys) and answers the next token. Stops, saying why, when a page fails,
/// when the service repeats a continuation token (a broken or hostile service would keep a
/// cleanup listing forever) or after `pages` pages (of a prefix of at most `keys` keys, when
/// known).
fn each_page(
    pages: u32,
    keys: Option<u64>,
    mut page: impl FnMut(Option<&str>) -> Result<Option<String>, String>,
) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    let mut token: Option<String> = None;
    for _ in 0..pages {
        match page(token.as_deref()) {
            Err(e) => return Some(e),
            Ok(None) => return None,
            Ok(Some(t)) if !seen.insert(t.clone()) => {
                return Some(format!(
                    "the service gave the same continuation token twice ({}); listing stopped",
                    stormark_spec::printable(&t, 64)
                ))
            }
            Ok(Some(t)) => token = Some(t),
        }
    }
    Some(match keys {
        Some(keys) => format!(
            "listing stopped after {pages} pages, more than the {keys} objects this host wrote there fill (the service kept handing out continuation tokens); more objects may be left"
        ),
        None => format!("listing stopped after {pages} pages; more objects may be left"),
    })
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
        // Its workers count what they write, so that the cleanup's listing is bounded by it.
        bucket.puts = Some(Arc::default());
        self.notes
            .push(format!("objects of this run go under {}", bucket.shown()));
        // Journaled until removed: an agent killed before its cleanup names them when it
        // starts again (it holds no keys to remove them itself).
        if let (Some(j), false) = (&self.journal, self.opts.keep) {
            j.add_objects(&self.opts.run, &bucket.shown());
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
        for job in self.stages.iter().flatten().map(|r| &r.job) {
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
