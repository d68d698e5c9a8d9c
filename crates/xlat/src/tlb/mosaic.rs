//! The Mosaic TLB array (Mosaic pages, ASPLOS'23): one entry maps a *Mosaic page*, `a`
//! virtually consecutive 4 KiB pages (the arity, a power of two from 2 to 64), and holds a
//! table of contents (ToC) of `a` compressed physical frame numbers (CPFNs) with a valid bit
//! per sub-page. The OS model provides the CPFNs and the machine decodes a hit's CPFN through
//! the iceberg hash; this array only stores and finds them.
//!
//! A machine calls [`MosaicTlb::lookup`] for every reference and, on a miss or sub-miss, walks
//! and calls [`MosaicTlb::fill`] with the Mosaic page's ToC. Pages are given as [`Vpn`]s (4 KiB
//! page numbers), not byte addresses as [`super::array::TlbArray`] takes them: the type keeps
//! the two from being mixed up.
//!
//! # Semantics
//!
//! * An entry is tagged by (ASID, MVPN) where MVPN = VPN >> log2(a); its set is MVPN modulo
//!   the number of sets (any number of sets, not only powers of two; one set is a fully
//!   associative array).
//! * [`MosaicTlb::lookup`] returns [`MosaicLookup::Hit`] with the sub-page's CPFN when the tag
//!   is present and the sub-page (VPN mod a) is valid; [`MosaicLookup::SubMiss`] when the tag
//!   is present but the sub-page is not; [`MosaicLookup::Miss`] when the tag is absent. A
//!   sub-miss is a miss (the machine walks), counted apart from tag misses. Both a hit and a
//!   sub-miss are accesses to the entry and update the replacement state as a hit does.
//! * [`MosaicTlb::fill`] writes the whole ToC of the Mosaic page holding a VPN; a code equal to
//!   the unmapped code (all ones of the CPFN width) leaves its sub-page invalid. If the tag is
//!   present (a fill after a sub-miss) the ToC is rewritten in place: nothing is evicted and
//!   the replacement state is not changed (the lookup that sub-missed already counted as the
//!   access; under FIFO the entry keeps its age). Otherwise a new entry is inserted: into the
//!   lowest free way while the set has one (no random draw), else into the policy's victim.
//!   A fill needs no lookup before it, and a ToC with no valid code still inserts an entry.
//! * [`MosaicTlb::invalidate_page`] (the shootdown of one 4 KiB page) clears that sub-page's
//!   valid bit only. The entry stays, keeps its place in the replacement order and keeps
//!   occupying its way even when none of its sub-pages is valid any more: its tag still hits
//!   (lookups sub-miss), and the next fill of that Mosaic page rewrites it in place. Entries
//!   therefore never leave the array except by eviction, and a set's free ways are always its
//!   last ones.
//! * Counters ([`MosaicTlb::counters`]) count lookups only: hits, tag misses and sub-page
//!   misses; misses are the last two, accesses all three.
//!
//! # Layout
//!
//! Struct of arrays, as [`super::array::TlbArray`]: tags and metadata (`VALID | asid`) per
//! slot, scanned by the same constant-length scans, with the same hash index above 32 ways;
//! the ToCs as one flat `Vec<u8>` of `entries * a` codes. A sub-page's valid bit is not
//! stored apart: the CPFN encoding reserves the unmapped code, so a sub-page is valid exactly
//! when its code is another one, and a lookup reads one byte for both. Two memos, both
//! checked by the differential tests, skip searches: a repeated lookup of the Mosaic page
//! last touched costs two compares, and the fill that follows a tag miss does not search
//! again.

use super::array::{scan, scan_set, INDEX_ABOVE_WAYS, NOT_FOUND, VALID};
use super::replacement::{Policy, ReplacementState};
use super::set_index::SetIndex;
use crate::types::{Asid, Vpn};
use rustc_hash::FxHashMap;
use serde::Serialize;

/// Largest arity: the largest the Mosaic paper studies (4 to 64).
pub const MAX_ARITY: u32 = 64;

/// Shape and policy of a Mosaic TLB array.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MosaicGeometry {
    /// Total entries (each maps one Mosaic page).
    pub entries: usize,
    /// Ways per set (equal to `entries` for a fully associative array).
    pub ways: usize,
    /// Replacement policy.
    pub policy: Policy,
    /// 4 KiB pages per Mosaic page: a power of two from 2 to 64.
    pub arity: u32,
}

impl MosaicGeometry {
    /// Bytes of host memory a Mosaic TLB of this shape takes at most: a tag (8 bytes), a meta
    /// word (4) and `arity` CPFN bytes per entry, a count per set, the replacement state, and
    /// above `INDEX_ABOVE_WAYS` ways the hash index of valid entries (as a conventional
    /// array's, [`super::ArrayGeometry::host_bytes`]).
    pub fn host_bytes(&self) -> u64 {
        let (entries, ways) = (self.entries as u64, self.ways.max(1) as u64);
        let sets = entries / ways;
        let index = if self.ways > INDEX_ABOVE_WAYS { entries.saturating_mul(2 * 17) } else { 0 };
        let arrays = entries.saturating_mul(12 + u64::from(self.arity)).saturating_add(sets.saturating_mul(4));
        arrays.saturating_add(ReplacementState::host_bytes(sets, ways)).saturating_add(index)
    }

    /// Checks the shape: a power-of-two arity from 2 to [`MAX_ARITY`], at least one entry and
    /// one way, and ways that divide the entries. The message names the offending field.
    pub fn check(&self) -> Result<(), String> {
        if !self.arity.is_power_of_two() || !(2..=MAX_ARITY).contains(&self.arity) {
            return Err(format!("arity = {} is not a power of two from 2 to {MAX_ARITY}", self.arity));
        }
        if self.entries == 0 {
            return Err("entries = 0: a Mosaic TLB needs at least one entry".to_string());
        }
        if self.ways == 0 {
            return Err("ways = 0: a Mosaic TLB needs at least one way".to_string());
        }
        if self.ways > self.entries {
            return Err(format!("ways = {} exceed the {} entries", self.ways, self.entries));
        }
        if self.entries % self.ways != 0 {
            return Err(format!("{} entries are not divisible by {} ways", self.entries, self.ways));
        }
        Ok(())
    }
}

/// The outcome of a [`MosaicTlb::lookup`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MosaicLookup {
    /// The entry is present and the sub-page valid: its CPFN.
    Hit(u8),
    /// The entry is present but the sub-page is not valid (a miss).
    SubMiss,
    /// No entry for the Mosaic page.
    Miss,
}

/// Lookups of a Mosaic TLB by outcome.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MosaicCounters {
    /// Lookups: `hits + misses`.
    pub accesses: u64,
    /// Lookups that found the entry and a valid sub-page.
    pub hits: u64,
    /// Lookups that missed, either way: `tag_misses + sub_misses` (each walks).
    pub misses: u64,
    /// Lookups that found no entry.
    pub tag_misses: u64,
    /// Lookups that found the entry but an invalid sub-page.
    pub sub_misses: u64,
}

/// A set-associative array of Mosaic TLB entries.
#[derive(Clone, Debug)]
pub struct MosaicTlb {
    geometry: MosaicGeometry,
    ways: usize,
    set_index: SetIndex,
    /// The ways of a specialized shape, whose lookup and insertion are compiled for its
    /// associativity (as [`super::array::TlbArray`]'s are): exact LRU kept as stamps, a
    /// power-of-two number of sets, 1, 2, 4, 8, 12 or 16 ways. 0 for any other geometry.
    lru_ways: usize,
    /// The set mask of a specialized shape.
    mask: u64,
    /// log2 of the arity: MVPN = VPN >> shift, and a slot's ToC starts at slot << shift.
    shift: u32,
    unmapped: u8,
    /// MVPN of each slot.
    tags: Vec<u64>,
    /// `VALID | asid`; 0 for a way never filled.
    metas: Vec<u32>,
    /// `entries * arity` CPFNs, slot by slot; the unmapped code where a sub-page is not valid.
    toc: Vec<u8>,
    /// Ways filled so far in each set. Entries never leave (see the module notes), so the
    /// free ways of a set are the ways from this one on.
    filled: Vec<u32>,
    repl: ReplacementState,
    index: Option<FxHashMap<(u64, u32), u32>>,
    /// The entry the last tag hit or insertion touched: (metadata, MVPN, slot), metadata 0
    /// when none. Nothing has touched any other entry since, so it is the most recent entry
    /// of its set, and touching it again would change no future victim under any policy (LRU
    /// stamps keep their order, the recency list and PLRU bits already point away from it,
    /// FIFO and random ignore hits). A repeated lookup of the same Mosaic page therefore skips
    /// the set scan or hash probe and the touch. Misses, in-place refills and invalidations
    /// leave it valid (they change no replacement state, and the ToC is read afresh);
    /// insertions replace it.
    last: (u32, u64, usize),
    /// The tag the last tag miss looked for, (metadata, MVPN), metadata 0 when none: known
    /// absent until an insertion (only an insertion makes a tag present), so the fill that
    /// follows the miss skips the second search. Insertions clear it.
    absent: (u32, u64),
    hits: u64,
    misses: u64,
    sub_misses: u64,
}

#[inline(always)]
fn meta(asid: Asid) -> u32 {
    VALID | u32::from(asid)
}

/// Copies the ToC `codes` into `dst` (of the same length, a power of two from 2 to 64).
///
/// In whole words: a ToC shorter than 8 codes moves as one 2- or 4-byte word, a longer one 8
/// codes at a time, where `copy_from_slice` of a length known only at run time calls
/// `memmove`.
#[inline]
fn copy_codes(dst: &mut [u8], codes: &[u8]) {
    debug_assert!(codes.len().is_power_of_two() && (2..=64).contains(&codes.len()) && dst.len() == codes.len());
    match codes.len() {
        2 => {
            let word: [u8; 2] = codes.try_into().expect("2 codes");
            dst.copy_from_slice(&word);
        }
        4 => {
            let word: [u8; 4] = codes.try_into().expect("4 codes");
            dst.copy_from_slice(&word);
        }
        _ => {
            for (to, from) in dst.chunks_exact_mut(8).zip(codes.chunks_exact(8)) {
                let word: [u8; 8] = from.try_into().expect("8 codes");
                to.copy_from_slice(&word);
            }
        }
    }
}

impl MosaicTlb {
    /// An empty array. `unmapped` is the CPFN code meaning "not mapped" (all ones of the CPFN
    /// width, as [`crate::os::iceberg::Layout::unmapped`] gives it); `seed` drives the random policy.
    ///
    /// # Panics
    ///
    /// If the geometry fails [`MosaicGeometry::check`] or `unmapped` is not all ones of some
    /// width from 1 to 8 bits.
    pub fn new(geometry: &MosaicGeometry, unmapped: u8, seed: u64) -> MosaicTlb {
        if let Err(e) = geometry.check() {
            panic!("invalid Mosaic TLB geometry: {e}");
        }
        assert!(
            unmapped != 0 && unmapped & unmapped.wrapping_add(1) == 0,
            "the unmapped CPFN {unmapped:#x} is not all ones of a CPFN width"
        );
        let (entries, ways) = (geometry.entries, geometry.ways);
        let sets = entries / ways;
        let repl = ReplacementState::new(geometry.policy, sets, ways, seed);
        let specialized = repl.is_lru_stamps() && sets.is_power_of_two() && matches!(ways, 1 | 2 | 4 | 8 | 12 | 16);
        MosaicTlb {
            geometry: geometry.clone(),
            ways,
            set_index: SetIndex::new(sets),
            lru_ways: if specialized { ways } else { 0 },
            mask: sets as u64 - 1,
            shift: geometry.arity.trailing_zeros(),
            unmapped,
            tags: vec![0; entries],
            metas: vec![0; entries],
            toc: vec![unmapped; entries * geometry.arity as usize],
            filled: vec![0; sets],
            repl,
            index: (ways > INDEX_ABOVE_WAYS).then(FxHashMap::default),
            last: (0, 0, 0),
            absent: (0, 0),
            hits: 0,
            misses: 0,
            sub_misses: 0,
        }
    }

    /// The geometry the array was built with.
    pub fn geometry(&self) -> &MosaicGeometry {
        &self.geometry
    }

    #[inline(always)]
    fn set_of(&self, mvpn: u64) -> usize {
        self.set_index.of(mvpn)
    }

    /// The slot holding (`mvpn`, `meta`) in `set`, if any; changes nothing.
    #[inline(always)]
    fn find(&self, set: usize, mvpn: u64, meta: u32) -> Option<usize> {
        if let Some(index) = &self.index {
            return index.get(&(mvpn, meta)).map(|&slot| slot as usize);
        }
        let base = set * self.ways;
        let way = scan_set(&self.tags, &self.metas, base, self.ways, mvpn, meta);
        (way != NOT_FOUND).then(|| base + way)
    }

    /// Looks up the 4 KiB page `vpn` of `asid`, counting the outcome; a tag hit (hit or
    /// sub-miss) updates the replacement state.
    #[inline(always)]
    pub fn lookup(&mut self, asid: Asid, vpn: Vpn) -> MosaicLookup {
        let (m, mvpn) = (meta(asid), vpn.0 >> self.shift);
        let slot = if self.last.0 == m && self.last.1 == mvpn {
            self.last.2
        } else {
            let found = match self.lru_ways {
                1 => self.probe_lru::<1>(mvpn, m),
                2 => self.probe_lru::<2>(mvpn, m),
                4 => self.probe_lru::<4>(mvpn, m),
                8 => self.probe_lru::<8>(mvpn, m),
                12 => self.probe_lru::<12>(mvpn, m),
                16 => self.probe_lru::<16>(mvpn, m),
                _ => self.probe(mvpn, m),
            };
            match found {
                Some(slot) => slot,
                None => {
                    self.misses += 1;
                    self.absent = (m, mvpn);
                    return MosaicLookup::Miss;
                }
            }
        };
        let sub = (vpn.0 & ((1 << self.shift) - 1)) as usize;
        let code = self.toc[(slot << self.shift) + sub];
        if code != self.unmapped {
            self.hits += 1;
            MosaicLookup::Hit(code)
        } else {
            self.sub_misses += 1;
            MosaicLookup::SubMiss
        }
    }

    /// Finds the entry of (`mvpn`, `m`), touches it and remembers it in `last`.
    #[inline(always)]
    fn probe(&mut self, mvpn: u64, m: u32) -> Option<usize> {
        let set = self.set_of(mvpn);
        let slot = self.find(set, mvpn, m)?;
        self.repl.touch(set, slot - set * self.ways);
        self.last = (m, mvpn, slot);
        Some(slot)
    }

    /// [`MosaicTlb::probe`] for a specialized shape of `W` ways.
    #[inline(always)]
    fn probe_lru<const W: usize>(&mut self, mvpn: u64, m: u32) -> Option<usize> {
        let base = (mvpn & self.mask) as usize * W;
        let way = scan::<W>(&self.tags, &self.metas, base, mvpn, m);
        if way == NOT_FOUND {
            return None;
        }
        self.repl.stamp_slot(base + way, way);
        self.last = (m, mvpn, base + way);
        Some(base + way)
    }

    /// Writes the ToC of the Mosaic page holding `vpn`: `toc[i]` is the CPFN of its sub-page
    /// `i`, the unmapped code for a sub-page not mapped. Rewrites a present entry in place
    /// (no eviction, no replacement update); otherwise inserts one, evicting per the policy.
    ///
    /// # Panics
    ///
    /// If `toc` does not hold exactly `arity` codes.
    #[inline]
    pub fn fill(&mut self, asid: Asid, vpn: Vpn, toc: &[u8]) {
        assert_eq!(toc.len(), 1 << self.shift, "a Mosaic ToC holds one CPFN per sub-page");
        debug_assert!(toc.iter().all(|&c| c <= self.unmapped), "CPFN wider than the unmapped code");
        let (m, mvpn) = (meta(asid), vpn.0 >> self.shift);
        let slot = match self.lru_ways {
            1 => self.place_lru::<1>(mvpn, m),
            2 => self.place_lru::<2>(mvpn, m),
            4 => self.place_lru::<4>(mvpn, m),
            8 => self.place_lru::<8>(mvpn, m),
            12 => self.place_lru::<12>(mvpn, m),
            16 => self.place_lru::<16>(mvpn, m),
            _ => self.place(mvpn, m),
        };
        self.write_toc(slot, toc);
    }

    /// The slot for the ToC of (`mvpn`, `m`): its entry if present, else a new one.
    #[inline(always)]
    fn place(&mut self, mvpn: u64, m: u32) -> usize {
        let set = self.set_of(mvpn);
        // The usual fill follows a tag miss on this very tag: no second search then.
        let found = if self.absent == (m, mvpn) { None } else { self.find(set, mvpn, m) };
        found.unwrap_or_else(|| self.insert(set, mvpn, m))
    }

    /// [`MosaicTlb::place`] for a specialized shape of `W` ways. A new entry takes the way
    /// with the oldest stamp, which while the set has a free way is its lowest free way (a
    /// way never filled holds its bare way number, older than any stamp), as `insert` takes.
    #[inline(always)]
    fn place_lru<const W: usize>(&mut self, mvpn: u64, m: u32) -> usize {
        let set = (mvpn & self.mask) as usize;
        let base = set * W;
        if self.absent != (m, mvpn) {
            let way = scan::<W>(&self.tags, &self.metas, base, mvpn, m);
            if way != NOT_FOUND {
                return base + way;
            }
        }
        let way = self.repl.replace_stamped::<W>(base);
        let slot = base + way;
        if self.metas[slot] == 0 {
            debug_assert_eq!(self.filled[set] as usize, way, "a set's free ways are its last ones");
            self.filled[set] += 1;
        }
        self.claim(slot, mvpn, m)
    }

    /// Takes a way of `set` for a new entry (mvpn, m): the first free way, else the victim.
    #[inline]
    fn insert(&mut self, set: usize, mvpn: u64, m: u32) -> usize {
        let filled = self.filled[set] as usize;
        let way = if filled < self.ways {
            // The lowest free way, as `TlbArray` takes: under the stamp policies also the way
            // `replace` would pick (an unused way's stamp is the oldest); for the others the
            // policy is only told of the fill (no random draw while the set has room).
            self.filled[set] += 1;
            self.repl.fill(set, filled);
            filled
        } else {
            self.repl.replace(set)
        };
        let slot = set * self.ways + way;
        if let Some(index) = &mut self.index {
            if self.metas[slot] != 0 {
                index.remove(&(self.tags[slot], self.metas[slot]));
            }
            index.insert((mvpn, m), slot as u32);
        }
        self.claim(slot, mvpn, m)
    }

    /// Tags `slot` with the new entry (`mvpn`, `m`), which becomes the last one touched (and
    /// no tag is known absent any more); returns the slot.
    #[inline(always)]
    fn claim(&mut self, slot: usize, mvpn: u64, m: u32) -> usize {
        self.tags[slot] = mvpn;
        self.metas[slot] = m;
        self.last = (m, mvpn, slot);
        self.absent = (0, 0);
        slot
    }

    /// Copies `toc` into `slot`.
    #[inline]
    fn write_toc(&mut self, slot: usize, toc: &[u8]) {
        let start = slot << self.shift;
        copy_codes(&mut self.toc[start..start + toc.len()], toc);
    }

    /// Invalidates the sub-entry of the 4 KiB page `vpn` of `asid` (its valid bit; its code
    /// becomes the unmapped one). Returns true if it was valid. The entry itself stays, and
    /// neither the replacement state nor the counters change.
    pub fn invalidate_page(&mut self, asid: Asid, vpn: Vpn) -> bool {
        let mvpn = vpn.0 >> self.shift;
        let Some(slot) = self.find(self.set_of(mvpn), mvpn, meta(asid)) else {
            return false;
        };
        let code = &mut self.toc[(slot << self.shift) + (vpn.0 & ((1 << self.shift) - 1)) as usize];
        let was_valid = *code != self.unmapped;
        *code = self.unmapped;
        was_valid
    }

    /// Lookups so far, by outcome.
    pub fn counters(&self) -> MosaicCounters {
        MosaicCounters {
            accesses: self.hits + self.misses + self.sub_misses,
            hits: self.hits,
            misses: self.misses + self.sub_misses,
            tag_misses: self.misses,
            sub_misses: self.sub_misses,
        }
    }

    /// Every valid sub-entry: the ASID and 4 KiB page it translates and its CPFN code, for
    /// checks against the OS's mappings. Changes nothing.
    pub fn valid_pages(&self) -> impl Iterator<Item = (Asid, Vpn, u8)> + '_ {
        let arity = 1usize << self.shift;
        (0..self.tags.len()).filter(|&slot| self.metas[slot] & VALID != 0).flat_map(move |slot| {
            let asid = (self.metas[slot] & !VALID) as Asid;
            let first = self.tags[slot] << self.shift;
            let codes = &self.toc[slot * arity..(slot + 1) * arity];
            codes.iter().enumerate().filter(|&(_, &code)| code != self.unmapped).map(move |(i, &code)| (asid, Vpn(first + i as u64), code))
        })
    }

    /// Number of entries held (including entries whose sub-pages are all invalid).
    pub fn occupancy(&self) -> usize {
        self.filled.iter().map(|&f| f as usize).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNMAPPED: u8 = 0x7f;

    fn geometry(entries: usize, ways: usize, policy: Policy, arity: u32) -> MosaicGeometry {
        MosaicGeometry { entries, ways, policy, arity }
    }

    /// The ToC of a 4-page Mosaic page whose sub-page `i` has code `base + i`, except the
    /// sub-pages in `unmapped`.
    fn toc4(base: u8, unmapped: &[usize]) -> Vec<u8> {
        (0..4).map(|i| if unmapped.contains(&i) { UNMAPPED } else { base + i as u8 }).collect()
    }

    #[test]
    fn hit_submiss_miss_and_counters() {
        let mut t = MosaicTlb::new(&geometry(8, 2, Policy::Lru, 4), UNMAPPED, 0);
        assert_eq!(t.lookup(3, Vpn(41)), MosaicLookup::Miss);
        t.fill(3, Vpn(41), &toc4(10, &[2]));
        assert_eq!(t.lookup(3, Vpn(41)), MosaicLookup::Hit(11));
        assert_eq!(t.lookup(3, Vpn(40)), MosaicLookup::Hit(10));
        assert_eq!(t.lookup(3, Vpn(42)), MosaicLookup::SubMiss);
        assert_eq!(t.lookup(4, Vpn(41)), MosaicLookup::Miss, "another ASID");
        t.fill(3, Vpn(42), &toc4(20, &[]));
        assert_eq!(t.lookup(3, Vpn(42)), MosaicLookup::Hit(22));
        assert_eq!(t.occupancy(), 1);
        let c = t.counters();
        assert_eq!((c.accesses, c.hits, c.misses, c.tag_misses, c.sub_misses), (6, 3, 3, 2, 1));
    }

    #[test]
    fn invalidation_keeps_the_entry() {
        let mut t = MosaicTlb::new(&geometry(4, 4, Policy::Fifo, 4), UNMAPPED, 0);
        t.fill(0, Vpn(8), &toc4(1, &[3]));
        assert!(t.invalidate_page(0, Vpn(9)));
        assert!(!t.invalidate_page(0, Vpn(9)), "already invalid");
        assert!(!t.invalidate_page(0, Vpn(11)), "never valid");
        assert!(!t.invalidate_page(0, Vpn(12)), "no entry");
        for v in [8, 10] {
            assert!(t.invalidate_page(0, Vpn(v)));
        }
        assert_eq!(t.lookup(0, Vpn(9)), MosaicLookup::SubMiss);
        assert_eq!(t.occupancy(), 1);
    }

    #[test]
    fn direct_mapped_conflict_on_mosaic_page_number() {
        // 2 sets of 1 way, arity 2: VPNs 0-1 are MVPN 0 (set 0), 2-3 MVPN 1 (set 1), 4-5
        // MVPN 2 (set 0 again).
        let mut t = MosaicTlb::new(&geometry(2, 1, Policy::Lru, 2), 1, 0);
        t.fill(0, Vpn(1), &[0, 0]);
        t.fill(0, Vpn(2), &[0, 0]);
        assert_eq!(t.lookup(0, Vpn(0)), MosaicLookup::Hit(0));
        t.fill(0, Vpn(5), &[0, 1]);
        assert_eq!(t.lookup(0, Vpn(0)), MosaicLookup::Miss);
        assert_eq!(t.lookup(0, Vpn(3)), MosaicLookup::Hit(0));
        assert_eq!(t.lookup(0, Vpn(5)), MosaicLookup::SubMiss);
    }

    #[test]
    fn fully_associative_with_index_evicts_lru() {
        let mut t = MosaicTlb::new(&geometry(64, 64, Policy::Lru, 4), UNMAPPED, 0);
        for m in 0..64u64 {
            t.fill(0, Vpn(4 * m), &toc4(0, &[]));
        }
        assert_eq!(t.lookup(0, Vpn(1)), MosaicLookup::Hit(1));
        t.fill(0, Vpn(4 * 64), &toc4(0, &[]));
        assert_eq!(t.lookup(0, Vpn(4)), MosaicLookup::Miss, "MVPN 1 was least recent");
        assert_eq!(t.lookup(0, Vpn(2)), MosaicLookup::Hit(2));
        assert_eq!(t.occupancy(), 64);
    }

    #[test]
    fn geometry_check_messages() {
        let ok = geometry(1536, 12, Policy::Lru, 4);
        assert_eq!(ok.check(), Ok(()));
        for (g, needle) in [
            (MosaicGeometry { arity: 3, ..ok.clone() }, "arity = 3"),
            (MosaicGeometry { arity: 1, ..ok.clone() }, "arity = 1"),
            (MosaicGeometry { arity: 128, ..ok.clone() }, "arity = 128"),
            (MosaicGeometry { entries: 0, ..ok.clone() }, "entries = 0"),
            (MosaicGeometry { ways: 0, ..ok.clone() }, "ways = 0"),
            (MosaicGeometry { ways: 7, ..ok.clone() }, "not divisible by 7 ways"),
            (MosaicGeometry { entries: 8, ways: 16, ..ok.clone() }, "exceed the 8 entries"),
        ] {
            let e = g.check().unwrap_err();
            assert!(e.contains(needle), "{e:?} should mention {needle:?}");
        }
    }

    #[test]
    fn copy_codes_copies_every_arity() {
        for len in [2, 4, 8, 16, 32, 64] {
            let toc: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            let mut copy = vec![0xff; len];
            copy_codes(&mut copy, &toc);
            assert_eq!(copy, toc, "arity {len}");
        }
    }

    #[test]
    #[should_panic(expected = "not all ones")]
    fn unmapped_code_must_be_all_ones() {
        MosaicTlb::new(&geometry(4, 4, Policy::Lru, 4), 0x7e, 0);
    }
}
