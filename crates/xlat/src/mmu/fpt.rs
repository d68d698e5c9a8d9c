//! The `fpt` driver: flattened page tables (FPT, Park et al., ASPLOS '22) as EMT's FPT MMU
//! driver builds them (seed 003; the research sheet's section 3).
//!
//! FPT merges two levels of x86-64's 4-level radix tree into one node of 2^18 8-byte entries
//! (2 MiB) indexed by 18 address bits: `l3l2` merges the PDPT and the PD (`VA[38:21]`), `l4l3`
//! the PML4 and the PDPT (the root, `VA[47:30]`), and `l4l3-l2l1` (the default, EMT's best)
//! both the root and the PD with the PT (`VA[29:12]`). A flattened node takes 512 contiguous
//! frames aligned to 2 MiB (an order-9 allocation, [`TableNeed::Block`]); when none is free
//! that node falls back, on its own, to a plain 4 KiB table of the upper level, below which
//! the lower level is plain too; fallbacks are counted. A walk reads one entry per node, so
//! 2 reads for a 4 KiB page under `l4l3-l2l1` and 3 under `l3l2` or `l4l3`.
//!
//! Page walk caches: the paper does not say how FPT uses them. Here each entry read is cached
//! at the radix level of the lowest level it resolves, keyed as radix's ([`super::pwc`]): a
//! flattened root entry as a PDPT entry (VA >> 30), a flattened PDPT+PD entry as a PD entry
//! (VA >> 21). The artifact instead replays radix walks with some levels removed ("fake
//! FPT"); for `l4l3-l2l1` that also amounts to the root entry served by a PDPT-level hit.
//!
//! A page size whose leaf would be the upper level of a merged pair cannot be mapped: 1 GiB
//! pages under `l3l2`, 2 MiB pages under `l4l3-l2l1` (EMT's 4 KiB-only configuration).
//!
//! An unmap frees the nodes it leaves empty whose whole reach is unmapped, as radix tables
//! are freed (Linux's `free_pgtables`; the root stays): each node counts its entries that
//! hold a page, a swap entry or a node.

use super::{DriverSpec, PageTableDriver, Placed, TableFull, TableNeed, WalkRead, WalkSink};
use crate::os::kernel_work::Meter;
use crate::os::OsSpec;
use crate::types::{Asid, PageSize, Pfn, Translation, Vpn, BASE_PAGE_SHIFT};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// Index bits of a radix level.
const INDEX_BITS: u32 = 9;
/// Levels of the radix tree FPT flattens (4-level x86-64).
const LEVELS: u32 = 4;
/// Base pages of a flattened node (2 MiB).
const NODE_PAGES: u64 = 512;

/// Which levels FPT merges.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum FptMode {
    /// PDPT and PD merged (L3+L2).
    #[serde(rename = "l3l2")]
    L3L2,
    /// PML4 and PDPT merged (L4+L3).
    #[serde(rename = "l4l3")]
    L4L3,
    /// PML4 with PDPT, and PD with PT (L4+L3 and L2+L1; 4 KiB pages and 1 GiB pages only).
    #[default]
    #[serde(rename = "l4l3-l2l1")]
    L4L3L2L1,
}

impl FptMode {
    /// The radix levels (0 for the PT) that are the upper level of a merged pair.
    fn merged_uppers(self) -> &'static [u32] {
        match self {
            FptMode::L3L2 => &[2],
            FptMode::L4L3 => &[3],
            FptMode::L4L3L2L1 => &[3, 1],
        }
    }
}

/// The parameters of `fpt`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct FptSpec {
    /// Which levels are merged: `l3l2`, `l4l3` or `l4l3-l2l1` (the default).
    pub mode: FptMode,
}

impl DriverSpec for FptSpec {
    fn check(&self, os: &OsSpec, path: &str) -> crate::Result<()> {
        let leaf = leaf_level(os.page_size);
        if self.mode.merged_uppers().contains(&leaf) {
            let mode = serde_json::to_value(self.mode).expect("a mode serializes");
            return Err(crate::Error::config(
                format!("{path}.mode"),
                format!("FPT {mode} merges the level whose entries would map the os.page_size pages ({}): choose another mode or page size", crate::units::format_bytes(os.page_size.bytes())),
            ));
        }
        if os.thp != crate::os::Thp::Never && self.mode.merged_uppers().contains(&leaf_level(PageSize::Size2M)) {
            let mode = serde_json::to_value(self.mode).expect("a mode serializes");
            return Err(crate::Error::config(
                format!("{path}.mode"),
                format!("FPT {mode} merges the PD into the PT's node, so it cannot hold the 2 MiB pages of os.thp: choose `l3l2` or `l4l3`, or `thp = \"never\"`"),
            ));
        }
        Ok(())
    }
}

/// The radix level (0 for the PT) whose entries map pages of `size`.
fn leaf_level(size: PageSize) -> u32 {
    (size.shift() - BASE_PAGE_SHIFT) / INDEX_BITS
}

/// One node: a flattened one (two levels, 2^18 entries) or a plain 4 KiB table.
#[derive(Clone, Copy, Debug)]
struct Node {
    frame: Pfn,
    /// The highest radix level the node resolves.
    top: u32,
    flat: bool,
    /// Entries that hold a page's leaf or point to a node.
    entries: u32,
    /// Freed by an unmap: the slot waits for a new node.
    freed: bool,
}

impl Node {
    /// The lowest radix level the node resolves (its entries' level).
    fn bottom(self) -> u32 {
        self.top + 1 - self.span()
    }

    fn span(self) -> u32 {
        if self.flat {
            2
        } else {
            1
        }
    }

    /// The index of `vpn` in the node.
    fn index(self, vpn: Vpn) -> u64 {
        (vpn.0 >> (INDEX_BITS * self.bottom())) & ((1 << (INDEX_BITS * self.span())) - 1)
    }
}

/// What the FPT driver holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct FptStats {
    /// Flattened nodes (2 MiB each).
    pub flattened_nodes: u64,
    /// Plain 4 KiB tables (levels FPT does not merge, and fallbacks).
    pub plain_tables: u64,
    /// Flattened nodes that fell back to a plain table: no 2 MiB block was free.
    pub fallbacks: u64,
    /// Bytes of all nodes.
    pub table_bytes: u64,
}

/// The FPT driver.
#[derive(Clone, Debug)]
pub struct Fpt {
    mode: FptMode,
    nodes: Vec<Node>,
    roots: FxHashMap<Asid, u32>,
    /// The node below entry `index` of node `node`.
    children: FxHashMap<(u32, u64), u32>,
    /// The entries (node, index) that hold a page's leaf.
    leaves: FxHashSet<(u32, u64)>,
    fallbacks: u64,
    /// Slots of `nodes` that freed nodes left, for new ones.
    free_slots: Vec<u32>,
    /// Frames of freed nodes, for the OS to take.
    released: Vec<Pfn>,
}

impl Fpt {
    /// The nodes on the path of `vpn` in `asid` down to the one whose entries are at `leaf`
    /// (root first, as far as they exist), and the level of the next node to add, if any.
    fn path(&self, asid: Asid, vpn: Vpn, leaf: u32) -> Path {
        let mut path = Path { nodes: [0; LEVELS as usize], len: 0, next: Some(LEVELS - 1) };
        let Some(&root) = self.roots.get(&asid) else { return path };
        let mut node = root;
        loop {
            path.nodes[path.len] = node;
            path.len += 1;
            let n = self.nodes[node as usize];
            if n.bottom() == leaf {
                path.next = None;
                return path;
            }
            match self.children.get(&(node, n.index(vpn))) {
                Some(&child) => node = child,
                None => {
                    path.next = Some(n.bottom() - 1);
                    return path;
                }
            }
        }
    }

    /// Marks the entry of the page of `size` at `vpn` of `asid`, whose nodes exist, as
    /// holding a leaf or not.
    fn mark(&mut self, asid: Asid, vpn: Vpn, size: PageSize, leaf: bool) {
        let path = self.path(asid, vpn, leaf_level(size));
        let (Some(&node), None) = (path.nodes().last(), path.next) else { return };
        let key = (node, self.nodes[node as usize].index(vpn));
        let changed = if leaf { self.leaves.insert(key) } else { self.leaves.remove(&key) };
        if changed {
            let entries = &mut self.nodes[node as usize].entries;
            *entries = if leaf { *entries + 1 } else { *entries - 1 };
        }
    }

    /// Frees the nodes below `node` (whose first address is `base`) that map addresses of
    /// `gap` only, some of `range`, and hold no entry, counting the work in `meter`.
    fn free_below(&mut self, node: u32, base: u64, range: &Range<u64>, gap: &Range<u64>, meter: &mut Meter) {
        let n = self.nodes[node as usize];
        if n.bottom() == 0 {
            return;
        }
        // Bytes an entry of this node maps.
        let reach = 1u64 << (BASE_PAGE_SHIFT + INDEX_BITS * n.bottom());
        let first = (range.start.max(base) - base) / reach;
        let last = ((range.end - 1).min(base + (reach << (INDEX_BITS * n.span())) - 1) - base) / reach;
        for i in first..=last {
            let Some(&child) = self.children.get(&(node, i)) else { continue };
            let start = base + i * reach;
            self.free_below(child, start, range, gap, meter);
            if self.nodes[child as usize].entries == 0 && gap.start <= start && start + reach <= gap.end {
                self.free_node(node, i, child, meter);
            }
        }
    }

    /// Frees `child`, the node below entry `index` of `parent`: the entry read and cleared,
    /// the node's pages freed.
    fn free_node(&mut self, parent: u32, index: u64, child: u32, meter: &mut Meter) {
        self.children.remove(&(parent, index));
        self.nodes[parent as usize].entries -= 1;
        let freed = &mut self.nodes[child as usize];
        freed.freed = true;
        let pages = if freed.flat { NODE_PAGES } else { 1 };
        self.released.extend((0..pages).map(|i| Pfn(freed.frame.0 + i)));
        self.free_slots.push(child);
        let work = meter.add();
        work.entries_read += 1;
        work.entries_written += 1;
        work.table_frees += 1;
    }
}

/// The nodes a walk goes through, in place (a walk allocates nothing).
struct Path {
    nodes: [u32; LEVELS as usize],
    len: usize,
    /// The level of the next node to add, if the path is not complete.
    next: Option<u32>,
}

impl Path {
    /// The nodes, root first.
    fn nodes(&self) -> &[u32] {
        &self.nodes[..self.len]
    }
}

impl PageTableDriver for Fpt {
    type Spec = FptSpec;
    type Stats = FptStats;

    fn new(spec: &FptSpec, _: &OsSpec) -> Fpt {
        Fpt {
            mode: spec.mode,
            nodes: Vec::new(),
            roots: FxHashMap::default(),
            children: FxHashMap::default(),
            leaves: FxHashSet::default(),
            fallbacks: 0,
            free_slots: Vec::new(),
            released: Vec::new(),
        }
    }

    fn stateless(&self) -> bool {
        false
    }

    /// A flattened node where the next level is the upper of a merged pair, else a plain
    /// table.
    fn need(&self, asid: Asid, vpn: Vpn, size: PageSize) -> Option<TableNeed> {
        let level = self.path(asid, vpn, leaf_level(size)).next?;
        Some(if self.mode.merged_uppers().contains(&level) { TableNeed::Block(NODE_PAGES) } else { TableNeed::Page })
    }

    /// Adds the node, zeroed (2 MiB flattened, 4 KiB plain), and writes the entry above that
    /// points to it.
    fn given(&mut self, asid: Asid, vpn: Vpn, size: PageSize, table: Placed, meter: &mut Meter) {
        let path = self.path(asid, vpn, leaf_level(size));
        let top = path.next.expect("a node was asked for");
        let pages = if matches!(table, Placed::Block(_)) { NODE_PAGES } else { 1 };
        meter.table_allocated(pages << BASE_PAGE_SHIFT);
        meter.add().entries_written += 1;
        let node = match table {
            Placed::Block(frame) => Node { frame, top, flat: true, entries: 0, freed: false },
            Placed::Page(frame) => {
                self.fallbacks += u64::from(self.mode.merged_uppers().contains(&top));
                Node { frame, top, flat: false, entries: 0, freed: false }
            }
        };
        let id = match self.free_slots.pop() {
            Some(slot) => {
                self.nodes[slot as usize] = node;
                slot
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        match path.nodes().last() {
            None => {
                self.roots.insert(asid, id);
            }
            Some(&parent) => {
                let index = self.nodes[parent as usize].index(vpn);
                self.children.insert((parent, index), id);
                self.nodes[parent as usize].entries += 1;
            }
        }
    }

    /// The nodes are in place ([`PageTableDriver::need`]): the kernel walks to the entry
    /// and writes it.
    fn mapped(&mut self, t: &Translation, meter: &mut Meter) -> Result<(), TableFull> {
        self.write_entry_work(t.asid, t.vpn.addr().0, t.size, meter);
        self.mark(t.asid, t.vpn, t.size, true);
        Ok(())
    }

    /// Nodes stay until an unmap frees them, as radix tables do: the kernel walks to the
    /// entry and clears it.
    fn unmapped(&mut self, asid: Asid, vpn: Vpn, size: PageSize, meter: &mut Meter) {
        self.write_entry_work(asid, vpn.addr().0, size, meter);
        self.mark(asid, vpn, size, false);
    }

    /// The kernel walks to the entry and writes a swap entry, which keeps its node.
    fn swapped_out(&mut self, asid: Asid, vpn: Vpn, size: PageSize, meter: &mut Meter) {
        self.write_entry_work(asid, vpn.addr().0, size, meter);
    }

    fn take_released(&mut self, out: &mut Vec<Pfn>) {
        out.append(&mut self.released);
    }

    /// Walks down the nodes overlapping `range` from the root, freeing each on the way back
    /// up that is empty and maps addresses of `gap` only.
    fn free_tables(&mut self, asid: Asid, range: Range<u64>, gap: Range<u64>, meter: &mut Meter) {
        // Addresses are taken modulo the 48-bit reach, as walks take them.
        let (Some(&root), false) = (self.roots.get(&asid), range.is_empty() || range.end > 1 << 48) else { return };
        self.free_below(root, 0, &range, &gap, meter);
    }

    /// An entry read per node on the path, down to the first missing one.
    fn find_work(&self, asid: Asid, vaddr: u64, size: PageSize, meter: &mut Meter) {
        meter.add().entries_read += self.path(asid, Vpn(vaddr >> BASE_PAGE_SHIFT), leaf_level(size)).len as u64;
    }

    #[inline(never)]
    fn walk<S: WalkSink>(&mut self, t: &Translation, sink: &mut S) {
        let path = self.path(t.asid, t.vpn, leaf_level(t.size));
        debug_assert!(path.next.is_none(), "a mapped page has every node of its path");
        for &node in path.nodes() {
            let n = self.nodes[node as usize];
            sink.read(WalkRead::chain(n.bottom() as u8, (n.frame.0 << BASE_PAGE_SHIFT) + n.index(t.vpn) * 8));
        }
    }

    fn stats(&self) -> FptStats {
        let flattened = self.nodes.iter().filter(|n| n.flat && !n.freed).count() as u64;
        let plain = self.nodes.iter().filter(|n| !n.flat && !n.freed).count() as u64;
        FptStats { flattened_nodes: flattened, plain_tables: plain, fallbacks: self.fallbacks, table_bytes: (flattened * NODE_PAGES + plain) << BASE_PAGE_SHIFT }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::PlacementSpec;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// A naive model of FPT: each node is keyed by (ASID, its top level, the address bits
    /// above it); entry addresses are computed from the mode's bit fields, `VA[47:30]`,
    /// `VA[38:21]`, `VA[29:12]` for flattened nodes and 9-bit fields for plain ones.
    struct NaiveFpt {
        /// Whether each level pair's node got a block, by the order nodes are made.
        blocks: Vec<bool>,
        nodes: HashMap<(Asid, u32, u64), (u64, bool)>,
        next_frame: u64,
    }

    impl NaiveFpt {
        fn walk(&mut self, mode: FptMode, asid: Asid, vaddr: u64, leaf: u32, added: &mut Vec<Placed>) -> Vec<WalkRead> {
            let mut reads = Vec::new();
            let mut top = 3;
            loop {
                let key = (asid, top, (vaddr & ((1 << 48) - 1)) >> (12 + 9 * (top + 1)));
                let merged = mode.merged_uppers().contains(&top);
                let (frame, flat) = match self.nodes.get(&key) {
                    Some(&node) => node,
                    None => {
                        let flat = merged && self.blocks.pop().unwrap_or(true);
                        let frame = self.next_frame;
                        self.next_frame += if flat { 512 } else { 1 };
                        added.push(if flat { Placed::Block(Pfn(frame)) } else { Placed::Page(Pfn(frame)) });
                        self.nodes.insert(key, (frame, flat));
                        (frame, flat)
                    }
                };
                let bottom = if flat { top - 1 } else { top };
                let bits = if flat { 18 } else { 9 };
                let index = (vaddr >> (12 + 9 * bottom)) & ((1 << bits) - 1);
                reads.push(WalkRead::chain(bottom as u8, frame * 4096 + index * 8));
                if bottom == leaf {
                    return reads;
                }
                top = bottom - 1;
            }
        }
    }

    proptest! {
        /// Nodes asked for and entries read agree with the naive model, for every mode,
        /// with any nodes falling back.
        #[test]
        fn walks_read_the_entries_of_the_naive_nodes(
            mode in prop_oneof![Just(FptMode::L3L2), Just(FptMode::L4L3), Just(FptMode::L4L3L2L1)],
            pages in proptest::collection::vec((0u16..3, prop_oneof![0u64..1 << 24, 0u64..1 << 36]), 1..150),
            blocks in proptest::collection::vec(any::<bool>(), 0..100),
        ) {
            let os = OsSpec::simple(1 << 30, PlacementSpec::Sequential);
            let mut fpt = Fpt::new(&FptSpec { mode }, &os);
            let mut naive = NaiveFpt { blocks, nodes: HashMap::new(), next_frame: 1 };
            let mut mapped = Vec::new();
            for (asid, page) in pages {
                let vaddr = page << 12;
                let t = Translation { asid, vpn: Vpn(page), pfn: Pfn(0), size: PageSize::Size4K };
                let mut added = Vec::new();
                let reads = naive.walk(mode, asid, vaddr, 0, &mut added);
                for placed in added {
                    let need = fpt.need(asid, t.vpn, t.size);
                    prop_assert!(need.is_some());
                    // A fallback: the OS gives a page for a block.
                    prop_assert!(matches!(placed, Placed::Page(_)) || need == Some(TableNeed::Block(512)));
                    fpt.given(asid, t.vpn, t.size, placed, &mut Meter::default());
                }
                prop_assert_eq!(fpt.need(asid, t.vpn, t.size), None);
                fpt.mapped(&t, &mut Meter::default()).unwrap();
                mapped.push((t, reads));
            }
            for (t, want) in mapped {
                let mut reads = Vec::new();
                fpt.walk(&t, &mut reads);
                prop_assert_eq!(reads, want);
            }
        }
    }

    #[test]
    fn the_default_mode_walks_two_reads_and_counts_a_fallback() {
        let os = OsSpec::simple(1 << 30, PlacementSpec::Sequential);
        let mut fpt = Fpt::new(&FptSpec::default(), &os);
        let t = Translation { asid: 0, vpn: Vpn(0x7f00_0001), pfn: Pfn(0), size: PageSize::Size4K };
        assert_eq!(fpt.need(0, t.vpn, t.size), Some(TableNeed::Block(512)));
        fpt.given(0, t.vpn, t.size, Placed::Block(Pfn(512)), &mut Meter::default());
        // No block free for the L2+L1 node: a plain PD, then a plain PT.
        assert_eq!(fpt.need(0, t.vpn, t.size), Some(TableNeed::Block(512)));
        fpt.given(0, t.vpn, t.size, Placed::Page(Pfn(7)), &mut Meter::default());
        assert_eq!(fpt.need(0, t.vpn, t.size), Some(TableNeed::Page));
        fpt.given(0, t.vpn, t.size, Placed::Page(Pfn(8)), &mut Meter::default());
        assert_eq!(fpt.need(0, t.vpn, t.size), None);
        let mut reads = Vec::new();
        fpt.walk(&t, &mut reads);
        assert_eq!(reads.iter().map(|r| r.level).collect::<Vec<_>>(), [2, 1, 0]);
        // Another 1 GiB region gets its flattened L2+L1 node: two reads.
        let u = Translation { vpn: Vpn(0x7f00_0001 + (1 << 18)), ..t };
        assert_eq!(fpt.need(0, u.vpn, u.size), Some(TableNeed::Block(512)));
        fpt.given(0, u.vpn, u.size, Placed::Block(Pfn(1024)), &mut Meter::default());
        reads.clear();
        fpt.walk(&u, &mut reads);
        let index = (0x7f00_0001u64 + (1 << 18)) & ((1 << 18) - 1);
        assert_eq!(reads, [WalkRead::chain(2, 512 * 4096 + ((u.vpn.0 >> 18) & ((1 << 18) - 1)) * 8), WalkRead::chain(0, 1024 * 4096 + index * 8)]);
        assert_eq!(fpt.stats(), FptStats { flattened_nodes: 2, plain_tables: 2, fallbacks: 1, table_bytes: (2 * 512 + 2) * 4096 });
    }

    #[test]
    fn page_sizes_a_mode_merges_away_are_rejected_naming_the_field() {
        for (mode, size) in [(FptMode::L4L3L2L1, PageSize::Size2M), (FptMode::L3L2, PageSize::Size1G)] {
            let os = OsSpec { page_size: size, ..OsSpec::simple(1 << 31, PlacementSpec::Sequential) };
            let e = FptSpec { mode }.check(&os, "machine[0].os.page_table").unwrap_err().to_string();
            assert!(e.contains("machine[0].os.page_table.mode"), "{e}");
        }
        let os = OsSpec { page_size: PageSize::Size2M, ..OsSpec::simple(1 << 31, PlacementSpec::Sequential) };
        assert!(FptSpec { mode: FptMode::L3L2 }.check(&os, "p").is_ok());
    }
}
