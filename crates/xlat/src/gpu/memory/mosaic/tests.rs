use super::*;

/// A Mosaic spec of `frames` large frames.
fn spec(frames: u64, demand_paging: bool, emergency_frames: u32) -> ManagerSpec {
    ManagerSpec {
        memory_bytes: frames * LARGE_BYTES,
        demand_paging,
        emergency_frames,
        ..ManagerSpec::default()
    }
}

fn drain(mosaic: &mut Mosaic) -> Vec<Invalidation> {
    let mut out = Vec::new();
    mosaic.drain_invalidations(&mut out);
    out
}

/// The large frame of every resident page of `app` in `vpns`.
fn frames_of(mosaic: &Mosaic, app: AppId, vpns: std::ops::Range<u64>) -> Vec<u64> {
    vpns.filter_map(|vpn| mosaic.lookup(app, vpn))
        .map(|m| m.pfn / PAGES_PER_LARGE)
        .collect()
}

#[test]
fn a_whole_chunk_coalesces_at_allocation() {
    let mut mosaic = Mosaic::new(&spec(4, false, 0), 1);
    mosaic.allocate(0, LARGE_BYTES, LARGE_BYTES).unwrap();
    let first = mosaic.lookup(0, 512).unwrap();
    assert!(first.large && first.pfn % PAGES_PER_LARGE == 0);
    for off in 0..PAGES_PER_LARGE {
        assert_eq!(mosaic.lookup(0, 512 + off).unwrap().pfn, first.pfn + off);
    }
    assert_eq!(mosaic.stats().coalesced, 1);
    assert!(drain(&mut mosaic).is_empty());
}

#[test]
fn coalescing_waits_for_the_last_page_and_moves_nothing() {
    let mut mosaic = Mosaic::new(&spec(4, true, 0), 1);
    mosaic.allocate(0, 0, LARGE_BYTES).unwrap();
    let mut seen = Vec::new();
    for vpn in 0..PAGES_PER_LARGE - 1 {
        let touch = mosaic.touch(0, vpn).unwrap();
        assert_eq!(
            (touch.transferred, touch.mapping.large),
            (BASE_BYTES, false)
        );
        seen.push(touch.mapping.pfn);
    }
    assert_eq!(mosaic.stats().coalesced, 0);
    let last = mosaic.touch(0, PAGES_PER_LARGE - 1).unwrap();
    assert!(last.mapping.large);
    for (vpn, &pfn) in seen.iter().enumerate() {
        assert_eq!(
            mosaic.lookup(0, vpn as u64),
            Some(Mapping { pfn, large: true })
        );
    }
    assert_eq!(mosaic.stats().coalesced, 1);
    assert_eq!(mosaic.stats().far_faults_base, PAGES_PER_LARGE);
    // In place: no TLB entry is stale, so nothing is flushed.
    assert!(drain(&mut mosaic).is_empty());
}

#[test]
fn applications_never_share_a_frame_while_frames_are_free() {
    let mut mosaic = Mosaic::new(&spec(4, false, 0), 2);
    mosaic.allocate(0, 0, 4096).unwrap();
    mosaic.allocate(1, 0, 4096).unwrap();
    mosaic.allocate(0, 4096, 4096).unwrap();
    let (a, b) = (frames_of(&mosaic, 0, 0..2), frames_of(&mosaic, 1, 0..1));
    assert_eq!(a[0], a[1]);
    assert_ne!(a[0], b[0]);
    assert_eq!(mosaic.stats().shared_frames, 0);
    // A small allocation still reserves 2 MiB: the soft guarantee's bloat.
    assert_eq!(mosaic.stats().frames_reserved, 2 * PAGES_PER_LARGE);
}

#[test]
fn a_free_inside_a_coalesced_frame_splinters_it() {
    let mut mosaic = Mosaic::new(&spec(4, false, 0), 1);
    mosaic.allocate(0, 0, LARGE_BYTES).unwrap();
    let kept = mosaic.lookup(0, 7).unwrap().pfn;
    mosaic.free(0, 0, 4096);
    let out = drain(&mut mosaic);
    assert!(out.contains(&Invalidation {
        app: 0,
        vpn: 0,
        large: true
    }));
    assert!(out.contains(&Invalidation {
        app: 0,
        vpn: 0,
        large: false
    }));
    assert_eq!(
        mosaic.lookup(0, 7),
        Some(Mapping {
            pfn: kept,
            large: false
        })
    );
    assert_eq!(mosaic.stats().splintered, 1);
    // Allocating the page again puts it back in place, and the chunk coalesces again.
    mosaic.allocate(0, 0, 4096).unwrap();
    assert!(mosaic.lookup(0, 0).unwrap().large);
    assert_eq!(mosaic.stats().coalesced, 2);
}

#[test]
fn cac_frees_a_sparse_frame_and_flushes_what_it_moves() {
    let mut mosaic = Mosaic::new(&spec(4, false, 0), 1);
    mosaic.allocate(0, 0, 4 * LARGE_BYTES).unwrap();
    assert_eq!(mosaic.stats().coalesced, 4);
    // Chunk 0 keeps 100 pages: below half, but the other frames are full, so it stays.
    mosaic.free(0, 100 * BASE_BYTES, 412 * BASE_BYTES);
    assert_eq!(mosaic.stats().compactions, 0);
    drain(&mut mosaic);
    // Chunk 1 keeps 100 pages too: they fit in chunk 0's frame, and frame 1 is freed.
    let before: Vec<_> = (512..612)
        .map(|vpn| mosaic.lookup(0, vpn).unwrap().pfn)
        .collect();
    mosaic.free(0, 612 * BASE_BYTES, 412 * BASE_BYTES);
    let stats = mosaic.stats();
    assert_eq!((stats.compactions, stats.pages_migrated), (1, 100));
    assert_eq!(stats.frames_reserved, 3 * PAGES_PER_LARGE);
    let out = drain(&mut mosaic);
    for (vpn, pfn) in (512..612).zip(before) {
        let now = mosaic.lookup(0, vpn).unwrap();
        assert_ne!(now.pfn, pfn);
        assert!(out.contains(&Invalidation {
            app: 0,
            vpn,
            large: false
        }));
    }
    // The freed frame takes a new whole chunk, which coalesces.
    mosaic.allocate(0, 8 * LARGE_BYTES, LARGE_BYTES).unwrap();
    assert!(mosaic.lookup(0, 8 * PAGES_PER_LARGE).unwrap().large);
}

#[test]
fn cac_runs_when_a_whole_chunk_finds_no_free_frame() {
    let mut mosaic = Mosaic::new(&spec(3, false, 0), 1);
    // Two chunks of 100 pages each and one full chunk: every frame taken.
    mosaic.allocate(0, 0, 100 * BASE_BYTES).unwrap();
    mosaic.allocate(0, LARGE_BYTES, 100 * BASE_BYTES).unwrap();
    mosaic.allocate(0, 2 * LARGE_BYTES, LARGE_BYTES).unwrap();
    assert_eq!(mosaic.stats().frames_reserved, 3 * PAGES_PER_LARGE);
    mosaic.allocate(0, 3 * LARGE_BYTES, LARGE_BYTES).unwrap();
    let stats = mosaic.stats();
    assert_eq!(
        (stats.compactions, stats.pages_migrated, stats.coalesced),
        (1, 100, 2)
    );
    assert!(mosaic.lookup(0, 3 * PAGES_PER_LARGE).unwrap().large);
}

#[test]
fn without_cac_a_fragmented_chunk_fills_partly_used_frames() {
    let spec = ManagerSpec {
        cac: false,
        ..spec(2, false, 0)
    };
    let mut mosaic = Mosaic::new(&spec, 1);
    mosaic.allocate(0, 0, 100 * BASE_BYTES).unwrap();
    mosaic.allocate(0, LARGE_BYTES, 100 * BASE_BYTES).unwrap();
    mosaic
        .allocate(0, 2 * LARGE_BYTES, 300 * BASE_BYTES)
        .unwrap();
    assert_eq!(frames_of(&mosaic, 0, 1024..1324).len(), 300);
    let stats = mosaic.stats();
    assert_eq!(
        (stats.compactions, stats.coalesced, stats.frames_used),
        (0, 0, 500)
    );
}

#[test]
fn the_emergency_list_keeps_the_guarantee_and_then_sharing_is_counted() {
    let mut mosaic = Mosaic::new(&spec(3, false, 1), 4);
    mosaic.allocate(0, 0, 4096).unwrap();
    mosaic.allocate(1, 0, 4096).unwrap();
    // The free list is empty and CAC finds nothing: application 2 gets the emergency frame.
    mosaic.allocate(2, 0, 4096).unwrap();
    assert_eq!(mosaic.stats().shared_frames, 0);
    assert_eq!(mosaic.stats().frames_reserved, 3 * PAGES_PER_LARGE);
    // Nothing left but other applications' free slots.
    mosaic.allocate(3, 0, 4096).unwrap();
    assert_eq!(mosaic.stats().shared_frames, 1);
}

#[test]
fn out_of_memory_changes_nothing() {
    let mut mosaic = Mosaic::new(&spec(2, false, 0), 1);
    mosaic.allocate(0, 0, LARGE_BYTES + 4096).unwrap();
    let stats = mosaic.stats();
    let err = mosaic
        .allocate(0, 4 * LARGE_BYTES, LARGE_BYTES)
        .unwrap_err();
    assert_eq!(
        err,
        PlaceError::OutOfMemory {
            app: 0,
            needed: 4096
        }
    );
    assert_eq!(mosaic.lookup(0, 4 * PAGES_PER_LARGE), None);
    let after = mosaic.stats();
    assert_eq!(
        (after.frames_used, after.frames_reserved),
        (stats.frames_used, stats.frames_reserved)
    );
    mosaic.free(0, 1 << 40, LARGE_BYTES);
}

#[test]
fn cac_moves_prefragmented_data_to_free_a_frame_a_whole_chunk_coalesces_in() {
    // Every frame a quarter full of pre-fragmented data: 128 base frames each.
    let spec = ManagerSpec {
        fragmentation_index: 1.0,
        frame_occupancy: 0.25,
        ..spec(4, false, 0)
    };
    let mut with_cac = Mosaic::new(&spec, 1);
    with_cac.allocate(0, 0, LARGE_BYTES).unwrap();
    let stats = with_cac.stats();
    assert_eq!(
        (stats.coalesced, stats.compactions, stats.pages_migrated),
        (1, 1, 128)
    );
    assert!(with_cac.lookup(0, 0).unwrap().large);
    assert_eq!((stats.prefragmented_frames, stats.bloat()), (512, 0.0));
    // Without CAC the chunk's pages fill the free parts of two fragmented frames (384 +
    // 128 of 768 usable base frames reserved): nothing coalesces, bloat 256/512.
    let mut without = Mosaic::new(&ManagerSpec { cac: false, ..spec }, 1);
    without.allocate(0, 0, LARGE_BYTES).unwrap();
    let stats = without.stats();
    assert_eq!((stats.coalesced, stats.pages_migrated), (0, 0));
    assert_eq!(stats.bloat(), 0.5);
    assert!(!without.lookup(0, 0).unwrap().large);
}
