//! The 1 Hz sampler: a thread that reads the host's counters once a second while load runs.
//!
//! It costs a handful of small file reads a second (well under 1% of one core; the results
//! record what it used in `hosts[].sampler_cpu_ns`) and never touches the I/O path: workers
//! do not know it exists.

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use stormark_stats::HostSample;

use crate::counters::{whole_disks, Counters, HostRoot};

/// A running sampler; [`Sampler::stop`] ends it and returns what it saw.
#[derive(Debug)]
pub struct Sampler {
    stop: Sender<()>,
    thread: JoinHandle<(Vec<HostSample>, Option<u64>)>,
}

/// What a sampler saw.
#[derive(Debug, Default)]
pub struct Sampled {
    /// One sample per second; `t_ns` counts from the sampler's start.
    pub samples: Vec<HostSample>,
    /// CPU time the sampler thread used, ns.
    pub cpu_ns: Option<u64>,
}

impl Sampler {
    /// Starts sampling `root` every `period` (1 s in runs).
    pub fn start(root: HostRoot, period: Duration) -> std::io::Result<Sampler> {
        let (stop, rx) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("stormark-sampler".into())
            .spawn(move || {
                let disks = whole_disks(&root);
                let page_size = page_size();
                let start = Instant::now();
                let mut prev = Counters::read(&root, &disks);
                let mut prev_at = Instant::now();
                let mut samples = Vec::new();
                let mut next = start + period;
                loop {
                    let wait = next.saturating_duration_since(Instant::now());
                    match rx.recv_timeout(wait) {
                        Err(RecvTimeoutError::Timeout) => {}
                        // Stopped: the partial second is not a sample.
                        Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                    }
                    let now_counters = Counters::read(&root, &disks);
                    let now = Instant::now();
                    let mut s = now_counters.since(&prev, now - prev_at, page_size);
                    s.t_ns = (now - start).as_nanos() as u64;
                    samples.push(s);
                    prev = now_counters;
                    prev_at = now;
                    next += period;
                    // After a long stall (a suspended VM) skip the missed seconds.
                    if next < now {
                        next = now + period;
                    }
                }
                (samples, thread_cpu_ns())
            })?;
        Ok(Sampler { stop, thread })
    }

    /// Stops the thread and returns its samples.
    pub fn stop(self) -> Sampled {
        let _ = self.stop.send(());
        match self.thread.join() {
            Ok((mut samples, cpu_ns)) => {
                prune_idle(&mut samples);
                Sampled { samples, cpu_ns }
            }
            Err(_) => Sampled::default(),
        }
    }
}

/// Drops the disks and interfaces that did nothing during the whole run, so that a host with
/// forty idle loop devices does not fill the results with zeros.
fn prune_idle(samples: &mut [HostSample]) {
    let mut busy_disks = std::collections::BTreeSet::new();
    let mut busy_nets = std::collections::BTreeSet::new();
    for s in samples.iter() {
        for (name, d) in &s.disks {
            if d.read_iops + d.write_iops > 0.0 {
                busy_disks.insert(name.clone());
            }
        }
        for (name, n) in &s.net {
            if n.rx_bytes_per_s + n.tx_bytes_per_s > 0.0 {
                busy_nets.insert(name.clone());
            }
        }
    }
    for s in samples.iter_mut() {
        s.disks.retain(|name, _| busy_disks.contains(name));
        s.net.retain(|name, _| busy_nets.contains(name));
    }
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 {
        v as u64
    } else {
        4096
    }
}

fn thread_cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec to write into.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_the_live_host() {
        let s = Sampler::start(HostRoot::live(), Duration::from_millis(50)).unwrap();
        std::thread::sleep(Duration::from_millis(180));
        let got = s.stop();
        assert!(got.samples.len() >= 2, "{} samples", got.samples.len());
        let first = &got.samples[0];
        assert!(first.t_ns > 0 && first.duration_ns > 0);
        let cpu = first.cpu.expect("/proc/stat is readable here");
        let sum = cpu.user_pct + cpu.system_pct + cpu.iowait_pct + cpu.idle_pct + cpu.steal_pct;
        assert!((sum - 100.0).abs() < 0.01, "{sum}");
        assert!(first.memory.is_some());
        assert!(got.cpu_ns.is_some());
    }

    #[test]
    fn a_missing_proc_gives_empty_samples() {
        let dir = tempfile::tempdir().unwrap();
        let s = Sampler::start(HostRoot::at(dir.path()), Duration::from_millis(20)).unwrap();
        std::thread::sleep(Duration::from_millis(70));
        let got = s.stop();
        assert!(!got.samples.is_empty());
        assert!(got.samples.iter().all(|s| s.cpu.is_none()
            && s.memory.is_none()
            && s.disks.is_empty()
            && s.net.is_empty()));
    }
}
