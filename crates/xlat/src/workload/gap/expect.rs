//! What a GAP run is expected to allocate and reference, computed without running it.
//!
//! The graph's size comes from the generators' statistics: for `kron` the Kronecker
//! initiator's expected distinct edges and non-isolated vertices ([`kronecker`]), for `urand`
//! the chance that an unordered vertex pair or a vertex is hit by none of the edges. The
//! set-up phase's references then follow exactly from the builder's code (18 per generated
//! edge, 19 when weighted, 15 per vertex, 2 per kept neighbour entry). The kernels' references
//! depend on the search order, iteration counts and bin contents, which are not known
//! beforehand: each is a per-trial model fitted to runs at 2^10 and 2^14 vertices (in
//! `docs/workloads.md`), with the kernel's tolerance.

use super::graph::{BuildLayout, BuildSizes, GraphKind};
use super::{bc, bfs, cc, pr, sssp, tc, Gap, Kernel, Trial};
use crate::workload::address_space::AddressSpace;
use crate::workload::{kronecker, Expected, ExpectedPhase, Region};

/// Expected neighbour entries (twice the distinct undirected non-loop edges) and non-isolated
/// vertices.
pub fn graph_stats(gap: &Gap) -> (f64, f64) {
    let (n, m) = (gap.vertices() as f64, gap.edges());
    match gap.graph {
        GraphKind::Kron => {
            let (distinct, connected) = kronecker::expected_graph(gap.scale, m, gap.initiator());
            (2.0 * distinct, connected)
        }
        GraphKind::Urand => {
            let pairs = n * (n - 1.0) / 2.0;
            let hit_pair = 2.0 / (n * n);
            let hit_vertex = (2.0 * n - 1.0) / (n * n);
            let distinct = pairs * -(m as f64 * (-hit_pair).ln_1p()).exp_m1();
            let connected = n * -(m as f64 * (-hit_vertex).ln_1p()).exp_m1();
            (2.0 * distinct, connected)
        }
    }
}

/// References of one trial of the kernel, by the fitted models, and the tolerance.
fn trial_refs(gap: &Gap, n: f64, entries: f64) -> (f64, f64) {
    let kron = gap.graph == GraphKind::Kron;
    let degree = entries / n;
    match gap.kernel {
        Kernel::Bfs => (15.0 * n, 0.15),
        Kernel::Pr => {
            // The iterations to convergence vary with the seed (kron 15-18, urand 4-9 seen).
            let iterations = if kron { 16.0 } else { 6.5 };
            (4.0 * n + iterations * (5.0 * n + 2.0 * entries), 0.4)
        }
        Kernel::Cc => (if kron { 24.0 } else { 30.0 } * n, 0.15),
        Kernel::Sssp => (4.3 * entries, 0.15),
        Kernel::Bc => (f64::from(gap.sources) * 7.0 * entries, 0.1),
        Kernel::Tc if tc_relabels(gap, entries) => {
            // The relabelling's passes, then the count, fitted as a power of the entries.
            (3000.0 + 14.0 * n + 7.0 * entries + 1.06 * entries.powf(1.31), 0.25)
        }
        Kernel::Tc => (0.58 * n * degree * degree, 0.1),
    }
}

/// Whether GAP's heuristic is expected to relabel the graph: average degree at least 10 and
/// a skewed degree distribution (`kron`).
fn tc_relabels(gap: &Gap, entries: f64) -> bool {
    gap.graph == GraphKind::Kron && (entries / 2.0 / gap.vertices() as f64).floor() >= 10.0
}

/// The builder's allocations as regions, for `entries` neighbour entries; with `setup` off
/// only the final graph is touched.
fn build_regions(l: &BuildLayout, s: BuildSizes, entries: u64, setup: bool) -> Vec<Region> {
    let arrays = [
        ("edge list", l.el, s.edge_list(), true),
        ("degrees", l.degrees, s.counts(), true),
        ("offsets", l.offsets, s.offsets(), true),
        ("unsquished neighbours", l.neigh, s.neighbours(2 * s.m), true),
        ("unsquished index", l.index, s.index(), true),
        ("squish: kept counts", l.diffs, s.counts(), true),
        ("squish: offsets", l.sq_offsets, s.offsets(), true),
        ("neighbours", l.sq_neigh, s.neighbours(entries), false),
        ("index", l.sq_index, s.index(), false),
    ];
    arrays
        .into_iter()
        .map(|(name, addr, bytes, setup_only)| Region { name: name.into(), addr, bytes, touched: if setup || !setup_only { bytes } else { 0 } })
        .collect()
}

/// One trial's allocations, as the run makes them.
fn trial_plan(gap: &Gap, space: &mut AddressSpace, entries: u64) -> Trial {
    let n = gap.vertices();
    match gap.kernel {
        Kernel::Bfs => bfs::plan(space, n),
        Kernel::Pr => pr::plan(space, n),
        Kernel::Cc => cc::plan(space, n),
        Kernel::Sssp => {
            let mut t = sssp::plan(space, n, entries);
            // The frontier is sized for every entry but holds one bin at a time.
            t.set_touched(1, (n * 4).min(entries * 4));
            t
        }
        Kernel::Bc => {
            let mut t = bc::plan(space, n, entries);
            bc::plan_sources(&mut t, space, n, gap.sources);
            t
        }
        Kernel::Tc => {
            let mut t = tc::plan_samples(space, n);
            t.release(space);
            if tc_relabels(gap, entries as f64) {
                tc::plan_relabel(&mut t, space, n, entries);
            }
            t
        }
    }
}

/// The expectation of `gap`.
pub fn expected(gap: &Gap) -> Expected {
    let (entries, _connected) = graph_stats(gap);
    let (n, m) = (gap.vertices(), gap.edges());
    let (sizes, squished) = (gap.build_sizes(), entries.round() as u64);
    let mut space = AddressSpace::new();
    let layout = BuildLayout::plan(&mut space, sizes, squished);
    let mut regions = build_regions(&layout, sizes, squished, gap.setup);
    for _ in 0..gap.trials {
        let mut t = trial_plan(gap, &mut space, squished);
        t.release(&mut space);
        regions.extend(t.into_regions());
    }
    let weighted_edges = if gap.weighted() { m } else { 0 };
    let setup = 18 * m + weighted_edges + 15 * n + 2 * squished + 6;
    let (per_trial, tolerance) = trial_refs(gap, n as f64, entries);
    Expected {
        regions,
        phases: vec![
            ExpectedPhase { name: "setup", emitted: gap.setup, refs: setup, exact: false },
            ExpectedPhase { name: gap.kernel.name(), emitted: true, refs: (per_trial * f64::from(gap.trials)) as u64, exact: false },
        ],
        tolerance,
    }
}
