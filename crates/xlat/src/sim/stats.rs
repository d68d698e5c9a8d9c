//! Statistics of a machine, gathered into one serializable record, and their flattening into
//! result rows.

use crate::mmu::walker::WalkerStats;
use crate::sim::machine::cpu::timing::TimingStats;
use crate::os::kernel_work::KernelWorkStats;
use crate::os::OsStats;
use crate::sim::machine::cpu::loop_path::LoopUse;
use crate::tlb::mosaic::{MosaicCounters, MosaicGeometry};
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
    /// Per conventional TLB level and side.
    pub levels: Vec<LevelStats>,
    /// Per Mosaic TLB.
    pub mosaic: Vec<MosaicStats>,
    /// OS model counters.
    pub os: OsStats,
    /// What the walks read, by level, and the walk caches (nothing under the `map` driver).
    pub walker: WalkerStats,
    /// What the page-table driver did and holds: its tables, and ECPT's resizes, kicks and
    /// walk caches, FPT's fallbacks (`null` under `map`).
    pub page_table: serde_json::Value,
    /// The kernel's page-table work (a model: see [`crate::os::kernel_work`]); `None` for
    /// a kind of machine without an OS model.
    pub kernel_work: Option<KernelWorkStats>,
    /// Where a timed machine's cycles went (EMT's cycle model); `None` for a machine that is
    /// not timed.
    pub timing: Option<TimingStats>,
    /// The batches each simulation loop ran (see
    /// [`crate::sim::machine::cpu::loop_path`]): which compiled form of the machine's loop
    /// simulated them, and what a second core replayed.
    pub loops: Vec<LoopUse>,
}

/// Counters of one Mosaic TLB, with its name.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MosaicStats {
    /// The Mosaic TLB's name.
    pub name: String,
    /// Its shape.
    pub geometry: MosaicGeometry,
    /// Its counters.
    #[serde(flatten)]
    pub counters: MosaicCounters,
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
    /// `vanilla` for a conventional TLB, `mosaic-<arity>` for a Mosaic TLB.
    pub tlb: String,
    /// Entries of the TLB (its first array, for a level of several).
    pub entries: u64,
    /// Its ways.
    pub ways: u64,
    /// Pages per entry's tag: 1 for a conventional TLB, the arity for a Mosaic TLB.
    pub arity: u32,
    /// Lookups at this level and side.
    pub accesses: u64,
    /// Hits.
    pub hits: u64,
    /// Misses (for a Mosaic TLB, tag misses and sub-page misses).
    pub misses: u64,
    /// Misses of a Mosaic TLB whose entry was present but whose sub-page was not.
    pub sub_page_misses: u64,
    /// Misses / accesses; empty when there were no accesses (a rate of nothing is not 0).
    pub miss_rate: Option<f64>,
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
    /// Bytes of distinct pages touched (the footprint).
    pub footprint_bytes: u64,
    /// Physical memory of the machine.
    pub memory_bytes: u64,
    /// Bytes moved to and from swap.
    pub swap_io_bytes: u64,
    /// Pages read back from swap (one per major fault, and the pages read ahead with it).
    pub swap_ins: u64,
    /// Pages written to swap.
    pub swap_outs: u64,
    /// Pages evicted (written to swap or, under the swap cache, dropped).
    pub evictions: u64,
    /// Pages shot down in every TLB of the machine (evictions of mapped pages and
    /// accessed-bit scans).
    pub shootdowns: u64,
    /// Estimated kernel instructions of page-table work (the kernel-work model); empty for
    /// a machine without an OS model.
    pub kernel_instructions: Option<f64>,
    /// Associativity conflicts of the placement.
    pub conflicts: u64,
    /// Memory utilization at the first associativity conflict.
    pub first_conflict_utilization: Option<f64>,
    /// Time-averaged utilization from the first eviction on.
    pub steady_state_utilization: Option<f64>,
    /// True when the run was interrupted before the workload ended.
    pub partial: bool,
    /// The part of the machine the row counts, for kinds of machine with several alike
    /// (cores, or a GPU's applications); `None` for a CPU machine. The column is written
    /// only when some row has one (see [`crate::sim::results`]), so results of CPU machines
    /// keep their columns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
}

impl MachineStats {
    /// The result rows of this machine on `workload`: one per conventional TLB level and
    /// side, then one per Mosaic TLB.
    pub fn rows(&self, workload: &str, partial: bool) -> Vec<ResultRow> {
        let levels = self.levels.iter().map(|l| {
            let c = &l.counters;
            let tlb = TlbColumns { level: l.level.clone(), side: l.side.as_str(), kind: "vanilla".into(), entries: l.entries, ways: l.ways, arity: 1 };
            (tlb, [c.accesses, c.hits, c.misses, 0])
        });
        let mosaic = self.mosaic.iter().map(|m| {
            let (c, g) = (&m.counters, &m.geometry);
            let kind = format!("mosaic-{}", g.arity);
            let tlb = TlbColumns { level: m.name.clone(), side: "unified", kind, entries: g.entries, ways: g.ways, arity: g.arity };
            (tlb, [c.accesses, c.hits, c.misses, c.sub_misses])
        });
        levels.chain(mosaic).map(|(tlb, counts)| self.row(workload, partial, tlb, counts)).collect()
    }

    fn row(&self, workload: &str, partial: bool, tlb: TlbColumns, [accesses, hits, misses, sub_page_misses]: [u64; 4]) -> ResultRow {
        let os = &self.os;
        ResultRow {
            workload: workload.to_string(),
            config: self.machine.clone(),
            level: tlb.level,
            side: tlb.side.to_string(),
            tlb: tlb.kind,
            entries: tlb.entries as u64,
            ways: tlb.ways as u64,
            arity: tlb.arity,
            accesses,
            hits,
            misses,
            sub_page_misses,
            miss_rate: (accesses > 0).then(|| misses as f64 / accesses as f64),
            mpki: (self.counters.instructions > 0).then(|| 1000.0 * misses as f64 / self.counters.instructions as f64),
            refs: self.counters.refs,
            instructions: self.counters.instructions,
            walks: os.walks,
            page_faults: os.page_faults,
            footprint_bytes: os.footprint_bytes,
            memory_bytes: os.memory_bytes,
            swap_io_bytes: os.swap_io_bytes,
            swap_ins: os.swap_ins,
            swap_outs: os.swap_outs,
            evictions: os.evictions,
            shootdowns: os.shootdowns,
            kernel_instructions: self.kernel_work.as_ref().map(|k| k.instructions),
            conflicts: os.conflicts,
            first_conflict_utilization: os.first_conflict_utilization,
            steady_state_utilization: os.steady_state_utilization,
            partial,
            unit: None,
        }
    }
}

/// What a result row says about the TLB it counts.
struct TlbColumns {
    level: String,
    side: &'static str,
    kind: String,
    entries: usize,
    ways: usize,
    arity: u32,
}
