//! What the key-value workloads (`memcached`, `redis`) share: their keys and values, the
//! choice of the key each request names, and the expected number of distinct keys requested.
//!
//! Key `id` is `key:` followed by `id` in decimal, zero-padded to the key length (as
//! memtier's and YCSB's keys are a prefix and a number). A value is 8-byte words: the first
//! holds the value's version (how many times its key was set), every other one a mix of the
//! key, the version and the word's place, so that a value read can be checked against the
//! version the client last wrote.

use crate::source::zipf::ZipfPages;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

/// The key prefix.
const PREFIX: &[u8] = b"key:";

/// How requests pick their key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyDistribution {
    /// Every key equally likely.
    Uniform,
    /// Key of popularity rank `r` with probability proportional to `r^-skew`, the ranks
    /// scattered over the keys by a seeded permutation (YCSB's scrambled Zipfian).
    Zipf,
}

/// Writes key `id` of `len` bytes into `out` (cleared first).
pub fn key_name(id: u64, len: usize, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(PREFIX);
    let digits = len - PREFIX.len();
    let mut rest = id;
    out.resize(len, b'0');
    for d in (0..digits).rev() {
        out[PREFIX.len() + d] = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
}

/// Checks that `records` keys fit in keys of `len` bytes; the error says why not.
pub fn check_key_len(records: u64, len: u32) -> Result<(), String> {
    let digits = len.saturating_sub(PREFIX.len() as u32);
    if !(8..=250).contains(&len) {
        return Err(format!("{len} bytes is outside 8..=250 (memcached's longest key is 250)"));
    }
    if digits < 20 && 10u64.pow(digits) < records {
        return Err(format!("{len}-byte keys hold {digits} digits after `key:`: too few for {records} records"));
    }
    Ok(())
}

/// The hash of a key's bytes (xxHash64).
pub fn hash(key: &[u8]) -> u64 {
    xxhash_rust::xxh64::xxh64(key, 0)
}

/// Word `j` of the value of key `id` at `version`.
pub fn value_word(id: u64, version: u64, j: usize) -> u64 {
    if j == 0 {
        return version;
    }
    let mut z = id.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ version.wrapping_mul(0xc2b2_ae3d_27d4_eb4f) ^ j as u64;
    z = (z ^ (z >> 31)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z ^ (z >> 29)
}

/// Fills `words` with the value of key `id` at `version`.
pub fn fill_value(id: u64, version: u64, words: &mut [u64]) {
    for (j, w) in words.iter_mut().enumerate() {
        *w = value_word(id, version, j);
    }
}

/// The version a value of key `id` holds, if every word is the one that version has.
pub fn value_version(id: u64, words: &[u64]) -> Option<u64> {
    let version = *words.first()?;
    words.iter().enumerate().all(|(j, &w)| w == value_word(id, version, j)).then_some(version)
}

/// Draws the key of each request.
pub(crate) enum KeyPicker {
    /// Uniform over `0..n`.
    Uniform(Xoshiro256PlusPlus, u64),
    /// Zipf over scattered ranks.
    Zipf(ZipfPages),
}

impl KeyPicker {
    /// A picker over `n` keys (at most 2^32), seeded by `seed`.
    pub fn new(n: u64, distribution: KeyDistribution, skew: f64, seed: u64) -> Result<KeyPicker, String> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x6b65_7973);
        match distribution {
            KeyDistribution::Uniform => Ok(KeyPicker::Uniform(rng, n)),
            KeyDistribution::Zipf => {
                let mut perm = Vec::new();
                perm.try_reserve_exact(n as usize).map_err(|_| crate::host::cannot_allocate(4 * n, "the Zipf key ranks"))?;
                perm.extend(0..n as u32);
                perm.shuffle(&mut rng);
                let mut draws = rng.clone();
                draws.jump();
                Ok(KeyPicker::Zipf(ZipfPages::new(skew, &perm, draws)))
            }
        }
    }

    /// The next key.
    pub fn next(&mut self) -> u64 {
        match self {
            KeyPicker::Uniform(rng, n) => rng.random_range(0..*n),
            KeyPicker::Zipf(z) => z.next_page(),
        }
    }
}

/// Runs of ranks `1..=n` over which `r^-skew` changes by under 0.1%: (ranks, weight of the
/// run's middle rank).
fn rank_runs(n: u64, skew: f64) -> Vec<(f64, f64)> {
    let mut runs = Vec::new();
    let mut r = 1u64;
    while r <= n {
        let end = ((r as f64 * 1.001) as u64).max(r + 1).min(n + 1);
        let mid = (r + end - 1) as f64 / 2.0;
        runs.push(((end - r) as f64, mid.powf(-skew)));
        r = end;
    }
    runs
}

/// The expected number of keys drawn at least `times` (1 or 2) times among `draws`
/// requests over `n` keys.
pub fn expected_drawn(n: u64, draws: u64, times: u32, distribution: KeyDistribution, skew: f64) -> f64 {
    let d = draws as f64;
    // A key of probability p is drawn at least once with 1 - (1 - p)^d, at least twice with
    // that less d p (1 - p)^(d - 1).
    let at_least = |p: f64| {
        let none = (d * (-p).ln_1p()).exp();
        let once = if d >= 1.0 { d * p * ((d - 1.0) * (-p).ln_1p()).exp() } else { 0.0 };
        if times >= 2 { 1.0 - none - once } else { 1.0 - none }
    };
    match distribution {
        KeyDistribution::Uniform => n as f64 * at_least(1.0 / n as f64),
        KeyDistribution::Zipf => {
            let runs = rank_runs(n, skew);
            let total: f64 = runs.iter().map(|(count, w)| count * w).sum();
            runs.iter().map(|(count, w)| count * at_least(w / total)).sum()
        }
    }
}

/// Checks the request mix: the get (or GET) fraction and the Zipf exponent.
pub fn check_mix(get_fraction: f64, distribution: KeyDistribution, skew: f64) -> Result<(), (&'static str, String)> {
    if !(0.0..=1.0).contains(&get_fraction) {
        return Err(("get_fraction", format!("{get_fraction} is outside 0..=1")));
    }
    if distribution == KeyDistribution::Zipf && !(skew > 0.0 && skew <= 5.0) {
        return Err(("skew", format!("{skew} is outside (0, 5]")));
    }
    Ok(())
}

/// The expected fraction of pages holding `per_page` records, `distinct` of `n` of them
/// requested, that hold a requested record (records scattered over pages independently of
/// their popularity).
pub fn page_fraction(distinct: f64, n: u64, per_page: f64) -> f64 {
    let f = (distinct / n as f64).clamp(0.0, 1.0);
    1.0 - (1.0 - f).powf(per_page.max(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_the_prefix_and_a_padded_number() {
        let mut k = Vec::new();
        key_name(42, 12, &mut k);
        assert_eq!(k, b"key:00000042");
        assert!(check_key_len(100_000_000, 12).is_ok());
        assert!(check_key_len(100_000_001, 12).is_err());
        assert!(check_key_len(10, 7).is_err());
    }

    #[test]
    fn values_carry_their_version() {
        let mut v = vec![0; 16];
        fill_value(7, 3, &mut v);
        assert_eq!(value_version(7, &v), Some(3));
        assert_eq!(value_version(8, &v), None, "another key's value");
        v[9] ^= 1;
        assert_eq!(value_version(7, &v), None);
    }

    #[test]
    fn expected_distinct_keys_match_the_draws() {
        for (dist, skew) in [(KeyDistribution::Uniform, 0.0), (KeyDistribution::Zipf, 0.99), (KeyDistribution::Zipf, 0.5)] {
            let (n, draws) = (20_000, 30_000);
            let mut picker = KeyPicker::new(n, dist, skew, 1).unwrap();
            let mut counts = std::collections::HashMap::new();
            for _ in 0..draws {
                let k = picker.next();
                assert!(k < n);
                *counts.entry(k).or_insert(0u32) += 1;
            }
            let seen: Vec<_> = counts.keys().collect();
            let want = expected_drawn(n, draws, 1, dist, skew);
            assert!((seen.len() as f64 - want).abs() < 0.02 * want, "{dist:?} {skew}: {} distinct, expected {want}", seen.len());
            let twice = counts.values().filter(|&&c| c >= 2).count() as f64;
            let want = expected_drawn(n, draws, 2, dist, skew);
            assert!((twice - want).abs() < 0.03 * want, "{dist:?} {skew}: {twice} drawn twice, expected {want}");
        }
    }
}
