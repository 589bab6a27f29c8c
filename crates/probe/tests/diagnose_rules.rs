//! The diagnosis rules on synthetic runs: a phase's 1-second IOPS and the host samples beside
//! it. Each case's findings are a golden output (insta snapshots under tests/snapshots/).

use std::collections::BTreeMap;

use stormark_probe::{diagnose, BlockDevice, Inventory};
use stormark_stats::{
    CpuSample, DiskSample, Host, HostSample, Interval, MemorySample, Phase, PhaseJob, Results,
    Summary,
};

const S: u64 = 1_000_000_000;

fn summary(iops: f64, secs: f64) -> Summary {
    Summary {
        ops: (iops * secs) as u64,
        bytes: (iops * secs) as u64 * 4096,
        iops,
        bw_bytes_per_s: iops * 4096.0,
        errors: 0,
        latency_ns: None,
        service_latency_ns: None,
        first_byte_latency_ns: None,
    }
}

/// A run of `iops` per second (one value per second) with one read job.
fn phase(iops: &[f64], direct: bool) -> Phase {
    let secs = iops.len() as f64;
    let mean = iops.iter().sum::<f64>() / secs;
    let read = summary(mean, secs);
    Phase {
        name: "run".into(),
        kind: None,
        jobs: vec![PhaseJob {
            name: "randread-4k".into(),
            engine: "io_uring".into(),
            direct,
            workers: 1,
            iodepth: 32,
            iodepth_batch: 1,
            working_set_bytes: 64 << 30,
            rate_iops: None,
            target: None,
        }],
        start_offset_ns: 2 * S,
        duration_ns: iops.len() as u64 * S,
        total: read.clone(),
        by_op: BTreeMap::from([("read".to_string(), read)]),
        by_host: BTreeMap::new(),
        by_job: BTreeMap::new(),
        by_target: BTreeMap::new(),
        errors: Vec::new(),
        intervals: iops
            .iter()
            .enumerate()
            .map(|(i, v)| Interval {
                t_s: i as u32,
                duration_ns: S,
                total: summary(*v, 1.0),
                by_op: BTreeMap::new(),
            })
            .collect(),
        histograms: BTreeMap::new(),
        host_starts_ns: BTreeMap::new(),
        start_uncertainty_ns: None,
        done: None,
        cpu: None,
        repetition: None,
        net: Vec::new(),
        verify: None,
        reached: None,
    }
}

/// A quiet host: 60% idle, 10% iowait, disk `sdb` at 50% util serving `disk_iops` reads.
fn calm(disk_iops: f64) -> HostSample {
    HostSample {
        t_ns: 0,
        duration_ns: S,
        cpu: Some(CpuSample {
            user_pct: 20.0,
            system_pct: 10.0,
            iowait_pct: 10.0,
            idle_pct: 60.0,
            steal_pct: 0.0,
            busiest_cpu: 3,
            busiest_cpu_pct: 45.0,
            own_pct: None,
        }),
        memory: Some(MemorySample {
            free_bytes: 8 << 30,
            available_bytes: Some(12 << 30),
            page_cache_bytes: 2 << 30,
            dirty_bytes: 0,
            swap_in_bytes_per_s: 0.0,
            swap_out_bytes_per_s: 0.0,
        }),
        disks: stormark_stats::Names::from([(
            "sdb".to_string(),
            DiskSample {
                read_iops: disk_iops,
                write_iops: 0.0,
                read_bytes_per_s: disk_iops * 4096.0,
                write_bytes_per_s: 0.0,
                util_pct: 50.0,
                r_await_ms: Some(0.4),
                w_await_ms: None,
                queue_size: 8.0,
            },
        )]),
        ..HostSample::default()
    }
}

/// A run of `secs` seconds at 20k IOPS whose host samples are `calm` changed by `tweak`.
fn run(secs: usize, tweak: impl Fn(&mut HostSample)) -> Results {
    run_with(&vec![20_000.0; secs], true, tweak)
}

fn run_with(iops: &[f64], direct: bool, tweak: impl Fn(&mut HostSample)) -> Results {
    let mut r = Results::new(vec!["stormark".into(), "run".into()]);
    let p = phase(iops, direct);
    // Samples every second from the run's start, covering the prepare gap and the phase.
    let samples = (1..=(iops.len() as u64 + 4))
        .map(|t| {
            let mut s = calm(20_000.0);
            s.t_ns = t * S;
            tweak(&mut s);
            s
        })
        .collect();
    let inv = Inventory {
        hostname: "node1".into(),
        cpus: 8,
        memory_bytes: Some(16 << 30),
        block_devices: vec![BlockDevice {
            name: "sdb".into(),
            rotational: Some(false),
            ..BlockDevice::default()
        }],
        ..Inventory::default()
    };
    r.hosts.push(Host {
        target: None,
        name: "node1".into(),
        inventory: inv,
        samples,
        sampler_cpu_ns: Some(1_000_000),
        address: None,
        failure: None,
        clock_offset_ns: None,
        clock_rtt_ns: None,
    });
    r.phases.push(p);
    r
}

fn codes(r: &Results) -> Vec<String> {
    diagnose(r).into_iter().map(|f| f.code).collect()
}

#[test]
fn nothing_wrong_means_no_finding() {
    assert_eq!(codes(&run(120, |_| {})), Vec::<String>::new());
}

#[test]
fn a_saturated_device_under_flat_load() {
    let r = run(120, |s| s.disks.get_mut("sdb").unwrap().util_pct = 99.5);
    insta::assert_json_snapshot!("device_saturated", diagnose(&r));
}

/// Issue 53: a network phase touches no disk; a device busy (or slow) meanwhile is not its
/// finding.
#[test]
fn a_network_phase_gets_no_device_findings() {
    let mut r = run(120, |s| {
        let d = s.disks.get_mut("sdb").unwrap();
        d.util_pct = 99.5;
        d.r_await_ms = Some(180.0);
    });
    assert_eq!(codes(&r), ["device-saturated", "high-device-latency"]);
    for j in &mut r.phases[0].jobs {
        j.engine = "net".into();
    }
    let found = codes(&r);
    assert!(
        !found
            .iter()
            .any(|c| c.starts_with("device") || c.contains("device-")),
        "{found:?}"
    );
}

#[test]
fn saturation_is_not_claimed_when_the_load_swings() {
    // 30% swings: noisy, and the busy device may be only part of the story.
    let iops: Vec<f64> = (0..120)
        .map(|i| if i % 2 == 0 { 14_000.0 } else { 26_000.0 })
        .collect();
    let r = run_with(&iops, true, |s| {
        s.disks.get_mut("sdb").unwrap().util_pct = 99.5
    });
    assert_eq!(codes(&r), ["noisy-run"]);
    insta::assert_json_snapshot!("noisy_run", diagnose(&r));
}

#[test]
fn cpu_bound_host() {
    let r = run(120, |s| {
        let c = s.cpu.as_mut().unwrap();
        (c.user_pct, c.system_pct, c.iowait_pct, c.idle_pct) = (60.0, 37.0, 1.0, 2.0);
        c.busiest_cpu_pct = 100.0;
    });
    // CPU-bound says it all; the saturated core is not said again.
    insta::assert_json_snapshot!("cpu_bound", diagnose(&r));
    // Its advice fits the engine (issue 56: io_uring was told to use io_uring).
    let advice = |engine: &str| {
        let mut r = r.clone();
        for j in &mut r.phases[0].jobs {
            j.engine = engine.into();
        }
        diagnose(&r)
            .into_iter()
            .find(|f| f.code == "cpu-bound")
            .unwrap()
            .advice
    };
    assert!(!advice("io_uring").contains("--engine io_uring"));
    assert!(advice("psync").contains("--engine io_uring"));
    assert!(advice("iscsi").contains("session"), "{}", advice("iscsi"));
    // io_uring at depth 32, one I/O a system call (fio's default): t/io_uring's batches are
    // the advice (issue 59); not where the job batches already, nor at a depth of one.
    assert!(advice("io_uring").contains("--iodepth-batch 8"));
    let advice_with = |depth: u32, batch: u32| {
        let mut r = r.clone();
        for j in &mut r.phases[0].jobs {
            (j.engine, j.iodepth, j.iodepth_batch) = ("io_uring".into(), depth, batch);
        }
        diagnose(&r)
            .into_iter()
            .find(|f| f.code == "cpu-bound")
            .unwrap()
            .advice
    };
    assert!(!advice_with(32, 8).contains("--iodepth-batch"));
    assert!(!advice_with(1, 1).contains("--iodepth-batch"));
}

#[test]
fn one_core_saturated() {
    let r = run(120, |s| s.cpu.as_mut().unwrap().busiest_cpu_pct = 99.0);
    insta::assert_json_snapshot!("cpu_core_saturated", diagnose(&r));
    // One io_uring worker at depth 32, a system call an I/O: t/io_uring's batches are the
    // advice (issue 59); not once the job batches.
    let advice = |batch: u32| {
        let mut r = r.clone();
        r.phases[0].jobs[0].iodepth_batch = batch;
        diagnose(&r)
            .into_iter()
            .find(|f| f.code == "cpu-core-saturated")
            .unwrap()
            .advice
    };
    assert!(advice(1).contains("--iodepth-batch 8"), "{}", advice(1));
    assert!(!advice(8).contains("--iodepth-batch"), "{}", advice(8));
}

#[test]
fn high_iowait_and_steal() {
    let r = run(120, |s| {
        let c = s.cpu.as_mut().unwrap();
        (c.iowait_pct, c.idle_pct, c.steal_pct) = (35.0, 30.0, 5.0);
    });
    insta::assert_json_snapshot!("high_iowait_and_steal", diagnose(&r));
}

#[test]
fn swapping() {
    let r = run(120, |s| {
        s.memory.as_mut().unwrap().swap_out_bytes_per_s = 4.0 * 1048576.0
    });
    insta::assert_json_snapshot!("swapping", diagnose(&r));
    // A few pages (under 1 MiB over the run) are not "swapping".
    let r = run(120, |s| {
        s.memory.as_mut().unwrap().swap_in_bytes_per_s = 4096.0
    });
    assert_eq!(codes(&r), Vec::<String>::new());
}

#[test]
fn slow_device() {
    let r = run(120, |s| {
        let d = s.disks.get_mut("sdb").unwrap();
        d.r_await_ms = Some(180.0);
        d.queue_size = 31.0;
    });
    insta::assert_json_snapshot!("high_device_latency", diagnose(&r));
}

#[test]
fn page_cache_serving_buffered_reads() {
    // 20k IOPS measured while the disk served 500: the page cache answered.
    let r = run_with(&[20_000.0; 120], false, |s| {
        s.disks.get_mut("sdb").unwrap().read_iops = 500.0;
    });
    insta::assert_json_snapshot!("page_cache_reads", diagnose(&r));
    // The same figures with direct I/O: not the page cache.
    let r = run_with(&[20_000.0; 120], true, |s| {
        s.disks.get_mut("sdb").unwrap().read_iops = 500.0;
    });
    assert_eq!(codes(&r), Vec::<String>::new());
    // Buffered, disk keeping up, but a working set (1 GiB) far below RAM (16 GiB).
    let mut r = run_with(&[20_000.0; 120], false, |_| {});
    r.phases[0].jobs[0].working_set_bytes = 1 << 30;
    // The disk read 9 GiB of that 1 GiB meanwhile: the cache did not keep it either.
    assert_eq!(codes(&r), ["page-cache-reads", "page-cache-evicted"]);
}

#[test]
fn short_run() {
    let r = run(20, |_| {});
    insta::assert_json_snapshot!("run_too_short", diagnose(&r));
}

/// Issue 53: phases of 11.9, 0.3 and 1.9 s were said to be "measured for 0 s or less".
#[test]
fn short_phases_are_said_with_the_seconds_they_lasted() {
    let mut r = run(20, |_| {});
    let mut second = r.phases[0].clone();
    second.name = "run:b".into();
    second.duration_ns = 300_000_000;
    let mut third = r.phases[0].clone();
    third.name = "run:c".into();
    third.duration_ns = 1_900_000_000;
    r.phases[0].duration_ns = 11_900_000_000;
    r.phases.push(second);
    r.phases.push(third);
    let found = diagnose(&r);
    let short = found
        .iter()
        .find(|f| f.code == "run-too-short")
        .expect("a run-too-short finding");
    assert!(
        short
            .message
            .starts_with("3 phases measured for 0.3 to 12 s"),
        "{}",
        short.message
    );
}

#[test]
fn the_quick_profile_says_what_it_is_instead_of_warning_about_its_length() {
    let mut r = run(5, |_| {});
    r.target = Some(stormark_stats::Target {
        path: "/mnt/my data".into(),
        kind: "directory".into(),
        run_dir: None,
        kept: false,
        device: None,
        fs_type: None,
    });
    r.spec = Default::default();
    r.findings = diagnose(&r);
    assert!(codes(&r).contains(&"run-too-short".to_string()));
    stormark_probe::first_look(&mut r);
    let codes: Vec<&str> = r.findings.iter().map(|f| f.code.as_str()).collect();
    assert_eq!(codes, ["first-look"]);
    assert_eq!(r.spec.profile.as_deref(), Some("quick"));
    // The next command names the target, quoted for the shell.
    assert!(
        r.findings[0]
            .advice
            .contains("stormark run '/mnt/my data' --rw randread"),
        "{}",
        r.findings[0].advice
    );
    // From the disk (issue 56: as suggested before, it measured the page cache).
    assert!(
        r.findings[0].advice.contains("--direct"),
        "{}",
        r.findings[0].advice
    );
}

#[test]
fn prepare_phases_and_runs_without_samples_are_not_judged() {
    let mut r = run(120, |s| s.disks.get_mut("sdb").unwrap().util_pct = 100.0);
    r.phases[0].name = "prepare".into();
    assert_eq!(codes(&r), Vec::<String>::new());
    let mut r = run(120, |s| s.disks.get_mut("sdb").unwrap().util_pct = 100.0);
    r.hosts[0].samples.clear();
    assert_eq!(codes(&r), Vec::<String>::new());
    // An inventory that does not parse (another version's) reads as unknown, and the rules
    // still run.
    let r = run(120, |s| s.disks.get_mut("sdb").unwrap().util_pct = 100.0);
    let mut doc = serde_json::to_value(&r).unwrap();
    doc["hosts"][0]["inventory"] = serde_json::json!("garbled");
    let r: Results = serde_json::from_value(doc).unwrap();
    assert_eq!(r.hosts[0].inventory, Inventory::default());
    assert_eq!(codes(&r), ["device-saturated"]);
}

#[test]
fn an_open_loop_that_falls_behind() {
    let mut r = run(120, |_| {});
    r.phases[0].jobs[0].rate_iops = Some(25_000.0);
    // 20k achieved of 25k asked.
    assert_eq!(codes(&r), ["rate-not-achieved"]);
    r.phases[0].jobs[0].rate_iops = Some(20_300.0);
    assert_eq!(codes(&r), Vec::<String>::new());
}

/// An S3 GET phase: median first byte and whole GET (ns), and the bytes per second moved.
fn gets(first_p50: u64, whole_p50: u64, bw: f64) -> Results {
    let mut r = run(120, |_| {});
    let latency = |p50: u64| stormark_stats::Latency {
        min: p50 / 2,
        mean: p50 as f64,
        p50,
        p90: p50 * 2,
        p99: p50 * 3,
        p999: p50 * 4,
        p9999: p50 * 4,
        max: p50 * 5,
    };
    let get = Summary {
        latency_ns: Some(latency(whole_p50)),
        first_byte_latency_ns: Some(latency(first_p50)),
        bw_bytes_per_s: bw,
        ..summary(20_000.0, 120.0)
    };
    r.phases[0].by_op = BTreeMap::from([("get".to_string(), get)]);
    r
}

#[test]
fn s3_where_get_time_goes() {
    // 9 of 10 ms before the first byte: the service.
    assert_eq!(codes(&gets(9_000_000, 10_000_000, 1e8)), ["s3-server-time"]);
    // 1 of 10 ms: the transfer; no link speed known.
    assert_eq!(
        codes(&gets(1_000_000, 10_000_000, 1e8)),
        ["s3-transfer-time"]
    );
    // In between: nothing to say.
    assert_eq!(
        codes(&gets(5_000_000, 10_000_000, 1e8)),
        Vec::<String>::new()
    );
    // The transfer at 9 Gbit/s on a 10 Gbit/s link: the network is the limit.
    let mut r = gets(1_000_000, 10_000_000, 9e9 / 8.0);
    r.hosts[0].inventory.net_interfaces = vec![stormark_probe::NetInterface {
        name: "eth0".into(),
        speed_mbps: Some(10_000),
        mtu: Some(9000),
        state: Some("up".into()),
    }];
    assert_eq!(codes(&r), ["s3-network-bound"]);
}

#[test]
fn s3_throttling() {
    let mut r = run(120, |_| {});
    r.phases[0].errors.push(stormark_stats::ErrorSummary {
        host: "node1".into(),
        job: "s3-get-4k".into(),
        op: "get".into(),
        kind: "throttled".into(),
        count: 120,
        first_offset: 0,
        ignored: false,
    });
    assert_eq!(codes(&r), ["s3-throttled"]);
}

#[test]
fn s3_server_failures_and_a_full_server() {
    let error = |kind: &str, count: u64| stormark_stats::ErrorSummary {
        host: "node1".into(),
        job: "s3-put-1m".into(),
        op: "put".into(),
        kind: kind.into(),
        count,
        first_offset: 0,
        ignored: false,
    };
    let mut r = run(120, |_| {});
    r.phases[0].errors.push(error("http-500", 7));
    r.phases[0].errors.push(error("http-404", 3));
    assert_eq!(codes(&r), ["s3-server-errors"]);
    let f = &diagnose(&r)
        .into_iter()
        .find(|f| f.code == "s3-server-errors")
        .unwrap();
    assert!(f.message.contains("failed 7 requests"), "{}", f.message);
    r.phases[0].errors.push(error("http-507", 5));
    assert_eq!(codes(&r), ["s3-server-full"]);
    // A client error alone (404) is not the service's failure.
    r.phases[0].errors.retain(|e| e.kind == "http-404");
    assert_eq!(codes(&r), Vec::<String>::new());
}

#[test]
fn an_s3_client_out_of_cpu() {
    let busy = |own: f64| {
        let mut r = run(120, |s| {
            let c = s.cpu.as_mut().unwrap();
            (c.user_pct, c.system_pct, c.iowait_pct, c.idle_pct) = (60.0, 38.0, 0.0, 2.0);
            c.own_pct = Some(own);
        });
        for j in &mut r.phases[0].jobs {
            j.engine = "s3".into();
        }
        r
    };
    // stormark itself takes most of a CPU-bound client: the client is the limit, with its
    // CPU time per operation.
    let r = busy(80.0);
    assert_eq!(codes(&r), ["s3-client-cpu"]);
    let f = diagnose(&r).remove(0);
    assert!(f.message.contains("stormark used 80%"), "{}", f.message);
    assert!(
        f.evidence["cpu_us_per_op"].as_f64().unwrap() > 0.0,
        "{}",
        f.evidence
    );
    // Something else takes it: the host is CPU-bound, with advice for a client.
    let r = busy(10.0);
    assert_eq!(codes(&r), ["cpu-bound"]);
    assert!(diagnose(&r)[0].advice.contains("--agents"));
}

#[test]
fn network_tests_say_loss_mtu_mismatch_and_a_slow_link() {
    let on = |interface: &'static str, retransmits: u32, pmtu: u32, link: Option<u64>| {
        let mut r = run(120, |_| {});
        r.phases[0].by_op = BTreeMap::from([(
            "send".to_string(),
            Summary {
                bw_bytes_per_s: 500e6 / 8.0,
                ..summary(0.0, 120.0)
            },
        )]);
        r.net = Some(stormark_stats::NetReport {
            server: "10.0.0.2:7879".into(),
            protocol: "tcp".into(),
            mode: "throughput".into(),
            reverse: false,
            bidir: false,
            interface: Some(interface.into()),
            link_mbps: link,
            mtu: Some(pmtu),
            path_mtu: None,
            streams: vec![stormark_stats::NetStream {
                bytes: 1_448_000_000,
                retransmits: Some(retransmits),
                mss: Some(1448),
                pmtu: Some(pmtu),
                ..Default::default()
            }],
            ..Default::default()
        });
        let mut codes: Vec<String> = diagnose(&r)
            .into_iter()
            .map(|f| f.code)
            .filter(|c| c.starts_with("net-"))
            .collect();
        codes.sort();
        codes
    };
    let net = |retransmits: u32, pmtu: u32, link: Option<u64>| on("eth0", retransmits, pmtu, link);
    // Loopback's MTU and segments differ by the kernel's choice, not a second host's MTU.
    assert_eq!(on("lo", 0, 65536, None), Vec::<String>::new());
    assert_eq!(net(0, 1500, None), Vec::<String>::new());
    // 1,000,000 segments: 999 retransmits is under 0.1%, 1000 is not.
    assert_eq!(net(999, 1500, None), Vec::<String>::new());
    assert_eq!(net(1000, 1500, None), ["net-retransmits"]);
    assert_eq!(net(0, 9000, None), ["net-mtu-mismatch"]);
    // 500 Mbit/s on a 10 Gbit/s link; on a 600 Mbit/s one it is 83%, fine.
    assert_eq!(net(0, 1500, Some(10_000)), ["net-below-link"]);
    assert_eq!(net(0, 1500, Some(600)), Vec::<String>::new());
}

#[test]
fn a_stream_whose_thread_takes_a_whole_cpu_is_cpu_bound() {
    let net = |sender: Option<f64>, receiver: Option<f64>| {
        let mut r = Results::new(vec!["stormark".into()]);
        r.net = Some(stormark_stats::NetReport {
            server: "10.0.0.2:7879".into(),
            protocol: "tcp".into(),
            mode: "throughput".into(),
            streams: vec![stormark_stats::NetStream {
                bytes: 1 << 30,
                sender_cpu_pct: sender,
                receiver_cpu_pct: receiver,
                ..Default::default()
            }],
            ..Default::default()
        });
        r.phases.push(phase(&[1.0], false));
        diagnose(&r)
            .into_iter()
            .filter(|f| f.code == "net-cpu-bound")
            .map(|f| f.message)
            .collect::<Vec<_>>()
    };
    assert!(net(None, None).is_empty());
    assert!(net(Some(89.9), Some(40.0)).is_empty());
    let said = net(Some(40.0), Some(97.0));
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains("the receiving thread on 10.0.0.2:7879 at 97%"),
        "{said:?}"
    );
}

#[test]
fn a_mesh_names_its_slow_row_and_the_hosts_whose_mtus_differ() {
    use stormark_stats::{MeshHost, MeshPair, MeshReport};
    let host = |ip: &str, mtu: u32| MeshHost {
        ip: ip.into(),
        mtu: Some(mtu),
        ..Default::default()
    };
    let pair = |from: u32, to: u32, gbit: f64| MeshPair {
        from,
        to,
        bits_per_s: gbit * 1e9,
        ..Default::default()
    };
    let mesh = |mtu2: u32, slow: f64| {
        let mut r = Results::new(vec!["stormark".into()]);
        r.mesh = Some(MeshReport {
            hosts: vec![host("a", 1500), host("b", 1500), host("c", mtu2)],
            alone: vec![
                pair(0, 1, slow),
                pair(0, 2, slow),
                pair(1, 0, 10.0),
                pair(1, 2, 9.5),
                pair(2, 0, 9.8),
                pair(2, 1, 10.0),
            ],
            ..Default::default()
        });
        diagnose(&r)
    };
    assert!(mesh(1500, 9.0).is_empty(), "{:?}", mesh(1500, 9.0));
    let f = mesh(9000, 2.0);
    let codes: Vec<&str> = f.iter().map(|f| f.code.as_str()).collect();
    assert_eq!(codes, ["net-pair-slow", "net-mtu-mismatch"]);
    assert!(
        f[0].message.contains("2 of 6 pairs (alone)"),
        "{}",
        f[0].message
    );
    assert!(
        f[0].message.contains("everything a sends"),
        "{}",
        f[0].message
    );
    assert_eq!(f[1].evidence["hosts"]["9000"], serde_json::json!(["c"]));
    // Below 80% of the median pair (9.65 Gbit/s here) is slow: 7.7 is, 8.0 is not.
    assert_eq!(mesh(1500, 7.7).len(), 1);
    assert!(mesh(1500, 8.0).is_empty());
}

#[test]
fn mesh_pairs_below_their_links_rated_speed_are_named_even_when_all_are_alike() {
    use stormark_stats::{MeshHost, MeshPair, MeshReport};
    let host = |ip: &str, mbps: Option<u64>| MeshHost {
        ip: ip.into(),
        link_mbps: mbps,
        ..Default::default()
    };
    let pair = |from: u32, to: u32, gbit: f64| MeshPair {
        from,
        to,
        bits_per_s: gbit * 1e9,
        ..Default::default()
    };
    let mesh = |gbit: f64, mbps: Option<u64>| {
        let mut r = Results::new(vec!["stormark".into()]);
        r.mesh = Some(MeshReport {
            hosts: vec![host("a", Some(25_000)), host("b", mbps)],
            alone: vec![pair(0, 1, gbit), pair(1, 0, gbit)],
            ..Default::default()
        });
        diagnose(&r)
    };
    // Both pairs alike, so no pair is slow against the median; against a 10 Gbit/s link
    // (the slower end), 6 Gbit/s is below 80%, 8.5 is not.
    let f = mesh(6.0, Some(10_000));
    let codes: Vec<&str> = f.iter().map(|f| f.code.as_str()).collect();
    assert_eq!(codes, ["net-pair-below-link"], "{f:?}");
    assert!(
        f[0].message.contains("a -> b 6000 of 10000 Mbit/s (60%)"),
        "{}",
        f[0].message
    );
    assert!(mesh(8.5, Some(10_000)).is_empty());
    // One end's speed unknown: the other's rates the pair (25 Gbit/s).
    assert_eq!(mesh(8.5, None).len(), 1);
}

#[test]
fn a_mesh_pair_with_slow_round_trips_is_named_and_microseconds_are_not() {
    use stormark_stats::{MeshHost, MeshPair, MeshReport};
    let mesh = |slow_ns: u64| {
        let mut r = Results::new(vec!["stormark".into()]);
        let pair = |from: u32, to: u32, p50: u64| MeshPair {
            from,
            to,
            bits_per_s: 1e9,
            rtt_p50_ns: Some(p50),
            ..Default::default()
        };
        r.mesh = Some(MeshReport {
            hosts: ["a", "b", "c"]
                .iter()
                .map(|ip| MeshHost {
                    ip: ip.to_string(),
                    ..Default::default()
                })
                .collect(),
            alone: vec![
                pair(0, 1, 80_000),
                pair(0, 2, slow_ns),
                pair(1, 0, 80_000),
                pair(1, 2, 90_000),
                pair(2, 0, 85_000),
                pair(2, 1, 80_000),
            ],
            ..Default::default()
        });
        diagnose(&r)
            .into_iter()
            .filter(|f| f.code == "net-pair-latency")
            .map(|f| f.message)
            .collect::<Vec<_>>()
    };
    // 1 ms against a median of 85 µs: named.
    let said = mesh(1_000_000);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].contains("a -> c 1000 µs"), "{said:?}");
    // Twice the median but only tens of microseconds more: nothing to say.
    assert!(mesh(180_000).is_empty());
}

#[test]
fn a_host_clock_far_off_is_said() {
    let mut r = run(10, |_| {});
    r.hosts[0].clock_offset_ns = Some(30_000_000_000);
    r.hosts[0].clock_rtt_ns = Some(200_000);
    let f = diagnose(&r);
    let c = f
        .iter()
        .find(|f| f.code == "clock-offset")
        .expect("a clock finding");
    assert!(c.message.contains("30.0 s ahead"), "{}", c.message);
    // Within a second: nothing to say.
    r.hosts[0].clock_offset_ns = Some(-200_000_000);
    assert!(!codes(&r).contains(&"clock-offset".to_string()));
}

/// The kernel NFS client's counters of the mount: RPCs sent again, a slow operation named
/// beside the others, RPCs waiting in the client; a healthy mount says nothing.
#[test]
fn an_nfs_mounts_story() {
    use stormark_stats::{NfsOpSample, NfsSample};
    let nfs = |retrans_per_s: f64, rtt_ms: f64, exe_ms: f64| {
        move |s: &mut HostSample| {
            let op = |rtt_ms, exe_ms| NfsOpSample {
                ops_per_s: 1e3,
                rtt_ms,
                exe_ms,
            };
            let by_op = [
                ("READ".into(), op(rtt_ms, exe_ms)),
                ("GETATTR".into(), op(0.4, 0.5)),
            ];
            let (export, ops_per_s) = ("nas:/export".into(), 2e3);
            let timeouts_per_s = 0.0;
            let n = NfsSample {
                export,
                ops_per_s,
                retrans_per_s,
                timeouts_per_s,
                by_op: by_op.into(),
            };
            s.nfs.insert("/mnt/nas".into(), n);
        }
    };
    assert_eq!(codes(&run(120, nfs(0.0, 1.0, 1.2))), Vec::<String>::new());
    let r = run(120, nfs(0.5, 14.0, 40.0));
    let want = ["nfs-retrans", "nfs-slow-rpc", "nfs-client-queue"];
    assert_eq!(codes(&r), want);
    let f: Vec<String> = diagnose(&r).into_iter().map(|f| f.message).collect();
    for (i, said) in [
        (0, "sent 60 RPCs again (0.03% of 240000)"),
        (1, "READ took 14.0 ms round trip"),
        (1, "GETATTR 0.4 ms"),
        (2, "waited 26.0 ms in the client"),
    ] {
        assert!(f[i].contains(said), "{f:?}");
    }
}

/// ZFS's ARC from the arcstats fixtures (tests/fixtures/zfs, zfs-later: a second apart):
/// 97% of demand data reads answered from the ARC make `arc-reads`; an ARC that missed most
/// of them, or a phase without reads, says nothing.
#[test]
fn the_arc_answering_most_reads_is_said_from_arcstats_fixtures() {
    use stormark_probe::{Counters, HostRoot};
    let root = |name: &str| {
        HostRoot::at(
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures")
                .join(name),
        )
    };
    let arc = Counters::read(&root("zfs-later"), &[])
        .since(
            &Counters::read(&root("zfs"), &[]),
            std::time::Duration::from_secs(1),
            4096,
        )
        .arc
        .expect("arcstats fixtures");
    let r = run(120, |s| s.arc = Some(arc));
    assert_eq!(codes(&r), ["arc-reads"]);
    let f = &diagnose(&r)[0];
    assert!(
        f.message
            .contains("answered 97% of 1188000 demand data reads"),
        "{}",
        f.message
    );
    assert!(
        f.message.contains("ARC 15.6 GiB of a 15.6 GiB target"),
        "{}",
        f.message
    );
    assert_eq!(f.evidence["arc_hits"], 1_152_000.0);
    assert_eq!(f.evidence["arc_target_bytes"], 16_742_211_584u64);
    // Misses dominate: the pool's disks served the reads.
    let cold = stormark_stats::ArcSample {
        demand_data_hits_per_s: Some(100.0),
        demand_data_misses_per_s: Some(9_000.0),
        ..arc
    };
    assert!(codes(&run(120, |s| s.arc = Some(cold))).is_empty());
    // An older module without demand counters: every access counted instead.
    let old = stormark_stats::ArcSample {
        demand_data_hits_per_s: None,
        demand_data_misses_per_s: None,
        ..arc
    };
    let f = diagnose(&run(120, |s| s.arc = Some(old)));
    assert!(
        f[0].message.contains("of 1224000 accesses"),
        "{}",
        f[0].message
    );
    // A write phase: the ARC's hits are not the phase's figures.
    let mut w = run(120, |s| s.arc = Some(arc));
    let read = w.phases[0].by_op.remove("read").unwrap();
    w.phases[0].by_op.insert("write".into(), read);
    assert!(codes(&w).is_empty());
}

/// A host whose page cache is taken away (this VM's DAMON pageout scheme): buffered reads
/// of a working set that fits in RAM get `page-cache-evicted`, from the scheme alone or from
/// the devices reading the working set over again; direct reads, and a pinned cache the
/// devices did not read, do not.
#[test]
fn a_host_evicting_the_page_cache_is_said() {
    use stormark_stats::{CacheEviction, DamonScheme};
    let small = |r: &mut Results| r.phases[0].jobs[0].working_set_bytes = 1 << 30;
    let damon = |r: &mut Results| {
        r.hosts[0].inventory.cache_eviction = CacheEviction {
            damon_pageout: vec![DamonScheme {
                path: "kdamonds/0/contexts/0/schemes/0".into(),
                operations: Some("paddr".into()),
                min_age_us: Some(60_000_000),
            }],
            virtio_balloon: true,
        }
    };
    let quiet = |s: &mut HostSample| s.disks.get_mut("sdb").unwrap().read_bytes_per_s = 0.0;
    // DAMON on, the devices quiet: said from the scheme.
    let mut r = run_with(&[20_000.0; 120], false, quiet);
    small(&mut r);
    damon(&mut r);
    assert_eq!(codes(&r), ["page-cache-reads", "page-cache-evicted"]);
    let f = diagnose(&r).pop().unwrap();
    assert!(f.message.contains("a DAMON pageout scheme runs on this host (kdamonds/0/contexts/0/schemes/0), paging out what goes unaccessed for 60 s"), "{}", f.message);
    assert_eq!(f.evidence["virtio_balloon"], true);
    // No DAMON, the devices reading 80 MB/s for 120 s: 9 GiB of a 1 GiB working set.
    let mut r = run_with(&[20_000.0; 120], false, |_| {});
    small(&mut r);
    let f = diagnose(&r).pop().unwrap();
    assert_eq!(f.code, "page-cache-evicted");
    assert!(
        f.message.contains("the devices read 9375.0 MiB"),
        "{}",
        f.message
    );
    assert!(f.message.contains("did not keep it"), "{}", f.message);
    // No DAMON, the devices quiet: the cache held; only page-cache-reads.
    let mut r = run_with(&[20_000.0; 120], false, quiet);
    small(&mut r);
    assert_eq!(codes(&r), ["page-cache-reads"]);
    // Pinned (--pin-cache), DAMON on, the devices quiet: the cache held.
    let mut r = run_with(&[20_000.0; 120], false, quiet);
    small(&mut r);
    damon(&mut r);
    r.spec.jobs = vec![[("pin_cache".to_string(), "true".to_string())].into()];
    assert_eq!(codes(&r), ["page-cache-reads"]);
    // Direct reads: not the page cache at all.
    let mut r = run_with(&[20_000.0; 120], true, |_| {});
    small(&mut r);
    damon(&mut r);
    assert!(codes(&r).is_empty());
}
