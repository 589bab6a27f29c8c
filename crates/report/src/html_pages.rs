//! The pages over several documents: `stormark compare --html` (side by side with verdicts)
//! and the trend of `stormark report A.json B.json ... --html`.

use std::fmt::Write as _;

use stormark_stats::Results;

use crate::charts::{line_chart, LineChart, Scale, Series};
use crate::format_latency;
use crate::html_parts::{by_bytes, esc, figure, rate_fmt, status_name, STYLE};
use crate::html_views::{percentile_chart, percentile_series};

/// One comparison of `stormark compare`: the baseline against one document.
pub struct Comparison<'a> {
    /// The compared document's label (its path as given).
    pub label: &'a str,
    /// The compared document.
    pub doc: &'a Results,
    /// Each figure against the baseline's.
    pub rows: &'a [stormark_stats::CompareRow],
    /// Why the two may not measure the same thing.
    pub differences: &'a [String],
}

/// The page of `stormark compare --html`: the documents, then for each one compared with the
/// baseline its differences, the table of figures with deltas and verdicts, and the latency
/// distributions of the phase they share, drawn over each other.
pub fn compare_page(base_label: &str, base: &Results, others: &[Comparison<'_>]) -> String {
    use stormark_stats::Verdict;
    let mut o = String::with_capacity(128 << 10);
    let _ = write!(
        o,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>stormark comparison</title><style>{STYLE}\
         td.worse {{ color: #a4161a; font-weight: 600; }} td.better {{ color: #1b6e2a; font-weight: 600; }}\
         </style></head><body><main>\n<header id=\"top\"><h1>stormark comparison</h1>\
         <p class=\"meta\">each document against the baseline (A): a figure is better or worse only \
         when the difference is beyond the noise threshold and significant</p></header>\n"
    );
    o.push_str(
        "<section id=\"documents\"><h2>Documents</h2><table><thead><tr><th></th><th>file</th>\
                <th>started</th><th>status</th><th>command</th></tr></thead><tbody>",
    );
    let doc_row = |o: &mut String, tag: &str, label: &str, r: &Results| {
        let _ = write!(
            o,
            "<tr><td>{tag}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            esc(label),
            esc(&r.started_at),
            status_name(r.status),
            esc(&crate::shell_command(&r.command))
        );
    };
    doc_row(&mut o, "A", base_label, base);
    for (i, c) in others.iter().enumerate() {
        doc_row(
            &mut o,
            &((b'B' + i as u8) as char).to_string(),
            c.label,
            c.doc,
        );
    }
    o.push_str("</tbody></table></section>\n");
    for (i, c) in others.iter().enumerate() {
        let tag = (b'B' + i as u8) as char;
        let _ = write!(
            o,
            "<section id=\"compare-{}\"><h2>A against {tag} ({})</h2>",
            i + 1,
            esc(c.label)
        );
        for d in c.differences {
            let _ = write!(
                o,
                "<div class=\"finding warning\"><p><strong>not alike</strong>: {}</p></div>",
                esc(d)
            );
        }
        let count = |v: Verdict| c.rows.iter().filter(|r| r.verdict == v).count();
        let _ = write!(
            o,
            "<p>{} worse, {} better, {} within noise or inconclusive, {} the same.</p>",
            count(Verdict::Worse),
            count(Verdict::Better),
            count(Verdict::Noise) + count(Verdict::Inconclusive),
            count(Verdict::Same)
        );
        o.push_str(
            "<table><thead><tr><th>phase</th><th>op</th><th>figure</th><th class=\"n\">A</th>\
             <th class=\"n\">B</th><th class=\"n\">delta</th><th class=\"n\">p</th><th>verdict</th>\
             </tr></thead><tbody>",
        );
        for r in c.rows {
            let (class, word) = match r.verdict {
                Verdict::Same => ("", "same"),
                Verdict::Noise => ("", "noise"),
                Verdict::Inconclusive => ("", "inconclusive"),
                Verdict::Better => ("better", "better"),
                Verdict::Worse => ("worse", "worse"),
            };
            let _ = write!(
                o,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
                 <td class=\"n {class}\">{:+.1}%</td><td class=\"n\">{}</td><td class=\"{class}\">{word}</td></tr>",
                esc(&r.phase),
                esc(&r.op),
                esc(&crate::figure_label(&r.figure)),
                esc(&crate::format_figure(&r.figure, r.a)),
                esc(&crate::format_figure(&r.figure, r.b)),
                r.delta_pct,
                r.p_value.map_or_else(|| "-".into(), |p| format!("{p:.3}"))
            );
        }
        o.push_str("</tbody></table>");
        // The distributions of the first phase both measured, over each other.
        let shared = base.phases.iter().filter(|p| p.measured()).find_map(|pa| {
            Some((
                pa,
                c.doc
                    .phases
                    .iter()
                    .find(|pb| pb.measured() && pb.name == pa.name)?,
            ))
        });
        if let Some((pa, pb)) = shared {
            let mut series = percentile_series(pa, "A ");
            series.extend(percentile_series(pb, &format!("{tag} ")));
            figure(
                &mut o,
                "compare-distribution",
                percentile_chart(&format!("Latency by percentile, phase {}", pa.name), series),
                "Each operation's latency distribution in both documents: a line above the \
                 other is slower at that percentile.",
            );
        }
        o.push_str("</section>\n");
    }
    let _ = write!(
        o,
        "<footer>Written by stormark {}. This page fetches nothing: its charts are inline SVG.\
         </footer>\n</main></body></html>\n",
        esc(&base.tool.version)
    );
    o
}

/// The page of `stormark report A.json B.json ... --html`: each figure over the documents in
/// the order given (a CI history), with the spread of repetitions where a document has them,
/// and the changes `stormark compare` calls significant (against the document before) ringed:
/// red worse, green better.
pub fn trend_page(docs: &[(String, Results)], noise_pct: f64) -> String {
    use stormark_stats::higher_is_better;
    let mut o = String::with_capacity(128 << 10);
    let _ = write!(
        o,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>stormark trend</title><style>{STYLE}</style></head><body><main>\n\
         <header id=\"top\"><h1>stormark trend</h1><p class=\"meta\">{} documents in the order \
         given; a ring marks a change that is beyond {noise_pct}% and significant against the \
         document before it (red worse, green better); a vertical line spans a document's \
         repetitions</p></header>\n",
        docs.len()
    );
    documents_table(&mut o, docs);
    let changes = significant_changes(docs, noise_pct);
    // The phases, in the order the documents first measured them.
    let mut phases: Vec<String> = Vec::new();
    for (_, r) in docs {
        for p in r.phases.iter().filter(|p| p.measured()) {
            if !phases.contains(&p.name) {
                phases.push(p.name.clone());
            }
        }
    }
    let bytes = docs.iter().any(|(_, r)| by_bytes(r));
    let throughput = if bytes { "bw_bytes_per_s" } else { "iops" };
    o.push_str("<section id=\"trend\"><h2>Figures over the documents</h2>");
    for phase in &phases {
        // Each operation, and their total when there are several.
        let mut ops: std::collections::BTreeSet<String> = docs
            .iter()
            .flat_map(|(_, r)| r.phases.iter().filter(|p| &p.name == phase))
            .flat_map(|p| p.by_op.keys().cloned())
            .collect();
        if ops.len() > 1 {
            ops.insert("total".to_string());
        }
        for figure_name in [throughput, "p99_ns"] {
            let (series, marks, whiskers) = trend_series(docs, phase, &ops, figure_name, &changes);
            let latency = !higher_is_better(figure_name);
            let title = format!(
                "phase {phase}: {}",
                if latency {
                    "p99 latency"
                } else if bytes {
                    "bandwidth"
                } else {
                    "IOPS"
                }
            );
            figure(
                &mut o,
                &format!("trend-{}", if latency { "p99" } else { "throughput" }),
                line_chart(&LineChart {
                    title: &title,
                    x_desc: "document",
                    y_desc: if latency {
                        "p99"
                    } else if bytes {
                        "bandwidth"
                    } else {
                        "IOPS"
                    },
                    series,
                    y_fmt: if latency {
                        &|v| format_latency(v as u64)
                    } else {
                        rate_fmt(bytes)
                    },
                    x_fmt: &|v| {
                        if (v - v.round()).abs() < 1e-9 {
                            format!("{v:.0}")
                        } else {
                            String::new()
                        }
                    },
                    log_x: false,
                    x_ticks: Some((1..=docs.len()).map(|i| i as f64).collect()),
                    y_scale: if latency { Scale::Auto } else { Scale::Linear },
                    y_bytes: bytes && !latency,
                    hline: None,
                    dots: true,
                    marks,
                    whiskers,
                }),
                &format!("{title}, document by document."),
            );
        }
    }
    o.push_str("</section>\n");
    let _ = write!(
        o,
        "<footer>Written by stormark. This page fetches nothing: its charts are inline SVG.\
         </footer>\n</main></body></html>\n"
    );
    o
}

/// Significant changes against the document before: (document, phase, operation, figure) to
/// whether it is worse.
type Changes = std::collections::BTreeMap<(usize, String, String, String), bool>;

/// A figure's points over the documents: its series, its rings (x, y, worse) and whiskers
/// (x, min, max).
type Trend = (Vec<Series>, Vec<(f64, f64, bool)>, Vec<(f64, f64, f64)>);

/// The documents, one row each.
fn documents_table(o: &mut String, docs: &[(String, Results)]) {
    o.push_str(
        "<section id=\"documents\"><h2>Documents</h2><table><thead><tr><th class=\"n\">#</th>\
         <th>file</th><th>started</th><th>version</th><th>status</th></tr></thead><tbody>",
    );
    for (i, (label, r)) in docs.iter().enumerate() {
        let _ = write!(
            o,
            "<tr><td class=\"n\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            i + 1,
            esc(label),
            esc(&r.started_at),
            esc(&r.tool.version),
            status_name(r.status)
        );
    }
    o.push_str("</tbody></table></section>\n");
}

/// Each document's significant changes against the one before it.
fn significant_changes(docs: &[(String, Results)], noise_pct: f64) -> Changes {
    use stormark_stats::{compare, Verdict};
    let mut changes: Changes = Default::default();
    for i in 1..docs.len() {
        for row in compare(&docs[i - 1].1, &docs[i].1, noise_pct) {
            let worse = match row.verdict {
                Verdict::Worse => true,
                Verdict::Better => false,
                _ => continue,
            };
            changes.insert((i, row.phase, row.op, row.figure), worse);
        }
    }
    changes
}

/// One figure of `phase` over the documents: a series per operation (the mean over
/// repetitions, with their range as whiskers) and a ring at each significant change.
fn trend_series(
    docs: &[(String, Results)],
    phase: &str,
    ops: &std::collections::BTreeSet<String>,
    figure_name: &str,
    changes: &Changes,
) -> Trend {
    let mut series = Vec::new();
    let mut marks = Vec::new();
    let mut whiskers = Vec::new();
    for op in ops {
        let mut pts = Vec::new();
        for (i, (_, r)) in docs.iter().enumerate() {
            let Some(p) = r.phases.iter().find(|p| p.name == phase && p.measured()) else {
                continue;
            };
            let s = if op == "total" {
                Some(&p.total)
            } else {
                p.by_op.get(op)
            };
            // Over repetitions: their mean, and their range.
            let rep = r
                .repetitions
                .iter()
                .find(|s| s.phase == phase && &s.op == op && s.figure == figure_name);
            let y = match (rep, s.and_then(|s| stormark_stats::figure(s, figure_name))) {
                (Some(rep), _) => {
                    whiskers.push(((i + 1) as f64, rep.stats.min, rep.stats.max));
                    rep.stats.mean
                }
                (None, Some(v)) => v,
                (None, None) => continue,
            };
            let x = (i + 1) as f64;
            pts.push((x, y));
            let key = (i, phase.to_string(), op.clone(), figure_name.to_string());
            if let Some(&worse) = changes.get(&key) {
                marks.push((x, y, worse));
            }
        }
        if !pts.is_empty() {
            series.push(Series {
                name: op.clone(),
                segments: vec![pts],
            });
        }
    }
    (series, marks, whiskers)
}
