use super::*;

fn opts() -> SuiteOptions {
    SuiteOptions {
        smoke: true,
        ..SuiteOptions::default()
    }
}

#[test]
fn disks_alone_then_together() {
    let o = SuiteOptions {
        targets: vec!["/dev/sdb".into(), "/mnt/a/".into(), "/mnt/b/a".into()],
        ..opts()
    };
    let s = suite_steps("disks", &o).unwrap();
    assert_eq!(s.len(), 3 * 4 + 4);
    assert_eq!(s[0].name, "disks/sdb/randwrite-4k");
    assert_eq!(s[4].subject.as_deref(), Some("a"));
    assert_eq!(s[8].subject.as_deref(), Some("a-2"));
    assert!(s.iter().all(|s| s.together.is_none()));
    // Issue 55: all at once is one run over every disk.
    assert_eq!(s[12].name, "disks/all/randwrite-4k");
    assert_eq!(s[12].subject, None);
    assert_eq!(
        s[12].args[..5],
        ["run", "/dev/sdb", "/mnt/a/", "/mnt/b/a", "--rw"]
    );
    assert!(s[0].args.windows(2).any(|w| w == ["--time", "1s"]));
    assert!(s[0].args.contains(&"--auto".to_string()));
    let names: std::collections::BTreeSet<_> = s.iter().map(|s| &s.name).collect();
    assert_eq!(names.len(), s.len(), "names are unique");
}

#[test]
fn over_agents_each_host_alone_then_all() {
    let o = SuiteOptions {
        targets: vec!["/mnt/bench".into()],
        agents: vec!["10.0.0.2:7878".into(), "10.0.0.3:7878".into()],
        distributed: vec!["--token-file".into(), "t".into()],
        ..opts()
    };
    let s = suite_steps("disks", &o).unwrap();
    assert_eq!(s.len(), 12);
    assert!(s[0].args.ends_with(&[
        "--agents".to_string(),
        "10.0.0.2:7878".into(),
        "--token-file".into(),
        "t".into()
    ]));
    assert!(s[8]
        .args
        .contains(&"10.0.0.2:7878,10.0.0.3:7878".to_string()));
    let net = suite_steps("network", &o).unwrap();
    assert_eq!(net[0].args[..3], ["net", "--mode", "mesh"]);
}

#[test]
fn acceptance_runs_the_parts_in_order_and_skips_what_it_cannot() {
    let s = suite_steps("acceptance", &opts()).unwrap();
    assert_eq!(s[0].part, "network");
    assert!(s[0].skip.is_some());
    let parts: Vec<_> = s.iter().map(|s| s.part).collect();
    let mut order = parts.clone();
    order.dedup();
    assert_eq!(order, ["network", "disks", "fileserver", "latency", "s3"]);
    assert!(s
        .last()
        .unwrap()
        .skip
        .as_ref()
        .unwrap()
        .contains("--endpoint"));
}

#[test]
fn expectations_go_to_the_steps_they_name() {
    let o = SuiteOptions {
        expect: vec![("randread-4k".into(), "iops=1k".into())],
        ..opts()
    };
    let s = suite_steps("fileserver", &o).unwrap();
    assert!(s[0]
        .args
        .ends_with(&["--expect".to_string(), "iops=1k".into()]));
    assert!(!s[1].args.contains(&"--expect".to_string()));
    let o = SuiteOptions {
        expect: vec![("nosuch".into(), "iops=1k".into())],
        ..opts()
    };
    assert!(suite_steps("fileserver", &o)
        .unwrap_err()
        .contains("nosuch"));
    assert!(suite_steps("everything", &o)
        .unwrap_err()
        .contains("acceptance"));
}

#[test]
fn the_database_searches_on_commit_latency() {
    let s = suite_steps("database", &opts()).unwrap();
    assert!(s[0].file.as_ref().unwrap().1.contains("fdatasync = 1"));
    assert!(s[1].args.contains(&"sync:p99<=5ms".to_string()));
}

/// Issue 57: the victims alone, beside the first agent's writes, alone again; each a job file
/// whose jobs name their hosts. Without two agents it is a mistake.
#[test]
fn interference_runs_the_victims_before_during_and_after_the_aggressor() {
    let mut o = opts();
    let e = suite_steps("interference", &o).unwrap_err();
    assert!(e.contains("--agents with two or more"), "{e}");
    o.agents = vec!["a:1".into(), "b:1".into(), "c:1".into()];
    let s = suite_steps("interference", &o).unwrap();
    let names: Vec<&str> = s.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "interference/before",
            "interference/during",
            "interference/after"
        ]
    );
    let (file, text) = s[1].file.clone().unwrap();
    assert_eq!(file, "interference.toml");
    assert!(
        text.contains("hosts = [0]") && text.contains("hosts = \"1-2\""),
        "{text}"
    );
    assert!(text.contains("rate_iops = 200"), "{text}");
    let (_, alone) = s[0].file.clone().unwrap();
    assert!(!alone.contains("aggressor"), "{alone}");
    let jobs = stormark_spec::parse_job_file(&text, "interference.toml").unwrap();
    assert_eq!(jobs.jobs.len(), 2);
    assert!(s[1]
        .args
        .windows(2)
        .any(|w| w == ["--job", "interference.toml"]));
}

/// Issue 58: the spec suite runs a spec sheet's four workloads on the device, each at the
/// sheet's depth with one worker, direct, its figure as the step's `--expect` (MB/s decimal,
/// IOPS as given); a figure not given leaves its workload unchecked; no figure is a mistake.
#[test]
fn the_spec_suite_measures_against_a_spec_sheet() {
    let o = SuiteOptions {
        targets: vec!["/dev/sdb".into()],
        spec: SpecSheet {
            read_mbs: Some("550".into()),
            write_mbs: Some("1.5GB/s".into()),
            read_iops: Some("98k".into()),
            write_iops: None,
        },
        ..opts()
    };
    let s = suite_steps("spec", &o).unwrap();
    let names: Vec<&str> = s.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "spec/read-1m",
            "spec/write-1m",
            "spec/randread-4k",
            "spec/randwrite-4k"
        ]
    );
    let has = |i: usize, pair: [&str; 2]| s[i].args.windows(2).any(|w| w == pair);
    assert_eq!(s[0].args[..2], ["run", "/dev/sdb"]);
    assert!(has(0, ["--iodepth", "8"]) && has(0, ["--jobs", "1"]) && has(0, ["--bs", "1m"]));
    assert!(s[0].args.contains(&"--direct".to_string()));
    assert!(has(0, ["--expect", "bw=550MB/s"]));
    assert!(has(1, ["--expect", "bw=1.5GB/s"]));
    assert!(has(2, ["--iodepth", "32"]) && has(2, ["--expect", "iops=98k"]));
    assert!(!s[3].args.contains(&"--expect".to_string()));
    let e = suite_steps("spec", &opts()).unwrap_err();
    assert!(e.contains("--spec-read-mbs"), "{e}");
}

/// Issue 58: the ssd suite writes its target twice over, then runs up to `--rounds` rounds
/// of 4 KiB random writes; the suite ends (done, not stopped) after the round whose last five
/// agree, with the window in its words; a fresh drive still falling does not end it.
#[test]
fn the_ssd_suite_ends_once_its_rounds_are_steady() {
    let o = SuiteOptions {
        targets: vec!["/dev/nvme1n1".into()],
        rounds: Some(7),
        ..opts()
    };
    let s = suite_steps("ssd", &o).unwrap();
    assert_eq!(s.len(), 1 + 7);
    assert_eq!(s[0].name, "ssd/precondition");
    assert!(s[0].args.windows(2).any(|w| w == ["--loops", "2"]));
    assert!(
        s[0].args.windows(2).any(|w| w == ["--size", "16m"]),
        "smoke"
    );
    assert!(
        !s[0].args.contains(&"--time".to_string()),
        "two whole passes"
    );
    assert_eq!(s[7].name, "ssd/round-7");
    assert!(s[1].args.windows(2).any(|w| w == ["--iodepth", "32"]));
    let full = suite_steps(
        "ssd",
        &SuiteOptions {
            smoke: false,
            ..o.clone()
        },
    )
    .unwrap();
    assert!(full[0].args.windows(2).any(|w| w == ["--size", "100%"]));
    assert!(full[1].args.windows(2).any(|w| w == ["--time", "60s"]));
    assert_eq!(
        suite_steps(
            "ssd",
            &SuiteOptions {
                rounds: None,
                ..o.clone()
            }
        )
        .unwrap()
        .len(),
        1 + SSD_ROUNDS as usize
    );

    let round = |k: usize, iops: f64| stormark_stats::StepOutcome {
        name: format!("ssd/round-{k}"),
        part: "ssd".into(),
        workload: "round".into(),
        subject: None,
        together: None,
        command: Vec::new(),
        document: None,
        report: None,
        result: stormark_stats::StepResult::Pass,
        exit_code: Some(0),
        why: None,
        figures: Some(stormark_stats::StepFigures {
            ops_per_s: iops,
            ..Default::default()
        }),
    };
    // Fresh and falling: not yet.
    let falling: Vec<_> = [900.0, 600.0, 400.0, 300.0]
        .iter()
        .enumerate()
        .map(|(i, v)| round(i + 1, *v))
        .collect();
    assert!(suite_stops("ssd", &round(5, 250.0), &falling).is_none());
    // Then five that agree.
    let mut settled = falling.clone();
    for (k, v) in [(5, 250.0), (6, 240.0), (7, 252.0), (8, 245.0)] {
        settled.push(round(k, v));
    }
    let stop = suite_stops("ssd", &round(9, 248.0), &settled).expect("steady");
    assert!(stop.done && !stop.refused_first);
    assert!(
        stop.why.contains("after round 9: rounds 5-9"),
        "{}",
        stop.why
    );
    // The same figures in another suite end nothing.
    assert!(suite_stops("disks", &round(9, 248.0), &settled).is_none());
}
