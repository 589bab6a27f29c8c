//! The results document as JSON.

use crate::Render;

/// Pretty-printed JSON of the whole document.
pub struct Json;

impl Render for Json {
    fn render(&self, results: &stormark_stats::Results) -> String {
        let mut s = serde_json::to_string_pretty(results).expect("a results document serializes");
        s.push('\n');
        s
    }
}
