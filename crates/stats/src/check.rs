//! What comes from elsewhere, made safe before it is recorded or rendered: command lines
//! without their secrets, and results documents read from files checked and their text
//! escaped.

/// The flags whose value is a secret: never recorded or printed.
const SECRET_FLAGS: [&str; 4] = [
    "--secret-key",
    "--secret_key",
    "--secret-access-key",
    "--secret",
];

/// A command line as it may be recorded or printed (results, suite summaries, a step's
/// header): the value of every secret flag (`--secret-key X`, `--secret-key=X`) replaced by
/// `<hidden>`. A results document is shared; a secret never is.
pub fn redact_command(args: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut hide_next = false;
    args.into_iter()
        .map(|a| {
            if std::mem::take(&mut hide_next) {
                return "<hidden>".to_string();
            }
            if SECRET_FLAGS.contains(&a.as_str()) {
                hide_next = true;
            }
            match a.split_once('=') {
                Some((k, _)) if SECRET_FLAGS.contains(&k) => format!("{k}=<hidden>"),
                _ => a,
            }
        })
        .collect()
}

#[cfg(test)]
mod redact_tests {
    use super::redact_command;

    #[test]
    fn secrets_are_hidden_in_every_form() {
        let cmd = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert_eq!(
            redact_command(cmd(
                "stormark s3 --secret-key abc --access-key AK --bucket b"
            )),
            cmd("stormark s3 --secret-key <hidden> --access-key AK --bucket b")
        );
        assert_eq!(
            redact_command(cmd("s3 --secret-key=abc --secret_key xyz")),
            cmd("s3 --secret-key=<hidden> --secret_key <hidden>")
        );
        // A secret-looking value of another flag is the user's business, and kept.
        assert_eq!(redact_command(cmd("run --name x")), cmd("run --name x"));
    }
}

/// Figures that are counts, rates, sizes or times: never below zero in a document stormark
/// wrote.
const NON_NEGATIVE: [&str; 16] = [
    "ops",
    "bytes",
    "iops",
    "bw_bytes_per_s",
    "errors",
    "min",
    "mean",
    "p50",
    "p90",
    "p99",
    "p999",
    "p9999",
    "max",
    "duration_ns",
    "t",
    "workers",
];

/// The largest magnitude a figure of a results document may have (a byte count of an
/// exabyte, a duration of 31 years in ns): anything beyond was not measured.
const MAX_FIGURE: f64 = 1e18;

/// Checks a results document read from a file before anything renders it, and makes its
/// text safe to print: every number finite and within [`MAX_FIGURE`], counts, rates and
/// latencies not negative, and every control character of a string escaped (a host name
/// that clears the screen or forges a line). Says where the first figure out of bounds is.
pub fn check_document(doc: &mut serde_json::Value) -> Result<(), String> {
    fn walk(v: &mut serde_json::Value, path: &mut String, key: &str) -> Result<(), String> {
        match v {
            serde_json::Value::String(s) if s.chars().any(char::is_control) => {
                *s = stormark_spec::printable(s, usize::MAX);
            }
            serde_json::Value::Number(n) => {
                let x = n.as_f64().unwrap_or(f64::NAN);
                if !x.is_finite() || x.abs() > MAX_FIGURE {
                    return Err(format!("{path} is {n}, beyond any figure a run measures"));
                }
                if x < 0.0 && NON_NEGATIVE.contains(&key) {
                    return Err(format!("{path} is {n}: a {key} is never negative"));
                }
            }
            serde_json::Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    walk(item, path, key)?;
                    path.truncate(len);
                }
            }
            serde_json::Value::Object(map) => {
                // Keys are text too: a key with a control character is renamed.
                let bad: Vec<String> = map
                    .keys()
                    .filter(|k| k.chars().any(char::is_control))
                    .cloned()
                    .collect();
                for k in bad {
                    if let Some(v) = map.remove(&k) {
                        map.insert(stormark_spec::printable(&k, usize::MAX), v);
                    }
                }
                for (k, item) in map.iter_mut() {
                    let len = path.len();
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(&stormark_spec::printable(k, 64));
                    walk(item, path, k)?;
                    path.truncate(len);
                }
            }
            _ => {}
        }
        Ok(())
    }
    walk(doc, &mut String::new(), "")?;
    // A document written by hand or by another tool may carry a secret in its command line:
    // hidden as stormark hides its own before anything renders it.
    if let Some(command) = doc.get_mut("command").and_then(|c| c.as_array_mut()) {
        if command.iter().all(serde_json::Value::is_string) {
            let args = command
                .iter()
                .filter_map(|a| a.as_str().map(str::to_string));
            *command = redact_command(args.collect::<Vec<_>>())
                .into_iter()
                .map(serde_json::Value::String)
                .collect();
        }
    }
    Ok(())
}

#[cfg(test)]
mod check_tests {
    use super::check_document;
    use serde_json::json;

    #[test]
    fn documents_out_of_bounds_are_refused_and_text_is_made_safe() {
        let mut ok = json!({"phases": [{"total": {"iops": 1000.0, "ops": 5}}],
                            "hosts": [{"name": "h\u{1b}[2J\nstatus: ok"}],
                            "clock_offset_ns": -30});
        check_document(&mut ok).unwrap();
        let name = ok["hosts"][0]["name"].as_str().unwrap();
        assert!(!name.chars().any(char::is_control), "{name}");
        let mut huge = json!({"phases": [{"intervals": [{"iops": 1.7e308}]}]});
        let e = check_document(&mut huge).unwrap_err();
        assert!(e.contains("phases[0].intervals[0].iops"), "{e}");
        let mut negative = json!({"phases": [{"total": {"iops": -5.0}}]});
        assert!(check_document(&mut negative)
            .unwrap_err()
            .contains("never negative"));
    }

    #[test]
    fn a_documents_secret_is_hidden_before_it_is_rendered() {
        // Issue 54: `report` printed a `--secret-key` of a document's command in full.
        let mut doc =
            json!({"command": ["stormark", "s3", "--secret-key", "SeCrEt", "--secret=x2"]});
        check_document(&mut doc).unwrap();
        let text = doc.to_string();
        assert!(!text.contains("SeCrEt") && !text.contains("x2"), "{text}");
        assert_eq!(doc["command"][3], "<hidden>");
    }
}
