//! The `linux` policy: Linux-like reclaim of anonymous memory over a fully associative
//! memory, the kernel's two lists ([`lists`]) with its refault detection ([`workingset`]),
//! keeping `reserve` of memory free as the kernel's watermarks do.

pub mod lists;
pub mod workingset;

pub use lists::{LinuxLists, ReclaimStats};

use super::{resident_limit, EvictionPolicy, PolicySpec, Recency};
use crate::config::raw::{count_or_word, count_or_word_schema};
use crate::os::frames::Frames;
use crate::os::{NoFrame, OsSpec, PlacementSpec};
use crate::types::{Asid, Vpn};
use serde::{Deserialize, Serialize};

/// Default fraction of memory Linux-like reclaim keeps free: the Mosaic paper observed Linux
/// start swapping at about 99.2% utilization (zone watermarks).
pub const DEFAULT_RESERVE: f64 = 0.008;
/// The largest fixed active:inactive ratio (the kernel's rule reaches 100 at 1 TiB).
const MAX_INACTIVE_RATIO: u32 = 1000;

/// The parameters of `linux`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinuxSpec {
    /// Fraction of memory kept free (the zone watermarks): reclaim starts when the rest is
    /// used (default 0.008).
    #[serde(default = "default_reserve")]
    pub reserve: f64,
    /// How long the inactive list is kept against the active list (default `"kernel"`).
    #[serde(default)]
    pub inactive_ratio: InactiveRatio,
    /// Refault detection: a page swapped back in soon after its eviction goes straight to
    /// the active list (see [`workingset`]; default true).
    #[serde(default = "yes")]
    pub workingset: bool,
    /// The kernel's look-twice rule for mapped pages: the fault leaves a page young, and it
    /// is promoted only when found young at two looks in a row (see [`lists`]; default true).
    #[serde(default = "yes")]
    pub look_twice: bool,
}

fn default_reserve() -> f64 {
    DEFAULT_RESERVE
}

fn yes() -> bool {
    true
}

impl Default for LinuxSpec {
    fn default() -> LinuxSpec {
        LinuxSpec { reserve: DEFAULT_RESERVE, inactive_ratio: InactiveRatio::Kernel, workingset: true, look_twice: true }
    }
}

impl PolicySpec for LinuxSpec {
    fn check(&self, placement: &PlacementSpec, path: &str) -> crate::Result<()> {
        super::needs(placement.is_fully_associative(), "linux", "fully associative (random or sequential)", path)?;
        super::check_fraction(self.reserve, path, "reserve")?;
        match self.inactive_ratio {
            InactiveRatio::Fixed(ratio) if !(1..=MAX_INACTIVE_RATIO).contains(&ratio) => Err(crate::Error::config(
                format!("{path}.inactive_ratio"),
                format!("a ratio of {ratio} is outside 1..={MAX_INACTIVE_RATIO} (or \"kernel\")"),
            )),
            _ => Ok(()),
        }
    }

    /// The lists' flags, a byte per frame, and each frame's generation, four.
    fn frame_bytes(&self) -> u64 {
        5
    }
}

/// The active:inactive ratio Linux-like reclaim keeps: the active list's oldest page is
/// demoted while `inactive × ratio < active`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InactiveRatio {
    /// The kernel's `isqrt(10 × GiB on the lists)`, 1 below 1 GiB (`"kernel"` in files).
    #[default]
    Kernel,
    /// A fixed ratio (1: lists of equal length).
    Fixed(u32),
}

/// Written as in configurations: `"kernel"` or the number.
impl Serialize for InactiveRatio {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            InactiveRatio::Kernel => s.serialize_str("kernel"),
            InactiveRatio::Fixed(ratio) => s.serialize_u32(*ratio),
        }
    }
}

/// Read as written: a number, or `"kernel"`.
impl<'de> Deserialize<'de> for InactiveRatio {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<InactiveRatio, D::Error> {
        match count_or_word(d, "ratio", "kernel")? {
            None => Ok(InactiveRatio::Kernel),
            // Out of range ratios are kept for the check to name.
            Some(ratio) => Ok(InactiveRatio::Fixed(u32::try_from(ratio).unwrap_or(u32::MAX))),
        }
    }
}

impl schemars::JsonSchema for InactiveRatio {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "InactiveRatio".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        count_or_word_schema("The active:inactive ratio Linux-like reclaim keeps: a number, or \"kernel\" for the kernel's rule", "kernel")
    }
}

/// The lists, the number of pages kept resident, and the page that just faulted in.
#[derive(Clone, Debug)]
pub struct Linux {
    lists: LinuxLists,
    limit: u64,
    /// Whether every use is reported (`recency = "access"`); else only the first TLB's
    /// walks are (`"fill"`).
    every_use: bool,
    /// Under `recency = "access"`, the frame a fault just filled until the faulting
    /// reference's own use is reported: that use is the fault's, and does not count as a
    /// later reference (see [`lists`]). Under `"fill"` the faulting walk records no use
    /// either, so both modes agree.
    just_faulted: Option<u64>,
}

impl EvictionPolicy for Linux {
    type Spec = LinuxSpec;

    fn new(spec: &LinuxSpec, frames: u64, os: &OsSpec) -> Linux {
        Linux {
            lists: LinuxLists::new(frames, os.page_size.bytes(), spec.inactive_ratio, spec.workingset, spec.look_twice),
            limit: resident_limit(frames, spec.reserve),
            every_use: os.recency == Recency::Access,
            just_faulted: None,
        }
    }

    fn observes_uses(&self) -> bool {
        true
    }

    fn next_victim(&mut self, frames: &Frames, activated: &mut dyn FnMut(u64)) -> Result<Option<u64>, NoFrame> {
        if frames.used() < self.limit {
            return Ok(None);
        }
        self.lists.victim(activated).map(Some).ok_or(NoFrame::Full)
    }

    fn placed(&mut self, _: &Frames, frame: u64, asid: Asid, vpn: Vpn, mapped: bool) {
        self.lists.insert(frame, asid, vpn.0, mapped);
        if mapped && self.every_use {
            self.just_faulted = Some(frame);
        }
    }

    fn referenced(&mut self, frame: u64) {
        if self.just_faulted.take() != Some(frame) {
            self.lists.reference(frame);
        }
    }

    fn mapped_by_fault(&mut self, frame: u64) {
        self.lists.mapped_by_fault(frame);
        if self.every_use {
            self.just_faulted = Some(frame);
        }
    }

    fn unmapped(&mut self, frame: u64) {
        self.lists.unmapped(frame);
    }

    fn evicted(&mut self, _: u64, asid: Asid, vpn: Vpn, _: u64) {
        self.lists.evicted(asid, vpn.0);
    }

    fn freed(&mut self, frame: u64) {
        self.lists.freed(frame);
    }

    fn reclaim_stats(&self) -> Option<ReclaimStats> {
        Some(self.lists.stats())
    }
}
