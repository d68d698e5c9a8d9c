//! The ideal TLB (the paper's upper bound): GPU-MMU's placement, with every translation
//! hitting in the TLBs. The machine asks [`MemoryManager::ideal`] and skips the TLBs and
//! walks; placement, demand paging and statistics are GPU-MMU's.

use super::{
    AppId, GpuMmu, Invalidation, ManagerSpec, ManagerStats, Mapping, MemoryManager, PlaceError,
    Touch,
};

/// GPU-MMU's placement behind an ideal TLB.
#[derive(Debug)]
pub struct Ideal(GpuMmu);

impl Ideal {
    /// A manager of `spec.memory_bytes` of memory for `apps` applications.
    pub fn new(spec: &ManagerSpec, apps: usize) -> Ideal {
        Ideal(GpuMmu::new(spec, apps))
    }
}

impl MemoryManager for Ideal {
    fn name(&self) -> &'static str {
        "ideal"
    }

    fn allocate(&mut self, app: AppId, base: u64, bytes: u64) -> Result<(), PlaceError> {
        self.0.allocate(app, base, bytes)
    }

    fn free(&mut self, app: AppId, base: u64, bytes: u64) {
        self.0.free(app, base, bytes);
    }

    fn touch(&mut self, app: AppId, vpn: u64) -> Result<Touch, PlaceError> {
        self.0.touch(app, vpn)
    }

    fn lookup(&self, app: AppId, vpn: u64) -> Option<Mapping> {
        self.0.lookup(app, vpn)
    }

    fn drain_invalidations(&mut self, out: &mut Vec<Invalidation>) {
        self.0.drain_invalidations(out);
    }

    fn ideal(&self) -> bool {
        true
    }

    fn stats(&self) -> ManagerStats {
        self.0.stats()
    }

    fn prefragmented(&self) -> Vec<u64> {
        self.0.prefragmented()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ideal_places_as_gpu_mmu() {
        let spec = ManagerSpec {
            memory_bytes: 4 << 20,
            ..ManagerSpec::default()
        };
        let (mut ideal, mut mmu) = (Ideal::new(&spec, 2), GpuMmu::new(&spec, 2));
        for app in [0, 1, 0] {
            ideal.allocate(app, 0x1000 * u64::from(app), 12288).unwrap();
            mmu.allocate(app, 0x1000 * u64::from(app), 12288).unwrap();
        }
        assert!(ideal.ideal() && !mmu.ideal());
        assert_eq!(ideal.name(), "ideal");
        assert_eq!(ideal.lookup(1, 3), mmu.lookup(1, 3));
        assert_eq!(ideal.stats(), mmu.stats());
    }
}
