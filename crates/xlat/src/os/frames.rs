//! Physical frames as the OS sees them: which page occupies each and when it was last used.

use crate::types::{Asid, Vpn};

/// Per-frame state, indexed by frame number (in units of the OS page size).
///
/// The vectors start zeroed, which the allocator gives as untouched pages, so a large
/// physical memory costs host memory only as its frames are used.
#[derive(Clone, Debug)]
pub struct Frames {
    /// VPN + 1 of the occupying page; 0 when free.
    owner: Vec<u64>,
    asid: Vec<u16>,
    /// Last-use time of the occupying page (its recency; larger is more recent).
    stamp: Vec<u64>,
    /// Times a frame was (re)occupied, so that stale references to a former occupant can be
    /// told apart from the current one.
    generation: Vec<u32>,
    used: u64,
}

impl Frames {
    /// `count` free frames.
    pub fn new(count: u64) -> Frames {
        let n = usize::try_from(count).expect("frame count fits the host's address space");
        Frames { owner: vec![0; n], asid: vec![0; n], stamp: vec![0; n], generation: vec![0; n], used: 0 }
    }

    /// Number of frames.
    pub fn capacity(&self) -> u64 {
        self.owner.len() as u64
    }

    /// Frames occupied.
    pub fn used(&self) -> u64 {
        self.used
    }

    /// True when `frame` holds no page.
    #[inline]
    pub fn is_free(&self, frame: u64) -> bool {
        self.owner[frame as usize] == 0
    }

    /// The page in `frame`, if any.
    #[inline]
    pub fn owner(&self, frame: u64) -> Option<(Asid, Vpn)> {
        let v = self.owner[frame as usize];
        (v != 0).then(|| (self.asid[frame as usize], Vpn(v - 1)))
    }

    /// Last-use time of the page in `frame`.
    #[inline]
    pub fn stamp(&self, frame: u64) -> u64 {
        self.stamp[frame as usize]
    }

    /// Records a use of the page in `frame` at time `now`.
    #[inline]
    pub fn touch(&mut self, frame: u64, now: u64) {
        self.stamp[frame as usize] = now;
    }

    /// How many times `frame` has been occupied.
    #[inline]
    pub fn generation(&self, frame: u64) -> u32 {
        self.generation[frame as usize]
    }

    /// Puts page (`asid`, `vpn`) into free `frame` at time `now`.
    pub fn occupy(&mut self, frame: u64, asid: Asid, vpn: Vpn, now: u64) {
        let f = frame as usize;
        debug_assert_eq!(self.owner[f], 0, "frame {frame} is occupied");
        self.owner[f] = vpn.0 + 1;
        self.asid[f] = asid;
        self.stamp[f] = now;
        self.generation[f] = self.generation[f].wrapping_add(1);
        self.used += 1;
    }

    /// Empties `frame`, returning the page it held.
    pub fn release(&mut self, frame: u64) -> (Asid, Vpn) {
        let owner = self.owner(frame).expect("released frame is occupied");
        self.owner[frame as usize] = 0;
        self.used -= 1;
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
}
