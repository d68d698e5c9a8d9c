//! Decoding the recording tool's binary records into a native trace.
//!
//! The layout is defined at the top of `valgrind/xlat_record.c`: 16-byte little-endian
//! records (address u64, instructions u32, size u16, kind u8, sub u8); kind 3 is a control
//! record, kind 4 an address-space event.

use anyhow::{bail, Result};
use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use xlat::trace::NativeWriter;
use xlat::types::BASE_PAGE_SHIFT;
use xlat::{AccessKind, AddressSpaceEvent, Batch, MemRef, RangeOp};

const RECORD: usize = 16;
const KIND_CONTROL: u8 = 3;
const KIND_EVENT: u8 = 4;

/// Why the tool stopped sending records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The program exited (normally or by a signal Valgrind saw).
    Exit,
    /// The program called execve, which Valgrind does not follow.
    Exec,
    /// The reference limit was reached.
    Limit,
    /// The stop point (`--stop-at`) was reached.
    Point,
}

/// Where recording began, when it began at a start point (`--start-at`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Start {
    /// References the program made before it.
    pub references: u64,
    /// Instructions it executed before it.
    pub instructions: u64,
}

/// What came through the pipe.
#[derive(Debug, Default)]
pub struct Received {
    /// References written to the trace, per kind (load, store, fetch).
    pub counts: [u64; 3],
    /// Address-space events received, per operation (map, unmap).
    pub events: [u64; 2],
    /// The control record that ended the stream; `None` when the pipe closed without one
    /// (the tool was killed).
    pub stop: Option<Stop>,
    /// Instructions the program executed up to the stop, as the tool counted them.
    pub instructions: Option<u64>,
    /// The start point's, when one was reached.
    pub start: Option<Start>,
    /// When the first record arrived: the end of the skipped references, where recording
    /// began (`None` when nothing came).
    pub first_record: Option<Instant>,
}

impl Received {
    /// All references written.
    pub fn references(&self) -> u64 {
        self.counts.iter().sum()
    }
}

/// The records of one read from the pipe: references with the address-space events among
/// them, and each reference's own instruction count (a batch holds only their sum, and the
/// trace keeps them exact).
#[derive(Clone, Debug, Default)]
pub struct Decoded {
    /// The references and events, in the order the tool sent them.
    pub batch: Batch,
    /// Instructions begun since the previous reference, one per reference of `batch`.
    pub instructions: Vec<u64>,
}

impl Decoded {
    fn push(&mut self, r: MemRef, instructions: u64) {
        self.batch.refs.push(r);
        self.batch.instructions = self.batch.instructions.saturating_add(instructions);
        self.instructions.push(instructions);
    }

    fn clear(&mut self) {
        self.batch.clear();
        self.instructions.clear();
    }

    /// Writes the references, each with its instruction count, and the events between them.
    pub fn write_to(&self, writer: &mut NativeWriter) -> Result<()> {
        let mut counts = self.instructions.iter();
        for (run, event) in self.batch.runs() {
            for (r, &n) in run.iter().zip(counts.by_ref()) {
                writer.write(r, n)?;
            }
            // Written one by one, not with `write_batch`, which would spread the batch's
            // instructions over its references rather than keep each reference's own.
            if let Some(event) = event {
                writer.write_event(event)?;
            }
        }
        Ok(())
    }
}

/// Reads records from `input` until it closes or a limit record arrives, handing each read's
/// worth of references and events to `sink` (which writes them to the trace); `progress`
/// follows the number of references decoded.
pub fn receive(
    input: &mut dyn Read,
    sink: &mut dyn FnMut(&Decoded) -> Result<()>,
    progress: &AtomicU64,
) -> Result<Received> {
    let mut got = Received::default();
    let mut buf = vec![0u8; 1 << 17];
    let mut filled = 0;
    let mut carry = 0u64;
    let mut decoded = Decoded::default();
    loop {
        let n = match input.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        got.first_record.get_or_insert_with(Instant::now);
        filled += n;
        let whole = filled / RECORD * RECORD;
        decoded.clear();
        for rec in buf[..whole].chunks_exact(RECORD) {
            decode(rec, &mut decoded, &mut got, &mut carry)?;
        }
        sink(&decoded)?;
        buf.copy_within(whole..filled, 0);
        filled -= whole;
        progress.store(got.references(), Ordering::Relaxed);
        if matches!(got.stop, Some(Stop::Limit | Stop::Point)) {
            // The tool sends nothing after the limit or the stop point; the program is about
            // to be killed.
            break;
        }
    }
    // A killed tool may leave half a record behind; after a final record, nothing may follow.
    if filled != 0 && got.stop.is_some() {
        bail!("the recording tool sent {filled} bytes after its final record");
    }
    Ok(got)
}

/// Handles one record.
fn decode(rec: &[u8], out: &mut Decoded, got: &mut Received, carry: &mut u64) -> Result<()> {
    let addr = u64::from_le_bytes(rec[0..8].try_into().expect("8 bytes"));
    let instrs = u64::from(u32::from_le_bytes(rec[8..12].try_into().expect("4 bytes")));
    let size = u16::from_le_bytes([rec[12], rec[13]]);
    let (kind, sub) = (rec[14], rec[15]);
    if got.stop.is_some() {
        bail!("the recording tool sent a record after its final one");
    }
    if kind == KIND_CONTROL {
        match sub {
            0 => *carry += addr,
            1..=3 | 6 => {
                got.stop = Some(match sub {
                    1 => Stop::Exit,
                    2 => Stop::Exec,
                    3 => Stop::Limit,
                    _ => Stop::Point,
                });
                got.instructions = Some(addr);
            }
            4 if got.start.is_none() && got.references() == 0 => got.start = Some(Start { references: addr, instructions: 0 }),
            5 => match &mut got.start {
                Some(start) if start.instructions == 0 => start.instructions = addr,
                _ => bail!("the recording tool sent an instruction count with no start point before it"),
            },
            4 => bail!("the recording tool sent a second start point, or one after references"),
            _ => bail!("the recording tool sent an unknown control record ({sub})"),
        }
        return Ok(());
    }
    if kind == KIND_EVENT {
        // The page count's low 32 bits travel in the instruction field, the high 16 in the size.
        let event = event(sub, addr, instrs | u64::from(size) << 32)?;
        out.batch.push_event(event);
        got.events[event.op as usize] += 1;
        return Ok(());
    }
    let Some(kind) = AccessKind::from_u8(kind) else {
        bail!("the recording tool sent an unknown reference kind ({kind})");
    };
    out.push(MemRef { vaddr: addr, asid: 0, size, kind }, instrs + std::mem::take(carry));
    got.counts[kind as usize] += 1;
    Ok(())
}

/// The address-space event `op` of `pages` pages from `start`, checked: the tool sends whole
/// pages, a range that a simulation can apply.
fn event(op: u8, start: u64, pages: u64) -> Result<AddressSpaceEvent> {
    let Some(op) = RangeOp::from_u8(op) else {
        bail!("the recording tool sent an unknown address-space event ({op})");
    };
    // At most 2^48 pages, so the length cannot overflow.
    let event = AddressSpaceEvent { asid: 0, op, start, len: pages << BASE_PAGE_SHIFT };
    let wrong = if start % (1 << BASE_PAGE_SHIFT) != 0 { Some("a start off a page boundary") } else { event.malformed() };
    if let Some(why) = wrong {
        let name = match op {
            RangeOp::Map => "map",
            RangeOp::Unmap => "unmap",
        };
        bail!("the recording tool sent a malformed address-space event ({name} of {pages} pages at {start:#x}): {why}");
    }
    Ok(event)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use xlat::source::RefSource;

    /// Appends `part` to `all`: the references, their instruction counts and the events,
    /// those after the last reference included.
    pub fn append(all: &mut Decoded, part: &Decoded) {
        all.batch.append_from(&part.batch, 0..part.batch.len(), &mut 0, true);
        all.batch.instructions += part.batch.instructions;
        all.instructions.extend(&part.instructions);
    }

    fn rec(addr: u64, instrs: u32, size: u16, kind: u8, sub: u8) -> Vec<u8> {
        let mut v = addr.to_le_bytes().to_vec();
        v.extend_from_slice(&instrs.to_le_bytes());
        v.extend_from_slice(&size.to_le_bytes());
        v.extend_from_slice(&[kind, sub]);
        v
    }

    /// An event record: `op` (0 map, 1 unmap) of `pages` pages from `start`.
    fn ev(op: u8, start: u64, pages: u64) -> Vec<u8> {
        rec(start, pages as u32, (pages >> 32) as u16, KIND_EVENT, op)
    }

    /// Decodes `input`, collecting what each read gave.
    fn collect(input: &mut dyn Read) -> Result<(Received, Vec<Decoded>)> {
        let mut parts = Vec::new();
        let sink = &mut |d: &Decoded| {
            parts.push(d.clone());
            Ok(())
        };
        let got = receive(input, sink, &AtomicU64::new(0))?;
        Ok((got, parts))
    }

    /// The error decoding `bytes` gives.
    fn error(bytes: &[u8]) -> String {
        collect(&mut &bytes[..]).unwrap_err().to_string()
    }

    /// Gives at most `step` bytes a read, so that records (and events) straddle reads.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(self.1).min(buf.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    /// Records decode to references with their instruction deltas; a carry record adds to the
    /// next reference; an end record gives the total.
    #[test]
    fn records_become_references() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.xlat");
        let bytes = [
            rec(0x1000, 1, 4, 2, 0),
            rec(0x7ff0, 0, 8, 0, 0),
            rec(5_000_000_000, 0, 0, 3, 0),
            rec(0x7ff8, 3, 16, 1, 0),
            rec(5_000_000_010, 0, 0, 3, 1),
        ]
        .concat();
        let mut w = NativeWriter::create(&path, &serde_json::json!({})).unwrap();
        let progress = AtomicU64::new(0);
        let got = receive(&mut &bytes[..], &mut |d| d.write_to(&mut w), &progress).unwrap();
        w.finish().unwrap();
        assert_eq!((got.counts, got.stop, got.instructions), ([1, 1, 1], Some(Stop::Exit), Some(5_000_000_010)));
        assert_eq!(progress.load(Ordering::Relaxed), 3);
        assert_eq!(read_back(&path), [(MemRef::ifetch(0x1000, 4), 1), (MemRef::load(0x7ff0, 8), 0), (MemRef::store(0x7ff8, 16), 5_000_000_003)]);
    }

    /// Each reference of a native trace with the instructions it carries.
    fn read_back(path: &std::path::Path) -> Vec<(MemRef, u64)> {
        let mut r = xlat::trace::NativeReader::open(path).unwrap();
        let mut refs = Vec::new();
        loop {
            let mut b = Batch::default();
            if r.fill(&mut b, 1).unwrap() == 0 {
                break;
            }
            refs.push((b.refs[0], b.instructions));
        }
        refs
    }

    /// Event records become the batch's events, each before the reference that followed it in
    /// the stream: before the first reference, between two, two in a row, after the last, and
    /// across reads that cut records in two. They carry no instructions (a carry before one
    /// goes to the next reference) and leave the references' own counts exact in the trace.
    #[test]
    fn events_sit_between_their_references() {
        let bytes = [
            ev(0, 0x10_0000, 256),
            rec(0x10_0000, 2, 8, 1, 0),
            rec(0x10_1000, 1, 8, 0, 0),
            rec(7, 0, 0, 3, 0),
            ev(1, 0x10_0000, 256),
            ev(0, 0x7fff_0000_0000, 1 << 32 | 5),
            rec(0x20, 1, 4, 0, 0),
            ev(1, 0x40_0000, 1),
            rec(100, 0, 0, 3, 1),
        ]
        .concat();
        let map = AddressSpaceEvent::map;
        let unmap = AddressSpaceEvent::unmap;
        let want_events = [
            (0, map(0x10_0000, 1 << 20)),
            (2, unmap(0x10_0000, 1 << 20)),
            (2, map(0x7fff_0000_0000, (1 << 32 | 5) << 12)),
            (3, unmap(0x40_0000, 4096)),
        ];
        let want_refs = [MemRef::store(0x10_0000, 8), MemRef::load(0x10_1000, 8), MemRef::load(0x20, 4)];
        for step in [bytes.len(), 24, 7] {
            let (got, parts) = collect(&mut Trickle(&bytes, step)).unwrap();
            assert_eq!((got.counts, got.events, got.stop), ([2, 1, 0], [2, 2], Some(Stop::Exit)), "step {step}");
            let mut all = Decoded::default();
            for part in &parts {
                append(&mut all, part);
            }
            assert_eq!(all.batch.events, want_events, "step {step}");
            assert_eq!(all.batch.refs, want_refs, "step {step}");
            assert_eq!((&all.instructions[..], all.batch.instructions), (&[2, 1, 8][..], 11), "step {step}");
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.xlat");
        let mut w = NativeWriter::create(&path, &serde_json::json!({})).unwrap();
        receive(&mut &bytes[..], &mut |d| d.write_to(&mut w), &AtomicU64::new(0)).unwrap();
        w.finish().unwrap();
        assert_eq!(read_back(&path), want_refs.iter().copied().zip([2, 1, 8]).collect::<Vec<_>>());
    }

    /// An event the simulation could not apply is an error naming what is wrong with it.
    #[test]
    fn malformed_events_are_errors() {
        for (bytes, says) in [
            (ev(2, 0x1000, 1), "unknown address-space event (2)"),
            (ev(0, 0x1000, 0), "(map of 0 pages at 0x1000): an empty range"),
            (ev(1, 0x1234, 1), "(unmap of 1 pages at 0x1234): a start off a page boundary"),
            (ev(0, 0xffff_ffff_ffff_e000, 3), "a range past the top of the address space"),
            (ev(0, 0xf000_0000_0001_0000, (1 << 48) - 1), "a range past the top of the address space"),
        ] {
            let err = error(&[rec(0x10, 1, 8, 0, 0), bytes].concat());
            assert!(err.contains(says), "{err}, not {says}");
        }
        assert!(error(&[rec(1, 0, 0, 3, 1), ev(0, 0x1000, 1)].concat()).contains("after its final"));
    }

    /// A start point gives the references and instructions before it; a stop point ends the
    /// stream as the limit does.
    #[test]
    fn start_and_stop_points() {
        let bytes = [rec(700, 0, 0, 3, 4), rec(2500, 0, 0, 3, 5), rec(0x10, 3, 8, 0, 0), rec(2600, 0, 0, 3, 6)].concat();
        let (got, _) = collect(&mut &bytes[..]).unwrap();
        assert_eq!(got.start, Some(Start { references: 700, instructions: 2500 }));
        assert_eq!((got.references(), got.stop, got.instructions), (1, Some(Stop::Point), Some(2600)));
    }

    /// A stream cut by a kill (no final record, half a record) is accepted as far as it goes;
    /// records after the final one, or unknown kinds, are errors.
    #[test]
    fn cut_and_bad_streams() {
        let cut = [rec(0x10, 1, 8, 0, 0), rec(0x20, 1, 8, 1, 0)[..7].to_vec()].concat();
        let (got, _) = collect(&mut &cut[..]).unwrap();
        assert_eq!((got.references(), got.stop), (1, None));
        assert!(error(&[rec(1, 0, 0, 3, 1), rec(0x10, 1, 8, 0, 0)].concat()).contains("after its final"));
        assert!(error(&[rec(0x10, 1, 8, 0, 0), rec(5, 0, 0, 3, 4)].concat()).contains("start point"));
        assert!(error(&rec(0x10, 1, 8, 7, 0)).contains("unknown reference kind"));
    }
}
