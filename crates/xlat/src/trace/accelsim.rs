//! Accel-Sim's GPU traces (NVBit tracer, versions 1 to 5): a directory with `kernelslist.g`,
//! which lists the program's copies to the GPU (`MemcpyHtoD,0x<address>,<bytes>`) and its
//! kernels' trace files in launch order, one `kernel-N.traceg` (or `.traceg.xz`) each.
//!
//! A kernel's file starts with `-key = value` lines (its name, grid and block dimensions, the
//! tracer's version, the bases of the shared and local memory windows), then gives each thread
//! block (`#BEGIN_TB`, `thread block = x,y,z`, then per warp `warp = w`, `insts = n` and `n`
//! instruction lines, `#END_TB`). An instruction line is
//!
//! ```text
//! [line] PC mask ndst [Rd…] OPCODE nsrc [Rs…] width [mode addresses…] [imm]
//! ```
//!
//! (before version 3 each line starts with the block's `x y z` and the warp's number; the
//! line number is there when the header's `-enable lineinfo` is 1; version 5 may end with an
//! immediate). `width` is the bytes each active lane accesses, 0 for an instruction that is not
//! a memory access; the addresses, one per active lane of `mask` in lane order, are listed
//! (mode 0), a base and a stride (mode 1), or a base and each further lane's signed distance
//! from the lane before (mode 2).
//!
//! Only global memory is virtual memory the GPU translates: `LDG`, `STG`, `ATOMG`, `RED`,
//! `LDGSTS`, and the generic `LD`, `ST` and `ATOM` whose first active address lies outside the
//! 16 MiB shared and local windows. Each such warp instruction becomes the requests a GPU's
//! coalescer makes of it: one reference per 128-byte segment its lanes touch, from the
//! lowest byte touched in the segment to the highest, in address order (a load, or a store
//! for stores and atomics). Every warp instruction counts one instruction. References come
//! kernel by kernel, thread block by thread block and warp by warp, in the files' order: a
//! sequential view of the program, not a GPU's interleaving of warps.
//!
//! The parsing ([`KernelList`], [`KernelFile::next_event`], [`lane_segments`]) is public:
//! the GPU machine's traced applications (`gpu::kernels::traced`) read traces with it, as
//! warps the machine schedules itself.

use super::io::{display_path, open_input, Input};
use crate::memref::{AccessKind, Batch, MemRef};
use crate::source::RefSource;
use crate::{Error, Result};
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

/// The list of kernels in a trace directory.
pub const KERNEL_LIST: &str = "kernelslist.g";
/// Bytes of a coalesced request.
pub const SEGMENT_BYTES: u64 = 128;
/// Bytes of the shared and of the local memory window (NVBit's).
const WINDOW_BYTES: u64 = 16 << 20;
/// Lanes of a warp.
const LANES: usize = 32;
/// The longest line read: a mode-0 line of 32 addresses and its registers is under 1 KiB.
const MAX_LINE: u64 = 64 << 10;

/// What a warp instruction does to global memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Global {
    Load,
    Store,
    /// A generic load or store: global unless its address lies in a window.
    Generic(AccessKind),
}

/// The global access of `opcode` (its name before the first `.`), if it may make one.
fn global_access(opcode: &str) -> Option<Global> {
    match opcode.split('.').next().unwrap_or(opcode) {
        "LDG" | "LDGSTS" => Some(Global::Load),
        "STG" | "ATOMG" | "RED" => Some(Global::Store),
        "LD" => Some(Global::Generic(AccessKind::Load)),
        "ST" | "ATOM" => Some(Global::Generic(AccessKind::Store)),
        _ => None,
    }
}

/// What a trace's `kernelslist.g` lists: the program's copies to the GPU and its kernels'
/// trace files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelList {
    /// Each `MemcpyHtoD`'s destination and bytes, in program order.
    pub copies: Vec<(u64, u64)>,
    /// The kernels' trace files, in launch order.
    pub files: Vec<PathBuf>,
}

impl KernelList {
    /// The list of the trace at `path`: a directory holding `kernelslist.g`, that file
    /// itself, or one kernel's `.traceg` file (a list of that kernel alone, with no copies).
    pub fn open(path: &Path) -> Result<KernelList> {
        if path.is_dir() {
            KernelList::read(&path.join(KERNEL_LIST))
        } else if path.file_name().is_some_and(|n| n == KERNEL_LIST) {
            KernelList::read(path)
        } else {
            Ok(KernelList { copies: Vec::new(), files: vec![path.to_path_buf()] })
        }
    }

    /// Reads the `kernelslist.g` at `list`.
    fn read(list: &Path) -> Result<KernelList> {
        let text = std::fs::read_to_string(list).map_err(|e| Error::io(list, e))?;
        let dir = list.parent().unwrap_or(Path::new("."));
        let mut kernels = KernelList::default();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            let at = |message: String| Error::AtLine { path: list.to_path_buf(), line: i as u64 + 1, message };
            if line.is_empty() {
                continue;
            }
            if let Some(copy) = line.strip_prefix("MemcpyHtoD,") {
                let mut fields = copy.split(',');
                let (Some(addr), Some(bytes), None) = (fields.next(), fields.next(), fields.next()) else {
                    return Err(at("expected `MemcpyHtoD,0x<address>,<bytes>`".into()));
                };
                let (Some(addr), Ok(bytes)) = (hex(addr), bytes.trim().parse::<u64>()) else {
                    return Err(at(format!("bad copy `{line}`: expected a hex address and a decimal byte count")));
                };
                kernels.copies.push((addr, bytes));
            } else if line.ends_with(".traceg") || line.ends_with(".traceg.xz") {
                kernels.files.push(dir.join(line));
            } else {
                return Err(at(format!("`{line}` is neither a `MemcpyHtoD,…` copy nor a kernel's `.traceg` file")));
            }
        }
        Ok(kernels)
    }
}

/// A hexadecimal number, with or without `0x`.
fn hex(text: &str) -> Option<u64> {
    let text = text.trim();
    u64::from_str_radix(text.strip_prefix("0x").unwrap_or(text), 16).ok()
}

/// What a kernel's header says about its lines and its memory windows.
#[derive(Clone, Copy, Debug, Default)]
struct Header {
    version: u32,
    lineinfo: bool,
    shared_base: u64,
    local_base: u64,
}

impl Header {
    /// Takes one `-key = value` line.
    fn take(&mut self, key: &str, value: &str) -> std::result::Result<(), String> {
        let bad = || format!("bad value `{value}` of `{key}`");
        match key {
            "accelsim tracer version" => self.version = value.parse().map_err(|_| bad())?,
            "enable lineinfo" => self.lineinfo = value.parse::<u32>().map_err(|_| bad())? != 0,
            "shmem base_addr" => self.shared_base = hex(value).ok_or_else(bad)?,
            "local mem base_addr" => self.local_base = hex(value).ok_or_else(bad)?,
            _ => {}
        }
        Ok(())
    }

    /// True when `addr` lies in the shared or local window (none before the header names them).
    fn in_window(&self, addr: u64) -> bool {
        let within = |base: u64| base != 0 && addr.wrapping_sub(base) < WINDOW_BYTES;
        within(self.shared_base) || within(self.local_base)
    }
}

/// The global access of one instruction line, if any: its kind, the bytes each lane
/// touches, and the active lanes' addresses (in `lanes`, which it fills).
fn parse_instruction(line: &str, header: &Header, lanes: &mut Vec<u64>) -> std::result::Result<Option<(AccessKind, u64)>, String> {
    let mut tokens = line.split_ascii_whitespace();
    let mut next = |what: &str| tokens.next().ok_or_else(|| format!("the line ends before its {what}"));
    if header.version < 3 {
        for what in ["block x", "block y", "block z", "warp"] {
            next(what)?.parse::<u32>().map_err(|_| format!("bad {what} (a version {} line starts with the block and the warp)", header.version))?;
        }
    }
    if header.lineinfo {
        next("line number")?;
    }
    hex(next("PC")?).ok_or("bad PC (hex expected)")?;
    let mask = u32::from_str_radix(next("mask")?, 16).map_err(|_| "bad active mask (32-bit hex expected)")?;
    skip_registers(&mut next, "destination")?;
    let opcode = next("opcode")?;
    skip_registers(&mut next, "source")?;
    let width: u64 = next("access width")?.parse().map_err(|_| "bad access width (decimal bytes expected)")?;
    if width == 0 {
        return Ok(None);
    }
    if width > SEGMENT_BYTES {
        return Err(format!("access width {width} above {SEGMENT_BYTES} bytes"));
    }
    let mode = next("address mode")?;
    let active = mask.count_ones() as usize;
    lanes.clear();
    match mode {
        "0" => {
            for _ in 0..active {
                lanes.push(hex(next("lane address")?).ok_or("bad lane address (hex expected)")?);
            }
        }
        "1" | "2" if active > 0 => {
            let mut addr = hex(next("base address")?).ok_or("bad base address (hex expected)")?;
            let stride = if mode == "1" { Some(next("stride")?.parse::<i64>().map_err(|_| "bad stride (signed decimal expected)")?) } else { None };
            lanes.push(addr);
            for _ in 1..active {
                let step = match stride {
                    Some(stride) => stride,
                    None => next("lane delta")?.parse::<i64>().map_err(|_| "bad lane delta (signed decimal expected)")?,
                };
                addr = addr.wrapping_add_signed(step);
                lanes.push(addr);
            }
        }
        "1" | "2" => {}
        other => return Err(format!("unknown address mode `{other}` (0, 1 or 2)")),
    }
    let rest = tokens.count();
    if rest > usize::from(header.version >= 5) {
        return Err(format!("{rest} unexpected fields after the addresses"));
    }
    let kind = match global_access(opcode) {
        Some(Global::Load) => AccessKind::Load,
        Some(Global::Store) => AccessKind::Store,
        Some(Global::Generic(kind)) if lanes.first().is_some_and(|&a| !header.in_window(a)) => kind,
        _ => return Ok(None),
    };
    Ok(Some((kind, width)))
}

/// Skips a register count and its registers.
fn skip_registers<'a>(next: &mut impl FnMut(&str) -> std::result::Result<&'a str, String>, side: &str) -> std::result::Result<(), String> {
    let count: usize = next(&format!("{side} register count"))?.parse().map_err(|_| format!("bad {side} register count"))?;
    if count > 8 {
        return Err(format!("{count} {side} registers (at most 8)"));
    }
    (0..count).try_for_each(|_| next(&format!("{side} register")).map(drop))
}

/// The bytes each lane at `lanes` touches when it accesses `width` bytes, split at 128-byte
/// segment boundaries: `(first, last)` byte pairs in lane order (a lane's bytes may cross
/// into the next segment, which then gets their part).
pub fn lane_segments(lanes: &[u64], width: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
    lanes.iter().flat_map(move |&addr| {
        let last = addr.saturating_add(width.max(1) - 1);
        let mut start = Some(addr);
        std::iter::from_fn(move || {
            let first = start?;
            let segment_end = (first | (SEGMENT_BYTES - 1)).min(last);
            start = (segment_end < last).then(|| segment_end + 1);
            Some((first, segment_end))
        })
    })
}

/// The coalesced requests of lanes at `lanes` each touching `width` bytes: one per
/// 128-byte segment, from the lowest byte touched in it to the highest, in address order.
/// `spans` is scratch space the caller keeps, so that no instruction allocates.
fn coalesce(lanes: &[u64], width: u64, kind: AccessKind, spans: &mut Vec<(u64, u64)>, out: &mut Vec<MemRef>) {
    spans.clear();
    spans.extend(lane_segments(lanes, width));
    spans.sort_unstable();
    let mut i = 0;
    while i < spans.len() {
        let segment = spans[i].0 / SEGMENT_BYTES;
        let (low, mut high) = spans[i];
        while i < spans.len() && spans[i].0 / SEGMENT_BYTES == segment {
            high = high.max(spans[i].1);
            i += 1;
        }
        out.push(MemRef { vaddr: low, asid: 0, size: (high - low + 1) as u16, kind });
    }
}

/// One thing a kernel's file says, in file order ([`KernelFile::next_event`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// The next warp's instructions begin (its `insts = n` line; `n` may be 0): warps come
    /// thread block by thread block, each block's in the file's order.
    Warp,
    /// A warp instruction that makes no global access (shared, local, or not memory).
    Other,
    /// A warp instruction's global access: load or store, the bytes each active lane
    /// touches, and the active lanes' addresses in lane order (none when no lane is active).
    Global {
        /// Load, or store (stores and atomics).
        kind: AccessKind,
        /// Bytes each lane touches (1 to 128).
        width: u64,
        /// The active lanes' addresses.
        lanes: &'a [u64],
    },
}

/// Where the reader is in a kernel's file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// In the header or between thread blocks.
    Outside,
    /// In a thread block, before a warp's `insts = n` or between warps.
    InBlock,
    /// In a warp with this many instruction lines left.
    InWarp(u64),
}

/// One kernel's trace file being read, event by event.
pub struct KernelFile {
    path: PathBuf,
    input: Input,
    line: String,
    line_no: u64,
    header: Header,
    place: Place,
    lanes: Vec<u64>,
}

impl KernelFile {
    /// Opens the kernel's file at `path` (`.traceg`, or compressed `.traceg.xz`).
    pub fn open(path: &Path) -> Result<KernelFile> {
        let (input, _, _) = open_input(path)?;
        let header = Header { version: 4, ..Header::default() };
        Ok(KernelFile { path: display_path(path), input, line: String::new(), line_no: 0, header, place: Place::Outside, lanes: Vec::with_capacity(LANES) })
    }

    fn error(&self, message: impl Into<String>) -> Error {
        Error::AtLine { path: self.path.clone(), line: self.line_no, message: message.into() }
    }

    /// Reads the next line into `self.line`, trimmed of its newline; false at the end.
    fn read_line(&mut self) -> Result<bool> {
        self.line.clear();
        let n = (&mut self.input).take(MAX_LINE + 1).read_line(&mut self.line).map_err(|e| Error::io(&self.path, e))?;
        if n == 0 {
            return Ok(false);
        }
        self.line_no += 1;
        if n as u64 > MAX_LINE {
            return Err(self.error(format!("line longer than {} KiB: not an Accel-Sim trace", MAX_LINE >> 10)));
        }
        let trimmed = self.line.trim_end().len();
        self.line.truncate(trimmed);
        Ok(true)
    }

    /// The file's next warp or warp instruction; `None` at its end. Errors name the file
    /// and line.
    pub fn next_event(&mut self) -> Result<Option<Event<'_>>> {
        loop {
            if !self.read_line()? {
                return match self.place {
                    Place::Outside => Ok(None),
                    Place::InBlock => Err(self.error("the file ends inside a thread block (no #END_TB)")),
                    Place::InWarp(left) => Err(self.error(format!("the file ends with {left} of a warp's instructions missing"))),
                };
            }
            if let Place::InWarp(left) = self.place {
                self.place = if left == 1 { Place::InBlock } else { Place::InWarp(left - 1) };
                return match parse_instruction(&self.line, &self.header, &mut self.lanes) {
                    Ok(Some((kind, width))) => Ok(Some(Event::Global { kind, width, lanes: &self.lanes })),
                    Ok(None) => Ok(Some(Event::Other)),
                    Err(message) => Err(self.error(message)),
                };
            }
            if self.structure_line()? {
                return Ok(Some(Event::Warp));
            }
        }
    }

    /// Takes a line outside a warp's instructions: a header, block or warp line; true when
    /// it begins a warp's instructions.
    fn structure_line(&mut self) -> Result<bool> {
        let line = self.line.trim();
        match self.place {
            _ if line.is_empty() || line.starts_with("#traces format") => {}
            Place::Outside if line == "#BEGIN_TB" => self.place = Place::InBlock,
            Place::Outside => {
                let Some((key, value)) = line.strip_prefix('-').and_then(|l| l.split_once('=')) else {
                    return Err(self.error(format!("expected a `-key = value` header line or #BEGIN_TB, found `{}`", shorten(line))));
                };
                let (key, value) = (key.trim().to_owned(), value.trim().to_owned());
                self.header.take(&key, &value).map_err(|m| self.error(m))?;
            }
            Place::InBlock if line == "#END_TB" => self.place = Place::Outside,
            Place::InBlock => {
                if let Some(count) = line.strip_prefix("insts =") {
                    let count: u64 = count.trim().parse().map_err(|_| self.error(format!("bad instruction count `{}`", shorten(line))))?;
                    if count > 0 {
                        self.place = Place::InWarp(count);
                    }
                    return Ok(true);
                } else if !line.starts_with("thread block =") && !line.starts_with("warp =") {
                    return Err(self.error(format!("expected `thread block =`, `warp =`, `insts =` or #END_TB in a thread block, found `{}`", shorten(line))));
                }
            }
            Place::InWarp(_) => unreachable!("instruction lines are taken before"),
        }
        Ok(false)
    }
}

/// The first 40 characters of `line`, for messages.
fn shorten(line: &str) -> String {
    line.chars().take(40).collect()
}

/// Reads an Accel-Sim trace: a directory holding `kernelslist.g`, that file itself, or one
/// kernel's `.traceg` file (see the module documentation).
pub struct AccelSimReader {
    path: PathBuf,
    files: std::vec::IntoIter<PathBuf>,
    kernel: Option<KernelFile>,
    kernels: u64,
    /// Scratch space of `coalesce`.
    spans: Vec<(u64, u64)>,
    /// Requests of the last instruction not yet delivered, in reverse order.
    pending: Vec<MemRef>,
}

impl AccelSimReader {
    /// Opens the trace at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<AccelSimReader> {
        let path = path.as_ref();
        let files = KernelList::open(path)?.files;
        Ok(AccelSimReader { path: path.to_path_buf(), files: files.into_iter(), kernel: None, kernels: 0, spans: Vec::new(), pending: Vec::new() })
    }

    /// The requests of the next global access into `self.pending`, counting instructions in
    /// `batch`; false at the end of the last kernel.
    fn next_requests(&mut self, batch: &mut Batch) -> Result<bool> {
        loop {
            let kernel = match &mut self.kernel {
                Some(kernel) => kernel,
                None => match self.files.next() {
                    Some(file) => {
                        self.kernels += 1;
                        self.kernel.insert(KernelFile::open(&file)?)
                    }
                    None => return Ok(false),
                },
            };
            match kernel.next_event()? {
                Some(Event::Warp) => {}
                Some(Event::Other) => batch.instructions += 1,
                Some(Event::Global { kind, width, lanes }) => {
                    batch.instructions += 1;
                    coalesce(lanes, width, kind, &mut self.spans, &mut self.pending);
                    self.pending.reverse();
                    return Ok(true);
                }
                None => self.kernel = None,
            }
        }
    }
}

impl RefSource for AccelSimReader {
    fn fill(&mut self, batch: &mut Batch, max: usize) -> Result<usize> {
        let mut got = 0;
        while got < max {
            match self.pending.pop() {
                Some(r) => {
                    batch.refs.push(r);
                    got += 1;
                }
                None if self.next_requests(batch)? => {}
                None => break,
            }
        }
        Ok(got)
    }

    fn identity(&self) -> serde_json::Value {
        serde_json::json!({ "format": "accelsim", "path": super::io::recorded_path(&self.path), "kernels_read": self.kernels })
    }

    /// One instruction per warp instruction.
    fn counts_instructions(&self) -> bool {
        true
    }
}

/// The tests' trace writer is shared with the GPU's traced applications' tests.
#[cfg(test)]
pub(crate) mod tests;
