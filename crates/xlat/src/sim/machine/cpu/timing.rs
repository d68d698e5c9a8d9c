//! EMT's cycle model of a CPU machine (seed 003; the research sheet, section 1, "Cycle
//! model"): walk and data references through a cache hierarchy, and cycles from what each
//! costs.
//!
//! * Every page a reference translates costs a TLB access (`tlb` cycles, 1) and a data
//!   access: the reference's physical address (its page's frame and its offset) goes to the
//!   first cache level (a fetch to the instruction side of a split one), and its latency
//!   counts divided by `data_parallelism` (8: EMT's memory-level parallelism).
//! * Every walk costs its walk-cache lookups (`pwc` cycles each, 1: a hit after `k` probes
//!   costs `k`, as EMT's PWC × (3 − i) for a hit at trajectory index `i`; a walk that misses
//!   every level costs all its probes) and the latency of each read it leaves for memory,
//!   entering the caches at `walk_level` (EMT: the L2; walk reads fill the L2 and below,
//!   never the L1).
//! * The reads of a walk are steps of a chain (radix, FPT: each waits for the one before,
//!   so their latencies add up), probes issued together (ECPT's ways: the walk waits for the
//!   slowest, after its hash and its cuckoo-walk-cache lookups, which run in parallel and
//!   cost `max(hash, cwc)`, EMT's max(HASH, CWC, CWC)), or fills the walk does not wait for
//!   (cuckoo-walk-table lines fetched after a walk-cache miss: they change what the caches
//!   hold, and cost nothing).
//! * Every instruction that is not a data reference costs `instruction` cycles (0.5).
//!   Instructions are counted per batch, so those of references straddling batches are
//!   spread as the source counts them.
//! * Total cycles are their sum; IPC is instructions over total cycles.
//!
//! Not modelled against EMT's script: its fetch-line rule (a non-memory instruction in the
//! same 16-byte fetch line as the one before costs no TLB access; here a recorded fetch
//! costs one), kernel instructions, and its whole-program weighting of phases.

use crate::cache::hierarchy::{Access, CacheHierarchy, CacheLevelSpec, LevelLookups};
use crate::memref::AccessKind;
use crate::mmu::walker::WalkMemory;
use crate::mmu::{Step, WalkRead};
use crate::tlb::Policy;
use crate::types::PhysAddr;
use serde::Serialize;

/// The cycle model's parameters, validated.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimingSpec {
    /// Cache levels, closest to the core first.
    pub caches: Vec<CacheLevelSpec>,
    /// Bytes of a cache line.
    pub line: u64,
    /// Cycles of a memory access (a miss in every level).
    pub memory: u32,
    /// The level (by index) walk reads enter.
    pub walk_level: usize,
    /// Cycles of a TLB access.
    pub tlb: f64,
    /// Cycles of a walk-cache lookup.
    pub pwc: f64,
    /// Cycles of an ECPT walk's hash.
    pub hash: f64,
    /// Cycles of an ECPT walk's cuckoo-walk-cache lookups (in parallel with the hash).
    pub cwc: f64,
    /// Cycles of an instruction that is not a data reference.
    pub instruction: f64,
    /// What a data access's latency is divided by: the memory-level parallelism.
    pub data_parallelism: f64,
}

impl TimingSpec {
    /// Bytes of host memory the cycle model's caches take at most: the tags of every level's
    /// lines ([`crate::cache::TagArray::host_bytes`]), twice for a split level.
    pub fn host_bytes(&self) -> u64 {
        let level = |c: &CacheLevelSpec| {
            let side = crate::cache::TagArray::host_bytes(c.size / self.line.max(1), c.ways as u64, c.policy);
            side.saturating_mul(if c.split { 2 } else { 1 })
        };
        self.caches.iter().map(level).fold(0, u64::saturating_add)
    }
}

impl Default for TimingSpec {
    /// EMT's: L1I and L1D 32 KiB 8-way (2 cycles), L2 512 KiB 8-way (16), LLC 16 MiB 16-way
    /// (56), 64-byte lines, LRU, memory 180; walk reads at the L2; TLB 1, PWC 1, hash 2, CWC
    /// 1, 0.5 per instruction, data latency / 8.
    fn default() -> TimingSpec {
        let level = |name: &str, size: u64, ways, latency, split| CacheLevelSpec { name: name.into(), size, ways, latency, split, policy: Policy::Lru };
        TimingSpec {
            caches: vec![level("L1", 32 << 10, 8, 2, true), level("L2", 512 << 10, 8, 16, false), level("LLC", 16 << 20, 16, 56, false)],
            line: 64,
            memory: 180,
            walk_level: 1,
            tlb: 1.0,
            pwc: 1.0,
            hash: 2.0,
            cwc: 1.0,
            instruction: 0.5,
            data_parallelism: 8.0,
        }
    }
}

/// What a timed machine's cycles were spent on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimingStats {
    /// TLB accesses' cycles.
    pub tlb_cycles: f64,
    /// Walks' cycles (walk-cache lookups and the latency of their reads).
    pub walk_cycles: f64,
    /// Walks timed.
    pub walks: u64,
    /// Mean cycles of a walk; `None` before the first.
    pub mean_walk_cycles: Option<f64>,
    /// Data accesses' cycles (latency over the memory-level parallelism).
    pub data_cycles: f64,
    /// Cycles of the instructions that are not data references.
    pub instruction_cycles: f64,
    /// Their sum.
    pub total_cycles: f64,
    /// The kernel's page-table work (the kernel-work model's estimated instructions) at the
    /// model's cycles per instruction.
    pub kernel_cycles: f64,
    /// `total_cycles` and `kernel_cycles`: the whole program's, as EMT's whole-program
    /// figures count them.
    pub cycles_with_kernel: f64,
    /// Instructions per cycle; `None` when the source counts no instructions.
    pub ipc: Option<f64>,
    /// Lookups of every cache level, data and walk reads apart.
    pub caches: Vec<LevelLookups>,
}

/// A machine's caches and clock.
#[derive(Clone, Debug)]
pub struct Timing {
    spec: TimingSpec,
    caches: CacheHierarchy,
    accesses: u64,
    /// Accesses by loads and stores (the rest are fetches).
    data_accesses: u64,
    walks: u64,
    walk_probes: u64,
    /// Walks that probed in parallel (and paid a hash).
    hashed_walks: u64,
    walk_latency: u64,
    data_latency: u64,
}

impl Timing {
    /// The model of `spec` with empty caches for a memory of `memory_bytes`; `seed` drives
    /// their random policy.
    pub fn new(spec: &TimingSpec, memory_bytes: u64, seed: u64) -> Timing {
        let caches = CacheHierarchy::new(&spec.caches, spec.line, spec.memory, memory_bytes, seed);
        Timing { spec: spec.clone(), caches, accesses: 0, data_accesses: 0, walks: 0, walk_probes: 0, hashed_walks: 0, walk_latency: 0, data_latency: 0 }
    }

    /// A `kind` access to `addr` by a reference (one page of it): a TLB access and a data
    /// access.
    pub fn reference(&mut self, addr: PhysAddr, kind: AccessKind) {
        self.access(addr, if kind == AccessKind::IFetch { Access::Fetch } else { Access::Data });
    }

    /// [`Timing::reference`] by a data access or a fetch (`access`).
    pub(super) fn access(&mut self, addr: PhysAddr, access: Access) {
        self.accesses += 1;
        self.data_accesses += u64::from(access == Access::Data);
        self.data_latency += u64::from(self.caches.access(addr, access, 0));
    }

    /// The cycles so far of a machine whose references span `instructions` instructions.
    /// The cycles so far of `instructions` instructions, and of `kernel_instructions` the
    /// kernel's work on page tables took (the kernel-work model's estimate).
    pub fn stats(&self, instructions: u64, kernel_instructions: f64) -> TimingStats {
        let s = &self.spec;
        let tlb_cycles = self.accesses as f64 * s.tlb;
        let walk_cycles = self.walk_probes as f64 * s.pwc + self.hashed_walks as f64 * s.hash.max(s.cwc) + self.walk_latency as f64;
        let data_cycles = self.data_latency as f64 / s.data_parallelism;
        let instruction_cycles = instructions.saturating_sub(self.data_accesses) as f64 * s.instruction;
        let total_cycles = tlb_cycles + walk_cycles + data_cycles + instruction_cycles;
        let kernel_cycles = kernel_instructions * s.instruction;
        TimingStats {
            tlb_cycles,
            walk_cycles,
            walks: self.walks,
            mean_walk_cycles: (self.walks > 0).then(|| walk_cycles / self.walks as f64),
            data_cycles,
            instruction_cycles,
            total_cycles,
            kernel_cycles,
            cycles_with_kernel: total_cycles + kernel_cycles,
            ipc: (instructions > 0 && total_cycles > 0.0).then(|| instructions as f64 / total_cycles),
            caches: self.caches.lookups(),
        }
    }
}

impl WalkMemory for Timing {
    fn walk(&mut self, probes: u32, reads: &[WalkRead]) {
        self.walks += 1;
        self.walk_probes += u64::from(probes);
        let mut slowest_probe = None;
        for read in reads {
            let latency = u64::from(self.caches.access(read.addr, Access::Walk, self.spec.walk_level));
            match read.step {
                Step::Chain => self.walk_latency += latency,
                Step::Probe => slowest_probe = slowest_probe.max(Some(latency)),
                Step::Fill => {}
            }
        }
        if let Some(latency) = slowest_probe {
            self.hashed_walks += 1;
            self.walk_latency += latency;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Walks and data accesses by hand, against EMT's latencies.
    #[test]
    fn cycles_add_up_as_emts_model_says() {
        let mut t = Timing::new(&TimingSpec::default(), 1 << 30, 1);
        let read = |addr| WalkRead::chain(0, addr);
        // A cold 4-level walk: 3 PWC probes, 4 reads from memory (180 each).
        t.walk(3, &[read(0x1000), read(0x2000), read(0x3000), read(0x4000)]);
        // A walk whose PD entry hit: 1 probe, its PT entry in the L2 now (16).
        t.walk(1, &[read(0x4008)]);
        // Data: a miss everywhere (180), then a hit in the L1 (2); a fetch of the same line
        // misses the instruction side and hits the L2 (16).
        t.reference(PhysAddr(0x9000), AccessKind::Load);
        t.reference(PhysAddr(0x9008), AccessKind::Store);
        t.reference(PhysAddr(0x9010), AccessKind::IFetch);
        let s = t.stats(12, 1000.0);
        assert_eq!(s.walk_cycles, 4.0 + 4.0 * 180.0 + 16.0);
        assert_eq!(s.mean_walk_cycles, Some(s.walk_cycles / 2.0));
        assert_eq!(s.tlb_cycles, 3.0);
        assert_eq!(s.data_cycles, (180.0 + 2.0 + 16.0) / 8.0);
        assert_eq!(s.instruction_cycles, 10.0 * 0.5);
        assert_eq!(s.total_cycles, s.tlb_cycles + s.walk_cycles + s.data_cycles + s.instruction_cycles);
        assert_eq!(s.ipc, Some(12.0 / s.total_cycles));
        // The kernel's 1000 estimated instructions at 0.5 cycles each, apart from the IPC.
        assert_eq!((s.kernel_cycles, s.cycles_with_kernel), (500.0, s.total_cycles + 500.0));
        assert_eq!(s.caches[1].walk.misses, 4, "the walk reads entered at the L2");
        assert_eq!(s.caches[0].walk.hits + s.caches[0].walk.misses, 0, "and never the L1");
    }

    /// An ECPT walk by hand: three probes in parallel and two fills.
    #[test]
    fn a_parallel_walk_waits_for_its_slowest_probe_and_not_for_its_fills() {
        let mut t = Timing::new(&TimingSpec::default(), 1 << 30, 1);
        let read = |addr, step| WalkRead { level: 0, addr: PhysAddr(addr), step };
        // Warm one line into the L2 (a chain read from memory, 180).
        t.walk(0, &[read(0x1000, Step::Chain)]);
        // Probes of the warm line (16) and two cold ones (180): the walk pays the slowest
        // after max(hash 2, CWC 1); the fills cost nothing but are in the L2 after.
        t.walk(0, &[read(0x1000, Step::Probe), read(0x2000, Step::Probe), read(0x3000, Step::Probe), read(0x4000, Step::Fill), read(0x5000, Step::Fill)]);
        t.walk(0, &[read(0x4000, Step::Probe), read(0x5000, Step::Probe)]);
        let s = t.stats(0, 0.0);
        assert_eq!(s.walk_cycles, 180.0 + (2.0 + 180.0) + (2.0 + 16.0));
        assert_eq!(s.walks, 3);
    }
}
