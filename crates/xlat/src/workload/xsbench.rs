//! XSBench: the Monte Carlo neutron-transport proxy's macroscopic cross-section lookups
//! (history-based), after ANL's XSBench v20.
//!
//! Data: `nuclides` nuclide grids of `gridpoints` points each (48 bytes: energy and five cross
//! sections, energies random in [0, 1) and sorted per nuclide), 12 materials (XSBench's
//! nuclide counts for its 68- and 355-nuclide problems; which nuclides, and their
//! concentrations, are drawn from the seed), and the acceleration structure of `grid`:
//!
//! * `unionized`: every grid energy, sorted (`nuclides × gridpoints` doubles), and an index
//!   grid of `nuclides` 4-byte indices per unionized energy — the index of each nuclide's
//!   bracketing point;
//! * `hash`: `hash_bins` equal energy bins, each with the 4-byte index of every nuclide's
//!   point at the bin's lower edge;
//! * `nuclide`: nothing; each nuclide's grid is binary-searched.
//!
//! A lookup draws an energy and a material (XSBench's material probabilities), locates the
//! energy (a binary search of the unionized grid, or the hash bin), and for each nuclide of
//! the material reads its index and concentration, finds its bracketing points (the index
//! grid entry, or a binary search of the nuclide grid within the bounds the hash gives or the
//! whole grid), reads both points' energy and five cross sections, and interpolates; the
//! macroscopic vector accumulates in registers (not emitted).
//!
//! The `grid` setup phase (emitted when `setup` is true) emits one store per element of each
//! structure as it is filled, and the loads of the index-grid construction; the sorts'
//! comparisons and moves are not emitted.
//!
//! Self-check: for every nuclide of every lookup, the bracketing points must bracket the
//! energy (`E[l] ≤ e < E[l+1]`, clamped at the grid's ends) — the property every grid type
//! must deliver; the run also reports XSBench's verification checksum (the sum over lookups of
//! 1 + the index of the largest macroscopic cross section).
//!
//! Instructions (estimated from the C source's operations): 30 per lookup (random draws,
//! material choice, result reduction), 6 per binary-search step, 45 per nuclide (loads, five
//! interpolations and accumulations); setup 4 per element stored, 6 per index computed.

use super::address_space::{AddressSpace, Allocator};
use super::emit::{Emitter, SimVec};
use super::{Expected, ExpectedPhase, Region, Scale, Workload};
use rand::seq::index::sample;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

/// XSBench's probability of each of its 12 materials (`pick_mat`).
const MATERIAL_DIST: [f64; 12] = [0.140, 0.052, 0.275, 0.134, 0.154, 0.064, 0.066, 0.055, 0.008, 0.015, 0.025, 0.013];
/// Nuclides per material in XSBench's 68-nuclide (`small`) problem.
const NUCS_SMALL: [usize; 12] = [34, 5, 4, 4, 27, 21, 21, 21, 21, 21, 21, 9];
/// Nuclides per material in the 355-nuclide (`large`) problem: the fuel has 321.
const NUCS_LARGE: [usize; 12] = [321, 5, 4, 4, 27, 21, 21, 21, 21, 21, 21, 9];
/// Bytes per nuclide grid point: energy and five cross sections.
const POINT_BYTES: u64 = 48;
/// Cross sections per point.
const XS: usize = 5;

const LOOKUP_INSTRUCTIONS: u64 = 30;
const SEARCH_STEP_INSTRUCTIONS: u64 = 6;
const NUCLIDE_INSTRUCTIONS: u64 = 45;
const STORE_INSTRUCTIONS: u64 = 4;
const INDEX_INSTRUCTIONS: u64 = 6;

/// The acceleration structure of the energy search.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Grid {
    /// Unionized energy grid with a full index grid.
    Unionized,
    /// Binary search of each nuclide's grid.
    Nuclide,
    /// Equal-width energy bins with per-nuclide indices.
    Hash,
}

/// Parameters of XSBench.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Xsbench {
    /// Nuclides: 68 (XSBench `small`) or 355 (`large`).
    pub nuclides: u32,
    /// Energy grid points per nuclide (XSBench default 11303).
    pub gridpoints: u32,
    /// Cross-section lookups.
    pub lookups: u64,
    /// `unionized`, `nuclide` or `hash`.
    pub grid: Grid,
    /// Energy bins of the hash grid.
    pub hash_bins: u32,
    /// Emit the grid construction phase (it is always performed).
    pub setup: bool,
}

/// One nuclide grid point.
#[derive(Clone, Copy, Debug, Default)]
struct Point {
    energy: f64,
    xs: [f64; XS],
}

/// Simulated addresses of the program's data, in allocation order.
struct Layout {
    nuclide_grid: u64,
    energy_grid: u64,
    index_grid: u64,
    num_nucs: u64,
    mats: u64,
    concs: u64,
}

/// The simulation data, in Rust memory with simulated addresses.
struct Data {
    points: Vec<Point>,
    energies: SimVec<f64>,
    index: SimVec<u32>,
    num_nucs: SimVec<u32>,
    mats: SimVec<u32>,
    concs: SimVec<f64>,
    point_base: u64,
}

impl Xsbench {
    fn n_points(&self) -> usize {
        self.nuclides as usize * self.gridpoints as usize
    }

    fn nucs_per_material(&self) -> &'static [usize; 12] {
        if self.nuclides == 68 {
            &NUCS_SMALL
        } else {
            &NUCS_LARGE
        }
    }

    fn max_nucs(&self) -> usize {
        self.nucs_per_material()[0]
    }

    /// Index-grid entries (4 bytes each) of the chosen grid type.
    fn index_entries(&self) -> usize {
        match self.grid {
            Grid::Unionized => self.n_points() * self.nuclides as usize,
            Grid::Hash => self.hash_bins as usize * self.nuclides as usize,
            Grid::Nuclide => 0,
        }
    }

    fn energy_entries(&self) -> usize {
        if self.grid == Grid::Unionized {
            self.n_points()
        } else {
            0
        }
    }

    /// Allocates every structure from `space`, in the order XSBench's set-up does.
    fn layout(&self, space: &mut impl Allocator) -> Layout {
        let nuclide_grid = space.malloc(self.n_points() as u64 * POINT_BYTES);
        let energy_grid = space.malloc(self.energy_entries() as u64 * 8);
        let index_grid = space.malloc(self.index_entries() as u64 * 4);
        let num_nucs = space.malloc(12 * 4);
        let mats = space.malloc(12 * self.max_nucs() as u64 * 4);
        let concs = space.malloc(12 * self.max_nucs() as u64 * 8);
        Layout { nuclide_grid, energy_grid, index_grid, num_nucs, mats, concs }
    }

    fn point_addr(&self, d: &Data, i: usize) -> u64 {
        d.point_base + i as u64 * POINT_BYTES
    }

    /// Fills every structure, emitting its stores (and the index construction's loads).
    fn build(&self, rng: &mut Xoshiro256PlusPlus, e: &mut Emitter) -> Result<Data, String> {
        let layout = self.layout(e);
        let (g, n) = (self.gridpoints as usize, self.nuclides as usize);
        let mut points = Vec::new();
        points.try_reserve_exact(self.n_points()).map_err(|_| "cannot allocate host memory for the nuclide grids".to_string())?;
        for _ in 0..n {
            let mut grid: Vec<Point> = (0..g).map(|_| Point { energy: rng.random(), xs: std::array::from_fn(|_| rng.random()) }).collect();
            grid.sort_by(|a, b| a.energy.total_cmp(&b.energy));
            points.extend(grid);
        }
        for i in 0..points.len() {
            for f in 0..=XS as u64 {
                e.store(layout.nuclide_grid + i as u64 * POINT_BYTES + 8 * f, 8);
            }
            e.instructions(STORE_INSTRUCTIONS * (XS as u64 + 1));
        }
        let mut d = Data {
            points,
            energies: SimVec::filled(layout.energy_grid, self.energy_entries(), 0.0, "the unionized energy grid")?,
            index: SimVec::filled(layout.index_grid, self.index_entries(), 0, "the index grid")?,
            num_nucs: SimVec::filled(layout.num_nucs, 12, 0, "materials")?,
            mats: SimVec::filled(layout.mats, 12 * self.max_nucs(), 0, "materials")?,
            concs: SimVec::filled(layout.concs, 12 * self.max_nucs(), 0.0, "materials")?,
            point_base: layout.nuclide_grid,
        };
        match self.grid {
            Grid::Unionized => self.build_unionized(&mut d, e),
            Grid::Hash => self.build_hash(&mut d, e),
            Grid::Nuclide => {}
        }
        self.build_materials(&mut d, rng, e);
        Ok(d)
    }

    fn build_unionized(&self, d: &mut Data, e: &mut Emitter) {
        let (g, n) = (self.gridpoints as usize, self.nuclides as usize);
        let mut all: Vec<f64> = d.points.iter().map(|p| p.energy).collect();
        all.sort_by(f64::total_cmp);
        for (i, &energy) in all.iter().enumerate() {
            d.energies.st(i, energy, e);
            e.instructions(STORE_INSTRUCTIONS);
        }
        // Sweep the unionized energies, advancing each nuclide's bracketing index.
        let mut low = vec![0usize; n];
        for (i, &u) in all.iter().enumerate() {
            for (j, l) in low.iter_mut().enumerate() {
                while *l < g - 2 && d.points[j * g + *l + 1].energy <= u {
                    *l += 1;
                }
                e.load(d.point_base + (j * g + *l + 1) as u64 * POINT_BYTES, 8);
                d.index.st(i * n + j, *l as u32, e);
                e.instructions(INDEX_INSTRUCTIONS);
            }
        }
    }

    fn build_hash(&self, d: &mut Data, e: &mut Emitter) {
        let (g, n) = (self.gridpoints as usize, self.nuclides as usize);
        let du = 1.0 / f64::from(self.hash_bins);
        for b in 0..self.hash_bins as usize {
            for j in 0..n {
                let l = self.search_nuclide(d, j, b as f64 * du, 0, g - 1, e);
                d.index.st(b * n + j, l as u32, e);
                e.instructions(INDEX_INSTRUCTIONS);
            }
        }
    }

    fn build_materials(&self, d: &mut Data, rng: &mut Xoshiro256PlusPlus, e: &mut Emitter) {
        let max = self.max_nucs();
        for (m, &count) in self.nucs_per_material().iter().enumerate() {
            d.num_nucs.st(m, count as u32, e);
            for (k, nuc) in sample(rng, self.nuclides as usize, count).into_iter().enumerate() {
                d.mats.st(m * max + k, nuc as u32, e);
                d.concs.st(m * max + k, rng.random(), e);
            }
            e.instructions(STORE_INSTRUCTIONS * (1 + 2 * count as u64));
        }
    }

    /// XSBench's `grid_search`: the last index in `[lo, hi]` whose energy is ≤ `energy`
    /// (`lo` if none), over the energies of nuclide `j`'s grid, emitting each probe.
    fn search_nuclide(&self, d: &Data, j: usize, energy: f64, lo: usize, hi: usize, e: &mut Emitter) -> usize {
        let base = j * self.gridpoints as usize;
        let (mut lo, mut hi) = (lo, hi);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            e.load(self.point_addr(d, base + mid), 8);
            e.instructions(SEARCH_STEP_INSTRUCTIONS);
            if d.points[base + mid].energy > energy {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        lo
    }

    /// `grid_search` over the unionized energies.
    fn search_unionized(&self, d: &Data, energy: f64, e: &mut Emitter) -> usize {
        let (mut lo, mut hi) = (0, d.energies.len() - 1);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            e.instructions(SEARCH_STEP_INSTRUCTIONS);
            if d.energies.ld(mid, e) > energy {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        lo
    }

    /// The lower bracketing point of nuclide `j` for `energy`, located with the grid type's
    /// structure (`idx`: the unionized index or the hash bin).
    fn lower_point(&self, d: &Data, j: usize, energy: f64, idx: usize, e: &mut Emitter) -> usize {
        let (g, n) = (self.gridpoints as usize, self.nuclides as usize);
        let lower = match self.grid {
            Grid::Unionized => d.index.ld(idx * n + j, e) as usize,
            Grid::Nuclide => self.search_nuclide(d, j, energy, 0, g - 1, e),
            Grid::Hash => {
                let u_low = d.index.ld(idx * n + j, e) as usize;
                let u_high = if idx + 1 == self.hash_bins as usize { g - 1 } else { d.index.ld((idx + 1) * n + j, e) as usize + 1 };
                let base = j * g;
                e.load(self.point_addr(d, base + u_low), 8);
                e.load(self.point_addr(d, base + u_high), 8);
                if energy <= d.points[base + u_low].energy {
                    0
                } else if energy >= d.points[base + u_high].energy {
                    g - 1
                } else {
                    self.search_nuclide(d, j, energy, u_low, u_high, e)
                }
            }
        };
        lower.min(g - 2)
    }

    /// One lookup; returns the macroscopic cross sections, or a bracketing failure.
    fn lookup(&self, d: &Data, energy: f64, mat: usize, e: &mut Emitter) -> Result<[f64; XS], String> {
        let g = self.gridpoints as usize;
        let idx = match self.grid {
            Grid::Unionized => self.search_unionized(d, energy, e),
            Grid::Hash => (energy * f64::from(self.hash_bins)) as usize,
            Grid::Nuclide => 0,
        };
        let mut macro_xs = [0.0; XS];
        let count = d.num_nucs.ld(mat, e) as usize;
        for k in 0..count {
            let slot = mat * self.max_nucs() + k;
            let j = d.mats.ld(slot, e) as usize;
            let conc = d.concs.ld(slot, e);
            let l = self.lower_point(d, j, energy, idx, e);
            let (low, high) = (d.points[j * g + l], d.points[j * g + l + 1]);
            if !((l == 0 || low.energy <= energy) && (l == g - 2 || energy < high.energy)) {
                return Err(format!("nuclide {j}: points {l} and {} do not bracket energy {energy}", l + 1));
            }
            for p in [l + 1, l] {
                let addr = self.point_addr(d, j * g + p);
                for f in 0..=XS as u64 {
                    e.load(addr + 8 * f, 8);
                }
            }
            let f = (high.energy - energy) / (high.energy - low.energy);
            for (m, (h, l)) in macro_xs.iter_mut().zip(high.xs.iter().zip(&low.xs)) {
                *m += (h - f * (h - l)) * conc;
            }
            e.instructions(NUCLIDE_INSTRUCTIONS);
        }
        Ok(macro_xs)
    }

    /// XSBench's `pick_mat`.
    fn pick_material(roll: f64) -> usize {
        let mut acc = 0.0;
        for (m, p) in MATERIAL_DIST.iter().enumerate().skip(1) {
            acc += p;
            if roll < acc {
                return m;
            }
        }
        0
    }

    fn mean_nuclides_per_lookup(&self) -> f64 {
        self.over_lookups(|n| n)
    }

    /// The standard deviation of one lookup's nuclide count, relative to its mean.
    fn nuclides_per_lookup_deviation(&self) -> f64 {
        let mean = self.mean_nuclides_per_lookup();
        (self.over_lookups(|n| n * n) - mean * mean).max(0.0).sqrt() / mean
    }

    /// The mean of `f` of a lookup's nuclide count, over the materials lookups draw.
    fn over_lookups(&self, f: impl Fn(f64) -> f64) -> f64 {
        MATERIAL_DIST.iter().zip(self.nucs_per_material()).map(|(p, &n)| p * f(n as f64)).sum::<f64>()
            / MATERIAL_DIST.iter().sum::<f64>()
    }
}

impl Workload for Xsbench {
    const NAME: &'static str = "xsbench";
    const ABOUT: &'static str = "XSBench: macroscopic cross-section lookups over unionized, nuclide or hash energy grids";

    fn preset(scale: Scale) -> Xsbench {
        let (nuclides, gridpoints, lookups) = match scale {
            Scale::Tiny => (68, 50, 1_000),
            Scale::Small => (68, 4_700, 500_000),
            Scale::Paper => (355, 2_025, 2_000_000),
        };
        Xsbench { nuclides, gridpoints, lookups, grid: Grid::Unionized, hash_bins: 10_000, setup: true }
    }

    fn emits_set_up(&self) -> bool {
        self.setup
    }

    fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.nuclides != 68 && self.nuclides != 355 {
            return Err(("nuclides", format!("{} nuclides: XSBench's materials are defined for 68 or 355", self.nuclides)));
        }
        if self.gridpoints < 2 {
            return Err(("gridpoints", "at least 2 grid points per nuclide are needed".into()));
        }
        if self.grid == Grid::Unionized && self.n_points() as u64 * u64::from(self.nuclides) >= 1 << 36 {
            return Err(("gridpoints", "the unionized index grid would exceed 256 GiB".into()));
        }
        if self.hash_bins == 0 {
            return Err(("hash_bins", "at least one bin is needed".into()));
        }
        Ok(())
    }

    fn expected(&self) -> Expected {
        let l = self.layout(&mut AddressSpace::new());
        let grid_bytes = self.n_points() as u64 * POINT_BYTES;
        let nucs = self.mean_nuclides_per_lookup();
        let lookups = self.lookups as f64;
        // The set-up writes every region whole. Without it, the lookups alone read the small
        // tables whole and the large ones at random places: per lookup one place in the
        // unionized energies (where its search ends) and one row of the index grid, and two
        // points of each of its material's nuclides.
        let region = |name: &str, addr, bytes: u64, reads: Option<f64>| {
            let touched = match reads {
                Some(reads) if !self.setup => super::randomly_touched(bytes, reads),
                _ => bytes,
            };
            Region { name: name.into(), addr, bytes, touched }
        };
        let regions = vec![
            region("nuclide grids", l.nuclide_grid, grid_bytes, Some(lookups * nucs)),
            region("unionized energies", l.energy_grid, self.energy_entries() as u64 * 8, Some(lookups)),
            region("index grid", l.index_grid, self.index_entries() as u64 * 4, Some(lookups)),
            region("nuclides per material", l.num_nucs, 48, None),
            region("material nuclides", l.mats, 12 * self.max_nucs() as u64 * 4, None),
            region("concentrations", l.concs, 12 * self.max_nucs() as u64 * 8, None),
        ];
        let g = f64::from(self.gridpoints);
        let (search, per_nuclide) = match self.grid {
            Grid::Unionized => ((self.n_points() as f64).log2(), 1.0),
            Grid::Nuclide => (0.0, g.log2()),
            // Two index loads and two bound loads; a search within a bin's span.
            Grid::Hash => (0.0, 4.0 + (g / f64::from(self.hash_bins) + 1.0).log2().max(0.0)),
        };
        let per_lookup = search + 1.0 + nucs * (2.0 + per_nuclide + 12.0);
        let n = self.nuclides as f64;
        let setup = match self.grid {
            Grid::Unionized => self.n_points() as f64 * (6.0 + 1.0 + 2.0 * n),
            Grid::Hash => self.n_points() as f64 * 6.0 + f64::from(self.hash_bins) * n * (1.0 + g.log2()),
            Grid::Nuclide => self.n_points() as f64 * 6.0,
        } + 12.0 + 2.0 * self.nucs_per_material().iter().sum::<usize>() as f64;
        Expected {
            regions,
            phases: vec![
                ExpectedPhase { name: "grid", emitted: self.setup, refs: setup as u64, exact: false },
                ExpectedPhase { name: "lookup", emitted: true, refs: (lookups * per_lookup) as u64, exact: false },
            ],
            // The model's 5%, plus three standard deviations of the lookups' mean nuclide
            // count: materials differ 60-fold in nuclides, so a thousand lookups (`tiny`)
            // sample it within a few percent only.
            tolerance: 0.05 + 3.0 * self.nuclides_per_lookup_deviation() / lookups.sqrt(),
        }
    }

    fn run(&self, seed: u64, e: &mut Emitter) -> Result<Vec<String>, String> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        e.phase("grid", self.setup);
        let d = self.build(&mut rng, e)?;
        e.phase("lookup", true);
        let mut checksum = 0u64;
        for _ in 0..self.lookups {
            let energy: f64 = rng.random();
            let mat = Self::pick_material(rng.random());
            let xs = self.lookup(&d, energy, mat, e)?;
            let max = (0..XS).fold(0, |m, x| if xs[x] > xs[m] { x } else { m });
            checksum += max as u64 + 1;
            e.instructions(LOOKUP_INSTRUCTIONS);
            if e.stopped() {
                return Ok(Vec::new());
            }
        }
        Ok(vec![
            format!("{} lookups: every nuclide's bracketing points bracket the energy ({:?} grid)", self.lookups, self.grid),
            format!("verification checksum {checksum}"),
        ])
    }
}
