//! The keys of what writes carry and how they are made durable: patterns, zeros, syncs,
//! compression and deduplication (fio's percentages among them).

use super::JobOpts;
use crate::choices::SyncMode;
use crate::data;
use crate::units::{every, parse_bool, parse_size, BOOL_FORM, EVERY_FORM, SIZE_FORM};
use crate::SpecError;

impl JobOpts {
    /// The keys of what writes carry and how they are made durable; `false` for another key.
    pub(super) fn set_data_key(
        &mut self,
        canonical: &str,
        value: &str,
        bad: &dyn Fn(&str) -> SpecError,
    ) -> Result<bool, SpecError> {
        match canonical {
            "buffer_pattern" => {
                self.buffer_pattern =
                    Some(crate::FillPattern::parse(value).ok_or_else(|| bad(data::PATTERN_FORM))?)
            }
            "zero_buffers" => {
                self.zero_buffers = Some(parse_bool(value).ok_or_else(|| bad(BOOL_FORM))?)
            }
            "sync" => {
                self.sync = Some(
                    SyncMode::parse(value)
                        .ok_or_else(|| bad("none, dsync or sync (fio's sync=1)"))?,
                )
            }
            "fsync" => self.fsync = Some(every(value).ok_or_else(|| bad(EVERY_FORM))?),
            "fdatasync" => self.fdatasync = Some(every(value).ok_or_else(|| bad(EVERY_FORM))?),
            "end_fsync" => self.end_fsync = Some(parse_bool(value).ok_or_else(|| bad(BOOL_FORM))?),
            "fadvise_hint" => {
                self.fadvise_hint = Some(parse_bool(value).ok_or_else(|| bad(BOOL_FORM))?)
            }
            "compress_ratio" => {
                self.compress_ratio = Some(
                    data::parse_ratio(value, data::MAX_COMPRESS)
                        .ok_or_else(|| bad(data::COMPRESS_FORM))?,
                )
            }
            "buffer_compress_percentage" => {
                self.compress_ratio = Some(
                    data::percent_ratio(value, data::MAX_COMPRESS)
                        .ok_or_else(|| bad(data::COMPRESS_PERCENT_FORM))?,
                )
            }
            "dedup_ratio" => {
                self.dedup_ratio = Some(
                    data::parse_ratio(value, data::MAX_DEDUP)
                        .ok_or_else(|| bad(data::DEDUP_FORM))?,
                )
            }
            "dedupe_percentage" => {
                self.dedup_ratio = Some(
                    data::percent_ratio(value, data::MAX_DEDUP)
                        .ok_or_else(|| bad(data::DEDUP_PERCENT_FORM))?,
                )
            }
            "dedup_working_set" => {
                self.dedup_working_set = Some(
                    crate::units::parse_percent(value)
                        .filter(|p| *p > 0)
                        .ok_or_else(|| {
                            bad("a percentage of the job's bytes from 1 to 100, such as 5")
                        })?,
                )
            }
            "atomic" => self.atomic = Some(parse_bool(value).ok_or_else(|| bad(BOOL_FORM))?),
            "dedup_global" => {
                self.dedup_global = Some(parse_bool(value).ok_or_else(|| bad(BOOL_FORM))?)
            }
            "dedup_block" => {
                self.dedup_block = Some(parse_size(value).ok_or_else(|| bad(SIZE_FORM))?)
            }
            // Every write's bytes already differ (a new region, new stamps): fio's
            // refill_buffers asks for what stormark always does, at no cost.
            "refill_buffers" => {
                parse_bool(value).ok_or_else(|| bad(BOOL_FORM))?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}
