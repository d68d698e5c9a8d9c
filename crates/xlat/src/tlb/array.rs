//! One set-associative TLB array: `entries` entries in `entries / ways` sets, each entry tagged
//! with its ASID and page size. An array may hold several page sizes (a unified array, probed
//! once per size, as Skylake's STLB holds 4 KiB and 2 MiB entries) or just one (split arrays).
//!
//! The set index is the page number (in units of the entry's own page size) modulo the number
//! of sets; any number of sets is allowed, not only powers of two (1536 entries, 12 ways).

use super::replacement::{Policy, ReplacementState};
use super::set_index::SetIndex;
use crate::types::{Asid, PageSize, Pfn, Translation, Vpn, BASE_PAGE_SHIFT};
use rustc_hash::FxHashMap;

/// Above this associativity, tags are found through a hash index instead of a linear scan of
/// the set, so that a fully associative 1024-entry TLB costs the same per lookup as a 4-way one.
pub(crate) const INDEX_ABOVE_WAYS: usize = 32;

/// Marks a valid entry in its metadata word.
pub(crate) const VALID: u32 = 1 << 31;

/// Shape and policy of one TLB array, already validated.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ArrayGeometry {
    /// Total entries.
    pub entries: usize,
    /// Ways per set (equal to `entries` for a fully associative array).
    pub ways: usize,
    /// Replacement policy.
    pub policy: Policy,
    /// Page sizes the array holds, probed smallest first.
    pub page_sizes: Vec<PageSize>,
}

/// The geometries with a specialized probe and insertion: exact LRU, a power-of-two number of
/// sets, one of these associativities, and entries of the smallest page size the array holds
/// only. Most simulated TLBs are of this kind (the `mosaic-paper` TLB, both `skylake-like`
/// levels, while the OS maps no huge page), and for them a probe is a mask, a fixed-length
/// scan and a stamp, with none of the checks the general path makes per reference (page
/// sizes, policy, set-count arithmetic, associativity). An array that holds several sizes
/// turns general for good when an entry of a larger one is inserted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    Lru1,
    Lru2,
    Lru4,
    Lru8,
    Lru12,
    Lru16,
    /// Anything else: the general path.
    General,
}

/// A set-associative array of translations.
#[derive(Clone, Debug)]
pub struct TlbArray {
    shape: Shape,
    /// For the specialized shapes: the smallest page size's shift, the set mask and the size's
    /// bits of the metadata word (with [`VALID`]).
    shift: u32,
    mask: u64,
    size_meta: u32,
    sets: usize,
    ways: usize,
    set_index: SetIndex,
    sizes: Vec<PageSize>,
    /// The page size, when the array holds only one (the common split array): a lookup then
    /// probes it directly, without the loop over sizes and the per-size occupancy check.
    single_size: Option<PageSize>,
    /// Page number in units of the entry's page size.
    tags: Vec<u64>,
    /// `VALID | size index << 16 | asid`; 0 when invalid.
    metas: Vec<u32>,
    pfns: Vec<u64>,
    valid_in_set: Vec<u32>,
    /// Valid entries of each page size; sizes with none are not probed, so an array that could
    /// hold 2 MiB pages costs nothing extra while none is mapped.
    valid_per_size: [u32; 3],
    repl: ReplacementState,
    index: Option<FxHashMap<(u64, u32), u32>>,
}

/// [`TlbArray::probe_lru`] of one associativity: the slot that hit, if any.
pub(super) type ProbeFn = fn(&mut TlbArray, Asid, u64) -> Option<usize>;

/// [`TlbArray::insert_lru`] of one associativity, for an entry known to be absent: the page
/// holding the address, of the array's page size, in the ASID, at the base frame.
pub(super) type InsertFn = fn(&mut TlbArray, Asid, u64, u64);

/// What the scans return when no way matches.
pub(crate) const NOT_FOUND: usize = usize::MAX;

/// The way of the set of `N` ways starting at `base` that holds (`tag`, `meta`), or
/// [`NOT_FOUND`]. The set is taken as arrays of length `N`, so there is one bounds check and
/// the loop is unrolled.
#[inline(always)]
pub(crate) fn scan<const N: usize>(tags: &[u64], metas: &[u32], base: usize, tag: u64, meta: u32) -> usize {
    let tags: &[u64; N] = tags[base..base + N].try_into().expect("a whole set");
    let metas: &[u32; N] = metas[base..base + N].try_into().expect("a whole set");
    scan_slices(tags, metas, tag, meta)
}

/// The way of the set of `ways` ways starting at `base` that holds (`tag`, `meta`), or
/// [`NOT_FOUND`]. Shared with the Mosaic array, whose entries use the same tag and metadata
/// layout (a valid entry's metadata is never 0).
#[inline(always)]
pub(crate) fn scan_set(tags: &[u64], metas: &[u32], base: usize, ways: usize, tag: u64, meta: u32) -> usize {
    // The common associativities get a scan of a constant length, which the compiler
    // unrolls into straight-line compares; a loop over a run-time way count costs several
    // times as many instructions (loop control, unrolling remainders).
    match ways {
        1 => scan::<1>(tags, metas, base, tag, meta),
        2 => scan::<2>(tags, metas, base, tag, meta),
        4 => scan::<4>(tags, metas, base, tag, meta),
        8 => scan::<8>(tags, metas, base, tag, meta),
        12 => scan::<12>(tags, metas, base, tag, meta),
        16 => scan::<16>(tags, metas, base, tag, meta),
        ways => scan_slices(&tags[base..base + ways], &metas[base..base + ways], tag, meta),
    }
}

/// The way whose tag and metadata equal `tag` and `meta`, or [`NOT_FOUND`].
#[inline(always)]
fn scan_slices(tags: &[u64], metas: &[u32], tag: u64, meta: u32) -> usize {
    // Tags first: a compare and a conditional move per way, with no data-dependent branch
    // (faster on random streams than an early exit that mispredicts where the match is).
    // Only the way found is then checked for ASID, size and validity; when two ways share
    // the tag (other ASIDs, or another page size in a unified array) and the last one is not
    // the entry sought, the full scan decides.
    let mut last = NOT_FOUND;
    for (w, &t) in tags.iter().enumerate() {
        if t == tag {
            last = w;
        }
    }
    if last == NOT_FOUND || metas[last] == meta {
        return last;
    }
    scan_full(tags, metas, tag, meta)
}

/// [`scan_slices`] comparing tag and metadata of every way.
#[inline(never)]
fn scan_full(tags: &[u64], metas: &[u32], tag: u64, meta: u32) -> usize {
    let mut found = NOT_FOUND;
    for (w, (&t, &m)) in tags.iter().zip(metas).enumerate() {
        if t == tag && m == meta {
            found = w;
        }
    }
    found
}

#[inline]
fn meta(asid: Asid, size: PageSize) -> u32 {
    VALID | (size.index() as u32) << 16 | u32::from(asid)
}

impl ArrayGeometry {
    /// Bytes of host memory an array of this shape takes at most (see
    /// [`crate::host::memory`]): a tag (8 bytes), a meta word (4) and a frame (8) per entry, a
    /// count per set, the replacement state, and above `INDEX_ABOVE_WAYS` ways the hash
    /// index of valid entries (a 16-byte bucket and a control byte per slot, up to twice as
    /// many slots as entries).
    pub fn host_bytes(&self) -> u64 {
        let (entries, ways) = (self.entries as u64, self.ways.max(1) as u64);
        let sets = entries / ways;
        let index = if self.ways > INDEX_ABOVE_WAYS { entries.saturating_mul(2 * 17) } else { 0 };
        let arrays = entries.saturating_mul(8 + 4 + 8).saturating_add(sets.saturating_mul(4));
        arrays.saturating_add(ReplacementState::host_bytes(sets, ways)).saturating_add(index)
    }
}

impl TlbArray {
    /// An empty array. `geometry` must be valid (ways divide entries, at least one size);
    /// `seed` drives the random replacement policy.
    pub fn new(geometry: &ArrayGeometry, seed: u64) -> TlbArray {
        let ways = geometry.ways;
        let sets = geometry.entries / ways;
        let mut sizes = geometry.page_sizes.clone();
        sizes.sort();
        sizes.dedup();
        let repl = ReplacementState::new(geometry.policy, sets, ways, seed);
        let shape = match ways {
            _ if !sets.is_power_of_two() || !repl.is_lru_stamps() => Shape::General,
            1 => Shape::Lru1,
            2 => Shape::Lru2,
            4 => Shape::Lru4,
            8 => Shape::Lru8,
            12 => Shape::Lru12,
            16 => Shape::Lru16,
            _ => Shape::General,
        };
        TlbArray {
            shape,
            shift: sizes[0].shift(),
            mask: sets as u64 - 1,
            size_meta: meta(0, sizes[0]),
            sets,
            ways,
            set_index: SetIndex::new(sets),
            single_size: (sizes.len() == 1).then(|| sizes[0]),
            sizes,
            tags: vec![0; sets * ways],
            metas: vec![0; sets * ways],
            pfns: vec![0; sets * ways],
            valid_in_set: vec![0; sets],
            valid_per_size: [0; 3],
            repl,
            index: (ways > INDEX_ABOVE_WAYS).then(FxHashMap::default),
        }
    }

    /// Total entries.
    pub fn entries(&self) -> usize {
        self.sets * self.ways
    }

    /// Ways per set.
    pub fn ways(&self) -> usize {
        self.ways
    }

    /// The ways of a specialized shape (see `Shape`) whose entries are of `size`, so that a
    /// caller can choose [`TlbArray::probe_lru`] and [`TlbArray::insert_lru`] once for many
    /// references; `None` for the general path.
    pub(super) fn lru_ways(&self, size: PageSize) -> Option<usize> {
        let ways = match self.shape {
            Shape::Lru1 => 1,
            Shape::Lru2 => 2,
            Shape::Lru4 => 4,
            Shape::Lru8 => 8,
            Shape::Lru12 => 12,
            Shape::Lru16 => 16,
            Shape::General => return None,
        };
        (self.shift == size.shift()).then_some(ways)
    }

    /// True if the array can hold entries of `size`.
    #[inline]
    pub fn holds(&self, size: PageSize) -> bool {
        self.sizes.contains(&size)
    }

    #[inline(always)]
    fn set_of(&self, tag: u64) -> usize {
        self.set_index.of(tag)
    }

    /// The slot holding (`tag`, `meta`) in `set`, if any.
    #[inline(always)]
    fn find(&self, set: usize, tag: u64, meta: u32) -> Option<usize> {
        if self.index.is_some() {
            return self.find_indexed(tag, meta);
        }
        let base = set * self.ways;
        let way = scan_set(&self.tags, &self.metas, base, self.ways, tag, meta);
        (way != NOT_FOUND).then(|| base + way)
    }

    /// [`TlbArray::find`] in an array with a hash index; kept out of line so that the scans of
    /// small sets, inlined into every probe, stay short.
    #[inline]
    fn find_indexed(&self, tag: u64, meta: u32) -> Option<usize> {
        self.index.as_ref().and_then(|index| index.get(&(tag, meta))).map(|&slot| slot as usize)
    }

    /// [`TlbArray::probe_lru`] and [`TlbArray::insert_lru`] of this array's specialized
    /// shape, as functions, for a caller that chooses them once for many references (the
    /// express path's sides below its first); `None` for the general shape.
    pub(super) fn lru_fns(&self) -> Option<(ProbeFn, InsertFn)> {
        fn insert<const W: usize>(array: &mut TlbArray, asid: Asid, vaddr: u64, pfn: u64) {
            array.insert_lru::<W, false>(asid, vaddr, pfn);
        }
        let fns: (ProbeFn, InsertFn) = match self.shape {
            Shape::Lru1 => (TlbArray::probe_lru::<1>, insert::<1>),
            Shape::Lru2 => (TlbArray::probe_lru::<2>, insert::<2>),
            Shape::Lru4 => (TlbArray::probe_lru::<4>, insert::<4>),
            Shape::Lru8 => (TlbArray::probe_lru::<8>, insert::<8>),
            Shape::Lru12 => (TlbArray::probe_lru::<12>, insert::<12>),
            Shape::Lru16 => (TlbArray::probe_lru::<16>, insert::<16>),
            Shape::General => return None,
        };
        Some(fns)
    }

    /// The first base frame of the entry in `slot`, which must be valid.
    #[inline(always)]
    pub(super) fn frame_at(&self, slot: usize) -> u64 {
        self.pfns[slot]
    }

    /// The entry in `slot`, which must be valid.
    #[inline]
    pub(crate) fn translation_at(&self, slot: usize) -> Translation {
        let size = PageSize::ALL[(self.metas[slot] >> 16 & 0x3) as usize];
        Translation {
            asid: (self.metas[slot] & 0xffff) as Asid,
            vpn: Vpn(self.tags[slot] << (size.shift() - BASE_PAGE_SHIFT)),
            pfn: Pfn(self.pfns[slot]),
            size,
        }
    }

    /// Looks up `vaddr`; on a hit updates the replacement state and returns the entry.
    #[inline]
    pub fn lookup(&mut self, asid: Asid, vaddr: u64) -> Option<Translation> {
        self.probe(asid, vaddr).map(|slot| self.translation_at(slot))
    }

    /// Looks up `vaddr`; on a hit updates the replacement state and returns the slot that hit.
    /// The hierarchy builds a [`Translation`] from the slot only when it needs one (a hit below
    /// the first level), so first-level hits never decode an entry.
    #[inline(always)]
    pub(crate) fn probe(&mut self, asid: Asid, vaddr: u64) -> Option<usize> {
        match self.shape {
            Shape::Lru1 => self.probe_lru::<1>(asid, vaddr),
            Shape::Lru2 => self.probe_lru::<2>(asid, vaddr),
            Shape::Lru4 => self.probe_lru::<4>(asid, vaddr),
            Shape::Lru8 => self.probe_lru::<8>(asid, vaddr),
            Shape::Lru12 => self.probe_lru::<12>(asid, vaddr),
            Shape::Lru16 => self.probe_lru::<16>(asid, vaddr),
            Shape::General => self.probe_general(asid, vaddr),
        }
    }

    /// [`TlbArray::probe`] for a specialized shape of `W` ways. An empty array needs no
    /// occupancy test: its metadata words are 0, which no lookup's metadata equals.
    #[inline(always)]
    pub(super) fn probe_lru<const W: usize>(&mut self, asid: Asid, vaddr: u64) -> Option<usize> {
        let tag = vaddr >> self.shift;
        let base = (tag & self.mask) as usize * W;
        let way = scan::<W>(&self.tags, &self.metas, base, tag, self.size_meta | u32::from(asid));
        if way == NOT_FOUND {
            return None;
        }
        self.repl.stamp_slot(base + way, way);
        Some(base + way)
    }

    /// [`TlbArray::probe`] for any geometry.
    #[inline(always)]
    fn probe_general(&mut self, asid: Asid, vaddr: u64) -> Option<usize> {
        if let Some(size) = self.single_size {
            // An empty array (a 1 GiB array while the OS maps none) costs one compare.
            if self.valid_per_size[size.index()] == 0 {
                return None;
            }
            return self.probe_size(asid, vaddr, size);
        }
        for i in 0..self.sizes.len() {
            let size = self.sizes[i];
            if self.valid_per_size[size.index()] == 0 {
                continue;
            }
            if let Some(slot) = self.probe_size(asid, vaddr, size) {
                return Some(slot);
            }
        }
        None
    }

    /// Probes for an entry of `size` covering `vaddr`, touching it on a hit.
    #[inline(always)]
    fn probe_size(&mut self, asid: Asid, vaddr: u64, size: PageSize) -> Option<usize> {
        let tag = vaddr >> size.shift();
        let set = self.set_of(tag);
        let slot = self.find(set, tag, meta(asid, size))?;
        self.repl.touch(set, slot - set * self.ways);
        Some(slot)
    }

    /// Inserts `t` (whose size this array must hold) and returns the entry it evicted, if any.
    /// Inserting an entry that is already present refreshes it and evicts nothing.
    pub fn fill(&mut self, t: &Translation) -> Option<Translation> {
        debug_assert!(self.holds(t.size), "array does not hold {} pages", t.size);
        let tag = t.vpn.0 >> (t.size.shift() - BASE_PAGE_SHIFT);
        let set = self.set_of(tag);
        if let Some(slot) = self.find(set, tag, meta(t.asid, t.size)) {
            self.pfns[slot] = t.pfn.0;
            self.repl.fill(set, slot - set * self.ways);
            return None;
        }
        self.insert_absent(t)
    }

    /// Inserts `t`, which the caller knows is not present (it just missed in a lookup of an
    /// address `t` covers), and returns the entry it evicted, if any. Skips the tag search that
    /// [`TlbArray::fill`] does.
    #[inline]
    pub fn insert_absent(&mut self, t: &Translation) -> Option<Translation> {
        self.insert_absent_impl::<true>(t)
    }

    /// [`TlbArray::insert_absent`] for callers that do not need the evicted entry (a level
    /// that is not inclusive): the victim is not decoded into a [`Translation`].
    #[inline]
    pub(crate) fn insert_absent_quiet(&mut self, t: &Translation) {
        self.insert_absent_impl::<false>(t);
    }

    /// Both insertions; with `REPORT` false the result is always `None` and the code that
    /// builds it is compiled out.
    #[inline(always)]
    fn insert_absent_impl<const REPORT: bool>(&mut self, t: &Translation) -> Option<Translation> {
        debug_assert!(self.holds(t.size), "array does not hold {} pages", t.size);
        if self.shape != Shape::General && t.size.shift() != self.shift {
            self.shape = Shape::General;
        }
        let (asid, vaddr, pfn) = (t.asid, t.vpn.addr().0, t.pfn.0);
        match self.shape {
            Shape::Lru1 => self.insert_lru::<1, REPORT>(asid, vaddr, pfn),
            Shape::Lru2 => self.insert_lru::<2, REPORT>(asid, vaddr, pfn),
            Shape::Lru4 => self.insert_lru::<4, REPORT>(asid, vaddr, pfn),
            Shape::Lru8 => self.insert_lru::<8, REPORT>(asid, vaddr, pfn),
            Shape::Lru12 => self.insert_lru::<12, REPORT>(asid, vaddr, pfn),
            Shape::Lru16 => self.insert_lru::<16, REPORT>(asid, vaddr, pfn),
            Shape::General => self.insert_general::<REPORT>(t),
        }
    }

    /// The insertion of a specialized shape of `W` ways: the page holding `vaddr` in `asid`,
    /// at base frame `pfn`, which the caller knows is absent, goes to the way with the oldest
    /// stamp, which is the first free way while the set has one. With `REPORT`, returns the
    /// entry evicted.
    #[inline(always)]
    pub(super) fn insert_lru<const W: usize, const REPORT: bool>(&mut self, asid: Asid, vaddr: u64, pfn: u64) -> Option<Translation> {
        let tag = vaddr >> self.shift;
        let set = (tag & self.mask) as usize;
        let m = self.size_meta | u32::from(asid);
        debug_assert!(self.find(set, tag, m).is_none(), "insert_absent of a present entry");
        let way = self.repl.replace_stamped::<W>(set * W);
        let slot = set * W + way;
        let old = self.metas[slot];
        let evicted = (REPORT && old != 0).then(|| self.translation_at(slot));
        if old == 0 {
            self.valid_in_set[set] += 1;
            self.valid_per_size[self.sizes[0].index()] += 1;
        }
        self.tags[slot] = tag;
        self.metas[slot] = m;
        self.pfns[slot] = pfn;
        evicted
    }

    /// The insertion of any geometry.
    #[inline(always)]
    fn insert_general<const REPORT: bool>(&mut self, t: &Translation) -> Option<Translation> {
        let tag = t.vpn.0 >> (t.size.shift() - BASE_PAGE_SHIFT);
        let set = self.set_of(tag);
        let m = meta(t.asid, t.size);
        debug_assert!(self.find(set, tag, m).is_none(), "insert_absent of a present entry");
        let base = set * self.ways;
        // Under the stamp policies (LRU, FIFO ≤ 16 ways) the oldest stamp already is the first
        // free way while the set has one (an unused way's stamp is its bare way number, below
        // every real stamp), so the victim choice needs no occupancy test.
        let stamped = self.repl.stamped();
        let way = if stamped || self.valid_in_set[set] as usize == self.ways {
            self.repl.replace(set)
        } else {
            let way = self.free_way(set);
            self.repl.fill(set, way);
            way
        };
        let slot = base + way;
        let old = self.metas[slot];
        if stamped && old == 0 {
            self.valid_in_set[set] += 1;
        }
        let evicted = (REPORT && old != 0).then(|| self.translation_at(slot));
        // An array of one size only counts while it fills up: replacing an entry keeps the
        // count of its (only) size.
        if old == 0 || self.single_size.is_none() {
            if old != 0 {
                self.valid_per_size[(old >> 16 & 0x3) as usize] -= 1;
            }
            self.valid_per_size[t.size.index()] += 1;
        }
        if self.index.is_some() {
            self.reindex(slot, tag, m);
        }
        self.tags[slot] = tag;
        self.metas[slot] = m;
        self.pfns[slot] = t.pfn.0;
        evicted
    }

    /// Takes the first free way of `set`, which must have one (only while the array fills up).
    #[inline(never)]
    fn free_way(&mut self, set: usize) -> usize {
        self.valid_in_set[set] += 1;
        let base = set * self.ways;
        self.metas[base..base + self.ways].iter().position(|&m| m == 0).expect("a free way")
    }

    /// Updates the hash index for `slot` being overwritten by (`tag`, `meta`).
    #[inline]
    fn reindex(&mut self, slot: usize, tag: u64, meta: u32) {
        let (old_tag, old_meta) = (self.tags[slot], self.metas[slot]);
        if let Some(index) = &mut self.index {
            if old_meta != 0 {
                index.remove(&(old_tag, old_meta));
            }
            index.insert((tag, meta), slot as u32);
        }
    }

    /// Removes every entry that translates `vaddr` in `asid`; returns how many were removed.
    pub fn invalidate(&mut self, asid: Asid, vaddr: u64) -> usize {
        let mut removed = 0;
        for i in 0..self.sizes.len() {
            let size = self.sizes[i];
            let tag = vaddr >> size.shift();
            let set = self.set_of(tag);
            let m = meta(asid, size);
            if let Some(slot) = self.find(set, tag, m) {
                self.remove(slot);
                removed += 1;
            }
        }
        removed
    }

    /// Removes every entry of `t.asid` of a size smaller than `t.size` that lies inside `t`
    /// (the splinters of a huge page); returns how many were removed. Scans the whole array, so
    /// it is meant for the rare back-invalidation of a huge entry, not for every reference.
    pub fn invalidate_inside(&mut self, t: &Translation) -> usize {
        let span = t.size.base_pages();
        let mut removed = 0;
        for slot in 0..self.metas.len() {
            if self.metas[slot] == 0 {
                continue;
            }
            let e = self.translation_at(slot);
            if e.asid == t.asid && e.size < t.size && e.vpn.0 >= t.vpn.0 && e.vpn.0 < t.vpn.0 + span {
                self.remove(slot);
                removed += 1;
            }
        }
        removed
    }

    /// Invalidates the valid entry in `slot`.
    fn remove(&mut self, slot: usize) {
        if let Some(index) = &mut self.index {
            index.remove(&(self.tags[slot], self.metas[slot]));
        }
        let set = slot / self.ways;
        self.valid_per_size[(self.metas[slot] >> 16 & 0x3) as usize] -= 1;
        self.metas[slot] = 0;
        self.valid_in_set[set] -= 1;
        self.repl.invalidate(set, slot - set * self.ways);
    }

    /// Every valid entry, for checks against the OS's mappings. Changes nothing.
    pub fn valid_translations(&self) -> impl Iterator<Item = Translation> + '_ {
        (0..self.tags.len()).filter(|&slot| self.metas[slot] & VALID != 0).map(|slot| self.translation_at(slot))
    }

    /// True when the array holds no valid entry.
    pub fn is_empty(&self) -> bool {
        self.valid_per_size.iter().all(|&v| v == 0)
    }

    /// Number of valid entries.
    pub fn occupancy(&self) -> usize {
        self.valid_in_set.iter().map(|&v| v as usize).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t4k(vpn: u64) -> Translation {
        Translation { asid: 0, vpn: Vpn(vpn), pfn: Pfn(vpn + 100), size: PageSize::Size4K }
    }

    fn geometry(entries: usize, ways: usize, policy: Policy) -> ArrayGeometry {
        ArrayGeometry { entries, ways, policy, page_sizes: vec![PageSize::Size4K] }
    }

    #[test]
    fn direct_mapped_conflict() {
        let mut a = TlbArray::new(&geometry(4, 1, Policy::Lru), 0);
        assert_eq!(a.fill(&t4k(1)), None);
        assert_eq!(a.lookup(0, 0x1000).map(|t| t.pfn), Some(Pfn(101)));
        assert_eq!(a.fill(&t4k(5)), Some(t4k(1)));
        assert_eq!(a.lookup(0, 0x1000), None);
    }

    #[test]
    fn asid_tags_separate_entries() {
        let mut a = TlbArray::new(&geometry(8, 2, Policy::Lru), 0);
        a.fill(&t4k(3));
        assert!(a.lookup(1, 0x3000).is_none());
        assert!(a.lookup(0, 0x3abc).is_some());
    }

    #[test]
    fn unified_array_holds_two_sizes() {
        let g = ArrayGeometry {
            entries: 16,
            ways: 4,
            policy: Policy::Lru,
            page_sizes: vec![PageSize::Size2M, PageSize::Size4K],
        };
        let mut a = TlbArray::new(&g, 0);
        let huge = Translation { asid: 0, vpn: Vpn(512), pfn: Pfn(0), size: PageSize::Size2M };
        a.fill(&huge);
        a.fill(&t4k(7));
        assert_eq!(a.lookup(0, 0x3f_f000), Some(huge));
        assert_eq!(a.lookup(0, 0x7000).map(|t| t.size), Some(PageSize::Size4K));
        assert_eq!(a.invalidate(0, 0x20_0000), 1);
        assert_eq!(a.lookup(0, 0x3f_f000), None);
        assert_eq!(a.occupancy(), 1);
    }

    #[test]
    fn fully_associative_with_index() {
        let mut a = TlbArray::new(&geometry(64, 64, Policy::Lru), 0);
        for v in 0..64 {
            assert_eq!(a.fill(&t4k(v)), None);
        }
        a.lookup(0, 0);
        assert_eq!(a.fill(&t4k(64)), Some(t4k(1)));
        assert!(a.lookup(0, 0).is_some());
        assert_eq!(a.invalidate(0, 64 << 12), 1);
        assert_eq!(a.fill(&t4k(65)), None);
    }
}
