//! A hierarchy of caches of physical memory, as EMT's simulator models it for walk and data
//! references (the research sheet: L1I and L1D 32 KiB 8-way, L2 512 KiB 8-way, LLC 16 MiB
//! 16-way, 64-byte lines, LRU).
//!
//! A reference enters at a level (data and instruction fetches at the first, walk reads at
//! the level the machine says: EMT's walks go to the L2), probes each level from there down
//! to the first that holds its line, and costs that level's latency (memory's when none
//! does); every level it probed and missed is filled with the line (no inclusion is kept,
//! nothing is written back: the model times reads). A split level has an instruction side
//! for fetches and a data side for the rest.

use super::tags::{Lookups, TagArray};
use crate::tlb::Policy;
use crate::types::PhysAddr;
use serde::Serialize;

/// One level, validated.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CacheLevelSpec {
    /// Name in results (`L1`, `L2`, `LLC`).
    pub name: String,
    /// Bytes (of each side, for a split level).
    pub size: u64,
    /// Ways, dividing the lines.
    pub ways: usize,
    /// Cycles of a hit.
    pub latency: u32,
    /// Whether the level has an instruction side beside its data side.
    pub split: bool,
    /// Replacement policy.
    pub policy: Policy,
}

/// What kind of reference a cache access is, which decides the side of a split level and
/// the counters it goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A load or store of the program.
    Data,
    /// An instruction fetch.
    Fetch,
    /// A page-table read of a walk.
    Walk,
}

/// Lookups of one level, by kind of reference.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LevelLookups {
    /// The level's name.
    pub level: String,
    /// Loads, stores and fetches.
    pub data: Lookups,
    /// Walk reads.
    pub walk: Lookups,
}

#[derive(Clone, Debug)]
struct Level {
    data: TagArray,
    instr: Option<TagArray>,
    latency: u32,
    walk: Lookups,
}

/// The caches of a machine.
#[derive(Clone, Debug)]
pub struct CacheHierarchy {
    line_shift: u32,
    levels: Vec<Level>,
    names: Vec<String>,
    memory_latency: u32,
}

impl CacheHierarchy {
    /// Empty caches of `levels` (first the closest to the core) of `line`-byte lines (a power
    /// of two), in front of a memory of `memory_bytes` bytes and `memory_latency` cycles (no
    /// address at or above `memory_bytes` is accessed); `seed` drives the random policy.
    pub fn new(levels: &[CacheLevelSpec], line: u64, memory_latency: u32, memory_bytes: u64, seed: u64) -> CacheHierarchy {
        let lines = |l: &CacheLevelSpec| (l.size / line) as usize;
        // Every address is in the machine's memory: line numbers stay below its lines.
        let bound = memory_bytes.div_ceil(line).max(1);
        let build = |i: usize, l: &CacheLevelSpec, side: u64| TagArray::with_bound(lines(l), l.ways, l.policy, seed ^ (i as u64 * 2 + side), bound);
        CacheHierarchy {
            line_shift: line.trailing_zeros(),
            levels: levels
                .iter()
                .enumerate()
                .map(|(i, l)| Level { data: build(i, l, 0), instr: l.split.then(|| build(i, l, 1)), latency: l.latency, walk: Lookups::default() })
                .collect(),
            names: levels.iter().map(|l| l.name.clone()).collect(),
            memory_latency,
        }
    }

    /// A reference of `kind` to `addr` entering at level `from`: its latency in cycles.
    pub fn access(&mut self, addr: PhysAddr, kind: Access, from: usize) -> u32 {
        let line = addr.0 >> self.line_shift;
        for level in &mut self.levels[from..] {
            let array = match (&mut level.instr, kind) {
                (Some(instr), Access::Fetch) => instr,
                _ => &mut level.data,
            };
            let hit = array.access(line);
            if kind == Access::Walk {
                let count = if hit { &mut level.walk.hits } else { &mut level.walk.misses };
                *count += 1;
            }
            if hit {
                return level.latency;
            }
        }
        self.memory_latency
    }

    /// Lookups of every level, first level first: loads, stores and fetches apart from walk
    /// reads.
    pub fn lookups(&self) -> Vec<LevelLookups> {
        self.levels
            .iter()
            .zip(&self.names)
            .map(|(level, name)| {
                let all = [Some(&level.data), level.instr.as_ref()].into_iter().flatten().map(TagArray::lookups);
                let (hits, misses) = all.fold((0, 0), |(h, m), l| (h + l.hits, m + l.misses));
                let data = Lookups { hits: hits - level.walk.hits, misses: misses - level.walk.misses };
                LevelLookups { level: name.clone(), data, walk: level.walk }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn level(name: &str, size: u64, ways: usize, latency: u32, split: bool) -> CacheLevelSpec {
        CacheLevelSpec { name: name.into(), size, ways, latency, split, policy: Policy::Lru }
    }

    /// A naive LRU cache: per set, the lines in order of last use (most recent last).
    struct NaiveCache {
        sets: u64,
        ways: usize,
        content: HashMap<u64, Vec<u64>>,
    }

    impl NaiveCache {
        fn access(&mut self, line: u64) -> bool {
            let set = self.content.entry(line % self.sets).or_default();
            let hit = set.iter().position(|&l| l == line).map(|i| set.remove(i)).is_some();
            if !hit && set.len() == self.ways {
                set.remove(0);
            }
            set.push(line);
            hit
        }
    }

    proptest! {
        /// Latencies agree with naive LRU caches probed from the entry level down, for data,
        /// fetches and walk reads mixed.
        #[test]
        fn agrees_with_naive_caches(refs in proptest::collection::vec((0u64..4096, 0u8..3), 1..600)) {
            let specs = [level("L1", 512, 2, 2, true), level("L2", 2048, 4, 16, false), level("LLC", 8192, 8, 56, false)];
            let mut caches = CacheHierarchy::new(&specs, 64, 180, 1 << 40, 1);
            let naive = |s: &CacheLevelSpec| NaiveCache { sets: s.size / 64 / s.ways as u64, ways: s.ways, content: HashMap::new() };
            let (mut l1i, mut l1d, mut l2, mut llc) = (naive(&specs[0]), naive(&specs[0]), naive(&specs[1]), naive(&specs[2]));
            for (addr, kind) in refs {
                let line = addr * 16 / 64;
                let kind = [Access::Data, Access::Fetch, Access::Walk][usize::from(kind)];
                let expected = match kind {
                    Access::Walk => None,
                    Access::Fetch => l1i.access(line).then_some(2),
                    Access::Data => l1d.access(line).then_some(2),
                }
                .or_else(|| l2.access(line).then_some(16))
                .or_else(|| llc.access(line).then_some(56))
                .unwrap_or(180);
                let from = if kind == Access::Walk { 1 } else { 0 };
                prop_assert_eq!(caches.access(PhysAddr(addr * 16), kind, from), expected);
            }
        }
    }

    #[test]
    fn walk_reads_are_counted_apart() {
        let mut caches = CacheHierarchy::new(&[level("L1", 512, 2, 2, false), level("L2", 2048, 4, 16, false)], 64, 180, 1 << 40, 1);
        assert_eq!(caches.access(PhysAddr(0x1000), Access::Walk, 1), 180);
        assert_eq!(caches.access(PhysAddr(0x1008), Access::Walk, 1), 16);
        assert_eq!(caches.access(PhysAddr(0x1010), Access::Data, 0), 16, "the L1 never saw the walk's line");
        assert_eq!(caches.access(PhysAddr(0x1018), Access::Data, 0), 2);
        let lookups = caches.lookups();
        assert_eq!((lookups[0].data, lookups[0].walk), (Lookups { hits: 1, misses: 1 }, Lookups::default()));
        assert_eq!((lookups[1].data, lookups[1].walk), (Lookups { hits: 1, misses: 0 }, Lookups { hits: 1, misses: 1 }));
    }
}
