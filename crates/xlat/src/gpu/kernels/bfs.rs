//! `bfs`: level-synchronous breadth-first search from vertex 0 over a random directed graph
//! in CSR (BFS2), one launch per level. Warps take 32 frontier vertices, load their
//! adjacency bounds (a gather), then expand them one after another with the whole warp:
//! coalesced loads of the adjacency list, a gather of the neighbours' levels, and for the
//! neighbours this vertex discovers, scattered stores of their levels, an atomic on the
//! next frontier's tail and a store of the new frontier entries. Frontier buffers are
//! allocated per level at their size and freed once read, so the address space fragments.
//!
//! Which vertex discovers a neighbour, and where it lands in the next frontier, is decided
//! by the host's BFS in frontier order, so every warp's accesses follow from the computed
//! search alone, never from the order in which the machine happens to run the warps.

use rand::Rng;

use super::grid::{Grid, Layout, Program, Steps, LANES};

/// Bytes of a vertex id, an offset or a level (u32/i32).
const ELEM: u64 = 4;

/// Mean out-degree; degrees are uniform from 1 to twice that minus one.
const AVG_DEGREE: usize = 16;

/// Half-width of the id window that holds most neighbours: graphs from meshes, roads and
/// crawls, numbered by locality, have most edges between nearby ids.
const WINDOW: i64 = 64;

/// Out of eight edges, how many stay in the window.
const LOCAL_OF_8: u32 = 7;

/// Level of a vertex the search never reaches.
pub(super) const UNREACHED: i32 = -1;

/// A directed graph in CSR: the out-neighbours of `v` are `adj[row_ptr[v]..row_ptr[v + 1]]`,
/// sorted and without repeats or self-loops.
pub(super) struct Graph {
    pub(super) row_ptr: Vec<u32>,
    pub(super) adj: Vec<u32>,
}

/// Buffers the search allocates before its first launch.
struct Bases {
    row_ptr: u64,
    adj: u64,
    level: u64,
    tail: u64,
    /// The frontier of each level.
    frontier: Vec<u64>,
}

/// The application.
pub(super) struct Bfs {
    graph: Graph,
    /// Level of each vertex, or [`UNREACHED`].
    pub(super) level: Vec<i32>,
    /// The vertex whose expansion discovered each vertex.
    parent: Vec<u32>,
    /// Index of each reached vertex in its level's frontier.
    slot: Vec<u32>,
    frontiers: Vec<Vec<u32>>,
    bases: Bases,
}

/// Vertices for a footprint of `bytes`: a vertex costs its offset, level, about
/// `AVG_DEGREE` edges and its share of two frontiers.
pub(super) fn vertices(bytes: u64) -> usize {
    (bytes / ((AVG_DEGREE as u64 + 4) * ELEM)) as usize
}

/// The random graph of `n` vertices.
pub(super) fn graph(seed: u64, n: usize) -> Graph {
    let mut rng = super::rng(seed, "bfs");
    let mut row_ptr = vec![0u32];
    let mut adj = Vec::new();
    let mut out = Vec::new();
    for v in 0..n {
        out.clear();
        for _ in 0..rng.random_range(1..2 * AVG_DEGREE) {
            let u = if rng.random_ratio(LOCAL_OF_8, 8) {
                (v as i64 + rng.random_range(-WINDOW..=WINDOW)).clamp(0, n as i64 - 1) as u32
            } else {
                rng.random_range(0..n as u32)
            };
            out.push(u);
        }
        out.sort_unstable();
        out.dedup();
        out.retain(|&u| u as usize != v);
        adj.extend_from_slice(&out);
        row_ptr.push(adj.len() as u32);
    }
    Graph { row_ptr, adj }
}

impl Graph {
    fn neighbours(&self, v: usize) -> &[u32] {
        &self.adj[self.row_ptr[v] as usize..self.row_ptr[v + 1] as usize]
    }
}

/// Builds the application for a footprint of `bytes`.
pub(super) fn grid(bytes: u64, seed: u64) -> Grid<Bfs> {
    let n = vertices(bytes);
    let graph = graph(seed, n);
    let mut bfs = search(graph);
    let mut layout = Layout::default();
    bfs.bases.row_ptr = layout.alloc(0, (n as u64 + 1) * ELEM);
    bfs.bases.adj = layout.alloc(0, bfs.graph.adj.len() as u64 * ELEM);
    bfs.bases.level = layout.alloc(0, n as u64 * ELEM);
    bfs.bases.tail = layout.alloc(0, ELEM);
    let frontier_bytes = |f: &Vec<u32>| f.len() as u64 * ELEM;
    bfs.bases.frontier = vec![layout.alloc(0, frontier_bytes(&bfs.frontiers[0]))];
    // Before launch l: the frontier launch l - 1 read is dead; launch l writes the next.
    for launch in 0..bfs.frontiers.len() {
        if launch > 0 {
            layout.free(launch, bfs.bases.frontier[launch - 1]);
        }
        if let Some(next) = bfs.frontiers.get(launch + 1) {
            let base = layout.alloc(launch, frontier_bytes(next));
            bfs.bases.frontier.push(base);
        }
    }
    Grid::new("bfs", bfs, layout)
}

/// The search on the host, frontier by frontier in order: the order in which the warps'
/// expansions, item by item, would discover the vertices.
fn search(graph: Graph) -> Bfs {
    let n = graph.row_ptr.len() - 1;
    let (mut level, mut parent, mut slot) = (vec![UNREACHED; n], vec![0; n], vec![0; n]);
    level[0] = 0;
    let mut frontiers = vec![vec![0u32]];
    loop {
        let depth = frontiers.len() as i32;
        let mut next = Vec::new();
        for &v in frontiers.last().expect("the source's frontier") {
            for &u in graph.neighbours(v as usize) {
                if level[u as usize] == UNREACHED {
                    level[u as usize] = depth;
                    parent[u as usize] = v;
                    slot[u as usize] = next.len() as u32;
                    next.push(u);
                }
            }
        }
        if next.is_empty() {
            break;
        }
        frontiers.push(next);
    }
    let bases = Bases { row_ptr: 0, adj: 0, level: 0, tail: 0, frontier: Vec::new() };
    Bfs { graph, level, parent, slot, frontiers, bases }
}

impl Bfs {
    /// Byte address of element `index` of the buffer at `base`.
    fn at(base: u64, index: usize) -> u64 {
        base + index as u64 * ELEM
    }

    /// The warp's expansion of frontier vertex `v` at launch `launch`.
    fn expand(&self, launch: usize, v: usize, out: &mut Steps) {
        let b = &self.bases;
        let start = self.graph.row_ptr[v] as usize;
        let discovers = |u: u32| self.level[u as usize] == launch as i32 + 1 && self.parent[u as usize] as usize == v;
        out.compute(2);
        for (chunk, neighbours) in self.graph.neighbours(v).chunks(LANES).enumerate() {
            let first = start + chunk * LANES;
            out.compute(3);
            out.load((first..first + neighbours.len()).map(|k| Self::at(b.adj, k)));
            out.load(neighbours.iter().map(|&u| Self::at(b.level, u as usize)));
            // The level test, the warp vote and the prefix count of the discoveries.
            out.compute(4);
            let found = || neighbours.iter().copied().filter(|&u| discovers(u));
            out.store(found().map(|u| Self::at(b.level, u as usize)));
            if found().next().is_some() {
                out.store([b.tail]);
                let next = b.frontier[launch + 1];
                out.store(found().map(|u| Self::at(next, self.slot[u as usize] as usize)));
            }
        }
    }
}

impl Program for Bfs {
    fn launches(&self) -> usize {
        self.frontiers.len()
    }

    fn items(&self, launch: usize) -> usize {
        self.frontiers[launch].len().div_ceil(LANES)
    }

    fn emit(&self, launch: usize, item: usize, out: &mut Steps) {
        let frontier = &self.frontiers[launch];
        let lanes = item * LANES..(item * LANES + LANES).min(frontier.len());
        let vertices = &frontier[lanes.clone()];
        let b = &self.bases;
        out.compute(4);
        out.load(lanes.map(|i| Self::at(b.frontier[launch], i)));
        out.compute(2);
        out.load(vertices.iter().map(|&v| Self::at(b.row_ptr, v as usize)));
        out.load(vertices.iter().map(|&v| Self::at(b.row_ptr, v as usize + 1)));
        for &v in vertices {
            self.expand(launch, v as usize, out);
        }
    }
}
