//! Built-in synthetic reference streams for tests, demos and benchmarks: sequential, strided,
//! uniform random and Zipf-distributed accesses over a footprint, all seeded.
//!
//! Each stream produces `refs` references of `size` bytes inside `[base, base + footprint)`,
//! every one a load or, with probability `store_fraction`, a store. Synthetic streams carry no
//! instruction count.

use super::RefSource;
use crate::memref::{AccessKind, Batch, MemRef};
use crate::types::{Asid, BASE_PAGE_SHIFT};
use crate::{Error, Result};
use super::zipf::ZipfPages;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

/// Largest footprint, in pages, of a Zipf stream (its alias table takes 12 bytes a page).
const MAX_ZIPF_PAGES: u64 = 1 << 26;

/// The address pattern of a synthetic stream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "pattern", rename_all = "kebab-case")]
pub enum Pattern {
    /// Consecutive `size`-byte accesses, wrapping at the end of the footprint.
    Sequential,
    /// Accesses `stride` bytes apart, wrapping at the end of the footprint.
    Strided {
        /// Distance between consecutive accesses, in bytes.
        stride: u64,
    },
    /// Each access at a uniformly random `size`-aligned offset.
    Uniform,
    /// Each access to a page drawn from a Zipf distribution over the footprint's pages (rank 1
    /// most popular), at a uniformly random aligned offset within the page. Ranks are scattered
    /// over the footprint by a seeded permutation so that hot pages are not all neighbours.
    Zipf {
        /// The Zipf exponent `s` (0.99 is the YCSB default).
        exponent: f64,
    },
}

/// Parameters of a synthetic stream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SyntheticSpec {
    /// The address pattern.
    #[serde(flatten)]
    pub pattern: Pattern,
    /// Bytes covered by the stream.
    pub footprint: u64,
    /// Number of references.
    pub refs: u64,
    /// First address of the footprint.
    pub base: u64,
    /// Bytes per access (also the alignment of random accesses).
    pub size: u16,
    /// Probability that an access is a store.
    pub store_fraction: f64,
    /// Address space of every reference.
    pub asid: Asid,
    /// Seed of the generator.
    pub seed: u64,
}

impl SyntheticSpec {
    /// Checks the parameters, naming the offending field under `path`.
    pub fn validate(&self, path: &str) -> Result<()> {
        let err = |field: &str, msg: String| Err(Error::config(format!("{path}.{field}"), msg));
        if self.size == 0 || !self.size.is_power_of_two() {
            return err("size", format!("access size {} is not a power of two ≥ 1", self.size));
        }
        if self.footprint < u64::from(self.size) {
            return err("footprint", format!("footprint {} is smaller than one access", self.footprint));
        }
        if self.footprint % u64::from(self.size) != 0 {
            return err("footprint", format!("footprint {} is not a multiple of the access size {}", self.footprint, self.size));
        }
        // The footprint's last byte, base + footprint - 1, must exist (it may be 2^64 - 1).
        if self.base.checked_add(self.footprint - 1).is_none() {
            return err("base", "base + footprint runs past the top of the 64-bit address space".into());
        }
        if !(0.0..=1.0).contains(&self.store_fraction) {
            return err("store_fraction", format!("{} is not a probability", self.store_fraction));
        }
        match self.pattern {
            Pattern::Strided { stride: 0 } => err("stride", "stride must be at least 1 byte".into()),
            Pattern::Zipf { exponent } if !(exponent > 0.0 && exponent.is_finite()) => {
                err("exponent", format!("Zipf exponent {exponent} must be positive"))
            }
            Pattern::Zipf { .. } if self.footprint.div_ceil(1 << BASE_PAGE_SHIFT) > MAX_ZIPF_PAGES => {
                err("footprint", "Zipf footprints are limited to 256 GiB (2^26 pages)".into())
            }
            _ => Ok(()),
        }
    }
}

/// A running synthetic stream.
pub struct Synthetic {
    spec: SyntheticSpec,
    produced: u64,
    cursor: u64,
    rng: Xoshiro256PlusPlus,
    /// Store threshold on a 32-bit uniform draw.
    store_below: u64,
    /// Zipf: the distribution of pages.
    zipf: Option<ZipfPages>,
}

impl Synthetic {
    /// A stream of `spec`, which must have passed [`SyntheticSpec::validate`].
    pub fn new(spec: SyntheticSpec) -> Result<Synthetic> {
        spec.validate("workload")?;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(spec.seed);
        let zipf = match spec.pattern {
            Pattern::Zipf { exponent } => {
                let pages = spec.footprint.div_ceil(1 << BASE_PAGE_SHIFT);
                let mut perm: Vec<u32> = (0..pages as u32).collect();
                perm.shuffle(&mut rng);
                // Pages come from a generator of their own, 2^128 draws away from the one that
                // picks offsets and access kinds.
                let mut pages_rng = rng.clone();
                pages_rng.jump();
                Some(ZipfPages::new(exponent, &perm, pages_rng))
            }
            _ => None,
        };
        let store_below = (spec.store_fraction * (1u64 << 32) as f64) as u64;
        Ok(Synthetic { spec, produced: 0, cursor: 0, rng, store_below, zipf })
    }

    #[inline]
    fn next_offset(&mut self) -> (u64, u64) {
        let slots = self.spec.footprint / u64::from(self.spec.size);
        match &self.spec.pattern {
            Pattern::Sequential | Pattern::Strided { .. } => {
                let step = match self.spec.pattern {
                    Pattern::Strided { stride } => stride,
                    _ => u64::from(self.spec.size),
                };
                let offset = self.cursor;
                // Start over from the beginning when the next access would not fit in the
                // footprint, as a loop over an array does.
                let last_start = self.spec.footprint - u64::from(self.spec.size);
                let next = self.cursor.saturating_add(step);
                self.cursor = if next > last_start { 0 } else { next };
                let draw = if self.store_below == 0 { u64::MAX } else { self.rng.random() };
                (offset, draw)
            }
            Pattern::Uniform => {
                let draw: u64 = self.rng.random();
                // Lemire's multiply-shift maps the low 32 bits to a slot without division;
                // the high 32 bits decide load or store.
                let slot = if slots <= 1 << 32 {
                    ((draw & 0xffff_ffff) * slots) >> 32
                } else {
                    self.rng.random_range(0..slots)
                };
                (slot * u64::from(self.spec.size), draw)
            }
            Pattern::Zipf { .. } => unreachable!("Zipf streams are drawn by fill_zipf"),
        }
    }
}

impl Synthetic {
    /// The uniform pattern's loop (the benchmarks' source), the same stream as
    /// [`Synthetic::next_offset`] gives: one 64-bit draw per reference, whose low half picks
    /// the slot (Lemire's multiply-shift; `slots` ≤ 2^32) and high half load or store. Written
    /// as one `extend` over an exact-length iterator, so the batch is grown once and each
    /// reference is stored without a capacity check or a dispatch on the pattern.
    fn fill_uniform(&mut self, batch: &mut Batch, n: usize, slots: u64) {
        let (base, size, asid, store_below) = (self.spec.base, self.spec.size, self.spec.asid, self.store_below);
        let rng = &mut self.rng;
        batch.refs.extend((0..n).map(|_| {
            let draw: u64 = rng.random();
            let slot = ((draw & 0xffff_ffff) * slots) >> 32;
            let kind = kind(draw, store_below);
            MemRef { vaddr: base + slot * u64::from(size), asid, size, kind }
        }));
    }

    /// The Zipf pattern's loop, written as [`Synthetic::fill_uniform`] is: per reference, a
    /// page from the Zipf distribution, then one 64-bit draw whose low half picks the aligned
    /// slot inside the page and high half load or store.
    fn fill_zipf(&mut self, batch: &mut Batch, n: usize) {
        let (base, size, asid, store_below, footprint) = (self.spec.base, self.spec.size, self.spec.asid, self.store_below, self.spec.footprint);
        let (rng, zipf) = (&mut self.rng, self.zipf.as_mut().expect("zipf state"));
        batch.refs.extend((0..n).map(|_| {
            let page = zipf.next_page();
            let draw: u64 = rng.random();
            let kind = kind(draw, store_below);
            MemRef { vaddr: base + zipf_offset(page, draw, u64::from(size), footprint), asid, size, kind }
        }));
    }
}

/// The access kind a draw gives: a store when its high half is below `store_below` (the
/// store fraction as a 32-bit threshold), else a load.
#[inline(always)]
fn kind(draw: u64, store_below: u64) -> AccessKind {
    if (draw >> 32) < store_below {
        AccessKind::Store
    } else {
        AccessKind::Load
    }
}

/// The offset of a Zipf reference of `size` bytes to `page`: an aligned slot of the page
/// picked by the low half of `draw`, kept inside the footprint.
#[inline(always)]
fn zipf_offset(page: u64, draw: u64, size: u64, footprint: u64) -> u64 {
    let per_page = (1u64 << BASE_PAGE_SHIFT) / size.min(1 << BASE_PAGE_SHIFT);
    let within = ((draw & 0xffff_ffff) * per_page) >> 32;
    ((page << BASE_PAGE_SHIFT) + within * size).min(footprint - size)
}

impl RefSource for Synthetic {
    fn fill(&mut self, batch: &mut Batch, max: usize) -> Result<usize> {
        let n = (self.spec.refs - self.produced).min(max as u64) as usize;
        let slots = self.spec.footprint / u64::from(self.spec.size);
        if matches!(self.spec.pattern, Pattern::Uniform) && slots <= 1 << 32 {
            self.fill_uniform(batch, n, slots);
            self.produced += n as u64;
            return Ok(n);
        }
        if self.zipf.is_some() {
            self.fill_zipf(batch, n);
            self.produced += n as u64;
            return Ok(n);
        }
        batch.refs.reserve(n);
        for _ in 0..n {
            let (offset, draw) = self.next_offset();
            let kind = kind(draw, self.store_below);
            batch.refs.push(MemRef { vaddr: self.spec.base + offset, asid: self.spec.asid, size: self.spec.size, kind });
        }
        self.produced += n as u64;
        Ok(n)
    }

    fn identity(&self) -> serde_json::Value {
        serde_json::json!({ "kind": "synthetic", "spec": self.spec })
    }

    fn len_hint(&self) -> Option<u64> {
        Some(self.spec.refs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::collect;

    fn spec(pattern: Pattern) -> SyntheticSpec {
        SyntheticSpec {
            pattern,
            footprint: 1 << 20,
            refs: 20_000,
            base: 0x1000_0000,
            size: 8,
            store_fraction: 0.25,
            asid: 3,
            seed: 42,
        }
    }

    fn run(pattern: Pattern) -> Vec<MemRef> {
        collect(&mut Synthetic::new(spec(pattern)).unwrap()).unwrap().0
    }

    #[test]
    fn every_pattern_stays_inside_the_footprint() {
        for p in [Pattern::Sequential, Pattern::Strided { stride: 4160 }, Pattern::Uniform, Pattern::Zipf { exponent: 0.99 }] {
            let refs = run(p.clone());
            assert_eq!(refs.len(), 20_000);
            for r in &refs {
                assert!(r.vaddr >= 0x1000_0000 && r.vaddr + 8 <= 0x1000_0000 + (1 << 20), "{p:?} {r:?}");
                assert_eq!(r.asid, 3);
            }
            let stores = refs.iter().filter(|r| r.kind == AccessKind::Store).count();
            assert!((4000..6000).contains(&stores), "{p:?}: {stores} stores");
        }
    }

    /// A footprint may end at the top of the address space: its last byte is 2^64 - 1.
    #[test]
    fn a_footprint_may_end_at_the_top_of_the_address_space() {
        let top = |pattern| SyntheticSpec { base: 0xffff_ffff_ffff_f000, footprint: 4096, refs: 1000, ..spec(pattern) };
        for p in [Pattern::Sequential, Pattern::Strided { stride: 24 }, Pattern::Uniform, Pattern::Zipf { exponent: 0.99 }] {
            top(p.clone()).validate("w").unwrap();
            let refs = collect(&mut Synthetic::new(top(p.clone())).unwrap()).unwrap().0;
            assert!(refs.iter().all(|r| r.vaddr >= 0xffff_ffff_ffff_f000 && r.vaddr <= u64::MAX - 7), "{p:?}");
        }
        let past = SyntheticSpec { base: 0xffff_ffff_ffff_f001, ..top(Pattern::Sequential) };
        assert!(past.validate("w").unwrap_err().to_string().contains("w.base"));
    }

    #[test]
    fn sequential_and_strided_streams_start_over_at_the_footprint_end() {
        // 1 KiB of 8-byte accesses: 128 per pass, every pass at the same addresses.
        let small = |pattern| SyntheticSpec { footprint: 1024, ..spec(pattern) };
        let refs = collect(&mut Synthetic::new(small(Pattern::Sequential)).unwrap()).unwrap().0;
        for (i, r) in refs.iter().enumerate() {
            assert_eq!(r.vaddr, 0x1000_0000 + (i as u64 % 128) * 8, "reference {i}");
        }
        // A stride of 96 bytes fits 11 accesses (the last at 960) before starting over.
        let refs = collect(&mut Synthetic::new(small(Pattern::Strided { stride: 96 })).unwrap()).unwrap().0;
        for (i, r) in refs.iter().enumerate() {
            assert_eq!(r.vaddr, 0x1000_0000 + (i as u64 % 11) * 96, "reference {i}");
        }
    }

    #[test]
    fn same_seed_same_stream() {
        assert_eq!(run(Pattern::Uniform), run(Pattern::Uniform));
        let mut other = spec(Pattern::Uniform);
        other.seed = 43;
        assert_ne!(collect(&mut Synthetic::new(other).unwrap()).unwrap().0, run(Pattern::Uniform));
    }

    #[test]
    fn batch_sizes_do_not_change_the_stream() {
        for p in [Pattern::Sequential, Pattern::Uniform, Pattern::Zipf { exponent: 0.99 }] {
            let mut source = Synthetic::new(spec(p.clone())).unwrap();
            let mut batch = Batch::with_capacity(0);
            let mut sizes = [1, 7, 1000, 3].into_iter().cycle();
            while source.fill(&mut batch, sizes.next().unwrap()).unwrap() > 0 {}
            assert_eq!(batch.refs, run(p.clone()), "{p:?}");
        }
    }

    #[test]
    fn zipf_is_skewed() {
        let refs = run(Pattern::Zipf { exponent: 1.2 });
        let mut counts = std::collections::HashMap::new();
        for r in &refs {
            *counts.entry(r.vaddr >> 12).or_insert(0u32) += 1;
        }
        let max = *counts.values().max().unwrap();
        assert!(max > 2000, "hottest page has only {max} of 20000 references");
    }

    #[test]
    fn bad_parameters_are_named() {
        let mut s = spec(Pattern::Uniform);
        s.size = 6;
        let e = s.validate("workload[2]").unwrap_err().to_string();
        assert!(e.contains("workload[2].size"), "{e}");
    }
}
