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
#[derive(Clone, Debug)]
pub struct Sm {
    /// The application the SM runs.
    pub app: usize,
    /// The cycle the SM issues next.
    pub time: u64,
    /// Resident warps, oldest first.
    slots: Vec<Slot>,
    /// The warp issued last (GTO's greedy choice), by warp index.
    greedy: Option<u32>,
}

impl Sm {
    /// An SM of application `app` with no warp.
    pub fn new(app: usize) -> Sm {
        Sm { app, time: 0, slots: Vec::new(), greedy: None }
    }

    /// Warps resident.
    pub fn warps(&self) -> usize {
        self.slots.len()
    }

    /// Makes `warp` resident, youngest, ready at `now`.
    pub fn admit(&mut self, warp: u32, now: u64) {
        self.slots.push(Slot { warp, ready: now });
    }

    /// The slot GTO issues from at the SM's time, or the earliest cycle a warp is ready
    /// (`Err`) when none is; `None` when no warp is resident.
    pub fn pick(&self) -> Option<Result<usize, u64>> {
        if self.slots.is_empty() {
            return None;
        }
        let ready = |s: &Slot| s.ready <= self.time;
        if let Some(i) = self.greedy.and_then(|g| self.slots.iter().position(|s| s.warp == g)).filter(|&i| ready(&self.slots[i])) {
            return Some(Ok(i));
        }
        match self.slots.iter().position(ready) {
            Some(i) => Some(Ok(i)),
            None => Some(Err(self.slots.iter().map(|s| s.ready).min().expect("slots are not empty"))),
        }
    }

    /// The warp in slot `i`.
    pub fn slot(&self, i: usize) -> Slot {
        self.slots[i]
    }

    /// Records that slot `i` issued and can issue again at `ready`.
    pub fn issued(&mut self, i: usize, ready: u64) {
        self.slots[i].ready = ready;
        self.greedy = Some(self.slots[i].warp);
    }

    /// Removes the warp of slot `i`, which exited.
    pub fn retire(&mut self, i: usize) {
        self.slots.remove(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
