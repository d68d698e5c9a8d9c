//! `wavefront`: Needleman-Wunsch global alignment of two random sequences (Rodinia's NW;
//! LUD sweeps its matrix in the same block-diagonal order). The `(n + 1) × (n + 1)` score
//! matrix is filled in 32 × 32 tiles, one warp per tile, one launch per anti-diagonal of
//! tiles: a warp loads its tile's north row and west column of scores and its tile of the
//! similarity matrix, fills the tile diagonal by diagonal in shared memory, then stores it.

use rand::Rng;

use super::grid::{Grid, Layout, Program, Steps, LANES};

/// Bytes of a score or similarity (i32).
const ELEM: u64 = 4;

/// Tile side.
const TILE: usize = LANES;

/// Gap penalty.
pub(super) const PENALTY: i32 = 10;

/// Letters of the sequences' alphabet (BLOSUM62's 24).
const LETTERS: usize = 24;

/// The application over sequences of `n` letters.
pub(super) struct Wavefront {
    pub(super) n: usize,
    /// The score matrix, then the similarity matrix.
    bases: [u64; 2],
    /// The score matrix, row-major, `n + 1` columns.
    #[cfg_attr(not(test), expect(dead_code, reason = "the accesses do not depend on the values; tests check them"))]
    pub(super) score: Vec<i32>,
}

/// Sequence length for a footprint of `bytes` (two `(n + 1)²` matrices): a multiple of the
/// tile.
pub(super) fn length(bytes: u64) -> usize {
    let side = (bytes as f64 / (2 * ELEM) as f64).sqrt() as usize;
    ((side - 1) / TILE * TILE).max(TILE)
}

/// The similarity matrix: entry `(i, j)` for `i, j ≥ 1` scores letter `i` of one random
/// sequence against letter `j` of the other with a random symmetric table; row and column 0
/// are unused, as in Rodinia.
pub(super) fn similarity(seed: u64, n: usize) -> Vec<i32> {
    let mut rng = super::rng(seed, "wavefront");
    // Entry (a, b) of the table is drawn at index (min, max), which makes it symmetric.
    let table: Vec<i32> = (0..LETTERS * LETTERS).map(|_| rng.random_range(-4..=5)).collect();
    let score = |a: usize, b: usize| table[a.min(b) * LETTERS + a.max(b)];
    let mut sequence = || (0..n).map(|_| rng.random_range(0..LETTERS)).collect::<Vec<_>>();
    let (first, second) = (sequence(), sequence());
    let mut out = vec![0; (n + 1) * (n + 1)];
    for i in 1..=n {
        for j in 1..=n {
            out[i * (n + 1) + j] = score(first[i - 1], second[j - 1]);
        }
    }
    out
}

/// The recurrence of one cell from its diagonal, north and west neighbours.
pub(super) fn cell(diagonal: i32, north: i32, west: i32, similarity: i32) -> i32 {
    (diagonal + similarity).max(north - PENALTY).max(west - PENALTY)
}

/// Builds the application for a footprint of `bytes`.
pub(super) fn grid(bytes: u64, seed: u64) -> Grid<Wavefront> {
    let n = length(bytes);
    let score = fill_by_tiles(&similarity(seed, n), n);
    let mut layout = Layout::default();
    let matrix = ((n + 1) * (n + 1)) as u64 * ELEM;
    let bases = [layout.alloc(0, matrix), layout.alloc(0, matrix)];
    Grid::new("wavefront", Wavefront { n, bases, score }, layout)
}

/// The tiles of anti-diagonal `d` of a `tiles × tiles` grid, as `(row, column)`.
fn diagonal(d: usize, tiles: usize) -> impl Iterator<Item = (usize, usize)> {
    (d.saturating_sub(tiles - 1)..=d.min(tiles - 1)).map(move |r| (r, d - r))
}

/// The score matrix filled as the GPU fills it: tile diagonal after tile diagonal.
fn fill_by_tiles(similarity: &[i32], n: usize) -> Vec<i32> {
    let pitch = n + 1;
    let mut score = vec![0; pitch * pitch];
    for k in 0..=n {
        score[k] = -(k as i32) * PENALTY;
        score[k * pitch] = -(k as i32) * PENALTY;
    }
    let tiles = n / TILE;
    for d in 0..2 * tiles - 1 {
        for (tr, tc) in diagonal(d, tiles) {
            for i in tr * TILE + 1..=(tr + 1) * TILE {
                for j in tc * TILE + 1..=(tc + 1) * TILE {
                    let (up, here) = ((i - 1) * pitch + j, i * pitch + j);
                    score[here] = cell(score[up - 1], score[up], score[here - 1], similarity[here]);
                }
            }
        }
    }
    score
}

impl Program for Wavefront {
    fn launches(&self) -> usize {
        2 * (self.n / TILE) - 1
    }

    fn items(&self, launch: usize) -> usize {
        diagonal(launch, self.n / TILE).count()
    }

    fn emit(&self, launch: usize, item: usize, out: &mut Steps) {
        let tiles = self.n / TILE;
        let tile_row = launch.saturating_sub(tiles - 1) + item;
        let (i0, j0) = (tile_row * TILE + 1, (launch - tile_row) * TILE + 1);
        let pitch = self.n + 1;
        let [score, similarity] = self.bases;
        let at = move |base: u64, i: usize, j: usize| base + (i * pitch + j) as u64 * ELEM;
        let row = move |base: u64, i: usize| (0..LANES).map(move |l| at(base, i, j0 + l));
        out.compute(8);
        // Lane 0 loads the corner, then the north row and the west column.
        out.load([at(score, i0 - 1, j0 - 1)]);
        out.load(row(score, i0 - 1));
        out.load((0..LANES).map(|l| at(score, i0 + l, j0 - 1)));
        for r in 0..TILE {
            out.load(row(similarity, i0 + r));
        }
        // 63 diagonals of the tile, each about a dozen instructions, and a barrier each.
        out.compute(63 * 13);
        for r in 0..TILE {
            out.compute(1);
            out.store(row(score, i0 + r));
        }
    }
}
