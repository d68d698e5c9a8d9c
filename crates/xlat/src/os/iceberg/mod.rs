//! Iceberg hashing of physical memory (Mosaic pages): the layout and CPFN codec, and where
//! pages are placed in it.

pub mod geometry;
pub mod placement;

pub use geometry::{BackyardRanges, IcebergSpec, Layout, Slot, TieBreak};
pub use placement::Placed;
