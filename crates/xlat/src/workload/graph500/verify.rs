//! Graph500's validation of a search tree, as the reference's `verify_bfs_tree` does it and
//! with the accesses it makes (see the module above for what is emitted).

use super::{CLAIM_INSTRUCTIONS, EDGE_PASS_INSTRUCTIONS, NONE, VERTEX_PASS_INSTRUCTIONS};
use crate::workload::emit::{Emitter, SimVec};

/// The reference's `verify_bfs_tree` of the tree in `pred` from `root`, its `seen_edge`
/// and `level` arrays at `check`: the validation rules, emitting the accesses.
pub(super) fn verify(ij: &SimVec<u64>, root: usize, pred: &SimVec<u64>, check: u64, e: &mut Emitter) -> Result<(), String> {
    let nv = pred.len();
    if pred.ld(root, e) != root as u64 {
        return Err(format!("root {root} is not its own predecessor"));
    }
    // `seen_edge` is `check[..nv]`, `level` is `check[nv..]`.
    let mut check = SimVec::filled(check, 2 * nv, 0u64, "the validation arrays")?;
    for v in 0..nv {
        check.st(v, 0, e);
    }
    e.instructions(VERTEX_PASS_INSTRUCTIONS * nv as u64);
    compute_levels(pred, root, &mut check, e)?;
    for k in 0..ij.len() / 2 {
        let (i, j) = (ij.ld(2 * k, e) as usize, ij.ld(2 * k + 1, e) as usize);
        let (pi, pj) = (pred.ld(i, e), pred.ld(j, e));
        e.instructions(EDGE_PASS_INSTRUCTIONS);
        if (pi == NONE) != (pj == NONE) {
            return Err(format!("edge ({i}, {j}) joins a reached and an unreached vertex"));
        }
        if pi == NONE {
            continue;
        }
        if i != j {
            if pi == j as u64 {
                check.st(i, 1, e);
            }
            if pj == i as u64 {
                check.st(j, 1, e);
            }
        }
        let (li, lj) = (check.ld(nv + i, e), check.ld(nv + j, e));
        if li.abs_diff(lj) > 1 {
            return Err(format!("edge ({i}, {j}) joins levels {li} and {lj}"));
        }
    }
    for k in (0..nv).filter(|&k| k != root) {
        let p = pred.ld(k, e);
        if p != NONE && check.ld(k, e) == 0 {
            return Err(format!("tree edge ({k}, {p}) is not an edge of the graph"));
        }
        e.instructions(VERTEX_PASS_INSTRUCTIONS);
    }
    Ok(())
}

/// The reference's `compute_levels`: every reached vertex's level into `check[nv..]`.
fn compute_levels(pred: &SimVec<u64>, root: usize, check: &mut SimVec<u64>, e: &mut Emitter) -> Result<(), String> {
    let nv = pred.len();
    for v in 0..nv {
        check.st(nv + v, NONE, e);
    }
    check.st(nv + root, 0, e);
    e.instructions(VERTEX_PASS_INSTRUCTIONS * nv as u64);
    for k in 0..nv {
        let levelled_or_unreached = check.ld(nv + k, e) != NONE || pred.ld(k, e) == NONE;
        e.instructions(VERTEX_PASS_INSTRUCTIONS);
        if levelled_or_unreached {
            continue;
        }
        // Up the predecessors to the first vertex with a level.
        let (mut parent, mut hops) = (k, 0);
        while check.ld(nv + parent, e) == NONE {
            if hops == nv {
                return Err(format!("following predecessors from vertex {k} loops"));
            }
            parent = pred.ld(parent, e) as usize;
            if parent == NONE as usize {
                return Err(format!("vertex {k} has a predecessor chain that does not reach the root"));
            }
            hops += 1;
        }
        // Down the same chain, giving each vertex its level.
        // The level the loop's last test read, still in a register: not read again.
        let mut level = check.raw()[nv + parent] + hops as u64;
        let mut v = k;
        while check.ld(nv + v, e) == NONE {
            check.st(nv + v, level, e);
            level -= 1;
            v = pred.ld(v, e) as usize;
        }
        e.instructions(2 * CLAIM_INSTRUCTIONS * hops as u64);
    }
    Ok(())
}
