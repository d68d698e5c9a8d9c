//! Unit types for addresses and page numbers, so that a page number cannot be added to a byte
//! address by accident.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Address-space identifier (process context) that tags TLB entries and page tables.
pub type Asid = u16;

/// A 64-bit virtual byte address.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VirtAddr(pub u64);

/// A page of an address space: its first base page and its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Page {
    /// The address space.
    pub asid: Asid,
    /// The page's first base page.
    pub vpn: Vpn,
    /// Its size.
    pub size: PageSize,
}

/// A virtual page number, always in units of the 4 KiB base page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Vpn(pub u64);

/// A physical frame number, always in units of the 4 KiB base frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pfn(pub u64);

/// A physical byte address: where in the machine's memory a page-table entry or a datum is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PhysAddr(pub u64);

/// log2 of the base page size (4 KiB).
pub const BASE_PAGE_SHIFT: u32 = 12;

impl VirtAddr {
    /// The base (4 KiB) page that holds this address.
    #[inline]
    pub fn vpn(self) -> Vpn {
        Vpn(self.0 >> BASE_PAGE_SHIFT)
    }
}

impl Vpn {
    /// The first byte address of this page.
    #[inline]
    pub fn addr(self) -> VirtAddr {
        VirtAddr(self.0 << BASE_PAGE_SHIFT)
    }
}

impl fmt::Display for VirtAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// The page sizes x86-64 supports, which are the ones a TLB entry can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum PageSize {
    /// 4 KiB base page.
    #[serde(rename = "4KiB")]
    Size4K,
    /// 2 MiB huge page.
    #[serde(rename = "2MiB")]
    Size2M,
    /// 1 GiB huge page.
    #[serde(rename = "1GiB")]
    Size1G,
}

impl PageSize {
    /// All page sizes, smallest first.
    pub const ALL: [PageSize; 3] = [PageSize::Size4K, PageSize::Size2M, PageSize::Size1G];

    /// log2 of the page size in bytes.
    #[inline]
    pub const fn shift(self) -> u32 {
        match self {
            PageSize::Size4K => 12,
            PageSize::Size2M => 21,
            PageSize::Size1G => 30,
        }
    }

    /// The page size in bytes.
    #[inline]
    pub const fn bytes(self) -> u64 {
        1 << self.shift()
    }

    /// The first base page of the page of this size holding `vaddr`.
    #[inline]
    pub const fn first_vpn(self, vaddr: u64) -> Vpn {
        Vpn((vaddr >> self.shift()) << (self.shift() - BASE_PAGE_SHIFT))
    }

    /// How many 4 KiB base pages one page of this size spans.
    #[inline]
    pub const fn base_pages(self) -> u64 {
        1 << (self.shift() - BASE_PAGE_SHIFT)
    }

    /// A small dense index (0, 1, 2) used to tag TLB entries.
    #[inline]
    pub const fn index(self) -> usize {
        match self {
            PageSize::Size4K => 0,
            PageSize::Size2M => 1,
            PageSize::Size1G => 2,
        }
    }

    /// Parses `4KiB`, `2MiB` or `1GiB` (also `4K`, `2M`, `1G`, case-insensitive).
    pub fn parse(text: &str) -> Option<PageSize> {
        match crate::units::parse_bytes(text).ok()? {
            0x1000 => Some(PageSize::Size4K),
            0x20_0000 => Some(PageSize::Size2M),
            0x4000_0000 => Some(PageSize::Size1G),
            _ => None,
        }
    }
}

/// A mapping of one page: what a page-table walk returns and what a TLB entry caches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Translation {
    /// Address space of the mapping.
    pub asid: Asid,
    /// First base page of the mapped page (aligned to `size`).
    pub vpn: Vpn,
    /// First base frame of the mapped page (aligned to `size`).
    pub pfn: Pfn,
    /// Size of the mapped page.
    pub size: PageSize,
}

impl Translation {
    /// True if this mapping translates `vaddr` in address space `asid`.
    #[inline]
    pub fn covers(&self, asid: Asid, vaddr: u64) -> bool {
        asid == self.asid && vaddr >> self.size.shift() == self.vpn.0 >> (self.size.shift() - BASE_PAGE_SHIFT)
    }

    /// The base frame that holds `vaddr` (which must be covered by this mapping).
    #[inline]
    pub fn pfn_of(&self, vaddr: u64) -> Pfn {
        Pfn(self.pfn.0 + ((vaddr >> BASE_PAGE_SHIFT) - self.vpn.0))
    }

    /// The part of this mapping, of the smaller `size`, that covers `vaddr` (splintering a huge
    /// page into a smaller TLB entry, as hardware does when a level lacks the larger size).
    #[inline]
    pub fn splinter(&self, vaddr: u64, size: PageSize) -> Translation {
        let first = (vaddr >> size.shift()) << (size.shift() - BASE_PAGE_SHIFT);
        Translation { asid: self.asid, vpn: Vpn(first), pfn: self.pfn_of(first << BASE_PAGE_SHIFT), size }
    }
}

impl fmt::Display for PageSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PageSize::Size4K => "4KiB",
            PageSize::Size2M => "2MiB",
            PageSize::Size1G => "1GiB",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_size_geometry() {
        assert_eq!(PageSize::Size4K.bytes(), 4096);
        assert_eq!(PageSize::Size2M.base_pages(), 512);
        assert_eq!(PageSize::Size1G.base_pages(), 512 * 512);
        assert_eq!(PageSize::parse("2mib"), Some(PageSize::Size2M));
        assert_eq!(PageSize::parse("1G"), Some(PageSize::Size1G));
        assert_eq!(PageSize::parse("8KiB"), None);
    }

    #[test]
    fn translation_covers_and_splinters() {
        let t = Translation { asid: 1, vpn: Vpn(512), pfn: Pfn(4096), size: PageSize::Size2M };
        assert!(t.covers(1, 0x20_0000 + 0x1234));
        assert!(!t.covers(0, 0x20_0000));
        assert!(!t.covers(1, 0x40_0000));
        assert_eq!(t.pfn_of(0x20_3000), Pfn(4099));
        let small = t.splinter(0x20_3abc, PageSize::Size4K);
        assert_eq!((small.vpn, small.pfn, small.size), (Vpn(515), Pfn(4099), PageSize::Size4K));
    }

    #[test]
    fn vpn_round_trip() {
        let a = VirtAddr(0x7fff_1234_5678);
        assert_eq!(a.vpn(), Vpn(0x0007_fff1_2345));
        assert_eq!(a.vpn().addr(), VirtAddr(0x7fff_1234_5000));
    }
}
