//! The swap area: how many of its slots hold pages, against its size.
//!
//! A slot holds a page from its first write to swap until the page is back in memory and
//! its copy there is dropped: at once without the swap cache; under it, at the first store
//! (the copy is stale; a store that copies the page elsewhere leaves the old copy holding
//! the slot until it is evicted), or, while swap is more than half full (the kernel's
//! `vm_swap_full`), when a fault maps the page from swap (read by the fault or ahead of it)
//! or Linux-like reclaim promotes it, so that a later eviction writes it again. An area
//! without a size never fills.

/// The slots of a swap area.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SwapArea {
    /// Slots, if bounded.
    slots: Option<u64>,
    /// Slots holding a page.
    used: u64,
    /// The most slots held at once.
    peak: u64,
}

impl SwapArea {
    /// An empty area of `slots` slots, or unbounded.
    pub fn new(slots: Option<u64>) -> SwapArea {
        SwapArea { slots, used: 0, peak: 0 }
    }

    /// Takes a slot for a page written to swap; false (taking none) when every slot is held.
    pub fn write(&mut self) -> bool {
        if self.is_full() {
            return false;
        }
        self.used += 1;
        self.peak = self.peak.max(self.used);
        true
    }

    /// Takes `n` slots for pages written together (a huge page's); false (taking none)
    /// when fewer are free.
    pub fn write_pages(&mut self, n: u64) -> bool {
        if self.slots.is_some_and(|slots| slots - self.used < n) {
            return false;
        }
        self.used += n;
        self.peak = self.peak.max(self.used);
        true
    }

    /// Frees the slot of a page whose copy in swap is dropped.
    pub fn free(&mut self) {
        debug_assert!(self.used > 0, "a slot freed that no page held");
        self.used -= 1;
    }

    /// True when every slot is held.
    pub fn is_full(&self) -> bool {
        self.slots.is_some_and(|slots| self.used == slots)
    }

    /// True when more than half of the slots are held (the kernel's `vm_swap_full`: free
    /// slots × 2 < slots); never for an unbounded area.
    pub fn more_than_half_full(&self) -> bool {
        self.slots.is_some_and(|slots| (slots - self.used) * 2 < slots)
    }

    /// Slots holding a page now.
    pub fn used(&self) -> u64 {
        self.used
    }

    /// The most slots held at once so far.
    pub fn peak(&self) -> u64 {
        self.peak
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bounded_area_fills_and_is_full_past_half() {
        let mut swap = SwapArea::new(Some(4));
        assert!(swap.write() && swap.write());
        assert!(!swap.more_than_half_full(), "2 free of 4: half full, not more");
        assert!(swap.write());
        assert!(swap.more_than_half_full(), "1 free of 4");
        assert!(swap.write() && !swap.write(), "no fifth slot");
        swap.free();
        swap.free();
        assert_eq!((swap.used(), swap.peak()), (2, 4));
        assert!(!swap.more_than_half_full());
        let mut odd = SwapArea::new(Some(5));
        (0..3).for_each(|_| assert!(odd.write()));
        assert!(odd.more_than_half_full(), "2 free of 5: 4 < 5");
    }

    #[test]
    fn an_unbounded_area_never_fills() {
        let mut swap = SwapArea::new(None);
        assert!((0..1000).all(|_| swap.write()));
        assert!(!swap.more_than_half_full());
        assert_eq!(swap.peak(), 1000);
    }
}
