//! Translation lookaside buffers: set-associative arrays with pluggable replacement,
//! multi-level hierarchies of them, and the Mosaic TLB array (one entry per Mosaic page).

pub mod array;
mod express;
pub mod hierarchy;
pub mod mosaic;
pub mod replacement;
mod set_index;

pub use array::{ArrayGeometry, TlbArray};
pub use express::{Descent, ExpressRun, LowerLevels, SingleLevel, Walker};
pub use hierarchy::{Counters, LevelGeometry, LevelStats, Side, TlbHierarchy};
pub use mosaic::{MosaicCounters, MosaicGeometry, MosaicLookup, MosaicTlb};
pub use replacement::Policy;
