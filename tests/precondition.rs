//! Issue 31: filling and preconditioning as fio's job files ask, on real files and file
//! systems: SPRandom (`sprandom`), one pass that writes every block, the model's stale share
//! again, and ends by itself; `fill_device`, writing until the file system is full, with a
//! later job checking what it wrote (fio's `surface-scan`); their mistakes refused before any
//! load.

use std::path::{Path, PathBuf};
use std::process::Command;

use stormark_testkit::{read_json, require_root, require_tool, temp_dir, text, Bin};

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

struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// A 16 MiB tmpfs at `dir/name`, unmounted when the guard goes; `None` where it cannot be.
fn small_fs(test: &str, dir: &Path, name: &str) -> Option<Unmount> {
    if !require_root(test) || !require_tool(test, "mount") {
        return None;
    }
    let mnt = dir.join(name);
    std::fs::create_dir(&mnt).unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=16m", "tmpfs"])
        .arg(&mnt)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        stormark_testkit::skip(test, "cannot mount a tmpfs");
        return None;
    }
    Some(Unmount(mnt))
}

/// Runs a job file (on `target`, or where the file says); exit status, document and output.
fn run_file(
    dir: &Path,
    target: Option<&Path>,
    fio: &str,
) -> (Option<i32>, serde_json::Value, String) {
    let job = dir.join("job.fio");
    let json = dir.join("r.json");
    std::fs::write(&job, fio).unwrap();
    let _ = std::fs::remove_file(&json);
    let mut args = vec!["run"];
    args.extend(target.map(|t| t.to_str().unwrap()));
    args.extend([
        "--job",
        job.to_str().unwrap(),
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    let out = Bin(BIN).run(&args);
    let doc = std::fs::read(&json).map_or(serde_json::Value::Null, |_| read_json(&json));
    (out.status.code(), doc, text(&out))
}

/// One phase's figure of one operation.
fn figure(r: &serde_json::Value, phase: &str, op: &str, f: &str) -> u64 {
    r["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == phase)
        .unwrap_or_else(|| panic!("phase {phase}: {r}"))["by_op"][op][f]
        .as_u64()
        .unwrap_or(0)
}

/// fio's `surface-scan` on a 16 MiB file system given as TARGET: the write job fills it with
/// 512-byte verified blocks of fio's pattern (without a size: the free space, less a MiB and
/// the room of the state it keeps), checking nothing itself (`do_verify=0`); the read job after
/// it checks every block the writer wrote, exit 0; and the file system is empty again
/// afterwards. Without a directory TARGET (the file itself the target), the check has nowhere
/// to keep its state: one line, exit 2, before any load.
#[test]
fn fill_device_fills_the_file_system_and_a_later_job_checks_it() {
    let test = "fill_device_fills_the_file_system_and_a_later_job_checks_it";
    let dir = temp_dir(TMP);
    let Some(mnt) = small_fs(test, dir.path(), "fs") else {
        return;
    };
    let scan = |dir: &str| {
        format!(
            "[global]\n{dir}thread\nbs=64k\ndirect=0\nioengine=sync\nverify=meta\n\
             verify_pattern=0xaa555aa5\nverify_interval=512\n\
             [write-phase]\nfilename=datafile.tmp\nrw=write\nfill_device=1\ndo_verify=0\n\
             [verify-phase]\nstonewall\ncreate_serialize=0\nfilename=datafile.tmp\nrw=read\ndo_verify=1\n"
        )
    };
    let in_file = format!("directory={}\n", mnt.0.display());
    let (code, _, said) = run_file(dir.path(), None, &scan(&in_file));
    assert_eq!(code, Some(2), "{said}");
    assert!(
        said.contains("give a directory as TARGET") && said.trim().lines().count() == 1,
        "{said}"
    );
    assert_eq!(std::fs::read_dir(&mnt.0).unwrap().count(), 0, "left behind");
    let (code, r, said) = run_file(dir.path(), Some(&mnt.0), &scan(""));
    assert_eq!(code, Some(0), "{said}");
    let written = figure(&r, "run:write-phase", "write", "bytes");
    // 16 MiB less a MiB and 4 bytes a 512-byte block: 14.9 MiB, in 64 KiB writes.
    assert!((14 << 20..15 << 20).contains(&written), "{written} bytes");
    assert_eq!(figure(&r, "run:verify-phase", "verify", "bytes"), written);
    assert_eq!(figure(&r, "run:verify-phase", "verify", "errors"), 0);
    assert_eq!(std::fs::read_dir(&mnt.0).unwrap().count(), 0, "left behind");
}

/// Where another job takes the room meanwhile, the filling job meets a full file system: its
/// writes end there, the ENOSPC (or the last short write) counted, marked ignored and named in
/// a note, exit 0; the other job's writes all done.
#[test]
fn fill_device_ends_at_enospc_without_failing() {
    let test = "fill_device_ends_at_enospc_without_failing";
    let dir = temp_dir(TMP);
    let Some(mnt) = small_fs(test, dir.path(), "fs") else {
        return;
    };
    let (code, r, said) = run_file(
        dir.path(),
        None,
        &format!(
            "[global]\ndirectory={}\nbs=64k\n[fill]\nfilename=a\nrw=write\nfill_device=1\n\
             [hog]\nfilename=b\nrw=write\nsize=8m\n",
            mnt.0.display()
        ),
    );
    assert_eq!(code, Some(0), "{said}");
    let errors = r["phases"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["errors"].as_array().cloned().unwrap_or_default())
        .collect::<Vec<_>>();
    assert!(
        !errors.is_empty()
            && errors
                .iter()
                .all(|e| e["job"] == "fill" && e["ignored"] == true),
        "{errors:?}"
    );
    let note = r["notes"].to_string();
    assert!(note.contains("fill_device"), "{note}");
}

/// A chained check catches what another job did to the file meanwhile: a write job keeps its
/// blocks' state, a second job overwrites 64 KiB at 1 MiB without headers, and the read job
/// checking the first job's blocks finds exactly those 16 blocks corrupt, exit 1.
#[test]
fn a_later_check_finds_what_another_job_overwrote() {
    let dir = temp_dir(TMP);
    let t = dir.path().join("t");
    std::fs::create_dir(&t).unwrap();
    let (code, r, said) = run_file(
        dir.path(),
        Some(&t),
        "[global]\nbs=4k\nfilename=f\nsize=4m\n\
             [w]\nrw=write\nverify=crc32c\ndo_verify=0\n\
             [clobber]\nstonewall\nrw=write\noffset=1m\nsize=64k\n\
             [check]\nstonewall\nrw=read\nverify=crc32c\n",
    );
    assert_eq!(code, Some(1), "{said}");
    let phase = r["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "run:check")
        .unwrap();
    let errors = phase["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["kind"], "corrupt");
    assert_eq!(errors[0]["count"], 16);
    assert_eq!(errors[0]["first_offset"], 1 << 20);
}

/// Issue 55: fio's `trim_percentage` with `verify`: a quarter of the 256 written blocks is
/// trimmed once the load is over (holes punched), the check finds those zeros and the rest as
/// written, none bad; the kept file holds exactly 64 blocks of zeros. With
/// `trim_verify_zero=0` the trimmed blocks are not checked, and it runs too.
#[test]
fn trim_percentage_trims_a_share_of_the_verified_blocks_and_finds_them_zeros() {
    let dir = temp_dir(TMP);
    let t = dir.path().join("t");
    std::fs::create_dir(&t).unwrap();
    for zero in ["1", "0"] {
        let job = dir.path().join("trim.fio");
        std::fs::write(
            &job,
            format!("[w]\nrw=write\nbs=4k\nsize=1m\nverify=crc32c\ntrim_percentage=25\ntrim_backlog=8\ntrim_verify_zero={zero}\n"),
        )
        .unwrap();
        let json = dir.path().join("r.json");
        let out = Bin(BIN).run(&[
            "run",
            t.to_str().unwrap(),
            "--job",
            job.to_str().unwrap(),
            "--keep",
            "--json",
            json.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let r = read_json(&json);
        let phase = r["phases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["kind"] == "run")
            .unwrap();
        let v = &phase["verify"];
        assert_eq!(v["blocks"].as_u64(), Some(256), "{v}");
        assert_eq!(v["bad"].as_u64(), Some(0), "{v}");
        assert_eq!(r["spec"]["jobs"][0]["trim_percentage"], "25");
        let run_dir = std::fs::read_dir(&t)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.is_dir())
            .expect("the kept run directory");
        let data = std::fs::read(run_dir.join("j0.w0.f0")).unwrap();
        let zeros = data
            .chunks(4096)
            .filter(|b| b.iter().all(|x| *x == 0))
            .count();
        assert_eq!(zeros, 64, "trimmed blocks");
        std::fs::remove_dir_all(&run_dir).unwrap();
    }
}
