//! Sysbench's memory test (`sysbench memory`, sysbench 1.0's `sb_memory.c`), one thread.
//!
//! `memory_init` allocates one buffer of `--memory-block-size` bytes, page-aligned
//! (`sb_memalign`, glibc's `posix_memalign`), and clears it with `memset` (the `init` phase,
//! emitted when `init` is true). Then every event sweeps the whole buffer once, 8-byte word by
//! word (phase `run`), for `--memory-total-size / --memory-block-size` events:
//!
//! * `seq` `write`: `*buf = end - buf` for each word in order; `seq` `read`: loads each word
//!   in order; `none`: the loop alone, no reference;
//! * `rnd`: as many words as the buffer holds, each at `floor(u × words)` for a uniform
//!   double `u` (sysbench's `sb_rand_uniform_double`); `write` stores the loop's byte
//!   counter there, `read` loads it.
//!
//! Sysbench's default block is 1 KiB, which a TLB never notices; the block size is this
//! workload's footprint knob (EMT's runs used a 64 GiB buffer: the `paper` preset).
//!
//! Self-check: after a sequential write every word holds `end - buf`; after random writes
//! every word holds the last value written to it (the draws are replayed backwards, not
//! emitted) or the `memset`'s 0; reads sum the words they load, which must equal the sum of
//! the words at those places (the zeroed buffer: 0).
//!
//! Instructions: 1 per 32-byte `memset` store, 4 per word of a sequential sweep, 20 per word
//! of a random one (the draw, its scaling and the access).

use super::address_space::{AddressSpace, Allocator};
use super::emit::{pieces, Emitter, SimVec};
use super::{randomly_touched, Expected, ExpectedPhase, Region, Scale, Workload};
use crate::memref::AccessKind;
use serde::{Deserialize, Serialize};

/// Instructions per 32-byte store of the `memset`.
const MEMSET_INSTRUCTIONS: u64 = 1;
/// Instructions per word of a sequential sweep (access, two increments, compare and branch).
const SEQ_INSTRUCTIONS: u64 = 4;
/// Instructions per word of a random sweep (a xoshiro draw, its conversion and scaling, the
/// access, the loop).
const RND_INSTRUCTIONS: u64 = 20;
/// Words swept between checks that the consumer is still there.
const STOP_CHECK: usize = 1 << 16;
/// The page size `sb_memalign` aligns the buffer to.
const PAGE: u64 = 4096;
/// The largest buffer accepted (1 TiB).
const MAX_BLOCK: u64 = 1 << 40;

/// `--memory-oper`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Oper {
    /// Load every word visited.
    Read,
    /// Store to every word visited (sysbench's default).
    Write,
    /// Visit without touching memory.
    None,
}

/// `--memory-access-mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AccessMode {
    /// Word after word from the start (sysbench's default).
    Seq,
    /// Words at uniformly random places, as many as the buffer holds.
    Rnd,
}

/// Parameters of the sysbench memory test.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SysbenchMemory {
    /// `--memory-block-size`: bytes of the buffer each event sweeps; a power of two, at least
    /// 8 (as sysbench requires). The footprint.
    pub block_size: u64,
    /// `--memory-total-size`: bytes to transfer; the run has `total_size / block_size` events
    /// (at least one).
    pub total_size: u64,
    /// `--memory-oper`: `read`, `write` (default) or `none`.
    pub oper: Oper,
    /// `--memory-access-mode`: `seq` (default) or `rnd`.
    pub access_mode: AccessMode,
    /// Emit the `memset` that clears the buffer (it is always performed).
    pub init: bool,
}

/// The `i`-th random word of event `event`: a counter-based draw (SplitMix64 of the seed,
/// the event and the position), so that the self-check can replay the draws in any order.
fn draw(seed: u64, event: u64, i: u64, words: u64) -> usize {
    let mut z = seed ^ event.wrapping_mul(0xd1b5_4a32_d192_ed03) ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    let u = (z >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
    ((u * words as f64) as u64).min(words - 1) as usize
}

impl SysbenchMemory {
    fn words(&self) -> u64 {
        self.block_size / 8
    }

    fn events(&self) -> u64 {
        self.total_size / self.block_size
    }

    /// Allocates the buffer from `alloc` (sysbench's page-aligned one per thread).
    fn buffer_addr(&self, alloc: &mut impl Allocator) -> u64 {
        alloc.memalign(PAGE, self.block_size)
    }

    /// References of the `run` phase.
    fn run_refs(&self) -> u64 {
        if self.oper == Oper::None {
            0
        } else {
            self.events() * self.words()
        }
    }

    /// The `memset`, 32-byte stores.
    fn clear(&self, buf: &mut SimVec<u64>, e: &mut Emitter) {
        buf.raw_mut().fill(0);
        let stores = e.block(buf.addr(0), self.block_size, AccessKind::Store);
        e.instructions(MEMSET_INSTRUCTIONS * stores);
    }

    /// One sequential event; returns the sum of the words read.
    fn sweep_seq(&self, buf: &mut SimVec<u64>, e: &mut Emitter) -> u64 {
        let words = buf.len();
        let mut sum = 0u64;
        for start in (0..words).step_by(STOP_CHECK) {
            let end = (start + STOP_CHECK).min(words);
            for w in start..end {
                match self.oper {
                    Oper::Write => buf.st(w, (words - w) as u64, e),
                    Oper::Read => sum = sum.wrapping_add(buf.ld(w, e)),
                    Oper::None => {}
                }
            }
            e.instructions(SEQ_INSTRUCTIONS * (end - start) as u64);
            if e.stopped() {
                break;
            }
        }
        sum
    }

    /// One random event; returns the sum of the words read.
    fn sweep_rnd(&self, seed: u64, event: u64, buf: &mut SimVec<u64>, e: &mut Emitter) -> u64 {
        let words = self.words();
        let mut sum = 0u64;
        for start in (0..words).step_by(STOP_CHECK) {
            let end = (start + STOP_CHECK as u64).min(words);
            for i in start..end {
                let w = draw(seed, event, i, words);
                match self.oper {
                    // sysbench stores its loop counter, which counts bytes.
                    Oper::Write => buf.st(w, 8 * i, e),
                    Oper::Read => sum = sum.wrapping_add(buf.ld(w, e)),
                    Oper::None => {}
                }
            }
            e.instructions(RND_INSTRUCTIONS * (end - start));
            if e.stopped() {
                break;
            }
        }
        sum
    }

    /// The sum of the words the run's reads load, computed from the buffer without emitting.
    fn sum_of_reads(&self, seed: u64, buf: &[u64]) -> u64 {
        let sum = |a: u64, b: u64| a.wrapping_add(b);
        match self.access_mode {
            AccessMode::Seq => buf.iter().fold(0, |s, &v| sum(s, v)).wrapping_mul(self.events()),
            AccessMode::Rnd => (0..self.events())
                .flat_map(|ev| (0..self.words()).map(move |i| (ev, i)))
                .fold(0, |s, (ev, i)| sum(s, buf[draw(seed, ev, i, self.words())])),
        }
    }

    /// Checks that every word holds what the writes left there; returns the words written.
    fn check_writes(&self, seed: u64, buf: &[u64]) -> Result<u64, String> {
        let words = buf.len();
        if self.access_mode == AccessMode::Seq {
            let wrong = (0..words).filter(|&w| buf[w] != (words - w) as u64).count();
            return if wrong == 0 { Ok(words as u64) } else { Err(format!("{wrong} of {words} words do not hold end - buf")) };
        }
        // Backwards through the draws, the first write met at a word is the last one made.
        let mut seen = vec![false; words];
        let mut written = 0u64;
        for ev in (0..self.events()).rev() {
            for i in (0..self.words()).rev() {
                let w = draw(seed, ev, i, self.words());
                if !std::mem::replace(&mut seen[w], true) {
                    written += 1;
                    if buf[w] != 8 * i {
                        return Err(format!("word {w} holds {}, not {} from its last write", buf[w], 8 * i));
                    }
                }
            }
        }
        match (0..words).find(|&w| !seen[w] && buf[w] != 0) {
            Some(w) => Err(format!("word {w}, never written, holds {}", buf[w])),
            None => Ok(written),
        }
    }

    /// The self-check of a finished run whose reads summed to `read_sum`.
    fn check(&self, seed: u64, buf: &[u64], read_sum: u64) -> Result<Vec<String>, String> {
        let refs = self.run_refs();
        match self.oper {
            Oper::Write => {
                let distinct = self.check_writes(seed, buf)?;
                Ok(vec![format!("{refs} stores: the {distinct} words written hold their last value, the others 0")])
            }
            Oper::Read => {
                let want = self.sum_of_reads(seed, buf);
                if read_sum != want {
                    return Err(format!("the {refs} loads summed to {read_sum}, the words at those places to {want}"));
                }
                Ok(vec![format!("{refs} loads summed to {read_sum}, the sum of the words they read")])
            }
            Oper::None => Ok(vec![format!("{} events of {} iterations, no memory touched", self.events(), self.words())]),
        }
    }
}

impl Workload for SysbenchMemory {
    const NAME: &'static str = "sysbench-memory";
    const ABOUT: &'static str = "sysbench memory: sweeps of one buffer, word by word, sequential or random, read or write";

    fn preset(scale: Scale) -> SysbenchMemory {
        let block_size = match scale {
            Scale::Tiny => 1 << 20,
            Scale::Small => 128 << 20,
            Scale::Paper => 64 << 30,
        };
        SysbenchMemory { block_size, total_size: 2 * block_size, oper: Oper::Write, access_mode: AccessMode::Seq, init: true }
    }

    fn emits_set_up(&self) -> bool {
        self.init
    }

    fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.block_size < 8 || !self.block_size.is_power_of_two() || self.block_size > MAX_BLOCK {
            return Err(("block_size", format!("{} bytes: need a power of two from 8 to 2^40", self.block_size)));
        }
        if self.total_size < self.block_size {
            return Err(("total_size", format!("{} bytes is less than one block of {}: no event would run", self.total_size, self.block_size)));
        }
        if self.events() > 1 << 32 {
            return Err(("total_size", format!("{} events: at most 2^32", self.events())));
        }
        Ok(())
    }

    fn expected(&self) -> Expected {
        let touched = if self.init || (self.oper != Oper::None && self.access_mode == AccessMode::Seq) {
            self.block_size
        } else if self.oper == Oper::None {
            0
        } else {
            randomly_touched(self.block_size, self.run_refs() as f64)
        };
        Expected {
            regions: vec![Region { name: "buffer".into(), addr: self.buffer_addr(&mut AddressSpace::new()), bytes: self.block_size, touched }],
            phases: vec![
                ExpectedPhase { name: "init", emitted: self.init, refs: pieces(self.block_size), exact: true },
                ExpectedPhase { name: "run", emitted: true, refs: self.run_refs(), exact: true },
            ],
            tolerance: 0.02,
        }
    }

    fn run(&self, seed: u64, e: &mut Emitter) -> Result<Vec<String>, String> {
        let mut buf = SimVec::filled(self.buffer_addr(e), self.words() as usize, 0u64, "the sysbench buffer")?;
        e.phase("init", self.init);
        self.clear(&mut buf, e);
        e.phase("run", true);
        let mut read_sum = 0u64;
        for event in 0..self.events() {
            let sum = match self.access_mode {
                AccessMode::Seq => self.sweep_seq(&mut buf, e),
                AccessMode::Rnd => self.sweep_rnd(seed, event, &mut buf, e),
            };
            read_sum = read_sum.wrapping_add(sum);
            if e.stopped() {
                return Ok(Vec::new());
            }
        }
        self.check(seed, buf.raw(), read_sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::emit::{Collect, Discard};
    use crate::MemRef;


    fn params(oper: Oper, access_mode: AccessMode) -> SysbenchMemory {
        SysbenchMemory { block_size: 4096, total_size: 3 * 4096, oper, access_mode, init: true }
    }

    fn run(p: &SysbenchMemory, seed: u64) -> (Result<Vec<String>, String>, Vec<MemRef>) {
        let mut sink = Collect(Vec::new());
        let mut e = Emitter::new(0, &mut sink);
        let result = p.run(seed, &mut e);
        e.finish();
        (result, sink.0)
    }

    #[test]
    fn every_mode_passes_its_check_with_the_expected_references() {
        for oper in [Oper::Read, Oper::Write, Oper::None] {
            for mode in [AccessMode::Seq, AccessMode::Rnd] {
                let p = params(oper, mode);
                let (result, refs) = run(&p, 5);
                assert!(result.is_ok(), "{oper:?} {mode:?}: {result:?}");
                assert_eq!(refs.len() as u64, p.expected().emitted_refs(), "{oper:?} {mode:?}");
            }
        }
    }

    #[test]
    fn a_sequential_write_stores_each_word_in_order_on_the_aligned_buffer() {
        let p = SysbenchMemory { init: false, ..params(Oper::Write, AccessMode::Seq) };
        let (_, refs) = run(&p, 1);
        let base = p.buffer_addr(&mut AddressSpace::new());
        assert_eq!(base % PAGE, 0);
        assert_eq!(refs.len(), 3 * 512);
        for (i, r) in refs.iter().enumerate() {
            assert_eq!(*r, MemRef::store(base + 8 * (i as u64 % 512), 8));
        }
    }

    #[test]
    fn random_draws_cover_the_buffer_uniformly() {
        let words = 1024;
        let mut counts = vec![0u32; words as usize];
        for i in 0..100 * words {
            counts[draw(3, 0, i, words)] += 1;
        }
        // Each word expects 100 draws; 7 standard deviations either side.
        assert!(counts.iter().all(|&c| (30..=170).contains(&c)), "{:?}", counts.iter().min());
    }

    #[test]
    fn a_corrupted_buffer_fails_the_check() {
        let p = params(Oper::Write, AccessMode::Rnd);
        let mut buf = vec![0u64; 512];
        for ev in 0..p.events() {
            for i in 0..512 {
                buf[draw(9, ev, i, 512)] = 8 * i;
            }
        }
        assert!(p.check_writes(9, &buf).is_ok());
        let w = draw(9, 2, 100, 512);
        buf[w] ^= 8;
        assert!(p.check_writes(9, &buf).is_err());
        assert!(params(Oper::Read, AccessMode::Seq).check(9, &vec![0; 512], 1).is_err());
    }

    #[test]
    fn the_same_seed_gives_the_same_stream() {
        let p = params(Oper::Read, AccessMode::Rnd);
        assert_eq!(run(&p, 4).1, run(&p, 4).1);
        assert_ne!(run(&p, 4).1, run(&p, 5).1);
    }

    #[test]
    fn presets_have_the_documented_footprints() {
        let footprint = |s| SysbenchMemory::preset(s).expected().footprint_bytes();
        assert_eq!(footprint(Scale::Tiny), 1 << 20);
        assert_eq!(footprint(Scale::Small), 128 << 20);
        assert_eq!(footprint(Scale::Paper), 64 << 30);
        let tiny = SysbenchMemory::preset(Scale::Tiny);
        let mut discard = Discard;
        let mut e = Emitter::new(0, &mut discard);
        assert!(tiny.run(1, &mut e).is_ok());
    }

    #[test]
    fn bad_parameters_name_the_field() {
        let bad = |p: SysbenchMemory| p.validate().unwrap_err().0;
        let p = SysbenchMemory::preset(Scale::Tiny);
        assert_eq!(bad(SysbenchMemory { block_size: 1000, ..p.clone() }), "block_size");
        assert_eq!(bad(SysbenchMemory { block_size: 4, ..p.clone() }), "block_size");
        assert_eq!(bad(SysbenchMemory { total_size: p.block_size - 1, ..p.clone() }), "total_size");
    }
}
