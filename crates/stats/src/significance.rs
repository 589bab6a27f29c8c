//! Honest statistics for repeated measurements and comparisons: mean, standard deviation,
//! coefficient of variation and a 95% confidence interval (Student's t), and whether two sets
//! of measurements differ (Welch's t-test). One-second intervals of one run are not
//! independent, so their effective number is reduced by their lag-1 autocorrelation
//! (n_eff = n (1 - r1) / (1 + r1), the AR(1) correction of Wilks, "Statistical Methods in the
//! Atmospheric Sciences", §5.2.4).

use serde::{Deserialize, Serialize};

/// A figure over repetitions (or seconds): where it lies and how much it moves.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Describe {
    /// Number of values.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n - 1).
    pub sd: f64,
    /// sd / mean; 0 when the mean is 0.
    pub cv: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// 95% confidence interval of the mean, Student's t with n - 1 degrees of freedom; the
    /// mean itself when n < 2.
    pub ci95: (f64, f64),
}

/// Describes `values` (empty: all zeros).
pub fn describe(values: &[f64]) -> Describe {
    let n = values.len();
    if n == 0 {
        return Describe {
            n: 0,
            mean: 0.0,
            sd: 0.0,
            cv: 0.0,
            min: 0.0,
            max: 0.0,
            ci95: (0.0, 0.0),
        };
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let sd = if n > 1 {
        (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
    } else {
        0.0
    };
    let half = if n > 1 {
        t_quantile_975((n - 1) as f64) * sd / (n as f64).sqrt()
    } else {
        0.0
    };
    Describe {
        n,
        mean,
        sd,
        cv: if mean != 0.0 { sd / mean.abs() } else { 0.0 },
        min: values.iter().copied().fold(f64::INFINITY, f64::min),
        max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        ci95: (mean - half, mean + half),
    }
}

/// Lag-1 autocorrelation of a series (0 for fewer than 3 values or no variance).
pub fn lag1_autocorrelation(values: &[f64]) -> f64 {
    let n = values.len();
    if n < 3 {
        return 0.0;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let var: f64 = values.iter().map(|v| (v - mean).powi(2)).sum();
    if var == 0.0 {
        return 0.0;
    }
    let cov: f64 = values
        .windows(2)
        .map(|w| (w[0] - mean) * (w[1] - mean))
        .sum();
    (cov / var).clamp(-0.99, 0.99)
}

/// The number of independent values a series is worth given its lag-1 autocorrelation (never
/// more than n, at least 2 when n ≥ 2).
pub fn effective_n(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    let r1 = lag1_autocorrelation(values).max(0.0);
    (n * (1.0 - r1) / (1.0 + r1)).clamp(n.min(2.0), n)
}

/// Welch's two-sided t-test of the means of two samples, each summarised as (mean, sd, n);
/// returns the p-value. Identical constant samples give 1; different constant samples 0.
pub fn welch_p(a: (f64, f64, f64), b: (f64, f64, f64)) -> f64 {
    let ((ma, sa, na), (mb, sb, nb)) = (a, b);
    if na < 2.0 || nb < 2.0 {
        return if ma == mb { 1.0 } else { f64::NAN };
    }
    let va = sa * sa / na;
    let vb = sb * sb / nb;
    let se = (va + vb).sqrt();
    if se == 0.0 {
        return if ma == mb { 1.0 } else { 0.0 };
    }
    let t = (ma - mb) / se;
    let df = (va + vb).powi(2) / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    t_two_sided_p(t, df)
}

/// The standard error of the difference of two means, each summarised as (mean, sd, n), and
/// its Welch–Satterthwaite degrees of freedom; `None` with fewer than two values a side.
pub fn welch_se_df(a: (f64, f64, f64), b: (f64, f64, f64)) -> Option<(f64, f64)> {
    let ((_, sa, na), (_, sb, nb)) = (a, b);
    if na < 2.0 || nb < 2.0 {
        return None;
    }
    let va = sa * sa / na;
    let vb = sb * sb / nb;
    let se = (va + vb).sqrt();
    if se == 0.0 {
        return Some((0.0, f64::INFINITY));
    }
    let df = (va + vb).powi(2) / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    Some((se, df))
}

/// The 95% quantile of Student's t (a one-sided 95% bound), by bisection; exact to 1e-9.
pub fn t_quantile_95(df: f64) -> f64 {
    if !df.is_finite() {
        return 1.644_853_626_951_472_2;
    }
    let (mut lo, mut hi) = (0.0f64, 1000.0f64);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if t_two_sided_p(mid, df) > 0.10 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// Two-sided p-value of Student's t with `df` degrees of freedom:
/// I_{df/(df+t²)}(df/2, 1/2).
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return 0.0;
    }
    incomplete_beta(df / 2.0, 0.5, df / (df + t * t)).clamp(0.0, 1.0)
}

/// The 97.5% quantile of Student's t (for 95% two-sided intervals), by bisection on the
/// p-value; exact to 1e-9.
pub fn t_quantile_975(df: f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1000.0f64);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if t_two_sided_p(mid, df) > 0.05 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// The regularized incomplete beta function I_x(a, b) (Numerical Recipes, 3rd ed., §6.4:
/// continued fraction by the modified Lentz method).
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let front = ln_front.exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// ln Γ(x) for x > 0 (Lanczos approximation, g = 7, n = 9; relative error < 1e-15).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1-x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = G[0];
    for (i, g) in G.iter().enumerate().skip(1) {
        sum += g / (x + i as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn known_values() {
        // Γ(5) = 24, Γ(0.5) = √π.
        assert!(close(ln_gamma(5.0), 24f64.ln(), 1e-12));
        assert!(close(
            ln_gamma(0.5),
            std::f64::consts::PI.sqrt().ln(),
            1e-12
        ));
        // Student's t quantiles (tables): df 1 -> 12.706, 7 -> 2.365, 30 -> 2.042, 1e6 -> 1.960.
        assert!(close(t_quantile_975(1.0), 12.7062, 1e-3));
        assert!(close(t_quantile_975(7.0), 2.3646, 1e-3));
        assert!(close(t_quantile_975(30.0), 2.0423, 1e-3));
        assert!(close(t_quantile_975(1e6), 1.95996, 1e-3));
        // Two-sided p of t = 2.0 with 10 df is 0.07339.
        assert!(close(t_two_sided_p(2.0, 10.0), 0.07339, 1e-4));
        assert!(close(t_two_sided_p(0.0, 10.0), 1.0, 1e-12));
    }

    #[test]
    fn describe_matches_hand_computation() {
        let d = describe(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!((d.n, d.mean, d.min, d.max), (8, 5.0, 2.0, 9.0));
        // Sample sd = sqrt(32 / 7) = 2.13809.
        assert!(close(d.sd, (32.0f64 / 7.0).sqrt(), 1e-12));
        assert!(close(d.cv, d.sd / 5.0, 1e-12));
        // Half-width = t(0.975, 7) * sd / sqrt(8) = 2.3646 * 2.13809 / 2.82843 = 1.78748.
        assert!(close(d.ci95.1 - d.mean, 1.78748, 1e-3));
        assert_eq!(describe(&[3.0]).ci95, (3.0, 3.0));
        assert_eq!(describe(&[]).n, 0);
    }

    #[test]
    fn welch_on_known_samples() {
        // Two samples with means 20 and 22, sd 2 and 2.5, n 10 each:
        // t = -2 / sqrt(0.4 + 0.625) = -1.9755, df = 17.17, two-sided p = 0.0645.
        let p = welch_p((20.0, 2.0, 10.0), (22.0, 2.5, 10.0));
        assert!(close(p, 0.0645, 2e-3), "{p}");
        assert_eq!(welch_p((5.0, 0.0, 5.0), (5.0, 0.0, 5.0)), 1.0);
        assert_eq!(welch_p((5.0, 0.0, 5.0), (4.0, 0.0, 5.0)), 0.0);
    }

    #[test]
    fn autocorrelated_series_count_for_less() {
        let white = [1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0];
        assert!(lag1_autocorrelation(&white) < 0.0);
        assert_eq!(effective_n(&white), 8.0);
        let trend: Vec<f64> = (0..20).map(|i| i as f64).collect();
        let r1 = lag1_autocorrelation(&trend);
        assert!(r1 > 0.8, "{r1}");
        assert!(effective_n(&trend) < 3.0);
        assert_eq!(effective_n(&[5.0; 10]), 10.0);
    }
}
