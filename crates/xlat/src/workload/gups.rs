//! GUPS: the HPCC RandomAccess benchmark, sequential version.
//!
//! A table of `2^table_log2` 64-bit words is set to `T[i] = i` (the `init` phase, emitted only
//! when `init` is true), then updated `updates` times (HPCC: 4 × the table size) by
//! `ran = (ran << 1) ^ (ran < 0 ? 7 : 0); T[ran & (N-1)] ^= ran`, starting from `ran = 1`
//! (a load and a store per update). The self-check is HPCC's: applying the same updates again
//! (XOR undoes them; not emitted) must give back `T[i] = i` everywhere; HPCC tolerates 1% of
//! errors from racing parallel updates, this sequential run none.
//!
//! Instructions: 4 per initialized word and 12 per update, the loop bodies `gcc -O2` compiles
//! from HPCC's scalar loops (x86-64, without vectorization).

use super::address_space::{AddressSpace, Allocator};
use super::emit::{Emitter, SimVec};
use super::{Expected, ExpectedPhase, Region, Scale, Workload};
use serde::{Deserialize, Serialize};

/// HPCC's polynomial for the random stream.
const POLY: u64 = 7;
/// Instructions per initialized word (store, increment, compare, branch).
const INIT_INSTRUCTIONS: u64 = 4;
/// Instructions per update (the compiled loop body).
const UPDATE_INSTRUCTIONS: u64 = 12;
/// Updates computed before their references are emitted.
const UPDATE_BLOCK: usize = 256;

/// Parameters of GUPS.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gups {
    /// log2 of the number of 8-byte table entries.
    pub table_log2: u32,
    /// Number of updates; 0 means HPCC's 4 × entries.
    pub updates: u64,
    /// Emit the sequential initialization phase (it is always performed).
    pub init: bool,
}

/// The next value of HPCC's random stream.
#[inline]
fn next(ran: u64) -> u64 {
    (ran << 1) ^ if (ran as i64) < 0 { POLY } else { 0 }
}

impl Gups {
    fn entries(&self) -> u64 {
        1 << self.table_log2
    }

    /// The updates performed: as given, or HPCC's 4 × entries.
    fn updates(&self) -> u64 {
        if self.updates == 0 {
            4 * self.entries()
        } else {
            self.updates
        }
    }

    /// Allocates the table from `alloc` (as `main` does, first thing).
    fn table_addr(&self, alloc: &mut impl Allocator) -> u64 {
        alloc.malloc(self.entries() * 8)
    }

    /// Applies the updates to `table` without emitting (the verification pass).
    fn replay(&self, table: &mut [u64]) {
        let mask = self.entries() - 1;
        let mut ran = 1u64;
        for _ in 0..self.updates() {
            ran = next(ran);
            table[(ran & mask) as usize] ^= ran;
        }
    }
}

impl Workload for Gups {
    const NAME: &'static str = "gups";
    const ABOUT: &'static str = "HPCC RandomAccess: random read-modify-write updates of a power-of-two table";

    fn preset(scale: Scale) -> Gups {
        let table_log2 = match scale {
            Scale::Tiny => 14,
            Scale::Small => 24,
            Scale::Paper => 30,
        };
        Gups { table_log2, updates: 0, init: true }
    }

    fn emits_set_up(&self) -> bool {
        self.init
    }

    fn validate(&self) -> Result<(), (&'static str, String)> {
        if !(4..=36).contains(&self.table_log2) {
            return Err(("table_log2", format!("{} is outside 4..=36 (128 B to 512 GiB tables)", self.table_log2)));
        }
        Ok(())
    }

    fn expected(&self) -> Expected {
        let bytes = self.entries() * 8;
        let pages = bytes.div_ceil(4096) as f64;
        // Without the initialization, the updates touch each page with probability
        // 1 - (1 - 1/pages)^updates.
        let touched = if self.init {
            bytes
        } else {
            let fraction = 1.0 - (self.updates() as f64 * (-1.0 / pages).ln_1p()).exp();
            ((bytes as f64 * fraction) as u64).max(8)
        };
        Expected {
            regions: vec![Region { name: "table".into(), addr: self.table_addr(&mut AddressSpace::new()), bytes, touched }],
            phases: vec![
                ExpectedPhase { name: "init", emitted: self.init, refs: self.entries(), exact: true },
                ExpectedPhase { name: "update", emitted: true, refs: 2 * self.updates(), exact: true },
            ],
            tolerance: 0.02,
        }
    }

    fn run(&self, _seed: u64, e: &mut Emitter) -> Result<Vec<String>, String> {
        let n = self.entries() as usize;
        let mut table = SimVec::filled(self.table_addr(e), n, 0u64, "the GUPS table")?;
        e.phase("init", self.init);
        for i in 0..n {
            table.st(i, i as u64, e);
            e.instructions(INIT_INSTRUCTIONS);
        }
        e.phase("update", true);
        let mask = self.entries() - 1;
        let mut ran = 1u64;
        // Updates go in blocks: first the block's table updates alone (a short loop whose
        // independent cache misses overlap), then its references in the same order. The
        // stream is the one an update-by-update loop emits, produced about twice as fast.
        let mut block = [0u64; UPDATE_BLOCK];
        let mut left = self.updates();
        while left > 0 {
            let n = left.min(UPDATE_BLOCK as u64) as usize;
            let data = table.raw_mut();
            for slot in &mut block[..n] {
                ran = next(ran);
                *slot = ran;
                data[(ran & mask) as usize] ^= ran;
            }
            for &r in &block[..n] {
                e.load_store(table.addr((r & mask) as usize), 8);
            }
            e.instructions(UPDATE_INSTRUCTIONS * n as u64);
            if e.stopped() {
                return Ok(Vec::new());
            }
            left -= n as u64;
        }
        self.replay(table.raw_mut());
        let errors = table.raw().iter().enumerate().filter(|&(i, &v)| v != i as u64).count();
        if errors > 0 {
            return Err(format!("{errors} of {n} table entries are wrong after undoing the updates"));
        }
        Ok(vec![format!("{} updates undone: all {n} table entries back to T[i] = i (0 errors)", self.updates())])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_random_stream_is_hpcc_s() {
        // From 1, the stream doubles until the top bit is set, then folds in POLY.
        let mut ran = 1u64;
        for _ in 0..63 {
            ran = next(ran);
        }
        assert_eq!(ran, 1 << 63);
        assert_eq!(next(ran), 7);
    }

    #[test]
    fn the_blocked_loop_emits_each_update_in_order() {
        let g = Gups { table_log2: 10, updates: 1000, init: false };
        let mut sink = super::super::emit::Collect(Vec::new());
        let mut e = Emitter::new(0, &mut sink);
        g.run(1, &mut e).unwrap();
        e.finish();
        let base = g.table_addr(&mut AddressSpace::new());
        let mut ran = 1u64;
        for pair in sink.0.chunks_exact(2) {
            ran = next(ran);
            let addr = base + (ran & 1023) * 8;
            assert_eq!(pair, [crate::MemRef::load(addr, 8), crate::MemRef::store(addr, 8)]);
        }
        assert_eq!(sink.0.len(), 2000);
    }
}
