//! Exact global LRU without a linked list: a priority queue of (timestamp, frame) entries
//! updated lazily. A use only rewrites the frame's timestamp; when the queue's oldest entry
//! turns out to be out of date (the page was used since) it is pushed again with the current
//! timestamp, and when it belongs to a former occupant of the frame it is dropped. Each use
//! costs one store instead of the several scattered writes of moving a list node, and each
//! re-push is paid for by a use.
//!
//! Every timestamp pushed is at least the last one taken out (a page is registered when it is
//! placed, at the current time, and pushed again with a later use), so the queue is monotone
//! and a radix heap serves: pushes append to one of 65 buckets and each entry moves between
//! buckets at most once per bit of the timestamps, where a binary heap of a million frames
//! sifts through twenty levels at scattered addresses on every push and pop.

use crate::os::frames::Frames;
use radix_heap::RadixHeapMap;
use std::cmp::Reverse;

/// Lazily ordered frames, oldest first.
#[derive(Clone, Debug, Default)]
pub struct LruHeap {
    /// Timestamp (reversed: the crate's heaps pop the largest key first) to frame and the
    /// generation of its occupant, both 32 bits (frame numbers fit the page table's 32 bits).
    heap: RadixHeapMap<Reverse<u64>, (u32, u32)>,
}

impl LruHeap {
    /// Registers the page just placed in `frame`.
    pub fn insert(&mut self, frames: &Frames, frame: u64) {
        let frame32 = u32::try_from(frame).expect("frame numbers fit the page table's 32 bits");
        self.heap.push(Reverse(frames.stamp(frame)), (frame32, frames.generation(frame)));
    }

    /// Takes out the frame of the least recently used page, which the caller evicts. `None`
    /// when no frame is occupied.
    pub fn oldest(&mut self, frames: &Frames) -> Option<u64> {
        while let Some((Reverse(stamp), (frame32, generation))) = self.heap.pop() {
            let frame = u64::from(frame32);
            if frames.is_free(frame) || frames.generation(frame) != generation {
                continue;
            }
            if frames.stamp(frame) != stamp {
                self.heap.push(Reverse(frames.stamp(frame)), (frame32, generation));
                continue;
            }
            return Some(frame);
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
