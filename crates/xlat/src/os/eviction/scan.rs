//! The periodic accessed-bit scan of [`Recency::Scan`], as in the Mosaic prototype.
//!
//! Hardware keeps an accessed bit per page, not a timestamp, so the prototype emulates
//! timestamps with a daemon: every period it reads and clears each page's accessed bit and
//! gives the pages seen used the current time. Clearing the bit of a page invalidates the
//! page's TLB entries (the next access walks and sets it again), which costs TLB misses, so
//! the prototype keeps a history of the last scans per page and reads only a sample of the
//! hot pages (those used in all of them), counting the others as used unread.
//!
//! The simulator sets a page's bit on every use; that is what hardware does as long as every
//! page whose bit is clear is absent from the TLBs, which the shootdown of each cleared page
//! keeps true.

use super::Recency;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Accessed bits and scan histories per frame, and when the next scan is due.
#[derive(Clone, Debug)]
pub struct Scanner {
    period: u64,
    hot_sample: f64,
    /// The history bits (the most recent scans, in the high bits) a hot page has all set.
    hot: u8,
    next: u64,
    referenced: Vec<bool>,
    /// Per frame, one bit per recent scan, the latest in bit 7: whether the page was used.
    history: Vec<u8>,
    rng: Xoshiro256PlusPlus,
}

/// What a scan found for one page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Visit {
    /// The page counts as used since the last scan (its bit was set, or it is hot and was
    /// not read).
    pub used: bool,
    /// The scan cleared the page's set accessed bit, so its TLB entries must be shot down.
    pub cleared: bool,
}

impl Scanner {
    /// A scanner for `frames` frames under `recency`, which must be [`Recency::Scan`]; `seed`
    /// drives the sampling of hot pages.
    pub fn new(recency: Recency, frames: u64, seed: u64) -> Option<Scanner> {
        let Recency::Scan { period, hot_sample, history } = recency else { return None };
        debug_assert!((1..=8).contains(&history));
        Some(Scanner {
            period,
            hot_sample,
            hot: !u8::MAX.checked_shr(history).unwrap_or(0),
            next: period,
            referenced: vec![false; frames as usize],
            history: vec![0; frames as usize],
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        })
    }

    /// Sets the accessed bit of the page in `frame`, used at time `now`; true when a scan is
    /// due.
    #[inline(always)]
    pub fn reference(&mut self, frame: u64, now: u64) -> bool {
        self.referenced[frame as usize] = true;
        if now < self.next {
            return false;
        }
        self.next += self.period;
        true
    }

    /// A new page in `frame`: it inherits neither the bit nor the history of the page
    /// that was there before.
    pub fn forget(&mut self, frame: u64) {
        self.referenced[frame as usize] = false;
        self.history[frame as usize] = 0;
    }

    /// The scan of the page in `frame`: a cold page's bit, or a sampled hot page's, is read
    /// and cleared; the other hot pages count as used.
    pub fn visit(&mut self, frame: u64) -> Visit {
        let f = frame as usize;
        let hot = self.history[f] & self.hot == self.hot;
        let (used, cleared) = if hot && self.rng.random::<f64>() >= self.hot_sample {
            (true, false)
        } else {
            let bit = std::mem::take(&mut self.referenced[f]);
            (bit, bit)
        };
        self.history[f] = self.history[f] >> 1 | u8::from(used) << 7;
        Visit { used, cleared }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scanner(hot_sample: f64, history: u32) -> Scanner {
        Scanner::new(Recency::Scan { period: 10, hot_sample, history }, 4, 7).expect("scan recency")
    }

    #[test]
    fn scans_are_due_every_period() {
        let mut s = scanner(0.2, 8);
        let due: Vec<u64> = (1..=35).filter(|&now| s.reference(0, now)).collect();
        assert_eq!(due, [10, 20, 30]);
    }

    #[test]
    fn a_cold_page_is_read_and_cleared() {
        let mut s = scanner(0.2, 8);
        s.reference(1, 1);
        assert_eq!(s.visit(1), Visit { used: true, cleared: true });
        assert_eq!(s.visit(1), Visit { used: false, cleared: false });
    }

    #[test]
    fn a_page_hot_for_the_whole_history_is_sampled() {
        // With no sampling, a page used in the last `history` scans is never read again:
        // it counts as used, and its bit is not cleared (no shootdown).
        for history in [1, 3, 8] {
            let mut s = scanner(0.0, history);
            for scan in 0..history {
                s.reference(2, 1);
                assert_eq!(s.visit(2), Visit { used: true, cleared: true }, "scan {scan}");
            }
            for _ in 0..20 {
                assert_eq!(s.visit(2), Visit { used: true, cleared: false });
            }
        }
        // Reading every hot page makes the history irrelevant.
        let mut s = scanner(1.0, 2);
        for _ in 0..4 {
            s.reference(2, 1);
            s.visit(2);
        }
        assert_eq!(s.visit(2), Visit { used: false, cleared: false });
    }

    #[test]
    fn a_new_page_starts_cold() {
        let mut s = scanner(0.0, 2);
        for _ in 0..2 {
            s.reference(3, 1);
            s.visit(3);
        }
        s.forget(3);
        assert_eq!(s.visit(3), Visit { used: false, cleared: false });
    }
}
