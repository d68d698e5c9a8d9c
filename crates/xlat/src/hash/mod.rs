//! The hash functions that place pages in a hashed physical memory (Mosaic's iceberg table)
//! and decode compressed frame numbers on TLB hits. `docs/hashing.md` specifies them bit for
//! bit; the SystemVerilog circuit in `hw/` implements the same functions.
//!
//! A page is identified by one 64-bit key packed from its ASID and VPN ([`page_key`]). A
//! [`HashFamily`] provides numbered functions `h_0, h_1, ...` of that key (`h_0` chooses the
//! front-yard bucket, `h_i` the `i`-th backyard choice) and maps each onto a range of buckets.

pub mod tabulation;
pub mod vectors;

pub use tabulation::Tabulation;

use crate::types::{Asid, Vpn};
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh64::xxh64;

/// VPN bits kept in place in the key; the key's top 16 bits hold the ASID.
const KEY_VPN_BITS: u32 = 48;

/// The seeds of the authors' Linux prototype, which hashed with xxHash64: the front yard's,
/// then one per backyard choice.
pub const XXHASH_SEEDS: [u64; 7] = [2846245, 8384032, 4392830, 6382738, 3994928, 9820291, 920194];

/// The default seed of the tabulation tables (the prototype's front-yard seed, reused).
pub const DEFAULT_TABLE_SEED: u64 = 2846245;

/// Packs (`asid`, `vpn`) into the 64-bit hash key: VPN bits 0..47 in key bits 0..47, the ASID
/// in bits 48..63. VPN bits 48..51 exist only for the upper half of a 64-bit address space;
/// they are XORed into key bits 0..3 so that such pages still hash apart.
#[inline]
pub fn page_key(asid: Asid, vpn: Vpn) -> u64 {
    let mask = (1u64 << KEY_VPN_BITS) - 1;
    ((vpn.0 & mask) ^ (vpn.0 >> KEY_VPN_BITS)) | u64::from(asid) << KEY_VPN_BITS
}

/// Which hash functions a hashed memory uses, as written in configurations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case", tag = "kind", deny_unknown_fields)]
pub enum HashSpec {
    /// Tabulation hashing with probing, tables generated from `seed` (the hardware design).
    Tabulation {
        /// Seed of the table generator.
        #[serde(default = "default_table_seed")]
        seed: u64,
    },
    /// xxHash64 with the seeds of the authors' Linux prototype ([`XXHASH_SEEDS`]). A struct
    /// variant without fields, so that a configuration giving it any (a `seed`) is an error
    /// rather than silently ignored: the prototype's seeds are fixed.
    Xxhash64 {},
}

fn default_table_seed() -> u64 {
    DEFAULT_TABLE_SEED
}

impl Default for HashSpec {
    fn default() -> HashSpec {
        HashSpec::Tabulation { seed: DEFAULT_TABLE_SEED }
    }
}

impl HashSpec {
    /// The family's `kind` as configurations write it.
    pub fn kind(self) -> &'static str {
        match self {
            HashSpec::Tabulation { .. } => "tabulation",
            HashSpec::Xxhash64 {} => "xxhash64",
        }
    }

    /// How many functions `h_0..` this family provides (tabulation: one per probe offset).
    pub fn max_functions(self) -> usize {
        match self {
            HashSpec::Tabulation { .. } => 256,
            HashSpec::Xxhash64 {} => XXHASH_SEEDS.len(),
        }
    }

    /// The functions described by this specification.
    pub fn build(self) -> HashFamily {
        match self {
            HashSpec::Tabulation { seed } => HashFamily::Tabulation(Box::new(Tabulation::new(seed))),
            HashSpec::Xxhash64 {} => HashFamily::Xxhash64,
        }
    }
}

/// A family of numbered hash functions of a page key.
#[derive(Clone, Debug)]
pub enum HashFamily {
    /// Tabulation hashing with probing: 32-bit outputs.
    Tabulation(Box<Tabulation>),
    /// xxHash64 with the prototype's seeds: 64-bit outputs.
    Xxhash64,
}

impl HashFamily {
    /// Function `k` of `key` mapped onto `0..len`, by multiplying and keeping the high bits
    /// (`h * len >> w` for a `w`-bit hash): unbiased enough, and a multiplier in hardware
    /// where a modulo would be a divider. The product is computed exactly, in 128 bits: for
    /// tabulation it outgrows 64 bits once `len` reaches `2^32`.
    #[inline]
    pub fn index(&self, k: usize, key: u64, len: u64) -> u64 {
        match self {
            HashFamily::Tabulation(t) => ((u128::from(t.hash(k, key)) * u128::from(len)) >> 32) as u64,
            HashFamily::Xxhash64 => ((u128::from(xxh64(&key.to_le_bytes(), XXHASH_SEEDS[k])) * u128::from(len)) >> 64) as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_packs_asid_above_vpn() {
        assert_eq!(page_key(0, Vpn(0x1234)), 0x1234);
        assert_eq!(page_key(0xabcd, Vpn(0x1)), 0xabcd_0000_0000_0001);
        // The high VPN bits of an upper-half page fold into the low bits.
        assert_eq!(page_key(0, Vpn(0xf_ffff_ffff_ffff)), 0xffff_ffff_fff0);
    }

    #[test]
    fn index_stays_in_range_and_spreads() {
        for spec in [HashSpec::default(), HashSpec::Xxhash64 {}] {
            let family = spec.build();
            let mut seen = [0u32; 10];
            for key in 0..10_000u64 {
                let i = family.index(1, key, 10);
                assert!(i < 10);
                seen[i as usize] += 1;
            }
            // 1000 expected per bucket; a broken mapping piles keys into a few.
            assert!(seen.iter().all(|&n| (850..1150).contains(&n)), "{spec:?}: {seen:?}");
        }
    }

    #[test]
    fn index_is_exact_beyond_32_bit_lengths() {
        // A 32-bit hash times more than 2^32 buckets overflows 64 bits; the index must still
        // be floor(h * len / 2^32), below len.
        let family = HashSpec::default().build();
        let HashFamily::Tabulation(t) = &family else { unreachable!() };
        let len = (1u64 << 40) + 12345;
        for key in [0, 1, u64::MAX] {
            let h = u128::from(t.hash(3, key));
            let i = family.index(3, key, len);
            assert_eq!(u128::from(i), (h * u128::from(len)) >> 32);
            assert!(i < len);
        }
    }

    #[test]
    fn xxhash_matches_the_reference_implementation() {
        // xxHash64 of the empty input with seed 0 is a published constant; a key hashes its
        // eight little-endian bytes.
        assert_eq!(xxh64(b"", 0), 0xef46_db37_51d8_e999);
        let family = HashSpec::Xxhash64 {}.build();
        let h = xxh64(&0x42u64.to_le_bytes(), XXHASH_SEEDS[2]);
        assert_eq!(family.index(2, 0x42, 1 << 20), h >> 44);
    }
}
