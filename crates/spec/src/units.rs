//! Units as fio writes them: sizes (`4k`, `64KiB`, `1m`), durations (`30s`, `2ms`) and
//! percentages (`70`, `70%`).
//!
//! Sizes use fio's default `kb_base=1024`: `k`, `kb` and `kib` all mean 1024 bytes, so a job
//! file moved from fio keeps its meaning. A bare number is bytes. Durations without a unit are
//! seconds, as fio's `runtime`.

use std::time::Duration;

/// What a size option accepts, for error messages.
pub const SIZE_FORM: &str = "a size such as 4k, 64KiB or 1m";
/// What a duration option accepts, for error messages.
pub const DURATION_FORM: &str = "a duration such as 30s, 500ms, 5m or 1h, at most 365d";
/// The longest duration any option takes: a year. Longer is a typo (or an attack: a
/// deadline of `u64::MAX` seconds overflows every clock it is added to).
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 86_400);
/// What a percentage option accepts, for error messages.
pub const PERCENT_FORM: &str = "a percentage from 0 to 100, such as 70 or 70%";

/// Parses a size in bytes: digits with an optional fraction and an optional binary unit
/// (`b`, `k`/`kb`/`kib`/`ki`, `m`, `g`, `t`, `p`, any case). A fraction of a unit rounds down
/// to whole bytes (`1.1k` is 1126); a fraction of a byte (`1.5`, `1.5b`) is refused, never
/// made a 1-byte block.
pub fn parse_size(text: &str) -> Option<u64> {
    let s = text.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let shift: u32 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" | "ki" => 10,
        "m" | "mb" | "mib" | "mi" => 20,
        "g" | "gb" | "gib" | "gi" => 30,
        "t" | "tb" | "tib" | "ti" => 40,
        "p" | "pb" | "pib" | "pi" => 50,
        _ => return None,
    };
    let (int, frac) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number, ""),
    };
    if int.is_empty() && frac.is_empty() || frac.contains('.') || frac.len() > 18 {
        return None;
    }
    let int: u128 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let frac_value: u128 = if frac.is_empty() {
        0
    } else {
        frac.parse().ok()?
    };
    let scale = 10u128.pow(frac.len() as u32);
    let value = int.checked_mul(scale)?.checked_add(frac_value)?;
    let scaled = value.checked_mul(1u128 << shift)?;
    if shift == 0 && scaled % scale != 0 {
        return None;
    }
    u64::try_from(scaled / scale).ok()
}

/// Parses a duration: one or more `<number><unit>` parts (`1h30m`), units `ns`, `us`, `ms`,
/// `s`, `m`, `h`, `d`; a bare number is seconds. At most [`MAX_DURATION`].
pub fn parse_duration(text: &str) -> Option<Duration> {
    let s = text.trim();
    if s.is_empty() {
        return None;
    }
    if let Ok(secs) = s.parse::<u64>() {
        return Some(Duration::from_secs(secs)).filter(|d| *d <= MAX_DURATION);
    }
    let mut total_ns: u128 = 0;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if digits == 0 {
            return None;
        }
        let number = &rest[..digits];
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit_ns: u128 = match &rest[..unit_len] {
            "ns" => 1,
            "us" | "µs" => 1_000,
            "ms" => 1_000_000,
            // A bare number is seconds, as in fio (`--time 1.5`).
            "" | "s" | "sec" => 1_000_000_000,
            "m" | "min" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "d" => 86_400_000_000_000,
            _ => return None,
        };
        rest = &rest[unit_len..];
        let ns = if number.contains('.') {
            let value: f64 = number.parse().ok()?;
            let ns = value * unit_ns as f64;
            if !ns.is_finite() || ns > u64::MAX as f64 {
                return None;
            }
            ns.round() as u128
        } else {
            number.parse::<u128>().ok()?.checked_mul(unit_ns)?
        };
        total_ns = total_ns.checked_add(ns)?;
    }
    u64::try_from(total_ns)
        .ok()
        .map(Duration::from_nanos)
        .filter(|d| *d <= MAX_DURATION)
}

/// Parses a percentage from 0 to 100, with or without a trailing `%`.
pub fn parse_percent(text: &str) -> Option<u8> {
    let s = text.trim();
    let s = s.strip_suffix('%').unwrap_or(s).trim();
    match s.parse::<u8>() {
        Ok(p) if p <= 100 => Some(p),
        _ => None,
    }
}

/// Formats a byte count the way it would be typed back: `4k`, `1m`, `1536`.
pub fn format_size(bytes: u64) -> String {
    for (shift, unit) in [(40, "t"), (30, "g"), (20, "m"), (10, "k")] {
        if bytes != 0 && bytes.is_multiple_of(1u64 << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

/// Formats a duration the way it would be typed back: `30s`, `250ms`, `1500us`.
pub fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    for (unit_ns, unit) in [
        (3_600_000_000_000u128, "h"),
        (60_000_000_000, "m"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
    ] {
        if ns != 0 && ns.is_multiple_of(unit_ns) {
            return format!("{}{unit}", ns / unit_ns);
        }
    }
    format!("{ns}ns")
}

/// The accepted form of `fsync` and `fdatasync`.
pub(crate) const EVERY_FORM: &str = "a number of writes from 0 (never) to 1000000, such as 32";

/// Every how many writes (0: never).
pub(crate) fn every(value: &str) -> Option<u32> {
    value.trim().parse::<u32>().ok().filter(|n| *n <= 1_000_000)
}

/// The accepted form of a yes/no option.
pub(crate) const BOOL_FORM: &str = "true or false (1 or 0)";

/// A yes/no value as fio and TOML users write it (fio's bare `zero_buffers` arrives as `1`).
pub(crate) fn parse_bool(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// The greatest common divisor (of 0 and n: n).
pub fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sizes_accepted() {
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("4k"), Some(4096));
        assert_eq!(parse_size("4K"), Some(4096));
        assert_eq!(parse_size("4kb"), Some(4096));
        assert_eq!(parse_size("64KiB"), Some(65536));
        assert_eq!(parse_size("1m"), Some(1 << 20));
        assert_eq!(parse_size("1MiB"), Some(1 << 20));
        assert_eq!(parse_size("2g"), Some(2 << 30));
        assert_eq!(parse_size("1t"), Some(1 << 40));
        assert_eq!(parse_size("1.5k"), Some(1536));
        assert_eq!(parse_size("512b"), Some(512));
        assert_eq!(parse_size(" 8k "), Some(8192));
        assert_eq!(parse_size("0"), Some(0));
        assert_eq!(parse_size("2.0"), Some(2));
        assert_eq!(parse_size("1.1k"), Some(1126));
    }

    #[test]
    fn sizes_rejected() {
        for bad in [
            "",
            "k",
            "4kk",
            "-4k",
            "4 x",
            "1.2.3k",
            "abc",
            "99999999999999999999999p",
            "16777216p",
            // A fraction of a byte (issue 54: `--bs 1.5` made a 1-byte job).
            "1.5",
            "0.5b",
        ] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }

    #[test]
    fn durations_accepted() {
        assert_eq!(parse_duration("30"), Some(Duration::from_secs(30)));
        assert_eq!(parse_duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse_duration("2ms"), Some(Duration::from_millis(2)));
        assert_eq!(parse_duration("150us"), Some(Duration::from_micros(150)));
        assert_eq!(parse_duration("5m"), Some(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("10ns"), Some(Duration::from_nanos(10)));
        assert_eq!(parse_duration("1.5"), Some(Duration::from_millis(1500)));
    }

    #[test]
    fn durations_rejected() {
        assert_eq!(parse_duration("365d"), Some(MAX_DURATION));
        // Past a year (issue 54: u64::MAX seconds overflowed the run's deadline and panicked).
        for bad in [
            "",
            "s",
            "30x",
            "-1s",
            "1..2s",
            "1e400s",
            "366d",
            "31536001",
            "4294967296",
            "18446744073709551615",
            "18446744073709551615ns",
        ] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn percents() {
        assert_eq!(parse_percent("70"), Some(70));
        assert_eq!(parse_percent("70%"), Some(70));
        assert_eq!(parse_percent("0"), Some(0));
        assert_eq!(parse_percent("100"), Some(100));
        for bad in ["101", "-1", "x", "", "50.5"] {
            assert_eq!(parse_percent(bad), None, "{bad}");
        }
    }

    proptest! {
        #[test]
        fn size_parser_never_panics(s in "\\PC{0,24}") {
            let _ = parse_size(&s);
        }

        #[test]
        fn duration_parser_never_panics(s in "\\PC{0,24}") {
            let _ = parse_duration(&s);
        }

        #[test]
        fn size_round_trips(n in 0u64..(1u64 << 50)) {
            prop_assert_eq!(parse_size(&format_size(n)), Some(n));
        }

        #[test]
        fn size_with_unit_round_trips(n in 0u64..(1u64 << 20), unit in 0usize..4) {
            let (suffix, shift) = [("k", 10), ("m", 20), ("g", 30), ("t", 40)][unit];
            prop_assert_eq!(parse_size(&format!("{n}{suffix}")), Some(n << shift));
        }

        #[test]
        fn duration_round_trips(ns in 1u64..(1u64 << 50)) {
            let d = Duration::from_nanos(ns);
            prop_assert_eq!(parse_duration(&format_duration(d)), Some(d));
        }
    }
}
