//! `spmv`: `y = A x` with `A` in CSR, one warp per row (vector CSR, as Parboil's SPMV and
//! CUSP do), the irregular-gather pattern of SPMV. Lanes take 32 non-zeros of the row at a
//! time, load their column indices and values coalesced and gather `x` at those columns.
//! Like the finite-element matrices SPMV runs on, most non-zeros lie in a band around the
//! diagonal and the rest anywhere, so gathers are partly local and partly scattered.

use rand::Rng;

use super::grid::{Grid, Layout, Program, Steps, LANES};

/// Bytes of an index (u32) or a value (f32).
const ELEM: u64 = 4;

/// Mean non-zeros per row; rows have from half to one and a half times as many.
const AVG_NNZ: usize = 32;

/// Half-width of the band that holds most non-zeros.
const BAND: i64 = 128;

/// Out of eight non-zeros, how many lie in the band.
const IN_BAND_OF_8: u32 = 7;

/// Buffers by index.
const ROW_PTR: usize = 0;
const COLS: usize = 1;
const VALS: usize = 2;
const X: usize = 3;
const Y: usize = 4;

/// A square CSR matrix and the vector it multiplies. Values are small integers held as f32,
/// so every summation order gives the same exact result.
pub(super) struct Matrix {
    pub(super) row_ptr: Vec<u32>,
    pub(super) cols: Vec<u32>,
    pub(super) vals: Vec<f32>,
    pub(super) x: Vec<f32>,
}

/// The application: the matrix's structure (which decides the accesses) and its product.
pub(super) struct Spmv {
    row_ptr: Vec<u32>,
    cols: Vec<u32>,
    bases: [u64; 5],
    /// `y = A x`.
    #[cfg_attr(not(test), expect(dead_code, reason = "tests check the product"))]
    pub(super) y: Vec<f32>,
}

/// Rows for a footprint of `bytes`: a row costs its pointer, `x` and `y` entries and about
/// `AVG_NNZ` column indices and values.
pub(super) fn rows(bytes: u64) -> usize {
    (bytes / (3 * ELEM + 2 * ELEM * AVG_NNZ as u64)) as usize
}

/// The matrix and vector of `n` rows.
pub(super) fn matrix(seed: u64, n: usize) -> Matrix {
    let mut rng = super::rng(seed, "spmv");
    let mut row_ptr = vec![0u32];
    let (mut cols, mut vals) = (Vec::new(), Vec::new());
    let mut row = Vec::new();
    for r in 0..n {
        row.clear();
        for _ in 0..rng.random_range(AVG_NNZ / 2..=AVG_NNZ * 3 / 2) {
            let col = if rng.random_ratio(IN_BAND_OF_8, 8) {
                (r as i64 + rng.random_range(-BAND..=BAND)).clamp(0, n as i64 - 1) as u32
            } else {
                rng.random_range(0..n as u32)
            };
            row.push(col);
        }
        row.sort_unstable();
        row.dedup();
        cols.extend_from_slice(&row);
        vals.extend(row.iter().map(|_| rng.random_range(1..=4i8) as f32 * if rng.random() { 1.0 } else { -1.0 }));
        row_ptr.push(cols.len() as u32);
    }
    let x = (0..n).map(|_| f32::from(rng.random_range(-8..=8i8))).collect();
    Matrix { row_ptr, cols, vals, x }
}

/// Builds the application for a footprint of `bytes`.
pub(super) fn grid(bytes: u64, seed: u64) -> Grid<Spmv> {
    let n = rows(bytes);
    let Matrix { row_ptr, cols, vals, x } = matrix(seed, n);
    let y = (0..n)
        .map(|r| (row_ptr[r] as usize..row_ptr[r + 1] as usize).map(|k| vals[k] * x[cols[k] as usize]).sum())
        .collect();
    let mut layout = Layout::default();
    let sizes = [n + 1, cols.len(), cols.len(), n, n];
    let bases = sizes.map(|len| layout.alloc(0, len as u64 * ELEM));
    Grid::new("spmv", Spmv { row_ptr, cols, bases, y }, layout)
}

impl Spmv {
    fn at(&self, buffer: usize, index: usize) -> u64 {
        self.bases[buffer] + index as u64 * ELEM
    }
}

impl Program for Spmv {
    fn launches(&self) -> usize {
        1
    }

    fn items(&self, _launch: usize) -> usize {
        self.row_ptr.len() - 1
    }

    fn emit(&self, _launch: usize, row: usize, out: &mut Steps) {
        let (start, end) = (self.row_ptr[row] as usize, self.row_ptr[row + 1] as usize);
        out.compute(4);
        // Lanes 0 and 1 read the row's bounds.
        out.load([self.at(ROW_PTR, row), self.at(ROW_PTR, row + 1)]);
        for first in (start..end).step_by(LANES) {
            let lanes = first..(first + LANES).min(end);
            out.compute(3);
            out.load(lanes.clone().map(|k| self.at(COLS, k)));
            out.load(lanes.clone().map(|k| self.at(VALS, k)));
            out.load(lanes.map(|k| self.at(X, self.cols[k] as usize)));
            out.compute(2);
        }
        // The warp's shuffle reduction: five shuffles and five adds.
        out.compute(10);
        out.store([self.at(Y, row)]);
    }
}
