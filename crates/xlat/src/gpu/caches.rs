//! The GPU's data path as latency: per-SM L1 data caches, a shared L2 cache that page-walk
//! reads also go through, and DRAM with a bandwidth limit.
//!
//! Latencies are fixed per level; DRAM serves at most `dram_bytes_per_cycle` (all channels
//! together), which is where applications sharing the GPU slow each other down beyond the
//! TLBs. Its bandwidth is kept as a calendar of short windows, each taking a window's worth
//! of bytes: a request goes into the window of its arrival, or the first later one with room.
//! The machine reserves a request's whole path when it issues it, so requests do not arrive
//! in the order they are reserved (a walk's later reads are reserved before another warp's
//! earlier one); a calendar, unlike a single "free at" cycle, lets an earlier request use
//! bandwidth a later reservation left free. GPGPU-Sim models the interconnect, the L2's banks
//! and GDDR5's banks and row buffers (FR-FCFS); this model keeps only their latency and the
//! total bandwidth (see docs/gpu.md).

use super::memory::FRAME_LIMIT;
use super::slots::Slots;
use super::walker::TABLE_END;
use crate::cache::tags::TagArray;
use crate::tlb::Policy;
use crate::types::BASE_PAGE_SHIFT;
use serde::Serialize;

/// Shape and timing of the data path, validated.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CacheSpec {
    /// Bytes of a cache line (and of a coalesced request): 128.
    pub line: u64,
    /// Bytes of each SM's L1 data cache (16 KiB).
    pub l1_bytes: u64,
    /// Ways of the L1 data cache (4).
    pub l1_ways: usize,
    /// Cycles of an L1 hit (1).
    pub l1_latency: u32,
    /// Misses each L1 data cache keeps outstanding at most (its MSHRs; 32, GPGPU-Sim's
    /// Fermi configuration): what bounds the bandwidth one SM can draw.
    pub l1_mshrs: usize,
    /// Bytes of the shared L2 cache (2 MiB).
    pub l2_bytes: u64,
    /// Ways of the L2 cache (16).
    pub l2_ways: usize,
    /// Cycles of an L2 hit, the interconnect both ways included.
    pub l2_latency: u32,
    /// Cycles of a DRAM access after an L2 miss, beyond the L2's.
    pub dram_latency: u32,
    /// Bytes DRAM delivers per GPU cycle, all channels together.
    pub dram_bytes_per_cycle: f64,
}

impl CacheSpec {
    /// Bytes of host memory the caches of `sms` SMs take at most.
    pub fn host_bytes(&self, sms: usize) -> u64 {
        let lines = |bytes: u64| bytes / self.line;
        let l1 = TagArray::host_bytes(lines(self.l1_bytes), self.l1_ways as u64, Policy::Lru);
        l1.saturating_mul(sms as u64).saturating_add(TagArray::host_bytes(lines(self.l2_bytes), self.l2_ways as u64, Policy::Lru))
    }
}

/// Hits and misses of the data path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CacheCounts {
    /// L1 data-cache hits (all SMs).
    pub l1_hits: u64,
    /// L1 data-cache misses.
    pub l1_misses: u64,
    /// L2 hits (data and walk reads).
    pub l2_hits: u64,
    /// L2 misses, each a DRAM access.
    pub l2_misses: u64,
    /// Cycles requests waited for DRAM bandwidth, summed.
    pub dram_queue_cycles: u64,
    /// Cycles L1 misses waited for a free MSHR, summed.
    pub mshr_wait_cycles: u64,
}

/// The caches and DRAM of one GPU.
#[derive(Clone, Debug)]
pub struct Caches {
    spec: CacheSpec,
    line_shift: u32,
    l1: Vec<TagArray>,
    mshrs: Vec<Slots>,
    l2: TagArray,
    dram: Calendar,
    counts: CacheCounts,
}

impl Caches {
    /// Empty caches for `sms` SMs.
    pub fn new(spec: &CacheSpec, sms: usize) -> Caches {
        let lines = |bytes: u64| (bytes / spec.line) as usize;
        let line_shift = spec.line.trailing_zeros();
        // Tags are line addresses; bounded, they are kept in 32 bits where they fit, which
        // halves a probe's host memory and lets 4 ways compare at once. L1s see data only
        // (below the last frame's end); the L2 page-table entries too (below `TABLE_END`).
        let line_after = |end: u64| ((end - 1) >> line_shift) + 1;
        let data_end = line_after(FRAME_LIMIT << BASE_PAGE_SHIFT);
        let l1 = (0..sms).map(|_| TagArray::with_bound(lines(spec.l1_bytes), spec.l1_ways, Policy::Lru, 0, data_end)).collect();
        let l2 = TagArray::with_bound(lines(spec.l2_bytes), spec.l2_ways, Policy::Lru, 0, line_after(TABLE_END));
        let dram = Calendar::new(spec.dram_bytes_per_cycle, spec.line);
        let mshrs = (0..sms).map(|_| Slots::new(spec.l1_mshrs)).collect();
        Caches { spec: *spec, line_shift, l1, mshrs, l2, dram, counts: CacheCounts::default() }
    }

    /// Cycles a load of physical byte `paddr` from SM `sm` issued at cycle `now` takes: a
    /// miss waits for a free MSHR of the SM's L1 and holds it until its line returns.
    pub fn load(&mut self, sm: usize, paddr: u64, now: u64) -> u64 {
        let l1 = u64::from(self.spec.l1_latency);
        if self.l1[sm].access(paddr >> self.line_shift) {
            self.counts.l1_hits += 1;
            return l1;
        }
        self.counts.l1_misses += 1;
        let start = self.mshrs[sm].acquire(now + l1);
        self.counts.mshr_wait_cycles += start - (now + l1);
        let done = start + self.shared(paddr, start);
        self.mshrs[sm].hold_until(done);
        done - now
    }

    /// Cycles a store of `paddr` takes until the L2 takes it. L1s write through without
    /// allocating, as GPU L1 data caches do for global stores; the L2 allocates a missing
    /// line without reading it (a coalesced store writes whole 128-byte lines' sectors) and
    /// writes it back later, so a miss reserves DRAM bandwidth for that write-back and the
    /// store waits only when DRAM is saturated, not for DRAM's latency.
    pub fn store(&mut self, paddr: u64, now: u64) -> u64 {
        self.l2_access(paddr, now).0
    }

    /// Cycles a read of `paddr` from the L2 (a walk's read of a page-table entry) takes.
    pub fn shared(&mut self, paddr: u64, now: u64) -> u64 {
        match self.l2_access(paddr, now) {
            (cycles, true) => cycles + u64::from(self.spec.dram_latency),
            (cycles, false) => cycles,
        }
    }

    /// Looks `paddr` up in the L2 at `now`, a miss taking its line's DRAM bandwidth: the
    /// cycles until the L2 has answered or DRAM has taken the line, and whether it missed.
    fn l2_access(&mut self, paddr: u64, now: u64) -> (u64, bool) {
        let hit_latency = u64::from(self.spec.l2_latency);
        if self.l2.access(paddr >> self.line_shift) {
            self.counts.l2_hits += 1;
            return (hit_latency, false);
        }
        self.counts.l2_misses += 1;
        let queued = self.dram.reserve(now + hit_latency);
        self.counts.dram_queue_cycles += queued;
        (hit_latency + queued, true)
    }

    /// The counts so far.
    pub fn counts(&self) -> CacheCounts {
        self.counts
    }
}

/// Windows the DRAM calendar remembers: reservations further ahead than this many windows
/// share their slot with nearer ones (a far fault's 300 000 cycles fit).
const CALENDAR_WINDOWS: usize = 1 << 16;

/// DRAM bandwidth as bytes taken per window of cycles.
#[derive(Clone, Debug)]
struct Calendar {
    /// Cycles of a window: at least 32, and long enough to hold one line.
    window: u64,
    /// Lines a window holds.
    lines_per_window: u32,
    /// Per slot: the window it counts (its number) and the lines taken in it.
    slots: Vec<(u64, u32)>,
    /// Windows `full.0..full.1` are known full: a search entering them jumps past, so a
    /// backlog of saturated windows costs one step, not one per window.
    full: (u64, u64),
}

impl Calendar {
    fn new(bytes_per_cycle: f64, line: u64) -> Calendar {
        let window = ((line as f64 / bytes_per_cycle).ceil() as u64).max(32);
        let lines_per_window = ((window as f64 * bytes_per_cycle) / line as f64).floor().clamp(1.0, f64::from(u32::MAX)) as u32;
        Calendar { window, lines_per_window, slots: vec![(u64::MAX, 0); CALENDAR_WINDOWS], full: (0, 0) }
    }

    /// Takes a line's transfer for a request arriving at `arrival`; returns the cycles it
    /// waits for a window with room.
    fn reserve(&mut self, arrival: u64) -> u64 {
        let first = arrival / self.window;
        let mut number = first;
        loop {
            if (self.full.0..self.full.1).contains(&number) {
                number = self.full.1;
            }
            let slot = &mut self.slots[(number % CALENDAR_WINDOWS as u64) as usize];
            if slot.0 != number {
                *slot = (number, 0);
            }
            if slot.1 < self.lines_per_window {
                slot.1 += 1;
                let now_full = slot.1 == self.lines_per_window;
                self.note_full(first, number, now_full);
                return (number * self.window).saturating_sub(arrival);
            }
            number += 1;
        }
    }

    /// Records that windows `first..last` were found full (and `last` too when `last_full`),
    /// extending the known full run when they touch it, or replacing it.
    fn note_full(&mut self, first: u64, last: u64, last_full: bool) {
        let end = last + u64::from(last_full);
        if first >= end {
            return;
        }
        if first <= self.full.1 && end >= self.full.0 {
            self.full = (self.full.0.min(first), self.full.1.max(end));
        } else {
            self.full = (first, end);
        }
    }
}

/// Caches that never hit (one-line L1 and L2), with unbounded MSHRs and bandwidth, so that
/// every access's cost is known: `l1_latency` 1, `l2_latency` 10, and `dram_latency`.
#[cfg(test)]
pub(crate) fn cold_spec(dram_latency: u32) -> CacheSpec {
    CacheSpec {
        line: 128,
        l1_bytes: 128,
        l1_ways: 1,
        l1_latency: 1,
        l1_mshrs: 1 << 20,
        l2_bytes: 128,
        l2_ways: 1,
        l2_latency: 10,
        dram_latency,
        dram_bytes_per_cycle: 1e9,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) const SPEC: CacheSpec = CacheSpec {
        line: 128,
        l1_bytes: 1024,
        l1_ways: 2,
        l1_latency: 1,
        l1_mshrs: 2,
        l2_bytes: 4096,
        l2_ways: 4,
        l2_latency: 10,
        dram_latency: 100,
        dram_bytes_per_cycle: 64.0,
    };

    #[test]
    fn a_load_costs_each_level_it_reaches() {
        let mut c = Caches::new(&SPEC, 2);
        assert_eq!(c.load(0, 0x1000, 0), 1 + 10 + 100, "cold: L1, L2 and DRAM");
        assert_eq!(c.load(0, 0x1040, 500), 1, "same line: an L1 hit");
        assert_eq!(c.load(1, 0x1000, 500), 1 + 10, "another SM: its L1 misses, the L2 hits");
    }

    #[test]
    fn a_store_waits_for_the_l2_and_for_dram_bandwidth_but_not_for_dram_latency() {
        let mut c = Caches::new(&SPEC, 1);
        assert_eq!(c.store(0x1000, 0), 10, "a miss: taken by the L2");
        assert_eq!(c.load(0, 0x1000, 100), 1 + 10, "the line is in the L2 now");
        for i in 0..16 {
            c.store(0x10_0000 + i * 128, 1000);
        }
        // Reaching DRAM at 1010, in the window of 992..1024, full: the next starts at 1024.
        assert_eq!(c.store(0x20_0000, 1000), 10 + (1024 - 1010), "DRAM's window full: the write-back waits");
    }

    #[test]
    fn an_sm_keeps_at_most_its_mshrs_of_misses_outstanding() {
        let mut c = Caches::new(&SPEC, 1);
        let latencies: Vec<u64> = (0..3).map(|i| c.load(0, 0x10_0000 + i * 128, 0)).collect();
        assert_eq!(latencies, [111, 111, 111 + 110], "the third waits for the first MSHR to free");
        assert_eq!(c.counts().mshr_wait_cycles, 110);
    }

    #[test]
    fn dram_requests_beyond_the_bandwidth_wait_for_the_next_window() {
        let mut c = Caches::new(&SPEC, 1);
        // 64 bytes a cycle in windows of 32 cycles: 16 lines a window. Requests reach DRAM
        // at cycle 10 (after the L2's latency), so the 17th waits for the window at 32.
        let latencies: Vec<u64> = (0..17).map(|i| c.shared(0x10_0000 + i * 128, 0)).collect();
        assert_eq!(latencies[..16], [110; 16]);
        assert_eq!(latencies[16], 110 + 22);
        assert_eq!(c.counts().dram_queue_cycles, 22);
    }

    #[test]
    fn a_backlog_fills_windows_in_order_and_leaves_earlier_room_usable() {
        let mut cal = Calendar::new(64.0, 128);
        // 16 lines a 32-cycle window: the k-th of 1000 requests at cycle 0 waits k / 16 windows.
        for k in 0..1000u64 {
            assert_eq!(cal.reserve(0), k / 16 * 32, "request {k}");
        }
        assert_eq!(cal.reserve(40 * 32), (1000 / 16 - 40) * 32, "inside the backlog: the first window with room");
        assert_eq!(cal.reserve(5000 * 32), 0, "beyond the backlog: no wait");
    }

    #[test]
    fn a_request_reserved_late_uses_bandwidth_left_free_before_later_reservations() {
        let mut c = Caches::new(&SPEC, 1);
        for i in 0..16 {
            c.shared(0x10_0000 + i * 128, 1000);
        }
        assert_eq!(c.shared(0x20_0000, 0), 110, "an earlier request does not queue behind later ones");
    }
}
