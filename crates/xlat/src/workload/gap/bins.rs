//! Delta-stepping's `local_bins`: a `std::vector<std::vector<NodeID>>` whose vectors live in
//! the simulated heap and grow as libstdc++'s do — by doubling, through `malloc` (the
//! emitter's, so the stream carries what it maps), copying the elements and `free`ing the old
//! buffer — so their addresses and copies are a real run's.
//!
//! A vector header is 24 bytes (begin, end, capacity pointers). A `push_back` reads the end and
//! capacity, stores the element and the new end; growing also copies and stores the header.

use crate::workload::address_space::Allocator;
use crate::workload::emit::Emitter;

const HEADER: u64 = 24;
const ELEM: u64 = 4;

/// One bin: its elements and buffer.
#[derive(Default)]
struct Bin {
    items: Vec<u32>,
    buf: u64,
    cap: u64,
}

/// The bins of one delta-stepping run.
#[derive(Default)]
pub struct Bins {
    bins: Vec<Bin>,
    /// The outer vector's buffer and capacity (in bins).
    outer: u64,
    outer_cap: u64,
}

impl Bins {
    /// Bins in use.
    pub fn len(&self) -> usize {
        self.bins.len()
    }

    /// True when there is no bin.
    pub fn is_empty(&self) -> bool {
        self.bins.is_empty()
    }

    fn header(&self, i: usize) -> u64 {
        self.outer + i as u64 * HEADER
    }

    /// Bin `i`'s elements (without emitting).
    pub fn items(&self, i: usize) -> &[u32] {
        &self.bins[i].items
    }

    /// Elements in bin `i`, reading its begin and end pointers.
    pub fn size(&self, i: usize, e: &mut Emitter) -> usize {
        e.load(self.header(i), 8);
        e.load(self.header(i) + 8, 8);
        self.bins[i].items.len()
    }

    /// The simulated address of bin `i`'s element `k`.
    pub fn addr(&self, i: usize, k: usize) -> u64 {
        self.bins[i].buf + k as u64 * ELEM
    }

    /// `resize(len)` of the outer vector (only ever grown): reallocates at
    /// `max(2 × size, len)` when full, moving the headers; new bins are empty.
    pub fn grow_to(&mut self, len: usize, e: &mut Emitter) {
        if len <= self.bins.len() {
            return;
        }
        if len as u64 > self.outer_cap {
            let cap = (2 * self.bins.len() as u64).max(len as u64);
            let outer = e.malloc(cap * HEADER);
            for i in 0..self.bins.len() {
                for word in 0..3 {
                    e.load(self.header(i) + 8 * word, 8);
                    e.store(outer + i as u64 * HEADER + 8 * word, 8);
                }
            }
            if self.outer_cap > 0 {
                e.free(self.outer);
            }
            (self.outer, self.outer_cap) = (outer, cap);
        }
        for i in self.bins.len()..len {
            for word in 0..3 {
                e.store(self.outer + i as u64 * HEADER + 8 * word, 8);
            }
        }
        self.bins.resize_with(len, Bin::default);
    }

    /// `bins[i].push_back(v)`, growing the bin's buffer by doubling when full.
    pub fn push(&mut self, i: usize, v: u32, e: &mut Emitter) {
        let h = self.header(i);
        e.load(h + 8, 8);
        e.load(h + 16, 8);
        let bin = &mut self.bins[i];
        let len = bin.items.len() as u64;
        if len == bin.cap {
            let cap = (2 * bin.cap).max(1);
            let buf = e.malloc(cap * ELEM);
            for k in 0..len {
                e.load(bin.buf + k * ELEM, ELEM as u16);
                e.store(buf + k * ELEM, ELEM as u16);
            }
            if bin.cap > 0 {
                e.free(bin.buf);
            }
            (bin.buf, bin.cap) = (buf, cap);
            e.store(h, 8);
            e.store(h + 16, 8);
        }
        e.store(bin.buf + len * ELEM, ELEM as u16);
        bin.items.push(v);
        e.store(h + 8, 8);
    }

    /// `bins[i].resize(0)`: the end pointer set to the beginning; the buffer is kept.
    pub fn clear(&mut self, i: usize, e: &mut Emitter) {
        e.store(self.header(i) + 8, 8);
        self.bins[i].items.clear();
    }

    /// `std::vector<NodeID> copy = bins[i]`: a fresh buffer of the bin's size with its
    /// elements copied; returns the elements and the copy's address (to be freed by the
    /// caller after reading it).
    pub fn copy(&self, i: usize, e: &mut Emitter) -> (Vec<u32>, u64) {
        let len = self.size(i, e) as u64;
        let bin = &self.bins[i];
        let buf = e.malloc(len * ELEM);
        for k in 0..len {
            e.load(bin.buf + k * ELEM, ELEM as u16);
            e.store(buf + k * ELEM, ELEM as u16);
        }
        (bin.items.clone(), buf)
    }

    /// Destroys every bin and the outer vector (`free`s, in order).
    pub fn free(self, e: &mut Emitter) {
        for bin in self.bins.iter().filter(|b| b.cap > 0) {
            e.free(bin.buf);
        }
        if self.outer_cap > 0 {
            e.free(self.outer);
        }
    }
}
