//! Decoding the recording tool's binary records into a native trace.
//!
//! The layout is defined at the top of `valgrind/xlat_record.c`: 16-byte little-endian
//! records (address u64, instructions u32, size u16, kind u8, sub u8); kind 3 is a control
//! record.

use anyhow::{bail, Result};
use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use xlat::trace::NativeWriter;
use xlat::{AccessKind, MemRef};

const RECORD: usize = 16;
const KIND_CONTROL: u8 = 3;

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

/// Reads records from `input` until it closes or a limit record arrives, writing references
/// to `writer`; `progress` follows the number of references written.
pub fn receive(input: &mut dyn Read, writer: &mut NativeWriter, progress: &AtomicU64) -> Result<Received> {
    let mut got = Received::default();
    let mut buf = vec![0u8; 1 << 17];
    let mut filled = 0;
    let mut carry = 0u64;
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
        for rec in buf[..whole].chunks_exact(RECORD) {
            decode(rec, writer, &mut got, &mut carry)?;
        }
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
fn decode(rec: &[u8], writer: &mut NativeWriter, got: &mut Received, carry: &mut u64) -> Result<()> {
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
    let Some(kind) = AccessKind::from_u8(kind) else {
        bail!("the recording tool sent an unknown reference kind ({kind})");
    };
    writer.write(&MemRef { vaddr: addr, asid: 0, size, kind }, instrs + std::mem::take(carry))?;
    got.counts[kind as usize] += 1;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use xlat::source::RefSource;
    use xlat::Batch;

    fn rec(addr: u64, instrs: u32, size: u16, kind: u8, sub: u8) -> Vec<u8> {
        let mut v = addr.to_le_bytes().to_vec();
        v.extend_from_slice(&instrs.to_le_bytes());
        v.extend_from_slice(&size.to_le_bytes());
        v.extend_from_slice(&[kind, sub]);
        v
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
        let got = receive(&mut &bytes[..], &mut w, &progress).unwrap();
        w.finish().unwrap();
        assert_eq!((got.counts, got.stop, got.instructions), ([1, 1, 1], Some(Stop::Exit), Some(5_000_000_010)));
        assert_eq!(progress.load(Ordering::Relaxed), 3);
        let mut r = xlat::trace::NativeReader::open(&path).unwrap();
        let mut refs = Vec::new();
        loop {
            let mut b = Batch::default();
            if r.fill(&mut b, 1).unwrap() == 0 {
                break;
            }
            refs.push((b.refs[0], b.instructions));
        }
        let want =
            [(MemRef::ifetch(0x1000, 4), 1), (MemRef::load(0x7ff0, 8), 0), (MemRef::store(0x7ff8, 16), 5_000_000_003)];
        assert_eq!(refs, want);
    }

    /// A start point gives the references and instructions before it; a stop point ends the
    /// stream as the limit does.
    #[test]
    fn start_and_stop_points() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = NativeWriter::create(dir.path().join("s.xlat"), &serde_json::json!({})).unwrap();
        let bytes = [rec(700, 0, 0, 3, 4), rec(2500, 0, 0, 3, 5), rec(0x10, 3, 8, 0, 0), rec(2600, 0, 0, 3, 6)].concat();
        let got = receive(&mut &bytes[..], &mut w, &AtomicU64::new(0)).unwrap();
        assert_eq!(got.start, Some(Start { references: 700, instructions: 2500 }));
        assert_eq!((got.references(), got.stop, got.instructions), (1, Some(Stop::Point), Some(2600)));
    }

    /// A stream cut by a kill (no final record, half a record) is accepted as far as it goes;
    /// records after the final one, or unknown kinds, are errors.
    #[test]
    fn cut_and_bad_streams() {
        let dir = tempfile::tempdir().unwrap();
        let progress = AtomicU64::new(0);
        let mut w = NativeWriter::create(dir.path().join("a.xlat"), &serde_json::json!({})).unwrap();
        let cut = [rec(0x10, 1, 8, 0, 0), rec(0x20, 1, 8, 1, 0)[..7].to_vec()].concat();
        let got = receive(&mut &cut[..], &mut w, &progress).unwrap();
        assert_eq!((got.references(), got.stop), (1, None));
        let after_end = [rec(1, 0, 0, 3, 1), rec(0x10, 1, 8, 0, 0)].concat();
        assert!(receive(&mut &after_end[..], &mut w, &progress).unwrap_err().to_string().contains("after its final"));
        let late_start = [rec(0x10, 1, 8, 0, 0), rec(5, 0, 0, 3, 4)].concat();
        assert!(receive(&mut &late_start[..], &mut w, &progress).unwrap_err().to_string().contains("start point"));
        let bad_kind = rec(0x10, 1, 8, 7, 0);
        assert!(receive(&mut &bad_kind[..], &mut w, &progress)
            .unwrap_err()
            .to_string()
            .contains("unknown reference kind"));
    }
}
