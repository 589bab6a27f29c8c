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

/// How object sizes are drawn from a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SizeDist {
    /// Every size of the range equally likely.
    #[default]
    Uniform,
    /// Every order of magnitude equally likely (as many objects of 1-10 KiB as of 1-10 MiB):
    /// closer to what object stores hold.
    LogUniform,
}

impl SizeDist {
    /// The name as typed.
    pub fn name(self) -> &'static str {
        match self {
            SizeDist::Uniform => "uniform",
            SizeDist::LogUniform => "log-uniform",
        }
    }

    /// Parses `uniform` or `log-uniform`.
    pub fn parse(s: &str) -> Option<SizeDist> {
        match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "uniform" => Some(SizeDist::Uniform),
            "log-uniform" | "loguniform" => Some(SizeDist::LogUniform),
            _ => None,
        }
    }
}

/// Object sizes: one size, or a range drawn from a distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjSize {
    /// The smallest.
    pub min: u64,
    /// The largest (= `min` for one size).
    pub max: u64,
    /// How sizes between are drawn.
    pub dist: SizeDist,
}

impl ObjSize {
    /// One size.
    pub const fn fixed(size: u64) -> ObjSize {
        ObjSize {
            min: size,
            max: size,
            dist: SizeDist::Uniform,
        }
    }

    /// A size drawn with the random 64 bits `r`.
    #[inline]
    pub fn draw(&self, r: u64) -> u64 {
        if self.min >= self.max {
            return self.min;
        }
        match self.dist {
            SizeDist::Uniform => self.min + r % (self.max - self.min + 1),
            SizeDist::LogUniform => {
                let u = (r >> 11) as f64 / (1u64 << 53) as f64;
                let (lo, hi) = ((self.min as f64).ln(), (self.max as f64).ln());
                ((lo + u * (hi - lo)).exp() as u64).clamp(self.min, self.max)
            }
        }
    }

    /// The size of prepared object `i` (the same on every call, so a reader knows it).
    pub fn of_object(&self, i: u64) -> u64 {
        let mut x = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        self.draw(x ^ (x >> 31))
    }
}

impl fmt::Display for ObjSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.min == self.max {
            f.write_str(&format_size(self.min))
        } else {
            write!(f, "{}-{}", format_size(self.min), format_size(self.max))
        }
    }
}

/// An S3 job's own options, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct S3Job {
    /// `http://host:port` of the service.
    pub endpoint: String,
    /// The bucket.
    pub bucket: String,
    /// Buckets the load spreads over: `bucket` itself when 1, else `bucket-0` ...
    /// `bucket-(N-1)`.
    pub buckets: u32,
    /// The signing region.
    pub region: String,
    /// How requests name the bucket.
    pub addressing: Addressing,
    /// Keys this run writes start with `<prefix>/<run id>/`.
    pub prefix: String,
    /// The operations and their weights.
    pub mix: OpMix,
    /// Bytes per object written (and of the objects prepared for reads).
    pub obj_size: ObjSize,
    /// GETs read a range of this many bytes at a random place instead of whole objects.
    pub range: Option<u64>,
    /// Objects larger than `.0` are uploaded in parts of `.1` bytes (multipart upload).
    pub multipart: Option<(u64, u64)>,
    /// GETs check every byte against what was written.
    pub verify: bool,
    /// Objects written before the measured phase for GET and HEAD to read.
    pub objects: u32,
    /// When object sizes are swept (`--sweep obj-size`): the objects for reads are prepared
    /// at each of these sizes, under a prefix of their own, and a phase of one size reads
    /// those. Empty otherwise.
    pub prepare_sizes: Vec<u64>,
    /// Operations after which the job stops (over all its workers).
    pub ops: Option<u64>,
}

impl S3Job {
    /// The names of the buckets the load uses.
    pub fn bucket_names(&self) -> Vec<String> {
        if self.buckets <= 1 {
            vec![self.bucket.clone()]
        } else {
            (0..self.buckets)
                .map(|i| format!("{}-{i}", self.bucket))
                .collect()
        }
    }

    /// The options as job key/value pairs (for results and re-runs).
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("endpoint", self.endpoint.clone()),
            ("bucket", self.bucket.clone()),
            ("region", self.region.clone()),
            ("addressing", self.addressing.name().to_string()),
            ("prefix", self.prefix.clone()),
            ("op_mix", self.mix.to_string()),
            ("obj_size", self.obj_size.to_string()),
            ("size_dist", self.obj_size.dist.name().to_string()),
            ("objects", self.objects.to_string()),
        ]
        .into_iter()
        .chain((self.buckets > 1).then(|| ("buckets", self.buckets.to_string())))
        .chain(self.ops.map(|n| ("ops", n.to_string())))
        .chain((!self.prepare_sizes.is_empty()).then(|| {
            let sizes: Vec<String> = self.prepare_sizes.iter().map(|&s| format_size(s)).collect();
            ("prepare_sizes", sizes.join(","))
        }))
        .chain(self.range.map(|r| ("get_range", format_size(r))))
        .chain(self.verify.then(|| ("verify", "true".to_string())))
        .chain(self.multipart.into_iter().flat_map(|(t, p)| {
            [
                ("multipart_threshold", format_size(t)),
                ("part_size", format_size(p)),
            ]
        }))
        .collect()
    }
}

/// How a request names its bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Addressing {
    /// Virtual-hosted for endpoints under `amazonaws.com` (AWS refuses path-style for buckets
    /// made since September 2020) when the bucket name has no dot; path-style otherwise.
    #[default]
    Auto,
    /// `http://host/bucket/key`: every S3-compatible service accepts it.
    Path,
    /// `http://bucket.host/key`: the service must know its domain (MinIO's `MINIO_DOMAIN`,
    /// Ceph RGW's `rgw_dns_name`).
    Virtual,
}

impl Addressing {
    /// Parses `auto`, `path` or `virtual` (`virtual-hosted`).
    pub fn parse(text: &str) -> Option<Addressing> {
        match text.trim().to_ascii_lowercase().as_str() {
            "auto" => Some(Addressing::Auto),
            "path" | "path-style" => Some(Addressing::Path),
            "virtual" | "virtual-hosted" | "vhost" => Some(Addressing::Virtual),
            _ => None,
        }
    }

    /// The name in job files and results.
    pub fn name(self) -> &'static str {
        match self {
            Addressing::Auto => "auto",
            Addressing::Path => "path",
            Addressing::Virtual => "virtual",
        }
    }

    /// Whether requests to `bucket` at `endpoint` (`http://host:port`) are virtual-hosted.
    pub fn virtual_hosted(self, endpoint: &str, bucket: &str) -> bool {
        match self {
            Addressing::Path => false,
            Addressing::Virtual => true,
            Addressing::Auto => {
                let host = endpoint
                    .split_once("://")
                    .map_or(endpoint, |(_, rest)| rest)
                    .split(['/', ':'])
                    .next()
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                host.ends_with(".amazonaws.com") && !bucket.contains('.')
            }
        }
    }
}

/// Whether `name` is a bucket name S3 accepts (3-63 of a-z, 0-9, '-', '.', starting and
/// ending with a letter or digit).
pub fn valid_bucket(name: &str) -> bool {
    // S3's rules: no two periods together, no period beside a hyphen, not an IP address.
    let looks_like_ip = name.split('.').count() == 4
        && name
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    !looks_like_ip
        && !name.contains("..")
        && !name.contains(".-")
        && !name.contains("-.")
        && (3..=63).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && name
            .bytes()
            .next()
            .zip(name.bytes().last())
            .is_some_and(|(a, z)| a.is_ascii_alphanumeric() && z.is_ascii_alphanumeric())
}

/// The accepted form of an S3 endpoint.
pub const ENDPOINT_FORM: &str =
    "http://host:port or https://host:port (no query or fragment), such as http://127.0.0.1:9000";

/// An S3 endpoint as stormark connects to it: `http` or `https` (in any case), a host, a port
/// from 1 to 65535 when given, a path when given, no query or fragment; `None` otherwise.
pub fn parse_endpoint(text: &str) -> Option<String> {
    let t = text.trim();
    if t.len() > 300 || t.contains(['?', '#', ' ', '@']) {
        return None;
    }
    let (scheme, rest) = t.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let host = if let Some(v6) = authority.strip_prefix('[') {
        let (inside, after) = v6.split_once(']')?;
        if inside.is_empty() {
            return None;
        }
        match after.strip_prefix(':') {
            Some(port) => port.parse::<u16>().ok().filter(|p| *p > 0).map(|_| ())?,
            None if after.is_empty() => {}
            None => return None,
        }
        inside
    } else {
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        };
        if let Some(p) = port {
            p.parse::<u16>().ok().filter(|p| *p > 0)?;
        }
        host
    };
    if host.is_empty()
        || !host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.:_".contains(&b))
    {
        return None;
    }
    Some(format!("{scheme}://{authority}{path}"))
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

/// An object size: a size such as 4k or 1m, at least one byte, at most 5 GiB (one PUT); or a
/// range `1k-100m` of such sizes, low before high.
pub fn parse_obj_size(text: &str) -> Option<(u64, u64)> {
    let one = |t: &str| parse_size(t).filter(|&s| (1..=5 << 30).contains(&s));
    match text.split_once('-') {
        Some((lo, hi)) => Some((one(lo)?, one(hi)?)).filter(|(lo, hi)| lo <= hi),
        None => one(text).map(|s| (s, s)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addressing_auto_is_virtual_on_aws_only() {
        let auto = Addressing::Auto;
        assert!(auto.virtual_hosted("https://s3.eu-west-1.amazonaws.com", "bench"));
        assert!(auto.virtual_hosted("s3.amazonaws.com:443", "bench"));
        // A dotted bucket breaks the certificate's wildcard: path-style.
        assert!(!auto.virtual_hosted("https://s3.amazonaws.com", "my.bench"));
        assert!(!auto.virtual_hosted("http://minio1:9000", "bench"));
        assert!(Addressing::Virtual.virtual_hosted("http://minio1:9000", "bench"));
        assert!(!Addressing::Path.virtual_hosted("https://s3.amazonaws.com", "bench"));
        for (text, a) in [
            ("auto", Addressing::Auto),
            ("path", Addressing::Path),
            ("virtual", Addressing::Virtual),
        ] {
            assert_eq!(Addressing::parse(text), Some(a));
            assert_eq!(Addressing::parse(a.name()), Some(a));
        }
        assert_eq!(Addressing::parse("dns"), None);
    }
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
        assert_eq!(parse_obj_size("4k"), Some((4096, 4096)));
        assert_eq!(parse_obj_size("1k-1m"), Some((1024, 1 << 20)));
        assert_eq!(parse_obj_size("0"), None);
        assert_eq!(parse_obj_size("6g"), None);
        assert_eq!(parse_obj_size("1m-1k"), None);
    }

    #[test]
    fn sizes_stay_in_range_and_log_uniform_favours_small() {
        let u = ObjSize {
            min: 1024,
            max: 100 << 20,
            dist: SizeDist::Uniform,
        };
        let l = ObjSize {
            dist: SizeDist::LogUniform,
            ..u
        };
        let (mut small_u, mut small_l) = (0, 0);
        for i in 0..10_000u64 {
            let (a, b) = (u.of_object(i), l.of_object(i));
            assert!((u.min..=u.max).contains(&a) && (l.min..=l.max).contains(&b));
            small_u += usize::from(a < 1 << 20);
            small_l += usize::from(b < 1 << 20);
        }
        // Below 1 MiB: 1% of a uniform draw, two thirds of a log-uniform one (3 of 4.6 decades).
        assert!(small_u < 300, "{small_u}");
        assert!((5500..7500).contains(&small_l), "{small_l}");
        assert_eq!(ObjSize::fixed(4096).of_object(7), 4096);
        assert_eq!(l.to_string(), "1k-100m");
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

#[cfg(test)]
mod endpoint_tests {
    use super::{parse_endpoint, valid_bucket};

    #[test]
    fn endpoints_and_buckets_as_s3_takes_them() {
        assert_eq!(
            parse_endpoint("HTTP://127.0.0.1:9000").as_deref(),
            Some("http://127.0.0.1:9000")
        );
        assert_eq!(
            parse_endpoint("https://s3.example.com").as_deref(),
            Some("https://s3.example.com")
        );
        assert_eq!(
            parse_endpoint("http://[::1]:9000/").as_deref(),
            Some("http://[::1]:9000/")
        );
        for bad in [
            "http://127.0.0.1:99999",
            "http://127.0.0.1:0",
            "http://127.0.0.1:9000?x=1",
            "http://127.0.0.1:9000/#f",
            "ftp://host",
            "http://",
            "http://user@host",
            "127.0.0.1:9000",
        ] {
            assert_eq!(parse_endpoint(bad), None, "{bad}");
        }
        for bad in ["a..b", "192.168.0.1", "a.-b", "a-.b", "ab", "Ab-c", "-abc"] {
            assert!(!valid_bucket(bad), "{bad}");
        }
        for good in ["bench", "my.bucket-1", "192.168.0.1x"] {
            assert!(valid_bucket(good), "{good}");
        }
    }
}
