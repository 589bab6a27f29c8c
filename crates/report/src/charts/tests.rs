//! The charts' drawing: decimation, ticks, the first second at 0, the legend beside the plot.

use super::*;

#[test]
fn long_series_are_averaged_into_buckets_short_ones_kept() {
    let short: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, 1.0)).collect();
    assert_eq!(decimate(&short), short);
    let long: Vec<(f64, f64)> = (0..3600).map(|i| (i as f64, (i % 2) as f64)).collect();
    let d = decimate(&long);
    assert!(d.len() <= MAX_POINTS, "{}", d.len());
    // Averages keep the level: half ones, half zeros.
    assert!(d.iter().all(|p| (p.1 - 0.5).abs() < 0.2), "{:?}", &d[..4]);
}

#[test]
fn a_chart_is_an_svg_with_its_lines_and_nothing_without_data() {
    let svg = line_chart(&LineChart {
        title: "t",
        x_desc: "s",
        y_desc: "IOPS",
        series: vec![Series {
            name: "read".into(),
            segments: vec![vec![(0.0, 1.0), (1.0, 2.0), (2.0, 1.5)]],
        }],
        y_fmt: &|v| format!("{v:.0}"),
        x_fmt: &crate::charts::tick_label,
        log_x: false,
        x_ticks: None,
        y_scale: Scale::Linear,
        y_bytes: false,
        hline: None,
        dots: false,
        marks: Vec::new(),
        whiskers: Vec::new(),
    })
    .unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..40]);
    assert!(svg.contains("<polyline"), "no line drawn");
    let empty = line_chart(&LineChart {
        title: "t",
        x_desc: "s",
        y_desc: "IOPS",
        series: Vec::new(),
        y_fmt: &|v| format!("{v:.0}"),
        x_fmt: &crate::charts::tick_label,
        log_x: false,
        x_ticks: None,
        y_scale: Scale::Linear,
        y_bytes: false,
        hline: None,
        dots: false,
        marks: Vec::new(),
        whiskers: Vec::new(),
    });
    assert!(empty.is_none());
}

#[test]
fn ticks_between_whole_seconds_keep_their_tenth() {
    let labels: Vec<String> = [0.0, 0.6, 1.2, 1.8, 2.4, 3.0]
        .into_iter()
        .map(tick_label)
        .collect();
    assert_eq!(labels, ["0", "0.6", "1.2", "1.8", "2.4", "3"]);
    let mut unique = labels.clone();
    unique.dedup();
    assert_eq!(unique.len(), labels.len());
}

/// Issue 30: an over-time chart drew its first second left of the axis' 0. The line
/// starts where 0 is labelled, and no tick is left of it.
#[test]
fn the_first_second_starts_at_zero() {
    let svg = line_chart(&LineChart {
        title: "IOPS per second",
        x_desc: "seconds since the start",
        y_desc: "IOPS",
        series: vec![Series {
            name: "read".into(),
            segments: vec![vec![
                (0.0, 5.0),
                (1.0, 5.0),
                (1.0, 7.0),
                (2.0, 7.0),
                (2.0, 6.0),
                (3.0, 6.0),
            ]],
        }],
        y_fmt: &|v| format!("{v:.0}"),
        x_fmt: &crate::charts::tick_label,
        log_x: false,
        x_ticks: None,
        y_scale: Scale::Linear,
        y_bytes: false,
        hline: None,
        dots: false,
        marks: Vec::new(),
        whiskers: Vec::new(),
    })
    .unwrap();
    let attr = |tag: &str, name: &str| -> Vec<String> {
        svg.split(&format!("<{tag}"))
            .skip(1)
            .filter_map(|t| {
                let at = t.find(&format!("{name}=\""))? + name.len() + 2;
                Some(t[at..at + t[at..].find('"')?].to_string())
            })
            .collect()
    };
    // The data's line: the polyline through more than two x positions (the axes' ticks
    // are short lines).
    let line_x: Vec<f64> = attr("polyline", "points")
        .iter()
        .map(|p| {
            p.split_whitespace()
                .map(|xy| xy.split(',').next().unwrap().parse::<f64>().unwrap())
                .collect::<Vec<_>>()
        })
        .filter(|xs| {
            let mut d = xs.clone();
            d.sort_by(f64::total_cmp);
            d.dedup();
            d.len() > 2
        })
        .flatten()
        .collect();
    // The x tick labels: texts whose content is a number, below the plot.
    let labels: Vec<(f64, String)> = svg
        .split("<text")
        .skip(1)
        .filter_map(|t| {
            let at = t.find("x=\"")? + 3;
            let x: f64 = t[at..at + t[at..].find('"')?].parse().ok()?;
            let body = t[t.find('>')? + 1..t.find("</text>")?].trim().to_string();
            body.parse::<f64>().is_ok().then_some((x, body))
        })
        .collect();
    // The x axis' labels stand at x positions of their own (the y axis' share one).
    let labels: Vec<(f64, String)> = labels
        .iter()
        .filter(|(x, _)| labels.iter().filter(|(y, _)| y == x).count() == 1)
        .cloned()
        .collect();
    let zero = labels.iter().find(|(_, b)| b == "0").map(|(x, _)| *x);
    let min_x = line_x.iter().copied().fold(f64::INFINITY, f64::min);
    assert!(
        labels.iter().all(|(_, b)| !b.starts_with('-')),
        "{labels:?}"
    );
    let zero = zero.unwrap_or_else(|| panic!("no 0 on the x axis: {labels:?}"));
    assert!(
        (min_x - zero).abs() < 3.0,
        "the line starts at {min_x}, 0 is labelled at {zero}"
    );
    // Every x label once (no "0 1 2 2 3"), in order.
    let xs: Vec<f64> = labels.iter().map(|(_, b)| b.parse().unwrap()).collect();
    assert!(xs.windows(2).all(|w| w[0] < w[1]), "{labels:?}");
}

/// A chart of `series` with a latency axis that adapts (as the per-second latency chart's).
fn latency_chart(series: Vec<Series>) -> String {
    line_chart(&LineChart {
        title: "t",
        x_desc: "s",
        y_desc: "latency",
        series,
        y_fmt: &|v| crate::format_latency(v as u64),
        x_fmt: &tick_label,
        log_x: false,
        x_ticks: None,
        y_scale: Scale::Auto,
        y_bytes: false,
        hline: None,
        dots: false,
        marks: Vec::new(),
        whiskers: Vec::new(),
    })
    .unwrap()
}

/// The number after `name="` in `tag`.
fn num(tag: &str, name: &str) -> f64 {
    let at = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
    tag[at..at + tag[at..].find('"').unwrap()].parse().unwrap()
}

/// Issue 56: the legend stands right of the plot area, over none of it; two lines on the
/// same values are drawn with different dashes, so the one under shows.
#[test]
fn the_legend_is_beside_the_plot_and_coinciding_lines_differ() {
    let same = vec![(0.0, 1000.0), (1.0, 1000.0), (2.0, 1000.0)];
    let svg = latency_chart(vec![
        Series {
            name: "read".into(),
            segments: vec![same.clone()],
        },
        Series {
            name: "write".into(),
            segments: vec![same],
        },
    ]);
    let area = &svg[svg.find("<rect class=\"plot-area\"").unwrap()..];
    let right = num(area, "x") + num(area, "width");
    let legend = &svg[svg.find("<g class=\"legend\"").unwrap()..];
    let legend = &legend[..legend.find("</g>").unwrap()];
    for line in legend.split("<line").skip(1) {
        assert!(
            num(line, "x1") > right,
            "{line} over the plot ending at {right}"
        );
    }
    assert!(legend.contains(">read</text>") && legend.contains(">write</text>"));
    let dash = |name: &str| {
        let at = svg.find(&format!("data-series=\"{name}\"")).unwrap();
        let tag = &svg[at..at + svg[at..].find("/>").unwrap()];
        tag.split("stroke-dasharray=\"")
            .nth(1)
            .map(|d| d[..d.find('"').unwrap()].to_string())
    };
    assert_ne!(dash("read"), dash("write"));
}

/// Issue 56: latencies that span decades (one 770 ms outlier among 100 µs seconds) are drawn
/// on a logarithmic axis ticked by decades; within a decade the axis stays linear.
#[test]
fn latencies_over_decades_get_a_log_axis_ticked_by_decades() {
    let labels = |svg: &str| -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                let body = t[t.find('>')? + 1..t.find("</text>")?].trim().to_string();
                body.ends_with('s').then_some(body)
            })
            .collect()
    };
    let spread = latency_chart(vec![Series {
        name: "p99".into(),
        segments: vec![vec![(0.0, 100e3), (1.0, 770e6), (2.0, 120e3)]],
    }]);
    let l = labels(&spread);
    for want in ["100 µs", "1 ms", "10 ms", "100 ms", "1 s"] {
        assert!(l.iter().any(|x| x == want), "{want} not in {l:?}");
    }
    let close = latency_chart(vec![Series {
        name: "p99".into(),
        segments: vec![vec![(0.0, 100e3), (1.0, 300e3), (2.0, 120e3)]],
    }]);
    let l = labels(&close);
    assert!(
        l.iter().any(|x| x == "0 ns") && l.iter().any(|x| x == "100 µs"),
        "{l:?}"
    );
}

/// Issue 56: each bar is named on its axis, at a size a person reads.
#[test]
fn bars_are_named_on_their_axis() {
    let svg = bar_chart(
        "IOPS per host",
        "IOPS",
        &[("slow-host".into(), 500.0), ("fast-host".into(), 1000.0)],
        &|v| crate::format_iops(v),
        false,
    )
    .unwrap();
    // Each name's <text> tag: its y and font size.
    let tag = |name: &str| -> (f64, f64) {
        let t = svg
            .split("<text")
            .find(|t| {
                t.split_once('>')
                    .is_some_and(|(_, b)| b.trim().starts_with(name))
            })
            .unwrap_or_else(|| panic!("{name} is not named: {svg}"));
        (num(t, "y"), num(t, "font-size"))
    };
    let (slow, fast) = (tag("slow-host"), tag("fast-host"));
    assert!(slow.1 >= 11.0, "names {} px high", slow.1);
    assert!(slow.0 < fast.0, "the first bar is not on top");
    assert!(svg.contains("<rect class=\"plot-area\""));
}
