//! Tests of the OS model: demand paging, eviction policies against brute-force models, and
//! the placement invariants of iceberg memory.

use super::*;
use crate::os::iceberg::{IcebergSpec, Slot};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::{HashMap, VecDeque};

mod address_space;
mod kernel_work;
mod swap_cache;
mod thp;

/// A TLB miss of a machine's first TLB, through the one walk API: the tests' shorthand.
trait Miss {
    fn miss(&mut self, asid: Asid, vaddr: u64) -> std::result::Result<Translation, OutOfMemory>;
}

impl Miss for Os {
    fn miss(&mut self, asid: Asid, vaddr: u64) -> std::result::Result<Translation, OutOfMemory> {
        self.walk(asid, vaddr, WalkBy::FirstTlb, &mut crate::mmu::NoReads).map(|w| w.translation)
    }
}

fn spec(memory: u64, page_size: PageSize, placement: PlacementSpec) -> OsSpec {
    OsSpec { page_size, ..OsSpec::simple(memory, placement) }
}

/// Touches page `vpn` of ASID 0 the way a machine does: a walk, then a use.
fn touch(os: &mut Os, vpn: u64) -> Translation {
    let t = os.miss(0, vpn << 12).unwrap();
    if os.tracks_use() {
        let _scanned = os.access(t.pfn, false).unwrap();
    }
    t
}

#[test]
fn first_touch_faults_once() {
    let mut os = Os::new(&spec(1 << 20, PageSize::Size4K, PlacementSpec::Sequential), 0);
    let a = os.miss(0, 0x5123).unwrap();
    let b = os.miss(0, 0x5fff).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.pfn, Pfn(0));
    let c = os.miss(1, 0x5000).unwrap();
    assert_eq!(c.pfn, Pfn(1));
    assert_eq!(os.stats().page_faults, 2);
    assert_eq!(os.stats().walks, 3);
    assert_eq!(os.stats().footprint_bytes, 8192);
}

#[test]
fn huge_pages_map_aligned_frames() {
    let mut os = Os::new(&spec(8 << 21, PageSize::Size2M, PlacementSpec::Random), 7);
    let t = os.miss(0, 0x40_1234).unwrap();
    assert_eq!(t.vpn, Vpn(1024));
    assert_eq!(t.pfn.0 % 512, 0);
    assert!(t.pfn.0 < 8 * 512);
}

#[test]
fn exhaustion_is_an_error_not_a_panic() {
    let mut os = Os::new(&spec(2 << 12, PageSize::Size4K, PlacementSpec::Random), 1);
    os.miss(0, 0).unwrap();
    os.miss(0, 0x1000).unwrap();
    let oom = os.miss(0, 0x2000).unwrap_err();
    assert_eq!(oom.reason, NoFrame::Full);
    let err = os.describe(oom).to_string();
    assert!(err.contains("out of physical memory"), "{err}");
}

#[test]
fn set_conflict_without_eviction_is_an_error() {
    let mut os = Os::new(&OsSpec::simple(8 << 12, PlacementSpec::SetAssociative { ways: 2 }), 1);
    touch(&mut os, 0);
    touch(&mut os, 4);
    let oom = os.miss(0, 8 << 12).unwrap_err();
    assert_eq!(oom.reason, NoFrame::Conflict);
    assert!(os.describe(oom).to_string().contains("associativity conflict"));
    assert_eq!(os.stats().first_conflict_utilization, Some(0.25));
}

#[test]
fn iceberg_conflict_without_eviction_is_an_error() {
    // Pages until the first conflict: an error (not a read of the last uses an OS that does
    // not evict keeps none of), at the utilization where the conflict came.
    let mut os = iceberg_os(64, EvictionSpec::default(), None);
    let oom = (0..64 * 64).find_map(|vpn| os.miss(0, vpn << 12).err()).expect("a conflict before memory is full");
    assert_eq!(oom.reason, NoFrame::Conflict);
    assert!(os.describe(oom).to_string().contains("associativity conflict"));
    let at = os.stats().first_conflict_utilization.expect("recorded");
    assert!(at > 0.8 && at < 1.0, "{at}");
}

/// A deterministic pseudo-random page stream with reuse (a skewed mix of hot and cold pages).
fn stream(len: usize, pages: u64, seed: u64) -> Vec<u64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    (0..len)
        .map(|_| if rng.random::<f64>() < 0.5 { rng.random_range(0..pages / 8) } else { rng.random_range(0..pages) })
        .collect()
}

/// Global LRU over `frames` frames the slow, obvious way: a recency list of pages, most
/// recent first, and the set of pages evicted (whose next touch is a swap-in).
struct BruteLru<K> {
    frames: usize,
    order: VecDeque<K>,
    evicted: std::collections::HashSet<K>,
    /// With the swap cache: the resident pages whose copy in swap is good.
    copies: Option<std::collections::HashSet<K>>,
    /// Slots of a bounded swap area: a swap-in drops its copy when more than half of them
    /// are held, by pages evicted and by copies.
    slots: Option<usize>,
    swap_outs: u64,
    swap_ins: u64,
    evictions: u64,
    full_frees: u64,
    /// The most slots held at once.
    peak: usize,
}

impl<K: Copy + Eq + std::hash::Hash> BruteLru<K> {
    fn new(frames: usize) -> BruteLru<K> {
        BruteLru { frames, order: VecDeque::new(), evicted: Default::default(), copies: None, slots: None, swap_outs: 0, swap_ins: 0, evictions: 0, full_frees: 0, peak: 0 }
    }

    /// Slots held: one per page evicted, one per copy kept.
    fn held(&self) -> usize {
        self.evicted.len() + self.copies.as_ref().map_or(0, |c| c.len())
    }

    /// A load of `page`; returns the page it evicted, if any.
    fn touch(&mut self, page: K) -> Option<K> {
        self.touch_kind(page, false)
    }

    /// A load or, if `store`, a store of `page`; returns the page it evicted, if any.
    fn touch_kind(&mut self, page: K, store: bool) -> Option<K> {
        let mut victim = None;
        if let Some(pos) = self.order.iter().position(|&p| p == page) {
            self.order.remove(pos);
        } else {
            // Room first, as the kernel reclaims while allocating the page to read into; the
            // page swapped in holds its slot meanwhile.
            if self.order.len() == self.frames {
                victim = self.order.pop_back();
                self.evicted.extend(victim);
                self.evictions += 1;
                let written = !self.copies.as_mut().is_some_and(|c| victim.is_some_and(|v| c.remove(&v)));
                self.swap_outs += u64::from(written);
                self.peak = self.peak.max(self.held());
            }
            if self.evicted.remove(&page) {
                self.swap_ins += 1;
                self.copies.iter_mut().for_each(|c| _ = c.insert(page));
                let held = self.held();
                if self.copies.is_some() && self.slots.is_some_and(|slots| held * 2 > slots) {
                    self.copies.iter_mut().for_each(|c| _ = c.remove(&page));
                    self.full_frees += 1;
                }
            }
        }
        if store {
            self.copies.iter_mut().for_each(|c| _ = c.remove(&page));
        }
        self.order.push_front(page);
        victim
    }
}

/// Feeds `os` and `model` the same 20,000 references of a skewed stream over 100 pages, one
/// in `stores` of them a store.
fn lockstep(os: &mut Os, model: &mut BruteLru<u64>, stores: u32) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    for vpn in stream(20_000, 100, 6) {
        let store = rng.random_ratio(1, stores);
        let t = os.miss(0, vpn << 12).unwrap();
        os.access(t.pfn, store).unwrap();
        os.take_shootdowns();
        model.touch_kind(vpn, store);
    }
}

/// Under the swap cache a page swapped back in keeps its copy in swap until a store, so
/// evicting it again writes nothing: exact LRU over loads and stores (a third of them, the
/// faulting reference's included) matches a brute-force LRU that writes only pages without
/// a good copy, in evictions, writes and reads; without the swap cache every eviction writes.
#[test]
fn the_swap_cache_writes_only_pages_without_a_good_copy() {
    for swap_cache in [false, true] {
        let frames = 64;
        let spec = OsSpec { eviction: EvictionSpec::Lru(Default::default()), swap_cache, ..OsSpec::simple(frames << 12, PlacementSpec::Random) };
        let mut os = Os::new(&spec, 3);
        let mut model = BruteLru::new(frames as usize);
        model.copies = swap_cache.then(Default::default);
        lockstep(&mut os, &mut model, 3);
        let s = os.stats();
        assert_eq!((s.evictions, s.swap_outs, s.swap_ins), (model.evictions, model.swap_outs, model.swap_ins), "swap cache {swap_cache}");
        assert_eq!(s.swap_outs < s.evictions, swap_cache, "swap cache {swap_cache}: {s:?}");
    }
}

/// With a swap area of 40 to 200 slots for a footprint of 100 pages over 64 frames, exact LRU
/// matches the brute-force LRU that drops the copy of each page it swaps in while more than
/// half of the slots are held: writes, those drops and the most slots held. A swap area too
/// small for what is swapped out is an error naming `os.swap`.
#[test]
fn a_swap_area_more_than_half_full_frees_the_slots_of_pages_swapped_in() {
    for slots in [40, 48, 60, 96, 200] {
        let spec = OsSpec { eviction: EvictionSpec::Lru(Default::default()), swap_cache: true, swap_slots: Some(slots), ..OsSpec::simple(64 << 12, PlacementSpec::Random) };
        let mut os = Os::new(&spec, 3);
        let mut model = BruteLru::new(64);
        (model.copies, model.slots) = (Some(Default::default()), Some(slots as usize));
        lockstep(&mut os, &mut model, 5);
        let s = os.stats();
        assert_eq!((s.swap_outs, s.swap_ins, s.swap_full_frees, s.peak_swap_bytes >> 12), (model.swap_outs, model.swap_ins, model.full_frees, model.peak as u64), "{slots} slots");
        // At least 36 pages are always out; 200 slots are never more than half held.
        assert_eq!(s.swap_full_frees > 0, slots < 200, "{slots} slots: {s:?}");
    }
    let spec = OsSpec { eviction: EvictionSpec::Lru(Default::default()), swap_cache: true, swap_slots: Some(20), ..OsSpec::simple(64 << 12, PlacementSpec::Random) };
    let mut os = Os::new(&spec, 3);
    let oom = (0..100).find_map(|vpn| os.miss(0, vpn << 12).err()).expect("21 pages to write into 20 slots");
    assert_eq!((oom.reason, oom.vaddr), (NoFrame::SwapFull, 84 << 12));
    assert!(os.describe(oom).to_string().contains("out of swap: all 20 slots of os.swap"), "{}", os.describe(oom));
}

/// Under Linux-like reclaim (one look, 4 frames) a page promoted while swap is more than
/// half full gives its slot up, as `shrink_page_list` does at `activate_locked`. Traced by
/// hand with 8 slots: 4 and 5 evict 0 and 1; 0 faults back (evicting 2; 3 of 8 slots held,
/// so it keeps its copy) and is used again; 6 to 8 evict 3 to 5 (6 slots held); 9 finds 0
/// referenced at the inactive list's end and promotes it (its slot freed), then evicts 6.
#[test]
fn linux_frees_the_slot_of_a_page_it_promotes_while_swap_is_more_than_half_full() {
    let linux = EvictionSpec::Linux(crate::os::eviction::LinuxSpec { reserve: 0.0, inactive_ratio: InactiveRatio::Kernel, workingset: false, look_twice: false });
    let spec = OsSpec { eviction: linux, swap_cache: true, swap_slots: Some(8), ..OsSpec::simple(4 << 12, PlacementSpec::Random) };
    let mut os = Os::new(&spec, 1);
    for vpn in [0, 1, 2, 3, 4, 5, 0, 0, 6, 7, 8] {
        touch(&mut os, vpn);
        os.take_shootdowns();
    }
    let before = os.stats();
    assert_eq!((before.swap_outs, before.swap_full_frees, before.peak_swap_bytes >> 12), (6, 0, 6), "{before:?}");
    touch(&mut os, 9);
    let s = os.stats();
    assert_eq!((s.swap_outs, s.swap_full_frees, s.reclaim.unwrap().activations), (7, 1, 1), "{s:?}");
    assert_eq!(os.swap.used(), 6, "slots of 1 to 6, and none for 0 any more");
}

#[test]
fn exact_lru_matches_a_brute_force_lru() {
    let frames = 64;
    let mut os = Os::new(&OsSpec { eviction: EvictionSpec::Lru(Default::default()), ..OsSpec::simple(frames << 12, PlacementSpec::Random) }, 3);
    let mut model = BruteLru::new(frames as usize);
    let mut shot = 0;
    for vpn in stream(20_000, 200, 1) {
        touch(&mut os, vpn);
        model.touch(vpn);
        shot += os.take_shootdowns().map_or(0, |d| d.count() as u64);
    }
    let s = os.stats();
    assert_eq!((s.swap_outs, s.swap_ins), (model.swap_outs, model.swap_ins));
    assert_eq!(s.shootdowns, shot, "every page handed over for a shootdown is counted");
    assert!(model.swap_outs > 1000, "the stream must exercise eviction");
    let age = s.eviction_age;
    assert!(age.is_none());
}

fn iceberg_os(buckets: u64, eviction: EvictionSpec, age_window: Option<u64>) -> Os {
    let spec = OsSpec {
        eviction,
        age_window,
        ..OsSpec::simple((buckets * 64) << 12, PlacementSpec::Iceberg(IcebergSpec::default()))
    };
    Os::new(&spec, 5)
}

/// Checks, after every reference of a stream under memory pressure, that each resident page
/// sits in one of its own candidate slots, that its frame never changed while it stayed
/// resident, and that the page table and the frames agree.
fn check_placement_invariants(eviction: EvictionSpec) {
    let mut os = iceberg_os(8, eviction, None);
    let layout = os.iceberg().unwrap().clone();
    let mut home: HashMap<u64, u64> = HashMap::new();
    for vpn in stream(30_000, 800, 2) {
        let t = touch(&mut os, vpn);
        if let Some(unmapped) = os.take_shootdowns() {
            for page in unmapped {
                home.remove(&page.vpn.0);
            }
        }
        let frame = t.pfn.0;
        assert_eq!(*home.entry(vpn).or_insert(frame), frame, "page {vpn} moved while resident");
        let key = page_key(0, Vpn(vpn));
        let slot = iceberg_placement::slot_of(&layout, key, frame).expect("frame is a candidate");
        assert_eq!(layout.decode_frame(key, layout.encode(slot)), Some(frame));
        assert_eq!(os.cpfn(0, vpn << 12).and_then(|c| layout.decode_frame(key, c)), Some(frame));
    }
    assert_eq!(home.len() as u64, os.frames().used());
    assert!(os.stats().evictions > 1000);
}

#[test]
fn iceberg_placement_is_stable_and_within_candidates() {
    check_placement_invariants(EvictionSpec::HorizonLru(Default::default()));
    check_placement_invariants(EvictionSpec::Lru(Default::default()));
    check_placement_invariants(EvictionSpec::IcebergLru(crate::os::eviction::IcebergLruSpec { delta: 0.13 }));
    check_placement_invariants(EvictionSpec::LazyIcebergLru(crate::os::eviction::LazyIcebergLruSpec { delta: 0.13 }));
}

#[test]
fn lazy_iceberg_lru_marks_the_oldest_pages_and_evicts_only_for_room() {
    // After every fault: the marked pages are the oldest resident pages, those beyond the
    // `1 - δ` limit (brute force over all frames); a fault evicts at most one page, a
    // marked one unless every candidate is live; and memory fills up, as Iceberg LRU's
    // eager evictions would not let it.
    let mut os = iceberg_os(8, EvictionSpec::LazyIcebergLru(crate::os::eviction::LazyIcebergLruSpec { delta: 0.13 }), None);
    let limit = 512 - (512.0 * 0.13f64).floor() as u64;
    let layout = os.iceberg().unwrap().clone();
    for vpn in stream(30_000, 800, 5) {
        let key = page_key(0, Vpn(vpn));
        let resident = os.cpfn(0, vpn << 12).is_some();
        let marked = |os: &Os, f: u64| matches!(os.policy.ghosts(), crate::os::iceberg::placement::Ghosts::Marked(e) if e.is_marked(f));
        let before = os.stats();
        touch(&mut os, vpn);
        os.take_shootdowns();
        let after = os.stats();
        let live_evictions = (after.evictions - before.evictions) - (after.ghost_evictions - before.ghost_evictions);
        if resident {
            assert_eq!(after.evictions, before.evictions);
            continue;
        }
        assert!(after.evictions - before.evictions <= 1);
        let any_free_or_marked = iceberg_placement::candidates(&layout, key).any(|(_, f)| os.frames().is_free(f) || marked(&os, f));
        assert!(live_evictions == 0 || !any_free_or_marked, "page {vpn}: a live page went while a slot was free or marked");
        let occupied: Vec<u64> = (0..512).filter(|&f| !os.frames().is_free(f)).collect();
        let (old, young): (Vec<u64>, Vec<u64>) = occupied.iter().partition(|&&f| marked(&os, f));
        assert!(young.len() as u64 <= limit, "{} unmarked pages", young.len());
        let newest_marked = old.iter().map(|&f| os.frames().stamp(f)).max();
        let oldest_unmarked = young.iter().map(|&f| os.frames().stamp(f)).min();
        assert!(newest_marked.is_none() || newest_marked < oldest_unmarked, "a marked page is younger than an unmarked one");
    }
    let s = os.stats();
    assert!(s.ghost_evictions > 1000 && os.frames().used() > limit, "{s:?}");
}

#[test]
fn horizon_lru_evicts_a_live_page_only_when_no_candidate_is_free_or_a_ghost() {
    let mut os = iceberg_os(8, EvictionSpec::HorizonLru(Default::default()), None);
    let layout = os.iceberg().unwrap().clone();
    for vpn in stream(30_000, 800, 3) {
        // Before the fault, classify the candidates the way the rule must.
        let resident = os.cpfn(0, vpn << 12).is_some();
        let key = page_key(0, Vpn(vpn));
        let horizon = os.horizon().expect("Horizon LRU keeps a horizon");
        let any_free_or_ghost = iceberg_placement::candidates(&layout, key)
            .any(|(_, f)| os.frames().is_free(f) || os.frames().stamp(f) < horizon);
        let before = os.stats();
        touch(&mut os, vpn);
        let after = os.stats();
        os.take_shootdowns();
        let live_evictions = (after.evictions - before.evictions) - (after.ghost_evictions - before.ghost_evictions);
        if resident {
            assert_eq!(after.evictions, before.evictions);
        } else if any_free_or_ghost {
            assert_eq!(live_evictions, 0, "page {vpn}: a live page was evicted while a ghost or free slot existed");
        } else {
            assert_eq!(live_evictions, 1);
            assert!(os.horizon() >= Some(horizon));
        }
    }
    assert!(os.stats().ghost_evictions > 0 && os.stats().conflicts > 0);
}

#[test]
fn iceberg_lru_evicts_the_oldest_page_and_keeps_delta_free() {
    let mut os = iceberg_os(16, EvictionSpec::IcebergLru(crate::os::eviction::IcebergLruSpec { delta: 0.13 }), Some(100));
    for vpn in 0..20_000 {
        touch(&mut os, vpn);
        os.take_shootdowns();
    }
    let s = os.stats();
    let limit = 1024 - (1024.0 * 0.13f64).floor() as u64;
    assert_eq!(os.frames().used(), limit);
    let age = s.eviction_age.unwrap();
    // Evictions past the first are of the oldest page, except rare conflicts.
    assert!(age.mean.is_some_and(|m| m < 0.01), "{age:?}");
}

#[test]
fn horizon_lru_on_a_unique_stream_evicts_young_pages_sometimes() {
    let mut os = iceberg_os(16, EvictionSpec::HorizonLru(Default::default()), Some(100));
    for vpn in 0..20_000 {
        touch(&mut os, vpn);
        os.take_shootdowns();
    }
    let s = os.stats();
    let age = s.eviction_age.unwrap();
    assert!(age.mean.is_some_and(|m| m > 0.0 && m < 0.5), "{age:?}");
    assert!(s.steady_state_utilization.unwrap() > 0.95);
    assert!(s.first_conflict_utilization.unwrap() > 0.8);
}

#[test]
fn linux_reclaim_keeps_its_reserve_and_counts_swap() {
    let frames = 1000;
    let spec = OsSpec { eviction: EvictionSpec::Linux(crate::os::eviction::LinuxSpec { reserve: 0.008, inactive_ratio: InactiveRatio::Kernel, workingset: true, look_twice: true }), ..OsSpec::simple(frames << 12, PlacementSpec::Random) };
    let mut os = Os::new(&spec, 1);
    for vpn in stream(50_000, 2000, 4) {
        touch(&mut os, vpn);
        os.take_shootdowns();
    }
    let s = os.stats();
    assert_eq!(os.frames().used(), 992);
    assert!(s.swap_outs > 0 && s.swap_ins > 0 && s.swap_ins <= s.swap_outs);
    assert_eq!(s.footprint_bytes, 2000 << 12);
}

/// Refault detection through the OS: pages 0..600 used often, then a loop over 700 new pages
/// on 1000 frames (ratio 1). Without it, the old pages keep half the lists and the loop
/// swaps in every round; with it, the loop's refaults are activated and it settles in memory.
#[test]
fn linux_refault_detection_lets_a_new_working_set_settle() {
    let swap_ins = |workingset| {
        let eviction = EvictionSpec::Linux(crate::os::eviction::LinuxSpec { reserve: 0.0, inactive_ratio: InactiveRatio::Fixed(1), workingset, look_twice: false });
        let mut os = Os::new(&OsSpec { eviction, ..OsSpec::simple(1000 << 12, PlacementSpec::Random) }, 1);
        for _ in 0..4 {
            (0..600).for_each(|vpn| _ = touch(&mut os, vpn));
        }
        let before = os.stats().swap_ins;
        for _ in 0..20 {
            (10_000..10_700).for_each(|vpn| _ = touch(&mut os, vpn));
            os.take_shootdowns();
        }
        os.stats().swap_ins - before
    };
    let (without, with) = (swap_ins(false), swap_ins(true));
    assert_eq!(without, 19 * 700, "without refault detection every round after the first swaps in");
    assert!(with <= 2 * 700, "with refault detection: {with} swap-ins");
}

#[test]
fn scan_recency_approximates_lru() {
    let frames = 256;
    let lru = |recency| {
        let spec = OsSpec { eviction: EvictionSpec::Lru(Default::default()), recency, ..OsSpec::simple(frames << 12, PlacementSpec::Random) };
        let mut os = Os::new(&spec, 1);
        for vpn in stream(100_000, 600, 6) {
            touch(&mut os, vpn);
            os.take_shootdowns();
        }
        os.stats().swap_outs
    };
    let exact = lru(Recency::Access);
    let scanned = lru(Recency::Scan { period: 500, hot_sample: 0.2, history: 8 });
    let fill = lru(Recency::Fill);
    // Coarser recency evicts worse than exact LRU, but not wildly (the stream has a hot set).
    assert!(scanned >= exact * 95 / 100 && scanned < exact * 2, "exact {exact} scan {scanned}");
    assert!(fill >= exact, "exact {exact} fill {fill}");
}

#[test]
fn swapped_out_pages_fault_back_in_elsewhere() {
    let mut os = Os::new(&OsSpec { eviction: EvictionSpec::Lru(Default::default()), ..OsSpec::simple(2 << 12, PlacementSpec::Sequential) }, 1);
    touch(&mut os, 10);
    touch(&mut os, 11);
    touch(&mut os, 12);
    assert_eq!(os.take_shootdowns().unwrap().collect::<Vec<_>>(), vec![Page { asid: 0, vpn: Vpn(10), size: PageSize::Size4K }]);
    assert!(os.take_shootdowns().is_none());
    touch(&mut os, 10);
    let s = os.stats();
    assert_eq!((s.swap_outs, s.swap_ins, s.page_faults, s.footprint_bytes), (2, 1, 4, 3 << 12));
    let _ = Slot::Front(0);
}

#[test]
fn a_page_placed_in_a_scanned_frame_starts_cold() {
    // One frame, a scan after every use, hot after one used scan, hot pages never read.
    let recency = Recency::Scan { period: 1, hot_sample: 0.0, history: 1 };
    let spec = OsSpec { eviction: EvictionSpec::Lru(Default::default()), recency, ..OsSpec::simple(1 << 12, PlacementSpec::Sequential) };
    let mut os = Os::new(&spec, 1);
    touch(&mut os, 10);
    touch(&mut os, 10);
    // Page 10 is hot now: the second scan counted it used without clearing its bit.
    assert_eq!(os.stats().scan_shootdowns, 1);
    // Page 11 evicts it and takes its frame, but not its history: the scan reads its bit.
    touch(&mut os, 11);
    assert_eq!((os.stats().swap_outs, os.stats().scan_shootdowns, os.stats().shootdowns), (1, 2, 3));
}

/// The pages evicted (in order) when ASID 0 touches `vpns` in turn, each touch a walk and a use
/// (the machine's sequence with no TLB: every reference walks).
fn evicted_pages(os: &mut Os, vpns: &[u64]) -> Vec<u64> {
    let mut out = Vec::new();
    for &vpn in vpns {
        touch(os, vpn);
        if let Some(d) = os.take_shootdowns() {
            out.extend(d.map(|page| page.vpn.0));
        }
    }
    out
}

/// Pages 1, 2, 3 are touched once (their fault), page 0 twice, then page 4 faults. Under
/// one look (`LinuxLists::insert`: a new page is "not yet referenced: the fault is its first
/// use"), page 0 alone was referenced since it entered the inactive list, so reclaim promotes
/// it and evicts page 1. Under the look-twice rule the fault counts as the accessed bit
/// does, which cannot count two uses: all four pages are young at their first look and
/// rotated, and page 0, the oldest, goes at its second. With no TLB every reference walks,
/// so `recency = "fill"` and `recency = "access"` see the same uses and must agree.
#[test]
fn linux_the_fault_counts_only_when_looking_twice() {
    for (look_twice, expected) in [(false, 1), (true, 0)] {
        for recency in [Recency::Fill, Recency::Access] {
            let spec = OsSpec {
                eviction: EvictionSpec::Linux(crate::os::eviction::LinuxSpec { reserve: 0.0, inactive_ratio: InactiveRatio::Fixed(1), workingset: false, look_twice }),
                recency,
                ..OsSpec::simple(4 << 12, PlacementSpec::Sequential)
            };
            let mut os = Os::new(&spec, 1);
            let evicted = evicted_pages(&mut os, &[0, 1, 2, 3, 0, 4]);
            assert_eq!(evicted, vec![expected], "{recency:?}, look twice {look_twice}");
        }
    }
}

/// An independent model of Horizon LRU as DESIGN.md and docs/configuration.md state it, with
/// its own timestamps (the reference number) and horizon: a free front-yard slot, else the
/// oldest ghost of the front yard, else the least-loaded backyard counting ghosts as free
/// (first such choice), its first free slot or oldest ghost; if all candidates are live, the
/// oldest candidate goes and the horizon rises to its timestamp. Also the relative age of
/// each eviction by brute force (rank among resident pages / (resident - 1)).
struct HorizonModel {
    layout: iceberg::Layout,
    /// frame -> (vpn, stamp)
    frames: HashMap<u64, (u64, u64)>,
    home: HashMap<u64, u64>,
    swapped: std::collections::HashSet<u64>,
    horizon: u64,
    evicted: Vec<u64>,
    ghost_evictions: u64,
    swap_ins: u64,
    ages: Vec<f64>,
    /// Lazy Iceberg LRU instead: the resident limit, and the marked frames (the ghosts).
    lazy: Option<u64>,
    marked: std::collections::HashSet<u64>,
    first_conflict: Option<f64>,
    conflicts: u64,
}

impl HorizonModel {
    fn ghost(&self, f: u64) -> bool {
        if self.lazy.is_some() {
            return self.marked.contains(&f);
        }
        self.frames.get(&f).is_some_and(|&(_, s)| s < self.horizon)
    }
    fn live(&self, f: u64) -> bool {
        self.frames.contains_key(&f) && !self.ghost(f)
    }
    fn free_or_oldest_ghost(&self, yard: &[u64]) -> Option<u64> {
        if let Some(&f) = yard.iter().find(|&&f| !self.frames.contains_key(&f)) {
            return Some(f);
        }
        yard.iter().copied().filter(|&f| self.ghost(f)).min_by_key(|f| (self.frames[f].1, *f))
    }
    fn evict(&mut self, f: u64) {
        let (vpn, stamp) = self.frames[&f];
        let older = self.frames.values().filter(|&&(_, s)| s < stamp).count() as f64;
        let resident = self.frames.len() as f64;
        self.ages.push(if resident > 1.0 { older / (resident - 1.0) } else { 0.0 });
        if self.ghost(f) {
            self.ghost_evictions += 1;
        }
        self.marked.remove(&f);
        self.frames.remove(&f);
        self.home.remove(&vpn);
        self.swapped.insert(vpn);
        self.horizon = self.horizon.max(stamp);
        self.evicted.push(vpn);
    }
    fn touch(&mut self, vpn: u64, now: u64) {
        if let Some(&f) = self.home.get(&vpn) {
            self.frames.get_mut(&f).unwrap().1 = now;
            self.marked.remove(&f);
            return;
        }
        if self.swapped.remove(&vpn) {
            self.swap_ins += 1;
        }
        if let Some(limit) = self.lazy {
            while self.frames.len() as u64 - self.marked.len() as u64 >= limit {
                let f = *self.frames.iter().filter(|(f, _)| !self.marked.contains(f)).min_by_key(|(_, &(_, s))| s).unwrap().0;
                self.marked.insert(f);
            }
        }
        let key = page_key(0, Vpn(vpn));
        let spec = *self.layout.spec();
        let front: Vec<u64> = (0..spec.front).map(|s| self.layout.frame(key, Slot::Front(s))).collect();
        let backs: Vec<Vec<u64>> = (1..=spec.choices)
            .map(|choice| (0..spec.back).map(|slot| self.layout.frame(key, Slot::Back { choice, slot })).collect())
            .collect();
        let target = self.free_or_oldest_ghost(&front).or_else(|| {
            let mut best: Option<(usize, usize)> = None;
            for (i, yard) in backs.iter().enumerate() {
                let load = yard.iter().filter(|&&f| self.live(f)).count();
                if load < spec.back as usize && best.is_none_or(|(_, l)| load < l) {
                    best = Some((i, load));
                }
            }
            best.and_then(|(i, _)| self.free_or_oldest_ghost(&backs[i]))
        });
        let frame = match target {
            Some(f) => f,
            None => {
                self.conflicts += 1;
                if self.first_conflict.is_none() && self.frames.len() < 512 {
                    self.first_conflict = Some(self.frames.len() as f64 / 512.0);
                }
                let all: Vec<u64> = front.iter().chain(backs.iter().flatten()).copied().collect();
                *all.iter().min_by_key(|f| self.frames[f].1).unwrap()
            }
        };
        if self.frames.contains_key(&frame) {
            self.evict(frame);
        }
        self.frames.insert(frame, (vpn, now));
        self.home.insert(vpn, frame);
    }
}

fn check_horizon_against_model(vpns: &[u64]) {
    check_against_model(vpns, EvictionSpec::HorizonLru(Default::default()));
}

fn check_against_model(vpns: &[u64], eviction: EvictionSpec) {
    let window = 50;
    let mut os = iceberg_os(8, eviction, Some(window));
    let lazy = match eviction {
        EvictionSpec::LazyIcebergLru(crate::os::eviction::LazyIcebergLruSpec { delta }) => Some(512 - (512.0 * delta).floor() as u64),
        _ => None,
    };
    let mut model = HorizonModel {
        layout: os.iceberg().unwrap().clone(),
        frames: HashMap::new(),
        home: HashMap::new(),
        swapped: Default::default(),
        horizon: 0,
        evicted: Vec::new(),
        ghost_evictions: 0,
        swap_ins: 0,
        ages: Vec::new(),
        lazy,
        marked: Default::default(),
        first_conflict: None,
        conflicts: 0,
    };
    let mut evicted = Vec::new();
    let (mut used_sum, mut used_refs) = (0u64, 0u64);
    for (i, &vpn) in vpns.iter().enumerate() {
        touch(&mut os, vpn);
        if let Some(d) = os.take_shootdowns() {
            evicted.extend(d.map(|page| page.vpn.0));
        }
        model.touch(vpn, i as u64 + 1);
        assert_eq!(evicted.len(), model.evicted.len(), "reference {i} (page {vpn}): evictions diverge");
        if !model.evicted.is_empty() {
            used_sum += model.frames.len() as u64;
            used_refs += 1;
        }
    }
    let util = used_sum as f64 / used_refs as f64 / 512.0;
    let got = os.stats().steady_state_utilization.unwrap();
    assert!((got - util).abs() < 1e-9, "steady-state utilization {got} vs {util}");
    assert_eq!((os.stats().conflicts, os.stats().first_conflict_utilization), (model.conflicts, model.first_conflict));
    assert_eq!(evicted, model.evicted);
    let s = os.stats();
    assert_eq!((s.swap_outs, s.swap_ins, s.ghost_evictions), (model.evicted.len() as u64, model.swap_ins, model.ghost_evictions));
    let age = s.eviction_age.unwrap();
    let means: Vec<f64> = model.ages.chunks_exact(window as usize).map(|c| c.iter().sum::<f64>() / window as f64).collect();
    assert_eq!(age.window_means.len(), means.len());
    for (a, b) in age.window_means.iter().zip(&means) {
        assert!((a - b).abs() < 1e-9, "{a} vs {b}");
    }
    assert!(model.evicted.len() > 500 && model.ghost_evictions > 0);
}

#[test]
fn horizon_lru_matches_an_independent_model() {
    check_horizon_against_model(&stream(20_000, 800, 3));
    check_horizon_against_model(&(0..3000).collect::<Vec<_>>());
}

#[test]
fn lazy_iceberg_lru_matches_an_independent_model() {
    check_against_model(&stream(20_000, 800, 3), EvictionSpec::LazyIcebergLru(crate::os::eviction::LazyIcebergLruSpec { delta: 0.13 }));
    check_against_model(&(0..3000).collect::<Vec<_>>(), EvictionSpec::LazyIcebergLru(crate::os::eviction::LazyIcebergLruSpec { delta: 0.13 }));
}

/// Exact LRU over two address spaces sharing VPNs: (asid, vpn) pairs are distinct pages.
#[test]
fn exact_lru_over_two_asids_matches_a_brute_force_lru() {
    let frames = 64;
    let mut os = Os::new(&OsSpec { eviction: EvictionSpec::Lru(Default::default()), ..OsSpec::simple(frames << 12, PlacementSpec::Random) }, 3);
    let mut model = BruteLru::new(frames as usize);
    for (i, vpn) in stream(20_000, 120, 8).into_iter().enumerate() {
        let asid = (i % 3 == 0) as u16;
        let t = os.miss(asid, vpn << 12).unwrap();
        let _scanned = os.access(t.pfn, false).unwrap();
        let shot: Vec<(u16, u64)> = os.take_shootdowns().map(|d| d.map(|page| (page.asid, page.vpn.0)).collect()).unwrap_or_default();
        let expect: Vec<(u16, u64)> = model.touch((asid, vpn)).into_iter().collect();
        assert_eq!(shot, expect, "reference {i}");
    }
    let s = os.stats();
    assert_eq!((s.swap_outs, s.swap_ins), (model.swap_outs, model.swap_ins));
}

/// With no TLB every reference walks, so `recency = "fill"` and `recency = "access"` see the
/// same uses; Linux-like reclaim must then evict the same pages under both.
#[test]
fn linux_fill_and_access_agree_when_every_reference_walks() {
    let run = |recency, look_twice| {
        let spec = OsSpec {
            eviction: EvictionSpec::Linux(crate::os::eviction::LinuxSpec { reserve: 0.008, inactive_ratio: InactiveRatio::Kernel, workingset: true, look_twice }),
            recency,
            ..OsSpec::simple(1000 << 12, PlacementSpec::Random)
        };
        let mut os = Os::new(&spec, 1);
        for vpn in stream(50_000, 2000, 4) {
            touch(&mut os, vpn);
            os.take_shootdowns();
        }
        let s = os.stats();
        (s.swap_outs, s.swap_ins)
    };
    for look_twice in [false, true] {
        assert_eq!(run(Recency::Access, look_twice), run(Recency::Fill, look_twice), "(swap_outs, swap_ins): access vs fill, look twice {look_twice}");
    }
}
