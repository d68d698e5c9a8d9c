//! A process's start-up: the pages a dynamically linked C program touches before `main`
//! (the stack the kernel set up, the dynamic loader's own data, the headers and symbol tables
//! it reads to relocate the program and its libraries, the data it relocates, the C
//! library's initialised data and thread-local storage, and malloc's first heap page).
//!
//! A real process touches about a hundred such pages first, before any of the program's own
//! data. They matter under memory pressure with set-associative placement: they take a frame
//! in some sets before the program's arrays fill every set evenly, so a set overflows earlier
//! (see `docs/workloads.md`, XSBench).
//!
//! The model is a table, not a simulation of `ld.so`: which pages of each image are touched,
//! read or written, in the order a recording shows them first touched. It was measured with
//! `xlat trace record` on Debian 12 x86-64 (glibc 2.36, `ld-linux-x86-64.so.2`) for programs
//! linking libc and libm (`/bin/true` and a small C program: 41,812 references and 130,763
//! instructions for a whole run of `/bin/true`), the images placed where a native process
//! has them with ASLR off (`/proc/self/maps`). Every built-in workload starts as such a
//! program; the OpenMP runtime (libgomp, about 18 more pages) and the C++ library
//! (libstdc++ and libgcc_s, about 170 more) are not modelled.

use super::address_space::{HEAP_START, MMAP_BASE, PAGE, STACK_TOP, TEXT_BASE};
use super::emit::Emitter;
use super::Region;

/// Where an image lies: in the library area below [`MMAP_BASE`] (the top of the dynamic
/// loader's mapping), or at the stack's, the program's or the heap's own anchor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Base {
    /// The stack: the run's offsets count down from [`STACK_TOP`].
    Stack,
    /// The program image at [`TEXT_BASE`].
    Program,
    /// An image in the library area, starting this many bytes below [`MMAP_BASE`].
    Library(u64),
    /// The first page of the brk heap.
    Heap,
}

/// Pages touched together: `pages` pages from page `offset` of an image, read or written.
#[derive(Clone, Copy, Debug)]
struct Run {
    /// What the pages hold (a region's name in [`super::Expected`], after [`PREFIX`]).
    name: &'static str,
    base: Base,
    offset: u64,
    pages: u64,
    written: bool,
}

const fn run(name: &'static str, base: Base, offset: u64, pages: u64, written: bool) -> Run {
    Run { name, base, offset, pages, written }
}

/// `ld-linux-x86-64.so.2`: 0x35000 bytes ending at [`MMAP_BASE`].
const LD_SO: Base = Base::Library(0x35000);
/// The loader's anonymous pages (its own allocations) below the vDSO.
const LD_SO_ANON: Base = Base::Library(0x3f000);
/// `libm.so.6`: 0xe0000 bytes, the first library mapped below the loader.
const LIBM: Base = Base::Library(0x128000);
/// `libc.so.6`: 0x1e2000 bytes (its bss included) below libm.
const LIBC: Base = Base::Library(0x30a000);
/// The initial thread's static TLS and control block, the 3 pages below libc.
const TLS: Base = Base::Library(0x30d000);

/// The start-up's runs, in the order they are first touched: the kernel's stack, the loader
/// relocating itself, the program's headers, each library's headers and symbol tables (the
/// loader's lookups), the data relocation and the C library's initialisation write, and
/// malloc's tcache at the heap's start.
const RUNS: [Run; 19] = [
    run("stack", Base::Stack, 0, 1, true),
    run("ld.so data", LD_SO, 0x31, 4, true),
    run("ld.so headers", LD_SO, 0, 1, false),
    run("ld.so read-only data", LD_SO, 0x27, 4, false),
    run("ld.so read-only data", LD_SO, 0x2c, 1, false),
    run("program headers", Base::Program, 0, 1, false),
    run("program read-only data", Base::Program, 2, 1, false),
    run("stack", Base::Stack, 1, 2, true),
    run("libm headers", LIBM, 0, 4, false),
    run("libc headers", LIBC, 0, 9, false),
    run("libc dynamic", LIBC, 0xa, 2, false),
    run("libm symbols", LIBM, 4, 13, false),
    run("libc symbols", LIBC, 0xf, 33, false),
    run("program data", Base::Program, 3, 1, true),
    run("libm data", LIBM, 0xdd, 2, true),
    run("libc data", LIBC, 0x1cf, 9, true),
    run("TLS", TLS, 0, 3, true),
    run("ld.so allocations", LD_SO_ANON, 0, 2, true),
    run("heap", Base::Heap, 0, 1, true),
];

/// References per page touched: one per 512 bytes. The recording makes hundreds per page
/// (the loader's symbol lookups read the same tables again and again); what the TLBs and
/// memory see of them is the first touch, so a few stand for all.
pub const REFS_PER_PAGE: u64 = 8;

/// Instructions of the start-up, as recorded for `/bin/true`'s whole run.
pub const INSTRUCTIONS: u64 = 130_000;

/// The first address of a run.
fn start(r: &Run) -> u64 {
    match r.base {
        Base::Stack => STACK_TOP - (r.offset + r.pages) * PAGE,
        Base::Program => TEXT_BASE + r.offset * PAGE,
        Base::Library(below) => MMAP_BASE - below + r.offset * PAGE,
        Base::Heap => HEAP_START + r.offset * PAGE,
    }
}

/// The start of every start-up region's name.
const PREFIX: &str = "start-up: ";

/// True when `region` is one of the start-up's ([`regions`]).
pub fn is_startup(region: &Region) -> bool {
    region.name.starts_with(PREFIX)
}

/// References the start-up emits.
pub fn refs() -> u64 {
    RUNS.iter().map(|r| r.pages).sum::<u64>() * REFS_PER_PAGE
}

/// The pages the start-up touches, as regions of a workload's expectation, in order.
pub fn regions() -> Vec<Region> {
    RUNS.iter()
        .map(|r| Region { name: format!("{PREFIX}{}", r.name), addr: start(r), bytes: r.pages * PAGE, touched: r.pages * PAGE })
        .collect()
}

/// Emits the start-up's references and instructions to `e`: each run's pages in address
/// order (the stack's downwards, as it grows), [`REFS_PER_PAGE`] 8-byte accesses each.
pub fn emit(e: &mut Emitter) {
    let step = PAGE / REFS_PER_PAGE;
    for r in &RUNS {
        let first = start(r);
        for page in 0..r.pages {
            let page = match r.base {
                Base::Stack => r.pages - 1 - page,
                _ => page,
            };
            for i in 0..REFS_PER_PAGE {
                let vaddr = first + page * PAGE + i * step;
                if r.written {
                    e.store(vaddr, 8);
                } else {
                    e.load(vaddr, 8);
                }
            }
        }
    }
    e.instructions(INSTRUCTIONS);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memref::AccessKind;
    use crate::workload::address_space::{AddressSpace, LIBRARY_BYTES, MMAP_AREA_FLOOR};
    use crate::workload::emit::Collect;
    use crate::workload::Expected;
    use std::collections::BTreeSet;

    fn emitted() -> Vec<crate::memref::MemRef> {
        let mut sink = Collect(Vec::new());
        let mut e = Emitter::new(3, &mut sink);
        e.phase("startup", true);
        emit(&mut e);
        e.finish();
        sink.0
    }

    #[test]
    fn touches_the_pages_its_regions_say_and_no_other() {
        let refs = emitted();
        assert_eq!(refs.len() as u64, super::refs());
        let pages: BTreeSet<u64> = refs.iter().map(|r| r.vaddr / PAGE).collect();
        let expected = Expected { regions: regions(), phases: vec![], tolerance: 0.0 };
        assert_eq!(pages.len() as u64, expected.footprint_pages());
        // No two runs overlap: every page is one run's.
        assert_eq!(pages.len() as u64, RUNS.iter().map(|r| r.pages).sum::<u64>());
        assert!(refs.iter().all(|r| r.asid == 3));
    }

    #[test]
    fn images_lie_in_the_library_area_or_at_their_anchors() {
        let space = AddressSpace::new();
        for r in &RUNS {
            let (first, end) = (start(r), start(r) + r.pages * PAGE);
            let inside = |lo: u64, hi: u64| lo <= first && end <= hi;
            let ok = match r.base {
                Base::Stack => inside(STACK_TOP - (64 << 10), STACK_TOP),
                Base::Program => inside(TEXT_BASE, space.heap_start()),
                Base::Library(_) => inside(MMAP_BASE - LIBRARY_BYTES, MMAP_BASE) && first > MMAP_AREA_FLOOR,
                Base::Heap => inside(space.heap_start(), space.heap_start() + PAGE),
            };
            assert!(ok, "{} at {first:#x}", r.name);
        }
    }

    #[test]
    fn written_pages_are_stored_to_and_read_ones_loaded() {
        let refs = emitted();
        let stores: BTreeSet<u64> = refs.iter().filter(|r| r.kind == AccessKind::Store).map(|r| r.vaddr / PAGE).collect();
        let written: u64 = RUNS.iter().filter(|r| r.written).map(|r| r.pages).sum();
        assert_eq!(stores.len() as u64, written);
        // The first reference is the kernel-built stack's, as in every recording.
        assert_eq!(refs[0].vaddr / PAGE, (STACK_TOP - PAGE) / PAGE);
        // About a hundred pages, as recorded for a program linking libc and libm.
        assert!((90..=110).contains(&RUNS.iter().map(|r| r.pages).sum::<u64>()));
    }
}
