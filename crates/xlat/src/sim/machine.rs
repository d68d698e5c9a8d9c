//! A simulated machine: one OS model and the TLBs that observe its mappings, consuming
//! reference batches.
//!
//! A machine has a conventional TLB hierarchy, any number of Mosaic TLBs, or both; every
//! reference goes through each of them, and each miss walks the one page table (as the
//! Mosaic paper's gem5 model feeds every access to a vanilla and a Mosaic TLB at once). A
//! Mosaic hit decodes its CPFN through the OS's hash to a frame; debug builds check that frame
//! against the page table. Pages the OS evicts are shot down in every TLB.

use super::stats::{MachineStats, MosaicStats, RefCounters};
use decoded::DecodedFrames;
use crate::hash::page_key;
use crate::memref::{AccessKind, Batch, MemRef};
use crate::os::{Os, OsSpec, OutOfMemory};
use crate::tlb::mosaic::{MosaicGeometry, MosaicLookup, MosaicTlb};
use crate::tlb::{LevelGeometry, TlbHierarchy, SingleLevel, Walker};
use crate::types::{Asid, Pfn, Translation, Vpn, BASE_PAGE_SHIFT};
use crate::Result;
use serde::Serialize;

/// A Mosaic TLB of a machine, validated.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MosaicSpec {
    /// Name in results.
    pub name: String,
    /// Shape, policy and arity.
    pub geometry: MosaicGeometry,
}

/// A validated machine configuration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MachineSpec {
    /// Name in results.
    pub name: String,
    /// Seed of the machine's random choices (placement, random replacement).
    pub seed: u64,
    /// The OS model.
    pub os: OsSpec,
    /// Conventional TLB levels, closest to the core first (empty: none).
    pub tlb: Vec<LevelGeometry>,
    /// Mosaic TLBs riding the same OS (they need iceberg placement).
    pub mosaic: Vec<MosaicSpec>,
}

struct MosaicVariant {
    name: String,
    tlb: MosaicTlb,
}

/// The express path walks the machine's OS.
impl Walker for Os {
    type Error = crate::os::OutOfMemory;

    #[inline(always)]
    fn walk(&mut self, asid: Asid, vaddr: u64) -> std::result::Result<Pfn, Self::Error> {
        self.walk_frame(asid, vaddr)
    }

    #[inline(always)]
    fn prefetch(&self, asid: Asid, vaddr: u64) {
        Os::prefetch(self, asid, vaddr);
    }
}

/// A machine being simulated.
pub struct Machine {
    name: String,
    tlb: Option<TlbHierarchy>,
    mosaic: Vec<MosaicVariant>,
    /// Frames of recent Mosaic hits, so that a repeated hit skips the hash. One memo serves
    /// every Mosaic TLB of the machine: they ride one OS, so a page has the same CPFN in all
    /// of them, and the first TLB's decode serves the others.
    decoded: DecodedFrames,
    os: Os,
    /// The ToC of a Mosaic page none of whose pages was ever mapped: all unmapped codes, as
    /// many as the largest arity filled so far.
    unmapped_toc: Vec<u8>,
    counters: RefCounters,
    /// Whether the next batch prefetches page-table entries: only when the last batch walked
    /// often enough for the hints to pay for themselves.
    prefetch: bool,
}

/// How many references ahead the page-table entries of a batch are prefetched: far enough
/// for a line to arrive from memory while the references before it are simulated.
const PREFETCH_DISTANCE: usize = 8;

/// Prefetching costs about 50 instructions per reference and a walk that misses the host's
/// caches several hundred cycles, so it is on only while more than one reference in this many
/// walks...
const PREFETCH_WALK_RATIO: u64 = 8;

/// ...and the leaves the walks read outgrow this many bytes, half the L2 cache of a current
/// server core: below it they stay in the host's caches (a 256 MiB footprint of 4 KiB pages
/// has 256 KiB of leaves), and prefetching was measured to cost more than it hid.
const PREFETCH_ABOVE_TABLE_BYTES: usize = 512 << 10;

impl Machine {
    /// A machine in its initial state: empty TLBs, nothing mapped.
    pub fn new(spec: &MachineSpec) -> Machine {
        let os = Os::new(&spec.os, spec.seed ^ 0x6f73);
        let unmapped = os.unmapped_code();
        let mosaic = spec
            .mosaic
            .iter()
            .enumerate()
            .map(|(i, m)| MosaicVariant {
                name: m.name.clone(),
                tlb: MosaicTlb::new(&m.geometry, unmapped, spec.seed ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            })
            .collect();
        Machine {
            name: spec.name.clone(),
            tlb: (!spec.tlb.is_empty()).then(|| TlbHierarchy::new(&spec.tlb, spec.seed)),
            mosaic,
            decoded: DecodedFrames::new(),
            os,
            unmapped_toc: Vec::new(),
            counters: RefCounters::default(),
            prefetch: false,
        }
    }

    /// Simulates every reference of `batch` in order. A reference that straddles a page
    /// boundary translates every page it covers (one TLB access each).
    pub fn process(&mut self, batch: &Batch) -> Result<()> {
        // The machine's shape is fixed, so choosing a specialized loop once per batch costs
        // nothing per reference, and the common case (one conventional TLB, no eviction)
        // keeps a loop with nothing else in it.
        let one_level = self.tlb.as_ref().is_some_and(TlbHierarchy::is_one_level);
        let track = self.os.tracks_use();
        let mosaic = !self.mosaic.is_empty();
        if !track && !mosaic {
            if let Some(ways) = self.tlb.as_ref().and_then(|tlb| tlb.express_ways(self.os.page_size())) {
                return self.process_express(ways, batch);
            }
        }
        if let Some(single) = self.tlb.as_ref().and_then(|tlb| tlb.express_single_level(self.os.page_size())) {
            // Neither tracking nor Mosaic TLBs reach here too, when the express path declined
            // the level for its instruction side.
            return match (track, mosaic) {
                (false, false) => self.process_single_level::<false, false>(single, batch),
                (true, false) => self.process_single_level::<true, false>(single, batch),
                (false, true) => self.process_single_level::<false, true>(single, batch),
                (true, true) => self.process_single_level::<true, true>(single, batch),
            };
        }
        match (one_level, track, mosaic) {
            (true, false, false) => self.process_shaped::<true, false, false, 0>(batch, None),
            (false, false, false) => self.process_shaped::<false, false, false, 0>(batch, None),
            (true, true, false) => self.process_shaped::<true, true, false, 0>(batch, None),
            (false, true, false) => self.process_shaped::<false, true, false, 0>(batch, None),
            (true, false, true) => self.process_shaped::<true, false, true, 0>(batch, None),
            (false, false, true) => self.process_shaped::<false, false, true, 0>(batch, None),
            (true, true, true) => self.process_shaped::<true, true, true, 0>(batch, None),
            (false, true, true) => self.process_shaped::<false, true, true, 0>(batch, None),
        }
    }

    /// [`Machine::process`] for a machine whose TLB is one level with a data array of a
    /// specialized shape (see [`TlbHierarchy::express_single_level`]) that the express path
    /// cannot take (Mosaic TLBs ride its OS, or the OS tracks use): the loop compiled for the
    /// data array's ways.
    fn process_single_level<const TRACK: bool, const MOSAIC: bool>(&mut self, single: SingleLevel, batch: &Batch) -> Result<()> {
        let level = Some(single);
        match single.ways {
            1 => self.process_shaped::<true, TRACK, MOSAIC, 1>(batch, level),
            2 => self.process_shaped::<true, TRACK, MOSAIC, 2>(batch, level),
            4 => self.process_shaped::<true, TRACK, MOSAIC, 4>(batch, level),
            8 => self.process_shaped::<true, TRACK, MOSAIC, 8>(batch, level),
            12 => self.process_shaped::<true, TRACK, MOSAIC, 12>(batch, level),
            16 => self.process_shaped::<true, TRACK, MOSAIC, 16>(batch, level),
            _ => unreachable!("express_single_level returns the ways of a specialized shape"),
        }
    }

    /// The simulation loop of a machine of one shape: one level or any number, use tracked or
    /// not, Mosaic TLBs or none, and `W` ways of the `single` level's data array (0 and `None`
    /// for the general path).
    fn process_shaped<const ONE_LEVEL: bool, const TRACK: bool, const MOSAIC: bool, const W: usize>(&mut self, batch: &Batch, single: Option<SingleLevel>) -> Result<()> {
        self.run_shaped::<ONE_LEVEL, TRACK, MOSAIC, W>(batch, single).map_err(|oom| self.out_of_memory(oom))
    }

    /// [`Machine::process_shaped`] with the error of a fault that found no frame as the OS
    /// gives it: one word or two through the loop, named after the machine once it stops.
    #[inline(always)]
    fn run_shaped<const ONE_LEVEL: bool, const TRACK: bool, const MOSAIC: bool, const W: usize>(&mut self, batch: &Batch, single: Option<SingleLevel>) -> std::result::Result<(), OutOfMemory> {
        let walks = self.os.walks();
        for (i, r) in batch.refs.iter().enumerate() {
            if self.prefetch {
                if let Some(ahead) = batch.refs.get(i + PREFETCH_DISTANCE) {
                    self.os.prefetch(ahead.asid, ahead.vaddr);
                }
            }
            let first = r.vaddr >> BASE_PAGE_SHIFT;
            let last = r.last_vpn().0;
            self.translate::<ONE_LEVEL, TRACK, MOSAIC, W>(single, r.asid, r.vaddr, r.kind)?;
            if last != first {
                self.counters.straddles += 1;
                self.translate_later_pages::<ONE_LEVEL, TRACK, MOSAIC, W>(single, r)?;
            }
        }
        self.finish_batch(batch, walks);
        Ok(())
    }

    /// Translates the pages of `r` after its first: rare, so kept out of the loop.
    #[cold]
    #[inline(never)]
    fn translate_later_pages<const ONE_LEVEL: bool, const TRACK: bool, const MOSAIC: bool, const W: usize>(&mut self, single: Option<SingleLevel>, r: &MemRef) -> std::result::Result<(), OutOfMemory> {
        r.later_pages().try_for_each(|page| self.translate::<ONE_LEVEL, TRACK, MOSAIC, W>(single, r.asid, page.addr().0, r.kind))
    }

    /// Counts a simulated batch, during which the OS had walked `walks` times before it, and
    /// decides whether the next one prefetches.
    fn finish_batch(&mut self, batch: &Batch, walks: u64) {
        self.counters.refs += batch.refs.len() as u64;
        self.counters.instructions += batch.instructions;
        self.prefetch = (self.os.walks() - walks) * PREFETCH_WALK_RATIO > batch.refs.len() as u64
            && self.os.page_table_bytes() > PREFETCH_ABOVE_TABLE_BYTES;
    }

    /// [`Machine::process`] for a machine that is a single TLB of a specialized shape with `ways`
    /// ways (see [`TlbHierarchy::express_ways`]) over an OS that does not track use.
    fn process_express(&mut self, ways: usize, batch: &Batch) -> Result<()> {
        if self.prefetch {
            self.express_ways::<true>(ways, batch)
        } else {
            self.express_ways::<false>(ways, batch)
        }
    }

    /// [`Machine::process_express`] with prefetching chosen: the loop for `ways` ways.
    fn express_ways<const PREFETCH: bool>(&mut self, ways: usize, batch: &Batch) -> Result<()> {
        match ways {
            1 => self.express_shaped::<1, PREFETCH>(batch),
            2 => self.express_shaped::<2, PREFETCH>(batch),
            4 => self.express_shaped::<4, PREFETCH>(batch),
            8 => self.express_shaped::<8, PREFETCH>(batch),
            12 => self.express_shaped::<12, PREFETCH>(batch),
            16 => self.express_shaped::<16, PREFETCH>(batch),
            _ => unreachable!("express_ways returns the ways of a specialized shape"),
        }
    }

    fn express_shaped<const W: usize, const PREFETCH: bool>(&mut self, batch: &Batch) -> Result<()> {
        let walks = self.os.walks();
        let tlb = self.tlb.as_mut().expect("express_ways found a TLB");
        let run = tlb.run_express::<W, PREFETCH, _>(self.os.page_size(), &batch.refs, &mut self.os, PREFETCH_DISTANCE).map_err(|oom| self.out_of_memory(oom))?;
        self.counters.straddles += run.straddles;
        self.finish_batch(batch, walks);
        Ok(())
    }

    /// One page's translation in every TLB; with `TRACK`, reports the use to the OS.
    #[inline(always)]
    fn translate<const ONE_LEVEL: bool, const TRACK: bool, const MOSAIC: bool, const W: usize>(
        &mut self,
        single: Option<SingleLevel>,
        asid: Asid,
        vaddr: u64,
        kind: AccessKind,
    ) -> std::result::Result<(), OutOfMemory> {
        let mut pfn = None;
        // This reference's walk, which a Mosaic TLB that misses too reuses: no walk changes the
        // page table once the page is mapped, and the TLBs' own work changes none of it.
        let mut walked = None;
        if let Some(tlb) = &mut self.tlb {
            // With Mosaic TLBs, their decoded frame serves (it is computed anyway).
            let frame = TRACK && !MOSAIC;
            let found = match single {
                Some(single) if W != 0 => tlb.lookup_single::<W>(single, asid, vaddr, kind, frame),
                _ if frame => tlb.lookup_frame_shaped::<ONE_LEVEL>(asid, vaddr, kind),
                _ => tlb.lookup_shaped::<ONE_LEVEL>(asid, vaddr, kind).map(|_| Pfn(0)),
            };
            if frame {
                pfn = found;
            }
            if found.is_none() {
                let t = self.walk(asid, vaddr, true)?;
                walked = Some(t);
                let tlb = self.tlb.as_mut().expect("checked above");
                match single {
                    Some(single) if W != 0 => tlb.fill_single::<W>(single, &t, vaddr, kind),
                    _ => tlb.fill_after_walk_shaped::<ONE_LEVEL>(&t, vaddr, kind),
                }
                if TRACK {
                    pfn = Some(t.pfn_of(vaddr));
                    self.shoot_down();
                }
            }
        }
        if MOSAIC {
            for i in 0..self.mosaic.len() {
                let frame = self.translate_mosaic::<TRACK>(i, asid, vaddr, &mut walked)?;
                pfn.get_or_insert(frame);
            }
        }
        if TRACK && self.os.access(pfn.expect("a machine has at least one TLB"), kind == AccessKind::Store)? {
            self.shoot_down();
        }
        Ok(())
    }

    /// Translates `vaddr` in Mosaic TLB `i`, returning its frame; `walked` is the walk of
    /// `vaddr` another TLB made for this reference, if any.
    #[inline(always)]
    fn translate_mosaic<const TRACK: bool>(&mut self, i: usize, asid: Asid, vaddr: u64, walked: &mut Option<Translation>) -> std::result::Result<Pfn, OutOfMemory> {
        let vpn = Vpn(vaddr >> BASE_PAGE_SHIFT);
        let MosaicLookup::Hit(cpfn) = self.mosaic[i].tlb.lookup(asid, vpn) else {
            return self.mosaic_miss::<TRACK>(i, asid, vaddr, walked);
        };
        let frame = match self.decoded.get(asid, vpn, cpfn) {
            Some(frame) => frame,
            None => self.decode(asid, vpn, cpfn),
        };
        debug_assert_eq!(
            Some(frame),
            self.os.mapping(asid, vaddr).map(|t| t.pfn),
            "{}: CPFN {cpfn:#x} of asid {asid} page {:#x} decodes to another frame than the OS mapped",
            self.mosaic[i].name,
            vpn.0
        );
        Ok(frame)
    }

    /// Decodes a Mosaic hit's CPFN through the iceberg hash and keeps the frame in the memo.
    #[inline(never)]
    fn decode(&mut self, asid: Asid, vpn: Vpn, cpfn: u8) -> Pfn {
        let layout = self.os.iceberg().expect("Mosaic TLBs ride an iceberg memory");
        let frame = Pfn(layout.decode_frame(page_key(asid, vpn), cpfn).expect("a valid sub-entry holds a valid CPFN"));
        self.decoded.put(asid, vpn, cpfn, frame);
        frame
    }

    /// A miss or sub-miss of Mosaic TLB `i`: walks (or counts again the walk `walked` of
    /// this reference), fills the ToC and returns the frame. Only the machine's first TLB
    /// records its fills as uses (see [`Os::translate_for`]), and only the first walk of a
    /// reference can be the first TLB's.
    #[inline(never)]
    fn mosaic_miss<const TRACK: bool>(&mut self, i: usize, asid: Asid, vaddr: u64, walked: &mut Option<Translation>) -> std::result::Result<Pfn, OutOfMemory> {
        let t = match *walked {
            Some(t) => {
                self.os.walk_again();
                t
            }
            None => {
                let first = self.tlb.is_none() && i == 0;
                let t = self.walk(asid, vaddr, first)?;
                *walked = Some(t);
                t
            }
        };
        self.fill_toc(i, asid, Vpn(vaddr >> BASE_PAGE_SHIFT));
        if TRACK {
            self.shoot_down();
        }
        Ok(t.pfn_of(vaddr))
    }

    /// Fills Mosaic TLB `i` with the ToC of the Mosaic page holding `vpn`: the CPFN of every
    /// sub-page mapped now.
    fn fill_toc(&mut self, i: usize, asid: Asid, vpn: Vpn) {
        let Machine { mosaic, os, unmapped_toc, .. } = self;
        let tlb = &mut mosaic[i].tlb;
        let arity = tlb.geometry().arity as usize;
        let base = vpn.0 & !(arity as u64 - 1);
        let toc = match os.toc(asid, base << BASE_PAGE_SHIFT, arity) {
            Some(toc) => toc,
            None => {
                if unmapped_toc.len() < arity {
                    unmapped_toc.resize(arity, tlb.unmapped());
                }
                &unmapped_toc[..arity]
            }
        };
        tlb.fill(asid, vpn, toc);
    }

    /// A page-table walk; `first` when it is the walk of the machine's first TLB. Inlined
    /// into the simulation loop: as a call, its translation came back through memory.
    #[inline(always)]
    fn walk(&mut self, asid: Asid, vaddr: u64, first: bool) -> std::result::Result<Translation, OutOfMemory> {
        self.os.translate_for(asid, vaddr, first)
    }

    /// Invalidates in every TLB the pages the OS just evicted (or, after an accessed-bit
    /// scan, whose bit it cleared). Only an OS that tracks use (`TRACK`) evicts or scans, so
    /// only then can there be any. Most walks evict nothing: the test is inlined, the
    /// shootdown is not.
    #[inline(always)]
    fn shoot_down(&mut self) {
        if self.os.has_shootdowns() {
            self.shoot_down_pending();
        }
    }

    /// [`Machine::shoot_down`] once the OS has pages for it.
    #[inline(never)]
    fn shoot_down_pending(&mut self) {
        let size = self.os.page_size();
        let Some(pages) = self.os.take_shootdowns() else { return };
        for (asid, vpn) in pages {
            if let Some(tlb) = &mut self.tlb {
                tlb.invalidate(asid, vpn, size);
            }
            for m in &mut self.mosaic {
                m.tlb.invalidate_page(asid, vpn);
            }
        }
    }

    /// The error for a fault that found no frame, naming this machine.
    #[cold]
    fn out_of_memory(&self, oom: crate::os::OutOfMemory) -> crate::Error {
        crate::Error::Simulation(format!("machine `{}`: {}", self.name, self.os.describe(oom)))
    }

    /// Statistics so far.
    pub fn stats(&self) -> MachineStats {
        MachineStats {
            machine: self.name.clone(),
            counters: self.counters.clone(),
            levels: self.tlb.as_ref().map(TlbHierarchy::stats).unwrap_or_default(),
            mosaic: self.mosaic.iter().map(|m| MosaicStats { name: m.name.clone(), geometry: m.tlb.geometry().clone(), counters: m.tlb.counters() }).collect(),
            os: self.os.stats(),
        }
    }
}

mod decoded;
#[cfg(test)]
mod tests;
