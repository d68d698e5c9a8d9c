//! The Kronecker (R-MAT) graph generator of the Graph500 specification, shared by Graph500
//! and the GAP kernels, and the statistics of the graphs it draws.
//!
//! Each edge's endpoints are drawn bit by bit: at every level the edge falls into one of the
//! four quadrants of the adjacency matrix with the initiator's probabilities (Graph500 and GAP:
//! A = 0.57, B = C = 0.19, D = 0.05; the workloads' `a`, `b` and `c` parameters). Vertex labels
//! are then permuted by a seeded random permutation, so that a vertex's label says nothing
//! about its degree.

use rand::seq::SliceRandom;
use rand::RngCore;
use rand_xoshiro::Xoshiro256PlusPlus;

/// The initiator: the probabilities of the upper-left (A), upper-right (B) and lower-left (C)
/// quadrants; the lower-right one (D) has the rest.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Initiator {
    /// Upper-left quadrant.
    pub a: f64,
    /// Upper-right quadrant.
    pub b: f64,
    /// Lower-left quadrant.
    pub c: f64,
}

impl Initiator {
    /// The Graph500 and GAP initiator.
    pub const GRAPH500: Initiator = Initiator { a: 0.57, b: 0.19, c: 0.19 };

    /// The lower-right quadrant's probability.
    fn d(self) -> f64 {
        1.0 - self.a - self.b - self.c
    }

    /// Checks that the four probabilities are positive (every quadrant reachable) and sum to
    /// 1, naming the workload parameter at fault.
    pub fn validate(self) -> Result<(), (&'static str, String)> {
        for (field, p) in [("a", self.a), ("b", self.b), ("c", self.c)] {
            if !(p > 0.0 && p < 1.0) {
                return Err((field, format!("initiator probability {p} is not in (0, 1)")));
            }
        }
        if self.d() <= 0.0 {
            return Err(("a", format!("a + b + c = {} leaves nothing for the fourth quadrant (must be below 1)", self.a + self.b + self.c)));
        }
        Ok(())
    }
}

/// Draws `count` edges over `2^scale` vertices with initiator `init`, relabelled by a random
/// permutation of the vertices. Fails with a message when the host cannot hold them.
pub fn edges(scale: u32, count: u64, init: Initiator, rng: &mut Xoshiro256PlusPlus) -> Result<Vec<(u64, u64)>, String> {
    let Initiator { a, b, c } = init;
    let mut pairs: Vec<(u64, u64)> = Vec::new();
    pairs.try_reserve_exact(count as usize).map_err(|_| "cannot allocate host memory for generating the edges".to_string())?;
    // The specification's `rand > p` tests, on 32-bit fixed-point uniforms: one 64-bit draw
    // gives both bits of a level.
    let threshold = |p: f64| (p * 4_294_967_296.0) as u64;
    let (ab, c_norm, a_norm) = (threshold(a + b), threshold(c / (1.0 - (a + b))), threshold(a / (a + b)));
    pairs.extend((0..count).map(|_| {
        let (mut i, mut j) = (0u64, 0u64);
        for bit in 0..scale {
            let draw = rng.next_u64();
            let ii = (draw & 0xffff_ffff) >= ab;
            let jj = (draw >> 32) >= if ii { c_norm } else { a_norm };
            i |= u64::from(ii) << bit;
            j |= u64::from(jj) << bit;
        }
        (i, j)
    }));
    let mut perm: Vec<u64> = (0..1u64 << scale).collect();
    perm.shuffle(rng);
    for pair in &mut pairs {
        *pair = (perm[pair.0 as usize], perm[pair.1 as usize]);
    }
    Ok(pairs)
}

/// Expected self-loops among `count` edges: every bit pair equal, probability A + D per bit.
pub fn expected_self_loops(scale: u32, count: u64, init: Initiator) -> f64 {
    count as f64 * (1.0 - init.b - init.c).powi(scale as i32)
}

/// `ln(n!)`.
fn ln_factorial(n: i32) -> f64 {
    (1..=n).map(|k| f64::from(k).ln()).sum()
}

/// `ln(n choose k)`.
fn ln_choose(n: i32, k: i32) -> f64 {
    ln_factorial(n) - ln_factorial(k) - ln_factorial(n - k)
}

/// Expected 4 KiB pages of a CSR adjacency array (8 bytes per entry) built from `count`
/// edges over `2^scale` vertices that hold a vertex's distinct neighbour. Each vertex's
/// segment holds both directions of its non-loop edges, distinct neighbours first and the
/// duplicates dropped after them, so only a run of duplicates spanning whole pages leaves
/// pages unread: computed per class of vertices with `k` one-bits from their mean degree and
/// mean distinct neighbours (partners differing in `i` of the vertex's zero bits and `j` of
/// its one bits are drawn with probability `A^(s-k-i) D^(k-j) (B^i C^j + C^i B^j)` per edge).
pub fn expected_adjacency_pages(scale: u32, count: u64, init: Initiator) -> f64 {
    const PER_PAGE: f64 = 512.0;
    let (s, m) = (scale as i32, count as f64);
    let Initiator { a: pa, b: pb, c: pc } = init;
    let pd = init.d();
    let (mut entries, mut unread) = (0.0, 0.0);
    for k in 0..=s {
        let (mut degree, mut distinct) = (0.0, 0.0);
        for i in 0..=s - k {
            for j in 0..=k {
                if i + j == 0 {
                    continue; // the vertex itself: loops are not stored
                }
                let partners = (ln_choose(s - k, i) + ln_choose(k, j)).exp();
                let p = pa.powi(s - k - i) * pd.powi(k - j) * (pb.powi(i) * pc.powi(j) + pc.powi(i) * pb.powi(j));
                degree += partners * m * p;
                distinct += partners * -(m * (-p).ln_1p()).exp_m1();
            }
        }
        let vertices = ln_choose(s, k).exp();
        entries += vertices * degree;
        // Whole pages in a run of t entries at a random offset: (t - 511) / 512 on average.
        unread += vertices * ((degree - distinct - (PER_PAGE - 1.0)) / PER_PAGE).max(0.0);
    }
    entries / PER_PAGE - unread
}

/// Expected distinct undirected non-loop edges and non-isolated vertices among `count` edges
/// over `2^scale` vertices: a vertex pair whose bits pair up as (a, b, c, d) times (0,0),
/// (0,1), (1,0), (1,1) is drawn with probability A^a B^b C^c D^d per edge.
pub fn expected_graph(scale: u32, count: u64, init: Initiator) -> (f64, f64) {
    let (s, m) = (scale as i32, count as f64);
    let Initiator { a: pa, b: pb, c: pc } = init;
    let pd = init.d();
    let mut distinct = 0.0;
    for a in 0..=s {
        for b in 0..=s - a {
            for c in 0..=s - a - b {
                let dd = s - a - b - c;
                if b + c == 0 {
                    continue;
                }
                let ln_mult = ln_factorial(s) - ln_factorial(a) - ln_factorial(b) - ln_factorial(c) - ln_factorial(dd);
                // Either direction draws the undirected pair: its reverse swaps b and c.
                let p = pa.powi(a) * pd.powi(dd) * (pb.powi(b) * pc.powi(c) + pb.powi(c) * pc.powi(b));
                distinct += ln_mult.exp() * -(m * (-p).ln_1p()).exp_m1();
            }
        }
    }
    let mut connected = 0.0;
    for k in 0..=s {
        let ln_mult = ln_choose(s, k);
        // Expected edges with the vertex as source (row marginals) plus as destination (columns).
        let lambda = m * ((pa + pb).powi(s - k) * (pc + pd).powi(k) + (pa + pc).powi(s - k) * (pb + pd).powi(k));
        connected += ln_mult.exp() * -(-lambda).exp_m1();
    }
    (distinct / 2.0, connected)
}
