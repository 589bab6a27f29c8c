//! Issue 22: fio job files run as they are (`stormark run FILE.fio`, `--job FILE.fio`), an
//! option stormark does not run refused with its line (or left out with `--lenient`), and
//! `--print-fio` writing the fio job file of a run, which reads back as the same workload.

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
        "[global]\ncpus_allowed=0\n[j]\nrw=randread\nsize=4m\nruntime=1\nexitall_on_error\n",
    )
    .unwrap();
    let out = Bin(BIN).run(&["run", t.to_str().unwrap(), "--job", fio.to_str().unwrap()]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("line 2: cpus_allowed") && said.contains("line 7: exitall_on_error"),
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
            .contains("left out (--lenient): line 2: cpus_allowed, line 7: exitall_on_error")),
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
    let strip = |r: &serde_json::Value| {
        let mut j = r["spec"]["jobs"][0].clone();
        j.as_object_mut().unwrap().remove("name");
        j.as_object_mut().unwrap().remove("group");
        j
    };
    assert_eq!(strip(&a), strip(&b), "{printed}");
}
