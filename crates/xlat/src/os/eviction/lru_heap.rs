//! Exact global LRU without a linked list: a min-heap of (timestamp, frame) entries updated
//! lazily. A use only rewrites the frame's timestamp; when the heap's top entry turns out to
//! be out of date (the page was used since) it is re-pushed with the current timestamp, and
//! when it belongs to a former occupant of the frame it is dropped. Each use costs one store
//! instead of the several scattered writes of moving a list node, and each re-push is paid
//! for by a use.

use crate::os::frames::Frames;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Lazily ordered frames, oldest first.
#[derive(Clone, Debug, Default)]
pub struct LruHeap {
    heap: BinaryHeap<Reverse<(u64, u64, u32)>>,
}

impl LruHeap {
    /// Registers the page just placed in `frame`.
    pub fn insert(&mut self, frames: &Frames, frame: u64) {
        self.heap.push(Reverse((frames.stamp(frame), frame, frames.generation(frame))));
    }

    /// The frame of the least recently used page, which stays registered (the caller evicts
    /// it, and the entry is dropped as stale once the frame is reused). `None` when no
    /// frame is occupied.
    pub fn oldest(&mut self, frames: &Frames) -> Option<u64> {
        while let Some(&Reverse((stamp, frame, generation))) = self.heap.peek() {
            if frames.is_free(frame) || frames.generation(frame) != generation {
                self.heap.pop();
            } else if frames.stamp(frame) != stamp {
                self.heap.pop();
                self.heap.push(Reverse((frames.stamp(frame), frame, generation)));
            } else {
                return Some(frame);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Vpn;
    use proptest::prelude::*;

    proptest! {
        /// The heap's oldest is the occupied frame with the smallest stamp, through any mix of
        /// uses, evictions and reoccupations.
        #[test]
        fn finds_the_true_oldest(ops in proptest::collection::vec((0u8..3, 0u64..40), 1..400)) {
            let mut frames = Frames::new(40);
            let mut heap = LruHeap::default();
            let mut now = 0;
            for (op, frame) in ops {
                now += 1;
                match op {
                    0 if frames.is_free(frame) => {
                        frames.occupy(frame, 0, Vpn(now), now);
                        heap.insert(&frames, frame);
                    }
                    1 if !frames.is_free(frame) => frames.touch(frame, now),
                    _ => {
                        if let Some(f) = heap.oldest(&frames) {
                            let min = (0..40).filter(|&f| !frames.is_free(f)).map(|f| frames.stamp(f)).min();
                            prop_assert_eq!(Some(frames.stamp(f)), min);
                            frames.release(f);
                        } else {
                            prop_assert_eq!(frames.used(), 0);
                        }
                    }
                }
            }
        }
    }
}
