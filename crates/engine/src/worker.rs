//! One worker: opens its files, allocates its buffers, waits at the gate, runs its backend's
//! loop (`uring`, `psync`, `null`), and reports.

use std::fs::File;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;

use stormark_stats::Recorder;

use crate::ctx::{Ctx, Pace, Schedule, WorkerMsg};
use crate::data::Buffers;
use crate::error::EngineError;
use crate::gate::Gate;
use crate::offsets::OffsetGen;
use crate::remote::Remote;
use crate::target::WorkerSpec;
use crate::verify::Verifier;
use crate::work::Load;

/// Runs one worker: open, wait at the gate, loop, report. Never panics on I/O errors.
pub(crate) fn run_worker(
    worker: usize,
    spec: &WorkerSpec,
    gate: &Gate,
    stop: &Arc<AtomicBool>,
    tx: &Sender<WorkerMsg>,
) {
    // Its CPUs and memory policy first, so that its buffers come from where it runs.
    let setup = match crate::placement::apply(spec) {
        Ok(()) => setup(spec),
        Err(e) => Err(EngineError::Placement(e)),
    };
    // A meta worker readies its items for its operation, untimed, before the start.
    if let (Ok(_), Load::Meta(work)) = (&setup, &spec.load) {
        crate::meta::ready(work);
    }
    // A worker of a service logs in (to its LUN) or mounts (its share) and opens its files
    // before the start, so that none of that is measured.
    let mut lun = None;
    let mut share = None;
    let setup = match (setup, &spec.load) {
        (Ok(s), Load::Iscsi(work)) => crate::iscsi::connect(work).map(|c| {
            lun = Some(c);
            s
        }),
        (Ok(s), Load::Nfs(work)) => crate::nfs::connect(work, spec).map(|c| {
            share = Some(c);
            s
        }),
        (s, _) => s,
    };
    // Everyone waits at the gate, even a worker that failed to set up, so that the others
    // are not left waiting.
    // fio's flow: the worker's weight counts once it is ready, until it ends.
    let flow = spec
        .flow_group
        .as_ref()
        .zip(spec.flow)
        .filter(|_| setup.is_ok());
    if let Some((g, f)) = flow {
        g.weight.fetch_add(u64::from(f.weight), Ordering::Relaxed);
    }
    let t0 = gate.wait();
    let (files, bufs, gen, zones) = match setup {
        Ok(s) => s,
        Err(e) => {
            let _ = tx.send(WorkerMsg::Done {
                worker,
                end_ns: 0,
                failure: Some(e.to_string()),
            });
            return;
        }
    };
    // fio's startdelay: idle from the stage's start, its seconds counted with the others'.
    if !spec.start_delay.is_zero() {
        crate::ctx::wait_until(t0 + spec.start_delay, stop);
    }
    let io_total = spec.stop.io_total.unwrap_or(u64::MAX);
    let mut ctx = Ctx {
        spec,
        files,
        bufs,
        gen,
        rec: Recorder::new(),
        pace: Pace::new(t0, spec, worker, &gate.steady_start_ns),
        stop,
        stop_shared: stop,
        tx,
        issued: 0,
        io_total,
        consecutive_errors: 0,
        schedule: Schedule::new(
            t0 + spec.start_delay,
            spec.rate_iops,
            spec.rate_poisson,
            spec.seed,
        ),
        writes_since_sync: 0,
        tag: spec.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) << 20,
        // The first pass's files left the cache before the stage (the agent's drop).
        next_pass: if zones.is_some() {
            0
        } else if spec.invalidate_each_pass {
            spec.files.iter().map(|f| f.len).sum::<u64>().max(1)
        } else {
            u64::MAX
        },
        think_left: spec.think.map_or(0, |t| t.every),
        flow_own: 0,
        clock: crate::clock::Clock::new(),
        pace_check: 0,
        last_end: 0,
        zones,
    };
    let only = spec.verify.is_some_and(|v| v.only);
    let failure = match &spec.load {
        _ if only => Ok(()),
        Load::Psync => crate::psync::run_psync(&mut ctx),
        Load::Null => crate::null::run_null(&mut ctx),
        Load::IoUring => crate::uring::run(&mut ctx),
        Load::S3(work) => crate::s3::run_s3(&mut ctx, work),
        Load::Net(work) => crate::net::run_net(&mut ctx, work),
        Load::Meta(work) => crate::meta::run_meta(&mut ctx, work),
        Load::Iscsi(_) => match lun.as_mut() {
            Some(l) => crate::remote::run_remote(&mut ctx, l, EngineError::Iscsi),
            None => Err(EngineError::Iscsi("no iSCSI session".into())),
        },
        Load::Nfs(_) => match share.as_mut() {
            Some(c) => crate::remote::run_remote(&mut ctx, c, EngineError::Nfs),
            None => Err(EngineError::Nfs("no NFS connection".into())),
        },
    };
    // fio's end_fsync: every file written, synced once the load ends, each timed.
    if spec.end_fsync && spec.read_pct < 100 && failure.is_ok() {
        use std::os::fd::AsRawFd;
        let fds: Vec<i32> = ctx.files.iter().map(|f| f.as_raw_fd()).collect();
        for (i, fd) in fds.into_iter().enumerate() {
            ctx.sync_file(fd, i as u32, false);
        }
    }
    let failure = failure.err().or_else(|| ctx.failing());
    // --verify: every block written read back and checked, once the load is over.
    // Requests abandoned in flight (Ctrl-C during a stall): the connection is not read again.
    let abandoned = lun.as_ref().is_some_and(|l| l.inflight() > 0)
        || share.as_ref().is_some_and(|c| c.inflight() > 0);
    let failure = match failure {
        None if spec.verify.is_some() && !matches!(spec.load, Load::Null) && !abandoned => {
            match crate::verify::pass::verify_pass(
                &mut ctx,
                match (lun.as_mut(), share.as_mut()) {
                    (Some(l), _) => Some(l as &mut dyn crate::remote::Remote),
                    (_, Some(c)) => Some(c as &mut dyn crate::remote::Remote),
                    _ => None,
                },
            ) {
                Ok(bad) => bad,
                Err(e) => Some(e.to_string()),
            }
        }
        f => f.map(|e| e.to_string()),
    };
    let failure = failure.or_else(|| ctx.pace.below_min().map(str::to_string));
    // Out of the flow: the others share it without this worker's weight and count.
    if let Some((g, f)) = flow {
        g.weight.fetch_sub(u64::from(f.weight), Ordering::Relaxed);
        g.done.fetch_sub(ctx.flow_own, Ordering::Relaxed);
    }
    ctx.pace.finish(&mut ctx.rec, tx, failure);
}

type Setup = (
    Vec<File>,
    Buffers,
    OffsetGen,
    Option<Box<crate::zoned::Zoning>>,
);

/// fio's zoned mode: the file's zones (the run's, or the worker's own) and the whole zones of
/// the worker's region.
fn zones(spec: &WorkerSpec) -> Result<Option<Box<crate::zoned::Zoning>>, EngineError> {
    let (Some(rules), Some(f)) = (spec.zoned, spec.files.first()) else {
        return Ok(None);
    };
    let map = spec
        .zone_map
        .clone()
        .unwrap_or_else(|| Arc::new(crate::zoned::ZoneMap::new(&rules)));
    let random = spec.random_pct > 0;
    match map.region(f.start, f.len, spec.bs_min, random, rules) {
        Some(mut used) => {
            // A job checking what it writes fills its zones once, from empty.
            used.keep = spec.verify.is_some_and(|v| !v.only) && spec.read_pct < 100;
            if used.keep {
                map.empty_region(&used);
            }
            Ok(Some(Box::new(crate::zoned::Zoning {
                map,
                used,
                held: 0,
                parked: None,
                busy: false,
                wrote: false,
            })))
        }
        None => Err(EngineError::NoZone {
            path: f.shown(),
            start: f.start,
            len: f.len,
            zone: map.zone_size(),
        }),
    }
}

/// fio's `fadvise_hint`: a random pattern's file is advised random (the kernel reads no
/// more than asked), a sequential one's sequential (a larger readahead); a mix neither.
fn advise(file: &File, random_pct: u8) {
    use std::os::fd::AsRawFd;
    let advice = match random_pct {
        100 => libc::POSIX_FADV_RANDOM,
        0 => libc::POSIX_FADV_SEQUENTIAL,
        _ => return,
    };
    // SAFETY: an open descriptor; advice only, no memory is touched.
    unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, advice) };
}

fn setup(spec: &WorkerSpec) -> Result<Setup, EngineError> {
    let only = spec.verify.is_some_and(|v| v.only);
    let writes = (spec.read_pct < 100 || spec.write_once) && !only;
    let mut files = Vec::with_capacity(spec.files.len());
    if spec.load.backend().touches_files() {
        for f in &spec.files {
            let file = f
                .open_with(writes, spec.direct, spec.sync_flags)
                .map_err(|source| EngineError::Open {
                    path: f.shown(),
                    source,
                })?;
            if spec.fadvise_hint && !spec.direct && !spec.write_once {
                advise(&file, spec.random_pct);
            }
            // Fresh writes: the file emptied before the gate (every worker of the stage before
            // any write), so each phase's writes allocate its blocks as IOR's new files do.
            if spec.fresh && writes {
                file.set_len(0).map_err(|source| EngineError::Open {
                    path: f.shown(),
                    source,
                })?;
            }
            files.push(file);
        }
    }
    let lens: Vec<u64> = if spec.files.is_empty() {
        vec![spec.bs_max.max(1) * 1024]
    } else {
        spec.files.iter().map(|f| f.len).collect()
    };
    if let Some(f) = spec.files.iter().find(|f| f.len < spec.bs_max) {
        return Err(EngineError::TooSmall {
            path: f.shown(),
            len: f.len,
            bs: spec.bs_max,
        });
    }
    let slots = if matches!(spec.load, Load::IoUring | Load::Iscsi(_) | Load::Nfs(_)) {
        spec.iodepth as usize
    } else {
        1
    };
    let verifier = spec.verify.filter(|v| !v.only && writes).map(|v| {
        // A run's mark in every header: a block of another run is a write lost.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let lens: Vec<u64> = spec.files.iter().map(|f| f.len).collect();
        Verifier::new(now ^ spec.seed.rotate_left(32), v.block, &lens, slots)
    });
    let bufs = Buffers::new(
        slots,
        spec.bs_max,
        spec.read_pct > 0 && !spec.write_once,
        writes,
        &spec.data,
        spec.seed,
        verifier,
    )?;
    let gen = if spec.write_once {
        OffsetGen::write_once(lens, spec.bs_max)
    } else {
        OffsetGen::new(
            lens,
            crate::offsets::Pattern {
                read_pct: spec.read_pct,
                random_pct: spec.random_pct,
                bs_min: spec.bs_min,
                bs_max: spec.bs_max,
                bs_align: spec.bs_align,
                dist: spec.distribution,
                split: spec.bs_split,
                seq_add: spec.seq_add,
                rand_run: spec.rand_run,
                rand_run_same: spec.rand_run_same,
                random_map: spec.random_map,
                zones: spec.zones,
                sprandom: spec.sprandom,
                trim: spec.trim,
            },
            spec.seed,
        )
    };
    Ok((files, bufs, gen, zones(spec)?))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use std::time::Duration;

    use crate::stage::{run_stage, StageEvent};
    use crate::target::{FileTarget, Stop, WorkerSpec};

    /// Issue 31: fio's thinktime: a pause of 20 ms after every 4 I/Os, so that in 1 s a
    /// worker does at most 4 x (1 s / 20 ms + 1) I/Os whatever the machine, on psync and on
    /// io_uring at depth 4 (whose pauses wait for what is in flight), and many more without.
    #[test]
    fn thinktime_pauses_after_every_n_ios() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 1 << 20]).unwrap();
        let ops = |load: crate::Load, think: bool| {
            let spec = WorkerSpec {
                load,
                iodepth: 4,
                stop: Stop {
                    time: Some(Duration::from_secs(1)),
                    io_total: None,
                },
                think: think.then_some(crate::Think {
                    every: 4,
                    time: Duration::from_millis(20),
                    spin: Duration::from_millis(1),
                }),
                ..WorkerSpec::new(vec![FileTarget::path(path.clone(), 1 << 20)])
            };
            let mut ops = 0;
            run_stage(vec![spec], Arc::new(AtomicBool::new(false)), &mut |e| {
                if let StageEvent::Interval { snap, .. } = e {
                    ops += snap.total().ops;
                }
            });
            ops
        };
        let mut loads = vec![crate::Load::Psync];
        if crate::io_uring_available().is_ok() {
            loads.push(crate::Load::IoUring);
        }
        for load in loads {
            let paused = ops(load.clone(), true);
            assert!((8..=4 * 51).contains(&paused), "{paused}");
            assert!(ops(load, false) > 10 * paused);
        }
    }

    /// Issue 31: fio's startdelay. The delayed worker does nothing for its delay, then runs
    /// its whole time; its seconds are numbered with the stage's (the first it reports is
    /// past the delay).
    #[test]
    fn a_start_delay_idles_then_runs_the_whole_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 1 << 16]).unwrap();
        let spec = |delay: u64| WorkerSpec {
            load: crate::Load::Null,
            stop: Stop {
                time: Some(Duration::from_secs(1)),
                io_total: None,
            },
            start_delay: Duration::from_millis(delay),
            ..WorkerSpec::new(vec![FileTarget::path(path.clone(), 1 << 16)])
        };
        let mut first_busy = [None; 2];
        let mut end = [0u64; 2];
        run_stage(
            vec![spec(0), spec(2000)],
            Arc::new(AtomicBool::new(false)),
            &mut |e| match e {
                StageEvent::Interval {
                    worker,
                    interval,
                    snap,
                } if snap.total().ops > 0 => {
                    first_busy[worker].get_or_insert(interval);
                }
                StageEvent::Done { worker, end_ns, .. } => end[worker] = end_ns,
                _ => {}
            },
        );
        assert_eq!(first_busy[0], Some(0));
        assert_eq!(first_busy[1], Some(2), "{first_busy:?}");
        assert!(end[0] < end[1], "{end:?}");
        // Its second of load starts at 2 s: it cannot end before 3 s.
        assert!(end[1] >= 2_999_000_000, "{end:?}");
    }

    /// A loop that looks at the time only once a second (`Ctx::pace_at`) still ends at its
    /// last completion: stopped by a count, the worker's end lies past every I/O it timed
    /// (at depth 1, their service times add up to no more than it), not at the first
    /// completion the pace looked at; stopped by the time, at or past the deadline.
    #[test]
    fn a_worker_ends_at_its_last_completion_whatever_stops_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 1 << 20]).unwrap();
        let run = |load: crate::Load, stop: Stop| {
            let spec = WorkerSpec {
                load,
                stop,
                ..WorkerSpec::new(vec![FileTarget::path(path.clone(), 1 << 20)])
            };
            let (mut ops, mut busy_ns, mut end) = (0u64, 0.0f64, 0u64);
            run_stage(
                vec![spec],
                Arc::new(AtomicBool::new(false)),
                &mut |e| match e {
                    StageEvent::Interval { snap, .. } => {
                        for (_, r) in snap.ops() {
                            ops += r.ops;
                            busy_ns += r.hist.mean() * r.hist.len() as f64;
                        }
                    }
                    StageEvent::Done { end_ns, .. } => end = end_ns,
                    _ => {}
                },
            );
            (ops, busy_ns, end)
        };
        let mut loads = vec![crate::Load::Null, crate::Load::Psync];
        if crate::io_uring_available().is_ok() {
            loads.push(crate::Load::IoUring);
        }
        for load in loads {
            let counted = Stop {
                time: None,
                io_total: Some(200_000 * 4096),
            };
            let (ops, busy_ns, end) = run(load.clone(), counted);
            assert_eq!(ops, 200_000, "{load:?}");
            assert!(
                end as f64 >= busy_ns,
                "{load:?}: end {end} ns, busy {busy_ns} ns"
            );
            let timed = Stop {
                time: Some(Duration::from_millis(1500)),
                io_total: None,
            };
            let (ops, _, end) = run(load.clone(), timed);
            assert!(ops > 0, "{load:?}");
            assert!(end >= 1_500_000_000, "{load:?}: end {end} ns");
        }
    }
}
