//! Memory pressure: which page to evict when a new page finds no free frame, and how page
//! recency is observed ([`recency`]).
//!
//! Each policy is one file implementing [`EvictionPolicy`] (what it keeps per page, which
//! page it gives up, which pages placement may treat as free) with a [`PolicySpec`] of its
//! parameters, the table `os.eviction` is written as; one line in the `eviction_policies!`
//! list below registers it, generating the configuration's [`EvictionSpec`] and the OS's
//! dispatch ([`Evictor`]). The OS model (`os/mod.rs`) keeps demand paging, swap and the calls
//! to the policy. Policies (`docs/configuration.md` lists where each applies):
//! - `none` ([`mod@never`]): a fault that finds no frame is an error;
//! - `lru` ([`lru`]): the least recently used page among the faulting page's candidate frames
//!   (all frames for a fully associative memory, so the ideal global LRU);
//! - `linux` ([`linux`]): Linux-like reclaim, active and inactive lists with referenced bits;
//! - `horizon-lru` ([`horizon_lru`], Mosaic pages): ghosts below a horizon;
//! - `iceberg-lru` ([`iceberg_lru`]): global LRU over `(1 - δ)` of memory;
//! - `lazy-iceberg-lru` ([`lazy_iceberg_lru`]): marks the pages Iceberg LRU would evict, and
//!   evicts one when its slot is needed.
//!
//! Metrics and helpers any policy may use: the eviction-age metric ([`age`]), the exact LRU
//! order ([`lru_heap`]), marks of evictable pages ([`evictable`]), accessed-bit scans
//! ([`scan`]).

pub mod age;
pub mod evictable;
pub mod lru_heap;
pub mod recency;
pub mod scan;

pub use horizon_lru::HorizonLruSpec;
pub use iceberg_lru::IcebergLruSpec;
pub use lazy_iceberg_lru::LazyIcebergLruSpec;
pub use linux::{InactiveRatio, LinuxSpec};
pub use lru::LruSpec;
pub use never::NeverSpec;
pub use recency::{Recency, RecencyKind};

use super::frames::Frames;
use super::iceberg::placement::Ghosts;
use super::{NoFrame, OsSpec, PlacementSpec};
use crate::types::{Asid, Vpn};
use crate::config::named::named_models;
use linux::ReclaimStats;

/// The parameters of an eviction policy: the table `os.eviction` is written as, with the
/// policy's defaults for the fields left out.
pub trait PolicySpec: Default {
    /// Checks the parameters, and that the policy works over `placement`; errors name the
    /// field under `path` (the path of `os.eviction`).
    fn check(&self, placement: &PlacementSpec, path: &str) -> crate::Result<()>;

    /// Bytes of host memory per frame the policy keeps beyond the frame table (see
    /// [`Frames::host_bytes`]).
    fn frame_bytes(&self) -> u64 {
        0
    }
}

/// An eviction policy: what it records of the resident pages, and which it gives up.
///
/// The OS calls it at each step of a page's life: [`EvictionPolicy::placed`] when a page
/// takes a frame, [`EvictionPolicy::retimed`] and [`EvictionPolicy::referenced`] when it is
/// used, [`EvictionPolicy::evicted`] when it leaves. Before placing a page in a fully
/// associative or iceberg memory it asks [`EvictionPolicy::next_victim`] until the policy has
/// room; when the placement's candidate frames are all live, it evicts their least recently
/// used page if [`EvictionPolicy::evicts`].
pub trait EvictionPolicy {
    /// The policy's parameters.
    type Spec: PolicySpec;

    /// The policy over `frames` frames of the OS `os`, nothing resident.
    fn new(spec: &Self::Spec, frames: u64, os: &OsSpec) -> Self;

    /// Whether the policy evicts at all (else a fault that finds no frame is an error).
    fn evicts(&self) -> bool {
        true
    }

    /// Whether a use matters to the policy beyond the frame's timestamp, which the OS keeps
    /// (else [`EvictionPolicy::retimed`] and [`EvictionPolicy::referenced`] are not called,
    /// sparing the common case a call per reference).
    fn observes_uses(&self) -> bool {
        false
    }

    /// The next page to evict so that the policy keeps the share of memory it keeps free,
    /// `None` when there is room. Frames the policy promotes on the way (rather than evict)
    /// are handed to `activated`. An error when memory is full and nothing can go.
    fn next_victim(&mut self, frames: &Frames, activated: &mut dyn FnMut(u64)) -> Result<Option<u64>, NoFrame>;

    /// Which occupied frames iceberg placement may take as free.
    fn ghosts(&self) -> Ghosts<'_> {
        Ghosts::None
    }

    /// Page `vpn` of `asid` was placed in `frame` (its stamp is now), by a fault if `mapped`,
    /// else read ahead from swap.
    fn placed(&mut self, _frames: &Frames, _frame: u64, _asid: Asid, _vpn: Vpn, _mapped: bool) {}

    /// The page in `frame` was given the current time as its timestamp.
    fn retimed(&mut self, _frames: &Frames, _frame: u64) {}

    /// The page in `frame` was used (after [`EvictionPolicy::retimed`]).
    fn referenced(&mut self, _frame: u64) {}

    /// A fault mapped the page in `frame`, which had been read ahead.
    fn mapped_by_fault(&mut self, _frame: u64) {}

    /// The page in `frame` lost its page-table entry but stays resident (a store copied it).
    fn unmapped(&mut self, _frame: u64) {}

    /// Page `vpn` of `asid`, last used at `stamp`, left `frame`.
    fn evicted(&mut self, _frame: u64, _asid: Asid, _vpn: Vpn, _stamp: u64) {}

    /// The page in `frame` was freed other than by eviction (an unmap): `frame` is free
    /// now. Policies that find pages through the frames' state (their occupancy and
    /// generation) need nothing.
    fn freed(&mut self, _frame: u64) {}

    /// What reclaim did, for policies that count it.
    fn reclaim_stats(&self) -> Option<ReclaimStats> {
        None
    }

    /// Horizon LRU's horizon, for policies that keep one.
    fn horizon(&self) -> Option<u64> {
        None
    }
}

/// The frames a policy keeps resident when it keeps `kept_free` of `frames` free.
fn resident_limit(frames: u64, kept_free: f64) -> u64 {
    frames - (frames as f64 * kept_free).floor() as u64
}

/// Declares the eviction policies: each line gives a policy's variant, its name in
/// configurations, its type and its parameters' type in its module (a file of this folder,
/// declared here). Generates [`EvictionSpec`] (with its reading from files: a name, or a
/// table with `kind` and the parameters) and [`Evictor`].
macro_rules! eviction_policies {
    ($($(#[$doc:meta])* $variant:ident = $name:literal => $module:ident::$policy:ident($spec:ident),)+) => {
        $(pub mod $module;)+

        named_models! {
            /// The eviction policy and its parameters, validated. Written in files as the
            /// policy's name (`eviction = "horizon-lru"`, every parameter at its default) or as
            /// a table with its `kind` (`eviction = { kind = "linux", reserve = 0.01 }`).
            EvictionSpec,
            /// An eviction policy as a table: its `kind` and the parameters to change.
            EvictionTable,
            "an eviction policy",
            "Eviction",
            [$($(#[$doc])* $variant = $name => $module::$spec,)+]
        }

        impl EvictionSpec {
            /// See [`PolicySpec::check`].
            pub fn check(&self, placement: &PlacementSpec, path: &str) -> crate::Result<()> {
                match self {
                    $(EvictionSpec::$variant(spec) => spec.check(placement, path),)+
                }
            }

            /// See [`PolicySpec::frame_bytes`].
            pub fn frame_bytes(&self) -> u64 {
                match self {
                    $(EvictionSpec::$variant(spec) => spec.frame_bytes(),)+
                }
            }
        }

        /// The eviction policy of an OS, one of those registered.
        #[derive(Clone, Debug)]
        pub enum Evictor {
            $(
                #[doc = concat!("The `", $name, "` policy.")]
                $variant($module::$policy),
            )+
        }

        impl Evictor {
            /// The policy `spec` names over `frames` frames of the OS `os`.
            pub fn new(spec: &EvictionSpec, frames: u64, os: &OsSpec) -> Evictor {
                match spec {
                    $(EvictionSpec::$variant(spec) => Evictor::$variant(<$module::$policy as EvictionPolicy>::new(spec, frames, os)),)+
                }
            }
        }

        eviction_dispatch! {
            [$($variant)+]
            &self {
                fn evicts() -> bool;
                fn observes_uses() -> bool;
                fn ghosts() -> Ghosts<'_>;
                fn reclaim_stats() -> Option<ReclaimStats>;
                fn horizon() -> Option<u64>;
            }
            &mut self {
                fn next_victim(frames: &Frames, activated: &mut dyn FnMut(u64)) -> Result<Option<u64>, NoFrame>;
                fn placed(frames: &Frames, frame: u64, asid: Asid, vpn: Vpn, mapped: bool) -> ();
                fn retimed(frames: &Frames, frame: u64) -> ();
                fn referenced(frame: u64) -> ();
                fn mapped_by_fault(frame: u64) -> ();
                fn unmapped(frame: u64) -> ();
                fn evicted(frame: u64, asid: Asid, vpn: Vpn, stamp: u64) -> ();
                fn freed(frame: u64) -> ();
            }
        }
    };
}

/// [`Evictor`]'s methods, each passed on to the policy of its variant: those that read the
/// policy, then those that change it.
macro_rules! eviction_dispatch {
    (
        $variants:tt
        &$reads:ident { $(fn $get:ident($($garg:ident: $gty:ty),*) -> $gret:ty;)+ }
        &mut $changes:ident { $(fn $set:ident($($sarg:ident: $sty:ty),*) -> $sret:ty;)+ }
    ) => {
        // `self` is passed along with each receiver: the one a method matches on must come
        // from where its signature's does (macro hygiene).
        impl Evictor {
            $(eviction_method! { $variants [&$reads] $reads $get($($garg: $gty),*) -> $gret })+
            $(eviction_method! { $variants [&mut $changes] $changes $set($($sarg: $sty),*) -> $sret })+
        }
    };
}

/// One method of [`Evictor`] (see `eviction_dispatch!`): its signature and its call, each
/// one token tree for the arms of `eviction_arms!`.
macro_rules! eviction_method {
    ($variants:tt [$($receiver:tt)+] $this:ident $method:ident($($arg:ident: $ty:ty),*) -> $ret:ty) => {
        eviction_arms! { $variants $this $method ($($receiver)+ $(, $arg: $ty)*) ($($arg),*) -> $ret }
    };
}

/// A method of [`Evictor`] with the signature `$signature`, calling `$method$call` on the
/// policy of each variant.
macro_rules! eviction_arms {
    ([$($variant:ident)+] $this:ident $method:ident $signature:tt $call:tt -> $ret:ty) => {
        #[doc = concat!("See [`EvictionPolicy::", stringify!($method), "`].")]
        #[inline(always)]
        pub fn $method $signature -> $ret {
            match $this {
                $(Evictor::$variant(policy) => policy.$method $call,)+
            }
        }
    };
}

eviction_policies! {
    /// Never evict: a fault that finds no frame is an error.
    None = "none" => never::Never(NeverSpec),
    /// Exact LRU among the faulting page's candidate frames.
    Lru = "lru" => lru::ExactLru(LruSpec),
    /// Linux-like active/inactive reclaim (fully associative memory only).
    Linux = "linux" => linux::Linux(LinuxSpec),
    /// Horizon LRU (iceberg memory only).
    HorizonLru = "horizon-lru" => horizon_lru::HorizonLru(HorizonLruSpec),
    /// Iceberg LRU (iceberg memory only): global LRU over `(1 - delta)` of memory.
    IcebergLru = "iceberg-lru" => iceberg_lru::IcebergLru(IcebergLruSpec),
    /// Lazy Iceberg LRU (iceberg memory only): the pages Iceberg LRU would evict are marked
    /// evictable and evicted when a new page needs one of their slots.
    LazyIcebergLru = "lazy-iceberg-lru" => lazy_iceberg_lru::LazyIcebergLru(LazyIcebergLruSpec),
}

impl Default for EvictionSpec {
    /// No eviction: the OS of a machine whose configuration names no policy.
    fn default() -> EvictionSpec {
        EvictionSpec::None(NeverSpec {})
    }
}

impl EvictionSpec {
    /// True for every policy but `none`.
    pub fn evicts(&self) -> bool {
        !matches!(self, EvictionSpec::None(_))
    }
}


/// Checks that `policy` (its name) runs over `placement`, an iceberg memory.
fn needs_iceberg(policy: &str, placement: &PlacementSpec, path: &str) -> crate::Result<()> {
    needs(matches!(placement, PlacementSpec::Iceberg(_)), policy, "iceberg", path)
}

/// Checks that the policy `policy` (its name) can run over its placement: an error naming
/// the placement it needs (`what`) unless `ok`.
fn needs(ok: bool, policy: &str, what: &str, path: &str) -> crate::Result<()> {
    if ok {
        Ok(())
    } else {
        Err(crate::Error::config(path, format!("`{policy}` eviction needs {what} placement")))
    }
}

/// Checks `value`, the fraction `field` of the policy at `path`: in [0, 1).
fn check_fraction(value: f64, path: &str, field: &str) -> crate::Result<()> {
    if (0.0..1.0).contains(&value) {
        Ok(())
    } else {
        Err(crate::Error::config(format!("{path}.{field}"), format!("{field} must be a fraction in [0, 1), not {value}")))
    }
}

/// Checks Iceberg LRU's δ: a fraction above 0.
fn check_delta(delta: f64, path: &str) -> crate::Result<()> {
    check_fraction(delta, path, "delta")?;
    if delta == 0.0 {
        return Err(crate::Error::config(format!("{path}.delta"), "delta must be above 0 (use `lru` for no slack)"));
    }
    Ok(())
}
