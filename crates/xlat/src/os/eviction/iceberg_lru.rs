//! The `iceberg-lru` policy (Mosaic pages, §4): exact global LRU that keeps at most
//! `1 - delta` of memory resident, so that evictions take the oldest page and iceberg
//! placement nearly always finds a free candidate; should a placement still find all its
//! candidates live, the oldest candidate goes.

use super::lru_heap::LruHeap;
use super::{resident_limit, EvictionPolicy, PolicySpec};
use crate::os::frames::Frames;
use crate::os::{NoFrame, OsSpec, PlacementSpec};
use crate::types::{Asid, Vpn};
use serde::{Deserialize, Serialize};

/// Default δ of Iceberg LRU: about 13% of memory stays free for the paper's parameters.
pub const DEFAULT_DELTA: f64 = 0.13;

/// The parameters of `iceberg-lru`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IcebergLruSpec {
    /// Fraction of memory left unused (default 0.13).
    #[serde(default = "default_delta")]
    pub delta: f64,
}

fn default_delta() -> f64 {
    DEFAULT_DELTA
}

impl Default for IcebergLruSpec {
    fn default() -> IcebergLruSpec {
        IcebergLruSpec { delta: DEFAULT_DELTA }
    }
}

impl PolicySpec for IcebergLruSpec {
    fn check(&self, placement: &PlacementSpec, path: &str) -> crate::Result<()> {
        super::needs_iceberg("iceberg-lru", placement, path)?;
        super::check_delta(self.delta, path)
    }
}

/// The global LRU order and the number of pages kept resident.
#[derive(Clone, Debug)]
pub struct IcebergLru {
    heap: LruHeap,
    limit: u64,
}

impl EvictionPolicy for IcebergLru {
    type Spec = IcebergLruSpec;

    fn new(spec: &IcebergLruSpec, frames: u64, _: &OsSpec) -> IcebergLru {
        IcebergLru { heap: LruHeap::default(), limit: resident_limit(frames, spec.delta) }
    }

    fn next_victim(&mut self, frames: &Frames, _: &mut dyn FnMut(u64)) -> Result<Option<u64>, NoFrame> {
        if frames.used() < self.limit {
            return Ok(None);
        }
        self.heap.oldest(frames).map(Some).ok_or(NoFrame::Full)
    }

    fn placed(&mut self, frames: &Frames, frame: u64, _: Asid, _: Vpn, _: bool) {
        self.heap.insert(frames, frame);
    }
}
