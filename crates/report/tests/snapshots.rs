//! The renderers on one fixed results document (`testkit::sample_results`): what a user sees
//! in the terminal, what scripts read in JSON and CSV, and the Markdown, pinned by insta
//! snapshots. A change to
//! either shows here as a diff to review (`cargo insta review`, or update the .snap files).

use stormark_report::{csv_files, Html, Json, Markdown, Render, Terminal};
use stormark_testkit::sample_results;

#[test]
fn terminal_of_the_sample() {
    insta::assert_snapshot!(Terminal.render(&sample_results()));
}

#[test]
fn json_of_the_sample() {
    let text = Json.render(&sample_results());
    let doc: serde_json::Value =
        serde_json::from_str(&text).expect("the JSON renderer writes JSON");
    // Histograms are base64 of HDR encodings: pinned by their decoded counts instead.
    let mut doc = doc;
    for p in doc["phases"].as_array_mut().unwrap() {
        let h = p["histograms"].as_object_mut().unwrap();
        for v in h.values_mut() {
            let decoded = stormark_stats::decode_histogram(v.as_str().unwrap()).unwrap();
            *v = serde_json::json!({ "count": decoded.len(), "max": decoded.max() });
        }
    }
    insta::assert_json_snapshot!(doc);
}

#[test]
fn markdown_of_the_sample() {
    insta::assert_snapshot!(Markdown.render(&sample_results()));
}

#[test]
fn csv_of_the_sample() {
    let files = csv_files(&sample_results());
    let names: Vec<&str> = files.iter().map(|f| f.name).collect();
    assert_eq!(names, ["summary.csv", "intervals.csv"]);
    for f in &files {
        // Every row has the header's number of fields (no field of the sample is quoted).
        let width = f.text.lines().next().unwrap().split(',').count();
        for line in f.text.lines() {
            assert_eq!(line.split(',').count(), width, "{}: {line}", f.name);
        }
        insta::assert_snapshot!(f.name, f.text);
    }
}

#[test]
fn the_sample_is_the_same_every_time() {
    assert_eq!(sample_results(), sample_results());
}

/// What an HTML page is made of: its sections, its charts and how many lines each draws.
fn html_outline(html: &str) -> String {
    let mut out = String::new();
    for part in html.split("<section id=\"").skip(1) {
        let id = part.split('"').next().unwrap();
        out.push_str(&format!("section {id}\n"));
        for fig in part.split("data-chart=\"").skip(1) {
            let name = fig.split('"').next().unwrap();
            let svg = fig.split("</figure>").next().unwrap();
            out.push_str(&format!(
                "  chart {name}: {} polyline, {} rect\n",
                svg.matches("<polyline").count(),
                svg.matches("<rect").count()
            ));
        }
    }
    out
}

#[test]
fn html_of_the_sample_is_self_contained_with_a_chart_per_view() {
    let html = Html.render(&sample_results());
    insta::assert_snapshot!(html_outline(&html));
    // Nothing is fetched: no script, style sheet, image, font or frame, and no URL but the
    // SVG namespace (a name, never loaded).
    for banned in [
        "<script", "<link", "<img", "<iframe", "src=", "href=", "url(", "@import",
    ] {
        assert!(!html.contains(banned), "the page holds {banned}");
    }
    let urls = html.matches("http://").count() + html.matches("https://").count();
    let namespaces = html.matches("http://www.w3.org/2000/svg").count();
    assert_eq!(urls, namespaces, "a URL other than the SVG namespace");
    assert!(html.starts_with("<!doctype html>"));
    assert!(html.trim_end().ends_with("</html>"));
}

/// A one-hour run of 16 hosts: 3,600 intervals, every host in the phase's rows.
fn an_hour_of_16_hosts() -> stormark_stats::Results {
    let mut r = sample_results();
    let p = &mut r.phases[0];
    let second = p.intervals[0].clone();
    p.intervals = (0..3600u32)
        .map(|t| {
            let mut i = second.clone();
            i.t_s = t;
            let wave = 1.0 + 0.3 * (f64::from(t) / 300.0).sin();
            for s in i.by_op.values_mut() {
                s.iops *= wave;
            }
            i.total.iops *= wave;
            i
        })
        .collect();
    p.duration_ns = 3600 * 1_000_000_000;
    let mut host = p.by_host.values().next().unwrap().clone();
    let second = host.seconds[0].clone();
    host.seconds = (0..3600u32)
        .map(|t| stormark_stats::HostSecond {
            t_s: t,
            ..second.clone()
        })
        .collect();
    p.by_host = (0..16)
        .map(|h| (format!("node{h:02}"), host.clone()))
        .collect();
    r
}

#[test]
fn an_hour_of_16_hosts_renders_to_a_page_of_a_few_hundred_kib() {
    let r = an_hour_of_16_hosts();
    let started = std::time::Instant::now();
    let html = Html.render(&r);
    // For docs/performance.md (never a threshold: machines are shared).
    eprintln!(
        "rendered 3600 intervals, 16 hosts in {:?}: {} KiB",
        started.elapsed(),
        html.len() >> 10
    );
    // Lines are decimated for drawing; the page stays small.
    assert!(html.len() < 4 << 20, "{} bytes", html.len());
    for chart in [
        "throughput",
        "throughput-per-host",
        "latency",
        "distribution",
        "hosts",
    ] {
        assert!(html.contains(&format!("data-chart=\"{chart}\"")), "{chart}");
    }
    // Every host is in the table, none decimated away.
    for h in 0..16 {
        assert!(html.contains(&format!("<td>node{h:02}</td>")), "node{h:02}");
    }
}

#[test]
fn a_trend_rings_the_significant_changes_and_spans_nothing_without_repetitions() {
    use stormark_report::trend_page;
    let a = sample_results();
    // B reads at half the rate, every second of it: significantly worse throughput.
    let mut b = sample_results();
    for p in &mut b.phases {
        for i in &mut p.intervals {
            if let Some(s) = i.by_op.get_mut("read") {
                s.iops /= 2.0;
                s.bw_bytes_per_s /= 2.0;
            }
        }
        if let Some(s) = p.by_op.get_mut("read") {
            s.iops /= 2.0;
            s.bw_bytes_per_s /= 2.0;
        }
    }
    let docs = vec![
        ("a.json".to_string(), a.clone()),
        ("b.json".to_string(), b),
        ("a2.json".to_string(), a),
    ];
    let html = trend_page(&docs, 3.0);
    assert_eq!(html.matches("data-chart=\"trend-throughput\"").count(), 1);
    assert_eq!(html.matches("data-chart=\"trend-p99\"").count(), 1);
    let throughput = html
        .split("data-chart=\"trend-throughput\"")
        .nth(1)
        .unwrap()
        .split("</figure>")
        .next()
        .unwrap();
    // Worse at b (red), better again at a2 (green).
    assert!(throughput.contains("#C80000"), "no red ring");
    assert!(throughput.contains("#00963C"), "no green ring");
    for banned in ["<script", "src=", "href="] {
        assert!(!html.contains(banned));
    }
}

/// Issue 56: a sweep over two keys names its lines by the second key's values in their order,
/// sizes in binary units (`size 64 MiB` before `size 256 MiB`, not `size=268435456` first
/// because "2" sorts before "6"), and labels the first key's values as sizes, by value.
#[test]
fn a_sweep_names_its_lines_by_value_in_binary_units() {
    use stormark_stats::{SweepPoint, SweepReport};
    let mut r = sample_results();
    let mut points = Vec::new();
    for size in [256u64 << 20, 64 << 20] {
        for bs in [65536u64, 4096, 16384] {
            points.push(SweepPoint {
                phase: format!("sweep:bs={bs},size={size}"),
                values: [("bs".to_string(), bs), ("size".to_string(), size)]
                    .into_iter()
                    .collect(),
                iops: 1000.0 + bs as f64 / 100.0,
                bw_bytes_per_s: 1e6,
                latency_ns: None,
                efficiency: None,
            });
        }
    }
    r.sweep = Some(SweepReport {
        keys: vec!["bs".into(), "size".into()],
        points,
        skipped: Vec::new(),
    });
    let html = Html.render(&r);
    let sweep = html
        .split("data-chart=\"sweep\"")
        .nth(1)
        .unwrap()
        .split("</figure>")
        .next()
        .unwrap();
    let small = sweep
        .find(">size 64 MiB<")
        .expect("size 64 MiB in the legend");
    let large = sweep
        .find(">size 256 MiB<")
        .expect("size 256 MiB in the legend");
    assert!(
        small < large,
        "the legend is not in the order of the values"
    );
    assert!(!sweep.contains("268435456"), "a size in raw bytes");
    for tick in ["4 KiB", "16 KiB", "64 KiB"] {
        assert!(sweep.contains(tick), "no {tick} tick");
    }
}
