//! Issue 56: the HTML report's charts answer their question, measured in a real browser. A
//! run over two agents sweeping `bs` given out of order (64k, 4k, 16k) writes its page; a copy
//! of the page with a script appended is rendered by headless Chromium, and the script writes
//! down each chart's plot area, legend and every text with its bounding box as the browser
//! laid them out.

use serde_json::Value;
use stormark_testkit::{read_json, temp_dir, text, Bin};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

/// Appended to a copy of the page: each chart's plot area, legend and texts with their boxes
/// (left, top, right, bottom, px), as JSON in `<pre id="measured">`.
const MEASURE: &str = r#"<script>
const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
const charts = [...document.querySelectorAll('figure[data-chart]')].map(f => {
  const area = f.querySelector('rect.plot-area'), legend = f.querySelector('g.legend');
  return { chart: f.dataset.chart, area: area && box(area), legend: legend && box(legend),
    texts: [...f.querySelectorAll('svg text')].map(t => [t.textContent.trim(), box(t)]) };
});
const pre = document.createElement('pre');
pre.id = 'measured';
pre.textContent = JSON.stringify(charts);
document.body.appendChild(pre);
</script>"#;

/// Each chart of `page` as Chromium laid it out.
fn measured(dir: &std::path::Path, page: &std::path::Path) -> Vec<Value> {
    let html = std::fs::read_to_string(page).unwrap();
    let copy = dir.join("measured.html");
    std::fs::write(&copy, html.replace("</body>", &format!("{MEASURE}</body>"))).unwrap();
    let dom = crate::report::chromium(dir, &["--dump-dom"], &copy);
    let dom = String::from_utf8_lossy(&dom.stdout).to_string();
    let json = dom
        .split("<pre id=\"measured\">")
        .nth(1)
        .and_then(|d| d.split("</pre>").next())
        .unwrap_or_else(|| panic!("nothing measured: {dom}"))
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str::<Value>(&json)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// A box as four numbers.
fn rect(v: &Value) -> [f64; 4] {
    let a = v.as_array().unwrap_or_else(|| panic!("not a box: {v}"));
    [0, 1, 2, 3].map(|i| a[i].as_f64().unwrap())
}

/// A chart's texts with their boxes.
fn texts(chart: &Value) -> Vec<(String, [f64; 4])> {
    chart["texts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t[0].as_str().unwrap().to_string(), rect(&t[1])))
        .collect()
}

/// `12 µs`, `1 ms` in nanoseconds.
fn latency_ns(label: &str) -> Option<f64> {
    let (n, unit) = label.split_once(' ')?;
    let scale = match unit {
        "ns" => 1.0,
        "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    Some(n.parse::<f64>().ok()? * scale)
}

/// Agents on this host, each serving `allowed`, stopped when dropped.
struct LocalAgents {
    children: Vec<std::process::Child>,
    listens: Vec<String>,
}

impl LocalAgents {
    fn start(dir: &std::path::Path, allowed: &std::path::Path, token: &std::path::Path) -> Self {
        let mut a = LocalAgents {
            children: Vec::new(),
            listens: Vec::new(),
        };
        for i in 0..2 {
            let listen = stormark_testkit::free_addr();
            a.children.push(
                std::process::Command::new(BIN)
                    .args(["agent", "--listen", &listen, "--token-file"])
                    .arg(token)
                    .arg("--allow-path")
                    .arg(allowed)
                    .arg("--state-dir")
                    .arg(dir.join(format!("state{i}")))
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .unwrap(),
            );
            stormark_testkit::wait_listening(&listen, "an agent");
            a.listens.push(listen);
        }
        a
    }
}

impl Drop for LocalAgents {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn the_charts_name_the_hosts_draw_latency_by_decades_keep_legends_off_the_data_and_order_a_sweep() {
    if !stormark_testkit::require_tool(
        "the_charts_name_the_hosts_draw_latency_by_decades",
        "chromium",
    ) {
        return;
    }
    let dir = temp_dir(TMP);
    let allowed = dir.path().join("allowed");
    std::fs::create_dir(&allowed).unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "charts-test-token-0123456789\n").unwrap();
    let agents = LocalAgents::start(dir.path(), &allowed, &token);
    let (json, page) = (dir.path().join("r.json"), dir.path().join("r.html"));
    let out = Bin(BIN).run(&[
        "run",
        allowed.to_str().unwrap(),
        "--agents",
        &agents.listens.join(","),
        "--token-file",
        token.to_str().unwrap(),
        "--rw",
        "randread",
        "--size",
        "8m",
        "--time",
        "1s",
        "--sweep",
        "bs=64k,4k,16k",
        "-q",
        "--json",
        json.to_str().unwrap(),
        "--html",
        page.to_str().unwrap(),
    ]);
    drop(agents);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc = read_json(&json);
    let charts = measured(dir.path(), &page);
    let chart = |name: &str| {
        charts
            .iter()
            .find(|c| c["chart"] == name)
            .unwrap_or_else(|| panic!("no {name} chart: {charts:?}"))
    };

    // Every legend stands beside its plot area, over none of it.
    for c in &charts {
        if c["legend"].is_null() {
            continue;
        }
        let area = rect(&c["area"]);
        let legend = rect(&c["legend"]);
        let apart = legend[0] >= area[2]
            || legend[2] <= area[0]
            || legend[1] >= area[3]
            || legend[3] <= area[1];
        assert!(
            apart,
            "{}: legend {legend:?} over the plot {area:?}",
            c["chart"]
        );
    }

    // The per-host chart names each host left of its bar, the slowest on top.
    let hosts = chart("hosts");
    let area = rect(&hosts["area"]);
    let said = texts(hosts);
    let title = &said
        .iter()
        .find(|t| t.0.contains(" per host, phase "))
        .unwrap()
        .0;
    let phase_name = title.split(", phase ").nth(1).unwrap();
    let figure = if title.starts_with("IOPS") {
        "iops"
    } else {
        "bw_bytes_per_s"
    };
    let phase = doc["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == phase_name)
        .unwrap();
    let mut named: Vec<(f64, f64)> = Vec::new();
    for h in doc["hosts"].as_array().unwrap() {
        let name = h["name"].as_str().unwrap();
        let (_, b) = said
            .iter()
            .find(|t| t.0 == name)
            .unwrap_or_else(|| panic!("{name} is not on the per-host chart: {said:?}"));
        assert!(b[2] <= area[0] + 1.0, "{name} {b:?} is not on the axis");
        assert!(b[3] - b[1] >= 9.0, "{name}: {b:?}, too small to read");
        let rate = phase["by_host"][name]["total"][figure].as_f64().unwrap();
        named.push((b[1], rate));
    }
    named.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert!(
        named.windows(2).all(|w| w[0].1 <= w[1].1),
        "the slowest host is not on top: {named:?}"
    );

    // The distribution's latency axis is logarithmic: its labels (left of the plot) are
    // spaced by the logarithm of their ratio, and percentiles read as HdrHistogram's.
    let dist = chart("distribution");
    let area = rect(&dist["area"]);
    let said = texts(dist);
    let mut ticks: Vec<(f64, f64)> = said
        .iter()
        .filter(|t| t.1[2] <= area[0] + 1.0)
        .filter_map(|t| Some((latency_ns(&t.0)?, (t.1[1] + t.1[3]) / 2.0)))
        .collect();
    ticks.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert!(ticks.len() >= 3, "{said:?}");
    let per_e: Vec<f64> = ticks
        .windows(2)
        .map(|w| (w[0].1 - w[1].1) / (w[1].0 / w[0].0).ln())
        .collect();
    assert!(
        per_e.iter().all(|d| (d - per_e[0]).abs() < 1.5 && *d > 0.0),
        "not a log axis: {ticks:?}"
    );
    for pct in ["50%", "90%", "99%"] {
        assert!(said.iter().any(|t| t.0 == pct), "no {pct}: {said:?}");
    }

    // The sweep: block sizes in binary units, by value, left to right, equally apart (4k,
    // 16k and 64k are each four times the last).
    let sweep = chart("sweep");
    let area = rect(&sweep["area"]);
    let xs: Vec<(String, f64)> = texts(sweep)
        .into_iter()
        .filter(|t| t.1[1] >= area[3] - 1.0 && t.0.ends_with("KiB"))
        .map(|(s, b)| (s, (b[0] + b[2]) / 2.0))
        .collect();
    let mut by_place = xs.clone();
    by_place.sort_by(|a, b| a.1.total_cmp(&b.1));
    let order: Vec<&str> = by_place.iter().map(|x| x.0.as_str()).collect();
    assert_eq!(order, ["4 KiB", "16 KiB", "64 KiB"], "{xs:?}");
    let gaps = [by_place[1].1 - by_place[0].1, by_place[2].1 - by_place[1].1];
    assert!(
        (gaps[0] - gaps[1]).abs() < 2.0,
        "not by value: {by_place:?}"
    );
}
