//! The record codec of one native-format block (see `docs/trace-format.md`, "Records").
//!
//! Each record is a tag byte followed by optional varints. Decoder state (previous addresses,
//! current ASID) starts from zero at every block, so blocks decode independently.
//!
//! Version 2 puts a block's address-space events in a table before its records, each with the
//! number of the block's references before it (see `docs/trace-format.md`, "Address-space
//! events"). A block without events has no table, so it encodes as in version 1; and the
//! decoder, knowing where the events are before it decodes a reference, cuts its runs of
//! references there, so that its loop over references is the same as in version 1.

use super::varint;
use crate::memref::{past_top, AccessKind, AddressSpaceEvent, Batch, MemRef, RangeOp};

/// Sizes encodable directly in the 3-bit size code; code 7 escapes to a varint.
const SIZE_CODES: [u16; 7] = [1, 2, 4, 8, 16, 32, 64];
const SIZE_ESCAPE: u8 = 7;
/// Instruction-delta codes: 0 → +0, 1 → +1, 2 → varint follows (3 is invalid).
const INSTR_VARINT: u8 = 2;
const ASID_CHANGED: u8 = 1 << 4;

/// Longest possible record: tag, instruction varint (10), ASID (3), size (3), delta (10).
pub(crate) const MAX_RECORD_BYTES: usize = 27;

/// First byte of a block's event table (version 2). Its kind bits are 3, which no reference
/// record has, so a body starting with it has a table, and no version 1 body does.
const EVENT_TABLE_TAG: u8 = 0x03;
/// Longest event table head with its varint in its shortest form: tag and count (3).
pub(crate) const MAX_EVENT_TABLE_HEAD: usize = 4;
/// Longest event entry with its varints in their shortest form: position (4, as it is at
/// most [`MAX_BLOCK_RECORDS`]), ASID (3), operation (1), start (10), length (10).
pub(crate) const MAX_EVENT_BYTES: usize = 28;

/// Most address-space events a block may hold, and most events in a row the writer accepts
/// (so that a run of events between two references spans at most two blocks). It bounds what
/// events may add to a block's length (1.8 MB) and, with the reader's stop after that many
/// events per fill, what a small file of highly compressible events can make it allocate.
pub const MAX_BLOCK_EVENTS: u32 = 1 << 16;

/// Most records a block may hold (the writer puts 65 536 in one): a block is decoded whole,
/// so this bounds what a reader allocates for one at about 113 MB, where a block of 2^31
/// two-byte records, valid but for this bound, would take 4 GiB from a file of 130 KB.
pub const MAX_BLOCK_RECORDS: u32 = 1 << 22;

/// The delta state shared by encoder and decoder: reset at each block start.
#[derive(Clone, Copy, Debug, Default)]
struct DeltaState {
    /// Previous data address and previous instruction-fetch address: code and data are
    /// separate streams, and one predecessor per stream keeps both deltas small.
    prev_data: u64,
    prev_fetch: u64,
    asid: u16,
}

impl DeltaState {
    /// The predecessor of `kind`'s stream.
    #[inline]
    fn prev(&mut self, kind: AccessKind) -> &mut u64 {
        if kind == AccessKind::IFetch {
            &mut self.prev_fetch
        } else {
            &mut self.prev_data
        }
    }

    /// The address the zigzag delta `d` leads to in `kind`'s stream. Selects rather than
    /// branches or indexes, so the decoder keeps both predecessors in registers (conditional
    /// moves) on streams that alternate kinds unpredictably.
    #[inline(always)]
    fn target(&self, kind: AccessKind, d: u64) -> u64 {
        let prev = if kind == AccessKind::IFetch { self.prev_fetch } else { self.prev_data };
        prev.wrapping_add(varint::unzigzag(d) as u64)
    }

    /// Makes `vaddr` the predecessor of `kind`'s stream (selects, as in [`DeltaState::target`]).
    #[inline(always)]
    fn set(&mut self, kind: AccessKind, vaddr: u64) {
        let fetch = kind == AccessKind::IFetch;
        self.prev_data = if fetch { self.prev_data } else { vaddr };
        self.prev_fetch = if fetch { vaddr } else { self.prev_fetch };
    }
}

/// Encodes records into the uncompressed body of one block.
#[derive(Debug, Default)]
pub(crate) struct BlockEncoder {
    /// The encoded reference records of the current block.
    buf: Vec<u8>,
    /// Reference records in the current block.
    pub records: u32,
    /// Instructions retired over the current block.
    pub instructions: u64,
    /// The current block's address-space events, each with the number of references before it.
    events: Vec<(u32, AddressSpaceEvent)>,
    /// The body of a block with events: its event table, then its records.
    with_table: Vec<u8>,
    state: DeltaState,
}

impl BlockEncoder {
    /// Starts a new block (keeps the buffers' allocations).
    pub fn reset(&mut self) {
        self.buf.clear();
        self.records = 0;
        self.instructions = 0;
        self.events.clear();
        self.state = DeltaState::default();
    }

    /// Address-space events in the current block.
    pub fn events(&self) -> u32 {
        self.events.len() as u32
    }

    /// Appends an address-space event, after the references appended so far.
    pub fn push_event(&mut self, e: &AddressSpaceEvent) {
        self.events.push((self.records, *e));
    }

    /// The body of the current block: its records, after its event table if it has events.
    pub fn body(&mut self) -> &[u8] {
        if self.events.is_empty() {
            return &self.buf;
        }
        let t = &mut self.with_table;
        t.clear();
        t.push(EVENT_TABLE_TAG);
        varint::put(t, self.events.len() as u64);
        for (at, e) in &self.events {
            for v in [u64::from(*at), u64::from(e.asid), e.op as u64, e.start, e.len] {
                varint::put(t, v);
            }
        }
        t.extend_from_slice(&self.buf);
        t
    }

    /// Appends one record; `instr_delta` instructions retired since the previous record.
    pub fn push(&mut self, r: &MemRef, instr_delta: u64) {
        let size_code = SIZE_CODES.iter().position(|&s| s == r.size).map_or(SIZE_ESCAPE, |i| i as u8);
        let instr_code = instr_delta.min(u64::from(INSTR_VARINT)) as u8;
        let asid_changed = r.asid != self.state.asid;
        let tag = (r.kind as u8) | (instr_code << 2) | if asid_changed { ASID_CHANGED } else { 0 } | (size_code << 5);
        self.buf.push(tag);
        if instr_code == INSTR_VARINT {
            varint::put(&mut self.buf, instr_delta);
        }
        if asid_changed {
            varint::put(&mut self.buf, u64::from(r.asid));
            self.state.asid = r.asid;
        }
        if size_code == SIZE_ESCAPE {
            varint::put(&mut self.buf, u64::from(r.size));
        }
        let prev = self.state.prev(r.kind);
        varint::put(&mut self.buf, varint::zigzag(r.vaddr.wrapping_sub(*prev) as i64));
        *prev = r.vaddr;
        self.records += 1;
        self.instructions = self.instructions.wrapping_add(instr_delta);
    }
}

/// A malformed record: where in the decompressed block, and what is wrong.
#[derive(Debug)]
pub(crate) struct DecodeError {
    /// Byte position in the decompressed block.
    pub pos: usize,
    /// Index of the record within the block (for the event table, 0).
    pub record: u64,
    /// True when the fault is in the block's event table.
    pub event: bool,
    /// What is wrong.
    pub message: &'static str,
}

/// A decode cursor inside one decompressed block, so a read may stop after any record.
#[derive(Debug, Default)]
pub(crate) struct BlockCursor {
    /// Byte position of the next record.
    pub pos: usize,
    /// Records (references) decoded so far in this block.
    pub decoded: u64,
    /// Instructions summed over the records decoded so far.
    pub instructions: u64,
    /// The block's address-space events, each with the number of references before it.
    events: Vec<(u32, AddressSpaceEvent)>,
    /// The next event to hand out.
    next_event: usize,
    state: DeltaState,
}

impl BlockCursor {
    /// A cursor at the start of the block `data[..end]` of `records` references, after its
    /// event table, decoded and checked here, if `events` (version 2) and it has one.
    pub fn new(data: &[u8], end: usize, records: u64, events: bool) -> Result<BlockCursor, DecodeError> {
        let mut cursor = BlockCursor::default();
        if events && end > 0 && data[0] == EVENT_TABLE_TAG {
            let body = &data[..end];
            cursor.pos = 1;
            let fail = |pos, message| DecodeError { pos, record: 0, event: true, message };
            let count = varint::get(body, &mut cursor.pos).ok_or_else(|| fail(1, "bad event count varint"))?;
            if count == 0 || count > u64::from(MAX_BLOCK_EVENTS) {
                return Err(fail(1, "an event count of 0 or more than 65536"));
            }
            cursor.events.reserve(count as usize);
            for _ in 0..count {
                let start = cursor.pos;
                let (at, event) = decode_event(body, &mut cursor.pos).map_err(|message| fail(start, message))?;
                if at > records || cursor.events.last().is_some_and(|&(before, _)| u64::from(before) > at) {
                    return Err(fail(start, "events out of order, or placed past the block's references"));
                }
                cursor.events.push((at as u32, event));
            }
        }
        Ok(cursor)
    }

    /// Decodes exactly `n` references into `batch.refs`, and the events before them and
    /// right after them (before the block's next reference) into `batch.events`, returning the
    /// instructions the references retired. `data[..end]` is the block body; bytes after
    /// `end` are padding (see [`PADDING`]) that lets the fast path read 8 bytes at a time, and
    /// no record may run into them. `n` is at most a block's record count, below 2^32.
    pub fn decode(&mut self, data: &[u8], end: usize, batch: &mut Batch, n: usize) -> Result<u64, DecodeError> {
        let (mut left, mut instr) = (n, 0);
        loop {
            while let Some(&(_, e)) = self.events.get(self.next_event).filter(|&&(at, _)| u64::from(at) == self.decoded) {
                batch.push_event(e);
                self.next_event += 1;
            }
            if left == 0 {
                return Ok(instr);
            }
            // The references up to the next event: runs never meet an event.
            let to_event = self.events.get(self.next_event).map_or(u64::MAX, |&(at, _)| u64::from(at) - self.decoded);
            let run = (left as u64).min(to_event) as usize;
            instr += self.decode_run(data, end, &mut batch.refs, run)?;
            left -= run;
        }
    }

    /// Decodes exactly `n` records into `out`, returning the instructions they retired.
    fn decode_run(&mut self, data: &[u8], end: usize, out: &mut Vec<MemRef>, n: usize) -> Result<u64, DecodeError> {
        // Work on locals so the loop keeps its state in registers.
        let mut pos = self.pos;
        let mut st = self.state;
        let mut instr: u64 = 0;
        let mut failed = false;
        // Set by a record adding 2^32 instructions or more: the fast path adds at most 1 per
        // record, so without such a record the sum of fewer than 2^32 records cannot wrap.
        let mut big = false;
        let old_len = out.len();
        // `extend` over a counted range writes straight into the vector without a capacity
        // check per record (unlike `push`), and touches each slot once (unlike `resize`).
        // A closure cannot return early: after an error it fills placeholders, discarded below.
        out.extend((0..n).map(|_| {
            if failed {
                return MemRef::load(0, 0);
            }
            let decoded = if pos + PADDING <= data.len() {
                match decode_common(data, &mut pos, &mut st, &mut instr) {
                    Some(r) => Ok(r),
                    None => decode_one::<true>(data, &mut pos, &mut st, &mut instr, &mut big),
                }
            } else {
                decode_one::<false>(data, &mut pos, &mut st, &mut instr, &mut big)
            };
            decoded.unwrap_or_else(|_| {
                failed = true;
                MemRef::load(0, 0)
            })
        }));
        // Checked once per call rather than per record: the padding decodes harmlessly, and
        // anything amiss sends the whole call to the exact path, which names the record at
        // fault (or, for valid but huge instruction counts, gives the exact result).
        let total = self.instructions.checked_add(instr);
        let result = match total {
            Some(total) if !failed && !big && pos <= end => {
                self.pos = pos;
                self.state = st;
                self.decoded += n as u64;
                self.instructions = total;
                Ok(instr)
            }
            _ => {
                out.truncate(old_len);
                self.decode_exact(data, end, out, n)
            }
        };
        if result.is_err() {
            out.truncate(old_len);
        }
        result
    }

    /// [`BlockCursor::decode_run`] one record at a time, checking after each that it ends
    /// within the body and that the instruction count still fits in 64 bits: slow, for damaged
    /// blocks.
    fn decode_exact(&mut self, data: &[u8], end: usize, out: &mut Vec<MemRef>, n: usize) -> Result<u64, DecodeError> {
        let (mut pos, mut st, mut total) = (self.pos, self.state, self.instructions);
        for i in 0..n {
            let start = pos;
            let (mut instr, mut big) = (0, false);
            let r = decode_one::<false>(data, &mut pos, &mut st, &mut instr, &mut big);
            // A record crossing the end reads zero padding, which ends any varint: past the end,
            // whatever `decode_one` made of it, the record is cut short.
            let r = if pos > end { Err("records run past the end of the block") } else { r };
            let r = r.and_then(|r| {
                total = total.checked_add(instr).ok_or("the block's instruction count passes 2^64 - 1")?;
                Ok(r)
            });
            out.push(r.map_err(|message| DecodeError { pos: start, record: self.decoded + i as u64, event: false, message })?);
        }
        let instr = total - self.instructions;
        self.pos = pos;
        self.state = st;
        self.decoded += n as u64;
        self.instructions = total;
        Ok(instr)
    }
}

/// Decodes the event entry at `*pos` of the event table in `body`: the number of references
/// before the event, and the event, every field checked.
fn decode_event(body: &[u8], pos: &mut usize) -> Result<(u64, AddressSpaceEvent), &'static str> {
    let at = varint::get(body, pos).ok_or("bad event position varint")?;
    let asid = varint::get(body, pos).ok_or("bad event ASID varint")?;
    let asid = u16::try_from(asid).map_err(|_| "event ASID above 65535")?;
    let op = varint::get(body, pos).ok_or("bad event operation varint")?;
    let op = u8::try_from(op).ok().and_then(RangeOp::from_u8).ok_or("unknown event operation (0 map, 1 unmap)")?;
    let start = varint::get(body, pos).ok_or("bad event start varint")?;
    let len = varint::get(body, pos).ok_or("bad event length varint")?;
    let event = AddressSpaceEvent { asid, op, start, len };
    event.malformed().map_or(Ok((at, event)), Err)
}

/// Tag bits that call for an extra varint: instruction varint or invalid code, ASID change.
const EXTRA_BITS: u8 = 0b0001_1000;

/// The common record (valid kind, +0/+1 instructions, same ASID, size code below 7, delta of
/// at most 8 bytes, not past the top of the address space) with few instructions and no
/// unpredictable branch; `None` (consuming nothing) for any other record. At least
/// [`PADDING`] bytes must be readable at `*pos`.
#[inline(always)]
fn decode_common(data: &[u8], pos: &mut usize, st: &mut DeltaState, instr: &mut u64) -> Option<MemRef> {
    let p = *pos;
    let tag = data[p];
    // The delta is loaded before the tag is examined, so the two loads overlap.
    let w = u64::from_le_bytes(data[p + 1..p + 9].try_into().expect("8 bytes"));
    let stops = !w & 0x8080_8080_8080_8080;
    if tag & EXTRA_BITS != 0 || tag >> 5 == SIZE_ESCAPE || tag & 3 == 3 || stops == 0 {
        return None;
    }
    let len = (stops.trailing_zeros() / 8 + 1) as usize;
    let kind = KINDS[(tag & 3) as usize];
    let size = SIZE_CODES[(tag >> 5) as usize];
    let vaddr = st.target(kind, squeeze(w, len));
    // Never taken on real traces, so the branch predicts perfectly; the checked path reports it.
    if past_top(vaddr, size) {
        return None;
    }
    st.set(kind, vaddr);
    *instr = instr.wrapping_add(u64::from((tag >> 2) & 1));
    *pos = p + 1 + len;
    Some(MemRef { vaddr, asid: st.asid, size, kind })
}

/// The value of a varint of `len` (1..=8) bytes whose bytes are the low bytes of `w`:
/// keeps the 7-bit groups and packs them together.
#[inline(always)]
fn squeeze(w: u64, len: usize) -> u64 {
    let mut x = w & (u64::MAX >> (64 - 8 * len)) & 0x7f7f_7f7f_7f7f_7f7f;
    x = (x & 0x007f_007f_007f_007f) | ((x & 0x7f00_7f00_7f00_7f00) >> 1);
    x = (x & 0x0000_3fff_0000_3fff) | ((x & 0x3fff_0000_3fff_0000) >> 2);
    (x & 0x0000_0000_0fff_ffff) | ((x & 0x0fff_ffff_0000_0000) >> 4)
}

/// Bytes of readable slack after a record for [`BlockCursor::decode`]'s fast path: a record
/// reads at most 1 + 10 + 8 + 8 bytes before its delta and 8 bytes for the delta.
pub(crate) const PADDING: usize = 48;

/// Kinds by the low two tag bits (3 is rejected before the lookup).
const KINDS: [AccessKind; 4] = [AccessKind::Load, AccessKind::Store, AccessKind::IFetch, AccessKind::Load];

/// [`varint::get`] through a copy of the cursor: handing it the decoder's own cursor would
/// make that cursor live in memory for the whole loop.
#[inline]
fn varint_slow(data: &[u8], pos: &mut usize) -> Option<u64> {
    let mut p = *pos;
    let v = varint::get(data, &mut p);
    *pos = p;
    v
}

/// Reads a varint; with `FAST`, at least 8 bytes must be readable at `*pos`.
#[inline(always)]
fn read_varint<const FAST: bool>(data: &[u8], pos: &mut usize) -> Option<u64> {
    if !FAST {
        return varint_slow(data, pos);
    }
    // Branch-free for up to 8 bytes (56 bits): find the first byte without the continuation
    // bit, then squeeze the 7-bit groups together.
    let w = u64::from_le_bytes(data[*pos..*pos + 8].try_into().expect("8 bytes"));
    let stops = !w & 0x8080_8080_8080_8080;
    if stops == 0 {
        return varint_slow(data, pos); // 9 or 10 bytes: large addresses, rare.
    }
    let len = (stops.trailing_zeros() / 8 + 1) as usize;
    *pos += len;
    Some(squeeze(w, len))
}

/// Decodes any record at `*pos`, validating every field. Adds its instructions to `*instr`
/// (wrapping) and sets `*big` if they are 2^32 or more.
#[inline(always)]
fn decode_one<const FAST: bool>(
    data: &[u8],
    pos: &mut usize,
    st: &mut DeltaState,
    instr: &mut u64,
    big: &mut bool,
) -> Result<MemRef, &'static str> {
    let Some(&tag) = data.get(*pos) else { return Err("block ends inside a record") };
    *pos += 1;
    if tag & 3 == 3 {
        return Err("invalid access kind 3");
    }
    let kind = KINDS[(tag & 3) as usize];
    let icode = (tag >> 2) & 3;
    *instr = instr.wrapping_add(u64::from(icode == 1));
    if icode >= INSTR_VARINT {
        if icode != INSTR_VARINT {
            return Err("invalid instruction-count code 3");
        }
        let d = read_varint::<FAST>(data, pos).ok_or("bad instruction-count varint")?;
        *instr = instr.wrapping_add(d);
        *big |= d > u64::from(u32::MAX);
    }
    if tag & ASID_CHANGED != 0 {
        let a = read_varint::<FAST>(data, pos).ok_or("bad ASID varint")?;
        st.asid = u16::try_from(a).map_err(|_| "ASID above 65535")?;
    }
    let code = tag >> 5;
    let size = if code == SIZE_ESCAPE {
        let s = read_varint::<FAST>(data, pos).ok_or("bad size varint")?;
        u16::try_from(s).map_err(|_| "size above 65535")?
    } else {
        SIZE_CODES[code as usize]
    };
    let d = read_varint::<FAST>(data, pos).ok_or("bad address-delta varint")?;
    let vaddr = st.target(kind, d);
    if past_top(vaddr, size) {
        return Err("the reference runs past the top of the 64-bit address space");
    }
    st.set(kind, vaddr);
    Ok(MemRef { vaddr, asid: st.asid, size, kind })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoder_and_cursor_agree_across_split_reads() {
        let refs = [
            (MemRef::ifetch(0x40_0000, 4), 1),
            (MemRef::load(0x7fff_0000, 8), 0),
            (MemRef { vaddr: u64::MAX - 2, asid: 7, size: 3, kind: AccessKind::Store }, 1000),
            (MemRef { vaddr: 0, asid: 7, size: 65535, kind: AccessKind::IFetch }, 2),
            (MemRef::load(0x10, 0), 0),
        ];
        let mut enc = BlockEncoder::default();
        for (r, d) in &refs {
            enc.push(r, *d);
        }
        assert_eq!(enc.instructions, 1003);
        let mut cur = BlockCursor::default();
        let mut out = Batch::default();
        let mut instr = 0;
        for chunk in [1, 3, 1] {
            instr += cur.decode(&enc.buf, enc.buf.len(), &mut out, chunk).unwrap();
        }
        assert_eq!(instr, 1003);
        assert_eq!(cur.pos, enc.buf.len());
        // The fast path (padded data) decodes the same records.
        let mut padded = enc.buf.clone();
        padded.resize(enc.buf.len() + PADDING, 0);
        let mut fast = Batch::default();
        BlockCursor::default().decode(&padded, enc.buf.len(), &mut fast, refs.len()).unwrap();
        assert_eq!(fast.refs, out.refs);
        assert_eq!(out.refs, refs.iter().map(|(r, _)| *r).collect::<Vec<_>>());
    }

    #[test]
    fn events_decode_at_their_places_across_split_reads() {
        let map = |page: u64| AddressSpaceEvent::map(page << 12, 4096);
        let unmap = AddressSpaceEvent { asid: 9, op: RangeOp::Unmap, start: u64::MAX, len: 1 };
        let refs = [MemRef::load(8, 8), MemRef::ifetch(0x40_0000, 4), MemRef::load(16, 8)];
        let mut enc = BlockEncoder::default();
        enc.push_event(&map(0));
        enc.push(&refs[0], 0);
        enc.push(&refs[1], 1);
        enc.push_event(&map(1));
        enc.push_event(&unmap);
        enc.push(&refs[2], 0);
        enc.push_event(&map(2));
        assert_eq!((enc.records, enc.events()), (3, 4));
        let body = enc.body().to_vec();
        assert_eq!(body[0], EVENT_TABLE_TAG);
        assert!(body.ends_with(&enc.buf), "the records follow the table");
        let len = body.len();
        let mut padded = body.clone();
        padded.resize(len + PADDING, 0);
        // Unpadded data takes the checked path, padded data the fast one.
        for data in [&body, &padded] {
            for splits in [&[3][..], &[1, 2], &[1, 1, 1], &[2, 1]] {
                let mut cur = BlockCursor::new(data, len, 3, true).unwrap();
                let (mut batch, mut instr) = (Batch::default(), 0);
                for &n in splits {
                    instr += cur.decode(data, len, &mut batch, n).unwrap();
                }
                assert_eq!(batch.refs, refs, "{splits:?}");
                assert_eq!(batch.events, [(0, map(0)), (2, map(1)), (2, unmap), (3, map(2))], "{splits:?}");
                assert_eq!((cur.pos, cur.instructions, instr), (len, 1, 1));
            }
        }
        // Without events (version 1), the table's tag is a reference of kind 3.
        let mut cur = BlockCursor::new(&padded, len, 3, false).unwrap();
        let err = cur.decode(&padded, len, &mut Batch::default(), 3).unwrap_err();
        assert_eq!((err.record, err.event, err.message), (0, false, "invalid access kind 3"));
        // Events placed past the block's references, or out of order, are errors.
        for records in [0, 2] {
            let err = BlockCursor::new(&padded, len, records, true).unwrap_err();
            assert!(err.event && err.message.contains("out of order"), "{}", err.message);
        }
    }

    #[test]
    fn invalid_tags_are_errors() {
        let mut cur = BlockCursor::default();
        let err = cur.decode(&[0x03, 0x00], 2, &mut Batch::default(), 1).unwrap_err();
        assert_eq!(err.message, "invalid access kind 3");
        let err = BlockCursor::default().decode(&[0x00], 1, &mut Batch::default(), 1).unwrap_err();
        assert!(err.message.contains("delta"));
        // Padding must not be decoded as records.
        let err = BlockCursor::default().decode(&[0u8; 2 + PADDING], 2, &mut Batch::default(), 2).unwrap_err();
        assert_eq!(err.message, "records run past the end of the block");
    }

    /// Encodes `refs`, then appends `tail` (a damaged record) and padding; returns the data and
    /// the body length.
    fn block(refs: &[(MemRef, u64)], tail: &[u8]) -> (Vec<u8>, usize) {
        let mut enc = BlockEncoder::default();
        for (r, d) in refs {
            enc.push(r, *d);
        }
        let mut data = enc.buf;
        data.extend_from_slice(tail);
        let end = data.len();
        data.resize(end + PADDING, 0);
        (data, end)
    }

    #[test]
    fn a_record_cut_at_the_end_is_named() {
        let refs: Vec<_> = (0..100u64).map(|i| (MemRef::load(i * 64, 8), 0)).collect();
        // A load whose address delta has its continuation bit set and nothing after it.
        let (data, end) = block(&refs, &[0x00, 0x80]);
        let mut out = Batch::new(vec![MemRef::ifetch(4, 4)], 0);
        let mut cur = BlockCursor::default();
        assert_eq!(cur.decode(&data, end, &mut out, 60).unwrap(), 0);
        let err = cur.decode(&data, end, &mut out, 41).unwrap_err();
        assert_eq!((err.record, err.message), (100, "records run past the end of the block"));
        assert_eq!(err.pos, end - 2);
        assert_eq!(out.len(), 61, "a failed call adds nothing");
        // A block whose records end early and the next record's tag is padding.
        let (data, end) = block(&refs, &[]);
        let err = BlockCursor::default().decode(&data, end, &mut Batch::default(), 101).unwrap_err();
        assert_eq!((err.record, err.pos), (100, end));
    }

    #[test]
    fn references_past_the_top_of_the_address_space_are_errors() {
        let top = MemRef::load(u64::MAX - 7, 8);
        let (data, end) = block(&[(top, 0)], &[]);
        assert!(BlockCursor::default().decode(&data, end, &mut Batch::default(), 1).is_ok());
        for (size, at) in [(16, 3), (1000, 0)] {
            // Size 16 takes the fast path, 1000 (a size varint) the checked one.
            let mut refs = vec![(MemRef::ifetch(0x1000, 4), 1); at];
            refs.push((MemRef { size, ..top }, 0));
            let (data, end) = block(&refs, &[]);
            let err = BlockCursor::default().decode(&data, end, &mut Batch::default(), at + 1).unwrap_err();
            assert_eq!(err.record, at as u64);
            assert_eq!(err.message, "the reference runs past the top of the 64-bit address space");
        }
    }

    #[test]
    fn instruction_counts_past_2_pow_64_are_errors() {
        let r = MemRef::load(8, 8);
        let half = (1 << 63) + 2;
        // Two varint counts whose sum wraps to 4; a count of 2^64 - 1 then a fast +1.
        for deltas in [[half, half], [u64::MAX, 1]] {
            let (data, end) = block(&[(r, 0), (r, deltas[0]), (r, deltas[1]), (r, 0)], &[]);
            let err = BlockCursor::default().decode(&data, end, &mut Batch::default(), 4).unwrap_err();
            assert_eq!(err.record, 2, "{deltas:?}");
            assert!(err.message.contains("instruction count"), "{}", err.message);
        }
        // Across calls, and a huge but valid total.
        let (data, end) = block(&[(r, u64::MAX - 1), (r, 1), (r, 1)], &[]);
        let mut cur = BlockCursor::default();
        assert_eq!(cur.decode(&data, end, &mut Batch::default(), 1).unwrap(), u64::MAX - 1);
        assert_eq!(cur.decode(&data, end, &mut Batch::default(), 1).unwrap(), 1);
        assert_eq!(cur.instructions, u64::MAX);
        assert_eq!(cur.decode(&data, end, &mut Batch::default(), 1).unwrap_err().record, 2);
    }
}
