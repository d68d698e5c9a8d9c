//! Linux-like page reclaim: an inactive and an active list with a referenced bit per page
//! (a model of the kernel's split LRU for anonymous memory, without its per-zone and
//! per-cgroup details).
//!
//! New pages enter the inactive list. Reclaim takes the inactive list's oldest page: if it
//! was referenced since it was last looked at, it is promoted to the active list (its second
//! chance) with the bit cleared; otherwise it is evicted. Whenever the inactive list is low,
//! the active list's oldest page is moved to the inactive list with its bit cleared, as the
//! kernel deactivates anonymous pages regardless of references. "Low" is the kernel's
//! `inactive_is_low` (Linux 4.10 to 5.x, the paper's 5.11.6 included): `inactive × ratio <
//! active`, with `ratio = isqrt(10 × GiB on the two lists)` (1 below 1 GiB), so a 4 GiB memory
//! keeps a sixth of its pages inactive; a fixed ratio can be configured instead.
//!
//! Not modelled: the kernel's workingset detection for anonymous pages (5.9 and later), which
//! puts a page that refaults soon after its eviction straight on the active list.

use super::InactiveRatio;
use std::collections::VecDeque;

/// The reclaim lists of a fully associative memory.
#[derive(Clone, Debug)]
pub struct LinuxLists {
    inactive: VecDeque<u64>,
    active: VecDeque<u64>,
    /// One byte per frame: set by use, cleared by reclaim.
    referenced: Vec<u8>,
    ratio: InactiveRatio,
    /// log2 of the pages in 1 GiB, for the kernel's ratio.
    pages_per_gib_log2: u32,
}

impl LinuxLists {
    /// Lists for `frames` frames of `page_bytes` each, all empty, keeping the inactive list
    /// at `ratio`.
    pub fn new(frames: u64, page_bytes: u64, ratio: InactiveRatio) -> LinuxLists {
        LinuxLists {
            inactive: VecDeque::new(),
            active: VecDeque::new(),
            referenced: vec![0; frames as usize],
            ratio,
            pages_per_gib_log2: 30u32.saturating_sub(page_bytes.trailing_zeros()),
        }
    }

    /// True when the inactive list is too short for the active list.
    fn inactive_is_low(&self) -> bool {
        let (inactive, active) = (self.inactive.len() as u64, self.active.len() as u64);
        let ratio = match self.ratio {
            InactiveRatio::Kernel => {
                let gib = (inactive + active) >> self.pages_per_gib_log2;
                if gib == 0 { 1 } else { (10 * gib).isqrt() }
            }
            InactiveRatio::Fixed(ratio) => u64::from(ratio),
        };
        inactive * ratio < active
    }

    /// Marks the page in `frame` referenced.
    #[inline]
    pub fn reference(&mut self, frame: u64) {
        self.referenced[frame as usize] = 1;
    }

    /// Registers a page just placed in `frame` (not yet referenced: the fault is its first use
    /// and is what put it here).
    pub fn insert(&mut self, frame: u64) {
        self.referenced[frame as usize] = 0;
        self.inactive.push_back(frame);
    }

    /// Chooses and unlinks the frame to evict; `None` when no page is resident.
    pub fn victim(&mut self) -> Option<u64> {
        loop {
            if self.inactive_is_low() {
                let frame = self.active.pop_front().expect("a low inactive list is shorter than the active list");
                self.referenced[frame as usize] = 0;
                self.inactive.push_back(frame);
            }
            let frame = self.inactive.pop_front()?;
            if std::mem::take(&mut self.referenced[frame as usize]) == 0 {
                return Some(frame);
            }
            self.active.push_back(frame);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn referenced_pages_get_a_second_chance() {
        let mut l = LinuxLists::new(8, 4096, InactiveRatio::Fixed(1));
        for f in 0..4 {
            l.insert(f);
        }
        l.reference(0);
        l.reference(1);
        // 0 and 1 are promoted; 2 is the first unreferenced page.
        assert_eq!(l.victim(), Some(2));
        assert_eq!(l.victim(), Some(3));
        // Now inactive is empty and active holds 0, 1: they are demoted, unreferenced.
        assert_eq!(l.victim(), Some(0));
        assert_eq!(l.victim(), Some(1));
        assert_eq!(l.victim(), None);
    }

    #[test]
    fn a_hot_page_survives_a_scan_of_cold_ones() {
        let mut l = LinuxLists::new(100, 4096, InactiveRatio::Kernel);
        for f in 0..100 {
            l.insert(f);
        }
        let mut evicted = Vec::new();
        for _ in 0..50 {
            l.reference(7);
            let v = l.victim().unwrap();
            evicted.push(v);
            l.insert(v);
        }
        assert!(!evicted.contains(&7));
    }

    /// The kernel's ratio: 1 below 1 GiB on the lists, isqrt(10 × GiB) above; the active
    /// list is demoted until `inactive × ratio ≥ active`.
    #[test]
    fn the_kernel_ratio_grows_with_the_lists() {
        // 1 GiB of 1 MiB pages: ratio isqrt(10) = 3.
        let mut l = LinuxLists::new(2048, 1 << 20, InactiveRatio::Kernel);
        for f in 0..1024 {
            l.insert(f);
            l.reference(f);
        }
        // Every page is referenced: reclaim promotes the inactive pages until the list is
        // low, then demotes (clearing bits) and evicts the first unreferenced one, leaving a
        // quarter of the pages inactive with the victim.
        let victim = l.victim().expect("a page to evict");
        assert_eq!((l.inactive.len() + 1, l.active.len()), (256, 768), "victim {victim}");
        let mut small = LinuxLists::new(64, 4096, InactiveRatio::Kernel);
        for f in 0..64 {
            small.insert(f);
            small.reference(f);
        }
        small.victim();
        assert_eq!((small.inactive.len() + 1, small.active.len()), (32, 32));
    }
}
