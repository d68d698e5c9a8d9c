//! Set-associative placement (Micro'23 Fig. 3's baseline): the low bits of a page's VPN
//! choose a set of `ways` contiguous frames, and the page may use only those.

use super::frames::Frames;
use crate::types::Vpn;

/// The sets of a set-associative memory.
#[derive(Clone, Copy, Debug)]
pub struct SetAssociative {
    sets: u64,
    ways: u64,
}

impl SetAssociative {
    /// `frames` frames in sets of `ways` (which must divide `frames`).
    pub fn new(frames: u64, ways: u64) -> SetAssociative {
        debug_assert!(ways > 0 && frames % ways == 0);
        SetAssociative { sets: frames / ways, ways }
    }

    /// The frames `vpn` may use.
    pub fn candidates(&self, vpn: Vpn) -> std::ops::Range<u64> {
        let set = vpn.0 % self.sets;
        set * self.ways..(set + 1) * self.ways
    }

    /// The lowest free frame of `vpn`'s set.
    pub fn free_frame(&self, frames: &Frames, vpn: Vpn) -> Option<u64> {
        self.candidates(vpn).find(|&f| frames.is_free(f))
    }

    /// The least recently used frame of `vpn`'s set (which must be full).
    pub fn oldest(&self, frames: &Frames, vpn: Vpn) -> u64 {
        self.candidates(vpn).min_by_key(|&f| frames.stamp(f)).expect("a set has ways")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_are_low_vpn_bits() {
        let s = SetAssociative::new(64, 8);
        assert_eq!(s.candidates(Vpn(3)), 24..32);
        assert_eq!(s.candidates(Vpn(11)), 24..32);
        let mut frames = Frames::new(64);
        for (i, f) in (24..32).enumerate() {
            assert_eq!(s.free_frame(&frames, Vpn(3)), Some(f));
            frames.occupy(f, 0, Vpn(3 + 8 * i as u64), 100 - i as u64);
        }
        assert_eq!(s.free_frame(&frames, Vpn(19)), None);
        assert_eq!(s.oldest(&frames, Vpn(19)), 31);
    }
}
