//! Where a job's workers run and at what priority: fio's lists of CPUs and NUMA nodes
//! (`cpus_allowed`, `numa_cpu_nodes`), memory policies (`numa_mem_policy`) and per-I/O
//! priorities (`cmdprio_*`), as written and read back.

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

/// fio's per-I/O priorities: a share of reads and of writes (`cmdprio_percentage`), or of
/// each block size's (`cmdprio_bssplit`), submitted with a priority of its own (io_uring's
/// per-submission `ioprio`) and counted as `read-prio` and `write-prio`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CmdPrio {
    /// Shares of reads and of writes, percent (unused with `split`).
    pub share: [u8; 2],
    /// Class: 1 real time, 2 best effort, 3 idle.
    pub class: u8,
    /// Level, 0 (highest) to 7.
    pub level: u8,
    /// The device's hint, 0 (none) to 7 (fio's `cmdprio_hint`: a command duration limit's
    /// descriptor on a drive that has them).
    pub hint: u8,
    /// Shares by block size, each with its own priority or the one above (`cmdprio_bssplit`).
    pub split: Option<PrioSplit>,
}

impl CmdPrio {
    /// The value the kernel takes for a class, level and hint (`IOPRIO_PRIO_VALUE_HINT`).
    pub fn value(class: u8, level: u8, hint: u8) -> u16 {
        u16::from(class) << 13 | u16::from(hint) << 3 | u16::from(level)
    }
}

/// One entry of fio's `cmdprio_bssplit`: of the I/Os of `bs` bytes, `share` percent are
/// submitted with `prio` (class, level, hint; `None`: the job's `cmdprio_class`, `cmdprio`
/// and `cmdprio_hint`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PrioEntry {
    /// The block size, bytes.
    pub bs: u64,
    /// Percent of that size's I/Os.
    pub share: u8,
    /// Class, level and hint of its own.
    pub prio: Option<(u8, u8, u8)>,
}

/// fio's `cmdprio_bssplit`: entries for reads, then for writes where they differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrioSplit {
    entries: [PrioEntry; 2 * crate::choices::MAX_SPLIT],
    count: u8,
    reads: u8,
}

impl PrioSplit {
    /// The accepted form, for messages.
    pub const FORM: &'static str = "SIZE/PCT[/CLASS/LEVEL[/HINT]]:..., a list for reads and writes or READS,WRITES, each size's shares at most 100, such as 64k/100:1m/0,1m/0 or 64k/25/1/1:64k/75/3/2";

    /// Parses fio's form; a third list (trims') is ignored, as fio does.
    pub fn parse(text: &str) -> Option<PrioSplit> {
        let (reads, writes) = crate::choices::direction_lists(text, true)?;
        let mut split = PrioSplit {
            entries: [PrioEntry::default(); 2 * crate::choices::MAX_SPLIT],
            count: 0,
            reads: 0,
        };
        split.push_list(reads)?;
        split.reads = split.count;
        if let Some(w) = writes {
            split.push_list(w)?;
            let (reads, count) = (usize::from(split.reads), usize::from(split.count));
            if split.entries[reads..count] == *split.reads() {
                // The same list twice is one list: the copy goes, so that equal splits compare
                // equal however they were written.
                split.entries[reads..count].fill(PrioEntry::default());
                split.count = split.reads;
            }
        }
        Some(split)
    }

    /// Appends one list, each size's shares adding up to at most 100.
    fn push_list(&mut self, list: &str) -> Option<()> {
        let parts: Vec<&str> = list.split(':').map(str::trim).collect();
        if parts.len() > crate::choices::MAX_SPLIT {
            return None;
        }
        let start = usize::from(self.count);
        for part in parts {
            let fields: Vec<&str> = part.split('/').map(str::trim).collect();
            let bs = crate::units::parse_size(fields.first()?).filter(|s| *s > 0)?;
            let share: u8 = fields.get(1)?.parse().ok().filter(|p| *p <= 100)?;
            let num = |i: usize, ok: fn(u8) -> bool| -> Option<u8> {
                fields.get(i)?.parse().ok().filter(|n| ok(*n))
            };
            let prio = match fields.len() {
                2 => None,
                4 | 5 => Some((
                    num(2, |c| (1..=3).contains(&c))?,
                    num(3, |l| l <= 7)?,
                    if fields.len() == 5 {
                        num(4, |h| h <= 7)?
                    } else {
                        0
                    },
                )),
                _ => return None,
            };
            let mine = &self.entries[start..usize::from(self.count)];
            let sum: u32 = mine
                .iter()
                .filter(|e| e.bs == bs)
                .map(|e| u32::from(e.share))
                .sum::<u32>()
                + u32::from(share);
            if sum > 100 {
                return None;
            }
            self.entries[usize::from(self.count)] = PrioEntry { bs, share, prio };
            self.count += 1;
        }
        Some(())
    }

    /// The reads' entries.
    pub fn reads(&self) -> &[PrioEntry] {
        &self.entries[..usize::from(self.reads)]
    }

    /// The writes' entries.
    pub fn writes(&self) -> &[PrioEntry] {
        if self.reads == self.count {
            self.reads()
        } else {
            &self.entries[usize::from(self.reads)..usize::from(self.count)]
        }
    }

    /// fio's form.
    pub fn name(&self) -> String {
        let list = |l: &[PrioEntry]| {
            l.iter()
                .map(|e| {
                    let bs = crate::units::format_size(e.bs);
                    match e.prio {
                        None => format!("{bs}/{}", e.share),
                        Some((c, l, 0)) => format!("{bs}/{}/{c}/{l}", e.share),
                        Some((c, l, h)) => format!("{bs}/{}/{c}/{l}/{h}", e.share),
                    }
                })
                .collect::<Vec<_>>()
                .join(":")
        };
        if self.reads == self.count {
            list(self.reads())
        } else {
            format!("{},{}", list(self.reads()), list(self.writes()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::choices::{Distribution, ExitWhat, MAX_SEQUENCE};
    use proptest::prelude::*;

    /// A writes' list equal to the reads' is one list, and compares equal to it written once.
    #[test]
    fn the_same_list_twice_is_the_list_once() {
        let twice = PrioSplit::parse("148k/20,148k/20").unwrap();
        assert_eq!(twice.name(), "148k/20");
        assert_eq!(Some(twice), PrioSplit::parse("148k/20"));
        assert_eq!(twice.writes(), twice.reads());
        let sizes = crate::BsSplit::parse("4k/50:8k/50,4k/50:8k/50").unwrap();
        assert_eq!(Some(sizes), crate::BsSplit::parse("4k/50:8k/50"));
    }

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

        /// fio's `cmdprio_bssplit` and `bssplit`, of one list or a reads' and a writes': any
        /// text never panics, and what is printed reads back the same.
        #[test]
        fn prio_and_block_splits_round_trip(
            entries in proptest::collection::vec((1u64..64, 0u8..=25, proptest::option::of((1u8..=3, 0u8..=7, 0u8..=7))), 1..5),
            writes in proptest::option::of(proptest::collection::vec((1u64..64, 1u8..=25), 1..4)),
            text in "[0-9kKmM/:,]{0,30}",
        ) {
            let list = |l: Vec<String>| l.join(":");
            let one = list(entries.iter().map(|(bs, share, prio)| match prio {
                None => format!("{}k/{share}", bs * 4),
                Some((c, l, h)) => format!("{}k/{share}/{c}/{l}/{h}", bs * 4),
            }).collect());
            let text_in = match &writes {
                None => one.clone(),
                Some(w) => format!("{one},{}", list(w.iter().map(|(bs, s)| format!("{}k/{s}", bs * 4)).collect())),
            };
            // Sizes drawn twice may add up past 100 of one size: refused, never a panic.
            if let Some(split) = PrioSplit::parse(&text_in) {
                prop_assert_eq!(PrioSplit::parse(&split.name()), Some(split));
                prop_assert_eq!(split.reads().len(), entries.len());
            }
            let sizes = format!("{}k/50:{}k/50", entries[0].0 * 4, entries[0].0 * 8);
            let bs = crate::BsSplit::parse(&format!("{sizes},{}k/100", entries[0].0 * 4)).unwrap();
            prop_assert_eq!(crate::BsSplit::parse(&bs.name()), Some(bs));
            prop_assert_eq!(bs.writes(), [(entries[0].0 * 4096, 100)]);
            let _ = PrioSplit::parse(&text);
            let _ = crate::BsSplit::parse(&text);
        }
    }
}
