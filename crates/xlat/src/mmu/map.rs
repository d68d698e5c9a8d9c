//! The `map` driver: the OS's own map of mappings ([`crate::os::PageTable`]), walked at no
//! cost. A walk reads no memory the machine models and changes nothing, as in the Mosaic
//! paper's TLB studies, which count misses rather than time walks.

use super::{PageTableDriver, WalkSink};
use crate::os::OsSpec;
use crate::types::{Asid, PageSize, Translation, Vpn};

/// The driver of a page table that costs nothing to walk.
#[derive(Clone, Copy, Debug, Default)]
pub struct MapDriver;

impl PageTableDriver for MapDriver {
    fn new(_: &OsSpec) -> MapDriver {
        MapDriver
    }

    #[inline(always)]
    fn stateless(&self) -> bool {
        true
    }

    #[inline(always)]
    fn mapped(&mut self, _: &Translation) {}

    #[inline(always)]
    fn unmapped(&mut self, _: Asid, _: Vpn, _: PageSize) {}

    #[inline(always)]
    fn walk<S: WalkSink>(&mut self, _: &Translation, _: &mut S) {}
}
