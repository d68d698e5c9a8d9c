//! Memory pressure: which page to evict when a new page finds no free frame, how page
//! recency is observed, and what the evictions cost.
//!
//! Policies (`docs/configuration.md` lists where each applies):
//! - exact LRU: the least recently used page among the faulting page's candidate frames (all
//!   frames for a fully associative memory, so the ideal global LRU);
//! - Linux-like reclaim ([`linux`]): active and inactive lists with referenced bits;
//! - Horizon LRU (Mosaic pages): ghosts below a horizon, see `os::iceberg`;
//! - Iceberg LRU: global LRU over `(1 - δ)` of memory, so that the oldest page is evicted;
//!   its lazy variant marks those pages evictable and evicts one when its slot is needed
//!   ([`evictable`]).

pub mod age;
pub mod evictable;
pub mod linux;
pub mod lru_heap;
pub mod scan;
pub mod workingset;

use serde::{Deserialize, Serialize};

/// The eviction policy, validated.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum EvictionSpec {
    /// Never evict: a fault that finds no frame is an error.
    None,
    /// Exact LRU among the candidate frames of the faulting page.
    Lru,
    /// Linux-like active/inactive reclaim (fully associative memory only).
    Linux {
        /// Fraction of memory kept free (the zone watermarks): reclaim starts when the
        /// rest is used.
        reserve: f64,
        /// How long the inactive list is kept against the active list.
        inactive_ratio: InactiveRatio,
        /// Refault detection: a page swapped back in soon after its eviction goes straight
        /// to the active list (see [`workingset`]).
        workingset: bool,
        /// The kernel's look-twice rule for mapped pages: the fault leaves a page young, and
        /// it is promoted only when found young at two looks in a row (see [`linux`]).
        look_twice: bool,
    },
    /// Horizon LRU (iceberg memory only).
    HorizonLru,
    /// Iceberg LRU (iceberg memory only): global LRU over `(1 - delta)` of memory.
    IcebergLru {
        /// Fraction of memory left unused.
        delta: f64,
    },
    /// Lazy Iceberg LRU (iceberg memory only): the pages Iceberg LRU would evict are marked
    /// evictable and evicted when a new page needs one of their slots.
    LazyIcebergLru {
        /// Fraction of memory whose oldest pages are kept evictable.
        delta: f64,
    },
}

/// The active:inactive ratio Linux-like reclaim keeps: the active list's oldest page is
/// demoted while `inactive × ratio < active`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InactiveRatio {
    /// The kernel's `isqrt(10 × GiB on the lists)`, 1 below 1 GiB (`"kernel"` in files).
    Kernel,
    /// A fixed ratio (1: lists of equal length).
    Fixed(u32),
}

/// Written as in configurations: `"kernel"` or the number.
impl Serialize for InactiveRatio {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            InactiveRatio::Kernel => s.serialize_str("kernel"),
            InactiveRatio::Fixed(ratio) => s.serialize_u32(*ratio),
        }
    }
}

/// How the OS learns that a page was used.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Recency {
    /// Every reference updates its page's timestamp (exact; a simulator can afford it).
    Access,
    /// Only a TLB fill (a page-table walk) does, like the accessed bit a walk sets.
    Fill,
    /// A scan every `period` references reads and clears accessed bits (shooting down the
    /// pages whose bit it clears), keeping a history of the last `history` scans per page;
    /// pages used in all of them are hot, and only `hot_sample` of them are read, the rest
    /// assumed used (the authors' prototype: 1 s scans, 8 scans of history, 20%). See
    /// [`scan`].
    Scan {
        /// Page accesses between scans: the OS clock counts one per page a reference touches.
        period: u64,
        /// Fraction of hot pages whose bit is read at each scan.
        hot_sample: f64,
        /// Scans of history that decide whether a page is hot (1 to 8).
        history: u32,
    },
}

/// The names of the eviction policies in configurations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum EvictionKind {
    /// [`EvictionSpec::None`].
    None,
    /// [`EvictionSpec::Lru`].
    Lru,
    /// [`EvictionSpec::Linux`].
    Linux,
    /// [`EvictionSpec::HorizonLru`].
    HorizonLru,
    /// [`EvictionSpec::IcebergLru`].
    IcebergLru,
    /// [`EvictionSpec::LazyIcebergLru`].
    LazyIcebergLru,
}

/// The names of the recency modes in configurations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RecencyKind {
    /// [`Recency::Access`].
    Access,
    /// [`Recency::Fill`].
    Fill,
    /// [`Recency::Scan`].
    Scan,
}
