//! The GPU-MMU baseline (Power et al., the paper's Section 3.1): 4 KiB pages only, placed in
//! one free base-frame list shared by every application. A page takes the next free base
//! frame whatever application holds its neighbours, so the frames of a large frame mix
//! applications and nothing could be coalesced without migration; no mapping is ever large.
//!
//! The free list is a stack: freed frames are reused first (most recently freed first), and
//! fresh frames are handed out in ascending order. Pre-fragmented base frames are left out
//! of it: they simply cannot be used.

use super::pages::{
    chunk_masks, count_pages, page_range, split, Bitmap, ChunkRecord, Tables, Usage, BASE_BYTES,
    LARGE_BYTES, NO_FRAME,
};
use super::prefrag::{base_frames, prefragment};
use super::{
    AppId, Invalidation, ManagerSpec, ManagerStats, Mapping, MemoryManager, PlaceError, Touch,
    PAGES_PER_LARGE,
};

/// One application's 2 MiB virtual chunk under GPU-MMU.
#[derive(Debug)]
struct Chunk {
    allocated: Bitmap,
    resident: Bitmap,
    /// Base frame of each resident page.
    pfn: Box<[u32; PAGES_PER_LARGE as usize]>,
}

impl Default for Chunk {
    fn default() -> Chunk {
        Chunk {
            allocated: Bitmap::default(),
            resident: Bitmap::default(),
            pfn: Box::new([NO_FRAME; PAGES_PER_LARGE as usize]),
        }
    }
}

impl ChunkRecord for Chunk {
    fn allocated(&mut self) -> &mut Bitmap {
        &mut self.allocated
    }
}

/// The GPU-MMU baseline memory manager.
#[derive(Debug)]
pub struct GpuMmu {
    demand_paging: bool,
    /// Free base frames; the next one handed out is the last.
    free: Vec<u32>,
    /// Base frames holding pre-fragmented data, ascending.
    prefragmented: Vec<u64>,
    tables: Tables<Chunk>,
    usage: Usage,
    far_faults: u64,
    invalidations: Vec<Invalidation>,
}

impl GpuMmu {
    /// A manager of `spec.memory_bytes` of memory for `apps` applications.
    pub fn new(spec: &ManagerSpec, apps: usize) -> GpuMmu {
        let frames = (spec.memory_bytes / BASE_BYTES).min(u64::from(NO_FRAME)) as u32;
        let prefragmented = base_frames(&prefragment(spec, spec.memory_bytes / LARGE_BYTES));
        let usable = |pfn: &u32| prefragmented.binary_search(&u64::from(*pfn)).is_err();
        GpuMmu {
            demand_paging: spec.demand_paging,
            free: (0..frames).rev().filter(usable).collect(),
            prefragmented,
            tables: Tables::new(apps),
            usage: Usage::default(),
            far_faults: 0,
            invalidations: Vec::new(),
        }
    }

    /// Places page `off` of `chunk` of `app` in the next free frame (the caller checked
    /// there is one and that the page is allocated and not resident).
    fn place(&mut self, app: AppId, chunk: u64, off: usize) -> Result<u32, PlaceError> {
        let record = self
            .tables
            .get_mut(app, chunk)
            .ok_or(PlaceError::Unallocated {
                app,
                vpn: chunk * PAGES_PER_LARGE + off as u64,
            })?;
        let pfn = self.free.pop().ok_or(PlaceError::OutOfMemory {
            app,
            needed: BASE_BYTES,
        })?;
        record.pfn[off] = pfn;
        record.resident.set(off);
        self.usage.add_used(1);
        self.usage.add_reserved(1);
        Ok(pfn)
    }
}

/// A base mapping.
fn base(pfn: u32) -> Mapping {
    Mapping {
        pfn: u64::from(pfn),
        large: false,
    }
}

impl MemoryManager for GpuMmu {
    fn name(&self) -> &'static str {
        "gpu-mmu"
    }

    fn allocate(&mut self, app: AppId, base: u64, bytes: u64) -> Result<(), PlaceError> {
        let newly = self.tables.mark(app, page_range(base, bytes));
        if self.demand_paging {
            return Ok(());
        }
        // Every page needs one frame, so the check up front makes the allocation atomic.
        let pages = count_pages(&newly);
        let free = self.free.len() as u64;
        if pages > free {
            self.tables.unmark(app, &newly);
            return Err(PlaceError::OutOfMemory {
                app,
                needed: (pages - free) * BASE_BYTES,
            });
        }
        for (chunk, fresh) in newly {
            for off in fresh.ones() {
                self.place(app, chunk, off)?;
            }
        }
        Ok(())
    }

    fn free(&mut self, app: AppId, base: u64, bytes: u64) {
        for (chunk, mask) in chunk_masks(page_range(base, bytes)) {
            let Some(record) = self.tables.get_mut(app, chunk) else {
                continue;
            };
            let gone = record.allocated.and(&mask);
            for off in gone.and(&record.resident).ones() {
                self.free.push(record.pfn[off]);
                record.resident.clear(off);
                self.usage.sub_used(1);
                self.usage.sub_reserved(1);
                let vpn = chunk * PAGES_PER_LARGE + off as u64;
                self.invalidations.push(Invalidation {
                    app,
                    vpn,
                    large: false,
                });
            }
            record.allocated = record.allocated.minus(&gone);
            if record.allocated.is_empty() {
                self.tables.remove(app, chunk);
            }
        }
    }

    fn touch(&mut self, app: AppId, vpn: u64) -> Result<Touch, PlaceError> {
        let (chunk, off) = split(vpn);
        let record = self.tables.get(app, chunk).filter(|r| r.allocated.get(off));
        let record = record.ok_or(PlaceError::Unallocated { app, vpn })?;
        if record.resident.get(off) {
            return Ok(Touch {
                mapping: base(record.pfn[off]),
                transferred: 0,
            });
        }
        let pfn = self.place(app, chunk, off)?;
        // Without demand paging every allocated page is already resident; placing one here
        // is a far fault only with it.
        let transferred = if self.demand_paging { BASE_BYTES } else { 0 };
        self.far_faults += u64::from(self.demand_paging);
        Ok(Touch {
            mapping: base(pfn),
            transferred,
        })
    }

    fn lookup(&self, app: AppId, vpn: u64) -> Option<Mapping> {
        let (chunk, off) = split(vpn);
        let record = self.tables.get(app, chunk)?;
        record.resident.get(off).then(|| base(record.pfn[off]))
    }

    fn drain_invalidations(&mut self, out: &mut Vec<Invalidation>) {
        out.append(&mut self.invalidations);
    }

    fn stats(&self) -> ManagerStats {
        ManagerStats {
            far_faults_base: self.far_faults,
            prefragmented_frames: self.prefragmented.len() as u64,
            ..self.usage.stats()
        }
    }

    fn prefragmented(&self) -> Vec<u64> {
        self.prefragmented.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(demand_paging: bool) -> ManagerSpec {
        ManagerSpec {
            memory_bytes: 4 << 20,
            demand_paging,
            ..ManagerSpec::default()
        }
    }

    #[test]
    fn applications_share_large_frames() {
        let mut mmu = GpuMmu::new(&spec(false), 2);
        mmu.allocate(0, 0, 4096).unwrap();
        mmu.allocate(1, 0, 4096).unwrap();
        let a = mmu.lookup(0, 0).unwrap();
        let b = mmu.lookup(1, 0).unwrap();
        assert_eq!(
            (a.pfn / PAGES_PER_LARGE, a.large),
            (b.pfn / PAGES_PER_LARGE, false)
        );
        assert_ne!(a.pfn, b.pfn);
    }

    #[test]
    fn demand_paging_transfers_base_pages() {
        let mut mmu = GpuMmu::new(&spec(true), 1);
        mmu.allocate(0, 0, 8192).unwrap();
        assert_eq!(mmu.lookup(0, 0), None);
        assert_eq!(mmu.touch(0, 0).unwrap().transferred, 4096);
        assert_eq!(mmu.touch(0, 0).unwrap().transferred, 0);
        assert_eq!(mmu.stats().far_faults_base, 1);
        assert_eq!(mmu.stats().bloat(), 0.0);
    }

    #[test]
    fn out_of_memory_changes_nothing() {
        let mut mmu = GpuMmu::new(&spec(false), 1);
        mmu.allocate(0, 0, 3 << 20).unwrap();
        let err = mmu.allocate(0, 4 << 20, 2 << 20).unwrap_err();
        assert_eq!(
            err,
            PlaceError::OutOfMemory {
                app: 0,
                needed: 1 << 20
            }
        );
        assert_eq!(mmu.stats().frames_reserved, 768);
        assert!(matches!(
            mmu.touch(0, 1024),
            Err(PlaceError::Unallocated { .. })
        ));
    }

    #[test]
    fn free_returns_frames_and_flushes() {
        let mut mmu = GpuMmu::new(&spec(false), 1);
        mmu.allocate(0, 0, 8192).unwrap();
        mmu.free(0, 0, 8192);
        mmu.free(0, 1 << 30, 8192);
        let mut out = Vec::new();
        mmu.drain_invalidations(&mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(mmu.stats().frames_reserved, 0);
        assert_eq!(mmu.lookup(0, 0), None);
    }
}
