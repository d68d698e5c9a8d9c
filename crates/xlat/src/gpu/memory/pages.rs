//! Building blocks the policies share: page ranges of an allocation, the 512-bit presence
//! bitmap of a 2 MiB chunk, and the frame-usage counters behind the statistics.

use std::ops::Range;

use rustc_hash::FxHashMap;

use super::{AppId, PAGES_PER_LARGE};

/// Bytes of a base page.
pub(super) const BASE_BYTES: u64 = 4096;

/// Bytes of a large page.
pub(super) const LARGE_BYTES: u64 = BASE_BYTES * PAGES_PER_LARGE;

/// Marks a base frame slot holding no page (frames are counted in `u32`: 16 TiB of memory).
pub(super) const NO_FRAME: u32 = u32::MAX;

/// The base pages of `[base, base + bytes)`: every page the range overlaps, so an unaligned
/// start or size rounds outwards to whole 4 KiB pages. Empty for `bytes == 0`.
pub(super) fn page_range(base: u64, bytes: u64) -> Range<u64> {
    if bytes == 0 {
        return 0..0;
    }
    let last = base.saturating_add(bytes - 1) / BASE_BYTES;
    base / BASE_BYTES..last + 1
}

/// The 2 MiB chunk holding base page `vpn`, and the page's offset in it.
#[inline]
pub(super) fn split(vpn: u64) -> (u64, usize) {
    (vpn / PAGES_PER_LARGE, (vpn % PAGES_PER_LARGE) as usize)
}

/// The pages of `range` grouped by chunk, in ascending order: (chunk, its pages in range).
pub(super) fn chunk_masks(range: Range<u64>) -> impl Iterator<Item = (u64, Bitmap)> {
    let chunks = if range.is_empty() {
        0..0
    } else {
        range.start / PAGES_PER_LARGE..(range.end - 1) / PAGES_PER_LARGE + 1
    };
    chunks.map(move |chunk| {
        let first = chunk * PAGES_PER_LARGE;
        let lo = range.start.max(first) - first;
        let hi = range.end.min(first + PAGES_PER_LARGE) - first;
        (chunk, Bitmap::span(lo as usize, hi as usize))
    })
}

/// One bit per base page of a 2 MiB chunk (or per base frame of a large frame).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Bitmap([u64; 8]);

impl Bitmap {
    /// No bit set.
    pub(super) const EMPTY: Bitmap = Bitmap([0; 8]);

    /// Every bit set.
    pub(super) const FULL: Bitmap = Bitmap([u64::MAX; 8]);

    /// Bits `lo..hi` set.
    fn span(lo: usize, hi: usize) -> Bitmap {
        let mut map = Bitmap::default();
        for i in lo..hi {
            map.set(i);
        }
        map
    }

    /// Whether bit `i` is set.
    #[inline]
    pub(super) fn get(&self, i: usize) -> bool {
        self.0[i / 64] >> (i % 64) & 1 == 1
    }

    /// Sets bit `i`.
    #[inline]
    pub(super) fn set(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }

    /// Clears bit `i`.
    #[inline]
    pub(super) fn clear(&mut self, i: usize) {
        self.0[i / 64] &= !(1 << (i % 64));
    }

    /// Bits set.
    pub(super) fn count(&self) -> u64 {
        self.0.iter().map(|w| u64::from(w.count_ones())).sum()
    }

    /// True when no bit is set.
    pub(super) fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    /// The lowest clear bit, if any.
    pub(super) fn first_zero(&self) -> Option<usize> {
        let (word, bits) = self.0.iter().enumerate().find(|(_, &w)| w != u64::MAX)?;
        Some(word * 64 + (!bits).trailing_zeros() as usize)
    }

    /// Bits set here and not in `other`.
    pub(super) fn minus(&self, other: &Bitmap) -> Bitmap {
        Bitmap(std::array::from_fn(|i| self.0[i] & !other.0[i]))
    }

    /// Bits set here and in `other`.
    pub(super) fn and(&self, other: &Bitmap) -> Bitmap {
        Bitmap(std::array::from_fn(|i| self.0[i] & other.0[i]))
    }

    /// Bits set here or in `other`.
    pub(super) fn or(&self, other: &Bitmap) -> Bitmap {
        Bitmap(std::array::from_fn(|i| self.0[i] | other.0[i]))
    }

    /// The set bits, ascending.
    pub(super) fn ones(self) -> impl Iterator<Item = usize> {
        (0..8).flat_map(move |word| {
            let mut bits = self.0[word];
            std::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let bit = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    word * 64 + bit
                })
            })
        })
    }
}

/// Frames in use and reserved now, and their peaks.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Usage {
    /// Base frames holding a page.
    pub(super) used: u64,
    /// Base frames taken from the free memory.
    pub(super) reserved: u64,
    /// Peak of `used`.
    pub(super) peak_used: u64,
    /// Peak of `reserved`.
    pub(super) peak_reserved: u64,
}

impl Usage {
    /// Adds `pages` resident pages.
    pub(super) fn add_used(&mut self, pages: u64) {
        self.used += pages;
        self.peak_used = self.peak_used.max(self.used);
    }

    /// Removes `pages` resident pages.
    pub(super) fn sub_used(&mut self, pages: u64) {
        self.used -= pages;
    }

    /// Adds `frames` reserved base frames.
    pub(super) fn add_reserved(&mut self, frames: u64) {
        self.reserved += frames;
        self.peak_reserved = self.peak_reserved.max(self.reserved);
    }

    /// Removes `frames` reserved base frames.
    pub(super) fn sub_reserved(&mut self, frames: u64) {
        self.reserved -= frames;
    }

    /// The frame counts as statistics, every other count zero for the policy to fill.
    pub(super) fn stats(&self) -> super::ManagerStats {
        super::ManagerStats {
            frames_used: self.used,
            frames_reserved: self.reserved,
            peak_frames_reserved: self.peak_reserved,
            peak_pages_resident: self.peak_used,
            ..super::ManagerStats::default()
        }
    }
}

/// A policy's record of one 2 MiB virtual chunk of an application.
pub(super) trait ChunkRecord: Default {
    /// The chunk's pages in a live allocation.
    fn allocated(&mut self) -> &mut Bitmap;
}

/// Every application's chunks, keyed by chunk number: one hash lookup per translation.
#[derive(Debug)]
pub(super) struct Tables<C> {
    apps: Vec<FxHashMap<u64, C>>,
}

/// The pages an allocation newly made live, chunk by chunk.
pub(super) type Newly = Vec<(u64, Bitmap)>;

impl<C: ChunkRecord> Tables<C> {
    /// Tables for `apps` applications.
    pub(super) fn new(apps: usize) -> Tables<C> {
        Tables {
            apps: (0..apps).map(|_| FxHashMap::default()).collect(),
        }
    }

    /// The record of `chunk` of `app`, if any page of it is allocated.
    #[inline]
    pub(super) fn get(&self, app: AppId, chunk: u64) -> Option<&C> {
        self.apps.get(usize::from(app))?.get(&chunk)
    }

    /// The record of `chunk` of `app`, mutably.
    #[inline]
    pub(super) fn get_mut(&mut self, app: AppId, chunk: u64) -> Option<&mut C> {
        self.apps.get_mut(usize::from(app))?.get_mut(&chunk)
    }

    /// The chunks of `app`, the table grown for an application id beyond those built for.
    fn app_mut(&mut self, app: AppId) -> &mut FxHashMap<u64, C> {
        let index = usize::from(app);
        if index >= self.apps.len() {
            self.apps.resize_with(index + 1, FxHashMap::default);
        }
        &mut self.apps[index]
    }

    /// Marks the pages of `range` allocated, returning those that were not already.
    pub(super) fn mark(&mut self, app: AppId, range: Range<u64>) -> Newly {
        let table = self.app_mut(app);
        let mut newly = Vec::new();
        for (chunk, mask) in chunk_masks(range) {
            let allocated = table.entry(chunk).or_default().allocated();
            let fresh = mask.minus(allocated);
            *allocated = allocated.or(&fresh);
            newly.push((chunk, fresh));
        }
        newly
    }

    /// Undoes [`Tables::mark`] for pages none of which was placed.
    pub(super) fn unmark(&mut self, app: AppId, newly: &Newly) {
        let table = self.app_mut(app);
        for (chunk, fresh) in newly {
            if let Some(record) = table.get_mut(chunk) {
                let allocated = record.allocated();
                *allocated = allocated.minus(fresh);
                if allocated.is_empty() {
                    table.remove(chunk);
                }
            }
        }
    }

    /// Forgets `chunk` of `app` (its last allocated page was freed).
    pub(super) fn remove(&mut self, app: AppId, chunk: u64) {
        self.app_mut(app).remove(&chunk);
    }
}

/// Pages of a [`Newly`] list.
pub(super) fn count_pages(newly: &Newly) -> u64 {
    newly.iter().map(|(_, fresh)| fresh.count()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unaligned_ranges_round_outwards() {
        assert_eq!(page_range(4096 * 3 + 100, 5000), 3..5);
        assert_eq!(page_range(4096, 4096), 1..2);
        assert_eq!(page_range(4096, 0), 0..0);
        assert_eq!(page_range(4096, 1), 1..2);
    }

    #[test]
    fn chunk_masks_cover_the_range_exactly() {
        let masks: Vec<_> = chunk_masks(510..1030).collect();
        assert_eq!(masks.len(), 3);
        assert_eq!((masks[0].0, masks[0].1.count()), (0, 2));
        assert_eq!((masks[1].0, masks[1].1), (1, Bitmap::FULL));
        assert_eq!((masks[2].0, masks[2].1.count()), (2, 6));
        assert_eq!(chunk_masks(7..7).count(), 0);
    }

    #[test]
    fn bitmap_operations() {
        let mut map = Bitmap::default();
        assert_eq!(map.first_zero(), Some(0));
        for i in [0, 63, 64, 511] {
            map.set(i);
        }
        assert_eq!(map.ones().collect::<Vec<_>>(), vec![0, 63, 64, 511]);
        assert_eq!(map.first_zero(), Some(1));
        map.clear(63);
        assert!(!map.get(63) && map.get(64));
        assert_eq!(map.count(), 3);
        assert_eq!(Bitmap::FULL.first_zero(), None);
        assert_eq!(Bitmap::FULL.minus(&map).count(), 509);
    }
}
