//! Translation lookaside buffers: set-associative arrays with pluggable replacement, and
//! multi-level hierarchies of them.

pub mod array;
pub mod hierarchy;
pub mod replacement;

pub use array::{ArrayGeometry, TlbArray};
pub use hierarchy::{Counters, LevelGeometry, LevelStats, Side, TlbHierarchy};
pub use replacement::Policy;
