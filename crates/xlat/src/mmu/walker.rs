//! A machine's page walker: what its walks read (the page-table entries, by level: EMT's
//! walk lengths), the walk caches that serve part of it ([`super::pwc`]), and the reads left
//! for memory, which a machine that times its walks takes ([`WalkMemory`]).

use super::pwc::{PageWalkCache, PwcSpec};
use super::{Step, WalkRead, WalkSink};
use crate::cache::tags::Lookups;
use crate::types::Asid;
use serde::Serialize;

/// The most levels a driver's walk reads (5-level radix).
pub const MAX_LEVELS: usize = 5;
/// The most reads of a walk: ECPT's probes of three ways of each of three page sizes, and
/// two cuckoo-walk-table lines for each of its two walk caches.
pub const MAX_READS: usize = 16;

/// What a machine's walks read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WalkerStats {
    /// Entries the walks read, by level of the driver's format (0 for the table of 4 KiB
    /// entries; ECPT numbers its probes by page size, 0 for 4 KiB): what the format makes a
    /// walk read.
    pub entries: [u64; MAX_LEVELS],
    /// Those the walk caches did not serve, which went to memory.
    pub memory_reads: [u64; MAX_LEVELS],
    /// Lines the walks fetched into the caches without waiting for them (ECPT's
    /// cuckoo-walk-table lines).
    pub fills: u64,
    /// Lookups of each walk cache, top level first (none without walk caches).
    pub pwc: Vec<Lookups>,
}

/// What takes the reads a walk leaves for memory: a machine's caches and clock.
pub trait WalkMemory {
    /// A walk made `probes` walk-cache lookups and left `reads` (in order) for memory.
    fn walk(&mut self, probes: u32, reads: &[WalkRead]);
}

/// The page walker: the reads of the walk under way, its walk caches and its counts.
#[derive(Clone, Debug)]
pub struct PageWalker {
    /// The reads of the walk under way, in order.
    trace: [WalkRead; MAX_READS],
    len: usize,
    pwc: Option<PageWalkCache>,
    stats: WalkerStats,
}

impl WalkSink for PageWalker {
    #[inline]
    fn read(&mut self, read: WalkRead) {
        self.trace[self.len] = read;
        self.len += 1;
    }
}

impl PageWalker {
    /// A walker with the walk caches of `pwc`, if any; `seed` drives their random policy.
    pub fn new(pwc: Option<&PwcSpec>, seed: u64) -> PageWalker {
        let empty = WalkRead::chain(0, 0);
        PageWalker { trace: [empty; MAX_READS], len: 0, pwc: pwc.map(|spec| PageWalkCache::new(spec, seed)), stats: WalkerStats::default() }
    }

    /// The walk of `vaddr` in `asid` whose reads this walker took ended: counts them, serves
    /// what the walk caches hold and hands the rest to `memory`, if the machine times its
    /// walks. Costs a test for a driver whose walks read nothing.
    #[inline(always)]
    pub fn finish<M: WalkMemory>(&mut self, asid: Asid, vaddr: u64, memory: Option<&mut M>) {
        if self.len != 0 {
            self.account(asid, vaddr, memory);
        }
    }

    #[inline(never)]
    fn account<M: WalkMemory>(&mut self, asid: Asid, vaddr: u64, memory: Option<&mut M>) {
        let reads = &self.trace[..self.len];
        let (served, probes) = self.pwc.as_mut().map_or((0, 0), |pwc| pwc.serve(asid, vaddr, reads));
        if let Some(memory) = memory {
            memory.walk(probes, &reads[served..]);
        }
        for (i, read) in reads.iter().enumerate() {
            let level = usize::from(read.level);
            if read.step == Step::Fill {
                self.stats.fills += 1;
                continue;
            }
            self.stats.entries[level] += 1;
            if i >= served {
                self.stats.memory_reads[level] += 1;
            }
        }
        self.len = 0;
    }

    /// What the walks read so far.
    pub fn stats(&self) -> WalkerStats {
        WalkerStats { pwc: self.pwc.as_ref().map(PageWalkCache::lookups).unwrap_or_default(), ..self.stats.clone() }
    }
}
