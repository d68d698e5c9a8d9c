//! GPU memory managers: where each application's pages live in the GPU's physical memory,
//! which translations are large, and what placing, coalescing, splintering and compacting
//! cost. One policy per file, each behind [`MemoryManager`]:
//!
//! - `gpu_mmu`: the baseline GPU-MMU; 4 KiB pages, frames shared among applications.
//! - `large_only`: 2 MiB pages only.
//! - `mosaic`: GPU Mosaic's CoCoA allocator, in-place coalescer and CAC compaction.
//! - `ideal`: GPU-MMU's placement with every translation hitting (an upper bound).
//!
//! Physical memory is counted in 4 KiB base frames; a large frame is 512 aligned base frames.
//! [`ManagerSpec`] configures a policy and [`build`] makes it.
//!
//! Conventions every policy follows:
//! - Allocation sizes and bases that are not 4 KiB aligned round outwards to whole pages.
//! - Allocating a page already allocated leaves it as it is; an allocation that runs out of
//!   memory returns [`PlaceError::OutOfMemory`] and releases the pages it had placed, so it
//!   changes nothing an application can see.
//! - Freeing pages that are not allocated does nothing (a range may be partly allocated).
//! - Freeing a resident page flushes its base TLB entry (the virtual page may be allocated
//!   again elsewhere); a large mapping that stops existing is flushed too. Under 2 MiB-only
//!   paging there are no base entries: only the large one is flushed, when the chunk's last
//!   page is freed and its frame released.
//! - A page moves only by compaction (Mosaic's CAC), which flushes its base entry; coalescing
//!   moves nothing and flushes nothing.
//! - Nothing is ever evicted: a resident page stays resident until freed.
//! - Pre-fragmented base frames (the paper's CAC stress test, `prefrag`) are never given to
//!   an application and never freed; only Mosaic's CAC moves them. They count in no frame
//!   statistic but `prefragmented_frames`.

mod gpu_mmu;
mod ideal;
mod large_only;
mod mosaic;
mod pages;
mod prefrag;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

pub use gpu_mmu::GpuMmu;
pub use ideal::Ideal;
pub use large_only::LargeOnly;
pub use mosaic::Mosaic;

/// An application's index in its mix (0, 1, ...), which is also its ASID in the TLBs.
pub type AppId = u16;

/// Base pages (and base frames) in a large (2 MiB) page or frame.
pub const PAGES_PER_LARGE: u64 = 512;

/// Base frames are numbered below this (in 32 bits, the largest value marking no frame):
/// what bounds the physical addresses of data, and lets the data caches keep 32-bit tags.
pub const FRAME_LIMIT: u64 = pages::NO_FRAME as u64;

/// How one base page of an application is mapped, as a walk finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// The base frame holding the page, below [`FRAME_LIMIT`].
    pub pfn: u64,
    /// True when the page is part of a large (2 MiB) mapping: the TLBs then cache one entry
    /// for its whole aligned 2 MiB virtual range, whose frames are contiguous and aligned.
    pub large: bool,
}

/// The outcome of a translation request for one base page ([`MemoryManager::touch`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Touch {
    /// Where the page is, now that it is resident.
    pub mapping: Mapping,
    /// Bytes that crossed PCIe to make the page resident (demand paging's far fault): 0
    /// when it already was; 4 KiB for a base page, 2 MiB for a large page placed whole.
    pub transferred: u64,
}

/// A TLB entry a memory manager's action made stale, which the machine must flush from
/// every TLB before the next translation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Invalidation {
    /// The application.
    pub app: AppId,
    /// Its first base page (aligned to 512 for a large one).
    pub vpn: u64,
    /// True for a large (2 MiB) entry.
    pub large: bool,
}

/// Why an allocation or a page could not be placed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlaceError {
    /// No free memory is left for the request.
    #[error("out of GPU memory: application {app} needs {needed} more bytes")]
    OutOfMemory {
        /// The application.
        app: AppId,
        /// Bytes needed.
        needed: u64,
    },
    /// The page touched is in no live allocation of the application.
    #[error("application {app} touched page {vpn:#x}, in none of its allocations")]
    Unallocated {
        /// The application.
        app: AppId,
        /// The page.
        vpn: u64,
    },
}

/// What a memory manager did and holds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ManagerStats {
    /// Base frames holding an application's page now.
    pub frames_used: u64,
    /// Base frames taken from the free memory now (frames reserved for an application but
    /// not holding a page of it count here and not in `frames_used`).
    pub frames_reserved: u64,
    /// Most base frames reserved at once.
    pub peak_frames_reserved: u64,
    /// Most base pages resident at once (what a 4 KiB-only manager would have needed).
    pub peak_pages_resident: u64,
    /// Base pages made resident by a far fault (demand paging).
    pub far_faults_base: u64,
    /// Large pages made resident whole by a far fault.
    pub far_faults_large: u64,
    /// Large frames promoted to a large mapping (Mosaic's in-place coalescing).
    pub coalesced: u64,
    /// Large mappings split back into base pages (a free inside one, or compaction).
    pub splintered: u64,
    /// Compactions run (Mosaic's CAC).
    pub compactions: u64,
    /// Base pages copied within GPU memory by compaction.
    pub pages_migrated: u64,
    /// Large frames that came to hold pages of two applications (CoCoA's soft guarantee
    /// broken by the emergency path).
    pub shared_frames: u64,
    /// Base frames holding pre-fragmented data (the CAC stress test); constant.
    pub prefragmented_frames: u64,
}

impl ManagerStats {
    /// Memory bloat as in the paper's Table 2: the extra memory a policy took over what a
    /// 4 KiB-only manager (GPU-MMU) would have needed, as a fraction of the latter:
    /// `(peak_frames_reserved - peak_pages_resident) / peak_pages_resident`. The two peaks
    /// may fall at different times (a manager that keeps frames longer than pages shows
    /// that as bloat too). 0 when no page was ever resident; GPU-MMU's is always 0.
    pub fn bloat(&self) -> f64 {
        if self.peak_pages_resident == 0 {
            return 0.0;
        }
        let extra = self
            .peak_frames_reserved
            .saturating_sub(self.peak_pages_resident);
        extra as f64 / self.peak_pages_resident as f64
    }
}

/// Which memory-management policy places pages.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum ManagerKind {
    /// The GPU-MMU baseline: 4 KiB pages, frames shared among applications.
    GpuMmu,
    /// 2 MiB pages only.
    LargeOnly,
    /// GPU Mosaic: CoCoA, the in-place coalescer and CAC.
    #[default]
    Mosaic,
    /// GPU-MMU's placement, every translation hitting.
    Ideal,
}

/// A memory manager's configuration. Where the paper gives no number the default is a
/// documented choice.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct ManagerSpec {
    /// The policy (default `mosaic`).
    pub kind: ManagerKind,
    /// GPU memory in bytes (default 3 GiB, the paper's Table 1). Rounded down to whole
    /// large frames for `large-only` and `mosaic`, to base frames otherwise.
    pub memory_bytes: u64,
    /// Demand paging: `allocate` only reserves virtual pages, and each page crosses PCIe on
    /// its first touch. The paper evaluates both; the default is off (every page made
    /// resident by `allocate`, as the paper's main results and the artifact, whose fault
    /// queue has no callers).
    pub demand_paging: bool,
    /// Mosaic's contiguity-aware compaction on or off (default on).
    pub cac: bool,
    /// CAC's occupancy threshold: a large frame with fewer than this fraction of its 512
    /// base frames holding pages may be compacted (clamped to [0, 1]). The paper calls it
    /// configurable and gives no number; the default 0.5 compacts frames less than half
    /// used, where freeing the frame costs fewer than 256 page copies.
    pub cac_threshold: f64,
    /// Mosaic's emergency frames: free large frames kept aside for when the free frame list
    /// runs out (default 8, 16 MiB or 0.5% of 3 GiB; the paper gives no number).
    pub emergency_frames: u32,
    /// The CAC stress test's fragmentation index: the fraction of large frames (whole
    /// 2 MiB frames of `memory_bytes`, for every policy) holding pre-fragmented data, in
    /// [0, 1] (default 0: none).
    pub fragmentation_index: f64,
    /// The CAC stress test's large frame occupancy: the fraction of each pre-fragmented
    /// large frame's 512 base frames the data takes, in [0, 1] (default 0.5, the paper's
    /// Fig. 16a).
    pub frame_occupancy: f64,
    /// Seed of where the pre-fragmented data lies (default 1; a machine's configuration
    /// gives its `seed`, else the experiment's).
    pub prefragment_seed: u64,
}

impl Default for ManagerSpec {
    fn default() -> ManagerSpec {
        ManagerSpec {
            kind: ManagerKind::default(),
            memory_bytes: 3 << 30,
            demand_paging: false,
            cac: true,
            cac_threshold: 0.5,
            emergency_frames: 8,
            fragmentation_index: 0.0,
            frame_occupancy: 0.5,
            prefragment_seed: 1,
        }
    }
}

/// The memory manager `spec` describes, for `apps` applications (ids `0..apps`; an
/// application id beyond is still served, with its tables grown on first use).
pub fn build(spec: &ManagerSpec, apps: usize) -> Box<dyn MemoryManager> {
    match spec.kind {
        ManagerKind::GpuMmu => Box::new(GpuMmu::new(spec, apps)),
        ManagerKind::LargeOnly => Box::new(LargeOnly::new(spec, apps)),
        ManagerKind::Mosaic => Box::new(Mosaic::new(spec, apps)),
        ManagerKind::Ideal => Box::new(Ideal::new(spec, apps)),
    }
}

impl ManagerSpec {
    /// This configuration without pre-fragmented data, the fields that only place it back
    /// at their defaults (so that configurations differing only in them compare equal).
    pub fn unfragmented(&self) -> ManagerSpec {
        let d = ManagerSpec::default();
        ManagerSpec { fragmentation_index: 0.0, frame_occupancy: d.frame_occupancy, prefragment_seed: d.prefragment_seed, ..self.clone() }
    }

    /// Bytes of memory pre-fragmented data takes (the CAC stress test), which no
    /// application can have under any policy.
    pub fn prefragmented_bytes(&self) -> u64 {
        // Counted, not placed: validation asks for every machine and workload, and placing
        // is the size of the memory.
        let (frames, per_frame) = prefrag::amounts(self, self.memory_bytes / pages::LARGE_BYTES);
        (frames as u64 * per_frame as u64) * pages::BASE_BYTES
    }
}

/// A policy placing applications' pages in GPU memory.
pub trait MemoryManager: Send {
    /// The policy's name (`gpu-mmu`, `large-only`, `mosaic`, `ideal`).
    fn name(&self) -> &'static str;

    /// cudaMalloc of `[base, base + bytes)` for `app` (4 KiB aligned). Without demand
    /// paging, every page is placed now; with it, pages are placed on first touch.
    fn allocate(&mut self, app: AppId, base: u64, bytes: u64) -> Result<(), PlaceError>;

    /// cudaFree of the allocation at `base` of `bytes`: its pages' frames return to the
    /// free memory (as the policy decides).
    fn free(&mut self, app: AppId, base: u64, bytes: u64);

    /// The mapping of base page `vpn` of `app`, placing it first when demand paging left it
    /// on the host.
    fn touch(&mut self, app: AppId, vpn: u64) -> Result<Touch, PlaceError>;

    /// The mapping of base page `vpn` of `app` if it is resident, without changing anything.
    fn lookup(&self, app: AppId, vpn: u64) -> Option<Mapping>;

    /// Moves the TLB entries made stale since the last call into `out`.
    fn drain_invalidations(&mut self, out: &mut Vec<Invalidation>);

    /// True when every translation hits in the TLBs (the `ideal` policy).
    fn ideal(&self) -> bool {
        false
    }

    /// What the manager did and holds so far.
    fn stats(&self) -> ManagerStats;

    /// The base frames holding pre-fragmented data now, ascending (they move only by
    /// Mosaic's CAC); none for a manager that does not model it.
    fn prefragmented(&self) -> Vec<u64> {
        Vec::new()
    }
}
