//! One second of a host's own counters (CPU, memory, disks, network), recorded beside the
//! load's intervals so that a result can be explained: the device was busy, the CPU was not.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::Names;

/// One second of one host's counters, as the differences between two reads of /proc.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostSample {
    /// End of the second, ns after the run started (the origin of `phases[].start_offset_ns`).
    pub t_ns: u64,
    /// Length of the sample, ns (about one second).
    pub duration_ns: u64,
    /// Host CPU time shares (/proc/stat); `None` where it could not be read.
    pub cpu: Option<CpuSample>,
    /// Memory and swap (/proc/meminfo, /proc/vmstat).
    pub memory: Option<MemorySample>,
    /// Per whole block device (/proc/diskstats), by kernel name (`sda`, `nvme0n1`).
    pub disks: Names<DiskSample>,
    /// Per network interface (/proc/net/dev).
    pub net: Names<NetSample>,
    /// TCP segments retransmitted per second (/proc/net/snmp `RetransSegs`).
    pub tcp_retrans_per_s: Option<f64>,
    /// Per NFS mount of the kernel's client that did RPCs this second, by mount point
    /// (/proc/self/mountstats, as `nfsiostat` reads it).
    #[serde(default, skip_serializing_if = "Names::is_empty")]
    pub nfs: Names<NfsSample>,
    /// ZFS's ARC over the second (/proc/spl/kstat/zfs/arcstats), where the host runs ZFS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arc: Option<ArcSample>,
}

/// ZFS's ARC over the second: what it answered and missed (as `arcstat`), and its size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ArcSample {
    /// Accesses the ARC answered per second (`hits`: demand and prefetch, data and metadata).
    pub hits_per_s: f64,
    /// Accesses it missed per second (`misses`).
    pub misses_per_s: f64,
    /// Reads of file data a caller asked for, answered from the ARC, per second
    /// (`demand_data_hits`); `None` where the kernel module does not count them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub demand_data_hits_per_s: Option<f64>,
    /// Reads of file data a caller asked for that went to the disks, per second
    /// (`demand_data_misses`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub demand_data_misses_per_s: Option<f64>,
    /// What the ARC holds at the end of the second, bytes (`size`).
    pub size_bytes: u64,
    /// What it aims to hold (`c`), bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_bytes: Option<u64>,
    /// The most it may hold (`c_max`), bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
}

/// One NFS mount over the second: its RPCs, their round trips, retransmissions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NfsSample {
    /// The export, `server:/path`.
    pub export: String,
    /// RPCs completed per second, every operation.
    pub ops_per_s: f64,
    /// RPCs sent again per second (transmissions past each RPC's first): the network or the
    /// server lost or did not answer them in time.
    pub retrans_per_s: f64,
    /// RPCs that timed out (major timeouts) per second.
    pub timeouts_per_s: f64,
    /// Per operation that had RPCs this second (`READ`, `WRITE`, `GETATTR`, ...).
    pub by_op: BTreeMap<String, NfsOpSample>,
}

/// One NFS operation of a mount over the second.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct NfsOpSample {
    /// RPCs completed per second.
    pub ops_per_s: f64,
    /// Mean round trip on the wire, ms (`nfsiostat`'s RTT).
    pub rtt_ms: f64,
    /// Mean time from queueing to the reply, ms (`nfsiostat`'s exe: RTT plus the client's
    /// own queue).
    pub exe_ms: f64,
}

/// Shares of CPU time over the second, percent of all CPUs together (as `mpstat ALL`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuSample {
    /// User time, nice included.
    pub user_pct: f64,
    /// Kernel time, interrupts included.
    pub system_pct: f64,
    /// Idle with I/O outstanding.
    pub iowait_pct: f64,
    /// Idle.
    pub idle_pct: f64,
    /// Stolen by the hypervisor.
    pub steal_pct: f64,
    /// The CPU that was busiest (not idle, not iowait) this second.
    pub busiest_cpu: u32,
    /// How busy it was, percent of that one CPU.
    pub busiest_cpu_pct: f64,
    /// stormark's own process (this host's agent, with its workers), percent of all CPUs
    /// together as the shares above; `None` where it could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_pct: Option<f64>,
}

/// Memory at the end of the second and swap traffic during it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct MemorySample {
    /// `MemFree`.
    pub free_bytes: u64,
    /// `MemAvailable` (kernel 3.14+), `None` before.
    pub available_bytes: Option<u64>,
    /// Page cache: `Cached` + `Buffers`.
    pub page_cache_bytes: u64,
    /// Dirty pages waiting for writeback.
    pub dirty_bytes: u64,
    /// Swapped in (`pswpin`), bytes per second.
    pub swap_in_bytes_per_s: f64,
    /// Swapped out (`pswpout`), bytes per second.
    pub swap_out_bytes_per_s: f64,
}

/// One block device over the second, as `iostat -x` computes it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct DiskSample {
    /// Reads completed per second.
    pub read_iops: f64,
    /// Writes completed per second.
    pub write_iops: f64,
    /// Bytes read per second.
    pub read_bytes_per_s: f64,
    /// Bytes written per second.
    pub write_bytes_per_s: f64,
    /// Share of the second with at least one I/O in flight (`%util`). For devices that serve
    /// many requests at once (SSD, NVMe, RAID) 100% does not mean saturated.
    pub util_pct: f64,
    /// Mean time of a read, queue included (`r_await`), ms; `None` without reads.
    pub r_await_ms: Option<f64>,
    /// Mean time of a write (`w_await`), ms; `None` without writes.
    pub w_await_ms: Option<f64>,
    /// Mean number of requests in the device's queue (`aqu-sz`).
    pub queue_size: f64,
}

/// One network interface over the second.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct NetSample {
    /// Received bytes per second.
    pub rx_bytes_per_s: f64,
    /// Sent bytes per second.
    pub tx_bytes_per_s: f64,
    /// Receive and send errors plus drops per second.
    pub errors_per_s: f64,
}

/// The samples whose second lies mostly inside `[start_ns, start_ns + duration_ns]` (a
/// phase's measured span).
pub fn samples_within(samples: &[HostSample], start_ns: u64, duration_ns: u64) -> Vec<&HostSample> {
    let end = start_ns + duration_ns;
    samples
        .iter()
        .filter(|s| {
            let mid = s.t_ns.saturating_sub(s.duration_ns / 2);
            mid >= start_ns && mid <= end
        })
        .collect()
}

/// Mean of `f` over the samples where it is known; `None` when it is known in none.
pub fn mean_over(samples: &[&HostSample], f: impl Fn(&HostSample) -> Option<f64>) -> Option<f64> {
    let (sum, n) = samples
        .iter()
        .filter_map(|s| f(s))
        .fold((0.0, 0usize), |(sum, n), v| (sum + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// Fills each phase's `cpu` from its hosts' samples that overlap it (each about a second: a
/// phase shorter than that takes the seconds it fell in): the hosts' user and system time
/// and stormark's own, the mean over those seconds, per host and over the hosts.
pub fn fill_phase_cpu(results: &mut crate::Results) {
    let hosts = &results.hosts;
    for p in &mut results.phases {
        let (start, end) = (p.start_offset_ns, p.start_offset_ns + p.duration_ns);
        let mut by_host = BTreeMap::new();
        for h in hosts {
            let over: Vec<&HostSample> = h
                .samples
                .iter()
                .filter(|s| s.t_ns > start && s.t_ns.saturating_sub(s.duration_ns) < end)
                .collect();
            let busy = mean_over(&over, |s| s.cpu.map(|c| c.user_pct + c.system_pct));
            if let Some(busy_pct) = busy {
                by_host.insert(
                    h.name.clone(),
                    crate::PhaseCpu {
                        busy_pct,
                        own_pct: mean_over(&over, |s| s.cpu.and_then(|c| c.own_pct)),
                        by_host: BTreeMap::new(),
                    },
                );
            }
        }
        if by_host.is_empty() {
            continue;
        }
        let n = by_host.len() as f64;
        let owns: Vec<f64> = by_host.values().filter_map(|c| c.own_pct).collect();
        p.cpu = Some(crate::PhaseCpu {
            busy_pct: by_host.values().map(|c| c.busy_pct).sum::<f64>() / n,
            own_pct: (!owns.is_empty()).then(|| owns.iter().sum::<f64>() / owns.len() as f64),
            by_host: if by_host.len() > 1 {
                by_host
            } else {
                BTreeMap::new()
            },
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t_s: u64) -> HostSample {
        HostSample {
            t_ns: t_s * 1_000_000_000,
            duration_ns: 1_000_000_000,
            cpu: Some(CpuSample {
                idle_pct: t_s as f64,
                ..CpuSample::default()
            }),
            ..HostSample::default()
        }
    }

    #[test]
    fn window_and_mean() {
        let s: Vec<HostSample> = (1..=10).map(at).collect();
        // Phase from 2.2 s for 3 s: the seconds ending at 3, 4 and 5 s (mid 2.5, 3.5, 4.5).
        let w = samples_within(&s, 2_200_000_000, 3_000_000_000);
        assert_eq!(
            w.iter().map(|s| s.t_ns / 1_000_000_000).collect::<Vec<_>>(),
            [3, 4, 5]
        );
        assert_eq!(mean_over(&w, |s| s.cpu.map(|c| c.idle_pct)), Some(4.0));
        assert_eq!(
            mean_over(&w, |s| s.memory.map(|m| m.free_bytes as f64)),
            None
        );
        assert!(samples_within(&s, 20_000_000_000, 1).is_empty());
    }
}
