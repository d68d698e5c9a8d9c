//! EMT's translation interface (seed 003): what the OS asks of a page table, whatever its
//! format, so that every OS policy (demand paging, eviction, swap, readahead) works with
//! every page-table driver.
//!
//! - A **translation object** ([`TranslationObject`]) is one page's translation and its
//!   attributes: its size, and whether it is present (at a frame, with the placement tag
//!   Mosaic's ToC reads) or swapped out.
//! - A **translation database** holds exactly one object per page of an address space and
//!   finds, updates and removes them (the basic operations). [`Translations`] holds the
//!   databases of a machine's address spaces in two parts kept in step by those operations:
//!   the store of objects ([`PageTable`]: the values entries hold, which do not depend on the
//!   format) and the driver ([`Driver`]: the format, where each entry lies, which table pages
//!   it takes and what a walk reads).
//! - The **translation service** says which database an address space uses: every address
//!   space of a machine uses its machine's driver (`os.page_table`), its own entries in the
//!   store (keyed by its ASID) and its own tables in the driver (a radix or FPT root; ECPT
//!   keeps one set of ways, as the artifact's simulator does).
//!
//! The customizable operations (iterate over a range, range emptiness, huge-page
//! eligibility, the swap entry) have defaults written over `find` ([`iterate_by_find`] and
//! the default methods of [`crate::mmu::PageTableDriver`]); a driver may override any of
//! them with its own structure. Every implementation answers the same (tests hold overrides
//! to the defaults); an override does less work, as `radix` skipping the part of a range
//! under a directory entry with no table.
//!
//! Accessed and dirty bits are kept per frame by the OS (its recency models and the swap
//! cache's copy flag), as the kernel's reverse map sees them; write protection is not
//! modelled (every page is writable).

use super::kernel_work::{KernelWorkSpec, KernelWorkStats, Meter};
use super::page_table::{Leaf, PageTable};
use crate::mmu::{Driver, Placed, TableNeed, WalkSink};
use crate::os::OsSpec;
use crate::types::{Asid, PageSize, Pfn, Translation, Vpn};
use std::ops::{ControlFlow, Range};

/// Where a translation object's page is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Presence {
    /// In memory: its first base frame, and its placement tag (the CPFN of an iceberg
    /// placement, which Mosaic's ToC reads).
    Present {
        /// First base frame of the page.
        frame: Pfn,
        /// Placement tag.
        tag: u8,
    },
    /// Swapped out: its entry holds a swap entry, and the next touch is a major fault.
    Swapped,
}

/// EMT's translation object: one page's translation and its attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TranslationObject {
    /// The page's size.
    pub size: PageSize,
    /// Where the page is.
    pub presence: Presence,
}

/// A callback of an iteration: given each object in a range and its page's first address;
/// `Break` ends the iteration.
pub type Visit<'a> = &'a mut dyn FnMut(u64, TranslationObject) -> ControlFlow<()>;

/// The basic operation the customizable ones are written over, and the meter their work
/// is counted in.
pub trait Find {
    /// The object of the page holding `vaddr` in `asid`, if it has one, counting the work
    /// of finding it.
    fn find(&mut self, asid: Asid, vaddr: u64) -> Option<TranslationObject>;
    /// The object of the page holding `vaddr` in `asid` without counting any work: for an
    /// override that counts the reads of its own format.
    fn peek(&mut self, asid: Asid, vaddr: u64) -> Option<TranslationObject>;
    /// The size of the pages found.
    fn page_size(&self) -> PageSize;
    /// Where the work of the operation is counted.
    fn meter(&mut self) -> &mut Meter;
}

/// The store found through a driver: each find costs what a find in the driver's format
/// does ([`crate::mmu::PageTableDriver::find_work`]).
struct Metered<'a> {
    store: &'a mut PageTable,
    driver: &'a Driver,
    meter: &'a mut Meter,
}

impl Find for Metered<'_> {
    fn find(&mut self, asid: Asid, vaddr: u64) -> Option<TranslationObject> {
        let object = self.store.object(asid, vaddr);
        let size = object.map_or(self.store.page_size(), |o| o.size);
        self.driver.find_work(asid, vaddr, size, self.meter);
        object
    }

    fn peek(&mut self, asid: Asid, vaddr: u64) -> Option<TranslationObject> {
        self.store.object(asid, vaddr)
    }

    fn page_size(&self) -> PageSize {
        self.store.page_size()
    }

    fn meter(&mut self) -> &mut Meter {
        self.meter
    }
}

/// The default iteration: finds every page of `range` of `asid` in turn (from the page
/// holding `range.start`), visiting those that have an object; a huge page found is visited
/// once, at its first address, and the iteration goes on after it.
pub fn iterate_by_find(db: &mut dyn Find, asid: Asid, range: Range<u64>, visit: Visit) -> ControlFlow<()> {
    let bytes = db.page_size().bytes();
    let mut vaddr = range.start & !(bytes - 1);
    while vaddr < range.end {
        match db.find(asid, vaddr) {
            Some(object) => {
                let first = vaddr & !(object.size.bytes() - 1);
                visit(first, object)?;
                vaddr = first.saturating_add(object.size.bytes());
            }
            None => vaddr = vaddr.saturating_add(bytes),
        }
    }
    ControlFlow::Continue(())
}

/// The translation databases of a machine's address spaces: the store of objects and the
/// driver of their format, in step.
#[derive(Clone, Debug)]
pub struct Translations {
    store: PageTable,
    driver: Driver,
    /// The kernel's work on them.
    meter: Meter,
}

impl Translations {
    /// Empty databases of pages of `spec.page_size` in the format of `spec.page_table`; an
    /// unmapped page's tag is `no_tag`.
    pub fn new(spec: &OsSpec, no_tag: u8) -> Translations {
        Translations { store: PageTable::new(spec.page_size, no_tag), driver: Driver::new(spec), meter: Meter::default() }
    }

    /// Find, on a TLB miss: the present page holding `vaddr`, and where the store holds it
    /// (for a ToC read after the walk).
    #[inline(always)]
    pub fn find(&mut self, asid: Asid, vaddr: u64) -> Option<(Translation, Leaf)> {
        self.store.lookup(asid, vaddr)
    }

    /// Find, as the kernel's code does: the object of the page holding `vaddr`, present or
    /// swapped out.
    pub fn object(&mut self, asid: Asid, vaddr: u64) -> Option<TranslationObject> {
        self.store.object(asid, vaddr)
    }

    /// Update to present: maps `t` with placement tag `tag` (in place of any object the page
    /// had), once the driver has every table it needs ([`Translations::need`]). Returns
    /// where the store holds it; fails when the driver finds no slot for it, or the host no
    /// memory for the store's nodes.
    pub fn map(&mut self, t: Translation, tag: u8) -> Result<Leaf, super::NoFrame> {
        let leaf = if t.size == self.store.page_size() { self.store.insert_tagged(t, tag) } else { self.store.insert_huge(t, tag) };
        let leaf = leaf.map_err(|_| super::NoFrame::HostMemory)?;
        self.driver.mapped(&t, &mut self.meter)?;
        Ok(leaf)
    }

    /// Map swapped out: `t`'s page gets an entry holding a swap entry (a base page of a
    /// huge page evicted whole, whose mapping is split), written as a mapping's is.
    pub fn map_swapped(&mut self, t: Translation) -> Result<(), super::NoFrame> {
        self.map(t, 0)?;
        self.store.swap_out(t.asid, t.vpn.addr().0);
        Ok(())
    }

    /// Update to swapped out: the present page `vpn` of `asid` is unmapped, its entry holding
    /// a swap entry. Returns its frame (in units of the page size), or `None` (changing
    /// nothing) when it was not present.
    pub fn swap_out(&mut self, asid: Asid, vpn: Vpn) -> Option<u64> {
        let frame = self.store.swap_out(asid, vpn.addr().0)?;
        self.driver.swapped_out(asid, vpn, self.store.page_size(), &mut self.meter);
        Some(frame)
    }

    /// Remove: the page holding page `vpn` of `asid` (a huge page whole), present or
    /// swapped out, has no object after. Returns the frame (in units of the table's page
    /// size; a huge page's first base frame) it was present at.
    pub fn remove(&mut self, asid: Asid, vpn: Vpn) -> Option<u64> {
        let object = self.store.object(asid, vpn.addr().0)?;
        let frame = self.store.remove(asid, vpn.addr().0);
        let first = Vpn(vpn.0 & !(object.size.base_pages() - 1));
        self.driver.unmapped(asid, first, object.size, &mut self.meter);
        frame
    }

    /// The store, found through the driver and counted.
    fn metered(&mut self) -> (&Driver, Metered<'_>) {
        (&self.driver, Metered { store: &mut self.store, driver: &self.driver, meter: &mut self.meter })
    }

    /// Visits each object in `range` of `asid`, in address order, until `visit` breaks.
    pub fn iterate(&mut self, asid: Asid, range: Range<u64>, visit: Visit) -> ControlFlow<()> {
        let (driver, mut db) = self.metered();
        driver.iterate(&mut db, asid, range, visit)
    }

    /// True when no page of `range` of `asid` has an object.
    pub fn range_is_void(&mut self, asid: Asid, range: Range<u64>) -> bool {
        let (driver, mut db) = self.metered();
        driver.range_is_void(&mut db, asid, range)
    }

    /// True when a page of `size` may map the aligned range of that size holding `vaddr`:
    /// no smaller page of it has an object.
    pub fn huge_eligible(&mut self, asid: Asid, vaddr: u64, size: PageSize) -> bool {
        let (driver, mut db) = self.metered();
        driver.huge_eligible(&mut db, asid, vaddr, size)
    }

    /// True when the page holding `vaddr` is swapped out: its entry holds a swap entry.
    pub fn swapped(&mut self, asid: Asid, vaddr: u64) -> bool {
        let (driver, mut db) = self.metered();
        driver.swapped(&mut db, asid, vaddr)
    }

    /// Counts the work of finding the entry of the page holding `vaddr` in `asid` (what
    /// the OS reads of an entry beside finding it, as a scan's accessed bit, is in it).
    pub fn read_entry(&mut self, asid: Asid, vaddr: u64) {
        self.driver.find_work(asid, vaddr, self.store.page_size(), &mut self.meter);
    }

    /// Where the kernel's work is counted, for the OS's own primitives and operations.
    pub fn meter(&mut self) -> &mut Meter {
        &mut self.meter
    }

    /// The kernel's work so far, its instructions estimated with `weights`.
    pub fn kernel_work(&self, weights: &KernelWorkSpec) -> KernelWorkStats {
        self.meter.stats(weights)
    }

    /// The next table page the driver needs placed before a page of `size` at `vpn` of
    /// `asid` can be mapped (see [`crate::mmu::PageTableDriver::need`]).
    pub fn need(&self, asid: Asid, vpn: Vpn, size: PageSize) -> Option<TableNeed> {
        self.driver.need(asid, vpn, size)
    }

    /// The OS placed `table` as [`Translations::need`] asked.
    pub fn given(&mut self, asid: Asid, vpn: Vpn, size: PageSize, table: Placed) {
        self.driver.given(asid, vpn, size, table, &mut self.meter);
    }

    /// Lets the driver free the empty tables of `range` of `asid`, unmapped, inside `gap`
    /// (see [`crate::mmu::PageTableDriver::free_tables`]).
    pub fn free_tables(&mut self, asid: Asid, range: Range<u64>, gap: Range<u64>) {
        self.driver.free_tables(asid, range, gap, &mut self.meter);
    }

    /// Moves the frames of the table pages the driver let go of into `out`.
    pub fn take_released(&mut self, out: &mut Vec<Pfn>) {
        self.driver.take_released(out);
    }

    /// The walk that finds `t`, a present page: its reads go to `sink`.
    #[inline(always)]
    pub fn walk<S: WalkSink>(&mut self, t: &Translation, sink: &mut S) {
        self.driver.walk(t, sink);
    }

    /// True when walks read nothing the machine models and change nothing (see
    /// [`crate::mmu`]).
    pub fn stateless(&self) -> bool {
        self.driver.stateless()
    }

    /// The store, for what the OS reads of it on the hot path (tags, prefetch hints).
    #[inline(always)]
    pub fn store(&self) -> &PageTable {
        &self.store
    }

    /// The store, for reads that go through its directory cache.
    #[inline(always)]
    pub fn store_mut(&mut self) -> &mut PageTable {
        &mut self.store
    }

    /// What the driver did and holds (`results.json`'s `page_table`).
    pub fn stats(&self) -> serde_json::Value {
        self.driver.stats()
    }
}

#[cfg(test)]
mod tests;
