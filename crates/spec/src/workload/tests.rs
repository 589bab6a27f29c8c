use super::*;

fn opts(pairs: &[(&str, &str)]) -> Result<JobOpts, SpecError> {
    let mut o = JobOpts::default();
    for (k, v) in pairs {
        o.set(k, v, Source::Flag)?;
    }
    Ok(o)
}

#[test]
fn every_key_accepts_its_forms() {
    let o = opts(&[
        ("rw", "randrw"),
        ("rwmixread", "70%"),
        ("random_pct", "80"),
        ("bs", "4k-64k"),
        ("bs_align", "4k"),
        ("iodepth", "32"),
        ("jobs", "2"),
        ("files", "3"),
        ("size", "1g"),
        ("time", "30s"),
        ("io_total", "2g"),
        ("direct", "true"),
        ("engine", "io_uring"),
        ("ramp", "5s"),
        ("name", "a-1"),
        ("group", "g"),
        ("invalidate", "0"),
        ("iodepth_batch", "8"),
        ("zero_buffers", "1"),
    ])
    .unwrap();
    let job = o.resolve("x").unwrap();
    assert_eq!(job.rw, Rw::RandRw);
    assert_eq!(job.rwmixread, 70);
    assert_eq!(job.random_pct, 80);
    assert_eq!(
        job.bs,
        BlockSize {
            min: 4096,
            max: 65536
        }
    );
    assert_eq!((job.iodepth, job.jobs, job.files), (32, 2, 3));
    assert_eq!(job.size, Some(1 << 30));
    assert_eq!(job.time, Some(Duration::from_secs(30)));
    assert_eq!(job.io_total, Some(2 << 30));
    assert_eq!(job.direct, Direct::Yes);
    assert_eq!(job.engine, EngineChoice::IoUring);
    assert_eq!(job.ramp, Duration::from_secs(5));
    assert_eq!(job.name, "a-1");
    assert_eq!(job.invalidate, Invalidate::No);
    assert!(job.zero_buffers);
    assert_eq!(job.iodepth_batch, 8);
}

#[test]
fn fio_aliases() {
    let o = opts(&[
        ("numjobs", "4"),
        ("runtime", "10"),
        ("blocksize", "8k"),
        ("readwrite", "randwrite"),
        ("ioengine", "psync"),
    ])
    .unwrap();
    let job = o.resolve("x").unwrap();
    assert_eq!(
        (job.jobs, job.time, job.bs.min, job.rw, job.engine),
        (
            4,
            Some(Duration::from_secs(10)),
            8192,
            Rw::RandWrite,
            EngineChoice::Psync
        )
    );
}

/// fio's `iodepth_batch_complete` is its `iodepth_batch_complete_min` (the completions waited
/// for); `iodepth_batch_complete_max` (the most reaped) is never below it, and is it unless
/// given (fio's init.c). A job given by pairs comes back the same.
#[test]
fn batch_complete_is_fios_min_and_the_max_follows_it() {
    let both = |pairs: &[(&str, &str)]| {
        let job = opts(pairs).unwrap().resolve("x").unwrap();
        (job.iodepth_batch_complete, job.iodepth_batch_complete_max)
    };
    assert_eq!(both(&[]), (1, 1));
    assert_eq!(both(&[("iodepth_batch_complete", "8")]), (8, 8));
    assert_eq!(both(&[("iodepth_batch_complete_min", "8")]), (8, 8));
    assert_eq!(both(&[("iodepth_batch_complete_max", "8")]), (1, 8));
    assert_eq!(
        both(&[
            ("iodepth_batch_complete", "4"),
            ("iodepth_batch_complete_max", "16")
        ]),
        (4, 16)
    );
    assert_eq!(
        both(&[
            ("iodepth_batch_complete", "16"),
            ("iodepth_batch_complete_max", "4")
        ]),
        (16, 16)
    );
    for pairs in [
        &[("iodepth_batch_complete", "4")][..],
        &[("iodepth_batch_complete_max", "16")],
        &[
            ("iodepth_batch_complete", "4"),
            ("iodepth_batch_complete_max", "16"),
        ],
    ] {
        let job = opts(pairs).unwrap().resolve("x").unwrap();
        let owned: Vec<(String, String)> = job
            .to_pairs()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let again: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (&**k, &**v)).collect();
        let back = opts(&again).unwrap().resolve("x").unwrap();
        assert_eq!(
            (back.iodepth_batch_complete, back.iodepth_batch_complete_max),
            (job.iodepth_batch_complete, job.iodepth_batch_complete_max),
            "{pairs:?}"
        );
    }
}

#[test]
fn defaults_follow_fio() {
    let job = JobOpts::default().resolve("x").unwrap();
    assert_eq!(job.rw, Rw::Read);
    assert_eq!(job.bs.min, 4096);
    assert_eq!(job.iodepth, 1);
    assert_eq!(job.direct, Direct::No);
    assert_eq!(job.random_pct, 0);
    let job = opts(&[("rw", "randread")]).unwrap().resolve("x").unwrap();
    assert_eq!(job.random_pct, 100);
}

#[test]
fn rejected_values_name_option_and_form() {
    let cases = [
        (
            "bs",
            "4kk",
            "--bs 4kk: expected a size such as 4k, 64KiB or 1m, or a range such as 4k-64k",
        ),
        (
            "rw",
            "randomread",
            "--rw randomread: expected one of read, write, randread, randwrite, rw, randrw, trim, randtrim, trimwrite, a sequential one with :SIZE after it (read:-8k)",
        ),
        (
            "iodepth",
            "0",
            "--iodepth 0: expected a whole number from 1 to 32768",
        ),
        (
            "jobs",
            "-1",
            "--jobs -1: expected a whole number from 1 to 4096",
        ),
        (
            "rwmixread",
            "101",
            "--rwmixread 101: expected a percentage from 0 to 100, such as 70 or 70%",
        ),
        (
            "time",
            "10x",
            "--time 10x: expected a duration such as 30s, 500ms, 5m or 1h, at most 365d",
        ),
        (
            "direct",
            "maybe",
            "--direct maybe: expected true, false or auto",
        ),
        (
            "engine",
            "libaio",
            "--engine libaio: expected one of auto, io_uring, psync, null",
        ),
        (
            "name",
            "a b",
            "--name a b: expected a name of letters, digits, '-', '_' and '.', at most 64",
        ),
        (
            "iodepth_batch_complete_max",
            "0",
            "--iodepth-batch-complete-max 0: expected a whole number from 1 to 4096",
        ),
    ];
    for (key, value, message) in cases {
        let err = opts(&[(key, value)]).unwrap_err();
        assert_eq!(err.to_string(), message);
    }
}

#[test]
fn unknown_key_in_file_names_context() {
    let err = JobOpts::default()
        .set("blocksiz", "4k", Source::Key("job 1 of a.toml"))
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("blocksiz in job 1 of a.toml = 4k: expected a known key"),
        "{err}"
    );
}

#[test]
fn cross_checks() {
    let err = opts(&[("bs", "64k-4k")]).unwrap().resolve("x").unwrap_err();
    assert!(err.to_string().starts_with("--bs 64k-4k:"), "{err}");
    let err = opts(&[("bs", "4k"), ("size", "1k")])
        .unwrap()
        .resolve("x")
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "--size 1k: expected a size of at least the block size (4k)"
    );
    let err = opts(&[("bs", "1000"), ("direct", "1")])
        .unwrap()
        .resolve("x")
        .unwrap_err();
    assert!(err.to_string().contains("multiples of 512"), "{err}");
    let err = opts(&[("time", "0s")]).unwrap().resolve("x").unwrap_err();
    assert!(err.to_string().starts_with("--time 0:"), "{err}");
    // A range steps by the alignment: no larger than its smallest block. One size may be
    // aligned further, as fio's blockalign.
    let err = opts(&[("bs", "8k-64k"), ("bs_align", "16k")])
        .unwrap()
        .resolve("x")
        .unwrap_err();
    assert!(err.to_string().starts_with("--bs-align 16k:"), "{err}");
    let j = opts(&[("bs", "8k"), ("bs_align", "16k")])
        .unwrap()
        .resolve("x")
        .unwrap();
    assert_eq!((j.bs.min, j.bs_align), (8192, 16384));
}

#[test]
fn overlay_prefers_top() {
    let base = opts(&[("bs", "4k"), ("iodepth", "8")]).unwrap();
    let top = opts(&[("iodepth", "16")]).unwrap();
    let both = base.overlay(&top);
    assert_eq!(both.iodepth, Some(16));
    assert_eq!(
        both.bs,
        Some(BlockSize {
            min: 4096,
            max: 4096
        })
    );
}

#[test]
fn stages_group_jobs() {
    let mk = |name: &str, group: Option<&str>| {
        let mut o = opts(&[("name", name)]).unwrap();
        if let Some(g) = group {
            o.set("group", g, Source::Flag).unwrap();
        }
        o.resolve(name).unwrap()
    };
    let w = Workload::new(
        vec![
            mk("a", None),
            mk("b", Some("g")),
            mk("c", None),
            mk("d", Some("g")),
        ],
        false,
    )
    .unwrap();
    let names: Vec<Vec<&str>> = w
        .stages()
        .iter()
        .map(|s| s.iter().map(|j| j.name.as_str()).collect())
        .collect();
    assert_eq!(names, vec![vec!["a"], vec!["b", "d"], vec!["c"]]);
    assert!(Workload::new(vec![mk("a", None), mk("a", None)], false).is_err());
}

#[test]
fn pairs_round_trip() {
    let job = opts(&[
        ("rw", "randrw"),
        ("bs", "4k-16k"),
        ("time", "90s"),
        ("size", "64m"),
        ("pin_cache", "true"),
    ])
    .unwrap()
    .resolve("j")
    .unwrap();
    let mut again = JobOpts::default();
    for (k, v) in job.to_pairs() {
        again.set(k, &v, Source::Flag).unwrap();
    }
    assert_eq!(again.resolve("other").unwrap(), job);
}

/// Issue 58: `pin_cache` (`--pin-cache`) takes fio's yes/no words, is off unless given, and
/// refuses another word with the accepted form.
#[test]
fn pin_cache_takes_a_yes_or_no() {
    for (v, want) in [
        ("1", true),
        ("true", true),
        ("on", true),
        ("0", false),
        ("no", false),
    ] {
        let job = opts(&[("pin_cache", v)]).unwrap().resolve("j").unwrap();
        assert_eq!(job.pin_cache, want, "{v}");
    }
    assert!(!opts(&[]).unwrap().resolve("j").unwrap().pin_cache);
    let e = opts(&[("pin_cache", "always")]).unwrap_err().to_string();
    assert!(
        e.contains("pin-cache always") && e.contains("true or false"),
        "{e}"
    );
    // fio's pre_read is the nearest: what --print-fio writes for it, read back as it.
    assert_eq!(crate::canonical_key("pre_read"), Some("pin_cache"));
}

/// A mistyped key is told the key it was likely meant to be, never a list of every key; a
/// word that is no key's typo gets where the keys are listed.
#[test]
fn an_unknown_key_suggests_the_nearest() {
    use crate::options::nearest_key;
    assert_eq!(nearest_key("blocksiz"), Some("blocksize"));
    assert_eq!(nearest_key("iodepht"), Some("iodepth"));
    assert_eq!(nearest_key("--rwmixred"), Some("rwmixread"));
    assert_eq!(nearest_key("colour"), None);
    let mut opts = crate::JobOpts::default();
    let err = opts
        .set("numjob", "4", crate::Source::Key("[[job]] 1"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("did you mean numjobs?"), "{err}");
    assert!(err.len() < 200, "{err}");
}
