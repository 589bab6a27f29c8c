//! `device-splits-requests`: the device under the target served smaller requests than the
//! run asked for (a 1 MiB direct read reaching the disk as eight of 128 KiB): the block layer
//! splits every I/O above the device's `max_sectors_kb`, and throughput is set by the
//! smaller requests. Read from /proc/diskstats (bytes and requests the device served each
//! second) against the phase's own bytes per operation.

use serde_json::json;
use stormark_stats::{DiskSample, Finding, Severity, Summary};

use crate::diagnose::{finding, Ctx};

/// A device serving requests smaller than this share of the size asked splits them.
pub const SPLIT_SHARE: f64 = 0.75;
/// Smaller asks are not looked at: the block layer's smallest limit is above them.
const SMALLEST_ASK: f64 = 16.0 * 1024.0;

/// Each direction of direct I/O whose requests reached the target's device split.
pub(crate) fn split_requests(c: &Ctx<'_>, out: &mut Vec<Finding>) {
    // Buffered I/O reaches the device as the page cache writes back and reads ahead, at
    // sizes of its own.
    if c.phase.jobs.is_empty() || !c.phase.jobs.iter().all(|j| j.direct) {
        return;
    }
    let Some(device) = c.target_device else {
        return;
    };
    let Some(by_op) = c.by_op() else { return };
    type Pick = fn(&DiskSample) -> (f64, f64);
    let sides: [(&str, Pick); 2] = [
        ("read", |d| (d.read_bytes_per_s, d.read_iops)),
        ("write", |d| (d.write_bytes_per_s, d.write_iops)),
    ];
    for (op, pick) in sides {
        let Some(asked) = by_op.get(op).and_then(mean_size) else {
            continue;
        };
        let bytes = c.mean(|s| s.disks.get(device).map(|d| pick(d).0));
        let requests = c.mean(|s| s.disks.get(device).map(|d| pick(d).1));
        let (Some(bytes), Some(requests)) = (bytes, requests) else {
            continue;
        };
        if asked < SMALLEST_ASK || requests <= 0.0 {
            continue;
        }
        let served = bytes / requests;
        if served >= asked * SPLIT_SHARE {
            continue;
        }
        let inv = c.inventory.and_then(|i| i.device(device));
        let limit = inv.and_then(|d| d.max_sectors_kb);
        let hw = inv.and_then(|d| d.max_hw_sectors_kb);
        let segments = inv.and_then(|d| d.max_segments);
        let kib = |b: f64| format!("{:.0} KiB", b / 1024.0);
        // Which limit the requests met: the size one (max_sectors_kb), or the count of pages
        // one request carries (max_segments of a page each, the buffers' pages apart).
        let near = |kb: u64| (served - (kb * 1024) as f64).abs() <= 0.1 * (kb * 1024) as f64;
        let by_segments = segments
            .map(|n| u64::from(n) * 4)
            .filter(|kb| near(*kb) && limit.is_none_or(|l| u64::from(l) > *kb));
        if let (Some(kb), Some(n)) = (by_segments, segments) {
            out.push(finding(
                Severity::Info,
                "device-splits-requests",
                format!(
                    "{}: device {device} served {op}s of {} on average where {} were asked: one request carries at most {n} pages (max_segments), {kb} KiB",
                    c.place(),
                    kib(served),
                    kib(asked)
                ),
                json!({"host": c.host, "phase": c.phase.name, "device": device, "op": op,
                       "asked_bytes": asked.round(), "served_bytes": served.round(),
                       "max_sectors_kb": limit, "max_hw_sectors_kb": hw, "max_segments": n}),
                &format!("Each request holds at most {n} memory segments, a page each where the buffer's pages are apart: this is what the device driver takes (not a setting). A block size of at most {kb} KiB measures what the device is asked."),
            ));
            continue;
        }
        let why = match limit {
            Some(kb) if near(u64::from(kb)) => {
                format!(": the block layer splits each at its max_sectors_kb ({kb})")
            }
            _ => String::new(),
        };
        let limit = limit.filter(|_| !why.is_empty());
        let advice = match (limit, hw) {
            (Some(kb), Some(hw)) if u64::from(hw) * 1024 >= asked as u64 && hw > kb => format!(
                "Requests above max_sectors_kb are split before the device sees them. The device takes up to {hw} KiB (max_hw_sectors_kb): raise the limit to the size asked (echo {} > /sys/block/{device}/queue/max_sectors_kb, as root; not kept across reboots) and run again, or use a block size of at most {kb} KiB.",
                (asked as u64).div_ceil(1024)
            ),
            (Some(kb), Some(hw)) => format!(
                "Requests above max_sectors_kb ({kb} KiB) are split before the device sees them, and the device itself takes at most {hw} KiB (max_hw_sectors_kb): this is as large as a request to it gets; a block size of at most {kb} KiB measures what the device is asked."
            ),
            _ => "The device served smaller requests than asked: a limit of the block layer or a layer between (device mapper, RAID, the file system's extents) splits them; see /sys/block/DEVICE/queue/max_sectors_kb.".to_string(),
        };
        out.push(finding(
            Severity::Info,
            "device-splits-requests",
            format!(
                "{}: device {device} served {op}s of {} on average where {} were asked{why}",
                c.place(),
                kib(served),
                kib(asked)
            ),
            json!({"host": c.host, "phase": c.phase.name, "device": device, "op": op,
                   "asked_bytes": asked.round(), "served_bytes": served.round(),
                   "max_sectors_kb": limit, "max_hw_sectors_kb": hw}),
            &advice,
        ));
    }
}

/// Bytes per operation of a phase's figures for one operation.
fn mean_size(s: &Summary) -> Option<f64> {
    (s.ops > 0).then(|| s.bytes as f64 / s.ops as f64)
}
