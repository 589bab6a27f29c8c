//! The io_uring loop's slots: which are free, in the order they were freed, and which were
//! taken since the last submission and still wait for their start stamp.

use crate::offsets::IoReq;

/// The slots not in flight, first freed first reused (so that writes cycle through all of
/// the write pool's regions), and those taken since the last submission: one ring of slot
/// numbers, a power of two long, with no bounds or capacity checks on its common path.
///
/// Positions `[stamped, head)` hold the slots taken and not yet stamped, `[head, tail)` the
/// free ones. Together they are at most `depth` long, so a slot given back (at `tail`) never
/// lands on one still to be stamped.
pub(super) struct SlotRing {
    order: Box<[u32]>,
    mask: u32,
    stamped: u32,
    head: u32,
    tail: u32,
}

impl SlotRing {
    /// `depth` slots, all free, in order.
    pub(super) fn new(depth: usize) -> SlotRing {
        let len = depth.next_power_of_two();
        SlotRing {
            order: (0..len as u32).collect(),
            mask: len as u32 - 1,
            stamped: 0,
            head: 0,
            tail: depth as u32,
        }
    }

    /// The next free slot, if any.
    #[inline(always)]
    pub(super) fn front(&self) -> Option<u32> {
        // SAFETY: masked, the position lies in `order`, whose length is `mask + 1`.
        (self.head != self.tail)
            .then(|| unsafe { *self.order.get_unchecked((self.head & self.mask) as usize) })
    }

    /// Takes the slot [`SlotRing::front`] gave: it waits for its stamp.
    #[inline(always)]
    pub(super) fn take(&mut self) {
        self.head = self.head.wrapping_add(1);
    }

    /// Gives `slot` back, once its I/O has completed.
    #[inline(always)]
    pub(super) fn give(&mut self, slot: u32) {
        // SAFETY: as in `front`.
        unsafe {
            *self
                .order
                .get_unchecked_mut((self.tail & self.mask) as usize) = slot
        };
        self.tail = self.tail.wrapping_add(1);
    }

    /// Whether no slot is free.
    #[inline(always)]
    pub(super) fn is_empty(&self) -> bool {
        self.head == self.tail
    }

    /// How many slots were taken since the last stamp.
    #[inline(always)]
    pub(super) fn pending(&self) -> usize {
        self.head.wrapping_sub(self.stamped) as usize
    }

    /// Stamps the slots taken since the last stamp with their start, `start`.
    #[inline(always)]
    pub(super) fn stamp(&mut self, slots: &mut [(IoReq, u64)], start: u64) {
        let mut at = self.stamped;
        while at != self.head {
            let slot = self.order[(at & self.mask) as usize];
            slots[slot as usize].1 = start;
            at = at.wrapping_add(1);
        }
        self.stamped = self.head;
    }
}

#[cfg(test)]
mod tests {
    use super::SlotRing;
    use std::collections::VecDeque;

    /// The ring takes and gives back slots as the queue of free slots it replaced did (first
    /// freed, first reused), and stamps exactly those taken since the last stamp, for any
    /// interleaving of takes, completions and submissions a loop of `depth` slots makes.
    #[test]
    fn the_ring_is_a_queue_of_free_slots_with_its_unstamped_ones() {
        use stormark_stats::Op;
        let req = crate::offsets::IoReq {
            op: Op::Read,
            file: 0,
            offset: 0,
            len: 0,
        };
        for depth in [1usize, 3, 4, 5, 8, 33] {
            let mut ring = SlotRing::new(depth);
            let mut model: VecDeque<u32> = (0..depth as u32).collect();
            let mut taken: Vec<u32> = Vec::new();
            let mut flight: VecDeque<u32> = VecDeque::new();
            let mut slots = vec![(req, 0u64); depth];
            let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ depth as u64;
            for step in 1..5000u64 {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                match rng % 3 {
                    0 => {
                        assert_eq!(ring.front(), model.front().copied());
                        if let Some(s) = model.pop_front() {
                            ring.take();
                            taken.push(s);
                        }
                    }
                    1 => {
                        ring.stamp(&mut slots, step);
                        for s in taken.drain(..) {
                            assert_eq!(slots[s as usize].1, step);
                            flight.push_back(s);
                        }
                    }
                    _ => {
                        // Completions come in any order.
                        if !flight.is_empty() {
                            let i = (rng >> 8) as usize % flight.len();
                            let s = flight.remove(i).unwrap();
                            ring.give(s);
                            model.push_back(s);
                        }
                    }
                }
                assert_eq!(ring.pending(), taken.len());
                assert_eq!(ring.is_empty(), model.is_empty());
            }
        }
    }
}
