//! Issue 60, IOR's side: `--ior`, write then read in one run, fresh allocating writes, a
//! written file kept as prepared.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde_json::Value;
use stormark_testkit::{phase, temp_dir, Bin, TempDir};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");
const SM: Bin = Bin(BIN);

fn target(dir: &TempDir) -> PathBuf {
    let t = dir.path().join("target");
    std::fs::create_dir_all(&t).unwrap();
    t
}

fn names(r: &Value) -> Vec<String> {
    r["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect()
}

fn bytes(p: &Value, op: &str) -> u64 {
    p["by_op"][op]["bytes"].as_u64().unwrap_or(0)
}

#[test]
fn ior_write_then_read_runs_both_stages_on_the_same_files_in_one_run() {
    let dir = temp_dir(TMP);
    let t = target(&dir);
    let (code, r, out) = SM.run_json(
        &dir,
        &[
            t.to_str().unwrap(),
            "--ior",
            "-a POSIX -t 1m -b 64m -F -w -r -N 2",
            "--quiet",
        ],
    );
    assert_eq!(code, 0, "{out}");
    // No preparation: the read stage reads what the write stage wrote.
    assert_eq!(names(&r), ["run:write", "run:read"], "{out}");
    let (w, rd) = (phase(&r, "run:write"), phase(&r, "run:read"));
    assert_eq!(
        bytes(w, "write"),
        2 * (64 << 20),
        "64 MiB per worker written"
    );
    assert_eq!(bytes(rd, "read"), 2 * (64 << 20), "64 MiB per worker read");
    assert_eq!(bytes(rd, "write"), 0);
    assert_eq!(w["jobs"][0]["engine"], "psync");
    assert_eq!(w["jobs"][0]["workers"], 2);
    // Each job as its keys in the results: the write fresh, as IOR's new files.
    let spec = r["spec"]["jobs"].to_string();
    assert!(spec.contains("fresh"), "{spec}");
    // -C: each worker reads the next one's file, still one run, still every byte.
    let (code, r, out) = SM.run_json(
        &dir,
        &[t.to_str().unwrap(), "--ior", "-t 1m -b 8m -F -w -r -C -N 3"],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(names(&r), ["run:write", "run:read"], "{out}");
    assert_eq!(bytes(phase(&r, "run:read"), "read"), 3 * (8 << 20));
    assert!(r["spec"]["jobs"].to_string().contains("file_shift"));
    // Nothing left behind without -k.
    assert_eq!(std::fs::read_dir(&t).unwrap().count(), 0);
}

#[test]
fn ior_options_stormark_does_not_run_are_refused_by_name_in_one_line() {
    let dir = temp_dir(TMP);
    let t = target(&dir);
    for (args, said) in [
        ("-a MPIIO -F", "-a MPIIO"),
        ("-F -c", "collective"),
        ("-F -q -X 4 -w", "-q, -X"),
    ] {
        let out = SM.run(&["run", t.to_str().unwrap(), "--ior", args]);
        assert_eq!(out.status.code(), Some(2), "{args}");
        let out = String::from_utf8_lossy(&out.stderr);
        let line = out.lines().find(|l| l.starts_with("error:")).unwrap_or("");
        assert!(line.contains(said), "{args}: {out}");
    }
    // An IOR script: a test at each RUN.
    let script = dir.path().join("two.ior");
    std::fs::write(
        &script,
        "IOR START\n  transferSize=1m\n  blockSize=4m\n  filePerProc=1\n  writeFile=1\n  readFile=1\nRUN\n  readFile=0\nRUN\nIOR STOP\n",
    )
    .unwrap();
    let args = format!("-f {}", script.display());
    let (code, r, out) = SM.run_json(&dir, &[t.to_str().unwrap(), "--ior", &args]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        names(&r),
        ["run:t1-write", "run:t1-read", "run:t2-write"],
        "{out}"
    );
}

#[test]
fn print_ior_gives_the_command_line_that_reads_back_as_the_run() {
    let dir = temp_dir(TMP);
    let t = target(&dir);
    let out = SM.run(&[
        "run",
        t.to_str().unwrap(),
        "--ior",
        "-t 1m -b 16m -F -w -r -N 2 -B",
        "--print-ior",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert_eq!(
        text.trim(),
        "-a POSIX -t 1m -b 16m -s 1 -F -w -r --posix.odirect -N 2"
    );
    let out = SM.run(&["run", t.to_str().unwrap(), "--rw", "randrw", "--print-ior"]);
    assert_eq!(out.status.code(), Some(2));
}

/// The blocks a file holds, in bytes.
fn allocated(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().blocks() * 512
}

#[test]
fn fresh_writes_start_from_empty_files_that_their_writes_allocate() {
    let dir = temp_dir(TMP);
    let t = target(&dir);
    // A fresh write cut by time: the file holds what was written, nothing reserved before.
    let run = |fresh: bool| {
        let mut args = vec![
            t.to_str().unwrap(),
            "--rw",
            "write",
            "--bs",
            "4k",
            "--size",
            "64m",
            "--time",
            "1s",
            "--rate-iops",
            "100",
            "--keep",
            "--quiet",
        ];
        if fresh {
            args.push("--fresh");
        }
        let (code, r, out) = SM.run_json(&dir, &args);
        assert_eq!(code, 0, "{out}");
        let run_dir = PathBuf::from(r["target"]["run_dir"].as_str().unwrap());
        let file = run_dir.join("j0.w0.f0");
        let written = bytes(phase(&r, "run"), "write");
        (
            std::fs::metadata(&file).unwrap().len(),
            allocated(&file),
            written,
        )
    };
    let (len, blocks, written) = run(true);
    assert!(written > 0 && written < 64 << 20);
    assert!(
        len <= written,
        "fresh: {len} bytes long after {written} written"
    );
    assert!(
        blocks < 64 << 20,
        "fresh: nothing reserved ({blocks} allocated)"
    );
    let (len, blocks, _) = run(false);
    assert_eq!(len, 64 << 20, "the default reserves the file's length");
    assert!(
        blocks >= 64 << 20,
        "the default reserves its blocks ({blocks})"
    );
    // Fresh on a job that reads, or on a file written in place, is refused before load.
    let out = SM.run(&["run", t.to_str().unwrap(), "--rw", "randrw", "--fresh"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("fresh"));
    let file = dir.path().join("user.dat");
    std::fs::write(&file, vec![1u8; 1 << 20]).unwrap();
    let (code, _, out) = SM.run_json(
        &dir,
        &[
            file.to_str().unwrap(),
            "--rw",
            "write",
            "--fresh",
            "--allow-overwrite",
        ],
    );
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("--fresh"), "{out}");
}

#[test]
fn a_file_a_run_wrote_in_full_is_reused_as_prepared() {
    let dir = temp_dir(TMP);
    let t = target(&dir);
    let (code, r, out) = SM.run_json(
        &dir,
        &[
            t.to_str().unwrap(),
            "--rw",
            "write",
            "--bs",
            "1m",
            "--size",
            "8m",
            "--keep",
            "--quiet",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let run_dir = r["target"]["run_dir"].as_str().unwrap().to_string();
    let manifest = std::fs::read_to_string(Path::new(&run_dir).join(".stormark-run.json")).unwrap();
    assert!(manifest.contains("\"prepared\": true"), "{manifest}");
    let (code, r, out) = SM.run_json(
        &dir,
        &[
            &run_dir, "--rw", "read", "--bs", "1m", "--size", "8m", "--reuse", "--quiet",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        names(&r),
        ["run"],
        "no preparation overwrites what was written"
    );
    assert_eq!(bytes(phase(&r, "run"), "read"), 8 << 20);
    // A write cut by time wrote part of the file: still unprepared, so a read is prepared.
    let (code, r, out) = SM.run_json(
        &dir,
        &[
            t.to_str().unwrap(),
            "--rw",
            "write",
            "--size",
            "8m",
            "--time",
            "1s",
            "--rate-iops",
            "10",
            "--keep",
            "--quiet",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let run_dir = r["target"]["run_dir"].as_str().unwrap().to_string();
    let manifest = std::fs::read_to_string(Path::new(&run_dir).join(".stormark-run.json")).unwrap();
    assert!(manifest.contains("\"prepared\": false"), "{manifest}");
}

#[test]
fn repetitions_give_the_summary_of_all_tests_and_each_phase_its_first_and_last_done() {
    let dir = temp_dir(TMP);
    let t = target(&dir);
    let (code, r, out) = SM.run_json(
        &dir,
        &[
            t.to_str().unwrap(),
            "--ior",
            "-t 1m -b 8m -F -w -r -N 2 -i 2",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("summary of all tests"), "{out}");
    assert!(out.contains("first done / last done"), "{out}");
    for p in r["phases"].as_array().unwrap() {
        let d = &p["done"];
        let (first, last) = (
            d["first"]["ns"].as_u64().unwrap(),
            d["last"]["ns"].as_u64().unwrap(),
        );
        assert!(0 < first && first <= last, "{d}");
        assert!(last <= p["duration_ns"].as_u64().unwrap(), "{p}");
        assert_eq!(d["time_bound"], false, "a size-bound phase");
    }
    let json = dir.path().join("r.json");
    let md = dir.path().join("r.md");
    let csv = dir.path().join("csv");
    let out = SM.run(&[
        "report",
        json.to_str().unwrap(),
        "--markdown",
        md.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let md = std::fs::read_to_string(md).unwrap();
    assert!(md.contains("## Summary of all tests"), "{md}");
    assert!(
        md.contains("| run:write (repetition 2) |"),
        "each repetition labelled: {md}"
    );
    let table = std::fs::read_to_string(csv.join("summary_table.csv")).unwrap();
    let rows: Vec<&str> = table.lines().collect();
    assert_eq!(rows.len(), 3, "{table}");
    assert!(
        rows[1].starts_with("run:write,write,write,1m,1,2,2,"),
        "{table}"
    );
    assert!(
        rows[2].starts_with("run:read,read,read,1m,1,2,2,"),
        "{table}"
    );
    // A time-bound phase: every worker ends at the time, so first/last done are n/a.
    let (code, r, out) = SM.run_json(
        &dir,
        &[
            t.to_str().unwrap(),
            "--rw",
            "read",
            "--size",
            "4m",
            "--time",
            "1s",
            "--jobs",
            "2",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(phase(&r, "run")["done"]["time_bound"], true);
    assert!(out.contains("n/a (time-bound)"), "{out}");
    // The phase's CPU, from the host's samples over it.
    assert!(
        phase(&r, "run")["cpu"]["busy_pct"].as_f64().is_some(),
        "{r}"
    );
}
