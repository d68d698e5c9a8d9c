//! The `map` driver: the store of mappings ([`crate::os::PageTable`]) is the page table,
//! walked at no cost. A walk reads no memory the machine models and changes nothing, as in the Mosaic
//! paper's TLB studies, which count misses rather than time walks.

use super::{DriverSpec, PageTableDriver, TableFull, WalkSink};
use crate::os::kernel_work::Meter;
use crate::os::OsSpec;
use crate::types::{Asid, PageSize, Translation, Vpn};
use serde::{Deserialize, Serialize};

/// `map` takes no parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MapSpec {}

impl DriverSpec for MapSpec {
    fn check(&self, _: &OsSpec, _: &str) -> crate::Result<()> {
        Ok(())
    }
}

/// The driver of a page table that costs nothing to walk.
#[derive(Clone, Copy, Debug, Default)]
pub struct MapDriver;

impl PageTableDriver for MapDriver {
    type Spec = MapSpec;
    type Stats = ();

    fn new(_: &MapSpec, _: &OsSpec) -> MapDriver {
        MapDriver
    }

    #[inline(always)]
    fn stateless(&self) -> bool {
        true
    }

    /// The entry written.
    #[inline(always)]
    fn mapped(&mut self, _: &Translation, meter: &mut Meter) -> Result<(), TableFull> {
        meter.add().entries_written += 1;
        Ok(())
    }

    /// The entry written.
    #[inline(always)]
    fn unmapped(&mut self, _: Asid, _: Vpn, _: PageSize, meter: &mut Meter) {
        meter.add().entries_written += 1;
    }

    /// One entry read: the map is found as a flat table would be.
    fn find_work(&self, _: Asid, _: u64, _: PageSize, meter: &mut Meter) {
        meter.add().entries_read += 1;
    }

    #[inline(always)]
    fn walk<S: WalkSink>(&mut self, _: &Translation, _: &mut S) {}

    fn stats(&self) {}
}
