//! The keys of how a job's workers run beside their I/O: fio's least rates (`ratemin`),
//! exits (`exitall`), flows, CPUs, memory nodes and priorities.

use std::time::Duration;

use super::JobOpts;
use crate::units::{parse_bool, parse_duration, parse_size, BOOL_FORM};
use crate::SpecError;

impl JobOpts {
    /// The keys of how a job's workers run beside their I/O: fio's least rates, exits, flows,
    /// CPUs and memory nodes; `false` for another key.
    pub(super) fn set_run_key(
        &mut self,
        canonical: &str,
        value: &str,
        bad: &dyn Fn(&str) -> SpecError,
        count: &dyn Fn(u32) -> Result<u32, SpecError>,
    ) -> Result<bool, SpecError> {
        match canonical {
            "hosts" => {
                self.hosts = Some(crate::OnHosts::parse(value).ok_or_else(|| bad(crate::OnHosts::FORM))?)
            }
            "rate_min" | "rate_iops_min" => {
                let pair = per_direction(value, canonical == "rate_min")
                    .ok_or_else(|| bad(RATE_MIN_FORM))?;
                if canonical == "rate_min" {
                    self.rate_min = Some(pair);
                } else {
                    self.rate_iops_min = Some(pair);
                }
            }
            "exitall" => self.exitall = Some(parse_bool(value).ok_or_else(|| bad(BOOL_FORM))?),
            "serialize_overlap" => {
                self.serialize_overlap = Some(parse_bool(value).ok_or_else(|| bad(BOOL_FORM))?)
            }
            "exitall_on_error" => {
                self.exitall_on_error = Some(parse_bool(value).ok_or_else(|| bad(BOOL_FORM))?)
            }
            "pin_cache" => {
                self.pin_cache = Some(parse_bool(value).ok_or_else(|| bad(BOOL_FORM))?)
            }
            "ignore_errors" => {
                self.ignore_errors = Some(
                    value
                        .split([',', ':'])
                        .map(str::trim)
                        .filter(|k| !k.is_empty())
                        .map(error_kind)
                        .collect::<Option<Vec<String>>>()
                        .filter(|l| !l.is_empty() && l.len() <= 64)
                        .ok_or_else(|| bad(IGNORE_FORM))?,
                )
            }
            "nice" => {
                self.nice = Some(
                    value
                        .trim()
                        .parse::<i8>()
                        .ok()
                        .filter(|n| (-20..=19).contains(n))
                        .ok_or_else(|| bad("a whole number from -20 to 19, as nice takes"))?,
                )
            }
            "prio" | "prioclass" | "cmdprio" | "cmdprio_class" => {
                let level = matches!(canonical, "prio" | "cmdprio");
                let n = io_priority(value, level).ok_or_else(|| {
                    bad(if level {
                        "an I/O priority level from 0 (highest) to 7, as ionice -n (R,W: one for reads and writes)"
                    } else {
                        "an I/O priority class: 1 (real time), 2 (best effort) or 3 (idle), as ionice -c (R,W: one for reads and writes)"
                    })
                })?;
                match canonical {
                    "prio" => self.prio = Some(n),
                    "prioclass" => self.prioclass = Some(n),
                    "cmdprio" => self.cmdprio = Some(n),
                    _ => self.cmdprio_class = Some(n),
                }
            }
            "cmdprio_hint" => {
                self.cmdprio_hint = Some(io_priority(value, true).ok_or_else(|| {
                    bad("a device hint from 0 (none) to 7, as fio's cmdprio_hint (a command duration limit's descriptor)")
                })?)
            }
            "cmdprio_bssplit" => {
                self.cmdprio_bssplit =
                    Some(crate::PrioSplit::parse(value).ok_or_else(|| bad(crate::PrioSplit::FORM))?)
            }
            "cmdprio_percentage" => {
                let pair = per_direction(value, false)
                    .filter(|p| p.iter().all(|n| *n <= 100))
                    .ok_or_else(|| bad("a percentage of the I/Os from 1 to 100, or R,W for reads and writes, such as 20"))?;
                self.cmdprio_percentage = Some(pair.map(|n| n as u8));
            }
            "flow" => self.flow = Some(count(1_000_000)?),
            "flow_id" => {
                self.flow_id = Some(
                    value
                        .trim()
                        .parse()
                        .map_err(|_| bad("a whole number, such as 0"))?,
                )
            }
            "flow_sleep" => {
                let d = match value.trim().parse::<u64>() {
                    Ok(us) => Some(Duration::from_micros(us)),
                    Err(_) => parse_duration(value),
                };
                self.flow_sleep = Some(
                    d.filter(|d| d.as_secs() <= 60)
                        .ok_or_else(|| bad("microseconds, or a duration with its unit, of at most 1m, such as 1000"))?,
                )
            }
            "cpus_allowed" | "numa_cpu_nodes" => {
                let list = crate::placement::CpuList::parse(value)
                    .ok_or_else(|| bad(crate::placement::CpuList::FORM))?;
                if canonical == "cpus_allowed" {
                    self.cpus_allowed = Some(list);
                } else {
                    self.numa_cpu_nodes = Some(list);
                }
            }
            "cpus_allowed_policy" => {
                self.cpus_split = Some(match value.trim() {
                    "shared" => false,
                    "split" => true,
                    _ => return Err(bad("shared (every worker on any of the CPUs) or split (each worker on one of them)")),
                })
            }
            "numa_mem_policy" => {
                self.numa_mem_policy = Some(
                    crate::placement::MemPolicy::parse(value)
                        .ok_or_else(|| bad(crate::placement::MemPolicy::FORM))?,
                )
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// The accepted form of `rate_min` and `rate_iops_min`.
const RATE_MIN_FORM: &str =
    "a least rate a second for reads and writes alike, or R,W for each (an empty side: none), such as 1m or 500,100";

/// fio's `ratemin=R,W` (sizes a second, `bytes`) or `rate_iops_min=R,W`: the least for reads
/// and for writes (0: none for that direction); one value is both.
fn per_direction(value: &str, bytes: bool) -> Option<[u64; 2]> {
    let one = |v: &str| -> Option<u64> {
        let v = v.trim();
        if v.is_empty() {
            return Some(0);
        }
        if bytes {
            parse_size(v)
        } else {
            v.parse().ok()
        }
    };
    let parts: Vec<&str> = value.split(',').collect();
    let pair = match parts.as_slice() {
        [both] => [one(both)?; 2],
        [r, w] => [one(r)?, one(w)?],
        _ => return None,
    };
    (pair.iter().any(|n| *n > 0) && pair.iter().all(|n| *n <= 1 << 50)).then_some(pair)
}

/// An I/O priority level (0 to 7) or class (1 to 3), alone or as fio's `R,W` with one value
/// for both.
fn io_priority(value: &str, level: bool) -> Option<u8> {
    let mut parts = value.split(',').map(str::trim);
    let first = parts.next()?;
    let n: u8 = first.parse().ok()?;
    let fits = if level { n <= 7 } else { (1..=3).contains(&n) };
    (fits && parts.all(|p| p == first)).then_some(n)
}

/// The accepted form of `ignore_errors`.
pub(crate) const IGNORE_FORM: &str = "error kinds as errno names or numbers, or stormark's names, separated by commas, such as ENOSPC,EIO or enospc,short";

/// errno names fio's `ignore_error` takes, with their numbers on Linux.
const ERRNO: &[(&str, i32)] = &[
    ("EPERM", 1),
    ("ENOENT", 2),
    ("EINTR", 4),
    ("EIO", 5),
    ("ENXIO", 6),
    ("EBADF", 9),
    ("EAGAIN", 11),
    ("ENOMEM", 12),
    ("EACCES", 13),
    ("EFAULT", 14),
    ("EBUSY", 16),
    ("EEXIST", 17),
    ("ENODEV", 19),
    ("EINVAL", 22),
    ("EFBIG", 27),
    ("ENOSPC", 28),
    ("EROFS", 30),
    ("ENODATA", 61),
    ("ETIME", 62),
    ("EOVERFLOW", 75),
    ("EILSEQ", 84),
    ("EOPNOTSUPP", 95),
    ("ENOTSUP", 95),
    ("ETIMEDOUT", 110),
    ("EREMOTEIO", 121),
    ("EDQUOT", 122),
    ("EMEDIUMTYPE", 124),
];

/// One error kind as the results name it (`enospc`, `eio`, `errno-61`, `short`, ...): from an
/// errno name or number, or that name itself.
pub(crate) fn error_kind(word: &str) -> Option<String> {
    let errno = match word.parse::<i32>() {
        Ok(n) if (1..4096).contains(&n) => Some(n),
        Ok(_) => return None,
        Err(_) => ERRNO
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(word))
            .map(|&(_, n)| n),
    };
    if let Some(n) = errno {
        return Some(match n {
            5 => "eio".into(),
            28 => "enospc".into(),
            22 => "einval".into(),
            n => format!("errno-{n}"),
        });
    }
    let w = word.to_ascii_lowercase();
    let named = matches!(
        w.as_str(),
        "eio"
            | "enospc"
            | "einval"
            | "short"
            | "throttled"
            | "timeout"
            | "reset"
            | "refused"
            | "network"
    ) || w
        .strip_prefix("errno-")
        .or_else(|| w.strip_prefix("http-"))
        .is_some_and(|n| n.parse::<u16>().is_ok())
        || crate::scsi::code_of(&w).is_some();
    named.then_some(w)
}
