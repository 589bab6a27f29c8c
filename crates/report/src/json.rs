//! The results document as JSON.

use crate::Render;

/// Pretty-printed JSON of the whole document.
pub struct Json;

impl Json {
    /// Writes the document to `w` as it is serialized, never as a whole string in memory
    /// first (a thousand hosts' seconds and samples make hundreds of MiB of text).
    pub fn write_to(
        &self,
        results: &stormark_stats::Results,
        w: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        serde_json::to_writer_pretty(&mut *w, results)?;
        w.write_all(b"\n")
    }
}

impl Render for Json {
    fn render(&self, results: &stormark_stats::Results) -> String {
        let mut s = serde_json::to_string_pretty(results).expect("a results document serializes");
        s.push('\n');
        s
    }
}
