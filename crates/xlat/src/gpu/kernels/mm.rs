//! `mm`: dense `C = A B` (MM), tiled in shared memory as the CUDA SDK's matrixMul does:
//! a block of 32 × 32 threads computes a 32 × 32 tile of `C`, one warp per tile row, and
//! for each 32-wide slice of the inner dimension loads a tile of `A` and one of `B` into
//! shared memory (one row each per warp, coalesced), so the only global accesses are those
//! tile loads and the final store of `C`; the multiply-adds read shared memory.

use rand::Rng;

use super::grid::{Grid, Layout, Program, Steps, LANES};

/// Bytes of an element (f32).
const ELEM: u64 = 4;

/// Tile side: a warp's width.
const TILE: usize = LANES;

/// Shapes: `A` is `m × k`, `B` `k × n`, `C` `m × n`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Shape {
    pub(super) m: usize,
    pub(super) n: usize,
    pub(super) k: usize,
}

/// The application.
pub(super) struct Mm {
    shape: Shape,
    /// `A`, `B`, `C`.
    bases: [u64; 3],
    /// The product, row-major.
    #[cfg_attr(not(test), expect(dead_code, reason = "the accesses do not depend on the values; tests check them"))]
    pub(super) c: Vec<f32>,
}

/// The shape for a footprint of `bytes`: square `C` of side `s` and inner dimension `s/4`,
/// so `4 (s²/4 + s²/4 + s²) = 6 s²` bytes; `s` a multiple of four tiles. A thin inner
/// dimension keeps the multiply-adds, and the requests, moderate for the footprint.
pub(super) fn shape(bytes: u64) -> Shape {
    let side = ((bytes as f64 / (1.5 * ELEM as f64)).sqrt() as usize / (4 * TILE) * (4 * TILE)).max(4 * TILE);
    Shape { m: side, n: side, k: side / 4 }
}

/// `A` and `B`, small integers held as f32 so that every summation order is exact.
pub(super) fn inputs(seed: u64, shape: Shape) -> [Vec<f32>; 2] {
    let mut rng = super::rng(seed, "mm");
    [shape.m * shape.k, shape.k * shape.n].map(|len| (0..len).map(|_| f32::from(rng.random_range(-4..=4i8))).collect())
}

/// Builds the application for a footprint of `bytes`.
pub(super) fn grid(bytes: u64, seed: u64) -> Grid<Mm> {
    let shape = shape(bytes);
    let c = multiply(&inputs(seed, shape), shape);
    let mut layout = Layout::default();
    let bases = [shape.m * shape.k, shape.k * shape.n, shape.m * shape.n].map(|len| layout.alloc(0, len as u64 * ELEM));
    Grid::new("mm", Mm { shape, bases, c }, layout)
}

/// The product on the host, in row order with the inner loop over `C`'s row (fast on a CPU;
/// the values are exact, so the order does not matter).
fn multiply([a, b]: &[Vec<f32>; 2], Shape { m, n, k }: Shape) -> Vec<f32> {
    let mut c = vec![0.0; m * n];
    for (i, row) in c.chunks_exact_mut(n).enumerate() {
        for (kk, &scale) in a[i * k..(i + 1) * k].iter().enumerate() {
            for (out, &v) in row.iter_mut().zip(&b[kk * n..(kk + 1) * n]) {
                *out += scale * v;
            }
        }
    }
    c
}

impl Program for Mm {
    fn launches(&self) -> usize {
        1
    }

    /// One item per warp: a row of a tile of `C`.
    fn items(&self, _launch: usize) -> usize {
        self.shape.m * self.shape.n / LANES
    }

    fn emit(&self, _launch: usize, item: usize, out: &mut Steps) {
        let Shape { n, k, .. } = self.shape;
        let (tile, r) = (item / TILE, item % TILE);
        let (tile_row, tile_col) = (tile / (n / TILE), tile % (n / TILE));
        let row = tile_row * TILE + r;
        let at = |buffer: usize, index: usize| (0..LANES).map(move |l| self.bases[buffer] + (index + l) as u64 * ELEM);
        for slice in 0..k / TILE {
            out.compute(4);
            out.load(at(0, row * k + slice * TILE));
            out.load(at(1, (slice * TILE + r) * n + tile_col * TILE));
            // Two barriers, 32 multiply-adds and their 64 shared-memory reads, loop control.
            out.compute(2 + 32 + 64 + 2);
        }
        out.compute(2);
        out.store(at(2, row * n + tile_col * TILE));
    }
}
