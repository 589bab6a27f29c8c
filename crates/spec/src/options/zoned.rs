//! The keys of fio's zoned block device mode (`zonemode=zbd`, stormark's `zoned`): the zone's
//! size (`zone_size`), the zones open at once, the resets a write load makes as it goes, and
//! whether reads may pass a zone's write pointer.

use super::JobOpts;
use crate::choices::{LoadKind, Rw};
use crate::units::{format_size, parse_bool, BOOL_FORM};
use crate::{SpecError, Zoned};

/// The accepted form of a share of fio's zone resets.
const RATIO_FORM: &str = "a ratio from 0 to 1, such as 0.7";

impl JobOpts {
    /// The zoned mode's keys; `false` for another key.
    pub(super) fn set_zoned_key(
        &mut self,
        canonical: &str,
        value: &str,
        bad: &dyn Fn(&str) -> SpecError,
    ) -> Result<bool, SpecError> {
        let ratio = || {
            value
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|r| (0.0..=1.0).contains(r))
                .ok_or_else(|| bad(RATIO_FORM))
        };
        match canonical {
            "zoned" => self.zoned = Some(parse_bool(value).ok_or_else(|| bad(BOOL_FORM))?),
            "read_beyond_wp" => {
                self.read_beyond_wp = Some(parse_bool(value).ok_or_else(|| bad(BOOL_FORM))?)
            }
            "max_open_zones" => {
                self.max_open_zones = Some(
                    value
                        .trim()
                        .parse::<u32>()
                        .ok()
                        .filter(|n| *n <= 1 << 20)
                        .ok_or_else(|| bad("a whole number of zones, 0 for no limit"))?,
                )
            }
            "zone_reset_threshold" => self.zone_reset_threshold = Some(ratio()?),
            "zone_reset_frequency" => self.zone_reset_frequency = Some(ratio()?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// fio's zoned mode: a file job's zones of `zone_size` (at least the largest block), its
    /// settings only with it, and none of what a zone's reset would break or its write
    /// pointer decides instead (resets beside verify, strided zones, fio's `read:-8k` and
    /// `randread:8` forms, several files a worker).
    pub(super) fn zoned(&self, rw: Rw, bs_max: u64) -> Result<Option<Zoned>, SpecError> {
        if self.zoned != Some(true) {
            let given = [
                ("max_open_zones", self.max_open_zones.map(|n| n.to_string())),
                (
                    "zone_reset_threshold",
                    self.zone_reset_threshold.map(|r| r.to_string()),
                ),
                (
                    "zone_reset_frequency",
                    self.zone_reset_frequency.map(|r| r.to_string()),
                ),
                ("read_beyond_wp", self.read_beyond_wp.map(|b| b.to_string())),
            ];
            return match given.into_iter().find(|(_, v)| v.is_some()) {
                None => Ok(None),
                Some((key, v)) => Err(SpecError::invalid(
                    key,
                    &v.unwrap_or_default(),
                    "with zoned=true (fio's zonemode=zbd), which it tunes",
                )),
            };
        }
        let Some(size) = self.zone_size else {
            return Err(SpecError::invalid(
                "zoned",
                "true",
                "with zone_size, the zone's size such as 256m (fio's zonesize)",
            ));
        };
        let why = if self.kind.unwrap_or_default() != LoadKind::File {
            Some("with a file job: zones are a file's or a device's")
        } else if bs_max > size {
            return Err(SpecError::invalid(
                "zone_size",
                &format_size(size),
                format!(
                    "with zoned=true, at least the largest block ({})",
                    format_size(bs_max)
                ),
            ));
        } else if let Some(s) = self.size.filter(|s| *s < size) {
            return Err(SpecError::invalid(
                "size",
                &format_size(s),
                format!("with zoned=true, at least one zone ({})", format_size(size)),
            ));
        } else if self.zone_range.is_some() || self.zone_skip.is_some() {
            Some("without zone_range or zone_skip: those are fio's strided zones")
        } else if (self.verify == Some(true) || self.verify_only == Some(true))
            && (self.zone_reset_frequency.unwrap_or(0.0) > 0.0 || rw.trims())
        {
            Some("with --verify, no zone_reset_frequency or trims: a zone's reset drops the blocks the check reads")
        } else if rw == Rw::TrimWrite
            || self.rand_run.unwrap_or(1) > 1
            || self.seq_add.unwrap_or(0) != 0
        {
            Some("with read, write, trim, their random and mixed forms: a zone's write pointer decides where writes go")
        } else if self.files.unwrap_or(1) > 1 {
            Some("with one file a worker (--files 1)")
        } else if self.sprandom == Some(true) || self.fill_device == Some(true) {
            Some("without sprandom or fill_device, whose offsets are their own")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(SpecError::invalid("zoned", "true", why));
        }
        Ok(Some(Zoned {
            size,
            max_open: self.max_open_zones.unwrap_or(0),
            reset_threshold: self.zone_reset_threshold.unwrap_or(1.0),
            reset_frequency: self.zone_reset_frequency.unwrap_or(0.0),
            read_beyond_wp: self.read_beyond_wp.unwrap_or(false),
        }))
    }
}
