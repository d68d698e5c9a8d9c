//! Valgrind Lackey memory traces (`valgrind --tool=lackey --trace-mem=yes`).
//!
//! Records are `I  addr,size` (instruction fetch, column 1) and ` L addr,size`,
//! ` S addr,size`, ` M addr,size` (load, store, modify; column 2), with the address in hex
//! (an optional `0x` is accepted) and the size in decimal (1..=65535). `M` is a load followed
//! by a store of the same bytes. Each `I` counts one instruction.
//!
//! Lines are classified so that Valgrind's own output passes through but a damaged record
//! does not: blank lines, and lines whose first column holds a word of two or more characters
//! (`==123== ...` banners), are ignored unless they hold control characters (binary data);
//! any other line is a record and must parse exactly, else the error names the file and line.
//! A file that ends without a record although it had a line that is not Valgrind's (not
//! starting with `==` or `--`) is not a Lackey trace, and is an error naming that line. A
//! UTF-8 byte-order mark before the first line is skipped. A line longer than [`MAX_LINE`]
//! is an error: it is never buffered whole.

use super::io::{display_path, file_identity, open_input, AtomicOutput, Compression, Input};
use super::TraceWriter;
use crate::memref::{past_top, AccessKind, Batch, MemRef};
use crate::source::RefSource;
use crate::{Error, Result};
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

/// The longest line the reader takes, newline aside: 1 MiB. Valgrind's records are under 40
/// bytes and its banners rarely pass a few KiB (a long command line), so this only stops
/// input without newlines (binary data, `/dev/zero`, a damaged file) from being buffered
/// whole until memory runs out.
pub const MAX_LINE: usize = 1 << 20;

/// One parsed record line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Record {
    /// `I`, `L`, `S` or `M`.
    pub letter: u8,
    /// Address of the first byte.
    pub addr: u64,
    /// Bytes accessed.
    pub size: u16,
}

fn is_space(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// Classifies one line (without its newline): `Ok(None)` for ignored lines, the record, or
/// what is wrong with it.
pub(crate) fn parse_line(line: &[u8]) -> std::result::Result<Option<Record>, String> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let start = line.iter().position(|&b| !is_space(b));
    let Some(start) = start else { return Ok(None) };
    let token_len = line[start..].iter().position(|&b| is_space(b)).unwrap_or(line.len() - start);
    if token_len != 1 {
        if start == 0 {
            // A word in column 1: Valgrind banner or other tool output, unless it is binary
            // (a ChampSim file read as text would otherwise pass as an empty trace).
            if line.iter().any(|&b| b < 0x20 && b != b'\t') {
                return Err("binary data: this is not a Lackey text trace".into());
            }
            return Ok(None);
        }
        return Err("expected a record letter (I, L, S or M) followed by a space".into());
    }
    let letter = line[start];
    if !matches!(letter, b'I' | b'L' | b'S' | b'M') {
        return Err(format!("unknown record letter {:?} (expected I, L, S or M)", letter as char));
    }
    let mut rest = &line[start + 1..];
    rest = &rest[rest.iter().position(|&b| !is_space(b)).unwrap_or(rest.len())..];
    let addr_len = rest.iter().position(|&b| b == b',' || is_space(b)).unwrap_or(rest.len());
    if addr_len == 0 {
        return Err("missing address".into());
    }
    let addr = parse_hex(&rest[..addr_len]).ok_or("the address is not valid hex (1 to 16 hex digits, optionally after 0x)")?;
    rest = &rest[addr_len..];
    rest = rest.strip_prefix(b",").ok_or("expected ',' and a size after the address")?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let size = parse_size(&rest[..digits]).ok_or("bad size (expected a decimal number from 1 to 65535)")?;
    if !rest[digits..].iter().all(|&b| is_space(b)) {
        return Err("unexpected text after the size".into());
    }
    if past_top(addr, size) {
        return Err("the reference runs past the top of the 64-bit address space".into());
    }
    Ok(Some(Record { letter, addr, size }))
}

/// Parses `s` as 1 to 16 hex digits (after an optional `0x`), all of it.
fn parse_hex(s: &[u8]) -> Option<u64> {
    let digits = s.strip_prefix(b"0x").or_else(|| s.strip_prefix(b"0X")).unwrap_or(s);
    // More than 16 digits would overflow 64 bits.
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    digits.iter().try_fold(0u64, |v, &b| Some(v << 4 | u64::from((b as char).to_digit(16)?)))
}

fn parse_size(digits: &[u8]) -> Option<u16> {
    if digits.is_empty() || digits.len() > 5 {
        return None;
    }
    let v = digits.iter().fold(0u32, |v, &d| v * 10 + u32::from(d - b'0'));
    u16::try_from(v).ok().filter(|&s| s > 0)
}

/// Reads a Lackey trace from a file, or from stdin when the path is `-`. Compressed input
/// (xz, gzip, zstd, by magic) is decompressed on the fly.
pub struct LackeyReader {
    path: PathBuf,
    input: Input,
    compression: Compression,
    file_size: Option<u64>,
    line: Vec<u8>,
    line_no: u64,
    /// Whether any record was read.
    any_record: bool,
    /// The first ignored line that is not Valgrind's own output, and its number.
    foreign: Option<(u64, String)>,
    /// The store half of an `M` line that did not fit in the previous batch.
    pending: Option<MemRef>,
}

impl LackeyReader {
    /// Opens `path` (`-` for stdin).
    pub fn open(path: impl AsRef<Path>) -> Result<LackeyReader> {
        let (input, compression, file_size) = open_input(path.as_ref())?;
        Ok(LackeyReader {
            path: display_path(path.as_ref()),
            input,
            compression,
            file_size,
            line: Vec::with_capacity(128),
            line_no: 0,
            any_record: false,
            foreign: None,
            pending: None,
        })
    }

    /// Reads lines until one holds a record; `None` at the end of input.
    fn next_record(&mut self) -> Result<Option<Record>> {
        loop {
            if !self.read_line()? {
                return self.end();
            }
            let mut body = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
            if self.line_no == 1 {
                body = body.strip_prefix(b"\xef\xbb\xbf").unwrap_or(body);
            }
            match parse_line(body) {
                Ok(None) => {
                    let valgrind = body.starts_with(b"==") || body.starts_with(b"--") || body.iter().all(|&b| is_space(b));
                    if !valgrind && self.foreign.is_none() {
                        self.foreign = Some((self.line_no, String::from_utf8_lossy(body).chars().take(40).collect()));
                    }
                }
                // Valgrind ends every line: a record without its newline is the last line of a
                // trace cut short or still being written, and may be cut inside its size or
                // address (`,16` read as `,1`), which would silently be another reference.
                Ok(Some(_)) if !self.line.ends_with(b"\n") => {
                    let message = "the input ends inside this record (no newline after it): the trace was cut or is still being written; remove the line, or end it with a newline if it is whole".to_string();
                    return Err(Error::AtLine { path: self.path.clone(), line: self.line_no, message });
                }
                Ok(Some(r)) => {
                    self.any_record = true;
                    return Ok(Some(r));
                }
                Err(message) => return Err(Error::AtLine { path: self.path.clone(), line: self.line_no, message }),
            }
        }
    }
}

impl LackeyReader {
    /// Reads the next line into `self.line` and counts it; false at the end of input. At most
    /// [`MAX_LINE`] bytes and a newline are read: a longer line is an error naming it.
    fn read_line(&mut self) -> Result<bool> {
        self.line.clear();
        let limit = MAX_LINE as u64 + 1;
        let mut capped = (&mut self.input).take(limit);
        let n = capped.read_until(b'\n', &mut self.line).map_err(|e| Error::io(&self.path, e))?;
        if n == 0 {
            return Ok(false);
        }
        self.line_no += 1;
        if n as u64 == limit && !self.line.ends_with(b"\n") {
            let message = format!("line longer than {} KiB, the most a Lackey line may hold: not a Lackey text trace", MAX_LINE >> 10);
            return Err(Error::AtLine { path: self.path.clone(), line: self.line_no, message });
        }
        Ok(true)
    }

    /// The end of input: an error when the file had text but no record, and some of it was
    /// not Valgrind's.
    fn end(&mut self) -> Result<Option<Record>> {
        match self.foreign.take().filter(|_| !self.any_record) {
            Some((line, text)) => Err(Error::AtLine {
                path: self.path.clone(),
                line,
                message: format!("no Lackey record (I, L, S or M line) in the file, and `{text}` is not Valgrind output: this is not a Lackey trace"),
            }),
            None => Ok(None),
        }
    }
}

impl RefSource for LackeyReader {
    fn fill(&mut self, batch: &mut Batch, max: usize) -> Result<usize> {
        let mut got = 0;
        if max > 0 {
            if let Some(store) = self.pending.take() {
                batch.refs.push(store);
                got += 1;
            }
        }
        while got < max {
            let Some(r) = self.next_record()? else { break };
            let (addr, size) = (r.addr, r.size);
            match r.letter {
                b'I' => {
                    batch.refs.push(MemRef::ifetch(addr, size));
                    batch.instructions += 1;
                }
                b'L' => batch.refs.push(MemRef::load(addr, size)),
                b'S' => batch.refs.push(MemRef::store(addr, size)),
                _ => {
                    // Modify: the load now, the store now or in the next batch if full.
                    batch.refs.push(MemRef::load(addr, size));
                    if got + 1 < max {
                        batch.refs.push(MemRef::store(addr, size));
                        got += 1;
                    } else {
                        self.pending = Some(MemRef::store(addr, size));
                    }
                }
            }
            got += 1;
        }
        Ok(got)
    }

    fn identity(&self) -> serde_json::Value {
        file_identity("lackey", &self.path, self.file_size, self.compression)
    }
    /// One instruction per fetch.
    fn counts_instructions(&self) -> bool {
        true
    }
}

/// Writes references as Lackey lines, one per reference (`I` for fetches; loads and stores
/// are never merged into `M`). Lackey has no address spaces, no instruction counts other than
/// one per `I`, and no zero sizes: a nonzero ASID, a zero size or a reference running past
/// the top of the address space (which the reader rejects) is an error naming the reference's
/// index. Output is compressed when the path ends in `.xz`, `.gz` or `.zst`.
pub struct LackeyWriter {
    out: AtomicOutput,
    buf: Vec<u8>,
    written: u64,
}

impl LackeyWriter {
    /// Starts writing `path` (atomically: nothing appears there before `finish`).
    pub fn create(path: impl AsRef<Path>) -> Result<LackeyWriter> {
        Ok(LackeyWriter { out: AtomicOutput::create(path.as_ref())?, buf: Vec::with_capacity(1 << 16), written: 0 })
    }

    fn reject(&self, what: &str) -> Error {
        Error::Config {
            path: self.out.path().display().to_string(),
            message: format!("reference {}: {what} cannot be written in Lackey format", self.written),
        }
    }

    /// Appends one reference.
    pub fn write(&mut self, r: &MemRef) -> Result<()> {
        if r.asid != 0 {
            return Err(self.reject(&format!("ASID {}", r.asid)));
        }
        if r.size == 0 {
            return Err(self.reject("size 0"));
        }
        if past_top(r.vaddr, r.size) {
            return Err(self.reject("bytes past the top of the 64-bit address space"));
        }
        self.buf.extend_from_slice(match r.kind {
            AccessKind::IFetch => b"I  ",
            AccessKind::Load => b" L ",
            AccessKind::Store => b" S ",
        });
        push_hex(&mut self.buf, r.vaddr);
        self.buf.push(b',');
        self.buf.extend_from_slice(r.size.to_string().as_bytes());
        self.buf.push(b'\n');
        self.written += 1;
        if self.buf.len() >= 1 << 16 {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }
}

/// Appends `v` in lowercase hex, at least 8 digits as Lackey prints it.
fn push_hex(out: &mut Vec<u8>, v: u64) {
    let digits = (16 - (v.leading_zeros() / 4) as usize).max(8);
    for i in (0..digits).rev() {
        out.push(b"0123456789abcdef"[((v >> (i * 4)) & 0xf) as usize]);
    }
}

impl TraceWriter for LackeyWriter {
    fn write(&mut self, r: &MemRef, _instr_delta: u64) -> Result<()> {
        LackeyWriter::write(self, r)
    }

    fn finish(mut self: Box<Self>) -> Result<()> {
        self.out.write_all(&self.buf)?;
        self.out.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(letter: u8, addr: u64, size: u16) -> Option<Record> {
        Some(Record { letter, addr, size })
    }

    #[test]
    fn parses_real_lackey_lines() {
        assert_eq!(parse_line(b"I  0400d7d4,8"), Ok(rec(b'I', 0x400d7d4, 8)));
        assert_eq!(parse_line(b" L 04222cac,8\r"), Ok(rec(b'L', 0x4222cac, 8)));
        assert_eq!(parse_line(b" M 0x7ff000398,4  "), Ok(rec(b'M', 0x7ff000398, 4)));
        assert_eq!(parse_line(b" S fffffffffffffff8,8"), Ok(rec(b'S', u64::MAX - 7, 8)));
        assert_eq!(parse_line(b"==12345== Lackey, an example Valgrind tool"), Ok(None));
        assert_eq!(parse_line(b"   "), Ok(None));
        assert_eq!(parse_line(b""), Ok(None));
    }

    #[test]
    fn binary_lines_are_not_banners() {
        assert!(parse_line(b"\x7fELF\x02\x01\x01\x00").is_err());
    }

    #[test]
    fn rejects_malformed_records() {
        for bad in [
            &b" X 1000,4"[..],
            b" L zz,4",
            b" L 1000",
            b" L 1000,",
            b" L 1000,0",
            b" L 1000,65536",
            b"I 1000,4x",
            b" L 11112222333344445,4",
            b" L fffffffffffffffc,8",
            b"I",
            b"  Load 1000,4",
        ] {
            assert!(parse_line(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let hex = "the address is not valid hex (1 to 16 hex digits, optionally after 0x)";
        for (bad, why) in [
            (&b" L 0422zcac,8"[..], hex),
            (b" L 0x,8", hex),
            (b" L 11112222333344445,4", hex),
            (b" L ,8", "missing address"),
            (b" L 1000 8", "expected ',' and a size after the address"),
            (b" L fffffffffffffffc,8", "the reference runs past the top of the 64-bit address space"),
        ] {
            assert_eq!(parse_line(bad), Err(why.to_string()), "{}", String::from_utf8_lossy(bad));
        }
    }

    /// What reading all of `data`, written to a file named `name`, gives: the references,
    /// or the line and message of the error.
    fn read_file(name: &str, data: &[u8]) -> std::result::Result<usize, (u64, String)> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, data).unwrap();
        let mut reader = LackeyReader::open(&path).unwrap();
        match crate::source::collect(&mut reader) {
            Ok((refs, _)) => Ok(refs.len()),
            Err(Error::AtLine { path: p, line, message }) if p == path => Err((line, message)),
            Err(e) => panic!("unexpected error: {e}"),
        }
    }

    #[test]
    fn lines_up_to_the_cap_are_read() {
        let banner = format!("=={}\n", "x".repeat(MAX_LINE - 2));
        assert_eq!(read_file("t.lackey", format!("{banner}I  0400000,4\n").as_bytes()), Ok(1));
    }

    #[test]
    fn a_line_past_the_cap_is_an_error_naming_it() {
        let long = format!("I  0400000,4\n=={}\n L 1000,8\n", "x".repeat(MAX_LINE - 1));
        let (line, message) = read_file("t.lackey", long.as_bytes()).unwrap_err();
        assert_eq!(line, 2);
        assert!(message.contains("line longer than 1024 KiB"), "{message}");
    }

    #[test]
    fn a_compressed_line_without_newline_is_not_buffered_whole() {
        // 256 MiB of `A` and no newline, 8 KiB compressed: read whole, it would take 256 MiB
        // (the fuzzer's 9 GiB took the process down).
        let data = zstd::stream::encode_all(std::io::repeat(b'A').take(256 << 20), 19).unwrap();
        let (line, message) = read_file("long.lackey.zst", &data).unwrap_err();
        assert_eq!(line, 1);
        assert!(message.contains("line longer than"), "{message}");
    }

    #[test]
    fn hex_output_is_padded_like_lackey() {
        let mut v = Vec::new();
        push_hex(&mut v, 0x1234);
        assert_eq!(v, b"00001234");
        v.clear();
        push_hex(&mut v, u64::MAX);
        assert_eq!(v, b"ffffffffffffffff");
    }
}
