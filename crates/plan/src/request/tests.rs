//! The request's tests: flags over job files and profiles, targets, fio job files.

use super::*;

fn first_look(flags: &[(&'static str, &str)], profile: Option<&str>) -> bool {
    let args = RequestOptions {
        flags: flags.iter().map(|(k, v)| (*k, v.to_string())).collect(),
        profile: profile.map(str::to_string),
        current_dir: std::env::temp_dir(),
        ..RequestOptions::default()
    };
    request(&args).expect("a valid request").first_look
}

/// Issue 55: TARGETs typed run each job on each, in one stage; a fio job file's jobs on
/// different devices each on its own; a job naming none among them is refused in a line.
#[test]
fn several_targets_make_a_job_per_target_in_one_stage() {
    let dir = std::env::temp_dir();
    let args = RequestOptions {
        flags: vec![("rw", "randread".into())],
        target: Some("/srv/d1".into()),
        more_targets: vec!["/srv/d2".into()],
        current_dir: dir.clone(),
        ..RequestOptions::default()
    };
    let r = request(&args).unwrap();
    let names: Vec<&str> = r.workload.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["randread-4k.d1", "randread-4k.d2"]);
    assert_eq!(
        r.workload.stages().len(),
        1,
        "one stage: one start for both"
    );
    let on: Vec<_> = r
        .workload
        .jobs
        .iter()
        .map(|j| j.target.as_deref())
        .collect();
    assert_eq!(on, [Some("/srv/d1"), Some("/srv/d2")]);
    assert_eq!(r.targets.len(), 2);
    assert_eq!(r.target, std::path::PathBuf::from("/srv/d1"));
    // Two targets of one base name: by number.
    let same = RequestOptions {
        target: Some("/a/data".into()),
        more_targets: vec!["/b/data".into()],
        ..args.clone()
    };
    let r = request(&same).unwrap();
    assert_eq!(r.workload.jobs[1].name, "randread-4k.2");
    // Refused in one line: the same target twice, a search, agents.
    for (bad, why) in [
        (
            RequestOptions {
                more_targets: vec!["/srv/d1".into()],
                ..args.clone()
            },
            "given twice",
        ),
        (
            RequestOptions {
                distributed: true,
                ..args.clone()
            },
            "--target HOST=PATH",
        ),
    ] {
        let e = request(&bad).err().expect("refused");
        assert!(e.contains(why) && !e.contains('\n'), "{e}");
    }
    // A fio job file's jobs on two devices.
    let fio = |text: &str| RequestOptions {
        job_file: Some(("j.fio".into(), text.into())),
        current_dir: dir.clone(),
        ..RequestOptions::default()
    };
    let r = request(&fio(
        "[global]\nrw=randread\nsize=1m\n[a]\nfilename=/dev/loop90\n[b]\nfilename=/dev/loop91\n",
    ))
    .unwrap();
    let on: Vec<_> = r
        .workload
        .jobs
        .iter()
        .map(|j| j.target.as_deref())
        .collect();
    assert_eq!(on, [Some("/dev/loop90"), Some("/dev/loop91")]);
    assert_eq!(r.workload.stages().len(), 1);
    let e = request(&fio(
        "[global]\nrw=randread\nsize=1m\n[a]\nfilename=/dev/loop90\n[b]\nfilename=/dev/loop91\n[c]\n",
    ))
    .err()
    .expect("a job on no target");
    assert!(e.contains("job c names no file"), "{e}");
}

#[test]
fn a_time_based_fio_file_without_runtime_takes_the_command_lines_time() {
    let text = "[j]\nrw=randread\nsize=8m\ntime_based\n";
    let args = |flags: Vec<(&'static str, String)>| RequestOptions {
        flags,
        job_file: Some(("t.fio".into(), text.into())),
        current_dir: std::env::temp_dir(),
        ..RequestOptions::default()
    };
    let Err(e) = request(&args(vec![])) else {
        panic!("time_based without --time ran")
    };
    assert!(
        e.contains("time_based in [j] of t.fio") && e.contains("--time"),
        "{e}"
    );
    let r = request(&args(vec![("time", "2s".into())])).unwrap();
    assert_eq!(
        r.workload.jobs[0].time,
        Some(std::time::Duration::from_secs(2))
    );
}

#[test]
fn only_the_quick_profile_as_shipped_is_a_first_look() {
    assert!(first_look(&[], None));
    assert!(first_look(&[], Some("quick")));
    assert!(!first_look(&[("time", "2m")], Some("quick")));
    assert!(!first_look(&[("bs", "4k")], None));
    assert!(!first_look(&[], Some("oltp-4k")));
}
