//! The results document as JSON.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::Formatter;

use crate::Render;

/// The whole document as JSON, laid out for reading: the outer levels indented, one line per
/// key, and each entry four levels down (a host's sample, an interval, a host's figures) on a
/// line of its own, written compact.
pub struct Json;

impl Json {
    /// Writes the document to `w` as it is serialized, never as a whole string in memory
    /// first (a thousand hosts' seconds and samples make hundreds of MiB of text).
    pub fn write_to(&self, results: &stormark_stats::Results, w: &mut dyn Write) -> io::Result<()> {
        // Serialized into a buffer of its own type, so that serde's many small writes are
        // not each a call through `dyn Write` (a quarter of the time of a thousand hosts'
        // document).
        let mut w = io::BufWriter::with_capacity(1 << 16, w);
        write(results, &mut w)?;
        w.flush()
    }
}

impl Render for Json {
    fn render(&self, results: &stormark_stats::Results) -> String {
        let mut out = Vec::new();
        write(results, &mut out).expect("a results document serializes");
        String::from_utf8(out).expect("serde_json writes UTF-8")
    }
}

fn write(results: &stormark_stats::Results, w: &mut impl Write) -> io::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(&mut *w, Shallow::default());
    results.serialize(&mut ser)?;
    w.write_all(b"\n")
}

/// Levels of the document laid out one entry a line; deeper ones are written compact (at a
/// thousand hosts, indentation had been most of the document's bytes and of its writing).
const LAID_OUT: usize = 4;

/// serde_json's pretty layout down to [`LAID_OUT`] levels, compact below.
#[derive(Default)]
struct Shallow {
    depth: usize,
    has_value: bool,
}

impl Shallow {
    fn line<W: ?Sized + Write>(&self, w: &mut W, depth: usize) -> io::Result<()> {
        w.write_all(b"\n")?;
        for _ in 0..depth {
            w.write_all(b"  ")?;
        }
        Ok(())
    }

    fn open<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        w.write_all(bracket)
    }

    fn close<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        let inner = self.depth;
        self.depth -= 1;
        if self.has_value && inner <= LAID_OUT {
            self.line(w, self.depth)?;
        }
        w.write_all(bracket)
    }

    fn entry<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        if self.depth <= LAID_OUT {
            self.line(w, self.depth)?;
        }
        Ok(())
    }
}

impl Formatter for Shallow {
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.entry(w, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.entry(w, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(if self.depth <= LAID_OUT { b": " } else { b":" })
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn laid_out(v: &serde_json::Value) -> String {
        let mut out = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(&mut out, Shallow::default());
        v.serialize(&mut ser).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn outer_levels_laid_out_deeper_ones_compact() {
        let v = serde_json::json!({
            "a": 1,
            "empty": [],
            "hosts": [{"samples": [{"cpu": {"user": 1.5, "idle": [1, 2]}}, {}]}],
        });
        assert_eq!(
            laid_out(&v),
            "{\n  \"a\": 1,\n  \"empty\": [],\n  \"hosts\": [\n    {\n      \"samples\": [\n        {\"cpu\":{\"idle\":[1,2],\"user\":1.5}},\n        {}\n      ]\n    }\n  ]\n}"
        );
    }

    proptest::proptest! {
        /// Whatever the nesting, what is written reads back as the same value.
        #[test]
        fn reads_back_as_written(depth in 0usize..8, width in 0usize..4, leaf in proptest::num::i64::ANY) {
            let mut v = serde_json::json!(leaf);
            for d in 0..depth {
                v = if d % 2 == 0 {
                    serde_json::Value::Array(vec![v; width])
                } else {
                    let mut m = serde_json::Map::new();
                    for i in 0..width {
                        m.insert(format!("k{i}"), v.clone());
                    }
                    serde_json::Value::Object(m)
                };
            }
            let text = laid_out(&v);
            let back: serde_json::Value = serde_json::from_str(&text).unwrap();
            proptest::prop_assert_eq!(back, v);
        }
    }
}
