//! A fio job file's lines as fio reads them: comments stripped, variables expanded (never one
//! named like a secret), includes read and bounded in all, sections gathered.

use super::expr::{eval, is_arithmetic};
use super::Line;

/// Splits the text into sections of `key[=value]` lines, expanding variables and includes.
pub(super) fn read_lines(
    text: &str,
    path: &str,
    env: &dyn Fn(&str) -> Option<String>,
    include: &dyn Fn(&str) -> Result<String, String>,
    depth: u32,
    budget: &mut IncludeBudget,
    sections: &mut Vec<(String, Vec<Line>)>,
) -> Result<(), String> {
    if depth > 8 {
        return Err("includes nested more than 8 deep (an include of itself?)".into());
    }
    budget.bytes += text.len() as u64;
    if budget.bytes > MAX_INCLUDED_BYTES {
        return Err(format!(
            "a job file and its includes of more than {} in all (an include repeated many times?); include each file once",
            crate::units::format_size(MAX_INCLUDED_BYTES)
        ));
    }
    for (i, raw) in text.lines().enumerate() {
        let no = i + 1;
        let line = strip_comment(raw).trim();
        if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
            continue;
        }
        if let Some(rest) = line.strip_prefix("include ") {
            // Said by line only: what was written may be anything (a path to a secret).
            budget.includes += 1;
            if budget.includes > MAX_INCLUDES {
                return Err(format!(
                    "line {no}: include: more than {MAX_INCLUDES} includes in all (a file included again and again?); include each file once"
                ));
            }
            let included = include(rest.trim()).map_err(|e| format!("line {no}: include: {e}"))?;
            read_lines(
                &included,
                rest.trim(),
                env,
                include,
                depth + 1,
                budget,
                sections,
            )?;
            continue;
        }
        if let Some(name) = line.strip_prefix('[') {
            let name = name
                .strip_suffix(']')
                .ok_or_else(|| format!("line {no}: a section is [name]"))?
                .trim();
            if name.is_empty() || name.len() > 128 {
                return Err(format!(
                    "line {no}: a section needs a name of 1 to 128 characters"
                ));
            }
            // A job's name reaches the terminal, the results and a printed job file.
            if name.chars().any(char::is_control) {
                return Err(format!(
                    "line {no}: a section name holds a control character; name it with printable characters"
                ));
            }
            sections.push((name.to_string(), Vec::new()));
            continue;
        }
        let line = expand(line, env).map_err(|e| format!("line {no}: {e}"))?;
        // A variable's value may hold anything: a newline in a name or a filename would forge
        // a line of the terminal's report or of a printed fio job file. Tabs are blanks.
        if line.chars().any(|c| c.is_control() && c != '\t') {
            return Err(format!(
                "line {no}: a value holds a control character (a newline from a variable?); values are one line of printable characters"
            ));
        }
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim().to_ascii_lowercase(), Some(v.trim().to_string())),
            None => (line.trim().to_ascii_lowercase(), None),
        };
        let key = alias(&key).map_or(key, str::to_string);
        // fio's arithmetic: `size=(4*1024)`, `size=5*1024*1024*8/8`.
        let value = match value {
            Some(v) if is_arithmetic(&v) => Some(
                eval(&v)
                    .filter(|n| *n >= 0)
                    .map(|n| n.to_string())
                    .ok_or_else(|| {
                        format!(
                            "line {no}: {}: an expression that is not a whole number of 0 or more",
                            shown_key(&key)
                        )
                    })?,
            ),
            v => v,
        };
        // Not named: the first line of a file that is no job file (a token, a key given as
        // --job by mistake) would be printed.
        let Some((_, lines)) = sections.last_mut() else {
            return Err(format!(
                "line {no}: an option before any section: put it under [global] (or give a fio job file)"
            ));
        };
        let _ = path;
        lines.push(Line { no, key, value });
    }
    Ok(())
}

/// A line without its comment: fio ends a line at `;` or `#` after a space or tab
/// (`bs=4k ; the block size`, `numjobs=4\t# one per core`); a `;` or `#` inside a value
/// (`filename=/dev/disk#1`) stays.
fn strip_comment(line: &str) -> &str {
    let b = line.as_bytes();
    (1..b.len())
        .find(|&i| matches!(b[i], b';' | b'#') && matches!(b[i - 1], b' ' | b'\t'))
        .map_or(line, |i| &line[..i])
}

/// fio's other names of options stormark knows by one name.
fn alias(key: &str) -> Option<&'static str> {
    Some(match key {
        "nr_files" => "nrfiles",
        // fio's older name of runtime.
        "timeout" => "runtime",
        "threads" => "thread",
        _ => return None,
    })
}

/// `$VAR` and `${VAR}` replaced from `env`; an unknown variable is an error.
fn expand(line: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, tail) = if let Some(inner) = after.strip_prefix('{') {
            let end = inner.find('}').ok_or("an unclosed ${")?;
            (&inner[..end], &inner[end + 1..])
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        if name.is_empty() {
            return Err("a $ without a variable name".into());
        }
        // fio's own, expanded per job or file (in filename_format): left for it.
        if matches!(name, "jobnum" | "filenum" | "jobname" | "clientuid") {
            out.push('$');
            out.push_str(name);
            rest = tail;
            continue;
        }
        if looks_secret(name) {
            return Err(format!(
                "{}: a variable named like a secret is not expanded in a job file (its value would reach the output); give the value itself, or rename the variable",
                shown_var(name)
            ));
        }
        let value = env(name).ok_or_else(|| format!("{} is not set", shown_var(name)))?;
        if out.len() + value.len() + rest.len() > MAX_EXPANDED_LINE {
            return Err(format!(
                "longer than {MAX_EXPANDED_LINE} bytes once its variables are expanded"
            ));
        }
        out.push_str(&value);
        rest = tail;
    }
    out.push_str(rest);
    Ok(out)
}

/// Whether a variable's name says it holds a secret (`AWS_SECRET_ACCESS_KEY`, `API_TOKEN`,
/// `DB_PASSWORD`, `SSH_KEY`), which a job file may not expand: a job's name, a file name or
/// an option's value is printed, recorded in the results and sent to agents. A key's id
/// (`AWS_ACCESS_KEY_ID`) names a key without being one.
fn looks_secret(name: &str) -> bool {
    let up = name.to_ascii_uppercase();
    [
        "SECRET",
        "TOKEN",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "PRIVATE",
    ]
    .iter()
    .any(|w| up.contains(w))
        || (up.contains("KEY") && !up.ends_with("KEY_ID") && !up.ends_with("KEYID"))
}

/// The most includes a job file may make in all, however nested: 7 files of 1 KB each
/// including the next 12 times once made 35 million (issue 54).
const MAX_INCLUDES: u32 = 1024;

/// The most text a job file and everything it includes may hold in all.
const MAX_INCLUDED_BYTES: u64 = 16 << 20;

/// What a job file's includes have used of [`MAX_INCLUDES`] and [`MAX_INCLUDED_BYTES`].
#[derive(Default)]
pub(super) struct IncludeBudget {
    includes: u32,
    bytes: u64,
}

/// The longest a line may grow by expanding its variables: a variable of 100 kB used ten
/// times in a line of a 1 MB file must not ask for gigabytes.
pub const MAX_EXPANDED_LINE: usize = 64 << 10;

/// A key as a refusal may name it: an option name (letters, digits, `_`, at most 64), else
/// a mention that the line is not an option, never its text (an included file may be
/// anything).
pub(super) fn shown_key(key: &str) -> String {
    if !key.is_empty()
        && key.len() <= 64
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        key.to_string()
    } else {
        "a line that is no option (its text withheld)".into()
    }
}

/// A variable's name as an error may name it (as [`shown_key`]).
fn shown_var(name: &str) -> String {
    if name.len() <= 64 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        format!("${name}")
    } else {
        "a variable".into()
    }
}
