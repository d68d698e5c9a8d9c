//! Where the iceberg memory puts a page: the front yard of its bucket if it has room, else
//! the least-loaded of its backyard choices (power of d choices). Ghost pages (Horizon LRU's
//! pages last used before the horizon, lazy Iceberg LRU's pages marked evictable) count as
//! free: a ghost's slot is taken by evicting it, and ghosts do not count towards a backyard's
//! load.

use super::geometry::{Layout, Slot, TieBreak};
use crate::os::frames::Frames;

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
fn live(frames: &Frames, frame: u64, ghost: impl Fn(u64) -> bool) -> bool {
    !frames.is_free(frame) && !ghost(frame)
}

/// The first free slot of a yard of `count` consecutive frames from `base` (its lowest free
/// frame: slots are frames in slot order), else its oldest ghost; `slot(i)` names slot `i`.
fn free_or_oldest_ghost(frames: &Frames, base: u64, count: u32, slot: impl Fn(u32) -> Slot, ghost: impl Fn(u64) -> bool) -> Option<Placed> {
    if let Some(frame) = frames.first_free(base, u64::from(count)) {
        return Some(Placed { slot: slot((frame - base) as u32), frame, evicts_ghost: false });
    }
    // No frame is free now: a frame that is not live holds a ghost.
    let mut oldest: Option<(u64, u32)> = None;
    for i in 0..count {
        let frame = base + u64::from(i);
        if ghost(frame) && oldest.is_none_or(|(stamp, _)| frames.stamp(frame) < stamp) {
            oldest = Some((frames.stamp(frame), i));
        }
    }
    oldest.map(|(_, i)| Placed { slot: slot(i), frame: base + u64::from(i), evicts_ghost: true })
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
/// associativity conflict). `ghost(frame)` says whether the (occupied) frame holds a ghost.
pub fn place(layout: &Layout, frames: &Frames, key: u64, ghost: impl Fn(u64) -> bool) -> Option<Placed> {
    let spec = layout.spec();
    if let Some(p) = free_or_oldest_ghost(frames, front_base(layout, key), spec.front, Slot::Front, &ghost) {
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
        let load = back_slots(layout, key, choice).filter(|&(_, f)| live(frames, f, &ghost)).count() as u32;
        if load < spec.back && best.is_none_or(|(_, l)| load < l) {
            best = Some((choice, load));
        }
    }
    let (choice, _) = best?;
    free_or_oldest_ghost(frames, back_base(layout, key, choice), spec.back, |slot| Slot::Back { choice, slot }, ghost)
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
            let p = place(&layout, &frames, key, |_| false).unwrap();
            assert_eq!(p.slot, Slot::Front(i));
            frames.occupy(p.frame, 0, Vpn(i.into()), 1);
        }
        // Load choice 1's backyard with one page: the next page goes to choice 2.
        let c1 = layout.frame(key, Slot::Back { choice: 1, slot: 0 });
        frames.occupy(c1, 1, Vpn(0), 1);
        let p = place(&layout, &frames, key, |_| false).unwrap();
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
        let stamps = &frames;
        let below = |horizon: u64| move |f: u64| stamps.stamp(f) < horizon;
        assert_eq!(place(&layout, &frames, key, |_| false), None, "all live: conflict");
        assert_eq!(place(&layout, &frames, key, below(100)), None, "nothing below the horizon");
        let p = place(&layout, &frames, key, below(103)).unwrap();
        assert_eq!((p.slot, p.evicts_ghost), (Slot::Front(0), true));
        assert_eq!(oldest_candidate(&layout, &frames, key).slot, Slot::Front(0));
    }
}
