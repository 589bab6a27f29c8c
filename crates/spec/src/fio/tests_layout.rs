//! How fio lays out a job's files, and what stormark makes of it (issue 60).

use super::tests::{jobs, parse};

/// Issue 60: fio's write-only job on a file it neither reserves nor lays out writes fresh;
/// its default (fallocate=native) reserves, as stormark's default does.
#[test]
fn fallocate_none_and_file_append_write_fresh() {
    let f = parse(
        "[a]\nrw=write\nsize=8m\nfallocate=none\n[b]\nrw=randwrite\nsize=8m\nfile_append=1\n\
         [c]\nrw=write\nsize=8m\n[d]\nrw=randrw\nsize=8m\nfallocate=none\n\
         [e]\nrw=write\nsize=8m\nfallocate=none\noverwrite=1\n",
    )
    .unwrap();
    let fresh: Vec<bool> = jobs(&f).iter().map(|j| j.fresh).collect();
    assert_eq!(fresh, [true, true, false, false, false]);
}

/// `--print-fio` of a fresh job writes fio's fallocate=none, which reads back fresh.
#[test]
fn a_fresh_job_prints_as_fallocate_none_and_reads_back() {
    let f = parse("[w]\nrw=write\nsize=8m\nfallocate=none\n").unwrap();
    let before = jobs(&f);
    let text = super::to_fio(&before, "/mnt/d", true);
    assert!(text.contains("fallocate=none"), "{text}");
    assert!(jobs(&parse(&text).unwrap())[0].fresh, "{text}");
}
