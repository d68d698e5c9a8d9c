//! The operating-system model: address spaces with demand paging over a placement policy,
//! and, when memory is smaller than the footprint, eviction to swap.
//!
//! A walk that finds no mapping faults: the page gets a frame its placement allows
//! ([`placement`]), evicting a page when none is free if an eviction policy is configured
//! ([`eviction`]). Evicted pages are unmapped, written to swap unless their copy there is
//! good ([`swap`]), and reported to the machine for a TLB shootdown if mapped; touching one
//! again is a major fault (a swap-in), which may read its swapped-out neighbours too
//! ([`readahead`]). Accessed-bit scans ([`eviction::scan`]) report the pages whose bit they
//! clear for a shootdown too.

pub mod address_space;
pub mod eviction;
pub mod frames;
pub mod fully_associative;
pub mod iceberg;
pub mod kernel_work;
pub mod page_table;
pub mod placement;
pub mod readahead;
pub mod set_associative;
mod stats;
pub mod swap;
pub mod thp;
pub mod translation;
pub mod vma;
mod walk;

pub use address_space::AddressSpaceStats;
pub use eviction::{EvictionSpec, InactiveRatio, Recency};
pub use page_table::PageTable;
pub use placement::{Placement, PlacementSpec};
pub use stats::OsStats;
pub use thp::{KhugepagedSpec, Thp, ThpStats};
pub use translation::{Presence, TranslationObject, Translations};
pub use walk::{Walk, WalkBy};

use eviction::age::AgeTracker;
use eviction::Evictor;
use kernel_work::{KernelWorkSpec, KernelWorkStats, Operation};
use eviction::scan::Scanner;
use frames::Frames;
use iceberg::placement as iceberg_placement;
use placement::Placer;
use readahead::Readahead;
use stats::Utilization;
use swap::SwapArea;
use thp::ThpState;
use vma::Mappings;

use crate::hash::page_key;
use crate::mmu::{PageTableSpec, Placed, TableFull, TableNeed, WalkSink};
use rustc_hash::FxHashSet;
use crate::types::{Asid, Page, PageSize, Pfn, Translation, Vpn, BASE_PAGE_SHIFT};
use crate::units::format_bytes;
use crate::Error;
use serde::Serialize;

/// The first VPN of the page-table pages the OS places ([`Os::walk`]'s drivers that keep
/// their tables in the machine's memory): the kernel's direct map of x86-64 Linux,
/// `0xffff888000000000`, far from any user page.
pub const TABLE_VPN_BASE: u64 = 0xffff_8880_0000_0000 >> BASE_PAGE_SHIFT;

/// Validated parameters of the OS model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OsSpec {
    /// Physical memory in bytes (a multiple of `page_size`).
    pub memory: u64,
    /// The page size every fault maps (but the 2 MiB pages of `thp`).
    pub page_size: PageSize,
    /// Transparent huge pages (see [`thp`]): 2 MiB pages at faults and by khugepaged.
    pub thp: Thp,
    /// khugepaged's parameters (used with `thp`).
    pub khugepaged: KhugepagedSpec,
    /// The page-table driver: the format walks read (see [`crate::mmu`]).
    pub page_table: PageTableSpec,
    /// Weights of the kernel-work model (see [`kernel_work`]).
    pub kernel_work: KernelWorkSpec,
    /// Where a new page's frame may go.
    pub placement: PlacementSpec,
    /// What is evicted when no allowed frame is free.
    pub eviction: EvictionSpec,
    /// How page use is observed (matters only with eviction).
    pub recency: Recency,
    /// Evictions per window of the eviction-age metric, when it is tracked.
    pub age_window: Option<u64>,
    /// The swap cache: a page swapped in by a load keeps its copy in swap until a store, so
    /// that evicting it again writes nothing (see [`OsStats::swap_outs`]).
    pub swap_cache: bool,
    /// Swap readahead reads up to `2^page_cluster` pages per major fault (the kernel's
    /// `vm.page-cluster`); 0 reads the faulting page alone. Only with the swap cache.
    pub page_cluster: u32,
    /// Slots of the swap area, in pages; `None` for an area that never fills (nor gets more
    /// than half full).
    pub swap_slots: Option<u64>,
    /// A store to a page still in the swap cache (swapped in by an earlier reference, its copy
    /// in swap good) copies it to a new frame, leaving the old page unmapped until reclaim
    /// drops it, as Linux 5.9 to 5.17 do (`do_wp_page`); else the store drops the copy in
    /// place. Only with the swap cache.
    pub swap_cache_cow: bool,
}

impl OsSpec {
    /// A memory of `memory` bytes of 4 KiB pages placed by `placement`, never evicting (and,
    /// given a policy, writing every page it evicts: no swap cache).
    pub fn simple(memory: u64, placement: PlacementSpec) -> OsSpec {
        OsSpec { memory, page_size: PageSize::Size4K, thp: Thp::Never, khugepaged: KhugepagedSpec::default(), page_table: PageTableSpec::default(), kernel_work: KernelWorkSpec::default(), placement, eviction: EvictionSpec::default(), recency: Recency::Access, age_window: None, swap_cache: false, page_cluster: 0, swap_slots: None, swap_cache_cow: false }
    }
}

/// Why a page fault found no frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoFrame {
    /// Every frame is in use.
    Full,
    /// Every frame the page may use is in use, while others are free.
    Conflict,
    /// A page to evict found every slot of the swap area in use.
    SwapFull,
    /// The page table found no slot for the page ([`TableFull`]).
    TableFull,
    /// Every frame the page may use holds a page-table page, which is never evicted.
    Pinned,
    /// The host has no memory left for the page table's nodes ([`page_table::HostFull`]).
    HostMemory,
}

impl From<TableFull> for NoFrame {
    fn from(_: TableFull) -> NoFrame {
        NoFrame::TableFull
    }
}

/// A page fault found no frame to map: the reference that faulted and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfMemory {
    /// Address space of the faulting reference.
    pub asid: Asid,
    /// Its address.
    pub vaddr: u64,
    /// Why.
    pub reason: NoFrame,
}

/// Demand-paging OS over one placement policy, with optional eviction.
pub struct Os {
    spec: OsSpec,
    /// The translation databases: every mapping, and the page-table driver's format of them
    /// (the OS reads and changes mappings through them only).
    translations: Translations,
    /// Whether the driver's walks read anything or change it: it is not stateless (checked
    /// once here rather than matched per walk).
    walks_read: bool,
    /// Whether walks do more than find pages: `walks_read`, or recency on fill.
    walk_hooks: bool,
    frames: Frames,
    placer: Placer,
    /// The eviction policy.
    policy: Evictor,
    scanner: Option<Scanner>,
    age: Option<AgeTracker>,
    /// Uses so far, one per page a reference touches, and a tick per page read ahead, per
    /// fault after them and per store that copies a page: the timestamp of the next use.
    clock: u64,
    /// Every use retimes its page (`recency = "access"` under an eviction policy): read on
    /// every reference, so kept as a flag rather than matched from the spec.
    retime_uses: bool,
    /// Walks of the first TLB retime their page (`recency = "fill"` under an eviction
    /// policy): read on every walk.
    retime_fills: bool,
    /// A recorded use only stamps the frame: neither an eviction-age tracker nor the policy
    /// observes uses (checked once here rather than per use).
    stamp_only: bool,
    /// Under the swap cache, one flag per frame: its page has an up-to-date copy in swap
    /// (it was swapped in and not stored to since). Empty without the swap cache.
    swap_copy: Vec<bool>,
    /// Swap readahead, when modelled: its windows and the pages read ahead, not yet mapped.
    readahead: Option<Readahead>,
    /// The swap area's slots.
    swap: SwapArea,
    /// Frames holding a page's old copy after a store copied the page elsewhere
    /// ([`OsSpec::swap_cache_cow`]): unmapped, clean, until evicted.
    stale: FxHashSet<u64>,
    /// The clock when the last fault mapped a page: the use at the next tick is the faulting
    /// reference's own, whose store the kernel handles in the fault (no copy).
    fault_clock: u64,
    /// Pages whose TLB entries must go, since the machine last took them: evicted pages,
    /// and pages whose accessed bit a scan cleared.
    shootdowns: Vec<Page>,
    utilization: Utilization,
    stats: OsStats,
    /// Page-table pages placed so far (each takes the next VPN from [`TABLE_VPN_BASE`]).
    table_pages_placed: u64,
    /// Transparent huge pages, when on.
    thp: Option<ThpState>,
    thp_stats: ThpStats,
    /// The mappings address-space events made.
    mappings: Mappings,
    /// What address-space events did, once one came.
    address_space: Option<AddressSpaceStats>,
}

impl Os {
    /// An OS with nothing mapped; `seed` drives random placement and scan sampling.
    pub fn new(spec: &OsSpec, seed: u64) -> Os {
        let frames = spec.memory / spec.page_size.bytes();
        // Only eviction asks which page a frame holds and when it was used.
        let evicts = spec.eviction.evicts();
        let policy = Evictor::new(&spec.eviction, frames, spec);
        let retime_fills = spec.recency == Recency::Fill && evicts;
        let age = spec.age_window.map(AgeTracker::new);
        let placer = spec.placement.build(frames, seed);
        // Unmapped pages carry the Mosaic TLBs' unmapped code, so that a ToC is read as is.
        let no_tag = match &placer {
            Placer::Iceberg(layout) => layout.unmapped(),
            _ => u8::MAX,
        };
        let translations = Translations::new(spec, no_tag);
        let walks_read = !translations.stateless();
        Os {
            spec: spec.clone(),
            translations,
            walks_read,
            walk_hooks: walks_read || retime_fills,
            frames: if evicts { Frames::new(frames) } else { Frames::without_occupants(frames) },
            placer,
            stamp_only: age.is_none() && !policy.observes_uses(),
            policy,
            scanner: Scanner::new(spec.recency, frames, seed ^ 0x5ca7),
            age,
            clock: 0,
            retime_uses: spec.recency == Recency::Access && evicts,
            retime_fills,
            swap_copy: if evicts && spec.swap_cache { vec![false; frames as usize] } else { Vec::new() },
            readahead: (evicts && spec.swap_cache && spec.page_cluster > 0).then(|| Readahead::new(spec.page_cluster)),
            swap: SwapArea::new(spec.swap_slots),
            stale: FxHashSet::default(),
            fault_clock: u64::MAX,
            shootdowns: Vec::new(),
            utilization: Utilization::default(),
            stats: OsStats::default(),
            table_pages_placed: 0,
            thp: ThpState::new(spec.thp, spec.khugepaged, frames),
            thp_stats: ThpStats::default(),
            mappings: Mappings::default(),
            address_space: None,
        }
    }

    /// True when the machine must report every use with [`Os::access`]: eviction needs
    /// recency (and the age metric, which configurations allow only with eviction, needs
    /// timestamps), so that a metric never changes what is simulated.
    pub fn tracks_use(&self) -> bool {
        self.policy.evicts()
    }

    /// The walk of a TLB miss on `vaddr` in `asid`: the page's mapping, mapping the page on
    /// first touch (or after it was swapped out). Counts the walk (unless `by` is
    /// [`WalkBy::Ahead`]), records a use if recency counts this walk as one, and asks the
    /// machine's page-table driver for the walk, which writes what it reads into `sink`. The
    /// error is small on purpose (this is the TLB-miss path); [`Os::describe`] turns it into
    /// a message.
    #[inline(always)]
    pub fn walk<S: WalkSink>(&mut self, asid: Asid, vaddr: u64, by: WalkBy, sink: &mut S) -> std::result::Result<Walk, OutOfMemory> {
        let (walk, found) = match by {
            WalkBy::Repeat(walk) => (walk, true),
            _ => match self.translations.find(asid, vaddr) {
                Some((translation, leaf)) => (Walk { translation, leaf }, true),
                None => (self.fault(asid, vaddr)?, false),
            },
        };
        if by != WalkBy::Ahead {
            self.stats.walks += 1;
        }
        if self.walk_hooks {
            self.after_walk(asid, vaddr, (walk.translation.pfn, walk.translation.size), by == WalkBy::FirstTlb && found, sink);
        }
        Ok(walk)
    }

    /// What a walk does beyond finding the page, under recency on fill or a driver whose
    /// walks read memory: records the use of the page of `size` at base frame `pfn` (`vaddr` of `asid`)
    /// if `first_found` (a walk of the machine's first TLB that found the page mapped), and
    /// asks the driver for the walk. Out of line, and given the walk's parts rather than the
    /// walk: what other machines' walks build stays in registers.
    #[inline(never)]
    fn after_walk<S: WalkSink>(&mut self, asid: Asid, vaddr: u64, (pfn, size): (Pfn, PageSize), first_found: bool, sink: &mut S) {
        if first_found && self.retime_fills {
            self.record_use(self.frame_of(pfn));
        }
        if self.walks_read {
            self.translations.walk(&Translation { asid, vpn: size.first_vpn(vaddr), pfn, size }, sink);
        }
    }

    /// Counts `n` walks that a part of the machine replayed apart made ([`WalkBy::Ahead`]):
    /// walks of a stateless driver, which would have changed nothing but the count (a timed
    /// machine of any driver replays its cycle model apart, and no walk: `n` is 0).
    pub fn count_replayed_walks(&mut self, n: u64) {
        assert!(n == 0 || self.stateless_walks(), "walks replayed apart need a stateless page-table driver");
        self.stats.walks += n;
    }

    /// True when walks may be made or counted out of order: the page-table driver is
    /// stateless (see [`crate::mmu`]).
    pub fn stateless_walks(&self) -> bool {
        !self.walks_read
    }

    /// True when the fills of a machine's first TLB count as uses (`recency = "fill"` with
    /// eviction): only then does a walk record more than its count and its fault.
    pub fn records_fills(&self) -> bool {
        self.retime_fills
    }

    /// The size of every page this OS maps, while it maps one size (always, but with
    /// transparent huge pages): what a loop specialized for one page size needs.
    pub fn uniform_page_size(&self) -> Option<PageSize> {
        self.thp.is_none().then_some(self.spec.page_size)
    }

    /// Bytes of page-table leaves (and tags) that walks read (see [`PageTable::leaf_bytes`]).
    pub fn page_table_bytes(&self) -> usize {
        self.translations.store().leaf_bytes()
    }

    /// Page-table walks so far.
    pub fn walks(&self) -> u64 {
        self.stats.walks
    }

    /// Starts loading what a walk of `vaddr` will read into the host's caches (a hint; see
    /// [`crate::host::prefetch`]).
    #[inline(always)]
    pub fn prefetch(&self, asid: Asid, vaddr: u64) {
        self.translations.store().prefetch(asid, vaddr, matches!(self.placer, Placer::Iceberg(_)));
    }

    /// Records one use of the page mapped at base frame `pfn` (every translated reference,
    /// when [`Os::tracks_use`]), a store if `store`. True when pages may be left for a
    /// shootdown ([`Os::take_shootdowns`]): an accessed-bit scan ran, or the store copied
    /// its page to a new frame, which may have evicted one (the error when it found none).
    #[inline(always)]
    pub fn access(&mut self, pfn: Pfn, store: bool) -> std::result::Result<bool, OutOfMemory> {
        debug_assert!(self.tracks_use(), "uses reported to an OS that does not track them");
        self.clock += 1;
        let mut frame = self.frame_of(pfn);
        if let Some(thp) = &self.thp {
            frame = thp.unit(frame);
        }
        let mut copied = false;
        if store && self.swap_copy.get(frame as usize).is_some_and(|&copy| copy) {
            // The copy in swap is stale now. The kernel frees it at a write fault, and
            // (5.9 to 5.17) copies the page at a later store.
            if self.spec.swap_cache_cow && self.clock != self.fault_clock.wrapping_add(1) {
                frame = self.copy_on_write(frame)?;
                copied = true;
            } else {
                self.swap_copy[frame as usize] = false;
                self.swap.free();
            }
        }
        if self.retime_uses {
            self.record_use(frame);
            return Ok(copied);
        }
        // Recency on fill records nothing here; a scan's accessed bits have a scanner.
        let Some(scanner) = &mut self.scanner else { return Ok(copied) };
        let due = scanner.reference(frame, self.clock);
        if due {
            self.scan();
        }
        Ok(due || copied)
    }

    /// A store to the page in `frame`, still in the swap cache, by a reference that did not
    /// fault it in: the kernel's `do_wp_page` (5.9 to 5.17) sees the swap cache's reference
    /// as sharing and copies the page into a new frame, which it maps in place of the old
    /// one (a shootdown). The old page stays in its frame, unmapped and clean, holding its
    /// slot, until reclaim drops it without a write. Returns the new frame.
    /// A call of [`Operation::Fault`].
    #[cold]
    fn copy_on_write(&mut self, frame: u64) -> std::result::Result<u64, OutOfMemory> {
        self.call(Operation::Fault, |os| os.copy_page(frame))
    }

    /// [`Os::copy_on_write`]'s work.
    fn copy_page(&mut self, frame: u64) -> std::result::Result<u64, OutOfMemory> {
        let (asid, vpn) = self.frames.owner(frame).expect("a mapped page occupies its frame");
        self.stale.insert(frame);
        // No page-table entry maps the old page now, so nothing sets its accessed bit.
        self.policy.unmapped(frame);
        if let Some(scanner) = &mut self.scanner {
            scanner.forget(frame);
        }
        let (new, cpfn) = self.choose_frame(asid, vpn).map_err(|reason| OutOfMemory { asid, vaddr: vpn.addr().0, reason })?;
        self.translations.meter().add().frame_allocations += 1;
        self.install(asid, vpn, new, false, true);
        // A tick after the new page's stamp, so that the next reference's walk (a use under
        // recency on fill, stamped with the clock as it stands) comes after it.
        self.clock += 1;
        self.map(asid, vpn, new, cpfn).map_err(|reason| OutOfMemory { asid, vaddr: vpn.addr().0, reason })?;
        self.stats.store_copies += 1;
        self.shoot_down(asid, vpn, self.spec.page_size);
        Ok(new)
    }

    #[inline(always)]
    fn frame_of(&self, pfn: Pfn) -> u64 {
        pfn.0 >> (self.spec.page_size.shift() - BASE_PAGE_SHIFT)
    }

    /// A use of the page in `frame` that recency counts (every use under recency on access,
    /// a walk of the first TLB under recency on fill): its new timestamp, and what the
    /// policy records of a use.
    #[inline(always)]
    fn record_use(&mut self, frame: u64) {
        if self.stamp_only {
            self.frames.touch(frame, self.clock);
            return;
        }
        self.retime(frame);
        self.policy.referenced(frame);
    }

    /// Sets the timestamp of the page in `frame` to now.
    #[inline(always)]
    fn retime(&mut self, frame: u64) {
        if let Some(age) = &mut self.age {
            age.retime(self.frames.stamp(frame), self.clock);
        }
        self.frames.touch(frame, self.clock);
        self.policy.retimed(&self.frames, frame);
    }

    /// One accessed-bit scan, a call of [`Operation::Scan`]: pages seen used get the current
    /// time, and pages whose bit it cleared are shot down.
    #[cold]
    fn scan(&mut self) {
        self.call(Operation::Scan, Os::scan_pages);
    }

    /// [`Os::scan`]'s work: each resident page's entry read, and written where its bit is
    /// cleared.
    fn scan_pages(&mut self) {
        let mut scanner = self.scanner.take().expect("scan recency has a scanner");
        // Resident pages only: a memory far larger than the footprint costs a word per 64
        // free frames, not a visit each.
        let mut next = self.frames.next_occupied(0);
        while let Some(frame) = next {
            next = self.frames.next_occupied(frame + 1);
            // A huge page is seen through its first frame, as its one PMD entry.
            if self.frames.is_pinned(frame) || self.thp.as_ref().is_some_and(|thp| thp.is_tail(frame)) {
                continue;
            }
            let page = self.frames.owner(frame).expect("an occupied frame has an owner");
            let huge = self.thp.as_ref().is_some_and(|thp| thp.is_huge(frame));
            let size = if huge { PageSize::Size2M } else { self.spec.page_size };
            self.translations.read_entry(page.0, page.1.addr().0);
            let visit = scanner.visit(frame);
            if visit.used {
                self.retime(frame);
            }
            if visit.cleared {
                self.translations.meter().add().entries_written += 1;
                self.stats.scan_shootdowns += 1;
                self.shoot_down(page.0, page.1, size);
            }
        }
        self.scanner = Some(scanner);
    }

    /// A page fault on `vaddr` of `asid`: a call of [`Operation::SwapIn`] when the page is
    /// swapped out, else of [`Operation::Fault`].
    #[cold]
    fn fault(&mut self, asid: Asid, vaddr: u64) -> std::result::Result<Walk, OutOfMemory> {
        let swapped_in = self.policy.evicts() && self.translations.store_mut().object(asid, vaddr).is_some_and(|o| o.presence == Presence::Swapped);
        let op = if swapped_in { Operation::SwapIn } else { Operation::Fault };
        self.call(op, |os| os.fault_in(asid, vaddr, swapped_in))
    }

    /// Runs `f` as a call of `op`, which the kernel's work it does counts for.
    fn call<R>(&mut self, op: Operation, f: impl FnOnce(&mut Os) -> R) -> R {
        let outer = self.translations.meter().enter(op);
        let result = f(self);
        self.translations.meter().leave(outer);
        result
    }

    /// The fault's work: reads the page's entry (none, or a swap entry), reads ahead and
    /// places tables and the page as needed, and maps it.
    fn fault_in(&mut self, asid: Asid, vaddr: u64, swapped_in: bool) -> std::result::Result<Walk, OutOfMemory> {
        let size = self.spec.page_size;
        let page = vaddr >> size.shift();
        let vpn = size.first_vpn(vaddr);
        self.translations.read_entry(asid, vaddr);
        if swapped_in {
            if let Some(ra) = &mut self.readahead {
                if let Some(found) = ra.hit(asid, page) {
                    return self.map_read_ahead(asid, vpn, found).map_err(|reason| OutOfMemory { asid, vaddr, reason });
                }
                self.read_ahead(asid, page).map_err(|reason| OutOfMemory { asid, vaddr, reason })?;
            }
        } else {
            self.check_mapped(asid, vaddr);
            if let Some(walk) = self.huge_fault(asid, vaddr) {
                return walk;
            }
        }
        let placed = self.place_tables(asid, vpn, size).and_then(|()| self.choose_frame(asid, vpn));
        let (frame, cpfn) = placed.map_err(|reason| OutOfMemory { asid, vaddr, reason })?;
        let work = self.translations.meter().add();
        work.frame_allocations += 1;
        // A first touch of anonymous memory maps a zeroed page; a swap-in reads it.
        work.data_bytes_zeroed += if swapped_in { 0 } else { size.bytes() };
        self.install(asid, vpn, frame, swapped_in, true);
        let t = self.map(asid, vpn, frame, cpfn).map_err(|reason| OutOfMemory { asid, vaddr, reason })?;
        self.stats.page_faults += 1;
        if swapped_in {
            self.stats.swap_ins += 1;
            self.mapped_from_swap(frame);
        } else {
            self.stats.footprint_bytes += size.bytes();
        }
        self.fault_clock = self.clock;
        Ok(t)
    }

    /// Places the page-table pages the driver needs before the page of `size` at `vpn` of
    /// `asid` can be mapped, as a fault allocates them before the data page, pinned (see
    /// [`crate::mmu::PageTableDriver`] for the exchange).
    fn place_tables(&mut self, asid: Asid, vpn: Vpn, size: PageSize) -> std::result::Result<(), NoFrame> {
        if !self.walks_read {
            // A stateless driver keeps no tables in memory.
            return Ok(());
        }
        while let Some(need) = self.translations.need(asid, vpn, size) {
            let placed = match need {
                TableNeed::Page => Placed::Page(self.place_table(asid, true)?),
                TableNeed::Block(pages) => match self.place_block(asid, pages) {
                    Some(first) => Placed::Block(first),
                    None => Placed::Page(self.place_table(asid, true)?),
                },
            };
            self.translations.given(asid, vpn, size, placed);
        }
        Ok(())
    }

    /// Places one page-table page of `asid` in a frame its placement allows, evicting as for
    /// a fault when `evict` (else only in a free frame, which only fully associative
    /// placement, THP's, is asked for), and pins it there. Table pages are kernel memory: placed as pages of `asid`
    /// from [`TABLE_VPN_BASE`] on (one VPN each, in the kernel's half of the address space,
    /// where no user page is), never used, never evicted. While the OS maps one page size, a
    /// table page takes a frame of that size.
    fn place_table(&mut self, asid: Asid, evict: bool) -> std::result::Result<Pfn, NoFrame> {
        let (frame, vpn) = if evict {
            let vpn = self.next_table_vpn();
            (self.choose_frame(asid, vpn)?.0, vpn)
        } else {
            let Placer::Fully(alloc) = &mut self.placer else { unreachable!("placing without eviction is THP's, which needs a fully associative placement") };
            let frame = alloc.allocate().ok_or(NoFrame::Full)?;
            (frame, self.next_table_vpn())
        };
        self.pin_table(frame, asid, vpn);
        Ok(Pfn(frame * self.spec.page_size.base_pages()))
    }

    /// Places a block of `pages` base pages of page table for `asid` in the lowest run of
    /// free frames aligned to its size, pinned, as the kernel's buddy allocator gives an
    /// allocation of that order; `None` when no such run is free. Nothing is evicted for it
    /// (the kernel would try compaction; the OS model has none), and the placement policy is
    /// not asked: a block is physically contiguous wherever the policy would put pages.
    fn place_block(&mut self, asid: Asid, pages: u64) -> Option<Pfn> {
        let count = pages.div_ceil(self.spec.page_size.base_pages());
        let first = (0..self.frames.capacity() / count).map(|block| block * count).find(|&first| self.frames.run_is_free(first, count))?;
        for frame in first..first + count {
            if let Placer::Fully(alloc) = &mut self.placer {
                alloc.reserve(frame);
            }
            let vpn = self.next_table_vpn();
            self.pin_table(frame, asid, vpn);
        }
        Some(Pfn(first * self.spec.page_size.base_pages()))
    }

    /// The VPN of the next page-table page placed.
    fn next_table_vpn(&mut self) -> Vpn {
        self.table_pages_placed += 1;
        Vpn(TABLE_VPN_BASE + self.table_pages_placed - 1)
    }

    /// Pins page-table page `vpn` of `asid` in free `frame`.
    fn pin_table(&mut self, frame: u64, asid: Asid, vpn: Vpn) {
        self.utilization.change(self.clock, self.frames.used());
        self.frames.pin(frame, asid, vpn);
        self.stats.page_table_frames += 1;
    }

    /// Frees the table pages the driver let go of.
    fn release_tables(&mut self) {
        let mut released = Vec::new();
        self.translations.take_released(&mut released);
        for pfn in released {
            let frame = self.frame_of(pfn);
            self.utilization.change(self.clock, self.frames.used());
            self.frames.unpin(frame);
            self.frame_freed(frame);
            if let Placer::Fully(alloc) = &mut self.placer {
                alloc.free(frame);
            }
            self.stats.page_table_frames -= 1;
        }
    }

    /// Maps page `vpn` of `asid` at `frame` with placement tag `tag` (in place of any
    /// mapping it had): its translation and leaf. Fails when the driver finds no slot for it.
    fn map(&mut self, asid: Asid, vpn: Vpn, frame: u64, tag: u8) -> std::result::Result<Walk, NoFrame> {
        let size = self.spec.page_size;
        self.map_translation(Translation { asid, vpn, pfn: Pfn(frame * size.base_pages()), size }, tag)
    }

    /// Maps `translation` (of any size the store holds) with placement tag `tag`: its
    /// object and the driver's entry, then frees the table pages the driver let go of.
    fn map_translation(&mut self, translation: Translation, tag: u8) -> std::result::Result<Walk, NoFrame> {
        let leaf = self.translations.map(translation, tag)?;
        if self.walks_read {
            self.release_tables();
        }
        self.stats.mapped_pages = self.translations.store().len() as u64;
        Ok(Walk { translation, leaf })
    }

    /// Places page `vpn` of `asid` in `frame` and tells the policy's records: read back from
    /// swap if `swapped_in`, mapped by a fault if `mapped` (else read ahead, in memory but
    /// not mapped).
    fn install(&mut self, asid: Asid, vpn: Vpn, frame: u64, swapped_in: bool, mapped: bool) {
        self.utilization.change(self.clock, self.frames.used());
        self.frames.occupy(frame, asid, vpn, self.clock);
        // A page read back from swap keeps its copy there; a store by the faulting
        // reference itself clears the flag when the machine reports the use.
        if let Some(copy) = self.swap_copy.get_mut(frame as usize) {
            *copy = swapped_in;
        }
        if let Some(scanner) = &mut self.scanner {
            scanner.forget(frame);
        }
        self.policy.placed(&self.frames, frame, asid, vpn, mapped);
        if let Some(age) = &mut self.age {
            age.insert(self.clock);
        }
    }

    /// Swap readahead for a major fault on page `page` of `asid` (in units of the page
    /// size): reads the swapped-out pages of its window that are not in memory, in address
    /// order, each into a frame its placement allows (evicting as for a fault), and leaves
    /// them unmapped. Whether a page is swapped out is read as each comes up, from the live
    /// table, as the kernel does on 64-bit machines. The faulting page is placed after them
    /// (the kernel places it in address order among them; here it cannot then be evicted by
    /// the reads, which the kernel's page lock ensures). Each page read, and the fault after
    /// them, takes a tick of the clock, so that the pages are ordered by address and older
    /// than the faulting page. Like the kernel's, it is best effort: it stops when the swap
    /// area is full (a read could need a page written to make room).
    #[cold]
    fn read_ahead(&mut self, asid: Asid, page: u64) -> std::result::Result<(), NoFrame> {
        let shift = self.spec.page_size.shift();
        let Some(ra) = &mut self.readahead else { return Ok(()) };
        let window = ra.window(asid, page);
        let mut read = false;
        for other in window.filter(|&other| other != page) {
            let in_memory = self.readahead.as_ref().is_some_and(|ra| ra.contains(asid, other));
            if in_memory || !self.translations.swapped(asid, other << shift) {
                continue;
            }
            if self.swap.is_full() {
                break;
            }
            let vpn = Vpn(other << (shift - BASE_PAGE_SHIFT));
            self.clock += 1;
            read = true;
            let (frame, tag) = self.choose_frame(asid, vpn)?;
            self.translations.meter().add().frame_allocations += 1;
            self.install(asid, vpn, frame, true, false);
            self.readahead.as_mut().expect("readahead is on").insert(asid, other, frame, tag);
            self.stats.swap_ins += 1;
            self.stats.readahead_pages += 1;
        }
        self.clock += u64::from(read);
        Ok(())
    }

    /// Maps page `vpn` of `asid`, which a fault found read ahead in `frame` with placement
    /// tag `tag`: a minor fault, reading nothing. The fault's access is the page's first use
    /// since it was read: it retimes the page (under recency on fill, here; under recency on
    /// access, when the machine reports it), and counts for the Linux lists as a fault's
    /// does (young under the look-twice rule, not a reference under one look).
    #[cold]
    fn map_read_ahead(&mut self, asid: Asid, vpn: Vpn, (frame, tag): (u64, u8)) -> std::result::Result<Walk, NoFrame> {
        let t = self.map(asid, vpn, frame, tag)?;
        self.stats.page_faults += 1;
        self.stats.readahead_hits += 1;
        self.mapped_from_swap(frame);
        self.fault_clock = self.clock;
        self.policy.mapped_by_fault(frame);
        if self.retime_fills {
            self.retime(frame);
        }
        Ok(t)
    }

    /// The swap slot of a page a fault just mapped from swap (read by it, or read ahead
    /// before), in `frame`: freed without the swap cache; under it, kept for the copy, unless
    /// swap is more than half full (the kernel then frees it, `vm_swap_full`, so that the page
    /// is written again if evicted).
    fn mapped_from_swap(&mut self, frame: u64) {
        match self.swap_copy.get_mut(frame as usize) {
            None => self.swap.free(),
            Some(copy) if self.swap.more_than_half_full() => {
                *copy = false;
                self.swap.free();
                self.stats.swap_full_frees += 1;
            }
            Some(_) => {}
        }
    }

    /// A frame for (`asid`, `vpn`) and its CPFN, evicting as the policy says.
    fn choose_frame(&mut self, asid: Asid, vpn: Vpn) -> std::result::Result<(u64, u8), NoFrame> {
        match &mut self.placer {
            Placer::Fully(_) => {
                self.make_room()?;
                let Placer::Fully(alloc) = &mut self.placer else { unreachable!() };
                alloc.allocate().map(|f| (f, 0)).ok_or(NoFrame::Full)
            }
            Placer::Set(sets) => {
                let sets = *sets;
                if let Some(frame) = sets.free_frame(&self.frames, vpn) {
                    return Ok((frame, 0));
                }
                self.conflict()?;
                let victim = sets.oldest(&self.frames, vpn);
                if self.frames.is_pinned(victim) {
                    return Err(NoFrame::Pinned);
                }
                self.evict(victim)?;
                Ok((victim, 0))
            }
            Placer::Iceberg(_) => self.choose_iceberg_frame(asid, vpn),
        }
    }

    fn choose_iceberg_frame(&mut self, asid: Asid, vpn: Vpn) -> std::result::Result<(u64, u8), NoFrame> {
        self.make_room()?;
        let key = page_key(asid, vpn);
        let Placer::Iceberg(layout) = &self.placer else { unreachable!("iceberg placement") };
        let placed = match iceberg_placement::place(layout, &self.frames, key, self.policy.ghosts()) {
            Some(p) => p,
            None => {
                // First the conflict, which fails without eviction: only an OS that evicts
                // keeps the last uses the oldest candidate is chosen by.
                self.conflict()?;
                let Placer::Iceberg(layout) = &self.placer else { unreachable!("iceberg placement") };
                iceberg_placement::oldest_candidate(layout, &self.frames, key)
            }
        };
        let Placer::Iceberg(layout) = &self.placer else { unreachable!("iceberg placement") };
        let cpfn = layout.encode(placed.slot);
        if self.frames.is_pinned(placed.frame) {
            // Every candidate holds a page-table page (never evicted, and so never a ghost).
            return Err(NoFrame::Pinned);
        }
        if !self.frames.is_free(placed.frame) {
            if placed.evicts_ghost {
                self.stats.ghost_evictions += 1;
            }
            self.evict(placed.frame)?;
        }
        Ok((placed.frame, cpfn))
    }

    /// Records an associativity conflict; fails when the policy cannot evict.
    fn conflict(&mut self) -> std::result::Result<(), NoFrame> {
        self.stats.conflicts += 1;
        if self.stats.first_conflict_utilization.is_none() && self.frames.used() < self.frames.capacity() {
            self.stats.first_conflict_utilization = Some(self.frames.used() as f64 / self.frames.capacity() as f64);
        }
        if self.policy.evicts() {
            Ok(())
        } else {
            Err(NoFrame::Conflict)
        }
    }

    /// Evicts what the policy gives up before a page is placed (policies that keep part of
    /// memory free, and exact LRU on a fully associative memory).
    fn make_room(&mut self) -> std::result::Result<(), NoFrame> {
        loop {
            let (copies, swap, stats) = (&mut self.swap_copy, &mut self.swap, &mut self.stats);
            let mut activated = |frame: u64| {
                // Kept rather than evicted: `shrink_page_list` frees the slot of a page it
                // activates while swap is more than half full.
                if swap.more_than_half_full() && copies.get_mut(frame as usize).is_some_and(std::mem::take) {
                    swap.free();
                    stats.swap_full_frees += 1;
                }
            };
            match self.policy.next_victim(&self.frames, &mut activated)? {
                Some(frame) => self.evict(frame)?,
                None => return Ok(()),
            }
        }
    }

    /// Swaps out the page in `frame`, leaving the frame free; fails when the page must be
    /// written and the swap area is full, changing nothing here (what the caller did to
    /// choose the victim, such as unlinking it from the Linux lists, stays: the error ends
    /// the run).
    /// A call of [`Operation::SwapOut`].
    fn evict(&mut self, frame: u64) -> std::result::Result<(), NoFrame> {
        self.call(Operation::SwapOut, |os| os.evict_page(frame))
    }

    /// [`Os::evict`]'s work.
    fn evict_page(&mut self, frame: u64) -> std::result::Result<(), NoFrame> {
        if self.thp.as_ref().is_some_and(|thp| thp.is_huge(frame)) {
            return self.evict_huge(frame);
        }
        // A page whose copy in swap is up to date goes without being written.
        let copy = self.swap_copy.get_mut(frame as usize).is_some_and(std::mem::take);
        if !copy && !self.swap.write() {
            return Err(NoFrame::SwapFull);
        }
        let stamp = self.frames.stamp(frame);
        if self.stats.evictions == 0 {
            self.utilization.start(self.clock);
        }
        self.utilization.change(self.clock, self.frames.used());
        let (asid, vpn) = self.frames.release(frame);
        let page = vpn.0 >> (self.spec.page_size.shift() - BASE_PAGE_SHIFT);
        // A page's old copy left by a store is obsolete: its slot goes with it.
        let stale = !self.stale.is_empty() && self.stale.remove(&frame);
        if stale && copy {
            self.swap.free();
        }
        // A page read ahead and never mapped is in no page-table entry and no TLB, nor is an
        // old copy (the page's entry maps its new frame).
        let mapped = !stale && !self.readahead.as_mut().is_some_and(|ra| ra.evicted(asid, page));
        if mapped {
            self.translations.swap_out(asid, vpn);
            self.shoot_down(asid, vpn, self.spec.page_size);
        }
        self.policy.evicted(frame, asid, vpn, stamp);
        if let Placer::Fully(alloc) = &mut self.placer {
            alloc.free(frame);
        }
        if let Some(age) = &mut self.age {
            age.evict(stamp);
        }
        self.stats.evictions += 1;
        self.stats.swap_outs += u64::from(!copy);
        self.stats.mapped_pages = self.translations.store().len() as u64;
        Ok(())
    }

    /// Leaves the page of `size` at `vpn` of `asid` for a TLB shootdown (of every entry
    /// inside it), counted in the statistics and in the running operation's kernel work.
    fn shoot_down(&mut self, asid: Asid, vpn: Vpn, size: PageSize) {
        self.translations.meter().add().shootdowns += 1;
        self.stats.shootdowns += 1;
        self.shootdowns.push(Page { asid, vpn, size });
    }

    /// True if pages need a TLB shootdown since [`Os::take_shootdowns`] last took them.
    #[inline(always)]
    pub fn has_shootdowns(&self) -> bool {
        !self.shootdowns.is_empty()
    }

    /// Pages needing a TLB shootdown since the last call: evicted pages, and pages whose
    /// accessed bit a scan cleared.
    #[inline]
    pub fn take_shootdowns(&mut self) -> Option<std::vec::Drain<'_, Page>> {
        self.has_shootdowns().then(|| self.shootdowns.drain(..))
    }

    /// The mapping of `vaddr`, if any, without counting a walk or faulting (for checks).
    pub fn mapping(&mut self, asid: Asid, vaddr: u64) -> Option<Translation> {
        self.translations.find(asid, vaddr).map(|(t, _)| t)
    }

    /// The CPFN of the page holding `vaddr` if it is mapped, else `None`. Only meaningful
    /// for iceberg placement.
    pub fn cpfn(&mut self, asid: Asid, vaddr: u64) -> Option<u8> {
        let no_tag = self.unmapped_code();
        self.translations.store_mut().tags(asid, vaddr, 1).map(|tag| tag[0]).filter(|&tag| tag != no_tag)
    }

    /// The ToC of the `count` pages from `vaddr` (an aligned run of at most 512 base pages,
    /// holding the page `walk` just found): each mapped page's CPFN, the iceberg layout's
    /// unmapped code for the others. Only meaningful for iceberg placement.
    #[inline(always)]
    pub fn toc(&self, walk: &Walk, vaddr: u64, count: usize) -> &[u8] {
        self.translations.store().tags_in(walk.leaf, vaddr, count)
    }

    /// The code the page table's tags hold for an unmapped page: the iceberg layout's
    /// unmapped CPFN, which the Mosaic TLBs riding this OS take as theirs.
    pub fn unmapped_code(&self) -> u8 {
        self.translations.store().no_tag()
    }

    /// The iceberg layout, when placement is iceberg.
    pub fn iceberg(&self) -> Option<&iceberg::Layout> {
        match &self.placer {
            Placer::Iceberg(layout) => Some(layout),
            _ => None,
        }
    }

    /// The kernel's page-table work so far (`results.json`'s `kernel_work`).
    pub fn kernel_work(&self) -> KernelWorkStats {
        self.translations.kernel_work(&self.spec.kernel_work)
    }

    /// What the page-table driver did and holds (`results.json`'s `page_table`).
    pub fn page_table_stats(&self) -> serde_json::Value {
        self.translations.stats()
    }

    /// The error message for `oom`.
    pub fn describe(&self, oom: OutOfMemory) -> Error {
        let capacity = self.frames.capacity();
        let message = match oom.reason {
            NoFrame::Full => format!(
                "out of physical memory: all {capacity} frames of {} are in use when asid {} touches {:#x}; \
                 configure a larger os.memory or an os.eviction policy",
                format_bytes(self.spec.memory),
                oom.asid,
                oom.vaddr
            ),
            NoFrame::Conflict => format!(
                "associativity conflict: every frame asid {} may use for {:#x} is in use ({} of {capacity} frames used); \
                 configure an os.eviction policy to evict",
                oom.asid,
                oom.vaddr,
                self.frames.used()
            ),
            NoFrame::SwapFull => format!(
                "out of swap: all {} slots of os.swap hold pages when asid {} touches {:#x} and a page must be \
                 written to make room; configure a larger os.swap",
                self.swap.used(),
                oom.asid,
                oom.vaddr
            ),
            NoFrame::Pinned => format!(
                "associativity conflict: every frame asid {} may use for {:#x} holds a page-table page, which is \
                 never evicted ({} of {capacity} frames hold tables); configure a larger os.memory or more \
                 associative placement",
                oom.asid,
                oom.vaddr,
                self.stats.page_table_frames
            ),
            NoFrame::HostMemory => format!(
                "cannot allocate host memory for more of the page table when asid {} touches {:#x}: its leaves take {} \
                 for {} pages mapped (a footprint spread thin takes a 2.5 KiB leaf per 2 MiB region touched); shrink the \
                 footprint or the references",
                oom.asid,
                oom.vaddr,
                format_bytes(self.translations.store().leaf_bytes() as u64),
                self.translations.store().len()
            ),
            NoFrame::TableFull => format!(
                "page table full: the {} page table found no slot for the page asid {} touches at {:#x} \
                 (see os.page_table)",
                self.spec.page_table.name(),
                oom.asid,
                oom.vaddr
            ),
        };
        Error::Simulation(message)
    }

    /// The counters so far.
    pub fn stats(&self) -> OsStats {
        let mut stats = self.stats.clone();
        stats.steady_state_utilization = self.utilization.mean(self.clock, self.frames.used(), self.frames.capacity());
        stats.eviction_age = self.age.as_ref().map(AgeTracker::stats);
        stats.reclaim = self.policy.reclaim_stats();
        stats.peak_swap_bytes = self.swap.peak() * self.spec.page_size.bytes();
        stats.memory_bytes = self.spec.memory;
        stats.swap_io_bytes = (stats.swap_ins + stats.swap_outs) * self.spec.page_size.bytes();
        stats.thp = self.thp.is_some().then_some(self.thp_stats);
        stats.address_space = self.address_space;
        stats
    }

    /// The state of the frames, for invariant checks in tests: which are occupied, and (for
    /// an OS that evicts) the page occupying each.
    pub fn frames(&self) -> &Frames {
        &self.frames
    }

    /// Horizon LRU's current horizon, under a policy that keeps one.
    pub fn horizon(&self) -> Option<u64> {
        self.policy.horizon()
    }
}

#[cfg(test)]
mod tests;
