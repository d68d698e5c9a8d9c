//! Caches of the memory a machine's walks and data references read: set-associative arrays
//! of tags ([`tags`]), with the replacement policies the TLBs have.

pub mod tags;

pub use tags::TagArray;
