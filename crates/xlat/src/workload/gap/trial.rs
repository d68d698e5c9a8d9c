//! The arrays one trial of a kernel allocates, in program order. The run makes them from the
//! process's allocator (the emitter) where the kernel does; the expectation makes the same
//! calls on an address space of its own, which places them alike, for the regions and their
//! footprint.

use crate::workload::address_space::Allocator;
use crate::workload::Region;

/// A trial's allocations: every region ever allocated, and which are still live.
#[derive(Clone, Debug, Default)]
pub struct Trial {
    regions: Vec<Region>,
    live: Vec<usize>,
}

impl Trial {
    /// `malloc`s `arrays` (name, bytes) in order.
    pub fn plan(space: &mut impl Allocator, arrays: &[(&str, u64)]) -> Trial {
        let mut t = Trial::default();
        t.extend(space, arrays);
        t
    }

    /// `malloc`s more arrays, in order.
    pub fn extend(&mut self, space: &mut impl Allocator, arrays: &[(&str, u64)]) {
        for &(name, bytes) in arrays {
            self.alloc(space, name, bytes);
        }
    }

    /// `malloc`s one array; returns its address.
    pub fn alloc(&mut self, space: &mut impl Allocator, name: &str, bytes: u64) -> u64 {
        let addr = space.malloc(bytes);
        self.live.push(self.regions.len());
        self.regions.push(Region { name: name.to_string(), addr, bytes, touched: bytes });
        addr
    }

    /// `free`s the live array allocated last.
    pub fn free_last(&mut self, space: &mut impl Allocator) {
        if let Some(i) = self.live.pop() {
            space.free(self.regions[i].addr);
        }
    }

    /// An array `malloc`ed and `free`d before the next allocation.
    pub fn transient(&mut self, space: &mut impl Allocator, name: &str, bytes: u64) {
        self.alloc(space, name, bytes);
        self.free_last(space);
    }

    /// The address of the `i`-th array allocated.
    pub fn addr(&self, i: usize) -> u64 {
        self.regions[i].addr
    }

    /// `free`s the live arrays `which` (indices in allocation order), in that order.
    pub fn free_only(&mut self, space: &mut impl Allocator, which: &[usize]) {
        for &i in which {
            if let Some(pos) = self.live.iter().position(|&l| l == i) {
                space.free(self.regions[i].addr);
                self.live.remove(pos);
            }
        }
    }

    /// `free`s every live array, the last allocated first.
    pub fn release(&mut self, space: &mut impl Allocator) {
        while self.live.last().is_some() {
            self.free_last(space);
        }
    }

    /// Sets the bytes the stream is expected to touch of the `i`-th array.
    pub fn set_touched(&mut self, i: usize, touched: u64) {
        self.regions[i].touched = touched;
    }

    /// The regions, for the expectation.
    pub fn into_regions(self) -> Vec<Region> {
        self.regions
    }
}
