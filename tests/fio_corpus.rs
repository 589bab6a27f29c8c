//! Issue 31: the job files of tests/fio as users bring them: fio's own `examples/` and the third-party
//! corpus each keep their recorded verdict, and `--print-fio` of every one that runs reads back in fio
//! as the same jobs.

use std::path::Path;

use stormark_testkit::{temp_dir, text};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

/// Issue 31: fio's own `examples/` (tests/fio/examples, unchanged) as a user hands them to
/// stormark: each verdict is the recorded one (tests/fio/examples/VERDICTS); those that run
/// run for a second on a scratch directory; the refused ones stop before any load with one
/// line naming what (never a panic).
#[test]
fn fios_own_examples_keep_their_verdicts() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fio/examples");
    // Each file's verdict, and the flags it needs here (a steady state's wait bounded).
    let recorded: std::collections::BTreeMap<String, (String, Vec<String>)> =
        std::fs::read_to_string(examples.join("VERDICTS"))
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| {
                let mut w = l.split(' ').map(str::to_string);
                let name = w.next().unwrap();
                let verdict = w.next().unwrap();
                (name, (verdict, w.collect()))
            })
            .collect();
    let dir = temp_dir(TMP);
    let mut files: Vec<String> = std::fs::read_dir(&examples)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".fio"))
        .collect();
    files.sort();
    assert_eq!(
        files,
        recorded.keys().cloned().collect::<Vec<_>>(),
        "every example has a verdict"
    );
    let mut differ = Vec::new();
    for name in &files {
        let job = examples.join(name);
        let args = |extra: &[&str]| {
            let mut a = vec![
                "run".to_string(),
                dir.path().display().to_string(),
                "--job".into(),
                job.display().to_string(),
                "--time".into(),
                "1s".into(),
            ];
            // 64 MiB, unless the file's flags give its own size.
            if !extra.iter().any(|f| f.starts_with("--size=")) {
                a.extend(["--size".to_string(), "64m".to_string()]);
            }
            a.extend(extra.iter().map(|s| s.to_string()));
            a
        };
        let (want, flags) = &recorded[name];
        // The variables a file needs (`FIO_BS=4096`), and the flags.
        let (vars, flags): (Vec<&String>, Vec<&String>) =
            flags.iter().partition(|f| !f.starts_with("--"));
        let vars: Vec<(&str, &str)> = vars.iter().filter_map(|v| v.split_once('=')).collect();
        let run = |extra: &[&str]| {
            std::process::Command::new(BIN)
                .args(args(extra))
                .envs(vars.iter().copied())
                .output()
                .unwrap()
        };
        // Read with the flags it needs here (the zoned examples' size in whole zones).
        let mut printing = vec!["--print-fio"];
        printing.extend(flags.iter().map(|f| f.as_str()));
        let out = run(&printing);
        let verdict = match out.status.code() {
            Some(0) => "runs",
            Some(2) => {
                let said = text(&out);
                assert_eq!(said.trim().lines().count(), 1, "{name}: {said}");
                "refused"
            }
            other => panic!("{name}: exit {other:?}: {}", text(&out)),
        };
        // Read and printed as written, but refused by this machine's target before any load
        // (atomic writes where the scratch directory's file system takes none).
        if verdict == "runs" && want == "refused-here" {
            let out = run(&["-q"]);
            let said = text(&out);
            // The refusal is one line on standard error (the target line, said as the run
            // started, is on standard output).
            let error = String::from_utf8_lossy(&out.stderr);
            match out.status.code() {
                // A scratch directory whose file system takes them: it runs.
                Some(0) => {}
                Some(2) => assert_eq!(error.trim().lines().count(), 1, "{name}: {said}"),
                other => panic!("{name}: exit {other:?}: {said}"),
            }
            continue;
        }
        if verdict != want {
            differ.push(format!("{name}: {verdict}, recorded {want}"));
            continue;
        }
        if verdict == "runs" {
            let mut extra = vec!["-q"];
            extra.extend(flags.iter().map(|f| f.as_str()));
            let out = run(&extra);
            assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out));
            assert_eq!(
                std::fs::read_dir(dir.path()).unwrap().count(),
                0,
                "{name} left files behind"
            );
        }
    }
    assert!(
        differ.is_empty(),
        "verdicts changed (update VERDICTS if for the better): {differ:#?}"
    );
}

/// Issue 31: `--print-fio` writes what fio reads back as the same jobs: for every example
/// stormark runs and every job file of tests/fio, the printed file passes `fio --parse-only`
/// and fio's own `--showcmd` holds every option as printed (rw, bs or bssplit, iodepth,
/// numjobs, size, rwmixread, runtime, direct, ...), none dropped or read otherwise.
#[test]
fn print_fio_round_trips_through_fio() {
    let test = "print_fio_round_trips_through_fio";
    if !stormark_testkit::require_tool(test, "fio") {
        return;
    }
    let dir = temp_dir(TMP);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fio");
    // The files that run of fio's examples and of the third-party corpus, with the
    // variables each needs.
    type Vars = Vec<(String, String)>;
    let runs = |list: &str| -> Vec<(String, Vars, Vec<String>)> {
        std::fs::read_to_string(root.join(list).join("VERDICTS"))
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let mut w = l.split(' ');
                let name = w.next()?;
                (w.next()? == "runs").then_some(())?;
                let (flags, vars): (Vec<&str>, Vec<&str>) = w.partition(|v| v.starts_with("--"));
                let vars = vars
                    .iter()
                    .filter_map(|v| v.split_once('='))
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect();
                // The flags of the zoned examples' size (in whole zones) and place.
                let flags = flags
                    .into_iter()
                    .filter(|f| f.starts_with("--size=") || f.starts_with("--offset="))
                    .map(str::to_string)
                    .collect();
                Some((format!("{list}/{name}"), vars, flags))
            })
            .collect()
    };
    let mut files: Vec<(String, Vars, Vec<String>)> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".fio"))
        .map(|n| (n, vec![("BS".to_string(), "8k".to_string())], Vec::new()))
        .collect();
    files.sort();
    files.extend(runs("examples"));
    files.extend(runs("corpus"));
    let mut checked = 0;
    for (name, vars, flags) in &files {
        let printed = dir.path().join("printed.fio");
        let out = std::process::Command::new(BIN)
            .args(["run", dir.path().to_str().unwrap(), "--job"])
            .arg(root.join(name))
            .args(["--time", "1s", "--print-fio"])
            .args(if flags.iter().any(|f| f.starts_with("--size=")) {
                &[][..]
            } else {
                &["--size", "64m"][..]
            })
            .args(flags)
            .envs(vars.iter().map(|(k, v)| (k, v)))
            .output()
            .unwrap();
        if out.status.code() != Some(0) {
            // A file of tests/fio made to be refused (unsupported.fio, ...).
            continue;
        }
        // fio's `sequence` distribution and SPRandom are newer than some fio a distribution
        // ships.
        let printed_text = String::from_utf8_lossy(&out.stdout).to_string();
        if printed_text.contains("sprandom=1") && !fio_knows("sprandom") {
            eprintln!("{test}: {name} not checked: this fio has no sprandom");
            continue;
        }
        if printed_text.contains("random_distribution=sequence")
            && !fio_knows("random_sequence_stride")
        {
            eprintln!("{test}: {name} not checked: this fio has no random_distribution=sequence");
            continue;
        }
        std::fs::write(&printed, &out.stdout).unwrap();
        let parse = std::process::Command::new("fio")
            .arg("--parse-only")
            .arg(&printed)
            .output()
            .unwrap();
        assert!(
            parse.status.success(),
            "{name}: fio refused what was printed:\n{}\n{}",
            text(&parse),
            String::from_utf8_lossy(&out.stdout)
        );
        let show = std::process::Command::new("fio")
            .arg("--showcmd")
            .arg(&printed)
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&show.stdout).to_string();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with(';') || line.starts_with('[') {
                continue;
            }
            let option = format!("--{line}");
            assert!(
                shown.contains(&format!("{option} ")) || shown.trim_end().ends_with(&option),
                "{name}: fio does not read `{line}` back:\n{shown}"
            );
        }
        checked += 1;
    }
    assert!(checked >= 80, "only {checked} files printed");
}

/// Whether the fio here knows `option`.
fn fio_knows(option: &str) -> bool {
    std::process::Command::new("fio")
        .arg(format!("--cmdhelp={option}"))
        .output()
        .is_ok_and(|o| !text(&o).contains("No such command"))
}

/// Issue 31: job files as third parties write them (tests/fio/corpus: the shapes of 62
/// public job files from 30 repositories other than fio's, see its README.md), each handed
/// to stormark as a user would: the recorded verdict holds (those that run, run for 200 ms
/// with exit 0 and leave nothing behind; the refused stop with one line before any load),
/// and at least nine in ten run as written.
#[test]
fn third_party_job_files_keep_their_verdicts() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fio/corpus");
    let lines: Vec<String> = std::fs::read_to_string(corpus.join("VERDICTS"))
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    let mut files: Vec<String> = std::fs::read_dir(&corpus)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".fio"))
        .collect();
    files.sort();
    let listed: Vec<String> = lines
        .iter()
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect();
    assert_eq!(files, listed, "every file has a verdict, in order");
    let dir = temp_dir(TMP);
    let scratch = dir.path().join("d");
    std::fs::create_dir(&scratch).unwrap();
    // A device of the original: a sparse file as large as a small disk.
    let device = dir.path().join("device");
    std::fs::File::create(&device)
        .unwrap()
        .set_len(256 << 30)
        .unwrap();
    let mut differ = Vec::new();
    let mut runs = 0;
    for line in &lines {
        let mut words = line.split(' ');
        let (name, verdict, target) = (
            words.next().unwrap(),
            words.next().unwrap(),
            words.next().unwrap(),
        );
        let (flags, vars): (Vec<&str>, Vec<&str>) = words.partition(|w| w.starts_with("--"));
        let target = if target == "device" {
            &device
        } else {
            &scratch
        };
        let mut args = vec![
            "run".to_string(),
            target.display().to_string(),
            "--job".into(),
            corpus.join(name).display().to_string(),
            "--allow-overwrite".into(),
            "-q".into(),
        ];
        // The harness's flags, any of them replaced by the file's own (--size=128m).
        for (flag, value) in [
            ("--size", "16m"),
            ("--time", "200ms"),
            ("--ramp", "0"),
            ("--startdelay", "0"),
        ] {
            let own = flags
                .iter()
                .find_map(|f| f.strip_prefix(&format!("{flag}=")));
            args.push(format!("{flag}={}", own.unwrap_or(value)));
        }
        args.extend(
            flags
                .iter()
                .filter(|f| {
                    !["--size=", "--time=", "--ramp=", "--startdelay="]
                        .iter()
                        .any(|d| f.starts_with(d))
                })
                .map(|f| f.to_string()),
        );
        let out = std::process::Command::new(BIN)
            .args(&args)
            .envs(vars.iter().filter_map(|v| v.split_once('=')))
            .output()
            .unwrap();
        let said = text(&out);
        let got = match out.status.code() {
            Some(0) => "runs",
            Some(2) => {
                assert_eq!(said.trim().lines().count(), 1, "{name}: {said}");
                "refused"
            }
            other => panic!("{name}: exit {other:?}: {said}"),
        };
        runs += usize::from(got == "runs");
        if got != verdict {
            differ.push(format!("{name}: {got}, recorded {verdict}: {said}"));
        }
        assert_eq!(
            std::fs::read_dir(&scratch).unwrap().count(),
            0,
            "{name} left files behind"
        );
    }
    assert!(
        differ.is_empty(),
        "verdicts changed (update VERDICTS if for the better): {differ:#?}"
    );
    assert!(
        runs * 10 >= lines.len() * 9,
        "{runs} of {} run",
        lines.len()
    );
}

/// Issue 55: real job files under their own names (tests/fixtures/fio-corpus: 41 job files
/// of 27 public repositories, `.ini`, `.cfg`, `.conf`, `.job` and `.fio`; README.md names
/// each one's source), each given to stormark as its user would, as the TARGET
/// (`stormark run fio.cfg`), after the edits of `EDITS` beside them (paths this host lacks
/// made a scratch directory or a sparse file standing for a device, variables set). Each
/// keeps its verdict: those that run exit 0 with I/O measured as the file's jobs (never the
/// file itself as the thing measured) and leave nothing behind; those refused (another
/// engine's load, a mistake fio refuses too) and the one that fails stop before any load in
/// one line. At least 95% of the files not refused run.
#[test]
fn real_job_files_run_under_their_own_names() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/fio-corpus");
    let lines: Vec<String> = std::fs::read_to_string(corpus.join("EDITS"))
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    // Every job file of the corpus has a line (an included file is not a job file).
    let mut files: Vec<String> = std::fs::read_dir(&corpus)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n != "README.md" && n != "EDITS" && !n.contains("global_config"))
        .collect();
    files.sort();
    let listed: Vec<String> = lines
        .iter()
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect();
    assert_eq!(files, listed, "every file has a line in EDITS, in order");
    let (mut runs, mut refused, mut fails) = (Vec::new(), Vec::new(), Vec::new());
    let mut differ = Vec::new();
    for line in &lines {
        let mut words = line.split(' ');
        let (name, verdict) = (words.next().unwrap(), words.next().unwrap());
        let dir = temp_dir(TMP);
        let scratch = dir.path().join("d");
        std::fs::create_dir(&scratch).unwrap();
        // {dir} and {devN} in an edit: the scratch directory, and 1 GiB sparse files standing
        // for the devices the original names.
        let place = |text: &str| -> String {
            let mut out = text.replace("{dir}", scratch.to_str().unwrap());
            for n in 1..=9 {
                let key = format!("{{dev{n}}}");
                if out.contains(&key) {
                    let dev = dir.path().join(format!("dev{n}"));
                    if !dev.exists() {
                        std::fs::File::create(&dev)
                            .unwrap()
                            .set_len(1 << 30)
                            .unwrap();
                    }
                    out = out.replace(&key, dev.to_str().unwrap());
                }
            }
            out
        };
        let mut body = std::fs::read_to_string(corpus.join(name)).unwrap();
        let (mut vars, mut targets, mut flags) = (Vec::new(), Vec::new(), Vec::new());
        for edit in words {
            if let Some((old, new)) = edit.split_once('|') {
                body = body.replace(old, &place(new).replace("\\n", "\n"));
            } else if let Some(target) = edit.strip_prefix('+') {
                targets.push(place(target));
            } else if edit.starts_with("--") {
                flags.push(edit.to_string());
            } else {
                let (k, v) = edit.split_once('=').unwrap();
                vars.push((k.to_string(), place(v)));
            }
        }
        // The file under its own name where it is run, with what it includes.
        std::fs::write(scratch.join(name), &body).unwrap();
        std::fs::copy(
            corpus.join("stackhpc-global_config.fio"),
            scratch.join("stackhpc-global_config.fio"),
        )
        .unwrap();
        let json = dir.path().join("r.json");
        let out = std::process::Command::new(BIN)
            .current_dir(&scratch)
            .arg("run")
            .arg(name)
            .args(&targets)
            .args(["--time", "200ms", "--ramp", "0", "--startdelay", "0"])
            .args(["--size", "16m", "--allow-overwrite", "-q", "--json"])
            .arg(&json)
            .args(&flags)
            .envs(vars.iter().map(|(k, v)| (k, v)))
            .output()
            .unwrap();
        let said = text(&out);
        let got = match out.status.code() {
            Some(0) => {
                let doc = stormark_testkit::read_json(&json);
                // The file's jobs ran (by their sections' names), not the file as a target.
                let jobs = doc["spec"]["jobs"].as_array().unwrap();
                assert!(!jobs.is_empty(), "{name}: {said}");
                let measured: u64 = doc["phases"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|p| p["kind"] == "run")
                    .map(|p| p["total"]["ops"].as_u64().unwrap_or(0))
                    .sum();
                assert!(measured > 0, "{name}: nothing measured: {}", doc["phases"]);
                assert!(
                    !doc["target"]["path"].as_str().unwrap_or("").ends_with(name),
                    "{name} was measured as a file"
                );
                "runs"
            }
            Some(2) => {
                assert_eq!(said.trim().lines().count(), 1, "{name}: {said}");
                if said.contains("ioengine") && said.contains("not even --lenient") {
                    "engine"
                } else if said.contains("options stormark does not run") {
                    "fio-refuses"
                } else {
                    "fails"
                }
            }
            other => panic!("{name}: exit {other:?}: {said}"),
        };
        match got {
            "runs" => runs.push(name),
            "fails" => fails.push(format!("{name}: {said}")),
            _ => refused.push(name),
        }
        if got != verdict {
            differ.push(format!("{name}: {got}, recorded {verdict}: {said}"));
        }
        // Only the file and what it includes are left in the scratch directory.
        assert_eq!(
            std::fs::read_dir(&scratch).unwrap().count(),
            2,
            "{name} left files behind"
        );
    }
    eprintln!(
        "fio corpus: {} files, {} run, {} refused (another engine, or a mistake fio refuses too), {} fail: {fails:#?}",
        lines.len(),
        runs.len(),
        refused.len(),
        fails.len()
    );
    assert!(
        differ.is_empty(),
        "verdicts changed (update EDITS if for the better): {differ:#?}"
    );
    let tried = runs.len() + fails.len();
    assert!(
        runs.len() * 100 >= tried * 95,
        "{} of {tried} run: {fails:#?}",
        runs.len()
    );
}
