//! Machines: the kinds of simulated machine an experiment feeds references to, behind one
//! trait ([`Machine`]: process a batch, report statistics).
//!
//! A kind is one module here implementing [`KindSpec`] (its validated configuration, read
//! from a `[[machine]]` table, which builds its machine), and one line in the
//! `machine_kinds!` list below, which generates the configuration's names ([`MachineKind`],
//! the `kind` field of `[[machine]]`), the tagged [`MachineSpec`] and the construction of
//! each kind.
//!
//! Two kinds: [`cpu`], one core's TLBs (a conventional hierarchy, Mosaic TLBs or both) over
//! one OS model, fed reference streams ([`Machine`]); and [`gpu`], GPU Mosaic's GPU, which
//! runs mixes of GPU applications ([`crate::gpu`]) rather than reference streams.

use super::stats::MachineStats;
use crate::config::raw::RawMachine;
use crate::memref::Batch;
use crate::os::OsSpec;
use crate::Result;
use serde::{Deserialize, Serialize};

/// A simulated machine consuming reference batches.
pub trait Machine: Send {
    /// The machine's name in results.
    fn name(&self) -> &str;

    /// Simulates every reference of `batch` in order.
    fn process(&mut self, batch: &Batch) -> Result<()>;

    /// [`Machine::process`] for a machine alone in its experiment on a host of two cores or
    /// more, which may use the second core itself; the results are those of
    /// [`Machine::process`].
    fn process_on_two_cores(&mut self, batch: &Batch) -> Result<()> {
        self.process(batch)
    }

    /// Statistics so far.
    fn stats(&self) -> MachineStats;
}

/// The validated configuration of a kind of machine.
pub trait KindSpec: Sized {
    /// Validates the `[[machine]]` table `raw` at `path` (`machine[2]`), whose random
    /// choices take `seed` unless it gives its own; errors name the field.
    fn from_raw(raw: &RawMachine, path: &str, seed: u64) -> Result<Self>;

    /// The machine's name in results.
    fn name(&self) -> &str;

    /// The OS model the machine runs (`None` for a kind without one).
    fn os(&self) -> Option<&OsSpec>;

    /// True when the machine counts cycles (it writes a row of `timing.csv`).
    fn timed(&self) -> bool;

    /// The machine in its initial state, to feed reference streams; an error for a kind
    /// that runs something else (a `gpu` machine runs GPU application mixes).
    fn build(&self) -> Result<Box<dyn Machine>>;

    /// The GPU this machine is, for a `gpu` machine.
    fn gpu(&self) -> Option<&crate::gpu::mix::GpuSpec> {
        None
    }

    /// Bytes of host memory the machine's own structures (TLBs, caches; not its OS's frame
    /// state, which the OS's configuration counts) take at most once built: checked against
    /// the host before a run, so that a machine too large is refused up front with the
    /// estimate rather than aborting once allocated.
    fn host_bytes(&self) -> u64;
}

/// Declares the kinds of machine: each line gives a kind's variant, its name in
/// configurations, and its machine and spec types in its module (of this folder, declared
/// here). Generates [`MachineKind`] and [`MachineSpec`].
macro_rules! machine_kinds {
    ($($(#[$doc:meta])* $variant:ident = $name:literal => $module:ident::$spec:ident,)+) => {
        $(pub mod $module;)+

        /// The kinds of machine by name, as written in configurations (`kind` of
        /// `[[machine]]`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
        pub enum MachineKind {
            $($(#[$doc])* #[serde(rename = $name)] $variant,)+
        }

        /// A validated machine configuration of any kind.
        #[derive(Clone, Debug, PartialEq, Serialize)]
        #[serde(tag = "kind")]
        #[allow(clippy::large_enum_variant, reason = "a few specs per experiment, validated once: their size costs nothing")]
        pub enum MachineSpec {
            $($(#[$doc])* #[serde(rename = $name)] $variant($module::$spec),)+
        }

        impl MachineSpec {
            /// Validates the `[[machine]]` table `raw` as a machine of `kind` (see
            /// [`KindSpec::from_raw`]).
            pub fn from_raw(kind: MachineKind, raw: &RawMachine, path: &str, seed: u64) -> Result<MachineSpec> {
                match kind {
                    $(MachineKind::$variant => <$module::$spec as KindSpec>::from_raw(raw, path, seed).map(MachineSpec::$variant),)+
                }
            }

            /// The machine's name in results.
            pub fn name(&self) -> &str {
                match self {
                    $(MachineSpec::$variant(spec) => spec.name(),)+
                }
            }

            /// The OS model the machine runs (`None` for a kind without one).
            pub fn os(&self) -> Option<&OsSpec> {
                match self {
                    $(MachineSpec::$variant(spec) => spec.os(),)+
                }
            }

            /// See [`KindSpec::timed`].
            pub fn timed(&self) -> bool {
                match self {
                    $(MachineSpec::$variant(spec) => spec.timed(),)+
                }
            }

            /// See [`KindSpec::host_bytes`].
            pub fn host_bytes(&self) -> u64 {
                match self {
                    $(MachineSpec::$variant(spec) => spec.host_bytes(),)+
                }
            }

            /// See [`KindSpec::build`].
            pub fn build(&self) -> Result<Box<dyn Machine>> {
                match self {
                    $(MachineSpec::$variant(spec) => spec.build(),)+
                }
            }

            /// See [`KindSpec::gpu`].
            pub fn gpu(&self) -> Option<&crate::gpu::mix::GpuSpec> {
                match self {
                    $(MachineSpec::$variant(spec) => spec.gpu(),)+
                }
            }
        }
    };
}

machine_kinds! {
    /// One core's TLBs (a conventional hierarchy, Mosaic TLBs or both) over one OS model.
    Cpu = "cpu" => cpu::CpuSpec,
    /// GPU Mosaic's GPU: SMs running several applications, their TLBs, walker and memory
    /// manager.
    Gpu = "gpu" => gpu::GpuSpec,
}

/// The kind of a `[[machine]]` that names none.
pub const DEFAULT_KIND: MachineKind = MachineKind::Cpu;
