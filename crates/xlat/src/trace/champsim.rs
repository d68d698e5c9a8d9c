//! ChampSim binary traces: a sequence of 64-byte little-endian `input_instr` records
//!
//! ```text
//! u64 ip; u8 is_branch; u8 branch_taken; u8 dst_regs[2]; u8 src_regs[4];
//! u64 dst_mem[2]; u64 src_mem[4];          // 0 = unused slot
//! ```
//!
//! raw, or compressed with xz, gzip or zstd (recognized by magic bytes, not by name).
//! Each record becomes an instruction fetch of `ip` (one instruction), then a load per nonzero
//! `src_mem` slot in order, then a store per nonzero `dst_mem` slot. ChampSim records carry no
//! access sizes and no address spaces: every reference gets size 1 and ASID 0. Size 1 is
//! what ChampSim itself simulates: it translates exactly one page per address, so an access
//! never straddles pages there either. An empty file is an empty stream (zero records).

use super::io::{display_path, file_identity, open_input, read_full_counted, u64_at, AtomicOutput, Compression, Input};
use super::TraceWriter;
use crate::memref::{AccessKind, Batch, MemRef};
use crate::source::RefSource;
use crate::{Error, Result};
use std::path::{Path, PathBuf};

/// Bytes per ChampSim record.
pub const RECORD_BYTES: usize = 64;
const DST_AT: usize = 16;
const SRC_AT: usize = 32;
/// Most loads (source operands) one record holds, from `SRC_AT`.
const LOADS_PER_RECORD: usize = 4;
/// Most stores (destination operands) one record holds, from `DST_AT`.
const STORES_PER_RECORD: usize = 2;
/// Records read per chunk from the (decompressed) input.
const CHUNK_RECORDS: usize = 4096;

/// Reads a ChampSim trace from a file or from stdin (`-`).
pub struct ChampSimReader {
    path: PathBuf,
    input: Input,
    compression: Compression,
    file_size: Option<u64>,
    chunk: Vec<u8>,
    /// Next unread byte in `chunk`, and the bytes of complete records in it.
    pos: usize,
    len: usize,
    /// Offset in the decompressed stream of `chunk[0]`.
    chunk_offset: u64,
    /// Offset and length of a trailing partial record, reported once the records before it
    /// have been delivered.
    partial: Option<(u64, usize)>,
    /// References of the current record not yet delivered (a batch may end mid-record).
    pending: [MemRef; 7],
    pending_pos: usize,
    pending_len: usize,
}

impl ChampSimReader {
    /// Opens `path` (`-` for stdin), decompressing if it starts with an xz, gzip or zstd magic.
    pub fn open(path: impl AsRef<Path>) -> Result<ChampSimReader> {
        let (input, compression, file_size) = open_input(path.as_ref())?;
        Ok(ChampSimReader {
            path: display_path(path.as_ref()),
            input,
            compression,
            file_size,
            chunk: vec![0; CHUNK_RECORDS * RECORD_BYTES],
            pos: 0,
            len: 0,
            chunk_offset: 0,
            partial: None,
            pending: [MemRef::load(0, 1); 7],
            pending_pos: 0,
            pending_len: 0,
        })
    }

    /// Reads the next chunk of whole records; false at the end of the input.
    fn refill(&mut self) -> Result<bool> {
        self.chunk_offset += self.len as u64;
        self.pos = 0;
        self.len = 0;
        if let Some((offset, bytes)) = self.partial {
            return Err(Error::AtOffset {
                path: self.path.clone(),
                offset,
                message: format!(
                    "trailing partial record of {bytes} bytes (ChampSim records are {RECORD_BYTES} bytes){}",
                    self.offset_note()
                ),
            });
        }
        // On an error, the offset is as far as the input could be read (for compressed input,
        // how much decompressed before the damage).
        let mut got = 0;
        read_full_counted(&mut self.input, &mut self.chunk, &mut got).map_err(|e| Error::AtOffset {
            path: self.path.clone(),
            offset: self.chunk_offset + got as u64,
            message: format!("read failed: {e}{}", self.offset_note()),
        })?;
        // A text file (say a Lackey trace named `.champsim`) would decode as garbage records.
        // A real record always holds zero bytes: the high bytes of user-space addresses, unused
        // memory and register slots, the branch flags. Text has none, so a first record
        // without a zero byte is rejected rather than read.
        if self.chunk_offset == 0 && got >= RECORD_BYTES && !self.chunk[..RECORD_BYTES].contains(&0) {
            return Err(Error::AtOffset {
                path: self.path.clone(),
                offset: 0,
                message: "not a ChampSim trace: the first 64-byte record has no zero byte, as a real one \
                          always has (is it text, such as a Lackey trace?)"
                    .into(),
            });
        }
        // The read only comes back short at the end of input, so a remainder is a truncated
        // last record.
        self.len = got - got % RECORD_BYTES;
        if got % RECORD_BYTES != 0 {
            self.partial = Some((self.chunk_offset + self.len as u64, got % RECORD_BYTES));
        }
        Ok(self.len > 0 || self.partial.is_some() && self.refill()?)
    }

    fn offset_note(&self) -> &'static str {
        if self.compression == Compression::None {
            ""
        } else {
            "; offset in the decompressed data"
        }
    }

    /// Expands the record at `pos` into `pending`.
    fn expand(&mut self) {
        let rec = &self.chunk[self.pos..self.pos + RECORD_BYTES];
        let mut n = 0;
        self.pending[n] = MemRef::ifetch(u64_at(rec, 0), 1);
        n += 1;
        for i in 0..LOADS_PER_RECORD {
            let a = u64_at(rec, SRC_AT + 8 * i);
            if a != 0 {
                self.pending[n] = MemRef::load(a, 1);
                n += 1;
            }
        }
        for i in 0..STORES_PER_RECORD {
            let a = u64_at(rec, DST_AT + 8 * i);
            if a != 0 {
                self.pending[n] = MemRef::store(a, 1);
                n += 1;
            }
        }
        self.pos += RECORD_BYTES;
        self.pending_pos = 0;
        self.pending_len = n;
    }
}

impl RefSource for ChampSimReader {
    fn fill(&mut self, batch: &mut Batch, max: usize) -> Result<usize> {
        let mut got = 0;
        while got < max {
            if self.pending_pos == self.pending_len {
                if self.pos == self.len {
                    // Deliver the whole records first; the partial one fails the next call.
                    if self.partial.is_some() && got > 0 || !self.refill()? {
                        break;
                    }
                }
                self.expand();
            }
            let r = self.pending[self.pending_pos];
            self.pending_pos += 1;
            batch.refs.push(r);
            batch.instructions += u64::from(r.kind == AccessKind::IFetch);
            got += 1;
        }
        Ok(got)
    }

    fn identity(&self) -> serde_json::Value {
        file_identity("champsim", &self.path, self.file_size, self.compression)
    }
    /// One instruction per fetch.
    fn counts_instructions(&self) -> bool {
        true
    }
}


/// Writes a ChampSim trace, compressed with xz or gzip when the path ends in `.xz` or `.gz`.
///
/// The stream must be instruction-shaped: an instruction fetch starts each record, then up
/// to 4 loads, then up to 2 stores; ASID 0 and size 1 only; no data reference at address 0
/// (0 marks an unused slot). Anything else is an error naming the reference's index, rather
/// than a trace that reads back differently. [`ChampSimWriter::lossy`] instead writes what
/// ChampSim can hold of any instruction-shaped stream: sizes are dropped, an instruction's
/// loads are recorded before its stores, and an instruction with more than 4 loads or 2
/// stores continues in extra records at the same address (which read back as extra fetches):
/// its loads 4 to a record, its stores from the last record with loads on, 2 to a record.
pub struct ChampSimWriter {
    out: AtomicOutput,
    /// The address of the instruction being written, once its fetch came.
    ip: Option<u64>,
    /// Its loads and stores so far, in order.
    loads: Vec<u64>,
    stores: Vec<u64>,
    buf: Vec<u8>,
    index: u64,
    lossy: bool,
}

impl ChampSimWriter {
    /// Starts writing `path` (atomically: nothing appears there before `finish`).
    pub fn create(path: impl AsRef<Path>) -> Result<ChampSimWriter> {
        Ok(ChampSimWriter {
            out: AtomicOutput::create(path.as_ref())?,
            ip: None,
            loads: Vec::new(),
            stores: Vec::new(),
            buf: Vec::with_capacity(CHUNK_RECORDS * RECORD_BYTES),
            index: 0,
            lossy: false,
        })
    }

    /// Writes any instruction-shaped stream, losing what ChampSim cannot hold (see the type's
    /// documentation) instead of rejecting it.
    pub fn lossy(mut self) -> ChampSimWriter {
        self.lossy = true;
        self
    }

    fn reject(&self, what: &str) -> Error {
        Error::Config {
            path: self.out.path().display().to_string(),
            message: format!("reference {}: {what}: not representable in ChampSim format", self.index),
        }
    }

    /// Appends one reference.
    pub fn write(&mut self, r: &MemRef) -> Result<()> {
        if r.asid != 0 {
            return Err(self.reject(&format!("ASID {}", r.asid)));
        }
        if r.size != 1 && !self.lossy {
            return Err(self.reject(&format!("size {} (ChampSim has no sizes; only 1 is exact)", r.size)));
        }
        if r.kind.is_data() && r.vaddr == 0 {
            return Err(self.reject("data address 0 (marks an unused slot)"));
        }
        let strict = !self.lossy;
        match r.kind {
            AccessKind::IFetch => {
                if self.index == 0 && self.out.is_plain() && Compression::from_magic(&r.vaddr.to_le_bytes()) != Compression::None {
                    // Readers tell compressed input by its magic bytes: this file would read as
                    // compressed, and fail.
                    return Err(self.reject(&format!(
                        "the first instruction's address {:#x} begins with the bytes of a compressed file's magic; write the trace compressed (.xz, .gz or .zst)",
                        r.vaddr
                    )));
                }
                self.emit();
                self.ip = Some(r.vaddr);
            }
            _ if self.ip.is_none() => return Err(self.reject("data reference before any instruction fetch")),
            AccessKind::Load if strict && !self.stores.is_empty() => return Err(self.reject("load after a store in one instruction")),
            AccessKind::Load if strict && self.loads.len() == LOADS_PER_RECORD => {
                return Err(self.reject("more than 4 loads in one instruction"))
            }
            AccessKind::Load => self.loads.push(r.vaddr),
            AccessKind::Store if strict && self.stores.len() == STORES_PER_RECORD => {
                return Err(self.reject("more than 2 stores in one instruction"))
            }
            AccessKind::Store => self.stores.push(r.vaddr),
        }
        self.index += 1;
        if self.buf.len() >= CHUNK_RECORDS * RECORD_BYTES {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Appends the finished instruction, if any, to the output buffer: one record, or in
    /// lossy mode as many as its loads and stores need. A record reads back as its fetch, its
    /// loads, then its stores, so stores start in the last record with loads: every load
    /// reads back before every store, in the fewest records that allows.
    fn emit(&mut self) {
        let Some(ip) = self.ip.take() else { return };
        let load_records = self.loads.len().div_ceil(LOADS_PER_RECORD);
        let first_store_record = load_records.saturating_sub(1);
        let records = load_records.max(first_store_record + self.stores.len().div_ceil(STORES_PER_RECORD)).max(1);
        for k in 0..records {
            let loads = self.loads.chunks(LOADS_PER_RECORD).nth(k).unwrap_or_default();
            let stores = k.checked_sub(first_store_record).and_then(|j| self.stores.chunks(STORES_PER_RECORD).nth(j)).unwrap_or_default();
            let mut rec = [0u8; RECORD_BYTES];
            rec[..8].copy_from_slice(&ip.to_le_bytes());
            for (slot, a) in stores.iter().enumerate() {
                rec[DST_AT + 8 * slot..DST_AT + 8 * slot + 8].copy_from_slice(&a.to_le_bytes());
            }
            for (slot, a) in loads.iter().enumerate() {
                rec[SRC_AT + 8 * slot..SRC_AT + 8 * slot + 8].copy_from_slice(&a.to_le_bytes());
            }
            self.buf.extend_from_slice(&rec);
        }
        self.loads.clear();
        self.stores.clear();
    }
}

impl TraceWriter for ChampSimWriter {
    fn write(&mut self, r: &MemRef, _instr_delta: u64) -> Result<()> {
        ChampSimWriter::write(self, r)
    }

    fn finish(mut self: Box<Self>) -> Result<()> {
        self.emit();
        self.out.write_all(&self.buf)?;
        self.out.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::collect;

    /// A raw trace whose first address spells a compression magic (found by the `convert` fuzz
    /// target: the zstd magic) would read as compressed and fail: the writer refuses it, and
    /// the same trace written compressed reads back.
    #[test]
    fn a_first_address_that_spells_a_compression_magic_is_written_compressed_only() {
        let dir = tempfile::tempdir().unwrap();
        for ip in [0xf7ff_ffff_fd2f_b528u64, 0x8b1f, 0x005a_587a_37fd] {
            let stream = [MemRef::ifetch(ip, 1), MemRef::load(0x1000, 1)];
            let mut raw = ChampSimWriter::create(dir.path().join("t.champsim")).unwrap();
            let e = raw.write(&stream[0]).unwrap_err().to_string();
            assert!(e.contains("reference 0") && e.contains("compressed"), "{e}");
            let path = dir.path().join("t.champsim.xz");
            let mut xz = ChampSimWriter::create(&path).unwrap();
            stream.iter().for_each(|r| xz.write(r).unwrap());
            TraceWriter::finish(Box::new(xz)).unwrap();
            let (back, _) = collect(&mut ChampSimReader::open(&path).unwrap()).unwrap();
            assert_eq!(back, stream, "{ip:#x}");
        }
    }

    #[test]
    fn lossy_writer_reorders_and_continues_wide_instructions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.champsim");
        let stream = [
            MemRef::ifetch(0x400000, 3),
            MemRef::store(0x9000, 8),
            MemRef::load(0x1000, 8),
            MemRef::load(0x2000, 8),
            MemRef::load(0x3000, 8),
            MemRef::load(0x4000, 8),
            MemRef::load(0x5000, 8),
        ];
        let mut strict = ChampSimWriter::create(&path).unwrap();
        strict.write(&stream[0]).unwrap_err();
        let mut w = ChampSimWriter::create(&path).unwrap().lossy();
        for r in &stream {
            w.write(r).unwrap();
        }
        Box::new(w).finish().unwrap();
        let (back, instructions) = collect(&mut ChampSimReader::open(&path).unwrap()).unwrap();
        let one = |r: MemRef| MemRef { size: 1, ..r };
        let expected = vec![
            one(stream[0]),
            one(stream[2]),
            one(stream[3]),
            one(stream[4]),
            one(stream[5]),
            one(stream[0]),
            one(stream[6]),
            one(stream[1]),
        ];
        assert_eq!(back, expected);
        assert_eq!(instructions, 2, "the continuation reads back as a second fetch");
    }

    #[test]
    fn lossy_records_keep_every_load_before_every_store_in_the_fewest_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.champsim");
        let mut w = ChampSimWriter::create(&path).unwrap().lossy();
        // Every mix of 0 to 9 loads and 0 to 5 stores, interleaved, one instruction each.
        let mut wanted = Vec::new();
        for (n, (loads, stores)) in (0..10usize).flat_map(|l| (0..6usize).map(move |s| (l, s))).enumerate() {
            let ip = 0x40_0000 + 4 * n as u64;
            w.write(&MemRef::ifetch(ip, 4)).unwrap();
            let (mut l, mut s) = (0, 0);
            while l < loads || s < stores {
                if s < stores && (l == loads || (l + s) % 3 == 2) {
                    w.write(&MemRef::store(0x9000 + 8 * s as u64, 8)).unwrap();
                    s += 1;
                } else {
                    w.write(&MemRef::load(0x1000 + 8 * l as u64, 8)).unwrap();
                    l += 1;
                }
            }
            let records = loads.div_ceil(4).max(loads.div_ceil(4).saturating_sub(1) + stores.div_ceil(2)).max(1);
            wanted.push((ip, loads, stores, records));
        }
        Box::new(w).finish().unwrap();
        let (back, _) = collect(&mut ChampSimReader::open(&path).unwrap()).unwrap();
        for (ip, loads, stores, records) in wanted {
            let refs: Vec<_> = back.iter().skip_while(|r| r.vaddr != ip).take_while(|r| r.kind != AccessKind::IFetch || r.vaddr == ip).collect();
            let kinds: Vec<_> = refs.iter().filter(|r| r.kind != AccessKind::IFetch).map(|r| r.kind).collect();
            let fetches = refs.iter().filter(|r| r.kind == AccessKind::IFetch).count();
            let mut order = vec![AccessKind::Load; loads];
            order.extend(vec![AccessKind::Store; stores]);
            assert_eq!(kinds, order, "{loads} loads, {stores} stores");
            assert_eq!(fetches, records, "{loads} loads, {stores} stores");
        }
    }
}
