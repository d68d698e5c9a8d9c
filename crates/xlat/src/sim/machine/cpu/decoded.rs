//! The frames recent Mosaic hits decoded to, so that a repeated hit skips the hash.

use crate::types::{Asid, Pfn, Vpn};

/// Slots of a machine's memo: enough for the pages a workload interleaves, few enough
/// (16 KiB) to stay in the host's L2 cache beside the TLBs. A memo with a slot for every
/// sub-entry of the TLB made Graph500 BFS faster still, but an experiment sweeping arities up
/// to 64 slower: its memos outgrew the host's caches.
const SLOTS: usize = 1024;

/// Recently decoded CPFNs of a machine's Mosaic TLBs, by page (its number modulo the
/// slots): the page, ASID and CPFN of a hit and the frame they decode to. Decoding is a pure
/// function of the three, so a later hit with the same three may reuse the frame instead of
/// hashing again; a slot is checked against all three, so the memo needs no invalidation when
/// a page moves or a TLB refills it, and TLBs of different arities can share it.
pub(super) struct DecodedFrames {
    slots: Vec<Slot>,
}

/// One slot, 16 bytes.
#[derive(Clone, Copy)]
struct Slot {
    /// `u64::MAX` (no page number) until the slot is first used.
    vpn: u64,
    /// The frame (below 2^32, as page tables hold frames; larger ones are not kept), the CPFN
    /// at bit 32 and the ASID at bit 40.
    packed: u64,
}

/// The CPFN and ASID bits of a slot's `packed` word, above the frame's 32.
#[inline(always)]
fn tag(cpfn: u8, asid: Asid) -> u64 {
    u64::from(cpfn) | u64::from(asid) << 8
}

impl DecodedFrames {
    /// An empty memo.
    pub(super) fn new() -> DecodedFrames {
        DecodedFrames { slots: vec![Slot { vpn: u64::MAX, packed: 0 }; SLOTS] }
    }

    /// The frame `cpfn` of page `vpn` of `asid` decodes to, if the memo holds it.
    #[inline(always)]
    pub(super) fn get(&self, asid: Asid, vpn: Vpn, cpfn: u8) -> Option<Pfn> {
        let slot = self.slots[vpn.0 as usize % SLOTS];
        (slot.vpn == vpn.0 && slot.packed >> 32 == tag(cpfn, asid)).then(|| Pfn(slot.packed & u64::from(u32::MAX)))
    }

    /// Remembers that `cpfn` of page `vpn` of `asid` decodes to `frame`.
    pub(super) fn put(&mut self, asid: Asid, vpn: Vpn, cpfn: u8, frame: Pfn) {
        if frame.0 <= u64::from(u32::MAX) {
            self.slots[vpn.0 as usize % SLOTS] = Slot { vpn: vpn.0, packed: frame.0 | tag(cpfn, asid) << 32 };
        }
    }
}
