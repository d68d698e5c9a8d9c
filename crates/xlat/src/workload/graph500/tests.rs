//! The validation against a brute-force definition of a BFS tree, and its accesses counted by
//! hand on a small graph.

use super::verify::verify;
use super::NONE;
use crate::memref::{AccessKind, MemRef};
use crate::workload::emit::{Discard, Emitter, Marks, Sink, SimVec};
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

/// Every reference the validation hands out.
struct Collect(Vec<MemRef>);

impl Sink for Collect {
    fn take(&mut self, refs: &mut Vec<MemRef>, marks: &mut Marks) -> bool {
        self.0.append(refs);
        marks.clear();
        true
    }
}

/// The path 0 – 1 – 2 and the isolated vertex 3, from root 0: the references counted from the
/// reference's source by hand.
#[test]
fn validation_of_a_path_makes_the_references_of_the_source() {
    let mut sink = Collect(Vec::new());
    validate(&[(0, 1), (1, 2)], 0, &[0, 0, 1, NONE], &mut sink).unwrap();
    let count = |kind| sink.0.iter().filter(|r| r.kind == kind).count();
    // Loads: the root's predecessor; while levelling, vertex 0 its level, vertices 1 and 2
    // their level and predecessor, then up the chain a level, a predecessor and the parent's
    // level, and down it the same three again (8 each), vertex 3 its level and predecessor;
    // per edge 2 endpoints, 2 predecessors and 2 levels; in the last pass 3 predecessors and
    // 2 seen flags.
    assert_eq!(count(AccessKind::Load), 1 + (1 + 8 + 8 + 2) + 2 * 6 + 5);
    // Stores: 4 seen flags cleared, 4 levels set to -1 and the root's to 0, one level each
    // for vertices 1 and 2, one seen flag per tree edge.
    assert_eq!(count(AccessKind::Store), 4 + 5 + 2 + 2);
    let levels_at = CHECK_AT + 4 * 8;
    assert!(sink.0.contains(&MemRef { vaddr: levels_at + 2 * 8, asid: 1, size: 8, kind: AccessKind::Store }), "vertex 2's level");
    assert!(sink.0.iter().all(|r| [EDGES_AT, PRED_AT, CHECK_AT].contains(&(r.vaddr & !0xf_ffff))));
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
