//! The reference stream: memory references and the batches they travel in.

use crate::types::{Asid, Vpn, BASE_PAGE_SHIFT};
use serde::{Deserialize, Serialize};

/// What a memory reference does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum AccessKind {
    /// A data read.
    Load = 0,
    /// A data write.
    Store = 1,
    /// An instruction fetch.
    IFetch = 2,
}

impl AccessKind {
    /// All kinds, in their numeric order.
    pub const ALL: [AccessKind; 3] = [AccessKind::Load, AccessKind::Store, AccessKind::IFetch];

    /// Decodes the numeric form used by the native trace format.
    #[inline]
    pub fn from_u8(v: u8) -> Option<AccessKind> {
        match v {
            0 => Some(AccessKind::Load),
            1 => Some(AccessKind::Store),
            2 => Some(AccessKind::IFetch),
            _ => None,
        }
    }

    /// True for loads and stores.
    #[inline]
    pub fn is_data(self) -> bool {
        !matches!(self, AccessKind::IFetch)
    }
}

/// One memory reference: `size` bytes at `vaddr` in address space `asid`.
///
/// 16 bytes, `Copy`, no heap data, so batches are plain arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MemRef {
    /// Virtual byte address of the first byte touched.
    pub vaddr: u64,
    /// Address-space identifier.
    pub asid: Asid,
    /// Bytes touched; at least 1 (0 is read as 1).
    pub size: u16,
    /// Load, store or instruction fetch.
    pub kind: AccessKind,
}

impl MemRef {
    /// A load of `size` bytes at `vaddr` in address space 0.
    pub fn load(vaddr: u64, size: u16) -> MemRef {
        MemRef { vaddr, asid: 0, size, kind: AccessKind::Load }
    }

    /// A store of `size` bytes at `vaddr` in address space 0.
    pub fn store(vaddr: u64, size: u16) -> MemRef {
        MemRef { vaddr, asid: 0, size, kind: AccessKind::Store }
    }

    /// An instruction fetch of `size` bytes at `vaddr` in address space 0.
    pub fn ifetch(vaddr: u64, size: u16) -> MemRef {
        MemRef { vaddr, asid: 0, size, kind: AccessKind::IFetch }
    }

    /// The base page of the first byte.
    #[inline]
    pub fn first_vpn(&self) -> Vpn {
        Vpn(self.vaddr >> BASE_PAGE_SHIFT)
    }

    /// The base page of the last byte; differs from [`MemRef::first_vpn`] when the reference
    /// straddles a page boundary, in which case it touches both pages. The address space wraps
    /// at 2^64, as the hardware's does (trace readers reject references that would, see
    /// `past_top`).
    #[inline]
    pub fn last_vpn(&self) -> Vpn {
        let last = self.vaddr.wrapping_add(last_byte_offset(self.size));
        Vpn(last >> BASE_PAGE_SHIFT)
    }

    /// The base pages the reference touches after its first, in address order: none unless
    /// it crosses a page boundary, several when it is larger than a page.
    #[inline]
    pub fn later_pages(&self) -> impl Iterator<Item = Vpn> {
        // Page numbers have 64 - 12 bits, so the count and the pages wrap with the addresses.
        const VPN_MASK: u64 = u64::MAX >> BASE_PAGE_SHIFT;
        let first = self.first_vpn().0;
        let count = self.last_vpn().0.wrapping_sub(first) & VPN_MASK;
        (1..=count).map(move |i| Vpn(first.wrapping_add(i) & VPN_MASK))
    }
}

/// The offset of the last byte of a reference of `size` bytes from its first: a size 0
/// counts as 1 (it still names the page of its address).
#[inline(always)]
fn last_byte_offset(size: u16) -> u64 {
    u64::from(size.max(1)) - 1
}

/// True when the last byte of `size` bytes at `vaddr` lies past 2^64 - 1. The simulator would
/// wrap such a reference around to page 0 ([`MemRef::last_vpn`]), so trace readers reject it
/// as malformed and writers refuse it.
#[inline(always)]
pub fn past_top(vaddr: u64, size: u16) -> bool {
    vaddr.checked_add(last_byte_offset(size)).is_none()
}

/// What an address-space event does to its range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[repr(u8)]
pub enum RangeOp {
    /// The range becomes mapped (mmap, brk growth): its pages may be touched, and a later
    /// touch of a page maps a zeroed frame. Anything mapped there before is unmapped first,
    /// as `mmap` with `MAP_FIXED` does.
    Map = 0,
    /// The range is unmapped (munmap, brk shrink): its pages lose their frames, their swap
    /// slots and their TLB entries.
    Unmap = 1,
}

impl RangeOp {
    /// Decodes the numeric form used by the native trace format.
    pub fn from_u8(v: u8) -> Option<RangeOp> {
        match v {
            0 => Some(RangeOp::Map),
            1 => Some(RangeOp::Unmap),
            _ => None,
        }
    }
}

/// An address-space event: `len` bytes from `start` in address space `asid` mapped or
/// unmapped. The OS acts on every base page the range touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AddressSpaceEvent {
    /// Address-space identifier.
    pub asid: Asid,
    /// Map or unmap.
    pub op: RangeOp,
    /// First byte of the range.
    pub start: u64,
    /// Bytes in the range; at least 1.
    pub len: u64,
}

impl AddressSpaceEvent {
    /// A mapping of `len` bytes at `start` in address space 0.
    pub fn map(start: u64, len: u64) -> AddressSpaceEvent {
        AddressSpaceEvent { asid: 0, op: RangeOp::Map, start, len }
    }

    /// An unmapping of `len` bytes at `start` in address space 0.
    pub fn unmap(start: u64, len: u64) -> AddressSpaceEvent {
        AddressSpaceEvent { asid: 0, op: RangeOp::Unmap, start, len }
    }

    /// The base pages the range touches, as addresses: from its first byte's page to past
    /// its last byte's.
    pub fn pages(&self) -> std::ops::Range<u64> {
        let page = 1u64 << BASE_PAGE_SHIFT;
        let first = self.start & !(page - 1);
        let last = self.start.saturating_add(self.len.max(1) - 1) & !(page - 1);
        first..last.saturating_add(page)
    }

    /// Why the event cannot be simulated, if it cannot: an empty range, or one past the top
    /// of the address space (trace readers reject such events, writers refuse them).
    pub fn malformed(&self) -> Option<&'static str> {
        if self.len == 0 {
            Some("an empty range")
        } else if self.start.checked_add(self.len - 1).is_none() {
            Some("a range past the top of the address space")
        } else {
            None
        }
    }
}

/// A batch of references with the number of instructions they span, and the address-space
/// events among them.
///
/// Sources append to a batch that the consumer clears and reuses, so the hot path allocates
/// nothing after the first batch. Events travel beside the references rather than among
/// them, so that a batch of references stays a plain array: most streams have none, and
/// those that have are sparse (one per allocation or free, not per reference).
#[derive(Clone, Debug, Default)]
pub struct Batch {
    /// The references, in program order.
    pub refs: Vec<MemRef>,
    /// Instructions retired over these references (0 when the source does not know).
    pub instructions: u64,
    /// Address-space events, each with the index of the reference it comes before
    /// (`refs.len()` for one after them all), in order.
    pub events: Vec<(usize, AddressSpaceEvent)>,
}

impl Batch {
    /// A batch of `refs` spanning `instructions`, without events.
    pub fn new(refs: Vec<MemRef>, instructions: u64) -> Batch {
        Batch { refs, instructions, events: Vec::new() }
    }

    /// An empty batch with room for `capacity` references.
    pub fn with_capacity(capacity: usize) -> Batch {
        Batch::new(Vec::with_capacity(capacity), 0)
    }

    /// Empties the batch, keeping its allocation.
    pub fn clear(&mut self) {
        self.refs.clear();
        self.instructions = 0;
        self.events.clear();
    }

    /// Number of references held.
    pub fn len(&self) -> usize {
        self.refs.len()
    }

    /// True when the batch holds no reference.
    pub fn is_empty(&self) -> bool {
        self.refs.is_empty()
    }

    /// Appends `event` after the references held.
    pub fn push_event(&mut self, event: AddressSpaceEvent) {
        self.events.push((self.refs.len(), event));
    }

    /// Appends the references `range` of `from`, and the events of `from` from `*cursor` on
    /// that come before the range's end (and those at its end too, if `to_end`: nothing of
    /// `from` comes after it, or the caller hands out nothing after it), moving `*cursor` past
    /// them. The cursor keeps an event at a boundary from being handed out twice.
    pub fn append_from(&mut self, from: &Batch, range: std::ops::Range<usize>, cursor: &mut usize, to_end: bool) {
        let offset = self.refs.len();
        while let Some(&(at, event)) = from.events.get(*cursor) {
            if at > range.end || (at == range.end && !to_end) {
                break;
            }
            self.events.push((at.saturating_sub(range.start) + offset, event));
            *cursor += 1;
        }
        self.refs.extend_from_slice(&from.refs[range]);
    }

    /// The batch's references cut at its events: each run of references, and the event after
    /// it (`None` after the last run). A batch without events is one run.
    pub fn runs(&self) -> impl Iterator<Item = (&[MemRef], Option<&AddressSpaceEvent>)> {
        let mut start = 0;
        let cuts = self.events.iter().map(|(at, e)| (*at, Some(e))).chain(std::iter::once((self.refs.len(), None)));
        cuts.map(move |(at, e)| {
            let run = &self.refs[start..at];
            start = at;
            (run, e)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_cut_at_its_events_and_handed_on_with_them() {
        let (a, b) = (AddressSpaceEvent::map(0x1000, 1), AddressSpaceEvent::unmap(0x1000, 8192));
        let mut batch = Batch::with_capacity(4);
        batch.push_event(a);
        batch.refs.extend([MemRef::load(0, 1), MemRef::load(8, 1)]);
        batch.push_event(b);
        let runs: Vec<(usize, Option<AddressSpaceEvent>)> = batch.runs().map(|(r, e)| (r.len(), e.copied())).collect();
        assert_eq!(runs, [(0, Some(a)), (2, Some(b)), (0, None)]);
        // Handed on in two parts: each event once, at its place.
        let (mut first, mut second, mut cursor) = (Batch::default(), Batch::default(), 0);
        first.append_from(&batch, 0..2, &mut cursor, false);
        second.append_from(&batch, 2..2, &mut cursor, true);
        assert_eq!((first.events, second.events), (vec![(0, a)], vec![(0, b)]));
        assert_eq!(b.pages(), 0x1000..0x3000);
        assert_eq!(AddressSpaceEvent::unmap(0x1fff, 2).pages(), 0x1000..0x3000, "a range touching two pages covers both");
        assert_eq!(AddressSpaceEvent::unmap(u64::MAX, 1).malformed(), None);
        assert!(AddressSpaceEvent::unmap(u64::MAX, 2).malformed().is_some() && AddressSpaceEvent::map(0, 0).malformed().is_some());
    }

    #[test]
    fn memref_is_16_bytes() {
        assert_eq!(std::mem::size_of::<MemRef>(), 16);
    }

    #[test]
    fn straddling_reference_touches_two_pages() {
        let r = MemRef::load(0x1ffc, 8);
        assert_eq!(r.first_vpn(), Vpn(1));
        assert_eq!(r.last_vpn(), Vpn(2));
        let inside = MemRef::load(0x1ff8, 8);
        assert_eq!(inside.first_vpn(), inside.last_vpn());
        let zero = MemRef::load(0x1fff, 0);
        assert_eq!(zero.first_vpn(), zero.last_vpn());
    }

    #[test]
    fn a_reference_larger_than_a_page_touches_every_page_it_covers() {
        let later = |r: MemRef| r.later_pages().map(|v| v.0).collect::<Vec<_>>();
        assert_eq!(later(MemRef::load(0x1ff8, 8)), Vec::<u64>::new());
        assert_eq!(later(MemRef::load(0x1ffc, 8)), [2]);
        assert_eq!(later(MemRef::load(0x1000, 16384)), [2, 3, 4]);
        assert_eq!(later(MemRef::load(0x1ffc, 8192)), [2, 3]);
        assert_eq!(later(MemRef::load(0xffff_ffff_ffff_fffc, 8)), [0]);
    }
}
