//! What a page-table walk is asked for and what it gives: the one way a TLB miss reaches the
//! OS model ([`super::Os::walk`]).

use super::page_table::Leaf;
use crate::types::Translation;

/// Who asks for a walk, which decides what the walk counts and records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkBy {
    /// The machine's first TLB (its conventional hierarchy, else its first Mosaic TLB): under
    /// `recency = "fill"`, its walks are the uses the OS sees.
    FirstTlb,
    /// Another TLB of the machine: counted, recording no use, so that adding a TLB to
    /// compare changes nothing the OS does.
    OtherTlb,
    /// Another TLB walking the page that a walk made for the same reference just found
    /// (that walk), with nothing changed since: counted as a walk of its own, and walked by
    /// the driver again, but not looked up again.
    Repeat(Walk),
    /// A first TLB level whose lower levels replay its misses apart (a machine on the
    /// express path using a second core): the page is mapped, but the walk is counted when
    /// the replay finds that the lower levels missed too
    /// ([`super::Os::count_replayed_walks`]). Only for a stateless page-table driver.
    Ahead,
}

/// What a walk found (what it read went to the caller's sink).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Walk {
    /// The page's mapping.
    pub translation: Translation,
    /// Where the OS's table holds it, for a ToC read after the walk ([`super::Os::toc`]).
    pub(crate) leaf: Leaf,
}
