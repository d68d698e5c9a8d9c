//! The relative age of evicted pages: the victim's rank among resident pages by recency
//! (0 = the oldest resident page, 1 = the newest), averaged over windows of evictions
//! (Micro'23 Fig. 4). An ideal global LRU always scores 0.
//!
//! Ranks come from a Fenwick tree counting resident pages by timestamp, so each use costs
//! `O(log T)` for `T` timestamps so far; it is kept only when the metric is asked for.

use serde::Serialize;

/// Counts of resident pages per timestamp, with prefix sums.
#[derive(Clone, Debug, Default)]
struct Fenwick {
    tree: Vec<i64>,
}

impl Fenwick {
    fn add(&mut self, at: u64, delta: i64) {
        let mut i = at as usize + 1;
        if i >= self.tree.len() {
            self.grow(i + 1);
        }
        while i < self.tree.len() {
            self.tree[i] += delta;
            i += i & i.wrapping_neg();
        }
    }

    /// Rebuilds the tree with room for `len - 1` timestamps (doubling), keeping its counts.
    fn grow(&mut self, len: usize) {
        let new_len = len.next_power_of_two().max(1024);
        let counts: Vec<i64> = (0..self.tree.len().saturating_sub(1)).map(|t| self.count_at(t as u64)).collect();
        self.tree = vec![0; new_len];
        for (t, c) in counts.into_iter().enumerate() {
            if c != 0 {
                self.add(t as u64, c);
            }
        }
    }

    fn count_at(&self, t: u64) -> i64 {
        self.below(t + 1) - self.below(t)
    }

    /// Pages with a timestamp below `t`.
    fn below(&self, t: u64) -> i64 {
        let mut i = (t as usize).min(self.tree.len().saturating_sub(1));
        let mut sum = 0;
        while i > 0 {
            sum += self.tree[i];
            i &= i - 1;
        }
        sum
    }
}

/// Mean relative ages of evicted pages, per window of evictions.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AgeStats {
    /// Evictions per window.
    pub window: u64,
    /// Mean relative age of the evictions of each complete window, in order.
    pub window_means: Vec<f64>,
    /// Largest relative age in each complete window.
    pub window_maxes: Vec<f64>,
    /// Mean over every eviction; none before the first (a mean of nothing is not 0, which
    /// would read as ideal LRU).
    pub mean: Option<f64>,
}

/// Tracks resident pages' timestamps and scores each eviction.
#[derive(Clone, Debug)]
pub struct AgeTracker {
    fenwick: Fenwick,
    resident: u64,
    window: u64,
    in_window: u64,
    window_sum: f64,
    window_max: f64,
    total: u64,
    total_sum: f64,
    means: Vec<f64>,
    maxes: Vec<f64>,
}

impl AgeTracker {
    /// A tracker averaging over windows of `window` evictions.
    pub fn new(window: u64) -> AgeTracker {
        AgeTracker {
            fenwick: Fenwick::default(),
            resident: 0,
            window,
            in_window: 0,
            window_sum: 0.0,
            window_max: 0.0,
            total: 0,
            total_sum: 0.0,
            means: Vec::new(),
            maxes: Vec::new(),
        }
    }

    /// A page became resident with timestamp `stamp`.
    pub fn insert(&mut self, stamp: u64) {
        self.fenwick.add(stamp, 1);
        self.resident += 1;
    }

    /// A resident page's timestamp moved from `old` to `new`.
    #[inline]
    pub fn retime(&mut self, old: u64, new: u64) {
        if old != new {
            self.fenwick.add(old, -1);
            self.fenwick.add(new, 1);
        }
    }

    /// The page with timestamp `stamp` left memory other than by eviction (it was
    /// unmapped): removed without a score.
    pub fn forget(&mut self, stamp: u64) {
        self.fenwick.add(stamp, -1);
        self.resident -= 1;
    }

    /// The page with timestamp `stamp` is evicted: scores it and removes it.
    pub fn evict(&mut self, stamp: u64) {
        let older = self.fenwick.below(stamp) as f64;
        let age = if self.resident > 1 { older / (self.resident - 1) as f64 } else { 0.0 };
        self.fenwick.add(stamp, -1);
        self.resident -= 1;
        self.total += 1;
        self.total_sum += age;
        self.window_sum += age;
        self.window_max = self.window_max.max(age);
        self.in_window += 1;
        if self.in_window == self.window {
            self.means.push(self.window_sum / self.window as f64);
            self.maxes.push(self.window_max);
            self.in_window = 0;
            self.window_sum = 0.0;
            self.window_max = 0.0;
        }
    }

    /// The statistics so far.
    pub fn stats(&self) -> AgeStats {
        AgeStats {
            window: self.window,
            window_means: self.means.clone(),
            window_maxes: self.maxes.clone(),
            mean: (self.total > 0).then(|| self.total_sum / self.total as f64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Ranks agree with counting resident stamps by brute force.
        #[test]
        fn rank_is_the_count_of_older_pages(ops in proptest::collection::vec((any::<bool>(), 0u64..5000), 1..300)) {
            let mut tracker = AgeTracker::new(1);
            let mut resident: Vec<u64> = Vec::new();
            for (insert, stamp) in ops {
                if insert || resident.is_empty() {
                    tracker.insert(stamp);
                    resident.push(stamp);
                } else {
                    let victim = resident.swap_remove(stamp as usize % resident.len());
                    let older = resident.iter().filter(|&&s| s < victim).count() as f64;
                    let expected = if resident.is_empty() { 0.0 } else { older / resident.len() as f64 };
                    tracker.evict(victim);
                    let got = *tracker.stats().window_means.last().unwrap();
                    prop_assert!((got - expected).abs() < 1e-12, "{} vs {}", got, expected);
                }
            }
        }
    }

    #[test]
    fn oldest_scores_zero_and_newest_one() {
        let mut t = AgeTracker::new(2);
        for s in [5, 9, 12] {
            t.insert(s);
        }
        assert_eq!(t.stats().mean, None, "no eviction yet: no mean");
        t.evict(5);
        t.evict(12);
        assert_eq!(t.stats().window_means, vec![0.5]);
        assert_eq!(t.stats().window_maxes, vec![1.0]);
        t.retime(9, 20);
        assert_eq!(t.stats().mean, Some(0.5));
    }
}
