//! The `lru` policy: exact LRU among the frames the faulting page may use. Over a fully
//! associative memory that is the ideal global LRU, kept in a lazily updated heap
//! ([`LruHeap`]); over set-associative placement the LRU page of the page's set, and over
//! iceberg placement the oldest of its 104 candidates (the Mosaic paper's "naive" policy),
//! both chosen by the OS from the frames' timestamps when the placement finds no free
//! candidate.

use super::lru_heap::LruHeap;
use super::{EvictionPolicy, PolicySpec};
use crate::os::frames::Frames;
use crate::os::{NoFrame, OsSpec, PlacementSpec};
use crate::types::{Asid, Vpn};
use serde::{Deserialize, Serialize};

/// `lru` takes no parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LruSpec {}

impl PolicySpec for LruSpec {
    fn check(&self, _: &PlacementSpec, _: &str) -> crate::Result<()> {
        Ok(())
    }
}

/// Exact LRU: the global order when any page may take any frame.
#[derive(Clone, Debug)]
pub struct ExactLru {
    /// The global LRU order, for a fully associative memory (elsewhere the placement's
    /// candidates are compared by timestamp).
    global: Option<LruHeap>,
}

impl EvictionPolicy for ExactLru {
    type Spec = LruSpec;

    fn new(_: &LruSpec, _: u64, os: &OsSpec) -> ExactLru {
        ExactLru { global: os.placement.is_fully_associative().then(LruHeap::default) }
    }

    /// The least recently used page once memory is full (a fully associative memory); no
    /// victim ahead of placement otherwise.
    fn next_victim(&mut self, frames: &Frames, _: &mut dyn FnMut(u64)) -> Result<Option<u64>, NoFrame> {
        match &mut self.global {
            Some(heap) if frames.used() >= frames.capacity() => heap.oldest(frames).map(Some).ok_or(NoFrame::Full),
            _ => Ok(None),
        }
    }

    fn placed(&mut self, frames: &Frames, frame: u64, _: Asid, _: Vpn, _: bool) {
        if let Some(heap) = &mut self.global {
            heap.insert(frames, frame);
        }
    }
}
