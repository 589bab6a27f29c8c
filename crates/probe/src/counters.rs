//! Reading the kernel's cumulative counters (/proc/stat, /proc/diskstats, /proc/meminfo,
//! /proc/vmstat, /proc/net/dev, /proc/net/snmp, ZFS's arcstats where loaded) and turning two reads into one [`HostSample`].
//!
//! Parsing is procfs-core's (pure parsers, no syscalls); this module picks the fields, keeps
//! only whole disks, and does the arithmetic `iostat -x` and `mpstat` do. Every file may be
//! missing or malformed (containers, other kernels): that part of the sample is then `None`
//! or empty, never an error.

use std::path::{Path, PathBuf};
use std::time::Duration;

use procfs_core::net::{InterfaceDeviceStatus, Snmp};
use procfs_core::{
    CpuTime, DiskStat, ExplicitSystemInfo, FromBufRead, FromBufReadSI, KernelStats, Meminfo, VmStat,
};
use stormark_stats::{CpuSample, DiskSample, HostSample, MemorySample, NetSample};

/// Where /proc and /sys are: `/` on a live host, a fixture directory in tests.
#[derive(Debug, Clone)]
pub struct HostRoot {
    root: PathBuf,
}

impl HostRoot {
    /// The running host.
    pub fn live() -> HostRoot {
        HostRoot { root: "/".into() }
    }

    /// A directory holding `proc/...` and `sys/...` as a host would.
    pub fn at(root: impl Into<PathBuf>) -> HostRoot {
        HostRoot { root: root.into() }
    }

    /// Whether this is the running host (so that syscalls such as statvfs make sense).
    pub fn is_live(&self) -> bool {
        self.root == Path::new("/")
    }

    /// `rel` under the root (`proc/meminfo`).
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// The file's text, `None` when it cannot be read.
    pub fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.path(rel)).ok()
    }

    /// The file's first line, trimmed; `None` when unreadable or empty.
    pub fn read_value(&self, rel: &str) -> Option<String> {
        self.read(rel)
            .map(|s| s.lines().next().unwrap_or("").trim().to_string())
            .filter(|s| !s.is_empty())
    }

    /// Entry names of a directory, sorted; empty when unreadable.
    pub fn list(&self, rel: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.path(rel))
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }
}

/// Clock ticks per second for /proc/stat. Only ratios of ticks are used here, so the value
/// does not change any result; procfs-core asks for one.
const TICKS: ExplicitSystemInfo = ExplicitSystemInfo {
    boot_time_secs: 0,
    ticks_per_second: 100,
    page_size: 4096,
    is_little_endian: cfg!(target_endian = "little"),
};

/// Disk sectors in /proc/diskstats are always 512 bytes, whatever the device's block size
/// (Documentation/admin-guide/iostats.rst).
const SECTOR: f64 = 512.0;

/// One read of every counter.
#[derive(Debug, Clone, Default)]
pub struct Counters {
    cpu: Option<(CpuTicks, Vec<CpuTicks>)>,
    disks: Vec<DiskCounters>,
    memory: Option<Memory>,
    swap_pages: Option<(u64, u64)>,
    net: Vec<(String, NetCounters)>,
    tcp_retrans: Option<u64>,
    /// This process's CPU time, user + system, in clock ticks (/proc/self/stat).
    own_ticks: Option<u64>,
    /// The kernel NFS client's mounts (/proc/self/mountstats).
    nfs: Vec<crate::NfsMount>,
    /// ZFS's ARC (/proc/spl/kstat/zfs/arcstats), where the zfs module is loaded.
    arc: Option<crate::ArcCounters>,
}

#[derive(Debug, Clone, Copy, Default)]
struct CpuTicks {
    user: u64,
    system: u64,
    iowait: u64,
    idle: u64,
    steal: u64,
}

impl CpuTicks {
    fn of(t: &CpuTime) -> CpuTicks {
        // guest time is already inside user (kernel/sched/cputime.c), so it is not added.
        CpuTicks {
            user: t.user + t.nice,
            system: t.system + t.irq.unwrap_or(0) + t.softirq.unwrap_or(0),
            iowait: t.iowait.unwrap_or(0),
            idle: t.idle,
            steal: t.steal.unwrap_or(0),
        }
    }

    fn total(&self) -> u64 {
        self.user + self.system + self.iowait + self.idle + self.steal
    }

    /// Differences; counters that went backwards (iowait may, per proc(5)) count as 0.
    fn since(&self, prev: &CpuTicks) -> CpuTicks {
        CpuTicks {
            user: self.user.saturating_sub(prev.user),
            system: self.system.saturating_sub(prev.system),
            iowait: self.iowait.saturating_sub(prev.iowait),
            idle: self.idle.saturating_sub(prev.idle),
            steal: self.steal.saturating_sub(prev.steal),
        }
    }
}

#[derive(Debug, Clone, Default)]
struct DiskCounters {
    name: String,
    reads: u64,
    read_sectors: u64,
    read_ms: u64,
    writes: u64,
    write_sectors: u64,
    write_ms: u64,
    io_ms: u64,
    weighted_ms: u64,
}

#[derive(Debug, Clone, Copy, Default)]
struct Memory {
    free: u64,
    available: Option<u64>,
    page_cache: u64,
    dirty: u64,
}

#[derive(Debug, Clone, Copy, Default)]
struct NetCounters {
    rx: u64,
    tx: u64,
    errors: u64,
}

/// Parses /proc/stat: the host line and one per CPU, in ticks.
/// This process's user + system time in clock ticks, from /proc/self/stat.
pub fn parse_own_ticks(text: &str) -> Option<u64> {
    use procfs_core::FromRead;
    let stat = procfs_core::process::Stat::from_read(text.as_bytes()).ok()?;
    Some(stat.utime + stat.stime)
}

/// Parses /proc/stat: the total and per-CPU times.
pub fn parse_stat(text: &str) -> Option<(CpuTime, Vec<CpuTime>)> {
    let stats = KernelStats::from_buf_read(text.as_bytes(), &TICKS).ok()?;
    Some((stats.total, stats.cpu_time))
}

/// Parses /proc/diskstats (14, 18 or 20 fields a line, by kernel version). Lines that do not
/// parse are skipped.
pub fn parse_diskstats(text: &str) -> Vec<DiskStat> {
    text.lines()
        .filter_map(|l| DiskStat::from_line(l).ok())
        .collect()
}

/// Parses /proc/meminfo.
pub fn parse_meminfo(text: &str) -> Option<Meminfo> {
    Meminfo::from_buf_read(text.as_bytes()).ok()
}

/// Pages swapped in and out since boot (`pswpin`, `pswpout` of /proc/vmstat).
pub fn parse_vmstat_swap(text: &str) -> Option<(u64, u64)> {
    let vm = VmStat::from_buf_read(text.as_bytes()).ok()?;
    let get = |k: &str| vm.0.get(k).map(|v| (*v).max(0) as u64);
    Some((get("pswpin")?, get("pswpout")?))
}

/// Parses /proc/net/dev: per interface, bytes received and sent, errors plus drops.
pub fn parse_net_dev(text: &str) -> Vec<(String, u64, u64, u64)> {
    let Ok(status) = InterfaceDeviceStatus::from_buf_read(text.as_bytes()) else {
        return Vec::new();
    };
    let mut out: Vec<_> = status
        .0
        .into_values()
        .map(|d| {
            let errors = d.recv_errs + d.recv_drop + d.sent_errs + d.sent_drop;
            (d.name, d.recv_bytes, d.sent_bytes, errors)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// TCP segments retransmitted since boot (/proc/net/snmp `Tcp: RetransSegs`).
pub fn parse_tcp_retrans(text: &str) -> Option<u64> {
    if let Ok(snmp) = Snmp::from_buf_read(text.as_bytes()) {
        return Some(snmp.tcp_retrans_segs);
    }
    // procfs-core wants every Ip/Icmp/Tcp/Udp field; read the Tcp pair of lines on its own
    // when another section differs from what it knows.
    let mut tcp = text.lines().filter(|l| l.starts_with("Tcp:"));
    let (names, values) = (tcp.next()?, tcp.next()?);
    let i = names.split_whitespace().position(|n| n == "RetransSegs")?;
    values.split_whitespace().nth(i)?.parse().ok()
}

impl Counters {
    /// Reads every counter under `root`, keeping the block devices named in `disks`.
    pub fn read(root: &HostRoot, disks: &[String]) -> Counters {
        let cpu = root
            .read("proc/stat")
            .and_then(|t| parse_stat(&t))
            .map(|(total, per)| (CpuTicks::of(&total), per.iter().map(CpuTicks::of).collect()));
        let disks = root
            .read("proc/diskstats")
            .map(|t| parse_diskstats(&t))
            .unwrap_or_default()
            .into_iter()
            .filter(|d| disks.contains(&d.name))
            .map(|d| DiskCounters {
                name: d.name,
                reads: d.reads,
                read_sectors: d.sectors_read,
                read_ms: d.time_reading,
                writes: d.writes,
                write_sectors: d.sectors_written,
                write_ms: d.time_writing,
                io_ms: d.time_in_progress,
                weighted_ms: d.weighted_time_in_progress,
            })
            .collect();
        let memory = root
            .read("proc/meminfo")
            .and_then(|t| parse_meminfo(&t))
            .map(|m| Memory {
                free: m.mem_free,
                available: m.mem_available,
                page_cache: m.cached + m.buffers,
                dirty: m.dirty,
            });
        let swap_pages = root.read("proc/vmstat").and_then(|t| parse_vmstat_swap(&t));
        let net = root
            .read("proc/net/dev")
            .map(|t| parse_net_dev(&t))
            .unwrap_or_default()
            .into_iter()
            .map(|(name, rx, tx, errors)| (name, NetCounters { rx, tx, errors }))
            .collect();
        let tcp_retrans = root
            .read("proc/net/snmp")
            .and_then(|t| parse_tcp_retrans(&t));
        let own_ticks = root
            .read("proc/self/stat")
            .and_then(|t| parse_own_ticks(&t));
        // Only a host with NFS mounts has more than one line of the file to parse.
        let nfs = root
            .read("proc/self/mountstats")
            .filter(|t| t.contains(" with fstype nfs"))
            .map(|t| crate::parse_mountstats(&t))
            .unwrap_or_default();
        let arc = root
            .read("proc/spl/kstat/zfs/arcstats")
            .and_then(|t| crate::parse_arcstats(&t));
        Counters {
            cpu,
            disks,
            memory,
            swap_pages,
            net,
            tcp_retrans,
            own_ticks,
            nfs,
            arc,
        }
    }

    /// The sample of the `elapsed` between `prev` and `self`. `page_size` converts swapped
    /// pages to bytes.
    pub fn since(&self, prev: &Counters, elapsed: Duration, page_size: u64) -> HostSample {
        let secs = elapsed.as_secs_f64().max(1e-3);
        let ms = secs * 1000.0;
        let per_s = |now: u64, then: u64| now.saturating_sub(then) as f64 / secs;
        let cpu = match (&self.cpu, &prev.cpu) {
            (Some((now, cores)), Some((then, cores_then))) => {
                let d = now.since(then);
                let total = d.total();
                (total > 0).then(|| {
                    let pct = |v: u64| 100.0 * v as f64 / total as f64;
                    let (busiest_cpu, busiest_cpu_pct) = cores
                        .iter()
                        .zip(cores_then)
                        .map(|(n, t)| {
                            let d = n.since(t);
                            let busy = d.user + d.system + d.steal;
                            let all = d.total();
                            if all == 0 {
                                0.0
                            } else {
                                100.0 * busy as f64 / all as f64
                            }
                        })
                        .enumerate()
                        .fold((0u32, 0.0f64), |best, (i, b)| {
                            if b > best.1 {
                                (i as u32, b)
                            } else {
                                best
                            }
                        });
                    CpuSample {
                        user_pct: pct(d.user),
                        system_pct: pct(d.system),
                        iowait_pct: pct(d.iowait),
                        idle_pct: pct(d.idle),
                        steal_pct: pct(d.steal),
                        busiest_cpu,
                        busiest_cpu_pct,
                        // Ticks of this process over ticks of every CPU: the same unit.
                        own_pct: match (self.own_ticks, prev.own_ticks) {
                            (Some(now), Some(then)) => {
                                Some(pct(now.saturating_sub(then)).min(100.0))
                            }
                            _ => None,
                        },
                    }
                })
            }
            _ => None,
        };
        let memory = self.memory.map(|m| {
            let (swap_in, swap_out) = match (self.swap_pages, prev.swap_pages) {
                (Some((i, o)), Some((pi, po))) => (
                    per_s(i, pi) * page_size as f64,
                    per_s(o, po) * page_size as f64,
                ),
                _ => (0.0, 0.0),
            };
            MemorySample {
                free_bytes: m.free,
                available_bytes: m.available,
                page_cache_bytes: m.page_cache,
                dirty_bytes: m.dirty,
                swap_in_bytes_per_s: swap_in,
                swap_out_bytes_per_s: swap_out,
            }
        });
        let mut disks = stormark_stats::Names::new();
        for d in &self.disks {
            let Some(p) = prev.disks.iter().find(|p| p.name == d.name) else {
                continue;
            };
            let reads = d.reads.saturating_sub(p.reads);
            let writes = d.writes.saturating_sub(p.writes);
            let await_ms =
                |n: u64, t: u64, pt: u64| (n > 0).then(|| t.saturating_sub(pt) as f64 / n as f64);
            disks.insert(
                d.name.clone(),
                DiskSample {
                    read_iops: reads as f64 / secs,
                    write_iops: writes as f64 / secs,
                    read_bytes_per_s: per_s(d.read_sectors, p.read_sectors) * SECTOR,
                    write_bytes_per_s: per_s(d.write_sectors, p.write_sectors) * SECTOR,
                    util_pct: (100.0 * d.io_ms.saturating_sub(p.io_ms) as f64 / ms).min(100.0),
                    r_await_ms: await_ms(reads, d.read_ms, p.read_ms),
                    w_await_ms: await_ms(writes, d.write_ms, p.write_ms),
                    queue_size: d.weighted_ms.saturating_sub(p.weighted_ms) as f64 / ms,
                },
            );
        }
        let mut net = stormark_stats::Names::new();
        for (name, n) in &self.net {
            let Some((_, p)) = prev.net.iter().find(|(pn, _)| pn == name) else {
                continue;
            };
            net.insert(
                name.clone(),
                NetSample {
                    rx_bytes_per_s: per_s(n.rx, p.rx),
                    tx_bytes_per_s: per_s(n.tx, p.tx),
                    errors_per_s: per_s(n.errors, p.errors),
                },
            );
        }
        let tcp_retrans_per_s = match (self.tcp_retrans, prev.tcp_retrans) {
            (Some(n), Some(p)) => Some(per_s(n, p)),
            _ => None,
        };
        let nfs = self
            .nfs
            .iter()
            .filter_map(|m| {
                let p = prev.nfs.iter().find(|p| p.mount_point == m.mount_point)?;
                Some((m.mount_point.clone(), m.since(p, secs)?))
            })
            .collect();
        HostSample {
            t_ns: 0,
            duration_ns: elapsed.as_nanos() as u64,
            cpu,
            memory,
            disks,
            net,
            tcp_retrans_per_s,
            nfs,
            arc: match (&self.arc, &prev.arc) {
                (Some(now), Some(then)) => Some(now.since(then, secs)),
                _ => None,
            },
        }
    }
}

/// Whole block devices worth sampling: every entry of /sys/block except RAM disks and loop
/// devices with nothing attached (size 0).
pub fn whole_disks(root: &HostRoot) -> Vec<String> {
    root.list("sys/block")
        .into_iter()
        .filter(|name| !name.starts_with("ram") && !name.starts_with("zram"))
        .filter(|name| {
            !name.starts_with("loop")
                || root
                    .read_value(&format!("sys/block/{name}/size"))
                    .is_some_and(|s| s != "0")
        })
        .collect()
}
