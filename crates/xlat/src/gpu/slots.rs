//! A pool of identical slots held for spans of cycles: the shared walker's walk slots, an
//! L1 data cache's MSHRs. A request takes a slot free at its arrival, or waits for the one
//! that frees first.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// `capacity` slots and the cycles the busy ones free up.
#[derive(Clone, Debug)]
pub struct Slots {
    capacity: usize,
    busy: BinaryHeap<Reverse<u64>>,
}

impl Slots {
    /// `capacity` free slots (at least one).
    pub fn new(capacity: usize) -> Slots {
        Slots { capacity: capacity.max(1), busy: BinaryHeap::new() }
    }

    /// The cycle a request arriving at `now` gets a slot; the caller then holds it with
    /// [`Slots::hold_until`].
    pub fn acquire(&mut self, now: u64) -> u64 {
        while self.busy.peek().is_some_and(|Reverse(free)| *free <= now) {
            self.busy.pop();
        }
        if self.busy.len() < self.capacity {
            return now;
        }
        let Reverse(free) = self.busy.pop().expect("a full pool has busy slots");
        free.max(now)
    }

    /// Holds the slot just acquired until cycle `t`.
    pub fn hold_until(&mut self, t: u64) {
        self.busy.push(Reverse(t));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_beyond_the_capacity_wait_for_the_earliest_slot_to_free() {
        let mut s = Slots::new(2);
        let mut starts = Vec::new();
        for end in [100, 50, 70] {
            let start = s.acquire(0);
            starts.push(start);
            s.hold_until(start + end);
        }
        assert_eq!(starts, [0, 0, 50]);
        assert_eq!(s.acquire(200), 200, "all free again");
    }
}
