//! Every verifier rejects a corrupted result, so that a passing check means something.

use super::graph::{self, Csr, Dest, GraphKind, WNode};
use super::*;
use crate::workload::address_space::AddressSpace;
use crate::workload::emit::Discard;

/// Neighbour entries the squished graph will have: both directions of every distinct
/// non-loop edge (counted on the host).
fn squished_entries(pairs: &[(u32, u32)]) -> Result<u64, String> {
    let mut keys: Vec<u64> = Vec::new();
    keys.try_reserve_exact(pairs.len()).map_err(|_| "cannot allocate host memory for counting distinct edges".to_string())?;
    keys.extend(pairs.iter().filter(|(u, v)| u != v).map(|&(u, v)| (u64::from(u.min(v)) << 32) | u64::from(u.max(v))));
    keys.sort_unstable();
    keys.dedup();
    Ok(2 * keys.len() as u64)
}

/// A tiny graph of `kind`, built on a throw-away emitter where the builder's plan places it,
/// and a fresh address space for the kernels' arrays.
fn tiny<D: Dest>(kind: GraphKind) -> (Csr<D>, AddressSpace, Xoshiro256PlusPlus) {
    let mut gap = Gap::preset(Scale::Tiny);
    gap.graph = kind;
    gap.kernel = if D::WEIGHTED { Kernel::Sssp } else { Kernel::Bfs };
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    let pairs = graph::generate(kind, gap.scale, gap.edges(), gap.initiator(), &mut rng).unwrap();
    let entries = squished_entries(&pairs).unwrap();
    let layout = graph::BuildLayout::plan(&mut AddressSpace::new(), gap.build_sizes(), entries);
    let g = with_emitter(|e| graph::build::<D>(kind, gap.scale, pairs, &mut rng, e)).unwrap();
    assert_eq!(g.entries() as u64, entries);
    assert_eq!((g.neigh.addr(0), g.index.addr(0)), (layout.sq_neigh, layout.sq_index));
    (g, AddressSpace::new(), rng)
}

fn with_emitter<T>(f: impl FnOnce(&mut Emitter) -> T) -> T {
    let mut sink = Discard;
    let mut e = Emitter::new(0, &mut sink);
    f(&mut e)
}

/// A vertex with a neighbour.
fn source<D: Dest>(g: &Csr<D>) -> usize {
    (0..g.vertices()).find(|&v| g.degree(v) > 0).unwrap()
}

#[test]
fn a_wrong_bfs_parent_is_caught() {
    let (g, mut space, _) = tiny::<u32>(GraphKind::Kron);
    let s = source(&g);
    let t = bfs::plan(&mut space, g.vertices() as u64);
    let mut parent = with_emitter(|e| bfs::run(&g, s, &t, e)).unwrap();
    bfs::verify(&g, s, &parent).unwrap();
    // A reached vertex two or more hops away: naming the source its parent claims an edge
    // the graph does not have.
    let far = (0..g.vertices())
        .find(|&v| parent[v] >= 0 && v != s && g.adj(v).binary_search(&(s as u32)).is_err())
        .expect("a tiny kron graph has vertices beyond the source's neighbours");
    parent[far] = s as i32;
    assert!(bfs::verify(&g, s, &parent).is_err());
    parent[s] = -1;
    assert!(bfs::verify(&g, s, &parent).unwrap_err().contains("source"));
}

#[test]
fn a_perturbed_pagerank_is_caught() {
    let (g, mut space, _) = tiny::<u32>(GraphKind::Urand);
    let t = pr::plan(&mut space, g.vertices() as u64);
    let (mut scores, _) = with_emitter(|e| pr::run(&g, &t, e)).unwrap();
    pr::verify(&g, &scores).unwrap();
    scores[0] *= 1.5;
    assert!(pr::verify(&g, &scores).is_err());
}

#[test]
fn merged_or_split_components_are_caught() {
    let (g, mut space, mut rng) = tiny::<u32>(GraphKind::Kron);
    let t = cc::plan(&mut space, g.vertices() as u64);
    let comp = with_emitter(|e| cc::run(&g, &t, &mut rng, e)).unwrap();
    cc::verify(&g, &comp).unwrap();
    let v = source(&g);
    let mut split = comp.clone();
    split[v] = u32::MAX;
    assert!(cc::verify(&g, &split).is_err(), "a vertex split from its component");
    let isolated = (0..g.vertices()).find(|&v| g.degree(v) == 0).expect("a kron graph has isolated vertices");
    let mut merged = comp;
    merged[isolated] = merged[v];
    assert!(cc::verify(&g, &merged).is_err(), "an isolated vertex merged into a component");
}

#[test]
fn a_wrong_distance_is_caught() {
    let (g, mut space, _) = tiny::<WNode>(GraphKind::Kron);
    let s = source(&g);
    let t = sssp::plan(&mut space, g.vertices() as u64, g.entries() as u64);
    let mut dist = with_emitter(|e| sssp::run(&g, s, 1, &t, e)).unwrap();
    sssp::verify(&g, s, &dist).unwrap();
    let v = g.adj(s)[0].v() as usize;
    dist[v] += 1;
    assert!(sssp::verify(&g, s, &dist).is_err());
}

#[test]
fn a_wrong_centrality_is_caught() {
    let (g, mut space, _) = tiny::<u32>(GraphKind::Urand);
    let sources = [source(&g), source(&g) + 1];
    let mut t = bc::plan(&mut space, g.vertices() as u64, g.entries() as u64);
    let mut scores = with_emitter(|e| bc::run(&g, &sources, &mut t, e)).unwrap();
    bc::verify(&g, &sources, &scores).unwrap();
    scores[7] += 1e-4;
    assert!(bc::verify(&g, &sources, &scores).is_err());
}

#[test]
fn a_wrong_triangle_count_is_caught() {
    for kind in [GraphKind::Kron, GraphKind::Urand] {
        let (g, mut space, mut rng) = tiny::<u32>(kind);
        let (n, entries) = (g.vertices() as u64, g.entries() as u64);
        let mut planned = tc::plan_samples(&mut space, n);
        planned.release(&mut space);
        let (count, run) = with_emitter(|e| {
            let mut t = tc::plan_samples(e, n);
            let relabel = tc::worth_relabelling(&g, &t, &mut rng, e).unwrap();
            assert_eq!(relabel, kind == GraphKind::Kron, "GAP's heuristic relabels the skewed graph only");
            if relabel {
                tc::plan_relabel(&mut planned, &mut space, n, entries);
            }
            t.release(e);
            (tc::run(&g, relabel, &mut t, e), t)
        });
        assert_eq!(run.into_regions(), planned.into_regions(), "the plan allocates as the run does");
        let count = count.unwrap();
        tc::verify(&g, count).unwrap();
        assert!(tc::verify(&g, count + 1).is_err());
    }
}

#[test]
fn squishing_sorts_and_drops_duplicates_and_self_loops() {
    let mut list = [5u32, 3, 7, 3, 9, 5];
    assert_eq!(graph::sort_dedup(&mut list, 9), 3);
    assert_eq!(&list[..3], &[3, 5, 7]);
    let mut weighted = [WNode::new(4, 9), WNode::new(2, 1), WNode::new(4, 3)];
    assert_eq!(graph::sort_dedup(&mut weighted, 0), 2);
    assert_eq!(weighted[1], WNode::new(4, 3), "a duplicate keeps its lightest weight");
}
