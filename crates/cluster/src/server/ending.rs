//! A session's end: its load stopped, then what its run made removed on a thread beside the
//! service, never in front of it, the session ending (the next coordinator welcome) when that
//! is done. A coordinator that comes meanwhile is told how much is left and waits.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::AgentService;
use crate::agent::Agent;
use crate::local::Removal;
use crate::wire::pb;

/// How long a Finish waits for the run's files to be removed before it answers with what is
/// left (the removal going on): well within the coordinator's patience for an answer
/// ([`crate::remote::SILENCE`]).
pub(super) const FINISH_ANSWER: Duration = Duration::from_secs(2);

/// A session's ending under way: the samples and the run's notes once its load and sampler
/// have stopped, then the cleanup's notes once what the run made is removed.
pub(super) struct Ending {
    pub head: tokio::sync::oneshot::Receiver<pb::FinishReply>,
    pub notes: tokio::sync::oneshot::Receiver<Vec<String>>,
    pub removal: Arc<Removal>,
}

impl AgentService {
    /// Ends a session whose coordinator went silent: stops the load, and once it has stopped
    /// removes what the run created, beside the service. Called once a second, and before a
    /// handshake; never waits.
    pub fn watchdog_tick(&self) {
        let gone = match self.lock().as_ref() {
            Some(s) if s.removing_since.is_none() && self.gone(s) => {
                Some((s.id.clone(), s.coordinator.clone()))
            }
            _ => None,
        };
        if let Some((id, coordinator)) = gone {
            eprintln!(
                "stormark agent: coordinator {coordinator} gone (its connection closed): load stopped, cleaning up"
            );
            // Nobody waits for its notes: the cleanup says them here.
            drop(self.end(&id));
        }
    }

    /// Ends session `id`: stops its load, then, on a thread of its own, stops the sampler
    /// and removes what the run created, the session ending (the next coordinator welcome)
    /// once that is done. `None` when there is no such session or it is ending already.
    pub(super) fn end(&self, id: &str) -> Option<Ending> {
        let (agent, removal, coordinator, since) = {
            let mut guard = self.lock();
            let s = guard
                .as_mut()
                .filter(|s| s.id == id && s.removing_since.is_none())?;
            s.stop.store(true, Ordering::Relaxed);
            let since = Instant::now();
            s.removing_since = Some(since);
            (
                s.agent.clone(),
                s.removal.clone(),
                s.coordinator.clone(),
                since,
            )
        };
        let (head_tx, head) = tokio::sync::oneshot::channel();
        let (notes_tx, notes) = tokio::sync::oneshot::channel();
        // The session ends when the cleanup does, even one that panicked.
        let ended = Ended {
            service: self.clone(),
            id: id.to_string(),
        };
        tokio::task::spawn_blocking(move || {
            let mut notes = Vec::new();
            let validated = agent.is_some();
            if let Some(agent) = agent {
                // Waits for a phase still running to notice the stop.
                let mut agent = agent.lock().unwrap_or_else(|e| e.into_inner());
                let (samples, cpu) = agent.stop_sampling();
                // An S3 run's objects first (bounded per request): what they leave, and that
                // the agent sweeps it, must reach the results, whatever the rest takes.
                let mut said = agent.take_notes();
                said.extend(agent.cleanup_objects());
                let _ = head_tx.send(pb::FinishReply {
                    samples: crate::wire::encode_samples(&samples),
                    sampler_cpu_ns: cpu,
                    notes: said,
                });
                notes = agent.cleanup();
            } else {
                let _ = head_tx.send(pb::FinishReply::default());
            }
            // The session ends before its coordinator hears that the cleanup is done: a run
            // it starts at once is welcome.
            drop(ended);
            let Err(notes) = notes_tx.send(notes) else {
                return;
            };
            // Its coordinator stopped waiting (or is gone): said here.
            if validated {
                let secs = since.elapsed().as_secs();
                eprintln!("stormark agent: the files of coordinator {coordinator}'s run removed ({secs} s)");
                for n in notes {
                    eprintln!("stormark agent: {n}");
                }
            }
        });
        Some(Ending {
            head,
            notes,
            removal,
        })
    }

    /// Ends the session, if any, on the agent's shutdown: stops the load, and waits for it
    /// and for the removal of what the run created (begun now, or already under way).
    pub fn end_session(&self) {
        let Some(id) = self.lock().as_ref().map(|s| s.id.clone()) else {
            return;
        };
        drop(self.end(&id));
        let waited = Instant::now();
        let mut said = false;
        while self.lock().as_ref().is_some_and(|s| s.id == id) {
            if !said && waited.elapsed() >= FINISH_ANSWER {
                said = true;
                let left = self.lock().as_ref().map(|s| s.removal.left());
                eprintln!(
                    "stormark agent: waiting for the removal of the last run's files{}",
                    left.map(crate::wire::left_words).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Ends session `id` when dropped (if it is still the one open).
struct Ended {
    service: AgentService,
    id: String,
}

impl Drop for Ended {
    fn drop(&mut self) {
        let mut guard = self.service.lock();
        if guard.as_ref().is_some_and(|s| s.id == self.id) {
            *guard = None;
            drop(guard);
            if let Some(hook) = &self.service.cfg.on_session {
                hook(super::SessionChange::Closed);
            }
        }
    }
}
