//! The kernel NFS client's own counters of each mount (/proc/self/mountstats, statvers 1.0
//! and 1.1), read each second as `nfsiostat` reads them: per operation the RPCs, how many
//! were sent again, their round trips and the time from queueing to reply.

use std::collections::BTreeMap;

use stormark_stats::{NfsOpSample, NfsSample};

/// One NFS mount's cumulative counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NfsMount {
    /// `server:/path`.
    pub export: String,
    /// Where it is mounted.
    pub mount_point: String,
    /// Per operation: its counters.
    pub ops: BTreeMap<String, NfsOpCounters>,
}

/// One operation's cumulative counters (the per-op lines of mountstats).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NfsOpCounters {
    /// RPCs completed.
    pub ops: u64,
    /// Transmissions (the first of each RPC and every retransmission).
    pub trans: u64,
    /// Major timeouts.
    pub timeouts: u64,
    /// Cumulative time in the client's queue, ms.
    pub queue_ms: u64,
    /// Cumulative round trip, ms.
    pub rtt_ms: u64,
    /// Cumulative time from queueing to reply, ms.
    pub exe_ms: u64,
}

/// Parses /proc/self/mountstats: every `nfs` or `nfs4` mount with its per-operation counters.
/// Other mounts, and lines of another form, are skipped.
pub fn parse_mountstats(text: &str) -> Vec<NfsMount> {
    let mut out: Vec<NfsMount> = Vec::new();
    let mut in_nfs = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("device ") {
            // device SERVER:/PATH mounted on /MOUNT with fstype nfs4 statvers=1.1
            in_nfs = false;
            let Some((export, rest)) = rest.split_once(" mounted on ") else {
                continue;
            };
            let Some((mount, rest)) = rest.rsplit_once(" with fstype ") else {
                continue;
            };
            let fstype = rest.split_whitespace().next().unwrap_or("");
            if fstype == "nfs" || fstype == "nfs4" {
                in_nfs = true;
                out.push(NfsMount {
                    export: unescape(export),
                    mount_point: unescape(mount),
                    ops: BTreeMap::new(),
                });
            }
            continue;
        }
        if !in_nfs {
            continue;
        }
        let t = line.trim();
        let Some((name, nums)) = t.split_once(':') else {
            continue;
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
            continue;
        }
        let v: Vec<u64> = nums
            .split_whitespace()
            .map_while(|n| n.parse().ok())
            .collect();
        if v.len() < 8 {
            continue;
        }
        if let Some(m) = out.last_mut() {
            m.ops.insert(
                name.to_string(),
                NfsOpCounters {
                    ops: v[0],
                    trans: v[1],
                    timeouts: v[2],
                    queue_ms: v[5],
                    rtt_ms: v[6],
                    exe_ms: v[7],
                },
            );
        }
    }
    out
}

/// mountstats writes a space, tab, newline or backslash in a path as `\\ooo`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                let v = d.iter().fold(0u32, |a, c| a * 8 + u32::from(c - b'0'));
                out.push(v as u8);
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl NfsMount {
    /// What the mount did between `prev` and now, over `secs`; `None` without RPCs.
    pub fn since(&self, prev: &NfsMount, secs: f64) -> Option<NfsSample> {
        let secs = secs.max(1e-3);
        let mut s = NfsSample {
            export: self.export.clone(),
            ..NfsSample::default()
        };
        for (name, now) in &self.ops {
            let then = prev.ops.get(name).copied().unwrap_or_default();
            let ops = now.ops.saturating_sub(then.ops);
            let trans = now.trans.saturating_sub(then.trans);
            let timeouts = now.timeouts.saturating_sub(then.timeouts);
            s.retrans_per_s += trans.saturating_sub(ops) as f64 / secs;
            s.timeouts_per_s += timeouts as f64 / secs;
            if ops == 0 {
                continue;
            }
            s.ops_per_s += ops as f64 / secs;
            let mean = |a: u64, b: u64| a.saturating_sub(b) as f64 / ops as f64;
            s.by_op.insert(
                name.clone(),
                NfsOpSample {
                    ops_per_s: ops as f64 / secs,
                    rtt_ms: mean(now.rtt_ms, then.rtt_ms),
                    exe_ms: mean(now.exe_ms, then.exe_ms),
                },
            );
        }
        (s.ops_per_s > 0.0 || s.retrans_per_s > 0.0 || s.timeouts_per_s > 0.0).then_some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A mountstats of Linux 6.1 (statvers 1.1), shortened: a local file system, then an NFSv4.2
    /// mount whose mount point has a space.
    const FIXTURE: &str = "device /dev/vda1 mounted on / with fstype ext4
device 192.0.2.20:/export/bench mounted on /mnt/nfs\\040bench with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,acregmin=3,hard,proto=tcp,timeo=600,retrans=2,sec=sys
\tage:\t862
\tevents:\t10 40 0 0 5 8 60 0 0 2 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
\tbytes:\t409600 8192 0 0 409600 8192 100 2
\txprt:\ttcp 0 1 1 0 0 250 250 0 260 0 2 0 2
\tper-op statistics
\t        NULL: 1 1 0 44 24 0 0 0 0
\t        READ: 100 103 1 13600 416000 20 300 330 0
\t       WRITE: 2 2 0 8480 176 0 4 5 0
\t      COMMIT: 0 0 0 0 0 0 0 0 0
\t     GETATTR: 40 40 0 6720 9600 1 12 14 0
";

    #[test]
    fn nfs_mounts_and_their_operations() {
        let m = parse_mountstats(FIXTURE);
        assert_eq!(m.len(), 1, "{m:?}");
        assert_eq!(m[0].export, "192.0.2.20:/export/bench");
        assert_eq!(m[0].mount_point, "/mnt/nfs bench");
        let read = m[0].ops["READ"];
        assert_eq!(
            (
                read.ops,
                read.trans,
                read.timeouts,
                read.queue_ms,
                read.rtt_ms,
                read.exe_ms
            ),
            (100, 103, 1, 20, 300, 330)
        );
        // A second later: 50 more READs, 1 more retransmission, 150 ms more round trip.
        let later = FIXTURE.replace(
            "READ: 100 103 1 13600 416000 20 300 330 0",
            "READ: 150 154 1 20400 624000 30 450 500 0",
        );
        let m2 = parse_mountstats(&later);
        let s = m2[0].since(&m[0], 1.0).unwrap();
        assert_eq!(s.ops_per_s, 50.0);
        assert_eq!(s.retrans_per_s, 1.0);
        assert_eq!(s.timeouts_per_s, 0.0);
        assert_eq!(s.by_op["READ"].rtt_ms, 3.0);
        assert_eq!(s.by_op["READ"].exe_ms, 170.0 / 50.0);
        assert!(!s.by_op.contains_key("GETATTR"), "no GETATTR this second");
        assert!(m[0].since(&m[0], 1.0).is_none(), "nothing happened");
    }

    proptest! {
        /// Any text: parsed without a panic, and whatever is found found again in the same
        /// text with other lines around it.
        #[test]
        fn any_text_parses(lines in proptest::collection::vec("[ -~\\t]{0,80}", 0..20)) {
            let text = lines.join("\n");
            let m = parse_mountstats(&text);
            let more = format!("device x mounted on /y with fstype ext4\n{text}");
            prop_assert_eq!(parse_mountstats(&more), m);
        }
    }
}
