//! The gRPC messages (generated from proto/agent.proto) and conversions between them and
//! stormark's own types.

use hdrhistogram::serialization::{Deserializer, Serializer as _, V2Serializer};
use hdrhistogram::Histogram;
use stormark_stats::{ErrorKind, ErrorTally, ErrorTallyEntry, Op, OpRecord, Snapshot, HIGHEST_NS};

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

/// The wire form of a snapshot: each operation's counters and HDR V2 histogram.
pub fn encode_snapshot(s: &Snapshot) -> pb::Snapshot {
    encode_parts(s.ops(), &s.errors)
}

/// The wire form of a second given as per-operation records and errors.
pub fn encode_parts<'a>(
    ops: impl Iterator<Item = (Op, &'a OpRecord)>,
    errors: &ErrorTally,
) -> pb::Snapshot {
    let encode = |h: &Histogram<u64>| {
        let mut buf = Vec::new();
        V2Serializer::new()
            .serialize(h, &mut buf)
            .expect("serializing into a Vec cannot fail");
        buf
    };
    let ops = ops
        .filter(|(_, r)| r.ops > 0 || r.errors > 0)
        .map(|(op, r)| pb::OpRecord {
            op: op.index() as u32,
            ops: r.ops,
            bytes: r.bytes,
            errors: r.errors,
            histogram: encode(&r.hist),
            service_histogram: r.service.as_ref().map(encode).unwrap_or_default(),
        })
        .collect();
    let errors = errors
        .entries()
        .map(|e| pb::ErrorEntry {
            op: e.op.index() as u32,
            kind: match e.kind {
                ErrorKind::Io => 5,
                ErrorKind::NoSpace => 28,
                ErrorKind::Invalid => 22,
                ErrorKind::Short => -1,
                ErrorKind::Other(n) => n,
            },
            count: e.count,
            first_offset: e.first_offset,
            first_file: e.first_file,
        })
        .collect();
    pb::Snapshot { ops, errors }
}

/// Decodes a snapshot from an agent into the records of the operations it carries and its
/// errors: one histogram allocated per operation that did something, nothing else. `None`
/// when it is malformed.
pub fn decode_parts(p: &pb::Snapshot) -> Option<(Vec<(Op, OpRecord)>, ErrorTally)> {
    let mut ops = Vec::with_capacity(p.ops.len());
    for r in &p.ops {
        let op = *Op::ALL.get(r.op as usize)?;
        let decode = |bytes: &[u8]| -> Option<Histogram<u64>> {
            let h: Histogram<u64> = Deserializer::new().deserialize(&mut &bytes[..]).ok()?;
            // Only stormark's configuration merges exactly with the other hosts' histograms.
            (h.low() == 1 && h.high() == HIGHEST_NS && h.sigfig() == 3).then_some(h)
        };
        let hist = decode(&r.histogram)?;
        let service = if r.service_histogram.is_empty() {
            None
        } else {
            Some(decode(&r.service_histogram)?)
        };
        ops.push((
            op,
            OpRecord {
                hist,
                service,
                ops: r.ops,
                bytes: r.bytes,
                errors: r.errors,
            },
        ));
    }
    let mut errors = ErrorTally::default();
    for e in &p.errors {
        let op = *Op::ALL.get(e.op as usize)?;
        let kind = match e.kind {
            -1 => ErrorKind::Short,
            n => ErrorKind::from_errno(n),
        };
        errors.add_entry(&ErrorTallyEntry {
            op,
            kind,
            count: e.count,
            first_offset: e.first_offset,
            first_file: e.first_file,
        });
    }
    Some((ops, errors))
}

/// Decodes a snapshot from an agent; `None` when it is malformed.
pub fn decode_snapshot(p: &pb::Snapshot) -> Option<Snapshot> {
    let (ops, errors) = decode_parts(p)?;
    let mut s = Snapshot::new();
    for (op, r) in ops {
        *s.op_mut(op) = r;
    }
    s.errors = errors;
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
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
        let bad = pb::Snapshot {
            ops: vec![pb::OpRecord {
                op: 9,
                ..Default::default()
            }],
            errors: vec![],
        };
        assert!(decode_snapshot(&bad).is_none());
        let bad = pb::Snapshot {
            ops: vec![pb::OpRecord {
                op: 0,
                histogram: vec![1, 2, 3],
                ..Default::default()
            }],
            errors: vec![],
        };
        assert!(decode_snapshot(&bad).is_none());
    }
}
