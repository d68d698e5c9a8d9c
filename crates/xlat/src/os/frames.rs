//! Physical frames as the OS sees them: which page occupies each and when it was last used.

use crate::types::{Asid, Vpn};

/// Per-frame state, indexed by frame number (in units of the OS page size).
///
/// The vectors start zeroed, which the allocator gives as untouched pages, so a large
/// physical memory costs host memory only as its frames are used. Whether a frame is free is
/// read from a bitset, so the other state of a frame is read only once it was occupied, and
/// the first occupation in a group of frames writes the host pages of the group's state
/// before anything reads them. Reading an untouched page first would map the host's shared
/// zero page there, and the first write after it would then cost a copy-on-write fault and,
/// with another of xlat's threads running on the other core, a TLB-shootdown interrupt to it
/// (a seventh of the CPU time of an experiment of eleven 16 GiB iceberg machines).
///
/// An OS that never evicts never asks which page occupies a frame or when it was last used,
/// so its frames keep only the bitset ([`Frames::without_occupants`]): one bit of host memory
/// per frame instead of 22 bytes and a bit, and 177 times fewer host pages to fault in as
/// frames fill. The occupant queries of such frames ([`Frames::owner`], [`Frames::stamp`],
/// [`Frames::release`]...) are bugs, caught by debug assertions (and by the empty vectors'
/// bounds checks).
#[derive(Clone, Debug)]
pub struct Frames {
    /// VPN of the occupying page (meaningful while the frame is occupied, see `occupied`).
    owner: Vec<u64>,
    asid: Vec<u16>,
    /// Last-use time of the occupying page (its recency; larger is more recent).
    stamp: Vec<u64>,
    /// Times a frame was (re)occupied, so that stale references to a former occupant can be
    /// told apart from the current one.
    generation: Vec<u32>,
    /// Per group of [`GROUP_FRAMES`] frames: true once a frame of the group was occupied (and
    /// the host pages of the group's state written).
    written: Vec<bool>,
    /// One bit per frame, set while it is occupied: the free test reads a word shared by 64
    /// frames instead of an owner each, and [`Frames::first_free`] finds the lowest free
    /// frame of a run of frames (an iceberg bucket's front yard) without a loop over them.
    occupied: Vec<u64>,
    used: u64,
    /// Number of frames.
    capacity: u64,
    /// Whether the occupant vectors (`owner` to `written`) are kept.
    occupants: bool,
}

/// The stamp of a pinned frame (a page-table page: kernel memory the OS never evicts), which
/// no use reaches: such a frame is never the oldest of a placement's candidates, nor a
/// ghost below Horizon LRU's horizon.
pub const PINNED: u64 = u64::MAX;

/// Frames per group of [`Frames::written`]: the owners of a group fill one 4 KiB host page.
const GROUP_FRAMES: usize = 512;

impl Frames {
    /// `count` free frames, keeping each one's occupant and last use (for an OS that evicts).
    pub fn new(count: u64) -> Frames {
        Frames::with_occupants(count, true)
    }

    /// `count` free frames that keep only whether each is occupied (for an OS that never
    /// evicts).
    pub fn without_occupants(count: u64) -> Frames {
        Frames::with_occupants(count, false)
    }

    fn with_occupants(count: u64, occupants: bool) -> Frames {
        let n = usize::try_from(count).expect("frame count fits the host's address space");
        let kept = if occupants { n } else { 0 };
        Frames {
            owner: vec![0; kept],
            asid: vec![0; kept],
            stamp: vec![0; kept],
            generation: vec![0; kept],
            written: vec![false; kept.div_ceil(GROUP_FRAMES)],
            occupied: vec![0; n.div_ceil(64)],
            used: 0,
            capacity: count,
            occupants,
        }
    }

    /// Bytes of host memory `count` frames take ([`Frames::new`] when `occupants`, else
    /// [`Frames::without_occupants`]).
    pub fn host_bytes(count: u64, occupants: bool) -> u64 {
        // owner 8, ASID 2, last use 8, generation 4 per frame; the bitset's bit.
        let per_frame = if occupants { 22 } else { 0 };
        count.saturating_mul(per_frame).saturating_add(count.div_ceil(8))
    }

    /// True once a frame of `frame`'s group has been occupied.
    #[inline]
    fn is_written(&self, frame: u64) -> bool {
        self.written[frame as usize / GROUP_FRAMES]
    }

    /// Marks `frame`'s group written, first writing the host pages its state lies on (each
    /// vector's part of a group spans at most two pages, which hold its first and last
    /// frame). Every frame of a group not yet written is still zero, so the writes store zero.
    #[inline]
    fn write_group(&mut self, frame: u64) {
        if self.is_written(frame) {
            return;
        }
        let group = frame as usize / GROUP_FRAMES;
        self.written[group] = true;
        let first = group * GROUP_FRAMES;
        for f in [first, (first + GROUP_FRAMES).min(self.owner.len()) - 1] {
            // Through `black_box`, so that the compiler cannot drop a store of the value the
            // memory already holds.
            *std::hint::black_box(&mut self.owner[f]) = 0;
            *std::hint::black_box(&mut self.asid[f]) = 0;
            *std::hint::black_box(&mut self.stamp[f]) = 0;
            *std::hint::black_box(&mut self.generation[f]) = 0;
        }
    }

    /// Number of frames.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Frames occupied.
    pub fn used(&self) -> u64 {
        self.used
    }

    /// True when `frame` holds no page.
    #[inline]
    pub fn is_free(&self, frame: u64) -> bool {
        self.occupied[frame as usize / 64] >> (frame % 64) & 1 == 0
    }

    /// The lowest free frame among the `count` frames from `first`, if any.
    #[inline]
    pub fn first_free(&self, first: u64, count: u64) -> Option<u64> {
        let end = first + count;
        let mut start = first;
        while start < end {
            // The frames of `start`'s word from `start` on, below `end`: free where the bit is
            // clear.
            let (word, bit) = ((start / 64) as usize, start % 64);
            let span = (64 - bit).min(end - start);
            let free = !self.occupied[word] >> bit & (u64::MAX >> (64 - span));
            if free != 0 {
                return Some(start + u64::from(free.trailing_zeros()));
            }
            start += span;
        }
        None
    }

    /// The lowest occupied frame at or above `from`, if any, found word by word in the
    /// bitset: a scan of a large, mostly empty memory skips 64 free frames at a time.
    pub fn next_occupied(&self, from: u64) -> Option<u64> {
        let mut word = (from / 64) as usize;
        let mut bits = *self.occupied.get(word)? & u64::MAX << (from % 64);
        while bits == 0 {
            word += 1;
            bits = *self.occupied.get(word)?;
        }
        Some(word as u64 * 64 + u64::from(bits.trailing_zeros()))
    }

    /// The page in `frame`, if any.
    #[inline]
    pub fn owner(&self, frame: u64) -> Option<(Asid, Vpn)> {
        debug_assert!(self.occupants, "the owner of a frame whose occupants are not kept");
        (!self.is_free(frame)).then(|| (self.asid[frame as usize], Vpn(self.owner[frame as usize])))
    }

    /// Last-use time of the page in `frame` (0 for a frame never occupied; callers ask about
    /// occupied frames, so this reads no untouched page).
    #[inline]
    pub fn stamp(&self, frame: u64) -> u64 {
        debug_assert!(self.occupants, "the last use of a frame whose occupants are not kept");
        self.stamp[frame as usize]
    }

    /// The frame with the oldest stamp among the `count` (at least one) frames from `first`
    /// (the lowest of equal ones).
    #[inline]
    pub fn oldest_in(&self, first: u64, count: u64) -> u64 {
        debug_assert!(count > 0, "the oldest of no frames");
        debug_assert!(self.occupants, "the oldest of frames whose occupants are not kept");
        let stamps = &self.stamp[first as usize..(first + count) as usize];
        // A running minimum with its index, which compiles to conditional moves: no branch
        // on the stamps, whose order is random.
        let (mut best, mut at) = (u64::MAX, 0);
        for (i, &stamp) in stamps.iter().enumerate() {
            if stamp < best {
                (best, at) = (stamp, i);
            }
        }
        first + at as u64
    }

    /// Records a use of the page in `frame` at time `now`.
    #[inline]
    pub fn touch(&mut self, frame: u64, now: u64) {
        debug_assert!(self.is_written(frame), "frame {frame} was never occupied");
        self.stamp[frame as usize] = now;
    }

    /// How many times `frame` has been occupied.
    #[inline]
    pub fn generation(&self, frame: u64) -> u32 {
        debug_assert!(self.occupants, "the generation of a frame whose occupants are not kept");
        self.generation[frame as usize]
    }

    /// Puts page (`asid`, `vpn`) into free `frame` at time `now`.
    pub fn occupy(&mut self, frame: u64, asid: Asid, vpn: Vpn, now: u64) {
        let f = frame as usize;
        debug_assert!(self.is_free(frame), "frame {frame} is occupied");
        self.occupied[f / 64] |= 1 << (f % 64);
        self.used += 1;
        if !self.occupants {
            return;
        }
        self.write_group(frame);
        self.owner[f] = vpn.0;
        self.asid[f] = asid;
        self.stamp[f] = now;
        self.generation[f] = self.generation[f].wrapping_add(1);
    }

    /// Puts page (`asid`, `vpn`) into free `frame` for good: a pinned frame (see [`PINNED`]).
    pub fn pin(&mut self, frame: u64, asid: Asid, vpn: Vpn) {
        self.occupy(frame, asid, vpn, PINNED);
    }

    /// True when `frame` is pinned (an OS that never evicts keeps no stamps, and needs to
    /// know of none).
    #[inline]
    pub fn is_pinned(&self, frame: u64) -> bool {
        self.occupants && !self.is_free(frame) && self.stamp[frame as usize] == PINNED
    }

    /// Empties pinned `frame` (a page-table page the OS frees), which works whether or not
    /// occupants are kept.
    pub fn unpin(&mut self, frame: u64) {
        debug_assert!(!self.is_free(frame) && (!self.occupants || self.is_pinned(frame)));
        self.vacate(frame);
    }

    /// Empties `frame`, whose page the caller knows (also where occupants are not kept).
    pub fn vacate(&mut self, frame: u64) {
        self.occupied[frame as usize / 64] &= !(1 << (frame % 64));
        self.used -= 1;
    }

    /// True when the `count` frames from `first` are all free.
    pub fn run_is_free(&self, first: u64, count: u64) -> bool {
        first + count <= self.capacity && self.next_occupied(first).is_none_or(|f| f >= first + count)
    }

    /// Empties `frame`, returning the page it held.
    pub fn release(&mut self, frame: u64) -> (Asid, Vpn) {
        let owner = self.owner(frame).expect("released frame is occupied");
        self.vacate(frame);
        owner
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn occupy_and_release() {
        let mut f = Frames::new(4);
        assert!(f.is_free(2));
        f.occupy(2, 7, Vpn(0), 10);
        assert_eq!((f.owner(2), f.stamp(2), f.used()), (Some((7, Vpn(0))), 10, 1));
        let g = f.generation(2);
        assert_eq!(f.release(2), (7, Vpn(0)));
        assert!(f.is_free(2));
        f.occupy(2, 1, Vpn(5), 11);
        assert_ne!(f.generation(2), g);
    }

    proptest::proptest! {
        /// The oldest frame of a run is the first of its least stamps (few distinct stamps,
        /// so that ties are common).
        #[test]
        fn oldest_in_is_the_first_least_stamp(stamps in proptest::collection::vec(1u64..6, 1..200), first in 0usize..200, len in 1usize..80) {
            let mut frames = Frames::new(stamps.len() as u64);
            for (frame, &stamp) in stamps.iter().enumerate() {
                frames.occupy(frame as u64, 0, Vpn(frame as u64), stamp);
            }
            let first = first % stamps.len();
            let len = len.min(stamps.len() - first);
            let expected = (first..first + len).min_by_key(|&f| stamps[f]).expect("a run of one frame or more");
            proptest::prop_assert_eq!(frames.oldest_in(first as u64, len as u64), expected as u64);
        }

        /// Frames without occupants against a set of occupied frames: occupancy, the lowest
        /// free frame of a run, the next occupied frame, the count, over memories that are not a whole number of
        /// bitset words.
        #[test]
        fn without_occupants_matches_a_set(count in 1u64..3000, occupy in proptest::collection::vec(0u64..3000, 0..400)) {
            let mut frames = Frames::without_occupants(count);
            let mut model = std::collections::BTreeSet::new();
            for (now, frame) in occupy.into_iter().enumerate() {
                let frame = frame % count;
                if model.insert(frame) {
                    frames.occupy(frame, 1, Vpn(frame), now as u64);
                }
            }
            proptest::prop_assert_eq!((frames.capacity(), frames.used()), (count, model.len() as u64));
            for frame in 0..count {
                proptest::prop_assert_eq!(frames.is_free(frame), !model.contains(&frame));
            }
            for first in (0..count).step_by(5) {
                for len in [1, 56, 64, 130] {
                    let len = len.min(count - first);
                    let expected = (first..first + len).find(|f| !model.contains(f));
                    proptest::prop_assert_eq!(frames.first_free(first, len), expected);
                }
            }
            for from in 0..=count {
                proptest::prop_assert_eq!(frames.next_occupied(from), model.range(from..).next().copied());
            }
        }

        /// Against a map from frame to (owner, stamp, generation), over memories that are
        /// not a whole number of groups: every frame reads as the model says, whether or
        /// not its group was ever written, and the lowest free frame of a run is the first
        /// the map lacks.
        #[test]
        fn matches_a_map_across_groups(
            count in 1u64..3000,
            full_below in 0u64..3000,
            ops in proptest::collection::vec((0u64..3000, 0u8..3), 0..200),
        ) {
            use std::collections::HashMap;
            let mut frames = Frames::new(count);
            let mut model: HashMap<u64, ((Asid, Vpn), u64, u32)> = HashMap::new();
            let mut generations: HashMap<u64, u32> = HashMap::new();
            // Occupied first (long runs across words of the bitset), then a random mix.
            let prefill = (0..full_below.min(count)).map(|frame| (frame, 0));
            for (now, (frame, op)) in prefill.chain(ops).enumerate() {
                let (frame, now) = (frame % count, now as u64 + 1);
                match (op, model.contains_key(&frame)) {
                    (0, false) => {
                        frames.occupy(frame, 3, Vpn(frame * 7), now);
                        let g = generations.entry(frame).or_default();
                        *g += 1;
                        model.insert(frame, ((3, Vpn(frame * 7)), now, *g));
                    }
                    (1, true) => {
                        proptest::prop_assert_eq!(Some(frames.release(frame)), model.remove(&frame).map(|(o, ..)| o));
                    }
                    (2, true) => {
                        frames.touch(frame, now);
                        model.get_mut(&frame).expect("occupied").1 = now;
                    }
                    _ => {}
                }
            }
            for frame in 0..count {
                let expected = model.get(&frame);
                proptest::prop_assert_eq!(frames.is_free(frame), expected.is_none());
                proptest::prop_assert_eq!(frames.owner(frame), expected.map(|e| e.0));
                if let Some(&(_, stamp, generation)) = expected {
                    proptest::prop_assert_eq!((frames.stamp(frame), frames.generation(frame)), (stamp, generation));
                }
            }
            proptest::prop_assert_eq!(frames.used(), model.len() as u64);
            for first in (0..count).step_by(7) {
                for len in [1, 8, 56, 64, 100] {
                    let len = len.min(count - first);
                    let expected = (first..first + len).find(|f| !model.contains_key(f));
                    proptest::prop_assert_eq!(frames.first_free(first, len), expected, "{} from {}", len, first);
                }
            }
        }
    }
}
