//! The terminal's summary: statuses, host lines, findings.

use super::*;

/// Issue 53: a failure that only repeats the status is not said twice.
#[test]
fn the_status_line_says_the_status_once() {
    let mut r = stormark_testkit::sample_results();
    r.status = RunStatus::Interrupted;
    r.failure = Some("interrupted".into());
    let text = Terminal.render(&r);
    assert!(text.ends_with("status: interrupted\n"), "{text}");
    r.failure = Some("Ctrl-C during the run".into());
    assert!(Terminal
        .render(&r)
        .ends_with("status: interrupted: Ctrl-C during the run\n"));
}

#[test]
fn each_host_line_names_its_own_device() {
    // Two agents sharing one kernel see both loop devices; loop0 is the busier.
    let mut r = stormark_testkit::sample_results();
    let p = r.phases[0].clone();
    for (i, h) in r.hosts.iter_mut().enumerate() {
        h.target = Some(stormark_stats::Target {
            path: format!("/mnt/{i}"),
            kind: "directory".into(),
            run_dir: None,
            kept: false,
            device: Some(format!("loop{i}")),
            fs_type: Some("ext4".into()),
        });
        h.samples = (0..3)
            .map(|t| stormark_stats::HostSample {
                t_ns: p.start_offset_ns + t * 1_000_000_000,
                duration_ns: 1_000_000_000,
                cpu: Some(stormark_stats::CpuSample {
                    idle_pct: 50.0,
                    ..Default::default()
                }),
                disks: [
                    (
                        "loop0".to_string(),
                        stormark_stats::DiskSample {
                            util_pct: 90.0,
                            read_iops: 9000.0,
                            ..Default::default()
                        },
                    ),
                    (
                        "loop1".to_string(),
                        stormark_stats::DiskSample {
                            util_pct: 40.0,
                            read_iops: 4000.0,
                            ..Default::default()
                        },
                    ),
                ]
                .into(),
                ..Default::default()
            })
            .collect();
    }
    let lines: Vec<String> = r
        .hosts
        .iter()
        .map(|h| host_line(&p, h, true).unwrap())
        .collect();
    assert!(lines[0].contains("loop0: util 90%"), "{}", lines[0]);
    assert!(lines[1].contains("loop1: util 40%"), "{}", lines[1]);
}

#[test]
fn hosts_sort_naturally() {
    let mut v = vec!["node10", "node2", "node1", "alpha", "node02b"];
    v.sort_by(|a, b| natural(a, b));
    assert_eq!(v, vec!["alpha", "node1", "node2", "node02b", "node10"]);
}
use stormark_stats::Finding;

fn finding(code: &str, severity: Severity, phase: usize) -> Finding {
    Finding {
        severity,
        code: code.into(),
        message: format!("phase p{phase}: something"),
        evidence: serde_json::json!({ "phase": format!("p{phase}") }),
        advice: format!("advice for {code}"),
    }
}

#[test]
fn findings_of_many_phases_are_counted_after_three() {
    let mut r = Results::new(vec![]);
    for p in 0..5 {
        r.findings.push(finding("cpu-bound", Severity::Warning, p));
    }
    r.findings
        .insert(2, finding("swapping", Severity::Critical, 9));
    r.findings
        .push(finding("run-too-short", Severity::Warning, 0));
    let text = Terminal.render(&r);
    let lines: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "findings:")
        .skip(1)
        .take_while(|l| !l.starts_with("verdict") && !l.starts_with("status"))
        .collect();
    assert_eq!(
        lines,
        [
            "  CRITICAL [swapping] phase p9: something",
            "    advice: advice for swapping",
            "  warning [cpu-bound] phase p0: something",
            "    advice: advice for cpu-bound",
            "  warning [cpu-bound] phase p1: something",
            "  warning [cpu-bound] phase p2: something",
            "    (and in 2 more phases; every one is in --json)",
            "  warning [run-too-short] phase p0: something",
            "    advice: advice for run-too-short",
        ]
    );
}

/// Issue 53: one phase's finding on 100 hosts is counted in hosts, not phases.
#[test]
fn findings_of_many_hosts_are_counted_in_hosts() {
    let mut r = Results::new(vec![]);
    for h in 0..100 {
        let mut f = finding("cpu-bound", Severity::Warning, 0);
        f.evidence = serde_json::json!({ "phase": "run", "host": format!("h{h}") });
        r.findings.push(f);
    }
    let text = Terminal.render(&r);
    assert!(
        text.contains("    (and on 97 more hosts; every one is in --json)"),
        "{text}"
    );
}
