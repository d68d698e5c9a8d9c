//! The `horizon-lru` policy (Mosaic pages, §4): every page has a last-use timestamp, and the
//! horizon is the highest timestamp of any page evicted. Pages last used before the horizon
//! are ghosts: they stay in memory, where a later use finds them, but iceberg placement
//! takes their frames as free (the oldest ghost of a yard first, `os::iceberg::placement`).
//! A page is evicted only when all of a new page's candidates are live; the oldest of them
//! goes, raising the horizon to its timestamp. So no page younger than the horizon is
//! evicted while a ghost could make room.

use super::{EvictionPolicy, PolicySpec};
use crate::os::frames::Frames;
use crate::os::iceberg::placement::Ghosts;
use crate::os::{NoFrame, OsSpec, PlacementSpec};
use crate::types::{Asid, Vpn};
use serde::{Deserialize, Serialize};

/// `horizon-lru` takes no parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HorizonLruSpec {}

impl PolicySpec for HorizonLruSpec {
    fn check(&self, placement: &PlacementSpec, path: &str) -> crate::Result<()> {
        super::needs_iceberg("horizon-lru", placement, path)
    }
}

/// Horizon LRU's one word of state.
#[derive(Clone, Copy, Debug)]
pub struct HorizonLru {
    horizon: u64,
}

impl EvictionPolicy for HorizonLru {
    type Spec = HorizonLruSpec;

    fn new(_: &HorizonLruSpec, _: u64, _: &OsSpec) -> HorizonLru {
        HorizonLru { horizon: 0 }
    }

    /// Placement makes room: no victim ahead of it.
    fn next_victim(&mut self, _: &Frames, _: &mut dyn FnMut(u64)) -> Result<Option<u64>, NoFrame> {
        Ok(None)
    }

    fn ghosts(&self) -> Ghosts<'_> {
        Ghosts::Before(self.horizon)
    }

    fn evicted(&mut self, _: u64, _: Asid, _: Vpn, stamp: u64) {
        self.horizon = self.horizon.max(stamp);
    }

    fn horizon(&self) -> Option<u64> {
        Some(self.horizon)
    }
}
