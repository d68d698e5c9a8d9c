//! A deliberately naive reference model of a whole `xlat::sim::Machine`: the conventional
//! TLB hierarchy of `tlb_ref` (if any), the Mosaic TLBs of `mosaic_ref` (any number) and the
//! OS of `os_ref`, consuming references one at a time.
//!
//! Every page a reference touches (every 4 KiB page its bytes cover) is translated in turn:
//! 1. The conventional hierarchy looks it up; on a miss in every level it walks (a fault may
//!    evict), fills the levels that missed, then shoots the evicted pages down in every TLB.
//! 2. Each Mosaic TLB in order looks it up: a hit gives the CPFN, which must be the page's
//!    current one; a tag miss or a sub-page miss walks (again, when another TLB walked for
//!    this page already: a walk of its own, counted), fills the whole ToC with the CPFN of
//!    every sub-page mapped at that moment, then shoots the evicted pages down.
//! 3. If the OS evicts, it is told of the use (the OS's clock ticks).
//!
//! The machine's first TLB, whose walks are the uses under `recency = "fill"`, is the
//! conventional hierarchy, else the first Mosaic TLB. A shootdown invalidates the page at
//! every level and side of the hierarchy and its sub-entry in every Mosaic TLB. Seeds follow
//! `CpuMachine::new`: the hierarchy takes the machine's seed, Mosaic TLB `i` the seed
//! `seed ^ (i + 1) * 0x9e37_79b9_7f4a_7c15` (wrapping); only random replacement reads them.
//!
//! The model also checks itself: every conventional hit gives, and every Mosaic hit names,
//! the page's current frame.
//!
//! Not modelled: what the OS model leaves out (see `os_ref`), and the machine's speed-ups
//! (the express path, replaying levels on a second core, prefetching, the memo of decoded
//! CPFNs), which must not change any count: the model is what they are compared against.

#![allow(dead_code)]

use super::mosaic_ref::RefMosaic;
use super::os_ref::{RefOom, RefOs};
use super::tlb_ref::RefHierarchy;
use xlat::sim::stats::{MosaicStats, RefCounters};
use xlat::sim::{CpuSpec, MachineStats};
use xlat::tlb::{MosaicGeometry, MosaicLookup};
use xlat::{AccessKind, Asid, MemRef, PageSize, Pfn, Translation, Vpn};

/// A Mosaic TLB of the machine, with what its statistics name.
struct Mosaic {
    name: String,
    geometry: MosaicGeometry,
    tlb: RefMosaic,
}

/// The naive machine.
pub struct RefMachine {
    name: String,
    tlb: Option<RefHierarchy>,
    mosaic: Vec<Mosaic>,
    os: RefOs,
    counters: RefCounters,
}

impl RefMachine {
    /// The machine of `spec`: empty TLBs, nothing mapped.
    pub fn new(spec: &CpuSpec) -> RefMachine {
        let os = RefOs::new(&spec.os);
        let mosaic = spec
            .mosaic
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let seed = spec.seed ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                Mosaic { name: m.name.clone(), geometry: m.geometry.clone(), tlb: RefMosaic::new(&m.geometry, os.unmapped_code(), seed) }
            })
            .collect();
        RefMachine {
            name: spec.name.clone(),
            tlb: (!spec.tlb.is_empty()).then(|| RefHierarchy::new(&spec.tlb, spec.seed)),
            mosaic,
            os,
            counters: RefCounters::default(),
        }
    }

    /// Simulates `refs`, which span `instructions` instructions, in order; stops at the first
    /// fault that finds no frame.
    pub fn process(&mut self, refs: &[MemRef], instructions: u64) -> Result<(), RefOom> {
        for r in refs {
            self.reference(r)?;
        }
        self.counters.refs += refs.len() as u64;
        self.counters.instructions += instructions;
        Ok(())
    }

    /// Translates every page `r` touches: its first byte's address, then each later page's
    /// first address.
    fn reference(&mut self, r: &MemRef) -> Result<(), RefOom> {
        let last_byte = r.vaddr.wrapping_add(u64::from(r.size.max(1)) - 1);
        let (first, last) = (r.vaddr >> 12, last_byte >> 12);
        self.translate(r.asid, r.vaddr, r.kind)?;
        if last != first {
            self.counters.straddles += 1;
        }
        let mut page = first;
        while page != last {
            page = (page + 1) & (u64::MAX >> 12);
            self.translate(r.asid, page << 12, r.kind)?;
        }
        Ok(())
    }

    /// One page's translation in every TLB, then its use.
    fn translate(&mut self, asid: Asid, vaddr: u64, kind: AccessKind) -> Result<(), RefOom> {
        let vpn = vaddr >> 12;
        if self.tlb.is_some() {
            self.conventional(asid, vaddr, kind)?;
        }
        for i in 0..self.mosaic.len() {
            self.mosaic_translate(i, asid, vaddr)?;
        }
        if self.os.tracks_use() {
            self.os.access(asid, vpn);
        }
        Ok(())
    }

    /// The conventional hierarchy's lookup, walk and fills, then the shootdowns.
    fn conventional(&mut self, asid: Asid, vaddr: u64, kind: AccessKind) -> Result<(), RefOom> {
        let RefMachine { tlb, os, .. } = self;
        let tlb = tlb.as_mut().expect("a conventional hierarchy");
        let mut failed = None;
        let (_, t) = tlb.access_translation(asid, vaddr, kind, || {
            let frame = os.walk(asid, vaddr, true).unwrap_or_else(|oom| {
                failed = Some(oom);
                0
            });
            Translation { asid, vpn: Vpn(vaddr >> 12), pfn: Pfn(frame), size: PageSize::Size4K }
        });
        if let Some(oom) = failed {
            return Err(oom);
        }
        assert_eq!(Some(t.pfn.0), self.os.frame(asid, vaddr >> 12), "reference: a conventional TLB gave another frame than the page's");
        self.shoot_down();
        Ok(())
    }

    /// Mosaic TLB `i`'s lookup of the page of `vaddr`; on a miss or sub-page miss, a walk,
    /// the fill of the ToC and the shootdowns.
    fn mosaic_translate(&mut self, i: usize, asid: Asid, vaddr: u64) -> Result<(), RefOom> {
        let vpn = vaddr >> 12;
        match self.mosaic[i].tlb.lookup(asid, vpn) {
            MosaicLookup::Hit(cpfn) => {
                assert_eq!(Some(cpfn), self.os.cpfn(asid, vpn), "reference: a Mosaic TLB gave another CPFN than the page's");
            }
            MosaicLookup::Miss | MosaicLookup::SubMiss => {
                let first_tlb = self.tlb.is_none() && i == 0;
                self.os.walk(asid, vaddr, first_tlb)?;
                let arity = self.mosaic[i].tlb.arity;
                let base = vpn / arity * arity;
                let unmapped = self.os.unmapped_code();
                let toc: Vec<u8> = (base..base + arity).map(|v| self.os.cpfn(asid, v).unwrap_or(unmapped)).collect();
                self.mosaic[i].tlb.fill(asid, vpn, &toc);
                self.shoot_down();
            }
        }
        Ok(())
    }

    /// Invalidates the pages the OS evicted in every TLB.
    fn shoot_down(&mut self) {
        for (asid, vpn) in self.os.take_shootdowns() {
            if let Some(tlb) = &mut self.tlb {
                tlb.invalidate(asid, vpn << 12);
            }
            for m in &mut self.mosaic {
                m.tlb.invalidate_page(asid, vpn);
            }
        }
    }

    /// Statistics so far, as `Machine::stats` gives them (with no loops: the model has one).
    pub fn stats(&self) -> MachineStats {
        MachineStats {
            machine: self.name.clone(),
            counters: self.counters.clone(),
            levels: self.tlb.as_ref().map(RefHierarchy::stats).unwrap_or_default(),
            mosaic: self.mosaic.iter().map(|m| MosaicStats { name: m.name.clone(), geometry: m.geometry.clone(), counters: m.tlb.counters() }).collect(),
            os: self.os.stats(),
            walker: Default::default(),
            page_table: Default::default(),
            kernel_work: None,
            timing: None,
            loops: Vec::new(),
        }
    }
}
