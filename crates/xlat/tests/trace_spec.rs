//! An independent decoder and encoder of the native trace format, written from
//! `docs/trace-format.md` alone, checked against xlat's writer and reader.
//!
//! The point is to test the document as much as the code: if a file written by
//! [`NativeWriter`] decodes here to the stream that was written, and a file encoded here reads
//! back through [`NativeReader`], the document says enough to interoperate with xlat. The code
//! below is deliberately simple (no fast paths) and strict: everything the document states
//! about a file's layout is checked while decoding, so a writer that breaks an invariant
//! fails here even when xlat's own reader would not notice.

use proptest::prelude::*;
use serde_json::{json, Value};
use std::path::Path;
use xlat::memref::{AddressSpaceEvent, RangeOp};
use xlat::source::RefSource;
use xlat::trace::{NativeReader, NativeWriter};
use xlat::{AccessKind, Batch, MemRef};

#[path = "common/events.rs"]
mod events;

/// One reference with the number of instructions retired since the previous one.
type Ref = (MemRef, u64);

/// An address-space event with its place: the number of references before it.
type Event = (usize, AddressSpaceEvent);

/// Constants and primitive encodings of the document's "Native format, version 2".
mod format {
    /// The file's first 8 bytes.
    pub const MAGIC: &[u8; 8] = b"XLATTRC\0";
    /// The index's first 8 bytes.
    pub const INDEX_MAGIC: &[u8; 8] = b"XLATIDX\0";
    /// The file's last 8 bytes.
    pub const END_MAGIC: &[u8; 8] = b"XLATEND\0";
    /// The version written, with address-space events.
    pub const VERSION: u16 = 2;
    /// The version before events, which readers still read.
    pub const VERSION_1: u16 = 1;
    /// Most bytes of metadata (JSON and padding).
    pub const MAX_METADATA: usize = 16 << 20;
    /// Most records in one block.
    pub const MAX_BLOCK_RECORDS: u32 = 1 << 22;
    /// What the writer puts in every block but the last.
    pub const WRITER_BLOCK_RECORDS: u32 = 65536;
    /// magic, version, flags, meta_len.
    pub const HEADER_LEN: usize = 8 + 2 + 2 + 4;
    /// records, raw_len, zlen, instructions.
    pub const BLOCK_HEADER_LEN: usize = 4 + 4 + 4 + 8;
    /// magic, block_count, total_records, total_instructions.
    pub const INDEX_HEADER_LEN: usize = 8 + 3 * 8;
    /// offset, first_record, records, instructions.
    pub const INDEX_ENTRY_LEN: usize = 4 * 8;
    /// index_offset, end magic.
    pub const FOOTER_LEN: usize = 8 + 8;
    /// Fewest bytes a record takes: a tag and a one-byte delta.
    pub const MIN_RECORD_BYTES: usize = 2;
    /// Most bytes a record takes with its varints in their shortest form: tag, instruction
    /// count (10), ASID (3), size (3), delta (10). A block's `raw_len` may not exceed this
    /// per record, even with longer varint forms.
    pub const MAX_RECORD_BYTES: usize = 27;
    /// Sizes for the tag's size codes 0 to 6; code 7 means a varint follows.
    pub const SIZES: [u16; 7] = [1, 2, 4, 8, 16, 32, 64];
    /// The tag's size code meaning "a varint follows".
    pub const SIZE_VARINT: u8 = 7;
    /// The tag's instruction code meaning "a varint follows".
    pub const INSTR_VARINT: u8 = 2;
    /// The tag bit saying an ASID varint follows.
    pub const ASID_BIT: u8 = 1 << 4;
    /// The first byte of a block's event table (version 2).
    pub const EVENT_TABLE_TAG: u8 = 0x03;
    /// Most bytes the tag and count of an event table take with the count's shortest form.
    pub const MAX_EVENT_TABLE_HEAD: usize = 4;
    /// Most bytes an event entry takes with its varints in their shortest form: position
    /// (4), ASID (3), operation (1), start (10), length (10).
    pub const MAX_EVENT_BYTES: usize = 28;
    /// Most events in one block.
    pub const MAX_BLOCK_EVENTS: usize = 65536;

    /// `zigzag(d) = (d << 1) ^ (d >> 63)`: small deltas of either sign become small numbers.
    pub fn zigzag(d: i64) -> u64 {
        ((d << 1) ^ (d >> 63)) as u64
    }

    /// The inverse of [`zigzag`], as an unsigned delta to add with wrapping.
    pub fn unzigzag(u: u64) -> u64 {
        (u >> 1) ^ 0u64.wrapping_sub(u & 1)
    }

    /// Appends `v` as unsigned LEB128, followed by `extra` redundant zero groups (a longer
    /// but still valid encoding: the document bounds only the length, 10 bytes, and the value).
    pub fn put_varint(out: &mut Vec<u8>, mut v: u64, extra: usize) {
        let start = out.len();
        loop {
            let group = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(group);
                break;
            }
            out.push(group | 0x80);
        }
        for _ in 0..extra.min(10 - (out.len() - start)) {
            *out.last_mut().expect("a varint has a byte") |= 0x80;
            out.push(0);
        }
    }

    /// Reads little-endian integers and varints from a byte slice, naming the offset of
    /// whatever is wrong.
    pub struct Cursor<'a> {
        /// All the bytes, so that offsets are positions in them.
        pub data: &'a [u8],
        /// The next byte to read.
        pub pos: usize,
    }

    impl<'a> Cursor<'a> {
        /// A cursor at `pos` in `data`.
        pub fn at(data: &'a [u8], pos: usize) -> Cursor<'a> {
            Cursor { data, pos }
        }

        /// The next `n` bytes.
        pub fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
            let end = self.pos.checked_add(n).filter(|&end| end <= self.data.len());
            let end = end.ok_or_else(|| format!("byte {}: {n} bytes wanted, {} left", self.pos, self.data.len().saturating_sub(self.pos)))?;
            let bytes = &self.data[self.pos..end];
            self.pos = end;
            Ok(bytes)
        }

        /// The next `N` bytes as an array.
        fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
            Ok(self.take(N)?.try_into().expect("take returns N bytes"))
        }

        /// A byte.
        pub fn u8(&mut self) -> Result<u8, String> {
            Ok(self.array::<1>()?[0])
        }

        /// A little-endian u16.
        pub fn u16(&mut self) -> Result<u16, String> {
            self.array().map(u16::from_le_bytes)
        }

        /// A little-endian u32.
        pub fn u32(&mut self) -> Result<u32, String> {
            self.array().map(u32::from_le_bytes)
        }

        /// A little-endian u64.
        pub fn u64(&mut self) -> Result<u64, String> {
            self.array().map(u64::from_le_bytes)
        }

        /// An unsigned LEB128 varint of at most 10 bytes whose value fits in 64 bits.
        pub fn varint(&mut self) -> Result<u64, String> {
            let start = self.pos;
            let mut value = 0u64;
            for i in 0..10 {
                let byte = self.u8()?;
                let group = u64::from(byte & 0x7f);
                // The tenth group holds bit 63 only.
                if i == 9 && group > 1 {
                    return Err(format!("byte {start}: varint value past 64 bits"));
                }
                value |= group << (7 * i);
                if byte & 0x80 == 0 {
                    return Ok(value);
                }
            }
            Err(format!("byte {start}: varint longer than 10 bytes"))
        }
    }
}

/// A strict decoder: every rule the document sets for readers is checked, in file order.
mod decode {
    use super::format::*;
    use super::{Event, Ref};
    use xlat::memref::{AddressSpaceEvent, RangeOp};
    use xlat::{AccessKind, MemRef};

    /// A decoded file.
    #[derive(Debug)]
    pub struct Trace {
        /// The header's version.
        pub version: u16,
        /// The metadata JSON.
        pub metadata: serde_json::Value,
        /// `meta_len`: bytes of JSON and padding.
        pub meta_len: usize,
        /// Spaces after the JSON.
        pub padding: usize,
        /// The blocks, in file order.
        pub blocks: Vec<Block>,
        /// The index's `total_records`.
        pub total_records: u64,
        /// The index's `total_instructions`.
        pub total_instructions: u64,
        /// Every reference with its instruction delta.
        pub refs: Vec<Ref>,
        /// Every event, with the number of references before it.
        pub events: Vec<Event>,
    }

    /// One block's header and decoded record stream.
    #[derive(Debug)]
    pub struct Block {
        /// File offset of the block header.
        pub offset: u64,
        /// Records in the block.
        pub records: u32,
        /// The zstd data (`zlen` bytes).
        pub frame: Vec<u8>,
        /// The block header's instruction count.
        pub instructions: u64,
        /// The decompressed record stream (`raw_len` bytes).
        pub body: Vec<u8>,
    }

    /// One index entry.
    struct Entry {
        offset: u64,
        first_record: u64,
        records: u64,
        instructions: u64,
    }

    /// The index: totals and entries.
    struct Index {
        total_records: u64,
        total_instructions: u64,
        entries: Vec<Entry>,
    }

    /// Fails with `message` unless `ok`.
    fn ensure(ok: bool, message: impl FnOnce() -> String) -> Result<(), String> {
        if ok {
            Ok(())
        } else {
            Err(message())
        }
    }

    /// Decodes a whole file, checking every rule the document states.
    pub fn file(data: &[u8]) -> Result<Trace, String> {
        let (version, metadata, meta_len, padding) = header(data)?;
        let index_offset = footer(data)?;
        let index = index(data, index_offset)?;
        let mut pos = (HEADER_LEN + meta_len) as u64;
        let (mut blocks, mut refs, mut events) = (Vec::new(), Vec::new(), Vec::new());
        let mut instructions = 0u64;
        for (i, entry) in index.entries.iter().enumerate() {
            // Blocks are contiguous and the index lists them in order.
            ensure(entry.offset == pos, || format!("index entry {i}: offset {} but the block is at {pos}", entry.offset))?;
            ensure(entry.first_record == refs.len() as u64, || {
                format!("index entry {i}: first_record {} but {} records precede it", entry.first_record, refs.len())
            })?;
            let last = i + 1 == index.entries.len();
            let (block, block_refs, block_events) = block(data, pos, version, last)?;
            ensure(entry.records == u64::from(block.records) && entry.instructions == block.instructions, || {
                format!("index entry {i} disagrees with the block header at {pos}")
            })?;
            instructions = instructions.checked_add(block.instructions).ok_or("instruction total past 2^64 - 1")?;
            pos += (BLOCK_HEADER_LEN + block.frame.len()) as u64;
            events.extend(block_events.into_iter().map(|(at, e)| (refs.len() + at, e)));
            refs.extend(block_refs);
            blocks.push(block);
        }
        ensure(pos == index_offset, || format!("the last block ends at {pos}, the index starts at {index_offset}"))?;
        ensure(index.total_records == refs.len() as u64, || format!("total_records {} != {}", index.total_records, refs.len()))?;
        ensure(index.total_instructions == instructions, || {
            format!("total_instructions {} != {instructions}", index.total_instructions)
        })?;
        let (total_records, total_instructions) = (index.total_records, index.total_instructions);
        Ok(Trace { version, metadata, meta_len, padding, blocks, total_records, total_instructions, refs, events })
    }

    /// The header: returns the version, the metadata, `meta_len` and the number of padding
    /// spaces.
    fn header(data: &[u8]) -> Result<(u16, serde_json::Value, usize, usize), String> {
        let mut c = Cursor::at(data, 0);
        ensure(c.take(8)? == MAGIC, || "bad magic".into())?;
        let version = c.u16()?;
        ensure(version == VERSION || version == VERSION_1, || format!("version {version}"))?;
        let flags = c.u16()?;
        ensure(flags == 0, || format!("flags {flags:#x}"))?;
        let meta_len = c.u32()? as usize;
        ensure(meta_len <= MAX_METADATA, || format!("meta_len {meta_len}"))?;
        let meta = c.take(meta_len)?;
        // The padding is spaces; JSON text may also hold whitespace (tab, newline...) around
        // its value, which is not padding.
        let json_len = meta.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
        let text = std::str::from_utf8(&meta[..json_len]).map_err(|e| format!("metadata is not UTF-8: {e}"))?;
        let metadata = serde_json::from_str(text).map_err(|e| format!("metadata is not JSON: {e}"))?;
        Ok((version, metadata, meta_len, meta_len - json_len))
    }

    /// The footer: returns `index_offset`.
    fn footer(data: &[u8]) -> Result<u64, String> {
        ensure(data.len() >= HEADER_LEN + FOOTER_LEN, || "too short for a footer".into())?;
        let mut c = Cursor::at(data, data.len() - FOOTER_LEN);
        let index_offset = c.u64()?;
        ensure(c.take(8)? == END_MAGIC, || "no end magic".into())?;
        Ok(index_offset)
    }

    /// The index at `offset`, which must fill the space up to the footer exactly.
    fn index(data: &[u8], offset: u64) -> Result<Index, String> {
        let end = data.len() - FOOTER_LEN;
        let start = usize::try_from(offset).ok().filter(|&o| o <= end).ok_or_else(|| format!("index offset {offset}"))?;
        let mut c = Cursor::at(&data[..end], start);
        ensure(c.take(8)? == INDEX_MAGIC, || format!("byte {start}: bad index magic"))?;
        let (count, total_records, total_instructions) = (c.u64()?, c.u64()?, c.u64()?);
        let expected = u128::from(count) * INDEX_ENTRY_LEN as u128 + INDEX_HEADER_LEN as u128;
        ensure((end - start) as u128 == expected, || format!("index of {} bytes for {count} blocks", end - start))?;
        let mut entries = Vec::new();
        for _ in 0..count {
            let (offset, first_record, records, instructions) = (c.u64()?, c.u64()?, c.u64()?, c.u64()?);
            entries.push(Entry { offset, first_record, records, instructions });
        }
        Ok(Index { total_records, total_instructions, entries })
    }

    /// The block at `pos` of a file of `version`, the file's `last` block or not: its
    /// header, checked frame, references and events (placed in the block).
    fn block(data: &[u8], pos: u64, version: u16, last: bool) -> Result<(Block, Vec<Ref>, Vec<Event>), String> {
        let mut c = Cursor::at(data, pos as usize);
        let (records, raw_len, zlen, instructions) = (c.u32()?, c.u32()?, c.u32()?, c.u64()?);
        // Only version 2's last block may hold events alone.
        let fewest = if version == VERSION && last { 0 } else { 1 };
        ensure((fewest..=MAX_BLOCK_RECORDS).contains(&records), || format!("block at {pos}: {records} records"))?;
        let events_bytes = if version == VERSION { MAX_EVENT_TABLE_HEAD + MAX_EVENT_BYTES * MAX_BLOCK_EVENTS } else { 0 };
        let bounds = (MIN_RECORD_BYTES * records as usize).max(1)..=MAX_RECORD_BYTES * records as usize + events_bytes;
        ensure(bounds.contains(&(raw_len as usize)), || format!("block at {pos}: raw_len {raw_len} for {records} records"))?;
        let frame = c.take(zlen as usize)?.to_vec();
        let body = decompress(&frame, raw_len as usize).map_err(|e| format!("block at {pos}: {e}"))?;
        let (refs, events, sum) = records_of(&body, records, version).map_err(|e| format!("block at {pos}: {e}"))?;
        ensure(sum == instructions, || format!("block at {pos}: header says {instructions} instructions, records {sum}"))?;
        Ok((Block { offset: pos, records, instructions, frame, body }, refs, events))
    }

    /// Decompresses a block's zstd data, within zstd's bound for `raw_len` bytes, to exactly
    /// `raw_len` bytes. The document asks no more of a reader: the writer's single frame with
    /// a content checksum is checked by [`super::check_writer_frame`].
    fn decompress(frame: &[u8], raw_len: usize) -> Result<Vec<u8>, String> {
        let bound = zstd::zstd_safe::compress_bound(raw_len);
        ensure(frame.len() <= bound, || format!("zlen {} > ZSTD_compressBound({raw_len}) = {bound}", frame.len()))?;
        let raw = zstd::bulk::decompress(frame, raw_len).map_err(|e| format!("zstd: {e}"))?;
        ensure(raw.len() == raw_len, || format!("frame decodes to {} bytes, raw_len is {raw_len}", raw.len()))?;
        Ok(raw)
    }

    /// Decoding state, reset to zero at the start of every block.
    #[derive(Default)]
    struct State {
        prev_ifetch: u64,
        prev_data: u64,
        asid: u16,
    }

    /// Decodes a block body of `n` references and, in `version` 2, its event table if it
    /// starts with one, which must use it exactly; returns the references, the events (each
    /// with the number of the block's references before it) and the references' instruction
    /// sum.
    fn records_of(body: &[u8], n: u32, version: u16) -> Result<(Vec<Ref>, Vec<Event>, u64), String> {
        let mut c = Cursor::at(body, 0);
        let mut events = Vec::new();
        if version == VERSION && body.first() == Some(&EVENT_TABLE_TAG) {
            c.u8()?;
            let count = c.varint()?;
            ensure((1..=MAX_BLOCK_EVENTS as u64).contains(&count), || format!("event table of {count} events"))?;
            for k in 0..count {
                let at = c.varint()?;
                ensure(at <= u64::from(n), || format!("event {k} after reference {at} of {n}"))?;
                ensure(events.last().is_none_or(|&(before, _)| before as u64 <= at), || format!("event {k} out of order"))?;
                events.push((at as usize, event(&mut c).map_err(|e| format!("event {k}: {e}"))?));
            }
        }
        let mut state = State::default();
        let (mut refs, mut instructions) = (Vec::new(), 0u64);
        for i in 0..n {
            let (r, delta) = record(&mut c, &mut state).map_err(|e| format!("record {i}: {e}"))?;
            instructions = instructions.checked_add(delta).ok_or("block instruction sum past 2^64 - 1")?;
            refs.push((r, delta));
        }
        ensure(c.pos == body.len(), || format!("records end at byte {}, raw_len is {}", c.pos, body.len()))?;
        Ok((refs, events, instructions))
    }

    /// One event entry after its position: ASID, operation, start and length varints.
    fn event(c: &mut Cursor) -> Result<AddressSpaceEvent, String> {
        let asid = u16::try_from(c.varint()?).map_err(|_| "ASID past 65535")?;
        let op = match c.varint()? {
            0 => RangeOp::Map,
            1 => RangeOp::Unmap,
            op => return Err(format!("operation {op}")),
        };
        let (start, len) = (c.varint()?, c.varint()?);
        ensure(len > 0, || "an empty range".into())?;
        ensure(start.checked_add(len - 1).is_some(), || format!("{len} bytes at {start:#x} pass 2^64 - 1"))?;
        Ok(AddressSpaceEvent { asid, op, start, len })
    }

    /// One record: tag, then the optional varints in document order, then the delta.
    fn record(c: &mut Cursor, state: &mut State) -> Result<Ref, String> {
        let tag = c.u8()?;
        let kind = match tag & 3 {
            0 => AccessKind::Load,
            1 => AccessKind::Store,
            2 => AccessKind::IFetch,
            _ => return Err("kind 3".into()),
        };
        let instr = match (tag >> 2) & 3 {
            0 => 0,
            1 => 1,
            INSTR_VARINT => c.varint()?,
            _ => return Err("instruction code 3".into()),
        };
        if tag & ASID_BIT != 0 {
            state.asid = u16::try_from(c.varint()?).map_err(|_| "ASID past 65535")?;
        }
        let size = match tag >> 5 {
            SIZE_VARINT => u16::try_from(c.varint()?).map_err(|_| "size past 65535")?,
            code => SIZES[usize::from(code)],
        };
        let prev = if kind == AccessKind::IFetch { &mut state.prev_ifetch } else { &mut state.prev_data };
        let vaddr = prev.wrapping_add(unzigzag(c.varint()?));
        *prev = vaddr;
        ensure(vaddr.checked_add(u64::from(size.max(1)) - 1).is_some(), || format!("{size} bytes at {vaddr:#x} pass 2^64 - 1"))?;
        Ok((MemRef { vaddr, asid: state.asid, size, kind }, instr))
    }
}

/// A simple encoder, with options to use every valid but unusual encoding the document allows.
mod encode {
    use super::format::*;
    use super::{Event, Ref};
    use xlat::AccessKind;

    /// How to encode.
    #[derive(Clone, Debug)]
    pub struct Options {
        /// Records per block (the last block may be short).
        pub block_records: usize,
        /// Spaces after the metadata JSON.
        pub padding: usize,
        /// Redundant zero groups on every varint.
        pub long_varints: usize,
        /// Always use the varint forms: instruction code 2, the ASID bit, size code 7.
        pub explicit: bool,
        /// zstd compression level.
        pub level: i32,
        /// The header's version: 1 for files without events.
        pub version: u16,
    }

    impl Default for Options {
        /// The shortest encoding of every record, in blocks the size the writer uses.
        fn default() -> Options {
            let block_records = WRITER_BLOCK_RECORDS as usize;
            Options { block_records, padding: 0, long_varints: 0, explicit: false, level: 3, version: VERSION }
        }
    }

    /// Encoding state, reset to zero at the start of every block.
    #[derive(Default)]
    struct State {
        prev_ifetch: u64,
        prev_data: u64,
        asid: u16,
    }

    /// A whole file holding `refs`, `events` and `metadata`. Events go where the document
    /// says the writer puts them: in the block of the reference after them, and those after
    /// the last reference at the end of the last block, or in a block of their own when that
    /// block is full.
    pub fn file(refs: &[Ref], events: &[Event], metadata: &serde_json::Value, o: &Options) -> Vec<u8> {
        let mut meta = serde_json::to_vec(metadata).expect("JSON");
        meta.resize(meta.len() + o.padding, b' ');
        let per_block = o.block_records.max(1);
        let count = refs.len().div_ceil(per_block).max(events.last().map_or(0, |&(at, _)| at / per_block + 1));
        let blocks: Vec<RawBlock> = (0..count)
            .map(|b| {
                let first = b * per_block;
                let chunk = &refs[first.min(refs.len())..(first + per_block).min(refs.len())];
                let own: Vec<Event> = events.iter().filter(|(at, _)| at / per_block == b).map(|&(at, e)| (at - first, e)).collect();
                RawBlock::of(chunk, &own, o)
            })
            .collect();
        let mut out = header(&meta);
        out[8..10].copy_from_slice(&o.version.to_le_bytes());
        assemble(out, &blocks)
    }

    /// A header of the current version holding `meta` as it is (JSON or not).
    pub fn header(meta: &[u8]) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend(VERSION.to_le_bytes());
        out.extend(0u16.to_le_bytes());
        out.extend(u32::try_from(meta.len()).expect("small metadata").to_le_bytes());
        out.extend(meta);
        out
    }

    /// One block's header fields and frame, free so that tests can write what the document
    /// forbids or leaves open.
    pub struct RawBlock {
        /// Records in the block.
        pub records: u32,
        /// Bytes the frame decompresses to.
        pub raw_len: u32,
        /// The instruction count in the block header and index.
        pub instructions: u64,
        /// The bytes after the block header.
        pub frame: Vec<u8>,
    }

    impl RawBlock {
        /// The block holding `refs` and `events` (placed in the block), encoded with `o`.
        pub fn of(refs: &[Ref], events: &[Event], o: &Options) -> RawBlock {
            let (body, instructions) = records(refs, events, o);
            RawBlock::raw(&body, refs.len() as u32, instructions, compress(&body, o.level, true))
        }

        /// A block of `records` records whose decoded stream is `body`, written as `frame`.
        pub fn raw(body: &[u8], records: u32, instructions: u64, frame: Vec<u8>) -> RawBlock {
            RawBlock { records, raw_len: body.len() as u32, instructions, frame }
        }
    }

    /// One zstd frame of `body`, with or without a content checksum.
    pub fn compress(body: &[u8], level: i32, checksum: bool) -> Vec<u8> {
        let mut zstd = zstd::bulk::Compressor::new(level).expect("zstd level");
        zstd.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(checksum)).expect("checksum flag");
        zstd.compress(body).expect("zstd")
    }

    /// `header`, then `blocks` back to back, the index listing them and the footer.
    pub fn assemble(mut out: Vec<u8>, blocks: &[RawBlock]) -> Vec<u8> {
        let (mut entries, mut first_record, mut total_instructions) = (Vec::new(), 0u64, 0u64);
        for b in blocks {
            entries.push([out.len() as u64, first_record, b.records.into(), b.instructions]);
            out.extend(b.records.to_le_bytes());
            out.extend(b.raw_len.to_le_bytes());
            out.extend(u32::try_from(b.frame.len()).expect("frame fits u32").to_le_bytes());
            out.extend(b.instructions.to_le_bytes());
            out.extend(&b.frame);
            first_record += u64::from(b.records);
            total_instructions += b.instructions;
        }
        let index_offset = out.len() as u64;
        out.extend(INDEX_MAGIC);
        for n in [entries.len() as u64, first_record, total_instructions].into_iter().chain(entries.into_iter().flatten()) {
            out.extend(n.to_le_bytes());
        }
        out.extend(index_offset.to_le_bytes());
        out.extend(END_MAGIC);
        out
    }

    /// The body of one block holding `refs` and `events` (placed in the block): its event
    /// table if it has events, then its records; and the references' instruction sum.
    pub fn records(refs: &[Ref], events: &[Event], o: &Options) -> (Vec<u8>, u64) {
        let (mut out, mut state) = (Vec::new(), State::default());
        let extra = o.long_varints;
        if !events.is_empty() {
            out.push(EVENT_TABLE_TAG);
            put_varint(&mut out, events.len() as u64, extra);
            for (at, e) in events {
                for v in [*at as u64, u64::from(e.asid), e.op as u64, e.start, e.len] {
                    put_varint(&mut out, v, extra);
                }
            }
        }
        for (r, instr) in refs {
            let instr_code = match instr {
                0 | 1 if !o.explicit => *instr as u8,
                _ => INSTR_VARINT,
            };
            let asid_changed = o.explicit || r.asid != state.asid;
            let size_code = match SIZES.iter().position(|&s| s == r.size) {
                Some(code) if !o.explicit => code as u8,
                _ => SIZE_VARINT,
            };
            let kind = match r.kind {
                AccessKind::Load => 0,
                AccessKind::Store => 1,
                AccessKind::IFetch => 2,
            };
            out.push(kind | instr_code << 2 | if asid_changed { ASID_BIT } else { 0 } | size_code << 5);
            if instr_code == INSTR_VARINT {
                put_varint(&mut out, *instr, extra);
            }
            if asid_changed {
                put_varint(&mut out, r.asid.into(), extra);
                state.asid = r.asid;
            }
            if size_code == SIZE_VARINT {
                put_varint(&mut out, r.size.into(), extra);
            }
            let prev = if r.kind == AccessKind::IFetch { &mut state.prev_ifetch } else { &mut state.prev_data };
            put_varint(&mut out, zigzag(r.vaddr.wrapping_sub(*prev) as i64), extra);
            *prev = r.vaddr;
        }
        (out, refs.iter().map(|(_, d)| d).sum())
    }
}

// ---------------------------------------------------------------------------------------------
// Driving xlat.

/// Writes `refs` and `events` with xlat's writer, one [`NativeWriter::write`] per reference
/// and one [`NativeWriter::write_event`] per event.
fn write_with_xlat(path: &Path, refs: &[Ref], events: &[Event], metadata: &Value, block_records: Option<u32>) {
    let mut w = NativeWriter::create(path, metadata).unwrap();
    if let Some(n) = block_records {
        w = w.with_block_records(n);
    }
    let mut events = events.iter().peekable();
    for (i, (r, d)) in refs.iter().enumerate() {
        while let Some((_, e)) = events.next_if(|(at, _)| *at == i) {
            w.write_event(e).unwrap();
        }
        w.write(r, *d).unwrap();
    }
    events.for_each(|(_, e)| w.write_event(e).unwrap());
    w.finish().unwrap();
}

/// What xlat's reader reports about a file.
#[derive(Debug, PartialEq)]
struct XlatView {
    metadata: Value,
    records: u64,
    instructions: u64,
    blocks: usize,
    refs: Vec<Ref>,
    events: Vec<Event>,
}

/// Reads a file with xlat's reader, one reference per batch so that each batch's instruction
/// count is that reference's delta.
fn read_with_xlat(path: &Path) -> xlat::Result<XlatView> {
    let mut reader = NativeReader::open(path)?;
    let (mut refs, mut events, mut batch) = (Vec::new(), Vec::new(), Batch::default());
    loop {
        batch.clear();
        let n = reader.fill(&mut batch, 1)?;
        events.extend(batch.events.iter().map(|&(at, e)| (refs.len() + at, e)));
        if n == 0 {
            break;
        }
        refs.push((batch.refs[0], batch.instructions));
    }
    let (metadata, records, instructions) = (reader.metadata().clone(), reader.records(), reader.instructions());
    Ok(XlatView { metadata, records, instructions, blocks: reader.blocks(), refs, events })
}

// ---------------------------------------------------------------------------------------------
// What the document says of xlat's files beyond what any valid file satisfies.

/// Decodes a file with the independent decoder, failing the test with its message.
fn decode_path(path: &Path) -> decode::Trace {
    decode::file(&std::fs::read(path).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Checks what the document says about the writer's blocks: `block_records` per block, the
/// last one possibly short, each one zstd frame with a content checksum, and each block's
/// records encoded the shortest way (the encoder's defaults; see [`encode::Options`]).
fn check_writer_blocks(t: &decode::Trace, refs: &[Ref], block_records: u32) {
    assert_eq!(t.blocks.len(), refs.len().div_ceil(block_records as usize));
    for (block, chunk) in t.blocks.iter().zip(refs.chunks(block_records as usize)) {
        assert_eq!(block.records as usize, chunk.len(), "block at {}", block.offset);
        check_writer_frame(&block.frame).unwrap_or_else(|e| panic!("block at {}: {e}", block.offset));
        let (body, _) = encode::records(chunk, &[], &encode::Options::default());
        assert_eq!(block.body, body, "record bytes of the block at {}", block.offset);
    }
}

/// Checks that a block's zstd data is what the writer writes: exactly one frame, with a
/// content checksum.
fn check_writer_frame(frame: &[u8]) -> Result<(), String> {
    let one = zstd::zstd_safe::find_frame_compressed_size(frame);
    if one != Ok(frame.len()) {
        return Err(format!("not exactly one zstd frame: {one:?} of {}", frame.len()));
    }
    // RFC 8878 section 3.1.1.1.1: byte 4 is the Frame_Header_Descriptor, whose bit 2 is the
    // Content_Checksum_flag.
    match frame.get(4) {
        Some(descriptor) if descriptor & 4 != 0 => Ok(()),
        _ => Err("frame without content checksum".into()),
    }
}

// ---------------------------------------------------------------------------------------------
// Strategies.

/// Any kind.
fn kind() -> impl Strategy<Value = AccessKind> {
    prop_oneof![Just(AccessKind::Load), Just(AccessKind::Store), Just(AccessKind::IFetch)]
}

/// Sizes with a short code, sizes that need a varint (0, odd ones, the largest), any size.
fn size() -> impl Strategy<Value = u16> {
    prop_oneof![prop::sample::select(vec![1u16, 2, 4, 8, 16, 32, 64, 0, 3, 128, 65535]), any::<u16>()]
}

/// Mostly runs of a few ASIDs (so that "ASID changed" is sometimes unset), sometimes any.
fn asid() -> impl Strategy<Value = u16> {
    prop_oneof![4 => 0u16..3, 1 => any::<u16>()]
}

/// Steps from the previous address of the same stream: small either way, large, extreme.
fn step() -> impl Strategy<Value = i64> {
    prop_oneof![4 => -64i64..64, 1 => any::<i64>(), 1 => prop::sample::select(vec![i64::MIN, i64::MAX, -1])]
}

/// Instruction deltas: the short codes, small varints, large ones (kept below 2^52 so that
/// a few thousand never overflow the total).
fn instr() -> impl Strategy<Value = u64> {
    prop_oneof![3 => 0u64..2, 1 => 2u64..300, 1 => any::<u64>().prop_map(|d| d >> 12)]
}

/// A stream of up to `max` references, code and data walking separately as the format's
/// two delta streams do, so that consecutive deltas are small as well as large and negative.
fn stream(max: usize) -> impl Strategy<Value = Vec<Ref>> {
    prop::collection::vec((kind(), step(), size(), asid(), instr()), 0..max).prop_map(|v| {
        let (mut code, mut data) = (0x40_0000u64, 0x7fff_f000u64);
        v.into_iter()
            .map(|(kind, step, size, asid, instr)| {
                let prev = if kind == AccessKind::IFetch { &mut code } else { &mut data };
                // Move down if needed so that the reference ends at 2^64 - 1 at the latest.
                let vaddr = prev.wrapping_add(step as u64).min(u64::MAX - (u64::from(size.max(1)) - 1));
                *prev = vaddr;
                (MemRef { vaddr, asid, size, kind }, instr)
            })
            .collect()
    })
}

/// Any valid event: mostly small ranges at user-space addresses, some anywhere up to the top.
fn event() -> impl Strategy<Value = AddressSpaceEvent> {
    let start = prop_oneof![3 => 0u64..1 << 48, 1 => any::<u64>()];
    let len = prop_oneof![3 => 1u64..1 << 24, 1 => any::<u64>()];
    (asid(), any::<bool>(), start, len).prop_map(|(asid, unmap, start, len)| {
        let len = len.max(1);
        let op = if unmap { RangeOp::Unmap } else { RangeOp::Map };
        AddressSpaceEvent { asid, op, start: start.min(u64::MAX - (len - 1)), len }
    })
}

/// A stream of up to `max` references with up to `events` events among them: often before
/// the first reference or after the last, else anywhere.
fn stream_with_events(max: usize, events: usize) -> impl Strategy<Value = (Vec<Ref>, Vec<Event>)> {
    let place = (0u8..4, any::<prop::sample::Index>());
    (stream(max), prop::collection::vec((place, event()), 0..events)).prop_map(|(refs, raw)| {
        let events = events::place(refs.len(), raw);
        (refs, events)
    })
}

/// Metadata: the conventional object (with non-ASCII text), or another JSON value.
fn metadata() -> impl Strategy<Value = Value> {
    let object = ("\\PC{0,12}", prop::collection::vec("[a-z é→]{0,6}", 0..3))
        .prop_map(|(program, args)| json!({"program": program, "args": args, "created_by": "trace_spec"}));
    prop_oneof![3 => object, 1 => Just(json!(null)), 1 => Just(json!([1, "two"])), 1 => any::<i32>().prop_map(|n| json!(n))]
}

/// Every way of encoding the document allows that this encoder knows.
fn options() -> impl Strategy<Value = encode::Options> {
    let long_varints = prop_oneof![3 => Just(0usize), 1 => 1usize..3];
    let version = prop_oneof![Just(format::VERSION), Just(format::VERSION_1)];
    (1usize..40, 0usize..20, long_varints, any::<bool>(), prop::sample::select(vec![-5, 1, 3, 19]), version)
        .prop_map(|(block_records, padding, long_varints, explicit, level, version)| encode::Options {
            block_records,
            padding,
            long_varints,
            explicit,
            level,
            version,
        })
}

// ---------------------------------------------------------------------------------------------
// Files written by xlat, decoded here.

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Every field of every reference, the instruction deltas, totals and metadata survive
    /// xlat's writer and the independent decoder; the writer's blocks are as documented.
    #[test]
    fn xlat_files_decode_to_the_written_stream(refs in stream(400), meta in metadata(), block in 1u32..50) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.xlat");
        write_with_xlat(&path, &refs, &[], &meta, Some(block));
        let t = decode_path(&path);
        prop_assert_eq!(&t.refs, &refs);
        prop_assert_eq!(t.total_records, refs.len() as u64);
        prop_assert_eq!(t.total_instructions, refs.iter().map(|(_, d)| d).sum::<u64>());
        prop_assert_eq!(&t.metadata, &meta);
        prop_assert_eq!(t.padding, 0, "create leaves no room");
        check_writer_blocks(&t, &refs, block);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// References and events written by xlat decode here to what was written, and the file
    /// is the one the document says the writer makes (events in the block of the reference
    /// after them, and so on), byte for byte. Without events it is the version 1 file of the
    /// same references but for the version.
    #[test]
    fn xlat_files_with_events_are_as_documented((refs, events) in stream_with_events(300, 30), meta in metadata(), block in 1u32..50) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.xlat");
        write_with_xlat(&path, &refs, &events, &meta, Some(block));
        let t = decode_path(&path);
        prop_assert_eq!(t.version, format::VERSION);
        prop_assert_eq!(&t.refs, &refs);
        prop_assert_eq!(&t.events, &events);
        prop_assert_eq!(t.total_records, refs.len() as u64);
        let bytes = std::fs::read(&path).unwrap();
        let o = encode::Options { block_records: block as usize, level: 1, ..encode::Options::default() };
        prop_assert!(bytes == encode::file(&refs, &events, &meta, &o), "the writer's file is not the documented one");
        if events.is_empty() {
            let v1 = encode::Options { version: format::VERSION_1, ..o };
            prop_assert!(version_1(bytes) == encode::file(&refs, &[], &meta, &v1), "not a version 1 file but for the version");
        }
    }
}

/// By default the writer puts 65536 records in every block but the last.
#[test]
fn writer_default_blocks_hold_65536_records() {
    let refs: Vec<Ref> = (0..2 * 65536 + 7u64).map(|i| (MemRef::load(i * 8, 8), i % 2)).collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.xlat");
    write_with_xlat(&path, &refs, &[], &json!({}), None);
    let t = decode_path(&path);
    assert_eq!(t.refs, refs);
    check_writer_blocks(&t, &refs, format::WRITER_BLOCK_RECORDS);
}

/// An empty stream is the header, an index with no entry and the footer: nothing else.
#[test]
fn empty_stream_is_header_index_footer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.xlat");
    let meta = json!({"program": "none"});
    write_with_xlat(&path, &[], &[], &meta, None);
    let t = decode_path(&path);
    assert!(t.blocks.is_empty() && t.refs.is_empty() && t.total_instructions == 0);
    let len = std::fs::metadata(&path).unwrap().len() as usize;
    assert_eq!(len, format::HEADER_LEN + t.meta_len + format::INDEX_HEADER_LEN + format::FOOTER_LEN);
    assert_eq!(t.meta_len, serde_json::to_vec(&meta).unwrap().len());
    // With no zstd frame to differ in, the independent encoder writes the very same bytes.
    assert_eq!(std::fs::read(&path).unwrap(), encode::file(&[], &[], &meta, &encode::Options::default()));
}

/// Addresses at both ends of the address space, deltas that wrap, ASID and size extremes,
/// the largest instruction count: every varint at its longest.
fn extremes() -> Vec<Ref> {
    let top = |size: u16| u64::MAX - (u64::from(size.max(1)) - 1);
    vec![
        (MemRef { asid: u16::MAX, ..MemRef::ifetch(top(1), 1) }, 0),
        (MemRef { asid: u16::MAX, ..MemRef::ifetch(0, 0) }, 1),
        (MemRef::load(top(65535), 65535), 2),
        (MemRef::store(0, 3), 0),
        (MemRef { asid: 1, ..MemRef::load(1 << 63, 64) }, 0),
        (MemRef::store(top(0), 0), u64::MAX - 3),
    ]
}

/// The extreme stream through xlat's writer and the independent decoder, in one block and
/// in blocks of one record (where every record starts from zero state).
#[test]
fn extremes_decode_from_xlat_files() {
    let dir = tempfile::tempdir().unwrap();
    for block in [1, 2, 65536] {
        let path = dir.path().join(format!("{block}.xlat"));
        write_with_xlat(&path, &extremes(), &[], &json!({}), Some(block));
        let t = decode_path(&path);
        assert_eq!(t.refs, extremes(), "blocks of {block}");
        assert_eq!(t.total_instructions, u64::MAX);
        check_writer_blocks(&t, &extremes(), block);
    }
}

/// `write_batch` places a batch's total as documented: +1 per fetch when the total is the
/// number of fetches, otherwise all of it on the first reference.
#[test]
fn write_batch_places_instructions_as_documented() {
    let refs = vec![MemRef::ifetch(0x1000, 4), MemRef::load(0x2000, 8), MemRef::ifetch(0x1004, 4), MemRef::store(0x2008, 8)];
    let cases: [(u64, [u64; 4]); 3] = [(2, [1, 0, 1, 0]), (5, [5, 0, 0, 0]), (0, [0, 0, 0, 0])];
    let dir = tempfile::tempdir().unwrap();
    for (total, deltas) in cases {
        let path = dir.path().join(format!("{total}.xlat"));
        let mut w = NativeWriter::create(&path, &json!({})).unwrap();
        w.write_batch(&Batch::new(refs.clone(), total)).unwrap();
        w.finish().unwrap();
        let got: Vec<u64> = decode_path(&path).refs.iter().map(|(_, d)| *d).collect();
        assert_eq!(got, deltas, "batch total {total}");
    }
}

/// A batch without references passes its instructions on to the next reference written
/// (with its own count, placed as for any batch); at the end, with no reference to take
/// them, they are dropped. (trace_errors.rs checks that carried counts past 2^64 - 1 are
/// refused.)
#[test]
fn empty_batches_carry_instructions_to_the_next_reference() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.xlat");
    let mut w = NativeWriter::create(&path, &json!({})).unwrap();
    w.write_batch(&Batch::new(vec![], 3)).unwrap();
    w.write_batch(&Batch::new(vec![MemRef::load(0x2000, 8), MemRef::ifetch(0x1000, 4)], 1)).unwrap();
    w.write_batch(&Batch::new(vec![], 2)).unwrap();
    w.write(&MemRef::store(0x2000, 8), 5).unwrap();
    w.write_batch(&Batch::new(vec![], 7)).unwrap();
    w.finish().unwrap();
    let t = decode_path(&path);
    assert_eq!(t.refs.iter().map(|(_, d)| *d).collect::<Vec<_>>(), [3, 1, 7]);
    assert_eq!(t.total_instructions, 11);
}

/// `create_with_room` pads the metadata with spaces; `finish_with_metadata` rewrites it in
/// the same `meta_len` bytes, so that the blocks stay where they are.
#[test]
fn metadata_room_is_spaces() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.xlat");
    let (first, last) = (json!({"program": "p"}), json!({"program": "p", "stopped": "limit"}));
    let refs = extremes();
    let mut w = NativeWriter::create_with_room(&path, &first, 100).unwrap().with_block_records(4);
    for (r, d) in &refs {
        w.write(r, *d).unwrap();
    }
    w.finish_with_metadata(&last).unwrap();
    let t = decode_path(&path);
    assert_eq!(t.metadata, last);
    assert_eq!(t.meta_len, serde_json::to_vec(&first).unwrap().len() + 100);
    assert_eq!(t.padding, t.meta_len - serde_json::to_vec(&last).unwrap().len());
    assert_eq!(t.refs, refs);
}

// ---------------------------------------------------------------------------------------------
// Files encoded here, read by xlat.

/// Reads `bytes`, encoded here from `refs`, `events` and `meta` with `o`, with xlat's reader,
/// which must accept them exactly when the independent decoder does, and then give back the
/// same stream, totals and metadata. The only rule the encoder can break is the bound on
/// `raw_len` per record, with longer varint forms; returns whether the file was valid.
fn check_xlat_reads(bytes: Vec<u8>, refs: &[Ref], events: &[Event], meta: &Value, o: &encode::Options) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.xlat");
    let decoded = decode::file(&bytes);
    std::fs::write(&path, bytes).unwrap();
    let read = read_with_xlat(&path);
    match decoded {
        Ok(t) => {
            assert_eq!((&t.refs[..], &t.events[..]), (refs, events), "the encoder disagrees with the decoder: {o:?}");
            let expected = XlatView {
                metadata: meta.clone(),
                records: refs.len() as u64,
                instructions: refs.iter().map(|(_, d)| d).sum(),
                blocks: t.blocks.len(),
                refs: refs.to_vec(),
                events: events.to_vec(),
            };
            assert_eq!(read.unwrap_or_else(|e| panic!("{o:?}: {e}")), expected, "{o:?}");
            true
        }
        Err(e) => {
            assert!(o.long_varints > 0 && e.contains("raw_len"), "the encoder wrote an invalid file: {e}; {o:?}");
            assert!(read.is_err(), "xlat reads a file with {e}; {o:?}");
            false
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Files encoded from the document, in every variant the encoder knows, read back through
    /// xlat's reader to the same stream, totals and metadata, or are rejected by both.
    #[test]
    fn independent_files_read_with_xlat(refs in stream(400), meta in metadata(), o in options()) {
        check_xlat_reads(encode::file(&refs, &[], &meta, &o), &refs, &[], &meta, &o);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Files with events encoded from the document, in every variant the encoder knows, read
    /// back through xlat's reader to the same references and events.
    #[test]
    fn independent_files_with_events_read_with_xlat((refs, events) in stream_with_events(300, 30), meta in metadata(), o in options()) {
        let o = encode::Options { version: format::VERSION, ..o };
        prop_assert!(check_xlat_reads(encode::file(&refs, &events, &meta, &o), &refs, &events, &meta, &o));
    }
}

/// The extreme stream encoded here in every variant, as version 1: the shortest varint forms
/// and the explicit forms always read back; longer varint forms do while blocks stay within
/// 27 bytes per record, and are rejected beyond.
#[test]
fn extremes_read_from_independent_files() {
    let variants = [(false, 0, 1, true), (true, 0, 1, true), (true, 0, 6, true), (false, 1, 6, true), (true, 9, 6, false)];
    for (explicit, long_varints, block_records, valid) in variants {
        let version = format::VERSION_1;
        let o = encode::Options { explicit, long_varints, block_records, version, ..encode::Options::default() };
        let ok = check_xlat_reads(encode::file(&extremes(), &[], &json!({}), &o), &extremes(), &[], &json!({}), &o);
        assert_eq!(ok, valid, "{o:?}");
    }
}

/// xlat detects a file encoded here as native, by its magic, whatever its name.
#[test]
fn independent_files_are_detected_as_native() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.lackey");
    std::fs::write(&path, encode::file(&extremes(), &[], &json!({}), &encode::Options::default())).unwrap();
    assert_eq!(xlat::trace::detect(&path).unwrap(), xlat::trace::TraceFormat::Native);
}

// ---------------------------------------------------------------------------------------------
// Files that probe the document's rules one at a time.

/// A file whose one block holds `body` as `records` records, in one frame with checksum.
fn one_block_file(body: &[u8], records: u32, instructions: u64) -> Vec<u8> {
    let block = encode::RawBlock::raw(body, records, instructions, encode::compress(body, 3, true));
    encode::assemble(encode::header(b"{}"), &[block])
}

/// A valid load of 1 byte at 0 with every varint form (instruction count 0, ASID 0, size 1),
/// taking 1 + `long` × 3 + `delta` bytes, `long` and `delta` at most 10.
fn long_record(long: usize, delta: usize) -> Vec<u8> {
    let mut record = vec![format::INSTR_VARINT << 2 | format::ASID_BIT | format::SIZE_VARINT << 5];
    for (value, len) in [(0, long), (0, long), (1, long), (0, delta)] {
        format::put_varint(&mut record, value, len - 1);
    }
    record
}

/// `frame` with its content checksum (its last 4 bytes) changed.
fn corrupt_checksum(mut frame: Vec<u8>) -> Vec<u8> {
    *frame.last_mut().expect("a frame") ^= 1;
    frame
}

/// A skippable zstd frame (RFC 8878 section 3.1.2) of `n` zero bytes.
fn skippable_frame(n: u32) -> Vec<u8> {
    let mut frame = 0x184D_2A50u32.to_le_bytes().to_vec();
    frame.extend(n.to_le_bytes());
    frame.resize(frame.len() + n as usize, 0);
    frame
}

/// Files that bend one rule of the document, or probe a point it could leave open, with the
/// stream of [`extremes`] or a one-record body, and whether the document allows them.
fn edge_files() -> Vec<(&'static str, bool, Vec<u8>)> {
    use encode::{assemble, compress, header, RawBlock};
    let (refs, o) = (extremes(), encode::Options::default());
    let (body, instructions) = encode::records(&refs, &[], &o);
    let n = refs.len() as u32;
    let with_frame = |frame: Vec<u8>| assemble(header(b"{}"), &[RawBlock::raw(&body, n, instructions, frame)]);
    let with_meta = |meta: &[u8]| assemble(header(meta), &[RawBlock::of(&refs, &[], &o)]);
    // A load of 8 bytes at 8, and event tables: entries of position, ASID, operation, start
    // and length, `long` redundant zero groups on every varint.
    let load = [0x60, 16];
    let table = |entries: &[[u64; 5]], long: usize| {
        let mut table = vec![format::EVENT_TABLE_TAG];
        format::put_varint(&mut table, entries.len() as u64, long);
        entries.iter().flatten().for_each(|&v| format::put_varint(&mut table, v, long));
        table
    };
    let map = |at: u64| [at, 0, 0, 0x1000, 4096];
    // One block of one load after `table`.
    let with_load = |table: Vec<u8>| one_block_file(&[&table[..], &load[..]].concat(), 1, 0);
    let events_alone = |count: usize| {
        let body = table(&vec![map(0); count], 0);
        RawBlock::raw(&body, 0, 0, compress(&body, 3, true))
    };
    let (head, tail) = body.split_at(body.len() / 2);
    let header_field = |at: usize, value: u8| {
        let mut file = with_meta(b"{}");
        file[at] = value;
        file
    };
    vec![
        ("valid", true, with_meta(b"{}")),
        ("version 1", true, header_field(8, 1)),
        ("version 3", false, header_field(8, 3)),
        ("flag bit 0", false, header_field(10, 1)),
        ("metadata padded with spaces", true, with_meta(b"{}    ")),
        // JSON text may have whitespace around its value.
        ("metadata padded with a newline", true, with_meta(b"{}\n")),
        ("metadata after a space", true, with_meta(b" {}")),
        ("empty metadata", false, with_meta(b"")),
        ("metadata of spaces", false, with_meta(b"   ")),
        ("metadata not UTF-8", false, with_meta(b"\"\xff\"")),
        ("metadata not JSON", false, with_meta(b"{")),
        // The writer writes one frame with a checksum; readers take any zstd data.
        ("frame without checksum", true, with_frame(compress(&body, 3, false))),
        ("frame with a corrupt checksum", false, with_frame(corrupt_checksum(compress(&body, 3, true)))),
        ("two frames", true, with_frame([compress(head, 3, true), compress(tail, 3, true)].concat())),
        ("skippable frame after the frame", true, with_frame([compress(&body, 3, true), skippable_frame(0)].concat())),
        ("skippable frame before the frame", true, with_frame([skippable_frame(0), compress(&body, 3, true)].concat())),
        ("block of no record", false, assemble(header(b"{}"), &[RawBlock::raw(&[], 0, 0, compress(&[], 3, true))])),
        // Longer varint forms are valid while the block stays within 27 bytes per record,
        // and in version 2 the room for events.
        ("a record of 27 bytes with long varints", true, version_1(one_block_file(&long_record(8, 2), 1, 0))),
        ("a record of 28 bytes with long varints", false, version_1(one_block_file(&long_record(8, 3), 1, 0))),
        ("a record of 28 bytes with long varints, version 2", true, one_block_file(&long_record(8, 3), 1, 0)),
        ("kind 3", false, version_1(one_block_file(&[3, 0], 1, 0))),
        ("instruction code 3", false, one_block_file(&[3 << 2, 0], 1, 0)),
        ("ASID 65536", false, one_block_file(&[format::ASID_BIT, 0x80, 0x80, 0x04, 0], 1, 0)),
        ("size 65536", false, one_block_file(&[format::SIZE_VARINT << 5, 0x80, 0x80, 0x04, 0], 1, 0)),
        ("2 bytes at 2^64 - 1", false, one_block_file(&[1 << 5, 1], 1, 0)),
        ("a byte after the records", false, one_block_file(&[0, 0, 0], 1, 0)),
        ("instruction count off by one", false, one_block_file(&[1 << 2, 0], 1, 0)),
        // Address-space events.
        ("an event before a reference", true, with_load(table(&[map(0)], 0))),
        ("an event after the last reference", true, with_load(table(&[map(1)], 0))),
        ("events at one place", true, with_load(table(&[map(1), map(1)], 0))),
        ("an event table in version 1", false, version_1(with_load(table(&[map(0)], 0)))),
        ("an event table after a record", false, one_block_file(&[&load[..], &table(&[map(1)], 0)].concat(), 1, 0)),
        ("an unmap event of ASID 65535 with long varints", true, with_load(table(&[[1, 65535, 1, 0, 1]], 2))),
        ("an event placed past the block's references", false, with_load(table(&[map(2)], 0))),
        ("events out of order", false, with_load(table(&[map(1), map(0)], 0))),
        ("an event table of no event", false, with_load(table(&[], 0))),
        ("an event of operation 2", false, with_load(table(&[[0, 0, 2, 0x1000, 4096]], 0))),
        ("an event of ASID 65536", false, with_load(table(&[[0, 65536, 0, 0x1000, 4096]], 0))),
        ("an event of an empty range", false, with_load(table(&[[0, 0, 0, 0x1000, 0]], 0))),
        ("an event ending at 2^64 - 1", true, with_load(table(&[[0, 0, 1, u64::MAX - 4095, 4096]], 0))),
        ("an event past 2^64 - 1", false, with_load(table(&[[0, 0, 1, u64::MAX - 4095, 4097]], 0))),
        ("an event table cut by the end of the block", false, assemble(header(b"{}"), &[{
            let body = &table(&[map(0)], 0)[..5];
            RawBlock::raw(body, 0, 0, compress(body, 3, true))
        }])),
        ("65536 events in a block", true, with_load(table(&vec![map(1); 65536], 0))),
        ("65537 events in a block", false, with_load(table(&vec![map(1); 65537], 0))),
        ("a last block of events alone", true, assemble(header(b"{}"), &[RawBlock::of(&refs, &[], &o), events_alone(3)])),
        ("a block of events alone before the last", false, assemble(header(b"{}"), &[events_alone(3), RawBlock::of(&refs, &[], &o)])),
        ("a trace of events alone", true, assemble(header(b"{}"), &[events_alone(1)])),
        ("a trace of events alone, version 1", false, version_1(assemble(header(b"{}"), &[events_alone(1)]))),
    ]
}

/// `file` with version 1 in its header.
fn version_1(mut file: Vec<u8>) -> Vec<u8> {
    file[8..10].copy_from_slice(&format::VERSION_1.to_le_bytes());
    file
}

/// The independent decoder and xlat's reader accept exactly the files the document allows.
#[test]
fn xlat_accepts_what_the_document_allows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.xlat");
    let mut wrong = Vec::new();
    for (name, valid, bytes) in edge_files() {
        let spec = decode::file(&bytes);
        std::fs::write(&path, bytes).unwrap();
        let xlat = read_with_xlat(&path);
        if spec.is_ok() != valid || xlat.is_ok() != valid {
            wrong.push(format!("{name}: valid {valid}, decoder {:?}, xlat {:?}", spec.err(), xlat.err().map(|e| e.to_string())));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}
