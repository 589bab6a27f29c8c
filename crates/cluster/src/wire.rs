//! The gRPC messages (generated from proto/agent.proto) and conversions between them and
//! stormark's own types.

use hdrhistogram::serialization::{Serializer as _, V2Serializer};
use hdrhistogram::Histogram;
use stormark_stats::{
    ArcSample, CpuSample, DiskSample, ErrorKind, ErrorTally, ErrorTallyEntry, Finding, HostSample,
    MemorySample, NetSample, NfsOpSample, NfsSample, Op, OpRecord, PhaseJob, Severity, Snapshot,
    SparseHist, SparseRecord, Target, Verified,
};

use crate::agent::Validated;

/// Code generated from proto/agent.proto.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    tonic::include_proto!("stormark.agent.v1");
}

/// A wall-clock instant as ns since the Unix epoch (negative before it), as the protocol
/// carries times.
pub fn unix_ns(t: std::time::SystemTime) -> i64 {
    match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i64,
        Err(e) => -(e.duration().as_nanos() as i64),
    }
}

/// The inverse of [`unix_ns`].
pub fn from_unix_ns(ns: i64) -> std::time::SystemTime {
    let d = std::time::Duration::from_nanos(ns.unsigned_abs());
    if ns >= 0 {
        std::time::UNIX_EPOCH + d
    } else {
        std::time::UNIX_EPOCH - d
    }
}

/// What is left of the removal of a run's files (`files`, `bytes`), as a parenthesis after
/// the words that name it (` (2 files, 8.0 GiB left)`), or nothing when it counts nothing.
pub(crate) fn left_words((files, bytes): (u64, u64)) -> String {
    let size = crate::local::human(bytes);
    match files {
        0 => String::new(),
        1 => format!(" (1 file, {size} left)"),
        n => format!(" ({n} files, {size} left)"),
    }
}

/// The wire form of a snapshot: each operation's counters and HDR V2 histogram.
pub fn encode_snapshot(s: &Snapshot) -> pb::Snapshot {
    encode_parts(s.ops(), (&s.errors, s.verified))
}

/// The wire form of a second given as per-operation records, errors and what `--verify`
/// checked.
pub fn encode_parts<'a>(
    ops: impl Iterator<Item = (Op, &'a OpRecord)>,
    (errors, verified): (&ErrorTally, Verified),
) -> pb::Snapshot {
    let encode = |h: &Histogram<u64>| {
        let mut buf = Vec::new();
        V2Serializer::new()
            .serialize(h, &mut buf)
            .expect("serializing into a Vec cannot fail");
        buf
    };
    let ops = ops
        .filter(|(_, r)| r.ops > 0 || r.errors > 0 || r.bytes > 0)
        .map(|(op, r)| pb::OpRecord {
            op: op.index() as u32,
            ops: r.ops,
            bytes: r.bytes,
            errors: r.errors,
            histogram: encode(&r.hist),
            service_histogram: r.service.as_ref().map(encode).unwrap_or_default(),
            first_byte_histogram: r.first_byte.as_ref().map(encode).unwrap_or_default(),
        })
        .collect();
    let errors = errors
        .entries()
        .map(|e| pb::ErrorEntry {
            op: e.op.index() as u32,
            kind: e.kind.code(),
            count: e.count,
            first_offset: e.first_offset,
            first_file: e.first_file,
        })
        .collect();
    pb::Snapshot {
        ops,
        errors,
        verified_blocks: verified.blocks,
        verified_objects: verified.objects,
        verified_bytes: verified.bytes,
        verified_bad: verified.bad,
    }
}

/// A second from an agent as its parts: the records of the operations that did something, the
/// failures, and what `--verify` checked.
pub type Parts = (Vec<(Op, SparseRecord)>, ErrorTally, Verified);

/// Decodes a snapshot from an agent into the records of the operations it carries, its
/// errors and what `--verify` checked: one histogram allocated per operation that did
/// something, nothing else. `None` when it is malformed.
pub fn decode_parts(p: &pb::Snapshot) -> Option<Parts> {
    let mut ops = Vec::with_capacity(p.ops.len());
    for r in &p.ops {
        let op = *Op::ALL.get(r.op as usize)?;
        // Only stormark's configuration merges exactly with the other hosts' histograms; each
        // is kept as the counts it holds, added at their indexes (no full histogram per host
        // and second).
        let optional = |bytes: &[u8]| -> Option<Option<SparseHist>> {
            if bytes.is_empty() {
                Some(None)
            } else {
                SparseHist::decode(bytes).map(Some)
            }
        };
        ops.push((
            op,
            SparseRecord {
                hist: SparseHist::decode(&r.histogram)?,
                service: optional(&r.service_histogram)?,
                first_byte: optional(&r.first_byte_histogram)?,
                ops: r.ops,
                bytes: r.bytes,
                errors: r.errors,
            },
        ));
    }
    let mut errors = ErrorTally::default();
    for e in &p.errors {
        let op = *Op::ALL.get(e.op as usize)?;
        let kind = ErrorKind::from_code(e.kind);
        errors.add_entry(&ErrorTallyEntry {
            op,
            kind,
            count: e.count,
            first_offset: e.first_offset,
            first_file: e.first_file,
        });
    }
    let verified = Verified {
        blocks: p.verified_blocks,
        objects: p.verified_objects,
        bytes: p.verified_bytes,
        bad: p.verified_bad,
    };
    Some((ops, errors, verified))
}

/// Decodes a snapshot from an agent; `None` when it is malformed.
pub fn decode_snapshot(p: &pb::Snapshot) -> Option<Snapshot> {
    let (ops, errors, verified) = decode_parts(p)?;
    let mut s = Snapshot::new();
    for (op, r) in &ops {
        *s.op_mut(*op) += r;
    }
    s.errors = errors;
    s.verified = verified;
    Some(s)
}

/// A job as it runs, for the wire.
pub(crate) fn encode_job(j: &PhaseJob) -> pb::PhaseJob {
    pb::PhaseJob {
        name: j.name.clone(),
        engine: j.engine.clone(),
        direct: j.direct,
        workers: j.workers,
        iodepth: j.iodepth,
        working_set_bytes: j.working_set_bytes,
        rate_iops: j.rate_iops,
        iodepth_batch: j.iodepth_batch,
    }
}

/// A job as it runs, from the wire.
pub(crate) fn decode_job(p: pb::PhaseJob) -> PhaseJob {
    PhaseJob {
        name: p.name,
        engine: p.engine,
        direct: p.direct,
        workers: p.workers,
        iodepth: p.iodepth,
        iodepth_batch: p.iodepth_batch.max(1),
        working_set_bytes: p.working_set_bytes,
        rate_iops: p.rate_iops,
        target: None,
    }
}

/// A net job's session report, for the wire.
pub(crate) fn encode_net(r: &stormark_stats::NetReport) -> pb::NetReport {
    pb::NetReport {
        server: r.server.clone(),
        udp: r.protocol == "udp",
        rtt: r.mode == "rtt",
        reverse: r.reverse,
        bidir: r.bidir,
        interface: r.interface.clone(),
        link_mbps: r.link_mbps,
        mtu: r.mtu,
        path_mtu: r.path_mtu,
        streams: r
            .streams
            .iter()
            .map(|s| pb::NetStreamReport {
                bytes: s.bytes,
                retransmits: s.retransmits,
                srtt_us: s.srtt_us,
                cwnd: s.cwnd,
                pmtu: s.pmtu,
                mss: s.mss,
                datagrams_sent: s.datagrams_sent,
                datagrams_received: s.datagrams_received,
                out_of_order: s.out_of_order,
                jitter_ns: s.jitter_ns,
                sender_cpu_pct: s.sender_cpu_pct,
                receiver_cpu_pct: s.receiver_cpu_pct,
            })
            .collect(),
        to: r.to,
        duration_ns: r.duration_ns,
        failure: r.failure.clone(),
    }
}

/// A net job's session report, from the wire (at most 1,024 streams kept: a session has at
/// most 2 × 128).
pub(crate) fn decode_net(p: pb::NetReport) -> stormark_stats::NetReport {
    let text = |t: String| stormark_spec::printable(&t, 300);
    stormark_stats::NetReport {
        server: text(p.server),
        protocol: if p.udp { "udp" } else { "tcp" }.into(),
        mode: if p.rtt { "rtt" } else { "throughput" }.into(),
        reverse: p.reverse,
        bidir: p.bidir,
        interface: p.interface.map(text),
        link_mbps: p.link_mbps,
        mtu: p.mtu,
        path_mtu: p.path_mtu,
        streams: p
            .streams
            .into_iter()
            .take(1024)
            .map(|s| stormark_stats::NetStream {
                bytes: s.bytes,
                retransmits: s.retransmits,
                srtt_us: s.srtt_us,
                cwnd: s.cwnd,
                pmtu: s.pmtu,
                mss: s.mss,
                datagrams_sent: s.datagrams_sent,
                datagrams_received: s.datagrams_received,
                out_of_order: s.out_of_order,
                jitter_ns: s.jitter_ns,
                sender_cpu_pct: s.sender_cpu_pct.filter(|v| v.is_finite()),
                receiver_cpu_pct: s.receiver_cpu_pct.filter(|v| v.is_finite()),
            })
            .collect(),
        from: None,
        to: p.to,
        duration_ns: p.duration_ns,
        failure: p.failure.map(|f| stormark_spec::printable(&f, 1000)),
    }
}

/// What validation found, for the wire (the workers of each stage travel beside it).
pub(crate) fn encode_validated(v: &Validated, stages: Vec<pb::StageWorkers>) -> pb::ValidateReply {
    pb::ValidateReply {
        stages,
        target: v.target.as_ref().map(|t| pb::Target {
            path: t.path.clone(),
            kind: t.kind.clone(),
            run_dir: t.run_dir.clone(),
            kept: t.kept,
            device: t.device.clone(),
            fs_type: t.fs_type.clone(),
        }),
        stage_jobs: v
            .stages
            .iter()
            .map(|jobs| pb::StageJobs {
                jobs: jobs.iter().map(encode_job).collect(),
            })
            .collect(),
        notes: v.notes.clone(),
        findings: v
            .findings
            .iter()
            .map(|f| pb::Finding {
                severity: match f.severity {
                    Severity::Info => pb::Severity::Info,
                    Severity::Warning => pb::Severity::Warning,
                    Severity::Critical => pb::Severity::Critical,
                }
                .into(),
                code: f.code.clone(),
                message: f.message.clone(),
                evidence_json: f.evidence.to_string(),
                advice: f.advice.clone(),
            })
            .collect(),
        net_ports: v.net_ports.iter().map(|&p| u32::from(p)).collect(),
        sampling_since_unix_ns: 0,
    }
}

/// What validation found, from the wire.
pub(crate) fn decode_validated(r: pb::ValidateReply) -> Validated {
    Validated {
        target: r.target.map(|t| Target {
            path: t.path,
            kind: t.kind,
            run_dir: t.run_dir,
            kept: t.kept,
            device: t.device,
            fs_type: t.fs_type,
        }),
        targets: Vec::new(),
        stages: r
            .stage_jobs
            .into_iter()
            .map(|s| s.jobs.into_iter().map(decode_job).collect())
            .collect(),
        notes: r.notes,
        findings: r
            .findings
            .into_iter()
            .map(|f| Finding {
                severity: match pb::Severity::try_from(f.severity) {
                    Ok(pb::Severity::Critical) => Severity::Critical,
                    Ok(pb::Severity::Warning) => Severity::Warning,
                    _ => Severity::Info,
                },
                code: f.code,
                message: f.message,
                evidence: serde_json::from_str(&f.evidence_json)
                    .unwrap_or(serde_json::Value::String(f.evidence_json)),
                advice: f.advice,
            })
            .collect(),
        // One per host at most (a mesh of at most MAX_PEERS).
        net_ports: r
            .net_ports
            .into_iter()
            .take(crate::local::MAX_PEERS + 1)
            .map(|p| u16::try_from(p).unwrap_or(0))
            .collect(),
    }
}

/// A host's samples, for the wire.
pub(crate) fn encode_samples(samples: &[HostSample]) -> Vec<pb::HostSample> {
    samples
        .iter()
        .map(|s| pb::HostSample {
            t_ns: s.t_ns,
            duration_ns: s.duration_ns,
            cpu: s.cpu.map(|c| pb::CpuSample {
                user_pct: c.user_pct,
                system_pct: c.system_pct,
                iowait_pct: c.iowait_pct,
                idle_pct: c.idle_pct,
                steal_pct: c.steal_pct,
                busiest_cpu: c.busiest_cpu,
                busiest_cpu_pct: c.busiest_cpu_pct,
                own_pct: c.own_pct,
            }),
            memory: s.memory.map(|m| pb::MemorySample {
                free_bytes: m.free_bytes,
                available_bytes: m.available_bytes,
                page_cache_bytes: m.page_cache_bytes,
                dirty_bytes: m.dirty_bytes,
                swap_in_bytes_per_s: m.swap_in_bytes_per_s,
                swap_out_bytes_per_s: m.swap_out_bytes_per_s,
            }),
            disks: s
                .disks
                .iter()
                .map(|(name, d)| {
                    let d = pb::DiskSample {
                        read_iops: d.read_iops,
                        write_iops: d.write_iops,
                        read_bytes_per_s: d.read_bytes_per_s,
                        write_bytes_per_s: d.write_bytes_per_s,
                        util_pct: d.util_pct,
                        r_await_ms: d.r_await_ms,
                        w_await_ms: d.w_await_ms,
                        queue_size: d.queue_size,
                    };
                    (name.clone(), d)
                })
                .collect(),
            net: s
                .net
                .iter()
                .map(|(name, n)| {
                    let n = pb::NetSample {
                        rx_bytes_per_s: n.rx_bytes_per_s,
                        tx_bytes_per_s: n.tx_bytes_per_s,
                        errors_per_s: n.errors_per_s,
                    };
                    (name.clone(), n)
                })
                .collect(),
            tcp_retrans_per_s: s.tcp_retrans_per_s,
            nfs: s
                .nfs
                .iter()
                .map(|(mount, n)| {
                    let n = pb::NfsSample {
                        export: n.export.clone(),
                        ops_per_s: n.ops_per_s,
                        retrans_per_s: n.retrans_per_s,
                        timeouts_per_s: n.timeouts_per_s,
                        by_op: n
                            .by_op
                            .iter()
                            .map(|(op, o)| {
                                let o = pb::NfsOpSample {
                                    ops_per_s: o.ops_per_s,
                                    rtt_ms: o.rtt_ms,
                                    exe_ms: o.exe_ms,
                                };
                                (op.clone(), o)
                            })
                            .collect(),
                    };
                    (mount.clone(), n)
                })
                .collect(),
            arc: s.arc.map(|a| pb::ArcSample {
                hits_per_s: a.hits_per_s,
                misses_per_s: a.misses_per_s,
                demand_data_hits_per_s: a.demand_data_hits_per_s,
                demand_data_misses_per_s: a.demand_data_misses_per_s,
                size_bytes: a.size_bytes,
                target_bytes: a.target_bytes,
                max_bytes: a.max_bytes,
            }),
        })
        .collect()
}

/// A host's samples, from the wire.
pub(crate) fn decode_samples(samples: Vec<pb::HostSample>) -> Vec<HostSample> {
    samples
        .into_iter()
        .map(|s| HostSample {
            t_ns: s.t_ns,
            duration_ns: s.duration_ns,
            cpu: s.cpu.map(|c| CpuSample {
                user_pct: c.user_pct,
                system_pct: c.system_pct,
                iowait_pct: c.iowait_pct,
                idle_pct: c.idle_pct,
                steal_pct: c.steal_pct,
                busiest_cpu: c.busiest_cpu,
                busiest_cpu_pct: c.busiest_cpu_pct,
                own_pct: c.own_pct,
            }),
            memory: s.memory.map(|m| MemorySample {
                free_bytes: m.free_bytes,
                available_bytes: m.available_bytes,
                page_cache_bytes: m.page_cache_bytes,
                dirty_bytes: m.dirty_bytes,
                swap_in_bytes_per_s: m.swap_in_bytes_per_s,
                swap_out_bytes_per_s: m.swap_out_bytes_per_s,
            }),
            disks: s
                .disks
                .into_iter()
                .map(|(name, d)| {
                    let d = DiskSample {
                        read_iops: d.read_iops,
                        write_iops: d.write_iops,
                        read_bytes_per_s: d.read_bytes_per_s,
                        write_bytes_per_s: d.write_bytes_per_s,
                        util_pct: d.util_pct,
                        r_await_ms: d.r_await_ms,
                        w_await_ms: d.w_await_ms,
                        queue_size: d.queue_size,
                    };
                    (name, d)
                })
                .collect(),
            net: s
                .net
                .into_iter()
                .map(|(name, n)| {
                    let n = NetSample {
                        rx_bytes_per_s: n.rx_bytes_per_s,
                        tx_bytes_per_s: n.tx_bytes_per_s,
                        errors_per_s: n.errors_per_s,
                    };
                    (name, n)
                })
                .collect(),
            tcp_retrans_per_s: s.tcp_retrans_per_s,
            nfs: s
                .nfs
                .into_iter()
                .map(|(mount, n)| {
                    let n = NfsSample {
                        export: n.export,
                        ops_per_s: n.ops_per_s,
                        retrans_per_s: n.retrans_per_s,
                        timeouts_per_s: n.timeouts_per_s,
                        by_op: n
                            .by_op
                            .into_iter()
                            .map(|(op, o)| {
                                let o = NfsOpSample {
                                    ops_per_s: o.ops_per_s,
                                    rtt_ms: o.rtt_ms,
                                    exe_ms: o.exe_ms,
                                };
                                (op, o)
                            })
                            .collect(),
                    };
                    (mount, n)
                })
                .collect(),
            arc: s.arc.map(|a| ArcSample {
                hits_per_s: a.hits_per_s,
                misses_per_s: a.misses_per_s,
                demand_data_hits_per_s: a.demand_data_hits_per_s,
                demand_data_misses_per_s: a.demand_data_misses_per_s,
                size_bytes: a.size_bytes,
                target_bytes: a.target_bytes,
                max_bytes: a.max_bytes,
            }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 53: what is left of a removal, as a waiting coordinator says it.
    #[test]
    fn what_is_left_of_a_removal_is_said_in_words() {
        assert_eq!(left_words((0, 0)), "");
        assert_eq!(left_words((1, 4 << 30)), " (1 file, 4.0 GiB left)");
        assert_eq!(left_words((4, 16 << 30)), " (4 files, 16.0 GiB left)");
    }

    #[test]
    fn samples_cross_the_wire_whole() {
        let mut s = HostSample {
            t_ns: 2_000_000_000,
            duration_ns: 1_000_000_000,
            cpu: Some(CpuSample {
                user_pct: 12.5,
                iowait_pct: 3.0,
                busiest_cpu: 1,
                busiest_cpu_pct: 40.0,
                ..CpuSample::default()
            }),
            memory: Some(MemorySample {
                free_bytes: 1 << 30,
                available_bytes: None,
                ..MemorySample::default()
            }),
            tcp_retrans_per_s: Some(0.5),
            ..HostSample::default()
        };
        s.disks.insert(
            "nvme0n1".into(),
            DiskSample {
                util_pct: 99.0,
                r_await_ms: Some(0.2),
                ..DiskSample::default()
            },
        );
        s.net.insert("eth0".into(), NetSample::default());
        let mut nfs = NfsSample {
            export: "nas:/export".into(),
            ops_per_s: 120.0,
            retrans_per_s: 2.0,
            ..NfsSample::default()
        };
        nfs.by_op.insert(
            "READ".into(),
            NfsOpSample {
                ops_per_s: 120.0,
                rtt_ms: 1.5,
                exe_ms: 1.75,
            },
        );
        s.nfs.insert("/mnt/nas".into(), nfs);
        s.arc = Some(ArcSample {
            hits_per_s: 900.0,
            misses_per_s: 100.0,
            demand_data_hits_per_s: Some(800.0),
            demand_data_misses_per_s: None,
            size_bytes: 8 << 30,
            target_bytes: Some(8 << 30),
            max_bytes: None,
        });
        let back = decode_samples(encode_samples(std::slice::from_ref(&s)));
        assert_eq!(back, vec![s]);
    }
    use stormark_stats::Recorder;

    #[test]
    fn snapshots_cross_the_wire_exactly() {
        let mut r = Recorder::new();
        for i in 1..1000u64 {
            r.record(Op::Read, 4096, i * 1_000);
        }
        r.record(Op::Write, 65536, 5_000_000);
        r.record_scheduled(Op::Write, 65536, 9_000_000, 4_000_000);
        r.record_error(Op::Write, ErrorKind::Io, 8192, 1);
        r.record_error(Op::Read, ErrorKind::Short, 4096, 0);
        r.record_error(Op::Read, ErrorKind::Other(95), 0, 0);
        r.record_verified(Verified {
            blocks: 1024,
            objects: 0,
            bytes: 4 << 20,
            bad: 1,
        });
        let s = r.take();
        let back = decode_snapshot(&encode_snapshot(&s)).unwrap();
        for op in Op::ALL {
            assert_eq!(back.op(op).hist, s.op(op).hist);
            assert_eq!(back.op(op).service, s.op(op).service);
            assert_eq!(
                (back.op(op).ops, back.op(op).bytes, back.op(op).errors),
                (s.op(op).ops, s.op(op).bytes, s.op(op).errors)
            );
        }
        assert_eq!(back.errors, s.errors);
        assert_eq!(back.verified, s.verified);
        let bad = pb::Snapshot {
            ops: vec![pb::OpRecord {
                op: 9,
                ..Default::default()
            }],
            ..Default::default()
        };
        assert!(decode_snapshot(&bad).is_none());
        let bad = pb::Snapshot {
            ops: vec![pb::OpRecord {
                op: 0,
                histogram: vec![1, 2, 3],
                ..Default::default()
            }],
            ..Default::default()
        };
        assert!(decode_snapshot(&bad).is_none());
    }
}
