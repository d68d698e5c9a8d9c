//! The `ecpt` driver: elastic cuckoo page tables (ECPT, Skarlatos et al., ASPLOS '20) as
//! EMT's ECPT MMU driver builds them (seed 003; the research sheet's section 2).
//!
//! Each address space has, per page size, `ways` hash tables ([`ways`]) of 64-byte clusters
//! of 8 PTEs (8 consecutive pages of that size); a cluster's candidate slot in way `w` is a
//! keyed 64-bit hash of (cluster number, size × 98317, w) modulo the way's size. Ways start
//! at 16,384 clusters (1 MiB), are resized ×4 when one reaches occupancy 0.6, with gradual
//! rehashing, and insertion kicks up to 128 times. A cuckoo walk table per level ([`cwt`])
//! records which sizes each section holds. Every table is in the machine's memory: its pages
//! are placed one by one through the placement policy as pinned frames (the kernel's
//! allocation of a table is virtually, not necessarily physically, contiguous), the 4 KiB
//! ways and both CWTs at an address space's first fault, the ways of a larger size at its
//! first page of that size, a resized table as the next fault asks; an old table's pages
//! are freed when its rehash ends.
//!
//! A walk hashes its address and looks the PUD and PMD cuckoo walk caches up in parallel
//! (2 and 16 entries, fully associative, LRU, keyed VA >> 39 and VA >> 30), chooses the ways
//! to probe from the headers of the caches that hit (the sheet's rules), and probes them in
//! parallel ([`crate::mmu::Step::Probe`]): with `probe = "chosen"` (the paper: every chosen
//! way) or `"correct"` (the artifact's `-cache_correct_only`, behind EMT's figures: only the
//! way that holds the entry). A cache that missed then fetches both lines its CWT may hold
//! ([`crate::mmu::Step::Fill`]). ECPT has no page walk caches: a machine's `[machine.pwc]`
//! serves radix and FPT walks only.
//!
//! The hash is XXH64 (the artifact's is MurmurHash64 with seed 0): both mix every bit of the
//! key, so slots differ but their distribution does not.

pub mod cwt;
pub mod ways;

use self::cwt::{Cwt, Present};
use self::ways::{Growth, WayCounts, Ways, CLUSTER_BYTES};
use super::{DriverSpec, PageTableDriver, Placed, Step, TableFull, TableNeed, WalkRead, WalkSink};
use crate::cache::tags::{Lookups, TagArray};
use crate::os::kernel_work::{Meter, Operation};
use crate::os::translation::{iterate_by_find, Find, Visit};
use crate::os::OsSpec;
use std::ops::{ControlFlow, Range};
use crate::tlb::Policy;
use crate::types::{Asid, PageSize, Pfn, PhysAddr, Translation, Vpn};
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// The slot of `key` of size class `class` in way `way` of `slots` slots: XXH64 of (key,
/// class × 98317, way) keyed by `seed`, modulo the size (the artifact's hash input).
pub fn hash_slot(seed: u64, key: u64, class: u64, way: usize, slots: u64) -> u64 {
    let mut input = [0u8; 20];
    input[..8].copy_from_slice(&key.to_le_bytes());
    input[8..16].copy_from_slice(&(class * 98317).to_le_bytes());
    input[16..].copy_from_slice(&(way as u32).to_le_bytes());
    xxhash_rust::xxh64::xxh64(&input, seed) % slots
}

/// Which ways a walk probes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Probe {
    /// Every way the walk caches leave possible, in parallel (the paper).
    #[default]
    Chosen,
    /// Only the way that holds the entry (the artifact's `-cache_correct_only`, with which
    /// EMT's figures were made).
    Correct,
}

/// How the kernel iterates over a range of entries (EMT's customized iterator, Fig. 17).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Iteration {
    /// Cluster-aware: a hash lookup per cluster of 8 entries, the next entries read in place
    /// (`ptep + 1`), a cluster that is not there skipped whole (EMT's ECPT driver).
    #[default]
    Cluster,
    /// The default written over `find`: a lookup of every page.
    Find,
}

/// The parameters of `ecpt`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct EcptSpec {
    /// Ways per page size (3; at most 4).
    pub ways: u8,
    /// Clusters of a way at first (16,384: 1 MiB).
    pub initial_clusters: u64,
    /// Occupancy of a way that starts its resize (0.6), in (0, 1).
    pub resize_threshold: f64,
    /// Size of a resized way over the old (4).
    pub resize_factor: u64,
    /// Old slots rehashed per insertion while a way is resized (16, the kernel's per lock
    /// hold).
    pub rehash_step: u64,
    /// Most cuckoo kicks of one insertion (128); past them the run ends with an error.
    pub max_kicks: u32,
    /// Entries of the PUD cuckoo walk cache (2).
    pub pud_cwc: usize,
    /// Entries of the PMD cuckoo walk cache (16).
    pub pmd_cwc: usize,
    /// Lines per way of the PUD cuckoo walk table (2,048).
    pub pud_cwt_lines: u64,
    /// Lines per way of the PMD cuckoo walk table (4,096).
    pub pmd_cwt_lines: u64,
    /// Which ways a walk probes (`chosen`, the paper; `correct`, the artifact).
    pub probe: Probe,
    /// How the kernel iterates over a range (`cluster`, EMT's customized iterator; `find`,
    /// the default over lookups).
    pub iterator: Iteration,
    /// Key of the hash.
    pub seed: u64,
}

impl Default for EcptSpec {
    fn default() -> EcptSpec {
        EcptSpec {
            ways: 3,
            initial_clusters: 16384,
            resize_threshold: 0.6,
            resize_factor: 4,
            rehash_step: 16,
            max_kicks: 128,
            pud_cwc: 2,
            pmd_cwc: 16,
            pud_cwt_lines: 2048,
            pmd_cwt_lines: 4096,
            probe: Probe::Chosen,
            iterator: Iteration::Cluster,
            seed: 0,
        }
    }
}

impl DriverSpec for EcptSpec {
    fn check(&self, _: &OsSpec, path: &str) -> crate::Result<()> {
        let fail = |field: &str, message: String| Err(crate::Error::config(format!("{path}.{field}"), message));
        if !(1..=4).contains(&self.ways) {
            return fail("ways", format!("{} ways per page size: ECPT has 1 to 4", self.ways));
        }
        if self.initial_clusters == 0 || self.initial_clusters > 1 << 30 {
            return fail("initial_clusters", format!("{} clusters: a way has 1 to 2^30", self.initial_clusters));
        }
        if !(self.resize_threshold > 0.0 && self.resize_threshold < 1.0) {
            return fail("resize_threshold", format!("{}: an occupancy in (0, 1)", self.resize_threshold));
        }
        if !(2..=64).contains(&self.resize_factor) {
            return fail("resize_factor", format!("{}: a resize grows a way 2 to 64 times", self.resize_factor));
        }
        if self.rehash_step == 0 {
            return fail("rehash_step", "a resize must move at least one slot per insertion".into());
        }
        for (field, entries) in [("pud_cwc", self.pud_cwc), ("pmd_cwc", self.pmd_cwc)] {
            if !(1..=1024).contains(&entries) {
                return fail(field, format!("{entries} entries: a cuckoo walk cache has 1 to 1024"));
            }
        }
        for (field, lines) in [("pud_cwt_lines", self.pud_cwt_lines), ("pmd_cwt_lines", self.pmd_cwt_lines)] {
            if lines == 0 || lines > 1 << 24 {
                return fail(field, format!("{lines} lines: a cuckoo walk table way has 1 to 2^24"));
            }
        }
        Ok(())
    }
}

/// Section bits of the PMD-CWT (16 MiB: a 2 MiB cluster) and the PUD-CWT (8 GiB).
const PMD_SECTION_SHIFT: u32 = 24;
const PUD_SECTION_SHIFT: u32 = 33;

/// The tables of one address space.
#[derive(Clone, Debug)]
struct Space {
    /// The ways of each page size, once it has pages.
    sizes: [Option<Ways>; 3],
    pmd: Cwt,
    pud: Cwt,
}

/// The size class of `size` (0 for 4 KiB).
fn class(size: PageSize) -> usize {
    PageSize::ALL.iter().position(|&s| s == size).expect("a page size")
}

/// The cluster key of `vaddr` in size class `c`.
fn key(vaddr: u64, c: usize) -> u64 {
    (vaddr >> PageSize::ALL[c].shift()) >> 3
}

/// What a size's ways did and hold.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SizeStats {
    /// The page size.
    pub size: String,
    /// Slots of each way's table, summed over address spaces.
    pub slots: Vec<u64>,
    /// Occupancy of each way.
    pub occupancy: Vec<f64>,
    /// Insertions, kicks, resizes and rehashed entries.
    #[serde(flatten)]
    pub counts: WayCounts,
}

/// What the ECPT driver did and holds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EcptStats {
    /// Pages of every table (ways and CWTs) placed in memory.
    pub table_pages: usize,
    /// Each page size's ways, summed over address spaces (occupancy of the fullest way).
    pub sizes: Vec<SizeStats>,
    /// Lookups of the PUD cuckoo walk cache.
    pub pud_cwc: Lookups,
    /// Lookups of the PMD cuckoo walk cache.
    pub pmd_cwc: Lookups,
    /// Lines the cuckoo walk tables hold.
    pub cwt_lines: usize,
    /// Lines that found no slot in their cuckoo walk table.
    pub cwt_overflows: u64,
    /// Walks.
    pub walks: u64,
    /// Ways the walks probed.
    pub ways_probed: u64,
    /// Walks that probed every way (the walk caches did not narrow them down).
    pub every_way_walks: u64,
}

/// The ECPT driver.
#[derive(Clone, Debug)]
pub struct Ecpt {
    spec: EcptSpec,
    growth: Growth,
    page_bytes: u64,
    spaces: FxHashMap<Asid, Space>,
    /// The walk caches, boxed: a machine's driver is one of several, as small as the others.
    pud_cwc: Box<TagArray>,
    pmd_cwc: Box<TagArray>,
    rng: Xoshiro256PlusPlus,
    released: Vec<Pfn>,
    walks: u64,
    ways_probed: u64,
    every_way_walks: u64,
}

impl Ecpt {
    /// The space of `asid`, which has tables.
    fn space(&mut self, asid: Asid) -> &mut Space {
        self.spaces.get_mut(&asid).expect("an address space with tables")
    }

    /// The ways a walk of `vaddr` probes, (size class, way) pairs, before the check that
    /// they include the right one: from the walk caches' hits and the headers (the research
    /// sheet's rules).
    fn choose(space: &Space, vaddr: u64, pud_hit: bool, pmd_hit: bool) -> Vec<(usize, usize)> {
        let ways_of = |present: Present| -> Vec<(usize, usize)> {
            (0..3).filter(|&c| present[c]).flat_map(|c| space.sizes[c].iter().flat_map(move |w| (0..w.ways.len()).map(move |way| (c, way)))).collect()
        };
        let large_way = |c: usize| space.sizes[c].as_ref().and_then(|w| w.find(key(vaddr, c))).map(|(way, _)| (c, way));
        let pud = if pud_hit { space.pud.header(vaddr) } else { None };
        let pmd = if pmd_hit { space.pmd.header(vaddr) } else { None };
        if let Some(h) = pud {
            if h[2] {
                return large_way(2).into_iter().collect();
            }
            if h[0] && !h[1] {
                return ways_of([true, false, false]);
            }
        }
        if let Some(h) = pmd {
            let mut chosen: Vec<_> = if h[1] { large_way(1).into_iter().collect() } else { Vec::new() };
            if h[0] {
                chosen.extend(ways_of([true, false, false]));
            }
            return chosen;
        }
        match pud {
            Some(h) => ways_of(h),
            None => ways_of([true; 3]),
        }
    }
}

impl PageTableDriver for Ecpt {
    type Spec = EcptSpec;
    type Stats = EcptStats;

    fn new(spec: &EcptSpec, os: &OsSpec) -> Ecpt {
        let page_bytes = os.page_size.bytes();
        let growth = Growth { max_kicks: spec.max_kicks, threshold: spec.resize_threshold, factor: spec.resize_factor, step: spec.rehash_step, page_bytes };
        Ecpt {
            spec: *spec,
            growth,
            page_bytes,
            spaces: FxHashMap::default(),
            pud_cwc: Box::new(TagArray::new(spec.pud_cwc, spec.pud_cwc, Policy::Lru, spec.seed)),
            pmd_cwc: Box::new(TagArray::new(spec.pmd_cwc, spec.pmd_cwc, Policy::Lru, spec.seed)),
            rng: Xoshiro256PlusPlus::seed_from_u64(spec.seed ^ 0xec97),
            released: Vec::new(),
            walks: 0,
            ways_probed: 0,
            every_way_walks: 0,
        }
    }

    fn stateless(&self) -> bool {
        false
    }

    /// The CWTs, then the ways of `size`, then the new table of any way being resized.
    fn need(&self, asid: Asid, _: Vpn, size: PageSize) -> Option<TableNeed> {
        let Some(space) = self.spaces.get(&asid) else { return Some(TableNeed::Page) };
        let incomplete = !space.pmd.complete() || !space.pud.complete() || space.sizes[class(size)].is_none() || space.sizes.iter().flatten().any(Ways::has_incomplete);
        incomplete.then_some(TableNeed::Page)
    }

    /// Adds the page to the table waiting for it, zeroed; the pages of a resize's new table
    /// are the work of the resize.
    fn given(&mut self, asid: Asid, _: Vpn, size: PageSize, table: Placed, meter: &mut Meter) {
        let Placed::Page(frame) = table else { unreachable!("ECPT asks for pages only") };
        let (spec, page_bytes) = (self.spec, self.page_bytes);
        let space = self.spaces.entry(asid).or_insert_with(|| Space {
            sizes: [None, None, None],
            pmd: Cwt::new(PMD_SECTION_SHIFT, 3, spec.pmd_cwt_lines, page_bytes),
            pud: Cwt::new(PUD_SECTION_SHIFT, 4, spec.pud_cwt_lines, page_bytes),
        });
        if !space.pmd.complete() {
            meter.table_allocated(page_bytes);
            return space.pmd.give(frame);
        }
        if !space.pud.complete() {
            meter.table_allocated(page_bytes);
            return space.pud.give(frame);
        }
        let c = class(size);
        let ways = space.sizes[c].get_or_insert_with(|| Ways::new(c as u64, usize::from(spec.ways), spec.initial_clusters, spec.seed, page_bytes));
        let (table, resize) = match ways.incomplete() {
            Some(found) => found,
            None => space.sizes.iter_mut().flatten().find_map(Ways::incomplete).expect("a table was asked for"),
        };
        let outer = resize.then(|| meter.enter(Operation::Resize));
        let left = table.slots() * CLUSTER_BYTES - table.pages.len() as u64 * page_bytes;
        meter.table_allocated(left.min(page_bytes));
        if let Some(outer) = outer {
            meter.leave(outer);
        }
        table.pages.push(frame);
    }

    /// The kernel finds the cluster (a hash and a read per way tried) and sets the page's
    /// entry, or inserts the cluster (kicking, rehashing); then updates both CWTs.
    fn mapped(&mut self, t: &Translation, meter: &mut Meter) -> Result<(), TableFull> {
        let (c, vaddr) = (class(t.size), t.vpn.addr().0);
        let growth = self.growth;
        let rng = &mut self.rng;
        let space = self.spaces.get_mut(&t.asid).expect("an address space with tables");
        let ways = space.sizes[c].as_mut().expect("the size's ways were placed");
        let new = ways.map(vaddr >> t.size.shift(), &growth, rng, meter)?;
        ways.finish_resizes(&mut self.released);
        if new {
            space.pmd.changed(vaddr, c, true);
            space.pud.changed(vaddr, c, true);
        }
        // The artifact's kernel updates both CWTs on every placement.
        meter.add().cwt_updates += 2;
        Ok(())
    }

    /// The kernel finds the cluster and clears the page's entry; a cluster left empty is
    /// removed and both CWTs updated.
    fn unmapped(&mut self, asid: Asid, vpn: Vpn, size: PageSize, meter: &mut Meter) {
        let (c, vaddr) = (class(size), vpn.addr().0);
        let space = self.space(asid);
        let removed = space.sizes[c].as_mut().is_some_and(|w| w.unmap(vaddr >> size.shift(), meter));
        if removed {
            space.pmd.changed(vaddr, c, false);
            space.pud.changed(vaddr, c, false);
            meter.add().cwt_updates += 2;
        }
    }

    /// With the cluster iterator: a lookup per cluster (found or not, as `find` counts it),
    /// the entries after the first read in place, a missing cluster's 8 pages skipped; where
    /// 2 MiB pages have ways, first a lookup of each 2 MiB range's entry, a page found there
    /// visited whole.
    fn iterate(&self, db: &mut dyn Find, asid: Asid, range: Range<u64>, visit: Visit) -> ControlFlow<()> {
        let size = db.page_size();
        if self.spec.iterator == Iteration::Find || size != PageSize::Size4K {
            return iterate_by_find(db, asid, range, visit);
        }
        let ways = self.spaces.get(&asid).and_then(|s| s.sizes[0].as_ref());
        let huge_ways = self.spaces.get(&asid).and_then(|s| s.sizes[1].as_ref());
        let huge = PageSize::Size2M;
        let mut vaddr = range.start & !(size.bytes() - 1);
        let mut huge_checked = None;
        while vaddr < range.end {
            let huge_first = vaddr & !(huge.bytes() - 1);
            if let Some(h) = huge_ways.filter(|_| huge_checked != Some(huge_first)) {
                huge_checked = Some(huge_first);
                if h.find_counting(key(vaddr, 1), db.meter()).is_some() {
                    if let Some(object) = db.peek(asid, vaddr).filter(|o| o.size == huge) {
                        visit(huge_first, object)?;
                        vaddr = huge_first.saturating_add(huge.bytes());
                        continue;
                    }
                }
            }
            let cluster_end = ((vaddr >> size.shift() | 7) + 1) << size.shift();
            let present = ways.is_some_and(|w| w.find_counting(key(vaddr, 0), db.meter()).is_some());
            if present {
                let first = vaddr;
                while vaddr < cluster_end.min(range.end) {
                    if vaddr != first {
                        db.meter().add().entries_read += 1;
                    }
                    if let Some(object) = db.peek(asid, vaddr) {
                        visit(vaddr, object)?;
                    }
                    vaddr += size.bytes();
                }
            }
            vaddr = cluster_end;
        }
        ControlFlow::Continue(())
    }

    /// The swap entry stays in its cluster, as the kernel keeps it in the PTE: the kernel
    /// finds the cluster and writes the entry; the cluster stays in its way (and in the
    /// CWTs), so that iterations over the range find the page.
    fn swapped_out(&mut self, asid: Asid, vpn: Vpn, size: PageSize, meter: &mut Meter) {
        self.find_work(asid, vpn.addr().0, size, meter);
        meter.add().entries_written += 1;
    }

    /// A hash and a read per way tried, in order, until the cluster is found: the ways of
    /// each page size that has them, smallest first, until that of `size` (the page found,
    /// or the smallest for none) finds its cluster.
    fn find_work(&self, asid: Asid, vaddr: u64, size: PageSize, meter: &mut Meter) {
        let Some(space) = self.spaces.get(&asid) else { return };
        for (c, ways) in space.sizes.iter().enumerate() {
            let Some(ways) = ways else { continue };
            if ways.find_counting(key(vaddr, c), meter).is_some() && c >= class(size) {
                return;
            }
        }
    }

    fn take_released(&mut self, out: &mut Vec<Pfn>) {
        out.append(&mut self.released);
    }

    #[inline(never)]
    fn walk<S: WalkSink>(&mut self, t: &Translation, sink: &mut S) {
        let (c, vaddr) = (class(t.size), t.vpn.addr().0);
        let masked = |shift: u32| u64::from(t.asid) << 48 | (vaddr >> shift) & ((1 << 48) - 1);
        let pud_hit = self.pud_cwc.access(masked(39));
        let pmd_hit = self.pmd_cwc.access(masked(30));
        let page_bytes = self.page_bytes;
        let space = self.spaces.get(&t.asid).expect("an address space with tables");
        let ways = space.sizes[c].as_ref().expect("a mapped page's size has ways");
        let (way, _) = ways.find(key(vaddr, c)).expect("a mapped page has its cluster");
        let mut chosen = Ecpt::choose(space, vaddr, pud_hit, pmd_hit);
        if !chosen.contains(&(c, way)) {
            // What both caches missing gives: every way.
            chosen = Ecpt::choose(space, vaddr, false, false);
        }
        if self.spec.probe == Probe::Correct {
            chosen = vec![(c, way)];
        }
        let every = space.sizes.iter().flatten().map(|w| w.ways.len()).sum::<usize>();
        self.walks += 1;
        self.ways_probed += chosen.len() as u64;
        self.every_way_walks += u64::from(chosen.len() == every);
        for (size, w) in chosen {
            let addr = space.sizes[size].as_ref().expect("chosen among the sizes with ways").address(w, key(vaddr, size), page_bytes);
            sink.read(WalkRead { level: size as u8, addr: PhysAddr(addr), step: Step::Probe });
        }
        for (hit, cwt) in [(pud_hit, &space.pud), (pmd_hit, &space.pmd)] {
            if !hit {
                for addr in cwt.line_addresses(vaddr, page_bytes) {
                    sink.read(WalkRead { level: 0, addr: PhysAddr(addr), step: Step::Fill });
                }
            }
        }
    }

    fn stats(&self) -> EcptStats {
        let sizes = (0..3)
            .filter_map(|c| {
                let all: Vec<&Ways> = self.spaces.values().filter_map(|s| s.sizes[c].as_ref()).collect();
                let ways = all.first()?.ways.len();
                let mut counts = WayCounts::default();
                for w in &all {
                    counts.inserts += w.counts.inserts;
                    counts.kicks += w.counts.kicks;
                    counts.resizes += w.counts.resizes;
                    counts.rehashed += w.counts.rehashed;
                }
                let fullest = |way: usize| all.iter().map(|w| w.occupancy()[way]).fold(0.0, f64::max);
                Some(SizeStats {
                    size: crate::units::format_bytes(PageSize::ALL[c].bytes()),
                    slots: (0..ways).map(|way| all.iter().map(|w| w.ways[way].table.slots()).sum()).collect(),
                    occupancy: (0..ways).map(fullest).collect(),
                    counts,
                })
            })
            .collect();
        let table_pages = self.spaces.values().map(|s| s.pmd.page_count() + s.pud.page_count() + s.sizes.iter().flatten().map(Ways::pages).sum::<usize>()).sum();
        EcptStats {
            table_pages,
            sizes,
            pud_cwc: self.pud_cwc.lookups(),
            pmd_cwc: self.pmd_cwc.lookups(),
            cwt_lines: self.spaces.values().map(|s| s.pmd.lines() + s.pud.lines()).sum(),
            cwt_overflows: self.spaces.values().map(|s| s.pmd.overflows + s.pud.overflows).sum(),
            walks: self.walks,
            ways_probed: self.ways_probed,
            every_way_walks: self.every_way_walks,
        }
    }
}

#[cfg(test)]
mod tests;
