//! Where a newly touched page's frame may go: anywhere (fully associative, random or
//! sequential), in the set its low VPN bits choose, or in its iceberg candidates.

use super::fully_associative::FullyAssociative;
use super::iceberg::{IcebergSpec, Layout};
use super::set_associative::SetAssociative;
use serde::{Deserialize, Serialize};

/// The placement policies by name, as written in configurations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// Any free frame, uniformly at random (seeded): a fully associative memory whose frames
    /// carry no locality, like a long-running system's fragmented free lists.
    Random,
    /// The lowest-numbered never-used frame, reusing freed frames most recently freed first:
    /// a fresh machine's physically contiguous allocation.
    Sequential,
    /// A set of `ways` frames chosen by the low VPN bits.
    SetAssociative,
    /// Mosaic's iceberg hash table.
    Iceberg,
}

/// A validated placement with its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum PlacementSpec {
    /// [`Placement::Random`].
    Random,
    /// [`Placement::Sequential`].
    Sequential,
    /// [`Placement::SetAssociative`].
    SetAssociative {
        /// Frames per set.
        ways: u64,
    },
    /// [`Placement::Iceberg`].
    Iceberg(IcebergSpec),
}

impl PlacementSpec {
    /// True when any page may use any frame.
    pub fn is_fully_associative(&self) -> bool {
        matches!(self, PlacementSpec::Random | PlacementSpec::Sequential)
    }

    /// The placement state over `frames` frames.
    pub(crate) fn build(&self, frames: u64, seed: u64) -> Placer {
        match *self {
            PlacementSpec::Random => Placer::Fully(FullyAssociative::new(true, frames, seed)),
            PlacementSpec::Sequential => Placer::Fully(FullyAssociative::new(false, frames, seed)),
            PlacementSpec::SetAssociative { ways } => Placer::Set(SetAssociative::new(frames, ways)),
            PlacementSpec::Iceberg(spec) => Placer::Iceberg(Box::new(Layout::new(spec, frames))),
        }
    }
}

/// The state of a placement policy.
pub(crate) enum Placer {
    Fully(FullyAssociative),
    Set(SetAssociative),
    Iceberg(Box<Layout>),
}
