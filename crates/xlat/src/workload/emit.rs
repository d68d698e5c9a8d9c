//! How a running workload hands out the references it performs: an [`Emitter`] buffers them,
//! with the address-space events of its allocations among them, and passes full chunks to a
//! [`Sink`]; a [`SimVec`] is an array whose element accesses both act on Rust memory and emit
//! the reference at the element's simulated address.

use super::address_space::{AddressSpace, Allocator};
use crate::memref::{AccessKind, AddressSpaceEvent, MemRef};
use crate::types::Asid;
use serde::Serialize;

/// References per chunk handed to the sink (the experiments' default batch).
pub const CHUNK: usize = 1 << 16;

/// A chunk's instructions by where they fall among its references: `(position, count)`
/// pairs in order of position, `count` instructions having been counted by the workload after
/// the chunk's first `position` references (workloads count an operation's instructions
/// after its references). They go with those references: a source that hands out the chunk
/// in parts hands out with the part ending at reference `position` (the first part for
/// position 0) exactly these instructions, so that a run cut by `skip` or `limit` counts
/// the instructions of the references it kept.
pub type Marks = Vec<(u32, u64)>;

/// A chunk's address-space events, each with the number of the chunk's references before it
/// (as in [`crate::Batch::events`]).
pub type Events = Vec<(usize, AddressSpaceEvent)>;

/// Where full chunks of references go.
pub trait Sink {
    /// Takes the references in `refs`, the marks of the instructions they span and the
    /// events among them (leaving all three empty, possibly swapped for other buffers).
    /// Returns false when nobody reads any more: the workload should stop.
    fn take(&mut self, refs: &mut Vec<MemRef>, marks: &mut Marks, events: &mut Events) -> bool;
}

/// A sink that drops everything (to time or check a computation alone).
pub struct Discard;

impl Sink for Discard {
    fn take(&mut self, refs: &mut Vec<MemRef>, marks: &mut Marks, events: &mut Events) -> bool {
        refs.clear();
        marks.clear();
        events.clear();
        true
    }
}

/// A sink that keeps every reference, in order, and drops the events (the workloads' tests).
#[cfg(test)]
pub struct Collect(pub Vec<MemRef>);

#[cfg(test)]
impl Sink for Collect {
    fn take(&mut self, refs: &mut Vec<MemRef>, marks: &mut Marks, events: &mut Events) -> bool {
        self.0.append(refs);
        marks.clear();
        events.clear();
        true
    }
}

/// What one phase of a workload did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PhaseStats {
    /// Phase name (`init`, `update`, `build`, `lookup`, `bfs`...). A phase entered several
    /// times (Graph500's searches and validations take turns) has one entry adding them up.
    pub name: &'static str,
    /// Whether its references were emitted (setup phases can be left out).
    pub emitted: bool,
    /// References it performed (counted whether or not emitted).
    pub refs: u64,
    /// Instructions it is estimated to retire.
    pub instructions: u64,
}

/// Buffers a workload's references and counts them by phase.
///
/// The buffer is kept at its full length and filled by index, so buffering a reference is one
/// bounds test and a 16-byte store (a `Vec::push` costs several times that, measured).
pub struct Emitter<'s> {
    buf: Vec<MemRef>,
    len: usize,
    asid: Asid,
    emitting: bool,
    stopped: bool,
    flushed: u64,
    skipped: u64,
    instructions: u64,
    /// Where the instructions counted since the buffer was last handed out fall in it.
    marks: Marks,
    /// The address-space events since the buffer was last handed out, where they fall in it.
    events: Events,
    /// The process's address space, which the workload allocates from.
    space: AddressSpace,
    /// Whether the changes of `space` are handed on as events ([`Emitter::map_process`]).
    mapping: bool,
    phases: Vec<PhaseStats>,
    /// The index in `phases` of the phase running.
    current: Option<usize>,
    phase_start: (u64, u64),
    sink: &'s mut dyn Sink,
}

/// Bytes moved by one reference of a block copy or fill ([`Emitter::block`]).
pub const COPY_PIECE: u64 = 32;

/// The references [`Emitter::block`] makes for `len` bytes.
pub fn pieces(len: u64) -> u64 {
    len.div_ceil(COPY_PIECE)
}

/// What unused buffer slots hold.
const FILLER: MemRef = MemRef { vaddr: 0, asid: 0, size: 0, kind: AccessKind::Load };

impl<'s> Emitter<'s> {
    /// An emitter tagging references with `asid` and handing chunks to `sink`.
    pub fn new(asid: Asid, sink: &'s mut dyn Sink) -> Emitter<'s> {
        Emitter {
            buf: vec![FILLER; CHUNK],
            len: 0,
            asid,
            emitting: true,
            stopped: false,
            flushed: 0,
            skipped: 0,
            instructions: 0,
            marks: Vec::new(),
            events: Vec::new(),
            space: AddressSpace::new(),
            mapping: false,
            phases: Vec::new(),
            current: None,
            phase_start: (0, 0),
            sink,
        }
    }

    /// Buffers a reference. References of phases not emitted are buffered too and dropped
    /// at the flush, which keeps this path free of a test.
    #[inline(always)]
    fn push(&mut self, vaddr: u64, size: u16, kind: AccessKind) {
        let r = MemRef { vaddr, asid: self.asid, size, kind };
        match self.buf.get_mut(self.len) {
            Some(slot) => *slot = r,
            None => {
                self.flush();
                self.buf[0] = r;
            }
        }
        self.len += 1;
    }

    /// A load of `size` bytes at `vaddr`.
    #[inline]
    pub fn load(&mut self, vaddr: u64, size: u16) {
        self.push(vaddr, size, AccessKind::Load);
    }

    /// A store of `size` bytes at `vaddr`.
    #[inline]
    pub fn store(&mut self, vaddr: u64, size: u16) {
        self.push(vaddr, size, AccessKind::Store);
    }

    /// A load and then a store of the same `size` bytes at `vaddr` (a read-modify-write).
    #[inline]
    pub fn load_store(&mut self, vaddr: u64, size: u16) {
        self.push(vaddr, size, AccessKind::Load);
        self.push(vaddr, size, AccessKind::Store);
    }

    /// The references of a `memcpy`/`memset`-like pass over `len` bytes at `vaddr`, loads
    /// or stores by `kind`: one per [`COPY_PIECE`] bytes (the last one shorter), the width
    /// of the vector loads and stores of glibc's AVX2 routines. Returns the pieces.
    pub fn block(&mut self, vaddr: u64, len: u64, kind: AccessKind) -> u64 {
        let mut at = 0;
        while at < len {
            let piece = (len - at).min(COPY_PIECE);
            self.push(vaddr + at, piece as u16, kind);
            at += piece;
        }
        pieces(len)
    }

    /// Counts `n` instructions retired (after the references emitted so far).
    #[inline]
    pub fn instructions(&mut self, n: u64) {
        self.instructions += n;
        let at = self.len as u32;
        match self.marks.last_mut() {
            Some((last, count)) if *last == at => *count += n,
            _ => self.marks.push((at, n)),
        }
    }

    /// From now on, hands on the process's address-space changes as events after the
    /// references emitted so far: first its mappings, then what each allocation and free maps
    /// and unmaps. Until this is called, they are dropped (the stream then has no events, and
    /// the OS takes every address as mapped).
    pub fn map_process(&mut self) {
        self.space.take_changes();
        let mapped = self.space.mapped();
        self.push_events(mapped);
        self.mapping = true;
    }

    /// Hands on (or drops) the changes `space` logged since the last call.
    fn sync(&mut self) {
        let changes = self.space.take_changes();
        if self.mapping {
            self.push_events(changes);
        }
    }

    /// Appends `events`, in this emitter's address space, after the references so far.
    fn push_events(&mut self, events: Vec<AddressSpaceEvent>) {
        let (at, asid) = (self.len, self.asid);
        self.events.extend(events.into_iter().map(|event| (at, AddressSpaceEvent { asid, ..event })));
    }

    /// The end of the used part of the process's brk heap (for tests comparing a plan's
    /// layout with a run's).
    #[cfg(test)]
    pub fn heap_top(&self) -> u64 {
        self.space.heap_top()
    }

    /// True once the sink has gone: the workload should return as soon as it can.
    #[inline]
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// Hands the buffered references (and the instructions and events since the last flush)
    /// to the sink, or drops the references and instructions when the phase is not emitted
    /// (its events are kept, for the start of the next chunk: what a set-up phase mapped
    /// stays mapped) or the sink has gone.
    #[cold]
    #[inline(never)]
    fn flush(&mut self) {
        if !self.emitting {
            self.skipped += self.len as u64;
            self.events.iter_mut().for_each(|(at, _)| *at = 0);
        } else {
            self.flushed += self.len as u64;
            self.buf.truncate(self.len);
            if !self.stopped && !self.sink.take(&mut self.buf, &mut self.marks, &mut self.events) {
                self.stopped = true;
            }
            self.buf.clear();
            self.buf.resize(CHUNK, FILLER);
            self.events.clear();
        }
        self.marks.clear();
        self.len = 0;
    }

    fn total_refs(&self) -> u64 {
        self.flushed + self.len as u64 + self.skipped
    }

    /// Ends the current phase, if any, and starts (or resumes) phase `name`, whose references
    /// are emitted only when `emit` is true (they are counted either way). A phase resumed
    /// keeps the `emit` of its first start.
    pub fn phase(&mut self, name: &'static str, emit: bool) {
        self.close_phase();
        let index = match self.phases.iter().position(|p| p.name == name) {
            Some(index) => index,
            None => {
                self.phases.push(PhaseStats { name, emitted: emit, refs: 0, instructions: 0 });
                self.phases.len() - 1
            }
        };
        let emit = self.phases[index].emitted;
        if !(self.emitting && emit) {
            self.flush();
        }
        self.current = Some(index);
        self.emitting = emit;
    }

    /// Adds what happened since the current phase started (or resumed) to its counts.
    fn close_phase(&mut self) {
        let now = (self.total_refs(), self.instructions);
        if let Some(p) = self.current.map(|index| &mut self.phases[index]) {
            p.refs += now.0 - self.phase_start.0;
            p.instructions += now.1 - self.phase_start.1;
        }
        self.phase_start = now;
    }

    /// Hands out the last references (and events, even after a phase not emitted) and
    /// returns the statistics of every phase.
    pub fn finish(mut self) -> Vec<PhaseStats> {
        self.close_phase();
        self.flush();
        if !self.events.is_empty() {
            self.emitting = true;
            self.flush();
        }
        self.phases
    }
}

/// The process's allocator, in the stream: each call's address-space changes are handed on
/// after the references emitted so far (once [`Emitter::map_process`] was called).
impl Allocator for Emitter<'_> {
    fn malloc(&mut self, bytes: u64) -> u64 {
        let addr = self.space.malloc(bytes);
        self.sync();
        addr
    }
    fn memalign(&mut self, align: u64, bytes: u64) -> u64 {
        let addr = self.space.memalign(align, bytes);
        self.sync();
        addr
    }
    fn malloc_run(&mut self, bytes: u64, count: u64) -> u64 {
        let addr = self.space.malloc_run(bytes, count);
        self.sync();
        addr
    }
    fn free(&mut self, addr: u64) {
        self.space.free(addr);
        self.sync();
    }
}

/// An array of `T` in Rust memory whose element accesses also emit references at the
/// simulated address `base + i * size_of::<T>()`.
#[derive(Clone, Debug)]
pub struct SimVec<T> {
    data: Vec<T>,
    base: u64,
}

/// The bytes of one `T`, as a reference size.
const fn elem<T>() -> u16 {
    std::mem::size_of::<T>() as u16
}

impl<T: Copy> SimVec<T> {
    /// `len` copies of `value` at simulated address `base`; fails with a clear message when
    /// the host cannot hold the data.
    pub fn filled(base: u64, len: usize, value: T, what: &str) -> Result<SimVec<T>, String> {
        let mut data = Vec::new();
        data.try_reserve_exact(len).map_err(|_| {
            let bytes = len.saturating_mul(std::mem::size_of::<T>()) as u64;
            crate::host::cannot_allocate(bytes, what)
        })?;
        data.resize(len, value);
        Ok(SimVec { data, base })
    }

    /// Wraps `data` placed at simulated address `base`.
    pub fn from_vec(base: u64, data: Vec<T>) -> SimVec<T> {
        SimVec { data, base }
    }

    /// The simulated address of element `i`.
    #[inline]
    pub fn addr(&self, i: usize) -> u64 {
        self.base + (i * std::mem::size_of::<T>()) as u64
    }

    /// Reads element `i`, emitting the load.
    #[inline]
    pub fn ld(&self, i: usize, e: &mut Emitter) -> T {
        e.load(self.addr(i), elem::<T>());
        self.data[i]
    }

    /// Writes element `i`, emitting the store.
    #[inline]
    pub fn st(&mut self, i: usize, value: T, e: &mut Emitter) {
        e.store(self.addr(i), elem::<T>());
        self.data[i] = value;
    }

    /// The data, without emitting anything (for self-checks, which are not traced).
    pub fn raw(&self) -> &[T] {
        &self.data
    }

    /// The data, mutably, without emitting anything.
    pub fn raw_mut(&mut self) -> &mut [T] {
        &mut self.data
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Collect(Vec<MemRef>, u64);
    impl Sink for Collect {
        fn take(&mut self, refs: &mut Vec<MemRef>, marks: &mut Marks, events: &mut Events) -> bool {
            self.0.append(refs);
            self.1 += marks.drain(..).map(|(_, n)| n).sum::<u64>();
            events.clear();
            true
        }
    }

    /// Keeps the stream as references `('r', address)` and events `('m' or 'u', start)`.
    #[derive(Default)]
    struct Stream(Vec<(char, u64)>);
    impl Sink for Stream {
        fn take(&mut self, refs: &mut Vec<MemRef>, marks: &mut Marks, events: &mut Events) -> bool {
            let mut events = events.drain(..).peekable();
            for (i, r) in refs.drain(..).enumerate() {
                while let Some((_, e)) = events.next_if(|&(at, _)| at == i) {
                    self.0.push((if e.op == crate::RangeOp::Map { 'm' } else { 'u' }, e.start));
                }
                self.0.push(('r', r.vaddr));
            }
            self.0.extend(events.map(|(_, e)| (if e.op == crate::RangeOp::Map { 'm' } else { 'u' }, e.start)));
            marks.clear();
            true
        }
    }

    #[test]
    fn without_map_process_no_event_is_handed_on() {
        let mut sink = Stream::default();
        let mut e = Emitter::new(0, &mut sink);
        let big = e.malloc(40 << 20);
        e.load(big, 8);
        e.free(big);
        e.finish();
        assert_eq!(sink.0, [('r', big)]);
    }

    #[test]
    fn events_come_where_the_workload_allocates_even_in_phases_not_emitted() {
        let mut sink = Stream::default();
        let mut e = Emitter::new(3, &mut sink);
        e.phase("setup", false);
        e.malloc(100);
        e.map_process();
        e.load(0x10, 8);
        // Above the largest dynamic mmap threshold: freeing it leaves the threshold alone.
        let big = e.malloc(40 << 20);
        e.phase("run", true);
        e.load(big, 8);
        e.free(big);
        // Full chunks are handed out on the way: the events stay at their places.
        for i in 0..CHUNK as u64 {
            e.load(0x1000 + i, 1);
        }
        e.phase("teardown", false);
        assert_eq!(e.malloc(40 << 20), big, "the freed mapping's place is the highest gap again");
        e.finish();
        let got = &sink.0;
        let starts: Vec<(char, u64)> = AddressSpace::new().mapped().iter().map(|c| ('m', c.start)).collect();
        assert_eq!(got[..4], starts[..], "the process's mappings, from the set-up not emitted");
        assert_eq!(got[4..7], [('m', big - 16), ('r', big), ('u', big - 16)]);
        assert_eq!(got.len(), 7 + CHUNK + 1);
        assert_eq!(got[7 + CHUNK], ('m', big - 16), "the last event, after the last chunk");
    }

    #[test]
    fn phases_count_emitted_and_skipped_references() {
        let mut sink = Collect(Vec::new(), 0);
        let mut e = Emitter::new(7, &mut sink);
        e.phase("setup", false);
        e.store(0x1000, 8);
        e.instructions(3);
        e.phase("kernel", true);
        let mut v = SimVec::filled(0x2000, 4, 0u32, "test").unwrap();
        v.st(3, 9, &mut e);
        assert_eq!(v.ld(3, &mut e), 9);
        e.instructions(5);
        let phases = e.finish();
        assert_eq!(phases[0], PhaseStats { name: "setup", emitted: false, refs: 1, instructions: 3 });
        assert_eq!(phases[1], PhaseStats { name: "kernel", emitted: true, refs: 2, instructions: 5 });
        assert_eq!(sink.0, vec![MemRef { vaddr: 0x200c, asid: 7, size: 4, kind: AccessKind::Store },
            MemRef { vaddr: 0x200c, asid: 7, size: 4, kind: AccessKind::Load }]);
        assert_eq!(sink.1, 5, "instructions of skipped phases are not handed out");
    }

    #[test]
    fn a_block_is_cut_into_vector_pieces() {
        let mut sink = Collect(Vec::new(), 0);
        let mut e = Emitter::new(0, &mut sink);
        assert_eq!(e.block(0x1000, 70, AccessKind::Store), 3);
        assert_eq!(e.block(0x2000, 0, AccessKind::Load), 0);
        e.finish();
        let got: Vec<(u64, u16)> = sink.0.iter().map(|r| (r.vaddr, r.size)).collect();
        assert_eq!(got, vec![(0x1000, 32), (0x1020, 32), (0x1040, 6)]);
        assert!(sink.0.iter().all(|r| r.kind == AccessKind::Store));
    }

    #[test]
    fn a_phase_entered_again_adds_to_its_counts_and_keeps_its_emission() {
        let mut sink = Collect(Vec::new(), 0);
        let mut e = Emitter::new(1, &mut sink);
        for round in 0..3u64 {
            e.phase("search", true);
            e.load(0x1000 + round, 1);
            e.instructions(2);
            e.phase("check", false);
            e.load(0x9000, 8);
            e.load(0x9008, 8);
            e.instructions(7);
            // A later start asking to emit does not change the first start's choice.
            e.phase("check", true);
            e.load(0x9010, 8);
        }
        let phases = e.finish();
        assert_eq!(phases, vec![
            PhaseStats { name: "search", emitted: true, refs: 3, instructions: 6 },
            PhaseStats { name: "check", emitted: false, refs: 9, instructions: 21 },
        ]);
        let emitted: Vec<u64> = sink.0.iter().map(|r| r.vaddr).collect();
        assert_eq!(emitted, vec![0x1000, 0x1001, 0x1002]);
        assert_eq!(sink.1, 6);
    }
}
