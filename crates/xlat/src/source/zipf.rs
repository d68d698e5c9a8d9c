//! Zipf-distributed pages: rank `r` (1-based) is drawn with probability proportional to
//! `r^-s`, and a seeded permutation scatters the ranks over the footprint's pages.
//!
//! Draws use Walker's alias method (Vose's construction) with the permutation folded into the
//! table: slot `i` holds a threshold and two *pages* (the page of rank `i + 1` and the page of
//! its alias), so one draw is one multiplication, one 12-byte read and a conditional move. A
//! library alias table keeps odds, aliases and the permutation in three arrays and branches on
//! the coin, and on a footprint larger than the host's caches every mispredicted branch waits
//! for a cache miss: that made Zipf sources 20x slower than uniform ones.
//!
//! Pages come from a generator of their own, and a copy of it running [`LOOKAHEAD`] draws ahead
//! tells the host CPU which slot to load next, so that the table's cache misses overlap. The
//! copy only hints: the pages drawn do not depend on it.

use crate::host::prefetch;
use rand::{Rng, RngCore};
use rand_xoshiro::Xoshiro256PlusPlus;

/// How many draws ahead the table's slots are prefetched: enough to cover a miss to the host's
/// memory at a few nanoseconds per draw.
const LOOKAHEAD: usize = 16;

/// One slot of the table: a draw that lands here keeps `page` when its coin is below
/// `keep_below`, and takes `alias` otherwise (a slot kept with certainty has `alias == page`).
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    keep_below: u32,
    page: u32,
    alias: u32,
}

/// A stream of pages drawn from a Zipf distribution over the pages of a footprint.
pub(crate) struct ZipfPages {
    slots: Vec<Slot>,
    rng: Xoshiro256PlusPlus,
    /// `rng` advanced by [`LOOKAHEAD`] draws.
    ahead: Xoshiro256PlusPlus,
}

impl ZipfPages {
    /// The distribution over `perm.len()` pages (at most 2^32) with exponent `exponent`, its
    /// ranks scattered by `perm` (a permutation of the pages, `perm[r - 1]` the page of rank
    /// `r`), drawn with the generator `rng`.
    pub(crate) fn new(exponent: f64, perm: &[u32], rng: Xoshiro256PlusPlus) -> ZipfPages {
        let weights: Vec<f64> = (1..=perm.len()).map(|rank| (rank as f64).powf(-exponent)).collect();
        let (keep, alias) = alias_table(&weights);
        let slots = (0..perm.len())
            .map(|i| Slot { keep_below: threshold(keep[i]), page: perm[i], alias: perm[alias[i]] })
            .collect();
        let mut ahead = rng.clone();
        for _ in 0..LOOKAHEAD {
            ahead.next_u64();
        }
        ZipfPages { slots, rng, ahead }
    }

    /// Draws the next page.
    #[inline(always)]
    pub(crate) fn next_page(&mut self) -> u64 {
        let ahead = self.ahead.random();
        prefetch(&self.slots[self.slot_of(ahead).0]);
        let draw = self.rng.random();
        let (slot, coin) = self.slot_of(draw);
        let slot = self.slots[slot];
        u64::from(if coin < slot.keep_below { slot.page } else { slot.alias })
    }

    /// The slot and the coin of a 64-bit draw. The high half of draw × slots is the slot,
    /// uniform without rejection (bias below slots / 2^64); the low half is the position inside
    /// that slot's share of the draws, uniform and independent of the slot, so its top 32 bits
    /// are the coin.
    #[inline(always)]
    fn slot_of(&self, draw: u64) -> (usize, u32) {
        let product = u128::from(draw) * self.slots.len() as u128;
        ((product >> 64) as usize, (product as u64 >> 32) as u32)
    }
}

/// A keep probability as a 32-bit threshold on a uniform 32-bit coin.
fn threshold(keep: f64) -> u32 {
    (keep * 4_294_967_296.0).round().min(f64::from(u32::MAX)) as u32
}

/// Vose's alias table for `weights`: for each slot, the probability of keeping it and the slot
/// it otherwise aliases. Drawing a slot uniformly, then keeping it or taking its alias, gives
/// slot `i` with probability `weights[i] / sum`.
fn alias_table(weights: &[f64]) -> (Vec<f64>, Vec<usize>) {
    let n = weights.len();
    let sum: f64 = weights.iter().sum();
    let mut scaled: Vec<f64> = weights.iter().map(|w| w * n as f64 / sum).collect();
    let (mut small, mut large): (Vec<usize>, Vec<usize>) = (0..n).partition(|&i| scaled[i] < 1.0);
    let mut keep = vec![1.0; n];
    let mut alias: Vec<usize> = (0..n).collect();
    while let (Some(&s), Some(&l)) = (small.last(), large.last()) {
        small.pop();
        keep[s] = scaled[s];
        alias[s] = l;
        scaled[l] -= 1.0 - scaled[s];
        if scaled[l] < 1.0 {
            large.pop();
            small.push(l);
        }
    }
    // Whatever is left holds (up to rounding) exactly one slot's share: it keeps itself.
    (keep, alias)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::SeedableRng;

    /// The probability of each slot that the table implies, summed the brute-force way.
    fn implied(keep: &[f64], alias: &[usize]) -> Vec<f64> {
        let n = keep.len() as f64;
        let mut p = vec![0.0; keep.len()];
        for i in 0..keep.len() {
            p[i] += keep[i] / n;
            p[alias[i]] += (1.0 - keep[i]) / n;
        }
        p
    }

    proptest! {
        #[test]
        fn the_table_implies_the_weights(weights in prop::collection::vec(0.001f64..100.0, 1..200)) {
            let (keep, alias) = alias_table(&weights);
            let sum: f64 = weights.iter().sum();
            for (i, p) in implied(&keep, &alias).iter().enumerate() {
                prop_assert!((p - weights[i] / sum).abs() < 1e-9, "slot {i}: {p} vs {}", weights[i] / sum);
            }
        }
    }

    #[test]
    fn draws_follow_zipf_through_the_permutation() {
        let pages = 50;
        let perm: Vec<u32> = (0..pages).map(|i| (i * 7 + 3) % pages).collect();
        let mut zipf = ZipfPages::new(0.99, &perm, Xoshiro256PlusPlus::seed_from_u64(1));
        let draws = 1_000_000;
        let mut counts = vec![0u32; pages as usize];
        for _ in 0..draws {
            counts[zipf.next_page() as usize] += 1;
        }
        let sum: f64 = (1..=pages).map(|r| (r as f64).powf(-0.99)).sum();
        for rank in 1..=pages {
            let expected = draws as f64 * (rank as f64).powf(-0.99) / sum;
            let got = f64::from(counts[perm[rank as usize - 1] as usize]);
            // Five standard deviations of a binomial count.
            let sd = (expected * (1.0 - expected / draws as f64)).sqrt();
            assert!((got - expected).abs() < 5.0 * sd, "rank {rank}: {got} draws, expected {expected:.0}");
        }
    }

    #[test]
    fn a_certain_slot_never_takes_its_alias() {
        assert_eq!(threshold(1.0), u32::MAX);
        let zipf = ZipfPages::new(0.0, &[5, 9, 2], Xoshiro256PlusPlus::seed_from_u64(1));
        assert!(zipf.slots.iter().all(|s| s.alias == s.page));
    }
}
