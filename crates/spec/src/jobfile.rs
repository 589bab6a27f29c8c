//! TOML job files: top-level keys are defaults for every job, `[[job]]` sections are jobs.
//!
//! ```toml
//! size = "1g"          # defaults for every job below
//! time = "60s"
//! prepare = true       # run-level keys: target, prepare
//!
//! [[job]]
//! name = "latency"
//! group = "mixed"      # jobs sharing a group run at the same time
//! rw = "randread"
//! iodepth = 1
//!
//! [[job]]
//! name = "stress"
//! group = "mixed"
//! rw = "write"
//! bs = "1m"
//! ```

use crate::workload::{JobOpts, Source};
use crate::SpecError;

/// A parsed job file, before flags are layered on top.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobFile {
    /// Options shared by every job (top-level keys).
    pub defaults: JobOpts,
    /// `target = "..."`: where to run, if the command line gives none.
    pub target: Option<String>,
    /// `prepare = true`: write the working set before measuring.
    pub prepare: Option<bool>,
    /// The `[[job]]` sections, each still without the defaults.
    pub jobs: Vec<JobOpts>,
}

/// Parses a TOML job file. `path` names the file in errors.
pub fn parse_job_file(text: &str, path: &str) -> Result<JobFile, SpecError> {
    let file_err = |message: String| SpecError::JobFile {
        path: path.to_string(),
        message,
    };
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        file_err(format!("not valid TOML: {}", e.message().trim()))
    })?;
    let mut out = JobFile::default();
    for (key, value) in &table {
        match key.as_str() {
            "job" => {
                let list = value.as_array().ok_or_else(|| {
                    file_err("`job` must be an array of tables: write each job as [[job]]".into())
                })?;
                for (i, item) in list.iter().enumerate() {
                    let section = item.as_table().ok_or_else(|| {
                        file_err(
                            "`job` must be an array of tables: write each job as [[job]]".into(),
                        )
                    })?;
                    let context = format!("[[job]] {} of {path}", i + 1);
                    let mut opts = JobOpts::default();
                    for (k, v) in section {
                        set_value(&mut opts, k, v, &context, path)?;
                    }
                    out.jobs.push(opts);
                }
            }
            "target" => {
                out.target = Some(
                    value
                        .as_str()
                        .ok_or_else(|| {
                            file_err("target must be a string path, such as \"/mnt/data\"".into())
                        })?
                        .to_string(),
                )
            }
            "prepare" => {
                out.prepare = Some(
                    value
                        .as_bool()
                        .ok_or_else(|| file_err("prepare must be true or false".into()))?,
                )
            }
            _ => set_value(&mut out.defaults, key, value, path, path)?,
        }
    }
    Ok(out)
}

fn set_value(
    opts: &mut JobOpts,
    key: &str,
    value: &toml::Value,
    context: &str,
    path: &str,
) -> Result<(), SpecError> {
    let text = match value {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Float(f) => f.to_string(),
        // `hosts = [0, "node3"]`: a list, as the key's text form joins it.
        toml::Value::Array(items) if key == "hosts" => {
            let mut parts = Vec::new();
            for item in items {
                parts.push(match item {
                    toml::Value::String(s) => s.clone(),
                    toml::Value::Integer(i) => i.to_string(),
                    _ => {
                        return Err(SpecError::JobFile {
                            path: path.to_string(),
                            message: format!("hosts in {context}: expected host indexes or names, such as [0, 2] or [\"node1\"]"),
                        })
                    }
                });
            }
            parts.join(",")
        }
        _ => {
            return Err(SpecError::JobFile {
                path: path.to_string(),
                message: format!("{key} in {context}: expected a string, number or boolean"),
            })
        }
    };
    opts.set(key, &text, Source::Key(context))
        .map_err(|e| match e {
            SpecError::Invalid { expected, .. } if expected.starts_with("a known key") => {
                SpecError::JobFile {
                    path: path.to_string(),
                    message: match crate::options::nearest_key(key) {
                        Some(near) => format!(
                            "unknown key `{key}` in {context}: did you mean `{near}`? (every key: docs/job-files.md)"
                        ),
                        None => format!(
                            "unknown key `{key}` in {context} (every key: docs/job-files.md, or stormark run --help)"
                        ),
                    },
                }
            }
            other => other,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Rw;
    use proptest::prelude::*;

    #[test]
    fn defaults_and_jobs() {
        let f = parse_job_file(
            r#"
            size = "64m"
            prepare = true
            target = "/mnt/x"
            [[job]]
            name = "a"
            rw = "randread"
            iodepth = 8
            [[job]]
            name = "b"
            rw = "write"
            direct = true
            "#,
            "t.toml",
        )
        .unwrap();
        assert_eq!(f.defaults.size, Some(64 << 20));
        assert_eq!(f.prepare, Some(true));
        assert_eq!(f.target.as_deref(), Some("/mnt/x"));
        assert_eq!(f.jobs.len(), 2);
        assert_eq!(f.jobs[0].rw, Some(Rw::RandRead));
        assert_eq!(f.jobs[0].iodepth, Some(8));
        let b = f.defaults.overlay(&f.jobs[1]).resolve("x").unwrap();
        assert_eq!(b.size, Some(64 << 20));
    }

    #[test]
    fn errors_are_one_line_and_name_the_place() {
        let err = parse_job_file("bs = \"4kk\"", "t.toml")
            .unwrap_err()
            .to_string();
        assert_eq!(err, "bs in t.toml = 4kk: expected a size such as 4k, 64KiB or 1m, or a range such as 4k-64k");
        let err = parse_job_file("[[job]]\nblocksiz = \"4k\"", "t.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(
                "t.toml: unknown key `blocksiz` in [[job]] 1 of t.toml: did you mean `blocksize`?"
            ),
            "{err}"
        );
        let err = parse_job_file("size = ", "t.toml").unwrap_err().to_string();
        assert!(err.starts_with("t.toml: not valid TOML"), "{err}");
        assert!(!err.contains('\n'), "{err}");
        let err = parse_job_file("job = 3", "t.toml").unwrap_err().to_string();
        assert!(err.contains("[[job]]"), "{err}");
        let err = parse_job_file("size = [1]", "t.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("expected a string, number or boolean"),
            "{err}"
        );
    }

    proptest! {
        #[test]
        fn job_file_parser_never_panics(s in "\\PC{0,64}") {
            let _ = parse_job_file(&s, "fuzz.toml");
        }

        #[test]
        fn job_file_keys_never_panic(key in "[a-z_]{1,12}", value in "[0-9a-z%.-]{0,8}") {
            let _ = parse_job_file(&format!("[[job]]\n{key} = \"{value}\""), "fuzz.toml");
        }
    }
}
