//! Removing a run's objects: one pass over its prefix (listed page by page, each key of the
//! run's deleted), bounded per request; at the run's end, what a pass could not settle said
//! with its prefix and left to the agent's sweep ([`super::sweep`]) or to `--remove-run`;
//! the coordinator's removal of a failed host's objects, and `--remove-run` itself.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use stormark_s3::{Client, S3Error};

use super::{owned, Bucket};
use crate::agent::{AgentError, S3Access};
use crate::local::Journal;

/// The longest a cleanup's request waits for its answer where nothing comes after it: the
/// run's own end without an agent, the coordinator's removal, `--remove-run`, the sweep.
const REQUEST: Duration = Duration::from_secs(10);

/// The longest an agent's cleanup at the run's end waits for one answer before it leaves the
/// rest to its sweep: the coordinator hears the agent within its 4 s of silence, notes and
/// all, and a stalled service holds neither the run nor the next coordinator.
const STALLED: Duration = Duration::from_secs(2);

/// Why a cleanup ended early when a second Ctrl-C asked it to.
const ABANDONED: &str = "a second Ctrl-C stopped their removal";

/// What one pass over the run's prefix did.
#[derive(Debug, Default)]
pub(super) struct Pass {
    /// Keys of the run listed.
    pub found: u64,
    /// Of those, deleted.
    pub removed: u64,
    /// Of those, whose deletion failed.
    pub failed: u64,
    /// Why the pass did not list and delete everything (the first failure); `None` when the
    /// prefix was listed to its end and every key of it deleted.
    pub error: Option<String>,
}

impl Bucket {
    /// Whether `key` is the run's: under `base`; of every host's, under `<base><N>/` with N
    /// a host's number (digits, then a slash), never a neighbour that only begins the same
    /// (`<run>-hosts.csv`, `<run>-h1x/`, `<run>-h/`, an object named `<run>-h3`).
    fn owns(&self, key: &str) -> bool {
        owned(&self.base, self.every_host, key)
    }

    /// Lists the run's prefix and deletes every key of it, each request waiting at most
    /// `per_request` (and nothing past `until`), until `abandon` is set.
    pub(super) fn pass(
        &self,
        per_request: Duration,
        until: Option<Instant>,
        abandon: Option<&Arc<AtomicBool>>,
    ) -> Pass {
        let mut pass = Pass::default();
        let mut client = match Client::new(self.config.clone()) {
            Ok(c) => c,
            Err(e) => {
                pass.error = Some(e.to_string());
                return pass;
            }
        };
        if let Some(flag) = abandon {
            client.stop_on(flag.clone());
        }
        let abandoned = || abandon.is_some_and(|f| f.load(Ordering::Relaxed));
        let bound = |client: &mut Client| {
            let at = Instant::now() + per_request;
            client.set_deadline(Some(until.map_or(at, |u| u.min(at))));
        };
        // A listing of this host's own prefix holds at most the keys it wrote.
        let most = self.puts.as_ref().map(|p| p.load(Ordering::Relaxed));
        let pages = most.map_or(MAX_LIST_PAGES, list_pages);
        for bucket in &self.buckets {
            // Each page listed, then its keys removed; the next page's token back.
            let stopped = each_page(pages, most, |token| {
                if abandoned() {
                    return Err(ABANDONED.into());
                }
                bound(&mut client);
                let (_, page) =
                    client
                        .list(bucket, &self.base, token, 1000)
                        .map_err(|e| match e {
                            S3Error::Timeout => format!(
                                "the service did not answer its listing within {} s",
                                per_request.as_secs()
                            ),
                            e => e.to_string(),
                        })?;
                for key in &page.keys {
                    // Only keys under the run's own prefix, whatever the service listed.
                    if !self.owns(key) {
                        continue;
                    }
                    pass.found += 1;
                    if abandoned() {
                        return Err(ABANDONED.into());
                    }
                    bound(&mut client);
                    match client.delete(bucket, key) {
                        Ok(_) => pass.removed += 1,
                        Err(e) => {
                            pass.failed += 1;
                            pass.error.get_or_insert(e.to_string());
                        }
                    }
                }
                Ok(page.next)
            });
            if let Some(why) = stopped {
                pass.error.get_or_insert(why);
            }
        }
        pass
    }

    /// PUTs of this host that got no answer: the service may store them after any listing.
    fn unanswered(&self) -> u64 {
        self.unanswered
            .as_ref()
            .map_or(0, |u| u.load(Ordering::Relaxed))
    }

    /// The run's end on this host: every key under its prefix deleted (unless kept), the
    /// journal's line dropped once nothing can be left. What a pass cannot settle (the
    /// service does not answer, or PUTs went unanswered and may still be stored) is, on an
    /// agent (`sweep`, a process that outlives the run), left to its sweep beside the server
    /// and said so; without one, said with its prefix and the command that removes it.
    /// Returns notes for the results.
    pub(in crate::local) fn finish(
        self,
        abandon: Option<&Arc<AtomicBool>>,
        journal: Option<&Journal>,
        sweep: bool,
    ) -> Vec<String> {
        if self.keep {
            return vec![format!("kept the objects under {} (--keep)", self.shown())];
        }
        let pass = self.pass(if sweep { STALLED } else { REQUEST }, None, abandon);
        let unanswered = self.unanswered();
        if pass.error.is_none() && unanswered == 0 {
            if let Some(j) = journal {
                j.remove_objects(&self.run, &self.shown());
            }
            return Vec::new();
        }
        let abandoned = abandon.is_some_and(|f| f.load(Ordering::Relaxed));
        let (shown, run) = (self.shown(), self.run.clone());
        let command = format!(
            "`stormark s3 --remove-run {run}` with the run's --endpoint, --bucket and --prefix"
        );
        let late = match unanswered {
            0 => String::new(),
            n => format!(
                "{n} PUT(s) got no answer (the service stalled, or the run stopped while they waited), and the service may still store them after any listing"
            ),
        };
        let done = match &pass.error {
            None => format!("removed the {} objects it listed", pass.removed),
            Some(e) if pass.failed > 0 => format!(
                "removed {} objects, {} could not be removed: {e}",
                pass.removed, pass.failed
            ),
            Some(e) => format!("removed {} objects, then stopped: {e}", pass.removed),
        };
        let why = if late.is_empty() {
            done.clone()
        } else {
            format!("{done}; {late}")
        };
        if sweep && !abandoned {
            let note = format!(
                "objects of this run may be left under {shown} ({why}): this agent goes on removing them beside its service, until the prefix lists empty once the service has answered for {} s (for at most {} minutes; journaled until then); {command} removes them too",
                super::sweep::SETTLE.as_secs(),
                super::sweep::BOUND.as_secs() / 60,
            );
            super::sweep::spawn(self, journal.cloned(), unanswered > 0);
            return vec![note];
        }
        vec![match &pass.error {
            Some(e) if abandoned => format!(
                "left the run's objects under {shown} in place ({e}, after removing {}); remove them with {command}",
                pass.removed
            ),
            Some(_) => format!(
                "objects of this run may be left under {shown} ({why}); remove them with {command} once the service answers"
            ),
            None => format!(
                "{done} under {shown}; {late}: {command} removes any it stores, once it has settled"
            ),
        }]
    }
}

/// Removes the objects host `host` of run `run` left under its prefix: what the coordinator
/// (which holds the keys) does for a host that failed or was cut off, whose own cleanup
/// never ran. Only keys under `<prefix>/<run>-h<host>/` are listed and deleted. Returns notes
/// for the results: how many were removed, or why some are left (with their prefix).
pub fn remove_host_objects(
    workload: &stormark_spec::Workload,
    access: &S3Access,
    run: &str,
    host: u32,
) -> Vec<String> {
    let Some(job) = workload.jobs.iter().find_map(|j| j.s3.as_ref()) else {
        return Vec::new();
    };
    let command =
        format!("`stormark s3 --remove-run {run}` and the run's --endpoint, --bucket and --prefix");
    match Bucket::open(job, access, false, run, host) {
        Ok(b) => {
            let pass = b.pass(REQUEST, None, None);
            match pass.error {
                None => vec![format!(
                    "host {host} failed: removed the {} objects it left under {}",
                    pass.removed,
                    b.shown()
                )],
                Some(e) => vec![format!(
                    "host {host} failed: removed {} of the objects it left under {}, then stopped: {e}; remove the rest with {command}",
                    pass.removed,
                    b.shown()
                )],
            }
        }
        Err(e) => vec![format!(
            "host {host} failed, and the objects it left under {}/{run}-h{host}/ could not be removed: {e}; remove them with {command}",
            job.prefix
        )],
    }
}

/// Removes every object run `run` left under the job's prefix, of every host
/// (`<prefix>/<run>-h<N>/`): a run kept with `--keep`, or one whose cleanup could not finish
/// (an agent killed, a second Ctrl-C). Returns how many were removed, where, and notes for
/// what could not be.
pub fn remove_run_objects(
    workload: &stormark_spec::Workload,
    access: &S3Access,
    run: &str,
) -> Result<(u64, String, Vec<String>), AgentError> {
    let Some(job) = workload.jobs.iter().find_map(|j| j.s3.as_ref()) else {
        return Err(AgentError::option(
            "--remove-run",
            "needs the S3 job's --endpoint and --bucket",
        ));
    };
    if !super::is_run_id(run) {
        return Err(AgentError::option(
            format!("--remove-run {}", stormark_spec::printable(run, 40)),
            "expected a run id as the results' notes show it, such as 20261126-001739-11450",
        ));
    }
    let mut b = Bucket::open(job, access, false, run, 0)?;
    // Every host's prefix: the keys under `<prefix>/<run>-h<N>/` are this run's alone (the id
    // ends in its digits, then `-h`, a host's number and a slash); the listing is of
    // `<prefix>/<run>-h`, each key then checked.
    b.base = format!("{}/{run}-h", job.prefix);
    b.every_host = true;
    let pass = b.pass(REQUEST, None, None);
    let shown = format!("{}*/", b.shown());
    let notes = match &pass.error {
        None => Vec::new(),
        Some(e) if pass.failed > 0 => vec![format!(
            "removed {} objects under {shown}, {} could not be removed: {e}",
            pass.removed, pass.failed
        )],
        Some(e) => vec![format!(
            "removed {} objects under {shown}, then stopped: {e}; run it again once the service answers",
            pass.removed
        )],
    };
    Ok((pass.removed, shown, notes))
}

/// The most pages one listing of the run's objects reads where what it wrote is not known (a
/// thousand keys each: far more objects than a run writes).
pub(super) const MAX_LIST_PAGES: u32 = 100_000;

/// The most pages a listing of a prefix holding at most `keys` keys takes: a page for each
/// hundred (a tenth of the thousand asked, for a service that answers in smaller pages) and
/// ten more, within [`MAX_LIST_PAGES`]. A service handing out continuation tokens beyond it
/// is stopped there, not after a hundred thousand pages.
pub(super) fn list_pages(keys: u64) -> u32 {
    u32::try_from(keys.div_ceil(100) + 10).map_or(MAX_LIST_PAGES, |p| p.min(MAX_LIST_PAGES))
}

/// Goes through a listing page by page: `page` reads the page at a continuation token (and
/// deals with its keys) and answers the next token. Stops, saying why, when a page fails,
/// when the service repeats a continuation token (a broken or hostile service would keep a
/// cleanup listing forever) or after `pages` pages (of a prefix of at most `keys` keys, when
/// known).
pub(super) fn each_page(
    pages: u32,
    keys: Option<u64>,
    mut page: impl FnMut(Option<&str>) -> Result<Option<String>, String>,
) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    let mut token: Option<String> = None;
    for _ in 0..pages {
        match page(token.as_deref()) {
            Err(e) => return Some(e),
            Ok(None) => return None,
            Ok(Some(t)) if !seen.insert(t.clone()) => {
                return Some(format!(
                    "the service gave the same continuation token twice ({}); listing stopped",
                    stormark_spec::printable(&t, 64)
                ))
            }
            Ok(Some(t)) => token = Some(t),
        }
    }
    Some(match keys {
        Some(keys) => format!(
            "listing stopped after {pages} pages, more than the {keys} objects this host wrote there fill (the service kept handing out continuation tokens); more objects may be left"
        ),
        None => format!("listing stopped after {pages} pages; more objects may be left"),
    })
}
