//! Built-in machines. Each is written in the same raw form a user would write, so a preset
//! goes through the same validation and can be printed as a starting point (`xlat presets`).

use super::raw::{RawArray, RawLevel, RawMachine, RawOs, RawWays};
use super::size::ByteSize;
use crate::os::Placement;
use crate::tlb::Policy;

/// Names of the built-in machines.
pub const NAMES: [&str; 3] = ["skylake-like", "mosaic-paper", "single-tlb"];

/// What a preset defines: its levels and OS.
pub struct Preset {
    /// TLB levels.
    pub tlb: Vec<RawLevel>,
    /// OS model.
    pub os: RawOs,
}

/// Parameters some presets take (`entries`, `ways`, `replacement` of the machine).
#[derive(Clone, Copy, Debug, Default)]
pub struct PresetParams {
    /// TLB entries.
    pub entries: Option<usize>,
    /// TLB associativity.
    pub ways: Option<RawWays>,
    /// Replacement policy.
    pub replacement: Option<Policy>,
}

const K4: ByteSize = ByteSize(4 << 10);
const M2: ByteSize = ByteSize(2 << 20);
const G1: ByteSize = ByteSize(1 << 30);

fn array(entries: usize, ways: RawWays, replacement: Policy, sizes: &[ByteSize]) -> RawArray {
    RawArray { entries, ways, replacement: Some(replacement), page_sizes: Some(sizes.to_vec()) }
}

/// The default OS: 16 GiB (the Mosaic paper's gem5 machine), random fully associative
/// placement, 4 KiB pages.
pub fn default_os() -> RawOs {
    RawOs { memory: Some(ByteSize(16 << 30)), page_size: Some(K4), placement: Some(Placement::Random), ..RawOs::default() }
}

/// The preset called `name` with `params`, or an error message. Presets without parameters
/// reject them.
pub fn preset(name: &str, params: PresetParams) -> Result<Preset, String> {
    match name {
        "skylake-like" => {
            if params.entries.is_some() || params.ways.is_some() || params.replacement.is_some() {
                return Err("the skylake-like preset takes no entries/ways/replacement; write a `tlb` section instead".into());
            }
            Ok(Preset { tlb: skylake_like(), os: default_os() })
        }
        "mosaic-paper" => Ok(Preset { tlb: mosaic_paper(params), os: default_os() }),
        "single-tlb" => Ok(Preset { tlb: single_tlb(params), os: default_os() }),
        other => Err(format!("unknown preset `{other}`; the presets are {}", NAMES.join(", "))),
    }
}

/// The preset called `name` as a `[[machine]]` table named after it, with every level
/// spelled out: what `xlat presets NAME` prints, a starting point to edit.
pub fn machine(name: &str) -> Result<RawMachine, String> {
    let preset = preset(name, PresetParams::default())?;
    Ok(RawMachine { name: name.to_string(), os: Some(preset.os), tlb: Some(preset.tlb), ..RawMachine::default() })
}

/// Intel Skylake's TLBs: L1 DTLB 64 entries 4-way (4 KiB) + 32 entries 4-way (2 MiB) + 4
/// entries fully associative (1 GiB); L1 ITLB 128 entries 8-way (4 KiB); L2 STLB 1536 entries
/// 12-way for 4 KiB and 2 MiB + 16 entries 4-way for 1 GiB. Exact LRU stands in for the
/// undisclosed replacement policies; the STLB is not inclusive.
fn skylake_like() -> Vec<RawLevel> {
    let lru = Policy::Lru;
    vec![
        RawLevel {
            name: "L1".into(),
            inclusive: Some(false),
            arrays: vec![
                array(64, RawWays::Count(4), lru, &[K4]),
                array(32, RawWays::Count(4), lru, &[M2]),
                array(4, RawWays::Full, lru, &[G1]),
            ],
            instr_arrays: vec![array(128, RawWays::Count(8), lru, &[K4])],
        },
        RawLevel {
            name: "L2".into(),
            inclusive: Some(false),
            arrays: vec![array(1536, RawWays::Count(12), lru, &[K4, M2]), array(16, RawWays::Count(4), lru, &[G1])],
            instr_arrays: vec![],
        },
    ]
}

/// The Mosaic paper's gem5 machine (Table 1a): split L1 instruction and data TLBs of 1024
/// entries each, each holding 4 KiB and 2 MiB pages, associativity varied from 1 to 1024
/// (default 4 here), LRU.
fn mosaic_paper(params: PresetParams) -> Vec<RawLevel> {
    let entries = params.entries.unwrap_or(1024);
    let ways = params.ways.unwrap_or(RawWays::Count(4));
    let policy = params.replacement.unwrap_or(Policy::Lru);
    vec![RawLevel {
        name: "L1".into(),
        inclusive: Some(false),
        arrays: vec![array(entries, ways, policy, &[K4, M2])],
        instr_arrays: vec![array(entries, ways, policy, &[K4, M2])],
    }]
}

/// One unified TLB for every reference (default 1024 entries, 4-way, LRU, 4 KiB pages): the
/// simplest machine, used by the benchmarks.
fn single_tlb(params: PresetParams) -> Vec<RawLevel> {
    vec![RawLevel {
        name: "TLB".into(),
        inclusive: Some(false),
        arrays: vec![array(
            params.entries.unwrap_or(1024),
            params.ways.unwrap_or(RawWays::Count(4)),
            params.replacement.unwrap_or(Policy::Lru),
            &[K4],
        )],
        instr_arrays: vec![],
    }]
}
