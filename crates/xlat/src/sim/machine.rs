//! A simulated machine: a TLB hierarchy in front of an OS model, consuming reference batches.

use super::stats::{MachineStats, RefCounters};
use crate::memref::{AccessKind, Batch};
use crate::os::{Os, OsSpec};
use crate::tlb::{LevelGeometry, TlbHierarchy};
use crate::types::{Asid, BASE_PAGE_SHIFT};
use crate::Result;
use serde::Serialize;

/// A validated machine configuration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MachineSpec {
    /// Name in results.
    pub name: String,
    /// Seed of the machine's random choices (placement, random replacement).
    pub seed: u64,
    /// The OS model.
    pub os: OsSpec,
    /// TLB levels, closest to the core first.
    pub tlb: Vec<LevelGeometry>,
}

/// A machine being simulated.
pub struct Machine {
    name: String,
    tlb: TlbHierarchy,
    os: Os,
    counters: RefCounters,
}

impl Machine {
    /// A machine in its initial state: empty TLBs, nothing mapped.
    pub fn new(spec: &MachineSpec) -> Machine {
        Machine {
            name: spec.name.clone(),
            tlb: TlbHierarchy::new(&spec.tlb, spec.seed),
            os: Os::new(&spec.os, spec.seed ^ 0x6f73),
            counters: RefCounters::default(),
        }
    }

    /// Simulates every reference of `batch` in order. A reference that straddles a page
    /// boundary translates both pages (two TLB accesses).
    pub fn process(&mut self, batch: &Batch) -> Result<()> {
        // The shape is fixed, so choosing the single-TLB loop once per batch costs nothing per
        // reference.
        if self.tlb.is_one_level() {
            self.process_shaped::<true>(batch)
        } else {
            self.process_shaped::<false>(batch)
        }
    }

    fn process_shaped<const ONE_LEVEL: bool>(&mut self, batch: &Batch) -> Result<()> {
        for r in &batch.refs {
            let first = r.vaddr >> BASE_PAGE_SHIFT;
            let last = r.last_vpn().0;
            self.translate::<ONE_LEVEL>(r.asid, r.vaddr, r.kind)?;
            if last != first {
                self.counters.straddles += 1;
                self.translate::<ONE_LEVEL>(r.asid, last << BASE_PAGE_SHIFT, r.kind)?;
            }
        }
        self.counters.refs += batch.refs.len() as u64;
        self.counters.instructions += batch.instructions;
        Ok(())
    }

    #[inline(always)]
    fn translate<const ONE_LEVEL: bool>(&mut self, asid: Asid, vaddr: u64, kind: AccessKind) -> Result<()> {
        if self.tlb.lookup_shaped::<ONE_LEVEL>(asid, vaddr, kind).is_none() {
            match self.os.translate(asid, vaddr) {
                Ok(t) => self.tlb.fill_after_walk_shaped::<ONE_LEVEL>(&t, vaddr, kind),
                Err(oom) => return Err(self.out_of_memory(oom)),
            }
        }
        Ok(())
    }

    /// The error for a fault that found no frame, naming this machine.
    #[cold]
    fn out_of_memory(&self, oom: crate::os::OutOfMemory) -> crate::Error {
        crate::Error::Simulation(format!("machine `{}`: {}", self.name, self.os.describe(oom)))
    }

    /// Statistics so far.
    pub fn stats(&self) -> MachineStats {
        MachineStats {
            machine: self.name.clone(),
            counters: self.counters.clone(),
            levels: self.tlb.stats(),
            os: self.os.stats().clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::PlacementSpec;
    use crate::tlb::{ArrayGeometry, Policy};
    use crate::types::PageSize;
    use crate::MemRef;

    fn spec() -> MachineSpec {
        MachineSpec {
            name: "m".into(),
            seed: 1,
            os: OsSpec::simple(1 << 30, PlacementSpec::Random),
            tlb: vec![LevelGeometry {
                name: "L1".into(),
                arrays: vec![ArrayGeometry { entries: 4, ways: 4, policy: Policy::Lru, page_sizes: vec![PageSize::Size4K] }],
                instr_arrays: vec![],
                inclusive: false,
            }],
        }
    }

    #[test]
    fn straddle_touches_both_pages() {
        let mut m = Machine::new(&spec());
        let batch = Batch { refs: vec![MemRef::load(0x1ffc, 8), MemRef::load(0x2000, 4)], instructions: 2 };
        m.process(&batch).unwrap();
        let s = m.stats();
        assert_eq!(s.counters.refs, 2);
        assert_eq!(s.counters.straddles, 1);
        assert_eq!(s.levels[0].counters.accesses, 3);
        assert_eq!(s.levels[0].counters.misses, 2);
        assert_eq!(s.os.page_faults, 2);
        assert_eq!(s.counters.instructions, 2);
    }
}
