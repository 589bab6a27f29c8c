//! Diagnosis: after a run, the rules that read the host samples beside the load's figures and
//! say what held the run back or why its numbers may mislead. Each rule yields a [`Finding`]
//! with a stable code, the evidence (numbers) and advice; nothing fires when nothing is wrong.
//!
//! Thresholds follow the usual guidance of storage vendors' benchmarking guides and `iostat`
//! practice; docs/findings.md lists them with each code.

use serde_json::json;
use stormark_stats::{mean_over, samples_within, Finding, HostSample, Phase, Results, Severity};

use crate::Inventory;

/// A device this busy (`%util`) for the whole phase is saturated, if it serves one request at
/// a time.
pub const SATURATED_UTIL_PCT: f64 = 95.0;
/// Load counts as flat when its 1-second IOPS vary less than this (coefficient of variation).
pub const FLAT_CV: f64 = 0.10;
/// Below this share of idle CPU the host, not the storage, limits the run.
pub const CPU_BOUND_IDLE_PCT: f64 = 5.0;
/// One CPU this busy while others idle: a single thread limits the run.
pub const CORE_SATURATED_PCT: f64 = 95.0;
/// An S3 client whose own process takes at least this share of a CPU-bound host's busy time
/// is the limit itself (`s3-client-cpu`).
pub const CLIENT_SHARE: f64 = 0.5;
/// iowait above this share of CPU time: CPUs wait on storage.
pub const HIGH_IOWAIT_PCT: f64 = 20.0;
/// Swap traffic above this (bytes over the phase) means the host was swapping.
pub const SWAP_BYTES: f64 = 1_048_576.0;
/// Device response time above this is high for any medium (`r_await`/`w_await`).
pub const HIGH_AWAIT_MS: f64 = 100.0;
/// Measured runs shorter than this are too short to trust (60–300 s is the usual guidance).
pub const SHORT_RUN_S: f64 = 60.0;
/// 1-second IOPS varying more than this (coefficient of variation) make a noisy run.
pub const NOISY_CV: f64 = 0.10;
/// CPU steal above this share means a neighbour on the hypervisor takes time.
pub const STEAL_PCT: f64 = 1.0;
/// An open loop achieving less than this share of its requested rate fell behind.
pub const RATE_ACHIEVED: f64 = 0.97;
/// An NFS operation whose round trip takes this long on average is slow at the server or on
/// the way (`nfs-slow-rpc`).
pub const SLOW_NFS_RTT_MS: f64 = 10.0;
/// RPCs waiting this long in the NFS client's own queue, beyond their round trip, wait for the
/// client's slots (`nfs-client-queue`).
pub const NFS_CLIENT_QUEUE_MS: f64 = 5.0;

/// Runs every rule on a finished run's document. The document's own `findings` are not read.
pub fn diagnose(results: &Results) -> Vec<Finding> {
    let mut out = Vec::new();
    let measured: Vec<&Phase> = results
        .phases
        .iter()
        .filter(|p| p.measured() && p.duration_ns > 0)
        .collect();
    short_runs(&measured, &mut out);
    clock_offsets(results, &mut out);
    crate::network::network_findings(results, &mut out);
    // An inventory the document does not hold (or could not read) is unknown, not a host
    // of no CPUs.
    fn known(i: &Inventory) -> Option<&Inventory> {
        (*i != Inventory::default()).then_some(i)
    }
    let client = results.hosts.first().and_then(|h| known(&h.inventory));
    for p in &measured {
        out.extend(phase_findings(p, client));
    }
    for host in &results.hosts {
        let inv = known(&host.inventory);
        for p in &measured {
            let samples = samples_within(&host.samples, p.start_offset_ns, p.duration_ns);
            let ctx = Ctx {
                host: &host.name,
                phase: p,
                samples: &samples,
                inventory: inv,
                several_hosts: results.hosts.len() > 1,
                target_device: host
                    .target
                    .as_ref()
                    .or(results.target.as_ref())
                    .and_then(|t| t.device.as_deref()),
            };
            // A host that ran nothing of the phase (its jobs name other hosts, a sweep's first
            // N): no load of its own to diagnose, and the phase's figures are not its.
            let sat_out =
                ctx.several_hosts && !p.by_host.is_empty() && !p.by_host.contains_key(&host.name);
            if samples.is_empty() || sat_out {
                continue;
            }
            devices(&ctx, &mut out);
            crate::requests::split_requests(&ctx, &mut out);
            cpu(&ctx, &mut out);
            swapping(&ctx, &mut out);
            crate::cache::caches(&ctx, results, &mut out);
            nfs_mounts(&ctx, &mut out);
        }
    }
    out
}

/// The rules that read one phase's own figures alone (no host samples, no other phase), so
/// that they can be said as soon as the phase ends: a noisy phase, an open loop behind its
/// schedule, an object store's limits. [`diagnose`] runs them too, on every measured phase.
/// `client`: the first host's inventory, where known.
pub fn phase_findings(p: &Phase, client: Option<&Inventory>) -> Vec<Finding> {
    let mut out = Vec::new();
    if !p.measured() || p.duration_ns == 0 {
        return out;
    }
    noisy(p, &mut out);
    behind_schedule(p, &mut out);
    crate::objects::object_findings(p, client, &mut out);
    out
}

pub(crate) struct Ctx<'a> {
    pub(crate) host: &'a str,
    pub(crate) phase: &'a Phase,
    pub(crate) samples: &'a [&'a HostSample],
    pub(crate) inventory: Option<&'a Inventory>,
    several_hosts: bool,
    /// The whole block device under this host's target (`vda`, `loop3`), where known.
    pub(crate) target_device: Option<&'a str>,
}

impl Ctx<'_> {
    /// "phase run" or "phase run on host a": where a finding applies.
    pub(crate) fn place(&self) -> String {
        if self.several_hosts {
            format!("phase {} on {}", self.phase.name, self.host)
        } else {
            format!("phase {}", self.phase.name)
        }
    }

    pub(crate) fn mean(&self, f: impl Fn(&HostSample) -> Option<f64>) -> Option<f64> {
        mean_over(self.samples, f)
    }

    /// This host's figures of the phase, per operation (the phase's own with one host).
    pub(crate) fn by_op(
        &self,
    ) -> Option<&std::collections::BTreeMap<String, stormark_stats::Summary>> {
        if self.several_hosts {
            self.phase.by_host.get(self.host).map(|b| &b.by_op)
        } else {
            Some(&self.phase.by_op)
        }
    }
}

pub(crate) fn finding(
    severity: Severity,
    code: &str,
    message: String,
    evidence: serde_json::Value,
    advice: &str,
) -> Finding {
    Finding {
        severity,
        code: code.into(),
        message,
        evidence,
        advice: advice.into(),
    }
}

/// Coefficient of variation of the full 1-second intervals' IOPS (the last, partial, second
/// left out); `None` with fewer than 3.
fn iops_cv(p: &Phase) -> Option<(f64, usize)> {
    let v: Vec<f64> = p
        .intervals
        .iter()
        .filter(|i| i.duration_ns >= 900_000_000)
        .map(|i| i.total.iops)
        .collect();
    if v.len() < 3 {
        return None;
    }
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    if mean <= 0.0 {
        return None;
    }
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (v.len() - 1) as f64;
    Some((var.sqrt() / mean, v.len()))
}

pub(crate) fn r1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn r3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// A host's clock this far from the coordinator's is said: NTP is gone or wrong.
const CLOCK_OFFSET_WARN_NS: u64 = 1_000_000_000;

/// Hosts whose clock is off the coordinator's by more than [`CLOCK_OFFSET_WARN_NS`].
/// stormark corrects its own start times for the offset it measured, but the host's logs,
/// its samples as other tools see them, and any service that checks signatures' times (S3
/// refuses 15 minutes) see the wrong time.
fn clock_offsets(results: &Results, out: &mut Vec<Finding>) {
    for h in &results.hosts {
        let Some(offset) = h.clock_offset_ns else {
            continue;
        };
        if offset.unsigned_abs() <= CLOCK_OFFSET_WARN_NS {
            continue;
        }
        out.push(finding(
            Severity::Warning,
            "clock-offset",
            format!(
                "host {}'s clock is {:.1} s {} the coordinator's",
                h.name,
                offset.unsigned_abs() as f64 / 1e9,
                if offset > 0 { "ahead of" } else { "behind" }
            ),
            json!({"host": h.name, "clock_offset_ns": offset, "clock_rtt_ns": h.clock_rtt_ns, "warn_above_ns": CLOCK_OFFSET_WARN_NS}),
            "stormark starts every host at one instant whatever the offset it measured, but the host's own logs and any service that checks a request's time (S3 refuses 15 minutes) see the wrong time: check NTP (chronyc tracking, timedatectl) on that host.",
        ));
    }
}

/// A run of the quick profile is a first look: its phases are short by design, so instead of
/// warning about its own length it says what it is and what to run next (the document keeps
/// `spec.profile = "quick"`).
pub fn first_look(results: &mut Results) {
    results.findings.retain(|f| f.code != "run-too-short");
    results.spec.profile = Some("quick".into());
    let target = match results.target.as_ref().map(|t| t.path.as_str()) {
        Some(p)
            if p.chars()
                .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@".contains(c)) =>
        {
            p.to_string()
        }
        Some(p) if !p.contains('\'') => format!("'{p}'"),
        _ => "DIR".to_string(),
    };
    results.findings.push(finding(
        Severity::Info,
        "first-look",
        "the quick profile: a first look in about 20 s (phases of 5 to 8 s), not figures to quote".into(),
        json!({"profile": "quick", "minimum_s": SHORT_RUN_S}),
        &format!(
            "Next, measure what matters for 2 minutes, such as `stormark run {target} --rw randread --bs 4k --direct --iodepth 32 --time 2m` (from the disk, not the page cache; or `--profile oltp-4k --time 2m`; `stormark run --list-profiles` lists them)."
        ),
    ));
}

fn short_runs(measured: &[&Phase], out: &mut Vec<Finding>) {
    // A network test holds its rate within seconds (iperf3's default is 10 s): no cache,
    // write-back or garbage collection to outlast.
    let short: Vec<(&str, f64)> = measured
        .iter()
        .filter(|p| p.jobs.is_empty() || !p.jobs.iter().all(|j| j.engine == "net"))
        .map(|p| (p.name.as_str(), p.duration_ns as f64 / 1e9))
        .filter(|(_, s)| *s < SHORT_RUN_S)
        .collect();
    let Some(shortest) = short.iter().map(|(_, s)| *s).reduce(f64::min) else {
        return;
    };
    let longest = short.iter().map(|(_, s)| *s).fold(shortest, f64::max);
    // Seconds as they were measured: a tenth under 10 s (0.3 s is not "0 s").
    let secs = |s: f64| {
        if s < 10.0 {
            format!("{s:.1}")
        } else {
            format!("{s:.0}")
        }
    };
    // Metadata phases go through a tree once: more files make them longer, not --time alone.
    let meta = measured
        .iter()
        .filter(|p| (p.duration_ns as f64 / 1e9) < SHORT_RUN_S)
        .all(|p| !p.jobs.is_empty() && p.jobs.iter().all(|j| j.engine == "meta"));
    out.push(finding(
        Severity::Warning,
        "run-too-short",
        if short.len() == 1 {
            format!(
                "phase {} measured for {} s: too short for trustworthy numbers",
                short[0].0,
                secs(shortest)
            )
        } else {
            format!(
                "{} phases measured for {} to {} s: too short for trustworthy numbers",
                short.len(),
                secs(shortest),
                secs(longest)
            )
        },
        json!({
            "phases": short.iter().map(|(n, s)| json!({"phase": n, "measured_s": r1(*s)})).collect::<Vec<_>>(),
            "minimum_s": SHORT_RUN_S,
        }),
        if meta {
            "Give each operation more files (--files, --dirs or --depth), so that each phase lasts seconds and its rate is not a handful of calls."
        } else {
            "Measure 60–300 s per point (--time 2m) so caches, write-back and SSD garbage collection reach steady state."
        },
    ));
}

fn behind_schedule(p: &Phase, out: &mut Vec<Finding>) {
    for job in &p.jobs {
        let Some(requested) = job.rate_iops.filter(|r| *r > 0.0) else {
            continue;
        };
        let achieved = p
            .by_job
            .get(&job.name)
            .map_or(p.total.iops, |b| b.total.iops);
        if achieved < RATE_ACHIEVED * requested {
            out.push(finding(
                Severity::Warning,
                "rate-not-achieved",
                format!(
                    "phase {}: job {} asked for {requested:.0} IOPS and achieved {achieved:.0} ({:.0}%): the system fell behind the schedule",
                    p.name,
                    job.name,
                    100.0 * achieved / requested
                ),
                json!({"phase": p.name, "job": job.name, "requested_iops": requested, "achieved_iops": r1(achieved)}),
                "Latencies are measured from the schedule, so they include the backlog: this rate is past what the storage sustains. Lower --rate-iops, or raise --iodepth/--jobs if the device has headroom.",
            ));
        }
    }
}

fn noisy(p: &Phase, out: &mut Vec<Finding>) {
    let Some((cv, n)) = iops_cv(p) else {
        return;
    };
    if cv > NOISY_CV {
        out.push(finding(
            Severity::Warning,
            "noisy-run",
            format!(
                "phase {}: IOPS varied {:.0}% from second to second",
                p.name,
                cv * 100.0
            ),
            json!({"phase": p.name, "iops_cv": r3(cv), "intervals": n, "threshold_cv": NOISY_CV}),
            "The mean hides a wide spread: look at the intervals, run longer, use --ramp to skip the warm-up, and check for other load on the host or device.",
        ));
    }
}

fn devices(c: &Ctx<'_>, out: &mut Vec<Finding>) {
    // A network phase touches no disk: a device busy meanwhile is someone else's load, not
    // this phase's limit (issue 53).
    if !c.phase.jobs.is_empty() && c.phase.jobs.iter().all(|j| j.engine == "net") {
        return;
    }
    let mut names: Vec<&String> = c.samples.iter().flat_map(|s| s.disks.keys()).collect();
    names.sort();
    names.dedup();
    let flat = iops_cv(c.phase).is_none_or(|(cv, _)| cv <= FLAT_CV);
    for name in names {
        let d = |f: fn(&stormark_stats::DiskSample) -> Option<f64>| {
            c.mean(|s| s.disks.get(name).and_then(f))
        };
        let util = d(|x| Some(x.util_pct)).unwrap_or(0.0);
        let iops = d(|x| Some(x.read_iops + x.write_iops)).unwrap_or(0.0);
        if iops <= 0.0 {
            continue;
        }
        let rotational = c
            .inventory
            .and_then(|i| i.device(name))
            .and_then(|d| d.rotational);
        if util >= SATURATED_UTIL_PCT && flat {
            out.push(finding(
                Severity::Info,
                "device-saturated",
                format!(
                    "{}: device {name} was busy {util:.1}% of the time while the load held steady: {}",
                    c.place(),
                    if rotational == Some(true) {
                        "it is the limit"
                    } else {
                        "it may be the limit (util alone cannot tell for SSD/NVMe)"
                    }
                ),
                json!({"host": c.host, "phase": c.phase.name, "device": name, "util_pct": r1(util),
                       "device_iops": r1(iops), "queue_size": r1(d(|x| Some(x.queue_size)).unwrap_or(0.0)),
                       "rotational": rotational}),
                "A device that serves one request at a time (a disk) can do no more. SSDs, NVMe and RAID serve many at once and show 100% util before their limit: raise --iodepth or --jobs and see whether IOPS still grow.",
            ));
        }
        let r = d(|x| x.r_await_ms);
        let w = d(|x| x.w_await_ms);
        let worst = r.unwrap_or(0.0).max(w.unwrap_or(0.0));
        if worst > HIGH_AWAIT_MS {
            out.push(finding(
                Severity::Warning,
                "high-device-latency",
                format!("{}: device {name} took {worst:.0} ms per request on average", c.place()),
                json!({"host": c.host, "phase": c.phase.name, "device": name,
                       "r_await_ms": r.map(r1), "w_await_ms": w.map(r1), "threshold_ms": HIGH_AWAIT_MS,
                       "queue_size": r1(d(|x| Some(x.queue_size)).unwrap_or(0.0))}),
                "Requests wait in a long queue or the device is failing or overloaded: lower --iodepth to find the depth where latency is acceptable, check the device's health (smartctl) and what else uses it.",
            ));
        }
    }
}

/// The advice to a CPU-bound run that [`unbatched`] finds: one literal, for both findings'.
macro_rules! batches {
    () => {
        "batches as fio's t/io_uring makes them, --iodepth-batch 8 --iodepth-batch-complete 8, did 1.3x the IOPS of page-cached reads at depth 32."
    };
}

/// Whether the phase's jobs are io_uring's, one at a queue depth of 8 or more entering each
/// I/O with a system call of its own (fio's default `iodepth_batch_submit=1`): where the CPU
/// is the limit, much of it goes to the calls, and t/io_uring's batches were 1.3x the IOPS of
/// page-cached reads at depth 32 (docs/performance.md, issue 59).
fn unbatched(c: &Ctx<'_>) -> bool {
    !c.phase.jobs.is_empty()
        && c.phase.jobs.iter().all(|j| j.engine == "io_uring")
        && c.phase
            .jobs
            .iter()
            .any(|j| j.iodepth >= 8 && j.iodepth_batch == 1)
}

fn cpu(c: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(idle) = c.mean(|s| s.cpu.map(|x| x.idle_pct)) else {
        return;
    };
    let iowait = c.mean(|s| s.cpu.map(|x| x.iowait_pct)).unwrap_or(0.0);
    let steal = c.mean(|s| s.cpu.map(|x| x.steal_pct)).unwrap_or(0.0);
    let busy = 100.0 - idle - iowait;
    let cpus = c.inventory.map_or(0, |i| i.cpus);
    // An S3 client: its connections, not an engine or a queue depth.
    let objects = c.phase.jobs.iter().any(|j| j.engine == "s3");
    let network = !c.phase.jobs.is_empty() && c.phase.jobs.iter().all(|j| j.engine == "net");
    let own = c.mean(|s| s.cpu.and_then(|x| x.own_pct));
    if idle + iowait < CPU_BOUND_IDLE_PCT {
        match own {
            Some(own) if objects && own >= CLIENT_SHARE * busy => {
                // stormark's own CPU time per operation of this host.
                let ops = c.phase.by_host.get(c.host).map_or(c.phase.total.ops, |b| b.total.ops);
                let cpu_s = own / 100.0 * cpus.max(1) as f64 * c.phase.duration_ns as f64 / 1e9;
                let per_op_us = (ops > 0).then(|| cpu_s * 1e6 / ops as f64);
                out.push(finding(
                    Severity::Warning,
                    "s3-client-cpu",
                    format!(
                        "{}: stormark used {own:.0}% of this client's CPUs ({busy:.0}% busy in all){}: the client, not the service, is the limit",
                        c.place(),
                        per_op_us.map(|us| format!(", {us:.0} µs of CPU per operation")).unwrap_or_default()
                    ),
                    json!({"host": c.host, "phase": c.phase.name, "own_pct": r1(own), "busy_pct": r1(busy), "cpus": cpus, "cpu_us_per_op": per_op_us.map(r1)}),
                    "Run the load from more clients (--agents) so that each has CPU to spare; fewer, larger objects cost the client less per byte (signing and HTTP work is per request).",
                ));
            }
            _ => out.push(finding(
                Severity::Warning,
                "cpu-bound",
                format!(
                    "{}: the CPUs were {busy:.0}% busy{}: the host, not the {}, may be the limit",
                    c.place(),
                    own.map(|o| format!(" (stormark {o:.0}%)")).unwrap_or_default(),
                    if network { "network" } else { "storage" }
                ),
                {
                    let mut e = json!({"host": c.host, "phase": c.phase.name, "busy_pct": r1(busy), "idle_pct": r1(idle), "iowait_pct": r1(iowait), "cpus": cpus});
                    if let Some(o) = own {
                        e["own_pct"] = json!(r1(o));
                    }
                    e
                },
                if objects {
                    "Other work on this client takes its CPUs: stop it, or run the load from other hosts (--agents)."
                } else if network {
                    "Larger writes (--msg-size) cost fewer system calls per byte; more streams spread the work over more cores; stop other work on this host, or test between hosts with CPU to spare."
                } else if c.phase.jobs.iter().all(|j| matches!(j.engine.as_str(), "iscsi" | "nfs")) && !c.phase.jobs.is_empty() {
                    // A service measured from user space: each worker's session is its own
                    // event loop.
                    "Each worker's session costs CPU for every command: fewer workers (--jobs) at a greater --iodepth, larger blocks, or more hosts (--agents); stop other work on this host."
                } else if c.phase.jobs.iter().all(|j| j.engine == "io_uring") && !c.phase.jobs.is_empty() {
                    // io_uring already: another engine is no advice.
                    if unbatched(c) {
                        concat!("Each I/O is its own system call (fio's default): ", batches!(), " Else larger blocks, fewer jobs than CPUs (--jobs), or more hosts (--agents); stop other work on this host.")
                    } else {
                        "Larger blocks, fewer jobs than CPUs (--jobs), or more hosts (--agents); stop other work on this host."
                    }
                } else {
                    "Use a more efficient engine (--engine io_uring), larger blocks, fewer jobs than CPUs, or more hosts; stop other work on this host."
                },
            )),
        }
    } else if cpus >= 2 {
        // The busiest CPU of each second, averaged: a single worker pinned to one CPU at 100%.
        let core = c.mean(|s| s.cpu.map(|x| x.busiest_cpu_pct)).unwrap_or(0.0);
        if core >= CORE_SATURATED_PCT {
            out.push(finding(
                Severity::Warning,
                "cpu-core-saturated",
                format!("{}: one CPU was {core:.0}% busy while the host as a whole was {busy:.0}% busy", c.place()),
                json!({"host": c.host, "phase": c.phase.name, "busiest_cpu_pct": r1(core), "host_busy_pct": r1(busy), "cpus": cpus}),
                if objects {
                    "A single thread (one connection, or interrupt handling on one CPU) is the limit: raise --concurrency, or spread the network card's interrupts (irqbalance)."
                } else if unbatched(c) {
                    concat!("A single thread is the limit, each of its I/Os its own system call (fio's default): ", batches!(), " Else raise --jobs, or spread the device's interrupts (irqbalance).")
                } else {
                    "A single thread (one job, or interrupt handling on one CPU) is the limit: raise --jobs, or spread the device's interrupts (irqbalance)."
                },
            ));
        }
    }
    if iowait > HIGH_IOWAIT_PCT {
        out.push(finding(
            Severity::Info,
            "high-iowait",
            format!("{}: CPUs spent {iowait:.0}% of their time waiting on I/O", c.place()),
            json!({"host": c.host, "phase": c.phase.name, "iowait_pct": r1(iowait), "idle_pct": r1(idle)}),
            "The storage, not the CPU, sets the pace: the host could drive more load (more --iodepth or --jobs) if the device is not saturated.",
        ));
    }
    if steal > STEAL_PCT {
        out.push(finding(
            Severity::Warning,
            "cpu-steal",
            format!("{}: the hypervisor took {steal:.1}% of CPU time (steal)", c.place()),
            json!({"host": c.host, "phase": c.phase.name, "steal_pct": r1(steal), "threshold_pct": STEAL_PCT}),
            "Other virtual machines share these CPUs; results will vary with their load. Use dedicated vCPUs, or repeat (--repeat) and compare.",
        ));
    }
}

fn swapping(c: &Ctx<'_>, out: &mut Vec<Finding>) {
    let bytes: f64 = c
        .samples
        .iter()
        .filter_map(|s| {
            s.memory.map(|m| {
                (m.swap_in_bytes_per_s + m.swap_out_bytes_per_s) * s.duration_ns as f64 / 1e9
            })
        })
        .sum();
    if bytes > SWAP_BYTES {
        out.push(finding(
            Severity::Warning,
            "swapping",
            format!("{}: the host swapped {:.1} MiB during the run", c.place(), bytes / 1_048_576.0),
            json!({"host": c.host, "phase": c.phase.name, "swapped_bytes": bytes.round()}),
            "Memory ran short, so swap I/O competed with the benchmark and slowed the host: stop other work, or use less memory (fewer jobs or files).",
        ));
    }
}

/// The kernel NFS client's story of each mount the phase used (/proc/self/mountstats): RPCs
/// sent again, operations slow on the wire, RPCs waiting in the client's own queue.
fn nfs_mounts(c: &Ctx<'_>, out: &mut Vec<Finding>) {
    let mut mounts: Vec<&String> = c.samples.iter().flat_map(|s| s.nfs.keys()).collect();
    mounts.sort();
    mounts.dedup();
    for mount in mounts {
        let of = |s: &&HostSample| {
            s.nfs
                .get(mount)
                .map(|n| (n.clone(), s.duration_ns as f64 / 1e9))
        };
        let seconds: Vec<_> = c.samples.iter().filter_map(of).collect();
        let export = seconds
            .first()
            .map(|(n, _)| n.export.clone())
            .unwrap_or_default();
        let count = |f: fn(&stormark_stats::NfsSample) -> f64| -> f64 {
            seconds.iter().map(|(n, secs)| f(n) * secs).sum()
        };
        let (rpcs, retrans, timeouts) = (
            count(|n| n.ops_per_s),
            count(|n| n.retrans_per_s),
            count(|n| n.timeouts_per_s),
        );
        if retrans >= 1.0 || timeouts >= 1.0 {
            out.push(finding(
                Severity::Warning,
                "nfs-retrans",
                format!(
                    "{}: NFS mount {mount} ({export}) sent {retrans:.0} RPCs again ({:.2}% of {rpcs:.0}){}",
                    c.place(),
                    100.0 * retrans / rpcs.max(1.0),
                    if timeouts >= 1.0 { format!(", {timeouts:.0} timed out") } else { String::new() }
                ),
                json!({"host": c.host, "phase": c.phase.name, "mount": mount, "export": export,
                       "rpcs": rpcs.round(), "retransmissions": retrans.round(), "timeouts": timeouts.round()}),
                "An RPC is sent again when its reply does not come in time: packets lost on the way, or a server too busy to answer. Check the path (stormark net to the server, TCP retransmissions), the server's load, and the mount's timeo and retrans options.",
            ));
        }
        // Per operation over the phase: RPCs, mean round trip, mean time from queue to reply.
        let mut ops: std::collections::BTreeMap<&str, (f64, f64, f64)> = Default::default();
        for (n, secs) in &seconds {
            for (op, o) in &n.by_op {
                let e = ops.entry(op.as_str()).or_default();
                let k = o.ops_per_s * secs;
                e.0 += k;
                e.1 += o.rtt_ms * k;
                e.2 += o.exe_ms * k;
            }
        }
        let means: Vec<(&str, f64, f64, f64)> = ops
            .into_iter()
            .filter(|(_, (k, _, _))| *k >= 1.0)
            .map(|(op, (k, rtt, exe))| (op, k, rtt / k, exe / k))
            .collect();
        let slowest = means
            .iter()
            .max_by(|a, b| a.2.total_cmp(&b.2))
            .filter(|m| m.2 >= SLOW_NFS_RTT_MS);
        if let Some(&(op, k, rtt, _)) = slowest {
            let others: Vec<String> = means
                .iter()
                .filter(|m| m.0 != op)
                .map(|m| format!("{} {:.1} ms", m.0, m.2))
                .collect();
            out.push(finding(
                Severity::Info,
                "nfs-slow-rpc",
                format!(
                    "{}: NFS mount {mount} ({export}): {op} took {rtt:.1} ms round trip on average over {k:.0} RPCs{}",
                    c.place(),
                    if others.is_empty() { String::new() } else { format!(" ({})", others.join(", ")) }
                ),
                json!({"host": c.host, "phase": c.phase.name, "mount": mount, "export": export,
                       "op": op, "rpcs": k.round(), "rtt_ms": r3(rtt), "threshold_ms": SLOW_NFS_RTT_MS}),
                "The round trip is the server's answer plus the network's: compare it with the network's own round trip (stormark net --mode rr) to tell which; a slow READ or WRITE at the server is its storage, a slow GETATTR or LOOKUP its metadata.",
            ));
        }
        for &(op, k, rtt, exe) in &means {
            if exe - rtt >= NFS_CLIENT_QUEUE_MS.max(rtt) {
                out.push(finding(
                    Severity::Info,
                    "nfs-client-queue",
                    format!(
                        "{}: NFS mount {mount} ({export}): {op} RPCs waited {:.1} ms in the client before their {rtt:.1} ms round trip",
                        c.place(),
                        exe - rtt
                    ),
                    json!({"host": c.host, "phase": c.phase.name, "mount": mount, "export": export,
                           "op": op, "rpcs": k.round(), "rtt_ms": r3(rtt), "exe_ms": r3(exe)}),
                    "The client holds RPCs back: its slots to the server are all in use. More connections (the nconnect mount option) or more RPC slots (sunrpc.tcp_max_slot_table_entries) let more go at once; the server itself answers in the round trip.",
                ));
            }
        }
    }
}
