//! GPU Mosaic's memory manager: CoCoA (contiguity-conserving allocation), the in-place
//! coalescer and CAC (contiguity-aware compaction).
//!
//! # What the paper says (Sections 4.2-4.4)
//! - CoCoA binds each page-aligned 2 MiB portion of an allocation to a free large frame,
//!   each base page at its own offset, and gives a soft guarantee that a large frame holds
//!   pages of one application only: other pages come from the application's "free base page
//!   lists" (free slots of its partly used frames), then from a fresh frame.
//! - The in-place coalescer promotes a frame to a large mapping once all 512 base pages are
//!   allocated and contiguous; no data moves and no TLB flush is needed (stale base entries
//!   still point at the right place and age out).
//! - On a free inside a coalesced frame, CAC checks the frame's occupancy against a
//!   configurable threshold (no number given): below it, the frame is splintered (its large
//!   TLB entry flushed) and its pages migrated to another frame of the same application,
//!   within the same memory channel; the emptied frame goes back to CoCoA. At or above it,
//!   the frame goes to an emergency frame list from which, when no free frame is left and
//!   nothing can be compacted, CoCoA takes unallocated base pages for any application.
//!
//! # What the artifact does (CMU-SAFARI/Mosaic, read, not run)
//! A new virtual chunk reserves a free frame even for small allocations; with no free frame
//! an aligned whole-chunk request runs CAC, otherwise the chunk is fragmented and takes a
//! slot from the application's partly used frames, then its least-used reservation, then a
//! free frame, then CAC, else fails. The first free in a coalesced frame splinters it. The
//! occupancy threshold and the emergency list are not in the code.
//!
//! # What is implemented
//! - The artifact's CoCoA order, with the reservation made when the chunk's first page is
//!   placed: at `allocate` without demand paging, at the first touch with it (so untouched
//!   chunks take no frame). A chunk with no reservation and a resident page is fragmented; a
//!   reserved chunk's page whose slot another page took is placed as a fragmented page.
//! - Coalescing when all 512 pages of a reserved chunk are resident in place; it never
//!   moves a page and emits no invalidation. Any free inside a coalesced frame splinters it
//!   (the artifact's rule; the large entry is flushed).
//! - CAC runs (a) after a free, on every frame the free left non-empty and below the
//!   threshold (the paper's trigger, applied to any frame rather than only coalesced ones,
//!   which are splintered by then), and (b) when a whole-chunk reservation or a fragmented
//!   page finds no free frame (the artifact's trigger): the least occupied frame below the
//!   threshold whose pages fit in the free slots of its application's other frames is
//!   emptied. Every migrated page's base entry is flushed. Memory channels are not modelled,
//!   so the same-channel restriction is not applied.
//! - The emergency list is simpler than the paper's (which keeps aside frames that CAC
//!   found too full to compact): `emergency_frames` free frames are held aside (and refilled
//!   first when frames are freed) and used, for the application alone, only when the free
//!   list is empty and CAC freed nothing. Past that, the paper's failsafe:
//!   a page takes a free slot of any application's frame; a frame that so comes to hold two
//!   applications' pages counts in `shared_frames`. Only then is memory out.
//!
//! # Pre-fragmented memory (the CAC stress test, Section 6.5)
//! The paper says only that pre-fragmented data breaks the soft guarantee and cannot be
//! coalesced with other pages of its frame. Here a large frame holding some (and free slots)
//! is never reserved for a chunk, since the chunk could never coalesce there; when no
//! application page is in it, it waits in its own free list, from which pool frames (for
//! fragmented pages) are taken first, keeping unfragmented frames for reservations. Its
//! free part then belongs to one application, as any frame does. When a whole-chunk
//! reservation finds no unfragmented frame, CAC first tries to make one: it moves the
//! pre-fragmented data of the free fragmented frame holding least of it into the free slots
//! of the other free fragmented frames (fullest first); the OS can move data it placed, and
//! each base page so copied counts as migrated. Frames full of pre-fragmented data are in
//! no list: nothing can use them. The emergency frames are the lowest-numbered others,
//! fragmented or not (the list is a last resort, for fragmented pages only).

mod cac;
#[cfg(test)]
mod tests;

use super::pages::{
    chunk_masks, page_range, split, Bitmap, ChunkRecord, Newly, Tables, Usage, BASE_BYTES,
    LARGE_BYTES, NO_FRAME,
};
use super::prefrag::prefragment;
use super::{
    AppId, Invalidation, ManagerSpec, ManagerStats, Mapping, MemoryManager, PlaceError, Touch,
    PAGES_PER_LARGE,
};

/// Marks a base frame holding no page in the reverse map.
const NO_PAGE: u64 = u64::MAX;

/// One application's 2 MiB virtual chunk under Mosaic.
#[derive(Debug)]
struct Chunk {
    allocated: Bitmap,
    resident: Bitmap,
    /// Base frame of each resident page.
    pfn: Box<[u32; PAGES_PER_LARGE as usize]>,
    /// The large frame CoCoA reserved for the chunk, or [`NO_FRAME`].
    frame: u32,
    /// Resident pages at their own offset in `frame`: 512 means coalescable.
    in_place: u16,
    /// Coalesced into a large mapping.
    large: bool,
}

impl Default for Chunk {
    fn default() -> Chunk {
        Chunk {
            allocated: Bitmap::default(),
            resident: Bitmap::default(),
            pfn: Box::new([NO_FRAME; PAGES_PER_LARGE as usize]),
            frame: NO_FRAME,
            in_place: 0,
            large: false,
        }
    }
}

impl ChunkRecord for Chunk {
    fn allocated(&mut self) -> &mut Bitmap {
        &mut self.allocated
    }
}

/// What a large frame is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// In the free list or the emergency list.
    Free,
    /// Slots for the owner's fragmented pages (a "free base page list").
    Pool,
    /// Reserved for this chunk of the owner (CoCoA).
    Reserved(u64),
}

/// One large frame.
#[derive(Clone, Copy, Debug)]
struct Frame {
    owner: AppId,
    role: Role,
    /// Base frames holding a page.
    slots: Bitmap,
    used: u64,
    /// Holds pages of an application other than its owner.
    shared: bool,
    /// Base frames holding pre-fragmented data (no application's; never in `slots`).
    prefrag: Bitmap,
}

impl Frame {
    const FREE: Frame = Frame {
        owner: 0,
        role: Role::Free,
        slots: Bitmap::EMPTY,
        used: 0,
        shared: false,
        prefrag: Bitmap::EMPTY,
    };

    /// Base frames an application may use: those pre-fragmented data does not take.
    fn usable(&self) -> u64 {
        PAGES_PER_LARGE - self.prefrag.count()
    }

    /// True when the frame belongs to an application and has a free slot.
    fn has_room(&self) -> bool {
        self.role != Role::Free && self.used < self.usable()
    }

    /// The lowest base frame holding neither a page nor pre-fragmented data.
    fn free_slot(&self) -> Option<usize> {
        self.slots.or(&self.prefrag).first_zero()
    }
}

/// The reverse-map key of page `vpn` of `app`.
fn page_key(app: AppId, vpn: u64) -> u64 {
    u64::from(app) << 48 | vpn
}

/// The page a reverse-map key names.
fn key_page(key: u64) -> (AppId, u64) {
    ((key >> 48) as AppId, key & ((1 << 48) - 1))
}

/// Counters of what Mosaic did.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    far_faults: u64,
    coalesced: u64,
    splintered: u64,
    compactions: u64,
    migrated: u64,
    shared: u64,
}

/// GPU Mosaic's memory manager.
#[derive(Debug)]
pub struct Mosaic {
    demand_paging: bool,
    cac: bool,
    /// A frame with fewer pages than this may be compacted.
    threshold: u64,
    emergency_target: usize,
    frames: Vec<Frame>,
    /// Free large frames without pre-fragmented data; the next one handed out is the last.
    free: Vec<u32>,
    /// Free large frames with pre-fragmented data and a free slot, handed out like `free`.
    fragmented: Vec<u32>,
    emergency: Vec<u32>,
    /// Each application's frames (reserved and pool).
    owned: Vec<Vec<u32>>,
    /// The page in each base frame ([`page_key`]), or [`NO_PAGE`].
    reverse: Vec<u64>,
    tables: Tables<Chunk>,
    usage: Usage,
    counts: Counts,
    /// Set when a compaction search found nothing, cleared by a free: placing pages only
    /// fills frames, so until something is freed the search would fail again.
    cac_futile: bool,
    /// Set when moving pre-fragmented data could free no frame, cleared when a frame joins
    /// `fragmented` (taking frames from it only removes room).
    defrag_futile: bool,
    /// Base frames holding pre-fragmented data.
    prefragmented: u64,
    invalidations: Vec<Invalidation>,
}

impl Mosaic {
    /// A manager of `spec.memory_bytes` of memory (whole large frames) for `apps`
    /// applications.
    pub fn new(spec: &ManagerSpec, apps: usize) -> Mosaic {
        let frames = (spec.memory_bytes / LARGE_BYTES).min(u64::from(NO_FRAME) / PAGES_PER_LARGE);
        let mut states = vec![Frame::FREE; frames as usize];
        for (frame, prefrag) in prefragment(spec, frames) {
            states[frame as usize].prefrag = prefrag;
        }
        let prefragmented = states.iter().map(|f| f.prefrag.count()).sum();
        // Frames full of pre-fragmented data can hold nothing: they go in no list.
        let usable: Vec<u32> = (0..frames as u32)
            .filter(|&f| states[f as usize].usable() > 0)
            .collect();
        let emergency = (spec.emergency_frames as usize).min(usable.len());
        let (emergency_list, rest) = usable.split_at(emergency);
        let clean = |f: &&u32| states[**f as usize].prefrag.is_empty();
        let threshold = (spec.cac_threshold.clamp(0.0, 1.0) * PAGES_PER_LARGE as f64).round();
        Mosaic {
            demand_paging: spec.demand_paging,
            cac: spec.cac,
            threshold: threshold as u64,
            emergency_target: emergency,
            free: rest.iter().rev().filter(clean).copied().collect(),
            fragmented: rest.iter().rev().filter(|f| !clean(f)).copied().collect(),
            emergency: emergency_list.iter().rev().copied().collect(),
            frames: states,
            owned: vec![Vec::new(); apps],
            reverse: vec![NO_PAGE; frames as usize * PAGES_PER_LARGE as usize],
            tables: Tables::new(apps),
            usage: Usage::default(),
            counts: Counts::default(),
            cac_futile: false,
            defrag_futile: false,
            prefragmented,
            invalidations: Vec::new(),
        }
    }

    /// The frames `app` owns, the list grown for an application id beyond those built for.
    fn owned_mut(&mut self, app: AppId) -> &mut Vec<u32> {
        let index = usize::from(app);
        if index >= self.owned.len() {
            self.owned.resize_with(index + 1, Vec::new);
        }
        &mut self.owned[index]
    }

    /// Gives `frame` (just taken from a free list) to `app` for `role`.
    fn take_frame(&mut self, app: AppId, frame: u32, role: Role) {
        let state = &mut self.frames[frame as usize];
        *state = Frame {
            owner: app,
            role,
            prefrag: state.prefrag,
            ..Frame::FREE
        };
        let usable = state.usable();
        self.owned_mut(app).push(frame);
        self.usage.add_reserved(usable);
    }

    /// Takes a free frame as a pool of `app`'s fragmented pages, a fragmented one first (it
    /// could never be reserved); returns it and its first free slot.
    fn take_pool_frame(&mut self, app: AppId) -> Option<(u32, usize)> {
        let frame = self.fragmented.pop().or_else(|| self.free.pop())?;
        self.take_frame(app, frame, Role::Pool);
        Some((frame, self.frames[frame as usize].free_slot()?))
    }

    /// Returns the empty `frame` to the emergency list if it is short, else the free list.
    fn release_frame(&mut self, frame: u32) {
        let Frame { owner, role, .. } = self.frames[frame as usize];
        if let Role::Reserved(chunk) = role {
            if let Some(record) = self.tables.get_mut(owner, chunk) {
                record.frame = NO_FRAME;
            }
        }
        let owned = self.owned_mut(owner);
        if let Some(at) = owned.iter().position(|&f| f == frame) {
            owned.swap_remove(at);
        }
        let prefrag = self.frames[frame as usize].prefrag;
        self.frames[frame as usize] = Frame {
            prefrag,
            ..Frame::FREE
        };
        if self.emergency.len() < self.emergency_target {
            self.emergency.push(frame);
        } else if prefrag.is_empty() {
            self.free.push(frame);
        } else {
            self.fragmented.push(frame);
            self.defrag_futile = false;
        }
        self.usage.sub_reserved(self.frames[frame as usize].usable());
    }

    /// Puts page `vpn` of `app` (allocated, in no frame now) in `slot` of `frame`; coalesces
    /// its chunk when that completes it in place.
    fn put(&mut self, app: AppId, vpn: u64, frame: u32, slot: usize) {
        let pfn = frame * PAGES_PER_LARGE as u32 + slot as u32;
        let target = &mut self.frames[frame as usize];
        target.slots.set(slot);
        target.used += 1;
        if target.owner != app && !target.shared {
            target.shared = true;
            self.counts.shared += 1;
        }
        self.reverse[pfn as usize] = page_key(app, vpn);
        let (chunk, off) = split(vpn);
        let Some(record) = self.tables.get_mut(app, chunk) else {
            return;
        };
        record.pfn[off] = pfn;
        record.resident.set(off);
        if record.frame == frame && off == slot {
            record.in_place += 1;
            // The in-place coalescer: all 512 pages sit at their offsets in the reserved
            // frame, so the large mapping is valid at once and no base entry is stale.
            if u64::from(record.in_place) == PAGES_PER_LARGE {
                record.large = true;
                self.counts.coalesced += 1;
            }
        }
    }

    /// Takes the page out of base frame `pfn` (its chunk splintered first if coalesced);
    /// the caller puts it elsewhere or drops it. Returns the page.
    fn take(&mut self, pfn: u32) -> (AppId, u64) {
        let (app, vpn) = key_page(self.reverse[pfn as usize]);
        let (frame, slot) = (
            pfn / PAGES_PER_LARGE as u32,
            pfn as usize % PAGES_PER_LARGE as usize,
        );
        self.reverse[pfn as usize] = NO_PAGE;
        let source = &mut self.frames[frame as usize];
        source.slots.clear(slot);
        source.used -= 1;
        let (chunk, off) = split(vpn);
        self.splinter(app, chunk);
        if let Some(record) = self.tables.get_mut(app, chunk) {
            record.resident.clear(off);
            record.pfn[off] = NO_FRAME;
            if record.frame == frame && off == slot {
                record.in_place -= 1;
            }
        }
        (app, vpn)
    }

    /// Splits `chunk` of `app` back into base pages if it is coalesced, flushing the large
    /// entry: a page of it is about to leave or move.
    fn splinter(&mut self, app: AppId, chunk: u64) {
        let Some(record) = self.tables.get_mut(app, chunk).filter(|r| r.large) else {
            return;
        };
        record.large = false;
        self.counts.splintered += 1;
        let vpn = chunk * PAGES_PER_LARGE;
        self.invalidations.push(Invalidation {
            app,
            vpn,
            large: true,
        });
    }

    /// Makes page `vpn` of `app` (allocated, not resident) resident where CoCoA says.
    fn place(&mut self, app: AppId, vpn: u64) -> Result<(), PlaceError> {
        let (chunk, off) = split(vpn);
        let Some(record) = self.tables.get(app, chunk) else {
            return Err(PlaceError::Unallocated { app, vpn });
        };
        let (fresh_chunk, whole) = (record.resident.is_empty(), record.allocated == Bitmap::FULL);
        let mut frame = record.frame;
        if frame == NO_FRAME && fresh_chunk {
            frame = self.reserve(app, chunk, whole);
        }
        let (frame, slot) = match frame {
            f if f != NO_FRAME && !self.frames[f as usize].slots.get(off) => (f, off),
            _ => self.fragment_slot(app)?,
        };
        self.put(app, vpn, frame, slot);
        self.usage.add_used(1);
        Ok(())
    }

    /// Reserves a free frame for `chunk` of `app` (compacting first when the chunk is
    /// allocated whole and no frame is free); [`NO_FRAME`] leaves the chunk fragmented.
    fn reserve(&mut self, app: AppId, chunk: u64, whole: bool) -> u32 {
        // CAC's first resort is to move pre-fragmented data: that frees an unfragmented
        // frame, which compacting an application's frame may not.
        if self.free.is_empty() && whole && !self.defragment() {
            self.compact_one();
        }
        let Some(frame) = self.free.pop() else {
            return NO_FRAME;
        };
        self.take_frame(app, frame, Role::Reserved(chunk));
        if let Some(record) = self.tables.get_mut(app, chunk) {
            record.frame = frame;
        }
        frame
    }

    /// A free base frame for a page of `app` that cannot go in place: CoCoA's free base
    /// page lists, a fresh frame, CAC, the emergency list, then any frame (shared).
    fn fragment_slot(&mut self, app: AppId) -> Result<(u32, usize), PlaceError> {
        if let Some(found) = self.own_slot(app) {
            return Ok(found);
        }
        if self.compact_one() {
            if let Some(found) = self.own_slot(app) {
                return Ok(found);
            }
        }
        if let Some(frame) = self.emergency.pop() {
            self.take_frame(app, frame, Role::Pool);
            // Always some: an emergency frame holds no page and is not full of data.
            if let Some(slot) = self.frames[frame as usize].free_slot() {
                return Ok((frame, slot));
            }
        }
        self.any_slot().ok_or(PlaceError::OutOfMemory {
            app,
            needed: BASE_BYTES,
        })
    }

    /// A free slot in `app`'s pool frames, else its least used reservation, else a fresh
    /// pool frame.
    fn own_slot(&mut self, app: AppId) -> Option<(u32, usize)> {
        let owned = self
            .owned
            .get(usize::from(app))
            .map_or(&[][..], Vec::as_slice);
        let frames = &self.frames;
        let room = |&&f: &&u32| frames[f as usize].has_room();
        let pool = owned
            .iter()
            .filter(room)
            .find(|&&f| frames[f as usize].role == Role::Pool);
        let reserved = || {
            owned
                .iter()
                .filter(room)
                .min_by_key(|&&f| (frames[f as usize].used, f))
        };
        if let Some(&frame) = pool.or_else(reserved) {
            return Some((frame, self.frames[frame as usize].free_slot()?));
        }
        self.take_pool_frame(app)
    }

    /// The paper's failsafe: a free slot in any application's frame, least used first.
    fn any_slot(&self) -> Option<(u32, usize)> {
        let frames = self.frames.iter().enumerate().filter(|(_, f)| f.has_room());
        let (frame, state) = frames.min_by_key(|(i, f)| (f.used, *i))?;
        Some((frame as u32, state.free_slot()?))
    }

    /// Drops resident page `off` of `chunk` of `app` from its frame, flushing its base
    /// entry; returns its frame when that is left non-empty and below the CAC threshold.
    fn drop_page(&mut self, app: AppId, chunk: u64, off: usize) -> Option<u32> {
        let pfn = self.tables.get(app, chunk)?.pfn[off];
        self.take(pfn);
        self.usage.sub_used(1);
        let vpn = chunk * PAGES_PER_LARGE + off as u64;
        self.invalidations.push(Invalidation {
            app,
            vpn,
            large: false,
        });
        let frame = pfn / PAGES_PER_LARGE as u32;
        let used = self.frames[frame as usize].used;
        if used == 0 {
            self.release_frame(frame);
            return None;
        }
        (used < self.threshold).then_some(frame)
    }

    /// Frees pages `gone` of `chunk` of `app`, collecting frames to compact in `sparse`.
    fn free_pages(&mut self, app: AppId, chunk: u64, gone: &Bitmap, sparse: &mut Vec<u32>) {
        let Some(record) = self.tables.get(app, chunk) else {
            return;
        };
        let gone = record.allocated.and(gone);
        for off in gone.and(&record.resident).ones() {
            sparse.extend(self.drop_page(app, chunk, off));
        }
        let Some(record) = self.tables.get_mut(app, chunk) else {
            return;
        };
        record.allocated = record.allocated.minus(&gone);
        if !record.allocated.is_empty() {
            return;
        }
        // The chunk is gone; a frame reserved for it that still holds other chunks' pages
        // becomes an ordinary pool frame of the application.
        if record.frame != NO_FRAME {
            self.frames[record.frame as usize].role = Role::Pool;
        }
        self.tables.remove(app, chunk);
    }

    /// Undoes an allocation that ran out of memory: its pages leave whatever they took.
    fn undo(&mut self, app: AppId, newly: &Newly) {
        let mut sparse = Vec::new();
        for (chunk, fresh) in newly {
            self.free_pages(app, *chunk, fresh, &mut sparse);
        }
    }

    /// The mapping of resident page `off` of `record`.
    fn mapping(record: &Chunk, off: usize) -> Mapping {
        Mapping {
            pfn: u64::from(record.pfn[off]),
            large: record.large,
        }
    }
}

impl MemoryManager for Mosaic {
    fn name(&self) -> &'static str {
        "mosaic"
    }

    fn allocate(&mut self, app: AppId, base: u64, bytes: u64) -> Result<(), PlaceError> {
        let newly = self.tables.mark(app, page_range(base, bytes));
        if self.demand_paging {
            return Ok(());
        }
        let mut left = super::pages::count_pages(&newly);
        for (chunk, fresh) in &newly {
            for off in fresh.ones() {
                if let Err(err) = self.place(app, chunk * PAGES_PER_LARGE + off as u64) {
                    self.undo(app, &newly);
                    return Err(match err {
                        PlaceError::OutOfMemory { .. } => PlaceError::OutOfMemory {
                            app,
                            needed: left * BASE_BYTES,
                        },
                        other => other,
                    });
                }
                left -= 1;
            }
        }
        Ok(())
    }

    fn free(&mut self, app: AppId, base: u64, bytes: u64) {
        let mut sparse = Vec::new();
        for (chunk, mask) in chunk_masks(page_range(base, bytes)) {
            self.free_pages(app, chunk, &mask, &mut sparse);
        }
        self.cac_futile = false;
        sparse.sort_unstable();
        sparse.dedup();
        for frame in sparse {
            self.compact_sparse(frame);
        }
    }

    fn touch(&mut self, app: AppId, vpn: u64) -> Result<Touch, PlaceError> {
        let (chunk, off) = split(vpn);
        let record = self.tables.get(app, chunk).filter(|r| r.allocated.get(off));
        let record = record.ok_or(PlaceError::Unallocated { app, vpn })?;
        if record.resident.get(off) {
            return Ok(Touch {
                mapping: Mosaic::mapping(record, off),
                transferred: 0,
            });
        }
        self.place(app, vpn)?;
        // Mosaic moves data across PCIe in base pages only.
        let transferred = if self.demand_paging { BASE_BYTES } else { 0 };
        self.counts.far_faults += u64::from(self.demand_paging);
        let mapping = self
            .lookup(app, vpn)
            .ok_or(PlaceError::Unallocated { app, vpn })?;
        Ok(Touch {
            mapping,
            transferred,
        })
    }

    fn lookup(&self, app: AppId, vpn: u64) -> Option<Mapping> {
        let (chunk, off) = split(vpn);
        let record = self.tables.get(app, chunk)?;
        record
            .resident
            .get(off)
            .then(|| Mosaic::mapping(record, off))
    }

    fn drain_invalidations(&mut self, out: &mut Vec<Invalidation>) {
        out.append(&mut self.invalidations);
    }

    fn stats(&self) -> ManagerStats {
        let counts = self.counts;
        ManagerStats {
            far_faults_base: counts.far_faults,
            far_faults_large: 0,
            coalesced: counts.coalesced,
            splintered: counts.splintered,
            compactions: counts.compactions,
            pages_migrated: counts.migrated,
            shared_frames: counts.shared,
            prefragmented_frames: self.prefragmented,
            ..self.usage.stats()
        }
    }

    fn prefragmented(&self) -> Vec<u64> {
        let frames = self.frames.iter().enumerate();
        frames
            .flat_map(|(frame, state)| {
                let first = frame as u64 * PAGES_PER_LARGE;
                state.prefrag.ones().map(move |off| first + off as u64)
            })
            .collect()
    }
}
