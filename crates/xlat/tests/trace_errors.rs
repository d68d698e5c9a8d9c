//! Malformed, truncated, corrupt and empty trace files: every problem is an error naming the
//! file and the line or offset, never a panic or a wrong stream.

use std::path::{Path, PathBuf};
use xlat::memref::AddressSpaceEvent;
use xlat::source::{collect, RefSource};
use xlat::trace::{self, ChampSimReader, LackeyReader, NativeReader, NativeWriter, TraceFormat};
use xlat::{Batch, Error, MemRef};

fn write(dir: &Path, name: &str, data: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, data).unwrap();
    p
}

fn read_all(src: &mut dyn RefSource) -> xlat::Result<Vec<MemRef>> {
    collect(src).map(|(refs, _)| refs)
}

/// A native trace of 300 references in blocks of 50, with address-space events before the
/// first, between two blocks and after the last, returned with its bytes.
fn sample_native(dir: &Path) -> (PathBuf, Vec<MemRef>, Vec<u8>) {
    let p = dir.join("sample.xlat");
    let mut w = NativeWriter::create(&p, &serde_json::json!({"program": "t"})).unwrap().with_block_records(50);
    let refs: Vec<MemRef> = (0..300u64)
        .map(|i| match i % 3 {
            0 => MemRef::ifetch(0x40_0000 + i * 4, 4),
            1 => MemRef::load(0x7fff_0000 - i * 8, 8),
            _ => MemRef { asid: (i % 5) as u16, ..MemRef::store(i * 4096, 2) },
        })
        .collect();
    for (i, r) in refs.iter().enumerate() {
        if i % 100 == 0 {
            w.write_event(&AddressSpaceEvent::map(i as u64 * 4096, 4096)).unwrap();
        }
        w.write(r, u64::from(r.kind == xlat::AccessKind::IFetch)).unwrap();
    }
    w.write_event(&AddressSpaceEvent::unmap(0, 1 << 20)).unwrap();
    w.finish().unwrap();
    let bytes = std::fs::read(&p).unwrap();
    (p, refs, bytes)
}

#[test]
fn malformed_lackey_lines_name_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let good = "==42== Lackey, an example Valgrind tool\n\nI  0400d7d4,8\n L 04222cac,8\n";
    let bad_lines = [
        " L 04222cac",     // missing size
        " S xyz,4",        // bad hex
        " L 1000,0",       // size 0
        " L 1000,65536",   // size too large
        " X 1000,4",       // unknown letter in the record column
        "I  1000,4 extra", // trailing junk
        " M 1000,-4",      // negative size
    ];
    for (k, bad) in bad_lines.iter().enumerate() {
        let text = format!("{good}{bad}\n S 1000,4\n");
        let p = write(dir.path(), &format!("bad{k}.lackey"), text.as_bytes());
        let err = read_all(&mut LackeyReader::open(&p).unwrap()).unwrap_err();
        match &err {
            Error::AtLine { line, path, .. } => {
                assert_eq!(*line, 5, "{bad}");
                assert_eq!(path, &p);
            }
            other => panic!("{bad}: expected AtLine, got {other:?}"),
        }
        let msg = err.to_string();
        assert!(msg.contains(&format!("bad{k}.lackey:5:")), "{msg}");
    }
}

/// A Lackey trace cut at any byte (copied while Valgrind writes it) reads as the records of its
/// whole lines or is an error naming the cut line: never a record cut inside its size or
/// address read as another one (` S 7ff0003a0,16` cut to `,1`).
#[test]
fn lackey_cut_at_every_offset_is_a_prefix_or_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let text = "==7== Lackey
I  0400d7d4,8
 L 7ff000398,8
 S 7ff0003a0,16
 M 0401f000,4
";
    let read = |bytes: &[u8]| collect(&mut LackeyReader::open(write(dir.path(), "lines.lackey", bytes)).unwrap());
    for cut in 0..text.len() {
        let p = write(dir.path(), "cut.lackey", &text.as_bytes()[..cut]);
        let whole_lines = text[..cut].rfind('\n').map_or(0, |i| i + 1);
        let lines = text[..cut].matches('\n').count() as u64;
        match collect(&mut LackeyReader::open(&p).unwrap()) {
            Ok((refs, _)) => assert_eq!(refs, read(&text.as_bytes()[..whole_lines]).unwrap().0, "cut at {cut}"),
            Err(Error::AtLine { line, path, message }) => {
                assert_eq!((line, &path), (lines + 1, &p), "cut at {cut}: {message}");
            }
            Err(other) => panic!("cut at {cut}: {other}"),
        }
    }
    let cut = write(dir.path(), "size.lackey", &text.as_bytes()[..text.find(",16").unwrap() + 2]);
    let err = collect(&mut LackeyReader::open(&cut).unwrap()).unwrap_err().to_string();
    assert!(err.contains("size.lackey:4: the input ends inside this record"), "{err}");
}

#[test]
fn lackey_modify_is_load_then_store_and_banners_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let text = "==1== banner\n--1-- more\nI  0x1000,3\n M 2000,8\r\n\n S 3000,1\n";
    let p = write(dir.path(), "m.lackey", text.as_bytes());
    let (refs, instr) = collect(&mut LackeyReader::open(&p).unwrap()).unwrap();
    assert_eq!(instr, 1);
    assert_eq!(
        refs,
        vec![MemRef::ifetch(0x1000, 3), MemRef::load(0x2000, 8), MemRef::store(0x2000, 8), MemRef::store(0x3000, 1)]
    );
}

/// Text with no record is a Lackey trace only if all of it is Valgrind's: other text (a list of
/// addresses, say) is an error naming its first foreign line, not an empty trace. A byte-order
/// mark before the first record is skipped.
#[test]
fn text_without_records_is_not_a_lackey_trace() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "a.txt", b"==12== Lackey\n0x1000,8\n0x2000,8\n");
    for result in [read_all(&mut LackeyReader::open(&p).unwrap()), read_all(&mut trace::open(&p, None).unwrap())] {
        let err = result.expect_err("addresses alone are not a Lackey trace").to_string();
        assert!(err.contains("a.txt:2:") && err.contains("not a Lackey trace"), "{err}");
    }
    let p = write(dir.path(), "banner.lackey", b"==12== Lackey, an example Valgrind tool\n--12-- run: /bin/true\n\n");
    assert!(read_all(&mut LackeyReader::open(&p).unwrap()).unwrap().is_empty());
    let p = write(dir.path(), "bom.lackey", b"\xef\xbb\xbf L 1000,8\n");
    assert_eq!(read_all(&mut LackeyReader::open(&p).unwrap()).unwrap(), vec![MemRef::load(0x1000, 8)]);
}

#[test]
fn empty_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "empty.lackey", b"");
    assert!(read_all(&mut LackeyReader::open(&p).unwrap()).unwrap().is_empty());
    assert!(read_all(&mut trace::open(&p, None).unwrap()).unwrap().is_empty());
    // An empty ChampSim file is zero records.
    let p = write(dir.path(), "empty.champsim", b"");
    assert_eq!(trace::detect(&p).unwrap(), TraceFormat::ChampSim);
    assert!(read_all(&mut ChampSimReader::open(&p).unwrap()).unwrap().is_empty());
    // An empty native file is an error, whether opened explicitly or by extension.
    let p = write(dir.path(), "empty.xlat", b"");
    let err = NativeReader::open(&p).err().expect("empty native file must fail");
    assert!(err.to_string().contains("empty.xlat"), "{err}");
    assert!(trace::open(&p, None).is_err());
    // A native trace with no reference is valid and empty.
    let p = dir.path().join("none.xlat");
    NativeWriter::create(&p, &serde_json::json!({})).unwrap().finish().unwrap();
    let mut r = NativeReader::open(&p).unwrap();
    assert_eq!(r.len_hint(), Some(0));
    assert!(read_all(&mut r).unwrap().is_empty());
}

#[test]
fn native_cut_at_every_offset_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let (_, refs, bytes) = sample_native(dir.path());
    assert_eq!(read_all(&mut NativeReader::open(dir.path().join("sample.xlat")).unwrap()).unwrap(), refs);
    for cut in 0..bytes.len() {
        let p = write(dir.path(), "cut.xlat", &bytes[..cut]);
        let result = NativeReader::open(&p).and_then(|mut r| read_all(&mut r));
        match result {
            Err(Error::AtOffset { path, .. }) => assert_eq!(path, p),
            other => panic!("cut at {cut}: expected AtOffset error, got {other:?}"),
        }
        // Detection must not turn a cut native file into some other, empty stream.
        assert!(trace::open(&p, None).and_then(|mut r| read_all(&mut r)).is_err(), "cut at {cut}");
    }
}

#[test]
fn native_corruption_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let (_, _, bytes) = sample_native(dir.path());
    let first_block = 16 + u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    // A byte inside the first block's zstd frame: the frame checksum fails.
    let mut bad = bytes.clone();
    bad[first_block + 20 + 12] ^= 0x55;
    let p = write(dir.path(), "corrupt.xlat", &bad);
    let err = read_all(&mut NativeReader::open(&p).unwrap()).unwrap_err();
    assert!(matches!(err, Error::AtOffset { offset, .. } if offset == first_block as u64), "{err}");
    // The block header's record count disagrees with the index.
    let mut bad = bytes.clone();
    bad[first_block] ^= 1;
    let p = write(dir.path(), "corrupt2.xlat", &bad);
    assert!(read_all(&mut NativeReader::open(&p).unwrap()).unwrap_err().to_string().contains("corrupt2.xlat"));
}

#[test]
fn native_wrong_magic_and_version() {
    let dir = tempfile::tempdir().unwrap();
    let (_, _, bytes) = sample_native(dir.path());
    let mut bad = bytes.clone();
    bad[0] = b'Y';
    let err = NativeReader::open(write(dir.path(), "magic.xlat", &bad)).err().unwrap();
    assert!(err.to_string().contains("bad magic"), "{err}");
    let mut bad = bytes.clone();
    bad[8] = 3;
    let err = NativeReader::open(write(dir.path(), "version.xlat", &bad)).err().unwrap();
    assert!(err.to_string().contains("version 3") && err.to_string().contains("knows 1 and 2"), "{err}");
    let mut bad = bytes;
    bad[10] = 1;
    assert!(NativeReader::open(write(dir.path(), "flags.xlat", &bad)).is_err());
}

fn champsim_record(ip: u64, loads: &[u64], stores: &[u64]) -> Vec<u8> {
    let mut rec = vec![0u8; 64];
    rec[..8].copy_from_slice(&ip.to_le_bytes());
    for (i, a) in stores.iter().enumerate() {
        rec[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_le_bytes());
    }
    for (i, a) in loads.iter().enumerate() {
        rec[32 + 8 * i..40 + 8 * i].copy_from_slice(&a.to_le_bytes());
    }
    rec
}

#[test]
fn champsim_trailing_partial_record_is_an_error_after_whole_records() {
    let dir = tempfile::tempdir().unwrap();
    let mut data = champsim_record(0x400000, &[0x1000, 0x2000], &[0x3000]);
    data.extend(champsim_record(0x400004, &[], &[]));
    let full = data.len();
    data.extend_from_slice(&[7u8; 10]);
    let p = write(dir.path(), "partial.champsim", &data);
    let mut r = ChampSimReader::open(&p).unwrap();
    let mut batch = xlat::Batch::default();
    assert_eq!(r.fill(&mut batch, 100).unwrap(), 5);
    assert_eq!(batch.instructions, 2);
    let err = r.fill(&mut batch, 100).unwrap_err();
    match &err {
        Error::AtOffset { offset, message, .. } => {
            assert_eq!(*offset, full as u64);
            assert!(message.contains("10 bytes"), "{message}");
        }
        other => panic!("expected AtOffset, got {other:?}"),
    }
    // The same through gzip compression, detected by magic despite the name.
    let gz = dir.path().join("partial.bin");
    let mut enc = flate2::write::GzEncoder::new(std::fs::File::create(&gz).unwrap(), flate2::Compression::fast());
    std::io::Write::write_all(&mut enc, &data).unwrap();
    enc.finish().unwrap();
    assert_eq!(trace::detect(&gz).unwrap(), TraceFormat::ChampSim);
    let err = read_all(&mut trace::open(&gz, None).unwrap()).unwrap_err();
    assert!(err.to_string().contains("10 bytes") && err.to_string().contains("decompressed"), "{err}");
}

#[test]
fn champsim_record_expansion() {
    let dir = tempfile::tempdir().unwrap();
    let data = champsim_record(0x400000, &[0x1000, 0, 0x2000], &[0, 0x3000]);
    let p = write(dir.path(), "one.trace", &data);
    assert_eq!(trace::detect(&p).unwrap(), TraceFormat::ChampSim);
    let (refs, instr) = collect(&mut trace::open(&p, None).unwrap()).unwrap();
    assert_eq!(instr, 1);
    assert_eq!(
        refs,
        vec![MemRef::ifetch(0x400000, 1), MemRef::load(0x1000, 1), MemRef::load(0x2000, 1), MemRef::store(0x3000, 1)]
    );
}

#[test]
fn champsim_writer_rejects_unrepresentable_streams() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(Vec<MemRef>, &str)> = vec![
        (vec![MemRef::load(8, 1)], "before any instruction fetch"),
        (vec![MemRef::ifetch(4, 1), MemRef::store(8, 1), MemRef::load(8, 1)], "load after a store"),
        (
            vec![
                MemRef::ifetch(4, 1),
                MemRef::load(8, 1),
                MemRef::load(8, 1),
                MemRef::load(8, 1),
                MemRef::load(8, 1),
                MemRef::load(8, 1),
            ],
            "more than 4 loads",
        ),
        (
            vec![MemRef::ifetch(4, 1), MemRef::store(8, 1), MemRef::store(8, 1), MemRef::store(8, 1)],
            "more than 2 stores",
        ),
        (vec![MemRef::ifetch(4, 1), MemRef { asid: 1, ..MemRef::load(8, 1) }], "ASID 1"),
        (vec![MemRef::ifetch(4, 1), MemRef::load(8, 4)], "size 4"),
        (vec![MemRef::ifetch(4, 1), MemRef::load(0, 1)], "address 0"),
    ];
    for (refs, what) in cases {
        let out = dir.path().join("out.champsim");
        let mut w = trace::create_writer(&out, TraceFormat::ChampSim, &serde_json::Value::Null).unwrap();
        let err = refs.iter().try_for_each(|r| w.write(r, 0)).unwrap_err().to_string();
        let index = refs.len() - 1;
        assert!(err.contains(what) && err.contains(&format!("reference {index}")), "{err}");
        drop(w);
        assert!(!out.exists(), "an abandoned writer must leave no file");
    }
}

#[test]
fn lackey_writer_rejects_asids() {
    let dir = tempfile::tempdir().unwrap();
    let mut w =
        trace::create_writer(dir.path().join("x.lackey"), TraceFormat::Lackey, &serde_json::Value::Null).unwrap();
    w.write(&MemRef::ifetch(4, 4), 1).unwrap();
    let err = w.write(&MemRef { asid: 2, ..MemRef::load(8, 4) }, 0).unwrap_err().to_string();
    assert!(err.contains("reference 1") && err.contains("ASID 2"), "{err}");
}

#[test]
fn native_identity_reports_totals_and_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let (p, refs, bytes) = sample_native(dir.path());
    let src = trace::open(&p, None).unwrap();
    let id = src.identity();
    assert_eq!(id["format"], "native");
    assert_eq!(id["records"], refs.len() as u64);
    assert_eq!(id["instructions"], 100);
    assert_eq!(id["file_size"], bytes.len() as u64);
    assert_eq!(id["metadata"]["program"], "t");
    assert_eq!(src.len_hint(), Some(300));
}

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A native trace written by hand, for contents the writer refuses: one block per
/// `(records, body, instructions)`, the body being the block's encoded records.
fn handmade_native(dir: &Path, name: &str, blocks: &[(u32, Vec<u8>, u64)]) -> PathBuf {
    let mut f = b"XLATTRC\0\x01\0\0\0\x02\0\0\0{}".to_vec();
    let (mut index, mut first, mut total) = (Vec::new(), 0u64, 0u64);
    for (records, body, instructions) in blocks {
        let frame = zstd::bulk::compress(body, 1).unwrap();
        for v in [f.len() as u64, first, u64::from(*records), *instructions] {
            index.extend_from_slice(&v.to_le_bytes());
        }
        for v in [*records, body.len() as u32, frame.len() as u32] {
            f.extend_from_slice(&v.to_le_bytes());
        }
        f.extend_from_slice(&instructions.to_le_bytes());
        f.extend_from_slice(&frame);
        first += u64::from(*records);
        total = total.wrapping_add(*instructions);
    }
    let index_offset = f.len() as u64;
    f.extend_from_slice(b"XLATIDX\0");
    for v in [blocks.len() as u64, first, total] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    f.extend_from_slice(&index);
    f.extend_from_slice(&index_offset.to_le_bytes());
    f.extend_from_slice(b"XLATEND\0");
    write(dir, name, &f)
}

/// [`handmade_native`] with version 2 in its header.
fn handmade_native_v2(dir: &Path, name: &str, blocks: &[(u32, Vec<u8>, u64)]) -> PathBuf {
    let p = handmade_native(dir, name, blocks);
    let mut bytes = std::fs::read(&p).unwrap();
    bytes[8] = 2;
    write(dir, name, &bytes)
}

/// `n` loads of 8 bytes, each 8 bytes after the previous (tag: size code 3, load, +0).
fn loads(n: usize) -> Vec<u8> {
    [0x60, 16].repeat(n)
}

/// An event table: tag 0x03, the number of events, and for each its position (the block's
/// references before it), ASID, operation, start and length.
fn table(entries: &[[u64; 5]]) -> Vec<u8> {
    let mut table = vec![0x03];
    varint(entries.len() as u64, &mut table);
    entries.iter().flatten().for_each(|&v| varint(v, &mut table));
    table
}

#[test]
fn native_version_1_files_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let p = handmade_native(dir.path(), "v1.xlat", &[(10, loads(10), 0), (5, loads(5), 0)]);
    assert_eq!(std::fs::read(&p).unwrap()[8], 1);
    let want: Vec<MemRef> = (1..=10).chain(1..=5).map(|i| MemRef::load(i * 8, 8)).collect();
    assert_eq!(read_all(&mut NativeReader::open(&p).unwrap()).unwrap(), want);
}

/// Damaged or cut event tables, and events where the format has none, are errors naming the
/// file and the block.
#[test]
fn native_bad_events_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let map = |at: u64| [at, 0, 0, 0x1000, 4096];
    let before_a_load = |table: Vec<u8>| [table, loads(1)].concat();
    // The second block's references, its body and the error.
    let cases: Vec<(&str, u32, Vec<u8>, &str)> = vec![
        ("empty", 1, before_a_load(table(&[[1, 0, 0, 0x1000, 0]])), "event table: an empty range (byte 2"),
        ("top", 1, before_a_load(table(&[[1, 0, 1, u64::MAX, 2]])), "event table: a range past the top of the address space"),
        ("op", 1, before_a_load(table(&[[1, 0, 2, 0x1000, 1]])), "event table: unknown event operation"),
        ("asid", 1, before_a_load(table(&[[1, 65536, 0, 0x1000, 1]])), "event table: event ASID above 65535"),
        ("place", 1, before_a_load(table(&[map(2)])), "event table: events out of order, or placed past the block's references (byte 2"),
        ("order", 1, before_a_load(table(&[map(1), map(0)])), "event table: events out of order, or placed past the block's references (byte 9"),
        ("none", 1, before_a_load(table(&[])), "event table: an event count of 0 or more than 65536"),
        ("many", 1, before_a_load(vec![0x03, 0x81, 0x80, 0x04]), "event table: an event count of 0 or more than 65536"),
        ("cut", 0, table(&[map(0)])[..5].to_vec(), "event table: bad event start varint"),
        // A table after a record is a reference of kind 3 (the block's second: the trace's 4th).
        ("after", 2, [loads(1), table(&[map(1)])].concat(), "record 3: invalid access kind 3"),
    ];
    for (name, records, body, want) in cases {
        let file = format!("{name}.xlat");
        let p = handmade_native_v2(dir.path(), &file, &[(2, loads(2), 0), (records, body, 0)]);
        let err = read_all(&mut NativeReader::open(&p).unwrap()).unwrap_err().to_string();
        assert!(err.contains(&file) && err.contains(&format!("block 1: {want}")), "{name}: {err}");
    }
    // In version 1, a body starting with tag 0x03 starts with a reference of kind 3.
    let p = handmade_native(dir.path(), "v1.xlat", &[(1, before_a_load(table(&[map(0)])), 0)]);
    let err = read_all(&mut NativeReader::open(&p).unwrap()).unwrap_err().to_string();
    assert!(err.contains("v1.xlat") && err.contains("block 0: record 0: invalid access kind 3"), "{err}");
    // A block of events alone may only end a version 2 trace.
    let p = handmade_native_v2(dir.path(), "first.xlat", &[(0, table(&[map(0)]), 0), (1, loads(1), 0)]);
    let err = NativeReader::open(&p).err().unwrap().to_string();
    assert!(err.contains("first.xlat") && err.contains("index entry 0: no record: only the last block"), "{err}");
    let p = handmade_native(dir.path(), "alone.xlat", &[(0, table(&[map(0)]), 0)]);
    let err = NativeReader::open(&p).err().unwrap().to_string();
    assert!(err.contains("alone.xlat") && err.contains("a version 1 block must hold a reference"), "{err}");
    let p = handmade_native_v2(dir.path(), "last.xlat", &[(1, loads(1), 0), (0, table(&[map(0)]), 0)]);
    let mut batch = Batch::default();
    assert_eq!(NativeReader::open(&p).unwrap().fill(&mut batch, 10).unwrap(), 1);
    assert_eq!(batch.events, [(1, AddressSpaceEvent::map(0x1000, 4096))]);
}

#[test]
fn the_native_writer_refuses_what_readers_reject_in_events() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = NativeWriter::create(dir.path().join("w.xlat"), &serde_json::json!({})).unwrap();
    w.write(&MemRef::load(8, 8), 0).unwrap();
    for (e, why) in [(AddressSpaceEvent::map(0x1000, 0), "an empty range"), (AddressSpaceEvent::unmap(u64::MAX, 2), "past the top")] {
        let err = w.write_event(&e).unwrap_err().to_string();
        assert!(err.contains("w.xlat") && err.contains("event before reference 1") && err.contains(why), "{err}");
    }
    // A batch's events must be in order, and not past its references.
    let mut batch = Batch::new(vec![MemRef::load(16, 8)], 0);
    batch.events = vec![(1, AddressSpaceEvent::map(0, 1)), (0, AddressSpaceEvent::map(0, 1))];
    assert!(w.write_batch(&batch).unwrap_err().to_string().contains("out of order"));
    batch.events = vec![(2, AddressSpaceEvent::map(0, 1))];
    assert!(w.write_batch(&batch).is_err());
}

#[test]
fn references_past_the_top_of_the_address_space_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    // Lackey: the last byte of ` L fffffffffffffffc,8` would wrap around to page 0.
    let p = write(dir.path(), "top.lackey", b"I  0400000,4\n L fffffffffffffff8,8\nI  0400004,4\n L fffffffffffffffc,8\n");
    let err = read_all(&mut LackeyReader::open(&p).unwrap()).unwrap_err().to_string();
    assert!(err.contains("top.lackey:4:") && err.contains("past the top"), "{err}");
    // Native: the same load after three good ones (at 8, 16, 24: delta -28, zigzag 55).
    let mut body = loads(3);
    body.extend([0x60, 55]);
    let p = handmade_native(dir.path(), "top.xlat", &[(4, body, 0)]);
    let err = read_all(&mut NativeReader::open(&p).unwrap()).unwrap_err().to_string();
    assert!(err.contains("top.xlat") && err.contains("record 3: the reference runs past the top"), "{err}");
    // ... which the writer refuses to write.
    let mut w = NativeWriter::create(dir.path().join("w.xlat"), &serde_json::json!({})).unwrap();
    w.write(&MemRef::load(u64::MAX - 7, 8), 0).unwrap();
    let err = w.write(&MemRef::load(u64::MAX - 3, 8), 0).unwrap_err().to_string();
    assert!(err.contains("reference 1") && err.contains("past the top"), "{err}");
    // ChampSim references have size 1, so they cannot run past the top.
    let p = write(dir.path(), "top.champsim", &champsim_record(u64::MAX, &[u64::MAX], &[]));
    assert_eq!(read_all(&mut ChampSimReader::open(&p).unwrap()).unwrap()[1], MemRef::load(u64::MAX, 1));
}

#[test]
fn native_instruction_counts_past_2_pow_64_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    // Two loads of 2^63 + 2 instructions each (instruction varint): the sum wraps to 4, which
    // the block header and index claim.
    let mut body = Vec::new();
    for _ in 0..2 {
        body.push(0x68);
        varint((1 << 63) + 2, &mut body);
        body.push(16);
    }
    let p = handmade_native(dir.path(), "instr.xlat", &[(2, body, 4)]);
    let err = read_all(&mut NativeReader::open(&p).unwrap()).unwrap_err().to_string();
    assert!(err.contains("instr.xlat") && err.contains("record 1") && err.contains("instruction count"), "{err}");
    // Two blocks whose counts fit alone but not together: the index is rejected on opening.
    let mut most = vec![0x68];
    varint(u64::MAX, &mut most);
    most.push(16);
    let p = handmade_native(dir.path(), "index.xlat", &[(1, most, u64::MAX), (1, vec![0x64, 16], 1)]);
    let err = NativeReader::open(&p).err().unwrap().to_string();
    assert!(err.contains("index.xlat") && err.contains("instruction count"), "{err}");
    // The writer refuses to make such a file.
    let mut w = NativeWriter::create(dir.path().join("w.xlat"), &serde_json::json!({})).unwrap().with_block_records(1);
    w.write(&MemRef::load(8, 8), u64::MAX).unwrap();
    let err = w.write(&MemRef::load(8, 8), 1).unwrap_err().to_string();
    assert!(err.contains("reference 1") && err.contains("instruction count"), "{err}");
    // Nor does it carry more from batches without references, which pass their counts on to
    // the next reference: that sum was unchecked (a panic in debug builds, a count wrapped
    // around in release builds, which readers cannot tell from a true one).
    let mut w = NativeWriter::create(dir.path().join("c.xlat"), &serde_json::json!({})).unwrap();
    w.write(&MemRef::ifetch(8, 4), 1).unwrap();
    let half = xlat::Batch::new(vec![], 1 << 63);
    w.write_batch(&half).unwrap();
    let err = w.write_batch(&half).unwrap_err().to_string();
    assert!(err.contains("reference 1") && err.contains("instruction count"), "{err}");
}

#[test]
fn native_blocks_of_more_records_than_a_block_may_hold_are_refused_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let records = xlat::trace::MAX_BLOCK_RECORDS + 1;
    let p = handmade_native(dir.path(), "big.xlat", &[(10, loads(10), 0), (records, vec![0; 2 * records as usize], 0)]);
    let err = NativeReader::open(&p).err().expect("refused at open").to_string();
    assert!(err.contains(&format!("index entry 1: {records} records, more than the 4194304 a block may hold")), "{err}");
}

#[test]
fn native_record_cut_at_the_block_end_is_named() {
    let dir = tempfile::tempdir().unwrap();
    // The second block's last record has a continuation bit and no next byte.
    let mut cut = loads(6000);
    cut.extend([0x60, 0x80]);
    let p = handmade_native(dir.path(), "cut.xlat", &[(10, loads(10), 0), (6001, cut, 0)]);
    let err = read_all(&mut NativeReader::open(&p).unwrap()).unwrap_err().to_string();
    assert!(err.contains("block 1: record 6010: records run past the end of the block (byte 12000"), "{err}");
}

#[test]
fn compressed_champsim_read_errors_give_the_offset_reached() {
    let dir = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..1000u64).flat_map(|i| champsim_record(0x400000 + 4 * i, &[0x1000 + i], &[])).collect();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &data).unwrap();
    let mut gz = gz.finish().unwrap();
    // Damage the CRC in the gzip trailer: the error comes once all the data is decompressed.
    let crc = gz.len() - 8;
    gz[crc] ^= 1;
    let p = write(dir.path(), "crc.champsim.gz", &gz);
    let err = read_all(&mut ChampSimReader::open(&p).unwrap()).unwrap_err();
    assert!(matches!(err, Error::AtOffset { offset: 64000, .. }), "{err}");
    // Cut the xz stream in the middle: the offset is how far it decompressed.
    let mut xz = liblzma::write::XzEncoder::new(Vec::new(), 0);
    std::io::Write::write_all(&mut xz, &data).unwrap();
    let xz = xz.finish().unwrap();
    let p = write(dir.path(), "cut.champsim.xz", &xz[..xz.len() / 2]);
    match read_all(&mut ChampSimReader::open(&p).unwrap()).unwrap_err() {
        Error::AtOffset { offset, message, .. } => {
            assert!(offset > 0 && offset < 64000, "{offset}: {message}");
            assert!(message.contains("decompressed"), "{message}");
        }
        other => panic!("expected AtOffset, got {other:?}"),
    }
    // A short file cut before its format can be told: the detection says how far it got.
    let mut xz = liblzma::write::XzEncoder::new(Vec::new(), 0);
    std::io::Write::write_all(&mut xz, &data[..1280]).unwrap();
    let xz = xz.finish().unwrap();
    let p = write(dir.path(), "short.champsim.xz", &xz[..xz.len() - 20]);
    let err = xlat::trace::open(&p, None).map(|_| ()).unwrap_err().to_string();
    assert!(err.contains("short.champsim.xz") && err.contains("to tell its format") && err.contains("after"), "{err}");
}

#[test]
fn text_is_not_read_as_champsim() {
    let dir = tempfile::tempdir().unwrap();
    // A Lackey trace of exactly two 64-byte "records", named as a ChampSim trace.
    let text = "I  0400000,4\n L 7ff000398,8\n".repeat(4);
    let text = format!("{text}{}\n", " ".repeat(127 - text.len()));
    assert_eq!(text.len(), 128);
    let p = write(dir.path(), "text.champsim", text.as_bytes());
    assert_eq!(trace::detect(&p).unwrap(), TraceFormat::ChampSim);
    let err = read_all(&mut trace::open(&p, None).unwrap()).unwrap_err();
    assert!(matches!(&err, Error::AtOffset { offset: 0, message, .. } if message.contains("not a ChampSim trace")), "{err}");
}

#[test]
fn compressed_native_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let lackey = write(dir.path(), "in.lackey", b"I  0400000,4\n L 7ff000398,8\n");
    for ext in ["zst", "gz", "xz"] {
        let out = dir.path().join(format!("out.xlat.{ext}"));
        assert_eq!(TraceFormat::from_extension(&out), Some(TraceFormat::Native));
        let err = trace::convert(&lackey, &out).unwrap_err().to_string();
        assert!(err.contains(&format!("out.xlat.{ext}")) && err.contains(&format!("without .{ext}")), "{err}");
        assert!(!out.exists());
    }
    // A native trace compressed whole cannot be read as a stream: say so, rather than
    // reading it as ChampSim.
    let (_, _, bytes) = sample_native(dir.path());
    let p = write(dir.path(), "sample.xlat.zst", &zstd::encode_all(&bytes[..], 1).unwrap());
    let err = trace::open(&p, None).err().unwrap().to_string();
    assert!(err.contains("sample.xlat.zst") && err.contains("compressed native trace"), "{err}");
}

#[test]
fn standard_output_is_not_a_trace_output() {
    let dir = tempfile::tempdir().unwrap();
    let lackey = write(dir.path(), "in.lackey", b"I  0400000,4\n");
    for format in [TraceFormat::Lackey, TraceFormat::ChampSim, TraceFormat::Native] {
        let err = trace::create_writer("-", format, &serde_json::Value::Null).err().unwrap().to_string();
        assert!(err.contains("standard output"), "{format}: {err}");
    }
    assert!(trace::convert(&lackey, "-").unwrap_err().to_string().contains("standard output"));
}
