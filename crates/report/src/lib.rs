//! Renderers of a results document, one module per format behind one trait, and the live
//! progress line. `report` reads only [`stormark_stats::Results`]: it never measures.
//!
//! ```
//! use stormark_report::{Render, Terminal, format_latency};
//!
//! let results = stormark_stats::Results::new(vec!["stormark".into(), "run".into()]);
//! let text = Terminal.render(&results);
//! assert!(text.contains("status: ok"));
//! assert_eq!(format_latency(1_234_567), "1.23 ms");
//! ```
#![warn(missing_docs)]

mod alltests;
mod charts;
mod command;
mod compare;
mod csv;
mod fleet;
mod html;
mod html_pages;
mod html_parts;
mod html_views;
mod json;
mod live;
mod markdown;
mod metrics;
mod net;
mod output;
mod shapes;
mod suite;
mod terminal;

pub use command::shell_command;
pub use compare::{compare_table, figure_label};
pub use csv::{csv_files, CsvFile};
pub use html::Html;
pub use html_pages::{compare_page, trend_page, Comparison};
pub use json::Json;
pub use live::{LiveLine, Now};
pub use markdown::{compare_markdown, Markdown};
pub use metrics::LiveMetrics;
pub use net::path_mtu_line;
pub use output::{Output, OutputError};
pub use shapes::search_step_line;
pub use stormark_stats::{format_bw, format_figure, format_iops, format_latency};
pub use suite::{suite_html, suite_markdown, suite_step_line, suite_terminal};
pub use terminal::{
    findings_text, is_step, phase_table, step_line, summary_after_phases, target_line,
    targets_line, verdict, Terminal,
};

/// What `--verify` checked in a phase, in words: `2048 blocks (8 MiB) checked, 0 bad`, said
/// the same in every format.
/// A metadata phase's items per worker, as mdtest's stonewall line says them.
pub(crate) fn reached_words(r: &stormark_stats::Reached) -> String {
    format!(
        "{}items per worker: min {} max {} mean {:.1} ({} workers)",
        if r.cut { "cut by the time: " } else { "" },
        r.min,
        r.max,
        r.mean,
        r.by_worker.len()
    )
}

pub(crate) fn verified_words(v: &stormark_stats::Verified) -> String {
    let mut what = Vec::new();
    if v.blocks > 0 {
        what.push(format!("{} blocks", v.blocks));
    }
    if v.objects > 0 {
        what.push(format!("{} objects", v.objects));
    }
    format!(
        "{} ({}) checked, {} bad",
        what.join(" and "),
        charts::size_label(v.bytes),
        v.bad
    )
}

/// A format a results document can be written in.
pub trait Render {
    /// The whole document in this format.
    fn render(&self, results: &stormark_stats::Results) -> String;
}
