//! Statistics of a machine, gathered into one serializable record, and their flattening into
//! result rows.

use crate::os::OsStats;
use crate::tlb::LevelStats;
use serde::Serialize;

/// Counts of the reference stream as one machine saw it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RefCounters {
    /// References consumed.
    pub refs: u64,
    /// Instructions the references span (0 when the source does not know).
    pub instructions: u64,
    /// References that crossed a page boundary and so translated two pages.
    pub straddles: u64,
}

/// Everything one machine counted over one workload.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MachineStats {
    /// The machine's name.
    pub machine: String,
    /// Stream counts.
    #[serde(flatten)]
    pub counters: RefCounters,
    /// Per TLB level and side.
    pub levels: Vec<LevelStats>,
    /// OS model counters.
    pub os: OsStats,
}

/// One row of `results.csv`: one workload × machine × TLB level (and side).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResultRow {
    /// Workload name.
    pub workload: String,
    /// Machine configuration name.
    pub config: String,
    /// TLB level name.
    pub level: String,
    /// `unified`, `data` or `instr`.
    pub side: String,
    /// Lookups at this level and side.
    pub accesses: u64,
    /// Hits.
    pub hits: u64,
    /// Misses.
    pub misses: u64,
    /// Misses / accesses.
    pub miss_rate: f64,
    /// Misses per thousand instructions; empty when instruction counts are unknown.
    pub mpki: Option<f64>,
    /// References of the workload.
    pub refs: u64,
    /// Instructions of the workload (0 when unknown).
    pub instructions: u64,
    /// Page-table walks of the machine.
    pub walks: u64,
    /// Page faults of the machine.
    pub page_faults: u64,
    /// Bytes mapped at the end (the footprint).
    pub footprint_bytes: u64,
    /// True when the run was interrupted before the workload ended.
    pub partial: bool,
}

impl MachineStats {
    /// The result rows of this machine on `workload`, one per level and side.
    pub fn rows(&self, workload: &str, partial: bool) -> Vec<ResultRow> {
        self.levels
            .iter()
            .map(|l| ResultRow {
                workload: workload.to_string(),
                config: self.machine.clone(),
                level: l.level.clone(),
                side: l.side.as_str().to_string(),
                accesses: l.counters.accesses,
                hits: l.counters.hits,
                misses: l.counters.misses,
                miss_rate: ratio(l.counters.misses, l.counters.accesses),
                mpki: (self.counters.instructions > 0)
                    .then(|| 1000.0 * l.counters.misses as f64 / self.counters.instructions as f64),
                refs: self.counters.refs,
                instructions: self.counters.instructions,
                walks: self.os.walks,
                page_faults: self.os.page_faults,
                footprint_bytes: self.os.footprint_bytes,
                partial,
            })
            .collect()
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}
