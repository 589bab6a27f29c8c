//! The spellings of a job key: fio's and stormark's names for one option, and how an error
//! names the option as the user wrote it.

use super::{Source, JOB_KEYS};

/// fio's (and a few other tools') names for a job key.
const ALIASES: &[(&str, &str)] = &[
    ("readwrite", "rw"),
    ("blocksize", "bs"),
    ("bsrange", "bs"),
    ("blocksize_range", "bs"),
    ("blockalign", "bs_align"),
    ("ba", "bs_align"),
    ("numjobs", "jobs"),
    ("nrfiles", "files"),
    ("filesize", "size"),
    ("runtime", "time"),
    ("io_size", "io_total"),
    // fio reads the files into the page cache before the load; stormark also locks them there
    // until the run's end (docs/fio-compat.md, "Approximated").
    ("pre_read", "pin_cache"),
    ("io_limit", "io_total"),
    ("ioengine", "engine"),
    ("ramp_time", "ramp"),
    ("iodepth_batch_submit", "iodepth_batch"),
    ("iodepth_batch_complete_min", "iodepth_batch_complete"),
    ("percentage_random", "random_pct"),
    ("dedupe_working_set_percentage", "dedup_working_set"),
    ("dedupe_global", "dedup_global"),
    ("fill_fs", "fill_device"),
    ("zonesize", "zone_size"),
    ("zonerange", "zone_range"),
    ("zoneskip", "zone_skip"),
    ("zbd_max_open_zones", "max_open_zones"),
    ("steadystate", "steady_state"),
    ("ss", "steady_state"),
    ("ratemin", "rate_min"),
    ("concurrency", "jobs"),
    ("rate_ops", "rate_iops"),
    ("object_size", "obj_size"),
    ("objsize", "obj_size"),
    ("opmix", "op_mix"),
];

/// The job key an option name stands for, in any of the spellings fio or stormark accept
/// (`blocksize`, `ramp_time`, `--io-size`, ...); `None` for an unknown name.
pub fn canonical_key(key: &str) -> Option<&'static str> {
    let k = key
        .trim()
        .trim_start_matches("--")
        .replace('-', "_")
        .to_ascii_lowercase();
    let alias = ALIASES
        .iter()
        .find(|(name, _)| *name == k)
        .map_or(k.as_str(), |(_, key)| key);
    JOB_KEYS.iter().copied().find(|k| *k == alias)
}

pub(super) fn label(key: &str, source: Source<'_>) -> String {
    match source {
        Source::Flag => format!("--{}", key.trim_start_matches("--").replace('_', "-")),
        Source::Key(context) => format!("{key} in {context} ="),
    }
}

/// The known key (or fio's name for one) nearest to an unknown `key`, when one is near enough
/// to be the one meant: a typo (`blocksiz`), not another word.
pub fn nearest_key(key: &str) -> Option<&'static str> {
    let k = key
        .trim()
        .trim_start_matches("--")
        .replace('-', "_")
        .to_ascii_lowercase();
    JOB_KEYS
        .iter()
        .copied()
        .chain(ALIASES.iter().map(|(name, _)| *name))
        .map(|name| (strsim::jaro_winkler(&k, name), name))
        .filter(|(score, _)| *score >= 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, name)| name)
}

/// What an unknown key is told: the known key nearest to it, or where the keys are listed.
pub(crate) fn unknown_key(key: &str) -> String {
    match nearest_key(key) {
        Some(near) => format!("a known key: did you mean {near}? (every key: docs/job-files.md)"),
        None => "a known key (every key: docs/job-files.md, or stormark run --help)".to_string(),
    }
}
