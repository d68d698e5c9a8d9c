//! The `lazy-iceberg-lru` policy (Micro'23, "LRU precision", the red line of Fig. 4): the
//! pages Iceberg LRU would evict (the oldest beyond `1 - delta` of memory) are marked
//! evictable instead and stay resident ([`Evictable`]); iceberg placement treats them as
//! Horizon LRU treats ghosts (a free slot, else the yard's oldest marked page, which is
//! evicted; backyard load counts them as free). A marked page used again is unmarked, and
//! the next oldest page is marked in its place.

use super::evictable::Evictable;
use super::iceberg_lru::DEFAULT_DELTA;
use super::lru_heap::LruHeap;
use super::{resident_limit, EvictionPolicy, PolicySpec};
use crate::os::frames::Frames;
use crate::os::iceberg::placement::Ghosts;
use crate::os::{NoFrame, OsSpec, PlacementSpec};
use crate::types::{Asid, Vpn};
use serde::{Deserialize, Serialize};

/// The parameters of `lazy-iceberg-lru`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LazyIcebergLruSpec {
    /// Fraction of memory whose oldest pages are kept evictable (default 0.13).
    #[serde(default = "default_delta")]
    pub delta: f64,
}

fn default_delta() -> f64 {
    DEFAULT_DELTA
}

impl Default for LazyIcebergLruSpec {
    fn default() -> LazyIcebergLruSpec {
        LazyIcebergLruSpec { delta: DEFAULT_DELTA }
    }
}

impl PolicySpec for LazyIcebergLruSpec {
    fn check(&self, placement: &PlacementSpec, path: &str) -> crate::Result<()> {
        super::needs_iceberg("lazy-iceberg-lru", placement, path)?;
        super::check_delta(self.delta, path)
    }

    /// A mark per frame.
    fn frame_bytes(&self) -> u64 {
        1
    }
}

/// The global LRU order of the unmarked pages, the marks, and how many pages may stay
/// unmarked.
#[derive(Clone, Debug)]
pub struct LazyIcebergLru {
    heap: LruHeap,
    evictable: Evictable,
    limit: u64,
}

impl EvictionPolicy for LazyIcebergLru {
    type Spec = LazyIcebergLruSpec;

    fn new(spec: &LazyIcebergLruSpec, frames: u64, _: &OsSpec) -> LazyIcebergLru {
        LazyIcebergLru { heap: LruHeap::default(), evictable: Evictable::new(frames), limit: resident_limit(frames, spec.delta) }
    }

    fn observes_uses(&self) -> bool {
        true
    }

    /// Marks the oldest unmarked pages evictable until fewer than the limit remain unmarked
    /// (Iceberg LRU would evict them); placement evicts a marked page when it needs its slot.
    fn next_victim(&mut self, frames: &Frames, _: &mut dyn FnMut(u64)) -> Result<Option<u64>, NoFrame> {
        while frames.used() - self.evictable.count() >= self.limit {
            match self.heap.oldest(frames) {
                Some(frame) => self.evictable.mark(frame),
                None => break,
            }
        }
        Ok(None)
    }

    fn ghosts(&self) -> Ghosts<'_> {
        Ghosts::Marked(&self.evictable)
    }

    fn placed(&mut self, frames: &Frames, frame: u64, _: Asid, _: Vpn, _: bool) {
        self.heap.insert(frames, frame);
    }

    /// A marked page used again is kept after all: back into the LRU order.
    fn retimed(&mut self, frames: &Frames, frame: u64) {
        if self.evictable.unmark(frame) {
            self.heap.insert(frames, frame);
        }
    }

    fn evicted(&mut self, frame: u64, _: Asid, _: Vpn, _: u64) {
        self.evictable.unmark(frame);
    }

    fn freed(&mut self, frame: u64) {
        self.evictable.unmark(frame);
    }
}
