//! Redis: a key-value store after Redis 7.0's keyspace, built with libc's `malloc`
//! (`make MALLOC=libc`; Redis defaults to jemalloc), one thread.
//!
//! * **The keyspace** is a `dict`: two tables of `dictEntry *` heads (`ht[0]`, `ht[1]`),
//!   chained, new entries at the head. The first insertion `calloc`s 4 heads; an insertion
//!   into a table holding as many entries as heads `calloc`s one twice as large as `ht[1]`
//!   and starts an incremental rehash: every lookup and insertion first moves one bucket of
//!   `ht[0]` into `ht[1]` (`_dictRehashStep`: up to ten empty heads skipped, each entry
//!   rehashed from its key), insertions go into `ht[1]`, lookups search both tables, and
//!   when `ht[0]` is empty its heads are freed and `ht[1]` takes its place.
//! * **Entries** are `malloc`ed `dictEntry`s (key, value and next pointers, 24 bytes), each
//!   key an SDS string (`sdshdr8`: length, allocation and flags bytes, the key, a NUL) of its
//!   own, each value a `redisObject` (type, encoding and LRU clock in 4 bytes, reference
//!   count, pointer) with the value's SDS string: in the same allocation for values of up to
//!   44 bytes (`OBJ_ENCODING_EMBSTR`), in its own allocation otherwise (`RAW`).
//!
//! Phase `load` (emitted when `load` is true) runs `SET` for keys `0..records` in order: the
//! value's object built from the request (as the protocol parser does), a lookup that finds
//! nothing (`lookupKeyWrite`), then `dbAdd`: the key copied (`sdsdup`) and `dictAdd`. Phase
//! `request` runs `requests` requests, each a `GET` with probability `get_fraction` and a
//! `SET` otherwise, of a key drawn uniformly (default) or from a Zipf distribution. A `GET`
//! finds the entry (comparing key lengths and bytes along the chain), touches the object's
//! LRU clock and reads the value into the reply; a `SET` builds the new value's object,
//! finds the entry twice (`lookupKeyWrite`, then `dbOverwrite`), swaps the value pointer and
//! frees the old object — whose chunks the next `SET` gets back from `malloc`.
//!
//! Every `malloc` and `free` (tables, entries, keys, values) is made from the process's
//! allocator where the command makes it, so the stream carries what they map and unmap
//! (`docs/workloads.md`, "Address-space events"); the expectation replays them apart
//! (`Redis::plan`), the rehash's end estimated.
//!
//! Not modelled: the command's other argument objects (its name and the key's request copy,
//! allocated and freed by every command: the same few hot chunks), the client's query and
//! reply buffers, the `dict` struct itself, the `expires` dict (empty) and `serverCron`'s
//! timed rehashing.
//!
//! Self-check: every request finds its key; every `GET` reads the version of the value that
//! the last `SET` of that key wrote; at the end (not emitted) every key is found and the
//! tables hold exactly `records` entries.
//!
//! Instructions: 2,000 per command (parsing, hashing, dispatch, the reply; not the kernel's
//! network path), 8 per entry compared, 2 per 32-byte piece copied, 6 per head visited and
//! 20 per entry moved by rehashing.

use super::address_space::{chunk_size, AddressSpace, Allocator};
use super::emit::{pieces, Discard, Emitter};
use super::keyspace::{self, KeyDistribution, KeyPicker};
use super::{randomly_touched, Expected, ExpectedPhase, Region, Scale, Workload};
use crate::memref::AccessKind;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

/// `DICT_HT_INITIAL_SIZE`.
const INITIAL_SIZE: u64 = 4;
/// Heads `_dictRehashStep` may find empty before giving up (`empty_visits = n * 10`).
const EMPTY_VISITS: u32 = 10;
/// `sizeof(robj)`.
const ROBJ: u64 = 16;
/// The longest value kept with its object (`OBJ_ENCODING_EMBSTR_SIZE_LIMIT`).
const EMBSTR_LIMIT: u32 = 44;
/// `sizeof(dictEntry)`.
const ENTRY: u64 = 24;
/// `dictEntry` fields: offsets.
const KEY_AT: u64 = 0;
const VAL_AT: u64 = 8;
const NEXT_AT: u64 = 16;
/// `robj` fields: type, encoding and LRU clock; reference count; pointer.
const LRU_AT: u64 = 0;
const REFCOUNT_AT: u64 = 4;
const PTR_AT: u64 = 8;
/// "No entry" in the host's links.
const NONE: u32 = u32::MAX;

const COMMAND_INSTRUCTIONS: u64 = 2_000;
const CHAIN_INSTRUCTIONS: u64 = 8;
const PIECE_INSTRUCTIONS: u64 = 2;
const VISIT_INSTRUCTIONS: u64 = 6;
const MOVE_INSTRUCTIONS: u64 = 20;

/// Parameters of Redis.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Redis {
    /// Keys stored before the requests (`0..records`), up to 2^31.
    pub records: u64,
    /// Requests after the load, up to 2^32.
    pub requests: u64,
    /// Bytes of each key: `key:` and a zero-padded number (8..=250).
    pub key_bytes: u32,
    /// Bytes of each value, a multiple of 8 up to 65,528 (SDS strings with 1- or 2-byte
    /// lengths); up to 44 bytes the value shares its object's allocation.
    pub value_bytes: u32,
    /// Fraction of requests that are `GET`s, the rest `SET`s (0.5: 50:50).
    pub get_fraction: f64,
    /// How requests pick keys: `uniform` (default) or `zipf`.
    pub distribution: KeyDistribution,
    /// The Zipf exponent (0.99); unused for `uniform`.
    pub skew: f64,
    /// Emit the load phase (it is always performed).
    pub load: bool,
}

/// The sizes of a record's parts.
#[derive(Clone, Copy, Debug)]
struct Shape {
    key_bytes: u64,
    value_bytes: u64,
    value_words: usize,
}

impl Shape {
    /// Bytes of an SDS string's header for `len` bytes (`sdshdr8` below 256, else `sdshdr16`).
    fn sds_header(len: u64) -> u64 {
        if len < 256 { 3 } else { 5 }
    }

    fn embedded(&self) -> bool {
        self.value_bytes <= u64::from(EMBSTR_LIMIT)
    }

    /// The `malloc` requests of a value's object: one, or the string's then the object's.
    fn value_allocs(&self) -> Vec<u64> {
        let string = Self::sds_header(self.value_bytes) + self.value_bytes + 1;
        if self.embedded() { vec![ROBJ + string] } else { vec![string, ROBJ] }
    }

    fn key_alloc(&self) -> u64 {
        Self::sds_header(self.key_bytes) + self.key_bytes + 1
    }

    /// The chunk sizes of a record's allocations, in order: value, key, entry.
    fn chunks(&self) -> Vec<u64> {
        let mut c: Vec<u64> = self.value_allocs().into_iter().map(chunk_size).collect();
        c.push(chunk_size(self.key_alloc()));
        c.push(chunk_size(ENTRY));
        c
    }
}

/// A record's value: its object and string.
#[derive(Clone, Copy, Debug)]
struct Value {
    robj: u64,
    /// The SDS pointer (its first byte).
    sds: u64,
}

/// The records in host memory, by key, with their simulated addresses.
struct Records {
    shape: Shape,
    entry: Vec<u64>,
    key: Vec<u64>,
    value: Vec<Value>,
    next: Vec<u32>,
    keys: Vec<u8>,
    values: Vec<u64>,
}

impl Records {
    fn new(shape: Shape, n: usize) -> Result<Records, String> {
        let fail = |bytes: usize| crate::host::cannot_allocate(bytes as u64, "the redis records");
        let mut keys = Vec::new();
        keys.try_reserve_exact(n * shape.key_bytes as usize).map_err(|_| fail(n * shape.key_bytes as usize))?;
        let mut values = Vec::new();
        values.try_reserve_exact(n * shape.value_words).map_err(|_| fail(8 * n * shape.value_words))?;
        let mut entry = Vec::new();
        entry.try_reserve_exact(n).map_err(|_| fail(36 * n))?;
        Ok(Records { shape, entry, key: Vec::with_capacity(n), value: Vec::with_capacity(n), next: Vec::with_capacity(n), keys, values })
    }

    fn key_of(&self, r: u32) -> &[u8] {
        let k = self.shape.key_bytes as usize;
        &self.keys[r as usize * k..(r as usize + 1) * k]
    }

    fn value_of(&self, r: u32) -> &[u64] {
        let w = self.shape.value_words;
        &self.values[r as usize * w..(r as usize + 1) * w]
    }

    fn value_mut(&mut self, r: u32) -> &mut [u64] {
        let w = self.shape.value_words;
        &mut self.values[r as usize * w..(r as usize + 1) * w]
    }
}

/// `sdsnewlen`'s stores: flags, length, allocation, the bytes and the NUL.
fn sds_stores(s: u64, len: u64, e: &mut Emitter) {
    let header = Shape::sds_header(len);
    e.store(s - 1, 1);
    e.store(s - header, (header - 1) as u16 / 2);
    e.store(s - header + (header - 1) / 2, (header - 1) as u16 / 2);
    let pieces = e.block(s, len, AccessKind::Store);
    e.store(s + len, 1);
    e.instructions(PIECE_INSTRUCTIONS * pieces);
}

/// `sdslen`: the flags byte, then the length.
fn sds_len(s: u64, len: u64, e: &mut Emitter) {
    let header = Shape::sds_header(len);
    e.load(s - 1, 1);
    e.load(s - header, (header - 1) as u16 / 2);
}

/// One of the dict's tables.
#[derive(Default)]
struct Table {
    heads: Vec<u32>,
    addr: u64,
    used: u64,
}

impl Table {
    fn mask(&self) -> u64 {
        self.heads.len() as u64 - 1
    }

    fn slot(&self, b: usize) -> u64 {
        self.addr + 8 * b as u64
    }
}

/// The keyspace and the records (allocated from the emitter, the process's allocator).
struct Server {
    recs: Records,
    ht: [Table; 2],
    /// The next `ht[0]` head to move while rehashing.
    rehashidx: Option<usize>,
    /// Every table allocated: address and bytes.
    tables: Vec<(u64, u64)>,
}

impl Server {
    fn new(shape: Shape, records: u64) -> Result<Server, String> {
        let recs = Records::new(shape, records as usize)?;
        Ok(Server { recs, ht: [Table::default(), Table::default()], rehashidx: None, tables: Vec::new() })
    }

    /// `dictCompareKeys` of the entry `r` with `key`: the stored key's pointer and length,
    /// then its bytes piece by piece until one differs.
    fn key_matches(&self, r: u32, key: &[u8], e: &mut Emitter) -> bool {
        let entry = self.recs.entry[r as usize];
        e.load(entry + KEY_AT, 8);
        let s = self.recs.key[r as usize];
        sds_len(s, self.recs.shape.key_bytes, e);
        let stored = self.recs.key_of(r);
        for (i, (a, b)) in stored.chunks(32).zip(key.chunks(32)).enumerate() {
            e.load(s + 32 * i as u64, a.len() as u16);
            if a != b {
                e.instructions(CHAIN_INSTRUCTIONS);
                return false;
            }
        }
        e.instructions(CHAIN_INSTRUCTIONS);
        true
    }

    /// Searches table `t`'s chain for `key`.
    fn search(&self, t: usize, h: u64, key: &[u8], e: &mut Emitter) -> Option<u32> {
        let table = &self.ht[t];
        let b = (h & table.mask()) as usize;
        e.load(table.slot(b), 8);
        let mut r = table.heads[b];
        while r != NONE {
            if self.key_matches(r, key, e) {
                return Some(r);
            }
            e.load(self.recs.entry[r as usize] + NEXT_AT, 8);
            r = self.recs.next[r as usize];
        }
        None
    }

    /// `dictFind`: a rehash step, then `ht[0]` and, while rehashing, `ht[1]`.
    fn find(&mut self, key: &[u8], e: &mut Emitter) -> Option<u32> {
        if self.ht[0].heads.is_empty() {
            return None;
        }
        self.rehash_step(e);
        let h = keyspace::hash(key);
        let tables = if self.rehashidx.is_some() { 2 } else { 1 };
        (0..tables).find_map(|t| self.search(t, h, key, e))
    }

    /// `_dictRehashStep`: moves the next non-empty head's chain of `ht[0]` into `ht[1]`,
    /// giving up after ten empty heads; when `ht[0]` is empty, frees it.
    fn rehash_step(&mut self, e: &mut Emitter) {
        let Some(mut idx) = self.rehashidx else { return };
        let mut empty = EMPTY_VISITS;
        loop {
            e.load(self.ht[0].slot(idx), 8);
            e.instructions(VISIT_INSTRUCTIONS);
            if self.ht[0].heads[idx] != NONE {
                break;
            }
            idx += 1;
            empty -= 1;
            if empty == 0 {
                self.rehashidx = Some(idx);
                return;
            }
        }
        let mut r = std::mem::replace(&mut self.ht[0].heads[idx], NONE);
        while r != NONE {
            r = self.move_entry(r, e);
        }
        e.store(self.ht[0].slot(idx), 8);
        self.rehashidx = Some(idx + 1);
        if self.ht[0].used == 0 {
            self.finish_rehash(e);
        }
    }

    /// Moves entry `r` to the head of its `ht[1]` chain; returns the next of its old chain.
    fn move_entry(&mut self, r: u32, e: &mut Emitter) -> u32 {
        let entry = self.recs.entry[r as usize];
        e.load(entry + NEXT_AT, 8);
        let next = self.recs.next[r as usize];
        e.load(entry + KEY_AT, 8);
        let s = self.recs.key[r as usize];
        sds_len(s, self.recs.shape.key_bytes, e);
        let pieces = e.block(s, self.recs.shape.key_bytes, AccessKind::Load);
        let b = (keyspace::hash(self.recs.key_of(r)) & self.ht[1].mask()) as usize;
        e.load(self.ht[1].slot(b), 8);
        e.store(entry + NEXT_AT, 8);
        e.store(self.ht[1].slot(b), 8);
        self.recs.next[r as usize] = std::mem::replace(&mut self.ht[1].heads[b], r);
        self.ht[0].used -= 1;
        self.ht[1].used += 1;
        e.instructions(MOVE_INSTRUCTIONS + PIECE_INSTRUCTIONS * pieces);
        next
    }

    fn finish_rehash(&mut self, e: &mut Emitter) {
        e.free(self.ht[0].addr);
        self.ht[0] = std::mem::take(&mut self.ht[1]);
        self.rehashidx = None;
    }

    /// `_dictExpandIfNeeded`: the first table, or one twice as large when `ht[0]` is full.
    fn expand_if_needed(&mut self, e: &mut Emitter) -> Result<(), String> {
        if self.rehashidx.is_some() {
            return Ok(());
        }
        let size = self.ht[0].heads.len() as u64;
        if size > 0 && self.ht[0].used < size {
            return Ok(());
        }
        let grown = if size == 0 { INITIAL_SIZE } else { (self.ht[0].used + 1).next_power_of_two() };
        let mut heads = Vec::new();
        heads.try_reserve_exact(grown as usize).map_err(|_| crate::host::cannot_allocate(4 * grown, "the redis dict"))?;
        heads.resize(grown as usize, NONE);
        // calloc: a fresh mapping needs no clearing (a heap chunk's clearing is not emitted).
        let addr = e.malloc(8 * grown);
        self.tables.push((addr, 8 * grown));
        let table = Table { heads, addr, used: 0 };
        if size == 0 {
            self.ht[0] = table;
        } else {
            self.ht[1] = table;
            self.rehashidx = Some(0);
        }
        Ok(())
    }

    /// `dictAddRaw` of a new key (already copied to its SDS string, record `r`): a rehash
    /// step, the expansion check, the chain searched for the key, then a new entry at the
    /// chain's head.
    fn add(&mut self, r: u32, key: &[u8], e: &mut Emitter) -> Result<(), String> {
        self.rehash_step(e);
        self.expand_if_needed(e)?;
        let h = keyspace::hash(key);
        let tables = if self.rehashidx.is_some() { 2 } else { 1 };
        if (0..tables).any(|t| self.search(t, h, key, e).is_some()) {
            return Err(format!("key {} was already in the keyspace", String::from_utf8_lossy(key)));
        }
        let t = tables - 1;
        let entry = e.malloc(ENTRY);
        self.recs.entry.push(entry);
        let b = (h & self.ht[t].mask()) as usize;
        e.load(self.ht[t].slot(b), 8);
        e.store(entry + NEXT_AT, 8);
        e.store(self.ht[t].slot(b), 8);
        e.store(entry + KEY_AT, 8);
        self.recs.next.push(std::mem::replace(&mut self.ht[t].heads[b], r));
        self.ht[t].used += 1;
        Ok(())
    }

    /// A value object of key `id` at `version`, built as the protocol parser builds it.
    fn new_value(&mut self, id: u64, version: u64, words: &mut [u64], e: &mut Emitter) -> Value {
        let shape = self.recs.shape;
        keyspace::fill_value(id, version, words);
        let allocs: Vec<u64> = shape.value_allocs().into_iter().map(|bytes| e.malloc(bytes)).collect();
        let value = match allocs[..] {
            [both] => Value { robj: both, sds: both + ROBJ + Shape::sds_header(shape.value_bytes) },
            [string, robj] => Value { robj, sds: string + Shape::sds_header(shape.value_bytes) },
            _ => unreachable!("a value is one or two allocations"),
        };
        sds_stores(value.sds, shape.value_bytes, e);
        for (at, size) in [(LRU_AT, 4), (REFCOUNT_AT, 4), (PTR_AT, 8)] {
            e.store(value.robj + at, size);
        }
        value
    }

    /// Frees a value object whose last reference went (`decrRefCount`).
    fn free_value(&mut self, v: Value, e: &mut Emitter) {
        e.load_store(v.robj + REFCOUNT_AT, 4);
        e.load(v.robj + LRU_AT, 4);
        if self.recs.shape.embedded() {
            e.free(v.robj);
            return;
        }
        e.load(v.robj + PTR_AT, 8);
        e.load(v.sds - 1, 1);
        e.free(v.sds - Shape::sds_header(self.recs.shape.value_bytes));
        e.free(v.robj);
    }
}

/// Requests served, by kind.
#[derive(Default)]
struct Served {
    gets: u64,
    sets: u64,
}

impl Server {
    /// `SET` of a new key `id` (record `id`).
    fn set_new(&mut self, id: u64, key: &[u8], e: &mut Emitter) -> Result<(), String> {
        let r = id as u32;
        let words = self.recs.shape.value_words;
        self.recs.values.resize(self.recs.values.len() + words, 0);
        let mut value = vec![0; words];
        let v = self.new_value(id, 0, &mut value, e);
        self.recs.value_mut(r).copy_from_slice(&value);
        if self.find(key, e).is_some() {
            return Err(format!("key {id} was found before it was set"));
        }
        let s = e.malloc(self.recs.shape.key_alloc()) + Shape::sds_header(self.recs.shape.key_bytes);
        sds_stores(s, self.recs.shape.key_bytes, e);
        self.recs.keys.extend_from_slice(key);
        self.recs.key.push(s);
        self.recs.value.push(v);
        self.add(r, key, e)?;
        let entry = self.recs.entry[r as usize];
        e.store(entry + VAL_AT, 8);
        // incrRefCount by the keyspace, decrRefCount of the command's argument.
        e.load_store(v.robj + REFCOUNT_AT, 4);
        e.load_store(v.robj + REFCOUNT_AT, 4);
        e.instructions(COMMAND_INSTRUCTIONS);
        Ok(())
    }

    /// `GET`: the entry, the object's LRU clock, the value read into the reply.
    fn get(&mut self, id: u64, key: &[u8], e: &mut Emitter) -> Result<Option<u64>, String> {
        let r = self.find(key, e).ok_or_else(|| format!("a GET of key {id} found nothing"))?;
        let v = self.recs.value[r as usize];
        e.load(self.recs.entry[r as usize] + VAL_AT, 8);
        e.load_store(v.robj + LRU_AT, 4);
        e.load(v.robj + PTR_AT, 8);
        let len = self.recs.shape.value_bytes;
        sds_len(v.sds, len, e);
        let pieces = e.block(v.sds, len, AccessKind::Load);
        e.instructions(COMMAND_INSTRUCTIONS + PIECE_INSTRUCTIONS * pieces);
        Ok(keyspace::value_version(id, self.recs.value_of(r)))
    }

    /// `SET` of an existing key: the new object, the entry found twice, the pointer swapped,
    /// the old object freed.
    fn set(&mut self, id: u64, key: &[u8], version: u64, e: &mut Emitter) -> Result<(), String> {
        let mut value = vec![0; self.recs.shape.value_words];
        let v = self.new_value(id, version, &mut value, e);
        let missing = || format!("a SET of key {id} found nothing");
        let r = self.find(key, e).ok_or_else(missing)?;
        let old = self.recs.value[r as usize];
        e.load(self.recs.entry[r as usize] + VAL_AT, 8);
        e.load_store(old.robj + LRU_AT, 4);
        if self.find(key, e) != Some(r) {
            return Err(missing());
        }
        let entry = self.recs.entry[r as usize];
        e.load_store(entry + VAL_AT, 8);
        e.load_store(v.robj + REFCOUNT_AT, 4);
        self.free_value(old, e);
        e.load_store(v.robj + REFCOUNT_AT, 4);
        self.recs.value[r as usize] = v;
        self.recs.value_mut(r).copy_from_slice(&value);
        e.instructions(COMMAND_INSTRUCTIONS);
        Ok(())
    }

    /// Entries reachable through both tables (not emitted).
    fn chained(&self) -> u64 {
        let mut n = 0;
        for &head in self.ht[0].heads.iter().chain(&self.ht[1].heads) {
            let mut r = head;
            while r != NONE {
                n += 1;
                r = self.recs.next[r as usize];
            }
        }
        n
    }
}

/// A table of the run, as planned.
#[derive(Clone, Debug)]
struct PlannedTable {
    addr: u64,
    heads: u64,
    /// The fraction of its rehash done during the requests.
    rehashed_in_requests: f64,
}

/// The allocations of a run and the counts its expectation needs, computed without the data.
#[derive(Clone, Debug, Default)]
struct Plan {
    /// Where the first record's first chunk starts, and the heap's end after the run.
    heap_from: u64,
    heap_to: u64,
    tables: Vec<PlannedTable>,
    /// Σ over the load's searches of the heads read and of the entries compared.
    load_heads: f64,
    load_entries: f64,
    /// Entries moved by rehashing, during the load and during the requests.
    rehashed: [f64; 2],
    /// Entries per head (other than the one looked up) during the requests.
    request_load: f64,
}

/// A rehash in progress while planning.
struct Rehash {
    /// Entries in the old table.
    entries: u64,
    /// Rehash steps still to come (each moves one non-empty head).
    steps: f64,
}

impl Rehash {
    fn new(entries: u64) -> Rehash {
        // s entries over s heads leave a head empty with probability (1 - 1/s)^s.
        let s = entries as f64;
        Rehash { entries, steps: s * (1.0 - (1.0 - 1.0 / s).powf(s)) }
    }

    /// The fraction of the rehash still to come.
    fn left(&self) -> f64 {
        let s = self.entries as f64;
        self.steps / (s * (1.0 - (1.0 - 1.0 / s).powf(s)))
    }
}

impl Redis {
    fn shape(&self) -> Shape {
        Shape { key_bytes: u64::from(self.key_bytes), value_bytes: u64::from(self.value_bytes), value_words: (self.value_bytes / 8) as usize }
    }

    /// `count` records carved in order: one by one while a freed chunk of a record's sizes
    /// waits to be reused (as `malloc` would hand it out), then all at once from the top.
    fn carve(space: &mut AddressSpace, chunks: &[u64], count: u64) {
        let mut left = count;
        while left > 0 && chunks.iter().any(|&c| space.reusable(c) > 0) {
            for &c in chunks {
                space.malloc(c - 8);
            }
            left -= 1;
        }
        if left > 0 {
            // A request of `chunk - 8` bytes takes a chunk of exactly `chunk` bytes.
            space.malloc_run(chunks.iter().sum::<u64>() - 8, left);
        }
    }

    /// Replays the run's allocations: records in order, a table at each expansion, the old
    /// table freed when its rehash is expected to end (two steps a `SET`, one a `GET`).
    fn plan(&self) -> Plan {
        let chunks = self.shape().chunks();
        let (value_chunks, rest) = chunks.split_at(chunks.len() - 2);
        let mut space = AddressSpace::new();
        let mut plan = Plan { heap_from: space.heap_top(), ..Plan::default() };
        let (mut size, mut used) = (0u64, 0u64);
        let mut rehash: Option<Rehash> = None;
        let mut i = 0;
        while i < self.records {
            if rehash.as_ref().is_some_and(|r| r.steps <= 0.0) {
                let old = &plan.tables[plan.tables.len() - 2];
                space.free(old.addr);
                rehash = None;
            }
            if used == size && rehash.is_none() {
                Self::carve(&mut space, value_chunks, 1);
                Self::carve(&mut space, &rest[..1], 1);
                let grown = if size == 0 { INITIAL_SIZE } else { 2 * size };
                plan.tables.push(PlannedTable { addr: space.malloc(8 * grown), heads: grown, rehashed_in_requests: 0.0 });
                Self::carve(&mut space, &rest[1..], 1);
                self.count_searches(&mut plan, size, used, None, 1);
                if size > 0 {
                    rehash = Some(Rehash::new(used));
                }
                (size, used, i) = (grown, used + 1, i + 1);
                continue;
            }
            // Up to the next expansion, or to the end of the rehash.
            let mut next = self.records.min(size - used + i);
            if let Some(r) = &rehash {
                next = next.min(i + (r.steps / 2.0).ceil().max(1.0) as u64);
            }
            Self::carve(&mut space, &chunks, next - i);
            self.count_searches(&mut plan, size, used, rehash.as_ref(), next - i);
            if let Some(r) = &mut rehash {
                let steps = (2 * (next - i)) as f64;
                plan.rehashed[0] += r.entries as f64 * steps.min(r.steps) / Rehash::new(r.entries).steps;
                r.steps -= steps;
            }
            used += next - i;
            i = next;
        }
        self.plan_requests(&mut plan, &mut space, value_chunks, rehash, size);
        plan
    }

    /// Adds `ops` insertions' two searches each to the plan: the heads read and the entries
    /// compared (both tables while rehashing).
    fn count_searches(&self, plan: &mut Plan, size: u64, used: u64, rehash: Option<&Rehash>, ops: u64) {
        if size == 0 {
            return;
        }
        let n = 2.0 * ops as f64;
        let mid = used as f64 + ops as f64 / 2.0;
        let (heads, entries) = match rehash {
            None => (1.0, mid / size as f64),
            Some(r) => {
                // Entries not yet moved are in the old table, of half as many heads.
                let old = r.entries as f64 * r.left();
                (2.0, (mid - old) / size as f64 + old / (size / 2) as f64)
            }
        };
        plan.load_heads += n * heads;
        plan.load_entries += n * entries;
    }

    /// The requests' share: the rest of a rehash, and the first `SET`'s new value object
    /// (later ones reuse the chunks each `SET` frees).
    fn plan_requests(&self, plan: &mut Plan, space: &mut AddressSpace, value_chunks: &[u64], rehash: Option<Rehash>, size: u64) {
        if let Some(r) = rehash {
            let steps = self.requests as f64 * (2.0 - self.get_fraction);
            let done = (steps / r.steps).min(1.0);
            let index = plan.tables.len() - 2;
            plan.tables[index].rehashed_in_requests = r.left() * done;
            plan.rehashed[1] = r.entries as f64 * r.left() * done;
        }
        if self.requests as f64 * (1.0 - self.get_fraction) >= 0.5 {
            Self::carve(space, value_chunks, 1);
        }
        plan.heap_to = space.heap_top();
        plan.request_load = self.records.saturating_sub(1) as f64 / size.max(1) as f64;
    }

    /// Expected references of the load phase.
    fn load_refs(&self, plan: &Plan) -> f64 {
        let shape = self.shape();
        let (pk, pv) = (pieces(shape.key_bytes) as f64, pieces(shape.value_bytes) as f64);
        // Value object 7 + value, key copy 4 + key, entry 5, reference counts 4.
        let per_record = 20.0 + pk + pv;
        self.records as f64 * per_record + plan.load_heads + plan.load_entries * (4.0 + pk) + self.rehash_refs(plan.rehashed[0])
    }

    /// References of rehashing `entries` entries: every head read, non-empty ones cleared,
    /// each entry rehashed from its key and relinked.
    fn rehash_refs(&self, entries: f64) -> f64 {
        let pk = pieces(u64::from(self.key_bytes)) as f64;
        entries * (1.0 + 0.632 + 7.0 + pk)
    }

    /// Expected references of the request phase.
    fn request_refs(&self, plan: &Plan) -> f64 {
        let shape = self.shape();
        let (pk, pv) = (pieces(shape.key_bytes) as f64, pieces(shape.value_bytes) as f64);
        let hit = 1.0 + plan.request_load / 2.0 * (4.0 + pk) + 3.0 + pk;
        let gets = self.requests as f64 * self.get_fraction;
        let sets = self.requests as f64 - gets;
        let free = if shape.embedded() { 3.0 } else { 5.0 };
        gets * (hit + 6.0 + pv) + sets * (7.0 + pv + 2.0 * hit + 8.0 + free) + self.rehash_refs(plan.rehashed[1])
    }

    /// The regions, with what the emitted phases touch.
    fn regions(&self, plan: &Plan) -> Vec<Region> {
        let distinct = keyspace::expected_drawn(self.records, self.requests, 1, self.distribution, self.skew);
        let bytes = plan.heap_to - plan.heap_from;
        let record = self.shape().chunks().iter().sum::<u64>() as f64;
        let heap = if self.load { bytes } else { (keyspace::page_fraction(distinct, self.records, 4096.0 / record + 1.0) * bytes as f64) as u64 };
        let mut regions = vec![Region { name: "records: values, keys, entries (brk heap)".into(), addr: plan.heap_from, bytes, touched: heap }];
        let last = plan.tables.len().saturating_sub(1);
        for (i, t) in plan.tables.iter().enumerate() {
            let bytes = 8 * t.heads;
            let touched = match (self.load, i == last) {
                (true, false) => bytes,
                (true, true) => randomly_touched(bytes, (self.records + self.requests) as f64),
                (false, false) => (t.rehashed_in_requests * bytes as f64) as u64,
                (false, true) => randomly_touched(bytes, distinct + plan.rehashed[1]),
            };
            regions.push(Region { name: format!("dict table {i} ({} heads)", t.heads), addr: t.addr, bytes, touched });
        }
        regions
    }

    fn load_records(&self, server: &mut Server, e: &mut Emitter) -> Result<(), String> {
        let mut key = Vec::new();
        for id in 0..self.records {
            keyspace::key_name(id, self.key_bytes as usize, &mut key);
            server.set_new(id, &key, e)?;
            if e.stopped() {
                break;
            }
        }
        Ok(())
    }

    /// The request phase; `versions` holds the client's view of each key's version.
    fn serve(&self, seed: u64, server: &mut Server, versions: &mut [u32], e: &mut Emitter) -> Result<Served, String> {
        let mut picker = KeyPicker::new(self.records, self.distribution, self.skew, seed)?;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut key = Vec::new();
        let mut served = Served::default();
        for _ in 0..self.requests {
            let id = picker.next();
            keyspace::key_name(id, self.key_bytes as usize, &mut key);
            let want = u64::from(versions[id as usize]);
            if rng.random::<f64>() < self.get_fraction {
                match server.get(id, &key, e)? {
                    Some(v) if v == want => served.gets += 1,
                    got => return Err(format!("a GET of key {id} read version {got:?}, the last SET wrote {want}")),
                }
            } else {
                versions[id as usize] += 1;
                server.set(id, &key, want + 1, e)?;
                served.sets += 1;
            }
            if e.stopped() {
                break;
            }
        }
        Ok(served)
    }

    /// The final check (not emitted): every key found with its last value, the tables
    /// holding every entry once.
    fn check(&self, server: &mut Server, versions: &[u32]) -> Result<String, String> {
        let mut discard = Discard;
        let mut quiet = Emitter::new(0, &mut discard);
        let mut key = Vec::new();
        for id in 0..self.records {
            keyspace::key_name(id, self.key_bytes as usize, &mut key);
            let h = keyspace::hash(&key);
            let tables = if server.rehashidx.is_some() { 2 } else { 1 };
            let r = (0..tables).find_map(|t| server.search(t, h, &key, &mut quiet)).ok_or_else(|| format!("key {id} is not in the keyspace"))?;
            if keyspace::value_version(id, server.recs.value_of(r)) != Some(u64::from(versions[id as usize])) {
                return Err(format!("key {id} does not hold the value of its last SET"));
            }
        }
        let chained = server.chained();
        if chained != self.records {
            return Err(format!("the dict's tables hold {chained} entries, not {}", self.records));
        }
        Ok(format!("all {} keys found with their last value; {chained} entries in {} heads after {} tables", self.records, server.ht[0].heads.len(), server.tables.len()))
    }
}

impl Workload for Redis {
    const NAME: &'static str = "redis";
    const ABOUT: &'static str = "Redis-like keyspace: a dict with incremental rehashing over malloc'ed entries and SDS strings, 50:50 GET:SET";

    fn preset(scale: Scale) -> Redis {
        let (records, requests) = match scale {
            Scale::Tiny => (8_000, 8_000),
            Scale::Small => (400_000, 1_000_000),
            Scale::Paper => (1 << 29, 60_000_000),
        };
        Redis { records, requests, key_bytes: 16, value_bytes: 128, get_fraction: 0.5, distribution: KeyDistribution::Uniform, skew: 0.99, load: true }
    }

    fn emits_set_up(&self) -> bool {
        self.load
    }

    fn validate(&self) -> Result<(), (&'static str, String)> {
        if !(1..=1 << 31).contains(&self.records) {
            return Err(("records", format!("{} records is outside 1..=2^31", self.records)));
        }
        if self.requests > 1 << 32 {
            return Err(("requests", format!("{} requests: at most 2^32", self.requests)));
        }
        keyspace::check_key_len(self.records, self.key_bytes).map_err(|m| ("key_bytes", m))?;
        if self.value_bytes == 0 || self.value_bytes % 8 != 0 || self.value_bytes > 65_528 {
            return Err(("value_bytes", format!("{} bytes: need a multiple of 8 from 8 to 65,528", self.value_bytes)));
        }
        keyspace::check_mix(self.get_fraction, self.distribution, self.skew)
    }

    fn expected(&self) -> Expected {
        let plan = self.plan();
        Expected {
            regions: self.regions(&plan),
            phases: vec![
                ExpectedPhase { name: "load", emitted: self.load, refs: self.load_refs(&plan) as u64, exact: false },
                ExpectedPhase { name: "request", emitted: true, refs: self.request_refs(&plan) as u64, exact: false },
            ],
            tolerance: 0.1,
        }
    }

    fn run(&self, seed: u64, e: &mut Emitter) -> Result<Vec<String>, String> {
        let mut server = Server::new(self.shape(), self.records)?;
        e.phase("load", self.load);
        self.load_records(&mut server, e)?;
        e.phase("request", true);
        let mut versions = vec![0u32; self.records as usize];
        let served = self.serve(seed, &mut server, &mut versions, e)?;
        if e.stopped() {
            return Ok(Vec::new());
        }
        Ok(vec![
            format!("{} GETs read the version their key's last SET wrote; {} SETs", served.gets, served.sets),
            self.check(&mut server, &versions)?,
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::emit::{Collect, PhaseStats};
    use crate::MemRef;


    fn run(p: &Redis, seed: u64) -> (Result<Vec<String>, String>, Vec<MemRef>, Vec<PhaseStats>) {
        let mut sink = Collect(Vec::new());
        let mut e = Emitter::new(0, &mut sink);
        let result = p.run(seed, &mut e);
        let phases = e.finish();
        (result, sink.0, phases)
    }

    #[test]
    fn every_encoding_and_distribution_passes_its_check_within_the_expectation() {
        let tiny = Redis::preset(Scale::Tiny);
        for p in [
            tiny.clone(),
            Redis { value_bytes: 40, distribution: KeyDistribution::Zipf, ..tiny.clone() },
            Redis { load: false, records: 20_000, ..tiny.clone() },
            Redis { records: 9_000, requests: 3_000, get_fraction: 0.9, ..tiny },
        ] {
            let (result, refs, phases) = run(&p, 3);
            let checks = result.unwrap();
            assert_eq!(checks.len(), 2, "{checks:?}");
            let expected = p.expected();
            for (got, want) in phases.iter().zip(&expected.phases) {
                let off = (got.refs as f64 - want.refs as f64).abs() / want.refs as f64;
                assert!(off < expected.tolerance, "{p:?} {}: {} references, expected {}", got.name, got.refs, want.refs);
            }
            let pages: std::collections::HashSet<u64> = refs.iter().map(|r| r.vaddr >> 12).collect();
            let want = expected.footprint_pages();
            assert!((pages.len() as f64 - want as f64).abs() <= 1.0 + expected.tolerance * want as f64, "{p:?}: {} pages, expected {want}", pages.len());
        }
    }

    #[test]
    fn the_plan_places_the_tables_where_the_run_allocates_them() {
        for p in [Redis::preset(Scale::Tiny), Redis { value_bytes: 40, records: 70_000, requests: 100, ..Redis::preset(Scale::Tiny) }] {
            let mut server = Server::new(p.shape(), p.records).unwrap();
            let mut discard = Discard;
            let mut e = Emitter::new(0, &mut discard);
            p.load_records(&mut server, &mut e).unwrap();
            let plan = p.plan();
            let planned: Vec<(u64, u64)> = plan.tables.iter().map(|t| (t.addr, 8 * t.heads)).collect();
            assert_eq!(planned, server.tables);
            let top = e.heap_top();
            assert!(plan.heap_to >= top && plan.heap_to - top < 4096, "planned heap end {:#x}, run {top:#x}", plan.heap_to);
        }
    }

    #[test]
    fn the_dict_rehashes_incrementally_and_a_set_reuses_the_chunks_it_freed() {
        let p = Redis { records: 1000, requests: 0, ..Redis::preset(Scale::Tiny) };
        let mut server = Server::new(p.shape(), p.records).unwrap();
        let mut discard = Discard;
        let mut e = Emitter::new(0, &mut discard);
        p.load_records(&mut server, &mut e).unwrap();
        assert_eq!(server.ht[0].heads.len(), 1024);
        assert_eq!(server.tables.len(), 9, "4 heads, then doubling to 1024");
        let at = |v: Value| (v.robj, v.sds);
        let (loaded5, loaded6) = (at(server.recs.value[5]), at(server.recs.value[6]));
        let mut key = Vec::new();
        keyspace::key_name(5, 16, &mut key);
        server.set(5, &key, 1, &mut e).unwrap();
        assert!(server.recs.value[5].robj > loaded6.0, "the first SET's object comes from the top of the heap");
        keyspace::key_name(6, 16, &mut key);
        server.set(6, &key, 1, &mut e).unwrap();
        assert_eq!(at(server.recs.value[6]), loaded5, "the next SET gets the freed chunks back");
        keyspace::key_name(5, 16, &mut key);
        server.set(5, &key, 2, &mut e).unwrap();
        assert_eq!(at(server.recs.value[5]), loaded6);
        assert_eq!(server.get(5, &key, &mut e).unwrap(), Some(2));
    }

    #[test]
    fn a_wrong_value_fails_the_check() {
        let p = Redis { records: 300, requests: 0, ..Redis::preset(Scale::Tiny) };
        let mut server = Server::new(p.shape(), p.records).unwrap();
        let mut discard = Discard;
        let mut e = Emitter::new(0, &mut discard);
        p.load_records(&mut server, &mut e).unwrap();
        let versions = vec![0u32; 300];
        assert!(p.check(&mut server, &versions).is_ok());
        server.recs.value_mut(17)[2] ^= 4;
        assert!(p.check(&mut server, &versions).unwrap_err().contains("last SET"));
    }

    #[test]
    fn the_same_seed_gives_the_same_stream() {
        let p = Redis { records: 500, requests: 500, ..Redis::preset(Scale::Tiny) };
        assert_eq!(run(&p, 2).1, run(&p, 2).1);
        assert_ne!(run(&p, 2).1, run(&p, 3).1);
    }

    #[test]
    fn presets_have_the_documented_footprints() {
        let mib = |s| Redis::preset(s).expected().footprint_bytes() as f64 / (1 << 20) as f64;
        assert!((1.5..4.0).contains(&mib(Scale::Tiny)), "{}", mib(Scale::Tiny));
        assert!((90.0..110.0).contains(&mib(Scale::Small)), "{}", mib(Scale::Small));
        let gib = mib(Scale::Paper) / 1024.0;
        assert!((126.0..134.0).contains(&gib), "{gib} GiB");
    }

    #[test]
    fn bad_parameters_name_the_field() {
        let p = Redis::preset(Scale::Tiny);
        let bad = |q: Redis| q.validate().unwrap_err().0;
        assert_eq!(bad(Redis { records: 0, ..p.clone() }), "records");
        assert_eq!(bad(Redis { requests: 1 << 33, ..p.clone() }), "requests");
        assert_eq!(bad(Redis { value_bytes: 12, ..p.clone() }), "value_bytes");
        assert_eq!(bad(Redis { key_bytes: 300, ..p.clone() }), "key_bytes");
        assert_eq!(bad(Redis { get_fraction: -0.1, ..p.clone() }), "get_fraction");
        assert_eq!(bad(Redis { distribution: KeyDistribution::Zipf, skew: 9.0, ..p }), "skew");
    }
}
