//! A suite of one's own: a TOML file of steps, each a stormark command (`run`, `s3`, `net` or
//! `meta`) with its name and, optionally, its expected figures. `stormark suite FILE.toml`.
//!
//! ```toml
//! name = "nightly"
//!
//! [[step]]
//! name = "randread-4k"
//! command = ["run", "/mnt/bench", "--rw", "randread", "--bs", "4k", "--direct", "--time", "60s"]
//! expect = "iops=50k,p99=2ms"
//! ```

use serde::Deserialize;

use crate::suite::{apply_expectations, SuiteOptions, SuiteStep};

/// The most steps a suite file may hold.
pub const SUITE_FILE_STEPS: usize = 1000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SuiteDoc {
    name: Option<String>,
    step: Vec<StepDoc>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StepDoc {
    name: String,
    command: Vec<String>,
    expect: Option<String>,
    together: Option<String>,
}

/// The commands a step may be.
const COMMANDS: &[&str] = &["run", "s3", "net", "meta"];

/// A name usable in a file name: letters, digits, `.`, `_`, `-` and `/`, 1 to 64.
fn good_name(n: &str) -> bool {
    (1..=64).contains(&n.len())
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/'))
        && !n.starts_with(['/', '.'])
}

/// The suite's name and steps from a suite file's text (`path` as shown in errors). The
/// suite's `--time` (or `--smoke`: 1 s) replaces each run, s3 and net step's own; `--agents`
/// is added to run and s3 steps that name none; `--expect` joins each step's own.
pub fn suite_file_steps(
    text: &str,
    path: &str,
    o: &SuiteOptions,
) -> Result<(String, Vec<SuiteStep>), String> {
    let doc: SuiteDoc = toml::from_str(text).map_err(|e| {
        format!(
            "{path}: {}; expected optional name = \"...\" and [[step]] sections with name, command = [\"run\", ...] and optional expect",
            e.message().trim()
        )
    })?;
    let name = doc.name.unwrap_or_else(|| {
        std::path::Path::new(path)
            .file_stem()
            .map_or("suite".into(), |s| s.to_string_lossy().into_owned())
    });
    if !good_name(&name) {
        return Err(format!(
            "{path}: name {name:?}: letters, digits, '.', '_' and '-', at most 64"
        ));
    }
    if doc.step.is_empty() || doc.step.len() > SUITE_FILE_STEPS {
        return Err(format!(
            "{path}: from 1 to {SUITE_FILE_STEPS} [[step]] sections, not {}",
            doc.step.len()
        ));
    }
    let time = match (&o.time, o.smoke) {
        (Some(t), _) => Some(t.clone()),
        (None, true) => Some("1s".to_string()),
        (None, false) => None,
    };
    let mut steps: Vec<SuiteStep> = Vec::new();
    for (i, s) in doc.step.into_iter().enumerate() {
        let at = format!("{path}: [[step]] {} ({:?})", i + 1, s.name);
        if !good_name(&s.name) {
            return Err(format!(
                "{at}: a name of letters, digits, '.', '_', '-' and '/', at most 64, not starting with '.' or '/' (it names the step's files)"
            ));
        }
        if steps.iter().any(|p| p.name == s.name) {
            return Err(format!("{at}: another step has this name"));
        }
        let Some(cmd) = s.command.first().filter(|c| COMMANDS.contains(&c.as_str())) else {
            return Err(format!(
                "{at}: command must start with {} (stormark's own commands, without \"stormark\")",
                COMMANDS.join(", ")
            ));
        };
        let cmd = cmd.clone();
        let mut args = s.command.clone();
        for a in &args {
            let flag = a.split('=').next().unwrap_or("");
            if matches!(flag, "--json" | "--html") {
                return Err(format!(
                    "{at}: {flag} is the suite's to give (each step's document goes into the suite's directory)"
                ));
            }
        }
        if let Some(t) = time.as_ref().filter(|_| cmd != "meta") {
            set_flag(&mut args, "--time", t);
            // A search measures each step for --step-time (20 s by default), not --time: the
            // suite's time reaches its steps too, and --smoke takes four of them, as the
            // shipped suites' searches do (issue 56: a --smoke suite ran a search at full length).
            let search = args
                .iter()
                .any(|a| a == "--target-latency" || a.starts_with("--target-latency="));
            if search {
                set_flag(&mut args, "--step-time", t);
                if o.smoke {
                    set_flag(&mut args, "--search-steps", "4");
                }
            }
        }
        // An S3 step takes the suite's object store (--endpoint, --bucket, keys' options)
        // where it names none of its own.
        if let (Some(flags), "s3") = (&o.s3, cmd.as_str()) {
            let named = |flag: &str| {
                args.iter()
                    .any(|a| a == flag || a.starts_with(&format!("{flag}=")))
            };
            let mut extra = Vec::new();
            let mut it = flags.iter().peekable();
            while let Some(flag) = it.next() {
                let value = it.next_if(|v| !v.starts_with("--"));
                if flag.starts_with("--") && !named(flag) {
                    extra.push(flag.clone());
                    extra.extend(value.cloned());
                }
            }
            args.extend(extra);
        }
        let named_agents = args.iter().any(|a| a.starts_with("--agents"));
        if !o.agents.is_empty() && !named_agents && (cmd == "run" || cmd == "s3") {
            args.extend(["--agents".to_string(), o.agents.join(",")]);
            args.extend(o.distributed.iter().cloned());
        }
        if let Some(e) = &s.expect {
            if cmd != "run" && cmd != "s3" {
                return Err(format!(
                    "{at}: expect is for run and s3 steps (their --expect)"
                ));
            }
            args.extend(["--expect".to_string(), e.clone()]);
        }
        steps.push(SuiteStep {
            name: s.name.clone(),
            part: "custom",
            workload: s.name,
            subject: None,
            together: s.together,
            args,
            file: None,
            skip: None,
        });
    }
    apply_expectations(&mut steps, &o.expect, &name)?;
    Ok((name, steps))
}

/// Replaces FLAG's value in `args` (`--flag V` or `--flag=V`), or appends it.
fn set_flag(args: &mut Vec<String>, flag: &str, value: &str) {
    let prefix = format!("{flag}=");
    for i in 0..args.len() {
        if args[i] == flag && i + 1 < args.len() {
            args[i + 1] = value.to_string();
            return;
        }
        if args[i].starts_with(&prefix) {
            args[i] = format!("{flag}={value}");
            return;
        }
    }
    args.extend([flag.to_string(), value.to_string()]);
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
name = "nightly"

[[step]]
name = "randread-4k"
command = ["run", "/mnt/bench", "--rw", "randread", "--bs", "4k", "--time", "60s"]
expect = "iops=50k"

[[step]]
name = "meta"
command = ["meta", "/mnt/bench", "--files", "100"]
"#;

    #[test]
    fn steps_run_as_written_with_the_suites_time_and_agents() {
        let (name, s) = suite_file_steps(FILE, "n.toml", &SuiteOptions::default()).unwrap();
        assert_eq!(name, "nightly");
        assert_eq!(s[0].args.last().unwrap(), "iops=50k");
        assert!(s[0].args.windows(2).any(|w| w == ["--time", "60s"]));
        let o = SuiteOptions {
            smoke: true,
            agents: vec!["a:1".into(), "b:1".into()],
            distributed: vec!["--token-file".into(), "/t".into()],
            ..SuiteOptions::default()
        };
        let (_, s) = suite_file_steps(FILE, "n.toml", &o).unwrap();
        assert!(s[0].args.windows(2).any(|w| w == ["--time", "1s"]));
        assert!(!s[0].args.contains(&"60s".to_string()));
        assert!(s[0].args.windows(2).any(|w| w == ["--agents", "a:1,b:1"]));
        assert_eq!(s[1].args, ["meta", "/mnt/bench", "--files", "100"]);
    }

    #[test]
    fn smoke_shortens_a_search_steps_too_issue_56() {
        let text = "[[step]]\nname = \"commits\"\ncommand = [\"run\", \"/mnt/db\", \"--target-latency\", \"sync:p99<=2ms\"]\n";
        let (_, s) = suite_file_steps(text, "s.toml", &SuiteOptions::default()).unwrap();
        assert!(
            !s[0].args.iter().any(|a| a == "--step-time"),
            "{:?}",
            s[0].args
        );
        let o = SuiteOptions {
            smoke: true,
            ..SuiteOptions::default()
        };
        let (_, s) = suite_file_steps(text, "s.toml", &o).unwrap();
        assert!(
            s[0].args.windows(2).any(|w| w == ["--step-time", "1s"]),
            "{:?}",
            s[0].args
        );
        assert!(
            s[0].args.windows(2).any(|w| w == ["--search-steps", "4"]),
            "{:?}",
            s[0].args
        );
        let o = SuiteOptions {
            time: Some("5s".into()),
            ..SuiteOptions::default()
        };
        let (_, s) = suite_file_steps(text, "s.toml", &o).unwrap();
        assert!(
            s[0].args.windows(2).any(|w| w == ["--step-time", "5s"]),
            "{:?}",
            s[0].args
        );
    }

    #[test]
    fn s3_steps_take_the_suites_object_store() {
        let o = SuiteOptions {
            s3: Some(
                [
                    "--endpoint",
                    "http://m:9000",
                    "--bucket",
                    "b",
                    "--create-bucket",
                ]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            ),
            ..SuiteOptions::default()
        };
        let text = "[[step]]\nname = \"puts\"\ncommand = [\"s3\", \"--op-mix\", \"put\"]\n\n[[step]]\nname = \"mine\"\ncommand = [\"s3\", \"--bucket\", \"other\"]\n";
        let (_, steps) = suite_file_steps(text, "s.toml", &o).unwrap();
        assert_eq!(
            steps[0].args,
            [
                "s3",
                "--op-mix",
                "put",
                "--endpoint",
                "http://m:9000",
                "--bucket",
                "b",
                "--create-bucket"
            ]
        );
        // Its own bucket stays; the rest is the suite's.
        assert_eq!(
            steps[1].args,
            [
                "s3",
                "--bucket",
                "other",
                "--endpoint",
                "http://m:9000",
                "--create-bucket"
            ]
        );
        let e = suite_file_steps(
            "[[step]]\nname = \"...\"\ncommand = [\"run\"]\n",
            "s.toml",
            &o,
        )
        .unwrap_err();
        assert!(e.contains("not starting with '.'"), "{e}");
    }

    #[test]
    fn mistakes_are_named() {
        let o = SuiteOptions::default();
        let bad = |text: &str, says: &str| {
            let e = suite_file_steps(text, "s.toml", &o).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
            assert!(!e.contains('\n'), "{e}");
        };
        bad(
            "[[step]]\nname = \"a\"\ncommand = [\"rm\", \"-rf\"]\n",
            "must start with run",
        );
        bad(
            "[[step]]\nname = \"a\"\ncommand = []\n",
            "must start with run",
        );
        bad(
            "[[step]]\nname = \"a\"\ncommand = [\"run\", \"--json\", \"x\"]\n",
            "--json is the suite's",
        );
        bad(
            "[[step]]\nname = \"a\"\ncommand = [\"run\"]\n[[step]]\nname = \"a\"\ncommand = [\"run\"]\n",
            "another step has this name",
        );
        bad(
            "[[step]]\nname = \"../x\"\ncommand = [\"run\"]\n",
            "a name of letters",
        );
        bad(
            "[[step]]\nname = \"a\"\ncommand = [\"run\"]\nbogus = 1\n",
            "unknown field",
        );
        bad("name = \"x\"\nstep = []\n", "from 1 to 1000");
        bad(
            "[[step]]\nname = \"a\"\ncommand = [\"net\", \"client\", \"h\"]\nexpect = \"iops=1\"\n",
            "expect is for run and s3",
        );
    }

    #[test]
    fn set_flag_replaces_or_appends() {
        let mut a: Vec<String> = vec!["run".into(), "--time=5s".into()];
        set_flag(&mut a, "--time", "1s");
        assert_eq!(a, ["run", "--time=1s"]);
        let mut a: Vec<String> = vec!["run".into()];
        set_flag(&mut a, "--time", "1s");
        assert_eq!(a, ["run", "--time", "1s"]);
    }
}
