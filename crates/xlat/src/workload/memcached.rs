//! Memcached: a key-value cache after memcached 1.6's item store, one worker thread.
//!
//! * **Items** are memcached's: a 48-byte header (LRU `next`/`prev`, hash-chain `h_next`,
//!   `time`, `exptime`, `nbytes`, `refcount`, `it_flags`, `slabs_clsid`, `nkey`), the 8-byte
//!   CAS, the key and its NUL, then the value and its `\r\n`.
//! * **Slab allocator**: classes from 96 bytes growing by `factor` (memcached's `-f`, 1.25),
//!   8-byte aligned, up to 512 KiB (`slabs_init`); an item takes a chunk of the smallest class
//!   that holds it. A class with no free chunk takes a 1 MiB page from `malloc`, clears it and
//!   threads every chunk onto its free list (`do_slabs_newslab`,
//!   `split_slab_page_into_freelist`: the list's head is the page's last chunk, so chunks are
//!   handed out from the end of the page down).
//! * **Hash table** (`assoc.c`): `2^hashpower` bucket heads (`-o hashpower`, 16), chained
//!   through `h_next`, new items at the head. When the items exceed 1.5 × the buckets, a table
//!   twice as large is `calloc`ed and the maintenance thread moves the old table's buckets
//!   into it, `bulk_move` buckets after each operation (memcached's thread runs alongside the
//!   workers; a lookup meanwhile reads the old table for buckets not yet moved); the old
//!   table is freed when its last bucket has moved.
//! * **Allocations** (the tables and the slab pages) are made from the process's allocator
//!   where the program makes them, so the stream carries what they map and unmap
//!   (`docs/workloads.md`, "Address-space events"); the expectation replays them apart
//!   (`Memcached::plan`) and gets the same addresses.
//!
//! Phase `load` (emitted when `load` is true) stores `records` items of keys `0..records` in
//! order as sets do (`do_store_item`: a lookup that finds nothing, then `do_item_alloc`,
//! the key and value copied in, `do_item_link`: CAS, hash chain, LRU list). Phase `request`
//! runs `requests` requests, each a get with probability `get_fraction` and a set otherwise,
//! of a key drawn uniformly or from a Zipf distribution: a lookup (hash, bucket, chain walk
//! comparing key lengths and key bytes), then a get bumps the item's LRU flags and reads its
//! length, key and value (as the reply is sent); a set writes a new value of the same size.
//!
//! Self-check: every request finds its key; every get reads the version of the value that
//! the last set of that key wrote (a value's words are a function of key and version); at
//! the end (not emitted) every key is found and the chains hold exactly `records` items.
//!
//! Instructions: 1,500 per request or insertion (parsing, hashing, locking, the reply;
//! the kernel's network path is not counted), 8 per chain item compared, 2 per 32-byte piece
//! copied, 12 per chunk threaded onto a free list, 4 per bucket and 20 per item migrated.

use super::address_space::{AddressSpace, Allocator};
use super::emit::{pieces, Discard, Emitter};
use super::keyspace::{self, KeyDistribution, KeyPicker};
use super::{randomly_touched, Expected, ExpectedPhase, Region, Scale, Workload};
use crate::memref::AccessKind;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

/// Bytes of a slab page (`settings.slab_page_size`).
const SLAB_PAGE: u64 = 1 << 20;
/// The largest chunk (`settings.slab_chunk_size_max`, half a page).
const CHUNK_MAX: u64 = SLAB_PAGE / 2;
/// `sizeof(item)` on 64-bit Linux.
const ITEM_HEADER: u64 = 48;
/// The smallest chunk: the header plus `settings.chunk_size` (48).
const SMALLEST_CHUNK: u64 = ITEM_HEADER + 48;
/// Item header fields: offsets.
const NEXT_AT: u64 = 0;
const PREV_AT: u64 = 8;
const H_NEXT_AT: u64 = 16;
const TIME_AT: u64 = 24;
const EXPTIME_AT: u64 = 28;
const NBYTES_AT: u64 = 32;
const REFCOUNT_AT: u64 = 36;
const FLAGS_AT: u64 = 38;
const CLSID_AT: u64 = 40;
const NKEY_AT: u64 = 41;
const CAS_AT: u64 = 48;
/// Where the key starts: after the header and the CAS.
const KEY_AT: u64 = 56;
/// `it_flags` bits of the segmented LRU: fetched once, fetched twice or more.
const FETCHED: u8 = 1;
const ACTIVE: u8 = 2;
/// "No item" in the host's links.
const NONE: u32 = u32::MAX;

const REQUEST_INSTRUCTIONS: u64 = 1_500;
const CHAIN_INSTRUCTIONS: u64 = 8;
const PIECE_INSTRUCTIONS: u64 = 2;
const SPLIT_INSTRUCTIONS: u64 = 12;
const BUCKET_INSTRUCTIONS: u64 = 4;
const MIGRATE_INSTRUCTIONS: u64 = 20;

/// Parameters of Memcached.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memcached {
    /// Items stored before the requests (keys `0..records`), up to 2^31.
    pub records: u64,
    /// Requests after the load.
    pub requests: u64,
    /// Bytes of each key: `key:` and a zero-padded number (8..=250).
    pub key_bytes: u32,
    /// Bytes of each value, a multiple of 8 (the item adds its header, key and `\r\n`).
    pub value_bytes: u32,
    /// Fraction of requests that are gets, the rest sets (0.8: 80% gets).
    pub get_fraction: f64,
    /// How requests pick keys: `zipf` (default) or `uniform`.
    pub distribution: KeyDistribution,
    /// The Zipf exponent (0.99, YCSB's); unused for `uniform`.
    pub skew: f64,
    /// Growth factor between slab classes (memcached's `-f`, 1.25).
    pub factor: f64,
    /// log2 of the initial buckets (memcached's `-o hashpower`, 16; 12..=31).
    pub hashpower: u32,
    /// Buckets the maintenance thread moves into a grown table after each operation.
    pub bulk_move: u32,
    /// Emit the load phase (it is always performed).
    pub load: bool,
}

/// Where an item's parts are and how big they are.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    key_bytes: u64,
    value_words: usize,
    /// Header, CAS, key, NUL, value and `\r\n`.
    item_bytes: u64,
    /// The chunk size of the item's slab class.
    chunk: u64,
    /// Chunks per slab page.
    perslab: u64,
}

impl Geometry {
    fn data_at(&self) -> u64 {
        KEY_AT + self.key_bytes + 1
    }

    /// `nbytes`: the value and its `\r\n`.
    fn nbytes(&self) -> u64 {
        8 * self.value_words as u64 + 2
    }
}

/// The chunk sizes of memcached's slab classes for `factor` (`slabs_init`).
fn class_sizes(factor: f64) -> Vec<u64> {
    let mut sizes = Vec::new();
    let mut size = SMALLEST_CHUNK;
    while (size as f64) < CHUNK_MAX as f64 / factor && sizes.len() < 62 {
        size = size.next_multiple_of(8);
        sizes.push(size);
        size = (size as f64 * factor) as u64;
    }
    sizes.push(CHUNK_MAX);
    sizes
}

/// One hash table of the run, as planned.
#[derive(Clone, Debug)]
struct PlannedTable {
    addr: u64,
    buckets: u64,
    /// Buckets moved out of it during the requests.
    moved_in_requests: u64,
}

/// Work of the maintenance thread in one phase.
#[derive(Clone, Copy, Debug, Default)]
struct Moved {
    buckets: f64,
    /// Expected items moved.
    items: f64,
}

/// The allocations of a run and the counts its expectation needs, computed without the data.
#[derive(Clone, Debug, Default)]
struct Plan {
    tables: Vec<PlannedTable>,
    pages: Vec<u64>,
    /// Σ over insertions of the items per bucket then (the chain a lookup that finds nothing
    /// walks).
    load_chain: f64,
    /// Migration during the load and during the requests.
    moved: [Moved; 2],
    /// Items per bucket (other than the one looked up) during the requests.
    request_load: f64,
}

/// An expansion in progress while planning.
struct Expansion {
    /// Old buckets moved so far.
    moved: u64,
    /// Expected items per old bucket not yet moved.
    density: f64,
}

impl Memcached {
    fn geometry(&self) -> Geometry {
        let value_words = (self.value_bytes / 8) as usize;
        let item_bytes = KEY_AT + u64::from(self.key_bytes) + 1 + 8 * value_words as u64 + 2;
        let chunk = class_sizes(self.factor).into_iter().find(|&c| c >= item_bytes).unwrap_or(CHUNK_MAX);
        Geometry { key_bytes: u64::from(self.key_bytes), value_words, item_bytes, chunk, perslab: SLAB_PAGE / chunk }
    }

    /// Replays the run's allocations in its order: the first table, a slab page whenever the
    /// free list is empty, a grown table when the items exceed 1.5 × the buckets, and the old
    /// table's `free` once the maintenance thread has moved its last bucket.
    fn plan(&self) -> Plan {
        let geo = self.geometry();
        let mut space = AddressSpace::new();
        let mut plan = Plan::default();
        // calloc: a fresh mapping needs no clearing (a heap chunk's clearing is not emitted).
        let first = 1u64 << self.hashpower;
        plan.tables.push(PlannedTable { addr: space.malloc(first * 8), buckets: first, moved_in_requests: 0 });
        let mut items = 0u64;
        let mut expansion: Option<Expansion> = None;
        for op in 0..self.records + self.requests {
            let loading = op < self.records;
            let buckets = plan.tables.last().map_or(1, |t| t.buckets);
            if loading {
                plan.load_chain += items as f64 / buckets as f64;
                if op % geo.perslab == 0 {
                    plan.pages.push(space.malloc(SLAB_PAGE));
                }
                items += 1;
                match &mut expansion {
                    // An item lands in an old bucket not yet moved, and will move with it.
                    Some(x) => x.density += 1.0 / (buckets / 2) as f64,
                    None if items > buckets * 3 / 2 => {
                        plan.tables.push(PlannedTable { addr: space.malloc(2 * buckets * 8), buckets: 2 * buckets, moved_in_requests: 0 });
                        expansion = Some(Expansion { moved: 0, density: items as f64 / buckets as f64 });
                    }
                    None => {}
                }
            }
            if let Some(x) = &mut expansion {
                let old = plan.tables.len() - 2;
                let step = u64::from(self.bulk_move).min(plan.tables[old].buckets - x.moved);
                x.moved += step;
                let phase = &mut plan.moved[usize::from(!loading)];
                phase.buckets += step as f64;
                phase.items += step as f64 * x.density;
                if !loading {
                    plan.tables[old].moved_in_requests += step;
                }
                if x.moved == plan.tables[old].buckets {
                    space.free(plan.tables[old].addr);
                    expansion = None;
                }
            }
        }
        plan.request_load = items.saturating_sub(1) as f64 / plan.tables.last().map_or(1, |t| t.buckets) as f64;
        plan
    }
}

/// The items in host memory, indexed by allocation order, with their chunks' addresses.
struct Items {
    geo: Geometry,
    /// The slab pages taken so far, in order.
    pages: Vec<u64>,
    keys: Vec<u8>,
    values: Vec<u64>,
    h_next: Vec<u32>,
    lru_flags: Vec<u8>,
    len: usize,
}

impl Items {
    fn new(geo: Geometry, records: u64) -> Result<Items, String> {
        let n = records as usize;
        let alloc = |bytes: u64| crate::host::cannot_allocate(bytes, "the memcached items");
        let mut keys = Vec::new();
        keys.try_reserve_exact(n * geo.key_bytes as usize).map_err(|_| alloc(records * geo.key_bytes))?;
        let mut values = Vec::new();
        values.try_reserve_exact(n * geo.value_words).map_err(|_| alloc(records * 8 * geo.value_words as u64))?;
        Ok(Items { geo, pages: Vec::new(), keys, values, h_next: Vec::with_capacity(n), lru_flags: Vec::with_capacity(n), len: 0 })
    }

    /// The address of item `h`'s chunk: pages in order, each handed out from its end.
    fn addr(&self, h: u32) -> u64 {
        let (page, i) = (u64::from(h) / self.geo.perslab, u64::from(h) % self.geo.perslab);
        self.pages[page as usize] + (self.geo.perslab - 1 - i) * self.geo.chunk
    }

    fn key(&self, h: u32) -> &[u8] {
        let k = self.geo.key_bytes as usize;
        &self.keys[h as usize * k..(h as usize + 1) * k]
    }

    fn value(&self, h: u32) -> &[u64] {
        let w = self.geo.value_words;
        &self.values[h as usize * w..(h as usize + 1) * w]
    }

    fn value_mut(&mut self, h: u32) -> &mut [u64] {
        let w = self.geo.value_words;
        &mut self.values[h as usize * w..(h as usize + 1) * w]
    }

    /// `do_slabs_newslab`: a page from `malloc`, cleared, then its chunks threaded onto the
    /// free list in address order (each becoming the head).
    fn new_page(&mut self, e: &mut Emitter) {
        let base = e.malloc(SLAB_PAGE);
        self.pages.push(base);
        let stores = e.block(base, SLAB_PAGE, AccessKind::Store);
        e.instructions(PIECE_INSTRUCTIONS * stores);
        for c in 0..self.geo.perslab {
            let at = base + c * self.geo.chunk;
            e.load_store(at + FLAGS_AT, 2);
            e.store(at + CLSID_AT, 1);
            e.store(at + PREV_AT, 8);
            e.store(at + NEXT_AT, 8);
            if c > 0 {
                e.store(at - self.geo.chunk + PREV_AT, 8);
            }
        }
        e.instructions(SPLIT_INSTRUCTIONS * self.geo.perslab);
    }

    /// `do_slabs_alloc`: pops the free list's head (taking a new page when it is empty).
    fn alloc(&mut self, e: &mut Emitter) -> u32 {
        let h = self.len as u32;
        let slot = u64::from(h) % self.geo.perslab;
        if slot == 0 {
            self.new_page(e);
        }
        let at = self.addr(h);
        e.load(at + NEXT_AT, 8);
        if slot + 1 < self.geo.perslab {
            e.store(at - self.geo.chunk + PREV_AT, 8);
        }
        e.load_store(at + FLAGS_AT, 2);
        e.store(at + REFCOUNT_AT, 2);
        self.len += 1;
        self.h_next.push(NONE);
        self.lru_flags.push(0);
        h
    }

    /// `do_item_alloc`'s header, key and NUL, then the value as the connection reads it in.
    fn init(&mut self, h: u32, key: &[u8], id: u64, e: &mut Emitter) {
        let at = self.addr(h);
        for field in [NEXT_AT, PREV_AT, H_NEXT_AT] {
            e.store(at + field, 8);
        }
        e.load_store(at + FLAGS_AT, 2);
        e.store(at + NKEY_AT, 1);
        e.store(at + NBYTES_AT, 4);
        e.store(at + EXPTIME_AT, 4);
        e.store(at + CLSID_AT, 1);
        self.keys.extend_from_slice(key);
        let pieces = e.block(at + KEY_AT, self.geo.key_bytes, AccessKind::Store);
        e.store(at + KEY_AT + self.geo.key_bytes, 1);
        self.values.resize(self.values.len() + self.geo.value_words, 0);
        e.instructions(PIECE_INSTRUCTIONS * pieces);
        self.write_value(h, id, 0, e);
    }

    /// Writes version `version` of key `id`'s value into item `h`.
    fn write_value(&mut self, h: u32, id: u64, version: u64, e: &mut Emitter) {
        keyspace::fill_value(id, version, self.value_mut(h));
        let pieces = e.block(self.addr(h) + self.geo.data_at(), self.geo.nbytes(), AccessKind::Store);
        e.instructions(PIECE_INSTRUCTIONS * pieces);
    }

    /// `do_item_link` after the hash insertion: flags, time, CAS, the LRU head, references.
    fn link(&self, h: u32, e: &mut Emitter) {
        let at = self.addr(h);
        e.load_store(at + FLAGS_AT, 2);
        e.store(at + TIME_AT, 4);
        e.store(at + CAS_AT, 8);
        e.store(at + PREV_AT, 8);
        e.store(at + NEXT_AT, 8);
        if h > 0 {
            e.store(self.addr(h - 1) + PREV_AT, 8);
        }
        // refcount_incr by the link, then item_remove's decrement when the request is done.
        e.load_store(at + REFCOUNT_AT, 2);
        e.load_store(at + REFCOUNT_AT, 2);
    }

    /// A get's work on its item: bump, length, key and value read as the reply goes out.
    fn get(&mut self, h: u32, e: &mut Emitter) -> Option<u64> {
        let at = self.addr(h);
        e.load_store(at + REFCOUNT_AT, 2);
        e.load(at + EXPTIME_AT, 4);
        e.load(at + FLAGS_AT, 2);
        let flags = &mut self.lru_flags[h as usize];
        if *flags & ACTIVE == 0 {
            *flags |= if *flags & FETCHED == 0 { FETCHED } else { ACTIVE };
            e.store(at + FLAGS_AT, 2);
        }
        e.load(at + NBYTES_AT, 4);
        let key_pieces = e.block(at + KEY_AT, self.geo.key_bytes, AccessKind::Load);
        let value_pieces = e.block(at + self.geo.data_at(), self.geo.nbytes(), AccessKind::Load);
        e.load_store(at + REFCOUNT_AT, 2);
        e.instructions(PIECE_INSTRUCTIONS * (key_pieces + value_pieces));
        let id = std::str::from_utf8(&self.key(h)[4..]).ok()?.parse().ok()?;
        keyspace::value_version(id, self.value(h))
    }

    /// A set's work on its item, in place: the new value, time and CAS.
    fn set(&mut self, h: u32, id: u64, version: u64, e: &mut Emitter) {
        let at = self.addr(h);
        e.load_store(at + REFCOUNT_AT, 2);
        self.write_value(h, id, version, e);
        e.store(at + TIME_AT, 4);
        e.store(at + CAS_AT, 8);
        e.load_store(at + REFCOUNT_AT, 2);
    }
}

/// The hash table: the primary table and, while it grows, the old one.
struct Assoc {
    hashpower: u32,
    primary: Vec<u32>,
    primary_addr: u64,
    old: Vec<u32>,
    old_addr: u64,
    expanding: bool,
    /// The next old bucket to move.
    expand_bucket: usize,
    items: u64,
    /// Tables allocated so far.
    tables: usize,
}

fn buckets(hashpower: u32, what: &str) -> Result<Vec<u32>, String> {
    let n = 1usize << hashpower;
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| crate::host::cannot_allocate(4 * n as u64, what))?;
    v.resize(n, NONE);
    Ok(v)
}

impl Assoc {
    fn new(hashpower: u32, addr: u64) -> Result<Assoc, String> {
        let primary = buckets(hashpower, "the memcached hash table")?;
        Ok(Assoc { hashpower, primary, primary_addr: addr, old: Vec::new(), old_addr: 0, expanding: false, expand_bucket: 0, items: 0, tables: 1 })
    }

    /// The table and bucket holding hash `hv`'s chain, and the bucket's address.
    fn bucket(&self, hv: u32) -> (bool, usize, u64) {
        let old_bucket = (hv as usize) & ((1 << (self.hashpower - 1)) - 1);
        if self.expanding && old_bucket >= self.expand_bucket {
            (true, old_bucket, self.old_addr + 8 * old_bucket as u64)
        } else {
            let b = (hv as usize) & ((1 << self.hashpower) - 1);
            (false, b, self.primary_addr + 8 * b as u64)
        }
    }

    fn head(&self, in_old: bool, b: usize) -> u32 {
        if in_old { self.old[b] } else { self.primary[b] }
    }

    /// `assoc_find`: the item with key `key`, walking its chain.
    fn find(&self, items: &Items, hv: u32, key: &[u8], e: &mut Emitter) -> Option<u32> {
        let (in_old, b, addr) = self.bucket(hv);
        e.load(addr, 8);
        let mut it = self.head(in_old, b);
        let mut walked = 0;
        let found = loop {
            if it == NONE {
                break None;
            }
            walked += 1;
            let at = items.addr(it);
            e.load(at + NKEY_AT, 1);
            if compare_key(items.key(it), key, at + KEY_AT, e) {
                break Some(it);
            }
            e.load(at + H_NEXT_AT, 8);
            it = items.h_next[it as usize];
        };
        e.instructions(CHAIN_INSTRUCTIONS * walked);
        found
    }

    /// `assoc_insert`: item `h` at the head of its chain. Returns true when the table should
    /// grow.
    fn insert(&mut self, items: &mut Items, h: u32, hv: u32, e: &mut Emitter) -> bool {
        let (in_old, b, addr) = self.bucket(hv);
        e.load(addr, 8);
        e.store(items.addr(h) + H_NEXT_AT, 8);
        e.store(addr, 8);
        let table = if in_old { &mut self.old } else { &mut self.primary };
        items.h_next[h as usize] = std::mem::replace(&mut table[b], h);
        self.items += 1;
        !self.expanding && self.items > (3u64 << self.hashpower) / 2
    }

    /// `assoc_expand`: a table twice as large at `addr`; the current one becomes the old.
    fn expand(&mut self, addr: u64) -> Result<(), String> {
        let grown = buckets(self.hashpower + 1, "the memcached hash table")?;
        self.old = std::mem::replace(&mut self.primary, grown);
        self.old_addr = std::mem::replace(&mut self.primary_addr, addr);
        self.hashpower += 1;
        self.expanding = true;
        self.expand_bucket = 0;
        self.tables += 1;
        Ok(())
    }

    /// The maintenance thread: moves up to `n` old buckets into the primary table, each
    /// item rehashed from its key. Returns the old table's address when its last bucket has
    /// moved (the caller frees it).
    fn migrate(&mut self, items: &mut Items, n: u32, e: &mut Emitter) -> Option<u64> {
        for _ in 0..n {
            if !self.expanding {
                return None;
            }
            let b = self.expand_bucket;
            e.load(self.old_addr + 8 * b as u64, 8);
            let mut it = self.old[b];
            while it != NONE {
                it = self.move_item(items, it, e);
            }
            self.old[b] = NONE;
            e.store(self.old_addr + 8 * b as u64, 8);
            e.instructions(BUCKET_INSTRUCTIONS);
            self.expand_bucket += 1;
            if self.expand_bucket == self.old.len() {
                self.expanding = false;
                self.old = Vec::new();
                return Some(self.old_addr);
            }
        }
        None
    }

    /// Moves item `it` to the head of its chain in the primary table; returns the next item
    /// of its old chain.
    fn move_item(&mut self, items: &mut Items, it: u32, e: &mut Emitter) -> u32 {
        let at = items.addr(it);
        e.load(at + H_NEXT_AT, 8);
        let next = items.h_next[it as usize];
        e.load(at + NKEY_AT, 1);
        let pieces = e.block(at + KEY_AT, items.geo.key_bytes, AccessKind::Load);
        let nb = keyspace::hash(items.key(it)) as u32 as usize & ((1 << self.hashpower) - 1);
        e.store(at + H_NEXT_AT, 8);
        e.load_store(self.primary_addr + 8 * nb as u64, 8);
        items.h_next[it as usize] = std::mem::replace(&mut self.primary[nb], it);
        e.instructions(MIGRATE_INSTRUCTIONS + PIECE_INSTRUCTIONS * pieces);
        next
    }
}

/// `memcmp` of a stored key with the requested one after `nkey` matched (all keys have one
/// length), piece by piece until a piece differs. True when equal.
fn compare_key(stored: &[u8], wanted: &[u8], at: u64, e: &mut Emitter) -> bool {
    for (i, (a, b)) in stored.chunks(32).zip(wanted.chunks(32)).enumerate() {
        e.load(at + 32 * i as u64, a.len() as u16);
        if a != b {
            e.instructions(PIECE_INSTRUCTIONS);
            return false;
        }
    }
    e.instructions(PIECE_INSTRUCTIONS * pieces(stored.len() as u64));
    true
}

/// The run's state: the items and the hash table.
struct Server {
    items: Items,
    assoc: Assoc,
    bulk_move: u32,
}

impl Server {
    /// A server whose first table (`2^hashpower` buckets) is `calloc`ed from `e`: a fresh
    /// mapping needs no clearing (a heap chunk's clearing is not emitted).
    fn new(p: &Memcached, e: &mut Emitter) -> Result<Server, String> {
        let items = Items::new(p.geometry(), p.records)?;
        let assoc = Assoc::new(p.hashpower, e.malloc(8 << p.hashpower))?;
        Ok(Server { items, assoc, bulk_move: p.bulk_move })
    }

    /// `do_store_item` of a new key: a lookup that must find nothing, then a new item
    /// linked into its chain, the table grown when it is too full.
    fn insert(&mut self, id: u64, key: &[u8], e: &mut Emitter) -> Result<(), String> {
        let hv = keyspace::hash(key) as u32;
        if self.assoc.find(&self.items, hv, key, e).is_some() {
            return Err(format!("key {id} was found before it was stored"));
        }
        let h = self.items.alloc(e);
        self.items.init(h, key, id, e);
        if self.assoc.insert(&mut self.items, h, hv, e) {
            // calloc, as the first table.
            let addr = e.malloc(16 << self.assoc.hashpower);
            self.assoc.expand(addr)?;
        }
        self.items.link(h, e);
        e.instructions(REQUEST_INSTRUCTIONS);
        Ok(())
    }

    /// The item of key `id`, which must be there.
    fn lookup(&self, id: u64, key: &[u8], e: &mut Emitter) -> Result<u32, String> {
        let hv = keyspace::hash(key) as u32;
        self.assoc.find(&self.items, hv, key, e).ok_or_else(|| format!("a request for key {id} found nothing"))
    }

    /// After each operation, the maintenance thread's share of a migration, and the old
    /// table's `free` when it is done.
    fn maintain(&mut self, e: &mut Emitter) {
        if let Some(old) = self.assoc.migrate(&mut self.items, self.bulk_move, e) {
            e.free(old);
        }
    }
}

/// Requests served, by kind.
#[derive(Default)]
struct Served {
    gets: u64,
    sets: u64,
}

impl Memcached {
    /// The load phase.
    fn load_items(&self, server: &mut Server, e: &mut Emitter) -> Result<(), String> {
        let mut key = Vec::new();
        for id in 0..self.records {
            keyspace::key_name(id, self.key_bytes as usize, &mut key);
            server.insert(id, &key, e)?;
            server.maintain(e);
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
            let h = server.lookup(id, &key, e)?;
            let want = u64::from(versions[id as usize]);
            if rng.random::<f64>() < self.get_fraction {
                match server.items.get(h, e) {
                    Some(v) if v == want => served.gets += 1,
                    got => return Err(format!("a get of key {id} read version {got:?}, the last set wrote {want}")),
                }
            } else {
                versions[id as usize] += 1;
                server.items.set(h, id, want + 1, e);
                served.sets += 1;
            }
            e.instructions(REQUEST_INSTRUCTIONS);
            server.maintain(e);
            if e.stopped() {
                break;
            }
        }
        Ok(served)
    }

    /// The final check (not emitted): every key found with its last value, the chains
    /// holding every item once.
    fn check(&self, server: &Server, versions: &[u32]) -> Result<String, String> {
        let mut discard = Discard;
        let mut quiet = Emitter::new(0, &mut discard);
        let mut key = Vec::new();
        for id in 0..self.records {
            keyspace::key_name(id, self.key_bytes as usize, &mut key);
            let h = server.lookup(id, &key, &mut quiet)?;
            if keyspace::value_version(id, server.items.value(h)) != Some(u64::from(versions[id as usize])) {
                return Err(format!("key {id} does not hold the value of its last set"));
            }
        }
        let chained = chained_items(&server.assoc, &server.items);
        if chained != self.records {
            return Err(format!("the hash chains hold {chained} items, not {}", self.records));
        }
        Ok(format!(
            "all {} keys found with their last value; {} items chained in 2^{} buckets after {} table expansions",
            self.records, chained, server.assoc.hashpower, server.assoc.tables - 1
        ))
    }

    /// Expected references of the load phase.
    fn load_refs(&self, plan: &Plan) -> f64 {
        let geo = self.geometry();
        let (n, pk, pv) = (self.records as f64, pieces(geo.key_bytes) as f64, pieces(geo.nbytes()) as f64);
        // Per item: the failed lookup's bucket, alloc 5, header 9, key and NUL, value,
        // hash insertion 3, link 13; less the allocations without a next free chunk and the
        // first item's missing LRU neighbour.
        let per_item = 1.0 + 5.0 + 9.0 + pk + 1.0 + pv + 3.0 + 13.0;
        let last_in_page = (self.records / geo.perslab) as f64 + 1.0;
        let page = (pieces(SLAB_PAGE) + 6 * geo.perslab - 1) as f64;
        n * per_item - last_in_page + plan.load_chain * (2.0 + pk) + plan.pages.len() as f64 * page + moved_refs(plan.moved[0], pk)
    }

    /// Expected references of the request phase.
    fn request_refs(&self, plan: &Plan) -> f64 {
        let geo = self.geometry();
        let (r, pk, pv) = (self.requests as f64, pieces(geo.key_bytes) as f64, pieces(geo.nbytes()) as f64);
        let gets = r * self.get_fraction;
        // A hit walks past half the other items of its chain.
        let lookup = 1.0 + plan.request_load / 2.0 * (2.0 + pk) + 1.0 + pk;
        let fetched = |times| keyspace::expected_drawn(self.records, gets as u64, times, self.distribution, self.skew);
        r * lookup + gets * (7.0 + pk + pv) + fetched(1) + fetched(2) + (r - gets) * (6.0 + pv) + moved_refs(plan.moved[1], pk)
    }

    /// The regions, with what the emitted phases touch.
    fn regions(&self, plan: &Plan) -> Vec<Region> {
        let geo = self.geometry();
        let distinct = keyspace::expected_drawn(self.records, self.requests, 1, self.distribution, self.skew);
        let last = plan.tables.len() - 1;
        let mut regions: Vec<Region> = plan.tables.iter().enumerate().map(|(i, t)| {
            let bytes = 8 * t.buckets;
            let touched = match (self.load, i == last) {
                (true, false) => bytes,
                (true, true) => randomly_touched(bytes, (self.records + self.requests) as f64),
                (false, false) => 8 * t.moved_in_requests,
                (false, true) => randomly_touched(bytes, distinct + 2.0 * plan.moved[1].items),
            };
            Region { name: format!("hash table {i} (2^{} buckets)", t.buckets.trailing_zeros()), addr: t.addr, bytes, touched }
        }).collect();
        let per_page = (4096 + geo.item_bytes) as f64 / geo.chunk as f64;
        let fraction = if self.load { 1.0 } else { keyspace::page_fraction(distinct, self.records, per_page) };
        for (i, &page) in plan.pages.iter().enumerate() {
            // The load clears whole pages; requests reach the chunks in use only.
            let used = (self.records - i as u64 * geo.perslab).min(geo.perslab) * geo.chunk;
            let touched = if self.load { SLAB_PAGE } else { (fraction * used as f64) as u64 };
            regions.push(Region { name: format!("slab page {i} (chunks of {} B)", geo.chunk), addr: page, bytes: SLAB_PAGE, touched });
        }
        regions
    }
}

/// References of a migration's moved buckets and items.
fn moved_refs(moved: Moved, key_pieces: f64) -> f64 {
    2.0 * moved.buckets + moved.items * (5.0 + key_pieces)
}

/// Items reachable through the chains of both tables (not emitted).
fn chained_items(assoc: &Assoc, items: &Items) -> u64 {
    let mut n = 0;
    for &head in assoc.primary.iter().chain(&assoc.old) {
        let mut it = head;
        while it != NONE {
            n += 1;
            it = items.h_next[it as usize];
        }
    }
    n
}

impl Workload for Memcached {
    const NAME: &'static str = "memcached";
    const ABOUT: &'static str = "memcached-like cache: slab-allocated items in a growing chained hash table, 80:20 gets:sets of Zipf keys";

    fn preset(scale: Scale) -> Memcached {
        let (records, requests) = match scale {
            Scale::Tiny => (2_000, 4_000),
            Scale::Small => (88_000, 1_000_000),
            Scale::Paper => (56_000_000, 10_000_000),
        };
        Memcached {
            records,
            requests,
            key_bytes: 16,
            value_bytes: 1024,
            get_fraction: 0.8,
            distribution: KeyDistribution::Zipf,
            skew: 0.99,
            factor: 1.25,
            hashpower: 16,
            bulk_move: 64,
            load: true,
        }
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
        if self.value_bytes == 0 || self.value_bytes % 8 != 0 {
            return Err(("value_bytes", format!("{} bytes: need a positive multiple of 8", self.value_bytes)));
        }
        if self.geometry().item_bytes > CHUNK_MAX {
            return Err(("value_bytes", format!("an item of {} bytes is larger than the largest slab chunk (512 KiB)", self.geometry().item_bytes)));
        }
        keyspace::check_mix(self.get_fraction, self.distribution, self.skew)?;
        if !(1.01..=4.0).contains(&self.factor) {
            return Err(("factor", format!("{} is outside 1.01..=4", self.factor)));
        }
        if !(12..=31).contains(&self.hashpower) {
            return Err(("hashpower", format!("{} is outside 12..=31", self.hashpower)));
        }
        if !(1..=1 << 20).contains(&self.bulk_move) {
            return Err(("bulk_move", format!("{} is outside 1..=2^20", self.bulk_move)));
        }
        Ok(())
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
        e.phase("load", self.load);
        let mut server = Server::new(self, e)?;
        self.load_items(&mut server, e)?;
        e.phase("request", true);
        let mut versions = vec![0u32; self.records as usize];
        let served = self.serve(seed, &mut server, &mut versions, e)?;
        if e.stopped() {
            return Ok(Vec::new());
        }
        Ok(vec![
            format!("{} gets read the version their key's last set wrote; {} sets", served.gets, served.sets),
            self.check(&server, &versions)?,
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::emit::Collect;
    use crate::MemRef;


    fn run(p: &Memcached, seed: u64) -> (Result<Vec<String>, String>, Vec<MemRef>, Vec<crate::workload::emit::PhaseStats>) {
        let mut sink = Collect(Vec::new());
        let mut e = Emitter::new(0, &mut sink);
        let result = p.run(seed, &mut e);
        let phases = e.finish();
        (result, sink.0, phases)
    }

    /// Small enough to run in a test, with two expansions of the table.
    fn growing() -> Memcached {
        Memcached { records: 14_000, requests: 6_000, value_bytes: 96, hashpower: 12, bulk_move: 4, ..Memcached::preset(Scale::Tiny) }
    }

    #[test]
    fn slab_classes_are_memcached_s() {
        let sizes = class_sizes(1.25);
        assert_eq!(sizes[..8], [96, 120, 152, 192, 240, 304, 384, 480]);
        assert_eq!(sizes.last(), Some(&(512 << 10)));
        let geo = Memcached::preset(Scale::Paper).geometry();
        assert_eq!((geo.item_bytes, geo.chunk, geo.perslab), (1099, 1184, 885));
    }

    #[test]
    fn tiny_and_growing_runs_pass_their_checks_within_the_expectation() {
        for p in [Memcached::preset(Scale::Tiny), growing(), Memcached { load: false, distribution: KeyDistribution::Uniform, ..growing() }] {
            let (result, refs, phases) = run(&p, 3);
            let checks = result.unwrap();
            assert!(checks.len() == 2, "{checks:?}");
            let expected = p.expected();
            for (got, want) in phases.iter().zip(&expected.phases) {
                let off = (got.refs as f64 - want.refs as f64).abs() / want.refs as f64;
                assert!(off < expected.tolerance, "{}: {} references, expected {}", got.name, got.refs, want.refs);
            }
            let pages: std::collections::HashSet<u64> = refs.iter().map(|r| r.vaddr >> 12).collect();
            let want = expected.footprint_pages();
            assert!((pages.len() as f64 - want as f64).abs() <= 1.0 + expected.tolerance * want as f64, "{} pages, expected {want}", pages.len());
        }
    }

    #[test]
    fn the_table_grows_and_every_reference_lands_in_an_allocation() {
        let p = growing();
        let plan = p.plan();
        assert_eq!(plan.tables.len(), 3, "2^12 buckets grow at 6,145 and 12,289 items");
        let (result, refs, _) = run(&p, 1);
        assert!(result.unwrap()[1].contains("2 table expansions"));
        let regions = p.expected().regions;
        let inside = |a: u64| regions.iter().any(|r| a >= r.addr && a < r.addr + r.bytes);
        assert!(refs.iter().all(|r| inside(r.vaddr) && inside(r.vaddr + u64::from(r.size) - 1)));
    }

    #[test]
    fn the_plan_places_the_pages_and_tables_where_the_run_allocates_them() {
        let p = growing();
        let plan = p.plan();
        let mut discard = Discard;
        let mut e = Emitter::new(0, &mut discard);
        let mut server = Server::new(&p, &mut e).unwrap();
        p.load_items(&mut server, &mut e).unwrap();
        assert_eq!(server.items.pages, plan.pages);
        assert_eq!(server.assoc.primary_addr, plan.tables.last().unwrap().addr);
    }

    #[test]
    fn a_wrong_value_fails_the_check() {
        let p = Memcached { requests: 0, bulk_move: 1, ..Memcached::preset(Scale::Tiny) };
        let mut discard = Discard;
        let mut quiet = Emitter::new(0, &mut discard);
        let mut server = Server::new(&p, &mut quiet).unwrap();
        p.load_items(&mut server, &mut quiet).unwrap();
        let versions = vec![0u32; p.records as usize];
        assert!(p.check(&server, &versions).is_ok());
        server.items.value_mut(7)[3] ^= 1;
        assert!(p.check(&server, &versions).unwrap_err().contains("last set"));
    }

    #[test]
    fn the_same_seed_gives_the_same_stream() {
        let p = Memcached { records: 500, requests: 500, ..Memcached::preset(Scale::Tiny) };
        assert_eq!(run(&p, 2).1, run(&p, 2).1);
        assert_ne!(run(&p, 2).1, run(&p, 3).1);
    }

    #[test]
    fn presets_have_the_documented_footprints() {
        let mib = |s| Memcached::preset(s).expected().footprint_bytes() as f64 / (1 << 20) as f64;
        assert!((2.0..4.0).contains(&mib(Scale::Tiny)), "{}", mib(Scale::Tiny));
        assert!((90.0..110.0).contains(&mib(Scale::Small)), "{}", mib(Scale::Small));
        let gb = mib(Scale::Paper) * (1 << 20) as f64 / 1e9;
        assert!((64.0..70.0).contains(&gb), "{gb} GB");
    }

    #[test]
    fn bad_parameters_name_the_field() {
        let p = Memcached::preset(Scale::Tiny);
        let bad = |q: Memcached| q.validate().unwrap_err().0;
        assert_eq!(bad(Memcached { records: 0, ..p.clone() }), "records");
        assert_eq!(bad(Memcached { value_bytes: 100, ..p.clone() }), "value_bytes");
        assert_eq!(bad(Memcached { value_bytes: 1 << 20, ..p.clone() }), "value_bytes");
        assert_eq!(bad(Memcached { key_bytes: 5, ..p.clone() }), "key_bytes");
        assert_eq!(bad(Memcached { get_fraction: 1.5, ..p.clone() }), "get_fraction");
        assert_eq!(bad(Memcached { skew: 0.0, ..p.clone() }), "skew");
        assert_eq!(bad(Memcached { factor: 1.0, ..p.clone() }), "factor");
        assert_eq!(bad(Memcached { hashpower: 40, ..p.clone() }), "hashpower");
        assert_eq!(bad(Memcached { bulk_move: 0, ..p }), "bulk_move");
    }
}
