//! The renderers on one fixed results document (`testkit::sample_results`): what a user sees
//! in the terminal and what scripts read in JSON, pinned by insta snapshots. A change to
//! either shows here as a diff to review (`cargo insta review`, or update the .snap files).

use stormark_report::{Json, Render, Terminal};
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
fn the_sample_is_the_same_every_time() {
    assert_eq!(sample_results(), sample_results());
}
