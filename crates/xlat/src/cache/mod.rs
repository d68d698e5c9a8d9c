//! Caches of the memory a machine's walks and data references read: set-associative arrays
//! of tags ([`tags`]), with the replacement policies the TLBs have.

pub mod hierarchy;
pub mod tags;

pub use hierarchy::{Access, CacheHierarchy, CacheLevelSpec};
pub use tags::TagArray;
