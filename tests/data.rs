//! Issue 21: synchronous writes measured on purpose. That `--fsync N`, `--fdatasync N` and
//! `--end-fsync` really issue their system calls is counted by strace (not assumed), and
//! `--sync dsync` is seen on the files' open flags; each sync's own latency is the operation
//! `sync`, apart from the writes. What is written: unique and incompressible by default, or
//! with the compression ratio real compressors find and the share of duplicate blocks asked.

use std::process::Command;

use stormark_testkit::{
    compression_ratio, read_json, require_tool, temp_dir, text, unique_blocks, Bin,
};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

/// `stormark run` under `strace -f -e trace=CALLS -o FILE`: the exit code, the document and
/// strace's record.
fn traced(
    dir: &stormark_testkit::TempDir,
    calls: &str,
    args: &[&str],
) -> (i32, serde_json::Value, String) {
    let target = dir.path().join("target");
    let _ = std::fs::create_dir(&target);
    let json = dir.path().join("r.json");
    let trace = dir.path().join("strace.txt");
    let out = Command::new("strace")
        .args(["-f", "-e"])
        .arg(format!("trace={calls}"))
        .arg("-o")
        .arg(&trace)
        .arg(BIN)
        .args([
            "run",
            target.to_str().unwrap(),
            "-q",
            "--json",
            json.to_str().unwrap(),
        ])
        .args(args)
        .output()
        .expect("running strace");
    let code = out.status.code().unwrap_or(-1);
    assert_eq!(code, 0, "{}", text(&out));
    (
        code,
        read_json(&json),
        std::fs::read_to_string(&trace).unwrap(),
    )
}

/// Successful calls of `call` in a strace record (a call another thread interrupted is
/// written in two lines; its `resumed` line says how it ended).
fn calls(trace: &str, call: &str) -> u64 {
    let (whole, resumed) = (format!(" {call}("), format!("<... {call} resumed>"));
    trace
        .lines()
        .filter(|l| (l.contains(&whole) || l.contains(&resumed)) && l.trim_end().ends_with("= 0"))
        .count() as u64
}

fn run_ops(doc: &serde_json::Value, op: &str) -> u64 {
    doc["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] == "run")
        .map(|p| p["by_op"][op]["ops"].as_u64().unwrap_or(0))
        .sum()
}

#[test]
fn fsync_every_n_writes_is_issued_and_timed_on_both_engines() {
    if !require_tool("fsync_every_n_writes_is_issued_and_timed", "strace") {
        return;
    }
    for engine in ["psync", "io_uring"] {
        let dir = temp_dir(TMP);
        let (_, doc, trace) = traced(
            &dir,
            "fsync,fdatasync",
            &[
                "--rw",
                "randwrite",
                "--bs",
                "4k",
                "--size",
                "8m",
                "--time",
                "2s",
            ],
        );
        // Without the options: no sync from the load (the run may sync its own files).
        assert_eq!(run_ops(&doc, "sync"), 0, "{engine}");
        let baseline = calls(&trace, "fsync");
        let dir = temp_dir(TMP);
        let (_, doc, trace) = traced(
            &dir,
            "fsync,fdatasync",
            &[
                "--rw",
                "randwrite",
                "--bs",
                "4k",
                "--size",
                "8m",
                "--time",
                "2s",
                "--engine",
                engine,
                "--fsync",
                "8",
                "--end-fsync",
            ],
        );
        let writes = run_ops(&doc, "write");
        let syncs = run_ops(&doc, "sync");
        // One every 8 writes, and one at the end for the one file.
        assert_eq!(syncs, writes / 8 + 1, "{engine}: {writes} writes");
        // The kernel saw them: strace counts at least these (and the run's own, as without).
        let seen = calls(&trace, "fsync");
        assert!(
            seen >= syncs + baseline.saturating_sub(2) && seen <= syncs + baseline + 2,
            "{engine}: strace saw {seen} fsyncs, the run recorded {syncs}, {baseline} without"
        );
        assert_eq!(calls(&trace, "fdatasync"), 0, "{engine}");
        // Timed apart from the writes, and left out of the totals.
        let run = doc["phases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "run")
            .unwrap();
        assert!(run["by_op"]["sync"]["latency_ns"]["p50"].as_u64().unwrap() > 0);
        assert_eq!(run["total"]["ops"].as_u64(), Some(writes), "{engine}");
    }
}

#[test]
fn fdatasync_every_n_writes_is_fdatasync() {
    if !require_tool("fdatasync_every_n_writes_is_fdatasync", "strace") {
        return;
    }
    let dir = temp_dir(TMP);
    let (_, doc, trace) = traced(
        &dir,
        "fsync,fdatasync",
        &[
            "--rw",
            "write",
            "--bs",
            "4k",
            "--size",
            "8m",
            "--time",
            "2s",
            "--engine",
            "psync",
            "--fdatasync",
            "4",
        ],
    );
    let (writes, syncs) = (run_ops(&doc, "write"), run_ops(&doc, "sync"));
    assert_eq!(syncs, writes / 4, "{writes} writes");
    assert_eq!(calls(&trace, "fdatasync"), syncs);
}

#[test]
fn sync_dsync_opens_the_files_with_o_dsync() {
    if !require_tool("sync_dsync_opens_the_files_with_o_dsync", "strace") {
        return;
    }
    for (mode, flag) in [("dsync", "O_DSYNC"), ("sync", "O_SYNC")] {
        let dir = temp_dir(TMP);
        let (_, _, trace) = traced(
            &dir,
            "openat,openat2",
            &[
                "--rw",
                "randwrite",
                "--bs",
                "4k",
                "--size",
                "4m",
                "--time",
                "1s",
                "--sync",
                mode,
            ],
        );
        // The worker's open of its file (j0.w0.f0), read-write with the flag.
        let open = trace
            .lines()
            .find(|l| l.contains("\"j0.w0.f0\"") && l.contains("O_RDWR") && !l.contains("O_CREAT"))
            .unwrap_or_else(|| panic!("no open of the file:\n{trace}"));
        assert!(open.contains(flag), "{mode}: {open}");
    }
}

#[test]
fn sync_mistakes_are_one_line_and_exit_2() {
    let dir = temp_dir(TMP);
    let d = dir.path().to_str().unwrap();
    for (args, want) in [
        (vec!["--fsync", "4", "--fdatasync", "4"], "not both"),
        (vec!["--sync", "later"], "none, dsync or sync"),
        (vec!["--fsync", "-1"], "a number of writes"),
    ] {
        let mut all = vec!["run", d, "--time", "1s"];
        all.extend(args.iter());
        let out = Bin(BIN).run(&all);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(said.contains(want), "{args:?}: {said}");
        assert_eq!(said.trim().lines().count(), 1, "{args:?}: {said}");
    }
}

/// A run that writes one file once, front to back, and keeps it: the file's bytes.
fn written(bs: &str, extra: &[&str]) -> Vec<u8> {
    let dir = temp_dir(TMP);
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let (code, doc, out) = Bin(BIN).run_json(
        &dir,
        &[
            &[
                target.to_str().unwrap(),
                "--rw",
                "write",
                "--bs",
                bs,
                "--size",
                "16m",
                "--io-total",
                "16m",
                "--keep",
                "-q",
            ][..],
            extra,
        ]
        .concat(),
    );
    assert_eq!(code, 0, "{out}");
    let run_dir = doc["target"]["run_dir"].as_str().unwrap();
    let data = std::fs::read(std::path::Path::new(run_dir).join("j0.w0.f0")).unwrap();
    std::fs::remove_dir_all(run_dir).unwrap();
    data
}

const COMPRESSORS: [&str; 3] = ["zstd", "lz4", "gzip"];

#[test]
fn every_written_block_is_unique_and_incompressible_unless_asked_otherwise() {
    for bs in ["4k", "1m"] {
        let data = written(bs, &[]);
        assert_eq!(data.len(), 16 << 20);
        // Every 4 KiB block differs from every other: a deduplicating target stores them all
        // (before issue 21, every write carried the same buffer: one unique block in a file).
        assert_eq!(unique_blocks(&data), 4096, "--bs {bs}");
        // And no compressor gains more than the stamps' few bytes: each write takes the next
        // region of a 4 MiB pool, past every compressor's window (before: gzip 76x on 4k
        // writes, which all carried one random fill).
        for c in COMPRESSORS {
            let ratio = compression_ratio(c, &data);
            eprintln!("--bs {bs}: {c} {ratio:.3}x");
            assert!((1.0..1.05).contains(&ratio), "--bs {bs}: {c} {ratio:.3}x");
        }
    }
    // --zero-buffers: zeros, the best case of such a target, as asked.
    let zeros = written("4k", &["--zero-buffers"]);
    assert_eq!(unique_blocks(&zeros), 1);
    assert!(zeros.iter().all(|&b| b == 0));
}

#[test]
fn compress_ratio_is_what_real_compressors_achieve_within_15_percent() {
    for c in COMPRESSORS {
        if !require_tool(
            "compress_ratio_is_what_real_compressors_achieve_within_15_percent",
            c,
        ) {
            return;
        }
    }
    for (ratio, bs, engine) in [
        ("2", "4k", "io_uring"),
        ("4", "64k", "psync"),
        ("1", "4k", "psync"),
    ] {
        // fio's form too, in a job file: buffer_compress_percentage = 50 is a ratio of 2.
        let dir = temp_dir(TMP);
        let job = dir.path().join("fio-keys.toml");
        std::fs::write(&job, "buffer_compress_percentage = 50\n[[job]]\n").unwrap();
        let args = if ratio == "2" {
            vec!["--engine", engine, "--job", job.to_str().unwrap()]
        } else {
            vec!["--engine", engine, "--compress-ratio", ratio]
        };
        let data = written(bs, &args);
        let want: f64 = ratio.parse().unwrap();
        for c in COMPRESSORS {
            let got = compression_ratio(c, &data);
            eprintln!("--compress-ratio {ratio} --bs {bs}: {c} {got:.3}x");
            assert!((got / want - 1.0).abs() <= 0.15, "{c}: {got:.3} for {want}");
        }
        // Compressible, still unique: a deduplicating target sees every block.
        assert_eq!(unique_blocks(&data), 4096);
    }
}

#[test]
fn dedup_ratio_is_the_share_of_duplicate_blocks_within_5_percent() {
    for (ratio, bs, extra) in [
        ("1.5", "4k", vec!["--engine", "io_uring", "--iodepth", "8"]),
        ("2", "64k", vec!["--dedup-block", "4k", "--engine", "psync"]),
        // fio's form: dedupe_percentage = 75 is a ratio of 4; with compression beside it.
        ("4", "16k", vec!["--compress-ratio", "2"]),
    ] {
        let dir = temp_dir(TMP);
        let job = dir.path().join("fio-keys.toml");
        std::fs::write(&job, "dedupe_percentage = 75\n[[job]]\n").unwrap();
        let mut args = extra.clone();
        if ratio == "4" {
            args.extend(["--job", job.to_str().unwrap()]);
        }
        if ratio != "4" {
            args.extend(["--dedup-ratio", ratio]);
        }
        let data = written(bs, &args);
        let block = if bs == "16k" { 16384 } else { 4096 };
        let blocks = data.len() / block;
        let unique = data
            .chunks(block)
            .collect::<std::collections::HashSet<_>>()
            .len();
        let got = blocks as f64 / unique as f64;
        let want: f64 = ratio.parse().unwrap();
        eprintln!("--dedup-ratio {ratio} --bs {bs}: {blocks} blocks, {unique} distinct: {got:.3}");
        assert!((got / want - 1.0).abs() <= 0.05, "{ratio} {bs}: {got:.3}");
    }
}

#[test]
fn data_mistakes_are_one_line_and_exit_2() {
    let dir = temp_dir(TMP);
    let d = dir.path().to_str().unwrap();
    for (args, want) in [
        (vec!["--compress-ratio", "0.5"], "a ratio from 1"),
        (vec!["--compress-ratio", "40"], "a ratio from 1"),
        (vec!["--dedup-ratio", "x"], "a ratio from 1"),
        (
            vec!["--dedup-ratio", "2", "--dedup-block", "1000"],
            "a multiple of 512",
        ),
        (
            vec!["--dedup-ratio", "2", "--dedup-block", "64k"],
            "no larger than",
        ),
        (vec!["--zero-buffers", "--compress-ratio", "2"], "not both"),
    ] {
        let mut all = vec!["run", d, "--time", "1s"];
        all.extend(args.iter());
        let out = Bin(BIN).run(&all);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(said.contains(want), "{args:?}: {said}");
        assert_eq!(said.trim().lines().count(), 1, "{args:?}: {said}");
    }
}

/// `stormark run ARGS --json` in `dir`: exit code, document, what it printed.
fn run_in(dir: &stormark_testkit::TempDir, args: &[&str]) -> (i32, serde_json::Value, String) {
    Bin(BIN).run_json(dir, args)
}

/// Writes a file with `--verify --keep` in `target`, writes it again over `--reuse`, plants
/// the four faults, and checks that `--verify-only` names each at its offset.
fn planted_faults_are_found(target: &std::path::Path) {
    let dir = temp_dir(TMP);
    let t = target.to_str().unwrap();
    let write = [
        "--rw", "write", "--bs", "4k", "--size", "4m", "--verify", "-q",
    ];
    let (code, doc, out) = run_in(&dir, &[&[t][..], &write, &["--keep"]].concat());
    assert_eq!(code, 0, "{out}");
    let run_dir = doc["target"]["run_dir"].as_str().unwrap().to_string();
    let file = std::path::Path::new(&run_dir).join("j0.w0.f0");
    let first = std::fs::read(&file).unwrap();
    // A second pass over the kept files: every block now holds a newer write.
    let (code, _, out) = run_in(&dir, &[&[run_dir.as_str(), "--reuse"][..], &write].concat());
    assert_eq!(code, 0, "{out}");
    let only = [
        run_dir.as_str(),
        "--reuse",
        "--verify-only",
        "--size",
        "4m",
        "-q",
    ];
    let (code, doc, out) = run_in(&dir, &only);
    assert_eq!(code, 0, "nothing planted yet: {out}");
    // Every block read back once, timed: the whole of a --verify-only phase.
    let verify = &doc["phases"][0]["by_op"]["verify"];
    assert_eq!(verify["bytes"].as_u64(), Some(4 << 20), "{verify}");
    assert_eq!(
        doc["phases"][0]["verify"],
        serde_json::json!({"blocks": 1024, "objects": 0, "bytes": 4 << 20, "bad": 0})
    );
    assert!(doc["phases"][0]["by_op"].get("write").is_none());

    let mut data = std::fs::read(&file).unwrap();
    assert_eq!(data.len(), 4 << 20);
    data[8192 + 1000] ^= 0x40; // corrupt: bytes flipped
    data.copy_within(12288..16384, 40960); // misplaced: offset 12288's block at 40960
    data[81920..86016].copy_from_slice(&first[81920..86016]); // stale: the first pass's write
    data[122880..126976].fill(0); // hole
    std::fs::write(&file, &data).unwrap();

    let (code, doc, out) = run_in(&dir, &only);
    assert_eq!(code, 1, "{out}");
    let errors = doc["phases"][0]["errors"].as_array().unwrap();
    for (kind, offset) in [
        ("corrupt", 8192),
        ("misplaced", 40960),
        ("stale", 81920),
        ("hole", 122880),
    ] {
        let e = errors
            .iter()
            .find(|e| e["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind} in {errors:?}"));
        assert_eq!(e["count"].as_u64(), Some(1), "{e}");
        assert_eq!(e["first_offset"].as_u64(), Some(offset), "{e}");
        assert_eq!(e["op"], "verify");
        assert!(out.contains(&format!("offset {offset}: {kind}")), "{out}");
    }
    assert!(out.contains("holds the block of offset 12288"), "{out}");
    assert!(out.contains("4 of 1024 blocks bad"), "{out}");
    assert_eq!(doc["phases"][0]["verify"]["bad"].as_u64(), Some(4));
    assert_eq!(doc["phases"][0]["verify"]["blocks"].as_u64(), Some(1024));
    // Verifying wrote nothing: the faults are still there.
    assert_eq!(std::fs::read(&file).unwrap(), data);
    std::fs::remove_dir_all(&run_dir).unwrap();
}

/// Issue 56: a clean `--verify` says what it checked, in the terminal and the document: every
/// block the run wrote, and none bad.
#[test]
fn a_clean_verify_says_how_many_blocks_it_checked() {
    let dir = temp_dir(TMP);
    let target = dir.path().join("t");
    std::fs::create_dir(&target).unwrap();
    let (code, doc, out) = run_in(
        &dir,
        &[
            target.to_str().unwrap(),
            "--rw",
            "write",
            "--bs",
            "4k",
            "--size",
            "4m",
            "--verify",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let p = stormark_testkit::phase(&doc, "run");
    // A sequential pass over 4 MiB in 4 KiB writes: each of its 1024 blocks written once.
    let written = p["by_op"]["write"]["bytes"].as_u64().unwrap();
    assert_eq!(written, 4 << 20, "{p}");
    let blocks = written / 4096;
    assert_eq!(
        p["verify"],
        serde_json::json!({"blocks": blocks, "objects": 0, "bytes": written, "bad": 0}),
        "{p}"
    );
    assert!(
        out.contains(&format!("verify: {blocks} blocks (4 MiB) checked, 0 bad")),
        "{out}"
    );
    // The Markdown and HTML reports say it too.
    let json = dir.path().join("r.json");
    let md = Bin(BIN).run(&["report", json.to_str().unwrap(), "--markdown", "-"]);
    let md = String::from_utf8_lossy(&md.stdout).to_string();
    assert!(
        md.contains(&format!(
            "- verify, phase run: {blocks} blocks (4 MiB) checked, 0 bad"
        )),
        "{md}"
    );
    let html = dir.path().join("r.html");
    let out = Bin(BIN).run(&[
        "report",
        json.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        stormark_testkit::text(&out)
    );
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(
        html.contains(&format!(
            "verify, phase run: {blocks} blocks (4 MiB) checked, 0 bad"
        )),
        "{html}"
    );
}

#[test]
fn verify_finds_each_planted_fault_at_its_offset_in_a_file() {
    let dir = temp_dir(TMP);
    planted_faults_are_found(dir.path());
}

#[test]
fn verify_finds_each_planted_fault_at_its_offset_on_a_loop_device() {
    if !stormark_testkit::require_root(
        "verify_finds_each_planted_fault_at_its_offset_on_a_loop_device",
    ) {
        return;
    }
    let mut dev = stormark_testkit::LoopDevice::new(TMP, 64 << 20).expect("loop device");
    dev.mkfs_ext4().expect("mkfs.ext4");
    let mnt = dev.mount().expect("mount");
    planted_faults_are_found(&mnt);
}

#[test]
fn verify_after_random_overwrites_in_flight_reports_nothing_false_on_both_engines() {
    for engine in ["io_uring", "psync"] {
        let dir = temp_dir(TMP);
        let target = dir.path().join("t");
        std::fs::create_dir(&target).unwrap();
        // Random overwrites at depth 16: a block rewritten while its last write is in flight
        // may hold either write, and is never reported.
        let t = target.to_str().unwrap();
        let (code, doc, out) = run_in(
            &dir,
            &[
                t,
                "--rw",
                "randrw",
                "--bs",
                "4k",
                "--size",
                "8m",
                "--io-total",
                "24m",
                "--engine",
                engine,
                "--iodepth",
                "16",
                "--verify",
                "--keep",
                "-q",
            ],
        );
        assert_eq!(code, 0, "{engine}: {out}");
        // The pass after the load is not part of the workload's figures, nor timed.
        let p = stormark_testkit::phase(&doc, "run");
        assert!(p["by_op"].get("verify").is_none(), "{p}");
        let run_dir = doc["target"]["run_dir"].as_str().unwrap().to_string();
        // The state it kept agrees with every block on disk.
        let only = [
            run_dir.as_str(),
            "--reuse",
            "--verify-only",
            "--size",
            "8m",
            "-q",
        ];
        let (code, doc, out) = run_in(&dir, &only);
        assert_eq!(code, 0, "{engine}: {out}");
        let checked = doc["phases"][0]["by_op"]["verify"]["bytes"]
            .as_u64()
            .unwrap();
        assert!(checked >= 4 << 20, "{engine}: {checked}");
        std::fs::remove_dir_all(&run_dir).unwrap();
    }
    // Without --keep, the run directory goes, the state beside its file too.
    let dir = temp_dir(TMP);
    let target = dir.path().join("t");
    std::fs::create_dir(&target).unwrap();
    let t = target.to_str().unwrap();
    let (code, _, out) = run_in(
        &dir,
        &[t, "--rw", "write", "--size", "4m", "--verify", "-q"],
    );
    assert_eq!(code, 0, "{out}");
    assert!(std::fs::read_dir(&target).unwrap().next().is_none());
}

#[test]
fn verify_mistakes_are_one_line_and_exit_2() {
    let dir = temp_dir(TMP);
    let d = dir.path().to_str().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, vec![0u8; 1 << 20]).unwrap();
    let f = file.to_str().unwrap();
    for (args, want) in [
        (vec![d, "--rw", "read", "--verify"], "a job that writes"),
        (
            vec![d, "--rw", "write", "--verify", "--dedup-ratio", "2"],
            "not both",
        ),
        (
            vec![d, "--rw", "write", "--verify", "--bs", "256", "--buffered"],
            "multiples of 512",
        ),
        (vec![d, "--verify-only"], "--verify --keep run printed"),
        (
            vec![
                f,
                "--rw",
                "write",
                "--verify",
                "--jobs",
                "2",
                "--allow-overwrite",
            ],
            "--jobs 1",
        ),
    ] {
        let mut all = vec!["run"];
        all.extend(args.iter());
        all.extend(["--time", "1s"]);
        let out = Bin(BIN).run(&all);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(said.contains(want), "{args:?}: {said}");
        assert_eq!(said.trim().lines().count(), 1, "{args:?}: {said}");
    }
}
