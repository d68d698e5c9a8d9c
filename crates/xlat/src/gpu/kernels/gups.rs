//! `gups`: random read-modify-write updates of a big table (HPCC RandomAccess, the GUPS
//! application): every thread XORs random values into the table entries they select, with
//! an atomic XOR, which the machine sees as a store. One update per thread; the updates
//! are a thirty-second of the table's entries, so the footprint can be large while the
//! request count stays moderate.

use rand::Rng;

use super::grid::{Grid, Layout, Program, Steps, LANES};

/// Bytes of an entry (u64).
const ELEM: u64 = 8;

/// Table entries per update.
const ENTRIES_PER_UPDATE: u64 = 32;

/// The application.
pub(super) struct Gups {
    base: u64,
    /// Entries minus one: the table has a power-of-two size, as in HPCC.
    mask: u64,
    updates: Vec<u64>,
    /// The entries the updates changed, `(index, value)` sorted by index, from a table that
    /// starts as `table[i] = i`.
    #[cfg_attr(not(test), expect(dead_code, reason = "tests check the table"))]
    pub(super) touched: Vec<(u64, u64)>,
}

/// Entries for a footprint of `bytes`: the largest power of two that fits.
pub(super) fn entries(bytes: u64) -> u64 {
    1 << (bytes / ELEM).ilog2()
}

/// The random values of the updates for a table of `entries`.
pub(super) fn updates(seed: u64, entries: u64) -> Vec<u64> {
    let mut rng = super::rng(seed, "gups");
    (0..entries / ENTRIES_PER_UPDATE).map(|_| rng.random()).collect()
}

/// Builds the application for a footprint of `bytes`.
pub(super) fn grid(bytes: u64, seed: u64) -> Grid<Gups> {
    let entries = entries(bytes);
    let mask = entries - 1;
    let updates = updates(seed, entries);
    let mut by_index: Vec<(u64, u64)> = updates.iter().map(|&r| (r & mask, r)).collect();
    by_index.sort_unstable();
    let mut touched: Vec<(u64, u64)> = Vec::new();
    for (index, r) in by_index {
        match touched.last_mut() {
            Some((last, value)) if *last == index => *value ^= r,
            _ => touched.push((index, index ^ r)),
        }
    }
    let mut layout = Layout::default();
    let base = layout.alloc(0, entries * ELEM);
    Grid::new("gups", Gups { base, mask, updates, touched }, layout)
}

impl Program for Gups {
    fn launches(&self) -> usize {
        1
    }

    fn items(&self, _launch: usize) -> usize {
        self.updates.len().div_ceil(LANES)
    }

    fn emit(&self, _launch: usize, item: usize, out: &mut Steps) {
        let first = item * LANES;
        let lanes = &self.updates[first..(first + LANES).min(self.updates.len())];
        // Loading the thread's random value from registers, masking, address arithmetic.
        out.compute(6);
        out.store(lanes.iter().map(|&r| self.base + (r & self.mask) * ELEM));
    }
}
