//! The iSCSI backend: READ(16) and WRITE(16) to a LUN over the worker's own session (fio's
//! `libiscsi` engine), `iodepth` commands in flight, each timed from its submission to its
//! completion as io_uring's I/Os are.

use std::time::Instant;

use stormark_iscsi::{Completion, Dir, Failure, Session};
use stormark_stats::{ErrorKind, Op};

use crate::ctx::{wait_until, Ctx};
use crate::data::Payload;
use crate::error::EngineError;
use crate::offsets::IoReq;

/// Logs in to the worker's LUN (before the stage's start, so that no login is measured).
pub(crate) fn connect(work: &crate::IscsiWork) -> Result<Session, EngineError> {
    Session::connect(&work.url, work.chap.as_deref()).map_err(|e| EngineError::Iscsi(e.to_string()))
}

/// Runs the loop until the stop rule, the deadline or a failing target.
pub(crate) fn run_iscsi(ctx: &mut Ctx<'_>, session: &mut Session) -> Result<(), EngineError> {
    let depth = ctx.spec.iodepth.max(1) as usize;
    // fio's sync=1 (O_SYNC, O_DSYNC): every write forced to the medium.
    session.set_fua(ctx.spec.sync_flags != 0);
    // Each worker's region of the LUN starts at its file's start (fio's offset).
    let bases: Vec<u64> = ctx.spec.files.iter().map(|f| f.start).collect();
    let none = IoReq {
        op: Op::Read,
        file: 0,
        offset: 0,
        len: 0,
    };
    let mut slots: Vec<(IoReq, u64, Option<Instant>)> = vec![(none, 0, None); depth];
    let mut free: Vec<usize> = (0..depth).rev().collect();
    let mut done: Vec<Completion> = Vec::with_capacity(depth);
    let mut draining = false;
    // fio's fsync=N: after every N writes issued, nothing more until they are done and the
    // LUN's cache is synchronized (timed as a sync).
    let mut sync_due = false;
    loop {
        while let (false, false, Some(&slot)) = (draining, sync_due, free.last()) {
            // Open loop: only commands already due are issued.
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
            let (dir, buf) = match req.op {
                Op::Write => match ctx.bufs.write(slot, &req, ctx.tag ^ ctx.issued) {
                    Payload::Plain(p) => (Dir::Write, p.cast_mut()),
                    // Planning refuses what would need gathered writes (deduplicated blocks).
                    Payload::Vectored(..) => {
                        return Err(EngineError::Iscsi("a gathered write over iSCSI".into()))
                    }
                },
                Op::Trim => (Dir::Unmap, std::ptr::null_mut()),
                _ => (Dir::Read, ctx.bufs.read_at(slot)),
            };
            if req.op == Op::Write && ctx.write_done() {
                sync_due = true;
            }
            let due = ctx.schedule.as_mut().map(|s| s.take());
            slots[slot] = (req, ctx.clock.ticks(), due);
            let at = bases[req.file as usize] + req.offset;
            // SAFETY: the slot's buffer region holds req.len <= bs_max bytes and stays
            // untouched until the slot comes back free, after its completion.
            unsafe { session.submit(dir, at, buf, req.len, slot as u64) }
                .map_err(|e| EngineError::Iscsi(e.to_string()))?;
        }
        if session.inflight() == 0 && std::mem::take(&mut sync_due) {
            sync_lun(ctx, session)?;
            continue;
        }
        if session.inflight() == 0 {
            if draining || ctx.pace.expired(Instant::now()) {
                // fio's end_fsync: the LUN synchronized once the load ends, timed.
                if ctx.spec.end_fsync && ctx.spec.read_pct < 100 {
                    sync_lun(ctx, session)?;
                }
                return Ok(());
            }
            // Open loop, nothing in flight: idle until the next command is due.
            if let Some(t) = ctx.schedule.as_ref().map(|s| s.peek()) {
                wait_until(t, ctx.stop);
                if ctx.stop.load(std::sync::atomic::Ordering::Relaxed) {
                    draining = true;
                }
            }
            continue;
        }
        session
            .wait(100, &mut done)
            .map_err(|e| EngineError::Iscsi(e.to_string()))?;
        let end = ctx.clock.ticks();
        let now = ctx.clock.instant(end);
        ctx.pace.tick(now, &mut ctx.rec, ctx.tx);
        for c in done.drain(..) {
            let slot = c.tag as usize;
            let (req, started, due) = slots[slot];
            match c.status {
                Ok(()) => {
                    let service = ctx.clock.ns(end.saturating_sub(started));
                    ctx.complete_timed(&req, i64::from(req.len), service, now, due);
                }
                Err(f) => ctx.fail_as(&req, kind_of(f)),
            }
            ctx.bufs.done(slot, c.status.is_ok());
            free.push(slot);
        }
        if ctx.pace.expired(now) || ctx.failing().is_some() {
            draining = true;
        }
    }
}

/// SYNCHRONIZE CACHE(16) of the whole LUN, waited for and timed as [`Op::Sync`]; a lost
/// session ends the worker.
fn sync_lun(ctx: &mut Ctx<'_>, session: &mut Session) -> Result<(), EngineError> {
    let start = Instant::now();
    let answer = session
        .sync_cache()
        .map_err(|e| EngineError::Iscsi(e.to_string()))?;
    let now = Instant::now();
    ctx.pace.tick(now, &mut ctx.rec, ctx.tx);
    match answer {
        Ok(()) => ctx.rec.record(
            Op::Sync,
            0,
            now.saturating_duration_since(start).as_nanos() as u64,
        ),
        Err(f) => ctx.rec.record_error(Op::Sync, kind_of(f), 0, 0),
    }
    Ok(())
}

/// The kind a failed command is counted as: its sense key or status (`scsi-medium-error`,
/// `scsi-busy`), or a lost session as a reset.
pub(crate) fn kind_of(f: Failure) -> ErrorKind {
    match f {
        Failure::Sense(key) => ErrorKind::Scsi(stormark_spec::scsi::code(Some(key), 0x02)),
        Failure::Status(s) => ErrorKind::Scsi(stormark_spec::scsi::code(None, s)),
        Failure::Transport => ErrorKind::Reset,
    }
}
