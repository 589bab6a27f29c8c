//! fio's `cmdprio_percentage` and `cmdprio_bssplit` for the io_uring backend: which reads and
//! writes carry a priority of their own.

use stormark_stats::Op;

use crate::offsets::IoReq;

/// fio's `cmdprio_percentage` and `cmdprio_bssplit`: which reads and writes carry a priority
/// and which: per direction, entries of a share of the I/Os (of one block size, or of any),
/// each an exact share spread evenly, and the value the kernel takes.
pub(super) struct CmdPrioShare {
    entries: [Vec<PrioShare>; 2],
}

/// One share: of the I/Os of `bs` bytes (0: any), `share` get `value`; `owed` is what is due.
struct PrioShare {
    bs: u64,
    share: f64,
    owed: f64,
    value: u16,
}

impl CmdPrioShare {
    pub(super) fn new(c: stormark_spec::CmdPrio) -> CmdPrioShare {
        let own = |e: &stormark_spec::PrioEntry| {
            let (class, level, hint) = e.prio.unwrap_or((c.class, c.level, c.hint));
            PrioShare {
                bs: e.bs,
                share: f64::from(e.share) / 100.0,
                owed: 0.0,
                value: stormark_spec::CmdPrio::value(class, level, hint),
            }
        };
        let entries = match &c.split {
            Some(split) => [split.reads(), split.writes()]
                .map(|l| l.iter().filter(|e| e.share > 0).map(own).collect()),
            None => c.share.map(|share| {
                let any = stormark_spec::PrioEntry {
                    bs: 0,
                    share,
                    prio: None,
                };
                (share > 0).then(|| own(&any)).into_iter().collect()
            }),
        };
        CmdPrioShare { entries }
    }

    /// The priority `req` is submitted with (0: the worker's own); `req` becomes the request
    /// as it is counted (`read-prio`, `write-prio` for those with a priority of their own).
    #[inline(never)]
    pub(super) fn take(&mut self, req: &mut IoReq) -> u16 {
        let (d, op) = match req.op {
            Op::Read => (0, Op::ReadPrio),
            Op::Write => (1, Op::WritePrio),
            _ => return 0,
        };
        // Each share is owed what it has not had; once they are owed a whole I/O together,
        // the most owed takes this one: every share exact and spread evenly, and with
        // shares of 100% every I/O.
        let mut owed = 0.0;
        let mut most: Option<&mut PrioShare> = None;
        for e in &mut self.entries[d] {
            if e.bs != 0 && e.bs != u64::from(req.len) {
                continue;
            }
            e.owed += e.share;
            owed += e.owed;
            if most.as_ref().is_none_or(|m| e.owed > m.owed) {
                most = Some(e);
            }
        }
        let value = match most {
            Some(e) if owed >= 1.0 - 1e-9 => {
                e.owed -= 1.0;
                e.value
            }
            _ => 0,
        };
        if value != 0 {
            req.op = op;
        }
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(len: u32) -> IoReq {
        IoReq {
            op: Op::Read,
            file: 0,
            offset: 0,
            len,
        }
    }

    /// fio's `cmdprio_bssplit`: shares of one block size's reads go to their priorities
    /// exactly, other sizes untouched; shares of 100% give every I/O one; writes of their own
    /// list.
    #[test]
    fn prio_shares_by_block_size_are_exact() {
        let split = stormark_spec::PrioSplit::parse("64k/25/1/1:64k/75/3/2:1m/0,1m/40").unwrap();
        let mut s = CmdPrioShare::new(stormark_spec::CmdPrio {
            share: [0, 0],
            class: 1,
            level: 0,
            hint: 0,
            split: Some(split),
        });
        let mut got = std::collections::HashMap::new();
        for i in 0..800 {
            let mut req = read(if i % 2 == 0 { 65536 } else { 1 << 20 });
            let v = s.take(&mut req);
            *got.entry((v, req.op, req.len)).or_insert(0) += 1;
        }
        let high = stormark_spec::CmdPrio::value(1, 1, 0);
        let idle = stormark_spec::CmdPrio::value(3, 2, 0);
        assert_eq!(got[&(high, Op::ReadPrio, 65536)], 100);
        assert_eq!(got[&(idle, Op::ReadPrio, 65536)], 300);
        assert_eq!(got[&(0, Op::Read, 1 << 20)], 400);
        assert_eq!(got.len(), 3);
        let writes = (0..100)
            .filter(|_| {
                let v = s.take(&mut IoReq {
                    op: Op::Write,
                    ..read(1 << 20)
                });
                v == stormark_spec::CmdPrio::value(1, 0, 0)
            })
            .count();
        assert_eq!(writes, 40);
    }
}
