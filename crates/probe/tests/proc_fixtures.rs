//! The /proc and /sys parsers on fixture trees of several kernels (tests/fixtures/<kernel>/),
//! and the iostat/mpstat arithmetic on a pair of reads one second apart.

use std::path::PathBuf;
use std::time::Duration;

use stormark_probe::{
    collect_inventory_from, parse_diskstats, parse_net_dev, parse_stat, parse_tcp_retrans,
    parse_vmstat_swap, whole_disks, Counters, HostRoot,
};

fn fixture(name: &str) -> HostRoot {
    HostRoot::at(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name),
    )
}

fn text(root: &HostRoot, rel: &str) -> String {
    root.read(rel).expect("fixture file exists")
}

#[test]
fn kernel_6_18_as_captured_on_the_development_vm() {
    let root = fixture("kernel-6.18");
    let inv = collect_inventory_from(&root);
    assert_eq!(inv.hostname, "vm");
    assert_eq!(inv.kernel.as_deref(), Some("6.18.44-fc-v669"));
    assert_eq!(inv.os.as_deref(), Some("Debian GNU/Linux 12 (bookworm)"));
    assert_eq!(inv.cpu_model.as_deref(), Some("AMD EPYC"));
    assert_eq!(
        (inv.cpu_threads, inv.cpu_cores, inv.cpu_sockets),
        (Some(2), Some(2), Some(1))
    );
    assert_eq!(inv.memory_bytes, Some(24_684_084 * 1024));
    assert_eq!(inv.swap_bytes, Some(0));
    // loop0 has nothing attached (size 0): left out.
    let names: Vec<&str> = inv.block_devices.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["vda"]);
    let vda = &inv.block_devices[0];
    assert_eq!(vda.rotational, Some(true));
    assert_eq!(vda.scheduler.as_deref(), Some("mq-deadline"));
    assert_eq!(vda.queue_depth, Some(256));
    assert_eq!(vda.mount_points, ["/"]);
    assert_eq!(vda.fs_type.as_deref(), Some("ext4"));
    let fs: Vec<(&str, &str)> = inv
        .filesystems
        .iter()
        .map(|f| (f.mount_point.as_str(), f.fs_type.as_str()))
        .collect();
    assert_eq!(
        fs,
        [
            ("/dev/shm", "tmpfs"),
            ("/", "ext4"),
            ("/sys/fs/cgroup", "tmpfs")
        ]
    );
    // Sizes need statvfs, which is not made on a fixture.
    assert!(inv.filesystems.iter().all(|f| f.size_bytes.is_none()));
    let eth0 = inv
        .net_interfaces
        .iter()
        .find(|n| n.name == "eth0")
        .unwrap();
    assert_eq!(
        (eth0.speed_mbps, eth0.mtu, eth0.state.as_deref()),
        (None, Some(1400), Some("up"))
    );
    assert!(inv.notes.is_empty(), "{:?}", inv.notes);

    // 20-field diskstats (5.5+), 10-number cpu lines, full snmp.
    let disks = parse_diskstats(&text(&root, "proc/diskstats"));
    assert_eq!(disks.len(), 10);
    assert_eq!(disks[0].name, "loop0");
    assert_eq!(disks[0].flushes, Some(142));
    let (total, cpus) = parse_stat(&text(&root, "proc/stat")).unwrap();
    assert_eq!(cpus.len(), 2);
    assert_eq!(
        (total.user, total.iowait, total.steal),
        (96945, Some(85252), Some(58))
    );
    assert!(parse_tcp_retrans(&text(&root, "proc/net/snmp")).is_some());
    assert!(parse_vmstat_swap(&text(&root, "proc/vmstat")).is_some());
    let net = parse_net_dev(&text(&root, "proc/net/dev"));
    assert!(net.iter().any(|(n, ..)| n == "eth0"));
}

#[test]
fn kernel_5_4_inventory() {
    let root = fixture("kernel-5.4");
    let inv = collect_inventory_from(&root);
    assert_eq!(inv.hostname, "db-01");
    assert_eq!(inv.os.as_deref(), Some("Ubuntu 20.04.6 LTS"));
    // Two threads of one core.
    assert_eq!(
        (inv.cpu_threads, inv.cpu_cores, inv.cpu_sockets),
        (Some(2), Some(1), Some(1))
    );
    assert_eq!(inv.cpus, 2);
    let names: Vec<&str> = inv.block_devices.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["nvme0n1", "sda"]);
    let nvme = inv.device("nvme0n1p2").unwrap();
    assert_eq!(nvme.name, "nvme0n1");
    assert_eq!(
        nvme.model.as_deref(),
        Some("Amazon EC2 NVMe Instance Storage")
    );
    assert_eq!(nvme.rotational, Some(false));
    assert_eq!(nvme.scheduler.as_deref(), Some("none"));
    assert_eq!(nvme.queue_depth, Some(1023));
    assert_eq!(nvme.size_bytes, Some(1_953_525_168 * 512));
    assert!(nvme.mount_points.is_empty());
    let parts: Vec<(&str, Vec<String>, Option<&str>)> = nvme
        .partitions
        .iter()
        .map(|p| {
            (
                p.name.as_str(),
                p.mount_points.clone(),
                p.fs_type.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        parts,
        [
            ("nvme0n1p1", vec!["/boot/efi".to_string()], Some("vfat")),
            ("nvme0n1p2", vec!["/".to_string()], Some("ext4")),
        ]
    );
    let sda = inv.device("sda").unwrap();
    assert_eq!(
        (sda.rotational, sda.scheduler.as_deref()),
        (Some(true), Some("bfq"))
    );
    assert_eq!(
        (sda.fs_type.as_deref(), sda.mount_points.clone()),
        (Some("xfs"), vec!["/data".to_string()])
    );
    let nfs = inv
        .filesystems
        .iter()
        .find(|f| f.mount_point == "/mnt/nfs")
        .unwrap();
    assert_eq!(
        (nfs.fs_type.as_str(), nfs.source.as_deref()),
        ("nfs4", Some("filer:/export"))
    );
    assert!(!inv.filesystems.iter().any(|f| f.fs_type == "proc"));
    let ens5 = inv
        .net_interfaces
        .iter()
        .find(|n| n.name == "ens5")
        .unwrap();
    assert_eq!((ens5.speed_mbps, ens5.mtu), (Some(25_000), Some(9001)));
    // 5.4's snmp lacks fields procfs-core wants (Icmp OutRateLimit*, Udp MemErrors): the Tcp
    // line is still read.
    assert_eq!(parse_tcp_retrans(&text(&root, "proc/net/snmp")), Some(100));
}

#[test]
fn one_second_of_counters_is_iostat_and_mpstat_arithmetic() {
    let t0 = fixture("kernel-5.4");
    let t1 = fixture("kernel-5.4-later");
    let disks = whole_disks(&t0);
    assert_eq!(disks, ["nvme0n1", "sda"]);
    let before = Counters::read(&t0, &disks);
    let after = Counters::read(&t1, &disks);
    let s = after.since(&before, Duration::from_secs(1), 4096);

    let cpu = s.cpu.unwrap();
    // 200 ticks in all: user 100, system 10, iowait 40, idle 50.
    assert_eq!(
        (
            cpu.user_pct,
            cpu.system_pct,
            cpu.iowait_pct,
            cpu.idle_pct,
            cpu.steal_pct
        ),
        (50.0, 5.0, 20.0, 25.0, 0.0)
    );
    assert_eq!((cpu.busiest_cpu, cpu.busiest_cpu_pct), (0, 100.0));

    let nvme = s.disks["nvme0n1"];
    assert_eq!((nvme.read_iops, nvme.write_iops), (10_000.0, 5_000.0));
    assert_eq!(nvme.read_bytes_per_s, 80_000.0 * 512.0);
    assert_eq!(nvme.write_bytes_per_s, 40_000.0 * 512.0);
    assert_eq!(nvme.util_pct, 99.0);
    assert_eq!((nvme.r_await_ms, nvme.w_await_ms), (Some(0.2), Some(1.0)));
    assert_eq!(nvme.queue_size, 7.0);
    let sda = s.disks["sda"];
    assert_eq!(
        (sda.read_iops, sda.r_await_ms, sda.w_await_ms),
        (50.0, Some(150.0), None)
    );
    // 1000 ms busy in a 1000 ms second, capped at 100.
    assert_eq!(sda.util_pct, 100.0);
    // Partitions and empty loop devices are not sampled.
    assert_eq!(s.disks.len(), 2);

    let mem = s.memory.unwrap();
    assert_eq!(mem.free_bytes, 7_000_000 * 1024);
    assert_eq!(mem.available_bytes, Some(12_000_000 * 1024));
    assert_eq!(mem.page_cache_bytes, 4_000_000 * 1024);
    assert_eq!(
        (mem.swap_in_bytes_per_s, mem.swap_out_bytes_per_s),
        (0.0, 512.0 * 4096.0)
    );

    let ens5 = s.net["ens5"];
    assert_eq!(
        (ens5.rx_bytes_per_s, ens5.tx_bytes_per_s, ens5.errors_per_s),
        (125e6, 1e6, 3.0)
    );
    assert_eq!(s.tcp_retrans_per_s, Some(10.0));

    // The NFS mount (/proc/self/mountstats): 2000 READs in the second, 6 sent again, 2 timed
    // out; their mean round trip 12 ms, 13.95 ms from queue to reply. GETATTR did nothing.
    let nas = &s.nfs["/mnt/nas"];
    assert_eq!(nas.export, "192.0.2.20:/export");
    assert_eq!(
        (nas.ops_per_s, nas.retrans_per_s, nas.timeouts_per_s),
        (2000.0, 6.0, 2.0)
    );
    let read = nas.by_op["READ"];
    assert_eq!((read.rtt_ms, read.exe_ms), (12.0, 13.95));
    assert_eq!(nas.by_op.len(), 1);

    // Half a second: rates double.
    let half = after.since(&before, Duration::from_millis(500), 4096);
    assert_eq!(half.disks["nvme0n1"].read_iops, 20_000.0);
}

#[test]
fn kernel_3_10_formats() {
    let root = fixture("kernel-3.10");
    let disks = parse_diskstats(&text(&root, "proc/diskstats"));
    assert_eq!(disks.len(), 2);
    assert_eq!((disks[0].reads, disks[0].time_in_progress), (500, 700));
    assert_eq!(disks[0].discards, None);
    let (total, _) = parse_stat(&text(&root, "proc/stat")).unwrap();
    assert_eq!(
        (total.steal, total.guest, total.guest_nice),
        (Some(0), Some(0), None)
    );
    let inv = collect_inventory_from(&root);
    assert_eq!(
        inv.hostname, "localhost",
        "no hostname file: a default, not a crash"
    );
    assert_eq!(inv.cpu_cores, Some(1));
    let sda = inv.device("sda1").unwrap();
    assert_eq!(sda.scheduler.as_deref(), Some("deadline"));
    assert_eq!(sda.partitions.len(), 1);
    // No MemAvailable before 3.14: unknown, the rest still read.
    let c = Counters::read(&root, &["sda".into()]);
    let s = c.since(&c, Duration::from_secs(1), 4096);
    let mem = s.memory.unwrap();
    assert_eq!(mem.available_bytes, None);
    assert_eq!(mem.free_bytes, 8_000_000 * 1024);
    assert_eq!(s.disks["sda"].read_iops, 0.0);
    // The same read twice: nothing moved, so no CPU share can be computed.
    assert!(s.cpu.is_none());
}

#[test]
fn a_container_with_garbled_or_missing_files_degrades_to_unknown() {
    let root = fixture("container");
    let inv = collect_inventory_from(&root);
    assert_eq!(inv.memory_bytes, Some(1_024_000 * 1024));
    assert_eq!(inv.cpu_model, None);
    assert!(inv.block_devices.is_empty());
    assert!(
        inv.notes
            .iter()
            .any(|n| n.contains("/proc/cpuinfo unreadable")),
        "{:?}",
        inv.notes
    );
    assert!(inv
        .notes
        .iter()
        .any(|n| n.contains("block devices unknown")));
    assert!(parse_stat(&text(&root, "proc/stat")).is_none());
    assert!(parse_diskstats(&text(&root, "proc/diskstats")).is_empty());
    assert!(parse_net_dev(&text(&root, "proc/net/dev")).is_empty());
    assert_eq!(parse_tcp_retrans(&text(&root, "proc/net/snmp")), None);
    let c = Counters::read(&root, &[]);
    let s = c.since(&c, Duration::from_secs(1), 4096);
    assert!(s.cpu.is_none() && s.memory.is_none() && s.disks.is_empty() && s.net.is_empty());
    assert!(s.tcp_retrans_per_s.is_none());
    // A host with nothing at all.
    let empty = collect_inventory_from(&fixture("does-not-exist"));
    assert!(empty.notes.len() >= 3);
}

mod never_panic {
    use proptest::prelude::*;
    use stormark_probe::*;

    proptest! {
        #[test]
        fn on_any_text(s in "[ -~\n\t]{0,400}") {
            let _ = parse_stat(&s);
            let _ = parse_diskstats(&s);
            let _ = parse_meminfo(&s);
            let _ = parse_vmstat_swap(&s);
            let _ = parse_net_dev(&s);
            let _ = parse_tcp_retrans(&s);
        }

        #[test]
        fn on_numeric_lines(lines in proptest::collection::vec("[a-z0-9]{1,6}( [0-9]{1,20}){0,22}", 0..8)) {
            let s = lines.join("\n");
            let _ = parse_stat(&s);
            let _ = parse_diskstats(&s);
            let _ = parse_meminfo(&s);
            let _ = parse_vmstat_swap(&s);
        }
    }
}

#[test]
fn own_cpu_time_from_proc_self_stat() {
    // A process named with a space and a parenthesis: the fields count from the last ')'.
    let line = "4242 (stormark (w) 1) S 1 4242 4242 0 -1 4194560 1234 0 0 0 750 250 0 0 20 0 9 0 12345 123456789 2345 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0";
    assert_eq!(stormark_probe::parse_own_ticks(line), Some(1000));
    assert_eq!(stormark_probe::parse_own_ticks("garbage"), None);
    // The live process reads.
    let own = std::fs::read_to_string("/proc/self/stat").unwrap();
    assert!(stormark_probe::parse_own_ticks(&own).is_some());
}

/// ZFS's arcstats (OpenZFS 2.2's kstat text: a header line, `name type data`, then a counter
/// a line), read twice a second apart as the sampler reads it.
#[test]
fn zfs_arcstats_read_a_second_apart() {
    let then = Counters::read(&fixture("zfs"), &[]);
    let now = Counters::read(&fixture("zfs-later"), &[]);
    let arc = now
        .since(&then, Duration::from_secs(1), 4096)
        .arc
        .expect("arcstats in both reads");
    assert_eq!((arc.hits_per_s, arc.misses_per_s), (9800.0, 400.0));
    assert_eq!(
        (arc.demand_data_hits_per_s, arc.demand_data_misses_per_s),
        (Some(9600.0), Some(300.0))
    );
    assert_eq!(arc.size_bytes, 16_738_357_616);
    assert_eq!(arc.target_bytes, Some(16_742_211_584));
    assert_eq!(arc.max_bytes, Some(16_742_264_832));
    // No zfs module loaded: no ARC in the sample.
    let plain = Counters::read(&fixture("kernel-6.18"), &[]);
    assert!(plain
        .since(&plain, Duration::from_secs(1), 4096)
        .arc
        .is_none());
}

/// This VM's DAMON scheme (a kdamond `on`, its context's scheme `pageout`) and its virtio
/// balloon, as captured; a kdamond turned off, or none at all, is nothing.
#[test]
fn damon_pageout_and_a_balloon_from_sysfs() {
    let inv = collect_inventory_from(&fixture("kernel-6.18"));
    let e = &inv.cache_eviction;
    assert_eq!(e.damon_pageout.len(), 1, "{e:?}");
    let s = &e.damon_pageout[0];
    assert_eq!(s.path, "kdamonds/0/contexts/0/schemes/0");
    assert_eq!(s.operations.as_deref(), Some("paddr"));
    // 12 aggregation intervals of 5 s.
    assert_eq!(s.min_age_us, Some(60_000_000));
    assert!(e.virtio_balloon);
    assert!(collect_inventory_from(&fixture("kernel-5.4"))
        .cache_eviction
        .is_none());
    // The same tree with its kdamond off.
    let dir = tempfile::tempdir().unwrap();
    let kd = dir.path().join("sys/kernel/mm/damon/admin/kdamonds/0");
    std::fs::create_dir_all(kd.join("contexts/0/schemes/0")).unwrap();
    std::fs::write(kd.join("state"), "off\n").unwrap();
    std::fs::write(kd.join("contexts/0/schemes/0/action"), "pageout\n").unwrap();
    let off = stormark_probe::cache_eviction(&HostRoot::at(dir.path()));
    assert!(off.is_none(), "{off:?}");
    std::fs::write(kd.join("state"), "on\n").unwrap();
    let on = stormark_probe::cache_eviction(&HostRoot::at(dir.path()));
    assert_eq!(on.damon_pageout.len(), 1);
    assert_eq!(
        on.damon_pageout[0].min_age_us, None,
        "no intervals: unknown"
    );
}

/// Serial numbers are read only when asked (`stormark probe --show-serial`): NVMe's
/// `device/serial`, virtio's `serial`, SCSI and SATA's unit serial number page; an inventory
/// collected for a run has none, and its JSON no `serial` key.
#[test]
fn serials_only_when_asked() {
    let root = fixture("kernel-5.4");
    let mut inv = collect_inventory_from(&root);
    assert!(inv.block_devices.iter().all(|d| d.serial.is_none()));
    let json = serde_json::to_string(&inv).unwrap();
    assert!(!json.contains("serial"), "{json}");
    stormark_probe::read_serials(&mut inv, &root);
    let serial = |name: &str| inv.device(name).unwrap().serial.clone();
    assert_eq!(serial("nvme0n1").as_deref(), Some("S4EVNF0M812345A"));
    assert_eq!(serial("sda").as_deref(), Some("WD-WCC4E1234567"));
    let root = fixture("kernel-6.18");
    let mut inv = collect_inventory_from(&root);
    stormark_probe::read_serials(&mut inv, &root);
    assert_eq!(
        inv.device("vda").unwrap().serial.as_deref(),
        Some("overlayblk")
    );
}
