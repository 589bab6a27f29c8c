//! Issue 58: a host that takes the page cache away (this VM runs a DAMON pageout scheme) is
//! said after a buffered run, and `--pin-cache` holds a run's files in the cache (mmap +
//! mlock) so that the device reads nothing for them; what it cannot hold is refused before
//! the load.

use std::process::Command;

use stormark_testkit::{require_root, require_tool, temp_dir, Bin, LoopDevice};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

/// Bytes of `file` in the page cache, as `fincore` (mincore(2)) counts them.
fn resident(file: &std::path::Path) -> u64 {
    let out = Command::new("fincore")
        .args(["--bytes", "--noheadings", "--output", "RES"])
        .arg(file)
        .output()
        .expect("fincore runs");
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// Bytes the device read during the document's measured phase, from its host samples of
/// the seconds wholly inside it.
fn device_read_in_phase(doc: &serde_json::Value, device: &str) -> f64 {
    let p = stormark_testkit::phase(doc, "run");
    let (start, len) = (
        p["start_offset_ns"].as_f64().unwrap(),
        p["duration_ns"].as_f64().unwrap(),
    );
    doc["hosts"][0]["samples"]
        .as_array()
        .unwrap()
        .iter()
        // Whole seconds inside the phase: the one before holds the preparation (the pin's
        // own reads).
        .filter(|s| {
            let end = s["t_ns"].as_f64().unwrap();
            end - s["duration_ns"].as_f64().unwrap() >= start && end <= start + len
        })
        .map(|s| {
            s["disks"][device]["read_bytes_per_s"]
                .as_f64()
                .unwrap_or(0.0)
                * s["duration_ns"].as_f64().unwrap()
                / 1e9
        })
        .sum()
}

fn codes(doc: &serde_json::Value) -> Vec<String> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_string())
        .collect()
}

/// A 16 MiB file on a loop device's ext4 (so that the device's reads are this run's alone),
/// read at 100 IOPS for 5 s after the run drops it from the cache: unpinned, the device
/// serves the reads and most of the file is not cached after; `--pin-cache` reads it in
/// before the load, the device reads nothing during the phase and the whole file is
/// resident after. Where the host runs a DAMON pageout scheme the unpinned run says
/// `page-cache-evicted`, and where it does not, nothing evicts the file and nothing is said.
#[test]
fn a_pinned_file_stays_cached_and_a_host_that_evicts_is_said() {
    let test = "a_pinned_file_stays_cached_and_a_host_that_evicts_is_said";
    if !require_root(test) || !require_tool(test, "fincore") {
        return;
    }
    let mut dev = match LoopDevice::new(TMP, 96 << 20) {
        Ok(d) => d,
        Err(e) => return stormark_testkit::skip(test, &format!("no loop device: {e}")),
    };
    dev.mkfs_ext4().unwrap();
    let mnt = dev.mount().unwrap();
    let name = dev.path.file_name().unwrap().to_str().unwrap().to_string();
    let file = mnt.join("cached.bin");
    let data: Vec<u8> = (0..16u32 << 20)
        .map(|i| i.wrapping_mul(2_654_435_761) as u8)
        .collect();
    std::fs::write(&file, &data).unwrap();
    // Clean pages: the run's drop from the cache (fio's invalidate) leaves dirty ones.
    std::fs::File::open(&file).unwrap().sync_all().unwrap();
    let dir = temp_dir(TMP);
    let f = file.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            f,
            "--rw",
            "randread",
            "--bs",
            "4k",
            "--buffered",
            "--rate-iops",
            "100",
            "--time",
            "5s",
            "--allow-overwrite",
            "-q",
        ];
        args.extend_from_slice(extra);
        let (code, doc, said) = Bin(BIN).run_json(&dir, &args);
        assert_eq!(code, 0, "{said}");
        doc
    };

    let plain = run(&[]);
    let damon = plain["hosts"][0]["inventory"]["cache_eviction"]["damon_pageout"]
        .as_array()
        .is_some_and(|a| !a.is_empty());
    let found = codes(&plain);
    assert_eq!(
        found.contains(&"page-cache-evicted".to_string()),
        damon,
        "DAMON pageout on: {damon}; {found:?}"
    );
    let unpinned_reads = device_read_in_phase(&plain, &name);
    // 100 reads a second of blocks not cached (the run drops the file from the cache first).
    assert!(unpinned_reads > 64.0 * 1024.0, "{unpinned_reads}");
    assert!(resident(&file) < 12 << 20, "{}", resident(&file));

    let pinned = run(&["--pin-cache"]);
    let found = codes(&pinned);
    assert!(
        !found.contains(&"page-cache-evicted".to_string()),
        "{found:?}"
    );
    assert!(
        pinned["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().starts_with("pinned 16.0 MiB")),
        "{}",
        pinned["notes"]
    );
    let pinned_reads = device_read_in_phase(&pinned, &name);
    assert!(pinned_reads < 64.0 * 1024.0, "{pinned_reads}");
    assert_eq!(resident(&file), 16 << 20);
}

/// What a pin cannot hold is refused before the load, in one line naming `--pin-cache`:
/// direct I/O, and files larger than the memory this host has.
#[test]
fn a_pin_that_cannot_hold_is_refused_before_the_load() {
    let dir = temp_dir(TMP);
    let file = dir.path().join("f");
    std::fs::write(&file, vec![1u8; 1 << 20]).unwrap();
    let f = file.to_str().unwrap();
    let refused = |args: &[&str], why: &str| {
        let out = Bin(BIN).run(args);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("--pin-cache") && err.contains(why), "{err}");
    };
    let base = [
        "run",
        f,
        "--rw",
        "randread",
        "--time",
        "1s",
        "--allow-overwrite",
        "--pin-cache",
    ];
    refused(&[&base[..], &["--direct"]].concat(), "direct I/O");
    // A sparse file larger than this host's memory (it takes no room on the disk).
    let ram: u64 = std::fs::read_to_string("/proc/meminfo")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap();
    let huge = dir.path().join("huge");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(ram * 1024 * 2)
        .unwrap();
    let h = huge.to_str().unwrap();
    refused(
        &[
            "run",
            h,
            "--rw",
            "randread",
            "--time",
            "1s",
            "--allow-overwrite",
            "--pin-cache",
        ],
        "do not fit in memory",
    );
}
