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
use std::collections::hash_map::Entry;
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

/// Bytes of a page-table node (512 entries).
const NODE_BYTES: u64 = 4096;

/// Page-table nodes a walker creates at most: 2^32, far beyond what fits in a host's memory
/// (each is an entry of `Walker::nodes`), so that node addresses stay below [`TABLE_END`].
const MAX_NODES: u64 = 1 << 32;

/// Physical addresses of page-table entries are below this: what bounds the L2 cache's tags.
pub const TABLE_END: u64 = TABLE_BASE + MAX_NODES * NODE_BYTES;

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
    /// Walks by page (`key`): the last tracked of each, in flight until it ends unless
    /// over (see [`Tracked::is_over`]). Walks over are dropped now and then ([`Walker::sweep`]).
    pending: FxHashMap<(AppId, u64), Tracked>,
    /// The latest cycle a walk was tracked at: a walk that ended by then is over, unless it
    /// was tracked after that cycle had been reached (`Tracked::late`).
    latest: u64,
    /// Walks tracked late, by end, earliest first: each is over from the first walk tracked
    /// at or after its end.
    late: BinaryHeap<Reverse<(u64, AppId, u64)>>,
    /// The size of `pending` at which walks over are dropped next.
    sweep_at: usize,
    /// A filter before `pending`: per bucket of keys (see [`bucket`]), the latest completion
    /// tracked for any of them. A request at or after its bucket's needs no lookup, which
    /// is nearly every request: the map is probed only for pages whose walk may be in flight.
    recent: Vec<u64>,
    /// Page-table nodes by (application, level, page-number prefix), numbered as created.
    nodes: FxHashMap<(AppId, u32, u64), u64>,
    /// The nodes of the top three levels by (application, page number >> 18): what every
    /// walk within a page directory's gigabyte shares, found with one lookup, not three.
    upper: FxHashMap<(AppId, u64), [u64; 3]>,
    /// Whether a walk of a large page was ever tracked: until one is, requests need not
    /// look for one (under a manager that maps no large page, never).
    large_tracked: bool,
    counts: WalkCounts,
}

/// A walk tracked in flight.
#[derive(Clone, Copy, Debug)]
struct Tracked {
    /// The cycle it ends.
    end: u64,
    /// Whether it was tracked when a walk at or after its end had been tracked already (the
    /// SMs' clocks are not in step: a walk of one may end before another's is tracked).
    late: bool,
}

impl Tracked {
    /// Whether the walk is over for every request to come, `latest` being the latest cycle
    /// a walk was tracked at. A walk is over from the first walk tracked at or after its end,
    /// whatever the time of requests after that (they may be earlier, from SMs behind): the
    /// same as dropping walks in order of end as each walk is tracked, without the order.
    fn is_over(&self, latest: u64) -> bool {
        !self.late && self.end <= latest
    }
}

/// The smallest `pending` map swept of walks over: sweeps cost a pass over the map, so they
/// wait until it has doubled since the last. (Tests sweep small maps, often.)
const MIN_SWEEP: usize = if cfg!(test) { 1 << 4 } else { 1 << 10 };

/// Buckets of the filter before the in-flight map: a power of two well above the walks in
/// flight (64), so that a bucket rarely holds a walk of another page.
const BUCKETS: usize = 1 << 12;

/// The filter bucket of `key` of `app`.
#[inline]
fn bucket(app: AppId, key: u64) -> usize {
    let h = (key ^ u64::from(app) << 40).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> (64 - BUCKETS.trailing_zeros())) as usize
}

/// The physical address of the entry for `vpn` in `node`, a node of level `level`.
fn entry_address(node: u64, vpn: u64, level: u32) -> u64 {
    let below = BITS_PER_LEVEL * (LEVELS - level);
    let index = (vpn >> (below - BITS_PER_LEVEL)) & ((1 << BITS_PER_LEVEL) - 1);
    TABLE_BASE + node * NODE_BYTES + index * ENTRY_BYTES
}

/// The key of `vpn`'s walk: its base page, or its chunk (tagged) when mapped large.
fn key(vpn: u64, large: bool) -> u64 {
    if large { (vpn / PAGES_PER_LARGE) | LARGE_KEY } else { vpn }
}

/// The bit that marks a large page's key.
const LARGE_KEY: u64 = 1 << 63;

impl Walker {
    /// An idle walker of `max_walks` slots.
    pub fn new(max_walks: usize) -> Walker {
        Walker {
            slots: Slots::new(max_walks),
            pending: FxHashMap::default(),
            latest: 0,
            late: BinaryHeap::new(),
            sweep_at: MIN_SWEEP,
            recent: vec![0; BUCKETS],
            nodes: FxHashMap::default(),
            upper: FxHashMap::default(),
            large_tracked: false,
            counts: WalkCounts::default(),
        }
    }

    /// The cycle the in-flight walk for `vpn` of `app` completes, when one is still in
    /// flight at `now` (the request then merges with it, and is counted).
    #[inline]
    pub fn in_flight(&mut self, app: AppId, vpn: u64, now: u64) -> Option<u64> {
        let done = match self.pending_after(app, key(vpn, false), now) {
            Some(done) => done,
            None if self.large_tracked => self.pending_after(app, key(vpn, true), now)?,
            None => return None,
        };
        self.counts.merged += 1;
        Some(done)
    }

    /// The completion of the walk tracked for `key` of `app`, when it is after `now`.
    #[inline]
    fn pending_after(&self, app: AppId, key: u64, now: u64) -> Option<u64> {
        if self.recent[bucket(app, key)] <= now {
            return None;
        }
        self.pending.get(&(app, key)).filter(|walk| walk.end > now && !walk.is_over(self.latest)).map(|walk| walk.end)
    }

    /// Walks the table of `app` for base page `vpn`, which the memory manager maps `large`
    /// or not, starting when the request arrives at `now`; returns the cycle its translation
    /// is known, and records it in flight until `done + extra` (a far fault's transfer
    /// following the walk).
    pub fn walk(&mut self, caches: &mut Caches, app: AppId, vpn: u64, large: bool, now: u64, extra: u64) -> u64 {
        let start = self.slots.acquire(now);
        let leaf = if large { LEVELS - 1 } else { LEVELS };
        let upper = self.upper_nodes(app, vpn);
        let mut t = start;
        for level in 0..leaf {
            let node = if level < LEVELS - 1 { upper[level as usize] } else { self.node(app, vpn, level) };
            t += caches.shared(entry_address(node, vpn, level), t);
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

    /// Records a walk tracked at `now` in flight until `done`, which makes the walks that
    /// ended by `now` over.
    fn track(&mut self, app: AppId, key: u64, done: u64, now: u64) {
        self.latest = self.latest.max(now);
        self.end_late(now);
        self.large_tracked |= key & LARGE_KEY != 0;
        let late = done <= self.latest;
        self.pending.insert((app, key), Tracked { end: done, late });
        if late {
            self.late.push(Reverse((done, app, key)));
        }
        let b = bucket(app, key);
        self.recent[b] = self.recent[b].max(done);
        if self.pending.len() >= self.sweep_at {
            self.sweep();
        }
    }

    /// Drops the late walks that ended by `now`.
    fn end_late(&mut self, now: u64) {
        while let Some(&Reverse((end, a, k))) = self.late.peek().filter(|Reverse((end, ..))| *end <= now) {
            self.late.pop();
            // Unless a later walk of the page replaced it.
            if let Entry::Occupied(walk) = self.pending.entry((a, k)) {
                if walk.get().late && walk.get().end == end {
                    walk.remove();
                }
            }
        }
    }

    /// Drops the walks over, so the map stays about the size of what is in flight.
    fn sweep(&mut self) {
        let latest = self.latest;
        self.pending.retain(|_, walk| !walk.is_over(latest));
        self.sweep_at = (2 * self.pending.len()).max(MIN_SWEEP);
    }

    /// The number of the level-`level` node (0: the root) on `vpn`'s path, created (numbered
    /// next) when the walk is its first.
    fn node(&mut self, app: AppId, vpn: u64, level: u32) -> u64 {
        let prefix = vpn >> (BITS_PER_LEVEL * (LEVELS - level));
        let count = self.nodes.len() as u64;
        *self.nodes.entry((app, level, prefix)).or_insert_with(|| {
            assert!(count < MAX_NODES, "2^32 page-table nodes: more than a host's memory holds");
            count
        })
    }

    /// The nodes of levels 0 to 2 on `vpn`'s path.
    fn upper_nodes(&mut self, app: AppId, vpn: u64) -> [u64; 3] {
        let region = vpn >> (2 * BITS_PER_LEVEL);
        if let Some(&nodes) = self.upper.get(&(app, region)) {
            return nodes;
        }
        let nodes = [0, 1, 2].map(|level| self.node(app, vpn, level));
        self.upper.insert((app, region), nodes);
        nodes
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

    /// In-flight walks by their definition: every walk tracked, dropped at the first walk
    /// tracked at or after its end (unless a later walk of its page replaced it).
    #[derive(Default)]
    struct NaiveInFlight {
        tracked: Vec<(AppId, u64, u64)>,
        last: std::collections::HashMap<(AppId, u64), u64>,
    }

    impl NaiveInFlight {
        fn track(&mut self, app: AppId, key: u64, done: u64, now: u64) {
            let last = &mut self.last;
            self.tracked.retain(|&(a, k, end)| {
                if end <= now && last.get(&(a, k)) == Some(&end) {
                    last.remove(&(a, k));
                }
                end > now
            });
            self.last.insert((app, key), done);
            self.tracked.push((app, key, done));
        }

        fn pending_after(&self, app: AppId, key: u64, now: u64) -> Option<u64> {
            self.last.get(&(app, key)).copied().filter(|&end| end > now)
        }
    }

    proptest::proptest! {
        /// The walker's in-flight walks, through walks tracked at cycles that go back and
        /// forth (SMs' clocks are not in step) and enough of them to sweep the map, are
        /// those of the definition at every query.
        #[test]
        fn in_flight_walks_follow_their_definition(ops in proptest::collection::vec((0u16..2, 0u64..400, 0u64..200, 0u64..600), 1..3000)) {
            let mut w = Walker::new(64);
            let mut naive = NaiveInFlight::default();
            let mut clock = 0u64;
            for (app, key, back, length) in ops {
                // Half the walks on a few pages (queries find them), half on many (the map grows
                // to sweeps).
                let key = if key % 2 == 0 { key % 40 } else { key };
                clock += 3;
                let now = clock.saturating_sub(back);
                if length % 3 == 0 {
                    proptest::prop_assert_eq!(w.pending_after(app, key, now), naive.pending_after(app, key, now));
                } else {
                    // Some walks end before others already tracked: late ones.
                    let done = now + length / 4;
                    w.track(app, key, done, now);
                    naive.track(app, key, done, now);
                }
            }
        }
    }

    #[test]
    fn entries_of_neighbouring_pages_share_a_node_and_a_cache_line() {
        let mut w = Walker::new(64);
        let address = |w: &mut Walker, app, vpn| entry_address(w.node(app, vpn, 3), vpn, 3);
        assert_eq!(address(&mut w, 0, 0x1000) + 8, address(&mut w, 0, 0x1001));
        assert_ne!(address(&mut w, 0, 0x1000), address(&mut w, 1, 0x1000), "applications have their own tables");
        let upper = w.upper_nodes(0, 0x1000);
        assert_eq!(upper, [0, 1, 2].map(|level| w.node(0, 0x1000, level)), "the top levels' nodes, remembered");
    }
}
