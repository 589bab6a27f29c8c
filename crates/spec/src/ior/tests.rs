use super::*;
use proptest::prelude::*;

/// The workload a job file resolves to, as the request resolves one without flags.
fn resolve(file: &JobFile) -> Result<Workload, SpecError> {
    let jobs = file
        .jobs
        .iter()
        .map(|j| file.defaults.overlay(j).resolve("job"))
        .collect::<Result<Vec<_>, _>>()?;
    Workload::new(jobs, false)
}

/// The workload `--ior ARGS` resolves to.
fn workload(args: &str) -> Workload {
    let run = parse_ior(args, None).expect("valid IOR options");
    resolve(&run.file).expect("resolves")
}

#[test]
fn write_then_read_file_per_process() {
    let w = workload("-a POSIX -t 1m -b 64m -F -w -r");
    let names: Vec<&str> = w.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["write", "read"]);
    let (wr, rd) = (&w.jobs[0], &w.jobs[1]);
    assert_eq!(wr.rw, Rw::Write);
    assert!(wr.fresh, "IOR writes new files");
    assert!(wr.writes_in_full());
    assert_eq!(rd.rw, Rw::Read);
    for j in &w.jobs {
        assert_eq!(j.bs.max, 1 << 20);
        assert_eq!(j.size, Some(64 << 20));
        assert_eq!(j.iodepth, 1);
        assert_eq!(j.engine, crate::EngineChoice::Psync);
        assert_eq!(j.filename, None);
        assert_eq!(
            j.invalidate,
            crate::Invalidate::No,
            "IOR keeps the page cache"
        );
    }
}

#[test]
fn every_option_maps() {
    let run = parse_ior(
        "-a POSIX -t 64k -b 4m -s 2 -F -w -r -C -e -Y -k -z -i 3 -N 4 -B -o /mnt/pfs/testFile",
        None,
    )
    .unwrap();
    assert!(run.keep);
    assert_eq!(run.repeat, 3);
    assert_eq!(run.dir.as_deref(), Some("/mnt/pfs"));
    let w = resolve(&run.file).unwrap();
    let (wr, rd) = (&w.jobs[0], &w.jobs[1]);
    assert_eq!(wr.rw, Rw::RandWrite);
    assert!(wr.random_map && wr.end_fsync && wr.fsync == 1);
    assert_eq!(wr.size, Some(8 << 20));
    assert_eq!(wr.jobs, 4);
    assert_eq!(wr.direct, crate::Direct::Yes);
    assert_eq!(rd.rw, Rw::RandRead);
    assert_eq!(rd.file_shift, 1);
}

#[test]
fn clustered_and_attached_values_and_defaults() {
    let w = workload("-wrF -t64k");
    assert_eq!(w.jobs.len(), 2);
    assert_eq!(w.jobs[0].bs.max, 64 << 10);
    assert_eq!(w.jobs[0].size, Some(1 << 20), "IOR's default -b");
    // Neither -w nor -r: IOR writes and reads.
    assert_eq!(workload("-F").jobs.len(), 2);
    assert_eq!(workload("-r -F").jobs.len(), 1);
}

#[test]
fn a_shared_file_gives_each_task_its_region() {
    let w = workload("-t 1m -b 16m -w -N 2 -o /tmp/x/shared.dat");
    let j = &w.jobs[0];
    assert_eq!(j.filename.as_deref(), Some("shared.dat"));
    assert_eq!(j.offset_increment, 16 << 20);
    assert_eq!(j.size, Some(16 << 20));
}

#[test]
fn a_deadline_caps_both_and_keeps_reads_readable() {
    let run = parse_ior("-F -w -r -D 5", None).unwrap();
    let w = resolve(&run.file).unwrap();
    assert_eq!(w.jobs[0].time, Some(std::time::Duration::from_secs(5)));
    assert!(
        !w.jobs[0].fresh,
        "a partly written fresh file would read short"
    );
    assert_eq!(run.notes.len(), 1);
}

#[test]
fn refusals_name_the_option() {
    for (args, names) in [
        ("-a MPIIO -F", "-a"),
        ("-c -F", "-c"),
        ("-F -X 3 -q", "-X, -q"),
        ("-F --mpiio.hintsFileName=x", "--mpiio.hintsFileName"),
        ("-t 1m -b 1536k -F", "-b"),
        ("-s 2 -w", "-s"),
        ("-F -t", "-t"),
        ("'-F", "quotes"),
        ("F", "not an option"),
    ] {
        let e = parse_ior(args, None).unwrap_err().to_string();
        assert!(e.contains(names), "{args}: {e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
}

#[test]
fn a_script_runs_each_test_with_the_settings_so_far() {
    let script = "# two tests\nIOR START\n  api=POSIX\n  transferSize=1m\n  blockSize=8m\n  filePerProc=1\n  writeFile=1\n  readFile=1\nRUN\n  readFile=0\n  blockSize=16m\nRUN\nIOR STOP\n";
    assert_eq!(
        ior_script("-f tests.ior -N 2").unwrap().as_deref(),
        Some("tests.ior")
    );
    let run = parse_ior("-f tests.ior -N 2", Some(script)).unwrap();
    let w = resolve(&run.file).unwrap();
    let names: Vec<&str> = w.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["t1-write", "t1-read", "t2-write"]);
    assert_eq!(w.jobs[2].size, Some(16 << 20));
    assert!(
        w.jobs.iter().all(|j| j.jobs == 2),
        "the command line under the script"
    );
    for (bad, what) in [
        ("api=POSIX\nRUN\n", "IOR START"),
        ("IOR START\nRUN\n", "IOR STOP"),
        ("IOR START\nIOR STOP\n", "no RUN"),
        ("IOR START\nfoo\nRUN\nIOR STOP\n", "key=value"),
        (
            "IOR START\nhintsFileName=x\nRUN\nIOR STOP\n",
            "hintsFileName (line 2)",
        ),
    ] {
        let e = parse_ior("", Some(bad)).unwrap_err().to_string();
        assert!(e.contains(what), "{bad:?}: {e}");
    }
}

#[test]
fn print_ior_reads_back_as_the_same_jobs() {
    let w = workload("-a POSIX -t 1m -b 64m -F -w -r -C -B -N 4");
    let printed = to_ior(&w, 2).unwrap();
    assert_eq!(
        printed,
        "-a POSIX -t 1m -b 64m -s 1 -F -w -r -C --posix.odirect -i 2 -N 4"
    );
    assert_eq!(workload(&printed), w);
    // What IOR has no form for is refused by name.
    let mut deep = w.clone();
    deep.jobs[0].iodepth = 8;
    assert!(to_ior(&deep, 1).unwrap_err().contains("job write"));
}

fn arb_ior() -> impl Strategy<Value = Ior> {
    (
        (0u32..6, 1u64..64, 1u32..4, any::<bool>()),
        (
            any::<[bool; 9]>(),
            1u32..5,
            1u32..9,
            prop::option::of(1u32..100),
        ),
    )
        .prop_map(|((t, mult, segs, fpp), (flags, iters, tasks, deadline))| {
            let xfer = 4096u64 << t;
            Ior {
                xfer,
                block: xfer * mult,
                segments: if fpp { segs } else { 1 },
                file_per_proc: fpp,
                write: flags[0],
                read: flags[1],
                reorder: flags[2] && fpp,
                fsync: flags[3],
                fsync_each: flags[4],
                keep: flags[5],
                random: flags[6],
                iterations: iters,
                test_file: flags[7].then(|| "/mnt/pfs dir/test.file".to_string()),
                deadline_s: deadline,
                direct: flags[8],
                tasks,
            }
        })
}

proptest! {
    #[test]
    fn options_round_trip(ior in arb_ior()) {
        let mut back = Ior::default();
        for (k, v) in options(&words(&ior.to_args()).unwrap()).unwrap() {
            prop_assert!(back.set(&key_of(&k), v.as_deref()).unwrap(), "{k}");
        }
        prop_assert_eq!(&back, &ior);
        // And the jobs it gives resolve.
        let run = parse_ior(&ior.to_args(), None).unwrap();
        prop_assert!(resolve(&run.file).is_ok());
    }

    #[test]
    fn any_command_line_or_script_never_panics(args in ".{0,80}", script in ".{0,200}") {
        let _ = parse_ior(&args, None);
        let _ = parse_ior(&args, Some(&script));
        let _ = parse_ior(&args, Some(&format!("IOR START\n{script}\nRUN\nIOR STOP")));
        let _ = ior_script(&args);
    }
}
