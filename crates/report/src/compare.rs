//! The comparison table of `stormark compare`.

use comfy_table::{presets, CellAlignment, Table};
use stormark_stats::{CompareRow, Verdict};

use crate::format_figure;

/// A figure's name as the comparison shows it.
pub fn figure_label(figure: &str) -> String {
    match figure {
        "iops" => "IOPS".into(),
        "bw_bytes_per_s" => "bandwidth".into(),
        "mean_ns" => "mean latency".into(),
        "p999_ns" => "p99.9".into(),
        "p9999_ns" => "p99.99".into(),
        f => f.trim_end_matches("_ns").to_string(),
    }
}

fn verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Same => "same",
        Verdict::Noise => "noise",
        Verdict::Inconclusive => "inconclusive",
        Verdict::Better => "better",
        Verdict::Worse => "WORSE",
    }
}

/// The rows of one comparison as a table.
pub fn compare_table(rows: &[CompareRow]) -> String {
    let mut t = Table::new();
    t.load_preset(presets::UTF8_HORIZONTAL_ONLY);
    t.set_header(["phase", "op", "figure", "A", "B", "delta", "p", "verdict"]);
    for r in rows {
        t.add_row([
            r.phase.clone(),
            r.op.clone(),
            figure_label(&r.figure),
            format_figure(&r.figure, r.a),
            format_figure(&r.figure, r.b),
            format!("{:+.1}%", r.delta_pct),
            r.p_value.map_or_else(|| "-".into(), |p| format!("{p:.3}")),
            verdict(r.verdict).into(),
        ]);
    }
    for (i, col) in t.column_iter_mut().enumerate() {
        if (3..=6).contains(&i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    t.to_string()
}
