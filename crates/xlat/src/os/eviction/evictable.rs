//! The pages lazy Iceberg LRU has marked evictable (Micro'23, "LRU precision").
//!
//! Iceberg LRU evicts the oldest page whenever more than `1 - δ` of memory is in use, which
//! keeps δ of memory empty. Its lazy variant marks those pages evictable instead and evicts
//! one only when a new page needs its slot: placement treats marked pages as free, like
//! Horizon LRU's ghosts. The marked pages are always the oldest resident pages: they are taken
//! from the global LRU order while more than `1 - δ` of memory holds unmarked pages, and a
//! marked page that is used again is unmarked and goes back into that order.

/// Which frames hold a page marked evictable.
#[derive(Clone, Debug)]
pub struct Evictable {
    marked: Vec<bool>,
    count: u64,
}

impl Evictable {
    /// No page marked, over `frames` frames.
    pub fn new(frames: u64) -> Evictable {
        Evictable { marked: vec![false; frames as usize], count: 0 }
    }

    /// True when the page in `frame` is marked.
    #[inline]
    pub fn is_marked(&self, frame: u64) -> bool {
        self.marked[frame as usize]
    }

    /// Pages marked.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Marks the page in `frame`, which must not be marked.
    pub fn mark(&mut self, frame: u64) {
        debug_assert!(!self.marked[frame as usize]);
        self.marked[frame as usize] = true;
        self.count += 1;
    }

    /// Unmarks the page in `frame` (used again, or evicted); true when it was marked.
    #[inline]
    pub fn unmark(&mut self, frame: u64) -> bool {
        let was = std::mem::take(&mut self.marked[frame as usize]);
        self.count -= u64::from(was);
        was
    }
}
