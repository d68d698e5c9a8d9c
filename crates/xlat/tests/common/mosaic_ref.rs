//! A deliberately naive reference model of `xlat::tlb::MosaicTlb`, written for obviousness,
//! not speed.
//!
//! * A set is a `Vec<Option<Entry>>` of ways; every search is a linear scan comparing ASID and
//!   Mosaic page number. The Mosaic page number and sub-page are `vpn / arity` and
//!   `vpn % arity` (division, not shifts and masks).
//! * An entry's ToC is a `Vec<Option<u8>>`: `None` is an invalid sub-page (no separate valid
//!   bits to keep in step).
//! * LRU keeps a per-entry "last used" clock value and evicts the minimum; FIFO a per-entry
//!   "inserted" clock value. Tree-PLRU is the explicit tree of `tlb_ref::PlruNode`.
//! * Random draws `random_range(0..ways)` from its own `Xoshiro256PlusPlus::seed_from_u64(seed)`,
//!   once per eviction from a full set, as the model does (the generator and the draw are the
//!   specification, so this one piece cannot be independent).
//!
//! The semantics, from the model's documentation:
//! * A lookup that finds the tag is an access to the entry (LRU and PLRU update), whether the
//!   sub-page is valid (hit) or not (sub-miss).
//! * A fill of a present tag replaces the ToC and nothing else: no eviction, no policy update
//!   (FIFO keeps the entry's age). A fill of an absent tag takes the lowest empty way without
//!   consulting the policy, else evicts the policy's victim.
//! * Invalidating a page clears its ToC slot only; the entry stays, even with no valid slot.

#![allow(dead_code)]

use super::tlb_ref::PlruNode;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use xlat::tlb::{MosaicCounters, MosaicGeometry, MosaicLookup, Policy};
use xlat::Asid;

#[derive(Clone, Debug)]
struct Entry {
    asid: Asid,
    mosaic_page: u64,
    toc: Vec<Option<u8>>,
    last_use: u64,
    inserted: u64,
}

/// Reference for `MosaicTlb`.
#[derive(Clone, Debug)]
pub struct RefMosaic {
    pub entries: usize,
    pub ways: usize,
    pub arity: u64,
    pub policy: Policy,
    unmapped: u8,
    sets: Vec<Vec<Option<Entry>>>,
    plru: Vec<PlruNode>,
    rng: Xoshiro256PlusPlus,
    clock: u64,
    hits: u64,
    misses: u64,
    sub_misses: u64,
}

impl RefMosaic {
    pub fn new(g: &MosaicGeometry, unmapped: u8, seed: u64) -> RefMosaic {
        let nsets = g.entries / g.ways;
        RefMosaic {
            entries: g.entries,
            ways: g.ways,
            arity: u64::from(g.arity),
            policy: g.policy,
            unmapped,
            sets: vec![vec![None; g.ways]; nsets],
            plru: (0..nsets).map(|_| PlruNode::build(0, g.ways.next_power_of_two(), g.ways)).collect(),
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            clock: 0,
            hits: 0,
            misses: 0,
            sub_misses: 0,
        }
    }

    fn set_of(&self, mosaic_page: u64) -> usize {
        (mosaic_page % self.sets.len() as u64) as usize
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// (set, way) of the entry of `asid` for the Mosaic page holding `vpn`, if present.
    fn find(&self, asid: Asid, vpn: u64) -> Option<(usize, usize)> {
        let page = vpn / self.arity;
        let set = self.set_of(page);
        for (way, slot) in self.sets[set].iter().enumerate() {
            if let Some(e) = slot {
                if e.asid == asid && e.mosaic_page == page {
                    return Some((set, way));
                }
            }
        }
        None
    }

    pub fn lookup(&mut self, asid: Asid, vpn: u64) -> MosaicLookup {
        let Some((set, way)) = self.find(asid, vpn) else {
            self.misses += 1;
            return MosaicLookup::Miss;
        };
        let now = self.tick();
        let sub = (vpn % self.arity) as usize;
        let entry = self.sets[set][way].as_mut().unwrap();
        entry.last_use = now; // FIFO ignores last_use
        let code = entry.toc[sub];
        if self.policy == Policy::TreePlru {
            self.plru[set].point_away(way);
        }
        match code {
            Some(c) => {
                self.hits += 1;
                MosaicLookup::Hit(c)
            }
            None => {
                self.sub_misses += 1;
                MosaicLookup::SubMiss
            }
        }
    }

    pub fn fill(&mut self, asid: Asid, vpn: u64, codes: &[u8]) {
        assert_eq!(codes.len() as u64, self.arity, "reference: ToC of the wrong length");
        let toc: Vec<Option<u8>> = codes.iter().map(|&c| if c == self.unmapped { None } else { Some(c) }).collect();
        if let Some((set, way)) = self.find(asid, vpn) {
            self.sets[set][way].as_mut().unwrap().toc = toc;
            return;
        }
        let page = vpn / self.arity;
        let set = self.set_of(page);
        let free = self.sets[set].iter().position(|s| s.is_none());
        let way = match free {
            Some(w) => w,
            None => match self.policy {
                Policy::Lru => self.argmin(set, |e| e.last_use),
                Policy::Fifo => self.argmin(set, |e| e.inserted),
                Policy::TreePlru => self.plru[set].victim(),
                Policy::Random => self.rng.random_range(0..self.ways),
            },
        };
        let now = self.tick();
        self.sets[set][way] = Some(Entry { asid, mosaic_page: page, toc, last_use: now, inserted: now });
        if self.policy == Policy::TreePlru {
            self.plru[set].point_away(way);
        }
    }

    fn argmin(&self, set: usize, key: impl Fn(&Entry) -> u64) -> usize {
        let mut best = 0;
        for way in 0..self.ways {
            if key(self.sets[set][way].as_ref().unwrap()) < key(self.sets[set][best].as_ref().unwrap()) {
                best = way;
            }
        }
        best
    }

    pub fn invalidate_page(&mut self, asid: Asid, vpn: u64) -> bool {
        let Some((set, way)) = self.find(asid, vpn) else {
            return false;
        };
        let sub = (vpn % self.arity) as usize;
        self.sets[set][way].as_mut().unwrap().toc[sub].take().is_some()
    }

    pub fn counters(&self) -> MosaicCounters {
        MosaicCounters {
            accesses: self.hits + self.misses + self.sub_misses,
            hits: self.hits,
            misses: self.misses + self.sub_misses,
            tag_misses: self.misses,
            sub_misses: self.sub_misses,
        }
    }

    pub fn occupancy(&self) -> usize {
        self.sets.iter().flatten().filter(|s| s.is_some()).count()
    }

    /// Structural invariants of the reference itself.
    pub fn check_invariants(&self) {
        assert!(self.occupancy() <= self.entries);
        for (i, set) in self.sets.iter().enumerate() {
            assert_eq!(set.len(), self.ways);
            let held: Vec<&Entry> = set.iter().flatten().collect();
            for (a, ea) in held.iter().enumerate() {
                assert_eq!(self.set_of(ea.mosaic_page), i, "entry in the wrong set");
                assert_eq!(ea.toc.len() as u64, self.arity);
                assert!(ea.toc.iter().flatten().all(|&c| c != self.unmapped), "unmapped code held as valid");
                for eb in &held[a + 1..] {
                    let same = ea.asid == eb.asid && ea.mosaic_page == eb.mosaic_page;
                    assert!(!same, "set {i} holds Mosaic page {} of ASID {} twice", ea.mosaic_page, ea.asid);
                }
            }
        }
    }
}
