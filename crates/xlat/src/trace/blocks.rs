//! Loading the blocks of a native trace: read, check against the index, decompress. A
//! [`Prefetcher`] does this on its own thread, a few blocks ahead of the decoder, so zstd
//! decompression (about half of the reading time) overlaps with record decoding.

use super::block::{MAX_BLOCK_EVENTS, MAX_EVENT_BYTES, MAX_EVENT_TABLE_HEAD, MAX_RECORD_BYTES, PADDING};
use super::io::{read_at, u32_at, u64_at};
use super::native::{IndexEntry, BLOCK_HEADER};
use crate::{Error, Result};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// Decompressed blocks waiting for the decoder.
const BLOCKS_AHEAD: usize = 2;

/// A decompressed block: its body in `raw[..len]`, followed by zero padding for the decoder.
pub(crate) struct LoadedBlock {
    /// Body and padding.
    pub raw: Vec<u8>,
    /// Length of the body.
    pub len: usize,
}

/// Reads blocks of one file in order.
struct Loader {
    path: PathBuf,
    file: File,
    index: Vec<IndexEntry>,
    index_offset: u64,
    /// The file may hold address-space events (version 2).
    events: bool,
    zbuf: Vec<u8>,
    decompressor: zstd::bulk::Decompressor<'static>,
}

impl Loader {
    fn err(&self, offset: u64, message: String) -> Error {
        Error::AtOffset { path: self.path.clone(), offset, message }
    }

    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<()> {
        read_at(&mut self.file, &self.path, offset, buf)
    }

    /// Reads, checks and decompresses block `b` into `raw`.
    fn load(&mut self, b: usize, mut raw: Vec<u8>) -> Result<LoadedBlock> {
        let entry = self.index[b];
        let end = self.index.get(b + 1).map_or(self.index_offset, |n| n.offset);
        let mut h = [0u8; BLOCK_HEADER];
        self.read_at(entry.offset, &mut h)?;
        let (records, raw_len, zlen, instr) = (u32_at(&h, 0), u32_at(&h, 4) as usize, u32_at(&h, 8), u64_at(&h, 12));
        if u64::from(records) != entry.records || instr != entry.instructions {
            return Err(self.err(entry.offset, format!("block {b}: header disagrees with the index")));
        }
        if entry.offset + (BLOCK_HEADER as u64) + u64::from(zlen) != end {
            return Err(self.err(entry.offset, format!("block {b}: compressed length {zlen} does not reach the next block")));
        }
        // Events are not counted in the header: their table is bounded by the most a block may hold.
        let events = if self.events { MAX_EVENT_TABLE_HEAD + MAX_BLOCK_EVENTS as usize * MAX_EVENT_BYTES } else { 0 };
        if raw_len > records as usize * MAX_RECORD_BYTES + events || raw_len < records as usize * 2 || raw_len == 0 {
            return Err(self.err(entry.offset, format!("block {b}: implausible length {raw_len} for {records} records")));
        }
        // Checked before the frame is read into memory: in a sparse file, a frame length that
        // reaches the next block could still ask for 4 GiB.
        if zlen as usize > zstd::zstd_safe::compress_bound(raw_len) {
            let why = format!("block {b}: compressed length {zlen} is more than zstd needs for {raw_len} bytes");
            return Err(self.err(entry.offset, why));
        }
        let mut zbuf = std::mem::take(&mut self.zbuf);
        zbuf.resize(zlen as usize, 0);
        let read = self.read_at(entry.offset + BLOCK_HEADER as u64, &mut zbuf);
        self.zbuf = zbuf;
        read?;
        raw.clear();
        raw.reserve(raw_len + PADDING);
        let got = self
            .decompressor
            .decompress_to_buffer(&self.zbuf, &mut raw)
            .map_err(|e| self.err(entry.offset, format!("block {b}: corrupt zstd frame: {e}")))?;
        if got != raw_len {
            return Err(self.err(entry.offset, format!("block {b}: decompressed to {got} bytes, header says {raw_len}")));
        }
        raw.resize(raw_len + PADDING, 0);
        Ok(LoadedBlock { raw, len: raw_len })
    }
}

/// Loads the blocks of a trace, in order, on a background thread.
pub(crate) struct Prefetcher {
    blocks: Receiver<Result<LoadedBlock>>,
    recycle: SyncSender<Vec<u8>>,
    thread: Option<JoinHandle<()>>,
}

impl Prefetcher {
    /// Starts loading the blocks listed in `index` from `path` (already validated by the
    /// reader; the index ends at `index_offset`), which may hold address-space events if
    /// `events` (version 2).
    pub fn start(path: &Path, index: Vec<IndexEntry>, index_offset: u64, events: bool) -> Result<Prefetcher> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let decompressor = zstd::bulk::Decompressor::new().map_err(|e| Error::io(path, e))?;
        let mut loader = Loader { path: path.to_path_buf(), file, index, index_offset, events, zbuf: Vec::new(), decompressor };
        let (block_tx, blocks) = sync_channel(BLOCKS_AHEAD);
        let (recycle, recycled) = sync_channel::<Vec<u8>>(BLOCKS_AHEAD + 2);
        let thread = std::thread::Builder::new()
            .name("xlat-trace-blocks".into())
            .spawn(move || {
                for b in 0..loader.index.len() {
                    let raw = recycled.try_recv().unwrap_or_default();
                    let loaded = loader.load(b, raw);
                    let failed = loaded.is_err();
                    // The reader hung up (dropped or done): stop.
                    if block_tx.send(loaded).is_err() || failed {
                        return;
                    }
                }
            })
            .map_err(|e| Error::io(path, e))?;
        Ok(Prefetcher { blocks, recycle, thread: Some(thread) })
    }

    /// The next block, or `None` after the last.
    pub fn next(&mut self) -> Option<Result<LoadedBlock>> {
        self.blocks.recv().ok()
    }

    /// Gives a finished block's buffer back for reuse.
    pub fn recycle(&mut self, raw: Vec<u8>) {
        let _ = self.recycle.try_send(raw);
    }
}

impl Drop for Prefetcher {
    fn drop(&mut self) {
        // Unblock a loader waiting to send, then wait for it, so no thread outlives the reader.
        let (_, empty) = sync_channel(0);
        drop(std::mem::replace(&mut self.blocks, empty));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
