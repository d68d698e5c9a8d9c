//! A model of a 64-bit Linux process's virtual address space as glibc's `malloc` lays it out,
//! so that the built-in workloads' data sit at the addresses a real process would give them.
//!
//! What is modelled (x86-64, ASLR off, glibc ≥ 2.26 defaults):
//!
//! * the program image (text, data, bss) at the PIE base `0x5555_5555_4000`;
//! * the `brk` heap right after the image: the first chunk is malloc's 0x290-byte
//!   `tcache_perthread_struct`; every later request of `n` bytes takes a chunk of
//!   `max(32, align16(n + 8))` bytes, the user pointer 16 bytes into the chunk, chunks packed
//!   one after the other (so small objects share pages as they do in a real heap);
//! * the heap grows by the shortfall plus 128 KiB (`M_TOP_PAD`) and shrinks back when more than
//!   the trim threshold is free at its top; a request that fits in the free top of the heap
//!   is served there whatever its size, as `_int_malloc` does;
//! * other requests whose chunk is at least the mmap threshold (128 KiB at start) get their own
//!   anonymous mapping of `align4K(chunk + 8)` bytes, placed top-down in the highest gap below
//!   the shared libraries (the kernel's `vm_unmapped_area`), the user pointer 16 bytes into it;
//! * glibc's dynamic threshold: freeing a mapped chunk larger than the threshold (and at most
//!   32 MiB) raises the threshold to that chunk's size, so a later allocation of the same size
//!   comes from the heap instead — as it does in a real process;
//! * `free` of a heap chunk: one bordering the top of the heap returns to it; others are reused
//!   by later requests of exactly the same chunk size, last freed first (the tcache/fastbin
//!   behaviour; bins that split and coalesce arbitrary chunks are not modelled);
//! * the stack below `0x7fff_ffff_f000`.
//!
//! Only addresses are modelled: the data live in Rust memory, and the workloads map an index
//! to the address of the same element here.
//!
//! What the kernel sees of it is given as address-space events: the mappings at a point
//! ([`AddressSpace::mapped`]: image, heap, libraries and the other mappings, the stack's
//! whole growth range), then a log of every move of the break (a map of what it grows, an
//! unmap of what it gives back) and every `mmap`/`munmap` of a large chunk
//! ([`AddressSpace::take_changes`]). The emitter, as an [`Allocator`], hands them on where
//! the program calls `malloc` or `free`.

use crate::memref::{AddressSpaceEvent, RangeOp};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// Where the program image starts (the PIE base with ASLR off).
pub const TEXT_BASE: u64 = 0x5555_5555_4000;
/// Bytes of program image (text, data and bss) assumed before the heap.
pub const IMAGE_BYTES: u64 = 0x4000;
/// The top of the mmap area with ASLR off (`mmap_base`).
pub const MMAP_BASE: u64 = 0x7fff_f7ff_f000;
/// Bytes below [`MMAP_BASE`] taken by the dynamic loader, the vDSO, libm, libc and the
/// initial thread's TLS before `main` runs (Debian 12, glibc 2.36: `/proc/self/maps` of a
/// program linking libm, ASLR off; [`super::startup`] places its pages there).
pub const LIBRARY_BYTES: u64 = 0x30_d000;
/// Every mapping the model makes lies above this address, every heap chunk below it.
pub const MMAP_AREA_FLOOR: u64 = 0x7000_0000_0000;
/// The top of the user stack.
pub const STACK_TOP: u64 = 0x7fff_ffff_f000;
/// The most the main stack grows to (`RLIMIT_STACK`'s default, 8 MiB): the kernel grows it
/// on faults, with no call a program makes, so all of it counts as mapped from the start.
pub const STACK_BYTES: u64 = 8 << 20;
/// glibc's initial mmap threshold (`M_MMAP_THRESHOLD`).
pub const MMAP_THRESHOLD: u64 = 128 << 10;
/// The largest value the dynamic mmap threshold reaches (`DEFAULT_MMAP_THRESHOLD_MAX`, 64-bit).
pub const MMAP_THRESHOLD_MAX: u64 = 32 << 20;
/// Size of the tcache chunk malloc allocates first in the heap.
const TCACHE_CHUNK: u64 = 0x290;
/// `M_TOP_PAD`: extra bytes requested from the kernel each time the heap grows.
const TOP_PAD: u64 = 128 << 10;
/// The smallest chunk; the top chunk always keeps at least this much.
const MIN_CHUNK: u64 = 32;
/// Bytes per page.
pub(super) const PAGE: u64 = 4096;
/// The first address of the brk heap: right after the program image, page-aligned.
pub const HEAP_START: u64 = (TEXT_BASE + IMAGE_BYTES).div_ceil(PAGE) * PAGE;

/// Where a workload's allocations go: a plan's own [`AddressSpace`] (to compute addresses
/// without running), or the running program's through its emitter
/// ([`super::emit::Emitter`]), which also hands on what they map and unmap. The same calls
/// in the same order give the same addresses in both.
pub trait Allocator {
    /// `malloc(bytes)`: see [`AddressSpace::malloc`].
    fn malloc(&mut self, bytes: u64) -> u64;
    /// `posix_memalign`: see [`AddressSpace::memalign`].
    fn memalign(&mut self, align: u64, bytes: u64) -> u64;
    /// `count` small mallocs in a row: see [`AddressSpace::malloc_run`].
    fn malloc_run(&mut self, bytes: u64, count: u64) -> u64;
    /// `free(addr)`: see [`AddressSpace::free`].
    fn free(&mut self, addr: u64);
}

impl Allocator for AddressSpace {
    fn malloc(&mut self, bytes: u64) -> u64 {
        AddressSpace::malloc(self, bytes)
    }
    fn memalign(&mut self, align: u64, bytes: u64) -> u64 {
        AddressSpace::memalign(self, align, bytes)
    }
    fn malloc_run(&mut self, bytes: u64, count: u64) -> u64 {
        AddressSpace::malloc_run(self, bytes, count)
    }
    fn free(&mut self, addr: u64) {
        AddressSpace::free(self, addr)
    }
}

/// Where an allocation was placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Placement {
    /// A chunk of this size in the brk heap.
    Heap(u64),
    /// Its own mapping: start and length.
    Mapped(u64, u64),
}

/// A simulated process address space with a glibc-like allocator.
#[derive(Clone, Debug)]
pub struct AddressSpace {
    /// Address of the heap's top chunk (the next chunk carved from `brk`).
    top: u64,
    /// The program break: the top chunk spans `top..brk`.
    brk: u64,
    threshold: u64,
    trim_threshold: u64,
    /// Anonymous mappings: start → end.
    mappings: BTreeMap<u64, u64>,
    /// (`len`, `ceiling`): no gap of `len` bytes or more lies between mappings above
    /// `ceiling`, so the search for such a gap starts there instead of walking every mapping
    /// from the top again (a workload mapping many slabs made that quadratic). New mappings
    /// only fill gaps, so it holds until a mapping is freed.
    gap_hint: Option<(u64, u64)>,
    live: FxHashMap<u64, Placement>,
    /// Freed heap chunks by chunk size, reused last freed first.
    free_chunks: FxHashMap<u64, Vec<u64>>,
    /// Address-space events not yet taken, oldest first (in address space 0).
    changes: Vec<AddressSpaceEvent>,
}

impl Default for AddressSpace {
    fn default() -> Self {
        AddressSpace::new()
    }
}

fn align_up(v: u64, to: u64) -> u64 {
    v.div_ceil(to) * to
}

/// The chunk size glibc uses for a request of `bytes` (`request2size`).
pub fn chunk_size(bytes: u64) -> u64 {
    align_up(bytes + 8, 16).max(32)
}

impl AddressSpace {
    /// A fresh process: image loaded, libraries mapped, heap empty but for malloc's tcache.
    pub fn new() -> AddressSpace {
        let mut mappings = BTreeMap::new();
        mappings.insert(MMAP_BASE - LIBRARY_BYTES, MMAP_BASE);
        AddressSpace {
            top: HEAP_START + TCACHE_CHUNK,
            brk: align_up(HEAP_START + TCACHE_CHUNK + TOP_PAD, PAGE),
            threshold: MMAP_THRESHOLD,
            trim_threshold: 2 * MMAP_THRESHOLD,
            mappings,
            gap_hint: None,
            live: FxHashMap::default(),
            free_chunks: FxHashMap::default(),
            changes: Vec::new(),
        }
    }

    /// What is mapped now, as map events in address order: the program image, the heap up
    /// to the break, the mappings (libraries first among them) and the stack.
    pub fn mapped(&self) -> Vec<AddressSpaceEvent> {
        let image = AddressSpaceEvent::map(TEXT_BASE, HEAP_START - TEXT_BASE);
        let heap = AddressSpaceEvent::map(HEAP_START, self.brk - HEAP_START);
        let mappings = self.mappings.iter().map(|(&start, &end)| AddressSpaceEvent::map(start, end - start));
        let stack = AddressSpaceEvent::map(STACK_TOP - STACK_BYTES, STACK_BYTES);
        [image, heap].into_iter().chain(mappings).chain([stack]).collect()
    }

    /// The address-space events since the last call (or the start), oldest first.
    pub fn take_changes(&mut self) -> Vec<AddressSpaceEvent> {
        std::mem::take(&mut self.changes)
    }

    /// Moves the break to `brk`, logging what it maps or unmaps. Growths with nothing logged
    /// between them are logged as one (a run of mallocs moves the break many times).
    fn set_brk(&mut self, brk: u64) {
        match brk.cmp(&self.brk) {
            std::cmp::Ordering::Greater => match self.changes.last_mut() {
                Some(last) if last.op == RangeOp::Map && last.start + last.len == self.brk => last.len = brk - last.start,
                _ => self.changes.push(AddressSpaceEvent::map(self.brk, brk - self.brk)),
            },
            std::cmp::Ordering::Less => self.changes.push(AddressSpaceEvent::unmap(brk, self.brk - brk)),
            std::cmp::Ordering::Equal => {}
        }
        self.brk = brk;
    }

    /// The first address of the brk heap.
    pub fn heap_start(&self) -> u64 {
        HEAP_START
    }

    /// The current end of the brk heap's used part.
    pub fn heap_top(&self) -> u64 {
        self.top
    }

    /// `malloc(bytes)`: the address of the first usable byte (16-byte aligned).
    ///
    /// Panics only if the 128 TiB user address space is exhausted, which the workloads' size
    /// limits rule out.
    pub fn malloc(&mut self, bytes: u64) -> u64 {
        let chunk = chunk_size(bytes);
        let reused = self.free_chunks.get_mut(&chunk).and_then(Vec::pop);
        let fits_top = self.top + chunk + MIN_CHUNK <= self.brk;
        if reused.is_none() && !fits_top && chunk >= self.threshold {
            return self.map(chunk);
        }
        let start = reused.unwrap_or_else(|| self.carve_top(chunk));
        let mem = start + 16;
        self.live.insert(mem, Placement::Heap(chunk));
        mem
    }

    /// `posix_memalign` of `bytes` at a power-of-two `align`: glibc's `_int_memalign` asks
    /// `malloc` for `bytes + align + MINSIZE` and returns the first aligned address inside
    /// (for a mapping, one page in). The unused head and tail stay with the allocation here
    /// (glibc gives a heap chunk's back to the heap).
    pub fn memalign(&mut self, align: u64, bytes: u64) -> u64 {
        debug_assert!(align.is_power_of_two());
        align_up(self.malloc(bytes + align + MIN_CHUNK), align)
    }

    /// How many freed heap chunks of `chunk` bytes wait to be reused.
    pub fn reusable(&self, chunk: u64) -> usize {
        self.free_chunks.get(&chunk).map_or(0, Vec::len)
    }

    /// Splits `chunk` bytes off the top chunk, growing the break as `sysmalloc` does (by the
    /// shortfall plus `M_TOP_PAD`, page-aligned).
    fn carve_top(&mut self, chunk: u64) -> u64 {
        let start = self.top;
        self.top += chunk;
        if self.top + MIN_CHUNK > self.brk {
            self.set_brk(align_up(self.top + MIN_CHUNK + TOP_PAD, PAGE));
        }
        start
    }

    /// `count` consecutive `malloc(bytes)` calls of a small size (below the mmap threshold),
    /// with nothing freed in between and no freed chunk of that size to reuse: the chunks are
    /// carved one after the other from the top of the heap. Returns the first user pointer;
    /// the others follow every [`chunk_size`]`(bytes)` bytes. They are not tracked one by one
    /// and cannot be freed (for millions of list nodes). The break grows as the single calls
    /// grow it, in steps of the shortfall plus `M_TOP_PAD`, so that later requests find the
    /// same free top.
    pub fn malloc_run(&mut self, bytes: u64, count: u64) -> u64 {
        let chunk = chunk_size(bytes);
        assert!(chunk < self.threshold, "malloc_run is for heap-sized requests");
        let first = self.top;
        let end = first + chunk * count;
        while self.top < end {
            // The chunks that fit below the break, then the one that grows it.
            let fit = self.brk.saturating_sub(self.top + MIN_CHUNK) / chunk;
            self.top += fit.min((end - self.top) / chunk) * chunk;
            if self.top < end {
                self.carve_top(chunk);
            }
        }
        first + 16
    }

    fn map(&mut self, chunk: u64) -> u64 {
        let len = align_up(chunk + 8, PAGE);
        let start = self.highest_gap(len);
        self.mappings.insert(start, start + len);
        self.changes.push(AddressSpaceEvent::map(start, len));
        // The search passed over gaps smaller than `len` down to this mapping.
        self.gap_hint = Some((len, start));
        let mem = start + 16;
        self.live.insert(mem, Placement::Mapped(start, len));
        mem
    }

    /// The start of the highest gap of `len` bytes below the libraries (top-down placement).
    fn highest_gap(&self, len: u64) -> u64 {
        let mut ceiling = match self.gap_hint {
            Some((smallest, below)) if len >= smallest => below,
            _ => MMAP_BASE,
        };
        for (&start, &end) in self.mappings.range(..ceiling).rev() {
            if ceiling - end >= len {
                break;
            }
            ceiling = start;
        }
        let start = ceiling.checked_sub(len).expect("simulated address space exhausted");
        assert!(start > self.top + (1 << 30), "simulated mmap area ran into the heap");
        start
    }

    /// `free(addr)` of an address returned by [`AddressSpace::malloc`]; other addresses are
    /// ignored (as a model, not a debugging allocator).
    pub fn free(&mut self, addr: u64) {
        match self.live.remove(&addr) {
            Some(Placement::Mapped(start, len)) => {
                self.mappings.remove(&start);
                self.changes.push(AddressSpaceEvent::unmap(start, len));
                self.gap_hint = None;
                if len > self.threshold && len <= MMAP_THRESHOLD_MAX {
                    self.threshold = len;
                    self.trim_threshold = 2 * len;
                }
            }
            Some(Placement::Heap(chunk)) => {
                let start = addr - 16;
                if start + chunk == self.top {
                    self.top = start;
                    if self.brk - self.top >= self.trim_threshold {
                        self.set_brk(align_up(self.top + MIN_CHUNK + TOP_PAD, PAGE));
                    }
                } else {
                    self.free_chunks.entry(chunk).or_default().push(start);
                }
            }
            None => {}
        }
    }

    /// True when `addr` (a live allocation) has its own mapping rather than a heap chunk.
    pub fn is_mapped(&self, addr: u64) -> bool {
        matches!(self.live.get(&addr), Some(Placement::Mapped(..)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_chunks_are_packed_after_the_tcache() {
        let mut a = AddressSpace::new();
        let first = a.malloc(24);
        assert_eq!(first, a.heap_start() + 0x290 + 16);
        let second = a.malloc(100);
        assert_eq!(second - first, 32, "24 bytes take a 32-byte chunk");
        let third = a.malloc(1);
        assert_eq!(third - second, 112, "100 bytes take a 112-byte chunk");
        assert!(!a.is_mapped(third));
    }

    #[test]
    fn large_allocations_are_mapped_top_down_page_aligned() {
        let mut a = AddressSpace::new();
        let x = a.malloc(1 << 20);
        let y = a.malloc(1 << 20);
        assert!(a.is_mapped(x) && a.is_mapped(y));
        assert_eq!(x % PAGE, 16);
        assert_eq!(x - 16 + align_up((1 << 20) + 8 + 8, PAGE), MMAP_BASE - LIBRARY_BYTES);
        assert!(y < x, "top-down");
        assert_eq!(x - y, align_up((1 << 20) + 16, PAGE));
    }

    #[test]
    fn freed_mapping_leaves_the_highest_gap() {
        let mut a = AddressSpace::new();
        let x = a.malloc(40 << 20);
        let _y = a.malloc(1 << 20);
        a.free(x);
        let z = a.malloc(1 << 20);
        assert!(a.is_mapped(z), "40 MiB is above the dynamic threshold's maximum: no change");
        let x_end = x - 16 + align_up(chunk_size(40 << 20) + 8, PAGE);
        assert_eq!(z - 16 + align_up(chunk_size(1 << 20) + 8, PAGE), x_end, "the highest gap is the freed one");
    }

    #[test]
    fn freeing_a_mapping_raises_the_threshold() {
        let mut a = AddressSpace::new();
        let x = a.malloc(1 << 20);
        assert!(a.is_mapped(x));
        a.free(x);
        let w = a.malloc(1 << 20);
        assert!(!a.is_mapped(w), "the threshold rose above 1 MiB: the heap serves it");
        a.free(w);
        assert_eq!(a.malloc(1 << 20), w, "a chunk at the top of the heap returns to it");
    }

    #[test]
    fn a_run_of_mallocs_is_consecutive_chunks() {
        let (mut a, mut b) = (AddressSpace::new(), AddressSpace::new());
        let first = a.malloc_run(16, 1000);
        let singles: Vec<u64> = (0..1000).map(|_| b.malloc(16)).collect();
        assert_eq!(first, singles[0]);
        assert_eq!(singles[999], first + 999 * 32);
        assert_eq!(a.malloc(100), b.malloc(100));
        // The break grew alike: a request that fits the free top in one fits it in both.
        assert_eq!((a.brk, a.top), (b.brk, b.top));
        let (mut c, mut d) = (AddressSpace::new(), AddressSpace::new());
        c.malloc_run(200, 3000);
        (0..3000).for_each(|_| _ = d.malloc(200));
        assert_eq!((c.brk, c.top), (d.brk, d.top));
    }

    /// The highest gap of `len` bytes, found by walking every mapping from the top.
    fn highest_gap_by_walking(a: &AddressSpace, len: u64) -> u64 {
        let mut ceiling = MMAP_BASE;
        for (&start, &end) in a.mappings.range(..MMAP_BASE).rev() {
            if ceiling - end >= len {
                break;
            }
            ceiling = start;
        }
        ceiling - len
    }

    proptest::proptest! {
        /// Mappings land where a walk of every mapping from the top puts them, whatever
        /// was mapped and freed before: the gap hint only saves the walk.
        #[test]
        fn mappings_take_the_highest_gap(ops in proptest::collection::vec((0u64..6, proptest::bool::ANY, 0usize..64), 1..200)) {
            let mut a = AddressSpace::new();
            let mut live = Vec::new();
            for (size, free, pick) in ops {
                if free && !live.is_empty() {
                    a.free(live.swap_remove(pick % live.len()));
                    continue;
                }
                // 33 to 73 MiB: above the largest dynamic threshold, so always mapped, and
                // of several sizes, so that freed gaps fit some requests and not others.
                let bytes = (33 + size * 8) << 20;
                let walked = highest_gap_by_walking(&a, align_up(chunk_size(bytes) + 8, PAGE));
                let addr = a.malloc(bytes);
                proptest::prop_assert_eq!(addr, walked + 16);
                live.push(addr);
            }
        }
    }

    #[test]
    fn memalign_returns_an_aligned_pointer_inside_its_allocation() {
        let mut a = AddressSpace::new();
        let big = a.memalign(PAGE, 1 << 20);
        assert_eq!(big % PAGE, 0);
        assert!(a.is_mapped(big - PAGE + 16), "a mapping, aligned one page in");
        let small = a.memalign(PAGE, 1000);
        assert_eq!(small % PAGE, 0);
        assert!(small >= a.heap_start() && small + 1000 <= a.heap_top());
    }

    #[test]
    fn freed_heap_chunks_are_reused_by_size() {
        let mut a = AddressSpace::new();
        let x = a.malloc(40);
        let _y = a.malloc(40);
        a.free(x);
        assert_eq!(a.reusable(chunk_size(40)), 1);
        assert_eq!(a.malloc(40), x);
        assert_eq!(a.reusable(chunk_size(40)), 0);
    }

    /// The pages mapped after applying `events` in order to an empty address space.
    fn apply(mapped: &mut std::collections::BTreeSet<u64>, events: &[AddressSpaceEvent]) {
        for e in events {
            let pages = e.pages();
            let pages = (pages.start / PAGE)..(pages.end / PAGE);
            match e.op {
                RangeOp::Map => mapped.extend(pages),
                RangeOp::Unmap => mapped.retain(|p| !pages.contains(p)),
            }
        }
    }

    /// The pages the model holds: image, heap up to the break, libraries, mappings, stack.
    fn model_pages(a: &AddressSpace) -> std::collections::BTreeSet<u64> {
        let ranges = [(TEXT_BASE, a.brk), (STACK_TOP - STACK_BYTES, STACK_TOP)].into_iter().chain(a.mappings.iter().map(|(&s, &e)| (s, e)));
        ranges.flat_map(|(s, e)| s / PAGE..e.div_ceil(PAGE)).collect()
    }

    proptest::proptest! {
        /// Through any mallocs and frees, the logged events map exactly the pages the model
        /// holds, and every live allocation lies in mapped pages.
        #[test]
        fn the_logged_events_follow_the_mappings(ops in proptest::collection::vec((0u8..4, 1u64..(3 << 20)), 1..60)) {
            let mut a = AddressSpace::new();
            let (mut mapped, mut live) = (std::collections::BTreeSet::new(), Vec::new());
            apply(&mut mapped, &a.mapped());
            for (op, bytes) in ops {
                match op {
                    0 | 1 => live.push((a.malloc(bytes), bytes)),
                    2 => live.push((a.malloc(bytes / 1000 + 1), bytes / 1000 + 1)),
                    _ if !live.is_empty() => {
                        let (addr, _) = live.swap_remove(bytes as usize % live.len());
                        a.free(addr);
                    }
                    _ => {}
                }
                apply(&mut mapped, &a.take_changes());
                proptest::prop_assert_eq!(&mapped, &model_pages(&a));
                for &(addr, bytes) in &live {
                    proptest::prop_assert!((addr / PAGE..=(addr + bytes - 1) / PAGE).all(|p| mapped.contains(&p)));
                }
            }
        }
    }

    #[test]
    fn a_run_of_mallocs_logs_one_growth_of_the_break() {
        let mut a = AddressSpace::new();
        assert!(a.take_changes().is_empty());
        let first = a.malloc_run(16, 100_000);
        let changes = a.take_changes();
        assert_eq!(changes, [AddressSpaceEvent::map(changes[0].start, a.brk - changes[0].start)]);
        assert!(first < changes[0].start && first + 32 * 100_000 <= a.brk, "the run starts below the old break, ends below the new");
    }
}
