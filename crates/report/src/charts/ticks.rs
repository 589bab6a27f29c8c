//! Where an axis' ticks go: at round numbers on a linear axis (in MiB/s for bytes, so that a
//! bandwidth axis reads 100, 200, 300 MiB/s and not 95.4, 191, 286), at decades on a
//! logarithmic one, and how a tick reads (`50 MiB/s`, not `50.0 MiB/s`).

/// Round ticks from 0 (or the first multiple of the step at or above `lo`) up to `hi`: steps
/// of 1, 2 or 5 times a power of ten, about five of them, in units of `unit` (1 for counts
/// and nanoseconds; 2^20 for bytes, whose labels are in MiB).
pub(crate) fn linear(lo: f64, hi: f64, unit: f64) -> Vec<f64> {
    let span = (hi - lo) / unit;
    if !(span.is_finite() && span > 0.0) {
        return vec![lo];
    }
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = mag
        * match raw / mag {
            n if n < 1.5 => 1.0,
            n if n < 3.5 => 2.0,
            n if n < 7.5 => 5.0,
            _ => 10.0,
        };
    let first = (lo / unit / step).ceil() as i64;
    let last = (hi / unit / step).floor() as i64;
    (first..=last).map(|k| k as f64 * step * unit).collect()
}

/// The decades from `lo` to `hi`; with fewer than three, the 2s and 5s between them too.
pub(crate) fn log(lo: f64, hi: f64) -> Vec<f64> {
    if !(lo > 0.0 && hi > lo) {
        return vec![lo];
    }
    let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let within = |v: &f64| *v >= lo * 0.999 && *v <= hi * 1.001;
    let decades: Vec<f64> = (a..=b).map(|e| 10f64.powi(e)).filter(within).collect();
    if decades.len() >= 3 {
        return decades;
    }
    (a..=b)
        .flat_map(|e| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(e)))
        .filter(within)
        .collect()
}

/// The range of a logarithmic axis over values from `lo` to `hi`: whole decades around them.
pub(crate) fn log_range(lo: f64, hi: f64) -> (f64, f64) {
    let a = 10f64.powf(lo.log10().floor());
    let b = 10f64.powf(hi.log10().ceil());
    (a, if b > a { b } else { a * 10.0 })
}

/// A tick's label without trailing zeros in its number: `50.0 MiB/s` reads `50 MiB/s`,
/// `2.50 ms` reads `2.5 ms`, `1.00 µs` reads `1 µs`.
pub(crate) fn tidy(label: String) -> String {
    let end = label
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .unwrap_or(label.len());
    let (num, rest) = label.split_at(end);
    if !num.contains('.') {
        return label;
    }
    format!("{}{rest}", num.trim_end_matches('0').trim_end_matches('.'))
}

/// A size as a person reads it on an axis: `4 KiB`, `256 MiB`, `1.5 GiB`.
pub fn size_label(bytes: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        let u = 1u64 << shift;
        if bytes >= u {
            return if bytes.is_multiple_of(u) {
                format!("{} {unit}", bytes >> shift)
            } else {
                tidy(format!("{:.1} {unit}", bytes as f64 / u as f64))
            };
        }
    }
    format!("{bytes} B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bandwidth_ticks_are_round_mib() {
        let mib = f64::from(1u32 << 20);
        let t = linear(0.0, 300.0 * 1.08 * mib, mib);
        let labels: Vec<String> = t
            .iter()
            .map(|v| tidy(stormark_stats::format_bw(*v)))
            .collect();
        assert_eq!(
            labels,
            [
                "0 MiB/s",
                "50 MiB/s",
                "100 MiB/s",
                "150 MiB/s",
                "200 MiB/s",
                "250 MiB/s",
                "300 MiB/s"
            ]
        );
        assert_eq!(linear(0.0, 9.0, 1.0), [0.0, 2.0, 4.0, 6.0, 8.0]);
        assert_eq!(linear(3.0, 3.0, 1.0), [3.0]);
    }

    #[test]
    fn log_ticks_are_decades_or_their_twos_and_fives() {
        assert_eq!(log(1e3, 1e6), [1e3, 1e4, 1e5, 1e6]);
        assert_eq!(log(10.0, 100.0), [10.0, 20.0, 50.0, 100.0]);
        assert_eq!(log_range(1500.0, 820_000.0), (1000.0, 1e6));
        assert_eq!(log_range(1000.0, 1000.0), (1000.0, 1e4));
    }

    #[test]
    fn labels_lose_trailing_zeros_and_sizes_read_in_binary_units() {
        assert_eq!(tidy("50.0 MiB/s".into()), "50 MiB/s");
        assert_eq!(tidy("2.50 ms".into()), "2.5 ms");
        assert_eq!(tidy("1.00 µs".into()), "1 µs");
        assert_eq!(tidy("40.0k".into()), "40k");
        assert_eq!(tidy("120".into()), "120");
        assert_eq!(size_label(4096), "4 KiB");
        assert_eq!(size_label(268_435_456), "256 MiB");
        assert_eq!(size_label(3 << 29), "1.5 GiB");
        assert_eq!(size_label(512), "512 B");
    }
}
