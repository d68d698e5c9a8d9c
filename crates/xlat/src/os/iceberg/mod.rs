//! Iceberg hashing of physical memory (Mosaic pages): the layout and CPFN codec, and the
//! frame allocator that places pages in it.

pub mod geometry;

pub use geometry::{BackyardRanges, IcebergSpec, Layout, Slot};
