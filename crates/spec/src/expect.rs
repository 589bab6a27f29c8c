//! `--expect iops=90k,bw=520MB/s,p99=2ms`: figures the user expects (a datasheet, an earlier
//! run), to be compared with what was measured.

use crate::units::parse_duration;
use crate::SpecError;

/// What `--expect` accepts, for error messages.
pub const EXPECT_FORM: &str =
    "comma-separated FIGURE=VALUE pairs such as iops=90k,bw=520MB/s,p99=2ms \
(figures: iops, bw, mean, min, max, p50, p90, p99, p99.9, p99.99)";

/// One expected figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Expectation {
    /// Which figure.
    pub figure: Figure,
    /// Its value: I/Os per second, bytes per second or nanoseconds.
    pub value: f64,
}

/// A figure of a phase's total that can be expected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// I/Os per second: at least this.
    Iops,
    /// Bytes per second: at least this.
    Bw,
    /// A latency statistic, ns: at most this.
    Latency(LatencyStat),
}

/// Which latency statistic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatencyStat {
    /// Smallest.
    Min,
    /// Mean.
    Mean,
    /// 50th percentile.
    P50,
    /// 90th percentile.
    P90,
    /// 99th percentile.
    P99,
    /// 99.9th percentile.
    P999,
    /// 99.99th percentile.
    P9999,
    /// Largest.
    Max,
}

impl LatencyStat {
    /// The name users write (`p99`, `p99.9`, `mean`), as [`parse_stat`] reads it.
    pub fn name(&self) -> &'static str {
        match self {
            LatencyStat::Min => "min",
            LatencyStat::Mean => "mean",
            LatencyStat::P50 => "p50",
            LatencyStat::P90 => "p90",
            LatencyStat::P99 => "p99",
            LatencyStat::P999 => "p99.9",
            LatencyStat::P9999 => "p99.99",
            LatencyStat::Max => "max",
        }
    }
}

impl Figure {
    /// Name as in the results document (`iops`, `bw_bytes_per_s`, `p99_ns`).
    pub fn key(&self) -> &'static str {
        match self {
            Figure::Iops => "iops",
            Figure::Bw => "bw_bytes_per_s",
            Figure::Latency(s) => match s {
                LatencyStat::Min => "min_ns",
                LatencyStat::Mean => "mean_ns",
                LatencyStat::P50 => "p50_ns",
                LatencyStat::P90 => "p90_ns",
                LatencyStat::P99 => "p99_ns",
                LatencyStat::P999 => "p999_ns",
                LatencyStat::P9999 => "p9999_ns",
                LatencyStat::Max => "max_ns",
            },
        }
    }

    /// Whether more is better (throughput) rather than less (latency).
    pub fn higher_is_better(&self) -> bool {
        matches!(self, Figure::Iops | Figure::Bw)
    }
}

/// Parses `--expect`.
pub fn parse_expect(text: &str) -> Result<Vec<Expectation>, SpecError> {
    let bad = || SpecError::invalid("--expect", text, EXPECT_FORM);
    let mut out: Vec<Expectation> = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, value) = part.split_once('=').ok_or_else(bad)?;
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
        let figure = match name.as_str() {
            "iops" => Figure::Iops,
            "bw" | "bandwidth" => Figure::Bw,
            other => Figure::Latency(parse_stat(other).ok_or_else(|| {
                SpecError::invalid(
                    "--expect",
                    text,
                    format!("a known figure instead of {name:?}; {EXPECT_FORM}"),
                )
            })?),
        };
        let parsed = match figure {
            Figure::Iops => parse_count(value),
            Figure::Bw => parse_rate(value),
            // A bare number would silently mean seconds: ask for the unit.
            Figure::Latency(_) => (number(value).is_none())
                .then(|| parse_duration(value))
                .flatten()
                .map(|d| d.as_nanos() as f64),
        }
        .filter(|v| *v > 0.0 && v.is_finite())
        .ok_or_else(|| {
            let form = match figure {
                Figure::Iops => "a count such as 90000, 90k or 1.2m",
                Figure::Bw => "a rate such as 520MB/s (decimal, as datasheets) or 500MiB/s",
                Figure::Latency(_) => "a duration such as 2ms or 500us",
            };
            SpecError::invalid("--expect", part, form)
        })?;
        if out.iter().any(|e| e.figure == figure) {
            return Err(SpecError::invalid(
                "--expect",
                text,
                format!("each figure once; {name} is given twice"),
            ));
        }
        out.push(Expectation {
            figure,
            value: parsed,
        });
    }
    if out.is_empty() {
        return Err(bad());
    }
    Ok(out)
}

/// A latency statistic by the name users write: `p99`, `p99.9`, `mean`, `median`, `max`.
pub(crate) fn parse_stat(name: &str) -> Option<LatencyStat> {
    Some(match name {
        "min" => LatencyStat::Min,
        "mean" | "avg" | "lat" => LatencyStat::Mean,
        "p50" | "median" => LatencyStat::P50,
        "p90" => LatencyStat::P90,
        "p99" => LatencyStat::P99,
        "p99.9" | "p999" => LatencyStat::P999,
        "p99.99" | "p9999" => LatencyStat::P9999,
        "max" => LatencyStat::Max,
        _ => return None,
    })
}

/// `90000`, `90k`, `1.2m`: decimal multipliers, as IOPS are quoted.
fn parse_count(text: &str) -> Option<f64> {
    let t = text.trim().to_ascii_lowercase();
    let (num, mult) = match t.as_bytes().last()? {
        b'k' => (&t[..t.len() - 1], 1e3),
        b'm' => (&t[..t.len() - 1], 1e6),
        b'g' => (&t[..t.len() - 1], 1e9),
        _ => (t.as_str(), 1.0),
    };
    number(num).map(|n| n * mult)
}

/// `520MB/s` (decimal, as datasheets write it), `500MiB/s` (binary), `1.2GB/s`, `800M`.
fn parse_rate(text: &str) -> Option<f64> {
    let t = text.trim();
    let t = t
        .strip_suffix("/s")
        .or_else(|| t.strip_suffix("ps"))
        .unwrap_or(t);
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mult = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "m" | "mb" => 1e6,
        "g" | "gb" => 1e9,
        "t" | "tb" => 1e12,
        "kib" => 1024.0,
        "mib" => 1_048_576.0,
        "gib" => 1_073_741_824.0,
        "tib" => 1_099_511_627_776.0,
        _ => return None,
    };
    number(num).map(|n| n * mult)
}

fn number(text: &str) -> Option<f64> {
    let t = text.trim();
    if t.is_empty() || !t.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return None;
    }
    t.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn stat_names_read_back() {
        use LatencyStat::*;
        for s in [Min, Mean, P50, P90, P99, P999, P9999, Max] {
            assert_eq!(parse_stat(s.name()), Some(s));
        }
    }

    #[test]
    fn every_accepted_form() {
        let e = parse_expect("iops=90k,bw=520MB/s,p99=2ms").unwrap();
        assert_eq!(
            e[0],
            Expectation {
                figure: Figure::Iops,
                value: 90_000.0
            }
        );
        assert_eq!(
            e[1],
            Expectation {
                figure: Figure::Bw,
                value: 520e6
            }
        );
        assert_eq!(
            e[2],
            Expectation {
                figure: Figure::Latency(LatencyStat::P99),
                value: 2e6
            }
        );
        let v = |s: &str| parse_expect(s).unwrap()[0].value;
        assert_eq!(v("iops=1.5m"), 1.5e6);
        assert_eq!(v("iops=12345"), 12345.0);
        assert_eq!(v("bw=500MiB/s"), 500.0 * 1_048_576.0);
        assert_eq!(v("bw=1.2GB/s"), 1.2e9);
        assert_eq!(v("bw=800M"), 800e6);
        assert_eq!(v("p99.9=500us"), 500_000.0);
        assert_eq!(v("mean=1.5ms"), 1_500_000.0);
        assert_eq!(parse_expect(" IOPS = 1k , ").unwrap().len(), 1);
        assert_eq!(
            parse_expect("p9999=1s").unwrap()[0].figure,
            Figure::Latency(LatencyStat::P9999)
        );
    }

    #[test]
    fn rejected_forms_name_the_problem() {
        for bad in [
            "",
            "iops",
            "iops=",
            "iops=-5",
            "iops=0",
            "iops=fast",
            "bw=5XB/s",
            "p99=2",
            "p99=2 parsecs",
            "p42=1ms",
            "iops=1k,iops=2k",
        ] {
            let err = parse_expect(bad).unwrap_err().to_string();
            assert!(err.starts_with("--expect"), "{bad}: {err}");
        }
        assert!(parse_expect("p42=1ms")
            .unwrap_err()
            .to_string()
            .contains("\"p42\""));
    }

    proptest! {
        #[test]
        fn never_panics(s in ".{0,40}") {
            let _ = parse_expect(&s);
        }

        #[test]
        fn counts_round_trip(n in 1u32..10_000_000) {
            let e = parse_expect(&format!("iops={n}")).unwrap();
            prop_assert_eq!(e[0].value, n as f64);
        }
    }
}
