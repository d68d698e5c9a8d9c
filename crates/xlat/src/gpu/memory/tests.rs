//! Every policy against a brute-force reference model: random sequences of allocations,
//! touches and frees, with memory small enough that allocations fail and CAC runs, checked
//! after every step against the model's record of allocations, touched pages, where each
//! page's content was last seen and what the TLBs may have cached. Pre-fragmented memory
//! (the CAC stress test) is never an application's, and is never lost or duplicated.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use proptest::sample::Index;

use super::pages::{BASE_BYTES, LARGE_BYTES};
use super::*;

/// Applications in a mix.
const APPS: AppId = 3;

/// Allocations start in pages `0..SPAN` of each application.
const SPAN: u64 = 4 * PAGES_PER_LARGE;

/// Allocations end below this page (the checks scan pages `0..LIMIT`).
const LIMIT: u64 = 6 * PAGES_PER_LARGE;

/// One step of a random run.
#[derive(Clone, Debug)]
enum Op {
    /// Allocates pages `start..start + pages`, unless that overlaps a live allocation.
    Allocate { app: AppId, start: u64, pages: u64 },
    /// Touches a page of a live allocation, or any page when there is none.
    Touch {
        app: AppId,
        which: Index,
        page: Index,
    },
    /// Touches every page of a live allocation (demand paging then fills whole chunks), or
    /// every page but one (a chunk one page short of coalescing).
    TouchAll {
        app: AppId,
        which: Index,
        skip: Option<Index>,
    },
    /// Frees a live allocation, or part of it, or an unallocated range.
    Free {
        app: AppId,
        which: Index,
        part: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let app = 0..APPS;
    prop_oneof![
        3 => (app.clone(), 0..SPAN, 1..700u64)
            .prop_map(|(app, start, pages)| Op::Allocate { app, start, pages }),
        3 => (app.clone(), 0..4u64, 1..3u64).prop_map(|(app, chunk, chunks)| Op::Allocate {
            app,
            start: chunk * PAGES_PER_LARGE,
            pages: chunks * PAGES_PER_LARGE,
        }),
        4 => (app.clone(), any::<Index>(), any::<Index>())
            .prop_map(|(app, which, page)| Op::Touch { app, which, page }),
        2 => (app.clone(), any::<Index>(), any::<Option<Index>>())
            .prop_map(|(app, which, skip)| Op::TouchAll { app, which, skip }),
        2 => (app, any::<Index>(), any::<bool>())
            .prop_map(|(app, which, part)| Op::Free { app, which, part }),
    ]
}

/// No pre-fragmentation half of the time, else any degree of it: (index, occupancy, seed).
fn fragmentation() -> impl Strategy<Value = (f64, f64, u64)> {
    prop_oneof![
        Just((0.0, 0.5, 1)),
        (0.0..=1.0f64, 0.0..=1.0f64, 0..4u64),
    ]
}

fn spec() -> impl Strategy<Value = ManagerSpec> {
    let kind = prop_oneof![
        Just(ManagerKind::GpuMmu),
        Just(ManagerKind::LargeOnly),
        Just(ManagerKind::Mosaic),
        Just(ManagerKind::Ideal),
    ];
    (
        kind,
        3..10u64,
        any::<bool>(),
        any::<bool>(),
        0.0..1.0f64,
        0..3u32,
        fragmentation(),
    )
        .prop_map(
            |(kind, frames, demand_paging, cac, cac_threshold, emergency_frames, f)| ManagerSpec {
                kind,
                memory_bytes: frames * LARGE_BYTES,
                demand_paging,
                cac,
                cac_threshold,
                emergency_frames,
                fragmentation_index: f.0,
                frame_occupancy: f.1,
                prefragment_seed: f.2,
            },
        )
}

/// Mosaic with so little memory that CAC and the emergency paths run often.
fn mosaic_under_pressure() -> impl Strategy<Value = ManagerSpec> {
    (3..6u64, any::<bool>(), 0.3..1.0f64, 0..2u32, fragmentation()).prop_map(
        |(frames, demand_paging, cac_threshold, emergency_frames, f)| ManagerSpec {
            kind: ManagerKind::Mosaic,
            memory_bytes: frames * LARGE_BYTES,
            demand_paging,
            cac: true,
            cac_threshold,
            emergency_frames,
            fragmentation_index: f.0,
            frame_occupancy: f.1,
            prefragment_seed: f.2,
        },
    )
}

/// Mosaic whose every frame is pre-fragmented, lightly enough that CAC can move the data to
/// free whole frames.
fn mosaic_prefragmented() -> impl Strategy<Value = ManagerSpec> {
    (3..8u64, any::<bool>(), 0.01..0.5f64, 0..8u64).prop_map(
        |(frames, demand_paging, frame_occupancy, prefragment_seed)| ManagerSpec {
            kind: ManagerKind::Mosaic,
            memory_bytes: frames * LARGE_BYTES,
            demand_paging,
            emergency_frames: 0,
            fragmentation_index: 1.0,
            frame_occupancy,
            prefragment_seed,
            ..ManagerSpec::default()
        },
    )
}

/// The reference model: what must hold of the manager after every step.
struct Model {
    spec: ManagerSpec,
    /// Each application's live allocations, as page ranges.
    live: Vec<Vec<std::ops::Range<u64>>>,
    /// Pages touched since allocated.
    touched: BTreeSet<(AppId, u64)>,
    /// Where each resident page's content was after the previous step.
    placed: BTreeMap<(AppId, u64), u64>,
    /// Base entries the TLBs may hold: (app, vpn) -> pfn.
    base_view: BTreeMap<(AppId, u64), u64>,
    /// Large entries the TLBs may hold: (app, chunk) -> first pfn.
    large_view: BTreeMap<(AppId, u64), u64>,
    /// Base entries flushed in this step.
    flushed: BTreeSet<(AppId, u64)>,
    /// The pre-fragmented base frames at the start.
    prefragmented: Vec<u64>,
}

impl Model {
    fn new(spec: ManagerSpec) -> Model {
        Model {
            spec,
            live: vec![Vec::new(); usize::from(APPS)],
            touched: BTreeSet::new(),
            placed: BTreeMap::new(),
            base_view: BTreeMap::new(),
            large_view: BTreeMap::new(),
            flushed: BTreeSet::new(),
            prefragmented: Vec::new(),
        }
    }

    fn allocated(&self, app: AppId, vpn: u64) -> bool {
        self.live[usize::from(app)]
            .iter()
            .any(|range| range.contains(&vpn))
    }

    fn run(&mut self, manager: &mut dyn MemoryManager, op: &Op) {
        match *op {
            Op::Allocate { app, start, pages } => self.allocate(manager, app, start..start + pages),
            Op::Touch {
                app,
                ref which,
                ref page,
            } => {
                let vpn = match self.pick(app, which) {
                    Some(range) => {
                        range.start + page.index((range.end - range.start) as usize) as u64
                    }
                    None => page.index(LIMIT as usize) as u64,
                };
                self.touch(manager, app, vpn);
            }
            Op::TouchAll {
                app,
                ref which,
                ref skip,
            } => {
                let range = self.pick(app, which).unwrap_or(0..0);
                let len = (range.end - range.start) as usize;
                let skip = skip
                    .as_ref()
                    .map(|skip| range.start + skip.index(len.max(1)) as u64);
                for vpn in range.filter(|&vpn| Some(vpn) != skip) {
                    self.touch(manager, app, vpn);
                }
            }
            Op::Free {
                app,
                ref which,
                part,
            } => self.free(manager, app, which, part),
        }
        self.drain(manager);
    }

    fn pick(&self, app: AppId, which: &Index) -> Option<std::ops::Range<u64>> {
        let live = &self.live[usize::from(app)];
        (!live.is_empty()).then(|| live[which.index(live.len())].clone())
    }

    fn allocate(
        &mut self,
        manager: &mut dyn MemoryManager,
        app: AppId,
        pages: std::ops::Range<u64>,
    ) {
        let live = &self.live[usize::from(app)];
        if live
            .iter()
            .any(|r| r.start < pages.end && pages.start < r.end)
        {
            return;
        }
        let bytes = (pages.end - pages.start) * BASE_BYTES;
        match manager.allocate(app, pages.start * BASE_BYTES, bytes) {
            Ok(()) => self.live[usize::from(app)].push(pages),
            Err(PlaceError::OutOfMemory { .. }) => {
                assert!(
                    !self.spec.demand_paging,
                    "allocation without placement failed"
                )
            }
            Err(err) => panic!("allocation failed: {err}"),
        }
    }

    fn touch(&mut self, manager: &mut dyn MemoryManager, app: AppId, vpn: u64) {
        let before = manager.lookup(app, vpn);
        let result = manager.touch(app, vpn);
        if !self.allocated(app, vpn) {
            assert_eq!(result, Err(PlaceError::Unallocated { app, vpn }));
            return;
        }
        let touch = match result {
            Ok(touch) => touch,
            Err(PlaceError::OutOfMemory { .. }) if self.spec.demand_paging && before.is_none() => {
                return
            }
            Err(err) => panic!("touch of an allocated page failed: {err}"),
        };
        self.check_transfer(before, touch);
        self.touched.insert((app, vpn));
        let (chunk, off) = (vpn / PAGES_PER_LARGE, vpn % PAGES_PER_LARGE);
        if touch.mapping.large {
            self.large_view
                .insert((app, chunk), touch.mapping.pfn - off);
        } else {
            self.base_view.insert((app, vpn), touch.mapping.pfn);
        }
    }

    fn check_transfer(&self, before: Option<Mapping>, touch: Touch) {
        let Some(before) = before else {
            assert!(
                self.spec.demand_paging,
                "an allocated page was not resident"
            );
            let expected = match self.spec.kind {
                ManagerKind::LargeOnly => LARGE_BYTES,
                _ => BASE_BYTES,
            };
            assert_eq!(touch.transferred, expected);
            return;
        };
        assert_eq!((touch.mapping, touch.transferred), (before, 0));
    }

    fn free(&mut self, manager: &mut dyn MemoryManager, app: AppId, which: &Index, part: bool) {
        let Some(range) = self.pick(app, which) else {
            // Nothing allocated: freeing must be a harmless no-op.
            manager.free(app, 0, LIMIT * BASE_BYTES);
            return;
        };
        let live = &mut self.live[usize::from(app)];
        live.retain(|r| *r != range);
        let gone = if part && range.end - range.start > 1 {
            // Free the upper half; the lower half stays live.
            let mid = (range.start + range.end) / 2;
            live.push(range.start..mid);
            mid..range.end
        } else {
            range
        };
        manager.free(
            app,
            gone.start * BASE_BYTES,
            (gone.end - gone.start) * BASE_BYTES,
        );
        self.touched
            .retain(|&(a, vpn)| a != app || !gone.contains(&vpn));
    }

    fn drain(&mut self, manager: &mut dyn MemoryManager) {
        let mut out = Vec::new();
        manager.drain_invalidations(&mut out);
        self.flushed.clear();
        for inv in out {
            if inv.large {
                assert_eq!(inv.vpn % PAGES_PER_LARGE, 0);
                self.large_view
                    .remove(&(inv.app, inv.vpn / PAGES_PER_LARGE));
            } else {
                self.base_view.remove(&(inv.app, inv.vpn));
                self.flushed.insert((inv.app, inv.vpn));
            }
        }
    }

    /// Every resident page: (app, vpn) -> mapping.
    fn resident(&self, manager: &dyn MemoryManager) -> BTreeMap<(AppId, u64), Mapping> {
        let pages = (0..APPS).flat_map(|app| (0..LIMIT).map(move |vpn| (app, vpn)));
        pages
            .filter_map(|(app, vpn)| Some(((app, vpn), manager.lookup(app, vpn)?)))
            .collect()
    }

    fn check(&mut self, manager: &dyn MemoryManager) {
        let resident = self.resident(manager);
        self.check_pages(&resident);
        self.check_frames(manager, &resident);
        self.check_views(&resident);
        self.check_large(&resident);
        self.check_prefragmented(manager, &resident);
        self.placed = resident.iter().map(|(&page, m)| (page, m.pfn)).collect();
    }

    /// Allocated pages are resident when they must be, others are not; a page whose content
    /// moved had its base entry flushed.
    fn check_pages(&self, resident: &BTreeMap<(AppId, u64), Mapping>) {
        for app in 0..APPS {
            for vpn in 0..LIMIT {
                let here = resident.get(&(app, vpn));
                if !self.allocated(app, vpn) {
                    assert!(here.is_none(), "unallocated page {app}:{vpn} resident");
                } else if !self.spec.demand_paging || self.touched.contains(&(app, vpn)) {
                    assert!(here.is_some(), "page {app}:{vpn} lost");
                }
            }
        }
        for (page, mapping) in resident {
            if let Some(&was) = self.placed.get(page) {
                let moved = was != mapping.pfn;
                assert!(
                    !moved || self.flushed.contains(page),
                    "{page:?} moved unflushed"
                );
            }
        }
    }

    /// No two pages share a frame, frames exist, counts agree; CoCoA's soft guarantee.
    fn check_frames(
        &self,
        manager: &dyn MemoryManager,
        resident: &BTreeMap<(AppId, u64), Mapping>,
    ) {
        let frames = self.spec.memory_bytes / BASE_BYTES;
        let mut owner = BTreeMap::new();
        let mut apps_in_large_frame: BTreeMap<u64, BTreeSet<AppId>> = BTreeMap::new();
        for (&(app, vpn), mapping) in resident {
            assert!(mapping.pfn < frames);
            let previous = owner.insert(mapping.pfn, (app, vpn));
            assert!(
                previous.is_none(),
                "frame {} holds {previous:?} and {:?}",
                mapping.pfn,
                (app, vpn)
            );
            apps_in_large_frame
                .entry(mapping.pfn / PAGES_PER_LARGE)
                .or_default()
                .insert(app);
        }
        let stats = manager.stats();
        assert_eq!(stats.frames_used, resident.len() as u64);
        assert!(stats.frames_reserved >= stats.frames_used);
        assert!(stats.peak_frames_reserved >= stats.frames_reserved);
        assert!(stats.peak_pages_resident >= stats.frames_used);
        if matches!(self.spec.kind, ManagerKind::Mosaic | ManagerKind::LargeOnly) {
            if stats.prefragmented_frames == 0 {
                assert_eq!(stats.frames_reserved % PAGES_PER_LARGE, 0);
            }
            let shared = apps_in_large_frame
                .values()
                .filter(|apps| apps.len() > 1)
                .count();
            assert!(
                shared as u64 <= stats.shared_frames,
                "{shared} frames shared unannounced"
            );
        }
    }

    /// Whatever the TLBs may hold unflushed still translates correctly.
    fn check_views(&self, resident: &BTreeMap<(AppId, u64), Mapping>) {
        for (page, &pfn) in &self.base_view {
            let now = resident.get(page).map(|m| m.pfn);
            assert_eq!(
                now,
                Some(pfn),
                "cached base entry of {page:?} went stale unflushed"
            );
        }
        for (&(app, chunk), &first) in &self.large_view {
            for off in 0..PAGES_PER_LARGE {
                if let Some(mapping) = resident.get(&(app, chunk * PAGES_PER_LARGE + off)) {
                    assert_eq!(mapping.pfn, first + off, "cached large entry went stale");
                }
            }
        }
    }

    /// Pre-fragmented base frames: as many as at the start, distinct, in whole large frames
    /// of memory, holding no application's page; only Mosaic (CAC) moves them.
    fn check_prefragmented(
        &self,
        manager: &dyn MemoryManager,
        resident: &BTreeMap<(AppId, u64), Mapping>,
    ) {
        let now = manager.prefragmented();
        assert_eq!(now.len(), self.prefragmented.len(), "pre-fragmented data lost");
        assert_eq!(manager.stats().prefragmented_frames, now.len() as u64);
        assert!(now.windows(2).all(|w| w[0] < w[1]), "pre-fragmented frames duplicated");
        let large_frames = self.spec.memory_bytes / LARGE_BYTES;
        assert!(now.iter().all(|&pfn| pfn < large_frames * PAGES_PER_LARGE));
        for (page, mapping) in resident {
            assert!(
                now.binary_search(&mapping.pfn).is_err(),
                "{page:?} placed on pre-fragmented frame {}",
                mapping.pfn
            );
        }
        if self.spec.kind != ManagerKind::Mosaic {
            assert_eq!(now, self.prefragmented, "pre-fragmented data moved");
        }
    }

    /// Large mappings are 512 aligned frames in page order (all 512 resident under Mosaic).
    fn check_large(&self, resident: &BTreeMap<(AppId, u64), Mapping>) {
        for (&(app, vpn), mapping) in resident.iter().filter(|(_, m)| m.large) {
            assert!(matches!(
                self.spec.kind,
                ManagerKind::Mosaic | ManagerKind::LargeOnly
            ));
            let (chunk, off) = (vpn / PAGES_PER_LARGE, vpn % PAGES_PER_LARGE);
            let first = mapping.pfn - off;
            assert_eq!(first % PAGES_PER_LARGE, 0);
            let must_be_full = self.spec.kind == ManagerKind::Mosaic;
            for other in 0..PAGES_PER_LARGE {
                match resident.get(&(app, chunk * PAGES_PER_LARGE + other)) {
                    Some(m) => assert_eq!(
                        *m,
                        Mapping {
                            pfn: first + other,
                            large: true
                        }
                    ),
                    None => assert!(!must_be_full, "coalesced chunk {app}:{chunk} not full"),
                }
            }
        }
    }
}

fn run(spec: ManagerSpec, ops: &[Op]) {
    let mut manager = build(&spec, usize::from(APPS));
    assert_eq!(manager.ideal(), spec.kind == ManagerKind::Ideal);
    let mut model = Model::new(spec);
    model.prefragmented = manager.prefragmented();
    let large_frames = model.spec.memory_bytes / LARGE_BYTES;
    let expected = (model.spec.fragmentation_index * large_frames as f64).round()
        * (model.spec.frame_occupancy * PAGES_PER_LARGE as f64).round();
    assert_eq!(model.prefragmented.len() as u64, expected as u64);
    for op in ops {
        model.run(manager.as_mut(), op);
        model.check(manager.as_ref());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_policy_keeps_the_reference_model(
        spec in spec(),
        ops in prop::collection::vec(op(), 1..40),
    ) {
        run(spec, &ops);
    }

    #[test]
    fn mosaic_under_pressure_keeps_the_reference_model(
        spec in mosaic_under_pressure(),
        ops in prop::collection::vec(op(), 1..60),
    ) {
        run(spec, &ops);
    }

    #[test]
    fn mosaic_moving_prefragmented_data_keeps_the_reference_model(
        spec in mosaic_prefragmented(),
        ops in prop::collection::vec(op(), 1..60),
    ) {
        run(spec, &ops);
    }

    #[test]
    fn a_fragmentation_index_of_0_ignores_occupancy_and_seed(
        spec in spec(),
        frame_occupancy in 0.0..=1.0f64,
        prefragment_seed in any::<u64>(),
        ops in prop::collection::vec(op(), 1..40),
    ) {
        let plain = ManagerSpec { fragmentation_index: 0.0, ..spec };
        let other = ManagerSpec { frame_occupancy, prefragment_seed, ..plain.clone() };
        let (mut a, mut b) = (build(&plain, usize::from(APPS)), build(&other, usize::from(APPS)));
        let (mut model_a, mut model_b) = (Model::new(plain), Model::new(other));
        for op in &ops {
            model_a.run(a.as_mut(), op);
            model_b.run(b.as_mut(), op);
            prop_assert_eq!(a.stats(), b.stats());
            prop_assert_eq!(model_a.resident(a.as_ref()), model_b.resident(b.as_ref()));
        }
    }
}

#[test]
fn build_names_every_policy() {
    for (kind, name) in [
        (ManagerKind::GpuMmu, "gpu-mmu"),
        (ManagerKind::LargeOnly, "large-only"),
        (ManagerKind::Mosaic, "mosaic"),
        (ManagerKind::Ideal, "ideal"),
    ] {
        let spec = ManagerSpec {
            kind,
            ..ManagerSpec::default()
        };
        assert_eq!(build(&spec, 1).name(), name);
        let json = serde_json::to_string(&kind).unwrap();
        assert_eq!(json, format!("\"{name}\""));
    }
}

#[test]
fn spec_defaults_and_strictness() {
    let spec: ManagerSpec = toml::from_str("kind = \"gpu-mmu\"\ndemand-paging = true").unwrap();
    assert_eq!(spec.kind, ManagerKind::GpuMmu);
    assert!(spec.demand_paging);
    assert_eq!(spec.memory_bytes, 3 << 30);
    assert_eq!(
        (spec.cac, spec.cac_threshold, spec.emergency_frames),
        (true, 0.5, 8)
    );
    assert!(toml::from_str::<ManagerSpec>("cac-treshold = 0.4").is_err());
    let json = serde_json::to_string(&ManagerSpec::default()).unwrap();
    assert_eq!(
        serde_json::from_str::<ManagerSpec>(&json).unwrap(),
        ManagerSpec::default()
    );
    let schema = serde_json::to_string(&schemars::schema_for!(ManagerSpec)).unwrap();
    assert!(schema.contains("large-only") && schema.contains("emergency-frames"));
}

#[test]
fn bloat_is_the_extra_over_base_pages() {
    let stats = ManagerStats {
        peak_frames_reserved: 150,
        peak_pages_resident: 100,
        ..ManagerStats::default()
    };
    assert_eq!(stats.bloat(), 0.5);
    assert_eq!(ManagerStats::default().bloat(), 0.0);
}

#[test]
fn touching_an_unallocated_page_fails_for_every_policy() {
    for kind in [
        ManagerKind::GpuMmu,
        ManagerKind::LargeOnly,
        ManagerKind::Mosaic,
        ManagerKind::Ideal,
    ] {
        let mut manager = build(
            &ManagerSpec {
                kind,
                ..ManagerSpec::default()
            },
            1,
        );
        manager.allocate(0, 0, 100).unwrap();
        assert!(manager.touch(0, 0).is_ok());
        assert_eq!(
            manager.touch(0, 1),
            Err(PlaceError::Unallocated { app: 0, vpn: 1 })
        );
        assert_eq!(
            manager.touch(7, 0),
            Err(PlaceError::Unallocated { app: 7, vpn: 0 })
        );
        assert_eq!(manager.lookup(7, 0), None);
        // An application id beyond those built for is served.
        manager.allocate(7, 0, 4096).unwrap();
        assert!(manager.touch(7, 0).is_ok());
    }
}

#[test]
fn every_policy_prefragments_half_of_8_frames_at_a_quarter_as_4_frames_of_128() {
    for kind in [
        ManagerKind::GpuMmu,
        ManagerKind::LargeOnly,
        ManagerKind::Mosaic,
        ManagerKind::Ideal,
    ] {
        let spec = ManagerSpec {
            kind,
            memory_bytes: 8 * LARGE_BYTES,
            fragmentation_index: 0.5,
            frame_occupancy: 0.25,
            ..ManagerSpec::default()
        };
        let manager = build(&spec, 1);
        let mut per_frame: BTreeMap<u64, u64> = BTreeMap::new();
        for pfn in manager.prefragmented() {
            *per_frame.entry(pfn / PAGES_PER_LARGE).or_default() += 1;
        }
        assert_eq!(per_frame.values().collect::<Vec<_>>(), vec![&128; 4], "{kind:?}");
        let stats = manager.stats();
        assert_eq!((stats.prefragmented_frames, stats.frames_reserved), (512, 0));
        assert_eq!(spec.prefragmented_bytes(), 512 * BASE_BYTES);
    }
}

proptest! {
    /// The count validation uses is what a manager places, at any index and occupancy.
    #[test]
    fn prefragmented_bytes_counts_what_is_placed(frames in 1u64..64, index in 0.0f64..=1.0, occupancy in 0.0f64..=1.0) {
        let spec = ManagerSpec { kind: ManagerKind::GpuMmu, memory_bytes: frames * LARGE_BYTES, fragmentation_index: index, frame_occupancy: occupancy, ..ManagerSpec::default() };
        prop_assert_eq!(spec.prefragmented_bytes(), build(&spec, 1).prefragmented().len() as u64 * BASE_BYTES);
    }
}

#[test]
fn large_pages_cannot_use_a_prefragmented_frame() {
    let spec = |fragmentation_index| ManagerSpec {
        kind: ManagerKind::LargeOnly,
        memory_bytes: 4 * LARGE_BYTES,
        fragmentation_index,
        frame_occupancy: 0.01,
        ..ManagerSpec::default()
    };
    let mut clean = build(&spec(0.0), 1);
    assert!(clean.allocate(0, 0, 4 * LARGE_BYTES).is_ok());
    // 5 base frames in each of 2 frames leave room for 2 large pages, not 3.
    let mut fragmented = build(&spec(0.5), 1);
    assert!(fragmented.allocate(0, 0, 2 * LARGE_BYTES).is_ok());
    assert!(fragmented.allocate(0, 2 * LARGE_BYTES, 4096).is_err());
}
