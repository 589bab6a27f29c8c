//! The io_uring backend: `iodepth` I/Os in flight, new submissions batched into the same
//! `io_uring_enter` that waits for the next completion.

use std::collections::VecDeque;
use std::time::Instant;

use io_uring::{opcode, squeue, types, IoUring};
use stormark_spec::Ring;

/// `IORING_ENTER_GETEVENTS` and `IORING_ENTER_SQ_WAKEUP` from linux/io_uring.h.
const IORING_ENTER_GETEVENTS: u32 = 1;
const IORING_ENTER_SQ_WAKEUP: u32 = 2;
use stormark_stats::Op;

use crate::ctx::Ctx;
use crate::data::Payload;
use crate::error::EngineError;
use crate::offsets::IoReq;

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
    let attempts: [fn(&mut io_uring::Builder); 3] = [
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
    let depth = ctx.spec.iodepth.max(1) as usize;
    let batch = (ctx.spec.iodepth_batch.max(1) as usize).min(depth);
    let reap_max = (ctx.spec.iodepth_batch_complete.max(1) as usize).min(depth);
    // fio's iodepth_low: once the queue is full, no refill until this few are in flight.
    let low = ctx
        .spec
        .iodepth_low
        .map_or(depth, |l| (l as usize).min(depth));
    let mut holding = false;
    // fio's serialize_overlap: an I/O that overlaps one in flight waits (kept here) until
    // that one completes; `busy` says which slots are in flight, scanned before each issue
    // (at most `depth` compares, no allocation).
    let serialize = ctx.spec.serialize_overlap && depth > 1;
    let mut busy: Vec<bool> = vec![false; if serialize { depth } else { 0 }];
    let mut deferred: Option<IoReq> = None;
    let mut features = ctx.spec.ring;
    let polled = features.sq_poll;
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
    let mut due: Vec<Instant> =
        vec![Instant::now(); if ctx.schedule.is_some() { depth } else { 0 }];
    // Slots are taken in turn (first freed, first reused), so that writes cycle through all
    // of the write pool's regions.
    let mut free: VecDeque<u32> = (0..depth as u32).collect();
    let mut pending: Vec<u32> = Vec::with_capacity(depth);
    let mut inflight = 0usize;
    let mut draining = false;
    // A sync is due after the file's last write: no more is issued until every write in
    // flight has completed, then the file is synced (timed) and the loop goes on.
    let mut sync_due: Option<u32> = None;
    // fio's thinktime: no more is issued until what is in flight completes, then the pause.
    let mut think_due = false;
    // fio's flow: a worker ahead of its share issues nothing more until it is not.
    let flows = ctx.spec.flow_group.is_some();
    // fio's zoned mode: each I/O's zone let go once it completes.
    let zoned = ctx.zones.is_some();
    let mut flow_due = false;
    let no_flow_sleep = ctx.spec.flow.is_some_and(|f| f.sleep.is_zero());
    let mut zone_due = false;
    // fio's cmdprio_percentage: an exact share of reads and of writes, spread evenly.
    let mut prio = ctx.spec.cmdprio.map(CmdPrioShare::new);
    let ring_fd = RingFd::new(std::os::fd::AsRawFd::as_raw_fd(&ring));
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
            while let (Some(&slot), None, false) = (free.front(), sync_due, think_due) {
                // Open loop: only I/Os already due are issued.
                if let Some(s) = &ctx.schedule {
                    if s.peek() > Instant::now() {
                        break;
                    }
                }
                if flows && !ctx.flow_take() {
                    flow_due = true;
                    break;
                }
                let next = match deferred.take() {
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
                free.pop_front();
                let (ioprio, counted) = match &mut prio {
                    None => (0, req),
                    Some(p) => p.take(req),
                };
                let entry = entry_of(ctx, fds[req.file as usize], features, slot, &req, ioprio);
                // SAFETY: the buffer region of this slot stays valid and untouched until its
                // completion is reaped below; the ring has one entry per slot.
                while unsafe { sq.push(&entry) }.is_err() {
                    // Only with a polling thread (fio's sqthread_poll): it issues entries
                    // before it moves the queue's head past them, so their completions can
                    // be reaped first. Wait for the room it has not yet given back.
                    submitter.squeue_wait().map_err(EngineError::RingEnter)?;
                    sq.sync();
                }
                slots[slot as usize].0 = counted;
                if serialize {
                    busy[slot as usize] = true;
                }
                if let Some(s) = &mut ctx.schedule {
                    due[slot as usize] = s.take();
                }
                if req.op == Op::Write && ctx.write_done() {
                    sync_due = Some(req.file);
                }
                think_due = ctx.think_due();
                pending.push(slot);
                inflight += 1;
                if inflight == depth && low < depth {
                    holding = true;
                    break;
                }
                if pending.len() >= batch {
                    submit(
                        &ring_fd,
                        &mut sq,
                        &mut pending,
                        &mut slots,
                        &ctx.clock,
                        0,
                        polled,
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
            .map(|s| s.peek())
            .filter(|_| !draining);
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
        // Wait only when nothing is ready (submitting what is left, if anything); in an open
        // loop, no longer than until the next I/O is due.
        cq.sync();
        if cq.is_empty() || !pending.is_empty() {
            let wait = usize::from(cq.is_empty());
            match next_due {
                Some(t) if wait == 1 && !free.is_empty() => submit_until(
                    &submitter,
                    &ring_fd,
                    &mut sq,
                    &mut pending,
                    &mut slots,
                    &ctx.clock,
                    t,
                    polled,
                )?,
                _ => submit(
                    &ring_fd,
                    &mut sq,
                    &mut pending,
                    &mut slots,
                    &ctx.clock,
                    wait,
                    polled,
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
            if due.is_empty() && res == req.len as i32 {
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
            free.push_back(slot);
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

/// How this thread names its ring to `io_uring_enter`: by the index of the ring's descriptor
/// registered with the thread, as t/io_uring's `-X1` (IORING_REGISTER_RING_FDS, 5.18; no
/// descriptor lookup per call), or by the descriptor where the kernel has it not. The index
/// is given back when dropped: a thread holds 16 at most, each keeping its ring's memory
/// until the thread exits.
struct RingFd {
    fd: i32,
    registered: Option<u32>,
}

/// `IORING_ENTER_REGISTERED_RING`, and `IORING_(UN)REGISTER_RING_FDS`, from linux/io_uring.h.
const IORING_ENTER_REGISTERED_RING: u32 = 16;
const IORING_REGISTER_RING_FDS: libc::c_long = 20;
const IORING_UNREGISTER_RING_FDS: libc::c_long = 21;

/// struct io_uring_rsrc_update of linux/io_uring.h.
#[repr(C)]
struct RsrcUpdate {
    offset: u32,
    resv: u32,
    data: u64,
}

impl RingFd {
    fn new(fd: i32) -> RingFd {
        // Any free slot (-1): the kernel says which in `offset`.
        let mut up = RsrcUpdate {
            offset: u32::MAX,
            resv: 0,
            data: fd as u64,
        };
        // SAFETY: one io_uring_rsrc_update that outlives the call, on the ring's descriptor.
        let r = unsafe {
            libc::syscall(
                libc::SYS_io_uring_register,
                fd,
                IORING_REGISTER_RING_FDS,
                &mut up as *mut RsrcUpdate,
                1,
            )
        };
        RingFd {
            fd,
            registered: (r == 1).then_some(up.offset),
        }
    }

    /// One `io_uring_enter` with no signal mask: `to_submit` entries, waiting for
    /// `min_complete` completions where `flags` has GETEVENTS.
    #[inline(always)]
    fn enter(&self, to_submit: u32, min_complete: u32, flags: u32) -> std::io::Result<()> {
        let (fd, flags) = match self.registered {
            Some(i) => (i as i32, flags | IORING_ENTER_REGISTERED_RING),
            None => (self.fd, flags),
        };
        // SAFETY: no argument struct is passed (null, size 0); the counts refer to entries
        // already in the submission queue.
        let r = unsafe { enter_raw(fd, to_submit, min_complete, flags) };
        if r < 0 {
            return Err(std::io::Error::from_raw_os_error(-r as i32));
        }
        Ok(())
    }
}

impl Drop for RingFd {
    fn drop(&mut self) {
        if let Some(offset) = self.registered {
            let up = RsrcUpdate {
                offset,
                resv: 0,
                data: 0,
            };
            // SAFETY: as in `new`; the ring's descriptor is still open (the ring is dropped
            // after this).
            unsafe {
                libc::syscall(
                    libc::SYS_io_uring_register,
                    self.fd,
                    IORING_UNREGISTER_RING_FDS,
                    &up as *const RsrcUpdate,
                    1,
                );
            }
        }
    }
}

/// The system call itself, inline, as t/io_uring's `__do_syscall6` (libc's variadic
/// `syscall` costs 0.5% of a page-cached run at depth 32): the result, or `-errno`.
///
/// # Safety
/// As `io_uring_enter(2)` with a null argument.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn enter_raw(fd: i32, to_submit: u32, min_complete: u32, flags: u32) -> isize {
    let ret: isize;
    // SAFETY: the x86-64 system call convention; rcx and r11 are clobbered by `syscall`.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") libc::SYS_io_uring_enter as isize => ret,
            in("rdi") fd as isize,
            in("rsi") to_submit as usize,
            in("rdx") min_complete as usize,
            in("r10") flags as usize,
            in("r8") 0usize,
            in("r9") 0usize,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

/// Elsewhere, libc's `syscall`.
///
/// # Safety
/// As `io_uring_enter(2)` with a null argument.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
unsafe fn enter_raw(fd: i32, to_submit: u32, min_complete: u32, flags: u32) -> isize {
    // SAFETY: as the caller's.
    let r = unsafe {
        libc::syscall(
            libc::SYS_io_uring_enter,
            fd,
            to_submit,
            min_complete,
            flags,
            std::ptr::null::<libc::c_void>(),
            0usize,
        )
    };
    if r < 0 {
        -(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO) as isize)
    } else {
        r as isize
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

/// The submission of `req` in `slot`'s buffer: a read, or a write of the slot's payload
/// (plain, or vectored when the data is made in pieces); by the file's registered index and
/// the buffer's registered area where the job asks (fio's `registerfiles`, `fixedbufs`).
#[inline(always)]
fn entry_of(
    ctx: &mut Ctx<'_>,
    (fd, base): (types::Fd, u64),
    features: Ring,
    slot: u32,
    req: &IoReq,
    ioprio: u16,
) -> squeue::Entry {
    let offset = base + req.offset;
    let atomic = if ctx.spec.atomic { libc::RWF_ATOMIC } else { 0 };
    // One entry for either kind of file reference (the crate's trait for both is sealed).
    macro_rules! entry {
        ($fd:expr) => {
            match req.op {
                Op::Read if features.fixed_bufs => {
                    opcode::ReadFixed::new($fd, ctx.bufs.read_at(slot as usize), req.len, 0)
                        .offset(offset)
                        .ioprio(ioprio)
                        .build()
                }
                Op::Read => opcode::Read::new($fd, ctx.bufs.read_at(slot as usize), req.len)
                    .offset(offset)
                    .ioprio(ioprio)
                    .build(),
                // The offset generator makes only reads and writes.
                _ => match ctx.bufs.write(slot as usize, req, ctx.tag ^ ctx.issued) {
                    Payload::Plain(p) => {
                        match ctx.bufs.pool_area(p).filter(|_| features.fixed_bufs) {
                            Some(area) => opcode::WriteFixed::new($fd, p, req.len, area)
                                .offset(offset)
                                .ioprio(ioprio)
                                .rw_flags(atomic)
                                .build(),
                            None => opcode::Write::new($fd, p, req.len)
                                .offset(offset)
                                .ioprio(ioprio)
                                .rw_flags(atomic)
                                .build(),
                        }
                    }
                    Payload::Vectored(iov, n) => opcode::Writev::new($fd, iov, n)
                        .offset(offset)
                        .ioprio(ioprio)
                        .build(),
                },
            }
        };
    }
    if features.registered_files {
        entry!(types::Fixed(req.file))
    } else {
        entry!(fd)
    }
    .user_data(u64::from(slot))
}

/// fio's `cmdprio_percentage` and `cmdprio_bssplit`: which reads and writes carry a priority
/// and which: per direction, entries of a share of the I/Os (of one block size, or of any),
/// each an exact share spread evenly, and the value the kernel takes.
struct CmdPrioShare {
    entries: [Vec<PrioShare>; 2],
}

/// One share: of the I/Os of `bs` bytes (0: any), `share` get `value`; `owed` is what is due.
struct PrioShare {
    bs: u64,
    share: f64,
    owed: f64,
    value: u16,
}

impl CmdPrioShare {
    fn new(c: stormark_spec::CmdPrio) -> CmdPrioShare {
        let own = |e: &stormark_spec::PrioEntry| {
            let (class, level, hint) = e.prio.unwrap_or((c.class, c.level, c.hint));
            PrioShare {
                bs: e.bs,
                share: f64::from(e.share) / 100.0,
                owed: 0.0,
                value: stormark_spec::CmdPrio::value(class, level, hint),
            }
        };
        let entries = match &c.split {
            Some(split) => [split.reads(), split.writes()]
                .map(|l| l.iter().filter(|e| e.share > 0).map(own).collect()),
            None => c.share.map(|share| {
                let any = stormark_spec::PrioEntry {
                    bs: 0,
                    share,
                    prio: None,
                };
                (share > 0).then(|| own(&any)).into_iter().collect()
            }),
        };
        CmdPrioShare { entries }
    }

    /// The priority `req` is submitted with (0: the worker's own), and the request as it is
    /// counted (`read-prio`, `write-prio` for those with a priority of their own).
    fn take(&mut self, req: IoReq) -> (u16, IoReq) {
        let (d, op) = match req.op {
            Op::Read => (0, Op::ReadPrio),
            Op::Write => (1, Op::WritePrio),
            _ => return (0, req),
        };
        // Each share is owed what it has not had; once they are owed a whole I/O together,
        // the most owed takes this one: every share exact and spread evenly, and with
        // shares of 100% every I/O.
        let mut owed = 0.0;
        let mut most: Option<&mut PrioShare> = None;
        for e in &mut self.entries[d] {
            if e.bs != 0 && e.bs != u64::from(req.len) {
                continue;
            }
            e.owed += e.share;
            owed += e.owed;
            if most.as_ref().is_none_or(|m| e.owed > m.owed) {
                most = Some(e);
            }
        }
        let value = match most {
            Some(e) if owed >= 1.0 - 1e-9 => {
                e.owed -= 1.0;
                e.value
            }
            _ => 0,
        };
        if value == 0 {
            (0, req)
        } else {
            (value, IoReq { op, ..req })
        }
    }
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
    pending: &mut Vec<u32>,
    slots: &mut [(IoReq, u64)],
    clock: &crate::clock::Clock,
    until: Instant,
    polled: bool,
) -> Result<(), EngineError> {
    let left = until.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return submit(ring_fd, sq, pending, slots, clock, 0, polled);
    }
    let start = clock.ticks();
    for &slot in pending.iter() {
        slots[slot as usize].1 = start;
    }
    pending.clear();
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
    pending: &mut Vec<u32>,
    slots: &mut [(IoReq, u64)],
    clock: &crate::clock::Clock,
    wait: usize,
    polled: bool,
) -> Result<(), EngineError> {
    let start = clock.ticks();
    for &slot in pending.iter() {
        slots[slot as usize].1 = start;
    }
    pending.clear();
    sq.sync();
    // Everything still queued, including entries an earlier call left unsubmitted.
    let to_submit = sq.len() as u32;
    let flags = if polled && sq.need_wakeup() {
        IORING_ENTER_GETEVENTS | IORING_ENTER_SQ_WAKEUP
    } else {
        IORING_ENTER_GETEVENTS
    };
    if polled && wait == 0 && flags == IORING_ENTER_GETEVENTS {
        return Ok(());
    }
    loop {
        // GETEVENTS even when not waiting, as fio's commit does: with DEFER_TASKRUN it posts
        // completions that are ready, so they are reaped (and replaced) sooner.
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
mod tests {
    use super::*;

    fn read(len: u32) -> IoReq {
        IoReq {
            op: Op::Read,
            file: 0,
            offset: 0,
            len,
        }
    }

    /// fio's `cmdprio_bssplit`: shares of one block size's reads go to their priorities
    /// exactly, other sizes untouched; shares of 100% give every I/O one; writes of their own
    /// list.
    #[test]
    fn prio_shares_by_block_size_are_exact() {
        let split = stormark_spec::PrioSplit::parse("64k/25/1/1:64k/75/3/2:1m/0,1m/40").unwrap();
        let mut s = CmdPrioShare::new(stormark_spec::CmdPrio {
            share: [0, 0],
            class: 1,
            level: 0,
            hint: 0,
            split: Some(split),
        });
        let mut got = std::collections::HashMap::new();
        for i in 0..800 {
            let (v, req) = s.take(read(if i % 2 == 0 { 65536 } else { 1 << 20 }));
            *got.entry((v, req.op, req.len)).or_insert(0) += 1;
        }
        let high = stormark_spec::CmdPrio::value(1, 1, 0);
        let idle = stormark_spec::CmdPrio::value(3, 2, 0);
        assert_eq!(got[&(high, Op::ReadPrio, 65536)], 100);
        assert_eq!(got[&(idle, Op::ReadPrio, 65536)], 300);
        assert_eq!(got[&(0, Op::Read, 1 << 20)], 400);
        assert_eq!(got.len(), 3);
        let writes = (0..100)
            .filter(|_| {
                let (v, _) = s.take(IoReq {
                    op: Op::Write,
                    ..read(1 << 20)
                });
                v == stormark_spec::CmdPrio::value(1, 0, 0)
            })
            .count();
        assert_eq!(writes, 40);
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
