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
//! Adding a driver is one file in this folder implementing [`PageTableDriver`] and one line
//! in the `page_table_drivers!` list below, which generates the configuration's names
//! ([`PageTableKind`], `os.page_table`) and the dispatch ([`Driver`]).

use crate::os::OsSpec;
use crate::types::{Asid, PageSize, PhysAddr, Translation, Vpn};
use serde::{Deserialize, Serialize};

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

/// A page-table format and its walk.
pub trait PageTableDriver {
    /// The driver of a machine whose OS is `os`, with nothing mapped.
    fn new(os: &OsSpec) -> Self
    where
        Self: Sized;
    /// True when walks read nothing the machine models and change nothing in the driver (see
    /// the module documentation).
    fn stateless(&self) -> bool;
    /// The OS mapped `t`: a page mapped for the first time, again after a swap-out, or moved
    /// to another frame.
    fn mapped(&mut self, t: &Translation);
    /// The OS unmapped the page of `size` at `vpn` in `asid`.
    fn unmapped(&mut self, asid: Asid, vpn: Vpn, size: PageSize);
    /// The walk that finds `t`, a mapping the OS holds: writes the reads it makes into `sink`.
    fn walk<S: WalkSink>(&mut self, t: &Translation, sink: &mut S);
}

/// Declares the page-table drivers: each line gives a driver's variant, its name in
/// configurations and its type in its module (a file of this folder, declared here).
/// Generates [`PageTableKind`] and [`Driver`].
macro_rules! page_table_drivers {
    ($($(#[$doc:meta])* $variant:ident = $name:literal => $module:ident::$driver:ident,)+) => {
        $(pub mod $module;)+

        /// The page-table drivers by name, as written in configurations (`os.page_table`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
        pub enum PageTableKind {
            $($(#[$doc])* #[serde(rename = $name)] $variant,)+
        }

        impl PageTableKind {
            /// Every driver, in the order registered.
            pub const ALL: &[PageTableKind] = &[$(PageTableKind::$variant,)+];

            /// The name in configurations.
            pub fn name(self) -> &'static str {
                match self {
                    $(PageTableKind::$variant => $name,)+
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
                match os.page_table {
                    $(PageTableKind::$variant => Driver::$variant(<$module::$driver as PageTableDriver>::new(os)),)+
                }
            }

            /// See [`PageTableDriver::stateless`].
            #[inline(always)]
            pub fn stateless(&self) -> bool {
                match self {
                    $(Driver::$variant(d) => d.stateless(),)+
                }
            }

            /// See [`PageTableDriver::mapped`].
            #[inline(always)]
            pub fn mapped(&mut self, t: &Translation) {
                match self {
                    $(Driver::$variant(d) => d.mapped(t),)+
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
    Map = "map" => map::MapDriver,
}

/// The driver of a machine whose configuration names none.
pub const DEFAULT_PAGE_TABLE: PageTableKind = PageTableKind::Map;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::PlacementSpec;
    use crate::types::Pfn;

    #[test]
    fn every_driver_is_named_as_configurations_write_it() {
        for &kind in PageTableKind::ALL {
            let written: PageTableKind = serde_json::from_value(serde_json::json!(kind.name())).unwrap();
            assert_eq!(written, kind);
        }
    }

    #[test]
    fn the_map_driver_walks_statelessly_reading_nothing() {
        let os = OsSpec::simple(1 << 20, PlacementSpec::Sequential);
        let mut driver = Driver::new(&os);
        assert!(driver.stateless());
        let t = Translation { asid: 1, vpn: Vpn(5), pfn: Pfn(9), size: PageSize::Size4K };
        driver.mapped(&t);
        let mut reads = Vec::new();
        driver.walk(&t, &mut reads);
        driver.unmapped(1, Vpn(5), PageSize::Size4K);
        assert!(reads.is_empty());
    }
}
