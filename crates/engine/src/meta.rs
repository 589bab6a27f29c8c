//! The meta backend: metadata load as mdtest makes it. Each worker owns its items of a
//! [`MetaTree`] (a tree of directories beneath a directory of its own, or one tree shared
//! by every worker of every host) and goes through them with one operation (a phase of a
//! `stormark meta` run), or with every operation of its job in turn until the stage ends (a
//! `kind = "meta"` job beside other jobs). Each call is timed and recorded as the I/Os of the
//! other backends are; what an operation needs and was not asked for (files to stat, say) is
//! made before the worker's start, untimed.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use stormark_stats::Recorder;

use crate::ctx::Ctx;
use crate::error::EngineError;
use crate::work::MetaWork;
use namespace::{Local, Namespace};
use stormark_spec::{MetaJob, MetaOp};
use tree::MetaTree;

pub(crate) mod namespace;
pub(crate) mod sweep;
pub(crate) mod tree;

/// A meta job's tree on this host, in the namespace it is made in: one match, once per
/// worker, and the tree's code generic over the namespace from there.
#[derive(Debug, Clone)]
pub enum AnyMetaTree {
    /// In a local directory, through descriptors.
    Local(Arc<MetaTree<Local>>),
    /// On an NFS share, through each worker's own connection and file handles.
    Nfs(Arc<MetaTree<stormark_nfs::Client>>),
}

impl AnyMetaTree {
    /// The job.
    pub fn job(&self) -> &MetaJob {
        match self {
            AnyMetaTree::Local(t) => t.job(),
            AnyMetaTree::Nfs(t) => t.job(),
        }
    }
}

/// Before the start (untimed): a single operation's worker readies its items.
pub(crate) fn ready(work: &MetaWork) {
    if let Some(op) = work.op {
        match &work.tree {
            AnyMetaTree::Local(t) => t.ready(work.worker, op),
            AnyMetaTree::Nfs(t) => t.ready(work.worker, op),
        }
        if let Some(upto) = work
            .top_up
            .filter(|_| !op.on_dirs() && op != MetaOp::Create)
        {
            match &work.tree {
                AnyMetaTree::Local(t) => t.top_up(work.worker, upto),
                AnyMetaTree::Nfs(t) => t.top_up(work.worker, upto),
            }
        }
    }
}

/// Goes through the worker's items until done, the stage's end or a stop.
pub(crate) fn run_meta(ctx: &mut Ctx<'_>, work: &MetaWork) -> Result<(), EngineError> {
    match &work.tree {
        AnyMetaTree::Local(t) => run_on(ctx, t, work),
        AnyMetaTree::Nfs(t) => run_on(ctx, t, work),
    }
}

fn run_on<N: Namespace>(
    ctx: &mut Ctx<'_>,
    tree: &MetaTree<N>,
    work: &MetaWork,
) -> Result<(), EngineError> {
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
                tree.timed(work.worker, op, &mut rec, &mut each);
                if tree.job.sync_phases {
                    // mdtest's -Y: sync(2) at the phase's end, within its time.
                    let start = Instant::now();
                    // SAFETY: sync takes no argument and cannot fail.
                    unsafe { libc::sync() };
                    rec.record(
                        stormark_stats::Op::Sync,
                        0,
                        start.elapsed().as_nanos() as u64,
                    );
                }
            }
            None => {
                // A storm beside other load: the job's operations in turn, each readied
                // (untimed, but within the stage) as a phase of its own would be.
                let timed = ctx.spec.stop.time.is_some();
                'cycles: loop {
                    for &op in &tree.job.ops {
                        tree.ready(work.worker, op);
                        if !tree.timed(work.worker, op, &mut rec, &mut each) {
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
