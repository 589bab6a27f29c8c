//! The spellings of a job key: fio's and stormark's names for one option, and how an error
//! names the option as the user wrote it.

use super::{Source, JOB_KEYS};

/// The job key an option name stands for, in any of the spellings fio or stormark accept
/// (`blocksize`, `ramp_time`, `--io-size`, ...); `None` for an unknown name.
pub fn canonical_key(key: &str) -> Option<&'static str> {
    let k = key
        .trim()
        .trim_start_matches("--")
        .replace('-', "_")
        .to_ascii_lowercase();
    let alias = match k.as_str() {
        "readwrite" => "rw",
        "blocksize" | "bsrange" | "blocksize_range" => "bs",
        "blockalign" | "ba" => "bs_align",
        "numjobs" => "jobs",
        "nrfiles" => "files",
        "filesize" => "size",
        "runtime" => "time",
        "io_size" | "io_limit" => "io_total",
        "ioengine" => "engine",
        "ramp_time" => "ramp",
        "iodepth_batch_submit" => "iodepth_batch",
        "iodepth_batch_complete_max" => "iodepth_batch_complete",
        "percentage_random" => "random_pct",
        "dedupe_working_set_percentage" => "dedup_working_set",
        "dedupe_global" => "dedup_global",
        "fill_fs" => "fill_device",
        "zonesize" => "zone_size",
        "zonerange" => "zone_range",
        "zoneskip" => "zone_skip",
        "zbd_max_open_zones" => "max_open_zones",
        "steadystate" | "ss" => "steady_state",
        "ratemin" => "rate_min",
        "concurrency" => "jobs",
        "rate_ops" => "rate_iops",
        "object_size" | "objsize" => "obj_size",
        "opmix" => "op_mix",
        other => other,
    };
    JOB_KEYS.iter().copied().find(|k| *k == alias)
}

pub(super) fn label(key: &str, source: Source<'_>) -> String {
    match source {
        Source::Flag => format!("--{}", key.trim_start_matches("--").replace('_', "-")),
        Source::Key(context) => format!("{key} in {context} ="),
    }
}
