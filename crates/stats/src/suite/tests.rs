//! Tests of suite.rs.

use super::*;

fn outcome(
    name: &str,
    workload: &str,
    subject: Option<&str>,
    together: bool,
    ops: f64,
) -> StepOutcome {
    StepOutcome {
        name: name.into(),
        part: "disks".into(),
        workload: workload.into(),
        subject: subject.map(String::from),
        together: together.then(|| format!("all/{workload}")),
        command: vec![],
        document: None,
        report: None,
        result: StepResult::Pass,
        exit_code: Some(0),
        why: None,
        figures: Some(StepFigures {
            ops_per_s: ops,
            bw_bytes_per_s: ops * 4096.0,
            phases: 1,
            ..StepFigures::default()
        }),
    }
}

fn with_spread(mut o: StepOutcome, spread: Option<f64>) -> StepOutcome {
    o.figures.as_mut().unwrap().spread = spread;
    o
}

#[test]
fn the_slowest_disk_is_named_and_together_is_against_the_sum() {
    let steps = |spread: Option<f64>| {
        vec![
            with_spread(
                outcome("a/r", "randread-4k", Some("a"), false, 1000.0),
                spread,
            ),
            with_spread(
                outcome("b/r", "randread-4k", Some("b"), false, 1100.0),
                spread,
            ),
            with_spread(
                outcome("c/r", "randread-4k", Some("c"), false, 500.0),
                spread,
            ),
            outcome("all/r/a", "randread-4k", Some("a"), true, 800.0),
            outcome("all/r/b", "randread-4k", Some("b"), true, 800.0),
            outcome("all/r/c", "randread-4k", Some("c"), true, 400.0),
        ]
    };
    // Steady steps (2% standard error): half the median is far beyond the noise.
    let v = suite_verdicts(&steps(Some(0.02)));
    let slow = v.iter().find(|v| v.code == "slowest-disk").unwrap();
    assert!(
        slow.message.contains("slowest disk: c, 0.50x") && slow.message.contains("beyond"),
        "{}",
        slow.message
    );
    assert_eq!(slow.severity, Severity::Warning);
    let together = v.iter().find(|v| v.code == "disks-together").unwrap();
    assert!((together.evidence["ratio"].as_f64().unwrap() - 2000.0 / 2600.0).abs() < 1e-9);
    // Steps this noisy (40%): the disks agree within it, nobody is named.
    let v = suite_verdicts(&steps(Some(0.4)));
    let slow = v.iter().find(|v| v.code == "slowest-disk").unwrap();
    assert!(
        slow.message.contains("none beyond the measured spread"),
        "{}",
        slow.message
    );
    assert_eq!(slow.severity, Severity::Info);
    assert_eq!(slow.evidence["beyond_spread"], false);
    // One value per step (--smoke): said as too short to tell, not a verdict.
    let v = suite_verdicts(&steps(None));
    let slow = v.iter().find(|v| v.code == "slowest-disk").unwrap();
    assert!(
        slow.message.contains("too short to tell"),
        "{}",
        slow.message
    );
    assert_eq!(slow.severity, Severity::Info);
    // One value per step, but a disk a tenth of the others: named (issue 53).
    let mut tenth = steps(None);
    tenth[2].figures.as_mut().unwrap().ops_per_s = 100.0;
    let v = suite_verdicts(&tenth);
    let slow = v.iter().find(|v| v.code == "slowest-disk").unwrap();
    assert!(
        slow.message.contains("slowest disk: c, 0.10x") && slow.message.contains("4x off"),
        "{}",
        slow.message
    );
    assert_eq!(slow.severity, Severity::Warning);
}

#[test]
fn the_host_furthest_from_the_median_is_named() {
    let mut s = outcome("fileserver/randread-4k", "randread-4k", None, false, 3000.0);
    s.part = "fileserver".into();
    s.figures.as_mut().unwrap().by_host = [
        ("h1".to_string(), 1000.0),
        ("h2".into(), 1100.0),
        ("h3".into(), 400.0),
    ]
    .into();
    let spread = |v: f64| -> BTreeMap<String, f64> {
        [("h1".to_string(), v), ("h2".into(), v), ("h3".into(), v)].into()
    };
    s.figures.as_mut().unwrap().host_spread = spread(0.03);
    let v = suite_verdicts(&[s.clone()]);
    let far = v.iter().find(|v| v.code == "furthest-host").unwrap();
    assert!(far.message.contains("h3, 0.40x"), "{}", far.message);
    assert_eq!(far.severity, Severity::Warning);
    // Three identical hosts whose seconds vary ±60%: within the spread, nobody named.
    s.figures.as_mut().unwrap().host_spread = spread(0.6);
    let v = suite_verdicts(&[s.clone()]);
    let far = v.iter().find(|v| v.code == "furthest-host").unwrap();
    assert!(far.message.contains("none beyond"), "{}", far.message);
    assert_eq!(far.severity, Severity::Info);
    // One-second steps (no spread): 0.40x is too close to tell; a host throttled to a
    // hundredth is named (issue 53).
    s.figures.as_mut().unwrap().host_spread = BTreeMap::new();
    let v = suite_verdicts(&[s.clone()]);
    let far = v.iter().find(|v| v.code == "furthest-host").unwrap();
    assert!(far.message.contains("too short to tell"), "{}", far.message);
    assert_eq!(far.severity, Severity::Info);
    s.figures
        .as_mut()
        .unwrap()
        .by_host
        .insert("h3".into(), 10.0);
    let v = suite_verdicts(&[s]);
    let far = v.iter().find(|v| v.code == "furthest-host").unwrap();
    assert!(far.message.contains("h3, 0.01x"), "{}", far.message);
    assert_eq!(far.severity, Severity::Warning);
}

#[test]
fn failures_and_misses_are_verdicts() {
    let mut a = outcome("x", "w", None, false, 1.0);
    a.result = StepResult::Failed;
    let mut b = outcome("y", "w", None, false, 1.0);
    b.result = StepResult::Missed;
    let v = suite_verdicts(&[a, b]);
    assert_eq!(v[0].code, "steps-failed");
    assert_eq!(v[1].code, "expectations-missed");
}

/// A mesh of three hosts whose pairs carry `rate[i]` bytes a second with relative noise
/// `noise` over `secs` seconds (one: `--smoke`).
fn mesh_of(rates: [f64; 6], noise: f64, secs: u32) -> Results {
    let mut r = Results::new(vec![]);
    let pairs = [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)];
    r.mesh = Some(crate::MeshReport {
        hosts: (0..3)
            .map(|i| crate::MeshHost {
                agent: format!("h{i}:7878"),
                ..Default::default()
            })
            .collect(),
        alone: pairs
            .iter()
            .zip(rates)
            .map(|(&(from, to), rate)| {
                let seconds: Vec<u64> = (0..secs)
                    .map(|t| (rate * (1.0 + noise * if t % 2 == 0 { 1.0 } else { -1.0 })) as u64)
                    .collect();
                crate::MeshPair {
                    from,
                    to,
                    bits_per_s: rate * 8.0,
                    seconds,
                    ..Default::default()
                }
            })
            .collect(),
        ..Default::default()
    });
    r
}

fn mesh(rates: [f64; 6], noise: f64) -> Results {
    mesh_of(rates, noise, 10)
}

#[test]
fn the_weakest_pair_is_named_only_beyond_the_spread_of_the_pairs_seconds() {
    let weak = |r: &Results| {
        let f = step_figures(r).unwrap();
        let mut o = outcome("net", "mesh", None, false, 0.0);
        o.part = "network".into();
        o.figures = Some(f);
        let v = suite_verdicts(&[o]);
        v.into_iter().find(|v| v.code == "weakest-pair").unwrap()
    };
    // Six pairs alike but for noise of ±30% a second; the lowest is 0.9x: not named.
    let noisy = weak(&mesh([1e8, 1e8, 1e8, 1e8, 1e8, 0.9e8], 0.3));
    assert_eq!(noisy.severity, Severity::Info, "{}", noisy.message);
    assert!(
        noisy.message.contains("none beyond the measured spread"),
        "{}",
        noisy.message
    );
    // One pair at a fifth of the others, each steady to 1%: named, a warning.
    let slow = weak(&mesh([1e8, 0.2e8, 1e8, 1e8, 1e8, 1e8], 0.01));
    assert_eq!(slow.severity, Severity::Warning, "{}", slow.message);
    assert!(
        slow.message.contains("h0:7878 -> h2:7878"),
        "{}",
        slow.message
    );
    assert!(
        slow.message.contains("beyond the measured spread"),
        "{}",
        slow.message
    );
    // A pair at 0.69x, steady: beyond its seconds' spread, but pairs of identical hosts
    // differ that much from one test to the next: not named.
    let near = weak(&mesh([1e8, 0.69e8, 1e8, 1e8, 1e8, 1e8], 0.01));
    assert_eq!(near.severity, Severity::Info, "{}", near.message);
    assert!(near.message.contains("none named"), "{}", near.message);
    // One second a pair (--smoke): no spread; a tenth of the median is named, 0.7x is not.
    let smoke = weak(&mesh_of([1e8, 1e8, 0.1e8, 1e8, 1e8, 1e8], 0.0, 1));
    assert_eq!(smoke.severity, Severity::Warning, "{}", smoke.message);
    assert!(
        smoke.message.contains("h1:7878 -> h0:7878"),
        "{}",
        smoke.message
    );
    let smoke = weak(&mesh_of([1e8, 1e8, 0.7e8, 1e8, 1e8, 1e8], 0.0, 1));
    assert_eq!(smoke.severity, Severity::Info, "{}", smoke.message);
    assert!(smoke.message.contains("too short"), "{}", smoke.message);
    // Nothing moved at all: no pair named against a median of nothing.
    let none = weak(&mesh_of([0.0; 6], 0.0, 1));
    assert_eq!(none.severity, Severity::Info, "{}", none.message);
}

/// Issue 57: the victims' read p99 before, during and after; a warning when it more than
/// doubled under the aggressor's load, and the aggressor is never the furthest host.
#[test]
fn interference_names_the_victims_p99_before_during_and_after() {
    let step = |phase: &str, p99_ms: u64| {
        let mut o = outcome(
            &format!("interference/{phase}"),
            "victims",
            Some(phase),
            false,
            200.0,
        );
        o.part = "interference".into();
        let f = o.figures.as_mut().unwrap();
        f.spread = Some(0.02);
        f.p99_by_op_ns.insert("read".into(), p99_ms * 1_000_000);
        f.by_host = [
            ("agg".to_string(), 90_000.0),
            ("v1".into(), 100.0),
            ("v2".into(), 100.0),
        ]
        .into_iter()
        .collect();
        o
    };
    let v = suite_verdicts(&[step("before", 1), step("during", 8), step("after", 1)]);
    let i = v.iter().find(|v| v.code == "interference").unwrap();
    assert_eq!(i.severity, Severity::Warning);
    assert_eq!(
        i.message,
        "the victims' read p99: 1.00 ms before, 8.00 ms during the aggressor's load (8.0x), 1.00 ms after (1.0x before)"
    );
    assert!(v
        .iter()
        .all(|v| v.code != "furthest-host" || !v.message.contains("agg")));
    let v = suite_verdicts(&[step("before", 2), step("during", 3)]);
    let i = v.iter().find(|v| v.code == "interference").unwrap();
    assert_eq!(i.severity, Severity::Info);
    assert!(i.message.ends_with("not measured after"), "{}", i.message);
    // One-second steps: said to be too short, never a warning.
    let mut during = step("during", 8);
    during.figures.as_mut().unwrap().spread = None;
    let v = suite_verdicts(&[step("before", 1), during]);
    let i = v.iter().find(|v| v.code == "interference").unwrap();
    assert_eq!(i.severity, Severity::Info);
    assert!(
        i.message.ends_with("(run without --smoke)"),
        "{}",
        i.message
    );
}

/// Issue 55: every disk at once is one run; its slowest disk comes from the run's `by_target`,
/// named as the steps of each disk alone name it.
#[test]
fn the_slowest_disk_at_once_comes_from_by_target() {
    let alone = |name: &str, disk: &str, path: &str, ops: f64| StepOutcome {
        command: vec!["stormark".into(), "run".into(), path.into()],
        ..outcome(name, "randread-4k", Some(disk), false, ops)
    };
    let mut all = outcome("all/r", "randread-4k", None, false, 1500.0);
    all.figures.as_mut().unwrap().by_target = [
        ("/dev/sdb", 1000.0),
        ("/dev/sdc", 400.0),
        ("/dev/sdd", 900.0),
    ]
    .into_iter()
    .map(|(t, ops)| {
        (
            t.to_string(),
            TargetFigures {
                ops_per_s: ops,
                bw_bytes_per_s: ops * 4096.0,
            },
        )
    })
    .collect();
    let steps = vec![
        alone("sdb/r", "sdb", "/dev/sdb", 1000.0),
        alone("sdc/r", "sdc", "/dev/sdc", 1000.0),
        alone("sdd/r", "sdd", "/dev/sdd", 1000.0),
        all,
    ];
    let v = suite_verdicts(&steps);
    let together = v.iter().find(|v| v.code == "disks-together").unwrap();
    assert!((together.evidence["ratio"].as_f64().unwrap() - 0.5).abs() < 1e-9);
    assert_eq!(together.evidence["slowest_at_once"], "sdc");
    let r = together.evidence["slowest_at_once_ratio"].as_f64().unwrap();
    assert!((r - 400.0 / 900.0).abs() < 1e-9, "{r}");
    assert!(
        together.message.contains("slowest at once: sdc"),
        "{}",
        together.message
    );
}
