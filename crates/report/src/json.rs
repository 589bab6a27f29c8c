//! The results document as JSON.

use std::io::Write;

use crate::Render;

/// Pretty-printed JSON of the whole document.
pub struct Json;

impl Json {
    /// Writes the document to `w` as it is serialized, never as a whole string in memory
    /// first (a thousand hosts' seconds and samples make hundreds of MiB of text).
    pub fn write_to(
        &self,
        results: &stormark_stats::Results,
        w: &mut dyn Write,
    ) -> std::io::Result<()> {
        // Serialized into a buffer of its own type, so that serde's many small writes are
        // not each a call through `dyn Write` (a quarter of the time of a thousand hosts'
        // document).
        let mut w = std::io::BufWriter::with_capacity(1 << 16, w);
        serde_json::to_writer_pretty(&mut w, results)?;
        w.write_all(b"\n")?;
        w.flush()
    }
}

impl Render for Json {
    fn render(&self, results: &stormark_stats::Results) -> String {
        let mut s = serde_json::to_string_pretty(results).expect("a results document serializes");
        s.push('\n');
        s
    }
}
