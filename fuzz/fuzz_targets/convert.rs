//! Writers and readers together: arbitrary references (and instruction counts) written in
//! each format and read back. A writer may refuse what its format cannot hold (an error);
//! what it accepts must read back exactly: the same references in order, and in the native
//! format the same instructions before each. A panic, a hang or a difference is a finding.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use xlat::memref::AccessKind;
use xlat::source::RefSource;
use xlat::trace::{create_writer, TraceFormat};
use xlat::{Batch, MemRef};

/// Bytes of input per reference: address 8, size 2, kind and address space 1, instructions 1.
const REF_BYTES: usize = 12;

/// The references (with the instructions retired before each) that `data` spells, 12 bytes
/// each. Addresses are kept near a few places, so that references share pages and lines,
/// unless the input asks for a raw 64-bit address.
fn references(data: &[u8]) -> Vec<(MemRef, u64)> {
    data.chunks_exact(REF_BYTES)
        .map(|c| {
            let raw = u64::from_le_bytes(c[..8].try_into().expect("8 bytes"));
            let flags = c[10];
            let vaddr = if flags & 0x80 != 0 { raw } else { raw % (1 << 24) + u64::from(flags & 3) * (1 << 40) };
            let kind = [AccessKind::Load, AccessKind::Store, AccessKind::IFetch][usize::from(flags >> 2 & 3) % 3];
            let asid = u16::from(flags >> 4 & 1);
            let size = u16::from_le_bytes([c[8], c[9]]);
            (MemRef { vaddr, asid, size, kind }, u64::from(c[11]))
        })
        .collect()
}

/// The file written in `format` from `refs`, or `None` if the writer refused them.
fn write(refs: &[(MemRef, u64)], format: TraceFormat, dir: &std::path::Path) -> Option<std::path::PathBuf> {
    let path = dir.join(format!("out.{}", format.name()));
    let mut writer = create_writer(&path, format, &serde_json::json!({})).expect("a writer in a fresh directory");
    for (r, instructions) in refs {
        writer.write(r, *instructions).ok()?;
    }
    writer.finish().ok()?;
    Some(path)
}

/// Every reference of `source`, with the instructions counted in the batch that carried it
/// (batches of one reference: the native format's count before it).
fn read(mut source: Box<dyn RefSource>) -> Vec<(MemRef, u64)> {
    let mut batch = Batch::with_capacity(1);
    let mut refs = Vec::new();
    loop {
        batch.clear();
        match source.fill(&mut batch, 1).expect("a file the writer accepted reads back") {
            0 => return refs,
            _ => refs.push((batch.refs[0], batch.instructions)),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let refs = references(data);
    let dir = common::scratch_dir();
    for format in [TraceFormat::Native, TraceFormat::Lackey, TraceFormat::ChampSim] {
        let Some(path) = write(&refs, format, dir.path()) else { continue };
        let back = read(xlat::trace::open(&path, Some(format)).expect("a file the writer accepted opens"));
        let seen: Vec<MemRef> = back.iter().map(|(r, _)| *r).collect();
        // Exactly: the native format keeps even a size of 0, which the others refuse.
        let written: Vec<MemRef> = refs.iter().map(|(r, _)| *r).collect();
        assert_eq!(seen, written, "{format:?}: the references read back");
        if format == TraceFormat::Native {
            let counts: Vec<u64> = back.iter().map(|(_, n)| *n).collect();
            assert_eq!(counts, refs.iter().map(|(_, n)| *n).collect::<Vec<_>>(), "native: instructions before each reference");
        }
    }
});
