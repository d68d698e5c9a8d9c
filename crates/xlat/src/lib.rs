//! xlat: a fast, trace-driven simulator of virtual-memory address translation.
//!
//! Data flows in one direction:
//! a [`source::RefSource`] fills [`memref::Batch`]es of [`memref::MemRef`]s, which are fed to one
//! or more [`sim::Machine`]s (TLB hierarchy + OS model) that count into [`sim::MachineStats`].
//! [`sim::run_experiment`] runs workloads × machine configurations, reading each workload once.
//! See `docs/architecture.md` for the map of modules.

pub mod atomic;
pub mod cache;
pub mod config;
pub mod error;
pub mod gpu;
pub mod hash;
pub mod host;
pub mod memref;
pub mod mmu;
pub mod os;
pub mod sim;
pub mod source;
pub mod trace;
pub mod tlb;
pub mod types;
pub mod units;
pub mod workload;

pub use error::{Error, Result};
pub use memref::{AccessKind, AddressSpaceEvent, Batch, MemRef, RangeOp};
pub use types::{Asid, Page, PageSize, Pfn, PhysAddr, Translation, VirtAddr, Vpn};

/// The version of this crate, recorded in every result file.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
