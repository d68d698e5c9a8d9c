//! The GAP Benchmark Suite's six kernels (Beamer, Asanović and Patterson) — `bfs`, `pr`, `cc`,
//! `sssp`, `bc`, `tc` — over GAP's two synthetic graphs, `kron` and `urand`, each following
//! GAP's reference code (`gapbs`) single-threaded: the graph is generated and built into a CSR
//! as GAP's builder does ([`graph`]), then each trial runs the kernel over arrays at the
//! addresses glibc's `malloc` gives them, emitting every load and store of the graph and of the
//! kernel's per-vertex arrays, queues and bitmaps, and is verified as GAP's verifiers do
//! (outside the emitted stream). Every array is `malloc`ed and `free`d from the emitter, the
//! process's allocator, where the program does it, so the stream carries what they map and
//! unmap; the expectation ([`expect`]) makes the same calls on an address space of its own.
//! See `docs/workloads.md`.

pub mod bc;
pub mod bfs;
pub mod bins;
pub mod bitmap;
pub mod cc;
pub mod expect;
pub mod graph;
pub mod pr;
pub mod sssp;
pub mod tc;
pub mod trial;

use super::emit::Emitter;
use super::kronecker::Initiator;
use super::{Expected, Scale, Workload};
use graph::{BuildSizes, Csr, GraphKind, WNode};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};
pub use trial::Trial;

/// Instructions per generated edge per scale bit (random draws and bit arithmetic).
pub(crate) const GEN_BIT_INSTRUCTIONS: u64 = 12;
/// Instructions per edge of a pass over the edge list.
pub(crate) const EDGE_PASS_INSTRUCTIONS: u64 = 6;
/// Instructions per vertex of a simple pass over the vertices.
pub(crate) const VERTEX_PASS_INSTRUCTIONS: u64 = 4;
/// Instructions per element sorted (the sorts are modelled as one pass).
pub(crate) const SORT_INSTRUCTIONS: u64 = 6;
/// Instructions per vertex whose neighbourhood a kernel reads.
pub(crate) const VISIT_INSTRUCTIONS: u64 = 8;
/// Instructions per neighbour entry a kernel examines.
pub(crate) const SCAN_INSTRUCTIONS: u64 = 5;
/// Instructions per value a kernel claims or improves (parent, distance, link).
pub(crate) const UPDATE_INSTRUCTIONS: u64 = 4;

/// Which GAP kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kernel {
    /// Direction-optimizing breadth-first search.
    Bfs,
    /// PageRank.
    Pr,
    /// Connected components (Afforest).
    Cc,
    /// Single-source shortest paths (delta-stepping).
    Sssp,
    /// Betweenness centrality (Brandes).
    Bc,
    /// Triangle counting.
    Tc,
}

impl Kernel {
    /// The kernel's name, also its phase's name.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Bfs => "bfs",
            Kernel::Pr => "pr",
            Kernel::Cc => "cc",
            Kernel::Sssp => "sssp",
            Kernel::Bc => "bc",
            Kernel::Tc => "tc",
        }
    }

    /// Whether each trial starts from a source vertex.
    pub fn has_source(self) -> bool {
        matches!(self, Kernel::Bfs | Kernel::Sssp | Kernel::Bc)
    }
}

/// Parameters of a GAP kernel run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gap {
    /// `bfs`, `pr`, `cc`, `sssp`, `bc` or `tc`.
    pub kernel: Kernel,
    /// `kron` or `urand`.
    pub graph: GraphKind,
    /// log2 of the vertex count (GAP's `-g` / `-u`).
    pub scale: u32,
    /// Generated edges per vertex (GAP's `-k`, 16).
    pub degree: u32,
    /// Kernel runs (GAP's `-n`); bfs, sssp and bc pick a new source each.
    pub trials: u32,
    /// bc: sources per trial (GAP's `-i`).
    pub sources: u32,
    /// sssp: bucket width (GAP's `-d`, 1).
    pub delta: u32,
    /// Emit the generation and construction phase (it is always performed).
    pub setup: bool,
    /// `kron` graphs: Kronecker initiator's upper-left quadrant probability (0.57).
    pub a: f64,
    /// `kron` graphs: upper-right quadrant's probability (0.19).
    pub b: f64,
    /// `kron` graphs: lower-left quadrant's probability (0.19).
    pub c: f64,
}

impl Gap {
    /// The Kronecker initiator of `kron` graphs.
    pub fn initiator(&self) -> Initiator {
        Initiator { a: self.a, b: self.b, c: self.c }
    }

    /// Vertices.
    pub fn vertices(&self) -> u64 {
        1 << self.scale
    }

    /// Generated edges.
    pub fn edges(&self) -> u64 {
        u64::from(self.degree) << self.scale
    }

    fn weighted(&self) -> bool {
        self.kernel == Kernel::Sssp
    }

    fn build_sizes(&self) -> BuildSizes {
        BuildSizes { n: self.vertices(), m: self.edges(), weighted: self.weighted() }
    }

    /// GAP's `SourcePicker`: random vertices with at least one neighbour.
    fn pick_sources<D: graph::Dest>(&self, g: &Csr<D>, count: usize, rng: &mut Xoshiro256PlusPlus) -> Result<Vec<usize>, String> {
        let n = g.vertices();
        if (0..n).all(|v| g.degree(v) == 0) {
            return Err("the graph has no edge to start from".into());
        }
        Ok((0..count)
            .map(|_| loop {
                let v = rng.random_range(0..n);
                if g.degree(v) > 0 {
                    break v;
                }
            })
            .collect())
    }

    /// Runs the trials of an unweighted kernel and verifies each; each trial's arrays are
    /// allocated from `e` and freed at its end.
    fn run_unweighted(&self, g: &Csr<u32>, rng: &mut Xoshiro256PlusPlus, e: &mut Emitter) -> Result<String, String> {
        let (n, entries) = (self.vertices(), g.entries() as u64);
        let per_trial = if self.kernel == Kernel::Bc { self.sources as usize } else { 1 };
        let sources = if self.kernel.has_source() { self.pick_sources(g, per_trial * self.trials as usize, rng)? } else { Vec::new() };
        e.phase(self.kernel.name(), true);
        let mut summary = String::new();
        for trial in 0..self.trials as usize {
            let fail = |m: String| format!("trial {trial}: {m}");
            let mut t = match self.kernel {
                Kernel::Bfs => bfs::plan(e, n),
                Kernel::Pr => pr::plan(e, n),
                Kernel::Cc => cc::plan(e, n),
                Kernel::Bc => bc::plan(e, n, entries),
                Kernel::Tc => tc::plan_samples(e, n),
                Kernel::Sssp => unreachable!("sssp runs on the weighted graph"),
            };
            summary = match self.kernel {
                Kernel::Bfs => {
                    let source = sources[trial];
                    let parent = bfs::run(g, source, &t, e)?;
                    bfs::verify(g, source, &parent).map_err(fail)?;
                    let reached = parent.iter().filter(|&&p| p >= 0).count();
                    format!("{} BFS trees pass GAP's verifier (the last reaches {reached} vertices)", self.trials)
                }
                Kernel::Pr => {
                    let (scores, iters) = pr::run(g, &t, e)?;
                    let error = pr::verify(g, &scores).map_err(fail)?;
                    format!("PageRank converged in {iters} iterations; one more changes the scores by {error:.2e} in total (under 1e-4) in every trial")
                }
                Kernel::Cc => {
                    let comp = cc::run(g, &t, rng, e)?;
                    let count = cc::verify(g, &comp).map_err(fail)?;
                    format!("Afforest's {count} components pass GAP's verifier and match a serial labelling in every trial")
                }
                Kernel::Bc => {
                    let from = &sources[trial * per_trial..(trial + 1) * per_trial];
                    let scores = bc::run(g, from, &mut t, e)?;
                    bc::verify(g, from, &scores).map_err(fail)?;
                    format!("betweenness scores from {} sources equal serial Brandes' within a float's epsilon in every trial", self.sources)
                }
                Kernel::Tc => {
                    let relabel = tc::worth_relabelling(g, &t, rng, e)?;
                    t.release(e);
                    let count = tc::run(g, relabel, &mut t, e)?;
                    tc::verify(g, count).map_err(fail)?;
                    format!("{count} triangles (relabelled by degree: {relabel}), equal to a reference count, in every trial")
                }
                Kernel::Sssp => unreachable!("sssp runs on the weighted graph"),
            };
            t.release(e);
            if e.stopped() {
                break;
            }
        }
        Ok(summary)
    }

    /// Runs the sssp trials on the weighted graph and verifies each; each trial's arrays are
    /// allocated from `e` and freed at its end.
    fn run_sssp(&self, g: &Csr<WNode>, rng: &mut Xoshiro256PlusPlus, e: &mut Emitter) -> Result<String, String> {
        let sources = self.pick_sources(g, self.trials as usize, rng)?;
        e.phase(self.kernel.name(), true);
        for (trial, &source) in sources.iter().enumerate() {
            let mut t = sssp::plan(e, self.vertices(), g.entries() as u64);
            let dist = sssp::run(g, source, self.delta, &t, e)?;
            t.release(e);
            if e.stopped() {
                break;
            }
            sssp::verify(g, source, &dist).map_err(|m| format!("trial {trial}: {m}"))?;
        }
        Ok(format!("{} delta-stepping runs (delta {}) equal serial Dijkstra's distances", self.trials, self.delta))
    }
}

impl Workload for Gap {
    const NAME: &'static str = "gap";
    const ABOUT: &'static str = "GAP benchmark suite: bfs, pr, cc, sssp, bc or tc over a kron or urand graph (params kernel, graph)";

    fn preset(scale: Scale) -> Gap {
        let (s, trials) = match scale {
            Scale::Tiny => (10, 2),
            Scale::Small => (18, 1),
            Scale::Paper => (24, 1),
        };
        let Initiator { a, b, c } = Initiator::GRAPH500;
        Gap { kernel: Kernel::Bfs, graph: GraphKind::Kron, scale: s, degree: 16, trials, sources: 4, delta: 1, setup: true, a, b, c }
    }

    fn emits_set_up(&self) -> bool {
        self.setup
    }

    fn validate(&self) -> Result<(), (&'static str, String)> {
        if !(1..=30).contains(&self.scale) {
            return Err(("scale", format!("{} is outside 1..=30 (vertex ids are 32-bit)", self.scale)));
        }
        if self.degree == 0 || self.edges() > 1 << 34 {
            return Err(("degree", format!("{} edges per vertex gives no edges or more than 2^34", self.degree)));
        }
        if !(1..=1024).contains(&self.trials) {
            return Err(("trials", format!("{} trials: need 1 to 1024", self.trials)));
        }
        // Only bc reads `sources`: another kernel's graph may have fewer vertices than its default.
        if self.kernel == Kernel::Bc && (self.sources == 0 || u64::from(self.sources) > self.vertices()) {
            let (sources, vertices, scale) = (self.sources, self.vertices(), self.scale);
            return Err(("sources", format!("{sources} sources per trial: need 1 to {vertices} (the vertex count at scale {scale})")));
        }
        if self.delta == 0 {
            return Err(("delta", "the bucket width must be at least 1".into()));
        }
        self.initiator().validate()
    }

    fn expected(&self) -> Expected {
        expect::expected(self)
    }

    fn run(&self, seed: u64, e: &mut Emitter) -> Result<Vec<String>, String> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        e.phase("setup", self.setup);
        let pairs = graph::generate(self.graph, self.scale, self.edges(), self.initiator(), &mut rng)?;
        let (summary, entries) = if self.weighted() {
            let g = graph::build::<WNode>(self.graph, self.scale, pairs, &mut rng, e)?;
            (self.run_sssp(&g, &mut rng, e)?, g.entries())
        } else {
            let g = graph::build::<u32>(self.graph, self.scale, pairs, &mut rng, e)?;
            (self.run_unweighted(&g, &mut rng, e)?, g.entries())
        };
        let graph = format!("{} graph: 2^{} vertices, {} neighbour entries", self.graph_name(), self.scale, entries);
        Ok(vec![graph, summary])
    }
}

impl Gap {
    fn graph_name(&self) -> &'static str {
        match self.graph {
            GraphKind::Kron => "kron",
            GraphKind::Urand => "urand",
        }
    }
}

#[cfg(test)]
mod tests;
