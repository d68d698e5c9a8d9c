//! Reference sources: anything that produces a stream of [`MemRef`](crate::MemRef)s in batches.
//!
//! A source is called once per batch (tens of thousands of references), never once per
//! reference, so dynamic dispatch through `Box<dyn RefSource>` costs nothing measurable.

pub mod background;
pub mod mix;
pub mod synthetic;
pub(crate) mod zipf;

use crate::memref::Batch;
use crate::trace::TraceFormat;
use crate::Result;
use serde::Serialize;
use std::path::PathBuf;

/// Where a workload's references come from, validated.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum SourceSpec {
    /// A built-in synthetic stream.
    Synthetic(synthetic::SyntheticSpec),
    /// A built-in workload (`crate::workload`).
    Builtin(crate::workload::BuiltinSpec),
    /// A trace file, in a given or detected format.
    Trace {
        /// The file.
        path: PathBuf,
        /// Its format; detected from the content when `None`.
        format: Option<TraceFormat>,
    },
    /// Several workloads taking turns, each in its own address space ([`mix`]).
    Mix {
        /// References per turn.
        quantum: u64,
        /// The workloads, in rotation order.
        parts: Vec<mix::MixPart>,
    },
    /// GPU applications running together on `gpu` machines ([`crate::gpu`]): not a
    /// reference stream.
    Gpu {
        /// The applications, in mix order.
        apps: Vec<crate::gpu::kernels::AppSpec>,
    },
}

/// A named workload: a source with an optional prefix skipped and a reference limit.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorkloadSpec {
    /// Name in results.
    pub name: String,
    /// The source.
    pub source: SourceSpec,
    /// References dropped from the start.
    pub skip: u64,
    /// At most this many references are simulated.
    pub limit: Option<u64>,
    /// Names (or `prefix*` patterns) of the machines this workload runs on; all when `None`.
    pub machines: Option<Vec<String>>,
}

impl WorkloadSpec {
    /// True when this workload runs on the machine called `machine`.
    pub fn runs_on(&self, machine: &str) -> bool {
        self.machines.as_ref().is_none_or(|patterns| {
            patterns.iter().any(|p| match p.strip_suffix('*') {
                Some(prefix) => machine.starts_with(prefix),
                None => machine == p,
            })
        })
    }

    /// Opens the source, applying `skip` and `limit`.
    pub fn open(&self) -> Result<Box<dyn RefSource>> {
        let inner: Box<dyn RefSource> = match &self.source {
            SourceSpec::Synthetic(spec) => Box::new(synthetic::Synthetic::new(spec.clone())?),
            SourceSpec::Trace { path, format } => crate::trace::open(path, *format)?,
            SourceSpec::Builtin(spec) => Box::new(spec.open()?),
            SourceSpec::Mix { quantum, parts } => Box::new(mix::Mix::open(parts, *quantum)?),
            SourceSpec::Gpu { .. } => {
                return Err(crate::Error::Simulation(format!("workload `{}` is a `gpu` workload: it runs on `gpu` machines, not as a reference stream", self.name)))
            }
        };
        if self.skip == 0 && self.limit.is_none() {
            return Ok(inner);
        }
        Ok(Box::new(Limited::new(inner, self.skip, self.limit)))
    }
}

/// A producer of memory references.
pub trait RefSource: Send {
    /// Appends at most `max` references to `batch.refs` and adds the instructions they span to
    /// `batch.instructions`. Returns how many references were appended; 0 means the stream has
    /// ended. Sources stop exactly at `max`, so a reference limit is exact. Address-space
    /// events met on the way are appended at their places ([`Batch::push_event`]); the last
    /// fill, which returns 0, may still append events that come after the last reference,
    /// and consumers apply them.
    fn fill(&mut self, batch: &mut Batch, max: usize) -> Result<usize>;

    /// A description of the input for result files (kind, path or parameters, size).
    fn identity(&self) -> serde_json::Value;

    /// Total number of references, when known in advance (used for progress and ETA).
    fn len_hint(&self) -> Option<u64> {
        None
    }

    /// True when the source counts the instructions its references span (in
    /// `Batch::instructions`), even where a batch spans none.
    fn counts_instructions(&self) -> bool {
        false
    }
}

impl<S: RefSource + ?Sized> RefSource for Box<S> {
    fn fill(&mut self, batch: &mut Batch, max: usize) -> Result<usize> {
        (**self).fill(batch, max)
    }
    fn identity(&self) -> serde_json::Value {
        (**self).identity()
    }
    fn len_hint(&self) -> Option<u64> {
        (**self).len_hint()
    }
    fn counts_instructions(&self) -> bool {
        (**self).counts_instructions()
    }
}

/// Wraps a source so that it ends after `skip` references are dropped and `limit` are produced.
///
/// The address-space events among the skipped references are not dropped: the mappings a
/// skipped warm-up made still hold after it. They come at the start of the first batch after
/// the skip, in order (so they are held in memory until then).
pub struct Limited<S> {
    inner: S,
    skip: u64,
    remaining: u64,
}

impl<S: RefSource> Limited<S> {
    /// Skips the first `skip` references of `inner`, then produces at most `limit`.
    pub fn new(inner: S, skip: u64, limit: Option<u64>) -> Limited<S> {
        Limited { inner, skip, remaining: limit.unwrap_or(u64::MAX) }
    }

    /// Drops the first `skip` references, appending the events among them to `batch`: a
    /// run that skips a warm-up still sees the mappings made in it.
    fn skip_prefix(&mut self, batch: &mut Batch) -> Result<()> {
        let mut scratch = Batch::with_capacity(1 << 14);
        while self.skip > 0 {
            scratch.clear();
            let want = self.skip.min(1 << 14) as usize;
            let got = self.inner.fill(&mut scratch, want)?;
            for &(_, event) in &scratch.events {
                batch.push_event(event);
            }
            if got == 0 {
                break;
            }
            self.skip -= got as u64;
        }
        Ok(())
    }
}

impl<S: RefSource> RefSource for Limited<S> {
    fn fill(&mut self, batch: &mut Batch, max: usize) -> Result<usize> {
        if self.skip > 0 {
            self.skip_prefix(batch)?;
        }
        let want = (max as u64).min(self.remaining) as usize;
        if want == 0 {
            return Ok(0);
        }
        let got = self.inner.fill(batch, want)?;
        self.remaining -= got as u64;
        Ok(got)
    }

    fn identity(&self) -> serde_json::Value {
        self.inner.identity()
    }

    fn len_hint(&self) -> Option<u64> {
        let inner = self.inner.len_hint().map(|n| n.saturating_sub(self.skip));
        match (inner, self.remaining) {
            (Some(n), r) => Some(n.min(r)),
            (None, u64::MAX) => None,
            (None, r) => Some(r),
        }
    }

    fn counts_instructions(&self) -> bool {
        self.inner.counts_instructions()
    }
}

/// Wraps a source so that reading fails with [`crate::Error::Interrupted`] once `flag` is
/// set (by a Ctrl-C handler), for commands that stop rather than keep a partial result.
pub struct Interruptible<'a, S: ?Sized> {
    inner: &'a mut S,
    flag: &'a std::sync::atomic::AtomicBool,
}

impl<'a, S: RefSource + ?Sized> Interruptible<'a, S> {
    /// Reads `inner` until `flag` is set.
    pub fn new(inner: &'a mut S, flag: &'a std::sync::atomic::AtomicBool) -> Interruptible<'a, S> {
        Interruptible { inner, flag }
    }
}

impl<S: RefSource + ?Sized> RefSource for Interruptible<'_, S> {
    fn fill(&mut self, batch: &mut Batch, max: usize) -> Result<usize> {
        if self.flag.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(crate::Error::Interrupted);
        }
        self.inner.fill(batch, max)
    }

    fn identity(&self) -> serde_json::Value {
        self.inner.identity()
    }

    fn len_hint(&self) -> Option<u64> {
        self.inner.len_hint()
    }

    fn counts_instructions(&self) -> bool {
        self.inner.counts_instructions()
    }
}

/// A source over a fixed vector of references (for tests and small tools).
pub struct VecSource {
    refs: Vec<crate::MemRef>,
    pos: usize,
}

impl VecSource {
    /// A source that yields `refs` in order and counts no instructions.
    pub fn new(refs: Vec<crate::MemRef>) -> VecSource {
        VecSource { refs, pos: 0 }
    }
}

impl RefSource for VecSource {
    fn fill(&mut self, batch: &mut Batch, max: usize) -> Result<usize> {
        let end = (self.pos + max).min(self.refs.len());
        batch.refs.extend_from_slice(&self.refs[self.pos..end]);
        let n = end - self.pos;
        self.pos = end;
        Ok(n)
    }

    fn identity(&self) -> serde_json::Value {
        serde_json::json!({ "kind": "vec", "refs": self.refs.len() })
    }

    fn len_hint(&self) -> Option<u64> {
        Some(self.refs.len() as u64)
    }
}

/// Reads a whole source into a vector (for tests and conversions of small inputs).
pub fn collect(source: &mut dyn RefSource) -> Result<(Vec<crate::MemRef>, u64)> {
    let mut batch = Batch::with_capacity(1 << 14);
    let mut all = Vec::new();
    let mut instructions = 0;
    loop {
        batch.clear();
        if source.fill(&mut batch, 1 << 14)? == 0 {
            return Ok((all, instructions));
        }
        all.extend_from_slice(&batch.refs);
        instructions += batch.instructions;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memref::AddressSpaceEvent;
    use crate::MemRef;

    #[test]
    fn interruptible_stops_once_flagged() {
        let flag = std::sync::atomic::AtomicBool::new(false);
        let mut inner = VecSource::new(vec![MemRef::load(0, 8); 10]);
        let mut src = Interruptible::new(&mut inner, &flag);
        let mut batch = Batch::default();
        assert_eq!(src.fill(&mut batch, 4).unwrap(), 4);
        flag.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(matches!(src.fill(&mut batch, 4), Err(crate::Error::Interrupted)));
    }

    /// Yields `refs` with a map event before each reference whose address is a multiple of
    /// 64.
    struct Mapping(Vec<MemRef>);

    impl RefSource for Mapping {
        fn fill(&mut self, batch: &mut Batch, max: usize) -> Result<usize> {
            let n = max.min(self.0.len());
            for r in self.0.drain(..n) {
                if r.vaddr % 64 == 0 {
                    batch.push_event(AddressSpaceEvent::map(r.vaddr, 64));
                }
                batch.refs.push(r);
            }
            Ok(n)
        }

        fn identity(&self) -> serde_json::Value {
            serde_json::Value::Null
        }
    }

    #[test]
    fn limited_hands_on_the_events_it_skips() {
        let refs: Vec<MemRef> = (0..40).map(|i| MemRef::load(i * 16, 8)).collect();
        let mut src = Limited::new(Mapping(refs.clone()), 10, Some(8));
        let mut batch = Batch::default();
        assert_eq!(src.fill(&mut batch, 4).unwrap(), 4);
        assert_eq!(batch.refs, refs[10..14]);
        // The maps before references 0, 4 and 8 (skipped), then before 12 at its place.
        let at: Vec<(usize, u64)> = batch.events.iter().map(|&(i, e)| (i, e.start)).collect();
        assert_eq!(at, [(0, 0), (0, 64), (0, 128), (2, 192)]);
        batch.clear();
        assert_eq!(src.fill(&mut batch, 10).unwrap(), 4);
        assert_eq!(batch.events.iter().map(|&(i, e)| (i, e.start)).collect::<Vec<_>>(), [(2, 256)]);
    }

    #[test]
    fn limited_skips_and_limits_exactly() {
        let refs: Vec<MemRef> = (0..100).map(|i| MemRef::load(i * 8, 8)).collect();
        let mut src = Limited::new(VecSource::new(refs.clone()), 10, Some(25));
        assert_eq!(src.len_hint(), Some(25));
        let (got, _) = collect(&mut src).unwrap();
        assert_eq!(got, refs[10..35].to_vec());
    }
}
