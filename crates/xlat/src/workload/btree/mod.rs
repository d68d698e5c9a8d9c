//! BTree: a B+ tree of order `order` (16, the paper's, by default: up to 16 children per inner
//! node) holding `keys` distinct 64-bit keys, built by inserting them one by one in a random
//! order (the `build` phase, emitted when `build` is true), then `lookups` random lookups of
//! existing keys (the `lookup` phase).
//!
//! Layout, as a C implementation would have it: every node is `16 × order` bytes (256 at order
//! 16) — a 4-byte key count, a 4-byte leaf flag, `order - 1` keys, and `order` pointer slots
//! (an inner node's children; a leaf's values and its next-leaf pointer) — carved in order
//! from 1 MiB slabs obtained from `malloc` (so each slab is its own mapping, and nodes sit 16
//! bytes past the node-size boundaries: at order 16 one node in sixteen straddles a page). The
//! keys, an array of `keys` words, are the program's input; a lookup reads a random element of it, the tree's root pointer, and at each level the count,
//! the keys a binary search probes and the chosen slot; a leaf hit reads the value.
//!
//! Insertion follows the classic algorithm: descend as a lookup does, shift the larger keys
//! and slots of the leaf one place right (a load and a store each), and split a full node
//! before inserting into it: it keeps the lower `ceil((order - 1) / 2)` keys (8 of 15 at order
//! 16; an inner node keeps one fewer where the new node would otherwise be left without a key),
//! the rest are copied into a fresh node and the separator is pushed into the parent; a root
//! split allocates a new root.
//!
//! Self-check: every lookup must find its key with the value it was inserted with; at the end
//! (not emitted), every leaf is at the same depth, keys ascend within and across nodes along
//! the leaf chain, and the chain holds exactly `keys` keys.
//!
//! Instructions: 12 per lookup or insertion (random draw, call, loop set-up), 6 per node
//! visited, 5 per binary-search probe, 3 per key or slot shifted or copied.
//!
//! The expected references and footprint come from a mean-field model of the build
//! (`btree::fringe`), not from running the tree.

use super::address_space::{AddressSpace, Allocator};
use super::emit::{Emitter, SimVec};
use super::{Expected, ExpectedPhase, Region, Scale, Workload};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

mod fringe;

/// Bytes per slab.
const SLAB_BYTES: u64 = 1 << 20;
/// The orders a tree may have: at least 4 (so that both halves of a split inner node keep a
/// key), at most 256 (a node of 4 KiB, one page).
const ORDERS: std::ops::RangeInclusive<u32> = 4..=256;

const OP_INSTRUCTIONS: u64 = 12;
const NODE_INSTRUCTIONS: u64 = 6;
const PROBE_INSTRUCTIONS: u64 = 5;
const MOVE_INSTRUCTIONS: u64 = 3;

/// Parameters of BTree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Btree {
    /// Distinct keys inserted.
    pub keys: u64,
    /// Random lookups of existing keys.
    pub lookups: u64,
    /// Emit the build phase (it is always performed).
    pub build: bool,
    /// Children per inner node at most (the paper's 16); a node holds `order - 1` keys.
    pub order: u32,
}

/// The node geometry of a tree of one order, and the split rule.
#[derive(Clone, Copy, Debug)]
struct Shape {
    order: usize,
}

impl Shape {
    /// Keys a node holds at most.
    fn max_keys(self) -> usize {
        self.order - 1
    }

    /// Simulated bytes per node: count and leaf flag, keys, slots.
    fn node_bytes(self) -> u64 {
        16 * self.order as u64
    }

    /// Offset of the key array in a simulated node.
    fn keys_at(self) -> u64 {
        8
    }

    /// Offset of the slot array in a simulated node.
    fn slots_at(self) -> u64 {
        8 * self.order as u64
    }

    fn nodes_per_slab(self) -> usize {
        (SLAB_BYTES / self.node_bytes()) as usize
    }

    /// Keys a full node keeps when it splits: the lower half (rounded up), one fewer for an
    /// inner node where the new node would otherwise get no key (it also gives one key up
    /// to the parent).
    fn kept(self, leaf: bool) -> usize {
        let half = self.max_keys().div_ceil(2);
        if leaf {
            half
        } else {
            half.min(self.max_keys() - 2)
        }
    }
}

/// The key inserted `i`-th: a bijective mix (MurmurHash3's finalizer) of `i` and the seed,
/// so keys are distinct and in random order.
fn key_of(i: u64, seed: u64) -> u64 {
    let mut x = i.wrapping_add(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// Simulated addresses of the program's data.
struct Layout {
    keys: u64,
    tree: u64,
    slabs: Vec<u64>,
}

/// The tree in Rust memory, node by node in flat arrays, with the simulated address of every
/// node.
struct Tree<'a> {
    shape: Shape,
    counts: Vec<u32>,
    leaves: Vec<bool>,
    /// Simulated address of each node.
    addrs: Vec<u64>,
    /// Per node, its `max_keys` keys then its `order` slots (inner: child node ids; leaf:
    /// values, the last slot the next leaf, +1, 0 = none), together as in the simulated node
    /// so that a node's keys and slots share host cache lines.
    words: Vec<u64>,
    root: usize,
    root_addr: u64,
    slabs: &'a [u64],
}

impl Tree<'_> {
    fn len(&self) -> usize {
        self.counts.len()
    }

    fn count(&self, id: usize) -> usize {
        self.counts[id] as usize
    }

    /// Words per node: keys, then slots.
    fn stride(&self) -> usize {
        self.shape.max_keys() + self.shape.order
    }

    fn key(&self, id: usize, k: usize) -> u64 {
        self.words[id * self.stride() + k]
    }

    fn key_mut(&mut self, id: usize, k: usize) -> &mut u64 {
        let i = id * self.stride() + k;
        &mut self.words[i]
    }

    fn slot(&self, id: usize, s: usize) -> u64 {
        self.words[id * self.stride() + self.shape.max_keys() + s]
    }

    fn slot_mut(&mut self, id: usize, s: usize) -> &mut u64 {
        let i = id * self.stride() + self.shape.max_keys() + s;
        &mut self.words[i]
    }

    /// The keys of node `id`.
    fn node_keys(&self, id: usize) -> &[u64] {
        let start = id * self.stride();
        &self.words[start..start + self.count(id)]
    }

    /// The slot of a leaf holding its next leaf.
    fn next_slot(&self) -> usize {
        self.shape.max_keys()
    }

    fn node_addr(&self, id: usize) -> u64 {
        self.addrs[id]
    }

    fn key_addr(&self, id: usize, k: usize) -> u64 {
        self.node_addr(id) + self.shape.keys_at() + 8 * k as u64
    }

    fn slot_addr(&self, id: usize, s: usize) -> u64 {
        self.node_addr(id) + self.shape.slots_at() + 8 * s as u64
    }

    fn alloc(&mut self, leaf: bool) -> Result<usize, String> {
        let id = self.len();
        if id / self.shape.nodes_per_slab() >= self.slabs.len() {
            return Err("the tree outgrew its planned slabs".into());
        }
        if id == self.counts.capacity() {
            let more = id.max(1024);
            let fail = |_| "cannot allocate host memory for the tree's nodes".to_string();
            self.counts.try_reserve(more).map_err(fail)?;
            self.leaves.try_reserve(more).map_err(fail)?;
            self.addrs.try_reserve(more).map_err(fail)?;
            self.words.try_reserve(more * self.stride()).map_err(fail)?;
        }
        let per_slab = self.shape.nodes_per_slab();
        self.addrs.push(self.slabs[id / per_slab] + (id % per_slab) as u64 * self.shape.node_bytes());
        self.counts.push(0);
        self.leaves.push(leaf);
        self.words.resize(self.words.len() + self.stride(), 0);
        Ok(id)
    }

    /// Loads the count, then binary-searches node `id` for the first key greater than `key`
    /// (inner nodes) or not less than it (leaves), emitting each probe.
    fn search(&self, id: usize, key: u64, e: &mut Emitter) -> usize {
        let leaf = self.leaves[id];
        e.load(self.node_addr(id), 4);
        let (mut lo, mut hi) = (0, self.count(id));
        let mut probes = 0;
        while lo < hi {
            let mid = (lo + hi) / 2;
            e.load(self.key_addr(id, mid), 8);
            probes += 1;
            let go_right = if leaf { self.key(id, mid) < key } else { self.key(id, mid) <= key };
            if go_right {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        e.instructions(NODE_INSTRUCTIONS + PROBE_INSTRUCTIONS * probes);
        lo
    }

    /// Returns the value of `key`, if present.
    fn lookup(&self, key: u64, e: &mut Emitter) -> Option<u64> {
        e.load(self.root_addr, 8);
        let mut id = self.root;
        while !self.leaves[id] {
            let i = self.search(id, key, e);
            e.load(self.slot_addr(id, i), 8);
            id = self.slot(id, i) as usize;
        }
        let i = self.search(id, key, e);
        if i < self.count(id) && self.key(id, i) == key {
            e.load(self.slot_addr(id, i), 8);
            Some(self.slot(id, i))
        } else {
            None
        }
    }

    /// Inserts `key` → `value` (a new key).
    fn insert(&mut self, key: u64, value: u64, e: &mut Emitter) -> Result<(), String> {
        e.load(self.root_addr, 8);
        let mut path = Vec::with_capacity(8);
        let mut id = self.root;
        while !self.leaves[id] {
            let i = self.search(id, key, e);
            e.load(self.slot_addr(id, i), 8);
            path.push((id, i));
            id = self.slot(id, i) as usize;
        }
        let i = self.search(id, key, e);
        let (mut key, mut right) = (key, value);
        let (mut target, mut at) = (id, i);
        loop {
            if self.count(target) < self.shape.max_keys() {
                self.put(target, at, key, right, e);
                return Ok(());
            }
            let (sep, new) = self.split(target, at, key, right, e)?;
            let Some((parent, pos)) = path.pop() else {
                return self.new_root(target, sep, new, e);
            };
            (key, right, target, at) = (sep, new as u64, parent, pos);
        }
    }

    /// Inserts `key` at position `at` of a node with room: into a leaf with `slot` as its
    /// value, into an inner node with `slot` as the child right of `key`.
    fn put(&mut self, id: usize, at: usize, key: u64, slot: u64, e: &mut Emitter) {
        let count = self.count(id);
        let leaf = self.leaves[id];
        let slot_at = if leaf { at } else { at + 1 };
        let slot_end = if leaf { count } else { count + 1 };
        for k in (at..count).rev() {
            self.move_key(id, k, id, k + 1, e);
        }
        for s in (slot_at..slot_end).rev() {
            self.move_slot(id, s, id, s + 1, e);
        }
        *self.key_mut(id, at) = key;
        *self.slot_mut(id, slot_at) = slot;
        self.counts[id] += 1;
        e.store(self.key_addr(id, at), 8);
        e.store(self.slot_addr(id, slot_at), 8);
        e.store(self.node_addr(id), 4);
    }

    fn move_key(&mut self, from: usize, k: usize, to: usize, j: usize, e: &mut Emitter) {
        e.load(self.key_addr(from, k), 8);
        e.store(self.key_addr(to, j), 8);
        e.instructions(MOVE_INSTRUCTIONS);
        *self.key_mut(to, j) = self.key(from, k);
    }

    fn move_slot(&mut self, from: usize, s: usize, to: usize, j: usize, e: &mut Emitter) {
        e.load(self.slot_addr(from, s), 8);
        e.store(self.slot_addr(to, j), 8);
        e.instructions(MOVE_INSTRUCTIONS);
        *self.slot_mut(to, j) = self.slot(from, s);
    }

    /// Splits full node `id` while inserting `key` at `at`: the upper part moves to a new
    /// node. Returns the separator to push into the parent and the new node.
    fn split(&mut self, id: usize, at: usize, key: u64, slot: u64, e: &mut Emitter) -> Result<(u64, usize), String> {
        let leaf = self.leaves[id];
        let new = self.alloc(leaf)?;
        let kept = self.shape.kept(leaf);
        // Leaves keep `kept` keys and copy up the new node's first key; inner nodes keep
        // `kept`, push up the next one and move the rest.
        let first_moved = if leaf { kept } else { kept + 1 };
        let count = self.shape.max_keys();
        for (j, k) in (first_moved..count).enumerate() {
            self.move_key(id, k, new, j, e);
        }
        if leaf {
            for (j, s) in (kept..count).enumerate() {
                self.move_slot(id, s, new, j, e);
            }
            let next = self.next_slot();
            self.move_slot(id, next, new, next, e);
            *self.slot_mut(id, next) = new as u64 + 1;
            e.store(self.slot_addr(id, next), 8);
        } else {
            for (j, s) in (kept + 1..=count).enumerate() {
                self.move_slot(id, s, new, j, e);
            }
        }
        let sep = if leaf { self.key(new, 0) } else { self.key(id, kept) };
        self.counts[id] = kept as u32;
        self.counts[new] = (count - first_moved) as u32;
        e.store(self.node_addr(id), 4);
        e.store(self.node_addr(new), 8);
        // The pending key goes to the part it belongs to (keys are distinct from separators).
        if key < sep {
            self.put(id, at, key, slot, e);
        } else {
            self.put(new, at - first_moved, key, slot, e);
        }
        Ok((sep, new))
    }

    fn new_root(&mut self, left: usize, sep: u64, right: usize, e: &mut Emitter) -> Result<(), String> {
        let root = self.alloc(false)?;
        *self.key_mut(root, 0) = sep;
        *self.slot_mut(root, 0) = left as u64;
        *self.slot_mut(root, 1) = right as u64;
        self.counts[root] = 1;
        e.store(self.node_addr(root), 8);
        e.store(self.key_addr(root, 0), 8);
        e.store(self.slot_addr(root, 0), 8);
        e.store(self.slot_addr(root, 1), 8);
        self.root = root;
        e.store(self.root_addr, 8);
        Ok(())
    }

    /// Checks the tree's invariants; returns the number of keys in the leaf chain.
    fn check(&self) -> Result<u64, String> {
        let mut depth = None;
        let mut stack = vec![(self.root, 0usize, None::<u64>, None::<u64>)];
        while let Some((id, d, lo, hi)) = stack.pop() {
            let keys = self.node_keys(id);
            let in_range = keys.iter().all(|&k| lo.is_none_or(|l| k >= l) && hi.is_none_or(|h| k < h));
            if keys.windows(2).any(|w| w[0] >= w[1]) || !in_range {
                return Err(format!("node {id} has keys out of order or outside its parent's range"));
            }
            if self.leaves[id] {
                if *depth.get_or_insert(d) != d {
                    return Err("leaves are at different depths".into());
                }
                continue;
            }
            if keys.is_empty() {
                return Err(format!("inner node {id} has no key"));
            }
            for c in 0..=keys.len() {
                let clo = if c == 0 { lo } else { Some(keys[c - 1]) };
                let chi = if c == keys.len() { hi } else { Some(keys[c]) };
                stack.push((self.slot(id, c) as usize, d + 1, clo, chi));
            }
        }
        self.chain_len()
    }

    fn chain_len(&self) -> Result<u64, String> {
        let mut id = self.root;
        while !self.leaves[id] {
            id = self.slot(id, 0) as usize;
        }
        let (mut total, mut last) = (0u64, None::<u64>);
        loop {
            for &k in self.node_keys(id) {
                if last.is_some_and(|l| l >= k) {
                    return Err("the leaf chain is not in ascending key order".into());
                }
                last = Some(k);
            }
            total += self.count(id) as u64;
            match self.slot(id, self.next_slot()) {
                0 => return Ok(total),
                next => id = next as usize - 1,
            }
        }
    }
}

impl Btree {
    fn shape(&self) -> Shape {
        Shape { order: self.order as usize }
    }

    /// Slabs to plan for: enough for the worst case (every node at its smallest after a
    /// split, `max_keys / 2` keys; inner levels add at most as many nodes again).
    fn max_slabs(&self) -> usize {
        let shape = self.shape();
        let worst_nodes = 2 * self.keys as usize / (shape.max_keys() / 2) + 16;
        worst_nodes.div_ceil(shape.nodes_per_slab())
    }

    /// Allocates the keys, the tree and the node slabs from `space`. Every slab the tree
    /// may need is allocated at the start (the program allocates them as the tree grows; the
    /// addresses are the same, and a slab mapped early is only touched once used).
    fn layout(&self, space: &mut impl Allocator) -> Layout {
        let keys = space.malloc(self.keys * 8);
        let tree = space.malloc(16);
        let slabs = (0..self.max_slabs()).map(|_| space.malloc(SLAB_BYTES)).collect();
        Layout { keys, tree, slabs }
    }
}

impl Workload for Btree {
    const NAME: &'static str = "btree";
    const ABOUT: &'static str = "B+ tree of order 16 (configurable): random-order insertions, then random lookups of existing keys";

    fn preset(scale: Scale) -> Btree {
        let keys = match scale {
            Scale::Tiny => 4_000,
            Scale::Small => 3_200_000,
            Scale::Paper => 78_000_000,
        };
        Btree { keys, lookups: keys, build: true, order: 16 }
    }

    fn emits_set_up(&self) -> bool {
        self.build
    }

    fn validate(&self) -> Result<(), (&'static str, String)> {
        if !(1..=1 << 32).contains(&self.keys) {
            return Err(("keys", format!("{} keys is outside 1..=2^32", self.keys)));
        }
        if !ORDERS.contains(&self.order) {
            return Err(("order", format!("order {} is outside {}..={}", self.order, ORDERS.start(), ORDERS.end())));
        }
        Ok(())
    }

    fn expected(&self) -> Expected {
        let shape = self.shape();
        let layout = self.layout(&mut AddressSpace::new());
        let model = fringe::Model::new(shape, self.keys);
        // Without the build, only the lookups touch memory: a leaf is on some lookup's path
        // with probability q, a page of nodes (nearly all leaves) holds one such leaf with
        // probability 1 - (1 - q)^nodes per page; likewise for the 512 keys of a page of the
        // key array.
        let page_fraction = |per_page: f64, items: f64| {
            let q = -(-(self.lookups as f64) / items.max(1.0)).exp_m1();
            if self.build { 1.0 } else { 1.0 - (1.0 - q).powf(per_page) }
        };
        let nodes_per_page = (4096.0 / shape.node_bytes() as f64).max(1.0);
        let node_bytes = model.nodes() * shape.node_bytes() as f64 * page_fraction(nodes_per_page, model.leaves());
        let key_bytes = (self.keys as f64 * 8.0 * page_fraction(512.0, self.keys as f64)) as u64;
        let mut regions = vec![
            Region { name: "keys".into(), addr: layout.keys, bytes: self.keys * 8, touched: key_bytes },
            Region { name: "tree (root pointer)".into(), addr: layout.tree, bytes: 16, touched: 8 },
        ];
        for (i, &slab) in layout.slabs.iter().enumerate() {
            let used = (node_bytes - (i as u64 * SLAB_BYTES) as f64).clamp(0.0, SLAB_BYTES as f64) as u64;
            regions.push(Region { name: format!("node slab {i}"), addr: slab, bytes: SLAB_BYTES, touched: used });
        }
        Expected {
            regions,
            phases: vec![
                ExpectedPhase { name: "build", emitted: self.build, refs: model.build_refs() as u64, exact: false },
                ExpectedPhase { name: "lookup", emitted: true, refs: (self.lookups as f64 * model.lookup_refs()) as u64, exact: false },
            ],
            tolerance: 0.1,
        }
    }

    fn run(&self, seed: u64, e: &mut Emitter) -> Result<Vec<String>, String> {
        let layout = self.layout(e);
        let n = self.keys as usize;
        let mut keys = SimVec::filled(layout.keys, n, 0u64, "the B+ tree keys")?;
        let mut tree = Tree {
            shape: self.shape(),
            counts: Vec::new(),
            leaves: Vec::new(),
            addrs: Vec::new(),
            words: Vec::new(),
            root: 0,
            root_addr: layout.tree,
            slabs: &layout.slabs,
        };
        e.phase("build", self.build);
        tree.root = tree.alloc(true)?;
        e.store(tree.node_addr(tree.root), 8);
        e.store(tree.root_addr, 8);
        for i in 0..n {
            let key = key_of(i as u64, seed);
            keys.st(i, key, e);
            tree.insert(key, i as u64, e)?;
            e.instructions(OP_INSTRUCTIONS);
            if e.stopped() {
                return Ok(Vec::new());
            }
        }
        e.phase("lookup", true);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        for _ in 0..self.lookups {
            let i = rng.random_range(0..n);
            let key = keys.ld(i, e);
            if tree.lookup(key, e) != Some(i as u64) {
                return Err(format!("the lookup of key {key:#x} (inserted {i}-th) did not find its value"));
            }
            e.instructions(OP_INSTRUCTIONS);
            if e.stopped() {
                return Ok(Vec::new());
            }
        }
        let chained = tree.check()?;
        if chained != self.keys {
            return Err(format!("the leaf chain holds {chained} keys, not {}", self.keys));
        }
        Ok(vec![
            format!("all {} lookups found their key's value", self.lookups),
            format!("{} nodes: leaves at one depth, keys ascending, the leaf chain holds all {} keys", tree.len(), self.keys),
        ])
    }
}
