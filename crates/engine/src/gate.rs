//! The start gate of a stage.

use std::sync::atomic::AtomicU64;
use std::sync::{Barrier, OnceLock};
use std::time::Instant;

/// The start gate: every worker is ready (files open, buffers filled) before any starts, and
/// all share one start instant.
pub(crate) struct Gate {
    pub(crate) barrier: Barrier,
    pub(crate) t0: OnceLock<Instant>,
    /// With a steady-state rule, the measured start the stage names (ns after `t0`);
    /// `u64::MAX` until then.
    pub(crate) steady_start_ns: AtomicU64,
}

impl Gate {
    /// A gate for `parties` threads (the workers and the stage).
    pub(crate) fn new(parties: usize) -> Gate {
        Gate {
            barrier: Barrier::new(parties),
            t0: OnceLock::new(),
            steady_start_ns: AtomicU64::new(u64::MAX),
        }
    }

    /// Waits until everyone is ready, then returns the common start instant.
    pub(crate) fn wait(&self) -> Instant {
        self.barrier.wait();
        self.barrier.wait();
        *self
            .t0
            .get()
            .expect("the stage sets t0 between the two barriers")
    }
}
