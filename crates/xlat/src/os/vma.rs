//! The mappings of each address space (Linux's VMAs), as address-space events
//! ([`crate::memref::AddressSpaceEvent`]) make and remove them.
//!
//! Only what the OS model needs of a VMA is kept: its range. Adjacent and overlapping
//! mappings merge into one, as the kernel merges anonymous VMAs of the same flags (the
//! heap's brk growth extends one VMA), so "wholly inside one mapping" is "inside one
//! range". An address space that no event ever mapped is *unknown*: a stream without events
//! (most traces, and every version-1 native trace) leaves the OS as it was before events
//! existed, every range of such an address space counting as mapped.

use crate::types::Asid;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::ops::Range;

/// The mapped ranges of every address space an event has named.
#[derive(Clone, Debug, Default)]
pub struct Mappings {
    /// Per address space: disjoint, non-adjacent ranges, end by start.
    spaces: FxHashMap<Asid, BTreeMap<u64, u64>>,
}

impl Mappings {
    /// Maps `range` of `asid`, merging it with the mappings it overlaps or touches.
    pub fn map(&mut self, asid: Asid, range: Range<u64>) {
        let ranges = self.spaces.entry(asid).or_default();
        let (mut start, mut end) = (range.start, range.end);
        // The mapping starting at or before `start` and reaching it, then every one starting
        // inside the range or where it ends, merge with it.
        if let Some((&s, &e)) = ranges.range(..=start).next_back() {
            if e >= start {
                start = s;
                end = end.max(e);
            }
        }
        let merged: Vec<(u64, u64)> = ranges.range(start..=end).map(|(&s, &e)| (s, e)).collect();
        for (s, e) in merged {
            ranges.remove(&s);
            end = end.max(e);
        }
        ranges.insert(start, end);
    }

    /// Unmaps `range` of `asid`: mappings inside it go, those it overlaps shrink or split.
    /// An address space no event named becomes known (with nothing mapped but what is left
    /// of nothing): an unmap is an event too.
    pub fn unmap(&mut self, asid: Asid, range: Range<u64>) {
        let ranges = self.spaces.entry(asid).or_default();
        let first = ranges.range(..range.start).next_back().map_or(range.start, |(&s, _)| s);
        let overlapping: Vec<(u64, u64)> = ranges.range(first..range.end).map(|(&s, &e)| (s, e)).filter(|&(_, e)| e > range.start).collect();
        for (s, e) in overlapping {
            ranges.remove(&s);
            if s < range.start {
                ranges.insert(s, range.start);
            }
            if e > range.end {
                ranges.insert(range.end, e);
            }
        }
    }

    /// True when some address of `range` of `asid` is mapped, or `asid` is unknown.
    pub fn overlaps(&self, asid: Asid, range: Range<u64>) -> bool {
        let Some(ranges) = self.spaces.get(&asid) else { return true };
        ranges.range(..range.end).next_back().is_some_and(|(_, &e)| e > range.start)
    }

    /// The unmapped space around `vaddr` of `asid`, which must be unmapped: from the end of
    /// the mapping below it (or 0) to the start of the one above (or the top of the address
    /// space).
    pub fn gap(&self, asid: Asid, vaddr: u64) -> Range<u64> {
        let Some(ranges) = self.spaces.get(&asid) else { return vaddr..vaddr };
        let floor = ranges.range(..=vaddr).next_back().map_or(0, |(_, &e)| e);
        let ceiling = ranges.range(vaddr..).next().map_or(u64::MAX, |(&s, _)| s);
        debug_assert!(floor <= vaddr, "{vaddr:#x} is mapped");
        floor..ceiling
    }

    /// True when an event has named `asid`.
    pub fn knows(&self, asid: Asid) -> bool {
        self.spaces.contains_key(&asid)
    }

    /// True when `range` of `asid` lies wholly inside one mapping, or `asid` is unknown.
    pub fn inside_one(&self, asid: Asid, range: Range<u64>) -> bool {
        let Some(ranges) = self.spaces.get(&asid) else { return true };
        ranges.range(..=range.start).next_back().is_some_and(|(_, &e)| e >= range.end)
    }

    /// True when `vaddr` of `asid` is mapped, or `asid` is unknown.
    pub fn contains(&self, asid: Asid, vaddr: u64) -> bool {
        self.inside_one(asid, vaddr..vaddr.saturating_add(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn adjacent_mappings_merge_and_unmapping_splits() {
        let mut m = Mappings::default();
        assert!(m.inside_one(0, 0..1 << 30), "an unknown address space is all mapped");
        m.map(0, 0x1000..0x3000);
        m.map(0, 0x3000..0x5000);
        assert!(m.inside_one(0, 0x1000..0x5000));
        m.unmap(0, 0x2000..0x3000);
        assert!(!m.inside_one(0, 0x1000..0x5000));
        assert!(m.inside_one(0, 0x3000..0x5000) && m.inside_one(0, 0x1000..0x2000));
        assert!(!m.contains(0, 0x2000) && m.contains(0, 0x1fff));
        assert!(m.inside_one(1, 0..8), "another address space stays unknown");
        assert_eq!(m.gap(0, 0x2000), 0x2000..0x3000);
        assert_eq!(m.gap(0, 0x5000), 0x5000..u64::MAX);
        assert_eq!(m.gap(0, 0x800), 0..0x1000);
        assert!(m.overlaps(0, 0x1800..0x2800) && !m.overlaps(0, 0x2000..0x3000) && m.overlaps(0, 0x2fff..0x3001));
        assert!(m.overlaps(1, 0..1), "an unknown address space is all mapped");
    }

    /// What the model is checked against: the set of mapped pages (of 16 addresses each).
    fn pages(r: &Range<u64>) -> impl Iterator<Item = u64> {
        r.start / 16..r.end / 16
    }

    proptest! {
        /// After any maps and unmaps, an aligned range is inside one mapping exactly when
        /// every page of it is mapped in the brute-force set.
        #[test]
        fn agrees_with_a_set_of_pages(
            events in proptest::collection::vec((any::<bool>(), 0u64..64, 1u64..16), 1..40),
            probes in proptest::collection::vec((0u64..64, 1u64..16), 1..40),
        ) {
            let mut m = Mappings::default();
            let mut set = BTreeSet::new();
            for (map, start, len) in events {
                let r = start * 16..(start + len) * 16;
                if map {
                    m.map(0, r.clone());
                    set.extend(pages(&r));
                } else {
                    m.unmap(0, r.clone());
                    pages(&r).for_each(|p| { set.remove(&p); });
                }
            }
            for (start, len) in probes {
                let r = start * 16..(start + len) * 16;
                prop_assert_eq!(m.inside_one(0, r.clone()), pages(&r).all(|p| set.contains(&p)), "{:?}", r);
            }
        }
    }
}
