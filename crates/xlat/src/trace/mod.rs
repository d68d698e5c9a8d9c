//! Trace files: the native format, Valgrind Lackey text and ChampSim binary traces.
//!
//! [`open`] detects a file's format and returns a [`RefSource`]; [`create_writer`] returns a
//! [`TraceWriter`]; [`convert`] copies one trace into another format (`xlat trace convert`);
//! [`info::info`] summarizes a stream. The native format is specified in
//! `docs/trace-format.md`.

pub mod accelsim;
mod block;
mod blocks;
pub mod champsim;
pub mod info;
mod io;
pub mod lackey;
pub mod native;
mod native_reader;
mod varint;

pub use accelsim::AccelSimReader;
pub use champsim::{ChampSimReader, ChampSimWriter};
pub use info::{info, TraceInfo};
pub use lackey::{LackeyReader, LackeyWriter};
pub use block::{MAX_BLOCK_EVENTS, MAX_BLOCK_RECORDS};
pub use native::NativeWriter;
pub use native_reader::NativeReader;

use crate::memref::{AccessKind, Batch, MemRef};
use crate::source::background::ReadAhead;
use crate::source::RefSource;
use std::sync::atomic::AtomicBool;
use crate::{Error, Result};
use io::Compression;
use std::fmt;
use std::path::Path;

/// The trace formats xlat reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TraceFormat {
    /// xlat's own compressed, indexed format.
    Native,
    /// Valgrind Lackey `--trace-mem=yes` text.
    Lackey,
    /// ChampSim 64-byte binary records, raw or compressed.
    ChampSim,
    /// Accel-Sim's GPU traces (NVBit): a directory with `kernelslist.g` and the kernels'
    /// `.traceg` files; read only.
    AccelSim,
}

impl TraceFormat {
    /// Every format.
    pub const ALL: [TraceFormat; 4] = [TraceFormat::Native, TraceFormat::Lackey, TraceFormat::ChampSim, TraceFormat::AccelSim];

    /// The lower-case name used on the command line and in identities.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Native => "native",
            TraceFormat::Lackey => "lackey",
            TraceFormat::ChampSim => "champsim",
            TraceFormat::AccelSim => "accelsim",
        }
    }

    /// Parses a name as printed by [`TraceFormat::name`].
    pub fn from_name(name: &str) -> Option<TraceFormat> {
        TraceFormat::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The format a file name suggests, ignoring a compression suffix: `.xlat` is native;
    /// `.champsim`, `.champsimtrace`, or a bare `.xz`/`.gz`/`.zst` is ChampSim; `.lackey`,
    /// `.txt` and `.log` are Lackey; `.g` (`kernelslist.g`) and `.traceg` (one kernel) are
    /// Accel-Sim. A compressed `.xlat` name still says native, so that
    /// writing one fails with a clear message (see [`NativeWriter::create`]) rather than
    /// making a ChampSim file.
    pub fn from_extension(path: &Path) -> Option<TraceFormat> {
        let compressed = Compression::from_extension(path) != Compression::None;
        let base = if compressed { Path::new(path.file_stem()?) } else { path };
        match base.extension().and_then(|e| e.to_str()) {
            Some("xlat") => Some(TraceFormat::Native),
            Some("champsim" | "champsimtrace") => Some(TraceFormat::ChampSim),
            Some("lackey" | "txt" | "log") => Some(TraceFormat::Lackey),
            Some("g" | "traceg") => Some(TraceFormat::AccelSim),
            _ if compressed => Some(TraceFormat::ChampSim),
            _ => None,
        }
    }
}

impl serde::Serialize for TraceFormat {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Decides the format of `path` from its content, using the name only when the content does
/// not decide: the native magic (or a prefix of it, for a file cut short) means native; an
/// xz, gzip or zstd magic means its decompressed content is examined; else the extension
/// decides if it names a format; else content with NUL bytes is ChampSim and text is Lackey.
/// An empty file without a telling extension is Lackey (an empty stream). Standard input
/// (`-`), a FIFO or a device cannot be examined without consuming what the reader needs: the
/// extension decides for them, else they are taken as Lackey.
pub fn detect(path: &Path) -> Result<TraceFormat> {
    if path == Path::new("-") {
        return Ok(TraceFormat::Lackey);
    }
    // A FIFO or a device cannot be read twice: what detection read would be lost to the
    // reader, which opens the path again. As for standard input, the name decides, else Lackey.
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if meta.is_dir() {
        if path.join(accelsim::KERNEL_LIST).is_file() {
            return Ok(TraceFormat::AccelSim);
        }
        let message = format!("a directory without {}: the one trace a directory holds is Accel-Sim's", accelsim::KERNEL_LIST);
        return Err(Error::config(path.display().to_string(), message));
    }
    if !meta.is_file() {
        return Ok(TraceFormat::from_extension(path).unwrap_or(TraceFormat::Lackey));
    }
    let mut head = [0u8; 8];
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let n = io::read_full(&mut f, &mut head).map_err(|e| Error::io(path, e))?;
    if n > 0 && native::MAGIC.starts_with(&head[..n]) {
        return Ok(TraceFormat::Native);
    }
    let compressed = Compression::from_magic(&head[..n]) != Compression::None;
    if !compressed {
        if let Some(hint) = TraceFormat::from_extension(path) {
            return Ok(hint);
        }
    }
    let (mut input, _, _) = io::open_input(path)?;
    let mut sample = vec![0u8; 4096];
    let mut got = 0;
    io::read_full_counted(&mut input, &mut sample, &mut got).map_err(|e| {
        let what = if compressed { "decompressing" } else { "reading" };
        let why = format!("{what} the start of the file to tell its format: {e} after {got} bytes (truncated or corrupt?)");
        Error::io(path, std::io::Error::new(e.kind(), why))
    })?;
    if compressed && sample.starts_with(native::MAGIC) {
        // Read as ChampSim it would be garbage; the native reader needs the file itself.
        return Err(Error::config(
            path.display().to_string(),
            "a compressed native trace: decompress it first (native traces are already compressed inside)",
        ));
    }
    Ok(if got == 0 && compressed || sample[..got].contains(&0) { TraceFormat::ChampSim } else { TraceFormat::Lackey })
}

/// `format` if given, else the format [`detect`] finds in `path`.
fn given_or_detected(path: &Path, format: Option<TraceFormat>) -> Result<TraceFormat> {
    format.map_or_else(|| detect(path), Ok)
}

/// Opens a trace for reading, detecting its format unless `format` is given.
pub fn open(path: impl AsRef<Path>, format: Option<TraceFormat>) -> Result<Box<dyn RefSource>> {
    let path = path.as_ref();
    Ok(match given_or_detected(path, format)? {
        TraceFormat::Native if path == Path::new("-") => {
            return Err(Error::config("input", "native traces cannot be read from stdin (the index is at the end)"))
        }
        TraceFormat::Native => Box::new(NativeReader::open(path)?),
        TraceFormat::Lackey => Box::new(LackeyReader::open(path)?),
        TraceFormat::ChampSim => Box::new(ChampSimReader::open(path)?),
        TraceFormat::AccelSim if path == Path::new("-") => {
            return Err(Error::config("input", "Accel-Sim traces cannot be read from stdin (they are a directory of files)"))
        }
        TraceFormat::AccelSim => Box::new(AccelSimReader::open(path)?),
    })
}

/// [`open`] on a helper thread, detecting the format unless `format` is given, so that
/// setting `interrupt` stops a caller waiting for the file to open: a FIFO blocks until a
/// writer comes, detection until it writes. Returns the format and the source, or
/// [`Error::Interrupted`]. Read the source through a [`ReadAhead`] so that reading stops too.
pub fn open_interruptibly(
    path: &Path,
    format: Option<TraceFormat>,
    interrupt: &AtomicBool,
) -> Result<(TraceFormat, Box<dyn RefSource>)> {
    let path = path.to_path_buf();
    let opening = move || {
        let format = given_or_detected(&path, format)?;
        Ok((format, open(&path, Some(format))?))
    };
    crate::source::background::interruptibly(interrupt, opening).unwrap_or(Err(Error::Interrupted))
}

/// A trace being written. Nothing appears at the destination before `finish` succeeds.
pub trait TraceWriter: Send {
    /// Appends one reference; `instr_delta` instructions retired since the previous one.
    /// Formats that derive instruction counts from fetches (Lackey, ChampSim) ignore it.
    fn write(&mut self, r: &MemRef, instr_delta: u64) -> Result<()>;

    /// Appends a batch. The default gives +1 instruction to each instruction fetch, and
    /// drops the batch's address-space events: only the native format holds them.
    fn write_batch(&mut self, batch: &Batch) -> Result<()> {
        batch.refs.iter().try_for_each(|r| self.write(r, u64::from(r.kind == AccessKind::IFetch)))
    }

    /// Completes the file and moves it into place.
    fn finish(self: Box<Self>) -> Result<()>;
}

impl TraceWriter for NativeWriter {
    fn write(&mut self, r: &MemRef, instr_delta: u64) -> Result<()> {
        NativeWriter::write(self, r, instr_delta)
    }
    fn write_batch(&mut self, batch: &Batch) -> Result<()> {
        NativeWriter::write_batch(self, batch)
    }
    fn finish(self: Box<Self>) -> Result<()> {
        NativeWriter::finish(*self)
    }
}

/// Creates a writer of `format` at `path`. Only the native format stores `metadata`.
pub fn create_writer(
    path: impl AsRef<Path>,
    format: TraceFormat,
    metadata: &serde_json::Value,
) -> Result<Box<dyn TraceWriter>> {
    let path = path.as_ref();
    Ok(match format {
        TraceFormat::Native => Box::new(NativeWriter::create(path, metadata)?),
        TraceFormat::Lackey => Box::new(LackeyWriter::create(path)?),
        TraceFormat::ChampSim => Box::new(ChampSimWriter::create(path)?),
        TraceFormat::AccelSim => {
            return Err(Error::config(path.display().to_string(), "xlat reads Accel-Sim traces but does not write them: write native, Lackey or ChampSim"))
        }
    })
}

/// What [`convert`] copied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conversion {
    /// References written.
    pub references: u64,
    /// Address-space events of the input that the output format cannot hold (all but
    /// native), and so left out.
    pub events_dropped: u64,
}

/// Copies the trace at `input` to `output`, detecting the input format and taking the output
/// format from the output's extension (see [`TraceFormat::from_extension`]).
pub fn convert(input: impl AsRef<Path>, output: impl AsRef<Path>) -> Result<Conversion> {
    let output = output.as_ref();
    crate::atomic::check_output(output)?;
    let out_format = TraceFormat::from_extension(output).ok_or_else(|| {
        Error::config(
            output.display().to_string(),
            "cannot tell the output format from the extension (.xlat, .champsim[.xz|.gz], .lackey)",
        )
    })?;
    convert_with(input.as_ref(), None, output, out_format, false, &AtomicBool::new(false))
}

/// [`convert`] with explicit formats. Native to native keeps each reference's instruction
/// count exactly, and the address-space events; other inputs count one instruction per
/// fetch, which every writer keeps. Lackey and ChampSim outputs cannot hold events: they are
/// left out, and counted in [`Conversion::events_dropped`].
/// `lossy` lets a ChampSim output take what it cannot represent exactly (sizes, loads after
/// stores, wide instructions; see [`ChampSimWriter::lossy`]); otherwise those are errors.
/// Setting `interrupt` stops the conversion with [`Error::Interrupted`], leaving no output,
/// even while the input blocks (a FIFO): it is opened and read on a helper thread.
pub fn convert_with(
    input: &Path,
    in_format: Option<TraceFormat>,
    output: &Path,
    out_format: TraceFormat,
    lossy: bool,
    interrupt: &AtomicBool,
) -> Result<Conversion> {
    let (in_format, opened) = open_interruptibly(input, in_format, interrupt)?;
    // A batch only carries a total instruction count; one reference per batch keeps the
    // native format's per-reference counts, which may not follow the one-per-fetch rule
    // (the native writer puts a one-reference batch's count on its reference).
    let step = if in_format == TraceFormat::Native && out_format == TraceFormat::Native { 1 } else { 1 << 16 };
    let mut source = ReadAhead::new(opened, step, interrupt);
    let metadata = serde_json::json!({
        "source": source.identity(),
        "created_by": format!("xlat {} trace convert", crate::VERSION),
    });
    let mut writer: Box<dyn TraceWriter> = match out_format {
        TraceFormat::ChampSim if lossy => Box::new(ChampSimWriter::create(output)?.lossy()),
        _ => create_writer(output, out_format, &metadata)?,
    };
    let mut batch = Batch::with_capacity(step);
    let mut done = Conversion { references: 0, events_dropped: 0 };
    loop {
        batch.clear();
        let n = source.fill(&mut batch, step)?;
        // Written before the end is told: a stream of events alone gives them with its end.
        writer.write_batch(&batch)?;
        if out_format != TraceFormat::Native {
            done.events_dropped += batch.events.len() as u64;
        }
        if n == 0 {
            break;
        }
        done.references += n as u64;
    }
    writer.finish()?;
    Ok(done)
}
