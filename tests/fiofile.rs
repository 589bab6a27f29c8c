//! Issue 22: fio job files run as they are (`stormark run FILE.fio`, `--job FILE.fio`), an
//! option stormark does not run refused with its line (or left out with `--lenient`), and
//! `--print-fio` writing the fio job file of a run, which reads back as the same workload.

use std::path::Path;

use stormark_testkit::{read_json, temp_dir, text, Bin};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

#[test]
fn a_fio_job_file_runs_as_written_and_its_jobs_in_fios_order() {
    let dir = temp_dir(TMP);
    let t = dir.path().join("t");
    std::fs::create_dir(&t).unwrap();
    let fio = dir.path().join("check.fio");
    std::fs::write(
        &fio,
        format!(
            "; as a vendor ships it\n[global]\nioengine=libaio\nsize=8m\ndirectory={}\nruntime=1\ntime_based\ngroup_reporting\nnorandommap\n\n[reader]\nrw=randread\nbs=4k\niodepth=4\n\n[writer]\nrw=randwrite\nbs=${{BS}}\n\n[after]\nstonewall\nrw=write\nbs=64k\n",
            t.display()
        ),
    )
    .unwrap();
    let json = dir.path().join("r.json");
    let out = std::process::Command::new(BIN)
        .env("BS", "8k")
        .args([
            "run",
            fio.to_str().unwrap(),
            "-q",
            "--json",
            json.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = read_json(&json);
    let jobs = r["spec"]["jobs"].as_array().unwrap();
    let names: Vec<&str> = jobs.iter().map(|j| j["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["reader", "writer", "after"]);
    assert_eq!(jobs[1]["bs"], "8k");
    // reader and writer together (one phase with both), then after alone.
    let runs: Vec<&serde_json::Value> = r["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "run")
        .collect();
    assert_eq!(runs.len(), 2, "{}", r["phases"]);
    assert_eq!(runs[0]["jobs"].as_array().unwrap().len(), 2);
    assert!(runs[0]["by_op"]["read"]["ops"].as_u64().unwrap() > 0);
    assert!(runs[0]["by_op"]["write"]["ops"].as_u64().unwrap() > 0);
    assert!(
        std::fs::read_dir(&t).unwrap().next().is_none(),
        "cleaned up"
    );
}

#[test]
fn options_stormark_does_not_run_are_refused_with_their_lines_unless_lenient() {
    let dir = temp_dir(TMP);
    let t = dir.path().join("t");
    std::fs::create_dir(&t).unwrap();
    let fio = dir.path().join("odd.fio");
    std::fs::write(
        &fio,
        "[global]\nlockmem=1m\n[j]\nrw=randread\nsize=4m\nruntime=1\nexitall_on_error\n",
    )
    .unwrap();
    let out = Bin(BIN).run(&["run", t.to_str().unwrap(), "--job", fio.to_str().unwrap()]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("line 2: lockmem") && said.contains("line 7: exitall_on_error"),
        "{said}"
    );
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    let (code, r, out) = Bin(BIN).run_json(
        &dir,
        &[
            t.to_str().unwrap(),
            "--job",
            fio.to_str().unwrap(),
            "--lenient",
            "-q",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let notes = r["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n
            .as_str()
            .unwrap()
            .contains("left out (--lenient): line 2: lockmem, line 7: exitall_on_error")),
        "{notes:?}"
    );
}

#[test]
fn print_fio_writes_a_file_that_runs_the_same_workload() {
    let dir = temp_dir(TMP);
    let t = dir.path().join("t");
    std::fs::create_dir(&t).unwrap();
    let args = [
        "run",
        t.to_str().unwrap(),
        "--rw",
        "randrw",
        "--rwmixread",
        "70",
        "--bs",
        "8k",
        "--iodepth",
        "4",
        "--jobs",
        "2",
        "--size",
        "4m",
        "--time",
        "1s",
        "--fsync",
        "8",
        "--compress-ratio",
        "2",
        "--engine",
        "io_uring",
        "--print-fio",
    ];
    let out = Bin(BIN).run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let printed = String::from_utf8(out.stdout).unwrap();
    assert!(
        printed.contains("[global]") && printed.contains("rwmixread=70"),
        "{printed}"
    );
    // Nothing ran.
    assert!(std::fs::read_dir(&t).unwrap().next().is_none());
    let fio = dir.path().join("printed.fio");
    std::fs::write(&fio, &printed).unwrap();
    let (code, a, out) = Bin(BIN).run_json(&dir, &[&args[1..args.len() - 1], &["-q"]].concat());
    assert_eq!(code, 0, "{out}");
    let (code, b, out) = Bin(BIN).run_json(&dir, &[fio.to_str().unwrap(), "-q"]);
    assert_eq!(code, 0, "{out}");
    // The one difference by design: a fio job file runs as fio would, its buffered jobs'
    // files leaving the page cache before each pass (fio has no "once at the start").
    assert_eq!(
        (
            &a["spec"]["jobs"][0]["invalidate"],
            &b["spec"]["jobs"][0]["invalidate"]
        ),
        (&serde_json::json!("1"), &serde_json::json!("pass"))
    );
    let strip = |r: &serde_json::Value| {
        let mut j = r["spec"]["jobs"][0].clone();
        for key in ["name", "group", "invalidate"] {
            j.as_object_mut().unwrap().remove(key);
        }
        j
    };
    assert_eq!(strip(&a), strip(&b), "{printed}");
}

/// The jobs of `tests/fio/NAME`, as stormark maps them (variables from `env`, includes read
/// beside the file), or the error.
fn collection(name: &str, env: &[(&str, &str)]) -> Result<Vec<stormark_spec::Job>, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fio");
    let text = std::fs::read_to_string(dir.join(name)).unwrap();
    let vars = |v: &str| {
        env.iter()
            .find(|(k, _)| *k == v)
            .map(|(_, val)| val.to_string())
    };
    let include = |f: &str| std::fs::read_to_string(dir.join(f)).map_err(|e| e.to_string());
    let f = stormark_spec::parse_fio_job_file(&text, name, &vars, &include, false)
        .map_err(|e| e.to_string())?;
    Ok(f.file
        .jobs
        .iter()
        .map(|j| f.file.defaults.overlay(j).resolve("job").unwrap())
        .collect())
}

/// Whether two jobs run at the same time (one group).
fn together(a: &stormark_spec::Job, b: &stormark_spec::Job) -> bool {
    a.group.is_some() && a.group == b.group
}

#[test]
fn real_world_job_files_map_field_by_field() {
    use std::time::Duration;
    use stormark_spec::Direct;
    let j = collection("randread-4k.fio", &[]).unwrap();
    assert_eq!(j.len(), 1);
    let r = &j[0];
    assert_eq!((r.name.as_str(), r.rw.name()), ("randread", "randread"));
    assert_eq!((r.bs.min, r.bs.max, r.iodepth, r.jobs), (4096, 4096, 64, 4));
    assert_eq!((r.size, r.files), (Some(1 << 30), 1));
    assert_eq!((r.time, r.io_total), (Some(Duration::from_secs(60)), None));
    assert_eq!((r.engine.name(), r.direct), ("io_uring", Direct::Yes));

    let j = collection("randwrite-sync.fio", &[]).unwrap();
    let w = &j[0];
    assert_eq!((w.rw.name(), w.bs.min, w.jobs), ("randwrite", 16 << 10, 2));
    assert_eq!((w.engine.name(), w.direct), ("psync", Direct::No));
    assert_eq!((w.fsync, w.end_fsync), (64, true));
    assert_eq!(w.time, Some(Duration::from_secs(120)));

    let j = collection("seq-stonewall.fio", &[]).unwrap();
    assert_eq!(j.len(), 2);
    assert_eq!((j[0].rw.name(), j[1].rw.name()), ("write", "read"));
    assert_eq!((j[0].bs.min, j[0].iodepth), (1 << 20, 16));
    // Without time_based: one pass of the 4 GiB or 30 s, whichever comes first.
    assert_eq!((j[1].size, j[1].io_total), (Some(4 << 30), Some(4 << 30)));
    assert_eq!(j[1].time, Some(Duration::from_secs(30)));
    assert!(!together(&j[0], &j[1]), "the stonewall separates them");

    let j = collection("nrfiles-mixed.fio", &[]).unwrap();
    let m = &j[0];
    assert_eq!((m.rw.name(), m.rwmixread, m.random_pct), ("randrw", 70, 90));
    assert_eq!(
        (m.files, m.size, m.jobs, m.iodepth),
        (16, Some(64 << 20), 2, 8)
    );
    assert_eq!(m.ramp, Duration::from_secs(5));

    assert!(collection("database.fio", &[])
        .unwrap_err()
        .contains("BENCH_DIR"));
    let j = collection("database.fio", &[("BENCH_DIR", "/mnt/db")]).unwrap();
    assert_eq!(j.len(), 3);
    let (data, log, probe) = (&j[0], &j[1], &j[2]);
    assert_eq!(
        (data.rwmixread, data.bs.min, data.jobs, data.iodepth),
        (70, 8192, 4, 16)
    );
    assert_eq!(
        (log.engine.name(), log.direct, log.fdatasync),
        ("psync", Direct::No, 1)
    );
    assert_eq!(log.size, Some(256 << 20));
    assert!(together(data, log), "data and log run together");
    assert!(!together(log, probe), "the probe after a stonewall");
    // fio's rate_iops is each job's: 200 for each of 2 is stormark's total of 400.
    assert_eq!(
        (probe.rate_iops, probe.jobs, probe.iodepth),
        (Some(400), 2, 1)
    );

    let env = [("RUNTIME", "45"), ("SIZE", "2g"), ("ncpus", "8")];
    let j = collection("vendor-include.fio", &env).unwrap();
    assert_eq!(j.len(), 2);
    assert_eq!((j[0].bs.min, j[0].jobs), (128_000, 8));
    // kb_base=1000 from the included file: 2g is 2 * 10^9 bytes, 128k is 128 * 1000.
    assert_eq!(j[0].size, Some(2_000_000_000));
    assert_eq!(j[0].time, Some(Duration::from_secs(45)));
    assert_eq!((j[1].compress_ratio, j[1].rw.name()), (2.0, "randwrite"));
    assert_eq!(j[1].bs.min, 4096, "KiB stays 1024 under kb_base=1000");
    assert!(!together(&j[0], &j[1]));

    let e = collection("unsupported.fio", &[]).unwrap_err();
    for line in [
        "line 4: iomem",
        "line 10: lockmem",
        "line 11: exitall_on_error",
    ] {
        assert!(e.contains(line), "{line}: {e}");
    }
}

/// Issue 31: a `filename=` that does not exist yet is made, as fio makes it (fio's own
/// `fio-rand-read`, `ssd-test` and others are written so): laid out in full before the load,
/// written without --allow-overwrite (it is the run's), removed at the end unless kept. A file
/// that exists is still the user's.
#[test]
fn a_filename_that_does_not_exist_is_made_laid_out_and_removed() {
    let dir = temp_dir(TMP);
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let file = data.join("fio-rand-RW");
    let fio = dir.path().join("rand-rw.fio");
    std::fs::write(
        &fio,
        format!(
            "; fio's examples/fio-rand-RW.fio, scaled down\n[global]\nname=fio-rand-RW\nfilename={}\nrw=randrw\nrwmixread=60\nrwmixwrite=40\nbs=4K\ndirect=0\nnumjobs=2\ntime_based\nruntime=1\n\n[file1]\nsize=8M\nioengine=libaio\niodepth=4\n",
            file.display()
        ),
    )
    .unwrap();
    let run = |extra: &[&str]| {
        let json = dir.path().join("r.json");
        let mut args = vec![
            "run",
            fio.to_str().unwrap(),
            "-q",
            "--json",
            json.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let out = Bin(BIN).run(&args);
        (out.status.code(), text(&out), read_json(&json))
    };
    let (code, said, r) = run(&[]);
    assert_eq!(code, Some(0), "{said}");
    let ran = r["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == "run")
        .unwrap();
    assert!(ran["by_op"]["read"]["ops"].as_u64().unwrap() > 0);
    assert!(ran["by_op"]["write"]["ops"].as_u64().unwrap() > 0);
    assert!(
        r["notes"].to_string().contains("made ")
            && r["notes"].to_string().contains("8.0 MiB written"),
        "{}",
        r["notes"]
    );
    assert!(!file.exists(), "the made file is removed");
    assert_eq!(r["target"]["kind"], "file", "{}", r["target"]);
    // Kept: the file stays, laid out in full.
    let (code, said, _) = run(&["--keep"]);
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 8 << 20);
    // Now it exists: the user's file, written only with --allow-overwrite.
    let (code, said, _) = run(&[]);
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("--allow-overwrite"), "{said}");
    assert!(file.exists());
    // --print-fio keeps it a file.
    let out = Bin(BIN).run(&["run", fio.to_str().unwrap(), "--print-fio"]);
    assert!(
        text(&out).contains(&format!("filename={}", file.display())),
        "{}",
        text(&out)
    );
    // In a directory that is not there: one line, exit 2, nothing made.
    std::fs::write(
        &fio,
        format!(
            "[j]\nfilename={}\nrw=read\nsize=1m\n",
            data.join("no/such/f").display()
        ),
    )
    .unwrap();
    let (code, said, _) = run(&[]);
    assert_eq!(code, Some(2), "{said}");
    assert_eq!(said.trim().lines().count(), 1, "{said}");
}

/// Issue 31: fio's own `examples/` (tests/fio/examples, unchanged) as a user hands them to
/// stormark: each verdict is the recorded one (tests/fio/examples/VERDICTS); those that run
/// run for a second on a scratch directory; the refused ones stop before any load with one
/// line naming what (never a panic).
#[test]
fn fios_own_examples_keep_their_verdicts() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fio/examples");
    // Each file's verdict, and the flags it needs here (a steady state's wait bounded).
    let recorded: std::collections::BTreeMap<String, (String, Vec<String>)> =
        std::fs::read_to_string(examples.join("VERDICTS"))
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| {
                let mut w = l.split(' ').map(str::to_string);
                let name = w.next().unwrap();
                let verdict = w.next().unwrap();
                (name, (verdict, w.collect()))
            })
            .collect();
    let dir = temp_dir(TMP);
    let mut files: Vec<String> = std::fs::read_dir(&examples)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".fio"))
        .collect();
    files.sort();
    assert_eq!(
        files,
        recorded.keys().cloned().collect::<Vec<_>>(),
        "every example has a verdict"
    );
    let mut differ = Vec::new();
    for name in &files {
        let job = examples.join(name);
        let args = |extra: &[&str]| {
            let mut a = vec![
                "run".to_string(),
                dir.path().display().to_string(),
                "--job".into(),
                job.display().to_string(),
                "--size".into(),
                "64m".into(),
                "--time".into(),
                "1s".into(),
            ];
            a.extend(extra.iter().map(|s| s.to_string()));
            a
        };
        let (want, flags) = &recorded[name];
        // The variables a file needs (`FIO_BS=4096`), and the flags.
        let (vars, flags): (Vec<&String>, Vec<&String>) =
            flags.iter().partition(|f| !f.starts_with("--"));
        let vars: Vec<(&str, &str)> = vars.iter().filter_map(|v| v.split_once('=')).collect();
        let run = |extra: &[&str]| {
            std::process::Command::new(BIN)
                .args(args(extra))
                .envs(vars.iter().copied())
                .output()
                .unwrap()
        };
        let out = run(&["--print-fio"]);
        let verdict = match out.status.code() {
            Some(0) => "runs",
            Some(2) => {
                let said = text(&out);
                assert_eq!(said.trim().lines().count(), 1, "{name}: {said}");
                "refused"
            }
            other => panic!("{name}: exit {other:?}: {}", text(&out)),
        };
        // Read and printed as written, but refused by this machine's target before any load
        // (atomic writes where the scratch directory's file system takes none).
        if verdict == "runs" && want == "refused-here" {
            let out = run(&["-q"]);
            let said = text(&out);
            match out.status.code() {
                // A scratch directory whose file system takes them: it runs.
                Some(0) => {}
                Some(2) => assert_eq!(said.trim().lines().count(), 1, "{name}: {said}"),
                other => panic!("{name}: exit {other:?}: {said}"),
            }
            continue;
        }
        if verdict != want {
            differ.push(format!("{name}: {verdict}, recorded {want}"));
            continue;
        }
        if verdict == "runs" {
            let mut extra = vec!["-q"];
            extra.extend(flags.iter().map(|f| f.as_str()));
            let out = run(&extra);
            assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out));
            assert_eq!(
                std::fs::read_dir(dir.path()).unwrap().count(),
                0,
                "{name} left files behind"
            );
        }
    }
    assert!(
        differ.is_empty(),
        "verdicts changed (update VERDICTS if for the better): {differ:#?}"
    );
}

/// Issue 31: `--print-fio` writes what fio reads back as the same jobs: for every example
/// stormark runs and every job file of tests/fio, the printed file passes `fio --parse-only`
/// and fio's own `--showcmd` holds every option as printed (rw, bs or bssplit, iodepth,
/// numjobs, size, rwmixread, runtime, direct, ...), none dropped or read otherwise.
#[test]
fn print_fio_round_trips_through_fio() {
    let test = "print_fio_round_trips_through_fio";
    if !stormark_testkit::require_tool(test, "fio") {
        return;
    }
    let dir = temp_dir(TMP);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fio");
    // The files that run of fio's examples and of the third-party corpus, with the
    // variables each needs.
    let runs = |list: &str| -> Vec<(String, Vec<(String, String)>)> {
        std::fs::read_to_string(root.join(list).join("VERDICTS"))
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let mut w = l.split(' ');
                let name = w.next()?;
                (w.next()? == "runs").then_some(())?;
                let vars = w
                    .filter_map(|v| v.split_once('='))
                    .filter(|(k, _)| !k.starts_with("--"))
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect();
                Some((format!("{list}/{name}"), vars))
            })
            .collect()
    };
    let mut files: Vec<(String, Vec<(String, String)>)> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".fio"))
        .map(|n| (n, vec![("BS".to_string(), "8k".to_string())]))
        .collect();
    files.sort();
    files.extend(runs("examples"));
    files.extend(runs("corpus"));
    let mut checked = 0;
    for (name, vars) in &files {
        let printed = dir.path().join("printed.fio");
        let out = std::process::Command::new(BIN)
            .args(["run", dir.path().to_str().unwrap(), "--job"])
            .arg(root.join(name))
            .args(["--size", "64m", "--time", "1s", "--print-fio"])
            .envs(vars.iter().map(|(k, v)| (k, v)))
            .output()
            .unwrap();
        if out.status.code() != Some(0) {
            // A file of tests/fio made to be refused (unsupported.fio, ...).
            continue;
        }
        // fio's `sequence` distribution and SPRandom are newer than some fio a distribution
        // ships.
        let printed_text = String::from_utf8_lossy(&out.stdout).to_string();
        if printed_text.contains("sprandom=1") && !fio_knows("sprandom") {
            eprintln!("{test}: {name} not checked: this fio has no sprandom");
            continue;
        }
        if printed_text.contains("random_distribution=sequence")
            && !fio_knows("random_sequence_stride")
        {
            eprintln!("{test}: {name} not checked: this fio has no random_distribution=sequence");
            continue;
        }
        std::fs::write(&printed, &out.stdout).unwrap();
        let parse = std::process::Command::new("fio")
            .arg("--parse-only")
            .arg(&printed)
            .output()
            .unwrap();
        assert!(
            parse.status.success(),
            "{name}: fio refused what was printed:\n{}\n{}",
            text(&parse),
            String::from_utf8_lossy(&out.stdout)
        );
        let show = std::process::Command::new("fio")
            .arg("--showcmd")
            .arg(&printed)
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&show.stdout).to_string();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with(';') || line.starts_with('[') {
                continue;
            }
            let option = format!("--{line}");
            assert!(
                shown.contains(&format!("{option} ")) || shown.trim_end().ends_with(&option),
                "{name}: fio does not read `{line}` back:\n{shown}"
            );
        }
        checked += 1;
    }
    assert!(checked >= 80, "only {checked} files printed");
}

/// Whether the fio here knows `option`.
fn fio_knows(option: &str) -> bool {
    std::process::Command::new("fio")
        .arg(format!("--cmdhelp={option}"))
        .output()
        .is_ok_and(|o| !text(&o).contains("No such command"))
}

/// Issue 31: the page cache as fio leaves it. A buffered time_based job reads its file again
/// and again; fio drops the file's pages before each pass (invalidate=1), so its reads reach
/// the disk, where dropping them once leaves every pass after the first to the cache. Ground
/// truth is the disk's own count (/proc/diskstats, in the host's samples): with `pass` (what
/// a fio job file runs with) the disk reads about what the job read; with `1` (once) only the
/// file's 16 MiB.
#[test]
fn a_fio_job_files_buffered_passes_each_start_with_a_cold_cache() {
    let dir = temp_dir(TMP);
    let target = dir.path().join("t");
    std::fs::create_dir(&target).unwrap();
    let job = dir.path().join("seq.fio");
    std::fs::write(
        &job,
        "[seq]\nrw=read\nbs=64k\nsize=16m\nioengine=psync\ntime_based\nruntime=3\n",
    )
    .unwrap();
    // (what the job read, what the disks read), bytes.
    let run = |extra: &[&str]| {
        let json = dir.path().join("r.json");
        let mut args = vec![
            "run",
            target.to_str().unwrap(),
            "--job",
            job.to_str().unwrap(),
            "-q",
            "--json",
            json.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let out = Bin(BIN).run(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let doc = read_json(&json);
        let phase = doc["phases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["kind"] == "run")
            .unwrap()
            .clone();
        let read = phase["by_op"]["read"]["bytes"].as_f64().unwrap();
        let disks: f64 = doc["hosts"][0]["samples"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|s| {
                let secs = s["duration_ns"].as_f64().unwrap_or(0.0) / 1e9;
                s["disks"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(move |(_, d)| d["read_bytes_per_s"].as_f64().unwrap_or(0.0) * secs)
            })
            .sum();
        (read, disks, doc["spec"]["jobs"][0]["invalidate"].clone())
    };
    let (read, disks, said) = run(&[]);
    if disks == 0.0 {
        // No block device under the test's directory (tmpfs, an overlay): nothing to count.
        stormark_testkit::skip(
            "a_fio_job_files_buffered_passes_each_start_with_a_cold_cache",
            "no disk statistics for the test directory's device",
        );
        return;
    }
    eprintln!("each pass: job read {read:.0}, disks {disks:.0} bytes");
    assert_eq!(said, "pass");
    assert!(read > (64 << 20) as f64, "{read}: more than a few passes");
    assert!(disks > 0.5 * read, "job read {read}, disks {disks}");
    let (read, disks, said) = run(&["--invalidate", "1"]);
    eprintln!("once: job read {read:.0}, disks {disks:.0} bytes");
    assert_eq!(said, "1");
    assert!(disks < 0.25 * read, "job read {read}, disks {disks}");
}

/// Issue 31: fio's `offset` and `offset_increment` on one file: each clone writes its own
/// region and nothing else (the file's other bytes stay zero); a region past the file's end
/// is refused before any load, naming the offset.
#[test]
fn offsets_give_each_clone_its_region_of_one_file() {
    let dir = temp_dir(TMP);
    let file = dir.path().join("f");
    std::fs::write(&file, vec![0u8; 16 << 20]).unwrap();
    let fio = dir.path().join("regions.fio");
    let job = |offset: &str| {
        format!(
            "[global]\nfilename={}\nsize=2m\nbs=64k\n[w]\nrw=write\nnumjobs=2\noffset={offset}\noffset_increment=6m\n",
            file.display()
        )
    };
    let run = |offset: &str| {
        std::fs::write(&fio, job(offset)).unwrap();
        Bin(BIN).run(&[
            "run",
            "--job",
            fio.to_str().unwrap(),
            "--allow-overwrite",
            "-q",
        ])
    };
    let out = run("4m");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let data = std::fs::read(&file).unwrap();
    let written: Vec<usize> = (0..16)
        .filter(|m| data[m << 20..(m + 1) << 20].iter().any(|&b| b != 0))
        .collect();
    assert_eq!(written, [4, 5, 10, 11], "MiB written");
    // The second clone's region would start at 16 MiB, the file's end.
    let out = run("10m");
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    assert!(
        said.contains("--offset 10") && said.contains("past the end"),
        "{said}"
    );
}

/// Issue 31: job files as third parties write them (tests/fio/corpus: the shapes of 62
/// public job files from 30 repositories other than fio's, see its README.md), each handed
/// to stormark as a user would: the recorded verdict holds (those that run, run for 200 ms
/// with exit 0 and leave nothing behind; the refused stop with one line before any load),
/// and at least nine in ten run as written.
#[test]
fn third_party_job_files_keep_their_verdicts() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fio/corpus");
    let lines: Vec<String> = std::fs::read_to_string(corpus.join("VERDICTS"))
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    let mut files: Vec<String> = std::fs::read_dir(&corpus)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".fio"))
        .collect();
    files.sort();
    let listed: Vec<String> = lines
        .iter()
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect();
    assert_eq!(files, listed, "every file has a verdict, in order");
    let dir = temp_dir(TMP);
    let scratch = dir.path().join("d");
    std::fs::create_dir(&scratch).unwrap();
    // A device of the original: a sparse file as large as a small disk.
    let device = dir.path().join("device");
    std::fs::File::create(&device)
        .unwrap()
        .set_len(256 << 30)
        .unwrap();
    let mut differ = Vec::new();
    let mut runs = 0;
    for line in &lines {
        let mut words = line.split(' ');
        let (name, verdict, target) = (
            words.next().unwrap(),
            words.next().unwrap(),
            words.next().unwrap(),
        );
        let (flags, vars): (Vec<&str>, Vec<&str>) = words.partition(|w| w.starts_with("--"));
        let target = if target == "device" {
            &device
        } else {
            &scratch
        };
        let mut args = vec![
            "run".to_string(),
            target.display().to_string(),
            "--job".into(),
            corpus.join(name).display().to_string(),
            "--allow-overwrite".into(),
            "-q".into(),
        ];
        // The harness's flags, any of them replaced by the file's own (--size=128m).
        for (flag, value) in [
            ("--size", "16m"),
            ("--time", "200ms"),
            ("--ramp", "0"),
            ("--startdelay", "0"),
        ] {
            let own = flags
                .iter()
                .find_map(|f| f.strip_prefix(&format!("{flag}=")));
            args.push(format!("{flag}={}", own.unwrap_or(value)));
        }
        args.extend(
            flags
                .iter()
                .filter(|f| {
                    !["--size=", "--time=", "--ramp=", "--startdelay="]
                        .iter()
                        .any(|d| f.starts_with(d))
                })
                .map(|f| f.to_string()),
        );
        let out = std::process::Command::new(BIN)
            .args(&args)
            .envs(vars.iter().filter_map(|v| v.split_once('=')))
            .output()
            .unwrap();
        let said = text(&out);
        let got = match out.status.code() {
            Some(0) => "runs",
            Some(2) => {
                assert_eq!(said.trim().lines().count(), 1, "{name}: {said}");
                "refused"
            }
            other => panic!("{name}: exit {other:?}: {said}"),
        };
        runs += usize::from(got == "runs");
        if got != verdict {
            differ.push(format!("{name}: {got}, recorded {verdict}: {said}"));
        }
        assert_eq!(
            std::fs::read_dir(&scratch).unwrap().count(),
            0,
            "{name} left files behind"
        );
    }
    assert!(
        differ.is_empty(),
        "verdicts changed (update VERDICTS if for the better): {differ:#?}"
    );
    assert!(
        runs * 10 >= lines.len() * 9,
        "{runs} of {} run",
        lines.len()
    );
}

/// Issue 31: fio's `rw=trim` on a file: a hole punched in each block of the job's range (the
/// file's length kept, its other bytes untouched), counted as `trim` operations; with
/// `trimwrite` each block written again after its trim. A user's file needs
/// `--allow-overwrite`, as a write does.
#[test]
fn a_trim_punches_holes_in_a_file() {
    let dir = temp_dir(TMP);
    let file = dir.path().join("f");
    let json = dir.path().join("r.json");
    let fio = dir.path().join("trim.fio");
    let run = |rw: &str, extra: &[&str]| {
        std::fs::write(&file, vec![0xabu8; 2 << 20]).unwrap();
        std::fs::write(
            &fio,
            format!(
                "[t]\nfilename={}\nrw={rw}\nbs=64k\nsize=1m\n",
                file.display()
            ),
        )
        .unwrap();
        let mut a = vec!["run", "--job", fio.to_str().unwrap(), "-q"];
        a.extend_from_slice(extra);
        a.extend_from_slice(&["--json", json.to_str().unwrap()]);
        let out = Bin(BIN).run(&a);
        (out.status.code(), text(&out))
    };
    let (code, said) = run("trim", &[]);
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("--allow-overwrite"), "{said}");
    let (code, said) = run("trim", &["--allow-overwrite"]);
    assert_eq!(code, Some(0), "{said}");
    let r = read_json(&json);
    assert_eq!(
        r["phases"][0]["by_op"]["trim"]["ops"], 16,
        "{}",
        r["phases"][0]
    );
    let data = std::fs::read(&file).unwrap();
    assert_eq!(data.len(), 2 << 20, "the length is kept");
    assert!(data[..1 << 20].iter().all(|&b| b == 0), "holes read zeros");
    assert!(
        data[1 << 20..].iter().all(|&b| b == 0xab),
        "the rest is kept"
    );
    // trimwrite: each block trimmed, then written again.
    let (code, said) = run("trimwrite", &["--allow-overwrite"]);
    assert_eq!(code, Some(0), "{said}");
    let r = read_json(&json);
    let by_op = &r["phases"][0]["by_op"];
    assert_eq!(
        (
            by_op["trim"]["ops"].as_u64(),
            by_op["write"]["ops"].as_u64()
        ),
        (Some(16), Some(16)),
        "{by_op}"
    );
    let data = std::fs::read(&file).unwrap();
    assert!(
        data[..1 << 20]
            .chunks(4096)
            .all(|c| c.iter().any(|&b| b != 0 && b != 0xab)),
        "written again"
    );
}

/// Issue 31: jobs on different files of one directory, as fio's `directory=` with a
/// `filename=` per job: each job's file is made (in the run directory), its clones share it
/// each in their region, another job names another file; both are removed at the end. A
/// `--verify` job sharing its file with another writer is refused before any load.
#[test]
fn jobs_on_different_files_share_each_file_by_name() {
    let dir = temp_dir(TMP);
    let t = dir.path().join("t");
    std::fs::create_dir(&t).unwrap();
    let fio = dir.path().join("files.fio");
    std::fs::write(
        &fio,
        format!(
            "[global]\ndirectory={}\nbs=64k\nrw=write\n\n[halves]\nfilename=shared\nnumjobs=2\nsize=2m\noffset_increment=2m\nbuffer_pattern=0xab\n\n[other]\nfilename=other\nsize=1m\nbuffer_pattern=0xcd\n",
            t.display()
        ),
    )
    .unwrap();
    let json = dir.path().join("r.json");
    let args = |extra: &[&str]| {
        let mut a = vec![
            "run".to_string(),
            fio.display().to_string(),
            "-q".into(),
            "--json".into(),
            json.display().to_string(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let run = |extra: &[&str]| {
        let out = Bin(BIN).run(&args(extra).iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    };
    run(&["--keep"]);
    let r = read_json(&json);
    let phase = stormark_testkit::phase(&r, "run");
    // 2 clones x 2 MiB and 1 MiB, in 64 KiB writes.
    assert_eq!(phase["by_op"]["write"]["ops"], 80, "{phase}");
    let run_dir = std::fs::read_dir(&t)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let shared = std::fs::read(run_dir.join("shared")).unwrap();
    assert_eq!(shared.len(), 4 << 20);
    assert!(shared.iter().all(|&b| b == 0xab), "both halves written");
    let other = std::fs::read(run_dir.join("other")).unwrap();
    assert_eq!(other.len(), 1 << 20);
    assert!(other.iter().all(|&b| b == 0xcd));
    std::fs::remove_dir_all(&run_dir).unwrap();
    run(&[]);
    assert!(
        std::fs::read_dir(&t).unwrap().next().is_none(),
        "cleaned up"
    );
    // A verifying job writing the file another job writes: one line, exit 2.
    let out = Bin(BIN).run(
        &args(&["--verify"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("--verify on its file shared"), "{said}");
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    assert!(std::fs::read_dir(&t).unwrap().next().is_none());
}

/// Issue 31: fio's `exitall` and `exit_what`: a job that ends (its count of I/Os done) stops
/// the job running with it (which alone would run 30 s), said in a note; after a job with
/// `exit_what=all`, no later job runs. fio's `ratemin` (`rate_iops_min`): a worker whose
/// measured second falls below it fails the run (exit 1) naming the least; one above runs.
#[test]
fn exitall_and_ratemin_as_fio_runs_them() {
    let dir = temp_dir(TMP);
    let t = dir.path().join("t");
    std::fs::create_dir(&t).unwrap();
    let fio = dir.path().join("exit.fio");
    std::fs::write(
        &fio,
        "[global]\nbs=4k\nsize=4m\nexitall=1\n[short]\nrw=read\nnumber_ios=200\n[long]\nrw=randread\nruntime=30\ntime_based\n[after]\nstonewall\nexit_what=all\nrw=read\nruntime=1\ntime_based\n[never]\nstonewall\nrw=read\nruntime=1\ntime_based\n",
    )
    .unwrap();
    let json = dir.path().join("r.json");
    let args = |job: &Path, extra: &[&str]| {
        let mut a = vec![
            "run".to_string(),
            t.display().to_string(),
            "--job".into(),
            job.display().to_string(),
            "-q".into(),
            "--json".into(),
            json.display().to_string(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        Bin(BIN).run(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let out = args(&fio, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = read_json(&json);
    let runs: Vec<&serde_json::Value> = r["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "run")
        .collect();
    assert_eq!(runs.len(), 2, "never did not run");
    // `long` stopped with `short`, long before its 30 s.
    let ns = runs[0]["duration_ns"].as_u64().unwrap();
    assert!(ns < 20_000_000_000, "{ns}");
    assert_eq!(
        runs[0]["by_job"]["short"]["by_op"]["read"]["ops"], 200,
        "{}",
        runs[0]["by_job"]
    );
    let notes = r["notes"].to_string();
    assert!(notes.contains("job short: a worker ended"), "{notes}");
    assert!(notes.contains("not run: never"), "{notes}");
    // 20 I/Os a second against a least of 100: the first whole second fails the run.
    let rate = dir.path().join("rate.fio");
    std::fs::write(
        &rate,
        "[slow]\nrw=randread\nbs=4k\nsize=4m\nrate_iops=20\nrate_iops_min=100\nruntime=4\ntime_based\n",
    )
    .unwrap();
    let out = args(&rate, &[]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("below the least of 100 (rate_iops_min)"),
        "{said}"
    );
    assert!(read_json(&json)["status"] != "ok");
    // Above it: runs.
    let out = args(&rate, &["--rate-iops-min", "5"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        std::fs::read_dir(&t).unwrap().next().is_none(),
        "cleaned up"
    );
}

/// Issue 31: fio's `cpus_allowed` with `cpus_allowed_policy=split`, `numa_*`, `nice`, `prio`
/// and `prioclass`: each worker thread runs on its own CPU of the list at that nice and I/O
/// priority, as the kernel says of it while the run goes on (`/proc/PID/task/TID/status` and
/// `stat`, `ionice -p`); a CPU or node this host lacks is refused before any load.
#[test]
fn workers_run_on_the_cpus_allowed() {
    let dir = temp_dir(TMP);
    let t = dir.path().join("t");
    std::fs::create_dir(&t).unwrap();
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let cpus = stormark_spec::CpuList::parse(&online).unwrap().0;
    let fio = dir.path().join("pin.fio");
    std::fs::write(
        &fio,
        format!(
            "[pinned]\nioengine=null\nrw=randread\nsize=4m\nnumjobs=2\ncpus_allowed={}\ncpus_allowed_policy=split\nnuma_cpu_nodes=0\nnuma_mem_policy=local\nnice=5\nprioclass=2\nprio=6\nruntime=4\ntime_based\nrate_iops=100\n",
            online.trim()
        ),
    )
    .unwrap();
    let mut child = std::process::Command::new(BIN)
        .args([
            "run",
            t.to_str().unwrap(),
            "--job",
            fio.to_str().unwrap(),
            "-q",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Each worker's thread, as the kernel has it, once both run.
    let mut seen = std::collections::BTreeMap::new();
    for _ in 0..60 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", child.id())) else {
            break;
        };
        for task in tasks.flatten() {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            let Some(w) = comm.trim().strip_prefix("stormark-w") else {
                continue;
            };
            let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
            let Some(l) = status.lines().find(|l| l.starts_with("Cpus_allowed_list:")) else {
                continue;
            };
            // Its nice (field 19 of stat, after the command's parentheses) and I/O priority.
            let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
            let nice = stat
                .rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().nth(16))
                .unwrap_or("")
                .to_string();
            let tid = task.file_name().into_string().unwrap();
            let io = std::process::Command::new("ionice")
                .args(["-p", &tid])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .unwrap_or_default();
            seen.insert(
                w.to_string(),
                format!("{} nice {nice} {io}", l.split(':').nth(1).unwrap().trim()),
            );
        }
        if seen.len() == 2 {
            break;
        }
    }
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let want: std::collections::BTreeMap<String, String> = (0..2)
        .map(|w| {
            (
                w.to_string(),
                format!("{} nice 5 best-effort: prio 6", cpus[w % cpus.len()]),
            )
        })
        .collect();
    assert_eq!(seen, want);
    // A CPU this host does not have: one line, exit 2.
    let out = Bin(BIN).run(&[
        "run",
        t.to_str().unwrap(),
        "--job",
        fio.to_str().unwrap(),
        "--cpus-allowed",
        "1000",
    ]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("cpus_allowed names CPU 1000"), "{said}");
    assert_eq!(said.trim().lines().count(), 1, "{said}");
}

/// Issue 31: fio's `flow`: two jobs of weights 1 and 3 in one flow do their I/Os 1 to 3, on
/// psync and io_uring alike, counted in the results (the slower job's pace sets the other's).
#[test]
fn flow_shares_the_ios_by_weight() {
    let dir = temp_dir(TMP);
    let t = dir.path().join("t");
    std::fs::create_dir(&t).unwrap();
    let fio = dir.path().join("flow.fio");
    std::fs::write(
        &fio,
        "[global]\nbs=4k\nsize=4m\nruntime=2\ntime_based\n[light]\nrw=randwrite\nflow=1\n[heavy]\nrw=randread\nflow=3\nflow_sleep=100\n",
    )
    .unwrap();
    let json = dir.path().join("r.json");
    for engine in ["psync", "io_uring"] {
        let out = Bin(BIN).run(&[
            "run",
            t.to_str().unwrap(),
            "--job",
            fio.to_str().unwrap(),
            "--engine",
            engine,
            "--iodepth",
            "8",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let r = read_json(&json);
        let p = stormark_testkit::phase(&r, "run");
        let ops = |j: &str| p["by_job"][j]["total"]["ops"].as_f64().unwrap();
        let ratio = ops("heavy") / ops("light");
        assert!(ops("light") > 100.0, "{engine}: {}", p["by_job"]);
        assert!((ratio - 3.0).abs() < 0.1, "{engine}: {ratio}");
    }
}

/// Issue 31: each new option's mistake is one line naming it and its accepted form, exit 2,
/// before any load.
#[test]
fn the_new_options_mistakes_are_one_line_and_exit_2() {
    let dir = temp_dir(TMP);
    for (flag, value) in [
        ("--filename", "../escape"),
        ("--flow", "0"),
        ("--exit-what", "never"),
        ("--rate-min", "fast"),
        ("--rate-iops-min", "0,0"),
        ("--cpus-allowed", "3-1"),
        ("--cpus-allowed-policy", "spread"),
        ("--numa-mem-policy", "bind"),
        ("--nice", "40"),
        ("--prioclass", "7"),
        ("--random-map", "maybe"),
        ("--random-sequence-stride", "2"),
        ("--random-distribution", "sequence:1,x"),
        ("--steady-state", "iops_slope:1"),
    ] {
        let out = Bin(BIN).run(&[
            "run",
            dir.path().to_str().unwrap(),
            "--engine",
            "null",
            "--time",
            "1s",
            flag,
            value,
        ]);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {said}");
        assert_eq!(said.trim().lines().count(), 1, "{flag} {value}: {said}");
        assert!(said.contains("expected"), "{flag} {value}: {said}");
    }
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
}
