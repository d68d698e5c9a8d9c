//! GAP's `Bitmap`: one bit per element in 64-bit words, at a simulated address. Reading a bit
//! loads its word; setting one is a read-modify-write of the word.

use crate::workload::emit::{Emitter, SimVec};

/// A bitmap in the simulated address space.
pub struct Bitmap {
    words: SimVec<u64>,
}

impl Bitmap {
    /// Bytes of a bitmap of `bits` bits (whole 64-bit words, as GAP allocates).
    pub fn bytes(bits: u64) -> u64 {
        bits.div_ceil(64) * 8
    }

    /// A bitmap of `bits` bits at simulated address `addr`, all clear (not emitted: GAP's
    /// constructor does not clear it, `reset` does).
    pub fn new(addr: u64, bits: usize, what: &str) -> Result<Bitmap, String> {
        Ok(Bitmap { words: SimVec::filled(addr, bits.div_ceil(64), 0u64, what)? })
    }

    /// Clears every bit: a store per word.
    pub fn reset(&mut self, e: &mut Emitter) {
        for w in 0..self.words.len() {
            self.words.st(w, 0, e);
        }
    }

    /// Reads bit `i`.
    #[inline]
    pub fn get(&self, i: usize, e: &mut Emitter) -> bool {
        self.words.ld(i / 64, e) >> (i % 64) & 1 == 1
    }

    /// Sets bit `i` (GAP's `set_bit` and `set_bit_atomic`: a load and a store of its word).
    #[inline]
    pub fn set(&mut self, i: usize, e: &mut Emitter) {
        let w = self.words.ld(i / 64, e);
        self.words.st(i / 64, w | 1 << (i % 64), e);
    }

    /// Bit `i`, without emitting (for checks).
    pub fn raw_get(&self, i: usize) -> bool {
        self.words.raw()[i / 64] >> (i % 64) & 1 == 1
    }
}
