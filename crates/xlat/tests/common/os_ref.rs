//! A deliberately naive reference model of the OS of `xlat::os`: demand paging of 4 KiB
//! pages over one placement policy, with eviction to swap, written for obviousness, not speed.
//!
//! * The page table is a `BTreeMap` from (ASID, VPN) to (frame, CPFN); the frames are a
//!   `BTreeMap` from frame number to the resident page and its last use; the pages swapped
//!   out are a `BTreeSet`. Every search (the oldest page, a yard's free slot, the live pages
//!   of a backyard) is a linear scan.
//! * Time is a plain counter, the OS's clock: one tick per use reported by the machine (one
//!   per page a reference touches). A page placed by a fault takes the clock as its last
//!   use. Under `recency = "access"` every reported use sets the page's last use to the
//!   clock just ticked; under `recency = "fill"` the walks of the machine's first TLB do
//!   (with the clock as it stands: the reference's use has not ticked yet), and the uses
//!   only tick.
//! * Placement: `sequential` (the lowest never-used frame, else the frame freed last),
//!   `set-associative` (the `ways` contiguous frames of set VPN mod sets, the lowest free
//!   one), `iceberg` (the front yard's first free slot, else its oldest ghost; else the
//!   least-loaded backyard, ghosts not counted, the first such choice, its first free slot
//!   or oldest ghost). Which frames are a page's iceberg candidates and their CPFN codes come
//!   from the public geometry (`placement::candidates`, `Layout::encode`); every decision is
//!   this model's.
//! * Eviction: `none` (a fault with no frame is an error: out of memory when every frame is
//!   in use and the placement is not set-associative, else an associativity conflict);
//!   `lru` (the oldest page of the whole memory once it is full, for `sequential`; the
//!   oldest of the page's candidates when all of them hold pages, for the others);
//!   `horizon-lru` (ghosts are the pages last used before the horizon, the highest last use
//!   of any page evicted); `iceberg-lru` (before placing, the oldest pages of the memory go
//!   while `frames - floor(delta * frames)` pages or more are resident: "delta of memory left
//!   unused" rounded down to whole frames, as the engine rounds it; the documentation's "at
//!   most 1 - delta of memory resident" read strictly would keep one page fewer whenever
//!   `delta * frames` is not whole); `lazy-iceberg-lru` (before placing, the oldest unmarked pages
//!   are marked while that many pages or more are unmarked; marked pages are the ghosts, and
//!   a recorded use unmarks its page). A placement that finds every candidate live is a
//!   conflict, and the oldest candidate goes (the first in candidate order among equals).
//!   Every eviction writes its page to swap and leaves it for a shootdown.
//! * Counters: the fields of `OsStats` this subset can change, with the same meanings:
//!   walks, faults, swap-ins and -outs, evictions, shootdowns, ghost evictions, conflicts,
//!   the utilization at the first conflict that left free frames elsewhere, the
//!   time-averaged utilization from the first eviction (integrated over the clock, every
//!   change of the frames in use a step), the most pages swapped out at once, the footprint.
//!
//! Not modelled (each has its own tests): `random` placement, `linux` reclaim, the swap
//! cache and its copy-on-write, swap readahead (`page_cluster`), a bounded swap area,
//! accessed-bit scans (`recency = "scan"`), the eviction-age metric, pages larger than
//! 4 KiB, and iceberg `tie_break = "random"` (a private hash of the key chooses). The model
//! panics on a specification that asks for any of them.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use xlat::hash::page_key;
use xlat::os::eviction::EvictionSpec;
use xlat::os::iceberg::placement::candidates;
use xlat::os::iceberg::{Layout, Slot, TieBreak};
use xlat::os::{OsSpec, OsStats, PlacementSpec, Recency};
use xlat::{Asid, PageSize, Vpn};

/// Bytes of a page.
const PAGE: u64 = 4096;

/// Why a fault found no frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefNoFrame {
    /// Every frame is in use.
    Full,
    /// Every frame the page may use holds a live page.
    Conflict,
}

/// A fault that found no frame: the address walked and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefOom {
    /// Address space of the walk.
    pub asid: Asid,
    /// The address walked.
    pub vaddr: u64,
    /// Why no frame was found.
    pub reason: RefNoFrame,
}

/// Where a page may go.
enum Where {
    Sequential,
    Sets { ways: u64 },
    Iceberg(Layout),
}

/// Which page goes when a page needs room.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Evict {
    Never,
    Lru,
    Horizon,
    IcebergLru { limit: u64 },
    LazyIcebergLru { limit: u64 },
}

/// A page in a frame.
#[derive(Clone, Copy, Debug)]
struct Resident {
    asid: Asid,
    vpn: u64,
    last_use: u64,
    /// Marked evictable (lazy Iceberg LRU).
    marked: bool,
}

/// The naive OS.
pub struct RefOs {
    memory: u64,
    capacity: u64,
    placement: Where,
    eviction: Evict,
    /// Every reported use records the page's use (`recency = "access"`); else the first
    /// TLB's walks do.
    on_access: bool,
    frames: BTreeMap<u64, Resident>,
    /// (ASID, VPN) to (frame, CPFN).
    mapped: BTreeMap<(Asid, u64), (u64, u8)>,
    swapped: BTreeSet<(Asid, u64)>,
    /// Sequential placement: frames never used are those from here on.
    never_used: u64,
    /// Sequential placement: frames freed, the last freed at the end.
    freed: Vec<u64>,
    clock: u64,
    horizon: u64,
    shootdowns: Vec<(Asid, u64)>,
    /// (clock, frames in use after it) at every change of the frames in use.
    occupancy: Vec<(u64, u64)>,
    first_eviction: Option<u64>,
    most_swapped: u64,
    stats: OsStats,
}

/// The frames kept resident when `delta` of `frames` is left unused, in whole frames.
fn resident_limit(frames: u64, delta: f64) -> u64 {
    frames - (frames as f64 * delta).floor() as u64
}

impl RefOs {
    /// The OS of `spec`, nothing mapped; panics on what the model leaves out.
    pub fn new(spec: &OsSpec) -> RefOs {
        assert_eq!(spec.page_size, PageSize::Size4K, "reference: 4 KiB pages only");
        assert!(!spec.swap_cache && spec.page_cluster == 0 && !spec.swap_cache_cow, "reference: no swap cache");
        assert!(spec.swap_slots.is_none() && spec.age_window.is_none(), "reference: unbounded swap, no age metric");
        let capacity = spec.memory / PAGE;
        let placement = match spec.placement {
            PlacementSpec::Sequential => Where::Sequential,
            PlacementSpec::SetAssociative { ways } => Where::Sets { ways },
            PlacementSpec::Iceberg(iceberg) => {
                assert_eq!(iceberg.tie_break, TieBreak::First, "reference: backyard ties go to the first choice");
                Where::Iceberg(Layout::new(iceberg, capacity))
            }
            PlacementSpec::Random => panic!("reference: no random placement"),
        };
        let eviction = match spec.eviction {
            EvictionSpec::None(_) => Evict::Never,
            EvictionSpec::Lru(_) => Evict::Lru,
            EvictionSpec::HorizonLru(_) => Evict::Horizon,
            EvictionSpec::IcebergLru(p) => Evict::IcebergLru { limit: resident_limit(capacity, p.delta) },
            EvictionSpec::LazyIcebergLru(p) => Evict::LazyIcebergLru { limit: resident_limit(capacity, p.delta) },
            EvictionSpec::Linux(_) => panic!("reference: no Linux-like reclaim"),
        };
        let on_access = match spec.recency {
            Recency::Access => true,
            Recency::Fill => false,
            Recency::Scan { .. } => panic!("reference: no accessed-bit scans"),
        };
        RefOs {
            memory: spec.memory,
            capacity,
            placement,
            eviction,
            on_access,
            frames: BTreeMap::new(),
            mapped: BTreeMap::new(),
            swapped: BTreeSet::new(),
            never_used: 0,
            freed: Vec::new(),
            clock: 0,
            horizon: 0,
            shootdowns: Vec::new(),
            occupancy: Vec::new(),
            first_eviction: None,
            most_swapped: 0,
            stats: OsStats::default(),
        }
    }

    /// True when the machine must report every use ([`RefOs::access`]): the OS evicts.
    pub fn tracks_use(&self) -> bool {
        self.eviction != Evict::Never
    }

    /// The iceberg layout's unmapped CPFN (the code of no frame), or `u8::MAX` elsewhere.
    pub fn unmapped_code(&self) -> u8 {
        match &self.placement {
            Where::Iceberg(layout) => layout.unmapped(),
            _ => u8::MAX,
        }
    }

    /// The frame of page `vpn` of `asid`, if mapped.
    pub fn frame(&self, asid: Asid, vpn: u64) -> Option<u64> {
        self.mapped.get(&(asid, vpn)).map(|&(frame, _)| frame)
    }

    /// The CPFN of page `vpn` of `asid`, if mapped.
    pub fn cpfn(&self, asid: Asid, vpn: u64) -> Option<u8> {
        self.mapped.get(&(asid, vpn)).map(|&(_, cpfn)| cpfn)
    }

    /// A page-table walk of `vaddr` by a TLB (the machine's first TLB if `first_tlb`):
    /// counts it, maps the page if it is not mapped, records a use if the first TLB's walks
    /// are the uses; the page's frame.
    pub fn walk(&mut self, asid: Asid, vaddr: u64, first_tlb: bool) -> Result<u64, RefOom> {
        let vpn = vaddr / PAGE;
        let frame = match self.frame(asid, vpn) {
            Some(frame) => {
                if first_tlb && !self.on_access && self.tracks_use() {
                    self.record_use(frame);
                }
                frame
            }
            None => self.fault(asid, vpn).map_err(|reason| RefOom { asid, vaddr, reason })?,
        };
        self.stats.walks += 1;
        Ok(frame)
    }

    /// One use of page `vpn` of `asid` (mapped), reported by the machine for every page a
    /// reference touches when the OS tracks use.
    pub fn access(&mut self, asid: Asid, vpn: u64) {
        self.clock += 1;
        if self.on_access {
            let frame = self.frame(asid, vpn).expect("a page in use is mapped");
            self.record_use(frame);
        }
    }

    /// The pages evicted since the last call, for a shootdown in every TLB.
    pub fn take_shootdowns(&mut self) -> Vec<(Asid, u64)> {
        std::mem::take(&mut self.shootdowns)
    }

    /// The page in `frame` is used now.
    fn record_use(&mut self, frame: u64) {
        let page = self.frames.get_mut(&frame).expect("a used page is resident");
        page.last_use = self.clock;
        page.marked = false;
    }

    /// Maps page `vpn` of `asid`, which is not mapped: its new frame.
    fn fault(&mut self, asid: Asid, vpn: u64) -> Result<u64, RefNoFrame> {
        let (frame, cpfn) = self.choose_frame(asid, vpn)?;
        self.change_occupancy(1);
        self.frames.insert(frame, Resident { asid, vpn, last_use: self.clock, marked: false });
        self.mapped.insert((asid, vpn), (frame, cpfn));
        self.stats.page_faults += 1;
        if self.swapped.remove(&(asid, vpn)) {
            self.stats.swap_ins += 1;
        } else {
            self.stats.footprint_bytes += PAGE;
        }
        Ok(frame)
    }

    /// A frame for the page and its CPFN, evicting what the policy says.
    fn choose_frame(&mut self, asid: Asid, vpn: u64) -> Result<(u64, u8), RefNoFrame> {
        match self.placement {
            Where::Sequential => self.sequential_frame().map(|frame| (frame, 0)),
            Where::Sets { ways } => self.set_frame(vpn, ways).map(|frame| (frame, 0)),
            Where::Iceberg(_) => self.iceberg_frame(asid, vpn),
        }
    }

    /// Sequential placement: the frame freed last, else the lowest never used; under `lru`
    /// the oldest page of a full memory goes first.
    fn sequential_frame(&mut self) -> Result<u64, RefNoFrame> {
        if self.frames.len() as u64 == self.capacity {
            if self.eviction == Evict::Never {
                return Err(RefNoFrame::Full);
            }
            let victim = self.oldest(self.frames.keys().copied());
            self.evict(victim);
        }
        if let Some(frame) = self.freed.pop() {
            return Ok(frame);
        }
        self.never_used += 1;
        Ok(self.never_used - 1)
    }

    /// Set-associative placement: the lowest free frame of the page's set, else its oldest
    /// page goes.
    fn set_frame(&mut self, vpn: u64, ways: u64) -> Result<u64, RefNoFrame> {
        let set = vpn % (self.capacity / ways);
        let frames: Vec<u64> = (set * ways..(set + 1) * ways).collect();
        if let Some(&free) = frames.iter().find(|f| !self.frames.contains_key(f)) {
            return Ok(free);
        }
        self.conflict()?;
        let victim = self.oldest(frames.into_iter());
        self.evict(victim);
        Ok(victim)
    }

    /// Iceberg placement: the policy's room first, then a free slot or a ghost's of the
    /// page's candidates, else (a conflict) the oldest candidate's.
    fn iceberg_frame(&mut self, asid: Asid, vpn: u64) -> Result<(u64, u8), RefNoFrame> {
        self.make_room()?;
        let Where::Iceberg(layout) = &self.placement else { unreachable!("iceberg placement") };
        let all: Vec<(Slot, u64)> = candidates(layout, page_key(asid, Vpn(vpn))).collect();
        let (slot, frame) = match self.place(&all) {
            Some(found) => found,
            None => {
                self.conflict()?;
                let mut oldest = all[0];
                for &(slot, frame) in &all[1..] {
                    if self.frames[&frame].last_use < self.frames[&oldest.1].last_use {
                        oldest = (slot, frame);
                    }
                }
                oldest
            }
        };
        if self.frames.contains_key(&frame) {
            if self.is_ghost(frame) {
                self.stats.ghost_evictions += 1;
            }
            self.evict(frame);
        }
        let Where::Iceberg(layout) = &self.placement else { unreachable!("iceberg placement") };
        Ok((frame, layout.encode(slot)))
    }

    /// What the policy does before an iceberg placement: a full memory is an error without
    /// eviction; Iceberg LRU evicts, and its lazy variant marks, the oldest pages beyond its
    /// limit.
    fn make_room(&mut self) -> Result<(), RefNoFrame> {
        match self.eviction {
            Evict::Never if self.frames.len() as u64 == self.capacity => Err(RefNoFrame::Full),
            Evict::IcebergLru { limit } => {
                while self.frames.len() as u64 >= limit {
                    let victim = self.oldest(self.frames.keys().copied());
                    self.evict(victim);
                }
                Ok(())
            }
            Evict::LazyIcebergLru { limit } => {
                loop {
                    let unmarked: Vec<u64> = self.frames.iter().filter(|(_, p)| !p.marked).map(|(&f, _)| f).collect();
                    if unmarked.is_empty() || (unmarked.len() as u64) < limit {
                        return Ok(());
                    }
                    let oldest = self.oldest(unmarked.into_iter());
                    self.frames.get_mut(&oldest).expect("resident").marked = true;
                }
            }
            _ => Ok(()),
        }
    }

    /// The iceberg slot for a page whose candidates are `all` (front yard first), or `None`
    /// when every candidate is live.
    fn place(&self, all: &[(Slot, u64)]) -> Option<(Slot, u64)> {
        let front: Vec<(Slot, u64)> = all.iter().copied().filter(|(s, _)| matches!(s, Slot::Front(_))).collect();
        if let Some(found) = self.free_or_oldest_ghost(&front) {
            return Some(found);
        }
        let Where::Iceberg(layout) = &self.placement else { unreachable!("iceberg placement") };
        let spec = *layout.spec();
        let mut best: Option<(Vec<(Slot, u64)>, usize)> = None;
        for choice in 1..=spec.choices {
            let yard: Vec<(Slot, u64)> = all.iter().copied().filter(|(s, _)| matches!(s, Slot::Back { choice: c, .. } if *c == choice)).collect();
            let load = yard.iter().filter(|(_, f)| self.is_live(*f)).count();
            let better = best.as_ref().is_none_or(|(_, least)| load < *least);
            if load < spec.back as usize && better {
                best = Some((yard, load));
            }
        }
        self.free_or_oldest_ghost(&best?.0)
    }

    /// The first free slot of `yard`, else its oldest ghost (the lowest frame among equals).
    fn free_or_oldest_ghost(&self, yard: &[(Slot, u64)]) -> Option<(Slot, u64)> {
        if let Some(&free) = yard.iter().find(|(_, f)| !self.frames.contains_key(f)) {
            return Some(free);
        }
        yard.iter().copied().filter(|(_, f)| self.is_ghost(*f)).min_by_key(|(_, f)| (self.frames[f].last_use, *f))
    }

    /// Whether `frame` holds a ghost: a page placement may take the frame of.
    fn is_ghost(&self, frame: u64) -> bool {
        let Some(page) = self.frames.get(&frame) else { return false };
        match self.eviction {
            Evict::Horizon => page.last_use < self.horizon,
            Evict::LazyIcebergLru { .. } => page.marked,
            _ => false,
        }
    }

    /// Whether `frame` holds a live page: resident and not a ghost.
    fn is_live(&self, frame: u64) -> bool {
        self.frames.contains_key(&frame) && !self.is_ghost(frame)
    }

    /// The frame of the least recently used page among `frames` (all occupied; the first
    /// among equals).
    fn oldest(&self, frames: impl Iterator<Item = u64>) -> u64 {
        let mut oldest: Option<u64> = None;
        for frame in frames {
            if oldest.is_none_or(|o| self.frames[&frame].last_use < self.frames[&o].last_use) {
                oldest = Some(frame);
            }
        }
        oldest.expect("some page is resident")
    }

    /// Counts a conflict; an error when the OS does not evict.
    fn conflict(&mut self) -> Result<(), RefNoFrame> {
        self.stats.conflicts += 1;
        let used = self.frames.len() as u64;
        if self.stats.first_conflict_utilization.is_none() && used < self.capacity {
            self.stats.first_conflict_utilization = Some(used as f64 / self.capacity as f64);
        }
        if self.eviction == Evict::Never {
            return Err(RefNoFrame::Conflict);
        }
        Ok(())
    }

    /// Writes the page in `frame` to swap and unmaps it, leaving it for a shootdown.
    fn evict(&mut self, frame: u64) {
        if self.first_eviction.is_none() {
            self.first_eviction = Some(self.clock);
        }
        self.change_occupancy(-1);
        let page = self.frames.remove(&frame).expect("an evicted frame holds a page");
        self.mapped.remove(&(page.asid, page.vpn));
        self.swapped.insert((page.asid, page.vpn));
        self.most_swapped = self.most_swapped.max(self.swapped.len() as u64);
        self.shootdowns.push((page.asid, page.vpn));
        self.horizon = self.horizon.max(page.last_use);
        if let Where::Sequential = self.placement {
            self.freed.push(frame);
        }
        self.stats.evictions += 1;
        self.stats.swap_outs += 1;
        self.stats.shootdowns += 1;
    }

    /// Logs a change of the frames in use by `by`, at the current time.
    fn change_occupancy(&mut self, by: i64) {
        let used = self.frames.len() as i64 + by;
        self.occupancy.push((self.clock, used as u64));
    }

    /// Frames in use, averaged over the clock from the first eviction to now.
    fn steady_state_utilization(&self) -> Option<f64> {
        let start = self.first_eviction?;
        if self.clock == start {
            return Some(self.frames.len() as f64 / self.capacity as f64);
        }
        // Tick by tick, the frames in use after every change made at or before the tick.
        let (mut area, mut used): (u128, u64) = (0, 0);
        let mut changes = self.occupancy.iter().peekable();
        for t in start..self.clock {
            while let Some(&(_, after)) = changes.next_if(|&&(at, _)| at <= t) {
                used = after;
            }
            area += u128::from(used);
        }
        Some(area as f64 / (u128::from(self.clock - start) * u128::from(self.capacity)) as f64)
    }

    /// The counters so far.
    pub fn stats(&self) -> OsStats {
        let mut stats = self.stats.clone();
        stats.steady_state_utilization = self.steady_state_utilization();
        stats.memory_bytes = self.memory;
        stats.swap_io_bytes = (stats.swap_ins + stats.swap_outs) * PAGE;
        stats.peak_swap_bytes = self.most_swapped * PAGE;
        stats.mapped_pages = self.mapped.len() as u64;
        stats
    }
}
