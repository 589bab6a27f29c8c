//! One call to each agent, many at once: validation, the samplers' start and stop, the clocks
//! before a stage and the cleanup are each a round trip per remote agent, and a thousand of
//! them one after the other took seconds and woke the coordinator's thread for every one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::agent::Agent;

/// Calls at once, at most (as many connections are made at once).
const FAN_OUT: usize = 32;

/// An agent not yet called, and its answer once it was.
type Slot<'a, T> = Mutex<(Option<&'a mut Box<dyn Agent>>, Option<T>)>;

/// `f` called on each agent `h` with `on[h]`, up to [`FAN_OUT`] at once; the answers in the
/// agents' order (`None` where not called). A single agent is called on this thread.
pub(super) fn each<T: Send>(
    agents: &mut [Box<dyn Agent>],
    on: &[bool],
    f: impl Fn(usize, &mut dyn Agent) -> T + Sync,
) -> Vec<Option<T>> {
    if agents.len() == 1 {
        return vec![on[0].then(|| f(0, agents[0].as_mut()))];
    }
    let slots: Vec<Slot<'_, T>> = agents
        .iter_mut()
        .zip(on)
        .map(|(a, &on)| Mutex::new((on.then_some(a), None)))
        .collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..FAN_OUT.min(slots.len()) {
            scope.spawn(|| loop {
                let h = next.fetch_add(1, Ordering::Relaxed);
                let Some(slot) = slots.get(h) else { break };
                let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(agent) = slot.0.take() {
                    slot.1 = Some(f(h, agent.as_mut()));
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|s| s.into_inner().unwrap_or_else(|e| e.into_inner()).1)
        .collect()
}
