//! Reader of the native trace format (layout in `docs/trace-format.md`).
//!
//! Opening validates header, footer and index before any record is produced, so a truncated
//! or unfinished file fails at once. Blocks are then loaded ahead on a background thread
//! ([`Prefetcher`]) and decoded here with a cursor, so `fill` can stop after any record.

use super::block::{BlockCursor, MAX_BLOCK_RECORDS};
use super::blocks::{LoadedBlock, Prefetcher};
use super::io::{read_at, u16_at, u32_at, u64_at};
use super::native::*;
use crate::memref::Batch;
use crate::source::RefSource;
use crate::{Error, Result};
use std::fs::File;
use std::path::{Path, PathBuf};

/// Streams the references of a native trace; see the module documentation.
pub struct NativeReader {
    path: PathBuf,
    file: File,
    file_size: u64,
    metadata: serde_json::Value,
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
        if got < MAGIC.len() || &fixed[..8] != MAGIC {
            let what = if got == 0 { "empty file" } else { "bad magic" };
            return Err(self.err(0, format!("not a native xlat trace ({what})")));
        }
        if got < HEADER_FIXED {
            return Err(self.err(got as u64, "file truncated inside the header"));
        }
        let version = u16_at(&fixed, 8);
        if version != VERSION {
            return Err(self.err(8, format!("unsupported format version {version} (this reader knows {VERSION})")));
        }
        let flags = u16_at(&fixed, 10);
        if flags != 0 {
            return Err(self.err(10, format!("unknown header flags {flags:#06x}")));
        }
        let meta_len = u64::from(u32_at(&fixed, 12));
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

    /// Reads the footer and the index, checking that they describe a consistent file.
    fn read_trailer(&mut self, header_end: u64) -> Result<()> {
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
        let mut idx = vec![0u8; (footer_at - index_offset) as usize];
        self.read_at(index_offset, &mut idx)?;
        let bad = |m: String| Error::AtOffset { path: self.path.clone(), offset: index_offset, message: m };
        let count = u64_at(&idx, 8);
        if &idx[..8] != INDEX_MAGIC
            || Some(idx.len() as u64)
                != count.checked_mul(INDEX_ENTRY as u64).and_then(|n| n.checked_add(INDEX_FIXED as u64))
        {
            return Err(bad("corrupt block index (bad magic or length)".into()));
        }
        let (total_records, total_instructions) = (u64_at(&idx, 16), u64_at(&idx, 24));
        let (mut records, mut instructions, mut next_offset) = (0u64, 0u64, header_end);
        for (i, e) in idx[INDEX_FIXED..].chunks_exact(INDEX_ENTRY).enumerate() {
            let entry = IndexEntry {
                offset: u64_at(e, 0),
                first_record: u64_at(e, 8),
                records: u64_at(e, 16),
                instructions: u64_at(e, 24),
            };
            // Blocks are contiguous, so each must start after the previous one's header and
            // end before the index; the exact end is checked when the block is read.
            let in_place = if i == 0 { entry.offset == header_end } else { entry.offset >= next_offset };
            if !in_place || entry.offset.saturating_add(BLOCK_HEADER as u64) > index_offset {
                return Err(bad(format!("index entry {i}: block offset {} is out of place", entry.offset)));
            }
            if entry.first_record != records || entry.records == 0 {
                return Err(bad(format!("index entry {i}: inconsistent record numbers")));
            }
            if entry.records > u64::from(MAX_BLOCK_RECORDS) {
                return Err(bad(format!("index entry {i}: {} records, more than the {MAX_BLOCK_RECORDS} a block may hold", entry.records)));
            }
            records += entry.records;
            instructions = instructions
                .checked_add(entry.instructions)
                .ok_or_else(|| bad(format!("index entry {i}: the instruction count passes 2^64 - 1")))?;
            next_offset = entry.offset + BLOCK_HEADER as u64 + 1;
            self.index.push(entry);
        }
        if self.index.is_empty() && index_offset != header_end {
            return Err(bad("index lists no block but the body is not empty".into()));
        }
        if records != total_records || instructions != total_instructions {
            return Err(bad("index totals do not match its blocks".into()));
        }
        self.index_offset = index_offset;
        self.total_records = total_records;
        self.total_instructions = total_instructions;
        Ok(())
    }

    /// Takes the next block from the prefetcher; false at the end of the trace.
    fn load_block(&mut self) -> Result<bool> {
        if self.next_block == self.index.len() {
            return Ok(false);
        }
        if self.prefetcher.is_none() {
            self.prefetcher = Some(Prefetcher::start(&self.path, self.index.clone(), self.index_offset)?);
        }
        let prefetcher = self.prefetcher.as_mut().expect("started above");
        let loaded = prefetcher.next().ok_or_else(|| Error::Simulation("trace block loader stopped".into()))??;
        prefetcher.recycle(std::mem::replace(&mut self.block, loaded).raw);
        self.cursor = BlockCursor::default();
        self.left = self.index[self.next_block].records;
        self.next_block += 1;
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

    fn fill_inner(&mut self, batch: &mut Batch, max: usize) -> Result<usize> {
        let mut got = 0;
        while got < max {
            if self.left == 0 && !self.load_block()? {
                break;
            }
            let n = ((max - got) as u64).min(self.left) as usize;
            let instr = self.cursor.decode(&self.block.raw, self.block.len, &mut batch.refs, n).map_err(|e| {
                let entry = self.index[self.next_block - 1];
                self.err(
                    entry.offset,
                    format!(
                        "block {}: record {}: {} (byte {} of the decompressed block)",
                        self.next_block - 1,
                        entry.first_record + e.record,
                        e.message,
                        e.pos
                    ),
                )
            })?;
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
            "path": self.path.display().to_string(),
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
}
