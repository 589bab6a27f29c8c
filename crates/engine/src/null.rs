//! The null backend: each request completes at once, no I/O (fio's `null`): measures the
//! tool itself and makes coordinator and report tests deterministic.

use std::time::Instant;

use crate::ctx::{wait_until, Ctx};
use crate::error::EngineError;

/// Runs the loop until the stop rule or the deadline.
pub(crate) fn run_null(ctx: &mut Ctx<'_>) -> Result<(), EngineError> {
    let mut stall = ctx
        .spec
        .stall
        .map(|(at, len)| (ctx.pace.measured_start - ctx.spec.ramp + at, len));
    // fio's thinktime, checked only where it is asked for.
    let thinks = ctx.spec.think.is_some();
    // fio's flow, likewise.
    let flows = ctx.spec.flow_group.is_some();
    // fio's zoned mode: each I/O's zone let go once it completes.
    let zoned = ctx.zones.is_some();
    loop {
        if flows && !ctx.flow_wait() {
            break;
        }
        let Some(req) = ctx.next_req() else {
            break;
        };
        let due = ctx.schedule.as_mut().map(|s| {
            let t = s.take();
            wait_until(t, ctx.stop);
            t
        });
        let start = ctx.clock.ticks();
        if let Some((at, len)) = stall {
            if Instant::now() >= at {
                // The injected stall (tests): this one I/O takes `len`.
                std::thread::sleep(len);
                stall = None;
            }
        }
        let end = ctx.clock.ticks();
        let service = ctx.clock.ns(end.saturating_sub(start));
        let over = ctx.pace_at(end);
        ctx.complete_timed(&req, i64::from(req.len), service, end, due);
        if zoned {
            ctx.zone_done(&req);
        }
        if over {
            break;
        }
        if thinks && ctx.think_due() {
            ctx.think();
        }
    }
    ctx.pace_settle();
    Ok(())
}
