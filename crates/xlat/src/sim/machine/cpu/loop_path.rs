//! Which of the CPU machine's compiled simulation loops runs a batch, decided in one place
//! ([`LoopPath`]), and which part of the machine a second core replays ([`SecondCore`]); the
//! batches each took are counted per machine and reported in `results.json` ([`LoopUse`]).
//!
//! The loops are specialized (const generics) on the machine's shape so that a batch pays
//! for what the machine has and nothing else; every one of them gives the same results as
//! the general path, which the tests check against naive models of the whole machine.

use crate::tlb::SingleLevel;
use serde::Serialize;

/// The simulation loop of a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "loop", rename_all = "kebab-case")]
pub enum LoopPath {
    /// The express path (`tlb/express.rs`): no Mosaic TLB, an OS that does not track use and
    /// a stateless page-table driver, every side of the hierarchy one exact-LRU array of a
    /// specialized shape; the loop compiled for the first level's data array of `ways` ways.
    Express {
        /// Ways of the first level's data array.
        ways: usize,
    },
    /// One level whose data array has a specialized shape, where the express path does not
    /// apply: the data array probed and filled with the forms compiled for its ways,
    /// reference by reference.
    SingleLevel {
        /// The data array and its ways.
        #[serde(rename = "ways", serialize_with = "ways_of")]
        level: SingleLevel,
        /// Whether the OS tracks use (eviction is configured).
        track: bool,
        /// Whether Mosaic TLBs ride the OS.
        mosaic: bool,
    },
    /// The general path.
    General {
        /// Whether the conventional hierarchy has exactly one level (false for several, and
        /// for a machine of Mosaic TLBs only).
        one_level: bool,
        /// Whether the OS tracks use.
        track: bool,
        /// Whether Mosaic TLBs ride the OS.
        mosaic: bool,
    },
}

fn ways_of<S: serde::Serializer>(level: &SingleLevel, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(level.ways as u64)
}

/// The part of the machine a second core replays one batch behind (`replay.rs`), for a
/// machine alone in its experiment while it walks often enough.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SecondCore {
    /// No second core: the batch runs in sequence.
    None,
    /// The whole conventional hierarchy of a machine with Mosaic TLBs.
    Hierarchy,
    /// The levels below the first of a machine on the express path.
    LowerLevels,
    /// The cycle model of a timed machine: its caches and clock (`clock.rs`).
    Timing,
}

/// How many batches a machine ran on one loop and second-core mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LoopUse {
    /// The loop.
    #[serde(flatten)]
    pub path: LoopPath,
    /// What a second core replayed.
    pub second_core: SecondCore,
    /// Batches.
    pub batches: u64,
}

/// The batches of each loop and second-core mode, in the order first used.
#[derive(Clone, Debug, Default)]
pub struct LoopUses(Vec<LoopUse>);

impl LoopUses {
    /// Counts a batch run on `path` with `second_core`.
    pub fn count(&mut self, path: LoopPath, second_core: SecondCore) {
        match self.0.iter_mut().find(|u| u.path == path && u.second_core == second_core) {
            Some(used) => used.batches += 1,
            None => self.0.push(LoopUse { path, second_core, batches: 1 }),
        }
    }

    /// Every loop and mode used.
    pub fn uses(&self) -> &[LoopUse] {
        &self.0
    }
}
