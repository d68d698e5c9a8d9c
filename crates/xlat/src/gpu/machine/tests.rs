//! The GPU machine on cases with a known answer.

use super::*;
use crate::gpu::caches::cold_spec;
use crate::gpu::memory::{Invalidation, Mapping, Touch};
use crate::gpu::tlb::LevelShape;
use std::collections::HashSet;

/// A manager mapping every page of application `a` at frame `a * 2^30 + vpn` (the tests'
/// pages are below 2^30, which keeps frames below `FRAME_LIMIT`): base pages
/// or, when `large`, large ones; every page resident from the start, or each on its first
/// touch (`demand`).
struct FlatManager {
    large: bool,
    demand: bool,
    ideal: bool,
    resident: HashSet<(AppId, u64)>,
    touches: u64,
}

impl FlatManager {
    fn boxed(large: bool, demand: bool, ideal: bool) -> Box<dyn MemoryManager> {
        Box::new(FlatManager { large, demand, ideal, resident: HashSet::new(), touches: 0 })
    }

    fn mapping(&self, app: AppId, vpn: u64) -> Mapping {
        Mapping { pfn: (u64::from(app) << 30) + vpn, large: self.large }
    }

    /// The pages brought in with `vpn`: its chunk when large.
    fn unit(&self, vpn: u64) -> std::ops::Range<u64> {
        if self.large { vpn / 512 * 512..vpn / 512 * 512 + 512 } else { vpn..vpn + 1 }
    }
}

impl MemoryManager for FlatManager {
    fn name(&self) -> &'static str {
        "flat"
    }
    fn allocate(&mut self, _: AppId, _: u64, _: u64) -> std::result::Result<(), PlaceError> {
        Ok(())
    }
    fn free(&mut self, _: AppId, _: u64, _: u64) {}
    fn touch(&mut self, app: AppId, vpn: u64) -> std::result::Result<Touch, PlaceError> {
        self.touches += 1;
        let fresh = self.demand && self.resident.insert((app, vpn));
        let transferred = if fresh {
            self.resident.extend(self.unit(vpn).map(|v| (app, v)));
            self.unit(vpn).count() as u64 * 4096
        } else {
            0
        };
        Ok(Touch { mapping: self.mapping(app, vpn), transferred })
    }
    fn lookup(&self, app: AppId, vpn: u64) -> Option<Mapping> {
        (!self.demand || self.resident.contains(&(app, vpn))).then(|| self.mapping(app, vpn))
    }
    fn drain_invalidations(&mut self, _: &mut Vec<Invalidation>) {}
    fn ideal(&self) -> bool {
        self.ideal
    }
    fn stats(&self) -> ManagerStats {
        ManagerStats { far_faults_base: self.touches, ..ManagerStats::default() }
    }
}

/// A kernel of `warps` warps, one launch; each warp issues `steps` loads, `compute`
/// instructions before each, to the lines `line(warp, step)` gives.
struct Scripted {
    warps: usize,
    steps: usize,
    compute: u32,
    line: fn(usize, usize) -> u64,
    cursor: Vec<usize>,
    events: [Vec<MemEvent>; 2],
}

impl Scripted {
    fn boxed(warps: usize, steps: usize, compute: u32, line: fn(usize, usize) -> u64) -> Box<dyn Kernel> {
        let alloc = MemEvent::Alloc { base: 0, bytes: 1 << 40 };
        Box::new(Scripted { warps, steps, compute, line, cursor: vec![0; warps], events: [vec![alloc], Vec::new()] })
    }
}

impl Kernel for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }
    fn events(&self, launch: usize) -> &[MemEvent] {
        &self.events[launch]
    }
    fn launches(&self) -> usize {
        1
    }
    fn warps(&self, _: usize) -> usize {
        self.warps
    }
    fn next(&mut self, _: usize, warp: usize, out: &mut WarpInstr) -> bool {
        let step = self.cursor[warp];
        if step == self.steps {
            return false;
        }
        self.cursor[warp] += 1;
        out.compute = self.compute;
        out.kind = Some(AccessKind::Load);
        out.lines.push((self.line)(warp, step));
        true
    }
    fn footprint(&self) -> u64 {
        1 << 40
    }
}

/// A GPU of one SM whose caches never hit (one-line L1 and L2), so that each access's cost
/// is known: 1 (L1) + 10 (L2) + 100 (DRAM) cycles, and 110 for each walk read.
fn cold_params(sms: usize) -> GpuParams {
    GpuParams {
        sms,
        l1_tlb: LevelShape { base_entries: 1, base_ways: 1, large_entries: 1, large_ways: 1 },
        l2_tlb: LevelShape { base_entries: 1, base_ways: 1, large_entries: 1, large_ways: 1 },
        caches: cold_spec(100),
        ..GpuParams::default()
    }
}

fn run_one(params: &GpuParams, manager: Box<dyn MemoryManager>, kernel: Box<dyn Kernel>) -> RunStats {
    run(params, manager, vec![kernel], &AtomicBool::new(false)).expect("runs")
}

#[test]
fn one_warp_without_misses_pays_only_its_first_data_access() {
    // Ideal TLB, every load to one line: the first goes to DRAM, the rest hit the L1.
    let params = GpuParams { sms: 1, ..GpuParams::default() };
    let stats = run_one(&params, FlatManager::boxed(false, false, true), Scripted::boxed(1, 10, 0, |_, _| 0x1000));
    let first = 1 + 1 + params.caches.l2_latency as u64 + params.caches.dram_latency as u64;
    // Each load: a TLB cycle, then the data; the warp waits for each before the next.
    assert_eq!(stats.apps[0].cycles, first + 9 * (1 + 1));
    assert_eq!(stats.apps[0].instructions, 10);
    assert_eq!((stats.l1_tlb.accesses(), stats.l1_tlb.hit_rate()), (10, 1.0), "an ideal TLB always hits its L1");
    assert_eq!(stats.l2_tlb.accesses(), 0);
}

#[test]
fn a_miss_on_every_access_pays_both_tlbs_a_walk_and_the_data() {
    // Pages 1 GiB apart: no TLB entry, no page-table line and no data line is reused.
    let params = cold_params(1);
    let steps = 5;
    let stats = run_one(&params, FlatManager::boxed(false, false, false), Scripted::boxed(1, steps, 0, |_, s| (s as u64 + 1) << 30));
    let walk = 4 * 110;
    let per_load = 1 + 10 + walk + 1 + 110;
    assert_eq!(stats.apps[0].cycles, steps as u64 * per_load);
    assert_eq!(stats.walker.walks, steps as u64);
    assert_eq!((stats.l1_tlb.misses, stats.l2_tlb.misses), (steps as u64, steps as u64));
}

#[test]
fn enough_warps_hide_the_latency_of_every_miss() {
    // 20 compute instructions per load: a load's 562 cycles are under 47 other warps' 21
    // issue cycles each, so some warp is always ready and the SM issues every cycle until
    // its last cohort of warps. (Those finish with fewer and fewer others to hide them:
    // GTO lets the oldest run ahead and the youngest, starved, finish last, about 5% of the
    // run here.)
    let params = cold_params(1);
    let (warps, steps, compute) = (480, 20, 20);
    let stats = run_one(&params, FlatManager::boxed(false, false, false), Scripted::boxed(warps, steps, compute, |w, s| ((w * 1000 + s) as u64) << 21));
    let issue_cycles = (warps * steps) as u64 * (u64::from(compute) + 1);
    assert_eq!(stats.apps[0].instructions, issue_cycles);
    assert!(stats.apps[0].ipc > 0.94, "IPC {}", stats.apps[0].ipc);
}

#[test]
fn too_few_warps_leave_the_latency_exposed() {
    // The same work on 2 warps: each load's ~560 cycles now dominate.
    let params = cold_params(1);
    let stats = run_one(&params, FlatManager::boxed(false, false, false), Scripted::boxed(2, 200, 20, |w, s| ((w * 1000 + s) as u64) << 21));
    assert!(stats.apps[0].ipc < 0.1, "IPC {}", stats.apps[0].ipc);
}

#[test]
fn requests_for_a_page_being_walked_merge_into_one_walk() {
    // 8 warps, each loading its own line of one page: one walk, 7 merges.
    let params = cold_params(1);
    let stats = run_one(&params, FlatManager::boxed(false, false, false), Scripted::boxed(8, 1, 0, |w, _| (1 << 30) + w as u64 * 128));
    assert_eq!(stats.walker.walks, 1);
    assert_eq!(stats.walker.merged, 7);
}

#[test]
fn a_first_touch_under_demand_paging_pays_a_far_fault_of_its_page_size() {
    let params = cold_params(1);
    let base = run_one(&params, FlatManager::boxed(false, true, false), Scripted::boxed(1, 1, 0, |_, _| 1 << 30));
    let large = run_one(&params, FlatManager::boxed(true, true, false), Scripted::boxed(1, 1, 0, |_, _| 1 << 30));
    let resident = run_one(&params, FlatManager::boxed(false, false, false), Scripted::boxed(1, 1, 0, |_, _| 1 << 30));
    assert_eq!(base.apps[0].cycles - resident.apps[0].cycles, params.cycles(55.0));
    // A large page's walk reads one level fewer.
    assert_eq!(large.apps[0].cycles + 110 - resident.apps[0].cycles, params.cycles(318.0));
}

#[test]
fn far_faults_take_the_pcie_bus_one_after_another() {
    // Two warps a cycle apart each fault a page of their own: the second transfer waits for
    // the first's 4 KiB to cross at 12 GB/s, less the cycle it came later.
    let params = cold_params(1);
    let one = run_one(&params, FlatManager::boxed(false, true, false), Scripted::boxed(1, 1, 0, |_, _| 1 << 30));
    let two = run_one(&params, FlatManager::boxed(false, true, false), Scripted::boxed(2, 1, 0, |w, _| (w as u64 + 1) << 30));
    let transfer = params.cycles(4096.0 / (params.pcie_gb_per_s * 1e3));
    assert_eq!(two.apps[0].cycles - one.apps[0].cycles, 1 + (transfer - 1));
}

#[test]
fn large_pages_let_one_entry_translate_a_whole_chunk() {
    let params = cold_params(1);
    let line = |_: usize, s: usize| (1 << 30) + s as u64 * 4096;
    let base = run_one(&params, FlatManager::boxed(false, false, false), Scripted::boxed(1, 64, 0, line));
    let large = run_one(&params, FlatManager::boxed(true, false, false), Scripted::boxed(1, 64, 0, line));
    assert_eq!(base.walker.walks, 64);
    assert_eq!(large.walker.walks, 1);
    assert_eq!(large.l1_tlb.large_hits, 63);
}

#[test]
fn applications_get_their_share_of_the_sms_and_their_own_address_spaces() {
    let params = cold_params(3);
    let apps = vec![Scripted::boxed(4, 3, 0, |_, s| s as u64 * 128), Scripted::boxed(4, 3, 0, |_, s| s as u64 * 128)];
    let stats = run(&params, FlatManager::boxed(false, false, false), apps, &AtomicBool::new(false)).expect("runs");
    assert_eq!(stats.apps.iter().map(|a| a.sms).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(stats.walker.walks, 2, "the same page of two applications is walked twice");
    let err = run(&cold_params(1), FlatManager::boxed(false, false, false), vec![Scripted::boxed(1, 1, 0, |_, _| 0), Scripted::boxed(1, 1, 0, |_, _| 0)], &AtomicBool::new(false));
    assert!(err.is_err_and(|e| e.to_string().contains("2 applications cannot share 1 SMs")));
}

#[test]
fn a_frame_beyond_the_numbered_frames_is_an_error_not_a_wrong_cache_tag() {
    // The data caches keep 32-bit tags because frames are below `FRAME_LIMIT`: a manager
    // breaking that is stopped, with the page and frame named.
    let err = run(&cold_params(1), FlatManager::boxed(false, false, false), vec![Scripted::boxed(1, 1, 0, |_, _| 1 << 45)], &AtomicBool::new(false));
    assert!(err.is_err_and(|e| e.to_string().contains("page 0x200000000 mapped to frame 0x200000000")));
}

proptest::proptest! {
    /// `push_pop` of packed turns gives what a push then a pop of (cycle, SM) tuples would,
    /// and leaves the heap as they would.
    #[test]
    fn push_pop_is_a_push_then_a_pop(late: bool, heap in proptest::collection::vec((0u64..50, 0usize..30), 0..40), item in (0u64..50, 30usize..60)) {
        // Cycles near the top of their range too, where the packed turn's upper half is full.
        let shift = |(time, sm): (u64, usize)| (if late { u64::MAX - time } else { time }, sm);
        let (heap, item): (Vec<_>, _) = (heap.into_iter().map(shift).collect(), shift(item));
        let turn = |(time, sm): (u64, usize)| Reverse(Turn::new(time, sm));
        let mut fast: BinaryHeap<_> = heap.iter().copied().map(turn).collect();
        let mut naive: BinaryHeap<_> = heap.iter().map(|&e| Reverse(e)).collect();
        let Reverse(got) = push_pop(&mut fast, turn(item));
        naive.push(Reverse(item));
        proptest::prop_assert_eq!(Some(Reverse(got.parts())), naive.pop());
        let left = |heap: Vec<Reverse<Turn>>| heap.into_iter().map(|Reverse(t)| t.parts()).collect::<Vec<_>>();
        proptest::prop_assert_eq!(left(fast.into_sorted_vec()), naive.into_sorted_vec().into_iter().map(|Reverse(e)| e).collect::<Vec<_>>());
    }
}
