//! One SM's warp slots and its greedy-then-oldest (GTO) scheduler: the SM keeps issuing the
//! warp it issued last while that warp is ready, and otherwise the oldest ready warp (the
//! one given its slot first).

/// A warp resident on an SM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// The warp's index in its launch's grid.
    pub warp: u32,
    /// The cycle the warp can issue again (its pending loads and translations done).
    pub ready: u64,
}

/// One SM: the cycle of its next issue and its warps, oldest first.
///
/// The slots are kept as two arrays, ready cycles apart from warp numbers, and GTO's greedy
/// warp as its slot: the scheduler's scan for the oldest ready warp, made at nearly every
/// issue, then reads one dense array.
#[derive(Clone, Debug)]
pub struct Sm {
    /// The application the SM runs.
    pub app: usize,
    /// The cycle the SM issues next.
    pub time: u64,
    /// Per resident warp, oldest first: the cycle it can issue again.
    ready: Vec<u64>,
    /// Per resident warp, oldest first: its index in its launch's grid.
    warps: Vec<u32>,
    /// The slot of the warp issued last (GTO's greedy choice).
    greedy: Option<usize>,
}

impl Sm {
    /// An SM of application `app` with no warp.
    pub fn new(app: usize) -> Sm {
        Sm { app, time: 0, ready: Vec::new(), warps: Vec::new(), greedy: None }
    }

    /// Warps resident.
    pub fn warps(&self) -> usize {
        self.warps.len()
    }

    /// Makes `warp` resident, youngest, ready at `now`.
    pub fn admit(&mut self, warp: u32, now: u64) {
        self.warps.push(warp);
        self.ready.push(now);
    }

    /// The slot GTO issues from at the SM's time, or the earliest cycle a warp is ready
    /// (`Err`) when none is; `None` when no warp is resident.
    #[inline]
    pub fn pick(&self) -> Option<Result<usize, u64>> {
        if self.ready.is_empty() {
            return None;
        }
        if let Some(g) = self.greedy.filter(|&g| self.ready[g] <= self.time) {
            return Some(Ok(g));
        }
        let mut earliest = u64::MAX;
        for (i, &ready) in self.ready.iter().enumerate() {
            if ready <= self.time {
                return Some(Ok(i));
            }
            earliest = earliest.min(ready);
        }
        Some(Err(earliest))
    }

    /// The warp in slot `i`.
    pub fn slot(&self, i: usize) -> Slot {
        Slot { warp: self.warps[i], ready: self.ready[i] }
    }

    /// Records that slot `i` issued and can issue again at `ready`.
    pub fn issued(&mut self, i: usize, ready: u64) {
        self.ready[i] = ready;
        self.greedy = Some(i);
    }

    /// Removes the warp of slot `i`, which exited (the younger ones move up a slot).
    pub fn retire(&mut self, i: usize) {
        self.warps.remove(i);
        self.ready.remove(i);
        self.greedy = match self.greedy {
            Some(g) if g == i => None,
            Some(g) if g > i => Some(g - 1),
            g => g,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// GTO by its definition: the greedy warp if ready, else the oldest ready warp, else the
    /// earliest ready cycle.
    fn naive_pick(sm: &Sm) -> Option<Result<usize, u64>> {
        let ready = |i: usize| sm.ready[i] <= sm.time;
        if sm.ready.is_empty() {
            return None;
        }
        Some(match sm.greedy.filter(|&g| ready(g)).or_else(|| (0..sm.ready.len()).find(|&i| ready(i))) {
            Some(slot) => Ok(slot),
            None => Err(*sm.ready.iter().min().expect("warps")),
        })
    }

    proptest! {
        /// The scheduler's picks among up to 48 warps, through admissions, issues, exits and
        /// stalls, are those of GTO's definition.
        #[test]
        fn picks_follow_gto(warps in 1usize..48, ops in proptest::collection::vec((0u8..4, 0u64..200, 0usize..48), 1..300)) {
            let mut sm = Sm::new(0);
            (0..warps).for_each(|w| sm.admit(w as u32, 0));
            for (op, cycles, slot) in ops {
                match op {
                    0 => sm.admit(slot as u32, sm.time + cycles % 4),
                    1 if sm.warps() > 0 => sm.retire(slot % sm.warps()),
                    2 => sm.time += cycles % 8,
                    _ => {}
                }
                let picked = sm.pick();
                prop_assert_eq!(picked, naive_pick(&sm));
                match picked {
                    Some(Ok(i)) => {
                        sm.issued(i, sm.time + cycles);
                        sm.time += 1;
                    }
                    Some(Err(ready)) => sm.time = ready,
                    None => {}
                }
            }
        }
    }

    #[test]
    fn gto_keeps_the_greedy_warp_while_it_is_ready_and_falls_back_to_the_oldest() {
        let mut sm = Sm::new(0);
        for w in 0..3 {
            sm.admit(w, 0);
        }
        assert_eq!(sm.pick(), Some(Ok(0)), "the oldest first");
        sm.issued(2, 1);
        sm.time = 1;
        assert_eq!(sm.pick(), Some(Ok(2)), "greedy: the warp issued last, still ready");
        sm.issued(2, 100);
        assert_eq!(sm.pick(), Some(Ok(0)), "greedy stalled: the oldest ready");
        sm.issued(0, 50);
        sm.issued(1, 70);
        assert_eq!(sm.pick(), Some(Err(50)), "none ready: the earliest ready cycle");
        sm.retire(0);
        assert_eq!(sm.slot(0).warp, 1, "age order kept");
        sm.retire(0);
        sm.retire(0);
        assert_eq!(sm.pick(), None);
    }

    #[test]
    fn the_greedy_warp_follows_its_slot_and_ends_with_it() {
        let mut sm = Sm::new(0);
        for w in 0..3 {
            sm.admit(w, 0);
        }
        sm.issued(2, 0);
        sm.retire(0);
        assert_eq!(sm.pick(), Some(Ok(1)), "an older warp exited: the greedy warp moved up a slot");
        sm.retire(1);
        sm.admit(2, 0);
        assert_eq!(sm.pick(), Some(Ok(0)), "the next launch's warp of the same number is not greedy: the oldest is");
    }
}
