//! The arrays one trial of a kernel allocates, placed by the address-space model in program
//! order. The same plan serves the run (addresses of the arrays) and the expectation (the
//! regions and their footprint).

use crate::workload::address_space::AddressSpace;
use crate::workload::Region;

/// A trial's allocations: every region ever allocated, and which are still live.
#[derive(Clone, Debug, Default)]
pub struct Trial {
    regions: Vec<Region>,
    live: Vec<usize>,
}

impl Trial {
    /// `malloc`s `arrays` (name, bytes) in order.
    pub fn plan(space: &mut AddressSpace, arrays: &[(&str, u64)]) -> Trial {
        let mut t = Trial::default();
        t.extend(space, arrays);
        t
    }

    /// `malloc`s more arrays, in order.
    pub fn extend(&mut self, space: &mut AddressSpace, arrays: &[(&str, u64)]) {
        for &(name, bytes) in arrays {
            let addr = space.malloc(bytes);
            self.live.push(self.regions.len());
            self.regions.push(Region { name: name.to_string(), addr, bytes, touched: bytes });
        }
    }

    /// An array `malloc`ed and `free`d before the next allocation.
    pub fn transient(&mut self, space: &mut AddressSpace, name: &str, bytes: u64) {
        let addr = space.malloc(bytes);
        space.free(addr);
        self.regions.push(Region { name: name.to_string(), addr, bytes, touched: bytes });
    }

    /// The address of the `i`-th array allocated.
    pub fn addr(&self, i: usize) -> u64 {
        self.regions[i].addr
    }

    /// `free`s the live arrays `which` (indices in allocation order), in that order.
    pub fn free_only(&mut self, space: &mut AddressSpace, which: &[usize]) {
        for &i in which {
            if let Some(pos) = self.live.iter().position(|&l| l == i) {
                space.free(self.regions[i].addr);
                self.live.remove(pos);
            }
        }
    }

    /// `free`s every live array, the last allocated first.
    pub fn release(&mut self, space: &mut AddressSpace) {
        while let Some(i) = self.live.pop() {
            space.free(self.regions[i].addr);
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
