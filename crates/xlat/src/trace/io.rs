//! Files in and out for the trace formats: atomic output (temp file + rename) with optional
//! compression chosen by extension, and input that is decompressed according to its magic bytes.

use crate::{Error, Result};
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};
use crate::atomic::{persist, temp_for};
use tempfile::NamedTempFile;

/// The name used for standard input in paths and error messages.
pub(crate) const STDIN_NAME: &str = "<stdin>";

/// The path to show in messages: `-` means standard input.
pub(crate) fn display_path(path: &Path) -> PathBuf {
    if path == Path::new("-") {
        PathBuf::from(STDIN_NAME)
    } else {
        path.to_path_buf()
    }
}

/// The path to record in result files: absolute, so that results read elsewhere still name
/// the file (the path as written is relative to wherever xlat ran). Standard input stays
/// [`STDIN_NAME`].
pub(crate) fn recorded_path(path: &Path) -> String {
    let path = display_path(path);
    let absolute = if path == Path::new(STDIN_NAME) { path } else { std::path::absolute(&path).unwrap_or(path) };
    absolute.display().to_string()
}

/// Stream compressions recognized on input (by magic) and output (by extension).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Compression {
    None,
    Xz,
    Gzip,
    Zstd,
}

const XZ_MAGIC: &[u8] = &[0xfd, b'7', b'z', b'X', b'Z', 0];
const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];
const ZSTD_MAGIC: &[u8] = &[0x28, 0xb5, 0x2f, 0xfd];

impl Compression {
    /// The compression whose magic starts `head`.
    pub fn from_magic(head: &[u8]) -> Compression {
        if head.starts_with(XZ_MAGIC) {
            Compression::Xz
        } else if head.starts_with(GZIP_MAGIC) {
            Compression::Gzip
        } else if head.starts_with(ZSTD_MAGIC) {
            Compression::Zstd
        } else {
            Compression::None
        }
    }

    /// The compression implied by the extension of `path` (`.xz`, `.gz`, `.zst`).
    pub fn from_extension(path: &Path) -> Compression {
        match path.extension().and_then(|e| e.to_str()) {
            Some("xz") => Compression::Xz,
            Some("gz") => Compression::Gzip,
            Some("zst") => Compression::Zstd,
            _ => Compression::None,
        }
    }
}

/// A readable input, decompressed if its first bytes are a known compression magic.
pub(crate) type Input = BufReader<Box<dyn Read + Send>>;

/// Opens `path` (`-` for stdin) and returns the decompressed stream, its compression, and
/// the size of the file on disk (`None` for stdin).
pub(crate) fn open_input(path: &Path) -> Result<(Input, Compression, Option<u64>)> {
    let shown = display_path(path);
    let (raw, size): (Box<dyn Read + Send>, Option<u64>) = if path == Path::new("-") {
        (Box::new(io::stdin()), None)
    } else {
        let f = File::open(path).map_err(|e| Error::io(&shown, e))?;
        let size = f.metadata().map_err(|e| Error::io(&shown, e))?.len();
        (Box::new(f), Some(size))
    };
    let mut peek = BufReader::with_capacity(1 << 16, raw);
    let head = peek.fill_buf().map_err(|e| Error::io(&shown, e))?;
    let compression = Compression::from_magic(head);
    let inner: Box<dyn Read + Send> = match compression {
        Compression::None => Box::new(peek),
        Compression::Xz => Box::new(liblzma::bufread::XzDecoder::new_multi_decoder(peek)),
        Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(peek)),
        Compression::Zstd => {
            Box::new(zstd::stream::read::Decoder::with_buffer(peek).map_err(|e| Error::io(&shown, e))?)
        }
    };
    Ok((BufReader::with_capacity(1 << 16, inner), compression, size))
}

/// The little-endian `u16` at `at` of `b`.
pub(crate) fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().expect("slice of 2"))
}

/// The little-endian `u32` at `at` of `b`.
pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("slice of 4"))
}

/// The little-endian `u64` at `at` of `b`.
pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("slice of 8"))
}

/// Fills `buf` from `offset` of `file` (named `path` in errors).
pub(crate) fn read_at(file: &mut File, path: &Path, offset: u64, buf: &mut [u8]) -> Result<()> {
    file.seek(io::SeekFrom::Start(offset)).map_err(|e| Error::io(path, e))?;
    file.read_exact(buf).map_err(|e| Error::io(path, e))
}

/// The identity of a streamed (possibly compressed) trace file, for result files.
pub(crate) fn file_identity(format: &str, path: &Path, file_size: Option<u64>, compression: Compression) -> serde_json::Value {
    serde_json::json!({
        "format": format,
        "path": recorded_path(path),
        "file_size": file_size,
        "compression": format!("{compression:?}").to_lowercase(),
    })
}

/// Reads into `buf` until it is full or the input ends; returns the bytes read.
/// Unlike `read_exact`, a short read at the end is reported, not an error, so callers can
/// name the size of a trailing partial record.
pub(crate) fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    read_full_counted(r, buf, &mut got).map(|()| got)
}

/// [`read_full`] counting the bytes read in `*got`, which stays meaningful when an error ends
/// the read: it tells how far into the input the error came.
pub(crate) fn read_full_counted(r: &mut impl Read, buf: &mut [u8], got: &mut usize) -> io::Result<()> {
    while *got < buf.len() {
        match r.read(&mut buf[*got..]) {
            Ok(0) => break,
            Ok(n) => *got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

enum Sink {
    Plain(BufWriter<NamedTempFile>),
    Xz(liblzma::write::XzEncoder<BufWriter<NamedTempFile>>),
    Gzip(flate2::write::GzEncoder<BufWriter<NamedTempFile>>),
    Zstd(zstd::stream::write::Encoder<'static, BufWriter<NamedTempFile>>),
}

/// An output file written to a temporary file in the same directory and renamed into place by
/// [`AtomicOutput::finish`], so an interrupted writer never leaves a half-written trace
/// (dropping it unfinished deletes the temporary file).
pub(crate) struct AtomicOutput {
    path: PathBuf,
    sink: Sink,
}

impl AtomicOutput {
    /// Starts writing `path`, compressed as its extension says.
    pub fn create(path: &Path) -> Result<AtomicOutput> {
        let buf = BufWriter::with_capacity(1 << 16, temp_for(path)?);
        let sink = match Compression::from_extension(path) {
            Compression::None => Sink::Plain(buf),
            Compression::Xz => Sink::Xz(liblzma::write::XzEncoder::new(buf, 6)),
            Compression::Gzip => Sink::Gzip(flate2::write::GzEncoder::new(buf, flate2::Compression::default())),
            Compression::Zstd => Sink::Zstd(zstd::stream::write::Encoder::new(buf, 3).map_err(|e| Error::io(path, e))?),
        };
        Ok(AtomicOutput { path: path.to_path_buf(), sink })
    }

    /// The final path, for error messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// True when the output is written as it is, not compressed.
    pub fn is_plain(&self) -> bool {
        matches!(self.sink, Sink::Plain(_))
    }

    /// Writes all of `data`.
    pub fn write_all(&mut self, data: &[u8]) -> Result<()> {
        let r = match &mut self.sink {
            Sink::Plain(w) => w.write_all(data),
            Sink::Xz(w) => w.write_all(data),
            Sink::Gzip(w) => w.write_all(data),
            Sink::Zstd(w) => w.write_all(data),
        };
        r.map_err(|e| Error::io(&self.path, e))
    }

    /// Ends the compressed stream, flushes, and renames the file into place.
    pub fn finish(self) -> Result<()> {
        let path = self.path;
        let io_err = |e| Error::io(&path, e);
        let buf = match self.sink {
            Sink::Plain(w) => w,
            Sink::Xz(w) => w.finish().map_err(io_err)?,
            Sink::Gzip(w) => w.finish().map_err(io_err)?,
            Sink::Zstd(w) => w.finish().map_err(io_err)?,
        };
        let tmp = buf.into_inner().map_err(|e| Error::io(&path, e.into_error()))?;
        persist(tmp, &path)
    }
}
