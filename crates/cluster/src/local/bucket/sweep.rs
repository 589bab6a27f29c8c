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

/// A dead agent's journaled prefix (`RUN SHOWN` and [`Bucket::journaled`]'s words), swept
/// beside this agent's service with its own keys (its environment's or profile's: an agent
/// writes no key to disk), journaled in `journal` until then. Returns the note that says so,
/// or names the prefix and the command that removes it when this agent cannot.
pub(in crate::local) fn sweep_journaled(entry: &str, journal: &Journal) -> String {
    use crate::local::journal::unescape;
    let words: Vec<&str> = entry.split(' ').collect();
    let at = words.len().saturating_sub(6).max(1);
    let (run, shown) = (words[0], words[1..at].join(" "));
    let named = |why: &str| {
        format!(
            "run {run}, which did not finish here, wrote objects under {shown}: {why}; its coordinator removes a failed host's objects when it can; if they are still there, `stormark s3 --remove-run {run}` with the run's --endpoint, --bucket and --prefix removes them"
        )
    };
    let [url, region, addressing, tls, buckets, base] = words[at..] else {
        return named("its journal line is damaged");
    };
    let (url, region, base) = (unescape(url), unescape(region), unescape(base));
    // Only one host's prefix of one run, `.../RUN-hN/`: a damaged or planted line can never
    // name a wider one.
    let host_prefix = base
        .strip_suffix('/')
        .and_then(|b| b.rsplit_once(&format!("{run}-h")))
        .is_some_and(|(before, n)| {
            (before.is_empty() || before.ends_with('/'))
                && !n.is_empty()
                && n.bytes().all(|b| b.is_ascii_digit())
        });
    if !super::is_run_id(run) || !host_prefix {
        return named("its journal line does not name one host's prefix of a run");
    }
    let Ok(credentials) = stormark_s3::find_credentials(None, None, None) else {
        return named("this agent has no S3 keys of its own to remove them with (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile in ~/.aws/credentials)");
    };
    let endpoint = match stormark_s3::Endpoint::parse(&url) {
        Ok(e) => e,
        Err(e) => return named(&e.to_string()),
    };
    let insecure = tls == "i";
    let tls = match endpoint.https {
        true => match stormark_s3::tls_config(insecure) {
            Ok(t) => Some(t),
            Err(e) => return named(&e.to_string()),
        },
        false => None,
    };
    let bucket = Bucket {
        config: std::sync::Arc::new(stormark_s3::Config {
            endpoint,
            region,
            virtual_hosted: addressing == "v",
            credentials,
            timeout: REQUEST,
            tls,
        }),
        buckets: buckets.split(',').map(unescape).collect(),
        base,
        keep: false,
        run: run.to_string(),
        puts: None,
        unanswered: None,
        every_host: false,
        url,
        insecure,
    };
    if bucket.shown() != shown {
        return named("its journal line does not agree with itself");
    }
    let detail = words[at..].join(" ");
    journal.add_objects(run, &shown, &detail);
    // Whether its PUTs were all answered is not known: the settle, as if some were not.
    spawn(bucket, Some(journal.clone()), true);
    format!(
        "run {run}, which did not finish here, wrote objects under {shown}: this agent removes them beside its service with its own S3 keys, until the prefix lists empty once the service has answered for {} s (for at most {} minutes)",
        SETTLE.as_secs(),
        BOUND.as_secs() / 60
    )
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

    /// A journal line that names anything but one host's prefix of its run (a damaged or
    /// planted line) is named, never swept.
    #[test]
    fn a_journal_line_naming_more_than_one_hosts_prefix_is_only_named() {
        let tmp = tempfile::tempdir().unwrap();
        let (j, _) = Journal::open(tmp.path()).unwrap();
        for base in [
            "stormark%2F",
            "stormark%2F20261126-001739-1-h%2F",
            "stormark%2F20261126-001739-2-h0%2F",
            "stormark%2Fx20261126-001739-1-h0%2F",
        ] {
            let entry = format!(
                "20261126-001739-1 s3://b/stormark/20261126-001739-1-h0/ http:%2F%2F127.0.0.1:1 us-east-1 p k b {base}"
            );
            let note = sweep_journaled(&entry, &j);
            assert!(
                note.contains("does not name one host's prefix")
                    && note.contains("--remove-run 20261126-001739-1"),
                "{note}"
            );
        }
        let note = sweep_journaled("20261126-001739-1 s3://b/x/", &j);
        assert!(note.contains("damaged"), "{note}");
        assert!(!std::fs::read_to_string(j.path()).unwrap().contains("s3 "));
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
