//! CSV for spreadsheets and pandas: `summary.csv` (a row per phase, host and operation),
//! `intervals.csv` (a row per second of each phase and operation), with `--repeat` or a sweep
//! `summary_table.csv` (IOR's summary of all tests: max, min, mean, sd per phase and
//! operation) and, for a network mesh,
//! `mesh.csv` (a row per pair). Figures are raw (ns, bytes, per second), never rounded for
//! reading; a missing figure is an empty cell.

use std::fmt::Write as _;

use stormark_stats::{Phase, Results, Summary};

/// One CSV file of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvFile {
    /// File name (`summary.csv`).
    pub name: &'static str,
    /// Its text, a header line first.
    pub text: String,
}

const FIGURES: &str = "ops,bytes,iops,bw_bytes_per_s,errors,lat_min_ns,lat_mean_ns,lat_p50_ns,lat_p90_ns,lat_p99_ns,lat_p999_ns,lat_max_ns";

/// The CSV files of `r`: summary and intervals always, mesh when the document has one.
pub fn csv_files(r: &Results) -> Vec<CsvFile> {
    let mut files = vec![
        CsvFile {
            name: "summary.csv",
            text: summary(r),
        },
        CsvFile {
            name: "intervals.csv",
            text: intervals(r),
        },
    ];
    // IOR's "Summary of all tests": with --repeat or a sweep.
    if let Some(text) = crate::alltests::csv(r) {
        files.push(CsvFile {
            name: "summary_table.csv",
            text,
        });
    }
    if r.mesh.is_some() {
        files.push(CsvFile {
            name: "mesh.csv",
            text: mesh(r),
        });
    }
    files
}

/// A field, quoted when it holds a comma, quote or line break (RFC 4180); a text that a
/// spreadsheet would take for a formula (starting with `=`, `+`, `-`, `@`, a tab or a
/// carriage return) is prefixed with `'`, as OWASP advises against CSV injection.
pub(crate) fn field(text: &str) -> String {
    let guarded;
    let text = if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        guarded = format!("'{text}");
        guarded.as_str()
    } else {
        text
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// A summary's figures, in [`FIGURES`]' order.
fn figures(s: &Summary) -> String {
    let lat = s.latency_ns.as_ref();
    let cell = |v: Option<String>| v.unwrap_or_default();
    format!(
        "{},{},{},{},{},{},{},{},{},{},{},{}",
        s.ops,
        s.bytes,
        s.iops,
        s.bw_bytes_per_s,
        s.errors,
        cell(lat.map(|l| l.min.to_string())),
        cell(lat.map(|l| l.mean.to_string())),
        cell(lat.map(|l| l.p50.to_string())),
        cell(lat.map(|l| l.p90.to_string())),
        cell(lat.map(|l| l.p99.to_string())),
        cell(lat.map(|l| l.p999.to_string())),
        cell(lat.map(|l| l.max.to_string())),
    )
}

/// What a phase was, as the document spells it (`run`, `search-step`, ...).
pub(crate) fn kind_name(p: &Phase) -> String {
    serde_json::to_value(p.kind())
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

fn phase_cells(p: &Phase) -> String {
    format!(
        "{},{},{}",
        field(&p.name),
        kind_name(p),
        p.repetition.map(|r| r.to_string()).unwrap_or_default()
    )
}

fn summary(r: &Results) -> String {
    let mut out = format!("phase,kind,repetition,duration_ns,host,op,{FIGURES}\n");
    for p in &r.phases {
        let head = phase_cells(p);
        let mut row = |host: &str, op: &str, s: &Summary| {
            let _ = writeln!(
                out,
                "{head},{},{},{},{}",
                p.duration_ns,
                field(host),
                field(op),
                figures(s)
            );
        };
        row("all", "all", &p.total);
        for (op, s) in &p.by_op {
            row("all", op, s);
        }
        if p.by_host.len() > 1 {
            for (host, b) in &p.by_host {
                row(host, "all", &b.total);
                for (op, s) in &b.by_op {
                    row(host, op, s);
                }
            }
        }
    }
    out
}

fn intervals(r: &Results) -> String {
    let mut out = format!("phase,kind,repetition,t_s,duration_ns,host,op,{FIGURES}\n");
    for p in &r.phases {
        let head = phase_cells(p);
        for i in &p.intervals {
            let _ = writeln!(
                out,
                "{head},{},{},all,all,{}",
                i.t_s,
                i.duration_ns,
                figures(&i.total)
            );
            for (op, s) in &i.by_op {
                let _ = writeln!(
                    out,
                    "{head},{},{},all,{},{}",
                    i.t_s,
                    i.duration_ns,
                    field(op),
                    figures(s)
                );
            }
        }
        // Each host's seconds (runs of several hosts): counts and rates; their latency is in
        // the histograms, per host over the phase.
        for (host, b) in &p.by_host {
            for s in &b.seconds {
                let secs = s.duration_ns as f64 / 1e9;
                for (op, c) in &s.by_op {
                    let _ = writeln!(
                        out,
                        "{head},{},{},{},{},{},{},{},{},{},,,,,,,",
                        s.t_s,
                        s.duration_ns,
                        field(host),
                        field(op),
                        c.ops,
                        c.bytes,
                        c.ops as f64 / secs,
                        c.bytes as f64 / secs,
                        c.errors
                    );
                }
            }
        }
    }
    out
}

fn mesh(r: &Results) -> String {
    let mut out = String::from(
        "matrix,from,to,from_host,to_host,bits_per_s,bytes,duration_ns,retransmits,failure\n",
    );
    let Some(m) = &r.mesh else { return out };
    let ip = |i: u32| m.hosts.get(i as usize).map_or("", |h| h.ip.as_str());
    for (matrix, pairs) in [("alone", &m.alone), ("loaded", &m.loaded)] {
        for p in pairs {
            let _ = writeln!(
                out,
                "{matrix},{},{},{},{},{},{},{},{},{}",
                field(ip(p.from)),
                field(ip(p.to)),
                field(
                    &m.hosts
                        .get(p.from as usize)
                        .map_or(String::new(), |h| h.host.clone())
                ),
                field(
                    &m.hosts
                        .get(p.to as usize)
                        .map_or(String::new(), |h| h.host.clone())
                ),
                p.bits_per_s,
                p.bytes,
                p.duration_ns,
                p.retransmits(),
                field(p.failure.as_deref().unwrap_or_default())
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_with_commas_quotes_or_lines_are_quoted() {
        assert_eq!(field("run"), "run");
        assert_eq!(field("sweep:bs=4k,iodepth=8"), "\"sweep:bs=4k,iodepth=8\"");
        assert_eq!(field("a \"b\""), "\"a \"\"b\"\"\"");
        assert_eq!(field("two\nlines"), "\"two\nlines\"");
        assert_eq!(field("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(field("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(field("-2+3"), "'-2+3");
    }
}
