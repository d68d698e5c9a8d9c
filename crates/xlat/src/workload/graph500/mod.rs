//! Graph500: breadth-first searches of a Kronecker graph, after the Graph500 specification's
//! generator and the reference implementation's sequential CSR kernel (`seq-csr`).
//!
//! Generation (the specification's `kronecker_generator`): `edgefactor × 2^scale` edges, each
//! endpoint bit drawn with initiator A = 0.57, B = C = 0.19; vertex labels permuted and edges
//! shuffled by seeded random permutations. The edge list is 16 bytes an edge (two `int64`).
//!
//! Construction (as `seq-csr`): find the vertex count (a pass over the edges), count degrees
//! skipping self-loops into `xoff` (two `int64` per vertex: start and end of its adjacency),
//! prefix-sum, scatter both directions of every edge into `xadj` (`2 × edges` `int64`), then
//! sort and deduplicate each vertex's adjacency, marking the dropped tail with -1.
//!
//! Each of `roots` searches (roots drawn among vertices with an edge, distinct): `malloc` the
//! predecessor array (`nv` `int64`), set it to -1, then `make_bfs_tree` — `malloc` a vertex
//! queue, and level by level, for each queued vertex read its `xoff` pair, and for each
//! neighbour read `xadj` and its predecessor, claiming it (store predecessor, enqueue) when
//! unvisited; `free` the queue, and after validation the predecessor array. Those `malloc`s
//! and `free`s go through the address-space model: the first search's arrays are mappings,
//! freeing them raises glibc's mmap threshold, and later searches get their arrays from the
//! heap — as in a real run.
//!
//! Validation after each search (the reference's `verify_bfs_tree`, always performed, emitted
//! when `validation` is true, as phase `validation`): `malloc` one array of `2 nv` `int64`
//! (`seen_edge`, then `level`), clear `seen_edge`, set every level to -1 and the root's to 0;
//! for each vertex in order, when it has no level yet and has a predecessor, run up its
//! predecessors to the first vertex with a level, then down the same chain again assigning
//! levels; then for each edge of the edge list read both endpoints' predecessors and, when
//! they are reached, mark the tree edges it holds in `seen_edge` and read both levels; then a
//! pass over the vertices checks that every reached vertex's tree edge was seen; `free` the
//! array. An element is read once per loop iteration that uses it, however often the
//! iteration's statements name it (an optimizing compiler keeps it in a register: the arrays
//! are `restrict`); a loop's test reads its element on every evaluation, and the value the last
//! test read stays in its register after the loop. The assertions are compiled out (`NDEBUG`).
//! The reference's rule -16 (no vertex but the root is its own predecessor) uses the last
//! pass's predecessor load; its rules -10 and -11 (endpoints beyond the largest vertex) cannot
//! fail with `seq-csr`, whose largest vertex is the last, and read nothing more.
//!
//! The `setup` phase (generation and construction) is emitted when `setup` is true: one store
//! per edge endpoint written by the generator (its internal relabeling and shuffling passes
//! are not emitted), and every load and store of the construction, except that each vertex's
//! sort is modelled as one load and one store per adjacency entry.
//!
//! Self-check: the validation's rules. The root is its own predecessor; following
//! predecessors from any reached vertex reaches the root without a cycle, giving every vertex
//! a level; every edge joins two reached vertices whose levels differ by at most one, or two
//! unreached vertices; every tree edge (vertex, predecessor) is an edge of the edge list.
//!
//! Instructions (estimated): 12 per generated edge per scale bit (random draws and bit
//! arithmetic), 6 per edge per construction pass, 4 per vertex of a pass over vertices, 8 per
//! vertex dequeued, 5 per adjacency entry scanned, 4 per vertex claimed or given a level.

mod verify;
#[cfg(test)]
mod tests;

use super::address_space::{AddressSpace, Allocator};
use super::kronecker::{self, Initiator};
use super::emit::{Emitter, SimVec};
use super::{Expected, ExpectedPhase, Region, Scale, Workload};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

/// The "no vertex" mark (`-1`).
const NONE: u64 = u64::MAX;

const GEN_BIT_INSTRUCTIONS: u64 = 12;
const EDGE_PASS_INSTRUCTIONS: u64 = 6;
const VERTEX_PASS_INSTRUCTIONS: u64 = 4;
const DEQUEUE_INSTRUCTIONS: u64 = 8;
const SCAN_INSTRUCTIONS: u64 = 5;
const CLAIM_INSTRUCTIONS: u64 = 4;

/// Parameters of Graph500.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Graph500 {
    /// log2 of the number of vertices.
    pub scale: u32,
    /// Edges per vertex (16 in the specification).
    pub edgefactor: u32,
    /// Breadth-first searches, each from its own root (64 in the specification).
    pub roots: u32,
    /// Emit the generation and construction phase (it is always performed).
    pub setup: bool,
    /// Emit the validation of each search tree (it is always performed).
    pub validation: bool,
    /// `csr` (the reference kernel) or `list` (linked adjacency lists).
    pub adjacency: Adjacency,
    /// Kronecker initiator: upper-left quadrant's probability (0.57 in the specification).
    pub a: f64,
    /// Upper-right quadrant's probability (0.19).
    pub b: f64,
    /// Lower-left quadrant's probability (0.19).
    pub c: f64,
}

/// How the graph is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Adjacency {
    /// Compressed sparse rows, sorted and deduplicated (`seq-csr`).
    Csr,
    /// A head pointer per vertex and a 16-byte `malloc`ed node per edge direction
    /// (`{ int64 vertex; node *next; }`), pushed on the front of the list as edges are read.
    List,
}

/// Bytes between consecutive list nodes: `malloc(16)` takes a 32-byte chunk.
const LIST_NODE_STRIDE: u64 = 32;

/// Simulated addresses, in allocation order.
struct Layout {
    edges: u64,
    /// CSR: `xoff`; list: the head pointers.
    xoff: u64,
    /// CSR: `xadj`; list: the first node (the others follow every 32 bytes).
    xadj: u64,
    /// Per search, its arrays.
    searches: Vec<SearchArrays>,
}

/// The simulated addresses of one search's arrays.
#[derive(Clone, Copy)]
struct SearchArrays {
    pred: u64,
    queue: u64,
    /// The validation's `seen_edge` and `level`, one allocation.
    check: u64,
}

/// The graph in CSR form with simulated addresses.
struct Csr {
    xoff: SimVec<u64>,
    xadj: SimVec<u64>,
}

impl Csr {
    fn neighbours(&self, v: usize) -> &[u64] {
        let x = self.xoff.raw();
        &self.xadj.raw()[x[2 * v] as usize..x[2 * v + 1] as usize]
    }
}

/// The graph as linked adjacency lists: `nodes[k] = (vertex, next node)` at simulated address
/// `base + 32 k`.
struct Lists {
    head: SimVec<u64>,
    nodes: Vec<(u64, u64)>,
    base: u64,
}

impl Lists {
    fn node_addr(&self, k: u64) -> u64 {
        self.base + k * LIST_NODE_STRIDE
    }
}

/// The graph in either form.
enum Graph {
    Csr(Csr),
    List(Lists),
}

impl Graph {
    fn has_neighbour(&self, v: usize) -> bool {
        match self {
            Graph::Csr(c) => !c.neighbours(v).is_empty(),
            Graph::List(l) => l.head.raw()[v] != NONE,
        }
    }

    /// Emits the scan of `v`'s neighbours as the kernel does it, calling `visit` on each.
    #[inline]
    fn scan(&self, v: usize, e: &mut Emitter, mut visit: impl FnMut(usize, &mut Emitter)) {
        match self {
            Graph::Csr(c) => {
                let (start, end) = (c.xoff.ld(2 * v, e) as usize, c.xoff.ld(2 * v + 1, e) as usize);
                e.instructions(DEQUEUE_INSTRUCTIONS + SCAN_INSTRUCTIONS * (end - start) as u64);
                for o in start..end {
                    let w = c.xadj.ld(o, e) as usize;
                    visit(w, e);
                }
            }
            Graph::List(l) => {
                let mut k = l.head.ld(v, e);
                e.instructions(DEQUEUE_INSTRUCTIONS);
                while k != NONE {
                    let (w, next) = l.nodes[k as usize];
                    e.load(l.node_addr(k), 8);
                    visit(w as usize, e);
                    e.load(l.node_addr(k) + 8, 8);
                    e.instructions(SCAN_INSTRUCTIONS);
                    k = next;
                }
            }
        }
    }
}

impl Graph500 {
    fn vertices(&self) -> u64 {
        1 << self.scale
    }

    fn edges(&self) -> u64 {
        u64::from(self.edgefactor) << self.scale
    }

    /// The Kronecker initiator of the graph.
    fn initiator(&self) -> Initiator {
        Initiator { a: self.a, b: self.b, c: self.c }
    }

    /// The allocations, for a list graph of `list_nodes` nodes, in the order the run makes
    /// them.
    fn layout(&self, list_nodes: u64) -> Layout {
        let mut space = AddressSpace::new();
        let nv = self.vertices();
        let edges = space.malloc(self.edges() * 16);
        let (xoff, xadj) = self.allocate_graph(&mut space, list_nodes);
        let searches = (0..self.roots)
            .map(|_| {
                let (pred, queue) = (space.malloc(nv * 8), space.malloc(nv * 8));
                space.free(queue);
                let check = space.malloc(2 * nv * 8);
                space.free(check);
                space.free(pred);
                SearchArrays { pred, queue, check }
            })
            .collect();
        Layout { edges, xoff, xadj, searches }
    }

    /// Allocates the graph's arrays (`xoff`, `xadj`; for lists, the heads and the nodes).
    fn allocate_graph(&self, space: &mut impl Allocator, list_nodes: u64) -> (u64, u64) {
        let nv = self.vertices();
        match self.adjacency {
            Adjacency::Csr => (space.malloc((2 * nv + 2) * 8), space.malloc(2 * self.edges() * 8)),
            Adjacency::List => (space.malloc(nv * 8), space.malloc_run(16, list_nodes)),
        }
    }

    /// The specification's generator: endpoints drawn bit by bit, labels permuted, edges
    /// shuffled. Each final edge is stored once (two 8-byte stores).
    fn generate(&self, rng: &mut Xoshiro256PlusPlus, base: u64, e: &mut Emitter) -> Result<SimVec<u64>, String> {
        let m = self.edges() as usize;
        let mut ij = SimVec::filled(base, 2 * m, 0u64, "the edge list")?;
        let mut pairs = kronecker::edges(self.scale, self.edges(), self.initiator(), rng)?;
        pairs.shuffle(rng);
        for (k, &(i, j)) in pairs.iter().enumerate() {
            ij.st(2 * k, i, e);
            ij.st(2 * k + 1, j, e);
            e.instructions(GEN_BIT_INSTRUCTIONS * u64::from(self.scale));
        }
        Ok(ij)
    }

    /// `find_nv`: a pass over the edges for the largest label.
    fn find_nv(&self, ij: &SimVec<u64>, e: &mut Emitter) -> Result<(), String> {
        let mut max = 0;
        for k in 0..ij.len() {
            max = max.max(ij.ld(k, e));
        }
        e.instructions(EDGE_PASS_INSTRUCTIONS * self.edges());
        if max >= self.vertices() {
            return Err(format!("vertex {max} is out of range"));
        }
        Ok(())
    }

    /// Linked lists: for each edge read, a node for each direction pushed on the front of
    /// its vertex's list (load the head, store the node's vertex and next, store the head).
    fn build_lists(&self, ij: &SimVec<u64>, layout: &Layout, e: &mut Emitter) -> Result<Lists, String> {
        let mut head = SimVec::filled(layout.xoff, self.vertices() as usize, NONE, "the list heads")?;
        for v in 0..head.len() {
            head.st(v, NONE, e);
        }
        e.instructions(VERTEX_PASS_INSTRUCTIONS * self.vertices());
        let mut nodes = Vec::new();
        nodes.try_reserve_exact(2 * self.edges() as usize).map_err(|_| "cannot allocate host memory for the list nodes".to_string())?;
        let base = layout.xadj;
        for k in 0..self.edges() as usize {
            let (i, j) = (ij.ld(2 * k, e), ij.ld(2 * k + 1, e));
            if i == j {
                continue;
            }
            for (v, w) in [(i, j), (j, i)] {
                let id = nodes.len() as u64;
                let next = head.ld(v as usize, e);
                e.store(base + id * LIST_NODE_STRIDE, 8);
                e.store(base + id * LIST_NODE_STRIDE + 8, 8);
                nodes.push((w, next));
                head.st(v as usize, id, e);
            }
            e.instructions(EDGE_PASS_INSTRUCTIONS);
        }
        Ok(Lists { head, nodes, base })
    }

    /// Non-loop edges of the edge list (the list graph's nodes are twice this).
    fn non_loop_edges(ij: &[u64]) -> u64 {
        ij.chunks_exact(2).filter(|p| p[0] != p[1]).count() as u64
    }

    /// `seq-csr`'s construction over the edge list.
    fn build_csr(&self, ij: &SimVec<u64>, layout: &Layout, e: &mut Emitter) -> Result<Csr, String> {
        let (m, nv) = (self.edges() as usize, self.vertices() as usize);
        let mut xoff = SimVec::filled(layout.xoff, 2 * nv + 2, 0u64, "the CSR offsets")?;
        for k in 0..m {
            let (i, j) = (ij.ld(2 * k, e) as usize, ij.ld(2 * k + 1, e) as usize);
            if i != j {
                for v in [i, j] {
                    let d = xoff.ld(2 * v, e);
                    xoff.st(2 * v, d + 1, e);
                }
            }
        }
        e.instructions(EDGE_PASS_INSTRUCTIONS * m as u64);
        let mut acc = 0;
        for v in 0..nv {
            let d = xoff.ld(2 * v, e);
            xoff.st(2 * v, acc, e);
            xoff.st(2 * v + 1, acc, e);
            acc += d;
        }
        e.instructions(VERTEX_PASS_INSTRUCTIONS * nv as u64);
        let mut xadj = SimVec::filled(layout.xadj, 2 * m, NONE, "the CSR adjacency")?;
        for k in 0..m {
            let (i, j) = (ij.ld(2 * k, e) as usize, ij.ld(2 * k + 1, e) as usize);
            if i != j {
                for (v, w) in [(i, j), (j, i)] {
                    let end = xoff.ld(2 * v + 1, e);
                    xadj.st(end as usize, w as u64, e);
                    xoff.st(2 * v + 1, end + 1, e);
                }
            }
        }
        e.instructions(EDGE_PASS_INSTRUCTIONS * m as u64);
        for v in 0..nv {
            Self::pack(&mut xoff, &mut xadj, v, e);
        }
        Ok(Csr { xoff, xadj })
    }

    /// `pack_vtx_edges`: sorts and deduplicates vertex `v`'s adjacency (modelled as one load
    /// and one store per entry), marks the dropped tail -1 and stores the new end.
    fn pack(xoff: &mut SimVec<u64>, xadj: &mut SimVec<u64>, v: usize, e: &mut Emitter) {
        let (start, end) = (xoff.ld(2 * v, e) as usize, xoff.ld(2 * v + 1, e) as usize);
        e.instructions(VERTEX_PASS_INSTRUCTIONS);
        if start == end {
            return;
        }
        let list = &mut xadj.raw_mut()[start..end];
        list.sort_unstable();
        let mut kept = 1;
        for k in 1..list.len() {
            if list[k] != list[kept - 1] {
                list[kept] = list[k];
                kept += 1;
            }
        }
        list[kept..].fill(NONE);
        for k in start..end {
            e.load(xadj.addr(k), 8);
            e.store(xadj.addr(k), 8);
        }
        e.instructions(EDGE_PASS_INSTRUCTIONS * (end - start) as u64);
        xoff.st(2 * v + 1, (start + kept) as u64, e);
    }

    /// Distinct roots among vertices with at least one neighbour.
    fn pick_roots(&self, graph: &Graph, rng: &mut Xoshiro256PlusPlus) -> Result<Vec<usize>, String> {
        let nv = self.vertices() as usize;
        let connected = (0..nv).filter(|&v| graph.has_neighbour(v)).count();
        if connected < self.roots as usize {
            return Err(format!("only {connected} vertices have an edge, fewer than the {} roots asked for", self.roots));
        }
        let mut roots = Vec::with_capacity(self.roots as usize);
        while roots.len() < self.roots as usize {
            let v = rng.random_range(0..nv);
            if graph.has_neighbour(v) && !roots.contains(&v) {
                roots.push(v);
            }
        }
        Ok(roots)
    }

    /// One search from `root` into `pred`; returns the vertices reached.
    fn bfs(graph: &Graph, root: usize, pred: &mut SimVec<u64>, queue: &mut SimVec<u64>, e: &mut Emitter) -> usize {
        for v in 0..pred.len() {
            pred.st(v, NONE, e);
        }
        e.instructions(VERTEX_PASS_INSTRUCTIONS * pred.len() as u64);
        pred.st(root, root as u64, e);
        queue.st(0, root as u64, e);
        let (mut head, mut tail) = (0, 1);
        while head != tail {
            let level_end = tail;
            for k in head..level_end {
                let v = queue.ld(k, e) as usize;
                graph.scan(v, e, |w, e| {
                    if pred.ld(w, e) == NONE {
                        pred.st(w, v as u64, e);
                        queue.st(tail, w as u64, e);
                        tail += 1;
                        e.instructions(CLAIM_INSTRUCTIONS);
                    }
                });
            }
            head = level_end;
        }
        tail
    }
}

impl Workload for Graph500 {
    const NAME: &'static str = "graph500";
    const ABOUT: &'static str = "Graph500: Kronecker graph, CSR construction, breadth-first searches from random roots";

    fn preset(scale: Scale) -> Graph500 {
        let (s, roots) = match scale {
            Scale::Tiny => (10, 4),
            Scale::Small => (18, 8),
            Scale::Paper => (21, 64),
        };
        let Initiator { a, b, c } = Initiator::GRAPH500;
        Graph500 { scale: s, edgefactor: 16, roots, setup: true, validation: true, adjacency: Adjacency::Csr, a, b, c }
    }

    fn emits_set_up(&self) -> bool {
        self.setup
    }

    fn validate(&self) -> Result<(), (&'static str, String)> {
        if !(1..=32).contains(&self.scale) {
            return Err(("scale", format!("{} is outside 1..=32", self.scale)));
        }
        if self.edgefactor == 0 || self.edges() > 1 << 36 {
            return Err(("edgefactor", format!("{} edges per vertex gives no edges or more than 2^36", self.edgefactor)));
        }
        if self.roots == 0 || u64::from(self.roots) > self.vertices() {
            return Err(("roots", format!("{} roots: need 1 to {} (the vertex count)", self.roots, self.vertices())));
        }
        self.initiator().validate()
    }

    fn expected(&self) -> Expected {
        let (nv, m) = (self.vertices(), self.edges());
        let (mf, nvf) = (m as f64, nv as f64);
        let (distinct, connected) = kronecker::expected_graph(self.scale, m, self.initiator());
        let non_loop = mf - kronecker::expected_self_loops(self.scale, m, self.initiator());
        let list_nodes = (2.0 * non_loop).round() as u64;
        let l = self.layout(list_nodes);
        let region = |name: &str, addr, bytes: u64, touched| Region { name: name.into(), addr, bytes, touched };
        // The validation reads the whole edge list after every search.
        let edges_touched = if self.setup || self.validation { m * 16 } else { 0 };
        let mut regions = vec![region("edge list", l.edges, m * 16, edges_touched)];
        let (setup, scanned) = match self.adjacency {
            Adjacency::Csr => {
                let adj_touched = if self.setup {
                    2 * m * 8
                } else {
                    (kronecker::expected_adjacency_pages(self.scale, m, self.initiator()) * 4096.0) as u64
                };
                regions.push(region("xoff (CSR offsets)", l.xoff, (2 * nv + 2) * 8, 2 * nv * 8));
                regions.push(region("xadj (CSR adjacency)", l.xadj, 2 * m * 8, adj_touched));
                // Generator stores 2m; find_nv 2m; degrees 2m + 4 per non-loop edge; prefix
                // sum 3nv; scatter 2m + 6 per non-loop edge; pack 2nv + 4 per non-loop edge +
                // 1 per vertex with neighbours.
                (8.0 * mf + 14.0 * non_loop + 5.0 * nvf + connected, 2.0 * distinct)
            }
            Adjacency::List => {
                regions.push(region("list heads", l.xoff, nv * 8, nv * 8));
                let nodes = list_nodes * LIST_NODE_STRIDE;
                regions.push(region("list nodes (32-byte heap chunks)", l.xadj, nodes, nodes - 16));
                // Generator 2m; find_nv 2m; heads set nv; per edge 2 loads + 4 per direction.
                (6.0 * mf + nvf + 8.0 * non_loop, 2.0 * non_loop)
            }
        };
        for (r, arrays) in l.searches.iter().enumerate() {
            regions.push(region(&format!("search {r}: predecessors"), arrays.pred, nv * 8, nv * 8));
            regions.push(region(&format!("search {r}: queue"), arrays.queue, nv * 8, (connected * 8.0) as u64));
            let checked = if self.validation { 2 * nv * 8 } else { 0 };
            regions.push(region(&format!("search {r}: validation (seen edges, levels)"), arrays.check, 2 * nv * 8, checked));
        }
        // Per search: predecessors set, root claimed; per reached vertex its dequeue and
        // adjacency bounds (CSR: 3 loads, list: 2); per adjacency entry 2 loads (list: 3, with
        // the next pointer); per vertex claimed a store and an enqueue.
        let per_vertex = if self.adjacency == Adjacency::Csr { 3.0 } else { 2.0 };
        let per_entry = if self.adjacency == Adjacency::Csr { 2.0 } else { 3.0 };
        let search = nvf + 2.0 + per_vertex * connected + per_entry * scanned + 2.0 * (connected - 1.0);
        // Per validation (R vertices reached, c chains): the root's predecessor; nv stores
        // clearing seen edges and nv + 1 setting levels; per vertex its level, and for an
        // unreached one or a chain's start its predecessor; per vertex on a chain 5 (up a level
        // and a predecessor, down a level, a store and a predecessor) and per chain 2 more
        // (the levels ending both walks); per edge its endpoints and their predecessors (4),
        // and for one between reached vertices both levels (2; taken as every edge); a seen-edge
        // store per tree edge; a last pass of a predecessor per vertex and a seen flag per
        // reached one. Chains are taken as one vertex each (c = R: a vertex's predecessor is
        // nearly always levelled before it; 1.07 vertices a chain measured at `small`).
        let (r, chains) = (connected, connected);
        let validation = 1.0 + 2.0 * nvf + 1.0 + nvf + (nvf - r + chains) + 5.0 * r + 2.0 * chains + 6.0 * mf + r + nvf + r;
        let roots = f64::from(self.roots);
        Expected {
            regions,
            phases: vec![
                ExpectedPhase { name: "setup", emitted: self.setup, refs: setup as u64, exact: false },
                ExpectedPhase { name: "bfs", emitted: true, refs: (search * roots) as u64, exact: false },
                ExpectedPhase { name: "validation", emitted: self.validation, refs: (validation * roots) as u64, exact: false },
            ],
            tolerance: 0.1,
        }
    }

    fn run(&self, seed: u64, e: &mut Emitter) -> Result<Vec<String>, String> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        e.phase("setup", self.setup);
        let edges = e.malloc(self.edges() * 16);
        let ij = self.generate(&mut rng, edges, e)?;
        // The list nodes' count, hence where later allocations go, depends on the graph.
        let (xoff, xadj) = self.allocate_graph(e, 2 * Self::non_loop_edges(ij.raw()));
        let layout = Layout { edges, xoff, xadj, searches: Vec::new() };
        self.find_nv(&ij, e)?;
        let graph = match self.adjacency {
            Adjacency::Csr => Graph::Csr(self.build_csr(&ij, &layout, e)?),
            Adjacency::List => Graph::List(self.build_lists(&ij, &layout, e)?),
        };
        let roots = self.pick_roots(&graph, &mut rng)?;
        let nv = self.vertices() as usize;
        let mut reached_total = 0;
        for &root in &roots {
            // The allocations of `layout`'s searches, where the reference code makes them.
            e.phase("bfs", true);
            let (pred_at, queue_at) = (e.malloc(nv as u64 * 8), e.malloc(nv as u64 * 8));
            let mut pred = SimVec::filled(pred_at, nv, NONE, "the predecessor array")?;
            let mut queue = SimVec::filled(queue_at, nv, 0u64, "the BFS queue")?;
            reached_total += Self::bfs(&graph, root, &mut pred, &mut queue, e);
            e.phase("validation", self.validation);
            e.free(queue_at);
            let check = e.malloc(2 * nv as u64 * 8);
            verify::verify(&ij, root, &pred, check, e).map_err(|m| format!("search from root {root}: {m}"))?;
            e.free(check);
            e.free(pred_at);
            if e.stopped() {
                return Ok(Vec::new());
            }
        }
        Ok(vec![format!(
            "{} BFS trees pass the Graph500 validation rules ({:.0} vertices reached on average)",
            self.roots,
            reached_total as f64 / f64::from(self.roots)
        )])
    }
}
