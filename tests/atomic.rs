//! Issue 31: fio's `atomic` (`--atomic`): writes with torn-write protection (`RWF_ATOMIC`) on
//! a file system that takes them (XFS on a loop device, Linux 6.16 and later), checked with
//! `--verify`; refused before any load where the target takes none, or the block size is not
//! one it takes.

use stormark_testkit::{require_root, require_tool, text, Bin, LoopDevice};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

fn run(dir: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let mut a = vec![
        "run",
        dir.to_str().unwrap(),
        "--rw",
        "randwrite",
        "--size",
        "16m",
        "--direct",
        "--atomic",
        "--time",
        "1s",
        "-q",
    ];
    a.extend_from_slice(extra);
    Bin(BIN).run(&a)
}

#[test]
fn atomic_writes_where_the_file_system_takes_them_and_refused_where_not() {
    let test = "atomic_writes_where_the_file_system_takes_them_and_refused_where_not";
    if !require_root(test) || !require_tool(test, "mkfs.xfs") {
        return;
    }
    // The spec's own refusals: one block size, a power of two.
    let out = run(std::path::Path::new(TMP), &["--bs", "12k"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("a power of two"), "{}", text(&out));
    let mut xfs = match LoopDevice::new(TMP, 512 << 20) {
        Ok(d) => d,
        Err(e) => {
            stormark_testkit::skip(test, &format!("cannot create a loop device: {e}"));
            return;
        }
    };
    xfs.mkfs_xfs().expect("mkfs.xfs");
    let at = xfs.mount().expect("mount the XFS loop device");
    let probe = run(&at, &["--bs", "4k", "--engine", "psync"]);
    if text(&probe).contains("takes no atomic writes") {
        stormark_testkit::skip(
            test,
            "this kernel's XFS takes no atomic writes (before 6.16)",
        );
        return;
    }
    for engine in ["psync", "io_uring"] {
        let out = run(
            &at,
            &[
                "--bs",
                "16k",
                "--engine",
                engine,
                "--iodepth",
                "8",
                "--verify",
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{engine}: {}", text(&out));
        assert!(
            text(&out).contains("status: ok"),
            "{engine}: {}",
            text(&out)
        );
    }
    // Larger than the most the file system takes at once: refused before any load.
    let out = run(&at, &["--bs", "8m"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let said = text(&out);
    // One line on standard error (the target line, said as the run started, is on standard
    // output).
    let error = String::from_utf8_lossy(&out.stderr);
    assert!(
        error.contains("takes no atomic writes of 8m") && error.trim().lines().count() == 1,
        "{said}"
    );
    // ext4 on a loop device (no atomic writes of its own): refused, naming it.
    let mut ext4 = LoopDevice::new(TMP, 64 << 20).expect("a second loop device");
    ext4.mkfs_ext4().expect("mkfs.ext4");
    let plain = ext4.mount().expect("mount the ext4 loop device");
    let out = run(&plain, &["--bs", "4k"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("takes no atomic writes of 4k"),
        "{}",
        text(&out)
    );
    assert_eq!(
        std::fs::read_dir(&at).unwrap().count(),
        0,
        "nothing left on the XFS"
    );
}
