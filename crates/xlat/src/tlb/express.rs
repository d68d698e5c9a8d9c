//! The express path: a whole batch through a hierarchy whose every side uses one array of a
//! specialized shape.
//!
//! The most common simulated machines are a single TLB (`single-tlb`, `mosaic-paper`
//! without Mosaic TLBs) and a first level in front of a second (`skylake-like`), over an OS
//! that maps pages of one size and does not track use. While the OS maps no other page size,
//! every side of such a hierarchy uses one exact-LRU array with a power-of-two number of
//! sets: the one its page size fills. For them, the per-reference work of the general path
//! (the loop over levels, the side choice, the loop over arrays, the shape dispatch, the
//! side's bookkeeping in memory) is chosen once per batch instead: the first level's data
//! side runs in a loop compiled for its associativity, with its last hit and counters in
//! registers. The sides it reaches only on a miss (the levels below it, the instruction side
//! of a split first level) are probed and filled through functions chosen for their
//! associativity once per batch, their state in memory. The steps and
//! their results are the same as [`TlbHierarchy::lookup`] followed, on a miss, by the walk
//! and [`TlbHierarchy::fill_after_walk`]; a differential test checks that they agree.

use super::array::{InsertFn, ProbeFn, TlbArray};
use super::hierarchy::{LastHit, Level, SideArrays, TlbHierarchy};
use crate::memref::{AccessKind, MemRef};
use crate::types::{Asid, PageSize, Pfn, Translation, BASE_PAGE_SHIFT};

/// What a batch on the express path did besides the TLB's own counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExpressRun {
    /// References that straddled a page boundary (two TLB accesses).
    pub straddles: u64,
}

/// What the express path asks of the OS model it runs over.
pub trait Walker {
    /// Why a walk failed.
    type Error;
    /// The first base frame of the page holding `vaddr`, after every TLB missed (mapping it
    /// on first touch).
    fn walk(&mut self, asid: Asid, vaddr: u64) -> Result<Pfn, Self::Error>;
    /// A hint that `vaddr` will be walked soon: start loading what the walk reads.
    fn prefetch(&self, asid: Asid, vaddr: u64);
}

impl TlbHierarchy {
    /// The associativity of the first level's data array when batches can take the express
    /// path for an OS that maps pages of `size`: every side uses one array, of a specialized
    /// LRU shape for `size`, and no level below the first is
    /// split or inclusive (its evictions would reach into the levels above).
    pub fn express_ways(&self, size: PageSize) -> Option<usize> {
        let (first, lower) = self.levels.split_first()?;
        if lower.iter().any(|level| level.instr.is_some() || level.inclusive) {
            return None;
        }
        let sides = first.instr.iter().chain(lower.iter().map(|level| &level.data));
        if sides.map(|side| side.express_array(size)).any(|found| found.is_none()) {
            return None;
        }
        first.data.express_array(size).map(|(_, ways)| ways)
    }

    /// Simulates `refs` in order on a hierarchy for which [`TlbHierarchy::express_ways`] of
    /// `size` is `W`, asking `walker` for the frame of every miss (the first base frame of a
    /// page of `size`). With `PREFETCH`, reference `i + distance` is handed to
    /// [`Walker::prefetch`] before reference `i` is simulated. An error from the walker stops
    /// the batch.
    #[inline(never)]
    pub fn run_express<const W: usize, const PREFETCH: bool, K: Walker>(
        &mut self,
        size: PageSize,
        refs: &[MemRef],
        walker: &mut K,
        distance: usize,
    ) -> Result<ExpressRun, K::Error> {
        let (first, lower) = self.levels.split_first_mut().expect("express_ways found a level");
        let (array, _) = first.data.express_array(size).expect("express_ways found the array");
        let side = &mut first.data;
        let mut run = Run {
            array: &mut side.arrays[array],
            index: array as u32,
            last: side.last,
            hits: 0,
            misses: 0,
            filled: false,
            instr: first.instr.as_mut().map(|side| Lower::new(side, size)),
            below: Below::new(lower, size),
        };
        let mut straddles = 0;
        let result = refs.iter().enumerate().try_for_each(|(i, r)| {
            if PREFETCH {
                if let Some(ahead) = refs.get(i + distance) {
                    walker.prefetch(ahead.asid, ahead.vaddr);
                }
            }
            let first = r.vaddr >> BASE_PAGE_SHIFT;
            run.access::<W, _>(r.asid, first, r.kind, walker)?;
            if r.last_vpn().0 != first {
                straddles += 1;
                run.later_pages::<W, _>(r, walker)?;
            }
            Ok(())
        });
        let Run { last, hits, misses, filled, .. } = run;
        side.last = last;
        side.counters.hits += hits;
        side.counters.misses += misses;
        side.nonempty |= u64::from(filled) << array;
        result.map(|()| ExpressRun { straddles })
    }
}

/// A miss of the first level of an express run whose lower levels run apart (see
/// [`LowerLevels`]): the page, its frame and its address space, 16 bytes.
#[derive(Clone, Copy, Debug)]
pub struct Descent {
    page: u64,
    /// The page's frame in units of the OS's page size, as page-table leaves hold it (in 32
    /// bits).
    frame: u32,
    asid: Asid,
}

impl Descent {
    /// The first level missed on base page `page` of `asid`, mapped at base frame `pfn` by
    /// an OS of pages of `size`.
    #[inline(always)]
    pub fn new(asid: Asid, page: u64, pfn: Pfn, size: PageSize) -> Descent {
        let frame = pfn.0 >> (size.shift() - BASE_PAGE_SHIFT);
        debug_assert!(frame <= u64::from(u32::MAX), "page tables hold frames in 32 bits");
        Descent { page, frame: frame as u32, asid }
    }
}

/// The levels below the first of an express hierarchy, taken out of it
/// ([`TlbHierarchy::take_lower`]) so that another thread can replay the first level's misses
/// in them while the first level runs the next batch. An express run's first level fills
/// from the walk's frame, which the lower levels would have given it (the OS maps pages of
/// one size and never moves them), and no lower level is inclusive: the first level's hits
/// and misses do not depend on them, and they see only its misses, in order.
#[derive(Debug)]
pub struct LowerLevels {
    levels: Vec<Level>,
}

impl LowerLevels {
    /// Replays `descents` in order, each as `Below::translate` after a first-level miss in
    /// an express run over pages of `size`, with the frame of the descent for a walk; returns
    /// the walks (misses in every lower level).
    pub fn replay(&mut self, size: PageSize, descents: &[Descent]) -> u64 {
        let mut below = Below::new(&mut self.levels, size);
        let mut walker = Logged { pfn: Pfn(0), walks: 0 };
        for d in descents {
            walker.pfn = Pfn(u64::from(d.frame) << (size.shift() - BASE_PAGE_SHIFT));
            let Ok(_) = below.translate(d.asid, d.page, &mut walker);
        }
        walker.walks
    }
}

/// The walker of a replay: the frame logged, counting the walks.
struct Logged {
    pfn: Pfn,
    walks: u64,
}

impl Walker for Logged {
    type Error = std::convert::Infallible;

    #[inline(always)]
    fn walk(&mut self, _: Asid, _: u64) -> Result<Pfn, Self::Error> {
        self.walks += 1;
        Ok(self.pfn)
    }

    fn prefetch(&self, _: Asid, _: u64) {}
}

impl TlbHierarchy {
    /// Takes out the levels below the first (see [`LowerLevels`]); the hierarchy is then one
    /// level until [`TlbHierarchy::put_lower`] puts them back.
    pub fn take_lower(&mut self) -> LowerLevels {
        LowerLevels { levels: self.levels.split_off(1) }
    }

    /// Puts back the levels [`TlbHierarchy::take_lower`] took.
    pub fn put_lower(&mut self, lower: LowerLevels) {
        debug_assert_eq!(self.levels.len(), 1, "the lower levels are out");
        self.levels.extend(lower.levels);
    }
}

/// The data array of a single-level hierarchy that a simulation loop reaching past the TLB on
/// every reference (Mosaic TLBs riding the same OS, an OS that tracks use) probes and fills
/// through [`TlbHierarchy::lookup_single`] and [`TlbHierarchy::fill_single`], chosen once per
/// batch by [`TlbHierarchy::express_single_level`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SingleLevel {
    /// The array's index in the level's data side.
    array: usize,
    /// Its associativity, the `W` of the two methods.
    pub ways: usize,
}

impl TlbHierarchy {
    /// For a hierarchy of one level whose data side uses one array of a specialized LRU
    /// shape for pages of `size` (as [`TlbHierarchy::express_ways`] requires of every side):
    /// that array. An instruction side, if the level is split, takes the general path.
    pub fn express_single_level(&self, size: PageSize) -> Option<SingleLevel> {
        match &self.levels[..] {
            [level] => level.data.express_array(size).map(|(array, ways)| SingleLevel { array, ways }),
            _ => None,
        }
    }

    /// [`TlbHierarchy::lookup_shaped`] (with `frame`, [`TlbHierarchy::lookup_frame_shaped`])
    /// of a `kind` access to `vaddr`, for a hierarchy whose
    /// [`TlbHierarchy::express_single_level`] is `single`, of `W` ways: the same steps, with
    /// the data side's probe compiled for its associativity. On a hit, the base frame of
    /// `vaddr` when `frame`, else `Pfn(0)`.
    #[inline(always)]
    pub fn lookup_single<const W: usize>(&mut self, single: SingleLevel, asid: Asid, vaddr: u64, kind: AccessKind, frame: bool) -> Option<Pfn> {
        debug_assert_eq!(single.ways, W);
        let level = &mut self.levels[0];
        if let Some(instr) = level.fetch_side(kind == AccessKind::IFetch) {
            let (array, slot) = instr.probe(asid, vaddr)?;
            return Some(if frame { instr.hit_frame::<true>(array, slot, vaddr) } else { Pfn(0) });
        }
        let side = &mut level.data;
        let page = vaddr >> BASE_PAGE_SHIFT;
        let slot = if side.last.page == page && side.last.asid == asid {
            side.last.slot as usize
        } else if let Some(slot) = side.arrays[single.array].probe_lru::<W>(asid, vaddr) {
            side.last = LastHit { page, asid, array: single.array as u32, slot: slot as u32 };
            slot
        } else {
            side.counters.misses += 1;
            side.last = LastHit::NONE;
            return None;
        };
        side.counters.hits += 1;
        Some(if frame { side.hit_frame::<true>(single.array, slot, vaddr) } else { Pfn(0) })
    }

    /// [`TlbHierarchy::fill_after_walk_shaped`] of `t` (which the OS's page size fills as it
    /// is) after [`TlbHierarchy::lookup_single`] missed on a `kind` access to `vaddr` (the
    /// miss cleared the side's last hit).
    #[inline(always)]
    pub fn fill_single<const W: usize>(&mut self, single: SingleLevel, t: &Translation, vaddr: u64, kind: AccessKind) {
        let level = &mut self.levels[0];
        if let Some(instr) = level.fetch_side(kind == AccessKind::IFetch) {
            instr.fill_after_miss::<false>(t, vaddr);
            return;
        }
        let side = &mut level.data;
        side.nonempty |= 1 << single.array;
        side.arrays[single.array].insert_lru::<W, false>(t.asid, vaddr, t.pfn.0);
    }
}

/// The state of an express run: the first level's data array, and its last hit and counters,
/// kept in registers until the batch ends; and the sides reached only on a miss.
struct Run<'a> {
    array: &'a mut TlbArray,
    /// The array's index in its side, for the last hit.
    index: u32,
    last: LastHit,
    hits: u64,
    misses: u64,
    /// Whether anything was inserted (the side's array is then not empty).
    filled: bool,
    /// The instruction side of a split first level.
    instr: Option<Lower<'a>>,
    below: Below<'a>,
}

impl Run<'_> {
    /// The accesses to the pages of `r` after its first: rare, so kept out of the loop.
    #[cold]
    #[inline(never)]
    fn later_pages<const W: usize, K: Walker>(&mut self, r: &MemRef, walker: &mut K) -> Result<(), K::Error> {
        r.later_pages().try_for_each(|page| self.access::<W, _>(r.asid, page.0, r.kind, walker))
    }

    /// One access of `kind` to base page `page` of `asid`.
    #[inline(always)]
    fn access<const W: usize, K: Walker>(&mut self, asid: Asid, page: u64, kind: AccessKind, walker: &mut K) -> Result<(), K::Error> {
        match &mut self.instr {
            Some(instr) if kind == AccessKind::IFetch => self.below.fetch(instr, asid, page, walker),
            _ => self.data_page::<W, _>(asid, page, walker),
        }
    }

    /// One access to base page `page` of `asid` on the first level's data side.
    #[inline(always)]
    fn data_page<const W: usize, K: Walker>(&mut self, asid: Asid, page: u64, walker: &mut K) -> Result<(), K::Error> {
        if self.last.page == page && self.last.asid == asid {
            self.hits += 1;
        } else if let Some(slot) = self.array.probe_lru::<W>(asid, page << BASE_PAGE_SHIFT) {
            self.hits += 1;
            self.last = LastHit { page, asid, array: self.index, slot: slot as u32 };
        } else {
            self.misses += 1;
            self.last = LastHit::NONE;
            // A single level walks here, inline: the call below would cost a tenth of its time.
            let pfn = if self.below.sides.is_empty() {
                walker.walk(asid, page << BASE_PAGE_SHIFT)?.0
            } else {
                self.below.translate(asid, page, walker)?
            };
            self.array.insert_lru::<W, false>(asid, page << BASE_PAGE_SHIFT, pfn);
            self.filled = true;
        }
        Ok(())
    }
}

/// A side the express path reaches only on a miss above it (a level below the first, or the
/// instruction side of a split first level): its one array in use, probed and filled through
/// the functions of its associativity, chosen once per batch. Its last hit and counters stay
/// in memory.
struct Lower<'a> {
    side: &'a mut SideArrays,
    array: usize,
    probe: ProbeFn,
    insert: InsertFn,
}

impl<'a> Lower<'a> {
    /// The side's express array for pages of `size`; see [`SideArrays::express_array`].
    fn new(side: &'a mut SideArrays, size: PageSize) -> Lower<'a> {
        let (array, _) = side.express_array(size).expect("express_ways checked every side");
        let (probe, insert) = side.arrays[array].lru_fns().expect("an array of a specialized shape");
        Lower { side, array, probe, insert }
    }

    /// [`SideArrays::probe`] of base page `page` of `asid`: on a hit, the entry's first base
    /// frame.
    #[inline(always)]
    fn probe(&mut self, asid: Asid, page: u64) -> Option<u64> {
        let side = &mut *self.side;
        if side.last.page == page && side.last.asid == asid {
            side.counters.hits += 1;
            return Some(side.arrays[self.array].frame_at(side.last.slot as usize));
        }
        let array = &mut side.arrays[self.array];
        if let Some(slot) = (self.probe)(array, asid, page << BASE_PAGE_SHIFT) {
            side.counters.hits += 1;
            side.last = LastHit { page, asid, array: self.array as u32, slot: slot as u32 };
            return Some(array.frame_at(slot));
        }
        side.counters.misses += 1;
        side.last = LastHit::NONE;
        None
    }

    /// [`SideArrays::fill_after_miss`] of the page holding base page `page` of `asid`, at
    /// first base frame `pfn`, after this side missed on it.
    #[inline(always)]
    fn fill(&mut self, asid: Asid, page: u64, pfn: u64) {
        self.side.nonempty |= 1 << self.array;
        self.side.last = LastHit::NONE;
        (self.insert)(&mut self.side.arrays[self.array], asid, page << BASE_PAGE_SHIFT, pfn);
    }
}

/// The levels below the first.
struct Below<'a> {
    sides: Vec<Lower<'a>>,
}

impl<'a> Below<'a> {
    /// The data sides of `levels` (below the first, none split) for pages of `size`.
    fn new(levels: &'a mut [Level], size: PageSize) -> Below<'a> {
        Below { sides: levels.iter_mut().map(|level| Lower::new(&mut level.data, size)).collect() }
    }

    /// The first base frame of the page holding base page `page` of `asid`, after the first
    /// level missed: from the first level below that hits, which fills the levels above it
    /// (deepest first), or from a walk, which fills them all.
    #[inline(never)]
    fn translate<K: Walker>(&mut self, asid: Asid, page: u64, walker: &mut K) -> Result<u64, K::Error> {
        // Two levels (`skylake-like`): one side below, without the loops.
        if let [side] = &mut self.sides[..] {
            if let Some(pfn) = side.probe(asid, page) {
                return Ok(pfn);
            }
            let pfn = walker.walk(asid, page << BASE_PAGE_SHIFT)?.0;
            side.fill(asid, page, pfn);
            return Ok(pfn);
        }
        let mut hit = None;
        for (i, side) in self.sides.iter_mut().enumerate() {
            if let Some(pfn) = side.probe(asid, page) {
                hit = Some((i, pfn));
                break;
            }
        }
        let (upto, pfn) = match hit {
            Some(found) => found,
            None => (self.sides.len(), walker.walk(asid, page << BASE_PAGE_SHIFT)?.0),
        };
        for side in self.sides[..upto].iter_mut().rev() {
            side.fill(asid, page, pfn);
        }
        Ok(pfn)
    }

    /// One access to base page `page` of `asid` on `instr`, the instruction side of the first
    /// level: out of line, as the data side's loop should stay short.
    #[inline(never)]
    fn fetch<K: Walker>(&mut self, instr: &mut Lower, asid: Asid, page: u64, walker: &mut K) -> Result<(), K::Error> {
        if instr.probe(asid, page).is_none() {
            let pfn = self.translate(asid, page, walker)?;
            instr.fill(asid, page, pfn);
        }
        Ok(())
    }
}
