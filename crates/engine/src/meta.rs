//! The meta backend: metadata load as mdtest makes it. Each worker owns its items of a
//! [`MetaTree`] (a tree of directories beneath a directory of its own, or one tree shared
//! by every worker of every host) and goes through them with one operation (a phase of a
//! `stormark meta` run), or with every operation of its job in turn until the stage ends (a
//! `kind = "meta"` job beside other jobs). Each call is timed and recorded as the I/Os of the
//! other backends are; what an operation needs and was not asked for (files to stat, say) is
//! made before the worker's start, untimed.

use std::sync::atomic::Ordering;
use std::time::Instant;

use stormark_stats::Recorder;

use crate::ctx::Ctx;
use crate::error::EngineError;
use crate::work::MetaWork;

pub(crate) mod sweep;
pub(crate) mod tree;

/// Before the start (untimed): a single operation's worker readies its items.
pub(crate) fn ready(work: &MetaWork) {
    if let Some(op) = work.op {
        work.tree.ready(work.worker, op);
    }
}

/// Goes through the worker's items until done, the stage's end or a stop.
pub(crate) fn run_meta(ctx: &mut Ctx<'_>, work: &MetaWork) -> Result<(), EngineError> {
    let stop = ctx.stop;
    let mut rec = std::mem::take(&mut ctx.rec);
    {
        let pace = &mut ctx.pace;
        let tx = ctx.tx;
        let mut each = |rec: &mut Recorder, now: Instant, _bytes: u64| {
            pace.tick(now, rec, tx);
            !pace.expired(now) && !stop.load(Ordering::Relaxed)
        };
        match work.op {
            Some(op) => {
                work.tree.timed(work.worker, op, &mut rec, &mut each);
            }
            None => {
                // A storm beside other load: the job's operations in turn, each readied
                // (untimed, but within the stage) as a phase of its own would be.
                let timed = ctx.spec.stop.time.is_some();
                'cycles: loop {
                    for &op in &work.tree.job.ops {
                        work.tree.ready(work.worker, op);
                        if !work.tree.timed(work.worker, op, &mut rec, &mut each) {
                            break 'cycles;
                        }
                    }
                    if !timed {
                        break;
                    }
                }
            }
        }
    }
    ctx.rec = rec;
    Ok(())
}
