//! Human units for figures.

/// A latency in the unit that keeps three significant digits: `850 ns`, `85.3 µs`, `1.23 ms`,
/// `2.50 s`.
pub fn format_latency(ns: u64) -> String {
    let v = ns as f64;
    let (value, unit) = if ns < 1_000 {
        return format!("{ns} ns");
    } else if ns < 1_000_000 {
        (v / 1e3, "µs")
    } else if ns < 1_000_000_000 {
        (v / 1e6, "ms")
    } else {
        (v / 1e9, "s")
    };
    three_digits(value, unit)
}

fn three_digits(value: f64, unit: &str) -> String {
    if value >= 100.0 {
        format!("{value:.0} {unit}")
    } else if value >= 10.0 {
        format!("{value:.1} {unit}")
    } else {
        format!("{value:.2} {unit}")
    }
}

/// Operations per second: `950`, `12.3k`, `1.20M`.
pub fn format_iops(iops: f64) -> String {
    if iops < 1_000.0 {
        format!("{iops:.0}")
    } else if iops < 1e6 {
        three_digits(iops / 1e3, "k").replace(' ', "")
    } else {
        three_digits(iops / 1e6, "M").replace(' ', "")
    }
}

/// Bytes per second in MiB/s (the unit fio reports), or GiB/s above 10 GiB/s.
pub fn format_bw(bytes_per_s: f64) -> String {
    let mib = bytes_per_s / (1024.0 * 1024.0);
    if mib >= 10_240.0 {
        format!("{:.1} GiB/s", mib / 1024.0)
    } else if mib >= 100.0 {
        format!("{mib:.0} MiB/s")
    } else {
        format!("{mib:.1} MiB/s")
    }
}

/// A figure of the results document by its key (`iops`, `bw_bytes_per_s`, `p99_ns`, ...), in
/// the unit that suits it.
pub fn format_figure(key: &str, value: f64) -> String {
    match key {
        "iops" => format_iops(value),
        "bw_bytes_per_s" => format_bw(value),
        k if k.ends_with("_ns") => format_latency(value.max(0.0).round() as u64),
        _ => format!("{value:.3}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(format_latency(850), "850 ns");
        assert_eq!(format_latency(85_300), "85.3 µs");
        assert_eq!(format_latency(1_234_567), "1.23 ms");
        assert_eq!(format_latency(123_456_789), "123 ms");
        assert_eq!(format_latency(2_500_000_000), "2.50 s");
        assert_eq!(format_iops(950.4), "950");
        assert_eq!(format_iops(12_345.0), "12.3k");
        assert_eq!(format_iops(1_200_000.0), "1.20M");
        assert_eq!(format_bw(512.0 * 1048576.0), "512 MiB/s");
        assert_eq!(format_bw(1.5 * 1048576.0), "1.5 MiB/s");
        assert_eq!(format_bw(20.0 * 1024.0 * 1048576.0), "20.0 GiB/s");
        assert_eq!(format_figure("iops", 90_000.0), "90.0k");
        assert_eq!(format_figure("p99_ns", 2e6), "2.00 ms");
        assert_eq!(
            format_figure("bw_bytes_per_s", 1048576.0 * 500.0),
            "500 MiB/s"
        );
        assert_eq!(format_figure("ratio", 0.5), "0.500");
    }
}
