//! A TLB hierarchy: any number of levels, each with one or more arrays, optionally split into
//! instruction and data sides, optionally inclusive of the levels above it.
//!
//! A reference probes level 0 first (the level closest to the core). On a hit at level `i`
//! the translation is filled into levels `0..i`; a miss in every level walks the page table
//! and fills every level. Fills go deepest first, so that an inclusive level's
//! back-invalidations happen before the levels above it are filled. A level that lacks an
//! array for the page size of a translation stores the largest smaller size it has
//! (splintering, as hardware does); if it has none, the level is not filled.

use super::array::{ArrayGeometry, TlbArray};
use crate::memref::AccessKind;
use crate::types::{Asid, PageSize, Pfn, Translation, Vpn, BASE_PAGE_SHIFT};
use serde::Serialize;

/// Which references an array or statistics row serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// Loads, stores and instruction fetches (an unsplit level).
    Unified,
    /// Loads and stores of a split level.
    Data,
    /// Instruction fetches of a split level.
    Instr,
}

impl Side {
    /// The name used in results: `unified`, `data` or `instr`.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Unified => "unified",
            Side::Data => "data",
            Side::Instr => "instr",
        }
    }
}

/// Shape of one level, already validated.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LevelGeometry {
    /// Name used in statistics (`L1`, `L2`, `STLB`...).
    pub name: String,
    /// Arrays for data references (and for all references when `instr_arrays` is empty).
    pub arrays: Vec<ArrayGeometry>,
    /// Arrays for instruction fetches; non-empty makes the level split.
    pub instr_arrays: Vec<ArrayGeometry>,
    /// Whether evicting an entry here removes it from every level above (inclusion).
    pub inclusive: bool,
}

/// Accesses, hits and misses of one side of one level.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    /// Lookups.
    pub accesses: u64,
    /// Lookups that found an entry.
    pub hits: u64,
    /// Lookups that found none.
    pub misses: u64,
}

/// Counters of one side of one level, with its name, for reporting.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LevelStats {
    /// The level's name.
    pub level: String,
    /// Which references the row counts.
    pub side: Side,
    /// Entries of the side's first array.
    pub entries: usize,
    /// Ways of the side's first array.
    pub ways: usize,
    /// The counts.
    #[serde(flatten)]
    pub counters: Counters,
}

/// Hits and misses of one side; accesses are their sum, computed when reported rather than
/// counted on every reference.
#[derive(Clone, Debug, Default)]
pub(super) struct HitMiss {
    pub(super) hits: u64,
    pub(super) misses: u64,
}

impl HitMiss {
    fn counters(&self) -> Counters {
        Counters { accesses: self.hits + self.misses, hits: self.hits, misses: self.misses }
    }
}

/// The arrays of one side of a level and where each page size is filled.
#[derive(Clone, Debug)]
pub(super) struct SideArrays {
    pub(super) arrays: Vec<TlbArray>,
    /// For each page size (by index): the array and the size to store it as.
    fill_target: [Option<(usize, PageSize)>; 3],
    /// Bit `i` set when `arrays[i]` may hold an entry: probes visit only those, so the 2 MiB
    /// and 1 GiB arrays of a level cost nothing while the OS maps no huge page. Set on every
    /// fill, cleared when an invalidation empties the array.
    pub(super) nonempty: u64,
    /// The side's last lookup, when it hit. Nothing has touched this side's sets since, so
    /// the entry is the most recent of its set and a repeated hit on it changes no replacement
    /// state under any policy (LRU and PLRU would re-mark what is already marked; FIFO and
    /// random ignore hits). Consecutive references to one page, most of a real stream, then
    /// cost a compare. Cleared by every miss, fill and invalidation.
    pub(super) last: LastHit,
    pub(super) counters: HitMiss,
}

/// Where a side's last lookup hit: its 4 KiB page, ASID, array and slot.
#[derive(Clone, Copy, Debug)]
pub(super) struct LastHit {
    pub(super) page: u64,
    pub(super) asid: Asid,
    pub(super) array: u32,
    pub(super) slot: u32,
}

impl LastHit {
    /// No last hit: a page number no address has (4 KiB pages of 64-bit addresses are below
    /// 2^52).
    pub(super) const NONE: LastHit = LastHit { page: u64::MAX, asid: 0, array: 0, slot: 0 };
}

impl SideArrays {
    fn new(geometries: &[ArrayGeometry], seed: u64) -> SideArrays {
        let arrays: Vec<TlbArray> = geometries
            .iter()
            .enumerate()
            .map(|(i, g)| TlbArray::new(g, seed.wrapping_add(i as u64 * 0x9e37_79b9)))
            .collect();
        let fill_target = PageSize::ALL.map(|size| {
            PageSize::ALL
                .iter()
                .rev()
                .filter(|&&s| s <= size)
                .find_map(|&s| arrays.iter().position(|a| a.holds(s)).map(|i| (i, s)))
        });
        assert!(arrays.len() <= 64, "a side holds at most 64 arrays (validation allows 3)");
        SideArrays { arrays, fill_target, nonempty: 0, last: LastHit::NONE, counters: HitMiss::default() }
    }

    /// This side's statistics row.
    fn stats(&self, level: &str, side: Side) -> LevelStats {
        let first = &self.arrays[0];
        LevelStats { level: level.to_string(), side, entries: first.entries(), ways: first.ways(), counters: self.counters.counters() }
    }

    /// Probes every array; on a hit returns the array and slot (see [`TlbArray::probe`]).
    #[inline(always)]
    pub(super) fn probe(&mut self, asid: Asid, vaddr: u64) -> Option<(usize, usize)> {
        let page = vaddr >> BASE_PAGE_SHIFT;
        if self.last.page == page && self.last.asid == asid {
            self.counters.hits += 1;
            return Some((self.last.array as usize, self.last.slot as usize));
        }
        let mut candidates = self.nonempty;
        while candidates != 0 {
            let i = candidates.trailing_zeros() as usize;
            candidates &= candidates - 1;
            if let Some(slot) = self.arrays[i].probe(asid, vaddr) {
                self.counters.hits += 1;
                self.last = LastHit { page, asid, array: i as u32, slot: slot as u32 };
                return Some((i, slot));
            }
        }
        self.counters.misses += 1;
        self.last = LastHit::NONE;
        None
    }

    /// With `FRAME`, the base frame of `vaddr` in the entry in `slot` of `array` (a hit just
    /// found); without, `Pfn(0)`, and nothing is read.
    #[inline(always)]
    pub(super) fn hit_frame<const FRAME: bool>(&self, array: usize, slot: usize, vaddr: u64) -> Pfn {
        if FRAME {
            self.arrays[array].translation_at(slot).pfn_of(vaddr)
        } else {
            Pfn(0)
        }
    }

    /// Fills `t` after this side missed on `vaddr` (so the entry is absent). With `REPORT`,
    /// returns the entry evicted; without, always `None` (a level that is not inclusive).
    #[inline(always)]
    pub(super) fn fill_after_miss<const REPORT: bool>(&mut self, t: &Translation, vaddr: u64) -> Option<Translation> {
        let (array, size) = self.fill_target[t.size.index()]?;
        let entry = if size == t.size { *t } else { t.splinter(vaddr, size) };
        self.nonempty |= 1 << array;
        self.last = LastHit::NONE;
        if REPORT {
            self.arrays[array].insert_absent(&entry)
        } else {
            self.arrays[array].insert_absent_quiet(&entry);
            None
        }
    }

    /// The array the express path uses on this side for an OS mapping pages of `size`, and its
    /// ways: the array `size` fills (stored as `size`, not splintered), of a specialized LRU
    /// shape for `size`, while no other array of the side may hold an entry. Then every probe
    /// and fill of the side touches that array alone, as [`SideArrays::probe`] and
    /// [`SideArrays::fill_after_miss`] would.
    pub(super) fn express_array(&self, size: PageSize) -> Option<(usize, usize)> {
        let (array, stored) = self.fill_target[size.index()]?;
        if stored != size || self.nonempty & !(1 << array) != 0 {
            return None;
        }
        Some((array, self.arrays[array].lru_ways(size)?))
    }

    fn invalidate(&mut self, asid: Asid, vaddr: u64) -> usize {
        let removed = self.arrays.iter_mut().map(|a| a.invalidate(asid, vaddr)).sum();
        self.forget_empty();
        removed
    }

    /// Removes every entry smaller than `t` that lies inside it; returns how many.
    fn invalidate_inside(&mut self, t: &Translation) -> usize {
        let removed = self.arrays.iter_mut().map(|array| array.invalidate_inside(t)).sum();
        self.forget_empty();
        removed
    }

    /// Clears the `nonempty` bits of arrays that invalidations emptied, and the last hit.
    fn forget_empty(&mut self) {
        self.last = LastHit::NONE;
        for (i, array) in self.arrays.iter().enumerate() {
            if array.is_empty() {
                self.nonempty &= !(1 << i);
            }
        }
    }
}

#[derive(Clone, Debug)]
pub(super) struct Level {
    name: String,
    pub(super) data: SideArrays,
    pub(super) instr: Option<SideArrays>,
    pub(super) inclusive: bool,
}

impl Level {
    /// The side serving instruction fetches (`instr`) or data references.
    #[inline(always)]
    fn side(&mut self, instr: bool) -> &mut SideArrays {
        match (&mut self.instr, instr) {
            (Some(side), true) => side,
            _ => &mut self.data,
        }
    }

    /// The side [`Level::side`] picks when it is not the data side: the instruction side,
    /// for a fetch (`instr`) on a split level. The fetch is tested first: most references
    /// are not fetches.
    #[inline(always)]
    pub(super) fn fetch_side(&mut self, instr: bool) -> Option<&mut SideArrays> {
        if instr {
            self.instr.as_mut()
        } else {
            None
        }
    }

    fn invalidate(&mut self, asid: Asid, vaddr: u64) -> usize {
        self.data.invalidate(asid, vaddr) + self.instr.as_mut().map_or(0, |s| s.invalidate(asid, vaddr))
    }

    /// Removes every entry smaller than `t` that lies inside it, on both sides.
    fn invalidate_inside(&mut self, t: &Translation) -> usize {
        std::iter::once(&mut self.data).chain(self.instr.as_mut()).map(|side| side.invalidate_inside(t)).sum()
    }
}

/// A multi-level TLB.
#[derive(Clone, Debug)]
pub struct TlbHierarchy {
    pub(super) levels: Vec<Level>,
}

impl TlbHierarchy {
    /// Builds the hierarchy; `seed` drives random replacement (each array gets its own stream).
    pub fn new(levels: &[LevelGeometry], seed: u64) -> TlbHierarchy {
        let levels = levels
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let level_seed = seed ^ (i as u64 + 1).wrapping_mul(0xa076_1d64_78bd_642f);
                Level {
                    name: g.name.clone(),
                    data: SideArrays::new(&g.arrays, level_seed),
                    instr: (!g.instr_arrays.is_empty())
                        .then(|| SideArrays::new(&g.instr_arrays, level_seed ^ 0x5851_f42d)),
                    inclusive: g.inclusive,
                }
            })
            .collect();
        TlbHierarchy { levels }
    }

    /// Translates the page holding `vaddr`. Returns the level that hit, or `None` when every
    /// level missed and `walk` supplied the translation. An error from `walk` is passed on.
    /// The same as [`TlbHierarchy::lookup`] then, on a miss, `walk` and
    /// [`TlbHierarchy::fill_after_walk`].
    #[inline(always)]
    pub fn access<E>(
        &mut self,
        asid: Asid,
        vaddr: u64,
        kind: AccessKind,
        walk: impl FnOnce() -> Result<Translation, E>,
    ) -> Result<Option<usize>, E> {
        if let Some(level) = self.lookup(asid, vaddr, kind) {
            return Ok(Some(level));
        }
        let t = walk()?;
        self.fill_after_walk(&t, vaddr, kind);
        Ok(None)
    }

    /// The first half of [`TlbHierarchy::access`]: probes the levels in order and returns the
    /// one that hit, after filling the levels above it; `None` when every level missed, in
    /// which case the caller walks the page table and calls [`TlbHierarchy::fill_after_walk`].
    ///
    /// Split from the walk so that a simulation loop calls its OS directly rather than through
    /// a closure, and always inlined into that loop: this is the whole per-reference path, and
    /// a call would add a prologue and spills per reference.
    #[inline(always)]
    pub fn lookup(&mut self, asid: Asid, vaddr: u64, kind: AccessKind) -> Option<usize> {
        if self.levels.len() == 1 {
            self.lookup_shaped::<true>(asid, vaddr, kind)
        } else {
            self.lookup_shaped::<false>(asid, vaddr, kind)
        }
    }

    /// The second half of [`TlbHierarchy::access`]: fills every level with `t`, the walk's
    /// answer for `vaddr` after [`TlbHierarchy::lookup`] missed everywhere.
    #[inline(always)]
    pub fn fill_after_walk(&mut self, t: &Translation, vaddr: u64, kind: AccessKind) {
        if self.levels.len() == 1 {
            self.fill_after_walk_shaped::<true>(t, vaddr, kind);
        } else {
            self.fill_after_walk_shaped::<false>(t, vaddr, kind);
        }
    }

    /// True when the hierarchy has one level (a single TLB), for which a simulation loop can
    /// use the `ONE_LEVEL` forms of [`TlbHierarchy::lookup_shaped`] and
    /// [`TlbHierarchy::fill_after_walk_shaped`], chosen once per batch instead of per reference.
    pub fn is_one_level(&self) -> bool {
        self.levels.len() == 1
    }

    /// [`TlbHierarchy::lookup`] for a hierarchy known to have one level (`ONE_LEVEL`, which
    /// must then be true of it) or any number: a single TLB needs no level loop and has
    /// nothing above to fill.
    #[inline(always)]
    pub fn lookup_shaped<const ONE_LEVEL: bool>(&mut self, asid: Asid, vaddr: u64, kind: AccessKind) -> Option<usize> {
        self.lookup_hit::<ONE_LEVEL, false>(asid, vaddr, kind).map(|(level, _)| level)
    }

    /// [`TlbHierarchy::lookup_shaped`] returning, on a hit, the base frame of `vaddr` instead
    /// of the level (for an OS that tracks the use of every frame). Read from the entry while
    /// the lookup has it at hand, rather than found again after it.
    #[inline(always)]
    pub fn lookup_frame_shaped<const ONE_LEVEL: bool>(&mut self, asid: Asid, vaddr: u64, kind: AccessKind) -> Option<Pfn> {
        self.lookup_hit::<ONE_LEVEL, true>(asid, vaddr, kind).map(|(_, pfn)| pfn)
    }

    /// Both lookups: the level that hit and, with `FRAME`, the base frame of `vaddr` in the
    /// entry that hit (without, `Pfn(0)`).
    #[inline(always)]
    fn lookup_hit<const ONE_LEVEL: bool, const FRAME: bool>(&mut self, asid: Asid, vaddr: u64, kind: AccessKind) -> Option<(usize, Pfn)> {
        let instr = kind == AccessKind::IFetch;
        if ONE_LEVEL {
            debug_assert_eq!(self.levels.len(), 1);
            let side = self.levels[0].side(instr);
            let (array, slot) = side.probe(asid, vaddr)?;
            return Some((0, side.hit_frame::<FRAME>(array, slot, vaddr)));
        }
        for i in 0..self.levels.len() {
            let side = self.levels[i].side(instr);
            if let Some((array, slot)) = side.probe(asid, vaddr) {
                // Only a hit below the first level has levels to fill, and so needs the entry.
                if i > 0 {
                    let t = side.arrays[array].translation_at(slot);
                    self.fill_above(i, &t, vaddr, instr);
                    return Some((i, t.pfn_of(vaddr)));
                }
                return Some((0, side.hit_frame::<FRAME>(array, slot, vaddr)));
            }
        }
        None
    }

    /// [`TlbHierarchy::fill_after_walk`] for a hierarchy known to have one level
    /// (`ONE_LEVEL`) or any number.
    #[inline(always)]
    pub fn fill_after_walk_shaped<const ONE_LEVEL: bool>(&mut self, t: &Translation, vaddr: u64, kind: AccessKind) {
        let instr = kind == AccessKind::IFetch;
        if ONE_LEVEL {
            // Its evictions, even if it is inclusive, have no level above to clean.
            debug_assert_eq!(self.levels.len(), 1);
            self.levels[0].side(instr).fill_after_miss::<false>(t, vaddr);
            return;
        }
        self.fill_above(self.levels.len(), t, vaddr, instr);
    }

    /// Fills levels `0..upto`, which all just missed on `vaddr`, deepest first.
    #[inline(always)]
    fn fill_above(&mut self, upto: usize, t: &Translation, vaddr: u64, instr: bool) {
        for j in (0..upto).rev() {
            let level = &mut self.levels[j];
            if !level.inclusive {
                level.side(instr).fill_after_miss::<false>(t, vaddr);
            } else if let Some(victim) = level.side(instr).fill_after_miss::<true>(t, vaddr) {
                self.back_invalidate(j, &victim);
            }
        }
    }

    /// Removes `victim`, just evicted from inclusive level `j`, from every level above it.
    #[inline(never)]
    fn back_invalidate(&mut self, j: usize, victim: &Translation) {
        let victim_addr = victim.vpn.addr().0;
        for upper in &mut self.levels[..j] {
            upper.invalidate(victim.asid, victim_addr);
            // A level above that lacks the victim's (huge) size holds it as splinters, one per
            // base page used, not only at the victim's first address: remove them all, or they
            // outlive the victim and break inclusion.
            if victim.size != PageSize::Size4K {
                upper.invalidate_inside(victim);
            }
        }
    }

    /// Removes every entry translating any part of the page of `size` at `vpn` in `asid` from
    /// every level (a shootdown of one page); returns how many entries were removed. A level
    /// without arrays of the page's size holds a huge page as splinters, one per base page
    /// used: they all go.
    pub fn invalidate(&mut self, asid: Asid, vpn: Vpn, size: PageSize) -> usize {
        let page = Translation { asid, vpn, pfn: Pfn(0), size };
        let splinters = |level: &mut Level| if size == PageSize::Size4K { 0 } else { level.invalidate_inside(&page) };
        self.levels.iter_mut().map(|level| level.invalidate(asid, vpn.addr().0) + splinters(level)).sum()
    }

    /// Counters of every level and side, top level first, data side before instruction side.
    pub fn stats(&self) -> Vec<LevelStats> {
        let mut rows = Vec::new();
        for level in &self.levels {
            let data_side = if level.instr.is_some() { Side::Data } else { Side::Unified };
            rows.push(level.data.stats(&level.name, data_side));
            if let Some(instr) = &level.instr {
                rows.push(instr.stats(&level.name, Side::Instr));
            }
        }
        rows
    }

    /// Every valid entry of every level and side, for checks against the OS's mappings.
    /// Changes nothing.
    pub fn valid_translations(&self) -> impl Iterator<Item = Translation> + '_ {
        let sides = self.levels.iter().flat_map(|level| std::iter::once(&level.data).chain(&level.instr));
        sides.flat_map(|side| &side.arrays).flat_map(TlbArray::valid_translations)
    }

    /// Number of levels.
    pub fn depth(&self) -> usize {
        self.levels.len()
    }
}
