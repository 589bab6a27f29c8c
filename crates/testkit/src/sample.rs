//! A fixed results document for renderer snapshots.

/// A fixed results document, the same on every call: two hosts, a 3-second random 70/30 run
/// with reads at 100 µs and writes at 300 µs, a finding and a note. For renderer snapshots.
pub fn sample_results() -> stormark_stats::Results {
    use stormark_stats::{
        Finding, Host, Op, PhaseAccumulator, PhaseJob, Recorder, Results, Severity, Target,
        WorkerKey,
    };
    let mut r = Results::new(
        [
            "stormark",
            "run",
            "/mnt/data",
            "--rw",
            "randrw",
            "--rwmixread",
            "70",
            "--time",
            "3s",
        ]
        .map(String::from)
        .to_vec(),
    );
    r.started_at = "2026-11-23T10:00:00.000Z".into();
    r.duration_ns = 3_250_000_000;
    r.tool.version = "0.0.0-sample".into();
    r.target = Some(Target {
        path: "/mnt/data".into(),
        kind: "directory".into(),
        run_dir: Some("/mnt/data/stormark-20261123-100000-1".into()),
        kept: false,
        device: Some("nvme0n1".into()),
        fs_type: Some("xfs".into()),
    });
    let hosts = ["node1", "node2"];
    let job = PhaseJob {
        name: "randrw-4k".into(),
        engine: "io_uring".into(),
        direct: true,
        workers: 1,
        iodepth: 8,
        iodepth_batch: 1,
        rate_iops: None,
        target: None,
        working_set_bytes: 1 << 30,
    };
    let keys: Vec<WorkerKey> = (0..2)
        .map(|h| WorkerKey {
            host: h,
            job: 0,
            worker: 0,
        })
        .collect();
    let mut acc = PhaseAccumulator::new(
        "run",
        hosts.iter().map(|h| h.to_string()).collect(),
        vec![job.clone()],
        &keys,
    );
    for (h, key) in keys.iter().enumerate() {
        for second in 0..3u32 {
            let mut rec = Recorder::new();
            let n = 700 + 100 * h as u64 + u64::from(second);
            for i in 0..n {
                rec.record(Op::Read, 4096, 100_000 + i * 10);
            }
            for i in 0..300 {
                rec.record(Op::Write, 4096, 300_000 + i * 20);
            }
            acc.add(*key, second, &rec.take());
        }
        acc.worker_done(*key, 3_000_000_000);
    }
    acc.set_jobs(vec![job]);
    r.phases.push(acc.finish(0, 3_000_000_000));
    r.hosts = hosts
        .iter()
        .map(|h| Host {
            target: None,
            name: h.to_string(),
            inventory: stormark_stats::Inventory {
                hostname: h.to_string(),
                cpus: 16,
                ..Default::default()
            },
            samples: Vec::new(),
            sampler_cpu_ns: None,
            address: Some(format!("{h}:7878")),
            failure: None,
            clock_offset_ns: Some(1_000),
            clock_rtt_ns: Some(200_000),
        })
        .collect();
    r.findings.push(Finding {
        severity: Severity::Warning,
        code: "run-too-short".into(),
        message: "phase run measured for 3 s: too short for trustworthy numbers".into(),
        evidence: serde_json::json!({ "phase": "run", "measured_s": 3 }),
        advice: "Measure 60–300 s per point (--time 2m).".into(),
    });
    r.notes.push("direct auto: O_DIRECT is supported".into());
    r
}
