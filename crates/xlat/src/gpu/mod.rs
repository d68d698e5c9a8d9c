//! GPU Mosaic (seed 004): a GPU of many SMs running several applications at once, each in
//! its own address space, with per-SM L1 TLBs, a shared L2 TLB and a shared page walker, and
//! a memory manager placing the applications' pages (the GPU-MMU baseline, 2 MiB-only pages,
//! Mosaic's CoCoA, in-place coalescer and CAC, or an ideal TLB).

pub mod caches;
pub mod kernel;
pub mod kernels;
pub mod machine;
pub mod memory;
pub mod mix;
pub mod params;
pub mod prefetch;
pub mod slots;
pub mod sm;
pub mod tlb;
pub mod walker;
