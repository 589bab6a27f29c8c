//! Issue 31: fio's options of how a job file's jobs run, end to end: trims on files, jobs sharing
//! files by name, `exitall`, CPU and NUMA placement, `flow`, and each option's mistakes.

use std::path::Path;

use stormark_testkit::{read_json, temp_dir, text, Bin};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

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
    // Above it: runs. A least of 1 a second: on a loaded machine a second of 20 planned
    // I/Os once did 2 (a least of 5 failed it, issue 53); a whole second with none is a stall.
    let out = args(&rate, &["--rate-iops-min", "1"]);
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
    // Each worker's thread, as the kernel has it, once both run (looked for up to two
    // minutes: on a loaded machine the start alone has taken more than the 6 s once allowed).
    let mut seen = std::collections::BTreeMap::new();
    for _ in 0..1200 {
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
