//! Where the iceberg memory puts a page: the front yard of its bucket if it has room, else
//! the least-loaded of its backyard choices (power of d choices). Ghost pages (Horizon LRU's
//! pages last used before the horizon, lazy Iceberg LRU's pages marked evictable) count as
//! free: a ghost's slot is taken by evicting it, and ghosts do not count towards a backyard's
//! load.

use super::geometry::{Layout, Slot, TieBreak};
use crate::os::eviction::evictable::Evictable;
use crate::os::frames::Frames;

/// Which occupied frames hold ghosts, per eviction policy.
#[derive(Clone, Copy, Debug)]
pub enum Ghosts<'a> {
    /// None: every occupied frame holds a live page.
    None,
    /// Horizon LRU's: the pages last used before this time (the horizon).
    Before(u64),
    /// Lazy Iceberg LRU's: the pages marked evictable.
    Marked(&'a Evictable),
}

impl Ghosts<'_> {
    /// Whether the (occupied) `frame` holds a ghost.
    #[inline]
    fn holds(self, frames: &Frames, frame: u64) -> bool {
        match self {
            Ghosts::None => false,
            Ghosts::Before(horizon) => frames.stamp(frame) < horizon,
            Ghosts::Marked(evictable) => evictable.is_marked(frame),
        }
    }
}

/// A slot chosen for a new page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placed {
    /// The slot, relative to the page's candidates.
    pub slot: Slot,
    /// Its frame.
    pub frame: u64,
    /// True when the frame holds a ghost that must be evicted first.
    pub evicts_ghost: bool,
}

/// Whether the page in `frame` is live: present and not a ghost.
#[inline]
fn live(frames: &Frames, frame: u64, ghosts: Ghosts) -> bool {
    !frames.is_free(frame) && !ghosts.holds(frames, frame)
}

/// The first free slot of a yard of `count` consecutive frames from `base` (its lowest free
/// frame: slots are frames in slot order), else its oldest ghost (the lowest such frame
/// among equal stamps); `slot(i)` names slot `i`.
fn free_or_oldest_ghost(frames: &Frames, base: u64, count: u32, slot: impl Fn(u32) -> Slot, ghosts: Ghosts) -> Option<Placed> {
    if let Some(frame) = frames.first_free(base, u64::from(count)) {
        return Some(Placed { slot: slot((frame - base) as u32), frame, evicts_ghost: false });
    }
    // No frame is free now: a frame that is not live holds a ghost.
    let oldest = match ghosts {
        Ghosts::None => None,
        // Horizon LRU's ghosts are the pages older than the horizon, so the yard's oldest
        // page is its oldest ghost if it has any: one pass over the stamps, no test per frame.
        Ghosts::Before(horizon) => Some(frames.oldest_in(base, u64::from(count))).filter(|&frame| frames.stamp(frame) < horizon),
        Ghosts::Marked(_) => (base..base + u64::from(count))
            .filter(|&frame| ghosts.holds(frames, frame))
            .min_by_key(|&frame| frames.stamp(frame)),
    };
    oldest.map(|frame| Placed { slot: slot((frame - base) as u32), frame, evicts_ghost: true })
}

/// The first frame of the front yard of `key`.
fn front_base(layout: &Layout, key: u64) -> u64 {
    layout.bucket(key, 0) * layout.spec().bucket_frames()
}

/// The first frame of the backyard of choice `choice` of `key`.
fn back_base(layout: &Layout, key: u64, choice: u32) -> u64 {
    let spec = layout.spec();
    layout.bucket(key, choice) * spec.bucket_frames() + u64::from(spec.front)
}

/// The front-yard slots of `key` with their frames.
fn front_slots(layout: &Layout, key: u64) -> impl Iterator<Item = (Slot, u64)> + '_ {
    let base = front_base(layout, key);
    (0..layout.spec().front).map(move |s| (Slot::Front(s), base + u64::from(s)))
}

/// The backyard slots of choice `choice` of `key` with their frames.
fn back_slots(layout: &Layout, key: u64, choice: u32) -> impl Iterator<Item = (Slot, u64)> + '_ {
    let base = back_base(layout, key, choice);
    (0..layout.spec().back).map(move |slot| (Slot::Back { choice, slot }, base + u64::from(slot)))
}

/// Every candidate slot of `key` with its frame, front yard first.
pub fn candidates(layout: &Layout, key: u64) -> impl Iterator<Item = (Slot, u64)> + '_ {
    front_slots(layout, key).chain((1..=layout.spec().choices).flat_map(move |c| back_slots(layout, key, c)))
}

/// Where the page of `key` goes, or `None` when every candidate slot holds a live page (an
/// associativity conflict). `ghosts` says which occupied frames hold ghosts.
pub fn place(layout: &Layout, frames: &Frames, key: u64, ghosts: Ghosts) -> Option<Placed> {
    let spec = layout.spec();
    if let Some(p) = free_or_oldest_ghost(frames, front_base(layout, key), spec.front, Slot::Front, ghosts) {
        return Some(p);
    }
    let mut best: Option<(u32, u32)> = None;
    // The search starts at the first choice, or at one drawn from the key; the first least
    // loaded found wins.
    let start = match spec.tie_break {
        TieBreak::First => 0,
        TieBreak::Random => (mix(key) % u64::from(spec.choices)) as u32,
    };
    for i in 0..spec.choices {
        let choice = 1 + (start + i) % spec.choices;
        let load = back_slots(layout, key, choice).filter(|&(_, f)| live(frames, f, ghosts)).count() as u32;
        if load < spec.back && best.is_none_or(|(_, l)| load < l) {
            best = Some((choice, load));
        }
    }
    let (choice, _) = best?;
    free_or_oldest_ghost(frames, back_base(layout, key, choice), spec.back, |slot| Slot::Back { choice, slot }, ghosts)
}

/// A hash of `key` independent of the placement hashes, for a tie-break drawn per page.
fn mix(key: u64) -> u64 {
    xxhash_rust::xxh64::xxh64(&key.to_le_bytes(), 0x7469_6562_7265_616b)
}

/// The least recently used of `key`'s candidate pages (all occupied).
pub fn oldest_candidate(layout: &Layout, frames: &Frames, key: u64) -> Placed {
    let (slot, frame) = candidates(layout, key).min_by_key(|&(_, f)| frames.stamp(f)).expect("a page has candidates");
    Placed { slot, frame, evicts_ghost: false }
}

/// The slot of `key` whose frame is `frame` (the first, if choices share a bucket).
pub fn slot_of(layout: &Layout, key: u64, frame: u64) -> Option<Slot> {
    candidates(layout, key).find(|&(_, f)| f == frame).map(|(s, _)| s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::iceberg::IcebergSpec;
    use crate::types::Vpn;

    fn layout() -> Layout {
        Layout::new(IcebergSpec::default(), 64 * 60)
    }

    #[test]
    fn front_yard_fills_first_then_least_loaded_backyard() {
        let layout = layout();
        let mut frames = Frames::new(64 * 60);
        let key = 12345;
        for i in 0..56 {
            let p = place(&layout, &frames, key, Ghosts::None).unwrap();
            assert_eq!(p.slot, Slot::Front(i));
            frames.occupy(p.frame, 0, Vpn(i.into()), 1);
        }
        // Load choice 1's backyard with one page: the next page goes to choice 2.
        let c1 = layout.frame(key, Slot::Back { choice: 1, slot: 0 });
        frames.occupy(c1, 1, Vpn(0), 1);
        let p = place(&layout, &frames, key, Ghosts::None).unwrap();
        assert_eq!(p.slot, Slot::Back { choice: 2, slot: 0 });
    }

    #[test]
    fn ghosts_count_as_free_and_the_oldest_goes() {
        let layout = layout();
        let mut frames = Frames::new(64 * 60);
        let key = 99;
        for (s, frame) in candidates(&layout, key).collect::<Vec<_>>() {
            let stamp = match s {
                Slot::Front(i) => 100 + u64::from(i),
                Slot::Back { .. } => 1000,
            };
            frames.occupy(frame, 0, Vpn(frame), stamp);
        }
        assert_eq!(place(&layout, &frames, key, Ghosts::None), None, "all live: conflict");
        assert_eq!(place(&layout, &frames, key, Ghosts::Before(100)), None, "nothing below the horizon");
        let p = place(&layout, &frames, key, Ghosts::Before(103)).unwrap();
        assert_eq!((p.slot, p.evicts_ghost), (Slot::Front(0), true));
        assert_eq!(oldest_candidate(&layout, &frames, key).slot, Slot::Front(0));
    }
}
