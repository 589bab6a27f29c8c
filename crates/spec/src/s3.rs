//! What an object-storage (S3) job asks for: where, which operations in what mix, and how
//! large the objects are. Credentials are never part of a job: they stay on the host that
//! signs with them and never reach a results document.

use std::fmt;

use crate::units::{format_size, parse_size};

/// An S3 operation a job can mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum S3Op {
    /// Read a whole object.
    Get,
    /// Write a new object.
    Put,
    /// Read an object's metadata.
    Head,
    /// Delete an object this run wrote.
    Delete,
    /// List keys under the run's prefix (ListObjectsV2, one page).
    List,
}

impl S3Op {
    /// Every operation, in the order mixes are shown.
    pub const ALL: [S3Op; 5] = [S3Op::Put, S3Op::Get, S3Op::Head, S3Op::Delete, S3Op::List];

    /// The name as typed (`get`).
    pub fn name(self) -> &'static str {
        match self {
            S3Op::Get => "get",
            S3Op::Put => "put",
            S3Op::Head => "head",
            S3Op::Delete => "delete",
            S3Op::List => "list",
        }
    }

    fn parse(s: &str) -> Option<S3Op> {
        S3Op::ALL
            .into_iter()
            .find(|op| op.name().eq_ignore_ascii_case(s.trim()))
    }
}

/// Weighted operations: each picked with probability weight / sum of weights.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpMix(pub Vec<(S3Op, u32)>);

/// The accepted form of `--op-mix`.
pub const OP_MIX_FORM: &str =
    "an operation (get, put, head, delete, list) or weights such as put=30,get=60,delete=5,list=5";

impl OpMix {
    /// Parses `get` or `put=30,get=60,...` (weights are whole numbers; zero drops one).
    pub fn parse(text: &str) -> Option<OpMix> {
        let mut mix: Vec<(S3Op, u32)> = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (op, weight) = match part.split_once('=') {
                Some((op, w)) => (
                    S3Op::parse(op)?,
                    w.trim().trim_end_matches('%').parse().ok()?,
                ),
                None => (S3Op::parse(part)?, 1),
            };
            if mix.iter().any(|(o, _)| *o == op) {
                return None;
            }
            if weight > 0 {
                mix.push((op, weight));
            }
        }
        let total: u64 = mix.iter().map(|(_, w)| u64::from(*w)).sum();
        (total > 0 && total <= 1_000_000).then_some(OpMix(mix))
    }

    /// The weight of `op` (0 if absent).
    pub fn weight(&self, op: S3Op) -> u32 {
        self.0.iter().find(|(o, _)| *o == op).map_or(0, |(_, w)| *w)
    }

    /// Whether the mix reads objects that must exist first (GET, HEAD).
    pub fn reads(&self) -> bool {
        self.weight(S3Op::Get) > 0 || self.weight(S3Op::Head) > 0
    }
}

impl fmt::Display for OpMix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|(op, w)| format!("{}={w}", op.name()))
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// An S3 job's own options, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct S3Job {
    /// `http://host:port` of the service.
    pub endpoint: String,
    /// The bucket.
    pub bucket: String,
    /// The signing region.
    pub region: String,
    /// Keys this run writes start with `<prefix>/<run id>/`.
    pub prefix: String,
    /// The operations and their weights.
    pub mix: OpMix,
    /// Bytes per object written (and read: the objects prepared for reads have this size).
    pub obj_size: u64,
    /// Objects written before the measured phase for GET and HEAD to read.
    pub objects: u32,
    /// Operations after which the job stops (over all its workers).
    pub ops: Option<u64>,
}

impl S3Job {
    /// The options as job key/value pairs (for results and re-runs).
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("endpoint", self.endpoint.clone()),
            ("bucket", self.bucket.clone()),
            ("region", self.region.clone()),
            ("prefix", self.prefix.clone()),
            ("op_mix", self.mix.to_string()),
            ("obj_size", format_size(self.obj_size)),
            ("objects", self.objects.to_string()),
        ]
        .into_iter()
        .chain(self.ops.map(|n| ("ops", n.to_string())))
        .collect()
    }
}

/// Whether `name` is a bucket name S3 accepts (3-63 of a-z, 0-9, '-', '.', starting and
/// ending with a letter or digit).
pub fn valid_bucket(name: &str) -> bool {
    (3..=63).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && name
            .bytes()
            .next()
            .zip(name.bytes().last())
            .is_some_and(|(a, z)| a.is_ascii_alphanumeric() && z.is_ascii_alphanumeric())
}

/// Whether `prefix` is a key prefix stormark writes under: 1-200 of letters, digits and
/// `-_./`, no `..`, not starting with `/`.
pub fn valid_prefix(prefix: &str) -> bool {
    (1..=200).contains(&prefix.len())
        && !prefix.starts_with('/')
        && !prefix.contains("..")
        && prefix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./".contains(&b))
}

/// An object size: a size such as 4k or 1m, at least one byte, at most 5 GiB (one PUT).
pub fn parse_obj_size(text: &str) -> Option<u64> {
    parse_size(text).filter(|&s| (1..=5 << 30).contains(&s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn mixes() {
        let m = OpMix::parse("put=30,get=60,delete=5,list=5").unwrap();
        assert_eq!(m.weight(S3Op::Get), 60);
        assert_eq!(m.to_string(), "put=30,get=60,delete=5,list=5");
        assert_eq!(OpMix::parse("GET").unwrap().0, vec![(S3Op::Get, 1)]);
        assert!(OpMix::parse("put=0,get=1").unwrap().reads());
        for bad in ["", "post", "get=x", "get=0", "get,get", "get=-1"] {
            assert!(OpMix::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn names() {
        assert!(valid_bucket("bench-01"));
        assert!(!valid_bucket("Bench") && !valid_bucket("ab") && !valid_bucket("-ab"));
        assert!(valid_prefix("stormark/x_1"));
        assert!(!valid_prefix("/x") && !valid_prefix("a/../b") && !valid_prefix("a b"));
        assert_eq!(parse_obj_size("4k"), Some(4096));
        assert_eq!(parse_obj_size("0"), None);
        assert_eq!(parse_obj_size("6g"), None);
    }

    proptest! {
        #[test]
        fn op_mix_never_panics(s in ".{0,40}") {
            let _ = OpMix::parse(&s);
            let _ = valid_bucket(&s);
            let _ = valid_prefix(&s);
        }
    }
}
