//! The elastic cuckoo hash table of one page size in one address space: `d` ways, each a
//! table of 64-byte clusters (8 PTEs of 8 consecutive pages), an entry in exactly one of its
//! `d` candidate slots (one per way), moved between ways by cuckoo kicks, and each way
//! resized on its own by gradual rehashing (the research sheet's section 2).
//!
//! While a way is resized it has two tables, the old and the new (`factor` times larger),
//! and a rehash pointer: an entry whose old slot `h = H(key, old size, way)` is below the
//! pointer lives in the new table at `H(key, new size, way)`, any other in the old table at
//! `h`. Each insertion moves the next `step` old slots of every way being resized (the
//! kernel's worker moves 16 per lock hold; here the work is tied to insertions, so that runs
//! are deterministic), and an entry whose new slot is taken is re-inserted by kicking.

use super::hash_slot;
use crate::mmu::TableFull;
use crate::os::kernel_work::{Meter, Operation};
use crate::types::Pfn;
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// Bytes of a cluster (a slot).
pub const CLUSTER_BYTES: u64 = 64;

/// A cluster: the key of 8 consecutive pages (their page number >> 3) and which of them are
/// mapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cluster {
    /// Page number of the first page >> 3.
    pub key: u64,
    /// Bit `i`: page `key * 8 + i` is mapped.
    pub mask: u8,
}

/// One table of a way: its slots and the frames of its pages.
#[derive(Clone, Debug)]
pub struct Table {
    slots: Vec<Option<Cluster>>,
    /// Frames of the table's pages, in order (complete once it holds `pages_needed`).
    pub pages: Vec<Pfn>,
    /// Pages the table takes.
    pub pages_needed: usize,
}

impl Table {
    /// A table of `clusters` slots whose pages, of `page_bytes` each, are to be given.
    pub fn new(clusters: u64, page_bytes: u64) -> Table {
        let pages_needed = (clusters * CLUSTER_BYTES).div_ceil(page_bytes) as usize;
        Table { slots: vec![None; clusters as usize], pages: Vec::with_capacity(pages_needed), pages_needed }
    }

    /// Slots.
    pub fn slots(&self) -> u64 {
        self.slots.len() as u64
    }

    /// True when every page was given.
    pub fn complete(&self) -> bool {
        self.pages.len() == self.pages_needed
    }

    /// Physical address of slot `slot`, in pages of `page_bytes`.
    pub fn address(&self, slot: u64, page_bytes: u64) -> u64 {
        let offset = slot * CLUSTER_BYTES;
        (self.pages[(offset / page_bytes) as usize].0 << crate::types::BASE_PAGE_SHIFT) + offset % page_bytes
    }
}

/// One way: its table, and while it is resized, the new table and the rehash pointer.
#[derive(Clone, Debug)]
pub struct Way {
    /// The table (the old one while resizing).
    pub table: Table,
    /// The new table while resizing (complete) or waiting for its pages (incomplete).
    pub next: Option<Table>,
    /// Old slots below it were moved to `next`.
    pointer: u64,
    /// Clusters in the way (both tables).
    pub used: u64,
}

/// Where a key is or would go in a way: the table (`true` for the new one) and slot.
type Loc = (bool, u64);

/// What the ways of a page size did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct WayCounts {
    /// Clusters inserted (new keys).
    pub inserts: u64,
    /// Cuckoo kicks: entries moved out of their slot to make room.
    pub kicks: u64,
    /// Resizes completed.
    pub resizes: u64,
    /// Entries moved by rehashing.
    pub rehashed: u64,
}

/// The ways of one page size (`size_class` in the hash).
#[derive(Clone, Debug)]
pub struct Ways {
    /// Page-size class in the hash (0 for 4 KiB).
    size_class: u64,
    /// Key of the hash.
    seed: u64,
    /// The ways.
    pub ways: Vec<Way>,
    /// What they did.
    pub counts: WayCounts,
}

/// The parameters insertion and resizing follow.
#[derive(Clone, Copy, Debug)]
pub struct Growth {
    /// Most kicks of one insertion.
    pub max_kicks: u32,
    /// Occupancy of a way that starts its resize.
    pub threshold: f64,
    /// Size of the new table over the old.
    pub factor: u64,
    /// Old slots moved per insertion.
    pub step: u64,
    /// Bytes of a table page.
    pub page_bytes: u64,
}

impl Ways {
    /// `ways` ways of `clusters` slots each for page-size class `size_class`, their pages
    /// to be given.
    pub fn new(size_class: u64, ways: usize, clusters: u64, seed: u64, page_bytes: u64) -> Ways {
        let way = || Way { table: Table::new(clusters, page_bytes), next: None, pointer: 0, used: 0 };
        Ways { size_class, seed, ways: (0..ways).map(|_| way()).collect(), counts: WayCounts::default() }
    }

    /// The table waiting for pages, if any, and whether it is a resize's: a first table,
    /// then new tables of resizes.
    pub fn incomplete(&mut self) -> Option<(&mut Table, bool)> {
        self.ways.iter_mut().find_map(|w| if !w.table.complete() { Some((&mut w.table, false)) } else { w.next.as_mut().filter(|t| !t.complete()).map(|t| (t, true)) })
    }

    /// True when a table waits for pages.
    pub fn has_incomplete(&self) -> bool {
        self.ways.iter().any(|w| !w.table.complete() || w.next.as_ref().is_some_and(|t| !t.complete()))
    }

    /// Where `key` is or would go in way `w`.
    fn loc(&self, w: usize, key: u64) -> Loc {
        let way = &self.ways[w];
        let old = hash_slot(self.seed, key, self.size_class, w, way.table.slots());
        match &way.next {
            Some(next) if next.complete() && old < way.pointer => (true, hash_slot(self.seed, key, self.size_class, w, next.slots())),
            _ => (false, old),
        }
    }

    /// The table of way `w` a location is in: the new one (`new`) or the old.
    fn table(&self, w: usize, new: bool) -> &Table {
        let way = &self.ways[w];
        if new {
            way.next.as_ref().expect("a new table while resizing")
        } else {
            &way.table
        }
    }

    fn slot(&mut self, w: usize, (new, slot): Loc) -> &mut Option<Cluster> {
        let way = &mut self.ways[w];
        let table = if new { way.next.as_mut().expect("a new table while resizing") } else { &mut way.table };
        &mut table.slots[slot as usize]
    }

    /// The way holding `key` and its slot there, if any.
    pub fn find(&self, key: u64) -> Option<(usize, Loc)> {
        (0..self.ways.len()).map(|w| (w, self.loc(w, key))).find(|&(w, (new, slot))| self.table(w, new).slots[slot as usize].is_some_and(|c| c.key == key))
    }

    /// [`Ways::find`] as the kernel does it, counting in `meter` a hash and an entry read per
    /// way tried.
    pub fn find_counting(&self, key: u64, meter: &mut Meter) -> Option<(usize, Loc)> {
        let found = self.find(key);
        let tried = found.map_or(self.ways.len(), |(w, _)| w + 1) as u64;
        let work = meter.add();
        work.hashes += tried;
        work.entries_read += tried;
        found
    }

    /// Physical address of `key`'s candidate slot in way `w`, in pages of `page_bytes`.
    pub fn address(&self, w: usize, key: u64, page_bytes: u64) -> u64 {
        let (new, slot) = self.loc(w, key);
        self.table(w, new).address(slot, page_bytes)
    }

    /// Sets page `page`'s bit in its cluster, inserting the cluster if it is new; then
    /// rehashes. Returns whether the cluster is new. Counts the kernel's work in `meter`.
    pub fn map(&mut self, page: u64, growth: &Growth, rng: &mut Xoshiro256PlusPlus, meter: &mut Meter) -> Result<bool, TableFull> {
        let (key, bit) = (page >> 3, 1u8 << (page & 7));
        if let Some((w, loc)) = self.find_counting(key, meter) {
            self.slot(w, loc).as_mut().expect("found").mask |= bit;
            meter.add().entries_written += 1;
            return Ok(false);
        }
        self.counts.inserts += 1;
        self.insert(Cluster { key, mask: bit }, growth.max_kicks, rng, meter)?;
        self.rehash(growth, rng, meter)?;
        self.start_resizes(growth, meter);
        Ok(true)
    }

    /// Clears page `page`'s bit; removes its cluster when no page of it is left. Returns
    /// whether the cluster was removed.
    pub fn unmap(&mut self, page: u64, meter: &mut Meter) -> bool {
        let (key, bit) = (page >> 3, 1u8 << (page & 7));
        let Some((w, loc)) = self.find_counting(key, meter) else { return false };
        meter.add().entries_written += 1;
        let slot = self.slot(w, loc);
        let cluster = slot.as_mut().expect("found");
        cluster.mask &= !bit;
        if cluster.mask != 0 {
            return false;
        }
        *slot = None;
        self.ways[w].used -= 1;
        true
    }

    /// Puts `entry`, a key in no way, into a random empty candidate slot, else kicks: swaps
    /// it with the occupant of a random way's slot (a way other than the last), which then
    /// looks for an empty slot of its own, up to `max_kicks` times.
    /// Counts in `meter` a hash and a read per candidate slot looked at, a write per entry
    /// placed and a kick per entry moved out.
    fn insert(&mut self, mut entry: Cluster, max_kicks: u32, rng: &mut Xoshiro256PlusPlus, meter: &mut Meter) -> Result<(), TableFull> {
        let n = self.ways.len();
        let mut last = None;
        for _ in 0..=max_kicks {
            let candidates = (0..n).filter(|&w| Some(w) != last).count() as u64;
            let work = meter.add();
            work.hashes += candidates;
            work.entries_read += candidates;
            work.entries_written += 1;
            let empty: Vec<usize> = (0..n).filter(|&w| Some(w) != last && self.slot(w, self.loc(w, entry.key)).is_none()).collect();
            if !empty.is_empty() {
                let w = empty[rng.random_range(0..empty.len())];
                let loc = self.loc(w, entry.key);
                *self.slot(w, loc) = Some(entry);
                self.ways[w].used += 1;
                return Ok(());
            }
            meter.add().kicks += 1;
            let choices: Vec<usize> = (0..n).filter(|&w| Some(w) != last || n == 1).collect();
            let w = choices[rng.random_range(0..choices.len())];
            let loc = self.loc(w, entry.key);
            entry = self.slot(w, loc).replace(entry).expect("no empty slot was found");
            self.counts.kicks += 1;
            last = Some(w);
        }
        Err(TableFull)
    }

    /// Moves the next `step` old slots of every way being resized into its new table: to
    /// its slot there, or when that is taken, anywhere by kicking.
    /// Counts the work in `meter` as a call of [`Operation::Rehash`] when some way is being
    /// resized: a read per old slot looked at; per entry moved, a hash, a read of its new
    /// slot and a write (or an insertion's work).
    fn rehash(&mut self, growth: &Growth, rng: &mut Xoshiro256PlusPlus, meter: &mut Meter) -> Result<(), TableFull> {
        if !self.ways.iter().any(|w| w.next.as_ref().is_some_and(Table::complete)) {
            return Ok(());
        }
        let outer = meter.enter(Operation::Rehash);
        let moved = self.rehash_ways(growth, rng, meter);
        meter.leave(outer);
        moved
    }

    /// [`Ways::rehash`] of every way being resized.
    fn rehash_ways(&mut self, growth: &Growth, rng: &mut Xoshiro256PlusPlus, meter: &mut Meter) -> Result<(), TableFull> {
        for w in 0..self.ways.len() {
            if !self.ways[w].next.as_ref().is_some_and(Table::complete) {
                continue;
            }
            for _ in 0..growth.step {
                let way = &mut self.ways[w];
                if way.pointer == way.table.slots() {
                    break;
                }
                let moved = way.table.slots[way.pointer as usize].take();
                way.pointer += 1;
                meter.add().entries_read += 1;
                if let Some(entry) = moved {
                    way.used -= 1;
                    self.counts.rehashed += 1;
                    let loc = self.loc(w, entry.key);
                    let work = meter.add();
                    work.hashes += 1;
                    work.entries_read += 1;
                    if self.slot(w, loc).is_none() {
                        *self.slot(w, loc) = Some(entry);
                        self.ways[w].used += 1;
                        meter.add().entries_written += 1;
                    } else {
                        self.insert(entry, growth.max_kicks, rng, meter)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Ends the resizes whose old tables were all moved: the new table takes the old one's
    /// place, whose pages go into `released`.
    pub fn finish_resizes(&mut self, released: &mut Vec<Pfn>) {
        for way in &mut self.ways {
            if way.next.as_ref().is_some_and(Table::complete) && way.pointer == way.table.slots() {
                let old = std::mem::replace(&mut way.table, way.next.take().expect("checked"));
                released.extend(old.pages);
                way.pointer = 0;
                self.counts.resizes += 1;
            }
        }
    }

    /// Starts the resize of every way whose occupancy reached the threshold: a new table
    /// `factor` times larger, whose pages the driver then asks for.
    /// Each is a call of [`Operation::Resize`] in `meter` (its tables' allocation is counted
    /// as they are given).
    fn start_resizes(&mut self, growth: &Growth, meter: &mut Meter) {
        for way in &mut self.ways {
            if way.next.is_none() && way.used as f64 >= growth.threshold * way.table.slots() as f64 {
                let outer = meter.enter(Operation::Resize);
                meter.leave(outer);
                way.next = Some(Table::new(way.table.slots() * growth.factor, growth.page_bytes));
            }
        }
    }

    /// Every cluster, with its way.
    #[cfg(test)]
    pub fn clusters(&self) -> impl Iterator<Item = (usize, Cluster)> + '_ {
        self.ways.iter().enumerate().flat_map(|(w, way)| way.table.slots.iter().chain(way.next.iter().flat_map(|t| t.slots.iter())).flatten().map(move |c| (w, *c)))
    }

    /// Occupancy of each way: clusters over the slots of its table (the old one while
    /// resizing).
    pub fn occupancy(&self) -> Vec<f64> {
        self.ways.iter().map(|w| w.used as f64 / w.table.slots() as f64).collect()
    }

    /// Pages of every table, complete or not.
    pub fn pages(&self) -> usize {
        self.ways.iter().map(|w| w.table.pages.len() + w.next.as_ref().map_or(0, |t| t.pages.len())).sum()
    }
}
