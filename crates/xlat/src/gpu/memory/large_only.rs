//! 2 MiB pages only (the paper's Section 3.2): every 2 MiB virtual chunk of an application
//! holding an allocated page takes a whole large frame, at the page's own offset, so a chunk
//! only partly allocated still takes 2 MiB (memory bloat; [`ManagerStats::bloat`]).
//!
//! With demand paging the first touch of a chunk brings the whole large page across PCIe
//! (`Touch::transferred` = 2 MiB) and all its allocated pages are then resident. Pages
//! allocated later inside a chunk that already holds its frame are resident at once: the
//! large page is already on the GPU. The frame returns to the free list (and the large TLB
//! entry is flushed) only when the chunk's last allocated page is freed; freeing a page
//! inside a held chunk flushes nothing, since the page would come back to the same frame.
//!
//! A large frame holding pre-fragmented data is never used: a large page needs all 512 base
//! frames (so memory may run out sooner, which is the stress test's point).

use super::pages::{
    chunk_masks, page_range, split, Bitmap, ChunkRecord, Newly, Tables, Usage, LARGE_BYTES,
    NO_FRAME,
};
use super::prefrag::{base_frames, prefragment};
use super::{
    AppId, Invalidation, ManagerSpec, ManagerStats, Mapping, MemoryManager, PlaceError, Touch,
    PAGES_PER_LARGE,
};

/// One application's 2 MiB virtual chunk under 2 MiB-only paging.
#[derive(Debug)]
struct Chunk {
    allocated: Bitmap,
    /// Allocated pages on the GPU: all of them once the chunk holds a frame.
    resident: Bitmap,
    /// The large frame holding the chunk, or [`NO_FRAME`].
    frame: u32,
}

impl Default for Chunk {
    fn default() -> Chunk {
        Chunk {
            allocated: Bitmap::default(),
            resident: Bitmap::default(),
            frame: NO_FRAME,
        }
    }
}

impl ChunkRecord for Chunk {
    fn allocated(&mut self) -> &mut Bitmap {
        &mut self.allocated
    }
}

/// The 2 MiB-only memory manager.
#[derive(Debug)]
pub struct LargeOnly {
    demand_paging: bool,
    /// Free large frames; the next one handed out is the last.
    free: Vec<u32>,
    /// Base frames holding pre-fragmented data, ascending.
    prefragmented: Vec<u64>,
    tables: Tables<Chunk>,
    usage: Usage,
    far_faults: u64,
    invalidations: Vec<Invalidation>,
}

impl LargeOnly {
    /// A manager of `spec.memory_bytes` of memory for `apps` applications.
    pub fn new(spec: &ManagerSpec, apps: usize) -> LargeOnly {
        let frames = (spec.memory_bytes / LARGE_BYTES).min(u64::from(NO_FRAME) / PAGES_PER_LARGE);
        let fragmented = prefragment(spec, frames);
        let usable = |frame: &u32| fragmented.binary_search_by_key(frame, |p| p.0).is_err();
        LargeOnly {
            demand_paging: spec.demand_paging,
            free: (0..frames as u32).rev().filter(usable).collect(),
            prefragmented: base_frames(&fragmented),
            tables: Tables::new(apps),
            usage: Usage::default(),
            far_faults: 0,
            invalidations: Vec::new(),
        }
    }

    /// Gives `chunk` of `app` a free large frame and makes its allocated pages resident.
    fn fill(&mut self, app: AppId, chunk: u64) -> Result<u32, PlaceError> {
        let vpn = chunk * PAGES_PER_LARGE;
        let record = self
            .tables
            .get_mut(app, chunk)
            .ok_or(PlaceError::Unallocated { app, vpn })?;
        let frame = self.free.pop().ok_or(PlaceError::OutOfMemory {
            app,
            needed: LARGE_BYTES,
        })?;
        record.frame = frame;
        record.resident = record.allocated;
        self.usage.add_used(record.resident.count());
        self.usage.add_reserved(PAGES_PER_LARGE);
        Ok(frame)
    }

    /// Chunks of `newly` that hold no frame yet.
    fn frameless(&self, app: AppId, newly: &Newly) -> Vec<u64> {
        let frameless = |chunk: &&u64| {
            self.tables
                .get(app, **chunk)
                .is_some_and(|r| r.frame == NO_FRAME)
        };
        newly
            .iter()
            .map(|(chunk, _)| chunk)
            .filter(frameless)
            .copied()
            .collect()
    }

    /// Makes the pages `fresh` of `chunk` resident if the chunk already holds its frame.
    fn join_frame(&mut self, app: AppId, chunk: u64, fresh: &Bitmap) {
        if let Some(record) = self
            .tables
            .get_mut(app, chunk)
            .filter(|r| r.frame != NO_FRAME)
        {
            record.resident = record.resident.or(fresh);
            self.usage.add_used(fresh.count());
        }
    }

    /// Undoes an allocation that placed nothing but the pages that joined held frames.
    fn undo(&mut self, app: AppId, newly: &Newly) {
        for (chunk, fresh) in newly {
            if let Some(record) = self.tables.get_mut(app, *chunk) {
                self.usage.sub_used(fresh.and(&record.resident).count());
                record.resident = record.resident.minus(fresh);
            }
        }
        // A chunk holding a frame had allocated pages before, so unmarking keeps its record.
        self.tables.unmark(app, newly);
    }
}

/// The large mapping of page `off` of the chunk in `frame`.
fn large(frame: u32, off: usize) -> Mapping {
    Mapping {
        pfn: u64::from(frame) * PAGES_PER_LARGE + off as u64,
        large: true,
    }
}

impl MemoryManager for LargeOnly {
    fn name(&self) -> &'static str {
        "large-only"
    }

    fn allocate(&mut self, app: AppId, base: u64, bytes: u64) -> Result<(), PlaceError> {
        let newly = self.tables.mark(app, page_range(base, bytes));
        for (chunk, fresh) in &newly {
            self.join_frame(app, *chunk, fresh);
        }
        if self.demand_paging {
            return Ok(());
        }
        let frameless = self.frameless(app, &newly);
        let free = self.free.len();
        if frameless.len() > free {
            self.undo(app, &newly);
            let needed = (frameless.len() - free) as u64 * LARGE_BYTES;
            return Err(PlaceError::OutOfMemory { app, needed });
        }
        for chunk in frameless {
            self.fill(app, chunk)?;
        }
        Ok(())
    }

    fn free(&mut self, app: AppId, base: u64, bytes: u64) {
        for (chunk, mask) in chunk_masks(page_range(base, bytes)) {
            let Some(record) = self.tables.get_mut(app, chunk) else {
                continue;
            };
            let gone = record.allocated.and(&mask);
            self.usage.sub_used(gone.and(&record.resident).count());
            record.resident = record.resident.minus(&gone);
            record.allocated = record.allocated.minus(&gone);
            if !record.allocated.is_empty() {
                continue;
            }
            if record.frame != NO_FRAME {
                self.free.push(record.frame);
                self.usage.sub_reserved(PAGES_PER_LARGE);
                let vpn = chunk * PAGES_PER_LARGE;
                self.invalidations.push(Invalidation {
                    app,
                    vpn,
                    large: true,
                });
            }
            self.tables.remove(app, chunk);
        }
    }

    fn touch(&mut self, app: AppId, vpn: u64) -> Result<Touch, PlaceError> {
        let (chunk, off) = split(vpn);
        let record = self.tables.get(app, chunk).filter(|r| r.allocated.get(off));
        let record = record.ok_or(PlaceError::Unallocated { app, vpn })?;
        if record.resident.get(off) {
            return Ok(Touch {
                mapping: large(record.frame, off),
                transferred: 0,
            });
        }
        let frame = self.fill(app, chunk)?;
        let transferred = if self.demand_paging { LARGE_BYTES } else { 0 };
        self.far_faults += u64::from(self.demand_paging);
        Ok(Touch {
            mapping: large(frame, off),
            transferred,
        })
    }

    fn lookup(&self, app: AppId, vpn: u64) -> Option<Mapping> {
        let (chunk, off) = split(vpn);
        let record = self.tables.get(app, chunk)?;
        record.resident.get(off).then(|| large(record.frame, off))
    }

    fn drain_invalidations(&mut self, out: &mut Vec<Invalidation>) {
        out.append(&mut self.invalidations);
    }

    fn stats(&self) -> ManagerStats {
        ManagerStats {
            far_faults_large: self.far_faults,
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
            memory_bytes: 8 << 20,
            demand_paging,
            ..ManagerSpec::default()
        }
    }

    #[test]
    fn partly_used_chunks_bloat() {
        let mut large_only = LargeOnly::new(&spec(false), 1);
        // 1 MiB + 4 KiB straddling two chunks: 257 pages in two 2 MiB frames.
        large_only.allocate(0, 1 << 20, (1 << 20) + 4096).unwrap();
        let stats = large_only.stats();
        assert_eq!(
            (stats.peak_pages_resident, stats.peak_frames_reserved),
            (257, 1024)
        );
        assert!((stats.bloat() - (1024.0 - 257.0) / 257.0).abs() < 1e-12);
        let mapping = large_only.lookup(0, 512).unwrap();
        assert!(mapping.large && mapping.pfn % PAGES_PER_LARGE == 0);
    }

    #[test]
    fn demand_paging_transfers_whole_chunks() {
        let mut large_only = LargeOnly::new(&spec(true), 1);
        large_only.allocate(0, 0, 4 << 20).unwrap();
        assert_eq!(large_only.stats().frames_reserved, 0);
        assert_eq!(large_only.touch(0, 5).unwrap().transferred, LARGE_BYTES);
        assert_eq!(large_only.touch(0, 511).unwrap().transferred, 0);
        assert_eq!(large_only.touch(0, 512).unwrap().transferred, LARGE_BYTES);
        assert_eq!(large_only.stats().far_faults_large, 2);
    }

    #[test]
    fn the_last_free_in_a_chunk_releases_its_frame() {
        let mut large_only = LargeOnly::new(&spec(false), 1);
        large_only.allocate(0, 0, 8192).unwrap();
        large_only.free(0, 0, 4096);
        let mut out = Vec::new();
        large_only.drain_invalidations(&mut out);
        assert!(out.is_empty());
        assert_eq!(large_only.stats().frames_reserved, 512);
        large_only.free(0, 4096, 4096);
        large_only.drain_invalidations(&mut out);
        assert_eq!(
            out,
            vec![Invalidation {
                app: 0,
                vpn: 0,
                large: true
            }]
        );
        assert_eq!(large_only.stats().frames_reserved, 0);
    }

    #[test]
    fn out_of_memory_changes_nothing() {
        let mut large_only = LargeOnly::new(&spec(false), 1);
        large_only.allocate(0, 0, 4096).unwrap();
        let err = large_only.allocate(0, 4096, 8 << 20).unwrap_err();
        assert_eq!(
            err,
            PlaceError::OutOfMemory {
                app: 0,
                needed: LARGE_BYTES
            }
        );
        assert_eq!(large_only.stats().frames_used, 1);
        assert_eq!(large_only.lookup(0, 1), None);
    }
}
