//! The frame-allocator interface: where in physical memory a newly touched page goes.

use super::fully_associative::FullyAssociative;
use crate::types::{Asid, Vpn};
use serde::{Deserialize, Serialize};

/// Chooses physical frames for pages. Frames are numbered in units of the OS page size.
///
/// The page's identity is passed in so that hashed and set-associative placements can restrict
/// where it may go; fully associative placements ignore it.
pub trait FrameAllocator: Send {
    /// A free frame for page `vpn` of `asid`, or `None` if none may be used.
    fn allocate(&mut self, asid: Asid, vpn: Vpn) -> Option<u64>;
    /// Returns `frame` to the free pool.
    fn free(&mut self, frame: u64);
    /// Total frames managed.
    fn capacity(&self) -> u64;
    /// Frames currently allocated.
    fn used(&self) -> u64;
}

/// The placement policies, chosen by name in configurations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// Any free frame, uniformly at random (seeded): a fully associative memory whose frames
    /// carry no locality, like a long-running system's fragmented free lists.
    Random,
    /// The lowest-numbered never-used frame, reusing freed frames most recently freed first:
    /// a fresh machine's physically contiguous allocation.
    Sequential,
}

impl Placement {
    /// An allocator of this policy over `frames` frames.
    pub fn build(self, frames: u64, seed: u64) -> Box<dyn FrameAllocator> {
        Box::new(FullyAssociative::new(self, frames, seed))
    }
}
