//! `stencil`: a 2D 5-point Jacobi stencil over a grid of f32 cells, the pattern of HotSpot,
//! SRAD and 3DS. One thread per cell (a warp covers 32 cells of a row); each iteration is a
//! launch reading one buffer and writing the other (ping-pong); neighbours past the border
//! are clamped to the border cell.

use rand::Rng;

use super::grid::{Grid, Layout, Program, Steps, LANES};

/// Bytes of a cell (f32).
const ELEM: u64 = 4;

/// Iterations (launches).
pub(super) const ITERATIONS: usize = 3;

/// The application over a `width` × `height` grid.
pub(super) struct Stencil {
    pub(super) width: usize,
    pub(super) height: usize,
    bases: [u64; 2],
    /// The grid after the last iteration.
    #[cfg_attr(not(test), expect(dead_code, reason = "the accesses do not depend on the values; tests check them"))]
    pub(super) result: Vec<f32>,
}

/// Width and height for a footprint of `bytes` (two grids): about square, the width a
/// multiple of 32 so that rows start on a request boundary.
pub(super) fn dims(bytes: u64) -> (usize, usize) {
    let cells = bytes / (2 * ELEM);
    let width = ((cells as f64).sqrt() as u64 / LANES as u64 * LANES as u64).max(LANES as u64);
    (width as usize, (cells / width) as usize)
}

/// The initial grid.
pub(super) fn inputs(seed: u64, cells: usize) -> Vec<f32> {
    let mut rng = super::rng(seed, "stencil");
    (0..cells).map(|_| rng.random::<f32>()).collect()
}

/// One iteration's value of a cell from its centre and four neighbours.
pub(super) fn update(centre: f32, north: f32, south: f32, west: f32, east: f32) -> f32 {
    0.2 * (centre + north + south + west + east)
}

/// Builds the application for a footprint of `bytes`.
pub(super) fn grid(bytes: u64, seed: u64) -> Grid<Stencil> {
    let (width, height) = dims(bytes);
    let mut cells = inputs(seed, width * height);
    for _ in 0..ITERATIONS {
        cells = iterate(&cells, width, height);
    }
    let mut layout = Layout::default();
    let grid_bytes = (width * height) as u64 * ELEM;
    let bases = [layout.alloc(0, grid_bytes), layout.alloc(0, grid_bytes)];
    Grid::new("stencil", Stencil { width, height, bases, result: cells }, layout)
}

/// One iteration on the host.
fn iterate(cells: &[f32], width: usize, height: usize) -> Vec<f32> {
    let at = |y: usize, x: usize| cells[y * width + x];
    let mut out = Vec::with_capacity(cells.len());
    for y in 0..height {
        let (north, south) = (y.saturating_sub(1), (y + 1).min(height - 1));
        for x in 0..width {
            let (west, east) = (x.saturating_sub(1), (x + 1).min(width - 1));
            out.push(update(at(y, x), at(north, x), at(south, x), at(y, west), at(y, east)));
        }
    }
    out
}

impl Program for Stencil {
    fn launches(&self) -> usize {
        ITERATIONS
    }

    fn items(&self, _launch: usize) -> usize {
        self.width / LANES * self.height
    }

    fn emit(&self, launch: usize, item: usize, out: &mut Steps) {
        let per_row = self.width / LANES;
        let (y, x0) = (item / per_row, item % per_row * LANES);
        let (input, output) = (self.bases[launch % 2], self.bases[(launch + 1) % 2]);
        let width = self.width;
        let row = move |base: u64, y: usize, dx: fn(usize, usize) -> usize| {
            (x0..x0 + LANES).map(move |x| base + (y * width + dx(x, width)) as u64 * ELEM)
        };
        let (north, south) = (y.saturating_sub(1), (y + 1).min(self.height - 1));
        // Index arithmetic and the border clamps.
        out.compute(6);
        out.load(row(input, y, |x, _| x));
        out.load(row(input, north, |x, _| x));
        out.load(row(input, south, |x, _| x));
        out.load(row(input, y, |x, _| x.saturating_sub(1)));
        out.load(row(input, y, |x, w| (x + 1).min(w - 1)));
        // Four adds and a multiply, with their conversions.
        out.compute(6);
        out.store(row(output, y, |x, _| x));
    }
}
