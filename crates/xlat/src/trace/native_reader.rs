//! Reader of the native trace format (layout in `docs/trace-format.md`).
//!
//! Opening validates header, footer and index before any record is produced, so a truncated
//! or unfinished file fails at once. Blocks are then loaded ahead on a background thread
//! ([`Prefetcher`]) and decoded here with a cursor, so `fill` can stop after any record.

use super::block::{BlockCursor, DecodeError, MAX_BLOCK_EVENTS, MAX_BLOCK_RECORDS};
use super::blocks::{LoadedBlock, Prefetcher};
use super::io::{read_at, recorded_path, u16_at, u32_at, u64_at};
use super::native::*;
use crate::memref::Batch;
use crate::source::RefSource;
use crate::{Error, Result};
use std::fs::File;
use std::path::{Path, PathBuf};

/// Streams the references of a native trace, and its address-space events; see the module
/// documentation.
///
/// `fill` puts each event in the batch before the reference it precedes. The events after a
/// fill's last reference come with that fill when they are in its block (always so at the
/// end of the trace), else with the next; so the events after the trace's last reference come
/// with it, and only a trace of events alone gives its events with the fill that returns 0. A
/// fill stops early, after a reference, once it holds [`MAX_BLOCK_EVENTS`] events, which
/// bounds what it allocates.
pub struct NativeReader {
    path: PathBuf,
    file: File,
    file_size: u64,
    metadata: serde_json::Value,
    /// The file may hold address-space events (version 2).
    events: bool,
    index: Vec<IndexEntry>,
    index_offset: u64,
    total_records: u64,
    total_instructions: u64,
    /// Index of the next block to load.
    next_block: usize,
    /// Records not yet decoded in the loaded block.
    left: u64,
    cursor: BlockCursor,
    /// The block being decoded (body followed by zero padding for the decoder's fast path).
    block: LoadedBlock,
    /// Started on the first read, so opening a trace to inspect it costs no thread.
    prefetcher: Option<Prefetcher>,
    /// Set after an error, so a caller that goes on reading gets errors, not a skewed stream.
    failed: bool,
}

impl NativeReader {
    /// Opens `path` and validates its header, footer and block index.
    pub fn open(path: impl AsRef<Path>) -> Result<NativeReader> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path).map_err(|e| Error::io(&path, e))?;
        let file_size = file.metadata().map_err(|e| Error::io(&path, e))?.len();
        let mut r = NativeReader {
            path,
            file,
            file_size,
            metadata: serde_json::Value::Null,
            events: false,
            index: Vec::new(),
            index_offset: 0,
            total_records: 0,
            total_instructions: 0,
            next_block: 0,
            left: 0,
            cursor: BlockCursor::default(),
            block: LoadedBlock { raw: Vec::new(), len: 0 },
            prefetcher: None,
            failed: false,
        };
        let header_end = r.read_header()?;
        r.read_trailer(header_end)?;
        Ok(r)
    }

    /// The metadata object stored in the header.
    pub fn metadata(&self) -> &serde_json::Value {
        &self.metadata
    }

    /// Total references in the trace.
    pub fn records(&self) -> u64 {
        self.total_records
    }

    /// Total instructions retired over the trace.
    pub fn instructions(&self) -> u64 {
        self.total_instructions
    }

    /// Number of blocks.
    pub fn blocks(&self) -> usize {
        self.index.len()
    }

    fn err(&self, offset: u64, message: impl Into<String>) -> Error {
        Error::AtOffset { path: self.path.clone(), offset, message: message.into() }
    }

    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<()> {
        read_at(&mut self.file, &self.path, offset, buf)
    }

    /// Reads and checks the fixed header and the metadata; returns the offset just past them.
    fn read_header(&mut self) -> Result<u64> {
        let mut fixed = [0u8; HEADER_FIXED];
        let got = super::io::read_full(&mut self.file, &mut fixed).map_err(|e| Error::io(&self.path, e))?;
        check_magic(&fixed[..got]).map_err(|(at, why)| self.err(at, why))?;
        if got < HEADER_FIXED {
            return Err(self.err(got as u64, "file truncated inside the header"));
        }
        let version = u16_at(&fixed, 8);
        if version != 1 && version != VERSION {
            return Err(self.err(8, format!("unsupported format version {version} (this reader knows 1 and {VERSION})")));
        }
        self.events = version >= 2;
        let flags = u16_at(&fixed, 10);
        if flags != 0 {
            return Err(self.err(10, format!("unknown header flags {flags:#06x}")));
        }
        let meta_len = u64::from(u32_at(&fixed, 12));
        // Checked before the metadata is read into memory: the field alone could ask for 4 GiB.
        if meta_len > MAX_METADATA as u64 {
            let why = format!("metadata length {meta_len} is more than the {} MiB a native trace may hold", MAX_METADATA >> 20);
            return Err(self.err(12, why));
        }
        let header_end = HEADER_FIXED as u64 + meta_len;
        if header_end + (INDEX_FIXED + FOOTER) as u64 > self.file_size {
            return Err(self.err(self.file_size, "file truncated: shorter than header, metadata and trailer"));
        }
        let mut meta = vec![0u8; meta_len as usize];
        self.read_at(HEADER_FIXED as u64, &mut meta)?;
        self.metadata = serde_json::from_slice(&meta)
            .map_err(|e| self.err(HEADER_FIXED as u64, format!("metadata is not valid JSON: {e}")))?;
        Ok(header_end)
    }

    /// Reads the footer and the index, checking that they describe a consistent file. The
    /// index is read a chunk at a time, each entry checked as it comes, and the fixed part
    /// first: a damaged length or count must not make the reader allocate what the file
    /// does not hold.
    fn read_trailer(&mut self, header_end: u64) -> Result<()> {
        let index_offset = self.read_footer(header_end)?;
        let (count, total_records, total_instructions) = self.read_index_head(header_end, index_offset)?;
        let mut check =
            IndexCheck { header_end, index_offset, count, events: self.events, records: 0, instructions: 0, next_offset: header_end };
        let mut chunk = vec![0u8; INDEX_ENTRY * INDEX_CHUNK];
        let mut i = 0;
        while i < count {
            let n = (count - i).min(INDEX_CHUNK as u64) as usize;
            let at = index_offset + (INDEX_FIXED as u64) + i * INDEX_ENTRY as u64;
            self.read_at(at, &mut chunk[..n * INDEX_ENTRY])?;
            let bad = |m: String| Error::AtOffset { path: self.path.clone(), offset: index_offset, message: m };
            self.index.try_reserve(n).map_err(|_| bad(format!("cannot allocate memory for an index of {count} blocks")))?;
            for e in chunk[..n * INDEX_ENTRY].chunks_exact(INDEX_ENTRY) {
                let entry = IndexEntry {
                    offset: u64_at(e, 0),
                    first_record: u64_at(e, 8),
                    records: u64_at(e, 16),
                    instructions: u64_at(e, 24),
                };
                check.entry(i, &entry).map_err(bad)?;
                self.index.push(entry);
                i += 1;
            }
        }
        if check.records != total_records || check.instructions != total_instructions {
            return Err(self.err(index_offset, "index totals do not match its blocks"));
        }
        self.index_offset = index_offset;
        self.total_records = total_records;
        self.total_instructions = total_instructions;
        Ok(())
    }

    /// Reads the footer; returns the index offset it gives, checked to lie between the
    /// metadata and the footer.
    fn read_footer(&mut self, header_end: u64) -> Result<u64> {
        let footer_at = self.file_size - FOOTER as u64;
        let mut footer = [0u8; FOOTER];
        self.read_at(footer_at, &mut footer)?;
        if &footer[8..] != END_MAGIC {
            return Err(self.err(footer_at + 8, "no end marker: the file is truncated or its writer did not finish"));
        }
        let index_offset = u64_at(&footer, 0);
        if index_offset < header_end || index_offset.saturating_add(INDEX_FIXED as u64) > footer_at {
            return Err(self.err(footer_at, format!("index offset {index_offset} is out of range")));
        }
        Ok(index_offset)
    }

    /// Reads the fixed part of the index at `index_offset`; returns its block count, total
    /// records and total instructions, the count checked against the index's length and
    /// against the bytes of blocks before it.
    fn read_index_head(&mut self, header_end: u64, index_offset: u64) -> Result<(u64, u64, u64)> {
        let mut head = [0u8; INDEX_FIXED];
        self.read_at(index_offset, &mut head)?;
        let bad = |m: String| self.err(index_offset, m);
        if &head[..8] != INDEX_MAGIC {
            return Err(bad("corrupt block index (bad magic)".into()));
        }
        let count = u64_at(&head, 8);
        let len = self.file_size - FOOTER as u64 - index_offset;
        if Some(len) != count.checked_mul(INDEX_ENTRY as u64).and_then(|n| n.checked_add(INDEX_FIXED as u64)) {
            return Err(bad(format!("corrupt block index: {len} bytes long, not {INDEX_FIXED} + {INDEX_ENTRY} per block for its {count} blocks")));
        }
        // Each block takes its header and at least one byte of frame.
        let body = index_offset - header_end;
        if count > body / (BLOCK_HEADER as u64 + 1) {
            return Err(bad(format!("corrupt block index: {count} blocks cannot fit in the {body} bytes before it")));
        }
        if count == 0 && body != 0 {
            return Err(bad("index lists no block but the body is not empty".into()));
        }
        Ok((count, u64_at(&head, 16), u64_at(&head, 24)))
    }

    /// Takes the next block from the prefetcher; false at the end of the trace.
    fn load_block(&mut self) -> Result<bool> {
        if self.next_block == self.index.len() {
            return Ok(false);
        }
        if self.prefetcher.is_none() {
            self.prefetcher = Some(Prefetcher::start(&self.path, self.index.clone(), self.index_offset, self.events)?);
        }
        let prefetcher = self.prefetcher.as_mut().expect("started above");
        let loaded = prefetcher.next().ok_or_else(|| Error::Simulation("trace block loader stopped".into()))??;
        prefetcher.recycle(std::mem::replace(&mut self.block, loaded).raw);
        self.left = self.index[self.next_block].records;
        self.next_block += 1;
        self.cursor = BlockCursor::new(&self.block.raw, self.block.len, self.left, self.events).map_err(|e| self.decode_error(e))?;
        Ok(true)
    }

    /// After a block's last record: it must have used every byte and the header's count.
    fn check_block_end(&self) -> Result<()> {
        let b = self.next_block - 1;
        let entry = self.index[b];
        if self.cursor.pos != self.block.len || self.cursor.instructions != entry.instructions {
            return Err(self
                .err(entry.offset, format!("block {b}: records do not match the block length or instruction count")));
        }
        Ok(())
    }

    /// The error for a malformed record of the block being decoded.
    fn decode_error(&self, e: DecodeError) -> Error {
        let b = self.next_block - 1;
        let entry = self.index[b];
        let what = if e.event { "event table".to_string() } else { format!("record {}", entry.first_record + e.record) };
        self.err(entry.offset, format!("block {b}: {what}: {} (byte {} of the decompressed block)", e.message, e.pos))
    }

    fn fill_inner(&mut self, batch: &mut Batch, max: usize) -> Result<usize> {
        let (mut got, events_before) = (0, batch.events.len());
        loop {
            // After a reference, a block's worth of events is enough for one fill: with
            // compression, a small file could hold events by the billion.
            let full = got == max || (got > 0 && batch.events.len() - events_before >= MAX_BLOCK_EVENTS as usize);
            if self.left == 0 {
                // The block is done, its events with it. A last block of events alone is
                // read even when the batch is full, so that the events after the trace's
                // last reference come with it.
                let events_only = self.index.get(self.next_block).is_some_and(|e| e.records == 0);
                if (full && !events_only) || !self.load_block()? {
                    break;
                }
            } else if full {
                break;
            }
            let n = ((max - got) as u64).min(self.left) as usize;
            let instr = self.cursor.decode(&self.block.raw, self.block.len, batch, n).map_err(|e| self.decode_error(e))?;
            batch.instructions += instr;
            self.left -= n as u64;
            got += n;
            if self.left == 0 {
                self.check_block_end()?;
            }
        }
        Ok(got)
    }
}

/// Index entries read at a time: 128 KiB.
const INDEX_CHUNK: usize = 4096;

/// Checks that `head`, the first bytes of a file (up to 8), are the native magic. A proper
/// prefix of it is a native trace cut short, as [`super::detect`] takes it, not some other
/// file; the error gives the offset and what is wrong.
fn check_magic(head: &[u8]) -> std::result::Result<(), (u64, String)> {
    let head = &head[..head.len().min(MAGIC.len())];
    if head.is_empty() {
        return Err((0, "not a native xlat trace (empty file)".into()));
    }
    if !MAGIC.starts_with(head) {
        return Err((0, "not a native xlat trace (bad magic)".into()));
    }
    if head.len() < MAGIC.len() {
        return Err((head.len() as u64, "file truncated inside the magic (a native trace cut short)".into()));
    }
    Ok(())
}

/// The running checks of the index entries, in order.
struct IndexCheck {
    header_end: u64,
    index_offset: u64,
    /// Entries in the index.
    count: u64,
    /// The file may hold address-space events (version 2).
    events: bool,
    /// Records of the entries so far.
    records: u64,
    /// Instructions of the entries so far.
    instructions: u64,
    /// The lowest offset the next block may start at.
    next_offset: u64,
}

impl IndexCheck {
    /// Checks entry `i` after those before it; the error says what is wrong.
    fn entry(&mut self, i: u64, entry: &IndexEntry) -> std::result::Result<(), String> {
        // Blocks are contiguous, so each must start after the previous one's header and
        // end before the index; the exact end is checked when the block is read.
        let in_place = if i == 0 { entry.offset == self.header_end } else { entry.offset >= self.next_offset };
        if !in_place || entry.offset.saturating_add(BLOCK_HEADER as u64) > self.index_offset {
            return Err(format!("index entry {i}: block offset {} is out of place", entry.offset));
        }
        if entry.first_record != self.records {
            return Err(format!("index entry {i}: inconsistent record numbers"));
        }
        // A block of events alone ends a trace, so that a run of events spans at most two
        // blocks (its events then come in one fill).
        if entry.records == 0 && !(self.events && i + 1 == self.count) {
            let why = if self.events { "only the last block may hold no reference" } else { "a version 1 block must hold a reference" };
            return Err(format!("index entry {i}: no record: {why}"));
        }
        if entry.records > u64::from(MAX_BLOCK_RECORDS) {
            return Err(format!("index entry {i}: {} records, more than the {MAX_BLOCK_RECORDS} a block may hold", entry.records));
        }
        self.records += entry.records;
        self.instructions = self
            .instructions
            .checked_add(entry.instructions)
            .ok_or_else(|| format!("index entry {i}: the instruction count passes 2^64 - 1"))?;
        self.next_offset = entry.offset + BLOCK_HEADER as u64 + 1;
        Ok(())
    }
}

impl RefSource for NativeReader {
    fn fill(&mut self, batch: &mut Batch, max: usize) -> Result<usize> {
        if self.failed {
            return Err(self.err(0, "reading stopped at an earlier error"));
        }
        let r = self.fill_inner(batch, max);
        self.failed = r.is_err();
        r
    }

    fn identity(&self) -> serde_json::Value {
        serde_json::json!({
            "format": "native",
            "path": recorded_path(&self.path),
            "file_size": self.file_size,
            "records": self.total_records,
            "instructions": self.total_instructions,
            "blocks": self.index.len(),
            "metadata": self.metadata,
        })
    }

    fn len_hint(&self) -> Option<u64> {
        Some(self.total_records)
    }

    /// A trace records instruction counts when it was written with some.
    fn counts_instructions(&self) -> bool {
        self.total_instructions > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, SeekFrom, Write};

    /// The fixed header of a native trace whose metadata is `meta_len` bytes long.
    fn header(meta_len: u32) -> Vec<u8> {
        let mut h = MAGIC.to_vec();
        h.extend_from_slice(&VERSION.to_le_bytes());
        h.extend_from_slice(&0u16.to_le_bytes());
        h.extend_from_slice(&meta_len.to_le_bytes());
        h
    }

    /// The fixed part of an index: magic, block count and totals.
    fn index_head(count: u64, records: u64, instructions: u64) -> Vec<u8> {
        let mut h = INDEX_MAGIC.to_vec();
        [count, records, instructions].iter().for_each(|v| h.extend_from_slice(&v.to_le_bytes()));
        h
    }

    /// A file of `len` bytes at `path` holding each `(offset, bytes)` of `parts`, the rest a
    /// hole (sparse: a file of gigabytes takes no room), ending with a footer giving
    /// `index_offset`.
    fn sparse(path: &Path, len: u64, parts: &[(u64, Vec<u8>)], index_offset: u64) {
        let mut f = File::create(path).unwrap();
        f.set_len(len).unwrap();
        let mut footer = index_offset.to_le_bytes().to_vec();
        footer.extend_from_slice(END_MAGIC);
        for (at, bytes) in parts.iter().chain([&(len - FOOTER as u64, footer)]) {
            f.seek(SeekFrom::Start(*at)).unwrap();
            f.write_all(bytes).unwrap();
        }
    }

    /// The offset and message of the error opening `path` gives.
    fn open_error(path: &Path) -> (u64, String) {
        match NativeReader::open(path) {
            Err(Error::AtOffset { path: p, offset, message }) if p == path => (offset, message),
            Err(e) => panic!("expected an error at an offset of {}, got {e}", path.display()),
            Ok(_) => panic!("{} opened", path.display()),
        }
    }

    #[test]
    fn a_file_cut_inside_the_magic_is_a_truncated_native_trace() {
        let dir = tempfile::tempdir().unwrap();
        for n in 1..MAGIC.len() {
            // Named as Lackey: the content decides, as for a trace workload without a format.
            let p = dir.path().join("cut.lackey");
            std::fs::write(&p, &MAGIC[..n]).unwrap();
            assert_eq!(open_error(&p), (n as u64, "file truncated inside the magic (a native trace cut short)".into()));
            let detected = crate::trace::open(&p, None).err().expect("refused").to_string();
            assert!(detected.contains(&format!("cut.lackey: at byte offset {n}: file truncated inside the magic")), "{detected}");
        }
        let p = dir.path().join("other.xlat");
        std::fs::write(&p, b"XLAX").unwrap();
        assert_eq!(open_error(&p), (0, "not a native xlat trace (bad magic)".into()));
    }

    #[test]
    fn metadata_longer_than_the_maximum_is_refused_before_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("meta.xlat");
        let meta_len = MAX_METADATA as u32 + 1;
        sparse(&p, u64::from(meta_len) + 1024, &[(0, header(meta_len))], HEADER_FIXED as u64);
        let (offset, message) = open_error(&p);
        assert_eq!(offset, 12);
        assert!(message.contains("metadata length 16777217 is more than the 16 MiB a native trace may hold"), "{message}");
    }

    #[test]
    fn the_writer_refuses_metadata_readers_would_refuse() {
        let dir = tempfile::tempdir().unwrap();
        let big = serde_json::json!({ "args": "x".repeat(MAX_METADATA) });
        let err = NativeWriter::create(dir.path().join("w.xlat"), &big).err().expect("refused").to_string();
        assert!(err.contains("w.xlat: metadata") && err.contains("more than the 16 MiB"), "{err}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no temporary file left");
    }

    /// Opens a sparse file of `body` bytes of blocks (a hole) followed by an index that
    /// claims two blocks and is `entries` entries long; returns the index's offset and the
    /// error's offset and message.
    fn index_of_two_blocks_error(body: u64, entries: usize) -> (u64, u64, String) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("index.xlat");
        let mut h = header(2);
        h.extend_from_slice(b"{}");
        let index_offset = h.len() as u64 + body;
        let len = index_offset + (INDEX_FIXED + entries * INDEX_ENTRY + FOOTER) as u64;
        sparse(&p, len, &[(0, h), (index_offset, index_head(2, 2, 0))], index_offset);
        let (offset, message) = open_error(&p);
        (index_offset, offset, message)
    }

    #[test]
    fn an_index_of_more_blocks_than_the_body_holds_is_refused() {
        // 40 bytes of body hold at most one block (a header and a byte of frame: 21 bytes);
        // the index claims two, its length agreeing.
        let (index_offset, offset, message) = index_of_two_blocks_error(40, 2);
        assert_eq!(offset, index_offset);
        assert!(message.contains("2 blocks cannot fit in the 40 bytes before it"), "{message}");
    }

    #[test]
    fn an_index_whose_length_disagrees_with_its_count_is_refused() {
        let (index_offset, offset, message) = index_of_two_blocks_error(1000, 3);
        assert_eq!(offset, index_offset);
        assert!(message.contains("128 bytes long, not 32 + 32 per block for its 2 blocks"), "{message}");
    }

    #[test]
    fn a_frame_longer_than_zstd_needs_is_refused_before_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("zlen.xlat");
        let mut h = header(2);
        h.extend_from_slice(b"{}");
        let block_at = h.len() as u64;
        // One record of 2 bytes in a frame of 1 MiB (a hole): the lengths agree with the
        // index, but no zstd frame of 2 bytes takes that much.
        let zlen = 1u32 << 20;
        let mut block = Vec::new();
        [1u32, 2, zlen].iter().for_each(|v| block.extend_from_slice(&v.to_le_bytes()));
        block.extend_from_slice(&0u64.to_le_bytes());
        let index_offset = block_at + (BLOCK_HEADER as u64) + u64::from(zlen);
        let mut index = index_head(1, 1, 0);
        [block_at, 0, 1, 0].iter().for_each(|v| index.extend_from_slice(&v.to_le_bytes()));
        let len = index_offset + (index.len() + FOOTER) as u64;
        sparse(&p, len, &[(0, h), (block_at, block), (index_offset, index)], index_offset);
        let mut reader = NativeReader::open(&p).unwrap();
        let err = crate::source::collect(&mut reader).expect_err("refused").to_string();
        let want = format!("at byte offset {block_at}: block 0: compressed length 1048576 is more than zstd needs for 2 bytes");
        assert!(err.contains("zlen.xlat") && err.contains(&want), "{err}");
    }
}
