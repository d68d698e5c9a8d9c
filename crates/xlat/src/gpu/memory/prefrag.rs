//! Pre-fragmented memory, the paper's CAC stress test (Section 6.5): data of no application,
//! placed at random before any application runs, that CoCoA's soft guarantee does not cover
//! and that no application page can be coalesced with. `round(index × large frames)` large
//! frames are chosen at random, and in each `round(occupancy × 512)` base frames at random
//! offsets hold the data. Every policy draws the same frames from the same seed.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::pages::Bitmap;
use super::{ManagerSpec, PAGES_PER_LARGE};

/// The pre-fragmented large frames among `large_frames`, ascending, each with the base
/// frames of it the data takes. Empty when `spec.fragmentation_index` is 0.
pub(super) fn prefragment(spec: &ManagerSpec, large_frames: u64) -> Vec<(u32, Bitmap)> {
    let (frames, per_frame) = amounts(spec, large_frames);
    if frames == 0 || per_frame == 0 {
        return Vec::new();
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(spec.prefragment_seed);
    let mut chosen = sample(&mut rng, large_frames as usize, frames);
    chosen.sort_unstable();
    chosen
        .into_iter()
        .map(|frame| {
            let mut data = Bitmap::default();
            for off in sample(&mut rng, PAGES_PER_LARGE as usize, per_frame) {
                data.set(off);
            }
            (frame as u32, data)
        })
        .collect()
}

/// How many of `large_frames` large frames are pre-fragmented, and how many base frames of
/// each the data takes.
pub(super) fn amounts(spec: &ManagerSpec, large_frames: u64) -> (usize, usize) {
    let index = spec.fragmentation_index.clamp(0.0, 1.0);
    let occupancy = spec.frame_occupancy.clamp(0.0, 1.0);
    let frames = (index * large_frames as f64).round() as usize;
    let per_frame = (occupancy * PAGES_PER_LARGE as f64).round() as usize;
    (frames, per_frame)
}

/// The base frames of `frames` (as [`prefragment`] gives them), ascending.
pub(super) fn base_frames(frames: &[(u32, Bitmap)]) -> Vec<u64> {
    frames
        .iter()
        .flat_map(|&(frame, data)| {
            let first = u64::from(frame) * PAGES_PER_LARGE;
            data.ones().map(move |off| first + off as u64)
        })
        .collect()
}

/// `amount` distinct numbers of `0..len`, uniformly (a partial Fisher-Yates shuffle, which
/// depends only on the generator, so a seed gives the same frames on every platform).
fn sample(rng: &mut Xoshiro256PlusPlus, len: usize, amount: usize) -> Vec<usize> {
    let mut all: Vec<usize> = (0..len).collect();
    for i in 0..amount.min(len) {
        let j = rng.random_range(i..len);
        all.swap(i, j);
    }
    all.truncate(amount.min(len));
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(fragmentation_index: f64, frame_occupancy: f64) -> ManagerSpec {
        ManagerSpec {
            fragmentation_index,
            frame_occupancy,
            ..ManagerSpec::default()
        }
    }

    #[test]
    fn half_of_8_frames_at_a_quarter_is_4_frames_of_128() {
        let frames = prefragment(&spec(0.5, 0.25), 8);
        assert_eq!(frames.len(), 4);
        assert!(frames.iter().all(|(_, data)| data.count() == 128));
        assert!(frames.windows(2).all(|w| w[0].0 < w[1].0) && frames[3].0 < 8);
    }

    #[test]
    fn index_0_or_occupancy_0_prefragments_nothing() {
        assert!(prefragment(&spec(0.0, 0.5), 64).is_empty());
        assert!(prefragment(&spec(1.0, 0.0), 64).is_empty());
        assert_eq!(prefragment(&spec(1.0, 1.0), 3).len(), 3);
    }

    #[test]
    fn the_seed_decides_the_frames() {
        let a = prefragment(&spec(0.25, 0.1), 64);
        let b = prefragment(&ManagerSpec { prefragment_seed: 2, ..spec(0.25, 0.1) }, 64);
        assert_eq!(a, prefragment(&spec(0.25, 0.1), 64));
        assert_ne!(a, b);
    }
}
