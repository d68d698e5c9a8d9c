//! How the OS learns that a page was used: every access, the walks that fill a TLB, or
//! periodic scans of accessed bits ([`super::scan`]).

use serde::{Deserialize, Serialize};

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
    /// [`super::scan`].
    Scan {
        /// Page accesses between scans: the OS clock counts one per page a reference touches.
        period: u64,
        /// Fraction of hot pages whose bit is read at each scan.
        hot_sample: f64,
        /// Scans of history that decide whether a page is hot (1 to 8).
        history: u32,
    },
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
