//! What answered reads besides the storage: the page cache (`page-cache-reads`), ZFS's ARC
//! (`arc-reads`), and a host that takes the page cache away while a run counts on it
//! (`page-cache-evicted`: a DAMON pageout scheme, a virtio balloon, or devices reading more
//! than a working set that fits in RAM).

use serde_json::json;
use stormark_stats::{Finding, HostSample, Results, Severity};

use crate::diagnose::{finding, r1, Ctx};

/// Reads this many times above what the disks served came from the page cache.
pub const CACHE_READ_RATIO: f64 = 1.5;
/// The ARC answered at least this share of the phase's reads: its figures are RAM's.
pub const ARC_HIT_SHARE: f64 = 0.5;
/// Fewer ARC accesses than this over a phase say nothing either way.
const ARC_LEAST_ACCESSES: f64 = 100.0;
/// A buffered working set that fits in RAM read from the devices more than this many times
/// over did not stay cached.
pub const EVICTED_READS: f64 = 1.5;

/// The cache rules of one host and phase.
pub(crate) fn caches(c: &Ctx<'_>, results: &Results, out: &mut Vec<Finding>) {
    page_cache(c, out);
    arc_reads(c, out);
    evicted(c, results, out);
}

fn page_cache(c: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(read) = c.phase.by_op.get("read").filter(|r| r.ops > 0) else {
        return;
    };
    let buffered: Vec<&stormark_stats::PhaseJob> = c
        .phase
        .jobs
        .iter()
        .filter(|j| !j.direct && j.engine != "null")
        .collect();
    if buffered.is_empty() {
        return;
    }
    let hosts = c.phase.by_host.len().max(1) as f64;
    let measured = c
        .phase
        .by_host
        .get(c.host)
        .and_then(|b| b.by_op.get("read"))
        .map_or(read.iops / hosts, |r| r.iops);
    let device_reads = c
        .mean(|s| Some(s.disks.values().map(|d| d.read_iops).sum::<f64>()))
        .unwrap_or(0.0);
    let working_set: u64 = buffered.iter().map(|j| j.working_set_bytes).sum();
    let ram = c.inventory.and_then(|i| i.memory_bytes);
    let small = ram.is_some_and(|r| working_set > 0 && working_set < r);
    let more_than_disks = measured >= 100.0 && measured > CACHE_READ_RATIO * device_reads;
    if small || more_than_disks {
        out.push(finding(
            Severity::Warning,
            "page-cache-reads",
            format!(
                "{}: buffered reads {}; the page cache, not the storage, answered many of them",
                c.place(),
                if more_than_disks {
                    format!("ran at {measured:.0} IOPS while the disks served {device_reads:.0}")
                } else {
                    "on a working set smaller than RAM".to_string()
                }
            ),
            json!({"host": c.host, "phase": c.phase.name, "read_iops": r1(measured), "device_read_iops": r1(device_reads),
                   "working_set_bytes": working_set, "memory_bytes": ram}),
            "Measure the storage with --direct, or make the working set larger than RAM (--size, --files, --jobs, or --auto).",
        ));
    }
}

/// ZFS's ARC over the phase: the reads it answered against those that went to the pool's
/// disks (demand data reads where the module counts them, every access otherwise). ZFS before
/// 2.3 reads O_DIRECT through the ARC too, so direct jobs are not left out.
fn arc_reads(c: &Ctx<'_>, out: &mut Vec<Finding>) {
    let reads = c.by_op().and_then(|b| b.get("read")).map_or(0, |r| r.ops);
    if reads == 0 {
        return;
    }
    let arcs: Vec<(&stormark_stats::ArcSample, f64)> = c
        .samples
        .iter()
        .filter_map(|s| s.arc.as_ref().map(|a| (a, s.duration_ns as f64 / 1e9)))
        .collect();
    if arcs.is_empty() {
        return;
    }
    let sum = |f: &dyn Fn(&stormark_stats::ArcSample) -> Option<f64>| -> Option<f64> {
        arcs.iter().map(|(a, secs)| f(a).map(|v| v * secs)).sum()
    };
    let demand = sum(&|a| a.demand_data_hits_per_s).zip(sum(&|a| a.demand_data_misses_per_s));
    let (hits, misses, counted) = match demand {
        Some((h, m)) => (h, m, "demand data reads"),
        None => (
            sum(&|a| Some(a.hits_per_s)).unwrap_or(0.0),
            sum(&|a| Some(a.misses_per_s)).unwrap_or(0.0),
            "accesses",
        ),
    };
    let all = hits + misses;
    if all < ARC_LEAST_ACCESSES || hits < ARC_HIT_SHARE * all {
        return;
    }
    let last = arcs.last().map(|(a, _)| *a).expect("not empty");
    let gib = |b: u64| format!("{:.1} GiB", b as f64 / f64::from(1u32 << 30));
    out.push(finding(
        Severity::Warning,
        "arc-reads",
        format!(
            "{}: ZFS's ARC answered {:.0}% of {all:.0} {counted} (ARC {} of a {} target); RAM, not the pool's disks, served most reads",
            c.place(),
            100.0 * hits / all,
            gib(last.size_bytes),
            last.target_bytes.map_or("unknown".into(), gib),
        ),
        json!({"host": c.host, "phase": c.phase.name, "counted": counted,
               "arc_hits": hits.round(), "arc_misses": misses.round(), "hit_pct": r1(100.0 * hits / all),
               "arc_size_bytes": last.size_bytes, "arc_target_bytes": last.target_bytes,
               "arc_max_bytes": last.max_bytes, "read_ops": reads}),
        "ZFS keeps what was read in its ARC (RAM, up to c_max, zfs_arc_max): make the working set several times larger than the ARC (--size, --files), or keep data out of it on the dataset measured (zfs set primarycache=metadata POOL/DATASET, set back after), and watch arcstat during the run.",
    ));
}

/// A host that takes the page cache away: DAMON paging out, a balloon reclaiming, or devices
/// reading a working set that fits in RAM more than once over. Cached figures on it are
/// partly the device's, and vary with when the eviction comes.
fn evicted(c: &Ctx<'_>, results: &Results, out: &mut Vec<Finding>) {
    let buffered: Vec<&stormark_stats::PhaseJob> = c
        .phase
        .jobs
        .iter()
        .filter(|j| !j.direct && j.engine != "null")
        .collect();
    let reads = c.by_op().and_then(|b| b.get("read")).map_or(0, |r| r.ops);
    if buffered.is_empty() || reads == 0 {
        return;
    }
    let working_set: u64 = buffered.iter().map(|j| j.working_set_bytes).sum();
    let ram = c.inventory.and_then(|i| i.memory_bytes);
    if working_set == 0 || ram.is_none_or(|r| working_set >= r) {
        return;
    }
    let device_read: f64 = c
        .samples
        .iter()
        .map(|s: &&HostSample| {
            let secs = s.duration_ns as f64 / 1e9;
            let bytes = match c.target_device {
                Some(d) => s.disks.get(d).map_or(0.0, |x| x.read_bytes_per_s),
                None => s.disks.values().map(|x| x.read_bytes_per_s).sum(),
            };
            bytes * secs
        })
        .sum();
    // Pinned (--pin-cache): nothing evicts the files while locked, and what the devices read
    // meanwhile is another's.
    let pinned = results
        .spec
        .jobs
        .iter()
        .any(|j| j.get("pin_cache").is_some_and(|v| v == "true"));
    if pinned {
        return;
    }
    let reread = device_read > EVICTED_READS * working_set as f64;
    let eviction = c
        .inventory
        .map(|i| i.cache_eviction.clone())
        .unwrap_or_default();
    let damon = !eviction.damon_pageout.is_empty();
    if !reread && !damon {
        return;
    }
    let mib = |b: f64| format!("{:.1} MiB", b / 1_048_576.0);
    let cause = match eviction.damon_pageout.first() {
        Some(s) => format!(
            "a DAMON pageout scheme runs on this host ({}){}",
            s.path,
            s.min_age_us
                .map(|us| format!(", paging out what goes unaccessed for {:.0} s", us as f64 / 1e6))
                .unwrap_or_default()
        ),
        None if eviction.virtio_balloon => {
            "a virtio balloon may take this guest's memory back".to_string()
        }
        None => "the page cache did not keep it (memory pressure, a cgroup's memory limit, another process)".to_string(),
    };
    out.push(finding(
        Severity::Warning,
        "page-cache-evicted",
        if reread {
            format!(
                "{}: the devices read {} during buffered reads of a {} working set that fits in RAM: {cause}, so cached figures here are partly the device's",
                c.place(),
                mib(device_read),
                mib(working_set as f64)
            )
        } else {
            format!(
                "{}: {cause}, the page cache among it (pages read with pread are never mapped, so they look unaccessed): buffered figures here are partly the page cache's and partly the device's",
                c.place()
            )
        },
        json!({"host": c.host, "phase": c.phase.name, "device_read_bytes": device_read.round(),
               "working_set_bytes": working_set, "memory_bytes": ram,
               "damon_pageout": eviction.damon_pageout, "virtio_balloon": eviction.virtio_balloon}),
        "To measure the storage, use --direct. To measure the cache, hold the files in it with --pin-cache (mmap + mlock for the run); to measure the host as it is, run longer and quote the device's figures. DAMON's schemes are under /sys/kernel/mm/damon/admin/kdamonds (echo off > .../state stops one, as root).",
    ));
}
