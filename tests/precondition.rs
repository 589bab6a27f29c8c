//! Issue 31: fio's SPRandom preconditioning (`sprandom`) on a real file: one pass that writes
//! every block, the model's stale share again, and ends by itself; its mistakes refused
//! before any load.

use stormark_testkit::{read_json, temp_dir, text, Bin};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

/// 16 MiB of 4 KiB blocks at 15% over-provisioning: the run ends by itself (no time or size
/// limit given) after about the physical capacity's writes (4,096 blocks and 15% more, within
/// a region's 47), every block of the kept file written (none left zeros), every write's
/// header checked by `--verify`; without random writes, or with a ratio out of (0, 1), one
/// line and exit 2.
#[test]
fn sprandom_writes_every_block_and_the_stale_share_again() {
    let dir = temp_dir(TMP);
    let t = dir.path().join("t");
    std::fs::create_dir(&t).unwrap();
    let json = dir.path().join("r.json");
    let run = |extra: &[&str]| {
        let mut a = vec![
            "run",
            t.to_str().unwrap(),
            "--size",
            "16m",
            "--engine",
            "io_uring",
            "--iodepth",
            "16",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ];
        a.extend_from_slice(extra);
        Bin(BIN).run(&a)
    };
    for (extra, says) in [
        (
            &["--rw", "randread", "--sprandom"][..],
            "with --rw randwrite",
        ),
        (
            &["--rw", "randwrite", "--spr-op", "0.2"][..],
            "with sprandom=1",
        ),
        (
            &["--rw", "randwrite", "--sprandom", "--spr-op", "1.5"][..],
            "between 0 and 1",
        ),
        (
            &["--rw", "randwrite", "--sprandom", "--bs", "4k-8k"][..],
            "one block size",
        ),
    ] {
        let out = run(extra);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {said}");
        assert!(
            said.contains(says) && said.trim().lines().count() == 1,
            "{extra:?}: {said}"
        );
    }
    let out = run(&[
        "--rw",
        "randwrite",
        "--bs",
        "4k",
        "--sprandom",
        "--verify",
        "--keep",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = read_json(&json);
    let phase = r["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == "run")
        .unwrap();
    let writes = phase["by_op"]["write"]["ops"].as_u64().unwrap();
    // 16 MiB x 1.15 in 4 KiB blocks: 4,710; the regions 47 blocks each.
    assert!(writes.abs_diff(4710) <= 47, "{writes} writes");
    assert_eq!(phase["total"]["errors"], 0);
    let file = std::fs::read_dir(&t)
        .unwrap()
        .flat_map(|run| std::fs::read_dir(run.unwrap().path()).unwrap())
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().is_some_and(|n| n == "j0.w0.f0"))
        .expect("the kept file");
    let data = std::fs::read(&file).unwrap();
    assert_eq!(data.len(), 16 << 20);
    let zeros = data
        .chunks(4096)
        .filter(|b| b.iter().all(|x| *x == 0))
        .count();
    assert_eq!(zeros, 0, "blocks never written");
}
