//! The `gpu` kind of machine: GPU Mosaic's GPU ([`crate::gpu`]), configured in
//! `[machine.gpu]`. It runs `gpu` workloads (mixes of GPU applications), not reference
//! streams.

use super::{KindSpec, Machine};
use crate::config::raw::RawMachine;
use crate::os::OsSpec;
use crate::{Error, Result};

pub use crate::gpu::mix::GpuSpec;

impl KindSpec for GpuSpec {
    fn from_raw(raw: &RawMachine, path: &str, seed: u64) -> Result<GpuSpec> {
        crate::config::gpu::gpu_machine(raw, path, seed)
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn os(&self) -> Option<&OsSpec> {
        None
    }

    /// Timed, but in `gpu.csv`: EMT's `timing.csv` is for `cpu` machines.
    fn timed(&self) -> bool {
        false
    }

    fn build(&self) -> Result<Box<dyn Machine>> {
        Err(Error::Simulation(format!("machine `{}` is a `gpu` machine: it runs `gpu` workloads (GPU applications), not reference streams", self.name)))
    }

    fn gpu(&self) -> Option<&GpuSpec> {
        Some(self)
    }

    /// The TLBs and caches; the memory manager's tables grow with the pages placed, at
    /// most a few bytes per page of GPU memory.
    fn host_bytes(&self) -> u64 {
        self.params.host_bytes().saturating_add(self.manager.memory_bytes / 4096 * 16)
    }
}
