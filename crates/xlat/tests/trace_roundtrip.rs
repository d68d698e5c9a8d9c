//! Round trips between the trace formats on random streams, reads with tiny batch limits,
//! address-space events among the references, and random damage to native files (must never
//! panic).

use proptest::prelude::*;
use std::path::Path;
use xlat::memref::{AddressSpaceEvent, RangeOp};
use xlat::source::{Limited, RefSource};
use xlat::trace::{self, NativeReader, NativeWriter, TraceFormat, MAX_BLOCK_EVENTS};
use xlat::{AccessKind, Batch, MemRef};

#[path = "common/events.rs"]
mod events;

/// An address-space event with its place: the number of references before it.
type Event = (usize, AddressSpaceEvent);

/// Reads `src` with batches of at most `max`, returning the references and, per batch, the
/// instructions it reported.
fn read_with(src: &mut dyn RefSource, max: usize) -> (Vec<MemRef>, Vec<u64>) {
    let (mut refs, mut instr) = (Vec::new(), Vec::new());
    let mut batch = Batch::default();
    loop {
        batch.clear();
        let n = src.fill(&mut batch, max).unwrap();
        assert_eq!(n, batch.refs.len());
        assert!(n <= max, "fill returned {n} > max {max}");
        if n == 0 {
            return (refs, instr);
        }
        refs.extend_from_slice(&batch.refs);
        instr.push(batch.instructions);
    }
}

/// What reading a source gave: its references, its events placed among them, the
/// instructions of every batch, and the references of every batch.
#[derive(Debug, Default, PartialEq)]
struct Read {
    refs: Vec<MemRef>,
    events: Vec<Event>,
    instructions: u64,
    batches: Vec<usize>,
}

impl Read {
    /// Adds `batch`, filled with `n` references (none: the end), to what was read.
    fn absorb(&mut self, batch: &Batch, n: usize) {
        self.events.extend(batch.events.iter().map(|&(at, e)| (self.refs.len() + at, e)));
        self.refs.extend_from_slice(&batch.refs);
        self.instructions += batch.instructions;
        if n > 0 {
            self.batches.push(n);
        }
    }
}

/// Reads `src` to its end in batches of at most `max` references, checking each batch.
fn read_events(src: &mut dyn RefSource, max: usize) -> Read {
    let (mut read, mut batch) = (Read::default(), Batch::default());
    loop {
        batch.clear();
        let n = src.fill(&mut batch, max).unwrap();
        assert!(n <= max && n == batch.refs.len(), "fill returned {n} for {} references, max {max}", batch.refs.len());
        assert!(batch.events.windows(2).all(|w| w[0].0 <= w[1].0), "events out of order");
        assert!(batch.events.last().is_none_or(|&(at, _)| at <= n), "an event past the batch");
        read.absorb(&batch, n);
        if n == 0 {
            return read;
        }
    }
}

/// Writes `refs` and `events` with [`NativeWriter::write_batch`], in batches cut at `cuts`
/// (places in the stream of events and references, so that a batch may hold events alone),
/// with one instruction per fetch.
fn write_batches(path: &Path, refs: &[MemRef], events: &[Event], cuts: &[usize], block: u32) {
    fn flush(batch: &mut Batch, w: &mut NativeWriter) {
        batch.instructions = batch.refs.iter().filter(|r| r.kind == AccessKind::IFetch).count() as u64;
        w.write_batch(batch).unwrap();
        batch.clear();
    }
    let mut w = NativeWriter::create(path, &serde_json::json!({})).unwrap().with_block_records(block);
    let (mut batch, mut next) = (Batch::default(), 0);
    for i in 0..=refs.len() {
        for (_, e) in events.iter().filter(|(at, _)| *at == i) {
            batch.push_event(*e);
            next += 1;
            if cuts.contains(&next) {
                flush(&mut batch, &mut w);
            }
        }
        if let Some(r) = refs.get(i) {
            batch.refs.push(*r);
            next += 1;
            if cuts.contains(&next) {
                flush(&mut batch, &mut w);
            }
        }
    }
    flush(&mut batch, &mut w);
    w.finish().unwrap();
}

/// Any valid event, mostly of small ranges at user-space addresses.
fn any_event() -> impl Strategy<Value = AddressSpaceEvent> {
    let start = prop_oneof![3 => 0u64..1 << 48, 1 => any::<u64>()];
    let len = prop_oneof![3 => 1u64..1 << 24, 1 => 1u64..];
    (0u16..3, any::<bool>(), start, len).prop_map(|(asid, unmap, start, len)| {
        let op = if unmap { RangeOp::Unmap } else { RangeOp::Map };
        AddressSpaceEvent { asid, op, start: start.min(u64::MAX - (len - 1)), len }
    })
}

/// References with events among them: often before the first reference or after the last,
/// else anywhere (with small blocks, at block boundaries too), sorted by place.
fn refs_with_events() -> impl Strategy<Value = (Vec<MemRef>, Vec<Event>)> {
    let place = (0u8..4, any::<prop::sample::Index>());
    let refs = prop::collection::vec(any_ref(), 0..300);
    (refs, prop::collection::vec((place, any_event()), 0..40)).prop_map(|(refs, raw)| {
        let events = events::place(refs.len(), raw);
        (refs, events)
    })
}

/// The stream with per-reference instruction deltas, via batches of one reference.
fn read_deltas(path: &Path) -> Vec<(MemRef, u64)> {
    let (refs, instr) = read_with(&mut trace::open(path, None).unwrap(), 1);
    refs.into_iter().zip(instr).collect()
}

fn write_native(path: &Path, stream: &[(MemRef, u64)], block: u32) {
    let mut w = NativeWriter::create(path, &serde_json::json!({"test": true})).unwrap().with_block_records(block);
    for (r, d) in stream {
        w.write(r, *d).unwrap();
    }
    w.finish().unwrap();
}

fn kind() -> impl Strategy<Value = AccessKind> {
    prop_oneof![Just(AccessKind::Load), Just(AccessKind::Store), Just(AccessKind::IFetch)]
}

/// `vaddr`, moved down if needed so that `size` bytes there end at 2^64 - 1 at the latest
/// (references past the top of the address space are errors).
fn fit(vaddr: u64, size: u16) -> u64 {
    vaddr.min(u64::MAX - (u64::from(size.max(1)) - 1))
}

/// Any reference: addresses near a few bases or anywhere, any size and ASID.
fn any_ref() -> impl Strategy<Value = MemRef> {
    let addr = prop_oneof![any::<u64>(), (0u64..4, 0u64..1 << 20).prop_map(|(b, o)| (b << 40) + o)];
    let size = prop_oneof![Just(1u16), Just(4), Just(8), Just(64), any::<u16>()];
    let asid = prop_oneof![Just(0u16), 0u16..4, any::<u16>()];
    (addr, size, asid, kind()).prop_map(|(vaddr, size, asid, kind)| MemRef { vaddr: fit(vaddr, size), asid, size, kind })
}

/// Streams Lackey can hold: ASID 0, nonzero sizes, one instruction per fetch.
fn lackey_stream() -> impl Strategy<Value = Vec<(MemRef, u64)>> {
    prop::collection::vec((any::<u64>(), 1u16.., kind()), 0..300).prop_map(|v| {
        v.into_iter()
            .map(|(vaddr, size, kind)| {
                (MemRef { vaddr: fit(vaddr, size), asid: 0, size, kind }, u64::from(kind == AccessKind::IFetch))
            })
            .collect()
    })
}

/// Instruction-shaped streams ChampSim can hold: fetch, ≤4 loads, ≤2 stores, size 1.
fn champsim_stream() -> impl Strategy<Value = Vec<(MemRef, u64)>> {
    let instr = (any::<u64>(), prop::collection::vec(1u64.., 0..=4), prop::collection::vec(1u64.., 0..=2));
    prop::collection::vec(instr, 0..200).prop_map(|v| {
        let mut s = Vec::new();
        for (ip, loads, stores) in v {
            s.push((MemRef::ifetch(ip, 1), 1));
            s.extend(loads.into_iter().map(|a| (MemRef::load(a, 1), 0)));
            s.extend(stores.into_iter().map(|a| (MemRef::store(a, 1), 0)));
        }
        s
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn native_round_trip_is_exact(
        stream in prop::collection::vec((any_ref(), prop_oneof![Just(0u64), Just(1), any::<u64>()]), 0..500),
        block in 1u32..200,
    ) {
        // Keep the instruction total within u64 (the writer refuses more).
        let stream: Vec<_> = stream.into_iter().map(|(r, d)| (r, d >> 16)).collect();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.xlat");
        write_native(&p, &stream, block);
        prop_assert_eq!(&read_deltas(&p), &stream);
        let total: u64 = stream.iter().map(|(_, d)| d).sum();
        let refs: Vec<MemRef> = stream.iter().map(|(r, _)| *r).collect();
        for max in [3, 7, 1 << 16] {
            let mut r = NativeReader::open(&p).unwrap();
            prop_assert_eq!(r.len_hint(), Some(stream.len() as u64));
            prop_assert_eq!(r.instructions(), total);
            let (got, instr) = read_with(&mut r, max);
            prop_assert_eq!(&got, &refs);
            prop_assert_eq!(instr.iter().sum::<u64>(), total);
        }
        // Converting native to native keeps per-reference counts.
        let q = dir.path().join("b.xlat");
        trace::convert(&p, &q).unwrap();
        prop_assert_eq!(read_deltas(&q), stream);
    }

    /// References and events written in batches of any cut (events alone, events at either
    /// end) and blocks of any size read back the same, events at their places, whatever the
    /// batch size; a skip hands on the events it passes; conversion to native keeps them.
    #[test]
    fn native_events_round_trip(
        (refs, events) in refs_with_events(),
        cuts in prop::collection::vec(0usize..400, 0..20),
        block in 1u32..50,
        skip in 0usize..300,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("e.xlat");
        write_batches(&p, &refs, &events, &cuts, block);
        let fetches = refs.iter().filter(|r| r.kind == AccessKind::IFetch).count() as u64;
        for max in [1, 2, 3, 7, 64, 1 << 16] {
            let read = read_events(&mut NativeReader::open(&p).unwrap(), max);
            prop_assert_eq!(&read.refs, &refs, "max {}", max);
            prop_assert_eq!(&read.events, &events, "max {}", max);
            prop_assert_eq!(read.instructions, fetches);
        }
        // Skipping references keeps every event: those skipped come first.
        let skip = skip.min(refs.len());
        let read = read_events(&mut Limited::new(NativeReader::open(&p).unwrap(), skip as u64, None), 5);
        let moved: Vec<Event> = events.iter().map(|&(at, e)| (at.saturating_sub(skip), e)).collect();
        prop_assert_eq!(&read.refs[..], &refs[skip..]);
        prop_assert_eq!(read.events, moved);
        let q = dir.path().join("f.xlat");
        let done = trace::convert(&p, &q).unwrap();
        prop_assert_eq!((done.references, done.events_dropped), (refs.len() as u64, 0));
        let again = read_events(&mut NativeReader::open(&q).unwrap(), 1 << 16);
        prop_assert_eq!((again.refs, again.events), (refs, events));
    }

    #[test]
    fn native_lackey_native(stream in lackey_stream()) {
        let dir = tempfile::tempdir().unwrap();
        let (a, l, b) = (dir.path().join("a.xlat"), dir.path().join("a.lackey"), dir.path().join("b.xlat"));
        write_native(&a, &stream, 64);
        prop_assert_eq!(trace::convert(&a, &l).unwrap().references, stream.len() as u64);
        prop_assert_eq!(trace::detect(&l).unwrap(), TraceFormat::Lackey);
        for max in [1, 3, 7] {
            let (got, _) = read_with(&mut trace::open(&l, None).unwrap(), max);
            prop_assert_eq!(got, stream.iter().map(|(r, _)| *r).collect::<Vec<_>>());
        }
        trace::convert(&l, &b).unwrap();
        prop_assert_eq!(read_deltas(&b), stream);
    }

    #[test]
    fn native_champsim_native(stream in champsim_stream(), ext in prop_oneof![Just("champsim"), Just("champsim.xz"), Just("champsim.gz")]) {
        let dir = tempfile::tempdir().unwrap();
        let (a, c, b) = (dir.path().join("a.xlat"), dir.path().join(format!("a.{ext}")), dir.path().join("b.xlat"));
        write_native(&a, &stream, 100);
        trace::convert(&a, &c).unwrap();
        for max in [1, 3, 7] {
            let (got, instr) = read_with(&mut trace::open(&c, None).unwrap(), max);
            prop_assert_eq!(got, stream.iter().map(|(r, _)| *r).collect::<Vec<_>>());
            prop_assert_eq!(instr.iter().sum::<u64>(), stream.iter().map(|(_, d)| d).sum::<u64>());
        }
        trace::convert(&c, &b).unwrap();
        prop_assert_eq!(read_deltas(&b), stream);
    }

    #[test]
    fn lackey_tiny_batches_split_modify(lines in prop::collection::vec((0u8..4, 0u64..1 << 48, 1u16..100), 0..100)) {
        let mut text = String::from("==7== start\n");
        let mut expected = Vec::new();
        for (k, addr, size) in &lines {
            let letter = ["I ", " L", " S", " M"][*k as usize];
            text.push_str(&format!("{letter} {addr:x},{size}\n"));
            match k {
                0 => expected.push(MemRef::ifetch(*addr, *size)),
                1 => expected.push(MemRef::load(*addr, *size)),
                2 => expected.push(MemRef::store(*addr, *size)),
                _ => expected.extend([MemRef::load(*addr, *size), MemRef::store(*addr, *size)]),
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.txt");
        std::fs::write(&p, text).unwrap();
        for max in [1, 3, 7, 1000] {
            let (got, instr) = read_with(&mut trace::open(&p, None).unwrap(), max);
            prop_assert_eq!(&got, &expected);
            prop_assert_eq!(instr.iter().sum::<u64>(), lines.iter().filter(|l| l.0 == 0).count() as u64);
        }
    }
}

/// Many events: runs of them longer than a block may hold are split between blocks, a fill
/// stops early once it holds a block's worth, and more in a row than a block holds are refused.
#[test]
fn runs_of_many_events() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("many.xlat");
    let max = MAX_BLOCK_EVENTS as usize;
    let mut w = NativeWriter::create(&p, &serde_json::json!({})).unwrap();
    let (mut refs, mut events) = (Vec::new(), Vec::new());
    // Three references, each after a run of 50000 events: a block of 65536 events ends
    // inside the second run; then a full run after the last reference.
    for (i, run) in [50_000, 50_000, 50_000, max].into_iter().enumerate() {
        for j in 0..run as u64 {
            let e = AddressSpaceEvent::map(j << 12, 4096);
            w.write_event(&e).unwrap();
            events.push((refs.len(), e));
        }
        if i < 3 {
            let r = MemRef::load(i as u64 * 8, 8);
            w.write(&r, 0).unwrap();
            refs.push(r);
        }
    }
    let err = w.write_event(&AddressSpaceEvent::unmap(0, 1)).unwrap_err().to_string();
    assert!(err.contains("many.xlat") && err.contains("event before reference 3") && err.contains("in a row"), "{err}");
    w.finish().unwrap();
    let reader = NativeReader::open(&p).unwrap();
    assert_eq!((reader.records(), reader.blocks()), (3, 4));
    for max in [1, 2, 100] {
        let read = read_events(&mut NativeReader::open(&p).unwrap(), max);
        assert_eq!((&read.refs, &read.events), (&refs, &events), "max {max}");
    }
    // A fill that reached a block's worth of events stops after a reference: each block
    // holds one reference and 65536 events.
    assert_eq!(read_events(&mut NativeReader::open(&p).unwrap(), 100).batches, [1, 1, 1]);
}

/// Converting to a format without events leaves them out, and says how many.
#[test]
fn conversion_to_lackey_drops_events_and_counts_them() {
    let dir = tempfile::tempdir().unwrap();
    let (p, l) = (dir.path().join("a.xlat"), dir.path().join("a.lackey"));
    let refs = [MemRef::ifetch(0x1000, 4), MemRef::load(0x2000, 8)];
    let events = [(0, AddressSpaceEvent::map(0x2000, 4096)), (2, AddressSpaceEvent::unmap(0x2000, 4096))];
    write_batches(&p, &refs, &events, &[], 4);
    let done = trace::convert(&p, &l).unwrap();
    assert_eq!((done.references, done.events_dropped), (2, 2));
    let read = read_events(&mut trace::open(&l, None).unwrap(), 10);
    assert_eq!((read.refs, read.events), (refs.to_vec(), vec![]));
    // A trace of events alone: the events come with the end of the stream.
    let (q, m) = (dir.path().join("b.xlat"), dir.path().join("b.lackey"));
    write_batches(&q, &[], &events[..1], &[], 4);
    assert_eq!(read_events(&mut NativeReader::open(&q).unwrap(), 10).events, events[..1]);
    let info = trace::info(&mut NativeReader::open(&q).unwrap()).unwrap();
    assert_eq!((info.references, info.map_events, info.unmap_events), (0, 1, 0));
    assert_eq!(trace::convert(&q, &m).unwrap().events_dropped, 1);
}

/// A valid native file with several blocks and events, to damage.
fn valid_native(dir: &Path) -> Vec<u8> {
    let p = dir.join("v.xlat");
    let refs: Vec<MemRef> = (0..400u64).map(|i| MemRef { asid: (i / 100) as u16, ..MemRef::load(i * 72, (i % 9) as u16) }).collect();
    let events: Vec<Event> = [0, 90, 91, 200, 400].iter().map(|&at| (at, AddressSpaceEvent::map(at as u64 * 4096, 8192))).collect();
    write_batches(&p, &refs, &events, &[50, 51, 300], 90);
    std::fs::read(p).unwrap()
}

/// Opens and reads a possibly damaged file in every format; only errors are allowed.
fn read_any(p: &Path) {
    for f in [TraceFormat::Native, TraceFormat::Lackey, TraceFormat::ChampSim] {
        if let Ok(mut src) = trace::open(p, Some(f)) {
            let _ = read_with_errors(&mut src);
        }
    }
    let _ = trace::open(p, None).map(|mut s| read_with_errors(&mut s));
}

fn read_with_errors(src: &mut dyn RefSource) -> xlat::Result<()> {
    let mut batch = Batch::default();
    while {
        batch.clear();
        src.fill(&mut batch, 5)? > 0
    } {}
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn damaged_native_files_never_panic(edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..5), cut in any::<prop::sample::Index>()) {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = valid_native(dir.path());
        for (at, v) in &edits {
            let i = at.index(bytes.len());
            bytes[i] = *v;
        }
        let p = dir.path().join("d.xlat");
        std::fs::write(&p, &bytes).unwrap();
        read_any(&p);
        let len = cut.index(bytes.len());
        std::fs::write(&p, &bytes[..len]).unwrap();
        read_any(&p);
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600), prefix in any::<bool>()) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.bin");
        let mut data = if prefix { b"XLATTRC\0\x01\0\0\0".to_vec() } else { Vec::new() };
        data.extend(bytes);
        std::fs::write(&p, &data).unwrap();
        read_any(&p);
    }
}

/// Damage that keeps the file structurally intact must be caught by the checksum or the
/// record checks, never decoded to a different stream: flip each byte of every block.
#[test]
fn any_single_byte_flip_is_caught_or_harmless() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = valid_native(dir.path());
    let p0 = dir.path().join("v.xlat");
    let want = read_events(&mut NativeReader::open(&p0).unwrap(), 1 << 16);
    assert_eq!(want.events.len(), 5);
    let p = dir.path().join("f.xlat");
    let meta_end = 16 + u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    for i in meta_end..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 0x20;
        std::fs::write(&p, &b).unwrap();
        if let Ok(mut r) = NativeReader::open(&p) {
            let mut batch = Batch::default();
            let mut got = Read::default();
            let ok = loop {
                batch.clear();
                match r.fill(&mut batch, 1 << 16) {
                    Ok(n) => {
                        got.absorb(&batch, n);
                        if n == 0 {
                            break true;
                        }
                    }
                    Err(_) => break false,
                }
            };
            if ok {
                assert_eq!(got, want, "flip at {i} changed the stream silently");
            }
        }
    }
}

/// Metadata known only at the end (how a recording stopped) replaces the header's in the
/// room reserved for it; metadata that does not fit is an error, never a damaged file.
#[test]
fn final_metadata_fills_the_reserved_room() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.xlat");
    let stream: Vec<_> = (0..1000u64).map(|i| (MemRef::load(i * 64, 8), i % 3)).collect();
    let start = serde_json::json!({"program": "/bin/true"});
    let end = serde_json::json!({"program": "/bin/true", "stopped": "exit", "exit_status": 0});
    let mut w = NativeWriter::create_with_room(&p, &start, 64).unwrap().with_block_records(100);
    for (r, d) in &stream {
        w.write(r, *d).unwrap();
    }
    w.finish_with_metadata(&end).unwrap();
    assert_eq!(NativeReader::open(&p).unwrap().metadata(), &end);
    assert_eq!(read_deltas(&p), stream);

    let q = dir.path().join("n.xlat");
    let w = NativeWriter::create_with_room(&q, &start, 4).unwrap();
    let err = w.finish_with_metadata(&end).unwrap_err().to_string();
    assert!(err.contains("metadata") && err.contains("reserved"), "{err}");
    assert!(!q.exists());
}
