//! Charts as inline SVG: plotters' SVG backend draws the frame (axes, grid, ticks at round
//! numbers or decades, their labels), and the data is drawn over it as plain SVG at the
//! coordinates plotters maps it to: each line with its own colour and dash (a 50/50 run's read
//! line shows through the gaps of the write line over it), the legend in a column of its own
//! right of the plot area, never over the data. The plot area (`rect.plot-area`), each line
//! (`polyline.series`) and the legend (`g.legend`) are marked so that a browser can measure
//! them (tests/report.rs). Long series are decimated for drawing only; tables keep every
//! figure.

use std::fmt::Write as _;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged, ValueFormatter};
use plotters::prelude::*;

use crate::html_parts::esc;

mod ticks;

pub use ticks::size_label;
pub(crate) use ticks::tidy;

/// Width and least height of every chart, px.
const SIZE: (u32, u32) = (760, 300);
/// The most points a line is drawn with; longer series are averaged in buckets.
pub const MAX_POINTS: usize = 800;
/// Height of one legend entry, px.
const ENTRY: u32 = 18;

/// Colours of successive series (readable on white, distinct in print).
const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(127, 127, 127),
];

/// Dash patterns of successive series (the first solid): lines that coincide stay told apart.
const DASHES: [&str; 6] = ["", "8 4", "2 3", "12 3 2 3", "4 4", "1 2"];

/// One line: its name, and its points (several runs of points draw several segments, as the
/// phases of a run separated by gaps).
pub struct Series {
    /// The legend's name.
    pub name: String,
    /// Segments of (x, y).
    pub segments: Vec<Vec<(f64, f64)>>,
}

/// How an axis maps values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Linear from 0, ticks at round numbers.
    Linear,
    /// Logarithmic, ticks at decades.
    Log,
    /// Logarithmic when the values (and a horizontal line) span more than a decade, so that
    /// one outlier or a far target does not flatten the rest against zero; else linear.
    Auto,
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
    /// A logarithmic x axis (percentile plots, sweeps over sizes).
    pub log_x: bool,
    /// The x axis' ticks, when the chart knows them (a sweep's values, percentiles); else
    /// round numbers or decades.
    pub x_ticks: Option<Vec<f64>>,
    /// How the y axis maps values.
    pub y_scale: Scale,
    /// The y values are bytes (per second): linear ticks at round MiB, not round bytes.
    pub y_bytes: bool,
    /// A horizontal line (a latency target) and its label.
    pub hline: Option<(f64, String)>,
    /// Draw each point as a marker too (few points: search steps, sweep points).
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

/// The ranges of a chart's values: x from, x to, the least positive y, the greatest y.
struct Bounds {
    x0: f64,
    x1: f64,
    y_low: f64,
    y_high: f64,
}

fn bounds(c: &LineChart<'_>) -> Option<Bounds> {
    let pts = c
        .series
        .iter()
        .flat_map(|s| s.segments.iter().flatten())
        .filter(|p| p.0.is_finite() && p.1.is_finite());
    let mut b = Bounds {
        x0: f64::INFINITY,
        x1: f64::NEG_INFINITY,
        y_low: f64::INFINITY,
        y_high: 0.0,
    };
    let mut any = false;
    for &(x, y) in pts {
        any = true;
        b.x0 = b.x0.min(x);
        b.x1 = b.x1.max(x);
        b.y_high = b.y_high.max(y);
        if y > 0.0 {
            b.y_low = b.y_low.min(y);
        }
    }
    if !any {
        return None;
    }
    let extra = c
        .hline
        .iter()
        .map(|h| h.0)
        .chain(c.whiskers.iter().map(|w| w.2));
    for y in extra.filter(|y| y.is_finite() && *y > 0.0) {
        b.y_high = b.y_high.max(y);
        b.y_low = b.y_low.min(y);
    }
    if b.x1 <= b.x0 {
        b.x1 = b.x0 + 1.0;
    }
    Some(b)
}

/// Whether the y axis is logarithmic: asked for, or [`Scale::Auto`] over values that span
/// more than a decade (a 1 ms target over microsecond steps, one 770 ms outlier).
fn y_is_log(c: &LineChart<'_>, b: &Bounds) -> bool {
    let spans = b.y_low.is_finite() && b.y_high > 10.0 * b.y_low;
    match c.y_scale {
        Scale::Linear => false,
        Scale::Log => b.y_low.is_finite() && b.y_high > b.y_low,
        Scale::Auto => spans,
    }
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

/// An axis with the ticks chosen here (plotters' own choose round numbers of the raw unit:
/// 95.4 MiB/s), linear or logarithmic; its labels come from the chart's formatter.
struct Ticked {
    lo: f64,
    hi: f64,
    log: bool,
    ticks: Vec<f64>,
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let share = if self.log {
            (v.max(f64::MIN_POSITIVE).ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        // Far outside the axis (never drawn) still maps to a pixel, not an overflow.
        let share = if share.is_finite() {
            share.clamp(-4.0, 5.0)
        } else {
            0.0
        };
        (f64::from(limit.0) + share * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

fn x_axis(c: &LineChart<'_>, b: &Bounds) -> Ticked {
    if c.log_x && b.x0 > 0.0 {
        let (lo, hi) = (b.x0, b.x1);
        let ticks = c.x_ticks.clone().unwrap_or_else(|| ticks::log(lo, hi));
        // A little room either side so that the first and last points are not on the frame.
        Ticked {
            lo: lo / 1.15,
            hi: hi * 1.15,
            log: true,
            ticks,
        }
    } else {
        let ticks = c
            .x_ticks
            .clone()
            .unwrap_or_else(|| ticks::linear(b.x0, b.x1, 1.0));
        Ticked {
            lo: b.x0,
            hi: b.x1,
            log: false,
            ticks,
        }
    }
}

fn y_axis(c: &LineChart<'_>, b: &Bounds) -> Ticked {
    if y_is_log(c, b) {
        let (lo, hi) = ticks::log_range(b.y_low, b.y_high);
        Ticked {
            lo,
            hi,
            log: true,
            ticks: ticks::log(lo, hi),
        }
    } else {
        let top = if b.y_high > 0.0 { b.y_high * 1.08 } else { 1.0 };
        let unit = if !c.y_bytes {
            1.0
        } else if top >= 10.0 * f64::from(1u32 << 30) {
            f64::from(1u32 << 30)
        } else {
            f64::from(1u32 << 20)
        };
        Ticked {
            lo: 0.0,
            hi: top,
            log: false,
            ticks: ticks::linear(0.0, top, unit),
        }
    }
}

/// The chart as an `<svg>` element; `None` when it has nothing to draw.
pub fn line_chart(c: &LineChart<'_>) -> Option<String> {
    let b = bounds(c)?;
    let entries = legend_entries(c);
    let legend_w = legend_width(&entries);
    let height = SIZE.1.max(60 + ENTRY * entries.len() as u32);
    let (xa, ya) = (x_axis(c, &b), y_axis(c, &b));
    let y_log = ya.log;
    let mut svg = String::new();
    let overlay;
    {
        let root = SVGBackend::with_string(&mut svg, (SIZE.0, height)).into_drawing_area();
        root.fill(&WHITE).ok()?;
        let (plot, _) = root.split_horizontally(SIZE.0 - legend_w);
        let mut builder = ChartBuilder::on(&plot);
        builder
            .caption(c.title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(72);
        overlay = frame(builder.build_cartesian_2d(xa, ya).ok()?, c, y_log)?;
        root.present().ok()?;
    }
    let mut extra = overlay.svg;
    legend(
        &mut extra,
        &entries,
        c.dots,
        SIZE.0 - legend_w + 8,
        overlay.area.1,
    );
    let at = svg.rfind("</svg>")?;
    svg.insert_str(at, &extra);
    Some(svg)
}

/// What a chart's frame leaves to draw over it: the data as SVG, and the plot area (left,
/// top, right, bottom, px).
struct Overlay {
    svg: String,
    area: (i32, i32, i32, i32),
}

/// Draws the axes, grid and ticks of `chart`, then returns its data as SVG at the
/// coordinates the chart maps it to.
fn frame<'a, X, Y>(
    mut chart: ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    c: &LineChart<'_>,
    y_log: bool,
) -> Option<Overlay>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .x_desc(c.x_desc)
        .y_desc(c.y_desc)
        .x_label_formatter(&|v| tidy((c.x_fmt)(*v)))
        .y_label_formatter(&|v| tidy((c.y_fmt)(*v)))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 14))
        .bold_line_style(RGBColor(222, 226, 230))
        .light_line_style(RGBColor(246, 247, 248))
        .draw()
        .ok()?;
    let (xs, ys) = chart.plotting_area().get_pixel_range();
    let area = (xs.start, ys.start, xs.end, ys.end);
    let (xr, yr) = (chart.x_range(), chart.y_range());
    let inside = |&(x, y): &(f64, f64)| x.is_finite() && y.is_finite() && (!y_log || y > 0.0);
    let px = |p: (f64, f64)| {
        let y = if y_log { p.1.max(yr.start) } else { p.1 };
        chart.backend_coord(&(p.0, y))
    };
    let mut o = plot_area(area);
    if let Some((y, _)) = &c.hline {
        let (a, z) = (px((xr.start, *y)), px((xr.end, *y)));
        let _ = write!(
            o,
            "<line class=\"target\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#C80000\" stroke-width=\"1.5\"/>",
            a.0, a.1, z.0, z.1
        );
    }
    for (i, s) in c.series.iter().enumerate() {
        let (color, dash) = style(i);
        for seg in &s.segments {
            let pts: Vec<(i32, i32)> = decimate(seg).into_iter().filter(inside).map(px).collect();
            if pts.is_empty() {
                continue;
            }
            let _ = write!(
                o,
                "<polyline class=\"series\" data-series=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"{} points=\"",
                esc(&s.name),
                dash_attr(dash)
            );
            for (j, p) in pts.iter().enumerate() {
                let _ = write!(o, "{}{},{}", if j > 0 { " " } else { "" }, p.0, p.1);
            }
            o.push_str("\"/>");
            if c.dots {
                for p in &pts {
                    marker(&mut o, i, *p);
                }
            }
        }
    }
    for &(x, lo, hi) in &c.whiskers {
        let (a, z) = (px((x, lo)), px((x, hi)));
        let _ = write!(
            o,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#000\" stroke-opacity=\"0.5\"/>",
            a.0, a.1, z.0, z.1
        );
    }
    for &(x, y, worse) in &c.marks {
        let p = px((x, y));
        let color = if worse { "#C80000" } else { "#00963C" };
        let _ = write!(
            o,
            "<circle cx=\"{}\" cy=\"{}\" r=\"7\" fill=\"none\" stroke=\"{color}\" stroke-width=\"3\"/>",
            p.0, p.1
        );
    }
    Some(Overlay { svg: o, area })
}

/// The plot area (left, top, right, bottom), marked for whoever measures the chart.
fn plot_area((l, t, r, b): (i32, i32, i32, i32)) -> String {
    format!(
        "<rect class=\"plot-area\" x=\"{l}\" y=\"{t}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"none\"/>",
        r - l,
        b - t
    )
}

/// Series `i`'s colour and dash pattern.
fn style(i: usize) -> (String, &'static str) {
    let RGBColor(r, g, b) = PALETTE[i % PALETTE.len()];
    (format!("#{r:02X}{g:02X}{b:02X}"), DASHES[i % DASHES.len()])
}

fn dash_attr(dash: &str) -> String {
    if dash.is_empty() {
        String::new()
    } else {
        format!(" stroke-dasharray=\"{dash}\"")
    }
}

/// Series `i`'s marker at `p`: a circle, square, triangle or diamond, by series.
fn marker(o: &mut String, i: usize, (x, y): (i32, i32)) {
    let (color, _) = style(i);
    let _ = match i % 4 {
        0 => write!(
            o,
            "<circle cx=\"{x}\" cy=\"{y}\" r=\"3.5\" fill=\"{color}\"/>"
        ),
        1 => write!(
            o,
            "<rect x=\"{}\" y=\"{}\" width=\"7\" height=\"7\" fill=\"{color}\"/>",
            x - 3,
            y - 3
        ),
        2 => write!(
            o,
            "<polygon points=\"{x},{} {},{} {},{}\" fill=\"{color}\"/>",
            y - 5,
            x - 4,
            y + 3,
            x + 4,
            y + 3
        ),
        _ => write!(
            o,
            "<polygon points=\"{x},{} {},{y} {x},{} {},{y}\" fill=\"{color}\"/>",
            y - 5,
            x + 5,
            y + 5,
            x - 5
        ),
    };
}

/// A legend entry: its name, and its series' index (`None`: the target line).
type Entry = (String, Option<usize>);

fn legend_entries(c: &LineChart<'_>) -> Vec<Entry> {
    let mut e: Vec<Entry> = c
        .hline
        .iter()
        .map(|(_, label)| (label.clone(), None))
        .collect();
    e.extend(
        c.series
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.clone(), Some(i))),
    );
    e
}

/// The legend column's width: its longest name (at about 7 px a character) and a line's
/// sample; none when the legend would say nothing.
fn legend_width(entries: &[Entry]) -> u32 {
    if entries.is_empty() {
        return 0;
    }
    let longest = entries
        .iter()
        .map(|e| e.0.chars().count())
        .max()
        .unwrap_or(0);
    (44 + 7 * longest as u32).clamp(90, 260)
}

/// The legend, a column from `top` at `left`: each entry's line as drawn (colour, dash, and
/// marker with `dots`) and its name.
fn legend(o: &mut String, entries: &[Entry], dots: bool, left: u32, top: i32) {
    if entries.is_empty() {
        return;
    }
    let _ = write!(
        o,
        "<g class=\"legend\" font-family=\"sans-serif\" font-size=\"11.5\">"
    );
    for (k, (name, series)) in entries.iter().enumerate() {
        let y = top + 8 + (k as u32 * ENTRY) as i32;
        let (x0, x1) = (left as i32, left as i32 + 26);
        let (color, dash) = match series {
            Some(i) => style(*i),
            None => ("#C80000".to_string(), ""),
        };
        let _ = write!(
            o,
            "<line x1=\"{x0}\" y1=\"{y}\" x2=\"{x1}\" y2=\"{y}\" stroke=\"{color}\" stroke-width=\"2\"{}/>",
            dash_attr(dash)
        );
        if let (Some(i), true) = (series, dots) {
            marker(o, *i, (x0 + 13, y));
        }
        let _ = write!(
            o,
            "<text x=\"{}\" y=\"{}\" fill=\"#1d2329\">{}</text>",
            x1 + 6,
            y + 4,
            esc(name)
        );
    }
    o.push_str("</g>");
}

/// Horizontal bars, one per name, top to bottom in the order given, each named on the y
/// axis, as an `<svg>` element.
pub fn bar_chart(
    title: &str,
    x_desc: &str,
    bars: &[(String, f64)],
    fmt: &dyn Fn(f64) -> String,
    bytes: bool,
) -> Option<String> {
    if bars.is_empty() {
        return None;
    }
    let max = bars.iter().map(|b| b.1).fold(0f64, f64::max);
    let max = if max > 0.0 { max * 1.1 } else { 1.0 };
    let unit = if bytes { f64::from(1u32 << 20) } else { 1.0 };
    let n = bars.len();
    let height = (70 + 28 * n as u32).max(150);
    // The names' column: as wide as the longest name, within reason.
    let names_w = bars
        .iter()
        .map(|b| b.0.chars().count() as u32 * 7 + 16)
        .max()
        .unwrap_or(0)
        .clamp(60, 260);
    let mut svg = String::new();
    let area;
    {
        let root = SVGBackend::with_string(&mut svg, (SIZE.0, height)).into_drawing_area();
        root.fill(&WHITE).ok()?;
        // The rows' centres, which the names label.
        let rows: Vec<f64> = (0..n).map(|i| i as f64 + 0.5).collect();
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(names_w)
            .build_cartesian_2d(
                Ticked {
                    lo: 0.0,
                    hi: max,
                    log: false,
                    ticks: ticks::linear(0.0, max, unit),
                },
                Ticked {
                    lo: 0.0,
                    hi: n as f64,
                    log: false,
                    ticks: rows,
                },
            )
            .ok()?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .x_label_formatter(&|v| tidy(fmt(*v)))
            .y_label_formatter(&|v| {
                // Row r from the bottom is bar n-1-r.
                let r = (v - 0.5).round();
                (r >= 0.0)
                    .then(|| bars.get(n.wrapping_sub(1).wrapping_sub(r as usize)))
                    .flatten()
                    .map(|b| b.0.clone())
                    .unwrap_or_default()
            })
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 14))
            .disable_y_mesh()
            .bold_line_style(RGBColor(222, 226, 230))
            .light_line_style(RGBColor(246, 247, 248))
            .draw()
            .ok()?;
        let color = PALETTE[0];
        chart
            .draw_series(bars.iter().enumerate().map(|(i, (_, v))| {
                let row = (n - 1 - i) as f64;
                Rectangle::new([(0.0, row + 0.2), (*v, row + 0.8)], color.filled())
            }))
            .ok()?;
        area = chart.plotting_area().get_pixel_range();
        root.present().ok()?;
    }
    let at = svg.rfind("</svg>")?;
    svg.insert_str(
        at,
        &plot_area((area.0.start, area.1.start, area.0.end, area.1.end)),
    );
    Some(svg)
}

#[cfg(test)]
mod tests;
