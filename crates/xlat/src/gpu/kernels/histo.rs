//! `histo`: histogram equalization of an image (HISTO): a launch streams the pixels and
//! atomically increments their bins in global memory (scattered atomics, few lines per
//! warp because neighbouring pixels have similar values), a small launch turns the
//! histogram into a lookup table in a temporary buffer, the histogram is freed, and a last
//! launch streams the pixels again, gathers their table entries and writes the output.

use rand::Rng;

use super::grid::{Grid, Layout, Program, Steps, LANES};

/// Bytes of a pixel, a bin or a table entry (u32).
const ELEM: u64 = 4;

/// Bins of the histogram (pixel values are below this).
pub(super) const BINS: usize = 4096;

/// Largest change of value from a pixel to the next.
const STEP: i32 = 8;

/// Largest output value.
const LEVELS: u64 = 255;

/// Buffers by index.
const INPUT: usize = 0;
const HIST: usize = 1;
const OUTPUT: usize = 2;
const LUT: usize = 3;

/// The application.
pub(super) struct Histo {
    input: Vec<u32>,
    bases: [u64; 4],
    /// The histogram.
    #[cfg_attr(not(test), expect(dead_code, reason = "tests check the histogram"))]
    pub(super) hist: Vec<u32>,
    /// The equalized image.
    #[cfg_attr(not(test), expect(dead_code, reason = "tests check the equalized image"))]
    pub(super) output: Vec<u32>,
}

/// Pixels for a footprint of `bytes` (input and output images, histogram and table).
pub(super) fn pixels(bytes: u64) -> usize {
    ((bytes - 2 * BINS as u64 * ELEM) / (2 * ELEM)) as usize
}

/// The image: a random walk over the values, so that neighbouring pixels are alike.
pub(super) fn inputs(seed: u64, pixels: usize) -> Vec<u32> {
    let mut rng = super::rng(seed, "histo");
    let mut value = BINS as i32 / 2;
    (0..pixels)
        .map(|_| {
            value = (value + rng.random_range(-STEP..=STEP)).clamp(0, BINS as i32 - 1);
            value as u32
        })
        .collect()
}

/// The lookup table of histogram equalization: the cumulative count mapped to `0..=LEVELS`.
pub(super) fn equalize(hist: &[u32]) -> Vec<u32> {
    let total: u64 = hist.iter().map(|&h| u64::from(h)).sum();
    let mut cdf = 0;
    let cdf_min = u64::from(hist.iter().copied().find(|&h| h > 0).unwrap_or(0));
    hist.iter()
        .map(|&h| {
            cdf += u64::from(h);
            (cdf.saturating_sub(cdf_min) * LEVELS / (total - cdf_min).max(1)) as u32
        })
        .collect()
}

/// Builds the application for a footprint of `bytes`.
pub(super) fn grid(bytes: u64, seed: u64) -> Grid<Histo> {
    let input = inputs(seed, pixels(bytes));
    let mut hist = vec![0u32; BINS];
    for &v in &input {
        hist[v as usize] += 1;
    }
    let lut = equalize(&hist);
    let output = input.iter().map(|&v| lut[v as usize]).collect();
    let mut layout = Layout::default();
    let image = input.len() as u64 * ELEM;
    let table = BINS as u64 * ELEM;
    let mut bases = [layout.alloc(0, image), layout.alloc(0, table), layout.alloc(0, image), 0];
    bases[LUT] = layout.alloc(1, table);
    // The histogram is dead once the table is built.
    layout.free(2, bases[HIST]);
    Grid::new("histo", Histo { input, bases, hist, output }, layout)
}

impl Histo {
    fn at(&self, buffer: usize, index: usize) -> u64 {
        self.bases[buffer] + index as u64 * ELEM
    }

    fn pixels(&self, item: usize) -> std::ops::Range<usize> {
        item * LANES..(item * LANES + LANES).min(self.input.len())
    }
}

impl Program for Histo {
    fn launches(&self) -> usize {
        3
    }

    fn items(&self, launch: usize) -> usize {
        if launch == 1 { BINS / LANES } else { self.input.len().div_ceil(LANES) }
    }

    fn emit(&self, launch: usize, item: usize, out: &mut Steps) {
        let pixels = self.pixels(item);
        let value = |i: usize| self.input[i] as usize;
        out.compute(3);
        match launch {
            0 => {
                out.load(pixels.clone().map(|i| self.at(INPUT, i)));
                out.compute(2);
                out.store(pixels.map(|i| self.at(HIST, value(i))));
            }
            1 => {
                let bins = item * LANES..item * LANES + LANES;
                out.load(bins.clone().map(|b| self.at(HIST, b)));
                // The block's scan of the counts in shared memory and the scaling.
                out.compute(40);
                out.store(bins.map(|b| self.at(LUT, b)));
            }
            _ => {
                out.load(pixels.clone().map(|i| self.at(INPUT, i)));
                out.compute(1);
                out.load(pixels.clone().map(|i| self.at(LUT, value(i))));
                out.compute(1);
                out.store(pixels.map(|i| self.at(OUTPUT, i)));
            }
        }
    }
}
