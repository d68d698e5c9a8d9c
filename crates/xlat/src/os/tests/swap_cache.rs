//! The swap cache through the OS: readahead and stores that copy pages out of it, against a
//! brute-force LRU that reads ahead by the kernel's own code, restated; the counters'
//! identities under every policy; iceberg placement of pages read ahead and of old copies;
//! Linux-like reclaim of unmapped pages.

use super::*;
use std::collections::HashSet;

/// Pages of ASID 0 in runs of 1 to 40 consecutive pages, forward or backward, from random
/// starts in `pages` (which spans a page-table page boundary at 512), so that faults come
/// both next to each other and apart.
fn sweeps(len: usize, pages: std::ops::Range<u64>, seed: u64) -> Vec<u64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        let start = rng.random_range(pages.clone());
        let run = rng.random_range(1..=40u64);
        let forward = rng.random_bool(0.7);
        let run = (0..run).map(|i| if forward { start + i } else { start.saturating_sub(i) });
        out.extend(run.filter(|p| pages.contains(p)));
    }
    out.truncate(len);
    out
}

/// The kernel's readahead window (`__swapin_nr_pages`, then `swap_ra_info` and
/// `swap_ra_clamp_pfn`) written as the kernel writes it, in signed arithmetic: the new window
/// and the pages `start..end` it reads, for a major fault on `fpfn` after a fault (or hit)
/// on `pfn` that left `prev_win` and `hits`.
fn kernel_window(pfn: i64, prev_win: i64, hits: i64, fpfn: i64, max_pages: i64) -> (i64, i64, i64) {
    let mut pages = hits + 2;
    if pages == 2 {
        if fpfn != pfn + 1 && fpfn != pfn - 1 {
            pages = 1;
        }
    } else {
        let mut roundup = 4;
        while roundup < pages {
            roundup <<= 1;
        }
        pages = roundup;
    }
    if pages > max_pages {
        pages = max_pages;
    }
    let last_ra = prev_win / 2;
    if pages < last_ra {
        pages = last_ra;
    }
    let win = pages;
    if win == 1 {
        return (win, fpfn, fpfn + 1);
    }
    let (lpfn, rpfn) = if fpfn == pfn + 1 {
        (fpfn, fpfn + win)
    } else if pfn == fpfn + 1 {
        (fpfn - win + 1, fpfn + 1)
    } else {
        let left = (win - 1) / 2;
        (fpfn - left, fpfn + win - left)
    };
    let pmd = fpfn & !511;
    (win, lpfn.max(pmd).max(0), rpfn.min(pmd + 512))
}

/// What a resident page of the brute-force model is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Mapped by its page-table entry.
    Mapped,
    /// Read ahead, not mapped yet.
    Ahead,
    /// An old copy a store left behind (its page is mapped elsewhere).
    Stale,
}

/// A resident page of the brute-force model.
#[derive(Clone, Copy, Debug)]
struct Resident {
    page: u64,
    state: State,
    /// Its copy in swap is good.
    copy: bool,
}

/// Exact global LRU with swap readahead and the swap cache, the slow, obvious way: resident
/// pages most recent first, each mapped, read ahead or an old copy; the pages swapped out;
/// the readahead history kept as the kernel keeps it.
#[derive(Default)]
struct BruteReadahead {
    frames: usize,
    max_pages: i64,
    /// A store to a page with a good copy, other than by the reference that faulted it in,
    /// copies it to a new frame (`swap_cache_cow`).
    cow: bool,
    /// Recency on fill: the walk before a store's copy is a use of the old page.
    fill: bool,
    /// Slots of a bounded swap area: held by the pages swapped out and the copies kept in
    /// memory; a page mapped from swap gives its slot up while more than half are held, and
    /// readahead stops while all are.
    slots: Option<usize>,
    /// Most recent first.
    order: VecDeque<Resident>,
    swapped: HashSet<u64>,
    /// The kernel's `swap_readahead_info`: page, window, hits (`GET_SWAP_RA_VAL` reads
    /// an empty one as 4: no page, no window, 4 hits).
    history: (i64, i64, i64),
    stats: OsStats,
    /// Pages shot down by the last touch.
    shot: Vec<u64>,
}

impl BruteReadahead {
    /// Slots held: one per page swapped out, one per copy kept in memory.
    fn held(&self) -> usize {
        self.swapped.len() + self.order.iter().filter(|r| r.copy).count()
    }

    /// The page just mapped from swap, at the front, gives its slot up if more than half of
    /// the slots are held.
    fn mapped_from_swap(&mut self) {
        let held = self.held();
        if self.slots.is_some_and(|slots| held * 2 > slots) {
            self.order[0].copy = false;
            self.stats.swap_full_frees += 1;
        }
    }

    /// Makes room for one page: evicts the least recently used when memory is full.
    fn room(&mut self) {
        if self.order.len() < self.frames {
            return;
        }
        let victim = self.order.pop_back().expect("memory is full");
        if victim.state != State::Stale {
            self.swapped.insert(victim.page);
        }
        self.stats.evictions += 1;
        self.stats.swap_outs += u64::from(!victim.copy);
        if victim.state == State::Mapped {
            self.shot.push(victim.page);
        }
        self.stats.peak_swap_bytes = self.stats.peak_swap_bytes.max(self.held() as u64);
    }

    fn touch(&mut self, page: u64, store: bool) {
        self.shot.clear();
        let found = self.order.iter().position(|r| r.page == page && r.state != State::Stale);
        let copy = match found.map(|i| self.order[i]) {
            Some(Resident { state: State::Mapped, copy: true, .. }) if store && self.cow => {
                let i = found.expect("found");
                if self.fill {
                    // The walk used the old page before the store copied it.
                    let old = self.order.remove(i).expect("found");
                    self.order.push_front(old);
                }
                let i = if self.fill { 0 } else { i };
                self.order[i].state = State::Stale;
                self.room();
                self.order.push_front(Resident { page, state: State::Mapped, copy: false });
                self.stats.store_copies += 1;
                self.shot.push(page);
                return;
            }
            Some(Resident { state: State::Mapped, copy, .. }) => {
                self.order.remove(found.expect("found"));
                copy
            }
            Some(Resident { state: State::Ahead, .. }) => {
                self.order.remove(found.expect("found"));
                self.stats.readahead_hits += 1;
                self.stats.page_faults += 1;
                self.history.2 = (self.history.2 + 1).min(63);
                self.history.0 = page as i64;
                self.order.push_front(Resident { page, state: State::Mapped, copy: true });
                self.mapped_from_swap();
                self.order.pop_front().expect("just pushed").copy
            }
            Some(Resident { state: State::Stale, .. }) => unreachable!("stale copies are skipped"),
            None if self.swapped.contains(&page) => {
                let (pfn, prev_win, hits) = self.history;
                let (win, start, end) = kernel_window(pfn, prev_win, hits, page as i64, self.max_pages);
                self.history = (page as i64, win, 0);
                // Each page is looked up as it comes (the live table): a page the reads evict
                // is read back.
                for other in (start..end).map(|p| p as u64).filter(|&p| p != page) {
                    if !self.swapped.contains(&other) {
                        continue;
                    }
                    if self.slots.is_some_and(|slots| self.held() == slots) {
                        break;
                    }
                    self.room();
                    self.swapped.remove(&other);
                    self.order.push_front(Resident { page: other, state: State::Ahead, copy: true });
                    self.stats.swap_ins += 1;
                    self.stats.readahead_pages += 1;
                }
                self.room();
                self.swapped.remove(&page);
                self.stats.swap_ins += 1;
                self.stats.page_faults += 1;
                self.order.push_front(Resident { page, state: State::Mapped, copy: true });
                self.mapped_from_swap();
                self.order.pop_front().expect("just pushed").copy
            }
            None => {
                self.room();
                self.stats.page_faults += 1;
                false
            }
        };
        // A store by the reference that faulted the page in drops its copy in place.
        self.order.push_front(Resident { page, state: State::Mapped, copy: copy && !store });
    }
}

/// Exact LRU with readahead of 2, 8 and 32 pages matches the brute-force model over sweeps of
/// loads and stores: the pages each touch shoots down, and every counter. Under recency on
/// fill too: every reference walks here, so fills are uses, but the faulting page is stamped
/// only by its fault, which must leave it younger than the pages read ahead with it. With
/// stores copying pages out of the swap cache (`swap_cache_cow`) too, with and without
/// readahead.
#[test]
fn readahead_under_exact_lru_matches_a_brute_force_model() {
    let cases = [
        (1, Recency::Access, false, None),
        (3, Recency::Access, false, None),
        (5, Recency::Access, false, None),
        (3, Recency::Fill, false, None),
        (5, Recency::Fill, false, None),
        (0, Recency::Access, true, None),
        (3, Recency::Access, true, None),
        (3, Recency::Fill, true, None),
        (3, Recency::Access, true, Some(400)),
        (5, Recency::Fill, false, Some(330)),
    ];
    for (page_cluster, recency, cow, slots) in cases {
        let frames = 96;
        let spec = OsSpec { eviction: EvictionSpec::Lru(Default::default()), recency, swap_cache: true, page_cluster, swap_cache_cow: cow, swap_slots: slots, ..OsSpec::simple(frames << 12, PlacementSpec::Random) };
        let mut os = Os::new(&spec, 3);
        let fill = recency == Recency::Fill;
        let mut model = BruteReadahead { frames: frames as usize, max_pages: 1 << page_cluster, cow, fill, slots: slots.map(|s| s as usize), history: (0, 0, 4), ..BruteReadahead::default() };
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
        let what = format!("page_cluster {page_cluster}, {recency:?}, cow {cow}, slots {slots:?}");
        for (i, page) in sweeps(30_000, 400..700, 4).into_iter().enumerate() {
            let store = rng.random_ratio(1, 4);
            let t = os.miss(0, page << 12).unwrap();
            os.access(t.pfn, store).unwrap();
            model.touch(page, store);
            let mut shot: Vec<u64> = os.take_shootdowns().map(|d| d.map(|page| page.vpn.0).collect()).unwrap_or_default();
            shot.sort_unstable();
            model.shot.sort_unstable();
            assert_eq!(shot, model.shot, "{what}, reference {i} (page {page})");
        }
        let s = os.stats();
        let m = &model.stats;
        let counts = |s: &OsStats| [s.page_faults, s.swap_ins, s.readahead_pages, s.readahead_hits, s.evictions, s.swap_outs, s.store_copies, s.swap_full_frees];
        assert_eq!(counts(&s), counts(m), "{what}");
        if slots.is_some() {
            assert_eq!(s.peak_swap_bytes >> 12, m.peak_swap_bytes, "{what}");
            assert!(m.swap_full_frees > 1000, "{what}: {m:?}");
        }
        assert!(page_cluster == 0 || m.readahead_hits > 1000 && m.readahead_pages > m.readahead_hits, "the sweeps must exercise readahead: {m:?}");
        // A bounded area more than half held leaves few copies for stores to find.
        assert_eq!(m.store_copies > 1000, cow && slots.is_none(), "{what}: {m:?}");
    }
}

/// Readahead off (`page_cluster = 0`) is the model without it: every swap-in a major fault.
#[test]
fn page_cluster_0_reads_the_faulting_page_alone() {
    let frames = 96;
    let spec = OsSpec { eviction: EvictionSpec::Lru(Default::default()), swap_cache: true, page_cluster: 0, ..OsSpec::simple(frames << 12, PlacementSpec::Random) };
    let mut os = Os::new(&spec, 3);
    let mut model = BruteLru::new(frames as usize);
    model.copies = Some(Default::default());
    for page in sweeps(20_000, 400..700, 4) {
        touch(&mut os, page);
        os.take_shootdowns();
        model.touch(page);
    }
    let s = os.stats();
    assert_eq!((s.swap_ins, s.swap_outs, s.evictions, s.readahead_pages, s.readahead_hits), (model.swap_ins, model.swap_outs, model.evictions, 0, 0));
}

/// Under every policy, with a swap area of 1,800 slots for 1,200 pages (more than half held
/// at times) and stores that copy pages out of the swap cache, the counters add up after
/// every reference: faults are first touches, major faults and readahead hits; pages read are
/// major faults and pages read ahead; the slots held are the pages swapped out and the copies
/// kept in memory (old copies left by stores included); every occupied frame holds a mapped
/// page, one read ahead or an old copy; and each shootdown handed to the machine is counted.
#[test]
fn readahead_counters_add_up_under_every_policy() {
    let swap_slots = Some(1800);
    let fully = |eviction| OsSpec { eviction, swap_cache: true, page_cluster: 3, swap_slots, swap_cache_cow: true, ..OsSpec::simple(256 << 12, PlacementSpec::Random) };
    let iceberg = |eviction| OsSpec { eviction, swap_cache: true, page_cluster: 3, swap_slots, swap_cache_cow: true, ..OsSpec::simple((8 * 64) << 12, PlacementSpec::Iceberg(IcebergSpec::default())) };
    let linux = EvictionSpec::Linux(crate::os::eviction::LinuxSpec { reserve: 0.0, inactive_ratio: InactiveRatio::Kernel, workingset: true, look_twice: true });
    for spec in [fully(EvictionSpec::Lru(Default::default())), fully(linux), iceberg(EvictionSpec::HorizonLru(Default::default())), iceberg(EvictionSpec::LazyIcebergLru(crate::os::eviction::LazyIcebergLruSpec { delta: 0.13 }))] {
        let mut os = Os::new(&spec, 11);
        let (mut touched, mut majors, mut shot) = (HashSet::new(), 0, 0);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(12);
        for page in sweeps(20_000, 0..1200, 6) {
            let ahead = os.readahead.as_ref().unwrap().contains(0, page);
            majors += u64::from(os.translations.swapped(0, page << 12) && !ahead);
            let t = os.miss(0, page << 12).unwrap();
            os.access(t.pfn, rng.random_ratio(1, 4)).unwrap();
            touched.insert(page);
            shot += os.take_shootdowns().map_or(0, |d| d.count() as u64);
            let s = os.stats();
            assert_eq!(s.page_faults, touched.len() as u64 + majors + s.readahead_hits, "{:?}", spec.eviction);
            assert_eq!(s.swap_ins, majors + s.readahead_pages, "{:?}", spec.eviction);
            assert_eq!(s.shootdowns, shot, "{:?}", spec.eviction);
            if page % 64 == 0 {
                let ra = os.readahead.as_ref().unwrap();
                let out = touched.iter().filter(|&&p| os.translations.swapped(0, p << 12) && !ra.contains(0, p)).count();
                let copies = os.swap_copy.iter().filter(|&&c| c).count();
                assert_eq!(os.swap.used(), (out + copies) as u64, "{:?}", spec.eviction);
            }
        }
        let s = os.stats();
        let ra = os.readahead.as_ref().unwrap();
        let unmapped = (0..os.frames().capacity()).filter(|&f| !os.frames().is_free(f)).filter(|&f| {
            let (asid, vpn) = os.frames().owner(f).unwrap();
            ra.contains(asid, vpn.0) || os.stale.contains(&f)
        });
        assert_eq!(unmapped.count() as u64 + s.mapped_pages, os.frames().used(), "{:?}", spec.eviction);
        assert!(s.readahead_hits > 500 && s.evictions > s.shootdowns && s.swap_full_frees > 0, "{:?}: {s:?}", spec.eviction);
        assert!(s.store_copies > 20, "{:?}: {s:?}", spec.eviction);
    }
}

/// Under iceberg placement every page read ahead, and every old copy a store left, sits at
/// one of its own candidate slots; a page read ahead keeps its frame when a fault maps it,
/// with the CPFN of that slot; a page a store copied is mapped at a candidate of its own.
#[test]
fn pages_read_ahead_are_placed_at_their_own_candidates() {
    let spec = OsSpec { eviction: EvictionSpec::HorizonLru(Default::default()), swap_cache: true, page_cluster: 3, swap_cache_cow: true, ..OsSpec::simple((8 * 64) << 12, PlacementSpec::Iceberg(IcebergSpec::default())) };
    let mut os = Os::new(&spec, 5);
    let layout = os.iceberg().unwrap().clone();
    let occupied = |os: &Os| (0..os.frames().capacity()).filter(|&f| !os.frames().is_free(f)).collect::<Vec<u64>>();
    let mut hits = 0;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(13);
    for page in sweeps(30_000, 0..1200, 8) {
        let ahead = os.readahead.as_ref().unwrap().contains(0, page);
        let frame = ahead.then(|| occupied(&os).into_iter().find(|&f| os.frames().owner(f) == Some((0, Vpn(page)))).expect("a page read ahead is in memory"));
        let t = os.miss(0, page << 12).unwrap();
        os.access(t.pfn, rng.random_ratio(1, 3)).unwrap();
        os.take_shootdowns();
        if let Some(frame) = frame {
            assert_eq!(t.pfn.0, frame, "page {page} moved from where it was read ahead");
            hits += 1;
        }
        let key = page_key(0, Vpn(page));
        let mapped = os.cpfn(0, page << 12).and_then(|c| layout.decode_frame(key, c)).expect("a page just used is mapped");
        assert_eq!(os.frames().owner(mapped), Some((0, Vpn(page))), "page {page} mapped at a frame it does not occupy");
        let ra = os.readahead.as_ref().unwrap();
        for frame in occupied(&os) {
            let (asid, vpn) = os.frames().owner(frame).unwrap();
            if ra.contains(asid, vpn.0) || os.stale.contains(&frame) {
                assert!(iceberg_placement::slot_of(&layout, page_key(asid, vpn), frame).is_some(), "page {} read ahead or copied outside its candidates", vpn.0);
            }
        }
    }
    let s = os.stats();
    assert_eq!(hits, s.readahead_hits);
    assert!(hits > 500 && s.store_copies > 500, "{s:?}");
}

/// Under Linux-like reclaim a page read ahead enters the inactive list not young (no
/// page-table entry maps it), so its first look evicts it, unmapped, where a faulted page
/// would be rotated. Traced by hand on 8 frames (look twice, no reserve): pages 0 to 7 fill
/// memory; 8 rotates all eight and evicts 0; 9 and 10 evict 1 and 2 (marked, not young); a
/// fault on 1, the address space's first (the largest window, 2 pages under `page_cluster =
/// 1`, forward since 1 is next to the empty history's page 0), reads 2 (evicting 3), then
/// maps 1 (evicting 4); 11 to 13 evict 5 to 7; 14 rotates 8 to 10 and evicts page 2.
#[test]
fn linux_evicts_an_unused_page_read_ahead_at_its_first_look() {
    let linux = EvictionSpec::Linux(crate::os::eviction::LinuxSpec { reserve: 0.0, inactive_ratio: InactiveRatio::Kernel, workingset: false, look_twice: true });
    let spec = OsSpec { eviction: linux, swap_cache: true, page_cluster: 1, ..OsSpec::simple(8 << 12, PlacementSpec::Random) };
    let mut os = Os::new(&spec, 1);
    for page in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 11, 12, 13] {
        touch(&mut os, page);
        os.take_shootdowns();
    }
    let before = os.stats();
    assert_eq!((before.readahead_pages, before.evictions, before.shootdowns), (1, 8, 8), "{before:?}");
    touch(&mut os, 14);
    assert!(os.take_shootdowns().is_none(), "the page evicted was never mapped");
    let s = os.stats();
    assert_eq!((s.evictions, s.shootdowns, s.reclaim.unwrap().rotations), (9, 8, 11), "{s:?}");
    assert!(os.translations.swapped(0, 2 << 12) && !os.readahead.as_ref().unwrap().contains(0, 2));
}

/// Under Linux-like reclaim the old copy a store leaves behind is in no page-table entry, so
/// reclaim's first look at it evicts it, without a write or a shootdown. Traced by hand on 4
/// frames (look twice, no reserve): 0 to 3 fill memory; 4 rotates all four and evicts 0; a
/// load of 0 faults it back (evicting 1); a store to 0 copies it (evicting 2), leaving the
/// old copy, its accessed bit gone, behind 3 and 4; 5 evicts 3; 6 rotates 4 and evicts the
/// old copy.
#[test]
fn linux_evicts_the_old_copy_a_store_left_at_its_first_look() {
    let linux = EvictionSpec::Linux(crate::os::eviction::LinuxSpec { reserve: 0.0, inactive_ratio: InactiveRatio::Kernel, workingset: false, look_twice: true });
    let spec = OsSpec { eviction: linux, swap_cache: true, swap_cache_cow: true, ..OsSpec::simple(4 << 12, PlacementSpec::Random) };
    let mut os = Os::new(&spec, 1);
    for (page, store) in [(0, false), (1, false), (2, false), (3, false), (4, false), (0, false), (0, true), (5, false)] {
        let t = os.miss(0, page << 12).unwrap();
        os.access(t.pfn, store).unwrap();
        os.take_shootdowns();
    }
    let before = os.stats();
    assert_eq!((before.store_copies, before.evictions, before.shootdowns), (1, 4, 5), "{before:?}");
    touch(&mut os, 6);
    assert!(os.take_shootdowns().is_none(), "the old copy is in no TLB");
    let s = os.stats();
    assert_eq!((s.evictions, s.swap_outs, s.shootdowns, s.reclaim.unwrap().rotations), (5, 4, 5, 5), "{s:?}");
    assert!(os.stale.is_empty());
}

/// Readahead is best effort: it never fails a fault that would succeed without it. On 2
/// frames in sets of one way, with 4 slots, the fault on 2 would have read 1 ahead by writing
/// dirty page 5 into a full area; it reads nothing and evicts clean page 0 instead, as it
/// does without readahead.
#[test]
fn readahead_stops_when_swap_is_full_rather_than_fail_the_fault() {
    let refs = [(0, true), (1, true), (2, true), (0, false), (3, true), (5, true), (2, false)];
    let run = |page_cluster| {
        let spec = OsSpec { eviction: EvictionSpec::Lru(Default::default()), swap_cache: true, page_cluster, swap_slots: Some(4), ..OsSpec::simple(2 << 12, PlacementSpec::SetAssociative { ways: 1 }) };
        let mut os = Os::new(&spec, 1);
        for (page, store) in refs {
            let t = os.miss(0, page << 12).map_err(|oom| os.describe(oom).to_string())?;
            os.access(t.pfn, store).map_err(|oom| os.describe(oom).to_string())?;
            os.take_shootdowns();
        }
        Ok::<_, String>(os.stats())
    };
    let with = run(3).unwrap();
    let without = run(0).unwrap();
    assert_eq!((with.swap_ins, with.swap_outs, with.readahead_pages), (without.swap_ins, without.swap_outs, 0), "{with:?}");
}

/// Under one look a page a readahead hit maps is, like a page a major fault maps, not
/// referenced by the fault's own access. On 8 frames: 0 to 11 evict 0 to 3 (nothing is
/// referenced); 1 faults back, reading 2 ahead (a window of 2, forward from the empty
/// history's page 0); 2 is mapped by a readahead hit; 12 to 29 evict every page, 1 and 2
/// among them, with no promotion.
#[test]
fn one_look_does_not_count_a_readahead_hit_as_a_use() {
    let linux = EvictionSpec::Linux(crate::os::eviction::LinuxSpec { reserve: 0.0, inactive_ratio: InactiveRatio::Kernel, workingset: false, look_twice: false });
    let spec = OsSpec { eviction: linux, swap_cache: true, page_cluster: 1, ..OsSpec::simple(8 << 12, PlacementSpec::Random) };
    let mut os = Os::new(&spec, 1);
    for page in (0..12).chain([1, 2]).chain(12..30) {
        touch(&mut os, page);
        os.take_shootdowns();
    }
    let s = os.stats();
    assert_eq!((s.readahead_hits, s.reclaim.unwrap().activations), (1, 0), "{s:?}");
}
