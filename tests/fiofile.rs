//! Issue 22: fio job files run as they are (`stormark run FILE.fio`, `--job FILE.fio`), an
//! option stormark does not run refused with its line (or left out with `--lenient`), and
//! `--print-fio` writing the fio job file of a run, which reads back as the same workload.

use std::path::Path;

use stormark_testkit::{measured_again, read_json, temp_dir, text, Bin};

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
        "[global]\nlockmem=1m\n[j]\nrw=randread\nsize=4m\nruntime=1\ncgroup=bench\n",
    )
    .unwrap();
    let out = Bin(BIN).run(&["run", t.to_str().unwrap(), "--job", fio.to_str().unwrap()]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("line 2: lockmem") && said.contains("line 7: cgroup"),
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
            .contains("left out (--lenient): line 2: lockmem, line 7: cgroup")),
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
    for line in ["line 4: iomem", "line 10: lockmem", "line 11: cgroup"] {
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

/// Issue 31: the page cache as fio leaves it. A buffered time_based job reads its file again
/// and again; fio drops the file's pages before each pass (invalidate=1), so its reads reach
/// the disk, where dropping them once leaves every pass after the first to the cache. Ground
/// truth is the disk's own count (/proc/diskstats, in the host's samples): with `pass` (what
/// a fio job file runs with) the disk reads about what the job read; with `1` (once) only the
/// file's 16 MiB; and a stream going backwards, which fio never drops, only about the file.
#[test]
fn a_fio_job_files_buffered_passes_each_start_with_a_cold_cache() {
    let dir = temp_dir(TMP);
    let target = dir.path().join("t");
    std::fs::create_dir(&target).unwrap();
    let job = dir.path().join("seq.fio");
    // (what the job read, what the disks read), bytes, of the job reading `rw`.
    let run = |rw: &str, extra: &[&str]| {
        std::fs::write(
            &job,
            format!("[seq]\nrw={rw}\nbs=64k\nsize=16m\nioengine=psync\ntime_based\nruntime=3\n"),
        )
        .unwrap();
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
    let (read, disks, said) = run("read", &[]);
    if disks == 0.0 {
        // No block device under the test's directory (tmpfs, an overlay): nothing to count.
        stormark_testkit::skip(
            "a_fio_job_files_buffered_passes_each_start_with_a_cold_cache",
            "no disk statistics for the test directory's device",
        );
        return;
    }
    assert_eq!(said, "pass");
    // Each check measured again when a loaded machine spoils it: a pass short of CPU reads
    // less, and the host's page-out can evict a cached file between passes.
    let mut first = Some((read, disks));
    measured_again("each pass from the disk", 3, || {
        let (read, disks) = first.take().unwrap_or_else(|| {
            let (r, d, _) = run("read", &[]);
            (r, d)
        });
        eprintln!("each pass: job read {read:.0}, disks {disks:.0} bytes");
        if read <= (64 << 20) as f64 {
            return Err(format!("{read}: not more than a few passes"));
        }
        if disks <= 0.5 * read {
            return Err(format!("job read {read}, disks {disks}"));
        }
        Ok(())
    });
    measured_again("once from the disk (--invalidate 1)", 3, || {
        let (read, disks, said) = run("read", &["--invalidate", "1"]);
        eprintln!("once: job read {read:.0}, disks {disks:.0} bytes");
        assert_eq!(said, "1");
        if disks >= 0.25 * read {
            return Err(format!("job read {read}, disks {disks}"));
        }
        Ok(())
    });
    // Going backwards (fio's read:-128k after 64 KiB reads), fio's stream wraps at the start
    // and never passes the end, where fio drops the file: the cache keeps it after the
    // first pass, in both tools.
    measured_again("backwards, once from the disk", 3, || {
        let (read, disks, said) = run("read:-128k", &[]);
        eprintln!("backwards: job read {read:.0}, disks {disks:.0} bytes");
        assert_eq!(said, "pass");
        if read <= (64 << 20) as f64 {
            return Err(format!("{read}: not more than a few passes"));
        }
        if disks >= 0.25 * read {
            return Err(format!("job read {read}, disks {disks}"));
        }
        Ok(())
    });
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

/// Issue 31: fio's `cross-stripe-verify` on one file: clones checking what they write each
/// in a region of its own (`offset_increment` past the size each writes) run, every stripe in
/// its region from the region's start and nothing written between; regions that overlap are
/// refused in one line, exit 2, before any load.
#[test]
fn verifying_clones_on_one_file_each_keep_a_region_of_their_own() {
    let dir = temp_dir(TMP);
    let file = dir.path().join("data");
    let mb = 1 << 20;
    std::fs::write(&file, vec![0xabu8; 16 * mb]).unwrap();
    let job = |inc: &str| {
        let fio = dir.path().join(format!("cs-{inc}.fio"));
        std::fs::write(
            &fio,
            format!(
                "[global]\nbs=16k\ndirect=1\nrw=write:112k\nverify=crc32c\nfilename={}\nverify_backlog=1\noffset_increment={inc}\nsize=4m\noffset=120k\nloops=2\n\n[write-verify]\nnumjobs=3\n",
                file.display()
            ),
        )
        .unwrap();
        Bin(BIN).run(&["run", fio.to_str().unwrap(), "--allow-overwrite", "-q"])
    };
    let out = job("2m");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("regions apart"), "{said}");
    assert_eq!(said.trim().lines().count(), 1, "{said}");

    let out = job("4m");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let data = std::fs::read(&file).unwrap();
    let header = |at: usize| {
        let b = &data[at..at + 24];
        (&b[0..8] == b"STMKVRFY").then(|| u64::from_le_bytes(b[16..24].try_into().unwrap()))
    };
    for clone in 0..3 {
        let start = 120 * 1024 + clone * 4 * mb;
        // Each stripe's header holds its offset in the clone's own region.
        for stripe in [0, 1, 31] {
            let at = start + stripe * 128 * 1024;
            assert_eq!(
                header(at),
                Some((stripe * 128 * 1024) as u64),
                "clone {clone} stripe {stripe}"
            );
            // The 112 KiB after each stripe are not written.
            assert!(data[at + 16 * 1024..at + 128 * 1024]
                .iter()
                .all(|&b| b == 0xab));
        }
    }
    assert!(
        data[..120 * 1024].iter().all(|&b| b == 0xab),
        "before the first region"
    );
}

/// Issue 54: `--print-fio` of an iSCSI LUN wrote `directory=iscsi://...` with io_uring, a job
/// fio would run on a directory of that name: a LUN or an NFS share is refused in one line
/// naming fio's own form for it, exit 2.
#[test]
fn print_fio_of_a_lun_or_a_share_is_refused_with_fios_form() {
    let cases = [
        (
            "iscsi://192.0.2.10/iqn.2003-01.org.example:disk1/1",
            "ioengine=libiscsi",
        ),
        ("nfs://192.0.2.10/export/bench", "ioengine=nfs"),
    ];
    for (target, form) in cases {
        let out = Bin(BIN).run(&["run", target, "--rw", "randread", "--print-fio"]);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{target}: {said}");
        assert_eq!(said.trim().lines().count(), 1, "{target}: {said}");
        assert!(said.contains(form), "{target}: {said}");
        assert!(!said.contains("directory="), "{target}: {said}");
    }
}

/// Issue 55: a fio job file runs as one whatever its name (`job.ini` as the TARGET, `--job
/// fio.cfg`), as fio takes it; a file of that shape given with flags that say what to run on
/// it is a file to measure, and a `.toml` stays stormark's.
#[test]
fn fio_job_files_run_under_any_name() {
    let dir = temp_dir(TMP);
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let job = format!(
        "; a vendor's kit\n[global]\ndirectory={}\nsize=1m\nruntime=1\ntime_based\n[r]\nrw=read\n",
        data.display()
    );
    let json = dir.path().join("r.json");
    let ran = |args: &[&str]| {
        let mut all = vec!["run"];
        all.extend(args);
        all.extend(["-q", "--json", json.to_str().unwrap()]);
        let out = Bin(BIN).run(&all);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {said}");
        read_json(&json)
    };
    let reads = |doc: &serde_json::Value| {
        doc["phases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["kind"] == "run")
            .map_or(0, |p| p["by_op"]["read"]["ops"].as_u64().unwrap_or(0))
    };
    for name in ["job.ini", "fio.cfg", "bench.job"] {
        let f = dir.path().join(name);
        std::fs::write(&f, &job).unwrap();
        // As the TARGET, and with --job: the job file's own directory is measured.
        for args in [
            vec![f.to_str().unwrap()],
            vec!["--job", f.to_str().unwrap()],
        ] {
            let doc = ran(&args);
            assert!(reads(&doc) > 0, "{name} {args:?}: {}", doc["phases"]);
            assert_eq!(doc["spec"]["jobs"][0]["rw"], "read", "{name}");
            assert!(
                doc["target"]["path"].as_str().unwrap().ends_with("/data"),
                "{name}: {}",
                doc["target"]
            );
        }
        assert_eq!(
            std::fs::read_to_string(&f).unwrap(),
            job,
            "{name} was written"
        );
    }
    // The same shape with flags that say what to run: the file itself is read.
    let f = dir.path().join("looks.ini");
    std::fs::write(&f, job.repeat(200)).unwrap();
    let doc = ran(&[
        f.to_str().unwrap(),
        "--rw",
        "read",
        "--bs",
        "4k",
        "--time",
        "1s",
    ]);
    assert!(
        doc["target"]["path"]
            .as_str()
            .unwrap()
            .ends_with("looks.ini"),
        "{}",
        doc["target"]
    );
    // A .toml is stormark's TOML, whatever it holds.
    let t = dir.path().join("kit.toml");
    std::fs::write(&t, &job).unwrap();
    let out = Bin(BIN).run(&["run", "--job", t.to_str().unwrap(), "-q"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

/// fio's `offset=N%` on a directory's files (a held-out corpus's job, issue 55): each file's
/// region starts at that share of its size and runs to its end, as fio takes it: a pass of
/// a 1 MiB file from 50% reads 512 KiB (128 reads of 4 KiB), from 0% all 256; the files
/// stay whole (1 MiB each).
#[test]
fn a_share_offset_applies_to_each_of_a_directorys_files() {
    let dir = temp_dir(TMP);
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let reads = |offset: &str| {
        let job = dir.path().join("share.ini");
        std::fs::write(
            &job,
            format!(
                "[global]\ndirectory={}\nsize=1m\nbs=4k\nnumjobs=2\n\n[r]\nrw=read\n{offset}\n",
                data.display()
            ),
        )
        .unwrap();
        let json = dir.path().join("r.json");
        let out = std::process::Command::new(BIN)
            .args(["run", "--job"])
            .arg(&job)
            .arg("--json")
            .arg(&json)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let doc = read_json(&json);
        assert!(
            !doc["notes"].to_string().contains("used from their start"),
            "{}",
            doc["notes"]
        );
        doc["phases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["kind"] == "run")
            .map(|p| p["by_op"]["read"]["ops"].as_u64().unwrap_or(0))
            .sum::<u64>()
    };
    assert_eq!(reads("offset=50%"), 2 * 128);
    assert_eq!(reads("offset=0%"), 2 * 256);
    // A share that leaves less than a block is refused in one line.
    let job = dir.path().join("share.ini");
    std::fs::write(
        &job,
        format!(
            "[global]\ndirectory={}\nsize=64k\nbsrange=4k-64k\n\n[r]\nrw=read\noffset=90%\n",
            data.display()
        ),
    )
    .unwrap();
    let out = std::process::Command::new(BIN)
        .args(["run", "--job"])
        .arg(&job)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("less than one block"), "{}", text(&out));
}
