//! Fully associative frame allocation: any page may use any frame.
//!
//! Random placement draws uniformly from the free frames with a sparse Fisher-Yates shuffle:
//! the free frames are conceptually the array `0..free`, and only the positions that were
//! swapped away from their identity are stored, so memory grows with allocations, not with the
//! size of physical memory (a 1 TiB machine costs nothing until it is used).

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rustc_hash::{FxHashMap, FxHashSet};

/// A fully associative allocator with random or sequential placement.
pub struct FullyAssociative {
    /// Random placement when true, sequential when false.
    random: bool,
    capacity: u64,
    /// Number of free frames; free frames are positions `0..free` of the virtual array.
    free: u64,
    /// Positions of the virtual array whose content differs from the identity.
    moved: FxHashMap<u64, u64>,
    /// Sequential: next never-used frame.
    next: u64,
    /// Sequential: freed frames, reused last-freed first.
    recycled: Vec<u64>,
    /// Free frames taken by other means ([`FullyAssociative::reserve`]), skipped when drawn.
    reserved: FxHashSet<u64>,
    rng: Xoshiro256PlusPlus,
}

impl FullyAssociative {
    /// An allocator over `capacity` frames, all free.
    pub fn new(random: bool, capacity: u64, seed: u64) -> FullyAssociative {
        FullyAssociative {
            random,
            capacity,
            free: capacity,
            moved: FxHashMap::default(),
            next: 0,
            recycled: Vec::new(),
            reserved: FxHashSet::default(),
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        }
    }

    fn at(&self, pos: u64) -> u64 {
        self.moved.get(&pos).copied().unwrap_or(pos)
    }

    fn draw_random(&mut self) -> u64 {
        let pos = self.rng.random_range(0..self.free);
        let frame = self.at(pos);
        let last = self.at(self.free - 1);
        self.free -= 1;
        if pos != self.free {
            self.moved.insert(pos, last);
        }
        self.moved.remove(&self.free);
        frame
    }
}

impl FullyAssociative {
    /// A free frame, or `None` when every frame is in use.
    pub fn allocate(&mut self) -> Option<u64> {
        loop {
            let frame = self.draw()?;
            // A reserved frame leaves the pool here, where it is found (tested only when
            // some frame is reserved: the common case pays no hash).
            if self.reserved.is_empty() || !self.reserved.remove(&frame) {
                return Some(frame);
            }
        }
    }

    /// The next frame of the pool, reserved or not.
    fn draw(&mut self) -> Option<u64> {
        if self.free == 0 {
            return None;
        }
        if self.random {
            return Some(self.draw_random());
        }
        self.free -= 1;
        Some(self.recycled.pop().unwrap_or_else(|| {
            self.next += 1;
            self.next - 1
        }))
    }

    /// Takes free `frame` out of use by the allocator (a block of page table placed by
    /// address): it stays in the pool, unseen, until drawn and skipped or freed.
    pub fn reserve(&mut self, frame: u64) {
        self.reserved.insert(frame);
    }

    /// Returns `frame` to the free pool.
    pub fn free(&mut self, frame: u64) {
        debug_assert!(frame < self.capacity);
        if !self.reserved.is_empty() && self.reserved.remove(&frame) {
            // Never drawn: still in the pool.
            return;
        }
        if !self.random {
            self.recycled.push(frame);
        } else if frame != self.free {
            self.moved.insert(self.free, frame);
        }
        self.free += 1;
    }

    /// Frames currently allocated (reserved ones included).
    pub fn used(&self) -> u64 {
        self.capacity - self.free + self.reserved.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        /// Allocations are distinct, in range, and exhaust exactly the capacity, whatever the
        /// interleaving of frees.
        #[test]
        fn never_hands_out_a_frame_twice(
            capacity in 1u64..200,
            ops in proptest::collection::vec(any::<bool>(), 0..600),
            seed in any::<u64>(),
            random in any::<bool>(),
        ) {
            let mut a = FullyAssociative::new(random, capacity, seed);
            let mut held = BTreeSet::new();
            for (i, alloc) in ops.into_iter().enumerate() {
                if alloc || held.is_empty() {
                    match a.allocate() {
                        Some(f) => {
                            prop_assert!(f < capacity);
                            prop_assert!(held.insert(f), "frame {} handed out twice", f);
                        }
                        None => prop_assert_eq!(held.len() as u64, capacity),
                    }
                } else {
                    let f = *held.iter().nth(i % held.len()).unwrap();
                    held.remove(&f);
                    a.free(f);
                }
                prop_assert_eq!(a.used(), held.len() as u64);
            }
        }
    }

    proptest! {
        /// Reserved frames are never handed out, count as used, and come back when freed.
        #[test]
        fn reserved_frames_are_skipped(capacity in 1u64..300, reserved in proptest::collection::btree_set(0u64..300, 0..50), seed in any::<u64>(), random in any::<bool>()) {
            let mut a = FullyAssociative::new(random, capacity, seed);
            let reserved: BTreeSet<u64> = reserved.into_iter().filter(|&f| f < capacity).collect();
            for &f in &reserved {
                a.reserve(f);
            }
            prop_assert_eq!(a.used(), reserved.len() as u64);
            let mut got = BTreeSet::new();
            while let Some(f) = a.allocate() {
                prop_assert!(!reserved.contains(&f) && got.insert(f));
            }
            prop_assert_eq!(got.len() as u64 + reserved.len() as u64, capacity);
            prop_assert_eq!(a.used(), capacity);
            for &f in &reserved {
                a.free(f);
            }
            prop_assert_eq!(a.used(), got.len() as u64);
            let mut again = BTreeSet::new();
            while let Some(f) = a.allocate() {
                again.insert(f);
            }
            prop_assert_eq!(again, reserved);
        }
    }

    #[test]
    fn sequential_is_in_order() {
        let mut a = FullyAssociative::new(false, 4, 0);
        let got: Vec<_> = (0..4).map(|_| a.allocate().unwrap()).collect();
        assert_eq!(got, vec![0, 1, 2, 3]);
        assert_eq!(a.allocate(), None);
    }

    #[test]
    fn random_is_seeded() {
        let draw = |seed| {
            let mut a = FullyAssociative::new(true, 1 << 30, seed);
            (0..5).map(|_| a.allocate().unwrap()).collect::<Vec<_>>()
        };
        assert_eq!(draw(3), draw(3));
        assert_ne!(draw(3), draw(4));
    }
}
