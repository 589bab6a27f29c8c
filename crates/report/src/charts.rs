//! Charts as inline SVG (plotters' SVG backend): lines over a linear or logarithmic x axis, and
//! bars. Long series are decimated for drawing only; tables keep every figure.

use plotters::prelude::*;

/// Width and height of every chart, px.
const SIZE: (u32, u32) = (760, 300);
/// The most points a line is drawn with; longer series are averaged in buckets.
pub const MAX_POINTS: usize = 800;

/// Colours of successive series (readable on white, distinct in print).
const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(127, 127, 127),
];

/// One line: its name, and its points (several runs of points draw several segments, as the
/// phases of a run separated by gaps).
pub struct Series {
    /// The legend's name.
    pub name: String,
    /// Segments of (x, y).
    pub segments: Vec<Vec<(f64, f64)>>,
}

/// What a chart shows.
pub struct LineChart<'a> {
    /// The caption.
    pub title: &'a str,
    /// The x axis' name.
    pub x_desc: &'a str,
    /// The y axis' name.
    pub y_desc: &'a str,
    /// The lines.
    pub series: Vec<Series>,
    /// How y values read (`1.2 ms`, `40k`).
    pub y_fmt: &'a dyn Fn(f64) -> String,
    /// How x values read.
    pub x_fmt: &'a dyn Fn(f64) -> String,
    /// A logarithmic x axis (percentile plots).
    pub log_x: bool,
    /// A horizontal line (a latency target) and its label.
    pub hline: Option<(f64, String)>,
    /// Draw each point as a dot too (few points: search steps, sweep points).
    pub dots: bool,
    /// Points to ring: (x, y, worse), red when worse, green when better.
    pub marks: Vec<(f64, f64, bool)>,
    /// Vertical spreads (x, low, high): the range of repetitions.
    pub whiskers: Vec<(f64, f64, f64)>,
}

/// Averages `points` into at most [`MAX_POINTS`] buckets (x and y both averaged).
pub fn decimate(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    if points.len() <= MAX_POINTS {
        return points.to_vec();
    }
    let per = points.len().div_ceil(MAX_POINTS);
    points
        .chunks(per)
        .map(|c| {
            let n = c.len() as f64;
            (
                c.iter().map(|p| p.0).sum::<f64>() / n,
                c.iter().map(|p| p.1).sum::<f64>() / n,
            )
        })
        .collect()
}

fn bounds(
    series: &[Series],
    hline: Option<f64>,
    whiskers: &[(f64, f64, f64)],
) -> Option<(f64, f64, f64)> {
    let pts = series.iter().flat_map(|s| s.segments.iter().flatten());
    let (mut x0, mut x1, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, 0f64);
    let mut any = false;
    for &(x, y) in pts {
        if x.is_finite() && y.is_finite() {
            any = true;
            x0 = x0.min(x);
            x1 = x1.max(x);
            y1 = y1.max(y);
        }
    }
    if let Some(h) = hline {
        y1 = y1.max(h);
    }
    for w in whiskers {
        y1 = y1.max(w.2);
    }
    if !any {
        return None;
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    Some((x0, x1, if y1 > 0.0 { y1 * 1.08 } else { 1.0 }))
}

/// The smallest positive y of the lines, if any.
fn lowest(series: &[Series]) -> Option<f64> {
    series
        .iter()
        .flat_map(|s| s.segments.iter().flatten())
        .map(|p| p.1)
        .filter(|y| y.is_finite() && *y > 0.0)
        .min_by(f64::total_cmp)
}

/// Whether a chart's y axis is logarithmic: when its horizontal line (a latency target) lies
/// more than ten times above every point, a linear axis would flatten the points against zero
/// (a 1 ms target over microsecond steps).
fn log_y(c: &LineChart<'_>) -> Option<f64> {
    let (target, _) = c.hline.as_ref()?;
    let top = c
        .series
        .iter()
        .flat_map(|s| s.segments.iter().flatten())
        .map(|p| p.1)
        .fold(0f64, f64::max);
    let low = lowest(&c.series)?;
    (*target > 10.0 * top).then_some(low / 1.5)
}

/// A tick label of an axis of whole numbers (seconds, a sweep's values): whole ones as such, a
/// tick between them with its tenth (rounding every tick to a whole one repeated labels:
/// "0 1 2 2 3 4 4").
pub fn tick_label(v: f64) -> String {
    if (v - v.round()).abs() < 1e-6 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// The chart as an `<svg>` element; `None` when it has nothing to draw.
pub fn line_chart(c: &LineChart<'_>) -> Option<String> {
    let (x0, x1, y1) = bounds(&c.series, c.hline.as_ref().map(|h| h.0), &c.whiskers)?;
    let y_log = log_y(c);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).ok()?;
        let mut builder = ChartBuilder::on(&root);
        builder
            .caption(c.title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(72);
        match (c.log_x, y_log) {
            (true, None) => {
                let chart = builder
                    .build_cartesian_2d((x0.max(1e-9)..x1).log_scale(), 0f64..y1)
                    .ok()?;
                axes_and_lines(chart, c, x0, x1)?;
            }
            (false, None) => {
                let chart = builder.build_cartesian_2d(x0..x1, 0f64..y1).ok()?;
                axes_and_lines(chart, c, x0, x1)?;
            }
            (true, Some(y0)) => {
                let chart = builder
                    .build_cartesian_2d((x0.max(1e-9)..x1).log_scale(), (y0..y1).log_scale())
                    .ok()?;
                axes_and_lines(chart, c, x0, x1)?;
            }
            (false, Some(y0)) => {
                let chart = builder
                    .build_cartesian_2d(x0..x1, (y0..y1).log_scale())
                    .ok()?;
                axes_and_lines(chart, c, x0, x1)?;
            }
        }
        root.present().ok()?;
    }
    Some(svg)
}

/// The axes, grid and lines of a chart whose axes are linear or logarithmic.
fn axes_and_lines<'a, X, Y>(
    mut chart: ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    c: &LineChart<'_>,
    x0: f64,
    x1: f64,
) -> Option<()>
where
    X: Ranged<ValueType = f64> + plotters::coord::ranged1d::ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + plotters::coord::ranged1d::ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .x_desc(c.x_desc)
        .y_desc(c.y_desc)
        .x_label_formatter(&|v| (c.x_fmt)(*v))
        .y_label_formatter(&|v| (c.y_fmt)(*v))
        .bold_line_style(RGBColor(222, 226, 230))
        .light_line_style(RGBColor(246, 247, 248))
        .max_light_lines(2)
        .draw()
        .ok()?;
    draw_lines(&mut chart, c, x0, x1)
}

fn draw_lines<'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    c: &LineChart<'_>,
    x0: f64,
    x1: f64,
) -> Option<()>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    if let Some((y, label)) = &c.hline {
        let red = RGBColor(200, 0, 0);
        chart
            .draw_series(LineSeries::new(
                vec![(x0, *y), (x1, *y)],
                red.stroke_width(1),
            ))
            .ok()?
            .label(label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], red));
    }
    for (i, s) in c.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let mut first = true;
        for seg in &s.segments {
            let pts = decimate(seg);
            let drawn = chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                .ok()?;
            if first {
                drawn.label(s.name.clone()).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                });
                first = false;
            }
            if c.dots {
                chart
                    .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
                    .ok()?;
            }
        }
    }
    for &(x, lo, hi) in &c.whiskers {
        chart
            .draw_series(LineSeries::new(
                vec![(x, lo), (x, hi)],
                BLACK.mix(0.5).stroke_width(1),
            ))
            .ok()?;
    }
    for &(x, y, worse) in &c.marks {
        let color = if worse {
            RGBColor(200, 0, 0)
        } else {
            RGBColor(0, 150, 60)
        };
        chart
            .draw_series(std::iter::once(Circle::new(
                (x, y),
                7,
                color.stroke_width(3),
            )))
            .ok()?;
    }
    chart
        .configure_series_labels()
        .position(if c.log_x {
            SeriesLabelPosition::UpperLeft
        } else {
            SeriesLabelPosition::UpperRight
        })
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(200, 200, 200))
        .label_font(("sans-serif", 12))
        .draw()
        .ok()
}

/// Horizontal bars, one per name, as an `<svg>` element.
pub fn bar_chart(
    title: &str,
    x_desc: &str,
    bars: &[(String, f64)],
    fmt: &dyn Fn(f64) -> String,
) -> Option<String> {
    if bars.is_empty() {
        return None;
    }
    let max = bars.iter().map(|b| b.1).fold(0f64, f64::max);
    let max = if max > 0.0 { max * 1.1 } else { 1.0 };
    let height = (60 + 28 * bars.len() as u32).max(140);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (SIZE.0, height)).into_drawing_area();
        root.fill(&WHITE).ok()?;
        let n = bars.len();
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(140)
            .build_cartesian_2d(0f64..max, 0f64..n as f64)
            .ok()?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .x_label_formatter(&|v| fmt(*v))
            .y_labels(n)
            .y_label_formatter(&|v| {
                let i = v.floor() as usize;
                let centred = (v - v.floor() - 0.5).abs() < 1e-6;
                match bars.get(n.wrapping_sub(1).wrapping_sub(i)) {
                    Some(b) if centred => b.0.clone(),
                    _ => String::new(),
                }
            })
            .disable_y_mesh()
            .bold_line_style(RGBColor(222, 226, 230))
            .light_line_style(RGBColor(246, 247, 248))
            .max_light_lines(2)
            .draw()
            .ok()?;
        let color = PALETTE[0];
        chart
            .draw_series(bars.iter().enumerate().map(|(i, (_, v))| {
                let row = (n - 1 - i) as f64;
                Rectangle::new([(0.0, row + 0.2), (*v, row + 0.8)], color.filled())
            }))
            .ok()?;
        root.present().ok()?;
    }
    Some(svg)
}

#[cfg(test)]
mod tests {
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
            hline: None,
            dots: false,
            marks: Vec::new(),
            whiskers: Vec::new(),
        });
        assert!(empty.is_none());
    }
}

#[cfg(test)]
mod tick_tests {
    #[test]
    fn ticks_between_whole_seconds_keep_their_tenth() {
        let labels: Vec<String> = [0.0, 0.6, 1.2, 1.8, 2.4, 3.0]
            .into_iter()
            .map(super::tick_label)
            .collect();
        assert_eq!(labels, ["0", "0.6", "1.2", "1.8", "2.4", "3"]);
        let mut unique = labels.clone();
        unique.dedup();
        assert_eq!(unique.len(), labels.len());
    }
}

#[cfg(test)]
mod axis_tests {
    use super::*;

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
}
