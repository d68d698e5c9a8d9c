//! The expected shape and references of a B+ tree built by random insertions, computed
//! without building it: a mean-field model of the kind of Yao's fringe analysis.
//!
//! Each level of the tree is a vector of expected node counts by keys held. An insertion
//! lands in a node with probability proportional to its gaps (keys + 1): a node of `k < max`
//! keys then holds `k + 1`, a full one splits in two by the tree's split rule, and the split
//! inserts a separator into the level above (the first split above the top level creates a
//! new root: each level starts as one node of no keys). The vectors are advanced over the
//! insertions in steps small enough that no node size moves by more than a fraction of its
//! mass per step (single insertions while the tree is small, where this is exact), and the
//! references of every step are added up from the sizes of that moment: the descent, the
//! shifts of an insertion (half a node's keys and slots on average), the copies of a split.
//! For large orders the leaves approach Yao's ln 2 fill; for small ones, and for small trees,
//! the model follows the actual split rule instead.

use super::Shape;

/// Insertions per gap in one step, at most: small enough for the expected-value steps to
/// follow the discrete process closely.
const STEP: f64 = 0.25;
/// Separators below this many are not carried to a new level (they would only create levels
/// of vanishing mass).
const NEGLIGIBLE: f64 = 1e-12;

/// Expected node counts and references of a random-insertion build.
pub(super) struct Model {
    /// Per level, leaves first: expected nodes holding `k` keys (`k = 0..=max_keys`).
    levels: Vec<Vec<f64>>,
    /// Mean binary-search probes in a node of `k` keys ending at a uniform gap `0..=k`.
    probes_gap: Vec<f64>,
    /// Mean probes in a leaf of `k` keys ending at a uniform key `0..k`.
    probes_hit: Vec<f64>,
    build_refs: f64,
}

impl Model {
    /// The model of inserting `keys` keys, in random order, into an empty tree of `shape`.
    pub(super) fn new(shape: Shape, keys: u64) -> Model {
        let max = shape.max_keys();
        let mut model = Model {
            levels: vec![empty_level(max)],
            probes_gap: (0..=max).map(|k| mean_probes(k, 0..=k)).collect(),
            probes_hit: (0..=max).map(|k| mean_probes(k, 0..=k.saturating_sub(1))).collect(),
            // The empty root leaf and the root pointer are written first.
            build_refs: 2.0,
        };
        let (keys, mut done) = (keys as f64, 0.0);
        while done < keys {
            let step = (done * STEP / (max + 1) as f64).floor().max(1.0).min(keys - done);
            // The key's store, the root pointer and the descent, then the insertion.
            model.build_refs += step * (2.0 + model.descent(false));
            model.insert(shape, step);
            done += step;
        }
        model
    }

    /// Feeds `count` insertions into the leaves, and the separators of their splits upward.
    fn insert(&mut self, shape: Shape, count: f64) {
        let mut incoming = count;
        let mut level = 0;
        while incoming > NEGLIGIBLE {
            if level == self.levels.len() {
                self.levels.push(empty_level(shape.max_keys()));
            }
            let (refs, splits) = insert_into(&mut self.levels[level], shape, level == 0, incoming);
            self.build_refs += refs;
            incoming = splits;
            level += 1;
        }
    }

    /// Expected references of one descent from the root to a leaf: per level the count, the
    /// probes of a binary search and (in inner nodes) the slot followed; with `hit`, a lookup
    /// of an existing key that also reads its value, else an insertion's descent.
    fn descent(&self, hit: bool) -> f64 {
        let leaves = &self.levels[0];
        let leaf = if hit {
            1.0 + weighted(leaves, |k| k as f64, &self.probes_hit) + 1.0
        } else {
            1.0 + weighted(leaves, |k| k as f64 + 1.0, &self.probes_gap)
        };
        let inner: f64 = self.levels[1..]
            .iter()
            .map(|level| {
                // A level that may not exist yet (its root is the node of no keys) counts
                // with the probability that it does.
                let exists = level[1..].iter().sum::<f64>().min(1.0);
                let gaps = |k: usize| if k == 0 { 0.0 } else { k as f64 + 1.0 };
                exists * (2.0 + weighted(level, gaps, &self.probes_gap))
            })
            .sum();
        leaf + inner
    }

    /// Expected nodes of the built tree.
    pub(super) fn nodes(&self) -> f64 {
        self.leaves() + self.levels[1..].iter().map(|level| level[1..].iter().sum::<f64>()).sum::<f64>()
    }

    /// Expected leaves of the built tree.
    pub(super) fn leaves(&self) -> f64 {
        self.levels[0].iter().sum()
    }

    /// Expected references of the build.
    pub(super) fn build_refs(&self) -> f64 {
        self.build_refs
    }

    /// Expected references of one lookup of a random existing key in the built tree: the
    /// key's load, the root pointer, the descent and the value.
    pub(super) fn lookup_refs(&self) -> f64 {
        2.0 + self.descent(true)
    }
}

/// A level before its first node: one node of no keys.
fn empty_level(max: usize) -> Vec<f64> {
    let mut level = vec![0.0; max + 1];
    level[0] = 1.0;
    level
}

/// The mean of `values[k]` over the nodes of `level`, node `k` weighted by `weight(k)`
/// times its count.
fn weighted(level: &[f64], weight: impl Fn(usize) -> f64, values: &[f64]) -> f64 {
    let (mut sum, mut total) = (0.0, 0.0);
    for (k, (&n, &v)) in level.iter().zip(values).enumerate() {
        sum += n * weight(k) * v;
        total += n * weight(k);
    }
    if total > 0.0 { sum / total } else { 0.0 }
}

/// Inserts `count` keys (separators, above the leaves) into `level` of a tree of `shape`;
/// returns the references of the insertions and splits, and the number of splits (the
/// separators for the level above).
fn insert_into(level: &mut [f64], shape: Shape, leaf: bool, count: f64) -> (f64, f64) {
    let max = shape.max_keys();
    let gaps: f64 = level.iter().enumerate().map(|(k, &n)| (k as f64 + 1.0) * n).sum();
    let per_gap = count / gaps;
    // Insertions landing in nodes of each size; never more than the nodes there.
    let landed: Vec<f64> = level.iter().enumerate().map(|(k, &n)| (per_gap * (k as f64 + 1.0)).min(1.0) * n).collect();
    let mut refs = 0.0;
    for k in 0..max {
        level[k] -= landed[k];
        level[k + 1] += landed[k];
        refs += landed[k] * put_refs(k, leaf);
    }
    let splits = landed[max];
    level[max] -= splits;
    // The pending key is at a uniform gap of the full node; it goes to the kept part when
    // the gap is at most `kept` (before the separator).
    let kept = shape.kept(leaf);
    let moved = if leaf { max - kept } else { max - kept - 1 };
    let to_kept = (kept + 1) as f64 / (max + 1) as f64;
    level[kept + 1] += splits * to_kept;
    level[moved] += splits * to_kept;
    level[kept] += splits * (1.0 - to_kept);
    level[moved + 1] += splits * (1.0 - to_kept);
    // Copies: the moved keys, and their slots (a leaf's plus its next-leaf slot, which it
    // then overwrites; an inner node's one more than its keys), a load and a store each; the
    // two counts; then the insertion into the part the key belongs to, at a uniform gap of
    // it (of the new part's gaps, the first is not the key's: it precedes the separator).
    let copies = if leaf { 4.0 * moved as f64 + 5.0 } else { 4.0 * moved as f64 + 4.0 };
    let put = to_kept * put_refs(kept, leaf) + (1.0 - to_kept) * (2.0 * moved.saturating_sub(1) as f64 + 3.0);
    refs += splits * (copies + put);
    (refs, splits)
}

/// References of inserting into a node of `k` keys with room, at a uniform gap: the keys and
/// slots after the gap shift by one (half of `k` each on average, a load and a store each),
/// then the key, the slot and the count are stored. Inserting into an inner level's node of no
/// keys is creating a new root: its count, key, two slots and the root pointer.
fn put_refs(k: usize, leaf: bool) -> f64 {
    if k == 0 && !leaf {
        5.0
    } else {
        2.0 * k as f64 + 3.0
    }
}

/// Mean probes of the tree's binary search over `k` keys ending at each position of
/// `targets` in turn (`lo` ends at the target: the keys before it are smaller).
fn mean_probes(k: usize, targets: std::ops::RangeInclusive<usize>) -> f64 {
    if k == 0 {
        return 0.0;
    }
    let count = targets.clone().count();
    let total: usize = targets
        .map(|target| {
            let (mut lo, mut hi, mut probes) = (0, k, 0);
            while lo < hi {
                let mid = (lo + hi) / 2;
                probes += 1;
                if mid < target {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            probes
        })
        .sum();
    total as f64 / count as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// While the tree is one leaf, the model is exact: `n` insertions into an empty order-16
    /// tree cost their descents (2 + the count + the probes) and shifts.
    #[test]
    fn a_single_leaf_is_exact() {
        let shape = Shape { order: 16 };
        let model = Model::new(shape, 3);
        // Keys 1, 2, 3 land at uniform gaps of leaves of 0, 1, 2 keys: probes 0, 1, 1.5
        // (mean over gaps), shifts 0, 0.5, 1 keys (each with its slot, 4 references).
        let expected = 2.0 + (2.0 + 1.0 + 0.0 + 3.0) + (2.0 + 1.0 + 1.0 + 2.0 + 3.0) + (2.0 + 1.0 + mean_probes(2, 0..=2) + 4.0 + 3.0);
        assert!((model.build_refs() - expected).abs() < 1e-9, "{} vs {expected}", model.build_refs());
        assert_eq!(model.leaves(), 1.0);
        assert_eq!(model.nodes(), 1.0);
    }

    /// The first split of an order-4 tree is the fourth insertion: two leaves and a root.
    #[test]
    fn the_first_split_makes_a_root() {
        let model = Model::new(Shape { order: 4 }, 4);
        assert!((model.leaves() - 2.0).abs() < 1e-12);
        assert!((model.nodes() - 3.0).abs() < 1e-12);
    }

    /// Large orders approach Yao's ln 2 leaf fill.
    #[test]
    fn large_orders_fill_leaves_to_ln_2() {
        let shape = Shape { order: 128 };
        let keys = 2_000_000;
        let model = Model::new(shape, keys);
        let fill = keys as f64 / model.leaves() / shape.max_keys() as f64;
        assert!((fill - std::f64::consts::LN_2).abs() < 0.02, "fill {fill}");
    }

    #[test]
    fn binary_search_probes() {
        assert_eq!(mean_probes(1, 0..=1), 1.0);
        assert_eq!(mean_probes(3, 0..=3), 2.0);
        assert_eq!(mean_probes(1, 0..=0), 1.0);
    }
}
