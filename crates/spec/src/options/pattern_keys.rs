//! The keys of where and how a job's I/Os fall: the pattern (`rw` and fio's forms of it,
//! mixes, distributions, block sizes), the region of a file or device (`offset`), and the pace
//! of a worker (`thinktime`, `rate_process`, `loops`, `fadvise_hint`).

use std::time::Duration;

use super::JobOpts;
use crate::choices::{BlockSize, Rw};
use crate::units::{parse_duration, parse_percent, parse_size, PERCENT_FORM, SIZE_FORM};
use crate::SpecError;

impl JobOpts {
    /// The access pattern's keys (`rw`, mixes, distributions, block sizes); `false` for
    /// another key.
    pub(super) fn set_pattern_key(
        &mut self,
        canonical: &str,
        value: &str,
        bad: &dyn Fn(&str) -> SpecError,
    ) -> Result<bool, SpecError> {
        match canonical {
            "rw" => {
                // fio's `read:-8k`: a sequential pattern that moves on by that much more (or
                // back) after each I/O.
                let (pattern, add) = match value.split_once(':') {
                    Some((p, add)) => (p, Some(add)),
                    None => (value, None),
                };
                let rw = Rw::parse(pattern).ok_or_else(|| {
                    bad("one of read, write, randread, randwrite, rw, randrw, trim, randtrim, trimwrite, a sequential one with :SIZE after it (read:-8k)")
                })?;
                self.seq_add = None;
                self.rand_run = None;
                match add {
                    None => {}
                    // fio's `randread:N`: N I/Os from each random offset.
                    Some(n) if rw.is_random() => {
                        self.rand_run = Some(
                            n.trim()
                                .parse()
                                .ok()
                                .filter(|n| (1..=1 << 20).contains(n))
                                .ok_or_else(|| bad("a random pattern, then :N, the I/Os from each random offset (1 to 1048576), such as randread:8"))?,
                        );
                    }
                    Some(a) => {
                        let (neg, size) = match a.trim().strip_prefix('-') {
                            Some(s) => (true, s),
                            None => (false, a.trim().trim_start_matches('+')),
                        };
                        let n = parse_size(size)
                            .and_then(|n| i64::try_from(n).ok())
                            .filter(|n| *n <= 1 << 40)
                            .ok_or_else(|| {
                                bad("a sequential pattern, then :SIZE or :-SIZE, such as read:-8k")
                            })?;
                        self.seq_add = Some(if neg { -n } else { n });
                    }
                }
                self.rw = Some(rw);
            }
            "rwmixread" => {
                self.rwmixread = Some(parse_percent(value).ok_or_else(|| bad(PERCENT_FORM))?)
            }
            "random_pct" => {
                self.random_pct = Some(parse_percent(value).ok_or_else(|| bad(PERCENT_FORM))?)
            }
            "random_map" => {
                self.random_map = Some(
                    crate::units::parse_bool(value)
                        .ok_or_else(|| bad("true (each block once per pass, fio's default) or false (with repeats, fio's norandommap)"))?,
                )
            }
            "sprandom" => {
                self.sprandom =
                    Some(crate::units::parse_bool(value).ok_or_else(|| bad(crate::units::BOOL_FORM))?)
            }
            "spr_op" => {
                self.spr_op = Some(
                    value
                        .trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|r| *r > 0.0 && *r < 1.0)
                        .ok_or_else(|| {
                            bad("an over-provisioning ratio between 0 and 1, such as 0.15 (15%)")
                        })?,
                )
            }
            "spr_num_regions" => {
                self.spr_num_regions = Some(
                    value
                        .trim()
                        .parse::<u32>()
                        .ok()
                        .filter(|n| (1..=1_000_000).contains(n))
                        .ok_or_else(|| bad("a whole number of regions from 1 to 1000000, such as 100"))?,
                )
            }
            "spr_cs" => {
                self.spr_cs = Some(
                    parse_size(value)
                        .filter(|n| *n <= 1 << 50)
                        .ok_or_else(|| bad("the drive's cache size, such as 256m (0: none)"))?,
                )
            }
            "zone_size" | "zone_range" | "zone_skip" => {
                let n = parse_size(value)
                    .filter(|n| *n <= 1 << 50 && (*n > 0 || canonical == "zone_skip"))
                    .ok_or_else(|| bad("a size such as 256m (zone_skip may be 0)"))?;
                match canonical {
                    "zone_size" => self.zone_size = Some(n),
                    "zone_range" => self.zone_range = Some(n),
                    _ => self.zone_skip = Some(n),
                }
            }
            "random_sequence_stride" => {
                self.sequence_stride = Some(match value.trim() {
                    "0" => false,
                    "1" => true,
                    _ => return Err(bad("0 (the same blocks each round) or 1 (each round moved on by the sequence's length)")),
                })
            }
            "random_distribution" => {
                self.distribution = Some(
                    crate::Distribution::parse(value)
                        .ok_or_else(|| bad(crate::Distribution::FORM))?,
                )
            }
            "bs" => {
                self.bs = Some(BlockSize::parse(value).ok_or_else(|| {
                    bad("a size such as 4k, 64KiB or 1m, or a range such as 4k-64k")
                })?)
            }
            "bs_align" => self.bs_align = Some(parse_size(value).ok_or_else(|| bad(SIZE_FORM))?),
            "bssplit" => {
                self.bs_split =
                    Some(crate::BsSplit::parse(value).ok_or_else(|| bad(crate::BsSplit::FORM))?)
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The keys of a job's region of a file or device and of a worker's pace; `false` for
    /// another key.
    pub(super) fn set_region_key(
        &mut self,
        canonical: &str,
        value: &str,
        bad: &dyn Fn(&str) -> SpecError,
        count: &dyn Fn(u32) -> Result<u32, SpecError>,
    ) -> Result<bool, SpecError> {
        match canonical {
            "offset" if value.trim_end().ends_with('%') => {
                self.offset_pct = Some(share(value).ok_or_else(|| bad(SHARE_FORM))?)
            }
            "offset" | "offset_increment" => {
                let n = parse_size(value)
                    .filter(|n| *n <= 1 << 60)
                    .ok_or_else(|| bad("a size, the bytes into the file or device, such as 1g"))?;
                if canonical == "offset" {
                    self.offset = Some(n);
                } else {
                    self.offset_increment = Some(n);
                }
            }
            "filename" => {
                self.filename = Some(
                    file_name(value)
                        .ok_or_else(|| bad(FILE_NAME_FORM))?
                        .to_string(),
                )
            }
            "fresh" => {
                self.fresh = Some(
                    crate::units::parse_bool(value).ok_or_else(|| bad(crate::units::BOOL_FORM))?,
                )
            }
            "file_shift" => {
                self.file_shift = Some(
                    value
                        .trim()
                        .parse::<u32>()
                        .ok()
                        .filter(|n| *n <= 1 << 20)
                        .ok_or_else(|| {
                            bad("a whole number of workers from 0 to 1048576, such as 1")
                        })?,
                )
            }
            "thinktime" | "thinktime_spin" => {
                // fio's: microseconds, or with a unit (10ms).
                let d = match value.trim().parse::<u64>() {
                    Ok(us) => Some(Duration::from_micros(us)),
                    Err(_) => parse_duration(value),
                }
                .filter(|d| d.as_secs() <= 3600)
                .ok_or_else(|| bad("microseconds, or a duration with its unit, of at most 1h, such as 500 or 2ms"))?;
                if canonical == "thinktime" {
                    self.thinktime = Some(d);
                } else {
                    self.thinktime_spin = Some(d);
                }
            }
            "thinktime_blocks" => self.thinktime_blocks = Some(count(1 << 30)?),
            "loops" => self.loops = Some(count(1 << 30)?),
            "rate_process" => {
                self.rate_poisson = Some(match value.trim() {
                    "linear" => false,
                    "poisson" => true,
                    _ => return Err(bad("linear or poisson")),
                })
            }
            "rw_sequencer" => {
                self.rand_run_same = Some(match value.trim() {
                    "sequential" => false,
                    "identical" => true,
                    _ => return Err(bad("sequential or identical")),
                })
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// A share of a file or device as fio writes it: `95%`, 0 to 100.
pub(super) fn share(value: &str) -> Option<u8> {
    value
        .trim()
        .strip_suffix('%')?
        .trim()
        .parse()
        .ok()
        .filter(|p| *p <= 100)
}

/// The accepted form of a share.
pub(super) const SHARE_FORM: &str =
    "a size such as 1g, or a share of the file or device from 0% to 100%";

/// The accepted form of a job's `filename`.
pub(crate) const FILE_NAME_FORM: &str =
    "a file name of letters, digits, '-', '_' and '.' (at most 128, not starting with '.'), made in the run directory, such as data.1";

/// A job's own file in the run directory: a plain name, never a path, a link's name or one
/// of stormark's own (`j0.w0.f0`, `stormark-*`).
pub(crate) fn file_name(value: &str) -> Option<&str> {
    let v = value.trim();
    let plain = !v.is_empty()
        && v.len() <= 128
        && !v.starts_with('.')
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    let ours = v.starts_with("stormark") || v.ends_with(".verify") || {
        // j{k}.w{w}.f{f}
        let parts: Vec<&str> = v.split('.').collect();
        parts.len() == 3
            && ["j", "w", "f"].iter().zip(&parts).all(|(p, s)| {
                s.strip_prefix(p)
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            })
    };
    (plain && !ours).then_some(v)
}
