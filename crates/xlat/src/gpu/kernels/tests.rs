//! Tests of the built-in applications: their computed results against plain reference
//! computations, the validity of every request, determinism, the independence of warps
//! and the size of each application at its default footprint.

use std::collections::VecDeque;

use super::*;
use crate::gpu::kernel::{check_in_allocations, MemEvent, WarpInstr, REQUEST_BYTES};

const SEED: u64 = 7;

/// One step as driven: launch, warp, step index within the warp, the instruction.
type Driven = (usize, usize, usize, WarpInstr);

fn spec(kind: KernelKind, bytes: u64, seed: u64) -> KernelSpec {
    KernelSpec { kind, bytes, seed }
}

fn tiny(kind: KernelKind) -> Box<dyn Kernel> {
    build(&spec(kind, TINY_BYTES, SEED)).unwrap()
}

/// Every step of every warp, warp after warp.
fn warp_by_warp(kernel: &mut dyn Kernel) -> Vec<Driven> {
    let mut all = Vec::new();
    for launch in 0..kernel.launches() {
        for warp in 0..kernel.warps(launch) {
            let mut instr = WarpInstr::default();
            let mut step = 0;
            while kernel.next(launch, warp, &mut instr) {
                all.push((launch, warp, step, instr.clone()));
                instr.clear();
                step += 1;
            }
        }
    }
    all
}

/// Every step of every warp, one step of each live warp in turn.
fn round_robin(kernel: &mut dyn Kernel) -> Vec<Driven> {
    let mut all = Vec::new();
    for launch in 0..kernel.launches() {
        let mut live: VecDeque<(usize, usize)> = (0..kernel.warps(launch)).map(|w| (w, 0)).collect();
        let mut instr = WarpInstr::default();
        while let Some((warp, step)) = live.pop_front() {
            instr.clear();
            if kernel.next(launch, warp, &mut instr) {
                all.push((launch, warp, step, instr.clone()));
                live.push_back((warp, step + 1));
            }
        }
    }
    all
}

/// Applies `events` to the live list; returns the most bytes live meanwhile.
fn apply(events: &[MemEvent], live: &mut Vec<(u64, u64)>) -> u64 {
    let bytes = |live: &Vec<(u64, u64)>| live.iter().map(|&(_, s)| s).sum::<u64>();
    let mut peak = bytes(live);
    for &event in events {
        match event {
            MemEvent::Alloc { base, bytes } => {
                assert!(base % 4096 == 0 && bytes % 4096 == 0 && bytes > 0, "{event:?}");
                assert!(live.iter().all(|&(b, s)| base + bytes <= b || b + s <= base), "{event:?} overlaps");
                live.push((base, bytes));
                peak = peak.max(live.iter().map(|&(_, s)| s).sum());
            }
            MemEvent::Free { base, bytes } => {
                let i = live.iter().position(|&a| a == (base, bytes)).expect("free of a live allocation");
                live.remove(i);
            }
        }
    }
    peak
}

/// Checks every request of every launch against the allocations live at that launch and
/// the shape of every step; returns the requests.
fn check_requests(kernel: &mut dyn Kernel) -> u64 {
    let mut live = Vec::new();
    let mut peak = 0;
    let mut requests = 0;
    let mut instr = WarpInstr::default();
    for launch in 0..kernel.launches() {
        peak = peak.max(apply(kernel.events(launch), &mut live));
        assert!(kernel.warps(launch) > 0, "{} launch {launch} has no warp", kernel.name());
        for warp in 0..kernel.warps(launch) {
            let mut exited = false;
            while kernel.next(launch, warp, &mut instr) {
                assert!(!exited, "{} warp {warp} steps after its exit step", kernel.name());
                check_in_allocations(&instr, &live).unwrap();
                let lines = &instr.lines;
                assert!(lines.len() <= 32);
                assert!(lines.iter().enumerate().all(|(i, l)| !lines[..i].contains(l)), "repeated line: {lines:x?}");
                assert!(lines.iter().all(|l| l % REQUEST_BYTES == 0));
                assert_eq!(instr.kind.is_some(), !lines.is_empty());
                exited = lines.is_empty();
                requests += lines.len() as u64;
                instr.clear();
            }
            assert!(exited, "{} warp {warp} of launch {launch} ends without an exit step", kernel.name());
        }
    }
    apply(kernel.events(kernel.launches()), &mut live);
    assert!(live.is_empty(), "{} leaks {live:x?} at exit", kernel.name());
    assert_eq!(kernel.footprint(), peak, "{}: footprint is not the peak of its allocations", kernel.name());
    requests
}

#[test]
fn every_request_is_aligned_distinct_and_inside_a_live_allocation() {
    for kind in KernelKind::ALL {
        let mut kernel = tiny(kind);
        let requests = check_requests(kernel.as_mut());
        assert!(requests > 0, "{kind:?}");
        let footprint = kernel.footprint();
        assert!((TINY_BYTES / 2..=TINY_BYTES).contains(&footprint), "{kind:?}: footprint {footprint}");
    }
}

#[test]
fn same_seed_same_requests_and_random_data_differ_by_seed() {
    for kind in KernelKind::ALL {
        let run = |seed| warp_by_warp(build(&spec(kind, TINY_BYTES, seed)).unwrap().as_mut());
        assert!(run(SEED) == run(SEED), "{kind:?} is not deterministic");
        let data_driven = matches!(kind, KernelKind::Spmv | KernelKind::Bfs | KernelKind::Gups | KernelKind::Histo);
        if data_driven {
            assert!(run(SEED) != run(SEED + 1), "{kind:?} ignores its seed");
        }
    }
}

#[test]
fn warps_are_independent_of_the_order_the_machine_runs_them() {
    for kind in KernelKind::ALL {
        let mut by_warp = warp_by_warp(tiny(kind).as_mut());
        let mut interleaved = round_robin(tiny(kind).as_mut());
        assert!(!by_warp.is_empty());
        let key = |d: &Driven| (d.0, d.1, d.2);
        by_warp.sort_by_key(key);
        interleaved.sort_by_key(key);
        assert!(by_warp == interleaved, "{kind:?} depends on the interleaving of its warps");
    }
}

#[test]
fn defaults_issue_half_a_million_to_two_million_requests_within_their_footprint() {
    let mut wrong = Vec::new();
    for kind in KernelKind::ALL {
        let bytes = default_bytes(kind);
        assert!((10 << 20..=362 << 20).contains(&bytes), "{kind:?}");
        let mut kernel = build(&spec(kind, bytes, SEED)).unwrap();
        let requests = check_requests(kernel.as_mut());
        let footprint = kernel.footprint();
        eprintln!("{kind:?}: {requests} requests, footprint {} KiB, {} launches", footprint >> 10, kernel.launches());
        if !(500_000..=2_000_000).contains(&requests) || !(bytes * 3 / 4..=bytes).contains(&footprint) {
            wrong.push((kind, requests, footprint));
        }
        assert!((0..kernel.launches()).all(|l| kernel.warps(l) <= grid::MAX_WARPS));
    }
    assert!(wrong.is_empty(), "out of bounds (kind, requests, footprint): {wrong:?}");
}

#[test]
fn freed_ranges_are_reused_first_fit_at_2_mib_aligned_bases() {
    let mut layout = grid::Layout::default();
    let a = layout.alloc(0, 3 << 20);
    let b = layout.alloc(0, 5000);
    assert_eq!((a % (2 << 20), b % (2 << 20)), (0, 0));
    assert!(b >= a + (3 << 20));
    layout.free(1, a);
    assert_eq!(layout.alloc(1, 1 << 20), a, "the freed range comes first");
    assert!(layout.alloc(1, 3 << 20) > b, "a range too large for the hole goes after");
}

#[test]
fn sizes_out_of_range_are_config_errors_naming_the_field() {
    for bytes in [0, MIN_BYTES - 1, MAX_BYTES + 1] {
        let Err(Error::Config { path, message }) = build(&spec(KernelKind::Gups, bytes, SEED)) else {
            panic!("{bytes} bytes accepted");
        };
        assert_eq!(path, "kernel.bytes");
        assert!(message.contains(&bytes.to_string()), "{message}");
    }
    assert!(build(&spec(KernelKind::Mm, MIN_BYTES, SEED)).is_ok());
}

#[test]
fn kinds_serialize_as_their_kebab_case_names() {
    for kind in KernelKind::ALL {
        assert_eq!(serde_json::to_string(&kind).unwrap(), format!("\"{}\"", kind.name()));
        let spec = spec(kind, 1 << 20, 3);
        let back: KernelSpec = serde_json::from_str(&serde_json::to_string(&spec).unwrap()).unwrap();
        assert_eq!(back, spec);
        assert_eq!(tiny(kind).name(), kind.name());
    }
}

#[test]
fn stream_result_is_the_passes_applied_element_by_element() {
    let kernel = stream::grid(TINY_BYTES, SEED);
    let result = &kernel.program().result;
    let [a, b] = stream::inputs(SEED, result.len());
    for i in 0..result.len() {
        let c = a[i] + b[i];
        let t = c + a[i];
        let b2 = t + c;
        assert_eq!(result[i], b2 + c, "element {i}");
    }
}

#[test]
fn stencil_result_is_the_direct_loop() {
    let kernel = stencil::grid(TINY_BYTES, SEED);
    let stencil = kernel.program();
    let (w, h) = (stencil.width as i64, stencil.height as i64);
    let mut cells = stencil::inputs(SEED, (w * h) as usize);
    for _ in 0..stencil::ITERATIONS {
        let at = |y: i64, x: i64| cells[(y.clamp(0, h - 1) * w + x.clamp(0, w - 1)) as usize];
        let mut next = vec![0.0; cells.len()];
        for y in 0..h {
            for x in 0..w {
                let (c, n, s) = (at(y, x), at(y - 1, x), at(y + 1, x));
                next[(y * w + x) as usize] = stencil::update(c, n, s, at(y, x - 1), at(y, x + 1));
            }
        }
        cells = next;
    }
    assert!(cells == stencil.result);
}

#[test]
fn spmv_result_is_the_dense_product() {
    let kernel = spmv::grid(TINY_BYTES, SEED);
    let y = &kernel.program().y;
    let m = spmv::matrix(SEED, y.len());
    let mut dense = vec![0.0f32; y.len()];
    for (r, &got) in y.iter().enumerate() {
        dense.fill(0.0);
        for k in m.row_ptr[r] as usize..m.row_ptr[r + 1] as usize {
            dense[m.cols[k] as usize] += m.vals[k];
        }
        let want: f32 = dense.iter().zip(&m.x).map(|(a, x)| a * x).sum();
        assert_eq!(got, want, "row {r}");
    }
}

#[test]
fn bfs_levels_are_a_queue_bfs() {
    let kernel = bfs::grid(TINY_BYTES, SEED);
    let level = &kernel.program().level;
    let g = bfs::graph(SEED, level.len());
    let mut want = vec![bfs::UNREACHED; level.len()];
    want[0] = 0;
    let mut queue = VecDeque::from([0usize]);
    while let Some(v) = queue.pop_front() {
        for &u in &g.adj[g.row_ptr[v] as usize..g.row_ptr[v + 1] as usize] {
            if want[u as usize] == bfs::UNREACHED {
                want[u as usize] = want[v] + 1;
                queue.push_back(u as usize);
            }
        }
    }
    assert!(level == &want);
    assert!(kernel.launches() > 3, "a search of {} levels", kernel.launches());
}

#[test]
fn gups_table_is_the_sequential_updates() {
    let kernel = gups::grid(TINY_BYTES, SEED);
    let entries = gups::entries(TINY_BYTES);
    let updates = gups::updates(SEED, entries);
    let mut table: Vec<u64> = (0..entries).collect();
    for &r in &updates {
        table[(r % entries) as usize] ^= r;
    }
    let mut indices: Vec<u64> = updates.iter().map(|r| r % entries).collect();
    indices.sort_unstable();
    indices.dedup();
    let touched = &kernel.program().touched;
    assert!(touched.iter().map(|&(i, _)| i).eq(indices), "the entries updated");
    for &(index, value) in touched {
        assert_eq!(table[index as usize], value, "entry {index}");
    }
}

#[test]
fn mm_product_is_the_naive_triple_loop() {
    let kernel = mm::grid(TINY_BYTES, SEED);
    let mm::Shape { m, n, k } = mm::shape(TINY_BYTES);
    let [a, b] = mm::inputs(SEED, mm::shape(TINY_BYTES));
    let c = &kernel.program().c;
    for i in 0..m {
        for j in 0..n {
            let want: f32 = (0..k).map(|kk| a[i * k + kk] * b[kk * n + j]).sum();
            assert_eq!(c[i * n + j], want, "C[{i}][{j}]");
        }
    }
}

#[test]
fn histogram_counts_every_pixel_and_equalizes_by_the_cumulative_count() {
    let kernel = histo::grid(TINY_BYTES, SEED);
    let histo = kernel.program();
    let input = histo::inputs(SEED, histo.output.len());
    assert_eq!(histo.hist.iter().map(|&h| h as usize).sum::<usize>(), input.len());
    for (bin, &count) in histo.hist.iter().enumerate() {
        assert_eq!(count as usize, input.iter().filter(|&&v| v as usize == bin).count(), "bin {bin}");
    }
    // Equalization: the count of pixels at or below the value, less those at the lowest
    // value, scaled to 0..=255.
    let n = input.len() as u64;
    let lowest = *input.iter().min().unwrap();
    let first = input.iter().filter(|&&u| u == lowest).count() as u64;
    for i in (0..input.len()).step_by(997) {
        let below = input.iter().filter(|&&u| u <= input[i]).count() as u64;
        assert_eq!(u64::from(histo.output[i]), (below - first) * 255 / (n - first), "pixel {i}");
    }
}

#[test]
fn wavefront_scores_are_the_row_major_recurrence() {
    let kernel = wavefront::grid(TINY_BYTES, SEED);
    let n = kernel.program().n;
    let pitch = n + 1;
    let sim = wavefront::similarity(SEED, n);
    let mut score = vec![0; pitch * pitch];
    for i in 0..=n {
        for j in 0..=n {
            score[i * pitch + j] = match (i, j) {
                (0, _) | (_, 0) => -((i + j) as i32) * wavefront::PENALTY,
                _ => {
                    let (up, here) = ((i - 1) * pitch + j, i * pitch + j);
                    wavefront::cell(score[up - 1], score[up], score[here - 1], sim[here])
                }
            };
        }
    }
    assert!(score == kernel.program().score);
}
