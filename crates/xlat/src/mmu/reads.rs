//! What a machine's walks read, counted: the page-table entries by level (EMT's walk
//! lengths), before any walk cache or data cache decides what they cost.

use super::{WalkRead, WalkSink};
use serde::Serialize;

/// The most levels a driver's walk reads (5-level radix).
pub const MAX_LEVELS: usize = 5;

/// Entries walks read, by level of the driver's format (0 for the table of 4 KiB entries).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReadCounts {
    /// Reads at each level.
    pub by_level: [u64; MAX_LEVELS],
}

impl ReadCounts {
    /// Every read.
    pub fn total(&self) -> u64 {
        self.by_level.iter().sum()
    }
}

impl WalkSink for ReadCounts {
    #[inline]
    fn read(&mut self, read: WalkRead) {
        self.by_level[usize::from(read.level).min(MAX_LEVELS - 1)] += 1;
    }
}
