//! Linux-like page reclaim: an inactive and an active list with a referenced bit per page
//! (a model of the kernel's split LRU for anonymous memory, without its per-zone and
//! per-cgroup details).
//!
//! New pages enter the inactive list. Reclaim takes the inactive list's oldest page: if it
//! was referenced since it was last looked at, it is promoted to the active list (its second
//! chance) with the bit cleared; otherwise it is evicted. Whenever the inactive list is
//! shorter than the active list, the active list's oldest page is moved to the inactive list
//! with its bit cleared, as the kernel deactivates anonymous pages regardless of references.

use std::collections::VecDeque;

/// The reclaim lists of a fully associative memory.
#[derive(Clone, Debug, Default)]
pub struct LinuxLists {
    inactive: VecDeque<u64>,
    active: VecDeque<u64>,
    /// One byte per frame: set by use, cleared by reclaim.
    referenced: Vec<u8>,
}

impl LinuxLists {
    /// Lists for `frames` frames, all empty.
    pub fn new(frames: u64) -> LinuxLists {
        LinuxLists { referenced: vec![0; frames as usize], ..LinuxLists::default() }
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
            if self.inactive.len() < self.active.len() {
                let frame = self.active.pop_front().expect("active is longer than inactive");
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
        let mut l = LinuxLists::new(8);
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
        let mut l = LinuxLists::new(100);
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
}
