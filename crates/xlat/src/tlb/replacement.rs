//! Replacement policies for set-associative structures, kept apart from the structures that
//! own the entries (as gem5's `ReplacementData`): a TLB array tells the policy which way it
//! touched, filled or invalidated, and asks it for a victim.
//!
//! The policy is chosen at run time; a `match` per call on a small enum is predicted perfectly
//! and costs far less than the tag search it accompanies.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

/// Which replacement policy an array uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Exact least-recently-used.
    Lru,
    /// Tree pseudo-LRU. For a way count that is not a power of two the tree is built over the
    /// next power of two and the walk never descends into a subtree without real ways.
    TreePlru,
    /// First-in first-out: hits do not change the order.
    Fifo,
    /// Uniformly random victim from a seeded generator.
    Random,
}

/// Largest associativity for which LRU and FIFO use stamps rather than lists.
const STAMPS_UP_TO_WAYS: usize = 16;

/// Low bits of a stamp that hold its way number, so that the minimum stamp of a set is the
/// oldest way itself (ties between unused ways go to the lowest way) with no extra work per
/// way. The clock stays far below 2^60, and ways ≤ 16 fit in 4 bits.
const WAY_BITS: u32 = 4;

/// Sentinel for "no way" in the recency lists.
const NIL: u32 = u32::MAX;

/// How a [`ReplacementState`] keeps its metadata. A plain `Copy` tag, so dispatching on it
/// is a compare on a register rather than a match on an enum carrying vectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// LRU up to [`STAMPS_UP_TO_WAYS`] ways: a last-use stamp per way, victim = oldest. A touch
    /// is one store, and scanning a few stamps costs less than relinking a list.
    LruStamps,
    /// FIFO up to [`STAMPS_UP_TO_WAYS`] ways: an insertion stamp per way.
    FifoStamps,
    /// LRU above that: a doubly-linked recency list per set (O(1) at any associativity).
    LruList,
    /// FIFO above that: the same list, reordered only on fills.
    FifoList,
    /// Tree-PLRU: one bit per internal node of a complete binary tree per set.
    Plru,
    /// Random: a seeded generator only.
    Random,
}

/// Per-set replacement metadata for every set of one structure.
#[derive(Clone, Debug)]
pub struct ReplacementState {
    ways: usize,
    mode: Mode,
    stamps: Vec<u64>,
    clock: u64,
    lists: Option<RecencyLists>,
    plru_bits: Vec<bool>,
    plru_leaves: usize,
    rng: Xoshiro256PlusPlus,
}

impl ReplacementState {
    /// Bytes of host memory the state of `sets` sets of `ways` ways takes at most, whatever
    /// the policy: a stamp (8 bytes) or two list links (4 each) per way, or PLRU bits (fewer),
    /// and a list's head and tail per set. For the up-front estimate of a run's memory.
    pub fn host_bytes(sets: u64, ways: u64) -> u64 {
        sets.saturating_mul(ways).saturating_mul(8).saturating_add(sets.saturating_mul(8))
    }

    /// Metadata for `sets` sets of `ways` ways; `seed` drives the random policy.
    pub fn new(policy: Policy, sets: usize, ways: usize, seed: u64) -> ReplacementState {
        let small = ways <= STAMPS_UP_TO_WAYS;
        let mode = match policy {
            Policy::Lru if small => Mode::LruStamps,
            Policy::Fifo if small => Mode::FifoStamps,
            Policy::Lru => Mode::LruList,
            Policy::Fifo => Mode::FifoList,
            Policy::TreePlru => Mode::Plru,
            Policy::Random => Mode::Random,
        };
        let plru_leaves = ways.next_power_of_two().max(2);
        ReplacementState {
            ways,
            mode,
            // Every stamp carries its way number in the low 4 bits (see `WAY_BITS`); an unused
            // or invalidated way holds the bare way number, older than any real stamp.
            stamps: if small { (0..sets * ways).map(|i| (i % ways) as u64).collect() } else { Vec::new() },
            clock: 0,
            lists: matches!(mode, Mode::LruList | Mode::FifoList).then(|| RecencyLists::new(sets, ways)),
            plru_bits: if mode == Mode::Plru { vec![false; sets * plru_leaves] } else { Vec::new() },
            plru_leaves,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        }
    }

    #[inline(always)]
    fn stamp(&mut self, set: usize, way: usize) {
        self.stamp_slot(set * self.ways + way, way);
    }

    /// Stamps the entry at index `slot` (way `way` of its set) as just used, for an array that
    /// computed the slot itself. LRU and FIFO up to 16 ways only: a fill under both, a touch
    /// under LRU.
    #[inline(always)]
    pub(crate) fn stamp_slot(&mut self, slot: usize, way: usize) {
        debug_assert!(self.stamped() && slot % self.ways == way);
        self.clock += 1;
        self.stamps[slot] = self.clock << WAY_BITS | way as u64;
    }

    /// [`ReplacementState::replace`] for a set of `W` ways (`W` equal to this state's ways) in
    /// a stamp mode, whose first slot is `base`: the oldest way, stamped as just filled.
    #[inline(always)]
    pub(crate) fn replace_stamped<const W: usize>(&mut self, base: usize) -> usize {
        debug_assert!(self.stamped() && W == self.ways);
        let way = oldest::<W>(&self.stamps, base);
        self.stamp_slot(base + way, way);
        way
    }

    /// True when this is exact LRU kept as stamps (at most 16 ways).
    pub(crate) fn is_lru_stamps(&self) -> bool {
        self.mode == Mode::LruStamps
    }

    #[inline]
    fn list(&mut self) -> &mut RecencyLists {
        self.lists.as_mut().expect("list modes have lists")
    }

    /// True for the stamp modes (LRU and FIFO up to 16 ways), which the hot paths handle
    /// inline; the others (lists, tree-PLRU, random) are called out of line, so that the
    /// common LRU path stays short. In a stamp mode the victim of a set with a free way is its
    /// first free way.
    #[inline(always)]
    pub fn stamped(&self) -> bool {
        matches!(self.mode, Mode::LruStamps | Mode::FifoStamps)
    }

    /// A lookup hit `way` of `set`.
    #[inline(always)]
    pub fn touch(&mut self, set: usize, way: usize) {
        match self.mode {
            Mode::LruStamps => self.stamp(set, way),
            Mode::FifoStamps => {}
            _ => self.touch_other(set, way),
        }
    }

    #[inline]
    fn touch_other(&mut self, set: usize, way: usize) {
        match self.mode {
            Mode::LruStamps => self.stamp(set, way),
            Mode::LruList => self.list().move_to_head(set, way),
            Mode::Plru => plru_point_away(&mut self.plru_bits, self.plru_leaves, set, way),
            Mode::FifoStamps | Mode::FifoList | Mode::Random => {}
        }
    }

    /// A new entry was written into `way` of `set`.
    #[inline(always)]
    pub fn fill(&mut self, set: usize, way: usize) {
        if self.stamped() {
            self.stamp(set, way);
        } else {
            self.fill_other(set, way);
        }
    }

    #[inline]
    fn fill_other(&mut self, set: usize, way: usize) {
        match self.mode {
            Mode::LruStamps | Mode::FifoStamps => self.stamp(set, way),
            Mode::LruList | Mode::FifoList => self.list().move_to_head(set, way),
            Mode::Plru => plru_point_away(&mut self.plru_bits, self.plru_leaves, set, way),
            Mode::Random => {}
        }
    }

    /// The entry in `way` of `set` was invalidated: it becomes the next victim.
    #[inline]
    pub fn invalidate(&mut self, set: usize, way: usize) {
        match self.mode {
            Mode::LruStamps | Mode::FifoStamps => self.stamps[set * self.ways + way] = way as u64,
            Mode::LruList | Mode::FifoList => self.list().move_to_tail(set, way),
            Mode::Plru | Mode::Random => {}
        }
    }

    /// The way to evict from a full `set`.
    #[inline(always)]
    pub fn victim(&mut self, set: usize) -> usize {
        if self.stamped() {
            self.oldest(set)
        } else {
            self.victim_other(set)
        }
    }

    /// Chooses the victim of a full `set` and records that a new entry was written there: the
    /// same as [`ReplacementState::victim`] then [`ReplacementState::fill`], with one dispatch.
    #[inline(always)]
    pub fn replace(&mut self, set: usize) -> usize {
        if self.stamped() {
            let way = self.oldest(set);
            self.stamp(set, way);
            way
        } else {
            let way = self.victim_other(set);
            self.fill_other(set, way);
            way
        }
    }

    /// The way of `set` with the oldest stamp (stamp modes only).
    #[inline(always)]
    fn oldest(&self, set: usize) -> usize {
        // The common associativities get a constant-length scan, unrolled by the compiler
        // into a chain of conditional moves.
        let base = set * self.ways;
        match self.ways {
            2 => oldest::<2>(&self.stamps, base),
            4 => oldest::<4>(&self.stamps, base),
            8 => oldest::<8>(&self.stamps, base),
            12 => oldest::<12>(&self.stamps, base),
            16 => oldest::<16>(&self.stamps, base),
            ways => oldest_in(&self.stamps[base..base + ways]),
        }
    }

    #[inline]
    fn victim_other(&mut self, set: usize) -> usize {
        match self.mode {
            Mode::LruStamps | Mode::FifoStamps => self.oldest(set),
            Mode::LruList | Mode::FifoList => self.list().tail(set),
            Mode::Plru => plru_follow(&self.plru_bits, self.plru_leaves, self.ways, set),
            Mode::Random => self.rng.random_range(0..self.ways),
        }
    }
}

/// The way with the oldest stamp among the `N` stamps from `base`; ties go to the lowest way.
#[inline(always)]
fn oldest<const N: usize>(stamps: &[u64], base: usize) -> usize {
    let set: &[u64; N] = stamps[base..base + N].try_into().expect("a whole set");
    // A tree of minimums, log2(N) deep, where a scan is a chain N - 1 long: the victim
    // search of a 12-way set waits on 4 compares instead of 11. Stamps are distinct (the
    // way number is in their low bits), so the order of the compares does not matter.
    let mut v = *set;
    let mut n = N;
    while n > 1 {
        let half = n / 2;
        for i in 0..half {
            v[i] = v[i].min(v[n - half + i]);
        }
        n -= half;
    }
    (v[0] & ((1 << WAY_BITS) - 1)) as usize
}

/// The way with the oldest stamp in `stamps` (one set); ties go to the lowest way.
#[inline(always)]
fn oldest_in(stamps: &[u64]) -> usize {
    // Branch-free minimum (conditional moves): a compare-and-jump scan would mispredict on
    // random streams. The way number is in the stamp's low bits.
    let oldest = stamps.iter().copied().min().expect("at least one way");
    (oldest & ((1 << WAY_BITS) - 1)) as usize
}

/// Doubly-linked lists of ways, one per set, stored in flat arrays.
#[derive(Clone, Debug)]
struct RecencyLists {
    ways: usize,
    prev: Vec<u32>,
    next: Vec<u32>,
    head: Vec<u32>,
    tail: Vec<u32>,
}

impl RecencyLists {
    /// Each set starts as the list 0, 1, ..., ways-1 (way 0 at the head).
    fn new(sets: usize, ways: usize) -> RecencyLists {
        let mut prev = vec![NIL; sets * ways];
        let mut next = vec![NIL; sets * ways];
        for s in 0..sets {
            for w in 0..ways {
                let i = s * ways + w;
                if w > 0 {
                    prev[i] = (w - 1) as u32;
                }
                if w + 1 < ways {
                    next[i] = (w + 1) as u32;
                }
            }
        }
        RecencyLists {
            ways,
            prev,
            next,
            head: vec![0; sets],
            tail: vec![(ways - 1) as u32; sets],
        }
    }

    #[inline]
    fn tail(&self, set: usize) -> usize {
        self.tail[set] as usize
    }

    #[inline]
    fn unlink(&mut self, set: usize, way: u32) {
        let base = set * self.ways;
        let (p, n) = (self.prev[base + way as usize], self.next[base + way as usize]);
        match p {
            NIL => self.head[set] = n,
            p => self.next[base + p as usize] = n,
        }
        match n {
            NIL => self.tail[set] = p,
            n => self.prev[base + n as usize] = p,
        }
    }

    #[inline]
    fn move_to_head(&mut self, set: usize, way: usize) {
        let w = way as u32;
        if self.head[set] == w {
            return;
        }
        self.unlink(set, w);
        let base = set * self.ways;
        let old = self.head[set];
        self.prev[base + way] = NIL;
        self.next[base + way] = old;
        self.prev[base + old as usize] = w;
        self.head[set] = w;
    }

    #[inline]
    fn move_to_tail(&mut self, set: usize, way: usize) {
        let w = way as u32;
        if self.tail[set] == w {
            return;
        }
        self.unlink(set, w);
        let base = set * self.ways;
        let old = self.tail[set];
        self.next[base + way] = NIL;
        self.prev[base + way] = old;
        self.next[base + old as usize] = w;
        self.tail[set] = w;
    }
}

/// Sets the bits on the path to `way` so that they point away from it. Node `n` (1-based heap
/// order) has children `2n` and `2n+1`; bit `false` means "the victim is on the left".
#[inline]
fn plru_point_away(bits: &mut [bool], leaves: usize, set: usize, way: usize) {
    let tree = &mut bits[set * leaves..];
    let mut node = 1;
    let mut span = leaves;
    while span > 1 {
        span /= 2;
        let right = way & span != 0;
        tree[node] = !right;
        node = 2 * node + usize::from(right);
    }
}

/// Follows the bits from the root to a victim, refusing subtrees that hold no real way.
#[inline]
fn plru_follow(bits: &[bool], leaves: usize, ways: usize, set: usize) -> usize {
    let tree = &bits[set * leaves..];
    let (mut node, mut way, mut span) = (1, 0, leaves);
    while span > 1 {
        span /= 2;
        let right = tree[node] && way + span < ways;
        if right {
            way += span;
        }
        node = 2 * node + usize::from(right);
    }
    way
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_victim_is_least_recent() {
        let mut r = ReplacementState::new(Policy::Lru, 1, 4, 0);
        for w in [0, 1, 2, 3, 0, 2] {
            r.touch(0, w);
        }
        assert_eq!(r.victim(0), 1);
        r.invalidate(0, 2);
        assert_eq!(r.victim(0), 2);
    }

    #[test]
    fn fifo_ignores_hits() {
        let mut r = ReplacementState::new(Policy::Fifo, 1, 3, 0);
        for w in [0, 1, 2] {
            r.fill(0, w);
        }
        r.touch(0, 0);
        assert_eq!(r.victim(0), 0);
    }

    #[test]
    fn plru_never_picks_missing_way() {
        let mut r = ReplacementState::new(Policy::TreePlru, 2, 3, 0);
        for step in 0..50 {
            let v = r.victim(1);
            assert!(v < 3, "victim {v} at step {step}");
            r.fill(1, v);
        }
    }

    #[test]
    fn plru_single_way() {
        let mut r = ReplacementState::new(Policy::TreePlru, 4, 1, 0);
        r.fill(3, 0);
        assert_eq!(r.victim(3), 0);
    }
}
