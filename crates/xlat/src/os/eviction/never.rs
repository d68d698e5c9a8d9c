//! The `none` policy: nothing is ever evicted, and a fault that finds no frame its placement
//! allows is an error naming the reference (out of memory, or an associativity conflict).

use super::{EvictionPolicy, PolicySpec};
use crate::os::frames::Frames;
use crate::os::{NoFrame, OsSpec, PlacementSpec};
use serde::{Deserialize, Serialize};

/// `none` takes no parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NeverSpec {}

impl PolicySpec for NeverSpec {
    fn check(&self, _: &PlacementSpec, _: &str) -> crate::Result<()> {
        Ok(())
    }
}

/// A memory that never evicts.
#[derive(Clone, Copy, Debug)]
pub struct Never;

impl EvictionPolicy for Never {
    type Spec = NeverSpec;

    fn new(_: &NeverSpec, _: u64, _: &OsSpec) -> Never {
        Never
    }

    fn evicts(&self) -> bool {
        false
    }

    /// Room while a frame is free; then the fault fails.
    fn next_victim(&mut self, frames: &Frames, _: &mut dyn FnMut(u64)) -> Result<Option<u64>, NoFrame> {
        if frames.used() < frames.capacity() {
            Ok(None)
        } else {
            Err(NoFrame::Full)
        }
    }
}
