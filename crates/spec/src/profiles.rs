//! Named profiles shipped inside the binary, each a TOML job file.

use crate::{parse_job_file, JobFile, SpecError};

/// Every profile: name, one-line description, TOML text.
pub const PROFILES: &[(&str, &str, &str)] = &[
    (
        "quick",
        "about 20 s: 4 KiB random 70/30 read/write, then 1 MiB sequential write and read",
        include_str!("../profiles/quick.toml"),
    ),
    (
        "oltp-4k",
        "4 KiB random 70/30 read/write, queue depth 8 (database-like)",
        include_str!("../profiles/oltp-4k.toml"),
    ),
    (
        "bw-64k",
        "64 KiB random 70/30 read/write, queue depth 16",
        include_str!("../profiles/bw-64k.toml"),
    ),
    (
        "seqread-1m",
        "1 MiB sequential reads, queue depth 16",
        include_str!("../profiles/seqread-1m.toml"),
    ),
    (
        "seqwrite-1m",
        "1 MiB sequential writes, queue depth 16",
        include_str!("../profiles/seqwrite-1m.toml"),
    ),
    (
        "iometer-64k",
        "64 KiB, 80% random / 20% sequential, 70/30 read/write, 32 outstanding I/Os",
        include_str!("../profiles/iometer-64k.toml"),
    ),
];

/// The shipped profile names, in order.
pub fn profile_names() -> Vec<&'static str> {
    PROFILES.iter().map(|(name, _, _)| *name).collect()
}

/// Looks up and parses a profile.
pub fn profile(name: &str) -> Result<JobFile, SpecError> {
    let (_, _, text) = PROFILES
        .iter()
        .find(|(n, _, _)| *n == name)
        .ok_or_else(|| SpecError::UnknownProfile {
            name: name.to_string(),
            known: profile_names().join(", "),
        })?;
    parse_job_file(text, &format!("profile {name}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Workload;

    #[test]
    fn every_profile_resolves() {
        for name in profile_names() {
            let file = profile(name).unwrap();
            let jobs: Vec<_> = if file.jobs.is_empty() {
                vec![file.defaults.clone()]
            } else {
                file.jobs.iter().map(|j| file.defaults.overlay(j)).collect()
            };
            let jobs = jobs
                .iter()
                .map(|j| j.resolve(name))
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
            Workload::new(jobs, false).unwrap();
        }
    }

    #[test]
    fn iometer_is_what_it_says() {
        let f = profile("iometer-64k").unwrap();
        let job = f
            .defaults
            .overlay(&f.jobs.first().cloned().unwrap_or_default())
            .resolve("x")
            .unwrap();
        assert_eq!((job.bs.min, job.random_pct, job.iodepth), (65536, 80, 32));
    }

    #[test]
    fn unknown_profile_lists_known() {
        let err = profile("fast").unwrap_err().to_string();
        assert!(
            err.starts_with("--profile fast: unknown profile; expected one of quick, oltp-4k"),
            "{err}"
        );
    }
}
