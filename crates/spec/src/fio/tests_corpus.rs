//! The keys a corpus of real job files (tests/fixtures/fio-corpus, issue 55) needed: each
//! accepted form, and a rejected one.

use super::tests::{jobs, parse};
use crate::workload::{JobOpts, Source};

/// fio's `iodepth_low`: the low-water mark of a full queue, 0 to the depth; travels as a pair
/// and prints back.
#[test]
fn iodepth_low_is_kept_and_travels() {
    let f = parse("[r]\nioengine=libaio\ndirect=1\niodepth=16\niodepth_low=4\n").unwrap();
    let job = &jobs(&f)[0];
    assert_eq!(job.iodepth_low, Some(4));
    assert!(job
        .to_pairs()
        .iter()
        .any(|(k, v)| *k == "iodepth_low" && v == "4"));
    assert!(crate::to_fio(std::slice::from_ref(job), "/data", true).contains("iodepth_low=4\n"));
    assert_eq!(
        jobs(&parse("[r]\niodepth_low=0\n").unwrap())[0].iodepth_low,
        Some(0)
    );
    assert_eq!(
        jobs(&parse("[r]\niodepth=8\n").unwrap())[0].iodepth_low,
        None
    );
    let e = parse("[r]\niodepth_low=-1\n").unwrap_err().to_string();
    assert!(e.contains("a whole number from 0 to 32768"), "{e}");
}

/// fio's `serialize_overlap` and `exitall_on_error`: booleans, off unless given, as pairs.
#[test]
fn serialize_overlap_and_exitall_on_error() {
    let f =
        parse("[r]\nrw=randwrite\niodepth=8\nserialize_overlap=1\nexitall_on_error=1\n").unwrap();
    let job = &jobs(&f)[0];
    assert!(job.serialize_overlap && job.exit_on_error);
    let pairs = job.to_pairs();
    for key in ["serialize_overlap", "exitall_on_error"] {
        assert!(pairs.iter().any(|(k, v)| *k == key && v == "true"), "{key}");
    }
    let plain = &jobs(&parse("[r]\nrw=randwrite\n").unwrap())[0];
    assert!(!plain.serialize_overlap && !plain.exit_on_error);
    let mut opts = JobOpts::default();
    for key in ["serialize_overlap", "exitall_on_error"] {
        let e = opts
            .set(key, "maybe", Source::Flag)
            .unwrap_err()
            .to_string();
        assert!(e.contains("maybe"), "{e}");
    }
}

/// fio's `clocksource` changes only how fio reads its clock: accepted, whatever it names.
#[test]
fn clocksource_is_accepted() {
    for v in ["gettimeofday", "clock_gettime", "cpu"] {
        assert!(parse(&format!("[r]\nclocksource={v}\n")).is_ok(), "{v}");
    }
}

/// `bs=R,W` or `bsrange=R,W` with reads and writes apart: run where the job's `bssplit`
/// decides the sizes (fio lets it win), not run otherwise; the same for both is one size.
#[test]
fn split_block_sizes_beside_a_bssplit() {
    let f = parse("[r]\nrw=rw\nbsrange=1k-4k,8k-8k\nbssplit=4k/30:8k/40:16k/30\n").unwrap();
    assert!(f.ignored.is_empty());
    let job = &jobs(&f)[0];
    assert_eq!((job.bs.min, job.bs.max), (4096, 16384));
    let e = parse("[r]\nrw=rw\nbsrange=1k-4k,8k-8k\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("options stormark does not run") && e.contains("bsrange"),
        "{e}"
    );
    let same = &jobs(&parse("[r]\nbsrange=4k-8k,4k-8k\n").unwrap())[0];
    assert_eq!((same.bs.min, same.bs.max), (4096, 8192));
    let bs = &jobs(&parse("[r]\nbs=16k,16k\n").unwrap())[0];
    assert_eq!(bs.bs.min, 16384);
}

/// fio's range of file sizes: every file the range's middle, said in a note; a range that is
/// not two sizes is refused in one line.
#[test]
fn a_range_of_file_sizes_is_its_middle() {
    let f = parse("[w]\nrw=write\nnrfiles=1\nfilesize=10M-100M\n").unwrap();
    assert_eq!(jobs(&f)[0].size, Some(55 << 20));
    assert!(
        f.notes
            .iter()
            .any(|n| n.contains("filesize=10m-100m") && n.contains("every file 55m")),
        "{:?}",
        f.notes
    );
    let e = parse("[w]\nfilesize=10M-x\n").unwrap_err().to_string();
    assert!(
        e.contains("a range such as 10m-100m") && !e.contains('\n'),
        "{e}"
    );
}

/// fio's `trim_percentage` and `trim_verify_zero` with `verify` (and its `trim_backlog`,
/// accepted: stormark trims after the load); without `verify` they say nothing; a share above
/// 100 is refused in one line.
#[test]
fn verify_with_trims() {
    let f = parse(
        "[w]\nrw=write\nverify=md5\ntrim_percentage=10\ntrim_backlog=16\ntrim_backlog_batch=4\n",
    )
    .unwrap();
    let job = &jobs(&f)[0];
    assert_eq!((job.trim_percentage, job.trim_verify_zero), (10, true));
    assert!(job
        .to_pairs()
        .iter()
        .any(|(k, v)| *k == "trim_percentage" && v == "10"));
    let off = &jobs(
        &parse("[w]\nrw=write\nverify=md5\ntrim_percentage=10\ntrim_verify_zero=0\n").unwrap(),
    )[0];
    assert!(!off.trim_verify_zero);
    let plain = &jobs(&parse("[w]\nrw=write\ntrim_percentage=10\n").unwrap())[0];
    assert_eq!(plain.trim_percentage, 0);
    let e = parse("[w]\nrw=write\nverify=md5\ntrim_percentage=150\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("a percentage from 0 to 100") && !e.contains('\n'),
        "{e}"
    );
}
