//! Page-table drivers: the format of the page table a machine's MMU walks, and what each walk
//! reads (EMT's MMU drivers, seed 003).
//!
//! The OS model reads and changes mappings through its translation databases
//! ([`crate::os::Translations`], EMT's translation API): a store of every mapping
//! ([`crate::os::PageTable`]) and the machine's driver, told of each page mapped and
//! unmapped. The driver keeps the page table in its format, answers each walk
//! ([`crate::os::Os::walk`]) with the physical addresses the walk reads, in order, written
//! into a [`WalkSink`] the caller gives, and may override the customizable operations
//! ([`PageTableDriver::iterate`] and those after it) with its own structure. A driver whose walks
//! read nothing and change nothing is *stateless*: the walk of a page is then the same at any
//! moment, which lets a machine make or count walks out of order (the express path, the
//! replays on a second core). Other drivers keep the machine on its general path.
//!
//! Adding a driver is one file in this folder implementing [`PageTableDriver`] (with its
//! parameters, a [`DriverSpec`]) and one line in the `page_table_drivers!` list below, which
//! generates the configuration's [`PageTableSpec`] (`os.page_table`) and the dispatch
//! ([`Driver`]).

pub mod pwc;
pub mod walker;

use crate::config::named::named_models;
use crate::os::kernel_work::Meter;
use crate::os::translation::{iterate_by_find, Find, Presence, Visit};
use crate::os::OsSpec;
use crate::types::{Asid, PageSize, Pfn, PhysAddr, Translation, Vpn};
use std::ops::{ControlFlow, Range};
use serde::Serialize;

/// How a read of a walk costs time ([`WalkRead::step`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// A step of a chain: the read's address came from the read before, so the walk waits
    /// for each in turn (a radix or FPT level).
    Chain,
    /// One of the walk's reads issued together: the walk waits for the slowest (ECPT's
    /// parallel probes of its ways).
    Probe,
    /// A read that fills the caches while the walk goes on, which the walk does not wait for
    /// (ECPT's fetches of cuckoo-walk-table lines after a walk-cache miss).
    Fill,
}

/// One read of a walk: the physical address of a page-table entry, the level of the table
/// it is in (0 for the leaf; a driver numbers the levels above as its format does), and how
/// the walk waits for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalkRead {
    /// Level of the table read, 0 being the leaf.
    pub level: u8,
    /// Physical address of the entry read.
    pub addr: PhysAddr,
    /// How the walk waits for it.
    pub step: Step,
}

impl WalkRead {
    /// A step of a chain at `level` reading `addr`.
    pub fn chain(level: u8, addr: u64) -> WalkRead {
        WalkRead { level, addr: PhysAddr(addr), step: Step::Chain }
    }
}

/// Where a walk writes what it reads, in order.
pub trait WalkSink {
    /// The walk read `read`.
    fn read(&mut self, read: WalkRead);
}

/// A sink that keeps nothing: the walks of a machine that models no caches.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoReads;

impl WalkSink for NoReads {
    #[inline(always)]
    fn read(&mut self, _: WalkRead) {}
}

/// Keeps every read, in order.
impl WalkSink for Vec<WalkRead> {
    fn read(&mut self, read: WalkRead) {
        self.push(read);
    }
}

/// A page of page table a driver needs placed in the machine's memory before it can map a
/// page ([`PageTableDriver::need`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableNeed {
    /// A page, in a frame the machine's placement policy chooses (evicting as a fault does).
    Page,
    /// A block of this many contiguous base pages aligned to their count (a buddy allocation
    /// of that order), taken from free memory without eviction: when none is free the OS
    /// gives a page instead ([`Placed::Page`]), and the driver falls back.
    Block(u64),
}

/// A page of page table the OS placed for a driver, pinned in the machine's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placed {
    /// A page at this frame.
    Page(Pfn),
    /// A block (as asked for) from this frame.
    Block(Pfn),
}

/// The page table filled every slot a page could take: ECPT's cuckoo insertion gave up
/// after its most kicks. The run ends with this error, as the kernel's fault would fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableFull;

/// The parameters of a page-table driver: the table `os.page_table` is written as, with
/// the driver's defaults for the fields left out.
pub trait DriverSpec: Default {
    /// Checks the parameters for the OS `os`; errors name the field under `path` (the path
    /// of `os.page_table`).
    fn check(&self, os: &OsSpec, path: &str) -> crate::Result<()>;
}

/// A page-table format and its walk.
///
/// Before it maps a page the OS asks the driver what it must place first ([`Self::need`])
/// and hands it each page so placed ([`Self::given`]), one at a time, until the driver needs
/// nothing more: placing a page may evict others, which the driver hears of
/// ([`Self::unmapped`]) between two pages. Then it maps the page ([`Self::mapped`]), and
/// frees the pages the driver let go of ([`Self::take_released`]).
pub trait PageTableDriver {
    /// The driver's parameters.
    type Spec: DriverSpec;
    /// What the driver reports at the end of a run.
    type Stats: Serialize;
    /// The driver of a machine whose OS is `os`, with nothing mapped.
    fn new(spec: &Self::Spec, os: &OsSpec) -> Self;
    /// True when walks read nothing the machine models and change nothing in the driver (see
    /// the module documentation).
    fn stateless(&self) -> bool;
    /// The next page of table the driver needs placed before a page of `size` at `vpn` of
    /// `asid` can be mapped, if any. The default: none (a driver whose tables are not in
    /// the machine's memory).
    fn need(&self, _asid: Asid, _vpn: Vpn, _size: PageSize) -> Option<TableNeed> {
        None
    }
    /// The OS placed `table`, as [`Self::need`] asked for the page of `size` at `vpn` of
    /// `asid`: the driver counts its allocation and linking in `meter`.
    fn given(&mut self, _asid: Asid, _vpn: Vpn, _size: PageSize, _table: Placed, _meter: &mut Meter) {
        unreachable!("a driver that needs no tables is given none")
    }
    /// The OS mapped `t`: a page mapped for the first time, again after a swap-out, or moved
    /// to another frame. The driver counts the kernel's work writing it in `meter`.
    fn mapped(&mut self, t: &Translation, meter: &mut Meter) -> Result<(), TableFull>;
    /// The OS unmapped the page of `size` at `vpn` in `asid`, counting the work in `meter`.
    fn unmapped(&mut self, asid: Asid, vpn: Vpn, size: PageSize, meter: &mut Meter);
    /// The OS swapped out the page of `size` at `vpn` in `asid`: its entry now holds a swap
    /// entry, which a format that keeps entries in place keeps there. The default: as
    /// [`Self::unmapped`] (a format whose structure an entry's value does not change).
    fn swapped_out(&mut self, asid: Asid, vpn: Vpn, size: PageSize, meter: &mut Meter) {
        self.unmapped(asid, vpn, size, meter);
    }
    /// Counts in `meter` the entries the kernel reads (and hashes it computes) to find the
    /// entry of the page of `size` holding `vaddr` in `asid`, in software: the work of
    /// [`Find::find`] in this format.
    fn find_work(&self, asid: Asid, vaddr: u64, size: PageSize, meter: &mut Meter);
    /// Counts in `meter` the kernel's walk to the entry of the page of `size` holding
    /// `vaddr` in `asid` and its write: how a tree format maps, unmaps or swaps out a page.
    fn write_entry_work(&self, asid: Asid, vaddr: u64, size: PageSize, meter: &mut Meter) {
        self.find_work(asid, vaddr, size, meter);
        meter.add().entries_written += 1;
    }
    /// Moves the frames of the table pages the driver no longer uses into `out`, for the OS
    /// to free. The default: none.
    fn take_released(&mut self, _out: &mut Vec<Pfn>) {}
    /// The OS unmapped `range` of `asid`, which lies in `gap`, the unmapped space around it
    /// (from the end of the mapping below to the start of the one above: the floor and
    /// ceiling of Linux's `free_pgtables`). The driver lets go of each table below the root
    /// that maps addresses of `gap` only, some of `range`, and holds no entry (for
    /// [`Self::take_released`]), counting the work in `meter`. The default: none (a format
    /// whose tables are not per range, as ECPT's ways).
    fn free_tables(&mut self, _asid: Asid, _range: Range<u64>, _gap: Range<u64>, _meter: &mut Meter) {}
    /// The walk that finds `t`, a mapping the OS holds: writes the reads it makes into `sink`.
    fn walk<S: WalkSink>(&mut self, t: &Translation, sink: &mut S);
    /// What the driver did and holds.
    fn stats(&self) -> Self::Stats;

    /// Visits each object of `db` in `range` of `asid`, in address order, until `visit`
    /// breaks (EMT's customizable iterator). The default finds every page.
    fn iterate(&self, db: &mut dyn Find, asid: Asid, range: Range<u64>, visit: Visit) -> ControlFlow<()> {
        iterate_by_find(db, asid, range, visit)
    }

    /// True when no page of `range` of `asid` has an object in `db` (EMT's address-range
    /// check). The default iterates until the first object.
    fn range_is_void(&self, db: &mut dyn Find, asid: Asid, range: Range<u64>) -> bool {
        self.iterate(db, asid, range, &mut |_, _| ControlFlow::Break(())).is_continue()
    }

    /// True when a page of `size` may map the aligned range of that size holding `vaddr`:
    /// no smaller page of it has an object in `db` (EMT's huge-page eligibility). The
    /// default checks that the range is void.
    fn huge_eligible(&self, db: &mut dyn Find, asid: Asid, vaddr: u64, size: PageSize) -> bool {
        let start = vaddr & !(size.bytes() - 1);
        self.range_is_void(db, asid, start..start.saturating_add(size.bytes()))
    }

    /// True when the page holding `vaddr` is swapped out in `db` (EMT's swap-entry check).
    /// The default finds it.
    fn swapped(&self, db: &mut dyn Find, asid: Asid, vaddr: u64) -> bool {
        db.find(asid, vaddr).is_some_and(|object| object.presence == Presence::Swapped)
    }
}

/// Declares the page-table drivers: each line gives a driver's variant, its name in
/// configurations, and its type and its parameters' type in its module (a file of this
/// folder, declared here). Generates [`PageTableSpec`] (read from files as a name or a table
/// with `kind` and the parameters) and [`Driver`].
macro_rules! page_table_drivers {
    ($($(#[$doc:meta])* $variant:ident = $name:literal => $module:ident::$driver:ident($spec:ident),)+) => {
        $(pub mod $module;)+

        named_models! {
            /// The page-table driver and its parameters, validated (`os.page_table`).
            PageTableSpec,
            /// A page-table driver as a table: its `kind` and the parameters to change.
            PageTableTable,
            "a page-table driver",
            "PageTable",
            [$($(#[$doc])* $variant = $name => $module::$spec,)+]
        }

        impl PageTableSpec {
            /// See [`DriverSpec::check`].
            pub fn check(&self, os: &OsSpec, path: &str) -> crate::Result<()> {
                match self {
                    $(PageTableSpec::$variant(spec) => spec.check(os, path),)+
                }
            }
        }

        /// A machine's page-table driver, one of those registered.
        #[derive(Clone, Debug)]
        pub enum Driver {
            $(
                #[doc = concat!("The `", $name, "` driver.")]
                $variant($module::$driver),
            )+
        }

        impl Driver {
            /// The driver `os.page_table` names, with nothing mapped.
            pub fn new(os: &OsSpec) -> Driver {
                match &os.page_table {
                    $(PageTableSpec::$variant(spec) => Driver::$variant(<$module::$driver as PageTableDriver>::new(spec, os)),)+
                }
            }

            /// See [`PageTableDriver::stateless`].
            #[inline(always)]
            pub fn stateless(&self) -> bool {
                match self {
                    $(Driver::$variant(d) => d.stateless(),)+
                }
            }

            /// See [`PageTableDriver::need`].
            pub fn need(&self, asid: Asid, vpn: Vpn, size: PageSize) -> Option<TableNeed> {
                match self {
                    $(Driver::$variant(d) => d.need(asid, vpn, size),)+
                }
            }

            /// See [`PageTableDriver::given`].
            pub fn given(&mut self, asid: Asid, vpn: Vpn, size: PageSize, table: Placed, meter: &mut Meter) {
                match self {
                    $(Driver::$variant(d) => d.given(asid, vpn, size, table, meter),)+
                }
            }

            /// See [`PageTableDriver::mapped`].
            #[inline(always)]
            pub fn mapped(&mut self, t: &Translation, meter: &mut Meter) -> Result<(), TableFull> {
                match self {
                    $(Driver::$variant(d) => d.mapped(t, meter),)+
                }
            }

            /// See [`PageTableDriver::unmapped`].
            #[inline(always)]
            pub fn unmapped(&mut self, asid: Asid, vpn: Vpn, size: PageSize, meter: &mut Meter) {
                match self {
                    $(Driver::$variant(d) => d.unmapped(asid, vpn, size, meter),)+
                }
            }

            /// See [`PageTableDriver::swapped_out`].
            pub fn swapped_out(&mut self, asid: Asid, vpn: Vpn, size: PageSize, meter: &mut Meter) {
                match self {
                    $(Driver::$variant(d) => d.swapped_out(asid, vpn, size, meter),)+
                }
            }

            /// See [`PageTableDriver::find_work`].
            pub fn find_work(&self, asid: Asid, vaddr: u64, size: PageSize, meter: &mut Meter) {
                match self {
                    $(Driver::$variant(d) => d.find_work(asid, vaddr, size, meter),)+
                }
            }

            /// See [`PageTableDriver::take_released`].
            pub fn take_released(&mut self, out: &mut Vec<Pfn>) {
                match self {
                    $(Driver::$variant(d) => d.take_released(out),)+
                }
            }

            /// See [`PageTableDriver::free_tables`].
            pub fn free_tables(&mut self, asid: Asid, range: Range<u64>, gap: Range<u64>, meter: &mut Meter) {
                match self {
                    $(Driver::$variant(d) => d.free_tables(asid, range, gap, meter),)+
                }
            }

            /// What the driver did and holds, as `results.json` shows it ([`PageTableDriver::stats`]).
            pub fn stats(&self) -> serde_json::Value {
                match self {
                    $(Driver::$variant(d) => serde_json::to_value(d.stats()).expect("driver statistics serialize"),)+
                }
            }

            /// See [`PageTableDriver::iterate`].
            pub fn iterate(&self, db: &mut dyn Find, asid: Asid, range: Range<u64>, visit: Visit) -> ControlFlow<()> {
                match self {
                    $(Driver::$variant(d) => d.iterate(db, asid, range, visit),)+
                }
            }

            /// See [`PageTableDriver::range_is_void`].
            pub fn range_is_void(&self, db: &mut dyn Find, asid: Asid, range: Range<u64>) -> bool {
                match self {
                    $(Driver::$variant(d) => d.range_is_void(db, asid, range),)+
                }
            }

            /// See [`PageTableDriver::huge_eligible`].
            pub fn huge_eligible(&self, db: &mut dyn Find, asid: Asid, vaddr: u64, size: PageSize) -> bool {
                match self {
                    $(Driver::$variant(d) => d.huge_eligible(db, asid, vaddr, size),)+
                }
            }

            /// See [`PageTableDriver::swapped`].
            pub fn swapped(&self, db: &mut dyn Find, asid: Asid, vaddr: u64) -> bool {
                match self {
                    $(Driver::$variant(d) => d.swapped(db, asid, vaddr),)+
                }
            }

            /// See [`PageTableDriver::walk`].
            #[inline(always)]
            pub fn walk<S: WalkSink>(&mut self, t: &Translation, sink: &mut S) {
                match self {
                    $(Driver::$variant(d) => d.walk(t, sink),)+
                }
            }
        }
    };
}

page_table_drivers! {
    /// The OS's own map, walked at no cost: a walk reads nothing.
    Map = "map" => map::MapDriver(MapSpec),
    /// x86-64 radix tables of 4 or 5 levels in the machine's memory.
    Radix = "radix" => radix::Radix(RadixSpec),
    /// Flattened page tables: two radix levels merged into 2 MiB nodes.
    Fpt = "fpt" => fpt::Fpt(FptSpec),
    /// Elastic cuckoo page tables with cuckoo walk tables and caches.
    Ecpt = "ecpt" => ecpt::Ecpt(EcptSpec),
}

impl Default for PageTableSpec {
    /// The driver of a machine whose configuration names none: `map`.
    fn default() -> PageTableSpec {
        PageTableSpec::Map(map::MapSpec {})
    }
}


#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::PlacementSpec;

    #[test]
    fn every_driver_is_named_as_configurations_write_it() {
        for &name in PageTableSpec::NAMES {
            let written: PageTableSpec = serde_json::from_value(serde_json::json!(name)).unwrap();
            assert_eq!(written.name(), name);
            let table: PageTableSpec = serde_json::from_value(serde_json::json!({ "kind": name })).unwrap();
            assert_eq!(table, written);
        }
    }

    #[test]
    fn the_map_driver_walks_statelessly_reading_nothing() {
        let os = OsSpec::simple(1 << 20, PlacementSpec::Sequential);
        let mut driver = Driver::new(&os);
        assert!(driver.stateless());
        let t = Translation { asid: 1, vpn: Vpn(5), pfn: Pfn(9), size: PageSize::Size4K };
        assert_eq!(driver.need(1, Vpn(5), PageSize::Size4K), None);
        let mut meter = Meter::default();
        driver.mapped(&t, &mut meter).unwrap();
        let mut reads = Vec::new();
        driver.walk(&t, &mut reads);
        driver.unmapped(1, Vpn(5), PageSize::Size4K, &mut meter);
        assert!(reads.is_empty());
    }
}
