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

/// A batch of references with the number of instructions they span.
///
/// Sources append to a batch that the consumer clears and reuses, so the hot path allocates
/// nothing after the first batch.
#[derive(Clone, Debug, Default)]
pub struct Batch {
    /// The references, in program order.
    pub refs: Vec<MemRef>,
    /// Instructions retired over these references (0 when the source does not know).
    pub instructions: u64,
}

impl Batch {
    /// An empty batch with room for `capacity` references.
    pub fn with_capacity(capacity: usize) -> Batch {
        Batch { refs: Vec::with_capacity(capacity), instructions: 0 }
    }

    /// Empties the batch, keeping its allocation.
    pub fn clear(&mut self) {
        self.refs.clear();
        self.instructions = 0;
    }

    /// Number of references held.
    pub fn len(&self) -> usize {
        self.refs.len()
    }

    /// True when the batch holds no reference.
    pub fn is_empty(&self) -> bool {
        self.refs.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
