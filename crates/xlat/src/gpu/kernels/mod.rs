//! The built-in GPU applications of GPU Mosaic's model: eight CUDA-like programs whose
//! access patterns stand for the paper's Parboil, Rodinia, SHOC and CUDA SDK applications
//! (docs/gpu-workloads.md maps them). Each one really computes its result on the host when
//! built, from data drawn from a seeded generator, and derives every warp's coalesced
//! requests from that computation, as its CUDA code would issue them with 32 lanes per warp.
//! Beside them, a mix may run real programs' traces ([`traced`]).

mod bfs;
mod grid;
mod gups;
mod histo;
mod mm;
mod spmv;
mod stencil;
mod stream;
pub mod traced;
mod wavefront;

#[cfg(test)]
mod tests;

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use crate::gpu::kernel::Kernel;
use crate::{Error, Result};

/// Which built-in application.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum KernelKind {
    /// `c[i] = a[i] + b[i]` over large arrays, four passes (BLK, SCAN, RED).
    Stream,
    /// A 2D 5-point stencil over a grid, ping-pong buffers, three iterations (HS, SRAD, 3DS).
    Stencil,
    /// CSR sparse matrix times vector, one warp per row, irregular gathers of `x` (SPMV).
    Spmv,
    /// Level-synchronous breadth-first search, one launch per level (BFS2).
    Bfs,
    /// Random atomic updates of a big table (GUPS).
    Gups,
    /// Dense matrix multiply tiled in shared memory (MM).
    Mm,
    /// Histogram of an image and its equalization (HISTO).
    Histo,
    /// Needleman-Wunsch wavefront over a score matrix, one launch per block diagonal
    /// (NW, LUD).
    Wavefront,
}

impl KernelKind {
    /// Every application, in declaration order.
    pub const ALL: [KernelKind; 8] = [
        KernelKind::Stream,
        KernelKind::Stencil,
        KernelKind::Spmv,
        KernelKind::Bfs,
        KernelKind::Gups,
        KernelKind::Mm,
        KernelKind::Histo,
        KernelKind::Wavefront,
    ];

    /// The application's name (its serde name).
    pub fn name(self) -> &'static str {
        match self {
            KernelKind::Stream => "stream",
            KernelKind::Stencil => "stencil",
            KernelKind::Spmv => "spmv",
            KernelKind::Bfs => "bfs",
            KernelKind::Gups => "gups",
            KernelKind::Mm => "mm",
            KernelKind::Histo => "histo",
            KernelKind::Wavefront => "wavefront",
        }
    }
}

/// One application of a mix: a built-in one or a real program's trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum AppSpec {
    /// A built-in application.
    Builtin(KernelSpec),
    /// A trace.
    Trace(traced::TraceSpec),
}

impl AppSpec {
    /// Bytes the application allocates at most at once: a built-in's target, a trace's
    /// allocations.
    pub fn footprint(&self) -> u64 {
        match self {
            AppSpec::Builtin(spec) => spec.bytes,
            AppSpec::Trace(spec) => spec.bytes,
        }
    }

    /// Builds the application: a built-in one's data and result, or a trace read.
    pub fn build(&self) -> Result<Box<dyn Kernel>> {
        match self {
            AppSpec::Builtin(spec) => build(spec),
            AppSpec::Trace(spec) => Ok(Box::new(spec.build()?)),
        }
    }
}

/// One application to run: which, its footprint target and its data's seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KernelSpec {
    /// The application.
    pub kind: KernelKind,
    /// Bytes the application should allocate at most at once; the application sizes its
    /// data to stay at or a little below it.
    pub bytes: u64,
    /// Seed of the generator of its data.
    pub seed: u64,
}

const MIB: u64 = 1 << 20;

/// Smallest footprint target accepted.
pub const MIN_BYTES: u64 = MIB;

/// Largest footprint target accepted (the host holds the application's data too).
pub const MAX_BYTES: u64 = 64 << 30;

/// Footprint target for tests: small enough to build and check in a debug build.
pub const TINY_BYTES: u64 = 2 * MIB;

/// The default footprint target of `kind`: within the paper's 10-362 MiB per application,
/// chosen so that one run issues 0.5 to 2 million requests.
pub fn default_bytes(kind: KernelKind) -> u64 {
    MIB * match kind {
        KernelKind::Stream => 64,
        KernelKind::Stencil => 16,
        KernelKind::Spmv => 16,
        KernelKind::Bfs => 12,
        KernelKind::Gups => 256,
        KernelKind::Mm => 12,
        KernelKind::Histo => 48,
        KernelKind::Wavefront => 80,
    }
}

/// Builds the application of `spec`: generates its data, computes its result and lays out
/// its buffers. Errors if `spec.bytes` is outside [`MIN_BYTES`]..=[`MAX_BYTES`].
pub fn build(spec: &KernelSpec) -> Result<Box<dyn Kernel>> {
    check_bytes(spec.bytes)?;
    let (bytes, seed) = (spec.bytes, spec.seed);
    Ok(match spec.kind {
        KernelKind::Stream => Box::new(stream::grid(bytes, seed)),
        KernelKind::Stencil => Box::new(stencil::grid(bytes, seed)),
        KernelKind::Spmv => Box::new(spmv::grid(bytes, seed)),
        KernelKind::Bfs => Box::new(bfs::grid(bytes, seed)),
        KernelKind::Gups => Box::new(gups::grid(bytes, seed)),
        KernelKind::Mm => Box::new(mm::grid(bytes, seed)),
        KernelKind::Histo => Box::new(histo::grid(bytes, seed)),
        KernelKind::Wavefront => Box::new(wavefront::grid(bytes, seed)),
    })
}

/// Builds every application of `specs`, in order, several at once (each computes its own
/// result from its own seed, so the outcome does not depend on how many run together).
pub fn build_all(specs: &[AppSpec]) -> Result<Vec<Box<dyn Kernel>>> {
    use rayon::prelude::*;
    specs.par_iter().map(AppSpec::build).collect()
}

/// Checks `spec` without building it: its footprint in range.
pub fn check_spec(spec: &KernelSpec) -> Result<()> {
    check_bytes(spec.bytes)
}

fn check_bytes(bytes: u64) -> Result<()> {
    if (MIN_BYTES..=MAX_BYTES).contains(&bytes) {
        Ok(())
    } else {
        let message = format!("{bytes} bytes: need {MIN_BYTES} (1 MiB) to {MAX_BYTES} (64 GiB)");
        Err(Error::config("kernel.bytes", message))
    }
}

/// The data generator of an application: the seed, salted by the application so that two
/// applications with one seed do not draw the same numbers.
fn rng(seed: u64, salt: &str) -> Xoshiro256PlusPlus {
    let salt = salt.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    Xoshiro256PlusPlus::seed_from_u64(seed ^ salt)
}
