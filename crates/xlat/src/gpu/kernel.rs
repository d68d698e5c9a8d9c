//! What a GPU application is to the GPU machine: its allocations (cudaMalloc and cudaFree,
//! in program order) and a sequence of kernel launches, each a grid of warps whose
//! warp-level memory instructions arrive already coalesced into 128-byte requests.
//!
//! The machine, not the kernel, decides when each warp runs (its scheduler and the latency
//! of what the warp waits for), so a kernel gives each warp's instructions on demand, warp by
//! warp, from a cursor of its own: [`Kernel::next`] for warp `w` must not depend on how far
//! other warps have gone. Kernels compute their real result when built (a BFS its levels, a
//! matrix multiply its product) and derive every warp's accesses from it.

use crate::memref::AccessKind;
use crate::Result;

/// Bytes of one coalesced memory request: a warp's lanes touching one 128-byte aligned
/// segment make one request, as GPGPU-Sim's coalescer and Accel-Sim's do.
pub const REQUEST_BYTES: u64 = 128;

/// An allocation event of an application, in program order, before its first launch or
/// between launches (`before_launch`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemEvent {
    /// cudaMalloc: the virtual range `[base, base + bytes)` becomes usable.
    Alloc {
        /// First byte, 4 KiB aligned.
        base: u64,
        /// Bytes, a positive multiple of 4 KiB.
        bytes: u64,
    },
    /// cudaFree of a whole earlier allocation.
    Free {
        /// First byte of the allocation freed.
        base: u64,
        /// Its bytes.
        bytes: u64,
    },
}

/// One warp-level memory instruction, and the non-memory instructions the warp issues
/// before it (since its previous memory instruction).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WarpInstr {
    /// Non-memory warp instructions issued before this memory instruction.
    pub compute: u32,
    /// Load or store (an atomic is a store).
    pub kind: Option<AccessKind>,
    /// The distinct 128-byte aligned virtual addresses of the coalesced requests (1 to 32),
    /// in lane order of their first lane; empty for a warp's last step, which only issues
    /// `compute` instructions and exits.
    pub lines: Vec<u64>,
}

impl WarpInstr {
    /// Empties the instruction, keeping the allocation of its line list.
    pub fn clear(&mut self) {
        self.compute = 0;
        self.kind = None;
        self.lines.clear();
    }

    /// Warp instructions this step counts: its compute instructions and, when it has
    /// requests, the memory instruction.
    pub fn instructions(&self) -> u64 {
        u64::from(self.compute) + u64::from(!self.lines.is_empty())
    }
}

/// One GPU application: allocation events and a sequence of kernel launches.
pub trait Kernel: Send {
    /// The application's name in results (`bfs`, `gups`).
    fn name(&self) -> &str;

    /// The allocation events that come before launch `launch` (0 for those before the
    /// first), in program order; after the last launch (`launch == self.launches()`), the
    /// frees at exit.
    fn events(&self, launch: usize) -> &[MemEvent];

    /// Kernel launches, run one after another (a launch starts when every warp of the
    /// previous one has exited).
    fn launches(&self) -> usize;

    /// Warps of launch `launch`'s grid.
    fn warps(&self, launch: usize) -> usize;

    /// Writes the next step of warp `warp` of launch `launch` into `out` (cleared first by
    /// the caller) and returns true; returns false once the warp has exited.
    fn next(&mut self, launch: usize, warp: usize, out: &mut WarpInstr) -> bool;

    /// Bytes the application allocates at most at once (its footprint).
    fn footprint(&self) -> u64;
}

/// Checks that every request of `instr` lies in a live allocation of `live`
/// (`(base, bytes)` pairs); for tests of kernels, and for traces of real programs.
pub fn check_in_allocations(instr: &WarpInstr, live: &[(u64, u64)]) -> Result<()> {
    for &line in &instr.lines {
        if line % REQUEST_BYTES != 0 {
            return Err(crate::Error::Simulation(format!("request {line:#x} is not 128-byte aligned")));
        }
        if !live.iter().any(|&(base, bytes)| line >= base && line < base + bytes) {
            return Err(crate::Error::Simulation(format!("request {line:#x} is outside every live allocation")));
        }
    }
    Ok(())
}
