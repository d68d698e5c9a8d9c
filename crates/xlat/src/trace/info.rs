//! Summary statistics of a reference stream (`xlat trace info`).

use crate::memref::{AccessKind, Batch, RangeOp};
use crate::source::RefSource;
use crate::types::BASE_PAGE_SHIFT;
use crate::Result;
use rustc_hash::FxHashSet;
use serde::Serialize;
use std::fmt;

/// What a pass over a trace found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TraceInfo {
    /// Memory references.
    pub references: u64,
    /// Instructions retired, when the source counts them (`None` when it reported 0).
    pub instructions: Option<u64>,
    /// Loads.
    pub loads: u64,
    /// Stores.
    pub stores: u64,
    /// Instruction fetches.
    pub ifetches: u64,
    /// Distinct 4 KiB pages touched, counting a page once per address space; a reference that
    /// straddles a page boundary touches every page it covers.
    pub pages: u64,
    /// Distinct address spaces (ASIDs).
    pub address_spaces: u64,
    /// Lowest address of a first byte (`None` for an empty stream).
    pub min_addr: Option<u64>,
    /// Highest address of a last byte (`None` for an empty stream).
    pub max_addr: Option<u64>,
    /// Address-space events that map a range.
    pub map_events: u64,
    /// Address-space events that unmap a range.
    pub unmap_events: u64,
}

/// References [`info`] asks its source for at a time.
pub const BATCH: usize = 1 << 16;

/// Reads `source` to its end and summarizes it, [`BATCH`] references at a time.
pub fn info(source: &mut dyn RefSource) -> Result<TraceInfo> {
    let mut t = TraceInfo::default();
    // (ASID, VPN) packed in a u128: VPNs use 52 bits, so the key is exact and cheap to hash.
    let mut pages: FxHashSet<u128> = FxHashSet::default();
    let mut asids: FxHashSet<u16> = FxHashSet::default();
    let (mut min, mut max) = (u64::MAX, 0u64);
    let mut instructions = 0u64;
    let mut batch = Batch::with_capacity(BATCH);
    loop {
        batch.clear();
        let got = source.fill(&mut batch, BATCH)?;
        // Counted before the end is told: a stream of events alone gives them with its end.
        for (_, e) in &batch.events {
            match e.op {
                RangeOp::Map => t.map_events += 1,
                RangeOp::Unmap => t.unmap_events += 1,
            }
        }
        if got == 0 {
            break;
        }
        instructions += batch.instructions;
        for r in &batch.refs {
            match r.kind {
                AccessKind::Load => t.loads += 1,
                AccessKind::Store => t.stores += 1,
                AccessKind::IFetch => t.ifetches += 1,
            }
            let last = r.vaddr.wrapping_add(u64::from(r.size.max(1)) - 1);
            if last < r.vaddr {
                // Wrapped past the top of memory: it covers both ends of the address range.
                (min, max) = (0, u64::MAX);
            }
            min = min.min(r.vaddr);
            max = max.max(last);
            asids.insert(r.asid);
            let tag = u128::from(r.asid) << 64;
            let (first, last_vpn) = (r.first_vpn().0, r.last_vpn().0);
            let mut vpn = first;
            // At most 17 pages (65535 bytes); the loop follows a wrap past the top of memory.
            loop {
                pages.insert(tag | u128::from(vpn));
                if vpn == last_vpn {
                    break;
                }
                vpn = vpn.wrapping_add(1) & (u64::MAX >> BASE_PAGE_SHIFT);
            }
        }
        t.references += batch.refs.len() as u64;
    }
    t.instructions = (instructions > 0).then_some(instructions);
    t.pages = pages.len() as u64;
    t.address_spaces = asids.len() as u64;
    if t.references > 0 {
        t.min_addr = Some(min);
        t.max_addr = Some(max);
    }
    Ok(t)
}

impl fmt::Display for TraceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pct = |n: u64| if self.references == 0 { 0.0 } else { 100.0 * n as f64 / self.references as f64 };
        writeln!(f, "references:      {}", self.references)?;
        match self.instructions {
            Some(i) => writeln!(f, "instructions:    {i}")?,
            None => writeln!(f, "instructions:    unknown")?,
        }
        writeln!(f, "  loads:         {} ({:.1}%)", self.loads, pct(self.loads))?;
        writeln!(f, "  stores:        {} ({:.1}%)", self.stores, pct(self.stores))?;
        writeln!(f, "  ifetches:      {} ({:.1}%)", self.ifetches, pct(self.ifetches))?;
        let mib = self.pages as f64 * 4096.0 / (1 << 20) as f64;
        writeln!(f, "pages (4 KiB):   {} ({mib:.1} MiB footprint)", self.pages)?;
        writeln!(f, "address spaces:  {}", self.address_spaces)?;
        match (self.min_addr, self.max_addr) {
            (Some(lo), Some(hi)) => writeln!(f, "address range:   {lo:#x} ..= {hi:#x}")?,
            _ => writeln!(f, "address range:   (empty)")?,
        }
        writeln!(f, "range events:    {} map, {} unmap", self.map_events, self.unmap_events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::VecSource;
    use crate::MemRef;

    #[test]
    fn counts_pages_per_asid_and_straddles() {
        let refs = vec![
            MemRef::load(0x1ffc, 8),                         // pages 1 and 2
            MemRef::store(0x2000, 4),                        // page 2 again
            MemRef { asid: 3, ..MemRef::ifetch(0x1000, 4) }, // page 1 of another space
            MemRef::load(u64::MAX, 2),                       // wraps: last page and page 0
        ];
        let t = info(&mut VecSource::new(refs)).unwrap();
        assert_eq!((t.references, t.loads, t.stores, t.ifetches), (4, 2, 1, 1));
        assert_eq!(t.pages, 5);
        assert_eq!(t.address_spaces, 2);
        assert_eq!(t.instructions, None);
        assert_eq!(t.min_addr, Some(0));
        assert_eq!(t.max_addr, Some(u64::MAX));
        assert!(t.to_string().contains("pages (4 KiB):   5"));
    }

    /// A source of one batch: two references with events before, between and after them.
    struct WithEvents(bool);

    impl RefSource for WithEvents {
        fn fill(&mut self, batch: &mut Batch, _max: usize) -> Result<usize> {
            if std::mem::replace(&mut self.0, true) {
                return Ok(0);
            }
            use crate::memref::AddressSpaceEvent;
            batch.push_event(AddressSpaceEvent::map(0x1000, 8192));
            batch.refs.push(MemRef::load(0x1000, 8));
            batch.push_event(AddressSpaceEvent::unmap(0x2000, 4096));
            batch.refs.push(MemRef::load(0x1008, 8));
            batch.push_event(AddressSpaceEvent::map(0x2000, 4096));
            Ok(2)
        }

        fn identity(&self) -> serde_json::Value {
            serde_json::Value::Null
        }
    }

    #[test]
    fn counts_map_and_unmap_events() {
        let t = info(&mut WithEvents(false)).unwrap();
        assert_eq!((t.references, t.map_events, t.unmap_events), (2, 2, 1));
        assert!(t.to_string().ends_with("range events:    2 map, 1 unmap\n"), "{t}");
    }

    #[test]
    fn empty_stream() {
        let t = info(&mut VecSource::new(Vec::new())).unwrap();
        assert_eq!(t, TraceInfo::default());
        assert!(t.to_string().contains("(empty)"));
    }
}
