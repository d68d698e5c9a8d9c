//! Page-table drivers: the format of the page table a machine's MMU walks, and what each walk
//! reads (EMT's MMU drivers, seed 003).
//!
//! The OS model keeps every mapping in a map of its own ([`crate::os::PageTable`]) and tells
//! the machine's driver of each page it maps and unmaps; the driver keeps the page table in
//! its format and answers each walk ([`crate::os::Os::walk`]) with the physical addresses the
//! walk reads, in order, written into a [`WalkSink`] the caller gives. A driver whose walks
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
use crate::os::OsSpec;
use crate::types::{Asid, PageSize, Pfn, PhysAddr, Translation, Vpn};

/// One read of a walk: the physical address of a page-table entry, and the level of the
/// table it is in (0 for the leaf; a driver numbers the levels above as its format does).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalkRead {
    /// Level of the table read, 0 being the leaf.
    pub level: u8,
    /// Physical address of the entry read.
    pub addr: PhysAddr,
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

/// The parameters of a page-table driver: the table `os.page_table` is written as, with
/// the driver's defaults for the fields left out.
pub trait DriverSpec: Default {
    /// Checks the parameters for the OS `os`; errors name the field under `path` (the path
    /// of `os.page_table`).
    fn check(&self, os: &OsSpec, path: &str) -> crate::Result<()>;
}

/// A page-table format and its walk.
pub trait PageTableDriver {
    /// The driver's parameters.
    type Spec: DriverSpec;
    /// The driver of a machine whose OS is `os`, with nothing mapped.
    fn new(spec: &Self::Spec, os: &OsSpec) -> Self;
    /// True when walks read nothing the machine models and change nothing in the driver (see
    /// the module documentation).
    fn stateless(&self) -> bool;
    /// How many table pages the driver must add before a page of `size` at `vpn` of `asid`
    /// can be mapped: the OS places that many pinned frames in the machine's memory, as a
    /// fault allocates the missing page-table pages before the data page, and hands them to
    /// [`PageTableDriver::mapped`]. 0 for a driver whose tables are not in that memory.
    fn tables_needed(&self, asid: Asid, vpn: Vpn, size: PageSize) -> usize;
    /// The OS mapped `t`: a page mapped for the first time, again after a swap-out, or moved
    /// to another frame. `tables` are the frames of the table pages
    /// [`PageTableDriver::tables_needed`] asked for, in the order the driver takes them.
    fn mapped(&mut self, t: &Translation, tables: &[Pfn]);
    /// The OS unmapped the page of `size` at `vpn` in `asid`.
    fn unmapped(&mut self, asid: Asid, vpn: Vpn, size: PageSize);
    /// The walk that finds `t`, a mapping the OS holds: writes the reads it makes into `sink`.
    fn walk<S: WalkSink>(&mut self, t: &Translation, sink: &mut S);
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

            /// See [`PageTableDriver::tables_needed`].
            #[inline(always)]
            pub fn tables_needed(&self, asid: Asid, vpn: Vpn, size: PageSize) -> usize {
                match self {
                    $(Driver::$variant(d) => d.tables_needed(asid, vpn, size),)+
                }
            }

            /// See [`PageTableDriver::mapped`].
            #[inline(always)]
            pub fn mapped(&mut self, t: &Translation, tables: &[Pfn]) {
                match self {
                    $(Driver::$variant(d) => d.mapped(t, tables),)+
                }
            }

            /// See [`PageTableDriver::unmapped`].
            #[inline(always)]
            pub fn unmapped(&mut self, asid: Asid, vpn: Vpn, size: PageSize) {
                match self {
                    $(Driver::$variant(d) => d.unmapped(asid, vpn, size),)+
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
        assert_eq!(driver.tables_needed(1, Vpn(5), PageSize::Size4K), 0);
        driver.mapped(&t, &[]);
        let mut reads = Vec::new();
        driver.walk(&t, &mut reads);
        driver.unmapped(1, Vpn(5), PageSize::Size4K);
        assert!(reads.is_empty());
    }
}
