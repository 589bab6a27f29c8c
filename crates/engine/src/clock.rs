//! The clock each I/O is timed by. Where the kernel keeps its own time with the CPU's
//! time-stamp counter (clocksource `tsc`: constant, not stopping, in step across CPUs), the
//! counter is read directly, in a few nanoseconds, as fio's `clocksource=cpu` does; its rate
//! is measured against CLOCK_MONOTONIC once per process. Elsewhere CLOCK_MONOTONIC is read
//! as before. Either way each I/O is timed by its own start and end.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Nanoseconds per tick, times 2^32: the counter's rate as measured, or exactly 1 ns a tick
/// for CLOCK_MONOTONIC.
const ONE_NS: u64 = 1 << 32;

/// How long the counter's rate is measured against CLOCK_MONOTONIC.
const CALIBRATION: Duration = Duration::from_millis(20);

/// Ticks after which the clock takes CLOCK_MONOTONIC again as its base (a second or so), so
/// that instants it gives never stray from the system's by more than its rate's error over
/// that span (a few parts in a million: microseconds).
const REBASE_NS: u64 = 1_000_000_000;

/// A worker's clock: ticks, their nanoseconds, and the instant of a tick.
#[derive(Debug, Clone)]
pub(crate) struct Clock {
    tsc: bool,
    mult: u64,
    base: Instant,
    base_ticks: u64,
    rebase_after: u64,
}

impl Clock {
    /// The counter where the kernel trusts it, CLOCK_MONOTONIC otherwise.
    pub(crate) fn new() -> Clock {
        match tsc_rate() {
            Some(mult) => Clock::with_rate(true, mult),
            None => Clock::with_rate(false, ONE_NS),
        }
    }

    /// CLOCK_MONOTONIC alone.
    #[cfg(test)]
    pub(crate) fn monotonic() -> Clock {
        Clock::with_rate(false, ONE_NS)
    }

    fn with_rate(tsc: bool, mult: u64) -> Clock {
        let mut c = Clock {
            tsc,
            mult,
            base: Instant::now(),
            base_ticks: 0,
            rebase_after: 0,
        };
        c.rebase();
        c
    }

    /// Whether the counter is read directly.
    #[cfg(test)]
    pub(crate) fn is_tsc(&self) -> bool {
        self.tsc
    }

    /// Now, in ticks.
    #[inline(always)]
    pub(crate) fn ticks(&self) -> u64 {
        if self.tsc {
            read_tsc()
        } else {
            self.base.elapsed().as_nanos() as u64
        }
    }

    /// The nanoseconds of `ticks` ticks.
    #[inline(always)]
    pub(crate) fn ns(&self, ticks: u64) -> u64 {
        ((u128::from(ticks) * u128::from(self.mult)) >> 32) as u64
    }

    /// The ticks in `ns` nanoseconds, rounded down.
    pub(crate) fn ticks_in(&self, ns: u64) -> u64 {
        ((u128::from(ns) << 32) / u128::from(self.mult.max(1))).min(u128::from(u64::MAX)) as u64
    }

    /// The instant of tick `t` (read after the base's), on the system's monotonic clock.
    #[inline]
    pub(crate) fn instant(&mut self, t: u64) -> Instant {
        let since = t.saturating_sub(self.base_ticks);
        if since > self.rebase_after {
            self.rebase();
            return self.base;
        }
        self.base + Duration::from_nanos(self.ns(since))
    }

    /// Takes CLOCK_MONOTONIC and the counter together as the base again.
    #[cold]
    fn rebase(&mut self) {
        if self.tsc {
            self.base = Instant::now();
            self.base_ticks = read_tsc();
            self.rebase_after =
                ((u128::from(REBASE_NS) << 32) / u128::from(self.mult.max(1))) as u64;
        } else {
            // CLOCK_MONOTONIC's ticks count from the base itself: never rebased.
            self.base_ticks = 0;
            self.rebase_after = u64::MAX;
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn read_tsc() -> u64 {
    // SAFETY: RDTSC has no preconditions on x86_64.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn read_tsc() -> u64 {
    0
}

/// Measures the counter's rate now, if it is to be read (once per process): before a stage
/// starts, so that no worker waits for it.
pub(crate) fn calibrate() {
    let _ = tsc_rate();
}

/// The counter's nanoseconds a tick (times 2^32) where the kernel keeps time with it, once per
/// process; `None` where it does not (another clocksource, a counter that varies or stops,
/// another architecture) or where the measured rate makes no sense.
fn tsc_rate() -> Option<u64> {
    static RATE: OnceLock<Option<u64>> = OnceLock::new();
    *RATE.get_or_init(|| {
        if !cfg!(target_arch = "x86_64") || !kernel_keeps_time_by_tsc() {
            return None;
        }
        let pair = || {
            // The counter read between two clock reads: its instant is their middle, off by
            // at most half their gap. Of several tries the closest pair, so that a thread
            // preempted between its reads (a loaded machine) does not skew the rate.
            (0..16)
                .map(|_| {
                    let a = Instant::now();
                    let t = read_tsc();
                    let b = Instant::now();
                    (b - a, a + (b - a) / 2, t)
                })
                .min_by_key(|&(gap, _, _)| gap)
                .map(|(_, at, t)| (at, t))
                .expect("sixteen tries")
        };
        let (i0, t0) = pair();
        std::thread::sleep(CALIBRATION);
        let (i1, t1) = pair();
        let ns = (i1 - i0).as_nanos();
        let ticks = u128::from(t1.checked_sub(t0)?);
        // A counter from 100 MHz to 10 GHz.
        let mult = (ns << 32) / ticks.max(1);
        (ticks > 0 && (ONE_NS as u128 / 10..=ONE_NS as u128 * 10).contains(&mult))
            .then_some(mult as u64)
    })
}

/// The kernel's clocksource is `tsc`, and the CPU says its counter is constant and does not
/// stop (`constant_tsc`, `nonstop_tsc`): the kernel checked it is in step across CPUs.
fn kernel_keeps_time_by_tsc() -> bool {
    let source =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .unwrap_or_default();
    let flags = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let flags = flags
        .lines()
        .find(|l| l.starts_with("flags"))
        .unwrap_or_default();
    source.trim() == "tsc"
        && flags.split_whitespace().any(|f| f == "constant_tsc")
        && flags.split_whitespace().any(|f| f == "nonstop_tsc")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counter's nanoseconds agree with CLOCK_MONOTONIC over the same span (a sleep of
    /// 200 ms, measured by both, read back to back, the closest of three), and its instants
    /// stay on the system's clock; without the counter, the clock is CLOCK_MONOTONIC's own.
    #[test]
    fn the_counter_keeps_the_systems_time() {
        for mut clock in [Clock::new(), Clock::monotonic()] {
            // Of three spans the closest agreement: a test thread preempted between its two
            // reads (the suite runs beside other tests) measures the scheduler, not the clock.
            let (by_clock, by_system) = (0..3)
                .map(|_| {
                    let (i0, t0) = (Instant::now(), clock.ticks());
                    std::thread::sleep(Duration::from_millis(200));
                    let (t1, i1) = (clock.ticks(), Instant::now());
                    (clock.ns(t1 - t0) as f64, (i1 - i0).as_nanos() as f64)
                })
                .min_by(|a, b| (a.0 - a.1).abs().total_cmp(&(b.0 - b.1).abs()))
                .unwrap();
            // Within a part in a thousand, and the two reads' own few microseconds.
            assert!(
                (by_clock - by_system).abs() < by_system * 1e-3 + 20_000.0,
                "tsc {}: {by_clock} ns against {by_system} ns",
                clock.is_tsc()
            );
            let at = clock.instant(clock.ticks());
            let now = Instant::now();
            assert!(
                at <= now + Duration::from_micros(50),
                "{at:?} after {now:?}"
            );
            assert!(
                now - at < Duration::from_millis(5),
                "{at:?} long before {now:?}"
            );
        }
    }
}
