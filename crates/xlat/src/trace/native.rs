//! The native trace format: layout constants and the writer. The layout is specified in
//! `docs/trace-format.md`; the reader is [`super::NativeReader`].

use super::block::{BlockEncoder, MAX_BLOCK_EVENTS, MAX_BLOCK_RECORDS};
use super::io::Compression;
use crate::atomic::{persist, temp_for};
use crate::memref::{past_top, AccessKind, AddressSpaceEvent, Batch, MemRef};
use crate::{Error, Result};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use tempfile::NamedTempFile;

/// First 8 bytes of every native trace.
pub const MAGIC: &[u8; 8] = b"XLATTRC\0";
/// Last 8 bytes of every complete native trace (absent when the writer did not finish).
pub const END_MAGIC: &[u8; 8] = b"XLATEND\0";
/// Start of the index in the trailer.
pub(crate) const INDEX_MAGIC: &[u8; 8] = b"XLATIDX\0";
/// The format version this code writes. It reads this one and version 1, which is version 2
/// without address-space events.
pub const VERSION: u16 = 2;
/// Magic, version, flags, metadata length.
pub(crate) const HEADER_FIXED: usize = 16;
/// The longest metadata (JSON and padding) a native trace may hold: 16 MiB, far more than a
/// program's name and arguments need, and a bound on what a reader allocates for it.
pub const MAX_METADATA: usize = 16 << 20;
/// Record count (u32), uncompressed length (u32), compressed length (u32), instructions (u64).
pub(crate) const BLOCK_HEADER: usize = 20;
/// Index magic, block count, total records, total instructions.
pub(crate) const INDEX_FIXED: usize = 32;
/// Offset, first record, record count, instructions: four u64 per block.
pub(crate) const INDEX_ENTRY: usize = 32;
/// Index offset (u64) and end magic.
pub(crate) const FOOTER: usize = 16;
/// Records per block written by default: large enough for zstd to find redundancy, small
/// enough (about 200 KiB decoded) to stay in cache while decoding.
pub const DEFAULT_BLOCK_RECORDS: u32 = 1 << 16;
/// zstd level: measured on the bench streams, level 1 decodes about 7% faster than 3 or 9
/// for files about 3% larger; negative (fast) levels are both larger and slower to decode.
const ZSTD_LEVEL: i32 = 1;

/// One entry of the block index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IndexEntry {
    /// File offset of the block header.
    pub offset: u64,
    /// Number of the block's first record in the whole trace (0-based).
    pub first_record: u64,
    /// Records (references) in the block; 0 for a last block holding events alone.
    pub records: u64,
    /// Instructions retired over the block.
    pub instructions: u64,
}

/// Writes a native trace; see the module documentation.
///
/// Nothing is visible at `path` until [`NativeWriter::finish`] succeeds: data goes to a
/// temporary file in the same directory, renamed into place at the end.
pub struct NativeWriter {
    path: PathBuf,
    out: BufWriter<NamedTempFile>,
    offset: u64,
    block_records: u32,
    enc: BlockEncoder,
    compressor: zstd::bulk::Compressor<'static>,
    zbuf: Vec<u8>,
    index: Vec<IndexEntry>,
    records: u64,
    instructions: u64,
    /// Instructions of a batch that held no reference, carried to the next reference.
    carry: u64,
    /// Events written since the last reference (or the start).
    run: u32,
    /// Bytes of metadata in the header (JSON padded with spaces), for a final rewrite.
    meta_len: usize,
}

impl NativeWriter {
    /// Starts a trace at `path` whose header holds `metadata` (by convention a JSON object
    /// with keys such as `program`, `args`, `source`, `created_by`).
    pub fn create(path: impl AsRef<Path>, metadata: &serde_json::Value) -> Result<NativeWriter> {
        NativeWriter::create_with_room(path, metadata, 0)
    }

    /// [`NativeWriter::create`] with `room` spare bytes after the metadata (JSON allows
    /// trailing spaces), so that [`NativeWriter::finish_with_metadata`] can store facts
    /// known only at the end, such as how a recording stopped.
    ///
    /// A path ending in `.xz`, `.gz` or `.zst` is refused: the blocks are already
    /// zstd-compressed, and the reader needs the file itself, not a compressed stream of it.
    /// So is `-` ([`crate::atomic::check_output`]): the trace is written to a temporary file
    /// renamed into place at the end.
    pub fn create_with_room(path: impl AsRef<Path>, metadata: &serde_json::Value, room: usize) -> Result<NativeWriter> {
        let path = path.as_ref().to_path_buf();
        if Compression::from_extension(&path) != Compression::None {
            let ext = path.extension().unwrap_or_default().to_string_lossy();
            let why = format!("native traces are already compressed inside; name the file without .{ext}");
            return Err(Error::config(path.display().to_string(), why));
        }
        let io_err = |e| Error::io(&path, e);
        let mut meta = serde_json::to_vec(metadata).map_err(|e| Error::io(&path, e.into()))?;
        meta.resize(meta.len() + room, b' ');
        if meta.len() > MAX_METADATA {
            let why = format!("{} bytes, more than the {} MiB a native trace may hold", meta.len(), MAX_METADATA >> 20);
            return Err(Error::config(format!("{}: metadata", path.display()), why));
        }
        let meta_len = meta.len() as u32;
        let mut out = BufWriter::with_capacity(1 << 17, temp_for(&path)?);
        out.write_all(MAGIC).map_err(io_err)?;
        out.write_all(&VERSION.to_le_bytes()).map_err(io_err)?;
        out.write_all(&0u16.to_le_bytes()).map_err(io_err)?;
        out.write_all(&meta_len.to_le_bytes()).map_err(io_err)?;
        out.write_all(&meta).map_err(io_err)?;
        let mut compressor = zstd::bulk::Compressor::new(ZSTD_LEVEL).map_err(io_err)?;
        // The frame checksum makes a corrupt block fail in zstd rather than decode to garbage.
        compressor.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true)).map_err(io_err)?;
        Ok(NativeWriter {
            offset: (HEADER_FIXED + meta.len()) as u64,
            path,
            out,
            block_records: DEFAULT_BLOCK_RECORDS,
            enc: BlockEncoder::default(),
            compressor,
            zbuf: Vec::new(),
            index: Vec::new(),
            records: 0,
            instructions: 0,
            carry: 0,
            run: 0,
            meta_len: meta.len(),
        })
    }

    /// Sets the records per block (1 to [`MAX_BLOCK_RECORDS`]); small blocks are useful in
    /// tests.
    pub fn with_block_records(mut self, n: u32) -> NativeWriter {
        self.block_records = n.clamp(1, MAX_BLOCK_RECORDS);
        self
    }

    /// Appends one reference, `instr_delta` being the instructions retired since the previous
    /// reference (1 on the instruction fetch of each instruction, by convention). A reference
    /// whose last byte lies past 2^64 - 1, or an instruction count past 2^64 - 1, is an error:
    /// readers reject both.
    pub fn write(&mut self, r: &MemRef, instr_delta: u64) -> Result<()> {
        if past_top(r.vaddr, r.size) {
            return Err(self.reject("runs past the top of the 64-bit address space"));
        }
        // With the trace's total checked here, the block's sum cannot wrap either.
        let delta = instr_delta.checked_add(self.carry);
        let total = delta.and_then(|d| self.instructions.checked_add(self.enc.instructions)?.checked_add(d));
        let (Some(delta), Some(_)) = (delta, total) else {
            return Err(self.reject("the instruction count passes 2^64 - 1"));
        };
        self.carry = 0;
        self.run = 0;
        self.enc.push(r, delta);
        if self.enc.records >= self.block_records {
            self.flush_block()?;
        }
        Ok(())
    }

    /// Appends an address-space event, after the references written so far. An event that
    /// [`AddressSpaceEvent::malformed`] finds wrong is an error (readers reject it), and so
    /// are more than [`MAX_BLOCK_EVENTS`] events in a row: a run of events may span at most
    /// two blocks, as a block of events alone may only end a trace.
    pub fn write_event(&mut self, e: &AddressSpaceEvent) -> Result<()> {
        if let Some(why) = e.malformed() {
            return Err(self.reject_event(&format!("{why} (readers reject it)")));
        }
        if self.run == MAX_BLOCK_EVENTS {
            return Err(self.reject_event(&format!("more than {MAX_BLOCK_EVENTS} events in a row, which a native trace cannot hold")));
        }
        // The block is full of events. It holds references too (the run is shorter than
        // a block's events), so it may end here.
        if self.enc.events() == MAX_BLOCK_EVENTS {
            self.flush_block()?;
        }
        self.enc.push_event(e);
        self.run += 1;
        Ok(())
    }

    /// Appends a batch: its references, and its events where they stand among them. A batch
    /// carries only its total instruction count, so it is spread as follows: if it equals the
    /// number of instruction fetches, each fetch gets +1 (the Lackey/ChampSim convention,
    /// exact for those sources); otherwise the whole count goes on the batch's first
    /// reference. A batch without references passes its count on to the next reference
    /// written. Use [`NativeWriter::write`] to place counts exactly.
    pub fn write_batch(&mut self, batch: &Batch) -> Result<()> {
        let (refs, events) = (&batch.refs, &batch.events);
        let in_order = events.windows(2).all(|w| w[0].0 <= w[1].0) && events.last().is_none_or(|&(at, _)| at <= refs.len());
        if !in_order {
            let why = "a batch's events are out of order or placed past its references";
            return Err(Error::config(self.path.display().to_string(), why));
        }
        if refs.is_empty() {
            // Checked like any count: unchecked, the sum wrapped around to a wrong count in
            // release builds (and panicked in debug builds).
            let carry = self.carry.checked_add(batch.instructions);
            self.carry = carry.ok_or_else(|| self.reject("the instruction count passes 2^64 - 1"))?;
        }
        let per_fetch = refs.iter().filter(|r| r.kind == AccessKind::IFetch).count() as u64 == batch.instructions;
        let mut events = events.iter().peekable();
        for (i, r) in refs.iter().enumerate() {
            while let Some((_, e)) = events.next_if(|&&(at, _)| at == i) {
                self.write_event(e)?;
            }
            let delta = match (per_fetch, i) {
                (true, _) => u64::from(r.kind == AccessKind::IFetch),
                (false, 0) => batch.instructions,
                (false, _) => 0,
            };
            self.write(r, delta)?;
        }
        events.try_for_each(|(_, e)| self.write_event(e))
    }

    /// The error refusing the next reference (the one being written, or the one a batch
    /// without references carries its instructions to) because of `why`.
    fn reject(&self, why: &str) -> Error {
        let index = self.records + u64::from(self.enc.records);
        Error::config(self.path.display().to_string(), format!("reference {index}: {why} (readers reject it)"))
    }

    /// The error refusing an address-space event because of `why`.
    fn reject_event(&self, why: &str) -> Error {
        let index = self.records + u64::from(self.enc.records);
        Error::config(self.path.display().to_string(), format!("address-space event before reference {index}: {why}"))
    }

    /// Compresses and writes the current block, if it holds any reference or event.
    fn flush_block(&mut self) -> Result<()> {
        if self.enc.records == 0 && self.enc.events() == 0 {
            return Ok(());
        }
        let io_err = |e| Error::io(&self.path, e);
        let body = self.enc.body();
        self.zbuf.clear();
        self.zbuf.reserve(zstd::zstd_safe::compress_bound(body.len()));
        self.compressor.compress_to_buffer(body, &mut self.zbuf).map_err(io_err)?;
        let raw_len = u32::try_from(body.len()).expect("blocks hold a bounded number of records and events");
        let mut header = [0u8; BLOCK_HEADER];
        header[0..4].copy_from_slice(&self.enc.records.to_le_bytes());
        header[4..8].copy_from_slice(&raw_len.to_le_bytes());
        header[8..12].copy_from_slice(&(self.zbuf.len() as u32).to_le_bytes());
        header[12..20].copy_from_slice(&self.enc.instructions.to_le_bytes());
        self.out.write_all(&header).map_err(io_err)?;
        self.out.write_all(&self.zbuf).map_err(io_err)?;
        self.index.push(IndexEntry {
            offset: self.offset,
            first_record: self.records,
            records: u64::from(self.enc.records),
            instructions: self.enc.instructions,
        });
        self.offset += (BLOCK_HEADER + self.zbuf.len()) as u64;
        self.records += u64::from(self.enc.records);
        self.instructions += self.enc.instructions;
        self.enc.reset();
        Ok(())
    }

    /// Writes the last block and the trailer, then renames the file into place.
    /// Instructions carried by trailing empty batches, with no reference to attach to, are
    /// dropped; events after the last reference are kept (in a last block of events alone
    /// when the block before is full).
    pub fn finish(self) -> Result<()> {
        self.finish_inner(None)
    }

    /// [`NativeWriter::finish`], replacing the header's metadata with `metadata`, which must
    /// fit in the bytes reserved by [`NativeWriter::create_with_room`].
    pub fn finish_with_metadata(self, metadata: &serde_json::Value) -> Result<()> {
        self.finish_inner(Some(metadata))
    }

    fn finish_inner(mut self, metadata: Option<&serde_json::Value>) -> Result<()> {
        let meta = match metadata {
            Some(m) => {
                let mut meta = serde_json::to_vec(m).map_err(|e| Error::io(&self.path, e.into()))?;
                if meta.len() > self.meta_len {
                    let why = format!("{} bytes do not fit in the {} reserved", meta.len(), self.meta_len);
                    return Err(Error::config("metadata", why));
                }
                meta.resize(self.meta_len, b' ');
                Some(meta)
            }
            None => None,
        };
        self.flush_block()?;
        let mut t = Vec::with_capacity(INDEX_FIXED + INDEX_ENTRY * self.index.len() + FOOTER);
        t.extend_from_slice(INDEX_MAGIC);
        for v in [self.index.len() as u64, self.records, self.instructions] {
            t.extend_from_slice(&v.to_le_bytes());
        }
        for e in &self.index {
            for v in [e.offset, e.first_record, e.records, e.instructions] {
                t.extend_from_slice(&v.to_le_bytes());
            }
        }
        t.extend_from_slice(&self.offset.to_le_bytes());
        t.extend_from_slice(END_MAGIC);
        let path = self.path;
        self.out.write_all(&t).map_err(|e| Error::io(&path, e))?;
        let mut tmp = self.out.into_inner().map_err(|e| Error::io(&path, e.into_error()))?;
        if let Some(meta) = meta {
            use std::io::{Seek, SeekFrom};
            let file = tmp.as_file_mut();
            file.seek(SeekFrom::Start(HEADER_FIXED as u64)).and_then(|_| file.write_all(&meta)).map_err(|e| Error::io(&path, e))?;
        }
        persist(tmp, &path)
    }
}
