//! The validation against a brute-force definition of a BFS tree, and its accesses counted by
//! hand on a small graph.

use super::verify::verify;
use super::NONE;
use crate::memref::{AccessKind, MemRef};
use crate::workload::emit::{Discard, Emitter, Sink, SimVec};
use proptest::prelude::*;
use std::collections::VecDeque;

/// Where the test arrays live in the simulated address space.
const EDGES_AT: u64 = 0x10_0000;
const PRED_AT: u64 = 0x20_0000;
const CHECK_AT: u64 = 0x30_0000;

/// Runs the validation of `pred` from `root` over the edge list `edges` into `sink`.
fn validate(edges: &[(u64, u64)], root: usize, pred: &[u64], sink: &mut dyn Sink) -> Result<(), String> {
    let ij = SimVec::from_vec(EDGES_AT, edges.iter().flat_map(|&(i, j)| [i, j]).collect());
    let pred = SimVec::from_vec(PRED_AT, pred.to_vec());
    let mut e = Emitter::new(1, sink);
    let result = verify(&ij, root, &pred, CHECK_AT, &mut e);
    e.finish();
    result
}

/// Each vertex's distance from `root` over the edges, `None` where unreachable.
fn distances(nv: usize, edges: &[(u64, u64)], root: usize) -> Vec<Option<u64>> {
    let mut dist = vec![None; nv];
    dist[root] = Some(0);
    let mut queue = VecDeque::from([root]);
    while let Some(v) = queue.pop_front() {
        for &(i, j) in edges {
            let (i, j) = (i as usize, j as usize);
            for (from, to) in [(i, j), (j, i)] {
                if from == v && dist[to].is_none() {
                    dist[to] = Some(dist[v].unwrap() + 1);
                    queue.push_back(to);
                }
            }
        }
    }
    dist
}

/// True when `pred` is a BFS tree from `root`: the root is its own predecessor, exactly the
/// vertices reachable from the root have a predecessor, and each other reached vertex's is a
/// neighbour one step nearer the root. (The Graph500 rules define the same trees: levels
/// that grow by one along tree edges and by at most one along any edge are the distances.)
fn is_bfs_tree(edges: &[(u64, u64)], root: usize, pred: &[u64]) -> bool {
    let dist = distances(pred.len(), edges, root);
    let is_edge = |a: usize, b: u64| edges.iter().any(|&(i, j)| (i == a as u64 && j == b) || (j == a as u64 && i == b));
    pred[root] == root as u64
        && (0..pred.len()).filter(|&v| v != root).all(|v| match (dist[v], pred[v]) {
            (None, p) => p == NONE,
            (Some(_), NONE) => false,
            (Some(d), p) => is_edge(v, p) && dist[p as usize] == Some(d - 1),
        })
}

/// A BFS tree from `root`: each reached vertex's predecessor is its first neighbour one step
/// nearer.
fn a_bfs_tree(nv: usize, edges: &[(u64, u64)], root: usize) -> Vec<u64> {
    let dist = distances(nv, edges, root);
    (0..nv)
        .map(|v| match dist[v] {
            None => NONE,
            Some(0) => v as u64,
            Some(d) => (0..nv).find(|&p| dist[p] == Some(d - 1) && edges.iter().any(|&(i, j)| (i, j) == (v as u64, p as u64) || (j, i) == (v as u64, p as u64))).unwrap() as u64,
        })
        .collect()
}

/// A small graph as an edge list with self-loops and duplicates, and a root with an edge.
fn graph() -> impl Strategy<Value = (usize, Vec<(u64, u64)>, usize)> {
    (2usize..24).prop_flat_map(|nv| {
        let edge = (0..nv as u64, 0..nv as u64);
        (Just(nv), prop::collection::vec(edge, 1..40)).prop_flat_map(|(nv, edges)| {
            let root = prop::sample::select(edges.iter().map(|&(i, _)| i as usize).collect::<Vec<_>>());
            (Just(nv), Just(edges), root)
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The validation accepts exactly the BFS trees: a BFS tree, and the same tree with up to
    /// three predecessors changed to any vertex or to none.
    #[test]
    fn validation_accepts_exactly_the_bfs_trees(
        (nv, edges, root) in graph(),
        changes in prop::collection::vec((any::<prop::sample::Index>(), prop::option::of(any::<prop::sample::Index>())), 0..4),
    ) {
        let mut pred = a_bfs_tree(nv, &edges, root);
        prop_assert!(validate(&edges, root, &pred, &mut Discard).is_ok());
        for (v, to) in changes {
            pred[v.index(nv)] = to.map_or(NONE, |p| p.index(nv) as u64);
        }
        let verdict = validate(&edges, root, &pred, &mut Discard);
        prop_assert_eq!(verdict.is_ok(), is_bfs_tree(&edges, root, &pred), "{:?}", verdict);
    }
}

/// The path 3 – 2 – 1 – 0 from root 3, whose vertex 0 is levelled by a chain of three hops:
/// every reference, in order, as the reference's source makes them under the documented rule
/// (`P`: predecessors, `S`: seen-edge flags, `L`: levels, `E`: the edge list; `ld`/`st`).
#[test]
fn validation_of_a_path_makes_the_references_of_the_source() {
    let mut sink = crate::workload::emit::Collect(Vec::new());
    validate(&[(3, 2), (2, 1), (1, 0)], 3, &[1, 2, 3, 3], &mut sink).unwrap();
    let expected = [
        "P3 ld",                                           // the root is its own predecessor
        "S0 st", "S1 st", "S2 st", "S3 st",                // seen edges cleared
        "L0 st", "L1 st", "L2 st", "L3 st", "L3 st",       // levels -1, the root's 0
        "L0 ld", "P0 ld",                                  // vertex 0: no level, a predecessor
        "L0 ld", "P0 ld", "L1 ld", "P1 ld", "L2 ld", "P2 ld", "L3 ld", // up to the root
        "L0 ld", "L0 st", "P0 ld", "L1 ld", "L1 st", "P1 ld", "L2 ld", "L2 st", "P2 ld", "L3 ld", // down
        "L1 ld", "L2 ld", "L3 ld",                         // vertices 1 to 3 have levels
        "E0 ld", "E1 ld", "P3 ld", "P2 ld", "S2 st", "L3 ld", "L2 ld", // edge (3, 2)
        "E2 ld", "E3 ld", "P2 ld", "P1 ld", "S1 st", "L2 ld", "L1 ld", // edge (2, 1)
        "E4 ld", "E5 ld", "P1 ld", "P0 ld", "S0 st", "L1 ld", "L0 ld", // edge (1, 0)
        "P0 ld", "S0 ld", "P1 ld", "S1 ld", "P2 ld", "S2 ld", // every tree edge seen
    ];
    let name = |r: &MemRef| {
        let (array, index) = match r.vaddr & !0xf_ffff {
            EDGES_AT => ("E", (r.vaddr - EDGES_AT) / 8),
            PRED_AT => ("P", (r.vaddr - PRED_AT) / 8),
            _ if r.vaddr - CHECK_AT < 4 * 8 => ("S", (r.vaddr - CHECK_AT) / 8),
            _ => ("L", (r.vaddr - CHECK_AT) / 8 - 4),
        };
        let kind = if r.kind == AccessKind::Store { "st" } else { "ld" };
        assert_eq!(r.size, 8);
        format!("{array}{index} {kind}")
    };
    let emitted: Vec<String> = sink.0.iter().map(name).collect();
    assert_eq!(emitted, expected);
}

/// Each broken rule gives its own message.
#[test]
fn each_broken_rule_is_named() {
    let edges = [(0, 1), (1, 2), (2, 3), (0, 3)];
    let error = |root, pred: &[u64]| validate(&edges, root, pred, &mut Discard).unwrap_err();
    assert!(error(0, &[1, 0, 1, 0]).contains("root 0 is not its own predecessor"));
    assert!(error(0, &[0, 2, 1, 0]).contains("loops"));
    assert!(error(0, &[0, 0, NONE, 0]).contains("joins a reached and an unreached vertex"));
    assert!(error(0, &[0, 0, 1, 2]).contains("joins levels"));
    assert!(error(0, &[0, 0, 0, 0]).contains("tree edge (2, 0) is not an edge of the graph"));
}
