//! The kernel-work model counted by hand: first faults and a second fault on each driver,
//! an eviction and a swap-in, and the totals adding up.

use super::*;
use crate::os::kernel_work::{OperationStats, Primitives};

/// The OS of `driver` (a page-table name) over `frames` frames with LRU eviction.
fn os_with(driver: &str, frames: u64) -> Os {
    let spec = OsSpec {
        page_table: crate::mmu::PageTableSpec::named(driver).unwrap(),
        eviction: EvictionSpec::Lru(Default::default()),
        ..OsSpec::simple(frames << 12, PlacementSpec::Sequential)
    };
    Os::new(&spec, 1)
}

/// The report of `name` in `os`'s kernel work.
fn op(os: &Os, name: &str) -> OperationStats {
    os.kernel_work().operations.into_iter().find(|o| o.operation == name).unwrap()
}

/// A first fault on page 0x7f000 and a second on its neighbour, counted per driver:
/// what the fault reads of the entry, the tables placed and linked, the entry written.
#[test]
fn faults_count_what_each_driver_does() {
    let page = |p: Primitives| (p.entries_read, p.entries_written, p.table_allocations, p.table_bytes_zeroed, p.hashes, p.cwt_updates);
    // (driver, first fault, both faults)
    let ecpt_tables = (3 * 256 + 128 + 64) << 12;
    let cases = [
        // The map: an entry read and one written per fault.
        ("map", (1, 1, 0, 0, 0, 0), (2, 2, 0, 0, 0, 0)),
        // Four tables placed and linked; the entry found through the four (the second
        // fault reads them twice: finding the entry, then writing it).
        ("radix", (4, 5, 4, 4 << 12, 0, 0), (12, 6, 4, 4 << 12, 0, 0)),
        // Two 2 MiB nodes; two entries on the path.
        ("fpt", (2, 3, 2, 4 << 20, 0, 0), (6, 4, 2, 4 << 20, 0, 0)),
        // 960 pages of ways and CWTs; a miss in the three ways, an insertion looking at
        // three candidates; then the cluster found in its way (at most three probes).
        ("ecpt", (6, 1, 960, ecpt_tables, 6, 2), (0, 2, 960, ecpt_tables, 0, 4)),
    ];
    for (driver, first, both) in cases {
        let mut os = os_with(driver, 4096);
        os.miss(0, 0x7f000 << 12).unwrap();
        let fault = op(&os, "fault");
        assert_eq!(fault.calls, 1, "{driver}");
        assert_eq!((fault.primitives.frame_allocations, fault.primitives.data_bytes_zeroed), (1, 4096), "{driver}");
        assert_eq!(page(fault.primitives), first, "{driver}");
        os.miss(0, 0x7f001 << 12).unwrap();
        let fault = op(&os, "fault");
        if driver == "ecpt" {
            // The second fault's probes depend on the way the cluster went to (random).
            let extra = fault.primitives.hashes - 6;
            assert!((2..=6).contains(&extra) && extra % 2 == 0, "{driver}: {extra}");
            assert_eq!(fault.primitives.entries_read, fault.primitives.hashes);
            assert_eq!(page(Primitives { entries_read: 0, hashes: 0, ..fault.primitives }), both, "{driver}");
        } else {
            assert_eq!(page(fault.primitives), both, "{driver}");
        }
    }
}

/// An eviction unmaps a page (its entry found and cleared) and shoots it down; the swap-in
/// that brings it back reads the swap entry, takes a frame and zeroes nothing.
#[test]
fn evictions_and_swap_ins_count_apart_from_faults() {
    let mut os = os_with("radix", 5);
    // Four frames hold the tables; the fifth the pages, one at a time.
    os.miss(0, 0).unwrap();
    os.miss(0, 1 << 12).unwrap();
    os.take_shootdowns();
    os.miss(0, 0).unwrap();
    let out = op(&os, "swap_out");
    assert_eq!(out.calls, 2);
    assert_eq!((out.primitives.entries_read, out.primitives.entries_written, out.primitives.shootdowns), (8, 2, 2));
    let swap_in = op(&os, "swap_in");
    assert_eq!(swap_in.calls, 1);
    // The swap entry read (4), the entry written after finding it (4 + 1).
    assert_eq!((swap_in.primitives.entries_read, swap_in.primitives.entries_written), (8, 1));
    assert_eq!((swap_in.primitives.frame_allocations, swap_in.primitives.data_bytes_zeroed), (1, 0));
    assert_eq!(op(&os, "fault").calls, 2);
}

/// Per-operation totals add up to the machine's, in primitives and in instructions, on a
/// run with evictions, swap-ins and ECPT resizes.
#[test]
fn operations_add_up_to_the_totals() {
    let mut os = os_with("ecpt", 1200);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    for _ in 0..20_000 {
        let vpn: u64 = rng.random_range(0..4000);
        touch(&mut os, vpn);
        os.take_shootdowns();
    }
    let work = os.kernel_work();
    let mut sum = Primitives::default();
    for o in &work.operations {
        sum += o.primitives;
    }
    assert_eq!(sum, work.primitives);
    assert_eq!(work.operations.iter().map(|o| o.calls).sum::<u64>(), work.calls);
    let instructions: f64 = work.operations.iter().map(|o| o.instructions).sum();
    assert!((instructions - work.instructions).abs() <= 1e-9 * work.instructions);
    assert!(op(&os, "swap_out").calls > 0 && op(&os, "swap_in").calls > 0);
    assert!(op(&os, "rehash").calls > 0 || op(&os, "resize").calls == 0);
}
