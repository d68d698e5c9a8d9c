//! The GPU machine: SMs running their applications' warps under GTO, every warp memory
//! instruction's coalesced requests translated through the SM's L1 TLB, the shared L2 TLB
//! and the shared walker, then served by the caches and DRAM, while the memory manager
//! places pages.
//!
//! Time advances SM by SM: the SM with the earliest next issue issues one warp instruction,
//! and the whole path of each of its requests (TLB lookups, the walk, a far fault, the data
//! access) is reserved there and then, each shared resource (L2 TLB ports, walker slots,
//! DRAM bandwidth) taking the request at its arrival cycle. The warp is ready again when its
//! last load returns; the other warps issue meanwhile, which is how a GPU hides latency and
//! how a TLB miss that stalls many warps shows.

use super::caches::{CacheCounts, Caches};
use super::kernel::{Kernel, MemEvent, WarpInstr};
use super::memory::{AppId, ManagerStats, MemoryManager, PlaceError, FRAME_LIMIT, PAGES_PER_LARGE};
use super::params::GpuParams;
use super::prefetch::Prefetched;
use super::sm::Sm;
use super::tlb::{entry, SplitTlb, TlbCounts};
use super::walker::{WalkCounts, Walker};
use crate::memref::AccessKind;
use crate::types::BASE_PAGE_SHIFT;
use crate::{Error, Result};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, Ordering};

/// Warp instructions issued between checks of the interrupt flag.
const INTERRUPT_EVERY: u64 = 1 << 16;

/// What one application did in a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AppStats {
    /// The application's name.
    pub name: String,
    /// SMs it ran on.
    pub sms: usize,
    /// Warp instructions issued (memory and other).
    pub instructions: u64,
    /// Coalesced memory requests issued.
    pub requests: u64,
    /// Cycles from the start until its last warp exited.
    pub cycles: u64,
    /// Warp instructions per cycle.
    pub ipc: f64,
}

/// What a run of a mix did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunStats {
    /// Per application, in mix order.
    pub apps: Vec<AppStats>,
    /// Cycles until the last application finished.
    pub cycles: u64,
    /// True when interrupted before every application finished.
    pub partial: bool,
    /// The L1 TLBs, summed over SMs; requests merged into an in-flight walk count as misses.
    pub l1_tlb: TlbCounts,
    /// The shared L2 TLB.
    pub l2_tlb: TlbCounts,
    /// The walker and the MSHR merges.
    pub walker: WalkCounts,
    /// The data caches and DRAM.
    pub caches: CacheCounts,
    /// The memory manager.
    pub manager: ManagerStats,
    /// Far faults' cycles, summed over the requests that paid them.
    pub far_fault_cycles: u64,
    /// Cycles the whole GPU stalled for compaction.
    pub compaction_stall_cycles: u64,
    /// TLB entries flushed because the manager moved or splintered a page.
    pub invalidations: u64,
}

/// One application's progress.
struct AppRun {
    kernel: Box<dyn Kernel>,
    sms: Vec<usize>,
    launch: usize,
    next_warp: usize,
    live: usize,
    instructions: u64,
    requests: u64,
    finish: Option<u64>,
}

/// What an SM does after a step.
enum After {
    /// It has warps: schedule it at its time.
    Continue,
    /// It has none until its application's next launch.
    Park,
}

/// A GPU running one mix of applications.
struct Gpu<'p> {
    params: &'p GpuParams,
    sms: Vec<Sm>,
    parked: Vec<bool>,
    l1: Vec<SplitTlb>,
    l2: SplitTlb,
    l2_ports: Vec<u64>,
    walker: Walker,
    caches: Caches,
    manager: Box<dyn MemoryManager>,
    apps: Vec<AppRun>,
    /// The SMs that have warps, by their next issue's [`Turn`].
    heap: BinaryHeap<Reverse<Turn>>,
    stall_until: u64,
    stalled: u64,
    /// The cycle the PCIe bus is next free.
    pcie_free: u64,
    far_fault_cycles: u64,
    invalidations: u64,
    instr: WarpInstr,
    flushed: Vec<super::memory::Invalidation>,
}

/// Runs `apps` together on a GPU of `params` whose memory `manager` places, each on its
/// share of the SMs, until every application has finished (or `interrupt` is set). Each
/// application's instructions are generated on a thread of its own ([`Prefetched`]).
pub fn run(params: &GpuParams, manager: Box<dyn MemoryManager>, apps: Vec<Box<dyn Kernel>>, interrupt: &AtomicBool) -> Result<RunStats> {
    let shares = params.sm_shares(apps.len())?;
    let apps = apps.into_iter().map(|app| Box::new(Prefetched::start(app)) as Box<dyn Kernel>).collect();
    let mut gpu = Gpu::new(params, manager, apps, &shares);
    gpu.start()?;
    let partial = gpu.simulate(interrupt)?;
    Ok(gpu.stats(partial))
}

impl<'p> Gpu<'p> {
    fn new(params: &'p GpuParams, manager: Box<dyn MemoryManager>, kernels: Vec<Box<dyn Kernel>>, shares: &[usize]) -> Gpu<'p> {
        let mut sms = Vec::new();
        let mut apps = Vec::new();
        for (app, (kernel, &share)) in kernels.into_iter().zip(shares).enumerate() {
            let first = sms.len();
            sms.extend((0..share).map(|_| Sm::new(app)));
            let run = AppRun { kernel, sms: (first..sms.len()).collect(), launch: 0, next_warp: 0, live: 0, instructions: 0, requests: 0, finish: None };
            apps.push(run);
        }
        let n = sms.len();
        Gpu {
            params,
            parked: vec![true; n],
            l1: (0..n).map(|_| SplitTlb::new(&params.l1_tlb)).collect(),
            l2: SplitTlb::new(&params.l2_tlb),
            l2_ports: vec![0; params.l2_tlb_ports.max(1)],
            walker: Walker::new(params.max_walks.max(1)),
            caches: Caches::new(&params.caches, n),
            manager,
            apps,
            sms,
            heap: BinaryHeap::new(),
            stall_until: 0,
            stalled: 0,
            pcie_free: 0,
            far_fault_cycles: 0,
            invalidations: 0,
            instr: WarpInstr::default(),
            flushed: Vec::new(),
        }
    }

    /// Applies every application's allocations before its first launch and starts it.
    fn start(&mut self) -> Result<()> {
        for app in 0..self.apps.len() {
            self.apply_events(app, 0, 0)?;
            self.start_launch(app, 0)?;
        }
        Ok(())
    }

    /// Issues until every SM is parked for good; returns true when interrupted first.
    fn simulate(&mut self, interrupt: &AtomicBool) -> Result<bool> {
        let mut steps = 0u64;
        let mut next = self.heap.pop();
        while let Some(Reverse(turn)) = next {
            let (time, s) = turn.parts();
            steps += 1;
            if steps % INTERRUPT_EVERY == 0 && interrupt.load(Ordering::Relaxed) {
                return Ok(true);
            }
            self.sms[s].time = time.max(self.stall_until);
            next = match self.step(s)? {
                // The SM that stepped is often still the earliest (its warps issue in a
                // row while the others wait): it goes on without a trip through the heap,
                // as the heap would give it back (ties go to the lower SM either way).
                After::Continue => Some(push_pop(&mut self.heap, Reverse(Turn::new(self.sms[s].time, s)))),
                After::Park => {
                    self.parked[s] = true;
                    self.heap.pop()
                }
            };
        }
        Ok(false)
    }

    /// One scheduling decision of SM `s`.
    fn step(&mut self, s: usize) -> Result<After> {
        match self.sms[s].pick() {
            None => Ok(After::Park),
            Some(Err(ready)) => {
                self.sms[s].time = ready;
                Ok(After::Continue)
            }
            Some(Ok(slot)) => self.issue(s, slot),
        }
    }

    /// Issues the next step of the warp in `slot` of SM `s`.
    fn issue(&mut self, s: usize, slot: usize) -> Result<After> {
        let app = self.sms[s].app;
        let warp = self.sms[s].slot(slot).warp;
        let run = &mut self.apps[app];
        self.instr.clear();
        if !run.kernel.next(run.launch, warp as usize, &mut self.instr) {
            return self.retire(s, slot);
        }
        run.instructions += self.instr.instructions();
        run.requests += self.instr.lines.len() as u64;
        let t = self.sms[s].time + u64::from(self.instr.compute);
        let mut ready = t;
        let lines = std::mem::take(&mut self.instr.lines);
        let kind = self.instr.kind.unwrap_or(AccessKind::Load);
        for (k, &line) in lines.iter().enumerate() {
            let data = self.request(s, app as AppId, kind, line, t + k as u64)?;
            ready = ready.max(data);
        }
        let issued = t + lines.len() as u64;
        self.instr.lines = lines;
        self.sms[s].issued(slot, ready.max(issued));
        self.sms[s].time = issued;
        Ok(After::Continue)
    }

    /// One coalesced request of SM `s` at cycle `at`: the cycle its data has arrived, or
    /// for a store the L2 has taken it. (A store holds its warp until then: no write
    /// buffer is modelled, which is what keeps stores from issuing beyond the bandwidth.)
    fn request(&mut self, s: usize, app: AppId, kind: AccessKind, line: u64, at: u64) -> Result<u64> {
        let vpn = line >> BASE_PAGE_SHIFT;
        let (translated, pfn) = if self.manager.ideal() {
            self.l1[s].count_ideal_hit();
            self.ideal(app, vpn, at)?
        } else {
            self.translate(s, app, vpn, line, at)?
        };
        if pfn >= FRAME_LIMIT {
            return Err(Error::Simulation(format!("application {app}: page {vpn:#x} mapped to frame {pfn:#x}, beyond the frames memory managers number")));
        }
        let paddr = pfn << BASE_PAGE_SHIFT | (line & ((1 << BASE_PAGE_SHIFT) - 1));
        let latency = match kind {
            AccessKind::Store => self.caches.store(paddr, translated),
            _ => self.caches.load(s, paddr, translated),
        };
        Ok(translated + latency)
    }

    /// An ideal TLB: every translation hits the L1 TLB, though a page's first touch under
    /// demand paging still pays its far fault.
    fn ideal(&mut self, app: AppId, vpn: u64, at: u64) -> Result<(u64, u64)> {
        let hit = at + u64::from(self.params.l1_tlb_latency);
        if let Some(done) = self.walker.in_flight(app, vpn, at) {
            let m = self.manager.lookup(app, vpn).ok_or_else(|| lost(app, vpn))?;
            return Ok((done.max(hit), m.pfn));
        }
        let (pfn, large, far) = self.place(app, vpn, at)?;
        if far > 0 {
            self.walker.hold(app, vpn, large, hit + far, at);
        }
        Ok((hit + far, pfn))
    }

    /// Translates `vpn` through the TLBs and, on a miss in both, the walker.
    fn translate(&mut self, s: usize, app: AppId, vpn: u64, vaddr: u64, at: u64) -> Result<(u64, u64)> {
        let after_l1 = at + u64::from(self.params.l1_tlb_latency);
        if let Some(done) = self.walker.in_flight(app, vpn, at) {
            if let Some(m) = self.manager.lookup(app, vpn) {
                return Ok((done.max(after_l1), m.pfn));
            }
        }
        if let Some(t) = self.l1[s].lookup(app, vaddr) {
            return Ok((after_l1, t.pfn_of(vaddr).0));
        }
        let after_l2 = self.l2_port(after_l1) + u64::from(self.params.l2_tlb_latency);
        // The L1 has just missed `vaddr` (and below, the L2 too), and the manager only removes
        // entries: what is filled is absent, as `SplitTlb::fill` requires.
        if let Some(t) = self.l2.lookup(app, vaddr) {
            self.l1[s].fill(&t);
            return Ok((after_l2, t.pfn_of(vaddr).0));
        }
        let (pfn, large, far) = self.place(app, vpn, after_l2)?;
        let walked = self.walker.walk(&mut self.caches, app, vpn, large, after_l2, far);
        let e = entry(app, vpn, pfn, large);
        self.l2.fill(&e);
        self.l1[s].fill(&e);
        Ok((walked + far, pfn))
    }

    /// The cycle a lookup arriving at the L2 TLB at `at` starts on the earliest free port.
    fn l2_port(&mut self, at: u64) -> u64 {
        let port = (0..self.l2_ports.len()).min_by_key(|&p| self.l2_ports[p]).expect("at least one port");
        let start = self.l2_ports[port].max(at);
        self.l2_ports[port] = start + 1;
        start
    }

    /// Asks the manager for `vpn`'s frame, placing it if needed: its base frame, whether it
    /// is mapped large, and the far fault's cycles (0 when it was resident). Applies what
    /// the manager did meanwhile (flushes, a compaction's stall at `at`).
    fn place(&mut self, app: AppId, vpn: u64, at: u64) -> Result<(u64, bool, u64)> {
        let migrated = self.manager.stats().pages_migrated;
        let touch = self.manager.touch(app, vpn).map_err(|e| self.place_error(e))?;
        self.after_manager(migrated, at);
        let far = self.far_fault(touch.transferred, at);
        self.far_fault_cycles += far;
        Ok((touch.mapping.pfn, touch.mapping.large, far))
    }

    /// Cycles of a far fault at `at` that brought `bytes` over PCIe: its wait for the bus
    /// (busy with earlier transfers) and its load-to-use latency.
    fn far_fault(&mut self, bytes: u64, at: u64) -> u64 {
        let large_bytes = PAGES_PER_LARGE << BASE_PAGE_SHIFT;
        let latency = match bytes {
            0 => return 0,
            b if b >= large_bytes => self.params.cycles(self.params.far_fault_large_us) * b.div_ceil(large_bytes),
            b => self.params.cycles(self.params.far_fault_base_us) * b.div_ceil(1 << BASE_PAGE_SHIFT),
        };
        let start = self.pcie_free.max(at);
        let transfer_us = bytes as f64 / (self.params.pcie_gb_per_s * 1e3);
        self.pcie_free = start + self.params.cycles(transfer_us);
        start - at + latency
    }

    /// Flushes the TLB entries the manager made stale, and stalls the whole GPU from `at`
    /// for the pages it migrated since it had migrated `migrated`.
    fn after_manager(&mut self, migrated: u64, at: u64) {
        self.manager.drain_invalidations(&mut self.flushed);
        for f in self.flushed.drain(..) {
            self.invalidations += 1;
            self.l2.invalidate(f.app, f.vpn, f.large);
            // An SM runs one application: only its SMs' L1 TLBs hold its entries.
            for &s in &self.apps[usize::from(f.app)].sms {
                self.l1[s].invalidate(f.app, f.vpn, f.large);
            }
        }
        let moved = self.manager.stats().pages_migrated - migrated;
        if moved > 0 {
            let stall = (moved as f64 * self.params.copy_ns_per_page * self.params.clock_mhz / 1000.0).round() as u64;
            self.stall_until = self.stall_until.max(at) + stall;
            self.stalled += stall;
        }
    }

    /// Removes the exited warp in `slot` of SM `s` and gives the slot the application's
    /// next warp, or ends the launch when it was the last.
    fn retire(&mut self, s: usize, slot: usize) -> Result<After> {
        let app = self.sms[s].app;
        let now = self.sms[s].time;
        self.sms[s].retire(slot);
        let run = &mut self.apps[app];
        run.live -= 1;
        if run.next_warp < run.kernel.warps(run.launch) {
            self.sms[s].admit(run.next_warp as u32, now);
            run.next_warp += 1;
            run.live += 1;
        } else if run.live == 0 {
            self.end_launch(app, now)?;
        }
        Ok(if self.sms[s].warps() > 0 { After::Continue } else { After::Park })
    }

    /// Ends application `app`'s current launch at `now`: applies the events before the next
    /// and starts it, or records the application's end.
    fn end_launch(&mut self, app: usize, now: u64) -> Result<()> {
        self.apps[app].launch += 1;
        let launch = self.apps[app].launch;
        self.apply_events(app, launch, now)?;
        if launch == self.apps[app].kernel.launches() {
            self.apps[app].finish = Some(now);
            return Ok(());
        }
        self.start_launch(app, now)
    }

    /// Starts application `app`'s current launch at `now`: its first warps fill its SMs'
    /// slots, a round of one warp per SM at a time (thread blocks go round robin).
    fn start_launch(&mut self, app: usize, now: u64) -> Result<()> {
        let run = &mut self.apps[app];
        if run.launch >= run.kernel.launches() {
            run.finish = Some(now);
            return Ok(());
        }
        let warps = run.kernel.warps(run.launch);
        run.next_warp = 0;
        for _ in 0..self.params.warps_per_sm {
            for &s in &run.sms {
                if run.next_warp < warps {
                    self.sms[s].admit(run.next_warp as u32, now);
                    run.next_warp += 1;
                    run.live += 1;
                }
            }
        }
        if run.live == 0 {
            // An empty grid ends as it starts.
            return self.end_launch(app, now);
        }
        for &s in &self.apps[app].sms {
            if self.parked[s] && self.sms[s].warps() > 0 {
                self.parked[s] = false;
                self.sms[s].time = self.sms[s].time.max(now);
                self.heap.push(Reverse(Turn::new(self.sms[s].time, s)));
            }
        }
        Ok(())
    }

    /// Applies application `app`'s allocation events before launch `launch` at `now`.
    fn apply_events(&mut self, app: usize, launch: usize, now: u64) -> Result<()> {
        let events = self.apps[app].kernel.events(launch).to_vec();
        for event in events {
            let migrated = self.manager.stats().pages_migrated;
            match event {
                MemEvent::Alloc { base, bytes } => self.manager.allocate(app as AppId, base, bytes).map_err(|e| self.place_error(e))?,
                MemEvent::Free { base, bytes } => self.manager.free(app as AppId, base, bytes),
            }
            self.after_manager(migrated, now);
        }
        Ok(())
    }

    /// A placement failure as an error naming the application.
    fn place_error(&self, e: PlaceError) -> Error {
        let app = match &e {
            PlaceError::OutOfMemory { app, .. } | PlaceError::Unallocated { app, .. } => *app,
        };
        Error::Simulation(format!("application `{}`: {e}", self.apps[usize::from(app)].kernel.name()))
    }

    /// The run's statistics.
    fn stats(&self, partial: bool) -> RunStats {
        let apps: Vec<AppStats> = self.apps.iter().map(|r| app_stats(r, &self.sms)).collect();
        let mut l1_tlb = TlbCounts::default();
        self.l1.iter().for_each(|l1| l1_tlb.add(&l1.counts()));
        let walker = self.walker.counts();
        l1_tlb.misses += walker.merged;
        RunStats {
            cycles: apps.iter().map(|a| a.cycles).max().unwrap_or(0),
            apps,
            partial,
            l1_tlb,
            l2_tlb: self.l2.counts(),
            walker,
            caches: self.caches.counts(),
            manager: self.manager.stats(),
            far_fault_cycles: self.far_fault_cycles,
            compaction_stall_cycles: self.stalled,
            invalidations: self.invalidations,
        }
    }
}

/// What application `run` did, given the SMs' final times (for one still running).
fn app_stats(run: &AppRun, sms: &[Sm]) -> AppStats {
    let cycles = run.finish.unwrap_or_else(|| run.sms.iter().map(|&s| sms[s].time).max().unwrap_or(0));
    AppStats {
        name: run.kernel.name().to_string(),
        sms: run.sms.len(),
        instructions: run.instructions,
        requests: run.requests,
        cycles,
        ipc: if cycles == 0 { 0.0 } else { run.instructions as f64 / cycles as f64 },
    }
}

/// An SM's next issue: its cycle and the SM, ordered by cycle and then by SM (the lower
/// first), packed in one integer so that the scheduler's heap compares them in one step, not
/// a branch per field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Turn(u128);

impl Turn {
    fn new(time: u64, sm: usize) -> Turn {
        Turn(u128::from(time) << 64 | sm as u128)
    }

    /// The cycle and the SM.
    fn parts(self) -> (u64, usize) {
        ((self.0 >> 64) as u64, self.0 as u64 as usize)
    }
}

/// Pushes `item` into `heap` and pops the earliest: `item` itself, without touching the heap,
/// when it comes before every SM there; else the heap's first, `item` taking its place (one
/// sift, where a push and a pop make two).
fn push_pop(heap: &mut BinaryHeap<Reverse<Turn>>, item: Reverse<Turn>) -> Reverse<Turn> {
    match heap.peek_mut() {
        Some(mut first) if *first > item => std::mem::replace(&mut *first, item),
        _ => item,
    }
}

/// The error of a page the manager no longer maps while a walk for it is in flight.
fn lost(app: AppId, vpn: u64) -> Error {
    Error::Simulation(format!("application {app}: page {vpn:#x} in flight is no longer mapped"))
}

#[cfg(test)]
mod tests;
