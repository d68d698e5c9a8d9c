//! A set-associative array of tags: the structure of a page-walk cache (tags are the virtual
//! address bits an entry covers) and of a data cache (tags are line addresses). It holds no
//! data, only which tags are present; replacement state is apart ([`ReplacementState`]), so
//! every policy the TLBs have serves it.
//!
//! Set index = tag modulo the number of sets. A fill takes the lowest-numbered invalid way
//! of its set, else the policy's victim (as TLB arrays do); under LRU, ways are kept in
//! order of use instead (see `TagArray::repl`), which hits and misses alike.

use crate::tlb::replacement::{Policy, ReplacementState};

/// A stored tag: 64 bits (any tag), or 32 (a tag's part above its set index, when the array
/// knows its tags stay below a bound that fits).
trait Stored: Copy + PartialEq {
    /// What invalid ways hold, which no tag has.
    const EMPTY: Self;

    /// The stored form of `tag` in an array of `set_bits` set-index bits.
    fn stored(tag: u64, set_bits: u32) -> Self;

    /// The tags of `tags`, when they are stored in this width.
    fn of(tags: &mut Tags) -> Option<&mut Vec<Self>>;
}

impl Stored for u64 {
    const EMPTY: u64 = u64::MAX;

    #[inline(always)]
    fn stored(tag: u64, _set_bits: u32) -> u64 {
        tag
    }

    #[inline(always)]
    fn of(tags: &mut Tags) -> Option<&mut Vec<u64>> {
        match tags {
            Tags::Wide(tags) => Some(tags),
            Tags::Narrow(_) => None,
        }
    }
}

impl Stored for u32 {
    const EMPTY: u32 = u32::MAX;

    #[inline(always)]
    fn stored(tag: u64, set_bits: u32) -> u32 {
        (tag >> set_bits) as u32
    }

    #[inline(always)]
    fn of(tags: &mut Tags) -> Option<&mut Vec<u32>> {
        match tags {
            Tags::Narrow(tags) => Some(tags),
            Tags::Wide(_) => None,
        }
    }
}

/// The first invalid way of `ways`, if any.
fn first_empty<T: Stored>(ways: &[T]) -> Option<usize> {
    ways.iter().position(|&t| t == T::EMPTY)
}

/// The way of `ways` holding `key`, if any.
#[inline(always)]
fn position<T: Stored>(ways: &[T], key: T) -> Option<usize> {
    match ways.len() {
        4 => position_of::<T, 4>(ways, key),
        8 => position_of::<T, 8>(ways, key),
        16 => position_of::<T, 16>(ways, key),
        _ => ways.iter().position(|&t| t == key),
    }
}

/// [`position`] for `W` ways, without a branch per way: the way a probe hits is random, so
/// an early exit mispredicts; all `W` compares are made, into a bit mask.
#[inline(always)]
fn position_of<T: Stored, const W: usize>(ways: &[T], key: T) -> Option<usize> {
    let ways: &[T; W] = ways.try_into().expect("a set of W ways");
    position_in(ways, key)
}

/// [`position_of`] in a set of known length.
#[inline(always)]
fn position_in<T: Stored, const W: usize>(ways: &[T; W], key: T) -> Option<usize> {
    let hits = ways.iter().enumerate().fold(0u32, |hits, (i, &t)| hits | u32::from(t == key) << i);
    (hits != 0).then(|| hits.trailing_zeros() as usize)
}

/// An access of `key` to `ways`, an LRU set in order of use: true on a hit, which moves
/// `key` to the front; a miss puts it there, shifting the set down one (the last way, the
/// least recent or an invalid one, drops out). The set's shape is told apart once, not at
/// each step.
#[inline(always)]
fn lru_access<T: Stored>(ways: &mut [T], key: T) -> bool {
    match ways.len() {
        4 => lru_access_of::<T, 4>(ways, key),
        8 => lru_access_of::<T, 8>(ways, key),
        16 => lru_access_of::<T, 16>(ways, key),
        _ => match ways.iter().position(|&t| t == key) {
            Some(way) => {
                ways[..=way].rotate_right(1);
                true
            }
            None => {
                ways.rotate_right(1);
                ways[0] = key;
                false
            }
        },
    }
}

/// [`lru_access`] for `W` ways.
#[inline(always)]
fn lru_access_of<T: Stored, const W: usize>(ways: &mut [T], key: T) -> bool {
    let ways: &mut [T; W] = ways.try_into().expect("a set of W ways");
    match position_of::<T, W>(ways, key) {
        Some(way) => {
            to_front_of(ways, way);
            true
        }
        None => {
            push_front_of(ways, key);
            false
        }
    }
}

/// Moves way `way` of `ways` to the front, shifting the ways before it down one: a select
/// over the whole set, where a rotation of `way + 1` ways calls `memmove`.
#[inline(always)]
fn to_front_of<T: Stored, const W: usize>(ways: &mut [T; W], way: usize) {
    let old = *ways;
    for i in 1..W {
        ways[i] = if i <= way { old[i - 1] } else { old[i] };
    }
    ways[0] = old[way];
}

/// Puts `key` at the front of `ways`, shifting them all down one (the last drops out): a
/// move of known length, without a call.
#[inline(always)]
fn push_front_of<T: Stored, const W: usize>(ways: &mut [T; W], key: T) {
    ways.copy_within(..W - 1, 1);
    ways[0] = key;
}

/// The tags of every set, ways of a set adjacent.
#[derive(Clone, Debug)]
enum Tags {
    /// Whole tags.
    Wide(Vec<u64>),
    /// Each tag's bits above the set index, in half the host memory: a simulated LLC's
    /// probe then reads one host cache line of a 16-way set, not two.
    Narrow(Vec<u32>),
}

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
    /// log2 of the number of sets when it is a power of two: the bits a narrow tag drops.
    set_bits: u32,
    ways: usize,
    tags: Tags,
    /// Replacement state of the policies other than LRU; `None` for LRU, which keeps each
    /// set's tags in order of last use, most recent first: a hit moves its tag to the front,
    /// a fill shifts the set down one and puts the new tag first, the last (the least recent,
    /// or an invalid way while the set is not full) dropping out. Exact LRU with no state
    /// beside the tags: a probe of a large cache (a simulated LLC's megabytes of tags) reads
    /// one place in host memory, not two.
    repl: Option<ReplacementState>,
    /// [`TagArray::access`] of this array's shape: a path of its own for the common shapes
    /// (LRU, a power-of-two number of sets, 4, 8 or 16 ways, tags of either width), which does
    /// only the arithmetic its shape needs; the general path otherwise. Chosen once: the
    /// general path's tests of policy, set count, tag width and ways, at every access, cost
    /// a third of a probe of a 16-way set.
    access: fn(&mut TagArray, u64) -> bool,
    lookups: Lookups,
}

/// Runs `$body` with `$ways` the stored tags of `$self` and `$key` the stored form of `$tag`.
macro_rules! with_tags {
    ($self:ident, $tag:expr, |$ways:ident, $key:ident| $body:expr) => {
        match &mut $self.tags {
            Tags::Wide($ways) => {
                let $key: u64 = $tag;
                $body
            }
            Tags::Narrow($ways) => {
                let $key = ($tag >> $self.set_bits) as u32;
                $body
            }
        }
    };
}

impl TagArray {
    /// Bytes of host memory an array of `entries` tags in sets of `ways` replaced by `policy`
    /// takes at most: a whole tag (8 bytes) per entry, and the replacement state of the
    /// policies other than LRU (which keeps its sets in order instead).
    pub fn host_bytes(entries: u64, ways: u64, policy: Policy) -> u64 {
        let sets = entries / ways.max(1);
        let repl = if policy == Policy::Lru { 0 } else { ReplacementState::host_bytes(sets, ways) };
        entries.saturating_mul(8).saturating_add(repl)
    }

    /// An empty array of `entries` tags in sets of `ways` (which divides `entries`), replaced
    /// by `policy`; `seed` drives the random policy.
    pub fn new(entries: usize, ways: usize, policy: Policy, seed: u64) -> TagArray {
        TagArray::with_bound(entries, ways, policy, seed, u64::MAX)
    }

    /// [`TagArray::new`] for tags known to be below `bound`: stored in 32 bits when their
    /// part above the set index fits (a power-of-two number of sets).
    pub fn with_bound(entries: usize, ways: usize, policy: Policy, seed: u64, bound: u64) -> TagArray {
        assert!(ways > 0 && entries % ways == 0, "{ways} ways do not divide {entries} entries");
        let sets = entries / ways;
        let mask = if sets.is_power_of_two() { sets as u64 - 1 } else { 0 };
        let set_bits = sets.trailing_zeros();
        let narrow = sets.is_power_of_two() && (bound - 1) >> set_bits < u64::from(u32::MAX);
        let tags = if narrow { Tags::Narrow(vec![u32::EMPTY; entries]) } else { Tags::Wide(vec![u64::EMPTY; entries]) };
        let repl = (policy != Policy::Lru).then(|| ReplacementState::new(policy, sets, ways, seed));
        let access = match (policy == Policy::Lru && sets.is_power_of_two(), narrow, ways) {
            (true, true, 4) => access_lru::<u32, 4>,
            (true, true, 8) => access_lru::<u32, 8>,
            (true, true, 16) => access_lru::<u32, 16>,
            (true, false, 4) => access_lru::<u64, 4>,
            (true, false, 8) => access_lru::<u64, 8>,
            (true, false, 16) => access_lru::<u64, 16>,
            _ => TagArray::access_general,
        };
        TagArray { sets, mask, set_bits, ways, tags, repl, access, lookups: Lookups::default() }
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
    fn find(&mut self, tag: u64) -> (usize, Option<usize>) {
        let set = self.set_of(tag);
        let range = set * self.ways..(set + 1) * self.ways;
        (set, with_tags!(self, tag, |tags, key| position(&tags[range], key)))
    }

    /// Looks `tag` up, counting the outcome, and on a miss of an LRU array inserts it (see
    /// `TagArray::repl`); gives on a miss the set of `tag`, which other policies fill with
    /// [`TagArray::insert_in`]. A hit updates the replacement state as a use.
    #[inline]
    fn probe(&mut self, tag: u64) -> Result<(), usize> {
        self.debug_check(tag);
        let hit = if self.repl.is_none() {
            let set = self.set_of(tag);
            let range = set * self.ways..(set + 1) * self.ways;
            if with_tags!(self, tag, |tags, key| lru_access(&mut tags[range], key)) {
                Ok(())
            } else {
                Err(set)
            }
        } else {
            self.probe_policy(tag)
        };
        self.count(hit.is_ok());
        hit
    }

    /// Checks, in debug builds, that `tag` can be stored: not the invalid mark, and below
    /// the bound of a narrow array.
    #[inline(always)]
    fn debug_check(&self, tag: u64) {
        debug_assert_ne!(tag, u64::EMPTY, "a tag of all ones");
        debug_assert!(matches!(self.tags, Tags::Wide(_)) || tag >> self.set_bits < u64::from(u32::MAX), "tag {tag:#x} above the array's bound");
    }

    /// Counts a lookup that hit or missed.
    #[inline(always)]
    fn count(&mut self, hit: bool) {
        if hit {
            self.lookups.hits += 1;
        } else {
            self.lookups.misses += 1;
        }
    }

    /// [`TagArray::probe`] of an array under a policy other than LRU, without counting it.
    fn probe_policy(&mut self, tag: u64) -> Result<(), usize> {
        let (set, way) = self.find(tag);
        let repl = self.repl.as_mut().expect("a policy other than LRU");
        repl.touch(set, way.ok_or(set)?);
        Ok(())
    }

    /// Inserts `tag`, which a probe of an array under a policy other than LRU just missed,
    /// into `set`, its set: into the set's first invalid way, else in place of the policy's
    /// victim.
    #[inline]
    fn insert_in(&mut self, set: usize, tag: u64) {
        let range = set * self.ways..(set + 1) * self.ways;
        let empty = with_tags!(self, tag, |tags, _key| first_empty(&tags[range.clone()]));
        let repl = self.repl.as_mut().expect("a policy other than LRU");
        let way = match empty {
            Some(way) => {
                repl.fill(set, way);
                way
            }
            None => repl.replace(set),
        };
        with_tags!(self, tag, |tags, key| tags[range.start + way] = key);
    }

    /// Looks `tag` up and on a miss inserts it, counting the outcome: true on a hit, which
    /// updates the replacement state as a use. The set is found once.
    #[inline]
    pub fn access(&mut self, tag: u64) -> bool {
        (self.access)(self, tag)
    }

    /// [`TagArray::access`] of any shape.
    fn access_general(&mut self, tag: u64) -> bool {
        match self.probe(tag) {
            Ok(()) => true,
            Err(set) => {
                if self.repl.is_some() {
                    self.insert_in(set, tag);
                }
                false
            }
        }
    }

    /// The lookups so far.
    pub fn lookups(&self) -> Lookups {
        self.lookups
    }
}

/// [`TagArray::access`] of an LRU array of a power-of-two number of sets of `W` ways whose
/// tags are stored as `T`.
fn access_lru<T: Stored, const W: usize>(array: &mut TagArray, tag: u64) -> bool {
    array.debug_check(tag);
    let base = (tag & array.mask) as usize * W;
    let key = T::stored(tag, array.set_bits);
    let tags = T::of(&mut array.tags).expect("tags of the width the array was built with");
    let hit = lru_access_of::<T, W>(&mut tags[base..base + W], key);
    array.count(hit);
    hit
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
        /// Hits and misses agree with the naive array, access by access, under LRU and FIFO,
        /// with tags whole or narrow (their bits above the set index, for tags below a bound:
        /// the last of them is the largest the bound allows).
        #[test]
        fn agrees_with_a_naive_array(
            (sets, ways) in (1usize..5, prop_oneof![1usize..9, Just(16usize)]),
            lru in any::<bool>(),
            tags in proptest::collection::vec(0u64..40, 1..500),
            narrow in any::<bool>(),
        ) {
            let policy = if lru { Policy::Lru } else { Policy::Fifo };
            let bound = if narrow { 41 } else { u64::MAX };
            let mut array = TagArray::with_bound(sets * ways, ways, policy, 1, bound);
            let tags: Vec<u64> = tags.into_iter().chain([40]).collect();
            let mut naive = Naive { sets, ways, lru, content: vec![Vec::new(); sets], clock: 0 };
            let mut hits = 0;
            for (i, &tag) in tags.iter().enumerate() {
                let hit = naive.access(tag);
                prop_assert_eq!(array.access(tag), hit, "access {} of tag {}", i, tag);
                hits += u64::from(hit);
            }
            prop_assert_eq!(array.lookups(), Lookups { hits, misses: tags.len() as u64 - hits });
        }
    }

    #[test]
    fn tags_are_narrow_only_when_every_tag_below_the_bound_fits() {
        let narrow = |sets: usize, bound: u64| matches!(TagArray::with_bound(sets * 4, 4, Policy::Lru, 1, bound).tags, Tags::Narrow(_));
        // 2^14 sets: tags up to 2^46 - 1 leave 32 bits above the set index, one value short of
        // the invalid mark; one more bit does not fit.
        assert!(narrow(1 << 14, (1 << 46) - (1 << 14)));
        assert!(!narrow(1 << 14, (1 << 46) + 1));
        assert!(!narrow(3, 100), "a set count that is not a power of two keeps whole tags");
        assert!(!narrow(4, u64::MAX));
    }
}
