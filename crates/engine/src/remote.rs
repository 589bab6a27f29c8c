//! The loop of the services measured from user space (an iSCSI LUN, an NFS share): the
//! worker's own connection keeps `iodepth` requests in flight, each timed from its submission
//! to its completion as io_uring's I/Os are, through a [`Remote`] (`iscsi.rs`, `nfs.rs`).
//!
//! A service fails as a service: a connection that hangs up fails what was in flight at once
//! (counted as `reset`, the worker stops); a request still unanswered at the phase's end
//! plus the grace, or [`crate::ctx::STALL_LIMIT`] after it was sent, counts as a timeout of
//! its age, in the latency histogram, and the worker stops (`ctx::give_up_at`, S3's rule);
//! Ctrl-C abandons what is in flight at once. A stopped or dead server can neither stretch a
//! phase past its time and the grace nor hide its failures.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use stormark_stats::{ErrorKind, Op};

use crate::ctx::{give_up_at, wait_until, Ctx};
use crate::data::Payload;
use crate::error::EngineError;
use crate::offsets::IoReq;

/// A request that completed: its tag and the bytes it moved ([`ALL`]: every byte it asked),
/// or how it failed.
pub(crate) type Done = (u64, Result<u32, ErrorKind>);

/// A request that moved every byte it asked (a service whose requests move all or fail).
pub(crate) const ALL: u32 = u32::MAX;

/// A worker's connection to a service: what the loop needs of it. Errors are the
/// connection's (the worker stops); a request's own failure comes in its [`Done`].
pub(crate) trait Remote {
    /// Requests submitted and not yet completed.
    fn inflight(&self) -> usize;

    /// Queues `op` (a read into, or a write from, the `len` bytes at `buf`; a trim) of the
    /// worker's file `file` at byte `at`; its completion comes from [`Remote::wait`] as `tag`.
    ///
    /// # Safety
    /// For a read or write, `buf` must hold `len` bytes that stay valid, and untouched, until
    /// the request's completion has been taken.
    unsafe fn submit(
        &mut self,
        op: Op,
        file: u32,
        at: u64,
        buf: *mut u8,
        len: u32,
        tag: u64,
    ) -> Result<(), String>;

    /// Sends what is queued, waits up to `ms` for completions and adds them to `out`.
    fn wait(&mut self, ms: i32, out: &mut Vec<Done>) -> Result<(), String>;

    /// Makes file `file`'s writes durable (SYNCHRONIZE CACHE, COMMIT), waited for. Only with
    /// nothing in flight.
    fn sync(&mut self, file: u32) -> Result<Result<(), ErrorKind>, String>;

    /// Reads `buf.len()` bytes of file `file` at `at`, waited for: the bytes read. Only with
    /// nothing in flight.
    fn read_at(
        &mut self,
        file: u32,
        at: u64,
        buf: &mut [u8],
    ) -> Result<Result<u32, ErrorKind>, String>;

    /// Every write from now on forced to the medium before it completes (O_SYNC's meaning);
    /// a service without the choice ignores it.
    fn set_sync_writes(&mut self, _on: bool) {}
}

/// Runs the loop until the stop rule, the deadline or a failing service.
pub(crate) fn run_remote<R: Remote>(
    ctx: &mut Ctx<'_>,
    remote: &mut R,
    fail: fn(String) -> EngineError,
) -> Result<(), EngineError> {
    let depth = ctx.spec.iodepth.max(1) as usize;
    // fio's sync=1 (O_SYNC, O_DSYNC): every write forced to the medium.
    remote.set_sync_writes(ctx.spec.sync_flags != 0);
    // Each worker's region of a file or LUN starts at its file's start (fio's offset).
    let bases: Vec<u64> = ctx.spec.files.iter().map(|f| f.start).collect();
    let none = IoReq {
        op: Op::Read,
        file: 0,
        offset: 0,
        len: 0,
    };
    let mut slots: Vec<(IoReq, u64, Option<Instant>)> = vec![(none, 0, None); depth];
    let mut free: Vec<usize> = (0..depth).rev().collect();
    // Which slots are in flight, and the longest answer seen: what a stall is judged by,
    // once a second (and at every wake while draining), never per I/O.
    let mut busy = vec![false; depth];
    let mut longest_ns: u64 = 0;
    let mut next_check = Instant::now() + Duration::from_secs(1);
    let mut done: Vec<Done> = Vec::with_capacity(depth);
    let mut draining = false;
    // fio's fsync=N: after every N writes issued, nothing more until they are done and the
    // file's writes are made durable (timed as a sync).
    let mut sync_due: Option<u32> = None;
    loop {
        while let (false, None, Some(&slot)) = (draining, sync_due, free.last()) {
            // Open loop: only requests already due are issued.
            if ctx
                .schedule
                .as_ref()
                .is_some_and(|s| s.peek() > Instant::now())
            {
                break;
            }
            let Some(req) = ctx.next_req() else {
                draining = true;
                break;
            };
            free.pop();
            let buf = match req.op {
                Op::Write => match ctx.bufs.write(slot, &req, ctx.tag ^ ctx.issued) {
                    Payload::Plain(p) => p.cast_mut(),
                    // Planning refuses what would need gathered writes (deduplicated blocks).
                    Payload::Vectored(..) => return Err(fail("a gathered write".into())),
                },
                Op::Trim => std::ptr::null_mut(),
                _ => ctx.bufs.read_at(slot),
            };
            if req.op == Op::Write && ctx.write_done() {
                sync_due = Some(req.file);
            }
            let due = ctx.schedule.as_mut().map(|s| s.take());
            slots[slot] = (req, ctx.clock.ticks(), due);
            busy[slot] = true;
            let at = bases[req.file as usize] + req.offset;
            // SAFETY: the slot's buffer region holds req.len <= bs_max bytes and stays
            // untouched until the slot comes back free, after its completion.
            unsafe { remote.submit(req.op, req.file, at, buf, req.len, slot as u64) }
                .map_err(fail)?;
        }
        if remote.inflight() == 0 {
            if let Some(file) = sync_due.take() {
                sync_timed(ctx, remote, file, fail)?;
                continue;
            }
            if draining || ctx.pace.expired(Instant::now()) {
                // fio's end_fsync: every file made durable once the load ends, timed.
                if ctx.spec.end_fsync && ctx.spec.read_pct < 100 {
                    for file in 0..bases.len() as u32 {
                        sync_timed(ctx, remote, file, fail)?;
                    }
                }
                return Ok(());
            }
            // Open loop, nothing in flight: idle until the next request is due.
            if let Some(t) = ctx.schedule.as_ref().map(|s| s.peek()) {
                wait_until(t, ctx.stop);
                if ctx.stop.load(std::sync::atomic::Ordering::Relaxed) {
                    draining = true;
                }
            }
            continue;
        }
        let waited = remote.wait(100, &mut done);
        let end = ctx.clock.ticks();
        let now = ctx.clock.instant(end);
        ctx.pace.tick(now, &mut ctx.rec, ctx.tx);
        for (tag, status) in done.drain(..) {
            let slot = tag as usize;
            let (req, started, due) = slots[slot];
            let ok = match status {
                Ok(n) => {
                    let n = n.min(req.len);
                    let service = ctx.clock.ns(end.saturating_sub(started));
                    longest_ns = longest_ns.max(service);
                    ctx.complete_timed(&req, i64::from(n), service, end, due);
                    n == req.len
                }
                Err(kind) => {
                    ctx.fail_as(&req, kind);
                    false
                }
            };
            ctx.bufs.done(slot, ok);
            busy[slot] = false;
            free.push(slot);
        }
        if let Err(e) = waited {
            // The connection is gone (the server hung up or reset it): what was in flight
            // failed with it, each counted.
            for slot in (0..depth).filter(|&s| busy[s]) {
                ctx.fail_as(&slots[slot].0, ErrorKind::Reset);
            }
            return Err(fail(e));
        }
        if ctx.pace.expired(now) || ctx.failing().is_some() {
            draining = true;
        }
        if remote.inflight() > 0 && (draining || now >= next_check) {
            next_check = now + Duration::from_secs(1);
            if ctx.stop.load(Ordering::Relaxed) {
                // Ctrl-C (or another host failed): not waited on; the connection's drop
                // cancels what is in flight.
                return Ok(());
            }
            let (deadline, longest) = (ctx.pace.deadline(), Duration::from_nanos(longest_ns));
            // The oldest request's age, from the clock's ticks (an old tick has no instant).
            let age = Duration::from_nanos(ctx.clock.ns(end.saturating_sub(oldest(&slots, &busy))));
            let sent = now.checked_sub(age).unwrap_or(now);
            if now >= give_up_at(sent, deadline, longest) {
                let n = time_out(ctx, &slots, &busy, end);
                return Err(fail(format!(
                    "{n} request(s) unanswered, the oldest for {:.1} s: counted as timeouts of their age (the server stalled or stopped answering)",
                    age.as_secs_f64()
                )));
            }
        }
    }
}

/// The clock's ticks when the oldest request in flight was sent (the oldest gives up first).
fn oldest(slots: &[(IoReq, u64, Option<Instant>)], busy: &[bool]) -> u64 {
    slots
        .iter()
        .zip(busy)
        .filter(|(_, b)| **b)
        .map(|(s, _)| s.1)
        .min()
        .unwrap_or(0)
}

/// Every request in flight counted as a timeout of its age at `end` (from when it was due, in
/// an open loop): the latency histogram holds what the stall cost. How many there were.
fn time_out(
    ctx: &mut Ctx<'_>,
    slots: &[(IoReq, u64, Option<Instant>)],
    busy: &[bool],
    end: u64,
) -> usize {
    let now = Instant::now();
    let mut n = 0;
    for (slot, _) in busy.iter().enumerate().filter(|(_, b)| **b) {
        let (req, started, due) = slots[slot];
        let waited = due.map_or_else(
            || ctx.clock.ns(end.saturating_sub(started)),
            |t| now.saturating_duration_since(t).as_nanos() as u64,
        );
        ctx.rec.record_timeout(req.op, waited);
        n += 1;
    }
    n
}

/// Makes file `file`'s writes durable, waited for and timed as [`Op::Sync`]; a lost
/// connection ends the worker.
fn sync_timed<R: Remote>(
    ctx: &mut Ctx<'_>,
    remote: &mut R,
    file: u32,
    fail: fn(String) -> EngineError,
) -> Result<(), EngineError> {
    let start = Instant::now();
    let answer = remote.sync(file).map_err(fail)?;
    let now = Instant::now();
    ctx.pace.tick(now, &mut ctx.rec, ctx.tx);
    match answer {
        Ok(()) => ctx.rec.record(
            Op::Sync,
            0,
            now.saturating_duration_since(start).as_nanos() as u64,
        ),
        Err(kind) => ctx.rec.record_error(Op::Sync, kind, 0, file),
    }
    Ok(())
}
