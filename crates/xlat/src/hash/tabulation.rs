//! Tabulation hashing with probing (Mosaic pages, section 4.4): the key's eight bytes each
//! index their own table of 256 random 32-bit words and the words are XORed. Function `k`
//! reads entry `(byte + k) mod 256` of each table instead of entry `byte`, so any number of
//! functions share one set of tables, which is what keeps the circuit small.

use rand::{RngCore, SeedableRng};
use rand_xoshiro::SplitMix64;

/// Bytes in a key, and so tables.
pub const KEY_BYTES: usize = 8;
/// Entries per table.
pub const TABLE_ENTRIES: usize = 256;

/// The tables of one tabulation hash family.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tabulation {
    tables: [[u32; TABLE_ENTRIES]; KEY_BYTES],
}

impl Tabulation {
    /// Tables generated from `seed`: SplitMix64 seeded with `seed` produces one 64-bit word
    /// per entry, table 0 entries 0..255 first, then table 1, and so on; each entry is the
    /// word's upper 32 bits.
    pub fn new(seed: u64) -> Tabulation {
        let mut rng = SplitMix64::seed_from_u64(seed);
        let mut tables = [[0u32; TABLE_ENTRIES]; KEY_BYTES];
        for entry in tables.iter_mut().flatten() {
            *entry = (rng.next_u64() >> 32) as u32;
        }
        Tabulation { tables }
    }

    /// Function `k` (0..=255) of `key`.
    #[inline]
    pub fn hash(&self, k: usize, key: u64) -> u32 {
        let mut h = 0;
        for (i, table) in self.tables.iter().enumerate() {
            let byte = (key >> (8 * i)) as usize & 0xff;
            h ^= table[(byte + k) & (TABLE_ENTRIES - 1)];
        }
        h
    }

    /// Entry `entry` of table `table`.
    pub fn entry(&self, table: usize, entry: usize) -> u32 {
        self.tables[table][entry]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_is_splitmix64() {
        // The first SplitMix64 output for seed 0 is the published 0xe220a8397b1dcdaf, so
        // table 0 entry 0 of seed 0 is its upper half.
        assert_eq!(Tabulation::new(0).entry(0, 0), 0xe220_a839);
    }

    #[test]
    fn hash_is_the_xor_of_probed_entries() {
        let t = Tabulation::new(7);
        let key = 0x0102_0304_05fe_ff00u64;
        for k in [0, 1, 6, 255] {
            let mut expected = 0;
            for (i, byte) in key.to_le_bytes().iter().enumerate() {
                expected ^= t.entry(i, (usize::from(*byte) + k) % 256);
            }
            assert_eq!(t.hash(k, key), expected, "k = {k}");
        }
    }

    #[test]
    fn probing_shifts_one_byte_like_another_key() {
        // h_k(key) equals h_0 of the key whose every byte is k larger (mod 256): probing is a
        // rotation of the table index, not a new function.
        let t = Tabulation::new(3);
        let key = 0x1122_3344_5566_7788u64;
        let shifted = u64::from_le_bytes(key.to_le_bytes().map(|b| b.wrapping_add(5)));
        assert_eq!(t.hash(5, key), t.hash(0, shifted));
    }
}
