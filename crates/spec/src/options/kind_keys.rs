//! The keys of S3, net and meta jobs: each parsed into its field, with the accepted form in
//! the error.

use crate::meta::{parse_meta_ops, META_OPS_FORM};
use crate::net::{
    parse_bitrate, parse_servers, NetMode, NetServers, BITRATE_FORM, NET_MODE_FORM, PROTOCOL_FORM,
    SERVER_FORM,
};
use crate::s3::{
    parse_endpoint, parse_obj_size, valid_bucket, valid_prefix, Addressing, OpMix, SizeDist,
    ENDPOINT_FORM, OP_MIX_FORM,
};
use crate::units::{parse_bool, parse_percent, parse_size, BOOL_FORM, SIZE_FORM};
use crate::SpecError;

use super::{JobOpts, NET_DEFAULT_PORT};

impl JobOpts {
    /// Sets `canonical` if it is a key of S3, net or meta jobs; `Ok(false)` for any other.
    pub(super) fn set_kind_key(
        &mut self,
        canonical: &str,
        value: &str,
        bad: &dyn Fn(&str) -> SpecError,
        count: &dyn Fn(u32) -> Result<u32, SpecError>,
    ) -> Result<bool, SpecError> {
        if self.set_net_key(canonical, value, bad)?
            || self.set_meta_key(canonical, value, bad, count)?
        {
            return Ok(true);
        }
        match canonical {
            "endpoint" => {
                // Said without what may be a secret (`user:secret@`, `?secret=`).
                self.endpoint =
                    Some(
                        parse_endpoint(value).ok_or_else(|| match bad(ENDPOINT_FORM) {
                            SpecError::Invalid {
                                option, expected, ..
                            } => SpecError::Invalid {
                                option,
                                value: crate::shown_url(value),
                                expected,
                            },
                            other => other,
                        })?,
                    )
            }
            "bucket" => {
                if !valid_bucket(value) {
                    return Err(bad("a bucket name: 3 to 63 of a-z, 0-9, '-' and '.', starting and ending with a letter or digit, no '..', not an IP address"));
                }
                self.bucket = Some(value.to_string())
            }
            "region" => {
                let ok = (1..=64).contains(&value.len())
                    && value
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
                if !ok {
                    return Err(bad("a region such as us-east-1"));
                }
                self.region = Some(value.to_string())
            }
            "buckets" => self.buckets = Some(count(1000)?),
            "addressing" => {
                self.addressing =
                    Some(Addressing::parse(value).ok_or_else(|| bad("auto, path or virtual"))?)
            }
            "prefix" => {
                if !valid_prefix(value) {
                    return Err(bad(
                        "a key prefix of letters, digits and -_./ (at most 200, no '..', not starting with /)",
                    ));
                }
                self.prefix = Some(value.trim_end_matches('/').to_string())
            }
            "op_mix" => self.op_mix = Some(OpMix::parse(value).ok_or_else(|| bad(OP_MIX_FORM))?),
            "obj_size" => {
                self.obj_size = Some(parse_obj_size(value).ok_or_else(|| {
                    bad("a size from 1 byte to 5g such as 4k or 1m, or a range such as 1k-100m")
                })?)
            }
            "size_dist" => {
                self.size_dist =
                    Some(SizeDist::parse(value).ok_or_else(|| bad("uniform or log-uniform"))?)
            }
            "verify" => self.verify = Some(parse_bool(value).ok_or_else(|| bad(BOOL_FORM))?),
            "verify_only" => {
                self.verify_only = Some(parse_bool(value).ok_or_else(|| bad(BOOL_FORM))?)
            }
            "trim_percentage" => {
                self.trim_percentage =
                    Some(parse_percent(value).ok_or_else(|| bad("a percentage from 0 to 100"))?)
            }
            "trim_verify_zero" => {
                self.trim_verify_zero = Some(parse_bool(value).ok_or_else(|| bad(BOOL_FORM))?)
            }
            "verify_after" => {
                self.verify_after = Some(parse_bool(value).ok_or_else(|| bad(BOOL_FORM))?)
            }
            "verify_interval" => {
                self.verify_interval = Some(
                    parse_size(value)
                        .filter(|n| *n >= 512 && n.is_multiple_of(512) && *n <= 1 << 30)
                        .ok_or_else(|| bad("a multiple of 512 bytes, such as 512 or 4k"))?,
                )
            }
            "fill_device" => {
                self.fill_device = Some(parse_bool(value).ok_or_else(|| bad(BOOL_FORM))?)
            }
            "multipart_threshold" => {
                self.multipart_threshold = Some(parse_size(value).ok_or_else(|| bad(SIZE_FORM))?)
            }
            "part_size" => {
                self.part_size = Some(
                    parse_size(value)
                        .filter(|s| (5 << 20..=5 << 30).contains(s))
                        .ok_or_else(|| bad("a size from 5m to 5g (S3's limits for a part)"))?,
                )
            }
            "get_range" => {
                self.get_range = Some(
                    parse_size(value)
                        .filter(|&s| s > 0)
                        .ok_or_else(|| bad("a size above zero, such as 64k"))?,
                )
            }
            "objects" => self.objects = Some(count(10_000_000)?),
            "prepare_sizes" => {
                let sizes: Option<Vec<u64>> = value
                    .split(',')
                    .map(|v| parse_size(v.trim()).filter(|s| (1..=5 << 30).contains(s)))
                    .collect();
                self.prepare_sizes = Some(
                    sizes
                        .filter(|v| (1..=64).contains(&v.len()))
                        .ok_or_else(|| bad("1 to 64 sizes from 1 byte to 5g, such as 4k,64k,1m"))?,
                )
            }
            "ops" => {
                self.ops = Some(
                    value
                        .trim()
                        .parse::<u64>()
                        .ok()
                        .filter(|n| (1..=1_000_000_000_000).contains(n))
                        .ok_or_else(|| bad("a whole number of operations from 1"))?,
                )
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// A net job's keys; `false` for another key.
    fn set_net_key(
        &mut self,
        canonical: &str,
        value: &str,
        bad: &dyn Fn(&str) -> SpecError,
    ) -> Result<bool, SpecError> {
        match canonical {
            "server" if value.trim() == "agents" => self.server = Some(NetServers::Agents),
            "server" => {
                self.server = Some(NetServers::Listed(
                    parse_servers(value, NET_DEFAULT_PORT).ok_or_else(|| bad(SERVER_FORM))?,
                ))
            }
            "path_mtu" => self.path_mtu = Some(parse_bool(value).ok_or_else(|| bad(BOOL_FORM))?),
            "mode" => self.mode = Some(NetMode::parse(value).ok_or_else(|| bad(NET_MODE_FORM))?),
            "msg_size" => {
                self.msg_size = Some(
                    parse_size(value)
                        .filter(|&n| (1..=16 << 20).contains(&n))
                        .ok_or_else(|| bad("a size from 1 byte to 16m, such as 128k"))?
                        as u32,
                )
            }
            "bitrate" => {
                self.bitrate = Some(parse_bitrate(value).ok_or_else(|| bad(BITRATE_FORM))?)
            }
            "protocol" => {
                self.udp = Some(match value.trim().to_ascii_lowercase().as_str() {
                    "tcp" => false,
                    "udp" => true,
                    _ => return Err(bad(PROTOCOL_FORM)),
                })
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// A meta job's keys; `false` for another key.
    fn set_meta_key(
        &mut self,
        canonical: &str,
        value: &str,
        bad: &dyn Fn(&str) -> SpecError,
        count: &dyn Fn(u32) -> Result<u32, SpecError>,
    ) -> Result<bool, SpecError> {
        match canonical {
            "dirs" => self.dirs = Some(count(1_000_000)?),
            "depth" => {
                self.depth = Some(
                    value
                        .trim()
                        .parse::<u32>()
                        .ok()
                        .filter(|d| *d <= 20)
                        .ok_or_else(|| bad("a whole number from 0 to 20"))?,
                )
            }
            "branch" => self.branch = Some(count(1_000_000)?),
            "file_size" => {
                self.file_size = Some(
                    parse_size(value)
                        .filter(|s| *s <= 1 << 30)
                        .ok_or_else(|| bad("a size from 0 to 1g, such as 0 or 4k"))?,
                )
            }
            "meta_ops" => {
                self.meta_ops = Some(parse_meta_ops(value).ok_or_else(|| bad(META_OPS_FORM))?)
            }
            "shared" => self.shared = Some(parse_bool(value).ok_or_else(|| bad(BOOL_FORM))?),
            "wear_out" => self.wear_out = Some(parse_bool(value).ok_or_else(|| bad(BOOL_FORM))?),
            "leaf_only" => self.leaf_only = Some(parse_bool(value).ok_or_else(|| bad(BOOL_FORM))?),
            "sync_phases" => {
                self.sync_phases = Some(parse_bool(value).ok_or_else(|| bad(BOOL_FORM))?)
            }
            "random_order" => {
                self.random_order = Some(parse_bool(value).ok_or_else(|| bad(BOOL_FORM))?)
            }
            "verify_read" => {
                self.verify_read = Some(parse_bool(value).ok_or_else(|| bad(BOOL_FORM))?)
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}
