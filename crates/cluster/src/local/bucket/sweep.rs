//! An agent's sweep of what a run's end could not remove of its objects: a service that
//! stalled at the end (its cleanup had no answer), or PUTs that went unanswered and that a
//! service resuming still stores, after any listing the end could make. The agent outlives
//! the run, so it goes on beside its service (a thread; the next coordinator is not kept
//! waiting), until the prefix lists empty once the service has answered for a while, within
//! a bound; the journal keeps the prefix until then, and names it at the next start.
//!
//! Issue 53: MinIO stopped mid-run and resumed after the run's cleanup had listed (or given
//! up on) the prefix stored the PUTs it had read before it stopped, and one object per host
//! stayed for ever (tests/s3.rs, `a_stalled_servers_late_puts_are_swept_by_the_agents`).

use std::time::{Duration, Instant};

use super::cleanup::Pass;
use super::Bucket;
use crate::local::Journal;

/// How long the service must have answered, after a pass that emptied the prefix, before a
/// pass that finds it still empty ends the sweep: the PUTs it had read when it stalled are
/// stored by then (within a second, measured; ten for a loaded host).
pub(super) const SETTLE: Duration = Duration::from_secs(10);

/// The longest one sweep goes on: a service gone for good does not keep a thread for ever
/// (the journal still names the prefix, with the command that removes it).
pub(super) const BOUND: Duration = Duration::from_secs(10 * 60);

/// Between passes while the service does not answer.
const RETRY: Duration = Duration::from_secs(2);

/// Each request of a pass waits at most this long.
const REQUEST: Duration = Duration::from_secs(10);

/// Sweeps `bucket`'s prefix beside the agent's service (`settle`: PUTs went unanswered and
/// may still be stored, so the prefix must list empty again once the service has answered
/// for [`SETTLE`]); drops its journal line when nothing can be left.
pub(super) fn spawn(bucket: Bucket, journal: Option<Journal>, settle: bool) {
    let started = std::thread::Builder::new()
        .name("stormark-s3-sweep".into())
        .spawn(move || {
            let shown = bucket.shown();
            match sweep(|until| bucket.pass(REQUEST, Some(until), None), settle) {
                Ok(removed) => {
                    if let Some(j) = &journal {
                        j.remove_objects(&bucket.run, &shown);
                    }
                    eprintln!(
                        "stormark agent: removed the {removed} objects run {} left under {shown} (its service had not settled at its end)",
                        bucket.run
                    );
                }
                Err(why) => eprintln!(
                    "stormark agent: gave up removing the objects run {} left under {shown} after {} minutes ({why}); they stay journaled, named at the next start; `stormark s3 --remove-run {}` with the run's --endpoint, --bucket and --prefix removes them",
                    bucket.run,
                    BOUND.as_secs() / 60,
                    bucket.run
                ),
            }
        });
    if let Err(e) = started {
        eprintln!("stormark agent: cannot start the sweep of a run's objects: {e}");
    }
}

/// Passes (`pass(until)`) until the prefix is empty and can stay so: a pass that listed and
/// deleted everything; with `settle`, one that then finds nothing, [`SETTLE`] or more after
/// the service last began answering. Returns the objects removed, or why it gave up at
/// [`BOUND`].
fn sweep(mut pass: impl FnMut(Instant) -> Pass, settle: bool) -> Result<u64, String> {
    sweep_within(&mut pass, settle, BOUND, SETTLE, RETRY)
}

fn sweep_within(
    pass: &mut impl FnMut(Instant) -> Pass,
    settle: bool,
    bound: Duration,
    settle_for: Duration,
    retry: Duration,
) -> Result<u64, String> {
    let until = Instant::now() + bound;
    let mut removed = 0;
    // Since when every pass has had its answers: the service has been back that long.
    let mut answering: Option<Instant> = None;
    let mut last = String::from("no pass ran");
    loop {
        let now = Instant::now();
        if now >= until {
            return Err(last);
        }
        let p = pass(until);
        removed += p.removed;
        let wait = match p.error {
            Some(e) => {
                answering = None;
                last = e;
                retry
            }
            None => {
                let since = *answering.get_or_insert(now);
                if !settle || (p.found == 0 && now >= since + settle_for) {
                    return Ok(removed);
                }
                settle_for
            }
        };
        std::thread::sleep(wait.min(until.saturating_duration_since(Instant::now())));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answered(found: u64) -> Pass {
        Pass {
            found,
            removed: found,
            ..Pass::default()
        }
    }

    fn stalled() -> Pass {
        Pass {
            error: Some("timed out".into()),
            ..Pass::default()
        }
    }

    /// A service that stalls twice, then answers, and stores a late PUT after the first
    /// pass that answered: the sweep ends only on an empty listing a settle after it.
    #[test]
    fn a_late_put_is_found_by_the_pass_after_the_settle() {
        let mut script =
            vec![stalled(), stalled(), answered(3), answered(1), answered(0)].into_iter();
        let mut calls = 0;
        let ms = Duration::from_millis;
        let removed = sweep_within(
            &mut |_| {
                calls += 1;
                script.next().unwrap_or_else(|| answered(0))
            },
            true,
            Duration::from_secs(60),
            ms(20),
            ms(1),
        );
        assert_eq!(removed, Ok(4));
        assert_eq!(calls, 5);
    }

    /// Nothing unanswered: the first pass that answers is the last.
    #[test]
    fn without_late_puts_one_pass_that_answers_is_enough() {
        let mut script = vec![stalled(), answered(5)].into_iter();
        let removed = sweep_within(
            &mut |_| script.next().unwrap_or_else(stalled),
            false,
            Duration::from_secs(60),
            Duration::from_secs(60),
            Duration::from_millis(1),
        );
        assert_eq!(removed, Ok(5));
    }

    /// A stall between two passes that answered starts the settle again.
    #[test]
    fn a_stall_between_passes_starts_the_settle_again_and_the_bound_ends_it() {
        let mut calls = 0;
        let gave_up = sweep_within(
            &mut |_| {
                calls += 1;
                if calls % 2 == 0 {
                    stalled()
                } else {
                    answered(0)
                }
            },
            true,
            Duration::from_millis(200),
            Duration::from_millis(5),
            Duration::from_millis(1),
        );
        assert_eq!(gave_up, Err("timed out".into()));
    }
}
