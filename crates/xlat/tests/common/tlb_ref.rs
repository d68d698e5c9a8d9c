//! A deliberately naive reference model of `xlat::tlb`, written for obviousness, not speed.
//!
//! * A set is a `Vec<Option<Slot>>` of ways; every search is a linear scan.
//! * LRU keeps a per-entry "last used" clock value and evicts the minimum; FIFO keeps a per-entry
//!   "inserted" clock value and evicts the minimum.
//! * Tree-PLRU is an explicit recursive tree of boxed nodes (no heap numbering, no bit tricks);
//!   leaves beyond the real way count are `Absent` and never chosen.
//! * Random draws `random_range(0..ways)` from its own `Xoshiro256PlusPlus::seed_from_u64(seed)`,
//!   once per eviction from a full set, in the same order as the model (this is the one piece
//!   that cannot be independent: the generator and the draw are the specification).
//!
//! Behaviour choices of the model that the documentation leaves open, kept here on purpose:
//! * Re-filling an entry that is already present updates its frame and counts as a fill for
//!   the policy: LRU makes it most recent, FIFO makes it the *newest insertion* (its age resets),
//!   PLRU points the tree away from it. Nothing is evicted.
//! * A fill into a set that is not full takes the lowest-index invalid way and never consults the
//!   policy (no random draw). Invalidation therefore needs no policy bookkeeping at all.
//! * `lookup` probes the held sizes smallest first and the first hit wins.
//! * In a hierarchy, a level splinters a translation to the largest smaller size it holds,
//!   using the first array (in geometry order) that holds that size; the hit returned by a
//!   level is whatever that level stored (possibly a splinter), and that is what is filled above.
//! * An inclusive level that evicts entry V removes from every level above it (both sides)
//!   every entry of V's ASID that *overlaps* V: larger entries containing V (over-invalidation,
//!   as the model's "invalidate V's first address" does) and smaller entries inside V (its
//!   splinters).
//! * A shootdown (`invalidate(asid, vaddr)`) removes, at every level and side, exactly the
//!   entries that translate `vaddr`, as documented. Shooting down one address of a 2 MiB page
//!   therefore removes the 2 MiB entry below but leaves the splinters of the *other* 4 KiB pages
//!   above, so the inclusion invariant only holds if a huge page is shot down page by page
//!   (every base page); the tests do that where they check inclusion.
//! * Per-array seeds in a hierarchy follow `TlbHierarchy::new` / `SideArrays::new`:
//!   level seed = `seed ^ (level + 1) * 0xa076_1d64_78bd_642f` (wrapping), instruction side
//!   seed = level seed `^ 0x5851_f42d`, array seed = side seed `+ index * 0x9e37_79b9` (wrapping).

#![allow(dead_code)]

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::HashSet;
use xlat::tlb::{ArrayGeometry, Counters, LevelGeometry, LevelStats, Policy, Side};
use xlat::{AccessKind, Asid, PageSize, Pfn, Translation, Vpn};

/// Number of 4 KiB base pages in a page of `size`.
pub fn base_pages(size: PageSize) -> u64 {
    match size {
        PageSize::Size4K => 1,
        PageSize::Size2M => 512,
        PageSize::Size1G => 512 * 512,
    }
}

/// The `size`-page that holds `vaddr`, as a page number in units of `size`.
pub fn page_number(vaddr: u64, size: PageSize) -> u64 {
    (vaddr / 4096) / base_pages(size)
}

/// The part of `t` of the smaller `size` that holds `vaddr`, computed from first principles.
pub fn splinter(t: &Translation, vaddr: u64, size: PageSize) -> Translation {
    let first = page_number(vaddr, size) * base_pages(size);
    let offset = first - t.vpn.0;
    Translation { asid: t.asid, vpn: Vpn(first), pfn: Pfn(t.pfn.0 + offset), size }
}

/// True if `t` translates `vaddr` of `asid`.
pub fn covers(t: &Translation, asid: Asid, vaddr: u64) -> bool {
    let page = vaddr / 4096;
    t.asid == asid && page >= t.vpn.0 && page < t.vpn.0 + base_pages(t.size)
}

/// True if the base-page ranges of `a` and `b` intersect and they share an ASID.
pub fn overlaps(a: &Translation, b: &Translation) -> bool {
    a.asid == b.asid && a.vpn.0 < b.vpn.0 + base_pages(b.size) && b.vpn.0 < a.vpn.0 + base_pages(a.size)
}

#[derive(Clone, Debug)]
struct Slot {
    t: Translation,
    last_use: u64,
    inserted: u64,
}

/// An explicit tree-PLRU tree. `victim_right == false` means "the victim is on the left".
/// Shared with the Mosaic reference (`mosaic_ref.rs`).
#[derive(Clone, Debug)]
pub enum PlruNode {
    Leaf(usize),
    Absent,
    Inner { victim_right: bool, left: Box<PlruNode>, right: Box<PlruNode> },
}

impl PlruNode {
    /// The subtree over ways `first .. first + span` (span a power of two) of a `ways`-way set.
    pub fn build(first: usize, span: usize, ways: usize) -> PlruNode {
        if first >= ways {
            PlruNode::Absent
        } else if span == 1 {
            PlruNode::Leaf(first)
        } else {
            PlruNode::Inner {
                victim_right: false,
                left: Box::new(PlruNode::build(first, span / 2, ways)),
                right: Box::new(PlruNode::build(first + span / 2, span / 2, ways)),
            }
        }
    }

    fn contains(&self, way: usize) -> bool {
        match self {
            PlruNode::Leaf(w) => *w == way,
            PlruNode::Absent => false,
            PlruNode::Inner { left, right, .. } => left.contains(way) || right.contains(way),
        }
    }

    /// Every node on the path to `way` now points at the other child.
    pub fn point_away(&mut self, way: usize) {
        if let PlruNode::Inner { victim_right, left, right } = self {
            if right.contains(way) {
                *victim_right = false;
                right.point_away(way);
            } else {
                *victim_right = true;
                left.point_away(way);
            }
        }
    }

    pub fn victim(&self) -> usize {
        match self {
            PlruNode::Leaf(w) => *w,
            PlruNode::Absent => unreachable!("the walk never enters an absent subtree"),
            PlruNode::Inner { victim_right, left, right } => {
                if *victim_right && !matches!(**right, PlruNode::Absent) {
                    right.victim()
                } else {
                    left.victim()
                }
            }
        }
    }
}

/// Reference for `TlbArray`.
#[derive(Clone, Debug)]
pub struct RefArray {
    pub entries: usize,
    pub ways: usize,
    pub policy: Policy,
    sizes: Vec<PageSize>,
    sets: Vec<Vec<Option<Slot>>>,
    plru: Vec<PlruNode>,
    rng: Xoshiro256PlusPlus,
    clock: u64,
}

impl RefArray {
    pub fn new(g: &ArrayGeometry, seed: u64) -> RefArray {
        let nsets = g.entries / g.ways;
        let mut sizes = Vec::new();
        for s in PageSize::ALL {
            if g.page_sizes.contains(&s) {
                sizes.push(s);
            }
        }
        RefArray {
            entries: g.entries,
            ways: g.ways,
            policy: g.policy,
            sizes,
            sets: vec![vec![None; g.ways]; nsets],
            plru: (0..nsets).map(|_| PlruNode::build(0, g.ways.next_power_of_two(), g.ways)).collect(),
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            clock: 0,
        }
    }

    pub fn holds(&self, size: PageSize) -> bool {
        self.sizes.contains(&size)
    }

    fn set_of(&self, page: u64) -> usize {
        (page % self.sets.len() as u64) as usize
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// (set, way) of the entry of `asid`, `size` and page number `page`, if present.
    fn find(&self, asid: Asid, size: PageSize, page: u64) -> Option<(usize, usize)> {
        let set = self.set_of(page);
        for (way, slot) in self.sets[set].iter().enumerate() {
            if let Some(s) = slot {
                if s.t.asid == asid && s.t.size == size && s.t.vpn.0 / base_pages(size) == page {
                    return Some((set, way));
                }
            }
        }
        None
    }

    pub fn lookup(&mut self, asid: Asid, vaddr: u64) -> Option<Translation> {
        for size in self.sizes.clone() {
            if let Some((set, way)) = self.find(asid, size, page_number(vaddr, size)) {
                let now = self.tick();
                let slot = self.sets[set][way].as_mut().unwrap();
                slot.last_use = now; // FIFO ignores last_use
                let t = slot.t;
                if self.policy == Policy::TreePlru {
                    self.plru[set].point_away(way);
                }
                return Some(t);
            }
        }
        None
    }

    pub fn fill(&mut self, t: &Translation) -> Option<Translation> {
        assert!(self.holds(t.size), "reference: array does not hold {:?}", t.size);
        let page = t.vpn.0 / base_pages(t.size);
        let now = self.tick();
        if let Some((set, way)) = self.find(t.asid, t.size, page) {
            let slot = self.sets[set][way].as_mut().unwrap();
            slot.t.pfn = t.pfn;
            slot.last_use = now;
            slot.inserted = now;
            if self.policy == Policy::TreePlru {
                self.plru[set].point_away(way);
            }
            return None;
        }
        let set = self.set_of(page);
        let free = self.sets[set].iter().position(|s| s.is_none());
        let way = match free {
            Some(w) => w,
            None => match self.policy {
                Policy::Lru => self.argmin(set, |s| s.last_use),
                Policy::Fifo => self.argmin(set, |s| s.inserted),
                Policy::TreePlru => self.plru[set].victim(),
                Policy::Random => self.rng.random_range(0..self.ways),
            },
        };
        let evicted = self.sets[set][way].take().map(|s| s.t);
        self.sets[set][way] = Some(Slot { t: *t, last_use: now, inserted: now });
        if self.policy == Policy::TreePlru {
            self.plru[set].point_away(way);
        }
        evicted
    }

    fn argmin(&self, set: usize, key: impl Fn(&Slot) -> u64) -> usize {
        let mut best = 0;
        for way in 0..self.ways {
            if key(self.sets[set][way].as_ref().unwrap()) < key(self.sets[set][best].as_ref().unwrap()) {
                best = way;
            }
        }
        best
    }

    pub fn invalidate(&mut self, asid: Asid, vaddr: u64) -> usize {
        let mut removed = 0;
        for size in self.sizes.clone() {
            if let Some((set, way)) = self.find(asid, size, page_number(vaddr, size)) {
                self.sets[set][way] = None;
                removed += 1;
            }
        }
        removed
    }

    /// Removes every entry overlapping `victim` (same ASID); returns how many.
    pub fn invalidate_overlapping(&mut self, victim: &Translation) -> usize {
        let mut removed = 0;
        for set in &mut self.sets {
            for slot in set.iter_mut() {
                if slot.as_ref().is_some_and(|s| overlaps(&s.t, victim)) {
                    *slot = None;
                    removed += 1;
                }
            }
        }
        removed
    }

    pub fn occupancy(&self) -> usize {
        self.sets.iter().flatten().filter(|s| s.is_some()).count()
    }

    pub fn contents(&self) -> Vec<Translation> {
        self.sets.iter().flatten().flatten().map(|s| s.t).collect()
    }

    /// Structural invariants of the reference itself.
    pub fn check_invariants(&self) {
        assert!(self.occupancy() <= self.entries);
        for (i, set) in self.sets.iter().enumerate() {
            assert_eq!(set.len(), self.ways);
            let valid: Vec<&Translation> = set.iter().flatten().map(|s| &s.t).collect();
            for (a, ta) in valid.iter().enumerate() {
                assert!(self.holds(ta.size));
                assert_eq!(self.set_of(ta.vpn.0 / base_pages(ta.size)), i, "entry in the wrong set");
                for tb in &valid[a + 1..] {
                    let same = ta.asid == tb.asid && ta.size == tb.size && ta.vpn == tb.vpn;
                    assert!(!same, "set {i} holds {ta:?} twice");
                }
            }
        }
    }
}

/// Reference for one side of a level.
#[derive(Clone, Debug)]
pub struct RefSide {
    pub arrays: Vec<RefArray>,
    pub counters: Counters,
}

impl RefSide {
    fn new(geometries: &[ArrayGeometry], seed: u64) -> RefSide {
        let arrays = geometries
            .iter()
            .enumerate()
            .map(|(i, g)| RefArray::new(g, seed.wrapping_add((i as u64).wrapping_mul(0x9e37_79b9))))
            .collect();
        RefSide { arrays, counters: Counters::default() }
    }

    fn lookup(&mut self, asid: Asid, vaddr: u64) -> Option<Translation> {
        self.counters.accesses += 1;
        for a in &mut self.arrays {
            if let Some(t) = a.lookup(asid, vaddr) {
                self.counters.hits += 1;
                return Some(t);
            }
        }
        self.counters.misses += 1;
        None
    }

    fn fill(&mut self, t: &Translation, vaddr: u64) -> Option<Translation> {
        for size in [PageSize::Size1G, PageSize::Size2M, PageSize::Size4K] {
            if size > t.size {
                continue;
            }
            if let Some(a) = self.arrays.iter_mut().find(|a| a.holds(size)) {
                let entry = if size == t.size { *t } else { splinter(t, vaddr, size) };
                return a.fill(&entry);
            }
        }
        None
    }

    pub fn contents(&self) -> Vec<Translation> {
        self.arrays.iter().flat_map(|a| a.contents()).collect()
    }
}

/// Reference for one level.
#[derive(Clone, Debug)]
pub struct RefLevel {
    pub name: String,
    pub data: RefSide,
    pub instr: Option<RefSide>,
    pub inclusive: bool,
}

impl RefLevel {
    // Written plainly on purpose, unlike the model's pattern match.
    #[allow(clippy::unnecessary_unwrap)]
    fn side(&mut self, kind: AccessKind) -> &mut RefSide {
        if kind == AccessKind::IFetch && self.instr.is_some() {
            self.instr.as_mut().unwrap()
        } else {
            &mut self.data
        }
    }

    fn sides_mut(&mut self) -> Vec<&mut RefSide> {
        let mut v = vec![&mut self.data];
        if let Some(i) = &mut self.instr {
            v.push(i);
        }
        v
    }

    pub fn contents(&self) -> Vec<Translation> {
        let mut v = self.data.contents();
        if let Some(i) = &self.instr {
            v.extend(i.contents());
        }
        v
    }
}

/// Reference for `TlbHierarchy`.
#[derive(Clone, Debug)]
pub struct RefHierarchy {
    pub levels: Vec<RefLevel>,
}

impl RefHierarchy {
    pub fn new(levels: &[LevelGeometry], seed: u64) -> RefHierarchy {
        let levels = levels
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let level_seed = seed ^ (i as u64 + 1).wrapping_mul(0xa076_1d64_78bd_642f);
                RefLevel {
                    name: g.name.clone(),
                    data: RefSide::new(&g.arrays, level_seed),
                    instr: if g.instr_arrays.is_empty() {
                        None
                    } else {
                        Some(RefSide::new(&g.instr_arrays, level_seed ^ 0x5851_f42d))
                    },
                    inclusive: g.inclusive,
                }
            })
            .collect();
        RefHierarchy { levels }
    }

    /// Returns the level that hit, or `None` after a walk.
    pub fn access(
        &mut self,
        asid: Asid,
        vaddr: u64,
        kind: AccessKind,
        walk: impl FnOnce() -> Translation,
    ) -> Option<usize> {
        self.access_translation(asid, vaddr, kind, walk).0
    }

    /// [`RefHierarchy::access`], also returning the translation that served it: the entry
    /// that hit (possibly a splinter), or the walk's.
    pub fn access_translation(
        &mut self,
        asid: Asid,
        vaddr: u64,
        kind: AccessKind,
        walk: impl FnOnce() -> Translation,
    ) -> (Option<usize>, Translation) {
        let mut found = None;
        for i in 0..self.levels.len() {
            if let Some(t) = self.levels[i].side(kind).lookup(asid, vaddr) {
                found = Some((i, t));
                break;
            }
        }
        let (upto, t, result) = match found {
            Some((i, t)) => (i, t, Some(i)),
            None => (self.levels.len(), walk(), None),
        };
        for j in (0..upto).rev() {
            let evicted = self.levels[j].side(kind).fill(&t, vaddr);
            if let Some(victim) = evicted {
                if self.levels[j].inclusive {
                    for upper in &mut self.levels[..j] {
                        for side in upper.sides_mut() {
                            for a in &mut side.arrays {
                                a.invalidate_overlapping(&victim);
                            }
                        }
                    }
                }
            }
        }
        (result, t)
    }

    pub fn invalidate(&mut self, asid: Asid, vaddr: u64) -> usize {
        let mut removed = 0;
        for level in &mut self.levels {
            for side in level.sides_mut() {
                for a in &mut side.arrays {
                    removed += a.invalidate(asid, vaddr);
                }
            }
        }
        removed
    }

    pub fn stats(&self) -> Vec<LevelStats> {
        let mut rows = Vec::new();
        for level in &self.levels {
            let side = if level.instr.is_some() { Side::Data } else { Side::Unified };
            let (entries, ways) = (level.data.arrays[0].entries, level.data.arrays[0].ways);
            rows.push(LevelStats { level: level.name.clone(), side, entries, ways, counters: level.data.counters.clone() });
            if let Some(i) = &level.instr {
                let (entries, ways) = (i.arrays[0].entries, i.arrays[0].ways);
                rows.push(LevelStats { level: level.name.clone(), side: Side::Instr, entries, ways, counters: i.counters.clone() });
            }
        }
        rows
    }

    /// For every inclusive level j, every entry of every level above j must be covered by an
    /// entry of level j (either side) of the same ASID and at least the same size. Meaningful
    /// only for shapes where each inclusive level holds (or splinters into) sizes at least as
    /// large as the levels above it store.
    pub fn check_inclusion(&self) -> Result<(), String> {
        for j in 0..self.levels.len() {
            if !self.levels[j].inclusive {
                continue;
            }
            let below: HashSet<(Asid, PageSize, u64)> =
                self.levels[j].contents().iter().map(|b| (b.asid, b.size, b.vpn.0 / base_pages(b.size))).collect();
            for i in 0..j {
                for e in self.levels[i].contents() {
                    let ok = PageSize::ALL
                        .into_iter()
                        .filter(|&s| s >= e.size)
                        .any(|s| below.contains(&(e.asid, s, e.vpn.0 / base_pages(s))));
                    if !ok {
                        return Err(format!("{e:?} in level {i} is not in inclusive level {j}"));
                    }
                }
            }
        }
        Ok(())
    }

    pub fn check_invariants(&self) {
        for level in &self.levels {
            for a in level.data.arrays.iter().chain(level.instr.iter().flat_map(|s| s.arrays.iter())) {
                a.check_invariants();
            }
        }
    }
}
