//! The layout of an iceberg-hashed physical memory and its compressed frame numbers (CPFNs).
//!
//! Memory is an array of buckets of `front + back` contiguous frames: slots `0..front` are the
//! bucket's front yard, slots `front..front+back` its backyard. A page may live in the front
//! yard of bucket `h_0(key)` or in the backyard of one of `choices` buckets `h_1(key)..h_d(key)`,
//! so `front + choices * back` slots in all (104 for 56/8/6), and a CPFN of a few bits names
//! which one. `docs/hashing.md` gives the bit layout.

use crate::hash::{HashFamily, HashSpec};
use serde::{Deserialize, Serialize};

/// Where the backyard choices of a page may fall.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum BackyardRanges {
    /// Choice `i` (1-based) falls in the `i`-th of `choices` equal, disjoint ranges of buckets,
    /// as in the authors' Linux prototype: two choices of one page never coincide.
    Disjoint,
    /// Every choice falls anywhere among all buckets (the textbook power-of-d-choices).
    All,
}

/// Which of several equally loaded backyard choices a page takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TieBreak {
    /// The lowest-numbered choice. With disjoint ranges this is Vöcking's "always go left",
    /// which balances bucket loads better than choices tied at random; it is what reaches the
    /// paper's 98% first-conflict utilization (the prototype's rule is not published).
    First,
    /// A choice drawn per page: a hash of the key picks where the search for the least
    /// loaded starts.
    Random,
}

/// Validated parameters of an iceberg memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct IcebergSpec {
    /// Front-yard slots per bucket (`f`).
    pub front: u32,
    /// Backyard slots per bucket (`b`).
    pub back: u32,
    /// Backyard choices per page (`d`).
    pub choices: u32,
    /// Where backyard choices fall.
    pub backyard: BackyardRanges,
    /// Which of equally loaded backyard choices is taken.
    pub tie_break: TieBreak,
    /// Width of a CPFN in bits.
    pub cpfn_bits: u32,
    /// The hash functions.
    pub hash: HashSpec,
}

impl Default for IcebergSpec {
    /// The paper's parameters: 56 front-yard and 8 backyard slots per 64-frame bucket, 6
    /// choices, 7-bit CPFNs, tabulation hashing, disjoint backyard ranges, ties to the first.
    fn default() -> IcebergSpec {
        IcebergSpec {
            front: 56,
            back: 8,
            choices: 6,
            backyard: BackyardRanges::Disjoint,
            tie_break: TieBreak::First,
            cpfn_bits: 7,
            hash: HashSpec::default(),
        }
    }
}

/// Bits needed to number `n` things (0 for one thing).
fn bits_for(n: u32) -> u32 {
    u32::BITS - n.saturating_sub(1).leading_zeros()
}

impl IcebergSpec {
    /// Frames per bucket.
    pub fn bucket_frames(&self) -> u64 {
        u64::from(self.front + self.back)
    }

    /// Slots a page may use: `front + choices * back`.
    pub fn associativity(&self) -> u32 {
        self.front + self.choices * self.back
    }

    /// The narrowest CPFN that encodes every slot and keeps the all-ones code for "unmapped".
    pub fn min_cpfn_bits(&self) -> u32 {
        let back_bits = bits_for(self.choices) + bits_for(self.back);
        let width = 1 + bits_for(self.front).max(back_bits);
        // All-ones is a backyard code; it is free unless the backyard field is exactly full.
        let all_ones_taken = back_bits == width - 1
            && self.choices.is_power_of_two()
            && self.back.is_power_of_two();
        width + u32::from(all_ones_taken)
    }

    /// Why these parameters cannot describe a memory of `frames` frames, if they cannot.
    pub fn check(&self, frames: u64) -> Result<(), String> {
        if self.front == 0 || self.back == 0 || self.choices == 0 {
            return Err("front, back and choices must each be at least 1".into());
        }
        if self.front + self.back > 64 {
            return Err(format!("a bucket of {} front + {} back slots exceeds 64 frames", self.front, self.back));
        }
        if self.cpfn_bits > 8 {
            return Err(format!("cpfn_bits = {} exceeds the 8 bits a ToC entry holds", self.cpfn_bits));
        }
        let need = self.min_cpfn_bits();
        if need > self.cpfn_bits {
            return Err(format!(
                "{} front-yard slots and {} choices of {} backyard slots need a {need}-bit CPFN, but cpfn_bits = {}",
                self.front, self.choices, self.back, self.cpfn_bits
            ));
        }
        if self.choices as usize + 1 > self.hash.max_functions() {
            return Err(format!("`{}` hashing provides {} functions; {} choices need {}", self.hash.kind(), self.hash.max_functions(), self.choices, self.choices + 1));
        }
        let buckets = frames / self.bucket_frames();
        if buckets == 0 {
            return Err(format!("memory of {frames} frames is smaller than one bucket of {} frames", self.bucket_frames()));
        }
        if frames % self.bucket_frames() != 0 {
            return Err(format!("memory of {frames} frames is not a whole number of {}-frame buckets", self.bucket_frames()));
        }
        if self.backyard == BackyardRanges::Disjoint && buckets < u64::from(self.choices) {
            return Err(format!("{buckets} buckets cannot be split into {} disjoint backyard ranges", self.choices));
        }
        Ok(())
    }
}

/// A slot a page may occupy, relative to its own candidates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Slot {
    /// Front-yard slot `0..front` of bucket `h_0`.
    Front(u32),
    /// Backyard slot `0..back` of the bucket of choice `1..=choices`.
    Back {
        /// Which choice (1-based: the bucket is `h_choice`).
        choice: u32,
        /// Slot within the backyard.
        slot: u32,
    },
}

/// An iceberg memory's layout: buckets, candidate buckets of each key, CPFN encoding.
#[derive(Clone, Debug)]
pub struct Layout {
    spec: IcebergSpec,
    buckets: u64,
    hash: HashFamily,
}

impl Layout {
    /// The layout of `frames` frames; `spec.check(frames)` must have passed.
    pub fn new(spec: IcebergSpec, frames: u64) -> Layout {
        debug_assert_eq!(spec.check(frames), Ok(()));
        Layout { spec, buckets: frames / spec.bucket_frames(), hash: spec.hash.build() }
    }

    /// The parameters.
    pub fn spec(&self) -> &IcebergSpec {
        &self.spec
    }

    /// Number of buckets.
    pub fn buckets(&self) -> u64 {
        self.buckets
    }

    /// The bucket holding the front yard (choice 0) or backyard choice `choice` of `key`.
    #[inline]
    pub fn bucket(&self, key: u64, choice: u32) -> u64 {
        let (start, len) = self.range(choice);
        start + self.hash.index(choice as usize, key, len)
    }

    /// The buckets choice `choice` may fall in, as (first, count).
    #[inline]
    fn range(&self, choice: u32) -> (u64, u64) {
        if choice == 0 || self.spec.backyard == BackyardRanges::All {
            return (0, self.buckets);
        }
        let d = u64::from(self.spec.choices);
        let start = u64::from(choice - 1) * self.buckets / d;
        let end = u64::from(choice) * self.buckets / d;
        (start, end - start)
    }

    /// The frame of `slot` for `key`.
    #[inline]
    pub fn frame(&self, key: u64, slot: Slot) -> u64 {
        let f = self.spec.bucket_frames();
        match slot {
            Slot::Front(s) => self.bucket(key, 0) * f + u64::from(s),
            Slot::Back { choice, slot } => self.bucket(key, choice) * f + u64::from(self.spec.front + slot),
        }
    }

    /// The CPFN of `slot`.
    #[inline]
    pub fn encode(&self, slot: Slot) -> u8 {
        let w = self.spec.cpfn_bits;
        let code = match slot {
            Slot::Front(s) => s,
            Slot::Back { choice, slot } => 1 << (w - 1) | (choice - 1) << (w - 1 - bits_for(self.spec.choices)) | slot,
        };
        code as u8
    }

    /// The code meaning "no frame": all ones.
    pub fn unmapped(&self) -> u8 {
        ((1u32 << self.spec.cpfn_bits) - 1) as u8
    }

    /// The slot `cpfn` names, or `None` if it names none (the unmapped code, or a slot
    /// number beyond the geometry).
    #[inline]
    pub fn decode(&self, cpfn: u8) -> Option<Slot> {
        let w = self.spec.cpfn_bits;
        let code = u32::from(cpfn);
        if code >> (w - 1) == 0 {
            return (code < self.spec.front).then_some(Slot::Front(code));
        }
        let slot_bits = w - 1 - bits_for(self.spec.choices);
        let rest = code & ((1 << (w - 1)) - 1);
        let (choice, slot) = (rest >> slot_bits, rest & ((1 << slot_bits) - 1));
        (choice < self.spec.choices && slot < self.spec.back).then_some(Slot::Back { choice: choice + 1, slot })
    }

    /// The frame `cpfn` names for `key` (the TLB-hit decode), or `None` for an invalid code.
    #[inline]
    pub fn decode_frame(&self, key: u64, cpfn: u8) -> Option<u64> {
        self.decode(cpfn).map(|slot| self.frame(key, slot))
    }

    /// Every slot a page may use, front yard first.
    pub fn slots(&self) -> impl Iterator<Item = Slot> + '_ {
        let front = (0..self.spec.front).map(Slot::Front);
        let back = (1..=self.spec.choices).flat_map(move |choice| (0..self.spec.back).map(move |slot| Slot::Back { choice, slot }));
        front.chain(back)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn paper_geometry_is_104_way_with_7_bit_cpfns() {
        let spec = IcebergSpec::default();
        assert_eq!(spec.associativity(), 104);
        assert_eq!(spec.min_cpfn_bits(), 7);
        let layout = Layout::new(spec, 1 << 20);
        assert_eq!(layout.encode(Slot::Front(55)), 0b011_0111);
        assert_eq!(layout.encode(Slot::Back { choice: 1, slot: 0 }), 0b100_0000);
        assert_eq!(layout.encode(Slot::Back { choice: 6, slot: 7 }), 0b110_1111);
        assert_eq!(layout.decode(layout.unmapped()), None);
        assert_eq!(layout.decode(0b011_1000), None, "front slot 56 does not exist");
    }

    #[test]
    fn cpfn_round_trips_every_slot_of_several_geometries() {
        for (front, back, choices) in [(56, 8, 6), (60, 4, 3), (48, 16, 4), (32, 32, 1), (63, 1, 2), (8, 8, 8)] {
            let mut spec = IcebergSpec { front, back, choices, ..IcebergSpec::default() };
            spec.cpfn_bits = spec.min_cpfn_bits();
            let layout = Layout::new(spec, spec.bucket_frames() * 64);
            let mut codes = std::collections::HashSet::new();
            for slot in layout.slots() {
                let code = layout.encode(slot);
                assert!(u32::from(code) < 1 << spec.cpfn_bits);
                assert_ne!(code, layout.unmapped(), "{spec:?} {slot:?}");
                assert_eq!(layout.decode(code), Some(slot), "{spec:?}");
                assert!(codes.insert(code));
            }
            assert_eq!(codes.len() as u32, spec.associativity());
            // Every code that is not a slot's decodes to nothing.
            let valid = (0..1u32 << spec.cpfn_bits).filter(|&c| layout.decode(c as u8).is_some()).count();
            assert_eq!(valid as u32, spec.associativity());
        }
    }

    #[test]
    fn all_ones_is_kept_free_by_widening() {
        // 4 choices of 8 slots fill the 5-bit backyard field of a 6-bit code exactly.
        let spec = IcebergSpec { front: 32, back: 8, choices: 4, ..IcebergSpec::default() };
        assert_eq!(spec.min_cpfn_bits(), 7);
    }

    #[test]
    fn bad_geometries_are_rejected() {
        let d = IcebergSpec::default();
        assert!(IcebergSpec { cpfn_bits: 6, ..d }.check(1 << 20).unwrap_err().contains("7-bit CPFN"));
        assert!(IcebergSpec { front: 60, ..d }.check(1 << 20).unwrap_err().contains("exceeds 64"));
        assert!(d.check(63).unwrap_err().contains("smaller than one bucket"));
        assert!(d.check(64 * 5).unwrap_err().contains("disjoint"));
        assert!(d.check(64 * 10 + 1).unwrap_err().contains("whole number"));
        assert!(IcebergSpec { hash: HashSpec::Xxhash64 {}, choices: 7, cpfn_bits: 8, ..d }.check(1 << 20).unwrap_err().contains("`xxhash64` hashing provides 7 functions"));
    }

    proptest! {
        #[test]
        fn frames_stay_in_their_candidate_buckets(key: u64, buckets in 6u64..5000, all in any::<bool>()) {
            let spec = IcebergSpec { backyard: if all { BackyardRanges::All } else { BackyardRanges::Disjoint }, ..IcebergSpec::default() };
            let layout = Layout::new(spec, buckets * 64);
            for slot in layout.slots() {
                let frame = layout.frame(key, slot);
                prop_assert!(frame < buckets * 64);
                prop_assert_eq!(layout.decode_frame(key, layout.encode(slot)), Some(frame));
                match slot {
                    Slot::Front(s) => prop_assert_eq!(frame % 64, u64::from(s)),
                    Slot::Back { choice, slot } => {
                        prop_assert_eq!(frame % 64, 56 + u64::from(slot));
                        if !all {
                            let b = frame / 64;
                            prop_assert!(b >= u64::from(choice - 1) * buckets / 6 && b < u64::from(choice) * buckets / 6);
                        }
                    }
                }
            }
        }
    }
}
