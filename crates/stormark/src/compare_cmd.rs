//! `stormark compare`: is B faster than A, or is it noise?

use std::path::Path;

use anyhow::Result;
use stormark_report::{
    compare_markdown, compare_page, compare_table, figure_label, Comparison, Output,
};
use stormark_stats::{compare, differences, GateCall, Results, Verdict, SCHEMA};

use crate::cli::CompareArgs;
use crate::{usage, Ending};

/// A percentage such as `3%`, `3` or `2.5%`.
fn percent(option: &str, text: &str) -> Result<f64, String> {
    let t = text.trim();
    t.strip_suffix('%')
        .unwrap_or(t)
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && (0.0..=1000.0).contains(v))
        .ok_or_else(|| format!("{option} {text}: expected a percentage such as 3% or 2.5"))
}

/// The largest results document read (a day-long run with many hosts stays well below).
const DOC_LIMIT: u64 = 1 << 30;

pub(crate) fn load(path: &Path) -> Result<Results, String> {
    let text = crate::read_limited(path, DOC_LIMIT, "a results document")
        .map_err(|e| format!("{}: cannot read it: {e}", path.display()))?;
    // The schema first, without building the document twice (a day-long run's is large).
    #[derive(serde::Deserialize)]
    struct Head {
        schema: Option<String>,
    }
    let head: Option<Head> = match serde_json::from_str(&text) {
        Ok(h) => Some(h),
        // JSON, but not an object with a schema string.
        Err(_) if serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok() => None,
        Err(e) => return Err(format!("{}: not JSON: {e}", path.display())),
    };
    if head.and_then(|h| h.schema).as_deref() != Some(SCHEMA) {
        return Err(format!(
            "{}: not a stormark results document (expected \"schema\": \"{SCHEMA}\")",
            path.display()
        ));
    }
    // Checked (and its text made safe to print) before anything renders it: anyone may have
    // written it.
    let mut doc: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    stormark_stats::check_document(&mut doc)
        .map_err(|e| format!("{}: not a document stormark wrote: {e}", path.display()))?;
    serde_json::from_value(doc).map_err(|e| format!("{}: {e}", path.display()))
}

pub fn main(args: CompareArgs) -> Result<Ending> {
    let noise = percent("--noise", &args.noise).map_err(usage)?;
    let gate = match &args.fail_if_worse {
        Some(t) => Some(percent("--fail-if-worse", t).map_err(usage)?),
        None => None,
    };
    let inputs: Vec<&Path> = args.files.iter().map(|p| p.as_path()).collect();
    let out = crate::output("--json", args.json.as_deref(), &inputs, true)?;
    let html = crate::output("--html", args.html.as_deref(), &inputs, false)?;
    let markdown = crate::output("--markdown", args.markdown.as_deref(), &inputs, true)?;
    if out.as_ref().is_some_and(Output::is_stdout)
        && markdown.as_ref().is_some_and(Output::is_stdout)
    {
        return Err(usage(
            "--json - and --markdown -: only one of them can have standard output",
        ));
    }
    // With --json - (or --markdown -), that owns standard output and the tables go to stderr.
    let to_stdout = !out.as_ref().is_some_and(Output::is_stdout)
        && !markdown.as_ref().is_some_and(Output::is_stdout);
    let say = |text: String| {
        if to_stdout {
            outln!("{text}");
        } else {
            eprintln!("{text}");
        }
    };
    let docs: Vec<Results> = args
        .files
        .iter()
        .map(|p| load(p))
        .collect::<Result<_, _>>()
        .map_err(usage)?;
    let base = &docs[0];
    let mut failed = false;
    // A gate on figures that are not the storage's gates nothing: each suspect document is
    // named with its reasons, and fails the gate unless --allow-suspect.
    for (path, doc) in args.files.iter().zip(&docs) {
        let v = stormark_report::verdict(doc);
        if v.suspect() {
            let fatal = gate.is_some() && !args.allow_suspect;
            say(format!(
                "{}: {}: {}{}",
                if fatal { "error" } else { "warning" },
                path.display(),
                v.line(),
                if fatal {
                    " (add --allow-suspect to gate on it anyway)"
                } else {
                    ""
                }
            ));
            failed |= fatal;
        }
    }
    let mut all = Vec::new();
    let mut pages: Vec<(usize, Vec<stormark_stats::CompareRow>, Vec<String>)> = Vec::new();
    for (k, (path, doc)) in args.files.iter().zip(&docs).enumerate().skip(1) {
        let rows = compare(base, doc, noise);
        say(format!("{} -> {}", args.files[0].display(), path.display()));
        let differ = differences(base, doc);
        for d in &differ {
            let fatal = gate.is_some() && !args.allow_different;
            say(format!(
                "  {}: {d}{}",
                if fatal { "error" } else { "warning" },
                if fatal {
                    " (add --allow-different if intended)"
                } else {
                    ""
                }
            ));
            failed |= fatal;
        }
        if rows.is_empty() {
            say("  no phase in common: nothing compared".into());
            failed |= gate.is_some();
            continue;
        }
        say(compare_table(&rows));
        let count = |v: Verdict| rows.iter().filter(|r| r.verdict == v).count();
        say(format!(
            "  {} worse, {} better, {} within noise ({noise}%) or inconclusive, {} the same",
            count(Verdict::Worse),
            count(Verdict::Better),
            count(Verdict::Noise) + count(Verdict::Inconclusive),
            count(Verdict::Same)
        ));
        if let Some(limit) = gate {
            let lines = gate_lines(&rows, limit);
            failed |= !lines.is_empty();
            for line in lines {
                say(line);
            }
        }
        all.push(serde_json::json!({
            "baseline": args.files[0].display().to_string(),
            "compared": path.display().to_string(),
            "rows": rows,
            "differences": differ,
        }));
        pages.push((k, rows, differ));
    }
    let labels: Vec<String> = args.files.iter().map(|p| p.display().to_string()).collect();
    let comparisons: Vec<Comparison<'_>> = pages
        .iter()
        .map(|(i, rows, differences)| Comparison {
            label: &labels[*i],
            doc: &docs[*i],
            rows,
            differences,
        })
        .collect();
    if let (Some(out), Some(path)) = (&html, &args.html) {
        out.write(compare_page(&labels[0], base, &comparisons).as_bytes())
            .map_err(|e| anyhow::anyhow!("--html {}: cannot write it: {e}", path.display()))?;
    }
    if let (Some(out), Some(path)) = (&markdown, &args.markdown) {
        out.write(compare_markdown(&labels[0], &comparisons).as_bytes())
            .map_err(|e| anyhow::anyhow!("--markdown {}: cannot write it: {e}", path.display()))?;
    }
    if let (Some(out), Some(path)) = (&out, &args.json) {
        let text = serde_json::to_string_pretty(&all).expect("rows serialize");
        out.write((text + "\n").as_bytes())
            .map_err(|e| anyhow::anyhow!("--json {}: cannot write it: {e}", path.display()))?;
    }
    Ok(if failed {
        Ending::Failed
    } else {
        Ending::Success
    })
}

/// `--fail-if-worse LIMIT`: a line for each figure that is, or may be, worse than `limit`%
/// (a non-inferiority test at 95% passes only what the data rule out), with how much more
/// measuring would decide an inconclusive one.
fn gate_lines(rows: &[stormark_stats::CompareRow], limit: f64) -> Vec<String> {
    let mut out = Vec::new();
    let calls = stormark_stats::gate(rows, limit);
    for (r, call) in &calls {
        let what = format!(
            "{} {} {} {:+.1}% (limit {limit}%)",
            r.phase,
            r.op,
            figure_label(&r.figure),
            r.delta_pct
        );
        out.push(match call {
            GateCall::Regression => format!("  regression: {what}"),
            GateCall::Inconclusive { runs } => format!(
                "  inconclusive: {what}: the data cannot rule out worse than {limit}%{}",
                match (runs, r.basis.as_str()) {
                    (Some(n), "repetitions") => format!("; about {n} repetitions a side (--repeat {n}) would decide it"),
                    (Some(n), _) => format!("; about {n} s of measured time a side (--time, or --repeat) would decide it"),
                    (None, _) => "; repeat both runs (--repeat 5) to decide it".to_string(),
                }
            ),
            GateCall::Pass => continue,
        });
    }
    out
}
