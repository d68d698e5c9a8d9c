//! Contiguity-aware compaction (CAC): empties a sparsely used large frame by migrating its
//! pages into free slots of other frames of the same application, and returns the frame to
//! CoCoA. A frame is compactable when it belongs to one application (not shared), holds at
//! least one page and fewer than the occupancy threshold. Migration targets are the
//! application's pool frames first (so that reservations keep their slots for their own
//! chunks), fullest first (packing rather than spreading), then its reservations.
//!
//! Under the CAC stress test CAC also moves pre-fragmented data (no application's) out of a
//! free fragmented frame into the free slots of the others, to make an unfragmented frame
//! a chunk can be reserved and coalesced in.

use super::{Bitmap, Invalidation, Mosaic, Role, PAGES_PER_LARGE};

impl Mosaic {
    /// Compaction under memory pressure: empties the least used compactable frame whose
    /// pages fit elsewhere in its application's frames. True when a frame was freed.
    pub(super) fn compact_one(&mut self) -> bool {
        if !self.cac || self.cac_futile {
            return false;
        }
        let frames = self.frames.len() as u32;
        let mut candidates: Vec<u32> = (0..frames).filter(|&f| self.compactable(f)).collect();
        candidates.sort_unstable_by_key(|&f| (self.frames[f as usize].used, f));
        for victim in candidates {
            if self.compact(victim) {
                return true;
            }
        }
        self.cac_futile = true;
        false
    }

    /// Compaction after a free left `frame` sparse (the paper's trigger).
    pub(super) fn compact_sparse(&mut self, frame: u32) {
        if self.cac && self.compactable(frame) {
            self.compact(frame);
        }
    }

    /// True when `frame` may be emptied by compaction.
    fn compactable(&self, frame: u32) -> bool {
        let state = &self.frames[frame as usize];
        state.role != Role::Free && !state.shared && state.used > 0 && state.used < self.threshold
    }

    /// Migrates every page of `victim` into its owner's other frames and frees it; false
    /// (and nothing moved) when they lack the room.
    fn compact(&mut self, victim: u32) -> bool {
        let victim_state = self.frames[victim as usize];
        let targets = self.targets(victim_state.owner, victim);
        let room = targets.iter().map(|&t| {
            let state = &self.frames[t as usize];
            state.usable() - state.used
        });
        let room = room.sum::<u64>();
        if room < victim_state.used {
            return false;
        }
        for slot in victim_state.slots.ones() {
            let Some((target, to)) = self.first_free(&targets) else {
                return false;
            };
            let (app, vpn) = self.take(victim * PAGES_PER_LARGE as u32 + slot as u32);
            self.put(app, vpn, target, to);
            // The page moved: its base entry is stale (a large one was flushed by `take`).
            self.invalidations.push(Invalidation {
                app,
                vpn,
                large: false,
            });
            self.counts.migrated += 1;
        }
        self.release_frame(victim);
        self.counts.compactions += 1;
        true
    }

    /// The frames of `app` that can take `victim`'s pages, in the order to fill them.
    fn targets(&self, app: u16, victim: u32) -> Vec<u32> {
        let owned = self
            .owned
            .get(usize::from(app))
            .map_or(&[][..], Vec::as_slice);
        let frames = &self.frames;
        let mut targets: Vec<u32> = owned
            .iter()
            .copied()
            .filter(|&f| f != victim && !frames[f as usize].shared && frames[f as usize].has_room())
            .collect();
        targets.sort_unstable_by_key(|&f| {
            let state = &frames[f as usize];
            (state.role != Role::Pool, std::cmp::Reverse(state.used), f)
        });
        targets
    }

    /// The first free slot among `targets`, in order.
    fn first_free(&self, targets: &[u32]) -> Option<(u32, usize)> {
        targets
            .iter()
            .find_map(|&t| Some((t, self.frames[t as usize].free_slot()?)))
    }

    /// Frees an unfragmented frame by moving the pre-fragmented data of the free fragmented
    /// frame holding least of it into the other free fragmented frames, fullest first. True
    /// when a frame was freed (it is then the next `free` hands out).
    pub(super) fn defragment(&mut self) -> bool {
        if !self.cac || self.defrag_futile || self.fragmented.len() < 2 {
            return false;
        }
        let frames = &self.frames;
        let holes = |&f: &u32| frames[f as usize].usable();
        // The victim's data fits in the others' holes exactly when all holes add up to a
        // whole frame, whichever frame is the victim.
        if self.fragmented.iter().map(holes).sum::<u64>() < PAGES_PER_LARGE {
            self.defrag_futile = true;
            return false;
        }
        let by_data = |&f: &u32| (frames[f as usize].prefrag.count(), f);
        let at = (0..self.fragmented.len())
            .min_by_key(|&i| by_data(&self.fragmented[i]))
            .unwrap_or(0);
        let victim = self.fragmented.swap_remove(at);
        self.fragmented
            .sort_unstable_by_key(|f| (std::cmp::Reverse(by_data(f).0), *f));
        self.move_prefragmented(victim);
        self.fragmented.retain(|&f| self.frames[f as usize].usable() > 0);
        self.fragmented.sort_unstable_by_key(|&f| std::cmp::Reverse(f));
        self.free.push(victim);
        self.counts.compactions += 1;
        true
    }

    /// Moves every pre-fragmented base frame of `victim` into the first free slots of
    /// `fragmented`, in its order (the caller checked they have room).
    fn move_prefragmented(&mut self, victim: u32) {
        let data = std::mem::replace(&mut self.frames[victim as usize].prefrag, Bitmap::EMPTY);
        let mut targets = self.fragmented.iter();
        let mut target = targets.next().copied();
        for _ in data.ones() {
            while let Some(t) = target {
                let state = &mut self.frames[t as usize];
                if let Some(slot) = state.free_slot() {
                    state.prefrag.set(slot);
                    break;
                }
                target = targets.next().copied();
            }
            self.counts.migrated += 1;
        }
    }
}
