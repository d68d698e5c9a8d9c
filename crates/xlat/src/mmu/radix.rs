//! The `radix` driver: x86-64 page tables of 4 levels (PML4, PDPT, PD, PT: 48-bit
//! addresses) or 5 (a PML5 above them: 57-bit), as EMT's radix MMU driver walks them (seed
//! 003; the research sheet's radix records, `leaves[4]`).
//!
//! Every table is a 4 KiB page of 512 8-byte entries in the machine's memory: the OS places
//! each as a pinned frame when a fault first needs it (`need`), before the data
//! page, so tables compete with data for memory as the kernel's do. A walk reads one entry
//! per level from the root down to the level whose entry maps the page (the PT for 4 KiB
//! pages, the PD for 2 MiB, the PDPT for 1 GiB): entry address = table frame × 4096 + index
//! × 8, the index being the address's 9 bits for that level. An unmap frees the tables it
//! leaves empty whose whole reach is unmapped (Linux's `free_pgtables`; the root stays, as
//! the PGD does until the process exits): each has a bit per entry that holds a page or a
//! swap entry. Addresses are taken modulo the levels' reach (2^48 or 2^57): the upper canonical half
//! shares the root with the lower, as on x86-64.
//!
//! Levels are numbered from the PT up, 0 to 3 (or 4): a walk of a 4 KiB page reads levels
//! 3, 2, 1, 0 in that order ([`super::WalkRead::level`]).

use super::{DriverSpec, PageTableDriver, Placed, TableFull, TableNeed, WalkRead, WalkSink};
use crate::os::kernel_work::Meter;
use crate::os::translation::{iterate_by_find, Find, Visit};
use crate::os::OsSpec;
use crate::types::{Asid, PageSize, Pfn, Translation, Vpn, BASE_PAGE_SHIFT};
use std::ops::{ControlFlow, Range};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// Index bits per level (512 entries of 8 bytes in a 4 KiB table).
const INDEX_BITS: u32 = 9;
/// Bytes of an entry.
const ENTRY_BYTES: u64 = 8;
/// Bytes of a table.
const TABLE_BYTES: u64 = ENTRY_BYTES << INDEX_BITS;
/// A child slot with no table.
const NONE: u32 = u32::MAX;

/// The parameters of `radix`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RadixSpec {
    /// Levels: 4 (x86-64's four-level paging, 48-bit addresses; the default) or 5 (LA57,
    /// 57-bit).
    #[serde(default = "four")]
    pub levels: u8,
}

fn four() -> u8 {
    4
}

impl Default for RadixSpec {
    fn default() -> RadixSpec {
        RadixSpec { levels: 4 }
    }
}

impl DriverSpec for RadixSpec {
    fn check(&self, _: &OsSpec, path: &str) -> crate::Result<()> {
        if !matches!(self.levels, 4 | 5) {
            return Err(crate::Error::config(format!("{path}.levels"), format!("x86-64 radix tables have 4 or 5 levels, not {}", self.levels)));
        }
        Ok(())
    }
}

/// What the radix tables hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RadixStats {
    /// Tables, of every level and address space (each a 4 KiB page).
    pub tables: usize,
}

/// One table: its frame, the entries that map a page (or hold a swap entry), and for a
/// table above the PT, the tables its entries point to.
#[derive(Clone, Debug)]
struct Table {
    frame: Pfn,
    /// Index into `Radix::children`, or [`NONE`] for a PT.
    children: u32,
    /// A bit per entry that holds a page's leaf.
    leaves: [u64; 8],
}

/// The radix tables of every address space.
#[derive(Clone, Debug)]
pub struct Radix {
    levels: u32,
    /// The root table of each address space.
    roots: FxHashMap<Asid, u32>,
    tables: Vec<Table>,
    /// The tables below each table above the PT, by entry.
    children: Vec<[u32; 1 << INDEX_BITS]>,
    /// Slots of `tables` and of `children` that freed tables left, for new ones.
    free_slots: Vec<u32>,
    free_children: Vec<u32>,
    /// Frames of freed tables, for the OS to take.
    released: Vec<Pfn>,
}

/// The level (0 for the PT) whose entries map pages of `size`.
fn leaf_level(size: PageSize) -> u32 {
    (size.shift() - BASE_PAGE_SHIFT) / INDEX_BITS
}

/// The index of `vpn` in a table of `level`.
fn index(vpn: Vpn, level: u32) -> usize {
    (vpn.0 >> (INDEX_BITS * level)) as usize & ((1 << INDEX_BITS) - 1)
}

impl Radix {
    /// The table below entry `index` of table `table`, if any.
    fn child(&self, table: u32, index: usize) -> Option<u32> {
        let children = self.tables[table as usize].children;
        let child = self.children[children as usize][index];
        (child != NONE).then_some(child)
    }

    /// The tables on the path of `vpn` in `asid` from the root down to `leaf` (the table of
    /// each level that exists, root first), and how many of the path's tables are missing.
    fn path(&self, asid: Asid, vpn: Vpn, leaf: u32) -> (Vec<u32>, usize) {
        let mut path = Vec::with_capacity(self.levels as usize);
        let Some(&root) = self.roots.get(&asid) else { return (path, (self.levels - leaf) as usize) };
        path.push(root);
        for level in (leaf + 1..self.levels).rev() {
            match self.child(*path.last().expect("the root at least"), index(vpn, level)) {
                Some(table) => path.push(table),
                None => break,
            }
        }
        let missing = (self.levels - leaf) as usize - path.len();
        (path, missing)
    }

    /// A new table of `level` in `frame`, in a slot a freed table left if any.
    fn add_table(&mut self, level: u32, frame: Pfn) -> u32 {
        let children = if level == 0 {
            NONE
        } else if let Some(slot) = self.free_children.pop() {
            slot
        } else {
            self.children.push([NONE; 1 << INDEX_BITS]);
            (self.children.len() - 1) as u32
        };
        let table = Table { frame, children, leaves: [0; 8] };
        if let Some(slot) = self.free_slots.pop() {
            self.tables[slot as usize] = table;
            return slot;
        }
        self.tables.push(table);
        (self.tables.len() - 1) as u32
    }

    /// Tables, of every level and address space.
    pub fn tables(&self) -> usize {
        self.tables.len() - self.free_slots.len()
    }

    /// Marks entry `index` of `table` as holding a leaf, or not.
    fn set_leaf(&mut self, table: u32, index: usize, leaf: bool) {
        let word = &mut self.tables[table as usize].leaves[index / 64];
        if leaf {
            *word |= 1 << (index % 64);
        } else {
            *word &= !(1 << (index % 64));
        }
    }

    /// Marks the entry of the page of `size` at `vpn` of `asid`, whose tables exist.
    fn mark(&mut self, asid: Asid, vpn: Vpn, size: PageSize, leaf: bool) {
        let level = leaf_level(size);
        let (path, missing) = self.path(asid, vpn, level);
        if missing == 0 {
            self.set_leaf(*path.last().expect("the root at least"), index(vpn, level), leaf);
        }
    }

    /// Frees the tables below `table` (of `level`, whose first address is `base`) that map
    /// addresses of `gap` only, some of `range`, and hold no entry, counting the work in
    /// `meter`. True when `table` is left holding no entry.
    fn free_below(&mut self, table: u32, level: u32, base: u64, range: &Range<u64>, gap: &Range<u64>, meter: &mut Meter) -> bool {
        if level > 0 {
            // Bytes an entry of this table maps.
            let reach = 1u64 << (BASE_PAGE_SHIFT + INDEX_BITS * level);
            let first = (range.start.max(base) - base) / reach;
            let last = ((range.end - 1).min(base + (reach << INDEX_BITS) - 1) - base) / reach;
            for i in first as usize..=last as usize {
                let Some(child) = self.child(table, i) else { continue };
                let start = base + i as u64 * reach;
                let empty = self.free_below(child, level - 1, start, range, gap, meter);
                // A directory entry mapping a huge page keeps the table deposited below it.
                let huge = self.tables[table as usize].leaves[i / 64] & (1 << (i % 64)) != 0;
                if empty && !huge && gap.start <= start && start + reach <= gap.end {
                    self.free_table(table, i, child, meter);
                }
            }
        }
        let t = &self.tables[table as usize];
        t.leaves == [0; 8] && (t.children == NONE || self.children[t.children as usize].iter().all(|&c| c == NONE))
    }

    /// Frees `child`, the table below entry `index` of `parent`: the entry read and
    /// cleared, the table's page freed.
    fn free_table(&mut self, parent: u32, index: usize, child: u32, meter: &mut Meter) {
        let children = self.tables[parent as usize].children as usize;
        self.children[children][index] = NONE;
        let freed = &self.tables[child as usize];
        self.released.push(freed.frame);
        if freed.children != NONE {
            self.free_children.push(freed.children);
        }
        self.free_slots.push(child);
        let work = meter.add();
        work.entries_read += 1;
        work.entries_written += 1;
        work.table_frees += 1;
    }
}

impl PageTableDriver for Radix {
    type Spec = RadixSpec;
    type Stats = RadixStats;

    fn new(spec: &RadixSpec, _: &OsSpec) -> Radix {
        Radix { levels: u32::from(spec.levels), roots: FxHashMap::default(), tables: Vec::new(), children: Vec::new(), free_slots: Vec::new(), free_children: Vec::new(), released: Vec::new() }
    }

    fn stateless(&self) -> bool {
        false
    }

    fn need(&self, asid: Asid, vpn: Vpn, size: PageSize) -> Option<TableNeed> {
        (self.path(asid, vpn, leaf_level(size)).1 > 0).then_some(TableNeed::Page)
    }

    /// Adds the highest table missing on the path of `vpn`: a table of 4 KiB zeroed, and
    /// the entry above that points to it written.
    fn given(&mut self, asid: Asid, vpn: Vpn, size: PageSize, table: Placed, meter: &mut Meter) {
        let Placed::Page(frame) = table else { unreachable!("radix asks for pages only") };
        meter.table_allocated(TABLE_BYTES);
        meter.add().entries_written += 1;
        let (path, missing) = self.path(asid, vpn, leaf_level(size));
        assert!(missing > 0, "the OS placed a table need asked for");
        let level = self.levels - 1 - path.len() as u32;
        let table = self.add_table(level, frame);
        match path.last() {
            None => {
                self.roots.insert(asid, table);
            }
            Some(&parent) => {
                let children = self.tables[parent as usize].children as usize;
                self.children[children][index(vpn, level + 1)] = table;
            }
        }
    }

    /// The tables are in place ([`PageTableDriver::need`]): the kernel walks to the entry
    /// and writes it, which changes no address a walk reads.
    fn mapped(&mut self, t: &Translation, meter: &mut Meter) -> Result<(), TableFull> {
        self.write_entry_work(t.asid, t.vpn.addr().0, t.size, meter);
        self.mark(t.asid, t.vpn, t.size, true);
        Ok(())
    }

    /// Tables stay until an unmap frees them ([`PageTableDriver::free_tables`]): the kernel
    /// walks to the entry and clears it, which changes no address a walk reads.
    fn unmapped(&mut self, asid: Asid, vpn: Vpn, size: PageSize, meter: &mut Meter) {
        self.write_entry_work(asid, vpn.addr().0, size, meter);
        self.mark(asid, vpn, size, false);
    }

    /// The kernel walks to the entry and writes a swap entry, which keeps its table.
    fn swapped_out(&mut self, asid: Asid, vpn: Vpn, size: PageSize, meter: &mut Meter) {
        self.write_entry_work(asid, vpn.addr().0, size, meter);
    }

    fn take_released(&mut self, out: &mut Vec<Pfn>) {
        out.append(&mut self.released);
    }

    /// Walks down the tables overlapping `range` from the root, freeing each on the way
    /// back up that is empty and maps addresses of `gap` only.
    fn free_tables(&mut self, asid: Asid, range: Range<u64>, gap: Range<u64>, meter: &mut Meter) {
        // Addresses are taken modulo the levels' reach, as walks take them.
        let reach = 1u64 << (BASE_PAGE_SHIFT + INDEX_BITS * self.levels);
        let (Some(&root), false) = (self.roots.get(&asid), range.is_empty() || range.end > reach) else { return };
        self.free_below(root, self.levels - 1, 0, &range, &gap, meter);
    }

    /// An entry read per table on the path, down to the first missing one.
    fn find_work(&self, asid: Asid, vaddr: u64, size: PageSize, meter: &mut Meter) {
        meter.add().entries_read += self.path(asid, Vpn(vaddr >> BASE_PAGE_SHIFT), leaf_level(size)).0.len() as u64;
    }

    /// Out of line: a machine's loops, which also serve drivers that read nothing, stay
    /// lean.
    #[inline(never)]
    fn walk<S: WalkSink>(&mut self, t: &Translation, sink: &mut S) {
        let leaf = leaf_level(t.size);
        let mut table = *self.roots.get(&t.asid).expect("a mapped page's address space has a root");
        for level in (leaf..self.levels).rev() {
            let entry = (self.tables[table as usize].frame.0 << BASE_PAGE_SHIFT) | (index(t.vpn, level) as u64 * ENTRY_BYTES);
            sink.read(WalkRead::chain(level as u8, entry));
            if level > leaf {
                table = self.child(table, index(t.vpn, level)).expect("a mapped page has every table of its path");
            }
        }
    }

    fn stats(&self) -> RadixStats {
        RadixStats { tables: self.tables() }
    }

    /// Skips each part of the range under one table of the pages' level that does not
    /// exist (a directory entry with no table below): nothing there has an object, since a
    /// page's tables are placed before it is mapped and freed only when empty, unless the
    /// entry maps a 2 MiB page, found once. Finds the pages of the others.
    fn iterate(&self, db: &mut dyn Find, asid: Asid, range: Range<u64>, visit: Visit) -> ControlFlow<()> {
        let size = db.page_size();
        let leaf = leaf_level(size);
        let span = size.bytes() << INDEX_BITS;
        let mut start = range.start;
        while start < range.end {
            let end = (start & !(span - 1)).saturating_add(span).min(range.end);
            let (path, missing) = self.path(asid, Vpn(start >> BASE_PAGE_SHIFT), leaf);
            db.meter().add().entries_read += path.len() as u64;
            // Where only the PT is missing, the PD entry just read may map a 2 MiB page.
            let huge = leaf == 0 && missing == 1 && db.peek(asid, start).is_some_and(|o| o.size == PageSize::Size2M);
            if missing == 0 || huge {
                iterate_by_find(db, asid, start..end, visit)?;
            }
            start = end;
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// A naive model of x86-64 radix tables: a map from (ASID, level, the address bits above
    /// the level's index) to the table's frame, filled root first, and the addresses of a
    /// walk computed from the architecture's bit fields: bits 47..39 index the PML4 (4
    /// levels), 38..30 the PDPT, 29..21 the PD, 20..12 the PT.
    struct NaiveRadix {
        levels: u32,
        tables: HashMap<(Asid, u32, u64), u64>,
        next_frame: u64,
    }

    impl NaiveRadix {
        fn key(&self, asid: Asid, vaddr: u64, level: u32) -> (Asid, u32, u64) {
            let reach = 12 + 9 * self.levels;
            let bits_above = 12 + 9 * (level + 1);
            (asid, level, (vaddr & ((1u64 << reach) - 1)) >> bits_above)
        }

        /// Maps `vaddr`'s page of `size`: the tables it lacks, with frames 1000, 1001, ...
        fn map(&mut self, asid: Asid, vaddr: u64, size: PageSize) -> Vec<Pfn> {
            let leaf = (size.shift() - 12) / 9;
            let mut added = Vec::new();
            for level in (leaf..self.levels).rev() {
                let key = self.key(asid, vaddr, level);
                if let std::collections::hash_map::Entry::Vacant(e) = self.tables.entry(key) {
                    e.insert(self.next_frame);
                    added.push(Pfn(self.next_frame));
                    self.next_frame += 1;
                }
            }
            added
        }

        fn walk(&self, asid: Asid, vaddr: u64, size: PageSize) -> Vec<WalkRead> {
            let leaf = (size.shift() - 12) / 9;
            (leaf..self.levels)
                .rev()
                .map(|level| {
                    let frame = self.tables[&self.key(asid, vaddr, level)];
                    let index = (vaddr >> (12 + 9 * level)) & 511;
                    WalkRead::chain(level as u8, frame * 4096 + index * 8)
                })
                .collect()
        }
    }

    fn page(asid: Asid, vaddr: u64, size: PageSize) -> Translation {
        let vpn = Vpn((vaddr >> size.shift()) << (size.shift() - 12));
        Translation { asid, vpn, pfn: Pfn(0), size }
    }

    proptest! {
        /// Tables added and entry addresses read agree with the naive model for any mix of
        /// address spaces, page sizes, sparse and dense addresses, lower and upper halves.
        #[test]
        fn walks_read_the_entries_of_the_naive_tables(
            levels in 4u8..=5,
            pages in proptest::collection::vec((0u16..3, prop_oneof![0u64..1 << 24, any::<u64>()], 0usize..3), 1..200),
        ) {
            let os = OsSpec::simple(1 << 30, crate::os::PlacementSpec::Sequential);
            let mut radix = Radix::new(&RadixSpec { levels }, &os);
            let mut naive = NaiveRadix { levels: u32::from(levels), tables: HashMap::new(), next_frame: 1000 };
            let mut mapped = Vec::new();
            for (asid, addr, size) in pages {
                let size = PageSize::ALL[size];
                let vaddr = addr << 12;
                let t = page(asid, vaddr, size);
                let added = naive.map(asid, vaddr, size);
                for &frame in &added {
                    prop_assert_eq!(radix.need(asid, t.vpn, size), Some(TableNeed::Page));
                    radix.given(asid, t.vpn, size, Placed::Page(frame), &mut Meter::default());
                }
                prop_assert_eq!(radix.need(asid, t.vpn, size), None);
                radix.mapped(&t, &mut Meter::default()).unwrap();
                mapped.push((t, vaddr));
            }
            for (t, vaddr) in mapped {
                let mut reads = Vec::new();
                radix.walk(&t, &mut reads);
                prop_assert_eq!(reads, naive.walk(t.asid, vaddr, t.size));
            }
            prop_assert_eq!(radix.tables(), naive.tables.len());
        }
    }

    #[test]
    fn a_first_page_needs_a_table_per_level_and_its_neighbour_none() {
        let os = OsSpec::simple(1 << 30, crate::os::PlacementSpec::Sequential);
        let mut radix = Radix::new(&RadixSpec::default(), &os);
        let t = page(0, 0x7f00_0000_1000, PageSize::Size4K);
        for frame in 10..14 {
            assert_eq!(radix.need(0, t.vpn, t.size), Some(TableNeed::Page));
            radix.given(0, t.vpn, t.size, Placed::Page(Pfn(frame)), &mut Meter::default());
        }
        radix.mapped(&t, &mut Meter::default()).unwrap();
        let next = page(0, 0x7f00_0000_2000, PageSize::Size4K);
        assert_eq!(radix.need(0, next.vpn, next.size), None);
        let mut reads = Vec::new();
        radix.walk(&next, &mut reads);
        // PML4 index 254 (bits 47..39 of 0x7f00_0000_2000), PDPT 0, PD 0, PT 2.
        let expect = [(3, 10 * 4096 + 254 * 8), (2, 11 * 4096), (1, 12 * 4096), (0, 13 * 4096 + 2 * 8)];
        assert_eq!(reads, expect.map(|(level, addr)| WalkRead::chain(level, addr)));
        let huge = page(1, 0x4000_0000, PageSize::Size2M);
        assert_eq!(radix.path(1, huge.vpn, leaf_level(huge.size)).1, 3, "a 2 MiB page needs no PT");
    }
}
