//! The options of what writes carry: `compress_ratio`, `dedup_ratio` and `dedup_block`, with
//! fio's percentages (`buffer_compress_percentage`, `dedupe_percentage`) turned into ratios.

use crate::choices::{BlockSize, LoadKind, Rw};
use crate::options::JobOpts;
use crate::units::format_size;
use crate::SpecError;

/// The most compression asked for: every 512-byte sector keeps 16 random bytes.
pub const MAX_COMPRESS: f64 = 32.0;
/// The most deduplication asked for: one block in 100 unique.
pub const MAX_DEDUP: f64 = 100.0;

/// The accepted form of `compress_ratio`.
pub(crate) const COMPRESS_FORM: &str = "a ratio from 1 (incompressible) to 32, such as 2 or 3.6";
/// The accepted form of `dedup_ratio`.
pub(crate) const DEDUP_FORM: &str = "a ratio from 1 (every block unique) to 100, such as 1.5";
/// The accepted form of fio's percentages.
pub(crate) const COMPRESS_PERCENT_FORM: &str =
    "a percentage from 0 to 96 (fio's buffer_compress_percentage: 50 is a ratio of 2)";
pub(crate) const DEDUP_PERCENT_FORM: &str =
    "a percentage from 0 to 99 (fio's dedupe_percentage: 50 is a ratio of 2)";

/// A ratio from 1 to `max`.
pub(crate) fn parse_ratio(value: &str, max: f64) -> Option<f64> {
    let r: f64 = value.trim().trim_end_matches(['x', 'X']).parse().ok()?;
    (r.is_finite() && (1.0..=max).contains(&r)).then_some(r)
}

/// fio's percentage of a buffer that compresses away (or of blocks that are duplicates) as
/// the ratio it gives: p% gone leaves 100 / (100 - p).
pub(crate) fn percent_ratio(value: &str, max: f64) -> Option<f64> {
    let p: f64 = value.trim().trim_end_matches('%').parse().ok()?;
    if !(0.0..100.0).contains(&p) {
        return None;
    }
    let r = 100.0 / (100.0 - p);
    (r <= max + 1e-9).then_some(r.min(max))
}

/// The resolved data options of a job: compression ratio, dedup ratio and dedup block.
pub(crate) fn resolve(opts: &JobOpts, bs: BlockSize) -> Result<(f64, f64, u64), SpecError> {
    let compress = opts.compress_ratio.unwrap_or(1.0);
    let dedup = opts.dedup_ratio.unwrap_or(1.0);
    if opts.zero_buffers == Some(true) && (compress > 1.0 || dedup > 1.0) {
        return Err(SpecError::invalid(
            "--zero-buffers",
            "true",
            "zeros, or data with --compress-ratio/--dedup-ratio, not both",
        ));
    }
    // An object is made of whole dedup blocks and a tail: S3 jobs have no block size.
    let s3 = opts.kind == Some(LoadKind::S3);
    if let Some(p) = &opts.buffer_pattern {
        let why = if opts.zero_buffers == Some(true) {
            Some("a pattern or zeros (--zero-buffers), not both")
        } else if dedup > 1.0 {
            Some("a pattern or duplicate blocks (--dedup-ratio), not both")
        } else if opts.kind.unwrap_or_default() != LoadKind::File {
            Some("a pattern for the writes of file jobs")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(SpecError::invalid("--buffer-pattern", &p.text(), why));
        }
    }
    if let Some(p) = opts.dedup_working_set {
        let why = if s3 {
            Some("a working set for the duplicate blocks of file jobs")
        } else if dedup <= 1.0 {
            Some("with --dedup-ratio above 1 (fio's dedupe_percentage): the share of blocks drawn from the set")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(SpecError::invalid(
                "--dedup-working-set",
                &p.to_string(),
                why,
            ));
        }
    }
    let block = opts.dedup_block.unwrap_or(bs.min);
    if dedup > 1.0 && (block < 512 || !block.is_multiple_of(512) || (block > bs.min && !s3)) {
        return Err(SpecError::invalid(
            "--dedup-block",
            &format_size(block),
            format!(
                "a multiple of 512 bytes no larger than the smallest block size ({})",
                format_size(bs.min)
            ),
        ));
    }
    Ok((compress, dedup, block))
}

/// `verify` and `verify_only` of a file job, checked against the rest: whether written
/// blocks carry headers, and whether the job only checks what a kept run left.
pub(crate) fn resolve_verify(
    opts: &JobOpts,
    rw: Rw,
    bs: BlockSize,
    bs_align: u64,
) -> Result<(bool, bool), SpecError> {
    let only = opts.verify_only.unwrap_or(false);
    let verify = only || opts.verify.unwrap_or(false);
    if !verify {
        let given = [
            ("verify_interval", opts.verify_interval.map(format_size)),
            ("verify_after", opts.verify_after.map(|b| b.to_string())),
        ];
        if let Some((key, Some(v))) = given.into_iter().find(|(_, v)| v.is_some()) {
            return Err(SpecError::invalid(
                key,
                &v,
                "with --verify, whose blocks it sets or checks",
            ));
        }
    }
    if !verify || opts.kind.unwrap_or_default() != LoadKind::File {
        return Ok((verify, only));
    }
    let flag = if only { "--verify-only" } else { "--verify" };
    let refuse = |why: &str| Err(SpecError::invalid(flag, "true", why));
    if opts.dedup_ratio.unwrap_or(1.0) > 1.0 {
        return refuse("verified blocks or duplicate blocks, not both (--dedup-ratio)");
    }
    if opts.zero_buffers == Some(true) {
        return refuse("verified blocks carry headers, not zeros: drop --zero-buffers");
    }
    if rw.trims() {
        return refuse("a job that writes without trimming: trimmed blocks hold no data to check");
    }
    if !only && rw.read_pct(opts.rwmixread.unwrap_or(50)) == 100 {
        return refuse("a job that writes (--rw write, randwrite, rw or randrw); to check the files a --keep run left, --verify-only");
    }
    let unit = crate::units::gcd(bs.min, bs_align);
    if unit < 512 {
        return refuse(
            "I/O sizes and offsets in multiples of 512 bytes or more (--bs, --bs-align)",
        );
    }
    if let Some(n) = opts.verify_interval.filter(|n| !unit.is_multiple_of(*n)) {
        return Err(SpecError::invalid(
            "verify_interval",
            &format_size(n),
            format!(
                "a size that divides every I/O's size and offset ({}), such as 512",
                format_size(unit)
            ),
        ));
    }
    Ok((verify, only))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn fio_percentages_are_ratios() {
        assert_eq!(percent_ratio("50", MAX_COMPRESS), Some(2.0));
        assert_eq!(percent_ratio("0", MAX_COMPRESS), Some(1.0));
        assert_eq!(percent_ratio("75%", MAX_COMPRESS), Some(4.0));
        assert_eq!(percent_ratio("100", MAX_COMPRESS), None);
        assert_eq!(percent_ratio("97", MAX_COMPRESS), None);
        assert_eq!(percent_ratio("99", MAX_DEDUP), Some(100.0));
        assert_eq!(parse_ratio("3.6", MAX_COMPRESS), Some(3.6));
        assert_eq!(parse_ratio("2x", MAX_COMPRESS), Some(2.0));
        assert_eq!(parse_ratio("0.5", MAX_COMPRESS), None);
        assert_eq!(parse_ratio("NaN", MAX_COMPRESS), None);
        assert_eq!(parse_ratio("inf", MAX_DEDUP), None);
    }

    proptest! {
        #[test]
        fn ratio_parsers_never_panic_and_stay_in_range(s in "\\PC{0,12}") {
            if let Some(r) = parse_ratio(&s, MAX_DEDUP) {
                prop_assert!((1.0..=MAX_DEDUP).contains(&r));
            }
            if let Some(r) = percent_ratio(&s, MAX_COMPRESS) {
                prop_assert!((1.0..=MAX_COMPRESS).contains(&r));
            }
        }
    }
}

/// fio's `buffer_pattern`: the bytes every write repeats, at most [`FillPattern::MAX`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FillPattern {
    bytes: [u8; FillPattern::MAX],
    len: u16,
}

/// The accepted form of `buffer_pattern`.
pub(crate) const PATTERN_FORM: &str =
    "bytes as fio writes them: 0xdeadbeef, \"text\", or pieces of both in a row, at most 512 bytes";

impl FillPattern {
    /// The longest pattern (fio's too).
    pub const MAX: usize = 512;

    /// fio's forms, pieces one after another: `0x` and hex digits (an even number, or a
    /// leading 0 is assumed), or text in double or single quotes.
    pub fn parse(text: &str) -> Option<FillPattern> {
        let mut out = FillPattern {
            bytes: [0; Self::MAX],
            len: 0,
        };
        let mut push = |b: u8| -> Option<()> {
            *out.bytes.get_mut(usize::from(out.len))? = b;
            out.len += 1;
            Some(())
        };
        let mut rest = text.trim();
        while !rest.is_empty() {
            if let Some(hex) = rest.strip_prefix("0x").or(rest.strip_prefix("0X")) {
                let end = hex
                    .find(|c: char| !c.is_ascii_hexdigit())
                    .unwrap_or(hex.len());
                let digits = &hex[..end];
                if digits.is_empty() {
                    return None;
                }
                let padded = if digits.len() % 2 == 1 {
                    format!("0{digits}")
                } else {
                    digits.to_string()
                };
                for pair in padded.as_bytes().chunks(2) {
                    push(u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?)?;
                }
                rest = hex[end..].trim_start();
            } else if let Some(q) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') {
                let inner = &rest[1..];
                let end = inner.find(q)?;
                for b in inner[..end].bytes() {
                    push(b)?;
                }
                rest = inner[end + 1..].trim_start();
            } else {
                return None;
            }
        }
        (out.len > 0).then_some(out)
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// As fio reads it back: `0x` and hex digits.
    pub fn text(&self) -> String {
        let mut s = String::from("0x");
        for b in self.bytes() {
            s.push_str(&format!("{b:02x}"));
        }
        s
    }
}
