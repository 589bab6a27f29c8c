//! The S3 backend: one request at a time per worker over the worker's own keep-alive
//! connection, operations drawn from the job's weighted mix. Objects are written under the
//! worker's own key prefix, so a run only ever deletes what it wrote.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use stormark_s3::{Client, Fetched, S3Error};
use stormark_stats::{ErrorKind, Op};

use crate::ctx::{end_grace, wait_until, Ctx, MAX_CONSECUTIVE_ERRORS};
use crate::error::EngineError;
use crate::s3_body::Bodies;
use crate::work::S3Work;

/// Whether a verified GET of prepared object `object` (or `range` of it) brought every byte
/// back as written: a short body is corrupt too.
fn intact(
    work: &S3Work,
    bodies: &mut Bodies,
    object: Option<u64>,
    range: Option<(u64, u64)>,
    fetched: &stormark_s3::Fetched,
) -> Result<bool, EngineError> {
    let i = object.expect("GETs read prepared objects");
    let size = work.obj_size.of_object(i);
    let (offset, want) = range.unwrap_or((0, size));
    let got = fetched.body.as_deref().unwrap_or_default();
    let start = prepared_start(work, i);
    Ok(fetched.bytes == want && bodies.matches(i, start, size, offset, got)?)
}

/// Where in the job's pool prepared object `i` starts: objects in index order take the pool's
/// regions in turn (exactly, for one size; about, for a range).
fn prepared_start(work: &S3Work, i: u64) -> u64 {
    let step = work
        .obj_size
        .min
        .midpoint(work.obj_size.max)
        .next_multiple_of(512);
    i.wrapping_mul(step)
}

/// The tag of the `n`th object a worker writes in the measured phase: apart from the
/// prepared objects' (their index) and from every other worker's.
fn written_tag(seed: u64, n: u64) -> u64 {
    (1 << 63) | (seed << 32) ^ n
}

/// S3's `<Code>`s that ask the client to slow down.
const THROTTLE_CODES: &[&str] = &[
    "SlowDown",
    "SlowDownRead",
    "SlowDownWrite",
    "RequestLimitExceeded",
    "Throttling",
    "ThrottlingException",
    "TooManyRequests",
];

fn kind_of(e: &S3Error) -> ErrorKind {
    match e {
        // 429, or a 503 whose code says slow down (AWS's SlowDown); a 503 without one (a
        // gateway with no backend, a HEAD's empty body) is the status it is.
        S3Error::Status { status: 429, .. } => ErrorKind::Throttled,
        S3Error::Status {
            status: 503,
            code: Some(code),
        } if THROTTLE_CODES.contains(&code.as_str()) => ErrorKind::Throttled,
        S3Error::Status { status, .. } => ErrorKind::Http(*status),
        S3Error::Timeout => ErrorKind::Timeout,
        S3Error::Reset => ErrorKind::Reset,
        S3Error::Refused => ErrorKind::Refused,
        S3Error::Network(_) | S3Error::Config(_) | S3Error::Tls(_) => ErrorKind::Network,
        // Not the service's failure: the run was stopped (recorded as such, see `record`).
        S3Error::Stopped => ErrorKind::Interrupted,
    }
}

/// One request to make: its operation, the bytes a PUT sends, the range a GET reads, and the
/// prepared object it reads or writes (by index).
struct Request {
    op: Op,
    size: u64,
    range: Option<(u64, u64)>,
    object: Option<u64>,
}

/// An S3 worker between requests: what it has written, where it is in the preparation, its
/// key buffer and bodies.
struct S3Worker {
    work: S3Work,
    client: Client,
    /// The longest request this worker has seen answered: one still in flight at the stage's
    /// end may take twice that (at least END_GRACE) before it counts as a timeout of its age,
    /// so that a stalled service does not stretch the phase to the request timeout.
    longest: Duration,
    bodies: Bodies,
    checker: Bodies,
    prepare: Option<std::ops::Range<u32>>,
    prepare_next: std::vec::IntoIter<(String, stormark_spec::ObjSize)>,
    cursor: u64,
    rng: u64,
    total: u32,
    /// Keys this worker wrote and has not deleted, newest last.
    written: Vec<u64>,
    put_seq: u64,
    key: String,
}

impl S3Worker {
    fn new(seed: u64, stop: &Arc<AtomicBool>, work: &S3Work) -> Result<S3Worker, EngineError> {
        let mut work = work.clone();
        let mut client =
            Client::new(work.config.clone()).map_err(|e| EngineError::S3(e.to_string()))?;
        // Ctrl-C abandons a request waiting on a stalled service at once.
        client.stop_on(stop.clone());
        // Each PUT's body is made for its object: the next region of a pool, stamped (in
        // place). Prepared objects come from the job's pool (the same on every worker of the
        // host, so that a verifying reader makes them again), written ones from the worker's
        // own (so that workers writing at once never send the same bytes).
        let largest = work
            .prepare_next
            .iter()
            .map(|(_, size)| size.max)
            .fold(work.obj_size.max, u64::max);
        let bodies = Bodies::new(
            &work.data,
            match work.prepare {
                Some(_) => work.content_seed,
                None => work.content_seed ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15),
            },
            largest,
        );
        let checker = Bodies::new(&work.data, work.content_seed, 0);
        let prepare_next = std::mem::take(&mut work.prepare_next).into_iter();
        Ok(S3Worker {
            total: work.mix.last().map_or(1, |&(_, w)| w.max(1)),
            prepare: work.prepare.clone(),
            key: String::with_capacity(work.write_prefix.len() + 24),
            work,
            client,
            longest: Duration::ZERO,
            bodies,
            checker,
            prepare_next,
            cursor: 0,
            rng: seed | 1,
            written: Vec::new(),
            put_seq: 0,
        })
    }

    fn next(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    /// The next request, its key in `self.key`: the preparation's next object (`None` once
    /// every size is done), or an operation drawn from the mix.
    fn next_request(&mut self) -> Option<Request> {
        self.key.clear();
        if let Some(todo) = &mut self.prepare {
            let i = match todo.next() {
                Some(i) => i,
                None => {
                    // This size is done: the same indexes at the next one, if any.
                    let (prefix, size) = self.prepare_next.next()?;
                    self.work.read_prefix = prefix;
                    self.work.obj_size = size;
                    *todo = self.work.prepare.clone().expect("preparing");
                    todo.next()?
                }
            };
            self.key.push_str(&self.work.read_prefix);
            push_number(&mut self.key, u64::from(i));
            return Some(Request {
                op: Op::Put,
                size: self.work.obj_size.of_object(u64::from(i)),
                range: None,
                object: Some(u64::from(i)),
            });
        }
        let draw = (self.next() % u64::from(self.total)) as u32;
        let mut op = self
            .work
            .mix
            .iter()
            .find(|&&(_, w)| draw < w)
            .map_or(Op::Get, |&(op, _)| op);
        if op == Op::Delete && self.written.is_empty() {
            // Nothing of this worker's to delete yet: write instead.
            op = Op::Put;
        }
        let mut req = Request {
            op,
            size: 0,
            range: None,
            object: None,
        };
        match op {
            Op::Get | Op::Head => {
                let i = self.next() % u64::from(self.work.objects.max(1));
                req.object = Some(i);
                self.key.push_str(&self.work.read_prefix);
                push_number(&mut self.key, i);
                if let (Op::Get, Some(want)) = (op, self.work.range) {
                    let whole = self.work.obj_size.of_object(i);
                    let len = want.min(whole);
                    req.range = Some((self.next() % (whole - len + 1), len));
                }
            }
            Op::Put => {
                self.key.push_str(&self.work.write_prefix);
                push_number(&mut self.key, self.put_seq);
                let r = self.next();
                req.size = self.work.obj_size.draw(r);
            }
            Op::Delete => {
                let n = self.written.pop().expect("checked above");
                self.key.push_str(&self.work.write_prefix);
                push_number(&mut self.key, n);
            }
            _ => {}
        }
        Some(req)
    }

    /// Sends `req`: the service's answer and the bytes it moved.
    fn send(
        &mut self,
        seed: u64,
        req: &Request,
    ) -> Result<Result<(Fetched, u64), S3Error>, EngineError> {
        let work = &self.work;
        let client = &mut self.client;
        let key = self.key.as_str();
        // A prepared object lives in the bucket its index names; writes, deletes and
        // listings stay in the worker's own.
        let bucket = match req.object {
            Some(i) if !work.buckets.is_empty() => {
                &work.buckets[(i % work.buckets.len() as u64) as usize]
            }
            _ => &work.bucket,
        };
        let with_bytes = |f: Fetched| {
            let b = f.bytes;
            (f, b)
        };
        Ok(match req.op {
            Op::Put => {
                work.puts.fetch_add(1, Ordering::Relaxed);
                let size = req.size;
                let data = match (&self.prepare, req.object) {
                    (Some(_), Some(i)) => {
                        self.bodies
                            .make(i, prepared_start(work, i), size as usize)?
                    }
                    _ => {
                        let at = self.cursor;
                        self.cursor += size.next_multiple_of(512);
                        self.bodies
                            .make(written_tag(seed, self.put_seq), at, size as usize)?
                    }
                };
                let sent = match work.multipart {
                    Some((threshold, part)) if size > threshold => {
                        client.put_multipart(bucket, key, data.clone(), part)
                    }
                    _ => client.put(bucket, key, data.clone()),
                };
                self.bodies.recycle(data);
                sent.map(|f| (f, size))
            }
            Op::Get if work.verify => client.get_kept(bucket, key, req.range).map(with_bytes),
            Op::Get => match req.range {
                Some((offset, len)) => client.get_range(bucket, key, offset, len),
                None => client.get(bucket, key),
            }
            .map(with_bytes),
            Op::Head => client.head(bucket, key).map(|f| (f, 0)),
            Op::Delete => client.delete(bucket, key).map(|f| (f, 0)),
            _ => client
                .list(bucket, &work.list_prefix, None, 100)
                .map(|(f, _)| with_bytes(f)),
        })
    }

    /// Records what `req`, sent at `start` (due at `due` in an open loop), came to at `now`.
    /// `false` when the run was stopped while it waited.
    fn record(
        &mut self,
        ctx: &mut Ctx<'_>,
        req: &Request,
        result: Result<(Fetched, u64), S3Error>,
        (due, start, now): (Option<Instant>, Instant, Instant),
    ) -> Result<bool, EngineError> {
        let op = req.op;
        let service = now.saturating_duration_since(start).as_nanos() as u64;
        if result.is_ok() {
            self.longest = self.longest.max(now.saturating_duration_since(start));
        }
        // A PUT without an answer may still be stored: the cleanup is told.
        if op == Op::Put
            && matches!(
                result,
                Err(S3Error::Stopped | S3Error::Timeout | S3Error::Reset | S3Error::Network(_))
            )
        {
            self.work.unanswered.fetch_add(1, Ordering::Relaxed);
        }
        let waited = due.map_or(service, |t| {
            now.saturating_duration_since(t).as_nanos() as u64
        });
        // A GET with --verify: whether it read what was written. Every object checked is
        // counted, so that a clean run says what it checked too.
        let good = match &result {
            Ok((fetched, _)) if op == Op::Get && self.work.verify => {
                let good = intact(
                    &self.work,
                    &mut self.checker,
                    req.object,
                    req.range,
                    fetched,
                )?;
                ctx.rec.record_verified(stormark_stats::Verified {
                    blocks: 0,
                    objects: 1,
                    bytes: fetched.bytes,
                    bad: u64::from(!good),
                });
                Some(good)
            }
            _ => None,
        };
        match result {
            // Ctrl-C (or the run stopping): the run ends, and the request abandoned while it
            // waited counts as interrupted at its age, not as the service's failure.
            Err(S3Error::Stopped) => {
                ctx.rec.record_interrupted(op, waited);
                return Ok(false);
            }
            Ok(_) if good == Some(false) => {
                ctx.rec.record_error(op, ErrorKind::Corrupt, 0, 0);
                ctx.consecutive_errors += 1;
            }
            Ok((fetched, bytes)) => {
                if op == Op::Get {
                    let first = fetched.first_byte.saturating_duration_since(start);
                    ctx.rec.record_first_byte(op, first.as_nanos() as u64);
                }
                if op == Op::Put && self.prepare.is_none() {
                    self.written.push(self.put_seq);
                    self.put_seq += 1;
                }
                match due {
                    None => ctx.rec.record(op, bytes, service),
                    Some(t) => {
                        let response = now.saturating_duration_since(t).as_nanos() as u64;
                        ctx.rec.record_scheduled(op, bytes, response, service)
                    }
                }
                ctx.consecutive_errors = 0;
            }
            // A request that timed out waited that long: its latency counts.
            Err(S3Error::Timeout) => {
                ctx.rec.record_timeout(op, waited);
                ctx.consecutive_errors += 1;
                if op == Op::Put && self.prepare.is_some() {
                    return Err(EngineError::S3(format!("PUT {}: timed out", self.key)));
                }
            }
            Err(e) => {
                ctx.rec.record_error(op, kind_of(&e), 0, 0);
                ctx.consecutive_errors += 1;
                if op == Op::Put && self.prepare.is_some() {
                    return Err(EngineError::S3(format!("PUT {}: {e}", self.key)));
                }
            }
        }
        Ok(true)
    }
}

/// Runs the worker's requests until its stop rule, the deadline or too many failures in a
/// row. Nothing is retried: a failed request is counted by kind and the next one is drawn.
pub(crate) fn run_s3(ctx: &mut Ctx<'_>, work: &S3Work) -> Result<(), EngineError> {
    let mut w = S3Worker::new(ctx.spec.seed, ctx.stop_shared, work)?;
    let mut done: u64 = 0;
    loop {
        if ctx.stop.load(Ordering::Relaxed) || w.work.ops.is_some_and(|n| done >= n) {
            break;
        }
        let Some(req) = w.next_request() else { break };
        let due = ctx.schedule.as_mut().map(|s| {
            let t = s.take();
            wait_until(t, ctx.stop);
            t
        });
        w.client
            .set_deadline(ctx.pace.deadline().map(|d| d + end_grace(w.longest)));
        let start = Instant::now();
        let result = w.send(ctx.spec.seed, &req)?;
        let now = Instant::now();
        if let Some(took) = w.client.take_connect_time() {
            ctx.rec.record(Op::Connect, 0, took.as_nanos() as u64);
        }
        ctx.pace.tick(now, &mut ctx.rec, ctx.tx);
        if !w.record(ctx, &req, result, (due, start, now))? {
            break;
        }
        done += 1;
        if ctx.pace.expired(now) || ctx.consecutive_errors >= MAX_CONSECUTIVE_ERRORS {
            break;
        }
    }
    Ok(())
}

/// Appends `n` in decimal without formatting machinery.
fn push_number(s: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in &digits[i..] {
        s.push(d as char);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_slow_down_is_throttling() {
        let status = |status, code: Option<&str>| S3Error::Status {
            status,
            code: code.map(str::to_string),
        };
        assert_eq!(
            kind_of(&status(503, Some("SlowDown"))),
            ErrorKind::Throttled
        );
        assert_eq!(kind_of(&status(429, None)), ErrorKind::Throttled);
        assert_eq!(kind_of(&status(503, None)), ErrorKind::Http(503));
        assert_eq!(
            kind_of(&status(503, Some("ServiceUnavailable"))),
            ErrorKind::Http(503)
        );
        assert_eq!(
            kind_of(&status(500, Some("InternalError"))),
            ErrorKind::Http(500)
        );
    }

    #[test]
    fn numbers_and_weights() {
        let mut s = String::from("k");
        push_number(&mut s, 0);
        push_number(&mut s, 1234567890123);
        assert_eq!(s, "k01234567890123");
        let c = S3Work::cumulative(&[(Op::Put, 30), (Op::Get, 60), (Op::List, 10)]);
        assert_eq!(c, vec![(Op::Put, 30), (Op::Get, 90), (Op::List, 100)]);
    }
}
