//! What the load-shaping options ask for: `--target-latency p99<=2ms`, `--curve 10,50,90`,
//! `--sweep bs=4k,64k` and `--steady-state iops:2%:30s`.

use std::time::Duration;

use crate::expect::{parse_stat, LatencyStat};
use crate::units::{parse_duration, parse_size};
use crate::SpecError;

/// What `--target-latency` accepts, for error messages.
pub const TARGET_LATENCY_FORM: &str =
    "[OP:]STAT<=DURATION such as p99<=2ms, several joined by commas \
(p99<=2ms,p50<=500us); STAT is mean, p50, p90, p99, p99.9, p99.99 or max; OP (read, write, sync, \
get, put, head, delete, list) limits one operation's latency, such as sync:p99<=5ms";

/// The operations a latency target may name (`sync:p99<=5ms`): the names of `by_op`.
pub const TARGET_OPS: &[&str] = &[
    "read", "write", "sync", "get", "put", "head", "delete", "list",
];

/// One latency limit the search must meet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LatencyTarget {
    /// The operation whose latency is limited (`sync` for a database's commits); `None` for
    /// every operation together.
    pub op: Option<&'static str>,
    /// Which statistic.
    pub stat: LatencyStat,
    /// Its limit, ns.
    pub limit_ns: u64,
}

/// Parses `--target-latency`: `p99<=2ms`, `p99<2ms` and `p99=2ms` mean the same (at most).
pub fn parse_target_latency(text: &str) -> Result<Vec<LatencyTarget>, SpecError> {
    let bad = |why: String| SpecError::invalid("--target-latency", text, why);
    let mut out: Vec<LatencyTarget> = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, value) = part
            .split_once("<=")
            .or_else(|| part.split_once('<'))
            .or_else(|| part.split_once('='))
            .ok_or_else(|| bad(TARGET_LATENCY_FORM.into()))?;
        let name = name.trim().to_ascii_lowercase();
        let (op, name) = match name.split_once(':') {
            Some((op, stat)) => {
                let op = TARGET_OPS
                    .iter()
                    .find(|o| **o == op.trim())
                    .ok_or_else(|| {
                        bad(format!(
                            "an operation instead of {op:?}; {TARGET_LATENCY_FORM}"
                        ))
                    })?;
                (Some(*op), stat.trim().to_string())
            }
            None => (None, name),
        };
        let stat = parse_stat(&name)
            .filter(|s| *s != LatencyStat::Min)
            .ok_or_else(|| {
                bad(format!(
                    "a latency statistic instead of {name:?}; {TARGET_LATENCY_FORM}"
                ))
            })?;
        let value = value.trim();
        // A bare number would silently mean seconds: ask for the unit.
        let limit = (!value.is_empty() && !value.chars().all(|c| c.is_ascii_digit() || c == '.'))
            .then(|| parse_duration(value))
            .flatten()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                SpecError::invalid(
                    "--target-latency",
                    part,
                    "a duration with its unit, such as 2ms or 500us",
                )
            })?;
        if out.iter().any(|t| t.stat == stat && t.op == op) {
            return Err(bad(format!("each statistic once; {name} is given twice")));
        }
        out.push(LatencyTarget {
            op,
            stat,
            limit_ns: limit.as_nanos().min(u128::from(u64::MAX)) as u64,
        });
    }
    if out.is_empty() {
        return Err(bad(TARGET_LATENCY_FORM.into()));
    }
    Ok(out)
}

/// What `--curve` accepts, for error messages.
pub const CURVE_FORM: &str =
    "percentages of the maximum throughput from 1 to 100, such as 10,30,50,70,90,100";

/// Parses `--curve`: percentages of the maximum, each once, returned in rising order.
pub fn parse_curve(text: &str) -> Result<Vec<u8>, SpecError> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let p = part
            .strip_suffix('%')
            .unwrap_or(part)
            .trim()
            .parse::<u8>()
            .ok()
            .filter(|p| (1..=100).contains(p))
            .ok_or_else(|| SpecError::invalid("--curve", text, CURVE_FORM))?;
        if out.contains(&p) {
            return Err(SpecError::invalid(
                "--curve",
                text,
                format!("each percentage once; {p} is given twice"),
            ));
        }
        out.push(p);
    }
    if out.is_empty() {
        return Err(SpecError::invalid("--curve", text, CURVE_FORM));
    }
    out.sort_unstable();
    Ok(out)
}

/// A parameter `--sweep` varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepKey {
    /// Block size.
    Bs,
    /// Bytes per file.
    Size,
    /// Workers (fio's numjobs).
    Jobs,
    /// A net job's streams (its workers, named as iperf3's users name them).
    Streams,
    /// I/Os in flight per worker.
    Iodepth,
    /// Agents of a distributed run (the first N given).
    Agents,
    /// Bytes per object of an S3 job.
    ObjSize,
}

impl SweepKey {
    /// The job-file key.
    pub fn name(&self) -> &'static str {
        match self {
            SweepKey::Bs => "bs",
            SweepKey::Size => "size",
            SweepKey::Jobs => "jobs",
            SweepKey::Streams => "streams",
            SweepKey::Iodepth => "iodepth",
            SweepKey::Agents => "agents",
            SweepKey::ObjSize => "obj-size",
        }
    }
}

/// One `--sweep KEY=V1,V2,...`: the values in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sweep {
    /// What varies.
    pub key: SweepKey,
    /// Its values: bytes for `bs`, `size` and `obj-size`, counts for `jobs` and `iodepth`.
    pub values: Vec<u64>,
}

/// What `--sweep` accepts, for error messages.
pub const SWEEP_FORM: &str = "KEY=V1,V2,... with KEY bs, size, jobs, iodepth, agents, or for S3 \
obj-size and concurrency, for net streams, such as bs=4k,64k,1m or jobs=1,2,4,8";

/// Parses one `--sweep`.
pub fn parse_sweep(text: &str) -> Result<Sweep, SpecError> {
    let bad = |why: String| SpecError::invalid("--sweep", text, why);
    let (key, list) = text.split_once('=').ok_or_else(|| bad(SWEEP_FORM.into()))?;
    let key = match key.trim().to_ascii_lowercase().as_str() {
        "bs" | "blocksize" => SweepKey::Bs,
        "size" => SweepKey::Size,
        "jobs" | "numjobs" | "concurrency" => SweepKey::Jobs,
        "streams" => SweepKey::Streams,
        "iodepth" => SweepKey::Iodepth,
        "agents" | "hosts" => SweepKey::Agents,
        "obj-size" | "obj_size" | "objsize" | "object-size" => SweepKey::ObjSize,
        other => {
            return Err(bad(format!(
                "a sweepable key instead of {other:?}; {SWEEP_FORM}"
            )))
        }
    };
    let mut values = Vec::new();
    for v in list.split(',').map(str::trim).filter(|v| !v.is_empty()) {
        let parsed = match key {
            SweepKey::Bs | SweepKey::Size => parse_size(v).filter(|b| *b > 0),
            SweepKey::ObjSize => parse_size(v).filter(|b| (1..=5 << 30).contains(b)),
            SweepKey::Jobs | SweepKey::Agents => {
                v.parse::<u64>().ok().filter(|n| (1..=4096).contains(n))
            }
            SweepKey::Streams => v
                .parse::<u64>()
                .ok()
                .filter(|n| (1..=u64::from(crate::net::MAX_STREAMS)).contains(n)),
            SweepKey::Iodepth => v.parse::<u64>().ok().filter(|n| (1..=65536).contains(n)),
        };
        let parsed = parsed.ok_or_else(|| {
            let form = match key {
                SweepKey::Bs | SweepKey::Size => "sizes such as 4k, 64k, 1m",
                SweepKey::ObjSize => "sizes from 1 byte to 5g, such as 4k, 64k, 1m",
                SweepKey::Jobs | SweepKey::Agents => "whole numbers from 1 to 4096",
                SweepKey::Streams => "whole numbers from 1 to 128",
                SweepKey::Iodepth => "whole numbers from 1 to 65536",
            };
            SpecError::invalid("--sweep", text, format!("{} values as {form}", key.name()))
        })?;
        if values.contains(&parsed) {
            return Err(bad(format!("each value once; {v} is given twice")));
        }
        values.push(parsed);
    }
    if values.is_empty() {
        return Err(bad(SWEEP_FORM.into()));
    }
    Ok(Sweep { key, values })
}

/// What `--steady-state` watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SteadyFigure {
    /// I/Os per second.
    Iops,
    /// Bytes per second.
    Bw,
    /// Mean latency.
    Lat,
}

/// `--steady-state iops:2%:30s`: the ramp ends once every second of the last `window` lies
/// within `band` of their mean (fio's `ss=iops:2%`, `ss_dur=30s`, measured once a second).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SteadyState {
    /// The figure watched.
    pub figure: SteadyFigure,
    /// Largest allowed deviation from the window's mean, as a fraction (0.02 for 2%).
    pub band: f64,
    /// How long the figure must hold, whole seconds.
    pub window: Duration,
    /// Judge the window's slope (its least-squares line, per second, against the band times
    /// its mean) rather than each second's deviation (fio's `iops_slope`).
    pub slope: bool,
}

impl std::fmt::Display for SteadyState {
    /// As `--steady-state` takes it: `iops:2%:30s`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let figure = match self.figure {
            SteadyFigure::Iops => "iops",
            SteadyFigure::Bw => "bw",
            SteadyFigure::Lat => "lat",
        };
        let slope = if self.slope { "_slope" } else { "" };
        write!(
            f,
            "{figure}{slope}:{}%:{}s",
            self.band * 100.0,
            self.window.as_secs()
        )
    }
}

/// What `--steady-state` accepts, for error messages.
pub const STEADY_FORM: &str =
    "FIGURE:BAND%:WINDOW such as iops:2%:30s (FIGURE iops, bw or lat, or \
iops_slope, bw_slope or lat_slope for the window's slope; BAND above 0 and at most 50%; WINDOW \
whole seconds from 2s to 1h)";

/// Parses `--steady-state`.
pub fn parse_steady_state(text: &str) -> Result<SteadyState, SpecError> {
    let bad = || SpecError::invalid("--steady-state", text, STEADY_FORM);
    let mut parts = text.split(':').map(str::trim);
    let (Some(fig), Some(band), Some(window), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad());
    };
    let fig = fig.to_ascii_lowercase();
    let (fig, slope) = match fig.strip_suffix("_slope") {
        Some(f) => (f, true),
        None => (fig.as_str(), false),
    };
    let figure = match fig {
        "iops" => SteadyFigure::Iops,
        "bw" => SteadyFigure::Bw,
        "lat" | "latency" => SteadyFigure::Lat,
        _ => return Err(bad()),
    };
    let band = band
        .strip_suffix('%')
        .and_then(|b| b.trim().parse::<f64>().ok())
        .filter(|b| *b > 0.0 && *b <= 50.0)
        .ok_or_else(bad)?
        / 100.0;
    let window = parse_duration(window)
        .filter(|w| w.subsec_nanos() == 0 && (2..=3600).contains(&w.as_secs()))
        .ok_or_else(bad)?;
    Ok(SteadyState {
        figure,
        band,
        window,
        slope,
    })
}

/// Changes to a stage's load for one run of it: a search step, a curve point, a sweep point.
/// `None` keeps what the workload says. The stage was validated (and its files made) for the
/// most any run of it asks: `jobs` and `size` may only shrink, `bs` may not exceed the file.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StageLoad {
    /// Workers per job: the first this many of those validated.
    pub jobs: Option<u32>,
    /// I/Os in flight per worker.
    pub iodepth: Option<u32>,
    /// Open loop: total I/Os per second over every worker and host of each job.
    pub rate_iops: Option<f64>,
    /// Block size, bytes (a fixed size; alignment follows it, as fio's `blockalign`).
    pub bs: Option<u64>,
    /// Bytes of each file (or of the device) used, from the start.
    pub size: Option<u64>,
    /// Meta jobs: the one operation of this phase (each operation is a phase of its own, as
    /// in mdtest); `None`: every operation of the job in turn.
    pub meta_op: Option<crate::meta::MetaOp>,
    /// Meta jobs: before the phase, each worker's files made up to this many, untimed (the
    /// wear-out after a create phase its time cut).
    pub meta_items: Option<u64>,
}

impl StageLoad {
    /// The load of the workload as given.
    pub const AS_GIVEN: StageLoad = StageLoad {
        jobs: None,
        iodepth: None,
        rate_iops: None,
        bs: None,
        size: None,
        meta_op: None,
        meta_items: None,
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn target_latency_forms() {
        let t = parse_target_latency("p99<=2ms").unwrap();
        assert_eq!(
            t,
            vec![LatencyTarget {
                op: None,
                stat: LatencyStat::P99,
                limit_ns: 2_000_000
            }]
        );
        let t = parse_target_latency("sync:p99<=5ms,p50<=1ms").unwrap();
        assert_eq!(t[0].op, Some("sync"));
        assert_eq!(t[0].limit_ns, 5_000_000);
        assert_eq!(t[1].op, None);
        assert!(parse_target_latency("fsync:p99<=5ms").is_err());
        let t = parse_target_latency("p99 < 2ms, mean=500us,p99.9<=10ms").unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!(t[1].stat, LatencyStat::Mean);
        assert_eq!(t[1].limit_ns, 500_000);
        assert_eq!(t[2].stat, LatencyStat::P999);
        for bad in [
            "",
            "p99",
            "p99<=2",
            "p99<=",
            "p99<=0ms",
            "min<=1ms",
            "p42<=1ms",
            "p99<=2ms,p99<=3ms",
            "iops<=5",
        ] {
            let e = parse_target_latency(bad).unwrap_err().to_string();
            assert!(e.starts_with("--target-latency"), "{bad}: {e}");
        }
    }

    #[test]
    fn curve_forms() {
        assert_eq!(parse_curve("90,10,50%").unwrap(), vec![10, 50, 90]);
        for bad in ["", "0", "101", "ten", "10,10", "-5"] {
            assert!(parse_curve(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sweep_forms() {
        let s = parse_sweep("bs=4k,16k,1m").unwrap();
        assert_eq!(s.key, SweepKey::Bs);
        assert_eq!(s.values, vec![4096, 16384, 1 << 20]);
        assert_eq!(parse_sweep("jobs=1,2,4").unwrap().values, vec![1, 2, 4]);
        assert_eq!(parse_sweep("numjobs=8").unwrap().key, SweepKey::Jobs);
        assert_eq!(parse_sweep("size=1g").unwrap().values, vec![1 << 30]);
        assert_eq!(parse_sweep("agents=1,2,4").unwrap().key, SweepKey::Agents);
        let o = parse_sweep("obj-size=4k,1m").unwrap();
        assert_eq!((o.key, o.values), (SweepKey::ObjSize, vec![4096, 1 << 20]));
        assert_eq!(parse_sweep("concurrency=8,32").unwrap().key, SweepKey::Jobs);
        for bad in [
            "",
            "bs",
            "bs=",
            "bs=4x",
            "jobs=0",
            "jobs=1.5",
            "rw=read",
            "bs=4k,4k",
            "agents=0",
            "obj-size=0",
            "obj-size=6g",
        ] {
            let e = parse_sweep(bad).unwrap_err().to_string();
            assert!(e.starts_with("--sweep"), "{bad}: {e}");
        }
    }

    #[test]
    fn steady_state_forms() {
        let s = parse_steady_state("iops:2%:30s").unwrap();
        assert_eq!(s.figure, SteadyFigure::Iops);
        assert!((s.band - 0.02).abs() < 1e-12);
        assert_eq!(s.window, Duration::from_secs(30));
        assert_eq!(s.to_string(), "iops:2%:30s");
        assert_eq!(parse_steady_state(&s.to_string()).unwrap(), s);
        assert_eq!(
            parse_steady_state("lat:0.5%:1m").unwrap().figure,
            SteadyFigure::Lat
        );
        for bad in [
            "",
            "iops",
            "iops:2%",
            "iops:2:30s",
            "iops:0%:30s",
            "iops:60%:30s",
            "iops:2%:1s",
            "iops:2%:1.5s",
            "cpu:2%:30s",
            "iops:2%:30s:x",
        ] {
            assert!(parse_steady_state(bad).is_err(), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn parsers_never_panic(s in ".{0,40}") {
            let _ = parse_target_latency(&s);
            let _ = parse_curve(&s);
            let _ = parse_sweep(&s);
            let _ = parse_steady_state(&s);
        }

        #[test]
        fn target_round_trips(us in 1u64..10_000_000) {
            let t = parse_target_latency(&format!("p99<={us}us")).unwrap();
            prop_assert_eq!(t[0].limit_ns, us * 1000);
        }
    }
}
