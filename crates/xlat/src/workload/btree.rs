//! BTree: an order-16 B+ tree of `keys` distinct 64-bit keys, built by inserting them one by
//! one in a random order (the `build` phase, emitted when `build` is true), then `lookups`
//! random lookups of existing keys (the `lookup` phase).
//!
//! Layout, as a C implementation would have it: every node is 256 bytes — a 4-byte key count,
//! a 4-byte leaf flag, 15 keys, and 16 pointer slots (an inner node's children; a leaf's 15
//! values and its next-leaf pointer) — carved in order from 1 MiB slabs obtained from `malloc`
//! (so each slab is its own mapping, and nodes sit 16 bytes past 256-byte boundaries: one in
//! sixteen straddles a page). The keys, an array of `keys` words, are the program's input; a
//! lookup reads a random element of it, the tree's root pointer, and at each level the count,
//! the keys a binary search probes and the chosen slot; a leaf hit reads the value.
//!
//! Insertion follows the classic algorithm: descend as a lookup does, shift the larger keys
//! and slots of the leaf one place right (a load and a store each), and split a full node into
//! halves of 8 and 7 keys, copying the upper half into a fresh node and pushing the separator
//! into the parent; a root split allocates a new root.
//!
//! Self-check: every lookup must find its key with the value it was inserted with; at the end
//! (not emitted), every leaf is at the same depth, keys ascend within and across nodes along
//! the leaf chain, and the chain holds exactly `keys` keys.
//!
//! Instructions: 12 per lookup or insertion (random draw, call, loop set-up), 6 per node
//! visited, 5 per binary-search probe, 3 per key or slot shifted or copied.

use super::address_space::AddressSpace;
use super::emit::{Emitter, SimVec};
use super::{Expected, ExpectedPhase, Region, Scale, Workload};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

/// Keys per node (order 16: 16 children).
const MAX_KEYS: usize = 15;
/// Simulated bytes per node.
const NODE_BYTES: u64 = 256;
/// Offset of the key array and of the slot array in a simulated node.
const KEYS_AT: u64 = 8;
const SLOTS_AT: u64 = 128;
/// Bytes per slab.
const SLAB_BYTES: u64 = 1 << 20;
const NODES_PER_SLAB: usize = (SLAB_BYTES / NODE_BYTES) as usize;
/// Average leaf fill of a B+ tree built by random insertions (Yao: ln 2).
const RANDOM_FILL: f64 = std::f64::consts::LN_2;

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
}

#[derive(Clone, Copy)]
struct Node {
    count: u32,
    leaf: bool,
    keys: [u64; MAX_KEYS],
    /// Inner: child node ids; leaf: values, slot 15 the next leaf (+1, 0 = none).
    slots: [u64; MAX_KEYS + 1],
}

impl Node {
    fn new(leaf: bool) -> Node {
        Node { count: 0, leaf, keys: [0; MAX_KEYS], slots: [0; MAX_KEYS + 1] }
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

/// The tree in Rust memory, with the simulated address of every node.
struct Tree<'a> {
    nodes: Vec<Node>,
    root: usize,
    root_addr: u64,
    slabs: &'a [u64],
}

impl Tree<'_> {
    fn node_addr(&self, id: usize) -> u64 {
        self.slabs[id / NODES_PER_SLAB] + (id % NODES_PER_SLAB) as u64 * NODE_BYTES
    }

    fn key_addr(&self, id: usize, k: usize) -> u64 {
        self.node_addr(id) + KEYS_AT + 8 * k as u64
    }

    fn slot_addr(&self, id: usize, s: usize) -> u64 {
        self.node_addr(id) + SLOTS_AT + 8 * s as u64
    }

    fn alloc(&mut self, leaf: bool) -> Result<usize, String> {
        let id = self.nodes.len();
        if id / NODES_PER_SLAB >= self.slabs.len() {
            return Err("the tree outgrew its planned slabs".into());
        }
        if self.nodes.len() == self.nodes.capacity() {
            let more = self.nodes.capacity().max(1024);
            self.nodes.try_reserve(more).map_err(|_| "cannot allocate host memory for the tree's nodes".to_string())?;
        }
        self.nodes.push(Node::new(leaf));
        Ok(id)
    }

    /// Loads the count, then binary-searches node `id` for the first key greater than `key`
    /// (inner nodes) or not less than it (leaves), emitting each probe.
    fn search(&self, id: usize, key: u64, e: &mut Emitter) -> usize {
        let node = &self.nodes[id];
        e.load(self.node_addr(id), 4);
        let (mut lo, mut hi) = (0, node.count as usize);
        let mut probes = 0;
        while lo < hi {
            let mid = (lo + hi) / 2;
            e.load(self.key_addr(id, mid), 8);
            probes += 1;
            let go_right = if node.leaf { node.keys[mid] < key } else { node.keys[mid] <= key };
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
        while !self.nodes[id].leaf {
            let i = self.search(id, key, e);
            e.load(self.slot_addr(id, i), 8);
            id = self.nodes[id].slots[i] as usize;
        }
        let i = self.search(id, key, e);
        let node = &self.nodes[id];
        if i < node.count as usize && node.keys[i] == key {
            e.load(self.slot_addr(id, i), 8);
            Some(node.slots[i])
        } else {
            None
        }
    }

    /// Inserts `key` → `value` (a new key).
    fn insert(&mut self, key: u64, value: u64, e: &mut Emitter) -> Result<(), String> {
        e.load(self.root_addr, 8);
        let mut path = Vec::with_capacity(8);
        let mut id = self.root;
        while !self.nodes[id].leaf {
            let i = self.search(id, key, e);
            e.load(self.slot_addr(id, i), 8);
            path.push((id, i));
            id = self.nodes[id].slots[i] as usize;
        }
        let i = self.search(id, key, e);
        let (mut key, mut right) = (key, value);
        let (mut target, mut at) = (id, i);
        loop {
            if (self.nodes[target].count as usize) < MAX_KEYS {
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
        let count = self.nodes[id].count as usize;
        let slot_at = if self.nodes[id].leaf { at } else { at + 1 };
        let slot_end = if self.nodes[id].leaf { count } else { count + 1 };
        for k in (at..count).rev() {
            self.move_key(id, k, id, k + 1, e);
        }
        for s in (slot_at..slot_end).rev() {
            self.move_slot(id, s, id, s + 1, e);
        }
        let node = &mut self.nodes[id];
        node.keys[at] = key;
        node.slots[slot_at] = slot;
        node.count += 1;
        e.store(self.key_addr(id, at), 8);
        e.store(self.slot_addr(id, slot_at), 8);
        e.store(self.node_addr(id), 4);
    }

    fn move_key(&mut self, from: usize, k: usize, to: usize, j: usize, e: &mut Emitter) {
        e.load(self.key_addr(from, k), 8);
        e.store(self.key_addr(to, j), 8);
        e.instructions(MOVE_INSTRUCTIONS);
        self.nodes[to].keys[j] = self.nodes[from].keys[k];
    }

    fn move_slot(&mut self, from: usize, s: usize, to: usize, j: usize, e: &mut Emitter) {
        e.load(self.slot_addr(from, s), 8);
        e.store(self.slot_addr(to, j), 8);
        e.instructions(MOVE_INSTRUCTIONS);
        self.nodes[to].slots[j] = self.nodes[from].slots[s];
    }

    /// Splits full node `id` while inserting `key` at `at`: the upper half moves to a new
    /// node. Returns the separator to push into the parent and the new node.
    fn split(&mut self, id: usize, at: usize, key: u64, slot: u64, e: &mut Emitter) -> Result<(u64, usize), String> {
        let leaf = self.nodes[id].leaf;
        let new = self.alloc(leaf)?;
        let half = MAX_KEYS.div_ceil(2);
        // Leaves keep `half` keys and copy up the new node's first key; inner nodes keep
        // `half`, push up the next one and move the rest.
        let first_moved = if leaf { half } else { half + 1 };
        let count = MAX_KEYS;
        for (j, k) in (first_moved..count).enumerate() {
            self.move_key(id, k, new, j, e);
        }
        if leaf {
            for (j, s) in (half..count).enumerate() {
                self.move_slot(id, s, new, j, e);
            }
            self.move_slot(id, MAX_KEYS, new, MAX_KEYS, e);
            self.nodes[id].slots[MAX_KEYS] = new as u64 + 1;
            e.store(self.slot_addr(id, MAX_KEYS), 8);
        } else {
            for (j, s) in (half + 1..=count).enumerate() {
                self.move_slot(id, s, new, j, e);
            }
        }
        let sep = if leaf { self.nodes[new].keys[0] } else { self.nodes[id].keys[half] };
        self.nodes[id].count = half as u32;
        self.nodes[new].count = (count - first_moved) as u32;
        e.store(self.node_addr(id), 4);
        e.store(self.node_addr(new), 8);
        // The pending key goes to the half it belongs to (keys are distinct from separators).
        if key < sep {
            self.put(id, at, key, slot, e);
        } else {
            self.put(new, at - first_moved, key, slot, e);
        }
        Ok((sep, new))
    }

    fn new_root(&mut self, left: usize, sep: u64, right: usize, e: &mut Emitter) -> Result<(), String> {
        let root = self.alloc(false)?;
        let node = &mut self.nodes[root];
        node.keys[0] = sep;
        node.slots[0] = left as u64;
        node.slots[1] = right as u64;
        node.count = 1;
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
            let n = &self.nodes[id];
            let keys = &n.keys[..n.count as usize];
            let in_range = keys.iter().all(|&k| lo.is_none_or(|l| k >= l) && hi.is_none_or(|h| k < h));
            if keys.windows(2).any(|w| w[0] >= w[1]) || !in_range {
                return Err(format!("node {id} has keys out of order or outside its parent's range"));
            }
            if n.leaf {
                if *depth.get_or_insert(d) != d {
                    return Err("leaves are at different depths".into());
                }
                continue;
            }
            for c in 0..=keys.len() {
                let clo = if c == 0 { lo } else { Some(keys[c - 1]) };
                let chi = if c == keys.len() { hi } else { Some(keys[c]) };
                stack.push((n.slots[c] as usize, d + 1, clo, chi));
            }
        }
        self.chain_len()
    }

    fn chain_len(&self) -> Result<u64, String> {
        let mut id = self.root;
        while !self.nodes[id].leaf {
            id = self.nodes[id].slots[0] as usize;
        }
        let (mut total, mut last) = (0u64, None::<u64>);
        loop {
            let n = &self.nodes[id];
            for &k in &n.keys[..n.count as usize] {
                if last.is_some_and(|l| l >= k) {
                    return Err("the leaf chain is not in ascending key order".into());
                }
                last = Some(k);
            }
            total += u64::from(n.count);
            match n.slots[MAX_KEYS] {
                0 => return Ok(total),
                next => id = next as usize - 1,
            }
        }
    }
}

impl Btree {
    /// Nodes a random-insertion build is expected to hold (leaves at ln 2 fill, inner levels
    /// likewise).
    fn expected_nodes(&self) -> (f64, f64) {
        let per_node = MAX_KEYS as f64 * RANDOM_FILL;
        let (mut level, mut total, mut height) = ((self.keys as f64 / per_node).max(1.0), 0.0, 1.0);
        while level > 1.0 {
            total += level;
            level = (level / (per_node + 1.0)).ceil().max(1.0);
            height += 1.0;
        }
        (total + 1.0, height)
    }

    /// Slabs to plan for: enough for the worst case fill (half-full nodes).
    fn max_slabs(&self) -> usize {
        let worst_nodes = 2 * self.keys as usize / (MAX_KEYS / 2) + 16;
        worst_nodes.div_ceil(NODES_PER_SLAB)
    }

    fn layout(&self) -> Layout {
        let mut space = AddressSpace::new();
        let keys = space.malloc(self.keys * 8);
        let tree = space.malloc(16);
        let slabs = (0..self.max_slabs()).map(|_| space.malloc(SLAB_BYTES)).collect();
        Layout { keys, tree, slabs }
    }
}

impl Workload for Btree {
    const NAME: &'static str = "btree";
    const ABOUT: &'static str = "order-16 B+ tree: random-order insertions, then random lookups of existing keys";

    fn preset(scale: Scale) -> Btree {
        let keys = match scale {
            Scale::Tiny => 4_000,
            Scale::Small => 3_200_000,
            Scale::Paper => 78_000_000,
        };
        Btree { keys, lookups: keys, build: true }
    }

    fn validate(&self) -> Result<(), (&'static str, String)> {
        if !(1..=1 << 32).contains(&self.keys) {
            return Err(("keys", format!("{} keys is outside 1..=2^32", self.keys)));
        }
        Ok(())
    }

    fn expected(&self) -> Expected {
        let layout = self.layout();
        let (nodes, height) = self.expected_nodes();
        // Without the build, only the lookups touch memory: a leaf is on some lookup's path
        // with probability q, a page of 16 nodes (nearly all leaves) holds one such leaf with
        // probability 1 - (1 - q)^16; likewise for the 512 keys of a page of the key array.
        let page_fraction = |per_page: i32, items: f64| {
            let q = -(-(self.lookups as f64) / items.max(1.0)).exp_m1();
            if self.build { 1.0 } else { 1.0 - (1.0 - q).powi(per_page) }
        };
        let leaves = self.keys as f64 / (MAX_KEYS as f64 * RANDOM_FILL);
        let node_bytes = nodes * NODE_BYTES as f64 * page_fraction(16, leaves);
        let key_bytes = (self.keys as f64 * 8.0 * page_fraction(512, self.keys as f64)) as u64;
        let mut regions = vec![
            Region { name: "keys".into(), addr: layout.keys, bytes: self.keys * 8, touched: key_bytes },
            Region { name: "tree (root pointer)".into(), addr: layout.tree, bytes: 16, touched: 8 },
        ];
        for (i, &slab) in layout.slabs.iter().enumerate() {
            let used = (node_bytes - (i as u64 * SLAB_BYTES) as f64).clamp(0.0, SLAB_BYTES as f64) as u64;
            regions.push(Region { name: format!("node slab {i}"), addr: slab, bytes: SLAB_BYTES, touched: used });
        }
        // A lookup: its key and the root pointer, then per level the count, the probes of a
        // binary search over the average fill, and a slot.
        let probes = (MAX_KEYS as f64 * RANDOM_FILL + 1.0).log2();
        let per_lookup = 2.0 + height * (2.0 + probes);
        let per_insert = per_lookup + 2.0 * MAX_KEYS as f64 * RANDOM_FILL + 3.0;
        Expected {
            regions,
            phases: vec![
                ExpectedPhase { name: "build", emitted: self.build, refs: (self.keys as f64 * (per_insert + 1.0)) as u64, exact: false },
                ExpectedPhase { name: "lookup", emitted: true, refs: (self.lookups as f64 * per_lookup) as u64, exact: false },
            ],
            tolerance: 0.1,
        }
    }

    fn run(&self, seed: u64, e: &mut Emitter) -> Result<Vec<String>, String> {
        let layout = self.layout();
        let n = self.keys as usize;
        let mut keys = SimVec::filled(layout.keys, n, 0u64, "the B+ tree keys")?;
        let mut tree = Tree { nodes: Vec::new(), root: 0, root_addr: layout.tree, slabs: &layout.slabs };
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
            format!("{} nodes: leaves at one depth, keys ascending, the leaf chain holds all {} keys", tree.nodes.len(), self.keys),
        ])
    }
}
