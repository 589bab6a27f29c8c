//! `stormark run` on block devices: real loop devices, created by the test as root.
//! Skipped with a printed reason where loop devices cannot be made; `.ci/run` runs as root.

use std::process::Output;

use stormark_testkit::{read_json, require_root, temp_dir, Bin, LoopDevice};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

fn stormark(args: &[&str]) -> Output {
    Bin(BIN).run(args)
}

fn device(test: &str) -> Option<LoopDevice> {
    if !require_root(test) {
        return None;
    }
    match LoopDevice::new(TMP, 64 << 20) {
        Ok(d) => Some(d),
        Err(e) => {
            stormark_testkit::skip(test, &format!("cannot create a loop device: {e}"));
            None
        }
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// One test, so that the loop devices are made and removed in turn.
#[test]
fn block_device_reads_writes_and_refusals() {
    let Some(mut dev) = device("block_device_reads_writes_and_refusals") else {
        return;
    };
    let d = dev.path.to_str().unwrap().to_string();
    let dir = temp_dir(TMP);
    let json = dir.path().join("r.json");
    let j = json.to_str().unwrap();

    // Reads need no flag.
    let out = stormark(&[
        "run",
        &d,
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--direct",
        "--iodepth",
        "8",
        "--time",
        "2s",
        "--quiet",
        "--json",
        j,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = read_json(&json);
    assert_eq!(r["target"]["kind"], "block-device");
    assert!(r["phases"][0]["by_op"]["read"]["ops"].as_u64().unwrap() > 0);
    // Issue 3: the sampler saw the loop device serve the reads (/proc/diskstats).
    let name = dev.path.file_name().unwrap().to_str().unwrap();
    assert_eq!(r["target"]["device"], name);
    let samples = r["hosts"][0]["samples"].as_array().unwrap();
    let served: f64 = samples
        .iter()
        .filter_map(|s| s["disks"][name]["read_iops"].as_f64())
        .sum();
    assert!(served > 0.0, "no reads on {name} in {samples:?}");

    // Writes need --allow-device-write.
    let out = stormark(&["run", &d, "--rw", "randwrite", "--time", "1s", "--quiet"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--allow-device-write"),
        "{}",
        stderr(&out)
    );

    // With it, a blank device is written; --size bounds the offsets.
    let out = stormark(&[
        "run",
        &d,
        "--rw",
        "write",
        "--bs",
        "64k",
        "--size",
        "8m",
        "--direct",
        "--allow-device-write",
        "--quiet",
        "--json",
        j,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = read_json(&json);
    assert_eq!(
        r["phases"][0]["by_op"]["write"]["bytes"].as_u64(),
        Some(8 << 20),
        "one pass over --size"
    );

    // A filesystem signature stops writes unless --force.
    dev.mkfs_ext4().expect("mkfs.ext4");
    let out = stormark(&[
        "run",
        &d,
        "--rw",
        "randwrite",
        "--size",
        "8m",
        "--time",
        "1s",
        "--allow-device-write",
        "--quiet",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("ext2/3/4 signature") && stderr(&out).contains("--force"),
        "{}",
        stderr(&out)
    );
    let out = stormark(&[
        "run",
        &d,
        "--rw",
        "randwrite",
        "--size",
        "8m",
        "--time",
        "1s",
        "--allow-device-write",
        "--force",
        "--quiet",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // Trims (fio's rw=trim): a discard of the device's range (BLKDISCARD), with
    // --allow-device-write only; what lies past the range is untouched.
    {
        use std::io::{Seek, Write};
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(&dev.path)
            .unwrap();
        f.seek(std::io::SeekFrom::Start(0)).unwrap();
        f.write_all(&vec![0xab; 2 << 20]).unwrap();
        f.sync_all().unwrap();
    }
    let trim = |extra: &[&str]| {
        let mut a = vec![
            "run", &d, "--rw", "trim", "--size", "1m", "--bs", "64k", "--quiet",
        ];
        a.extend_from_slice(extra);
        a.extend_from_slice(&["--json", j]);
        stormark(&a)
    };
    let out = trim(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--allow-device-write"),
        "{}",
        stderr(&out)
    );
    let out = trim(&["--allow-device-write", "--force"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = read_json(&json);
    assert_eq!(
        r["phases"][0]["by_op"]["trim"]["ops"], 16,
        "{}",
        r["phases"][0]["by_op"]
    );
    let data = std::fs::read(&dev.path).unwrap();
    assert!(
        data[..1 << 20].iter().all(|&b| b == 0),
        "the trimmed MiB reads zeros"
    );
    assert!(
        data[1 << 20..2 << 20].iter().all(|&b| b == 0xab),
        "the next is kept"
    );

    // Mounted: never written, whatever the flags; reads are still fine.
    dev.mkfs_ext4().expect("mkfs.ext4");
    let mnt = dev.mount().expect("mount");
    let out = stormark(&[
        "run",
        &d,
        "--rw",
        "randwrite",
        "--time",
        "1s",
        "--allow-device-write",
        "--force",
        "--quiet",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("is mounted at"), "{}", stderr(&out));
    let out = stormark(&["run", &d, "--rw", "randread", "--time", "1s", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // The mounted filesystem as a directory target: a real run on ext4 over the loop device.
    let out = stormark(&[
        "run",
        mnt.to_str().unwrap(),
        "--rw",
        "randrw",
        "--size",
        "8m",
        "--time",
        "1s",
        "--direct",
        "--prepare",
        "--quiet",
        "--json",
        j,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = read_json(&json);
    let names: Vec<&str> = r["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["prepare", "run"]);
    let left: Vec<_> = std::fs::read_dir(&mnt)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        left,
        vec![std::ffi::OsString::from("lost+found")],
        "only what mkfs made remains"
    );

    // Too small a device for the block size.
    let out = stormark(&["run", &d, "--rw", "read", "--bs", "128m", "--quiet"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// Issue 58: a 1 MiB direct read of a device whose `max_sectors_kb` is 128 reaches it as
/// requests of 128 KiB, and the finding says so, naming the setting and how far it can be
/// raised; at 1024 no request is split and nothing is said.
#[test]
fn requests_split_by_max_sectors_kb_are_named() {
    let Some(dev) = device("requests_split_by_max_sectors_kb_are_named") else {
        return;
    };
    let d = dev.path.to_str().unwrap().to_string();
    let name = dev.path.file_name().unwrap().to_str().unwrap().to_string();
    let limit = format!("/sys/block/{name}/queue/max_sectors_kb");
    let hw: u64 = std::fs::read_to_string(format!("/sys/block/{name}/queue/max_hw_sectors_kb"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let dir = temp_dir(TMP);
    let json = dir.path().join("r.json");
    let run = |kb: u64, bs: &str| {
        std::fs::write(&limit, kb.to_string()).unwrap();
        let out = stormark(&[
            "run",
            &d,
            "--rw",
            "read",
            "--bs",
            bs,
            "--direct",
            "--iodepth",
            "4",
            "--time",
            "3s",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let doc = read_json(&json);
        doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["code"] == "device-splits-requests")
            .cloned()
            .collect::<Vec<_>>()
    };
    let split = run(128, "1m");
    assert_eq!(split.len(), 1, "{split:?}");
    let f = &split[0];
    assert_eq!(f["evidence"]["device"], name.as_str(), "{f}");
    assert_eq!(f["evidence"]["asked_bytes"], 1048576.0, "{f}");
    let served = f["evidence"]["served_bytes"].as_f64().unwrap();
    assert!(
        (120.0 * 1024.0..=136.0 * 1024.0).contains(&served),
        "served {served}: {f}"
    );
    assert_eq!(f["evidence"]["max_sectors_kb"], 128, "{f}");
    let message = f["message"].as_str().unwrap();
    assert!(
        message.contains("128 KiB") && message.contains("1024 KiB"),
        "{message}"
    );
    assert!(message.contains("max_sectors_kb (128)"), "{message}");
    if hw >= 1024 {
        let advice = f["advice"].as_str().unwrap();
        assert!(advice.contains("echo 1024 >"), "{advice}");
        // At 1024 the size limit no longer splits a 1 MiB read; a loop device still takes at
        // most max_segments pages a request (128: 512 KiB), which is named instead.
        let segments: u64 =
            std::fs::read_to_string(format!("/sys/block/{name}/queue/max_segments"))
                .unwrap()
                .trim()
                .parse()
                .unwrap();
        let at_1024 = run(1024, "1m");
        if segments * 4 >= 1024 {
            assert!(at_1024.is_empty(), "{at_1024:?}");
        } else {
            assert_eq!(at_1024.len(), 1, "{at_1024:?}");
            let message = at_1024[0]["message"].as_str().unwrap();
            assert!(message.contains("(max_segments)"), "{message}");
            assert!(!message.contains("max_sectors_kb"), "{message}");
        }
        // A block size both limits take whole: nothing said.
        let whole = format!("{}k", (segments * 4).min(1024));
        assert!(run(1024, &whole).is_empty(), "{whole}");
    }
}

/// Issue 58: the probe names each device's transport and its queues (what the transport
/// takes at once) and request limits, read from sysfs: a loop device made here, and a virtio
/// disk where the host has one (this VM's); a field sysfs lacks is absent, never made up.
#[test]
fn the_probe_names_transport_queues_and_request_limits() {
    let Some(dev) = device("the_probe_names_transport_queues_and_request_limits") else {
        return;
    };
    let name = dev.path.file_name().unwrap().to_str().unwrap().to_string();
    let dir = temp_dir(TMP);
    let json = dir.path().join("host.json");
    let out = stormark(&["probe", "--json", json.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let inv = read_json(&json);
    let devices = inv["block_devices"].as_array().unwrap();
    let sys = |dev: &str, rel: &str| -> Option<u64> {
        std::fs::read_to_string(format!("/sys/block/{dev}/{rel}"))
            .ok()
            .and_then(|v| v.trim().parse().ok())
    };
    let entry = |dev: &str| devices.iter().find(|d| d["name"] == dev).cloned();
    let l = entry(&name).unwrap_or_else(|| panic!("{name} missing: {inv}"));
    assert_eq!(l["transport"], "loop", "{l}");
    assert_eq!(
        l["max_sectors_kb"].as_u64(),
        sys(&name, "queue/max_sectors_kb"),
        "{l}"
    );
    assert_eq!(
        l["max_segments"].as_u64(),
        sys(&name, "queue/max_segments"),
        "{l}"
    );
    assert_eq!(
        l["hw_queue_depth"].as_u64(),
        sys(&name, "mq/0/nr_tags"),
        "{l}"
    );
    // A loop device has no firmware or vendor of its own: absent.
    assert!(
        l.get("firmware").is_none() && l.get("vendor").is_none(),
        "{l}"
    );
    let line = text
        .lines()
        .find(|t| t.trim_start().starts_with(&name))
        .unwrap();
    assert!(
        line.contains("loop (") && line.contains("requests up to"),
        "{line}"
    );
    let virtio = std::fs::canonicalize("/sys/block/vda")
        .is_ok_and(|p| p.to_string_lossy().contains("/virtio"));
    if virtio {
        let v = entry("vda").unwrap();
        assert_eq!(v["transport"], "virtio", "{v}");
        assert_eq!(
            v["hw_queue_depth"].as_u64(),
            sys("vda", "mq/0/nr_tags"),
            "{v}"
        );
    }
    // No serial unless asked; --show-serial reads virtio's (and prints it) where sysfs has one.
    assert!(!inv.to_string().contains("\"serial\""), "{inv}");
    let out = stormark(&["probe", "--show-serial", "--json", json.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shown = read_json(&json);
    if let Ok(serial) = std::fs::read_to_string("/sys/block/vda/serial") {
        let serial = serial.trim();
        let v = shown["block_devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == "vda")
            .cloned()
            .unwrap();
        assert_eq!(v["serial"], serial, "{v}");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(text.contains(&format!(", serial {serial}")), "{text}");
    }
}
