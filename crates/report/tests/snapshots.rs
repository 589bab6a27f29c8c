//! The renderers on one fixed results document (`testkit::sample_results`): what a user sees
//! in the terminal, what scripts read in JSON and CSV, and the Markdown, pinned by insta
//! snapshots. A change to
//! either shows here as a diff to review (`cargo insta review`, or update the .snap files).

use stormark_report::{csv_files, Json, Markdown, Render, Terminal};
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
