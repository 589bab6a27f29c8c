//! Issue 20: `stormark report` on a real run's document: CSV whose rows add up to what the
//! document says, Markdown with its tables, and the mistakes a user makes.

use stormark_testkit::{read_json, temp_dir, text, Bin};

const BIN: &str = env!("CARGO_BIN_EXE_stormark");
const TMP: &str = env!("CARGO_TARGET_TMPDIR");

/// A short mixed run in `dir`, its document at `dir/r.json`.
fn run(dir: &stormark_testkit::TempDir) -> std::path::PathBuf {
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let (code, _, out) = Bin(BIN).run_json(
        dir,
        &[
            target.to_str().unwrap(),
            "--rw",
            "randrw",
            "--bs",
            "4k",
            "--size",
            "8m",
            "--time",
            "2s",
            "-q",
        ],
    );
    assert_eq!(code, 0, "{out}");
    dir.path().join("r.json")
}

#[test]
fn csv_rows_are_the_documents_figures() {
    let dir = temp_dir(TMP);
    let json = run(&dir);
    let doc = read_json(&json);
    let csv = dir.path().join("csv");
    let out = Bin(BIN).run(&[
        "report",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let rows = |name: &str| -> Vec<Vec<String>> {
        std::fs::read_to_string(csv.join(name))
            .unwrap()
            .lines()
            .map(|l| l.split(',').map(String::from).collect())
            .collect()
    };
    let summary = rows("summary.csv");
    let header = &summary[0];
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let run = doc["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "run")
        .unwrap();
    let all = summary
        .iter()
        .find(|r| r[col("phase")] == "run" && r[col("op")] == "all")
        .expect("the run's total row");
    assert_eq!(all[col("ops")], run["total"]["ops"].to_string());
    assert_eq!(
        all[col("lat_p99_ns")],
        run["total"]["latency_ns"]["p99"].to_string()
    );
    // intervals.csv: a row per second and operation (and their total) of every phase, whose
    // operations add up to the phase's.
    let intervals = rows("intervals.csv");
    let icol = |name: &str| intervals[0].iter().position(|h| h == name).unwrap();
    let ops: u64 = intervals[1..]
        .iter()
        .filter(|r| r[icol("phase")] == "run" && r[icol("op")] == "all")
        .map(|r| r[icol("ops")].parse::<u64>().unwrap())
        .sum();
    assert_eq!(ops, run["total"]["ops"].as_u64().unwrap());
    let per_second =
        run["intervals"].as_array().unwrap().len() * (1 + run["by_op"].as_object().unwrap().len());
    assert_eq!(
        intervals[1..]
            .iter()
            .filter(|r| r[icol("phase")] == "run")
            .count(),
        per_second
    );
    assert!(
        !csv.join("mesh.csv").exists(),
        "a mesh file for a storage run"
    );
}

#[test]
fn markdown_holds_the_command_the_table_and_the_findings() {
    let dir = temp_dir(TMP);
    let json = run(&dir);
    let out = Bin(BIN).run(&["report", json.to_str().unwrap(), "--markdown", "-"]);
    let md = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(md.starts_with("# stormark results\n"), "{md}");
    assert!(md.contains("| phase | host | op | IOPS |"), "{md}");
    assert!(md.contains("| run | all | read |"), "{md}");
    // A 2-second run is too short, and the report says so.
    assert!(md.contains("`run-too-short`"), "{md}");
    // Without an output flag: the terminal summary.
    let out = Bin(BIN).run(&["report", json.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("status: ok"), "{}", text(&out));
}

#[test]
fn report_mistakes_are_one_line_and_exit_2() {
    let dir = temp_dir(TMP);
    let json = run(&dir);
    let j = json.to_str().unwrap();
    let not_doc = dir.path().join("not.json");
    std::fs::write(&not_doc, "{\"schema\": \"other\"}").unwrap();
    let a_file = dir.path().join("file");
    std::fs::write(&a_file, "x").unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["report", "/nonexistent/r.json"], "cannot read it"),
        (
            vec!["report", not_doc.to_str().unwrap()],
            "not a stormark results document",
        ),
        (
            vec!["report", j, "--csv", a_file.to_str().unwrap()],
            "is not a directory",
        ),
        (vec!["report", j, "--markdown", j], "an input"),
        (
            vec!["report", j, "--csv", "/nonexistent/dir/csv"],
            "cannot make it",
        ),
        (
            vec!["report", j, j, "--markdown", "-"],
            "render one document",
        ),
        (vec!["report", j, j], "give --html FILE"),
    ];
    for (args, want) in cases {
        let out = Bin(BIN).run(&args);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(said.contains(want), "{args:?}: {said}");
        assert_eq!(said.trim().lines().count(), 1, "{args:?}: {said}");
    }
    // Several documents with --html: a trend.
    let trend = dir.path().join("trend.html");
    let out = Bin(BIN).run(&["report", j, j, "--html", trend.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let page = std::fs::read_to_string(&trend).unwrap();
    assert!(page.contains("data-chart=\"trend-throughput\""), "{page}");
    // The input is untouched.
    assert_eq!(read_json(&json)["status"], "ok");
}

/// Chromium, headless, on `page`: `--dump-dom` (the DOM after rendering) or `--screenshot`.
pub(crate) fn chromium(
    dir: &std::path::Path,
    args: &[&str],
    page: &std::path::Path,
) -> std::process::Output {
    std::process::Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .arg(format!(
            "--user-data-dir={}",
            dir.join("chromium").display()
        ))
        // Nothing may be fetched: every host name resolves to nowhere.
        .arg("--host-resolver-rules=MAP * ~NOTFOUND")
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("running chromium")
}

#[test]
fn the_html_of_a_real_run_renders_in_a_browser_with_every_chart_drawn() {
    if !stormark_testkit::require_tool("the_html_of_a_real_run_renders_in_a_browser", "chromium") {
        return;
    }
    let dir = temp_dir(TMP);
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let page = dir.path().join("run.html");
    // Written by the run itself (--html), beside its JSON.
    let (code, _, out) = Bin(BIN).run_json(
        &dir,
        &[
            target.to_str().unwrap(),
            "--rw",
            "randrw",
            "--bs",
            "4k",
            "--size",
            "8m",
            "--time",
            "3s",
            "-q",
            "--html",
            page.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{out}");
    let dom = chromium(dir.path(), &["--dump-dom"], &page);
    let dom = String::from_utf8_lossy(&dom.stdout).to_string();
    assert!(dom.contains("stormark results"), "{dom}");
    // Each chart is an SVG in the rendered page, with lines drawn through its data: a line of
    // many points (the axes and grid are lines of two).
    let charts = rendered_charts(dir.path(), &page);
    let names: Vec<&str> = charts.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(names, ["throughput", "latency", "distribution"], "{dom}");
    for (name, longest) in &charts {
        assert!(
            *longest >= 4,
            "{name}: no line through the data ({longest} points)"
        );
    }
    // And it paints: a PNG of the page.
    let png = dir.path().join("run.png");
    let shot = chromium(
        dir.path(),
        &[
            "--window-size=1100,2400",
            &format!("--screenshot={}", png.display()),
        ],
        &page,
    );
    let bytes = std::fs::read(&png).unwrap_or_else(|_| panic!("no screenshot: {}", text(&shot)));
    assert!(bytes.starts_with(b"\x89PNG"), "not a PNG");
    assert!(bytes.len() > 20_000, "a blank page? {} bytes", bytes.len());
}

/// The charts of a page as Chromium rendered it: each one's name and the most points of a
/// line drawn in it (axes and grid lines have two).
fn rendered_charts(dir: &std::path::Path, page: &std::path::Path) -> Vec<(String, usize)> {
    let dom = chromium(dir, &["--dump-dom"], page);
    let dom = String::from_utf8_lossy(&dom.stdout).to_string();
    dom.split("data-chart=\"")
        .skip(1)
        .map(|c| {
            let name = c.split('"').next().unwrap().to_string();
            let svg = c.split("</figure>").next().unwrap();
            assert!(svg.contains("<svg"), "{name}: no SVG");
            let longest = svg
                .split("points=\"")
                .skip(1)
                .map(|p| p.split('"').next().unwrap().split_whitespace().count())
                .max()
                .unwrap_or(0);
            (name, longest)
        })
        .collect()
}

#[test]
fn the_html_of_a_search_a_comparison_and_a_trend_render_with_every_chart_drawn() {
    if !stormark_testkit::require_tool("the_html_of_a_search_a_comparison_and_a_trend", "chromium")
    {
        return;
    }
    let dir = temp_dir(TMP);
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    // A search of a few one-second steps.
    let search = dir.path().join("search.html");
    let (code, _, out) = Bin(BIN).run_json(
        &dir,
        &[
            target.to_str().unwrap(),
            "--rw",
            "randread",
            "--bs",
            "4k",
            "--size",
            "8m",
            "--target-latency",
            "p99<=1ms",
            "--step-time",
            "1",
            "-q",
            "--html",
            search.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{out}");
    let charts = rendered_charts(dir.path(), &search);
    let names: Vec<&str> = charts.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(
        names,
        ["throughput", "latency", "distribution", "search"],
        "{charts:?}"
    );
    // The distribution has a line through its data, the search a point per step (the
    // seconds of one-second steps are drawn as separate two-point steps).
    for (name, points) in &charts {
        let least = if name == "search" || name == "distribution" {
            3
        } else {
            2
        };
        assert!(*points >= least, "{name}: {points} points");
    }
    // A comparison and a trend of two runs with repetitions.
    let (a, b) = (temp_dir(TMP), temp_dir(TMP));
    let (ja, jb) = (run(&a), run(&b));
    let compare = dir.path().join("compare.html");
    let out = Bin(BIN).run(&[
        "compare",
        ja.to_str().unwrap(),
        jb.to_str().unwrap(),
        "--html",
        compare.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let charts = rendered_charts(dir.path(), &compare);
    assert!(
        charts
            .iter()
            .any(|(n, p)| n == "compare-distribution" && *p >= 4),
        "{charts:?}"
    );
    let trend = dir.path().join("trend.html");
    let out = Bin(BIN).run(&[
        "report",
        ja.to_str().unwrap(),
        jb.to_str().unwrap(),
        ja.to_str().unwrap(),
        "--html",
        trend.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let charts = rendered_charts(dir.path(), &trend);
    let names: Vec<&str> = charts.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(names, ["trend-throughput", "trend-p99"], "{charts:?}");
    for (name, points) in &charts {
        assert!(*points >= 3, "{name}: a point per document, {points}");
    }
    // None of the pages fetches anything.
    for page in [&search, &compare, &trend] {
        let html = std::fs::read_to_string(page).unwrap();
        assert!(
            !html.contains("<script") && !html.contains("src=") && !html.contains("url("),
            "{}",
            page.display()
        );
    }
}

#[test]
fn compare_html_holds_each_row_with_its_verdict_and_both_distributions() {
    let (a, b) = (temp_dir(TMP), temp_dir(TMP));
    let (ja, jb) = (run(&a), run(&b));
    let page = a.path().join("compare.html");
    let rows = a.path().join("compare.json");
    let out = Bin(BIN).run(&[
        "compare",
        ja.to_str().unwrap(),
        jb.to_str().unwrap(),
        "--html",
        page.to_str().unwrap(),
        "--json",
        rows.to_str().unwrap(),
        "--markdown",
        a.path().join("compare.md").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    let md = std::fs::read_to_string(a.path().join("compare.md")).unwrap();
    let rows = read_json(&rows);
    let rows = rows[0]["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    // One table row per compared figure (plus the documents' two and the header rows).
    let table = html.split("<section id=\"compare-1\">").nth(1).unwrap();
    assert_eq!(table.matches("<tr><td>").count(), rows.len(), "{table}");
    for r in rows {
        let verdict = r["verdict"].as_str().unwrap().replace('-', " ");
        assert!(table.contains(&verdict), "{verdict}");
    }
    assert!(table.contains("data-chart=\"compare-distribution\""));
    // The Markdown: the same rows, one table line each.
    assert_eq!(
        md.lines().filter(|l| l.starts_with("| run |")).count(),
        rows.len(),
        "{md}"
    );
    assert!(
        table.contains("A read") && table.contains("B read"),
        "both documents' lines"
    );
    assert!(!html.contains("<script") && !html.contains("src="));
    // --html - is refused: the page needs a file.
    let out = Bin(BIN).run(&[
        "compare",
        ja.to_str().unwrap(),
        jb.to_str().unwrap(),
        "--html",
        "-",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

/// `GET path` on `addr`: the whole answer, or `None` when nothing listens.
fn scrape(addr: &str, path: &str) -> Option<String> {
    scrape_with(addr, path, "")
}

/// `GET path` on `addr` with `headers` (each line ending in CRLF) besides `Host`.
fn scrape_with(addr: &str, path: &str, headers: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(5)));
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}\r\n").as_bytes())
        .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

/// The value of the sample `name` (with its labels) in an exposition.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
}

#[test]
fn the_metrics_endpoint_moves_during_a_real_run_and_strangers_do_not_block_it() {
    let dir = temp_dir(TMP);
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let addr = stormark_testkit::free_addr();
    let mut child = std::process::Command::new(BIN)
        .args([
            "run",
            target.to_str().unwrap(),
            "--rw",
            "randread",
            "--bs",
            "4k",
        ])
        .args([
            "--size",
            "8m",
            "--time",
            "6s",
            "-q",
            "--metrics-listen",
            &addr,
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Idle connections that never send a request.
    let idle: Vec<_> = (0..8)
        .filter_map(|_| {
            std::thread::sleep(std::time::Duration::from_millis(50));
            std::net::TcpStream::connect(&addr).ok()
        })
        .collect();
    let mut seen = Vec::new();
    // Answers to other paths, each a 404.
    let mut not_found = 0;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
        if let Some(text) = scrape(&addr, "/metrics") {
            if let Some(ops) = sample(&text, "stormark_ops_total{op=\"read\"}") {
                assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
                assert!(
                    sample(&text, "stormark_iops{op=\"read\"}").unwrap() > 0.0,
                    "{text}"
                );
                assert!(text.contains("stormark_phase{phase=\"run\"} 1"), "{text}");
                assert!(
                    text.contains("stormark_latency_seconds{op=\"read\",percentile=\"0.99\"}"),
                    "{text}"
                );
                seen.push(ops);
                // Any other path is a 404; the run may have ended (and the endpoint with it)
                // between the two scrapes, which is no answer at all.
                if let Some(other) = scrape(&addr, "/").filter(|o| !o.is_empty()) {
                    assert!(other.starts_with("HTTP/1.1 404"), "{other}");
                    not_found += 1;
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(700));
    }
    drop(idle);
    let status = child.wait().unwrap();
    assert!(status.success());
    // The figures moved: at least three different, growing counts.
    seen.dedup();
    assert!(seen.len() >= 3, "{seen:?}");
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    assert!(
        not_found >= 1,
        "no other path was answered while the run lasted"
    );
}

/// Issue 56: what `--metrics-listen` serves is what Prometheus' own checker accepts
/// (`promtool check metrics` exits 0: every family with HELP and TYPE under its samples' name,
/// no summary's label on a gauge), and a scraper asking for OpenMetrics gets OpenMetrics.
#[test]
fn the_metrics_of_a_running_run_pass_promtool() {
    if !stormark_testkit::require_tool("the_metrics_of_a_running_run_pass_promtool", "promtool") {
        return;
    }
    let dir = temp_dir(TMP);
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let addr = stormark_testkit::free_addr();
    let mut child = std::process::Command::new(BIN)
        .args(["run", target.to_str().unwrap(), "--rw", "randrw"])
        .args(["--bs", "4k", "--size", "8m", "--time", "5s", "-q"])
        .args(["--metrics-listen", &addr])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // A scrape of the run phase, once both operations and their latencies are in it, and
    // one asking for OpenMetrics.
    let (mut body, mut openmetrics) = (None, String::new());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while body.is_none()
        && child.try_wait().unwrap().is_none()
        && std::time::Instant::now() < deadline
    {
        let answer = scrape(&addr, "/metrics").unwrap_or_default();
        if answer.contains("stormark_phase{phase=\"run\"} 1")
            && answer.contains("stormark_latency_seconds{op=\"write\"")
        {
            body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_string());
            openmetrics = scrape_with(
                &addr,
                "/metrics",
                "Accept: application/openmetrics-text;version=1.0.0\r\n",
            )
            .unwrap_or_default();
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    assert!(child.wait().unwrap().success());
    let body = body.expect("no scrape of the run phase with reads and writes");
    let mut check = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    check
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let checked = check.wait_with_output().unwrap();
    assert_eq!(
        checked.status.code(),
        Some(0),
        "promtool: {}\n{body}",
        text(&checked)
    );
    assert!(body.contains("# HELP stormark_ops_total "), "{body}");
    // The run may have ended between the two scrapes: then nothing answered.
    assert!(
        openmetrics.is_empty()
            || (openmetrics.contains("application/openmetrics-text")
                && openmetrics.ends_with("# EOF\n")),
        "{openmetrics}"
    );
}

#[test]
fn metrics_listen_mistakes_are_exit_2_and_only_metrics_is_served() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = temp_dir(TMP);
    let out = Bin(BIN).run(&[
        "run",
        dir.path().to_str().unwrap(),
        "--time",
        "1s",
        "--metrics-listen",
        &addr,
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--metrics-listen"), "{}", text(&out));
    let out = Bin(BIN).run(&[
        "run",
        dir.path().to_str().unwrap(),
        "--metrics-listen",
        "localhost",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

#[test]
fn an_agents_metrics_count_exactly_what_its_host_did() {
    let dir = temp_dir(TMP);
    let allowed = dir.path().join("allowed");
    std::fs::create_dir(&allowed).unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "metrics-test-token-0123456789\n").unwrap();
    let (listen, metrics) = (stormark_testkit::free_addr(), stormark_testkit::free_addr());
    let mut agent = std::process::Command::new(BIN)
        .args(["agent", "--listen", &listen, "--token-file"])
        .arg(&token)
        .arg("--allow-path")
        .arg(&allowed)
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .args(["--metrics-listen", &metrics])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    stormark_testkit::wait_listening(&listen, "the agent");
    let json = dir.path().join("r.json");
    let out = Bin(BIN).run(&[
        "run",
        allowed.to_str().unwrap(),
        "--agents",
        &listen,
        "--token-file",
        token.to_str().unwrap(),
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--size",
        "8m",
        "--time",
        "2s",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    let scraped = scrape(&metrics, "/metrics").unwrap_or_default();
    let _ = agent.kill();
    let _ = agent.wait();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc = read_json(&json);
    let phase_ops = |name: &str, op: &str| -> f64 {
        doc["phases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["name"] == name)
            .map(|p| p["by_op"][op]["ops"].as_f64().unwrap_or(0.0))
            .sum()
    };
    // Every read of the run, and every write of its preparation, counted by the agent.
    assert_eq!(
        sample(&scraped, "stormark_ops_total{op=\"read\"}"),
        Some(phase_ops("run", "read")),
        "{scraped}"
    );
    assert_eq!(
        sample(&scraped, "stormark_ops_total{op=\"write\"}"),
        Some(phase_ops("prepare", "write")),
        "{scraped}"
    );
}

#[test]
fn the_coordinators_metrics_label_each_host_of_a_run_over_agents() {
    let dir = temp_dir(TMP);
    let allowed = dir.path().join("allowed");
    std::fs::create_dir(&allowed).unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "metrics-test-token-0123456789\n").unwrap();
    let mut agents = Vec::new();
    let mut listens = Vec::new();
    for i in 0..2 {
        let listen = stormark_testkit::free_addr();
        agents.push(
            std::process::Command::new(BIN)
                .args(["agent", "--listen", &listen, "--token-file"])
                .arg(&token)
                .arg("--allow-path")
                .arg(&allowed)
                .arg("--state-dir")
                .arg(dir.path().join(format!("state{i}")))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap(),
        );
        stormark_testkit::wait_listening(&listen, "an agent");
        listens.push(listen);
    }
    let metrics = stormark_testkit::free_addr();
    let json = dir.path().join("r.json");
    let mut run = std::process::Command::new(BIN)
        .args([
            "run",
            allowed.to_str().unwrap(),
            "--agents",
            &listens.join(","),
        ])
        .arg("--token-file")
        .arg(&token)
        .args([
            "--rw", "randread", "--bs", "4k", "--size", "8m", "--time", "6s",
        ])
        .args(["-q", "--metrics-listen", &metrics, "--json"])
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // While it runs: a counter and a rate per host, labelled with the host's name.
    let mut per_host = std::collections::BTreeMap::<String, Vec<f64>>::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while run.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
        let text = scrape(&metrics, "/metrics").unwrap_or_default();
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("stormark_host_ops_total{host=\"") else {
                continue;
            };
            let (host, rest) = rest.split_once('"').unwrap();
            if rest.starts_with(",op=\"read\"}") {
                let v: f64 = rest.rsplit(' ').next().unwrap().parse().unwrap();
                per_host.entry(host.to_string()).or_default().push(v);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(700));
    }
    let out = run.wait_with_output().unwrap();
    for mut a in agents {
        let _ = a.kill();
        let _ = a.wait();
    }
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc = read_json(&json);
    let names: Vec<&str> = doc["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        per_host.keys().map(String::as_str).collect::<Vec<_>>(),
        {
            let mut n = names.clone();
            n.sort();
            n
        },
        "{per_host:?}"
    );
    for (host, mut seen) in per_host {
        seen.dedup();
        assert!(seen.len() >= 3, "{host}: {seen:?}");
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "{host}: {seen:?}");
    }
}

/// Issue 30: documents anyone may have written. A host name with a line break and a script,
/// CSV cells a spreadsheet would run, a figure of 1.7e308 (it hung the HTML renderer), a
/// negative rate and /dev/zero: refused in one line or rendered inert, never run or hung.
#[test]
fn crafted_documents_are_refused_or_rendered_inert() {
    let dir = temp_dir(TMP);
    let json = run(&dir);
    let mut doc = read_json(&json);
    let evil_host = "h\n\n<script>alert(1)</script>\u{1b}[2J";
    doc["hosts"][0]["name"] = serde_json::json!(evil_host);
    doc["phases"][0]["name"] = serde_json::json!("=HYPERLINK(\"http://x\")");
    let crafted = dir.path().join("crafted.json");
    std::fs::write(&crafted, serde_json::to_string(&doc).unwrap()).unwrap();
    let c = crafted.to_str().unwrap();
    let out = Bin(BIN).run(&["report", c, "--markdown", "-"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(!md.contains("<script>"), "{md}");
    assert!(!md.contains('\u{1b}'), "{md:?}");
    let out = Bin(BIN).run(&["report", c]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains('\u{1b}'));
    assert!(!String::from_utf8_lossy(&out.stderr).contains('\u{1b}'));
    let csv = dir.path().join("csv");
    let out = Bin(BIN).run(&["report", c, "--csv", csv.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let summary = std::fs::read_to_string(csv.join("summary.csv")).unwrap();
    assert!(summary.contains("\"'=HYPERLINK("), "{summary}");
    assert!(!summary.lines().any(|l| l.starts_with('=')), "{summary}");

    // Figures no run measures: refused before anything is drawn.
    for (path, value, want) in [
        ("iops", serde_json::json!(1.7e308), "beyond any figure"),
        ("iops", serde_json::json!(-5.0), "never negative"),
    ] {
        let mut bad = read_json(&json);
        bad["phases"][0]["total"][path] = value;
        let f = dir.path().join("bad.json");
        std::fs::write(&f, serde_json::to_string(&bad).unwrap()).unwrap();
        let html = dir.path().join("bad.html");
        let out = Bin(BIN).run(&[
            "report",
            f.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ]);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{said}");
        assert!(said.contains(want), "{said}");
        assert_eq!(said.trim().lines().count(), 1, "{said}");
        assert!(!html.exists());
    }
    let out = Bin(BIN).run(&["report", "/dev/zero"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("not a regular file"), "{said}");
}
