//! Tests of traced applications on traces the Accel-Sim reader's test writer writes: against
//! the flat reader and a naive expectation, their allocations, and a mix they run in.

use super::*;
use crate::gpu::kernel::{check_in_allocations, REQUEST_BYTES};
use crate::gpu::kernels::{AppSpec, KernelKind, KernelSpec, TINY_BYTES};
use crate::memref::AccessKind;
use crate::trace::accelsim::tests::{access_strategy, kernel_of_blocks, line, read, write_dir, Access};
use proptest::prelude::*;

/// Every warp's steps, launch by launch and warp by warp.
fn steps_of(app: &mut Traced) -> Vec<Vec<Vec<WarpInstr>>> {
    (0..app.launches())
        .map(|launch| {
            (0..app.warps(launch))
                .map(|warp| {
                    let mut steps = Vec::new();
                    let mut instr = WarpInstr::default();
                    while app.next(launch, warp, &mut instr) {
                        steps.push(std::mem::take(&mut instr));
                    }
                    steps
                })
                .collect()
        })
        .collect()
}

/// The steps a warp of `accesses` should give: each global access with active lanes, its
/// lines in order of first lane (every byte of every lane), after the other instructions
/// since the one before; then the instructions after the last.
fn expected_steps(accesses: &[Access]) -> Vec<WarpInstr> {
    let mut steps = Vec::new();
    let mut compute = 0;
    for a in accesses {
        match a.global() {
            Some(kind) if !a.lanes.is_empty() => {
                let mut lines = Vec::new();
                for byte in a.lanes.iter().flat_map(|&lane| lane..lane + a.width) {
                    let line = byte - byte % REQUEST_BYTES;
                    if !lines.contains(&line) {
                        lines.push(line);
                    }
                }
                steps.push(WarpInstr { compute, kind: Some(kind), lines });
                compute = 0;
            }
            _ => compute += 1,
        }
    }
    if compute > 0 {
        steps.push(WarpInstr { compute, ..WarpInstr::default() });
    }
    steps
}

/// The trace of `kernels` (each a list of thread blocks of warps) written by tracer
/// `version` in address `mode` (mode 0 where the mode cannot express the lanes).
fn write(kernels: &[Vec<Vec<Vec<Access>>>], version: u32, mode: u8, lineinfo: bool) -> tempfile::TempDir {
    let text = |a: &Access| line(a, version, mode, lineinfo).or_else(|| line(a, version, 0, lineinfo)).unwrap();
    let files: Vec<String> = kernels
        .iter()
        .map(|blocks| {
            let blocks: Vec<Vec<Vec<String>>> = blocks.iter().map(|warps| warps.iter().map(|w| w.iter().map(text).collect()).collect()).collect();
            kernel_of_blocks(&blocks, version, lineinfo)
        })
        .collect();
    write_dir(&files)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Each kernel is a launch of the file's warps, thread block by thread block; each warp
    /// gives its global accesses' lines in order of first lane with the instructions between
    /// as compute; sorted, the lines are the flat reader's requests in its order; the
    /// instructions add up to the flat reader's; the allocations cover every request.
    #[test]
    fn a_traced_application_issues_the_flat_readers_requests_warp_by_warp(
        kernels in prop::collection::vec(prop::collection::vec(prop::collection::vec(prop::collection::vec(access_strategy(), 0..5), 0..3), 1..3), 1..3),
        version in prop::sample::select(vec![2u32, 3, 4, 5]),
        mode in 0u8..3,
        lineinfo in any::<bool>(),
    ) {
        let dir = write(&kernels, version, mode, lineinfo);
        let mut app = TraceSpec::open(dir.path(), None).unwrap().build().unwrap();
        let steps = steps_of(&mut app);
        let expected: Vec<Vec<Vec<WarpInstr>>> = kernels.iter().map(|blocks| blocks.iter().flatten().map(|w| expected_steps(w)).collect()).collect();
        prop_assert_eq!(&steps, &expected);

        let (refs, instructions) = read(dir.path()).unwrap();
        let flat: Vec<(u64, AccessKind)> = refs.iter().map(|r| (r.vaddr - r.vaddr % REQUEST_BYTES, r.kind)).collect();
        let all = || steps.iter().flatten().flatten();
        let ours: Vec<(u64, AccessKind)> = all().flat_map(|s| {
            let mut lines = s.lines.clone();
            lines.sort_unstable();
            lines.into_iter().map(move |l| (l, s.kind.unwrap()))
        }).collect();
        prop_assert_eq!(ours, flat);
        prop_assert_eq!(all().map(WarpInstr::instructions).sum::<u64>(), instructions);

        let live: Vec<(u64, u64)> = app.events(0).iter().map(|e| match *e { MemEvent::Alloc { base, bytes } => (base, bytes), free => panic!("{free:?} first") }).collect();
        for step in all() {
            check_in_allocations(step, &live).unwrap();
        }
        let frees: Vec<(u64, u64)> = app.events(app.launches()).iter().map(|e| match *e { MemEvent::Free { base, bytes } => (base, bytes), alloc => panic!("{alloc:?} at exit") }).collect();
        prop_assert_eq!(&frees, &live);
        prop_assert_eq!(app.footprint(), live.iter().map(|&(_, bytes)| bytes).sum::<u64>());
    }
}

/// Stepping warps in turn gives each warp the steps it gives alone.
#[test]
fn warps_interleaved_give_the_steps_they_give_alone() {
    let access = |base: u64| Access { opcode: "LDG.E", width: 4, mask: 3, lanes: vec![base, base + 512] };
    let other = Access { opcode: "IMAD", width: 0, mask: 1, lanes: Vec::new() };
    let warps = vec![vec![access(0x7f10_0000_0000), other.clone(), access(0x7f10_0000_1000)], vec![other, access(0x7f10_0000_2000)]];
    let dir = write(&[vec![warps.clone(), warps]], 4, 0, false);
    let spec = TraceSpec::open(dir.path(), None).unwrap();
    let alone = steps_of(&mut spec.build().unwrap());
    let mut app = spec.build().unwrap();
    let mut turns = vec![Vec::new(); 4];
    let mut instr = WarpInstr::default();
    for _ in 0..4 {
        for (warp, steps) in turns.iter_mut().enumerate().rev() {
            if app.next(0, warp, &mut instr) {
                steps.push(std::mem::take(&mut instr));
            }
        }
    }
    assert_eq!(vec![turns], alone);
}

/// The copies and every chunk touched are allocated, in maximal runs of 2 MiB chunks: a
/// copy over three chunks, a buffer never copied to two chunks further, and a lane whose
/// bytes cross from one chunk into the next.
#[test]
fn allocations_are_the_runs_of_chunks_copied_to_or_touched() {
    const MIB: u64 = 1 << 20;
    let base = 0x7f10_0000_0000;
    let load = |addr: u64, width: u64| Access { opcode: "LDG.E.128", width, mask: 1, lanes: vec![addr] };
    let warps = vec![vec![load(base + 10 * MIB, 4), load(base + 16 * MIB - 8, 16)]];
    let dir = write(&[vec![warps]], 4, 0, false);
    std::fs::write(dir.path().join(KERNEL_LIST), format!("MemcpyHtoD,{:#x},{}\nkernel-1.traceg\n", base + MIB, 5 * MIB)).unwrap();
    let app = TraceSpec::open(dir.path(), None).unwrap().build().unwrap();
    let chunk = |first: u64, chunks: u64| MemEvent::Alloc { base: base + first * CHUNK, bytes: chunks * CHUNK };
    assert_eq!(app.events(0), [chunk(0, 3), chunk(5, 1), chunk(7, 2)]);
    assert_eq!(app.footprint(), 6 * CHUNK);
    assert_eq!(app.events(1).len(), 3, "freed at exit");
}

/// A mix of a built-in application and a traced one runs on a GPU machine: the traced one
/// issues every request of its trace and is named after its directory.
#[test]
fn a_mix_of_a_built_in_and_a_traced_application_runs() {
    use crate::gpu::memory::{ManagerKind, ManagerSpec};
    use crate::gpu::mix::{run_mix, AloneRuns, GpuSpec};
    use crate::gpu::params::GpuParams;
    let warp = |i: u64| (0..3).map(|k| Access { opcode: "STG.E", width: 4, mask: u32::MAX, lanes: (0..32).map(|l| 0x7f10_0000_0000 + (i * 3 + k) * 4096 + l * 4).collect() }).collect::<Vec<_>>();
    let dir = write(&[vec![(0..8).map(warp).collect(), (8..12).map(warp).collect()]], 4, 1, false);
    let trace = AppSpec::Trace(TraceSpec::open(dir.path(), Some("vecadd".into())).unwrap());
    let apps = [AppSpec::Builtin(KernelSpec { kind: KernelKind::Stream, bytes: TINY_BYTES, seed: 1 }), trace];
    let manager = ManagerSpec { kind: ManagerKind::Mosaic, ..ManagerSpec::default() };
    let spec = GpuSpec { name: "g".into(), params: GpuParams { sms: 4, ..GpuParams::default() }, manager, weighted_speedup: true };
    let result = run_mix(&spec, &apps, &AloneRuns::default(), &std::sync::atomic::AtomicBool::new(false)).unwrap();
    let traced = &result.apps[1].shared;
    assert_eq!((traced.name.as_str(), traced.requests, traced.instructions), ("vecadd", 36, 36));
    assert!(result.weighted_speedup.is_some_and(|ws| ws > 0.0) && !result.run.partial);
}

/// A missing or malformed trace is the reader's error, naming the file and line.
#[test]
fn a_bad_trace_is_the_readers_error() {
    let dir = write_dir(&["-accelsim tracer version = 4\n#BEGIN_TB\nwarp = 0\ninsts = 1\n0010 zz 0 LDG.E 0 4 0 0x10\n#END_TB\n".into()]);
    let e = TraceSpec::open(dir.path(), None).unwrap_err().to_string();
    assert!(e.contains("kernel-1.traceg:5") && e.contains("mask"), "{e}");
    let e = TraceSpec::open(&dir.path().join("nowhere"), None).unwrap_err().to_string();
    assert!(e.contains("nowhere"), "{e}");
    std::fs::write(dir.path().join(KERNEL_LIST), "MemcpyHtoD,0x10,16\n").unwrap();
    let e = TraceSpec::open(dir.path(), None).unwrap_err().to_string();
    assert!(e.contains("no kernel"), "{e}");
}
