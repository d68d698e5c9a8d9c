//! Counters and utilization metrics of the OS model.

use super::eviction::age::AgeStats;
use super::eviction::linux::ReclaimStats;
use serde::Serialize;

/// Counters of the OS model.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct OsStats {
    /// Page-table walks (TLB misses in every level).
    pub walks: u64,
    /// Walks that found no mapping and mapped a page: first touches, swap-ins and
    /// readahead hits.
    pub page_faults: u64,
    /// Pages read from swap (the kernel's `pswpin`): one per major fault (a fault on a page
    /// swapped out), and the pages read ahead with it.
    pub swap_ins: u64,
    /// Of `swap_ins`, the pages read ahead around a major fault (the kernel's `swap_ra`).
    pub readahead_pages: u64,
    /// Faults that found their page read ahead, in memory: minor faults, reading nothing
    /// (the kernel's `swap_ra_hit`).
    pub readahead_hits: u64,
    /// Pages written to swap: evictions of pages without an up-to-date copy there (all
    /// evictions without the swap cache; under it, not those of pages swapped in by a load
    /// and not stored to since).
    pub swap_outs: u64,
    /// Pages evicted: each mapped one a TLB shootdown, pages read ahead and never mapped
    /// and old copies left by stores none (a transparent huge page counts its 512 base
    /// pages, and one shootdown).
    pub evictions: u64,
    /// Stores that copied a page still in the swap cache to a new frame, leaving the old
    /// copy in memory until evicted (`swap_cache_cow`), each a TLB shootdown.
    pub store_copies: u64,
    /// Pages shot down because an accessed-bit scan cleared their bit (`recency = "scan"`).
    pub scan_shootdowns: u64,
    /// Pages shot down in every TLB of the machine, by evictions of mapped pages and by
    /// accessed-bit scans (`scan_shootdowns`).
    pub shootdowns: u64,
    /// Evictions of ghosts: Horizon LRU's pages older than the horizon, lazy Iceberg LRU's
    /// pages marked evictable.
    pub ghost_evictions: u64,
    /// Faults whose candidate frames were all in use by live pages (associativity conflicts).
    pub conflicts: u64,
    /// Fraction of frames in use at the first conflict that left free frames elsewhere.
    pub first_conflict_utilization: Option<f64>,
    /// Time-averaged fraction of frames in use from the first eviction to the end.
    pub steady_state_utilization: Option<f64>,
    /// Physical memory in bytes.
    pub memory_bytes: u64,
    /// Bytes moved to and from swap: (`swap_ins` + `swap_outs`) pages.
    pub swap_io_bytes: u64,
    /// The most bytes of the swap area holding pages at once: pages swapped out, and under
    /// the swap cache pages in memory that keep their copy there.
    pub peak_swap_bytes: u64,
    /// Pages in memory whose swap slot was freed because swap was more than half full (the
    /// kernel's `vm_swap_full`; only with a bounded `swap` and the swap cache): at a fault
    /// that maps a page from swap, and under Linux-like reclaim at a promotion.
    pub swap_full_frees: u64,
    /// Pages currently mapped.
    pub mapped_pages: u64,
    /// Bytes of distinct pages touched (the footprint).
    pub footprint_bytes: u64,
    /// Frames holding page-table pages (pinned: never evicted), placed in the machine's
    /// memory beside the data by drivers whose tables live there (0 for `map`).
    pub page_table_frames: u64,
    /// Relative age of evicted pages, when tracked.
    pub eviction_age: Option<AgeStats>,
    /// What Linux-like reclaim did (`eviction = "linux"` only).
    pub reclaim: Option<ReclaimStats>,
    /// What transparent huge pages did (`thp = "always"` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thp: Option<super::ThpStats>,
    /// What address-space events did (present once the stream held one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address_space: Option<super::AddressSpaceStats>,
}

/// The time integral of frames in use, from the first eviction on.
#[derive(Clone, Debug, Default)]
pub(crate) struct Utilization {
    start: Option<u64>,
    last: u64,
    area: u128,
}

impl Utilization {
    /// Starts integrating at time `now`.
    pub fn start(&mut self, now: u64) {
        self.start = Some(now);
        self.last = now;
    }

    /// Frames in use are about to change at time `now`; `used` held since the last change.
    pub fn change(&mut self, now: u64, used: u64) {
        if self.start.is_some() {
            self.area += u128::from(used) * u128::from(now - self.last);
            self.last = now;
        }
    }

    /// The mean fraction of `capacity` in use up to `now`, with `used` in use since the last
    /// change; `None` before the first eviction.
    pub fn mean(&self, now: u64, used: u64, capacity: u64) -> Option<f64> {
        let start = self.start?;
        if now == start {
            return Some(used as f64 / capacity as f64);
        }
        let area = self.area + u128::from(used) * u128::from(now - self.last);
        Some(area as f64 / (u128::from(now - start) * u128::from(capacity)) as f64)
    }
}
