//! `stormark report`: a results document again, as the terminal summary, Markdown or CSV.

use std::path::Path;

use anyhow::{Context, Result};
use stormark_report::{csv_files, trend_page, Html, Markdown, Output, Render, Terminal};

use crate::cli::ReportArgs;
use crate::{usage, Ending};

/// The noise threshold of a trend's significant changes, as `stormark compare`'s default.
const TREND_NOISE_PCT: f64 = 3.0;

pub fn main(args: &ReportArgs) -> Result<Ending> {
    if args.files.len() > 1 {
        return trend(args);
    }
    let input: &Path = &args.files[0];
    // Every output checked before anything is written: never the input itself.
    let html = crate::output("--html", args.html.as_deref(), &[input], true)?;
    let markdown = crate::output("--markdown", args.markdown.as_deref(), &[input], true)?;
    let csv = match &args.csv {
        Some(dir) => Some(csv_outputs(dir, input)?),
        None => None,
    };
    let results = crate::compare_cmd::load(input).map_err(usage)?;
    if let Some(out) = &html {
        out.write(Html.render(&results).as_bytes())
            .with_context(|| "writing the HTML")?;
    }
    if let Some(out) = &markdown {
        out.write(Markdown.render(&results).as_bytes())
            .with_context(|| "writing the Markdown")?;
    }
    if let Some(outputs) = &csv {
        for file in csv_files(&results) {
            let out = outputs
                .iter()
                .find(|(name, _)| *name == file.name)
                .map(|(_, out)| out)
                .expect("an output is checked for every file csv_files writes");
            out.write(file.text.as_bytes())
                .with_context(|| format!("writing {}", file.name))?;
        }
    }
    if html.is_none() && markdown.is_none() && csv.is_none() {
        outln!("{}", Terminal.render(&results));
    }
    Ok(Ending::Success)
}

/// The directory for CSV files (made when missing) and an output for each file name that
/// [`csv_files`] may write.
fn csv_outputs(dir: &Path, input: &Path) -> Result<Vec<(&'static str, Output)>> {
    let bad = |why: String| {
        usage(format!(
            "--csv {}: {why}; give a directory, such as csv/",
            dir.display()
        ))
    };
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(bad("is not a directory".into())),
        Err(_) => std::fs::create_dir(dir).map_err(|e| bad(format!("cannot make it ({e})")))?,
    }
    [
        "summary.csv",
        "intervals.csv",
        "summary_table.csv",
        "mesh.csv",
    ]
    .into_iter()
    .map(|name| {
        Output::check("--csv", &dir.join(name), &[input])
            .map(|out| (name, out))
            .map_err(|e| usage(e.to_string()))
    })
    .collect()
}

/// Several documents: the trend page (`--html` only).
fn trend(args: &ReportArgs) -> Result<Ending> {
    if args.markdown.is_some() || args.csv.is_some() {
        return Err(usage(
            "--markdown and --csv render one document; give one, or --html for a trend over several",
        ));
    }
    let inputs: Vec<&Path> = args.files.iter().map(|p| p.as_path()).collect();
    let out = match &args.html {
        Some(p) => Output::check("--html", p, &inputs).map_err(|e| usage(e.to_string()))?,
        None => {
            return Err(usage(
                "several documents make a trend: give --html FILE, such as trend.html",
            ))
        }
    };
    let docs = args
        .files
        .iter()
        .map(|p| Ok((p.display().to_string(), crate::compare_cmd::load(p)?)))
        .collect::<Result<Vec<_>, String>>()
        .map_err(usage)?;
    out.write(trend_page(&docs, TREND_NOISE_PCT).as_bytes())
        .with_context(|| "writing the HTML")?;
    Ok(Ending::Success)
}
