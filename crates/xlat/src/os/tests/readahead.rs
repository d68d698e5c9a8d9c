//! Swap readahead through the OS: against a brute-force LRU that reads ahead by the kernel's
//! own code, restated; its counters' identities under every policy; iceberg placement of
//! the pages read ahead.

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

/// Exact global LRU with swap readahead and the swap cache, the slow, obvious way: resident
/// pages most recent first, each mapped or read ahead; the pages swapped out; the readahead
/// history kept as the kernel keeps it.
#[derive(Default)]
struct BruteReadahead {
    frames: usize,
    max_pages: i64,
    /// (page, mapped), most recent first.
    order: VecDeque<(u64, bool)>,
    swapped: HashSet<u64>,
    /// Resident pages whose copy in swap is good.
    copies: HashSet<u64>,
    /// The kernel's `swap_readahead_info`: page, window, hits (`GET_SWAP_RA_VAL` reads
    /// an empty one as 4: no page, no window, 4 hits).
    history: (i64, i64, i64),
    stats: OsStats,
    /// Mapped pages evicted (shot down) by the last touch.
    shot: Vec<u64>,
}

impl BruteReadahead {
    /// Makes room for one page: evicts the least recently used when memory is full.
    fn room(&mut self) {
        if self.order.len() < self.frames {
            return;
        }
        let (victim, mapped) = self.order.pop_back().expect("memory is full");
        self.swapped.insert(victim);
        self.stats.evictions += 1;
        self.stats.swap_outs += u64::from(!self.copies.remove(&victim));
        if mapped {
            self.shot.push(victim);
        }
    }

    fn touch(&mut self, page: u64, store: bool) {
        self.shot.clear();
        match self.order.iter().position(|&(p, _)| p == page) {
            Some(i) => {
                let (_, mapped) = self.order.remove(i).expect("found");
                if !mapped {
                    self.stats.readahead_hits += 1;
                    self.stats.page_faults += 1;
                    self.history.2 = (self.history.2 + 1).min(63);
                    self.history.0 = page as i64;
                }
            }
            None if self.swapped.contains(&page) => {
                let (pfn, prev_win, hits) = self.history;
                let (win, start, end) = kernel_window(pfn, prev_win, hits, page as i64, self.max_pages);
                self.history = (page as i64, win, 0);
                let to_read: Vec<u64> = (start..end).map(|p| p as u64).filter(|&p| p != page && self.swapped.contains(&p)).collect();
                // The kernel copies the window's entries before reading: a page the reads
                // evict is not read back.
                for other in to_read {
                    self.room();
                    self.swapped.remove(&other);
                    self.copies.insert(other);
                    self.order.push_front((other, false));
                    self.stats.swap_ins += 1;
                    self.stats.readahead_pages += 1;
                }
                self.room();
                self.swapped.remove(&page);
                self.copies.insert(page);
                self.stats.swap_ins += 1;
                self.stats.page_faults += 1;
            }
            None => {
                self.room();
                self.stats.page_faults += 1;
            }
        }
        if store {
            self.copies.remove(&page);
        }
        self.order.push_front((page, true));
    }
}

/// Exact LRU with readahead of 2, 8 and 32 pages matches the brute-force model over sweeps of
/// loads and stores: the pages each touch shoots down, and every counter. Under recency on
/// fill too: every reference walks here, so fills are uses, but the faulting page is stamped
/// only by its fault, which must leave it younger than the pages read ahead with it.
#[test]
fn readahead_under_exact_lru_matches_a_brute_force_model() {
    for (page_cluster, recency) in [(1, Recency::Access), (3, Recency::Access), (5, Recency::Access), (3, Recency::Fill), (5, Recency::Fill)] {
        let frames = 96;
        let spec = OsSpec { eviction: EvictionSpec::Lru, recency, swap_cache: true, page_cluster, ..OsSpec::simple(frames << 12, PlacementSpec::Random) };
        let mut os = Os::new(&spec, 3);
        let mut model = BruteReadahead { frames: frames as usize, max_pages: 1 << page_cluster, history: (0, 0, 4), ..BruteReadahead::default() };
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
        for (i, page) in sweeps(30_000, 400..700, 4).into_iter().enumerate() {
            let store = rng.random_ratio(1, 4);
            let t = os.translate(0, page << 12).unwrap();
            let _ = os.access(t.pfn, store);
            model.touch(page, store);
            let mut shot: Vec<u64> = os.take_shootdowns().map(|d| d.map(|(_, v)| v.0).collect()).unwrap_or_default();
            shot.sort_unstable();
            model.shot.sort_unstable();
            assert_eq!(shot, model.shot, "page_cluster {page_cluster}, {recency:?}, reference {i} (page {page})");
        }
        let s = os.stats();
        let m = &model.stats;
        let counts = |s: &OsStats| [s.page_faults, s.swap_ins, s.readahead_pages, s.readahead_hits, s.evictions, s.swap_outs];
        assert_eq!(counts(&s), counts(m), "page_cluster {page_cluster}, {recency:?}");
        assert!(m.readahead_hits > 1000 && m.readahead_pages > m.readahead_hits, "the sweeps must exercise readahead: {m:?}");
    }
}

/// Readahead off (`page_cluster = 0`) is the model without it: every swap-in a major fault.
#[test]
fn page_cluster_0_reads_the_faulting_page_alone() {
    let frames = 96;
    let spec = OsSpec { eviction: EvictionSpec::Lru, swap_cache: true, page_cluster: 0, ..OsSpec::simple(frames << 12, PlacementSpec::Random) };
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
/// at times), the counters add up after every reference: faults are first touches, major
/// faults and readahead hits; pages read are major faults and pages read ahead; the slots
/// held are the pages swapped out and the copies kept in memory; every occupied frame holds
/// a mapped page or one read ahead; and each shootdown handed to the machine is counted.
#[test]
fn readahead_counters_add_up_under_every_policy() {
    let swap_slots = Some(1800);
    let fully = |eviction| OsSpec { eviction, swap_cache: true, page_cluster: 3, swap_slots, ..OsSpec::simple(256 << 12, PlacementSpec::Random) };
    let iceberg = |eviction| OsSpec { eviction, swap_cache: true, page_cluster: 3, swap_slots, ..OsSpec::simple((8 * 64) << 12, PlacementSpec::Iceberg(IcebergSpec::default())) };
    let linux = EvictionSpec::Linux { reserve: 0.0, inactive_ratio: InactiveRatio::Kernel, workingset: true, look_twice: true };
    for spec in [fully(EvictionSpec::Lru), fully(linux), iceberg(EvictionSpec::HorizonLru), iceberg(EvictionSpec::LazyIcebergLru { delta: 0.13 })] {
        let mut os = Os::new(&spec, 11);
        let (mut touched, mut majors, mut shot) = (HashSet::new(), 0, 0);
        for page in sweeps(20_000, 0..1200, 6) {
            let ahead = os.readahead.as_ref().unwrap().contains(0, page);
            majors += u64::from(os.table.is_swapped(0, page << 12) && !ahead);
            touch(&mut os, page);
            touched.insert(page);
            shot += os.take_shootdowns().map_or(0, |d| d.count() as u64);
            let s = os.stats();
            assert_eq!(s.page_faults, touched.len() as u64 + majors + s.readahead_hits, "{:?}", spec.eviction);
            assert_eq!(s.swap_ins, majors + s.readahead_pages, "{:?}", spec.eviction);
            assert_eq!(s.shootdowns, shot, "{:?}", spec.eviction);
            if page % 64 == 0 {
                let ra = os.readahead.as_ref().unwrap();
                let out = touched.iter().filter(|&&p| os.table.is_swapped(0, p << 12) && !ra.contains(0, p)).count();
                let copies = os.swap_copy.iter().filter(|&&c| c).count();
                assert_eq!(os.swap.used(), (out + copies) as u64, "{:?}", spec.eviction);
            }
        }
        let s = os.stats();
        let ra = os.readahead.as_ref().unwrap();
        let unmapped = (0..os.frames().capacity()).filter(|&f| !os.frames().is_free(f)).filter(|&f| {
            let (asid, vpn) = os.frames().owner(f).unwrap();
            ra.contains(asid, vpn.0)
        });
        assert_eq!(unmapped.count() as u64 + s.mapped_pages, os.frames().used(), "{:?}", spec.eviction);
        assert!(s.readahead_hits > 500 && s.evictions > s.shootdowns && s.swap_full_frees > 0, "{:?}: {s:?}", spec.eviction);
    }
}

/// Under iceberg placement every page read ahead sits at one of its own candidate slots and
/// keeps its frame when a fault maps it, with the CPFN of that slot.
#[test]
fn pages_read_ahead_are_placed_at_their_own_candidates() {
    let spec = OsSpec { eviction: EvictionSpec::HorizonLru, swap_cache: true, page_cluster: 3, ..OsSpec::simple((8 * 64) << 12, PlacementSpec::Iceberg(IcebergSpec::default())) };
    let mut os = Os::new(&spec, 5);
    let layout = os.iceberg().unwrap().clone();
    let occupied = |os: &Os| (0..os.frames().capacity()).filter(|&f| !os.frames().is_free(f)).collect::<Vec<u64>>();
    let mut hits = 0;
    for page in sweeps(30_000, 0..1200, 8) {
        let ahead = os.readahead.as_ref().unwrap().contains(0, page);
        let frame = ahead.then(|| occupied(&os).into_iter().find(|&f| os.frames().owner(f) == Some((0, Vpn(page)))).expect("a page read ahead is in memory"));
        let t = touch(&mut os, page);
        os.take_shootdowns();
        if let Some(frame) = frame {
            assert_eq!(t.pfn.0, frame, "page {page} moved from where it was read ahead");
            hits += 1;
        }
        let key = page_key(0, Vpn(page));
        assert_eq!(os.cpfn(0, page << 12).and_then(|c| layout.decode_frame(key, c)), Some(t.pfn.0));
        let ra = os.readahead.as_ref().unwrap();
        for frame in occupied(&os) {
            let (asid, vpn) = os.frames().owner(frame).unwrap();
            if ra.contains(asid, vpn.0) {
                assert!(iceberg_placement::slot_of(&layout, page_key(asid, vpn), frame).is_some(), "page {} read ahead outside its candidates", vpn.0);
            }
        }
    }
    assert_eq!(hits, os.stats().readahead_hits);
    assert!(hits > 500, "{hits}");
}

/// Under Linux-like reclaim a page read ahead enters the inactive list not young (no
/// page-table entry maps it), so its first look evicts it, unmapped, where a faulted page
/// would be rotated. Traced by hand on 8 frames (look twice, no reserve): pages 0 to 7 fill
/// memory; 8 rotates all eight and evicts 0; 9 and 10 evict 1 and 2 (marked, not young); a
/// fault on 1, the address space's first (a window of 8, forward since 1 is next to the empty
/// history's page 0), reads 2, the only page of 2 to 8 swapped out when it looks (evicting 3),
/// then maps 1 (evicting 4); 11 to 13 evict 5 to 7; 14 rotates 8 to 10 and evicts page 2.
#[test]
fn linux_evicts_an_unused_page_read_ahead_at_its_first_look() {
    let linux = EvictionSpec::Linux { reserve: 0.0, inactive_ratio: InactiveRatio::Kernel, workingset: false, look_twice: true };
    let spec = OsSpec { eviction: linux, swap_cache: true, page_cluster: 3, ..OsSpec::simple(8 << 12, PlacementSpec::Random) };
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
    assert!(os.table.is_swapped(0, 2 << 12) && !os.readahead.as_ref().unwrap().contains(0, 2));
}
