//! A set-associative array of tags: the structure of a page-walk cache (tags are the virtual
//! address bits an entry covers) and of a data cache (tags are line addresses). It holds no
//! data, only which tags are present; replacement state is apart ([`ReplacementState`]), so
//! every policy the TLBs have serves it.
//!
//! Set index = tag modulo the number of sets. A fill takes the lowest-numbered invalid way
//! of its set, else the policy's victim (as TLB arrays do); under LRU, ways are kept in
//! order of use instead (see `TagArray::repl`), which hits and misses alike.

use crate::tlb::replacement::{Policy, ReplacementState};

/// A tag no entry has: invalid ways hold it.
const EMPTY: u64 = u64::MAX;

/// Hits and misses of lookups.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Lookups {
    /// Lookups that found their tag.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
}

/// Tags in sets of ways.
#[derive(Clone, Debug)]
pub struct TagArray {
    sets: usize,
    /// `sets - 1` when the number of sets is a power of two (the set is then the tag's low
    /// bits, without a division), else 0.
    mask: u64,
    ways: usize,
    tags: Vec<u64>,
    /// Replacement state of the policies other than LRU; `None` for LRU, which keeps each
    /// set's tags in order of last use, most recent first: a hit moves its tag to the front,
    /// a fill shifts the set down one and puts the new tag first, the last (the least recent,
    /// or an invalid way while the set is not full) dropping out. Exact LRU with no state
    /// beside the tags: a probe of a large cache (a simulated LLC's megabytes of tags) reads
    /// one place in host memory, not two.
    repl: Option<ReplacementState>,
    lookups: Lookups,
}

impl TagArray {
    /// An empty array of `entries` tags in sets of `ways` (which divides `entries`), replaced
    /// by `policy`; `seed` drives the random policy.
    pub fn new(entries: usize, ways: usize, policy: Policy, seed: u64) -> TagArray {
        assert!(ways > 0 && entries % ways == 0, "{ways} ways do not divide {entries} entries");
        let sets = entries / ways;
        let mask = if sets.is_power_of_two() { sets as u64 - 1 } else { 0 };
        let repl = (policy != Policy::Lru).then(|| ReplacementState::new(policy, sets, ways, seed));
        TagArray { sets, mask, ways, tags: vec![EMPTY; entries], repl, lookups: Lookups::default() }
    }

    /// The set of `tag`.
    #[inline]
    fn set_of(&self, tag: u64) -> usize {
        if self.mask != 0 || self.sets == 1 {
            (tag & self.mask) as usize
        } else {
            (tag % self.sets as u64) as usize
        }
    }

    /// The set of `tag` and the way holding it, if any.
    #[inline]
    fn find(&self, tag: u64) -> (usize, Option<usize>) {
        let set = self.set_of(tag);
        let ways = &self.tags[set * self.ways..(set + 1) * self.ways];
        (set, ways.iter().position(|&t| t == tag))
    }

    /// Looks `tag` up, counting the outcome: true on a hit, which updates the replacement
    /// state as a use.
    pub fn lookup(&mut self, tag: u64) -> bool {
        self.probe(tag).is_ok()
    }

    /// [`TagArray::lookup`], giving on a miss the set of `tag`.
    #[inline]
    fn probe(&mut self, tag: u64) -> Result<(), usize> {
        debug_assert_ne!(tag, EMPTY, "a tag of all ones");
        match self.find(tag) {
            (set, Some(way)) => {
                match &mut self.repl {
                    None => self.tags[set * self.ways..=set * self.ways + way].rotate_right(1),
                    Some(repl) => repl.touch(set, way),
                }
                self.lookups.hits += 1;
                Ok(())
            }
            (set, None) => {
                self.lookups.misses += 1;
                Err(set)
            }
        }
    }

    /// Inserts `tag`, which a lookup just missed: into the set's first invalid way, else in
    /// place of the policy's victim.
    pub fn insert(&mut self, tag: u64) {
        debug_assert!(self.find(tag).1.is_none(), "insertion of a present tag");
        self.insert_in(self.set_of(tag), tag);
    }

    /// [`TagArray::insert`] of `tag` into `set`, its set.
    #[inline]
    fn insert_in(&mut self, set: usize, tag: u64) {
        let base = set * self.ways;
        let Some(repl) = &mut self.repl else {
            let ways = &mut self.tags[base..base + self.ways];
            ways.rotate_right(1);
            ways[0] = tag;
            return;
        };
        match self.tags[base..base + self.ways].iter().position(|&t| t == EMPTY) {
            Some(way) => {
                self.tags[base + way] = tag;
                repl.fill(set, way);
            }
            None => {
                let way = repl.replace(set);
                self.tags[base + way] = tag;
            }
        }
    }

    /// [`TagArray::lookup`], and on a miss [`TagArray::insert`]: true on a hit. The set is
    /// found once.
    pub fn access(&mut self, tag: u64) -> bool {
        match self.probe(tag) {
            Ok(()) => true,
            Err(set) => {
                self.insert_in(set, tag);
                false
            }
        }
    }

    /// The lookups so far.
    pub fn lookups(&self) -> Lookups {
        self.lookups
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A naive array: each set a list of (tag, last use, insertion) with linear scans; LRU
    /// evicts the least recently used, FIFO the earliest inserted; a set not full takes a new
    /// tag without evicting.
    struct Naive {
        sets: usize,
        ways: usize,
        lru: bool,
        content: Vec<Vec<(u64, u64, u64)>>,
        clock: u64,
    }

    impl Naive {
        fn access(&mut self, tag: u64) -> bool {
            self.clock += 1;
            let set = &mut self.content[(tag % self.sets as u64) as usize];
            if let Some(entry) = set.iter_mut().find(|e| e.0 == tag) {
                entry.1 = self.clock;
                return true;
            }
            if set.len() == self.ways {
                let lru = self.lru;
                let victim = (0..set.len()).min_by_key(|&i| if lru { set[i].1 } else { set[i].2 }).expect("a full set");
                set.remove(victim);
            }
            set.push((tag, self.clock, self.clock));
            false
        }
    }

    proptest! {
        /// Hits and misses agree with the naive array, access by access, under LRU and FIFO.
        #[test]
        fn agrees_with_a_naive_array(
            (sets, ways) in (1usize..5, 1usize..9),
            lru in any::<bool>(),
            tags in proptest::collection::vec(0u64..40, 1..500),
        ) {
            let policy = if lru { Policy::Lru } else { Policy::Fifo };
            let mut array = TagArray::new(sets * ways, ways, policy, 1);
            let mut naive = Naive { sets, ways, lru, content: vec![Vec::new(); sets], clock: 0 };
            for (i, &tag) in tags.iter().enumerate() {
                prop_assert_eq!(array.access(tag), naive.access(tag), "access {} of tag {}", i, tag);
            }
            let hits = tags.len() as u64 - array.lookups().misses;
            prop_assert_eq!(array.lookups().hits, hits);
        }
    }
}
