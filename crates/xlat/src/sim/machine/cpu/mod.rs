//! The CPU machine: one core's TLBs and the OS model whose mappings they observe, consuming
//! reference batches.
//!
//! A machine has a conventional TLB hierarchy, any number of Mosaic TLBs, or both; every
//! reference goes through each of them, and each miss walks the one page table (as the
//! Mosaic paper's gem5 model feeds every access to a vanilla and a Mosaic TLB at once). A
//! Mosaic hit decodes its CPFN through the OS's hash to a frame; debug builds check that frame
//! against the page table. Pages the OS evicts are shot down in every TLB. A machine alone
//! in its experiment may replay part of its conventional hierarchy on a second core, one
//! batch behind, with the same results (module `replay`).

use super::{KindSpec, Machine};
use crate::config::raw::RawMachine;
use crate::sim::stats::{MachineStats, MosaicStats, RefCounters};
use decoded::DecodedFrames;
use loop_path::{LoopPath, LoopUses, SecondCore};
use replay::{replay, replay_steps, Log, Step};
use crate::hash::page_key;
use crate::memref::{AccessKind, Batch, MemRef};
use crate::mmu::pwc::PwcSpec;
use crate::mmu::walker::PageWalker;
use clock::Clock;
use timing::{Timing, TimingSpec, TimingStats};
use crate::mmu::NoReads;
use crate::os::{Os, OsSpec, OutOfMemory, Walk, WalkBy};
use crate::tlb::mosaic::{MosaicGeometry, MosaicLookup, MosaicTlb};
use crate::tlb::{Descent, LevelGeometry, TlbHierarchy, SingleLevel, Walker};
use crate::types::{Asid, PageSize, Pfn, PhysAddr, Translation, Vpn, BASE_PAGE_SHIFT};
use crate::Result;
use serde::Serialize;

/// A Mosaic TLB of a machine, validated.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MosaicSpec {
    /// Name in results.
    pub name: String,
    /// Shape, policy and arity.
    pub geometry: MosaicGeometry,
}

/// A validated CPU machine configuration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CpuSpec {
    /// Name in results.
    pub name: String,
    /// Seed of the machine's random choices (placement, random replacement).
    pub seed: u64,
    /// The OS model.
    pub os: OsSpec,
    /// Conventional TLB levels, closest to the core first (empty: none).
    pub tlb: Vec<LevelGeometry>,
    /// Mosaic TLBs riding the same OS (they need iceberg placement).
    pub mosaic: Vec<MosaicSpec>,
    /// The page walker's walk caches, if any (for a page-table driver whose walks read
    /// tables).
    pub pwc: Option<PwcSpec>,
    /// EMT's cycle model, if the machine is timed.
    pub timing: Option<TimingSpec>,
}

struct MosaicVariant {
    name: String,
    tlb: MosaicTlb,
}

/// The express path walks the machine's OS.
impl Walker for Os {
    type Error = crate::os::OutOfMemory;

    #[inline(always)]
    fn walk(&mut self, asid: Asid, vaddr: u64) -> std::result::Result<Pfn, Self::Error> {
        Os::walk(self, asid, vaddr, WalkBy::FirstTlb, &mut NoReads).map(|w| w.translation.pfn)
    }

    #[inline(always)]
    fn prefetch(&self, asid: Asid, vaddr: u64) {
        Os::prefetch(self, asid, vaddr);
    }
}

/// The walker of a first level whose lower levels are replayed apart: walks ahead of them
/// ([`WalkBy::Ahead`]), and logs each miss for them.
struct Descending<'a> {
    os: &'a mut Os,
    log: &'a mut Vec<Descent>,
}

impl Walker for Descending<'_> {
    type Error = crate::os::OutOfMemory;

    #[inline(always)]
    fn walk(&mut self, asid: Asid, vaddr: u64) -> std::result::Result<Pfn, Self::Error> {
        let t = self.os.walk(asid, vaddr, WalkBy::Ahead, &mut NoReads)?.translation;
        self.log.push(Descent::new(asid, vaddr >> BASE_PAGE_SHIFT, t.pfn, t.size));
        Ok(t.pfn)
    }

    #[inline(always)]
    fn prefetch(&self, asid: Asid, vaddr: u64) {
        self.os.prefetch(asid, vaddr);
    }
}

impl KindSpec for CpuSpec {
    fn from_raw(raw: &RawMachine, path: &str, seed: u64) -> Result<CpuSpec> {
        crate::config::validate::cpu_machine(raw, path, seed)
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn os(&self) -> Option<&OsSpec> {
        Some(&self.os)
    }

    fn timed(&self) -> bool {
        self.timing.is_some()
    }

    fn build(&self) -> Result<Box<dyn Machine>> {
        Ok(Box::new(CpuMachine::new(self)))
    }

    /// The TLB levels' arrays, the Mosaic TLBs, the walk caches and the cycle model's caches.
    fn host_bytes(&self) -> u64 {
        let levels = self.tlb.iter().flat_map(|l| l.arrays.iter().chain(&l.instr_arrays)).map(crate::tlb::ArrayGeometry::host_bytes);
        let mosaic = self.mosaic.iter().map(|m| m.geometry.host_bytes());
        let pwc = self.pwc.iter().map(PwcSpec::host_bytes);
        let timing = self.timing.iter().map(TimingSpec::host_bytes);
        levels.chain(mosaic).chain(pwc).chain(timing).fold(0, u64::saturating_add)
    }
}

/// A CPU machine being simulated.
pub struct CpuMachine {
    name: String,
    tlb: Option<TlbHierarchy>,
    mosaic: Vec<MosaicVariant>,
    /// Frames of recent Mosaic hits, so that a repeated hit skips the hash. One memo serves
    /// every Mosaic TLB of the machine: they ride one OS, so a page has the same CPFN in all
    /// of them, and the first TLB's decode serves the others.
    decoded: DecodedFrames,
    os: Os,
    counters: RefCounters,
    /// The page walker: what the walks read and the walk caches (none read under a
    /// stateless driver: only such walks go through the express path and the replays,
    /// which give them no sink).
    walker: PageWalker,
    /// The caches and clock of a timed machine.
    timing: Option<Clock>,
    /// The batches each loop ran.
    loops: LoopUses,
    /// Whether the next batch prefetches page-table entries: only when the last batch walked
    /// often enough for the hints to pay for themselves.
    prefetch: bool,
    /// Whether the next batch may replay part of the conventional hierarchy apart: only
    /// while the machine walks often enough for it to pay ([`REPLAY_WALK_RATIO`]).
    replay_pays: bool,
    /// While the conventional hierarchy is replayed apart ([`replay`]): what the rest of the
    /// machine does in this batch, recorded for it.
    log: Option<Log>,
    /// The log of the last batch, which the hierarchy has not replayed yet.
    unreplayed: Log,
    /// A log replayed, kept for its memory.
    spare_log: Log,
}

/// How many references ahead the page-table entries of a batch are prefetched: far enough
/// for a line to arrive from memory while the references before it are simulated.
const PREFETCH_DISTANCE: usize = 8;

/// Prefetching costs about 50 instructions per reference and a walk that misses the host's
/// caches several hundred cycles, so it is on only while the last batch walked more than
/// once per this many references...
const PREFETCH_WALK_RATIO: u64 = 8;

/// ...and the leaves the walks read outgrow this many bytes, half the L2 cache of a current
/// server core: below it they stay in the host's caches (a 256 MiB footprint of 4 KiB pages
/// has 256 KiB of leaves), and prefetching was measured to cost more than it hid.
const PREFETCH_ABOVE_TABLE_BYTES: usize = 512 << 10;

/// Replaying part of the conventional hierarchy apart costs the rest of the machine 16 bytes
/// of log per page translated (or per first-level miss) and a hand-over per batch, and pays
/// only when the hierarchy has work enough; a machine replays only while the last batch
/// walked more than once per this many references. Measured (`xlat run`, one machine each,
/// medians of interleaved runs): Zipf streams over 1 GiB through a 1024-entry TLB and
/// Mosaic-4 over Horizon LRU gained 20% at 114 walks per 100 references and 15% at 7.3;
/// Graph500 BFS through `mosaic-paper` (3.0 walks per 100, the conventional TLB hitting 98%)
/// lost 5%, and a sequential stream (0.24) 8%.
const REPLAY_WALK_RATIO: u64 = 20;

impl CpuMachine {
    /// A machine in its initial state: empty TLBs, nothing mapped.
    pub fn new(spec: &CpuSpec) -> CpuMachine {
        let os = Os::new(&spec.os, spec.seed ^ 0x6f73);
        let unmapped = os.unmapped_code();
        let mosaic = spec
            .mosaic
            .iter()
            .enumerate()
            .map(|(i, m)| MosaicVariant {
                name: m.name.clone(),
                tlb: MosaicTlb::new(&m.geometry, unmapped, spec.seed ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            })
            .collect();
        CpuMachine {
            name: spec.name.clone(),
            tlb: (!spec.tlb.is_empty()).then(|| TlbHierarchy::new(&spec.tlb, spec.seed)),
            mosaic,
            decoded: DecodedFrames::new(),
            os,
            counters: RefCounters::default(),
            walker: PageWalker::new(spec.pwc.as_ref(), spec.seed ^ 0x7077),
            timing: spec.timing.as_ref().map(|t| Clock::Model(Timing::new(t, spec.os.memory, spec.seed ^ 0xca5e))),
            loops: LoopUses::default(),
            prefetch: false,
            replay_pays: true,
            log: None,
            unreplayed: Log::default(),
            spare_log: Log::default(),
        }
    }

    /// Simulates `batch` with `lead`, which logs what the part of the hierarchy replayed
    /// apart needs, while `replay` replays the log of the last batch, the two on rayon's workers.
    fn overlap<R>(&mut self, batch: &Batch, replay: R, lead: impl FnOnce(&mut CpuMachine, &mut Log) -> Result<()> + Send) -> Result<()>
    where
        R: FnOnce(&Log) -> u64 + Send,
    {
        let walks = self.os.walks();
        let behind = std::mem::take(&mut self.unreplayed);
        let nothing_behind = behind.is_empty();
        let mut log = std::mem::take(&mut self.spare_log);
        log.clear();
        // On rayon's persistent workers: a thread spawned per batch was measured to start on
        // the core the lead runs on and migrate (200 migrations a run against 11, and a third
        // of the speed lost, on a 2-core host).
        let (led, replayed) = if nothing_behind {
            (lead(self, &mut log), 0)
        } else {
            rayon::join(|| lead(self, &mut log), || replay(&behind))
        };
        self.os.count_replayed_walks(replayed);
        self.spare_log = behind;
        self.unreplayed = log;
        led?;
        self.finish_batch(batch, walks)?;
        // The walks of this batch's replayed part are counted when the next batch replays
        // it, in place of those of the batch before: a batch with nothing before it to
        // replay misses them, and goes on.
        self.replay_pays |= nothing_behind;
        Ok(())
    }

    /// The first level's ways, and the size of every page, when the levels below it can be
    /// replayed apart: the machine takes the express path and its hierarchy has levels below
    /// the first.
    fn descends_apart(&self) -> Option<(usize, PageSize)> {
        let tlb = self.tlb.as_ref().filter(|tlb| tlb.depth() > 1)?;
        if self.os.tracks_use() || !self.mosaic.is_empty() || !self.os.stateless_walks() || self.timing.is_some() {
            return None;
        }
        let size = self.os.uniform_page_size()?;
        tlb.express_ways(size).map(|ways| (ways, size))
    }

    /// True when the conventional hierarchy can be replayed apart (see [`replay`]).
    fn replays_hierarchy(&self) -> bool {
        self.tlb.is_some()
            && !self.mosaic.is_empty()
            && !self.os.records_fills()
            && self.os.stateless_walks()
            && self.timing.is_none()
            && self.os.uniform_page_size() == Some(PageSize::Size4K)
    }

    /// Replays in the conventional hierarchy and the cycle model what
    /// [`CpuMachine::process_on_two_cores`] left.
    fn catch_up(&mut self) {
        if self.unreplayed.is_empty() {
            return;
        }
        if let Some(tlb) = self.tlb.as_mut() {
            let walks = replay(tlb, &self.unreplayed);
            self.os.count_replayed_walks(walks);
        }
        if let Some(Clock::Model(timing)) = &mut self.timing {
            timing.replay(&self.unreplayed.timed);
        }
        self.unreplayed.clear();
    }

    /// The loop this machine's next batch runs on: decided from its shape alone, so the same
    /// for every batch, and chosen once per batch rather than per reference.
    pub fn loop_path(&self) -> LoopPath {
        let track = self.os.tracks_use();
        let mosaic = !self.mosaic.is_empty();
        let size = self.os.uniform_page_size();
        let tlb = self.tlb.as_ref();
        if !track && !mosaic && self.os.stateless_walks() && self.timing.is_none() {
            if let Some(ways) = tlb.zip(size).and_then(|(tlb, size)| tlb.express_ways(size)) {
                return LoopPath::Express { ways };
            }
        }
        // Neither tracking nor Mosaic TLBs reach here too, when the express path declined a
        // level for its instruction side.
        if let Some(level) = tlb.zip(size).and_then(|(tlb, size)| tlb.express_single_level(size)) {
            return LoopPath::SingleLevel { level, track, mosaic };
        }
        LoopPath::General { one_level: tlb.is_some_and(TlbHierarchy::is_one_level), track, mosaic }
    }

    /// Simulates every reference and event of `batch` in order, without counting them as a
    /// batch, on the loop of [`CpuMachine::loop_path`], a second core replaying
    /// `second_core` (only for a batch without events: see [`Machine::process_on_two_cores`]).
    /// An event is applied between the runs of references it cuts the batch into, its
    /// shootdowns done before the next reference.
    fn simulate(&mut self, batch: &Batch, second_core: SecondCore) -> Result<()> {
        let path = self.loop_path();
        self.loops.count(path, second_core);
        if batch.events.is_empty() {
            return self.run_loop(path, &batch.refs);
        }
        for (run, event) in batch.runs() {
            self.run_loop(path, run)?;
            if let Some(event) = event {
                self.os.apply(event).map_err(|oom| self.out_of_memory(oom))?;
                self.shoot_down();
            }
        }
        Ok(())
    }

    /// Simulates every reference of `refs` in order on the loop `path`.
    fn run_loop(&mut self, path: LoopPath, refs: &[MemRef]) -> Result<()> {
        match path {
            LoopPath::Express { ways } => self.express(ways, refs, None),
            LoopPath::SingleLevel { level, track, mosaic } => match (track, mosaic) {
                (false, false) => self.process_single_level::<false, false>(level, refs),
                (true, false) => self.process_single_level::<true, false>(level, refs),
                (false, true) => self.process_single_level::<false, true>(level, refs),
                (true, true) => self.process_single_level::<true, true>(level, refs),
            },
            LoopPath::General { one_level, track, mosaic } => match (one_level, track, mosaic) {
                (true, false, false) => self.process_shaped::<true, false, false, 0>(refs, None),
                (false, false, false) => self.process_shaped::<false, false, false, 0>(refs, None),
                (true, true, false) => self.process_shaped::<true, true, false, 0>(refs, None),
                (false, true, false) => self.process_shaped::<false, true, false, 0>(refs, None),
                (true, false, true) => self.process_shaped::<true, false, true, 0>(refs, None),
                (false, false, true) => self.process_shaped::<false, false, true, 0>(refs, None),
                (true, true, true) => self.process_shaped::<true, true, true, 0>(refs, None),
                (false, true, true) => self.process_shaped::<false, true, true, 0>(refs, None),
            },
        }
    }

    /// [`CpuMachine::process`] for a machine whose TLB is one level with a data array of a
    /// specialized shape (see [`TlbHierarchy::express_single_level`]) that the express path
    /// cannot take (Mosaic TLBs ride its OS, or the OS tracks use): the loop compiled for the
    /// data array's ways.
    fn process_single_level<const TRACK: bool, const MOSAIC: bool>(&mut self, single: SingleLevel, refs: &[MemRef]) -> Result<()> {
        let level = Some(single);
        match single.ways {
            1 => self.process_shaped::<true, TRACK, MOSAIC, 1>(refs, level),
            2 => self.process_shaped::<true, TRACK, MOSAIC, 2>(refs, level),
            4 => self.process_shaped::<true, TRACK, MOSAIC, 4>(refs, level),
            8 => self.process_shaped::<true, TRACK, MOSAIC, 8>(refs, level),
            12 => self.process_shaped::<true, TRACK, MOSAIC, 12>(refs, level),
            16 => self.process_shaped::<true, TRACK, MOSAIC, 16>(refs, level),
            _ => unreachable!("express_single_level returns the ways of a specialized shape"),
        }
    }

    /// The simulation loop of a machine of one shape: one level or any number, use tracked or
    /// not, Mosaic TLBs or none, and `W` ways of the `single` level's data array (0 and `None`
    /// for the general path).
    fn process_shaped<const ONE_LEVEL: bool, const TRACK: bool, const MOSAIC: bool, const W: usize>(&mut self, refs: &[MemRef], single: Option<SingleLevel>) -> Result<()> {
        self.run_shaped::<ONE_LEVEL, TRACK, MOSAIC, W>(refs, single).map_err(|oom| self.out_of_memory(oom))
    }

    /// [`CpuMachine::process_shaped`] with the error of a fault that found no frame as the OS
    /// gives it: one word or two through the loop, named after the machine once it stops.
    #[inline(always)]
    fn run_shaped<const ONE_LEVEL: bool, const TRACK: bool, const MOSAIC: bool, const W: usize>(&mut self, refs: &[MemRef], single: Option<SingleLevel>) -> std::result::Result<(), OutOfMemory> {
        for (i, r) in refs.iter().enumerate() {
            if self.prefetch {
                if let Some(ahead) = refs.get(i + PREFETCH_DISTANCE) {
                    self.os.prefetch(ahead.asid, ahead.vaddr);
                }
            }
            let first = r.vaddr >> BASE_PAGE_SHIFT;
            let last = r.last_vpn().0;
            self.translate::<ONE_LEVEL, TRACK, MOSAIC, W>(single, r.asid, r.vaddr, r.kind)?;
            if last != first {
                self.counters.straddles += 1;
                self.translate_later_pages::<ONE_LEVEL, TRACK, MOSAIC, W>(single, r)?;
            }
        }
        Ok(())
    }

    /// Translates the pages of `r` after its first: rare, so kept out of the loop.
    #[cold]
    #[inline(never)]
    fn translate_later_pages<const ONE_LEVEL: bool, const TRACK: bool, const MOSAIC: bool, const W: usize>(&mut self, single: Option<SingleLevel>, r: &MemRef) -> std::result::Result<(), OutOfMemory> {
        r.later_pages().try_for_each(|page| self.translate::<ONE_LEVEL, TRACK, MOSAIC, W>(single, r.asid, page.addr().0, r.kind))
    }

    /// Counts a simulated batch, during which the OS had walked `walks` times before it,
    /// decides whether the next one prefetches and may replay the hierarchy apart, and runs
    /// the khugepaged passes due by now (shooting down the ranges they collapse).
    fn finish_batch(&mut self, batch: &Batch, walks: u64) -> Result<()> {
        let refs = batch.refs.len() as u64;
        self.counters.refs += refs;
        self.counters.instructions += batch.instructions;
        let walked = self.os.walks() - walks;
        self.prefetch = walked * PREFETCH_WALK_RATIO > refs && self.os.page_table_bytes() > PREFETCH_ABOVE_TABLE_BYTES;
        // A cycle model has work on every reference (a data access), walks or not.
        self.replay_pays = self.timing.is_some() || walked * REPLAY_WALK_RATIO > refs;
        // khugepaged runs between batches: its passes are rare (one per `period`
        // instructions), and a batch is a small part of one.
        self.os.advance(self.counters.instructions).map_err(|oom| self.out_of_memory(oom))?;
        self.shoot_down();
        Ok(())
    }

    /// [`CpuMachine::process`] for a machine on the express path, whose first level's data array
    /// has `ways` ways (see [`TlbHierarchy::express_ways`]), with prefetching chosen by the
    /// last batch. With `descents`, the levels below the first are out of the hierarchy
    /// ([`TlbHierarchy::take_lower`]): the first level's misses map pages without counting a
    /// walk and go to `descents`, for the lower levels to replay.
    fn express(&mut self, ways: usize, refs: &[MemRef], descents: Option<&mut Vec<Descent>>) -> Result<()> {
        if self.prefetch {
            self.express_ways::<true>(ways, refs, descents)
        } else {
            self.express_ways::<false>(ways, refs, descents)
        }
    }

    /// [`CpuMachine::express`] with prefetching chosen: the loop for `ways` ways.
    fn express_ways<const PREFETCH: bool>(&mut self, ways: usize, refs: &[MemRef], descents: Option<&mut Vec<Descent>>) -> Result<()> {
        match ways {
            1 => self.express_shaped::<1, PREFETCH>(refs, descents),
            2 => self.express_shaped::<2, PREFETCH>(refs, descents),
            4 => self.express_shaped::<4, PREFETCH>(refs, descents),
            8 => self.express_shaped::<8, PREFETCH>(refs, descents),
            12 => self.express_shaped::<12, PREFETCH>(refs, descents),
            16 => self.express_shaped::<16, PREFETCH>(refs, descents),
            _ => unreachable!("express_ways returns the ways of a specialized shape"),
        }
    }

    fn express_shaped<const W: usize, const PREFETCH: bool>(&mut self, refs: &[MemRef], descents: Option<&mut Vec<Descent>>) -> Result<()> {
        let CpuMachine { tlb, os, .. } = self;
        let tlb = tlb.as_mut().expect("express_ways found a TLB");
        let size = os.uniform_page_size().expect("express_ways found the size of every page");
        let run = match descents {
            None => tlb.run_express::<W, PREFETCH, _>(size, refs, os, PREFETCH_DISTANCE),
            Some(log) => tlb.run_express::<W, PREFETCH, _>(size, refs, &mut Descending { os, log }, PREFETCH_DISTANCE),
        };
        let run = run.map_err(|oom| self.out_of_memory(oom))?;
        self.counters.straddles += run.straddles;
        Ok(())
    }

    /// One page's translation in every TLB; with `TRACK`, reports the use to the OS.
    #[inline(always)]
    fn translate<const ONE_LEVEL: bool, const TRACK: bool, const MOSAIC: bool, const W: usize>(
        &mut self,
        single: Option<SingleLevel>,
        asid: Asid,
        vaddr: u64,
        kind: AccessKind,
    ) -> std::result::Result<(), OutOfMemory> {
        let mut pfn = None;
        // This reference's walk, which a Mosaic TLB that misses too reuses: no walk changes the
        // page table once the page is mapped, and the TLBs' own work changes none of it.
        let mut walked = None;
        if let Some(tlb) = &mut self.tlb {
            // With Mosaic TLBs, their decoded frame serves (it is computed anyway).
            let frame = TRACK && !MOSAIC;
            let found = match single {
                Some(single) if W != 0 => tlb.lookup_single::<W>(single, asid, vaddr, kind, frame),
                _ if frame => tlb.lookup_frame_shaped::<ONE_LEVEL>(asid, vaddr, kind),
                _ => tlb.lookup_shaped::<ONE_LEVEL>(asid, vaddr, kind).map(|_| Pfn(0)),
            };
            if frame {
                pfn = found;
            }
            if found.is_none() {
                let walk = self.walk(asid, vaddr, WalkBy::FirstTlb)?;
                walked = Some(walk);
                let t = walk.translation;
                let tlb = self.tlb.as_mut().expect("checked above");
                match single {
                    Some(single) if W != 0 => tlb.fill_single::<W>(single, &t, vaddr, kind),
                    _ => tlb.fill_after_walk_shaped::<ONE_LEVEL>(&t, vaddr, kind),
                }
                if TRACK {
                    pfn = Some(t.pfn_of(vaddr));
                    self.shoot_down();
                }
            }
        }
        if MOSAIC {
            for i in 0..self.mosaic.len() {
                let frame = self.translate_mosaic::<TRACK>(i, asid, vaddr, &mut walked)?;
                pfn.get_or_insert(frame);
            }
        }
        if TRACK && self.os.access(pfn.expect("a machine has at least one TLB"), kind == AccessKind::Store)? {
            self.shoot_down();
        }
        if let (true, Some(log), Some(pfn)) = (MOSAIC, &mut self.log, pfn) {
            log.steps.push(Step::new(asid, vaddr, kind, pfn));
        }
        if self.timing.is_some() {
            // Without a frame from the TLBs, a walk's gives it, sparing a lookup in the map.
            let pfn = pfn.or_else(|| walked.map(|w| w.translation.pfn_of(vaddr)));
            self.time_reference(asid, vaddr, kind, pfn);
        }
        Ok(())
    }

    /// The TLB and data access of a timed machine's reference to `vaddr` in `asid`, whose
    /// frame the translation gave (`pfn`) or the OS's map gives.
    #[inline(never)]
    fn time_reference(&mut self, asid: Asid, vaddr: u64, kind: AccessKind, pfn: Option<Pfn>) {
        let pfn = pfn.or_else(|| self.os.mapping(asid, vaddr).map(|t| t.pfn_of(vaddr))).expect("a page just translated is mapped");
        let addr = PhysAddr(pfn.0 << BASE_PAGE_SHIFT | (vaddr & ((1 << BASE_PAGE_SHIFT) - 1)));
        self.timing.as_mut().expect("timed").reference(addr, kind);
    }

    /// Translates `vaddr` in Mosaic TLB `i`, returning its frame; `walked` is the walk of
    /// `vaddr` another TLB made for this reference, if any.
    #[inline(always)]
    fn translate_mosaic<const TRACK: bool>(&mut self, i: usize, asid: Asid, vaddr: u64, walked: &mut Option<Walk>) -> std::result::Result<Pfn, OutOfMemory> {
        let vpn = Vpn(vaddr >> BASE_PAGE_SHIFT);
        let MosaicLookup::Hit(cpfn) = self.mosaic[i].tlb.lookup(asid, vpn) else {
            return self.mosaic_miss::<TRACK>(i, asid, vaddr, walked);
        };
        let frame = match self.decoded.get(asid, vpn, cpfn) {
            Some(frame) => frame,
            None => self.decode(asid, vpn, cpfn),
        };
        debug_assert_eq!(
            Some(frame),
            self.os.mapping(asid, vaddr).map(|t| t.pfn),
            "{}: CPFN {cpfn:#x} of asid {asid} page {:#x} decodes to another frame than the OS mapped",
            self.mosaic[i].name,
            vpn.0
        );
        Ok(frame)
    }

    /// Checks every valid sub-entry of every Mosaic TLB against the OS: its CPFN must decode
    /// to the frame the OS maps the page at now (a shootdown invalidates the sub-entry of
    /// every page that leaves its frame), and so must the frame a hit on it would take from
    /// the memo of decoded frames. For tests, in any build; changes nothing the simulation
    /// reads.
    pub fn check_mosaic_entries(&mut self) -> std::result::Result<(), String> {
        let CpuMachine { mosaic, os, decoded: memo, .. } = self;
        for m in mosaic.iter() {
            let Some(layout) = os.iceberg() else { return Err("Mosaic TLBs over a memory that is not iceberg".into()) };
            let decoded: Vec<_> = m.tlb.valid_pages().map(|(asid, vpn, cpfn)| (asid, vpn, cpfn, layout.decode_frame(page_key(asid, vpn), cpfn))).collect();
            for (asid, vpn, cpfn, frame) in decoded {
                let mapped = os.mapping(asid, vpn.addr().0).map(|t| t.pfn.0);
                let remembered = memo.get(asid, vpn, cpfn).map(|pfn| pfn.0);
                if frame != mapped || remembered.is_some_and(|pfn| Some(pfn) != mapped) {
                    return Err(format!(
                        "{}: CPFN {cpfn:#x} of asid {asid} page {:#x} decodes to {frame:?} (remembered {remembered:?}), the OS maps it at {mapped:?}",
                        m.name, vpn.0
                    ));
                }
            }
        }
        Ok(())
    }

    /// Checks that every entry of the conventional TLBs is the OS's mapping of its page now:
    /// that no TLB holds a translation the OS no longer has (an evicted, moved or
    /// re-placed page not shot down). For tests: it reads every entry.
    pub fn check_tlb_entries(&mut self) -> std::result::Result<(), String> {
        let held: Vec<Translation> = self.tlb.iter().flat_map(TlbHierarchy::valid_translations).collect();
        for t in held {
            let mapped = self.os.mapping(t.asid, t.vpn.addr().0);
            if mapped != Some(t) {
                return Err(format!("a TLB holds {t:?}; the OS maps the page as {mapped:?}"));
            }
        }
        Ok(())
    }

    /// Decodes a Mosaic hit's CPFN through the iceberg hash and keeps the frame in the memo.
    #[inline(never)]
    fn decode(&mut self, asid: Asid, vpn: Vpn, cpfn: u8) -> Pfn {
        let layout = self.os.iceberg().expect("Mosaic TLBs ride an iceberg memory");
        let frame = Pfn(layout.decode_frame(page_key(asid, vpn), cpfn).expect("a valid sub-entry holds a valid CPFN"));
        self.decoded.put(asid, vpn, cpfn, frame);
        frame
    }

    /// A miss or sub-miss of Mosaic TLB `i`: walks (repeating the walk `walked` another TLB
    /// made for this reference, if any), fills the ToC and returns the frame. Only the
    /// machine's first TLB records its fills as uses (see [`WalkBy`]), and only the first
    /// walk of a reference can be the first TLB's.
    #[inline(never)]
    fn mosaic_miss<const TRACK: bool>(&mut self, i: usize, asid: Asid, vaddr: u64, walked: &mut Option<Walk>) -> std::result::Result<Pfn, OutOfMemory> {
        let walk = match *walked {
            Some(walk) => self.walk(asid, vaddr, WalkBy::Repeat(walk))?,
            None => {
                let by = if self.tlb.is_none() && i == 0 { WalkBy::FirstTlb } else { WalkBy::OtherTlb };
                let walk = self.walk(asid, vaddr, by)?;
                *walked = Some(walk);
                walk
            }
        };
        self.fill_toc(i, &walk, asid, Vpn(vaddr >> BASE_PAGE_SHIFT));
        if TRACK {
            self.shoot_down();
        }
        Ok(walk.translation.pfn_of(vaddr))
    }

    /// Fills Mosaic TLB `i` with the ToC of the Mosaic page holding `vpn`, which `walk` just
    /// found: the CPFN of every sub-page mapped now.
    fn fill_toc(&mut self, i: usize, walk: &Walk, asid: Asid, vpn: Vpn) {
        let tlb = &mut self.mosaic[i].tlb;
        let arity = tlb.geometry().arity as usize;
        let base = vpn.0 & !(arity as u64 - 1);
        tlb.fill(asid, vpn, self.os.toc(walk, base << BASE_PAGE_SHIFT, arity));
    }

    /// A page-table walk asked for `by` a TLB of the machine, its reads given to the page
    /// walker. Inlined into the simulation loop: as a call, its translation came back through
    /// memory.
    #[inline(always)]
    fn walk(&mut self, asid: Asid, vaddr: u64, by: WalkBy) -> std::result::Result<Walk, OutOfMemory> {
        let walk = self.os.walk(asid, vaddr, by, &mut self.walker);
        self.walker.finish(asid, vaddr, self.timing.as_mut());
        walk
    }

    /// Invalidates in every TLB the pages the OS just evicted (or, after an accessed-bit
    /// scan, whose bit it cleared). Only an OS that tracks use (`TRACK`) evicts or scans, so
    /// only then can there be any. Most walks evict nothing: the test is inlined, the
    /// shootdown is not.
    #[inline(always)]
    fn shoot_down(&mut self) {
        if self.os.has_shootdowns() {
            self.shoot_down_pending();
        }
    }

    /// [`CpuMachine::shoot_down`] once the OS has pages for it.
    #[inline(never)]
    fn shoot_down_pending(&mut self) {
        let Some(pages) = self.os.take_shootdowns() else { return };
        for page in pages {
            if let Some(tlb) = &mut self.tlb {
                tlb.invalidate(page.asid, page.vpn, page.size);
            }
            if let Some(log) = &mut self.log {
                log.shoot_down(page.asid, page.vpn);
            }
            for m in &mut self.mosaic {
                m.tlb.invalidate_page(page.asid, page.vpn);
            }
        }
    }

    /// The error for a fault that found no frame, naming this machine.
    #[cold]
    fn out_of_memory(&self, oom: crate::os::OutOfMemory) -> crate::Error {
        crate::Error::Simulation(format!("machine `{}`: {}", self.name, self.os.describe(oom)))
    }

}

impl CpuMachine {
    /// The cycle model's statistics, with the last batch replayed into a copy of it when a
    /// second core has not yet (see [`CpuMachine::process_on_two_cores`]), for a machine
    /// whose kernel work took `kernel_instructions`.
    fn timing_stats(&self, kernel_instructions: f64) -> Option<TimingStats> {
        let Some(Clock::Model(timing)) = &self.timing else { return None };
        let stats = |t: &Timing| t.stats(self.counters.instructions, kernel_instructions);
        if self.unreplayed.timed.is_empty() {
            return Some(stats(timing));
        }
        let mut timing = timing.clone();
        timing.replay(&self.unreplayed.timed);
        Some(stats(&timing))
    }
}

impl Machine for CpuMachine {
    fn name(&self) -> &str {
        &self.name
    }

    /// Simulates every reference and address-space event of `batch` in order. A reference
    /// that straddles a page boundary translates every page it covers (one TLB access each).
    fn process(&mut self, batch: &Batch) -> Result<()> {
        self.catch_up();
        let walks = self.os.walks();
        self.simulate(batch, SecondCore::None)?;
        self.finish_batch(batch, walks)
    }

    /// [`CpuMachine::process`] for a machine that may use a second core, while the last batch
    /// walked often enough (`REPLAY_WALK_RATIO`): a part of its conventional hierarchy
    /// replays the previous batch on the other worker thread while the rest of the machine simulates
    /// this one (see module `replay`). With Mosaic TLBs the part is the whole hierarchy; on the
    /// express path, the levels below the first ([`crate::tlb::LowerLevels`]). Results are
    /// those of [`CpuMachine::process`] ([`CpuMachine::stats`] and the next [`CpuMachine::process`]
    /// replay what is left first), except after an error, which ends a run.
    fn process_on_two_cores(&mut self, batch: &Batch) -> Result<()> {
        // Events are rare: their batches run in sequence, which keeps the replays' logs free
        // of them.
        if !self.replay_pays || !batch.events.is_empty() {
            return self.process(batch);
        }
        if self.replays_hierarchy() {
            let mut tlb = self.tlb.take().expect("replays_hierarchy checked");
            let led = self.overlap(batch, |log| replay_steps(&mut tlb, log), |m, log| {
                m.log = Some(std::mem::take(log));
                let led = m.simulate(batch, SecondCore::Hierarchy);
                *log = m.log.take().expect("set above");
                led
            });
            self.tlb = Some(tlb);
            return led;
        }
        if let Some((ways, size)) = self.descends_apart() {
            let mut lower = self.tlb.as_mut().expect("descends_apart checked").take_lower();
            let led = self.overlap(batch, |log| lower.replay(log.descent_size, &log.descents), |m, log| {
                log.descent_size = size;
                m.loops.count(LoopPath::Express { ways }, SecondCore::LowerLevels);
                m.express(ways, &batch.refs, Some(&mut log.descents))
            });
            self.tlb.as_mut().expect("descends_apart checked").put_lower(lower);
            return led;
        }
        if let Some(Clock::Model(mut timing)) = self.timing.take() {
            let led = self.overlap(batch, |log| {
                timing.replay(&log.timed);
                0
            }, |m, log| {
                m.timing = Some(Clock::Log(std::mem::take(&mut log.timed)));
                let led = m.simulate(batch, SecondCore::Timing);
                // The clock stays, empty, for the batch's end to see a timed machine.
                if let Some(Clock::Log(timed)) = &mut m.timing {
                    log.timed = std::mem::take(timed);
                }
                led
            });
            self.timing = Some(Clock::Model(timing));
            return led;
        }
        self.process(batch)
    }

    /// Statistics so far.
    fn stats(&self) -> MachineStats {
        let mut os = self.os.stats();
        let levels = match &self.tlb {
            None => Vec::new(),
            Some(tlb) if self.unreplayed.is_empty() => tlb.stats(),
            // What the hierarchy's statistics will be once it replays the last batch (see
            // `CpuMachine::process_on_two_cores`): a copy replays it.
            Some(tlb) => {
                let mut tlb = tlb.clone();
                os.walks += replay(&mut tlb, &self.unreplayed);
                tlb.stats()
            }
        };
        let kernel_work = self.os.kernel_work();
        MachineStats {
            machine: self.name.clone(),
            counters: self.counters.clone(),
            levels,
            mosaic: self.mosaic.iter().map(|m| MosaicStats { name: m.name.clone(), geometry: m.tlb.geometry().clone(), counters: m.tlb.counters() }).collect(),
            os,
            walker: self.walker.stats(),
            page_table: self.os.page_table_stats(),
            timing: self.timing_stats(kernel_work.instructions),
            kernel_work: Some(kernel_work),
            loops: self.loops.uses().to_vec(),
        }
    }
}

mod clock;
mod decoded;
pub mod loop_path;
mod replay;
pub mod timing;
#[cfg(test)]
mod tests;
