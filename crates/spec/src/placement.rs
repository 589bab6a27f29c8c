//! Where a job's workers run: fio's lists of CPUs and NUMA nodes (`cpus_allowed`,
//! `numa_cpu_nodes`) and memory policies (`numa_mem_policy`), as written and read back.

/// A list of CPU or NUMA node numbers, as fio and `taskset` write it (`0-3,8,10-11`): sorted,
/// each once, every number below [`CpuList::LIMIT`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CpuList(pub Vec<u16>);

impl CpuList {
    /// Numbers above this are not taken (the kernel's usual `CPU_SETSIZE`).
    pub const LIMIT: u16 = 1024;
    /// The accepted form.
    pub const FORM: &'static str =
        "numbers and ranges below 1024, as taskset writes them, such as 0-3,8,10-11";

    /// `0-3,8,10-11`.
    pub fn parse(text: &str) -> Option<CpuList> {
        let mut out = Vec::new();
        for part in text.trim().split(',') {
            let part = part.trim();
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (a.trim().parse::<u16>().ok()?, b.trim().parse::<u16>().ok()?),
                None => {
                    let n = part.parse::<u16>().ok()?;
                    (n, n)
                }
            };
            if lo > hi || hi >= Self::LIMIT {
                return None;
            }
            out.extend(lo..=hi);
        }
        out.sort_unstable();
        out.dedup();
        Some(CpuList(out))
    }

    /// fio's `cpumask`: a hexadecimal (`0xf`) or decimal mask of CPUs.
    pub fn from_mask(text: &str) -> Option<CpuList> {
        let t = text.trim();
        let mask = match t.strip_prefix("0x").or(t.strip_prefix("0X")) {
            Some(hex) => u128::from_str_radix(hex, 16).ok()?,
            None => t.parse::<u128>().ok()?,
        };
        let cpus: Vec<u16> = (0..128u16).filter(|i| mask >> i & 1 == 1).collect();
        (!cpus.is_empty()).then_some(CpuList(cpus))
    }

    /// As it is written back: ranges joined (`0-3,8`).
    pub fn text(&self) -> String {
        let mut parts = Vec::new();
        let mut i = 0;
        while i < self.0.len() {
            let start = self.0[i];
            let mut end = start;
            while i + 1 < self.0.len() && self.0[i + 1] == end + 1 {
                i += 1;
                end = self.0[i];
            }
            parts.push(if start == end {
                start.to_string()
            } else {
                format!("{start}-{end}")
            });
            i += 1;
        }
        parts.join(",")
    }
}

/// Where a worker's memory comes from (fio's `numa_mem_policy`, the kernel's `set_mempolicy`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemPolicy {
    /// The system's default.
    Default,
    /// Prefer this node, fall back to others.
    Prefer(u16),
    /// Only these nodes.
    Bind(CpuList),
    /// Pages spread over these nodes in turn.
    Interleave(CpuList),
    /// The node of the CPU that allocates.
    Local,
}

impl MemPolicy {
    /// The accepted form.
    pub const FORM: &'static str =
        "default, local, prefer:NODE, bind:NODES or interleave:NODES, such as bind:0 or interleave:0-1";

    /// fio's forms.
    pub fn parse(text: &str) -> Option<MemPolicy> {
        let t = text.trim();
        let (mode, nodes) = match t.split_once(':') {
            Some((m, n)) => (m.trim(), Some(n)),
            None => (t, None),
        };
        match (mode, nodes) {
            ("default", None) => Some(MemPolicy::Default),
            ("local", None) => Some(MemPolicy::Local),
            ("prefer", Some(n)) => Some(MemPolicy::Prefer(
                n.trim().parse().ok().filter(|n| *n < CpuList::LIMIT)?,
            )),
            ("bind", Some(n)) => Some(MemPolicy::Bind(CpuList::parse(n)?)),
            ("interleave", Some(n)) => Some(MemPolicy::Interleave(CpuList::parse(n)?)),
            _ => None,
        }
    }

    /// As fio writes it.
    pub fn text(&self) -> String {
        match self {
            MemPolicy::Default => "default".into(),
            MemPolicy::Local => "local".into(),
            MemPolicy::Prefer(n) => format!("prefer:{n}"),
            MemPolicy::Bind(l) => format!("bind:{}", l.text()),
            MemPolicy::Interleave(l) => format!("interleave:{}", l.text()),
        }
    }

    /// The nodes it names.
    pub fn nodes(&self) -> Vec<u16> {
        match self {
            MemPolicy::Default | MemPolicy::Local => Vec::new(),
            MemPolicy::Prefer(n) => vec![*n],
            MemPolicy::Bind(l) | MemPolicy::Interleave(l) => l.0.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::choices::{Distribution, ExitWhat, MAX_SEQUENCE};
    use proptest::prelude::*;

    proptest! {
        /// fio's CPU lists, memory policies and sequences: any text never panics, and what
        /// is printed reads back the same.
        #[test]
        fn cpu_lists_policies_and_sequences_round_trip(
            cpus in proptest::collection::btree_set(0u16..1024, 1..40),
            text in "[0-9,:a-z-]{0,24}",
        ) {
            let list = CpuList(cpus.into_iter().collect());
            prop_assert_eq!(CpuList::parse(&list.text()), Some(list.clone()));
            for p in [MemPolicy::Bind(list.clone()), MemPolicy::Interleave(list.clone()), MemPolicy::Prefer(list.0[0]), MemPolicy::Local] {
                prop_assert_eq!(MemPolicy::parse(&p.text()), Some(p.clone()));
            }
            let seq = format!("sequence:{}", list.0.iter().take(MAX_SEQUENCE).map(u16::to_string).collect::<Vec<_>>().join(","));
            let d = Distribution::parse(&seq).unwrap();
            prop_assert_eq!(d.name(), seq);
            let _ = CpuList::parse(&text);
            let _ = CpuList::from_mask(&text);
            let _ = MemPolicy::parse(&text);
            let _ = Distribution::parse(&format!("sequence:{text}"));
            let _ = ExitWhat::parse(&text);
        }
    }
}
