//! Which set of a set-associative array a tag maps to.

/// Maps a tag (a page number, or a Mosaic page number) onto one of `sets` sets: by its low bits
/// when the set count is a power of two (a mask, the common case), else by remainder (for
/// geometries such as 1536 entries 8-way, 192 sets).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SetIndex {
    sets: u64,
    mask: Option<u64>,
}

impl SetIndex {
    /// Indexing for `sets` sets (at least one).
    pub(crate) fn new(sets: usize) -> SetIndex {
        let sets = sets as u64;
        SetIndex { sets, mask: sets.is_power_of_two().then_some(sets - 1) }
    }

    /// The set of `tag`.
    #[inline(always)]
    pub(crate) fn of(self, tag: u64) -> usize {
        match self.mask {
            Some(mask) => (tag & mask) as usize,
            None => (tag % self.sets) as usize,
        }
    }
}
