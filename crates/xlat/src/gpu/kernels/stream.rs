//! `stream`: element-wise sums over large arrays, the streaming pattern of BLK, SCAN and
//! RED. Four passes, each a launch of one thread per element: `c = a + b`, `t = c + a`
//! into a temporary buffer, `b = t + c`, then (the temporary freed) `a = b + c`.

use rand::Rng;

use super::grid::{Grid, Layout, Program, Steps, LANES};

/// Bytes of an element (f32).
const ELEM: u64 = 4;

/// Buffers `a`, `b`, `c` and the temporary `t`, by index.
const BUFFERS: usize = 4;
const TEMP: usize = 3;

/// Each pass as (output, first input, second input) buffer indices.
const PASSES: [[usize; 3]; 4] = [[2, 0, 1], [TEMP, 2, 0], [1, TEMP, 2], [0, 1, 2]];

/// The application: `n` elements per array.
pub(super) struct Stream {
    n: usize,
    bases: [u64; BUFFERS],
    /// The last pass's output.
    #[cfg_attr(not(test), expect(dead_code, reason = "the accesses do not depend on the values; tests check them"))]
    pub(super) result: Vec<f32>,
}

/// The arrays `a` and `b` of `n` elements.
pub(super) fn inputs(seed: u64, n: usize) -> [Vec<f32>; 2] {
    let mut rng = super::rng(seed, "stream");
    [(); 2].map(|()| (0..n).map(|_| rng.random::<f32>()).collect())
}

/// Builds the application for a footprint of `bytes` (four arrays live at once).
pub(super) fn grid(bytes: u64, seed: u64) -> Grid<Stream> {
    let n = (bytes / (BUFFERS as u64 * ELEM)) as usize;
    let result = run(inputs(seed, n), n);
    let mut layout = Layout::default();
    let array = n as u64 * ELEM;
    let mut bases = [0; BUFFERS];
    for base in &mut bases[..TEMP] {
        *base = layout.alloc(0, array);
    }
    // The temporary lives from the second pass to the third.
    bases[TEMP] = layout.alloc(1, array);
    layout.free(3, bases[TEMP]);
    Grid::new("stream", Stream { n, bases, result }, layout)
}

/// Runs the passes on the host; returns the last output.
fn run([a, b]: [Vec<f32>; 2], n: usize) -> Vec<f32> {
    let mut arrays = [a, b, vec![0.0; n], vec![0.0; n]];
    for [out, x, y] in PASSES {
        arrays[out] = arrays[x].iter().zip(&arrays[y]).map(|(p, q)| p + q).collect();
    }
    std::mem::take(&mut arrays[PASSES[PASSES.len() - 1][0]])
}

impl Program for Stream {
    fn launches(&self) -> usize {
        PASSES.len()
    }

    fn items(&self, _launch: usize) -> usize {
        self.n.div_ceil(LANES)
    }

    fn emit(&self, launch: usize, item: usize, out: &mut Steps) {
        let first = item * LANES;
        let lanes = first..(first + LANES).min(self.n);
        let at = |buffer: usize| lanes.clone().map(move |i| self.bases[buffer] + i as u64 * ELEM);
        let [dst, x, y] = PASSES[launch];
        // Loop test, index and address arithmetic.
        out.compute(3);
        out.load(at(x));
        out.load(at(y));
        out.compute(1);
        out.store(at(dst));
    }
}
