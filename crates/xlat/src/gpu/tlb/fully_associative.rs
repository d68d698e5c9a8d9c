//! A fully associative TLB array of one page size under exact LRU: the GPU's wide arrays (an
//! SM's 128 base entries, the shared L2's 256 large ones). A hash table holds the entries'
//! numbers, found by their (page, ASID) keys, and the entries are kept in order of use in a
//! doubly linked list, so a lookup or a fill costs the same whatever the number of entries.
//! The general [`crate::tlb::array::TlbArray`] serves these geometries too, through its path
//! for any policy and page-size mix, at nearly twice the instructions a fill
//! (docs/performance.md); it stays the reference the property test holds this array to.

use crate::types::{Asid, PageSize, Pfn, Translation, Vpn, BASE_PAGE_SHIFT};
use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;
use std::hash::BuildHasher;

/// No entry: either end of the recency list.
const NIL: u32 = u32::MAX;

/// A fully associative LRU array of translations of one page size.
#[derive(Clone, Debug)]
pub struct FullyAssociative {
    size: PageSize,
    /// Per entry: its page number in units of `size`, its ASID and its first base frame.
    tags: Vec<u64>,
    asids: Vec<Asid>,
    pfns: Vec<u64>,
    /// The valid entries in order of use, `head` the most recent and `tail` the least: each
    /// entry's neighbours towards the head (`prev`) and the tail (`next`).
    prev: Vec<u32>,
    next: Vec<u32>,
    head: u32,
    tail: u32,
    /// Entries not valid (never filled, or invalidated), taken before a valid one is evicted.
    free: Vec<u32>,
    /// The valid entries, by the hash of their key.
    index: HashTable<u32>,
}

/// The hash of the key (`tag`, `asid`).
#[inline]
fn hash(tag: u64, asid: Asid) -> u64 {
    FxBuildHasher.hash_one((tag, asid))
}

/// Whether an entry number of the index, given the entries' `tags` and `asids`, holds the key
/// (`tag`, `asid`).
#[inline]
fn holds<'a>(tags: &'a [u64], asids: &'a [Asid], tag: u64, asid: Asid) -> impl Fn(&u32) -> bool + 'a {
    move |&e| tags[e as usize] == tag && asids[e as usize] == asid
}

impl FullyAssociative {
    /// An empty array of `entries` entries (fewer than 2^32) for pages of `size`.
    pub fn new(entries: usize, size: PageSize) -> FullyAssociative {
        assert!(entries < NIL as usize, "{entries} entries: more than a fully associative array numbers");
        FullyAssociative {
            size,
            tags: vec![0; entries],
            asids: vec![0; entries],
            pfns: vec![0; entries],
            prev: vec![NIL; entries],
            next: vec![NIL; entries],
            head: NIL,
            tail: NIL,
            // Popped from the end: entry 0 is filled first.
            free: (0..entries as u32).rev().collect(),
            // Room for twice the entries: the slots that removals leave marked are then
            // reclaimed by rehashing in place, never by growing the table.
            index: HashTable::with_capacity(2 * entries),
        }
    }

    /// Bytes of host memory an array of `entries` takes at most: per entry its tag, ASID,
    /// frame, list links and free-list word (30 bytes), and the hash table's slots (an entry
    /// number and a control byte each, as many as `hashbrown` gives a capacity of twice the
    /// entries: the next power of two above 8/7 of it) and its 16 trailing control bytes.
    pub fn host_bytes(entries: u64) -> u64 {
        let slots = (entries.saturating_mul(16) / 7).checked_next_power_of_two().unwrap_or(u64::MAX);
        entries.saturating_mul(30).saturating_add(slots.saturating_mul(5)).saturating_add(16)
    }

    /// True when no entry is valid.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.head == NIL
    }

    /// The entry holding `tag` of `asid`, if valid.
    #[inline]
    fn find(&self, tag: u64, asid: Asid) -> Option<u32> {
        self.index.find(hash(tag, asid), holds(&self.tags, &self.asids, tag, asid)).copied()
    }

    /// Looks up `vaddr` of `asid`; a hit makes the entry the most recent and is returned.
    #[inline]
    pub fn lookup(&mut self, asid: Asid, vaddr: u64) -> Option<Translation> {
        let e = self.find(vaddr >> self.size.shift(), asid)?;
        self.touch(e);
        Some(self.translation(e))
    }

    /// Caches `t` (of this array's page size), which must be absent, as the most recent
    /// entry: in a free entry while there is one, else in place of the least recent.
    pub fn insert_absent(&mut self, t: &Translation) {
        debug_assert_eq!(t.size, self.size, "an entry of another page size");
        let tag = t.vpn.0 >> (self.size.shift() - BASE_PAGE_SHIFT);
        debug_assert!(self.find(tag, t.asid).is_none(), "insert_absent of a present entry");
        let e = match self.free.pop() {
            Some(e) => e,
            None => self.evict_tail(),
        };
        let i = e as usize;
        (self.tags[i], self.asids[i], self.pfns[i]) = (tag, t.asid, t.pfn.0);
        let (tags, asids) = (&self.tags, &self.asids);
        self.index.insert_unique(hash(tag, t.asid), e, |&e| hash(tags[e as usize], asids[e as usize]));
        self.push_front(e);
    }

    /// Removes the entry of `asid` covering `vaddr`, if valid; true if there was one.
    pub fn invalidate(&mut self, asid: Asid, vaddr: u64) -> bool {
        let tag = vaddr >> self.size.shift();
        let Ok(found) = self.index.find_entry(hash(tag, asid), holds(&self.tags, &self.asids, tag, asid)) else {
            return false;
        };
        let (e, _) = found.remove();
        self.unlink(e);
        self.free.push(e);
        true
    }

    /// Every valid entry, most recent first. Changes nothing.
    pub fn valid_translations(&self) -> impl Iterator<Item = Translation> + '_ {
        let mut e = self.head;
        std::iter::from_fn(move || {
            (e != NIL).then(|| {
                let t = self.translation(e);
                e = self.next[e as usize];
                t
            })
        })
    }

    /// The translation entry `e` holds.
    #[inline]
    fn translation(&self, e: u32) -> Translation {
        let i = e as usize;
        let vpn = self.tags[i] << (self.size.shift() - BASE_PAGE_SHIFT);
        Translation { asid: self.asids[i], vpn: Vpn(vpn), pfn: Pfn(self.pfns[i]), size: self.size }
    }

    /// Removes the least recent entry, which the array being full makes valid, from the index
    /// and the list, and gives it for reuse.
    fn evict_tail(&mut self) -> u32 {
        let e = self.tail;
        let i = e as usize;
        let (tag, asid) = (self.tags[i], self.asids[i]);
        let found = self.index.find_entry(hash(tag, asid), |&x| x == e).expect("the least recent entry is indexed");
        found.remove();
        self.unlink(e);
        e
    }

    /// Makes valid entry `e` the most recent.
    #[inline]
    fn touch(&mut self, e: u32) {
        if self.head != e {
            self.unlink(e);
            self.push_front(e);
        }
    }

    /// Takes entry `e` out of the recency list.
    #[inline]
    fn unlink(&mut self, e: u32) {
        let (prev, next) = (self.prev[e as usize], self.next[e as usize]);
        match prev {
            NIL => self.head = next,
            p => self.next[p as usize] = next,
        }
        match next {
            NIL => self.tail = prev,
            n => self.prev[n as usize] = prev,
        }
    }

    /// Puts entry `e`, out of the list, at its head.
    #[inline]
    fn push_front(&mut self, e: u32) {
        self.prev[e as usize] = NIL;
        self.next[e as usize] = self.head;
        match self.head {
            NIL => self.tail = e,
            h => self.prev[h as usize] = e,
        }
        self.head = e;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use super::super::tests::NaiveLru;
    use crate::tlb::array::{ArrayGeometry, TlbArray};
    use crate::tlb::Policy;
    use proptest::prelude::*;

    /// A translation of a page (in units of `size`) that tells its frame from its page.
    fn translation(asid: Asid, page: u64, size: PageSize) -> Translation {
        let vpn = page << (size.shift() - BASE_PAGE_SHIFT);
        Translation { asid, vpn: Vpn(vpn), pfn: Pfn(vpn + 7_000_000), size }
    }

    proptest! {
        /// Lookups, fills of what missed and invalidations hit, evict and translate exactly as
        /// a naive LRU list does and as the general `TlbArray` of the same geometry does; the
        /// valid entries are the list's, most recent first.
        #[test]
        fn matches_a_naive_lru_list_and_the_general_array(
            // Narrow arrays, and arrays wider than a set `TlbArray` scans, which it serves
            // through its hash index (the path this array replaces at the GPU's TLBs).
            entries in prop_oneof![1usize..12, 33usize..48],
            large: bool,
            ops in prop::collection::vec((0u8..8, 0u16..3, 0u64..40), 1..500),
        ) {
            let size = if large { PageSize::Size2M } else { PageSize::Size4K };
            let mut array = FullyAssociative::new(entries, size);
            let geometry = ArrayGeometry { entries, ways: entries, policy: Policy::Lru, page_sizes: vec![size] };
            let mut general = TlbArray::new(&geometry, 0);
            let mut naive = NaiveLru { keys: Vec::new(), capacity: entries };
            for (op, asid, page) in ops {
                // Any address of the page.
                let vaddr = (page << size.shift()) + (u64::from(op) * 4097) % size.bytes();
                if op == 7 {
                    let removed = array.invalidate(asid, vaddr);
                    prop_assert_eq!(removed, general.invalidate(asid, vaddr) == 1);
                    let before = naive.keys.len();
                    naive.keys.retain(|&k| k != (asid, page));
                    prop_assert_eq!(removed, naive.keys.len() < before);
                } else {
                    let hit = array.lookup(asid, vaddr);
                    prop_assert_eq!(hit, general.lookup(asid, vaddr));
                    prop_assert_eq!(hit.is_some(), naive.hit((asid, page)));
                    match hit {
                        Some(t) => prop_assert_eq!(t, translation(asid, page, size)),
                        None => {
                            let t = translation(asid, page, size);
                            array.insert_absent(&t);
                            general.insert_absent_quiet(&t);
                            naive.fill((asid, page));
                        }
                    }
                }
                let valid: Vec<(Asid, u64)> = array.valid_translations().map(|t| (t.asid, t.vpn.0 >> (size.shift() - BASE_PAGE_SHIFT))).collect();
                prop_assert_eq!(valid, naive.keys.iter().rev().copied().collect::<Vec<_>>());
                prop_assert_eq!(array.is_empty(), naive.keys.is_empty());
            }
        }
    }
}
