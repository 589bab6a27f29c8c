//! Tests of fio's options of where and how jobs run: their files in a directory, CPUs and
//! nodes, latency searches, the random map, and the new keys' travel to agents.

use super::tests::{jobs, parse};
use super::*;
use crate::workload::{JobOpts, Source};

/// Jobs on different files of one directory (fio's `directory=` with a `filename=` per job, or
/// files named whole in one directory): the directory is the target and each job names its
/// own file there, shared by its clones and by every job naming it; `--print-fio` writes it
/// back per job. Files in different directories, or devices, are each a target of their own.
#[test]
fn jobs_on_different_files_of_one_directory() {
    let f = parse(
        "[global]\ndirectory=/scratch\nsize=64m\n[a]\nrw=randwrite\nfilename=raicer\n\
         [b]\nrw=randtrim\nfilename=raicer\n[c]\nrw=randrw\nfilename=verifier\n[d]\nrw=read\n",
    )
    .unwrap();
    assert_eq!(f.file.target.as_deref(), Some("/scratch"));
    assert!(!f.target_is_file);
    let j = jobs(&f);
    let names: Vec<_> = j.iter().map(|j| j.filename.as_deref()).collect();
    assert_eq!(
        names,
        [Some("raicer"), Some("raicer"), Some("verifier"), None]
    );
    let printed = to_fio(&j, "/scratch", true);
    assert!(
        printed.contains("[a]\nioengine=psync\nrw=randwrite\nfilename=raicer\n"),
        "{printed}"
    );
    assert!(printed.contains("filename=verifier\n"), "{printed}");
    // The same files named whole.
    let f = parse("[a]\nfilename=/mnt/x/one\n[b]\nfilename=/mnt/x/two\n").unwrap();
    assert_eq!(f.file.target.as_deref(), Some("/mnt/x"));
    assert_eq!(jobs(&f)[1].filename.as_deref(), Some("two"));
    // One file, joined to its directory as fio joins them, stays the target itself.
    let f = parse("[global]\nfilename=f\n[a]\ndirectory=/mnt/x\n").unwrap();
    assert_eq!(f.file.target.as_deref(), Some("/mnt/x/f"));
    assert!(f.target_is_file);
    assert_eq!(jobs(&f)[0].filename, None);
    // More than one target (issue 55): each job on its own, jobs naming one sharing it.
    for (text, targets) in [
        (
            "[a]\nfilename=/mnt/x/one\n[b]\nfilename=/mnt/y/two\n[c]\nfilename=/mnt/x/one\n",
            [("/mnt/x/one", true), ("/mnt/y/two", true)],
        ),
        (
            "[a]\nfilename=/dev/null\n[b]\nfilename=/dev/zero\n[c]\nfilename=/dev/null\n",
            [("/dev/null", true), ("/dev/zero", true)],
        ),
        (
            "[a]\ndirectory=/mnt/x\n[b]\ndirectory=/mnt/y\n[c]\ndirectory=/mnt/x\n",
            [("/mnt/x", false), ("/mnt/y", false)],
        ),
    ] {
        let f = parse(text).unwrap();
        let several = f.several.unwrap();
        let want: Vec<(String, bool)> = targets.iter().map(|(t, f)| (t.to_string(), *f)).collect();
        assert_eq!(several.targets, want, "{text}");
        assert_eq!(several.of_job, [Some(0), Some(1), Some(0)], "{text}");
        assert_eq!(f.file.target, None);
    }
    let e = parse("[global]\ndirectory=/d\n[a]\nfilename=j0.w0.f0\n[b]\nfilename=x\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("a file name of"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
}

/// A job's own `filename`: a plain name in the run directory, never a path or one of
/// stormark's own names; one file, so not with `--files`; file jobs only.
#[test]
fn a_jobs_own_file_name() {
    let ok = |v: &str| {
        let mut o = JobOpts::default();
        o.set("filename", v, Source::Flag).is_ok()
    };
    assert!(ok("data.1") && ok("raicer") && ok("A-b_c"));
    for bad in [
        "",
        "../x",
        "a/b",
        ".hidden",
        "j1.w0.f2",
        "stormark-run",
        "x.verify",
        "a b",
    ] {
        assert!(!ok(bad), "{bad:?}");
    }
    let mut o = JobOpts::default();
    o.set("filename", "f", Source::Flag).unwrap();
    o.set("files", "2", Source::Flag).unwrap();
    assert!(o.resolve("j").unwrap_err().to_string().contains("--files"));
    let mut o = JobOpts::default();
    o.set("filename", "f", Source::Flag).unwrap();
    o.set("kind", "null", Source::Flag).unwrap();
    assert!(o.resolve("j").is_err());
}

/// fio's CPU and NUMA placement: `cpus_allowed` (and `cpumask` as the same list),
/// `cpus_allowed_policy`, `numa_cpu_nodes`, `numa_mem_policy`, read and printed back; a
/// malformed list or policy is refused naming its form.
#[test]
fn cpu_and_numa_placement() {
    let f = parse(
        "[a]\ncpus_allowed=3,0-1,1\ncpus_allowed_policy=split\nnuma_cpu_nodes=0\nnuma_mem_policy=interleave:0-1\n[b]\ncpumask=0xa\nnuma_mem_policy=bind:0\n",
    )
    .unwrap();
    let j = jobs(&f);
    let p = &j[0].placement;
    assert_eq!(p.cpus.as_ref().unwrap().0, [0, 1, 3]);
    assert!(p.split);
    assert_eq!(p.nodes.as_ref().unwrap().text(), "0");
    assert_eq!(p.mem.as_ref().unwrap().text(), "interleave:0-1");
    assert_eq!(j[1].placement.cpus.as_ref().unwrap().text(), "1,3");
    let printed = to_fio(&j, "/d", true);
    for line in [
        "cpus_allowed=0-1,3\n",
        "cpus_allowed_policy=split\n",
        "numa_cpu_nodes=0\n",
        "numa_mem_policy=interleave:0-1\n",
        "numa_mem_policy=bind:0\n",
    ] {
        assert!(printed.contains(line), "{line}: {printed}");
    }
    for bad in [
        "cpus_allowed=2-1",
        "cpus_allowed=5000",
        "cpus_allowed_policy=spread",
        "numa_mem_policy=bind",
        "numa_mem_policy=fast:0",
    ] {
        let e = parse(&format!("[a]\n{bad}\n")).unwrap_err().to_string();
        assert!(e.contains("expected"), "{bad}: {e}");
    }
}

/// fio's `latency_target` (µs, or with a unit), `latency_percentile` and `latency_window`:
/// stormark's search for the most load within that latency, with the window as its step; a
/// percentile stormark does not report, or two jobs asking different ones, are refused.
#[test]
fn a_latency_target_is_a_search() {
    let f = parse(
        "[global]\nlatency_target=500000\nlatency_window=5000000\nlatency_percentile=99.9\nlatency_run=0\n[d]\nrw=randread\n",
    )
    .unwrap();
    assert_eq!(
        f.latency_search,
        Some(("p99.9<=500ms".to_string(), Some("5s".to_string())))
    );
    let f = parse("[d]\nlatency_target=2ms\n").unwrap();
    assert_eq!(f.latency_search, Some(("max<=2ms".to_string(), None)));
    assert!(crate::parse_target_latency("max<=2ms").is_ok());
    let e = parse("[d]\nlatency_target=2ms\nlatency_percentile=95\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 3: latency_percentile"), "{e}");
    let e = parse("[a]\nlatency_target=2ms\n[b]\nlatency_target=3ms\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("one latency search per run"), "{e}");
}

/// fio's random map is its default: a fio job keeps one unless `norandommap`; stormark's own
/// jobs draw with repeats unless `random_map = true`; `--print-fio` says `norandommap` for
/// those without one, so fio draws as stormark does.
#[test]
fn fios_random_map_is_the_default_of_its_job_files() {
    let f = parse("[a]\nrw=randread\n[b]\nrw=randread\nnorandommap\n").unwrap();
    let j = jobs(&f);
    assert!(j[0].random_map && !j[1].random_map);
    let printed = to_fio(&j, "/d", true);
    assert_eq!(printed.matches("norandommap=1").count(), 1, "{printed}");
    assert!(!JobOpts::default().resolve("x").unwrap().random_map);
}

proptest::proptest! {
    /// The keys this release added never panic on any value, and a job's own file name is
    /// never a path.
    #[test]
    fn new_keys_never_panic(value in "[ -~]{0,24}") {
        for key in ["nice", "prio", "prioclass", "filename", "rate_min", "rate_iops_min", "exitall", "exit_what", "flow", "flow_id", "flow_sleep", "cpus_allowed", "cpus_allowed_policy", "numa_cpu_nodes", "numa_mem_policy", "random_sequence_stride", "random_map", "zone_size", "zone_range", "zone_skip", "dedup_working_set", "dedup_global", "ignore_errors", "cmdprio_percentage", "cmdprio_class", "cmdprio", "atomic"] {
            let mut o = JobOpts::default();
            if o.set(key, &value, Source::Flag).is_ok() && key == "filename" {
                let f = o.filename.unwrap();
                proptest::prop_assert!(!f.contains('/') && !f.starts_with('.') && f != "..");
            }
        }
        let _ = parse(&format!("[a]\nlatency_target={value}\nlatency_percentile={value}\n"));
        let _ = parse(&format!("[a]\ncpumask={value}\nss={value}\n"));
        for key in ["zonemode", "zonesize", "zonerange", "zoneskip", "dedupe_mode", "dedupe_working_set_percentage", "ignore_error", "continue_on_error", "cmdprio_percentage", "cmdprio_class", "cmdprio"] {
            if let Ok(f) = parse(&format!("[a]\nioengine=libaio\ndedupe_percentage=50\n{key}={value}\n")) {
                let _ = f.file.jobs[0].resolve("x");
            }
        }
    }
}

/// The keys of this release travel to agents as pairs and come back the same job.
#[test]
fn new_keys_travel_as_pairs() {
    let f = parse(
        "[a]\nrw=randread\nfilename=/d/one\nrandom_distribution=sequence:2,0,1\nrandom_sequence_stride=1\nratemin=1m,2m\nexitall\nexit_what=all\nflow=3\nflow_sleep=100\ncpus_allowed=0\ncpus_allowed_policy=split\nnuma_mem_policy=local\nnice=-3\nprio=2\nss=iops_slope:1%\nss_dur=10s\nzonesize=256k\nzoneskip=1m\nignore_error=EIO:61,ENOSPC\n[b]\nrw=write\ndedupe_percentage=50\ndedupe_mode=working_set\n\nfilename=/d/two\nprioclass=3\n",
    )
    .unwrap();
    for job in jobs(&f) {
        let mut again = JobOpts::default();
        for (k, v) in job.to_pairs() {
            again.set(k, &v, Source::Flag).unwrap();
        }
        assert_eq!(again.resolve("x").unwrap(), job);
    }
}

/// fio's strided zones: `zonesize` alone or with `zonemode=strided`, the range its size unless
/// given; `zonemode=none` leaves them out, an unknown mode is refused; a skip without a size,
/// a range smaller than a block, or zones with trims are one line each.
#[test]
fn strided_zones_from_fio_and_their_mistakes() {
    let f = parse(
        "[global]\nbs=64k\n[a]\nzonemode=strided\nzonesize=256m\nzoneskip=2g\n[b]\nzonesize=1m\nzonerange=4m\n\
         [c]\nzonemode=none\nzonesize=1m\n",
    )
    .unwrap();
    let z: Vec<_> = jobs(&f).iter().map(|j| j.zones).collect();
    let zones = |size, range, skip| Some(crate::Zones { size, range, skip });
    assert_eq!(
        z,
        [
            zones(256 << 20, 256 << 20, 2 << 30),
            zones(1 << 20, 4 << 20, 0),
            None
        ]
    );
    assert!(to_fio(&jobs(&f), "/d", true).contains(
        "zonemode=strided\nzonesize=268435456\nzonerange=268435456\nzoneskip=2147483648\n"
    ));
    let e = parse("[a]\nzonemode=other\nzonesize=1m\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 2: zonemode"), "{e}");
    for (keys, says) in [
        (vec![("zone_skip", "1m")], "with zone_size"),
        (
            vec![("bs", "64k"), ("zone_size", "16k")],
            "at least the largest block (64k)",
        ),
        (vec![("rw", "randtrim"), ("zone_size", "1m")], "not trims"),
        (vec![("zone_size", "0")], "a size such as 256m"),
    ] {
        let mut o = JobOpts::default();
        let e = keys
            .iter()
            .try_for_each(|(k, v)| o.set(k, v, Source::Flag))
            .and_then(|()| o.resolve("x").map(|_| ()))
            .unwrap_err()
            .to_string();
        assert!(e.contains(says) && !e.contains('\n'), "{keys:?}: {e}");
    }
}

/// fio's dedupe modes: `repeat` is stormark's way; `working_set` takes its share (5% unless
/// given) and is each job's own unless `dedupe_global`; the share without the mode says
/// nothing, as in fio.
#[test]
fn dedupe_working_sets_from_fio() {
    let f = parse(
        "[global]\nrw=write\ndedupe_percentage=50\n[a]\ndedupe_mode=working_set\ndedupe_working_set_percentage=50\ndedupe_global=1\n\
         [b]\ndedupe_mode=working_set\n[c]\ndedupe_working_set_percentage=50\n[d]\ndedupe_mode=repeat\n",
    )
    .unwrap();
    let got: Vec<_> = jobs(&f)
        .iter()
        .map(|j| (j.dedup_working_set, j.dedup_global))
        .collect();
    assert_eq!(
        got,
        [
            (Some(50), true),
            (Some(5), false),
            (None, true),
            (None, true)
        ]
    );
    assert!(to_fio(&jobs(&f), "/d", true)
        .contains("dedupe_mode=working_set\ndedupe_working_set_percentage=5\ndedupe_global=0\n"));
    let e = parse("[a]\ndedupe_mode=other\n").unwrap_err().to_string();
    assert!(e.contains("line 2: dedupe_mode"), "{e}");
    let mut o = JobOpts::default();
    o.set("dedup_working_set", "5", Source::Flag).unwrap();
    let e = o.resolve("x").unwrap_err().to_string();
    assert!(e.contains("with --dedup-ratio above 1"), "{e}");
}

/// fio's error handling: `ignore_error`'s lists (reads, writes, verifies) as one list of
/// kinds, named as the results name them and printed back as fio's; `continue_on_error` is
/// stormark's way (go on, counting), and an unknown error name is one line.
#[test]
fn ignore_error_lists_as_kinds() {
    let f = parse(
        "[a]\nrw=randwrite\ncontinue_on_error=write\nignore_error=EIO:61,ENOSPC,\nerror_dump=0\n",
    )
    .unwrap();
    let j = jobs(&f);
    assert_eq!(j[0].ignore_errors, ["eio", "errno-61", "enospc"]);
    assert!(
        to_fio(&j, "/d", true).contains("ignore_error=EIO:61:ENOSPC,EIO:61:ENOSPC,EIO:61:ENOSPC\n")
    );
    let e = parse("[a]\nignore_error=,ENOTANERROR\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("ENOTANERROR") && e.contains("errno names") && !e.contains('\n'),
        "{e}"
    );
    assert!(parse("[a]\ncontinue_on_error=sometimes\n").is_err());
}

/// fio's per-I/O priorities: a share (one for both directions, or R,W), the class (1 unless
/// given) and level (0 unless given), on io_uring (fio's libaio) only; they travel as pairs
/// and print back as fio's.
#[test]
fn cmdprio_from_fio() {
    let f = parse(
        "[a]\nioengine=libaio\ndirect=1\nrw=randrw\nprioclass=3\ncmdprio_percentage=20\ncmdprio_class=1\nlog_prio=1\n\
         [b]\nioengine=io_uring\ncmdprio_percentage=10,30\ncmdprio_class=2,2\ncmdprio=5\n",
    )
    .unwrap();
    let got: Vec<_> = jobs(&f).iter().map(|j| j.placement.cmdprio).collect();
    let c = |share, class, level| {
        Some(crate::workload::CmdPrio {
            share,
            class,
            level,
            hint: 0,
            split: None,
        })
    };
    assert_eq!(got, [c([20, 20], 1, 0), c([10, 30], 2, 5)]);
    for job in jobs(&f) {
        let mut again = JobOpts::default();
        for (k, v) in job.to_pairs() {
            again.set(k, &v, Source::Flag).unwrap();
        }
        assert_eq!(again.resolve("x").unwrap(), job);
    }
    assert!(to_fio(&jobs(&f), "/d", true)
        .contains("cmdprio_percentage=10,30\ncmdprio_class=2\ncmdprio=5\n"));
    for (file, says) in [
        ("[a]\ncmdprio_percentage=20\n", "with --engine io_uring"),
        (
            "[a]\nioengine=libaio\ndirect=1\ncmdprio_class=1,2\ncmdprio_percentage=5\n",
            "one for reads and writes",
        ),
    ] {
        let e = parse(file)
            .and_then(|f| f.file.jobs[0].resolve("x").map(|_| ()))
            .unwrap_err()
            .to_string();
        assert!(e.contains(says), "{file}: {e}");
    }
}

/// fio's `cmdprio_bssplit` (its example's three forms: shares of the job's class, a class and
/// level each, and a hint) beside a `bssplit` with its own reads' and writes' lists; they
/// travel as pairs and print back as fio's; a size the job has not, a share over 100 and
/// both forms of share refused.
#[test]
fn cmdprio_bssplit_from_fio() {
    let f = parse(
        "[global]\nioengine=libaio\ndirect=1\nrw=randrw\nbssplit=64k/40:1024k/60,1024k/100\n\
         [a]\ncmdprio_bssplit=64k/100:1024k/0,1024k/0\ncmdprio_class=1\ncmdprio=0\n\
         [b]\nprioclass=2\nprio=7\ncmdprio_bssplit=64k/25/1/1:64k/75/3/2:1024k/0,1024k/0\n\
         [c]\nrw=randread\nbssplit=1M/40:2M/60\ncmdprio_bssplit=1M/10/2/0/1:1M/30/2/0/2:1M/60/2/0/0:2M/10/2/0/3:2M/90/2/0/0\n",
    )
    .unwrap();
    let jobs = jobs(&f);
    let split = jobs[0].bs_split.unwrap();
    assert_eq!(split.reads(), [(65536, 40), (1 << 20, 60)]);
    assert_eq!(split.writes(), [(1 << 20, 100)]);
    assert_eq!(split.name(), "64k/40:1m/60,1m/100");
    let c = jobs[1].placement.cmdprio.unwrap().split.unwrap();
    let e: Vec<_> = c.reads().iter().map(|e| (e.bs, e.share, e.prio)).collect();
    assert_eq!(
        e,
        [
            (65536, 25, Some((1, 1, 0))),
            (65536, 75, Some((3, 2, 0))),
            (1 << 20, 0, None)
        ]
    );
    assert_eq!(c.writes()[0].bs, 1 << 20);
    let hints = jobs[2].placement.cmdprio.unwrap().split.unwrap();
    assert_eq!(hints.reads()[3].prio, Some((2, 0, 3)));
    assert_eq!(hints.writes(), hints.reads());
    assert_eq!(crate::CmdPrio::value(2, 0, 3), 2 << 13 | 3 << 3);
    for job in &jobs {
        let mut again = JobOpts::default();
        for (k, v) in job.to_pairs() {
            again.set(k, &v, Source::Flag).unwrap();
        }
        assert_eq!(&again.resolve("x").unwrap(), job);
    }
    let printed = to_fio(&jobs, "/d", true);
    assert!(
        printed.contains("bssplit=64k/40:1m/60,1m/100\n"),
        "{printed}"
    );
    assert!(
        printed.contains("cmdprio_bssplit=64k/25/1/1:64k/75/3/2:1m/0,1m/0\n"),
        "{printed}"
    );
    assert!(printed.contains("2m/10/2/0/3"), "{printed}");
    for (file, says) in [
        (
            "[a]\nioengine=libaio\ndirect=1\nbs=4k\ncmdprio_bssplit=8k/50\n",
            "none is 8k",
        ),
        (
            "[a]\nioengine=libaio\ndirect=1\ncmdprio_bssplit=4k/60:4k/50\n",
            "at most 100",
        ),
        (
            "[a]\nioengine=libaio\ndirect=1\ncmdprio_bssplit=4k/60\ncmdprio_percentage=5\n",
            "not both",
        ),
        ("[a]\ncmdprio_bssplit=4k/60\n", "with --engine io_uring"),
        (
            "[a]\nioengine=libaio\ndirect=1\ncmdprio_bssplit=4k/60/4/0\n",
            "SIZE/PCT[/CLASS",
        ),
        (
            "[a]\nioengine=libaio\ndirect=1\ncmdprio_hint=2\n",
            "with cmdprio_percentage or",
        ),
        ("[a]\nbssplit=4k/50:8k/50,4k/90\n", "READS,WRITES"),
    ] {
        let e = parse(file)
            .and_then(|f| f.file.jobs[0].resolve("x").map(|_| ()))
            .unwrap_err()
            .to_string();
        assert!(e.contains(says), "{file}: {e}");
    }
}

/// fio's SPRandom (its example's keys, `norandommap` in the global section): its settings
/// travel as pairs and print back; `sprandom` without random writes, a random map asked, and
/// its settings without it refused in one line.
#[test]
fn sprandom_from_fio() {
    let f = parse(
        "[global]\nioengine=libaio\nrw=randwrite\nbs=4096\nblockalign=4096\ndirect=1\nnorandommap=1\niodepth=64\n\
         [preconditioning]\nsprandom=1\nspr_op=0.21\nspr_num_regions=400\nspr_cs=1m\n",
    )
    .unwrap();
    let got = jobs(&f);
    assert_eq!(
        got[0].sprandom,
        Some(crate::SpRandom {
            op: 0.21,
            regions: 400,
            cache: 1 << 20
        })
    );
    let mut again = JobOpts::default();
    for (k, v) in got[0].to_pairs() {
        again.set(k, &v, Source::Flag).unwrap();
    }
    assert_eq!(again.resolve("x").unwrap(), got[0]);
    let printed = to_fio(&got, "/d", true);
    assert!(
        printed.contains("sprandom=1\nspr_op=0.21\nspr_num_regions=400\nspr_cs=1048576\n"),
        "{printed}"
    );
    let f = parse("[p]\nrw=randwrite\nsprandom=1\n").unwrap();
    assert_eq!(
        jobs(&f)[0].sprandom.map(|s| (s.op, s.regions)),
        Some((0.15, 100))
    );
    for (file, says) in [
        ("[a]\nrw=randread\nsprandom=1\n", "with --rw randwrite"),
        (
            "[a]\nrw=randwrite\nsprandom=1\nnorandommap=0\n",
            "random map",
        ),
        ("[a]\nrw=randwrite\nspr_num_regions=4\n", "with sprandom=1"),
        (
            "[a]\nrw=randwrite\nsprandom=1\nspr_op=0\n",
            "between 0 and 1",
        ),
    ] {
        let e = parse(file)
            .and_then(|f| f.file.jobs[0].resolve("x").map(|_| ()))
            .unwrap_err()
            .to_string();
        assert!(e.contains(says), "{file}: {e}");
    }
}

/// fio's `surface-scan`: the write job fills the space with verified 512-byte blocks of the
/// pattern and checks nothing itself (`do_verify=0`); the read job checks them (stormark's
/// verify_only on the same named file); they travel as pairs and print back; a fill of reads,
/// an interval that does not divide the blocks, and the verify keys without verify refused.
#[test]
fn surface_scan_from_fio() {
    let f = parse(
        "[global]\nthread\nbs=64k\ndirect=1\nioengine=sync\nverify=meta\nverify_pattern=0xaa555aa5\nverify_interval=512\n\
         [write-phase]\nfilename=datafile.tmp\t; or use a full disk\nrw=write\nfill_device=1\ndo_verify=0\n\
         [verify-phase]\nstonewall\ncreate_serialize=0\nfilename=datafile.tmp\nrw=read\ndo_verify=1\n",
    )
    .unwrap();
    let got = jobs(&f);
    let (w, r) = (&got[0], &got[1]);
    assert!(w.fill_device && w.verify && !w.verify_after && !w.verify_only);
    assert_eq!(w.verify_interval, Some(512));
    assert!(w.buffer_pattern.is_some());
    assert!(r.verify && r.verify_only && !r.fill_device);
    assert_eq!(r.verify_interval, Some(512));
    assert_eq!(
        (w.filename.as_deref(), r.filename.as_deref()),
        (Some("datafile.tmp"), Some("datafile.tmp"))
    );
    for job in &got {
        let mut again = JobOpts::default();
        for (k, v) in job.to_pairs() {
            again.set(k, &v, Source::Flag).unwrap();
        }
        assert_eq!(&again.resolve("x").unwrap(), job);
    }
    let printed = to_fio(&got, "/d", true);
    assert!(
        printed.contains("verify=crc32c\nverify_interval=512\ndo_verify=0\nfill_device=1\n"),
        "{printed}"
    );
    assert!(printed.contains("verify_only=1\n"), "{printed}");
    for (file, says) in [
        ("[a]\nrw=read\nfill_device=1\n", "with --rw write"),
        (
            "[a]\nrw=write\nbs=4k\nverify=crc32c\nverify_interval=8k\n",
            "divides every",
        ),
        (
            "[a]\nrw=write\nverify=crc32c\nverify_interval=1000\n",
            "multiple of 512",
        ),
        ("[a]\nrw=write\nverify_interval=512\n", "with --verify"),
    ] {
        let e = parse(file)
            .and_then(|f| f.file.jobs[0].resolve("x").map(|_| ()))
            .unwrap_err()
            .to_string();
        assert!(e.contains(says), "{file}: {e}");
    }
}

/// fio's `atomic`: with direct I/O and one block size, a power of two; printed back; the
/// rest refused in one line.
#[test]
fn atomic_from_fio() {
    let f = parse("[a]\nrw=randwrite\nbs=4k\ndirect=1\nioengine=libaio\natomic=1\nverify=crc64\nverify_write_sequence=0\n").unwrap();
    assert!(jobs(&f)[0].atomic);
    assert!(to_fio(&jobs(&f), "/d", true).contains("atomic=1\n"));
    for (file, says) in [
        ("[a]\nrw=randwrite\natomic=1\n", "with --direct"),
        (
            "[a]\nrw=randwrite\ndirect=1\nbs=4k-8k\natomic=1\n",
            "a power of two",
        ),
        (
            "[a]\nrw=randwrite\ndirect=1\nbs=12k\natomic=1\n",
            "a power of two",
        ),
        (
            "[a]\nrw=randwrite\ndirect=1\nbs=4k\ndedupe_percentage=50\natomic=1\n",
            "one piece",
        ),
    ] {
        let e = parse(file)
            .and_then(|f| f.file.jobs[0].resolve("x").map(|_| ()))
            .unwrap_err()
            .to_string();
        assert!(e.contains(says) && !e.contains('\n'), "{file}: {e}");
    }
}

/// fio's zoned mode (`zonemode=zbd`): sizes and offsets in zones counted once zonesize is
/// known (also given after them), its settings travel as pairs and print back, `wait_for`
/// puts the jobs waiting for one job together after it, a zoned job's clones share its file;
/// its settings without it, a block larger than a zone, a size under a zone and verify beside
/// resets are refused in one line.
#[test]
fn zoned_jobs_from_fio() {
    let f = parse(
        "[global]\nzonemode=zbd\noffset=524z\nfilename=/dev/sdb\ndirect=1\n\
         [warmup]\nrw=randwrite\nbs=2M\nsize=128z\nzonesize=256M\nmax_open_zones=32\n\
         [wjob]\nwait_for=warmup\nrw=randwrite\nbs=2M\nsize=128z\nzonesize=256M\nzone_reset_threshold=0.7\nzone_reset_frequency=0.125\n\
         [trimjob]\nwait_for=warmup\nrw=randtrim\nbs=256M\nsize=128z\nzonesize=256M\nnumjobs=2\n",
    )
    .unwrap();
    let got = jobs(&f);
    assert_eq!(got[0].offset, 524 << 28);
    assert_eq!(got[0].size, Some(128 << 28));
    assert_eq!(
        got[0].zoned,
        Some(crate::Zoned {
            size: 256 << 20,
            max_open: 32,
            reset_threshold: 1.0,
            reset_frequency: 0.0,
            read_beyond_wp: false,
        })
    );
    assert_eq!(
        got[1].zoned.map(|z| (z.reset_threshold, z.reset_frequency)),
        Some((0.7, 0.125))
    );
    let groups: Vec<_> = got.iter().map(|j| j.group.clone().unwrap()).collect();
    assert_eq!(groups, ["fio-1", "fio-2", "fio-2"]);
    for j in &got {
        let mut again = JobOpts::default();
        for (k, v) in j.to_pairs() {
            again.set(k, &v, Source::Flag).unwrap();
        }
        assert_eq!(again.resolve("x").unwrap(), *j);
    }
    let printed = to_fio(&got, "/d", true);
    assert!(
        printed.contains("zonemode=zbd\nzonesize=268435456\nmax_open_zones=32\n")
            && printed.contains("zone_reset_threshold=0.7\nzone_reset_frequency=0.125\n"),
        "{printed}"
    );
    // A zoned job's clones on one file share it under a directory TARGET.
    let f = parse("[a]\nzonemode=zbd\nzonesize=1m\nfilename=/dev/sdj\nnumjobs=4\nrw=randwrite\n")
        .unwrap();
    assert_eq!(f.file.jobs[0].filename.as_deref(), Some("sdj"));
    let e = parse("[a]\nsize=4z\n").unwrap_err().to_string();
    assert!(e.contains("give zonesize"), "{e}");
    for (file, says) in [
        ("[a]\nmax_open_zones=4\n", "with zoned=true"),
        (
            "[a]\nzonemode=zbd\nzonesize=1m\nbs=2m\n",
            "at least the largest block",
        ),
        (
            "[a]\nzonemode=zbd\nzonesize=1m\nsize=512k\n",
            "at least one zone",
        ),
        (
            "[a]\nzonemode=zbd\nzonesize=1m\nrw=write\nverify=crc32c\nzone_reset_frequency=0.5\n",
            "no zone_reset_frequency or trims",
        ),
        (
            "[a]\nzonemode=zbd\nzonesize=1m\nzone_reset_frequency=2\n",
            "a ratio from 0 to 1",
        ),
    ] {
        let e = parse(file)
            .and_then(|f| f.file.jobs[0].resolve("x").map(|_| ()))
            .unwrap_err()
            .to_string();
        assert!(e.contains(says) && !e.contains('\n'), "{file}: {e}");
    }
}

/// Issue 55: keys of the held-out corpus: fio's escaped percent (`size=100%%`) and keys that
/// change only fio's own logs and reports.
#[test]
fn escaped_percents_and_reporting_keys_of_real_job_files() {
    let f = parse("[r]\nrw=read\nsize=50%%\n").unwrap();
    let plain = parse("[r]\nrw=read\nsize=50%\n").unwrap();
    assert_eq!(jobs(&f)[0].size, jobs(&plain)[0].size);
    for key in [
        "log_max_value=1",
        "disable_bw_measurement=1",
        "disable_bw=1",
        "disk_util=0",
        "verify_state_save=0",
        "log_unix_epoch=1",
    ] {
        assert!(parse(&format!("[r]\nrw=read\n{key}\n")).is_ok(), "{key}");
    }
}
