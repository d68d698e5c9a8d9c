//! A real GPU program's Accel-Sim trace ([`crate::trace::accelsim`]) as a GPU application.
//!
//! Each kernel's file is one launch. Its warps are the file's (thread block, warp) pairs in
//! file order, so the machine, admitting warps in index order, takes thread blocks round
//! robin over its SMs. A warp's steps are its global accesses, each with the warp's
//! non-global instructions since its previous one as `compute`, and a last step issuing the
//! instructions after its last access. A step's requests are the distinct 128-byte lines its
//! lanes touch (a lane's bytes across a line boundary touch both) in order of first lane.
//!
//! The whole trace is read when the application is built and kept in memory: 16 bytes per
//! global warp instruction, 8 per request and 16 per warp; other instructions are counts.
//!
//! Allocations: the trace names only the copies to the GPU (`MemcpyHtoD`), not the buffers a
//! program allocates and never copies to, so the application allocates, before its first
//! launch, every maximal run of 2 MiB-aligned chunks that a copy or a request touches, and
//! frees them at exit. CUDA's driver reserves virtual memory in 2 MiB chunks, so a chunk a
//! program touches lies within its allocations; the footprint is at most the bytes touched
//! rounded out to whole chunks.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::grid::Steps;
use crate::gpu::kernel::{Kernel, MemEvent, WarpInstr};
use crate::trace::accelsim::{lane_segments, Event, KernelFile, KernelList, KERNEL_LIST};
use crate::{Error, Result};

/// Bytes of the virtual-memory chunks allocations are made of (CUDA's driver's).
const CHUNK: u64 = 2 << 20;

/// A traced application to run: its trace, its name in results and what it allocates.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TraceSpec {
    /// The trace: a directory holding `kernelslist.g`, that file, or one kernel's file.
    pub path: PathBuf,
    /// The application's name in results.
    pub name: String,
    /// Bytes it allocates (its footprint).
    pub bytes: u64,
}

impl TraceSpec {
    /// Reads the whole trace at `path`, checking every line, to learn its footprint; the
    /// name is `name` or, without one, the trace directory's.
    pub fn open(path: &Path, name: Option<String>) -> Result<TraceSpec> {
        let bytes = Traced::load(path, String::new())?.footprint();
        Ok(TraceSpec { path: path.to_path_buf(), name: name.unwrap_or_else(|| default_name(path)), bytes })
    }

    /// Builds the application, reading the trace again.
    pub fn build(&self) -> Result<Traced> {
        Traced::load(&self.path, self.name.clone())
    }
}

/// The name of the trace directory at `path` (the parent of a `kernelslist.g`).
fn default_name(path: &Path) -> String {
    let dir = if path.file_name().is_some_and(|n| n == KERNEL_LIST) { path.parent() } else { Some(path) };
    dir.and_then(Path::file_name).map_or_else(|| "trace".to_string(), |n| n.to_string_lossy().into_owned())
}

/// Where one warp's steps are in its launch.
#[derive(Clone, Copy, Debug)]
struct WarpSteps {
    /// Its first step in the launch's steps (the next warp's first ends them).
    first: usize,
    /// Non-global instructions after its last global access, which its exit issues.
    exit: u32,
}

/// One kernel's file, read.
#[derive(Debug, Default)]
struct Launch {
    steps: Steps,
    warps: Vec<WarpSteps>,
}

impl Launch {
    /// Reads the kernel's file at `file`.
    fn read(file: &Path) -> Result<Launch> {
        let mut kernel = KernelFile::open(file)?;
        let mut launch = Launch::default();
        while let Some(event) = kernel.next_event()? {
            match event {
                Event::Warp => {
                    launch.end_warp();
                    launch.warps.push(WarpSteps { first: launch.steps.len(), exit: 0 });
                }
                // An access with no active lane makes no request: it counts as compute.
                Event::Global { kind, width, lanes } if !lanes.is_empty() => launch.steps.access(kind, lane_segments(lanes, width).map(|(first, _)| first)),
                Event::Global { .. } | Event::Other => launch.steps.compute(1),
            }
        }
        launch.end_warp();
        if u32::try_from(launch.steps.lines().len()).is_err() {
            let message = "a kernel of more than 2^32 requests is too large to simulate";
            return Err(Error::io(file, std::io::Error::new(std::io::ErrorKind::InvalidData, message)));
        }
        Ok(launch)
    }

    /// Gives the instructions after the last warp's last access to its exit.
    fn end_warp(&mut self) {
        if let Some(warp) = self.warps.last_mut() {
            warp.exit = self.steps.take_pending();
        }
    }

    /// One past the last step of warp `warp`.
    fn end(&self, warp: usize) -> usize {
        self.warps.get(warp + 1).map_or(self.steps.len(), |next| next.first)
    }
}

/// A traced application, read into memory, driven with one cursor per warp of the current
/// launch.
#[derive(Debug)]
pub struct Traced {
    name: String,
    launches: Vec<Launch>,
    /// The allocations before the first launch, then the frees at exit.
    allocs: Vec<MemEvent>,
    frees: Vec<MemEvent>,
    bytes: u64,
    /// The launch `cursors` are of.
    launch: usize,
    /// Per warp, its next step (one past its last step: its exit; beyond: exited).
    cursors: Vec<usize>,
}

impl Traced {
    /// Reads the trace at `path` (see the module documentation).
    fn load(path: &Path, name: String) -> Result<Traced> {
        let list = KernelList::open(path)?;
        if list.files.is_empty() {
            return Err(Error::io(path, std::io::Error::new(std::io::ErrorKind::InvalidData, "the trace lists no kernel")));
        }
        let launches = list.files.iter().map(|file| Launch::read(file)).collect::<Result<Vec<_>>>()?;
        let mut chunks: BTreeSet<(u64, u64)> = launches.iter().flat_map(|l| l.steps.lines()).map(|&line| (line / CHUNK, line / CHUNK)).collect();
        chunks.extend(list.copies.iter().filter(|&&(_, bytes)| bytes > 0).map(|&(base, bytes)| (base / CHUNK, base.saturating_add(bytes - 1) / CHUNK)));
        let ranges: Vec<(u64, u64)> = runs(chunks).into_iter().map(|(first, last)| (first * CHUNK, (last - first + 1) * CHUNK)).collect();
        let allocs = ranges.iter().map(|&(base, bytes)| MemEvent::Alloc { base, bytes }).collect();
        let frees = ranges.iter().map(|&(base, bytes)| MemEvent::Free { base, bytes }).collect();
        let bytes = ranges.iter().map(|&(_, bytes)| bytes).sum();
        Ok(Traced { name, launches, allocs, frees, bytes, launch: usize::MAX, cursors: Vec::new() })
    }

    /// Starts every warp of `launch` at its first step when the machine moves to it.
    fn enter(&mut self, launch: usize) {
        if self.launch != launch {
            self.launch = launch;
            self.cursors = self.launches[launch].warps.iter().map(|w| w.first).collect();
        }
    }
}

/// The maximal runs of consecutive chunks covered by the inclusive ranges `chunks`.
fn runs(chunks: BTreeSet<(u64, u64)>) -> Vec<(u64, u64)> {
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for (first, last) in chunks {
        match runs.last_mut() {
            Some(run) if first <= run.1.saturating_add(1) => run.1 = run.1.max(last),
            _ => runs.push((first, last)),
        }
    }
    runs
}

impl Kernel for Traced {
    fn name(&self) -> &str {
        &self.name
    }

    /// Everything is allocated before the first launch and freed at exit.
    fn events(&self, launch: usize) -> &[MemEvent] {
        match launch {
            0 => &self.allocs,
            _ if launch == self.launches.len() => &self.frees,
            _ => &[],
        }
    }

    fn launches(&self) -> usize {
        self.launches.len()
    }

    fn warps(&self, launch: usize) -> usize {
        self.launches[launch].warps.len()
    }

    fn next(&mut self, launch: usize, warp: usize, out: &mut WarpInstr) -> bool {
        self.enter(launch);
        let launch = &self.launches[launch];
        let end = launch.end(warp);
        let at = &mut self.cursors[warp];
        let exit = launch.warps[warp].exit;
        if *at < end {
            launch.steps.write(*at, out);
        } else if *at == end && exit > 0 {
            out.compute = exit;
        } else {
            return false;
        }
        *at += 1;
        true
    }

    fn footprint(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests;
