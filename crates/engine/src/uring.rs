//! The io_uring backend: `iodepth` I/Os in flight, new submissions batched into the same
//! `io_uring_enter` that waits for the next completion.

use std::time::Instant;

use io_uring::{types, IoUring};
use stormark_spec::Ring;

use stormark_stats::Op;

use crate::ctx::Ctx;
use crate::error::EngineError;
use crate::offsets::IoReq;

mod entry;
mod prio;
mod slots;
mod sys;

use entry::{push, push_write, read_entry, Parts};
use prio::CmdPrioShare;
use slots::SlotRing;
use sys::{RingFd, IORING_ENTER_GETEVENTS, IORING_ENTER_SQ_WAKEUP};

/// Whether this kernel lets this process set up an io_uring (it may be missing, or disabled
/// by `kernel.io_uring_disabled` or a seccomp policy).
pub fn io_uring_available() -> std::io::Result<()> {
    IoUring::new(4).map(|_| ())
}

/// Whether this kernel sets up a ring of `depth` entries (large depths can exceed what the
/// kernel or the locked-memory limit allows): checked before load, not found by a worker.
pub fn io_uring_depth_ok(depth: u32) -> std::io::Result<()> {
    new_ring(depth.max(1), Ring::default()).map(|_| ())
}

/// Whether this kernel sets up a ring with `features` (a polling thread, polled completions)
/// and registers files and buffers in it: checked before load, not found by a worker.
pub fn io_uring_features_ok(features: Ring) -> std::io::Result<()> {
    let ring = new_ring(4, features)?;
    if features.registered_files {
        ring.submitter().register_files(&[0])?;
    }
    if features.fixed_bufs {
        let buf = crate::buffer::AlignedBuf::zeroed(crate::buffer::ALIGN)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let area = [libc::iovec {
            iov_base: buf.at(0).cast(),
            iov_len: crate::buffer::ALIGN,
        }];
        // SAFETY: the buffer outlives the ring, which is dropped first (declared later).
        unsafe { ring.submitter().register_buffers(&area) }?;
        drop(ring);
    }
    Ok(())
}

/// A ring set up as fio's io_uring engine does: completions run as task work only when this
/// thread reaps them (COOP_TASKRUN, and DEFER_TASKRUN with SINGLE_ISSUER since 6.1), so no
/// inter-processor interrupt per completion. Older kernels refuse the flags with EINVAL; fall
/// back one step at a time, as fio does.
fn new_ring(depth: u32, features: Ring) -> std::io::Result<IoUring> {
    let entries = depth.next_power_of_two();
    let attempts: [fn(&mut io_uring::Builder); 4] = [
        // And no index array between the queue and its entries (6.6), as t/io_uring: the
        // kernel takes each entry in the queue's order, one memory read less an I/O.
        |b| {
            b.setup_coop_taskrun()
                .setup_single_issuer()
                .setup_defer_taskrun()
                .setup_no_sqarray();
        },
        |b| {
            b.setup_coop_taskrun()
                .setup_single_issuer()
                .setup_defer_taskrun();
        },
        |b| {
            b.setup_coop_taskrun();
        },
        |_| {},
    ];
    let mut last = None;
    for configure in attempts {
        let mut builder = IoUring::builder();
        configure(&mut builder);
        if features.sq_poll {
            // fio's default sqthread idle: the thread sleeps after a second without work.
            builder.setup_sqpoll(1000);
        }
        if features.hipri {
            builder.setup_iopoll();
        }
        match builder.build(entries) {
            Ok(ring) => return Ok(ring),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.expect("at least one attempt was made"))
}

/// Whether `req` overlaps an I/O in flight (a `busy` slot) on the same file, by a byte or
/// more (fio's `in_flight_overlap`).
fn overlaps_in_flight(req: &IoReq, slots: &[(IoReq, u64)], busy: &[bool]) -> bool {
    let end = req.offset + u64::from(req.len);
    slots.iter().zip(busy).any(|((other, _), on)| {
        *on && other.file == req.file
            && other.offset < end
            && req.offset < other.offset + u64::from(other.len)
    })
}

pub(crate) fn run(ctx: &mut Ctx<'_>) -> Result<(), EngineError> {
    if is_plain(ctx) {
        run_as::<true>(ctx)
    } else {
        run_as::<false>(ctx)
    }
}

/// Whether the job asks for none of the loop's occasional work (an open loop, fio's
/// serialize_overlap, flow, zoned mode, cmdprio, iodepth_low, fsync, thinktime or
/// sqthread_poll): its loop is then compiled without them ([`run_as`]).
fn is_plain(ctx: &Ctx<'_>) -> bool {
    let s = ctx.spec;
    let depth = s.iodepth.max(1);
    ctx.schedule.is_none()
        && !(s.serialize_overlap && depth > 1)
        && s.flow_group.is_none()
        && ctx.zones.is_none()
        && s.cmdprio.is_none()
        && s.iodepth_low.is_none_or(|l| l >= depth)
        && s.sync_every == 0
        && ctx.think_left == 0
        && !s.ring.sq_poll
}

/// The loop, one source for every job. `PLAIN` (see [`is_plain`]) compiles it without the
/// occasional work: fewer branches and live values, so that what the loop touches between
/// two `io_uring_enter`s (whose copies of the reads empty the L1 cache) fits in fewer cache
/// lines, most of them registers (docs/performance.md). Never inlined: each instance has its
/// own frame and code, not one shared with the other's.
#[inline(never)]
fn run_as<const PLAIN: bool>(ctx: &mut Ctx<'_>) -> Result<(), EngineError> {
    let depth = ctx.spec.iodepth.max(1) as usize;
    let batch = (ctx.spec.iodepth_batch.max(1) as usize).min(depth);
    // fio's iodepth_batch_complete_min and _max: a wait is for this many completions (or all
    // in flight where fewer are), a reap takes at most that many.
    let reap_min = (ctx.spec.iodepth_batch_complete.max(1) as usize).min(depth);
    let reap_max = (ctx.spec.iodepth_batch_complete_max.max(1) as usize).min(depth);
    // fio's iodepth_low: once the queue is full, no refill until this few are in flight.
    let low = match ctx.spec.iodepth_low {
        Some(l) if !PLAIN => (l as usize).min(depth),
        _ => depth,
    };
    let mut holding = false;
    // fio's serialize_overlap: an I/O that overlaps one in flight waits (kept here) until
    // that one completes; `busy` says which slots are in flight, scanned before each issue
    // (at most `depth` compares, no allocation).
    let serialize = !PLAIN && ctx.spec.serialize_overlap && depth > 1;
    let mut busy: Vec<bool> = vec![false; if serialize { depth } else { 0 }];
    let mut deferred: Option<IoReq> = None;
    let mut features = ctx.spec.ring;
    let polled = !PLAIN && features.sq_poll;
    let mut ring = new_ring(depth as u32, features).map_err(EngineError::RingSetup)?;
    // Each file's descriptor with its region's start, and the plain descriptor for syncs.
    let (fds, raw): (Vec<_>, Vec<i32>) = ctx
        .regions()
        .into_iter()
        .map(|(fd, s)| ((types::Fd(fd), s), fd))
        .unzip();
    // fio's registerfiles and fixedbufs: the files and buffers registered once, so that no
    // I/O looks its file up or pins its pages. Asked for, they must be had (the job was
    // checked before load); not named, they are registered where the kernel lets it, as fio's
    // t/io_uring does (a locked-memory limit, an old kernel: the I/O goes on without).
    if !features.registered_files_off {
        match ring.submitter().register_files(&raw) {
            Ok(()) => features.registered_files = true,
            Err(e) if features.registered_files => return Err(EngineError::RingSetup(e)),
            Err(_) => {}
        }
    }
    // Not by default for atomic writes (fio's `atomic`): the kernel takes `RWF_ATOMIC` only
    // from a buffer of one segment, which a registered buffer's pages are not (EINVAL).
    if !features.fixed_bufs_off && (features.fixed_bufs || !ctx.spec.atomic) {
        // SAFETY: the buffers live in ctx, which outlives the ring (dropped when run returns).
        match unsafe { ring.submitter().register_buffers(&ctx.bufs.areas()) } {
            Ok(()) => features.fixed_bufs = true,
            Err(e) if features.fixed_bufs => return Err(EngineError::RingSetup(e)),
            Err(_) => {}
        }
    }
    let parts = Parts::new(ctx, &fds, features, depth);
    // user_data indexes this slab of in-flight I/Os (see io-uring's examples/tcp_echo.rs).
    let placeholder = IoReq {
        op: Op::Read,
        file: 0,
        offset: 0,
        len: 0,
    };
    // Each slot's I/O and its start, in the worker clock's ticks.
    let mut slots: Vec<(IoReq, u64)> = vec![(placeholder, 0); depth];
    // Open loop: when each slot's I/O was due.
    let mut due: Vec<Instant> = vec![
        Instant::now();
        if !PLAIN && ctx.schedule.is_some() {
            depth
        } else {
            0
        }
    ];
    // The free slots, taken in turn, and those taken since the last submission.
    let mut free = SlotRing::new(depth);
    let mut inflight = 0usize;
    let mut draining = false;
    // A sync is due after the file's last write: no more is issued until every write in
    // flight has completed, then the file is synced (timed) and the loop goes on.
    let mut sync_due: Option<u32> = None;
    // fio's thinktime: no more is issued until what is in flight completes, then the pause.
    let mut think_due = false;
    // fio's flow: a worker ahead of its share issues nothing more until it is not.
    let flows = !PLAIN && ctx.spec.flow_group.is_some();
    // fio's zoned mode: each I/O's zone let go once it completes.
    let zoned = !PLAIN && ctx.zones.is_some();
    let mut flow_due = false;
    let no_flow_sleep = ctx.spec.flow.is_some_and(|f| f.sleep.is_zero());
    let mut zone_due = false;
    // fio's cmdprio_percentage: an exact share of reads and of writes, spread evenly.
    let mut prio = ctx.spec.cmdprio.filter(|_| !PLAIN).map(CmdPrioShare::new);
    let ring_fd = RingFd::new(std::os::fd::AsRawFd::as_raw_fd(&ring), batch == 1);
    let (submitter, mut sq, mut cq) = ring.split();
    loop {
        // Refill. Like fio's iodepth_batch_submit (default 1), every `batch` new I/Os go to
        // the kernel as soon as they are prepared; measured on a virtio disk, submitting all
        // refills in one call kept the device less busy (docs/performance.md).
        // fio's flow: a worker ahead of its share stops issuing, completes what it has in
        // flight, then pauses `flow_sleep` (fio's io_u_quiesce and usleep); without a
        // `flow_sleep` it looks again at once, reaping nothing meanwhile, as fio's loop does.
        if flow_due && (inflight == 0 || no_flow_sleep) {
            flow_due = false;
            if !ctx.flow_pause() {
                draining = true;
            }
        }
        if holding && inflight <= low {
            holding = false;
        }
        if !draining && !flow_due && !holding {
            sq.sync();
            while let (Some(slot), None, false) = (free.front(), sync_due, think_due) {
                // Open loop: only I/Os already due are issued.
                if let Some(s) = ctx.schedule.as_ref().filter(|_| !PLAIN) {
                    if s.peek() > Instant::now() {
                        break;
                    }
                }
                if flows && !ctx.flow_take() {
                    flow_due = true;
                    break;
                }
                // (Never one deferred in the plain instance: no copy of the I/O on its way.)
                let next = match if PLAIN { None } else { deferred.take() } {
                    Some(req) => Some(req),
                    None => ctx.next_req(),
                };
                let Some(req) = next else {
                    // fio's zoned mode: a zone another worker holds is waited for once what
                    // this one has in flight completes.
                    zone_due = ctx.zone_was_busy();
                    draining = !zone_due;
                    break;
                };
                if serialize && overlaps_in_flight(&req, &slots, &busy) {
                    deferred = Some(req);
                    break;
                }
                free.take();
                // The slot keeps the I/O as it is counted: as asked, or as `read-prio` or
                // `write-prio` where it has a priority, changed in place.
                let kept = &mut slots[slot as usize].0;
                req.copy_to(kept);
                let ioprio = match &mut prio {
                    Some(p) if !PLAIN => p.take(kept),
                    _ => 0,
                };
                // Room first, then the entry is made straight in the ring (made apart and
                // copied, its fields were read back before their stores had landed). Only a
                // polling thread (fio's sqthread_poll) leaves the queue full: it issues
                // entries before it moves the queue's head past them, so their completions
                // can be reaped first. Wait for the room it has not yet given back.
                while sq.is_full() {
                    submitter.squeue_wait().map_err(EngineError::RingEnter)?;
                    sq.sync();
                }
                match req.op {
                    Op::Read => push(&mut sq, &read_entry(&parts, slot, &req, ioprio)),
                    // The offset generator makes only reads and writes.
                    _ => push_write(ctx, &parts, &mut sq, slot, &req, ioprio),
                }
                if serialize {
                    busy[slot as usize] = true;
                }
                if let Some(s) = ctx.schedule.as_mut().filter(|_| !PLAIN) {
                    due[slot as usize] = s.take();
                }
                if !PLAIN && req.op == Op::Write && ctx.write_done() {
                    sync_due = Some(req.file);
                }
                think_due = !PLAIN && ctx.think_due();
                inflight += 1;
                if inflight == depth && low < depth {
                    holding = true;
                    break;
                }
                // A batch goes as soon as it is made, but the last before a wait goes with the
                // wait, in one call (as t/io_uring's); fio's one I/O a submission is submitted
                // at once, then waited for (measured, docs/performance.md).
                if free.pending() >= batch && (batch == 1 || !free.is_empty()) {
                    submit(
                        &ring_fd, &mut sq, &mut free, &mut slots, &ctx.clock, 0, polled,
                    )?;
                }
            }
        }
        // Nothing in flight (so nothing pending either): the writes before a sync are done,
        // or a thinktime's pause may start.
        if inflight == 0 && settle(ctx, &mut sync_due, &mut think_due, &raw) {
            continue;
        }
        if inflight == 0 && std::mem::take(&mut zone_due) {
            continue;
        }
        if flow_due && (inflight == 0 || no_flow_sleep) {
            continue;
        }
        let next_due = ctx
            .schedule
            .as_ref()
            .filter(|_| !PLAIN && !draining)
            .map(|s| s.peek());
        if inflight == 0 {
            match next_due {
                // Open loop, nothing in flight: sleep until the next I/O is due.
                Some(t) if !ctx.pace.expired(Instant::now()) => {
                    draining = !idle_until(ctx, t);
                    continue;
                }
                _ => {
                    ctx.pace_settle();
                    return Ok(());
                }
            }
        }
        // Wait only when fewer completions are ready than fio's iodepth_batch_complete_min
        // (that many, or all in flight where fewer are), submitting what is left, if
        // anything. An open loop waits for the first, no longer than until the next I/O is due.
        cq.sync();
        let want = if next_due.is_some() {
            1
        } else {
            reap_min.min(inflight)
        };
        let short = cq.len() < want;
        if short || free.pending() > 0 {
            let wait = if short { want } else { 0 };
            match next_due {
                Some(t) if short && !free.is_empty() => submit_until(
                    &submitter, &ring_fd, &mut sq, &mut free, &mut slots, &ctx.clock, t, polled,
                )?,
                _ => submit(
                    &ring_fd, &mut sq, &mut free, &mut slots, &ctx.clock, wait, polled,
                )?,
            }
            cq.sync();
        }
        // Reap at most `reap_max` completions (fio's iodepth_batch_complete_max, which fio
        // turns into 1 by default), then refill: the queue stays at its depth instead of
        // draining while a large batch is replaced one submission at a time. One timestamp
        // per reap, as fio (fio_gettime in init_icd).
        let end = ctx.clock.ticks();
        let over = ctx.pace_at(end);
        // Whole I/Os of a closed loop alike in operation, size and start (submitted in one
        // call) took the same time: recorded together, `alike` the run so far.
        let mut alike: Option<(IoReq, u64, u64)> = None;
        for cqe in cq.by_ref().take(reap_max) {
            let slot = cqe.user_data() as u32;
            let (req, started) = slots[slot as usize];
            let res = cqe.result();
            if (PLAIN || due.is_empty()) && res == req.len as i32 {
                match &mut alike {
                    Some((r, s, n)) if *s == started && r.op == req.op && r.len == req.len => {
                        *n += 1;
                    }
                    run => {
                        if let Some((r, s, n)) = run.replace((req, started, 1)) {
                            ctx.complete_n(&r, ctx.clock.ns(end.saturating_sub(s)), n);
                        }
                    }
                }
            } else {
                if let Some((r, s, n)) = alike.take() {
                    ctx.complete_n(&r, ctx.clock.ns(end.saturating_sub(s)), n);
                }
                // Open loop: latency from when the I/O was due (`due` is empty in a closed
                // loop).
                let scheduled = due.get(slot as usize).copied();
                let service = ctx.clock.ns(end.saturating_sub(started));
                ctx.complete_timed(&req, i64::from(res), service, end, scheduled);
            }
            if zoned {
                ctx.zone_done(&req);
            }
            ctx.bufs.done(slot as usize, cqe.result() == req.len as i32);
            free.give(slot);
            if serialize {
                busy[slot as usize] = false;
            }
            inflight -= 1;
        }
        if let Some((r, s, n)) = alike {
            ctx.complete_n(&r, ctx.clock.ns(end.saturating_sub(s)), n);
        }
        if over || ctx.failing().is_some() {
            draining = true;
        }
    }
}

/// With nothing in flight: the sync due after a file's writes (timed), or fio's thinktime
/// pause; `true` when one was made.
fn settle(
    ctx: &mut Ctx<'_>,
    sync_due: &mut Option<u32>,
    think_due: &mut bool,
    raw: &[i32],
) -> bool {
    if let Some(file) = sync_due.take() {
        ctx.sync_file(raw[file as usize], file, ctx.spec.datasync);
        return true;
    }
    if std::mem::take(think_due) {
        ctx.think();
        return true;
    }
    false
}

/// Open loop with nothing in flight: sleeps until `t`, when the next I/O is due; `false` when
/// the run was stopped meanwhile.
#[cold]
fn idle_until(ctx: &Ctx<'_>, t: Instant) -> bool {
    crate::ctx::wait_until(t, ctx.stop);
    !ctx.stop.load(std::sync::atomic::Ordering::Relaxed)
}

/// Like [`submit`] with a wait, but waiting no later than `until` (the next open-loop I/O).
/// Kernels without `IORING_FEAT_EXT_ARG` (before 5.11) get a non-blocking enter and a short
/// sleep instead.
#[allow(clippy::too_many_arguments)]
fn submit_until(
    submitter: &io_uring::Submitter<'_>,
    ring_fd: &RingFd,
    sq: &mut io_uring::SubmissionQueue<'_>,
    pending: &mut SlotRing,
    slots: &mut [(IoReq, u64)],
    clock: &crate::clock::Clock,
    until: Instant,
    polled: bool,
) -> Result<(), EngineError> {
    let left = until.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return submit(ring_fd, sq, pending, slots, clock, 0, polled);
    }
    pending.stamp(slots, clock.ticks());
    sq.sync();
    let ts = types::Timespec::from(left);
    let args = types::SubmitArgs::new().timespec(&ts);
    match submitter.submit_with_args(1, &args) {
        Ok(_) => Ok(()),
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY)
            ) =>
        {
            Ok(())
        }
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            submit(ring_fd, sq, pending, slots, clock, 0, polled)?;
            std::thread::sleep(left.min(std::time::Duration::from_micros(50)));
            Ok(())
        }
        Err(e) => Err(EngineError::RingEnter(e)),
    }
}

/// Stamps the pending I/Os with their start time and enters the kernel once: submitting them
/// and, with `wait` 1, waiting for a completion. With a polling thread (`polled`, fio's
/// sqthread_poll) the kernel takes new entries itself: it is entered only to wait, or to wake
/// the thread when it sleeps.
#[allow(clippy::too_many_arguments)]
fn submit(
    ring_fd: &RingFd,
    sq: &mut io_uring::SubmissionQueue<'_>,
    pending: &mut SlotRing,
    slots: &mut [(IoReq, u64)],
    clock: &crate::clock::Clock,
    wait: usize,
    polled: bool,
) -> Result<(), EngineError> {
    pending.stamp(slots, clock.ticks());
    sq.sync();
    // Everything still queued, including entries an earlier call left unsubmitted.
    let to_submit = sq.len() as u32;
    let wakeup = polled && sq.need_wakeup();
    if polled && wait == 0 && !wakeup {
        return Ok(());
    }
    // GETEVENTS to wait; and without waiting where each I/O is submitted alone, as fio's
    // commit does: with DEFER_TASKRUN it posts the device's completions that are ready, so
    // they are reaped (and replaced) sooner (docs/performance.md: p50 -13% on the virtio
    // disk). In larger batches, as t/io_uring's: the completions are reaped as the ring
    // holds them, and the call that only submits does no more (0.6% of a page-cached run).
    let mut flags = if wait > 0 || ring_fd.eager {
        IORING_ENTER_GETEVENTS
    } else {
        0
    };
    if wakeup {
        flags |= IORING_ENTER_SQ_WAKEUP;
    }
    loop {
        match ring_fd.enter(to_submit, wait as u32, flags) {
            Ok(_) => return Ok(()),
            Err(e)
                if e.raw_os_error() == Some(libc::EINTR)
                    || e.raw_os_error() == Some(libc::EBUSY) =>
            {
                if wait == 0 {
                    return Ok(());
                }
            }
            Err(e) => return Err(EngineError::RingEnter(e)),
        }
    }
}

#[cfg(test)]
mod overlap_tests {
    use super::{overlaps_in_flight, IoReq};
    use stormark_stats::Op;

    fn io(file: u32, offset: u64, len: u32) -> IoReq {
        IoReq {
            op: Op::Write,
            file,
            offset,
            len,
        }
    }

    /// fio's `in_flight_overlap`: a byte in common on the same file, with an I/O in flight.
    #[test]
    fn overlap_is_a_byte_in_common_with_one_in_flight() {
        let slots = [(io(0, 4096, 4096), 0), (io(1, 0, 4096), 0)];
        let both = [true, true];
        assert!(overlaps_in_flight(&io(0, 4096, 512), &slots, &both));
        assert!(overlaps_in_flight(&io(0, 0, 4097), &slots, &both));
        assert!(overlaps_in_flight(&io(0, 8191, 4096), &slots, &both));
        assert!(!overlaps_in_flight(&io(0, 0, 4096), &slots, &both));
        assert!(!overlaps_in_flight(&io(0, 8192, 4096), &slots, &both));
        assert!(overlaps_in_flight(&io(1, 0, 512), &slots, &both));
        // A slot no longer in flight overlaps nothing.
        assert!(!overlaps_in_flight(
            &io(0, 4096, 512),
            &slots,
            &[false, true]
        ));
    }
}
