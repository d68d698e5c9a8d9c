//! Where a timed machine's data accesses and walk reads go: its cycle model ([`Timing`]) at
//! once, or a log that a second core replays into the model one batch behind
//! ([`SecondCore::Timing`](super::loop_path::SecondCore::Timing)).
//!
//! Nothing the rest of the machine does depends on the cycle model: its caches only count
//! and add up latencies, and are read when statistics are. The model's work (a data access
//! probing up to three cache levels every reference, each walk read two more) is then
//! independent of the rest and a second core can take it, given the accesses in order. They
//! are logged one word each: an address shifted left by three bits, with what it is in the
//! three bits (a load or store, a fetch, a walk read of each [`Step`]), and a walk's reads
//! behind one header word with its walk-cache probes and read count.

use super::timing::Timing;
use crate::cache::hierarchy::Access;
use crate::memref::AccessKind;
use crate::mmu::walker::{WalkMemory, MAX_READS};
use crate::mmu::{Step, WalkRead};
use crate::types::PhysAddr;

/// The low bits of a log word that say what it is.
const WHAT_BITS: u32 = 3;
const DATA: u64 = 0;
const FETCH: u64 = 1;
const WALK: u64 = 2;
const CHAIN: u64 = 3;
const PROBE: u64 = 4;
const FILL: u64 = 5;

/// The accesses of a batch of a timed machine, in order, for the model to replay (see the
/// module documentation for the words).
#[derive(Clone, Debug, Default)]
pub(super) struct TimingLog(Vec<u64>);

impl TimingLog {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// A word for `addr` marked `what`. Physical addresses are below the machine's memory,
    /// far below 2^61.
    #[inline(always)]
    fn push(&mut self, addr: PhysAddr, what: u64) {
        debug_assert!(addr.0 >> (64 - WHAT_BITS) == 0, "physical address {:#x} above 2^61", addr.0);
        self.0.push(addr.0 << WHAT_BITS | what);
    }
}

/// A timed machine's cycle model, or the log of a batch a second core replays into it.
#[derive(Clone, Debug)]
pub(super) enum Clock {
    /// The model, counting as the machine simulates.
    Model(Timing),
    /// The log of the batch under way; the model is on the second core.
    Log(TimingLog),
}

impl Clock {
    /// A `kind` access to `addr` by a reference (one page of it).
    #[inline(always)]
    pub fn reference(&mut self, addr: PhysAddr, kind: AccessKind) {
        match self {
            Clock::Model(timing) => timing.reference(addr, kind),
            Clock::Log(log) => log.push(addr, if kind == AccessKind::IFetch { FETCH } else { DATA }),
        }
    }
}

impl WalkMemory for Clock {
    fn walk(&mut self, probes: u32, reads: &[WalkRead]) {
        let log = match self {
            Clock::Model(timing) => return timing.walk(probes, reads),
            Clock::Log(log) => log,
        };
        log.0.push(u64::from(probes) << 16 | (reads.len() as u64) << WHAT_BITS | WALK);
        for read in reads {
            let what = match read.step {
                Step::Chain => CHAIN,
                Step::Probe => PROBE,
                Step::Fill => FILL,
            };
            log.push(read.addr, what);
        }
    }
}

impl Timing {
    /// Counts the accesses of `log` as if they had come one by one.
    pub(super) fn replay(&mut self, log: &TimingLog) {
        let mut words = log.0.iter();
        let empty = WalkRead::chain(0, 0);
        let mut reads = [empty; MAX_READS];
        while let Some(&word) = words.next() {
            let addr = PhysAddr(word >> WHAT_BITS);
            match word & ((1 << WHAT_BITS) - 1) {
                DATA => self.access(addr, Access::Data),
                FETCH => self.access(addr, Access::Fetch),
                WALK => {
                    let n = (word >> WHAT_BITS & 0x1fff) as usize;
                    for (read, &word) in reads.iter_mut().zip(words.by_ref().take(n)) {
                        *read = WalkRead { level: 0, addr: PhysAddr(word >> WHAT_BITS), step: step_of(word) };
                    }
                    self.walk((word >> 16) as u32, &reads[..n]);
                }
                other => unreachable!("a walk read ({other}) outside a walk"),
            }
        }
    }
}

/// The step of a logged walk read.
fn step_of(word: u64) -> Step {
    match word & ((1 << WHAT_BITS) - 1) {
        CHAIN => Step::Chain,
        PROBE => Step::Probe,
        FILL => Step::Fill,
        other => unreachable!("a log word of kind {other} among a walk's reads"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::timing::TimingSpec;
    use super::*;

    /// Accesses and walks of every kind, logged and replayed, count as they do one by one.
    #[test]
    fn a_replayed_log_counts_as_the_accesses_did() {
        let mut direct = Clock::Model(Timing::new(&TimingSpec::default(), 1 << 30, 1));
        let mut logged = Clock::Log(TimingLog::default());
        let read = |addr, step| WalkRead { level: 2, addr: PhysAddr(addr), step };
        for clock in [&mut direct, &mut logged] {
            for i in 0..2000u64 {
                let addr = PhysAddr((i * 0x9e37_79b9) % (1 << 30));
                let kind = [AccessKind::Load, AccessKind::Store, AccessKind::IFetch][i as usize % 3];
                clock.reference(addr, kind);
                if i % 7 == 0 {
                    clock.walk(3, &[read(i << 12, Step::Chain), read(i << 20, Step::Chain)]);
                }
                if i % 11 == 0 {
                    clock.walk(0, &[read(i << 13, Step::Probe), read(i << 14, Step::Probe), read(i << 15, Step::Fill)]);
                }
            }
        }
        let (Clock::Model(direct), Clock::Log(log)) = (direct, logged) else { unreachable!() };
        let mut replayed = Timing::new(&TimingSpec::default(), 1 << 30, 1);
        replayed.replay(&log);
        assert_eq!(replayed.stats(6000, 10.0), direct.stats(6000, 10.0));
        assert!(direct.stats(0, 0.0).walks > 400);
    }
}
