//! What a GAP run is expected to allocate and reference.

use super::Gap;
use crate::workload::Expected;

/// The expectation of `gap`.
pub fn expected(_gap: &Gap) -> Expected {
    Expected { regions: vec![], phases: vec![], tolerance: 0.1 }
}
