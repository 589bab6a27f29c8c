//! `stormark report`: a results document again, as the terminal summary, Markdown or CSV.

use std::path::Path;

use anyhow::{Context, Result};
use stormark_report::{csv_files, Html, Markdown, Output, Render, Terminal};

use crate::cli::ReportArgs;
use crate::{usage, Ending};

pub fn main(args: &ReportArgs) -> Result<Ending> {
    let input: &Path = &args.file;
    // Every output checked before anything is written: never the input itself.
    let html = match &args.html {
        Some(p) => Some(Output::check("--html", p, &[input]).map_err(|e| usage(e.to_string()))?),
        None => None,
    };
    let markdown = match &args.markdown {
        Some(p) => {
            Some(Output::check("--markdown", p, &[input]).map_err(|e| usage(e.to_string()))?)
        }
        None => None,
    };
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
        for (file, out) in csv_files(&results).iter().zip(outputs) {
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
/// [`csv_files`] may write, in its order.
fn csv_outputs(dir: &Path, input: &Path) -> Result<Vec<Output>> {
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
    ["summary.csv", "intervals.csv", "mesh.csv"]
        .iter()
        .map(|name| {
            Output::check("--csv", &dir.join(name), &[input]).map_err(|e| usage(e.to_string()))
        })
        .collect()
}
