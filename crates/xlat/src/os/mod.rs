//! The operating-system model: address spaces with demand paging over a frame allocator.
//!
//! This first model maps every page on first touch with one page size and never evicts. The
//! frame allocator sits behind [`FrameAllocator`], so hashed (iceberg), set-associative and
//! other placements plug in without touching the rest; page tables with walk costs and
//! eviction policies arrive with their own models.

pub mod allocator;
pub mod fully_associative;
pub mod iceberg;
pub mod page_table;

pub use allocator::{FrameAllocator, Placement};
pub use page_table::PageTable;

use crate::types::{Asid, PageSize, Pfn, Translation, Vpn, BASE_PAGE_SHIFT};
use crate::units::format_bytes;
use crate::Error;
use serde::Serialize;

/// Validated parameters of the OS model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OsSpec {
    /// Physical memory in bytes (a multiple of `page_size`).
    pub memory: u64,
    /// The one page size every fault maps.
    pub page_size: PageSize,
    /// Where a new page's frame goes.
    pub placement: Placement,
}

/// Counters of the OS model.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OsStats {
    /// Page-table walks (TLB misses in every level).
    pub walks: u64,
    /// Walks that found no mapping and mapped a page (minor faults: first touch).
    pub page_faults: u64,
    /// Pages currently mapped.
    pub mapped_pages: u64,
    /// Bytes currently mapped (the footprint: pages touched × page size).
    pub footprint_bytes: u64,
}

/// A page fault found no frame to map: the reference that faulted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfMemory {
    /// Address space of the faulting reference.
    pub asid: Asid,
    /// Its address.
    pub vaddr: u64,
}

/// Demand-paging OS over one frame allocator.
pub struct Os {
    spec: OsSpec,
    table: PageTable,
    allocator: Box<dyn FrameAllocator>,
    stats: OsStats,
}

impl Os {
    /// An OS with nothing mapped; `seed` drives random placement.
    pub fn new(spec: &OsSpec, seed: u64) -> Os {
        let frames = spec.memory / spec.page_size.bytes();
        Os {
            spec: spec.clone(),
            table: PageTable::new(spec.page_size),
            allocator: spec.placement.build(frames, seed),
            stats: OsStats::default(),
        }
    }

    /// Walks the page table for `vaddr`, mapping the page on first touch. The error is small
    /// on purpose (this is the TLB-miss path); [`Os::describe`] turns it into a message.
    #[inline(always)]
    pub fn translate(&mut self, asid: Asid, vaddr: u64) -> std::result::Result<Translation, OutOfMemory> {
        self.stats.walks += 1;
        let size = self.spec.page_size;
        if let Some(t) = self.table.lookup(asid, vaddr) {
            return Ok(t);
        }
        self.fault(asid, vaddr, size)
    }

    /// The error message for `oom`.
    pub fn describe(&self, oom: OutOfMemory) -> Error {
        Error::Simulation(format!(
            "out of physical memory: all {} frames of {} are mapped when asid {} touches {:#x}; \
             this OS model does not evict, so configure a larger os.memory",
            self.allocator.capacity(),
            format_bytes(self.spec.memory),
            oom.asid,
            oom.vaddr,
        ))
    }

    #[cold]
    fn fault(&mut self, asid: Asid, vaddr: u64, size: PageSize) -> std::result::Result<Translation, OutOfMemory> {
        let vpn = Vpn((vaddr >> size.shift()) << (size.shift() - BASE_PAGE_SHIFT));
        let frame = self.allocator.allocate(asid, vpn).ok_or(OutOfMemory { asid, vaddr })?;
        let t = Translation { asid, vpn, pfn: Pfn(frame * size.base_pages()), size };
        self.table.insert(t);
        self.stats.page_faults += 1;
        self.stats.mapped_pages += 1;
        self.stats.footprint_bytes += size.bytes();
        Ok(t)
    }

    /// The counters so far.
    pub fn stats(&self) -> &OsStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(memory: u64, page_size: PageSize, placement: Placement) -> OsSpec {
        OsSpec { memory, page_size, placement }
    }

    #[test]
    fn first_touch_faults_once() {
        let mut os = Os::new(&spec(1 << 20, PageSize::Size4K, Placement::Sequential), 0);
        let a = os.translate(0, 0x5123).unwrap();
        let b = os.translate(0, 0x5fff).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.pfn, Pfn(0));
        let c = os.translate(1, 0x5000).unwrap();
        assert_eq!(c.pfn, Pfn(1));
        assert_eq!(os.stats().page_faults, 2);
        assert_eq!(os.stats().walks, 3);
        assert_eq!(os.stats().footprint_bytes, 8192);
    }

    #[test]
    fn huge_pages_map_aligned_frames() {
        let mut os = Os::new(&spec(8 << 21, PageSize::Size2M, Placement::Random), 7);
        let t = os.translate(0, 0x40_1234).unwrap();
        assert_eq!(t.vpn, Vpn(1024));
        assert_eq!(t.pfn.0 % 512, 0);
        assert!(t.pfn.0 < 8 * 512);
    }

    #[test]
    fn exhaustion_is_an_error_not_a_panic() {
        let mut os = Os::new(&spec(2 << 12, PageSize::Size4K, Placement::Random), 1);
        os.translate(0, 0).unwrap();
        os.translate(0, 0x1000).unwrap();
        let oom = os.translate(0, 0x2000).unwrap_err();
        let err = os.describe(oom).to_string();
        assert!(err.contains("out of physical memory"), "{err}");
    }
}
