//! The GPU's shared page walker: at most `max_walks` walks in flight, each reading the
//! 4-level page table (3 levels for a large page, whose PD entry is the leaf) one entry after
//! another through the shared L2 cache; and the TLBs' MSHRs, which make a request for a page
//! whose walk is in flight wait for that walk rather than start another.

use super::caches::Caches;
use super::memory::{AppId, PAGES_PER_LARGE};
use super::slots::Slots;
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Levels of the page table (x86-64-like: PML4, PDPT, PD, PT).
pub const LEVELS: u32 = 4;

/// Bits of a page number each level resolves.
const BITS_PER_LEVEL: u32 = 9;

/// Where page-table nodes live in physical memory: above any GPU memory simulated, so their
/// lines never alias data in the L2 cache. (Their frames are not taken from the memory
/// managers: GPU Mosaic's page tables are small beside the data and the paper does not say
/// where they live.)
const TABLE_BASE: u64 = 1 << 48;

/// Bytes of a page-table entry.
const ENTRY_BYTES: u64 = 8;

/// What the walker did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WalkCounts {
    /// Walks started.
    pub walks: u64,
    /// Page-table entries read.
    pub reads: u64,
    /// Cycles walks waited for a free walker slot, summed.
    pub queue_cycles: u64,
    /// Cycles of walks, from start to end, summed (queueing and far faults excluded).
    pub walk_cycles: u64,
    /// Requests that found a walk for their page in flight and waited for it (MSHR merges).
    pub merged: u64,
}

/// The shared walker and the in-flight walks.
#[derive(Clone, Debug)]
pub struct Walker {
    /// The walk slots.
    slots: Slots,
    /// In-flight walks by page (`key`), with the cycle each completes.
    pending: FxHashMap<(AppId, u64), u64>,
    /// The same walks by completion, earliest first, to drop them once done.
    expiries: BinaryHeap<Reverse<(u64, AppId, u64)>>,
    /// The latest completion in `pending`: a request at or after it needs no lookup.
    latest: u64,
    /// Page-table nodes by (application, level, page-number prefix), numbered as created.
    nodes: FxHashMap<(AppId, u32, u64), u64>,
    counts: WalkCounts,
}

/// The key of `vpn`'s walk: its base page, or its chunk (tagged) when mapped large.
fn key(vpn: u64, large: bool) -> u64 {
    if large { (vpn / PAGES_PER_LARGE) | (1 << 63) } else { vpn }
}

impl Walker {
    /// An idle walker of `max_walks` slots.
    pub fn new(max_walks: usize) -> Walker {
        Walker {
            slots: Slots::new(max_walks),
            pending: FxHashMap::default(),
            expiries: BinaryHeap::new(),
            latest: 0,
            nodes: FxHashMap::default(),
            counts: WalkCounts::default(),
        }
    }

    /// The cycle the in-flight walk for `vpn` of `app` completes, when one is still in
    /// flight at `now` (the request then merges with it, and is counted).
    #[inline]
    pub fn in_flight(&mut self, app: AppId, vpn: u64, now: u64) -> Option<u64> {
        if now >= self.latest {
            return None;
        }
        let done = [false, true].into_iter().filter_map(|large| self.pending.get(&(app, key(vpn, large)))).copied().find(|&done| done > now)?;
        self.counts.merged += 1;
        Some(done)
    }

    /// Walks the table of `app` for base page `vpn`, which the memory manager maps `large`
    /// or not, starting when the request arrives at `now`; returns the cycle its translation
    /// is known, and records it in flight until `done + extra` (a far fault's transfer
    /// following the walk).
    pub fn walk(&mut self, caches: &mut Caches, app: AppId, vpn: u64, large: bool, now: u64, extra: u64) -> u64 {
        let start = self.slots.acquire(now);
        let leaf = if large { LEVELS - 1 } else { LEVELS };
        let mut t = start;
        for level in 0..leaf {
            t += caches.shared(self.entry_address(app, vpn, level), t);
        }
        self.slots.hold_until(t);
        self.counts.walks += 1;
        self.counts.reads += u64::from(leaf);
        self.counts.queue_cycles += start - now;
        self.counts.walk_cycles += t - start;
        self.track(app, key(vpn, large), t + extra, now);
        t
    }

    /// Records that requests for `vpn` of `app` (its chunk, when `large`) arriving before
    /// `until` wait until then: a far fault in flight under an ideal TLB, which walks nothing.
    pub fn hold(&mut self, app: AppId, vpn: u64, large: bool, until: u64, now: u64) {
        self.track(app, key(vpn, large), until, now);
    }

    /// Records a walk in flight until `done`, dropping those done by `now` so the map
    /// stays the size of what is in flight.
    fn track(&mut self, app: AppId, key: u64, done: u64, now: u64) {
        while let Some(&Reverse((end, a, k))) = self.expiries.peek().filter(|Reverse((end, ..))| *end <= now) {
            self.expiries.pop();
            if self.pending.get(&(a, k)) == Some(&end) {
                self.pending.remove(&(a, k));
            }
        }
        self.pending.insert((app, key), done);
        self.expiries.push(Reverse((done, app, key)));
        self.latest = self.latest.max(done);
    }

    /// The physical address of the entry for `vpn` in its level-`level` node (0: the root).
    fn entry_address(&mut self, app: AppId, vpn: u64, level: u32) -> u64 {
        let below = BITS_PER_LEVEL * (LEVELS - level);
        let prefix = vpn >> below;
        let count = self.nodes.len() as u64;
        let node = *self.nodes.entry((app, level, prefix)).or_insert(count);
        let index = (vpn >> (below - BITS_PER_LEVEL)) & ((1 << BITS_PER_LEVEL) - 1);
        TABLE_BASE + node * 4096 + index * ENTRY_BYTES
    }

    /// The counts so far.
    pub fn counts(&self) -> WalkCounts {
        self.counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::caches::{cold_spec, Caches};

    /// Caches of fixed latency: no L2 hit ever (a one-line L2), 100 cycles a read.
    fn cold() -> Caches {
        Caches::new(&cold_spec(90), 1)
    }

    #[test]
    fn a_walk_reads_four_levels_for_a_base_page_and_three_for_a_large_one() {
        let mut w = Walker::new(64);
        let mut c = cold();
        assert_eq!(w.walk(&mut c, 0, 0x12345, false, 0, 0), 400);
        assert_eq!(w.walk(&mut c, 0, 0x80000, true, 0, 0), 300);
        assert_eq!(w.counts().reads, 7);
    }

    #[test]
    fn walks_beyond_the_slots_wait_for_the_earliest_to_finish() {
        let mut w = Walker::new(2);
        let mut c = cold();
        let done: Vec<u64> = (0..3).map(|i| w.walk(&mut c, 0, i << 27, false, 0, 0)).collect();
        assert_eq!(done, [400, 400, 800]);
        assert_eq!(w.counts().queue_cycles, 400);
    }

    #[test]
    fn a_request_for_a_page_in_flight_merges_until_the_walk_and_its_transfer_end() {
        let mut w = Walker::new(64);
        let mut c = cold();
        let done = w.walk(&mut c, 3, 7, false, 0, 1000);
        assert_eq!(w.in_flight(3, 7, 10), Some(done + 1000));
        assert_eq!(w.in_flight(2, 7, 10), None, "another application's page");
        assert_eq!(w.in_flight(3, 7, done + 1000), None, "done");
        w.walk(&mut c, 3, 1024, true, 0, 0);
        assert!(w.in_flight(3, 1024 + 5, 10).is_some(), "a large page's walk covers its chunk");
        assert_eq!(w.counts().merged, 2);
    }

    #[test]
    fn entries_of_neighbouring_pages_share_a_node_and_a_cache_line() {
        let mut w = Walker::new(64);
        assert_eq!(w.entry_address(0, 0x1000, 3) + 8, w.entry_address(0, 0x1001, 3));
        assert_ne!(w.entry_address(0, 0x1000, 3), w.entry_address(1, 0x1000, 3), "applications have their own tables");
    }
}
